//! Spawning a command by `fork` + `exec`, and reaping it with `wait4`.
//!
//! `fork` rather than `posix_spawn` (vfork): at `exec` the kernel carries the
//! old address space's RSS high-water mark into the child's `ru_maxrss`.
//! With vfork the old address space is tally's own, so the child would
//! inherit tally's peak; with fork it is a copy holding only the pages whose
//! page-table entries fork copies (anonymous memory tally has touched), and
//! tally keeps that small: the records of repeated runs live in a mapping
//! forked children do not get (`sys::dontfork`, `run::records`). The fork is written out here rather than left to
//! `std::process::Command` because std waits for `exec` inside `spawn`,
//! which leaves no moment to attach counters to a child held at a gate.

use std::ffi::{CString, OsString};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::time::Duration;

use super::cvt;
pub use super::signals::kill;

/// What a child process cost, as `wait4` reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChildUsage {
    pub user: Duration,
    pub system: Duration,
    /// `ru_maxrss`: peak resident set, in KiB.
    pub max_rss_kib: u64,
    pub minor_faults: u64,
    pub major_faults: u64,
    pub voluntary_switches: u64,
    pub involuntary_switches: u64,
    /// `ru_inblock`: block input operations (512-byte units on Linux).
    pub block_input: u64,
    /// `ru_oublock`: block output operations.
    pub block_output: u64,
}

/// How a child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal { signal: i32, core_dumped: bool },
}

/// What the forked child does before `exec`.
#[derive(Default)]
pub struct PreExec<'g> {
    /// Hold the child before `exec` until [`Spawned::release`], so the
    /// parent can attach counters to it first.
    pub gate: bool,
    /// A cgroup v2 group's directory: the child is cloned straight into
    /// it (`clone3` with `CLONE_INTO_CGROUP`, Linux 5.7), which costs
    /// nothing, where moving a running process by `cgroup.procs` waits for
    /// an RCU grace period (10-15 ms measured; benches/why_overhead.py).
    /// On a kernel without that clone, a gated child is moved by the
    /// group's `cgroup.procs` while it waits at the gate. Where the kernel
    /// refuses both (a threaded group, a group the caller may not move
    /// processes into), the child runs outside the group, and
    /// [`Spawned::cgroup`] says why: a failure to join is never the
    /// command's.
    pub cgroup_dir: Option<BorrowedFd<'g>>,
    /// Send the command's stdout and stderr to /dev/null.
    pub quiet: bool,
    /// The command's stdin from /dev/null, not this process's. [`spawn`]
    /// only.
    pub stdin_null: bool,
    /// Send the command's stdout to its stderr (the report takes stdout).
    pub stdout_to_stderr: bool,
    /// Open the child's `/proc/PID/io` in the parent right after `fork`
    /// (see [`Spawned::io`]).
    pub open_io: bool,
    /// The child gets SIGKILL when the thread that forked it dies
    /// (`PR_SET_PDEATHSIG`). The kernel ties this to the parent *thread*,
    /// not the process: fork from the thread that also waits for the child.
    pub die_with_parent: bool,
    /// The child starts a process group of its own (`setpgid(0, 0)`), so
    /// that a signal forwarded to it reaches every process it starts.
    /// [`spawn_prepared`] only.
    pub own_group: bool,
    /// The command's whole environment (`KEY=VALUE` each) instead of this
    /// process's: for a command that must see a variable tally does not
    /// have itself (`PYTHONHASHSEED` of a counted run). [`spawn`] only.
    pub env: Option<Vec<OsString>>,
    /// The command's address space laid out without randomisation
    /// (`personality(ADDR_NO_RANDOMIZE)` in the child before `exec`, as
    /// `setarch -R` does), so that nothing in it moves from run to run.
    /// [`spawn`] only.
    pub fixed_layout: bool,
    /// The CPUs the command may run on, set in the child before its clock
    /// starts: the spawner stays on one CPU, which its children would
    /// inherit (see `crate::run::spawner`). [`spawn_prepared`] only.
    pub cpus: Option<&'g super::cpu::CpuMask>,
}

/// Where a child asked into a cgroup ([`PreExec::cgroup_dir`]) runs.
#[derive(Debug)]
pub enum Joined {
    /// No group was asked for.
    NotAsked,
    /// Cloned straight into the group.
    Cloned,
    /// Moved into the group by its `cgroup.procs` before it was released
    /// (a kernel without `CLONE_INTO_CGROUP`).
    Moved,
    /// Outside the group, for this reason (the kernel's refusal).
    Outside(io::Error),
}

/// How [`Spawned::outcome`] learns when the child's clock started and
/// whether its `exec` failed.
#[derive(Debug)]
enum ExecStatus {
    /// A forked child: a close-on-exec pipe on which it says its start
    /// ([`Started`], [`STARTED_LEN`] bytes) as its last step before
    /// `exec`, then the errno of a failed `exec`; EOF once `exec`
    /// succeeded. A child that failed before it could say its start
    /// writes the errno alone.
    Pipe(OwnedFd),
    /// A [`spawn_shared`] child, which has exec'd or exited when the spawn
    /// returns: what it said of its start, and the errno of a failed
    /// exec.
    Known(Started, Option<i32>),
}

/// What a child says of the moment its clock started: the clock, its
/// time on a CPU, what it read and wrote before (bytes, calls), its
/// schedstat text and the text's length (0 when unread).
#[derive(Debug, Clone, Copy)]
struct Started {
    clock_ns: u64,
    on_cpu_ns: u64,
    read_bytes: u32,
    read_calls: u32,
    /// A forked child's one write of this record to tally's pipe.
    write_bytes: u32,
    write_calls: u32,
    sched: [u8; SCHED_TEXT],
    sched_len: usize,
}

/// The bytes of a [`Started`] on a forked child's status pipe.
const STARTED_LEN: usize = 8 + 8 + 4 * 5 + SCHED_TEXT;

impl Started {
    const NOTHING: Started = Started {
        clock_ns: 0,
        on_cpu_ns: 0,
        read_bytes: 0,
        read_calls: 0,
        write_bytes: 0,
        write_calls: 0,
        sched: [0; SCHED_TEXT],
        sched_len: 0,
    };

    /// Its bytes for the status pipe: nothing but copies, for a child
    /// about to exec.
    #[inline(always)]
    fn encode(&self) -> [u8; STARTED_LEN] {
        let mut out = [0u8; STARTED_LEN];
        let len = u32::try_from(self.sched_len).unwrap_or(0);
        let words = [
            self.read_bytes,
            self.read_calls,
            self.write_bytes,
            self.write_calls,
            len,
        ];
        out[..8].copy_from_slice(&self.clock_ns.to_ne_bytes());
        out[8..16].copy_from_slice(&self.on_cpu_ns.to_ne_bytes());
        for (i, w) in words.iter().enumerate() {
            out[16 + 4 * i..20 + 4 * i].copy_from_slice(&w.to_ne_bytes());
        }
        out[36..].copy_from_slice(&self.sched);
        out
    }

    /// A record read back from the pipe; `None` when its text length is
    /// beyond the text (a record not of [`Started::encode`]).
    fn decode(bytes: &[u8; STARTED_LEN]) -> Option<Started> {
        let u64_at = |i: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&bytes[i..i + 8]);
            u64::from_ne_bytes(b)
        };
        let u32_at = |i: usize| {
            let mut b = [0u8; 4];
            b.copy_from_slice(&bytes[i..i + 4]);
            u32::from_ne_bytes(b)
        };
        let sched_len = usize::try_from(u32_at(32))
            .ok()
            .filter(|n| *n < SCHED_TEXT)?;
        let mut sched = [0u8; SCHED_TEXT];
        sched.copy_from_slice(&bytes[36..]);
        Some(Started {
            clock_ns: u64_at(0),
            on_cpu_ns: u64_at(8),
            read_bytes: u32_at(16),
            read_calls: u32_at(20),
            write_bytes: u32_at(24),
            write_calls: u32_at(28),
            sched,
            sched_len,
        })
    }
}

