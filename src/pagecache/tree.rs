//! Directory trees walked on every core relative to directory
//! descriptors: the walk of `tally cache -r`, `--cold`, `--warm` and
//! `tally cp -r`.
//!
//! No path longer than one name is ever resolved. Each directory is opened
//! relative to its parent's descriptor (`openat(O_DIRECTORY|O_NOFOLLOW)`),
//! its entries read through its own descriptor (`fdopendir`), and each file
//! opened relative to it; a tree deeper than `PATH_MAX` (5,000 levels, or
//! 20 levels of 250-byte names) walks like any other. A directory is a
//! [`Node`]: its name, its parent, its device and inode (and its copy's,
//! for a walk with a destination); every entry found is a unit of work
//! any thread may take, so a directory of 100,000 files keeps every core
//! busy too. A path is built only when a message or a report row needs
//! one, from the names of the nodes.
//!
//! Descriptors. A directory's descriptors (the source's, and the copy's
//! for a walk with a destination) are a [`Pair`], shared: the node keeps
//! a weak reference to the pair last opened for it, and each thread keeps
//! its last [`WINDOW`] pairs alive, so work in a directory another thread
//! has open, or just had open, costs no `open` (a thread reading a
//! directory and the threads copying its files share one pair). A
//! directory whose pair was let go is reopened by names from its nearest
//! ancestor still open (its root at worst), and on the way up, when a
//! directory is complete and its parent is next, through `..` of the
//! directory just finished; either way the directory reopened must have
//! the device and inode it had when it was first entered, or the walk of
//! it stops with an error (it was moved or replaced meanwhile). A walk
//! holds at most `threads × WINDOW` directories open per side, plus its
//! roots, whatever the depth: a 5,000-deep tree is walked within the
//! default limit of 1,024 open files, where keeping one descriptor per
//! level would need 5,000 (10,000 for a copy). Moving to a directory no
//! thread holds costs one `open` per level between it and its nearest open
//! ancestor, which in a walk that goes down depth first is rare.
//!
//! A directory is complete when everything under it is done; the walk then
//! calls [`Visit::complete`] on it (deepest first, each before its parent:
//! `tally cp` gives directories their modes there), also when the walk was
//! stopped. The memory the walk keeps per level of depth is one node: a
//! name and a few numbers.
//!
//! A directory found again below itself (a bind mount of an ancestor) is
//! not entered, so a loop cannot make the walk endless.

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};

use crate::sys::dir::{self, Kind};
use crate::sys::file::{self, StatAt};

/// Directory pairs each thread keeps open, the last it used.
pub const WINDOW: usize = 8;
/// Directory pairs the work waiting may keep open, over all threads.
pub const LEASES: usize = 64;
/// Entries of a directory handed to the other threads at once.
const CHUNK: usize = 256;

/// A device and inode.
type Id = (u64, u64);

fn id(st: &StatAt) -> Id {
    (st.dev, st.ino)
}

/// A directory's descriptors: the source's, and the copy's for a walk
/// with a destination.
#[derive(Debug)]
pub struct Pair {
    pub src: Arc<File>,
    pub dst: Option<Arc<File>>,
}

/// The directories a walk starts from, open.
#[derive(Debug)]
pub struct Root {
    /// The path the user named (messages and rows start with it).
    pub path: PathBuf,
    pub src: Arc<File>,
    /// The destination's root, for a walk with a destination.
    pub dst: Option<Arc<File>>,
}

/// A directory of a walk (see the module documentation).
#[derive(Debug)]
pub struct Node<D> {
    parent: Option<Arc<Node<D>>>,
    /// Its name in its parent (empty for a root).
    name: OsString,
    depth: usize,
    src: Id,
    dst: Option<Id>,
    /// Work under it not done yet, its own reading included.
    pending: AtomicUsize,
    /// The pair last opened for it, while some thread holds it.
    open: Mutex<Weak<Pair>>,
    /// For a root: its path, and its pair, held for the whole walk.
    root: Option<(PathBuf, Arc<Pair>)>,
    /// What the visitor keeps for it.
    pub data: D,
}

