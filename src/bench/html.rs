//! `--html FILE`: one self-contained page (no scripts, no external files)
//! with hand-written SVG plots of the same [`BenchReport`] every other
//! format renders — each benchmark's plots as its `BENCH` declares them
//! ([`super::spec::Plot`]: bars, or sweep lines on log axes, with the
//! sysfs cache sizes marked where asked) — and the machine's description.

use std::fmt::Write as _;
use std::io::{self, Write};

use super::figure::Figure;
use super::format::{format_ns, format_value, format_x, implausible_text};
use super::model::{BenchReport, BenchResult};
use super::spec::{Marks, Plot, PlotKind};
use crate::units::human_bytes;

const W: f64 = 760.0;
const H: f64 = 340.0;
const ML: f64 = 70.0;
const MR: f64 = 190.0;
const MT: f64 = 30.0;
const MB: f64 = 50.0;
const COLORS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf",
];

/// Escapes text for HTML and SVG.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A line series: its name and (x, y) points.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

fn log_ticks(lo: f64, hi: f64, base: f64) -> Vec<f64> {
    let mut t = Vec::new();
    if lo <= 0.0 || hi <= 0.0 || !lo.is_finite() || !hi.is_finite() {
        return t;
    }
    let mut v = base.powf(lo.log(base).floor());
    while v <= hi * 1.0001 && t.len() < 64 {
        if v >= lo / 1.0001 {
            t.push(v);
        }
        v *= base;
    }
    t
}

