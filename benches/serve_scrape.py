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

With --half-open [ROUNDS] [HELD]: an authorised HTTPS scrape (TLS, basic
auth, the web config of docs/fleet.md) of tally serve and of Debian's
prometheus-node-exporter (installed if missing) with the same web config,
round after round, interleaved: each server with no other connection,
then with HELD (100) half-open connections held open (half TCP connections
that send nothing, half TLS handshakes that stall after 6 bytes), opened
afresh each round. tally's scan is cached (min_interval = 3600), so the
figure is the server's own: handshake, bcrypt (cached), answer. Prints
the medians, the ratio held/none per server, and tally against
node_exporter.
  python3 benches/serve_scrape.py --half-open [ROUNDS] [HELD]
"""
import os
import base64
import re
import shutil
import signal
import ssl
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import warnings

with warnings.catch_warnings():
    # Deprecated, but the one bcrypt hasher Python ships.
    warnings.simplefilter("ignore", DeprecationWarning)
    import crypt

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import build_tally, need  # noqa: E402

HALF_OPEN = len(sys.argv) > 1 and sys.argv[1] == "--half-open"
ARGS = sys.argv[2:] if HALF_OPEN else sys.argv[1:]
ROUNDS = int(ARGS[0]) if len(ARGS) > 0 else 15
EXTRA = int(ARGS[1]) if len(ARGS) > 1 and not HALF_OPEN else 650
HELD = int(ARGS[1]) if len(ARGS) > 1 and HALF_OPEN else 100


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


def pki(d):
    """A CA and a certificate for 127.0.0.1 signed by it, by openssl."""
    def ssl_cmd(*args):
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)
    ssl_cmd("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
            "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "2", "-subj", "/CN=bench CA")
    ssl_cmd("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", "tls.key", "-out", "tls.csr", "-subj", "/CN=127.0.0.1")
    with open(os.path.join(d, "san.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\n")
    ssl_cmd("x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "tls.crt", "-days", "2", "-extfile", "san.ext")


def hold(port, n):
    """n connections to port: half plain TCP saying nothing, half a TLS
    record header promising a ClientHello that never comes."""
    socks = []
    for i in range(n):
        s = socket.create_connection(("127.0.0.1", port))
        if i % 2:
            s.sendall(bytes([0x16, 0x03, 0x01, 0x02, 0x00, 0x01]))
        socks.append(s)
    time.sleep(0.3)
    return socks


def https_scrape(port, ctx, auth):
    req = urllib.request.Request(f"https://127.0.0.1:{port}/metrics",
                                 headers={"Authorization": auth})
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=60, context=ctx) as r:
        body = r.read()
        assert r.status == 200 and body, "not an authorised scrape"
    return time.perf_counter() - t0


def half_open():
    tally = build_tally()
    need("prometheus-node-exporter", "prometheus-node-exporter")
    node = shutil.which("prometheus-node-exporter")
    servers = []
    with tempfile.TemporaryDirectory() as d:
        pki(d)
        hashed = crypt.crypt("s3cret", crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1 << 10))
        web = os.path.join(d, "web.yml")
        with open(web, "w") as f:
            f.write("tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\n"
                    f"basic_auth_users:\n  prometheus: '{hashed}'\n")
        cfg = os.path.join(d, "serve.toml")
        with open(cfg, "w") as f:
            f.write("min_interval = 3600\n")
        ctx = ssl.create_default_context(cafile=os.path.join(d, "ca.crt"))
        auth = "Basic " + base64.b64encode(b"prometheus:s3cret").decode()
        try:
            for name, cmd in [("tally serve", [tally, "serve", "--config", cfg, "--web-config", web,
                                               "--listen"]),
                              ("node_exporter", [node, f"--web.config.file={web}",
                                                 "--web.listen-address"])]:
                port = free_port()
                addr = f"127.0.0.1:{port}"
                argv = cmd + [addr] if name == "tally serve" else cmd[:-1] + [f"{cmd[-1]}={addr}"]
                p = subprocess.Popen(argv, stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
                servers.append((name, port, p))
            for name, port, _ in servers:
                for _ in range(200):
                    try:
                        https_scrape(port, ctx, auth)
                        break
                    except OSError:
                        time.sleep(0.05)
            times = {(name, held): [] for name, _, _ in servers for held in (0, HELD)}
            for _ in range(ROUNDS):
                for name, port, _ in servers:
                    times[(name, 0)].append(https_scrape(port, ctx, auth))
                    socks = hold(port, HELD)
                    try:
                        times[(name, HELD)].append(https_scrape(port, ctx, auth))
                    finally:
                        for s in socks:
                            s.close()
                    # The server's threads for them end before the next
                    # "alone" scrape.
                    time.sleep(0.5)
            med = {k: statistics.median(v) for k, v in times.items()}
            print(f"authorised HTTPS scrape (TLS + basic auth), {ROUNDS} rounds, interleaved, "
                  f"{os.cpu_count()} cores; medians (max)")
            print(f"  {'server':<15} {'alone':>16} {f'{HELD} half-open':>18} {'held/alone':>11}")
            for name, _, _ in servers:
                a, h = med[(name, 0)], med[(name, HELD)]
                print(f"  {name:<15} {a * 1000:9.2f} ms ({max(times[(name, 0)]) * 1000:.0f})"
                      f" {h * 1000:9.2f} ms ({max(times[(name, HELD)]) * 1000:.0f})"
                      f" {h / a:10.2f}x")
            t, n = med[("tally serve", HELD)], med[("node_exporter", HELD)]
            print(f"  with {HELD} half-open: tally / node_exporter = {t / n:.2f}x "
                  "(each scrapes its own metrics: tally's cached, node_exporter's fresh)")
        finally:
            for _, _, p in servers:
                p.send_signal(signal.SIGTERM)
                p.wait(timeout=30)


if __name__ == "__main__":
    half_open() if HALF_OPEN else main()
