//! `tally cache`: residency of files, and evicting, warming or locking them.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::report::{Action, CacheReport, FileReport, PathProblem};
use crate::pagecache::{self, evict, residency, warm};
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
    /// Ranges per map (see [`map_buckets`]).
    pub map_buckets: u64,
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

/// The regular files named by `paths` (directories walked when
/// `recursive`), and the paths that could not be used, with why.
/// Symbolic links named directly are followed; inside directories they
/// are not, so a link loop cannot trap the walk. A file reached twice (a
/// hard link, or named twice) is listed once.
pub fn collect(paths: &[PathBuf], recursive: bool) -> (Vec<PathBuf>, Vec<PathProblem>) {
    let mut files = Vec::new();
    let mut problems = Vec::new();
    let mut seen = HashSet::new();
    let mut push = |path: PathBuf, meta: &std::fs::Metadata, files: &mut Vec<PathBuf>| {
        if seen.insert((meta.dev(), meta.ino())) {
            files.push(path);
        }
    };
    for path in paths {
        let meta = match std::fs::metadata(path) {
            Ok(m) => m,
            Err(e) => {
                problems.push(PathProblem::new(path, describe(&e)));
                continue;
            }
        };
        if meta.is_file() {
            push(path.clone(), &meta, &mut files);
        } else if meta.is_dir() {
            if !recursive {
                problems.push(PathProblem::new(
                    path,
                    "is a directory: add -r to include the files under it".into(),
                ));
                continue;
            }
            for entry in walkdir::WalkDir::new(path).follow_links(false) {
                match entry {
                    Ok(entry) if entry.file_type().is_file() => match entry.metadata() {
                        Ok(m) => push(entry.into_path(), &m, &mut files),
                        Err(e) => problems.push(PathProblem::new(entry.path(), e.to_string())),
                    },
                    Ok(_) => {}
                    Err(e) => {
                        let p = e.path().map(Path::to_path_buf).unwrap_or(path.clone());
                        let why = e.io_error().map(describe).unwrap_or_else(|| e.to_string());
                        problems.push(PathProblem::new(&p, why));
                    }
                }
            }
        } else {
            problems.push(PathProblem::new(
                path,
                format!(
                    "{}, not a regular file: name regular files, or directories with -r",
                    crate::input::kind_of(meta.file_type())
                ),
            ));
        }
    }
    (files, problems)
}

fn describe(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::ENOENT) => "no such file or directory".into(),
        Some(libc::EACCES) => "permission denied".into(),
        Some(libc::ELOOP) => "too many levels of symbolic links (a link loop)".into(),
        _ => e.to_string(),
    }
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

fn open(path: &Path) -> io::Result<File> {
    // O_NONBLOCK: a FIFO swapped in after the check must not hang us.
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
}

/// Runs `tally cache` as configured. With `--lock` the locked mappings
/// come back too: they stay locked until the caller drops them.
pub fn execute(
    cfg: &Config,
    stdin: &mut dyn Read,
) -> Result<(CacheReport, Option<Held>), CacheError> {
    let paths = expand_stdin(&cfg.paths, cfg.null_separated, stdin)?;
    if paths.is_empty() {
        return Err(CacheError::NoPaths);
    }
    let (files, mut problems) = collect(&paths, cfg.recursive);
    let mut report = CacheReport {
        schema_version: SCHEMA_VERSION,
        action: cfg.action,
        page_size_bytes: sys::page_size(),
        files: Vec::with_capacity(files.len()),
        total: Default::default(),
        problems: Vec::new(),
    };
    let mut held = Held {
        mappings: Vec::new(),
        bytes: 0,
    };
    for path in files {
        match one_file(cfg, &path, &mut held) {
            Ok(f) => report.files.push(f),
            Err(why) => problems.push(PathProblem::new(&path, why)),
        }
    }
    report.problems = problems;
    report.total_up();
    let held = (cfg.action == Action::Lock).then_some(held);
    Ok((report, held))
}

fn one_file(cfg: &Config, path: &Path, held: &mut Held) -> Result<FileReport, String> {
    if cfg.action == Action::Evict {
        let e = evict::evict_file(path).map_err(|e| match e {
            evict::EvictError::Open { source, .. } => format!("cannot open: {}", describe(&source)),
            other => other.to_string(),
        })?;
        // The file is opened again only to draw its map (-v).
        let map = match (cfg.map, &e.after) {
            (true, pagecache::Residency::Known { .. }) => open(path)
                .ok()
                .and_then(|f| pagecache::map_percent(&f, e.size_bytes, cfg.map_buckets)),
            _ => None,
        };
        return Ok(FileReport {
            path: path.to_path_buf(),
            size_bytes: e.size_bytes,
            residency: e.after,
            before: Some(e.before),
            stayed_reason: e.stayed_reason,
            read_bytes: None,
            map_percent: map,
        });
    }
    let file = open(path).map_err(|e| format!("cannot open: {}", describe(&e)))?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut before = None;
    let mut read_bytes = None;
    let mut stayed_reason = None;
    match cfg.action {
        Action::Status | Action::Evict => {}
        Action::Warm => {
            before = Some(residency(&file, path, size));
            let stats = warm::warm(&file, size).map_err(|e| format!("read failed: {e}"))?;
            read_bytes = Some(stats.read_bytes);
        }
        Action::Lock => {
            before = Some(residency(&file, path, size));
            if size > 0 {
                let m = Mapping::new(&file, size, false).map_err(|e| format!("cannot map: {e}"))?;
                if let Err(e) = m.lock() {
                    stayed_reason = Some(lock_failure(&e, size, held.bytes));
                } else {
                    held.bytes = held.bytes.saturating_add(size);
                    held.mappings.push(m);
                }
            }
        }
    }
    let now = residency(&file, path, size);
    let map = match (cfg.map, &now) {
        (true, pagecache::Residency::Known { .. }) => {
            pagecache::map_percent(&file, size, cfg.map_buckets)
        }
        _ => None,
    };
    Ok(FileReport {
        path: path.to_path_buf(),
        size_bytes: size,
        residency: now,
        before,
        stayed_reason,
        read_bytes,
        map_percent: map,
    })
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

    #[test]
    fn directories_need_r_and_link_loops_end() {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        std::fs::write(d.join("a"), b"a").expect("write");
        std::fs::create_dir(d.join("sub")).expect("mkdir");
        std::fs::write(d.join("sub/b"), b"b").expect("write");
        std::os::unix::fs::symlink(d, d.join("sub/loop")).expect("symlink");
        std::os::unix::fs::symlink("self", d.join("self")).expect("symlink");
        std::fs::hard_link(d.join("a"), d.join("a2")).expect("link");

        let (files, problems) = collect(&[d.to_path_buf()], false);
        assert!(files.is_empty());
        assert_eq!(problems.len(), 1);

        let (files, problems) = collect(&[d.to_path_buf()], true);
        // a and its hard link a2 count once, plus sub/b.
        assert_eq!(files.len(), 2, "{files:?}");
        assert!(problems.is_empty(), "{problems:?}");

        let (files, problems) = collect(&[d.join("self"), d.join("missing")], true);
        assert!(files.is_empty());
        assert_eq!(problems.len(), 2);
        assert!(problems.iter().any(|p| p.error.contains("loop")));
    }
}
