//! `tally cache`: residency of files, and evicting, warming or locking them.

use std::fs::File;
use std::io::{self, Read};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use super::report::{Action, CacheReport, CacheStream, FileReport, PathProblem, Shown};
use crate::pagecache::{self, evict, residency_of, walk, warm};
use crate::progress::Progress;
use crate::report::SCHEMA_VERSION;
use crate::sys::{self, mem::Mapping};

/// Buckets of a residency map (`-v`) when stdout is not a terminal.
pub const MAP_BUCKETS: u64 = 64;

/// Buckets of a residency map for a terminal `columns` wide (or the
/// default when not a terminal): the map fills the line, within 16..=256.
pub fn map_buckets(columns: Option<u16>) -> u64 {
    match columns {
        Some(c) => u64::from(c).saturating_sub(4).clamp(16, 256),
        None => MAP_BUCKETS,
    }
}

/// What to do and to which paths.
#[derive(Debug, Clone, Default)]
pub struct Config {
    pub action: Action,
    /// Paths as given; `-` means "read paths from stdin".
    pub paths: Vec<PathBuf>,
    pub recursive: bool,
    /// Paths on stdin are NUL-separated (else newline-separated).
    pub null_separated: bool,
    /// Compute a residency map per file.
    pub map: bool,
    /// Ranges per map; 0: as wide as stdout's terminal (see
    /// [`map_buckets`]), looked at when the walk starts.
    pub map_buckets: u64,
    /// Which rows the human report shows.
    pub shown: Shown,
    /// Residency from mincore(2) even where cachestat(2) works (the
    /// fallback path, for tests).
    pub mincore_only: bool,
}

/// Mappings held locked (`--lock`) until dropped.
pub struct Held {
    pub mappings: Vec<Mapping>,
    pub bytes: u64,
}

/// Why `tally cache` could not start.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// It names stdin, the cap or what is wrong, and the fix.
    #[error(transparent)]
    Stdin(#[from] crate::input::InputError),
    #[error("no paths given: name files or directories, or `-` to read them from stdin")]
    NoPaths,
    /// `-` was given and stdin held no path: empty, `/dev/null` or closed.
    #[error(
        "`-` read no path from stdin (it was empty or closed): pipe the paths in, one per line \
         (NUL-separated with -0), or name them as arguments"
    )]
    EmptyStdin,
    /// Stdin could not be taken to read `-` from.
    #[error("cannot read stdin: {0}")]
    OpenStdin(io::Error),
}

impl crate::failure::Failure for CacheError {
    fn exit_code(&self) -> u8 {
        1
    }
}

