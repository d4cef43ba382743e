//! What `tally bench ipc` needs beyond std: named pipes (`mkfifo`),
//! turning `O_NONBLOCK` off again on a descriptor opened with it, and
//! socket buffer sizes.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::cvt;

/// Creates a named pipe at `path` with `mode` (fails if anything exists
/// there already).
pub fn mkfifo(path: &Path, mode: u32) -> io::Result<()> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path holds a NUL byte"))?;
    // SAFETY: `c` is a NUL-terminated path that outlives the call.
    cvt(unsafe { libc::mkfifo(c.as_ptr(), mode as libc::mode_t) }).map(|_| ())
}

/// Clears `O_NONBLOCK` on `fd`, so reads and writes wait again.
pub fn set_blocking(fd: BorrowedFd<'_>) -> io::Result<()> {
    let raw = fd.as_raw_fd();
    // SAFETY: F_GETFL only reads the status flags of an open descriptor.
    let flags = cvt(unsafe { libc::fcntl(raw, libc::F_GETFL) })?;
    // SAFETY: F_SETFL changes only the status flags of that descriptor.
    cvt(unsafe { libc::fcntl(raw, libc::F_SETFL, flags & !libc::O_NONBLOCK) }).map(|_| ())
}

fn set_int_opt(fd: BorrowedFd<'_>, opt: libc::c_int, value: libc::c_int) -> io::Result<()> {
    // SAFETY: `value` is a live c_int and its size is passed; the kernel
    // only reads it.
    cvt(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            opt,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })
    .map(|_| ())
}

fn get_int_opt(fd: BorrowedFd<'_>, opt: libc::c_int) -> io::Result<libc::c_int> {
    let mut value: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `value` and `len` are live and writable, `len` holds the
    // size of `value`.
    cvt(unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            opt,
            (&mut value as *mut libc::c_int).cast(),
            &mut len,
        )
    })?;
    Ok(value)
}

/// Asks for send and receive buffers of `bytes` on a socket: the forced
/// variants first (root may exceed `net.core.[rw]mem_max`), then the
/// plain ones (capped by those limits). Returns the receive buffer the
/// kernel granted (it doubles the request for its own bookkeeping).
pub fn set_socket_buffers(fd: BorrowedFd<'_>, bytes: usize) -> io::Result<usize> {
    let v = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    for (forced, plain) in [
        (libc::SO_RCVBUFFORCE, libc::SO_RCVBUF),
        (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF),
    ] {
        if set_int_opt(fd, forced, v).is_err() {
            set_int_opt(fd, plain, v)?;
        }
    }
    get_int_opt(fd, libc::SO_RCVBUF).map(|n| usize::try_from(n).unwrap_or(0))
}

/// Asks for a send buffer of `bytes` on a socket, within
/// `net.core.wmem_max` (no forcing: the request is a wish, not a need).
pub fn set_send_buffer(fd: BorrowedFd<'_>, bytes: usize) -> io::Result<()> {
    set_int_opt(
        fd,
        libc::SO_SNDBUF,
        libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX),
    )
}

/// Sets how long a read on socket `fd` may wait before it fails with
/// `EAGAIN` (`SO_RCVTIMEO`); zero waits for ever.
pub fn set_recv_timeout(fd: BorrowedFd<'_>, timeout: std::time::Duration) -> io::Result<()> {
    let tv = super::timeval(timeout);
    // SAFETY: `tv` is a live timeval and its size is passed; the kernel
    // only reads it.
    cvt(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&tv as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        )
    })
    .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn fifo_is_created_once() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        mkfifo(&p, 0o600).unwrap();
        use std::os::unix::fs::FileTypeExt;
        assert!(std::fs::metadata(&p).unwrap().file_type().is_fifo());
        assert!(mkfifo(&p, 0o600).is_err());
    }

    #[test]
    fn buffers_grow_and_blocking_comes_back() {
        let (a, _b) = std::os::unix::net::UnixDatagram::pair().unwrap();
        let got = set_socket_buffers(a.as_fd(), 1 << 20).unwrap();
        assert!(got > 0);
        a.set_nonblocking(true).unwrap();
        set_blocking(a.as_fd()).unwrap();
        // SAFETY: F_GETFL only reads the flags.
        let flags = unsafe { libc::fcntl(a.as_raw_fd(), libc::F_GETFL) };
        assert_eq!(flags & libc::O_NONBLOCK, 0);
    }
}
