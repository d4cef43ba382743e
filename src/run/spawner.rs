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
//! `FIELDS` little-endian `u64` and the run's `/proc/PID/io` text, read
//! as a [`Reply`]. Requests can be sent ahead ([`AHEAD`]): the spawner
//! finishes a run (reading its `/proc/PID/io`, reaping it) while the next
//! one runs, and answers between runs. tally sends a request only when
//! the socket takes it at once, else it reads answers first: the spawner
//! reads no request while it waits for an acknowledgement, so however
//! many commands there are, neither side waits on the other.
//!
//! No run may be measured differently for its place in the order, so
//! tally's own work on an answer (decoding, storing, planning, asking for
//! more) never overlaps a run, and every run is started the same way: each
//! answer is sent between runs, flagged (`ACK_WANTED`), and the spawner
//! starts nothing until tally, done with it and about to wait for the
//! next, writes one byte on a second socket (descriptor 4). When answers
//! went out in batches of 32 during the next run, the run right after each
//! batch took 1.2–1.36× the others' wall time; with batches sent between
//! runs and acknowledged, the first run after each still took 1.27× on a
//! loaded machine (benches/compare_positions.py; tests/compare_cli.rs
//! checks every period and phase). The round trip per run costs about
//! 50 µs of elapsed time between runs, none of it inside a run.
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

use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::RunError;
use super::report::RunRecord;
use crate::sys;
use crate::sys::process::{ChildUsage, Exit, PreExec, Prepared};
use crate::sys::signals::Forwarder;

/// The argument that makes `tally` a spawner (see the module's text).
pub const SERVE_ARG: &str = "__tally-spawner";

/// How many runs tally asks for ahead when it has nothing to do between
/// them: twice a batch of answers, so the spawner never waits for tally.
pub const AHEAD: usize = 2 * Outbox::BATCH;

/// The byte the spawner sends once it is ready to serve.
const READY: u8 = 0x52;

/// The spawner's descriptor of its socket.
const FD: i32 = 3;

/// The spawner's descriptor of the socket tally acknowledges batches on.
const ACK_FD: i32 = 4;

/// Set in `KIND` of the last answer of a batch: the spawner waits for
/// tally's acknowledgement before it starts another run.
const ACK_WANTED: u64 = 1 << 63;

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

/// When a run started and ended, in CLOCK_MONOTONIC ns, and when the run
/// after it started (`None` when none had when it was answered).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stretch {
    pub start_ns: u64,
    pub end_ns: u64,
    pub next_start_ns: Option<u64>,
}

/// The fields of an answer on the wire: this many little-endian `u64`,
/// then `IO_LEN` bytes of `/proc/PID/io` text. Written and read only by
/// [`encode`] and [`decode`].
const FIELDS: usize = 28;
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
const IO_LEN: usize = 21;
/// `/proc/PID/schedstat` of the zombie: `SCHED_READ` once read, then
/// its time on a CPU and its run-queue wait; else the errno in `SCHED_ON_CPU_NS`.
const SCHED_STATE: usize = 22;
const SCHED_ON_CPU_NS: usize = 23;
const SCHED_RUN_DELAY_NS: usize = 24;
/// When the run started and ended, and when the run after it started (0:
/// none), in CLOCK_MONOTONIC ns: for the GPU samples of its stretch.
const START_NS: usize = 25;
const END_NS: usize = 26;
const NEXT_START_NS: usize = 27;
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
/// `SCHED_STATE` values (0: not read, as now).
const SCHED_READ: u64 = 1;
const SCHED_FAILED: u64 = 2;
/// The most `/proc/PID/io` text sent.
const IO_MAX: usize = 1024;

/// Answers waiting to be sent, in order.
struct Outbox {
    buf: Vec<u8>,
    count: usize,
    /// Where the last answer starts in `buf` (its `KIND`).
    last: usize,
    /// A batch was sent and tally has not acknowledged it yet.
    awaiting_ack: bool,
    /// Where a run's `/proc/PID/io` text is read, before its answer.
    io_text: [u8; IO_MAX],
    /// `/proc/self/status`, for the spawner's own peak.
    status: Option<std::fs::File>,
}

