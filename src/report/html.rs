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
    for (i, s) in series.iter().enumerate() {
        f.write_series(&mut svg, i, s);
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
                r##"<line x1="{ML}" x2="{}" y1="{y:.1}" y2="{y:.1}" stroke="#eee"/><text x="{}" y="{:.1}" class="yl">{}</text>"##,
                ML + pw,
                ML - 4.0,
                y + 4.0,
                esc(&fmt_y(t))
            );
        }
        let xt = log_ticks(self.x0, self.x1, x_base);
        let every = xt.len().div_ceil(9).max(1);
        for t in xt.iter().step_by(every) {
            let x = self.sx(*t);
            let _ = write!(
                svg,
                r##"<line x1="{x:.1}" x2="{x:.1}" y1="{MT}" y2="{}" stroke="#eee"/><text x="{x:.1}" y="{}" class="xl">{}</text>"##,
                MT + ph,
                MT + ph + 14.0,
                esc(&fmt_x(*t))
            );
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
                r##"<line class="mark" x1="{x:.1}" x2="{x:.1}" y1="{MT}" y2="{}" stroke="#555" stroke-dasharray="4 3"/><text x="{:.1}" y="{}" class="ml">{}</text>"##,
                MT + self.ph,
                x + 3.0,
                MT + 12.0,
                esc(label)
            );
        }
    }

    /// Series `i`: its whiskers, its line, its points and its legend entry.
    fn write_series(&self, svg: &mut String, i: usize, s: &Series) {
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
            return;
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
        let ly = MT + 10.0 + i as f64 * 18.0;
        let pw = self.pw;
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
}

/// A bar of [`bar_plot_spread`]: label, value and, where known, its spread
/// (low, high).
pub type Bar = (String, f64, Option<(f64, f64)>);

/// Horizontal bars (linear scale from 0), one per (label, value).
pub fn bar_plot(title: &str, bars: &[(String, f64)], fmt: &dyn Fn(f64) -> String) -> String {
    let bars: Vec<Bar> =
        bars.iter().map(|(l, v)| (l.clone(), *v, None)).collect();
    bar_plot_spread(title, &bars, fmt)
}

/// [`bar_plot`] with, per bar where known, its spread (low, high) drawn as
/// a horizontal whisker over the bar.
pub fn bar_plot_spread(
    title: &str,
    bars: &[Bar],
    fmt: &dyn Fn(f64) -> String,
) -> String {
    let row = 22.0;
    let height = MT + 10.0 + row * bars.len().max(1) as f64;
    let label_w = 250.0;
    let pw = W - label_w - 110.0;
    let max = bars
        .iter()
        .map(|b| b.2.map_or(b.1, |(_, hi)| b.1.max(hi)))
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="plot" width="{W}" height="{height}" viewBox="0 0 {W} {height}" role="img"><title>{}</title><text x="10" y="18" class="t">{}</text>"#,
        esc(title),
        esc(title)
    );
    for (i, (label, v, spread)) in bars.iter().enumerate() {
        let y = MT + i as f64 * row;
        let scale = |v: f64| {
            if max > 0.0 && v > 0.0 {
                v / max * pw
            } else {
                0.0
            }
        };
        let w = scale(*v);
        let mut end = w;
        let mut whisker = String::new();
        if let Some((lo, hi)) = spread.filter(|(lo, hi)| lo <= hi && hi.is_finite()) {
            let (a, b, m) = (label_w + scale(lo), label_w + scale(hi), y + (row - 6.0) / 2.0);
            end = end.max(scale(hi));
            let _ = write!(
                whisker,
                r##"<path class="spread" d="M{a:.1},{:.1}V{:.1}M{a:.1},{m:.1}H{b:.1}M{b:.1},{:.1}V{:.1}" stroke="#333" fill="none"/>"##,
                m - 4.0,
                m + 4.0,
                m - 4.0,
                m + 4.0
            );
        }
        let color = COLORS.get(i % COLORS.len()).copied().unwrap_or("#000");
        let _ = write!(
            svg,
            r#"<text x="{}" y="{:.1}" class="yl">{}</text><rect class="bar" x="{label_w}" y="{y:.1}" width="{w:.1}" height="{:.1}" fill="{color}"/>{whisker}<text x="{:.1}" y="{:.1}" class="lg">{}</text>"#,
            label_w - 6.0,
            y + 14.0,
            esc(label),
            row - 6.0,
            label_w + end + 5.0,
            y + 14.0,
            esc(&fmt(*v))
        );
    }
    svg.push_str("</svg>");
    svg
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

