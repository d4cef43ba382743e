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
//! (see [`crate::report::path`]). In human text, CSV, Markdown and
//! Prometheus labels, a path is escaped as every name
//! ([`crate::report::escape_name`]: `\\`, `\x0a`, `\x1b`, `\xe9`), so a
//! file name can neither break a line, nor reach the terminal as an escape
//! sequence, nor pass for another name.
//!
//! Skipped paths and files that could not be locked are errors: the human
//! report leaves them out, and [`CacheReport::diagnostics`] gives the lines
//! that belong on standard error.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::pagecache::Residency;
use crate::report::path::display;
use crate::report::{Metric, Render, Style, Table};
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
    #[serde(serialize_with = "crate::report::path::serialize")]
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
    #[serde(serialize_with = "crate::report::path::serialize")]
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

impl CacheReport {
    /// Fills `total` from `files`.
    pub fn total_up(&mut self) {
        let page = self.page_size_bytes;
        let mut t = Total::default();
        for f in &self.files {
            t.files += 1;
            t.size_bytes = t.size_bytes.saturating_add(f.size_bytes);
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

// The formats CacheReport renders (checked before the command works).
crate::formats_of!(CacheReport: HUMAN, JSON, CSV, MARKDOWN, PROMETHEUS, );

impl Render for CacheReport {
    fn human(&self, out: &mut dyn Write, style: Style) -> io::Result<()> {
        if self.files.is_empty() {
            // No table without rows: say so (the skipped paths, if any,
            // are on standard error).
            return match self.problems.len() {
                0 => writeln!(out, "no regular files found"),
                1 => writeln!(out, "no regular files found (1 path skipped)"),
                n => writeln!(
                    out,
                    "no regular files found ({} paths skipped)",
                    thousands(n as u64)
                ),
            };
        }
        let page = self.page_size_bytes;
        let with_before = matches!(self.action, Action::Evict | Action::Warm | Action::Lock);
        use crate::report::text::{Column, TextTable};
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
        for f in &self.files {
            let mut row = vec![human_bytes(f.size_bytes)];
            if with_before {
                row.push(bytes_cell(
                    f.before.as_ref().and_then(|b| cached_bytes(b, page)),
                ));
            }
            row.push(bytes_cell(cached_bytes(&f.residency, page)));
            row.push(match f.residency.cached_pages() {
                Some(c) => pct_text(c, f.size_bytes.div_ceil(page)),
                None => "?".into(),
            });
            row.push(bytes_cell(known_opt(&f.residency, page, dirty)).replace("unknown", "-"));
            row.push(bytes_cell(known_opt(&f.residency, page, writeback)).replace("unknown", "-"));
            row.push(display(&f.path));
            table.row(row);
            // The map goes under its file's row.
            if let Some(m) = &f.map_percent
                && !m.is_empty()
            {
                table.line(format!("  [{}]", map_line(m)));
            }
        }
        if self.files.len() > 1 {
            let t = &self.total;
            let mut row = vec![human_bytes(t.size_bytes)];
            if with_before {
                let before: u64 = self
                    .files
                    .iter()
                    .filter_map(|f| f.before.as_ref().and_then(|b| cached_bytes(b, page)))
                    .fold(0u64, |a, b| a.saturating_add(b));
                row.push(human_bytes(before));
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
                row.extend(["unknown", "?", "-", "-"].map(String::from));
            } else {
                row.push(human_bytes(t.cached_bytes));
                row.push(pct_text(t.cached_bytes, t.known_size_bytes));
                row.push(human_bytes(t.dirty_bytes));
                row.push(human_bytes(t.writeback_bytes));
            }
            row.push(format!(
                "total of {}{unknown}",
                crate::units::count(t.files, "file", "files")
            ));
            table.whole_row(row);
        }
        table.write(out, style)?;
        for f in &self.files {
            if let Residency::Unknown { reason } = &f.residency {
                writeln!(out, "{}: residency unknown: {reason}", display(&f.path))?;
            }
            // A failed lock is an error: on standard error (diagnostics).
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

    fn table(&self) -> Table {
        let page = self.page_size_bytes;
        let headers = [
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
        ]
        .map(String::from)
        .to_vec();
        let opt = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
        let mut rows: Vec<Vec<String>> = self
            .files
            .iter()
            .map(|f| {
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
            })
            .collect();
        for p in &self.problems {
            let mut row = vec![display(&p.path), String::new(), "error".into()];
            row.extend(std::iter::repeat_n(String::new(), 6));
            row.push(p.error.clone());
            rows.push(row);
        }
        Table { headers, rows }
    }

    fn metrics(&self) -> Option<Vec<Metric>> {
        use crate::report::prometheus::Unit;
        let page = self.page_size_bytes;
        let path = |f: &FileReport| vec![("path".to_string(), display(&f.path))];
        let mut size = Metric::gauge("tally_cache_size", Unit::Bytes, "size of the file");
        let mut cached = Metric::gauge(
            "tally_cache_cached",
            Unit::Bytes,
            "bytes of the file in the page cache (files of unknown residency left out)",
        );
        for f in &self.files {
            size.push(path(f), f.size_bytes as f64);
            if let Some(b) = cached_bytes(&f.residency, page) {
                cached.push(path(f), b as f64);
            }
        }
        Some(vec![size, cached])
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
