//! `--baseline OLD.json`: ratios of this run's medians to an earlier run's
//! (another kernel, another machine). A ratio is new / old for every unit,
//! so above 1 means "more ns" (slower) for latencies and "more GB/s"
//! (faster) for bandwidth; `higher_is_better` says which reading applies.
//!
//! `--fail-on ID_GLOB=PCT`: the regression gate of `tally compare` for
//! machine benchmarks ([`gate()`]): the figures whose ids match form a
//! family, each ratio's interval the Hodges–Lehmann/Moses interval of
//! both runs' samples at 1 − alpha / the family's size (the method of
//! `tally compare`, and of [`verdict`]), widened by how much the figure
//! may move between runs (`unstable ±x%`, see
//! `super::figure::Stability`); then [`crate::gate::judge`] in the
//! figure's worse direction. When the speed probes of the two runs say
//! the machine ran at another speed, times and rates are inconclusive
//! (`--strict` fails them), as in `tally compare`'s gate.

use std::path::{Path, PathBuf};

use super::model::BenchReport;
pub use super::model::{Baseline, BenchGate, BenchGateResult, BenchRule, Comparison, Verdict};
use crate::gate::{self, Evidence, Outcome};

/// The significance level of the verdicts.
pub const ALPHA: f64 = 0.05;

/// What `new` samples say against `old` ones, read from one interval:
/// the Hodges–Lehmann ratio of the two with its Mann–Whitney (Moses)
/// interval at 1 − [`ALPHA`] (`crate::stats::ratio_shift`, exact with ties
/// at small n), the same method as `tally compare`'s. Better or worse when
/// the interval leaves 1 out in that direction, the same (no difference
/// shown) when it holds 1, unknown when the samples are too few to leave
/// it out at all. The p-value is that test's, so it is below [`ALPHA`]
/// exactly when the verdict is better or worse.
pub fn verdict(new: &[f64], old: &[f64], higher_is_better: bool) -> Judged {
    let unknown = Judged {
        p: None,
        verdict: Verdict::Unknown,
        interval: None,
    };
    if new.len() < 2 || old.len() < 2 {
        return unknown;
    }
    let Some(e) = crate::stats::ratio_shift(new, old, ALPHA) else {
        return unknown;
    };
    if e.unbounded() {
        return Judged {
            p: Some(e.shift.p),
            ..unknown
        };
    }
    // Without a ratio (a median of 0 in the baseline), the shift's sign.
    let (higher, lower) = match e.ratio {
        Some((_, low, high)) => (low > 1.0, high < 1.0),
        None => (e.shift.low > 0.0, e.shift.high < 0.0),
    };
    let verdict = if higher == higher_is_better && (higher || lower) {
        Verdict::Better
    } else if higher || lower {
        Verdict::Worse
    } else {
        Verdict::Same
    };
    Judged {
        p: Some(e.shift.p),
        verdict,
        interval: e.ratio.map(|(_, low, high)| (low, high)),
    }
}

