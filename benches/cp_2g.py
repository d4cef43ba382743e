#!/usr/bin/env python3
"""tally cp against coreutils cp and `nocache cp` on a 2 GiB file: time,
time including a following `sync` (coreutils leaves the data dirty), and
the page cache left behind (source + destination, as % of the file).
The source is evicted before each copy; tools run interleaved.

Usage: benches/cp_2g.py [DIR] [ROUNDS]   (DIR defaults to /tmp; run from
the repository (it builds tally with `cargo build --release`))."""
import json, os, shutil, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import build_tally, need  # noqa: E402

TALLY = os.environ.get("TALLY") or build_tally()
SIZE = 2 << 30



def run(argv):
    out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if out.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed: {out.stderr.decode()}")
    return out.stdout.decode()


def cached_bytes(paths):
    out = json.loads(run([TALLY, "cache", "--format", "json", *paths]))
    return out["total"]["cached_bytes"]


def main():
    base = sys.argv[1] if len(sys.argv) > 1 else "/tmp"
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    need("nocache", "nocache")
    if not os.path.exists(TALLY):
        sys.exit("build first: cargo build --release")
    with tempfile.TemporaryDirectory(dir=base) as d:
        src = os.path.join(d, "src.bin")
        dst = os.path.join(d, "dst.bin")
        with open(src, "wb") as f:
            for _ in range(SIZE >> 24):
                f.write(os.urandom(1 << 24))
        tools = {
            "tally cp": [TALLY, "cp", src, dst],
            "tally cp --via dontcache": [TALLY, "cp", "--via", "dontcache", src, dst],
            "coreutils cp": ["cp", src, dst],
            "nocache cp": ["nocache", "cp", src, dst],
        }
        wall = {k: [] for k in tools}
        wall_sync = {k: [] for k in tools}
        left = {k: [] for k in tools}
        left_sync = {k: [] for k in tools}
        for _ in range(rounds):
            for name, argv in tools.items():
                if os.path.exists(dst):
                    os.unlink(dst)
                run(["sync"])
                run([TALLY, "cache", "--evict", src])
                t = time.perf_counter_ns()
                run(argv)
                t1 = time.perf_counter_ns()
                left[name].append(cached_bytes([src, dst]))
                t2 = time.perf_counter_ns()
                run(["sync"])
                t3 = time.perf_counter_ns()
                wall[name].append(t1 - t)
                wall_sync[name].append((t1 - t) + (t3 - t2))
                time.sleep(1)
                left_sync[name].append(cached_bytes([src, dst]))
                if run(["cmp", src, dst]) != "":
                    sys.exit(f"{name}: copy differs")
    base_t = statistics.median(wall["tally cp"])
    base_s = statistics.median(wall_sync["tally cp"])
    print(f"2 GiB file on {base}, source evicted before each copy, {rounds} rounds, medians")
    print()
    print("| tool | wall | vs tally | wall + sync | vs tally | cache left right after (src+dst) | after sync + 1 s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name in tools:
        w = statistics.median(wall[name])
        s = statistics.median(wall_sync[name])
        l = statistics.median(left[name])
        ls = statistics.median(left_sync[name])
        print(
            f"| {name} | {w / 1e6:,.0f} ms | {w / base_t:.2f}x | {s / 1e6:,.0f} ms "
            f"| {s / base_s:.2f}x | {l / SIZE * 100:.1f}% ({l >> 20} MiB) "
            f"| {ls / SIZE * 100:.1f}% ({ls >> 20} MiB) |"
        )


if __name__ == "__main__":
    main()
