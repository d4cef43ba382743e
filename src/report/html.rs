//! The plot kit: self-contained HTML pages (no scripts, no external
//! files) with hand-written SVG plots. `tally bench --html` draws its sweeps
//! and bars with it, `tally compare --html` its distributions, run-order
//! plots and ratio table, and `tally run -n N --format html` its histogram
//! and run-order plot. One escaper ([`esc`]) serves every page.
//!
//! Also the `html` output format: a report that has a page implements
//! [`super::Render::html`]; the others answer "this report has no html
//! form".

use std::fmt::Write as _;

use super::svg::{distinct_labels, text, tick_label};

/// `--format html`: the report's page, for reports that have one.
pub const FORMAT: super::FormatSpec = super::FormatSpec {
    name: "html",
    help: "A self-contained HTML page with plots (run, compare, bench, load)",
    needs: super::Form::Page,
    render: |r, _, out| match r.forms().html(out) {
        Some(written) => Ok(written?),
        None => Err(super::RenderError::Unsupported(FORMAT.name)),
    },
    // A page is drawn from the whole report.
    rows: None,
};

const W: f64 = 760.0;
const H: f64 = 340.0;
const ML: f64 = 70.0;
const MR: f64 = 190.0;
const MT: f64 = 30.0;
const MB: f64 = 50.0;
pub const COLORS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf",
];

/// Escapes text for HTML and SVG.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A line series: its name, (x, y) points and, where known, the spread of
/// each point as (x, low, high), drawn as a vertical whisker.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub spread: Vec<(f64, f64, f64)>,
}

pub fn log_ticks(lo: f64, hi: f64, base: f64) -> Vec<f64> {
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
        .flat_map(|s| {
            s.points.iter().copied().chain(
                s.spread
                    .iter()
                    .flat_map(|&(x, lo, hi)| [(x, lo), (x, hi)]),
            )
        })
        .filter(|(x, y)| *x > 0.0 && *y > 0.0 && x.is_finite() && y.is_finite())
        .collect();
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="plot" width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img"><title>{}</title>"#,
        esc(title)
    );
    text(&mut svg, ML, 18.0, 14.0, "start", "t", title);
    if pts.is_empty() {
        no_data(&mut svg);
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
    let f = Frame {
        x0,
        x1: if x1 <= x0 { x0 * x_base } else { x1 },
        y0,
        y1: 10f64.powf(y1.log10().ceil()).max(y0 * 10.0),
        pw: W - ML - MR,
        ph: H - MT - MB,
    };
    let (pw, ph) = (f.pw, f.ph);
    let _ = write!(
        svg,
        r##"<rect x="{ML}" y="{MT}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>"##
    );
    f.write_grid(&mut svg, x_base, fmt_x, fmt_y);
    f.write_marks(&mut svg, marks);
    // Legend entries one under another, each name whole in as many lines
    // as it needs.
    let mut ly = MT + 10.0;
    for (i, s) in series.iter().enumerate() {
        let lines = f.write_series(&mut svg, i, s, ly);
        ly += 18.0 + 14.0 * lines.saturating_sub(1) as f64;
    }
    text(&mut svg, ML + pw / 2.0, H - 8.0, 12.0, "middle", "ax", x_label);
    y_axis_label(&mut svg, y_label);
    svg.push_str("</svg>");
    svg
}

/// The plotting area of a [`line_plot`]: the data's range on both log
/// axes, and the area's width and height.
struct Frame {
    x0: f64,
    x1: f64,
    y0: f64,
    y1: f64,
    pw: f64,
    ph: f64,
}

impl Frame {
    fn sx(&self, x: f64) -> f64 {
        ML + (x.ln() - self.x0.ln()) / (self.x1.ln() - self.x0.ln()) * self.pw
    }

    fn sy(&self, y: f64) -> f64 {
        MT + self.ph - (y.ln() - self.y0.ln()) / (self.y1.ln() - self.y0.ln()) * self.ph
    }

