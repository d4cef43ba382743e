//! The report of `tally mem` and how it renders.
//!
//! JSON schema (`schema_version` 1); every figure is in bytes, exactly the
//! kernel's kB times 1024:
//! - `group_by`: `program`, `pid`, `user` or `cgroup`; `name_mode`: `exe`,
//!   `comm` or `argv0`; `split_args`: arguments part of the name.
//! - `swap_source`: `SwapPss` (each process's share of swapped pages),
//!   `Swap` (the kernel has no SwapPss: shared swap counts once per
//!   process), or `none` (no process read).
//! - `groups[]`: `name` (program, user or cgroup path; the program for
//!   `pid`), `pid` (with `group_by` `pid`), `processes`, `pids[]`,
//!   `private_bytes`, `shared_bytes` (PSS − private), `pss_bytes` (RAM
//!   used), `swap_bytes`, `rss_bytes`. Ascending by the sort key.
//! - `hidden_groups`: rows left out by `--top` (still in the total).
//! - `total`: the same figures over every process kept, plus `groups` and
//!   `swap_not_attributed` ([`SwapRest`]: `bytes`, null when unavailable,
//!   `swap_total_bytes`, `swap_used_bytes`, and `unavailable`, the reason).
//! - `skipped`: processes not counted: `ended` (gone mid-scan),
//!   `no_memory` (kernel threads, zombies), `denied` (no permission),
//!   `failed` (other errors, the first in `first_error`).
//! - `read_from_smaps`: processes read from `smaps` for lack of a rollup.
//! - `warnings[]`: in words.

use std::io::{self, Write};

use serde::{Deserialize, Serialize};

use super::group::GroupBy;
use super::name::NameMode;
use super::scan::{ProcSample, Skipped};
use crate::report::{Metric, MetricKind, Render, Sample, Style, Table};
use crate::units::{human_bytes, thousands};

/// Figures of one row.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Group {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    pub processes: u64,
    pub pids: Vec<u32>,
    pub private_bytes: u64,
    pub shared_bytes: u64,
    pub pss_bytes: u64,
    pub swap_bytes: u64,
    pub rss_bytes: u64,
}

fn kb(n: u64) -> u64 {
    n.saturating_mul(1024)
}

impl Group {
    pub(crate) fn add(&mut self, s: &ProcSample) {
        self.processes = self.processes.saturating_add(1);
        self.pids.push(s.pid);
        self.private_bytes = self.private_bytes.saturating_add(kb(s.mem.private_kb()));
        self.shared_bytes = self.shared_bytes.saturating_add(kb(s.mem.shared_kb()));
        self.pss_bytes = self.pss_bytes.saturating_add(kb(s.mem.pss_kb));
        self.swap_bytes = self.swap_bytes.saturating_add(kb(s.mem.swap_best_kb()));
        self.rss_bytes = self.rss_bytes.saturating_add(kb(s.mem.rss_kb));
    }
}

/// The sum over every process kept.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    pub processes: u64,
    pub groups: u64,
    pub private_bytes: u64,
    pub shared_bytes: u64,
    pub pss_bytes: u64,
    pub swap_bytes: u64,
    pub rss_bytes: u64,
    /// Swap in use that no process's SwapPss holds.
    #[serde(default)]
    pub swap_not_attributed: SwapRest,
}

/// Swap in use that is in no process's `SwapPss`: swapped pages of tmpfs
/// (`/dev/shm`), SysV shared memory and shared anonymous mappings whose
/// processes map them no more, or not at this moment (PostgreSQL's shared
/// buffers). `SwapTotal − SwapFree` from meminfo minus the sum of every
/// process's `SwapPss`; only when the scan saw every process.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwapRest {
    /// `None` when unavailable (see `unavailable`).
    pub bytes: Option<u64>,
    /// `SwapTotal` and `SwapTotal − SwapFree`, when meminfo was read.
    pub swap_total_bytes: Option<u64>,
    pub swap_used_bytes: Option<u64>,
    /// Why `bytes` is unavailable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

