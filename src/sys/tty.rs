//! The width of the terminal on stdout.

/// Columns of the terminal stdout is connected to (`TIOCGWINSZ`), or
/// `None` when stdout is not a terminal.
pub fn stdout_columns() -> Option<u16> {
    // SAFETY: winsize is plain data; zeroed is a valid value.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    // SAFETY: TIOCGWINSZ writes one winsize into the live local `ws`.
    let ret = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) };
    (ret == 0 && ws.ws_col > 0).then_some(ws.ws_col)
}
