//! The report of `tally load --procs N`, and its HTML plot.
//!
//! JSON schema (`schema_version` 2), every key carrying its unit (counts
//! bare), the same names as the CSV and Markdown columns:
//! - `file`, `size_bytes`, `touch`, `procs[]` (the N values run),
//!   `mem_limit` (`null` without `--mem-limit`, else `limit_bytes`, `via`
//!   (`cgroup-v2`, `cgroup-v1` or `null`) and `unavailable` (why no group
//!   could be made, else `null`)), `checksums_agree`, `file_changed` (how
//!   the file changed during the loads, else `null`), `warnings[]`.
//! - `runs[]`, one per N, mode and method: `procs`, `mode`, `method`,
//!   `outcome` (`completed`, `thrashed`, `oom-killed`, `failed`,
//!   `unavailable`, `invalid`: the file changed during the load or before
//!   it, said in `error`), `completed`, `oom_killed`, `killed`, `failed`
//!   (processes), `all_loaded_us` (barrier to the last process loaded),
//!   at the hold point `sum_rss_bytes`, `sum_pss_bytes`,
//!   `sum_pss_anon_bytes`, `sum_pss_file_bytes`, `sum_file_map_pss_bytes`
//!   (the PSS of the processes' mappings of the file itself),
//!   `pss_per_proc_bytes[]`, `copies` (Σ PSS ÷ file size),
//!   `sum_pss_vs_mmap` (Σ PSS ÷ that of mmap at the same N and mode),
//!   `file_cached_bytes`, `cached_before_bytes`,
//!   `mem_available_before_bytes`, `mem_available_hold_bytes`; summed over
//!   the processes `major_faults`, `minor_faults`, `storage_read_bytes`;
//!   with a group `group_peak_bytes`, `group_oom_kills`; `checksums[]`,
//!   `error`, and `children[]` (per process: `pid`, `outcome`,
//!   `exit_code`, `signal`, `load_us`, `bytes_loaded`, `rss_bytes`,
//!   `pss_bytes`, `pss_anon_bytes`, `pss_file_bytes`,
//!   `file_map_pss_bytes`, `major_faults`, `minor_faults`,
//!   `storage_read_bytes`, `checksum`, `error`). Unmeasured figures are
//!   `null`, never 0.

use std::io::{self, Write};

use serde::{Deserialize, Serialize};

use super::checksum::Checked;
use super::memlimit::Via;
use super::report::{LoadReport, Loads};
use super::{Method, Mode};
use crate::report::text::{Column, TextTable};
use crate::report::{Render, Style, Table};
use crate::text::path::display;
use crate::units::{human_bytes, thousands};

/// How a load by N processes went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Every process loaded and held the file.
    Completed,
    /// Every process loaded it, but more than half the file was read from
    /// storage again: the page cache could not keep it.
    Thrashed,
    /// The OOM killer killed at least one process.
    OomKilled,
    /// At least one process failed or was killed otherwise.
    Failed,
    /// Not run (no memory-limited group could be made).
    Unavailable,
    /// The file changed during the load, or before it (then not run):
    /// its figures do not count.
    Invalid,
}

impl Outcome {
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Completed => "completed",
            Outcome::Thrashed => "thrashed",
            Outcome::OomKilled => "oom-killed",
            Outcome::Failed => "failed",
            Outcome::Unavailable => "unavailable",
            Outcome::Invalid => "invalid",
        }
    }
}

/// The memory limit asked for, and how (or why not) it was set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemLimit {
    pub limit_bytes: u64,
    pub via: Option<Via>,
    pub unavailable: Option<String>,
}

/// One process of a load.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChildFigures {
    pub pid: u32,
    pub outcome: Option<Outcome>,
    pub exit_code: Option<i32>,
    pub signal: Option<String>,
    pub load_us: Option<u64>,
    pub bytes_loaded: Option<u64>,
    pub rss_bytes: Option<u64>,
    pub pss_bytes: Option<u64>,
    pub pss_anon_bytes: Option<u64>,
    pub pss_file_bytes: Option<u64>,
    pub file_map_pss_bytes: Option<u64>,
    pub major_faults: Option<u64>,
    pub minor_faults: Option<u64>,
    pub storage_read_bytes: Option<u64>,
    pub checksum: Option<String>,
    pub error: Option<String>,
    #[serde(skip)]
    pub out_of_memory: bool,
}

