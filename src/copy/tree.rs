//! `tally cp -r`: a directory copied on every core.
//!
//! The source is walked by `ignore`'s parallel walker (the walk of `tally
//! cache`), one thread per core; each entry is a unit of work any thread
//! may take, so a directory of 100,000 files keeps every core busy. A
//! directory is made before anything under it is given out (the walker
//! hands out a directory's entries only after it visited the directory).
//!
//! No link under the destination is followed: the destination directory is
//! opened once (its path resolved as [`crate::place::open_dir_guarded`]
//! says), and every directory below it is opened relative to it with
//! `openat2(RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH)`, or where the kernel
//! has no `openat2` one component at a time, each `O_NOFOLLOW` relative to
//! its parent. A link planted where a directory of the copy goes stops that
//! part of the copy with an error; a link where a file goes is replaced,
//! never written through.
//!
//! Directories are made owner-only (0700) and given their modes (and with
//! `-p` owners and times) after their contents, deepest first, as GNU cp
//! does: a read-only directory is filled before it becomes read-only, and
//! an interrupted copy still ends with every directory it made as the
//! source has it.
//!
//! Each thread leaves the destination's pages of the files it copied to
//! be written back by the kernel, and drops them in batches ([`Drops`]):
//! the copy never waits for the disk file by file.

use std::ffi::OsStr;
use std::fs::File;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{SyncSender, sync_channel};
use std::sync::{Arc, Mutex};

use super::report::{FileCopy, Problem};
use super::{Deferred, FileError, Outcome, Shared, copy_into, open_source, stopping};
use crate::place::{self, Dest, Existing};
use crate::sys;
use crate::text::path::display;

/// Rows a thread hands the calling thread at once.
const BATCH: usize = 128;
/// Copies a thread gathers before it starts their writeback together,
/// at most (fewer where the open-files limit is low: each holds its
/// destination open until its pages are dropped)...
const DROP_FILES: usize = 256;
/// ...or bytes of them.
const DROP_BYTES: u64 = 32 << 20;
/// Walking threads per core: a copy waits on the disk as much as it
/// works, so more threads than cores keep both busy.
const THREADS_PER_CORE: usize = 4;
/// Walking threads at most.
const MAX_THREADS: usize = 16;

/// What a walking thread tells the calling thread.
enum Message {
    Copied(FileCopy),
    Problem(Problem),
    /// A file whose copy a signal stopped.
    Stopped(PathBuf),
    Directory,
    Symlink,
}

/// A directory made by the copy, to be given its mode after its contents.
struct Made {
    /// Relative to the copy's root ("" for the root itself).
    rel: PathBuf,
    /// The mode to give it (the source's).
    mode: u32,
    /// With `-p`: the source's owner and times.
    meta: Option<std::fs::Metadata>,
}

/// Copies the directory `src` to `dst` (made if missing, else merged
/// into), with everything under it; counts and problems go to `out`, each
/// file's row to `row` as it is made.
pub(crate) fn copy(
    shared: &Shared,
    src: &Path,
    dst: &Path,
    out: &mut Outcome,
    row: &mut dyn FnMut(FileCopy),
) {
    let (root, made_root) = match open_root(shared, src, dst) {
        Ok(r) => r,
        Err(message) => {
            out.problems.push(Problem::new(dst, message));
            return;
        }
    };
    let root = Arc::new(root);
    let made: Mutex<Vec<Made>> = Mutex::new(Vec::new());
    if let Some(m) = made_root {
        out.directories += 1;
        if let Ok(mut v) = made.lock() {
            v.push(m);
        }
    }
    let (tx, rx) = sync_channel::<Vec<Message>>(16);
    std::thread::scope(|scope| {
        let (root, made) = (&root, &made);
        scope.spawn(move || walk(shared, src, dst, root, made, tx));
        for msg in rx.into_iter().flatten() {
            match msg {
                Message::Copied(f) => row(f),
                Message::Problem(p) => out.problems.push(p),
                Message::Stopped(p) => out
                    .interrupted
                    .get_or_insert_with(super::interrupted)
                    .stopped_at
                    .push(p),
                Message::Directory => out.directories += 1,
                Message::Symlink => out.symlinks += 1,
            }
        }
    });
    // Modes last, deepest first (see the module's text), also when a
    // signal stopped the copy.
    let mut made = made.into_inner().unwrap_or_default();
    made.sort_by_key(|m| std::cmp::Reverse(m.rel.components().count()));
    for m in made {
        if let Err(message) = finish_dir(&root, &m) {
            out.problems.push(Problem::new(&dst.join(&m.rel), message));
        }
    }
}

