#!/usr/bin/env python3
"""The cost of measuring: what tally's own work adds to the figures it
reports and to the time it takes, against hyperfine, GNU time and C floors,
interleaved in one run.

Three parts, each interleaved (the order shuffled in every repetition, so
a shared machine's drift hits every tool alike), medians and ratios:

1. Reported medians. For `/bin/true`, `/bin/echo` and a 2 ms command (a C
   loop of fixed work, calibrated here to about 2 ms), REPS repetitions of
   `tally compare -N -n RUNS CMD CMD`, `tally run -n RUNS CMD` and
   `hyperfine -N --runs RUNS CMD`, each tool's median of the command's
   wall time as it reports it; the ratio tally / hyperfine (target: at
   most 1.02). One more `compare` with the breakdown off shows what the
   breakdown adds.
2. `tally run -- /bin/true`'s added wall: BLOCKS blocks of RUNS rounds, each
   round spawning (posix_spawn, timed to the reap) bare `/bin/true`, `tally
   run -- /bin/true`, `/usr/bin/time /bin/true` and a C floor (posix_spawn
   + wait4 + one line on stderr) in shuffled order; each one's median less
   bare `/bin/true`'s. Targets: tally's added wall at most GNU time's in
   every block, and at most 1.15 times the C floor's. Two more C floors
   in the same rounds: fork + exec + wait4 (GNU time's way) and the same
   with the child cloned into a cgroup v2 group made and removed around
   it, as tally's breakdown does (root, cgroup v2): their difference is
   what the group costs the kernel, which no work of tally's can move.
3. `compare` per run: REPS repetitions of `tally compare -N -n 500 /bin/true
   /bin/true`, `hyperfine -N --runs 500 /bin/true /bin/true` and a C loop
   spawning /bin/true 1,000 times, each one's whole elapsed time over its
   1,000 runs. Target: tally at most hyperfine.

Usage: python3 benches/measure_cost.py [RUNS] [REPS] [BLOCKS]
(default 300 5 5). PARTS=1,2,3 (the default) picks the parts to run.
TALLY_BIN=PATH measures that binary instead of building
one; TALLY_BEFORE=PATH adds the same rows for another build (before a
change), timed in the same interleaved repetitions. The breakdown is
turned off with `--no-why`, or for a build without that option with the
variable it read before (TALLY_MEASURE_WITHOUT_BREAKDOWN=1).
Each build is timed as a copy in a temporary directory, as installed
(see `common.installed_copy`: the linker's own output starts about
100 µs slower). Installs hyperfine and GNU time with apt-get when they
are missing. The table is in docs/BENCHMARKS.md.
"""

import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import build_tally, installed_copy, need, print_table  # noqa: E402

C_SOURCE = r"""
#define _GNU_SOURCE
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* floor CMD...: the least a measurer must do: spawn, wait4, one line. */
static int floor_main(char **argv) {
    pid_t pid;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    if (posix_spawn(&pid, argv[0], NULL, NULL, argv, environ) != 0) return 127;
    int status;
    struct rusage ru;
    wait4(pid, &status, 0, &ru);
    clock_gettime(CLOCK_MONOTONIC, &b);
    fprintf(stderr, "%ld us wall, %ld us user, %ld us sys, %ld KiB peak\n",
            (b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000,
            ru.ru_utime.tv_sec * 1000000L + ru.ru_utime.tv_usec,
            ru.ru_stime.tv_sec * 1000000L + ru.ru_stime.tv_usec, ru.ru_maxrss);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

/* fork [GROUP] CMD...: GNU time's way, fork + exec + wait4 + one line;
   with GROUP (a cgroup v2 directory to make, then remove), the child is
   cloned straight into it (clone3, CLONE_INTO_CGROUP): what the
   breakdown's group costs the kernel, and no more. */
static int fork_main(const char *group, char **argv) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    int dir = -1;
    if (group) {
        if (mkdir(group, 0755) != 0) return 126;
        dir = open(group, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir < 0) return 126;
    }
    pid_t pid;
    if (group) {
        struct clone_args ca;
        memset(&ca, 0, sizeof ca);
        ca.flags = CLONE_INTO_CGROUP;
        ca.exit_signal = SIGCHLD;
        ca.cgroup = (unsigned long long)dir;
        pid = (pid_t)syscall(SYS_clone3, &ca, sizeof ca);
    } else {
        pid = fork();
    }
    if (pid < 0) return 126;
    if (pid == 0) {
        execve(argv[0], argv, environ);
        _exit(127);
    }
    int status;
    struct rusage ru;
    wait4(pid, &status, 0, &ru);
    clock_gettime(CLOCK_MONOTONIC, &b);
    fprintf(stderr, "%ld us wall, %ld KiB peak\n",
            (b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000, ru.ru_maxrss);
    if (group) {
        close(dir);
        rmdir(group);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

/* loop N CMD...: the C spawn loop, N runs of CMD, stdout to /dev/null. */
static int loop_main(long n, char **argv) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", 1, 0);
    for (long i = 0; i < n; i++) {
        pid_t pid;
        if (posix_spawn(&pid, argv[0], &fa, NULL, argv, environ) != 0) return 127;
        int status;
        struct rusage ru;
        wait4(pid, &status, 0, &ru);
    }
    return 0;
}

/* spin N: N rounds of fixed work (no clock read: the same work each run). */
static int spin_main(long n) {
    volatile unsigned long x = 1;
    for (long i = 0; i < n; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
    return (int)(x & 0);
}

int main(int argc, char **argv) {
    if (argc >= 3 && strcmp(argv[1], "floor") == 0) return floor_main(argv + 2);
    if (argc >= 4 && strcmp(argv[1], "loop") == 0) return loop_main(atol(argv[2]), argv + 3);
    if (argc == 3 && strcmp(argv[1], "spin") == 0) return spin_main(atol(argv[2]));
    if (argc >= 3 && strcmp(argv[1], "fork") == 0) return fork_main(NULL, argv + 2);
    if (argc >= 4 && strcmp(argv[1], "fork-into") == 0) return fork_main(argv[2], argv + 3);
    return 2;
}
"""


