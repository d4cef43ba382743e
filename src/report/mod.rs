//! Reports and their renderers.
//!
//! Each command returns a plain-data report that implements [`Render`]:
//! human text, a [`Table`] (which the CSV and Markdown renderers share) and,
//! where it fits, Prometheus [`Metric`]s. JSON is the report itself through
//! serde, with a `schema_version` field, under the header of
//! [`json::Header`] (tally version, timestamp, hostname, kernel). Renderers never measure.

pub mod csv;
pub mod json;
pub mod markdown;
pub mod path;
pub mod prometheus;
pub mod text;
pub mod unit;

use std::io::{self, Write};

use serde::Serialize;

pub use prometheus::{Metric, MetricKind, Sample};

/// The version of every JSON schema tally writes; bumped on any change
/// that is not a pure addition.
pub const SCHEMA_VERSION: u32 = 2;

/// An output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// Text for people (the default).
    Human,
    /// One JSON document, keys carrying their unit.
    Json,
    /// Comma-separated values with a header row.
    Csv,
    /// A GitHub-flavoured Markdown table.
    Markdown,
    /// Prometheus text exposition (node_exporter textfile collector).
    Prometheus,
}

/// Rows and columns of a report, for CSV and Markdown.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Table {
    pub headers: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// How human output may look where it goes: [`Style::stdout`],
/// [`Style::stderr`] or [`Style::PLAIN`] (a file); see [`text`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Style {
    /// Bold headers: only on a terminal, and not with `NO_COLOR`.
    pub color: bool,
    /// Characters a line may take (`$COLUMNS`, else the terminal's);
    /// `None`: no limit.
    pub width: Option<usize>,
}

/// A report every format can render.
pub trait Render: Serialize {
    /// Human text.
    fn human(&self, out: &mut dyn Write, style: Style) -> io::Result<()>;
    /// The rows and columns for CSV and Markdown.
    fn table(&self) -> Table;
    /// Prometheus metrics; `None` when the report has no sensible metrics.
    fn metrics(&self) -> Option<Vec<Metric>> {
        None
    }
}

/// A format the report cannot be rendered in.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("this report has no {0:?} form; use --format human, json, csv or markdown")]
    Unsupported(Format),
    #[error(transparent)]
    Io(#[from] io::Error),
}

impl RenderError {
    /// Whether the reader of the output went away (a closed pipe), which
    /// ends a command quietly rather than as a failure.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, RenderError::Io(e) if e.kind() == io::ErrorKind::BrokenPipe)
    }
}

/// Renders `report` in `format` to `out`.
pub fn render<R: Render>(
    report: &R,
    format: Format,
    style: Style,
    out: &mut dyn Write,
) -> Result<(), RenderError> {
    match format {
        Format::Human => report.human(out, style)?,
        Format::Json => json::write(report, out)?,
        Format::Csv => csv::write(&report.table(), out)?,
        Format::Markdown => markdown::write(&report.table(), out)?,
        Format::Prometheus => match report.metrics() {
            Some(metrics) => prometheus::write(&metrics, out)?,
            None => return Err(RenderError::Unsupported(format)),
        },
    }
    out.flush()?;
    Ok(())
}
