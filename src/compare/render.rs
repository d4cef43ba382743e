//! How a [`CompareReport`] renders: the human layout ([`super::human`]),
//! the table and metrics, and the page ([`super::html`]). Kept apart from
//! the model, so the layouts import the model and the model imports no
//! layout.

use std::io::{self, Write};

use super::report::CompareReport;
use super::summary;
use crate::report::markdown::escape_text;
use crate::report::unit::Unit;
use crate::report::{Metric, Render, Style, Table};
use crate::run::report::{FIGURES, RunRecord};

// The formats CompareReport renders (checked before the command works).
crate::forms_of!(CompareReport: Text, Data, Table, Metrics, Page, Runs);

impl Render for CompareReport {
    fn runs(&self) -> Option<Vec<crate::report::hyperfine::TimedCommand<'_>>> {
        let commands = self
            .commands
            .iter()
            .map(|c| crate::report::hyperfine::TimedCommand {
                name: std::borrow::Cow::Borrowed(&c.name),
                parameters: &c.parameters,
                runs: c.runs.iter().map(RunRecord::timed).collect(),
                figures: serde_json::to_value(&c.runs).unwrap_or_default(),
            });
        Some(commands.collect())
    }

    fn human(&self, out: &mut dyn Write, style: Style) -> io::Result<()> {
        super::human::write(self, out, style)
    }

    fn table(&self) -> Table {
        let headers = [
            "command_index",
            "name",
            "command",
            "figure",
            "runs",
            "failed_runs",
            "median",
            "mad",
            "min",
            "max",
            "ratio",
            "ratio_low",
            "ratio_high",
            "p_value",
            "p_adjusted",
            "verdict",
            "runs_needed",
        ]
        .map(String::from)
        .to_vec();
        let mut headers = headers;
        if self.gate.is_some() {
            headers.extend(["gate_limit".to_string(), "gate_outcome".to_string()]);
        }
        let num = |v: Option<f64>| v.map(|v| format!("{v}")).unwrap_or_default();
        let mut rows = Vec::new();
        for (i, c) in self.commands.iter().enumerate() {
            for fig in FIGURES {
                let Some(s) = c.summary_of(fig.key) else {
                    continue;
                };
                let v = c.versus(fig.key);
                rows.push(vec![
                    (i + 1).to_string(),
                    crate::text::escape_text(&c.name),
                    crate::text::escape_text(&c.command),
                    fig.key.to_string(),
                    c.runs.len().to_string(),
                    c.failed_runs.to_string(),
                    num(Some(s.median)),
                    num(Some(s.mad)),
                    num(Some(s.min)),
                    num(Some(s.max)),
                    num(v.and_then(|v| v.ratio)),
                    num(v.and_then(|v| v.ratio_low)),
                    num(v.and_then(|v| v.ratio_high)),
                    num(v.map(|v| v.p_value)),
                    num(v.map(|v| v.p_adjusted)),
                    match v {
                        Some(v) => serde_json::to_value(v.verdict)
                            .ok()
                            .and_then(|v| v.as_str().map(String::from))
                            .unwrap_or_default(),
                        None if i == self.reference || c.from_baseline => "reference".into(),
                        None => String::new(),
                    },
                    v.and_then(|v| v.runs_needed)
                        .map(|n| n.to_string())
                        .unwrap_or_default(),
                ]);
                if let (Some(g), Some(row)) = (&self.gate, rows.last_mut()) {
                    let result = g
                        .results
                        .iter()
                        .find(|r| r.command == i && r.figure == fig.key);
                    row.push(result.map(|r| format!("{}", r.limit)).unwrap_or_default());
                    row.push(
                        result
                            .map(|r| r.outcome.name().to_string())
                            .unwrap_or_default(),
                    );
                }
            }
        }
        Table { headers, rows }
    }

    fn metrics(&self) -> Option<Vec<Metric>> {
        use crate::report::prometheus::stem;
        let mut out = Vec::new();
        for fig in FIGURES {
            let labels = |i: usize, c: &super::report::CommandResult| {
                vec![
                    ("index".to_string(), (i + 1).to_string()),
                    ("name".to_string(), c.name.clone()),
                    ("command".to_string(), c.command.clone()),
                ]
            };
            let mut median = Metric::gauge(
                &format!("tally_compare_{}", stem(fig.key)),
                fig.unit,
                format!("{}: the median over the runs of each command", fig.label),
            );
            let mut ratio = Metric::gauge(
                &format!("tally_compare_{}_to_reference", stem(fig.key)),
                Unit::Ratio,
                format!(
                    "{}: each command's median over the reference command's",
                    fig.label
                ),
            );
            let mut p = Metric::gauge(
                &format!("tally_compare_{}_p_value", stem(fig.key)),
                Unit::Count,
                format!(
                    "{}: two-sided Mann-Whitney U p-value against the reference, \
                     Bonferroni-adjusted over the comparison's figures (at or below \
                     alpha exactly when the ratio's interval leaves out 1)",
                    fig.label
                ),
            );
            for (i, c) in self.commands.iter().enumerate() {
                if let Some(s) = c.summary_of(fig.key) {
                    median.push(labels(i, c), s.median);
                }
                if let Some(v) = c.versus(fig.key) {
                    if let Some(r) = v.ratio {
                        ratio.push(labels(i, c), r);
                    }
                    p.push(labels(i, c), v.p_adjusted);
                }
            }
            for m in [median, ratio, p] {
                if !m.samples.is_empty() {
                    out.push(m);
                }
            }
        }
        Some(out)
    }

    fn html(&self, out: &mut dyn Write) -> Option<io::Result<()>> {
        Some(out.write_all(super::html::render(self).as_bytes()))
    }

    /// With a gate: its headline, then a table per command (for a job
    /// summary or a pull-request comment); without, the one table.
    /// The compact summary (a headline, one small table per command,
    /// times scaled), with a gate or without; the full table of every run
    /// is CSV's and JSON's.
    fn markdown(&self, out: &mut dyn Write) -> Option<io::Result<()>> {
        Some(summary_markdown(self, out))
    }
}

