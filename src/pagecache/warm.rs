//! Reading into the page cache what is missing, and nothing else.
//!
//! `cat file >/dev/null` reads every byte, cached or not, and reads holes
//! as pages of zeros. Here only data (`SEEK_DATA`/`SEEK_HOLE`) is read, in
//! 2 MiB chunks, and a chunk `cachestat` says is fully cached is skipped.

use std::fs::File;
use std::io;

use crate::sys;

/// Chunk size of warming reads.
const CHUNK_BYTES: u64 = 2 << 20;

/// What warming did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WarmStats {
    /// Bytes read because they were not (fully) cached.
    pub read_bytes: u64,
    /// Bytes of data skipped because they were cached already.
    pub skipped_bytes: u64,
}

/// The data segments `[start, end)` of the first `size` bytes of `file`;
/// the whole range when the filesystem cannot tell.
pub fn data_segments(file: &File, size: u64) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut off = 0u64;
    while off < size {
        let start = match sys::file::seek_data(file, off) {
            Ok(Some(s)) => s,
            Ok(None) => break,
            Err(_) => {
                out.push((off, size));
                break;
            }
        };
        if start >= size {
            break;
        }
        let end = match sys::file::seek_hole(file, start) {
            Ok(Some(e)) => e.min(size),
            _ => size,
        };
        if end <= start {
            out.push((start, size));
            break;
        }
        out.push((start, end));
        off = end;
    }
    out
}

/// Reads the uncached data of `file`, whose `stat` is `meta`: nothing
/// but one `cachestat` for a file cached whole, and no search for holes
/// in a file whose blocks cover its size.
pub fn warm_found(file: &File, meta: &std::fs::Metadata) -> io::Result<WarmStats> {
    use std::os::unix::fs::MetadataExt;
    let size = meta.len();
    if size == 0 {
        return Ok(WarmStats::default());
    }
    if let Ok(s) = super::cachestat(file, 0, 0)
        && s.cached_pages >= size.div_ceil(sys::page_size())
    {
        return Ok(WarmStats {
            read_bytes: 0,
            skipped_bytes: size,
        });
    }
    if meta.blocks().saturating_mul(512) >= size {
        // No hole: one segment, no SEEK_DATA/SEEK_HOLE.
        return warm_segments(file, &[(0, size)]);
    }
    warm(file, size)
}

/// Reads the uncached data of the first `size` bytes of `file`.
pub fn warm(file: &File, size: u64) -> io::Result<WarmStats> {
    if size == 0 {
        return Ok(WarmStats::default());
    }
    warm_segments(file, &data_segments(file, size))
}

/// Reads the uncached parts of the data segments `segments` of `file`.
fn warm_segments(file: &File, segments: &[(u64, u64)]) -> io::Result<WarmStats> {
    let mut stats = WarmStats::default();
    let page = sys::page_size();
    let mut buf = Vec::new();
    for &(start, end) in segments {
        let mut off = start;
        while off < end {
            let len = (end - off).min(CHUNK_BYTES - off % CHUNK_BYTES);
            let want_pages = (off + len).div_ceil(page) - off / page;
            let cached = super::cachestat(file, off, len)
                .map(|s| s.cached_pages)
                .unwrap_or(0);
            if cached >= want_pages {
                stats.skipped_bytes = stats.skipped_bytes.saturating_add(len);
                off += len;
                continue;
            }
            if buf.is_empty() {
                buf.resize(CHUNK_BYTES.min(end - start) as usize, 0);
            }
            if buf.len() < len as usize {
                buf.resize(len as usize, 0);
            }
            let Some(slice) = buf.get_mut(..len as usize) else {
                break;
            };
            let n = read_full(file, slice, off)?;
            stats.read_bytes = stats.read_bytes.saturating_add(n as u64);
            if n == 0 {
                // The file shrank meanwhile.
                return Ok(stats);
            }
            off += n as u64;
        }
    }
    Ok(stats)
}

fn read_full(file: &File, buf: &mut [u8], off: u64) -> io::Result<usize> {
    let mut got = 0usize;
    while got < buf.len() {
        let Some(rest) = buf.get_mut(got..) else {
            break;
        };
        match sys::file::pread(file, rest, off + got as u64, false) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_sparse_file_has_its_data_found() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("s");
        let mut f = File::create(&path).expect("create");
        f.write_all(&[1u8; 4096]).expect("write");
        f.set_len(256 << 20).expect("set_len");
        let f = File::open(&path).expect("open");
        let segs = data_segments(&f, 256 << 20);
        assert!(!segs.is_empty());
        assert_eq!(segs.first().map(|s| s.0), Some(0));
        let data: u64 = segs.iter().map(|(s, e)| e - s).sum();
        assert!(data >= 4096);
        // A filesystem with holes reports far less data than the size.
        if data < 256 << 20 {
            let stats = warm(&f, 256 << 20).expect("warm");
            assert!(stats.read_bytes + stats.skipped_bytes == data);
        }
    }
}
