//! `tally history --html`: a self-contained page (no scripts), one chart
//! per series against commit order: the points (each with its commit,
//! date and value under the pointer, as an SVG `<title>`), lone outliers
//! hollow, each segment's median as a line inside the band of its noise
//! (± 1.4826 MAD of its points), and each change point as a dashed line
//! with its relative change written beside it. Axes have round ticks and
//! the unit in their titles; the same chart reads at 5 points and at 5,000
//! (ticks thinned to about eight, points shrunk, labels of nearby change
//! points stacked so none lies over another).

use std::fmt::Write as _;

use super::report::{HistoryReport, SeriesOut, human_value, p_text, percent};
use super::series::segment_median;
use crate::report::html::{esc, linear_ticks};
use crate::report::svg::{ChartUnit, text, text_width, tick_label};
use crate::report::unit::Unit;

const W: f64 = 900.0;
const H: f64 = 320.0;
/// The least room left of the plot (more for long tick labels).
const ML: f64 = 80.0;
const MR: f64 = 20.0;
const MT: f64 = 46.0;
const MB: f64 = 44.0;
/// The most charts on a page (the series with change points first).
const MAX_CHARTS: usize = 200;

/// The unit a stored unit name stands for.
fn unit(name: &str) -> Unit {
    match name {
        "ns" => Unit::Nanoseconds,
        "us" => Unit::Microseconds,
        "ms" => Unit::Milliseconds,
        "s" => Unit::Seconds,
        "bytes" => Unit::Bytes,
        "kb" => Unit::Kibibytes,
        "mib" => Unit::Mebibytes,
        "gb_per_s" => Unit::GigabytesPerSecond,
        "bytes_per_second" => Unit::BytesPerSecond,
        "mhz" => Unit::Megahertz,
        "hz" => Unit::Hertz,
        "mj" => Unit::Millijoules,
        "joules" => Unit::Joules,
        "ratio" => Unit::Ratio,
        _ => Unit::Count,
    }
}

/// The whole page.
pub fn page(r: &HistoryReport) -> String {
    let mut body = String::new();
    let _ = write!(
        body,
        "<h1>tally history</h1><p>{}</p><p>{}</p>",
        esc(&r.headline()),
        esc(&r.method_line())
    );
    if let Some(c) = &r.check {
        let _ = write!(
            body,
            "<p class=\"{}\">{}</p>",
            if c.exit_status == 0 { "same" } else { "fail" },
            esc(&c.headline)
        );
    }
    let mut order: Vec<&SeriesOut> = r.series.iter().collect();
    order.sort_by_key(|s| s.change_points.is_empty() && s.pending.is_none());
    for s in order.iter().take(MAX_CHARTS) {
        let machine = r
            .machine(s.machine.as_deref())
            .map(|m| format!(" on {} ({})", m.fingerprint, m.described))
            .unwrap_or_default();
        let _ = write!(
            body,
            "<h3>{}{}</h3>",
            esc(&HistoryReport::series_name(s)),
            esc(&machine)
        );
        body.push_str(&chart(r, s));
        body.push_str(&change_table(r, s));
    }
    if order.len() > MAX_CHARTS {
        let _ = write!(
            body,
            "<p>{} more series not drawn: narrow with --command or --figure.</p>",
            order.len() - MAX_CHARTS
        );
    }
    crate::report::html::page("tally history", &body)
}

fn change_table(r: &HistoryReport, s: &SeriesOut) -> String {
    if s.change_points.is_empty() {
        return String::new();
    }
    let mut t = String::from(
        "<table><tr><th>#</th><th>last before</th><th>first after</th><th>before</th><th>after</th><th>change</th><th>p</th></tr>",
    );
    for (k, c) in s.change_points.iter().enumerate() {
        let commit = |i: u32| {
            r.commits
                .get(i as usize)
                .map_or("-".into(), |c| format!("{} {}", c.short(), c.day()))
        };
        let _ = write!(
            t,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n {}\">{}</td><td>{}</td></tr>",
            k + 1,
            esc(&commit(c.last_before)),
            esc(&commit(c.first_after)),
            esc(&human_value(c.median_before, &s.unit)),
            esc(&human_value(c.median_after, &s.unit)),
            if c.worse { "higher" } else { "lower" },
            esc(&percent(c.change)),
            esc(&p_text(c.p_adjusted))
        );
    }
    t.push_str("</table>");
    t
}

/// Where a chart draws: the value range and the point count, and the
/// plotting area.
struct Frame {
    /// The plot's left edge: room for the longest tick label and the
    /// axis title.
    ml: f64,
    n: usize,
    lo: f64,
    hi: f64,
    pw: f64,
    ph: f64,
}

impl Frame {
    fn sx(&self, i: f64) -> f64 {
        self.ml
            + if self.n > 1 {
                i / (self.n - 1) as f64 * self.pw
            } else {
                self.pw / 2.0
            }
    }

