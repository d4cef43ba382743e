#!/usr/bin/env bash
# The README's test command: builds the binary users get (the release
# profile, static, non-PIE, fat LTO, the hot-path layout of build.rs) and
# runs the whole test suite against it. Arguments go to `cargo test`
# (e.g. `bash tests/release.sh --test cp_cli`).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked
TALLY_BIN="$PWD/target/x86_64-unknown-linux-gnu/release/tally"
export TALLY_BIN
echo "tests/release.sh: testing $TALLY_BIN"
cargo test --locked "$@"
