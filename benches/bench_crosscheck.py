#!/usr/bin/env python3
"""Cross-check `tally bench` against independent tools, interleaved in one run.

Peers: sysbench memory and mbw (bandwidth), perf bench sched pipe or
stress-ng (context switches), hyperfine -N (spawn), fio --direct=1 (4 KiB
reads). Each round runs tally once (membw, ctxswitch, spawn, fileread) and
then every peer, so both see the same machine; the table prints the median
over rounds of each side and the ratio tally / peer.

Usage: benches/bench_crosscheck.py [--rounds N] [--dir PATH] [--tally PATH]
Installs missing peers with apt-get (needs root). Not run by CI.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

PEERS = {"sysbench": "sysbench", "mbw": "mbw", "hyperfine": "hyperfine",
         "fio": "fio", "stress-ng": "stress-ng"}


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def ensure_peers():
    missing = [pkg for tool, pkg in PEERS.items() if not shutil.which(tool)]
    perf = find_perf()
    if perf is None:
        missing.append("linux-perf")
    if missing:
        print(f"installing {' '.join(missing)}", file=sys.stderr)
        subprocess.run(["apt-get", "update", "-qq"], check=False)
        subprocess.run(["apt-get", "install", "-y", "-qq", *missing], check=False,
                       stdout=subprocess.DEVNULL)


def find_perf():
    """Debian's /usr/bin/perf refuses kernels it was not built for; the
    versioned binary behind it runs `bench sched pipe` on any kernel."""
    for cand in sorted(os.listdir("/usr/bin"), reverse=True):
        if re.fullmatch(r"perf_\d+\.\d+", cand):
            return os.path.join("/usr/bin", cand)
    p = shutil.which("perf")
    if p and subprocess.run([p, "--version"], capture_output=True).returncode == 0:
        return p
    return None


def tally_round(tally, scratch):
    out = sh([tally, "bench", "membw", "ctxswitch", "spawn", "fileread", "--quick",
              "--format", "json", "--dir", scratch])
    r = json.loads(out)
    figs = {}
    for b in r["benchmarks"]:
        for f in b["figures"]:
            for unit in ("ns", "gb_per_s"):
                if unit in f and not f.get("implausible"):
                    figs[f["id"]] = f[unit]["median"]
    return figs, r["machine"]


def sysbench_gbps(oper):
    out = sh(["sysbench", "memory", "--memory-block-size=1G", "--memory-total-size=8G",
              f"--memory-oper={oper}", "--threads=1", "run"])
    m = re.search(r"\(([\d.]+) MiB/sec\)", out)
    return float(m.group(1)) * 2**20 / 1e9 if m else None


def mbw_gbps():
    """mbw 1.2.2 prints MEMCPY and DUMB swapped: `-t1`, printed DUMB, runs
    as fast as MCBLOCK (block-wise memcpy) and is the memcpy; `-t0`, printed
    MEMCPY, is the element loop at about half the speed."""
    out = sh(["mbw", "-q", "-n", "5", "-t1", "256"])
    m = re.search(r"AVG\s+Method: \S+\s+Elapsed: [\d.]+\s+MiB: [\d.]+\s+Copy: ([\d.]+) MiB/s", out)
    return float(m.group(1)) * 2**20 / 1e9 if m else None


def perf_pipe_us(perf, pinned):
    cmd = [perf, "bench", "sched", "pipe", "-l", "50000"]
    if pinned:
        cmd = ["taskset", "-c", "1"] + cmd
    out = sh(cmd)
    m = re.search(r"([\d.]+) usecs/op", out)
    return float(m.group(1)) * 1000 if m else None


def stress_ng_switch_ns():
    """stress-ng's own "nanosecs per context switch" line: wall time per
    bogo op of its pipe method."""
    out = subprocess.run(["stress-ng", "--switch", "1", "--switch-ops", "200000",
                          "--taskset", "1", "--metrics-brief"],
                         capture_output=True, text=True).stderr
    m = re.search(r"([\d.]+) nanosecs per context switch", out)
    return float(m.group(1)) if m else None


def hyperfine_ns():
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        sh(["hyperfine", "-N", "--warmup", "20", "--runs", "300", "--export-json", f.name,
            "/bin/true"])
        r = json.load(open(f.name))
    return statistics.median(r["results"][0]["times"]) * 1e9


def fio_ns(scratch, rw, size):
    out = sh(["fio", "--name=x", f"--filename={scratch}/fio.dat", f"--size={size}",
              f"--rw={rw}", "--bs=4k", "--direct=1", "--ioengine=psync", "--runtime=3",
              "--time_based", "--output-format=json"])
    j = json.loads(out[out.index("{"):])
    clat = j["jobs"][0]["read"]["clat_ns"]
    return clat["percentile"].get("50.000000", clat["mean"])


def tally_memory_round(tally):
    """stream's figures from a run of its own (beside the first round's)."""
    out = sh([tally, "bench", "stream", "--quick", "--format", "json"])
    figs = {}
    for b in json.loads(out)["benchmarks"]:
        for f in b["figures"]:
            if "gb_per_s" in f and not f.get("implausible"):
                figs[f["id"]] = f["gb_per_s"]["median"]
    return figs


STREAM_URL = "https://www.cs.virginia.edu/stream/FTP/Code/stream.c"


def stream_binary(scratch, llc_bytes):
    """The STREAM benchmark compiled from its public source (McCalpin's
    stream.c, fetched from its home page; no Debian package carries it):
    gcc -O2 -fopenmp, each array 4x the last-level cache (STREAM's rule,
    as tally's stream uses). Returns (path, None) or (None, why)."""
    src = os.path.join(scratch, "stream.c")
    try:
        subprocess.run(["curl", "-sSfL", "--max-time", "30", "-o", src, STREAM_URL],
                       check=True, capture_output=True, text=True)
    except (OSError, subprocess.CalledProcessError) as e:
        err = getattr(e, "stderr", "") or str(e)
        return None, f"stream.c could not be fetched from {STREAM_URL} ({err.strip()})"
    n = max(4 * (llc_bytes or 32 << 20) // 8, 10_000_000)
    exe = os.path.join(scratch, "stream")
    try:
        sh(["gcc", "-O2", "-fopenmp", f"-DSTREAM_ARRAY_SIZE={n}", "-DNTIMES=10",
            "-mcmodel=medium", src, "-o", exe])
    except (OSError, subprocess.CalledProcessError) as e:
        return None, f"stream.c did not compile ({e})"
    return exe, None


def stream_gbps(exe, threads):
    """STREAM's best rates, MB/s (10^6) -> GB/s, on `threads` OpenMP threads."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    out = sh([exe], env=env)
    rates = {}
    for k in ("Copy", "Scale", "Add", "Triad"):
        m = re.search(rf"^{k}:\s+([\d.]+)", out, re.M)
        if m:
            rates[k.lower()] = float(m.group(1)) / 1000
    return rates


def perf_memcpy_gbps(perf):
    """perf bench mem memcpy of 256 MiB (glibc memcpy): perf prints GB/sec
    in 2^30 bytes; converted to 10^9. Counts each byte copied once."""
    out = sh([perf, "bench", "mem", "memcpy", "-s", "256MB", "-l", "5", "-f", "default"])
    m = re.search(r"([\d.]+) GB/sec", out)
    return float(m.group(1)) * 2**30 / 1e9 if m else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dir", default="/var/tmp")
    ap.add_argument("--tally", default=None, help="tally binary (default: build it)")
    a = ap.parse_args()
    ensure_peers()
    perf = find_perf()
    if a.tally is None:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from common import build_tally
        a.tally = build_tally()
    scratch = tempfile.mkdtemp(dir=a.dir, prefix="tally-xcheck-")
    size = 256 << 20
    rows = {}  # name -> (tally id, peer label, [tally], [peer])

    def add(name, tid, peer_label, t, p):
        e = rows.setdefault(name, (tid, peer_label, [], []))
        if t is not None:
            e[2].append(t)
        if p is not None:
            e[3].append(p)

    try:
        for rnd in range(a.rounds):
            print(f"round {rnd + 1}/{a.rounds}", file=sys.stderr)
            t, machine = tally_round(a.tally, scratch)
            t.update(tally_memory_round(a.tally))
            add("memory read GB/s", "membw.read.1", "sysbench memory read (1G blocks)",
                t.get("membw.read.1"), sysbench_gbps("read"))
            add("memory write GB/s", "membw.write.1", "sysbench memory write (1G blocks)",
                t.get("membw.write.1"), sysbench_gbps("write"))
            add("memory copy GB/s", "membw.copy.1", "mbw -t1 256 MiB (memcpy, printed DUMB)",
                t.get("membw.copy.1"), mbw_gbps())
            memcpy = perf_memcpy_gbps(perf) if perf else None
            if perf:
                add("memcpy GB/s (each byte once)", "membw.copy.1",
                    "perf bench mem memcpy 256 MiB (glibc memcpy)",
                    t.get("membw.copy.1"), memcpy)
            if rnd == 0:
                llc = max((c["size_bytes"] for c in machine.get("caches", [])
                           if c.get("kind") != "Instruction"), default=None)
                stream_exe, stream_why = stream_binary(scratch, llc)
                if stream_why:
                    print(f"STREAM unavailable: {stream_why}", file=sys.stderr)
            for threads, which in ((1, "1"), (machine.get("logical_cpus", 1), "all")):
                rates = stream_gbps(stream_exe, threads) if stream_exe else {}
                for k in ("copy", "scale", "add", "triad"):
                    add(f"STREAM {k}, {which} thread(s) GB/s", f"stream.{k}.{which}",
                        f"stream.c -O2 -fopenmp, OMP_NUM_THREADS={threads}"
                        if stream_exe else "STREAM (stream.c could not be fetched or built)",
                        t.get(f"stream.{k}.{which}"), rates.get(k))
            if perf:
                # No STREAM here: its copy (16 B per element: a byte read
                # and a byte written) against twice memcpy's rate (each
                # byte counted once), the same traffic counted STREAM's way.
                add("STREAM copy vs 2 x memcpy, 1 thread GB/s", "stream.copy.1",
                    "2 x perf bench mem memcpy 256 MiB", t.get("stream.copy.1"),
                    2 * memcpy if memcpy else None)
            if perf:
                add("pipe round trip, pinned (ns)", "ctxswitch.process_round_trip.pinned",
                    "taskset -c 1 perf bench sched pipe",
                    t.get("ctxswitch.process_round_trip.pinned"), perf_pipe_us(perf, True))
                add("pipe round trip, unpinned vs across (ns)",
                    "ctxswitch.process_round_trip.across", "perf bench sched pipe (unpinned)",
                    t.get("ctxswitch.process_round_trip.across"), perf_pipe_us(perf, False))
            if shutil.which("stress-ng"):
                # stress-ng calls its figure "per context switch"; it
                # matches a whole round trip, so that is what it is set against.
                add("stress-ng switch vs round trip, pinned (ns)",
                    "ctxswitch.process_round_trip.pinned",
                    "stress-ng --switch 1 --taskset 1 (its nanosecs per context switch)",
                    t.get("ctxswitch.process_round_trip.pinned"), stress_ng_switch_ns())
            add("spawn /bin/true (ns)", "spawn.posix_spawn", "hyperfine -N /bin/true (median)",
                t.get("spawn.posix_spawn"), hyperfine_ns())
            add("4 KiB random read, 256 MiB (ns)", f"fileread.random.{size}",
                "fio randread 4k direct=1 psync (median clat)",
                t.get(f"fileread.random.{size}"), fio_ns(scratch, "randread", size))
            add("4 KiB sequential read, 256 MiB (ns)", f"fileread.seq.{size}",
                "fio read 4k direct=1 psync (median clat)",
                t.get(f"fileread.seq.{size}"), fio_ns(scratch, "read", size))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    print(f"\nmachine: {machine.get('cpu_model')}, {machine.get('logical_cpus')} CPUs, "
          f"kernel {machine.get('kernel')}; {a.rounds} interleaved rounds, medians")
    print("| figure | tally id | tally | peer | peer | tally / peer |")
    print("|---|---|---:|---:|---|---:|")
    for name, (tid, peer, ts, ps) in rows.items():
        tm = statistics.median(ts) if ts else None
        pm = statistics.median(ps) if ps else None
        ratio = f"{tm / pm:.2f}" if tm and pm else "unavailable"
        fmt = (lambda v: f"{v:,.2f}") if "GB/s" in name else (lambda v: f"{v:,.0f}")
        print(f"| {name} | {tid} | {fmt(tm) if tm else 'unavailable'} | "
              f"{fmt(pm) if pm else 'unavailable'} | {peer} | {ratio} |")


if __name__ == "__main__":
    main()