/// Opens (making it if missing) the copy's root directory `dst`; the
/// second value is the root to give its mode at the end, when it was made.
fn open_root(shared: &Shared, src: &Path, dst: &Path) -> Result<(File, Option<Made>), String> {
    let meta = std::fs::metadata(src).map_err(|e| format!("cannot read {}: {e}", display(src)))?;
    let dest = place::resolve(dst).map_err(|e| e.to_string())?;
    let made = match dest.existing {
        Existing::Nothing => {
            sys::file::mkdir_at(&dest.dir, &dest.name, 0o700)
                .map_err(|e| format!("cannot create the directory: {e}"))?;
            true
        }
        Existing::Dir => false,
        Existing::File(_) | Existing::Special => {
            return Err("is not a directory: cannot copy a directory over it".into());
        }
    };
    let root = sys::file::open_dir_at(Some(&dest.dir), &dest.name)
        .map_err(|e| format!("cannot open the directory: {e}"))?;
    let record = (made || shared.cfg.preserve).then(|| Made {
        rel: PathBuf::new(),
        mode: meta.mode() & 0o7777,
        meta: shared.cfg.preserve.then(|| meta.clone()),
    });
    Ok((root, record))
}

/// Opens the directory `rel` under the copy's `root`, following no link.
fn open_under(root: &File, rel: &Path) -> std::io::Result<File> {
    match sys::file::open_dir_no_links(Some(root), rel, true) {
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::ENOSYS) | Some(libc::EPERM) | Some(libc::EINVAL)
            ) => {}
        other => return other,
    }
    // No openat2: a component at a time, each O_NOFOLLOW.
    let mut cur: Option<File> = None;
    for part in rel.components() {
        let std::path::Component::Normal(name) = part else {
            return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
        };
        cur = Some(sys::file::open_dir_at(
            Some(cur.as_ref().unwrap_or(root)),
            name,
        )?);
    }
    match cur {
        Some(d) => Ok(d),
        None => sys::file::open_dir_at(Some(root), OsStr::new(".")),
    }
}

/// Gives a directory the copy made its mode (and with `-p` owner and
/// times), opened under the root without following links.
fn finish_dir(root: &File, m: &Made) -> Result<(), String> {
    let dir = if m.rel.as_os_str().is_empty() {
        root.try_clone()
    } else {
        open_under(root, &m.rel)
    }
    .map_err(|e| format!("cannot set the mode: {e}"))?;
    let mut mode = m.mode;
    if let Some(meta) = &m.meta {
        if std::os::unix::fs::fchown(&dir, Some(meta.uid()), Some(meta.gid())).is_err() {
            // As cp -p (and tally's files): an owner a user may not give
            // is not an error; the group alone if allowed, and no
            // setuid/setgid bit for an owner the copy lacks.
            let _ = std::os::unix::fs::fchown(&dir, None, Some(meta.gid()));
            mode &= !(libc::S_ISUID | libc::S_ISGID);
        }
        let _ = super::set_times(&dir, meta);
    }
    dir.set_permissions(std::fs::Permissions::from_mode(mode))
        .map_err(|e| format!("cannot set the mode: {e}"))
}

/// A walking thread's state: the directory it writes into last (most
/// entries it takes are siblings), its rows on their way, and its copies
/// waiting for their pages to be dropped.
struct Worker<'a> {
    shared: &'a Shared<'a>,
    src: &'a Path,
    dst: &'a Path,
    root: &'a Arc<File>,
    made: &'a Mutex<Vec<Made>>,
    /// The destination directory of the last entry: (relative path, open).
    dir: Option<(PathBuf, Arc<File>)>,
    rows: Vec<Message>,
    tx: SyncSender<Vec<Message>>,
    drops: Drops,
}

/// Copies whose destination pages wait to be written back and dropped:
/// a group gathers (`fresh`) until it is full, then its writeback is
/// started as one and it waits (`started`) while the next group gathers;
/// the group before it is then waited for and dropped. The disk gets
/// many writes at once, and the copy rarely waits for them.
#[derive(Default)]
struct Drops {
    fresh: Vec<(FileCopy, Deferred)>,
    fresh_bytes: u64,
    started: Vec<(FileCopy, Deferred)>,
    /// Files a group holds at most (see [`DROP_FILES`]).
    files: usize,
}

