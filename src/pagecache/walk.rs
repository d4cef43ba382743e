//! The regular files under the paths a user names, found and opened on
//! every core: the one walk of `tally cache`, `--cold` and `--warm`.
//!
//! Paths named directly are looked at with one `stat` each (a link named
//! directly is followed), then opened; their results come back in the
//! order they were named. Directories (with `recursive`) are walked by
//! [`super::tree`], one thread per core, every entry a unit of work any
//! thread may take, so a directory of 100,000 files keeps every core busy
//! too; every directory is opened relative to its parent's descriptor and
//! every file relative to its directory's, so a tree deeper than
//! `PATH_MAX` is walked whole. The walk takes each entry's type from the
//! directory itself (`getdents64`), opens only regular files, with
//! `O_NOFOLLOW` (a link is never followed inside a directory, so a loop
//! cannot trap the walk), and `fstat`s the open file once: a file costs
//! one `open`, one `stat` and what the caller's work does with it. Results
//! under directories come back in the order the threads finish them.
//!
//! A file reached twice (a hard link, a path named twice, a directory
//! named inside another) is given to the sink once: the walk remembers the
//! device and inode of files with more than one link, and of every file
//! when several paths were named; a lone path's files with one link cannot
//! come twice, so the memory does not grow with them.

use std::collections::{BTreeMap, HashSet};
use std::ffi::OsStr;
use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use super::tree::{self, Here, Node, Root, Visit};
use crate::sys::{dir::Kind, file::StatAt};

/// Results a walking thread hands the sink at once: one wake-up of the
/// sink's thread per batch, not per file.
const BATCH: usize = 128;
/// Batches in flight between the walking threads and the sink: the walk
/// waits when the sink falls this far behind, so memory stays bounded.
const IN_FLIGHT: usize = 16;
/// Directories named that a walk holds open at once.
const ROOTS: usize = 64;

/// One regular file, open for reading.
#[derive(Debug)]
pub struct Found {
    pub path: PathBuf,
    pub file: File,
    /// From the one `stat` of the file (`fstat` of `file` under a
    /// directory; `stat` of the path for a path named directly).
    pub meta: Metadata,
}

/// A path the walk could not use, and why (in words for a person).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub path: PathBuf,
    pub error: String,
    /// The path was named by the user (not found under a directory).
    pub named: bool,
    /// What it is, when it is neither a regular file nor a directory
    /// ([`kind_of`]).
    pub kind: Option<&'static str>,
}

/// What the walk hands the sink.
#[derive(Debug)]
pub enum Event<T> {
    /// The caller's work on one file.
    File(T),
    Skipped(Skipped),
}

/// How to walk.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Walk directories (else a directory named is skipped, with the fix).
    pub recursive: bool,
    /// Threads; 0: one per core.
    pub threads: usize,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            recursive: true,
            threads: 0,
        }
    }
}