/// A line plot with log-scaled axes (x base `x_base`, y base 10), vertical
/// markers at `marks`, a legend on the right. (Each argument is one plain
/// piece of the picture; a struct to carry them would only rename them.)
#[allow(clippy::too_many_arguments)]
pub fn line_plot(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
    marks: &[(f64, String)],
    x_base: f64,
    fmt_x: &dyn Fn(f64) -> String,
    fmt_y: &dyn Fn(f64) -> String,
) -> String {
    let pts: Vec<(f64, f64)> = series
        .iter()
        .flat_map(|s| s.points.iter().copied())
        .filter(|(x, y)| *x > 0.0 && *y > 0.0 && x.is_finite() && y.is_finite())
        .collect();
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="plot" width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img"><title>{}</title><text x="{}" y="18" class="t">{}</text>"#,
        esc(title),
        ML,
        esc(title)
    );
    if pts.is_empty() {
        let _ = write!(
            svg,
            r#"<text x="{ML}" y="{}">no data</text></svg>"#,
            H / 2.0
        );
        return svg;
    }
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for (x, y) in &pts {
        x0 = x0.min(*x);
        x1 = x1.max(*x);
        y0 = y0.min(*y);
        y1 = y1.max(*y);
    }
    let y0 = 10f64.powf(y0.log10().floor());
    let y1 = 10f64.powf(y1.log10().ceil()).max(y0 * 10.0);
    let x1 = if x1 <= x0 { x0 * x_base } else { x1 };
    let pw = W - ML - MR;
    let ph = H - MT - MB;
    let sx = |x: f64| ML + (x.ln() - x0.ln()) / (x1.ln() - x0.ln()) * pw;
    let sy = |y: f64| MT + ph - (y.ln() - y0.ln()) / (y1.ln() - y0.ln()) * ph;
    let _ = write!(
        svg,
        r##"<rect x="{ML}" y="{MT}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>"##
    );
    for t in log_ticks(y0, y1, 10.0) {
        let y = sy(t);
        let _ = write!(
            svg,
            r##"<line x1="{ML}" x2="{}" y1="{y:.1}" y2="{y:.1}" stroke="#eee"/><text x="{}" y="{:.1}" class="yl">{}</text>"##,
            ML + pw,
            ML - 4.0,
            y + 4.0,
            esc(&fmt_y(t))
        );
    }
    let xt = log_ticks(x0, x1, x_base);
    let every = xt.len().div_ceil(9).max(1);
    for t in xt.iter().step_by(every) {
        let x = sx(*t);
        let _ = write!(
            svg,
            r##"<line x1="{x:.1}" x2="{x:.1}" y1="{MT}" y2="{}" stroke="#eee"/><text x="{x:.1}" y="{}" class="xl">{}</text>"##,
            MT + ph,
            MT + ph + 14.0,
            esc(&fmt_x(*t))
        );
    }
    for (m, label) in marks {
        if *m < x0 || *m > x1 {
            continue;
        }
        let x = sx(*m);
        let _ = write!(
            svg,
            r##"<line class="mark" x1="{x:.1}" x2="{x:.1}" y1="{MT}" y2="{}" stroke="#555" stroke-dasharray="4 3"/><text x="{:.1}" y="{}" class="ml">{}</text>"##,
            MT + ph,
            x + 3.0,
            MT + 12.0,
            esc(label)
        );
    }
    for (i, s) in series.iter().enumerate() {
        let color = COLORS.get(i % COLORS.len()).copied().unwrap_or("#000");
        // Past the palette, dashes keep series apart (events has 9).
        let dash = match i / COLORS.len() {
            0 => "",
            1 => r#" stroke-dasharray="7 4""#,
            _ => r#" stroke-dasharray="2 3""#,
        };
        let path: Vec<String> = s
            .points
            .iter()
            .filter(|(x, y)| *x > 0.0 && *y > 0.0)
            .map(|(x, y)| format!("{:.1},{:.1}", sx(*x), sy(*y)))
            .collect();
        if path.is_empty() {
            continue;
        }
        let _ = write!(
            svg,
            r#"<polyline class="series" fill="none" stroke="{color}"{dash} stroke-width="2" points="{}"/>"#,
            path.join(" ")
        );
        for p in &path {
            if let Some((x, y)) = p.split_once(',') {
                let _ = write!(svg, r#"<circle cx="{x}" cy="{y}" r="2.5" fill="{color}"/>"#);
            }
        }
        let ly = MT + 10.0 + i as f64 * 18.0;
        let _ = write!(
            svg,
            r#"<line x1="{}" x2="{}" y1="{ly}" y2="{ly}" stroke="{color}"{dash} stroke-width="3"/><text x="{}" y="{}" class="lg">{}</text>"#,
            ML + pw + 10.0,
            ML + pw + 30.0,
            ML + pw + 35.0,
            ly + 4.0,
            esc(&s.name)
        );
    }
    let _ = write!(
        svg,
        r#"<text x="{}" y="{}" class="ax">{}</text><text x="14" y="{}" class="ax" transform="rotate(-90 14 {})">{}</text></svg>"#,
        ML + pw / 2.0,
        H - 8.0,
        esc(x_label),
        MT + ph / 2.0,
        MT + ph / 2.0,
        esc(y_label)
    );
    svg
}

/// Horizontal bars (linear scale from 0), one per (label, value).
pub fn bar_plot(title: &str, bars: &[(String, f64)], fmt: &dyn Fn(f64) -> String) -> String {
    let row = 22.0;
    let height = MT + 10.0 + row * bars.len().max(1) as f64;
    let label_w = 250.0;
    let pw = W - label_w - 110.0;
    let max = bars.iter().map(|b| b.1).fold(0.0f64, f64::max);
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="plot" width="{W}" height="{height}" viewBox="0 0 {W} {height}" role="img"><title>{}</title><text x="10" y="18" class="t">{}</text>"#,
        esc(title),
        esc(title)
    );
    for (i, (label, v)) in bars.iter().enumerate() {
        let y = MT + i as f64 * row;
        let w = if max > 0.0 && *v > 0.0 {
            v / max * pw
        } else {
            0.0
        };
        let color = COLORS.get(i % COLORS.len()).copied().unwrap_or("#000");
        let _ = write!(
            svg,
            r#"<text x="{}" y="{:.1}" class="yl">{}</text><rect class="bar" x="{label_w}" y="{y:.1}" width="{w:.1}" height="{:.1}" fill="{color}"/><text x="{:.1}" y="{:.1}" class="lg">{}</text>"#,
            label_w - 6.0,
            y + 14.0,
            esc(label),
            row - 6.0,
            label_w + w + 5.0,
            y + 14.0,
            esc(&fmt(*v))
        );
    }
    svg.push_str("</svg>");
    svg
}

