//! How a comparison is made from its runs: each command's summary, the
//! reference, the family of intervals (Bonferroni over every figure of
//! every command) and the verdicts they give, the warnings about outliers
//! that decide a verdict; `CompareReport::build` puts them together.
//! The words are [`super::prose`]'s; the model is [`super::report`]'s.

use super::plan::Config;
use super::prose::{headline, method_text, percent, ratio_text};
use super::report::{
    COUNT_SPREAD, CommandResult, CompareReport, EXACT_TEST, FigureComparison, Verdict,
};
use crate::run::report::{FIGURES, Figure, RunRecord, RunReport};
use crate::stats;

impl CompareReport {
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
            warnings.extend(
                summarize(c)
                    .into_iter()
                    .map(|w| format!("#{} {}: {w}", i + 1, crate::text::Foreign(&c.name))),
            );
        }
        let (reference, reference_is) = references(cfg, &mut commands);
        // Each figure's values over each command's runs, when every run has it.
        let values: Vec<Vec<Option<Vec<f64>>>> = commands
            .iter()
            .map(|c| FIGURES.iter().map(|f| c.values(f)).collect())
            .collect();
        let m = compare_figures(cfg, &mut commands, &values);
        let level = 1.0 - cfg.alpha / m.max(1) as f64;
        warnings.extend(outliers_deciding_verdicts(
            &commands,
            &values,
            cfg,
            cfg.alpha / m.max(1) as f64,
        ));
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
        let headlines: Vec<String> = commands
            .iter()
            .enumerate()
            .map(|(i, c)| match c.compared_with {
                Some(j) => headline(i, c, commands.get(j), threshold),
                None => String::new(),
            })
            .collect();
        for (c, h) in commands.iter_mut().zip(headlines) {
            c.headline = h;
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
            correction: "bonferroni",
            family_size: m as u32,
            interval_level: level,
            threshold,
            method: method_text(cfg.alpha, m, threshold),
            warmup_runs: cfg.warmup,
            seed: cfg.seed,
            warnings,
            interrupted_by,
            other_cpu_percent: None,
            speed: None,
            baseline: cfg.baseline.as_ref().map(|b| b.about.clone()),
            gate: None,
            view: cfg.view,
            page_cache: None,
            count: None,
        }
    }
}

fn exit_text(r: &RunRecord) -> String {
    match (&r.exit.signal, r.exit.code) {
        (Some(sig), _) => format!("killed by {sig}"),
        (None, Some(code)) => format!("exit {code}"),
        (None, None) => "unknown".into(),
    }
}

/// The family of a comparison: for each pair of samples (a figure of a
/// command, the same figure of its reference) whose values are not all
/// one value, its ratio with the interval at 1 − alpha/m, m the number of
/// such pairs (Bonferroni: the m intervals hold together at 1 − alpha);
/// `None` where there is nothing to test. Also returns m.
pub fn compare_family(
    pairs: &[(&[f64], &[f64])],
    alpha: f64,
) -> (Vec<Option<stats::RatioShift>>, usize) {
    let varies = |(a, b): &(&[f64], &[f64])| {
        let first = a.first().or(b.first()).copied().unwrap_or(0.0);
        !a.iter().chain(b.iter()).all(|v| *v == first)
    };
    let m = pairs.iter().filter(|p| varies(p)).count();
    let each = alpha / m.max(1) as f64;
    let estimates = pairs
        .iter()
        .map(|p| {
            if varies(p) {
                stats::ratio_shift(p.0, p.1, each)
            } else {
                None
            }
        })
        .collect();
    (estimates, m)
}

/// The verdict the interval gives against `threshold` (a fraction): see
/// [`Verdict`]. Without a ratio (the reference's median 0), the shift's
/// interval says the direction, and only that.
pub fn decide(r: &stats::RatioShift, threshold: f64) -> Verdict {
    if r.unbounded() {
        return Verdict::TooFewRuns;
    }
    let Some((_, low, high)) = r.ratio else {
        return if r.shift.low > 0.0 {
            Verdict::Higher
        } else if r.shift.high < 0.0 {
            Verdict::Lower
        } else {
            Verdict::Undecided
        };
    };
    if low > 1.0 + threshold {
        Verdict::Higher
    } else if high < 1.0 - threshold {
        Verdict::Lower
    } else if low > 1.0 - threshold && high < 1.0 + threshold {
        Verdict::SameWithinThreshold
    } else {
        Verdict::Undecided
    }
}