/// A started child, stopped at the gate if one was asked for.
#[derive(Debug)]
pub struct Spawned {
    pub pid: u32,
    /// How the start of `exec` and its error, if any, are learnt.
    status: ExecStatus,
    gate: Option<OwnedFd>,
    /// When the parent released the child from the gate (`CLOCK_MONOTONIC`
    /// ns), or when it was spawned without one: the start of the run when
    /// the child could not say its own.
    released_ns: u64,
    /// `/proc/PID/io` of the child, opened right after `fork` when
    /// [`PreExec::open_io`] asked for it, or why it could not be opened.
    ///
    /// Opened early on purpose: once the child has exited, the kernel
    /// makes a zombie's `/proc/PID` files root's (it has no memory map
    /// left to take the owner from), so its own parent, unprivileged,
    /// cannot open them any more. A descriptor opened while the child
    /// lived still reads, since the kernel checks `ptrace_may_access` at
    /// each read, and that passes for a zombie of the same user.
    pub io: Option<io::Result<std::fs::File>>,
    /// Whether the child runs in the group [`PreExec::cgroup_dir`] named.
    pub cgroup: Joined,
}

/// The most of a child's `/proc/self/schedstat` text kept (three
/// numbers: 64 bytes hold them).
pub const SCHED_TEXT: usize = 64;

/// What a child that has exited says of its start: see [`Spawned::outcome`].
#[derive(Debug)]
pub struct Outcome {
    /// When the command's clock started (`CLOCK_MONOTONIC` ns), after
    /// every preparation: read by the child as its last step before
    /// `exec` (a gated child once it has passed the gate). When the child
    /// ended before it could say, when the parent released it.
    pub started_ns: u64,
    /// The child's `/proc/self/schedstat` at that moment (its time on a
    /// CPU and waiting for one so far: what tally's preparations in it
    /// took, outside the clock), read by the child itself, running, so
    /// that a wait for a CPU it was still in when released is counted up
    /// to then; `None` when it could not be read.
    pub started_sched: Option<([u8; SCHED_TEXT], usize)>,
    /// The child's time on a CPU at that moment
    /// (`CLOCK_THREAD_CPUTIME_ID`, ns), for the first figure of its
    /// schedstat, which lags a running task's own by up to a tick (the
    /// kernel counts a running task's time at the next tick or switch).
    pub started_on_cpu_ns: Option<u64>,
    /// What tally read in the child before `exec` (the gate's byte, its
    /// schedstat): bytes and read calls, which its `/proc/PID/io` counts
    /// as the command's (`rchar`, `syscr`) and which are not.
    pub pre_exec_reads: (u64, u64),
    /// What tally wrote in the child before `exec` (a forked child's
    /// record of its start, to tally's pipe): bytes and write calls, which
    /// its `/proc/PID/io` counts as the command's (`wchar`, `syscw`).
    pub pre_exec_writes: (u64, u64),
    /// The error of `exec`, if it failed.
    pub exec_error: Option<io::Error>,
}

impl Spawned {
    /// Lets a gated child go on to `exec` (no-op without a gate).
    pub fn release(&mut self) {
        if let Some(gate) = self.gate.take() {
            let byte = 1u8;
            self.released_ns = super::monotonic_ns();
            // SAFETY: writes one byte from a live local to an open descriptor.
            let _ = unsafe { libc::write(gate.as_raw_fd(), (&raw const byte).cast(), 1) };
        }
    }

    /// After the child has exited (see [`wait_exited_keep`]): when it
    /// called `exec`, and the error of `exec` if it failed. Reading only
    /// once the child is gone never blocks and saves the parent a wake-up
    /// while the command runs.
    pub fn outcome(&self) -> Outcome {
        let status = match &self.status {
            ExecStatus::Known(started, errno) => {
                return outcome_of(
                    started,
                    errno.map(io::Error::from_raw_os_error),
                    self.released_ns,
                );
            }
            ExecStatus::Pipe(fd) => fd,
        };
        // The record of its start, then the errno of a failed exec: at
        // most both, and the child is gone, so every read returns at once.
        let mut bytes = [0u8; STARTED_LEN + 4];
        let mut got = 0usize;
        let mut error = None;
        while got < bytes.len() {
            let rest = &mut bytes[got..];
            // SAFETY: reads into the unfilled tail of a live local buffer.
            let n = unsafe { libc::read(status.as_raw_fd(), rest.as_mut_ptr().cast(), rest.len()) };
            if n == 0 {
                break;
            }
            if n < 0 {
                let err = io::Error::last_os_error();
                if err.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                error = Some(err);
                break;
            }
            got += n as usize;
        }
        let (started, errno) = started_and_errno(&bytes[..got]);
        if error.is_none() {
            error = errno.map(io::Error::from_raw_os_error);
        }
        outcome_of(&started, error, self.released_ns)
    }
}

/// What a forked child wrote on its status pipe: its start (nothing said
/// when it failed before it could say it) and the errno of a failure.
fn started_and_errno(bytes: &[u8]) -> (Started, Option<i32>) {
    let errno_at = |i: usize| {
        bytes
            .get(i..i + 4)
            .and_then(|b| <[u8; 4]>::try_from(b).ok())
            .map(i32::from_ne_bytes)
    };
    if bytes.len() == 4 {
        return (Started::NOTHING, errno_at(0));
    }
    let started = bytes
        .get(..STARTED_LEN)
        .and_then(|b| <&[u8; STARTED_LEN]>::try_from(b).ok())
        .and_then(Started::decode)
        .unwrap_or(Started::NOTHING);
    (started, errno_at(STARTED_LEN))
}

/// The [`Outcome`] of what a [`spawn_shared`] child said of its start (a
/// clock of 0: it said nothing; `released_ns` stands for it).
fn outcome_of(started: &Started, exec_error: Option<io::Error>, released_ns: u64) -> Outcome {
    let said = started.clock_ns != 0;
    Outcome {
        started_ns: if said { started.clock_ns } else { released_ns },
        started_sched: (said && started.sched_len > 0)
            .then_some((started.sched, started.sched_len)),
        started_on_cpu_ns: (said && started.on_cpu_ns != 0).then_some(started.on_cpu_ns),
        pre_exec_reads: if said {
            (u64::from(started.read_bytes), u64::from(started.read_calls))
        } else {
            (0, 0)
        },
        pre_exec_writes: if said {
            (
                u64::from(started.write_bytes),
                u64::from(started.write_calls),
            )
        } else {
            (0, 0)
        },
        exec_error,
    }
}

