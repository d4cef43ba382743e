//! `--baseline OLD.json`: ratios of this run's medians to an earlier run's
//! (another kernel, another machine). A ratio is new / old for every unit,
//! so above 1 means "more ns" (slower) for latencies and "more GB/s"
//! (faster) for bandwidth; `higher_is_better` says which reading applies.
//!
//! `--fail-on ID_GLOB=PCT`: the regression gate of `tally compare` for
//! machine benchmarks ([`gate()`]): the figures whose ids match form a
//! family, each tested on both runs' samples (Mann–Whitney U,
//! Holm-adjusted over the family), each ratio's interval a bootstrap at
//! 1 − alpha / the family's size, widened by how much the figure may move
//! between runs (`unstable ±x%`, see `super::figure::Stability`); then
//! [`crate::gate::judge`] in the figure's worse direction.

use std::path::{Path, PathBuf};

use super::model::BenchReport;
pub use super::model::{Baseline, BenchGate, BenchGateResult, BenchRule, Comparison, Verdict};
use crate::gate::{self, Evidence, Outcome};

/// The significance level of the verdicts.
pub const ALPHA: f64 = 0.05;

/// The verdict on `new` samples against `old` ones: a two-sided
/// Mann–Whitney U test (the samples are medians of batches, not normal),
/// and the direction of the ratio of medians.
pub fn verdict(
    new: &[f64],
    old: &[f64],
    ratio: f64,
    higher_is_better: bool,
) -> (Option<f64>, Verdict) {
    if new.len() < 2 || old.len() < 2 {
        return (None, Verdict::Unknown);
    }
    let Some(mw) = crate::stats::mann_whitney(new, old) else {
        return (None, Verdict::Unknown);
    };
    let verdict = if mw.p >= ALPHA || ratio == 1.0 {
        Verdict::Same
    } else if (ratio > 1.0) == higher_is_better {
        Verdict::Better
    } else {
        Verdict::Worse
    };
    (Some(mw.p), verdict)
}

/// How much of a baseline is read: 64 MiB, the bound of the report's
/// schema with room to spare. A `--quick` report is 1.3 MB here (386
/// figures; the largest holds 2,029 samples); the harness keeps at most
/// 2,000 samples per figure and pass, two passes, under 25 bytes of JSON
/// each: 64 MiB holds 670 figures all at that most, more than any map
/// runs.
pub const BOUND: crate::input::Bound = crate::input::Bound {
    what: "baseline",
    cap_bytes: 64 << 20,
    fix: "give a report written by `tally bench --format json > OLD.json` (at most 64 MiB)",
};

/// Why a baseline could not be used.
#[derive(Debug, thiserror::Error)]
pub enum BaselineError {
    /// It names the file, the cap or type, and the fix.
    #[error(transparent)]
    Read(#[from] crate::input::InputError),
    #[error(
        "the baseline {} is not a `tally bench --format json` report ({}); write one with `tally bench --format json > OLD.json`",
        crate::text::path::display(path),
        // serde quotes what it found (a `mode`, a field): text not from tally.
        crate::text::escape_text(&source.to_string())
    )]
    Parse {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error(
        "the baseline {} has schema_version {found}, this tally writes {expected}; rerun the old version with the same tally",
        crate::text::path::display(path)
    )]
    Schema {
        path: PathBuf,
        /// As read (`4294967298`), or `missing`.
        found: String,
        expected: u32,
    },
    #[error(
        "the baseline {} is corrupt: {why}; write it again with `tally bench --format json > OLD.json`",
        crate::text::path::display(path)
    )]
    Corrupt { path: PathBuf, why: String },
    #[error(
        "--fail-on {glob:?}: matches no figure of the baseline {} (figure ids look like {examples}; the JSON's benchmarks[].figures[].id)",
        crate::text::path::display(path)
    )]
    NoFigure {
        path: PathBuf,
        glob: String,
        examples: String,
    },
}