impl<D> Node<D> {
    /// A root of a walk, `root` opened; fails when it cannot be looked at.
    pub fn root(root: Root, data: D) -> io::Result<Arc<Node<D>>> {
        let src = id(&file::stat_fd(&root.src)?);
        let dst = match &root.dst {
            Some(d) => Some(id(&file::stat_fd(d)?)),
            None => None,
        };
        let pair = Arc::new(Pair {
            src: root.src,
            dst: root.dst,
        });
        Ok(Arc::new(Node {
            parent: None,
            name: OsString::new(),
            depth: 0,
            src,
            dst,
            pending: AtomicUsize::new(1),
            open: Mutex::new(Arc::downgrade(&pair)),
            root: Some((root.path, pair)),
            data,
        }))
    }

    pub fn name(&self) -> &OsStr {
        &self.name
    }

    /// Levels below its root (0 for a root).
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// The source directory's device and inode.
    pub fn src_id(&self) -> Id {
        self.src
    }

    /// The destination directory's, for a walk with a destination.
    pub fn dst_id(&self) -> Option<Id> {
        self.dst
    }

    /// The path of `name` in this directory (of the directory itself for
    /// `None`) below its root, built from the names of the nodes: one
    /// allocation, as long as the path.
    pub fn rel(&self, name: Option<&OsStr>) -> PathBuf {
        self.joined(Some(OsStr::new("")), name)
    }

    /// `base` (the root's own path for `None`, and `Some("")` for
    /// none), then the names from the root down to this node, then `name`,
    /// joined by `/`: one climb and one allocation.
    fn joined(&self, base: Option<&OsStr>, name: Option<&OsStr>) -> PathBuf {
        let mut names: Vec<&OsStr> = Vec::with_capacity(self.depth + 2);
        names.extend(name);
        let mut n = self;
        while let Some(p) = &n.parent {
            names.push(&n.name);
            n = p;
        }
        let root = n.root.as_ref().map(|(p, _)| p.as_os_str());
        names.extend(base.or(root));
        let len = names.iter().map(|s| s.len() + 1).sum();
        let mut out: Vec<u8> = Vec::with_capacity(len);
        for part in names.iter().rev() {
            if !out.is_empty() && !out.ends_with(b"/") {
                out.push(b'/');
            }
            out.extend_from_slice(part.as_bytes());
        }
        PathBuf::from(OsStr::from_bytes(&out))
    }

    /// The path of `name` in this directory as the user would name it:
    /// the root's path, then [`Node::rel`].
    pub fn path(&self, name: Option<&OsStr>) -> PathBuf {
        self.joined(None, name)
    }

    /// [`Node::rel`] under `base` (a path the walk's root stands for, such
    /// as the copy's destination).
    pub fn under(&self, base: &std::path::Path, name: Option<&OsStr>) -> PathBuf {
        self.joined(Some(base.as_os_str()), name)
    }

    /// Whether a directory with the source id `src` is this one or one
    /// above it: entering it again would loop.
    fn has_ancestor(&self, src: Id) -> bool {
        let mut n = self;
        loop {
            if n.src == src {
                return true;
            }
            match &n.parent {
                Some(p) => n = p,
                None => return false,
            }
        }
    }

    /// Its pair, if some thread holds it open.
    fn live(&self) -> Option<Arc<Pair>> {
        if let Some((_, pair)) = &self.root {
            return Some(Arc::clone(pair));
        }
        self.open.lock().ok()?.upgrade()
    }

    fn remember(&self, pair: &Arc<Pair>) {
        if let Ok(mut w) = self.open.lock() {
            *w = Arc::downgrade(pair);
        }
    }
}

