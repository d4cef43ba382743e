//! The report of `tally compare`: per command its runs and the summary of
//! every figure of `tally run` ([`FIGURES`](crate::run::report::FIGURES)), and per figure its ratio to
//! the reference command with an interval and a test.
//!
//! JSON schema (`schema_version` 2), keys carry their unit:
//! - `commands[]`: `name`, `command`, `parameters`, `runs[]` (the records of
//!   `tally run`), `run_order[]` (each run's place in the whole session),
//!   `failed_runs`, `summary[]` (per figure key), `compared_with` (the
//!   command it is compared with, 0-based; null for a reference),
//!   `from_baseline` (its runs were read from `--baseline`), `headline` and
//!   `versus_reference[]`: per figure `ratio` (the Hodges–Lehmann ratio to
//!   the reference), `ratio_low` and `ratio_high` (its family-wise
//!   interval; `ratio_high` null when unbounded), `p_value`, `p_adjusted`
//!   (Bonferroni), `u`, `test`, `verdict` (`unchanged`, `undecided`,
//!   `too-few-runs`, `same-within-threshold`, `lower`, `higher`: read from
//!   the interval), `runs_needed` and, with `too-few-runs`, `ranges_overlap`.
//! - `reference` (0-based; with a baseline, the first stored command),
//!   `reference_is` (`fastest`, `chosen`, `baseline`, or `least-work`:
//!   the fewest instructions, of commands counted and not timed), `alpha`,
//!   `correction`, `family_size`, `interval_level`, `threshold`, `method`,
//!   `seed`, `warnings`, `interrupted_by`, `other_cpu_percent` (other
//!   work on the machine while the runs ran, percent of one CPU), `speed`
//!   (the speed probes: `probes_ns[]`, `median_ns`, `spread`,
//!   `versus_baseline`, `not_comparable`).
//! - `baseline`: with `--baseline`, see [`BaselineUse`]; `gate`: with
//!   `--fail-on`, see [`Gate`].

//!
//! The model alone: how its figures are compared is [`super::statistics`]
//! (which builds it), and how its verdicts read is [`super::prose`].

use serde::Serialize;

use super::plan::{BaselineUse, Instance, Rule, View};
use crate::gate::Outcome;
use crate::run::report::{Figure, FigureSummary, RunRecord};
use crate::stats;

/// What a figure of a command did against the reference, read from the
/// interval of its ratio at the family's level (1 − alpha/m): so a verdict
/// never contradicts the interval shown beside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Every run of both gave the same value: nothing to test.
    Unchanged,
    /// The interval lies across `1 ± threshold`: these runs cannot tell
    /// a difference from sameness; `runs_needed` says about how many could.
    Undecided,
    /// No outcome of these runs could bound the interval at the family's
    /// level (it is `[0, ∞]`): `runs_needed` says how many could.
    TooFewRuns,
    /// The whole interval lies within `1 ± threshold`.
    SameWithinThreshold,
    /// The whole interval lies below `1 − threshold`.
    Lower,
    /// The whole interval lies above `1 + threshold`.
    Higher,
}

impl Verdict {
    /// Whether the verdict claims a difference.
    pub fn differs(self) -> bool {
        matches!(self, Verdict::Lower | Verdict::Higher)
    }

    /// Whether these runs left the figure open.
    pub fn open(self) -> bool {
        matches!(self, Verdict::Undecided | Verdict::TooFewRuns)
    }
}

/// Counted figures (`--count`) whose runs agree within this fraction on
/// each side (the largest over the smallest, less 1) are compared by
/// their range, not by a test: the interval runs from the smallest to the
/// largest ratio of a run of one to a run of the other, and the verdict is
/// read from it at any number of runs, one a side included. A count that
/// repeats (Valgrind's, of a program that does the same work each time)
/// has no sampling error to test; the CPU's counters of such a program
/// differ by a few hundredths of a percent (interrupts counted on x86). A
/// wider spread means the program's work varies from run to run, and the
/// figure is tested as a time is.
pub const COUNT_SPREAD: f64 = 0.01;

/// What [`FigureComparison::test`] says of a counted figure compared by
/// its range (see [`COUNT_SPREAD`]).
pub const EXACT_TEST: &str = "counts";

