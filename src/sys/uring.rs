//! Reading a whole file with io_uring, several reads in flight, the data
//! handed on in file order.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

use io_uring::{IoUring, opcode, types};

use super::file::{AlignedBuf, pread};

/// Reads the first `size` bytes of `file` in `chunk`-byte reads, `depth`
/// of them in flight, and calls `each(offset, data)` in file order.
/// `chunk` must suit `O_DIRECT` when `file` was opened with it (a multiple
/// of 4096). Returns the bytes read (less than `size` if the file shrank).
pub fn read_in_order(
    file: &File,
    size: u64,
    chunk: usize,
    depth: usize,
    each: &mut dyn FnMut(u64, &[u8]),
) -> io::Result<u64> {
    let depth = depth.max(1);
    let chunk64 = chunk as u64;
    let chunks = size.div_ceil(chunk64);
    let mut ring = IoUring::new(u32::try_from(depth * 2).unwrap_or(64))?;
    let mut bufs = Vec::with_capacity(depth);
    for _ in 0..depth {
        bufs.push(AlignedBuf::new(chunk, 4096)?);
    }
    let mut results: Vec<Option<i32>> = vec![None; depth];
    let mut inflight = 0usize;
    let fd = types::Fd(file.as_raw_fd());

    let mut run = || -> io::Result<u64> {
        let submit = |ring: &mut IoUring,
                      bufs: &mut [AlignedBuf],
                      inflight: &mut usize,
                      ci: u64|
         -> io::Result<()> {
            let slot = (ci % depth as u64) as usize;
            let Some(buf) = bufs.get_mut(slot) else {
                return Err(io::Error::other("no buffer for the read"));
            };
            let entry = opcode::Read::new(fd, buf.as_mut_slice().as_mut_ptr(), chunk as u32)
                .offset(ci * chunk64)
                .build()
                .user_data(ci);
            // SAFETY: the buffer of this slot lives in `bufs` until every
            // read in flight has completed (drained below even on error),
            // and nothing touches it until its completion is reaped.
            unsafe { ring.submission().push(&entry) }
                .map_err(|_| io::Error::other("io_uring submission queue full"))?;
            *inflight += 1;
            Ok(())
        };
        for ci in 0..chunks.min(depth as u64) {
            submit(&mut ring, &mut bufs, &mut inflight, ci)?;
        }
        ring.submit()?;
        let mut total = 0u64;
        let mut next = 0u64;
        while next < chunks {
            let slot = (next % depth as u64) as usize;
            while results.get(slot).is_some_and(Option::is_none) {
                ring.submit_and_wait(1)?;
                for cqe in ring.completion() {
                    let s = (cqe.user_data() % depth as u64) as usize;
                    if let Some(r) = results.get_mut(s) {
                        *r = Some(cqe.result());
                    }
                    inflight = inflight.saturating_sub(1);
                }
            }
            let res = results
                .get_mut(slot)
                .and_then(Option::take)
                .unwrap_or(-libc::EIO);
            if res < 0 {
                return Err(io::Error::from_raw_os_error(-res));
            }
            let off = next * chunk64;
            let want = (size - off).min(chunk64) as usize;
            let mut got = res as usize;
            let Some(buf) = bufs.get_mut(slot) else {
                break;
            };
            // A short read before the end: finish it synchronously.
            while got > 0 && got < want {
                let Some(rest) = buf.as_mut_slice().get_mut(got..want) else {
                    break;
                };
                let n = pread(file, rest, off + got as u64, false)?;
                if n == 0 {
                    break;
                }
                got += n;
            }
            each(off, buf.as_slice().get(..got.min(want)).unwrap_or(&[]));
            total += got.min(want) as u64;
            if got < want {
                return Ok(total);
            }
            let ci = next + depth as u64;
            if ci < chunks {
                submit(&mut ring, &mut bufs, &mut inflight, ci)?;
                ring.submit()?;
            }
            next += 1;
        }
        Ok(total)
    };
    let outcome = run();
    // Never free a buffer the kernel may still write into.
    while inflight > 0 {
        if ring.submit_and_wait(1).is_err() {
            break;
        }
        inflight = inflight.saturating_sub(ring.completion().count());
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn chunks_arrive_in_order_and_complete() {
        let mut f = tempfile::tempfile().expect("tempfile");
        let data: Vec<u8> = (0..(3 * 8192 + 100)).map(|i| (i % 251) as u8).collect();
        f.write_all(&data).expect("write");
        let mut seen = Vec::new();
        let mut offsets = Vec::new();
        let n = match read_in_order(&f, data.len() as u64, 8192, 2, &mut |off, d| {
            offsets.push(off);
            seen.extend_from_slice(d);
        }) {
            Ok(n) => n,
            Err(e) => {
                // io_uring may be disabled (kernel.io_uring_disabled).
                crate::diag!("skipped: io_uring unavailable: {e}");
                return;
            }
        };
        assert_eq!(n, data.len() as u64);
        assert_eq!(offsets, [0, 8192, 16384, 24576]);
        assert!(seen == data);
    }
}
