#!/usr/bin/env python3
"""Run-to-run variation of `tally bench --quick`: runs it N times and prints

- each run's noise verdict (NOISY and why, or quiet, with the other
  processes' share of a CPU);
- the figures whose median moved more than 10% between runs (largest /
  smallest median of the runs), and how many of them every run, some runs
  or no run marked "unstable" (a figure that moves without a mark is one a
  reader would take as exact);
- the figures that moved without saying so: a run whose median lies more
  than 10% from the median of all runs' and that did not mark it unstable;
- per benchmark, how many figures have a run-to-run coefficient of
  variation (stddev / mean of the per-run medians) within 5%, and the worst.

With --wait-idle each run starts only once the machine is idle (under 5%
of all CPUs busy over 3 s, waiting at most 30 minutes): on a shared
machine other people's builds would be counted as the benchmarks' own
variation. --save DIR keeps each run's JSON.

Usage: benches/bench_repeat.py [--runs N] [--wait-idle] [--save DIR]
                               [--tally PATH] [extra tally args...]
Not run by CI.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

UNITS = ("ns", "gb_per_s", "mhz", "bytes")
MOVE = 0.10


def figures_of(report):
    """id -> (benchmark, median, unstable mark or None) of the figures shown."""
    out = {}
    for b in report["benchmarks"]:
        for f in b["figures"]:
            if f.get("implausible"):
                continue
            for unit in UNITS:
                if unit in f:
                    mark = (f.get("stability") or {}).get("unstable_percent")
                    out[f["id"]] = (b["name"], f[unit]["median"], mark)
    return out


def run_measured(cmd):
    """Runs `cmd`; returns its stdout and the share of one CPU that every
    other process used meanwhile (the machine's busy time from /proc/stat
    less the command's own CPU time and its children's, from wait4): an
    account of the machine's load independent of tally's own."""
    import tempfile
    import time
    with tempfile.TemporaryFile() as out:
        b0, _ = common._cpu_ticks()
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdout=out)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.monotonic() - t0
        b1, _ = common._cpu_ticks()
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed with status {p.returncode}")
        out.seek(0)
        text = out.read().decode()
    hz = os.sysconf("SC_CLK_TCK")
    others = (b1 - b0) / hz - (usage.ru_utime + usage.ru_stime)
    return text, max(others, 0.0) * 100.0 / wall


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--tally", default=None, help="tally binary (default: build it)")
    ap.add_argument("--wait-idle", action="store_true",
                    help="start each run only on an idle machine")
    ap.add_argument("--save", default=None, help="directory for each run's JSON")
    ap.add_argument("--tries", type=int, default=10, help="runs tried per kept run with --idle-only")
    ap.add_argument("--idle-only", type=float, default=None, metavar="PERCENT",
                    help="repeat (up to --tries times) a run during which other processes "
                    "used more than PERCENT of a CPU by this script's count")
    a, extra = ap.parse_known_args()
    if a.tally is None:
        a.tally = common.build_tally()
    if a.save:
        os.makedirs(a.save, exist_ok=True)
    runs, discarded = [], 0
    for i in range(a.runs):
        for _ in range(a.tries):
            busy = common.wait_idle() if a.wait_idle else None
            out, others = run_measured([a.tally, "bench", "--quick", "--format", "json", *extra])
            if a.idle_only is None or others <= a.idle_only:
                break
            if _ == a.tries - 1:
                print(f"run {i + 1}: kept though other processes used {others:.0f}% of a CPU "
                      f"meanwhile: {a.tries} tries found no idle machine")
                break
            discarded += 1
            print(f"run {i + 1}: discarded: other processes used {others:.0f}% of a CPU "
                  "meanwhile (by this script's count)")
        if a.save:
            with open(os.path.join(a.save, f"run{i + 1}.json"), "w") as f:
                f.write(out)
        r = json.loads(out)
        runs.append(r)
        n = r["noise"]
        other = n.get("other_cpu_percent")
        verdict = "NOISY: " + "; ".join(n["reasons"]) if n["noisy"] else "quiet"
        print(f"run {i + 1}: {r['duration_ms'] / 1000:.1f} s"
              + (f", machine {busy:.1f}% busy before" if busy is not None else "")
              + f", others {others:.1f}% of a CPU by this script's count"
              + (f" ({other:.1f}% by tally's)" if other is not None else "")
              + f": {verdict}")
    per_run = [figures_of(r) for r in runs]
    ids = [i for i in per_run[0] if all(i in p for p in per_run)]
    bench_of = {i: per_run[0][i][0] for i in ids}
    moved, unmarked_any, unmarked_all, silent = [], [], [], []
    for i in ids:
        meds = [p[i][1] for p in per_run]
        lo, hi = min(meds), max(meds)
        if lo <= 0 or hi / lo - 1 <= MOVE:
            continue
        marks = [p[i][2] for p in per_run]
        moved.append(i)
        # The runs that moved: those whose median lies more than MOVE
        # from the median of every run's. A figure moved without saying
        # so when one of them carried no mark.
        mid = statistics.median(meds)
        if any(m is None and max(v / mid, mid / v) - 1 > MOVE
               for v, m in zip(meds, marks)):
            silent.append(i)
        if not all(m is not None for m in marks):
            unmarked_any.append((i, hi / lo - 1, marks))
        if all(m is None for m in marks):
            unmarked_all.append(i)
    noisy = sum(bool(r["noise"]["noisy"]) for r in runs)
    print()
    if discarded:
        print(f"{discarded} runs discarded: the machine was not idle")
    print(f"{a.runs} runs of {' '.join(['tally bench --quick', *extra])}: {noisy} flagged NOISY; "
          f"{len(ids)} figures in every run, {len(moved)} moved more than {MOVE:.0%} "
          f"(largest / smallest median); of those, {len(unmarked_all)} were marked unstable "
          f"in no run and {len(unmarked_any)} were not marked in every run")
    print(f"moved without saying so (a run more than {MOVE:.0%} from the median of the runs, "
          f"unmarked): {len(silent)}" + (f": {', '.join(sorted(silent))}" if silent else ""))
    for i, move, marks in sorted(unmarked_any, key=lambda t: -t[1]):
        shown = ", ".join("-" if m is None else f"±{m:.0f}%" for m in marks)
        print(f"  moved {move:.0%}: {i} (marks per run: {shown})")
    cvs = {}
    for i in ids:
        vals = [p[i][1] for p in per_run]
        if len(vals) >= 2 and statistics.mean(vals) != 0:
            cvs[i] = statistics.stdev(vals) / abs(statistics.mean(vals))
    print()
    print("| benchmark | figures | run-to-run CV ≤ 5% | median CV | worst figure (CV) |")
    print("|---|---:|---:|---:|---|")
    for bench in dict.fromkeys(bench_of.values()):
        b_ids = [i for i in cvs if bench_of[i] == bench]
        if not b_ids:
            continue
        ok = sum(cvs[i] <= 0.05 for i in b_ids)
        worst = max(b_ids, key=lambda i: cvs[i])
        print(f"| {bench} | {len(b_ids)} | {ok} | "
              f"{statistics.median(cvs[i] for i in b_ids) * 100:.1f}% "
              f"| {worst} ({cvs[worst] * 100:.0f}%) |")
    if cvs:
        ok = sum(c <= 0.05 for c in cvs.values())
        print(f"| all | {len(cvs)} | {ok} | {statistics.median(cvs.values()) * 100:.1f}% | |")


if __name__ == "__main__":
    main()
