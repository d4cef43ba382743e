//! The report of `tally cache`.
//!
//! JSON schema (`schema_version` 2), keys carry their unit:
//! - `action`: `status`, `evict`, `warm` or `lock`; `page_size_bytes`.
//! - `files[]`: `path`, `size_bytes`, `residency` (now: `state` `known`
//!   with `method`, `cached_pages`, `dirty_pages`, `writeback_pages`, or
//!   `state` `unknown` with `reason`), `before` (the residency before
//!   evict/warm/lock), `stayed_reason` (why pages stayed after evict, or
//!   why a lock failed), `read_bytes` (read by warm), `map_percent`
//!   (with `-v`: percent cached of each of up to 64 equal ranges).
//! - `total`: `files`, `size_bytes`, `cached_bytes`, `dirty_bytes`,
//!   `writeback_bytes` over files whose residency is known, and
//!   `unknown_files`.
//! - `problems[]`: `path` and `error` for paths that were skipped.
//!
//! A path that is not valid UTF-8 is written as `{"lossy", "bytes_hex"}`
//! (see [`crate::text::path`]). In human text, CSV, Markdown and
//! Prometheus labels, a path is escaped as every name
//! ([`crate::text::escape_name`]: `\\`, `\x0a`, `\x1b`, `\xe9`), so a
//! file name can neither break a line, nor reach the terminal as an escape
//! sequence, nor pass for another name.
//!
//! Skipped paths and files that could not be locked are errors: the human
//! report leaves them out, and [`CacheReport::diagnostics`] gives the lines
//! that belong on standard error.
//!
//! `tally cache` itself writes the report as the files are measured
//! ([`CacheStream`]): the same text in every format as [`CacheReport`]
//! rendered whole, except that human text lists at most `--top N` files
//! (those with the most cached) unless `--all`.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::pagecache::Residency;
use crate::report::json::erased;
use crate::report::output::{HumanRows, Streamed};
use crate::report::text::{Column, TextTable};
use crate::report::{Metric, Render, Sample, Style, Table};
use crate::text::path::display;
use crate::units::{human_bytes, percent, thousands};

/// What `tally cache` does to the files.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    #[default]
    Status,
    Evict,
    Warm,
    Lock,
}

/// One file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileReport {
    #[serde(serialize_with = "crate::text::path::serialize")]
    pub path: PathBuf,
    pub size_bytes: u64,
    pub residency: Residency,
    pub before: Option<Residency>,
    pub stayed_reason: Option<String>,
    pub read_bytes: Option<u64>,
    pub map_percent: Option<Vec<u8>>,
}

/// A path that was skipped, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathProblem {
    #[serde(serialize_with = "crate::text::path::serialize")]
    pub path: PathBuf,
    pub error: String,
}

impl PathProblem {
    pub fn new(path: &Path, error: String) -> Self {
        PathProblem {
            path: path.to_path_buf(),
            error,
        }
    }
}

/// Sums over the files whose residency is known.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Total {
    pub files: u64,
    pub size_bytes: u64,
    /// Size of the files whose residency is known.
    pub known_size_bytes: u64,
    pub cached_bytes: u64,
    pub dirty_bytes: u64,
    pub writeback_bytes: u64,
    /// Files whose residency the kernel would not tell.
    pub unknown_files: u64,
    /// Bytes cached before the action (evict, warm, lock), of the files
    /// whose residency was known then; for the human total, not in JSON.
    #[serde(skip)]
    pub before_bytes: u64,
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheReport {
    pub schema_version: u32,
    pub action: Action,
    pub page_size_bytes: u64,
    pub files: Vec<FileReport>,
    pub total: Total,
    pub problems: Vec<PathProblem>,
}

impl Total {
    /// Counts one more file (`page`: the page size).
    pub fn add(&mut self, f: &FileReport, page: u64) {
        let t = self;
        t.files += 1;
        t.size_bytes = t.size_bytes.saturating_add(f.size_bytes);
        if let Some(b) = f.before.as_ref().and_then(|b| cached_bytes(b, page)) {
            t.before_bytes = t.before_bytes.saturating_add(b);
        }
        match &f.residency {
            Residency::Known {
                cached_pages,
                dirty_pages,
                writeback_pages,
                ..
            } => {
                t.known_size_bytes = t.known_size_bytes.saturating_add(f.size_bytes);
                t.cached_bytes = t
                    .cached_bytes
                    .saturating_add(cached_pages.saturating_mul(page));
                t.dirty_bytes = t
                    .dirty_bytes
                    .saturating_add(dirty_pages.unwrap_or(0).saturating_mul(page));
                t.writeback_bytes = t
                    .writeback_bytes
                    .saturating_add(writeback_pages.unwrap_or(0).saturating_mul(page));
            }
            Residency::Unknown { .. } => t.unknown_files += 1,
        }
    }
}

