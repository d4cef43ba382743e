//! `tally cp`: copies that leave the page cache as they found it.
//!
//! Per file: a reflink (`FICLONE`) where the filesystem shares extents;
//! else `copy_file_range` over the source's data segments only (holes stay
//! holes); else `pread` + `pwritev2(RWF_DONTCACHE)`; else plain
//! `pread`/`pwrite`. Data moves in 8 MiB windows: after each window the
//! destination's dirty pages are sent to storage (`sync_file_range`) and
//! dropped one window later, and the source's 2 MiB blocks that had no
//! page cached before the copy are dropped (`POSIX_FADV_DONTNEED`); blocks
//! that were cached stay cached. `--keep-cache` skips all of that.
//!
//! The copy is written to a temporary file in the destination's directory
//! and renamed over the destination only when complete, so a failure
//! (ENOSPC, EIO, a signal) never leaves a half-written file under the
//! destination's name, and the temporary file is removed.

pub mod args;
pub mod command;

pub use command::execute;
pub mod report;
mod tree;

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Instant;

use crate::pagecache::warm::data_segments;
use crate::place::{self as dest, Existing, PlaceError, Temp};
use crate::progress::Progress;
use crate::sys::{
    self,
    cache::Advice,
    file::{SyncRange, copy_range, pread, pwrite},
};
use crate::text::path::display;
use report::{CopyStream, FileCopy, Method, Problem};

/// Data moves in windows of this size; writeback and dropping follow them.
pub const WINDOW_BYTES: u64 = 8 << 20;
/// Destination windows under writeback before the oldest is waited for:
/// the copy runs ahead of the disk by this many windows.
pub const WRITEBACK_WINDOWS: usize = 1;
/// Source residency is checked, and dropped, in blocks of this size (the
/// largest folio ext4 uses; DONTNEED drops only folios wholly inside).
pub const BLOCK_BYTES: u64 = 2 << 20;

/// What to copy where.
#[derive(Debug, Clone, Default)]
pub struct Config {
    pub sources: Vec<PathBuf>,
    pub destination: PathBuf,
    pub recursive: bool,
    /// `-p`: times and ownership too (mode is always kept).
    pub preserve: bool,
    /// fsync each file before the rename and its directory after.
    pub sync: bool,
    /// Leave the pages the copy brought in cached.
    pub keep_cache: bool,
    /// How to move the data.
    pub via: Via,
    /// Write to a named temporary file even where `O_TMPFILE` works (the
    /// fallback for filesystems without it; for tests).
    pub named_temp: bool,
}

/// How to move the data (`--via`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Via {
    /// Reflink, else copy_file_range, else the fallbacks below.
    #[default]
    Auto,
    /// copy_file_range with sync_file_range + DONTNEED windows.
    CopyFileRange,
    /// read + pwritev2(RWF_DONTCACHE): the kernel drops the written pages
    /// once written back, without the copy waiting for it (Linux 6.14+).
    Dontcache,
    /// read + write with sync_file_range + DONTNEED windows.
    ReadWrite,
}

impl crate::failure::Failure for CopyError {
    fn exit_code(&self) -> u8 {
        1
    }
}

/// Why `tally cp` could not start at all.
#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    #[error(
        "{} is not a directory: with several sources the destination must be an existing directory",
        display(.0)
    )]
    NotADirectory(PathBuf),
    #[error(
        "{} is not an existing directory: create it first (mkdir -p), or drop the trailing / (or /.) to copy to that name",
        display(.0)
    )]
    NoSuchDirectory(PathBuf),
    #[error("cannot use {} as the destination directory: {source}", display(path))]
    DestinationDir { path: PathBuf, source: io::Error },
}

/// Why one file could not be copied. Each says what to do.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("cannot open {}: {source}", display(path))]
    OpenSource { path: PathBuf, source: io::Error },
    #[error(
        "{} is {kind}, not a regular file: not copied; cp copies regular files, links and \
         directories (-r)",
        display(path)
    )]
    NotRegular { path: PathBuf, kind: &'static str },
    #[error(
        "{} and {} are the same file; nothing copied",
        display(src),
        display(dst)
    )]
    SameFile { src: PathBuf, dst: PathBuf },
    #[error("{} is a directory: name a file, or copy into it with a trailing /", display(.0))]
    DestinationIsDir(PathBuf),
    #[error(
        "cannot open the destination's directory {}: {source} — create it first, or name an existing directory; nothing was copied",
        display(dir)
    )]
    DestinationDir { dir: PathBuf, source: io::Error },
    /// A destination link the kernel's link protection would not follow, or
    /// no temporary file in its directory (said by `crate::place`).
    #[error(transparent)]
    Place(PlaceError),
    #[error("cannot read {}: {source}", display(path))]
    Read { path: PathBuf, source: io::Error },
    #[error("cannot write {}: {source}{hint}", display(path))]
    Write {
        path: PathBuf,
        source: io::Error,
        hint: &'static str,
    },
    #[error("cannot rename the finished copy to {}: {source}", display(path))]
    Rename { path: PathBuf, source: io::Error },
    #[error(
        "{} changed while it was copied ({what}): nothing copied — copy it again once nothing writes to it",
        display(path)
    )]
    Changed { path: PathBuf, what: String },
    #[error("{}: {message}", display(path))]
    Other { path: PathBuf, message: String },
    /// A signal asked the copy to stop while this file was copied: nothing
    /// of it was kept.
    #[error("{}: not copied: the copy was interrupted", display(path))]
    Interrupted { path: PathBuf },
}