impl BaselineError {
    /// 2 for a `--fail-on` that names nothing (bad usage), 1 for a file
    /// that cannot be used.
    pub fn exit_code(&self) -> u8 {
        match self {
            BaselineError::NoFigure { .. } => 2,
            _ => 1,
        }
    }
}

/// Reads an earlier report (see [`BOUND`]).
pub fn load(path: &Path) -> Result<BenchReport, BaselineError> {
    let text = crate::input::read_text(path, &BOUND)?;
    // The version first, alone (the rest skipped unparsed), so that a
    // report of another version says so rather than failing on a field.
    #[derive(serde::Deserialize)]
    struct Version {
        schema_version: Option<u64>,
    }
    let v: Version = serde_json::from_str(&text).map_err(|source| BaselineError::Parse {
        path: path.to_path_buf(),
        source,
    })?;
    if v.schema_version != Some(u64::from(crate::report::SCHEMA_VERSION)) {
        return Err(BaselineError::Schema {
            path: path.to_path_buf(),
            found: v.schema_version.map_or("missing".into(), |s| s.to_string()),
            expected: crate::report::SCHEMA_VERSION,
        });
    }
    let report: BenchReport =
        serde_json::from_str(&text).map_err(|source| BaselineError::Parse {
            path: path.to_path_buf(),
            source,
        })?;
    validate(&report).map_err(|why| BaselineError::Corrupt {
        path: path.to_path_buf(),
        why,
    })?;
    Ok(report)
}

/// Every number of a baseline read checked once, here, so that no later
/// code (the ratios, the gate) sees a corrupt one: each figure's samples
/// and summary finite, the summary in order (min ≤ median ≤ max), and a
/// figure's median not negative (a cost, a rate, a size) unless tally
/// marked it implausible. The error names the figure and the reason.
fn validate(report: &BenchReport) -> Result<(), String> {
    if report.benchmarks.is_empty() {
        return Err("it holds no benchmark (benchmarks is empty)".into());
    }
    for (i, b) in report.benchmarks.iter().enumerate() {
        for (j, f) in b.figures.iter().enumerate() {
            let at = || {
                format!(
                    "benchmarks[{i}].figures[{j}] ({})",
                    crate::text::escape_text(&f.id.chars().take(60).collect::<String>())
                )
            };
            let short = crate::units::short_number;
            if let Some(x) = f.samples.iter().find(|x| !x.is_finite()) {
                return Err(format!("{}: a sample is {}, not a number", at(), short(*x)));
            }
            let Some(s) = f.value.summary() else {
                continue;
            };
            let fields = [
                ("min", s.min),
                ("median", s.median),
                ("mean", s.mean),
                ("max", s.max),
                ("p95", s.p95),
                ("mad", s.mad),
            ];
            if let Some((name, x)) = fields.iter().find(|(_, x)| !x.is_finite()) {
                return Err(format!("{}: {name} is {}, not a number", at(), short(*x)));
            }
            if !(s.min <= s.median && s.median <= s.max) {
                return Err(format!(
                    "{}: median {} lies outside min {} and max {}",
                    at(),
                    short(s.median),
                    short(s.min),
                    short(s.max)
                ));
            }
            if f.implausible.is_none() && s.median < 0.0 {
                return Err(format!(
                    "{}: median {} is negative; a time, a rate or a size is not",
                    at(),
                    short(s.median)
                ));
            }
        }
    }
    Ok(())
}

/// The report of `--baseline` (`path`), read and checked against
/// `--fail-on`'s `rules`, with its path; `None` without one.
pub fn read(
    path: Option<&Path>,
    rules: &[BenchRule],
) -> Result<Option<(PathBuf, BenchReport)>, BaselineError> {
    let Some(path) = path else {
        return Ok(None);
    };
    let old = load(path)?;
    check_rules(path, &old, rules)?;
    Ok(Some((path.to_path_buf(), old)))
}