/// The directory a thread works in, as a visitor sees it.
pub struct Here<'a, D> {
    pub node: &'a Arc<Node<D>>,
    pub src: &'a Arc<File>,
    /// The destination's directory, for a walk with a destination.
    pub dst: Option<&'a Arc<File>>,
}

impl<'a, D> Here<'a, D> {
    fn new(node: &'a Arc<Node<D>>, pair: &'a Pair) -> Here<'a, D> {
        Here {
            node,
            src: &pair.src,
            dst: pair.dst.as_ref(),
        }
    }
}

/// What a walk does at each step, on the thread that takes it. One
/// visitor per thread, dropped when the thread's work ends.
pub trait Visit<D>: Send {
    /// Whether the walk is to stop (checked between steps): what is left
    /// is then dropped, every directory entered still completed.
    fn stopping(&self) -> bool;
    /// Entering the directory `name` in `here`, opened as `src` (`st` its
    /// `fstat`): the destination's directory (for a walk with one) and
    /// the node's data, or `None` to leave it out (the visitor says why).
    fn enter(
        &mut self,
        here: &Here<D>,
        name: &OsStr,
        src: &File,
        st: &StatAt,
    ) -> Option<(Option<File>, D)>;
    /// An entry of `here` that is not a directory; `false` stops the walk.
    fn entry(&mut self, here: &Here<D>, name: &OsStr, kind: Kind) -> bool;
    /// Whether [`Visit::complete`] does anything (else the walk does not
    /// reopen directories to call it).
    fn completes(&self) -> bool;
    /// Everything under `here`'s directory is done.
    fn complete(&mut self, here: &Here<D>);
    /// Something under `node` (`name` in it, or the directory itself)
    /// could not be walked; `false` stops the walk.
    fn failed(&mut self, node: &Arc<Node<D>>, name: Option<&OsStr>, error: String) -> bool;
}

fn moved(what: &str) -> io::Error {
    io::Error::other(format!(
        "{what} was moved or replaced while it was walked: walk it again once nothing moves it"
    ))
}

/// Opens the directories of `node` through `step` (its name, or `..`)
/// from `from`, checking they are `node`'s.
fn open_step<D>(from: &Pair, node: &Node<D>, step: &OsStr) -> io::Result<Arc<Pair>> {
    let src = file::open_dir_at(Some(&from.src), step)?;
    if id(&file::stat_fd(&src)?) != node.src {
        return Err(moved("a directory"));
    }
    let dst = match (&from.dst, node.dst) {
        (Some(fd), Some(want)) => {
            let d = file::open_dir_at(Some(fd), step)?;
            if id(&file::stat_fd(&d)?) != want {
                return Err(moved("a directory of the destination"));
            }
            Some(Arc::new(d))
        }
        _ => None,
    };
    let pair = Arc::new(Pair {
        src: Arc::new(src),
        dst,
    });
    node.remember(&pair);
    Ok(pair)
}

/// The pairs a thread keeps open: the last [`WINDOW`] it used, with
/// their nodes.
struct Held<D> {
    recent: VecDeque<(Arc<Node<D>>, Arc<Pair>)>,
}

impl<D> Held<D> {
    fn keep(&mut self, node: &Arc<Node<D>>, pair: &Arc<Pair>) {
        if self
            .recent
            .back()
            .is_some_and(|(_, p)| Arc::ptr_eq(p, pair))
        {
            return;
        }
        self.recent.push_back((Arc::clone(node), Arc::clone(pair)));
        if self.recent.len() > WINDOW {
            self.recent.pop_front();
        }
    }

