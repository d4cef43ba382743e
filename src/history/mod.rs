//! `tally history`: every recorded result kept, and the commit where a
//! figure changed found. A command folder over a store layer:
//!
//! - [`store`]: one schema, two backends (a SQLite file, bundled into the
//!   binary; a PostgreSQL database by URL), every value checked at the
//!   boundary;
//! - [`record`]: `--record STORE` on `run`, `compare` and `bench` (the
//!   flags are [`crate::record`]'s), [`import`]: old reports, baselines,
//!   side files and CSV;
//! - [`edivisive`]: the change points of one series (E-divisive means, as
//!   Apache Otava computes them, with its parameters as [`edivisive::Params`]);
//! - [`series`]: the series a query selects, each analysed; [`report`]
//!   and [`html`]: what is said, in every format; [`check`]: the CI gate.

pub mod args;
pub mod check;
pub mod edivisive;
pub mod extract;
pub mod html;
pub mod identity;
pub mod import;
pub mod record;
pub mod report;
pub mod series;
pub mod store;
mod ttest;

use std::path::PathBuf;

use crate::failure::Failure;
use edivisive::Params;
use report::HistoryReport;
use series::Selection;
use store::{Mode, Store, StoreError, Target};

/// What `tally history` is to do.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub target: Target,
    pub selection: Selection,
    pub params: Params,
    pub action: Action,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// The series and their change points.
    Show,
    /// The gate.
    Check(check::CheckConfig),
    /// Files into the store.
    Import(ImportConfig),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportConfig {
    pub files: Vec<PathBuf>,
    pub commit: Option<String>,
    pub branch: Option<String>,
    /// The command of a CSV file's figures.
    pub command: Option<String>,
    /// Points take this machine's fingerprint.
    pub this_machine: bool,
}

/// Why `tally history` failed.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    Input(String),
}

impl Failure for HistoryError {
    fn exit_code(&self) -> u8 {
        1
    }
}

/// Reads the store and finds the change points of every series selected
/// (and, for `check`, judges them).
pub fn execute(cfg: &Config) -> Result<HistoryReport, HistoryError> {
    let mut store = Store::open(&cfg.target, Mode::Read)?;
    let sel = &cfg.selection;
    let keep = |s: &store::SeriesRow| {
        (sel.commands.is_empty() || sel.commands.iter().any(|p| series::glob(p, &s.command)))
            && (sel.figures.is_empty()
                || sel
                    .figures
                    .iter()
                    .any(|p| series::figure_matches(p, &s.figure, &s.unit)))
    };
    let mut snap = store.snapshot()?;
    let loaded = snap.head(&sel.query(), &keep)?;
    let (commits, machines, series) = series::build(&mut snap, &loaded, sel, &cfg.params)?;
    snap.finish()?;
    let mut report = HistoryReport {
        schema_version: report::SCHEMA_VERSION,
        store: cfg.target.name(),
        method: cfg.params,
        selection: sel.clone(),
        commits,
        machines,
        series,
        check: None,
    };
    if let Action::Check(c) = &cfg.action {
        report.check = Some(check::judge(&report, c));
    }
    Ok(report)
}