    fn sy(&self, v: f64) -> f64 {
        MT + self.ph - (v - self.lo) / (self.hi - self.lo) * self.ph
    }
}

/// Each segment between change points: its start, end, median and
/// spread (1.4826 MAD), the outliers left out.
fn segments(s: &SeriesOut, y: &[f64], outliers: &[usize]) -> Vec<(usize, usize, f64, f64)> {
    let mut bounds: Vec<usize> = s.change_points.iter().map(|c| c.index).collect();
    bounds.insert(0, 0);
    bounds.push(y.len());
    bounds
        .windows(2)
        .map(|w| {
            let m = segment_median(y, outliers, w[0], w[1]);
            let dev: Vec<f64> = (w[0]..w[1])
                .filter(|i| outliers.binary_search(i).is_err())
                .map(|i| (y[i] - m).abs())
                .collect();
            let spread = 1.4826 * segment_median(&dev, &[], 0, dev.len());
            (w[0], w[1], m, if spread.is_finite() { spread } else { 0.0 })
        })
        .collect()
}

/// The frame holding every point and band, on round ticks, and its ticks.
fn frame(y: &[f64], bands: &[(usize, usize, f64, f64)]) -> (Frame, Vec<f64>) {
    let mut lo = y.iter().copied().fold(f64::MAX, f64::min);
    let mut hi = y.iter().copied().fold(f64::MIN, f64::max);
    for b in bands {
        lo = lo.min(b.2 - b.3);
        hi = hi.max(b.2 + b.3);
    }
    if lo >= 0.0 && lo < (hi - lo) * 0.5 {
        lo = 0.0;
    }
    if hi <= lo {
        hi = lo + lo.abs().max(1.0) * 0.1;
        lo -= lo.abs().max(1.0) * 0.1;
    }
    let ticks = linear_ticks(lo, hi, 5);
    let step = ticks.get(1).zip(ticks.first()).map_or(1.0, |(b, a)| b - a);
    let widest = ticks
        .iter()
        .map(|t| text_width(&tick_label(*t, step), 11.0))
        .fold(0.0, f64::max);
    let ml = ML.max(widest + 34.0);
    let f = Frame {
        ml,
        n: y.len(),
        lo: ticks.first().copied().unwrap_or(lo).min(lo),
        hi: ticks.last().copied().unwrap_or(hi).max(hi),
        pw: W - ml - MR,
        ph: H - MT - MB,
    };
    (f, ticks)
}

/// The axes: the box, round ticks on both, and their titles with units.
fn axes(svg: &mut String, f: &Frame, ticks: &[f64], y_label: &str) {
    let (pw, ph, ml) = (f.pw, f.ph, f.ml);
    let step = ticks.get(1).zip(ticks.first()).map_or(1.0, |(b, a)| b - a);
    let _ = write!(
        svg,
        r##"<rect x="{ml}" y="{MT}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>"##
    );
    for t in ticks {
        let yy = f.sy(*t);
        let _ = write!(
            svg,
            r##"<line x1="{ml}" x2="{:.1}" y1="{yy:.1}" y2="{yy:.1}" stroke="#eee"/>"##,
            ml + pw
        );
        text(
            svg,
            ml - 4.0,
            yy + 4.0,
            11.0,
            "end",
            "yl",
            &tick_label(*t, step),
        );
    }
    for t in crate::report::html::integer_ticks(1.0, f.n as f64, 8) {
        text(
            svg,
            f.sx(t - 1.0),
            MT + ph + 14.0,
            11.0,
            "middle",
            "xl",
            &crate::units::thousands(t as u64),
        );
    }
    let mid = MT + ph / 2.0;
    let _ = write!(
        svg,
        r#"<text x="14" y="{mid}" font-size="12" text-anchor="middle" class="ax" transform="rotate(-90 14 {mid})">{}</text>"#,
        esc(y_label)
    );
    let x_label = format!(
        "point, in the order recorded ({} in all)",
        crate::units::thousands(f.n as u64)
    );
    text(svg, ml + pw / 2.0, H - 10.0, 12.0, "middle", "ax", &x_label);
}

/// Each segment's band and median.
fn draw_bands(svg: &mut String, f: &Frame, bands: &[(usize, usize, f64, f64)]) {
    for &(a, b, m, spread) in bands {
        let (x0, x1) = (
            f.sx(a as f64 - 0.5).max(f.ml),
            f.sx(b as f64 - 0.5).min(f.ml + f.pw),
        );
        let (y0, y1) = (f.sy(m + spread).max(MT), f.sy(m - spread).min(MT + f.ph));
        let _ = write!(
            svg,
            r##"<rect class="band" x="{x0:.1}" y="{y0:.1}" width="{:.1}" height="{:.1}" fill="#1f77b4" fill-opacity="0.12"/><line class="segment" x1="{x0:.1}" x2="{x1:.1}" y1="{:.1}" y2="{:.1}" stroke="#1f77b4" stroke-width="2"/>"##,
            (x1 - x0).max(1.0),
            (y1 - y0).max(0.5),
            f.sy(m),
            f.sy(m)
        );
    }
}

