//! What `tally history` reports, as plain data: the points read (each
//! commit once), the machines, and per command, figure and machine the
//! series with its change points; with `check`, the gate's verdicts. Every
//! format renders this one model (human text here, the table for CSV,
//! Markdown of its own, the page in [`super::html`], JSON through serde).
//!
//! JSON (`schema_version` 1, under tally's header):
//! - `store`, `method` (`window`, `max_pvalue`, `min_magnitude`, `method`),
//!   `selection` (the filters);
//! - `commits[]`: every point read: `commit` (or null), `dirty`, `branch`,
//!   `recorded_at` (RFC 3339), `tool`, `machine` (fingerprint);
//! - `machines[]`: `fingerprint`, `cpu_model`, `cpus`, `kernel`,
//!   `counting`, `counting_version`;
//! - `series[]`: `command`, `figure`, `unit`, `tool`, `machine`,
//!   `higher_is_better`, `points[]` (`point`: an index into `commits`,
//!   `median`, `mad`, `n`), `outliers[]` (indices into `points`),
//!   `change_points[]` and `pending` (a change with only the newest point
//!   after it): each `index` (into `points`, the first after), `last_before`
//!   and `first_after` (indices into `commits`), `median_before`,
//!   `median_after`, `change` (the relative change of the medians),
//!   `mean_before`, `mean_after`, `p_value` (the t-test's), `p_adjusted`
//!   (what the verdict uses), `worse`;
//! - `check` (with `history check`): `rules[]`, `within`, `strict`,
//!   `results[]`, `outcome`, `exit_status`, `headline`.

use std::io::{self, Write};

use serde::Serialize;

use super::check::CheckOut;
use super::edivisive::{ChangePoint, Params};
use super::series::{Selection, segment_median};
use super::store::{MachineRow, PointRow, Value};
use crate::report::{Render, Style, Table};

/// Schema of the JSON document.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize)]
pub struct HistoryReport {
    pub schema_version: u32,
    pub store: String,
    pub method: Params,
    pub selection: Selection,
    pub commits: Vec<CommitOut>,
    pub machines: Vec<MachineOut>,
    pub series: Vec<SeriesOut>,
    pub check: Option<CheckOut>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CommitOut {
    pub commit: Option<String>,
    pub dirty: bool,
    pub branch: Option<String>,
    pub recorded_at: String,
    #[serde(skip)]
    pub recorded_at_ns: i64,
    pub tool: String,
    pub machine: Option<String>,
}

impl CommitOut {
    pub fn of(p: &PointRow, machine: Option<&str>) -> CommitOut {
        CommitOut {
            commit: p.meta.commit.clone(),
            dirty: p.meta.dirty,
            branch: p.meta.branch.clone(),
            recorded_at: rfc3339(p.meta.recorded_at_ns),
            recorded_at_ns: p.meta.recorded_at_ns,
            tool: p.meta.tool.clone(),
            machine: machine.map(str::to_string),
        }
    }

    /// The commit as people read it: 10 characters, `+` when dirty, `-`
    /// without one.
    pub fn short(&self) -> String {
        match &self.commit {
            Some(c) => format!(
                "{}{}",
                crate::text::escape::escape_text(&c.chars().take(10).collect::<String>()),
                if self.dirty { "+" } else { "" }
            ),
            None => "-".into(),
        }
    }

