#!/usr/bin/env python3
"""How well can a machine's speed be taken out of a time compared with a
stored baseline? A study for the time gate (docs/compare.md, "Each run
by its own CPU's speed"), outside tally, of four estimates of the ratio of a
loop's time now to its time when a baseline was saved:

- naive: the ratio of the two sessions' medians, as a gate without
  probes would judge it;
- pooled: that ratio over the ratio of the sessions' speed-probe medians,
  the probes made on each CPU in turn and pooled (what `compare` does
  today);
- per CPU: each run's time over the median of its session's probes on the
  CPU it ran on, then the ratio of the two sessions' medians;
- local: each run's time over the median of the two probes on its CPU
  nearest in time (the probe before it and the one after), then the same.

A run's CPU is where it started and ended (`sched_getcpu` in the loop);
a run that moved is left out of the last two (counted). Each session is
RUNS runs of a C loop of 2,000,000 steps (or FACTOR times as many in the
second session), with a probe (500,000 steps) on each CPU before every
tenth run and after the last. Both are timed by the loop itself, on
`CLOCK_MONOTONIC` (wall) and on `CLOCK_THREAD_CPUTIME_ID` (cpu), so that
one session gives both.

Conditions, REPS pairs of sessions each, a second apart: idle; the second
session under two busy loops (a baseline saved idle, gated under load);
both sessions under them.

Usage: python3 benches/speed_attribution.py [REPS] [RUNS]   (default 6 60)
Prints a markdown table: per condition, factor and clock, each estimate's
median and range over the repetitions. An estimate is good when it stays
near the true factor (1.00 or 1.20) in every repetition.
"""

import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import print_table  # noqa: E402

C_SOURCE = r"""
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long ns(clockid_t c) {
    struct timespec t;
    clock_gettime(c, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

/* The same chain of dependent multiplies through stack slots whatever
   the mode: only the number of steps differs. */
__attribute__((noinline)) static unsigned long chain(long n) {
    volatile unsigned long s[8] = {1};
    for (long i = 0; i < n; i++) s[i & 7] = s[(i + 3) & 7] * 6364136223846793005UL + 1442695040888963407UL;
    return s[0];
}

/* work STEPS | probe STEPS CPU: prints start CPU, end CPU, wall ns, cpu ns. */
int main(int argc, char **argv) {
    if (argc < 3) return 2;
    long n = atol(argv[2]);
    if (strcmp(argv[1], "probe") == 0 && argc == 4) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(atoi(argv[3]), &set);
        if (sched_setaffinity(0, sizeof set, &set) != 0) return 3;
    }
    int c0 = sched_getcpu();
    long w0 = ns(CLOCK_MONOTONIC), u0 = ns(CLOCK_THREAD_CPUTIME_ID);
    chain(n);
    long w1 = ns(CLOCK_MONOTONIC), u1 = ns(CLOCK_THREAD_CPUTIME_ID);
    printf("%d %d %ld %ld\n", c0, sched_getcpu(), w1 - w0, u1 - u0);
    return 0;
}
"""

WORK = 2_000_000
PROBE = 500_000
EVERY = 10


def build(tmp):
    src = os.path.join(tmp, "loop.c")
    exe = os.path.join(tmp, "loop")
    with open(src, "w") as f:
        f.write(C_SOURCE)
    subprocess.run(["gcc", "-O2", "-o", exe, src], check=True)
    return exe


def one(exe, args):
    out = subprocess.run([exe] + args, capture_output=True, text=True, check=True).stdout.split()
    return int(out[0]), int(out[1]), {"wall": int(out[2]), "cpu": int(out[3])}


def session(exe, cpus, steps, runs):
    """(runs: [(cpu start, cpu end, times)], probes: {cpu: [times]})."""
    rs, probes = [], {c: [] for c in cpus}

    def probe_all():
        for c in cpus:
            probes[c].append(one(exe, ["probe", str(PROBE), str(c)])[2])

    for i in range(runs):
        if i % EVERY == 0:
            probe_all()
        rs.append(one(exe, ["work", str(steps)]))
    probe_all()
    return rs, probes


def estimates(a, b, clock):
    """The four estimates of b's time over a's, and the runs left out."""
    med = statistics.median
    (ra, pa), (rb, pb) = a, b

    def times(rs):
        return [t[clock] for _, _, t in rs]

    def probe_times(p):
        return [t[clock] for ts in p.values() for t in ts]

    def per_cpu(rs, p):
        m = {c: med([t[clock] for t in ts]) for c, ts in p.items()}
        return [t[clock] / m[c0] for c0, c1, t in rs if c0 == c1 and c0 in m]

    def local(rs, p):
        out = []
        for i, (c0, c1, t) in enumerate(rs):
            if c0 != c1 or c0 not in p:
                continue
            k = i // EVERY
            out.append(t[clock] / med([x[clock] for x in p[c0][k:k + 2]]))
        return out

    naive = med(times(rb)) / med(times(ra))
    pooled = naive / (med(probe_times(pb)) / med(probe_times(pa)))
    moved = sum(1 for c0, c1, _ in ra + rb if c0 != c1)
    return {
        "naive": naive,
        "pooled": pooled,
        "per CPU": med(per_cpu(rb, pb)) / med(per_cpu(ra, pa)),
        "local": med(local(rb, pb)) / med(local(ra, pa)),
    }, moved


def busy(k):
    return [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(k)]


def main():
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 60
    cpus = sorted(os.sched_getaffinity(0))
    conditions = [("idle", False, False), ("second session under two busy loops", False, True),
                  ("both under two busy loops", True, True)]
    rows = []
    moved_total = 0
    started = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        exe = build(tmp)
        for name, load_a, load_b in conditions:
            for factor in (1.0, 1.2):
                got = {"wall": [], "cpu": []}
                for _ in range(reps):
                    procs = busy(2) if load_a else []
                    a = session(exe, cpus, WORK, runs)
                    for p in procs:
                        p.kill()
                        p.wait()
                    time.sleep(1)
                    procs = busy(2) if load_b else []
                    b = session(exe, cpus, int(WORK * factor), runs)
                    for p in procs:
                        p.kill()
                        p.wait()
                    for clock in got:
                        e, moved = estimates(a, b, clock)
                        got[clock].append(e)
                    moved_total += moved
                for clock, es in got.items():
                    cells = []
                    for key in ("naive", "pooled", "per CPU", "local"):
                        xs = sorted(e[key] for e in es)
                        cells.append(f"{statistics.median(xs):.2f} ({xs[0]:.2f}–{xs[-1]:.2f})")
                    rows.append((name, f"{factor:.2f}", clock, *cells))
    print(f"{len(cpus)} CPUs; {reps} pairs of sessions of {runs} runs per row; "
          f"runs that moved CPU (left out of per CPU and local): {moved_total}; "
          f"{time.time() - started:.0f} s")
    print()
    print_table(("condition", "true factor", "clock", "naive", "pooled probes", "per CPU",
                 "local"), rows)


if __name__ == "__main__":
    main()