/// Where a copy could not be put, in cp's words.
impl From<PlaceError> for FileError {
    fn from(e: PlaceError) -> FileError {
        match e {
            PlaceError::DestinationIsDir(path) => FileError::DestinationIsDir(path),
            PlaceError::DestinationDir { dir, source } => FileError::DestinationDir { dir, source },
            e @ PlaceError::ProtectedLink { .. } => FileError::Place(e),
            e @ PlaceError::Temp { .. } => FileError::Place(e),
            PlaceError::Rename { path, source } => FileError::Rename { path, source },
            PlaceError::Other { path, message } => FileError::Other { path, message },
        }
    }
}

fn write_error(path: &Path, source: io::Error) -> FileError {
    let hint = match source.raw_os_error() {
        Some(libc::ENOSPC) => {
            " — the destination's filesystem is full: free space or copy elsewhere; no partial file was left"
        }
        Some(libc::EDQUOT) => " — your disk quota is used up; no partial file was left",
        Some(libc::EIO) => {
            " — the storage reported an I/O error; no partial file was left, check the device"
        }
        Some(libc::EFBIG) => " — the destination's filesystem cannot hold a file this large",
        _ => " — no partial file was left",
    };
    FileError::Write {
        path: path.to_path_buf(),
        source,
        hint,
    }
}

/// One planned copy.
#[derive(Debug, Clone)]
enum Job {
    /// A file named as a source (or a FIFO or device, refused when copied).
    File { src: PathBuf, dst: PathBuf },
    /// A directory named as a source, copied with what is under it.
    Tree { src: PathBuf, dst: PathBuf },
}

/// Whether `path` can only name a directory: it ends with `/`, `/.` or
/// `/..`, or is `.` or `..`.
fn names_a_directory(path: &Path) -> bool {
    let b = path.as_os_str().as_bytes();
    b.ends_with(b"/") || b.ends_with(b"/.") || b.ends_with(b"/..") || b == b"." || b == b".."
}

/// The copies `cfg` asks for, and the sources skipped with why.
fn plan(cfg: &Config) -> Result<(Vec<Job>, Vec<Problem>), CopyError> {
    let dst = &cfg.destination;
    let dst_meta = std::fs::metadata(dst);
    let dst_is_dir = dst_meta.as_ref().is_ok_and(|m| m.is_dir());
    let into_dir = dst_is_dir || cfg.sources.len() > 1;
    if into_dir && !dst_is_dir {
        return Err(CopyError::NotADirectory(dst.clone()));
    }
    // `nodir/` or `nodir/.`: a directory was meant; say so before copying
    // anything (Path drops a trailing `.`, so `nodir/.` would else name
    // the file `nodir`).
    if !dst_is_dir && names_a_directory(dst) {
        return Err(match dst_meta {
            Err(e) if !matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ENOTDIR)) => {
                CopyError::DestinationDir {
                    path: dst.clone(),
                    source: e,
                }
            }
            _ => CopyError::NoSuchDirectory(dst.clone()),
        });
    }
    let mut jobs = Vec::new();
    let mut problems = Vec::new();
    for src in &cfg.sources {
        let meta = match std::fs::metadata(src) {
            Ok(m) => m,
            Err(e) => {
                problems.push(Problem::new(src, format!("cannot read: {e}")));
                continue;
            }
        };
        let target = if into_dir {
            match src.file_name() {
                Some(name) => dst.join(name),
                None => {
                    problems.push(Problem::new(
                        src,
                        "has no file name to copy under; name the destination in full".into(),
                    ));
                    continue;
                }
            }
        } else {
            dst.clone()
        };
        if !meta.is_dir() {
            jobs.push(Job::File {
                src: src.clone(),
                dst: target,
            });
            continue;
        }
        if !cfg.recursive {
            problems.push(Problem::new(
                src,
                "is a directory: add -r to copy it and what is under it".into(),
            ));
            continue;
        }
        // Refuse to copy a directory into itself.
        if let (Ok(s), Some(parent)) = (
            std::fs::canonicalize(src),
            target.parent().and_then(|p| std::fs::canonicalize(p).ok()),
        ) && parent.starts_with(&s)
        {
            problems.push(Problem::new(
                src,
                format!("cannot copy a directory into itself ({})", display(&target)),
            ));
            continue;
        }
        jobs.push(Job::Tree {
            src: src.clone(),
            dst: target,
        });
    }
    Ok((jobs, problems))
}

