//! Reading every process's memory figures, and only what naming needs,
//! in parallel over the cores.
//!
//! One pass per process: `smaps_rollup` (or `smaps` on kernels before
//! 4.14), then `exe` and `comm` (and `cmdline` where the two disagree),
//! and `status`, `cmdline` or `cgroup` only when the chosen naming or
//! grouping needs them. tally leaves itself out. With more rights than its
//! caller, [`scan_as_caller`] splits the pass in two: what the caller may
//! see, read with the caller's rights, then the memory figures. Each worker reuses its buffers.
//! A process that ends mid-scan (`ENOENT`, `ESRCH`) is skipped and
//! counted, never fatal; so is one we may not read (`EACCES`).

use std::ffi::CStr;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::{Deserialize, Serialize};

use crate::procfs::smaps_rollup::{self, MemFigures};
use crate::procfs::status::{self, Status};
use crate::procfs::{ProcRoot, cgroup};
use crate::sys::privilege::Lowered;

use super::columns::GpuBytes;
use super::error::MemError;

/// Which files besides the memory figures a scan reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Needs {
    pub status: bool,
    /// Naming by exe: comm, and `argv[0]` where they differ.
    pub comm: bool,
    pub cmdline: bool,
    pub cgroup: bool,
}

/// Where a process's figures came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    SmapsRollup,
    /// Summed over every mapping: up to 1 kB lower per mapping than the
    /// rollup, which rounds once.
    Smaps,
}

/// What was read of one process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcSample {
    pub pid: u32,
    pub mem: MemFigures,
    pub source: Source,
    /// Target of the `exe` link, raw bytes (`/usr/bin/x (deleted)`).
    pub exe: Option<Vec<u8>>,
    pub status: Option<Status>,
    /// The kernel's comm, raw (`/proc/PID/comm`); naming by exe reads it
    /// where `status` was not read.
    pub comm: Option<Vec<u8>>,
    /// NUL-separated arguments; `None` when empty or not read.
    pub cmdline: Option<Vec<u8>>,
    pub cgroup: Option<String>,
    /// GPU memory the driver attributes to it, set after the scan
    /// ([`super::gpu`]).
    pub gpu: GpuBytes,
}

/// Processes left out of a scan, by reason.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    /// Ended between the listing and the read (`ENOENT`).
    pub ended: u64,
    /// No memory of their own: kernel threads (`ESRCH`) and zombies.
    pub no_memory: u64,
    /// Not readable with this user's rights (`EACCES`, `EPERM`).
    pub denied: u64,
    /// The lowest PID of those denied, to name one in the note.
    #[serde(default)]
    pub first_denied_pid: Option<u32>,
    /// Any other read error (the first is in `first_error`).
    pub failed: u64,
    pub first_error: Option<String>,
}

impl Skipped {
    fn merge(&mut self, other: Skipped) {
        self.ended = self.ended.saturating_add(other.ended);
        self.no_memory = self.no_memory.saturating_add(other.no_memory);
        self.denied = self.denied.saturating_add(other.denied);
        self.first_denied_pid = match (self.first_denied_pid, other.first_denied_pid) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.failed = self.failed.saturating_add(other.failed);
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
    }
}

/// The result of one scan.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub samples: Vec<ProcSample>,
    pub skipped: Skipped,
    /// PIDs asked for with `--pid` that did not exist.
    pub missing_pids: Vec<u32>,
    /// PIDs of the processes that could not be read (`denied`, `failed`),
    /// sorted.
    pub unread_pids: Vec<u32>,
}

