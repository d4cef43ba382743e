#!/usr/bin/env python3
"""What the breakdown of the wall time costs `tally run`, against C floors.

Runs, interleaved in one process and in shuffled order each round:

- bare /bin/true;
- the C floor: a small C program that forks, execs /bin/true and reaps it
  with wait4 (what any measurer of a command must do);
- the C floor of the breakdown: the same, plus what the breakdown reads
  and makes, done the cheapest way C can: /proc/stat's first line before
  and after, a cgroup v2 group made (mkdir) and the child cloned into it
  (clone3 with CLONE_INTO_CGROUP; joining by cgroup.procs where the
  kernel refuses that), the
  child's /proc/PID/schedstat read before it is reaped (waitid WNOWAIT),
  the group's cpu, io and memory pressure, the group removed (rmdir);
- `tally run -- /bin/true` (with the breakdown, as always);
- `tally run --no-why -- /bin/true`, without the breakdown;
- the peer: GNU time, `/usr/bin/time /bin/true`.

Timing each spawn-to-reap with a monotonic clock, it prints medians and
what each adds over bare /bin/true, then the breakdown's cost: tally with
it less tally without it, beside the C floor's with less without (what the
kernel work costs, whoever does it), and the target: tally's added time
with the breakdown at most 5% above its added time without it.

Usage: python3 benches/why_overhead.py [ROUNDS]   (default 500)
TALLY_BIN=PATH measures that binary instead of building one;
TALLY_BEFORE=PATH adds a row for another build (before a change), timed
in the same interleaved rounds.
Installs GNU time with apt-get when it is missing. Run it as root for the
cgroup parts (as another user, where no group can be made, both tally and
the C floor skip them, and the table says so).

The results, and why the target is not met with a cgroup per run, are in
docs/run.md (Overhead: What the breakdown costs).
"""

import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import build_tally, installed_copy, need  # noqa: E402

C_SOURCE = r"""
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sched.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static char buf[4096];

/* Reads the start of PATH (at most one buffer): what tally reads of it. */
static long read_start(const char *path, size_t most) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    long n = read(fd, buf, most < sizeof buf ? most : sizeof buf);
    close(fd);
    return n;
}

/* The cgroup v2 group this process is in, as a directory. */
static int own_group(char *out, size_t len) {
    FILE *f = fopen("/proc/self/cgroup", "r");
    char line[512];
    if (!f) return -1;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "0::", 3) == 0) {
            line[strcspn(line, "\n")] = 0;
            const char *mount = access("/sys/fs/cgroup/unified/cgroup.procs", F_OK) == 0
                ? "/sys/fs/cgroup/unified" : "/sys/fs/cgroup";
            snprintf(out, len, "%s%s", mount, line + 3);
            fclose(f);
            return 0;
        }
    }
    fclose(f);
    return -1;
}

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    int why = strcmp(argv[1], "why") == 0;
    char group[800] = "", path[900];
    int procs = -1, dir = -1;
    if (why) {
        read_start("/proc/stat", 256);
        if (own_group(path, sizeof path) == 0) {
            snprintf(group, sizeof group, "%s/floor-%d", path, getpid());
            if (mkdir(group, 0755) == 0) {
                snprintf(path, sizeof path, "%s/cgroup.procs", group);
                procs = open(path, O_WRONLY | O_CLOEXEC);
                dir = open(group, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            } else {
                group[0] = 0;
            }
        }
    }
    pid_t pid = -1;
    if (dir >= 0) {
        /* Cloned straight into the group (Linux 5.7): no migration. */
        struct clone_args args = {0};
        args.flags = CLONE_INTO_CGROUP;
        args.exit_signal = SIGCHLD;
        args.cgroup = (unsigned long long)dir;
        pid = syscall(SYS_clone3, &args, sizeof args);
        if (pid == 0) {
            execv(argv[2], argv + 2);
            _exit(127);
        }
    }
    if (pid < 0) {
        pid = fork();
        if (pid == 0) {
            if (procs >= 0 && write(procs, "0", 1) != 1) _exit(126);
            execv(argv[2], argv + 2);
            _exit(127);
        }
    }
    if (procs >= 0) close(procs);
    if (dir >= 0) close(dir);
    if (why) {
        siginfo_t info;
        waitid(P_PID, pid, &info, WEXITED | WNOWAIT);
        snprintf(path, sizeof path, "/proc/%d/schedstat", pid);
        read_start(path, 128);
        if (group[0]) {
            static const char *const kinds[] = {"cpu", "io", "memory"};
            for (int i = 0; i < 3; i++) {
                snprintf(path, sizeof path, "%s/%s.pressure", group, kinds[i]);
                read_start(path, 256);
            }
        }
        read_start("/proc/stat", 256);
    }
    int status;
    struct rusage ru;
    wait4(pid, &status, 0, &ru);
    if (group[0]) rmdir(group);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
"""