/// Forks and, in the child, runs the steps of `pre` then `execvp(argv)`.
///
/// The child starts with the default signal mask and SIGPIPE restored to
/// its default (the Rust runtime ignores it), stdin inherited.
pub fn spawn(argv: &[OsString], pre: PreExec) -> io::Result<Spawned> {
    if pre.own_group {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a forked spawn keeps the caller's process group",
        ));
    }
    // Everything the child needs is prepared here: it must not allocate.
    let cmd = Prepared::new(argv)?;
    let env = pre.env.as_deref().map(CStrings::new).transpose()?;
    let exec = Exec {
        program: &cmd.program,
        argv: &cmd.ptrs,
        sched_path: &cmd.sched_path,
        env: env.as_ref().map(|e| e.ptrs.as_slice()),
        fixed_layout: pre.fixed_layout,
    };
    let devnull = if pre.quiet || pre.stdin_null {
        Some(
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open("/dev/null")?,
        )
    } else {
        None
    };
    let (gate_read, gate_write) = if pre.gate {
        let (r, w) = pipe()?;
        (Some(r), Some(w))
    } else {
        (None, None)
    };
    let (status_read, status_write) = pipe()?;
    let gate_fd = gate_read.as_ref().map(|fd| fd.as_raw_fd());
    let cgroup_dir = pre.cgroup_dir.as_ref().map(|fd| fd.as_raw_fd());
    let null_fd = devnull.as_ref().map(|f| f.as_raw_fd());
    let status_fd = status_write.as_raw_fd();
    let parent = pre
        .die_with_parent
        .then(|| std::process::id() as libc::pid_t);

    // The forwarded signals are blocked across the fork: one that arrives
    // now waits until tally has the child's pid (and is then passed on),
    // instead of running tally's handler in the child before exec, where it
    // would be swallowed. The child restores their default action first.
    let blocked = super::signals::block_forwarded();
    // SAFETY: fork (or its clone3 form) has no memory preconditions. In the
    // child (ret == 0) only async-signal-safe calls follow (sigaction,
    // signal, sigprocmask, prctl, getppid, kill, getpid, open, read, close,
    // write, dup2, clock_gettime, execvp, _exit) on data prepared above;
    // nothing allocates or locks.
    let (ret, joined) = match cgroup_dir.map(|dir| unsafe { fork_into_cgroup(dir) }) {
        Some(Ok(ret)) => (ret, Joined::Cloned),
        // SAFETY: as above.
        Some(Err(e)) => (unsafe { libc::fork() }, Joined::Outside(e)),
        // SAFETY: as above.
        None => (unsafe { libc::fork() }, Joined::NotAsked),
    };
    if ret == 0 {
        // SAFETY: see the fork comment above; every pointer refers to data
        // that lives in this address space until exec or _exit.
        unsafe {
            let redirect = match (null_fd.filter(|_| pre.quiet), pre.stdout_to_stderr) {
                (Some(fd), _) => Redirect::Null(fd),
                (None, true) => Redirect::StdoutToStderr,
                (None, false) => Redirect::None,
            };
            let stdin = null_fd.filter(|_| pre.stdin_null);
            child_exec(&exec, gate_fd, redirect, stdin, status_fd, parent)
        }
    }
    let pid = match cvt(ret) {
        Ok(pid) => pid,
        Err(e) => {
            super::signals::restore_mask(&blocked);
            return Err(e);
        }
    };
    // First thing after fork, while the child is still at most exec'ing:
    // see `Spawned::io`.
    let io = pre
        .open_io
        .then(|| std::fs::File::open(format!("/proc/{pid}/io")));
    super::signals::restore_mask(&blocked);
    drop(status_write);
    drop(gate_read);
    // A kernel without `CLONE_INTO_CGROUP`: the child, held at the gate,
    // is moved in now, before its clock starts.
    let joined = match (joined, cgroup_dir) {
        (Joined::Outside(e), Some(dir)) if pre.gate && lacks_clone_into_cgroup(&e) => {
            match move_into(dir, pid as u32) {
                Ok(()) => Joined::Moved,
                Err(e) => Joined::Outside(e),
            }
        }
        (joined, _) => joined,
    };
    Ok(Spawned {
        pid: pid as u32,
        status: ExecStatus::Pipe(status_read),
        gate: gate_write,
        released_ns: super::monotonic_ns(),
        io,
        cgroup: joined,
    })
}

/// Whether `clone3` failed for want of `CLONE_INTO_CGROUP` (a kernel
/// before 5.7: no `clone3` at all, or one whose arguments end before
/// `cgroup`), rather than because the group refuses the process.
fn lacks_clone_into_cgroup(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOSYS) | Some(libc::E2BIG))
}

/// Moves process `pid` into the cgroup whose directory is `dir`, by
/// writing it to the group's `cgroup.procs`.
fn move_into(dir: std::os::fd::RawFd, pid: u32) -> io::Result<()> {
    use std::os::fd::FromRawFd;
    // SAFETY: openat with a directory descriptor and a NUL-terminated name.
    let fd = cvt(unsafe {
        libc::openat(
            dir,
            c"cgroup.procs".as_ptr(),
            libc::O_WRONLY | libc::O_CLOEXEC,
        )
    })?;
    // SAFETY: openat returned a new descriptor, ours alone.
    let mut procs = unsafe { std::fs::File::from_raw_fd(fd) };
    // One write: the kernel reads one pid from it.
    io::Write::write_all(&mut procs, pid.to_string().as_bytes())
}

/// `struct clone_args` of `clone3(2)`, up to `cgroup` (Linux 5.7).
#[repr(C)]
#[derive(Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
    cgroup: u64,
}

/// `CLONE_INTO_CGROUP` of `linux/sched.h`.
const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;

/// A `fork` whose child starts in the cgroup v2 group of the directory
/// descriptor `dir`: what `clone3` returns (0 in the child, its pid in the
/// parent), or the kernel's refusal (before 5.7: `ENOSYS`, `E2BIG`; a
/// group it cannot start a process in: `EOPNOTSUPP` for a threaded one,
/// `EACCES` where the caller may not move processes into it), to fork
/// outside the group instead.
///
/// # Safety
/// As `fork`: the child may only make async-signal-safe calls before
/// `exec` (glibc's fork handlers do not run; nothing after relies on them).
unsafe fn fork_into_cgroup(dir: i32) -> io::Result<libc::pid_t> {
    let args = CloneArgs {
        flags: CLONE_INTO_CGROUP,
        exit_signal: libc::SIGCHLD as u64,
        cgroup: dir as u64,
        ..CloneArgs::default()
    };
    // SAFETY: `args` is a valid clone_args of the size given; without
    // CLONE_VM and with no stack given, the child runs on a copy of this
    // address space at the same stack pointer, as after fork.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_clone3,
            &raw const args,
            std::mem::size_of::<CloneArgs>(),
        )
    };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(ret as libc::pid_t)
}

/// A process kept asleep in a cgroup (see [`Keeper::start`]); dropping
/// it kills and reaps it.
#[derive(Debug)]
pub struct Keeper {
    pid: u32,
}

impl Keeper {
    /// Starts a process in the cgroup v2 group of directory `dir` that
    /// sleeps until it is killed: a group with a process in it stays
    /// populated, and on the 2-core VM a command cloned into a group kept
    /// so took 8–15 µs less per run than into one it emptied and filled
    /// again (docs/BENCHMARKS.md). The process leads a process group of
    /// its own, blocks every signal it can, and dies with this process
    /// (`PR_SET_PDEATHSIG`). It is this process's child: whoever reaps
    /// its children must spare it (see [`end_orphans`]).
    pub fn start(dir: &std::fs::File) -> io::Result<Keeper> {
        use std::os::fd::AsRawFd;
        let parent = std::process::id();
        // The child keeps every signal blocked for good.
        let old = super::signals::block_all();
        // SAFETY: a fork; the child below makes only async-signal-safe
        // calls and never returns.
        let cloned = unsafe { fork_into_cgroup(dir.as_raw_fd()) };
        if let Ok(0) = cloned {
            // SAFETY: in the forked child: plain system calls only.
            unsafe { keeper_main(parent) }
        }
        super::signals::restore_mask(&old);
        Ok(Keeper {
            pid: cloned? as u32,
        })
    }

    /// Its pid.
    pub fn pid(&self) -> u32 {
        self.pid
    }
}

impl Drop for Keeper {
    fn drop(&mut self) {
        // A child of this process, not reaped by anyone else (see
        // `end_orphans`'s `spare`): its pid is still its own.
        let _ = super::signals::kill(self.pid, libc::SIGKILL);
        // SIGKILL ends it at once (it sleeps in `pause`): a short wait.
        let _ = wait4(self.pid);
    }
}

/// The keeper's life: every signal blocked (only SIGKILL and SIGSTOP
/// reach it), killed with its parent, in a process group of its own, no
/// descriptor of its parent's held (a pipe it kept open would not end
/// with the parent), then asleep.
///
/// # Safety
/// Only in a child just forked; async-signal-safe calls only.
unsafe fn keeper_main(parent: u32) -> ! {
    // SAFETY: plain system calls on values of this frame.
    unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        );
        if libc::getppid() as u32 != parent {
            libc::_exit(0);
        }
        libc::setpgid(0, 0);
        // Linux 5.9+; before, the descriptors stay open until it is killed.
        libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32);
        loop {
            libc::pause();
        }
    }
}

