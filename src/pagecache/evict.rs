//! Evicting files from the page cache without root, and checking it worked.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Residency, residency};
use crate::procfs::{ProcRoot, maps, smaps};
use crate::sys::{self, cache::Advice};

/// DONTNEED ranges are rounded out to this (the largest folio size ext4
/// uses with large folios), so no folio straddles the range's edges.
pub const ALIGN_BYTES: u64 = 2 << 20;

/// What happened to one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evicted {
    #[serde(
        serialize_with = "crate::report::path::serialize",
        deserialize_with = "crate::report::path::deserialize"
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
    #[error("cannot open {}: {source}", crate::report::path::display(path))]
    Open { path: PathBuf, source: io::Error },
    #[error("cannot walk {}: {message}", crate::report::path::display(path))]
    Walk { path: PathBuf, message: String },
}

/// The regular files named by `paths`, directories walked recursively
/// (symbolic links inside directories are not followed, so loops cannot
/// happen; a link named directly is followed).
pub fn regular_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, EvictError> {
    let mut files = Vec::new();
    for path in paths {
        let meta = std::fs::metadata(path).map_err(|source| EvictError::Open {
            path: path.clone(),
            source,
        })?;
        if meta.is_dir() {
            for entry in walkdir::WalkDir::new(path).follow_links(false) {
                let entry = entry.map_err(|e| EvictError::Walk {
                    path: path.clone(),
                    message: e.to_string(),
                })?;
                if entry.file_type().is_file() {
                    files.push(entry.into_path());
                }
            }
        } else if meta.is_file() {
            files.push(path.clone());
        }
    }
    Ok(files)
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

/// Evicts one file and checks what left.
pub fn evict_file(path: &Path) -> Result<Evicted, EvictError> {
    let file = open(path)?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let before = residency(&file, path, size);
    // Dirty pages cannot be dropped; write them first. A failure here
    // (EIO, a read-only mount) shows below as pages that stayed dirty.
    let _ = sys::cache::fdatasync(&file);
    let len = size.div_ceil(ALIGN_BYTES).saturating_mul(ALIGN_BYTES);
    let advised = sys::cache::fadvise(&file, 0, len, Advice::DontNeed);
    let after = residency(&file, path, size);
    let stayed_reason = match (&advised, &after) {
        (Err(e), _) => Some(format!("posix_fadvise failed: {e}")),
        (
            Ok(()),
            Residency::Known {
                cached_pages,
                dirty_pages,
                ..
            },
        ) if *cached_pages > 0 => Some(why_stayed(&file, dirty_pages.unwrap_or(0))),
        _ => None,
    };
    Ok(Evicted {
        path: path.to_path_buf(),
        size_bytes: size,
        before,
        after,
        stayed_reason,
    })
}

/// Explains why pages of `file` stayed after DONTNEED.
fn why_stayed(file: &File, dirty_pages: u64) -> String {
    if dirty_pages > 0 {
        return format!("{dirty_pages} dirty pages (writeback failed or raced with a writer)");
    }
    let (dev, ino) = match file.metadata() {
        Ok(m) => (m.dev(), m.ino()),
        Err(_) => return "unknown".into(),
    };
    let root = ProcRoot::default();
    let users = processes_mapping(&root, dev, ino);
    if users.is_empty() {
        return "unknown: not dirty and mapped by no readable process (re-read concurrently, or mapped by a process whose maps you cannot read)".into();
    }
    let (locked, mapped): (Vec<u32>, Vec<u32>) = users
        .iter()
        .partition(|pid| locked_kib(&root, **pid, dev, ino) > 0);
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

/// PIDs whose /proc/PID/maps map the file `dev`:`ino`.
fn processes_mapping(root: &ProcRoot, dev: u64, ino: u64) -> Vec<u32> {
    let needle_dev = maps::dev_field(dev);
    let needle_ino = ino.to_string();
    let mut pids = Vec::new();
    for pid in root.pids().into_iter().flatten() {
        // Processes vanish and refuse; both just mean "not this one".
        let Ok(text) = root.read_pid(pid, "maps") else {
            continue;
        };
        if maps::maps_file(&text, &needle_dev, &needle_ino) {
            pids.push(pid);
        }
    }
    pids
}
