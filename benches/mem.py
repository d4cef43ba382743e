#!/usr/bin/env python3
"""tally mem against ps_mem and smem, interleaved in one run.

Starts ~600 extra processes (sleeps, plus four that touch 50 MB each), then
times, round after round in the same order:
  floor       cat of every /proc/PID/smaps_rollup (the kernel's cost), once
              with the shell expanding the glob (listing /proc included, as
              tally does) and once with the list made before the clock starts
  tally       tally mem (one worker per core)
  tally -j1   tally mem with one worker (does parallel pay?)
  ps_mem      ps_mem 3.14 (pip install ps-mem)
  smem        smem (apt-get install smem)
and prints medians and ratios; then each tool's peak RSS, measured through
GNU time (a small spawner: a child's ru_maxrss includes the RSS its parent
had when it forked, so a python spawner would add its own ~15 MB).
Every process it started is ended by PID at the end. Run as root, from
the repository:  python3 benches/mem.py [ROUNDS] [EXTRA_PROCESSES]
"""
import os
import shutil
import signal
import statistics
import subprocess
import sys
import glob
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import build_tally  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 15
EXTRA = int(sys.argv[2]) if len(sys.argv) > 2 else 600


def ensure_peers():
    if not os.path.exists("/usr/bin/time"):
        subprocess.run(["apt-get", "update", "-qq"], check=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", "time"], check=True)
    if not shutil.which("smem"):
        subprocess.run(["apt-get", "update", "-qq"], check=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", "smem"], check=True)
    if not shutil.which("ps_mem"):
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "ps-mem==3.14"], check=True)


def start_load():
    kids = []
    toucher = ("import time\n"
               "b = bytearray(50 << 20)\n"
               "for i in range(0, len(b), 4096): b[i] = 1\n"
               "time.sleep(3600)\n")
    for _ in range(4):
        kids.append(subprocess.Popen([sys.executable, "-c", toucher]))
    for _ in range(EXTRA - len(kids)):
        kids.append(subprocess.Popen(["sleep", "3600"]))
    time.sleep(2)  # let the touchers fill their 50 MB
    return kids


def end_load(kids):
    for k in kids:
        try:
            os.kill(k.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for k in kids:
        k.wait()


def rollups():
    return ["cat"] + glob.glob("/proc/[0-9]*/smaps_rollup")


def timed(argv):
    """Wall time of one run, in ms; `argv` may be a function making it."""
    if callable(argv):
        argv = argv()
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - start) * 1000


def peak_rss_kb(argv):
    """Peak RSS of one run in kB, through GNU time."""
    if callable(argv):
        argv = argv()
    out = subprocess.run(["/usr/bin/time", "-f", "%M"] + argv, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True).stderr
    return int(out.strip().splitlines()[-1])


def main():
    ensure_peers()
    tally = build_tally()
    tools = [
        ("floor (cat smaps_rollup)", ["sh", "-c", "exec cat /proc/[0-9]*/smaps_rollup"]),
        ("floor, list made before", rollups),
        ("tally mem", [tally, "mem"]),
        ("tally mem --threads 1", [tally, "mem", "--threads", "1"]),
        ("ps_mem 3.14", [shutil.which("ps_mem")]),
        ("smem", [shutil.which("smem")]),
    ]
    kids = start_load()
    try:
        nproc = sum(1 for d in os.listdir("/proc") if d.isdigit())
        times = {name: [] for name, _ in tools}
        rss = {name: [] for name, _ in tools}
        for name, argv in tools:  # warm-up round, not counted
            timed(argv)
        for _ in range(ROUNDS):
            for name, argv in tools:
                times[name].append(timed(argv))
        for _ in range(3):
            for name, argv in tools:
                rss[name].append(peak_rss_kb(argv))
    finally:
        end_load(kids)

    uname = os.uname()
    print(f"machine: {uname.sysname} {uname.release}, {os.cpu_count()} cores; "
          f"{nproc} processes during the run; {ROUNDS} interleaved rounds")
    med = {n: statistics.median(t) for n, t in times.items()}
    t = med["tally mem"]
    floor = med["floor (cat smaps_rollup)"]
    print()
    print("| command | median ms | min ms | vs tally mem | peak RSS kB |")
    print("|---|---:|---:|---:|---:|")
    for name, _ in tools:
        print(f"| {name} | {med[name]:.1f} | {min(times[name]):.1f} | "
              f"{med[name] / t:.2f}× | {max(rss[name]):,} |")
    print()
    print(f"tally mem is {med['ps_mem 3.14'] / t:.1f}× faster than ps_mem "
          f"(target ≥ 4×), {med['smem'] / t:.1f}× faster than smem, and takes "
          f"{t / floor:.2f}× the smaps_rollup floor (target ≤ 1.5×; "
          f"{t / med['floor, list made before']:.2f}× the floor without listing); "
          f"peak RSS {max(rss['tally mem']) / 1024:.1f} MB (target < 10 MB)")


if __name__ == "__main__":
    main()
