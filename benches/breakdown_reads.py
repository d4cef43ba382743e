#!/usr/bin/env python3
"""What each read `tally run`'s breakdown makes costs the kernel here, in
C, so that its share of `run`'s added wall (benches/measure_cost.py, part
2) can be put on the reads themselves rather than on tally's code.

One C program (compiled here with `cc -O2`) times, REPS times each and
prints the mean per call: a bare system call (`getppid`), then
`open`+`read` to the end+`close` of each file a single `tally run` reads
for its breakdown (/proc/stat twice, /proc/self/cgroup once, the
command's /proc/PID/schedstat, the group's cpu.pressure, io.pressure,
memory.pressure, cgroup.events and cgroup.stat), the `statfs` of the
cgroup v2 mount (twice), the listing of its top directory (the sweep of
groups left by a tally that was killed), and the group's `mkdir` +
`rmdir`. The table gives each, the number of times one run makes it,
and their sum: the floor of the breakdown's reads, which no code of
tally's can go below while it reads these files.

Needs root and cgroup v2 (a scratch group is made under the v2 mount and
removed). Usage: benches/breakdown_reads.py [REPS] (2000). Not run by CI.
"""

import os
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import print_table  # noqa: E402

C_SOURCE = r"""
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

static char buf[65536];
static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}
static int whole(const char *p) {
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    while (read(fd, buf, sizeof buf) > 0) {}
    close(fd);
    return 0;
}
static void listing(const char *p) {
    DIR *d = opendir(p);
    if (!d) return;
    while (readdir(d)) {}
    closedir(d);
}
#define TIME(name, stmt) do { double a = now(); for (int i = 0; i < n; i++) { stmt; } \
    printf("%s\t%.2f\n", name, (now() - a) / n / 1e3); } while (0)

int main(int argc, char **argv) {
    int n = atoi(argv[1]);
    const char *mount = argv[2], *group = argv[3];
    char f[4096], scratch[4096];
    struct statfs sf;
    snprintf(scratch, sizeof scratch, "%s-mkdir", group);
    TIME("getppid", getppid());
    TIME("/proc/stat", whole("/proc/stat"));
    TIME("/proc/self/cgroup", whole("/proc/self/cgroup"));
    TIME("/proc/PID/schedstat", whole("/proc/self/schedstat"));
    snprintf(f, sizeof f, "%s/cpu.pressure", group);
    TIME("cpu.pressure", whole(f));
    snprintf(f, sizeof f, "%s/io.pressure", group);
    TIME("io.pressure", whole(f));
    snprintf(f, sizeof f, "%s/memory.pressure", group);
    TIME("memory.pressure", whole(f));
    snprintf(f, sizeof f, "%s/cgroup.events", group);
    TIME("cgroup.events", whole(f));
    snprintf(f, sizeof f, "%s/cgroup.stat", group);
    TIME("cgroup.stat", whole(f));
    TIME("statfs of the v2 mount", statfs(mount, &sf));
    TIME("listing of the v2 mount", listing(mount));
    n = n / 5 + 1;
    TIME("mkdir + rmdir of a group", { mkdir(scratch, 0755); rmdir(scratch); });
    return 0;
}
"""

# How many times one `tally run` makes each (src/run/group.rs, why.rs,
# spawner.rs): /proc/stat before and after, the sweep and mount lookup
# once, each group file once after the run.
PER_RUN = {
    "getppid": 0,
    "/proc/stat": 2,
    "/proc/self/cgroup": 1,
    "/proc/PID/schedstat": 1,
    "cpu.pressure": 1,
    "io.pressure": 1,
    "memory.pressure": 1,
    "cgroup.events": 1,
    "cgroup.stat": 1,
    "statfs of the v2 mount": 2,
    "listing of the v2 mount": 1,
    "mkdir + rmdir of a group": 1,
}


def v2_mount():
    with open("/proc/self/mounts") as f:
        for line in f:
            parts = line.split()
            if len(parts) > 2 and parts[2] == "cgroup2":
                return parts[1]
    return None


def main():
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    if os.geteuid() != 0:
        sys.exit("breakdown_reads: needs root (a scratch cgroup is made)")
    mount = v2_mount()
    if mount is None:
        sys.exit("breakdown_reads: no cgroup v2 mount")
    group = os.path.join(mount, f"tally-bench-reads-{os.getpid()}")
    with tempfile.TemporaryDirectory() as d:
        src, exe = os.path.join(d, "reads.c"), os.path.join(d, "reads")
        with open(src, "w") as f:
            f.write(C_SOURCE)
        subprocess.run(["cc", "-O2", "-o", exe, src], check=True)
        os.mkdir(group)
        try:
            out = subprocess.run([exe, str(reps), mount, group], check=True,
                                 capture_output=True, text=True).stdout
        finally:
            for g in (group + "-mkdir", group):
                try:
                    os.rmdir(g)
                except OSError:
                    pass
    rows, total = [], 0.0
    for line in out.splitlines():
        name, us = line.split("\t")
        times = PER_RUN.get(name, 0)
        total += times * float(us)
        rows.append([name, f"{float(us):.2f} µs", str(times), f"{times * float(us):.1f} µs"])
    rows.append(["all of one run's", "", "", f"{total:.1f} µs"])
    print(f"{os.uname().nodename} (kernel {os.uname().release}); {reps} calls each, mean")
    print()
    print_table(["call", "each", "per run", "per run, µs"], rows)


if __name__ == "__main__":
    main()
