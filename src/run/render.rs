//! How a [`RunReport`] renders: the human layout ([`super::human`]), the
//! CSV/Markdown table and the Prometheus metrics from [`FIGURES`], and the
//! page ([`super::html`]). Kept apart from the model, so the layouts import
//! the model and the model imports no layout.

use std::io::{self, Write};

use super::report::{FIGURES, RunReport};
use crate::report::{Metric, Render, Style, Table};

// The formats RunReport renders (checked before the command works).
crate::forms_of!(RunReport: Text, Data, Table, Metrics, Page, Runs);

impl Render for RunReport {
    fn human(&self, out: &mut dyn Write, style: Style) -> io::Result<()> {
        super::human::write(self, out, style)
    }

    fn table(&self) -> Table {
        let figures: Vec<_> = FIGURES.iter().filter(|f| f.in_table(&self.runs)).collect();
        let mut headers = vec!["run".to_string()];
        headers.extend(figures.iter().map(|f| f.key.to_string()));
        headers.extend(["exit_code", "signal"].map(String::from));
        let rows = self
            .runs
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let mut row = vec![(i + 1).to_string()];
                row.extend(
                    figures
                        .iter()
                        .map(|f| f.value(r).map(|v| v.to_string()).unwrap_or_default()),
                );
                row.push(r.exit.code.map(|c| c.to_string()).unwrap_or_default());
                row.push(r.exit.signal.clone().unwrap_or_default());
                row
            })
            .collect();
        Table { headers, rows }
    }

    fn metrics(&self) -> Option<Vec<Metric>> {
        use crate::report::prometheus::stem;
        let last = self.runs.last()?;
        let command = self.command.join(" ");
        Some(
            FIGURES
                .iter()
                .filter_map(|f| {
                    let value = match self.summary_of(f.key) {
                        Some(s) => s.median,
                        None => f.value(last)? as f64,
                    };
                    let unit = f.unit;
                    let help = format!(
                        "{} of the command (the median when run repeatedly)",
                        f.label
                    );
                    Some(
                        Metric::gauge(&format!("tally_run_{}", stem(f.key)), unit, help)
                            .with(vec![("command".into(), command.clone())], value),
                    )
                })
                .collect(),
        )
    }

    fn html(&self, out: &mut dyn Write) -> Option<io::Result<()>> {
        Some(out.write_all(super::html::render(self).as_bytes()))
    }

    fn runs(&self) -> Option<Vec<crate::report::hyperfine::TimedCommand<'_>>> {
        Some(vec![crate::report::hyperfine::TimedCommand {
            name: std::borrow::Cow::Owned(self.command.join(" ")),
            parameters: &[],
            // Runs under the simulator were not timed: hyperfine's
            // figures are times.
            runs: self
                .runs
                .iter()
                .filter(|r| !r.simulated())
                .map(super::report::RunRecord::timed)
                .collect(),
            figures: serde_json::to_value(&self.runs).unwrap_or_default(),
        }])
    }
}
