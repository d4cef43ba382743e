//! Page-cache system calls: `fdatasync`, `posix_fadvise`, `cachestat(2)`
//! and `mincore(2)`.
//!
//! `cachestat` (Linux 6.5+) counts a range's cached, dirty and writeback
//! pages in one call; `mincore` needs the file mapped and walks every page.
//! Both may refuse (EPERM) or, for `mincore`, claim every page resident to a
//! caller that neither owns nor may write the file: callers must treat such
//! answers as unknown.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

use super::{cvt, cvt_long};

/// Counts of a file range's pages in the page cache.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStat {
    pub cached_pages: u64,
    pub dirty_pages: u64,
    pub writeback_pages: u64,
    pub evicted_pages: u64,
    pub recently_evicted_pages: u64,
}

#[repr(C)]
struct CachestatRange {
    off: u64,
    len: u64,
}

#[repr(C)]
#[derive(Default)]
struct RawCachestat {
    nr_cache: u64,
    nr_dirty: u64,
    nr_writeback: u64,
    nr_evicted: u64,
    nr_recently_evicted: u64,
}

/// The `cachestat` system call number (the same on every architecture).
const SYS_CACHESTAT: libc::c_long = 451;

/// `cachestat(2)` over `[off, off+len)`; `len == 0` means to the end of file.
pub fn cachestat(file: &File, off: u64, len: u64) -> io::Result<CacheStat> {
    let range = CachestatRange { off, len };
    let mut out = RawCachestat::default();
    // SAFETY: both structs are repr(C) as the kernel defines them and live
    // for the call; flags must be 0.
    cvt_long(unsafe {
        libc::syscall(
            SYS_CACHESTAT,
            file.as_raw_fd(),
            &range as *const CachestatRange,
            &mut out as *mut RawCachestat,
            0u32,
        )
    })?;
    Ok(CacheStat {
        cached_pages: out.nr_cache,
        dirty_pages: out.nr_dirty,
        writeback_pages: out.nr_writeback,
        evicted_pages: out.nr_evicted,
        recently_evicted_pages: out.nr_recently_evicted,
    })
}

/// Pages of `[start, start+len)` of `file` resident in memory, by mapping
/// the file and asking `mincore`, 1 GiB of address space at a time.
/// `start` must be a multiple of the page size.
pub fn mincore_resident(file: &File, start: u64, len: u64) -> io::Result<u64> {
    const WINDOW: u64 = 1 << 30;
    let page = super::page_size();
    let mut resident = 0u64;
    let mut vec = Vec::new();
    let end = start.saturating_add(len);
    let mut off = start;
    while off < end {
        let span = (end - off).min(WINDOW);
        let pages = span.div_ceil(page) as usize;
        vec.clear();
        vec.resize(pages, 0u8);
        // SAFETY: a fresh read-only shared mapping of an open file; the
        // kernel picks the address. Failure is checked below.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                span as usize,
                libc::PROT_READ,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                off as libc::off_t,
            )
        };
        if addr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `addr` maps `span` bytes and `vec` has one byte per page.
        let ret = unsafe { libc::mincore(addr, span as usize, vec.as_mut_ptr()) };
        let err = io::Error::last_os_error();
        // SAFETY: unmaps exactly the mapping made above.
        unsafe { libc::munmap(addr, span as usize) };
        if ret != 0 {
            return Err(err);
        }
        resident += vec.iter().filter(|b| **b & 1 == 1).count() as u64;
        off += span;
    }
    Ok(resident)
}

/// `fdatasync(2)`: write the file's dirty data to storage.
pub fn fdatasync(file: &File) -> io::Result<()> {
    // SAFETY: plain call on an open descriptor.
    cvt(unsafe { libc::fdatasync(file.as_raw_fd()) }).map(|_| ())
}

/// Advice for [`fadvise`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Advice {
    DontNeed,
    WillNeed,
    Sequential,
    Random,
}

/// `posix_fadvise(2)` over `[off, off+len)`; `len == 0` means to the end.
pub fn fadvise(file: &File, off: u64, len: u64, advice: Advice) -> io::Result<()> {
    let advice = match advice {
        Advice::DontNeed => libc::POSIX_FADV_DONTNEED,
        Advice::WillNeed => libc::POSIX_FADV_WILLNEED,
        Advice::Sequential => libc::POSIX_FADV_SEQUENTIAL,
        Advice::Random => libc::POSIX_FADV_RANDOM,
    };
    let off = libc::off_t::try_from(off).unwrap_or(libc::off_t::MAX);
    let len = libc::off_t::try_from(len).unwrap_or(libc::off_t::MAX);
    // SAFETY: plain call on an open descriptor.
    let ret = unsafe { libc::posix_fadvise(file.as_raw_fd(), off, len, advice) };
    // posix_fadvise returns the error number instead of setting errno.
    if ret == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(ret))
    }
}

/// `sync(2)`: flush every filesystem.
pub fn sync_all() {
    // SAFETY: sync has no preconditions and cannot fail.
    unsafe { libc::sync() }
}

/// Whether this process may write `path` (`faccessat` with `AT_EACCESS`,
/// the effective ids). The kernel answers residency questions truthfully
/// only to callers that own the file or may write it.
pub fn may_write(path: &std::path::Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a valid NUL-terminated path for the call.
    unsafe { libc::faccessat(libc::AT_FDCWD, c.as_ptr(), libc::W_OK, libc::AT_EACCESS) == 0 }
}
