#!/usr/bin/env python3
"""Run-to-run variation of `tally bench --quick`: runs it N times and prints,
per benchmark, how many figures have a run-to-run coefficient of variation
(stddev / mean of the per-run medians) within 5%, and the worst figures.

Usage: benches/bench_repeat.py [--runs N] [--tally PATH] [extra tally args...]
Not run by CI.
"""

import argparse
import json
import os
import sys
import statistics
import subprocess


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--tally", default=None, help="tally binary (default: build it)")
    a, extra = ap.parse_known_args()
    if a.tally is None:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from common import build_tally
        a.tally = build_tally()
    medians, bench_of, noisy = {}, {}, 0
    for i in range(a.runs):
        out = subprocess.run([a.tally, "bench", "--quick", "--format", "json", *extra],
                             check=True, capture_output=True, text=True).stdout
        r = json.loads(out)
        noisy += bool(r["noise"]["noisy"])
        for b in r["benchmarks"]:
            for f in b["figures"]:
                for unit in ("ns", "gb_per_s", "mhz", "bytes"):
                    if unit in f and not f.get("implausible"):
                        medians.setdefault(f["id"], []).append(f[unit]["median"])
                        bench_of[f["id"]] = b["name"]
    cvs = {}
    for fid, vals in medians.items():
        if len(vals) >= 2 and statistics.mean(vals) != 0:
            cvs[fid] = statistics.stdev(vals) / abs(statistics.mean(vals))
    print(f"{a.runs} runs of tally bench --quick ({noisy} flagged noisy)")
    print("| benchmark | figures | run-to-run CV ≤ 5% | median CV | worst figure (CV) |")
    print("|---|---:|---:|---:|---|")
    for bench in dict.fromkeys(bench_of.values()):
        ids = [i for i in cvs if bench_of[i] == bench]
        if not ids:
            continue
        ok = sum(cvs[i] <= 0.05 for i in ids)
        worst = max(ids, key=lambda i: cvs[i])
        print(f"| {bench} | {len(ids)} | {ok} | {statistics.median(cvs[i] for i in ids) * 100:.1f}% "
              f"| {worst} ({cvs[worst] * 100:.0f}%) |")
    ok = sum(c <= 0.05 for c in cvs.values())
    print(f"| all | {len(cvs)} | {ok} | {statistics.median(cvs.values()) * 100:.1f}% | |")


if __name__ == "__main__":
    main()