    /// The pair of `node`: held by some thread, else opened by names from
    /// its nearest ancestor that is, or through `..` from a directory below
    /// it this thread holds, whichever takes fewer steps.
    fn pair_of(&mut self, node: &Arc<Node<D>>) -> io::Result<Arc<Pair>> {
        if let Some(p) = node.live() {
            self.keep(node, &p);
            return Ok(p);
        }
        // An open ancestor within a few levels, else going up from the
        // nearest held directory below it, if that takes fewer steps.
        let mut up = None;
        let mut down: Vec<&Arc<Node<D>>> = vec![node];
        let mut n = node;
        let base = loop {
            if down.len() == WINDOW {
                up = self.below(node);
            }
            if up.is_some_and(|(steps, _)| down.len() >= steps) {
                break None;
            }
            let Some(parent) = &n.parent else {
                return Err(moved("the root"));
            };
            if let Some(p) = parent.live() {
                break Some(p);
            }
            down.push(parent);
            n = parent;
        };
        match base {
            Some(pair) => self.descend(pair, down),
            // `..` failed: by names after all.
            None => match up.and_then(|(_, from)| self.up_from(from, node)) {
                Some(pair) => Ok(pair),
                None => self.by_names(node),
            },
        }
    }

    /// [`Held::pair_of`] by names only, from the nearest ancestor open.
    fn by_names(&mut self, node: &Arc<Node<D>>) -> io::Result<Arc<Pair>> {
        let mut down: Vec<&Arc<Node<D>>> = vec![node];
        let mut n = node;
        let base = loop {
            let Some(parent) = &n.parent else {
                return Err(moved("the root"));
            };
            if let Some(p) = parent.live() {
                break p;
            }
            down.push(parent);
            n = parent;
        };
        self.descend(base, down)
    }

    /// Opens `down` (nodes, deepest first) by names from `pair`, the
    /// pair of the last one's parent: the first one's pair.
    fn descend(&mut self, mut pair: Arc<Pair>, down: Vec<&Arc<Node<D>>>) -> io::Result<Arc<Pair>> {
        for node in down.into_iter().rev() {
            pair = open_step(&pair, node, &node.name)?;
            self.keep(node, &pair);
        }
        Ok(pair)
    }

    /// The nearest held directory below `target`: how many levels below,
    /// and which (its place in `recent`).
    fn below(&self, target: &Arc<Node<D>>) -> Option<(usize, usize)> {
        let mut best: Option<(usize, usize)> = None;
        for (i, (h, _)) in self.recent.iter().enumerate() {
            let Some(steps) = h.depth.checked_sub(target.depth).filter(|s| *s > 0) else {
                continue;
            };
            if best.is_some_and(|(b, _)| b <= steps) {
                continue;
            }
            let mut n = h;
            while n.depth > target.depth {
                match &n.parent {
                    Some(p) => n = p,
                    None => break,
                }
            }
            if Arc::ptr_eq(n, target) {
                best = Some((steps, i));
            }
        }
        best
    }

    /// The pair of `target` through `..` from the held directory
    /// `recent[from]` below it; `None` when a step fails (a mode without
    /// search permission denies `..`, or a directory moved).
    fn up_from(&mut self, from: usize, target: &Arc<Node<D>>) -> Option<Arc<Pair>> {
        let (mut n, mut pair) = self
            .recent
            .get(from)
            .map(|(h, p)| (Arc::clone(h), Arc::clone(p)))?;
        while n.depth > target.depth {
            let parent = Arc::clone(n.parent.as_ref()?);
            pair = open_step(&pair, &parent, OsStr::new("..")).ok()?;
            self.keep(&parent, &pair);
            n = parent;
        }
        Some(pair)
    }

    /// The pair of `parent`, from the pair `child` of one of its
    /// directories: held by some thread, else through `..` (or by names,
    /// where a mode without search permission denies `..`).
    fn parent_pair(&mut self, parent: &Arc<Node<D>>, child: &Pair) -> io::Result<Arc<Pair>> {
        if let Some(p) = parent.live() {
            self.keep(parent, &p);
            return Ok(p);
        }
        match open_step(child, parent, OsStr::new("..")) {
            Ok(p) => {
                self.keep(parent, &p);
                Ok(p)
            }
            Err(_) => self.pair_of(parent),
        }
    }
}

