//! How a [`CompareReport`] renders: the human layout ([`super::human`]),
//! the table and metrics, and the page ([`super::html`]). Kept apart from
//! the model, so the layouts import the model and the model imports no
//! layout.

use std::io::{self, Write};

use super::report::CompareReport;
use crate::report::unit::Unit;
use crate::report::{Metric, Render, Style, Table};
use crate::run::report::FIGURES;

// The formats CompareReport renders (checked before the command works).
crate::formats_of!(CompareReport: HUMAN, JSON, CSV, MARKDOWN, PROMETHEUS, HTML, );

impl Render for CompareReport {
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
                    c.name.clone(),
                    c.command.clone(),
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
                        None if i == self.reference => "reference".into(),
                        None => String::new(),
                    },
                    v.and_then(|v| v.runs_needed)
                        .map(|n| n.to_string())
                        .unwrap_or_default(),
                ]);
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
                     Holm-adjusted over the comparison's figures",
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
}