/// About how many runs of each command would decide an open verdict: the
/// runs with which the interval could be bounded at all (`too-few-runs`),
/// else those with which it would shrink off `1 ± threshold` (see
/// [`crate::gate::runs_to_decide`]; with `reference_fixed`, a stored
/// baseline, only this command's runs grow). `None` when no number would.
pub fn runs_to_decide(
    r: &stats::RatioShift,
    threshold: f64,
    runs: (usize, usize),
    reference_fixed: bool,
) -> Option<u32> {
    if r.unbounded() {
        return Some(stats::runs_to_reach(r.shift.alpha));
    }
    let (x, low, high) = r.ratio?;
    let at = |bound: f64| {
        crate::gate::runs_to_decide(Some((x, low, high)), bound, runs.0, runs.1, reference_fixed)
            .ok()
    };
    let (up, down) = (1.0 + threshold, 1.0 - threshold);
    if x >= up {
        at(up)
    } else if x <= down {
        at(down)
    } else {
        Some(at(up)?.max(at(down)?))
    }
}

/// A command's summary (the figures and the outlier and trend warnings of
/// `tally run -n`) and how its runs ended; returns the warnings.
fn summarize(c: &mut CommandResult) -> Vec<String> {
    let mut rr = RunReport {
        schema_version: crate::report::SCHEMA_VERSION,
        command: Vec::new(),
        runs_requested: 0,
        warmup_runs: 0,
        runs: std::mem::take(&mut c.runs),
        summary: Vec::new(),
        warnings: Vec::new(),
        interrupted_by: None,
        speed: None,
        count: None,
        why_table: false,
        template: None,
    };
    rr.summarize();
    c.runs = std::mem::take(&mut rr.runs);
    c.summary = rr.summary;
    let mut exits: Vec<String> = c
        .runs
        .iter()
        .filter(|r| r.exit.code != Some(0))
        .map(exit_text)
        .collect();
    exits.sort();
    exits.dedup();
    c.exits = exits;
    rr.warnings
}

/// Whom each command is compared with, set in `compared_with`: with a
/// baseline, each command measured now with its stored runs (appended
/// after the commands measured now, in the same order); else every command
/// with the one reference (`--reference`, or the fastest by median wall
/// time). Returns the reference and how it was chosen.
fn references(cfg: &Config, commands: &mut [CommandResult]) -> (usize, &'static str) {
    let k = commands.len();
    let measured = commands.iter().filter(|c| !c.from_baseline).count();
    if measured < k {
        for (i, c) in commands.iter_mut().enumerate() {
            c.compared_with = (i < measured && measured + i < k).then_some(measured + i);
        }
        return (measured, "baseline");
    }
    // The fastest by median wall time; of commands not timed (counted
    // under the simulator only), the one that did the least work.
    let timed = commands.iter().any(|c| c.values(&FIGURES[0]).is_some());
    let (by, is) = match FIGURES.iter().find(|f| f.key == "instructions") {
        Some(f) if !timed => (f, "least-work"),
        _ => (&FIGURES[0], "fastest"),
    };
    let median = |c: &CommandResult| {
        c.values(by)
            .and_then(|v| stats::summarize(&v))
            .map(|s| s.median)
            .unwrap_or(f64::INFINITY)
    };
    let (reference, is) = match cfg.reference {
        Some(r) => (r.min(k.saturating_sub(1)), "chosen"),
        None => {
            let mut best = 0;
            for (i, c) in commands.iter().enumerate() {
                if median(c) < commands.get(best).map(median).unwrap_or(f64::INFINITY) {
                    best = i;
                }
            }
            (best, is)
        }
    };
    for (i, c) in commands.iter_mut().enumerate() {
        c.compared_with = (i != reference).then_some(reference);
    }
    (reference, is)
}