impl ChildFigures {
    pub fn new(pid: u32) -> Self {
        ChildFigures {
            pid,
            ..Default::default()
        }
    }
}

/// One method and mode, loaded by N processes at once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcsRun {
    pub procs: u32,
    pub mode: Mode,
    pub method: Method,
    pub outcome: Outcome,
    pub completed: u32,
    pub oom_killed: u32,
    pub killed: u32,
    pub failed: u32,
    pub all_loaded_us: Option<u64>,
    pub sum_rss_bytes: Option<u64>,
    pub sum_pss_bytes: Option<u64>,
    pub sum_pss_anon_bytes: Option<u64>,
    pub sum_pss_file_bytes: Option<u64>,
    pub sum_file_map_pss_bytes: Option<u64>,
    pub pss_per_proc_bytes: Vec<u64>,
    pub copies: Option<f64>,
    pub sum_pss_vs_mmap: Option<f64>,
    pub file_cached_bytes: Option<u64>,
    pub cached_before_bytes: Option<u64>,
    pub mem_available_before_bytes: Option<u64>,
    pub mem_available_hold_bytes: Option<u64>,
    pub major_faults: Option<u64>,
    pub minor_faults: Option<u64>,
    pub storage_read_bytes: Option<u64>,
    pub group_peak_bytes: Option<u64>,
    pub group_oom_kills: Option<u64>,
    pub checksums: Vec<String>,
    pub error: Option<String>,
    pub children: Vec<ChildFigures>,
}

/// The sum of the figures the children have, `None` when none has one.
fn sum(children: &[ChildFigures], f: impl Fn(&ChildFigures) -> Option<u64>) -> Option<u64> {
    children
        .iter()
        .filter_map(f)
        .fold(None, |acc, v| Some(acc.unwrap_or(0u64).saturating_add(v)))
}

impl ProcsRun {
    pub fn new(method: Method, mode: Mode, procs: u32) -> Self {
        ProcsRun {
            procs,
            mode,
            method,
            outcome: Outcome::Unavailable,
            completed: 0,
            oom_killed: 0,
            killed: 0,
            failed: 0,
            all_loaded_us: None,
            sum_rss_bytes: None,
            sum_pss_bytes: None,
            sum_pss_anon_bytes: None,
            sum_pss_file_bytes: None,
            sum_file_map_pss_bytes: None,
            pss_per_proc_bytes: Vec::new(),
            copies: None,
            sum_pss_vs_mmap: None,
            file_cached_bytes: None,
            cached_before_bytes: None,
            mem_available_before_bytes: None,
            mem_available_hold_bytes: None,
            major_faults: None,
            minor_faults: None,
            storage_read_bytes: None,
            group_peak_bytes: None,
            group_oom_kills: None,
            checksums: Vec::new(),
            error: None,
            children: Vec::new(),
        }
    }

