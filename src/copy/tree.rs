//! `tally cp -r`: a directory copied on every core.
//!
//! The source is walked by [`crate::pagecache::tree`] (the walk of `tally
//! cache`), one unit of work per entry, so a directory of 100,000 files
//! keeps every core busy; every directory of the source and of the copy is
//! opened relative to its parent's descriptor, and every file relative to
//! its directory's, so a tree deeper than `PATH_MAX` copies like any other.
//! A directory is made before anything under it is copied.
//!
//! No link under the destination is followed: the destination directory is
//! opened once (its path resolved as [`crate::place::open_dir_guarded`]
//! says), and every directory below it is made (`mkdirat`) and opened
//! `O_NOFOLLOW` relative to its parent, its device and inode checked
//! whenever it is opened again. A link planted where a directory of the
//! copy goes stops that part of the copy with an error; a link where a
//! file goes is replaced, never written through.
//!
//! Directories are made owner-only (0700) and given their modes (and with
//! `-p` owners and times) once everything under them is in, deepest first,
//! as GNU cp does: a read-only directory is filled before it becomes
//! read-only, and an interrupted copy still ends with every directory it
//! made as the source has it.
//!
//! Each thread leaves the destination's pages of the files it copied to
//! be written back by the kernel, and drops them in batches ([`Drops`]):
//! the copy never waits for the disk file by file.

use std::ffi::OsStr;
use std::fs::File;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{SyncSender, sync_channel};

use super::report::{FileCopy, Problem};
use super::{Deferred, FileError, Outcome, Shared, copy_into, open_source_at, stopping};
use crate::pagecache::tree::{self, Here, Node, Root, Visit};
use crate::place::{self, Dest, Existing};
use crate::sys::{self, dir::Kind, file::StatAt};

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
/// Descriptors left for everything but the walk and the copies waiting.
const SPARE_FILES: u64 = 128;

/// What a walking thread tells the calling thread.
enum Message {
    Copied(Row),
    Problem(Problem),
    /// A file whose copy a signal stopped.
    Stopped(PathBuf),
    Directory,
    Symlink,
}

/// What a directory of the copy is given once its contents are in: the
/// source's mode and, with `-p`, its owner and times. `None` for a
/// directory that was there already (merged into, left as it is).
struct Finish {
    mode: u32,
    meta: Option<std::fs::Metadata>,
}

type Data = Option<Finish>;

/// A copied file's row on its way, without its paths: `name` in the
/// directory `at`. Its paths are made by the calling thread as it hands
/// the row out, so that the rows waiting (in groups, in the channel) hold
/// no path as long as the tree is deep.
struct Row {
    copy: FileCopy,
    at: Arc<Node<Data>>,
    name: std::ffi::OsString,
}

impl Row {
    fn new(mut copy: FileCopy, at: &Arc<Node<Data>>, name: &OsStr) -> Row {
        copy.source = PathBuf::new();
        copy.destination = PathBuf::new();
        Row {
            copy,
            at: Arc::clone(at),
            name: name.to_os_string(),
        }
    }

