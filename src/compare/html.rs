//! `tally compare --html FILE`: first each command's ratio to the
//! reference with its interval, charted; then per figure the distributions
//! side by side and the run-order plot, and the table of ratios,
//! drawn with the plot kit of [`crate::report::html`].

use std::fmt::Write as _;

use super::prose::{interval_text, point_ratio, ratio_cells};
use super::report::{CompareReport, Verdict};
use crate::report::html::{
    Group, RatioRow, Series, distribution_plot, esc, page, ratio_table, run_order_plot,
};
use crate::report::svg::{ChartUnit, RatioBar, distinct_labels, ratio_chart};
use crate::run::report::{FIGURES, Figure};

/// Figures the kernel samples at its clock tick (user and kernel cpu: a
/// run shorter than a tick can read 0): approximate, so left out of the
/// plots, marked in the table of ratios.
const TICK_SAMPLED: [&str; 2] = ["user_us", "system_us"];

/// What the dot of the chart of ratios is: the report's ratio, the
/// Hodges–Lehmann estimate, which is not the ratio of the medians (a
/// regression: the legend said "ratio of medians" beside 1.008× for
/// medians of 1,568 and 1,604 KiB).
pub const DOT: &str = "the ratio, Hodges–Lehmann: the median of the ratios of every run of the \
     command to every run of the reference (not the ratio of the medians)";

/// Each command's label on the page: `#N` and its name, with what the
/// names share at the start and end elided when they are long.
fn labels(r: &CompareReport) -> Vec<String> {
    let names: Vec<String> = r.commands.iter().map(|c| c.name.clone()).collect();
    // Short enough for a box's label and a legend entry (16 characters),
    // so the plots keep them whole.
    distinct_labels(&names, 13)
        .into_iter()
        .enumerate()
        .map(|(i, n)| format!("#{} {n}", i + 1))
        .collect()
}