/// In a child about to exec: the forwarded signals get the disposition
/// tally's caller gave them (default, or ignored:
/// [`super::signals::inherited_disposition`]; exec would reset a handled
/// one, but a signal could come before), SIGPIPE its default (the Rust
/// runtime ignores it), then the signal mask is emptied.
///
/// # Safety
/// Only in a child before exec; async-signal-safe calls only.
unsafe fn default_signals() {
    // SAFETY: plain async-signal-safe calls on valid local arguments.
    unsafe {
        for sig in super::signals::FORWARDED {
            let mut old: libc::sigaction = std::mem::zeroed();
            let ignored = libc::sigaction(sig, std::ptr::null(), &mut old) == 0
                && old.sa_sigaction == libc::SIG_IGN;
            if !ignored {
                libc::signal(sig, super::signals::inherited_disposition(sig));
            }
        }
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
    }
}

/// Reads this process's `/proc/self/schedstat` (`path`) into `buf` with
/// nothing but `open`, `read` and `close`: async-signal-safe, for a child
/// about to exec. Returns the bytes read and the read calls made; a text
/// that fills `buf` may be cut, and is not to be kept.
#[inline(always)]
fn read_own_sched(path: *const libc::c_char, buf: &mut [u8]) -> (usize, u32) {
    // SAFETY: `path` is a NUL-terminated string that outlives the call;
    // the read fills at most `buf`, which is live and writable.
    unsafe {
        // `openat`, not `open`: musl's `open` follows an `O_CLOEXEC` open
        // with an `fcntl` for kernels older than 2.6.23, one more call here.
        let fd = libc::openat(libc::AT_FDCWD, path, libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return (0, 0);
        }
        let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
        libc::close(fd);
        (usize::try_from(n).unwrap_or(0), 1)
    }
}

/// This thread's time on a CPU in ns (`CLOCK_THREAD_CPUTIME_ID`, which
/// counts the running slice too), with nothing but `clock_gettime`:
/// async-signal-safe, for a child about to exec.
#[inline(always)]
fn own_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}

/// `CLOCK_MONOTONIC` in ns, with nothing but `clock_gettime` (the vDSO):
/// async-signal-safe, for a child about to exec.
#[inline(always)]
fn clock_now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}

/// Where the child's stdout and stderr go.
#[derive(Clone, Copy)]
enum Redirect {
    None,
    /// Both to this descriptor (/dev/null).
    Null(i32),
    StdoutToStderr,
}

/// C strings and the null-ended array of pointers to them that `exec`
/// takes, made before a fork.
struct CStrings {
    /// Owns the strings `ptrs` points to; never read otherwise.
    _strings: Vec<CString>,
    ptrs: Vec<*const libc::c_char>,
}

impl CStrings {
    fn new(items: &[OsString]) -> io::Result<CStrings> {
        let strings = items
            .iter()
            .map(|s| {
                CString::new(s.as_bytes()).map_err(|_| {
                    io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("{s:?} contains a NUL byte"),
                    )
                })
            })
            .collect::<io::Result<Vec<CString>>>()?;
        let mut ptrs: Vec<*const libc::c_char> = strings.iter().map(|a| a.as_ptr()).collect();
        ptrs.push(std::ptr::null());
        Ok(CStrings {
            _strings: strings,
            ptrs,
        })
    }
}

/// What the forked child execs, prepared before the fork.
struct Exec<'a> {
    program: &'a CString,
    argv: &'a [*const libc::c_char],
    /// `/proc/self/schedstat`, read by the child as it says its start.
    sched_path: &'a CString,
    /// The whole environment, null-ended; `None`: this process's.
    env: Option<&'a [*const libc::c_char]>,
    fixed_layout: bool,
}

/// The child side of [`spawn`]; never returns.
///
/// # Safety
/// Must only be called in a freshly forked child; the pointers must be valid.
unsafe fn child_exec(
    exec: &Exec,
    gate: Option<i32>,
    redirect: Redirect,
    stdin: Option<i32>,
    status: i32,
    parent: Option<libc::pid_t>,
) -> ! {
    let fail = |errno: i32| -> ! {
        let bytes = errno.to_ne_bytes();
        // SAFETY: write and _exit are async-signal-safe; `bytes` is live.
        unsafe {
            libc::write(status, bytes.as_ptr().cast(), bytes.len());
            libc::_exit(127)
        }
    };
    let errno = || {
        io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO)
    };
    // SAFETY: plain async-signal-safe calls on valid arguments.
    unsafe {
        default_signals();
        if let Some(parent) = parent {
            libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            );
            // The parent may have died before the prctl took effect.
            if libc::getppid() != parent {
                libc::kill(libc::getpid(), libc::SIGKILL);
            }
        }
        let redirected = match redirect {
            Redirect::None => true,
            Redirect::Null(fd) => libc::dup2(fd, 1) >= 0 && libc::dup2(fd, 2) >= 0,
            Redirect::StdoutToStderr => libc::dup2(2, 1) >= 0,
        };
        if !redirected || stdin.is_some_and(|fd| libc::dup2(fd, 0) < 0) {
            fail(errno());
        }
        let mut gate_reads = (0u32, 0u32);
        if let Some(fd) = gate {
            let mut byte = 0u8;
            loop {
                gate_reads.1 += 1;
                let n = libc::read(fd, (&raw mut byte).cast(), 1);
                if n >= 0 {
                    gate_reads.0 += n as u32;
                    break;
                }
                if errno() != libc::EINTR {
                    fail(errno());
                }
            }
        }
        if exec.fixed_layout {
            let persona = libc::personality(0xffff_ffff);
            if persona == -1
                || libc::personality((persona | libc::ADDR_NO_RANDOMIZE) as libc::c_ulong) == -1
            {
                fail(errno());
            }
        }
        say_start(exec.sched_path.as_ptr(), gate_reads, status);
        match exec.env {
            Some(env) => libc::execvpe(exec.program.as_ptr(), exec.argv.as_ptr(), env.as_ptr()),
            None => libc::execvp(exec.program.as_ptr(), exec.argv.as_ptr()),
        };
        fail(errno())
    }
}

/// A forked child's last step before `exec`: reads its own schedstat,
/// its time on a CPU and the clock, and writes them to tally's `status`
/// pipe in one write (see [`Outcome::started_ns`]). Running, the child's
/// schedstat counts a wait for a CPU it was in when let go up to now, as
/// the parent's read at the gate could not: the wait would have fallen
/// into the clock's interval and the parts would have exceeded it.
/// Async-signal-safe: no allocation, only open, read, close,
/// clock_gettime and write.
#[inline(always)]
fn say_start(sched_path: *const libc::c_char, gate_reads: (u32, u32), status: i32) {
    let mut started = Started {
        write_bytes: STARTED_LEN as u32,
        write_calls: 1,
        ..Started::NOTHING
    };
    mark_start(&mut started, sched_path, gate_reads);
    let record = started.encode();
    // SAFETY: writes a live local buffer to an open descriptor; a pipe
    // takes this many bytes at once (PIPE_BUF), and a failed write only
    // leaves the parent without the record (it then takes its release).
    unsafe { libc::write(status, record.as_ptr().cast(), record.len()) };
}

/// Fills `started` as a child's last step before `exec`, in either kind
/// of spawn: its own schedstat, its time on a CPU, then the clock; with
/// what it read before (`(bytes, calls)`: the gate's byte) added to the
/// schedstat's read. Async-signal-safe: open, read, close, clock_gettime.
#[inline(always)]
fn mark_start(started: &mut Started, sched_path: *const libc::c_char, (bytes, calls): (u32, u32)) {
    let (n, sched_calls) = read_own_sched(sched_path, &mut started.sched);
    started.sched_len = if n < SCHED_TEXT { n } else { 0 };
    started.read_bytes = bytes + n as u32;
    started.read_calls = calls + sched_calls;
    started.on_cpu_ns = own_cpu_ns();
    started.clock_ns = clock_now_ns();
}

