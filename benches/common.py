"""Shared by the benchmark scripts: build tally and find the binary."""

import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build_tally():
    """Builds the release binary and returns its path, wherever the
    project's cargo configuration puts it."""
    out = subprocess.run(["cargo", "build", "--release", "--bin", "tally",
                          "--message-format=json-render-diagnostics"],
                         cwd=ROOT, check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        msg = json.loads(line)
        if msg.get("reason") == "compiler-artifact" and msg.get("executable") \
                and msg["target"]["name"] == "tally":
            return msg["executable"]
    sys.exit("cargo built no tally executable")


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
