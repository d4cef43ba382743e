#!/usr/bin/env bash
# What building tally needs beyond a Rust toolchain: the standard library
# of its target (x86_64-unknown-linux-musl, see .cargo/config.toml), which
# rustup adds, and musl's C compiler wrapper (`musl-gcc`, Debian's
# musl-tools), which builds the C of its dependencies (SQLite, ring).
# Installs what is missing (apt-get as root, or through sudo); says what
# to install where it cannot. Run by tests/release.sh and .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
target=x86_64-unknown-linux-musl
if command -v rustup >/dev/null 2>&1 && ! rustup target list --installed | grep -qx "$target"; then
    rustup target add "$target"
fi
if ! command -v musl-gcc >/dev/null 2>&1; then
    sudo=
    if [ "$(id -u)" != 0 ]; then
        if command -v sudo >/dev/null 2>&1; then
            sudo=sudo
        else
            echo "link/setup.sh: musl-gcc is missing: install Debian's musl-tools (apt-get install musl-tools) as root" >&2
            exit 1
        fi
    fi
    $sudo apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq musl-tools >/dev/null
fi
