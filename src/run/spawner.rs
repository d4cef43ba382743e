//! Runs measured from a small process of their own: `tally compare`'s.
//!
//! Forking tally for every run costs: the page tables of tally's memory are
//! copied, every page tally writes next is faulted in again, and the copy
//! is torn down at `exec` (about 0.2 ms of CPU per run of `/bin/true`
//! here). `posix_spawn` avoids all three by letting the child share the
//! parent's memory until `exec`, but then the kernel carries the parent's
//! own peak resident set into the child's `ru_maxrss`, and tally's (some
//! 5 MB) is larger than many commands'.
//!
//! So the runs are started by a spawner: tally re-executed (`SERVE_ARG`),
//! which drops the resident pages of its program text and resets its peak
//! (see [`crate::sys::shed`]), then starts each command sharing its memory
//! ([`crate::sys::process::spawn_prepared`]). Its loop's code is kept
//! together by the linker (link/run-hot-path.order), so its peak stays at
//! a few hundred kB, below any program linked with a C library. Read
//! right after each command's exec, its peak bounds what the kernel
//! carried into that command's: tally flags a run whose peak is not above
//! it, whose figure is then an upper bound.
//!
//! The protocol, over a socket pair given to the spawner as descriptor 3:
//! tally sends a `Setup` (a `u32` length, then JSON); the spawner answers
//! one byte once it is ready (tally forks the runs itself when it does
//! not); then tally sends one little-endian `u32` per run, the index of
//! the command, and the spawner answers each request, in order, with
//! `FIELDS` little-endian `u64` and the texts the run's figures are read
//! from (its `/proc/PID/io` and `/proc/PID/schedstat`, its group's
//! pressure before and after it, the group's `cgroup.procs`), read as a
//! [`Reply`]: tally parses them, the spawner only copies bytes. tally asks
//! for runs a stretch at a time (at most [`STRETCH_MOST`], all its
//! requests in one write); the spawner sends each answer as soon as its
//! run is finished, and once it has no request left it announces them (a
//! little-endian `u32`, their count, on a second socket, descriptor 4)
//! and waits for tally's acknowledgement (one byte there) before it reads
//! more. Where the socket cannot hold a stretch's answers it announces
//! those it holds, and goes on once tally has read them.
//!
//! Nothing of the spawner's runs beside a command: it finishes each run
//! (reads its figures, reaps it) once the command has exited and before
//! the next starts, and the command's clock starts in the child, its last
//! step before `exec` ([`sys::process::Spawned::outcome`]), so that the
//! clone and the child's preparations are outside it too.
//!
//! The breakdown's group: tally makes one for the whole comparison and
//! gives its directory as descriptor 5; every command is cloned straight
//! into it ([`sys::process::PreExec::cgroup_dir`]), and the group's
//! cumulative pressure totals are read after each run, the reading after
//! one run being the next one's start (nothing runs in the group between
//! runs; after a run that left processes in it, tally moves them out and
//! the spawner reads the start again). A process of the spawner's own,
//! asleep ([`sys::process::Keeper`]), stays in the group from the first
//! run to the last: a group emptied and filled again at every run cost
//! each run of `/bin/true` 8–15 µs more on the 2-core VM (a C loop of
//! `clone3(CLONE_INTO_CGROUP)`; docs/BENCHMARKS.md). It stalls on
//! nothing, so the group's pressure is its commands' alone. It keeps the
//! group's `populated` at 1, so what a run left is read from
//! `cgroup.procs` (the keeper alone) and `cgroup.stat` (no group below)
//! instead, and tally, moving what a run left, spares it.
//!
//! No run may be measured differently for its place in the order, so
//! tally's own work on an answer (decoding, storing, planning, asking for
//! more) never overlaps a run: it sleeps on the announcements, not on the
//! answers, so that nothing wakes it while a stretch runs, and the
//! spawner starts nothing until tally, done with the answers announced
//! and about to wait for more, has acknowledged them. Its work still
//! slows the run right after it: with every answer acknowledged before
//! the next run (as before runs were asked for in stretches), every run
//! was such a run,
//! and `/bin/true`'s took 5% longer than the runs of a stretch (its
//! command 30–40 µs more on a CPU, and preempted once by tally on its way
//! to sleep); in a stretch only the first is, as the first run after a
//! speed probe always was, which tally makes between stretches. A stretch
//! ends at the next probe, at a round after which the number of runs is
//! decided (without `--runs`), and after 100 ms of runs at most, so that
//! the answers and the progress shown keep coming (`compare::runner`'s
//! `Session::stretch`); where tally works before or after each run
//! (hooks, evictions, warming) every stretch is one run. When answers
//! went out in batches of 32 during the next run, the run right after
//! each batch took 1.2–1.36× the others' wall time
//! (benches/compare_positions.py; tests/compare_cli.rs checks every
//! period and phase). Between stretches the spawner looks for the
//! acknowledgement a short while before it sleeps on it
//! (`Outbox::POLL_ACK_NS`). It waits before it clones the next command: a
//! command cloned while tally still works is placed beside the spawner,
//! and `exec`'s balancing then moves it to the CPU tally has left, inside
//! its clock (tried: the command's child waiting for the acknowledgement
//! itself cost 4% less per run and added 5% to `/bin/true`'s wall time;
//! docs/BENCHMARKS.md).
//!
//! The spawner stays on one CPU, the one tally is on when it starts it
//! (where they may run on more), and each command is let run on all of
//! tally's CPUs again in its child, before its clock starts
//! ([`sys::process::PreExec::cpus`]). Free to move, the spawner was woken
//! wherever the kernel chose, so that a run's exit, tally's answer and
//! the next clone crossed between CPUs, each crossing waking an idle
//! virtual CPU. When tally has no work of its own between runs, the
//! thread that reads the answers is kept on that CPU too
//! ([`Spawner::keep_caller_beside`]; its speed probes are made on each
//! CPU in turn and it is kept there again after each), and the spawner
//! then sleeps on each acknowledgement at once: looking for it would keep
//! tally, on the same CPU, from sending it. `compare -N -n 500` of
//! `/bin/true` twice, with its JSON: 1.168× hyperfine's time per run
//! before, 1.083× with the spawner kept, 1.060× with tally's thread kept
//! too (medians of 12 interleaved repetitions, docs/BENCHMARKS.md; the
//! gaps between runs: a quarter of them 100 µs longer before, when
//! tally's thread was woken on the other CPU). Hooks, evictions and
//! warming start processes and threads from that thread, which would be
//! kept too: with those it moves freely, as tally's other threads do.
//!
//! After a run that failed (unless failures are
//! measured too), was interrupted, or could not start, it runs nothing
//! more and answers [`Reply::Skipped`].
//!
//! Each command leads a process group of its own, so that a forwarded
//! signal reaches the processes it started too (a shell waiting for its
//! foreground child does not end on SIGINT before that child does); not
//! when a stream is a terminal: a command outside the terminal's
//! foreground group would be stopped reading from it, and the terminal's
//! signals reach the commands in tally's group anyway. What an interrupted command
//! started and left running is sent the signal too, then killed (see
//! [`sys::process::end_orphans`]), before its run is answered. It exits at the end of the
//! requests, and with tally (`PR_SET_PDEATHSIG`), taking a running command
//! with it.

use std::ffi::OsString;
use std::io::{self, BufReader, IsTerminal, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

use serde::{Deserialize, Serialize};

use super::RunError;
use super::report::RunRecord;
use crate::sys;
use crate::sys::process::{ChildUsage, Exit, PreExec, Prepared};
use crate::sys::signals::Forwarder;

/// The argument that makes `tally` a spawner (see the module's text).
pub const SERVE_ARG: &str = "__tally-spawner";

/// The most runs tally asks for in one stretch (see the module's text):
/// their answers, some 1.3 kB each, fit in the socket (see
/// `SOCKET_ROOM`); where they do not, the spawner announces those that
/// do, and goes on once tally has read them.
pub const STRETCH_MOST: usize = 100;

/// The room asked for in the answers' socket: a stretch of the longest
/// answers. The kernel gives at most `net.core.wmem_max` (212,992 bytes
/// by default), some 90 answers of `/bin/true`.
const SOCKET_ROOM: usize = STRETCH_MOST * (FIELDS * 8 + TEXTS_LEN);

/// The requests the spawner takes in with one `recv`.
const INBOX: usize = 64;

/// The byte the spawner sends once it is ready to serve.
const READY: u8 = 0x52;

/// The spawner's descriptor of its socket.
const FD: i32 = 3;

/// The spawner's descriptor of the socket tally acknowledges batches on.
const ACK_FD: i32 = 4;

/// The spawner's descriptor of the runs' cgroup directory, when
/// [`Setup::group`] says there is one.
const GROUP_FD: i32 = 5;

/// What the spawner is told once, first.
#[derive(Debug, Serialize, Deserialize)]
struct Setup {
    /// The commands, as bytes (arguments need not be UTF-8).
    commands: Vec<Vec<Vec<u8>>>,
    /// Stop at the first run that exits non-zero or is killed.
    stop_on_failure: bool,
    /// tally's pid: the spawner dies with it.
    parent: u32,
    /// Before every run, move stdin (a file) back to its start, so that
    /// each run reads it whole (`--input`).
    #[serde(default)]
    rewind_stdin: bool,
    /// Before every run, empty stdout (a file opened for appending, shared
    /// with stderr), so that it holds the last run's output
    /// (`--command-output FILE`).
    #[serde(default)]
    truncate_stdout: bool,
    /// Descriptor 5 is the directory of the cgroup the commands are
    /// cloned into.
    #[serde(default)]
    group: bool,
    /// The CPU the spawner stays on (see the module's text); `None`: it
    /// is left free to move.
    #[serde(default)]
    cpu: Option<usize>,
    /// tally's thread is kept on that CPU too: the spawner does not look
    /// for its acknowledgement before it sleeps on it
    /// ([`Outbox::POLL_ACK_NS`]), which would keep tally from sending it.
    #[serde(default)]
    beside: bool,
}

/// The [`Setup`] frame: a `u32` length, then JSON.
fn write_frame<T: Serialize>(out: &mut impl Write, value: &T, buf: &mut Vec<u8>) -> io::Result<()> {
    buf.clear();
    buf.extend_from_slice(&[0; 4]);
    serde_json::to_writer(&mut *buf, value).map_err(io::Error::other)?;
    let len = u32::try_from(buf.len() - 4).map_err(|_| io::Error::other("a frame over 4 GiB"))?;
    buf[..4].copy_from_slice(&len.to_le_bytes());
    out.write_all(buf)
}

fn read_frame<T: for<'de> Deserialize<'de>>(input: &mut impl Read) -> io::Result<T> {
    let mut len = [0u8; 4];
    input.read_exact(&mut len)?;
    let mut body = vec![0u8; u32::from_le_bytes(len) as usize];
    input.read_exact(&mut body)?;
    serde_json::from_slice(&body).map_err(io::Error::other)
}

/// The spawner's answer to one request, as tally reads it.
#[derive(Debug)]
pub enum Reply {
    /// The run, the spawner's own peak resident set (kB) read just after
    /// the command's exec, when it could be (at least what the kernel
    /// carried into the command's peak), and the run's stretch of time.
    Ran(Box<RunRecord>, Option<u64>, Option<Stretch>),
    /// Not run: the spawner had stopped (see the module's text), or a
    /// signal (named) came before the run.
    Skipped { signal: Option<String> },
    /// The run could not be made.
    Error(RunError),
}

/// When a run started and ended, in CLOCK_MONOTONIC ns, and when the
/// spawner had answered it, before the next run started (the spawner
/// finishes each run before it starts the next, so no later run's moment
/// comes before it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stretch {
    pub start_ns: u64,
    pub end_ns: u64,
    pub next_start_ns: Option<u64>,
}

