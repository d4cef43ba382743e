//! The report of `tally compare`: per command its runs and the summary of
//! every figure of `tally run` ([`FIGURES`]), and per figure its ratio to
//! the reference command with an interval and a test.
//!
//! JSON schema (`schema_version` 2), keys carry their unit:
//! - `commands[]`: `name`, `command`, `parameters`, `runs[]` (the records of
//!   `tally run`), `run_order[]` (each run's place in the whole session),
//!   `failed_runs`, `summary[]` (per figure key), `compared_with` (the
//!   command it is compared with, 0-based; null for a reference),
//!   `from_baseline` (its runs were read from `--baseline`), `headline` and
//!   `versus_reference[]`: per figure `ratio` (median over the reference's
//!   median), `ratio_low` and `ratio_high` (the interval), `p_value`,
//!   `p_adjusted`, `u`, `test`, `verdict` (`unchanged`,
//!   `no-significant-difference`, `too-few-runs`, `same-within-threshold`,
//!   `lower`, `higher`) and `runs_needed`.
//! - `reference` (0-based; with a baseline, the first stored command),
//!   `reference_is` (`fastest`, `chosen` or `baseline`), `alpha`,
//!   `correction`, `family_size`, `interval_level`, `threshold`, `method`,
//!   `seed`, `warnings`, `interrupted_by`, `other_cpu_percent` (other
//!   work on the machine while the runs ran, percent of one CPU).
//! - `baseline`: with `--baseline`, see [`BaselineUse`]; `gate`: with
//!   `--fail-on`, see [`Gate`].

use serde::Serialize;

use super::plan::{BaselineUse, Config, Instance, Rule, View};
use crate::gate::Outcome;
use crate::report::unit::Unit;
use crate::run::report::{FIGURES, Figure, FigureSummary, RunRecord, RunReport};
use crate::stats::{self, BOOTSTRAP_RESAMPLES};

/// What a figure of a command did against the reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Every run of both gave the same value: nothing to test.
    Unchanged,
    NoSignificantDifference,
    /// The runs taken cannot show a difference at the family's level,
    /// whatever they measure (`runs_needed` says how many could).
    TooFewRuns,
    /// Either significant but smaller than the threshold, or its interval
    /// within the threshold: the same within `threshold`.
    SameWithinThreshold,
    /// Significantly lower than the reference.
    Lower,
    /// Significantly higher than the reference.
    Higher,
}

impl Verdict {
    /// Whether the verdict claims a difference.
    pub fn differs(self) -> bool {
        matches!(self, Verdict::Lower | Verdict::Higher)
    }
}

/// One figure of one command against the reference.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FigureComparison {
    pub figure: String,
    /// This command's median over the reference's (absent when the
    /// reference's median is 0).
    pub ratio: Option<f64>,
    /// The interval of the ratio at the report's `interval_level`.
    pub ratio_low: Option<f64>,
    pub ratio_high: Option<f64>,
    /// The two-sided Mann–Whitney p-value of this figure alone.
    pub p_value: f64,
    /// `p_value` adjusted for the family of tests (Holm): compared with
    /// the report's `alpha`.
    pub p_adjusted: f64,
    pub u: f64,
    /// `exact` or `normal` (see `crate::stats::mann_whitney`); `none` when
    /// every run of both gave the same value.
    pub test: &'static str,
    pub verdict: Verdict,
    /// With `too-few-runs`: the runs of each command with which the test
    /// could reach the level it needs.
    pub runs_needed: Option<u32>,
}

impl FigureComparison {
    /// Whether the ratio's interval holds 1 (the medians may not differ).
    pub fn interval_holds_one(&self) -> bool {
        matches!((self.ratio_low, self.ratio_high), (Some(lo), Some(hi)) if lo <= 1.0 && hi >= 1.0)
    }
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
        }
    }

    /// The figure's values over the runs, when every run has it.
    pub fn values(&self, fig: &Figure) -> Option<Vec<f64>> {
        let v: Vec<f64> = self
            .runs
            .iter()
            .filter_map(|r| (fig.get)(r))
            .map(|v| v as f64)
            .collect();
        (!v.is_empty() && v.len() == self.runs.len()).then_some(v)
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
    /// How the family's p-values are adjusted: `holm`.
    pub correction: &'static str,
    /// The tests in the family: every figure of every command against the
    /// reference whose runs did not all give the same value.
    pub family_size: u32,
    /// The confidence level of each ratio interval: 1 − alpha / family
    /// size (Bonferroni), so that all hold together at 1 − alpha.
    pub interval_level: f64,
    /// A significant difference below this fraction is `same-within-threshold`.
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
    /// The comparison's Holm-adjusted p-value (absent when the figure was
    /// not measured).
    pub p_adjusted: Option<f64>,
    pub outcome: Outcome,
    /// With `inconclusive`: about how many runs of each command would
    /// decide it.
    pub runs_needed: Option<u32>,
    /// Why it is inconclusive beyond the interval lying across the limit.
    pub reason: Option<Reason>,
    /// The reason in words.
    pub note: Option<String>,
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
    /// than [`OTHER_WORK_DIFFERS`]: the change may be the machine's.
    OtherWork,
}

