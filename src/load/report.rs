//! The report of `tally load`, and its HTML plot.
//!
//! JSON schema (`schema_version` 2), keys carry their unit:
//! - `file` (a string, or `{"lossy", "bytes_hex"}` for a name that is not
//!   UTF-8: see [`crate::text::path`]), `size_bytes`, `touch` (`none`,
//!   `page`, `all`), `runs_per_method`, `checksums_agree` (`null` when no
//!   checksum was taken: `--touch none`, or no load finished),
//!   `warnings[]`.
//! - `results[]`, one per method and mode: `method`, `mode` (`cold` or
//!   `warm`), `runs` (successful), and medians over them: `wall_us`,
//!   `user_us`, `system_us`, `max_rss_bytes`, `minor_faults`,
//!   `major_faults`, `block_input_ops` (512-byte units),
//!   `storage_read_bytes` (/proc/PID/io), `resident_after_pages` (the
//!   file's pages cached after the load), `cached_before_bytes` (cold: what
//!   eviction could not remove), `bytes_loaded`; `checksums[]` (distinct
//!   checksums seen: one when runs agree); `error` when no run worked;
//!   `invalid` when the file changed during one of its loads, or before
//!   one (then not run): the figures are of the loads before the change
//!   only, and the report as a whole failed.
//! - `file_changed`: how the file changed (`null` when it did not): its
//!   size, its modification time, or another file in its place.
//!   Absent figures are `null`, never 0.

use std::io::{self, Write};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::checksum::{self, Checked};
use super::{Method, Mode, Touch};
use crate::report::{Render, Style, Table};
use crate::text::path::display;
use crate::units::{human_bytes, percent, thousands};

/// One method in one mode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MethodResult {
    pub method: Method,
    pub mode: Mode,
    pub runs: u32,
    pub wall_us: Option<u64>,
    pub user_us: Option<u64>,
    pub system_us: Option<u64>,
    pub max_rss_bytes: Option<u64>,
    pub minor_faults: Option<u64>,
    pub major_faults: Option<u64>,
    pub block_input_ops: Option<u64>,
    pub storage_read_bytes: Option<u64>,
    pub resident_after_pages: Option<u64>,
    pub cached_before_bytes: Option<u64>,
    pub bytes_loaded: Option<u64>,
    pub checksums: Vec<String>,
    pub error: Option<String>,
    /// Why its loads do not count: the file changed (see [`super::identity`]).
    #[serde(default)]
    pub invalid: Option<String>,
}

impl MethodResult {
    /// A method and mode not loaded, for `why` (the file changed).
    pub fn invalid(method: Method, mode: Mode, why: String) -> MethodResult {
        MethodResult {
            method,
            mode,
            runs: 0,
            wall_us: None,
            user_us: None,
            system_us: None,
            max_rss_bytes: None,
            minor_faults: None,
            major_faults: None,
            block_input_ops: None,
            storage_read_bytes: None,
            resident_after_pages: None,
            cached_before_bytes: None,
            bytes_loaded: None,
            checksums: Vec::new(),
            error: None,
            invalid: Some(why),
        }
    }

    pub fn cpu_us(&self) -> Option<u64> {
        Some(self.user_us?.saturating_add(self.system_us?))
    }
}

/// A report of `tally load`: the file, how its data was touched, what
/// was loaded (`B`: [`Methods`], each method one process at a time, or
/// [`super::procs_report::Procs`], N processes at once), whether the
/// checksums agree, how the file changed, and the warnings. Both reports
/// are checked, judged and closed in the same words through this one
/// core; the JSON keys of `B` stand between `touch` and `checksums_agree`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoadReport<B = Methods> {
    pub schema_version: u32,
    #[serde(serialize_with = "crate::text::path::serialize")]
    pub file: PathBuf,
    pub size_bytes: u64,
    pub touch: Touch,
    #[serde(flatten)]
    pub loads: B,
    /// `None` when no checksum was taken, so there was nothing to compare.
    pub checksums_agree: Option<bool>,
    /// How the file changed during the loads; `None` when it did not.
    #[serde(default)]
    pub file_changed: Option<String>,
    pub warnings: Vec<String>,
}

/// Each method in turn, `runs_per_method` times in each mode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Methods {
    pub runs_per_method: u32,
    pub results: Vec<MethodResult>,
}

/// What a report's loads tell its core: the loads whose checksums are
/// compared, how many were taken, and whether any load worked.
pub trait Loads {
    /// What the checksums taken count, in the verdict ("loads").
    const COUNTED: &'static str;
    /// The loads whose checksums are compared, each with its label.
    fn checked(&self) -> Vec<Checked<'_>>;
    /// How many checksums were taken.
    fn checksums_taken(&self) -> u64;
    /// Whether no load worked at all.
    fn none_worked(&self) -> bool;
    /// Sets the figures that compare one load with another, before the
    /// checksums are checked.
    fn relate(&mut self) {}
}