/// What [`spawn_shared`] hands its child (which shares the parent's
/// memory until `exec`): the prepared command in, the outcome out.
#[repr(C)]
struct SharedChild {
    program: *const libc::c_char,
    argv: *const *const libc::c_char,
    io_path: *const libc::c_char,
    sched_path: *const libc::c_char,
    /// The pid the child must see as its parent for `PR_SET_PDEATHSIG`
    /// (0: not asked for).
    parent: libc::pid_t,
    open_io: bool,
    own_group: bool,
    /// The CPUs to restore before `exec`, or null.
    cpus: *const libc::cpu_set_t,
    /// Out: `/proc/self/io` opened by the child, or `-errno`.
    io_fd: libc::c_int,
    /// Out: the errno of a failed exec (0: exec succeeded).
    exec_errno: libc::c_int,
    /// Out: the child's schedstat text and its time on a CPU just
    /// before that.
    started: Started,
}

/// The stack a [`spawn_shared`] child runs on until `exec`: one mapping
/// for the life of the process (only the pages the child touches count),
/// with an inaccessible guard page below it. Returns its lowest usable
/// address and its size.
fn shared_child_stack() -> io::Result<(usize, usize)> {
    use std::sync::OnceLock;
    const SIZE: usize = 256 * 1024;
    static BASE: OnceLock<usize> = OnceLock::new();
    if let Some(base) = BASE.get() {
        return Ok((*base, SIZE));
    }
    let page = super::page_size() as usize;
    // SAFETY: a fresh private anonymous mapping; no existing memory is touched.
    let mapped = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            SIZE + page,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
            -1,
            0,
        )
    };
    if mapped == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the first page of the mapping just made; a guard page.
    cvt(unsafe { libc::mprotect(mapped, page, libc::PROT_NONE) })?;
    let base = mapped as usize + page;
    Ok((*BASE.get_or_init(|| base), SIZE))
}

/// Starts `argv` the way `posix_spawn` does: the child shares this
/// process's memory and descriptor table (`clone` with `CLONE_VM`,
/// `CLONE_VFORK` and `CLONE_FILES`) and this thread sleeps until the child
/// has exec'd or exited. No page tables are copied and none torn down, so
/// it costs a fraction of [`spawn`].
///
/// The price is memory: at `exec` the kernel carries the high-water mark
/// of the address space being left, this process's own, into the child's
/// `ru_maxrss`. Use it only from a process whose own peak is smaller than
/// what it measures, and check (`run::spawner` does both).
///
/// The child opens its own `/proc/self/io` (close-on-exec, so only this
/// process keeps it) when `pre.open_io` asks, so nothing has to hold it
/// at a gate, and reads the clock as its last step before `exec` (see
/// [`Spawned::outcome`]). With `pre.cgroup_dir` it is cloned straight into
/// that group (`clone3`, x86-64); where the kernel refuses, it runs
/// outside and [`Spawned::cgroup`] says why. `pre.gate`, `pre.quiet` and
/// `pre.stdout_to_stderr` are not available here (a redirection would be
/// this process's own): they are refused with `InvalidInput`.
pub fn spawn_shared(argv: &[OsString], pre: PreExec) -> io::Result<Spawned> {
    spawn_prepared(&Prepared::new(argv)?, pre)
}

/// A command ready for [`spawn_prepared`]: its arguments as C strings.
#[derive(Debug)]
pub struct Prepared {
    program: CString,
    /// Owns the strings `ptrs` points to; never read otherwise.
    _args: Vec<CString>,
    ptrs: Vec<*const libc::c_char>,
    /// `/proc/self/io` and `/proc/self/schedstat`, here rather than
    /// constants so that the child touches no page of constants (see
    /// `run::spawner`).
    io_path: CString,
    sched_path: CString,
}

impl Prepared {
    /// Fails on an empty command or an argument holding a NUL byte.
    pub fn new(argv: &[OsString]) -> io::Result<Prepared> {
        let Some(program) = argv.first() else {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "empty command"));
        };
        let to_c = |s: &OsString| {
            CString::new(s.as_bytes()).map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{s:?} contains a NUL byte"),
                )
            })
        };
        let program = to_c(program)?;
        let args: Vec<CString> = argv.iter().map(to_c).collect::<io::Result<_>>()?;
        let mut ptrs: Vec<*const libc::c_char> = args.iter().map(|a| a.as_ptr()).collect();
        ptrs.push(std::ptr::null());
        Ok(Prepared {
            program,
            _args: args,
            ptrs,
            io_path: CString::from(c"/proc/self/io"),
            sched_path: CString::from(c"/proc/self/schedstat"),
        })
    }
}

/// Makes ready what [`spawn_shared`] needs once per process (the child's
/// stack), so that the first spawn does no more than the others.
pub fn prepare_shared_spawns() -> io::Result<()> {
    shared_child_stack().map(|_| ())
}

/// [`spawn_shared`] of a command prepared before: allocates nothing.
pub fn spawn_prepared(cmd: &Prepared, pre: PreExec) -> io::Result<Spawned> {
    if pre.gate
        || pre.quiet
        || pre.stdin_null
        || pre.stdout_to_stderr
        || pre.env.is_some()
        || pre.fixed_layout
    {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a shared-memory spawn has no gate, redirection, environment or fixed layout",
        ));
    }
    let (stack_base, stack_size) = shared_child_stack()?;
    // One child at a time on the one stack, whichever thread spawns.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut child = SharedChild {
        program: cmd.program.as_ptr(),
        argv: cmd.ptrs.as_ptr(),
        io_path: cmd.io_path.as_ptr(),
        sched_path: cmd.sched_path.as_ptr(),
        parent: if pre.die_with_parent {
            std::process::id() as libc::pid_t
        } else {
            0
        },
        open_io: pre.open_io,
        own_group: pre.own_group,
        cpus: pre.cpus.map_or(std::ptr::null(), |c| c.as_ptr()),
        io_fd: -libc::ENOENT,
        exec_errno: 0,
        started: Started::NOTHING,
    };
    // Every signal is blocked across the clone: a handler of this process
    // must never run in the child, which shares its memory. The child sets
    // the handled ones back to their default before it unblocks them.
    let old = super::signals::block_all();
    let stack = (stack_base, stack_size);
    let (ret, joined) = match pre.cgroup_dir.as_ref().map(|d| d.as_raw_fd()) {
        // SAFETY: as `clone_shared` below; the stack is as there.
        Some(dir) => match unsafe { clone_shared_into(dir, stack, &raw mut child) } {
            Ok(pid) => (pid, Joined::Cloned),
            // SAFETY: as below.
            Err(e) => (
                unsafe { clone_shared(stack, &raw mut child) },
                Joined::Outside(e),
            ),
        },
        // SAFETY: the child runs `shared_child_main` on its own stack (the
        // mapping above, unused by anyone else: this thread sleeps until
        // the child has exec'd or exited, CLONE_VFORK) and only reads
        // `child`'s prepared pointers, which live in this frame until
        // clone returns, and writes its out fields.
        None => (
            unsafe { clone_shared(stack, &raw mut child) },
            Joined::NotAsked,
        ),
    };
    super::signals::restore_mask(&old);
    let pid = cvt(ret)?;
    // The child is gone from this memory now: its writes are visible.
    let io = pre.open_io.then(|| {
        if child.io_fd >= 0 {
            use std::os::fd::FromRawFd;
            // SAFETY: the child opened this descriptor in the table it
            // shared with this process, which alone holds it now.
            Ok(unsafe { std::fs::File::from_raw_fd(child.io_fd) })
        } else {
            Err(io::Error::from_raw_os_error(-child.io_fd))
        }
    });
    let errno = child.exec_errno;
    Ok(Spawned {
        pid: pid as u32,
        status: ExecStatus::Known(child.started, (errno != 0).then_some(errno)),
        gate: None,
        released_ns: super::monotonic_ns(),
        io,
        cgroup: joined,
    })
}