/// The frame, horizontal grid and y labels of a plot of `width` with a
/// linear y axis; returns the y scale.
fn frame(
    svg: &mut String,
    width: f64,
    (lo, hi): (f64, f64),
    fmt_y: &dyn Fn(f64) -> String,
    whole: bool,
) -> impl Fn(f64) -> f64 + use<> {
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
    for t in ticks {
        let y = sy(t);
        let _ = write!(
            svg,
            r##"<line x1="{ML}" x2="{:.1}" y1="{y:.1}" y2="{y:.1}" stroke="#eee"/><text x="{}" y="{:.1}" class="yl">{}</text>"##,
            ML + pw,
            ML - 4.0,
            y + 4.0,
            esc(&fmt_y(t))
        );
    }
    sy
}

fn open_svg(svg: &mut String, width: f64, title: &str) {
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="plot" width="{width}" height="{H}" viewBox="0 0 {width} {H}" role="img"><title>{}</title><text x="{ML}" y="18" class="t">{}</text>"#,
        esc(title),
        esc(title)
    );
}

/// The x axis's title, centred under the plot at `y`.
fn x_axis_label(svg: &mut String, width: f64, y: f64, label: &str) {
    let pw = width - ML - 20.0;
    let _ = write!(
        svg,
        r#"<text x="{:.1}" y="{y}" class="ax">{}</text>"#,
        ML + pw / 2.0,
        esc(label)
    );
}

fn y_axis_label(svg: &mut String, label: &str) {
    let mid = MT + (H - MT - MB) / 2.0;
    let _ = write!(
        svg,
        r#"<text x="14" y="{mid}" class="ax" transform="rotate(-90 14 {mid})">{}</text>"#,
        esc(label)
    );
}

/// One group of values for [`distribution_plot`].
pub struct Group {
    pub name: String,
    pub values: Vec<f64>,
}

/// Distributions side by side: per group a box (quartiles, median line,
/// whiskers to the furthest value within 1.5 IQR) over every value as a
/// point, spread sideways by a fixed pattern so equal values stay visible.
pub fn distribution_plot(
    title: &str,
    y_label: &str,
    groups: &[Group],
    fmt_y: &dyn Fn(f64) -> String,
) -> String {
    let slot = 120.0;
    let width = (ML + 20.0 + slot * groups.len().max(1) as f64).max(320.0);
    let mut svg = String::new();
    open_svg(&mut svg, width, title);
    let all: Vec<f64> = groups.iter().flat_map(|g| g.values.iter().copied()).collect();
    let Some(range) = y_range(&all) else {
        let _ = write!(svg, r#"<text x="{ML}" y="{}">no data</text></svg>"#, H / 2.0);
        return svg;
    };
    let sy = frame(&mut svg, width, range, fmt_y, false);
    for (gi, g) in groups.iter().enumerate() {
        let c = color(gi);
        let cx = ML + slot * (gi as f64 + 0.5);
        let mut v: Vec<f64> = g.values.iter().copied().filter(|x| x.is_finite()).collect();
        v.sort_by(f64::total_cmp);
        let q = |p: f64| crate::stats::quantile_sorted(&v, p);
        if let (Some(q1), Some(med), Some(q3)) = (q(0.25), q(0.5), q(0.75)) {
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
        for (i, x) in g.values.iter().enumerate() {
            if !x.is_finite() {
                continue;
            }
            // A fixed low-discrepancy spread: the golden ratio's multiples.
            let jitter = ((i as f64 * 0.618_034) % 1.0 - 0.5) * 60.0;
            let _ = write!(
                svg,
                r#"<circle class="pt" cx="{:.1}" cy="{:.1}" r="2.2" fill="{c}" fill-opacity="0.55"/>"#,
                cx + jitter,
                sy(*x)
            );
        }
        let _ = write!(
            svg,
            r#"<text x="{cx:.1}" y="{}" class="xl">{}</text>"#,
            H - MB + 16.0,
            esc(&short_middle(&g.name, 18))
        );
    }
    y_axis_label(&mut svg, y_label);
    svg.push_str("</svg>");
    svg
}

/// `s` in at most `n` characters, cut in the middle: names that differ
/// only at the end (`./spin 49663675`, `./spin 52146858`) stay apart.
fn short_middle(s: &str, n: usize) -> String {
    let len = s.chars().count();
    if len <= n {
        return s.to_string();
    }
    let keep = n.saturating_sub(1);
    let head = keep / 2;
    let tail = keep - head;
    s.chars()
        .take(head)
        .chain(['…'])
        .chain(s.chars().skip(len - tail))
        .collect()
}

/// Values in the order they were measured: per series its (run number,
/// value) points, on linear axes, so drift and warm-up show as a slope.
pub fn run_order_plot(
    title: &str,
    y_label: &str,
    series: &[Series],
    fmt_y: &dyn Fn(f64) -> String,
) -> String {
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
        let _ = write!(svg, r#"<text x="{ML}" y="{}">no data</text></svg>"#, H / 2.0);
        return svg;
    };
    let sy = frame(&mut svg, width, range, fmt_y, false);
    let pw = width - ML - 20.0;
    let sx = |x: f64| ML + 6.0 + (x - 1.0) / (xmax - 1.0).max(1.0) * (pw - 12.0);
    for t in integer_ticks(1.0, xmax, 8) {
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="{}" class="xl">{}</text>"#,
            sx(t),
            H - MB + 14.0,
            crate::units::thousands(t as u64)
        );
    }
    // Above the legend, below the ticks.
    x_axis_label(&mut svg, width, H - MB + 28.0, "run, in the order measured");
    for (i, s) in series.iter().enumerate() {
        let c = color(i);
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
            r#"<rect x="{:.1}" y="{}" width="10" height="10" fill="{c}"/><text x="{:.1}" y="{}" class="lg">{}</text>"#,
            ML + 10.0 + i as f64 * 130.0,
            H - 20.0,
            ML + 24.0 + i as f64 * 130.0,
            H - 11.0,
            esc(&short_middle(&s.name, 16))
        );
    }
    y_axis_label(&mut svg, y_label);
    svg.push_str("</svg>");
    svg
}