/// How a copy that a signal stopped ended.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Interrupted {
    /// The signal's name (`SIGINT`).
    pub signal: String,
    #[serde(skip)]
    pub signal_number: i32,
    /// The files being copied when it came: none of them was kept.
    #[serde(
        serialize_with = "crate::text::path::serialize_vec",
        default,
        skip_deserializing
    )]
    pub stopped_at: Vec<PathBuf>,
}

/// What a copy made besides its files' rows.
#[derive(Debug, Default)]
pub struct Outcome {
    /// The files copied, and their bytes.
    pub files: u64,
    pub bytes: u64,
    pub directories: u64,
    pub symlinks: u64,
    pub problems: Vec<Problem>,
    /// Set when a signal stopped the copy (see [`crate::sys::cleanup::catch_stops`]).
    pub interrupted: Option<Interrupted>,
}

/// What the copies of one run share.
pub(crate) struct Shared<'a> {
    pub cfg: &'a Config,
    /// Whether reflinks work between the source's and the destination's
    /// filesystems: tried once, not once per file.
    reflink: std::sync::atomic::AtomicU8,
    /// Bytes copied so far, over every thread.
    pub done_bytes: std::sync::atomic::AtomicU64,
}

const REFLINK_UNKNOWN: u8 = 0;
const REFLINK_WORKS: u8 = 1;
const REFLINK_FAILS: u8 = 2;

impl<'a> Shared<'a> {
    pub fn new(cfg: &'a Config) -> Shared<'a> {
        Shared {
            cfg,
            reflink: std::sync::atomic::AtomicU8::new(REFLINK_UNKNOWN),
            done_bytes: std::sync::atomic::AtomicU64::new(0),
        }
    }
}

/// Whether a signal asked the copy to stop.
pub(crate) fn stopping() -> bool {
    sys::cleanup::stop_requested().is_some()
}

/// Copies as configured, handing each copied file's row to `progress` as
/// it is made (memory does not grow with the files), and the bytes done
/// as they move. Files that fail are listed
/// in the outcome's problems; the others are copied. A directory named as
/// a source is copied on every core (the `tree` module).
pub fn execute_streaming(
    cfg: &Config,
    progress: &mut Progress<'_, CopyStream, FileCopy>,
) -> Result<Outcome, CopyError> {
    // The report's head, as the rows go out: its tail comes at the end.
    let head = CopyStream::default();
    let (jobs, problems) = plan(cfg)?;
    let mut out = Outcome {
        problems,
        ..Outcome::default()
    };
    let shared = Shared::new(cfg);
    let files_only = jobs.iter().all(|j| matches!(j, Job::File { .. }));
    let total_bytes = files_only.then(|| {
        jobs.iter()
            .filter_map(|j| match j {
                Job::File { src, .. } => std::fs::metadata(src).ok().map(|m| m.len()),
                Job::Tree { .. } => None,
            })
            .fold(0u64, |a, b| a.saturating_add(b))
    });
    let mut files = 0u64;
    for job in jobs {
        if stopping() {
            break;
        }
        match job {
            Job::File { src, dst } => {
                let base = shared.done_bytes.load(Ordering::Relaxed);
                let mut on_bytes =
                    |n: u64| progress.bytes(base.saturating_add(n), total_bytes, files);
                match copy_file_with(&shared, &src, &dst, &mut on_bytes) {
                    Ok((f, deferred)) => {
                        let f = match deferred {
                            Some(d) => d.finish(f),
                            None => f,
                        };
                        shared.done_bytes.fetch_add(f.size_bytes, Ordering::Relaxed);
                        files += 1;
                        out.bytes = out.bytes.saturating_add(f.size_bytes);
                        // A copy goes on when nobody reads its report.
                        progress.row(&head, &f);
                    }
                    Err(FileError::Interrupted { path }) => {
                        out.interrupted
                            .get_or_insert_with(interrupted)
                            .stopped_at
                            .push(path);
                    }
                    Err(e) => out.problems.push(Problem::new(&src, e.to_string())),
                }
            }
            Job::Tree { src, dst } => {
                let mut bytes = 0u64;
                tree::copy(&shared, &src, &dst, &mut out, &mut |f| {
                    files += 1;
                    bytes = bytes.saturating_add(f.size_bytes);
                    let done = shared.done_bytes.load(Ordering::Relaxed);
                    progress.bytes(done, total_bytes, files);
                    progress.row(&head, &f);
                });
                out.bytes = out.bytes.saturating_add(bytes);
            }
        }
    }
    if sys::cleanup::stop_requested().is_some() {
        out.interrupted.get_or_insert_with(interrupted);
    }
    out.files = files;
    Ok(out)
}

/// The record of a stop, for the signal that asked for it.
fn interrupted() -> Interrupted {
    let sig = sys::cleanup::stop_requested().unwrap_or(libc::SIGINT);
    Interrupted {
        signal: sys::signal_name(sig),
        signal_number: sig,
        stopped_at: Vec::new(),
    }
}

fn set_times(file: &File, meta: &std::fs::Metadata) -> io::Result<()> {
    let times = std::fs::FileTimes::new()
        .set_accessed(meta.accessed()?)
        .set_modified(meta.modified()?);
    file.set_times(times)
}

/// Copies one regular file to `dst` through a temporary file.
pub fn copy_file(
    cfg: &Config,
    src: &Path,
    dst: &Path,
    on_bytes: &mut dyn FnMut(u64),
) -> Result<FileCopy, FileError> {
    let shared = Shared::new(cfg);
    let (f, deferred) = copy_file_with(&shared, src, dst, on_bytes)?;
    Ok(match deferred {
        Some(d) => d.finish(f),
        None => f,
    })
}

fn copy_file_with(
    shared: &Shared,
    src: &Path,
    dst: &Path,
    on_bytes: &mut dyn FnMut(u64),
) -> Result<(FileCopy, Option<Deferred>), FileError> {
    let (source, meta) = open_source(src)?;
    // The destination's directory is opened, and a link at its name judged,
    // before any data moves (see `dest`).
    let dest = dest::resolve(dst)?;
    match dest.existing {
        Existing::File(d) if d.dev == meta.dev() && d.ino == meta.ino() => {
            return Err(FileError::SameFile {
                src: src.to_path_buf(),
                dst: dst.to_path_buf(),
            });
        }
        Existing::Dir => return Err(FileError::DestinationIsDir(dst.to_path_buf())),
        // Renaming over /dev/null would replace the device itself.
        Existing::Special => {
            return Err(FileError::Other {
                path: dst.to_path_buf(),
                message: "is a device, FIFO or socket: tally cp writes regular files only (use cat or dd to write into it)".into(),
            });
        }
        _ => {}
    }
    copy_into(shared, src, source, meta, dest, on_bytes)
}

/// Opens a source named by the user for reading and checks that what was
/// opened is a regular file.
fn open_source(src: &Path) -> Result<(File, std::fs::Metadata), FileError> {
    let opened = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOCTTY | libc::O_NONBLOCK)
        .open(src);
    checked_source(src, opened, || {
        std::fs::metadata(src).map(|m| crate::input::kind_of(m.file_type()))
    })
}