impl Outbox {
    /// Answers sent together. One: every run is then preceded by the same
    /// exchange with tally (see the module's text).
    const BATCH: usize = 1;

    /// Adds an answer: the fields, then `fields[IO_LEN]` bytes of `io`.
    fn push(&mut self, fields: &[u64; FIELDS], io: &[u8]) {
        self.last = self.buf.len();
        encode(fields, io, &mut self.buf);
        self.count += 1;
    }

    /// Sends what waits, when `all` or when a batch is full, its last
    /// answer flagged for tally's acknowledgement.
    fn flush(&mut self, sock: &UnixStream, all: bool) -> io::Result<()> {
        if self.count == 0 || (!all && self.count < Self::BATCH) {
            return Ok(());
        }
        if let Some(kind) = self.buf.get_mut(self.last..self.last + 8) {
            let flagged = u64::from_le_bytes(kind.try_into().unwrap_or_default()) | ACK_WANTED;
            kind.copy_from_slice(&flagged.to_le_bytes());
        }
        (&*sock).write_all(&self.buf)?;
        self.buf.clear();
        self.count = 0;
        self.awaiting_ack = true;
        Ok(())
    }

    /// Waits until tally has acknowledged the last batch sent, if it has
    /// not yet: from then on tally waits, and a run has the machine to
    /// itself. `false` when tally has gone.
    fn acknowledged(&mut self, ack: &mut UnixStream) -> io::Result<bool> {
        if !self.awaiting_ack {
            return Ok(true);
        }
        let mut byte = [0u8];
        loop {
            match ack.read(&mut byte) {
                Ok(0) => return Ok(false),
                Ok(_) => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        self.awaiting_ack = false;
        Ok(true)
    }
}

/// Appends an answer: the fields, then `fields[IO_LEN]` bytes of `io`.
fn encode(fields: &[u64; FIELDS], io: &[u8], out: &mut Vec<u8>) {
    for f in fields {
        out.extend_from_slice(&f.to_le_bytes());
    }
    out.extend_from_slice(&io[..(fields[IO_LEN] as usize).min(io.len())]);
}

fn read_answer(input: &mut impl Read) -> io::Result<([u64; FIELDS], Vec<u8>)> {
    let mut raw = [0u8; FIELDS * 8];
    input.read_exact(&mut raw)?;
    let mut fields = [0u64; FIELDS];
    for (f, chunk) in fields.iter_mut().zip(raw.chunks_exact(8)) {
        *f = u64::from_le_bytes(chunk.try_into().unwrap_or_default());
    }
    let len = fields[IO_LEN] as usize;
    if len > IO_MAX {
        return Err(io::Error::other(
            "an answer of tally's spawner is malformed",
        ));
    }
    let mut io = vec![0u8; len];
    input.read_exact(&mut io)?;
    Ok((fields, io))
}

fn errno_of(v: u64) -> io::Error {
    io::Error::from_raw_os_error(i32::try_from(v).unwrap_or(libc::EIO))
}

fn signal_of(v: u64) -> Option<String> {
    (v != 0).then(|| sys::signal_name(i32::try_from(v).unwrap_or(0)))
}

/// tally's reading of an answer to a run of `argv`.
fn decode(fields: &[u64; FIELDS], io: &[u8], argv: &[OsString]) -> Reply {
    let program = || {
        argv.first()
            .map(|p| crate::text::path::display(std::path::Path::new(p)))
            .unwrap_or_default()
    };
    match fields[KIND] & !ACK_WANTED {
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
    let mut record = super::plain_record(
        std::time::Duration::from_nanos(fields[WALL_NS]),
        exit,
        &usage,
        figures,
        signal_of(fields[FORWARDED]),
        fields[ESCALATED] != 0,
    );
    record.why = Some(why_of(fields, &usage));
    Reply::Ran(
        Box::new(record),
        (fields[PEAK_KIB] != 0).then_some(fields[PEAK_KIB]),
        Some(Stretch {
            start_ns: fields[START_NS],
            end_ns: fields[END_NS],
            next_start_ns: (fields[NEXT_START_NS] != 0).then_some(fields[NEXT_START_NS]),
        }),
    )
}

/// The breakdown of a spawner's run: schedstat as read, no cgroup.
fn why_of(fields: &[u64; FIELDS], usage: &ChildUsage) -> super::report::Why {
    let no_group = "compare's runs are not put in a cgroup v2 group of their own".to_string();
    let pid = fields[PID];
    let sched = match fields[SCHED_STATE] {
        SCHED_READ => Ok(crate::procfs::schedstat::SchedStat {
            on_cpu_ns: fields[SCHED_ON_CPU_NS],
            run_delay_ns: fields[SCHED_RUN_DELAY_NS],
            timeslices: 0,
        }),
        0 => Err(
            "compare's spawner does not read schedstat: the code would raise its own peak memory, which bounds every command's"
                .to_string(),
        ),
        SCHED_FAILED if fields[SCHED_ON_CPU_NS] == libc::ENOENT as u64 => Err(
            "this kernel keeps no scheduler statistics per task (/proc/PID/schedstat: CONFIG_SCHED_INFO off)"
                .to_string(),
        ),
        _ => Err(format!(
            "cannot read /proc/{pid}/schedstat: {}",
            errno_of(fields[SCHED_ON_CPU_NS])
        )),
    };
    let nanos = |d: std::time::Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    let mut why = super::why::assemble(&super::why::Raw {
        wall_ns: fields[WALL_NS],
        user_ns: nanos(usage.user),
        system_ns: nanos(usage.system),
        sched,
        cpu_pressure: Err(no_group.clone()),
        io_pressure: Err(no_group.clone()),
        memory_pressure: Err(no_group.clone()),
        io_delayacct: None,
        machine: None,
    });
    // Delay accounting is not looked at here.
    why.unavailable.io_wait_ns = why.io_wait_ns.is_none().then_some(no_group);
    why
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
/// read, reap and answer, done while the next command runs.
struct Ended {
    /// `None` when it could not start.
    spawned: Option<sys::process::Spawned>,
    f: [u64; FIELDS],
}

/// Reads the ended run's `/proc/PID/io`, reaps it and adds its answer.
fn finish(ended: Ended, outbox: &mut Outbox) {
    let Ended { spawned, mut f } = ended;
    if let (Some(mut spawned), RAN) = (spawned, f[KIND]) {
        // Root may open it now, from the zombie (see `Spawner::start`).
        let (opened, state) = match spawned.io.take() {
            Some(opened) => (Some(opened), IO_TEXT),
            None => (Some(sys::process::open_io_of(spawned.pid)), IO_TEXT_AT_EXIT),
        };
        match opened {
            Some(Ok(file)) => match super::read_all_at(&file, &mut outbox.io_text) {
                Ok(n) => {
                    f[IO_STATE] = state;
                    f[IO_LEN] = n as u64;
                }
                Err(e) => {
                    f[IO_STATE] = IO_READ_FAILED;
                    f[IO_ERRNO] = e.raw_os_error().unwrap_or(libc::EIO) as u64;
                }
            },
            Some(Err(e)) => {
                f[IO_STATE] = IO_OPEN_FAILED;
                f[IO_ERRNO] = e.raw_os_error().unwrap_or(libc::EIO) as u64;
            }
            None => {
                f[IO_STATE] = IO_OPEN_FAILED;
                f[IO_ERRNO] = libc::ENOENT as u64;
            }
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
    let io = outbox.io_text;
    outbox.push(&f, &io);
}

/// Requests received and not yet served: tally sends them ahead, and
/// one `recv` takes in as many as are there.
struct Inbox {
    buf: [u8; 4 * AHEAD],
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

/// The next request: only one already there while `ended` waits (else
/// that run is finished first); before waiting for one, every answer is
/// sent, so tally, which may be waiting for them, is not kept waiting.
/// `None` at the end of the requests.
fn next_request(
    input: &mut UnixStream,
    inbox: &mut Inbox,
    ended: &mut Option<Ended>,
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
    if let Some(e) = ended.take() {
        finish(e, outbox);
    }
    outbox.flush(input, true)?;
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
    let mut ack = sys::process::inherited_stream(ACK_FD)?;
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
    let mut outbox = Outbox {
        buf: Vec::with_capacity((FIELDS * 8 + IO_MAX) * (Outbox::BATCH + 1)),
        count: 0,
        last: 0,
        awaiting_ack: false,
        io_text: [0u8; IO_MAX],
        status: std::fs::File::open("/proc/self/status").ok(),
    };
    let as_root = sys::geteuid() == 0;
    sys::process::prepare_shared_spawns()?;
    // Ready: tally falls back to forking the runs itself if this never comes.
    (&input).write_all(&[READY])?;
    if let Some(s) = &outbox.status {
        // Once before the shedding: the first call does one-off work.
        let _ = sys::shed::peak_kib(s);
    }
    // Last before the loop: the peak is then what the loop touches.
    sys::shed::release_free_heap();
    let _ = sys::shed::shed_file_pages();
    let mut inbox = Inbox {
        buf: [0; 4 * AHEAD],
        start: 0,
        end: 0,
    };
    let mut stopped = false;
    let mut ended: Option<Ended> = None;
    while let Some(index) = next_request(&mut input, &mut inbox, &mut ended, &mut outbox)? {
        let mut f = [0u64; FIELDS];
        let cmd = match commands.get(index as usize) {
            Some(Ok(cmd)) if !stopped => cmd,
            other => {
                // Answered at once, after the run before it.
                if let Some(e) = ended.take() {
                    finish(e, &mut outbox);
                }
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
                outbox.push(&f, &[]);
                continue;
            }
        };
        if let Some(sig) = forwarder.pending() {
            if let Some(e) = ended.take() {
                finish(e, &mut outbox);
            }
            stopped = true;
            f[KIND] = SKIPPED;
            f[FORWARDED] = u64::try_from(sig).unwrap_or(0);
            outbox.push(&f, &[]);
            continue;
        }
        // A full batch goes out now, between runs, and tally is done with
        // it before the next starts (see the module's text).
        outbox.flush(&input, false)?;
        if !outbox.acknowledged(&mut ack)? {
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
        let previous = ended.take();
        let now = run(
            cmd,
            &forwarder,
            previous,
            (as_root, own_group),
            &mut f,
            &mut outbox,
        )?;
        if f[FORWARDED] != 0 {
            sys::process::end_orphans(i32::try_from(f[FORWARDED]).unwrap_or(libc::SIGTERM), f[PID]);
        }
        stopped = f[KIND] != RAN
            || f[EXEC_ERRNO] != 0
            || f[FORWARDED] != 0
            || (setup.stop_on_failure && (f[SIGNALED] != 0 || f[EXIT_VALUE] != 0));
        ended = Some(now);
    }
    if let Some(e) = ended.take() {
        finish(e, &mut outbox);
    }
    outbox.flush(&input, true)
}

/// One run of `cmd`: starts it, finishes the `previous` run while it runs,
/// and returns it ended (its figures so far in `f`).
#[inline(never)]
fn run(
    cmd: &Prepared,
    forwarder: &Forwarder,
    previous: Option<Ended>,
    (as_root, own_group): (bool, bool),
    f: &mut [u64; FIELDS],
    outbox: &mut Outbox,
) -> io::Result<Ended> {
    let pre = PreExec {
        // Root reads /proc/PID/io of the zombie, after the clock has
        // stopped; anyone else must open it before the command exits.
        open_io: !as_root,
        die_with_parent: true,
        own_group,
        ..PreExec::default()
    };
    f[START_NS] = sys::monotonic_ns();
    let start = Instant::now();
    let spawned = sys::process::spawn_prepared(cmd, pre);
    if let Ok(s) = &spawned {
        forwarder.attach(s.pid);
    }
    // The command has exec'd: the spawner's peak now is at least what the
    // kernel carried into the command's (it only grows). Read while the
    // command runs, as is the rest of the previous run's work.
    f[PEAK_KIB] = outbox
        .status
        .as_ref()
        .and_then(|s| sys::shed::peak_kib(s).ok())
        .unwrap_or(0);
    if let Some(mut p) = previous {
        p.f[NEXT_START_NS] = f[START_NS];
        finish(p, outbox);
    }
    let spawned = match spawned {
        Ok(s) => s,
        Err(e) => {
            f[KIND] = FAILED;
            f[EXEC_ERRNO] = e.raw_os_error().unwrap_or(libc::EIO) as u64;
            return Ok(Ended {
                spawned: None,
                f: *f,
            });
        }
    };
    let pid = spawned.pid;
    let waited = sys::process::wait_exited_keep(pid);
    let wall = start.elapsed();
    f[END_NS] = f[START_NS].saturating_add(u64::try_from(wall.as_nanos()).unwrap_or(u64::MAX));
    forwarder.detach();
    f[FORWARDED] = forwarder.take_received().map_or(0, |s| s as u64);
    f[ESCALATED] = u64::from(forwarder.take_escalated());
    f[PID] = u64::from(pid);
    match waited {
        Ok(exit) => {
            f[KIND] = RAN;
            f[WALL_NS] = u64::try_from(wall.as_nanos()).unwrap_or(u64::MAX);
            f[EXEC_ERRNO] = spawned
                .exec_error()
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
    Ok(Ended {
        spawned: Some(spawned),
        f: *f,
    })
}

/// tally's side: a running spawner.
pub struct Spawner {
    child: Child,
    reader: BufReader<UnixStream>,
    writer: UnixStream,
    commands: Vec<Vec<OsString>>,
    /// The commands of the requests sent and not yet answered.
    in_flight: std::collections::VecDeque<usize>,
    /// Where tally acknowledges a batch of answers.
    ack: UnixStream,
    /// The last answer read ended a batch: acknowledged when the next is
    /// asked for, tally then being done with it (see the module's text).
    ack_due: bool,
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
    /// whose commands get `streams`. With `stop_on_failure`, a failed run
    /// stops it.
    pub fn start(
        commands: &[Vec<OsString>],
        streams: Streams,
        stop_on_failure: bool,
    ) -> io::Result<Spawner> {
        let (ours, theirs) = UnixStream::pair()?;
        let (ack, their_ack) = UnixStream::pair()?;
        let mut cmd = Command::new("/proc/self/exe");
        cmd.arg0("tally")
            .arg(SERVE_ARG)
            .stdin(streams.stdin)
            .stdout(streams.stdout)
            .stderr(streams.stderr);
        sys::process::pass_fd(&mut cmd, theirs.as_raw_fd(), FD);
        sys::process::pass_fd(&mut cmd, their_ack.as_raw_fd(), ACK_FD);
        sys::signals::start_with_inherited_dispositions(&mut cmd);
        let child = cmd.spawn()?;
        drop(theirs);
        drop(their_ack);
        let mut spawner = Spawner {
            child,
            reader: BufReader::new(ours.try_clone()?),
            writer: ours,
            commands: commands.to_vec(),
            in_flight: std::collections::VecDeque::new(),
            ack,
            ack_due: false,
        };
        let setup = Setup {
            commands: commands
                .iter()
                .map(|argv| argv.iter().map(|a| a.as_bytes().to_vec()).collect())
                .collect(),
            stop_on_failure,
            parent: std::process::id(),
            rewind_stdin: streams.rewind_stdin,
            truncate_stdout: streams.truncate_stdout,
        };
        write_frame(&mut spawner.writer, &setup, &mut Vec::new())?;
        let mut ready = [0u8];
        spawner.reader.read_exact(&mut ready)?;
        if ready[0] != READY {
            return Err(io::Error::other("tally's spawner did not start"));
        }
        Ok(spawner)
    }

    /// The spawner's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Asks for a run of command `index`; `false` when the request was not
    /// sent because the spawner's queue is full: the answers to the runs
    /// in flight are to be read first (the spawner, waiting for tally's
    /// acknowledgement of one, reads no more requests, so tally waiting
    /// to send would wait for ever).
    pub fn submit(&mut self, index: usize) -> io::Result<bool> {
        let wire = u32::try_from(index)
            .map_err(io::Error::other)?
            .to_le_bytes();
        match sys::process::send_now(&self.writer, &wire)? {
            None if !self.in_flight.is_empty() => return Ok(false),
            // Nothing in flight: the spawner is reading requests.
            None => self.writer.write_all(&wire)?,
            Some(n) => self.writer.write_all(&wire[n..])?,
        }
        self.in_flight.push_back(index);
        Ok(true)
    }

    /// The answer to the oldest request not yet answered.
    pub fn reply(&mut self) -> io::Result<Reply> {
        if self.ack_due {
            self.ack.write_all(&[1])?;
            self.ack_due = false;
        }
        let (fields, io) = read_answer(&mut self.reader).map_err(|e| {
            if e.kind() == io::ErrorKind::UnexpectedEof {
                io::Error::other("tally's spawner process ended before answering")
            } else {
                e
            }
        })?;
        self.ack_due = fields[KIND] & ACK_WANTED != 0;
        let index = self.in_flight.pop_front().unwrap_or(0);
        let argv = self.commands.get(index).map(Vec::as_slice).unwrap_or(&[]);
        Ok(decode(&fields, &io, argv))
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
        f[SCHED_STATE] = SCHED_READ;
        f[SCHED_ON_CPU_NS] = 500_000;
        f[SCHED_RUN_DELAY_NS] = 34_000;
        f
    }

    #[test]
    fn an_answer_reads_back_as_the_run_it_describes() {
        let io = b"rchar: 100\nwchar: 5\nsyscr: 7\nsyscw: 1\nread_bytes: 4096\nwrite_bytes: 0\ncancelled_write_bytes: 0\n";
        let mut f = fields_of_a_run();
        f[IO_LEN] = io.len() as u64;
        let mut wire = Vec::new();
        encode(&f, io, &mut wire);
        // Two answers back to back, as a batch sends them.
        encode(&f, io, &mut wire);
        let mut input = &wire[..];
        for _ in 0..2 {
            let (got, text) = read_answer(&mut input).unwrap();
            let argv = [OsString::from("/bin/false")];
            let Reply::Ran(rec, _, _) = decode(&got, &text, &argv) else {
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
            // The zombie's schedstat: its run-queue wait; no cgroup here.
            let why = rec.why.as_ref().expect("a breakdown");
            assert_eq!(why.cpu_wait_ns, Some(34_000));
            assert_eq!(why.other_wait_ns, Some(1_234_567 - 500_000 - 34_000));
            assert_eq!(why.io_wait_ns, None);
            assert!(
                why.unavailable
                    .io_wait_ns
                    .as_deref()
                    .is_some_and(|u| u.contains("cgroup")),
                "{why:?}"
            );
        }
        assert!(input.is_empty());
    }

    #[test]
    fn a_failed_exec_is_the_error_tally_run_gives() {
        let mut f = fields_of_a_run();
        f[EXEC_ERRNO] = libc::ENOENT as u64;
        let argv = [OsString::from("/no/such/program")];
        match decode(&f, &[], &argv) {
            Reply::Error(e) => assert!(e.to_string().contains("command not found"), "{e}"),
            other => panic!("{other:?}"),
        }
        f[KIND] = SKIPPED;
        assert!(matches!(
            decode(&f, &[], &argv),
            Reply::Skipped { signal: Some(s) } if s == "SIGINT"
        ));
    }

    #[test]
    fn requests_cut_across_receives_come_out_whole_and_in_order() {
        let mut inbox = Inbox {
            buf: [0; 4 * AHEAD],
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
        let mut f = fields_of_a_run();
        f[IO_LEN] = (IO_MAX + 1) as u64;
        let mut wire = Vec::new();
        for v in f {
            wire.extend_from_slice(&v.to_le_bytes());
        }
        wire.resize(wire.len() + IO_MAX + 1, b'x');
        assert!(read_answer(&mut &wire[..]).is_err());
    }
}
