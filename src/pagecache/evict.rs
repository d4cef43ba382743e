//! Evicting files from the page cache without root, and checking it worked.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use super::{Residency, residency_of};
use crate::procfs::{ProcRoot, maps, smaps};
use crate::sys::{self, cache::Advice};

/// DONTNEED ranges are rounded out to this (the largest folio size ext4
/// uses with large folios), so no folio straddles the range's edges.
pub const ALIGN_BYTES: u64 = 2 << 20;

/// What happened to one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evicted {
    #[serde(
        serialize_with = "crate::text::path::serialize",
        deserialize_with = "crate::text::path::deserialize"
    )]
    pub path: PathBuf,
    pub size_bytes: u64,
    pub before: Residency,
    pub after: Residency,
    /// Why pages stayed cached, when some did.
    pub stayed_reason: Option<String>,
}

/// Why a file could not be evicted at all.
#[derive(Debug, thiserror::Error)]
pub enum EvictError {
    #[error("cannot open {}: {source}", crate::text::path::display(path))]
    Open { path: PathBuf, source: io::Error },
    #[error("cannot walk {}: {message}", crate::text::path::display(path))]
    Walk { path: PathBuf, message: String },
}

/// Evicts files one after another, or from several threads at once,
/// sharing what it learns: the processes that map files, read from /proc
/// once, the first time a file keeps pages that are not dirty.
#[derive(Default)]
pub struct Evictor {
    mapped: OnceLock<Mapped>,
}

/// The files processes map: (device, inode) → PIDs.
type Mapped = HashMap<(u64, u64), Vec<u32>>;

impl Evictor {
    pub fn new() -> Evictor {
        Evictor::default()
    }

    /// Evicts `file` (opened from `path`, its `stat` `meta`) and checks
    /// what left: one `cachestat` before, `fdatasync` only for a file
    /// with dirty or writeback pages (or whose state is unknown),
    /// `POSIX_FADV_DONTNEED` only for a file with pages cached, and one
    /// `cachestat` after.
    pub fn evict(&self, file: &File, path: &Path, meta: &std::fs::Metadata) -> Evicted {
        let size = meta.len();
        let before = residency_of(file, path, meta);
        let (cached, must_sync) = match &before {
            Residency::Known {
                cached_pages,
                dirty_pages,
                writeback_pages,
                ..
            } => (
                *cached_pages,
                // mincore cannot tell dirty pages: sync what is cached.
                *cached_pages > 0
                    && (dirty_pages.is_none_or(|d| d > 0) || writeback_pages.is_none_or(|w| w > 0)),
            ),
            Residency::Unknown { .. } => (u64::MAX, true),
        };
        if cached == 0 {
            // Nothing cached: nothing to drop, nothing to check again.
            return Evicted {
                path: path.to_path_buf(),
                size_bytes: size,
                after: before.clone(),
                before,
                stayed_reason: None,
            };
        }
        if must_sync {
            // Dirty pages cannot be dropped; write them first. A failure
            // here (EIO, a read-only mount) shows below as pages that
            // stayed dirty.
            let _ = sys::cache::fdatasync(file);
        }
        let len = size.div_ceil(ALIGN_BYTES).saturating_mul(ALIGN_BYTES);
        let advised = sys::cache::fadvise(file, 0, len, Advice::DontNeed);
        let after = residency_of(file, path, meta);
        let stayed_reason = match (&advised, &after) {
            (Err(e), _) => Some(format!("posix_fadvise failed: {e}")),
            (
                Ok(()),
                Residency::Known {
                    cached_pages,
                    dirty_pages,
                    ..
                },
            ) if *cached_pages > 0 => Some(self.why_stayed(meta, dirty_pages.unwrap_or(0))),
            _ => None,
        };
        Evicted {
            path: path.to_path_buf(),
            size_bytes: size,
            before,
            after,
            stayed_reason,
        }
    }

    /// Explains why pages of the file `meta` stayed after DONTNEED.
    fn why_stayed(&self, meta: &std::fs::Metadata, dirty_pages: u64) -> String {
        if dirty_pages > 0 {
            return format!("{dirty_pages} dirty pages (writeback failed or raced with a writer)");
        }
        let root = ProcRoot::default();
        let mapped = self.mapped.get_or_init(|| processes_mapping(&root));
        let users = mapped
            .get(&(meta.dev(), meta.ino()))
            .cloned()
            .unwrap_or_default();
        explain(&root, &users, meta.dev(), meta.ino())
    }
}

fn open(path: &Path) -> Result<File, EvictError> {
    // Read-only is enough: fdatasync and fadvise work on any open file.
    OpenOptions::new()
        .read(true)
        .open(path)
        .map_err(|source| EvictError::Open {
            path: path.to_path_buf(),
            source,
        })
}

/// Evicts one file and checks what left (see [`Evictor::evict`]).
pub fn evict_file(path: &Path) -> Result<Evicted, EvictError> {
    let file = open(path)?;
    let meta = file.metadata().map_err(|source| EvictError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(Evictor::new().evict(&file, path, &meta))
}

/// Why pages of the file `dev`:`ino` stayed: the processes that map it
/// (`users`), and which of them lock it.
fn explain(root: &ProcRoot, users: &[u32], dev: u64, ino: u64) -> String {
    if users.is_empty() {
        return "unknown: not dirty and mapped by no readable process (re-read concurrently, or mapped by a process whose maps you cannot read)".into();
    }
    let (locked, mapped): (Vec<u32>, Vec<u32>) = users
        .iter()
        .partition(|pid| locked_kib(root, **pid, dev, ino) > 0);
    let list = |pids: &[u32]| {
        let mut l: Vec<String> = pids.iter().take(5).map(|p| p.to_string()).collect();
        if pids.len() > 5 {
            l.push("…".into());
        }
        l.join(", ")
    };
    match (locked.is_empty(), mapped.is_empty()) {
        (false, true) => format!("locked (mlock) by process {}", list(&locked)),
        (true, false) => format!("mapped by process {}", list(&mapped)),
        _ => format!(
            "locked (mlock) by process {}; mapped by process {}",
            list(&locked),
            list(&mapped)
        ),
    }
}

/// KiB of the file `dev`:`ino` that process `pid` holds locked, from the
/// `Locked:` lines of its /proc/PID/smaps (0 if unreadable).
fn locked_kib(root: &ProcRoot, pid: u32, dev: u64, ino: u64) -> u64 {
    let Ok(text) = root.read_pid(pid, "smaps") else {
        return 0;
    };
    smaps::locked_kib(&text, &maps::dev_field(dev), &ino.to_string())
}

/// Every file mapped by a process whose /proc/PID/maps is readable, with
/// the PIDs that map it: read once per [`Evictor`].
fn processes_mapping(root: &ProcRoot) -> Mapped {
    let mut out: Mapped = HashMap::new();
    for pid in root.pids().into_iter().flatten() {
        // Processes vanish and refuse; both just mean "not this one".
        let Ok(text) = root.read_pid(pid, "maps") else {
            continue;
        };
        let mut mine: Vec<(u64, u64)> = maps::mapped_files(&text).collect();
        mine.sort_unstable();
        mine.dedup();
        for key in mine {
            out.entry(key).or_default().push(pid);
        }
    }
    out
}