/// [`verdict`]'s answer: the p-value, the verdict and the ratio's interval
/// it was read from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Judged {
    pub p: Option<f64>,
    pub verdict: Verdict,
    pub interval: Option<(f64, f64)>,
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
    // Not JSON, or cut short: not a report. JSON with a field of the
    // wrong kind: a damaged one, the field named.
    let refused = |source: serde_json::Error| {
        if source.classify() == serde_json::error::Category::Data {
            BaselineError::Corrupt {
                path: path.to_path_buf(),
                why: crate::input::json_error(text.as_bytes(), &source),
            }
        } else {
            BaselineError::Parse {
                path: path.to_path_buf(),
                source,
            }
        }
    };
    let v: Version = serde_json::from_str(&text).map_err(refused)?;
    if v.schema_version != Some(u64::from(crate::report::SCHEMA_VERSION)) {
        return Err(BaselineError::Schema {
            path: path.to_path_buf(),
            found: v.schema_version.map_or("missing".into(), |s| s.to_string()),
            expected: crate::report::SCHEMA_VERSION,
        });
    }
    let report: BenchReport = serde_json::from_str(&text).map_err(refused)?;
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
    if let Some(r) = &report.noise.reference {
        crate::speed::check_probes("noise.reference.speed_probes_ns", &r.speed_probes_ns)?;
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
                let judged = verdict(&f.samples, &o.samples, higher_is_better);
                comparisons.push(Comparison {
                    id: f.id.clone(),
                    unit: f.value.unit_key().to_string(),
                    old_median,
                    new_median,
                    ratio,
                    ratio_low: judged.interval.map(|i| i.0),
                    ratio_high: judged.interval.map(|i| i.1),
                    higher_is_better,
                    p_value: judged.p,
                    verdict: judged.verdict,
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
    let (glob, limit) = gate::split_rule(s, "syscall.*=5%")?;
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
    // The family: figures measured in both; each interval at alpha over
    // its size (Bonferroni), so the family's intervals hold together.
    let tested: Vec<&Pair> = pairs
        .iter()
        .filter(|(f, o, _)| f.measured().is_some() && o.is_some_and(|o| o.measured().is_some()))
        .collect();
    let m = tested.len();
    let level = 1.0 - GATE_ALPHA / m.max(1) as f64;
    // Too few probes in the baseline: the speed was not checked, said in
    // the headline; with --strict, figures the speed moves stay undecided.
    let unchecked = crate::speed::unchecked(&probes(old));
    // Otherwise every figure the speed moves is judged in proportion to
    // the speed the probes measured, as `tally compare`'s times are.
    let allowance = unchecked
        .is_none()
        .then(|| crate::speed::allowance(&probes(new), &probes(old)))
        .flatten();
    let excuse = unchecked.clone().filter(|_| strict);
    for (f, o, rule) in tested {
        if let Some(o) = o {
            let mut r = judge(f, o, rule.limit, m);
            if let Some(a) = &allowance {
                in_proportion(&mut r, a);
            } else if let Some(why) = &excuse {
                another_speed(&mut r, why);
            }
            results.push(r);
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
        headline: gate_headline(&results)
            + &unchecked.map(|why| format!("; {why}")).unwrap_or_default(),
        results,
    }
}

/// The gate's result for figure `f` against its baseline figure `o`
/// under `limit`, in a family of `m` figures: the ratio's interval at
/// 1 − alpha/m ([`verdict`]'s method), widened by how much either figure
/// moves between runs; a regression when it lies wholly beyond the limit
/// in the figure's worse direction, a pass when wholly within.
fn judge(
    f: &super::figure::Figure,
    o: &super::figure::Figure,
    limit: f64,
    m: usize,
) -> BenchGateResult {
    let higher_is_better = f.value.higher_is_better();
    let family = m.max(1) as f64;
    let e = crate::stats::ratio_shift(&f.samples, &o.samples, GATE_ALPHA / family);
    let unstable = match (f.unstable(), o.unstable()) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };
    let widen = 1.0 + unstable.unwrap_or(0.0) / 100.0;
    let too_few_runs = e.is_none_or(|e| e.unbounded());
    let interval = e
        .and_then(|e| e.ratio)
        .filter(|_| !too_few_runs)
        .map(|(x, lo, hi)| (x, lo / widen, hi * widen));
    // Worse beyond doubt: the interval (or, without a ratio, the shift)
    // leaves no change out on the figure's worse side.
    let significant_worse = match (interval, e) {
        (Some((_, lo, hi)), _) => {
            if higher_is_better {
                hi < 1.0
            } else {
                lo > 1.0
            }
        }
        (None, Some(e)) if !too_few_runs => {
            if higher_is_better {
                e.shift.high < 0.0
            } else {
                e.shift.low > 0.0
            }
        }
        _ => false,
    };
    let evidence = Evidence {
        interval,
        significant_worse,
        too_few_runs,
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
        ratio: interval
            .map(|i| i.0)
            .or_else(|| e.and_then(|e| e.ratio).map(|r| r.0)),
        ratio_low: interval.map(|i| i.1),
        ratio_high: interval.map(|i| i.2),
        p_adjusted: e.map(|e| (e.shift.p * family).min(1.0)),
        unstable_percent: unstable,
        outcome,
        note,
    }
}

/// A report's speed probes of this [`crate::speed::VERSION`] (none from
/// an earlier version: they timed other work).
fn probes(r: &BenchReport) -> Vec<u64> {
    r.noise
        .reference
        .as_ref()
        .filter(|r| r.speed_probe_version == crate::speed::VERSION)
        .map(|r| r.speed_probes_ns.clone())
        .unwrap_or_default()
}

/// Whether the machine's speed moves a figure of this unit (a time, a
/// rate, a frequency).
fn moved_by_speed(unit: &str) -> bool {
    matches!(unit, "ns" | "gb_per_s" | "mhz")
}

/// A figure the machine's speed moves, measured when its speed could not
/// be checked against the baseline's (`--strict`): neither a regression
/// nor a pass.
fn another_speed(r: &mut BenchGateResult, why: &str) {
    if moved_by_speed(&r.unit) && r.outcome != Outcome::Inconclusive {
        r.outcome = Outcome::Inconclusive;
        r.note = Some(why.to_string());
    }
}

/// A figure the machine's speed moves, judged in proportion to the speed
/// its probes measured ([`crate::speed::Allowance::stands_either`]): a
/// regression or pass the speed difference cannot account for stands;
/// one it can becomes inconclusive, saying why.
fn in_proportion(r: &mut BenchGateResult, a: &crate::speed::Allowance) {
    if !moved_by_speed(&r.unit) || r.outcome == Outcome::Inconclusive {
        return;
    }
    let (Some(lo), Some(hi)) = (r.ratio_low, r.ratio_high) else {
        return;
    };
    let regression = r.outcome == Outcome::Regression;
    if !a.stands_either(r.higher_is_better, regression, lo, hi, r.limit) {
        r.outcome = Outcome::Inconclusive;
        r.note = Some(a.words_either(r.higher_is_better));
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
        Outcome::Inconclusive => {
            // Left inconclusive for another reason (the machine's speed):
            // the words say where the interval lies, as it is printed.
            let place = match (r.ratio_low, r.ratio_high) {
                (Some(lo), Some(hi)) => gate::place(lo, hi, r.limit, r.higher_is_better),
                _ => "across",
            };
            match &r.note {
                Some(n) if r.ratio_low.is_some() => format!("{place} {sign}{limit}: {n}"),
                Some(n) => n.clone(),
                None => format!("{place} {sign}{limit}"),
            }
        }
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
    let good = results
        .iter()
        .filter(|r| r.outcome == Outcome::Pass)
        .count();
    let summary = gate::outcome_counts(results.iter().map(|r| r.outcome));
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
        return format!("{summary}: no figure gated");
    }
    format!("{summary}: {}", parts.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStrExt;

    #[test]
    fn a_shifted_latency_is_worse_and_a_reshuffle_is_the_same() {
        let old: Vec<f64> = (0..12).map(|i| 100.0 + f64::from(i)).collect();
        let slower: Vec<f64> = old.iter().map(|x| x * 1.2).collect();
        let j = verdict(&slower, &old, false);
        assert!(j.p.is_some_and(|p| p < ALPHA), "{j:?}");
        assert_eq!(j.verdict, Verdict::Worse);
        assert!(j.interval.is_some_and(|(lo, _)| lo > 1.0), "{j:?}");
        // Higher is better (bandwidth): the same shift is better.
        assert_eq!(verdict(&slower, &old, true).verdict, Verdict::Better);
        let mut again = old.clone();
        again.reverse();
        let j = verdict(&again, &old, false);
        assert!(j.p.is_some_and(|p| p > 0.9), "{j:?}");
        assert_eq!(j.verdict, Verdict::Same);
        // Overlapping samples with a different median are not a change.
        let close: Vec<f64> = old.iter().map(|x| x + 1.0).collect();
        assert_eq!(verdict(&close, &old, false).verdict, Verdict::Same);
        assert_eq!(verdict(&[1.0], &old, false).verdict, Verdict::Unknown);
    }

    /// Regression: bench's verdict came from a Mann–Whitney p-value and
    /// its ratio from the medians, so the two could disagree at small n.
    /// Over seeded samples (2 to 30 each, shifted or not, with ties), the
    /// verdict is better or worse exactly when the interval beside it
    /// leaves 1 out, on the side the verdict names.
    #[test]
    fn a_bench_verdict_never_disagrees_with_its_interval() {
        let mut rng = crate::stats::Rng::new(7);
        for case in 0..3_000u32 {
            let n1 = 2 + (case % 29) as usize;
            let n2 = 2 + (case / 29 % 29) as usize;
            let shift = [1.0, 1.03, 1.3][(case % 3) as usize];
            let tied = case % 5 == 0;
            let mut draw = |scale: f64| {
                let x = 100.0 * scale * (1.0 + rng.unit() * 0.1);
                if tied { x.round() } else { x }
            };
            let old: Vec<f64> = (0..n2).map(|_| draw(1.0)).collect();
            let new: Vec<f64> = (0..n1).map(|_| draw(shift)).collect();
            for higher_is_better in [false, true] {
                let j = verdict(&new, &old, higher_is_better);
                let Some((lo, hi)) = j.interval else {
                    assert_eq!(j.verdict, Verdict::Unknown, "{j:?}");
                    continue;
                };
                let up = lo > 1.0;
                let down = hi < 1.0;
                let expected = match (up || down, up == higher_is_better) {
                    (false, _) => Verdict::Same,
                    (true, true) => Verdict::Better,
                    (true, false) => Verdict::Worse,
                };
                assert_eq!(j.verdict, expected, "case {case}: {j:?}");
                assert_eq!(j.p.is_some_and(|p| p <= ALPHA), up || down, "{j:?}");
            }
        }
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
