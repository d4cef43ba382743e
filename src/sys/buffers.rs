//! Memory buffers for `tally bench`: anonymous buffers aligned to 2 MiB
//! with transparent huge pages asked for or refused (`madvise`), and
//! read-only file mappings whose pages are touched one by one to take
//! page faults.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

use super::cvt;

/// Huge-page size assumed for alignment (x86_64 and arm64 with 4 KiB pages).
pub const HUGE_BYTES: usize = 2 << 20;

/// Which pages an anonymous mapping should get.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pages {
    /// `MADV_NOHUGEPAGE`: base pages only.
    Base,
    /// `MADV_HUGEPAGE`: transparent huge pages where the kernel can.
    Huge,
}

/// A private anonymous mapping; its usable part starts 2 MiB-aligned.
pub struct AnonMap {
    base: *mut libc::c_void,
    map_len: usize,
    start: *mut u8,
    len: usize,
}

// SAFETY: the mapping is owned exclusively by this value; moving it to
// another thread moves that ownership.
unsafe impl Send for AnonMap {}
// SAFETY: shared access only hands out `&[u8]`/`&[u64]` reads.
unsafe impl Sync for AnonMap {}

impl AnonMap {
    /// Maps `len` bytes (rounded up to 8) with the given page advice. The
    /// memory is not touched: the caller fills it.
    pub fn new(len: usize, pages: Pages) -> io::Result<AnonMap> {
        let len = len.max(8).div_ceil(8).saturating_mul(8);
        let map_len = len
            .checked_add(HUGE_BYTES)
            .ok_or_else(|| io::Error::from_raw_os_error(libc::ENOMEM))?;
        // SAFETY: an anonymous private mapping with no address hint has no
        // memory preconditions; failure is MAP_FAILED, checked below.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let offset = (HUGE_BYTES - (base as usize % HUGE_BYTES)) % HUGE_BYTES;
        // SAFETY: offset < HUGE_BYTES and map_len = len + HUGE_BYTES, so
        // start..start+len lies inside the mapping.
        let start = unsafe { base.cast::<u8>().add(offset) };
        let advice = match pages {
            Pages::Base => libc::MADV_NOHUGEPAGE,
            Pages::Huge => libc::MADV_HUGEPAGE,
        };
        let map = AnonMap {
            base,
            map_len,
            start,
            len,
        };
        // Advice failing (THP compiled out) leaves base pages: callers check
        // what they got in /proc/self/smaps_rollup.
        // SAFETY: the range lies inside our own live mapping.
        let _ = unsafe { libc::madvise(start.cast(), len, advice) };
        Ok(map)
    }

    /// Usable length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the usable length is zero (never: at least 8 bytes).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Writes one byte every `stride` bytes (volatile, so every store and
    /// its page fault happens); returns the bytes written.
    pub fn touch_write(&mut self, stride: usize) -> usize {
        let stride = stride.max(1);
        let mut off = 0;
        let mut n = 0;
        while off < self.len {
            // SAFETY: off < len, inside our own read/write mapping.
            unsafe { std::ptr::write_volatile(self.start.add(off), 1) };
            off += stride;
            n += 1;
        }
        n
    }

    /// The buffer as bytes.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: start..start+len is mapped read/write and owned by self;
        // the &mut self borrow makes the slice unique.
        unsafe { std::slice::from_raw_parts_mut(self.start, self.len) }
    }

    /// The buffer as bytes, shared.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: as in bytes_mut; shared borrow, no writer can exist.
        unsafe { std::slice::from_raw_parts(self.start, self.len) }
    }

    /// The buffer as 64-bit words (start is 2 MiB-aligned, len a multiple of 8).
    pub fn words_mut(&mut self) -> &mut [u64] {
        // SAFETY: start is 2 MiB-aligned (so 8-aligned), len is a multiple
        // of 8, the memory is mapped read/write and uniquely borrowed; any
        // bit pattern is a valid u64.
        unsafe { std::slice::from_raw_parts_mut(self.start.cast::<u64>(), self.len / 8) }
    }

    /// The buffer as 64-bit words, shared.
    pub fn words(&self) -> &[u64] {
        // SAFETY: as in words_mut; shared borrow.
        unsafe { std::slice::from_raw_parts(self.start.cast::<u64>(), self.len / 8) }
    }

    /// The buffer as f64 (for the STREAM kernels).
    pub fn f64s_mut(&mut self) -> &mut [f64] {
        // SAFETY: as in words_mut (f64 has u64's size and alignment); any
        // bit pattern is a valid f64.
        unsafe { std::slice::from_raw_parts_mut(self.start.cast::<f64>(), self.len / 8) }
    }
}

