#!/usr/bin/env python3
"""What GPU sampling costs, on a machine with nvidia-smi.

1. CPU time per second of sampling. Interleaved, ROUNDS times each:
   - `tally run --gpu -- /bin/sleep S` (tally and its two nvidia-smi
     children sampling every 20 ms),
   - `tally run -- /bin/sleep S` with no nvidia-smi on PATH (no sampler),
   - the floor: the two nvidia-smi queries tally starts, alone, for S s.
   Each is timed by the CPU time of the children it leaves (RUSAGE_CHILDREN
   before and after); the sampler's cost is the first less the second.
2. `tally run -- /bin/true`'s wall time (spawn to reap) with nvidia-smi on
   PATH (sampling by default) and without, interleaved: what sampling adds
   to a run on a GPU machine, and that nothing is added without nvidia-smi.

Usage: TALLY_BIN=... python3 benches/gpu_sampler.py [SECONDS] [ROUNDS]
(default 5 s, 3 rounds; 40 runs of /bin/true each). Without nvidia-smi
on PATH it says so and exits 0.
"""

import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import build_tally  # noqa: E402

QUERIES = [
    "--query-gpu=index,name,uuid,utilization.gpu,power.draw,power.limit,power.max_limit,memory.used,memory.total",
    "--query-compute-apps=timestamp,pid,used_memory,gpu_uuid",
]


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def cpu_of(run):
    before = children_cpu()
    t0 = time.monotonic()
    run()
    return children_cpu() - before, time.monotonic() - t0


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    smi = shutil.which("nvidia-smi")
    if not smi:
        print("gpu_sampler: nvidia-smi is not on PATH: nothing to measure here")
        return
    tally = build_tally()
    quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    no_smi = dict(os.environ, PATH="/nonexistent")

    def sampled():
        subprocess.run([tally, "run", "--gpu", "--", "/bin/sleep", str(seconds)],
                       check=True, **quiet)

    def unsampled():
        subprocess.run([tally, "run", "--", "/bin/sleep", str(seconds)],
                       check=True, env=no_smi, **quiet)

    def floor():
        kids = [subprocess.Popen([smi, q, "--format=csv,noheader,nounits", "-lms", "20"],
                                 **quiet) for q in QUERIES]
        time.sleep(seconds)
        for k in kids:
            k.kill()
            k.wait()

    cases = {"tally run --gpu": sampled, "tally run, no nvidia-smi": unsampled,
             "nvidia-smi's two queries alone": floor}
    cpu = {k: [] for k in cases}
    for _ in range(rounds):
        order = list(cases)
        random.shuffle(order)
        for k in order:
            used, wall = cpu_of(cases[k])
            cpu[k].append(used / wall * 1e3)
    print(f"CPU time per second ({rounds} rounds of {seconds:g} s, medians):")
    for k, v in cpu.items():
        print(f"  {k:34} {statistics.median(v):7.1f} ms/s   {['%.1f' % x for x in v]}")
    cost = statistics.median(cpu["tally run --gpu"]) - statistics.median(cpu["tally run, no nvidia-smi"])
    floor_ms = statistics.median(cpu["nvidia-smi's two queries alone"])
    print(f"  sampling's cost: {cost:.1f} ms of CPU per second; the queries alone {floor_ms:.1f}"
          f" ({cost / floor_ms:.2f}x)" if floor_ms > 0 else "")

    walls = {"with nvidia-smi on PATH (sampling)": [], "without nvidia-smi": []}
    runs = {"with nvidia-smi on PATH (sampling)": ([tally, "run", "--", "/bin/true"], None),
            "without nvidia-smi": ([tally, "run", "--", "/bin/true"], no_smi)}
    for _ in range(40):
        order = list(runs)
        random.shuffle(order)
        for k in order:
            argv, env = runs[k]
            t0 = time.perf_counter_ns()
            subprocess.run(argv, env=env, **quiet)
            walls[k].append((time.perf_counter_ns() - t0) / 1e6)
    print("tally run -- /bin/true, spawn to reap (40 runs each, median):")
    for k, v in walls.items():
        print(f"  {k:36} {statistics.median(v):7.2f} ms")


if __name__ == "__main__":
    main()