impl CacheReport {
    /// Fills `total` from `files`.
    pub fn total_up(&mut self) {
        let mut t = Total::default();
        for f in &self.files {
            t.add(f, self.page_size_bytes);
        }
        self.total = t;
    }

    /// Whether any path was skipped (the command then exits 1).
    pub fn has_problems(&self) -> bool {
        !self.problems.is_empty()
    }

    /// The files `--lock` could not lock (each with its reason in
    /// `stayed_reason`).
    pub fn lock_failures(&self) -> impl Iterator<Item = &FileReport> {
        self.files
            .iter()
            .filter(|f| self.action == Action::Lock && f.stayed_reason.is_some())
    }

    /// One line per error, for standard error: each skipped path, and each
    /// file that could not be locked. Paths are escaped for a terminal.
    pub fn diagnostics(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .problems
            .iter()
            .map(|p| format!("{}: skipped: {}", display(&p.path), p.error))
            .collect();
        for f in self.lock_failures() {
            if let Some(reason) = &f.stayed_reason {
                lines.push(format!("{}: not locked: {reason}", display(&f.path)));
            }
        }
        lines
    }
}

fn cached_bytes(r: &Residency, page: u64) -> Option<u64> {
    r.cached_pages().map(|p| p.saturating_mul(page))
}

/// Percent of the file cached; pages are whole, so the size rounds up.
fn cached_percent(r: &Residency, size: u64, page: u64) -> Option<u64> {
    let pages = size.div_ceil(page);
    r.cached_pages()
        .map(|c| percent(c, pages).unwrap_or(if c == 0 { 0 } else { 100 }))
}

/// A percentage for people: `<1%` rather than a `0%` that hides pages.
fn pct_text(part: u64, whole: u64) -> String {
    match percent(part, whole) {
        Some(0) if part > 0 => "<1%".into(),
        Some(100) if part < whole => ">99%".into(),
        Some(p) => format!("{p}%"),
        None => "-".into(),
    }
}

fn bytes_cell(b: Option<u64>) -> String {
    b.map(human_bytes).unwrap_or_else(|| "unknown".into())
}

/// One character per map bucket: blank for none cached, `#` for all.
pub fn map_line(map: &[u8]) -> String {
    map.iter()
        .map(|p| match p {
            0 => ' ',
            1..=24 => '.',
            25..=49 => ':',
            50..=74 => 'o',
            75..=99 => 'O',
            _ => '#',
        })
        .collect()
}

fn known_opt(r: &Residency, page: u64, pick: fn(&Residency) -> Option<u64>) -> Option<u64> {
    pick(r).map(|p| p.saturating_mul(page))
}

fn dirty(r: &Residency) -> Option<u64> {
    match r {
        Residency::Known { dirty_pages, .. } => *dirty_pages,
        Residency::Unknown { .. } => None,
    }
}

fn writeback(r: &Residency) -> Option<u64> {
    match r {
        Residency::Known {
            writeback_pages, ..
        } => *writeback_pages,
        Residency::Unknown { .. } => None,
    }
}

/// No table without rows: says so (the skipped paths, if any, are on
/// standard error), and, where directories were named without `-r`, how
/// to take their files (a regression: `tally cache DIR` said only "no
/// regular files found (1 path skipped)"; vmtouch walks DIR by default).
fn nothing_found(problems: &[PathProblem], out: &mut dyn Write) -> io::Result<()> {
    let dirs = problems
        .iter()
        .filter(|p| p.error.contains("is a directory"))
        .count();
    let hint = match dirs {
        0 => String::new(),
        1 => ": a directory was named; -r takes the files under it".to_string(),
        n => format!(
            ": {} directories were named; -r takes the files under them",
            thousands(n as u64)
        ),
    };
    match problems.len() {
        0 => writeln!(out, "no regular files found"),
        1 => writeln!(out, "no regular files found (1 path skipped){hint}"),
        n => writeln!(
            out,
            "no regular files found ({} paths skipped){hint}",
            thousands(n as u64)
        ),
    }
}

/// How the human table of a report looks: its columns follow the action;
/// `padded` fixes every figure's width, so that tables written one after
/// another (`--all`, row by row) line up.
#[derive(Debug, Clone, Copy)]
struct Look {
    action: Action,
    page: u64,
    padded: bool,
}

/// The widest a size cell gets (`1023.9 KiB`), and a percentage (`>99%`).
const SIZE_CHARS: usize = 10;
const PERCENT_CHARS: usize = 4;

impl Look {
    fn with_before(&self) -> bool {
        matches!(self.action, Action::Evict | Action::Warm | Action::Lock)
    }

    fn fit(&self, cell: String, chars: usize) -> String {
        if self.padded {
            format!("{cell:>chars$}")
        } else {
            cell
        }
    }

