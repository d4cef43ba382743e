//! Reports and their renderers.
//!
//! Each command returns a plain-data report that implements [`Render`]:
//! human text, a [`Table`] (which the CSV and Markdown renderers share) and,
//! where it fits, Prometheus [`Metric`]s. JSON is the report itself through
//! serde, with a `schema_version` field, under the header of
//! [`json::Header`] (tally version, timestamp, hostname, kernel). Renderers never measure.

pub mod flags;
pub mod output;
pub mod svg;
pub mod text;
pub mod unit;

use std::io::{self, Write};

use serde::Serialize;

pub use flags::OutputArgs;
pub use output::{Export, Output, OutputError, Report, Request, Stream};
pub use prometheus::{Metric, MetricKind, Sample};

/// The version of every JSON schema tally writes; bumped on any change
/// that is not a pure addition.
pub const SCHEMA_VERSION: u32 = 2;

/// Declares the output formats: `pub mod NAME;` for each renderer file
/// and [`FORMATS`] from their `FORMAT`s, in `--format`'s order. A new
/// format is its file (with `pub const FORMAT: FormatSpec`: how it renders
/// a whole report, and how it begins, writes a row and finishes a report
/// written row by row) plus one line here; `--format`, `--export`, the
/// help, `run`'s fast scanner and the streamed reports of `tally cache`
/// and `tally cp` follow.
macro_rules! formats {
    ($($module:ident),+ $(,)?) => {
        $(pub mod $module;)+
        /// Every output format; [`Format`] indexes it.
        pub const FORMATS: &[FormatSpec] = &[$($module::FORMAT),+];
    };
}

formats! {
    human,
    json,
    csv,
    markdown,
    prometheus,
    html,
    hyperfine,
    hyperfine_csv,
    hyperfine_markdown,
}

/// One output format: its `--format` name, its help line, the form of a
/// report it is made from and how it renders any report that has it,
/// whole or row by row.
pub struct FormatSpec {
    pub name: &'static str,
    pub help: &'static str,
    /// A report has this format when it has this form ([`Report::FORMS`]).
    pub needs: Form,
    pub render: fn(&dyn Document, Style, &mut dyn Write) -> Result<(), RenderError>,
    /// How it writes a report row by row ([`Rows`]): begins on `out`
    /// (what comes before the rows) and returns the writer of the rest;
    /// `None` for a format of whole reports only (a page).
    pub rows: Option<BeginRows>,
}

/// Begins a format's rendering of a report written row by row (see
/// [`FormatSpec::rows`]).
pub type BeginRows = fn(&dyn Rows, Style, Box<dyn Write>) -> io::Result<Box<dyn RowWriter>>;

/// A report written row by row, as the formats see it: what goes before,
/// between and after its rows, in each form. Every
/// [`output::Streamed`] report is one (its rows' type erased).
pub trait Rows {
    /// The key of the rows' array in JSON.
    fn key(&self) -> &'static str;
    /// The JSON fields before the rows, and after them.
    fn head(&self) -> &dyn json::erased::Serialize;
    fn tail(&self) -> &dyn json::erased::Serialize;
    /// The table's columns: header, and whether it holds numbers.
    fn columns(&self) -> Vec<(&'static str, bool)>;
    /// The table's rows after the last streamed one (skipped paths).
    fn last_rows(&self) -> Vec<Vec<String>>;
    /// The Prometheus families, without samples; `None` without metrics.
    fn families(&self) -> Option<Vec<Metric>>;
    /// The human text, row by row.
    fn text(&self, style: Style) -> Box<dyn TextRows>;
    /// The report itself, for its own human text.
    fn as_any(&self) -> &dyn std::any::Any;
}

/// One row of a [`Rows`] report, as the formats see it.
pub trait Row {
    /// The row's JSON.
    fn data(&self) -> &dyn json::erased::Serialize;
    /// Its cells, in [`Rows::columns`]' order.
    fn cells(&self) -> Vec<String>;
    /// Its sample in each family of [`Rows::families`], `None` where it
    /// has none.
    fn samples(&self) -> Vec<Option<Sample>>;
    /// The row itself, for the report's own human text.
    fn as_any(&self) -> &dyn std::any::Any;
}

/// The human text of a [`Rows`] report, as it lays itself out.
pub trait TextRows {
    /// Takes a row: writes it, or keeps what it needs of it.
    fn row(&mut self, report: &dyn Rows, row: &dyn Row, out: &mut dyn Write) -> io::Result<()>;
    /// Writes the rest once every row came.
    fn finish(&mut self, report: &dyn Rows, out: &mut dyn Write) -> io::Result<()>;
}

/// One format's rendering of a [`Rows`] report, begun: it takes each row,
/// then finishes.
pub trait RowWriter {
    fn row(&mut self, report: &dyn Rows, row: &dyn Row) -> io::Result<()>;
    /// Writes out what is held (before the command waits on something).
    fn flush(&mut self) -> io::Result<()>;
    /// Writes what follows the rows, and flushes.
    fn finish(&mut self, report: &dyn Rows) -> io::Result<()>;
}

/// What a report can be rendered from; each format needs one
/// ([`FormatSpec::needs`]) and each report lists those it has
/// ([`Report::FORMS`], by `forms_of!`), so a new format made from an
/// existing form reaches every report that has it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// Text for people ([`Render::human`]).
    Text,
    /// The report's data, serialised ([`Document::json`]).
    Data,
    /// Rows and columns ([`Render::table`]).
    Table,
    /// Prometheus metrics ([`Render::metrics`]).
    Metrics,
    /// A page with plots ([`Render::html`]).
    Page,
    /// Each command's timed runs ([`Render::runs`]).
    Runs,
}

