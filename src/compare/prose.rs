//! How a comparison reads: ratios and their intervals in one precision,
//! p-values, directions, the runs that would decide, and each command's
//! headline. Shared by every layout (human, Markdown, HTML, the gate).

use super::report::{CommandResult, FigureComparison, Verdict};
use crate::report::unit::Unit;
use crate::run::report::{FIGURES, Figure};
use crate::stats;

/// `99.7%`, `1%`, `0.5%`: a fraction as a percentage, no more digits than
/// it needs.
pub fn percent(fraction: f64) -> String {
    crate::units::percent_text(fraction)
}

/// `p<0.001`, or `exact` for counts compared by their range: the
/// evidence beside a verdict.
pub fn evidence_text(v: &FigureComparison) -> String {
    if v.test == super::report::EXACT_TEST {
        "exact".into()
    } else {
        p_text(v.p_adjusted)
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

/// `1.26× [1.24, 1.28]`: the ratio and its bounds in one precision, two
/// decimals (one from a ratio of 10×, none from 100×, two significant
/// digits below 0.1×: `0.0016×`); four (`1.0006× [1.0003,
/// 1.0009]`) only when the interval leaves 1 out by less than 0.005, so a
/// difference shown is never read as `1.00×`.
pub fn ratio_text(c: &FigureComparison) -> String {
    let Some(x) = c.ratio else {
        return "—".into();
    };
    interval_text(x, c.ratio_low.zip(c.ratio_high))
}

/// [`ratio_text`] of a ratio `x` and its interval's bounds, when it has
/// them.
pub fn interval_text(x: f64, bounds: Option<(f64, f64)>) -> String {
    let fine = bounds
        .is_some_and(|(lo, hi)| (lo > 1.0 && lo - 1.0 < 0.005) || (hi < 1.0 && 1.0 - hi < 0.005));
    let decimals = if fine {
        4
    } else {
        crate::units::ratio_decimals(x)
    };
    let r = |v: f64| crate::units::decimals(v, decimals);
    match bounds {
        Some((lo, hi)) => format!("{}× [{}, {}]", r(x), r(lo), r(hi)),
        None => format!("{}×", r(x)),
    }
}

/// `1.05×`, `1.005×`, `1.125×`: the ratio a gate's limit (a fraction,
/// `--fail-on wall=5%`) stands for, in as many decimals as the limit has.
pub fn limit_text(limit: f64) -> String {
    let mut p = format!("{:.4}", 1.0 + limit);
    while p.ends_with('0') && p.len() > 4 {
        p.pop();
    }
    format!("{p}×")
}

/// The cells of a ratio in a table: the ratio and its interval apart
/// (`1.26×`, `[1.24, 1.28]`), the interval empty where it is one value.
pub fn ratio_cells(x: f64, bounds: Option<(f64, f64)>) -> (String, String) {
    let text = interval_text(x, bounds.filter(|(lo, hi)| lo != hi));
    match text.split_once(' ') {
        Some((ratio, interval)) => (ratio.to_string(), interval.to_string()),
        None => (text, String::new()),
    }
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
        (Verdict::Undecided, _) => "undecided",
        (Verdict::TooFewRuns, _) => "too few runs",
        (Verdict::SameWithinThreshold, _) => "same within",
    }
}

/// `~40 runs`; beyond the most rounds a comparison takes by itself
/// ([`super::sizing::MAX_ROUNDS`]), `over 10,000 runs`: a count of 1
/// against 1 once asked for about 410,000.
pub fn about_runs(n: u32) -> String {
    let most = super::sizing::MAX_ROUNDS;
    if n > most {
        format!("over {} runs", crate::units::thousands(u64::from(most)))
    } else {
        format!("~{} runs", crate::units::thousands(u64::from(n)))
    }
}

/// `about 40 runs of each would decide`, `over 10,000 runs of each would
/// decide`: the runs of [`about_runs`] in a sentence. Regression: a
/// comparison's verdict line said "about 275721 runs of each would
/// decide" below a table whose rows said "over 10,000 runs".
pub fn runs_would_decide(n: u32) -> String {
    if n > super::sizing::MAX_ROUNDS {
        format!("{} of each would decide", about_runs(n))
    } else {
        format!(
            "about {} runs of each would decide",
            crate::units::thousands(u64::from(n))
        )
    }
}

/// How intervals and verdicts are made, in words, for the report's `method`.
pub(super) fn method_text(alpha: f64, m: usize, threshold: f64) -> String {
    if m == 0 {
        // No figure was tested (counts that repeated are compared exactly).
        return format!(
            "no figure was compared by a test: a count that repeated is compared exactly, its \
             interval from the smallest to the largest ratio of two runs; verdict: different \
             when the interval lies beyond {}, the same within it when inside",
            percent(threshold)
        );
    }
    format!(
        "ratio: the Hodges-Lehmann estimate of the shift of log values (of the values over \
         the reference's median where a value is 0), with the Moses interval from the \
         Mann-Whitney U distribution (exact up to {} runs each, ties broken against a \
         difference) at {} each, so that the {m} intervals hold together at {:.0}% \
         (Bonferroni); verdict: different when the interval lies beyond {}, the same within \
         it when inside, undecided otherwise; p-values from the same test",
        stats::EXACT_MAX,
        percent(1.0 - alpha / m.max(1) as f64),
        (1.0 - alpha) * 100.0,
        percent(threshold)
    )
}

/// One line: what differs from the reference, by how much, how sure, and
/// what these runs left open. `wall time 1.10× [1.07, 1.13] (p<0.001);
/// peak memory 0.52×; undecided: cpu time (about 60 runs of each would
/// decide); no other figure differs by 1% or more`. A figure whose
/// medians are the same is not listed as undecided: it did not move.
/// Where the runs are too few for any interval, what they do show: the
/// figures whose ranges are apart, with the ratio of their medians.
pub(super) fn headline(
    index: usize,
    c: &CommandResult,
    reference: Option<&CommandResult>,
    threshold: f64,
) -> String {
    let mut parts = Vec::new();
    let label = |v: &FigureComparison| {
        FIGURES
            .iter()
            .find(|f| f.key == v.figure)
            .map_or("figure", |f| f.label)
    };
    let median = |c: Option<&CommandResult>, key: &str| c?.summary_of(key).map(|s| s.median);
    let still = |v: &FigureComparison| {
        median(Some(c), &v.figure).is_some()
            && median(Some(c), &v.figure) == median(reference, &v.figure)
    };
    for v in c.versus_reference.iter().filter(|v| v.verdict.differs()) {
        if parts.is_empty() {
            parts.push(format!(
                "{} {} ({})",
                label(v),
                ratio_text(v),
                evidence_text(v)
            ));
        } else {
            // The ratio alone, in the precision its interval needs.
            let text = ratio_text(v);
            let ratio = text.split(" [").next().unwrap_or(&text);
            parts.push(format!("{} {ratio}", label(v)));
        }
    }
    let open: Vec<&FigureComparison> = c
        .versus_reference
        .iter()
        .filter(|v| v.verdict.open() && !still(v))
        .collect();
    let needed = open.iter().filter_map(|v| v.runs_needed).max();
    if open.iter().any(|v| v.verdict == Verdict::TooFewRuns)
        && open.len()
            == c.versus_reference
                .iter()
                .filter(|v| v.verdict != Verdict::Unchanged && !still(v))
                .count()
    {
        let apart: Vec<String> = open
            .iter()
            .filter(|v| v.ranges_overlap == Some(false))
            .map(|v| {
                let ratio = median(Some(c), &v.figure)
                    .zip(median(reference, &v.figure))
                    .filter(|(_, b)| *b != 0.0)
                    .map(|(a, b)| format!(" {}", point_ratio(a / b)));
                format!("{}{}", label(v), ratio.unwrap_or_default())
            })
            .collect();
        if !apart.is_empty() {
            parts.push(format!(
                "ranges apart (ratio of medians): {}",
                listed(&apart, 4)
            ));
        }
        let runs = c.runs.len();
        parts.push(format!(
            "{} run{} of each are too few for a verdict, {} would decide",
            runs,
            if runs == 1 { "" } else { "s" },
            needed.unwrap_or(0)
        ));
    } else if !open.is_empty() {
        let names: Vec<String> = open.iter().map(|v| label(v).to_string()).collect();
        parts.push(format!("undecided: {}", listed(&names, 3)));
        if let Some(n) = needed {
            let last = parts.pop().unwrap_or_default();
            parts.push(format!("{last} ({})", runs_would_decide(n)));
        }
    } else if c.versus_reference.is_empty() && parts.is_empty() {
        // Nothing of it was measured that the reference has too (every
        // counted run of it gave no count): not "no figure differs".
        parts.push("no figure of it was measured to compare with the reference's".into());
    } else {
        let same = c
            .versus_reference
            .iter()
            .any(|v| v.verdict == Verdict::SameWithinThreshold);
        let other = if parts.is_empty() { "no" } else { "no other" };
        parts.push(if same {
            format!("{other} figure differs by {} or more", percent(threshold))
        } else {
            format!("{other} figure differs")
        });
    }
    format!("#{} {}: {}", index + 1, c.name, parts.join("; "))
}

/// `a, b, c and 2 more`: at most `most` names.
fn listed(names: &[String], most: usize) -> String {
    if names.len() > most {
        format!(
            "{} and {} more",
            names[..most].join(", "),
            names.len() - most
        )
    } else {
        names.join(", ")
    }
}

/// The chance that the ranges of `n` and `m` runs of one command lie apart
/// (every run of one below every run of the other): 2 / C(n + m, n).
pub fn ranges_apart_by_chance(n: usize, m: usize) -> f64 {
    if n == 0 || m == 0 {
        return 1.0;
    }
    let mut c = 1.0f64;
    for k in 1..=n {
        c *= (m + k) as f64 / k as f64;
    }
    (2.0 / c).min(1.0)
}

/// `once in 10 comparisons`, `once in 126 comparisons`.
pub fn one_in(chance: f64) -> String {
    if chance <= 0.0 {
        return "never".into();
    }
    format!(
        "once in {} comparisons",
        crate::units::thousands((1.0 / chance).round() as u64)
    )
}

/// A ratio without an interval (of two medians): as
/// [`crate::units::ratio`], with four decimals where two would read a
/// difference as `1.00×`.
pub fn point_ratio(x: f64) -> String {
    if x != 1.0 && (x - 1.0).abs() < 0.005 {
        format!("{x:.4}×")
    } else {
        crate::units::ratio(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: a cold comparison's verdict line said "about 275721
    /// runs of each would decide" below rows that said "over 10,000 runs".
    #[test]
    fn a_verdict_line_said_about_275721_runs_where_its_rows_said_over_10000() {
        assert_eq!(
            runs_would_decide(275_721),
            "over 10,000 runs of each would decide"
        );
        assert_eq!(runs_would_decide(40), "about 40 runs of each would decide");
        assert_eq!(about_runs(275_721), "over 10,000 runs");
    }

    /// Regression: `1.0048×` stood beside `1.02×`, and a ratio near 1 got
    /// four decimals whatever its interval. One precision per ratio text;
    /// four decimals only where two would read a difference as 1.00.
    #[test]
    fn a_ratio_and_its_bounds_share_one_precision() {
        let text = |x: f64, lo: f64, hi: f64| {
            ratio_text(&FigureComparison {
                figure: "wall_ns".into(),
                ratio: Some(x),
                ratio_low: Some(lo),
                ratio_high: Some(hi),
                p_value: 1.0,
                p_adjusted: 1.0,
                u: 0.0,
                test: "exact",
                verdict: Verdict::Undecided,
                runs_needed: None,
                ranges_overlap: None,
            })
        };
        assert_eq!(text(0.9955, 0.94, 1.09), "1.00× [0.94, 1.09]");
        assert_eq!(text(1.26, 1.24, 1.28), "1.26× [1.24, 1.28]");
        assert_eq!(text(1.0048, 1.002, 1.008), "1.0048× [1.0020, 1.0080]");
        assert_eq!(text(0.996, 0.993, 0.998), "0.9960× [0.9930, 0.9980]");
        assert_eq!(text(12.0, 9.94, 16.2), "12.0× [9.9, 16.2]");
        assert_eq!(
            one_in(ranges_apart_by_chance(3, 3)),
            "once in 10 comparisons"
        );
        assert_eq!(limit_text(0.05), "1.05×");
        assert_eq!(limit_text(0.005), "1.005×");
        assert_eq!(limit_text(0.125), "1.125×");
        assert_eq!(limit_text(1.0), "2.00×");
        assert_eq!(
            ratio_cells(1.26, Some((1.24, 1.28))),
            ("1.26×".to_string(), "[1.24, 1.28]".to_string())
        );
        assert_eq!(
            ratio_cells(1.0, Some((1.0, 1.0))),
            ("1.00×".to_string(), String::new())
        );
        assert_eq!(
            one_in(ranges_apart_by_chance(5, 5)),
            "once in 126 comparisons"
        );
        // Regression: a ratio of 1 to 625 read "0.00×".
        assert_eq!(
            text(1.0 / 625.0, 0.0012, 0.0021),
            "0.0016× [0.0012, 0.0021]"
        );
    }
}
