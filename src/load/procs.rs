//! `tally load --procs N`: N processes load the same file together and
//! hold it; tally measures what they cost together.
//!
//! Per method and mode, tally starts N children (`tally load --child
//! METHOD --hold`, see [`super::hold`]), waits until each says it is
//! ready, moves them into the memory-limited group when `--mem-limit`
//! asked for one, notes MemAvailable, and opens the barrier. When every
//! child has loaded (or died), the hold point: each child's
//! `/proc/PID/smaps_rollup` (RSS, PSS, anonymous and file PSS) and
//! `/proc/PID/smaps` (the PSS of its mappings of the file), its
//! `/proc/PID/io`, the file's pages in the page cache and MemAvailable
//! again. Then tally releases them (SIGTERM, which each holding child
//! waits for with `sigwait` and answers by exiting 0) and reaps them
//! (`wait4`: how each ended, its faults).
//!
//! Children never outlive tally: they get SIGKILL if tally dies
//! (`PR_SET_PDEATHSIG`), and every way out of [`execute`] (an error,
//! SIGINT, SIGTERM, SIGHUP, SIGQUIT) kills and reaps the ones still
//! running before it returns (the drop of its children's guard), then removes the
//! cgroup ([`memlimit::Group`]'s drop).

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::hold::{HoldResult, READY};
use super::memlimit::{self, Group};
use super::procs_report::{ChildFigures, Procs, ProcsReport, ProcsRun};
use super::{LoadError, Method, Mode, Touch, interrupted};
use crate::procfs::{self, ProcRoot, maps, smaps, smaps_rollup};
use crate::sys::{self, signals::Forwarder};

/// The N of `--procs-sweep`.
pub const SWEEP: [u32; 4] = [1, 2, 4, 8];

/// What to run.
#[derive(Debug, Clone)]
pub struct ProcsConfig {
    pub file: std::path::PathBuf,
    pub methods: Vec<Method>,
    pub modes: Vec<Mode>,
    /// One N, or the sweep.
    pub procs: Vec<u32>,
    pub touch: Touch,
    pub mem_limit_bytes: Option<u64>,
    pub exe: std::path::PathBuf,
}

/// Progress: loads done of the total.
#[derive(Debug, Clone, Copy)]
pub struct ProcsProgress {
    pub done: u32,
    pub of: u32,
    pub method: Method,
    pub mode: Mode,
    pub procs: u32,
}