/// A directory's pair kept open for the work waiting in it, within the
/// walk's [`LEASES`]: the entries of a directory read share one, so
/// whichever thread takes them needs no `open`, however far the walk has
/// gone on meanwhile.
struct Lease<'q> {
    pair: Arc<Pair>,
    count: &'q AtomicUsize,
}

impl<'q> Lease<'q> {
    /// A lease of `pair`, if the walk has one left.
    fn take(pair: &Arc<Pair>, count: &'q AtomicUsize) -> Option<Arc<Lease<'q>>> {
        let taken = count
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < LEASES).then_some(n + 1)
            })
            .is_ok();
        taken.then(|| {
            Arc::new(Lease {
                pair: Arc::clone(pair),
                count,
            })
        })
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A unit of work.
enum Job<'q, D> {
    /// Read a root's entries.
    Read(Arc<Node<D>>),
    /// An entry of a directory.
    Entry {
        parent: Arc<Node<D>>,
        name: OsString,
        kind: Kind,
        lease: Option<Arc<Lease<'q>>>,
    },
}

/// The work waiting, shared by the threads: taken last in, first out,
/// so that the walk goes down depth first, and threads mostly work in
/// directories that are open already.
struct Queue<'q, D> {
    state: Mutex<State<'q, D>>,
    ready: Condvar,
    stop: AtomicBool,
    /// Leases taken.
    leases: &'q AtomicUsize,
}

struct State<'q, D> {
    jobs: Vec<Job<'q, D>>,
    /// Threads working on a job.
    busy: usize,
}

impl<'q, D> Queue<'q, D> {
    fn push(&self, jobs: Vec<Job<'q, D>>) {
        if jobs.is_empty() {
            return;
        }
        let many = jobs.len() > 1;
        if let Ok(mut s) = self.state.lock() {
            s.jobs.extend(jobs);
        }
        if many {
            self.ready.notify_all();
        } else {
            self.ready.notify_one();
        }
    }

    /// The next job, or `None` when there is none and no thread could
    /// make more. `done` ends the caller's previous job.
    fn take(&self, done: bool) -> Option<Job<'q, D>> {
        let mut s = self.state.lock().ok()?;
        if done {
            s.busy = s.busy.saturating_sub(1);
        }
        loop {
            if let Some(job) = s.jobs.pop() {
                s.busy += 1;
                return Some(job);
            }
            if s.busy == 0 {
                self.ready.notify_all();
                return None;
            }
            s = self.ready.wait(s).ok()?;
        }
    }
}

/// Walks the trees under `roots` (each made by [`Node::root`]) on
/// `threads` threads, each with the visitor `make` gives it.
pub fn walk<D, V, F>(roots: Vec<Arc<Node<D>>>, threads: usize, make: F)
where
    D: Send + Sync,
    V: Visit<D>,
    F: Fn() -> V + Sync,
{
    let leases = AtomicUsize::new(0);
    let queue = Queue {
        state: Mutex::new(State {
            jobs: roots.into_iter().rev().map(Job::Read).collect(),
            busy: 0,
        }),
        ready: Condvar::new(),
        stop: AtomicBool::new(false),
        leases: &leases,
    };
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            let (queue, make) = (&queue, &make);
            scope.spawn(move || {
                let mut w = Worker {
                    visit: make(),
                    held: Held {
                        recent: VecDeque::with_capacity(WINDOW + 1),
                    },
                    queue,
                };
                let mut done = false;
                while let Some(job) = queue.take(done) {
                    w.run(job);
                    done = true;
                }
            });
        }
    });
}

/// One thread of a walk.
struct Worker<'a, 'q, D, V> {
    visit: V,
    held: Held<D>,
    queue: &'a Queue<'q, D>,
}