    /// The table of `rows`, with a total row when `total` is given;
    /// `header`: the column names first.
    fn table(&self, rows: &[&FileReport], total: Option<&Total>, header: bool) -> TextTable {
        let page = self.page;
        let with_before = self.with_before();
        // On a narrow terminal the path is cut at its start (the file name
        // stays), then writeback and dirty are left out.
        let mut columns = vec![Column::number("size")];
        if with_before {
            columns.push(Column::number("before"));
        }
        columns.extend([
            Column::number("cached"),
            Column::number("%"),
            Column::number("dirty").droppable(2),
            Column::number("writeback").droppable(1),
            Column::text("path").cut_start(),
        ]);
        let mut table = TextTable::new(columns);
        if !header {
            table = table.without_header();
        }
        let size = |s: String| self.fit(s, SIZE_CHARS);
        for f in rows {
            let mut row = vec![size(human_bytes(f.size_bytes))];
            if with_before {
                row.push(size(bytes_cell(
                    f.before.as_ref().and_then(|b| cached_bytes(b, page)),
                )));
            }
            row.push(size(bytes_cell(cached_bytes(&f.residency, page))));
            row.push(self.fit(
                match f.residency.cached_pages() {
                    Some(c) => pct_text(c, f.size_bytes.div_ceil(page)),
                    None => "?".into(),
                },
                PERCENT_CHARS,
            ));
            row.push(size(
                bytes_cell(known_opt(&f.residency, page, dirty)).replace("unknown", "-"),
            ));
            row.push(size(
                bytes_cell(known_opt(&f.residency, page, writeback)).replace("unknown", "-"),
            ));
            row.push(display(&f.path));
            table.row(row);
            // The map goes under its file's row.
            if let Some(m) = &f.map_percent
                && !m.is_empty()
            {
                table.line(format!("  [{}]", map_line(m)));
            }
        }
        if let Some(t) = total {
            let mut row = vec![size(human_bytes(t.size_bytes))];
            if with_before {
                row.push(size(human_bytes(t.before_bytes)));
            }
            let unknown = if t.unknown_files > 0 {
                format!(
                    " ({} unknown)",
                    crate::units::count(t.unknown_files, "file", "files")
                )
            } else {
                String::new()
            };
            if t.unknown_files == t.files {
                row.extend([
                    size("unknown".into()),
                    self.fit("?".into(), PERCENT_CHARS),
                    size("-".into()),
                    size("-".into()),
                ]);
            } else {
                row.push(size(human_bytes(t.cached_bytes)));
                row.push(self.fit(pct_text(t.cached_bytes, t.known_size_bytes), PERCENT_CHARS));
                row.push(size(human_bytes(t.dirty_bytes)));
                row.push(size(human_bytes(t.writeback_bytes)));
            }
            row.push(format!(
                "total of {}{unknown}",
                crate::units::count(t.files, "file", "files")
            ));
            table.whole_row(row);
        }
        table
    }

    /// The lines under the table for `rows`: residency unknown, pages that
    /// stayed (a failed lock is an error, on standard error).
    fn notes(&self, rows: &[&FileReport], out: &mut dyn Write) -> io::Result<()> {
        for f in rows {
            if let Residency::Unknown { reason } = &f.residency {
                writeln!(out, "{}: residency unknown: {reason}", display(&f.path))?;
            }
            if let (Some(reason), false) = (&f.stayed_reason, self.action == Action::Lock) {
                let pages = f.residency.cached_pages().unwrap_or(0);
                writeln!(
                    out,
                    "{}: {} pages stayed: {reason}",
                    display(&f.path),
                    thousands(pages)
                )?;
            }
        }
        Ok(())
    }
}

/// Which rows the human report of `tally cache` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shown {
    /// Without `all`: at most this many rows, those with the most cached
    /// (all of them, in the order found, when there are no more).
    pub top: usize,
    /// Every row (`--all`), written as it comes.
    pub all: bool,
}

impl Default for Shown {
    fn default() -> Shown {
        Shown {
            top: DEFAULT_TOP,
            all: false,
        }
    }
}

/// Rows the human report shows without `--all`.
pub const DEFAULT_TOP: usize = 20;

/// Rows written at once with `--all` (each such table's figures padded to
/// fixed widths, so they line up).
const CHUNK_ROWS: usize = 1000;

/// The fields of the JSON document before its files.
#[derive(Debug, Clone, Serialize)]
pub struct Head {
    pub schema_version: u32,
    pub action: Action,
    pub page_size_bytes: u64,
}

/// The fields of the JSON document after its files.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Tail {
    pub total: Total,
    pub problems: Vec<PathProblem>,
}

/// The report of `tally cache` made as the files go by: the files stream
/// out through [`crate::report::Output::stream`] (every one in the machine
/// formats, the top N in human text) and this keeps the rest, so memory
/// does not grow with the files. Every format's text is what
/// [`CacheReport`] gives, but for the human report's top N.
#[derive(Debug, Clone)]
pub struct CacheStream {
    pub head: Head,
    pub tail: Tail,
    pub shown: Shown,
    /// `--lock`: the files not locked, with why, for standard error.
    lock_failures: Vec<String>,
}