/// Threads for `requested` (0: one per core).
pub fn threads(requested: usize) -> usize {
    if requested > 0 {
        return requested;
    }
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

pub use super::tree::describe;

/// What a path that is neither a regular file nor a directory is.
pub fn kind_of(meta: &Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_char_device() {
        "a character device"
    } else {
        "not a regular file"
    }
}

fn open_named(path: &Path) -> io::Result<File> {
    // O_NONBLOCK: a FIFO swapped in after the stat must not hang the walk.
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
}

fn open_found(dir: &File, name: &OsStr) -> io::Result<File> {
    // O_NOFOLLOW: inside a directory a link is never followed, even one
    // swapped in since the directory was read.
    let flags = libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_NOFOLLOW;
    crate::sys::file::open_at(dir, name, flags, 0)
}

/// A result on its way to the sink.
struct Message<T> {
    /// For a path named directly: its place in the list (results go to
    /// the sink in that order).
    order: Option<usize>,
    /// Device, inode and link count of the file, to give it once.
    key: Option<Key>,
    /// `None`: the named path was a directory, walked later.
    event: Option<Event<T>>,
}

/// Walks `roots` as the module documentation says, calling `work` on every
/// regular file (on the walking threads) and `sink` with every result and
/// every path skipped (on the calling thread). `stop` (or `sink`
/// returning `false`) ends the walk early.
pub fn walk<T, W, S>(roots: &[PathBuf], opts: Options, stop: &AtomicBool, work: W, mut sink: S)
where
    T: Send,
    W: Fn(Found) -> T + Sync,
    S: FnMut(Event<T>) -> bool,
{
    let n = threads(opts.threads);
    let (tx, rx) = sync_channel::<Vec<Message<T>>>(IN_FLIGHT);
    let several = roots.len() > 1;
    std::thread::scope(|scope| {
        let work = &work;
        scope.spawn(move || produce(roots, opts, n, stop, work, tx));
        consume(rx, several, stop, &mut sink);
    });
}

/// The calling thread's side: named results in order, then the rest, each
/// file once.
fn consume<T, S>(rx: Receiver<Vec<Message<T>>>, several: bool, stop: &AtomicBool, sink: &mut S)
where
    S: FnMut(Event<T>) -> bool,
{
    // Named results wait here until those named before them came.
    let mut pending: BTreeMap<usize, Message<T>> = BTreeMap::new();
    let mut next = 0usize;
    let mut seen: HashSet<(u64, u64)> = HashSet::new();
    let mut give = |m: Message<T>| -> bool {
        let Some(event) = m.event else {
            return true;
        };
        if let Some((dev, ino, nlink)) = m.key
            && (several || nlink > 1)
            && !seen.insert((dev, ino))
        {
            return true;
        }
        sink(event)
    };
    for msg in rx.into_iter().flatten() {
        if stop.load(Ordering::Relaxed) {
            // Drained: the walk ends once it sees `stop`.
            continue;
        }
        let mut go = true;
        match msg.order {
            Some(i) => {
                pending.insert(i, msg);
                while let Some(m) = pending.remove(&next) {
                    next += 1;
                    go = give(m) && go;
                }
            }
            None => go = give(msg),
        }
        if !go {
            stop.store(true, Ordering::Relaxed);
        }
    }
}

/// A file's device, inode and link count.
type Key = (u64, u64, u64);

fn key(meta: &Metadata) -> Option<Key> {
    Some((meta.dev(), meta.ino(), meta.nlink()))
}

/// The walking side: named paths on `n` threads, then the directories.
fn produce<T, W>(
    roots: &[PathBuf],
    opts: Options,
    n: usize,
    stop: &AtomicBool,
    work: &W,
    tx: SyncSender<Vec<Message<T>>>,
) where
    T: Send,
    W: Fn(Found) -> T + Sync,
{
    let next = AtomicUsize::new(0);
    let dirs = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..n.min(roots.len()).max(1) {
            let mut out = Batch::new(tx.clone());
            let (next, dirs) = (&next, &dirs);
            scope.spawn(move || {
                // Paths are taken a batch at a time, in order.
                'taking: loop {
                    let first = next.fetch_add(BATCH, Ordering::Relaxed);
                    for i in first..first.saturating_add(BATCH) {
                        let Some(path) = roots.get(i) else {
                            break 'taking;
                        };
                        if stop.load(Ordering::Relaxed) {
                            break 'taking;
                        }
                        let (key, event) = named(path, opts, work, |d| {
                            if let Ok(mut dirs) = dirs.lock() {
                                dirs.push((i, d));
                            }
                        });
                        let msg = Message {
                            order: Some(i),
                            key,
                            event,
                        };
                        if !out.push(msg) {
                            break 'taking;
                        }
                    }
                    // Sent at each batch's end, so that the sink, which
                    // gives named results in order, is never kept waiting
                    // for a batch another thread holds.
                    if !out.flush() {
                        break;
                    }
                }
            });
        }
    });
    let mut dirs = dirs.into_inner().unwrap_or_default();
    dirs.sort_by_key(|(i, _)| *i);
    if dirs.is_empty() || stop.load(Ordering::Relaxed) {
        return;
    }
    // The roots are open for their walk: a few dozen at a time, so that
    // thousands named stay within the open-files limit.
    for chunk in dirs.chunks(ROOTS) {
        let roots = open_roots(chunk, &tx);
        if stop.load(Ordering::Relaxed) {
            return;
        }
        tree::walk(roots, n, || Under {
            out: Batch::new(tx.clone()),
            stop,
            work,
        });
    }
}

/// The directories named, opened as roots of a walk; those that cannot
/// be opened are skipped, said through `tx`.
fn open_roots<T>(
    dirs: &[(usize, PathBuf)],
    tx: &SyncSender<Vec<Message<T>>>,
) -> Vec<Arc<Node<()>>> {
    let mut out = Batch::new(tx.clone());
    let mut roots = Vec::with_capacity(dirs.len());
    for (_, path) in dirs {
        let opened = crate::sys::file::open_dir(path).map(|src| Root {
            path: path.clone(),
            src: Arc::new(src),
            dst: None,
        });
        match opened.and_then(|root| Node::root(root, ())) {
            Ok(node) => roots.push(node),
            Err(e) => {
                out.push(Message {
                    order: None,
                    key: None,
                    event: Some(Event::Skipped(Skipped {
                        path: path.clone(),
                        error: describe(&e),
                        named: true,
                        kind: None,
                    })),
                });
            }
        }
    }
    roots
}