/// A histogram of `values` in `bins` equal bins (the count on the y axis).
pub fn histogram(
    title: &str,
    x_label: &str,
    values: &[f64],
    bins: usize,
    fmt_x: &dyn Fn(f64) -> String,
) -> String {
    let mut svg = String::new();
    open_svg(&mut svg, W, title);
    let v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    let (Some(lo), Some(hi)) = (
        v.iter().copied().reduce(f64::min),
        v.iter().copied().reduce(f64::max),
    ) else {
        let _ = write!(svg, r#"<text x="{ML}" y="{}">no data</text></svg>"#, H / 2.0);
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
    let sy = frame(
        &mut svg,
        W,
        (0.0, max * 1.05),
        &|c| crate::units::thousands(c.round() as u64),
        true,
    );
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
    for t in linear_ticks(lo, lo + width * bins as f64, 6) {
        let x = ML + (t - lo) / (width * bins as f64) * pw;
        let _ = write!(
            svg,
            r#"<text x="{x:.1}" y="{}" class="xl">{}</text>"#,
            H - MB + 14.0,
            esc(&fmt_x(t))
        );
    }
    x_axis_label(&mut svg, W, H - 12.0, x_label);
    y_axis_label(&mut svg, "runs");
    svg.push_str("</svg>");
    svg
}

/// One row of [`ratio_table`].
pub struct RatioRow {
    pub figure: String,
    pub name: String,
    pub ratio: Option<f64>,
    pub low: Option<f64>,
    pub high: Option<f64>,
    pub p: Option<f64>,
    /// Words, e.g. `faster`, `undecided`.
    pub verdict: String,
    /// `lower`, `higher` or `same`: the row's colour.
    pub class: &'static str,
}

/// A table of ratios with their intervals, each drawn on a log scale
/// around 1 (the reference).
pub fn ratio_table(reference: &str, rows: &[RatioRow]) -> String {
    let (lo, hi) = rows
        .iter()
        .flat_map(|r| [r.low, r.high, r.ratio])
        .flatten()
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold((1.0f64, 1.0f64), |(a, b), v| (a.min(v), b.max(v)));
    let (lo, hi) = ((lo / 1.1).ln(), (hi * 1.1).ln());
    let w = 180.0;
    let sx = |v: f64| (v.ln() - lo) / (hi - lo) * w;
    let mut s = String::new();
    let _ = write!(
        s,
        "<table class=\"ratios\"><tr><th>figure</th><th>command</th><th>ratio to {}</th><th>interval</th><th>interval, drawn around 1 (log scale)</th><th>p (adjusted)</th><th>verdict</th></tr>",
        esc(reference)
    );
    for r in rows {
        let num = |v: Option<f64>| v.map(|v| format!("{v:.3}")).unwrap_or_else(|| "—".into());
        let mut bar = String::new();
        if let (Some(x), Some(l), Some(h)) = (r.ratio, r.low, r.high)
            && x > 0.0 && l > 0.0 && h > 0.0 && x.is_finite() && h.is_finite() {
                let _ = write!(
                    bar,
                    r##"<svg width="{w}" height="14"><line x1="{:.1}" x2="{:.1}" y1="0" y2="14" stroke="#999" stroke-dasharray="2 2"/><line x1="{:.1}" x2="{:.1}" y1="7" y2="7" stroke="#333" stroke-width="2"/><circle cx="{:.1}" cy="7" r="3.5" fill="#333"/></svg>"##,
                    sx(1.0),
                    sx(1.0),
                    sx(l),
                    sx(h).max(sx(l) + 1.0),
                    sx(x)
                );
            }
        let _ = write!(
            s,
            "<tr class=\"{}\"><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">[{}, {}]</td><td>{bar}</td><td class=\"n\">{}</td><td class=\"{}\">{}</td></tr>",
            r.class,
            esc(&r.figure),
            esc(&r.name),
            r.ratio.map(|v| format!("{v:.3}×")).unwrap_or_else(|| "—".into()),
            num(r.low),
            num(r.high),
            r.p.map(|p| if p < 0.001 { "<0.001".to_string() } else { format!("{p:.3}") })
                .unwrap_or_default(),
            r.class,
            esc(&r.verdict)
        );
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
            &fmt,
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
    /// one text; cut in the middle they stay apart.
    #[test]
    fn legends_of_commands_that_differ_at_the_end_stay_distinct() {
        let a = short_middle("/tmp/tmpx/spin 49663675", 16);
        let b = short_middle("/tmp/tmpx/spin 52146858", 16);
        assert_ne!(a, b);
        assert_eq!(a.chars().count(), 16);
        assert_eq!(short_middle("short", 16), "short");
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
                values: vec![1.0, 2.0, 3.0, 4.0],
            },
            Group {
                name: "c".into(),
                values: vec![5.0; 3],
            },
        ];
        let svg = distribution_plot("t", "y", &groups, &fmt);
        assert_eq!(svg.matches("class=\"box\"").count(), 2);
        assert_eq!(svg.matches("class=\"pt\"").count(), 7);
        assert!(svg.contains("a&lt;b") && !svg.contains("NaN"));
        assert!(distribution_plot("t", "y", &[], &fmt).contains("no data"));
    }

    #[test]
    fn histogram_counts_every_value_and_run_order_every_run() {
        let v = [1.0, 1.0, 2.0, 9.0, 10.0];
        let svg = histogram("h", "x", &v, 4, &fmt);
        assert_eq!(svg.matches("class=\"bin\"").count(), 4);
        assert!(!svg.contains("NaN"));
        assert!(!histogram("h", "x", &[7.0, 7.0], 4, &fmt).contains("NaN"));
        let s = vec![Series {
            spread: Vec::new(),
            name: "a".into(),
            points: vec![(1.0, 3.0), (3.0, 4.0)],
        }];
        let svg = run_order_plot("r", "y", &s, &fmt);
        assert_eq!(svg.matches("<circle").count(), 2);
        assert!(!run_order_plot("r", "y", &[], &fmt).contains("NaN"));
    }

    #[test]
    fn spread_is_a_whisker_per_point_and_bar_inside_the_axes() {
        let s = vec![Series {
            name: "a".into(),
            points: vec![(1.0, 10.0), (2.0, 20.0)],
            spread: vec![(1.0, 5.0, 400.0), (2.0, 19.0, 21.0)],
        }];
        let svg = line_plot("t", "x", "y", &s, &[], 2.0, &fmt, &fmt);
        assert_eq!(svg.matches("class=\"spread\"").count(), 2);
        // The axis reaches the highest whisker (400 -> 1000), not only the medians.
        assert!(svg.contains(">1000<"), "{svg}");
        let bars = vec![
            ("a".to_string(), 2.0, Some((1.0, 8.0))),
            ("b".to_string(), 4.0, None),
        ];
        let svg = bar_plot_spread("b", &bars, &fmt);
        assert_eq!(svg.matches("class=\"bar\"").count(), 2);
        assert_eq!(svg.matches("class=\"spread\"").count(), 1);
        assert!(!svg.contains("NaN"));
    }

    #[test]
    fn ratio_table_draws_each_interval() {
        let row = RatioRow {
            figure: "wall".into(),
            name: "#1".into(),
            ratio: Some(1.2),
            low: Some(1.1),
            high: Some(1.3),
            p: Some(0.001),
            verdict: "slower".into(),
            class: "higher",
        };
        let t = ratio_table("#2", &[row]);
        assert_eq!(t.matches("<circle").count(), 1);
        assert!(t.contains("1.200×"));
    }
}