/// Points (percent of one CPU) by which other work on the machine may
/// differ between a baseline's runs and a comparison's before times
/// measured in the two are not compared as like for like.
pub const OTHER_WORK_DIFFERS: f64 = 20.0;

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

fn exit_text(r: &RunRecord) -> String {
    match (&r.exit.signal, r.exit.code) {
        (Some(sig), _) => format!("killed by {sig}"),
        (None, Some(code)) => format!("exit {code}"),
        (None, None) => "unknown".into(),
    }
}

/// What a figure's verdict is decided from.
#[derive(Debug, Clone, Copy)]
pub struct Evidence {
    /// The p-value adjusted for the family (Holm).
    pub p_adjusted: f64,
    /// Whether these runs could show a difference at all at the level
    /// the family needs.
    pub reachable: bool,
    /// The command's runs lie below the reference's.
    pub lower: bool,
    pub medians_equal: bool,
    pub ratio: Option<f64>,
    pub interval: Option<(f64, f64)>,
}

/// The verdict of one figure: significant when the adjusted p-value is
/// below `alpha`, and then the same within `threshold` (a fraction) when
/// the ratio is; not significant: unchanged (equal medians), the same
/// within `threshold` when the whole interval is, too few runs when no
/// outcome could have been significant, else no significant difference.
pub fn decide(e: Evidence, alpha: f64, threshold: f64) -> Verdict {
    let within = |r: f64| (r - 1.0).abs() < threshold;
    if e.p_adjusted < alpha {
        if e.ratio.is_some_and(within) {
            Verdict::SameWithinThreshold
        } else if e.lower {
            Verdict::Lower
        } else {
            Verdict::Higher
        }
    } else if e.medians_equal {
        Verdict::Unchanged
    } else if e.interval.is_some_and(|(lo, hi)| within(lo) && within(hi)) {
        Verdict::SameWithinThreshold
    } else if !e.reachable {
        Verdict::TooFewRuns
    } else {
        Verdict::NoSignificantDifference
    }
}

/// One figure of one command tested against the reference, within its
/// family ([`test_family`]).
#[derive(Debug, Clone, Copy)]
pub struct Tested {
    pub test: stats::MannWhitney,
    /// Holm-adjusted over the family.
    pub p_adjusted: f64,
    /// The command's runs lie below the reference's (by median, or by
    /// mean when the medians are equal).
    pub lower: bool,
    pub medians_equal: bool,
    /// Whether these runs could reach the family's first-step level at all.
    pub reachable: bool,
}