def spawn_wait_ns(argv, devnull):
    t0 = time.perf_counter_ns()
    pid = os.posix_spawn(argv[0], argv, os.environ,
                         file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1),
                                       (os.POSIX_SPAWN_DUP2, devnull, 2)])
    os.waitpid(pid, 0)
    return time.perf_counter_ns() - t0


class Tally:
    """A tally build, and how it turns the breakdown off."""

    def __init__(self, path, label):
        self.path, self.label = path, label
        probe = subprocess.run([path, "run", "--no-why", "--", "/bin/true"],
                               capture_output=True)
        self.off_option = probe.returncode == 0
        self.env_off = dict(os.environ, TALLY_MEASURE_WITHOUT_BREAKDOWN="1")

    def compare(self, runs, cmd, tmp, why=True):
        out = os.path.join(tmp, "t.json")
        argv = [self.path, "compare", "-N", "-n", str(runs), "--format", "json",
                "-o", out]
        env = None
        if not why:
            if self.off_option:
                argv.append("--no-why")
            else:
                env = self.env_off
        t0 = time.perf_counter_ns()
        subprocess.run(argv + [cmd, cmd], check=True, stdout=subprocess.DEVNULL,
                       env=env)
        elapsed = time.perf_counter_ns() - t0
        with open(out) as f:
            r = json.load(f)
        medians = [next(s["median"] for s in c["summary"] if s["figure"] == "wall_ns")
                   for c in r["commands"] if not c.get("from_baseline")]
        return statistics.median(medians) / 1e3, elapsed / 1e3 / (2 * runs)

    def run_n(self, runs, cmd, tmp):
        out = os.path.join(tmp, "r.json")
        subprocess.run([self.path, "run", "-n", str(runs), "--quiet-command",
                        "--format", "json", "-o", out, "--"] + cmd.split(),
                       check=True, stdout=subprocess.DEVNULL)
        with open(out) as f:
            r = json.load(f)
        return next(s["median"] for s in r["summary"] if s["figure"] == "wall_ns") / 1e3


