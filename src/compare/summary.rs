//! The gate's summary of a comparison, as the human layout and Markdown
//! both show it: per command a table of figure, reference, now, ratio,
//! interval and verdict, with the gated figures' outcomes. Kept apart from
//! the model (it imports the model, the model imports no layout).

use super::gate::{self, GateResult};
use super::plan::View;
use super::prose::{direction, evidence_text, point_ratio, ratio_cells};
use super::report::{CommandResult, CompareReport, FigureComparison, Verdict};
use crate::gate::Outcome;
use crate::report::unit::{Quantity, Unit};
use crate::run::report::{FIGURES, Figure};

/// `value` of `fig` for people, times in the view's unit.
pub(super) fn value(fig: &Figure, value: f64, view: &View) -> String {
    if fig.unit.base() != Unit::Seconds {
        return fig.human(value);
    }
    let ns = Quantity::new(value, fig.unit).to(Unit::Nanoseconds).value;
    let mark = if fig.tick_sampled() { "~" } else { "" };
    format!("{mark}{}", crate::units::time_in(ns, view.time_unit))
}

/// The verdict of a figure that is not gated, in words:
/// `slower (p<0.001)`, `same within 1%`, `too few runs (need 6): ranges
/// apart`, `undecided (~40 runs)`.
pub(super) fn verdict_text(fig: &Figure, v: &FigureComparison, threshold: f64) -> String {
    let word = direction(fig, v.verdict);
    match v.verdict {
        Verdict::Lower | Verdict::Higher => format!("{word} ({})", evidence_text(v)),
        Verdict::SameWithinThreshold => format!("{word} {}", super::prose::percent(threshold)),
        Verdict::TooFewRuns => {
            let need = v
                .runs_needed
                .map_or(String::new(), |n| format!(" (need {n})"));
            let ranges = match v.ranges_overlap {
                Some(true) => ": ranges overlap",
                Some(false) => ": ranges apart",
                None => "",
            };
            format!("{word}{need}{ranges}")
        }
        Verdict::Undecided => match v.runs_needed {
            Some(n) => format!("{word} ({})", gate::about_runs(n)),
            None => word.to_string(),
        },
        Verdict::Unchanged => word.to_string(),
    }
}

/// One row of a command's table.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Row {
    pub figure: String,
    pub reference: String,
    pub now: String,
    pub ratio: String,
    pub interval: String,
    pub verdict: String,
    /// The gate's outcome, for a gated figure.
    pub outcome: Option<Outcome>,
}

/// A command's table: its gated figures, the headline figures and every
/// figure that differs; the rest counted.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct CommandTable {
    pub index: usize,
    pub reference: usize,
    pub rows: Vec<Row>,
    /// Figures left out: they did not differ.
    pub others: usize,
}

fn median(c: &CommandResult, key: &str) -> Option<f64> {
    c.summary_of(key).map(|s| s.median)
}

/// Whether a user or kernel cpu figure (tick-sampled, shown with `~`) is
/// in `r`: then [`crate::run::report::TICK_NOTE`] is said once.
pub(super) fn shows_tick_sampled(r: &CompareReport) -> bool {
    FIGURES
        .iter()
        .filter(|f| f.tick_sampled())
        .any(|f| r.commands.iter().any(|c| c.summary_of(f.key).is_some()))
}

/// A table per command that has a reference.
pub(super) fn tables(r: &CompareReport) -> Vec<CommandTable> {
    let mut out = Vec::new();
    for (i, c) in r.commands.iter().enumerate() {
        let Some(j) = c.compared_with else {
            continue;
        };
        let Some(reference) = r.commands.get(j) else {
            continue;
        };
        let gated = |key: &str| -> Option<&GateResult> {
            r.gate
                .as_ref()?
                .results
                .iter()
                .find(|g| g.command == i && g.figure == key)
        };
        let mut rows = Vec::new();
        let mut others = 0;
        for fig in FIGURES {
            let g = gated(fig.key);
            let v = c.versus(fig.key);
            // A headline figure measured by neither (the time of commands
            // counted under the simulator only) has no row.
            let measured = v.is_some() || median(c, fig.key).is_some();
            let shown =
                g.is_some() || (fig.headline && measured) || v.is_some_and(|v| v.verdict.differs());
            if !shown {
                others += usize::from(v.is_some());
                continue;
            }
            let cell = |c: &CommandResult| {
                median(c, fig.key).map_or("—".to_string(), |m| value(fig, m, &r.view))
            };
            let (ratio, interval) = match v {
                // Too few runs for an interval: the medians' ratio.
                Some(v) if v.verdict == Verdict::TooFewRuns => (
                    median(c, fig.key)
                        .zip(median(reference, fig.key))
                        .filter(|(_, b)| *b != 0.0)
                        .map_or("—".into(), |(a, b)| point_ratio(a / b)),
                    String::new(),
                ),
                Some(v) => match v.ratio {
                    Some(x) => ratio_cells(x, v.ratio_low.zip(v.ratio_high)),
                    // The reference's median is 0: no ratio, a direction.
                    None => ("from 0".into(), String::new()),
                },
                None => ("—".into(), String::new()),
            };
            let verdict = match (g, v) {
                (Some(g), _) => gate::outcome_text(g),
                (None, Some(v)) => verdict_text(fig, v, r.threshold),
                (None, None) => "not measured".into(),
            };
            rows.push(Row {
                figure: fig.label.to_string(),
                reference: cell(reference),
                now: cell(c),
                ratio,
                interval,
                verdict,
                outcome: g.map(|g| g.outcome),
            });
        }
        out.push(CommandTable {
            index: i,
            reference: j,
            rows,
            others,
        });
    }
    out
}