impl CacheStream {
    pub fn new(action: Action, page_size_bytes: u64, shown: Shown) -> CacheStream {
        CacheStream {
            head: Head {
                schema_version: crate::report::SCHEMA_VERSION,
                action,
                page_size_bytes,
            },
            tail: Tail::default(),
            shown,
            lock_failures: Vec::new(),
        }
    }

    /// Counts a row in the totals (before it is written).
    pub fn add(&mut self, f: &FileReport) {
        self.tail.total.add(f, self.head.page_size_bytes);
        if self.head.action == Action::Lock
            && let Some(reason) = &f.stayed_reason
        {
            self.lock_failures
                .push(format!("{}: not locked: {reason}", display(&f.path)));
        }
    }

    /// Whether any path was skipped (the command then exits 1).
    pub fn has_problems(&self) -> bool {
        !self.tail.problems.is_empty()
    }

    /// Files `--lock` could not lock.
    pub fn lock_failures(&self) -> usize {
        self.lock_failures.len()
    }

    /// One line per error, for standard error (see
    /// [`CacheReport::diagnostics`]).
    pub fn diagnostics(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .tail
            .problems
            .iter()
            .map(|p| format!("{}: skipped: {}", display(&p.path), p.error))
            .collect();
        lines.extend(self.lock_failures.iter().cloned());
        lines
    }
}

const COLUMNS: [&str; 10] = [
    "path",
    "size_bytes",
    "state",
    "cached_bytes",
    "cached_percent",
    "dirty_bytes",
    "writeback_bytes",
    "before_cached_bytes",
    "read_bytes",
    "note",
];

/// One file's CSV and Markdown cells, in [`COLUMNS`]' order.
fn cells(f: &FileReport, page: u64) -> Vec<String> {
    let opt = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
    let (state, note) = match &f.residency {
        Residency::Known { .. } => ("known", f.stayed_reason.clone()),
        Residency::Unknown { reason } => ("unknown", Some(reason.clone())),
    };
    vec![
        display(&f.path),
        f.size_bytes.to_string(),
        state.into(),
        opt(cached_bytes(&f.residency, page)),
        opt(cached_percent(&f.residency, f.size_bytes, page)),
        opt(known_opt(&f.residency, page, dirty)),
        opt(known_opt(&f.residency, page, writeback)),
        opt(f.before.as_ref().and_then(|b| cached_bytes(b, page))),
        opt(f.read_bytes),
        note.unwrap_or_default(),
    ]
}

/// One CSV and Markdown row per skipped path.
fn problem_rows(problems: &[PathProblem]) -> Vec<Vec<String>> {
    problems
        .iter()
        .map(|p| {
            let mut row = vec![display(&p.path), String::new(), "error".into()];
            row.extend(std::iter::repeat_n(String::new(), 6));
            row.push(p.error.clone());
            row
        })
        .collect()
}

fn families() -> Vec<Metric> {
    use crate::report::prometheus::Unit;
    vec![
        Metric::gauge("tally_cache_size", Unit::Bytes, "size of the file"),
        Metric::gauge(
            "tally_cache_cached",
            Unit::Bytes,
            "bytes of the file in the page cache (files of unknown residency left out)",
        ),
    ]
}

fn samples(f: &FileReport, page: u64) -> [Option<Sample>; 2] {
    let labels = vec![("path".to_string(), display(&f.path))];
    let cached = cached_bytes(&f.residency, page).map(|b| Sample {
        labels: labels.clone(),
        value: b as f64,
    });
    [
        Some(Sample {
            labels,
            value: f.size_bytes as f64,
        }),
        cached,
    ]
}

impl Streamed for CacheStream {
    type Row = FileReport;
    const ROWS: &'static str = "files";

    fn json_head(&self) -> &dyn erased::Serialize {
        &self.head
    }

    fn json_tail(&self) -> &dyn erased::Serialize {
        &self.tail
    }

    fn columns(&self) -> Vec<(&'static str, bool)> {
        COLUMNS
            .iter()
            .map(|c| (*c, !matches!(*c, "path" | "state" | "note")))
            .collect()
    }

    fn cells(&self, row: &FileReport) -> Vec<String> {
        cells(row, self.head.page_size_bytes)
    }

    fn last_rows(&self) -> Vec<Vec<String>> {
        problem_rows(&self.tail.problems)
    }

    fn families(&self) -> Option<Vec<Metric>> {
        Some(families())
    }

    fn samples(&self, row: &FileReport) -> Vec<Option<Sample>> {
        samples(row, self.head.page_size_bytes).into()
    }

