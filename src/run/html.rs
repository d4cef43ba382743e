//! `tally run -n N --format html`: the repeated runs drawn with the plot
//! kit of [`crate::report::html`] — a histogram of the wall time and every
//! headline figure in run order.

use std::fmt::Write as _;

use super::report::{FIGURES, RunReport};
use crate::report::html::{FEW, Series, esc, histogram, page, run_order_plot};
use crate::report::svg::ChartUnit;

/// Every figure in a table: the run's value, or over repeated runs the
/// min, median, mean and max, as the human report gives them.
fn figures_table(r: &RunReport) -> String {
    let mut t = String::from("<table class=\"figures\">");
    let one = r.runs.len() == 1;
    if one {
        t.push_str("<tr><th>figure</th><th>value</th></tr>");
    } else {
        t.push_str("<tr><th>figure</th><th>min</th><th>median</th><th>mean</th><th>max</th></tr>");
    }
    for fig in FIGURES {
        // User and kernel cpu: split by the kernel's clock tick.
        let label = if matches!(fig.key, "user_us" | "system_us") {
            format!("{} ≈ (tick-sampled)", fig.label)
        } else {
            fig.label.to_string()
        };
        if one {
            let Some(v) = r.runs.first().and_then(|run| fig.value(run)) else {
                continue;
            };
            let _ = write!(
                t,
                "<tr><td>{}</td><td class=\"n\">{}</td></tr>",
                esc(&label),
                esc(&fig.human(v as f64))
            );
        } else if let Some(s) = r.summary_of(fig.key) {
            let _ = write!(
                t,
                "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
                esc(&label),
                esc(&fig.human(s.min)),
                esc(&fig.human(s.median)),
                esc(&fig.human(s.mean)),
                esc(&fig.human(s.max))
            );
        }
    }
    t.push_str("</table>");
    t
}

/// The page.
pub fn render(r: &RunReport) -> String {
    let mut body = String::new();
    let command = r.command.join(" ");
    let _ = write!(
        body,
        "<h1>tally run</h1><p><code>{}</code>: {} run{}{}.</p>",
        esc(&command),
        r.runs.len(),
        if r.runs.len() == 1 { "" } else { "s" },
        if r.warmup_runs > 0 {
            format!(" after {} warm-up", r.warmup_runs)
        } else {
            String::new()
        }
    );
    body.push_str(&figures_table(r));
    for fig in FIGURES.iter().filter(|f| f.headline) {
        let raw: Vec<f64> = r
            .runs
            .iter()
            .filter_map(|x| fig.value(x))
            .map(|v| v as f64)
            .collect();
        if raw.is_empty() {
            continue;
        }
        let chart = ChartUnit::for_values(fig.unit, &raw);
        let values: Vec<f64> = raw.iter().map(|v| chart.apply(*v)).collect();
        let label = match chart.symbol() {
            "" => fig.label.to_string(),
            s => format!("{} ({s})", fig.label),
        };
        if values.len() < 2 && fig.key != "wall_ns" {
            continue;
        }
        let _ = write!(body, "<h2>{}</h2>", esc(fig.label));
        if fig.key == "wall_ns" {
            let bins = (values.len() as f64).sqrt().ceil().clamp(5.0, 40.0) as usize;
            let title = match values.len() {
                1 => format!("{} of the one run", fig.label),
                n if n < FEW => format!("{} of each of the {n} runs", fig.label),
                n => format!("{} over {n} runs", fig.label),
            };
            body.push_str(&histogram(&title, &label, &values, bins));
        }
        // One run has no order to draw: the table holds its figures.
        if values.len() >= 2 {
            let series = [Series {
                spread: Vec::new(),
                name: command.clone(),
                points: values
                    .iter()
                    .enumerate()
                    .map(|(i, v)| ((i + 1) as f64, *v))
                    .collect(),
            }];
            body.push_str(&run_order_plot(
                &format!("{} in run order", fig.label),
                &label,
                &series,
                &[0],
            ));
        }
    }
    if !r.warnings.is_empty() {
        body.push_str("<h2>Warnings</h2><ul>");
        for w in &r.warnings {
            let _ = write!(body, "<li>{}</li>", esc(w));
        }
        body.push_str("</ul>");
    }
    page(&format!("tally run — {command}"), &body)
}