impl Loads for Methods {
    const COUNTED: &'static str = "loads";

    fn checked(&self) -> Vec<Checked<'_>> {
        self.results
            .iter()
            .map(|r| Checked {
                label: format!("{} {}", r.method.name(), r.mode.name()),
                checksums: &r.checksums,
                mode: r.mode,
                cached_before_bytes: r.cached_before_bytes,
            })
            .collect()
    }

    /// Loads that took a checksum.
    fn checksums_taken(&self) -> u64 {
        self.results
            .iter()
            .filter(|r| !r.checksums.is_empty())
            .map(|r| u64::from(r.runs))
            .sum()
    }

    /// A method this filesystem cannot do (O_DIRECT on tmpfs) is
    /// unavailable, not a failure; no method working at all is one.
    fn none_worked(&self) -> bool {
        self.results.iter().all(|r| r.error.is_some())
    }
}

impl<B: Loads> LoadReport<B> {
    /// The report of `loads` of `file`, checked; `changed` says how the
    /// file changed, if it did.
    pub fn new(
        file: PathBuf,
        size_bytes: u64,
        touch: Touch,
        loads: B,
        changed: Option<String>,
    ) -> Self {
        let mut report = LoadReport {
            schema_version: crate::report::SCHEMA_VERSION,
            file,
            size_bytes,
            touch,
            loads,
            checksums_agree: None,
            file_changed: changed.map(|why| format!("the file changed: {why}")),
            warnings: Vec::new(),
        };
        report.check();
        report
    }

    /// Sets what compares the loads, `checksums_agree` and the warnings.
    pub fn check(&mut self) {
        self.loads.relate();
        let (agree, warnings) = checksum::check(&self.loads.checked());
        self.checksums_agree = agree;
        self.warnings.extend(warnings);
    }

    /// Whether no checksums differ and the file did not change.
    pub fn ok(&self) -> bool {
        self.checksums_agree != Some(false) && self.file_changed.is_none()
    }

    /// What the checksums say, in a few words for people.
    pub fn checksum_verdict(&self) -> String {
        checksum::verdict(
            self.checksums_agree,
            self.loads.checksums_taken(),
            self.touch,
            B::COUNTED,
        )
    }

    /// The exit code: 1 for loads that disagree, a file that changed, or
    /// no load that worked.
    pub fn exit_code(&self) -> u8 {
        u8::from(!self.ok() || self.loads.none_worked())
    }

    /// The start of the first line of the human text: `tally load: FILE
    /// (SIZE), how the data was touched`.
    pub fn heading(&self) -> String {
        let touch = match self.touch {
            Touch::All => "checksum over every byte",
            Touch::Page => "one byte per page",
            Touch::None => "data not touched",
        };
        format!(
            "tally load: {} ({}), {touch}",
            display(&self.file),
            human_bytes(self.size_bytes)
        )
    }

    /// The last lines of the human text: the checksums' verdict, how the
    /// file changed, the warnings.
    pub fn write_verdicts(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "{}", self.checksum_verdict())?;
        if let Some(why) = &self.file_changed {
            writeln!(
                out,
                "invalid: {why}; the loads from then on do not count: rerun on a file nothing \
                 writes to"
            )?;
        }
        for w in &self.warnings {
            writeln!(out, "warning: {w}")?;
        }
        Ok(())
    }
}

fn opt(v: Option<u64>) -> String {
    v.map(thousands).unwrap_or_else(|| "-".into())
}

/// Microseconds in the command line's time unit, or `-`.
fn time(us: Option<u64>) -> String {
    us.map(|us| crate::units::time_ns(us as f64 * 1e3))
        .unwrap_or_else(|| "-".into())
}

// The formats LoadReport renders (checked before the command works).
crate::forms_of!(LoadReport: Text, Data, Table, Page);

impl Render for LoadReport {
    fn html(&self, out: &mut dyn Write) -> Option<io::Result<()>> {
        Some(write_html(self, out))
    }