impl<'a> Worker<'a> {
    fn send(&mut self, msg: Message) -> bool {
        self.rows.push(msg);
        self.rows.len() < BATCH || self.flush()
    }

    fn flush(&mut self) -> bool {
        if self.rows.is_empty() {
            return true;
        }
        let batch = std::mem::replace(&mut self.rows, Vec::with_capacity(BATCH));
        self.tx.send(batch).is_ok()
    }

    /// Gathers a copy whose pages are to be dropped; a full group is
    /// started, and the group started before it dropped.
    fn defer(&mut self, f: FileCopy, d: Deferred) -> bool {
        self.drops.fresh_bytes = self.drops.fresh_bytes.saturating_add(f.size_bytes);
        self.drops.fresh.push((f, d));
        if self.drops.fresh.len() >= self.drops.files || self.drops.fresh_bytes >= DROP_BYTES {
            return self.turn();
        }
        true
    }

    /// Drops the started group (waiting for its writeback) and starts the
    /// fresh one.
    fn turn(&mut self) -> bool {
        let mut ok = true;
        for (f, d) in std::mem::take(&mut self.drops.started) {
            ok &= self.send(Message::Copied(d.finish(f)));
        }
        for (_, d) in &self.drops.fresh {
            d.start();
        }
        self.drops.started = std::mem::take(&mut self.drops.fresh);
        self.drops.fresh_bytes = 0;
        ok
    }

    /// The open destination directory for entries under `rel_parent`.
    fn dir_for(&mut self, rel_parent: &Path) -> std::io::Result<Arc<File>> {
        if let Some((rel, dir)) = &self.dir
            && rel == rel_parent
        {
            return Ok(Arc::clone(dir));
        }
        let dir = if rel_parent.as_os_str().is_empty() {
            Arc::clone(self.root)
        } else {
            Arc::new(open_under(self.root, rel_parent)?)
        };
        self.dir = Some((rel_parent.to_path_buf(), Arc::clone(&dir)));
        Ok(dir)
    }

    /// One entry of the source: `false` ends the walk.
    fn entry(&mut self, entry: ignore::DirEntry) -> bool {
        if stopping() {
            return false;
        }
        if entry.depth() == 0 {
            return true;
        }
        let path = entry.path();
        let Ok(rel) = path.strip_prefix(self.src) else {
            return true;
        };
        let (Some(name), parent) = (rel.file_name(), rel.parent().unwrap_or(Path::new(""))) else {
            return true;
        };
        let dst = self.dst.join(rel);
        let dir = match self.dir_for(parent) {
            Ok(d) => d,
            Err(e) => {
                let why = match e.raw_os_error() {
                    Some(libc::ELOOP) | Some(libc::EXDEV) => {
                        "a symbolic link is where a directory of the copy goes: not followed, \
                         nothing copied under it; remove the link"
                            .to_string()
                    }
                    _ => format!("cannot open the destination's directory: {e}"),
                };
                return self.send(Message::Problem(Problem::new(&dst, why)));
            }
        };
        let Some(kind) = entry.file_type() else {
            return true;
        };
        if kind.is_dir() {
            return self.directory(path, rel, &dir, name, &dst);
        }
        if kind.is_symlink() {
            let msg = match copy_link(path, &dir, name) {
                Ok(()) => Message::Symlink,
                Err(e) => Message::Problem(Problem::new(&dst, e)),
            };
            return self.send(msg);
        }
        self.file(path, dir, name, dst)
    }

    fn directory(&mut self, src: &Path, rel: &Path, dir: &File, name: &OsStr, dst: &Path) -> bool {
        let meta = match std::fs::symlink_metadata(src) {
            Ok(m) => m,
            Err(e) => {
                let p = Problem::new(src, format!("cannot read: {e}"));
                return self.send(Message::Problem(p));
            }
        };
        let made = match sys::file::mkdir_at(dir, name, 0o700) {
            Ok(()) => true,
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {
                match sys::file::stat_at(dir, name) {
                    Ok(st) if st.is_dir() => false,
                    Ok(st) if st.is_symlink() => {
                        let p = Problem::new(
                            dst,
                            "a symbolic link is where a directory of the copy goes: not \
                             followed, nothing copied under it; remove the link"
                                .into(),
                        );
                        return self.send(Message::Problem(p));
                    }
                    _ => {
                        let p = Problem::new(
                            dst,
                            "is not a directory: cannot copy a directory over it".into(),
                        );
                        return self.send(Message::Problem(p));
                    }
                }
            }
            Err(e) => {
                let p = Problem::new(dst, format!("cannot create the directory: {e}"));
                return self.send(Message::Problem(p));
            }
        };
        if (made || self.shared.cfg.preserve)
            && let Ok(mut v) = self.made.lock()
        {
            v.push(Made {
                rel: rel.to_path_buf(),
                mode: meta.mode() & 0o7777,
                meta: self.shared.cfg.preserve.then_some(meta),
            });
        }
        if made {
            return self.send(Message::Directory);
        }
        true
    }

