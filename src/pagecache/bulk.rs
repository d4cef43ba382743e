//! Evicting or warming every file under the paths a user names, on every
//! core: `tally run --cold` and `tally compare --cold`/`--warm`, before
//! each run.
//!
//! The paths are checked before anything runs ([`check`]): a missing path,
//! or one that has no page cache of its own (a FIFO, a socket, a device),
//! is an error naming it, so that a cold run can never be silently warm.
//! The files are found by [`super::walk`] each time, so a file created
//! between runs is evicted too. Memory does not grow with the files: the
//! totals are summed as the files go by, and at most [`LISTED`] files are
//! kept by name, those whose pages stayed first.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use super::evict::{Evicted, Evictor};
use super::walk::{self, Event, Found, Options, Skipped};
use super::{Residency, warm};
use crate::text::path::display;

/// Files an eviction keeps by name.
pub const LISTED: usize = 100;

/// Why the files under some paths cannot be evicted or warmed. Each says
/// which path and the fix.
#[derive(Debug, thiserror::Error)]
pub enum BulkError {
    #[error("{}: {error} — check the path exists and is readable", display(path))]
    Named { path: PathBuf, error: String },
    #[error(
        "{} is {kind}: it has no page cache to {verb}; name regular files or directories",
        display(path)
    )]
    NotAFile {
        path: PathBuf,
        kind: &'static str,
        verb: &'static str,
    },
    #[error("{}: {error} — a file under it cannot be {done}", display(path))]
    Walk {
        path: PathBuf,
        error: String,
        done: &'static str,
    },
}

/// Checks that every path in `roots` exists and is a regular file or a
/// directory (`verb`: "evict" or "warm", for the message); one `stat` each.
pub fn check(roots: &[PathBuf], verb: &'static str) -> Result<(), BulkError> {
    for path in roots {
        let meta = std::fs::metadata(path).map_err(|e| BulkError::Named {
            path: path.clone(),
            error: walk::describe(&e),
        })?;
        if !meta.is_file() && !meta.is_dir() {
            return Err(BulkError::NotAFile {
                path: path.clone(),
                kind: walk::kind_of(&meta),
                verb,
            });
        }
    }
    Ok(())
}

fn skipped_error(s: Skipped, verb: &'static str, done: &'static str) -> BulkError {
    match (s.named, s.kind) {
        // Became a FIFO or a device since `check`.
        (true, Some(kind)) => BulkError::NotAFile {
            path: s.path,
            kind,
            verb,
        },
        (true, None) => BulkError::Named {
            path: s.path,
            error: s.error,
        },
        (false, _) => BulkError::Walk {
            path: s.path,
            error: s.error,
            done,
        },
    }
}

/// An eviction of every file under some paths.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Evictions {
    pub files: u64,
    pub size_bytes: u64,
    /// Bytes cached before, of the files whose residency is known.
    pub cached_before_bytes: u64,
    /// Bytes still cached after.
    pub cached_after_bytes: u64,
    /// Files whose residency the kernel would not tell.
    pub unknown_files: u64,
    /// Files that kept pages.
    pub stayed_files: u64,
    /// At most [`LISTED`] files, those that kept pages or whose residency
    /// is unknown first.
    pub listed: Vec<Evicted>,
    /// Files evicted but not listed.
    pub omitted: u64,
    /// How long it took, walk included.
    pub elapsed_ns: u64,
}

fn notable(e: &Evicted) -> bool {
    e.stayed_reason.is_some() || matches!(e.after, Residency::Unknown { .. })
}

impl Evictions {
    fn add(&mut self, e: Evicted, page: u64) {
        self.files += 1;
        self.size_bytes = self.size_bytes.saturating_add(e.size_bytes);
        match (&e.before, &e.after) {
            (
                Residency::Known {
                    cached_pages: b, ..
                },
                Residency::Known {
                    cached_pages: a, ..
                },
            ) => {
                self.cached_before_bytes = self
                    .cached_before_bytes
                    .saturating_add(b.saturating_mul(page));
                self.cached_after_bytes = self
                    .cached_after_bytes
                    .saturating_add(a.saturating_mul(page));
                if *a > 0 {
                    self.stayed_files += 1;
                }
            }
            _ => self.unknown_files += 1,
        }
        if self.listed.len() < LISTED {
            self.listed.push(e);
            return;
        }
        self.omitted += 1;
        // A file that kept pages takes the place of one that did not.
        if notable(&e)
            && let Some(slot) = self.listed.iter_mut().rev().find(|l| !notable(l))
        {
            *slot = e;
        }
    }
}

