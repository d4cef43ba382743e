//! Mappings as `tally bench mmap` and `filebw` time them: `mmap` and
//! `munmap` as separate calls (so the pair can be timed as one), touching
//! one byte per page, `madvise(MADV_DONTNEED)`, and summing a mapping's
//! words.
//!
//! Where a mapping lies changes what it costs: a 1 MiB mapping of a cached
//! file that crosses a 2 MiB boundary took 2.7× as long to map, touch and
//! unmap (37 µs) as one inside a 2 MiB block (13.8 µs) here, and the
//! address the kernel picks moves with address-space randomisation, so the
//! same benchmark read 13 µs in one run and 37 µs in the next. A [`Slot`]
//! puts the mapping at an address on a 2 MiB boundary, the same in every
//! run.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

use super::cvt;

/// What backs a [`Map`].
#[derive(Debug, Clone, Copy)]
pub enum Backing<'a> {
    /// `MAP_SHARED`, read-only, of the first bytes of a file.
    File(&'a File),
    /// `MAP_PRIVATE | MAP_ANONYMOUS`, read/write, base pages only
    /// (`MADV_NOHUGEPAGE` is not asked for: that would be a third call).
    Anon,
}

/// The reach of one page-middle-directory entry on x86_64 (and of a
/// transparent huge page): the boundary a [`Slot`] starts on.
pub const SLOT_ALIGN: usize = 2 << 20;

/// A free address range of a given length that starts on a
/// [`SLOT_ALIGN`] boundary, for [`Map::new_at`]. Found once, outside any
/// timing; the range is left free (the measuring thread is alone in its
/// process, so nothing else maps there in between).
#[derive(Debug, Clone, Copy)]
pub struct Slot {
    addr: usize,
    len: usize,
}

impl Slot {
    /// Reserves `len` + [`SLOT_ALIGN`] bytes where the kernel likes, notes
    /// the first aligned address inside, and releases the reservation.
    pub fn aligned(len: usize) -> io::Result<Slot> {
        let want = len
            .checked_add(SLOT_ALIGN)
            .ok_or_else(|| io::Error::from_raw_os_error(libc::ENOMEM))?;
        // SAFETY: a fresh inaccessible mapping at an address the kernel
        // picks; failure is MAP_FAILED, checked below.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                want,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if addr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let start = addr as usize;
        let aligned = start.div_ceil(SLOT_ALIGN) * SLOT_ALIGN;
        // SAFETY: exactly the reservation made above, unmapped once.
        cvt(unsafe { libc::munmap(addr, want) })?;
        Ok(Slot { addr: aligned, len })
    }

    /// The slot's first address.
    pub fn addr(&self) -> usize {
        self.addr
    }
}

/// A live mapping; dropping it unmaps it (`unmap` does so explicitly, to
/// time it).
pub struct Map {
    addr: *mut libc::c_void,
    len: usize,
    writable: bool,
}

impl Map {
    /// One `mmap` call of `len` bytes (at least 1), where the kernel
    /// picks.
    pub fn new(backing: Backing<'_>, len: usize) -> io::Result<Map> {
        Map::place(backing, len, None)
    }

    /// One `mmap` call of the slot's length at the slot's address
    /// (`MAP_FIXED_NOREPLACE`: an error, never a replaced mapping, when
    /// something else took the range).
    pub fn new_at(backing: Backing<'_>, slot: Slot) -> io::Result<Map> {
        Map::place(backing, slot.len, Some(slot.addr))
    }