/// One plot a benchmark declared, of its measured figures (implausible
/// ones are left out: `median()` is `None` for them).
fn plot(r: &BenchReport, b: &BenchResult, p: &Plot) -> String {
    let keep = |f: &Figure| f.id.starts_with(p.figures);
    // Values in the unit of the figures drawn (ns, GB/s, …).
    let unit = b
        .figures
        .iter()
        .find(|f| keep(f) && f.median().is_some())
        .map(|f| f.value.clone());
    let fmt_y = |v: f64| match &unit {
        Some(u) => format_value(u, v),
        None => format_ns(v),
    };
    match p.kind {
        PlotKind::Bars => {
            let bars: Vec<(String, f64)> = b
                .figures
                .iter()
                .filter(|f| keep(f))
                .filter_map(|f| f.median().map(|m| (f.label.clone(), m)))
                .collect();
            bar_plot(p.title, &bars, &fmt_y)
        }
        PlotKind::Sweep {
            x_label,
            y_label,
            x_base,
            marks,
        } => {
            let series = sweep_series(b, &keep);
            let bytes = b
                .figures
                .iter()
                .find(|f| keep(f))
                .is_some_and(|f| f.x_unit.as_deref() == Some("bytes"));
            let fmt_x = |x: f64| {
                if bytes {
                    bytes_label(x)
                } else {
                    format!("{}", x.max(0.0) as u64)
                }
            };
            let marks: Vec<(f64, String)> = match marks {
                Marks::None => Vec::new(),
                Marks::CacheSizes => super::machine::data_caches(&r.machine.caches)
                    .iter()
                    .map(|c| {
                        (
                            c.size_bytes as f64,
                            format!(
                                "L{} {}",
                                c.level,
                                human_bytes(c.size_bytes).replace(".0 ", " ")
                            ),
                        )
                    })
                    .collect(),
            };
            line_plot(
                p.title, x_label, y_label, &series, &marks, x_base, &fmt_x, &fmt_y,
            )
        }
    }
}