/// Opens the source `name` in the directory `dir` (`src` its path, for
/// messages) as [`open_source`] does, `O_NOFOLLOW`: a link swapped in for
/// a file since the directory was read is not followed.
pub(crate) fn open_source_at(
    dir: &File,
    name: &std::ffi::OsStr,
    src: &Path,
) -> Result<(File, std::fs::Metadata), FileError> {
    let flags = libc::O_RDONLY | libc::O_NOCTTY | libc::O_NONBLOCK | libc::O_NOFOLLOW;
    let opened = sys::file::open_at(dir, name, flags, 0);
    checked_source(src, opened, || {
        sys::file::stat_at(dir, name).map(|st| crate::input::kind_of_mode(st.mode))
    })
}

/// The source `opened`, checked to be a regular file; `kind` says what it
/// is when it could not be opened.
fn checked_source(
    src: &Path,
    opened: io::Result<File>,
    kind: impl FnOnce() -> io::Result<&'static str>,
) -> Result<(File, std::fs::Metadata), FileError> {
    let open_error = |e| FileError::OpenSource {
        path: src.to_path_buf(),
        source: e,
    };
    let source = match opened {
        Ok(f) => f,
        Err(e) => {
            // A socket cannot be opened at all (ENXIO, "No such device or
            // address"): say what it is, as for a FIFO or a device.
            return Err(match kind() {
                Ok(k) if !matches!(k, "a regular file" | "a directory" | "a symbolic link") => {
                    FileError::NotRegular {
                        path: src.to_path_buf(),
                        kind: k,
                    }
                }
                _ => open_error(e),
            });
        }
    };
    let meta = source.metadata().map_err(open_error)?;
    if !meta.is_file() {
        return Err(FileError::NotRegular {
            path: src.to_path_buf(),
            kind: crate::input::kind_of(meta.file_type()),
        });
    }
    Ok((source, meta))
}

