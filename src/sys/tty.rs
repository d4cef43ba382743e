//! The width and height of a terminal.

use std::os::fd::RawFd;

/// Columns of the terminal stdout is connected to (`TIOCGWINSZ`), or
/// `None` when stdout is not a terminal.
pub fn stdout_columns() -> Option<u16> {
    columns(libc::STDOUT_FILENO)
}

/// Columns of the terminal `fd` is connected to (`TIOCGWINSZ`), or `None`
/// when it is not a terminal.
pub fn columns(fd: RawFd) -> Option<u16> {
    size(fd).map(|(cols, _)| cols)
}

/// Rows (lines) of the terminal stdout is connected to, or `None` when
/// stdout is not a terminal or does not say.
pub fn stdout_rows() -> Option<u16> {
    size(libc::STDOUT_FILENO)
        .map(|(_, rows)| rows)
        .filter(|r| *r > 0)
}

/// Columns and rows of the terminal `fd` is connected to.
fn size(fd: RawFd) -> Option<(u16, u16)> {
    // SAFETY: winsize is plain data; zeroed is a valid value.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    // SAFETY: TIOCGWINSZ writes one winsize into the live local `ws`; a
    // bad or closed `fd` makes it fail with EBADF/ENOTTY, nothing more.
    let ret = unsafe { libc::ioctl(fd, libc::TIOCGWINSZ, &mut ws) };
    (ret == 0 && ws.ws_col > 0).then_some((ws.ws_col, ws.ws_row))
}