/// One figure of one command against the reference.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FigureComparison {
    pub figure: String,
    /// This command's median over the reference's (absent when the
    /// reference's median is 0).
    pub ratio: Option<f64>,
    /// The interval of the ratio at the report's `interval_level`
    /// (`ratio_high` null when these runs cannot bound it).
    pub ratio_low: Option<f64>,
    pub ratio_high: Option<f64>,
    /// The two-sided p-value of no change of this figure alone, from the
    /// test whose inversion is the interval (see `crate::stats::shift`).
    pub p_value: f64,
    /// `p_value` times the family's size (Bonferroni), at most 1: at or
    /// below the report's `alpha` exactly when the interval leaves out 1.
    pub p_adjusted: f64,
    pub u: f64,
    /// `exact` or `normal` (see `crate::stats::shift`); `none` when every
    /// run of both gave the same value.
    pub test: &'static str,
    pub verdict: Verdict,
    /// With `undecided` or `too-few-runs`: about how many runs of each
    /// command would decide it.
    pub runs_needed: Option<u32>,
    /// With `too-few-runs`: whether the ranges (least to greatest value)
    /// of the two commands' runs overlap. What so few runs can say without
    /// an interval, and no verdict: ranges apart at 3 runs each happen by
    /// chance once in 10 comparisons of the same command.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ranges_overlap: Option<bool>,
}

/// One command's runs and figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommandResult {
    pub name: String,
    pub command: String,
    pub parameters: Vec<(String, String)>,
    pub runs: Vec<RunRecord>,
    /// Each run's place (1-based) in the whole session's order.
    pub run_order: Vec<u32>,
    /// Runs that exited non-zero or were killed (with -i).
    pub failed_runs: u32,
    pub summary: Vec<FigureSummary>,
    /// Empty for the reference itself.
    pub versus_reference: Vec<FigureComparison>,
    /// What differs from the reference, by how much and how sure, in one
    /// line (empty for the reference).
    pub headline: String,
    /// How the runs ended, when not every run exited 0 (`exit 1`, `killed by SIGSEGV`).
    pub exits: Vec<String>,
    /// The command (0-based) this one is compared with; `None` for a
    /// reference.
    pub compared_with: Option<usize>,
    /// The runs were read from the `--baseline` file, not measured now.
    pub from_baseline: bool,
    /// With `--count`: the command's counting (where its instructions
    /// went, what its counts may not show).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<crate::count::CountReport>,
    /// With `--count=sim`: which functions its change of instructions
    /// against its reference is in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions_change: Option<crate::count::Attribution>,
}

impl CommandResult {
    pub(super) fn new(i: &Instance, capacity: usize) -> CommandResult {
        CommandResult {
            name: i.name.clone(),
            command: i.command.clone(),
            parameters: i.parameters.clone(),
            runs: Vec::with_capacity(capacity),
            run_order: Vec::with_capacity(capacity),
            failed_runs: 0,
            summary: Vec::new(),
            versus_reference: Vec::new(),
            headline: String::new(),
            exits: Vec::new(),
            compared_with: None,
            from_baseline: false,
            count: None,
            instructions_change: None,
        }
    }

    /// The figure's values over the runs it applies to, when every one of
    /// them has it (see [`crate::run::report::samples`]).
    pub fn values(&self, fig: &Figure) -> Option<Vec<f64>> {
        crate::run::report::samples(fig, &self.runs)
    }

    pub fn summary_of(&self, key: &str) -> Option<&stats::Summary> {
        self.summary
            .iter()
            .find(|f| f.figure == key)
            .map(|f| &f.summary)
    }

