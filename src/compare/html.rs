//! `tally compare --html FILE`: per figure the distributions side by side
//! and the run-order plot, then the table of ratios with their intervals,
//! drawn with the plot kit of [`crate::report::html`].

use std::fmt::Write as _;

use super::report::{CompareReport, Verdict, direction};
use crate::report::html::{
    Group, RatioRow, Series, distribution_plot, esc, page, ratio_table, run_order_plot,
};
use crate::report::unit::Quantity;
use crate::run::report::{FIGURES, Figure};

/// The page.
pub fn render(r: &CompareReport) -> String {
    let mut body = String::new();
    write_commands(&mut body, r);
    let reference = r
        .commands
        .get(r.reference)
        .map(|c| format!("#{} {}", r.reference + 1, c.name))
        .unwrap_or_default();
    let mut rows = Vec::new();
    let mut plots = String::new();
    let mut unchanged = Vec::new();
    for fig in FIGURES {
        // Plotted in the unit people read, so the ticks are round in it.
        let shown = |v: f64| Quantity::new(v, fig.unit).to(fig.show).value;
        let groups: Vec<Group> = r
            .commands
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                c.values(fig).map(|values| Group {
                    name: format!("#{} {}", i + 1, c.name),
                    values: values.into_iter().map(shown).collect(),
                })
            })
            .collect();
        if groups.is_empty() {
            continue;
        }
        let same = r.unchanged(fig.key);
        if same && !fig.headline {
            unchanged.push(fig.label);
            continue;
        }
        rows.extend(ratio_rows(r, fig));
        write_plots(&mut plots, r, fig, &groups);
    }
    let _ = write!(
        body,
        "<h2>Against {}</h2>{}",
        esc(&reference),
        ratio_table(&reference, &rows)
    );
    if !unchanged.is_empty() {
        let _ = write!(
            body,
            "<p class=\"same\">Unchanged: {}.</p>",
            esc(&unchanged.join(", "))
        );
    }
    if !r.warnings.is_empty() {
        body.push_str("<h2>Warnings</h2><ul>");
        for w in &r.warnings {
            let _ = write!(body, "<li>{}</li>", esc(w));
        }
        body.push_str("</ul>");
    }
    let _ = write!(body, "<h2>Every figure</h2>{plots}");
    page("tally compare", &body)
}

/// The heading, the table of the commands compared, and their verdicts.
fn write_commands(body: &mut String, r: &CompareReport) {
    let _ = write!(
        body,
        "<h1>tally compare</h1><p>{} runs of each command, interleaved (seed {}). {}.</p><table><tr><th>#</th><th>name</th><th>command</th><th>runs</th><th>failed</th></tr>",
        r.runs_per_command,
        r.seed,
        esc(&r.method)
    );
    for (i, c) in r.commands.iter().enumerate() {
        let reference = if i == r.reference { " (reference)" } else { "" };
        let _ = write!(
            body,
            "<tr><td>#{}{reference}</td><td>{}</td><td><code>{}</code></td><td class=\"n\">{}</td><td class=\"n{}\">{}</td></tr>",
            i + 1,
            esc(&c.name),
            esc(&c.command),
            c.runs.len(),
            if c.failed_runs > 0 { " fail" } else { "" },
            c.failed_runs
        );
    }
    body.push_str("</table>");
    let headlines: Vec<&str> = r
        .commands
        .iter()
        .map(|c| c.headline.as_str())
        .filter(|h| !h.is_empty())
        .collect();
    if !headlines.is_empty() {
        body.push_str("<h2>Verdict</h2><ul>");
        for h in headlines {
            let _ = write!(body, "<li>{}</li>", esc(h));
        }
        body.push_str("</ul>");
    }
    body.push_str(&why_bars(r));
}

