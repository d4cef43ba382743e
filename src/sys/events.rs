//! Readiness and wake-up primitives for `tally bench`: eventfd, select,
//! poll, epoll, futex, and the RLIMIT_NOFILE soft limit.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::AtomicU32;

use super::{cvt, cvt_long};

/// Descriptors `select` can watch: numbers below this.
pub const FD_SETSIZE: usize = libc::FD_SETSIZE;

/// A non-blocking (or blocking) eventfd starting at 0.
pub fn eventfd(nonblocking: bool) -> io::Result<OwnedFd> {
    let flags = libc::EFD_CLOEXEC | if nonblocking { libc::EFD_NONBLOCK } else { 0 };
    // SAFETY: eventfd has no memory preconditions.
    let fd = cvt(unsafe { libc::eventfd(0, flags) })?;
    // SAFETY: the descriptor is new and ours alone.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Adds 1 to an eventfd's counter (makes it readable).
pub fn eventfd_signal(fd: &OwnedFd) -> io::Result<()> {
    let one: u64 = 1;
    // SAFETY: writes 8 bytes from a live local.
    let n = unsafe { libc::write(fd.as_raw_fd(), (&raw const one).cast(), 8) };
    if n == 8 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Reads (and so resets) an eventfd's counter.
pub fn eventfd_take(fd: &OwnedFd) -> io::Result<u64> {
    let mut v: u64 = 0;
    // SAFETY: reads 8 bytes into a live local.
    let n = unsafe { libc::read(fd.as_raw_fd(), (&raw mut v).cast(), 8) };
    if n == 8 {
        Ok(v)
    } else {
        Err(io::Error::last_os_error())
    }
}

/// `select` for readability over `fds` (each below FD_SETSIZE), with a
/// timeout in ms (`None` blocks). Returns the ready count.
pub fn select_read(fds: &[RawFd], timeout_ms: Option<u32>) -> io::Result<usize> {
    let mut max = -1;
    // SAFETY: fd_set is plain data; FD_ZERO below initialises it.
    let mut set: libc::fd_set = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid fd_set.
    unsafe { libc::FD_ZERO(&mut set) };
    for &fd in fds {
        if fd < 0 || fd as usize >= FD_SETSIZE {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        // SAFETY: 0 <= fd < FD_SETSIZE, checked above.
        unsafe { libc::FD_SET(fd, &mut set) };
        max = max.max(fd);
    }
    let mut tv = timeout_ms.map(|ms| super::timeval(std::time::Duration::from_millis(ms.into())));
    let tvp = tv
        .as_mut()
        .map_or(std::ptr::null_mut(), |t| t as *mut libc::timeval);
    // SAFETY: `set` and `tv` are valid for the call; nfds covers the set.
    let n = cvt(unsafe {
        libc::select(
            max + 1,
            &mut set,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            tvp,
        )
    })?;
    Ok(n as usize)
}

/// A `poll` set watching descriptors for readability.
pub struct PollSet {
    fds: Vec<libc::pollfd>,
}

impl PollSet {
    pub fn new(fds: &[RawFd]) -> PollSet {
        PollSet {
            fds: fds
                .iter()
                .map(|&fd| libc::pollfd {
                    fd,
                    events: libc::POLLIN,
                    revents: 0,
                })
                .collect(),
        }
    }

    /// One `poll` call; `None` blocks. Returns the ready count.
    pub fn poll(&mut self, timeout_ms: Option<u32>) -> io::Result<usize> {
        let timeout = timeout_ms.map_or(-1, |ms| i32::try_from(ms).unwrap_or(i32::MAX));
        // SAFETY: the pointer and length describe our own pollfd vector.
        let n = cvt(unsafe {
            libc::poll(
                self.fds.as_mut_ptr(),
                self.fds.len() as libc::nfds_t,
                timeout,
            )
        })?;
        Ok(n as usize)
    }
}

/// An epoll instance watching descriptors for readability (level-triggered).
pub struct Epoll {
    fd: OwnedFd,
    events: Vec<libc::epoll_event>,
}

impl Epoll {
    pub fn new(fds: &[RawFd]) -> io::Result<Epoll> {
        // SAFETY: epoll_create1 has no memory preconditions.
        let raw = cvt(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        // SAFETY: the descriptor is new and ours alone.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        for &watched in fds {
            let mut ev = libc::epoll_event {
                events: libc::EPOLLIN as u32,
                u64: watched as u64,
            };
            // SAFETY: `ev` is valid for the call.
            cvt(unsafe { libc::epoll_ctl(raw, libc::EPOLL_CTL_ADD, watched, &mut ev) })?;
        }
        let cap = fds.len().max(1);
        Ok(Epoll {
            fd,
            events: vec![libc::epoll_event { events: 0, u64: 0 }; cap],
        })
    }

    /// One `epoll_wait`; `None` blocks. Returns the ready count.
    pub fn wait(&mut self, timeout_ms: Option<u32>) -> io::Result<usize> {
        let timeout = timeout_ms.map_or(-1, |ms| i32::try_from(ms).unwrap_or(i32::MAX));
        let cap = i32::try_from(self.events.len()).unwrap_or(i32::MAX);
        // SAFETY: the buffer holds `cap` events and is ours for the call.
        let n = cvt(unsafe {
            libc::epoll_wait(self.fd.as_raw_fd(), self.events.as_mut_ptr(), cap, timeout)
        })?;
        Ok(n as usize)
    }
}

/// Blocks while `word` holds `expected` (FUTEX_WAIT, private).
pub fn futex_wait(word: &AtomicU32, expected: u32) -> io::Result<()> {
    // SAFETY: `word` is a live, aligned u32; a null timeout blocks.
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            std::ptr::null::<libc::timespec>(),
        )
    };
    match cvt_long(r) {
        Ok(_) => Ok(()),
        Err(e) if matches!(e.raw_os_error(), Some(libc::EAGAIN) | Some(libc::EINTR)) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Wakes one waiter on `word` (FUTEX_WAKE, private).
pub fn futex_wake(word: &AtomicU32) -> io::Result<()> {
    // SAFETY: `word` is a live, aligned u32.
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            1,
        )
    };
    cvt_long(r).map(|_| ())
}

/// The RLIMIT_NOFILE (soft, hard) limits.
pub fn nofile_limit() -> io::Result<(u64, u64)> {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `rl` is valid and writable.
    cvt(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) })?;
    Ok((rl.rlim_cur, rl.rlim_max))
}

