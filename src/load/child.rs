//! The load methods themselves. Each runs in a child process of its own
//! (`tally load --child METHOD`), so its rusage (faults, peak memory,
//! block input) belongs to the method alone.

use std::fs::File;
use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::checksum::Checksum;
use super::{Method, Touch};
use crate::sys::{
    self,
    cache::Advice,
    file::{AlignedBuf, open_direct, pread},
    mem::{Mapping, MemAdvice},
};

/// Size of each read of the chunked methods.
pub const CHUNK_BYTES: usize = 1 << 20;
/// Size of each O_DIRECT and io_uring read.
pub const BIG_CHUNK_BYTES: usize = 4 << 20;
/// io_uring reads in flight.
pub const URING_DEPTH: usize = 4;

/// Exit status of a child whose load could not get the memory it needs
/// (1 is any other failed load; both write a result saying why).
pub const EXIT_NO_MEMORY: u8 = 3;

/// What a child reports back to the parent (as JSON in a file).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChildResult {
    pub bytes_loaded: u64,
    /// Hex checksum of the touched bytes; absent with `--touch none`.
    pub checksum: Option<String>,
    pub error: Option<String>,
}

/// Uses loaded bytes as `--touch` says: every byte, one per page, none.
struct Toucher {
    touch: Touch,
    sum: Checksum,
    page: u64,
}

impl Toucher {
    fn new(touch: Touch) -> Self {
        Toucher {
            touch,
            sum: Checksum::default(),
            page: sys::page_size(),
        }
    }

    /// `data` is the file's bytes starting at `off`.
    fn feed(&mut self, off: u64, data: &[u8]) {
        match self.touch {
            Touch::None => {}
            Touch::All => self.sum.update(data),
            Touch::Page => {
                let first = off.div_ceil(self.page) * self.page;
                let mut at = first;
                while let Some(b) = at.checked_sub(off).and_then(|i| data.get(i as usize)) {
                    self.sum.update(std::slice::from_ref(b));
                    at += self.page;
                }
            }
        }
    }

    fn finish(&self) -> Option<String> {
        match self.touch {
            Touch::None => None,
            _ => Some(format!("{:016x}", self.sum.finish())),
        }
    }
}

/// What a load keeps in memory after it: the whole-file buffer of
/// `read`, the mapping of the mmap methods; the streaming methods keep
/// nothing but the page cache.
pub enum Held {
    Nothing,
    Buffer(AlignedBuf),
    Map(Mapping),
}

/// Loads `path` by `method` and uses the data; the child's whole job.
pub fn load(method: Method, path: &Path, touch: Touch) -> io::Result<ChildResult> {
    load_keep(method, path, touch).map(|(r, _)| r)
}

/// Like [`load`], and hands back what the load holds, so the caller can
/// keep it (`tally load --procs` measures the processes while they do).
pub fn load_keep(method: Method, path: &Path, touch: Touch) -> io::Result<(ChildResult, Held)> {
    let mut held = Held::Nothing;
    let mut t = Toucher::new(touch);
    let bytes = match method {
        Method::Direct | Method::UringDirect => {
            let file = open_direct(path).map_err(|e| {
                if e.raw_os_error() == Some(libc::EINVAL) {
                    io::Error::new(
                        e.kind(),
                        "this filesystem does not support O_DIRECT (EINVAL)",
                    )
                } else {
                    e
                }
            })?;
            let size = file.metadata()?.len();
            if method == Method::Direct {
                read_chunks_direct(&file, size, &mut t)?
            } else {
                sys::uring::read_in_order(
                    &file,
                    size,
                    BIG_CHUNK_BYTES,
                    URING_DEPTH,
                    &mut |o, d| t.feed(o, d),
                )?
            }
        }
        _ => {
            let file = File::open(path)?;
            let size = file.metadata()?.len();
            match method {
                Method::Read => {
                    // The std::ifstream way: one heap buffer as large as
                    // the file, filled by read().
                    let mut buf = whole_file_buffer(size, available_memory())?;
                    let len = usize::try_from(size).unwrap_or(usize::MAX);
                    // The buffer has one byte more for an empty file.
                    let slice = buf.as_mut_slice().get_mut(..len).unwrap_or_default();
                    let n = read_full(&file, slice, 0)?;
                    t.feed(0, slice.get(..n).unwrap_or(&[]));
                    held = Held::Buffer(buf);
                    n as u64
                }
                Method::ReadChunks => read_chunks(&file, &mut t)?,
                Method::FadviseRead => {
                    sys::cache::fadvise(&file, 0, 0, Advice::Sequential)?;
                    read_chunks(&file, &mut t)?
                }
                Method::Uring => sys::uring::read_in_order(
                    &file,
                    size,
                    BIG_CHUNK_BYTES,
                    URING_DEPTH,
                    &mut |o, d| t.feed(o, d),
                )?,
                Method::Mmap
                | Method::MmapSequential
                | Method::MmapWillneed
                | Method::MmapPopulate
                | Method::PopulateRead => {
                    if size == 0 {
                        0
                    } else {
                        let m = Mapping::new(&file, size, method == Method::MmapPopulate)?;
                        match method {
                            Method::MmapSequential => m.advise(MemAdvice::Sequential)?,
                            Method::MmapWillneed => m.advise(MemAdvice::WillNeed)?,
                            Method::PopulateRead => m.advise(MemAdvice::PopulateRead)?,
                            _ => {}
                        }
                        t.feed(0, m.as_slice());
                        held = Held::Map(m);
                        size
                    }
                }
                Method::Direct | Method::UringDirect => 0,
            }
        }
    };
    Ok((
        ChildResult {
            bytes_loaded: bytes,
            checksum: t.finish(),
            error: None,
        },
        held,
    ))
}

