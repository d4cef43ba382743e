#!/usr/bin/env python3
"""`tally bench syscall` against an independent single-threaded C loop doing
the same system calls, interleaved in one run.

The C program (compiled here with `cc -O2`) does what each figure of
`tally bench syscall` defines: raw `syscall(SYS_getpid)`, `read` of 1 byte
of /dev/zero, `write` of 1 byte to /dev/null, `statx` of /dev/null,
`openat`+`close` of /dev/null. Like tally's harness it times batches of
about 1 ms with CLOCK_MONOTONIC for a fixed budget per figure and prints
the median ns per call. Both run pinned to the CPU tally pins itself to
(the last allowed one) at the same priority (`nice -n -20`). Each round
runs tally once and the C loop once, alternating which goes first; the
table gives the median over rounds of each side and the ratio tally / C.
A ratio well above 1 means tally measures its own overhead (e.g. a
second thread in its process, which makes every descriptor lookup take
the shared-table path).

With --wait-idle each round starts only once the machine is idle (under
5% of all CPUs busy over 3 s; see benches/common.py).

Usage: benches/syscall_vs_c.py [--rounds N] [--wait-idle] [--tally PATH]
Not run by CI.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True

C_SOURCE = r"""
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static int zero_fd, null_fd;
static volatile long sink;

static void op_getpid(void) { sink = syscall(SYS_getpid); }
static void op_read(void) {
    char b;
    if (read(zero_fd, &b, 1) != 1) abort();
}
static void op_write(void) {
    char b = 1;
    if (write(null_fd, &b, 1) != 1) abort();
}
static void op_stat(void) {
    struct statx st;
    if (statx(AT_FDCWD, "/dev/null", AT_STATX_SYNC_AS_STAT, STATX_ALL, &st) != 0) abort();
    sink = st.stx_mode;
}
static void op_open_close(void) {
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0) abort();
    close(fd);
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median ns per call of `op` over samples of about 1 ms for `budget_ns`. */
static double measure(void (*op)(void), double budget_ns) {
    long iters = 1;
    for (;;) {
        double t = now_ns();
        for (long i = 0; i < iters; i++) op();
        if (now_ns() - t >= 1e6) break;
        iters *= 2;
    }
    static double v[100000];
    int n = 0;
    double start = now_ns();
    while (n < 100000 && (n < 5 || now_ns() - start < budget_ns)) {
        double t = now_ns();
        for (long i = 0; i < iters; i++) op();
        v[n++] = (now_ns() - t) / iters;
    }
    qsort(v, n, sizeof v[0], cmp);
    return v[n / 2];
}

int main(int argc, char **argv) {
    double budget_ns = (argc > 1 ? atof(argv[1]) : 50) * 1e6;
    zero_fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
    null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (zero_fd < 0 || null_fd < 0) return 1;
    printf("syscall.getpid %.2f\n", measure(op_getpid, budget_ns));
    printf("syscall.read_dev_zero %.2f\n", measure(op_read, budget_ns));
    printf("syscall.write_dev_null %.2f\n", measure(op_write, budget_ns));
    printf("syscall.stat %.2f\n", measure(op_stat, budget_ns));
    printf("syscall.open_close %.2f\n", measure(op_open_close, budget_ns));
    return 0;
}
"""

LABELS = {
    "syscall.getpid": "getpid (raw syscall)",
    "syscall.read_dev_zero": "read 1 byte of /dev/zero",
    "syscall.write_dev_null": "write 1 byte to /dev/null",
    "syscall.stat": "statx /dev/null",
    "syscall.open_close": "open+close /dev/null",
}


def sh(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def last_allowed_cpu():
    return max(os.sched_getaffinity(0))


def tally_round(tally):
    r = json.loads(sh([tally, "bench", "syscall", "--quick", "--format", "json"]))
    figs = {}
    for b in r["benchmarks"]:
        for f in b["figures"]:
            if "ns" in f and not f.get("implausible"):
                figs[f["id"]] = f["ns"]["median"]
    threads = [b.get("threads_at_start") for b in r["benchmarks"]]
    return figs, threads


def c_round(binary, cpu):
    out = sh(["nice", "-n", "-20", "taskset", "-c", str(cpu), binary, "50"])
    return {k: float(v) for k, v in (line.split() for line in out.splitlines())}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--tally", default=None, help="tally binary (default: build it)")
    ap.add_argument("--wait-idle", action="store_true",
                    help="start each round only on an idle machine")
    a = ap.parse_args()
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import common
    if a.tally is None:
        a.tally = common.build_tally()
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        sys.exit("no C compiler (apt-get install gcc)")
    work = tempfile.mkdtemp(prefix="tally-syscall-vs-c-")
    src, binary = os.path.join(work, "loop.c"), os.path.join(work, "loop")
    with open(src, "w") as f:
        f.write(C_SOURCE)
    subprocess.run([cc, "-O2", "-o", binary, src], check=True)
    cpu = last_allowed_cpu()
    tally_runs, c_runs, threads = [], [], set()
    for i in range(a.rounds):
        if a.wait_idle:
            common.wait_idle()
        order = [("tally", None), ("c", None)] if i % 2 == 0 else [("c", None), ("tally", None)]
        for side, _ in order:
            if side == "tally":
                figs, th = tally_round(a.tally)
                tally_runs.append(figs)
                threads.update(t for t in th if t is not None)
            else:
                c_runs.append(c_round(binary, cpu))
    shutil.rmtree(work, ignore_errors=True)
    with open("/proc/cpuinfo") as f:
        model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "?")
    print(f"machine: {model}, {os.cpu_count()} CPUs, kernel {os.uname().release}; "
          f"{a.rounds} interleaved rounds, both pinned to CPU {cpu} at nice -20, medians")
    if threads:
        print(f"threads of tally's process at the start of the benchmark: "
              f"{', '.join(str(t) for t in sorted(threads))}")
    print("| figure | tally (ns) | C loop (ns) | tally / C | per-round ratios |")
    print("|---|---:|---:|---:|---|")
    for fid, label in LABELS.items():
        t = [r[fid] for r in tally_runs if fid in r]
        c = [r[fid] for r in c_runs if fid in r]
        if not t or not c:
            continue
        per_round = [x / y for x, y in zip(t, c)]
        print(f"| {label} | {statistics.median(t):,.1f} | {statistics.median(c):,.1f} | "
              f"{statistics.median(t) / statistics.median(c):.2f} | "
              f"{' '.join(f'{r:.2f}' for r in per_round)} |")


if __name__ == "__main__":
    main()