    fn human(&self, style: Style) -> Box<dyn HumanRows<CacheStream>> {
        Box::new(HumanCache {
            style,
            look: Look {
                action: self.head.action,
                page: self.head.page_size_bytes,
                padded: self.shown.all,
            },
            shown: self.shown,
            seen: 0,
            kept: Vec::new(),
            ranked: std::collections::BinaryHeap::new(),
            chunks: 0,
            stayed: 0,
        })
    }
}

/// A row the human report may show, ranked by cached pages (then by
/// the order it came in, earlier first).
#[derive(Debug)]
struct Ranked {
    cached_pages: u64,
    order: u64,
    row: FileReport,
}

impl PartialEq for Ranked {
    fn eq(&self, other: &Ranked) -> bool {
        self.cmp(other) == std::cmp::Ordering::Equal
    }
}
impl Eq for Ranked {}
impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Ranked) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Ranked {
    /// Greater is shown first: more cached, then found earlier.
    fn cmp(&self, other: &Ranked) -> std::cmp::Ordering {
        self.cached_pages
            .cmp(&other.cached_pages)
            .then(other.order.cmp(&self.order))
    }
}

/// The human report of a [`CacheStream`]: with `--all` every row, a
/// table of [`CHUNK_ROWS`] at a time; else at most `top` rows, those with
/// the most cached (a bounded heap: memory does not grow with the rows).
struct HumanCache {
    style: Style,
    look: Look,
    shown: Shown,
    seen: u64,
    /// `--all`: the rows of the table being filled.
    kept: Vec<FileReport>,
    /// The `top` rows with the most cached so far, least first out.
    ranked: std::collections::BinaryHeap<std::cmp::Reverse<Ranked>>,
    /// `--all`: tables written so far.
    chunks: u64,
    /// Rows whose pages stayed (evict), shown or not.
    stayed: u64,
}

impl HumanCache {
    fn write_chunk(&mut self, total: Option<&Total>, out: &mut dyn Write) -> io::Result<()> {
        let rows: Vec<&FileReport> = self.kept.iter().collect();
        self.look
            .table(&rows, total, self.chunks == 0)
            .write(out, self.style)?;
        self.look.notes(&rows, out)?;
        self.chunks += 1;
        self.kept.clear();
        Ok(())
    }
}

impl HumanRows<CacheStream> for HumanCache {
    fn row(&mut self, _: &CacheStream, row: &FileReport, out: &mut dyn Write) -> io::Result<()> {
        self.seen += 1;
        if row.stayed_reason.is_some() && self.look.action != Action::Lock {
            self.stayed += 1;
        }
        if self.shown.all {
            self.kept.push(row.clone());
            if self.kept.len() >= CHUNK_ROWS {
                self.write_chunk(None, out)?;
            }
            return Ok(());
        }
        if self.shown.top == 0 {
            return Ok(());
        }
        let candidate = Ranked {
            cached_pages: row.residency.cached_pages().unwrap_or(0),
            order: self.seen,
            row: row.clone(),
        };
        if self.ranked.len() < self.shown.top {
            self.ranked.push(std::cmp::Reverse(candidate));
        } else if self.ranked.peek().is_some_and(|least| candidate > least.0) {
            self.ranked.pop();
            self.ranked.push(std::cmp::Reverse(candidate));
        }
        Ok(())
    }

    fn finish(&mut self, report: &CacheStream, out: &mut dyn Write) -> io::Result<()> {
        let t = &report.tail.total;
        if self.seen == 0 {
            return nothing_found(&report.tail.problems, out);
        }
        let total = (self.seen > 1).then_some(t);
        if self.shown.all {
            return self.write_chunk(total, out);
        }
        let mut ranked: Vec<Ranked> = std::mem::take(&mut self.ranked)
            .into_iter()
            .map(|r| r.0)
            .collect();
        let cut = self.seen > ranked.len() as u64;
        if cut {
            // The most cached first.
            ranked.sort_by(|a, b| b.cmp(a));
        } else {
            ranked.sort_by_key(|r| r.order);
        }
        let rows: Vec<&FileReport> = ranked.iter().map(|r| &r.row).collect();
        self.look.table(&rows, total, true).write(out, self.style)?;
        if cut {
            writeln!(
                out,
                "{} of {} shown, those with the most cached; --all lists every file, --top N \
                 more or fewer",
                thousands(rows.len() as u64),
                crate::units::count(self.seen, "file", "files"),
            )?;
        }
        self.look.notes(&rows, out)?;
        // The notes of the rows not shown, counted.
        let unknown_shown = rows
            .iter()
            .filter(|f| matches!(f.residency, Residency::Unknown { .. }))
            .count() as u64;
        let unknown_unshown = t.unknown_files.saturating_sub(unknown_shown);
        let more = |out: &mut dyn Write, n: u64, what: &str| {
            if n > 0 {
                writeln!(
                    out,
                    "{} more {what}",
                    crate::units::count(n, "file", "files")
                )?;
            }
            Ok::<(), io::Error>(())
        };
        more(
            out,
            unknown_unshown,
            "of unknown residency (--all or --format json lists them)",
        )?;
        let stayed_shown = rows
            .iter()
            .filter(|f| f.stayed_reason.is_some() && self.look.action != Action::Lock)
            .count() as u64;
        more(
            out,
            self.stayed.saturating_sub(stayed_shown),
            "kept pages (--all or --format json lists them, with why)",
        )
    }
}

