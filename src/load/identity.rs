//! The file under `tally load`, looked at before and after every load.
//!
//! A load times whatever the file holds while it runs. A file truncated,
//! rewritten or replaced meanwhile makes a 4 KiB load look like a full one
//! (and its checksum agree with itself), so the device, inode, size and
//! modification time are compared with what they were when the command
//! started; any difference makes that load invalid ("the file changed")
//! and no later load runs.

use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::units::{human_bytes, thousands};

/// What tells one state of a file from another: the same file (device,
/// inode), not written to (size, modification time to the nanosecond).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    pub dev: u64,
    pub ino: u64,
    pub size_bytes: u64,
    pub mtime_ns: i128,
}

impl Identity {
    /// The identity `meta` describes.
    pub fn of(meta: &std::fs::Metadata) -> Identity {
        Identity {
            dev: meta.dev(),
            ino: meta.ino(),
            size_bytes: meta.len(),
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
        }
    }

    /// The identity of the file at `path` now (its name followed, as the
    /// loads open it).
    pub fn look(path: &Path) -> io::Result<Identity> {
        std::fs::metadata(path).map(|m| Identity::of(&m))
    }

    /// How the file at `path` differs from `self` now, in words for a
    /// report (`its size went from 1.0 GiB to 4.0 KiB`); `None` when it is
    /// the same.
    pub fn change(&self, path: &Path) -> Option<String> {
        describe(self, &Identity::look(path))
    }
}

/// How `now` differs from `then`; `None` when it does not.
pub fn describe(then: &Identity, now: &io::Result<Identity>) -> Option<String> {
    let now = match now {
        Ok(now) if now == then => return None,
        Ok(now) => now,
        Err(e) => return Some(format!("it cannot be looked at any more ({e})")),
    };
    let what = if (now.dev, now.ino) != (then.dev, then.ino) {
        format!(
            "it was replaced by another file (inode {} on device {:#x}, was inode {} on {:#x})",
            now.ino, now.dev, then.ino, then.dev
        )
    } else if now.size_bytes != then.size_bytes {
        format!(
            "its size went from {} to {} ({} to {} bytes)",
            human_bytes(then.size_bytes),
            human_bytes(now.size_bytes),
            thousands(then.size_bytes),
            thousands(now.size_bytes)
        )
    } else {
        "it was written to (its modification time moved)".to_string()
    };
    Some(what)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_truncated_file_is_a_changed_one() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("f");
        let f = std::fs::File::create(&p).expect("create");
        f.set_len(1 << 30).expect("grow");
        let start = Identity::look(&p).expect("look");
        assert_eq!(start.change(&p), None, "unchanged");
        f.set_len(4096).expect("truncate");
        let why = start.change(&p).expect("changed");
        assert_eq!(
            why,
            "its size went from 1.0 GiB to 4.0 KiB (1,073,741,824 to 4,096 bytes)"
        );
    }

    #[test]
    fn a_rewrite_a_replacement_and_a_removal_are_changes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("f");
        std::fs::write(&p, b"aaaa").expect("write");
        let start = Identity::look(&p).expect("look");
        // Same size, later mtime.
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(&p)
            .expect("open");
        f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5))
            .expect("touch");
        assert!(start.change(&p).expect("changed").contains("written to"));
        let start = Identity::look(&p).expect("look");
        let q = dir.path().join("g");
        std::fs::write(&q, b"bbbb").expect("write");
        std::fs::rename(&q, &p).expect("replace");
        assert!(
            start
                .change(&p)
                .expect("changed")
                .contains("replaced by another file")
        );
        std::fs::remove_file(&p).expect("remove");
        assert!(
            start
                .change(&p)
                .expect("changed")
                .contains("cannot be looked at")
        );
    }
}
