#!/usr/bin/env bash
# Installs Debian's prometheus package (the server and promtool), which
# tests/serve.rs and tests/promtool.rs use; without it they skip. Needs
# root and apt-get; elsewhere it says so and does nothing.
set -euo pipefail
if [ -x /usr/bin/prometheus ] && command -v promtool >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "install-prometheus: not root or no apt-get; the Prometheus tests will skip" >&2
    exit 0
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
# The package may start its own server on :9090; the tests start theirs.
if command -v systemctl >/dev/null 2>&1; then
    systemctl disable --now prometheus >/dev/null 2>&1 || true
fi