/// A copy in place whose destination pages are still to be written back
/// and dropped: left for later, with others, so that the copy does not
/// wait for the disk file by file (`tally cp -r` of many small files).
pub(crate) struct Deferred {
    temp: Temp,
}

impl Deferred {
    /// Starts the copy's writeback, without waiting for it.
    pub fn start(&self) {
        let _ = sys::file::sync_range(&self.temp.file, 0, 0, SyncRange::Start);
    }

    /// Waits for the copy's writeback, drops its pages and completes its
    /// row with what stayed cached.
    pub fn finish(self, mut f: FileCopy) -> FileCopy {
        let out = &self.temp.file;
        let _ = sys::file::sync_range(out, 0, 0, SyncRange::Wait);
        let _ = sys::cache::fadvise(out, 0, 0, Advice::DontNeed);
        f.destination_cached_pages = sys::cache::cachestat(out, 0, 0)
            .ok()
            .map(|s| s.cached_pages);
        f
    }
}

/// Copies the open regular file `source` (`src`, its `stat` `meta`) to
/// `dest`: the data, the mode (and with `-p` owner and times), put in
/// place whole. The destination's pages are dropped by the caller
/// ([`Deferred::finish`]) unless they are kept or need no dropping.
pub(crate) fn copy_into(
    shared: &Shared,
    src: &Path,
    source: File,
    meta: std::fs::Metadata,
    dest: dest::Dest,
    on_bytes: &mut dyn FnMut(u64),
) -> Result<(FileCopy, Option<Deferred>), FileError> {
    let cfg = shared.cfg;
    let started = Instant::now();
    let dst_path = dest.path.clone();
    let dst = dst_path.as_path();
    let mut temp = Temp::create(&dest, !cfg.named_temp)?;
    let size = meta.len();
    let before = sys::cache::cachestat(&source, 0, 0).ok();
    let before_pages = before.map(|s| s.cached_pages);

    let mut copied = Copied::default();
    let mut method = Method::Reflink;
    if reflink(shared, &source, &temp.file, size) {
        copied.data_bytes = size;
        copied.end = size;
        on_bytes(size);
    } else {
        method = match cfg.via {
            // /proc and /sys files claim size 0 yet have content.
            _ if size == 0 => Method::ReadWrite,
            Via::Auto | Via::CopyFileRange => Method::CopyFileRange,
            Via::Dontcache => Method::ReadWriteDontcache,
            Via::ReadWrite => Method::ReadWrite,
        };
        copied = copy_data(
            cfg,
            &source,
            &temp.file,
            src,
            dst,
            &meta,
            before,
            &mut method,
            on_bytes,
        )?;
    }
    let out = &temp.file;
    // A file written to while it was copied gives a copy that never
    // existed (a shrunk file would even be re-extended with stale data):
    // refuse it. A file that only claims a larger size (sysfs) ends early
    // with its size and time unchanged; its copy ends where its data did.
    if size > 0 {
        let after = source.metadata().map_err(|e| FileError::Read {
            path: src.to_path_buf(),
            source: e,
        })?;
        if let Some(what) = changed(&meta, &after, copied.ended_at) {
            return Err(FileError::Changed {
                path: src.to_path_buf(),
                what,
            });
        }
    }
    let length = copied.ended_at.unwrap_or(size);
    if size > 0 && copied.end != length {
        // Trailing holes: the length comes from the source, not the data.
        out.set_len(length).map_err(|e| write_error(dst, e))?;
    }
    let notes = keep_metadata(cfg, out, &meta, dst)?;
    if cfg.sync {
        out.sync_all().map_err(|e| write_error(dst, e))?;
    }
    // Pages of the last windows are written back and dropped by the
    // caller (`Deferred`); RWF_DONTCACHE pages leave as their writeback
    // completes, and a reflink has none.
    let defer =
        !(cfg.keep_cache || method == Method::Reflink || method == Method::ReadWriteDontcache);
    temp.commit(&dest)?;
    if cfg.sync {
        dest.dir
            .sync_all()
            .map_err(|e| write_error(&dest.dir_path, e))?;
    }
    let after_pages = sys::cache::cachestat(&source, 0, 0)
        .ok()
        .map(|s| s.cached_pages);
    let row = FileCopy {
        source: src.to_path_buf(),
        destination: dst.to_path_buf(),
        size_bytes: length.max(copied.data_bytes),
        data_bytes: copied.data_bytes,
        method,
        wall_ns: u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX),
        source_cached_before_pages: before_pages,
        source_cached_after_pages: after_pages,
        destination_cached_pages: None,
        notes,
    };
    if defer {
        return Ok((row, Some(Deferred { temp })));
    }
    let dest_pages = sys::cache::cachestat(&temp.file, 0, 0)
        .ok()
        .map(|s| s.cached_pages);
    Ok((
        FileCopy {
            destination_cached_pages: dest_pages,
            ..row
        },
        None,
    ))
}

