//! Reading every process's memory figures, and only what naming needs,
//! in parallel over the cores.
//!
//! One pass per process: `smaps_rollup` (or `smaps` on kernels before
//! 4.14), then `exe`, and `status`, `cmdline` or `cgroup` only when the
//! chosen naming or grouping needs them. Each worker reuses its buffers.
//! A process that ends mid-scan (`ENOENT`, `ESRCH`) is skipped and
//! counted, never fatal; so is one we may not read (`EACCES`).

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::{Deserialize, Serialize};

use crate::procfs::smaps_rollup::{self, MemFigures};
use crate::procfs::status::{self, Status};
use crate::procfs::{ProcRoot, cgroup};

use super::MemError;

/// Which files besides the memory figures a scan reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Needs {
    pub status: bool,
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
    /// NUL-separated arguments; `None` when empty or not read.
    pub cmdline: Option<Vec<u8>>,
    pub cgroup: Option<String>,
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
    /// Any other read error (the first is in `first_error`).
    pub failed: u64,
    pub first_error: Option<String>,
}

impl Skipped {
    fn merge(&mut self, other: Skipped) {
        self.ended = self.ended.saturating_add(other.ended);
        self.no_memory = self.no_memory.saturating_add(other.no_memory);
        self.denied = self.denied.saturating_add(other.denied);
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
}

/// The numeric entries of the proc root, sorted.
pub fn list_pids(root: &ProcRoot) -> Result<Vec<u32>, MemError> {
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
    pids.sort_unstable();
    Ok(pids)
}

/// Reads every process in `pids` (all of the root's when `None`) with
/// `threads` workers (0: one per core).
pub fn scan(
    root: &ProcRoot,
    pids: Option<&[u32]>,
    needs: Needs,
    threads: usize,
) -> Result<Snapshot, MemError> {
    let listed;
    let pids = match pids {
        Some(p) => p,
        None => {
            listed = list_pids(root)?;
            &listed[..]
        }
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let wanted = if threads == 0 { cores } else { threads };
    // A worker per 64 processes at most: below that, a thread costs more
    // than it saves.
    let workers = wanted.min(pids.len() / 64 + 1).clamp(1, 64);
    let next = AtomicUsize::new(0);
    let mut parts: Vec<Part> = Vec::with_capacity(workers);
    let mut panicked = false;
    std::thread::scope(|s| {
        // Workers beyond the first; if the system refuses a thread
        // (RLIMIT_NPROC), the others share its processes.
        let handles: Vec<_> = (1..workers)
            .filter_map(|_| {
                std::thread::Builder::new()
                    .name("tally-scan".into())
                    .spawn_scoped(s, || work(root, pids, needs, &next))
                    .ok()
            })
            .collect();
        parts.push(work(root, pids, needs, &next));
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
    let mut snap = Snapshot::default();
    for part in parts {
        snap.samples.extend(part.samples);
        snap.skipped.merge(part.skipped);
        snap.missing_pids.extend(part.missing);
    }
    snap.samples.sort_unstable_by_key(|s| s.pid);
    snap.samples.dedup_by_key(|s| s.pid);
    snap.missing_pids.sort_unstable();
    Ok(snap)
}

#[derive(Default)]
struct Part {
    samples: Vec<ProcSample>,
    skipped: Skipped,
    missing: Vec<u32>,
}

/// Per-worker reusable buffers.
struct Reader {
    /// `<root>/<pid>/` while a process is read; file names are appended.
    path: Vec<u8>,
    root_len: usize,
    pid_len: usize,
    buf: Vec<u8>,
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

    /// The current path, for messages.
    fn path(&self) -> PathBuf {
        use std::os::unix::ffi::OsStrExt;
        PathBuf::from(std::ffi::OsStr::from_bytes(&self.path))
    }

    /// Reads `<root>/<pid>/<file>` into the buffer.
    /// A plain read loop: `File::read_to_end` first asks for the size and
    /// position (statx, lseek), two wasted calls on a /proc file.
    fn read(&mut self, file: &str) -> io::Result<&[u8]> {
        let mut f = File::open(self.file(file))?;
        let mut len = 0;
        loop {
            if self.buf.len() - len < 4096 {
                self.buf.resize(self.buf.len().max(4096) * 2, 0);
            }
            let spare = self.buf.get_mut(len..).unwrap_or_default();
            match f.read(spare) {
                Ok(0) => break,
                Ok(n) => len += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(self.buf.get(..len).unwrap_or_default())
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
    match e.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::ENOTDIR) => Outcome::Ended,
        Some(libc::ESRCH) => Outcome::NoMemory,
        Some(libc::EACCES) | Some(libc::EPERM) => Outcome::Denied,
        _ => Outcome::Failed(format!(
            "cannot read {}: {e} ({what})",
            reader.path().display()
        )),
    }
}

fn work(root: &ProcRoot, pids: &[u32], needs: Needs, next: &AtomicUsize) -> Part {
    let mut reader = Reader::new(root);
    let mut part = Part::default();
    loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(&pid) = pids.get(i) else {
            break;
        };
        reader.set_pid(pid);
        match read_one(&mut reader, pid, needs) {
            Ok(sample) => part.samples.push(sample),
            Err(Outcome::Ended) => {
                part.skipped.ended = part.skipped.ended.saturating_add(1);
                if !reader.pid_dir_exists() {
                    part.missing.push(pid);
                }
            }
            Err(Outcome::NoMemory) => {
                part.skipped.no_memory = part.skipped.no_memory.saturating_add(1)
            }
            Err(Outcome::Denied) => part.skipped.denied = part.skipped.denied.saturating_add(1),
            Err(Outcome::Failed(msg)) => {
                part.skipped.failed = part.skipped.failed.saturating_add(1);
                part.skipped.first_error.get_or_insert(msg);
            }
        }
    }
    part
}

fn read_one(r: &mut Reader, pid: u32, needs: Needs) -> Result<ProcSample, Outcome> {
    let (mem, source) = match r.read("smaps_rollup") {
        Ok(text) => (smaps_rollup::parse(text), Source::SmapsRollup),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
            // Kernels before 4.14 have no rollup; a process that ended has
            // neither file.
            match r.read("smaps") {
                Ok(text) => (smaps_rollup::parse(text), Source::Smaps),
                Err(e) => return Err(classify(&e, "memory figures", r)),
            }
        }
        Err(e) => return Err(classify(&e, "memory figures", r)),
    };
    let Some(mem) = mem else {
        return Err(Outcome::NoMemory);
    };
    let exe = match r.read_link("exe") {
        Ok(target) => Some(target),
        Err(e) => match classify(&e, "exe", r) {
            // The link of a live process with memory can be denied by a
            // security module while smaps is not; name it from status.
            Outcome::Denied | Outcome::Failed(_) => None,
            other => return Err(other),
        },
    };
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
    let cmdline = if needs.cmdline {
        match r.read("cmdline") {
            Ok([]) => None,
            Ok(text) => Some(text.to_vec()),
            Err(e) => return Err(classify(&e, "cmdline", r)),
        }
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
        cmdline,
        cgroup,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scans_this_process() {
        let me = std::process::id();
        let snap = scan(&ProcRoot::default(), Some(&[me]), Needs::default(), 1).expect("scan");
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
        let snap = scan(&ProcRoot::default(), Some(&[me, tid]), needs, 1).expect("scan");
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
    fn a_missing_pid_is_counted_not_fatal() {
        // PIDs above pid_max (at most 2^22) never exist.
        let snap = scan(
            &ProcRoot::default(),
            Some(&[4_999_999]),
            Needs::default(),
            1,
        )
        .expect("scan");
        assert!(snap.samples.is_empty());
        assert_eq!(snap.skipped.ended, 1);
        assert_eq!(snap.missing_pids, vec![4_999_999]);
    }
}
