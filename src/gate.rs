//! The regression gate's decision, shared by `tally compare --fail-on` and
//! `tally bench --fail-on`: from the interval of a ratio (now over the
//! reference), already widened for the family of tests it belongs to, and
//! a limit in percent, one of three outcomes:
//!
//! - **regression**: the whole interval lies beyond the limit in the worse
//!   direction (and the family's test calls the figure worse);
//! - **pass**: the whole interval lies on the good side of the limit;
//! - **inconclusive**: anything else, with roughly how many runs would
//!   decide it ([`runs_to_decide`]).
//!
//! Only a regression fails a gate ([`EXIT_REGRESSION`]); with `--strict` an
//! inconclusive figure does too ([`EXIT_INCONCLUSIVE`]). The statistics
//! themselves (tests, corrections, intervals) are the comparison's; this
//! module only reads them.

use serde::{Deserialize, Serialize};

/// The exit status of a gate that found a regression (not 1, a command
/// that failed, nor 2, bad usage).
pub const EXIT_REGRESSION: u8 = 3;

/// The exit status of a `--strict` gate that found no regression but a
/// figure it could not decide.
pub const EXIT_INCONCLUSIVE: u8 = 4;

/// The largest limit a gate takes, in percent.
pub const MAX_LIMIT_PERCENT: f64 = 1000.0;

/// What a gate concluded for one figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    Pass,
    Inconclusive,
    Regression,
}

impl Outcome {
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Inconclusive => "inconclusive",
            Outcome::Regression => "regression",
        }
    }
}

/// The first words of a gate's headline: `1 regression, 2 inconclusive`,
/// or `pass` when neither.
pub fn outcome_counts(outcomes: impl Iterator<Item = Outcome>) -> String {
    let (mut bad, mut unsure) = (0usize, 0usize);
    for o in outcomes {
        match o {
            Outcome::Regression => bad += 1,
            Outcome::Inconclusive => unsure += 1,
            Outcome::Pass => {}
        }
    }
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
    summary.join(", ")
}

/// The exit status of a gate whose worst figure came out `worst`.
pub fn exit_status(worst: Option<Outcome>, strict: bool) -> u8 {
    match worst {
        Some(Outcome::Regression) => EXIT_REGRESSION,
        Some(Outcome::Inconclusive) if strict => EXIT_INCONCLUSIVE,
        _ => 0,
    }
}

/// What a gate judges one figure from: the comparison's figures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Evidence {
    /// Now over the reference, and its interval at the family's level;
    /// `None` when the reference's median is 0.
    pub interval: Option<(f64, f64, f64)>,
    /// The family's test calls the figure different in the worse direction.
    pub significant_worse: bool,
    /// The runs taken cannot show a difference at the family's level
    /// whatever they measure ("too few runs").
    pub too_few_runs: bool,
    /// Lower is worse (bandwidths, frequencies); else higher is worse
    /// (times, memory, counts).
    pub higher_is_better: bool,
    /// Both medians are 0 (nothing happened in either).
    pub both_zero: bool,
}

/// The ratio a figure may reach before it regresses: 1 + `limit` when
/// higher is worse, 1 − `limit` (floored at 0) when lower is worse.
pub fn bound(limit: f64, higher_is_better: bool) -> f64 {
    if higher_is_better {
        (1.0 - limit).max(0.0)
    } else {
        1.0 + limit
    }
}

/// The outcome for one figure against `limit` (a fraction: 0.05 for 5%).
pub fn judge(e: &Evidence, limit: f64) -> Outcome {
    if e.both_zero {
        return Outcome::Pass;
    }
    let b = bound(limit, e.higher_is_better);
    let Some((_, low, high)) = e.interval else {
        // The reference's median is 0 and this one's is not: beyond any
        // percentage if the test says it differs.
        return if e.significant_worse && !e.higher_is_better {
            Outcome::Regression
        } else {
            Outcome::Inconclusive
        };
    };
    let (beyond, within) = sides(low, high, b, e.higher_is_better);
    if within {
        Outcome::Pass
    } else if beyond && e.significant_worse && !e.too_few_runs {
        Outcome::Regression
    } else {
        Outcome::Inconclusive
    }
}

/// Whether the interval `[low, high]` lies wholly beyond the bound `b`
/// (worse), and whether wholly within it.
fn sides(low: f64, high: f64, b: f64, higher_is_better: bool) -> (bool, bool) {
    if higher_is_better {
        (high < b, low >= b)
    } else {
        (low > b, high <= b)
    }
}

/// Where an interval lies against `limit`, in the word the verdicts use:
/// `beyond`, `within` or `across` (also for a figure left inconclusive
/// for another reason, so the words never contradict the interval printed
/// beside them).
pub fn place(low: f64, high: f64, limit: f64, higher_is_better: bool) -> &'static str {
    match sides(low, high, bound(limit, higher_is_better), higher_is_better) {
        (true, _) => "beyond",
        (_, true) => "within",
        _ => "across",
    }
}