/// The points: a line through them, and each with its commit under the
/// pointer; outliers hollow.
fn draw_points(
    svg: &mut String,
    f: &Frame,
    r: &HistoryReport,
    s: &SeriesOut,
    y: &[f64],
    outliers: &[usize],
) {
    let n = y.len();
    let r_dot = if n > 1000 {
        1.2
    } else if n > 200 {
        2.0
    } else {
        3.0
    };
    let path: Vec<String> = (0..n)
        .filter(|i| outliers.binary_search(i).is_err())
        .map(|i| format!("{:.1},{:.1}", f.sx(i as f64), f.sy(y[i])))
        .collect();
    let _ = write!(
        svg,
        r##"<polyline class="series" fill="none" stroke="#555" stroke-opacity="0.35" stroke-width="1" points="{}"/>"##,
        path.join(" ")
    );
    for (i, p) in s.points.iter().enumerate() {
        let c = r.commits.get(p.point as usize);
        let tip = format!(
            "#{} {} {}: {}",
            i + 1,
            c.map_or("-".into(), |c| c.short()),
            c.map_or("", |c| c.recorded_at.as_str()),
            human_value(p.median, &s.unit)
        );
        let outlier = outliers.binary_search(&i).is_ok();
        let _ = write!(
            svg,
            r##"<circle class="{}" cx="{:.1}" cy="{:.1}" r="{r_dot}" fill="{}" stroke="#d62728"><title>{}{}</title></circle>"##,
            if outlier { "outlier" } else { "point" },
            f.sx(i as f64),
            f.sy(y[i]).clamp(MT, MT + f.ph),
            if outlier { "none" } else { "#333" },
            esc(&tip),
            if outlier { " (lone outlier)" } else { "" }
        );
    }
}

/// The chart of one series.
fn chart(r: &HistoryReport, s: &SeriesOut) -> String {
    let cu = ChartUnit::for_values(
        unit(&s.unit),
        &s.points.iter().map(|p| p.median).collect::<Vec<_>>(),
    );
    let y: Vec<f64> = s.points.iter().map(|p| cu.apply(p.median)).collect();
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="plot" width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img"><title>{}</title>"#,
        esc(&HistoryReport::series_name(s))
    );
    if y.is_empty() {
        text(&mut svg, ML, H / 2.0, 12.0, "start", "ml", "no points");
        svg.push_str("</svg>");
        return svg;
    }
    let outliers: Vec<usize> = s.outliers.iter().map(|&i| i as usize).collect();
    let bands = segments(s, &y, &outliers);
    let (f, ticks) = frame(&y, &bands);
    let symbol = cu.symbol();
    let y_label = format!(
        "{}{}",
        s.figure,
        if symbol.is_empty() {
            String::new()
        } else {
            format!(" ({symbol})")
        }
    );
    axes(&mut svg, &f, &ticks, &y_label);
    draw_bands(&mut svg, &f, &bands);
    draw_points(&mut svg, &f, r, s, &y, &outliers);
    change_marks(&mut svg, s, &|i| f.sx(i), f.ph, f.ml);
    svg.push_str("</svg>");
    svg
}

/// The change points (and a pending one): a dashed line each, its change
/// written above the plot, on the first of three rows where it overlaps
/// no label already placed.
fn change_marks(svg: &mut String, s: &SeriesOut, sx: &dyn Fn(f64) -> f64, ph: f64, ml: f64) {
    let mut rows: [Vec<(f64, f64)>; 3] = [Vec::new(), Vec::new(), Vec::new()];
    let marks = s
        .change_points
        .iter()
        .map(|c| (c, false))
        .chain(s.pending.iter().map(|c| (c, true)));
    for (c, pending) in marks {
        let x = sx(c.index as f64 - 0.5);
        let color = if c.worse { "#b42318" } else { "#1a7f37" };
        let _ = write!(
            svg,
            r#"<line class="change" x1="{x:.1}" x2="{x:.1}" y1="{MT}" y2="{:.1}" stroke="{color}" stroke-dasharray="{}"/>"#,
            MT + ph,
            if pending { "2 3" } else { "5 3" }
        );
        let label = if pending {
            format!("{} pending", percent(c.change))
        } else {
            percent(c.change)
        };
        let w = text_width(&label, 11.0);
        let x0 = (x - w / 2.0).min(W - MR - w).max(ml);
        let x1 = x0 + w;
        let Some(row) =
            (0..rows.len()).find(|&k| rows[k].iter().all(|&(a, b)| x1 + 4.0 < a || x0 > b + 4.0))
        else {
            continue;
        };
        rows[row].push((x0, x1));
        text(
            svg,
            (x0 + x1) / 2.0,
            MT - 6.0 - 13.0 * row as f64,
            11.0,
            "middle",
            "ml",
            &label,
        );
    }
}