/// `clone` of a child sharing this memory, files and this thread's sleep
/// until it has exec'd (`CLONE_VM | CLONE_VFORK | CLONE_FILES`), running
/// [`shared_child_main`] on `stack` (its lowest address and size).
///
/// # Safety
/// `child` must stay valid until the call returns, and `stack` be memory
/// nothing else uses while the child runs on it.
unsafe fn clone_shared(stack: (usize, usize), child: *mut SharedChild) -> libc::c_int {
    // SAFETY: as the caller promises; the child only reads and writes
    // `*child` and its own stack until it has exec'd or exited.
    unsafe {
        libc::clone(
            shared_child_main,
            (stack.0 + stack.1) as *mut libc::c_void,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_FILES | libc::SIGCHLD,
            child.cast(),
        )
    }
}

/// [`clone_shared`] with the child started in the cgroup v2 group of the
/// directory `dir` (`clone3` with `CLONE_INTO_CGROUP`, Linux 5.7): its pid,
/// or the kernel's refusal (see [`fork_into_cgroup`]).
///
/// glibc does not export `clone3`, whose child starts on the new stack
/// with nothing to return to: the system call is made here as glibc makes
/// it inside, the child calling `shared_child_main(child)` first thing.
///
/// # Safety
/// As [`clone_shared`].
#[cfg(target_arch = "x86_64")]
unsafe fn clone_shared_into(
    dir: i32,
    stack: (usize, usize),
    child: *mut SharedChild,
) -> io::Result<libc::c_int> {
    let args = CloneArgs {
        flags: (libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_FILES) as u64 | CLONE_INTO_CGROUP,
        exit_signal: libc::SIGCHLD as u64,
        stack: stack.0 as u64,
        stack_size: stack.1 as u64,
        cgroup: dir as u64,
        ..CloneArgs::default()
    };
    let ret: i64;
    // SAFETY: `args` is a valid clone_args of the size given. In this
    // thread the system call returns as any other (rcx and r11 clobbered).
    // The child starts with the stack pointer at the top of `stack`, which
    // nothing else uses; it clears the frame pointer, aligns the stack as
    // the ABI asks, calls `shared_child_main(child)` (which never returns:
    // it execs or exits) and, should it return, exits with its value,
    // never reaching the code after the block. This thread sleeps until
    // then (CLONE_VFORK), so `*child` stays valid for the child.
    unsafe {
        std::arch::asm!(
            "syscall",
            "test rax, rax",
            "jnz 2f",
            "xor ebp, ebp",
            "and rsp, -16",
            "mov rdi, r12",
            "call r13",
            "mov edi, eax",
            "mov eax, {exit}",
            "syscall",
            "ud2",
            "2:",
            exit = const libc::SYS_exit,
            inlateout("rax") libc::SYS_clone3 => ret,
            in("rdi") &raw const args,
            in("rsi") std::mem::size_of::<CloneArgs>(),
            in("r12") child,
            in("r13") shared_child_main as extern "C" fn(*mut libc::c_void) -> libc::c_int,
            lateout("rcx") _,
            lateout("r11") _,
        );
    }
    if ret < 0 {
        return Err(io::Error::from_raw_os_error(
            i32::try_from(-ret).unwrap_or(libc::EINVAL),
        ));
    }
    Ok(ret as libc::c_int)
}

/// Elsewhere than x86-64 the child is not cloned into a group: it runs
/// outside, and says why.
///
/// # Safety
/// None needed: nothing is cloned.
#[cfg(not(target_arch = "x86_64"))]
unsafe fn clone_shared_into(
    _dir: i32,
    _stack: (usize, usize),
    _child: *mut SharedChild,
) -> io::Result<libc::c_int> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "tally clones a shared-memory child into a cgroup on x86-64 only",
    ))
}

/// The child side of [`spawn_shared`]; never returns.
extern "C" fn shared_child_main(arg: *mut libc::c_void) -> libc::c_int {
    let child = arg.cast::<SharedChild>();
    // SAFETY: `arg` is the SharedChild of the parent frame, alive and not
    // touched by the parent until this child has exec'd or exited; only
    // async-signal-safe calls follow.
    unsafe {
        default_signals();
        let parent = (*child).parent;
        if parent != 0 {
            libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            );
            if libc::getppid() != parent {
                libc::kill(libc::getpid(), libc::SIGKILL);
            }
        }
        if (*child).own_group {
            libc::setpgid(0, 0);
        }
        if !(*child).cpus.is_null() {
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), (*child).cpus);
        }
        if (*child).open_io {
            let fd = libc::openat(
                libc::AT_FDCWD,
                (*child).io_path,
                libc::O_RDONLY | libc::O_CLOEXEC,
            );
            (*child).io_fd = if fd >= 0 {
                fd
            } else {
                -*libc::__errno_location()
            };
        }
        mark_start(&mut (*child).started, (*child).sched_path, (0, 0));
        libc::execvp((*child).program, (*child).argv);
        (*child).exec_errno = *libc::__errno_location();
        libc::_exit(127)
    }
}

/// Makes `cmd`'s child get `fd` (of this process) as descriptor `target`,
/// without close-on-exec.
pub fn pass_fd(
    cmd: &mut std::process::Command,
    fd: std::os::fd::RawFd,
    target: std::os::fd::RawFd,
) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the forked child before exec and makes
    // only async-signal-safe calls (dup2, fcntl) on plain integers.
    unsafe {
        cmd.pre_exec(move || {
            if fd == target {
                let flags = cvt(libc::fcntl(fd, libc::F_GETFD))?;
                cvt(libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC))?;
            } else {
                cvt(libc::dup2(fd, target))?;
            }
            Ok(())
        });
    }
}

/// A close-on-exec duplicate of `fd` numbered `min` or above.
pub fn dup_above(fd: std::os::fd::RawFd, min: std::os::fd::RawFd) -> io::Result<OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: fcntl on a descriptor number; the new descriptor is ours.
    let new = cvt(unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, min) })?;
    // SAFETY: F_DUPFD_CLOEXEC returned a new descriptor, ours alone.
    Ok(unsafe { OwnedFd::from_raw_fd(new) })
}

/// Opens `/proc/PID/<name>` (`name` at most 16 bytes) with nothing but
/// `open`, the path built on the stack, for a loop whose every page of
/// code and data counts (`run::spawner`), which passes `name` from its
/// own memory: a literal would be read from the program's constants.
#[inline(never)]
pub fn open_proc_file_of(pid: u32, name: &[u8]) -> io::Result<std::fs::File> {
    use std::os::fd::FromRawFd;
    if name.len() > 16 {
        return Err(io::Error::from_raw_os_error(libc::ENAMETOOLONG));
    }
    let mut path = [0u8; 40];
    // Byte by byte, stored as immediates: a literal would be read from
    // the program's constants, a page `run::spawner` must not touch.
    path[0] = b'/';
    path[1] = b'p';
    path[2] = b'r';
    path[3] = b'o';
    path[4] = b'c';
    path[5] = b'/';
    let mut len = 6;
    let mut digits = [0u8; 10];
    let mut n = 0;
    let mut rest = pid;
    loop {
        digits[n] = b'0' + (rest % 10) as u8;
        n += 1;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    while n > 0 {
        n -= 1;
        path[len] = digits[n];
        len += 1;
    }
    path[len] = b'/';
    len += 1;
    for &b in name {
        path[len] = b;
        len += 1;
    }
    // SAFETY: `path` is NUL-terminated (zeroed past `len`, at most 34 of
    // its 40 bytes used: 6 + 10 digits + 1 + 16).
    // `openat`: musl's `open` adds an `fcntl` (see `read_own_sched`).
    let fd = cvt(unsafe {
        libc::openat(
            libc::AT_FDCWD,
            path.as_ptr().cast(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        )
    })?;
    // SAFETY: open returned a new descriptor, ours alone.
    Ok(unsafe { std::fs::File::from_raw_fd(fd) })
}

/// Names this thread (`ps`, `top`, `/proc/PID/comm`; 15 bytes at most).
pub fn set_name(name: &std::ffi::CStr) -> io::Result<()> {
    // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16
    // bytes, which `name` is (longer names are cut by the kernel).
    cvt(unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr(), 0, 0, 0) }).map(|_| ())
}