    pub fn versus(&self, key: &str) -> Option<&FigureComparison> {
        self.versus_reference.iter().find(|f| f.figure == key)
    }
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompareReport {
    pub schema_version: u32,
    pub commands: Vec<CommandResult>,
    /// The index (0-based) of the command the others are compared with.
    pub reference: usize,
    /// `fastest` (by median wall time) or `chosen` (`--reference`).
    pub reference_is: &'static str,
    /// The family-wise error rate: the chance that the report calls any
    /// figure of any command different when none differs.
    pub alpha: f64,
    /// How the family's intervals and p-values are adjusted: `bonferroni`.
    pub correction: &'static str,
    /// The tests in the family: every figure of every command against the
    /// reference whose runs did not all give the same value.
    pub family_size: u32,
    /// The confidence level of each ratio interval: 1 − alpha / family
    /// size (Bonferroni), so that all hold together at 1 − alpha.
    pub interval_level: f64,
    /// An interval within 1 ± this fraction is `same-within-threshold`;
    /// beyond it, `lower` or `higher`.
    pub threshold: f64,
    /// How intervals and verdicts are computed, in words.
    pub method: String,
    pub runs_per_command: u32,
    pub warmup_runs: u32,
    /// The seed of the run order and of the intervals: `--seed` replays
    /// them.
    pub seed: u64,
    pub warnings: Vec<String>,
    pub interrupted_by: Option<String>,
    /// CPU time of everything but this comparison while its runs ran, in
    /// percent of one CPU (other work that can slow wall times); absent
    /// when /proc/stat could not be read.
    pub other_cpu_percent: Option<f64>,
    /// The speed probes made before runs, outside their clocks (see
    /// `super::probe`); absent when none was made.
    pub speed: Option<crate::speed::Speed>,
    /// With `--baseline`: the file the reference runs came from, and how
    /// it differs from this comparison.
    pub baseline: Option<BaselineUse>,
    /// With `--fail-on`: the gate's outcome per figure and command.
    pub gate: Option<Gate>,
    /// How the human table is laid out (`--sort`, `--time-unit`).
    #[serde(skip)]
    pub view: View,
    /// The page cache made cold or warm before each run (`--cold`,
    /// `--warm`, `--drop-caches`); absent without them.
    pub page_cache: Option<PreparedCache>,
    /// With `--count`: how the counted figures were counted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<CompareCount>,
}

/// How a comparison's work was counted (`--count`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompareCount {
    pub source: crate::count::Source,
    /// Counted runs of each command (under the simulator, apart from the
    /// timed ones; with the CPU's counters, the timed runs themselves).
    pub runs_per_command: u32,
}

/// The gate's outcome for one figure of one command.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateResult {
    /// The command (0-based, as in `commands[]`) and its name.
    pub command: usize,
    pub name: String,
    /// The command it was compared with (0-based).
    pub reference: usize,
    /// The figure's JSON key.
    pub figure: &'static str,
    pub limit: f64,
    pub ratio: Option<f64>,
    /// The ratio's interval at the report's `interval_level`.
    pub ratio_low: Option<f64>,
    pub ratio_high: Option<f64>,
    /// The comparison's Bonferroni-adjusted p-value (absent when the
    /// figure was not measured).
    pub p_adjusted: Option<f64>,
    pub outcome: Outcome,
    /// With `inconclusive`: about how many runs of each command would
    /// decide it.
    pub runs_needed: Option<u32>,
    /// Why it is inconclusive beyond the interval lying across the limit.
    pub reason: Option<Reason>,
    /// The reason in words.
    pub note: Option<String>,
    /// Counts compared by their range (see
    /// [`COUNT_SPREAD`]): the outcome is certain, not a
    /// test's.
    #[serde(default)]
    pub exact: bool,
    /// A time against a stored baseline decided by its fastest runs (see
    /// [`crate::compare::gate`]): then `ratio`, `ratio_low` and
    /// `ratio_high` are those runs' (their [`crate::speed::FASTEST`]
    /// quantile's), and this keeps the typical runs' for the report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fastest: Option<FastestRuns>,
}

/// How a time's fastest runs decided a regression that its typical runs
/// left undecided: see [`crate::compare::gate`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FastestRuns {
    /// The share of runs whose quantile was compared (0.05).
    pub quantile: f64,
    /// The most the speed probes say the machine slowed, at its fastest
    /// or typically (at least 1): what the fastest runs' ratio had to
    /// exceed the limit by.
    pub machine_slower: f64,
    /// The typical runs' ratio (of the medians) and its interval, as the
    /// comparison gives them.
    pub typical_ratio: Option<f64>,
    pub typical_low: Option<f64>,
    pub typical_high: Option<f64>,
}

