//! `--html FILE`: one self-contained page (no scripts, no external files)
//! with hand-written SVG plots of the same [`BenchReport`] every other
//! format renders — each benchmark's plots as its `BENCH` declares them
//! ([`super::spec::Plot`]: bars, or sweep lines on log axes, with the
//! sysfs cache sizes marked where asked) — and the machine's description.

use std::fmt::Write as _;
use std::io::{self, Write};

pub use crate::report::html::{Series, esc, line_plot};
use crate::report::svg::{BarChart, BarRow, bar_chart, time_scale};

use super::figure::Figure;
use super::format::{format_ns, format_value, format_x, implausible_text, scale_for};
use super::model::{BenchReport, BenchResult};
use super::spec::{Marks, Plot, PlotKind};
use crate::units::human_bytes;

/// `1.00 µs` → `1 µs`, `2.50 GB/s` → `2.5 GB/s`: a value's trailing
/// zeros after the decimal point left out.
fn axis_label(text: &str) -> String {
    let (number, unit) = text.split_once(' ').unwrap_or((text, ""));
    let mut n = number.to_string();
    if n.contains('.') {
        while n.ends_with('0') {
            n.pop();
        }
        if n.ends_with('.') {
            n.pop();
        }
    }
    if unit.is_empty() {
        n
    } else {
        format!("{n} {unit}")
    }
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
    // An axis's ticks are round numbers: written without the zeros a
    // figure's precision adds (a regression: "1.00 µs", "100.0 ns" and
    // "100.00 ms" on one axis; now "1 µs", "100 ns", "100 ms").
    let fmt_y = |v: f64| {
        axis_label(&match &unit {
            Some(u) => format_value(u, v),
            None => format_ns(v),
        })
    };
    match p.kind {
        PlotKind::Bars => bars(b, p, &keep),
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

/// A bar chart of the figures `keep` selects: one unit for all (that of
/// the largest, ns, µs or ms for times), the median as the bar with its
/// value at the bar's end, min to p95 as the whisker; one colour, the
/// legend saying what bar and whisker are.
fn bars(b: &BenchResult, p: &Plot, keep: &dyn Fn(&Figure) -> bool) -> String {
    let kept: Vec<&Figure> = b.figures.iter().filter(|f| keep(f)).collect();
    let kind = kept
        .iter()
        .find(|f| f.measured().is_some())
        .map(|f| &f.value);
    // The unit the medians read best in (the axis reaches the whiskers).
    let max = kept
        .iter()
        .filter_map(|f| f.measured().map(|s| s.median))
        .fold(0.0f64, f64::max);
    let scale = match kind {
        Some(super::figure::Value::Ns(_)) | None => {
            let t = time_scale(max);
            super::format::Scale {
                unit: t.unit,
                divisor: t.divisor,
            }
        }
        Some(v) => scale_for(v, max),
    };
    let rows = kept
        .iter()
        .map(|f| {
            let label = match f.unstable() {
                Some(p) => format!("{} (unstable ±{p:.0}%)", f.label),
                None => f.label.clone(),
            };
            let same_kind =
                kind.is_some_and(|k| std::mem::discriminant(k) == std::mem::discriminant(&f.value));
            let m = f.measured().filter(|_| same_kind);
            BarRow {
                label,
                value: m.map(|s| s.median / scale.divisor),
                spread: m.map(|s| (s.min / scale.divisor, s.p95 / scale.divisor)),
                key: 0,
                missing: if f.implausible.is_some() {
                    "implausible: excluded (see the table)".into()
                } else {
                    "unavailable".into()
                },
            }
        })
        .collect();
    let axis = format!("median ({})", scale.unit);
    bar_chart(&BarChart {
        title: p.title,
        axis: &axis,
        unit: scale.unit,
        rows,
        keys: vec![(0, "median of the samples".into())],
        whisker: Some("min to p95"),
    })
}

/// Sweep figures grouped by label, in order of appearance.
fn sweep_series(b: &BenchResult, keep: &dyn Fn(&Figure) -> bool) -> Vec<Series> {
    let mut out: Vec<Series> = Vec::new();
    for f in b.figures.iter().filter(|f| keep(f)) {
        let (Some(x), Some(m)) = (f.x, f.measured()) else {
            continue;
        };
        let x = x as f64;
        match out.iter_mut().find(|s| s.name == f.label) {
            Some(s) => {
                s.points.push((x, m.median));
                s.spread.push((x, m.min, m.p95));
            }
            None => out.push(Series {
                spread: vec![(x, m.min, m.p95)],
                name: f.label.clone(),
                points: vec![(x, m.median)],
            }),
        }
    }
    for s in &mut out {
        s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
        s.spread.sort_by(|a, b| a.0.total_cmp(&b.0));
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
            m.core_mhz.map_or("unavailable".into(), |v| {
                format!("{} MHz", crate::units::thousands_f(v))
            }),
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
                r.noise.describe()
            ),
        ),
    ];
    let mut rows = rows;
    if let Some(line) = r.noise.describe_reference() {
        rows.push(("reference", line));
    }
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
                match f.unstable() {
                    Some(p) => format!("unstable ±{p:.0}%"),
                    None =>
                        f.cv.filter(|_| f.measured().is_some())
                            .map_or("-".into(), |c| format!("{:.1}%", c * 100.0)),
                },
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
    let _ = write!(
        body,
        "<h1>tally bench</h1>{}<p>Each bar and point is a figure's median; its whisker spans its samples from the smallest to the 95th percentile (the table's min and p95). Implausible figures are left out.</p>",
        machine_table(r)
    );
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
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}×{}</td></tr>",
                esc(&c.id),
                esc(&c.unit),
                crate::units::decimals(c.old_median, 4),
                crate::units::decimals(c.new_median, 4),
                crate::units::decimals(c.ratio, 2),
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
    crate::report::html::page(
        &format!(
            "tally bench — {}",
            r.machine.cpu_model.as_deref().unwrap_or("machine")
        ),
        &body,
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
    fn axis_ticks_carry_no_trailing_zeros() {
        assert_eq!(axis_label(&format_ns(1000.0)), "1 µs");
        assert_eq!(axis_label(&format_ns(100.0)), "100 ns");
        assert_eq!(axis_label(&format_ns(1e8)), "100 ms");
        assert_eq!(axis_label(&format_ns(2.5)), "2.5 ns");
        assert_eq!(axis_label("1,000 MHz"), "1,000 MHz");
    }

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
                spread: Vec::new(),
                name: "a".into(),
                points: vec![(1024.0, 1.0), (2048.0, 4.0), (4096.0, 90.0)],
            },
            Series {
                spread: Vec::new(),
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
            spread: Vec::new(),
            name: "a".into(),
            points: vec![(5.0, 5.0), (0.0, -1.0)],
        }];
        let svg = line_plot("t", "x", "y", &one, &[], 2.0, &bytes_label, &format_ns);
        assert!(!svg.contains("NaN"));
    }
}