// The formats CacheReport renders (checked before the command works).
crate::forms_of!(CacheReport: Text, Data, Table, Metrics);

impl Render for CacheReport {
    fn human(&self, out: &mut dyn Write, style: Style) -> io::Result<()> {
        if self.files.is_empty() {
            return nothing_found(&self.problems, out);
        }
        let look = Look {
            action: self.action,
            page: self.page_size_bytes,
            padded: false,
        };
        let rows: Vec<&FileReport> = self.files.iter().collect();
        let total = (self.files.len() > 1).then_some(&self.total);
        look.table(&rows, total, true).write(out, style)?;
        look.notes(&rows, out)
    }

    fn table(&self) -> Table {
        let page = self.page_size_bytes;
        let mut rows: Vec<Vec<String>> = self.files.iter().map(|f| cells(f, page)).collect();
        rows.extend(problem_rows(&self.problems));
        Table {
            headers: COLUMNS.map(String::from).to_vec(),
            rows,
        }
    }

    fn metrics(&self) -> Option<Vec<Metric>> {
        let page = self.page_size_bytes;
        let mut families = families();
        for f in &self.files {
            for (family, sample) in families.iter_mut().zip(samples(f, page)) {
                if let Some(s) = sample {
                    family.push(s.labels, s.value);
                }
            }
        }
        Some(families)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pagecache::Method;

    fn report() -> CacheReport {
        let mut r = CacheReport {
            schema_version: 1,
            action: Action::Status,
            page_size_bytes: 4096,
            files: vec![
                FileReport {
                    path: "/a".into(),
                    size_bytes: 8192,
                    residency: Residency::Known {
                        method: Method::Cachestat,
                        cached_pages: 1,
                        dirty_pages: Some(1),
                        writeback_pages: Some(0),
                    },
                    before: None,
                    stayed_reason: None,
                    read_bytes: None,
                    map_percent: Some(vec![100, 0]),
                },
                FileReport {
                    path: "/b".into(),
                    size_bytes: 4096,
                    residency: Residency::Unknown {
                        reason: "EPERM".into(),
                    },
                    before: None,
                    stayed_reason: None,
                    read_bytes: None,
                    map_percent: None,
                },
            ],
            total: Total::default(),
            problems: vec![PathProblem::new(Path::new("/c"), "gone".into())],
        };
        r.total_up();
        r
    }

    #[test]
    fn totals_leave_unknown_files_out() {
        let r = report();
        assert_eq!(r.total.files, 2);
        assert_eq!(r.total.size_bytes, 12288);
        assert_eq!(r.total.cached_bytes, 4096);
        assert_eq!(r.total.known_size_bytes, 8192);
        assert_eq!(r.total.dirty_bytes, 4096);
        assert_eq!(r.total.unknown_files, 1);
        assert!(r.has_problems());
    }

    #[test]
    fn human_fits_a_narrow_terminal_keeping_file_names_and_totals() {
        let mut r = report();
        r.files[0].path = "/var/lib/a/long/directory/of/data/file-a.dat".into();
        let mut out = Vec::new();
        let style = Style {
            color: false,
            width: Some(44),
        };
        r.human(&mut out, style).expect("render");
        let text = String::from_utf8(out).expect("utf8");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0].split_whitespace().collect::<Vec<_>>(),
            ["size", "cached", "%", "path"]
        );
        assert!(lines[1].ends_with("…/of/data/file-a.dat"), "{text}");
        assert!(lines[1].chars().count() <= 44, "{text}");
        assert_eq!(lines[2], "  [# ]");
        assert!(
            text.contains("  total of 2 files (1 file unknown)\n"),
            "{text}"
        );
    }

    #[test]
    fn human_says_unknown_never_a_percentage() {
        let r = report();
        let mut out = Vec::new();
        r.human(&mut out, Style::default()).expect("render");
        let text = String::from_utf8(out).expect("utf8");
        let b_line = text
            .lines()
            .find(|l| l.ends_with("/b"))
            .expect("row for /b");
        assert!(b_line.contains("unknown"), "{b_line}");
        assert!(!b_line.contains("100%"), "{b_line}");
        assert!(text.contains("  [# ]"), "{text}");
        assert!(text.contains("total of 2 files (1 file unknown)"));
        // A skipped path is an error, for standard error, not the report.
        assert!(!text.contains("skipped"), "{text}");
        assert_eq!(r.diagnostics(), ["/c: skipped: gone"]);
    }

    #[test]
    fn names_cannot_break_lines_or_reach_the_terminal_raw() {
        use std::ffi::OsStr;
        use std::os::unix::ffi::OsStrExt;
        let mut r = report();
        r.files[0].path = PathBuf::from(OsStr::from_bytes(b"/a\x1b[31mred\nline\xe9"));
        r.problems[0].path = PathBuf::from(OsStr::from_bytes(b"/c\x1b]0;t\x07"));
        let mut out = Vec::new();
        r.human(&mut out, Style::default()).expect("render");
        assert!(!out.contains(&0x1b), "raw escape in the report");
        let text = String::from_utf8(out).expect("utf8");
        assert!(text.contains("/a\\x1b[31mred\\x0aline\\xe9"), "{text}");
        // Header, two files, total, the unknown note: no line was split.
        assert_eq!(text.lines().count(), 6, "{text}");
        let diag = r.diagnostics().join("\n");
        assert!(
            !diag.contains('\u{1b}') && !diag.contains('\u{7}'),
            "{diag}"
        );
        let t = r.table();
        assert!(
            t.rows
                .iter()
                .flatten()
                .all(|c| !c.contains(['\n', '\u{1b}']))
        );
        let json = serde_json::to_value(&r).expect("json");
        assert_eq!(
            json["files"][0]["path"]["bytes_hex"],
            "2f611b5b33316d7265640a6c696e65e9"
        );
    }

    #[test]
    fn an_empty_listing_says_so_instead_of_a_bare_header() {
        let mut r = report();
        r.files.clear();
        r.total_up();
        let mut out = Vec::new();
        r.human(&mut out, Style::default()).expect("render");
        assert_eq!(
            String::from_utf8_lossy(&out),
            "no regular files found (1 path skipped)\n"
        );
        r.problems.clear();
        let mut out = Vec::new();
        r.human(&mut out, Style::default()).expect("render");
        assert_eq!(String::from_utf8_lossy(&out), "no regular files found\n");
    }

    #[test]
    fn failed_locks_are_errors_not_report_lines() {
        let mut r = report();
        r.action = Action::Lock;
        r.files[0].stayed_reason = Some("mlock failed: ENOMEM".into());
        let mut out = Vec::new();
        r.human(&mut out, Style::default()).expect("render");
        let text = String::from_utf8(out).expect("utf8");
        assert!(!text.contains("mlock failed"), "{text}");
        assert_eq!(r.lock_failures().count(), 1);
        assert!(
            r.diagnostics()
                .contains(&"/a: not locked: mlock failed: ENOMEM".to_string())
        );
    }

    #[test]
    fn table_has_a_row_per_file_and_problem() {
        let t = report().table();
        assert_eq!(t.rows.len(), 3);
        assert!(t.rows.iter().all(|r| r.len() == t.headers.len()));
        assert_eq!(t.rows[1][2], "unknown");
        assert_eq!(t.rows[1][3], "");
    }

    #[test]
    fn small_shares_do_not_round_to_nothing() {
        assert_eq!(pct_text(1, 1_000_000), "<1%");
        assert_eq!(pct_text(999_999, 1_000_000), ">99%");
        assert_eq!(pct_text(5, 10), "50%");
        assert_eq!(pct_text(0, 0), "-");
    }

    #[test]
    fn map_characters_grow_with_residency() {
        assert_eq!(map_line(&[0, 10, 30, 60, 90, 100]), " .:oO#");
    }

    /// Streams `r`'s files through every format into files, as `tally
    /// cache` does, and returns each format's text.
    fn streamed(r: &CacheReport, shown: Shown) -> Vec<(crate::report::Format, String)> {
        use crate::report::{Export, Format, Output, Request};
        let dir = tempfile::tempdir().expect("tempdir");
        let formats = [
            Format::HUMAN,
            Format::JSON,
            Format::CSV,
            Format::MARKDOWN,
            Format::PROMETHEUS,
        ];
        let path = |f: Format| dir.path().join(f.name());
        let request = Request {
            format: Format::HUMAN,
            output: Some(path(Format::HUMAN)),
            exports: formats[1..]
                .iter()
                .map(|f| Export {
                    format: *f,
                    path: path(*f),
                    flag: "--export",
                })
                .collect(),
            append: false,
        };
        let output = Output::open::<CacheReport>(&request, "cache", None).expect("open");
        let mut stream_report = CacheStream::new(r.action, r.page_size_bytes, shown);
        let mut stream = output.stream();
        for f in &r.files {
            stream_report.add(f);
            stream.row(&stream_report, f);
        }
        stream_report.tail.problems = r.problems.clone();
        let failed = stream.finish(&stream_report);
        assert!(failed.is_empty(), "{failed:?}");
        formats
            .iter()
            .map(|f| (*f, std::fs::read_to_string(path(*f)).expect("read")))
            .collect()
    }

    #[test]
    fn streamed_formats_match_the_whole_report() {
        use crate::report::{Format, render};
        let mut r = report();
        r.schema_version = crate::report::SCHEMA_VERSION;
        for (format, text) in streamed(&r, Shown::default()) {
            let mut whole = Vec::new();
            render(&r, format, Style::PLAIN, &mut whole).expect("render");
            let whole = String::from_utf8(whole).expect("utf8");
            if format == Format::MARKDOWN {
                // Declared alignment: the note column is text.
                assert_eq!(
                    text.lines().skip(2).collect::<Vec<_>>(),
                    whole.lines().skip(2).collect::<Vec<_>>()
                );
                assert!(
                    text.lines().nth(1).is_some_and(|l| l.ends_with("|---|")),
                    "{text}"
                );
            } else {
                assert_eq!(text, whole, "{format}");
            }
        }
        // No files: the JSON array is empty, the document whole.
        let mut none = report();
        none.schema_version = crate::report::SCHEMA_VERSION;
        none.files.clear();
        none.total_up();
        for (format, text) in streamed(&none, Shown::default()) {
            if format == Format::JSON || format == Format::CSV || format == Format::HUMAN {
                let mut whole = Vec::new();
                render(&none, format, Style::PLAIN, &mut whole).expect("render");
                assert_eq!(text, String::from_utf8(whole).expect("utf8"), "{format}");
            }
        }
    }

    fn file(n: u64, cached_pages: u64) -> FileReport {
        FileReport {
            path: format!("/tree/d{:03}/f{:04}", n / 1000, n % 1000).into(),
            size_bytes: 4096 * 4,
            residency: Residency::Known {
                method: Method::Cachestat,
                cached_pages,
                dirty_pages: Some(0),
                writeback_pages: Some(0),
            },
            before: None,
            stayed_reason: None,
            read_bytes: None,
            map_percent: None,
        }
    }

    #[test]
    fn human_report_of_100000_files_holds_at_most_the_top_rows() {
        let stream = CacheStream::new(Action::Status, 4096, Shown::default());
        let mut human = HumanCache {
            style: Style::PLAIN,
            look: Look {
                action: Action::Status,
                page: 4096,
                padded: false,
            },
            shown: Shown::default(),
            seen: 0,
            kept: Vec::new(),
            ranked: std::collections::BinaryHeap::new(),
            chunks: 0,
            stayed: 0,
        };
        let mut out = Vec::new();
        let mut most = 0;
        let mut report = stream.clone();
        for n in 0..100_000u64 {
            let f = file(n, n % 5);
            report.add(&f);
            human.row(&report, &f, &mut out).expect("row");
            most = most.max(human.ranked.len() + human.kept.len());
        }
        assert_eq!(most, DEFAULT_TOP, "rows held at once");
        assert!(out.is_empty(), "nothing written before the end");
        human.finish(&report, &mut out).expect("finish");
        let text = String::from_utf8(out).expect("utf8");
        let lines: Vec<&str> = text.lines().collect();
        // Header, the top 20, the total, the line saying so.
        assert_eq!(lines.len(), 1 + DEFAULT_TOP + 2, "{text}");
        assert!(
            lines[DEFAULT_TOP + 1].contains("total of 100,000 files"),
            "{text}"
        );
        assert!(
            lines[DEFAULT_TOP + 2].starts_with("20 of 100,000 files shown"),
            "{text}"
        );
        // The most cached (4 pages), earliest found first.
        assert!(lines[1].ends_with("/tree/d000/f0004"), "{text}");
        assert!(lines[2].ends_with("/tree/d000/f0009"), "{text}");

        // --all: every row, a table at a time, the figures lined up.
        let all = Shown {
            top: DEFAULT_TOP,
            all: true,
        };
        let mut report = CacheStream::new(Action::Status, 4096, all);
        let mut human = report.human(Style::PLAIN);
        let mut out = Vec::new();
        for n in 0..2_500u64 {
            let f = file(n, n % 5);
            report.add(&f);
            human.row(&report, &f, &mut out).expect("row");
        }
        // Two tables of 1,000 went out as they filled.
        assert_eq!(String::from_utf8_lossy(&out).lines().count(), 2_001);
        human.finish(&report, &mut out).expect("finish");
        let text = String::from_utf8(out).expect("utf8");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1 + 2_500 + 1);
        let at = |l: &str| l.find("/tree/").expect("a path");
        assert!(
            lines[1..2_501].iter().all(|l| at(l) == at(lines[1])),
            "misaligned"
        );
    }

    #[test]
    fn every_format_snapshot() {
        use crate::report::{Format, render};
        let r = report();
        for (name, format) in [
            ("human", Format::HUMAN),
            ("json", Format::JSON),
            ("csv", Format::CSV),
            ("markdown", Format::MARKDOWN),
        ] {
            let mut out = Vec::new();
            render(&r, format, Style::default(), &mut out).expect("render");
            let text = String::from_utf8(out).expect("utf8");
            insta::assert_snapshot!(name, text);
        }
    }
}
