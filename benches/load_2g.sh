#!/usr/bin/env bash
# tally load on a 2 GiB file: every method, cold and warm, medians of N
# runs (default 3). Usage: benches/load_2g.sh [DIR] [RUNS]
# Run from the repository; it builds tally with `cargo build --release`.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-/tmp}
RUNS=${2:-3}
TALLY=${TALLY:-$(python3 "$(dirname "$0")/common.py")}
[ -x "$TALLY" ] || { echo "build first: cargo build --release" >&2; exit 1; }
WORK=$(mktemp -d "$DIR/tally-load.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
head -c $((2 << 30)) /dev/urandom > "$WORK/weights.bin"
sync
echo "command: tally load -n $RUNS --html tally-load.html weights.bin (2 GiB on $(findmnt -no FSTYPE -T "$WORK"))"
echo
"$TALLY" load -n "$RUNS" --html "$DIR/tally-load.html" "$WORK/weights.bin"
echo
echo "plot: $DIR/tally-load.html"
