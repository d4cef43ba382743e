//! The report of `tally mem` and how it renders.
//!
//! JSON schema (`schema_version` 2); every figure is in bytes, exactly the
//! kernel's kB times 1024:
//! - `group_by`: `program`, `pid`, `user` or `cgroup`; `name_mode`: `exe`,
//!   `comm` or `argv0`; `split_args`: arguments part of the name.
//! - `swap_source`: `SwapPss` (each process's share of swapped pages),
//!   `Swap` (the kernel has no SwapPss: shared swap counts once per
//!   process), or `none` (no process read).
//! - `groups[]`: `name` (program, user or cgroup path; the program for
//!   `pid`), `pid` (with `group_by` `pid`), `processes`, `pids[]`,
//!   and one `KEY_bytes` per [`COLUMNS`] entry: `private_bytes`,
//!   `shared_bytes` (PSS − private), `pss_bytes` (RAM used), `swap_bytes`,
//!   `rss_bytes`. Ascending by the sort key.
//! - `hidden_groups`: rows left out by `--top` (still in the total).
//! - `total`: the same figures over every process kept, plus `groups` and
//!   `swap_not_attributed` ([`SwapRest`]: `bytes`, null when unavailable,
//!   `swap_total_bytes`, `swap_used_bytes`, and `unavailable`, the reason).
//! - `skipped`: processes not counted: `ended` (gone mid-scan),
//!   `no_memory` (kernel threads, zombies), `denied` (no permission;
//!   `first_denied_pid`, the lowest PID denied, is named in the note),
//!   `failed` (other errors, the first in `first_error`).
//! - `read_from_smaps`: processes read from `smaps` for lack of a rollup.
//! - `warnings[]`: in words.
//! - GPU memory, only when measured (nvidia-smi on PATH and answering, or
//!   `--gpu`): `gpu_bytes` in each row and in `total` (whole MiB from the
//!   driver times 2^20; `null` when the driver gives no figure for one of
//!   the processes), and `gpu` ([`super::gpu::GpuSummary`]: `source`,
//!   `listed_processes`, `elsewhere_processes` and `elsewhere_bytes`,
//!   `unread_processes` and `unread_bytes`, `unknown_processes`). With
//!   `--gpu` and no answer: `"gpu": null` and `gpu_reason`, no `gpu_bytes`.
//!   Without either, none of these keys.

use std::io::{self, Write};

use serde::{Deserialize, Serialize};

use super::columns::{COLUMNS, GPU, GpuBytes};
use super::gpu::{GpuPart, GpuState};
use super::group::GroupBy;
use super::name::NameMode;
pub use super::rows::{Group, SwapRest, Totals};
use super::scan::Skipped;
use crate::report::{Metric, Render, Style, Table};
use crate::units::{human_bytes, thousands};

/// The unit of human, CSV and Markdown figures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
pub enum Unit {
    /// Bytes.
    B,
    /// KiB (the kernel's kB).
    K,
    /// MiB, one decimal.
    M,
    /// GiB, one decimal.
    G,
    /// The one that suits the largest total: KiB below 10 MiB, GiB from
    /// 10 GiB, MiB between (the default for people: a fixed MiB read
    /// 2,737.4 for 2.7 GiB and 0.0 for a 40 KiB program).
    #[default]
    Auto,
}

impl Unit {
    /// `Auto` made K, M or G for a report whose largest total is
    /// `largest_bytes`; another unit as it is.
    pub fn resolve(self, largest_bytes: u64) -> Unit {
        match self {
            Unit::Auto if largest_bytes < 10 << 20 => Unit::K,
            Unit::Auto if largest_bytes >= 10 << 30 => Unit::G,
            Unit::Auto => Unit::M,
            u => u,
        }
    }
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
    /// GPU memory: `gpu` (absent when not measured, `null` with
    /// `gpu_reason` when asked for and unavailable).
    #[serde(flatten)]
    pub gpu: GpuPart,
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
    /// The unit of the figures: `--unit`, or for `auto` the one that
    /// suits the largest total (GPU memory included).
    fn unit(&self) -> Unit {
        let gpu = match self.total.gpu_bytes {
            super::columns::GpuBytes::Known(b) => b,
            _ => 0,
        };
        let largest = (0..COLUMNS.len())
            .filter_map(|i| self.total.figures.get(i))
            .chain([gpu])
            .max()
            .unwrap_or(0);
        self.view.unit.resolve(largest)
    }