/// Compares `report` with the baseline `old` (read from `path`) and,
/// with `--fail-on`'s `rules`, gates it (`strict`: what cannot be decided
/// fails too).
pub fn apply(
    report: &mut BenchReport,
    path: &Path,
    old: &BenchReport,
    rules: &[BenchRule],
    strict: bool,
) {
    let mut base = compare(path, old, report);
    if !rules.is_empty() {
        base.gate = Some(gate(old, report, rules, strict));
    }
    report.baseline = Some(base);
}

/// Compares `new` against `old` figure by figure (matched on `id`).
pub fn compare(path: &Path, old: &BenchReport, new: &BenchReport) -> Baseline {
    let mut comparisons = Vec::new();
    let mut missing = 0usize;
    for f in new.benchmarks.iter().flat_map(|b| &b.figures) {
        let Some(new_median) = f.median() else {
            continue;
        };
        let old_fig = old
            .benchmarks
            .iter()
            .flat_map(|b| &b.figures)
            .find(|o| o.id == f.id && o.value.unit_key() == f.value.unit_key());
        match old_fig.and_then(|o| Some((o, o.median()?))) {
            Some((o, old_median)) if old_median != 0.0 => {
                let ratio = new_median / old_median;
                let higher_is_better = f.value.higher_is_better();
                let (p_value, verdict) = verdict(&f.samples, &o.samples, ratio, higher_is_better);
                comparisons.push(Comparison {
                    id: f.id.clone(),
                    unit: f.value.unit_key().to_string(),
                    old_median,
                    new_median,
                    ratio,
                    higher_is_better,
                    p_value,
                    verdict,
                })
            }
            _ => missing += 1,
        }
    }
    Baseline {
        path: path.to_path_buf(),
        old_cpu_model: old.machine.cpu_model.clone(),
        old_kernel: old.machine.kernel.clone(),
        old_mode: old.mode,
        comparisons,
        missing_in_baseline: missing,
        gate: None,
    }
}

/// `ID_GLOB=PCT`.
pub fn parse_rule(s: &str) -> Result<BenchRule, String> {
    let (glob, limit) = gate::split_rule(s)?;
    Ok(BenchRule {
        glob: glob.to_string(),
        limit,
    })
}

/// A glob (`*` any run of characters, `?` one) as an anchored regex.
fn glob_regex(glob: &str) -> Option<regex::Regex> {
    let mut re = String::from("^");
    let mut literal = String::new();
    for c in glob.chars() {
        match c {
            '*' | '?' => {
                re.push_str(&regex::escape(&literal));
                literal.clear();
                re.push_str(if c == '*' { ".*" } else { "." });
            }
            c => literal.push(c),
        }
    }
    re.push_str(&regex::escape(&literal));
    re.push('$');
    regex::Regex::new(&re).ok()
}