/// The ratio of each command to the reference in figure `fig`.
fn ratio_rows(r: &CompareReport, fig: &Figure) -> Vec<RatioRow> {
    let mut rows = Vec::new();
    for (i, c) in r.commands.iter().enumerate() {
        if let Some(v) = c.versus(fig.key) {
            rows.push(RatioRow {
                figure: fig.label.into(),
                name: format!("#{} {}", i + 1, c.name),
                ratio: v.ratio,
                low: v.ratio_low,
                high: v.ratio_high,
                p: Some(v.p_adjusted),
                verdict: direction(fig, v.verdict).into(),
                class: match v.verdict {
                    Verdict::Lower => "lower",
                    Verdict::Higher => "higher",
                    _ => "same",
                },
            });
        }
    }
    rows
}

/// Figure `fig`'s distributions (`groups`) and its run-order plot.
fn write_plots(plots: &mut String, r: &CompareReport, fig: &Figure, groups: &[Group]) {
    let shown = |v: f64| Quantity::new(v, fig.unit).to(fig.show).value;
    let unit = fig.show.symbol();
    let y_label = if unit.is_empty() {
        fig.label.to_string()
    } else {
        format!("{} ({unit})", fig.label)
    };
    let show = |v: f64| crate::units::thousands_f(v);
    let series: Vec<Series> = r
        .commands
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let v = c.values(fig)?;
            Some(Series {
                spread: Vec::new(),
                name: format!("#{} {}", i + 1, c.name),
                points: c
                    .run_order
                    .iter()
                    .zip(v)
                    .map(|(o, y)| (f64::from(*o), shown(y)))
                    .collect(),
            })
        })
        .collect();
    let _ = write!(
        plots,
        "<h3>{}</h3><div class=\"row\">{}{}</div>",
        esc(fig.label),
        distribution_plot(fig.label, &y_label, groups, &show),
        run_order_plot(
            &format!("{} in run order", fig.label),
            &y_label,
            &series,
            &show
        )
    );
}

/// Where each command's wall time went: one stacked bar per command, each
/// part the median over its runs, as shares of their sum (the parts of a
/// one-task command add up to its wall time; a tree's are task time). A
/// part measured in no run is left out and named. Empty when no run has
/// a breakdown.
fn why_bars(r: &CompareReport) -> String {
    const COLORS: [&str; 6] = [
        "#1f77b4", "#aec7e8", "#d62728", "#ff7f0e", "#9467bd", "#c7c7c7",
    ];
    let mut out = String::new();
    for (i, c) in r.commands.iter().enumerate() {
        let whys: Vec<&crate::run::report::Why> =
            c.runs.iter().filter_map(|r| r.why.as_ref()).collect();
        let Some(first) = whys.first() else {
            continue;
        };
        let labels = first.parts().map(|p| p.label);
        let medians: Vec<Option<f64>> = (0..labels.len())
            .map(|k| {
                let mut v: Vec<f64> = whys
                    .iter()
                    .filter_map(|w| w.parts()[k].ns)
                    .map(|ns| ns as f64)
                    .collect();
                v.sort_by(f64::total_cmp);
                crate::stats::median_sorted(&v)
            })
            .collect();
        let sum: f64 = medians.iter().flatten().sum();
        if sum <= 0.0 {
            continue;
        }
        if out.is_empty() {
            out.push_str("<h2>Where the wall time went</h2><p>Medians over the runs, as shares of their sum.</p>");
        }
        let _ = write!(
            out,
            "<p>#{} {}</p><div style=\"display:flex;height:1.4em;max-width:60em;border:1px solid #999\">",
            i + 1,
            esc(&c.name)
        );
        let mut legend = String::new();
        let mut missing = Vec::new();
        for ((label, median), color) in labels.iter().zip(&medians).zip(COLORS) {
            let Some(m) = median else {
                missing.push(*label);
                continue;
            };
            let share = m / sum * 100.0;
            let _ = write!(
                out,
                "<div title=\"{label}: {share:.1}%\" style=\"width:{share:.3}%;background:{color}\"></div>"
            );
            let _ = write!(
                legend,
                "<span style=\"color:{color}\">&#9632;</span> {label} {share:.0}% ",
            );
        }
        out.push_str("</div><p>");
        out.push_str(&legend);
        if !missing.is_empty() {
            let _ = write!(out, "(unavailable: {})", esc(&missing.join(", ")));
        }
        out.push_str("</p>");
    }
    out
}