/// The family of tests of a comparison: for each pair of samples (a
/// figure of a command, the same figure of the reference), a two-sided
/// Mann–Whitney test, Holm-adjusted over the pairs whose values are not
/// all one value (`None`: nothing to test). Also returns the family's size.
pub fn test_family(pairs: &[(&[f64], &[f64])], alpha: f64) -> (Vec<Option<Tested>>, usize) {
    /// A test before the adjustment: the test, lower, medians equal, sizes.
    type Raw = (stats::MannWhitney, bool, bool, (usize, usize));
    let median = |v: &[f64]| stats::summarize(v).map(|s| s.median);
    let mut raw: Vec<Option<Raw>> = Vec::new();
    for (a, b) in pairs {
        let first = a.first().or(b.first()).copied().unwrap_or(0.0);
        let one_value = a.iter().chain(b.iter()).all(|v| *v == first);
        let test = if one_value {
            None
        } else {
            stats::mann_whitney(a, b)
        };
        raw.push(test.map(|t| {
            let (ma, mb) = (median(a), median(b));
            let lower = match (ma, mb) {
                (Some(x), Some(y)) if x != y => x < y,
                // Medians equal but the distributions may differ.
                _ => {
                    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
                    mean(a) < mean(b)
                }
            };
            (t, lower, ma == mb, (a.len(), b.len()))
        }));
    }
    let ps: Vec<f64> = raw.iter().flatten().map(|(t, ..)| t.p).collect();
    let m = ps.len();
    let first_step = alpha / m.max(1) as f64;
    let mut adjusted = stats::holm(&ps).into_iter();
    let tested = raw
        .into_iter()
        .map(|r| {
            let (test, lower, medians_equal, n) = r?;
            Some(Tested {
                test,
                p_adjusted: adjusted.next().unwrap_or(1.0),
                lower,
                medians_equal,
                reachable: stats::mann_whitney_min_p(n.0, n.1) <= first_step,
            })
        })
        .collect();
    (tested, m)
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

    /// Summaries, warnings, the reference, every comparison and the
    /// headlines.
    pub(super) fn build(
        cfg: &Config,
        mut commands: Vec<CommandResult>,
        interrupted_by: Option<String>,
    ) -> CompareReport {
        let mut warnings: Vec<String> = cfg
            .baseline
            .iter()
            .flat_map(|b| {
                b.about.differences.iter().map(|d| {
                    format!(
                        "baseline {}: {d}",
                        crate::text::path::display(&b.about.path)
                    )
                })
            })
            .collect();
        for (i, c) in commands.iter_mut().enumerate() {
            // The summary and the outlier and trend warnings of `tally run -n`.
            let mut rr = RunReport {
                schema_version: crate::report::SCHEMA_VERSION,
                command: Vec::new(),
                runs_requested: 0,
                warmup_runs: 0,
                runs: std::mem::take(&mut c.runs),
                summary: Vec::new(),
                warnings: Vec::new(),
                interrupted_by: None,
                why_table: false,
            };
            rr.summarize();
            c.runs = std::mem::take(&mut rr.runs);
            c.summary = rr.summary;
            for w in rr.warnings {
                warnings.push(format!("#{} {}: {w}", i + 1, crate::text::Foreign(&c.name)));
            }
            let mut exits: Vec<String> = c
                .runs
                .iter()
                .filter(|r| r.exit.code != Some(0))
                .map(exit_text)
                .collect();
            exits.sort();
            exits.dedup();
            c.exits = exits;
        }
        let k = commands.len();
        // Whom each command is compared with: with a baseline, each command
        // measured now with its stored runs (appended after the commands
        // measured now, in the same order); else every command with the
        // one reference.
        let measured = commands.iter().filter(|c| !c.from_baseline).count();
        let (reference, reference_is, compared_with) = if measured < k {
            let with: Vec<Option<usize>> = (0..k)
                .map(|i| (i < measured && measured + i < k).then_some(measured + i))
                .collect();
            (measured, "baseline", with)
        } else {
            let median_wall = |c: &CommandResult| {
                c.values(&FIGURES[0])
                    .and_then(|v| stats::summarize(&v))
                    .map(|s| s.median)
                    .unwrap_or(f64::INFINITY)
            };
            let (reference, is) = match cfg.reference {
                Some(r) => (r.min(k.saturating_sub(1)), "chosen"),
                None => {
                    let mut best = 0;
                    for (i, c) in commands.iter().enumerate() {
                        if median_wall(c)
                            < commands.get(best).map(median_wall).unwrap_or(f64::INFINITY)
                        {
                            best = i;
                        }
                    }
                    (best, "fastest")
                }
            };
            let with = (0..k).map(|i| (i != reference).then_some(reference));
            (reference, is, with.collect())
        };
        for (c, with) in commands.iter_mut().zip(&compared_with) {
            c.compared_with = *with;
        }
        // Each figure's values over each command's runs, when every run has it.
        let values: Vec<Vec<Option<Vec<f64>>>> = commands
            .iter()
            .map(|c| FIGURES.iter().map(|f| c.values(f)).collect())
            .collect();
        let of = |i: usize, fi: usize| values.get(i).and_then(|v| v.get(fi)?.as_deref());

        // The family: every figure of every command against its reference.
        let mut pairs: Vec<(usize, usize, usize)> = Vec::new();
        for (i, with) in compared_with.iter().enumerate() {
            let Some(j) = *with else {
                continue;
            };
            for fi in 0..FIGURES.len() {
                if of(i, fi).is_some() && of(j, fi).is_some() {
                    pairs.push((i, j, fi));
                }
            }
        }
        let samples: Vec<(&[f64], &[f64])> = pairs
            .iter()
            .filter_map(|&(i, j, fi)| Some((of(i, fi)?, of(j, fi)?)))
            .collect();
        let (tested, m) = test_family(&samples, cfg.alpha);
        let level = 1.0 - cfg.alpha / m.max(1) as f64;
        for (&(i, j, fi), t) in pairs.iter().zip(tested) {
            let (Some(fig), Some(a), Some(b)) = (FIGURES.get(fi), of(i, fi), of(j, fi)) else {
                continue;
            };
            let Some(t) = t else {
                let shown = (a.first().copied().unwrap_or(0.0) != 0.0).then_some(1.0);
                commands[i].versus_reference.push(FigureComparison {
                    figure: fig.key.into(),
                    ratio: shown,
                    ratio_low: shown,
                    ratio_high: shown,
                    p_value: 1.0,
                    p_adjusted: 1.0,
                    u: (a.len() * b.len()) as f64 / 2.0,
                    test: "none",
                    verdict: Verdict::Unchanged,
                    runs_needed: None,
                });
                continue;
            };
            let seed = cfg
                .seed
                .wrapping_mul(0x9e37_79b9)
                .wrapping_add((i * FIGURES.len() + fi) as u64);
            let ci = stats::ratio_of_medians(a, b, level, seed);
            let verdict = decide(
                Evidence {
                    p_adjusted: t.p_adjusted,
                    reachable: t.reachable,
                    lower: t.lower,
                    medians_equal: t.medians_equal,
                    ratio: ci.map(|c| c.ratio),
                    interval: ci.map(|c| (c.low, c.high)),
                },
                cfg.alpha,
                cfg.threshold,
            );
            commands[i].versus_reference.push(FigureComparison {
                figure: fig.key.into(),
                ratio: ci.map(|c| c.ratio),
                ratio_low: ci.map(|c| c.low),
                ratio_high: ci.map(|c| c.high),
                p_value: t.test.p,
                p_adjusted: t.p_adjusted,
                u: t.test.u,
                test: t.test.method,
                verdict,
                // Enough for the largest family these figures could make
                // (every one varying), so that that many runs do reach.
                runs_needed: (verdict == Verdict::TooFewRuns)
                    .then(|| stats::runs_to_reach(cfg.alpha / pairs.len().max(1) as f64)),
            });
        }
        // In the order of FIGURES, whatever the order of the family.
        for c in &mut commands {
            c.versus_reference.sort_by_key(|v| {
                FIGURES
                    .iter()
                    .position(|f| f.key == v.figure)
                    .unwrap_or(usize::MAX)
            });
        }
        warnings.extend(outliers_deciding_verdicts(&commands, &values, cfg.alpha));
        for (i, c) in commands.iter().enumerate() {
            if c.failed_runs > 0 {
                warnings.push(format!(
                    "#{} {}: {} of {} runs failed ({})",
                    i + 1,
                    crate::text::Foreign(&c.name),
                    c.failed_runs,
                    c.runs.len(),
                    c.exits.join(", ")
                ));
            }
        }
        let threshold = cfg.threshold;
        for (i, c) in commands.iter_mut().enumerate() {
            if c.compared_with.is_some() {
                c.headline = headline(i, c, threshold);
            }
        }
        CompareReport {
            schema_version: crate::report::SCHEMA_VERSION,
            runs_per_command: commands
                .iter()
                .filter(|c| !c.from_baseline)
                .map(|c| c.runs.len())
                .max()
                .unwrap_or(0) as u32,
            commands,
            reference,
            reference_is,
            alpha: cfg.alpha,
            correction: "holm",
            family_size: m as u32,
            interval_level: level,
            threshold,
            method: format!(
                "ratio: median over the reference's median, percentile bootstrap interval \
                 ({BOOTSTRAP_RESAMPLES} resamples) at {} each, so that the {} intervals hold \
                 together at {:.0}% (Bonferroni); verdict: two-sided Mann-Whitney U tests, \
                 Holm-adjusted over the {} figures that varied, at a family-wise alpha of {}; \
                 a significant difference under {} is the same within it",
                percent(level),
                m,
                (1.0 - cfg.alpha) * 100.0,
                m,
                cfg.alpha,
                percent(threshold)
            ),
            warmup_runs: cfg.warmup,
            seed: cfg.seed,
            warnings,
            interrupted_by,
            other_cpu_percent: None,
            baseline: cfg.baseline.as_ref().map(|b| b.about.clone()),
            gate: None,
            view: cfg.view,
            page_cache: None,
        }
    }
}