/// Raises the RLIMIT_NOFILE soft limit to `want` (at most the hard limit);
/// returns the new soft limit.
pub fn raise_nofile(want: u64) -> io::Result<u64> {
    let (soft, hard) = nofile_limit()?;
    if soft >= want {
        return Ok(soft);
    }
    let rl = libc::rlimit {
        rlim_cur: want.min(hard),
        rlim_max: hard,
    };
    // SAFETY: `rl` is valid for the call.
    cvt(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &rl) })?;
    Ok(rl.rlim_cur)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eventfd_readiness_in_each_api() {
        let a = eventfd(true).unwrap();
        let b = eventfd(true).unwrap();
        let fds = [a.as_raw_fd(), b.as_raw_fd()];
        assert_eq!(select_read(&fds, Some(0)).unwrap(), 0);
        eventfd_signal(&b).unwrap();
        assert_eq!(select_read(&fds, Some(0)).unwrap(), 1);
        let mut p = PollSet::new(&fds);
        assert_eq!(p.poll(Some(0)).unwrap(), 1);
        let mut e = Epoll::new(&fds).unwrap();
        assert_eq!(e.wait(Some(0)).unwrap(), 1);
        assert_eq!(eventfd_take(&b).unwrap(), 1);
        assert_eq!(e.wait(Some(0)).unwrap(), 0);
    }

    #[test]
    fn select_refuses_high_descriptors() {
        assert!(select_read(&[FD_SETSIZE as RawFd], Some(0)).is_err());
        assert!(select_read(&[-1], Some(0)).is_err());
    }

    #[test]
    fn futex_wait_returns_when_value_differs() {
        let w = AtomicU32::new(1);
        futex_wait(&w, 0).unwrap();
        futex_wake(&w).unwrap();
    }
}