/// Whether warning `w` only repeats a reason the gate's headline gives
/// (the machine's speed against a baseline): each reason is said once.
pub(super) fn said_by_gate(r: &CompareReport, w: &str) -> bool {
    let Some(g) = &r.gate else {
        return false;
    };
    // `baseline PATH: REASON: what follows`.
    let reason = match &r.baseline {
        Some(b) => w
            .strip_prefix(&format!(
                "baseline {}: ",
                crate::text::path::display(&b.path)
            ))
            .and_then(|rest| rest.split(": ").next()),
        None => None,
    };
    reason.is_some_and(|reason| !reason.is_empty() && g.headline.contains(reason))
}

/// `#2 new`, `#3 new (baseline)`.
pub(super) fn who(r: &CompareReport, i: usize) -> String {
    match r.commands.get(i) {
        Some(c) if c.from_baseline => {
            format!("#{} {} (baseline)", i + 1, crate::text::Foreign(&c.name))
        }
        Some(c) => format!("#{} {}", i + 1, crate::text::Foreign(&c.name)),
        None => format!("#{}", i + 1),
    }
}

/// `where #2's instructions changed: +6,000,000 instructions (+49.5%):
/// 100.0% of the change in work_a (two.c)`: a line per command whose
/// change of instructions was put on functions (`--count=sim`).
pub(super) fn where_changed(r: &CompareReport) -> Vec<String> {
    let mut out = Vec::new();
    for (i, c) in r.commands.iter().enumerate() {
        let (Some(a), Some(j)) = (&c.instructions_change, c.compared_with) else {
            continue;
        };
        let whole = r
            .commands
            .get(j)
            .and_then(|x| x.summary_of("instructions"))
            .map_or(0, |s| s.median as u64);
        out.push(format!(
            "where #{}'s instructions changed: {}",
            i + 1,
            crate::count::human::change_line(a, whole)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::TimeUnit;

    /// Regression: the speed probe's reason was said three times, once
    /// before the results and once in each gated time's words.
    #[test]
    fn a_gates_reason_is_said_once() {
        use super::super::gate::{Reason, headline_parts};
        let g = |figure: &'static str| GateResult {
            command: 0,
            name: "work".into(),
            reference: 1,
            figure,
            limit: 0.05,
            ratio: Some(1.5),
            ratio_low: Some(1.4),
            ratio_high: Some(1.6),
            p_adjusted: Some(0.001),
            outcome: Outcome::Inconclusive,
            runs_needed: None,
            reason: Some(Reason::MachineSpeed),
            note: Some("this machine ran 8% slower than when the baseline was saved".into()),
            exact: false,
            fastest: None,
        };
        let results = [g("wall_ns"), g("cpu_us")];
        let (speed, parts) = headline_parts(&results);
        assert!(speed.is_some());
        for (_, phrase) in &parts {
            assert!(!phrase.contains("8% slower"), "{phrase}");
        }
        let other = GateResult {
            reason: Some(Reason::OtherWork),
            note: Some("other work differs".into()),
            ..g("wall_ns")
        };
        let results = [
            other.clone(),
            GateResult {
                figure: "cpu_us",
                ..other
            },
        ];
        let (speed, parts) = headline_parts(&results);
        assert!(speed.is_none());
        let said: usize = parts
            .iter()
            .filter(|(_, p)| p.contains("other work differs"))
            .count();
        assert_eq!(said, 1, "{parts:?}");
    }

    #[test]
    fn runs_beyond_what_a_comparison_takes_are_not_counted_out() {
        assert_eq!(gate::about_runs(40), "~40 runs");
        assert_eq!(gate::about_runs(410_000), "over 10,000 runs");
    }

    #[test]
    fn times_read_in_the_unit_asked_for() {
        let wall = &FIGURES[0];
        let rss = FIGURES.iter().find(|f| f.key == "max_rss_bytes").unwrap();
        let view = |u| View {
            time_unit: u,
            ..View::default()
        };
        assert_eq!(value(wall, 1_186_000.0, &View::default()), "1.186ms");
        assert_eq!(
            value(wall, 1_186_000.0, &view(TimeUnit::Microsecond)),
            "1,186µs"
        );
        assert_eq!(
            value(wall, 1_186_000.0, &view(TimeUnit::Millisecond)),
            "1.186ms"
        );
        assert_eq!(value(wall, 1_186_000.0, &view(TimeUnit::Second)), "0.0012s");
        assert_eq!(
            value(wall, 21_680_000.0, &view(TimeUnit::Millisecond)),
            "21.68ms"
        );
        assert_eq!(value(wall, 1_186.0, &view(TimeUnit::Nanosecond)), "1,186ns");
        // Other figures keep their unit.
        assert_eq!(
            value(rss, 2_048_000.0, &view(TimeUnit::Second)),
            value(rss, 2_048_000.0, &View::default())
        );
    }
}