    /// Classifies each process and sums their figures; `size` is the
    /// file's size.
    pub fn finish(&mut self, size: u64) {
        let oom_in_group = self.group_oom_kills.unwrap_or(0) > 0;
        let (mut completed, mut oom, mut killed, mut failed) = (0, 0, 0, 0);
        for c in &mut self.children {
            let outcome = match (&c.signal, c.exit_code, &c.error) {
                (Some(sig), _, _) if sig == "SIGKILL" && oom_in_group => {
                    oom += 1;
                    Outcome::OomKilled
                }
                (Some(_), _, _) => {
                    killed += 1;
                    Outcome::Failed
                }
                (None, Some(0), None) if c.bytes_loaded.is_some() => {
                    completed += 1;
                    Outcome::Completed
                }
                _ => {
                    failed += 1;
                    Outcome::Failed
                }
            };
            c.outcome = Some(outcome);
        }
        self.completed = completed;
        self.oom_killed = oom;
        self.killed = killed;
        self.failed = failed;
        let ch = &self.children;
        self.sum_rss_bytes = sum(ch, |c| c.rss_bytes);
        self.sum_pss_bytes = sum(ch, |c| c.pss_bytes);
        self.sum_pss_anon_bytes = sum(ch, |c| c.pss_anon_bytes);
        self.sum_pss_file_bytes = sum(ch, |c| c.pss_file_bytes);
        self.sum_file_map_pss_bytes = sum(ch, |c| c.file_map_pss_bytes);
        self.pss_per_proc_bytes = ch.iter().filter_map(|c| c.pss_bytes).collect();
        self.major_faults = sum(ch, |c| c.major_faults);
        self.minor_faults = sum(ch, |c| c.minor_faults);
        self.storage_read_bytes = sum(ch, |c| c.storage_read_bytes);
        self.copies = self
            .sum_pss_bytes
            .filter(|_| size > 0)
            .map(|p| p as f64 / size as f64);
        let mut sums: Vec<String> = ch.iter().filter_map(|c| c.checksum.clone()).collect();
        sums.sort();
        sums.dedup();
        self.checksums = sums;
        // Storage reads beyond what the load needs: the file once when
        // cold (the processes share the page cache), nothing when warm;
        // O_DIRECT bypasses the cache, so each process reads it all.
        let direct = matches!(self.method, Method::Direct | Method::UringDirect);
        let needed = if direct {
            size.saturating_mul(u64::from(self.procs))
        } else if self.mode == Mode::Cold {
            size
        } else {
            0
        };
        let thrashed = self
            .storage_read_bytes
            .is_some_and(|r| r.saturating_sub(needed) > size / 2);
        self.outcome = if self.error.is_some() {
            Outcome::Unavailable
        } else if oom > 0 {
            Outcome::OomKilled
        } else if killed + failed > 0 || completed == 0 {
            Outcome::Failed
        } else if thrashed {
            Outcome::Thrashed
        } else {
            Outcome::Completed
        };
        if self.error.is_none() && completed == 0 {
            self.error = ch.iter().find_map(|c| {
                c.error.clone().or_else(|| match c.outcome {
                    Some(Outcome::OomKilled) => Some(
                        "every process was killed by the OOM killer at the group's memory limit"
                            .into(),
                    ),
                    _ => c
                        .signal
                        .as_ref()
                        .map(|s| format!("the process was killed by {s}")),
                })
            });
        }
    }
}

/// The report of `tally load --procs`: its core (the file, the checksums,
/// how the file changed) is [`LoadReport`]'s.
pub type ProcsReport = LoadReport<Procs>;

/// N processes loading at once, for each N of `procs`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Procs {
    pub procs: Vec<u32>,
    pub mem_limit: Option<MemLimit>,
    pub runs: Vec<ProcsRun>,
}

impl Loads for Procs {
    const COUNTED: &'static str = "processes, every method";

    fn checked(&self) -> Vec<Checked<'_>> {
        self.runs
            .iter()
            .filter(|r| r.outcome != Outcome::Invalid)
            .map(|r| Checked {
                label: format!("{} {} ×{}", r.method.name(), r.mode.name(), r.procs),
                checksums: &r.checksums,
                mode: r.mode,
                cached_before_bytes: r.cached_before_bytes,
            })
            .collect()
    }

    /// Processes whose checksum was taken.
    fn checksums_taken(&self) -> u64 {
        self.runs
            .iter()
            .flat_map(|r| &r.children)
            .filter(|c| c.checksum.is_some())
            .count() as u64
    }

    /// An OOM kill under --mem-limit is a finding, not a failure; no load
    /// completing anywhere is one.
    fn none_worked(&self) -> bool {
        self.runs.iter().all(|r| r.completed == 0)
    }

    /// Sets each run's Σ PSS against mmap's at the same N and mode.
    fn relate(&mut self) {
        let mmap: Vec<(u32, Mode, Option<u64>)> = self
            .runs
            .iter()
            .filter(|r| r.method == Method::Mmap)
            .map(|r| (r.procs, r.mode, r.sum_pss_bytes))
            .collect();
        for r in &mut self.runs {
            let base = mmap
                .iter()
                .find(|(n, m, _)| *n == r.procs && *m == r.mode)
                .and_then(|(_, _, p)| *p)
                .filter(|p| *p > 0);
            r.sum_pss_vs_mmap = match (r.sum_pss_bytes, base) {
                (Some(p), Some(b)) => Some(p as f64 / b as f64),
                _ => None,
            };
        }
    }
}

