//! `tally compare --fail-on FIGURE=PCT`: the regression gate on a
//! comparison. It reads the comparison's own statistics (the intervals at
//! 1 − alpha/m of [`super::report`], and the tests they invert) and judges
//! each gated figure of each command against its reference with
//! [`crate::gate::judge`]: regression, pass or inconclusive.

pub use super::plan::Rule;
use super::prose::{interval_text, limit_text, p_text, runs_would_decide};
use super::report::{CommandResult, CompareReport, FigureComparison, Verdict};
pub use super::report::{FastestRuns, Gate, GateResult, Reason};
use crate::gate::{self, Evidence, Outcome, Undecidable};
use crate::run::report::{FIGURES, Figure};

/// The names `--fail-on` takes for each figure besides its JSON key: the
/// key without its unit, and the names GNU time, hyperfine and
/// `/proc/PID/io` give it. A test checks that every figure has a line and
/// that no name is taken twice.
#[rustfmt::skip]
const NAMES: &[(&str, &[&str])] = &[
    ("wall_ns", &["wall"]),
    ("cpu_us", &["cpu"]),
    ("user_us", &["user"]),
    ("system_us", &["system", "sys"]),
    ("max_rss_bytes", &["maxrss", "max_rss"]),
    ("minor_faults", &[]),
    ("major_faults", &[]),
    ("voluntary_switches", &[]),
    ("involuntary_switches", &[]),
    ("block_input_ops", &["block_input"]),
    ("block_output_ops", &["block_output"]),
    ("storage_read_bytes", &["read_bytes", "storage_read"]),
    ("storage_write_bytes", &["write_bytes", "storage_write"]),
    ("read_call_bytes", &["rchar", "read_call"]),
    ("write_call_bytes", &["wchar", "write_call"]),
    ("cpu_wait_ns", &["cpu_wait"]),
    ("io_wait_ns", &["io_wait"]),
    ("memory_stall_ns", &["memory_stall"]),
    ("other_wait_ns", &["other_wait"]),
    ("gpu_mem_peak_bytes", &["gpu_mem", "gpu_memory"]),
    ("gpu_busy_ns", &["gpu_busy"]),
    ("gpu_energy_mj", &["gpu_energy"]),
    ("instructions", &["ir", "instructions:u"]),
    ("cycles", &["cycles:u"]),
    ("estimated_cycles", &["est_cycles"]),
    ("data_reads", &["dr"]),
    ("data_writes", &["dw"]),
    ("l1_misses", &["l1"]),
    ("ll_misses", &["ll", "llc_misses"]),
];

/// The figure (its JSON key) `name` stands for.
pub fn figure_of(name: &str) -> Option<&'static Figure> {
    let key = NAMES
        .iter()
        .find(|(key, aliases)| *key == name || aliases.contains(&name))
        .map(|(key, _)| *key)?;
    FIGURES.iter().find(|f| f.key == key)
}

/// Whether the figure keyed `key` is counted work (`--count`).
pub fn counted(key: &str) -> bool {
    FIGURES.iter().any(|f| f.key == key && f.counted)
}