/// Evicts every regular file under `roots` (directories walked, links
/// inside not followed) on every core, and checks each.
pub fn evict(roots: &[PathBuf]) -> Result<Evictions, BulkError> {
    let started = Instant::now();
    let evictor = Evictor::new();
    let page = crate::sys::page_size();
    let stop = AtomicBool::new(false);
    let mut out = Evictions::default();
    let mut failed = None;
    walk::walk(
        roots,
        Options::default(),
        &stop,
        |f: Found| evictor.evict(&f.file, &f.path, &f.meta),
        |event| match event {
            Event::File(e) => {
                out.add(e, page);
                true
            }
            Event::Skipped(s) => {
                failed.get_or_insert(skipped_error(s, "evict", "evicted"));
                false
            }
        },
    );
    if let Some(e) = failed {
        return Err(e);
    }
    out.elapsed_ns = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
    Ok(out)
}

/// A warming of every file under some paths.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Warmed {
    pub files: u64,
    /// Bytes read because they were not cached.
    pub read_bytes: u64,
    pub elapsed_ns: u64,
}

/// Reads into the page cache what is not cached of every regular file
/// under `roots`, on every core.
pub fn warm(roots: &[PathBuf]) -> Result<Warmed, BulkError> {
    let started = Instant::now();
    let stop = AtomicBool::new(false);
    let mut out = Warmed::default();
    let mut failed = None;
    walk::walk(
        roots,
        Options::default(),
        &stop,
        |f: Found| {
            warm::warm_found(&f.file, &f.meta).map_err(|e| Skipped {
                path: f.path,
                error: format!("read failed: {e}"),
                named: false,
                kind: None,
            })
        },
        |event| match event {
            Event::File(Ok(stats)) => {
                out.files += 1;
                out.read_bytes = out.read_bytes.saturating_add(stats.read_bytes);
                true
            }
            Event::File(Err(s)) | Event::Skipped(s) => {
                failed.get_or_insert(skipped_error(s, "warm", "warmed"));
                false
            }
        },
    );
    if let Some(e) = failed {
        return Err(e);
    }
    out.elapsed_ns = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_socket_is_refused_before_anything_and_a_tree_is_evicted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let sock = dir.path().join("sock");
        let _l = std::os::unix::net::UnixListener::bind(&sock).expect("bind");
        let err = check(std::slice::from_ref(&sock), "evict").expect_err("a socket");
        assert!(err.to_string().contains("is a socket"), "{err}");
        assert!(check(&[dir.path().join("missing")], "evict").is_err());

        for i in 0..300 {
            std::fs::write(dir.path().join(format!("f{i}")), vec![1u8; 8192]).expect("write");
        }
        check(&[dir.path().to_path_buf()], "evict").expect("a directory");
        let e = evict(&[dir.path().to_path_buf()]).expect("evict");
        assert_eq!(e.files, 300);
        assert_eq!(e.size_bytes, 300 * 8192);
        assert_eq!(e.listed.len(), LISTED);
        assert_eq!(e.omitted, 200);
        let w = warm(&[dir.path().to_path_buf()]).expect("warm");
        assert_eq!(w.files, 300);
    }

    #[test]
    fn files_that_kept_pages_are_listed_first() {
        let mut ev = Evictions::default();
        let plain = |n: u64| Evicted {
            path: format!("/f{n}").into(),
            size_bytes: 4096,
            before: Residency::Known {
                method: super::super::Method::Cachestat,
                cached_pages: 1,
                dirty_pages: Some(0),
                writeback_pages: Some(0),
            },
            after: Residency::Known {
                method: super::super::Method::Cachestat,
                cached_pages: 0,
                dirty_pages: Some(0),
                writeback_pages: Some(0),
            },
            stayed_reason: None,
        };
        for n in 0..LISTED as u64 + 10 {
            ev.add(plain(n), 4096);
        }
        let mut kept = plain(999);
        kept.stayed_reason = Some("mapped by process 1".into());
        ev.add(kept, 4096);
        assert_eq!(ev.files, LISTED as u64 + 11);
        assert_eq!(ev.listed.len(), LISTED);
        assert_eq!(ev.omitted, 11);
        assert!(ev.listed.iter().any(|l| l.stayed_reason.is_some()));
    }
}