def spawn_wait_ns(argv, env, devnull):
    t0 = time.perf_counter_ns()
    pid = os.posix_spawn(argv[0], argv, env,
                         file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1),
                                       (os.POSIX_SPAWN_DUP2, devnull, 2)])
    os.waitpid(pid, 0)
    return time.perf_counter_ns() - t0


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    need("/usr/bin/time", "time")
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        sys.exit("no C compiler (apt-get install gcc)")
    tally = os.environ.get("TALLY_BIN") or build_tally()
    true = "/bin/true" if os.path.exists("/bin/true") else shutil.which("true")
    work = tempfile.mkdtemp(prefix="tally-why-overhead-")
    try:
        # As installed, not as the linker left it (see `installed_copy`).
        tally = installed_copy(tally, work)
        src, floor = os.path.join(work, "floor.c"), os.path.join(work, "floor")
        with open(src, "w") as f:
            f.write(C_SOURCE)
        subprocess.run([cc, "-O2", "-o", floor, src], check=True)
        measure(tally, floor, true, rounds)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def measure(tally, floor, true, rounds):
    env = dict(os.environ)
    env.pop("TALLY_MEASURE_WITHOUT_BREAKDOWN", None)
    variants = {
        "/bin/true": ([true], env),
        "C floor: fork, exec, wait4": ([floor, "plain", true], env),
        "C floor with the breakdown's reads and group": ([floor, "why", true], env),
        "tally run -- /bin/true": ([tally, "run", "--", true], env),
        "tally run -- /bin/true, breakdown off": ([tally, "run", "--no-why", "--", true], env),
        "/usr/bin/time /bin/true": (["/usr/bin/time", true], env),
    }
    before = os.environ.get("TALLY_BEFORE")
    if before:
        variants["TALLY_BEFORE run -- /bin/true"] = ([before, "run", "--", true], env)
    devnull = os.open(os.devnull, os.O_WRONLY)
    samples = {name: [] for name in variants}
    for _ in range(20):  # warm the page cache and the dynamic loader
        for argv, e in variants.values():
            spawn_wait_ns(argv, e, devnull)
    names = list(variants)
    for _ in range(rounds):
        random.shuffle(names)
        for name in names:
            argv, e = variants[name]
            samples[name].append(spawn_wait_ns(argv, e, devnull))
    med = {n: statistics.median(s) / 1000 for n, s in samples.items()}
    base = med["/bin/true"]
    print(f"{rounds} interleaved rounds on {os.uname().nodename} "
          f"({os.cpu_count()} CPUs, kernel {os.uname().release}, euid {os.geteuid()})\n")
    print("| command | median µs | p10 µs | p90 µs | added over /bin/true µs |")
    print("|---|---:|---:|---:|---:|")
    for name in variants:
        s = sorted(samples[name])
        added = "" if name == "/bin/true" else f"{med[name] - base:,.0f}"
        print(f"| {name} | {med[name]:,.0f} | {s[len(s) // 10] / 1000:,.0f} | "
              f"{s[len(s) * 9 // 10] / 1000:,.0f} | {added} |")
    on = med["tally run -- /bin/true"] - base
    off_added = med["tally run -- /bin/true, breakdown off"] - base
    c_cost = med["C floor with the breakdown's reads and group"] - \
        med["C floor: fork, exec, wait4"]
    peer = med["/usr/bin/time /bin/true"] - base
    print(f"\nthe breakdown costs tally {on - off_added:+,.0f} µs "
          f"({100 * (on - off_added) / off_added:+.1f}% of the {off_added:,.0f} µs "
          f"tally adds without it; target at most +5%); "
          f"the same kernel work costs the C floor {c_cost:+,.0f} µs "
          f"(ratio tally/C {(on - off_added) / c_cost:.2f})" if off_added > 0 and c_cost > 0
          else f"\nthe breakdown costs tally {on - off_added:+,.0f} µs, "
          f"the C floor {c_cost:+,.0f} µs")
    if peer > 0:
        print(f"tally run adds {on:,.0f} µs with the breakdown, {off_added:,.0f} µs "
              f"without; GNU time adds {peer:,.0f} µs (ratios {on / peer:.2f}, "
              f"{off_added / peer:.2f})")


if __name__ == "__main__":
    main()