/// `wall (wall_ns), cpu (cpu_us), …`: the names, for an error.
pub fn names() -> String {
    NAMES
        .iter()
        .map(|(key, aliases)| match aliases.first() {
            Some(short) => format!("{short} ({key})"),
            None => (*key).to_string(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Parses `FIGURE=PCT`; an unknown figure is named, with the names there are.
pub fn parse_rule(s: &str) -> Result<Rule, String> {
    let (name, limit) = gate::split_rule(s, "wall=5%")?;
    match figure_of(name) {
        Some(fig) => Ok(Rule {
            figure: fig.key,
            limit,
        }),
        None => Err(format!(
            "unknown figure {name:?}; the figures are: {}",
            names()
        )),
    }
}

/// Checks that no figure is gated twice (`wall=5% wall_ns=3%`).
pub fn check_rules(rules: &[Rule]) -> Result<(), String> {
    for (i, r) in rules.iter().enumerate() {
        if rules.iter().skip(i + 1).any(|o| o.figure == r.figure) {
            return Err(format!(
                "--fail-on names {} twice; give one limit per figure",
                r.figure
            ));
        }
    }
    Ok(())
}

fn label(key: &str) -> &'static str {
    FIGURES
        .iter()
        .find(|f| f.key == key)
        .map_or("figure", |f| f.label)
}

/// Why a figure has no comparison: every run's reason, when they give one.
fn unmeasured(c: &CommandResult, reference: &CommandResult, key: &str) -> String {
    let io = key.starts_with("storage_") || key.ends_with("_call_bytes");
    let why = [c, reference]
        .iter()
        .flat_map(|c| c.runs.iter())
        .find_map(|r| r.io_unavailable.clone());
    match (io, why) {
        (true, Some(why)) => format!("not measured: {why}"),
        _ => "not measured in every run".into(),
    }
}

/// One figure of command `i` against its reference.
fn judge(
    r: &CompareReport,
    i: usize,
    c: &CommandResult,
    reference: usize,
    rule: &Rule,
) -> GateResult {
    let mut result = GateResult {
        command: i,
        name: c.name.clone(),
        reference,
        figure: rule.figure,
        limit: rule.limit,
        ratio: None,
        ratio_low: None,
        ratio_high: None,
        p_adjusted: None,
        outcome: Outcome::Inconclusive,
        runs_needed: None,
        reason: None,
        note: None,
        exact: false,
        fastest: None,
    };
    let Some(ref_cmd) = r.commands.get(reference) else {
        return result;
    };
    let Some(v) = c.versus(rule.figure) else {
        result.reason = Some(Reason::NotMeasured);
        result.note = Some(unmeasured(c, ref_cmd, rule.figure));
        return result;
    };
    let median = |c: &CommandResult| c.summary_of(rule.figure).map(|s| s.median);
    let interval = match (v.ratio, v.ratio_low, v.ratio_high) {
        (Some(x), Some(lo), Some(hi)) => Some((x, lo, hi)),
        _ => None,
    };
    let evidence = Evidence {
        interval,
        significant_worse: significant_worse(v),
        too_few_runs: v.verdict == Verdict::TooFewRuns,
        higher_is_better: false,
        both_zero: median(c) == Some(0.0) && median(ref_cmd) == Some(0.0),
    };
    // 0 then and 0 now: no change.
    let zero = evidence.both_zero.then_some(1.0);
    result.ratio = v.ratio.or(zero);
    result.ratio_low = v.ratio_low.or(zero);
    result.ratio_high = v.ratio_high.or(zero);
    result.p_adjusted = Some(v.p_adjusted);
    result.exact = v.test == super::report::EXACT_TEST;
    result.outcome = gate::judge(&evidence, rule.limit);
    if let Some(note) = other_source(r, ref_cmd, rule) {
        result.outcome = Outcome::Inconclusive;
        result.reason = Some(Reason::CountSource);
        result.note = Some(note);
        return result;
    }
    let excused = another_time(r, c, ref_cmd, rule, result.outcome);
    if (excused.is_some() || result.outcome != Outcome::Regression)
        && let Some(fastest) = fastest_runs(r, c, ref_cmd, rule)
    {
        result.fastest = Some(FastestRuns {
            quantile: crate::speed::FASTEST,
            machine_slower: fastest.machine,
            typical_ratio: result.ratio,
            typical_low: result.ratio_low,
            typical_high: result.ratio_high,
        });
        result.ratio = Some(fastest.ratio);
        result.ratio_low = Some(fastest.low);
        result.ratio_high = Some(fastest.high);
        result.outcome = Outcome::Regression;
        return result;
    }
    if let Some((reason, note)) = excused {
        result.outcome = Outcome::Inconclusive;
        result.reason = Some(reason);
        result.note = Some(note);
        return result;
    }
    if result.outcome == Outcome::Inconclusive && result.exact {
        result.reason = Some(Reason::AtLimit);
        result.note =
            Some("the counts' range lies across the limit: more runs do not move a count".into());
    } else if result.outcome == Outcome::Inconclusive {
        explain_undecided(&mut result, v, interval, c, ref_cmd);
    }
    result
}

/// Why a counted figure is not compared with a baseline's: counted by
/// another source (see [`crate::count::Source::differs_from`]). `None`
/// for other figures, without a baseline, or when the sources agree.
fn other_source(r: &CompareReport, ref_cmd: &CommandResult, rule: &Rule) -> Option<String> {
    let counted = FIGURES.iter().any(|f| f.key == rule.figure && f.counted);
    if !counted || !ref_cmd.from_baseline {
        return None;
    }
    let now = r.count.as_ref().map(|c| &c.source)?;
    let then = r.baseline.as_ref()?.count_source.as_ref()?;
    now.differs_from(then)
        .map(|why| format!("{why}: counts of two sources are not compared"))
}

/// Why a time measured against a stored baseline is not the command's
/// alone: the machine ran at another speed (its speed probes), or did far
/// more other work (a regression may be the machine's) or far less (a
/// regression may hide). `None` when the outcome stands.
fn another_time(
    r: &CompareReport,
    c: &CommandResult,
    ref_cmd: &CommandResult,
    rule: &Rule,
    outcome: Outcome,
) -> Option<(Reason, String)> {
    let figure = rule.figure;
    let time = FIGURES
        .iter()
        .any(|f| f.key == figure && f.unit.base() == crate::report::unit::Unit::Seconds);
    if !time || !ref_cmd.from_baseline {
        return None;
    }
    let interval = c
        .versus(figure)
        .and_then(|v| Some((v.ratio_low?, v.ratio_high?)));
    if let Some(speed) = r.speed.as_ref() {
        // Judged in proportion: what the machine's speed cannot account
        // for stays decided (and then other work is judged likewise).
        match (speed.allowance, interval) {
            (Some(a), Some((lo, hi))) => {
                let decided = match outcome {
                    Outcome::Regression => a.stands(true, lo, hi, rule.limit),
                    Outcome::Pass => a.stands(false, lo, hi, rule.limit),
                    Outcome::Inconclusive => true,
                };
                if !decided {
                    return Some((Reason::MachineSpeed, a.words()));
                }
            }
            _ if speed.not_comparable && outcome != Outcome::Inconclusive => {
                let ratio = speed.versus_baseline.unwrap_or(1.0);
                let why = speed
                    .unchecked
                    .clone()
                    .unwrap_or_else(|| machine_speed(ratio));
                return Some((Reason::MachineSpeed, why));
            }
            _ => {}
        }
    }
    other_work_excuse(r, c, ref_cmd, rule, outcome, interval)
}

/// Why a time's outcome against a stored baseline may be the machine's
/// other work, not the command's: far more of it now (a regression) or
/// far less (a pass), unless the command's own work moved beyond the
/// limit too. `None` when the outcome stands.
fn other_work_excuse(
    r: &CompareReport,
    c: &CommandResult,
    ref_cmd: &CommandResult,
    rule: &Rule,
    outcome: Outcome,
    interval: Option<(f64, f64)>,
) -> Option<(Reason, String)> {
    let figure = rule.figure;
    let waited = change_waited(c, ref_cmd, rule);
    let limit = if waited.is_some() {
        super::report::OTHER_WORK_DIFFERS_WAITING
    } else {
        super::report::OTHER_WORK_DIFFERS
    };
    let (now, then) = other_work(r)?;
    // What other work cannot do is add to the command's own work: a cpu
    // time beyond the limit, or a wall time beyond it whose cpu time lies
    // beyond it too, is the command's, whatever the load (a machine that
    // ran the work slower is the speed probes' to judge, above). A pass
    // is not: less waiting on an idler machine can hide a regression that
    // waits.
    let own_work = matches!(figure, "cpu_us" | "user_us" | "system_us");
    let cpu = match figure {
        "wall_ns" => c.versus("cpu_us").and_then(|v| v.ratio_low),
        _ if own_work => interval.map(|(lo, _)| lo),
        _ => None,
    };
    let beyond = match (cpu, interval) {
        (Some(cpu_lo), Some((lo, _))) => cpu_lo > 1.0 + rule.limit && lo > 1.0 + rule.limit,
        _ => false,
    };
    let shaken = match outcome {
        Outcome::Regression => now > then + limit && !beyond,
        Outcome::Pass => now < then - limit,
        Outcome::Inconclusive => false,
    };
    shaken.then(|| {
        let on_cpu = waited
            .map(|(share, share_then)| {
                format!(
                    "; the command was on a CPU {:.0}% of its wall time, {:.0}% in the baseline's runs",
                    share * 100.0,
                    share_then * 100.0
                )
            })
            .unwrap_or_default();
        (
            Reason::OtherWork,
            format!(
                "other work on the machine took {now:.0}% of a CPU during these runs and \
                 {then:.0}% during the baseline's: a change of this size may be the machine's\
                 {on_cpu}"
            ),
        )
    })
}

/// A time's fastest runs against a stored baseline's: the ratio of their
/// [`crate::speed::FASTEST`] quantiles, its interval, and the most the
/// machine may have slowed by its speed probes.
struct Fastest {
    ratio: f64,
    low: f64,
    high: f64,
    machine: f64,
}

/// A regression of a time against a stored baseline decided by its
/// fastest runs, where its typical runs did not decide one: `Some` when
/// the interval of the ratio of the two sides' [`crate::speed::FASTEST`]
/// quantiles, divided by the most the speed probes say the machine
/// slowed (the ratio of their lower quartiles,
/// [`crate::speed::FAST_STRETCH`], or of their medians, at least 1),
/// still lies beyond the limit, and other work on the machine does not
/// excuse it ([`other_work_excuse`]). Only where the probes' fastest
/// then and now agree within [`crate::speed::FASTEST_AGREE`], and each
/// side's interval is narrower than [`crate::speed::FASTEST_WITHIN`]: the
/// machine had its fast stretches on both sides, and each side's fastest
/// runs lie within one of its modes, not between them.
///
/// Why: on a shared machine a command's time can move between modes as a
/// whole (on the 2-core VM, a 10 ms loop ran twice as slow in stretches,
/// and the share of its runs in the slow mode moved its median by up to
/// 1.9× between baselines saved a minute apart), while its fastest runs,
/// those the machine slowed least, moved by ±6%. A change of the command's
/// own work moves its fastest runs too; the machine's modes do not, so
/// long as both sides had some runs in the fast mode, which the probes,
/// made among the runs, see in their own fastest. Only a regression is
/// decided so: a change in the slower runs alone is not seen in the
/// fastest, so they never pass a time. Each quantile's interval is
/// distribution-free ([`crate::stats::quantile_interval`]), at the
/// comparison's interval level shared by the two (Bonferroni); with fewer
/// runs than bound them (some 136 a side for one command at the usual
/// level), `None`.
fn fastest_runs(
    r: &CompareReport,
    c: &CommandResult,
    ref_cmd: &CommandResult,
    rule: &Rule,
) -> Option<Fastest> {
    let fig = FIGURES
        .iter()
        .find(|f| f.key == rule.figure && f.unit.base() == crate::report::unit::Unit::Seconds)?;
    if !ref_cmd.from_baseline {
        return None;
    }
    let allowance = r.speed.as_ref()?.allowance?;
    let sorted = |c: &CommandResult| {
        let mut v = c.values(fig)?;
        v.sort_by(f64::total_cmp);
        Some(v)
    };
    let (now, then) = (sorted(c)?, sorted(ref_cmd)?);
    let each = fastest_level(r.interval_level);
    let q = crate::speed::FASTEST;
    let (now_lo, now_hi) = crate::stats::quantile_interval(&now, q, each)?;
    let (then_lo, then_hi) = crate::stats::quantile_interval(&then, q, each)?;
    let point = crate::stats::quantile_sorted(&now, q)? / crate::stats::quantile_sorted(&then, q)?;
    let within_a_mode =
        |lo: f64, hi: f64| lo > 0.0 && hi / lo <= 1.0 + crate::speed::FASTEST_WITHIN;
    if !(within_a_mode(now_lo, now_hi) && within_a_mode(then_lo, then_hi) && point.is_finite()) {
        return None;
    }
    let fastest_probes = allowance.fastest_ratio?;
    if (fastest_probes - 1.0).abs() > crate::speed::FASTEST_AGREE {
        return None;
    }
    let machine = [allowance.ratio, allowance.fast_ratio?]
        .into_iter()
        .fold(1.0_f64, f64::max);
    let (low, high) = (now_lo / then_hi, now_hi / then_lo);
    let beyond = low / machine > 1.0 + rule.limit;
    (beyond
        && other_work_excuse(r, c, ref_cmd, rule, Outcome::Regression, Some((low, high))).is_none())
    .then_some(Fastest {
        ratio: point,
        low,
        high,
        machine,
    })
}

/// When the wall time of `c` moved from its reference's by the rule's
/// limit or more while its cpu time moved by less than half as much
/// (medians): the change was in time spent waiting (for a CPU, among
/// others), not working. Then the command's cpu time over its wall time,
/// now and in the reference's runs; else `None`.
fn change_waited(c: &CommandResult, reference: &CommandResult, rule: &Rule) -> Option<(f64, f64)> {
    if rule.figure != "wall_ns" {
        return None;
    }
    let median = |c: &CommandResult, key: &str| c.summary_of(key).map(|s| s.median);
    let wall = median(c, "wall_ns")? / 1000.0;
    let wall_then = median(reference, "wall_ns")? / 1000.0;
    let cpu = median(c, "cpu_us")?;
    let cpu_then = median(reference, "cpu_us")?;
    let moved = wall - wall_then;
    (wall > 0.0
        && wall_then > 0.0
        && moved.abs() >= rule.limit * wall_then
        && (cpu - cpu_then).abs() < moved.abs() / 2.0)
        .then(|| (cpu / wall, cpu_then / wall_then))
}

/// What an undecided figure awaits: the runs that would decide it, or why
/// no number of runs can.
fn explain_undecided(
    result: &mut GateResult,
    v: &FigureComparison,
    interval: Option<(f64, f64, f64)>,
    c: &CommandResult,
    ref_cmd: &CommandResult,
) {
    if v.verdict == Verdict::TooFewRuns {
        result.runs_needed = v.runs_needed;
        result.reason = Some(Reason::TooFewRuns);
        result.note = Some("too few runs to show a difference at all".into());
        return;
    }
    match gate::runs_to_decide(
        interval,
        gate::bound(result.limit, false),
        c.runs.len(),
        ref_cmd.runs.len(),
        ref_cmd.from_baseline,
    ) {
        Ok(n) => result.runs_needed = Some(n),
        Err(Undecidable::AtLimit) => {
            result.reason = Some(Reason::AtLimit);
            result.note = Some("the ratio sits on the limit".into());
        }
        Err(Undecidable::BaselineTooSmall) => {
            result.reason = Some(Reason::BaselineTooSmall);
            result.note = Some(format!(
                "the baseline's {} runs are too few to decide it however many run now: save a \
                 baseline with more runs",
                ref_cmd.runs.len()
            ));
        }
        Err(Undecidable::NoInterval) => {
            result.reason = Some(Reason::ZeroReference);
            result.note =
                Some("the reference's median is 0 and the difference is not significant".into());
        }
    }
}

/// `this machine ran 25% slower than when the baseline was saved (speed
/// probe)`.
fn machine_speed(ratio: f64) -> String {
    format!(
        "this machine ran {} than when the baseline was saved (speed probe)",
        crate::speed::slower_or_faster(ratio)
    )
}

/// Other work on the machine during these runs and during the baseline's,
/// percent of one CPU.
fn other_work(r: &CompareReport) -> Option<(f64, f64)> {
    Some((
        r.other_cpu_percent?,
        r.baseline.as_ref()?.other_cpu_percent?,
    ))
}

/// Whether the figure's interval lies wholly above 1 (or, without a
/// ratio, the comparison calls it higher).
fn significant_worse(v: &FigureComparison) -> bool {
    v.verdict == Verdict::Higher || v.ratio_low.is_some_and(|lo| lo > 1.0)
}

/// Without `--runs`, at a checkpoint: the rounds that would decide every
/// gated figure not yet decided, from the runs so far (`pairs`: each
/// figure's limit, this command's values, its reference's), the intervals
/// at the level a family of `family` tests needs (see
/// [`gate::runs_to_decide`]). 0 when every figure is decided or none can
/// be by more runs; the caller caps it by the time budget.
pub fn rounds_to_decide(
    pairs: &[(f64, &[f64], &[f64])],
    family: usize,
    alpha: f64,
    reference_fixed: bool,
) -> u32 {
    let each = alpha / family.max(1) as f64;
    let mut needed = 0u32;
    for &(limit, now, reference) in pairs {
        let Some(e) = crate::stats::ratio_shift(now, reference, each) else {
            continue;
        };
        if e.unbounded() {
            needed = needed.max(crate::stats::runs_to_reach(each));
            continue;
        }
        let Some((ratio, low, high)) = e.ratio else {
            continue;
        };
        let b = gate::bound(limit, false);
        if high <= b || low > b {
            continue;
        }
        if let Ok(n) = gate::runs_to_decide(
            Some((ratio, low, high)),
            b,
            now.len(),
            reference.len(),
            reference_fixed,
        ) {
            needed = needed.max(n);
        }
    }
    needed
}

/// Without `--runs`, at a checkpoint of a gate against a stored baseline:
/// the rounds a time's fastest runs need to be compared (`fastest_runs`):
/// as many as the baseline's, when they are enough for the interval of
/// their [`crate::speed::FASTEST`] quantile at the family's level and the typical
/// runs so far (`now` against `then`) are not already a regression that
/// the machine's speed as probed so far (`allowance`) cannot account for;
/// without an allowance (too few probes yet to judge the speed) none is.
/// 0 for other figures, or when nothing more is needed; the caller caps it
/// by the time budget and `--max-runs`.
pub fn fastest_rounds(
    fig: &Figure,
    limit: f64,
    (now, then): (&[f64], &[f64]),
    allowance: Option<crate::speed::Allowance>,
    (family, alpha): (usize, f64),
) -> u32 {
    if fig.unit.base() != crate::report::unit::Unit::Seconds {
        return 0;
    }
    let fewest = fastest_fewest(family, alpha) as usize;
    if fewest == 0 || then.len() < fewest || now.len() >= then.len() {
        return 0;
    }
    let regression = crate::stats::ratio_shift(now, then, alpha / family.max(1) as f64)
        .and_then(|e| e.ratio)
        .is_some_and(|(_, low, high)| {
            low > gate::bound(limit, false)
                && allowance.is_some_and(|a| a.stands(true, low, high, limit))
        });
    if regression {
        0
    } else {
        // As many as the baseline's: the quantile's interval narrows with
        // the runs, and the fewest leave it wide (with 129 runs now against
        // 300, the 20% longer loop's 1.14× read [1.09, …], not beyond).
        u32::try_from(then.len()).unwrap_or(u32::MAX)
    }
}

/// The fewest runs a side whose [`crate::speed::FASTEST`] quantile has an
/// interval at the level of a family of `family` tests at `alpha`, shared
/// by the two sides (as `fastest_runs` takes it); 0 if none.
pub fn fastest_fewest(family: usize, alpha: f64) -> u32 {
    let level = fastest_level(1.0 - alpha / family.max(1) as f64);
    crate::stats::quantile_interval_fewest(crate::speed::FASTEST, level)
        .and_then(|n| u32::try_from(n).ok())
        .unwrap_or(0)
}

/// The level of each side's quantile interval when the two share the
/// comparison's `interval_level` (Bonferroni).
fn fastest_level(interval_level: f64) -> f64 {
    1.0 - (1.0 - interval_level) / 2.0
}

/// The gate of `rules` over every command that has a reference.
pub fn evaluate(r: &CompareReport, rules: &[Rule], strict: bool) -> Gate {
    let mut results = Vec::new();
    for (i, c) in r.commands.iter().enumerate() {
        let Some(reference) = c.compared_with else {
            continue;
        };
        for rule in rules {
            results.push(judge(r, i, c, reference, rule));
        }
    }
    let worst = results.iter().map(|g| g.outcome).max();
    Gate {
        rules: rules.to_vec(),
        strict,
        outcome: worst.unwrap_or(Outcome::Pass),
        exit_status: gate::exit_status(worst, strict),
        headline: headline(&results) + &under_load(r, &results) + &count_hint(r, &results),
        results,
    }
}

/// When a time is left undecided because the machine's speed moved and
/// nothing was counted: `; counted work decides where time cannot: …`,
/// once; else nothing.
fn count_hint(r: &CompareReport, results: &[GateResult]) -> String {
    let speed = results
        .iter()
        .any(|g| g.outcome == Outcome::Inconclusive && g.reason == Some(Reason::MachineSpeed));
    if speed && r.count.is_none() {
        "; counted work decides where time cannot (--count --fail-on instructions=1%, \
         docs/count.md)"
            .into()
    } else {
        String::new()
    }
}

/// When wall time is left undecided (other load spreads it) but cpu time
/// moved beyond doubt: `; cpu time +17% [+15, +19]: gate on cpu= to judge
/// under load`, once; else nothing.
fn under_load(r: &CompareReport, results: &[GateResult]) -> String {
    let undecided_wall = |g: &&GateResult| {
        g.figure == "wall_ns"
            && g.outcome == Outcome::Inconclusive
            && g.reason.is_none_or(|why| why == Reason::OtherWork)
    };
    let gated_cpu = results.iter().any(|g| g.figure == "cpu_us");
    results
        .iter()
        .filter(undecided_wall)
        .filter(|_| !gated_cpu)
        .find_map(|g| {
            let v = r.commands.get(g.command)?.versus("cpu_us")?;
            if !v.verdict.differs() {
                return None;
            }
            let (x, lo, hi) = (v.ratio?, v.ratio_low?, v.ratio_high?);
            Some(format!(
                "; cpu time {}: gate on cpu= to judge under load",
                interval_text(x, Some((lo, hi)))
            ))
        })
        .unwrap_or_default()
}

/// `1.20× [1.18, 1.22]`, or what stands for it: ratios in one unit, as
/// every other ratio of a comparison is written.
pub fn change_text(g: &GateResult) -> String {
    match (g.ratio, g.ratio_low, g.ratio_high) {
        (Some(x), Some(lo), Some(hi)) if lo != hi => interval_text(x, Some((lo, hi))),
        (Some(x), ..) => interval_text(x, None),
        (None, ..) if g.p_adjusted.is_some() => "from 0".into(),
        (None, ..) => "not measured".into(),
    }
}

/// Why a result came out as it did, in a few words: `beyond 1.05×,
/// p<0.001`, `within 1.05×`, `across 1.05×: about 80 runs of each would
/// decide`.
pub fn phrase(g: &GateResult) -> String {
    phrase_noting(g, true)
}

/// [`phrase`], with the result's note (why it is inconclusive) or without
/// it, where it was said already.
fn phrase_noting(g: &GateResult, with_note: bool) -> String {
    let limit = limit_text(g.limit);
    let note = g.note.as_ref().filter(|_| with_note);
    match g.outcome {
        Outcome::Regression => match (g.p_adjusted, &g.fastest) {
            (_, Some(f)) => fastest_text(f, &limit),
            _ if g.exact => format!("beyond {limit}, exact"),
            (Some(p), None) => format!("beyond {limit}, {}", p_text(p)),
            (None, None) => format!("beyond {limit}"),
        },
        Outcome::Pass => format!("within {limit}"),
        Outcome::Inconclusive => {
            let why = match (note, g.runs_needed) {
                (Some(note), Some(n)) => format!("{note}; {}", runs_would_decide(n)),
                (None, Some(n)) => runs_would_decide(n),
                (Some(note), None) => note.clone(),
                (None, None) => String::new(),
            };
            // Inconclusive for another reason (the machine's speed, other
            // work) with an interval wholly beyond or within the limit:
            // the words say where the interval lies, as it is printed.
            let place = match (g.ratio_low, g.ratio_high) {
                (Some(lo), Some(hi)) => gate::place(lo, hi, g.limit, false),
                _ => "across",
            };
            match (g.ratio_low.is_some(), why.is_empty()) {
                (true, true) => format!("{place} {limit}"),
                (true, false) => format!("{place} {limit}: {why}"),
                (false, _) => why,
            }
        }
    }
}

/// `beyond 1.05× in its fastest 5% of runs, more than the machine's
/// speed accounts for (up to 1.02×); its typical runs 0.79× [0.71,
/// 0.90]`: a regression its fastest runs decided.
fn fastest_text(f: &FastestRuns, limit: &str) -> String {
    let typical = match (f.typical_ratio, f.typical_low, f.typical_high) {
        (Some(x), Some(lo), Some(hi)) => interval_text(x, Some((lo, hi))),
        (Some(x), ..) => interval_text(x, None),
        _ => "not compared".into(),
    };
    format!(
        "beyond {limit} in its fastest {} of runs, more than the machine's speed accounts for \
         (up to {}, speed probes); its typical runs {typical}",
        super::prose::percent(f.quantile),
        interval_text(f.machine_slower, None)
    )
}

pub(super) use super::prose::about_runs;

/// The outcome in a table's few words: `regression (> 1.05×, p<0.001)`,
/// `pass (≤ 1.05×)`, `inconclusive (~80 runs)`.
pub fn outcome_text(g: &GateResult) -> String {
    let limit = limit_text(g.limit);
    let why = match g.outcome {
        Outcome::Regression => match (g.p_adjusted, &g.fastest) {
            (_, Some(f)) => format!(
                "> {limit} in the fastest {}",
                super::prose::percent(f.quantile)
            ),
            _ if g.exact => format!("> {limit}, exact"),
            (Some(p), None) => format!("> {limit}, {}", p_text(p)),
            (None, None) => format!("> {limit}"),
        },
        Outcome::Pass => format!("≤ {limit}"),
        Outcome::Inconclusive => match (g.reason, g.runs_needed) {
            (Some(Reason::TooFewRuns), Some(n)) => format!("too few runs, need {n}"),
            (Some(Reason::NotMeasured), _) => "not measured".into(),
            (Some(Reason::AtLimit), _) => format!("at {limit}"),
            (Some(Reason::BaselineTooSmall), _) => "baseline too small".into(),
            (Some(Reason::ZeroReference), _) => "reference 0".into(),
            (Some(Reason::OtherWork), _) => "machine busier or idler".into(),
            (Some(Reason::MachineSpeed), _) => "machine at another speed".into(),
            (Some(Reason::CountSource), _) => "counted by another source".into(),
            (_, Some(n)) => format!("across {limit}, {}", about_runs(n)),
            (_, None) => format!("across {limit}"),
        },
    };
    format!("{} ({why})", g.outcome.name())
}

/// The parts of the gate's headline, worst first, each with its
/// [`phrase`]: a note (why a result is inconclusive) is said once, and
/// the machine's speed, returned apart, goes before them all.
pub(super) fn headline_parts(
    results: &[GateResult],
) -> (Option<&String>, Vec<(&GateResult, String)>) {
    let mut ordered: Vec<&GateResult> = results.iter().collect();
    ordered.sort_by_key(|g| std::cmp::Reverse(g.outcome));
    let speed = results
        .iter()
        .find(|g| g.reason == Some(Reason::MachineSpeed))
        .and_then(|g| g.note.as_ref());
    let mut said: Vec<&String> = speed.into_iter().collect();
    let parts = ordered
        .into_iter()
        .map(|g| {
            let new = g.note.as_ref().is_some_and(|n| !said.contains(&n));
            if let (true, Some(n)) = (new, g.note.as_ref()) {
                said.push(n);
            }
            (g, phrase_noting(g, new))
        })
        .collect();
    (speed, parts)
}

/// `1 regression: `new` wall time 1.20× [1.18, 1.22] beyond 1.05×,
/// p<0.001; `new` peak memory 1.00× [0.99, 1.01] within 1.10×`. Each
/// reason once: the machine's speed first, where it left times
/// inconclusive, and a note said for one result is not said again.
fn headline(results: &[GateResult]) -> String {
    let summary = gate::outcome_counts(results.iter().map(|g| g.outcome));
    let (speed, ordered) = headline_parts(results);
    let parts: Vec<String> = ordered
        .iter()
        .map(|(g, phrase)| {
            format!(
                "`{}` {} {} {phrase}",
                crate::text::Foreign(&g.name),
                label(g.figure),
                change_text(g),
            )
        })
        .collect();
    if parts.is_empty() {
        return format!("{summary}: no command has a reference");
    }
    match speed {
        Some(note) => format!("inconclusive: {note}; {summary}: {}", parts.join("; ")),
        None => format!("{summary}: {}", parts.join("; ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: a figure left inconclusive by the machine's speed read
    /// `+94.7% [+50.7, +149.4] across +5%` (now `1.95× [1.51, 2.49]`), an interval wholly beyond the
    /// limit said to lie across it.
    #[test]
    fn an_inconclusive_figure_says_where_its_interval_lies() {
        let g = |lo: f64, hi: f64| GateResult {
            command: 0,
            name: "work".into(),
            reference: 1,
            figure: "wall_ns",
            limit: 0.05,
            ratio: Some((lo + hi) / 2.0),
            ratio_low: Some(lo),
            ratio_high: Some(hi),
            p_adjusted: Some(0.001),
            outcome: Outcome::Inconclusive,
            runs_needed: None,
            reason: Some(Reason::MachineSpeed),
            note: Some("this machine ran 80% faster".into()),
            exact: false,
            fastest: None,
        };
        assert_eq!(
            phrase(&g(1.507, 2.494)),
            "beyond 1.05×: this machine ran 80% faster"
        );
        assert_eq!(
            phrase(&g(0.9, 1.04)),
            "within 1.05×: this machine ran 80% faster"
        );
        assert_eq!(
            phrase(&g(0.98, 1.2)),
            "across 1.05×: this machine ran 80% faster"
        );
    }

    #[test]
    fn every_figure_has_names_and_no_name_is_taken_twice() {
        let mut seen: Vec<&str> = Vec::new();
        for fig in FIGURES {
            let (key, aliases) = NAMES
                .iter()
                .find(|(k, _)| *k == fig.key)
                .unwrap_or_else(|| panic!("{} has no line in NAMES", fig.key));
            assert_eq!(figure_of(key).map(|f| f.key), Some(fig.key));
            for name in std::iter::once(key).chain(aliases.iter()) {
                assert!(!seen.contains(name), "{name} is taken twice");
                seen.push(name);
            }
        }
        assert_eq!(NAMES.len(), FIGURES.len());
    }

    /// `n` runs of a command taking `wall_ns` (±1%), measured now or
    /// read from a baseline.
    fn runs(name: &str, wall_ns: u64, n: u64, from_baseline: bool) -> CommandResult {
        use crate::compare::plan::Instance;
        use crate::run::report::RunRecord;
        let mut c = CommandResult::new(
            &Instance {
                name: name.into(),
                command: name.into(),
                argv: Vec::new(),
                parameters: Vec::new(),
            },
            n as usize,
        );
        for i in 0..n {
            c.runs.push(RunRecord {
                wall_ns: wall_ns + wall_ns * (i % 7) / 300,
                user_us: 1000,
                system_us: 100,
                max_rss_bytes: 1 << 20,
                minor_faults: 10,
                major_faults: 0,
                voluntary_switches: 1,
                involuntary_switches: 0,
                block_input_ops: 0,
                block_output_ops: 0,
                io: None,
                io_source: None,
                io_unavailable: Some("test".into()),
                counters: None,
                count: None,
                ..RunRecord::bare(0)
            });
        }
        c.from_baseline = from_baseline;
        c
    }

    /// `n` runs of `name` now and `n` from a baseline, of wall times
    /// `(now, then)`: now on a CPU for about `cpu_us`, then for 9 ms.
    fn working(
        name: &str,
        (wall_now, wall_then): (u64, u64),
        n: u64,
        cpu_us: u64,
    ) -> (CommandResult, CommandResult) {
        let mut now = runs(name, wall_now, n, false);
        let mut then = runs(name, wall_then, n, true);
        for (c, cpu) in [(&mut now, cpu_us), (&mut then, 9_000)] {
            for (i, run) in c.runs.iter_mut().enumerate() {
                run.user_us = cpu + (i % 5) as u64;
            }
        }
        (now, then)
    }

    /// A comparison against a stored baseline saved while the machine did
    /// `other_cpu_percent` of other work, with those speed probes.
    fn against_baseline(
        other_cpu_percent: Option<f64>,
        speed_probe_ns: Vec<u64>,
    ) -> crate::compare::plan::Config {
        use crate::compare::plan::{Baseline, BaselineUse, Config, Fingerprint};
        Config {
            alpha: 0.05,
            threshold: 0.01,
            seed: 9,
            baseline: Some(Baseline {
                commands: Vec::new(),
                about: BaselineUse {
                    path: "b.json".into(),
                    saved_at: None,
                    tally_version: None,
                    machine: Fingerprint::default(),
                    other_cpu_percent,
                    speed_probe_ns,
                    probes_of_other_work: false,
                    count_source: None,
                    differences: Vec::new(),
                },
            }),
            ..Config::default()
        }
    }

    /// Against a stored baseline, a time that regressed while the machine
    /// did far more other work than for the baseline is not called a
    /// regression; a pass while it did far less is not called a pass.
    #[test]
    fn a_change_of_the_machines_other_work_makes_times_inconclusive() {
        let cfg = against_baseline(Some(30.0), Vec::new());
        let rules = [
            parse_rule("wall=5%").unwrap(),
            parse_rule("maxrss=5%").unwrap(),
        ];
        let outcome = |scale: u64, other_now: f64| {
            let commands = vec![
                runs("app", 10_000_000 * scale / 100, 30, false),
                runs("app", 10_000_000, 30, true),
            ];
            let mut r = CompareReport::build(&cfg, commands, None);
            r.other_cpu_percent = Some(other_now);
            let g = evaluate(&r, &rules, false);
            (
                g.results[0].outcome,
                g.results[0].reason,
                g.results[1].outcome,
            )
        };
        // As busy as then: a 20% slower command regresses.
        assert_eq!(
            outcome(120, 35.0),
            (Outcome::Regression, None, Outcome::Pass)
        );
        // Far busier now: the same is inconclusive (its cpu time did not
        // move: the change may be waiting); memory still passes.
        assert_eq!(
            outcome(120, 90.0),
            (
                Outcome::Inconclusive,
                Some(Reason::OtherWork),
                Outcome::Pass
            )
        );
        // Far idler now: a pass of the time is not trusted either.
        assert_eq!(outcome(100, 0.0).0, Outcome::Inconclusive);
        assert_eq!(outcome(100, 25.0).0, Outcome::Pass);
    }

    /// Regression: gzip of a file doubled, against its stored baseline,
    /// wall time 2.64× [2.35, 2.78] and cpu time 2.03× [1.98, 2.07], was
    /// "inconclusive: other work on the machine took 146% of a CPU during
    /// these runs and 134% during the baseline's": no load adds to the
    /// command's own cpu time, so a change in both stands.
    #[test]
    fn twice_the_work_was_excused_by_other_work_that_cannot_do_it() {
        let cfg = against_baseline(Some(30.0), Vec::new());
        let rules = [parse_rule("wall=5%").unwrap()];
        let outcome = |cpu_us: u64| {
            let (now, then) = working("gzip", (26_000_000, 10_000_000), 30, cpu_us);
            let mut r = CompareReport::build(&cfg, vec![now, then], None);
            r.other_cpu_percent = Some(90.0);
            let g = evaluate(&r, &rules, false);
            (g.results[0].outcome, g.results[0].reason)
        };
        assert_eq!(outcome(18_000), (Outcome::Regression, None));
        // Its cpu time unchanged, the wall time may be the load's.
        assert_eq!(
            outcome(9_000),
            (Outcome::Inconclusive, Some(Reason::OtherWork))
        );
    }

    /// Regression: gated on cpu time (`--fail-on cpu=5%`, the figure the
    /// gate's own notes advise under load), four times the work, cpu time
    /// `3.82× [3.72, 3.91]`, was "inconclusive: other work on the machine
    /// took 72% of a CPU during these runs and 28% during the baseline's:
    /// a change of this size may be the machine's", exit 0: the rule for
    /// wall time excused a change of the command's own work of any size.
    /// A pass still is not trusted when the machine was far idler.
    #[test]
    fn four_times_the_cpu_time_was_excused_by_other_work_that_cannot_do_it() {
        let cfg = against_baseline(Some(28.0), Vec::new());
        let outcome = |rule: &str, cpu_us: u64, other_now: f64| {
            let (now, then) = working("loop", (40_000_000, 10_000_000), 20, cpu_us);
            let mut r = CompareReport::build(&cfg, vec![now, then], None);
            r.other_cpu_percent = Some(other_now);
            let g = evaluate(&r, &[parse_rule(rule).unwrap()], false);
            (g.results[0].outcome, g.results[0].reason)
        };
        for rule in ["cpu=5%", "user=5%"] {
            assert_eq!(
                outcome(rule, 36_000, 72.0),
                (Outcome::Regression, None),
                "{rule}"
            );
            assert_eq!(outcome(rule, 9_000, 72.0), (Outcome::Pass, None), "{rule}");
            // Far idler now: a pass of the cpu time is not trusted.
            assert_eq!(
                outcome(rule, 9_000, 0.0),
                (Outcome::Inconclusive, Some(Reason::OtherWork)),
                "{rule}"
            );
        }
        // A wait is not the command's own work: other work can make it.
        use crate::run::report::Why;
        let waited = |wait_ns: u64, from_baseline: bool| {
            let mut c = runs("loop", 10_000_000, 20, from_baseline);
            for (i, run) in c.runs.iter_mut().enumerate() {
                let w = Some(wait_ns + i as u64);
                run.why = Some(Why::from_stored(run.wall_ns, w, None, None, None));
            }
            c
        };
        let (now, then) = (waited(4_000_000, false), waited(1_000_000, true));
        let mut r = CompareReport::build(&cfg, vec![now, then], None);
        r.other_cpu_percent = Some(72.0);
        let g = evaluate(&r, &[parse_rule("cpu_wait=5%").unwrap()], false);
        assert_eq!(
            (g.results[0].outcome, g.results[0].reason),
            (Outcome::Inconclusive, Some(Reason::OtherWork))
        );
    }

    /// Regression: a busy loop sharing a 10 ms loop's CPU while it was
    /// gated against a baseline saved without it stretched its wall time
    /// by 60%, cpu time unchanged; other work measured 32% of a CPU
    /// against 15% then, under the 20 points that make times
    /// inconclusive, and the gate called the unchanged loop a regression.
    #[test]
    fn a_busy_loop_on_the_commands_cpu_made_a_wall_time_regression() {
        let cfg = against_baseline(Some(15.0), Vec::new());
        let rules = [parse_rule("wall=5%").unwrap()];
        let outcome = |cpu_grew: bool| {
            let mut now = runs("app", 16_000_000, 30, false);
            let mut then = runs("app", 10_000_000, 30, true);
            for (i, run) in now.runs.iter_mut().enumerate() {
                // cpu time spread a little, as measured ones do; grown by
                // 60% with the wall time, or not at all.
                run.user_us = (if cpu_grew { 14_400 } else { 9_000 }) + (i % 5) as u64;
            }
            for (i, run) in then.runs.iter_mut().enumerate() {
                run.user_us = 9_000 + (i % 5) as u64;
            }
            let mut r = CompareReport::build(&cfg, vec![now, then], None);
            r.other_cpu_percent = Some(32.0);
            let g = evaluate(&r, &rules, false);
            (
                (g.results[0].outcome, g.results[0].reason),
                g.results[0].note.clone().unwrap_or_default(),
            )
        };
        // The added time was waiting, and other work grew by 17 points.
        assert_eq!(
            outcome(false).0,
            (Outcome::Inconclusive, Some(Reason::OtherWork))
        );
        assert!(
            outcome(false).1.ends_with(
                "the command was on a CPU 56% of its wall time, 90% in the baseline's runs"
            ),
            "{}",
            outcome(false).1
        );
        // The command did 60% more work: the same machine load does not
        // excuse it.
        assert_eq!(outcome(true).0, (Outcome::Regression, None));
    }

    /// Regression: with two busy loops on the machine, a baseline saved
    /// while they took 138% of a CPU, and the unchanged loop gated while
    /// they took 124%: wall time −37%, cpu time unchanged, and the gate
    /// passed it on time, though a 20% slower loop would have passed too.
    #[test]
    fn a_baseline_slowed_by_other_work_passed_a_loop_that_only_waited_less() {
        let cfg = against_baseline(Some(138.0), Vec::new());
        let rules = [parse_rule("wall=5%").unwrap()];
        let outcome = |wall_now: u64, other_now: f64| {
            let mut now = runs("app", wall_now, 30, false);
            let mut then = runs("app", 16_000_000, 30, true);
            for c in [&mut now, &mut then] {
                for (i, run) in c.runs.iter_mut().enumerate() {
                    run.user_us = 9_000 + (i % 5) as u64;
                }
            }
            let mut r = CompareReport::build(&cfg, vec![now, then], None);
            r.other_cpu_percent = Some(other_now);
            let g = evaluate(&r, &rules, false);
            (g.results[0].outcome, g.results[0].reason)
        };
        assert_eq!(
            outcome(10_000_000, 124.0),
            (Outcome::Inconclusive, Some(Reason::OtherWork))
        );
        // As busy as then, the same change passes: the loads match.
        assert_eq!(outcome(10_000_000, 135.0), (Outcome::Pass, None));
        // A change within the limit is not the machine's to explain.
        assert_eq!(outcome(15_900_000, 124.0), (Outcome::Pass, None));
    }

    /// Against a baseline whose speed probes say the machine ran at
    /// another speed, a time is neither a regression (20% slower) nor a
    /// pass (unchanged): inconclusive, naming the speed, and `--strict`
    /// fails it; memory is still judged.
    #[test]
    fn a_machine_at_another_speed_makes_times_inconclusive_never_a_regression() {
        use crate::speed::Speed;
        let cfg = against_baseline(None, vec![1_000_000; 10]);
        let rules = [
            parse_rule("wall=5%").unwrap(),
            parse_rule("maxrss=5%").unwrap(),
        ];
        for (scale, comparable) in [(120, false), (100, false), (120, true)] {
            let commands = vec![
                runs("app", 10_000_000 * scale / 100, 30, false),
                runs("app", 10_000_000, 30, true),
            ];
            let mut r = CompareReport::build(&cfg, commands, None);
            let mut speed = Speed::of(&[1_300_000; 10]).unwrap();
            speed.versus_baseline = Some(1.3);
            speed.not_comparable = !comparable;
            r.speed = Some(speed);
            let g = evaluate(&r, &rules, true);
            if comparable {
                assert_eq!(g.results[0].outcome, Outcome::Regression, "{g:?}");
                continue;
            }
            assert_eq!(g.results[0].outcome, Outcome::Inconclusive, "{g:?}");
            assert_eq!(g.results[0].reason, Some(Reason::MachineSpeed));
            assert_eq!(g.results[1].outcome, Outcome::Pass, "{g:?}");
            assert_eq!(g.exit_status, crate::gate::EXIT_INCONCLUSIVE);
            assert!(
                g.headline.starts_with(
                    "inconclusive: this machine ran 30% slower than when the baseline was saved \
                     (speed probe)"
                ),
                "{}",
                g.headline
            );
            assert_eq!(evaluate(&r, &rules, false).exit_status, 0);
        }
    }

    /// `n` runs of a loop whose machine ran it in two modes, the slow one
    /// twice as long: `slow` of a hundred runs take `2 × fast_ns`, spread
    /// through the runs; its cpu time moves with its wall time, as the
    /// loop's did.
    fn two_modes(fast_ns: u64, slow: u64, n: u64, from_baseline: bool) -> CommandResult {
        let mut c = runs("work", fast_ns, n, from_baseline);
        for (i, run) in c.runs.iter_mut().enumerate() {
            if (i as u64 * 37) % 100 < slow {
                run.wall_ns *= 2;
            }
            run.user_us = run.wall_ns / 1000;
        }
        c
    }

    /// Regression: on the 2-core VM a 10 ms loop ran in two modes, and
    /// the share of its runs in the slow one moved its median between
    /// baselines by up to 1.9×; 20% more work against a baseline saved
    /// in the slow mode read `0.79× [0.71, 0.90]` and no gate could call
    /// it a regression. Its fastest runs decide it, with the probes'
    /// fastest: not when the machine was slower at its fastest too, nor
    /// under far more other work, nor from too few runs, and never a
    /// regression of the unchanged loop.
    #[test]
    fn more_work_hidden_by_the_machines_slow_mode_is_caught_by_the_fastest_runs() {
        use crate::speed::{Speed, allowance};
        let then_probes: Vec<u64> = (0..60).map(|i| 1_000_000 + (i % 6) * 40_000).collect();
        let cfg = against_baseline(Some(5.0), then_probes.clone());
        let rules = [parse_rule("wall=5%").unwrap()];
        let gate = |work: u64, slow_now: u64, n: u64, probes_scale: u64, other_now: f64| {
            let now = two_modes(8_000_000 * work / 100, slow_now, n, false);
            let then = two_modes(8_000_000, 80, n, true);
            let mut r = CompareReport::build(&cfg, vec![now, then], None);
            r.other_cpu_percent = Some(other_now);
            let probes: Vec<u64> = then_probes.iter().map(|p| p * probes_scale / 100).collect();
            let mut speed = Speed::of(&probes).unwrap();
            speed.allowance = allowance(&probes, &then_probes);
            r.speed = Some(speed);
            evaluate(&r, &rules, false)
        };
        let g = gate(120, 35, 300, 100, 5.0);
        let x = &g.results[0];
        assert_eq!(x.outcome, Outcome::Regression, "{g:?}");
        let f = x.fastest.expect("decided by the fastest runs");
        assert!(f.typical_ratio.unwrap() < 1.0, "{f:?}");
        assert!(
            x.ratio_low.unwrap() > 1.05 && x.ratio.unwrap() > 1.15,
            "{x:?}"
        );
        assert!(
            g.headline
                .contains("beyond 1.05× in its fastest 5% of runs, more than the machine's")
                && g.headline.contains("its typical runs 0."),
            "{}",
            g.headline
        );
        assert_eq!(outcome_text(x), "regression (> 1.05× in the fastest 5%)");
        // The unchanged loop in either mode: never a regression.
        for slow in [10, 35, 80, 95] {
            assert_ne!(
                gate(100, slow, 300, 100, 5.0).results[0].outcome,
                Outcome::Regression
            );
        }
        // A few fast runs now (3%): the fastest 5% lie between the modes,
        // their interval wide, and they are not compared.
        assert!(gate(100, 97, 300, 100, 5.0).results[0].fastest.is_none());
        // None now, the probes' fastest 1.25× slower with the machine (the
        // loop's 2×): its fast stretches are not alike, and nothing is
        // decided on the fastest runs.
        assert!(gate(100, 100, 300, 125, 5.0).results[0].fastest.is_none());
        // The machine 20% slower at its fastest: its fast stretches then
        // and now are not alike, and the fastest runs do not decide.
        let g = gate(120, 35, 300, 120, 5.0);
        assert!(g.results[0].fastest.is_none(), "{g:?}");
        // 4% slower: excused in proportion, and 20% more work is more.
        let g = gate(120, 35, 300, 104, 5.0);
        let f = g.results[0].fastest.expect("decided by the fastest runs");
        assert!((f.machine_slower - 1.04).abs() < 0.005, "{f:?}");
        // 4% more work is not, the machine 4% slower.
        assert!(gate(104, 35, 300, 104, 5.0).results[0].fastest.is_none());
        // Far more other work: not the fastest runs' to decide.
        let g = gate(120, 35, 300, 100, 90.0);
        assert!(g.results[0].fastest.is_none(), "{g:?}");
        // Too few runs to bound the fastest 5%.
        let g = gate(120, 35, 60, 100, 5.0);
        assert!(g.results[0].fastest.is_none(), "{g:?}");
        assert_ne!(g.results[0].outcome, Outcome::Regression);
    }

    /// Regression: a baseline whose probes held four of sixty in a rare
    /// faster state (8% below the rest) read as the machine 8% slower now
    /// at its fastest, which excused the 15% longer loop's fastest runs;
    /// the fast stretches are the probes' lower quartile, which the few
    /// do not move.
    #[test]
    fn a_few_fast_probes_in_the_baseline_excuse_no_more_work() {
        use crate::speed::{Speed, allowance};
        let mut then_probes: Vec<u64> = (0..60).map(|i| 1_000_000 + (i % 6) * 40_000).collect();
        for p in then_probes.iter_mut().take(4) {
            *p = 920_000;
        }
        let now_probes: Vec<u64> = (0..60).map(|i| 1_000_000 + (i % 6) * 40_000).collect();
        let cfg = against_baseline(Some(5.0), then_probes.clone());
        let now = two_modes(8_000_000 * 115 / 100, 35, 300, false);
        let then = two_modes(8_000_000, 80, 300, true);
        let mut r = CompareReport::build(&cfg, vec![now, then], None);
        r.other_cpu_percent = Some(5.0);
        let mut speed = Speed::of(&now_probes).unwrap();
        speed.allowance = allowance(&now_probes, &then_probes);
        let a = speed.allowance.unwrap();
        assert!(a.fastest_ratio.unwrap() > 1.07, "{a:?}");
        assert!((a.fast_ratio.unwrap() - 1.0).abs() < 0.005, "{a:?}");
        r.speed = Some(speed);
        let g = evaluate(&r, &[parse_rule("wall=5%").unwrap()], false);
        let x = &g.results[0];
        assert_eq!(x.outcome, Outcome::Regression, "{g:?}");
        let f = x.fastest.expect("decided by the fastest runs");
        // The medians' ratio (the four moved the baseline's), not 1.08.
        assert!(f.machine_slower < 1.03, "{f:?}");
        // Divided by the 5% quantiles' ratio, as it was, it stood within.
        assert!(
            x.ratio_low.unwrap() / a.fastest_ratio.unwrap() < 1.05,
            "{x:?}"
        );
    }

    /// Regression: against 300 stored runs, `gzip -6` of a file twice as
    /// long, under two busy loops, stopped after 10 and 21 runs and its
    /// report called it inconclusive (`1.97× [1.20, 2.64]`, the machine up
    /// to 1.15×). The checkpoints had judged it a regression of a family
    /// three figures smaller than the report's (major faults, voluntary
    /// switches and block input ops varied only in the baseline's runs),
    /// and could judge one from one or two probes, whose spread is
    /// nothing. Now the checkpoints' family holds every figure the
    /// report's does, and no regression stands before the speed is judged
    /// from as many probes as the report's.
    #[test]
    fn a_checkpoint_stops_on_no_regression_its_report_does_not_make() {
        use crate::compare::runner::{stored_ranges, varying, widen};
        use crate::speed::{FEWEST, allowance};
        let then_probes: Vec<u64> = (0..12).map(|i| 1_000_000 + (i % 4) * 10_000).collect();
        let mut cfg = against_baseline(Some(5.0), then_probes.clone());
        let now = runs("gzip", 20_000_000, 10, false);
        let mut then = runs("gzip", 10_000_000, 300, true);
        for (i, r) in then.runs.iter_mut().enumerate() {
            r.major_faults = (i % 2) as u64;
            r.voluntary_switches = 1 + (i % 3) as u64;
            r.block_input_ops = (i % 5) as u64 * 8;
        }
        if let Some(b) = cfg.baseline.as_mut() {
            b.commands = vec![crate::compare::plan::StoredRuns {
                name: "gzip".into(),
                command: "gzip".into(),
                parameters: Vec::new(),
                runs: then.runs.clone(),
                failed_runs: 0,
                profile: None,
            }];
        }
        let mut ranges = stored_ranges(&cfg);
        let mut only_now = vec![None; FIGURES.len()];
        for r in &now.runs {
            widen(&mut ranges, r);
            widen(&mut only_now, r);
        }
        let report = CompareReport::build(&cfg, vec![now.clone(), then.clone()], None);
        let family = report.family_size as usize;
        assert!(varying(&ranges) >= family, "{ranges:?} against {family}");
        assert!(varying(&only_now) + 3 <= family, "the bug: {only_now:?}");
        let wall = FIGURES.iter().find(|f| f.key == "wall_ns").unwrap();
        let walls =
            |c: &CommandResult| -> Vec<f64> { c.runs.iter().map(|r| r.wall_ns as f64).collect() };
        let (a, b) = (walls(&now), walls(&then));
        // Twice the work, the machine as steady as then: it stands, and
        // no more runs are taken for the fastest.
        let steady: Vec<u64> = then_probes.iter().take(FEWEST).copied().collect();
        let judged = allowance(&steady, &then_probes);
        assert_eq!(
            fastest_rounds(wall, 0.05, (&a, &b), judged, (family, 0.05)),
            0
        );
        // Not yet judged (fewer probes than the report's): the baseline's
        // runs are taken.
        assert_eq!(
            fastest_rounds(wall, 0.05, (&a, &b), None, (family, 0.05)),
            300
        );
    }

    /// Wall time spread by other load stays undecided against the 5%
    /// limit, while cpu time moved 15% beyond doubt: the headline says so
    /// and names the rule that would judge it.
    #[test]
    fn an_undecided_wall_time_names_a_decisive_cpu_time() {
        use crate::compare::plan::Config;
        let cfg = Config {
            alpha: 0.05,
            threshold: 0.01,
            seed: 9,
            reference: Some(1),
            ..Config::default()
        };
        let mut now = runs("new", 10_000_000, 30, false);
        let mut old = runs("old", 10_000_000, 30, false);
        for (c, cpu) in [(&mut now, 1170u64), (&mut old, 1000)] {
            for (i, r) in c.runs.iter_mut().enumerate() {
                // Wall times from 0.6 to 1.6 of the median, every other
                // command's alike; cpu times steady.
                r.wall_ns = 6_000_000 + (i as u64 * 7919 % 30) * 333_333;
                r.user_us = cpu + (i as u64 % 3);
            }
        }
        let r = CompareReport::build(&cfg, vec![now, old], None);
        let g = evaluate(&r, &[parse_rule("wall=5%").unwrap()], false);
        assert_eq!(g.results[0].outcome, Outcome::Inconclusive, "{g:?}");
        assert!(
            g.headline.contains("; cpu time 1.15× [1.15, 1.16]")
                && g.headline.ends_with("gate on cpu= to judge under load"),
            "{}",
            g.headline
        );
        let both = [
            parse_rule("wall=5%").unwrap(),
            parse_rule("cpu=5%").unwrap(),
        ];
        assert!(!evaluate(&r, &both, false).headline.contains("gate on cpu="));
    }

    #[test]
    fn rules_take_json_keys_and_short_names_and_refuse_the_rest() {
        assert_eq!(
            parse_rule("wall=5%"),
            Ok(Rule {
                figure: "wall_ns",
                limit: 0.05
            })
        );
        assert_eq!(parse_rule("maxrss=10%").unwrap().figure, "max_rss_bytes");
        assert_eq!(parse_rule("max_rss_bytes=10").unwrap().limit, 0.10);
        assert_eq!(
            parse_rule("read_bytes=1%").unwrap().figure,
            "storage_read_bytes"
        );
        let e = parse_rule("nosuchfigure=5%").unwrap_err();
        assert!(e.contains("\"nosuchfigure\""), "{e}");
        assert!(e.contains("wall (wall_ns)") && e.contains("maxrss"), "{e}");
        assert!(parse_rule("wall=abc").unwrap_err().contains("percentage"));
        let twice = [
            parse_rule("wall=5%").unwrap(),
            parse_rule("wall_ns=3%").unwrap(),
        ];
        assert!(check_rules(&twice).unwrap_err().contains("twice"));
    }
}
