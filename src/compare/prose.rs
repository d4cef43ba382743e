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
    let p = fraction * 100.0;
    let mut text = format!("{p:.2}");
    while text.contains('.') && (text.ends_with('0') || text.ends_with('.')) {
        text.pop();
    }
    format!("{text}%")
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
/// decimals (one from a ratio of 10×, none from 100×); four (`1.0006× [1.0003,
/// 1.0009]`) only when the interval leaves 1 out by less than 0.005, so a
/// difference shown is never read as `1.00×`.
pub fn ratio_text(c: &FigureComparison) -> String {
    let Some(x) = c.ratio else {
        return "—".into();
    };
    let bounds = c.ratio_low.zip(c.ratio_high);
    let fine = bounds
        .is_some_and(|(lo, hi)| (lo > 1.0 && lo - 1.0 < 0.005) || (hi < 1.0 && 1.0 - hi < 0.005));
    let decimals = if fine {
        4
    } else if x >= 100.0 {
        0
    } else if x >= 10.0 {
        1
    } else {
        2
    };
    let r = |v: f64| format!("{v:.decimals$}");
    match bounds {
        Some((lo, hi)) => format!("{}× [{}, {}]", r(x), r(lo), r(hi)),
        None => format!("{}×", r(x)),
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
        format!("~{n} runs")
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
        format!("about {n} runs of each would decide")
    }
}

/// How intervals and verdicts are made, in words, for the report's `method`.
pub(super) fn method_text(alpha: f64, m: usize, threshold: f64) -> String {
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
/// decide); no other figure differs by 1% or more`.
pub(super) fn headline(index: usize, c: &CommandResult, threshold: f64) -> String {
    let mut parts = Vec::new();
    let label = |v: &FigureComparison| {
        FIGURES
            .iter()
            .find(|f| f.key == v.figure)
            .map_or("figure", |f| f.label)
    };
    for v in c.versus_reference.iter().filter(|v| v.verdict.differs()) {
        if parts.is_empty() {
            parts.push(format!(
                "{} {} ({})",
                label(v),
                ratio_text(v),
                p_text(v.p_adjusted)
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
        .filter(|v| v.verdict.open())
        .collect();
    let needed = open.iter().filter_map(|v| v.runs_needed).max();
    if open.iter().any(|v| v.verdict == Verdict::TooFewRuns)
        && open.len()
            == c.versus_reference
                .iter()
                .filter(|v| v.verdict != Verdict::Unchanged)
                .count()
    {
        let runs = c.runs.len();
        let what = if parts.is_empty() {
            "too few runs to tell"
        } else {
            "too few runs to tell the rest"
        };
        parts.push(format!(
            "{what}: {runs} run{} of each cannot show a difference, at least {} can",
            if runs == 1 { "" } else { "s" },
            needed.unwrap_or(0)
        ));
    } else if !open.is_empty() {
        let mut names: Vec<&str> = open.iter().map(|v| label(v)).collect();
        if names.len() > 3 {
            let more = names.len() - 3;
            names.truncate(3);
            parts.push(format!("undecided: {} and {more} more", names.join(", ")));
        } else {
            parts.push(format!("undecided: {}", names.join(", ")));
        }
        if let Some(n) = needed {
            let last = parts.pop().unwrap_or_default();
            parts.push(format!("{last} ({})", runs_would_decide(n)));
        }
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
            })
        };
        assert_eq!(text(0.9955, 0.94, 1.09), "1.00× [0.94, 1.09]");
        assert_eq!(text(1.26, 1.24, 1.28), "1.26× [1.24, 1.28]");
        assert_eq!(text(1.0048, 1.002, 1.008), "1.0048× [1.0020, 1.0080]");
        assert_eq!(text(0.996, 0.993, 0.998), "0.9960× [0.9930, 0.9980]");
        assert_eq!(text(12.0, 9.94, 16.2), "12.0× [9.9, 16.2]");
    }
}
