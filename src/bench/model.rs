//! The model of `tally bench`'s report: what every format renders and
//! `--baseline` reads back. It imports no benchmark and no renderer.
//!
//! JSON schema (`schema_version` 1):
//! - `mode`: `quick`, `standard` or `full`; `duration_ms`.
//! - `machine`: CPU model, logical CPUs, kernel, clocksource, governor,
//!   THP mode, hypervisor, `mem_total_bytes`, `tsc_hz`, `core_mhz`,
//!   `caches[]` (level, kind, `size_bytes`, `line_bytes`), `unavailable[]`.
//! - `harness`: `calibration` (timer source, `timer_hz`,
//!   `timer_overhead_ns`, `timer_resolution_ns`, `loop_overhead_ns`),
//!   `budget_per_figure_ms` (both passes together), `passes` (2: every
//!   benchmark runs twice, see [`super::passes`]), warm-up and minimum
//!   samples (per pass), pinned CPU, priority.
//! - `noise`: load averages, `steal_percent`, `involuntary_switches` of
//!   the measuring thread (all), `involuntary_switches_judged` and
//!   `judged_ms` (over the benchmarks that do not switch by design),
//!   `other_cpu_ms` and `other_cpu_percent` (CPU time of everything but
//!   tally and its reaped children; 100 = one CPU), `other_runnable_mean`
//!   (other runnable tasks between benchmarks), `reference` (ns per raw
//!   getpid between benchmarks: `readings`, `min_ns`, `median_ns`,
//!   `max_ns`, `variation_percent`; see [`super::machine::Reference`]),
//!   `noisy` and its `reasons[]`.
//! - `benchmarks[]`: `name`, `section`, `about`, `duration_ms`,
//!   `involuntary_switches`, `threads_at_start` (threads of tally's
//!   process as the benchmark started: 1, the measuring thread alone),
//!   `other_cpu_ms` (CPU time of everything else while it ran),
//!   `error` (the benchmark failed as a whole),
//!   `notes[]`, `memlat` (plateaus vs sysfs caches, memlat only) and
//!   `figures[]`. A figure has `id` (stable key), `label`, `x`/`x_unit`
//!   for sweeps, `definition`, then its value under a key naming the unit
//!   (`ns`, `gb_per_s`, `mhz`, `bytes`: a summary with `count`, `min`,
//!   `median`, `mean`, `stddev`, `max`, `p95`, `mad`) or `unavailable`
//!   with the reason; `cv`, `outliers` (modified z-score > 3.5, mostly
//!   preempted samples) and `cv_without_outliers`, every kept sample in
//!   `samples[]` (same unit; the first pass's, then the second's),
//!   `stability` ([`super::figure::Stability`]: `spread_percent`,
//!   `halves_percent`, `passes_percent`, and `unstable_percent`, set when
//!   the figure may move by about that much between runs, with
//!   `unstable_because` when derived from a second pass that disagreed),
//!   `iters_per_sample`, `warmup_discarded`, `notes[]`, and `implausible`:
//!   null, or why the figure failed a plausibility check
//!   ([`super::plausible`]); such a figure keeps its summary and samples
//!   here but is left out of every table, plot, metric and ratio.
//! - `baseline`: with `--baseline`, the ratio of every figure found in both;
//!   its `path` is a string, or `{lossy, bytes_hex}` for a non-UTF-8 path.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::figure::Figure;
use super::harness::Calibration;
use super::machine::{Machine, Noise};
use super::staircase::Analysis;

/// How thorough a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Under a minute: short budgets, small sweeps.
    Quick,
    /// The default: longer budgets, the same sweeps as quick.
    Standard,
    /// Long budgets, full sweeps (memlat to 4× the LLC, files to 1 GiB),
    /// and the heavy benchmarks (filecache).
    Full,
}

impl Mode {
    /// Time for one figure.
    pub fn budget_per_figure(self) -> Duration {
        match self {
            Mode::Quick => Duration::from_millis(50),
            Mode::Standard => Duration::from_millis(100),
            Mode::Full => Duration::from_millis(300),
        }
    }
}

/// The report section a benchmark belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Section {
    Cpu,
    Memory,
    FileSystem,
    Events,
}

impl Section {
    pub fn title(self) -> &'static str {
        match self {
            Section::Cpu => "CPU & scheduling",
            Section::Memory => "Memory",
            Section::FileSystem => "File system",
            Section::Events => "Readiness (select / poll / epoll)",
        }
    }
}

/// How the harness ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HarnessInfo {
    pub calibration: Calibration,
    /// Time for one figure, all passes together.
    pub budget_per_figure_ms: u64,
    /// Passes over the benchmarks, each with its share of the budget (see
    /// [`super::passes`]).
    #[serde(default = "one_pass")]
    pub passes: u32,
    pub warmup_samples: usize,
    pub min_samples: usize,
    pub pinned_cpu: Option<usize>,
    pub priority: String,
}

fn one_pass() -> u32 {
    1
}

/// One benchmark's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchResult {
    pub name: String,
    pub section: Section,
    pub about: String,
    pub duration_ms: u64,
    pub involuntary_switches: u64,
    /// Threads of tally's process when the benchmark started (`Threads:`
    /// of /proc/self/status): 1, or the benchmarks' timed system calls
    /// would pay for a shared descriptor table. Benchmarks that start
    /// threads of their own (ctxswitch, membw, stream, events, spawn) have
    /// more while they run and join them before they end.
    #[serde(default)]
    pub threads_at_start: Option<u64>,
    /// CPU time of everything but tally (and the children it reaped)
    /// while the benchmark ran, ms: other processes, and kernel threads
    /// (some doing the benchmark's work: loopback softirqs, writeback).
    #[serde(default)]
    pub other_cpu_ms: Option<u64>,
    /// Set when the benchmark failed as a whole.
    pub error: Option<String>,
    #[serde(default)]
    pub notes: Vec<String>,
    /// memlat only: plateaus found against the sysfs cache sizes.
    pub memlat: Option<Analysis>,
    pub figures: Vec<Figure>,
}

