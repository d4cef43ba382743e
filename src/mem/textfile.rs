//! `tally mem --textfile DIR`: the metrics of `tally mem --format
//! prometheus`, for node_exporter's textfile collector, in [`FILE`]. What
//! goes in the file is made here; `crate::serve::textfile` writes it
//! atomically, once or every `--every`.

use super::privilege::Privilege;
use super::{Config, closing_notes, measure};
use crate::report::{Metric, Render};

/// The file's name in DIR.
pub const FILE: &str = "tally_mem.prom";

/// The metrics of one measurement as `cfg` says ([`measure`]: with
/// privilege, one scan, and the caller refuses `--every`), each time it is
/// called; the notes on the processes left out are said after the first.
pub fn metrics(
    cfg: &Config,
    mut privilege: Privilege,
) -> impl FnMut() -> Result<Vec<Metric>, String> + '_ {
    let mut first = true;
    // Asked before the scan drops an install's privilege for good.
    let elevated = privilege.is_elevated();
    move || {
        let report = measure(cfg, &mut privilege).map_err(|e| e.to_string())?;
        if first {
            for msg in closing_notes(&report, elevated, crate::sys::geteuid() == 0) {
                // One `tally:` paragraph each; a note that cannot be
                // written is lost, nothing more.
                let _ = crate::report::text::tally_lines(
                    &mut std::io::stderr().lock(),
                    &format!("tally: {msg}"),
                    crate::report::text::NO_TERMINAL_WIDTH,
                );
            }
            first = false;
        }
        Ok(report.metrics().unwrap_or_default())
    }
}
