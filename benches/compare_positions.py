#!/usr/bin/env python3
"""Does a run's place in the run order change its measurement?

Runs `tally compare -N -n RUNS /bin/true /bin/true` (twice RUNS runs,
interleaved) and, for every period 8, 16 and 32 and every phase, tests
the wall times of the runs at that phase (their place in the whole
session's order, modulo the period) against the rest: two-sided
Mann-Whitney U (normal approximation with tie correction), Bonferroni
over the 56 phase tests at 5%. Prints each period's most deviant phase
(median ratio to the rest and p) and the verdict; repeats REPEAT times.

Usage: benches/compare_positions.py [RUNS] [REPEAT]   (default 512 3)
"""

import json
import math
import statistics
import subprocess
import sys

from common import build_tally

PERIODS = (8, 16, 32)
TESTS = sum(PERIODS)


def ranks(values):
    order = sorted(range(len(values)), key=lambda i: values[i])
    r = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in order[i:j + 1]:
            r[k] = (i + j) / 2 + 1
        i = j + 1
    return r


def mann_whitney_p(a, b):
    n1, n2 = len(a), len(b)
    r = ranks(a + b)
    u = sum(r[:n1]) - n1 * (n1 + 1) / 2
    n = n1 + n2
    counts = {}
    for v in a + b:
        counts[v] = counts.get(v, 0) + 1
    ties = sum(t ** 3 - t for t in counts.values())
    var = n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1)))
    if var <= 0:
        return 1.0
    z = (abs(u - n1 * n2 / 2) - 0.5) / math.sqrt(var)
    return min(1.0, math.erfc(max(z, 0) / math.sqrt(2)))


def one(tally, runs):
    out = subprocess.run(
        [tally, "compare", "-N", "-n", str(runs), "--format", "json",
         "/bin/true", "/bin/true"],
        check=True, capture_output=True, text=True).stdout
    report = json.loads(out)
    by_place = {}
    for c in report["commands"]:
        for place, run in zip(c["run_order"], c["runs"]):
            by_place[place] = run["wall_ns"]
    places = sorted(by_place)
    worst = []
    significant = 0
    for period in PERIODS:
        best = None
        for phase in range(period):
            at = [by_place[p] for p in places if p % period == phase]
            rest = [by_place[p] for p in places if p % period != phase]
            p = mann_whitney_p(at, rest)
            ratio = statistics.median(at) / statistics.median(rest)
            if p * TESTS < 0.05:
                significant += 1
            if best is None or p < best[0]:
                best = (p, phase, ratio)
        worst.append((period, *best))
    return report["seed"], worst, significant


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 512
    repeat = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    tally = build_tally()
    print(f"tally compare -N -n {runs} /bin/true /bin/true: wall time by place in the run "
          f"order, {TESTS} phase tests (periods {', '.join(map(str, PERIODS))}), "
          "Bonferroni at 5%")
    failed = 0
    for i in range(repeat):
        seed, worst, significant = one(tally, runs)
        parts = "; ".join(f"period {per}: phase {ph} {ratio:.3f}x p={p:.2g}"
                          for per, p, ph, ratio in worst)
        verdict = "position matters" if significant else "no position effect"
        failed += bool(significant)
        print(f"#{i + 1} seed {seed}: {parts} -> {significant} significant: {verdict}")
    print(f"{failed} of {repeat} comparisons show a position effect")


if __name__ == "__main__":
    main()