/// Every figure of every command against its reference, in the order of
/// [`FIGURES`]: the family's intervals and the verdicts they give. Returns
/// the family's size.
fn compare_figures(
    cfg: &Config,
    commands: &mut [CommandResult],
    values: &[Vec<Option<Vec<f64>>>],
) -> usize {
    let of = |i: usize, fi: usize| values.get(i).and_then(|v| v.get(fi)?.as_deref());
    let mut pairs: Vec<(usize, usize, usize)> = Vec::new();
    for (i, c) in commands.iter_mut().enumerate() {
        let Some(j) = c.compared_with else {
            continue;
        };
        for (fi, fig) in FIGURES.iter().enumerate() {
            let (Some(a), Some(b)) = (of(i, fi), of(j, fi)) else {
                continue;
            };
            // Counts that repeat are compared exactly, outside the family.
            match counted_comparison(fig, a, b, cfg.threshold) {
                Some(v) => c.versus_reference.push(v),
                None => pairs.push((i, j, fi)),
            }
        }
    }
    let samples: Vec<(&[f64], &[f64])> = pairs
        .iter()
        .filter_map(|&(i, j, fi)| Some((of(i, fi)?, of(j, fi)?)))
        .collect();
    let (estimates, m) = compare_family(&samples, cfg.alpha);
    for (&(i, j, fi), e) in pairs.iter().zip(estimates) {
        let (Some(fig), Some(a), Some(b)) = (FIGURES.get(fi), of(i, fi), of(j, fi)) else {
            continue;
        };
        let fixed = commands.get(j).is_some_and(|c| c.from_baseline);
        commands[i]
            .versus_reference
            .push(figure_comparison(fig, a, b, e, m, cfg.threshold, fixed));
    }
    for c in commands.iter_mut() {
        c.versus_reference.sort_by_key(|v| {
            FIGURES
                .iter()
                .position(|f| f.key == v.figure)
                .unwrap_or(usize::MAX)
        });
    }
    m
}

/// A counted figure of `a` (this command's runs) against `b` (its
/// reference's) by their range, when both repeat within [`COUNT_SPREAD`];
/// `None` for any other figure, which the family's test compares.
pub fn counted_comparison(
    fig: &Figure,
    a: &[f64],
    b: &[f64],
    threshold: f64,
) -> Option<FigureComparison> {
    if !fig.counted {
        return None;
    }
    let range = |v: &[f64]| -> Option<(f64, f64)> {
        let lo = v.iter().copied().reduce(f64::min)?;
        let hi = v.iter().copied().reduce(f64::max)?;
        Some((lo, hi))
    };
    let ((alo, ahi), (blo, bhi)) = (range(a)?, range(b)?);
    let repeats = |lo: f64, hi: f64| hi == lo || (lo > 0.0 && hi / lo - 1.0 <= COUNT_SPREAD);
    if !repeats(alo, ahi) || !repeats(blo, bhi) {
        return None;
    }
    let median = |v: &[f64]| stats::summarize(v).map(|s| s.median);
    let (ma, mb) = (median(a)?, median(b)?);
    let (ratio, low, high, verdict) = if blo > 0.0 {
        let (low, high) = (alo / bhi, ahi / blo);
        let verdict = if alo == ahi && blo == bhi && alo == blo {
            Verdict::Unchanged
        } else if low > 1.0 + threshold {
            Verdict::Higher
        } else if high < 1.0 - threshold {
            Verdict::Lower
        } else if low > 1.0 - threshold && high < 1.0 + threshold {
            Verdict::SameWithinThreshold
        } else {
            Verdict::Undecided
        };
        (Some(ma / mb), Some(low), Some(high), verdict)
    } else if ahi == 0.0 {
        (None, None, None, Verdict::Unchanged)
    } else {
        // Counted now, none in the reference: more, by no ratio.
        (None, None, None, Verdict::Higher)
    };
    let certain = if verdict.differs() { 0.0 } else { 1.0 };
    Some(FigureComparison {
        figure: fig.key.into(),
        ratio,
        ratio_low: low,
        ratio_high: high,
        p_value: certain,
        p_adjusted: certain,
        u: (a.len() * b.len()) as f64 / 2.0,
        test: EXACT_TEST,
        verdict,
        runs_needed: None,
        ranges_overlap: None,
    })
}

