#!/usr/bin/env python3
"""What a misbehaving nvidia-smi costs tally, with the stand-in of the
tests (tests/fixtures/fake-nvidia-smi) first on PATH in each of its modes:
one that answers (`answers`), `silent`, `grandchild` (a child holds its
output pipe for 40 s), `garbage` (lines that are no query's) and `absurd`
(figures no GPU has), beside no nvidia-smi at all (`none`).

For each, interleaved in random order, ROUNDS times:
- `tally run -n 20 -- /bin/true`: its wall time, and what it adds to the
  same command with no nvidia-smi (target: under 2 s);
- `tally mem --pid 1`: its wall time (bound: the query's 5 s, once);
- `tally serve`: start, then the wall time of its first scrape (bound:
  the query's 5 s) and of a second one right after (a failed query is not
  asked again);
- the processes left running with the run's marker in their environment,
  counted after each (target: 0).

Medians of the rounds; the targets are printed beside them, as a
benchmark says them: they are measured here, never asserted in a test.

Usage: TALLY_BIN=... python3 benches/hostile_gpu.py [ROUNDS] (default 3).
"""

import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT, build_tally  # noqa: E402

MODES = ["none", "answers", "silent", "grandchild", "garbage", "absurd"]
FAKE = os.path.join(ROOT, "tests", "fixtures", "fake-nvidia-smi", "nvidia-smi")


def env_for(mode, bindir, marker):
    env = dict(os.environ, TALLY_BENCH_MARKER=marker)
    if mode == "none":
        env["PATH"] = "/usr/local/bin:/usr/bin:/bin"
    else:
        env["PATH"] = f"{bindir}:/usr/local/bin:/usr/bin:/bin"
        env["FAKE_GPU_MODE"] = "" if mode == "answers" else mode
    return env


def left_running(marker):
    """Processes, zombies aside, whose environment holds the marker."""
    needle = f"TALLY_BENCH_MARKER={marker}".encode()
    n = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if needle not in f.read().split(b"\0"):
                    continue
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    continue
        except OSError:
            continue
        n += 1
    return n


def timed(argv, env):
    t0 = time.monotonic()
    subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=120)
    return time.monotonic() - t0


def scrape(port, limit=60.0):
    """Seconds until one scrape of 127.0.0.1:port answered."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=limit) as s:
                s.sendall(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")
                data = b""
                while chunk := s.recv(65536):
                    data += chunk
                if b"\r\n\r\n" in data:
                    return time.monotonic() - t0
        except OSError:
            time.sleep(0.05)
    return float("nan")


def serve_times(tally, env, tmp):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = os.path.join(tmp, "serve.toml")
    with open(config, "w") as f:
        f.write("min_interval = 0\n[mem]\ntop = 5\n")
    server = subprocess.Popen([tally, "serve", "--listen", f"127.0.0.1:{port}", "--config", config],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # Until it listens (an empty answer is not a scrape).
        first = scrape(port)
        second = scrape(port)
    finally:
        server.kill()
        server.wait()
    return first, second


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    if shutil.which("nvidia-smi"):
        print("hostile_gpu: a real nvidia-smi is on PATH; the stand-ins go first, it is not used")
    tally = build_tally()
    tmp = tempfile.mkdtemp(prefix="tally-hostile-gpu")
    bindir = os.path.join(tmp, "bin")
    os.mkdir(bindir)
    shutil.copy(FAKE, os.path.join(bindir, "nvidia-smi"))
    figures = {m: {"run": [], "mem": [], "scrape1": [], "scrape2": [], "left": []} for m in MODES}
    for r in range(rounds):
        order = list(MODES)
        random.shuffle(order)
        for mode in order:
            marker = f"{mode}-{r}-{os.getpid()}"
            env = env_for(mode, bindir, marker)
            f = figures[mode]
            f["run"].append(timed([tally, "run", "-n", "20", "--", "/bin/true"], env))
            f["mem"].append(timed([tally, "mem", "--pid", "1", "--format", "json"], env))
            s1, s2 = serve_times(tally, env, tmp)
            f["scrape1"].append(s1)
            f["scrape2"].append(s2)
            time.sleep(0.3)
            f["left"].append(left_running(marker))
    base = statistics.median(figures["none"]["run"])
    print(f"{rounds} rounds, medians (s); machine: {os.cpu_count()} CPUs")
    print(f"  {'stand-in':11} {'run -n 20':>10} {'added':>7} {'mem':>6} {'scrape 1':>9} "
          f"{'scrape 2':>9} {'left':>5}")
    for mode in MODES:
        f = figures[mode]
        run = statistics.median(f["run"])
        print(f"  {mode:11} {run:10.3f} {run - base:+7.3f} {statistics.median(f['mem']):6.3f} "
              f"{statistics.median(f['scrape1']):9.3f} {statistics.median(f['scrape2']):9.3f} "
              f"{max(f['left']):5d}")
    worst = max(statistics.median(figures[m]["run"]) - base for m in MODES)
    bound = max(max(figures[m]["mem"] + figures[m]["scrape1"] + figures[m]["scrape2"]) for m in MODES)
    left = max(max(figures[m]["left"]) for m in MODES)
    print(f"targets: run -n 20 adds under 2 s: worst {worst:.3f} s "
          f"({'met' if worst < 2 else 'NOT met'}); mem and serve within the 5 s query "
          f"bound (and their own work): slowest {bound:.3f} s; processes left: {left} "
          f"({'none' if left == 0 else 'NOT none'})")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
