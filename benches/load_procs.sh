#!/usr/bin/env bash
# tally load --procs on a 1 GiB file: four processes loading it at once
# with read and with mmap (Σ PSS side by side), then the same under a
# memory limit between one copy of the file and two, then the sweep over
# N = 1, 2, 4, 8 with its plot. Usage: benches/load_procs.sh [DIR] [LIMIT]
# (LIMIT default 1536M). --mem-limit needs root or a delegated cgroup;
# without one the report says "unavailable" and why.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-/tmp}
LIMIT=${2:-1536M}
TALLY=${TALLY:-$(python3 "$(dirname "$0")/common.py")}
[ -x "$TALLY" ] || { echo "build first: cargo build --release" >&2; exit 1; }
WORK=$(mktemp -d "$DIR/tally-load-procs.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
head -c $((1 << 30)) /dev/urandom > "$WORK/weights.bin"
sync
FS=$(findmnt -no FSTYPE -T "$WORK")
echo "\$ tally load --procs 4 weights.bin          # 1 GiB on $FS"
"$TALLY" load --procs 4 "$WORK/weights.bin"
echo
echo "\$ tally load --procs 4 --cold --mem-limit $LIMIT weights.bin"
"$TALLY" load --procs 4 --cold --mem-limit "$LIMIT" "$WORK/weights.bin"
echo
echo "\$ tally load --procs-sweep --warm --html $DIR/tally-load-procs.html weights.bin"
"$TALLY" load --procs-sweep --warm --html "$DIR/tally-load-procs.html" "$WORK/weights.bin"
echo
echo "plot: $DIR/tally-load-procs.html"
