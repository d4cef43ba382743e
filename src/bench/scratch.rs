//! Scratch data for the benchmarks: a deterministic generator, and files
//! with no name that vanish on any exit.

use crate::sys;

/// A deterministic xorshift generator for shuffles and random offsets (a
/// benchmark needs spread, not cryptography, and the same run twice).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    /// Seeded from this process and the time: for names no other run
    /// picks.
    pub fn unpredictable() -> Rng {
        Rng::new(
            u64::from(std::process::id())
                ^ std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos() as u64),
        )
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// A value in `0..n` (0 when n is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
        }
    }
}

/// A file with no name under `dir`, for scratch data: `O_TMPFILE`, or
/// where the filesystem refuses that (NFS, some FUSE), a `.tally-bench-*`
/// name removed right after it is created, and armed for removal on a
/// fatal signal for the few instructions it has one. Nothing is left
/// behind on any exit, not even SIGKILL: the space is freed when the file
/// is closed.
pub fn unnamed_file(dir: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut open = std::fs::OpenOptions::new();
    open.read(true).write(true).mode(0o600);
    match open.clone().custom_flags(libc::O_TMPFILE).open(dir) {
        Ok(f) => return Ok(f),
        // Refused by the filesystem (EOPNOTSUPP), or an old kernel that
        // takes the flag for O_DIRECTORY (EISDIR, EINVAL): use a name.
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL)
            ) => {}
        Err(e) => return Err(e),
    }
    named_then_unlinked(dir)
}

/// [`unnamed_file`] where `O_TMPFILE` is refused: a fresh
/// `.tally-bench-*` name, armed for removal on a fatal signal before it
/// exists, removed as soon as the file is open.
fn named_then_unlinked(dir: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut open = std::fs::OpenOptions::new();
    open.read(true).write(true).mode(0o600).create_new(true);
    let mut rng = Rng::unpredictable();
    let mut tries = 0;
    loop {
        let path = dir.join(format!(".tally-bench-{:016x}", rng.next_u64()));
        // Armed before it exists, so a signal at any point removes it.
        let guard = sys::cleanup::Guard::arm(&path).ok();
        match open.open(&path) {
            Ok(f) => {
                let removed = std::fs::remove_file(&path);
                drop(guard);
                removed?;
                return Ok(f);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && tries < 16 => tries += 1,
            Err(e) => return Err(e),
        }
    }
}

/// A scratch file of `bytes` bytes of non-zero pseudo-random data under
/// `dir`, with no name ([`unnamed_file`]): closing it frees it. Written
/// with plain `write` and synced; the caller decides whether it stays
/// cached.
pub fn scratch_file(dir: &std::path::Path, bytes: u64) -> std::io::Result<std::fs::File> {
    let f = written_file(dir, bytes, 0x7a11_b3c4 ^ bytes)?;
    f.sync_data()?;
    Ok(f)
}

/// A scratch file of `bytes` bytes of non-zero pseudo-random data (from
/// `seed`) under `dir`, with no name, written with plain `write` and not
/// synced.
pub fn written_file(
    dir: &std::path::Path,
    bytes: u64,
    seed: u64,
) -> std::io::Result<std::fs::File> {
    use std::io::Write;
    let mut f = unnamed_file(dir)?;
    let mut rng = Rng::new(seed);
    let mut chunk = vec![0u8; 1 << 20];
    let mut left = bytes;
    while left > 0 {
        for w in chunk.chunks_exact_mut(8) {
            w.copy_from_slice(&(rng.next_u64() | 0x0101_0101_0101_0101).to_ne_bytes());
        }
        let n = usize::try_from(left.min(chunk.len() as u64)).unwrap_or(chunk.len());
        f.write_all(chunk.get(..n).unwrap_or(&chunk))?;
        left -= n as u64;
    }
    Ok(f)
}

/// Evicts `file` (a scratch file this process wrote, under `dir`) from the
/// page cache and returns the pages still cached (`None` when the kernel
/// will not tell).
pub fn evict(file: &std::fs::File, dir: &std::path::Path) -> std::io::Result<Option<u64>> {
    let size = file.metadata()?.len();
    // Dirty pages cannot be dropped: write them first.
    let _ = sys::cache::fdatasync(file);
    sys::cache::fadvise(file, 0, 0, sys::cache::Advice::DontNeed)?;
    Ok(crate::pagecache::residency(file, dir, size).cached_pages())
}

/// A directory for messages: control characters and invalid UTF-8
/// escaped.
pub fn shown(dir: &std::path::Path) -> String {
    crate::text::path::display(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rng_stays_below_bound() {
        let mut r = Rng::new(0);
        for n in [1u64, 2, 7, 1000] {
            for _ in 0..100 {
                assert!(r.below(n) < n);
            }
        }
        assert_eq!(r.below(0), 0);
    }

    #[test]
    fn scratch_files_have_no_name() {
        let dir = tempfile::tempdir().unwrap();
        let f = scratch_file(dir.path(), 10_000).unwrap();
        assert_eq!(f.metadata().unwrap().len(), 10_000);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let mut pages = None;
        if let Ok(p) = evict(&f, dir.path()) {
            pages = p;
        }
        // tmpfs cannot evict; elsewhere the file leaves the cache.
        if let Some(p) = pages {
            assert!(p <= 3);
        }
    }

    #[test]
    fn named_scratch_files_are_unlinked_once_open() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = named_then_unlinked(dir.path()).unwrap();
        std::io::Write::write_all(&mut f, b"data").unwrap();
        assert_eq!(f.metadata().unwrap().len(), 4);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