/// The numeric entries of the proc root, sorted, without tally itself
/// (the process `<root>/self` names; a fixture tree has none) and without
/// its `helpers` (the nvidia-smi queries it asks for GPU memory meanwhile).
pub fn list_pids(root: &ProcRoot, helpers: &[u32]) -> Result<Vec<u32>, MemError> {
    let me = std::fs::read_link(root.path().join("self"))
        .ok()
        .and_then(|p| p.to_str().and_then(|s| s.parse::<u32>().ok()));
    let mut pids: Vec<u32> = root
        .pids()
        .map_err(|source| MemError::ListProcs {
            path: root.path().to_path_buf(),
            source,
        })?
        .filter(|&pid| pid > 0)
        .collect();
    if pids.is_empty() {
        return Err(MemError::NoProcesses(root.path().to_path_buf()));
    }
    pids.retain(|&pid| Some(pid) != me && !helpers.contains(&pid));
    pids.sort_unstable();
    Ok(pids)
}

/// Reads every process in `pids` (all of the root's but `helpers` when
/// `None`) with `threads` workers (0: one per core).
pub fn scan(
    root: &ProcRoot,
    pids: Option<&[u32]>,
    needs: Needs,
    threads: usize,
    helpers: &[u32],
) -> Result<Snapshot, MemError> {
    let listed;
    let pids = match pids {
        Some(p) => p,
        None => {
            listed = list_pids(root, helpers)?;
            &listed[..]
        }
    };
    let parts = in_parallel(root, pids, threads, |reader, &pid, part| {
        reader.set_pid(pid);
        let outcome = read_one(reader, pid, needs);
        part.record(reader, pid, outcome, true);
    })?;
    Ok(merge(parts))
}

/// How many /proc directories [`scan_as_caller`] holds open at a time.
const BATCH: usize = 256;

/// [`scan`] for a process with more rights than its caller: the list of
/// processes, each process's `status`, `cmdline` and `cgroup` are read
/// with the caller's rights (`as_caller` takes them on until the
/// [`Lowered`] is restored), so /proc shows no process and no command line
/// the caller could not see (`hidepid`); only the memory figures and the
/// `exe` link are read with more. Each process directory is opened with
/// the caller's rights and the rest is read under that open directory, so
/// a PID reused in between cannot be read in place of the one checked.
/// Call it with no other thread of this process running.
pub fn scan_as_caller(
    root: &ProcRoot,
    pids: Option<&[u32]>,
    needs: Needs,
    threads: usize,
    as_caller: &dyn Fn() -> io::Result<Lowered>,
) -> Result<Snapshot, MemError> {
    let lower = || as_caller().map_err(MemError::CallerRights);
    let listed;
    let pids = match pids {
        Some(p) => p,
        None => {
            let lowered = lower()?;
            let list = list_pids(root, &[]);
            lowered.restore().map_err(MemError::CallerRights)?;
            listed = list?;
            &listed[..]
        }
    };
    let mut parts = Vec::new();
    let mut reader = Reader::new(root);
    for batch in pids.chunks(BATCH) {
        let mut checked = Part::default();
        let mut opened = Vec::with_capacity(batch.len());
        let lowered = lower()?;
        for &pid in batch {
            reader.set_pid(pid);
            match open_as_caller(&mut reader, pid, needs) {
                Ok(o) => opened.push(o),
                Err(outcome) => checked.record(&mut reader, pid, Err(outcome), true),
            }
        }
        lowered.restore().map_err(MemError::CallerRights)?;
        parts.push(checked);
        parts.extend(in_parallel(root, &opened, threads, |reader, o, part| {
            reader.set_pid(o.listed_pid);
            let outcome = read_opened(reader, o);
            // Still listed with the caller's rights? Not asked with more.
            part.record(reader, o.listed_pid, outcome, false);
        })?);
    }
    Ok(merge(parts))
}

