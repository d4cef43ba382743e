#!/usr/bin/env python3
"""How often does `tally compare` cry wolf, and how often does it find a
real difference?

1. False alarms: COMPARISONS comparisons of /bin/true against itself
   (`-N -n 40`); counts those that call any figure different (the
   family-wise rate; at most 5% is the aim), and which figures.
2. Power: a C spin loop of about 18 ms (compiled here) against the same
   loop with 5% more iterations, `-N` without `-n` (tally chooses the
   runs); counts the comparisons that find the wall-time difference in
   the right direction, and the time each took (at most 10 s is the aim).

Usage: benches/compare_verdicts.py [COMPARISONS] [POWER_TRIALS]   (40 10)
"""

import json
import os
import subprocess
import sys
import tempfile
import time

from common import build_tally

SPIN = r"""
#include <stdlib.h>
int main(int argc, char **argv) {
    volatile unsigned long x = 0;
    unsigned long n = strtoul(argv[1], 0, 10);
    for (unsigned long i = 0; i < n; i++) x += i;
    return 0;
}
"""


def compare(tally, args):
    out = subprocess.run([tally, "compare", "--format", "json", *args],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def flagged(report):
    return sorted({v["figure"] for c in report["commands"]
                   for v in c["versus_reference"]
                   if v["verdict"] in ("lower", "higher")})


def spin_iterations(exe, target_ms):
    """Iterations of the loop that take about `target_ms`."""
    n = 1_000_000
    while True:
        start = time.perf_counter()
        subprocess.run([exe, str(n)], check=True)
        took = (time.perf_counter() - start) * 1000
        if took > target_ms / 4:
            return int(n * target_ms / took)
        n *= 2


def main():
    comparisons = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    trials = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    tally = build_tally()

    if comparisons:
        false_alarms(tally, comparisons)
    if trials:
        power(tally, trials)


def false_alarms(tally, comparisons):
    print(f"1. {comparisons} comparisons: tally compare -N -n 40 /bin/true /bin/true")
    alarms = {}
    any_flag = 0
    for _ in range(comparisons):
        report = compare(tally, ["-N", "-n", "40", "/bin/true", "/bin/true"])
        figures = flagged(report)
        any_flag += bool(figures)
        for f in figures:
            alarms[f] = alarms.get(f, 0) + 1
    detail = ", ".join(f"{f} {n}" for f, n in sorted(alarms.items())) or "none"
    print(f"   {any_flag} of {comparisons} flag some figure "
          f"({100 * any_flag / comparisons:.1f}%; aim: at most 5%): {detail}")


def power(tally, trials):
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "spin.c")
        exe = os.path.join(tmp, "spin")
        with open(src, "w") as f:
            f.write(SPIN)
        subprocess.run(["cc", "-O1", "-o", exe, src], check=True)
        n = spin_iterations(exe, 18)
        more = n * 105 // 100
        print(f"2. {trials} comparisons: tally compare -N '{exe} {n}' '{exe} {more}' "
              "(5% more iterations, about 18 ms; no -n)")
        found = 0
        for i in range(trials):
            start = time.perf_counter()
            report = compare(tally, ["-N", f"{exe} {n}", f"{exe} {more}"])
            took = time.perf_counter() - start
            # The reference is the faster; the other must be slower.
            slower = report["commands"][1]
            verdict = next((v for v in slower["versus_reference"]
                            if v["figure"] == "wall_ns"), None)
            ok = report["reference"] == 0 and verdict and verdict["verdict"] == "higher"
            found += bool(ok)
            ratio = verdict["ratio"] if verdict else float("nan")
            print(f"   #{i + 1}: {report['runs_per_command']} runs each, {took:.1f} s, "
                  f"wall {ratio:.3f}x, {verdict['verdict'] if verdict else 'reference'}"
                  f"{'' if ok else '  (missed)'}")
        print(f"   found in {found} of {trials} (aim: at least 9)")


if __name__ == "__main__":
    main()