impl Procs {
    /// One sentence per N and mode comparing Σ PSS of read and mmap.
    pub fn ratio_lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        for mmap in self.runs.iter().filter(|r| r.method == Method::Mmap) {
            let Some(read) = self
                .runs
                .iter()
                .find(|r| r.method == Method::Read && r.procs == mmap.procs && r.mode == mmap.mode)
            else {
                continue;
            };
            let head = format!(
                "{}, {} process{}:",
                mmap.mode.name(),
                mmap.procs,
                if mmap.procs == 1 { "" } else { "es" }
            );
            let whole = |r: &ProcsRun| r.completed == r.procs;
            match (read.sum_pss_bytes, mmap.sum_pss_bytes, read.sum_pss_vs_mmap) {
                (Some(r), Some(m), Some(ratio)) if whole(read) && whole(mmap) => out.push(format!(
                    "{head} Σ PSS read {} / mmap {} = {ratio:.2}× (read {} copies, mmap {})",
                    human_bytes(r),
                    human_bytes(m),
                    copies(read.copies),
                    copies(mmap.copies),
                )),
                _ => out.push(format!(
                    "{head} no Σ PSS ratio: read {} ({}/{} held), mmap {} ({}/{} held)",
                    read.outcome.name(),
                    read.completed,
                    read.procs,
                    mmap.outcome.name(),
                    mmap.completed,
                    mmap.procs
                )),
            }
        }
        out
    }
}

fn copies(c: Option<f64>) -> String {
    c.map(|c| format!("{c:.2}")).unwrap_or_else(|| "-".into())
}

fn bytes(v: Option<u64>) -> String {
    v.map(human_bytes).unwrap_or_else(|| "-".into())
}

fn ms(us: Option<u64>) -> String {
    us.map(|u| thousands((u + 500) / 1000))
        .unwrap_or_else(|| "-".into())
}

/// The median of the per-process PSS.
fn median(v: &[u64]) -> Option<u64> {
    let mut v = v.to_vec();
    v.sort_unstable();
    v.get(v.len() / 2).copied()
}

/// `21.9 → 17.9 GiB`: MemAvailable before the barrier and at the hold.
fn avail(before: Option<u64>, hold: Option<u64>) -> String {
    const GIB: f64 = (1u64 << 30) as f64;
    match (before, hold) {
        (Some(b), Some(h)) => format!("{:.1} → {:.1} GiB", b as f64 / GIB, h as f64 / GIB),
        _ => "unavailable".into(),
    }
}

/// The line that says the memory limit of `--mem-limit`, or why there
/// is none.
fn write_limit(m: &MemLimit, out: &mut dyn Write) -> io::Result<()> {
    match (&m.via, &m.unavailable) {
        (Some(via), _) => writeln!(
            out,
            "memory limit: {} for all the processes of a load ({})",
            human_bytes(m.limit_bytes),
            via.name()
        ),
        (None, reason) => writeln!(
            out,
            "memory limit: unavailable: {}",
            reason.as_deref().unwrap_or("no cgroup could be made")
        ),
    }
}

impl ProcsReport {
    /// The human table: a row per run, with the group's figures under a
    /// memory limit, the copies and MemAvailable without one.
    fn text_table(&self) -> TextTable {
        let limited = self
            .loads
            .mem_limit
            .as_ref()
            .is_some_and(|m| m.via.is_some());
        let mut columns = vec![
            Column::text("mode"),
            Column::text("method"),
            Column::number("N"),
        ];
        columns.extend(if limited {
            vec![
                Column::text("outcome"),
                Column::number("load ms"),
                Column::number("Σ PSS"),
                Column::number("group peak").droppable(2),
                Column::number("cached"),
                Column::number("major flt"),
                Column::number("storage read").droppable(1),
            ]
        } else {
            vec![
                Column::number("load ms"),
                Column::number("Σ RSS").droppable(2),
                Column::number("Σ PSS"),
                Column::number("PSS/proc"),
                Column::number("copies").droppable(3),
                Column::number("vs mmap"),
                Column::number("cached"),
                Column::number("MemAvailable").droppable(1),
            ]
        });
        let mut table = TextTable::new(columns);
        for r in &self.loads.runs {
            let lead = vec![
                r.mode.name().to_string(),
                r.method.name().to_string(),
                r.procs.to_string(),
            ];
            if matches!(r.outcome, Outcome::Unavailable | Outcome::Invalid) {
                table.span(
                    lead,
                    format!(
                        "{}: {}",
                        r.outcome.name(),
                        r.error.as_deref().unwrap_or("not run")
                    ),
                );
                continue;
            }
            let mut cells = lead;
            cells.extend(if limited {
                self.limited_cells(r)
            } else {
                self.cells(r)
            });
            table.row(cells);
        }
        table
    }

