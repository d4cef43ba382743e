#!/usr/bin/env bash
# The README's test command: builds the binary users get (the release
# profile, static musl, non-PIE, fat LTO, the hot-path layout of build.rs) and
# runs the whole test suite against it with cargo-nextest, every test to
# the end (--no-fail-fast), then prints the summary: the wall time, the
# three slowest tests, `N passed, N failed, N skipped` and every skipped
# test with its reason (tests/summary.sh). Arguments go to
# `cargo nextest run` (e.g. `bash tests/release.sh --test cp_cli`).
#
# Under CI (CI=true) the tools the tests use are installed first
# (tests/install-deps.sh), so nothing is skipped for want of a tool; a
# test that finds one missing there fails instead.
# The suite must leave the machine as it found it: the settings of
# tests/machine-state.sh are compared before and after, and a difference
# fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)

if [ "${CI:-}" = true ]; then
    bash tests/install-deps.sh
fi
# The test runner, pinned; installed once into cargo's bin directory.
nextest_version=0.9.151
if ! cargo nextest --version 2>/dev/null | grep -q "^cargo-nextest $nextest_version\b"; then
    echo "tests/release.sh: installing cargo-nextest $nextest_version (once; a few minutes)"
    cargo install --locked --quiet "cargo-nextest@$nextest_version"
fi

# The target's standard library and musl's C compiler wrapper.
bash link/setup.sh
cargo build --release --locked
TALLY_BIN="$PWD/target/x86_64-unknown-linux-musl/release/tally"
export TALLY_BIN
echo "tests/release.sh: testing $TALLY_BIN"

junit=target/nextest/default/junit.xml
TALLY_TEST_SKIPS=$(mktemp "${TMPDIR:-/tmp}/tally-test-skips.XXXXXX")
export TALLY_TEST_SKIPS
trap 'rm -f "$TALLY_TEST_SKIPS"' EXIT
rm -f "$junit"
before=$(bash tests/machine-state.sh)
status=0
cargo nextest run --locked --no-fail-fast "$@" || status=$?
after=$(bash tests/machine-state.sh)

echo
summary=0
bash tests/summary.sh "$junit" "$TALLY_TEST_SKIPS" "$(($(date +%s) - start))" || summary=$?
if [ "$before" != "$after" ]; then
    echo "the suite changed the machine (before, then after):"
    diff <(echo "$before") <(echo "$after") || true
    exit 1
fi
if [ "$status" != 0 ] || [ "$summary" != 0 ]; then
    exit 1
fi