/// Why no number of runs is given for an inconclusive figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Undecidable {
    /// The ratio sits on the limit: no number of runs moves the interval
    /// off it.
    AtLimit,
    /// The reference's runs are fixed (a stored baseline) and too few: even
    /// unlimited runs now leave the interval across the limit.
    BaselineTooSmall,
    /// No interval to scale.
    NoInterval,
}

/// Roughly how many runs of each command would decide an inconclusive
/// figure: the interval's half-width on the side of the limit shrinks as
/// the square root of the runs, and it must shrink to the distance from
/// the ratio to the limit. With `reference_fixed` (a stored baseline of
/// `n_reference` runs) only this command's runs grow, and the width goes
/// as √(1/n + 1/n_reference). At most 1,000,000.
pub fn runs_to_decide(
    interval: Option<(f64, f64, f64)>,
    bound: f64,
    n_now: usize,
    n_reference: usize,
    reference_fixed: bool,
) -> Result<u32, Undecidable> {
    let Some((ratio, low, high)) = interval else {
        return Err(Undecidable::NoInterval);
    };
    let distance = (ratio - bound).abs();
    if distance <= f64::EPSILON * bound.abs().max(1.0) {
        return Err(Undecidable::AtLimit);
    }
    let half = if ratio > bound {
        ratio - low
    } else {
        high - ratio
    };
    let factor = (half / distance).max(1.0);
    let (n, m) = (n_now.max(1) as f64, n_reference.max(1) as f64);
    let needed = if reference_fixed {
        let inverse = (1.0 / n + 1.0 / m) / (factor * factor) - 1.0 / m;
        if inverse <= 0.0 {
            return Err(Undecidable::BaselineTooSmall);
        }
        1.0 / inverse
    } else {
        n * factor * factor
    };
    Ok(needed.ceil().clamp(n + 1.0, 1_000_000.0) as u32)
}

/// `5%`, `0.5%` or `5` (percent) as a fraction, from 0 up to
/// [`MAX_LIMIT_PERCENT`].
pub fn parse_limit(s: &str) -> Result<f64, String> {
    // One `%` at most: `5%%` is a typo, not 5%.
    let t = s.trim();
    let number = t.strip_suffix('%').unwrap_or(t).trim();
    match number.parse::<f64>() {
        Ok(p) if (0.0..=MAX_LIMIT_PERCENT).contains(&p) => Ok(p / 100.0),
        _ => Err(format!(
            "{s:?} is not a percentage: give one from 0% up to {MAX_LIMIT_PERCENT}%, e.g. 5%"
        )),
    }
}

/// `NAME=PCT` as the name and the limit (a fraction); `example` is a
/// rule of the command at hand (`wall=5%` for compare, `syscall.*=5%`
/// for bench), shown when `s` is not one.
pub fn split_rule<'a>(s: &'a str, example: &str) -> Result<(&'a str, f64), String> {
    let Some((name, pct)) = s.rsplit_once('=') else {
        return Err(format!("{s:?} is not FIGURE=PCT: give e.g. {example}"));
    };
    let name = name.trim();
    if name.is_empty() {
        return Err(format!("{s:?} names no figure: give e.g. {example}"));
    }
    Ok((name, parse_limit(pct)?))
}

/// `+20.3%`, `-0.42%`: a ratio as a signed change in percent.
pub fn change(ratio: f64) -> String {
    if !ratio.is_finite() {
        return "+∞%".into();
    }
    let p = (ratio - 1.0) * 100.0;
    let digits = if p.abs() < 1.0 { 2 } else { 1 };
    let sign = if p >= 0.0 { "+" } else { "" };
    format!("{sign}{}%", crate::units::decimals(p, digits))
}

/// `[+18.1, +22.4]`: an interval of a ratio as changes in percent.
pub fn change_interval(low: f64, high: f64) -> String {
    let bare = |r: f64| change(r).trim_end_matches('%').to_string();
    format!("[{}, {}]", bare(low), bare(high))
}