/// Why a figure is inconclusive, when its interval alone does not say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reason {
    /// Not measured in every run (I/O figures unavailable).
    NotMeasured,
    /// The runs cannot show a difference at the family's level at all.
    TooFewRuns,
    /// The ratio sits on the limit.
    AtLimit,
    /// The baseline's runs are too few to decide it.
    BaselineTooSmall,
    /// The reference's median is 0 and the difference is not significant.
    ZeroReference,
    /// A time regressed against a stored baseline, but other work on the
    /// machine differed between the baseline's runs and these by more
    /// than [`OTHER_WORK_DIFFERS`] ([`OTHER_WORK_DIFFERS_WAITING`] when the
    /// added time was waiting): the change may be the machine's.
    OtherWork,
    /// A time against a stored baseline, when the speed probes say the
    /// machine ran at another speed than when the baseline was saved, or
    /// that its speed varied: neither a regression nor a pass.
    MachineSpeed,
    /// Counts against a baseline counted by another source (another
    /// Valgrind, cache geometry or CPU): not compared as like for like.
    CountSource,
}

/// Points (percent of one CPU) by which other work on the machine may
/// differ between a baseline's runs and a comparison's before times
/// measured in the two are not compared as like for like.
pub const OTHER_WORK_DIFFERS: f64 = 20.0;

/// The same when the wall time moved by the gate's limit or more while
/// the command's cpu time moved by less than half as much: the change was
/// in waiting, as when another process shares the command's CPU. A busy loop
/// on the CPU of a 10 ms loop measured 32–53% of a CPU of other work on
/// the 2-core VM, against 0–15% idle, and stretched the loop's wall time
/// by 60% with its cpu time unchanged; with two busy loops on the
/// machine, other work moved by 14 points between a baseline and a gate
/// and the unchanged loop's wall time by −37%.
pub const OTHER_WORK_DIFFERS_WAITING: f64 = 10.0;

/// The gate over a whole comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Gate {
    pub rules: Vec<Rule>,
    /// An inconclusive figure fails the gate too.
    pub strict: bool,
    /// The worst outcome over every result.
    pub outcome: Outcome,
    /// The exit status it calls for: 0, 3 (regression) or 4 (inconclusive
    /// with `strict`).
    pub exit_status: u8,
    /// One line: what regressed, by how much, how sure; what passed.
    pub headline: String,
    pub results: Vec<GateResult>,
}

/// What preparing the page cache before each run cost: not part of any
/// run's figures, but part of what the comparison took.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PreparedCache {
    /// Runs it was made before (warm-up runs included).
    pub runs: u64,
    /// Files evicted before a run (`--cold`; the last run's count).
    pub evicted_files: Option<u64>,
    /// Time spent evicting, over every run, and its median per run.
    pub evict_ns_total: u64,
    pub evict_ns_median: Option<u64>,
    /// Files warmed before a run (`--warm`; the last run's count).
    pub warmed_files: Option<u64>,
    pub warm_ns_total: u64,
    pub warm_ns_median: Option<u64>,
}

impl CompareReport {
    /// Whether figure `key` is unchanged (every run of every command gave
    /// the same value) for every command against the reference.
    pub fn unchanged(&self, key: &str) -> bool {
        self.commands
            .iter()
            .filter(|c| c.compared_with.is_some())
            .all(|c| {
                c.versus(key)
                    .is_some_and(|v| v.verdict == Verdict::Unchanged)
            })
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn the_models_of_run_and_compare_import_no_layout() {
        use crate::bench::layering::{assert_no_circles, imports};
        for folder in ["src/run", "src/compare"] {
            let graph = imports(folder);
            let uses = |a: &str| graph.iter().find(|g| g.0 == a).unwrap().1.clone();
            // The layouts use the model; the model uses no layout.
            assert!(
                uses("report")
                    .iter()
                    .all(|u| u != "human" && u != "html" && u != "render"),
                "{folder}: {:?}",
                uses("report")
            );
            assert!(uses("render").contains(&"report".to_string()), "{folder}");
            assert_no_circles(&graph);
        }
    }
}