impl<'q, D: Send + Sync, V: Visit<D>> Worker<'_, 'q, D, V> {
    fn stopped(&self) -> bool {
        if self.queue.stop.load(Ordering::Relaxed) {
            return true;
        }
        if self.visit.stopping() {
            self.queue.stop.store(true, Ordering::Relaxed);
            return true;
        }
        false
    }

    fn stop_unless(&self, go: bool) {
        if !go {
            self.queue.stop.store(true, Ordering::Relaxed);
        }
    }

    fn failed(&mut self, node: &Arc<Node<D>>, name: Option<&OsStr>, e: &io::Error) {
        let go = self.visit.failed(node, name, describe(e));
        self.stop_unless(go);
    }

    fn run(&mut self, job: Job<'q, D>) {
        let (parent, name, kind, lease) = match job {
            Job::Read(root) => {
                let pair = root.live();
                if let (false, Some(pair)) = (self.stopped(), &pair) {
                    self.read(&root, pair);
                }
                return self.release(root, pair);
            }
            Job::Entry {
                parent,
                name,
                kind,
                lease,
            } => (parent, name, kind, lease),
        };
        if self.stopped() {
            return self.release(parent, lease.map(|l| Arc::clone(&l.pair)));
        }
        let leased = lease.as_ref().map(|l| Arc::clone(&l.pair));
        drop(lease);
        let got = match leased {
            Some(p) => {
                self.held.keep(&parent, &p);
                Ok(p)
            }
            None => self.held.pair_of(&parent),
        };
        let pair = match got {
            Ok(p) => p,
            Err(e) => {
                self.failed(&parent, Some(&name), &e);
                return self.release(parent, None);
            }
        };
        if kind == Kind::Dir {
            if let Some((node, child)) = self.enter(&parent, &pair, &name) {
                self.read(&node, &child);
                return self.release(node, Some(child));
            }
        } else {
            let go = self.visit.entry(&Here::new(&parent, &pair), &name, kind);
            self.stop_unless(go);
        }
        self.release(parent, Some(pair));
    }

    /// Enters the directory `name` of `parent` (open as `pair`): the new
    /// node and its pair, or `None` when it was left out.
    fn enter(
        &mut self,
        parent: &Arc<Node<D>>,
        pair: &Pair,
        name: &OsStr,
    ) -> Option<(Arc<Node<D>>, Arc<Pair>)> {
        let opened = file::open_dir_at(Some(&pair.src), name)
            .and_then(|src| file::stat_fd(&src).map(|st| (src, st)));
        let (src, st) = match opened {
            Ok(pair) => pair,
            // Gone, or a link swapped in since the directory was read: as
            // if it had not been found.
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ELOOP)) => {
                return None;
            }
            Err(e) => {
                self.failed(parent, Some(name), &e);
                return None;
            }
        };
        if parent.has_ancestor(id(&st)) {
            let go = self.visit.failed(
                parent,
                Some(name),
                "cannot walk it: it is a directory above it again (a bind mount), which would \
                 make the walk loop"
                    .into(),
            );
            self.stop_unless(go);
            return None;
        }
        let (dst, data) = self
            .visit
            .enter(&Here::new(parent, pair), name, &src, &st)?;
        let dst_id = match dst.as_ref().map(file::stat_fd) {
            Some(Ok(d)) => Some(id(&d)),
            Some(Err(e)) => {
                self.failed(parent, Some(name), &e);
                return None;
            }
            None => None,
        };
        let child = Arc::new(Pair {
            src: Arc::new(src),
            dst: dst.map(Arc::new),
        });
        let node = Arc::new(Node {
            parent: Some(Arc::clone(parent)),
            name: name.to_os_string(),
            depth: parent.depth + 1,
            src: id(&st),
            dst: dst_id,
            pending: AtomicUsize::new(1),
            open: Mutex::new(Arc::downgrade(&child)),
            root: None,
            data,
        });
        self.held.keep(&node, &child);
        Some((node, child))
    }

    /// Reads the entries of `node` (open as `pair`), handing them out
    /// [`CHUNK`] at a time.
    fn read(&mut self, node: &Arc<Node<D>>, pair: &Arc<Pair>) {
        let lease = Lease::take(pair, self.queue.leases);
        let entries = match dir::entries(&pair.src) {
            Ok(e) => e,
            Err(e) => return self.failed(node, None, &e),
        };
        let mut jobs = Vec::new();
        for entry in entries {
            if self.stopped() {
                break;
            }
            let entry = match entry {
                Ok(e) => e,
                Err(e) => {
                    self.failed(node, None, &e);
                    break;
                }
            };
            let kind = match entry.kind {
                Kind::Unknown => match file::stat_at(&pair.src, &entry.name) {
                    Ok(st) => Kind::of_mode(st.mode),
                    Err(e) if e.raw_os_error() == Some(libc::ENOENT) => continue,
                    Err(e) => {
                        self.failed(node, Some(&entry.name), &e);
                        continue;
                    }
                },
                k => k,
            };
            jobs.push(Job::Entry {
                parent: Arc::clone(node),
                name: entry.name,
                kind,
                lease: lease.clone(),
            });
            if jobs.len() >= CHUNK {
                node.pending.fetch_add(jobs.len(), Ordering::AcqRel);
                self.queue.push(std::mem::take(&mut jobs));
            }
        }
        node.pending.fetch_add(jobs.len(), Ordering::AcqRel);
        self.queue.push(jobs);
    }

    /// One piece of work under `node` (open as `pair`, if at hand) is
    /// done: completes it when it was the last, and its parent when that
    /// was its last, and so on up.
    fn release(&mut self, node: Arc<Node<D>>, pair: Option<Arc<Pair>>) {
        let (mut n, mut pair) = (node, pair);
        loop {
            if n.pending.fetch_sub(1, Ordering::AcqRel) != 1 {
                return;
            }
            let parent = n.parent.clone();
            if self.visit.completes() {
                pair = self.complete(&n, pair, parent.as_ref());
            }
            match parent {
                Some(p) => n = p,
                None => return,
            }
        }
    }

    /// Completes `node` (open as `pair`, if at hand); the pair of its
    /// `parent`, opened before `node`'s directory is changed (a mode
    /// without search permission would deny `..` after).
    fn complete(
        &mut self,
        node: &Arc<Node<D>>,
        pair: Option<Arc<Pair>>,
        parent: Option<&Arc<Node<D>>>,
    ) -> Option<Arc<Pair>> {
        let pair = match pair.map_or_else(|| self.held.pair_of(node), Ok) {
            Ok(p) => p,
            Err(e) => {
                self.failed(node, None, &e);
                return None;
            }
        };
        let up = parent.and_then(|p| self.held.parent_pair(p, &pair).ok());
        self.visit.complete(&Here::new(node, &pair));
        up
    }
}

