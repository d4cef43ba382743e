#!/usr/bin/env bash
# Installs what the test suite uses beyond a Rust toolchain, so that a run
# on a fresh Debian machine skips nothing the machine could do:
#   util-linux (setpriv, unshare, prlimit, mount), bsdutils (script),
#   libcap2-bin (setcap), python3, gcc and libc6-dev (static test programs),
#   procps, strace (system-call counts), hyperfine (its JSON export, read
#   beside tally's), tmux (reports at 80 and 120 columns), valgrind
#   (`--count=sim`: Cachegrind counts the instructions), and Debian's
#   prometheus (the server and promtool).
# tests/release.sh runs it under CI (CI=true); elsewhere run it yourself.
# Needs root and apt-get; without them it says what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(util-linux bsdutils libcap2-bin python3 gcc libc6-dev procps coreutils strace hyperfine tmux valgrind)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
        echo "install-deps: not root or no apt-get; install these yourself: ${missing[*]}" >&2
        exit 1
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
bash tests/install-prometheus.sh