/// Runs every N, mode and method.
pub fn execute(
    cfg: &ProcsConfig,
    progress: &mut dyn FnMut(ProcsProgress),
) -> Result<ProcsReport, LoadError> {
    let meta = super::check_file(&cfg.file)?;
    let forwarder = Forwarder::install().map_err(LoadError::Signals)?;
    let mut mem_limit = None;
    if let Some(limit) = cfg.mem_limit_bytes {
        // Tried once up front, so the report can say which interface (or
        // why none) before any load; each load gets a fresh group.
        mem_limit = Some(match memlimit::create(limit) {
            Ok(g) => super::procs_report::MemLimit {
                limit_bytes: limit,
                via: Some(g.via()),
                unavailable: None,
            },
            Err(reason) => super::procs_report::MemLimit {
                limit_bytes: limit,
                via: None,
                unavailable: Some(reason),
            },
        });
    }
    // Before any load: a plan that cannot fit in memory would make the
    // OOM killer end somebody else's work.
    if let Some(available) = mem_available() {
        let limit = mem_limit
            .as_ref()
            .filter(|m| m.via.is_some())
            .map(|m| m.limit_bytes);
        check_memory(cfg, meta.len(), available, limit)?;
    }
    let total = (cfg.procs.len() * cfg.modes.len() * cfg.methods.len()) as u32;
    let mut done = 0;
    let mut runs = Vec::new();
    let start = super::identity::Identity::of(&meta);
    let mut changed: Option<String> = None;
    for &n in &cfg.procs {
        for &mode in &cfg.modes {
            for &method in &cfg.methods {
                if let Some(sig) = forwarder.pending() {
                    return Err(interrupted(sig));
                }
                let not_run = match &changed {
                    Some(_) => Some("not run: the file changed during an earlier load".into()),
                    None => start.change(&cfg.file).map(|why| {
                        let not_run = format!("not run: the file changed before this load: {why}");
                        changed = Some(why);
                        not_run
                    }),
                };
                if let Some(why) = not_run {
                    let mut run = ProcsRun::new(method, mode, n);
                    run.outcome = super::procs_report::Outcome::Invalid;
                    run.error = Some(why);
                    runs.push(run);
                    continue;
                }
                progress(ProcsProgress {
                    done,
                    of: total,
                    method,
                    mode,
                    procs: n,
                });
                let limited = mem_limit
                    .as_ref()
                    .filter(|m| m.via.is_some())
                    .map(|m| m.limit_bytes);
                let mut run = one(cfg, method, mode, n, limited, &forwarder)?;
                if let Some(why) = start.change(&cfg.file) {
                    run.outcome = super::procs_report::Outcome::Invalid;
                    run.error = Some(format!("the file changed during this load: {why}"));
                    changed = Some(why);
                }
                runs.push(run);
                done += 1;
            }
        }
    }
    let report = ProcsReport::new(
        cfg.file.clone(),
        meta.len(),
        cfg.touch,
        Procs {
            procs: cfg.procs.clone(),
            mem_limit,
            runs,
        },
        changed,
    );
    drop(forwarder);
    Ok(report)
}

/// What one process of a `--procs` load holds of its own, besides the
/// file's data: its stack, heap and page tables (tally's children hold
/// under 1 MiB of anonymous memory each; 4 MiB leaves room).
pub const PROCESS_BASE_BYTES: u64 = 4 << 20;

/// The memory `n` processes loading a file of `size_bytes` by `method`
/// need at once, and how that figure is made up: each process's own
/// (its base, plus the whole file for `read`, its buffers for the
/// streaming methods, page tables for the mmap methods) times `n`, plus
/// the file's pages in the page cache once (none for O_DIRECT).
pub fn memory_needed(method: Method, size_bytes: u64, n: u32) -> (u64, String) {
    use super::child::{BIG_CHUNK_BYTES, CHUNK_BYTES, URING_DEPTH};
    use crate::units::human_bytes;
    let page = sys::page_size().max(1);
    let own = match method {
        Method::Read => size_bytes,
        Method::ReadChunks | Method::FadviseRead => CHUNK_BYTES as u64,
        Method::Direct => BIG_CHUNK_BYTES as u64,
        Method::Uring | Method::UringDirect => (BIG_CHUNK_BYTES * URING_DEPTH) as u64,
        // One 8-byte page table entry per page mapped.
        Method::Mmap
        | Method::MmapSequential
        | Method::MmapWillneed
        | Method::MmapPopulate
        | Method::PopulateRead => size_bytes.div_ceil(page).saturating_mul(8),
    };
    let per_process = own.saturating_add(PROCESS_BASE_BYTES);
    let cache = match method {
        Method::Direct | Method::UringDirect => 0,
        _ => size_bytes,
    };
    let needed = per_process
        .saturating_mul(u64::from(n))
        .saturating_add(cache);
    let detail = format!(
        "{n} × {} per process{}",
        human_bytes(per_process),
        if cache > 0 {
            format!(" + {} of page cache", human_bytes(cache))
        } else {
            String::new()
        }
    );
    (needed, detail)
}