/// An output format: an entry of [`FORMATS`].
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Format(usize);

impl Format {
    /// Text for people (the default).
    pub const HUMAN: Format = Format::named("human");
    /// One JSON document, keys carrying their unit.
    pub const JSON: Format = Format::named("json");
    /// Comma-separated values with a header row.
    pub const CSV: Format = Format::named("csv");
    /// A GitHub-flavoured Markdown table.
    pub const MARKDOWN: Format = Format::named("markdown");
    /// Prometheus text exposition (node_exporter textfile collector).
    pub const PROMETHEUS: Format = Format::named("prometheus");
    /// A self-contained HTML page with plots.
    pub const HTML: Format = Format::named("html");
    /// hyperfine's `--export-json` document.
    pub const HYPERFINE: Format = Format::named("hyperfine");
    /// hyperfine's `--export-csv` table.
    pub const HYPERFINE_CSV: Format = Format::named("hyperfine-csv");
    /// hyperfine's `--export-markdown` table.
    pub const HYPERFINE_MARKDOWN: Format = Format::named("hyperfine-markdown");

    /// The format called `name`; a name not in [`FORMATS`] fails the build
    /// where it is used in a constant.
    const fn named(name: &str) -> Format {
        let mut i = 0;
        while i < FORMATS.len() {
            if const_eq(FORMATS[i].name, name) {
                return Format(i);
            }
            i += 1;
        }
        panic!("no such format")
    }

    /// Every format, in `--format`'s order.
    pub fn all() -> impl Iterator<Item = Format> {
        (0..FORMATS.len()).map(Format)
    }

    /// The format's entry.
    pub fn spec(self) -> &'static FormatSpec {
        &FORMATS[self.0]
    }

    /// Its `--format` name.
    pub fn name(self) -> &'static str {
        self.spec().name
    }
}

/// Whether two strings are equal, in a `const` context (registries look
/// names up at compile time).
pub(crate) const fn const_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

impl Default for Format {
    fn default() -> Format {
        Format::HUMAN
    }
}

impl std::fmt::Debug for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Format {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// Every format, in [`FORMATS`]' order.
const ALL: [Format; FORMATS.len()] = {
    let mut all = [Format(0); FORMATS.len()];
    let mut i = 0;
    while i < FORMATS.len() {
        all[i] = Format(i);
        i += 1;
    }
    all
};

impl clap::ValueEnum for Format {
    fn value_variants<'a>() -> &'a [Format] {
        &ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let spec = self.spec();
        Some(clap::builder::PossibleValue::new(spec.name).help(spec.help))
    }
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
pub trait Render {
    /// Human text.
    fn human(&self, out: &mut dyn Write, style: Style) -> io::Result<()>;
    /// The rows and columns for CSV and Markdown.
    fn table(&self) -> Table;
    /// Prometheus metrics; `None` when the report has no sensible metrics.
    fn metrics(&self) -> Option<Vec<Metric>> {
        None
    }
    /// Writes the report as a self-contained HTML page (see [`html`]);
    /// `None` when the report has no page.
    fn html(&self, out: &mut dyn Write) -> Option<io::Result<()>> {
        let _ = out;
        None
    }
    /// Each command's runs, for the formats made from runs alone
    /// ([`hyperfine`]); `None` for a report that times no command.
    fn runs(&self) -> Option<Vec<hyperfine::TimedCommand<'_>>> {
        None
    }
    /// Writes the report as Markdown of its own (a summary with headings
    /// and several tables); `None`: [`Render::table`] as one table.
    fn markdown(&self, out: &mut dyn Write) -> Option<io::Result<()>> {
        let _ = out;
        None
    }
}

/// A format the report cannot be rendered in.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("this report has no {0} form; use --format human, json, csv or markdown")]
    Unsupported(&'static str),
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

/// A report as the formats see it: its [`Render`] forms and its JSON.
/// Every serializable [`Render`] is one.
pub trait Document {
    /// The report's human, table and metric forms.
    fn forms(&self) -> &dyn Render;
    /// Writes the report as JSON under the header (see [`json`]).
    fn json(&self, out: &mut dyn Write) -> io::Result<()>;
}

impl<R: Render + Serialize> Document for R {
    fn forms(&self) -> &dyn Render {
        self
    }

    fn json(&self, out: &mut dyn Write) -> io::Result<()> {
        json::write(self, out)
    }
}

/// Renders `report` in `format` to `out`.
pub fn render(
    report: &dyn Document,
    format: Format,
    style: Style,
    out: &mut dyn Write,
) -> Result<(), RenderError> {
    (format.spec().render)(report, style, out)?;
    out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    #[test]
    fn every_format_has_one_distinct_name_that_clap_accepts() {
        let mut names: Vec<&str> = FORMATS.iter().map(|f| f.name).collect();
        for (i, name) in names.iter().enumerate() {
            assert_eq!(Format::from_str(name, false).map(|f| f.0), Ok(i));
        }
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), FORMATS.len());
        assert_eq!(Format::PROMETHEUS.name(), "prometheus");
        assert_eq!(Format::default(), Format::HUMAN);
    }
}
