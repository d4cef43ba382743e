#!/usr/bin/env python3
"""The page-cache commands at 100,000 files: tally against vmtouch, fincore
and coreutils on a tree of 100 directories x 1,000 files of 4 KiB, in one
run, interleaved round by round, medians and ratios, with each command's
peak resident memory (ru_maxrss) and CPU time (user + system).

  residency   tally cache -r TREE          vmtouch TREE;
              find | tally cache -0 -      find | xargs fincore
  eviction    tally cache -r --evict TREE  vmtouch -e TREE   (tree warm before)
  --cold      tally run --cold TREE -- true, less tally run -- true,
              against vmtouch -e TREE      (tree warm before)
  cp -r       tally cp -r TREE DST         cp -r TREE DST && sync;
                                           nocache cp -r TREE DST && sync
              (source evicted and DST removed before each; the page cache
              left behind is measured after each)

Then one `strace -f -c` of `tally cache -r TREE >/dev/null`: write() and
stat calls per file.

Usage: benches/scale_tree.py [DIR] [ROUNDS] [CP_ROUNDS]
  DIR: where the tree goes (default /tmp, a disk filesystem: tmpfs cannot
  evict); ROUNDS (default 5) for residency, eviction and --cold; CP_ROUNDS
  (default 3) for cp -r. Run from the repository (it builds tally); it waits
  for the machine to be idle first (the machine is shared)."""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import build_tally, need, wait_idle  # noqa: E402

TALLY = os.environ.get("TALLY") or build_tally()
DIRS, FILES, SIZE = 100, 1000, 4096


def timed(argv, shell=False, keep_stdout=False):
    """Runs argv under GNU time; returns (wall ns, peak RSS bytes, CPU ns
    (user + system), stdout if kept). GNU time starts the command from its
    own small process: a command started by this (large) Python process
    would report Python's peak as its own (the kernel carries the peak RSS
    across exec). For a shell pipeline: the largest peak of its processes,
    their summed CPU time."""
    if shell:
        argv = ["sh", "-c", argv]
    with tempfile.NamedTemporaryFile() as rep, tempfile.TemporaryFile() as out, \
            tempfile.TemporaryFile() as err:
        t0 = time.perf_counter_ns()
        p = subprocess.run(["/usr/bin/time", "-f", "%M %U %S", "-o", rep.name, *argv],
                           stdout=out if keep_stdout else subprocess.DEVNULL, stderr=err)
        t1 = time.perf_counter_ns()
        if p.returncode != 0:
            err.seek(0)
            sys.exit(f"{argv} failed ({p.returncode}): {err.read().decode(errors='replace')}")
        kb, user, system = open(rep.name).read().split()[-3:]
        out.seek(0)
        text = out.read().decode() if keep_stdout else None
    return t1 - t0, int(kb) * 1024, int((float(user) + float(system)) * 1e9), text


