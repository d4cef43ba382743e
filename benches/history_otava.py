#!/usr/bin/env python3
"""`tally history` against Apache Otava, the published implementation of
E-divisive change points (MongoDB's "Hunter"), on the same data with the
same window (50), maximum p-value (0.001) and minimum magnitude (0).

1. 24 synthetic series with known steps (1-30% up and down), noise 0.5-20%,
   10 to 2,000 points, with and without 2% outliers (points 1.2-1.6 times
   their level: slow runs): Otava's `compute_change_points`, tally's
   default method, and tally's `--method otava` (Otava's steps alone, to
   show the port is Otava's) on each. A true step is found when a point
   lies within 2 of it (each step matched once); every other point is a
   false one. Prints the table (truth, Otava's points, tally's points,
   time) and the totals.
2. False alarms and power: 100 stationary series of 200 points (2% noise)
   and 100 series with a 5% step at point 100 (2% noise), both tools.

Otava runs in a virtual environment under this run's scratch directory
(`pip install apache-otava`, which brings NumPy and SciPy); nothing is
installed elsewhere, and nothing runs in CI. Otava's time is its
`compute_change_points` alone; tally's is the whole `tally history`
process (start, store read, analysis, JSON), measured from here.

Usage: benches/history_otava.py [SCRATCH]   (default: a new temporary
directory, removed at the end unless given); TALLY_BIN=PATH measures that
binary instead of building one.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# (name, points, [(index, relative change)], noise, outliers)
SPECS = [
    ("s01", 10, [(5, +0.30)], 0.005, False),
    ("s02", 20, [(10, -0.20)], 0.02, False),
    ("s03", 30, [(20, +0.10)], 0.01, False),
    ("s04", 40, [(20, -0.15)], 0.03, False),
    ("s05", 50, [(25, -0.05)], 0.005, False),
    ("s06", 60, [(30, +0.08)], 0.02, True),
    ("s07", 100, [(60, +0.05)], 0.02, False),
    ("s08", 100, [(30, -0.10)], 0.05, True),
    ("s09", 150, [(75, +0.04)], 0.01, True),
    ("s10", 200, [(100, +0.03)], 0.005, False),
    ("s11", 200, [(80, +0.01), (150, -0.01)], 0.005, False),
    ("s12", 200, [(50, +0.20)], 0.20, False),
    ("s13", 300, [(150, +0.30)], 0.10, True),
    ("s14", 400, [(200, +0.01)], 0.005, True),
    ("s15", 500, [(250, +0.02)], 0.01, True),
    ("s16", 500, [(100, -0.03), (300, +0.03)], 0.01, False),
    ("s17", 1000, [(200, +0.05), (500, -0.10), (800, +0.15)], 0.02, True),
    ("s18", 1000, [], 0.02, True),
    ("s19", 1000, [(100, -0.30), (900, +0.30)], 0.05, False),
    ("s20", 2000, [], 0.02, True),
    ("s21", 2000, [(500, +0.01), (1000, +0.02), (1500, -0.03)], 0.005, True),
    ("s22", 2000, [], 0.10, False),
    ("s23", 2000, [(1000, +0.10)], 0.20, True),
    ("s24", 2000, [(300, +0.05), (700, -0.05), (1100, +0.05), (1400, -0.05), (1800, +0.05)],
     0.02, True),
]


def make(np, spec, seed):
    _, n, steps, noise, outliers = spec
    rng = np.random.default_rng(seed)
    level = np.ones(n) * 1000.0
    for i, r in steps:
        level[i:] *= 1 + r
    x = level * (1 + noise * rng.standard_normal(n))
    if outliers:
        m = rng.random(n) < 0.02
        x[m] *= 1 + rng.uniform(0.2, 0.6, m.sum())
    return [float(v) for v in x]


def score(found, truth):
    used = set()
    hits = 0
    for t in truth:
        near = [f for f in found if abs(f - t) <= 2 and f not in used]
        if near:
            hits += 1
            used.add(near[0])
    return hits, len([f for f in found if f not in used])


def fresh(store):
    """A new store at `store` (a rerun in the same scratch directory
    would add the series again)."""
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(store + suffix):
            os.remove(store + suffix)
    return store


def write_csv(path, values):
    with open(path, "w") as f:
        f.write("time,commit,wall_ns\n")
        for i, v in enumerate(values):
            f.write(f"{1793491200 + 60 * i},c{i},{v!r}\n")


def tally_points(tally, store, command, method="tally"):
    """The change points tally finds in `command`'s series, and the
    wall time of the whole `tally history` run."""
    t0 = time.perf_counter()
    out = subprocess.run([tally, "history", store, "--command", command, "--format", "json",
                          "--method", method], check=True, capture_output=True, text=True).stdout
    took = time.perf_counter() - t0
    doc = json.loads(out)
    return [c["index"] for c in doc["series"][0]["change_points"]], took


def all_points(tally, store):
    out = subprocess.run([tally, "history", store, "--format", "json"], check=True,
                         capture_output=True, text=True).stdout
    doc = json.loads(out)
    return {s["command"]: [c["index"] for c in s["change_points"]] for s in doc["series"]}


def comparison(np, otava, tally, scratch):
    csvs = []
    data = {}
    for k, spec in enumerate(SPECS):
        data[spec[0]] = make(np, spec, 1000 + k)
        path = os.path.join(scratch, spec[0] + ".csv")
        write_csv(path, data[spec[0]])
        csvs.append(path)
    store = fresh(os.path.join(scratch, "synthetic.db"))
    subprocess.run([tally, "history", "import", store] + csvs, check=True, capture_output=True)
    print("| series | points | noise | outliers | true steps | Otava's points | tally's points"
          " | Otava found / false | tally found / false | `--method otava` = Otava | Otava ms"
          " | tally ms |")
    print("|---|---:|---:|---|---|---|---|---|---|---|---:|---:|")
    totals = [0, 0, 0, 0, 0]
    for spec in SPECS:
        name, n, steps, noise, outl = spec
        x = data[name]
        t0 = time.perf_counter()
        cps, _ = otava.compute_change_points(x, window_len=50, max_pvalue=0.001, min_magnitude=0.0)
        o_ms = (time.perf_counter() - t0) * 1000
        o = [int(c.index) for c in cps]
        t, t_s = tally_points(tally, store, name)
        like, _ = tally_points(tally, store, name, "otava")
        truth = [i for i, _ in steps]
        of, ofalse = score(o, truth)
        tf, tfalse = score(t, truth)
        same = like == o
        for i, v in enumerate([of, ofalse, tf, tfalse, int(same)]):
            totals[i] += v
        steps_txt = ", ".join(f"{i} ({r:+.0%})" for i, r in steps) or "none"
        print(f"| {name} | {n} | {noise:.1%} | {'2%' if outl else 'none'} | {steps_txt} | {o} | {t}"
              f" | {of} / {ofalse} | {tf} / {tfalse} | {'yes' if same else f'no: {like}'}"
              f" | {o_ms:.1f} | {t_s * 1000:.1f} |")
    steps = sum(len(s[2]) for s in SPECS)
    print(f"\ntotals over {len(SPECS)} series, {steps} true steps: Otava found {totals[0]}, "
          f"false {totals[1]}; tally found {totals[2]}, false {totals[3]}; "
          f"tally --method otava gave Otava's points on {totals[4]} of {len(SPECS)}")
    pairs = []
    o = [int(c.index) for c in otava.compute_change_points(data["s20"], 50, 0.001, 0.0)[0]]
    for a, b in zip(o, o[1:]):
        if b == a + 1:
            pairs.append((a, b))
    print(f"s20 (stationary, 2,000 points, 2% outliers): Otava's adjacent pairs {pairs}; "
          f"tally's points {tally_points(tally, store, 's20')[0]}")


def rates(np, otava, tally, scratch):
    rng = np.random.default_rng(1)
    stationary = [[float(v) for v in 100 * (1 + 0.02 * rng.standard_normal(200))] for _ in range(100)]
    stepped = []
    for _ in range(100):
        s = 100 * (1 + 0.02 * rng.standard_normal(200))
        s[100:] *= 1.05
        stepped.append([float(v) for v in s])
    csvs = []
    for k, x in enumerate(stationary + stepped):
        path = os.path.join(scratch, f"r{k:03d}.csv")
        write_csv(path, x)
        csvs.append(path)
    store = fresh(os.path.join(scratch, "rates.db"))
    subprocess.run([tally, "history", "import", store] + csvs, check=True, capture_output=True)
    t = all_points(tally, store)
    o_false = sum(len(otava.compute_change_points(x, 50, 0.001, 0.0)[0]) for x in stationary)
    t_false = sum(len(t[f"r{k:03d}"]) for k in range(100))
    o_found = sum(any(abs(int(c.index) - 100) <= 2 for c in otava.compute_change_points(x, 50, 0.001, 0.0)[0])
                  for x in stepped)
    t_found = sum(any(abs(i - 100) <= 2 for i in t[f"r{k:03d}"]) for k in range(100, 200))
    print("\n| | Otava 0.8 | tally |")
    print("|---|---:|---:|")
    print(f"| change points in 100 stationary series of 200 points (2% noise), p ≤ 0.001 | {o_false} | {t_false} |")
    print(f"| 5% steps found (±2 points) in 100 series of 200 points (2% noise) | {o_found} | {t_found} |")


def inside(scratch):
    import numpy as np
    import otava.analysis as otava
    from importlib.metadata import version
    tally = os.environ["TALLY_BIN"]
    print(f"Apache Otava {version('apache-otava')}, NumPy {np.__version__}; tally {tally}\n")
    comparison(np, otava, tally, scratch)
    rates(np, otava, tally, scratch)


def main():
    if os.environ.get("HISTORY_OTAVA_INSIDE"):
        return inside(sys.argv[1])
    from common import build_tally
    given = len(sys.argv) > 1
    scratch = sys.argv[1] if given else tempfile.mkdtemp(prefix="tally-history-otava-")
    os.makedirs(scratch, exist_ok=True)
    try:
        venv = os.path.join(scratch, "venv")
        py = os.path.join(venv, "bin", "python")
        if not os.path.exists(py):
            subprocess.run([sys.executable, "-m", "venv", venv], check=True)
            subprocess.run([py, "-m", "pip", "install", "-q", "apache-otava"], check=True)
        env = dict(os.environ, HISTORY_OTAVA_INSIDE="1", TALLY_BIN=build_tally())
        subprocess.run([py, os.path.abspath(__file__), scratch], check=True, env=env)
    finally:
        if not given:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