/// `5%`: a limit as written.
pub fn limit_text(limit: f64) -> String {
    let p = limit * 100.0;
    let mut text = format!("{p:.2}");
    while text.contains('.') && (text.ends_with('0') || text.ends_with('.')) {
        text.pop();
    }
    format!("{text}%")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interval_is_placed_as_the_verdicts_judge_it() {
        assert_eq!(place(1.507, 2.494, 0.05, false), "beyond");
        assert_eq!(place(0.9, 1.05, 0.05, false), "within");
        assert_eq!(place(0.98, 1.2, 0.05, false), "across");
        // Higher is better (a rate): worse is below 1 − limit.
        assert_eq!(place(0.5, 0.9, 0.05, true), "beyond");
        assert_eq!(place(0.95, 1.3, 0.05, true), "within");
        assert_eq!(place(0.9, 1.1, 0.05, true), "across");
    }

    fn worse(ratio: f64, low: f64, high: f64) -> Evidence {
        Evidence {
            interval: Some((ratio, low, high)),
            significant_worse: ratio > 1.0,
            too_few_runs: false,
            higher_is_better: false,
            both_zero: false,
        }
    }

    #[test]
    fn the_interval_decides_against_the_limit() {
        // Whole interval beyond 1.05: a regression.
        assert_eq!(judge(&worse(1.2, 1.18, 1.22), 0.05), Outcome::Regression);
        // Whole interval within: a pass, improvements included.
        assert_eq!(judge(&worse(1.01, 0.98, 1.04), 0.05), Outcome::Pass);
        assert_eq!(judge(&worse(0.7, 0.6, 0.8), 0.05), Outcome::Pass);
        // Across the limit: inconclusive, whichever side the ratio is on.
        assert_eq!(judge(&worse(1.04, 1.01, 1.07), 0.05), Outcome::Inconclusive);
        assert_eq!(judge(&worse(1.07, 1.04, 1.10), 0.05), Outcome::Inconclusive);
        // Beyond, but the test does not call it worse: not a regression.
        let mut e = worse(1.2, 1.18, 1.22);
        e.significant_worse = false;
        assert_eq!(judge(&e, 0.05), Outcome::Inconclusive);
        // Too few runs to show anything: never a regression.
        let mut e = worse(1.2, 1.18, 1.22);
        e.too_few_runs = true;
        assert_eq!(judge(&e, 0.05), Outcome::Inconclusive);
    }

    #[test]
    fn for_a_bandwidth_lower_is_worse() {
        let e = |r: f64, lo: f64, hi: f64| Evidence {
            interval: Some((r, lo, hi)),
            significant_worse: r < 1.0,
            too_few_runs: false,
            higher_is_better: true,
            both_zero: false,
        };
        assert_eq!(judge(&e(0.8, 0.78, 0.82), 0.05), Outcome::Regression);
        assert_eq!(judge(&e(1.3, 1.2, 1.4), 0.05), Outcome::Pass);
        assert_eq!(judge(&e(0.96, 0.93, 0.99), 0.05), Outcome::Inconclusive);
    }

    #[test]
    fn zero_medians() {
        let mut e = worse(1.0, 1.0, 1.0);
        e.interval = None;
        e.significant_worse = true;
        assert_eq!(judge(&e, 0.05), Outcome::Regression);
        e.significant_worse = false;
        assert_eq!(judge(&e, 0.05), Outcome::Inconclusive);
        e.both_zero = true;
        assert_eq!(judge(&e, 0.05), Outcome::Pass);
    }

    #[test]
    fn runs_to_decide_scale_with_the_square_of_the_width() {
        // Half-width 0.03 toward the limit 1.05 from 1.04: 3× too wide,
        // 9× the runs when both sides grow.
        let n = runs_to_decide(Some((1.04, 1.01, 1.07)), 1.05, 20, 20, false);
        assert_eq!(n, Ok(180));
        // A fixed baseline of 20 runs: 1/n' = (1/20 + 1/20)/9 − 1/20 < 0.
        assert_eq!(
            runs_to_decide(Some((1.04, 1.01, 1.07)), 1.05, 20, 20, true),
            Err(Undecidable::BaselineTooSmall)
        );
        // A large baseline: close to the one-sided answer.
        let n = runs_to_decide(Some((1.04, 1.03, 1.055)), 1.05, 20, 2000, true).unwrap();
        assert!((45..50).contains(&n), "{n}");
        assert_eq!(
            runs_to_decide(Some((1.05, 1.0, 1.1)), 1.05, 20, 20, false),
            Err(Undecidable::AtLimit)
        );
    }

    #[test]
    fn limits_and_rules_parse_or_say_what_to_give() {
        assert_eq!(parse_limit("5%"), Ok(0.05));
        assert_eq!(parse_limit("0.5"), Ok(0.005));
        assert_eq!(parse_limit("0%"), Ok(0.0));
        for bad in ["", "%", "-1%", "five", "1001%", "NaN", "inf"] {
            assert!(parse_limit(bad).is_err(), "{bad}");
        }
        assert_eq!(split_rule("wall=5%", "wall=5%"), Ok(("wall", 0.05)));
        assert_eq!(split_rule("mem*.x=a=5%", "wall=5%"), Ok(("mem*.x=a", 0.05)));
        assert!(
            split_rule("wall", "wall=5%")
                .unwrap_err()
                .contains("FIGURE=PCT")
        );
        assert!(split_rule("=5%", "wall=5%").is_err());
        assert!(
            split_rule("wall=5x", "wall=5%")
                .unwrap_err()
                .contains("not a percentage")
        );
    }

    #[test]
    fn changes_read_as_signed_percentages() {
        assert_eq!(change(1.203), "+20.3%");
        assert_eq!(change(0.9958), "-0.42%");
        assert_eq!(change_interval(1.181, 1.224), "[+18.1, +22.4]");
        assert_eq!(limit_text(0.05), "5%");
        assert_eq!(limit_text(0.125), "12.5%");
        assert_eq!(exit_status(Some(Outcome::Regression), false), 3);
        assert_eq!(exit_status(Some(Outcome::Inconclusive), false), 0);
        assert_eq!(exit_status(Some(Outcome::Inconclusive), true), 4);
        assert_eq!(exit_status(None, true), 0);
    }
}