/// The fields of an answer on the wire: this many little-endian `u64`,
/// then the texts of [`SLOTS`], each as long as its field says. Written
/// and read only by [`encode`] and [`read_answer`].
const FIELDS: usize = 40;
const KIND: usize = 0;
const WALL_NS: usize = 1;
const PID: usize = 2;
const EXEC_ERRNO: usize = 3;
const SIGNALED: usize = 4;
const EXIT_VALUE: usize = 5;
const CORE: usize = 6;
const USER_US: usize = 7;
const SYSTEM_US: usize = 8;
const MAX_RSS_KIB: usize = 9;
const MINOR: usize = 10;
const MAJOR: usize = 11;
const VOLUNTARY: usize = 12;
const INVOLUNTARY: usize = 13;
const BLOCK_IN: usize = 14;
const BLOCK_OUT: usize = 15;
const FORWARDED: usize = 16;
const ESCALATED: usize = 17;
const PEAK_KIB: usize = 18;
const IO_STATE: usize = 19;
const IO_ERRNO: usize = 20;
/// When the run started and ended, and when it was answered, in
/// CLOCK_MONOTONIC ns (see [`Stretch`]).
const START_NS: usize = 21;
const END_NS: usize = 22;
const ANSWERED_NS: usize = 23;
/// Whether the command ran in the group (`JOINED_*`), and the kernel's
/// errno when it ran outside.
const JOINED: usize = 24;
const JOIN_ERRNO: usize = 25;
/// The lengths of the texts of [`SLOTS`] (or `TEXT_FAILED` with the
/// errno of their read).
const IO_LEN: usize = 26;
const SCHED_LEN: usize = 27;
const CPU_BEFORE: usize = 28;
const CPU_AFTER: usize = 31;
const PROCS_LEN: usize = 34;
/// The command's process's schedstat text and time on a CPU just before
/// `exec` (see [`sys::process::Outcome::started_sched`]).
const SCHED_START_LEN: usize = 35;
const START_ON_CPU_NS: usize = 36;
/// What tally read in the command's process before `exec`: bytes, calls
/// (see [`sys::process::Outcome::pre_exec_reads`]).
const PRE_READ_BYTES: usize = 37;
const PRE_READ_CALLS: usize = 38;
/// 1 when the run may have left processes in the group or below it: its
/// `cgroup.procs` holds another than the keeper's, or its `cgroup.stat`
/// counts groups below, or either could not be read (see [`Group`]).
const LEFT: usize = 39;
/// `KIND` values.
const RAN: u64 = 0;
const SKIPPED: u64 = 1;
const FAILED: u64 = 2;
/// `IO_STATE` values.
const IO_TEXT: u64 = 0;
const IO_OPEN_FAILED: u64 = 1;
const IO_READ_FAILED: u64 = 2;
/// Read through a descriptor opened after the exit (root's way).
const IO_TEXT_AT_EXIT: u64 = 3;
/// `JOINED` values.
const JOINED_NOT_ASKED: u64 = 0;
const JOINED_IN: u64 = 1;
const JOINED_OUTSIDE: u64 = 2;
/// Set in a text's length field: the text could not be read, and the
/// rest of the field is the errno.
const TEXT_FAILED: u64 = 1 << 62;
/// The most `/proc/PID/io` text sent.
const IO_MAX: usize = 1024;
/// The most of the other texts: `/proc/PID/schedstat` (three numbers),
/// a pressure file (two lines), `cgroup.events`.
const SCHED_MAX: usize = 96;
const PRESSURE_MAX: usize = 256;
const PROCS_MAX: usize = 128;
/// The texts an answer carries after its fields, in order: the field of
/// each one's length, and its most bytes. The pressure files: `cpu`, `io`
/// and `memory`, before the run then after it.
const SLOTS: [(usize, usize); 10] = [
    (IO_LEN, IO_MAX),
    (SCHED_LEN, SCHED_MAX),
    (CPU_BEFORE, PRESSURE_MAX),
    (CPU_BEFORE + 1, PRESSURE_MAX),
    (CPU_BEFORE + 2, PRESSURE_MAX),
    (CPU_AFTER, PRESSURE_MAX),
    (CPU_AFTER + 1, PRESSURE_MAX),
    (CPU_AFTER + 2, PRESSURE_MAX),
    (PROCS_LEN, PROCS_MAX),
    (SCHED_START_LEN, sys::process::SCHED_TEXT),
];
/// Where each slot's text starts in [`Texts`], and their whole length.
const fn slot_starts() -> ([usize; SLOTS.len()], usize) {
    let mut at = [0usize; SLOTS.len()];
    let mut i = 0;
    let mut next = 0;
    while i < SLOTS.len() {
        at[i] = next;
        next += SLOTS[i].1;
        i += 1;
    }
    (at, next)
}
const SLOT_AT: [usize; SLOTS.len()] = slot_starts().0;
const TEXTS_LEN: usize = slot_starts().1;

/// The texts of one answer, each in its slot ([`SLOTS`]), with the slots'
/// places: a copy of [`SLOTS`] and [`SLOT_AT`] in this (writable) memory,
/// so that the spawner's loop reads no page of constants, each of which
/// would fault in a window of the program's read-only data and raise the
/// spawner's peak (see the module's text).
struct Texts {
    buf: [u8; TEXTS_LEN],
    /// Each slot's length field, room and start.
    field: [usize; SLOTS.len()],
    room: [usize; SLOTS.len()],
    at: [usize; SLOTS.len()],
}

impl Texts {
    fn new() -> Texts {
        // Through `black_box`: copies the optimizer cannot fold back into
        // the constants.
        let slots = std::hint::black_box(SLOTS);
        Texts {
            buf: [0u8; TEXTS_LEN],
            field: slots.map(|s| s.0),
            room: slots.map(|s| s.1),
            at: std::hint::black_box(SLOT_AT),
        }
    }

    /// Slot `i`'s room.
    fn slot(&mut self, i: usize) -> &mut [u8] {
        let (at, room) = (self.at[i], self.room[i]);
        &mut self.buf[at..at + room]
    }

    /// The length of slot `i`'s text that its field gives (0 for a text
    /// that could not be read).
    fn len(&self, fields: &[u64; FIELDS], i: usize) -> usize {
        let v = fields[self.field[i]];
        if v & TEXT_FAILED != 0 {
            0
        } else {
            (v as usize).min(self.room[i])
        }
    }
}

/// The length field of a text read into a slot: its length, or
/// `TEXT_FAILED` with the errno (a text that fills its slot may be cut,
/// and is refused: `EOVERFLOW`).
fn text_field(read: io::Result<usize>, room: usize) -> u64 {
    match read {
        Ok(n) if n < room => n as u64,
        Ok(_) => TEXT_FAILED | libc::EOVERFLOW as u64,
        Err(e) => TEXT_FAILED | e.raw_os_error().unwrap_or(libc::EIO) as u64,
    }
}