    /// The row with its paths, the copy's root being `dst`.
    fn made(self, dst: &Path) -> FileCopy {
        FileCopy {
            source: self.at.path(Some(&self.name)),
            destination: self.at.under(dst, Some(&self.name)),
            ..self.copy
        }
    }
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
    let (root, made) = match open_root(shared, src, dst) {
        Ok(r) => r,
        Err(message) => {
            out.problems.push(Problem::new(dst, message));
            return;
        }
    };
    if made {
        out.directories += 1;
    }
    let dst_root = root.dst_id();
    let (tx, rx) = sync_channel::<Vec<Message>>(16);
    let threads = threads();
    let files = drop_files(threads);
    std::thread::scope(|scope| {
        scope.spawn(move || {
            tree::walk(vec![root], threads, || Worker {
                shared,
                dst,
                dst_root,
                rows: Vec::with_capacity(BATCH),
                tx: tx.clone(),
                drops: Drops {
                    files,
                    ..Drops::default()
                },
            });
        });
        for msg in rx.into_iter().flatten() {
            match msg {
                Message::Copied(r) => row(r.made(dst)),
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
}

/// Walking threads: more than cores (see [`THREADS_PER_CORE`]).
fn threads() -> usize {
    let cores = crate::pagecache::walk::threads(0);
    cores
        .saturating_mul(THREADS_PER_CORE)
        .clamp(cores, MAX_THREADS)
}

/// Copies a thread may hold open while their pages wait to be dropped:
/// each thread holds up to two groups, within the open-files limit, with
/// room for the walk's directories (each a source and a copy: those each
/// thread keeps, one more in use, and those the work waiting keeps) and
/// everything else.
fn drop_files(threads: usize) -> usize {
    let nofile = crate::procfs::ProcRoot::default()
        .read("self/limits")
        .ok()
        .and_then(|t| crate::procfs::limits::nofile_soft(&t))
        .map_or(1024, |l| l.unwrap_or(u64::MAX));
    let threads = threads as u64;
    let walk = threads.saturating_mul(2 * (tree::WINDOW as u64 + 1)) + 2 * tree::LEASES as u64;
    let left = nofile.saturating_sub(SPARE_FILES).saturating_sub(walk);
    (left / (threads * 2)).clamp(4, DROP_FILES as u64) as usize
}

/// Opens the copy's root: the source `src` (followed as named) and the
/// destination `dst` (made if missing); whether it was made.
fn open_root(shared: &Shared, src: &Path, dst: &Path) -> Result<(Arc<Node<Data>>, bool), String> {
    let cannot_read = |e: std::io::Error| format!("cannot read {}: {e}", display(src));
    let src_dir = sys::file::open_dir(src).map_err(cannot_read)?;
    let meta = src_dir.metadata().map_err(cannot_read)?;
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
    let dst_dir = sys::file::open_dir_at(Some(&dest.dir), &dest.name)
        .map_err(|e| format!("cannot open the directory: {e}"))?;
    let finish = (made || shared.cfg.preserve).then(|| Finish {
        mode: meta.mode() & 0o7777,
        meta: shared.cfg.preserve.then_some(meta),
    });
    let root = Root {
        path: src.to_path_buf(),
        src: Arc::new(src_dir),
        dst: Some(Arc::new(dst_dir)),
    };
    let root = Node::root(root, finish).map_err(|e| format!("cannot open the directory: {e}"))?;
    Ok((root, made))
}

fn display(path: &Path) -> String {
    crate::text::path::display(path)
}

/// Gives a directory the copy made its mode (and with `-p` owner and
/// times), through its descriptor.
fn finish_dir(dir: &File, f: &Finish) -> Result<(), String> {
    let mut mode = f.mode;
    if let Some(meta) = &f.meta {
        if std::os::unix::fs::fchown(dir, Some(meta.uid()), Some(meta.gid())).is_err() {
            // As cp -p (and tally's files): an owner a user may not give
            // is not an error; the group alone if allowed, and no
            // setuid/setgid bit for an owner the copy lacks.
            let _ = std::os::unix::fs::fchown(dir, None, Some(meta.gid()));
            mode &= !(libc::S_ISUID | libc::S_ISGID);
        }
        let _ = super::set_times(dir, meta);
    }
    dir.set_permissions(std::fs::Permissions::from_mode(mode))
        .map_err(|e| format!("cannot set the mode: {e}"))
}

/// A walking thread's state: its rows on their way, and its copies
/// waiting for their pages to be dropped.
struct Worker<'a> {
    shared: &'a Shared<'a>,
    /// The destination's root as named.
    dst: &'a Path,
    /// Its device and inode: a source directory that is the copy itself
    /// is not copied into itself.
    dst_root: Option<(u64, u64)>,
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
    fresh: Vec<(Row, Deferred)>,
    fresh_bytes: u64,
    started: Vec<(Row, Deferred)>,
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
    fn defer(&mut self, f: Row, d: Deferred) -> bool {
        self.drops.fresh_bytes = self.drops.fresh_bytes.saturating_add(f.copy.size_bytes);
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
        for (mut f, d) in std::mem::take(&mut self.drops.started) {
            f.copy = d.finish(f.copy);
            ok &= self.send(Message::Copied(f));
        }
        for (_, d) in &self.drops.fresh {
            d.start();
        }
        self.drops.started = std::mem::take(&mut self.drops.fresh);
        self.drops.fresh_bytes = 0;
        ok
    }

    /// Where `name` in `node` lands in the copy.
    fn dst_path(&self, node: &Node<Data>, name: Option<&OsStr>) -> PathBuf {
        node.under(self.dst, name)
    }

    fn problem(&mut self, path: PathBuf, why: String) -> bool {
        self.send(Message::Problem(Problem { path, error: why }))
    }

    /// The directory `name` of the copy in `dir`: made (0700) or found;
    /// whether it was made. Else why not.
    fn make_dir(dir: &File, name: &OsStr) -> Result<(File, bool), String> {
        const LINK: &str = "a symbolic link is where a directory of the copy goes: not followed, \
                            nothing copied under it; remove the link";
        let made = match sys::file::mkdir_at(dir, name, 0o700) {
            Ok(()) => true,
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {
                match sys::file::stat_at(dir, name) {
                    Ok(st) if st.is_dir() => false,
                    Ok(st) if st.is_symlink() => return Err(LINK.into()),
                    _ => return Err("is not a directory: cannot copy a directory over it".into()),
                }
            }
            Err(e) => return Err(format!("cannot create the directory: {e}")),
        };
        match sys::file::open_dir_at(Some(dir), name) {
            Ok(d) => Ok((d, made)),
            Err(e) => Err(match e.raw_os_error() {
                Some(libc::ELOOP) | Some(libc::ENOTDIR) => LINK.to_string(),
                _ => format!("cannot open the directory: {e}"),
            }),
        }
    }

    fn file(&mut self, here: &Here<Data>, name: &OsStr) -> bool {
        let Some(dir) = here.dst else {
            return true;
        };
        let src = here.node.path(Some(name));
        let dst = self.dst_path(here.node, Some(name));
        let copied = open_source_at(here.src, name, &src).and_then(|(source, meta)| {
            let dest = Dest {
                dir: Arc::clone(dir),
                dir_path: dst.parent().map(Path::to_path_buf).unwrap_or_default(),
                name: name.to_os_string(),
                // Made by this copy, or merged into: a name taken is
                // replaced (a link there too, never followed).
                existing: Existing::Nothing,
                path: dst,
            };
            copy_into(self.shared, &src, source, meta, dest, &mut |_| {})
        });
        match copied {
            Ok((f, deferred)) => {
                self.shared
                    .done_bytes
                    .fetch_add(f.size_bytes, Ordering::Relaxed);
                let row = Row::new(f, here.node, name);
                match deferred {
                    Some(d) => self.defer(row, d),
                    None => self.send(Message::Copied(row)),
                }
            }
            Err(FileError::Interrupted { path }) => self.send(Message::Stopped(path)),
            Err(e) => self.send(Message::Problem(Problem::new(&src, e.to_string()))),
        }
    }
}

impl Visit<Data> for Worker<'_> {
    fn stopping(&self) -> bool {
        stopping()
    }

    fn enter(
        &mut self,
        here: &Here<Data>,
        name: &OsStr,
        src: &File,
        st: &StatAt,
    ) -> Option<(Option<File>, Data)> {
        if self.dst_root == Some((st.dev, st.ino)) {
            let why = format!(
                "cannot copy a directory into itself ({})",
                display(&self.dst_path(here.node, Some(name)))
            );
            self.problem(here.node.path(Some(name)), why);
            return None;
        }
        let preserve = self.shared.cfg.preserve;
        let meta = if preserve {
            match src.metadata() {
                Ok(m) => Some(m),
                Err(e) => {
                    self.problem(here.node.path(Some(name)), format!("cannot read: {e}"));
                    return None;
                }
            }
        } else {
            None
        };
        let (dir, made) = match Self::make_dir(here.dst?, name) {
            Ok(d) => d,
            Err(why) => {
                self.problem(self.dst_path(here.node, Some(name)), why);
                return None;
            }
        };
        if made && !self.send(Message::Directory) {
            return None;
        }
        let finish = (made || preserve).then_some(Finish {
            mode: st.mode & 0o7777,
            meta,
        });
        Some((Some(dir), finish))
    }

    fn entry(&mut self, here: &Here<Data>, name: &OsStr, kind: Kind) -> bool {
        if kind != Kind::Symlink {
            return self.file(here, name);
        }
        let msg = match here.dst.map(|d| copy_link(here.src, d, name)) {
            Some(Ok(())) | None => Message::Symlink,
            Some(Err(e)) => Message::Problem(Problem {
                path: self.dst_path(here.node, Some(name)),
                error: e,
            }),
        };
        self.send(msg)
    }

    fn completes(&self) -> bool {
        true
    }

    fn complete(&mut self, here: &Here<Data>) {
        let (Some(f), Some(dir)) = (&here.node.data, here.dst) else {
            return;
        };
        if let Err(why) = finish_dir(dir, f) {
            let path = self.dst_path(here.node, None);
            self.problem(path, why);
        }
    }

    fn failed(&mut self, node: &Arc<Node<Data>>, name: Option<&OsStr>, error: String) -> bool {
        let why = if error.starts_with("cannot") {
            error
        } else {
            format!("cannot read: {error}")
        };
        self.problem(node.path(name), why)
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

/// Copies the link `name` of the source's directory `src` into `dst`.
fn copy_link(src: &File, dst: &File, name: &OsStr) -> Result<(), String> {
    let target =
        sys::file::readlink_at(src, name).map_err(|e| format!("cannot read the link: {e}"))?;
    match sys::file::symlink_at(&target, dst, name) {
        Ok(()) => Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {
            // Replaced, as cp does: the old entry goes (a directory stays).
            sys::file::unlink_at(dst, name).map_err(|e| format!("cannot replace: {e}"))?;
            sys::file::symlink_at(&target, dst, name)
                .map_err(|e| format!("cannot create the link: {e}"))
        }
        Err(e) => Err(format!("cannot create the link: {e}")),
    }
}
