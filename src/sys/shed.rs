//! Shedding this process's resident file pages, so that its peak resident
//! set (the high-water mark) is little more than its own anonymous memory.
//!
//! For `run::spawner`, which starts commands sharing its memory until
//! `exec`: the kernel carries the spawner's high-water mark into each
//! command's `ru_maxrss`, so the spawner keeps it small. Its program text
//! is most of it: the pages of the binary its start-up touched, each
//! fault mapping up to 16 neighbours ("fault-around"). Shedding drops them
//! from the process (they stay in the page cache), then resets the
//! high-water mark to what is left; what runs after faults back only the
//! windows of code it touches (link/run-hot-path.order keeps the
//! spawner's together).

use std::io;

use super::cvt;

/// What [`shed_file_pages`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Shed {
    /// Mappings whose pages were dropped.
    pub mappings: usize,
    /// Whether the high-water mark was reset (`/proc/self/clear_refs`).
    pub peak_reset: bool,
}

/// A mapping that can be shed: private, not writable, backed by a file,
/// and holding no anonymous (copied-on-write) page, whose contents would
/// be lost. Takes a `/proc/PID/smaps` header line and that mapping's
/// `Anonymous:` kB; returns the address range.
fn sheddable(header: &str, anonymous_kb: u64) -> Option<(usize, usize)> {
    let mut fields = header.split_ascii_whitespace();
    let range = fields.next()?;
    let perms = fields.next()?;
    let _offset = fields.next()?;
    let _dev = fields.next()?;
    let inode = fields.next()?;
    let path = fields.next()?;
    let (start, end) = range.split_once('-')?;
    let perms = perms.as_bytes();
    let private_read_only = perms.len() == 4 && perms[1] == b'-' && perms[3] == b'p';
    if !private_read_only || inode == "0" || !path.starts_with('/') || anonymous_kb != 0 {
        return None;
    }
    Some((
        usize::from_str_radix(start, 16).ok()?,
        usize::from_str_radix(end, 16).ok()?,
    ))
}

/// The sheddable mappings listed in a `/proc/PID/smaps` text.
fn sheddable_mappings(smaps: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut header: Option<&str> = None;
    for line in smaps.lines() {
        let first = line.split_ascii_whitespace().next().unwrap_or("");
        if first.contains('-') && !first.ends_with(':') {
            header = Some(line);
        } else if let Some(kb) = line.strip_prefix("Anonymous:") {
            let kb = kb
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse()
                .unwrap_or(u64::MAX);
            if let Some(range) = header.take().and_then(|h| sheddable(h, kb)) {
                out.push(range);
            }
        }
    }
    out
}

/// Drops this process's resident pages of private read-only file
/// mappings (its program text and constants) and resets its high-water
/// mark. Nothing is lost: the pages come back from the page cache when
/// touched, at most 16 to a fault ("fault-around"). Between the drop and
/// the reset it runs only `madvise` and `write`, so that the reset peak
/// is little more than the process's anonymous memory.
pub fn shed_file_pages() -> io::Result<Shed> {
    use std::os::fd::AsRawFd;
    let clear_refs = std::fs::OpenOptions::new()
        .write(true)
        .open("/proc/self/clear_refs");
    let mut ranges = [(0usize, 0usize); 32];
    let mut n = 0;
    {
        let smaps = std::fs::read_to_string("/proc/self/smaps")?;
        for range in sheddable_mappings(&smaps).into_iter().take(ranges.len()) {
            ranges[n] = range;
            n += 1;
        }
    }
    for &(start, end) in &ranges[..n] {
        // SAFETY: the range is a whole private read-only file mapping of
        // this process without anonymous pages: MADV_DONTNEED drops
        // page-table entries that the next touch restores from the file,
        // unchanged.
        cvt(unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED)
        })?;
    }
    // "5": reset the peak resident set to the current one (Linux 4.0+).
    let five = [b'5'];
    let peak_reset = clear_refs.as_ref().is_ok_and(|f| {
        // SAFETY: writes one byte from a live local to an open descriptor.
        unsafe { libc::write(f.as_raw_fd(), five.as_ptr().cast(), 1) == 1 }
    });
    Ok(Shed {
        mappings: n,
        peak_reset,
    })
}

