//! The width of a terminal.

use std::os::fd::RawFd;

/// Columns of the terminal stdout is connected to (`TIOCGWINSZ`), or
/// `None` when stdout is not a terminal.
pub fn stdout_columns() -> Option<u16> {
    columns(libc::STDOUT_FILENO)
}

/// Columns of the terminal `fd` is connected to (`TIOCGWINSZ`), or `None`
/// when it is not a terminal.
pub fn columns(fd: RawFd) -> Option<u16> {
    // SAFETY: winsize is plain data; zeroed is a valid value.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    // SAFETY: TIOCGWINSZ writes one winsize into the live local `ws`; a
    // bad or closed `fd` makes it fail with EBADF/ENOTTY, nothing more.
    let ret = unsafe { libc::ioctl(fd, libc::TIOCGWINSZ, &mut ws) };
    (ret == 0 && ws.ws_col > 0).then_some(ws.ws_col)
}
