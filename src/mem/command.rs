//! `tally mem --watch` as a command: a frame of the report on stdout every
//! interval until a stop signal, measured as every `tally mem` is
//! ([`super::measure`]).

use std::io::{self, IsTerminal};
use std::time::Duration;

use super::report::MemReport;
use super::{Config, MemError, watch};
use crate::report::{Format, Style, output::Sink};

/// Draws `cfg`'s report in `format` on stdout every `interval` (in place
/// on a terminal, appended on a pipe) until SIGINT, SIGTERM or SIGHUP;
/// returns the last report (an empty one when stopped before the first).
pub fn watch_stdout(
    cfg: &Config,
    interval: Duration,
    format: Format,
) -> Result<MemReport, MemError> {
    let signals = crate::sys::signals::Forwarder::install().map_err(MemError::Signals)?;
    // Frames replace each other only where escapes may go (not TERM=dumb).
    let terminal = crate::report::text::escapes(io::stdout().is_terminal());
    // A frame goes out whole (render flushes it), not a write per line,
    // before the wait for the next.
    let mut out = Sink::stdout_by_screen().map_err(MemError::Stdout)?;
    let stop = || signals.pending().is_some();
    watch(
        cfg,
        interval,
        format,
        Style::stdout(),
        terminal,
        &mut out,
        &stop,
    )
    .map(Option::unwrap_or_default)
}