/// `99.7%`, `1%`, `0.5%`: a fraction as a percentage, no more digits than
/// it needs.
pub fn percent(fraction: f64) -> String {
    let p = fraction * 100.0;
    let mut text = format!("{p:.2}");
    while text.contains('.') && (text.ends_with('0') || text.ends_with('.')) {
        text.pop();
    }
    format!("{text}%")
}

/// Warnings about outliers that decide a verdict: a figure called
/// different that would not be without the outliers of either command's
/// runs (see `crate::stats::outliers`), its p-value adjusted by the same
/// factor as before. Outliers that only move a median are warned about
/// with the summaries (`tally run`'s rule).
fn outliers_deciding_verdicts(
    commands: &[CommandResult],
    values: &[Vec<Option<Vec<f64>>>],
    alpha: f64,
) -> Vec<String> {
    let mut out = Vec::new();
    let of = |i: usize, fi: usize| values.get(i).and_then(|v| v.get(fi)?.as_deref());
    for (i, c) in commands.iter().enumerate() {
        let Some(reference) = c.compared_with else {
            continue;
        };
        for (fi, fig) in FIGURES.iter().enumerate() {
            let (Some(a), Some(b), Some(v)) = (of(i, fi), of(reference, fi), c.versus(fig.key))
            else {
                continue;
            };
            if !v.verdict.differs() || v.p_value <= 0.0 {
                continue;
            }
            let (oa, ob) = (stats::outliers(a), stats::outliers(b));
            if oa.is_empty() && ob.is_empty() {
                continue;
            }
            let keep = |v: &[f64], o: &[usize]| -> Vec<f64> {
                v.iter()
                    .enumerate()
                    .filter(|(k, _)| !o.contains(k))
                    .map(|(_, x)| *x)
                    .collect()
            };
            let Some(without) = stats::mann_whitney(&keep(a, &oa), &keep(b, &ob)) else {
                continue;
            };
            let factor = v.p_adjusted / v.p_value;
            if without.p * factor >= alpha {
                let runs = |o: &[usize], who: usize| {
                    o.iter()
                        .take(5)
                        .map(|k| format!("#{} run {}", who + 1, k + 1))
                        .collect::<Vec<_>>()
                };
                let mut named = runs(&oa, i);
                named.extend(runs(&ob, reference));
                out.push(format!(
                    "#{} {}: {}: the difference hangs on outliers ({}): without them it is \
                     not significant (adjusted p {} instead of {})",
                    i + 1,
                    c.name,
                    fig.label,
                    named.join(", "),
                    p_text((without.p * factor).min(1.0)),
                    p_text(v.p_adjusted)
                ));
            }
        }
    }
    out
}