/// The rule that gates figure `id`: the first whose glob matches.
fn rule_for<'a>(rules: &'a [(regex::Regex, &'a BenchRule)], id: &str) -> Option<&'a BenchRule> {
    rules
        .iter()
        .find(|(re, _)| re.is_match(id))
        .map(|(_, r)| *r)
}

/// Checks, before any benchmark runs, that every glob names some figure
/// of the baseline.
pub fn check_rules(
    path: &Path,
    old: &BenchReport,
    rules: &[BenchRule],
) -> Result<(), BaselineError> {
    let ids: Vec<&str> = old
        .benchmarks
        .iter()
        .flat_map(|b| &b.figures)
        .map(|f| f.id.as_str())
        .collect();
    for r in rules {
        let matches = glob_regex(&r.glob).is_some_and(|re| ids.iter().any(|id| re.is_match(id)));
        if !matches {
            let mut examples: Vec<&str> = ids.clone();
            examples.dedup_by(|a, b| a.split('.').next() == b.split('.').next());
            return Err(BaselineError::NoFigure {
                path: path.to_path_buf(),
                glob: r.glob.clone(),
                examples: examples
                    .into_iter()
                    .take(5)
                    .map(crate::text::escape_text)
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
    }
    Ok(())
}

/// The significance level of the gate's family.
pub const GATE_ALPHA: f64 = 0.05;

/// The gate of `rules` on `new` against `old` (see the module's text).
pub fn gate(old: &BenchReport, new: &BenchReport, rules: &[BenchRule], strict: bool) -> BenchGate {
    let compiled: Vec<(regex::Regex, &BenchRule)> = rules
        .iter()
        .filter_map(|r| Some((glob_regex(&r.glob)?, r)))
        .collect();
    let old_figures: Vec<&super::figure::Figure> =
        old.benchmarks.iter().flat_map(|b| &b.figures).collect();
    // The gated figures of this run, each with its baseline figure when
    // that has the same unit.
    type Pair<'a> = (
        &'a super::figure::Figure,
        Option<&'a super::figure::Figure>,
        &'a BenchRule,
    );
    let pairs: Vec<Pair> = new
        .benchmarks
        .iter()
        .flat_map(|b| &b.figures)
        .filter_map(|f| {
            let rule = rule_for(&compiled, &f.id)?;
            let o = old_figures
                .iter()
                .find(|o| o.id == f.id && o.value.unit_key() == f.value.unit_key())
                .copied();
            Some((f, o, rule))
        })
        .collect();
    // Figures gated in the baseline and missing now are not passes.
    let mut results: Vec<BenchGateResult> = old_figures
        .iter()
        .filter(|o| rule_for(&compiled, &o.id).is_some() && o.measured().is_some())
        .filter(|o| {
            !pairs
                .iter()
                .any(|(f, _, _)| f.id == o.id && f.measured().is_some())
        })
        .map(|o| {
            let limit = rule_for(&compiled, &o.id).map_or(0.0, |r| r.limit);
            BenchGateResult::untested(o, limit, "not measured in this run")
        })
        .collect();
    let tested: Vec<(&Pair, crate::stats::MannWhitney)> = pairs
        .iter()
        .filter_map(|p| {
            let (f, Some(o), _) = p else {
                return None;
            };
            f.measured()?;
            o.measured()?;
            Some((p, crate::stats::mann_whitney(&f.samples, &o.samples)?))
        })
        .collect();
    let m = tested.len();
    let level = 1.0 - GATE_ALPHA / m.max(1) as f64;
    let first_step = GATE_ALPHA / m.max(1) as f64;
    let adjusted = crate::stats::holm(&tested.iter().map(|(_, t)| t.p).collect::<Vec<_>>());
    for ((f, o, rule), p_adj) in tested.iter().map(|(p, _)| *p).zip(adjusted) {
        if let Some(o) = o {
            results.push(judge(f, o, rule.limit, p_adj, level, first_step));
        }
    }
    // Gated now but absent from the baseline, or unmeasured in either.
    for (f, o, rule) in &pairs {
        if results.iter().any(|r| r.id == f.id) {
            continue;
        }
        let why = match (f.measured(), o) {
            (None, _) => "not measured in this run",
            (Some(_), None) => "not in the baseline",
            (Some(_), Some(_)) => "not measured in the baseline",
        };
        results.push(BenchGateResult::untested(f, rule.limit, why));
    }
    let worst = results.iter().map(|r| r.outcome).max();
    BenchGate {
        rules: rules.to_vec(),
        strict,
        alpha: GATE_ALPHA,
        family_size: m as u32,
        interval_level: level,
        outcome: worst.unwrap_or(Outcome::Pass),
        exit_status: gate::exit_status(worst, strict),
        headline: gate_headline(&results),
        results,
    }
}

/// The gate's result for figure `f` against its baseline figure `o`
/// under `limit`: `p_adj` is the Holm-adjusted p of their difference,
/// `level` the level of the ratio's interval, `first_step` the smallest
/// p the family's first test must reach.
fn judge(
    f: &super::figure::Figure,
    o: &super::figure::Figure,
    limit: f64,
    p_adj: f64,
    level: f64,
    first_step: f64,
) -> BenchGateResult {
    let higher_is_better = f.value.higher_is_better();
    let seed = f.id.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x1000_0000_01b3)
    });
    let ci = crate::stats::ratio_of_medians(&f.samples, &o.samples, level, seed);
    let unstable = match (f.unstable(), o.unstable()) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };
    let widen = 1.0 + unstable.unwrap_or(0.0) / 100.0;
    let interval = ci.map(|c| (c.ratio, c.low / widen, c.high * widen));
    let worse = ci.is_some_and(|c| (c.ratio < 1.0) == higher_is_better && c.ratio != 1.0);
    let evidence = Evidence {
        interval,
        significant_worse: p_adj < GATE_ALPHA && worse,
        too_few_runs: crate::stats::mann_whitney_min_p(f.samples.len(), o.samples.len())
            > first_step,
        higher_is_better,
        both_zero: f.median() == Some(0.0) && o.median() == Some(0.0),
    };
    let outcome = gate::judge(&evidence, limit);
    let note = match (outcome, unstable) {
        (Outcome::Inconclusive, Some(u)) => Some(format!(
            "unstable ±{u:.0}% between runs: the interval is widened by it"
        )),
        (Outcome::Inconclusive, None) if evidence.too_few_runs => {
            Some("too few samples to show a difference".into())
        }
        _ => None,
    };
    BenchGateResult {
        id: f.id.clone(),
        unit: f.value.unit_key().to_string(),
        higher_is_better,
        limit,
        ratio: interval.map(|i| i.0),
        ratio_low: interval.map(|i| i.1),
        ratio_high: interval.map(|i| i.2),
        p_adjusted: Some(p_adj),
        unstable_percent: unstable,
        outcome,
        note,
    }
}