/// Tries a reflink of `source` into `out` where `--via auto` allows one
/// and this filesystem was not found to refuse them; whether it worked.
fn reflink(shared: &Shared, source: &File, out: &File, size: u64) -> bool {
    let try_reflink = size > 0
        && shared.cfg.via == Via::Auto
        && shared.reflink.load(Ordering::Relaxed) != REFLINK_FAILS;
    try_reflink
        && match sys::file::clone_file(source, out) {
            Ok(()) => {
                shared.reflink.store(REFLINK_WORKS, Ordering::Relaxed);
                true
            }
            Err(e) => {
                // Not this filesystem, or not between these two: no more
                // tries. Another error may be this file's alone.
                if is_unsupported(&e) && shared.reflink.load(Ordering::Relaxed) == REFLINK_UNKNOWN {
                    shared.reflink.store(REFLINK_FAILS, Ordering::Relaxed);
                }
                false
            }
        }
}

/// Gives the copy `out` the source's mode and, with `-p`, its owner and
/// times: notes for what could not be kept.
fn keep_metadata(
    cfg: &Config,
    out: &File,
    meta: &std::fs::Metadata,
    dst: &Path,
) -> Result<Vec<String>, FileError> {
    let mut mode = if cfg.preserve {
        meta.mode() & 0o7777
    } else {
        meta.mode() & 0o777
    };
    let mut notes = Vec::new();
    if cfg.preserve {
        if let Err(e) = std::os::unix::fs::fchown(out, Some(meta.uid()), Some(meta.gid())) {
            // As cp: keep the group if that alone is allowed, and never
            // a setuid/setgid bit for an owner the copy does not have.
            let _ = std::os::unix::fs::fchown(out, None, Some(meta.gid()));
            let special = mode & (libc::S_ISUID | libc::S_ISGID | libc::S_ISVTX);
            mode &= !(libc::S_ISUID | libc::S_ISGID | libc::S_ISVTX);
            if special != 0 {
                notes.push(format!(
                    "ownership not kept: {e}; setuid, setgid and sticky bits cleared"
                ));
            } else {
                notes.push(format!("ownership not kept: {e}"));
            }
        }
        if let Err(e) = set_times(out, meta) {
            notes.push(format!("times not kept: {e}"));
        }
    }
    out.set_permissions(std::fs::Permissions::from_mode(mode))
        .map_err(|e| FileError::Other {
            path: dst.to_path_buf(),
            message: format!("cannot set the mode: {e}"),
        })?;
    Ok(notes)
}

/// How the source changed between `before` and `after` the copy, if it
/// did; `ended_at`: where its data ended early.
fn changed(
    before: &std::fs::Metadata,
    after: &std::fs::Metadata,
    ended_at: Option<u64>,
) -> Option<String> {
    if after.len() != before.len() {
        return Some(format!(
            "its size went from {} to {} bytes",
            before.len(),
            after.len()
        ));
    }
    if (after.mtime(), after.mtime_nsec()) != (before.mtime(), before.mtime_nsec()) {
        return Some(match ended_at {
            Some(at) => format!("it ended at byte {at} of {} and was modified", before.len()),
            None => "it was modified".into(),
        });
    }
    None
}

#[derive(Debug, Default)]
struct Copied {
    data_bytes: u64,
    /// Where the source's data ended before its size said it would.
    ended_at: Option<u64>,
    /// The end of the last data written (the copy's length so far).
    end: u64,
}

/// Moves the data of `source` into `out`, window by window, managing the
/// page cache as the module documentation says.
#[allow(clippy::too_many_arguments)]
fn copy_data(
    cfg: &Config,
    source: &File,
    out: &File,
    src: &Path,
    dst: &Path,
    meta: &std::fs::Metadata,
    before: Option<sys::cache::CacheStat>,
    method: &mut Method,
    on_bytes: &mut dyn FnMut(u64),
) -> Result<Copied, FileError> {
    let size = meta.len();
    let mut mover = Mover {
        source,
        out,
        src,
        dst,
        keep_cache: cfg.keep_cache,
        buf: Vec::new(),
        dontcache: true,
    };
    if size == 0 {
        return mover.copy_to_end(on_bytes);
    }
    let mut copied = Copied::default();
    // A file whose blocks cover its size has no hole to look for (most
    // small files): no SEEK_DATA/SEEK_HOLE.
    let segments = if meta.blocks().saturating_mul(512) >= size {
        vec![(0, size)]
    } else {
        data_segments(source, size)
    };
    let mut cache = CacheKeeper::new(cfg.keep_cache, source, &segments, before, size);
    for (start, end) in segments {
        let mut off = start;
        while off < end {
            if stopping() {
                return Err(FileError::Interrupted {
                    path: src.to_path_buf(),
                });
            }
            let len = (end - off).min(WINDOW_BYTES - off % WINDOW_BYTES);
            let stop = off + len;
            let pos = mover.window(off, stop, method)?;
            copied.data_bytes = copied.data_bytes.saturating_add(pos - off);
            copied.end = copied.end.max(pos);
            let dest = *method != Method::ReadWriteDontcache;
            cache.after_window(source, out, off, pos - off, dest);
            on_bytes(copied.data_bytes);
            if pos < stop {
                // The source ended early: it shrank (the caller checks), or
                // it claims more than it has (sysfs).
                copied.ended_at = Some(pos);
                return Ok(copied);
            }
            off = stop;
        }
    }
    cache.finish(source, copied.end < size);
    Ok(copied)
}