/// A name in a code span (a backtick in it would end the span).
fn code(name: &str) -> String {
    let name = crate::text::escape_text(name);
    format!("`{}`", name.replace('`', "'"))
}

fn summary_markdown(r: &CompareReport, out: &mut dyn Write) -> io::Result<()> {
    match &r.gate {
        Some(g) => gate_headline(g, out)?,
        None if r.commands.len() == 1 => {
            // One command: hyperfine's summary of it.
            let wall = &FIGURES[0];
            if let Some((c, s)) = r
                .commands
                .first()
                .and_then(|c| Some((c, c.summary_of(wall.key)?)))
            {
                let v = |x: f64| summary::value(wall, x, &r.view);
                writeln!(
                    out,
                    "**tally compare**: {}: wall time {} ± {} (mean ± σ), {} … {} (min … max), {} runs\n",
                    code(&c.name),
                    v(s.mean),
                    s.stddev.map_or("—".to_string(), v),
                    v(s.min),
                    v(s.max),
                    c.runs.len()
                )?;
            }
        }
        None => {
            let verdicts: Vec<String> = r
                .commands
                .iter()
                .filter(|c| !c.headline.is_empty())
                .map(|c| escape_text(&c.headline))
                .collect();
            writeln!(out, "**tally compare**: {}\n", verdicts.join("; "))?;
        }
    }
    tables_markdown(r, out)
}

fn gate_headline(g: &super::report::Gate, out: &mut dyn Write) -> io::Result<()> {
    let word = g
        .headline
        .split_once(':')
        .map_or(g.outcome.name(), |(w, _)| w);
    let (speed, ordered) = super::gate::headline_parts(&g.results);
    let mut parts: Vec<String> = speed.map(|n| escape_text(n)).into_iter().collect();
    parts.extend(ordered.iter().map(|(x, phrase)| {
        let label = FIGURES
            .iter()
            .find(|f| f.key == x.figure)
            .map_or(x.figure, |f| f.label);
        format!(
            "{} {} {} {}",
            code(&x.name),
            escape_text(label),
            escape_text(&super::gate::change_text(x)),
            escape_text(phrase)
        )
    }));
    writeln!(
        out,
        "**tally gate: {}**: {}\n",
        escape_text(word),
        parts.join("; ")
    )
}

fn tables_markdown(r: &CompareReport, out: &mut dyn Write) -> io::Result<()> {
    for t in summary::tables(r) {
        let name = |i: usize| r.commands.get(i).map_or(String::new(), |c| code(&c.name));
        let reference = match r.commands.get(t.reference) {
            Some(c) if c.from_baseline => format!("{} (baseline)", name(t.reference)),
            _ => name(t.reference),
        };
        writeln!(out, "#### {} against {reference}\n", name(t.index))?;
        let rows = t
            .rows
            .iter()
            .map(|row| {
                let verdict = match row.outcome {
                    Some(o) if o != crate::gate::Outcome::Pass => {
                        row.verdict
                            .replacen(o.name(), &format!("**{}**", o.name()), 1)
                    }
                    _ => row.verdict.clone(),
                };
                vec![
                    row.figure.clone(),
                    row.reference.clone(),
                    row.now.clone(),
                    row.ratio.clone(),
                    row.interval.clone(),
                    verdict,
                ]
            })
            .collect();
        crate::report::markdown::write(
            &Table {
                headers: ["figure", "reference", "now", "ratio", "interval", "verdict"]
                    .map(String::from)
                    .to_vec(),
                rows,
            },
            out,
        )?;
        if t.others > 0 {
            writeln!(
                out,
                "\n{} other figure{} not different.",
                t.others,
                if t.others == 1 { "" } else { "s" }
            )?;
        }
        writeln!(out)?;
    }
    for w in r.warnings.iter().filter(|w| !summary::said_by_gate(r, w)) {
        writeln!(out, "> warning: {}\n", escape_text(w))?;
    }
    if summary::shows_tick_sampled(r) {
        writeln!(out, "{}\n", escape_text(crate::run::report::TICK_NOTE))?;
    }
    let against = match &r.baseline {
        // Escaped once already, as every path shown.
        Some(b) => format!(
            "against the baseline `{}`",
            crate::text::path::display(&b.path).replace('`', "'")
        ),
        None => "interleaved".into(),
    };
    if r.commands.len() == 1 {
        return writeln!(
            out,
            "<sub>{} runs, seed {}.</sub>",
            r.runs_per_command, r.seed
        );
    }
    writeln!(
        out,
        "<sub>{} runs of each, {against}, seed {}. Ratio: Hodges–Lehmann, Mann–Whitney \
         (Moses) interval {} each (all {} together {}, Bonferroni); verdicts from the \
         interval: beyond {} different, inside the same, across undecided. A gated figure \
         regresses when its whole interval lies beyond its limit.</sub>",
        r.runs_per_command,
        r.seed,
        super::prose::percent(r.interval_level),
        r.family_size,
        super::prose::percent(1.0 - r.alpha),
        super::prose::percent(r.threshold)
    )
}
