#!/usr/bin/env python3
"""tally cache against vmtouch and fincore on a 1 TiB sparse file with
64 MiB of it cached. Runs the three interleaved, prints medians and ratios.

Usage: benches/cache_sparse.py [DIR] [ROUNDS]   (DIR defaults to /tmp; run
from the repository (it builds tally with `cargo build --release`))."""
import json, os, shutil, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import build_tally, need  # noqa: E402

TALLY = os.environ.get("TALLY") or build_tally()



def timed(argv):
    t = time.perf_counter_ns()
    out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    dt = time.perf_counter_ns() - t
    if out.returncode != 0:
        sys.exit(f"{argv[0]} failed: {out.stderr.decode()}")
    return dt, out.stdout.decode()


def main():
    base = sys.argv[1] if len(sys.argv) > 1 else "/tmp"
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    need("vmtouch", "vmtouch")
    need("fincore", "util-linux")
    if not os.path.exists(TALLY):
        sys.exit("build first: cargo build --release")
    with tempfile.TemporaryDirectory(dir=base) as d:
        path = os.path.join(d, "sparse-1TiB")
        with open(path, "wb") as f:
            f.write(os.urandom(64 << 20))
            f.truncate(1 << 40)
        # Data written moments ago is cached; check it is all there.
        _, out = timed([TALLY, "cache", "--format", "json", path])
        cached = json.loads(out)["total"]["cached_bytes"]
        print(f"file: 1 TiB sparse, {cached >> 20} MiB cached (per tally cache)")
        tools = {
            "tally cache": [TALLY, "cache", path],
            "vmtouch": ["vmtouch", path],
            "fincore": ["fincore", path],
        }
        times = {k: [] for k in tools}
        for _ in range(rounds):
            for name, argv in tools.items():
                times[name].append(timed(argv)[0])
        _, vm = timed(tools["vmtouch"])
        _, fc = timed(tools["fincore"])
        print("vmtouch says:", " ".join(l.strip() for l in vm.splitlines() if "Resident" in l))
        print("fincore says:", fc.splitlines()[-1].strip() if fc else "")
    base_t = statistics.median(times["tally cache"])
    print()
    print(f"| tool | median wall ({rounds} runs) | vs tally cache |")
    print("|---|---:|---:|")
    for name, ts in times.items():
        m = statistics.median(ts)
        print(f"| {name} | {m / 1e6:,.2f} ms | {m / base_t:,.1f}x |")


if __name__ == "__main__":
    main()