/// A file of the group or of /proc read whole with one `pread` from its
/// start: these kernel files make their whole text at the first read, so
/// one shorter than `buf` is all of it (see [`text_field`]).
#[inline(never)]
fn read_once(file: &std::fs::File, buf: &mut [u8]) -> io::Result<usize> {
    use std::os::unix::fs::FileExt;
    loop {
        match file.read_at(buf, 0) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// Answers as the spawner sends them: each goes into the socket as soon
/// as its run is finished, and tally is told how many are there (an
/// announcement, a little-endian `u32` on the acknowledgement socket) only
/// when the spawner has no request left, or when the socket is full. tally
/// sleeps on the announcements, not on the answers, so that it is not
/// woken while the runs of a stretch go on; the spawner starts no run
/// while an announcement is not acknowledged (see the module's text).
struct Outbox {
    /// The answer being sent.
    buf: Vec<u8>,
    /// Where the answers go (the requests' socket).
    sock: UnixStream,
    /// Where they are announced and acknowledged.
    ack: UnixStream,
    /// Answers whole in the socket and not announced yet.
    unannounced: u32,
    /// Announcements tally has not acknowledged yet.
    acks_owed: u32,
    /// How long to look for the acknowledgement before sleeping on it
    /// ([`Outbox::POLL_ACK_NS`], or 0 on one CPU).
    poll_ack_ns: u64,
    /// Where a run's texts are read, before its answer.
    texts: Texts,
    /// `/proc/self/status`, for the spawner's own peak.
    status: Option<std::fs::File>,
    /// `schedstat` and `io`, the names of the /proc files of a run read
    /// in the loop, here rather than constants (see [`Texts`]).
    sched_name: [u8; 9],
    io_name: [u8; 2],
}

impl Outbox {
    /// How long the spawner looks for tally's acknowledgement, without
    /// sleeping, before it sleeps on it: tally acknowledges some 20 µs
    /// after an answer here, and a spawner asleep by then is woken by the
    /// acknowledgement, which on a virtual machine waits for its CPU to
    /// be woken too. Looking cut `compare`'s time per run of `/bin/true`
    /// from 440 to 428 µs (hyperfine: 405 µs; medians of 10 interleaved
    /// repetitions of 1,000 runs), when every answer was acknowledged.
    /// Between runs only, so nothing of it is beside a command; at most
    /// this long when tally is slow to answer (a busy machine), after
    /// which the spawner sleeps as before.
    const POLL_ACK_NS: u64 = 100_000;

    /// An empty outbox sending on `sock` and announcing on `ack`, with the
    /// files it reads around each run open.
    fn new(sock: UnixStream, ack: UnixStream, beside_tally: bool) -> Outbox {
        Outbox {
            buf: Vec::with_capacity(FIELDS * 8 + TEXTS_LEN),
            sock,
            ack,
            unannounced: 0,
            acks_owed: 0,
            // Looked for only where tally can run beside the spawner: on one
            // CPU the spawner's looking would keep tally from acknowledging.
            poll_ack_ns: if !beside_tally && sys::cpu::allowed_cpu_count().is_ok_and(|n| n > 1) {
                Outbox::POLL_ACK_NS
            } else {
                0
            },
            texts: Texts::new(),
            status: std::fs::File::open("/proc/self/status").ok(),
            sched_name: std::hint::black_box(*b"schedstat"),
            io_name: std::hint::black_box(*b"io"),
        }
    }

    /// Sends an answer: the fields, then the texts they give lengths of.
    /// Where the socket cannot take all of it at once, the answers before
    /// it are announced, and tally's reading them makes the room.
    fn push(&mut self, fields: &[u64; FIELDS]) -> io::Result<()> {
        self.buf.clear();
        encode(fields, &self.texts, &mut self.buf);
        let sent = sys::process::send_now(&self.sock, &self.buf)?.unwrap_or(0);
        if sent < self.buf.len() {
            self.announce()?;
            (&self.sock).write_all(&self.buf[sent..])?;
        }
        self.unannounced += 1;
        Ok(())
    }

    /// Tells tally how many answers wait in the socket, if any do: the
    /// spawner then starts no run until tally has acknowledged them.
    fn announce(&mut self) -> io::Result<()> {
        if self.unannounced == 0 {
            return Ok(());
        }
        (&self.ack).write_all(&self.unannounced.to_le_bytes())?;
        self.unannounced = 0;
        self.acks_owed += 1;
        Ok(())
    }

    /// Waits until tally has acknowledged every announcement, if it has
    /// not yet: from then on tally waits, and a run has the machine to
    /// itself. `false` when tally has gone.
    fn acknowledged(&mut self) -> io::Result<bool> {
        let mut bytes = [0u8; 16];
        if self.acks_owed > 0 && self.poll_ack_ns > 0 {
            let until = sys::monotonic_ns().saturating_add(self.poll_ack_ns);
            while self.acks_owed > 0 {
                let room = (self.acks_owed as usize).min(bytes.len());
                match sys::process::recv_now(&self.ack, &mut bytes[..room])? {
                    Some(0) => return Ok(false),
                    Some(n) => self.acks_owed -= n as u32,
                    None if sys::monotonic_ns() >= until => break,
                    None => std::hint::spin_loop(),
                }
            }
        }
        while self.acks_owed > 0 {
            let room = (self.acks_owed as usize).min(bytes.len());
            match (&self.ack).read(&mut bytes[..room]) {
                Ok(0) => return Ok(false),
                Ok(n) => self.acks_owed -= n as u32,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }
}

/// The length of slot `i`'s text that its field gives (0 for a text that
/// could not be read), on tally's side (the spawner's is [`Texts::len`]).
fn text_len(fields: &[u64; FIELDS], i: usize) -> usize {
    let (field, most) = SLOTS[i];
    let v = fields[field];
    if v & TEXT_FAILED != 0 {
        0
    } else {
        (v as usize).min(most)
    }
}

/// Appends an answer: the fields, then each slot's text.
fn encode(fields: &[u64; FIELDS], texts: &Texts, out: &mut Vec<u8>) {
    for f in fields {
        out.extend_from_slice(&f.to_le_bytes());
    }
    for i in 0..SLOTS.len() {
        let at = texts.at[i];
        out.extend_from_slice(&texts.buf[at..at + texts.len(fields, i)]);
    }
}

/// An answer as read: its fields and each slot's text.
fn read_answer(input: &mut impl Read) -> io::Result<([u64; FIELDS], Vec<Vec<u8>>)> {
    let mut raw = [0u8; FIELDS * 8];
    input.read_exact(&mut raw)?;
    let mut fields = [0u64; FIELDS];
    for (f, chunk) in fields.iter_mut().zip(raw.chunks_exact(8)) {
        *f = u64::from_le_bytes(chunk.try_into().unwrap_or_default());
    }
    let mut texts = Vec::with_capacity(SLOTS.len());
    for &(field, most) in &SLOTS {
        let v = fields[field];
        if v & TEXT_FAILED == 0 && v as usize > most {
            return Err(io::Error::other(
                "an answer of tally's spawner is malformed",
            ));
        }
        let mut text = vec![0u8; text_len(&fields, texts.len())];
        input.read_exact(&mut text)?;
        texts.push(text);
    }
    Ok((fields, texts))
}

fn errno_of(v: u64) -> io::Error {
    io::Error::from_raw_os_error(i32::try_from(v).unwrap_or(libc::EIO))
}

fn signal_of(v: u64) -> Option<String> {
    (v != 0).then(|| sys::signal_name(i32::try_from(v).unwrap_or(0)))
}

/// Slot `i`'s text as read, or the error reading it.
fn text_of<'t>(fields: &[u64; FIELDS], texts: &'t [Vec<u8>], i: usize) -> io::Result<&'t str> {
    let v = fields[SLOTS[i].0];
    if v & TEXT_FAILED != 0 {
        return Err(errno_of(v & !TEXT_FAILED));
    }
    let text = texts.get(i).map(Vec::as_slice).unwrap_or_default();
    std::str::from_utf8(text).map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not text"))
}

/// Where the runs' group is (for its texts), or why there is none.
pub type GroupAt = Result<std::path::PathBuf, String>;

/// tally's reading of an answer to a run of `argv`; `group` is the runs'
/// group.
fn decode(fields: &[u64; FIELDS], texts: &[Vec<u8>], argv: &[OsString], group: &GroupAt) -> Reply {
    let program = || {
        argv.first()
            .map(|p| crate::text::path::display(std::path::Path::new(p)))
            .unwrap_or_default()
    };
    match fields[KIND] {
        SKIPPED => {
            return Reply::Skipped {
                signal: signal_of(fields[FORWARDED]),
            };
        }
        FAILED => {
            return Reply::Error(RunError::Spawn {
                program: program(),
                source: errno_of(fields[EXEC_ERRNO]),
            });
        }
        _ => {}
    }
    if fields[EXEC_ERRNO] != 0 {
        return Reply::Error(super::exec_failure(
            argv,
            program(),
            errno_of(fields[EXEC_ERRNO]),
        ));
    }
    let pid = u32::try_from(fields[PID]).unwrap_or(0);
    let io = texts.first().map(Vec::as_slice).unwrap_or_default();
    let figures = match fields[IO_STATE] {
        IO_TEXT_AT_EXIT => match crate::procfs::io::parse(&String::from_utf8_lossy(io)) {
            Some(c) => (
                Some(c),
                Some(super::report::IoSource::ProcPidIoOpenedAtExit),
                None,
            ),
            None => super::io_figures(pid, Some(Ok(String::new())), false),
        },
        IO_TEXT => super::io_figures(
            pid,
            Some(Ok(String::from_utf8_lossy(io).into_owned())),
            false,
        ),
        IO_OPEN_FAILED => {
            super::io_figures(pid, Some(Err((false, errno_of(fields[IO_ERRNO])))), false)
        }
        _ => super::io_figures(pid, Some(Err((true, errno_of(fields[IO_ERRNO])))), false),
    };
    let exit = if fields[SIGNALED] != 0 {
        Exit::Signal {
            signal: i32::try_from(fields[EXIT_VALUE]).unwrap_or(0),
            core_dumped: fields[CORE] != 0,
        }
    } else {
        Exit::Code(i32::try_from(fields[EXIT_VALUE]).unwrap_or(-1))
    };
    let us = std::time::Duration::from_micros;
    let usage = ChildUsage {
        user: us(fields[USER_US]),
        system: us(fields[SYSTEM_US]),
        max_rss_kib: fields[MAX_RSS_KIB],
        minor_faults: fields[MINOR],
        major_faults: fields[MAJOR],
        voluntary_switches: fields[VOLUNTARY],
        involuntary_switches: fields[INVOLUNTARY],
        block_input: fields[BLOCK_IN],
        block_output: fields[BLOCK_OUT],
    };
    // A shared spawn's child says its start in memory: it writes nothing.
    let figures = super::less_tallys_io(
        figures,
        (fields[PRE_READ_BYTES], fields[PRE_READ_CALLS]),
        (0, 0),
    );
    let mut record = super::plain_record(
        std::time::Duration::from_nanos(fields[WALL_NS]),
        exit,
        &usage,
        figures,
        signal_of(fields[FORWARDED]),
        fields[ESCALATED] != 0,
    );
    record.why = Some(why_of(fields, texts, &usage, group));
    Reply::Ran(
        Box::new(record),
        (fields[PEAK_KIB] != 0).then_some(fields[PEAK_KIB]),
        Some(Stretch {
            start_ns: fields[START_NS],
            end_ns: fields[END_NS],
            next_start_ns: (fields[ANSWERED_NS] != 0).then_some(fields[ANSWERED_NS]),
        }),
    )
}

/// The breakdown of a spawner's run, from its schedstat and its group's
/// pressure before and after it, as `tally run`'s is made.
fn why_of(
    fields: &[u64; FIELDS],
    texts: &[Vec<u8>],
    usage: &ChildUsage,
    group: &GroupAt,
) -> super::report::Why {
    let pid = u32::try_from(fields[PID]).unwrap_or(0);
    let sched = super::why::sched_of(pid, text_of(fields, texts, 1));
    let before_exec = super::why::before_exec(
        text_of(fields, texts, 9).ok(),
        (fields[START_ON_CPU_NS] != 0).then_some(fields[START_ON_CPU_NS]),
    );
    let pressures = match group {
        Err(why) => Err(super::group::no_group(why)),
        Ok(path) => {
            let read = |from: usize| [0, 1, 2].map(|k| text_of(fields, texts, from + k));
            let before = super::group::Pressures::of_texts(path, read(2));
            let after = super::group::Pressures::of_texts(path, read(5));
            let joined = match fields[JOINED] {
                JOINED_OUTSIDE => sys::process::Joined::Outside(errno_of(fields[JOIN_ERRNO])),
                JOINED_IN => sys::process::Joined::Cloned,
                _ => sys::process::Joined::NotAsked,
            };
            super::group::outside(&joined).map(|()| after.since(&before))
        }
    };
    let (cpu_pressure, io_pressure, memory_pressure) = match pressures {
        Ok(p) => (p.cpu, p.io, p.memory),
        Err(why) => (Err(why.clone()), Err(why.clone()), Err(why)),
    };
    let io_unavailable = io_pressure.as_ref().err().cloned();
    let nanos = |d: std::time::Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    let mut why = super::why::assemble(&super::why::Raw {
        wall_ns: fields[WALL_NS],
        user_ns: nanos(usage.user),
        system_ns: nanos(usage.system),
        sched,
        before_exec,
        cpu_pressure,
        io_pressure,
        memory_pressure,
        io_delayacct: None,
        machine: None,
    });
    // Delay accounting is not read for the spawner's runs.
    if why.io_wait_ns.is_none() {
        why.unavailable.io_wait_ns = io_unavailable;
    }
    why
}

/// Whether the run may have left processes in the group or below it (see
/// `LEFT`).
fn left_processes(fields: &[u64; FIELDS]) -> bool {
    fields[LEFT] != 0
}

/// The spawner's `main`: serves tally's requests until they end. Returns
/// the exit code (0 at the end of the requests).
pub fn serve() -> u8 {
    match serve_requests() {
        Ok(()) => 0,
        Err(_) => 1,
    }
}

/// A run that has ended, its command still a zombie: what is left to
/// read, reap and answer, done before the next run starts.
struct Ended {
    /// `None` when it could not start.
    spawned: Option<sys::process::Spawned>,
    f: [u64; FIELDS],
    /// The command's schedstat text just before `exec`, and its length.
    sched_start: Option<([u8; sys::process::SCHED_TEXT], usize)>,
}

/// The files of the runs' group the spawner reads (see [`Group::files`]).
const GROUP_FILES: [&std::ffi::CStr; 5] = [
    c"cpu.pressure",
    c"io.pressure",
    c"memory.pressure",
    c"cgroup.procs",
    c"cgroup.stat",
];

/// The runs' group as the spawner reads it: its directory (the commands
/// are cloned into it), its pressure files and `cgroup.events` (opened
/// once, read from their start after every run).
struct Group {
    dir: std::fs::File,
    /// `cpu.pressure`, `io.pressure`, `memory.pressure`, `cgroup.procs`,
    /// `cgroup.stat`.
    files: [io::Result<std::fs::File>; 5],
    /// The process kept asleep in the group, so that it stays populated
    /// ([`sys::process::Keeper`]): `cgroup.procs` then lists it alone
    /// after a run that left nothing. `None` where it could not start.
    keeper: Option<sys::process::Keeper>,
    /// What `cgroup.procs` holds with the keeper alone in it: its pid and
    /// a newline (the length first).
    keeper_line: (usize, [u8; 12]),
    /// `cgroup.stat` as read after a run, and the line it starts with when
    /// no group is below (here, not a constant: see [`Texts`]).
    stat: [u8; 256],
    no_groups_below: [u8; 17],
    /// The length fields of the pressure texts the next run starts from;
    /// `None` when they are to be read again (the last run left processes
    /// in the group).
    start: Option<[u64; 3]>,
    /// Those texts are still in the after-slots of [`Outbox::texts`], the
    /// last run's end, which its answer carries: copied to the
    /// before-slots when the next run starts, once that answer is encoded.
    start_in_after: bool,
}

impl Group {
    /// The group of descriptor [`GROUP_FD`].
    fn open() -> io::Result<Group> {
        let dir = sys::process::inherited_dir(GROUP_FD)?;
        let keeper = sys::process::Keeper::start(&dir).ok();
        Ok(Group::of_dir(dir, keeper))
    }

    /// The group of directory `dir` (its files: [`GROUP_FILES`]), `keeper`
    /// asleep in it.
    fn of_dir(dir: std::fs::File, keeper: Option<sys::process::Keeper>) -> Group {
        let files = GROUP_FILES.map(|n| sys::file::open_read_at(&dir, n));
        let mut keeper_line = (0, [0u8; 12]);
        if let Some(k) = &keeper {
            let text = format!("{}\n", k.pid());
            keeper_line.0 = text.len().min(12);
            keeper_line.1[..keeper_line.0].copy_from_slice(&text.as_bytes()[..keeper_line.0]);
        }
        Group {
            dir,
            files,
            keeper,
            keeper_line,
            stat: [0; 256],
            no_groups_below: std::hint::black_box(*b"nr_descendants 0\n"),
            start: None,
            start_in_after: false,
        }
    }

    /// The keeper's pid, if one sleeps in the group.
    fn keeper_pid(&self) -> Option<u32> {
        self.keeper.as_ref().map(sys::process::Keeper::pid)
    }

    /// Reads file `i` into slot `slot` of `texts`: its length field.
    fn read(&self, i: usize, texts: &mut Texts, slot: usize) -> u64 {
        let room = texts.slot(slot);
        let len = room.len();
        match &self.files[i] {
            Ok(file) => text_field(read_once(file, room), len),
            Err(e) => text_field(
                Err(io::Error::from_raw_os_error(
                    e.raw_os_error().unwrap_or(libc::EIO),
                )),
                len,
            ),
        }
    }

    /// Before a run: the totals it starts from, read unless the last run's
    /// end gave them.
    fn before_run(&mut self, texts: &mut Texts) {
        if self.start.is_none() {
            self.start = Some([0, 1, 2].map(|i| self.read(i, texts, 2 + i)));
        } else if std::mem::take(&mut self.start_in_after) {
            for i in 0..3 {
                let (from, to) = (texts.at[5 + i], texts.at[2 + i]);
                texts.buf.copy_within(from..from + PRESSURE_MAX, to);
            }
        }
    }

    /// After a run: its start and end totals and `cgroup.procs` into `f`
    /// and the slots, and whether it may have left processes behind
    /// (`LEFT`); the end is the next run's start unless it may have.
    fn after_run(&mut self, texts: &mut Texts, f: &mut [u64; FIELDS]) {
        let start = self
            .start
            .take()
            .unwrap_or([TEXT_FAILED | libc::ENODATA as u64; 3]);
        for i in 0..3 {
            f[CPU_BEFORE + i] = start[i];
            f[CPU_AFTER + i] = self.read(i, texts, 5 + i);
        }
        f[PROCS_LEN] = self.read(3, texts, 8);
        let len = texts.len(f, 8);
        let procs = &texts.slot(8)[..len];
        let (n, line) = &self.keeper_line;
        let alone = f[PROCS_LEN] & TEXT_FAILED == 0 && (procs.is_empty() || procs == &line[..*n]);
        // The keeper keeps `populated` of `cgroup.events` at 1: the groups
        // below are counted instead (a process the command left in one is
        // then looked for by tally).
        let none_below = match &self.files[4] {
            Ok(file) => read_once(file, &mut self.stat)
                .is_ok_and(|n| self.stat[..n].starts_with(&self.no_groups_below)),
            Err(_) => false,
        };
        // Unreadable, or something left: read the start again before the next.
        let left = !(alone && none_below);
        f[LEFT] = u64::from(left);
        if !left {
            // Not copied to the before-slots yet: this run's answer, not
            // encoded yet, carries its own start there.
            self.start = Some([f[CPU_AFTER], f[CPU_AFTER + 1], f[CPU_AFTER + 2]]);
            self.start_in_after = true;
        }
    }
}

/// Reads the ended run's figures (its `/proc/PID/io` and schedstat, its
/// group's pressure, the spawner's own peak), reaps it and sends its answer.
fn finish(ended: Ended, outbox: &mut Outbox, group: Option<&mut Group>) -> io::Result<()> {
    let Ended {
        spawned,
        mut f,
        sched_start,
    } = ended;
    if let Some((text, len)) = sched_start {
        outbox.texts.slot(9)[..len].copy_from_slice(&text[..len]);
        f[SCHED_START_LEN] = len as u64;
    }
    if let (Some(mut spawned), RAN) = (spawned, f[KIND]) {
        // The command has exec'd and exited: the spawner's peak now is at
        // least what the kernel carried into the command's (it only grows).
        f[PEAK_KIB] = outbox
            .status
            .as_ref()
            .and_then(|s| sys::shed::peak_kib(s).ok())
            .unwrap_or(0);
        // Root may open it now, from the zombie (see `Spawner::start`).
        let (opened, state) = match spawned.io.take() {
            Some(opened) => (opened, IO_TEXT),
            None => (
                sys::process::open_proc_file_of(spawned.pid, &outbox.io_name),
                IO_TEXT_AT_EXIT,
            ),
        };
        match opened {
            // One `pread`: the kernel makes the whole text at the first
            // read, so a shorter one is all of it (see `read_once`).
            Ok(file) => match read_once(&file, outbox.texts.slot(0)) {
                Ok(n) => {
                    f[IO_STATE] = state;
                    f[IO_LEN] = n as u64;
                }
                Err(e) => {
                    f[IO_STATE] = IO_READ_FAILED;
                    f[IO_ERRNO] = e.raw_os_error().unwrap_or(libc::EIO) as u64;
                }
            },
            Err(e) => {
                f[IO_STATE] = IO_OPEN_FAILED;
                f[IO_ERRNO] = e.raw_os_error().unwrap_or(libc::EIO) as u64;
            }
        }
        let room = outbox.texts.slot(1);
        let len = room.len();
        f[SCHED_LEN] = text_field(
            sys::process::open_proc_file_of(spawned.pid, &outbox.sched_name)
                .and_then(|file| read_once(&file, room)),
            len,
        );
        if let Some(g) = group {
            g.after_run(&mut outbox.texts, &mut f);
        }
        match sys::process::wait4(spawned.pid) {
            Ok((exit, usage)) => {
                match exit {
                    Exit::Code(c) => f[EXIT_VALUE] = c as u64,
                    Exit::Signal {
                        signal,
                        core_dumped,
                    } => {
                        f[SIGNALED] = 1;
                        f[EXIT_VALUE] = signal as u64;
                        f[CORE] = u64::from(core_dumped);
                    }
                }
                f[USER_US] = crate::units::micros(usage.user);
                f[SYSTEM_US] = crate::units::micros(usage.system);
                f[MAX_RSS_KIB] = usage.max_rss_kib;
                f[MINOR] = usage.minor_faults;
                f[MAJOR] = usage.major_faults;
                f[VOLUNTARY] = usage.voluntary_switches;
                f[INVOLUNTARY] = usage.involuntary_switches;
                f[BLOCK_IN] = usage.block_input;
                f[BLOCK_OUT] = usage.block_output;
            }
            Err(e) => {
                f[KIND] = FAILED;
                f[EXEC_ERRNO] = e.raw_os_error().unwrap_or(libc::EIO) as u64;
            }
        }
    }
    f[ANSWERED_NS] = sys::monotonic_ns();
    outbox.push(&f)
}

/// Requests received and not yet served: tally sends them ahead, and
/// one `recv` takes in as many as are there.
struct Inbox {
    buf: [u8; 4 * INBOX],
    start: usize,
    end: usize,
}

impl Inbox {
    /// A whole request, if one is held.
    fn take(&mut self) -> Option<u32> {
        let bytes = self.buf.get(self.start..self.start + 4)?;
        if self.start + 4 > self.end {
            return None;
        }
        let index = u32::from_le_bytes(bytes.try_into().ok()?);
        self.start += 4;
        Some(index)
    }

    /// Moves a partial request to the front, making room after it.
    fn compact(&mut self) {
        // A plain loop: at most three bytes, and no library code to fault in.
        for i in self.start..self.end {
            self.buf[i - self.start] = self.buf[i];
        }
        self.end -= self.start;
        self.start = 0;
    }
}

/// The next request; before waiting for one, the answers not yet
/// announced are, since tally, which asks for no more until it has them,
/// waits for them, and the spawner waits for tally's acknowledgement: tally
/// sends its next requests before it. `None` at the end of the requests,
/// or when tally has gone.
fn next_request(
    input: &mut UnixStream,
    inbox: &mut Inbox,
    outbox: &mut Outbox,
) -> io::Result<Option<u32>> {
    if let Some(index) = inbox.take() {
        return Ok(Some(index));
    }
    inbox.compact();
    if let Some(n) = sys::process::recv_now(input, &mut inbox.buf[inbox.end..])? {
        inbox.end += n;
        if let Some(index) = inbox.take() {
            return Ok(Some(index));
        }
    }
    outbox.announce()?;
    if !outbox.acknowledged()? {
        return Ok(None);
    }
    loop {
        let n = match input.read(&mut inbox.buf[inbox.end..]) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if n == 0 {
            return if inbox.end == inbox.start {
                Ok(None)
            } else {
                Err(io::Error::from(io::ErrorKind::UnexpectedEof))
            };
        }
        inbox.end += n;
        if let Some(index) = inbox.take() {
            return Ok(Some(index));
        }
    }
}

// Not inlined into `main`: the loop's code stays small and together (see
// link/run-hot-path.order), which is what keeps the spawner's peak low.
#[inline(never)]
fn serve_requests() -> io::Result<()> {
    let mut input = sys::process::inherited_stream(FD)?;
    let ack = sys::process::inherited_stream(ACK_FD)?;
    // Started as /proc/self/exe, it would be listed as "exe".
    let _ = sys::process::set_name(c"tally-spawner");
    let setup: Setup = read_frame(&mut input)?;
    sys::process::die_with_parent(setup.parent)?;
    let commands: Vec<io::Result<Prepared>> = setup
        .commands
        .into_iter()
        .map(|argv| {
            let argv: Vec<OsString> = argv.into_iter().map(OsString::from_vec).collect();
            Prepared::new(&argv)
        })
        .collect();
    let forwarder = Forwarder::install()?;
    forwarder.adopt_orphans_on_signal();
    // Commands lead groups of their own unless a stream is a terminal.
    let own_group =
        !(io::stdin().is_terminal() || io::stdout().is_terminal() || io::stderr().is_terminal());
    if own_group {
        forwarder.signal_groups();
    }
    // The runs' group, or why its descriptor could not be taken (each run
    // then says it ran outside).
    let mut group = setup.group.then(Group::open);
    let release = setup.cpu.and_then(stay_on);
    let mut outbox = Outbox::new(input.try_clone()?, ack, setup.beside && release.is_some());
    let as_root = sys::geteuid() == 0;
    sys::process::prepare_shared_spawns()?;
    let keeper = say_ready(&input, group.as_ref())?;
    if let Some(s) = &outbox.status {
        // Once before the shedding: the first call does one-off work.
        let _ = sys::shed::peak_kib(s);
    }
    // Last before the loop: the peak is then what the loop touches.
    sys::shed::release_free_heap();
    let _ = sys::shed::shed_file_pages();
    let mut inbox = Inbox {
        buf: [0; 4 * INBOX],
        start: 0,
        end: 0,
    };
    let mut stopped = false;
    while let Some(index) = next_request(&mut input, &mut inbox, &mut outbox)? {
        let mut f = [0u64; FIELDS];
        let cmd = match commands.get(index as usize) {
            Some(Ok(cmd)) if !stopped => cmd,
            other => {
                if stopped {
                    f[KIND] = SKIPPED;
                } else {
                    stopped = true;
                    f[KIND] = FAILED;
                    f[EXEC_ERRNO] = match other {
                        Some(Err(e)) => e.raw_os_error().unwrap_or(libc::EINVAL),
                        _ => libc::EINVAL,
                    } as u64;
                }
                outbox.push(&f)?;
                continue;
            }
        };
        if let Some(sig) = forwarder.pending() {
            stopped = true;
            f[KIND] = SKIPPED;
            f[FORWARDED] = u64::try_from(sig).unwrap_or(0);
            outbox.push(&f)?;
            continue;
        }
        // tally is done with the answers announced before the run starts
        // (see the module's text).
        if !outbox.acknowledged()? {
            break;
        }
        // The previous command has exited: its streams are free to reset,
        // before the clock starts.
        if setup.rewind_stdin {
            sys::process::rewind(0)?;
        }
        if setup.truncate_stdout {
            sys::process::truncate_to_empty(1)?;
        }
        let in_group = match group.as_mut() {
            Some(Ok(g)) => {
                g.before_run(&mut outbox.texts);
                Ok(Some(&g.dir))
            }
            Some(Err(e)) => Err(e.raw_os_error().unwrap_or(libc::EBADF)),
            None => Ok(None),
        };
        let ended = run(
            cmd,
            &forwarder,
            (as_root, own_group),
            in_group,
            release.as_ref(),
            &mut f,
        );
        if f[FORWARDED] != 0 {
            sys::process::end_orphans(
                i32::try_from(f[FORWARDED]).unwrap_or(libc::SIGTERM),
                f[PID],
                (keeper != 0).then_some(keeper),
            );
        }
        stopped = f[KIND] != RAN
            || f[EXEC_ERRNO] != 0
            || f[FORWARDED] != 0
            || (setup.stop_on_failure && (f[SIGNALED] != 0 || f[EXIT_VALUE] != 0));
        let g = match group.as_mut() {
            Some(Ok(g)) => Some(g),
            _ => None,
        };
        finish(ended, &mut outbox, g)?;
    }
    outbox.announce()
}

/// Tells tally the spawner is ready (tally falls back to forking the runs
/// itself if this never comes), then the keeper's pid (0: none), whom
/// tally's moving of processes a run left behind spares. Returns that pid.
fn say_ready(input: &UnixStream, group: Option<&io::Result<Group>>) -> io::Result<u32> {
    let keeper = match group {
        Some(Ok(g)) => g.keeper_pid().unwrap_or(0),
        _ => 0,
    };
    let mut ready = [READY, 0, 0, 0, 0];
    ready[1..].copy_from_slice(&keeper.to_le_bytes());
    (&*input).write_all(&ready)?;
    Ok(keeper)
}

/// Keeps the spawner on `cpu`, one of several it may run on: the CPUs
/// its commands are let run on again before `exec` (see the module's
/// text). `None` where it was left as it was.
fn stay_on(cpu: usize) -> Option<sys::cpu::CpuMask> {
    let allowed = sys::cpu::allowed_cpus().ok().filter(|c| c.len() > 1)?;
    if !allowed.contains(&cpu) {
        return None;
    }
    sys::cpu::pin_to_cpu(cpu).ok()?;
    Some(sys::cpu::CpuMask::of(&allowed))
}

/// One run of `cmd`, cloned into `group` (`Err`: the errno of taking the
/// group's descriptor): starts it and returns it ended, its figures so far
/// in `f`. Its clock starts in the child, its last step before `exec`, and
/// stops when its exit is seen.
#[inline(never)]
fn run(
    cmd: &Prepared,
    forwarder: &Forwarder,
    (as_root, own_group): (bool, bool),
    group: Result<Option<&std::fs::File>, i32>,
    cpus: Option<&sys::cpu::CpuMask>,
    f: &mut [u64; FIELDS],
) -> Ended {
    use std::os::fd::AsFd;
    let pre = PreExec {
        // Root reads /proc/PID/io of the zombie, after the clock has
        // stopped; anyone else must open it before the command exits.
        open_io: !as_root,
        die_with_parent: true,
        own_group,
        cgroup_dir: group.ok().flatten().map(|g| g.as_fd()),
        cpus,
        ..PreExec::default()
    };
    let spawned = sys::process::spawn_prepared(cmd, pre);
    if let Ok(s) = &spawned {
        forwarder.attach(s.pid);
    }
    let mut spawned = match spawned {
        Ok(s) => s,
        Err(e) => {
            f[KIND] = FAILED;
            f[EXEC_ERRNO] = e.raw_os_error().unwrap_or(libc::EIO) as u64;
            return Ended {
                spawned: None,
                f: *f,
                sched_start: None,
            };
        }
    };
    let pid = spawned.pid;
    let waited = sys::process::wait_exited_keep(pid);
    let end = sys::monotonic_ns();
    let outcome = spawned.outcome();
    f[START_NS] = outcome.started_ns;
    f[START_ON_CPU_NS] = outcome.started_on_cpu_ns.unwrap_or(0);
    (f[PRE_READ_BYTES], f[PRE_READ_CALLS]) = outcome.pre_exec_reads;
    f[END_NS] = end;
    (f[JOINED], f[JOIN_ERRNO]) = match (group, &spawned.cgroup) {
        (Err(errno), _) => (JOINED_OUTSIDE, errno as u64),
        (_, sys::process::Joined::Outside(e)) => {
            (JOINED_OUTSIDE, e.raw_os_error().unwrap_or(libc::EIO) as u64)
        }
        (_, sys::process::Joined::NotAsked) => (JOINED_NOT_ASKED, 0),
        _ => (JOINED_IN, 0),
    };
    spawned.cgroup = sys::process::Joined::NotAsked;
    forwarder.detach();
    f[FORWARDED] = forwarder.take_received().map_or(0, |s| s as u64);
    f[ESCALATED] = u64::from(forwarder.take_escalated());
    f[PID] = u64::from(pid);
    match waited {
        Ok(exit) => {
            f[KIND] = RAN;
            f[WALL_NS] = end.saturating_sub(outcome.started_ns);
            f[EXEC_ERRNO] = outcome
                .exec_error
                .and_then(|e| e.raw_os_error())
                .map_or(0, |e| e as u64);
            // For the decision to stop; `finish` takes wait4's word.
            match exit {
                Exit::Code(c) => f[EXIT_VALUE] = c as u64,
                Exit::Signal { signal, .. } => {
                    f[SIGNALED] = 1;
                    f[EXIT_VALUE] = signal as u64;
                }
            }
        }
        Err(e) => {
            f[KIND] = FAILED;
            f[EXEC_ERRNO] = e.raw_os_error().unwrap_or(libc::EIO) as u64;
        }
    }
    Ended {
        spawned: Some(spawned),
        f: *f,
        sched_start: outcome.started_sched,
    }
}

/// tally's side: a running spawner.
pub struct Spawner {
    child: Child,
    reader: BufReader<UnixStream>,
    writer: UnixStream,
    /// Requests not sent yet (see [`Spawner::submit`]).
    requests: Vec<u8>,
    /// The process the spawner keeps asleep in the runs' group (see
    /// `sys::process::Keeper`), which is no run's.
    keeper: Option<u32>,
    commands: Vec<Vec<OsString>>,
    /// The commands of the requests sent and not yet answered.
    in_flight: std::collections::VecDeque<usize>,
    /// Where the spawner announces answers and tally acknowledges them.
    ack: UnixStream,
    /// Answers announced and not read yet.
    announced: u32,
    /// The last answer announced has been read: acknowledged when the next
    /// is waited for, tally then being done with them (see the module's
    /// text).
    ack_due: bool,
    /// The runs' group, or why there is none.
    group: GroupAt,
    /// Where the wall time went is measured (`--no-why` turns it off).
    why: bool,
    /// The CPU the spawner stays on, when tally's thread is to be kept
    /// there too (the spawner was told; see the module's text).
    beside_cpu: Option<usize>,
    /// tally's thread kept on that CPU, until the spawner ends.
    beside: Option<sys::cpu::Kept>,
}

/// The standard streams of the commands a spawner starts (they are the
/// spawner's own, which its commands share), and what it resets between
/// runs.
#[derive(Debug)]
pub struct Streams {
    pub stdin: Stdio,
    pub stdout: Stdio,
    pub stderr: Stdio,
    /// stdin is a file, rewound before every run.
    pub rewind_stdin: bool,
    /// stdout is a file opened for appending, emptied before every run.
    pub truncate_stdout: bool,
}

impl Streams {
    /// tally's stdin; its stdout and stderr with `show_output`, else /dev/null.
    pub fn plain(show_output: bool) -> Streams {
        let out = || {
            if show_output {
                Stdio::inherit()
            } else {
                Stdio::null()
            }
        };
        Streams {
            stdin: Stdio::inherit(),
            stdout: out(),
            stderr: out(),
            rewind_stdin: false,
            truncate_stdout: false,
        }
    }
}

impl Spawner {
    /// Starts a spawner for `commands` (this binary, `/proc/self/exe`),
    /// whose commands get `streams` and are cloned into the cgroup of
    /// `group` (its directory's descriptor, which must stay open while the
    /// spawner runs, and its path; `Err`: why there is none; `None`: the
    /// breakdown is off, and the runs have none). With `stop_on_failure`, a
    /// failed run stops it. With `beside`, the thread that reads the
    /// answers will be kept on the spawner's CPU
    /// ([`Spawner::keep_caller_beside`]), and the spawner sleeps on each
    /// acknowledgement at once.
    pub fn start(
        commands: &[Vec<OsString>],
        streams: Streams,
        stop_on_failure: bool,
        group: Option<Result<(std::os::fd::RawFd, std::path::PathBuf), String>>,
        beside: bool,
    ) -> io::Result<Spawner> {
        let why = group.is_some();
        // The CPU tally is on: the spawner stays there.
        let cpu = sys::cpu::allowed_cpu_count()
            .is_ok_and(|n| n > 1)
            .then(sys::cpu::current_cpu)
            .flatten();
        let group = group.unwrap_or_else(|| Err("the breakdown is off".into()));
        let (ours, theirs) = UnixStream::pair()?;
        // A wish: where the kernel gives less, the spawner announces what fits.
        let _ = sys::ipc::set_send_buffer(std::os::fd::AsFd::as_fd(&theirs), SOCKET_ROOM);
        let (ack, their_ack) = UnixStream::pair()?;
        let mut cmd = Command::new("/proc/self/exe");
        cmd.arg0("tally")
            .arg(SERVE_ARG)
            .stdin(streams.stdin)
            .stdout(streams.stdout)
            .stderr(streams.stderr);
        sys::process::pass_fd(&mut cmd, theirs.as_raw_fd(), FD);
        sys::process::pass_fd(&mut cmd, their_ack.as_raw_fd(), ACK_FD);
        // Above the descriptors passed before it, which `pass_fd` would
        // otherwise overwrite in the child when they collide.
        let group_dir = match &group {
            Ok((dir, _)) => Some(sys::process::dup_above(*dir, 10)?),
            Err(_) => None,
        };
        if let Some(dir) = &group_dir {
            sys::process::pass_fd(&mut cmd, dir.as_raw_fd(), GROUP_FD);
        }
        sys::signals::start_with_inherited_dispositions(&mut cmd);
        let child = cmd.spawn()?;
        drop(theirs);
        drop(their_ack);
        drop(group_dir);
        let mut spawner = Spawner {
            child,
            reader: BufReader::new(ours.try_clone()?),
            writer: ours,
            requests: Vec::with_capacity(4 * STRETCH_MOST),
            keeper: None,
            commands: commands.to_vec(),
            in_flight: std::collections::VecDeque::new(),
            ack,
            announced: 0,
            ack_due: false,
            group: group
                .as_ref()
                .map(|(_, path)| path.clone())
                .map_err(Clone::clone),
            why,
            beside_cpu: cpu.filter(|_| beside),
            beside: None,
        };
        let beside = beside && cpu.is_some();
        let setup = Setup {
            commands: commands
                .iter()
                .map(|argv| argv.iter().map(|a| a.as_bytes().to_vec()).collect())
                .collect(),
            stop_on_failure,
            parent: std::process::id(),
            rewind_stdin: streams.rewind_stdin,
            truncate_stdout: streams.truncate_stdout,
            group: group.is_ok(),
            cpu,
            beside,
        };
        write_frame(&mut spawner.writer, &setup, &mut Vec::new())?;
        let mut ready = [0u8; 5];
        spawner.reader.read_exact(&mut ready)?;
        if ready[0] != READY {
            return Err(io::Error::other("tally's spawner did not start"));
        }
        let keeper = u32::from_le_bytes([ready[1], ready[2], ready[3], ready[4]]);
        spawner.keeper = (keeper != 0).then_some(keeper);
        Ok(spawner)
    }

    /// The spawner's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Keeps the calling thread (the one that reads the answers) on the
    /// spawner's CPU until the spawner ends, which then lets it run where
    /// it could before again: the CPU and the CPUs it could run on, or
    /// `None` where it was not kept (the spawner was not, or `beside` was
    /// not asked at its start). Only for a thread that starts nothing
    /// while the spawner runs: what it started would be kept there too.
    pub fn keep_caller_beside(&mut self) -> Option<(usize, Vec<usize>)> {
        let cpu = self.beside_cpu?;
        let kept = self.beside.insert(sys::cpu::Kept::on(cpu).ok()?);
        Some((cpu, kept.before().to_vec()))
    }

    /// Asks for a run of command `index`: the requests go out together,
    /// when tally next waits for an answer ([`Spawner::reply`]). `false`
    /// when a stretch's worth ([`STRETCH_MOST`]) waits to go already: the
    /// answers to the runs in flight are to be read first.
    pub fn submit(&mut self, index: usize) -> io::Result<bool> {
        let wire = u32::try_from(index)
            .map_err(io::Error::other)?
            .to_le_bytes();
        if self.requests.len() >= 4 * STRETCH_MOST && !self.in_flight.is_empty() {
            return Ok(false);
        }
        self.requests.extend_from_slice(&wire);
        self.in_flight.push_back(index);
        Ok(true)
    }

    /// The answer to the oldest request not yet answered. Where none is
    /// announced, the last announced are acknowledged (tally is done with
    /// them), and tally sleeps until the spawner announces more: the
    /// answers of a stretch wake it once, after its last run.
    pub fn reply(&mut self) -> io::Result<Reply> {
        let ended = |e: io::Error| {
            if e.kind() == io::ErrorKind::UnexpectedEof {
                io::Error::other("tally's spawner process ended before answering")
            } else {
                e
            }
        };
        if !self.requests.is_empty() {
            // At most a stretch's: the socket takes them whole, whether
            // or not the spawner reads yet.
            self.writer.write_all(&self.requests)?;
            self.requests.clear();
        }
        if self.announced == 0 {
            if self.ack_due {
                self.ack.write_all(&[1])?;
                self.ack_due = false;
            }
            let mut count = [0u8; 4];
            self.ack.read_exact(&mut count).map_err(ended)?;
            self.announced = u32::from_le_bytes(count);
            if self.announced == 0 {
                return Err(io::Error::other("tally's spawner announced no answers"));
            }
        }
        let (fields, texts) = read_answer(&mut self.reader).map_err(ended)?;
        self.announced -= 1;
        self.ack_due = self.announced == 0;
        let index = self.in_flight.pop_front().unwrap_or(0);
        let argv = self.commands.get(index).map(Vec::as_slice).unwrap_or(&[]);
        let mut reply = decode(&fields, &texts, argv, &self.group);
        if let (false, Reply::Ran(rec, ..)) = (self.why, &mut reply) {
            rec.why = None;
        }
        // Processes the run left in the group leave it before the next run
        // starts (it waits for the acknowledgement), and are said.
        if let (Ok(path), Reply::Ran(rec, ..)) = (&self.group, &mut reply)
            && left_processes(&fields)
        {
            let mut notes = Vec::new();
            super::group::move_out_leftovers(path, self.keeper, &mut notes);
            if let Some(why) = rec.why.as_mut() {
                why.notes.extend(notes);
            }
        }
        Ok(reply)
    }
}

impl Drop for Spawner {
    fn drop(&mut self) {
        if !self.in_flight.is_empty() {
            // Runs asked for and no longer wanted: the spawner takes its
            // running command with it (PR_SET_PDEATHSIG).
            let _ = self.child.kill();
        }
        let _ = self.writer.shutdown(std::net::Shutdown::Both);
        let _ = self.ack.shutdown(std::net::Shutdown::Both);
        let _ = self.child.wait();
        // A spawner that ended its own way killed and reaped its keeper; a
        // killed one took it with it (PR_SET_PDEATHSIG), which may still be
        // on its way out: the group is removed once it has left.
        if let (Some(pid), Ok(path)) = (self.keeper, &self.group) {
            super::group::wait_left(path, pid, std::time::Duration::from_millis(500));
        }
        // tally's thread may run anywhere again.
        self.beside = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields_of_a_run() -> [u64; FIELDS] {
        let mut f = [0u64; FIELDS];
        f[KIND] = RAN;
        f[WALL_NS] = 1_234_567;
        f[PID] = 4242;
        f[USER_US] = 300;
        f[SYSTEM_US] = 200;
        f[MAX_RSS_KIB] = 1024;
        f[MINOR] = 70;
        f[VOLUNTARY] = 1;
        f[EXIT_VALUE] = 3;
        f[FORWARDED] = libc::SIGINT as u64;
        f
    }

    /// `text` into slot `i` of `texts`, its length into `f`.
    fn put(texts: &mut Texts, f: &mut [u64; FIELDS], i: usize, text: &[u8]) {
        texts.slot(i)[..text.len()].copy_from_slice(text);
        f[SLOTS[i].0] = text.len() as u64;
    }

    #[test]
    fn an_answer_reads_back_as_the_run_it_describes() {
        let io = b"rchar: 100\nwchar: 5\nsyscr: 7\nsyscw: 1\nread_bytes: 4096\nwrite_bytes: 0\ncancelled_write_bytes: 0\n";
        let pressure = |some: u64| {
            format!(
                "some avg10=0.00 avg60=0.00 avg300=0.00 total={some}\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
            )
        };
        let mut f = fields_of_a_run();
        let mut texts = Texts::new();
        put(&mut texts, &mut f, 0, io);
        put(&mut texts, &mut f, 1, b"500000 34000 3\n");
        for (i, (before, after)) in [(10, 10), (1_000, 1_200), (7, 7)].into_iter().enumerate() {
            put(&mut texts, &mut f, 2 + i, pressure(before).as_bytes());
            put(&mut texts, &mut f, 5 + i, pressure(after).as_bytes());
        }
        put(&mut texts, &mut f, 8, b"4242\n");
        f[JOINED] = JOINED_IN;
        f[LEFT] = 1;
        let mut wire = Vec::new();
        encode(&f, &texts, &mut wire);
        // Two answers back to back, as a stretch sends them.
        encode(&f, &texts, &mut wire);
        let mut input = &wire[..];
        let group: GroupAt = Ok("/sys/fs/cgroup/tally-1-0".into());
        for _ in 0..2 {
            let (got, text) = read_answer(&mut input).unwrap();
            let argv = [OsString::from("/bin/false")];
            assert!(left_processes(&got));
            let Reply::Ran(rec, _, _) = decode(&got, &text, &argv, &group) else {
                panic!("not a run");
            };
            assert_eq!(rec.wall_ns, 1_234_567);
            assert_eq!(rec.max_rss_bytes, 1024 * 1024);
            assert_eq!((rec.user_us, rec.system_us), (300, 200));
            assert_eq!(rec.exit.code, Some(3));
            assert_eq!(rec.forwarded_signal.as_deref(), Some("SIGINT"));
            let io = rec.io.as_ref().expect("io figures");
            assert_eq!((io.read_call_bytes, io.read_calls), (100, 7));
            assert_eq!(io.storage_read_bytes, 4096);
            // The zombie's schedstat: its run-queue wait; the group's
            // pressure over the run: the difference of its totals.
            let why = rec.why.as_ref().expect("a breakdown");
            assert_eq!(why.cpu_wait_ns, Some(34_000));
            assert_eq!(why.io_wait_ns, Some(200_000));
            assert_eq!(why.memory_stall_ns, Some(0));
            assert_eq!(
                why.other_wait_ns,
                Some(1_234_567 - 500_000 - 34_000 - 200_000)
            );
        }
        assert!(input.is_empty());
    }

    /// Regression: each run's answer carried the group's totals after it
    /// as its start too (the next run's start was copied over it before
    /// the answer was encoded), so every compared run's storage wait and
    /// memory stall read 0.
    #[test]
    fn runs_in_one_group_each_carry_what_accrued_over_them() {
        let dir = tempfile::tempdir().unwrap();
        let write = |io_total: u64| {
            for (name, total) in [("cpu", 0), ("io", io_total), ("memory", 0)] {
                let line = |kind: &str| {
                    format!("{kind} avg10=0.00 avg60=0.00 avg300=0.00 total={total}\n")
                };
                std::fs::write(
                    dir.path().join(format!("{name}.pressure")),
                    line("some") + &line("full"),
                )
                .unwrap();
            }
            std::fs::write(dir.path().join("cgroup.procs"), "").unwrap();
            std::fs::write(
                dir.path().join("cgroup.stat"),
                "nr_descendants 0\nnr_dying_descendants 0\n",
            )
            .unwrap();
        };
        write(1_000);
        let mut g = Group::of_dir(std::fs::File::open(dir.path()).unwrap(), None);
        let mut texts = Texts::new();
        let group: GroupAt = Ok(dir.path().to_path_buf());
        let argv = [OsString::from("cat")];
        for (after, accrued_us) in [(1_200, 200), (1_500, 300), (1_500, 0)] {
            g.before_run(&mut texts);
            write(after);
            let mut f = fields_of_a_run();
            put(&mut texts, &mut f, 1, b"500000 34000 3\n");
            f[JOINED] = JOINED_IN;
            g.after_run(&mut texts, &mut f);
            let mut wire = Vec::new();
            encode(&f, &texts, &mut wire);
            let (got, text) = read_answer(&mut &wire[..]).unwrap();
            let Reply::Ran(rec, _, _) = decode(&got, &text, &argv, &group) else {
                panic!("not a run");
            };
            let why = rec.why.expect("a breakdown");
            assert_eq!(why.io_wait_ns, Some(accrued_us * 1_000), "{why:?}");
        }
    }

    #[test]
    fn a_run_left_processes_when_its_group_holds_another_than_the_keeper_or_groups_below() {
        let dir = tempfile::tempdir().unwrap();
        let none_below = "nr_descendants 0\nnr_dying_descendants 0\n";
        for (procs, stat, left) in [
            (Some(""), Some(none_below), false),
            (Some("4242\n"), Some(none_below), false),
            (Some("4242\n777\n"), Some(none_below), true),
            (Some("777\n"), Some(none_below), true),
            (
                Some(""),
                Some("nr_descendants 1\nnr_dying_descendants 0\n"),
                true,
            ),
            (None, Some(none_below), true),
            (Some(""), None, true),
        ] {
            for (name, text) in [("cgroup.procs", procs), ("cgroup.stat", stat)] {
                let path = dir.path().join(name);
                let _ = std::fs::remove_file(&path);
                if let Some(text) = text {
                    std::fs::write(&path, text).unwrap();
                }
            }
            let mut g = Group::of_dir(std::fs::File::open(dir.path()).unwrap(), None);
            // The keeper's pid as `Keeper::start` would have left it.
            g.keeper_line = (5, *b"4242\n\0\0\0\0\0\0\0");
            let mut texts = Texts::new();
            let mut f = fields_of_a_run();
            g.before_run(&mut texts);
            g.after_run(&mut texts, &mut f);
            assert_eq!(left_processes(&f), left, "{procs:?} {stat:?}");
            // A run that may have left some: the next reads its start anew.
            assert_eq!(g.start.is_none(), left);
        }
    }

    #[test]
    fn a_run_outside_its_group_or_without_one_says_why_never_zero() {
        let mut f = fields_of_a_run();
        let mut texts = Texts::new();
        put(&mut texts, &mut f, 1, b"500000 34000 3\n");
        f[JOINED] = JOINED_OUTSIDE;
        f[JOIN_ERRNO] = libc::EOPNOTSUPP as u64;
        let mut wire = Vec::new();
        encode(&f, &texts, &mut wire);
        let (got, text) = read_answer(&mut &wire[..]).unwrap();
        let argv = [OsString::from("/bin/true")];
        for (group, says) in [
            (Ok("/sys/fs/cgroup/tally-1-0".into()), "threaded"),
            (
                Err("denied".to_string()),
                "no cgroup v2 group could be made for the run: denied",
            ),
        ] {
            let Reply::Ran(rec, _, _) = decode(&got, &text, &argv, &group) else {
                panic!("not a run");
            };
            let why = rec.why.expect("a breakdown");
            assert_eq!((why.io_wait_ns, why.memory_stall_ns), (None, None));
            assert_eq!(why.cpu_wait_ns, Some(34_000));
            for u in [
                &why.unavailable.io_wait_ns,
                &why.unavailable.memory_stall_ns,
            ] {
                assert!(u.as_deref().is_some_and(|u| u.contains(says)), "{u:?}");
            }
        }
    }

    #[test]
    fn a_failed_exec_is_the_error_tally_run_gives() {
        let mut f = fields_of_a_run();
        f[EXEC_ERRNO] = libc::ENOENT as u64;
        let argv = [OsString::from("/no/such/program")];
        let group: GroupAt = Err("none".into());
        match decode(&f, &[], &argv, &group) {
            Reply::Error(e) => assert!(e.to_string().contains("command not found"), "{e}"),
            other => panic!("{other:?}"),
        }
        f[KIND] = SKIPPED;
        assert!(matches!(
            decode(&f, &[], &argv, &group),
            Reply::Skipped { signal: Some(s) } if s == "SIGINT"
        ));
    }

    #[test]
    fn requests_cut_across_receives_come_out_whole_and_in_order() {
        let mut inbox = Inbox {
            buf: [0; 4 * INBOX],
            start: 0,
            end: 0,
        };
        let wire: Vec<u8> = [7u32, 8, 9].iter().flat_map(|i| i.to_le_bytes()).collect();
        inbox.buf[..6].copy_from_slice(&wire[..6]);
        inbox.end = 6;
        assert_eq!(inbox.take(), Some(7));
        assert_eq!(inbox.take(), None, "half a request");
        inbox.compact();
        assert_eq!((inbox.start, inbox.end), (0, 2));
        inbox.buf[2..8].copy_from_slice(&wire[6..]);
        inbox.end = 8;
        assert_eq!(inbox.take(), Some(8));
        assert_eq!(inbox.take(), Some(9));
        assert_eq!(inbox.take(), None);
    }

    #[test]
    fn an_answer_longer_than_the_protocol_allows_is_refused() {
        for (field, most) in SLOTS {
            let mut f = fields_of_a_run();
            f[field] = (most + 1) as u64;
            let mut wire = Vec::new();
            for v in f {
                wire.extend_from_slice(&v.to_le_bytes());
            }
            wire.resize(wire.len() + TEXTS_LEN + 1, b'x');
            assert!(read_answer(&mut &wire[..]).is_err(), "field {field}");
        }
    }

    #[test]
    fn answers_more_than_the_socket_holds_are_announced_as_they_fit_and_all_arrive_in_order() {
        // The spawner's side with a send buffer of a few answers (the
        // kernel's least), tally's emulated on a thread: it waits for an
        // announcement, reads as many answers as it says, acknowledges.
        let (sock, mut theirs) = UnixStream::pair().unwrap();
        let (ack, mut their_ack) = UnixStream::pair().unwrap();
        sys::ipc::set_send_buffer(std::os::fd::AsFd::as_fd(&sock), 1).unwrap();
        const RUNS: u64 = 60;
        let tally = std::thread::spawn(move || {
            let (mut walls, mut counts) = (Vec::new(), Vec::new());
            while (walls.len() as u64) < RUNS {
                let mut count = [0u8; 4];
                their_ack.read_exact(&mut count).unwrap();
                let n = u32::from_le_bytes(count);
                counts.push(n);
                for _ in 0..n {
                    let (fields, _) = read_answer(&mut theirs).unwrap();
                    walls.push(fields[WALL_NS]);
                }
                their_ack.write_all(&[1]).unwrap();
            }
            (walls, counts)
        });
        let mut outbox = Outbox::new(sock, ack, false);
        for i in 0..RUNS {
            let mut f = fields_of_a_run();
            f[WALL_NS] = i;
            outbox.push(&f).unwrap();
            // As the spawner before a run; not after every answer (those
            // of runs not made, after a stop, go out back to back).
            if i % 7 == 6 {
                assert!(outbox.acknowledged().unwrap());
            }
        }
        outbox.announce().unwrap();
        assert!(outbox.acknowledged().unwrap());
        let (walls, counts) = tally.join().unwrap();
        assert_eq!(walls, (0..RUNS).collect::<Vec<_>>());
        assert!(counts.iter().all(|&n| n > 0), "{counts:?}");
        assert!(
            counts.len() > 1 && counts.iter().all(|&n| u64::from(n) < RUNS),
            "the socket held all {RUNS} answers: {counts:?}"
        );
        assert_eq!(outbox.acks_owed, 0);
    }

    #[test]
    fn a_text_that_fills_its_slot_is_refused_as_cut() {
        assert_eq!(text_field(Ok(3), 4), 3);
        assert_eq!(text_field(Ok(4), 4), TEXT_FAILED | libc::EOVERFLOW as u64);
        let e = io::Error::from_raw_os_error(libc::EACCES);
        assert_eq!(text_field(Err(e), 4), TEXT_FAILED | libc::EACCES as u64);
    }
}
