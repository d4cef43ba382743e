//! `tally cache --textfile DIR PATH…`: the metrics of `tally cache
//! --format prometheus`, for node_exporter's textfile collector, in
//! [`FILE`]. What goes in the file is made here; `crate::serve::textfile`
//! writes it atomically, once or every `--every`.

use super::command::{Config, expand_stdin, report_of};
use crate::report::{Metric, Render};

/// The file's name in DIR.
pub const FILE: &str = "tally_cache.prom";

/// The metrics of the paths `cfg` names, measured each time it is called.
pub fn metrics(cfg: &Config) -> impl FnMut() -> Result<Vec<Metric>, String> + '_ {
    let mut stdin_read = false;
    let mut paths = cfg.paths.clone();
    move || {
        // `-` (paths on stdin) is read once, then the same paths are
        // measured every time.
        if !stdin_read {
            let mut stdin = crate::input::Stdin::new(crate::input::STDIN_IDLE)
                .map_err(|e| format!("cannot read stdin: {e}"))?;
            paths = expand_stdin(&cfg.paths, cfg.null_separated, &mut stdin)
                .map_err(|e| e.to_string())?;
            stdin_read = true;
        }
        let run = Config {
            paths: paths.clone(),
            null_separated: false,
            ..cfg.clone()
        };
        let (report, _) = report_of(&run, &mut std::io::empty()).map_err(|e| e.to_string())?;
        for line in report.diagnostics() {
            crate::diag!("tally: {line}");
        }
        Ok(report.metrics().unwrap_or_default())
    }
}