/// What moves the data of one copy: its two files and their names, and
/// the buffer when the data goes through one.
struct Mover<'a> {
    source: &'a File,
    out: &'a File,
    src: &'a Path,
    dst: &'a Path,
    keep_cache: bool,
    buf: Vec<u8>,
    /// RWF_DONTCACHE still works for the writes.
    dontcache: bool,
}

impl Mover<'_> {
    fn read_err(&self, e: io::Error) -> FileError {
        FileError::Read {
            path: self.src.to_path_buf(),
            source: e,
        }
    }

    /// A source whose size is not to be trusted (0: /proc, /sys), read
    /// until its end.
    fn copy_to_end(&mut self, on_bytes: &mut dyn FnMut(u64)) -> Result<Copied, FileError> {
        self.buf.resize(1 << 20, 0);
        let mut off = 0u64;
        loop {
            let n = pread(self.source, &mut self.buf, off, false).map_err(|e| self.read_err(e))?;
            if n == 0 {
                break;
            }
            let data = self.buf.get(..n).unwrap_or(&[]);
            write_all(self.out, data, off, &mut false, self.dst)?;
            off += n as u64;
            on_bytes(off);
            if stopping() {
                return Err(FileError::Interrupted {
                    path: self.src.to_path_buf(),
                });
            }
        }
        Ok(Copied {
            data_bytes: off,
            end: off,
            ..Copied::default()
        })
    }

    /// Copies bytes `off` to `stop` by `method`, falling back to read and
    /// write where the kernel cannot copy a range or drop written pages;
    /// where the source's data ended (`stop` when it did not end early).
    fn window(&mut self, off: u64, stop: u64, method: &mut Method) -> Result<u64, FileError> {
        let mut pos = off;
        while pos < stop {
            if *method == Method::CopyFileRange {
                match copy_range(self.source, self.out, pos, stop - pos) {
                    Ok(0) => {
                        // The source ended early (it shrank, or it is a
                        // file whose size lies): read the rest.
                        *method = Method::ReadWriteDontcache;
                    }
                    Ok(n) => {
                        pos += n;
                        continue;
                    }
                    Err(e) if is_unsupported(&e) => {
                        *method = Method::ReadWriteDontcache;
                    }
                    Err(e) if e.raw_os_error() == Some(libc::EIO) => {
                        // Which side failed is not told; say both.
                        return Err(FileError::Other {
                            path: self.src.to_path_buf(),
                            message: format!(
                                "I/O error copying to {}: {e} — check both devices; no partial file was left",
                                display(self.dst)
                            ),
                        });
                    }
                    Err(e) => return Err(write_error(self.dst, e)),
                }
                continue;
            }
            if self.buf.is_empty() {
                self.buf.resize(WINDOW_BYTES as usize, 0);
            }
            let want = ((stop - pos) as usize).min(self.buf.len());
            let Some(slice) = self.buf.get_mut(..want) else {
                break;
            };
            let n = pread(self.source, slice, pos, false).map_err(|e| self.read_err(e))?;
            if n == 0 {
                break;
            }
            let mut dc =
                self.dontcache && *method == Method::ReadWriteDontcache && !self.keep_cache;
            write_all(
                self.out,
                self.buf.get(..n).unwrap_or(&[]),
                pos,
                &mut dc,
                self.dst,
            )?;
            if !dc && *method == Method::ReadWriteDontcache {
                self.dontcache = false;
                *method = Method::ReadWrite;
            }
            pos += n as u64;
        }
        Ok(pos)
    }
}

fn is_unsupported(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EXDEV)
            | Some(libc::EINVAL)
            | Some(libc::EOPNOTSUPP)
            | Some(libc::ENOSYS)
            | Some(libc::EBADF)
    )
}