/// Runs `each` over `items` on up to `threads` workers (0: one per core),
/// each with its own [`Reader`] and [`Part`].
fn in_parallel<T: Sync>(
    root: &ProcRoot,
    items: &[T],
    threads: usize,
    each: impl Fn(&mut Reader, &T, &mut Part) + Sync,
) -> Result<Vec<Part>, MemError> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let wanted = if threads == 0 { cores } else { threads };
    // A worker per 64 processes at most: below that, a thread costs more
    // than it saves.
    let workers = wanted.min(items.len() / 64 + 1).clamp(1, 64);
    let next = AtomicUsize::new(0);
    let work = || {
        let mut reader = Reader::new(root);
        let mut part = Part::default();
        while let Some(item) = items.get(next.fetch_add(1, Ordering::Relaxed)) {
            each(&mut reader, item, &mut part);
        }
        part
    };
    let mut parts: Vec<Part> = Vec::with_capacity(workers);
    let mut panicked = false;
    std::thread::scope(|s| {
        // Workers beyond the first; if the system refuses a thread
        // (RLIMIT_NPROC), the others share its processes.
        let handles: Vec<_> = (1..workers)
            .filter_map(|_| {
                std::thread::Builder::new()
                    .name("tally-scan".into())
                    .spawn_scoped(s, work)
                    .ok()
            })
            .collect();
        parts.push(work());
        for h in handles {
            match h.join() {
                Ok(part) => parts.push(part),
                Err(_) => panicked = true,
            }
        }
    });
    if panicked {
        // A bug, not a fact about the machine: never report a partial sum.
        return Err(MemError::WorkerPanicked);
    }
    Ok(parts)
}

fn merge(parts: Vec<Part>) -> Snapshot {
    let mut snap = Snapshot::default();
    for part in parts {
        snap.samples.extend(part.samples);
        snap.skipped.merge(part.skipped);
        snap.missing_pids.extend(part.missing);
        snap.unread_pids.extend(part.unread);
    }
    snap.samples.sort_unstable_by_key(|s| s.pid);
    snap.samples.dedup_by_key(|s| s.pid);
    snap.missing_pids.sort_unstable();
    snap.unread_pids.sort_unstable();
    snap
}

#[derive(Default)]
struct Part {
    samples: Vec<ProcSample>,
    skipped: Skipped,
    missing: Vec<u32>,
    unread: Vec<u32>,
}

impl Part {
    /// Keeps a sample, or counts why there is none; `reader` is set to the
    /// process's directory.
    /// `look` allows looking whether the PID exists again (with the rights
    /// it was listed with); without it an ended process is gone.
    fn record(
        &mut self,
        reader: &mut Reader,
        pid: u32,
        outcome: Result<ProcSample, Outcome>,
        look: bool,
    ) {
        match outcome {
            Ok(sample) => self.samples.push(sample),
            Err(Outcome::Ended) => {
                self.skipped.ended = self.skipped.ended.saturating_add(1);
                if !look || !reader.pid_dir_exists() {
                    self.missing.push(pid);
                }
            }
            Err(Outcome::NoMemory) => {
                self.skipped.no_memory = self.skipped.no_memory.saturating_add(1)
            }
            Err(Outcome::Denied) => {
                self.skipped.denied = self.skipped.denied.saturating_add(1);
                let first = self.skipped.first_denied_pid.get_or_insert(pid);
                *first = (*first).min(pid);
                self.unread.push(pid);
            }
            Err(Outcome::Failed(msg)) => {
                self.skipped.failed = self.skipped.failed.saturating_add(1);
                self.unread.push(pid);
                self.skipped.first_error.get_or_insert(msg);
            }
        }
    }
}

/// Per-worker reusable buffers.
struct Reader {
    /// `<root>/<pid>/` while a process is read; file names are appended.
    path: Vec<u8>,
    root_len: usize,
    pid_len: usize,
    buf: Vec<u8>,
    /// Bytes of `buf` the last read filled.
    len: usize,
}

impl Reader {
    fn new(root: &ProcRoot) -> Reader {
        use std::os::unix::ffi::OsStrExt;
        let mut path = Vec::with_capacity(64);
        path.extend_from_slice(root.path().as_os_str().as_bytes());
        if path.last() != Some(&b'/') {
            path.push(b'/');
        }
        Reader {
            root_len: path.len(),
            pid_len: path.len(),
            path,
            buf: vec![0; 8192],
            len: 0,
        }
    }