/// Refuses a plan that needs more memory than the machine has available,
/// before any load: `available_bytes` is MemAvailable, `limit_bytes` the
/// memory-limited group each load runs in (`None`: none), which bounds
/// what the loads can take.
pub fn check_memory(
    cfg: &ProcsConfig,
    size_bytes: u64,
    available_bytes: u64,
    limit_bytes: Option<u64>,
) -> Result<(), LoadError> {
    use crate::units::human_bytes;
    let Some(&n) = cfg.procs.iter().max() else {
        return Ok(());
    };
    for &method in &cfg.methods {
        let (needed, detail) = memory_needed(method, size_bytes, n);
        let (needed, detail) = match limit_bytes {
            Some(limit) if limit < needed => (
                limit,
                format!(
                    "its --mem-limit; {} without it: {detail}",
                    human_bytes(needed)
                ),
            ),
            _ => (needed, detail),
        };
        if needed > available_bytes {
            return Err(LoadError::NotEnoughMemory {
                what: format!(
                    "--procs {n} with {} of a {} file",
                    method.name(),
                    human_bytes(size_bytes)
                ),
                needed_bytes: needed,
                available_bytes,
                detail,
            });
        }
    }
    Ok(())
}

/// Children that are killed and reaped when dropped unless already reaped.
struct Children {
    kids: Vec<Kid>,
}

struct Kid {
    child: Child,
    reaped: bool,
}

impl Drop for Children {
    fn drop(&mut self) {
        for k in &mut self.kids {
            if !k.reaped {
                let _ = sys::process::kill(k.child.id(), libc::SIGKILL);
                let _ = sys::process::wait4(k.child.id());
                k.reaped = true;
            }
        }
    }
}

/// A line from child `idx`, or its end of output.
enum Msg {
    Line(usize, String),
    Eof(usize),
}

/// Waits for the next message, checking for a stop signal every 50 ms.
fn next(rx: &mpsc::Receiver<Msg>, forwarder: &Forwarder) -> Result<Option<Msg>, LoadError> {
    loop {
        if let Some(sig) = forwarder.pending() {
            return Err(interrupted(sig));
        }
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(m) => return Ok(Some(m)),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => return Ok(None),
        }
    }
}

fn mem_available() -> Option<u64> {
    let text = ProcRoot::default().read("meminfo").ok()?;
    procfs::meminfo::bytes(&text, "MemAvailable")
}

fn cached_bytes(path: &Path) -> Option<u64> {
    let f = std::fs::File::open(path).ok()?;
    let size = f.metadata().ok()?.len();
    crate::pagecache::residency(&f, path, size)
        .cached_pages()
        .map(|p| p.saturating_mul(sys::page_size()).min(size))
}

/// The figures of one child at the hold point.
fn measure(pid: u32, dev: &str, ino: &str, c: &mut ChildFigures) {
    let proc = ProcRoot::default();
    if let Ok(text) = proc.read_pid(pid, "smaps_rollup") {
        if let Some(m) = smaps_rollup::parse(text.as_bytes()) {
            c.rss_bytes = Some(m.rss_kb.saturating_mul(1024));
            c.pss_bytes = Some(m.pss_kb.saturating_mul(1024));
        }
        procfs::for_each_key_number(&text, |k, n| match k {
            "Pss_Anon" => c.pss_anon_bytes = Some(n.saturating_mul(1024)),
            "Pss_File" => c.pss_file_bytes = Some(n.saturating_mul(1024)),
            _ => {}
        });
    }
    if let Ok(text) = proc.read_pid(pid, "smaps") {
        c.file_map_pss_bytes = Some(smaps::file_kib(&text, dev, ino, "Pss").saturating_mul(1024));
    }
    if let Ok(text) = proc.read_pid(pid, "io") {
        procfs::for_each_key_number(&text, |k, n| {
            if k == "read_bytes" {
                c.storage_read_bytes = Some(n);
            }
        });
    }
}

fn touch_name(t: Touch) -> &'static str {
    match t {
        Touch::None => "none",
        Touch::Page => "page",
        Touch::All => "all",
    }
}