/// One line: what differs from the reference, by how much, how sure.
/// `wall time 1.10× [1.07, 1.13] (p<0.001); peak memory 0.52×; no other
/// figure differs`.
fn headline(index: usize, c: &CommandResult, threshold: f64) -> String {
    let mut parts = Vec::new();
    for v in &c.versus_reference {
        if !v.verdict.differs() {
            continue;
        }
        let Some(fig) = FIGURES.iter().find(|f| f.key == v.figure) else {
            continue;
        };
        if parts.is_empty() {
            parts.push(format!(
                "{} {} ({})",
                fig.label,
                ratio_text(v),
                p_text(v.p_adjusted)
            ));
        } else {
            let ratio = FigureComparison {
                ratio_low: None,
                ratio_high: None,
                ..v.clone()
            };
            parts.push(format!("{} {}", fig.label, ratio_text(&ratio)));
        }
    }
    let few: Vec<&FigureComparison> = c
        .versus_reference
        .iter()
        .filter(|v| v.verdict == Verdict::TooFewRuns)
        .collect();
    if !few.is_empty() {
        let needed = few.iter().filter_map(|v| v.runs_needed).max().unwrap_or(0);
        let runs = c.runs.len();
        let what = if parts.is_empty() {
            "too few runs to tell"
        } else {
            "too few runs to tell the rest"
        };
        parts.push(format!(
            "{what}: {runs} run{} of each cannot show a difference, at least {needed} can",
            if runs == 1 { "" } else { "s" },
        ));
    } else if parts.is_empty() {
        let same = c
            .versus_reference
            .iter()
            .any(|v| v.verdict == Verdict::SameWithinThreshold);
        parts.push(if same {
            format!("no figure differs by {} or more", percent(threshold))
        } else {
            "no figure differs".to_string()
        });
    } else {
        parts.push("no other figure differs".to_string());
    }
    format!("#{} {}: {}", index + 1, c.name, parts.join("; "))
}

/// How a figure's direction reads: times are faster or slower, the rest
/// less or more.
pub fn direction(fig: &Figure, verdict: Verdict) -> &'static str {
    let time = fig.unit.base() == Unit::Seconds;
    match (verdict, time) {
        (Verdict::Lower, true) => "faster",
        (Verdict::Higher, true) => "slower",
        (Verdict::Lower, false) => "less",
        (Verdict::Higher, false) => "more",
        (Verdict::Unchanged, _) => "unchanged",
        (Verdict::NoSignificantDifference, _) => "no significant difference",
        (Verdict::TooFewRuns, _) => "too few runs",
        (Verdict::SameWithinThreshold, _) => "same within",
    }
}

/// `p=0.003`, `p<0.001`.
pub fn p_text(p: f64) -> String {
    if p < 0.001 {
        "p<0.001".into()
    } else {
        format!("p={p:.3}")
    }
}