    /// `84%`: how much of the file `v` bytes are.
    fn of_file(&self, v: Option<u64>) -> String {
        match v {
            Some(b) if self.size_bytes > 0 => format!(
                "{}%",
                crate::units::percent(b, self.size_bytes).unwrap_or(0)
            ),
            Some(_) => "-".into(),
            None => "unknown".into(),
        }
    }

    /// A run's figures under a memory limit.
    fn limited_cells(&self, r: &ProcsRun) -> Vec<String> {
        let outcome = match r.outcome {
            Outcome::OomKilled => format!("oom-killed {}/{}", r.oom_killed, r.procs),
            Outcome::Failed => format!("failed {}/{}", r.killed + r.failed, r.procs),
            o => format!("{} {}/{}", o.name(), r.completed, r.procs),
        };
        vec![
            outcome,
            ms(r.all_loaded_us),
            bytes(r.sum_pss_bytes),
            bytes(r.group_peak_bytes),
            self.of_file(r.file_cached_bytes),
            r.major_faults.map(thousands).unwrap_or_else(|| "-".into()),
            r.storage_read_bytes
                .map(human_bytes)
                .unwrap_or_else(|| "unavailable".into()),
        ]
    }

    /// A run's figures without a memory limit.
    fn cells(&self, r: &ProcsRun) -> Vec<String> {
        vec![
            ms(r.all_loaded_us),
            bytes(r.sum_rss_bytes),
            bytes(r.sum_pss_bytes),
            bytes(median(&r.pss_per_proc_bytes)),
            copies(r.copies),
            r.sum_pss_vs_mmap
                .map(|x| format!("{x:.2}×"))
                .unwrap_or_else(|| "-".into()),
            self.of_file(r.file_cached_bytes),
            avail(r.mem_available_before_bytes, r.mem_available_hold_bytes),
        ]
    }
}

// The formats ProcsReport renders (checked before the command works).
crate::forms_of!(ProcsReport: Text, Data, Table, Page);

impl Render for ProcsReport {
    fn html(&self, out: &mut dyn Write) -> Option<io::Result<()>> {
        Some(write_html(self, out))
    }

    fn human(&self, out: &mut dyn Write, style: Style) -> io::Result<()> {
        let procs = &self.loads.procs;
        let ns: Vec<String> = procs.iter().map(|n| n.to_string()).collect();
        writeln!(
            out,
            "{}, {} {} at once",
            self.heading(),
            ns.join("/"),
            if procs == &[1] {
                "process"
            } else {
                "processes"
            },
        )?;
        if let Some(m) = &self.loads.mem_limit {
            write_limit(m, out)?;
        }
        self.text_table().write(out, style)?;
        for line in self.loads.ratio_lines() {
            writeln!(out, "{line}")?;
        }
        for r in self.loads.runs.iter().filter(|r| {
            !matches!(r.outcome, Outcome::Unavailable | Outcome::Invalid)
                && (r.completed < r.procs)
                && r.error.is_some()
        }) {
            writeln!(
                out,
                "{} {} ×{}: {}",
                r.mode.name(),
                r.method.name(),
                r.procs,
                r.error.as_deref().unwrap_or_default()
            )?;
        }
        self.write_verdicts(out)
    }