impl SwapRest {
    /// The phrase for the TOTAL line; `None` on a machine without swap.
    fn phrase(&self) -> Option<String> {
        let what = "swap not attributed to a process";
        match (&self.unavailable, self.bytes) {
            (Some(why), _) => Some(format!("{what}: unavailable ({why})")),
            (None, Some(_)) if self.swap_total_bytes == Some(0) => None,
            (None, Some(b)) => Some(format!("{what}: {}", human_bytes(b))),
            (None, None) => None,
        }
    }

    /// The cell for CSV and Markdown: the size, or why it is unavailable.
    fn cell(&self, size: impl Fn(u64) -> String) -> String {
        match (&self.unavailable, self.bytes) {
            (Some(why), _) => format!("unavailable: {why}"),
            (None, Some(b)) => size(b),
            (None, None) => String::new(),
        }
    }
}

impl Totals {
    pub(crate) fn add(&mut self, s: &ProcSample) {
        self.processes = self.processes.saturating_add(1);
        self.private_bytes = self.private_bytes.saturating_add(kb(s.mem.private_kb()));
        self.shared_bytes = self.shared_bytes.saturating_add(kb(s.mem.shared_kb()));
        self.pss_bytes = self.pss_bytes.saturating_add(kb(s.mem.pss_kb));
        self.swap_bytes = self.swap_bytes.saturating_add(kb(s.mem.swap_best_kb()));
        self.rss_bytes = self.rss_bytes.saturating_add(kb(s.mem.rss_kb));
    }
}

/// The unit of human, CSV and Markdown figures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
pub enum Unit {
    /// Bytes.
    B,
    /// KiB (the kernel's kB).
    K,
    /// MiB, one decimal.
    #[default]
    M,
    /// GiB, one decimal.
    G,
}

/// How a report is shown; not part of the data.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct View {
    pub unit: Unit,
    /// Sizes with their own unit each (`-h`).
    pub human_sizes: bool,
    pub total_only: bool,
}

/// The whole report.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemReport {
    pub schema_version: u32,
    pub group_by: GroupBy,
    pub name_mode: NameMode,
    pub split_args: bool,
    pub swap_source: String,
    pub groups: Vec<Group>,
    pub hidden_groups: u64,
    pub total: Totals,
    pub skipped: Skipped,
    pub read_from_smaps: u64,
    pub warnings: Vec<String>,
    #[serde(skip)]
    pub view: View,
}

impl MemReport {
    fn label(&self, g: &Group) -> String {
        match (self.group_by, g.pid) {
            (GroupBy::Pid, Some(pid)) => format!("{} [{pid}]", g.name),
            _ => format!("{} ({})", g.name, g.processes),
        }
    }

    fn column(&self) -> &'static str {
        match self.group_by {
            GroupBy::Program => "program",
            GroupBy::Pid => "pid",
            GroupBy::User => "user",
            GroupBy::Cgroup => "cgroup",
        }
    }

    fn swap_header(&self) -> &'static str {
        if self.swap_source == "Swap" {
            "Swap*"
        } else {
            "Swap"
        }
    }

    /// A size in the view's unit.
    fn size(&self, bytes: u64) -> String {
        if self.view.human_sizes {
            return human_bytes(bytes);
        }
        match self.view.unit {
            Unit::B => thousands(bytes),
            Unit::K => thousands(bytes / 1024),
            Unit::M => tenths(bytes, 1 << 20),
            Unit::G => tenths(bytes, 1 << 30),
        }
    }

    /// A size for CSV and Markdown: no thousands separators.
    fn plain_size(&self, bytes: u64) -> String {
        if self.view.human_sizes {
            return human_bytes(bytes);
        }
        match self.view.unit {
            Unit::B => bytes.to_string(),
            Unit::K => (bytes / 1024).to_string(),
            Unit::M => tenths(bytes, 1 << 20).replace(',', ""),
            Unit::G => tenths(bytes, 1 << 30).replace(',', ""),
        }
    }

    fn unit_suffix(&self) -> &'static str {
        if self.view.human_sizes {
            return "";
        }
        match self.view.unit {
            Unit::B => "bytes",
            Unit::K => "kib",
            Unit::M => "mib",
            Unit::G => "gib",
        }
    }
}