/// `1.26× [1.24, 1.28]`; near 1, four decimals (`1.0006×`), so a
/// significant difference never reads as `1.00×`.
pub fn ratio_text(c: &FigureComparison) -> String {
    // Near 1, four decimals: a bound of 1.003 must not read as 1.00.
    let near_one = |v: f64| v != 1.0 && (v - 1.0).abs() < 0.005;
    let r = |v: f64| {
        if near_one(v) {
            format!("{v:.4}")
        } else if v >= 100.0 {
            format!("{v:.0}")
        } else if v >= 10.0 {
            format!("{v:.1}")
        } else {
            format!("{v:.2}")
        }
    };
    let x = match c.ratio {
        Some(x) => r(x),
        None => return "—".into(),
    };
    match (c.ratio_low, c.ratio_high) {
        (Some(lo), Some(hi)) => format!("{x}× [{}, {}]", r(lo), r(hi)),
        _ => format!("{x}×"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Format, Render, Style, render};

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
    use crate::run::report::{ExitInfo, RunRecord};

    fn record(wall_ns: u64, rss: u64, code: i32) -> RunRecord {
        RunRecord {
            wall_ns,
            // The same spread for every command: no significant difference.
            user_us: 1_000_000 + (wall_ns / 37_000_123 % 7) * 1000,
            system_us: wall_ns / 2000,
            max_rss_bytes: rss,
            minor_faults: 271_634,
            major_faults: 0,
            voluntary_switches: 150,
            involuntary_switches: 40,
            block_input_ops: 2_097_152,
            block_output_ops: 0,
            io: None,
            io_source: None,
            io_unavailable: Some("test".into()),
            counters: None,
            tree: None,
            cold: None,
            why: None,
            exit: ExitInfo {
                code: Some(code),
                signal: None,
                signal_number: None,
                core_dumped: false,
            },
            forwarded_signal: None,
            escalated_to_sigkill: false,
        }
    }

    fn report() -> CompareReport {
        let cfg = Config {
            alpha: 0.05,
            seed: 1,
            ..Config::default()
        };
        let mut commands = Vec::new();
        for (i, (name, base, code)) in [
            ("python3 load.py --read model.bin", 2_416_884_000u64, 0),
            ("python3 load.py --mmap model.bin", 665_440_000, 3),
        ]
        .into_iter()
        .enumerate()
        {
            let mut c = CommandResult::new(
                &Instance {
                    name: format!("{} loader", &name[16..]),
                    command: name.into(),
                    argv: Vec::new(),
                    parameters: Vec::new(),
                },
                10,
            );
            for r in 0..10u64 {
                let rec = record(
                    base + r * 37_000_123,
                    1_087_602_688 + r * 4096 * i as u64,
                    code,
                );
                if code != 0 {
                    c.failed_runs += 1;
                }
                c.runs.push(rec);
                c.run_order.push((r * 2 + i as u64 + 1) as u32);
            }
            commands.push(c);
        }
        CompareReport::build(&cfg, commands, None)
    }

    /// Two commands of `n` runs whose wall times are `base` and
    /// `base · scale`, spreading by a fraction `spread`.
    fn two(n: u64, base: u64, scale: f64, spread: f64, cfg: &Config) -> CompareReport {
        let mut commands = Vec::new();
        for (i, s) in [1.0, scale].into_iter().enumerate() {
            let mut c = CommandResult::new(
                &Instance {
                    name: format!("c{i}"),
                    command: format!("c{i}"),
                    argv: Vec::new(),
                    parameters: Vec::new(),
                },
                n as usize,
            );
            for r in 0..n {
                let jitter = 1.0 + spread * ((r * 7919 + i as u64 * 104_729) % 101) as f64 / 100.0;
                let mut rec = record((base as f64 * s * jitter) as u64, 1 << 20, 0);
                rec.user_us = 1000;
                rec.system_us = 1000;
                c.runs.push(rec);
                c.run_order.push((2 * r + i as u64 + 1) as u32);
            }
            commands.push(c);
        }
        CompareReport::build(cfg, commands, None)
    }

    #[test]
    fn a_significant_difference_under_the_threshold_is_the_same_within_it() {
        let cfg = |threshold: f64| Config {
            alpha: 0.05,
            threshold,
            seed: 3,
            reference: Some(0),
            ..Config::default()
        };
        // 0.5% slower, every run: significant, but under 1%.
        let r = two(30, 10_000_000, 1.005, 0.001, &cfg(0.01));
        let v = r.commands[1].versus("wall_ns").unwrap();
        assert!(v.p_adjusted < 0.05, "{v:?}");
        assert_eq!(v.verdict, Verdict::SameWithinThreshold);
        assert!(
            r.commands[1]
                .headline
                .contains("no figure differs by 1% or more")
        );
        let r = two(30, 10_000_000, 1.005, 0.001, &cfg(0.001));
        assert_eq!(
            r.commands[1].versus("wall_ns").unwrap().verdict,
            Verdict::Higher
        );
        let h = &r.commands[1].headline;
        assert!(
            h.starts_with("#2 c1: wall time 1.0") && h.contains("(p<0.001)"),
            "{h}"
        );
    }

    #[test]
    fn the_same_seed_gives_the_same_intervals_and_another_seed_others() {
        let cfg = |seed: u64| Config {
            alpha: 0.05,
            threshold: 0.01,
            seed,
            reference: Some(0),
            ..Config::default()
        };
        let interval = |seed: u64| {
            let r = two(25, 1_000_000, 1.1, 0.2, &cfg(seed));
            let v = r.commands[1].versus("wall_ns").unwrap().clone();
            (v.ratio_low, v.ratio_high)
        };
        assert_eq!(interval(5), interval(5));
        assert_ne!(interval(5), interval(6));
    }

    fn human(r: &CompareReport, width: Option<usize>) -> String {
        let mut out = Vec::new();
        r.human(
            &mut out,
            Style {
                color: false,
                width,
            },
        )
        .unwrap();
        String::from_utf8(out).unwrap()
    }

    /// Long figures and long ratios once pushed the verdict column out of
    /// 100 columns; it must stay, in at most 100 columns.
    #[test]
    fn human_layout_keeps_the_verdict_within_100_columns() {
        let r = report();
        assert_eq!(r.reference, 1, "the faster is the reference");
        for width in [None, Some(100), Some(200)] {
            let text = human(&r, width);
            assert!(
                text.lines().all(|l| l.chars().count() <= 100),
                "{width:?}:\n{text}"
            );
            assert!(text.contains("verdict"), "{text}");
            assert!(text.contains("slower (p<0.001)"), "{text}");
        }
        // A narrower terminal still gets the verdict of every row.
        let narrow = human(&r, Some(90));
        assert!(narrow.contains("verdict"), "{narrow}");
        assert!(narrow.contains("no significant difference"), "{narrow}");
        let text = human(&r, None);
        // The failing command is flagged on its every row and in the list.
        let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("  #2")).collect();
        assert!(
            rows.len() > 3 && rows.iter().all(|l| l.contains('✗')),
            "{text}"
        );
        assert!(text.contains("no significant difference"), "{text}");
        let unchanged = text.split("unchanged:").nth(1).unwrap_or_default();
        assert!(unchanged.contains("major faults (0)"), "{text}");
    }

    #[test]
    fn every_format_renders_and_the_table_has_a_row_per_command_and_figure() {
        let r = report();
        let t = r.table();
        let figures = r.commands[0].summary.len();
        assert_eq!(t.rows.len(), 2 * figures);
        assert!(t.rows.iter().all(|row| row.len() == t.headers.len()));
        for f in [
            Format::JSON,
            Format::CSV,
            Format::MARKDOWN,
            Format::PROMETHEUS,
            Format::HTML,
        ] {
            let mut out = Vec::new();
            render(&r, f, Style::PLAIN, &mut out).unwrap();
            assert!(!out.is_empty(), "{f}");
        }
        let v = r.commands[0].versus("wall_ns").unwrap();
        assert_eq!(v.verdict, Verdict::Higher);
        assert!(
            v.ratio_low.unwrap() <= v.ratio.unwrap() && v.ratio.unwrap() <= v.ratio_high.unwrap()
        );
    }
}

