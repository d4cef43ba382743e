#!/usr/bin/env python3
"""How fast `tally history` answers, against Apache Otava and a C floor,
and how large its store grows.

1. Speed: 2,000 points of each of 50 figures (5% steps at a few places,
   2% noise). Interleaved, RUNS times each: `tally history STORE` (the
   whole process: start, read the SQLite store, analyse 50 series, print),
   Otava's `compute_change_points` on the same 50 series (in one Python
   process, the data already in memory: its analysis alone), and the C
   floor of reading the store (`sqlite3 STORE 'SELECT … FROM results'`,
   the SQLite shell summing the same rows, no analysis). Medians and
   ratios.
2. Scale: 100,000 recorded points of 50 figures (5,000,000 results): the
   store's size on disk, the time of `tally history STORE` (RUNS times,
   median), of one figure alone (`--figure f00_ns`), and of the last 10%
   (`--since`), and the import's.

Otava runs in a virtual environment under this run's scratch directory
(`pip install apache-otava`); the SQLite shell is Debian's `sqlite3`
(installed if missing). Each time is said with the machine's load, as the
VM is shared.

Usage: benches/history_speed.py [RUNS] [SCRATCH]   (5); SCALE=0 skips the
scale part; TALLY_BIN=PATH measures that binary instead of building one.
"""

import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

FIGURES = 50


def series_values(points, seed):
    """`points` values of each figure: 2% noise, 5% steps at 30% and 70%."""
    rng = random.Random(seed)
    cols = []
    for f in range(FIGURES):
        base = rng.uniform(1e5, 1e7)
        col = []
        for i in range(points):
            level = base * (1.05 if i >= 0.3 * points else 1.0) * (0.95 if i >= 0.7 * points else 1.0)
            col.append(level * (1 + 0.02 * rng.gauss(0, 1)))
        cols.append(col)
    return cols


def write_csv(path, cols):
    with open(path, "w") as f:
        f.write("time,commit," + ",".join(f"f{j:02d}_ns" for j in range(FIGURES)) + "\n")
        for i in range(len(cols[0])):
            f.write(f"{1793491200 + 60 * i},c{i:06d}," + ",".join(f"{c[i]:.1f}" for c in cols) + "\n")


def fresh(store):
    """A new store at `store` (a rerun in the same scratch directory would
    add the points again)."""
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(store + suffix):
            os.remove(store + suffix)
    return store


def wall(cmd, **kw):
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, **kw)
    return time.perf_counter() - t0


def load():
    return open("/proc/loadavg").read().split()[0]


def otava_time(py, csv):
    """Otava's analysis of every column of `csv`, in seconds (timed in its
    own process after reading the data)."""
    code = (
        "import csv, sys, time\n"
        "from otava.analysis import compute_change_points\n"
        "rows = list(csv.reader(open(sys.argv[1])))\n"
        "cols = [[float(r[j]) for r in rows[1:]] for j in range(2, len(rows[0]))]\n"
        "t0 = time.perf_counter()\n"
        "for c in cols:\n"
        "    compute_change_points(c, window_len=50, max_pvalue=0.001, min_magnitude=0.0)\n"
        "print(time.perf_counter() - t0)\n"
    )
    out = subprocess.run([py, "-c", code, csv], check=True, capture_output=True, text=True).stdout
    return float(out)


def speed(tally, py, scratch, runs):
    csv = os.path.join(scratch, "speed.csv")
    write_csv(csv, series_values(2000, 1))
    store = fresh(os.path.join(scratch, "speed.db"))
    subprocess.run([tally, "history", "import", "--as-command", "app", store, csv], check=True,
                   stdout=subprocess.DEVNULL)
    t, o, c = [], [], []
    for _ in range(runs):
        t.append(wall([tally, "history", store]))
        o.append(otava_time(py, csv))
        c.append(wall(["sqlite3", store, "SELECT count(*), sum(median), sum(mad), sum(n) FROM results"]))
    mt, mo, mc = statistics.median(t), statistics.median(o), statistics.median(c)
    print(f"speed: 2,000 points × {FIGURES} figures, {runs} runs each, interleaved (load {load()})")
    print("| | median | per series | against tally |")
    print("|---|---:|---:|---:|")
    print(f"| `tally history` (whole process) | {mt * 1000:.0f} ms | {mt * 1000 / FIGURES:.1f} ms | 1 |")
    print(f"| Otava 0.8 `compute_change_points` (analysis alone) | {mo * 1000:.0f} ms | {mo * 1000 / FIGURES:.1f} ms | {mo / mt:.2f}× |")
    print(f"| C floor: `sqlite3` reading the same results | {mc * 1000:.0f} ms | | {mc / mt:.2f}× |")


def scale(tally, scratch, runs):
    csv = os.path.join(scratch, "scale.csv")
    write_csv(csv, series_values(100_000, 2))
    store = fresh(os.path.join(scratch, "scale.db"))
    t_import = wall([tally, "history", "import", "--as-command", "app", store, csv])
    os.remove(csv)
    size = sum(os.path.getsize(store + s) for s in ("", "-wal") if os.path.exists(store + s))
    # The whole history interleaved with the C floor of reading its rows
    # (the SQLite shell summing the 5,000,000 results, no analysis): the
    # VM's speed moves by tens of percent from minute to minute, the ratio
    # much less.
    whole, floor = [], []
    for _ in range(runs):
        whole.append(wall([tally, "history", store]))
        floor.append(wall(["sqlite3", store, "SELECT count(*), sum(median), sum(mad), sum(n) FROM results"]))
    one = [wall([tally, "history", store, "--figure", "f00_ns"]) for _ in range(runs)]
    since = [wall([tally, "history", store, "--since", "2027-01-03"]) for _ in range(runs)]
    mw, mf = statistics.median(whole), statistics.median(floor)
    print(f"\nscale: 100,000 points × {FIGURES} figures = 5,000,000 results (load {load()})")
    print("| | |")
    print("|---|---:|")
    print(f"| the store on disk | {size / 2**20:.0f} MiB ({size / 5e6:.0f} bytes a result) |")
    print(f"| `tally history import` of it (one transaction, then packing) | {t_import:.1f} s |")
    print(f"| `tally history STORE`: 50 series of 100,000 points, {runs} runs | {mw:.2f} s (from {min(whole):.2f} to {max(whole):.2f}) |")
    print(f"| C floor, interleaved: `sqlite3` summing the 5,000,000 results | {mf:.2f} s (tally: {mw / mf:.2f}× its time) |")
    print(f"| `--figure f00_ns`: one series | {statistics.median(one):.2f} s |")
    print(f"| `--since` the last 10,000 points: 50 series | {statistics.median(since):.2f} s |")


def main():
    from common import build_tally, need
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    given = len(sys.argv) > 2
    scratch = sys.argv[2] if given else tempfile.mkdtemp(prefix="tally-history-speed-")
    os.makedirs(scratch, exist_ok=True)
    try:
        need("sqlite3", "sqlite3")
        venv = os.path.join(scratch, "venv")
        py = os.path.join(venv, "bin", "python")
        if not os.path.exists(py):
            subprocess.run([sys.executable, "-m", "venv", venv], check=True)
            subprocess.run([py, "-m", "pip", "install", "-q", "apache-otava"], check=True)
        tally = build_tally()
        print(f"{os.cpu_count()} CPUs; tally {tally}")
        speed(tally, py, scratch, runs)
        if os.environ.get("SCALE", "1") != "0":
            scale(tally, scratch, runs)
    finally:
        if not given:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