/// Bytes of memory available to a new allocation without swapping or
/// the OOM killer (`MemAvailable` of /proc/meminfo), if known.
fn available_memory() -> Option<u64> {
    let text = crate::procfs::ProcRoot::default().read("meminfo").ok()?;
    crate::procfs::meminfo::bytes(&text, "MemAvailable")
}

/// A zeroed heap buffer for all `size` bytes of the file (calloc: pages
/// are mapped only as read() fills them), or an `OutOfMemory` error that
/// says why there is none: the file is larger than the `available`
/// memory, or the allocation failed (an address-space limit, overcommit
/// refused). Never the abort of an infallible allocation.
fn whole_file_buffer(size: u64, available: Option<u64>) -> io::Result<AlignedBuf> {
    use crate::units::human_bytes;
    let advice = "use mmap or read-chunks for a file this large";
    if let Some(avail) = available.filter(|a| size > *a) {
        return Err(io::Error::new(
            io::ErrorKind::OutOfMemory,
            format!(
                "cannot allocate {} for read(): larger than the memory available ({}, MemAvailable); {advice}",
                human_bytes(size),
                human_bytes(avail)
            ),
        ));
    }
    usize::try_from(size)
        .ok()
        .and_then(|len| AlignedBuf::new(len, 1).ok())
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::OutOfMemory,
                format!(
                    "cannot allocate {} for read(): the allocation failed (address-space limit, ulimit -v, or overcommit refused it); {advice}",
                    human_bytes(size)
                ),
            )
        })
}

fn read_full(file: &File, buf: &mut [u8], off: u64) -> io::Result<usize> {
    let mut got = 0usize;
    while let Some(rest) = buf.get_mut(got..).filter(|r| !r.is_empty()) {
        match pread(file, rest, off + got as u64, false) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

fn read_chunks(file: &File, t: &mut Toucher) -> io::Result<u64> {
    use std::io::Read;
    let mut buf = vec![0u8; CHUNK_BYTES];
    let mut off = 0u64;
    let mut f = file;
    loop {
        let n = match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        t.feed(off, buf.get(..n).unwrap_or(&[]));
        off += n as u64;
    }
    Ok(off)
}

fn read_chunks_direct(file: &File, size: u64, t: &mut Toucher) -> io::Result<u64> {
    let mut buf = AlignedBuf::new(BIG_CHUNK_BYTES, 4096)?;
    let mut off = 0u64;
    while off < size {
        // O_DIRECT reads whole aligned blocks; the last one comes back
        // short, at the end of the file.
        let n = read_full(file, buf.as_mut_slice(), off)?;
        if n == 0 {
            break;
        }
        t.feed(off, buf.as_slice().get(..n).unwrap_or(&[]));
        off += n as u64;
        if n < BIG_CHUNK_BYTES {
            break;
        }
    }
    Ok(off)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_file_larger_than_memory_gets_no_buffer_and_a_reason() {
        let e = whole_file_buffer(64 << 30, Some(1 << 30))
            .err()
            .expect("refused");
        assert_eq!(e.kind(), io::ErrorKind::OutOfMemory);
        let text = e.to_string();
        assert!(
            text.contains("cannot allocate 64.0 GiB for read()"),
            "{text}"
        );
        assert!(
            text.contains("larger than the memory available (1.0 GiB"),
            "{text}"
        );
        assert!(text.contains("mmap or read-chunks"), "{text}");
        // More than any address space: the allocation fails, no abort.
        let e = whole_file_buffer(u64::MAX, None).err().expect("refused");
        assert_eq!(e.kind(), io::ErrorKind::OutOfMemory);
        assert!(e.to_string().contains("the allocation failed"), "{e}");
        let b = whole_file_buffer(4096, Some(1 << 30)).expect("small");
        assert_eq!(b.as_slice().len(), 4096);
        assert_eq!(
            whole_file_buffer(0, Some(0))
                .map(|b| b.as_slice().len())
                .ok(),
            Some(1)
        );
    }

    #[test]
    fn every_method_sees_the_same_bytes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f");
        let data: Vec<u8> = (0..(5 << 20) + 12345u32)
            .map(|i| (i * 31 % 253) as u8)
            .collect();
        std::fs::File::create(&path)
            .and_then(|mut f| f.write_all(&data))
            .expect("write");
        for touch in [Touch::All, Touch::Page] {
            let mut sums = Vec::new();
            for m in Method::ALL {
                match load(m, &path, touch) {
                    Ok(r) => {
                        assert_eq!(r.bytes_loaded, data.len() as u64, "{m:?}");
                        sums.push((m, r.checksum));
                    }
                    // O_DIRECT or io_uring may be unavailable here.
                    Err(e) => crate::diag!("{m:?}: {e}"),
                }
            }
            assert!(sums.len() >= 8, "most methods must work: {sums:?}");
            let first = sums.first().and_then(|s| s.1.clone()).expect("a sum");
            for (m, s) in &sums {
                assert_eq!(s.as_ref(), Some(&first), "{m:?} {touch:?}");
            }
        }
        let r = load(Method::Mmap, &path, Touch::None).expect("mmap");
        assert_eq!(r.checksum, None);
    }
}