impl Drop for AnonMap {
    fn drop(&mut self) {
        // SAFETY: base/map_len are exactly what mmap returned; no slice can
        // outlive self.
        unsafe { libc::munmap(self.base, self.map_len) };
    }
}

/// A read-only shared mapping of a file, for page-fault timing.
pub struct FileMap {
    base: *mut libc::c_void,
    len: usize,
}

impl FileMap {
    /// Maps the first `len` bytes of `file` read-only; with `random`, asks
    /// for no readahead (`MADV_RANDOM`) so each fault reads one page.
    pub fn new(file: &File, len: usize, random: bool) -> io::Result<FileMap> {
        if len == 0 {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        // SAFETY: mapping an open descriptor read-only has no memory
        // preconditions; failure is MAP_FAILED, checked below.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let map = FileMap { base, len };
        if random {
            // SAFETY: the range is our own live mapping.
            cvt(unsafe { libc::madvise(base, len, libc::MADV_RANDOM) })?;
        }
        Ok(map)
    }

    /// Reads one byte every `stride` bytes from `first` on (volatile, so
    /// every read happens); returns their sum.
    pub fn touch_from(&self, first: usize, stride: usize) -> u64 {
        let stride = stride.max(1);
        let mut sum = 0u64;
        let mut off = first;
        while off < self.len {
            // SAFETY: off < len, inside the live read-only mapping; a
            // volatile read of a u8 has no alignment needs. The file was
            // at least `len` bytes when mapped (the caller made it).
            sum = sum.wrapping_add(u64::from(unsafe {
                std::ptr::read_volatile(self.base.cast::<u8>().add(off))
            }));
            off += stride;
        }
        sum
    }

    /// Reads one byte every `stride` bytes from the start.
    pub fn touch(&self, stride: usize) -> u64 {
        self.touch_from(0, stride)
    }
}

impl Drop for FileMap {
    fn drop(&mut self) {
        // SAFETY: base/len are exactly what mmap returned.
        unsafe { libc::munmap(self.base, self.len) };
    }
}

/// Bytes an unprivileged writer may still use on the filesystem of `dir`.
pub fn free_bytes(dir: &std::path::Path) -> io::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: statvfs is plain data; zeroed is a valid value.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is NUL-terminated and `st` writable for the call.
    cvt(unsafe { libc::statvfs(c.as_ptr(), &mut st) })?;
    Ok(st.f_bavail.saturating_mul(st.f_frsize))
}

/// Turns `O_DIRECT` on for an open file (`fcntl(F_SETFL)`), so a file
/// that has no name any more can still be read around the page cache.
/// EINVAL means the filesystem refuses direct I/O.
pub fn set_direct(file: &File) -> io::Result<()> {
    let fd = file.as_raw_fd();
    // SAFETY: F_GETFL only reads the flags of an open descriptor.
    let flags = cvt(unsafe { libc::fcntl(fd, libc::F_GETFL) })?;
    // SAFETY: F_SETFL changes only the status flags of that descriptor.
    cvt(unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_DIRECT) }).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn direct_io_can_be_turned_on_or_is_refused_cleanly() {
        let dir = tempfile::tempdir().unwrap();
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(dir.path().join("d"))
            .unwrap();
        match set_direct(&f) {
            Ok(()) => {
                // SAFETY: F_GETFL only reads the flags.
                let flags = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_GETFL) };
                assert_ne!(flags & libc::O_DIRECT, 0);
            }
            Err(e) => assert_eq!(e.raw_os_error(), Some(libc::EINVAL)),
        }
    }

    #[test]
    fn anon_map_is_aligned_and_writable() {
        let mut m = AnonMap::new(100, Pages::Base).unwrap();
        assert_eq!(m.len(), 104);
        assert_eq!(m.words_mut().len(), 13);
        m.words_mut()[12] = 7;
        assert_eq!(m.words()[12], 7);
        assert_eq!(m.bytes().as_ptr() as usize % HUGE_BYTES, 0);
    }

    #[test]
    fn file_map_touches_every_page() {
        use std::io::Write;
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(&[2u8; 3 * 4096]).unwrap();
        let m = FileMap::new(&f, 3 * 4096, true).unwrap();
        assert_eq!(m.touch(4096), 6);
    }
}
