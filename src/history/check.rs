//! `tally history check`: the gate for CI over a history. A gated series
//! fails (exit 3) when its newest point belongs to a change point that
//! makes the figure worse beyond its `--fail-on` limit: the series' last
//! change point, at most `--within` points before the newest (an older
//! change is history, not news). A change with only the newest point
//! after it is *pending*: one more point tells a change from an outlier,
//! so it passes, or fails with `--strict` (exit 4), as compare's
//! inconclusive figures do. Outcomes use [`crate::gate`]'s names and exit
//! statuses, and the Markdown has the shape of compare's gate.

use std::io::{self, Write};

use serde::Serialize;

use super::report::{ChangeOut, CommitOut, HistoryReport, SeriesOut, human_value, p_text, percent};
use super::series::figure_matches;
use crate::gate::{self, Outcome};
use crate::report::markdown::escape_text as md;

/// One `--fail-on FIGURE=PCT`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rule {
    pub figure: String,
    /// A fraction (0.05 for 5%).
    pub limit: f64,
}

/// Reads `FIGURE=PCT` (`FIGURE` as `--figure` takes it).
pub fn parse_rule(s: &str) -> Result<Rule, String> {
    let (figure, limit) = gate::split_rule(s, "wall=5%")?;
    Ok(Rule {
        figure: figure.to_string(),
        limit,
    })
}

/// The gate's settings.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckConfig {
    /// Empty: every figure, at 0%.
    pub rules: Vec<Rule>,
    /// A change point this many points before the newest or fewer is the
    /// newest point's.
    pub within: usize,
    pub strict: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct CheckOut {
    pub rules: Vec<Rule>,
    pub within: usize,
    pub strict: bool,
    pub results: Vec<CheckResult>,
    pub outcome: Outcome,
    pub exit_status: u8,
    pub headline: String,
}

/// The verdict on one gated series.
#[derive(Debug, Clone, Serialize)]
pub struct CheckResult {
    /// An index into the report's `series`.
    pub series: usize,
    pub command: String,
    pub figure: String,
    pub machine: Option<String>,
    pub limit: f64,
    pub outcome: Outcome,
    /// `regression`, `within the limit`, `better`, `older`, `pending`, `none`.
    pub reason: String,
    pub change: Option<ChangeOut>,
}

/// The limit of the first rule that gates `s`; every figure at 0 without
/// rules.
fn limit_of(rules: &[Rule], s: &SeriesOut) -> Option<f64> {
    if rules.is_empty() {
        return Some(0.0);
    }
    rules
        .iter()
        .find(|r| figure_matches(&r.figure, &s.figure, &s.unit))
        .map(|r| r.limit)
}

/// Judges every gated series of `report`.
pub fn judge(report: &HistoryReport, cfg: &CheckConfig) -> CheckOut {
    let mut results = Vec::new();
    for (i, s) in report.series.iter().enumerate() {
        let Some(limit) = limit_of(&cfg.rules, s) else {
            continue;
        };
        results.push(one(i, s, limit, cfg));
    }
    let worst = results.iter().map(|r| r.outcome).max();
    let exit_status = gate::exit_status(worst, cfg.strict);
    let mut out = CheckOut {
        rules: cfg.rules.clone(),
        within: cfg.within,
        strict: cfg.strict,
        outcome: worst.unwrap_or(Outcome::Pass),
        exit_status,
        headline: String::new(),
        results,
    };
    out.headline = headline(report, &out, false);
    out
}

fn one(i: usize, s: &SeriesOut, limit: f64, cfg: &CheckConfig) -> CheckResult {
    let newest = s.points.len().saturating_sub(1);
    let beyond = |c: &ChangeOut| c.worse && c.change.abs() > limit;
    let (outcome, reason, change) = match (s.change_points.last(), &s.pending) {
        (_, Some(p)) if beyond(p) => (Outcome::Inconclusive, "pending", Some(p.clone())),
        (Some(c), _) if newest - c.index >= cfg.within => (Outcome::Pass, "older", Some(c.clone())),
        (Some(c), _) if beyond(c) => (Outcome::Regression, "regression", Some(c.clone())),
        (Some(c), _) if c.worse => (Outcome::Pass, "within the limit", Some(c.clone())),
        (Some(c), _) => (Outcome::Pass, "better", Some(c.clone())),
        (None, _) => (Outcome::Pass, "none", None),
    };
    CheckResult {
        series: i,
        command: s.command.clone(),
        figure: s.figure.clone(),
        machine: s.machine.clone(),
        limit,
        outcome,
        reason: reason.into(),
        change,
    }
}

/// What one result says: `` `gzip` wall_ns +8.9% at abc1234 beyond +5%, p<0.001 ``.
fn phrase(report: &HistoryReport, r: &CheckResult, markdown: bool) -> String {
    let rest = |s: String| if markdown { md(&s) } else { s };
    let Some(c) = &r.change else {
        return format!(
            "`{}` {}",
            code(&r.command),
            rest(format!("{} no change", r.figure))
        );
    };
    let at = report
        .commits
        .get(c.first_after as usize)
        .map_or("-".into(), CommitOut::short);
    let limit = format!("+{}", gate::limit_text(r.limit));
    let verdict = match r.reason.as_str() {
        "regression" => format!("beyond {limit}, {}", p_text(c.p_adjusted)),
        "pending" => format!("beyond {limit} at the newest point alone: one more point decides"),
        "within the limit" => format!("within {limit}"),
        "older" => "an older change".into(),
        _ => "better".into(),
    };
    format!(
        "`{}` {}",
        code(&r.command),
        rest(format!(
            "{} {} from {at} {verdict}",
            r.figure,
            percent(c.change)
        ))
    )
}

