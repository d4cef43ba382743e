//! `tally mem --textfile DIR`: the metrics of `tally mem --format
//! prometheus`, for node_exporter's textfile collector, in [`FILE`]. What
//! goes in the file is made here; `crate::serve::textfile` writes it
//! atomically, once or every `--every`.

use super::privilege::Privilege;
use super::{Config, MemError, closing_notes, scan, summarize};
use crate::report::{Metric, Render};

/// The file's name in DIR.
pub const FILE: &str = "tally_mem.prom";

/// The metrics of one scan as `cfg` says, each time it is called. With
/// privilege, one scan (the caller refuses `--every`), then the privilege
/// is dropped before `user` is looked up and the file written; the notes
/// on the processes left out are said after the first scan.
pub fn metrics<'a>(
    cfg: &'a mut Config,
    mut privilege: Privilege,
    user: Option<&'a str>,
) -> impl FnMut() -> Result<Vec<Metric>, String> + 'a {
    let mut first = true;
    move || {
        let snap = scan(cfg, privilege);
        privilege
            .drop_to_caller()
            .map_err(|e| MemError::DropPrivileges(e).to_string())?;
        let snap = snap.map_err(|e| e.to_string())?;
        if let (Some(user), None) = (user, cfg.grouping.uid) {
            cfg.grouping.uid = Some(
                crate::sys::user::uid_of(user)
                    .or_else(|| user.parse().ok())
                    .ok_or_else(|| {
                        format!("no user named `{user}`: give a login name or a numeric uid")
                    })?,
            );
        }
        cfg.grouping.check_replaced = true;
        let report = summarize(&snap, cfg);
        if first {
            for msg in closing_notes(&report, false, crate::sys::geteuid() == 0) {
                crate::diag!("tally: {msg}");
            }
            first = false;
        }
        Ok(report.metrics().unwrap_or_default())
    }
}