    fn table(&self) -> Table {
        let headers = [
            "procs",
            "mode",
            "method",
            "outcome",
            "completed",
            "oom_killed",
            "killed",
            "failed",
            "all_loaded_us",
            "sum_rss_bytes",
            "sum_pss_bytes",
            "sum_pss_anon_bytes",
            "sum_pss_file_bytes",
            "sum_file_map_pss_bytes",
            "pss_per_proc_bytes",
            "copies",
            "sum_pss_vs_mmap",
            "file_cached_bytes",
            "cached_before_bytes",
            "mem_available_before_bytes",
            "mem_available_hold_bytes",
            "major_faults",
            "minor_faults",
            "storage_read_bytes",
            "mem_limit_bytes",
            "mem_limit_via",
            "group_peak_bytes",
            "group_oom_kills",
            "checksum",
            "error",
        ]
        .map(String::from)
        .to_vec();
        let o = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
        let f = |v: Option<f64>| v.map(|v| format!("{v:.4}")).unwrap_or_default();
        let limit = self.loads.mem_limit.as_ref();
        let via = limit
            .and_then(|m| m.via)
            .map(|v| match v {
                Via::V2 => "cgroup-v2",
                Via::V1 => "cgroup-v1",
            })
            .unwrap_or_default()
            .to_string();
        let rows = self
            .loads
            .runs
            .iter()
            .map(|r| {
                vec![
                    r.procs.to_string(),
                    r.mode.name().into(),
                    r.method.name().into(),
                    r.outcome.name().into(),
                    r.completed.to_string(),
                    r.oom_killed.to_string(),
                    r.killed.to_string(),
                    r.failed.to_string(),
                    o(r.all_loaded_us),
                    o(r.sum_rss_bytes),
                    o(r.sum_pss_bytes),
                    o(r.sum_pss_anon_bytes),
                    o(r.sum_pss_file_bytes),
                    o(r.sum_file_map_pss_bytes),
                    r.pss_per_proc_bytes
                        .iter()
                        .map(u64::to_string)
                        .collect::<Vec<_>>()
                        .join(" "),
                    f(r.copies),
                    f(r.sum_pss_vs_mmap),
                    o(r.file_cached_bytes),
                    o(r.cached_before_bytes),
                    o(r.mem_available_before_bytes),
                    o(r.mem_available_hold_bytes),
                    o(r.major_faults),
                    o(r.minor_faults),
                    o(r.storage_read_bytes),
                    o(limit.map(|m| m.limit_bytes)),
                    via.clone(),
                    o(r.group_peak_bytes),
                    o(r.group_oom_kills),
                    r.checksums.join("/"),
                    r.error.clone().unwrap_or_default(),
                ]
            })
            .collect();
        Table { headers, rows }
    }
}

