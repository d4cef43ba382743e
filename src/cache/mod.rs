//! Page-cache residency of files, and eviction that is verified.
//!
//! Residency comes from `cachestat(2)` (Linux 6.5+), else from `mincore(2)`
//! over a mapping of the file. Where the kernel refuses (EPERM) or would
//! lie (mincore reports every page resident to a caller that neither owns
//! nor may write the file) the answer is [`Residency::Unknown`], never 100%.
//!
//! Eviction needs no root: `fdatasync` (dirty pages cannot be dropped),
//! then `POSIX_FADV_DONTNEED` over the file rounded out to 2 MiB (with
//! large folios the kernel drops only folios wholly inside the range), then
//! a second residency check, and for pages that stayed, the reason: dirty,
//! or mapped/locked by a process found in /proc/PID/maps.

pub mod evict;

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::sys;

/// How residency was measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    Cachestat,
    Mincore,
}

/// A file's pages in the page cache.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "lowercase")]
pub enum Residency {
    Known {
        method: Method,
        cached_pages: u64,
        /// Absent when the method cannot tell (mincore).
        dirty_pages: Option<u64>,
        writeback_pages: Option<u64>,
    },
    Unknown {
        reason: String,
    },
}

impl Residency {
    /// Cached pages, when known.
    pub fn cached_pages(&self) -> Option<u64> {
        match self {
            Residency::Known { cached_pages, .. } => Some(*cached_pages),
            Residency::Unknown { .. } => None,
        }
    }
}

/// The residency of the first `size` bytes of `file` (opened from `path`).
pub fn residency(file: &File, path: &Path, size: u64) -> Residency {
    match sys::cache::cachestat(file, 0, 0) {
        Ok(stat) => {
            return Residency::Known {
                method: Method::Cachestat,
                cached_pages: stat.cached_pages,
                dirty_pages: Some(stat.dirty_pages),
                writeback_pages: Some(stat.writeback_pages),
            };
        }
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
            return Residency::Unknown {
                reason:
                    "the kernel refuses residency of a file you neither own nor may write (EPERM)"
                        .into(),
            };
        }
        // ENOSYS (kernel before 6.5) or a filesystem without support:
        // fall back to mincore.
        Err(_) => {}
    }
    let owner = file.metadata().map(|m| m.uid()).unwrap_or(u32::MAX);
    let euid = sys::geteuid();
    if euid != 0 && owner != euid && !sys::cache::may_write(path) {
        return Residency::Unknown {
            reason:
                "mincore would report every page resident for a file you neither own nor may write"
                    .into(),
        };
    }
    if size == 0 {
        return Residency::Known {
            method: Method::Mincore,
            cached_pages: 0,
            dirty_pages: None,
            writeback_pages: None,
        };
    }
    match sys::cache::mincore_resident(file, size) {
        Ok(pages) => Residency::Known {
            method: Method::Mincore,
            cached_pages: pages,
            dirty_pages: None,
            writeback_pages: None,
        },
        Err(e) => Residency::Unknown {
            reason: format!("mincore failed: {e}"),
        },
    }
}