    fn set_pid(&mut self, pid: u32) {
        use std::io::Write;
        self.path.truncate(self.root_len);
        // Writing to a Vec cannot fail.
        let _ = write!(self.path, "{pid}/");
        self.pid_len = self.path.len();
    }

    fn file(&mut self, file: &str) -> &Path {
        use std::os::unix::ffi::OsStrExt;
        self.path.truncate(self.pid_len);
        self.path.extend_from_slice(file.as_bytes());
        Path::new(std::ffi::OsStr::from_bytes(&self.path))
    }

    /// The text of the last read.
    fn text(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or_default()
    }

    /// The current path, for messages.
    fn path(&self) -> PathBuf {
        use std::os::unix::ffi::OsStrExt;
        PathBuf::from(std::ffi::OsStr::from_bytes(&self.path))
    }

    /// Opens `<root>/<pid>/<file>` without waiting: a fixture tree's FIFO
    /// opens at once (and is refused by [`Reader::read_from`]).
    fn open(&mut self, file: &str) -> io::Result<File> {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(self.file(file))
    }

    /// Opens `file` under an open process directory; the path (for
    /// messages) names it too.
    fn open_in(&mut self, dir: &File, file: &CStr) -> io::Result<File> {
        self.file(&file.to_string_lossy());
        crate::sys::file::open_read_at(dir, file)
    }

    /// Reads `<root>/<pid>/<file>` into the buffer.
    fn read(&mut self, file: &str) -> io::Result<&[u8]> {
        let f = self.open(file)?;
        self.read_from(f, file)
    }

    /// Reads `file` under an open process directory into the buffer.
    fn read_in(&mut self, dir: &File, file: &CStr) -> io::Result<&[u8]> {
        let f = self.open_in(dir, file)?;
        self.read_from(f, &file.to_string_lossy())
    }

    /// The memory figures of a whole `smaps` (kernels before 4.14), read a
    /// buffer at a time: its size, up to a block per mapping, does not
    /// matter. Refused unread unless it is a regular file.
    fn sum_smaps(&mut self, mut f: File) -> io::Result<Option<MemFigures>> {
        use std::io::Read;
        self.check_regular(&f, "smaps")?;
        let mut sum = smaps_rollup::Summer::default();
        if self.buf.len() < 8192 {
            self.buf.resize(8192, 0);
        }
        loop {
            let n = match f.read(&mut self.buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            let piece = self.buf.get(..n).unwrap_or_default();
            // No smaps line is longer than a mapping's header: its path
            // (PATH_MAX, escaped) and 70-odd bytes before it.
            if sum.feed(piece, 4 * crate::input::PATH_MAX_BYTES).is_err() {
                let bound = crate::input::proc_bound(Path::new("smaps"));
                return Err(crate::input::InputError::TooLarge {
                    what: "line of the kernel file",
                    name: crate::text::path::display(&self.path()),
                    size_bytes: None,
                    cap_bytes: 4 * crate::input::PATH_MAX_BYTES as u64,
                    fix: bound.fix,
                }
                .into());
            }
        }
        Ok(sum.finish())
    }

    /// `Ok` when `f` (the file `name` of this process) is a regular file;
    /// a FIFO or device in its place is refused by its type.
    fn check_regular(&self, f: &File, name: &str) -> io::Result<()> {
        use crate::input::{self, InputError};
        let ft = f.metadata()?.file_type();
        if ft.is_file() {
            return Ok(());
        }
        let bound = input::proc_bound(Path::new(name));
        Err(InputError::NotRegular {
            what: bound.what,
            name: crate::text::path::display(&self.path()),
            kind: input::kind_of(ft),
            fix: bound.fix,
        }
        .into())
    }

    /// A plain read loop up to the cap of `name`'s kind
    /// ([`crate::input::proc_cap_bytes`]): `File::read_to_end` first asks
    /// for the size and position (statx, lseek), two wasted calls on a
    /// /proc file. Whether the file is a regular one is asked only when
    /// something is odd (no byte, a read that would block, the cap
    /// reached), so a kernel's /proc costs no extra call, while a fixture
    /// tree's FIFO or link to /dev/zero is refused by its type.
    fn read_from(&mut self, mut f: File, name: &str) -> io::Result<&[u8]> {
        use crate::input::{self, InputError};
        let cap_bytes = input::proc_cap_bytes(name);
        let read = input::read_capped(&mut f, &mut self.buf, cap_bytes);
        let odd = match &read {
            Ok(Some(0)) | Ok(None) => true,
            Err(e) => e.kind() == io::ErrorKind::WouldBlock,
            Ok(Some(_)) => false,
        };
        if odd {
            self.check_regular(&f, name)?;
        }
        match read? {
            Some(len) => {
                self.len = len;
                Ok(self.buf.get(..len).unwrap_or_default())
            }
            None => Err(InputError::TooLarge {
                what: "kernel file",
                name: crate::text::path::display(&self.path()),
                size_bytes: None,
                cap_bytes,
                fix: input::proc_bound(Path::new(name)).fix,
            }
            .into()),
        }
    }

    fn read_link(&mut self, file: &str) -> io::Result<Vec<u8>> {
        use std::os::unix::ffi::OsStringExt;
        Ok(std::fs::read_link(self.file(file))?
            .into_os_string()
            .into_vec())
    }

    /// Whether `<root>/<pid>` exists.
    fn pid_dir_exists(&mut self) -> bool {
        self.file("").exists()
    }
}

enum Outcome {
    Ended,
    NoMemory,
    Denied,
    Failed(String),
}

fn classify(e: &io::Error, what: &str, reader: &Reader) -> Outcome {
    if let Some(refused) = crate::input::InputError::of(e) {
        // It names the file already.
        return Outcome::Failed(format!("{refused} ({what})"));
    }
    match e.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::ENOTDIR) => Outcome::Ended,
        Some(libc::ESRCH) => Outcome::NoMemory,
        Some(libc::EACCES) | Some(libc::EPERM) => Outcome::Denied,
        _ => Outcome::Failed(format!(
            "cannot read {}: {e} ({what})",
            crate::text::path::display(&reader.path())
        )),
    }
}