    fn human(&self, out: &mut dyn Write, style: Style) -> io::Result<()> {
        use crate::report::text::{Column, TextTable};
        let runs = self.loads.runs_per_method;
        writeln!(
            out,
            "{}, median of {runs} run{}",
            self.heading(),
            if runs == 1 { "" } else { "s" }
        )?;
        // On a narrow terminal the least telling figures go first: block
        // in, minor faults, peak RSS, kernel share, cpu time.
        let mut table = TextTable::new(vec![
            Column::text("mode"),
            Column::text("method"),
            Column::number("wall"),
            Column::number("cpu").droppable(5),
            Column::number("kernel").droppable(4),
            Column::number("peak RSS").droppable(3),
            Column::number("minor flt").droppable(2),
            Column::number("major flt"),
            Column::number("block in").droppable(1),
            Column::number("storage read"),
            Column::number("cached after"),
            Column::number("checksum"),
        ]);
        let page = crate::sys::page_size();
        let pages = self.size_bytes.div_ceil(page);
        for r in &self.loads.results {
            let mode = r.mode.name();
            if let Some(why) = &r.invalid {
                table.span(
                    vec![mode.into(), r.method.name().into()],
                    format!("invalid: {why}"),
                );
                continue;
            }
            if let Some(e) = &r.error {
                table.span(
                    vec![mode.into(), r.method.name().into()],
                    format!("unavailable: {e}"),
                );
                continue;
            }
            let kernel = match (r.system_us, r.cpu_us()) {
                (Some(s), Some(c)) => percent(s, c)
                    .map(|p| format!("{p}%"))
                    .unwrap_or_else(|| "-".into()),
                _ => "-".into(),
            };
            let cached = r
                .resident_after_pages
                .map(|p| {
                    format!(
                        "{}%",
                        percent(p, pages).unwrap_or(if p == 0 { 0 } else { 100 })
                    )
                })
                .unwrap_or_else(|| "unknown".into());
            let sum = match r.checksums.as_slice() {
                [] => "-".to_string(),
                [one] => one.chars().take(8).collect(),
                _ => "DIFFER".to_string(),
            };
            table.row(vec![
                mode.into(),
                r.method.name().into(),
                time(r.wall_us),
                time(r.cpu_us()),
                kernel,
                r.max_rss_bytes
                    .map(human_bytes)
                    .unwrap_or_else(|| "-".into()),
                opt(r.minor_faults),
                opt(r.major_faults),
                opt(r.block_input_ops),
                r.storage_read_bytes
                    .map(human_bytes)
                    .unwrap_or_else(|| "unavailable".into()),
                cached,
                sum,
            ]);
        }
        table.write(out, style)?;
        self.write_verdicts(out)
    }

    fn table(&self) -> Table {
        let headers = [
            "mode",
            "method",
            "runs",
            "wall_us",
            "user_us",
            "system_us",
            "max_rss_bytes",
            "minor_faults",
            "major_faults",
            "block_input_ops",
            "storage_read_bytes",
            "resident_after_pages",
            "checksum",
            "error",
            "invalid",
        ]
        .map(String::from)
        .to_vec();
        let o = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
        let rows = self
            .loads
            .results
            .iter()
            .map(|r| {
                vec![
                    r.mode.name().to_string(),
                    r.method.name().into(),
                    r.runs.to_string(),
                    o(r.wall_us),
                    o(r.user_us),
                    o(r.system_us),
                    o(r.max_rss_bytes),
                    o(r.minor_faults),
                    o(r.major_faults),
                    o(r.block_input_ops),
                    o(r.storage_read_bytes),
                    o(r.resident_after_pages),
                    r.checksums.join("/"),
                    r.error.clone().unwrap_or_default(),
                    r.invalid.clone().unwrap_or_default(),
                ]
            })
            .collect();
        Table { headers, rows }
    }
}

