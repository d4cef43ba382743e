//! Bytes kept out of the commands tally forks.
//!
//! `fork` copies the page-table entries of every page of anonymous memory
//! the parent has touched, and at `exec` the kernel carries the resident
//! high-water mark of that copy into the child's `ru_maxrss`
//! (`setmax_mm_hiwater_rss` in `exec_mmap`). Whatever tally keeps in its
//! heap is therefore a floor under the peak memory of every command it
//! measures: records kept run after run would raise the peak of a small
//! command by the size of the records. A [`DontForkBuf`] is an anonymous
//! mapping marked `MADV_DONTFORK`: a forked child does not get it at all,
//! so what tally keeps there does not count in the command's peak.

use std::io;

/// A growable byte buffer in an anonymous mapping that forked children do
/// not inherit.
pub struct DontForkBuf {
    addr: *mut libc::c_void,
    cap: usize,
    len: usize,
}

// SAFETY: the buffer owns its mapping exclusively; nothing else refers to
// it, so moving it to another thread is as safe as moving a Vec<u8>.
unsafe impl Send for DontForkBuf {}

impl DontForkBuf {
    /// An empty buffer (no mapping until the first push).
    pub fn new() -> DontForkBuf {
        DontForkBuf {
            addr: std::ptr::null_mut(),
            cap: 0,
            len: 0,
        }
    }

    /// The bytes pushed so far.
    pub fn as_slice(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: `addr` maps `cap >= len` bytes, the first `len` of which
        // were written by `extend`; the mapping lives as long as `self`.
        unsafe { std::slice::from_raw_parts(self.addr.cast::<u8>(), self.len) }
    }

    /// Appends `bytes`, growing the mapping (doubling) when needed.
    pub fn extend(&mut self, bytes: &[u8]) -> io::Result<()> {
        let need = self
            .len
            .checked_add(bytes.len())
            .ok_or_else(|| io::Error::from(io::ErrorKind::OutOfMemory))?;
        if need > self.cap {
            self.grow(need)?;
        }
        // SAFETY: `cap >= need`, so `len..need` lies inside the mapping,
        // which is writable and does not overlap `bytes` (a slice the
        // caller owns elsewhere).
        unsafe {
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                self.addr.cast::<u8>().add(self.len),
                bytes.len(),
            );
        }
        self.len = need;
        Ok(())
    }

    fn grow(&mut self, need: usize) -> io::Result<()> {
        let page = super::page_size() as usize;
        let cap = need
            .max(self.cap.saturating_mul(2))
            .max(64 * 1024)
            .div_ceil(page)
            .saturating_mul(page);
        let addr = if self.addr.is_null() {
            // SAFETY: a fresh private anonymous mapping; no pointer is
            // passed in.
            let addr = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    cap,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            if addr == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
            addr
        } else {
            // SAFETY: `addr`/`cap` is this buffer's own mapping; MAYMOVE
            // lets the kernel move it, and the old address is not used
            // again (slices of it do not outlive a `&mut self` call).
            let addr = unsafe { libc::mremap(self.addr, self.cap, cap, libc::MREMAP_MAYMOVE) };
            if addr == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
            addr
        };
        // Set again after every move: the flag belongs to the mapping.
        // SAFETY: `addr`/`cap` is the mapping just made or moved.
        if unsafe { libc::madvise(addr, cap, libc::MADV_DONTFORK) } != 0 {
            let e = io::Error::last_os_error();
            // SAFETY: unmapping the mapping this call made or moved; the
            // buffer forgets it below.
            unsafe { libc::munmap(addr, cap) };
            self.addr = std::ptr::null_mut();
            self.cap = 0;
            self.len = 0;
            return Err(e);
        }
        self.addr = addr;
        self.cap = cap;
        Ok(())
    }
}

impl Default for DontForkBuf {
    fn default() -> Self {
        DontForkBuf::new()
    }
}

impl Drop for DontForkBuf {
    fn drop(&mut self) {
        if !self.addr.is_null() {
            // SAFETY: the buffer's own mapping, unmapped once.
            unsafe { libc::munmap(self.addr, self.cap) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_what_was_pushed_across_growth() {
        let mut b = DontForkBuf::new();
        assert!(b.as_slice().is_empty());
        let chunk: Vec<u8> = (0..=255u8).collect();
        for _ in 0..2000 {
            b.extend(&chunk).expect("extend");
        }
        let s = b.as_slice();
        assert_eq!(s.len(), 2000 * 256);
        assert!(s.chunks(256).all(|c| c == chunk.as_slice()));
    }

    #[test]
    fn a_forked_child_does_not_get_the_buffer() {
        let mut b = DontForkBuf::new();
        b.extend(&[7u8; 100_000]).expect("extend");
        let addr = b.as_slice().as_ptr() as usize;
        let maps = std::fs::read_to_string("/proc/self/smaps").expect("smaps");
        // The mapping is marked "dc" (do not copy) in VmFlags.
        let mut inside = false;
        let mut marked = false;
        for line in maps.lines() {
            if let Some((range, _)) = line.split_once(' ')
                && let Some((lo, hi)) = range.split_once('-')
                && let (Ok(lo), Ok(hi)) =
                    (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
            {
                inside = (lo..hi).contains(&addr);
                continue;
            }
            if inside && line.starts_with("VmFlags:") {
                marked = line.split_whitespace().any(|f| f == "dc");
                break;
            }
        }
        assert!(marked, "the buffer's mapping has no dc flag");
    }
}
