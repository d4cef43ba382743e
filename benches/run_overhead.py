#!/usr/bin/env python3
"""What `tally run` adds to a command's wall time, against GNU time.

Runs, interleaved in one process and in shuffled order each round:
bare /bin/true, `tally run -- /bin/true`, `/usr/bin/time /bin/true` and
`tally --version` (tally's own start-up), timing each spawn-to-reap with
a monotonic clock. Prints medians and the overhead each adds over bare
/bin/true. Then asks hyperfine -N for a second opinion in the same run.

Usage: python3 benches/run_overhead.py [ROUNDS]   (default 500)
Installs GNU time and hyperfine with apt-get when they are missing.

To compare two builds in the same interleaved run (before and after a
change), name the other binary in TALLY_BEFORE: it adds a row
`tally run -- /bin/true (TALLY_BEFORE)`.
"""

import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import build_tally, installed_copy, need  # noqa: E402




def spawn_wait_ns(argv, devnull):
    t0 = time.perf_counter_ns()
    pid = os.posix_spawn(argv[0], argv, os.environ,
                         file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1),
                                       (os.POSIX_SPAWN_DUP2, devnull, 2)])
    os.waitpid(pid, 0)
    return time.perf_counter_ns() - t0


def hot_path_layout(tally):
    """How much of link/run-hot-path.order the binary still matches (a
    stale list costs page faults on every run; see build.rs)."""
    order = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                         "link", "run-hot-path.order")
    try:
        with open(order) as f:
            wanted = {l.strip() for l in f if l.strip() and not l.startswith("#")}
        out = subprocess.run(["nm", "--defined-only", tally], check=True,
                             capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        return f"hot-path layout: unavailable ({e})"
    have = {line.split()[-1] for line in out.splitlines() if line.strip()}
    found = len(wanted & have)
    note = "" if found >= 0.9 * len(wanted) else \
        " — stale: run link/order-hot-path.sh"
    return f"hot-path layout: {found} of {len(wanted)} listed functions in the binary{note}"


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    need("hyperfine", "hyperfine")
    need("/usr/bin/time", "time")
    # Each build as installed, not as the linker left it (see
    # `installed_copy`); removed when the script ends.
    copies = tempfile.TemporaryDirectory(prefix="tally-run-overhead-")
    tally = installed_copy(build_tally(), copies.name)
    true = shutil.which("true") or "/bin/true"
    true = "/bin/true" if os.path.exists("/bin/true") else true
    variants = {
        "/bin/true": [true],
        "tally run -- /bin/true": [tally, "run", "--", true],
        "/usr/bin/time /bin/true": ["/usr/bin/time", true],
        "tally --version (start-up)": [tally, "--version"],
    }
    before = os.environ.get("TALLY_BEFORE")
    if before:
        before = installed_copy(before, copies.name, "tally-before")
        variants["tally run -- /bin/true (TALLY_BEFORE)"] = [before, "run", "--", true]
    devnull = os.open(os.devnull, os.O_WRONLY)
    samples = {name: [] for name in variants}
    for _ in range(20):  # warm the page cache and the dynamic loader
        for argv in variants.values():
            spawn_wait_ns(argv, devnull)
    names = list(variants)
    for _ in range(rounds):
        random.shuffle(names)
        for name in names:
            samples[name].append(spawn_wait_ns(variants[name], devnull))
    base = statistics.median(samples["/bin/true"]) / 1000
    print(f"{rounds} interleaved rounds on {os.uname().nodename} "
          f"({os.cpu_count()} CPUs, kernel {os.uname().release}); "
          f"{hot_path_layout(tally)}\n")
    print("| command | median µs | p10 µs | p90 µs | added over /bin/true µs |")
    print("|---|---:|---:|---:|---:|")
    for name in variants:
        s = sorted(samples[name])
        med = statistics.median(s) / 1000
        p10 = s[len(s) // 10] / 1000
        p90 = s[len(s) * 9 // 10] / 1000
        added = "" if name == "/bin/true" else f"{med - base:,.0f}"
        print(f"| `{name}` | {med:,.0f} | {p10:,.0f} | {p90:,.0f} | {added} |")
    tally_added = statistics.median(samples["tally run -- /bin/true"]) / 1000 - base
    time_added = statistics.median(samples["/usr/bin/time /bin/true"]) / 1000 - base
    print(f"\ntally run adds {tally_added:,.0f} µs, GNU time adds {time_added:,.0f} µs "
          f"(ratio {tally_added / time_added:.2f})" if time_added > 0 else "")
    if before:
        before_added = statistics.median(
            samples["tally run -- /bin/true (TALLY_BEFORE)"]) / 1000 - base
        print(f"TALLY_BEFORE adds {before_added:,.0f} µs "
              f"(ratio to GNU time {before_added / time_added:.2f}); "
              f"this build minus TALLY_BEFORE: {tally_added - before_added:+,.0f} µs"
              if time_added > 0 else "")

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "h.json")
        subprocess.run(["hyperfine", "-N", "--warmup", "20", "--runs", str(rounds),
                        "--export-json", out, "--style", "none",
                        "/bin/true", f"{tally} run -- /bin/true",
                        "/usr/bin/time /bin/true", f"{tally} --version"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(out) as f:
            results = json.load(f)["results"]
    print("\nhyperfine -N, same commands (its own spawn, same run):\n")
    print("| command | median µs | mean ± σ µs |")
    print("|---|---:|---:|")
    for r in results:
        cmd = r["command"].replace(tally, "tally")
        print(f"| `{cmd}` | {r['median'] * 1e6:,.0f} | "
              f"{r['mean'] * 1e6:,.0f} ± {r['stddev'] * 1e6:,.0f} |")


if __name__ == "__main__":
    main()