#[cfg(test)]
mod simulation {
    //! Seeded simulations of whole comparisons, through the family's tests
    //! and verdicts (`test_family`, `decide`) as `CompareReport::build`
    //! makes them: how often a command is called different from itself
    //! (the family-wise rate), and how often a real shift is found.
    use super::*;
    use crate::stats::Rng;

    fn lognormal(rng: &mut Rng, median: f64, cv: f64) -> f64 {
        let u = rng.unit().clamp(1e-12, 1.0 - 1e-12);
        median * (cv * stats::normal_quantile(u)).exp()
    }

    fn poisson(rng: &mut Rng, lambda: f64) -> f64 {
        let (mut k, mut p, target) = (0.0, 1.0, (-lambda).exp());
        loop {
            p *= rng.unit();
            if p <= target {
                return k;
            }
            k += 1.0;
        }
    }

    /// One command's runs, as the figures of `/bin/true` or a small
    /// program spread: times continuous, memory and counts with ties, the
    /// I/O figures constant. `wall_shift` scales its wall and cpu times.
    fn runs(rng: &mut Rng, n: usize, wall_shift: f64) -> Vec<Vec<f64>> {
        let mut figures: Vec<Vec<f64>> = (0..10).map(|_| Vec::with_capacity(n)).collect();
        for _ in 0..n {
            let row = [
                lognormal(rng, 18_000.0 * wall_shift, 0.08),
                lognormal(rng, 17_500.0 * wall_shift, 0.10),
                lognormal(rng, 17_000.0 * wall_shift, 0.10),
                lognormal(rng, 500.0, 0.30),
                548.0 + 4.0 * poisson(rng, 1.0),
                27.0 + poisson(rng, 0.5),
                1.0 + poisson(rng, 0.1),
                poisson(rng, 0.3),
                0.0,
                816.0,
            ];
            for (f, v) in figures.iter_mut().zip(row) {
                f.push(v);
            }
        }
        figures
    }

