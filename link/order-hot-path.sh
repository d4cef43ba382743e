#!/usr/bin/env bash
# Regenerates link/run-hot-path.order, the functions `tally run` executes on
# its way to fork and back (see build.rs): builds the release binary, runs
# a few everyday `tally run` invocations under callgrind, and keeps every
# function name it saw. Run it after changing that path; a stale list only
# costs page faults, never correctness (benches/run_overhead.py reports how
# much of the list the binary still matches).
#
# Names with a ThinLTO suffix (`.llvm.<hash of the module>`) or LLVM's
# counter for same-named local copies (`.5113`) are left out: they change
# whenever other code does (the release profile uses fat LTO, which has no
# `.llvm.` names).
#
# Usage: link/order-hot-path.sh        (installs valgrind with apt-get if missing)
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v valgrind >/dev/null; then
    apt-get update -qq && apt-get install -y -qq valgrind >/dev/null
fi
bin=$(python3 benches/common.py)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for args in "run -- /bin/true" \
            "run --format json -- /bin/true" \
            "run -n 3 --quiet-command -- /bin/true" \
            "run -- /nonexistent-command"; do
    # shellcheck disable=SC2086
    valgrind --tool=callgrind --demangle=no --callgrind-out-file="$tmp/cg.%p" \
        "$bin" $args >/dev/null 2>&1 || true
done
grep -ohE '^c?fn=\([0-9]+\) .*' "$tmp"/cg.* |
    sed -E -e 's/^c?fn=\([0-9]+\) //' -e "s/'[0-9]+$//" |
    grep -vE '^0x|^\(below main\)|<cycle|\.llvm\.|\.[0-9]+$' | LC_ALL=C sort -u > "$tmp/hot"
# glibc picks its string functions by CPU (ifunc), and valgrind's virtual
# CPU is not this one's: list every variant of each string function seen,
# after the rest, so whichever one a CPU picks is near the others.
nm --defined-only "$bin" | awk '{print $3}' | LC_ALL=C sort -u > "$tmp/all"
sed -nE 's/^(__[a-z]+)_(sse2|ssse3|sse4_?[12]|sse42|avx|avx2|evex|avx512)[a-z0-9_]*$/\1_/p' "$tmp/hot" |
    LC_ALL=C sort -u | while read -r base; do
        grep -E "^${base}(sse|ssse|avx|evex)" "$tmp/all" || true
    done | grep -vxFf "$tmp/hot" | LC_ALL=C sort -u > "$tmp/variants"
{
    echo "# Functions on the path of \`tally run\` (link/order-hot-path.sh); see build.rs."
    cat "$tmp/hot"
    echo "# Every CPU variant of the glibc string functions above."
    cat "$tmp/variants"
} > link/run-hot-path.order
echo "link/run-hot-path.order: $(wc -l < "$tmp/hot") functions, $(wc -l < "$tmp/variants") string-function variants"
