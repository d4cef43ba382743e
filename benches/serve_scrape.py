#!/usr/bin/env python3
"""A scrape of `tally serve` against `tally mem`, in the same run.

Starts EXTRA `sleep` processes (650 by default: ~700 processes with what
runs already), then `tally serve` with min_interval = 0 (every scrape
scans) on a free loopback port, and times, round after round in the same
order:
  tally mem      tally mem --format prometheus > /dev/null (the whole
                 command: exec, scan, render)
  scrape         GET /metrics over HTTP (scan, render, transfer)
  scan (self)    tally_serve_collector_duration_seconds{collector="mem"}
                 from that scrape: the server's own measure of its scan
and prints medians, the process count the scrape saw and the body size.
Every process it started is ended by PID at the end. From the repository:
  python3 benches/serve_scrape.py [ROUNDS] [EXTRA_PROCESSES]
"""
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import build_tally  # noqa: E402

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 15
EXTRA = int(sys.argv[2]) if len(sys.argv) > 2 else 650


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(url):
    with urllib.request.urlopen(url, timeout=60) as r:
        return r.read().decode()


def figure(body, name):
    m = re.search(r"^" + re.escape(name) + r" (\S+)$", body, re.M)
    return float(m.group(1)) if m else None


def main():
    tally = build_tally()
    kids = [subprocess.Popen(["sleep", "3600"]) for _ in range(EXTRA)]
    server = None
    try:
        with tempfile.TemporaryDirectory() as d:
            cfg = os.path.join(d, "serve.toml")
            with open(cfg, "w") as f:
                f.write("min_interval = 0\n")
            port = free_port()
            server = subprocess.Popen([tally, "serve", "--listen", f"127.0.0.1:{port}",
                                       "--config", cfg], stderr=subprocess.DEVNULL)
            url = f"http://127.0.0.1:{port}/metrics"
            for _ in range(200):
                try:
                    scrape(url)
                    break
                except OSError:
                    time.sleep(0.05)
            mem_s, scrape_s, scan_s = [], [], []
            body = ""
            for _ in range(ROUNDS):
                t0 = time.perf_counter()
                subprocess.run([tally, "mem", "--format", "prometheus"], check=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                mem_s.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                body = scrape(url)
                scrape_s.append(time.perf_counter() - t0)
                scan_s.append(figure(body, 'tally_serve_collector_duration_seconds{collector="mem"}'))
            procs = figure(body, "tally_mem_total_processes")
            ms = lambda xs: f"{statistics.median(xs) * 1000:8.1f} ms"  # noqa: E731
            print(f"processes counted by the scrape: {procs:.0f}  ({EXTRA} sleeps started), "
                  f"{ROUNDS} rounds, {os.cpu_count()} cores, body {len(body)} bytes")
            print(f"  tally mem --format prometheus  median {ms(mem_s)}  (min {min(mem_s)*1000:.1f} ms)")
            print(f"  GET /metrics                   median {ms(scrape_s)}  (min {min(scrape_s)*1000:.1f} ms)")
            print(f"  scan, as serve measures it     median {ms(scan_s)}")
    finally:
        if server:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=30)
        for k in kids:
            k.kill()
        for k in kids:
            k.wait()


if __name__ == "__main__":
    main()