/// The memory figures of the process whose directory `open` opens files
/// in: `smaps_rollup`, or `smaps` on kernels before 4.14.
fn read_memory(
    r: &mut Reader,
    open: &mut dyn FnMut(&mut Reader, &CStr) -> io::Result<File>,
) -> Result<(MemFigures, Source), Outcome> {
    let rollup = open(r, c"smaps_rollup").and_then(|f| r.read_from(f, "smaps_rollup").map(|_| ()));
    let (mem, source) = match rollup {
        Ok(()) => (smaps_rollup::parse(r.text()), Source::SmapsRollup),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
            // Kernels before 4.14 have no rollup; a process that ended has
            // neither file.
            match open(r, c"smaps").and_then(|f| r.sum_smaps(f)) {
                Ok(mem) => (mem, Source::Smaps),
                Err(e) => return Err(classify(&e, "memory figures", r)),
            }
        }
        Err(e) => return Err(classify(&e, "memory figures", r)),
    };
    match mem {
        Some(mem) => Ok((mem, source)),
        None => Err(Outcome::NoMemory),
    }
}

/// The `exe` link, `None` where a security module denies it.
fn exe_of(r: &Reader, link: io::Result<Vec<u8>>) -> Result<Option<Vec<u8>>, Outcome> {
    match link {
        Ok(target) => Ok(Some(target)),
        Err(e) => match classify(&e, "exe", r) {
            // The link of a live process with memory can be denied by a
            // security module while smaps is not; name it from status.
            Outcome::Denied | Outcome::Failed(_) => Ok(None),
            other => Err(other),
        },
    }
}

/// Without its trailing newline.
fn comm_of(text: &[u8]) -> Vec<u8> {
    text.strip_suffix(b"\n").unwrap_or(text).to_vec()
}