def run(argv, shell=False):
    out = subprocess.run(argv, shell=shell, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if out.returncode != 0:
        sys.exit(f"{argv} failed: {out.stderr.decode(errors='replace')}")
    return out.stdout.decode()


def cached(paths):
    """Bytes of `paths` (trees) in the page cache, by tally."""
    out = json.loads(run([TALLY, "cache", "-r", "--format", "json", *paths]))
    return out["total"]["cached_bytes"], out["total"]["size_bytes"]


def make_tree(base):
    tree = os.path.join(base, "tree")
    data = os.urandom(SIZE)
    for d in range(DIRS):
        dd = os.path.join(tree, f"d{d:03}")
        os.makedirs(dd)
        for f in range(FILES):
            with open(os.path.join(dd, f"f{f:04}"), "wb") as fh:
                fh.write(data)
    run(["sync"])
    return tree


class Figures:
    def __init__(self):
        self.wall, self.rss, self.user = {}, {}, {}

    def add(self, name, wall, rss, user):
        self.wall.setdefault(name, []).append(wall)
        self.rss.setdefault(name, []).append(rss)
        self.user.setdefault(name, []).append(user)

    def med(self, name):
        return (statistics.median(self.wall[name]), statistics.median(self.rss[name]),
                statistics.median(self.user[name]))


def ms(ns):
    return f"{ns / 1e6:,.0f} ms"


def mb(b):
    return f"{b / 1e6:,.1f} MB"


def main():
    base = sys.argv[1] if len(sys.argv) > 1 else "/tmp"
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    cp_rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    need("vmtouch", "vmtouch")
    need("fincore", "util-linux")
    need("nocache", "nocache")
    need("strace", "strace")
    busy = wait_idle(limit_percent=10.0)
    print(f"machine {busy:.0f}% busy before the run; load {os.getloadavg()}", file=sys.stderr)
    f = Figures()
    with tempfile.TemporaryDirectory(dir=base) as work:
        tree = make_tree(work)
        files_cmd = f"find {tree} -type f -print0"
        for r in range(rounds):
            print(f"round {r + 1}/{rounds}: residency, eviction, --cold", file=sys.stderr)
            # Residency of a warm tree.
            run(["vmtouch", "-q", "-t", tree])
            for name, argv, shell in [
                ("tally cache -r", [TALLY, "cache", "-r", tree], False),
                ("vmtouch", ["vmtouch", tree], False),
                ("find | tally cache -0 -", f"{files_cmd} | {TALLY} cache -0 -", True),
                ("find | xargs fincore", f"{files_cmd} | xargs -0 fincore", True),
            ]:
                w, rss, u, _ = timed(argv, shell=shell)
                f.add(name, w, rss, u)
            # Eviction of a warm tree, verified after by tally.
            for name, argv in [
                ("tally cache -r --evict", [TALLY, "cache", "-r", "--evict", tree]),
                ("vmtouch -e", ["vmtouch", "-e", tree]),
            ]:
                run(["vmtouch", "-q", "-t", tree])
                w, rss, u, _ = timed(argv)
                f.add(name, w, rss, u)
                left, size = cached([tree])
                f.add(name + " left", left, 0, 0)
            # --cold: what it adds to a run of `true`.
            run(["vmtouch", "-q", "-t", tree])
            w, rss, u, out = timed([TALLY, "run", "--cold", tree, "--format", "json",
                                    "-o", "-", "--", "true"], keep_stdout=True)
            f.add("tally run --cold TREE -- true", w, rss, u)
            cold = json.loads(out)["runs"][0]["cold"]
            f.add("--cold evict_ns (reported)", cold["evict_ns"], 0, 0)
            f.add("--cold left", cold["cached_after_bytes"], 0, 0)
            w, rss, u, _ = timed([TALLY, "run", "--", "true"])
            f.add("tally run -- true", w, rss, u)
        # Every copy goes to a directory of its own, all removed at the end:
        # on ext4 a removed inode is not reused for 60 s (360 s while its
        # table block is dirty), and each new file's allocation then scans
        # past every one of them (ext4's recently_deleted(), most of the
        # kernel's time in a profile), so a copy made right after the
        # previous one was removed measures the removal, not the copy.
        copies = os.path.join(work, "copies")
        os.mkdir(copies)
        for r in range(cp_rounds):
            print(f"round {r + 1}/{cp_rounds}: cp -r", file=sys.stderr)
            for i, (name, make) in enumerate([
                ("tally cp -r", lambda d: [TALLY, "cp", "-r", tree, d]),
                ("cp -r && sync", lambda d: f"cp -r {tree} {d} && sync"),
                ("nocache cp -r && sync", lambda d: f"nocache cp -r {tree} {d} && sync"),
            ]):
                dst = os.path.join(copies, f"{r}-{i}")
                argv = make(dst)
                run(["sync"])
                run([TALLY, "cache", "-r", "--evict", tree])
                time.sleep(1)
                w, rss, u, _ = timed(argv, shell=isinstance(argv, str))
                f.add(name, w, rss, u)
                # What the copy left cached, and what a sync after costs.
                src_left, _ = cached([tree])
                dst_left, _ = cached([dst])
                f.add(name + " src left", src_left, 0, 0)
                f.add(name + " dst left", dst_left, 0, 0)
                t = time.perf_counter_ns()
                run(["sync"])
                f.add(name + " sync after", time.perf_counter_ns() - t, 0, 0)
                if name == "tally cp -r":
                    diff = subprocess.run(["diff", "-r", tree, dst], capture_output=True)
                    if diff.returncode != 0:
                        sys.exit("tally cp -r: the copy differs")
        # strace -c of the residency command.
        run(["vmtouch", "-q", "-t", tree])
        log = os.path.join(work, "strace")
        subprocess.run(["strace", "-f", "-c", "-U", "name,calls", "-o", log,
                        TALLY, "cache", "-r", tree], stdout=subprocess.DEVNULL, check=True)
        with open(log) as fh:
            counts = {}
            for line in fh:
                parts = line.split()
                if len(parts) == 2 and parts[1].isdigit():
                    counts[parts[0]] = int(parts[1])
    n = DIRS * FILES
    total = DIRS * FILES * SIZE

    def row(work, tally, peer, target=None):
        tw, tr, tu = f.med(tally)
        pw, pr, pu = f.med(peer)
        # CPU: user + system.
        ratio = tw / pw
        verdict = ""
        if target is not None:
            verdict = "met" if ratio <= target else "NOT met"
            verdict = f"≤ {target}×: {verdict}"
        print(f"| {work} | `{tally}` {ms(tw)}, {mb(tr)}, cpu {ms(tu)} "
              f"| `{peer}` {ms(pw)}, {mb(pr)}, cpu {ms(pu)} | {ratio:.2f}× | {verdict} |")

    print(f"Tree: {DIRS} x {FILES} files of {SIZE} B ({total / 2**20:.0f} MiB) on {base}; "
          f"{rounds} rounds ({cp_rounds} for cp -r), interleaved; medians.")
    print(f"Machine: {os.cpu_count()} CPUs, load before {os.getloadavg()[0]:.2f}.")
    print()
    print("| work | tally: wall, peak RSS, CPU | peer: wall, peak RSS, CPU | ratio | target |")
    print("|---|---|---|---:|---|")
    row("residency", "tally cache -r", "vmtouch", 0.8)
    row("residency of listed files", "find | tally cache -0 -", "find | xargs fincore")
    row("eviction", "tally cache -r --evict", "vmtouch -e", 1.2)
    cold_w = f.med("tally run --cold TREE -- true")[0]
    bare_w = f.med("tally run -- true")[0]
    added = cold_w - bare_w
    ve = f.med("vmtouch -e")[0]
    ratio = added / ve
    print(f"| --cold | `run --cold TREE -- true` adds {ms(added)} "
          f"(reports evicting in {ms(f.med('--cold evict_ns (reported)')[0])}) "
          f"| `vmtouch -e` {ms(ve)} | {ratio:.2f}× | ≤ 1.5×: {'met' if ratio <= 1.5 else 'NOT met'} |")
    row("cp -r", "tally cp -r", "cp -r && sync", 1.0)
    row("cp -r", "tally cp -r", "nocache cp -r && sync")
    print()
    print("Left in the page cache (medians):")
    print()
    print("| after | bytes cached | of |")
    print("|---|---:|---:|")
    for name in ["tally cache -r --evict", "vmtouch -e"]:
        print(f"| `{name}` | {f.med(name + ' left')[0]:,.0f} | {total:,} |")
    print(f"| `tally run --cold` (its own check) | {f.med('--cold left')[0]:,.0f} | {total:,} |")
    for name in ["tally cp -r", "cp -r && sync", "nocache cp -r && sync"]:
        s = f.med(name + " src left")[0]
        d = f.med(name + " dst left")[0]
        y = f.med(name + " sync after")[0]
        print(f"| `{name}` (source evicted before) | source {s:,.0f}, copy {d:,.0f} "
              f"(a sync after: {ms(y)}) | {total:,} each |")
    print()
    writes = counts.get("write", 0)
    stats = sum(counts.get(s, 0) for s in ("statx", "newfstatat", "fstat", "stat", "lstat"))
    print(f"`strace -f -c tally cache -r TREE >/dev/null`: {writes:,} write() calls, "
          f"{stats:,} stat calls ({stats / n:.2f} per file), "
          f"{counts.get('openat', 0):,} openat, {counts.get('close', 0):,} close, "
          f"{counts.get('getdents64', 0):,} getdents64, {counts.get('futex', 0):,} futex.")
    print()
    print("Every round, wall ms:")
    for name, walls in f.wall.items():
        if name.endswith(("left", "(reported)")):
            continue
        print(f"  {name}: " + ", ".join(f"{w / 1e6:,.0f}" for w in walls))


if __name__ == "__main__":
    main()