/// `bytes / unit` rounded to one decimal, with thousands separators;
/// exact integer arithmetic, no float.
fn tenths(bytes: u64, unit: u64) -> String {
    let t = (u128::from(bytes) * 10 + u128::from(unit) / 2) / u128::from(unit);
    let whole = u64::try_from(t / 10).unwrap_or(u64::MAX);
    format!("{}.{}", thousands(whole), t % 10)
}

impl Render for MemReport {
    fn human(&self, out: &mut dyn Write, style: Style) -> io::Result<()> {
        let unit = if self.view.human_sizes {
            String::new()
        } else {
            match self.view.unit {
                Unit::B => " B",
                Unit::K => " KiB",
                Unit::M => " MiB",
                Unit::G => " GiB",
            }
            .to_string()
        };
        let what = match self.group_by {
            GroupBy::Program => "Program (processes)",
            GroupBy::Pid => "Program [pid]",
            GroupBy::User => "User (processes)",
            GroupBy::Cgroup => "Cgroup (processes)",
        };
        use crate::report::text::{Column, TextTable};
        // On a narrow terminal the name is cut in its middle (its count or
        // pid stays); the TOTAL line is never cut.
        let mut table = TextTable::new(vec![
            Column::number(format!("Private{unit}")),
            Column::number(format!("Shared{unit}")),
            Column::number(format!("RAM used{unit}")),
            Column::number(format!("{}{unit}", self.swap_header())),
            Column::text(what).cut_middle(),
        ]);
        if self.view.total_only {
            table = table.without_header();
        } else {
            for g in &self.groups {
                table.row(vec![
                    self.size(g.private_bytes),
                    self.size(g.shared_bytes),
                    self.size(g.pss_bytes),
                    self.size(g.swap_bytes),
                    self.label(g),
                ]);
            }
            table.rule();
        }
        let t = &self.total;
        let hidden = if self.hidden_groups > 0 && !self.view.total_only {
            format!(", {} more rows not shown", thousands(self.hidden_groups))
        } else {
            String::new()
        };
        table.whole_row(vec![
            self.size(t.private_bytes),
            self.size(t.shared_bytes),
            self.size(t.pss_bytes),
            self.size(t.swap_bytes),
            format!(
                "TOTAL ({}, {}{hidden}){}",
                crate::units::count(t.processes, "process", "processes"),
                crate::units::count(t.groups, self.column(), &format!("{}s", self.column())),
                t.swap_not_attributed
                    .phrase()
                    .map(|p| format!("; {p}"))
                    .unwrap_or_default()
            ),
        ]);
        table.write(out, style)?;
        if self.swap_source == "Swap" && !self.view.total_only {
            writeln!(
                out,
                "* this kernel has no SwapPss: swap shared by several processes counts in each"
            )?;
        }
        Ok(())
    }

    fn table(&self) -> Table {
        let u = self.unit_suffix();
        let figure = |name: &str| {
            if u.is_empty() {
                name.to_string()
            } else {
                format!("{name}_{u}")
            }
        };
        let mut headers = vec![self.column().to_string()];
        if self.group_by == GroupBy::Pid {
            headers.push("program".into());
        }
        headers.push("processes".into());
        headers.extend(["private", "shared", "ram_used", "swap", "rss"].map(figure));
        headers.push(figure("swap_not_attributed"));
        let mut rows = Vec::new();
        let cells = |name: Vec<String>, n: u64, f: [u64; 5]| {
            let mut row = name;
            row.push(n.to_string());
            row.extend(f.map(|b| self.plain_size(b)));
            // Only the TOTAL row has the swap no process holds.
            row.push(String::new());
            row
        };
        if !self.view.total_only {
            for g in &self.groups {
                let name = match (self.group_by, g.pid) {
                    (GroupBy::Pid, Some(pid)) => vec![pid.to_string(), g.name.clone()],
                    _ => vec![g.name.clone()],
                };
                rows.push(cells(
                    name,
                    g.processes,
                    [
                        g.private_bytes,
                        g.shared_bytes,
                        g.pss_bytes,
                        g.swap_bytes,
                        g.rss_bytes,
                    ],
                ));
            }
        }
        let t = &self.total;
        let mut name = vec!["TOTAL".to_string()];
        if self.group_by == GroupBy::Pid {
            name.push(String::new());
        }
        rows.push(cells(
            name,
            t.processes,
            [
                t.private_bytes,
                t.shared_bytes,
                t.pss_bytes,
                t.swap_bytes,
                t.rss_bytes,
            ],
        ));
        if let Some(cell) = rows.last_mut().and_then(|r| r.last_mut()) {
            *cell = t.swap_not_attributed.cell(|b| self.plain_size(b));
        }
        Table { headers, rows }
    }