fn read_one(r: &mut Reader, pid: u32, needs: Needs) -> Result<ProcSample, Outcome> {
    let mut open = |r: &mut Reader, file: &CStr| r.open(&file.to_string_lossy());
    let (mem, source) = read_memory(r, &mut open)?;
    let link = r.read_link("exe");
    let exe = exe_of(r, link)?;
    let status = if needs.status || exe.is_none() {
        match r.read("status") {
            Ok(text) => status::parse(text),
            Err(e) => return Err(classify(&e, "status", r)),
        }
    } else {
        None
    };
    if status.as_ref().is_some_and(|s| s.state == Some('Z')) {
        return Err(Outcome::NoMemory);
    }
    // A thread ID given with --pid stands for its process: counted once.
    let pid = status
        .as_ref()
        .and_then(|s| s.tgid)
        .filter(|&t| t > 0)
        .unwrap_or(pid);
    // Naming by exe looks at comm, and at argv[0] where the two differ
    // (a program started through a link under another name).
    let comm = match (&status, needs.comm) {
        (None, true) => r.read("comm").ok().map(comm_of),
        _ => None,
    };
    let argv0_too = needs.comm
        && match (
            &exe,
            comm.as_deref()
                .or(status.as_ref().map(|s| s.name.as_slice())),
        ) {
            (Some(exe), Some(comm)) => !super::exe::exe_starts_with_comm(exe, comm),
            _ => false,
        };
    let cmdline = if needs.cmdline {
        match r.read("cmdline") {
            Ok([]) => None,
            Ok(text) => Some(text.to_vec()),
            Err(e) => return Err(classify(&e, "cmdline", r)),
        }
    } else if argv0_too {
        r.read("cmdline")
            .ok()
            .filter(|t| !t.is_empty())
            .map(<[u8]>::to_vec)
    } else {
        None
    };
    let cgroup = if needs.cgroup {
        match r.read("cgroup") {
            Ok(text) => cgroup::parse(text),
            Err(e) => return Err(classify(&e, "cgroup", r)),
        }
    } else {
        None
    };
    Ok(ProcSample {
        pid,
        mem,
        source,
        exe,
        status,
        comm,
        cmdline,
        cgroup,
        gpu: GpuBytes::NotMeasured,
    })
}

/// A process directory opened, and what was read in it, with the caller's
/// rights.
struct Opened {
    /// The PID it was asked for as (a thread ID with --pid).
    listed_pid: u32,
    /// The process (thread group) ID.
    pid: u32,
    dir: File,
    status: Option<Status>,
    cmdline: Option<Vec<u8>>,
    cgroup: Option<String>,
}

/// Opens `<root>/<pid>` and reads its `status` (always: reading it is what
/// proves the caller may see the process), and `cmdline` and `cgroup` as
/// needed, with the rights in force. A command line the caller may not
/// read is left out, never read with more.
fn open_as_caller(r: &mut Reader, pid: u32, needs: Needs) -> Result<Opened, Outcome> {
    let dir = match crate::sys::file::open_dir(r.file("")) {
        Ok(dir) => dir,
        Err(e) => return Err(classify(&e, "process directory", r)),
    };
    let status = match r.read_in(&dir, c"status") {
        Ok(text) => status::parse(text),
        Err(e) => return Err(classify(&e, "status", r)),
    };
    if status.as_ref().is_some_and(|s| s.state == Some('Z')) {
        return Err(Outcome::NoMemory);
    }
    let tgid = status.as_ref().and_then(|s| s.tgid).filter(|&t| t > 0);
    // Naming by exe may need argv[0]; whether it does is known only once
    // the exe is read, with more rights: read it now.
    let cmdline = if needs.cmdline || needs.comm {
        r.read_in(&dir, c"cmdline")
            .ok()
            .filter(|t| !t.is_empty())
            .map(<[u8]>::to_vec)
    } else {
        None
    };
    let cgroup = if needs.cgroup {
        r.read_in(&dir, c"cgroup").ok().and_then(cgroup::parse)
    } else {
        None
    };
    Ok(Opened {
        listed_pid: pid,
        pid: tgid.unwrap_or(pid),
        dir,
        status,
        cmdline,
        cgroup,
    })
}