impl BenchGateResult {
    /// A gated figure that could not be tested, and `why`: inconclusive.
    fn untested(f: &super::figure::Figure, limit: f64, why: &str) -> BenchGateResult {
        BenchGateResult {
            id: f.id.clone(),
            unit: f.value.unit_key().to_string(),
            higher_is_better: f.value.higher_is_better(),
            limit,
            ratio: None,
            ratio_low: None,
            ratio_high: None,
            p_adjusted: None,
            unstable_percent: None,
            outcome: Outcome::Inconclusive,
            note: Some(why.into()),
        }
    }
}

/// `worse by more than 5%`, `within 5%`, in the figure's worse direction.
pub fn gate_phrase(r: &BenchGateResult) -> String {
    let limit = gate::limit_text(r.limit);
    let sign = if r.higher_is_better { "-" } else { "+" };
    match r.outcome {
        Outcome::Regression => format!(
            "beyond {sign}{limit}{}",
            r.p_adjusted.map_or(String::new(), |p| if p < 0.001 {
                ", p<0.001".to_string()
            } else {
                format!(", p={p:.3}")
            })
        ),
        Outcome::Pass => format!("within {sign}{limit}"),
        Outcome::Inconclusive => match &r.note {
            Some(n) if r.ratio_low.is_some() => format!("across {sign}{limit}: {n}"),
            Some(n) => n.clone(),
            None => format!("across {sign}{limit}"),
        },
    }
}

/// `+20.3% [+18.1, +22.4]`.
pub fn gate_change(r: &BenchGateResult) -> String {
    match (r.ratio, r.ratio_low, r.ratio_high) {
        (Some(x), Some(lo), Some(hi)) if lo != hi => {
            format!("{} {}", gate::change(x), gate::change_interval(lo, hi))
        }
        (Some(x), ..) => gate::change(x),
        _ => "—".into(),
    }
}