/// Writes all of `data` at `off`; `dontcache` is cleared (and the write
/// retried without it) when the filesystem refuses `RWF_DONTCACHE`.
fn write_all(
    out: &File,
    mut data: &[u8],
    mut off: u64,
    dontcache: &mut bool,
    dst: &Path,
) -> Result<(), FileError> {
    while !data.is_empty() {
        match pwrite(out, data, off, *dontcache) {
            Ok(0) => {
                return Err(write_error(
                    dst,
                    io::Error::new(io::ErrorKind::WriteZero, "the write made no progress"),
                ));
            }
            Ok(n) => {
                data = data.get(n..).unwrap_or(&[]);
                off += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if *dontcache && is_unsupported(&e) => *dontcache = false,
            Err(e) => return Err(write_error(dst, e)),
        }
    }
    Ok(())
}

/// Leaves the page cache as it was: source blocks that had no page cached
/// before the copy began are dropped after their window is copied;
/// destination windows are sent to storage and dropped one window later
/// (writeback overlaps the copy), the last ones by the caller.
///
/// The source's residency is taken once, before any data moves: readahead
/// of one window reaches into the next, so checking window by window would
/// mistake the copy's own readahead for pages that were there before.
struct CacheKeeper {
    keep: bool,
    /// No page of the source was cached: every block may be dropped.
    all_uncached: bool,
    /// Otherwise, the 2 MiB blocks (by index) of the data segments that
    /// had no page cached.
    uncached: std::collections::BTreeSet<u64>,
    /// Destination windows whose writeback was started, oldest first.
    pending: std::collections::VecDeque<(u64, u64)>,
    /// The source's size.
    size: u64,
}

impl CacheKeeper {
    /// `before`: the source's `cachestat` taken before the copy.
    fn new(
        keep: bool,
        source: &File,
        segments: &[(u64, u64)],
        before: Option<sys::cache::CacheStat>,
        size: u64,
    ) -> Self {
        let mut k = CacheKeeper {
            size,
            keep,
            all_uncached: false,
            uncached: Default::default(),
            pending: Default::default(),
        };
        if keep {
            return k;
        }
        match before {
            Some(st) if st.cached_pages == 0 => k.all_uncached = true,
            // Unknown residency keeps everything: never drop what may
            // have been there.
            None => {}
            Some(_) => {
                for (start, end) in segments {
                    let mut b = start - start % BLOCK_BYTES;
                    while b < *end {
                        if sys::cache::cachestat(source, b, BLOCK_BYTES)
                            .is_ok_and(|st| st.cached_pages == 0)
                        {
                            k.uncached.insert(b / BLOCK_BYTES);
                        }
                        b += BLOCK_BYTES;
                    }
                }
            }
        }
        k
    }

    /// `dest`: whether to write back and drop the destination's pages
    /// (not with RWF_DONTCACHE, which does that itself).
    fn after_window(&mut self, source: &File, out: &File, off: u64, len: u64, dest: bool) {
        if self.keep || len == 0 {
            return;
        }
        let first = off / BLOCK_BYTES;
        let last = (off + len).div_ceil(BLOCK_BYTES);
        if self.all_uncached {
            let start = first * BLOCK_BYTES;
            let _ =
                sys::cache::fadvise(source, start, last * BLOCK_BYTES - start, Advice::DontNeed);
        } else {
            for b in self.uncached.range(first..last) {
                let _ = sys::cache::fadvise(source, b * BLOCK_BYTES, BLOCK_BYTES, Advice::DontNeed);
            }
        }
        if !dest {
            return;
        }
        if off == 0 && len >= self.size {
            // The whole file in one window: its writeback is started with
            // other files' by the caller (`Deferred::start`), which the
            // disk takes better than a small write at a time.
            return;
        }
        let _ = sys::file::sync_range(out, off, len, SyncRange::Start);
        self.pending.push_back((off, len));
        while self.pending.len() > WRITEBACK_WINDOWS {
            if let Some((p_off, p_len)) = self.pending.pop_front() {
                drop_written(out, p_off, p_len);
            }
        }
    }

    /// The windows still under writeback are left to the caller, which
    /// waits for the whole file and drops it ([`Deferred`]).
    fn finish(&mut self, source: &File, trailing_hole: bool) {
        self.pending.clear();
        // Readahead past the last window (into a trailing hole) too.
        if trailing_hole && self.all_uncached && !self.keep {
            let _ = sys::cache::fadvise(source, 0, 0, Advice::DontNeed);
        }
    }
}

/// Waits for a destination range's writeback and drops its pages, rounded
/// out to whole blocks (the destination is new: nothing of it was cached
/// before; dirty pages of the next window are skipped by the kernel).
fn drop_written(out: &File, off: u64, len: u64) {
    let _ = sys::file::sync_range(out, off, len, SyncRange::Wait);
    let start = off - off % BLOCK_BYTES;
    let end = (off + len)
        .div_ceil(BLOCK_BYTES)
        .saturating_mul(BLOCK_BYTES);
    let _ = sys::cache::fadvise(out, start, end - start, Advice::DontNeed);
}