    fn metrics(&self) -> Option<Vec<Metric>> {
        let label = self.column();
        let labels = |g: &Group| {
            let mut l = Vec::new();
            if let Some(pid) = g.pid {
                l.push(("pid".to_string(), pid.to_string()));
                l.push(("program".to_string(), g.name.clone()));
            } else {
                l.push((label.to_string(), g.name.clone()));
            }
            l
        };
        let family = |name: &str, help: &str, get: fn(&Group) -> u64| Metric {
            name: format!("tally_mem_{name}"),
            help: help.to_string(),
            kind: MetricKind::Gauge,
            samples: self
                .groups
                .iter()
                .map(|g| Sample {
                    labels: labels(g),
                    value: get(g) as f64,
                })
                .collect(),
        };
        let total = |name: &str, help: &str, value: u64| Metric {
            name: format!("tally_mem_total_{name}"),
            help: help.to_string(),
            kind: MetricKind::Gauge,
            samples: vec![Sample {
                labels: Vec::new(),
                value: value as f64,
            }],
        };
        let t = &self.total;
        let s = &self.skipped;
        let mut metrics = vec![
            family("private_bytes", "Private memory (clean and dirty).", |g| {
                g.private_bytes
            }),
            family(
                "shared_bytes",
                "Share of shared memory (PSS minus private).",
                |g| g.shared_bytes,
            ),
            family("pss_bytes", "RAM used: proportional set size.", |g| {
                g.pss_bytes
            }),
            family(
                "swap_bytes",
                "Swap used (SwapPss where the kernel has it).",
                |g| g.swap_bytes,
            ),
            family(
                "rss_bytes",
                "Resident set size (shared pages counted in full).",
                |g| g.rss_bytes,
            ),
            family("processes", "Number of processes.", |g| g.processes),
            total(
                "private_bytes",
                "Private memory of every process counted.",
                t.private_bytes,
            ),
            total(
                "shared_bytes",
                "Shared memory share of every process counted.",
                t.shared_bytes,
            ),
            total(
                "pss_bytes",
                "RAM used by every process counted.",
                t.pss_bytes,
            ),
            total(
                "swap_bytes",
                "Swap used by every process counted.",
                t.swap_bytes,
            ),
            total("processes", "Processes counted.", t.processes),
        ];
        if let Some(b) = t.swap_not_attributed.bytes {
            metrics.push(total(
                "swap_not_attributed_bytes",
                "Swap in use that no process's SwapPss holds (tmpfs, SysV and shared \
                 anonymous memory).",
                b,
            ));
        }
        metrics.extend([Metric {
            name: "tally_mem_skipped_processes".into(),
            help: "Processes not counted, by reason.".into(),
            kind: MetricKind::Gauge,
            samples: [
                ("ended", s.ended),
                ("no_memory", s.no_memory),
                ("denied", s.denied),
                ("failed", s.failed),
            ]
            .into_iter()
            .map(|(reason, n)| Sample {
                labels: vec![("reason".into(), reason.into())],
                value: n as f64,
            })
            .collect(),
        }]);
        Some(metrics)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenths_round_exactly() {
        assert_eq!(tenths(0, 1 << 20), "0.0");
        assert_eq!(tenths(1 << 20, 1 << 20), "1.0");
        assert_eq!(tenths((1 << 20) + (1 << 20) / 20, 1 << 20), "1.0");
        assert_eq!(tenths((1 << 20) + (1 << 20) / 10, 1 << 20), "1.1");
        assert_eq!(tenths(1_234 << 20, 1 << 20), "1,234.0");
        assert_eq!(tenths(u64::MAX, 1 << 30), "17,179,869,184.0");
    }
}
