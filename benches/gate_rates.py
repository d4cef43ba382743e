#!/usr/bin/env python3
"""How often does the regression gate (`tally compare --fail-on`) fail a
change that made nothing slower, and how often does it catch one that did?

A C spin loop of about 10 ms (compiled here, `work N [MB]`) is saved as a
baseline (`--save-baseline`, tally choosing the runs, at most MAX_RUNS of
each) and then compared with it (`--baseline ... --fail-on wall=5%`, the
same `--name`):

1. False alarms: TRIES times, a fresh baseline of the loop and the same
   loop against it. Exit 0 (pass or inconclusive) is right; exit 3
   (regression) is a false alarm.
2. Power: TRIES times, a fresh baseline and the loop doing 20% more work
   against it. Exit 3 is right. Then the same two with real work:
   `gzip -6 -c FILE` (FILE about 1 MB of the project's Rust sources)
   against its own baseline (right: exit 0), and `gzip -6 -c FILE2`, the
   file twice over, against the baseline of FILE (right: exit 3).
3. 10% more work against a 30% gate (should pass), and two commands in one
   run touching 20 MB and 60 MB against `--fail-on maxrss=10%` (should fail).
4. The speed reference: TRIES times, a baseline saved while a busy loop
   shares CPU 0 (`taskset -c 0` on the comparison and the loop), then the
   unchanged loop gated with CPU 0 to itself, and the reverse; each with
   the baseline's speed probes (`speed_probe_ns`) and with them removed (a
   baseline as saved before there were probes). Exit 3 is a false alarm;
   exit 0 without "inconclusive" first is a pass decided on time.

With LOAD=N in the environment, N busy loops run (unpinned) through parts
1 and 2: false alarms and power under load. PARTS=gate,speed,other (the
default: all) picks parts 1-2, part 4 and part 3. LOOP_MS=M sizes the
loop for M ms (10), and RUNS=N makes the baselines and gates of parts
1-3 run N times each (`-n N`) instead of as many as tally chooses. Every
busy loop started is killed before the script ends.

Prints every exit status, the rates, the first line of every gate of
parts 1 and 2, and that of the last comparison of each other kind. With
KEEP=DIR, each gate of parts 1 and 2 leaves its baseline and its JSON
report there (ROW-TRY-baseline.json, ROW-TRY-gate.json) for a look at
what decided it.

Usage: benches/gate_rates.py [TRIES] [MAX_RUNS]   (20 300); TALLY=PATH (or
TALLY_BIN=PATH) measures that binary (default: the release binary in
target/; nothing is built).

Parts 1 and 2 with the gzip rows, on the 2-core VM, 2026-12-06, the
release binary of main at 640eaa8 (`PARTS=gate TALLY=…
benches/gate_rates.py 5 300`, then the same with `LOAD=2`). The VM was
shared and never idle: other work (builds and tests) took 100-154% of a
CPU (of 2) in the gates without busy loops, 108-183% with them (tally's
`other_cpu_percent`, baseline->gate, printed per try). Exit statuses:

| | no busy loops | two busy loops |
|---|---|---|
| the loop against its own baseline (right: 0) | 0 0 0 0 0 (2 pass, 3 inconclusive) | 0 0 0 0 0 (1 pass, 4 inconclusive) |
| 20% more work (right: 3) | 3 0 0 3 3 | 0 0 3 3 3 |
| `gzip -6` of the file against its own baseline (right: 0) | 0 0 0 0 0 (1 pass, 4 inconclusive) | 0 0 0 0 0 (1 pass, 4 inconclusive) |
| `gzip -6` of the file doubled (right: 3) | 3 3 0 3 3 | 3 3 3 3 3 |

No false alarm in 20 gates of unchanged commands; 15 of 20 regressions
caught. The five missed, each the gate's words:

- 20% more work, no busy loops: `1 inconclusive: `work` wall time 0.79×
  [0.71, 0.90] within 1.05×: other work on the machine took 122% of a CPU
  during these runs and 146% during the baseline's: a change of this size
  may be the machine's; cpu time 1.20× [1.13, 1.27]: gate on cpu= to judge
  under load`
- 20% more work, no busy loops: `1 inconclusive: `work` wall time 1.10×
  [1.02, 1.18] across 1.05×: the baseline's 300 runs are too few to decide
  it however many run now: save a baseline with more runs`
- gzip doubled, no busy loops: `1 inconclusive: `gzip` wall time 2.64×
  [2.35, 2.78] beyond 1.05×: other work on the machine took 146% of a CPU
  during these runs and 134% during the baseline's: a change of this size
  may be the machine's; the command was on a CPU 50% of its wall time, 65%
  in the baseline's runs; cpu time 2.03× [1.98, 2.07]: gate on cpu= to
  judge under load`
- 20% more work, two busy loops: `1 inconclusive: `work` wall time 1.07×
  [0.96, 1.18] across 1.05×: the baseline's 300 runs are too few to decide
  it however many run now: save a baseline with more runs`
- 20% more work, two busy loops: `1 inconclusive: `work` wall time 0.95×
  [0.85, 1.06] across 1.05×: about 558 runs of each would decide`

Two kinds: a wall time that the other work made noisier than 300 runs of
a 10 ms loop can resolve (three), and the other-work rule (a change that
was waiting, other work 10 points or more apart), which made inconclusive
a doubling of gzip's wall time (2.64× [2.35, 2.78]) whose cpu time was
2.03× [1.98, 2.07], for other work only 12 points apart: that rule
excuses a change of any size, not one in proportion to the difference.
Of the speed probes' rule, two gates of unchanged gzip under the busy
loops said, e.g., `inconclusive: the machine's speed varied ±6% during
these runs (speed probes): the machine could account for a time from
0.94× to 1.15× the baseline's; 1 inconclusive: `gzip` wall time 1.19×
[1.07, 1.31] beyond 1.05×`, exit 0.

The issue's own setting, a loop of about 40 ms and 30 runs a side
(`PARTS=gate LOOP_MS=40 RUNS=30 TALLY=… benches/gate_rates.py 5 300`,
then with `LOAD=2`), right after, the VM as busy (other work 112-169% of
a CPU without busy loops, 157-186% with them):

| | no busy loops | two busy loops |
|---|---|---|
| the loop against its own baseline (right: 0) | 0 0 0 0 0 (all inconclusive) | 0 0 0 0 0 (all inconclusive) |
| 20% more work (right: 3) | 0 0 0 0 0 | 0 0 0 0 0 |
| `gzip -6` of the file against its own baseline (right: 0) | 0 0 0 0 0 (all inconclusive) | 3 0 0 0 0 |
| `gzip -6` of the file doubled (right: 3) | 0 0 3 3 3 | 3 3 3 0 0 |

One false alarm, the unchanged gzip under the busy loops: `gate: 1
regression: `gzip` wall time 1.35× [1.08, 1.93] beyond 1.05×, p=0.001`
(other work 180% of a CPU during the baseline, 185% during the gate).
No 20%-longer loop was caught: 30 runs a side on this machine left its
intervals wide ([0.99, 1.62], [0.80, 1.39], [0.74, 1.27], …), or the
probes' spread (±294%, ±14%) or other work 30 and 16 points apart made
them inconclusive at 1.38×-2.00× wall time (where a gate named the cpu
time, it was 1.14×-1.21×).
Of the four doublings of gzip missed, one by the probes (`the machine's
speed varied ±104% while the baseline was saved (speed probes): the
machine could account for a time from 0.23× to 1.95× the baseline's; 1
inconclusive: `gzip` wall time 2.48× [1.93, 3.10] beyond 1.05×`), three
by the other-work rule at 10-15 points apart, with wall 2.55×-3.35× and
cpu 1.89×-2.11× (`1 inconclusive: `gzip` wall time 3.35× [2.72, 4.77]
beyond 1.05×: other work on the machine took 178% of a CPU during these
runs and 163% during the baseline's: a change of this size may be the
machine's; the command was on a CPU 23% of its wall time, 34% in the
baseline's runs; cpu time 2.11× [2.04, 2.18]: gate on cpu= to judge
under load`).
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from common import ROOT, busy_percent, tally_binary

WORK = r"""
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    unsigned long n = strtoul(argv[1], 0, 10);
    long mb = argc > 2 ? atol(argv[2]) : 0;
    if (mb > 0) { volatile char *p = malloc(mb << 20);
                  for (long i = 0; i < (mb << 20); i += 4096) p[i] = 1; }
    volatile unsigned long x = 0;
    for (unsigned long i = 0; i < n; i++) x += i;
    return 0;
}
"""


def iterations(exe, target_ms):
    """Iterations of the loop that take about `target_ms`."""
    n = 1_000_000
    while True:
        t = time.perf_counter()
        subprocess.run([exe, str(n)], check=True)
        ms = (time.perf_counter() - t) * 1000
        if ms > target_ms / 4:
            return int(n * target_ms / ms)
        n *= 4


BUSY = []


def busy(n, cpu=None):
    """Starts `n` busy loops (on `cpu` with taskset when given)."""
    for _ in range(n):
        argv = ["sh", "-c", "while :; do :; done"]
        if cpu is not None:
            argv = ["taskset", "-c", str(cpu), *argv]
        BUSY.append(subprocess.Popen(argv))


def quiet():
    """Kills every busy loop started."""
    while BUSY:
        p = BUSY.pop()
        p.kill()
        p.wait()


def gzip_input(d):
    """A file of about 1 MB of text (the project's Rust sources, repeated
    as needed) at d/data, and the same twice over at d/data2; returns the
    first path."""
    text = b""
    for top, _, names in sorted(os.walk(os.path.join(ROOT, "src"))):
        for name in sorted(names):
            if name.endswith(".rs"):
                with open(os.path.join(top, name), "rb") as f:
                    text += f.read()
    text = (text * (1 + (1 << 20) // max(len(text), 1)))[:1 << 20]
    path = os.path.join(d, "data")
    with open(path, "wb") as f:
        f.write(text)
    with open(path + "2", "wb") as f:
        f.write(text + text)
    return path


def tally_run(tally, args, cwd):
    """Runs `tally compare ARGS`: its exit status, the gate's outcome (the
    report's first line and the indented lines that go on with it, joined
    with newlines) and the process."""
    p = subprocess.run([tally, "compare", *args], cwd=cwd, capture_output=True, text=True)
    lines = p.stdout.splitlines()
    if not lines:
        return p.returncode, p.stderr.strip(), p
    block = [lines[0]]
    for line in lines[1:]:
        if not line.startswith("  ") or not block[0].startswith("gate"):
            break
        block.append(line)
    return p.returncode, "\n".join(block), p


def main():
    try:
        run_all()
    finally:
        quiet()


def run_all():
    tries = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    max_runs = sys.argv[2] if len(sys.argv) > 2 else "300"
    tally = tally_binary()
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "work.c")
        exe = os.path.join(d, "work")
        with open(src, "w") as f:
            f.write(WORK)
        subprocess.run(["cc", "-O2", "-o", exe, src], check=True)
        loop_ms = int(os.environ.get("LOOP_MS", "10"))
        n = iterations(exe, loop_ms)
        fixed = os.environ.get("RUNS")
        runs = ["-n", fixed] if fixed else ["--max-runs", max_runs]
        print(f"loop: {n} iterations (about {loop_ms} ms); "
              f"{'runs ' + fixed if fixed else 'at most ' + max_runs + ' runs'} a side; "
              f"machine {busy_percent(2):.0f}% busy "
              f"before the runs", flush=True)

        def save(cmd=f"{exe} {n}", name="work"):
            code, first, p = tally_run(
                tally, ["-N", *runs, "--save-baseline", "b.json", "--name", name,
                        cmd, "-o", "/dev/null"], d)
            if code != 0:
                sys.exit(f"--save-baseline failed ({code}): {p.stderr}")
            with open(os.path.join(d, "b.json")) as f:
                return json.load(f).get("other_cpu_percent")

        def gate(cmd, limit="wall=5%", name="work"):
            return tally_run(tally, ["-N", *runs, "--baseline", "b.json", "--fail-on", limit,
                                     "--name", name, cmd, "--export", "json=g.json"], d)

        def other_now():
            with open(os.path.join(d, "g.json")) as f:
                return json.load(f).get("other_cpu_percent")

        load = int(os.environ.get("LOAD", "0"))
        parts = os.environ.get("PARTS", "gate,speed,other").split(",")
        data = gzip_input(d)
        busy(load)
        rows = [
            (f"same loop against its own baseline, wall=5% ({load} busy loops)",
             "work", f"{exe} {n}", f"{exe} {n}", 0),
            (f"20% more work, wall=5% ({load} busy loops)",
             "work", f"{exe} {n}", f"{exe} {n * 12 // 10}", 3),
            (f"gzip -6 of the same file against its own baseline, wall=5% ({load} busy loops)",
             "gzip", f"gzip -6 -c {data}", f"gzip -6 -c {data}", 0),
            (f"gzip -6 of the file doubled, wall=5% ({load} busy loops)",
             "gzip", f"gzip -6 -c {data}", f"gzip -6 -c {data}2", 3),
        ]
        for label, name, saved, cmd, right in rows if "gate" in parts else []:
            codes, firsts, others = [], [], []
            for _ in range(tries):
                then = save(saved, name)
                code, first, _ = gate(cmd, "wall=5%", name)
                codes.append(code)
                firsts.append(first)
                keep = os.environ.get("KEEP")
                if keep:
                    os.makedirs(keep, exist_ok=True)
                    tag = f"{rows.index((label, name, saved, cmd, right))}-{len(codes)}"
                    for src_name, kind in (("b.json", "baseline"), ("g.json", "gate")):
                        shutil.copyfile(os.path.join(d, src_name),
                                        os.path.join(keep, f"{tag}-{kind}.json"))
                others.append(f"{then or 0:.0f}->{other_now() or 0:.0f}")
            rate = sum(1 for c in codes if c == 3) / len(codes)
            ok = sum(1 for c in codes if c == right)
            print(f"\n{label}: exit statuses {codes}")
            print(f"  {ok} of {tries} as they should be ({'exit 0' if right == 0 else 'exit 3'}); "
                  f"regression called in {rate:.0%}")
            print(f"  other work on the machine (% of a CPU, baseline->gate): {' '.join(others)}")
            outcomes = [f[len("gate: "):].split(":")[0]
                        if f.startswith("gate: ") else "?" for f in firsts]
            print(f"  outcomes: {', '.join(outcomes)}")
            for first in firsts:
                print("  " + first.replace("\n", "\n  "), flush=True)

        quiet()
        if "speed" in parts:
            speed_reference(tally, exe, n, max_runs, tries, d)
        if "other" not in parts:
            return

        save()
        code, first, _ = gate(f"{exe} {n * 11 // 10}", "wall=30%")
        print(f"\n10% more work, wall=30%: exit {code}\n  " + first.replace("\n", "\n  "))

        code, first, p = tally_run(
            tally, ["-N", "--fail-on", "maxrss=10%", "--name", "20MB", "--name", "60MB",
                    f"{exe} 1000 20", f"{exe} 1000 60"], d)
        print(f"\n20 MB vs 60 MB, maxrss=10%: exit {code}\n  " + first.replace("\n", "\n  "))
        code, first, p = tally_run(
            tally, ["-N", "--max-runs", max_runs, "--fail-on", "wall=5%", "--name", "same",
                    "--name", "same-again", f"{exe} {n}", f"{exe} {n}"], d)
        print(f"\ninterleaved, the loop against itself, wall=5%: exit {code}\n  "
              + first.replace("\n", "\n  "))
        print(f"\nmachine {busy_percent(2):.0f}% busy after the runs")


def speed_reference(tally, exe, n, max_runs, tries, d):
    """Part 4: baselines saved with CPU 0 shared, gated with it alone, and
    the reverse, with and without the baseline's speed probes."""
    pinned = ["taskset", "-c", "0", tally, "compare", "-N", "--max-runs", max_runs, "--name", "work"]

    def compare(args):
        p = subprocess.run([*pinned, *args, f"{exe} {n}"], cwd=d, capture_output=True, text=True)
        return p.returncode, (p.stdout.splitlines() or [p.stderr.strip()])[0]

    for label, save_busy, gate_busy in [("saved busy, gated idle", 1, 0),
                                        ("saved idle, gated busy", 0, 1)]:
        for probes in (True, False):
            codes, firsts = [], []
            for _ in range(tries):
                busy(save_busy, cpu=0)
                compare(["--save-baseline", "b.json", "-o", "/dev/null"])
                quiet()
                if not probes:
                    with open(os.path.join(d, "b.json")) as f:
                        b = json.load(f)
                    b.pop("speed_probe_ns", None)
                    with open(os.path.join(d, "b.json"), "w") as f:
                        json.dump(b, f)
                busy(gate_busy, cpu=0)
                code, first = compare(["--baseline", "b.json", "--fail-on", "wall=5%"])
                quiet()
                codes.append(code)
                firsts.append(first)
            alarms = sum(1 for c in codes if c == 3)
            time_pass = sum(1 for c, f in zip(codes, firsts)
                            if c == 0 and "inconclusive" not in f[:30])
            print(f"\n{label}, {'with' if probes else 'without'} the speed reference: "
                  f"exit statuses {codes}; {alarms} false alarms, {time_pass} passes decided on time")
            print(f"  last: {firsts[-1]}")


if __name__ == "__main__":
    main()