fn code(s: &str) -> String {
    crate::text::escape::escape_text(s).replace('`', "'")
}

/// `history check: 1 regression: …`; the part after the counts in
/// Markdown (names in code spans, the rest escaped) when `markdown`.
fn headline(report: &HistoryReport, c: &CheckOut, markdown: bool) -> String {
    let counts = gate::outcome_counts(c.results.iter().map(|r| r.outcome));
    let mut shown: Vec<&CheckResult> = c
        .results
        .iter()
        .filter(|r| r.outcome != Outcome::Pass || r.reason == "within the limit")
        .collect();
    shown.sort_by_key(|r| std::cmp::Reverse(r.outcome));
    let parts: Vec<String> = shown
        .iter()
        .take(5)
        .map(|r| phrase(report, r, markdown))
        .collect();
    let more = shown.len().saturating_sub(5);
    let tail = if parts.is_empty() {
        format!(
            "{} gated series, none changed for the worse at the newest point",
            c.results.len()
        )
    } else if more > 0 {
        format!("{}; {more} more", parts.join("; "))
    } else {
        parts.join("; ")
    };
    format!("history check: {counts}: {tail}")
}

impl CheckOut {
    /// The table after the series: each gated series that changed.
    pub fn human(&self, out: &mut dyn Write) -> io::Result<()> {
        let changed: Vec<&CheckResult> =
            self.results.iter().filter(|r| r.change.is_some()).collect();
        writeln!(
            out,
            "checked {} series (a change at most {} points before the newest is the newest's): {} changed",
            self.results.len(),
            self.within,
            changed.len()
        )?;
        for r in changed {
            writeln!(
                out,
                "  {:<12} {} · {}",
                r.outcome.name(),
                crate::text::escape::escape_text(&r.command),
                r.figure
            )?;
        }
        Ok(())
    }

    /// compare's gate shape: the headline in bold, then per command a
    /// table of its gated figures that changed, then how it was decided.
    pub fn markdown(&self, report: &HistoryReport, out: &mut dyn Write) -> io::Result<()> {
        let words = headline(report, self, true);
        let (word, rest) = words
            .trim_start_matches("history check: ")
            .split_once(": ")
            .unwrap_or(("pass", ""));
        writeln!(out, "**tally history check: {}**: {rest}\n", md(word))?;
        let mut commands: Vec<(&str, Option<&str>)> = self
            .results
            .iter()
            .filter(|r| r.change.is_some())
            .map(|r| (r.command.as_str(), r.machine.as_deref()))
            .collect();
        commands.dedup();
        for (command, machine) in commands {
            let m = report
                .machine(machine)
                .map(|m| format!(" on {} ({})", m.fingerprint, m.described))
                .unwrap_or_default();
            writeln!(out, "#### `{}`{}\n", code(command), md(&m))?;
            let mut rows = Vec::new();
            for r in self
                .results
                .iter()
                .filter(|r| r.command == command && r.machine.as_deref() == machine)
            {
                let Some(c) = &r.change else { continue };
                let s = &report.series[r.series];
                let b = report
                    .commits
                    .get(c.last_before as usize)
                    .map_or("-".into(), CommitOut::short);
                let a = report
                    .commits
                    .get(c.first_after as usize)
                    .map_or("-".into(), CommitOut::short);
                let verdict = match r.outcome {
                    Outcome::Pass => format!("pass ({})", r.reason),
                    o => format!(
                        "**{}** (> +{}, {})",
                        o.name(),
                        gate::limit_text(r.limit),
                        p_text(c.p_adjusted)
                    ),
                };
                rows.push(vec![
                    s.figure.clone(),
                    human_value(c.median_before, &s.unit),
                    human_value(c.median_after, &s.unit),
                    percent(c.change),
                    format!("{b} → {a}"),
                    verdict,
                ]);
            }
            crate::report::markdown::write(
                &crate::report::Table {
                    headers: ["figure", "before", "now", "change", "commits", "verdict"]
                        .map(String::from)
                        .to_vec(),
                    rows,
                },
                out,
            )?;
            writeln!(out)?;
        }
        writeln!(
            out,
            "<sub>{} gated series of `{}`. {}. A gated figure regresses when its newest point belongs to a change point (at most {} points before it) that makes it worse beyond its limit; a change seen at the newest point alone is pending.</sub>",
            self.results.len(),
            crate::text::escape::escape_text(&report.store).replace('`', "'"),
            md(&report.method_line()),
            self.within
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_read_as_compares() {
        assert_eq!(
            parse_rule("wall=5%"),
            Ok(Rule {
                figure: "wall".into(),
                limit: 0.05
            })
        );
        assert!(parse_rule("wall").unwrap_err().contains("FIGURE=PCT"));
        assert!(parse_rule("wall=-3%").is_err());
    }
}