/// One load by N processes: the cache made cold or warm, N children
/// started and ready, the barrier opened, the hold point measured, the
/// children released and reaped.
fn one(
    cfg: &ProcsConfig,
    method: Method,
    mode: Mode,
    n: u32,
    mem_limit: Option<u64>,
    forwarder: &Forwarder,
) -> Result<ProcsRun, LoadError> {
    let meta = std::fs::metadata(&cfg.file).map_err(|source| LoadError::File {
        path: cfg.file.clone(),
        source,
    })?;
    let size = meta.len();
    let dev = maps::dev_field(meta.dev());
    let ino = meta.ino().to_string();
    let mut run = ProcsRun::new(method, mode, n);
    run.cached_before_bytes = prepare_cache(&cfg.file, mode, size);
    // Declared before the children, so it is dropped after them: the
    // group is removed once they are killed and reaped.
    let group: Option<Group> = match mem_limit {
        Some(limit) => match memlimit::create(limit) {
            Ok(g) => Some(g),
            Err(reason) => {
                run.error = Some(format!("no memory-limited group: {reason}"));
                return Ok(run);
            }
        },
        None => None,
    };
    let mut kids = Children { kids: Vec::new() };
    let (gate_read, gate_write): (OwnedFd, OwnedFd) =
        sys::process::pipe().map_err(LoadError::Spawn)?;
    let rx = spawn(cfg, method, n, gate_read, &mut kids, &mut run)?;
    let mut ended = wait_ready(&rx, forwarder, n)?;
    if let Some(g) = &group {
        for k in &kids.kids {
            if let Err(e) = g.add(k.child.id()) {
                run.error = Some(format!(
                    "cannot move a process into {}: {e}",
                    crate::text::path::display(g.path())
                ));
                return Ok(run);
            }
        }
    }
    run.mem_available_before_bytes = mem_available();
    let start = Instant::now();
    // One start byte per process (at most 256: one atomic pipe write).
    // EPIPE means every process is gone already: nothing to start.
    if let Ok(w) = gate_write.try_clone() {
        let _ = std::fs::File::from(w).write_all(&vec![1u8; n as usize]);
    }
    let (results, last_loaded) = wait_loaded(&rx, forwarder, &mut ended, start)?;
    // The hold point: every child that loaded still holds the data.
    for (i, c) in run.children.iter_mut().enumerate() {
        let loaded = results
            .get(i)
            .and_then(|r| r.as_ref())
            .is_some_and(|r| r.result.error.is_none());
        if loaded && !ended.get(i).copied().unwrap_or(true) {
            measure(c.pid, &dev, &ino, c);
        }
    }
    run.file_cached_bytes = cached_bytes(&cfg.file);
    run.mem_available_hold_bytes = mem_available();
    if let Some(g) = &group {
        run.group_peak_bytes = g.peak_bytes();
    }
    // Release: SIGTERM to each process (one holding the file exits 0 at
    // its sigwait), end of file on the barrier pipe for any that never
    // started.
    drop(gate_write);
    release(&mut kids, &results, &mut run);
    if let Some(g) = &group {
        run.group_oom_kills = g.oom_kills();
    }
    run.all_loaded_us = last_loaded.map(crate::units::micros);
    run.finish(size);
    if let Some(sig) = forwarder.pending() {
        return Err(interrupted(sig));
    }
    drop(kids);
    drop(group);
    Ok(run)
}

/// Makes the file's pages cold (evicted) or warm (read) for a load in
/// `mode`; what of it was cached before the load.
fn prepare_cache(file: &Path, mode: Mode, size: u64) -> Option<u64> {
    match mode {
        Mode::Cold => crate::pagecache::evict::evict_file(file)
            .ok()
            .and_then(|ev| {
                ev.after
                    .cached_pages()
                    .map(|p| p.saturating_mul(sys::page_size()).min(size))
            }),
        Mode::Warm => {
            if let Ok(f) = std::fs::File::open(file) {
                let _ = crate::pagecache::warm::warm(&f, size);
            }
            cached_bytes(file)
        }
    }
}

