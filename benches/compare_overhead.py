#!/usr/bin/env python3
"""What `tally compare -N` costs per run, against hyperfine -N.

Both tools measure the same commands (/bin/true twice, no shell), N runs
each, and the two tools' invocations are interleaved (the order shuffled
in each of REPS repetitions), so a shared machine's drift hits both alike.
Per tool it prints the medians over the repetitions of:

- reported: the median wall time the tool reports for /bin/true — what
  its measurement adds to the command;
- per run: the tool's own elapsed time divided by the runs it made —
  what a run costs, harness included.

and the ratio tally / hyperfine (target: at most 1.0), then the median and
range of the same ratio taken repetition by repetition (the two tools ran
back to back, on the same moment of a noisy machine). Then what tally's
speed probes (`speed.probes_ns` of its JSON: the fixed work timed beside
the runs, see src/speed.rs) took of its elapsed time (target: at most
5%), and how many it made. Then tally's own
peak memory (ru_maxrss, from `/usr/bin/time -f %M`) for a comparison of
100 and of 10,000 runs of each command.

Usage: python3 benches/compare_overhead.py [RUNS] [REPS]   (default 300 7)
Installs hyperfine and GNU time with apt-get when they are missing.
"""

import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import build_tally, need  # noqa: E402


def tally_once(tally, runs, tmp):
    out = os.path.join(tmp, "t.json")
    t0 = time.perf_counter_ns()
    subprocess.run([tally, "compare", "-N", "-n", str(runs), "--format", "json",
                    "-o", out, "/bin/true", "/bin/true"], check=True,
                   stdout=subprocess.DEVNULL)
    elapsed = time.perf_counter_ns() - t0
    with open(out) as f:
        r = json.load(f)
    medians = []
    for c in r["commands"]:
        s = next(s for s in c["summary"] if s["figure"] == "wall_ns")
        medians.append(s["median"])
    probes = (r.get("speed") or {}).get("probes_ns") or []
    return (statistics.median(medians) / 1e3, elapsed / 1e3 / (2 * runs),
            sum(probes) / elapsed, len(probes))


def hyperfine_once(runs, tmp):
    out = os.path.join(tmp, "h.json")
    t0 = time.perf_counter_ns()
    subprocess.run(["hyperfine", "-N", "--runs", str(runs), "--style", "none",
                    "--export-json", out, "/bin/true", "/bin/true"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    elapsed = time.perf_counter_ns() - t0
    with open(out) as f:
        r = json.load(f)
    medians = [x["median"] * 1e6 for x in r["results"]]
    return statistics.median(medians), elapsed / 1e3 / (2 * runs)


def peak_kib(tally, runs):
    out = subprocess.run(["/usr/bin/time", "-f", "%M", tally, "compare", "-N", "-n",
                          str(runs), "--format", "json", "-o", os.devnull,
                          "/bin/true", "/bin/true"],
                         check=True, capture_output=True, text=True)
    return int(out.stderr.strip().splitlines()[-1])


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    need("hyperfine", "hyperfine")
    need("/usr/bin/time", "time")
    tally = os.environ.get("TALLY_BIN") or build_tally()
    got = {"tally compare -N": [], "hyperfine -N": []}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(reps):
            order = list(got)
            random.shuffle(order)
            for name in order:
                if name.startswith("tally"):
                    got[name].append(tally_once(tally, runs, tmp))
                else:
                    got[name].append(hyperfine_once(runs, tmp))
    print(f"/bin/true vs /bin/true, {runs} runs of each, {reps} interleaved repetitions")
    print(f"{'tool':<20} {'reported median':>16} {'per run':>12}")
    med = {}
    for name, xs in got.items():
        rep = statistics.median(x[0] for x in xs)
        per = statistics.median(x[1] for x in xs)
        med[name] = (rep, per)
        print(f"{name:<20} {rep:>13.1f} µs {per:>9.1f} µs")
    t, h = med["tally compare -N"], med["hyperfine -N"]
    print(f"{'tally / hyperfine':<20} {t[0] / h[0]:>16.2f} {t[1] / h[1]:>12.2f}   (target <= 1.0)")
    # The same, repetition by repetition: the two tools ran back to back,
    # so each ratio shares that moment's machine; their median and range.
    pairs = list(zip(got["tally compare -N"], got["hyperfine -N"]))
    for i, what in ((0, "reported"), (1, "per run")):
        ratios = sorted(a[i] / b[i] for a, b in pairs)
        print(f"paired {what:<9} ratio: median {statistics.median(ratios):.2f}, "
              f"range {ratios[0]:.2f}-{ratios[-1]:.2f} over {len(ratios)} repetitions")
    shares = [x[2] for x in got["tally compare -N"]]
    counts = [x[3] for x in got["tally compare -N"]]
    print(f"speed probes: {100 * statistics.median(shares):.1f}% of tally's elapsed time "
          f"(range {100 * min(shares):.1f}-{100 * max(shares):.1f}%, "
          f"{statistics.median(counts):.0f} probes per comparison; target <= 5%)")
    if os.environ.get("SKIP_PEAK"):
        return
    small, big = peak_kib(tally, 100), peak_kib(tally, 10_000)
    print(f"tally compare's own peak memory: {small:,} kB for 2 x 100 runs, "
          f"{big:,} kB for 2 x 10,000 runs")


if __name__ == "__main__":
    main()