def hyperfine(runs, cmds, tmp):
    out = os.path.join(tmp, "h.json")
    t0 = time.perf_counter_ns()
    subprocess.run(["hyperfine", "-N", "--runs", str(runs), "--style", "none",
                    "--export-json", out] + cmds, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    elapsed = time.perf_counter_ns() - t0
    with open(out) as f:
        r = json.load(f)
    medians = [x["median"] * 1e6 for x in r["results"]]
    return statistics.median(medians), elapsed / 1e3 / (len(cmds) * runs)


def calibrate_spin(c):
    """Rounds of the C loop that take about 2 ms here."""
    n = 200_000
    while True:
        t = min(spawn_wait_ns([c, "spin", str(n)], 1) for _ in range(5)) / 1e6
        if t > 1.0:
            return int(n * 2.0 / t)
        n *= 2


def spread(xs, fmt="{:,.0f}"):
    xs = sorted(xs)
    return f"{fmt.format(statistics.median(xs))} ({fmt.format(xs[0])}–{fmt.format(xs[-1])})"


def reported_medians(tallies, c, spin_n, runs, reps, tmp):
    """Part 1: rows of (what, tally, peer, ratio)."""
    rows = []
    commands = [("/bin/true", "/bin/true"), ("/bin/echo", "/bin/echo"),
                (f"a 2 ms command ({os.path.basename(c)} spin {spin_n:,})",
                 f"{c} spin {spin_n}")]
    for label, cmd in commands:
        got = {}
        for _ in range(reps):
            jobs = [("hyperfine", None)]
            for t in tallies:
                jobs += [(t.label + " compare", t), (t.label + " run", t)]
            jobs.append((tallies[0].label + " compare, breakdown off", tallies[0]))
            random.shuffle(jobs)
            for name, t in jobs:
                if t is None:
                    v = hyperfine(runs, [cmd], tmp)[0]
                elif name.endswith("breakdown off"):
                    v = t.compare(runs, cmd, tmp, why=False)[0]
                elif name.endswith("compare"):
                    v = t.compare(runs, cmd, tmp)[0]
                else:
                    v = t.run_n(runs, cmd, tmp)
                got.setdefault(name, []).append(v)
        h = got["hyperfine"]
        for name in sorted(n for n in got if n != "hyperfine"):
            xs = got[name]
            ratios = [a / b for a, b in zip(xs, h)]
            what = ("`compare -N`" if "compare" in name else "`run -n`") + \
                f" reported median of {label}" + \
                (", breakdown off" if "off" in name else "") + \
                (f" [{name.split()[0]}]" if len(tallies) > 1 else "")
            rows.append((what, spread(xs, "{:,.1f}") + " µs",
                         "hyperfine -N: " + spread(h, "{:,.1f}") + " µs",
                         spread(ratios, "{:.3f}")))
    return rows


def group_floor_dir():
    """Where the C floor may make its cgroup v2 group (beside this
    process's own, as tally makes its), or None where it may not."""
    try:
        own = next(l[3:].strip() for l in open("/proc/self/cgroup") if l.startswith("0::"))
    except (OSError, StopIteration):
        return None
    for mount in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
        if os.path.exists(os.path.join(mount, "cgroup.procs")) and \
                os.path.exists(os.path.join(mount, "cgroup.controllers")):
            parent = os.path.join(mount, own.lstrip("/"))
            probe = os.path.join(parent, f"tally-floor-{os.getpid()}")
            try:
                os.mkdir(probe)
                os.rmdir(probe)
            except OSError:
                return None
            return probe
    return None


def added_wall(tallies, c, runs, blocks):
    """Part 2: per block, each variant's median less bare /bin/true's."""
    true = "/bin/true"
    variants = {"/bin/true": [true], "GNU time": ["/usr/bin/time", true],
                "C floor": [c, "floor", true], "C fork": [c, "fork", true]}
    group = group_floor_dir()
    if group:
        variants["C fork into a new group"] = [c, "fork-into", group, true]
    for t in tallies:
        variants[t.label] = [t.path, "run", "--", true]
    first = tallies[0]
    if first.off_option:
        variants[first.label + ", breakdown off"] = [first.path, "run", "--no-why", "--", true]
    devnull = os.open(os.devnull, os.O_WRONLY)
    for _ in range(20):
        for argv in variants.values():
            spawn_wait_ns(argv, devnull)
    per_block = []
    for _ in range(blocks):
        samples = {name: [] for name in variants}
        names = list(variants)
        for _ in range(runs):
            random.shuffle(names)
            for name in names:
                samples[name].append(spawn_wait_ns(variants[name], devnull))
        base = statistics.median(samples[true])
        per_block.append({n: (statistics.median(s) - base) / 1e3
                          for n, s in samples.items() if n != true})
    os.close(devnull)
    rows = []
    gnu = [b["GNU time"] for b in per_block]
    floor = [b["C floor"] for b in per_block]
    for t in tallies:
        mine = [b[t.label] for b in per_block]
        below = sum(1 for b in per_block if b[t.label] <= b["GNU time"])
        rows.append((f"`run -- /bin/true` added wall [{t.label}], {blocks} blocks of "
                     f"{runs} interleaved rounds",
                     "+" + spread(mine) + " µs",
                     "GNU time +" + spread(gnu) + " µs; C posix_spawn+wait4 +"
                     + spread(floor) + " µs",
                     f"{spread([a / b for a, b in zip(mine, gnu)], '{:.2f}')}× GNU time "
                     f"(≤ it in {below} of {blocks}); "
                     f"{spread([a / b for a, b in zip(mine, floor)], '{:.2f}')}× C"))
    if first.off_option:
        off = [b[first.label + ", breakdown off"] for b in per_block]
        rows.append((f"`run --no-why -- /bin/true` added wall [{first.label}], {blocks} blocks",
                     "+" + spread(off) + " µs", "GNU time +" + spread(gnu) + " µs",
                     f"{spread([a / b for a, b in zip(off, gnu)], '{:.2f}')}× GNU time; "
                     "the breakdown adds +"
                     + spread([b[first.label] - o for b, o in zip(per_block, off)]) + " µs"))
    fork = [b["C fork"] for b in per_block]
    rows.append((f"C fork + exec + wait4 (GNU time's way), {blocks} blocks",
                 "+" + spread(fork) + " µs", "C posix_spawn+wait4 +" + spread(floor) + " µs",
                 f"{spread([a / b for a, b in zip(fork, floor)], '{:.2f}')}× C posix_spawn"))
    if "C fork into a new group" in per_block[0]:
        into = [b["C fork into a new group"] for b in per_block]
        rows.append((f"C fork into a new cgroup v2 group (mkdir, clone3 "
                     f"CLONE_INTO_CGROUP, rmdir), {blocks} blocks",
                     "+" + spread(into) + " µs", "C fork +" + spread(fork) + " µs",
                     "the group's kernel floor +"
                     + spread([a - b for a, b in zip(into, fork)]) + " µs"))
    return rows


def per_run(tallies, c, reps, tmp):
    """Part 3: whole elapsed time per run."""
    n = 500
    got = {}
    for _ in range(reps):
        jobs = ["hyperfine", "C"] + [t.label for t in tallies]
        random.shuffle(jobs)
        for name in jobs:
            if name == "hyperfine":
                v = hyperfine(n, ["/bin/true", "/bin/true"], tmp)[1]
            elif name == "C":
                t0 = time.perf_counter_ns()
                subprocess.run([c, "loop", str(2 * n), "/bin/true"], check=True)
                v = (time.perf_counter_ns() - t0) / 1e3 / (2 * n)
            else:
                t = next(t for t in tallies if t.label == name)
                v = t.compare(n, "/bin/true", tmp)[1]
            got.setdefault(name, []).append(v)
    rows = []
    for t in tallies:
        xs = got[t.label]
        rows.append((f"`compare -N -n {n} /bin/true /bin/true`, whole process, per run "
                     f"[{t.label}], {reps} repetitions",
                     spread([x / 1e3 for x in xs], "{:.3f}") + " ms",
                     "hyperfine " + spread([x / 1e3 for x in got["hyperfine"]], "{:.3f}")
                     + " ms; C spawn loop " + spread([x / 1e3 for x in got["C"]], "{:.3f}")
                     + " ms",
                     f"{spread([a / b for a, b in zip(xs, got['hyperfine'])], '{:.2f}')}× "
                     f"hyperfine, {spread([a / b for a, b in zip(xs, got['C'])], '{:.2f}')}× C"))
    return rows


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    blocks = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    need("hyperfine", "hyperfine")
    need("/usr/bin/time", "time")
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        sys.exit("no C compiler (apt-get install gcc)")
    with tempfile.TemporaryDirectory(prefix="tally-measure-cost-") as tmp:
        # Each build as installed, not as the linker left it (see
        # `installed_copy`).
        tallies = [Tally(installed_copy(os.environ.get("TALLY_BIN") or build_tally(), tmp),
                         "tally")]
        if os.environ.get("TALLY_BEFORE"):
            tallies.append(Tally(installed_copy(os.environ["TALLY_BEFORE"], tmp,
                                                "tally-before"), "before"))
        src, c = os.path.join(tmp, "floors.c"), os.path.join(tmp, "floors")
        with open(src, "w") as f:
            f.write(C_SOURCE)
        subprocess.run([cc, "-O2", "-o", c, src], check=True)
        spin_n = calibrate_spin(c)
        started = time.monotonic()
        parts = os.environ.get("PARTS", "1,2,3").split(",")
        rows = []
        if "1" in parts:
            rows += reported_medians(tallies, c, spin_n, runs, reps, tmp)
        if "2" in parts:
            rows += added_wall(tallies, c, runs, blocks)
        if "3" in parts:
            rows += per_run(tallies, c, reps, tmp)
        took = time.monotonic() - started
    euid = os.geteuid()
    print(f"{os.uname().nodename} ({os.cpu_count()} CPUs, kernel {os.uname().release}, "
          f"euid {euid}); {runs} runs each, {reps} repetitions, {blocks} blocks; "
          f"{took:.0f} s; medians (range over repetitions)\n")
    print_table(("what", "tally", "peer / floor", "ratio"), rows)


if __name__ == "__main__":
    main()