impl BenchResult {
    pub fn push(&mut self, f: Figure) {
        self.figures.push(f);
    }
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchReport {
    pub schema_version: u32,
    pub mode: Mode,
    pub duration_ms: u64,
    pub machine: Machine,
    pub harness: HarnessInfo,
    pub noise: Noise,
    pub benchmarks: Vec<BenchResult>,
    pub baseline: Option<Baseline>,
}

/// One figure found in both runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub id: String,
    pub unit: String,
    pub old_median: f64,
    pub new_median: f64,
    /// new / old (of the medians).
    pub ratio: f64,
    /// The 95% interval of the ratio the verdict is read from: the
    /// Hodges–Lehmann ratio's Mann–Whitney (Moses) interval; absent when
    /// the samples are too few to bound it or the baseline's median is 0.
    #[serde(default)]
    pub ratio_low: Option<f64>,
    #[serde(default)]
    pub ratio_high: Option<f64>,
    pub higher_is_better: bool,
    /// The two-sided Mann–Whitney U p-value of this run's samples against
    /// the baseline's (exact with ties at small n, the test the interval
    /// inverts); `None` when either kept fewer than two samples.
    #[serde(default)]
    pub p_value: Option<f64>,
    /// What the interval says: `better`, `worse` (it leaves 1 out on that
    /// side), `same` (it holds 1: no difference shown, not proof of
    /// sameness) or `unknown` (too few samples to leave it out at all).
    #[serde(default = "Verdict::unknown")]
    pub verdict: Verdict,
}

/// Whether a figure changed against the baseline, by a rank test on the
/// samples of both runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Better,
    Worse,
    Same,
    Unknown,
}

impl Verdict {
    fn unknown() -> Verdict {
        Verdict::Unknown
    }

    /// The mark in the human table's `vs base` column.
    pub fn mark(self) -> &'static str {
        match self {
            Verdict::Better => "✓",
            Verdict::Worse => "✗",
            Verdict::Same => "=",
            Verdict::Unknown => "?",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::Same => "same",
            Verdict::Unknown => "unknown",
        }
    }
}

/// The comparison with an earlier run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    /// Written losslessly (a non-UTF-8 path as `{lossy, bytes_hex}`).
    #[serde(
        serialize_with = "crate::text::path::serialize",
        deserialize_with = "crate::text::path::deserialize"
    )]
    pub path: PathBuf,
    pub old_cpu_model: Option<String>,
    pub old_kernel: Option<String>,
    pub old_mode: Mode,
    pub comparisons: Vec<Comparison>,
    /// Figures of this run the baseline lacks (or had unavailable).
    pub missing_in_baseline: usize,
    /// With `--fail-on`: the gate's outcome per gated figure.
    #[serde(default)]
    pub gate: Option<BenchGate>,
}

/// One `--fail-on ID_GLOB=PCT` of `tally bench`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchRule {
    /// A glob over figure ids (`*` any run of characters, `?` one).
    pub glob: String,
    /// How much worse a figure may get, a fraction (0.05 for 5%).
    pub limit: f64,
}

/// The gate over the figures `--fail-on` names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchGate {
    pub rules: Vec<BenchRule>,
    pub strict: bool,
    /// The family: the gated figures found in both runs; the tests are
    /// Holm-adjusted over it and each interval is at 1 − alpha / its size.
    pub alpha: f64,
    pub family_size: u32,
    pub interval_level: f64,
    /// The worst outcome; `pass` when no figure was gated.
    pub outcome: crate::gate::Outcome,
    pub exit_status: u8,
    pub headline: String,
    pub results: Vec<BenchGateResult>,
}

/// The gate's outcome for one figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchGateResult {
    pub id: String,
    pub unit: String,
    pub higher_is_better: bool,
    pub limit: f64,
    /// This run's median over the baseline's, and its interval (widened by
    /// `unstable_percent`).
    pub ratio: Option<f64>,
    pub ratio_low: Option<f64>,
    pub ratio_high: Option<f64>,
    /// The p-value of the test the interval inverts (Mann–Whitney U over
    /// both runs' samples), Bonferroni-adjusted over the family.
    pub p_adjusted: Option<f64>,
    /// How much the figure may move between runs (the larger of the two
    /// runs'), by which the interval was widened.
    pub unstable_percent: Option<f64>,
    pub outcome: crate::gate::Outcome,
    pub note: Option<String>,
}

impl Baseline {
    /// new / old for figure `id`.
    pub fn ratio_of(&self, id: &str) -> Option<f64> {
        self.comparison_of(id).map(|c| c.ratio)
    }

    /// The comparison of figure `id`.
    pub fn comparison_of(&self, id: &str) -> Option<&Comparison> {
        self.comparisons.iter().find(|c| c.id == id)
    }

    pub fn describe(&self) -> String {
        format!(
            "{} ({}, kernel {}, {:?} mode): {} figures compared, {} not in the baseline; ratio = this run / baseline",
            crate::text::path::display(&self.path),
            // Read from the baseline: escaped as text not from tally.
            self.old_cpu_model
                .as_deref()
                .map_or("unknown CPU".into(), crate::text::escape_text),
            self.old_kernel
                .as_deref()
                .map_or("unknown".into(), crate::text::escape_text),
            self.old_mode,
            self.comparisons.len(),
            self.missing_in_baseline
        )
    }
}