/// A walking thread's visitor: each regular file under a directory
/// opened, given to the caller's work, and its result batched.
struct Under<'a, T, W> {
    out: Batch<T>,
    stop: &'a AtomicBool,
    work: &'a W,
}

impl<T: Send, W: Fn(Found) -> T + Sync> Visit<()> for Under<'_, T, W> {
    fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    fn enter(
        &mut self,
        _: &Here<()>,
        _: &OsStr,
        _: &File,
        _: &StatAt,
    ) -> Option<(Option<File>, ())> {
        Some((None, ()))
    }

    fn entry(&mut self, here: &Here<()>, name: &OsStr, kind: Kind) -> bool {
        if kind != Kind::File {
            return true;
        }
        match found(here, name, self.work) {
            Some(msg) => self.out.push(msg),
            None => true,
        }
    }

    fn completes(&self) -> bool {
        false
    }

    fn complete(&mut self, _: &Here<()>) {}

    fn failed(&mut self, node: &Arc<Node<()>>, name: Option<&OsStr>, error: String) -> bool {
        self.out.push(Message {
            order: None,
            key: None,
            event: Some(Event::Skipped(Skipped {
                path: node.path(name),
                error,
                named: false,
                kind: None,
            })),
        })
    }
}

/// A walking thread's results on their way to the sink, [`BATCH`] at a
/// time; what is left goes when the thread ends (the batch is dropped).
struct Batch<T> {
    tx: SyncSender<Vec<Message<T>>>,
    held: Vec<Message<T>>,
}

impl<T> Batch<T> {
    fn new(tx: SyncSender<Vec<Message<T>>>) -> Batch<T> {
        Batch {
            tx,
            held: Vec::new(),
        }
    }

    /// Holds `msg`, sending the batch when full; `false` once the sink is
    /// gone.
    fn push(&mut self, msg: Message<T>) -> bool {
        self.held.push(msg);
        self.held.len() < BATCH || self.flush()
    }

    /// Sends what is held; `false` once the sink is gone.
    fn flush(&mut self) -> bool {
        if self.held.is_empty() {
            return true;
        }
        let batch = std::mem::replace(&mut self.held, Vec::with_capacity(BATCH));
        self.tx.send(batch).is_ok()
    }
}

impl<T> Drop for Batch<T> {
    fn drop(&mut self) {
        self.flush();
    }
}

/// A regular file found under a directory, opened and given to `work`;
/// `None` when it is gone or no longer a regular file (a link or a FIFO
/// swapped in), as if the walk had not found it.
fn found<T, W>(here: &Here<()>, name: &OsStr, work: &W) -> Option<Message<T>>
where
    W: Fn(Found) -> T,
{
    let skipped = |error: String| {
        Some(Message {
            order: None,
            key: None,
            event: Some(Event::Skipped(Skipped {
                path: here.node.path(Some(name)),
                error,
                named: false,
                kind: None,
            })),
        })
    };
    let file = match open_found(here.src, name) {
        Ok(f) => f,
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ELOOP)) => {
            return None;
        }
        Err(e) => return skipped(format!("cannot open: {}", describe(&e))),
    };
    let meta = match file.metadata() {
        Ok(m) if m.is_file() => m,
        Ok(_) => return None,
        Err(e) => return skipped(describe(&e)),
    };
    let path = here.node.path(Some(name));
    Some(Message {
        order: None,
        key: key(&meta),
        event: Some(Event::File(work(Found { path, file, meta }))),
    })
}