/// One figure's comparison from its estimate in a family of `m` (`None`:
/// every run of both gave one value).
fn figure_comparison(
    fig: &Figure,
    a: &[f64],
    b: &[f64],
    estimate: Option<stats::RatioShift>,
    m: usize,
    threshold: f64,
    reference_fixed: bool,
) -> FigureComparison {
    let Some(e) = estimate else {
        let shown = (a.first().copied().unwrap_or(0.0) != 0.0).then_some(1.0);
        return FigureComparison {
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
            ranges_overlap: None,
        };
    };
    let verdict = decide(&e, threshold);
    FigureComparison {
        figure: fig.key.into(),
        ratio: e.ratio.map(|r| r.0),
        ratio_low: e.ratio.map(|r| r.1),
        ratio_high: e.ratio.map(|r| r.2),
        p_value: e.shift.p,
        p_adjusted: (e.shift.p * m.max(1) as f64).min(1.0),
        u: e.shift.u,
        test: e.shift.method,
        verdict,
        runs_needed: if verdict.open() {
            runs_to_decide(&e, threshold, (a.len(), b.len()), reference_fixed)
        } else {
            None
        },
        ranges_overlap: (verdict == Verdict::TooFewRuns).then(|| ranges_overlap(a, b)),
    }
}

/// Whether the ranges of `a` and `b` (least to greatest) share a value.
pub fn ranges_overlap(a: &[f64], b: &[f64]) -> bool {
    let range = |v: &[f64]| {
        v.iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
                (lo.min(*x), hi.max(*x))
            })
    };
    let ((alo, ahi), (blo, bhi)) = (range(a), range(b));
    alo <= bhi && blo <= ahi
}

/// Whether a difference (`with`, the verdict on every run) hangs on the
/// outliers left out of `without` (its interval made again at the same
/// level): without them the interval still bounds the ratio, and the ratio
/// comes back within `1 ± threshold` (or turns to the other side), or the
/// interval lies within it. Runs left out cost an interval its width: an
/// interval that cannot be bounded at all without them (too few runs
/// remain), or one that only widens around the same ratio, says nothing
/// about the outliers. Regression: 42× differences at 6 runs were said to
/// hang on outliers with "without them the ratio is 41.8× [0.0, inf]".
fn hangs_on_outliers(without: &stats::RatioShift, with: &FigureComparison, threshold: f64) -> bool {
    if without.unbounded() {
        return false;
    }
    match decide(without, threshold) {
        Verdict::SameWithinThreshold => true,
        Verdict::Lower | Verdict::Higher | Verdict::Unchanged | Verdict::TooFewRuns => false,
        Verdict::Undecided => match (without.ratio, with.ratio) {
            (Some((x, _, _)), Some(before)) => {
                (x - 1.0).abs() <= threshold || (x - 1.0).signum() != (before - 1.0).signum()
            }
            _ => false,
        },
    }
}