/// The memory figures and `exe` link of a process opened by
/// [`open_as_caller`], read with the rights in force.
fn read_opened(r: &mut Reader, o: &Opened) -> Result<ProcSample, Outcome> {
    let mut open = |r: &mut Reader, file: &CStr| r.open_in(&o.dir, file);
    let (mem, source) = read_memory(r, &mut open)?;
    r.file("exe");
    let link = crate::sys::file::readlink_at(&o.dir, std::ffi::OsStr::new("exe"))
        .map(|p| std::os::unix::ffi::OsStringExt::into_vec(p.into_os_string()));
    let exe = exe_of(r, link)?;
    Ok(ProcSample {
        pid: o.pid,
        mem,
        source,
        exe,
        status: o.status.clone(),
        comm: None,
        cmdline: o.cmdline.clone(),
        cgroup: o.cgroup.clone(),
        gpu: GpuBytes::NotMeasured,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scans_this_process() {
        let me = std::process::id();
        let snap = scan(&ProcRoot::default(), Some(&[me]), Needs::default(), 1, &[]).expect("scan");
        assert_eq!(snap.samples.len(), 1);
        let s = &snap.samples[0];
        assert_eq!(s.pid, me);
        assert!(s.mem.pss_kb > 0);
        assert!(s.mem.rss_kb >= s.mem.pss_kb);
        assert!(s.exe.is_some());
    }

    #[test]
    fn a_thread_id_counts_as_its_process_once() {
        let me = std::process::id();
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
        let worker = std::thread::spawn(move || {
            let tid = std::fs::read_to_string("/proc/thread-self/status")
                .ok()
                .and_then(|s| {
                    s.lines()
                        .find_map(|l| l.strip_prefix("Pid:"))
                        .and_then(|v| v.trim().parse::<u32>().ok())
                });
            let _ = tid_tx.send(tid);
            let _ = stop_rx.recv();
        });
        let tid = tid_rx.recv().expect("sent").expect("its tid");
        assert_ne!(tid, me);
        let needs = Needs {
            status: true,
            ..Needs::default()
        };
        let snap = scan(&ProcRoot::default(), Some(&[me, tid]), needs, 1, &[]).expect("scan");
        let _ = stop_tx.send(());
        worker.join().expect("thread");
        assert_eq!(
            snap.samples.len(),
            1,
            "the thread is its process, counted once"
        );
        assert_eq!(snap.samples[0].pid, me);
    }

    #[test]
    fn the_caller_view_reads_what_the_plain_scan_reads() {
        let me = std::process::id();
        let needs = Needs {
            status: true,
            comm: true,
            cmdline: true,
            cgroup: true,
        };
        let root = ProcRoot::default();
        let lower = || Ok(Lowered::unchanged());
        let snap = scan_as_caller(&root, Some(&[me, 4_999_999]), needs, 1, &lower).expect("scan");
        assert_eq!(snap.samples.len(), 1);
        let s = &snap.samples[0];
        assert_eq!(s.pid, me);
        assert!(s.mem.pss_kb > 0);
        assert!(s.exe.is_some() && s.status.is_some() && s.cmdline.is_some());
        assert_eq!(snap.missing_pids, vec![4_999_999]);
        // The whole list, without this process itself.
        let all = scan_as_caller(&root, None, needs, 2, &lower).expect("scan");
        assert!(all.samples.iter().all(|s| s.pid != me));
    }

    #[test]
    fn a_missing_pid_is_counted_not_fatal() {
        // PIDs above pid_max (at most 2^22) never exist.
        let snap = scan(
            &ProcRoot::default(),
            Some(&[4_999_999]),
            Needs::default(),
            1,
            &[],
        )
        .expect("scan");
        assert!(snap.samples.is_empty());
        assert_eq!(snap.skipped.ended, 1);
        assert_eq!(snap.missing_pids, vec![4_999_999]);
    }
}