    /// (any figure called different, wall called different, any figure
    /// below alpha without a correction) for one comparison.
    fn compare(rng: &mut Rng, n: usize, shift: f64) -> (bool, bool, bool) {
        let a = runs(rng, n, shift);
        let b = runs(rng, n, 1.0);
        let pairs: Vec<(&[f64], &[f64])> = a
            .iter()
            .zip(&b)
            .map(|(x, y)| (x.as_slice(), y.as_slice()))
            .collect();
        let (tested, _) = test_family(&pairs, 0.05);
        let verdicts: Vec<Verdict> = tested
            .iter()
            .zip(&pairs)
            .map(|(t, (x, y))| match t {
                None => Verdict::Unchanged,
                Some(t) => {
                    let m = |v: &[f64]| stats::summarize(v).map_or(0.0, |s| s.median);
                    decide(
                        Evidence {
                            p_adjusted: t.p_adjusted,
                            reachable: t.reachable,
                            lower: t.lower,
                            medians_equal: t.medians_equal,
                            ratio: (m(y) != 0.0).then(|| m(x) / m(y)),
                            interval: None,
                        },
                        0.05,
                        0.01,
                    )
                }
            })
            .collect();
        let uncorrected = tested.iter().flatten().any(|t| t.test.p < 0.05);
        (
            verdicts.iter().any(|v| v.differs()),
            verdicts.first().is_some_and(|v| v.differs()),
            uncorrected,
        )
    }

    #[test]
    fn a_command_against_itself_is_called_different_in_at_most_5_percent_of_comparisons() {
        let mut rng = Rng::new(2026);
        let trials = 1000;
        let (mut any, mut uncorrected) = (0, 0);
        for _ in 0..trials {
            let (flagged, _, raw) = compare(&mut rng, 40, 1.0);
            any += usize::from(flagged);
            uncorrected += usize::from(raw);
        }
        let rate = any as f64 / trials as f64;
        eprintln!(
            "{trials} comparisons of identical commands, 40 runs each: {any} flag a figure \
             (family-wise rate {rate:.3}); without the correction {uncorrected} would"
        );
        assert!(rate <= 0.05, "family-wise rate {rate}");
        // What the correction is for: tested one by one at 5%, some figure
        // of many comparisons comes out below it.
        assert!(uncorrected > 2 * any.max(10), "{uncorrected} vs {any}");
    }

    #[test]
    fn a_ten_percent_shift_in_wall_time_is_found() {
        let mut rng = Rng::new(2027);
        let trials = 1000;
        let (mut wall10, mut wall5) = (0, 0);
        for _ in 0..trials {
            wall10 += usize::from(compare(&mut rng, 40, 1.10).1);
            wall5 += usize::from(compare(&mut rng, 40, 1.05).1);
        }
        eprintln!(
            "40 runs each, wall times spreading 8%: a 10% shift found in {wall10} of {trials} \
             comparisons, a 5% shift in {wall5}"
        );
        assert!(wall10 as f64 / trials as f64 >= 0.95, "{wall10}");
        assert!(wall5 > 0 && wall5 < wall10, "{wall5} {wall10}");
    }

    #[test]
    fn the_runs_sizing_chooses_find_a_five_percent_shift_nine_times_in_ten() {
        // The rounds `sizing` asks for at 8% spread over this family.
        let n = stats::runs_for_power(0.08, 0.05, 0.05 / 8.0, 0.9) as usize;
        let mut rng = Rng::new(2028);
        let trials = 400;
        let found = (0..trials).filter(|_| compare(&mut rng, n, 1.05).1).count();
        eprintln!("{n} runs each: a 5% shift found in {found} of {trials}");
        assert!(
            found as f64 / trials as f64 >= 0.85,
            "{found} of {trials} with {n} runs"
        );
    }
}