    fn size(&self, bytes: u64) -> String {
        if self.view.human_sizes {
            return human_bytes(bytes);
        }
        match self.unit() {
            Unit::B => thousands(bytes),
            Unit::K => thousands(bytes / 1024),
            Unit::M | Unit::Auto => tenths(bytes, 1 << 20),
            Unit::G => tenths(bytes, 1 << 30),
        }
    }

    /// A size for CSV and Markdown: no thousands separators.
    fn plain_size(&self, bytes: u64) -> String {
        if self.view.human_sizes {
            return human_bytes(bytes);
        }
        match self.unit() {
            Unit::B => bytes.to_string(),
            Unit::K => (bytes / 1024).to_string(),
            Unit::M | Unit::Auto => tenths(bytes, 1 << 20).replace(',', ""),
            Unit::G => tenths(bytes, 1 << 30).replace(',', ""),
        }
    }

    /// Whether the report has the GPU column (GPU memory was measured).
    fn gpu_shown(&self) -> bool {
        matches!(self.gpu.gpu, GpuState::Measured(_))
    }

    /// A GPU cell: the size, or `—` where the driver gave no figure.
    fn gpu_cell(&self, gpu: GpuBytes, size: impl Fn(u64) -> String) -> String {
        match gpu {
            GpuBytes::Known(b) => size(b),
            GpuBytes::Unknown => "—".to_string(),
            GpuBytes::NotMeasured => String::new(),
        }
    }