/// An error of the walk in words: the common ones said plainly.
pub fn describe(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::ENOENT) => "no such file or directory".into(),
        Some(libc::EACCES) => "permission denied".into(),
        Some(libc::ELOOP) => "too many levels of symbolic links (a link loop)".into(),
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// Collects the relative paths of files, and the directories in the
    /// order they completed.
    struct Collect<'a> {
        files: &'a Mutex<BTreeSet<PathBuf>>,
        completed: &'a Mutex<Vec<PathBuf>>,
    }

    impl Visit<()> for Collect<'_> {
        fn stopping(&self) -> bool {
            false
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
        fn entry(&mut self, here: &Here<()>, name: &OsStr, _: Kind) -> bool {
            if let Ok(mut f) = self.files.lock() {
                f.insert(here.node.rel(Some(name)));
            }
            true
        }
        fn completes(&self) -> bool {
            true
        }
        fn complete(&mut self, here: &Here<()>) {
            if let Ok(mut c) = self.completed.lock() {
                c.push(here.node.rel(None));
            }
        }
        fn failed(&mut self, node: &Arc<Node<()>>, name: Option<&OsStr>, e: String) -> bool {
            panic!("{}: {e}", node.rel(name).display());
        }
    }

    /// A chain `depth` deep of directories `d`, a file `f` in each.
    fn chain(base: &std::path::Path, depth: usize) {
        let mut cur = file::open_dir(base).expect("open");
        for _ in 0..depth {
            file::mkdir_at(&cur, OsStr::new("d"), 0o755).expect("mkdir");
            drop(file::create_new_at(&cur, OsStr::new("f"), 0o644).expect("create"));
            cur = file::open_dir_at(Some(&cur), OsStr::new("d")).expect("open");
        }
    }

    fn run(base: &std::path::Path, threads: usize) -> (BTreeSet<PathBuf>, Vec<PathBuf>) {
        let files = Mutex::new(BTreeSet::new());
        let completed = Mutex::new(Vec::new());
        let root = Root {
            path: base.to_path_buf(),
            src: Arc::new(file::open_dir(base).expect("open")),
            dst: None,
        };
        let root = Node::root(root, ()).expect("root");
        walk(vec![root], threads, || Collect {
            files: &files,
            completed: &completed,
        });
        (
            files.into_inner().expect("files"),
            completed.into_inner().expect("completed"),
        )
    }

    #[test]
    fn a_chain_deeper_than_the_window_is_walked_whole_deepest_first() {
        let dir = tempfile::tempdir().expect("tempdir");
        let depth = WINDOW * 5 + 3;
        chain(dir.path(), depth);
        for threads in [1, 4] {
            let (files, completed) = run(dir.path(), threads);
            assert_eq!(files.len(), depth, "{threads} threads");
            let want: PathBuf = std::iter::repeat_n("d", depth - 1)
                .collect::<PathBuf>()
                .join("f");
            assert!(files.contains(&want), "{files:?}");
            // Every directory completes once, each after those below it.
            assert_eq!(completed.len(), depth + 1);
            let depths: Vec<usize> = completed.iter().map(|p| p.components().count()).collect();
            assert!(depths.windows(2).all(|w| w[0] > w[1]), "{depths:?}");
        }
    }

    #[test]
    fn two_deep_chains_are_walked_by_threads_going_up_and_across() {
        let dir = tempfile::tempdir().expect("tempdir");
        // Two chains, a/d/d/... and b/d/d/..., each 3 windows deep.
        let depth = WINDOW * 3;
        for side in ["a", "b"] {
            std::fs::create_dir(dir.path().join(side)).expect("mkdir");
            chain(&dir.path().join(side), depth);
        }
        let (files, completed) = run(dir.path(), 3);
        assert_eq!(files.len(), 2 * depth);
        assert_eq!(completed.len(), 2 * (depth + 1) + 1);
    }

    #[test]
    fn paths_are_built_from_the_names() {
        let root = Node::root(
            Root {
                path: PathBuf::from("base"),
                src: Arc::new(File::open("/").expect("open")),
                dst: None,
            },
            (),
        )
        .expect("root");
        let child = Arc::new(Node {
            parent: Some(Arc::clone(&root)),
            name: "c".into(),
            depth: 1,
            src: (0, 0),
            dst: None,
            pending: AtomicUsize::new(0),
            open: Mutex::new(Weak::new()),
            root: None,
            data: (),
        });
        assert_eq!(root.rel(None), PathBuf::new());
        assert_eq!(root.path(None), PathBuf::from("base"));
        assert_eq!(child.rel(Some(OsStr::new("f"))), PathBuf::from("c/f"));
        assert_eq!(child.path(None), PathBuf::from("base/c"));
        assert_eq!(
            child.under(std::path::Path::new("/"), Some(OsStr::new("f"))),
            PathBuf::from("/c/f")
        );
    }
}
