#!/usr/bin/env bash
# Prints the machine settings the test suite may touch, one per line, so
# tests/release.sh can check that the suite left them as it found them:
# the sysctls tests set (and those a careless test could), and any mount a
# test made (tests mount with the source name tally-test).
set -u
for key in fs.protected_symlinks fs.protected_hardlinks fs.protected_regular \
    fs.protected_fifos kernel.perf_event_paranoid vm.overcommit_memory \
    kernel.yama.ptrace_scope; do
    file=/proc/sys/${key//.//}
    if [ -r "$file" ]; then
        echo "$key = $(cat "$file")"
    fi
done
grep -c '^tally-test ' /proc/mounts | sed 's/^/mounts of tally-test = /'
# Device files a test writes to (`-o /dev/full`) stay devices.
for dev in /dev/null /dev/full /dev/zero; do
    echo "$dev = $(stat -c '%F %t:%T' "$dev" 2>&1)"
done
