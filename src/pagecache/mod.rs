//! Page-cache residency of files, and eviction that is verified.
//!
//! Residency comes from `cachestat(2)` (Linux 6.5+), one call per file,
//! else from `mincore(2)` over a mapping of the file. Where the kernel refuses (EPERM) or would
//! lie (mincore reports every page resident to a caller that neither owns
//! nor may write the file) the answer is [`Residency::Unknown`], never 100%.
//!
//! Eviction needs no root: `fdatasync` where the file has dirty or
//! writeback pages (dirty pages cannot be dropped; `cachestat` says which
//! files have them, and a file with no page cached needs nothing), then
//! `POSIX_FADV_DONTNEED` over the file rounded out to 2 MiB (with large
//! folios the kernel drops only folios wholly inside the range), then a
//! second residency check, and for pages that stayed, the reason: dirty,
//! or mapped/locked by a process found in /proc/PID/maps.
//!
//! [`walk`] finds the files under the paths a user names on every core,
//! for `tally cache`, `--cold` and `--warm`.

pub mod bulk;
pub mod evict;
pub mod tree;
pub mod walk;
pub mod warm;

use std::fs::{File, Metadata};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

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

/// Set by [`use_mincore_only`]: residency by `mincore` even where
/// `cachestat` works (for tests of the fallback, `tally cache --mincore`).
static MINCORE_ONLY: AtomicBool = AtomicBool::new(false);

/// Measures residency by `mincore` alone from now on in this process, as
/// on a kernel before 6.5: the fallback path, selectable for tests.
pub fn use_mincore_only(yes: bool) {
    MINCORE_ONLY.store(yes, Ordering::Relaxed);
}

fn mincore_only() -> bool {
    MINCORE_ONLY.load(Ordering::Relaxed)
}

/// `cachestat` over `[off, off+len)` (`len` 0: to the end), or ENOSYS when
/// [`use_mincore_only`] is in force.
pub fn cachestat(file: &File, off: u64, len: u64) -> std::io::Result<sys::cache::CacheStat> {
    if mincore_only() {
        return Err(std::io::Error::from_raw_os_error(libc::ENOSYS));
    }
    sys::cache::cachestat(file, off, len)
}

/// The residency of the first `size` bytes of `file` (opened from `path`).
pub fn residency(file: &File, path: &Path, size: u64) -> Residency {
    measure(file, path, size, || {
        file.metadata().map(|m| m.uid()).unwrap_or(u32::MAX)
    })
}

/// The residency of `file` (opened from `path`), whose `stat` is `meta`:
/// one system call where `cachestat` works.
pub fn residency_of(file: &File, path: &Path, meta: &Metadata) -> Residency {
    measure(file, path, meta.len(), || meta.uid())
}

fn measure(file: &File, path: &Path, size: u64, owner: impl FnOnce() -> u32) -> Residency {
    match cachestat(file, 0, 0) {
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
    let euid = sys::geteuid();
    if euid != 0 && owner() != euid && !sys::cache::may_write(path) {
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
    match sys::cache::mincore_resident(file, 0, size) {
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

/// How many pages hold `size_bytes` bytes.
pub fn size_pages(size_bytes: u64) -> u64 {
    size_bytes.div_ceil(sys::page_size())
}

/// A residency map: the file cut into `buckets` equal page-aligned ranges,
/// and for each the percentage of its pages that are cached (0..=100).
/// `None` when neither cachestat nor mincore answers. Callers ask only for
/// files whose [`residency`] is known, so mincore cannot lie here.
pub fn map_percent(file: &File, size_bytes: u64, buckets: u64) -> Option<Vec<u8>> {
    if size_bytes == 0 || buckets == 0 {
        return Some(Vec::new());
    }
    let page = sys::page_size();
    let pages = size_bytes.div_ceil(page);
    let per_bucket_pages = pages.div_ceil(buckets).max(1);
    let span = per_bucket_pages.saturating_mul(page);
    let mut out = Vec::new();
    let mut off = 0u64;
    while off < size_bytes {
        let len = span.min(size_bytes - off);
        let cached = match cachestat(file, off, len) {
            Ok(s) => s.cached_pages,
            Err(_) => sys::cache::mincore_resident(file, off, len).ok()?,
        };
        let pages = len.div_ceil(page);
        let mut pct = crate::units::percent(cached, pages).unwrap_or(0);
        // A few pages must not vanish in rounding, nor a gap look full.
        if cached > 0 && pct == 0 {
            pct = 1;
        } else if cached < pages && pct == 100 {
            pct = 99;
        }
        out.push(pct as u8);
        off = off.saturating_add(span);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn fresh_file(bytes: usize) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f");
        let mut f = File::create(&path).expect("create");
        f.write_all(&vec![7u8; bytes]).expect("write");
        f.sync_all().expect("sync");
        (dir, path)
    }

    #[test]
    fn a_file_just_written_is_cached_and_a_map_covers_it() {
        let (_dir, path) = fresh_file(1 << 20);
        let f = File::open(&path).expect("open");
        let r = residency(&f, &path, 1 << 20);
        let pages = size_pages(1 << 20);
        assert_eq!(r.cached_pages(), Some(pages));
        let map = map_percent(&f, 1 << 20, 8).expect("map");
        assert_eq!(map.len(), 8);
        assert!(map.iter().all(|p| *p == 100), "{map:?}");
    }

    #[test]
    fn cachestat_and_mincore_agree() {
        let (_dir, path) = fresh_file(256 << 10);
        let f = File::open(&path).expect("open");
        let meta = f.metadata().expect("stat");
        let by_cachestat = residency_of(&f, &path, &meta);
        let by_mincore = match sys::cache::mincore_resident(&f, 0, meta.len()) {
            Ok(p) => p,
            Err(e) => panic!("mincore: {e}"),
        };
        match by_cachestat {
            Residency::Known {
                method: Method::Cachestat,
                cached_pages,
                ..
            } => assert_eq!(cached_pages, by_mincore),
            // A kernel before 6.5: the fallback answered.
            Residency::Known {
                method: Method::Mincore,
                cached_pages,
                ..
            } => assert_eq!(cached_pages, by_mincore),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn maps_of_odd_sizes_stay_within_bounds() {
        let (_dir, path) = fresh_file(5 * 4096 + 17);
        let f = File::open(&path).expect("open");
        let map = map_percent(&f, 5 * 4096 + 17, 64).expect("map");
        assert!(!map.is_empty() && map.len() <= 64);
        assert!(map.iter().all(|p| *p <= 100));
        assert_eq!(map_percent(&f, 0, 64), Some(Vec::new()));
    }
}