/// Gives the heap's free memory back to the system (glibc's
/// `malloc_trim`), so that it leaves the resident set; in a build linked
/// against musl, whose allocator is dlmalloc's (see the crate root), that
/// one returns what lies free beyond 2 MiB by itself.
pub fn release_free_heap() {
    // SAFETY: malloc_trim only returns free heap memory; it has no
    // preconditions and is safe in a single-threaded process or not.
    #[cfg(target_env = "gnu")]
    unsafe {
        libc::malloc_trim(0)
    };
}

/// This process's peak resident set (`VmHWM`) in kB, read from an open
/// `/proc/self/status`. Parsed byte by byte, with nothing but `pread`:
/// the code it runs is what it measures (see `run::spawner`).
#[inline(never)]
pub fn peak_kib(status: &std::fs::File) -> io::Result<u64> {
    use std::os::fd::AsRawFd;
    let mut buf = [0u8; 4096];
    // SAFETY: reads into a live local buffer of the length given.
    let n = unsafe { libc::pread(status.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
    let n = usize::try_from(n).map_err(|_| io::Error::last_os_error())?;
    let text = &buf[..n.min(buf.len())];
    let key = b"VmHWM:";
    let mut i = 0;
    while i + key.len() <= text.len() {
        if (i == 0 || text[i - 1] == b'\n') && text[i..i + key.len()] == key[..] {
            let mut kib = 0u64;
            let mut digits = 0;
            for &b in &text[i + key.len()..] {
                match b {
                    b'0'..=b'9' => {
                        kib = kib.saturating_mul(10).saturating_add(u64::from(b - b'0'));
                        digits += 1;
                    }
                    b' ' | b'\t' if digits == 0 => {}
                    _ => break,
                }
            }
            if digits > 0 {
                return Ok(kib);
            }
            break;
        }
        i += 1;
    }
    Err(io::Error::other("no VmHWM in /proc/self/status"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMAPS: &str = "\
00200000-0036b000 r--p 00000000 fe:00 7970827                            /usr/bin/tally
Size:               1452 kB
Anonymous:             0 kB
0036b000-007f5000 r-xp 0016a000 fe:00 7970827                            /usr/bin/tally
Anonymous:             0 kB
007f5000-007fa000 r--p 005f3000 fe:00 7970827                            /usr/bin/tally
Anonymous:            12 kB
007fa000-007fe000 rw-p 005f7000 fe:00 7970827                            /usr/bin/tally
Anonymous:            16 kB
007fe000-00824000 rw-p 00000000 00:00 0
Anonymous:             8 kB
7f85557eb000-7f85557ed000 r-xp 00000000 00:00 0                          [vdso]
Anonymous:             0 kB
";

    #[test]
    fn only_read_only_file_mappings_without_copied_pages_are_shed() {
        assert_eq!(
            sheddable_mappings(SMAPS),
            vec![(0x200000, 0x36b000), (0x36b000, 0x7f5000)]
        );
    }

    #[test]
    fn shedding_lowers_the_resident_set_and_the_process_runs_on() {
        let status = std::fs::File::open("/proc/self/status").unwrap();
        let before = peak_kib(&status).unwrap();
        let shed = shed_file_pages().unwrap();
        assert!(shed.mappings >= 1, "{shed:?}");
        // The code that runs next faults back in, page by page.
        let after = std::fs::read_to_string("/proc/self/status").unwrap();
        assert!(after.contains("VmRSS:"));
        if shed.peak_reset {
            assert!(peak_kib(&status).unwrap() <= before);
        }
    }
}