/// Sweep figures grouped by label, in order of appearance.
fn sweep_series(b: &BenchResult, keep: &dyn Fn(&Figure) -> bool) -> Vec<Series> {
    let mut out: Vec<Series> = Vec::new();
    for f in b.figures.iter().filter(|f| keep(f)) {
        let (Some(x), Some(y)) = (f.x, f.median()) else {
            continue;
        };
        match out.iter_mut().find(|s| s.name == f.label) {
            Some(s) => s.points.push((x as f64, y)),
            None => out.push(Series {
                name: f.label.clone(),
                points: vec![(x as f64, y)],
            }),
        }
    }
    for s in &mut out {
        s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    out
}

fn bytes_label(x: f64) -> String {
    format_x(x.max(0.0) as u64, Some("bytes"))
}

fn machine_table(r: &BenchReport) -> String {
    let m = &r.machine;
    let c = &r.harness.calibration;
    let rows: Vec<(&str, String)> = vec![
        (
            "CPU",
            m.cpu_model.clone().unwrap_or_else(|| "unknown".into()),
        ),
        ("logical CPUs", m.logical_cpus.to_string()),
        (
            "kernel",
            m.kernel.clone().unwrap_or_else(|| "unknown".into()),
        ),
        (
            "hypervisor",
            m.hypervisor
                .clone()
                .unwrap_or_else(|| "none detected".into()),
        ),
        (
            "TSC",
            m.tsc_hz
                .map_or("unavailable".into(), |hz| format!("{:.1} MHz", hz / 1e6)),
        ),
        (
            "core clock (measured)",
            m.core_mhz
                .map_or("unavailable".into(), |v| format!("{v:.0} MHz")),
        ),
        (
            "clocksource",
            m.clocksource.clone().unwrap_or_else(|| "unknown".into()),
        ),
        (
            "governor",
            m.governor
                .clone()
                .unwrap_or_else(|| "unavailable (no cpufreq)".into()),
        ),
        (
            "THP",
            m.thp_enabled.clone().unwrap_or_else(|| "unknown".into()),
        ),
        (
            "memory",
            m.mem_total_bytes.map_or("unknown".into(), human_bytes),
        ),
        (
            "caches (sysfs)",
            m.caches
                .iter()
                .map(|c| format!("L{} {} {}", c.level, c.kind, human_bytes(c.size_bytes)))
                .collect::<Vec<_>>()
                .join(", "),
        ),
        (
            "timer",
            format!(
                "{}: read {}, resolution {}, empty loop {}",
                c.timer_source.describe(),
                format_ns(c.timer_overhead_ns),
                format_ns(c.timer_resolution_ns),
                format_ns(c.loop_overhead_ns)
            ),
        ),
        (
            "run",
            format!(
                "{:?} mode, {:.1} s, {}",
                r.mode,
                r.duration_ms as f64 / 1000.0,
                if r.noise.noisy {
                    format!("NOISY: {}", r.noise.reasons.join("; "))
                } else {
                    "quiet".into()
                }
            ),
        ),
    ];
    let mut s = String::from(r#"<table class="machine">"#);
    for (k, v) in rows {
        let _ = write!(s, "<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(&v));
    }
    s.push_str("</table>");
    s
}

fn figures_table(r: &BenchReport) -> String {
    let mut s = String::from(
        "<table class=\"figures\"><tr><th>benchmark</th><th>figure</th><th>x</th><th>median</th><th>cv</th><th>min</th><th>p95</th><th>definition</th></tr>",
    );
    for b in &r.benchmarks {
        for f in &b.figures {
            let (med, min, p95) = match (f.measured(), &f.implausible) {
                (Some(sm), _) => (
                    format_value(&f.value, sm.median),
                    format_value(&f.value, sm.min),
                    format_value(&f.value, sm.p95),
                ),
                (None, Some(why)) if f.value.summary().is_some() => {
                    (implausible_text(why), String::new(), String::new())
                }
                (None, _) => ("unavailable".into(), String::new(), String::new()),
            };
            let _ = write!(
                s,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&b.name),
                esc(&f.label),
                esc(&f
                    .x
                    .map_or(String::new(), |x| format_x(x, f.x_unit.as_deref()))),
                esc(&med),
                f.cv.filter(|_| f.measured().is_some())
                    .map_or("-".into(), |c| format!("{:.1}%", c * 100.0)),
                esc(&min),
                esc(&p95),
                esc(&f.definition)
            );
        }
    }
    s.push_str("</table>");
    s
}

/// Renders the page.
pub fn render(r: &BenchReport) -> String {
    let mut body = String::new();
    let _ = write!(body, "<h1>tally bench</h1>{}", machine_table(r));
    for b in &r.benchmarks {
        let Some(spec) = super::registry::find(&b.name) else {
            continue;
        };
        let mut heading = "";
        for p in spec.plots {
            if p.heading != heading {
                heading = p.heading;
                let _ = write!(body, "<h2>{}</h2>", esc(heading));
            }
            body.push_str(&plot(r, b, p));
        }
        if let (Some(a), false) = (&b.memlat, spec.plots.is_empty()) {
            body.push_str("<pre>");
            for l in a.lines() {
                let _ = writeln!(body, "{}", esc(&l));
            }
            body.push_str("</pre>");
        }
    }
    if let Some(b) = &r.baseline {
        let _ = write!(
            body,
            "<h2>Against the baseline</h2><p>{}</p><table class=\"baseline\"><tr><th>figure</th><th>unit</th><th>baseline</th><th>this run</th><th>this / baseline</th></tr>",
            esc(&b.describe())
        );
        for c in &b.comparisons {
            let _ = write!(
                body,
                "<tr><td>{}</td><td>{}</td><td>{:.4}</td><td>{:.4}</td><td>{:.2}×{}</td></tr>",
                esc(&c.id),
                esc(&c.unit),
                c.old_median,
                c.new_median,
                c.ratio,
                if c.higher_is_better {
                    " (higher is better)"
                } else {
                    ""
                }
            );
        }
        body.push_str("</table>");
    }
    let _ = write!(body, "<h2>Every figure</h2>{}", figures_table(r));
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>tally bench — {}</title><style>\
body{{font-family:sans-serif;margin:2em;max-width:1100px}}\
table{{border-collapse:collapse;font-size:13px;margin:1em 0}}\
td,th{{border:1px solid #ccc;padding:2px 6px;text-align:left}}\
svg.plot{{display:block;margin:1em 0;background:#fff}}\
.t{{font-weight:bold;font-size:14px}} .yl{{font-size:11px;text-anchor:end}} .xl{{font-size:11px;text-anchor:middle}}\
.lg{{font-size:12px}} .ml{{font-size:11px;fill:#555}} .ax{{font-size:12px;text-anchor:middle}}\
</style></head><body>{}</body></html>\n",
        esc(r.machine.cpu_model.as_deref().unwrap_or("machine")),
        body
    )
}

/// Writes the page to `out`.
pub fn write(r: &BenchReport, out: &mut dyn Write) -> io::Result<()> {
    out.write_all(render(r).as_bytes())?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn implausible_figures_stay_out_of_plots_and_are_explained() {
        let r = super::super::report::sample_report();
        let page = render(&r);
        // membw: the one-thread bar only; the all-threads figure fails the
        // bound and shows as text in the table of every figure.
        let membw = page.split("<h2>membw</h2>").nth(1).unwrap();
        let plot = membw.split("</svg>").next().unwrap();
        assert_eq!(plot.matches("class=\"bar\"").count(), 1);
        assert!(!plot.contains("1000.00 GB/s"));
        assert!(page.contains("implausible: 3 of 3 samples"));
        assert!(page.contains("; excluded"));
    }

    #[test]
    fn escapes_markup() {
        assert_eq!(esc("<a & \"b\">"), "&lt;a &amp; &quot;b&quot;&gt;");
    }

    #[test]
    fn line_plot_has_one_polyline_per_series_and_marks() {
        let s = vec![
            Series {
                name: "a".into(),
                points: vec![(1024.0, 1.0), (2048.0, 4.0), (4096.0, 90.0)],
            },
            Series {
                name: "b<".into(),
                points: vec![(1024.0, 2.0)],
            },
        ];
        let svg = line_plot(
            "t",
            "x",
            "y",
            &s,
            &[(2048.0, "L1".into())],
            2.0,
            &bytes_label,
            &format_ns,
        );
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert_eq!(svg.matches("class=\"mark\"").count(), 1);
        assert_eq!(svg.matches("<circle").count(), 4);
        assert!(svg.contains("b&lt;"));
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
    }

    #[test]
    fn empty_and_degenerate_plots_do_not_panic() {
        let svg = line_plot("t", "x", "y", &[], &[], 2.0, &bytes_label, &format_ns);
        assert!(svg.contains("no data"));
        let one = vec![Series {
            name: "a".into(),
            points: vec![(5.0, 5.0), (0.0, -1.0)],
        }];
        let svg = line_plot("t", "x", "y", &one, &[], 2.0, &bytes_label, &format_ns);
        assert!(!svg.contains("NaN"));
        let bars = bar_plot("b", &[("x".into(), 0.0), ("y".into(), 2.0)], &format_ns);
        assert_eq!(bars.matches("class=\"bar\"").count(), 2);
        assert!(!bars.contains("NaN"));
    }

    #[test]
    fn log_ticks_cover_the_range() {
        assert_eq!(log_ticks(1.0, 1000.0, 10.0).len(), 4);
        assert!(log_ticks(0.0, 10.0, 10.0).is_empty());
    }
}