    /// The grid lines and tick labels of both axes.
    fn write_grid(
        &self,
        svg: &mut String,
        x_base: f64,
        fmt_x: &dyn Fn(f64) -> String,
        fmt_y: &dyn Fn(f64) -> String,
    ) {
        let (pw, ph) = (self.pw, self.ph);
        for t in log_ticks(self.y0, self.y1, 10.0) {
            let y = self.sy(t);
            let _ = write!(
                svg,
                r##"<line x1="{ML}" x2="{}" y1="{y:.1}" y2="{y:.1}" stroke="#eee"/>"##,
                ML + pw
            );
            text(svg, ML - 4.0, y + 4.0, 11.0, "end", "yl", &fmt_y(t));
        }
        let xt = log_ticks(self.x0, self.x1, x_base);
        let every = xt.len().div_ceil(9).max(1);
        for t in xt.iter().step_by(every) {
            let x = self.sx(*t);
            let _ = write!(
                svg,
                r##"<line x1="{x:.1}" x2="{x:.1}" y1="{MT}" y2="{}" stroke="#eee"/>"##,
                MT + ph
            );
            text(svg, x, MT + ph + 14.0, 11.0, "middle", "xl", &fmt_x(*t));
        }
    }

    /// The vertical markers that fall within the x range.
    fn write_marks(&self, svg: &mut String, marks: &[(f64, String)]) {
        for (m, label) in marks {
            if *m < self.x0 || *m > self.x1 {
                continue;
            }
            let x = self.sx(*m);
            let _ = write!(
                svg,
                r##"<line class="mark" x1="{x:.1}" x2="{x:.1}" y1="{MT}" y2="{}" stroke="#555" stroke-dasharray="4 3"/>"##,
                MT + self.ph
            );
            text(svg, x + 3.0, MT + 12.0, 11.0, "start", "ml", label);
        }
    }