/// Expands `-` into the paths read from `stdin`, bounded
/// ([`crate::input::read_paths`]).
pub fn expand_stdin(
    paths: &[PathBuf],
    null_separated: bool,
    stdin: &mut dyn Read,
) -> Result<Vec<PathBuf>, CacheError> {
    let mut out = Vec::new();
    let mut read = false;
    for p in paths {
        if p.as_os_str() == "-" {
            if read {
                continue;
            }
            read = true;
            out.extend(crate::input::read_paths(stdin, "stdin", null_separated)?);
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

/// The data of `file` (`size` bytes) as `[start, end)` ranges, holes left
/// out (`SEEK_DATA`/`SEEK_HOLE`); the whole file where the filesystem
/// cannot say.
fn data_ranges(file: &File, size: u64) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < size {
        let start = match sys::file::seek_data(file, at) {
            Ok(Some(s)) => s,
            Ok(None) => break,
            Err(_) => return vec![(0, size)],
        };
        let end = match sys::file::seek_hole(file, start) {
            Ok(Some(e)) => e.min(size),
            Ok(None) => size,
            Err(_) => return vec![(0, size)],
        };
        if end <= start {
            break;
        }
        out.push((start, end));
        at = end;
    }
    out
}

/// Why `mlock` of `size` bytes failed, with `held` bytes locked already:
/// the locked-memory limit, when that is what refused it.
fn lock_failure(e: &io::Error, size: u64, held: u64) -> String {
    use crate::units::human_bytes;
    let limited = matches!(
        e.raw_os_error(),
        Some(libc::ENOMEM) | Some(libc::EPERM) | Some(libc::EAGAIN)
    );
    match memlock_limit() {
        Some(Some(limit)) if limited && sys::geteuid() != 0 => format!(
            "mlock failed: {e}: the locked-memory limit (RLIMIT_MEMLOCK, ulimit -l) is {}, \
             {} is locked already and this file needs {}; raise the limit \
             (ulimit -l, LimitMEMLOCK= in systemd, memlock in limits.conf) or run as root",
            human_bytes(limit),
            human_bytes(held),
            human_bytes(size)
        ),
        _ if limited => format!(
            "mlock failed: {e}: not enough memory to lock {} ({} locked already)",
            human_bytes(size),
            human_bytes(held)
        ),
        _ => format!("mlock failed: {e}"),
    }
}

/// The soft RLIMIT_MEMLOCK of this process from /proc/self/limits:
/// `Some(None)` when unlimited, `None` when it cannot be read.
fn memlock_limit() -> Option<Option<u64>> {
    let text = crate::procfs::ProcRoot::default()
        .read("self/limits")
        .ok()?;
    crate::procfs::limits::memlock_soft(&text)
}

/// What a walk of `tally cache` gave besides its rows.
pub struct Outcome {
    /// Paths skipped, and why.
    pub problems: Vec<PathProblem>,
    /// With `--lock`: the mappings held, until dropped.
    pub held: Option<Held>,
}

/// One file's work on a walking thread: its row, or why it has none.
/// With `--lock` the file comes back open, to be locked in order.
enum Worked {
    Row(FileReport),
    ToLock(FileReport, File),
    Failed(PathProblem),
}

/// Runs `tally cache` as configured on every core, giving each file's row
/// to `row` as it is made (on the calling thread; `row` returning `false`
/// stops the walk: nobody reads the rows any more). Memory does not grow
/// with the files. With `--lock` the locked mappings come back too: they
/// stay locked until the caller drops them.
pub fn execute_streaming(
    cfg: &Config,
    stdin: &mut dyn Read,
    row: &mut dyn FnMut(FileReport) -> bool,
) -> Result<Outcome, CacheError> {
    let paths = expand_stdin(&cfg.paths, cfg.null_separated, stdin)?;
    if paths.is_empty() {
        return Err(if cfg.paths.iter().any(|p| p.as_os_str() == "-") {
            CacheError::EmptyStdin
        } else {
            CacheError::NoPaths
        });
    }
    let mut problems = Vec::new();
    let mut held = Held {
        mappings: Vec::new(),
        bytes: 0,
    };
    let stop = AtomicBool::new(false);
    let opts = walk::Options {
        recursive: cfg.recursive,
        threads: 0,
    };
    walk::walk(
        &paths,
        opts,
        &stop,
        |f: walk::Found| match one_file(cfg, f) {
            Ok(w) => w,
            Err(p) => Worked::Failed(p),
        },
        |event| match event {
            walk::Event::File(Worked::Row(r)) => row(r),
            walk::Event::File(Worked::ToLock(r, file)) => row(lock(cfg, r, &file, &mut held)),
            walk::Event::File(Worked::Failed(p)) => {
                problems.push(p);
                true
            }
            walk::Event::Skipped(s) => {
                problems.push(PathProblem::new(&s.path, s.error));
                true
            }
        },
    );
    let held = (cfg.action == Action::Lock).then_some(held);
    Ok(Outcome { problems, held })
}

/// Runs `tally cache` as configured, each file's row handed to
/// `progress` as it is made, with the report as it stands; the walk stops
/// when nobody takes the rows any more (a reader that went away). Paths of
/// `-` come from stdin, where a pipe that sends nothing for a minute ends
/// the list. Returns the report's head and tail (totals, skipped paths)
/// and, with `--lock`, the mappings held locked until dropped.
pub fn execute(
    cfg: &Config,
    progress: &mut Progress<'_, CacheStream, FileReport>,
) -> Result<(CacheStream, Option<Held>), CacheError> {
    if cfg.mincore_only {
        crate::pagecache::use_mincore_only(true);
    }
    let mut stdin =
        crate::input::Stdin::new(crate::input::STDIN_IDLE).map_err(CacheError::OpenStdin)?;
    let buckets = match cfg.map_buckets {
        0 => map_buckets(sys::tty::stdout_columns()),
        n => n,
    };
    let cfg = &Config {
        map_buckets: buckets,
        ..cfg.clone()
    };
    let mut report = CacheStream::new(cfg.action, sys::page_size(), cfg.shown);
    let outcome = execute_streaming(cfg, &mut stdin, &mut |row| {
        report.add(&row);
        progress.row(&report, &row)
    })?;
    report.tail.problems = outcome.problems;
    Ok((report, outcome.held))
}

/// The end of `tally cache`: with `--lock`, holds the mappings `held`
/// locked until a stop signal, saying what is held and what could not
/// be; returns the exit status (1 when a path was skipped or a file not
/// locked).
pub fn hold(report: &CacheStream, held: Option<Held>) -> u8 {
    let failed = u8::from(report.has_problems());
    let Some(held) = held else {
        return failed;
    };
    let not_locked = report.lock_failures();
    if held.mappings.is_empty() {
        if not_locked > 0 {
            crate::diag!(
                "tally: nothing locked: {} could not be locked (the reason is above)",
                files(not_locked)
            );
            return 1;
        }
        if report.tail.total.files > 0 {
            crate::diag!("tally: nothing to lock: the files are empty");
        }
        return failed;
    }
    crate::diag!(
        "tally: holding {} locked in memory ({}); interrupt (Ctrl-C) to release",
        crate::units::human_bytes(held.bytes),
        files(held.mappings.len())
    );
    if not_locked > 0 {
        crate::diag!(
            "tally: {} could not be locked: exit status 1 when released",
            files(not_locked)
        );
    }
    if let Err(e) = sys::mem::wait_for_stop_signal() {
        crate::diag!("tally: cannot wait for a signal: {e}");
        return 1;
    }
    failed.max(u8::from(not_locked > 0))
}

fn files(n: usize) -> String {
    crate::units::count(n as u64, "file", "files")
}

/// Runs `tally cache` as configured and returns the whole report (every
/// row held: for callers that want totals of a few paths, such as `tally
/// serve` and `--textfile`). With `--lock` the locked mappings come back
/// too.
pub fn report_of(
    cfg: &Config,
    stdin: &mut dyn Read,
) -> Result<(CacheReport, Option<Held>), CacheError> {
    let mut files = Vec::new();
    let outcome = execute_streaming(cfg, stdin, &mut |r| {
        files.push(r);
        true
    })?;
    let mut report = CacheReport {
        schema_version: SCHEMA_VERSION,
        action: cfg.action,
        page_size_bytes: sys::page_size(),
        files,
        total: Default::default(),
        problems: outcome.problems,
    };
    report.total_up();
    Ok((report, outcome.held))
}

/// The work on one file, on a walking thread.
fn one_file(cfg: &Config, f: walk::Found) -> Result<Worked, PathProblem> {
    let walk::Found { path, file, meta } = f;
    let size = meta.len();
    let mut before = None;
    let mut read_bytes = None;
    let now = match cfg.action {
        Action::Status => residency_of(&file, &path, &meta),
        Action::Evict => {
            let e = evictor().evict(&file, &path, &meta);
            let map = match (cfg.map, &e.after) {
                (true, pagecache::Residency::Known { .. }) => {
                    pagecache::map_percent(&file, size, cfg.map_buckets)
                }
                _ => None,
            };
            return Ok(Worked::Row(FileReport {
                path,
                size_bytes: size,
                residency: e.after,
                before: Some(e.before),
                stayed_reason: e.stayed_reason,
                read_bytes: None,
                map_percent: map,
            }));
        }
        Action::Warm => {
            before = Some(residency_of(&file, &path, &meta));
            let stats = warm::warm_found(&file, &meta)
                .map_err(|e| PathProblem::new(&path, format!("read failed: {e}")))?;
            read_bytes = Some(stats.read_bytes);
            residency_of(&file, &path, &meta)
        }
        Action::Lock => {
            let r = FileReport {
                before: Some(residency_of(&file, &path, &meta)),
                residency: pagecache::Residency::Unknown {
                    reason: "not locked yet".into(),
                },
                path,
                size_bytes: size,
                stayed_reason: None,
                read_bytes: None,
                map_percent: None,
            };
            return Ok(Worked::ToLock(r, file));
        }
    };
    let map = match (cfg.map, &now) {
        (true, pagecache::Residency::Known { .. }) => {
            pagecache::map_percent(&file, size, cfg.map_buckets)
        }
        _ => None,
    };
    Ok(Worked::Row(FileReport {
        path,
        size_bytes: size,
        residency: now,
        before,
        stayed_reason: None,
        read_bytes,
        map_percent: map,
    }))
}

/// The evictor every walking thread of this process shares (what it learns
/// of the processes that map files is read once).
fn evictor() -> &'static evict::Evictor {
    static EVICTOR: std::sync::OnceLock<evict::Evictor> = std::sync::OnceLock::new();
    EVICTOR.get_or_init(evict::Evictor::new)
}

/// Maps and locks one file (in walk order, on the calling thread: the
/// locked-memory limit is spent file by file), then measures it again.
fn lock(cfg: &Config, mut r: FileReport, file: &File, held: &mut Held) -> FileReport {
    let size = r.size_bytes;
    // Only the file's data is locked: a hole has no page cache, and
    // locking it would fill memory with zero pages.
    let ranges = data_ranges(file, size);
    let data: u64 = ranges.iter().map(|(a, b)| b - a).sum();
    let available = crate::procfs::ProcRoot::default()
        .read("meminfo")
        .ok()
        .and_then(|t| crate::procfs::meminfo::bytes(&t, "MemAvailable"));
    if let Some(avail) = available
        && data > avail
    {
        use crate::units::human_bytes;
        r.stayed_reason = Some(format!(
            "its {} of data is more than the memory available ({} MemAvailable, {} locked \
             already): locking it would leave the OOM killer to end processes; lock fewer \
             files, or free memory",
            human_bytes(data),
            human_bytes(avail),
            human_bytes(held.bytes)
        ));
    } else if data > 0 {
        match Mapping::new(file, size, false) {
            Err(e) => r.stayed_reason = Some(format!("cannot map: {e}")),
            Ok(m) => {
                let locked = ranges
                    .iter()
                    .try_for_each(|(a, b)| m.lock_range(*a as usize, (*b - *a) as usize));
                if let Err(e) = locked {
                    r.stayed_reason = Some(lock_failure(&e, data, held.bytes));
                } else {
                    held.bytes = held.bytes.saturating_add(data);
                    held.mappings.push(m);
                }
            }
        }
    }
    r.residency = pagecache::residency(file, &r.path, size);
    if cfg.map && matches!(r.residency, pagecache::Residency::Known { .. }) {
        r.map_percent = pagecache::map_percent(file, size, cfg.map_buckets);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_locked_memory_limit_is_read_from_proc_limits() {
        assert!(
            memlock_limit().is_some(),
            "this kernel has /proc/self/limits"
        );
    }

    #[test]
    fn maps_fit_the_terminal() {
        assert_eq!(map_buckets(None), 64);
        assert_eq!(map_buckets(Some(80)), 76);
        assert_eq!(map_buckets(Some(10)), 16);
        assert_eq!(map_buckets(Some(1000)), 256);
    }

    #[test]
    fn stdin_paths_split_on_newlines_or_nuls() {
        let mut input: &[u8] = b"a\nb c\r\n\nd";
        let got = expand_stdin(&[PathBuf::from("-")], false, &mut input).expect("paths");
        assert_eq!(got, ["a", "b c", "d"].map(PathBuf::from));
        let mut input: &[u8] = b"x\ny\0z\0";
        let got = expand_stdin(
            &[PathBuf::from("first"), PathBuf::from("-")],
            true,
            &mut input,
        )
        .expect("paths");
        assert_eq!(got, ["first", "x\ny", "z"].map(PathBuf::from));
    }
}