/// Warnings about outliers that decide a verdict: a figure called
/// different that would not be without the outliers of either command's
/// runs (see `crate::stats::outliers` and [`hangs_on_outliers`]).
/// Outliers that only move a median are warned about with the summaries
/// (`tally run`'s rule).
fn outliers_deciding_verdicts(
    commands: &[CommandResult],
    values: &[Vec<Option<Vec<f64>>>],
    cfg: &Config,
    each: f64,
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
            let Some(without) = stats::ratio_shift(&keep(a, &oa), &keep(b, &ob), each) else {
                continue;
            };
            if hangs_on_outliers(&without, v, cfg.threshold) {
                let runs = |o: &[usize], who: usize| {
                    o.iter()
                        .take(5)
                        .map(|k| format!("#{} run {}", who + 1, k + 1))
                        .collect::<Vec<_>>()
                };
                let mut named = runs(&oa, i);
                named.extend(runs(&ob, reference));
                let shown = FigureComparison {
                    ratio: without.ratio.map(|r| r.0),
                    ratio_low: without.ratio.map(|r| r.1),
                    ratio_high: without.ratio.map(|r| r.2),
                    ..v.clone()
                };
                out.push(format!(
                    "#{} {}: {}: the difference hangs on outliers ({}): without them the \
                     ratio is {}, not beyond {}",
                    i + 1,
                    c.name,
                    fig.label,
                    named.join(", "),
                    ratio_text(&shown),
                    percent(cfg.threshold)
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::plan::Instance;
    use crate::report::{Format, Render, Style, render};
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
            exit: ExitInfo {
                code: Some(code),
                signal: None,
                signal_number: None,
                core_dumped: false,
            },
            ..RunRecord::bare(0)
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

    /// Regression: differences of 42× at 6 runs each were said to "hang
    /// on outliers" because without two runs no interval could be made
    /// ("without them the ratio is 41.8× [0.0, inf]").
    #[test]
    fn outliers_that_leave_no_interval_are_not_evidence() {
        let v = |ratio: f64| FigureComparison {
            figure: "wall_ns".into(),
            ratio: Some(ratio),
            ratio_low: Some(ratio * 0.9),
            ratio_high: Some(ratio * 1.1),
            p_value: 0.001,
            p_adjusted: 0.01,
            u: 0.0,
            test: "exact",
            verdict: Verdict::Higher,
            runs_needed: None,
            ranges_overlap: None,
        };
        let each = 0.05 / 15.0;
        let fast = [1.0, 1.01, 0.99, 1.02, 0.98, 1.0];
        // 4 runs against 6 cannot be bounded at 1 - 0.05/15.
        let slow = [42.0, 41.0, 43.0, 42.5];
        let without = stats::ratio_shift(&slow, &fast, each).unwrap();
        assert!(without.unbounded());
        assert!(!hangs_on_outliers(&without, &v(42.0), 0.01));
        // With enough runs left: a ratio that comes back to 1 hangs on
        // them, one that stays far from 1 does not.
        let base: Vec<f64> = (0..20).map(|k| 1.0 + (k % 5) as f64 * 0.01).collect();
        let same: Vec<f64> = (0..20).map(|k| 1.0 + ((k + 2) % 5) as f64 * 0.01).collect();
        let far: Vec<f64> = base.iter().map(|x| x * 42.0).collect();
        let w = stats::ratio_shift(&same, &base, each).unwrap();
        assert!(!w.unbounded());
        assert!(hangs_on_outliers(&w, &v(1.5), 0.01));
        let w = stats::ratio_shift(&far, &base, each).unwrap();
        assert!(!hangs_on_outliers(&w, &v(42.0), 0.01));
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

    /// The intervals are made without resampling: the same runs give the
    /// same intervals whatever the seed.
    #[test]
    fn the_same_runs_give_the_same_intervals_whatever_the_seed() {
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
        assert_eq!(interval(5), interval(6));
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
        assert!(narrow.contains("undecided"), "{narrow}");
        assert!(!narrow.contains("significant"), "{narrow}");
        let text = human(&r, None);
        // The failing command is flagged on its every row and in the list.
        let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("  #2")).collect();
        assert!(
            rows.len() > 3 && rows.iter().all(|l| l.contains('✗')),
            "{text}"
        );
        assert!(text.contains("undecided"), "{text}");
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
    //! Seeded simulations of whole comparisons, through the family's
    //! intervals and verdicts (`compare_family`, `decide`) as `CompareReport::build`
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
        let (estimates, _) = compare_family(&pairs, 0.05);
        let verdicts: Vec<Verdict> = estimates
            .iter()
            .map(|e| e.as_ref().map_or(Verdict::Unchanged, |e| decide(e, 0.01)))
            .collect();
        // The p-value does not depend on the level: each at 5% alone.
        let uncorrected = estimates.iter().flatten().any(|e| e.shift.p < 0.05);
        (
            verdicts.iter().any(|v| v.differs()),
            verdicts.first().is_some_and(|v| v.differs()),
            uncorrected,
        )
    }

    /// A figure's values: lognormal (spread `cv`), bimodal (two modes
    /// 1.6 apart, each a little spread) or tied (small counts, often 0),
    /// each scaled by `ratio`.
    fn figure(rng: &mut Rng, kind: usize, n: usize, ratio: f64) -> Vec<f64> {
        (0..n)
            .map(|_| match kind {
                0 => lognormal(rng, 1e7 * ratio, 0.1),
                1 => {
                    let mode = if rng.unit() < 0.6 { 1.0 } else { 1.6 };
                    lognormal(rng, 2e6 * mode * ratio, 0.03)
                }
                _ => (poisson(rng, 2.0) * ratio).round(),
            })
            .collect()
    }

    /// 10,000 seeded comparisons of 3 to 60 runs, 1 to 4 commands against
    /// a reference, with lognormal, bimodal and tied figures, shifted or
    /// not: every verdict is the one its interval gives, the p-value is
    /// within the family's level exactly when the interval leaves out 1,
    /// and figures whose every value lies beyond the threshold from every
    /// value of the reference are never the same.
    #[test]
    fn verdicts_never_disagree_with_their_intervals() {
        let mut rng = Rng::new(32);
        let mut seen = std::collections::BTreeMap::<String, usize>::new();
        for case in 0..10_000 {
            let n = 3 + rng.below(58);
            let k = 1 + rng.below(4);
            let alpha = [0.05, 0.01][case % 2];
            let threshold = [0.0, 0.01, 0.05][rng.below(3)];
            let kinds: Vec<usize> = (0..1 + rng.below(3)).map(|_| rng.below(3)).collect();
            let reference: Vec<Vec<f64>> =
                kinds.iter().map(|&f| figure(&mut rng, f, n, 1.0)).collect();
            let mut samples: Vec<Vec<f64>> = Vec::new();
            for _ in 0..k {
                let ratio = [1.0, 1.0, 1.005, 1.05, 1.3, 0.7, 3.0][rng.below(7)];
                for &f in &kinds {
                    samples.push(figure(&mut rng, f, n, ratio));
                }
            }
            let pairs: Vec<(&[f64], &[f64])> = samples
                .iter()
                .enumerate()
                .map(|(i, a)| (a.as_slice(), reference[i % kinds.len()].as_slice()))
                .collect();
            let (estimates, m) = compare_family(&pairs, alpha);
            let each = alpha / m.max(1) as f64;
            for (&(a, b), e) in pairs.iter().zip(estimates) {
                let v = figure_comparison(&FIGURES[0], a, b, e, m, threshold, false);
                *seen.entry(format!("{:?}", v.verdict)).or_default() += 1;
                let context = || format!("case {case}: {v:?}\n{a:?}\n{b:?}");
                let Some(e) = e else {
                    assert_eq!(v.verdict, Verdict::Unchanged, "{}", context());
                    continue;
                };
                match (v.ratio_low, v.ratio_high) {
                    (Some(lo), Some(hi)) => {
                        let want = if e.unbounded() {
                            assert_eq!((lo, hi), (0.0, f64::INFINITY), "{}", context());
                            Verdict::TooFewRuns
                        } else if lo > 1.0 + threshold {
                            Verdict::Higher
                        } else if hi < 1.0 - threshold {
                            Verdict::Lower
                        } else if lo > 1.0 - threshold && hi < 1.0 + threshold {
                            Verdict::SameWithinThreshold
                        } else {
                            Verdict::Undecided
                        };
                        assert_eq!(v.verdict, want, "{}", context());
                        assert!(
                            lo <= v.ratio.unwrap() && v.ratio.unwrap() <= hi,
                            "{}",
                            context()
                        );
                        assert_eq!(v.p_value <= each, lo > 1.0 || hi < 1.0, "{}", context());
                    }
                    _ => assert_eq!(
                        v.verdict.differs(),
                        e.shift.low > 0.0 || e.shift.high < 0.0,
                        "{}",
                        context()
                    ),
                }
                if v.verdict.differs() {
                    assert!(v.p_adjusted <= alpha, "{}", context());
                }
                // More runs decide an open verdict, unless its ratio sits
                // on 1 ± threshold.
                let on_bound = v
                    .ratio
                    .is_none_or(|x| x == 1.0 + threshold || x == 1.0 - threshold);
                if v.verdict.open() && !on_bound {
                    assert!(
                        v.runs_needed.is_some_and(|r| r as usize > n),
                        "{}",
                        context()
                    );
                }
                let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
                let max = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
                if max(b) > 0.0 && min(a) > max(b) * (1.0 + threshold) {
                    assert!(
                        matches!(v.verdict, Verdict::Higher | Verdict::TooFewRuns),
                        "{}",
                        context()
                    );
                }
            }
        }
        eprintln!("verdicts over 10,000 comparisons: {seen:?}");
        for verdict in [
            "Higher",
            "Lower",
            "SameWithinThreshold",
            "Undecided",
            "TooFewRuns",
        ] {
            assert!(
                seen.get(verdict).is_some_and(|n| *n > 50),
                "{verdict}: {seen:?}"
            );
        }
    }

    /// Family-wise coverage: in comparisons of three commands (two against
    /// the reference, shifted by 1.25 and 0.9) with four independent
    /// figures each, the chance that all eight intervals hold their true
    /// ratio, at 5, 10, 20 and 40 runs, on lognormal and bimodal figures.
    /// Prints the table (`TALLY_COVERAGE_REPS` sets the comparisons per
    /// cell; 400 by default, whose 95% is known to ±2.2 points).
    #[test]
    fn family_wise_coverage_is_at_least_the_nominal_95_percent() {
        let reps: usize = std::env::var("TALLY_COVERAGE_REPS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(400);
        let mut rng = Rng::new(2032);
        let mut table =
            String::from("runs  lognormal  bimodal   (family of 8 intervals, nominal 95%)\n");
        let mut worst: f64 = 1.0;
        for n in [5, 10, 20, 40] {
            let mut row = format!("{n:>4}");
            for kind in [0, 1] {
                let mut covered = 0;
                for _ in 0..reps {
                    let mut pairs_values = Vec::new();
                    let reference: Vec<Vec<f64>> =
                        (0..4).map(|_| figure(&mut rng, kind, n, 1.0)).collect();
                    for ratio in [1.25, 0.9] {
                        for r in &reference {
                            pairs_values.push((figure(&mut rng, kind, n, ratio), r.clone(), ratio));
                        }
                    }
                    let pairs: Vec<(&[f64], &[f64])> = pairs_values
                        .iter()
                        .map(|(a, b, _)| (a.as_slice(), b.as_slice()))
                        .collect();
                    let (estimates, _) = compare_family(&pairs, 0.05);
                    let all = estimates
                        .iter()
                        .zip(&pairs_values)
                        .all(|(e, (_, _, truth))| {
                            e.and_then(|e| e.ratio)
                                .is_some_and(|(_, lo, hi)| lo <= *truth && *truth <= hi)
                        });
                    covered += usize::from(all);
                }
                let rate = covered as f64 / reps as f64;
                worst = worst.min(rate);
                row.push_str(&format!("  {:>8.1}%", rate * 100.0));
            }
            table.push_str(&row);
            table.push('\n');
        }
        eprintln!("family-wise coverage, {reps} comparisons per cell:\n{table}");
        // 95% nominal; three standard errors of Monte Carlo slack.
        let slack = 3.0 * (0.05 * 0.95 / reps as f64).sqrt();
        assert!(worst >= 0.95 - slack, "{table}");
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
        // (a difference is one beyond the 1% threshold: 4% to find).
        let n = stats::runs_for_power(0.08, 0.04, 0.05 / 8.0, 0.9) as usize;
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