/// A path named directly: its result, or `dir` called for a directory to
/// walk.
fn named<T, W>(
    path: &Path,
    opts: Options,
    work: &W,
    dir: impl FnOnce(PathBuf),
) -> (Option<Key>, Option<Event<T>>)
where
    W: Fn(Found) -> T,
{
    let skipped = |error: String| {
        Some(Event::Skipped(Skipped {
            path: path.to_path_buf(),
            error,
            named: true,
            kind: None,
        }))
    };
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) => return (None, skipped(describe(&e))),
    };
    if meta.is_dir() {
        if !opts.recursive {
            return (
                None,
                skipped("is a directory: add -r to include the files under it".into()),
            );
        }
        dir(path.to_path_buf());
        return (None, None);
    }
    if !meta.is_file() {
        let kind = kind_of(&meta);
        return (
            None,
            Some(Event::Skipped(Skipped {
                path: path.to_path_buf(),
                error: format!(
                    "{kind}, not a regular file: it has no page cache of its own; name regular \
                     files, or directories with -r"
                ),
                named: true,
                kind: Some(kind),
            })),
        );
    }
    match open_named(path) {
        Ok(file) => (
            key(&meta),
            Some(Event::File(work(Found {
                path: path.to_path_buf(),
                file,
                meta,
            }))),
        ),
        Err(e) => (None, skipped(format!("cannot open: {}", describe(&e)))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(roots: &[PathBuf], opts: Options) -> (Vec<PathBuf>, Vec<Skipped>) {
        let stop = AtomicBool::new(false);
        let mut files = Vec::new();
        let mut skipped = Vec::new();
        walk(
            roots,
            opts,
            &stop,
            |f| f.path,
            |e| {
                match e {
                    Event::File(p) => files.push(p),
                    Event::Skipped(s) => skipped.push(s),
                }
                true
            },
        );
        (files, skipped)
    }

    #[test]
    fn directories_need_recursive_and_link_loops_end() {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        std::fs::write(d.join("a"), b"a").expect("write");
        std::fs::create_dir(d.join("sub")).expect("mkdir");
        std::fs::write(d.join("sub/b"), b"b").expect("write");
        std::os::unix::fs::symlink(d, d.join("sub/loop")).expect("symlink");
        std::os::unix::fs::symlink("self", d.join("self")).expect("symlink");
        std::fs::hard_link(d.join("a"), d.join("a2")).expect("link");

        let flat = Options {
            recursive: false,
            threads: 0,
        };
        let (files, skipped) = collect(&[d.to_path_buf()], flat);
        assert!(files.is_empty());
        assert_eq!(skipped.len(), 1);
        assert!(skipped[0].error.contains("add -r"), "{skipped:?}");

        let (files, skipped) = collect(&[d.to_path_buf()], Options::default());
        // a and its hard link a2 count once, plus sub/b.
        assert_eq!(files.len(), 2, "{files:?}");
        assert!(skipped.is_empty(), "{skipped:?}");

        let (files, skipped) = collect(&[d.join("self"), d.join("missing")], Options::default());
        assert!(files.is_empty());
        assert_eq!(skipped.len(), 2);
        assert!(skipped.iter().any(|p| p.error.contains("loop")));
    }

    #[test]
    fn named_paths_come_back_in_order_each_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let names: Vec<PathBuf> = (0..200)
            .map(|i| {
                let p = dir.path().join(format!("f{i}"));
                std::fs::write(&p, b"x").expect("write");
                p
            })
            .collect();
        let mut roots = names.clone();
        roots.push(names[3].clone());
        roots.insert(50, dir.path().join("gone"));
        let (files, skipped) = collect(&roots, Options::default());
        assert_eq!(files, names);
        assert_eq!(skipped.len(), 1);
        assert!(skipped[0].named);
    }

    #[test]
    fn a_socket_named_is_skipped_with_its_kind_and_one_inside_is_passed_over() {
        let dir = tempfile::tempdir().expect("tempdir");
        let sock = dir.path().join("sock");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).expect("bind");
        std::fs::write(dir.path().join("f"), b"x").expect("write");
        let (files, skipped) = collect(std::slice::from_ref(&sock), Options::default());
        assert!(files.is_empty());
        assert_eq!(skipped.len(), 1);
        assert!(skipped[0].error.starts_with("a socket"), "{skipped:?}");
        let (files, skipped) = collect(&[dir.path().to_path_buf()], Options::default());
        assert_eq!(files, [dir.path().join("f")]);
        assert!(skipped.is_empty());
    }

    #[test]
    fn many_files_in_one_directory_are_all_found() {
        let dir = tempfile::tempdir().expect("tempdir");
        for i in 0..3000 {
            std::fs::write(dir.path().join(format!("{i}")), b"").expect("write");
        }
        let (files, skipped) = collect(&[dir.path().to_path_buf()], Options::default());
        assert_eq!(files.len(), 3000);
        assert!(skipped.is_empty());
        let unique: HashSet<_> = files.iter().collect();
        assert_eq!(unique.len(), 3000);
    }
}