/// A self-contained HTML page (the plot kit's bars and page): per mode, a
/// bar per method for its wall time, with its peak RSS in the label. Each
/// mode's chart in its own time unit; one colour per mode, said in the
/// legend.
pub fn write_html(r: &LoadReport, out: &mut dyn Write) -> io::Result<()> {
    use crate::report::html::{esc, page};
    use crate::report::svg::{BarChart, BarRow, bar_chart, time_scale};
    let mut body = format!(
        "<h2>tally load: {} ({})</h2><p>Wall time per method, median of {} run(s). {}.</p>",
        esc(&display(&r.file)),
        human_bytes(r.size_bytes),
        r.loads.runs_per_method,
        esc(&r.checksum_verdict())
    );
    if let Some(why) = &r.file_changed {
        body.push_str(&format!("<p><strong>invalid: {}</strong></p>", esc(why)));
    }
    for (key, mode) in [Mode::Cold, Mode::Warm].into_iter().enumerate() {
        let results: Vec<&MethodResult> =
            r.loads.results.iter().filter(|x| x.mode == mode).collect();
        if results.is_empty() {
            continue;
        }
        let max_ns = results
            .iter()
            .filter_map(|x| x.wall_us)
            .map(|us| us as f64 * 1e3)
            .fold(0.0f64, f64::max);
        let scale = time_scale(max_ns);
        let rows = results
            .iter()
            .map(|x| BarRow {
                label: match x.max_rss_bytes {
                    Some(rss) => format!("{} (RSS {})", x.method.name(), human_bytes(rss)),
                    None => x.method.name().to_string(),
                },
                value: x.wall_us.map(|us| us as f64 * 1e3 / scale.divisor),
                spread: None,
                key,
                missing: if x.invalid.is_some() {
                    "invalid".into()
                } else {
                    "unavailable".into()
                },
            })
            .collect();
        let title = format!("{} load, wall time", mode.name());
        let axis = format!("wall time, median ({})", scale.unit);
        let keys = vec![(
            key,
            match mode {
                Mode::Cold => "cold: the file evicted from the page cache first",
                Mode::Warm => "warm: the file in the page cache",
            }
            .to_string(),
        )];
        body.push_str(&bar_chart(&BarChart {
            title: &title,
            axis: &axis,
            unit: scale.unit,
            rows,
            keys,
            whisker: None,
        }));
    }
    out.write_all(page(&format!("tally load {}", display(&r.file)), &body).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(method: Method, mode: Mode, sum: &str) -> MethodResult {
        MethodResult {
            method,
            mode,
            runs: 1,
            wall_us: Some(1000),
            user_us: Some(100),
            system_us: Some(300),
            max_rss_bytes: Some(4 << 20),
            minor_faults: Some(10),
            major_faults: Some(0),
            block_input_ops: Some(0),
            storage_read_bytes: None,
            resident_after_pages: Some(256),
            cached_before_bytes: None,
            bytes_loaded: Some(1 << 20),
            checksums: vec![sum.into()],
            error: None,
            invalid: None,
        }
    }

    fn report(sums: [&str; 2]) -> LoadReport {
        let mut r = LoadReport {
            schema_version: 1,
            file: "/f".into(),
            size_bytes: 1 << 20,
            touch: Touch::All,
            loads: Methods {
                runs_per_method: 1,
                results: vec![
                    result(Method::Read, Mode::Cold, sums[0]),
                    result(Method::Mmap, Mode::Warm, sums[1]),
                ],
            },
            checksums_agree: None,
            file_changed: None,
            warnings: vec![],
        };
        r.check();
        r
    }

    #[test]
    fn a_changed_file_is_invalid_in_every_format() {
        let mut r = report(["aa", "aa"]);
        r.loads.results[1] = MethodResult::invalid(
            Method::Mmap,
            Mode::Warm,
            "not run: the file changed during an earlier load".into(),
        );
        r.loads.results[0].invalid = Some("the file changed during this load: it shrank".into());
        r.file_changed = Some("the file changed: it shrank".into());
        assert!(!r.ok(), "a changed file fails the command");
        let mut out = Vec::new();
        r.human(&mut out, Style::default()).expect("render");
        let text = String::from_utf8(out).expect("utf8");
        assert!(
            text.contains("cold  read    invalid: the file changed during this load"),
            "{text}"
        );
        assert!(
            text.contains("warm  mmap    invalid: not run: the file changed"),
            "{text}"
        );
        assert!(
            text.contains("\ninvalid: the file changed: it shrank;"),
            "{text}"
        );
        let t = r.table();
        let col = t
            .headers
            .iter()
            .position(|h| h == "invalid")
            .expect("column");
        assert!(
            t.rows
                .iter()
                .all(|row| row[col].contains("the file changed"))
        );
        let json = serde_json::to_value(&r).expect("json");
        assert_eq!(json["file_changed"], "the file changed: it shrank");
        assert_eq!(json["results"][1]["runs"], 0);
        let mut html = Vec::new();
        write_html(&r, &mut html).expect("html");
        assert!(String::from_utf8_lossy(&html).contains("invalid: the file changed"));
    }

    #[test]
    fn differing_checksums_are_flagged() {
        assert!(report(["aa", "aa"]).ok());
        let bad = report(["aa", "bb"]);
        assert!(!bad.ok());
        assert_eq!(bad.warnings.len(), 1);
    }

    #[test]
    fn agreement_is_never_claimed_without_a_checksum() {
        let mut r = report(["aa", "aa"]);
        assert_eq!(r.checksums_agree, Some(true));
        assert_eq!(r.checksum_verdict(), "checksums agree (2 loads)");
        // --touch none: no method took a checksum.
        for m in &mut r.loads.results {
            m.checksums.clear();
        }
        r.touch = Touch::None;
        r.check();
        assert_eq!(r.checksums_agree, None);
        assert!(r.ok());
        let mut out = Vec::new();
        r.human(&mut out, Style::default()).expect("render");
        let text = String::from_utf8(out).expect("utf8");
        assert!(!text.contains("agree"), "{text}");
        assert!(text.contains("no checksum taken (--touch none)"), "{text}");
        let mut html = Vec::new();
        write_html(&r, &mut html).expect("html");
        assert!(!String::from_utf8_lossy(&html).contains("agree"));
        let json = serde_json::to_value(&r).expect("json");
        assert!(json["checksums_agree"].is_null());
        // Every load failed.
        r.touch = Touch::All;
        for m in &mut r.loads.results {
            m.error = Some("killed".into());
            m.runs = 0;
        }
        r.check();
        assert_eq!(r.checksum_verdict(), "no checksum taken: no load finished");
        // One load, one checksum: nothing to agree with.
        let mut r = report(["aa", "aa"]);
        r.loads.results.truncate(1);
        r.check();
        assert_eq!(
            r.checksum_verdict(),
            "one checksum taken: nothing to compare it with"
        );
    }

    #[test]
    fn a_file_name_is_escaped_in_text_and_whole_in_json() {
        use std::ffi::OsStr;
        use std::os::unix::ffi::OsStrExt;
        let mut r = report(["aa", "aa"]);
        r.file = PathBuf::from(OsStr::from_bytes(b"/w\x1b[2J\n\xe9.bin"));
        let mut out = Vec::new();
        r.human(&mut out, Style::default()).expect("render");
        assert!(!out.contains(&0x1b));
        let text = String::from_utf8(out).expect("utf8");
        assert!(
            text.starts_with("tally load: /w\\x1b[2J\\x0a\\xe9.bin (1.0 MiB)"),
            "{text}"
        );
        let json = serde_json::to_value(&r).expect("json");
        assert_eq!(json["file"]["bytes_hex"], "2f771b5b324a0ae92e62696e");
        let mut html = Vec::new();
        write_html(&r, &mut html).expect("html");
        assert!(!html.contains(&0x1b));
    }

    #[test]
    fn failed_method_spans_the_figures_and_narrow_terminals_drop_minor_columns() {
        let mut r = report(["0123456789abcdef", "0123456789abcdef"]);
        let mut failed = result(Method::MmapSequential, Mode::Warm, "-");
        failed.error = Some("EINVAL".into());
        r.loads.results.push(failed);
        let human = |width| {
            let mut out = Vec::new();
            let style = Style {
                color: false,
                width,
            };
            r.human(&mut out, style).expect("render");
            String::from_utf8(out).expect("utf8")
        };
        let text = human(None);
        // The method column is as wide as the failed method's name.
        assert!(
            text.contains("\ncold  read             1.000ms  "),
            "{text}"
        );
        assert!(
            text.contains("\nwarm  mmap-sequential  unavailable: EINVAL\n"),
            "{text}"
        );
        let narrow = human(Some(80));
        let header = narrow.lines().nth(1).expect("header");
        assert!(
            !header.contains("block in") && !header.contains("minor flt"),
            "{narrow}"
        );
        assert!(
            header.contains("major flt") && header.contains("checksum"),
            "{narrow}"
        );
        assert!(narrow.lines().all(|l| l.chars().count() <= 80), "{narrow}");
    }

    #[test]
    fn renders_rows_a_table_and_a_plot() {
        let r = report(["0123456789abcdef", "0123456789abcdef"]);
        let mut out = Vec::new();
        r.human(&mut out, Style::default()).expect("render");
        let text = String::from_utf8(out).expect("utf8");
        assert!(text.contains("checksums agree"));
        assert!(text.lines().any(|l| l.starts_with("cold  read")));
        // Unmeasured storage reads say so instead of printing 0.
        assert!(text.contains("unavailable"));
        assert!(text.contains("75%"), "kernel share of cpu: {text}");
        let t = r.table();
        assert_eq!(t.rows.len(), 2);
        assert!(t.rows.iter().all(|row| row.len() == t.headers.len()));
        let mut html = Vec::new();
        write_html(&r, &mut html).expect("html");
        let html = String::from_utf8(html).expect("utf8");
        // A bar per result, a legend swatch per mode.
        assert_eq!(html.matches("class=\"bar\"").count(), 2);
        assert_eq!(html.matches("class=\"key\"").count(), 2);
    }

    #[test]
    fn every_format_snapshot() {
        use crate::report::{Format, render};
        let r = report(["0123456789abcdef", "0123456789abcdef"]);
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