/// The page.
pub fn render(r: &CompareReport) -> String {
    let mut body = String::new();
    let labels = labels(r);
    let reference = labels.get(r.reference).cloned().unwrap_or_default();
    let mut rows = Vec::new();
    let mut bars = Vec::new();
    let mut plots = String::new();
    let mut unchanged = Vec::new();
    for fig in FIGURES {
        if r.commands.iter().all(|c| c.values(fig).is_none()) {
            continue;
        }
        let same = r.unchanged(fig.key);
        if same && !fig.headline {
            unchanged.push(fig.label);
            continue;
        }
        let sampled = TICK_SAMPLED.contains(&fig.key);
        rows.extend(ratio_rows(r, fig, sampled));
        if sampled {
            continue;
        }
        // The chart: the headline figures and any other that differs.
        let differs = r
            .commands
            .iter()
            .filter_map(|c| c.versus(fig.key))
            .any(|v| matches!(v.verdict, Verdict::Lower | Verdict::Higher));
        if fig.headline || differs {
            bars.extend(ratio_bars(r, fig, &labels));
        }
        write_plots(&mut plots, r, fig, &labels);
    }
    // One command has nothing to be compared with: no chart of ratios.
    let chart = if r.commands.len() > 1 {
        ratio_chart(
            &format!("each command against {reference}"),
            &bars,
            r.threshold,
            r.interval_level,
            DOT,
        )
    } else {
        String::new()
    };
    write_commands(&mut body, r, &chart);
    let key: Vec<String> = r
        .commands
        .iter()
        .enumerate()
        .map(|(i, c)| format!("#{} <code>{}</code>", i + 1, esc(&c.name)))
        .collect();
    let _ = write!(
        body,
        "<h2>Against {}</h2><p>Every figure; the chart at the top draws the headline figures and those that differ. User and kernel cpu are sampled at the kernel's clock tick (a run shorter than a tick can read 0): approximate (≈), so they are left out of the charts; cpu time, their sum, is measured.</p><p>Commands: {}.</p>{}",
        esc(&reference),
        key.join(", "),
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
    let _ = write!(
        body,
        "<h2>Every figure</h2><p>Colours: one per command, the same in every chart.</p>{plots}"
    );
    page("tally compare", &body)
}

/// The heading, the chart of ratios, the table of the commands compared,
/// and their verdicts.
fn write_commands(body: &mut String, r: &CompareReport, chart: &str) {
    let _ = write!(
        body,
        "<h1>tally compare</h1><p>{} runs of each command, interleaved (seed {}). {}.</p>{chart}<table><tr><th>#</th><th>name</th><th>command</th><th>runs</th><th>failed</th></tr>",
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
    body.push_str(&where_changed(r));
}

/// `+12,000,000`, `-5`: a signed count with its thousands marked.
fn signed(n: i64) -> String {
    let sign = if n < 0 { "-" } else { "+" };
    format!("{sign}{}", crate::units::thousands(n.unsigned_abs()))
}

/// Per command whose instructions changed (`--count=sim`): the functions
/// the change is in, each with its share drawn as a bar (to the right
/// for more work, to the left for less).
fn where_changed(r: &CompareReport) -> String {
    let mut out = String::new();
    for (i, c) in r.commands.iter().enumerate() {
        let Some(a) = &c.instructions_change else {
            continue;
        };
        if out.is_empty() {
            out.push_str(
                "<h2>Where the instructions changed</h2><p>Counted by Cachegrind: the functions \
                 whose instructions changed most, each with its share of the command's whole \
                 change.</p>",
            );
        }
        let _ = write!(
            out,
            "<p>#{} {}: {} instructions</p><table><tr><th>function</th><th>reference</th>\
             <th>this</th><th>change</th><th>share</th><th></th></tr>",
            i + 1,
            esc(&c.name),
            signed(a.change)
        );
        for f in &a.functions {
            let width = (f.share.abs() * 100.0).min(100.0);
            let (color, side) = if f.change >= 0 {
                ("#d62728", "margin-left:50%")
            } else {
                ("#2ca02c", "margin-left:auto;margin-right:50%")
            };
            let _ = write!(
                out,
                "<tr><td><code>{}</code></td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
                 <td class=\"n\">{}</td><td class=\"n\">{:.1}%</td><td style=\"width:16em\">\
                 <div style=\"display:flex\"><div title=\"{:.1}%\" style=\"{side};\
                 width:{:.2}%;height:0.9em;background:{color}\"></div></div></td></tr>",
                esc(&f.function.describe()),
                crate::units::thousands(f.reference_instructions),
                crate::units::thousands(f.function.instructions),
                signed(f.change),
                f.share * 100.0,
                f.share * 100.0,
                width / 2.0
            );
        }
        if a.unattributed != 0 {
            let _ = write!(
                out,
                "<tr><td colspan=\"6\">{} instructions in functions neither profile kept</td></tr>",
                signed(a.unattributed)
            );
        }
        out.push_str("</table>");
    }
    out
}

/// The ratio of each command to the reference in figure `fig`; `sampled`
/// marks the figure approximate.
fn ratio_rows(r: &CompareReport, fig: &Figure, sampled: bool) -> Vec<RatioRow> {
    let mut rows = Vec::new();
    for (i, c) in r.commands.iter().enumerate() {
        if let Some(v) = c.versus(fig.key) {
            let (ratio, interval) = match v.ratio {
                Some(x) if v.verdict != Verdict::TooFewRuns => {
                    ratio_cells(x, v.ratio_low.zip(v.ratio_high))
                }
                Some(x) => (point_ratio(x), String::new()),
                None => ("from 0".into(), String::new()),
            };
            rows.push(RatioRow {
                figure: if sampled {
                    format!("{} ≈ (tick-sampled)", fig.label)
                } else {
                    fig.label.into()
                },
                name: format!("#{}", i + 1),
                ratio,
                interval,
                p: Some(v.p_adjusted),
                verdict: super::summary::verdict_text(fig, v, r.threshold),
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

/// The rows of the ratio chart for figure `fig`: each command with a
/// ratio and its interval.
fn ratio_bars(r: &CompareReport, fig: &Figure, labels: &[String]) -> Vec<RatioBar> {
    r.commands
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let v = c.versus(fig.key)?;
            Some(RatioBar {
                label: format!("{}: {}", fig.label, labels.get(i)?),
                key: i,
                ratio: v.ratio?,
                low: v.ratio_low.unwrap_or(f64::NAN),
                high: v.ratio_high.unwrap_or(f64::NAN),
                words: if v.verdict == Verdict::TooFewRuns {
                    point_ratio(v.ratio?)
                } else {
                    interval_text(v.ratio?, v.ratio_low.zip(v.ratio_high))
                },
            })
        })
        .collect()
}

/// Figure `fig`'s distributions and its run-order plot, in one unit that
/// suits the values (µs, ms or s; KiB, MiB, …).
fn write_plots(plots: &mut String, r: &CompareReport, fig: &Figure, labels: &[String]) {
    let all: Vec<f64> = r
        .commands
        .iter()
        .filter_map(|c| c.values(fig))
        .flatten()
        .collect();
    let chart = ChartUnit::for_values(fig.unit, &all);
    let unit = chart.symbol();
    let y_label = if unit.is_empty() {
        fig.label.to_string()
    } else {
        format!("{} ({unit})", fig.label)
    };
    let mut groups = Vec::new();
    let mut series = Vec::new();
    let mut colors = Vec::new();
    for (i, c) in r.commands.iter().enumerate() {
        let Some(v) = c.values(fig) else {
            continue;
        };
        let v: Vec<f64> = v.into_iter().map(|x| chart.apply(x)).collect();
        let name = labels.get(i).cloned().unwrap_or_default();
        series.push(Series {
            spread: Vec::new(),
            name: name.clone(),
            points: c
                .run_order
                .iter()
                .zip(&v)
                .map(|(o, y)| (f64::from(*o), *y))
                .collect(),
        });
        colors.push(i);
        groups.push(Group {
            name,
            values: v,
            color: i,
        });
    }
    let _ = write!(
        plots,
        "<h3>{}</h3><div class=\"row\">{}{}</div>",
        esc(fig.label),
        distribution_plot(fig.label, &y_label, &groups),
        run_order_plot(
            &format!("{} in run order", fig.label),
            &y_label,
            &series,
            &colors
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