/// Takes descriptor `fd`, inherited from the parent, as a Unix stream
/// socket of this process's own (close-on-exec from now on). Fails when
/// `fd` is not open or not a socket.
pub fn inherited_stream(fd: std::os::fd::RawFd) -> io::Result<std::os::unix::net::UnixStream> {
    use std::os::fd::FromRawFd;
    // SAFETY: fcntl and fstat on a descriptor number are harmless; `st`
    // is plain data written by fstat.
    unsafe {
        let flags = cvt(libc::fcntl(fd, libc::F_GETFD))?;
        let mut st: libc::stat = std::mem::zeroed();
        cvt(libc::fstat(fd, &mut st))?;
        if st.st_mode & libc::S_IFMT != libc::S_IFSOCK {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("descriptor {fd} is not a socket"),
            ));
        }
        cvt(libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC))?;
        // SAFETY: `fd` is an open socket this process was given to own;
        // nothing else in the process refers to it.
        Ok(std::os::unix::net::UnixStream::from_raw_fd(fd))
    }
}

/// Takes descriptor `fd`, inherited from the parent, as a directory of
/// this process's own (close-on-exec from now on). Fails when `fd` is not
/// open or not a directory.
pub fn inherited_dir(fd: std::os::fd::RawFd) -> io::Result<std::fs::File> {
    use std::os::fd::FromRawFd;
    // SAFETY: fcntl and fstat on a descriptor number are harmless; `st`
    // is plain data written by fstat.
    unsafe {
        let flags = cvt(libc::fcntl(fd, libc::F_GETFD))?;
        let mut st: libc::stat = std::mem::zeroed();
        cvt(libc::fstat(fd, &mut st))?;
        if st.st_mode & libc::S_IFMT != libc::S_IFDIR {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("descriptor {fd} is not a directory"),
            ));
        }
        cvt(libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC))?;
        // SAFETY: `fd` is an open directory this process was given to
        // own; nothing else in the process refers to it.
        Ok(std::fs::File::from_raw_fd(fd))
    }
}

/// Waits until child `pid` has exited, leaving it a zombie so its
/// `/proc/PID` files can still be read (`waitid` with `WNOWAIT`); returns
/// how it ended.
pub fn wait_exited_keep(pid: u32) -> io::Result<Exit> {
    loop {
        // SAFETY: siginfo_t is plain data; zeroed is a valid value.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: `info` is a valid, writable siginfo_t for the call.
        let ret = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        match cvt(ret) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        // SAFETY: waitid filled `info` for an exited child (CLD_* codes).
        let status = unsafe { info.si_status() };
        return Ok(match info.si_code {
            libc::CLD_EXITED => Exit::Code(status),
            code => Exit::Signal {
                signal: status,
                core_dumped: code == libc::CLD_DUMPED,
            },
        });
    }
}

/// Receives into `buf` what `sock` already holds, without waiting:
/// `None` when nothing is there, `Some(0)` at its end. On the spawner's
/// loop: its errno is looked at as a number, not through `io::Error`
/// (whose `kind` is code outside the loop's, which would raise its peak).
#[inline(never)]
pub fn recv_now(
    sock: &std::os::unix::net::UnixStream,
    buf: &mut [u8],
) -> io::Result<Option<usize>> {
    loop {
        // SAFETY: receives into a live buffer of the length given.
        let n = unsafe {
            libc::recv(
                sock.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_DONTWAIT,
            )
        };
        if n >= 0 {
            return Ok(Some(n as usize));
        }
        match errno() {
            libc::EINTR => continue,
            e if e == libc::EAGAIN || e == libc::EWOULDBLOCK => return Ok(None),
            e => return Err(io::Error::from_raw_os_error(e)),
        }
    }
}

/// Sends what of `buf` `sock` takes now, without waiting: `None` when
/// its peer's queue is full (nothing sent). As [`recv_now`], on the
/// spawner's loop.
#[inline(never)]
pub fn send_now(sock: &std::os::unix::net::UnixStream, buf: &[u8]) -> io::Result<Option<usize>> {
    loop {
        // SAFETY: sends from a live buffer of the length given.
        let n = unsafe {
            libc::send(
                sock.as_raw_fd(),
                buf.as_ptr().cast(),
                buf.len(),
                libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
            )
        };
        if n >= 0 {
            return Ok(Some(n as usize));
        }
        match errno() {
            libc::EINTR => continue,
            e if e == libc::EAGAIN || e == libc::EWOULDBLOCK => return Ok(None),
            e => return Err(io::Error::from_raw_os_error(e)),
        }
    }
}

/// The calling thread's `errno`.
#[inline(always)]
fn errno() -> i32 {
    // SAFETY: __errno_location returns this thread's errno, always valid.
    unsafe { *libc::__errno_location() }
}

/// Reaps child `pid` and returns how it ended and what it cost.
pub fn wait4(pid: u32) -> io::Result<(Exit, ChildUsage)> {
    loop {
        let mut status: libc::c_int = 0;
        // SAFETY: rusage is plain data; zeroed is a valid value.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `status` and `ru` are valid, writable, and live for the call.
        let ret = unsafe { libc::wait4(pid as libc::pid_t, &mut status, 0, &mut ru) };
        match cvt(ret) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        let exit = if libc::WIFSIGNALED(status) {
            Exit::Signal {
                signal: libc::WTERMSIG(status),
                core_dumped: libc::WCOREDUMP(status),
            }
        } else {
            Exit::Code(libc::WEXITSTATUS(status))
        };
        return Ok((exit, usage_from(&ru)));
    }
}

fn timeval(tv: libc::timeval) -> Duration {
    let secs = u64::try_from(tv.tv_sec).unwrap_or(0);
    let micros = u32::try_from(tv.tv_usec).unwrap_or(0).min(999_999);
    Duration::new(secs, micros * 1000)
}

fn nonneg(v: libc::c_long) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

fn usage_from(ru: &libc::rusage) -> ChildUsage {
    ChildUsage {
        user: timeval(ru.ru_utime),
        system: timeval(ru.ru_stime),
        max_rss_kib: nonneg(ru.ru_maxrss),
        minor_faults: nonneg(ru.ru_minflt),
        major_faults: nonneg(ru.ru_majflt),
        voluntary_switches: nonneg(ru.ru_nvcsw),
        involuntary_switches: nonneg(ru.ru_nivcsw),
        block_input: nonneg(ru.ru_inblock),
        block_output: nonneg(ru.ru_oublock),
    }
}

/// `getrusage(RUSAGE_SELF)`: what this process has cost so far.
pub fn self_usage() -> io::Result<ChildUsage> {
    // SAFETY: rusage is plain data; zeroed is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is valid and writable for the call.
    cvt(unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) })?;
    Ok(usage_from(&ru))
}

/// `getrusage(RUSAGE_CHILDREN)`: what this process's waited-for
/// children have cost so far. Its CPU times are sums, so differences of
/// two readings are the CPU time of the children reaped in between; its
/// `max_rss_kib` is a lifetime maximum, never a per-child figure.
pub fn children_usage() -> io::Result<ChildUsage> {
    // SAFETY: rusage is plain data; zeroed is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is valid and writable for the call.
    cvt(unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) })?;
    Ok(usage_from(&ru))
}

/// Asks the kernel to send this process SIGKILL when the thread that
/// forked it dies (`PR_SET_PDEATHSIG`), for a child started without
/// [`PreExec::die_with_parent`]; `parent` is the pid the caller expects
/// as its parent. When the parent is already gone (the process was
/// re-parented before the call took effect) this process kills itself.
pub fn die_with_parent(parent: u32) -> io::Result<()> {
    // SAFETY: prctl with PR_SET_PDEATHSIG takes a signal number and no
    // pointers.
    cvt(unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        )
    })?;
    // SAFETY: getppid has no preconditions and cannot fail.
    if unsafe { libc::getppid() } as u32 != parent {
        kill(std::process::id(), libc::SIGKILL)?;
    }
    Ok(())
}

