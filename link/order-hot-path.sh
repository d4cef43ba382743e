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
# First in the list: the loop of `tally compare`'s spawner (src/run/spawner.rs),
# whose peak resident set is the 64 KiB windows of code it touches, so they
# must be few. valgrind cannot follow its clone(CLONE_VM|CLONE_VFORK), so its
# functions are named below as patterns, matched against the binary's symbols.
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
# after the rest, so whichever one a CPU picks is near the others (for a
# build linked against glibc; musl has one of each).
nm --defined-only "$bin" | awk '{print $3}' | LC_ALL=C sort -u > "$tmp/all"
sed -nE 's/^(__[a-z]+)_(sse2|ssse3|sse4_?[12]|sse42|avx|avx2|evex|avx512)[a-z0-9_]*$/\1_/p' "$tmp/hot" |
    LC_ALL=C sort -u | while read -r base; do
        grep -E "^${base}(sse|ssse|avx|evex)" "$tmp/all" || true
    done | { grep -vxFf "$tmp/hot" || true; } | LC_ALL=C sort -u > "$tmp/variants"
spawner_rust='spawner14serve_requests|process18shared_child_stack|process15default_signals|shed15shed_file_pages|Inbox4take|Inbox7compact|10UnixStream.*2io4Read4read|process17open_proc_file_of|Outbox4push|Outbox8announce|Outbox12acknowledged|process8send_now|spawner3run17h|spawner6finish|spawner12next_request|spawner6encode|3run11read_all_at|process8recv_now|process14spawn_prepared|process12clone_shared|process17clone_shared_into|process17shared_child_main|process10outcome_of|Spawned7outcome|process16wait_exited_keep|process5wait417h|process10usage_from|Forwarder6attach|Forwarder6detach|Forwarder7pending|13take_received|14take_escalated|shed8peak_kib|signals12restore_mask|3sys12monotonic_ns|FileExt7read_at|_ZN3std2io18default_read_exact|_ZN3std2io4Read10read_exact|_ZN3std2io5Write9write_all17h|units6micros|process6rewind|process17truncate_to_empty'
# The C library's functions the spawner calls, by their glibc and musl
# names (a name the binary lacks is skipped).
spawner_libc='__libc_recv recv __libc_send send __send __clock_gettime clock_gettime
    __pthread_sigmask pthread_sigmask sigfillset sigemptyset __clone_internal __clone3 __clone
    clone __libc_sigaction __sigaction sigaction __bsd_signal bsd_signal signal ssignal
    __sigprocmask sigprocmask __prctl prctl __getppid getppid __libc_open64 __open64 open64
    __open open execvp __execvpe __execvpex __execvpe_common __execve execve strchrnul
    __errno_location __waitid waitid __wait4 wait4 __libc_pread __pread64 pread64 pread
    __libc_read __read read __libc_write __write write __libc_close __close close
    __restore_rt __kill kill __getpid __setpgid setpgid
    getpid _exit strcmp strchr strlen memcpy memmove memset memcmp bcmp __madvise madvise __lseek64 lseek64 __lseek lseek
    __libc_lseek64 __ftruncate64 ftruncate64 __ftruncate ftruncate
    __syscall_cp __syscall_cp_c __syscall_cp_asm __syscall_ret __testcancel sccp
    __block_all_sigs __block_app_sigs __restore_sigs __libc_sigaction __restore
    recvfrom sendto __lseek __execvpe __madvise __clock_gettime cgt_init __vdsosym'
{
    # Every function of the spawner's module (what tests/shipped.rs
    # checks), then those it calls elsewhere.
    grep -E "^_ZN5tally3run7spawner|$spawner_rust" "$tmp/all" | grep -v drop_in_place
    # Its runs' results are dropped in the loop; other drop glue is not.
    grep -E 'drop_in_place.*(spawner\.\.Ended|process\.\.Spawned|process\.\.Joined)' "$tmp/all" || true
    for f in $spawner_libc; do
        grep -xF "$f" "$tmp/all" || true
        # every CPU variant of a string function
        grep -E "^__${f}_(sse|ssse|avx|evex)" "$tmp/all" || true
    done
} | awk '!seen[$0]++' > "$tmp/spawner"
{
    echo "# The loop of \`tally compare\`'s spawner, then the functions on the path of"
    echo "# \`tally run\` (link/order-hot-path.sh); see build.rs."
    # Rust's symbol names carry a hash that changes with the compiler and
    # the dependencies: the list holds for the compiler that made it.
    echo "# made with: $(rustc -V)"
    cat "$tmp/spawner"
    grep -vxFf "$tmp/spawner" "$tmp/hot" || true
    echo "# Every CPU variant of the glibc string functions above."
    grep -vxFf "$tmp/spawner" "$tmp/variants" || true
} > link/run-hot-path.order
echo "link/run-hot-path.order: $(wc -l < "$tmp/spawner") spawner functions, $(wc -l < "$tmp/hot") functions, $(wc -l < "$tmp/variants") string-function variants"