    fn file(&mut self, src: &Path, dir: Arc<File>, name: &OsStr, dst: PathBuf) -> bool {
        let copied = open_source(src, true).and_then(|(source, meta)| {
            let dest = Dest {
                dir,
                dir_path: dst.parent().map(Path::to_path_buf).unwrap_or_default(),
                name: name.to_os_string(),
                // Made by this copy, or merged into: a name taken is
                // replaced (a link there too, never followed).
                existing: Existing::Nothing,
                path: dst,
            };
            copy_into(self.shared, src, source, meta, dest, &mut |_| {})
        });
        match copied {
            Ok((f, deferred)) => {
                self.shared
                    .done_bytes
                    .fetch_add(f.size_bytes, Ordering::Relaxed);
                match deferred {
                    Some(d) => self.defer(f, d),
                    None => self.send(Message::Copied(f)),
                }
            }
            Err(FileError::Interrupted { path }) => self.send(Message::Stopped(path)),
            Err(e) => self.send(Message::Problem(Problem::new(src, e.to_string()))),
        }
    }
}

impl Drop for Worker<'_> {
    fn drop(&mut self) {
        // The last two groups.
        self.turn();
        self.turn();
        self.flush();
    }
}

fn copy_link(src: &Path, dir: &File, name: &OsStr) -> Result<(), String> {
    let target = std::fs::read_link(src).map_err(|e| format!("cannot read the link: {e}"))?;
    match sys::file::symlink_at(&target, dir, name) {
        Ok(()) => Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {
            // Replaced, as cp does: the old entry goes (a directory stays).
            sys::file::unlink_at(dir, name).map_err(|e| format!("cannot replace: {e}"))?;
            sys::file::symlink_at(&target, dir, name)
                .map_err(|e| format!("cannot create the link: {e}"))
        }
        Err(e) => Err(format!("cannot create the link: {e}")),
    }
}

/// The walk, on its own thread: one worker per walking thread.
fn walk(
    shared: &Shared,
    src: &Path,
    dst: &Path,
    root: &Arc<File>,
    made: &Mutex<Vec<Made>>,
    tx: SyncSender<Vec<Message>>,
) {
    let cores = crate::pagecache::walk::threads(0);
    let threads = cores
        .saturating_mul(THREADS_PER_CORE)
        .clamp(cores, MAX_THREADS);
    // Each thread holds up to two groups of destinations open: within the
    // open-files limit, with room for everything else.
    let nofile = crate::procfs::ProcRoot::default()
        .read("self/limits")
        .ok()
        .and_then(|t| crate::procfs::limits::nofile_soft(&t))
        .map_or(1024, |l| l.unwrap_or(u64::MAX));
    let files = (nofile.saturating_sub(128) / (threads as u64 * 2)).clamp(4, DROP_FILES as u64);
    let mut builder = ignore::WalkBuilder::new(src);
    builder
        .standard_filters(false)
        .follow_links(false)
        .threads(threads);
    builder.build_parallel().run(|| {
        let mut worker = Worker {
            shared,
            src,
            dst,
            root,
            made,
            dir: None,
            rows: Vec::with_capacity(BATCH),
            tx: tx.clone(),
            drops: Drops {
                files: files as usize,
                ..Drops::default()
            },
        };
        Box::new(move |entry| {
            let go = match entry {
                Ok(e) => worker.entry(e),
                Err(e) => {
                    let (path, why) = walk_error(e, src);
                    worker.send(Message::Problem(Problem::new(&path, why)))
                }
            };
            if go {
                ignore::WalkState::Continue
            } else {
                ignore::WalkState::Quit
            }
        })
    });
}

/// A walk error as a path and words.
fn walk_error(e: ignore::Error, root: &Path) -> (PathBuf, String) {
    let (path, err) = crate::pagecache::walk::unwrap_walk_error(e);
    let why = match &err {
        ignore::Error::Io(io) => format!("cannot read: {io}"),
        other => other.to_string(),
    };
    (path.unwrap_or_else(|| root.to_path_buf()), why)
}