/// Starts the `n` holding children, each reading the barrier from
/// `gate_read`, and a thread per child passing on its lines.
fn spawn(
    cfg: &ProcsConfig,
    method: Method,
    n: u32,
    gate_read: OwnedFd,
    kids: &mut Children,
    run: &mut ProcsRun,
) -> Result<mpsc::Receiver<Msg>, LoadError> {
    let (tx, rx) = mpsc::channel();
    let parent = std::process::id().to_string();
    for idx in 0..n as usize {
        let argv: Vec<OsString> = vec![
            "load".into(),
            "--child".into(),
            method.name().into(),
            "--hold".into(),
            "--parent".into(),
            parent.clone().into(),
            "--touch".into(),
            touch_name(cfg.touch).into(),
            cfg.file.clone().into_os_string(),
        ];
        let stdin = gate_read.try_clone().map_err(LoadError::Spawn)?;
        let mut child = Command::new(&cfg.exe)
            .args(&argv)
            .stdin(Stdio::from(stdin))
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(LoadError::Spawn)?;
        let out = child.stdout.take();
        kids.kids.push(Kid {
            child,
            reaped: false,
        });
        run.children
            .push(ChildFigures::new(kids.kids[idx].child.id()));
        let tx = tx.clone();
        std::thread::spawn(move || {
            if let Some(out) = out {
                for line in BufReader::new(out).lines() {
                    match line {
                        Ok(l) => {
                            if tx.send(Msg::Line(idx, l)).is_err() {
                                return;
                            }
                        }
                        Err(_) => break,
                    }
                }
            }
            let _ = tx.send(Msg::Eof(idx));
        });
    }
    drop(gate_read);
    Ok(rx)
}

/// Waits until every child is ready (or gone) before the barrier opens;
/// which children have ended.
fn wait_ready(
    rx: &mpsc::Receiver<Msg>,
    forwarder: &Forwarder,
    n: u32,
) -> Result<Vec<bool>, LoadError> {
    let mut ready = vec![false; n as usize];
    let mut ended = vec![false; n as usize];
    while ready.iter().zip(&ended).any(|(r, e)| !r && !e) {
        match next(rx, forwarder)? {
            Some(Msg::Line(i, l)) if l == READY => {
                if let Some(r) = ready.get_mut(i) {
                    *r = true;
                }
            }
            Some(Msg::Line(..)) => {}
            Some(Msg::Eof(i)) => {
                if let Some(e) = ended.get_mut(i) {
                    *e = true;
                }
            }
            None => break,
        }
    }
    Ok(ended)
}

/// Waits until every child has loaded (or ended): each one's result, and
/// when the last loaded, from `start`.
fn wait_loaded(
    rx: &mpsc::Receiver<Msg>,
    forwarder: &Forwarder,
    ended: &mut [bool],
    start: Instant,
) -> Result<(Vec<Option<HoldResult>>, Option<Duration>), LoadError> {
    let mut results: Vec<Option<HoldResult>> = vec![None; ended.len()];
    let mut last_loaded = None;
    while results
        .iter()
        .zip(ended.iter())
        .any(|(r, e)| r.is_none() && !e)
    {
        match next(rx, forwarder)? {
            Some(Msg::Line(i, l)) => {
                if let Ok(r) = serde_json::from_str::<HoldResult>(&l)
                    && let Some(slot) = results.get_mut(i)
                {
                    *slot = Some(r);
                    last_loaded = Some(start.elapsed());
                }
            }
            Some(Msg::Eof(i)) => {
                if let Some(e) = ended.get_mut(i) {
                    *e = true;
                }
            }
            None => break,
        }
    }
    Ok((results, last_loaded))
}