    /// Series `i`: its whiskers, its line, its points and its legend entry
    /// at `ly`; returns the lines the entry took.
    fn write_series(&self, svg: &mut String, i: usize, s: &Series, ly: f64) -> usize {
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
            .map(|(x, y)| format!("{:.1},{:.1}", self.sx(*x), self.sy(*y)))
            .collect();
        if path.is_empty() {
            return 0;
        }
        for &(x, lo, hi) in &s.spread {
            if x > 0.0 && lo > 0.0 && hi >= lo && hi.is_finite() {
                let (x, y0, y1) = (self.sx(x), self.sy(lo), self.sy(hi));
                let _ = write!(
                    svg,
                    r#"<path class="spread" d="M{:.1},{y0:.1}H{:.1}M{x:.1},{y0:.1}V{y1:.1}M{:.1},{y1:.1}H{:.1}" stroke="{color}" stroke-opacity="0.55" fill="none"/>"#,
                    x - 3.0,
                    x + 3.0,
                    x - 3.0,
                    x + 3.0
                );
            }
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
        let pw = self.pw;
        let _ = write!(
            svg,
            r#"<line x1="{}" x2="{}" y1="{ly}" y2="{ly}" stroke="{color}"{dash} stroke-width="3"/>"#,
            ML + pw + 10.0,
            ML + pw + 30.0
        );
        // Whole, in lines of the legend's width (a regression: names were
        // cut to 21 characters, "anonymous,…ge written").
        let lines = legend_lines(&s.name, LEGEND_CHARS);
        for (k, line) in lines.iter().enumerate() {
            let y = ly + 4.0 + 14.0 * k as f64;
            text(svg, ML + pw + 35.0, y, 12.0, "start", "lg", line);
        }
        lines.len()
    }
}

/// Characters of a legend entry's line beside a plot (12 px text in the
/// right margin).
const LEGEND_CHARS: usize = 22;

/// `name` in lines of at most `width` characters, broken at spaces; a word
/// longer than a line is broken in it (a path without spaces).
pub fn legend_lines(name: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in name.split(' ').filter(|w| !w.is_empty()) {
        let mut word: Vec<char> = word.chars().collect();
        let room = |l: &String| l.chars().count() + 1 + word.len() <= width;
        match lines.last_mut() {
            Some(l) if room(l) => {
                l.push(' ');
                l.extend(&word);
                continue;
            }
            _ => {}
        }
        while word.len() > width {
            lines.push(word.drain(..width).collect());
        }
        lines.push(word.into_iter().collect());
    }
    if lines.is_empty() {
        lines.push(String::new());
    }
    lines
}

/// A whole page: `title` (escaped here) and `body` (markup already).
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>\
body{{font-family:sans-serif;margin:2em;max-width:1100px}}\
table{{border-collapse:collapse;font-size:13px;margin:1em 0}}\
td,th{{border:1px solid #ccc;padding:2px 6px;text-align:left}}\
td.n{{text-align:right;font-variant-numeric:tabular-nums}}\
svg.plot{{display:block;margin:1em 0;background:#fff}}\
.row{{display:flex;flex-wrap:wrap;gap:0 1em}}\
.t{{font-weight:bold;font-size:14px}} .yl{{font-size:11px;text-anchor:end}} .xl{{font-size:11px;text-anchor:middle}}\
.lg{{font-size:12px}} .ml{{font-size:11px;fill:#555}} .ax{{font-size:12px;text-anchor:middle}}\
.lower{{color:#1a7f37}} .higher{{color:#b42318}} .same{{color:#666}} .fail{{color:#b42318;font-weight:bold}}\
</style></head><body>{}</body></html>\n",
        esc(title),
        body
    )
}

/// The colour of series or group `i`.
pub fn color(i: usize) -> &'static str {
    COLORS.get(i % COLORS.len()).copied().unwrap_or("#000")
}

/// About `n` round ticks covering `[lo, hi]` (1, 2 or 5 times a power of 10).
pub fn linear_ticks(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    if !lo.is_finite() || !hi.is_finite() || hi < lo {
        return Vec::new();
    }
    if hi == lo {
        return vec![lo];
    }
    let raw = (hi - lo) / n.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let mut t = Vec::new();
    let mut v = (lo / step).ceil() * step;
    while v <= hi + step * 1e-9 && t.len() < 50 {
        t.push(if v.abs() < step * 1e-9 { 0.0 } else { v });
        v += step;
    }
    t
}

/// [`linear_ticks`] for an axis of whole numbers (runs, counts): steps of
/// at least 1, so a few runs do not get ticks 1, 1.5, 2 printed as 1, 1, 2.
pub fn integer_ticks(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    let ticks = linear_ticks(lo, hi, n);
    if ticks.windows(2).all(|w| w[1] - w[0] >= 1.0) {
        return ticks;
    }
    let mut t = Vec::new();
    let mut v = lo.ceil();
    while v <= hi && t.len() < 50 {
        t.push(v);
        v += 1.0;
    }
    t
}

/// A linear axis `[lo, hi]` (padded, round ends) holding `values`.
fn y_range(values: &[f64]) -> Option<(f64, f64)> {
    let finite = values.iter().copied().filter(|v| v.is_finite());
    let (mut lo, mut hi) = (f64::MAX, f64::MIN);
    for v in finite {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if lo > hi {
        return None;
    }
    let pad = if hi > lo {
        (hi - lo) * 0.08
    } else {
        lo.abs().max(1.0) * 0.05
    };
    let lo = if lo >= 0.0 && lo - pad < 0.0 {
        0.0
    } else {
        lo - pad
    };
    Some((lo, hi + pad))
}

/// The frame, horizontal grid and y labels (round ticks, as many decimals
/// as their step needs) of a plot of `width` with a linear y axis; returns
/// the y scale.
fn frame(svg: &mut String, width: f64, (lo, hi): (f64, f64), whole: bool) -> impl Fn(f64) -> f64 + use<> {
    let ph = H - MT - MB;
    let pw = width - ML - 20.0;
    let _ = write!(
        svg,
        r##"<rect x="{ML}" y="{MT}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>"##
    );
    let sy = move |y: f64| MT + ph - (y - lo) / (hi - lo) * ph;
    let ticks = if whole {
        integer_ticks(lo, hi, 6)
    } else {
        linear_ticks(lo, hi, 6)
    };
    let step = match ticks.as_slice() {
        [a, b, ..] => b - a,
        _ => 1.0,
    };
    for t in ticks {
        let y = sy(t);
        let _ = write!(
            svg,
            r##"<line x1="{ML}" x2="{:.1}" y1="{y:.1}" y2="{y:.1}" stroke="#eee"/>"##,
            ML + pw
        );
        text(svg, ML - 4.0, y + 4.0, 11.0, "end", "yl", &tick_label(t, step));
    }
    sy
}

fn open_svg(svg: &mut String, width: f64, title: &str) {
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="plot" width="{width}" height="{H}" viewBox="0 0 {width} {H}" role="img"><title>{}</title>"#,
        esc(title)
    );
    text(svg, ML, 18.0, 14.0, "start", "t", title);
}

fn no_data(svg: &mut String) {
    text(svg, ML, H / 2.0, 12.0, "start", "ml", "no data");
    svg.push_str("</svg>");
}

/// The x axis's title, centred under the plot at `y`.
fn x_axis_label(svg: &mut String, width: f64, y: f64, label: &str) {
    let pw = width - ML - 20.0;
    text(svg, ML + pw / 2.0, y, 12.0, "middle", "ax", label);
}

fn y_axis_label(svg: &mut String, label: &str) {
    let mid = MT + (H - MT - MB) / 2.0;
    let _ = write!(
        svg,
        r#"<text x="14" y="{mid}" font-size="12" text-anchor="middle" class="ax" transform="rotate(-90 14 {mid})">{}</text>"#,
        esc(label)
    );
}

/// One group of values for [`distribution_plot`], drawn in colour
/// `color` (the command's colour on the page).
pub struct Group {
    pub name: String,
    pub values: Vec<f64>,
    pub color: usize,
}

/// Below this many values a box and a histogram say more than the values
/// do: they are drawn as dots.
pub const FEW: usize = 10;

/// Distributions side by side: per group every value as a point, spread
/// sideways by a fixed pattern so equal values stay visible; from [`FEW`]
/// values on, a box under them (quartiles, median line, whiskers to the
/// furthest value within 1.5 IQR), below it a median line only.
pub fn distribution_plot(title: &str, y_label: &str, groups: &[Group]) -> String {
    let slot = 120.0;
    let width = (ML + 20.0 + slot * groups.len().max(1) as f64).max(320.0);
    let mut svg = String::new();
    open_svg(&mut svg, width, title);
    let all: Vec<f64> = groups.iter().flat_map(|g| g.values.iter().copied()).collect();
    let Some(range) = y_range(&all) else {
        no_data(&mut svg);
        return svg;
    };
    let sy = frame(&mut svg, width, range, false);
    let names: Vec<String> = groups.iter().map(|g| g.name.clone()).collect();
    let labels = distinct_labels(&names, 18);
    let few = groups.iter().any(|g| g.values.len() < FEW);
    for (gi, (g, label)) in groups.iter().zip(&labels).enumerate() {
        let c = color(g.color);
        let cx = ML + slot * (gi as f64 + 0.5);
        let mut v: Vec<f64> = g.values.iter().copied().filter(|x| x.is_finite()).collect();
        v.sort_by(f64::total_cmp);
        if few {
            if let Some(med) = crate::stats::quantile_sorted(&v, 0.5) {
                let _ = write!(
                    svg,
                    r#"<line class="median" x1="{:.1}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="{c}" stroke-width="2"/>"#,
                    cx - 30.0,
                    cx + 30.0,
                    sy(med),
                    sy(med)
                );
            }
        } else {
            write_box(&mut svg, &v, cx, c, &sy);
        }
        for (i, x) in g.values.iter().enumerate() {
            if !x.is_finite() {
                continue;
            }
            // A fixed low-discrepancy spread: the golden ratio's multiples.
            let jitter = ((i as f64 * 0.618_034) % 1.0 - 0.5) * 60.0;
            let (r, opacity) = if few { (3.5, 0.85) } else { (2.2, 0.55) };
            let _ = write!(
                svg,
                r#"<circle class="pt" cx="{:.1}" cy="{:.1}" r="{r}" fill="{c}" fill-opacity="{opacity}"/>"#,
                cx + jitter,
                sy(*x)
            );
        }
        text(&mut svg, cx, H - MB + 16.0, 11.0, "middle", "xl", label);
    }
    let note = if few {
        format!("dots: runs; line: median (no box: < {FEW} runs)")
    } else {
        "dots: runs; box: quartiles; whiskers: 1.5 IQR".to_string()
    };
    text(&mut svg, 8.0, H - 12.0, 11.0, "start", "ml", &note);
    y_axis_label(&mut svg, y_label);
    svg.push_str("</svg>");
    svg
}

/// The box of [`distribution_plot`] for the sorted values `v` at `cx`.
fn write_box(svg: &mut String, v: &[f64], cx: f64, c: &str, sy: &dyn Fn(f64) -> f64) {
    let q = |p: f64| crate::stats::quantile_sorted(v, p);
    let (Some(q1), Some(med), Some(q3)) = (q(0.25), q(0.5), q(0.75)) else {
        return;
    };
    let iqr = q3 - q1;
    let lo = v.iter().copied().find(|x| *x >= q1 - 1.5 * iqr).unwrap_or(q1);
    let hi = v
        .iter()
        .rev()
        .copied()
        .find(|x| *x <= q3 + 1.5 * iqr)
        .unwrap_or(q3);
    let bw = 44.0;
    let _ = write!(
        svg,
        r##"<line x1="{cx:.1}" x2="{cx:.1}" y1="{:.1}" y2="{:.1}" stroke="#333"/><rect class="box" x="{:.1}" y="{:.1}" width="{bw}" height="{:.1}" fill="{c}" fill-opacity="0.18" stroke="{c}" stroke-width="1.5"/><line x1="{:.1}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="{c}" stroke-width="3"/>"##,
        sy(hi),
        sy(lo),
        cx - bw / 2.0,
        sy(q3),
        (sy(q1) - sy(q3)).max(1.0),
        cx - bw / 2.0,
        cx + bw / 2.0,
        sy(med),
        sy(med)
    );
}

/// Values in the order they were measured: per series its (run number,
/// value) points, on linear axes, so drift and warm-up show as a slope.
/// Series `i` takes colour `colors[i]` (its command's colour on the page).
pub fn run_order_plot(title: &str, y_label: &str, series: &[Series], colors: &[usize]) -> String {
    let width = 620.0;
    let mut svg = String::new();
    open_svg(&mut svg, width, title);
    let ys: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .collect();
    let xmax = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .fold(1.0f64, f64::max);
    let Some(range) = y_range(&ys) else {
        no_data(&mut svg);
        return svg;
    };
    let sy = frame(&mut svg, width, range, false);
    let pw = width - ML - 20.0;
    let sx = |x: f64| ML + 6.0 + (x - 1.0) / (xmax - 1.0).max(1.0) * (pw - 12.0);
    for t in integer_ticks(1.0, xmax, 8) {
        text(&mut svg, sx(t), H - MB + 14.0, 11.0, "middle", "xl", &crate::units::thousands(t as u64));
    }
    // Above the legend, below the ticks.
    x_axis_label(&mut svg, width, H - MB + 27.0, "run, in the order measured");
    let names: Vec<String> = series.iter().map(|s| s.name.clone()).collect();
    let labels = distinct_labels(&names, 16);
    for (i, (s, label)) in series.iter().zip(&labels).enumerate() {
        let c = color(colors.get(i).copied().unwrap_or(i));
        let pts: Vec<String> = s
            .points
            .iter()
            .filter(|p| p.1.is_finite())
            .map(|(x, y)| format!("{:.1},{:.1}", sx(*x), sy(*y)))
            .collect();
        let _ = write!(
            svg,
            r#"<polyline class="series" fill="none" stroke="{c}" stroke-opacity="0.35" stroke-width="1" points="{}"/>"#,
            pts.join(" ")
        );
        for p in &pts {
            if let Some((x, y)) = p.split_once(',') {
                let _ = write!(svg, r#"<circle cx="{x}" cy="{y}" r="2.2" fill="{c}"/>"#);
            }
        }
        let _ = write!(
            svg,
            r#"<rect x="{:.1}" y="{}" width="10" height="10" fill="{c}"/>"#,
            ML + 10.0 + i as f64 * 130.0,
            H - 16.0
        );
        text(&mut svg, ML + 24.0 + i as f64 * 130.0, H - 7.0, 11.0, "start", "lg", label);
    }
    y_axis_label(&mut svg, y_label);
    svg.push_str("</svg>");
    svg
}

/// A histogram of `values` in `bins` equal bins (the count on the y axis);
/// below [`FEW`] values, [`dot_strip`] instead.
pub fn histogram(title: &str, x_label: &str, values: &[f64], bins: usize) -> String {
    let v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.len() < FEW {
        return dot_strip(title, x_label, &v);
    }
    let mut svg = String::new();
    open_svg(&mut svg, W, title);
    let (Some(lo), Some(hi)) = (
        v.iter().copied().reduce(f64::min),
        v.iter().copied().reduce(f64::max),
    ) else {
        no_data(&mut svg);
        return svg;
    };
    let bins = bins.clamp(1, 200);
    let span = if hi > lo { hi - lo } else { lo.abs().max(1.0) * 0.02 };
    let (lo, width) = if hi > lo {
        (lo, span / bins as f64)
    } else {
        (lo - span / 2.0, span / bins as f64)
    };
    let mut counts = vec![0usize; bins];
    for x in &v {
        let b = (((x - lo) / width) as usize).min(bins - 1);
        if let Some(c) = counts.get_mut(b) {
            *c += 1;
        }
    }
    let max = counts.iter().copied().max().unwrap_or(1).max(1) as f64;
    let sy = frame(&mut svg, W, (0.0, max * 1.05), true);
    let pw = W - ML - 20.0;
    let bw = pw / bins as f64;
    for (i, c) in counts.iter().enumerate() {
        let y = sy(*c as f64);
        let _ = write!(
            svg,
            r#"<rect class="bin" x="{:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{}"/>"#,
            ML + i as f64 * bw + 0.5,
            (bw - 1.0).max(0.5),
            (MT + (H - MT - MB) - y).max(0.0),
            color(0)
        );
    }
    x_ticks(&mut svg, lo, lo + width * bins as f64, pw);
    x_axis_label(&mut svg, W, H - 12.0, x_label);
    y_axis_label(&mut svg, "runs");
    svg.push_str("</svg>");
    svg
}

/// Round tick labels under a plot whose x axis spans `[lo, hi]` over `pw`.
fn x_ticks(svg: &mut String, lo: f64, hi: f64, pw: f64) {
    x_ticks_at(svg, lo, hi, pw, H - MB);
}

/// [`x_ticks`] under an axis at `base`.
fn x_ticks_at(svg: &mut String, lo: f64, hi: f64, pw: f64, base: f64) {
    let ticks = linear_ticks(lo, hi, 6);
    let step = match ticks.as_slice() {
        [a, b, ..] => b - a,
        _ => 1.0,
    };
    for t in ticks {
        let x = ML + (t - lo) / (hi - lo).max(f64::MIN_POSITIVE) * pw;
        let _ = write!(
            svg,
            r##"<line x1="{x:.1}" x2="{x:.1}" y1="{base}" y2="{}" stroke="#333"/>"##,
            base + 4.0
        );
        text(svg, x, base + 16.0, 11.0, "middle", "xl", &tick_label(t, step));
    }
}

/// A few values as dots along one axis with round ticks: what a
/// histogram of fewer than [`FEW`] values would only pretend to bin. Equal
/// values stack upwards.
pub fn dot_strip(title: &str, x_label: &str, values: &[f64]) -> String {
    let height = 150.0;
    let mut svg = String::new();
    super::svg::open(&mut svg, W, height, title);
    let Some((lo, hi)) = y_range(values) else {
        text(&mut svg, ML, height / 2.0, 12.0, "start", "ml", "no data");
        svg.push_str("</svg>");
        return svg;
    };
    let pw = W - ML - 20.0;
    let base = height - 50.0;
    let _ = write!(
        svg,
        r##"<line class="axis" x1="{ML}" x2="{:.1}" y1="{base}" y2="{base}" stroke="#333"/>"##,
        ML + pw
    );
    let sx = |v: f64| ML + (v - lo) / (hi - lo).max(f64::MIN_POSITIVE) * pw;
    let mut placed: Vec<f64> = Vec::new();
    for v in values.iter().filter(|v| v.is_finite()) {
        let x = sx(*v);
        let stack = placed.iter().filter(|p| (*p - x).abs() < 8.0).count();
        placed.push(x);
        let _ = write!(
            svg,
            r#"<circle class="pt" cx="{x:.1}" cy="{:.1}" r="5" fill="{}" fill-opacity="0.85"/>"#,
            base - 10.0 - (stack % 5) as f64 * 11.0,
            color(0)
        );
    }
    x_ticks_at(&mut svg, lo, hi, pw, base);
    x_axis_label(&mut svg, W, height - 12.0, x_label);
    let note = format!(
        "each dot a run ({} in all; fewer than {FEW}: no histogram)",
        values.len()
    );
    text(&mut svg, 10.0, 36.0, 11.0, "start", "ml", &note);
    svg.push_str("</svg>");
    svg
}

/// One row of [`ratio_table`]: one command's ratio in one figure, in the
/// words of the report's other formats.
pub struct RatioRow {
    pub figure: String,
    /// The command's number (`#2`): its name is in the table of commands.
    pub name: String,
    /// `1.26×`, `—`.
    pub ratio: String,
    /// `[1.24, 1.28]`, or empty.
    pub interval: String,
    pub p: Option<f64>,
    /// Words, e.g. `faster (p<0.001)`, `same within 1%`.
    pub verdict: String,
    /// `lower`, `higher` or `same`: the row's colour.
    pub class: &'static str,
}

/// A table of ratios with their intervals, in figures (the chart of
/// [`super::svg::ratio_chart`] draws them): a figure's name once over its
/// rows, no cell cut (a cell wraps rather than lose its end).
pub fn ratio_table(reference: &str, rows: &[RatioRow]) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<table class=\"ratios\"><tr><th>figure</th><th>command</th><th>ratio to {}</th><th>interval</th><th>p (adjusted)</th><th>verdict</th></tr>",
        esc(reference)
    );
    let mut k = 0;
    while let Some(first) = rows.get(k) {
        let span = rows[k..]
            .iter()
            .take_while(|r| r.figure == first.figure)
            .count();
        for (j, r) in rows[k..k + span].iter().enumerate() {
            let _ = write!(s, "<tr class=\"{}\">", r.class);
            if j == 0 {
                let _ = write!(s, "<td rowspan=\"{span}\">{}</td>", esc(&r.figure));
            }
            let _ = write!(
                s,
                "<td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"{}\">{}</td></tr>",
                esc(&r.name),
                esc(&r.ratio),
                esc(&r.interval),
                r.p.map(|p| if p < 0.001 { "<0.001".to_string() } else { format!("{p:.3}") })
                    .unwrap_or_default(),
                r.class,
                esc(&r.verdict)
            );
        }
        k += span;
    }
    s.push_str("</table>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(v: f64) -> String {
        format!("{v}")
    }

    #[test]
    fn log_ticks_cover_the_range() {
        assert_eq!(log_ticks(1.0, 1000.0, 10.0).len(), 4);
        assert!(log_ticks(0.0, 10.0, 10.0).is_empty());
    }

    /// With fewer than five runs the run-order axis read 1, 1, 2, 2, 3
    /// (ticks every half run, printed as whole numbers).
    #[test]
    fn run_and_count_axes_tick_whole_numbers_for_any_count() {
        assert_eq!(integer_ticks(1.0, 3.0, 8), [1.0, 2.0, 3.0]);
        assert_eq!(integer_ticks(1.0, 1.0, 8), [1.0]);
        assert_eq!(integer_ticks(0.0, 2.1, 6), [0.0, 1.0, 2.0]);
        assert_eq!(integer_ticks(1.0, 1000.0, 8).len(), linear_ticks(1.0, 1000.0, 8).len());
        let svg = run_order_plot(
            "wall time in run order",
            "wall time (µs)",
            &[Series {
                spread: Vec::new(),
                name: "x".into(),
                points: vec![(1.0, 5.0), (2.0, 6.0), (3.0, 5.5)],
            }],
            &[0],
        );
        let labels: Vec<&str> = svg
            .split("class=\"xl\">")
            .skip(1)
            .filter_map(|p| p.split('<').next())
            .collect();
        assert_eq!(labels, ["1", "2", "3"], "{svg}");
        assert!(svg.contains("run, in the order measured"), "an x axis title");
    }

    /// Legends cut at the end made `./spin 49663675` and `./spin 52146858`
    /// one text; with the shared start elided they stay apart.
    #[test]
    fn legends_of_commands_that_differ_at_the_end_stay_distinct() {
        let names = ["/tmp/tmpx/spin 49663675".to_string(), "/tmp/tmpx/spin 52146858".to_string()];
        let s: Vec<Series> = names
            .iter()
            .map(|n| Series {
                spread: Vec::new(),
                name: n.clone(),
                points: vec![(1.0, 1.0)],
            })
            .collect();
        let svg = run_order_plot("r", "y", &s, &[0, 1]);
        assert!(svg.contains("49663675") && svg.contains("52146858"), "{svg}");
    }

    #[test]
    fn linear_ticks_are_round_and_cover_the_range() {
        assert_eq!(linear_ticks(0.0, 10.0, 5), [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(linear_ticks(3.0, 3.0, 5), [3.0]);
        assert!(linear_ticks(f64::NAN, 1.0, 5).is_empty());
    }

    #[test]
    fn distributions_have_a_box_and_every_point_per_group() {
        let groups = vec![
            Group {
                name: "a<b".into(),
                values: (1..=12).map(f64::from).collect(),
                color: 0,
            },
            Group {
                name: "c".into(),
                values: vec![5.0; 10],
                color: 1,
            },
        ];
        let svg = distribution_plot("t", "y", &groups);
        assert_eq!(svg.matches("class=\"box\"").count(), 2);
        assert_eq!(svg.matches("class=\"pt\"").count(), 22);
        assert!(svg.contains("a&lt;b") && !svg.contains("NaN"));
        assert!(distribution_plot("t", "y", &[]).contains("no data"));
    }

    /// Boxes and histograms drawn from 3 points looked like distributions.
    #[test]
    fn fewer_than_ten_runs_are_dots_not_boxes_or_bins() {
        let groups = vec![Group {
            name: "a".into(),
            values: vec![1.0, 2.0, 3.0],
            color: 0,
        }];
        let svg = distribution_plot("t", "y", &groups);
        assert_eq!(svg.matches("class=\"box\"").count(), 0);
        assert_eq!(svg.matches("class=\"pt\"").count(), 3);
        let svg = histogram("h", "x", &[1.0, 2.0, 2.0], 5);
        assert_eq!(svg.matches("class=\"bin\"").count(), 0);
        assert_eq!(svg.matches("class=\"pt\"").count(), 3);
        assert!(!histogram("h", "x", &[7.0], 5).contains("NaN"));
    }

    #[test]
    fn histogram_counts_every_value_and_run_order_every_run() {
        let v = [1.0, 1.0, 2.0, 9.0, 10.0, 3.0, 4.0, 5.0, 6.0, 7.0];
        let svg = histogram("h", "x", &v, 4);
        assert_eq!(svg.matches("class=\"bin\"").count(), 4);
        assert!(!svg.contains("NaN"));
        assert!(!histogram("h", "x", &[7.0; 12], 4).contains("NaN"));
        let s = vec![Series {
            spread: Vec::new(),
            name: "a".into(),
            points: vec![(1.0, 3.0), (3.0, 4.0)],
        }];
        let svg = run_order_plot("r", "y", &s, &[0]);
        assert_eq!(svg.matches("<circle").count(), 2);
        assert!(!run_order_plot("r", "y", &[], &[]).contains("NaN"));
    }

    #[test]
    fn spread_is_a_whisker_per_point_inside_the_axes() {
        let s = vec![Series {
            name: "a".into(),
            points: vec![(1.0, 10.0), (2.0, 20.0)],
            spread: vec![(1.0, 5.0, 400.0), (2.0, 19.0, 21.0)],
        }];
        let svg = line_plot("t", "x", "y", &s, &[], 2.0, &fmt, &fmt);
        assert_eq!(svg.matches("class=\"spread\"").count(), 2);
        // The axis reaches the highest whisker (400 -> 1000), not only the medians.
        assert!(svg.contains(">1000<"), "{svg}");
    }

    #[test]
    fn ratio_table_gives_each_interval() {
        let row = |name: &str| RatioRow {
            figure: "wall".into(),
            name: name.into(),
            ratio: "1.20×".into(),
            interval: "[1.10, 1.30]".into(),
            p: Some(0.001),
            verdict: "same within 1%".into(),
            class: "higher",
        };
        let t = ratio_table("#2", &[row("#1"), row("#3")]);
        assert!(t.contains("1.20×") && t.contains("[1.10, 1.30]"), "{t}");
        // The figure once over its rows; the verdict whole.
        assert_eq!(t.matches(">wall<").count(), 1, "{t}");
        assert!(t.contains("rowspan=\"2\"") && t.contains("same within 1%"), "{t}");
    }
}