    fn unit_suffix(&self) -> &'static str {
        if self.view.human_sizes {
            return "";
        }
        match self.unit() {
            Unit::B => "bytes",
            Unit::K => "kib",
            Unit::M | Unit::Auto => "mib",
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

// The formats MemReport renders (checked before the command works).
crate::forms_of!(MemReport: Text, Data, Table, Metrics);

impl Render for MemReport {
    fn human(&self, out: &mut dyn Write, style: Style) -> io::Result<()> {
        use crate::report::text::{Column as TextColumn, TextTable};
        let unit = if self.view.human_sizes {
            String::new()
        } else {
            match self.unit() {
                Unit::B => " B",
                Unit::K => " KiB",
                Unit::M | Unit::Auto => " MiB",
                Unit::G => " GiB",
            }
            .to_string()
        };
        if self.view.total_only {
            // ps_mem's -t: one figure, the RAM used by every process counted.
            let ram = COLUMNS.iter().position(|c| c.key == "pss");
            let bytes = ram.and_then(|i| self.total.figures.get(i)).unwrap_or(0);
            return writeln!(out, "{}{unit}", self.size(bytes));
        }
        let what = match self.group_by {
            GroupBy::Program => "Program (processes)",
            GroupBy::Pid => "Program [pid]",
            GroupBy::User => "User (processes)",
            GroupBy::Cgroup => "Cgroup (processes)",
        };
        // The figures shown are the COLUMNS with a human header. On a
        // narrow terminal the name is cut in its middle (its count or pid
        // stays); the TOTAL line is never cut.
        let shown: Vec<usize> = (0..COLUMNS.len())
            .filter(|&i| COLUMNS[i].header.is_some())
            .collect();
        let mut columns: Vec<TextColumn> = shown
            .iter()
            .map(|&i| &COLUMNS[i])
            .map(|c| match (c.key, c.header) {
                ("swap", _) => TextColumn::number(format!("{}{unit}", self.swap_header())),
                (_, h) => TextColumn::number(format!("{}{unit}", h.unwrap_or_default())),
            })
            .collect();
        if self.gpu_shown() {
            columns.push(TextColumn::number(format!("{}{unit}", GPU.header)));
        }
        columns.push(TextColumn::text(what).cut_middle());
        let mut table = TextTable::new(columns);
        if self.view.total_only {
            table = table.without_header();
        } else {
            for g in &self.groups {
                let mut cells: Vec<String> = shown
                    .iter()
                    .map(|&i| self.size(g.figures.get(i).unwrap_or(0)))
                    .collect();
                if self.gpu_shown() {
                    cells.push(self.gpu_cell(g.gpu_bytes, |b| self.size(b)));
                }
                cells.push(self.label(g));
                table.row(cells);
            }
            table.rule();
        }
        let t = &self.total;
        let hidden = if self.hidden_groups > 0 && !self.view.total_only {
            format!(", {} more rows not shown", thousands(self.hidden_groups))
        } else {
            String::new()
        };
        let mut total: Vec<String> = shown
            .iter()
            .map(|&i| self.size(t.figures.get(i).unwrap_or(0)))
            .collect();
        if self.gpu_shown() {
            total.push(self.gpu_cell(t.gpu_bytes, |b| self.size(b)));
        }
        total.push(format!(
            "TOTAL ({}, {}{hidden}){}",
            crate::units::count(t.processes, "process", "processes"),
            crate::units::count(t.groups, self.column(), &format!("{}s", self.column())),
            t.swap_not_attributed
                .phrase()
                .map(|p| format!("; {p}"))
                .unwrap_or_default()
        ));
        table.whole_row(total);
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
        headers.extend(COLUMNS.iter().map(|c| figure(c.key)));
        if self.gpu_shown() {
            headers.push(figure(GPU.key));
        }
        headers.push(figure("swap_not_attributed"));
        let mut rows = Vec::new();
        let cells = |name: Vec<String>, n: u64, f: Vec<u64>, gpu: GpuBytes| {
            let mut row = name;
            row.push(n.to_string());
            row.extend(f.into_iter().map(|b| self.plain_size(b)));
            if self.gpu_shown() {
                // Unknown: an empty cell, as CSV says "no value".
                row.push(match gpu {
                    GpuBytes::Known(b) => self.plain_size(b),
                    _ => String::new(),
                });
            }
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
                    g.figures.iter().map(|(_, v)| v).collect(),
                    g.gpu_bytes,
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
            t.figures.iter().map(|(_, v)| v).collect(),
            t.gpu_bytes,
        ));
        if let Some(cell) = rows.last_mut().and_then(|r| r.last_mut()) {
            *cell = t.swap_not_attributed.cell(|b| self.plain_size(b));
        }
        Table { headers, rows }
    }

    fn metrics(&self) -> Option<Vec<Metric>> {
        use crate::report::prometheus::Unit;
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
        let t = &self.total;
        let s = &self.skipped;
        // Per-row families and their totals come from one table, so a row
        // figure never lacks its `tally_mem_total_*`.
        let mut metrics: Vec<Metric> = COLUMNS
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let mut m = Metric::gauge(&format!("tally_mem_{}", c.key), Unit::Bytes, c.help);
                for g in &self.groups {
                    m.push(labels(g), g.figures.get(i).unwrap_or(0) as f64);
                }
                m
            })
            .collect();
        let mut processes =
            Metric::gauge("tally_mem_processes", Unit::Count, "Number of processes.");
        for g in &self.groups {
            processes.push(labels(g), g.processes as f64);
        }
        metrics.push(processes);
        if self.gpu_shown() {
            // Rows whose figure is unknown are left out, never a 0.
            let mut gpu = Metric::gauge(&format!("tally_mem_{}", GPU.key), Unit::Bytes, GPU.help);
            for g in &self.groups {
                if let GpuBytes::Known(b) = g.gpu_bytes {
                    gpu.push(labels(g), b as f64);
                }
            }
            if !gpu.samples.is_empty() {
                metrics.push(gpu);
            }
        }
        metrics.extend(t.figures.iter().map(|(c, v)| {
            Metric::gauge(
                &format!("tally_mem_total_{}", c.key),
                Unit::Bytes,
                c.total_help,
            )
            .with(Vec::new(), v as f64)
        }));
        metrics.push(
            Metric::gauge(
                "tally_mem_total_processes",
                Unit::Count,
                "Processes counted.",
            )
            .with(Vec::new(), t.processes as f64),
        );
        if let (true, GpuBytes::Known(b)) = (self.gpu_shown(), t.gpu_bytes) {
            metrics.push(
                Metric::gauge(
                    &format!("tally_mem_total_{}", GPU.key),
                    Unit::Bytes,
                    GPU.total_help,
                )
                .with(Vec::new(), b as f64),
            );
        }
        if let Some(b) = t.swap_not_attributed.bytes {
            metrics.push(
                Metric::gauge(
                    "tally_mem_total_swap_not_attributed",
                    Unit::Bytes,
                    "Swap in use that no process's SwapPss holds (tmpfs, SysV and shared \
                     anonymous memory).",
                )
                .with(Vec::new(), b as f64),
            );
        }
        let mut skipped = Metric::gauge(
            "tally_mem_skipped_processes",
            Unit::Count,
            "Processes not counted, by reason.",
        );
        for (reason, n) in [
            ("ended", s.ended),
            ("no_memory", s.no_memory),
            ("denied", s.denied),
            ("failed", s.failed),
        ] {
            skipped.push(vec![("reason".into(), reason.into())], n as f64);
        }
        metrics.push(skipped);
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