fn gate_headline(results: &[BenchGateResult]) -> String {
    let count = |o: Outcome| results.iter().filter(|r| r.outcome == o).count();
    let (bad, unsure, good) = (
        count(Outcome::Regression),
        count(Outcome::Inconclusive),
        count(Outcome::Pass),
    );
    let mut summary = Vec::new();
    if bad > 0 {
        summary.push(format!(
            "{bad} regression{}",
            if bad == 1 { "" } else { "s" }
        ));
    }
    if unsure > 0 {
        summary.push(format!("{unsure} inconclusive"));
    }
    if summary.is_empty() {
        summary.push("pass".into());
    }
    let mut shown: Vec<&BenchGateResult> = results
        .iter()
        .filter(|r| r.outcome != Outcome::Pass)
        .collect();
    shown.sort_by_key(|r| std::cmp::Reverse(r.outcome));
    let mut parts: Vec<String> = shown
        .iter()
        .take(5)
        .map(|r| format!("{} {} {}", r.id, gate_change(r), gate_phrase(r)))
        .collect();
    if shown.len() > 5 {
        parts.push(format!("{} more", shown.len() - 5));
    }
    if good > 0 {
        parts.push(format!(
            "{good} figure{} within {}",
            if good == 1 { "" } else { "s" },
            match results.first() {
                Some(first) if results.iter().all(|r| r.limit == first.limit) => {
                    gate::limit_text(first.limit)
                }
                _ => "their limits".into(),
            }
        ));
    }
    if parts.is_empty() {
        return format!("{}: no figure gated", summary.join(", "));
    }
    format!("{}: {}", summary.join(", "), parts.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStrExt;

    #[test]
    fn a_shifted_latency_is_worse_and_a_reshuffle_is_the_same() {
        let old: Vec<f64> = (0..12).map(|i| 100.0 + f64::from(i)).collect();
        let slower: Vec<f64> = old.iter().map(|x| x * 1.2).collect();
        let (p, v) = verdict(&slower, &old, 1.2, false);
        assert!(p.is_some_and(|p| p < ALPHA), "{p:?}");
        assert_eq!(v, Verdict::Worse);
        // Higher is better (bandwidth): the same shift is better.
        assert_eq!(verdict(&slower, &old, 1.2, true).1, Verdict::Better);
        let mut again = old.clone();
        again.reverse();
        let (p, v) = verdict(&again, &old, 1.0, false);
        assert!(p.is_some_and(|p| p > 0.9), "{p:?}");
        assert_eq!(v, Verdict::Same);
        // Overlapping samples with a different median are not a change.
        let close: Vec<f64> = old.iter().map(|x| x + 1.0).collect();
        assert_eq!(verdict(&close, &old, 1.01, false).1, Verdict::Same);
        assert_eq!(verdict(&[1.0], &old, 1.0, false), (None, Verdict::Unknown));
    }

    #[test]
    fn non_utf8_paths_round_trip_losslessly() {
        let path = PathBuf::from(std::ffi::OsStr::from_bytes(b"/tmp/caf\xe9\n.json"));
        let b = Baseline {
            path: path.clone(),
            old_cpu_model: None,
            old_kernel: None,
            old_mode: super::super::Mode::Quick,
            comparisons: vec![],
            missing_in_baseline: 0,
            gate: None,
        };
        let j = serde_json::to_value(&b).unwrap();
        assert_eq!(j["path"]["bytes_hex"], "2f746d702f636166e90a2e6a736f6e");
        let back: Baseline = serde_json::from_value(j).unwrap();
        assert_eq!(back.path, path);
        assert!(
            b.describe().starts_with("/tmp/caf\\xe9\\x0a.json "),
            "{}",
            b.describe()
        );
        let bad = serde_json::json!({"path": {"lossy": "x", "bytes_hex": "zz"},
            "old_cpu_model": null, "old_kernel": null, "old_mode": "quick",
            "comparisons": [], "missing_in_baseline": 0});
        assert!(serde_json::from_value::<Baseline>(bad).is_err());
    }
}
