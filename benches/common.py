"""Shared by the benchmark scripts: build tally and find the binary."""

import json
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build_tally():
    """Builds the release binary and returns its path, wherever the
    project's cargo configuration puts it; with TALLY_BIN=PATH in the
    environment, returns PATH and builds nothing (to measure that binary)."""
    if os.environ.get("TALLY_BIN"):
        return os.environ["TALLY_BIN"]
    out = subprocess.run(["cargo", "build", "--release", "--bin", "tally",
                          "--message-format=json-render-diagnostics"],
                         cwd=ROOT, check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        msg = json.loads(line)
        if msg.get("reason") == "compiler-artifact" and msg.get("executable") \
                and msg["target"]["name"] == "tally":
            return msg["executable"]
    sys.exit("cargo built no tally executable")


RELEASE = os.path.join(ROOT, "target", "x86_64-unknown-linux-musl", "release", "tally")


def installed_copy(path, directory, name="tally"):
    """A copy of the binary at `path` in `directory`, as `install` or
    `cargo install` would put it, for timing a process's start-up. The
    linker writes its output through a shared mapping, which leaves the
    file in the page cache in single pages; a copied file is read back in
    large folios, which each start-up faults in fewer at a time. Measured
    here: the same `tally run -- /bin/true` took about 100 µs longer from
    the linker's output than from a copy of it, so two builds are only
    comparable as copies made the same way."""
    dest = os.path.join(directory, name)
    shutil.copyfile(path, dest)
    os.chmod(dest, 0o755)
    return dest


def tally_binary():
    """The binary to measure, built by nobody here: $TALLY (or
    $TALLY_BIN) when set, else the release binary where the project's
    cargo configuration puts it; exits with the fix when there is none."""
    path = os.environ.get("TALLY") or os.environ.get("TALLY_BIN") or RELEASE
    if not os.access(path, os.X_OK):
        sys.exit(f"no tally binary at {path}: build it (cargo build --release) "
                 f"or give one with TALLY=PATH")
    return path


def _cpu_ticks():
    with open("/proc/stat") as f:
        n = [int(w) for w in f.readline().split()[1:]]
    n += [0] * (8 - len(n))
    return n[0] + n[1] + n[2] + n[5] + n[6], sum(n[:8])


def busy_percent(seconds=3.0):
    """Share of all CPUs' time that was busy over the next `seconds`."""
    b0, t0 = _cpu_ticks()
    time.sleep(seconds)
    b1, t1 = _cpu_ticks()
    return 100.0 * (b1 - b0) / max(t1 - t0, 1)


def wait_idle(limit_percent=5.0, patience_s=1800, quiet_s=3.0):
    """Waits until the machine is idle (busy below `limit_percent` of all
    CPUs over `quiet_s` seconds), at most `patience_s`; returns the last
    busy share measured. On a shared machine, other people's builds would
    otherwise be measured as the benchmarks' own variation."""
    start = time.monotonic()
    while True:
        busy = busy_percent(quiet_s)
        if busy <= limit_percent or time.monotonic() - start > patience_s:
            return busy
        print(f"waiting for an idle machine: {busy:.0f}% busy", file=sys.stderr)


def need(tool, package):
    """Installs Debian `package` when `tool` is not on PATH (or, for a
    path, does not exist)."""
    if shutil.which(tool) or (os.sep in tool and os.path.exists(tool)):
        return
    print(f"installing {package} ...", file=sys.stderr)
    subprocess.run(["apt-get", "update", "-qq"], check=False)
    subprocess.run(["apt-get", "install", "-y", "-qq", package], check=True,
                   stdout=subprocess.DEVNULL)


if __name__ == "__main__":
    print(build_tally())


def print_table(headers, rows):
    """Prints `rows` (tuples of cells) under `headers` as a Markdown table."""
    print("| " + " | ".join(headers) + " |")
    print("|" + "---|" * len(headers))
    for r in rows:
        print("| " + " | ".join(r) + " |")