/// A self-contained HTML page: Σ PSS against the number of processes, one
/// line per method and mode (`--procs-sweep` gives N = 1, 2, 4, 8).
pub fn write_html(r: &ProcsReport, out: &mut dyn Write) -> io::Result<()> {
    use crate::report::html::{Series, esc, line_plot, page};
    let mut series: Vec<Series> = Vec::new();
    for run in &r.loads.runs {
        let name = format!("{} {}", run.method.name(), run.mode.name());
        let Some(pss) = run.sum_pss_bytes else {
            continue;
        };
        let point = (f64::from(run.procs), pss as f64);
        match series.iter_mut().find(|s| s.name == name) {
            Some(s) => s.points.push(point),
            None => series.push(Series {
                spread: Vec::new(),
                name,
                points: vec![point],
            }),
        }
    }
    let size = r.size_bytes;
    let svg = line_plot(
        &format!("Σ PSS of N processes holding {}", human_bytes(size)),
        "processes",
        "Σ PSS",
        &series,
        &[],
        2.0,
        &|x| format!("{x:.0}"),
        &|y| human_bytes(y as u64),
    );
    let mut body = format!(
        "<h2>tally load --procs: {} ({})</h2><p>The sum of the proportional set sizes of N processes that each loaded the file and hold it: one copy shared by all stays flat, a copy per process grows with N. {}.</p>{svg}",
        esc(&display(&r.file)),
        human_bytes(size),
        esc(&r.checksum_verdict())
    );
    for line in r.loads.ratio_lines() {
        body.push_str(&format!("<p>{}</p>", esc(&line)));
    }
    out.write_all(page(&format!("tally load --procs {}", display(&r.file)), &body).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::Touch;

    fn child(pid: u32, pss: u64, sum: &str) -> ChildFigures {
        ChildFigures {
            pid,
            exit_code: Some(0),
            load_us: Some(1000),
            bytes_loaded: Some(1 << 20),
            rss_bytes: Some(pss * 2),
            pss_bytes: Some(pss),
            pss_anon_bytes: Some(pss / 2),
            pss_file_bytes: Some(pss / 2),
            file_map_pss_bytes: Some(pss / 2),
            major_faults: Some(1),
            minor_faults: Some(10),
            storage_read_bytes: Some(0),
            checksum: Some(sum.into()),
            ..Default::default()
        }
    }

    fn run(method: Method, per_proc: u64, sum: &str) -> ProcsRun {
        let mut r = ProcsRun::new(method, Mode::Warm, 4);
        r.children = (0..4).map(|i| child(100 + i, per_proc, sum)).collect();
        r.all_loaded_us = Some(12_345);
        r.file_cached_bytes = Some(1 << 20);
        r.mem_available_before_bytes = Some(20 << 30);
        r.mem_available_hold_bytes = Some(19 << 30);
        r.finish(1 << 20);
        r
    }

    fn report(limit: Option<MemLimit>) -> ProcsReport {
        let mut r = ProcsReport {
            schema_version: 2,
            file: "/f".into(),
            size_bytes: 1 << 20,
            touch: Touch::All,
            loads: Procs {
                procs: vec![4],
                mem_limit: limit,
                runs: vec![
                    run(Method::Read, 1 << 20, "aa"),
                    run(Method::Mmap, 1 << 18, "aa"),
                ],
            },
            checksums_agree: None,
            file_changed: None,
            warnings: vec![],
        };
        r.check();
        r
    }

    fn human(r: &ProcsReport) -> String {
        let mut out = Vec::new();
        r.human(&mut out, Style::default()).expect("render");
        String::from_utf8(out).expect("utf8")
    }

    #[test]
    fn read_and_mmap_side_by_side_with_the_ratio() {
        let r = report(None);
        assert_eq!(r.checksums_agree, Some(true));
        let read = &r.loads.runs[0];
        assert_eq!(read.outcome, Outcome::Completed);
        assert_eq!(read.completed, 4);
        assert_eq!(read.sum_pss_bytes, Some(4 << 20));
        assert_eq!(read.sum_pss_vs_mmap, Some(4.0));
        assert_eq!(read.copies, Some(4.0));
        assert_eq!(r.loads.runs[1].copies, Some(1.0));
        let text = human(&r);
        assert!(
            text.contains("Σ PSS read 4.0 MiB / mmap 1.0 MiB = 4.00×"),
            "{text}"
        );
        assert!(text.contains("checksums agree (8 processes"), "{text}");
        assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
        let t = r.table();
        assert!(t.rows.iter().all(|row| row.len() == t.headers.len()));
        // Every run-level key of the JSON is a column, with the same name.
        let json = serde_json::to_value(&r).expect("json");
        for key in json["runs"][0].as_object().expect("run").keys() {
            if key != "children" && key != "checksums" {
                assert!(t.headers.contains(key), "{key} is not a CSV column");
            }
        }
        let mut html = Vec::new();
        write_html(&r, &mut html).expect("html");
        let html = String::from_utf8(html).expect("utf8");
        assert!(html.contains("<svg"), "{html}");
    }

    #[test]
    fn an_oom_kill_in_the_group_is_reported_as_such() {
        let mut r = report(Some(MemLimit {
            limit_bytes: 3 << 19,
            via: Some(Via::V1),
            unavailable: None,
        }));
        let read = &mut r.loads.runs[0];
        read.group_oom_kills = Some(1);
        read.children[2].signal = Some("SIGKILL".into());
        read.children[2].exit_code = None;
        read.finish(1 << 20);
        assert_eq!(read.outcome, Outcome::OomKilled);
        assert_eq!((read.completed, read.oom_killed), (3, 1));
        let text = human(&r);
        assert!(text.contains("oom-killed 1/4"), "{text}");
        assert!(text.contains("cgroup v1 memory.limit_in_bytes"), "{text}");
        // All four killed: the reason says by whom.
        let mut all = r.loads.runs[0].clone();
        for c in &mut all.children {
            c.signal = Some("SIGKILL".into());
            c.exit_code = None;
        }
        all.finish(1 << 20);
        assert_eq!((all.completed, all.oom_killed), (0, 4));
        assert!(
            all.error
                .as_deref()
                .is_some_and(|e| e.contains("OOM killer"))
        );
        // Re-read from storage beyond half the file: thrashed.
        let mmap = &mut r.loads.runs[1];
        mmap.children[0].storage_read_bytes = Some(1 << 20);
        mmap.finish(1 << 20);
        assert_eq!(mmap.outcome, Outcome::Thrashed);
    }

    #[test]
    fn an_unavailable_limit_says_why() {
        let r = report(Some(MemLimit {
            limit_bytes: 1 << 20,
            via: None,
            unavailable: Some("not root".into()),
        }));
        assert!(human(&r).contains("memory limit: unavailable: not root"));
        let json = serde_json::to_value(&r).expect("json");
        assert!(json["mem_limit"]["via"].is_null());
    }
}