    /// The day it was recorded (`2026-12-06`).
    pub fn day(&self) -> &str {
        self.recorded_at.get(..10).unwrap_or(&self.recorded_at)
    }
}

/// `ns` since the epoch as RFC 3339 (UTC, whole seconds).
pub fn rfc3339(ns: i64) -> String {
    crate::report::json::rfc3339_utc(u64::try_from(ns.div_euclid(1_000_000_000)).unwrap_or(0))
}

#[derive(Debug, Clone, Serialize)]
pub struct MachineOut {
    pub fingerprint: String,
    pub cpu_model: Option<String>,
    pub cpus: Option<i64>,
    pub kernel: Option<String>,
    pub counting: String,
    pub counting_version: Option<String>,
    #[serde(skip)]
    pub described: String,
}

impl MachineOut {
    pub fn of(m: &MachineRow) -> MachineOut {
        let mm = &m.machine;
        MachineOut {
            fingerprint: mm.fingerprint.clone(),
            cpu_model: mm.cpu_model.clone(),
            cpus: mm.cpus,
            kernel: mm.kernel.clone(),
            counting: mm.counting.clone(),
            counting_version: mm.counting_version.clone(),
            described: super::identity::describe(mm),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct SeriesOut {
    pub command: String,
    pub figure: String,
    pub unit: String,
    pub tool: String,
    pub machine: Option<String>,
    pub higher_is_better: bool,
    pub points: Vec<ValueOut>,
    pub outliers: Vec<u32>,
    pub change_points: Vec<ChangeOut>,
    pub pending: Option<ChangeOut>,
}

/// One value of a series as reported: the point (an index into the
/// report's commits), its median, MAD and sample count; the store's own
/// [`Value`], moved into the report, not copied.
pub type ValueOut = super::store::Value;

#[derive(Debug, Clone, Serialize)]
pub struct ChangeOut {
    pub index: usize,
    pub last_before: u32,
    pub first_after: u32,
    pub median_before: f64,
    pub median_after: f64,
    pub change: f64,
    pub mean_before: f64,
    pub mean_after: f64,
    pub p_value: f64,
    pub p_adjusted: f64,
    pub worse: bool,
}

impl ChangeOut {
    /// A change point of a series: `bounds` are the start of the segment
    /// before it, its own index, and the end of the segment after it.
    pub fn of(
        c: &ChangePoint,
        values: &[Value],
        x: &[f64],
        outliers: &[usize],
        bounds: (usize, usize, usize),
        higher_is_better: bool,
    ) -> ChangeOut {
        let before = segment_median(x, outliers, bounds.0, bounds.1);
        let after = segment_median(x, outliers, bounds.1, bounds.2);
        let change = if before != 0.0 && before.is_finite() && after.is_finite() {
            after / before - 1.0
        } else {
            0.0
        };
        let point = |i: usize| values.get(i).map_or(0, |v| v.point);
        ChangeOut {
            index: c.index,
            last_before: point(c.last_before),
            first_after: point(c.index),
            median_before: before,
            median_after: after,
            change,
            mean_before: c.stats.mean_before,
            mean_after: c.stats.mean_after,
            p_value: c.stats.p_value,
            p_adjusted: c.stats.p_adjusted,
            worse: if higher_is_better {
                change < 0.0
            } else {
                change > 0.0
            },
        }
    }
}

/// A value of a figure for people, by its unit: times in the command line's
/// unit, sizes in IEC units, counts with separators.
pub fn human_value(v: f64, unit: &str) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    match unit {
        "ns" => crate::units::time_ns(v),
        "us" => crate::units::time_ns(v * 1e3),
        "ms" => crate::units::time_ns(v * 1e6),
        "s" => crate::units::time_ns(v * 1e9),
        // Exact below a MiB, where a few percent would vanish in rounding.
        "bytes" if (0.0..1_048_576.0).contains(&v) => format!("{} B", crate::units::thousands_f(v)),
        "bytes" if v >= 0.0 => format!("{} KiB", crate::units::thousands_f(v / 1024.0)),
        "kb" if v >= 0.0 => crate::units::human_bytes((v * 1024.0).round() as u64),
        "count" if v.fract() == 0.0 || v.abs() >= 1000.0 => crate::units::thousands_f(v),
        _ => format!(
            "{}{}",
            crate::report::svg::value_label(v),
            if unit == "count" {
                String::new()
            } else {
                format!(" {unit}")
            }
        ),
    }
}

/// A relative change as `+8.9%`.
pub fn percent(change: f64) -> String {
    let p = change * 100.0;
    if p.abs() >= 10.0 {
        format!("{p:+.1}%")
    } else {
        format!("{p:+.2}%")
    }
}

/// A p-value as `p<0.001` or `p=0.004`.
pub fn p_text(p: f64) -> String {
    if p < 0.001 {
        "p<0.001".into()
    } else {
        format!("p={p:.3}")
    }
}

impl HistoryReport {
    /// The name of a series for people: `COMMAND · FIGURE`.
    pub fn series_name(s: &SeriesOut) -> String {
        format!(
            "{} · {}",
            crate::text::escape::escape_text(&s.command),
            crate::text::escape::escape_text(&s.figure)
        )
    }

    pub fn machine(&self, fp: Option<&str>) -> Option<&MachineOut> {
        let fp = fp?;
        self.machines.iter().find(|m| m.fingerprint == fp)
    }

    /// The first line: what was read and what was found.
    pub fn headline(&self) -> String {
        let values: usize = self.series.iter().map(|s| s.points.len()).sum();
        // The points (recordings) the series' values are of.
        let mut seen = vec![false; self.commits.len()];
        for v in self.series.iter().flat_map(|s| &s.points) {
            if let Some(b) = seen.get_mut(v.point as usize) {
                *b = true;
            }
        }
        let points = seen.iter().filter(|b| **b).count();
        let cps: usize = self.series.iter().map(|s| s.change_points.len()).sum();
        let span = match (
            self.commits.iter().map(|c| c.recorded_at_ns).min(),
            self.commits.iter().map(|c| c.recorded_at_ns).max(),
        ) {
            (Some(a), Some(b)) => format!(" from {} to {}", &rfc3339(a)[..10], &rfc3339(b)[..10]),
            _ => String::new(),
        };
        format!(
            "{}: {} series, {} values of {} points{span}; {} change point{}",
            self.store,
            crate::units::thousands(self.series.len() as u64),
            crate::units::thousands(values as u64),
            crate::units::thousands(points as u64),
            cps,
            if cps == 1 { "" } else { "s" }
        )
    }

    /// How the change points were found, in one line.
    pub fn method_line(&self) -> String {
        let m = &self.method;
        let how = match m.method {
            super::edivisive::Method::Tally => {
                "lone outliers screened, p-values corrected for the place chosen"
            }
            super::edivisive::Method::Otava => "as Apache Otava 0.8",
        };
        format!(
            "E-divisive means: window {}, p ≤ {}, smallest change {}; {how}",
            m.window,
            m.max_pvalue,
            percent(m.min_magnitude).trim_start_matches('+')
        )
    }

    fn human_series(&self, s: &SeriesOut, out: &mut dyn Write) -> io::Result<()> {
        let machine = self
            .machine(s.machine.as_deref())
            .map(|m| format!(" on {} ({})", m.fingerprint, m.described))
            .unwrap_or_else(|| " on every machine".into());
        writeln!(out, "{} ({}){machine}", Self::series_name(s), s.tool)?;
        let newest = s.points.last();
        let newest_text = newest.map_or(String::new(), |v| {
            format!(
                ", newest {} at {}",
                human_value(v.median, &s.unit),
                self.commits
                    .get(v.point as usize)
                    .map_or("-".into(), CommitOut::short)
            )
        });
        let outliers = if s.outliers.is_empty() {
            String::new()
        } else {
            format!(
                "; {} lone outlier{} screened",
                s.outliers.len(),
                if s.outliers.len() == 1 { "" } else { "s" }
            )
        };
        writeln!(
            out,
            "  {} points{newest_text}{outliers}",
            crate::units::thousands(s.points.len() as u64)
        )?;
        for (k, c) in s.change_points.iter().enumerate() {
            writeln!(out, "  {}", self.change_line(k + 1, c, s))?;
        }
        if let Some(p) = &s.pending {
            writeln!(
                out,
                "  pending: the newest point alone is {} off ({} → {}, {}): one more point tells a change from an outlier",
                percent(p.change),
                human_value(p.median_before, &s.unit),
                human_value(p.median_after, &s.unit),
                p_text(p.p_adjusted)
            )?;
        }
        Ok(())
    }

    /// `#1 9f8e7d6a01 → abc1234def (2026-11-21): 1,205µs → 1,312µs +8.9% p<0.001 worse`.
    pub fn change_line(&self, k: usize, c: &ChangeOut, s: &SeriesOut) -> String {
        let before = self.commits.get(c.last_before as usize);
        let after = self.commits.get(c.first_after as usize);
        format!(
            "#{k} {} → {} ({}): {} → {} {} {} {}",
            before.map_or("-".into(), CommitOut::short),
            after.map_or("-".into(), CommitOut::short),
            after.map_or("", CommitOut::day),
            human_value(c.median_before, &s.unit),
            human_value(c.median_after, &s.unit),
            percent(c.change),
            p_text(c.p_adjusted),
            if c.worse { "worse" } else { "better" }
        )
    }
}

impl Render for HistoryReport {
    fn human(&self, out: &mut dyn Write, _style: Style) -> io::Result<()> {
        if let Some(check) = &self.check {
            writeln!(out, "{}", check.headline)?;
        }
        writeln!(out, "{}", self.headline())?;
        writeln!(out, "{}", self.method_line())?;
        let mut quiet = 0;
        for s in &self.series {
            if s.change_points.is_empty() && s.pending.is_none() {
                quiet += 1;
                continue;
            }
            self.human_series(s, out)?;
        }
        if quiet > 0 {
            let names: Vec<String> = self
                .series
                .iter()
                .filter(|s| s.change_points.is_empty() && s.pending.is_none())
                .take(6)
                .map(Self::series_name)
                .collect();
            let more = if quiet > names.len() {
                format!(", {} more", quiet - names.len())
            } else {
                String::new()
            };
            writeln!(
                out,
                "{quiet} series without change points: {}{more}",
                names.join(", ")
            )?;
        }
        if let Some(check) = &self.check {
            check.human(out)?;
        }
        Ok(())
    }

    fn table(&self) -> Table {
        let headers = [
            "command",
            "figure",
            "unit",
            "tool",
            "machine",
            "index",
            "commit",
            "dirty",
            "branch",
            "recorded_at",
            "median",
            "mad",
            "n",
            "outlier",
            "change_point",
            "change",
        ];
        let mut rows = Vec::new();
        for s in &self.series {
            for (i, v) in s.points.iter().enumerate() {
                let c = self.commits.get(v.point as usize);
                let cp = s.change_points.iter().find(|c| c.index == i);
                rows.push(vec![
                    s.command.clone(),
                    s.figure.clone(),
                    s.unit.clone(),
                    s.tool.clone(),
                    s.machine.clone().unwrap_or_default(),
                    i.to_string(),
                    c.and_then(|c| c.commit.clone()).unwrap_or_default(),
                    c.map_or("", |c| if c.dirty { "1" } else { "0" }).into(),
                    c.and_then(|c| c.branch.clone()).unwrap_or_default(),
                    c.map(|c| c.recorded_at.clone()).unwrap_or_default(),
                    v.median.to_string(),
                    v.mad.to_string(),
                    v.n.to_string(),
                    if s.outliers.binary_search(&(i as u32)).is_ok() {
                        "1"
                    } else {
                        "0"
                    }
                    .into(),
                    if cp.is_some() { "1" } else { "0" }.into(),
                    cp.map(|c| format!("{:.6}", c.change)).unwrap_or_default(),
                ]);
            }
        }
        Table {
            headers: headers.iter().map(|h| h.to_string()).collect(),
            rows,
        }
    }

    fn markdown(&self, out: &mut dyn Write) -> Option<io::Result<()>> {
        Some(match &self.check {
            Some(check) => check.markdown(self, out),
            None => self.markdown_changes(out),
        })
    }

    fn html(&self, out: &mut dyn Write) -> Option<io::Result<()>> {
        Some(out.write_all(super::html::page(self).as_bytes()))
    }
}

impl HistoryReport {
    fn markdown_changes(&self, out: &mut dyn Write) -> io::Result<()> {
        use crate::report::markdown::escape_text as md;
        writeln!(out, "**{}**\n", md(&self.headline()))?;
        writeln!(
            out,
            "| command | figure | machine | last before | first after | before | after | change | p |"
        )?;
        writeln!(out, "|---|---|---|---|---|---|---|---|---|")?;
        for s in &self.series {
            for c in &s.change_points {
                let b = self.commits.get(c.last_before as usize);
                let a = self.commits.get(c.first_after as usize);
                writeln!(
                    out,
                    "| `{}` | {} | {} | {} | {} | {} | {} | {} | {} |",
                    md(&s.command).replace('`', "'"),
                    md(&s.figure),
                    md(s.machine.as_deref().unwrap_or("")),
                    md(&b.map_or("-".into(), CommitOut::short)),
                    md(&a.map_or("-".into(), CommitOut::short)),
                    md(&human_value(c.median_before, &s.unit)),
                    md(&human_value(c.median_after, &s.unit)),
                    percent(c.change),
                    md(&p_text(c.p_adjusted))
                )?;
            }
        }
        writeln!(out, "\n<sub>{}</sub>", md(&self.method_line()))
    }
}

crate::forms_of!(HistoryReport: Text, Data, Table, Page);

impl crate::failure::Outcome for HistoryReport {
    fn exit_code(&self) -> u8 {
        self.check.as_ref().map_or(0, |c| c.exit_status)
    }
}
