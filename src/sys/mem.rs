//! Memory mappings of files: `mmap` (with `MAP_POPULATE`), `madvise`,
//! `mlock`, and waiting for a stop signal while pages are held locked.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

use super::cvt;

/// A read-only shared mapping of a whole file, unmapped on drop.
///
/// Reading it is reading the file: if another process truncates the file
/// meanwhile, touching the lost pages raises SIGBUS, as for any mapping.
pub struct Mapping {
    addr: *mut libc::c_void,
    len: usize,
}

/// `madvise` advice for [`Mapping::advise`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemAdvice {
    Sequential,
    WillNeed,
    /// `MADV_POPULATE_READ` (Linux 5.14+): fault every page in now.
    PopulateRead,
}

impl Mapping {
    /// Maps the first `len` bytes of `file`; `populate` adds
    /// `MAP_POPULATE` (every page read and mapped before `mmap` returns).
    pub fn new(file: &File, len: u64, populate: bool) -> io::Result<Mapping> {
        let len = usize::try_from(len)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "file too large to map"))?;
        if len == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "an empty file cannot be mapped",
            ));
        }
        let flags = libc::MAP_SHARED | if populate { libc::MAP_POPULATE } else { 0 };
        // SAFETY: a fresh read-only mapping of an open file at an address
        // the kernel picks; failure is checked below.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                flags,
                file.as_raw_fd(),
                0,
            )
        };
        if addr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mapping { addr, len })
    }

    /// `madvise` over the whole mapping.
    pub fn advise(&self, advice: MemAdvice) -> io::Result<()> {
        let advice = match advice {
            MemAdvice::Sequential => libc::MADV_SEQUENTIAL,
            MemAdvice::WillNeed => libc::MADV_WILLNEED,
            MemAdvice::PopulateRead => libc::MADV_POPULATE_READ,
        };
        // SAFETY: the range is exactly this live mapping.
        cvt(unsafe { libc::madvise(self.addr, self.len, advice) }).map(|_| ())
    }

    /// `mlock` the whole mapping (reads in what is missing and keeps it).
    pub fn lock(&self) -> io::Result<()> {
        // SAFETY: the range is exactly this live mapping.
        cvt(unsafe { libc::mlock(self.addr, self.len) }).map(|_| ())
    }

    /// `mlock` of `len` bytes from `off` of the mapping (clamped to it;
    /// `off` rounded down to a page).
    pub fn lock_range(&self, off: usize, len: usize) -> io::Result<()> {
        let page = super::page_size() as usize;
        let start = (off - off % page).min(self.len);
        let end = off.saturating_add(len).min(self.len);
        if end <= start {
            return Ok(());
        }
        // SAFETY: [start, end) lies within this live mapping.
        cvt(unsafe { libc::mlock(self.addr.cast::<u8>().add(start).cast(), end - start) })
            .map(|_| ())
    }

    /// The mapped bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: the mapping is readable for `len` bytes while `self`
        // lives; the file's pages back it (see the SIGBUS note above).
        unsafe { std::slice::from_raw_parts(self.addr.cast::<u8>(), self.len) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `new`.
        unsafe { libc::munmap(self.addr, self.len) };
    }
}

/// Blocks until SIGINT, SIGTERM or SIGHUP arrives and returns it (the
/// signals are blocked and taken with `sigwait`, so no handler runs).
pub fn wait_for_stop_signal() -> io::Result<i32> {
    // SAFETY: sigset_t is plain data; sigemptyset initialises it.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a live sigset_t for each call.
    unsafe {
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGHUP);
    }
    // SAFETY: blocks the signals in this thread so sigwait can take them.
    let ret = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if ret != 0 {
        return Err(io::Error::from_raw_os_error(ret));
    }
    let mut sig: libc::c_int = 0;
    // SAFETY: `set` and `sig` are live locals.
    let ret = unsafe { libc::sigwait(&set, &mut sig) };
    if ret != 0 {
        return Err(io::Error::from_raw_os_error(ret));
    }
    Ok(sig)
}

/// Keeps memory freed by the process for its own reuse: blocks up to
/// 64 MiB come from the heap, not a fresh mapping each, and the heap is
/// not handed back until 1 GiB of it lies free. For work that allocates
/// and frees large buffers over and over (a history's series, one after
/// another): each fresh page costs a fault, slow on a VM whose memory
/// is ballooned (`benches/history_speed.py`: 103,000 faults to 48,000 and
/// 0.07 s of 0.85 for 5,000,000 values, when glibc's allocator was
/// tally's). Rust's allocations now go to dlmalloc (see the crate root),
/// which has no such settings; this sets glibc's, which SQLite's C uses in
/// a build linked against glibc, and does nothing against musl. Other
/// commands keep the defaults.
pub fn keep_freed_memory() {
    // SAFETY: mallopt only sets two of the allocator's thresholds; it
    // touches no memory of ours and is safe to call at any time.
    #[cfg(target_env = "gnu")]
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 64 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 30);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_mapping_reads_the_file() {
        let mut f = tempfile::tempfile().expect("tempfile");
        f.write_all(b"hello mapping").expect("write");
        let m = Mapping::new(&f, 13, true).expect("map");
        m.advise(MemAdvice::Sequential).expect("madvise");
        assert_eq!(m.as_slice(), b"hello mapping");
        assert!(Mapping::new(&f, 0, false).is_err());
    }
}