/// This process's children, running or not yet reaped
/// (`/proc/self/task/*/children`).
pub fn children() -> Vec<u32> {
    let mut found = Vec::new();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return found;
    };
    for task in tasks.filter_map(Result::ok) {
        let text = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        found.extend(
            text.split_whitespace()
                .filter_map(|c| c.parse::<u32>().ok()),
        );
    }
    found
}

/// Reaps child `pid` if it has exited, without waiting: whether it had.
pub fn reap_now(pid: u32) -> bool {
    let mut status = 0;
    // SAFETY: `status` is a valid out-pointer for the call.
    let r = unsafe { libc::waitpid(pid as libc::pid_t, &mut status, libc::WNOHANG) };
    r == pid as libc::pid_t
}

/// How long the processes an interrupted command left get to end on the
/// signal before they are killed.
const ORPHANS_GRACE: Duration = Duration::from_millis(500);

/// After a run a signal interrupted: the processes its command started
/// and left running, orphaned to this process
/// (`Forwarder::adopt_orphans_on_signal`), are sent `sig`, then SIGKILL
/// after `ORPHANS_GRACE` (500 ms), and reaped, so that tally leaves none behind.
/// `command` is the run's own pid, a zombie its caller reaps; `spare`, a
/// child of the caller's own that it ends itself ([`Keeper`]). Kept out of
/// the spawner's module: its code is not on the spawner's hot path.
#[cold]
#[inline(never)]
pub fn end_orphans(sig: i32, command: u64, spare: Option<u32>) {
    let start = std::time::Instant::now();
    let mut sent: Vec<u32> = Vec::new();
    loop {
        let orphans: Vec<u32> = children()
            .into_iter()
            .filter(|&p| u64::from(p) != command && Some(p) != spare && !reap_now(p))
            .collect();
        if orphans.is_empty() {
            return;
        }
        let late = start.elapsed() >= ORPHANS_GRACE;
        for p in orphans {
            if late {
                let _ = kill(p, libc::SIGKILL);
            } else if !sent.contains(&p) {
                sent.push(p);
                let _ = kill(p, sig);
            }
        }
        if start.elapsed() >= 4 * ORPHANS_GRACE {
            // Killed and still there: not ours to wait for longer.
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Moves descriptor `fd` back to the start of its file: a command's stdin
/// read anew by every run.
#[inline]
pub fn rewind(fd: std::os::fd::RawFd) -> io::Result<()> {
    // SAFETY: lseek takes plain integers and touches no memory of ours.
    let at = unsafe { libc::lseek(fd, 0, libc::SEEK_SET) };
    if at < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Empties the file behind descriptor `fd` (opened for appending, the next
/// write lands at its start): a command's output file, before each run.
#[inline]
pub fn truncate_to_empty(fd: std::os::fd::RawFd) -> io::Result<()> {
    // SAFETY: ftruncate takes plain integers and touches no memory of ours.
    cvt(unsafe { libc::ftruncate(fd, 0) }).map(|_| ())
}

/// A pipe whose ends are close-on-exec: `(read, write)`.
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    use std::os::fd::FromRawFd;
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    cvt(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    // SAFETY: pipe2 succeeded, so both descriptors are open and ours alone.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether child `pid` has exited (without reaping it).
    fn exited(pid: u32) -> bool {
        // SAFETY: siginfo_t is plain data; zeroed is a valid value.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: `info` is valid and writable for the call.
        let ret = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT | libc::WNOHANG,
            )
        };
        // SAFETY: waitid filled `info` (si_pid stays 0 when none exited).
        ret == 0 && unsafe { info.si_pid() } != 0
    }

    #[test]
    fn gated_child_waits_for_its_io_to_be_opened() {
        let argv = [OsString::from("/bin/true")];
        let pre = PreExec {
            gate: true,
            open_io: true,
            ..PreExec::default()
        };
        let mut child = spawn(&argv, pre).expect("spawn /bin/true");
        assert!(
            matches!(child.io, Some(Ok(_))),
            "/proc/PID/io opened while the child is held: {:?}",
            child.io
        );
        std::thread::sleep(Duration::from_millis(100));
        assert!(!exited(child.pid), "the child ran past the gate");
        child.release();
        wait_exited_keep(child.pid).expect("waitid");
        assert!(child.outcome().exec_error.is_none());
        let (exit, _) = wait4(child.pid).expect("wait4");
        assert_eq!(exit, Exit::Code(0));
    }

    /// A gated child's start was the parent's: its schedstat, read at the
    /// gate, missed a wait for a CPU the child was still in, which then
    /// fell into the clock's interval (parts of `/bin/true` at 106–116%
    /// of its wall time under two busy loops).
    #[test]
    fn a_gated_child_says_its_own_start_after_the_gate() {
        let argv = [OsString::from("/bin/true")];
        let pre = PreExec {
            gate: true,
            ..PreExec::default()
        };
        let mut child = spawn(&argv, pre).expect("spawn /bin/true");
        std::thread::sleep(Duration::from_millis(20));
        child.release();
        let released = child.released_ns;
        wait_exited_keep(child.pid).expect("waitid");
        let end = super::super::monotonic_ns();
        let outcome = child.outcome();
        assert!(outcome.exec_error.is_none());
        assert!(
            outcome.started_ns >= released && outcome.started_ns <= end,
            "the child's start {} lies between its release {released} and its exit {end}",
            outcome.started_ns
        );
        let (text, len) = outcome.started_sched.expect("the child read its schedstat");
        let text = std::str::from_utf8(&text[..len]).expect("schedstat text");
        assert_eq!(text.split_ascii_whitespace().count(), 3, "{text:?}");
        assert!(outcome.started_on_cpu_ns.is_some_and(|ns| ns > 0));
        // The gate's byte and the schedstat, read; the record, written.
        assert_eq!(outcome.pre_exec_reads, (1 + len as u64, 2));
        assert_eq!(outcome.pre_exec_writes, (STARTED_LEN as u64, 1));
        let (exit, _) = wait4(child.pid).expect("wait4");
        assert_eq!(exit, Exit::Code(0));
    }

    #[test]
    fn a_start_comes_back_as_it_was_said_and_an_errno_after_it() {
        let mut said = Started {
            clock_ns: 123_456_789_012,
            on_cpu_ns: 4_567,
            read_bytes: 17,
            read_calls: 2,
            write_bytes: STARTED_LEN as u32,
            write_calls: 1,
            sched: [0; SCHED_TEXT],
            sched_len: 14,
        };
        said.sched[..14].copy_from_slice(b"1234 5678 9\n\0\0");
        let mut bytes = said.encode().to_vec();
        let (back, errno) = started_and_errno(&bytes);
        assert_eq!(
            (back.clock_ns, back.on_cpu_ns),
            (said.clock_ns, said.on_cpu_ns)
        );
        assert_eq!((back.read_bytes, back.read_calls), (17, 2));
        assert_eq!(
            (back.write_bytes, back.write_calls),
            (STARTED_LEN as u32, 1)
        );
        assert_eq!((back.sched, back.sched_len), (said.sched, 14));
        assert_eq!(errno, None);
        bytes.extend_from_slice(&libc::ENOENT.to_ne_bytes());
        assert_eq!(started_and_errno(&bytes).1, Some(libc::ENOENT));
        // A failure before the start was said: the errno alone.
        let (nothing, errno) = started_and_errno(&libc::EACCES.to_ne_bytes());
        assert_eq!((nothing.clock_ns, errno), (0, Some(libc::EACCES)));
        // A record cut short, or one whose text length is beyond its text.
        assert_eq!(started_and_errno(&bytes[..10]).0.clock_ns, 0);
        let mut bad = said;
        bad.sched_len = SCHED_TEXT;
        assert_eq!(started_and_errno(&bad.encode()).0.clock_ns, 0);
    }
}