    fn place(backing: Backing<'_>, len: usize, at: Option<usize>) -> io::Result<Map> {
        if len == 0 {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        let (prot, flags, fd) = match backing {
            Backing::File(f) => (libc::PROT_READ, libc::MAP_SHARED, f.as_raw_fd()),
            Backing::Anon => (
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
            ),
        };
        let (hint, flags) = match at {
            Some(a) => (a as *mut libc::c_void, flags | libc::MAP_FIXED_NOREPLACE),
            None => (std::ptr::null_mut(), flags),
        };
        // SAFETY: a fresh mapping of an open descriptor or anonymous
        // memory, at an address the kernel picks or at a free slot that
        // MAP_FIXED_NOREPLACE never lets replace a mapping; failure is
        // MAP_FAILED, checked below.
        let addr = unsafe { libc::mmap(hint, len, prot, flags, fd, 0) };
        if addr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        if at.is_some_and(|a| a != addr as usize) {
            // A kernel older than MAP_FIXED_NOREPLACE (4.17) takes the
            // address as a hint only.
            // SAFETY: exactly the mapping just made, unmapped once.
            unsafe { libc::munmap(addr, len) };
            return Err(io::Error::from_raw_os_error(libc::EEXIST));
        }
        Ok(Map {
            addr,
            len,
            writable: matches!(backing, Backing::Anon),
        })
    }

    /// One `munmap` call.
    pub fn unmap(self) -> io::Result<()> {
        let me = std::mem::ManuallyDrop::new(self);
        // SAFETY: addr/len are exactly what mmap returned; `me` is never
        // dropped, so the range is unmapped once.
        cvt(unsafe { libc::munmap(me.addr, me.len) }).map(|_| ())
    }

    /// Touches one byte of every `stride` bytes (volatile): a write on an
    /// anonymous mapping, a read on a file mapping. Returns the pages
    /// touched. The file must be at least as long as the mapping (a page
    /// past its end raises SIGBUS, as for any mapping).
    pub fn touch(&self, stride: usize) -> u64 {
        let stride = stride.max(1);
        let mut off = 0;
        let mut n = 0u64;
        let mut sum = 0u8;
        while off < self.len {
            // SAFETY: off < len, inside our own live mapping, readable;
            // writable when anonymous. A u8 has no alignment needs.
            unsafe {
                let p = self.addr.cast::<u8>().add(off);
                if self.writable {
                    std::ptr::write_volatile(p, 1);
                } else {
                    sum = sum.wrapping_add(std::ptr::read_volatile(p));
                }
            }
            off += stride;
            n += 1;
        }
        std::hint::black_box(sum);
        n
    }

    /// `madvise(MADV_DONTNEED)` over the whole mapping: anonymous pages
    /// are freed (the next touch faults in zero pages), file pages are
    /// unmapped (they stay in the page cache).
    pub fn dont_need(&self) -> io::Result<()> {
        // SAFETY: the range is exactly this live mapping.
        cvt(unsafe { libc::madvise(self.addr, self.len, libc::MADV_DONTNEED) }).map(|_| ())
    }

    /// The mapping as 64-bit words (page-aligned start; a tail shorter
    /// than a word is left out).
    pub fn words(&self) -> &[u64] {
        // SAFETY: mmap returns a page-aligned (so 8-aligned) address; the
        // first len/8 words lie inside the readable mapping for as long
        // as `self` lives; any bit pattern is a valid u64. A file mapping
        // reads the file's pages (see `touch` for a file shorter than it).
        unsafe { std::slice::from_raw_parts(self.addr.cast::<u64>(), self.len / 8) }
    }
}

impl Drop for Map {
    fn drop(&mut self) {
        // SAFETY: addr/len are exactly what mmap returned.
        unsafe { libc::munmap(self.addr, self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn anonymous_pages_are_touched_and_dropped() {
        let m = Map::new(Backing::Anon, 3 * 4096).unwrap();
        assert_eq!(m.touch(4096), 3);
        assert_eq!(m.words()[0] & 0xff, 1);
        m.dont_need().unwrap();
        assert_eq!(m.words()[0], 0, "DONTNEED gives zero pages back");
        m.unmap().unwrap();
        assert!(Map::new(Backing::Anon, 0).is_err());
    }

    #[test]
    fn a_slot_is_aligned_and_free_and_refuses_a_second_mapping() {
        let slot = Slot::aligned(3 * 4096).unwrap();
        assert_eq!(slot.addr() % SLOT_ALIGN, 0);
        let m = Map::new_at(Backing::Anon, slot).unwrap();
        assert_eq!(m.addr as usize, slot.addr());
        assert_eq!(m.touch(4096), 3);
        let taken = Map::new_at(Backing::Anon, slot).err().unwrap();
        assert_eq!(taken.raw_os_error(), Some(libc::EEXIST));
        m.unmap().unwrap();
        // Free again: the same slot serves the next sample.
        Map::new_at(Backing::Anon, slot).unwrap().unmap().unwrap();
    }

    #[test]
    fn file_mappings_read_the_file() {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(&[3u8; 8192]).unwrap();
        let m = Map::new(Backing::File(&f), 8192).unwrap();
        assert_eq!(m.touch(4096), 2);
        assert_eq!(m.words().len(), 1024);
        assert_eq!(m.words()[5], 0x0303_0303_0303_0303);
        m.dont_need().unwrap();
        assert_eq!(m.words()[5], 0x0303_0303_0303_0303, "file pages come back");
    }
}