/// Ends the children (SIGTERM), reaps each and notes how it ended, its
/// faults and its load's result.
fn release(kids: &mut Children, results: &[Option<HoldResult>], run: &mut ProcsRun) {
    for k in &kids.kids {
        let _ = sys::process::kill(k.child.id(), libc::SIGTERM);
    }
    for (i, k) in kids.kids.iter_mut().enumerate() {
        let waited = sys::process::wait4(k.child.id());
        k.reaped = true;
        let Some(c) = run.children.get_mut(i) else {
            continue;
        };
        if let Ok((exit, usage)) = waited {
            c.major_faults = Some(usage.major_faults);
            c.minor_faults = Some(usage.minor_faults);
            match exit {
                sys::process::Exit::Code(code) => c.exit_code = Some(code),
                sys::process::Exit::Signal { signal, .. } => {
                    c.signal = Some(sys::signal_name(signal))
                }
            }
        }
        if let Some(Some(r)) = results.get(i) {
            c.load_us = Some(r.load_us);
            c.checksum = r.result.checksum.clone();
            c.bytes_loaded = Some(r.result.bytes_loaded);
            c.error = r.result.error.clone();
            c.out_of_memory = r.out_of_memory;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(methods: &[Method], procs: &[u32]) -> ProcsConfig {
        ProcsConfig {
            file: "/f".into(),
            methods: methods.to_vec(),
            modes: vec![Mode::Warm],
            procs: procs.to_vec(),
            touch: Touch::All,
            mem_limit_bytes: None,
            exe: "/tally".into(),
        }
    }

    #[test]
    fn read_needs_a_copy_per_process_and_mmap_one_in_the_cache() {
        let gib = 1u64 << 30;
        let (read, detail) = memory_needed(Method::Read, gib, 256);
        assert_eq!(read, 256 * (gib + PROCESS_BASE_BYTES) + gib);
        assert_eq!(detail, "256 × 1.0 GiB per process + 1.0 GiB of page cache");
        let (mmap, _) = memory_needed(Method::Mmap, gib, 256);
        assert!(
            mmap < 3 * gib,
            "page tables and bases beside one cached copy: {mmap}"
        );
        let (direct, detail) = memory_needed(Method::Direct, gib, 2);
        assert_eq!(direct, 2 * (PROCESS_BASE_BYTES + (4 << 20)));
        assert!(!detail.contains("page cache"), "{detail}");
    }

    #[test]
    fn a_plan_beyond_available_memory_is_refused_with_the_figure_and_the_fix() {
        let gib = 1u64 << 30;
        let c = cfg(&[Method::Mmap, Method::Read], &[1, 2, 256]);
        let e = check_memory(&c, 4 * gib, 16 * gib, None).expect_err("refused");
        let msg = e.to_string();
        assert!(
            msg.starts_with("--procs 256 with read of a 4.0 GiB file needs about 1.0 TiB"),
            "{msg}"
        );
        assert!(
            msg.contains("256 × 4.0 GiB per process + 4.0 GiB of page cache"),
            "{msg}"
        );
        assert!(msg.contains("more than the 16.0 GiB available"), "{msg}");
        assert!(msg.contains("--mem-limit SIZE"), "{msg}");
        // Fits: mmap alone, or fewer processes.
        assert!(check_memory(&cfg(&[Method::Mmap], &[256]), 4 * gib, 16 * gib, None).is_ok());
        assert!(check_memory(&cfg(&[Method::Read], &[2]), 4 * gib, 16 * gib, None).is_ok());
        // A memory-limited group bounds the loads: the limit is what counts.
        assert!(check_memory(&c, 4 * gib, 16 * gib, Some(8 * gib)).is_ok());
        let e = check_memory(&c, 4 * gib, 16 * gib, Some(32 * gib)).expect_err("limit too high");
        assert!(
            e.to_string()
                .contains("needs about 32.0 GiB of memory (its --mem-limit"),
            "{e}"
        );
    }
}
