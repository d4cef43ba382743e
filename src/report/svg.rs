//! The pieces of the plot kit that every chart shares: text placed with
//! its size and anchor written out (so a reader of the SVG, or a test, can
//! tell where it lies), round tick labels, one time unit per chart, and
//! labels that keep the part of each command that differs. Also the bar
//! chart and the chart of ratios with their intervals.

use std::fmt::Write as _;

use super::html::{color, esc, linear_ticks};
use super::unit::{Quantity, Unit};

/// The width of one character, as a fraction of the font size: what the
/// layout assumes of a sans-serif face (digits and lower case).
pub const CHAR_EM: f64 = 0.6;

/// The width `s` takes at `size` px, by [`CHAR_EM`].
pub fn text_width(s: &str, size: f64) -> f64 {
    s.chars().count() as f64 * size * CHAR_EM
}

/// Writes `s` (escaped here) at (`x`, `y`) with its font size and anchor
/// (`start`, `middle` or `end`) as attributes.
pub fn text(svg: &mut String, x: f64, y: f64, size: f64, anchor: &str, class: &str, s: &str) {
    let _ = write!(
        svg,
        r#"<text x="{x:.1}" y="{y:.1}" font-size="{size}" text-anchor="{anchor}" class="{class}">{}</text>"#,
        esc(s)
    );
}

/// A tick's label: as many decimals as the step between ticks needs, with
/// thousands separators.
pub fn tick_label(v: f64, step: f64) -> String {
    let decimals = if step >= 1.0 || step <= 0.0 || !step.is_finite() {
        0
    } else {
        (-step.log10()).ceil().clamp(0.0, 6.0) as usize
    };
    number(v, decimals)
}

/// A value's label: three significant digits (at most three decimals),
/// with thousands separators.
pub fn value_label(v: f64) -> String {
    let a = v.abs();
    let decimals = if a == 0.0 || !a.is_finite() {
        0
    } else {
        (2.0 - a.log10().floor()).clamp(0.0, 3.0) as usize
    };
    number(v, decimals)
}

fn number(v: f64, decimals: usize) -> String {
    if !v.is_finite() {
        return "—".into();
    }
    let s = format!("{:.*}", decimals, v.abs());
    let (int, frac) = s.split_once('.').map_or((s.as_str(), ""), |(i, f)| (i, f));
    let int = int
        .parse::<u64>()
        .map(crate::units::thousands)
        .unwrap_or_else(|_| int.to_string());
    let sign = if v < 0.0 && s.chars().any(|c| c.is_ascii_digit() && c != '0') {
        "-"
    } else {
        ""
    };
    if frac.is_empty() {
        format!("{sign}{int}")
    } else {
        format!("{sign}{int}.{frac}")
    }
}

/// One unit for the values of a chart: its symbol and what a value in the
/// unit the caller holds is divided by to be in it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scale {
    pub unit: &'static str,
    pub divisor: f64,
}

/// The time unit (ns, µs, ms or s) in which `max_ns`, the largest value
/// of a chart in nanoseconds, reads below 1,000.
pub fn time_scale(max_ns: f64) -> Scale {
    let a = max_ns.abs();
    let (unit, divisor) = if !a.is_finite() || a < 1e3 {
        ("ns", 1.0)
    } else if a < 1e6 {
        ("µs", 1e3)
    } else if a < 1e9 {
        ("ms", 1e6)
    } else {
        ("s", 1e9)
    };
    Scale { unit, divisor }
}

/// The unit a chart of values held in `unit` is drawn in: times in ns,
/// µs, ms or s and sizes in B, KiB, MiB or GiB, by the largest of
/// `values`; other units as they are.
#[derive(Debug, Clone, Copy)]
pub struct ChartUnit {
    from: Unit,
    via: Unit,
    scale: Scale,
}

impl ChartUnit {
    pub fn for_values(unit: Unit, values: &[f64]) -> ChartUnit {
        let max = values
            .iter()
            .copied()
            .filter(|v| v.is_finite())
            .fold(0.0f64, |a, v| a.max(v.abs()));
        let (via, scale) = match unit.base() {
            Unit::Seconds => {
                let ns = Quantity::new(max, unit).to(Unit::Nanoseconds).value;
                (Unit::Nanoseconds, time_scale(ns))
            }
            Unit::Bytes => {
                let b = Quantity::new(max, unit).to(Unit::Bytes).value;
                (Unit::Bytes, byte_scale(b))
            }
            Unit::Joules => {
                let in_joules = Quantity::new(max, unit).to(Unit::Joules).value >= 1.0;
                let via = if in_joules {
                    Unit::Joules
                } else {
                    Unit::Millijoules
                };
                (
                    via,
                    Scale {
                        unit: via.symbol(),
                        divisor: 1.0,
                    },
                )
            }
            _ => (
                unit,
                Scale {
                    unit: unit.symbol(),
                    divisor: 1.0,
                },
            ),
        };
        ChartUnit {
            from: unit,
            via,
            scale,
        }
    }

    /// `v` (held in the figure's unit) in the chart's unit.
    pub fn apply(&self, v: f64) -> f64 {
        Quantity::new(v, self.from).to(self.via).value / self.scale.divisor
    }

    /// The chart unit's symbol (empty for counts).
    pub fn symbol(&self) -> &'static str {
        self.scale.unit
    }
}

/// The size unit (B, KiB, MiB or GiB) in which `max_bytes` reads below
/// 1,024.
pub fn byte_scale(max_bytes: f64) -> Scale {
    let a = max_bytes.abs();
    let k = 1024.0;
    let (unit, divisor) = if !a.is_finite() || a < k {
        ("B", 1.0)
    } else if a < k * k {
        ("KiB", k)
    } else if a < k * k * k {
        ("MiB", k * k)
    } else {
        ("GiB", k * k * k)
    };
    Scale { unit, divisor }
}

/// Labels for `names` in at most `max` characters each that keep what
/// tells them apart: when one does not fit, the part every name shares at
/// the start and at the end is elided ("…"), keeping a little of it for
/// context; a part that differs and is still too long is cut in its
/// middle. Names that fit are kept whole.
pub fn distinct_labels(names: &[String], max: usize) -> Vec<String> {
    let max = max.max(5);
    if names.iter().all(|n| n.chars().count() <= max) {
        return names.to_vec();
    }
    let chars: Vec<Vec<char>> = names.iter().map(|n| n.chars().collect()).collect();
    let shortest = chars.iter().map(Vec::len).min().unwrap_or(0);
    let (mut pre, mut suf) = (0, 0);
    if chars.len() > 1 {
        while pre < shortest && chars.iter().all(|c| c[pre] == chars[0][pre]) {
            pre += 1;
        }
        while suf < shortest - pre
            && chars
                .iter()
                .all(|c| c[c.len() - 1 - suf] == chars[0][chars[0].len() - 1 - suf])
        {
            suf += 1;
        }
    }
    chars
        .iter()
        .map(|c| {
            if c.len() <= max {
                return c.iter().collect();
            }
            elide(c, pre, suf, max)
        })
        .collect()
}

/// `c` in `max` characters: its middle `c[pre..len-suf]` kept, with as
/// much of the shared ends beside it as fits.
fn elide(c: &[char], pre: usize, suf: usize, max: usize) -> String {
    let mid: Vec<char> = c[pre..c.len() - suf].to_vec();
    let need = usize::from(pre > 0) + usize::from(suf > 0);
    if mid.len() + need >= max {
        return cut_middle(c, pre, suf, max);
    }
    // The room beside the middle, shared between the end of the prefix and
    // the start of the suffix; a side that fits whole gives the rest away.
    let room = max - mid.len();
    let (mut lb, mut rb) = (room / 2, room - room / 2);
    if pre <= lb {
        rb += lb - pre;
        lb = pre;
    } else if suf <= rb {
        lb += rb - suf;
        rb = suf;
    }
    let pre_take = if pre <= lb { pre } else { lb.saturating_sub(1) };
    let suf_take = if suf <= rb { suf } else { rb.saturating_sub(1) };
    let mut out = String::new();
    if pre_take < pre {
        out.push('…');
    }
    out.extend(&c[pre - pre_take..pre]);
    out.extend(&mid);
    out.extend(&c[c.len() - suf..c.len() - suf + suf_take]);
    if suf_take < suf {
        out.push('…');
    }
    out
}

/// The distinguishing middle of `c` cut in its middle, with ellipses for
/// the shared ends left out.
fn cut_middle(c: &[char], pre: usize, suf: usize, max: usize) -> String {
    let (lead, tail) = (usize::from(pre > 0), usize::from(suf > 0));
    let mid = &c[pre..c.len() - suf];
    let keep = max.saturating_sub(lead + tail + 1).max(2);
    let head = keep / 2;
    let end = keep - head;
    let mut out = String::new();
    if lead == 1 {
        out.push('…');
    }
    if mid.len() <= keep + 1 {
        out.extend(mid);
    } else {
        out.extend(&mid[..head]);
        out.push('…');
        out.extend(&mid[mid.len() - end..]);
    }
    if tail == 1 {
        out.push('…');
    }
    out
}

/// A row of [`bar_chart`]: its label, its value in the chart's unit
/// (`None`: the `missing` words are written instead of a bar), its spread
/// (low, high) where known, and the legend entry whose colour it takes.
pub struct BarRow {
    pub label: String,
    pub value: Option<f64>,
    pub spread: Option<(f64, f64)>,
    pub key: usize,
    pub missing: String,
}

/// A horizontal bar chart on one linear axis from 0.
pub struct BarChart<'a> {
    pub title: &'a str,
    /// The axis title, naming the unit: `wall time, median (ms)`.
    pub axis: &'a str,
    /// The unit's symbol, written after each value label.
    pub unit: &'a str,
    pub rows: Vec<BarRow>,
    /// The legend: what each colour (by its index) means, and what the
    /// whisker spans when rows have one.
    pub keys: Vec<(usize, String)>,
    pub whisker: Option<&'a str>,
}

const BAR_W: f64 = 760.0;
const ROW: f64 = 24.0;
const LABEL_SIZE: f64 = 11.0;

/// The chart: a legend under the title, per row its label, its bar with
/// the value written at the bar's end, its whisker under the bar; below,
/// the axis with round ticks and its title.
pub fn bar_chart(c: &BarChart) -> String {
    let labels = distinct_labels(
        &c.rows.iter().map(|r| r.label.clone()).collect::<Vec<_>>(),
        42,
    );
    let label_w = labels
        .iter()
        .map(|l| text_width(l, LABEL_SIZE))
        .fold(60.0f64, f64::max)
        + 12.0;
    let x0 = label_w;
    let pw = BAR_W - x0 - 100.0;
    let max = c
        .rows
        .iter()
        .flat_map(|r| [r.value, r.spread.map(|s| s.1)])
        .flatten()
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    let (ticks, top) = axis_ticks(max);
    let sx = |v: f64| x0 + (v.max(0.0) / top).min(1.0) * pw;
    let legend_y = 38.0;
    let y0 = legend_y + 14.0;
    let axis_y = y0 + ROW * c.rows.len().max(1) as f64 + 4.0;
    let height = axis_y + 40.0;
    let mut svg = String::new();
    open(&mut svg, BAR_W, height, c.title);
    write_legend(&mut svg, 10.0, legend_y, &c.keys, c.whisker);
    for t in &ticks {
        let x = sx(*t);
        let _ = write!(
            svg,
            r##"<line x1="{x:.1}" x2="{x:.1}" y1="{y0:.1}" y2="{axis_y:.1}" stroke="#e4e4e4"/><line x1="{x:.1}" x2="{x:.1}" y1="{axis_y:.1}" y2="{:.1}" stroke="#333"/>"##,
            axis_y + 4.0
        );
        text(
            &mut svg,
            x,
            axis_y + 15.0,
            11.0,
            "middle",
            "xl",
            &tick_label(*t, step_of(&ticks)),
        );
    }
    let _ = write!(
        svg,
        r##"<line class="axis" x1="{x0:.1}" x2="{:.1}" y1="{axis_y:.1}" y2="{axis_y:.1}" stroke="#333"/>"##,
        x0 + pw
    );
    text(
        &mut svg,
        x0 + pw / 2.0,
        axis_y + 32.0,
        12.0,
        "middle",
        "ax",
        c.axis,
    );
    for (i, (r, label)) in c.rows.iter().zip(&labels).enumerate() {
        let y = y0 + i as f64 * ROW;
        text(&mut svg, x0 - 6.0, y + 12.0, LABEL_SIZE, "end", "yl", label);
        let Some(v) = r.value.filter(|v| v.is_finite()) else {
            text(
                &mut svg,
                x0 + 4.0,
                y + 12.0,
                LABEL_SIZE,
                "start",
                "ml",
                &r.missing,
            );
            continue;
        };
        let end = sx(v);
        let _ = write!(
            svg,
            r#"<rect class="bar" x="{x0:.1}" y="{:.1}" width="{:.1}" height="12" fill="{}"/>"#,
            y + 3.0,
            end - x0,
            color(r.key)
        );
        if let Some((lo, hi)) = r.spread.filter(|(lo, hi)| lo <= hi && hi.is_finite()) {
            let (a, b, m) = (sx(lo), sx(hi), y + 19.0);
            let _ = write!(
                svg,
                r##"<path class="spread" d="M{a:.1},{:.1}V{:.1}M{a:.1},{m:.1}H{b:.1}M{b:.1},{:.1}V{:.1}" stroke="#333" fill="none"/>"##,
                m - 3.0,
                m + 3.0,
                m - 3.0,
                m + 3.0
            );
        }
        let value = format!("{} {}", value_label(v), c.unit);
        text(
            &mut svg,
            end + 4.0,
            y + 12.0,
            LABEL_SIZE,
            "start",
            "lg",
            value.trim_end(),
        );
    }
    svg.push_str("</svg>");
    svg
}

/// Round ticks from 0 to at least `max`, and the axis's end (the last
/// tick).
fn axis_ticks(max: f64) -> (Vec<f64>, f64) {
    let max = if max > 0.0 && max.is_finite() {
        max
    } else {
        1.0
    };
    let mut ticks = linear_ticks(0.0, max, 5);
    let step = step_of(&ticks);
    if let Some(&last) = ticks.last()
        && last < max * (1.0 - 1e-9)
    {
        ticks.push(last + step);
    }
    let top = ticks.last().copied().unwrap_or(max).max(f64::MIN_POSITIVE);
    (ticks, top)
}

fn step_of(ticks: &[f64]) -> f64 {
    match ticks {
        [a, b, ..] => b - a,
        _ => 1.0,
    }
}

/// Opens an SVG of `width` × `height` with its title.
pub fn open(svg: &mut String, width: f64, height: f64, title: &str) {
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="plot" width="{width}" height="{height:.0}" viewBox="0 0 {width} {height:.0}" role="img"><title>{}</title>"#,
        esc(title)
    );
    text(svg, 10.0, 18.0, 14.0, "start", "t", title);
}

/// A legend on one line from (`x`, `y`): a swatch per key in its colour,
/// then, when given, what the whisker spans.
pub fn write_legend(
    svg: &mut String,
    x: f64,
    y: f64,
    keys: &[(usize, String)],
    whisker: Option<&str>,
) {
    let mut x = x;
    for (i, k) in keys {
        let _ = write!(
            svg,
            r#"<rect class="key" x="{x:.1}" y="{:.1}" width="10" height="10" fill="{}"/>"#,
            y - 9.0,
            color(*i)
        );
        text(svg, x + 14.0, y, 11.0, "start", "lg", k);
        x += 14.0 + text_width(k, 11.0) + 14.0;
    }
    if let Some(w) = whisker {
        let _ = write!(
            svg,
            r##"<path d="M{x:.1},{:.1}V{:.1}M{x:.1},{:.1}H{:.1}M{:.1},{:.1}V{:.1}" stroke="#333" fill="none"/>"##,
            y - 7.0,
            y - 1.0,
            y - 4.0,
            x + 16.0,
            x + 16.0,
            y - 7.0,
            y - 1.0
        );
        text(svg, x + 20.0, y, 11.0, "start", "lg", w);
    }
}

/// A row of [`ratio_chart`]: a command's ratio to the reference in one
/// figure, with its interval (NaN where the runs do not bound it: too few
/// of them).
pub struct RatioBar {
    pub label: String,
    /// The command's colour on the page.
    pub key: usize,
    pub ratio: f64,
    pub low: f64,
    pub high: f64,
    /// The ratio and its interval in words, as the report's other formats
    /// write them (`1.26× [1.24, 1.28]`), right of the line.
    pub words: String,
}

/// Each command against the reference: per row the interval as a line
/// and the ratio as a dot, on one linear axis of ratios with round ticks,
/// 1× marked, and the band `1 ± threshold` (a shift inside it counts as
/// the same) shaded when `threshold` is above 0. `dot` says what the dot
/// is (the legend says what is drawn).
pub fn ratio_chart(
    title: &str,
    rows: &[RatioBar],
    threshold: f64,
    level: f64,
    dot: &str,
) -> String {
    let rows: Vec<&RatioBar> = rows
        .iter()
        .filter(|r| r.ratio.is_finite() && r.ratio > 0.0)
        .collect();
    let label_w = rows
        .iter()
        .map(|r| text_width(&r.label, LABEL_SIZE))
        .fold(60.0f64, f64::max)
        + 12.0;
    let x0 = label_w;
    let pw = BAR_W - x0 - 170.0;
    let (lo, hi) = rows.iter().fold(
        (1.0 - threshold.max(0.0), 1.0 + threshold.max(0.0)),
        |(a, b), r| {
            let (l, h) = r.interval().unwrap_or((r.ratio, r.ratio));
            (a.min(l).min(r.ratio), b.max(h).max(r.ratio))
        },
    );
    let axis = RatioAxis::new(lo, hi);
    let sx = |v: f64| x0 + axis.at(v) * pw;
    let legend_y = 38.0;
    // The legend in lines of the chart's width (11 px text, about 6 px a
    // character), whole.
    let mut legend = super::text::wrap(&format!("dot: {dot}"), "", "", 118);
    legend.extend(super::text::wrap(
        &format!(
            "line: its {} interval.{}",
            crate::units::percent_text(level),
            if threshold > 0.0 {
                format!(
                    " shaded: within ±{} of 1×, the same",
                    crate::units::percent_text(threshold)
                )
            } else {
                String::new()
            }
        ),
        "",
        "",
        118,
    ));
    let y0 = legend_y + 14.0 * legend.len() as f64 + 2.0;
    let axis_y = y0 + ROW * rows.len().max(1) as f64 + 4.0;
    let mut svg = String::new();
    open(&mut svg, BAR_W, axis_y + 40.0, title);
    for (k, line) in legend.iter().enumerate() {
        text(
            &mut svg,
            10.0,
            legend_y + 14.0 * k as f64,
            11.0,
            "start",
            "lg",
            line,
        );
    }
    if threshold > 0.0 {
        let (l, r) = (sx(1.0 - threshold), sx(1.0 + threshold));
        let _ = write!(
            svg,
            r##"<rect class="band" x="{l:.1}" y="{y0:.1}" width="{:.1}" height="{:.1}" fill="#ddd" fill-opacity="0.7"/>"##,
            (r - l).max(1.0),
            axis_y - y0
        );
    }
    for (t, step) in axis.ticks() {
        let x = sx(t);
        let _ = write!(
            svg,
            r##"<line x1="{x:.1}" x2="{x:.1}" y1="{y0:.1}" y2="{axis_y:.1}" stroke="#e4e4e4"/><line x1="{x:.1}" x2="{x:.1}" y1="{axis_y:.1}" y2="{:.1}" stroke="#333"/>"##,
            axis_y + 4.0
        );
        let label = format!("{}×", tick_label(t, step));
        text(&mut svg, x, axis_y + 15.0, 11.0, "middle", "xl", &label);
    }
    let one = sx(1.0);
    let _ = write!(
        svg,
        r##"<line class="one" x1="{one:.1}" x2="{one:.1}" y1="{:.1}" y2="{axis_y:.1}" stroke="#555" stroke-dasharray="4 3"/><line class="axis" x1="{x0:.1}" x2="{:.1}" y1="{axis_y:.1}" y2="{axis_y:.1}" stroke="#333"/>"##,
        y0 - 4.0,
        x0 + pw
    );
    let axis_title = if axis.log {
        "ratio to the reference (1× = the reference; log scale)"
    } else {
        "ratio to the reference (1× = the reference)"
    };
    let mid = x0 + pw / 2.0;
    text(
        &mut svg,
        mid,
        axis_y + 32.0,
        12.0,
        "middle",
        "ax",
        axis_title,
    );
    for (i, r) in rows.iter().enumerate() {
        write_ratio_row(&mut svg, r, y0 + i as f64 * ROW + 12.0, x0, &sx);
    }
    if rows.is_empty() {
        let none = "no ratio to draw";
        text(&mut svg, x0, y0 + 14.0, 12.0, "start", "ml", none);
    }
    svg.push_str("</svg>");
    svg
}

/// One row of [`ratio_chart`] at `y`: its label, its interval's line, its
/// ratio's dot and, right of both, the figures in words.
fn write_ratio_row(svg: &mut String, r: &RatioBar, y: f64, x0: f64, sx: &dyn Fn(f64) -> f64) {
    let c = color(r.key);
    text(svg, x0 - 6.0, y + 4.0, LABEL_SIZE, "end", "yl", &r.label);
    let (end, words) = match r.interval() {
        Some((low, high)) => {
            let _ = write!(
                svg,
                r##"<line class="interval" x1="{:.1}" x2="{:.1}" y1="{y:.1}" y2="{y:.1}" stroke="{c}" stroke-width="3"/>"##,
                sx(low),
                sx(high).max(sx(low) + 1.0)
            );
            (sx(high).max(sx(r.ratio)), r.words.clone())
        }
        None => (
            sx(r.ratio),
            format!("{}, no interval: too few runs", r.words),
        ),
    };
    let _ = write!(
        svg,
        r##"<circle class="ratio" cx="{:.1}" cy="{y:.1}" r="4" fill="{c}" stroke="#fff"/>"##,
        sx(r.ratio)
    );
    text(svg, end + 8.0, y + 4.0, LABEL_SIZE, "start", "lg", &words);
}

/// The ratio axis of [`ratio_chart`]: linear with round ticks, or, where
/// the ratios span more than 4× end to end, logarithmic with ticks at 1, 2
/// and 5 times the powers of 10.
struct RatioAxis {
    log: bool,
    a: f64,
    b: f64,
    ticks: Vec<f64>,
}

impl RatioAxis {
    fn new(lo: f64, hi: f64) -> RatioAxis {
        if lo > 0.0 && hi / lo > 4.0 {
            let (a, b) = (lo / 1.1, hi * 1.1);
            let mut ticks = Vec::new();
            let mut p = 10f64.powf(a.log10().floor());
            // Beyond three decades 1, 2 and 5 crowd the axis's labels
            // into each other ("0.01×0.02×"): powers of 10 alone.
            let marks: &[f64] = if (b / a).log10() > 3.0 {
                &[1.0]
            } else {
                &[1.0, 2.0, 5.0]
            };
            while p <= b && ticks.len() < 40 {
                for &m in marks {
                    let t = p * m;
                    if t >= a && t <= b {
                        ticks.push(t);
                    }
                }
                p *= 10.0;
            }
            return RatioAxis {
                log: true,
                a,
                b,
                ticks,
            };
        }
        let pad = (hi - lo).max(0.01) * 0.08;
        let ticks = linear_ticks((lo - pad).max(0.0), hi + pad, 6);
        RatioAxis {
            log: false,
            a: ticks.first().copied().unwrap_or(lo).min(lo),
            b: ticks.last().copied().unwrap_or(hi).max(hi),
            ticks,
        }
    }

    /// Where `v` lies, 0 at the axis's start and 1 at its end.
    fn at(&self, v: f64) -> f64 {
        if self.log {
            (v.ln() - self.a.ln()) / (self.b.ln() - self.a.ln()).max(1e-12)
        } else {
            (v - self.a) / (self.b - self.a).max(1e-12)
        }
    }

    /// Each tick with the step its label's decimals follow.
    fn ticks(&self) -> Vec<(f64, f64)> {
        let step = step_of(&self.ticks);
        self.ticks
            .iter()
            .map(|t| (*t, if self.log { *t } else { step }))
            .collect()
    }
}

impl RatioBar {
    /// The interval, where the runs bound it on both sides.
    fn interval(&self) -> Option<(f64, f64)> {
        let ok = |v: f64| v.is_finite() && v > 0.0;
        (ok(self.low) && ok(self.high) && self.low <= self.high).then_some((self.low, self.high))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    /// Box labels cut in the middle dropped exactly the part that differs:
    /// `gzip -1 …argo.lock` and `gzip -9 …argo.lock` kept; the shared path
    /// goes instead.
    #[test]
    fn labels_keep_the_part_of_each_command_that_differs() {
        let names = s(&[
            "gzip -1 -c /work/some/long/path/to/Cargo.lock",
            "gzip -9 -c /work/some/long/path/to/Cargo.lock",
        ]);
        let l = distinct_labels(&names, 18);
        assert_ne!(l[0], l[1], "{l:?}");
        assert!(l[0].contains("-1") && l[1].contains("-9"), "{l:?}");
        assert!(l.iter().all(|x| x.chars().count() <= 18), "{l:?}");
        let names = s(&["/tmp/x/spin 49663675 --flag", "/tmp/x/spin 52146858 --flag"]);
        let l = distinct_labels(&names, 12);
        assert!(l[0].contains("4966") && l[1].contains("5214"), "{l:?}");
        assert_eq!(distinct_labels(&s(&["a", "b"]), 18), s(&["a", "b"]));
        let one = distinct_labels(&s(&["x".repeat(50).as_str()]), 10);
        assert!(one[0].chars().count() <= 10, "{one:?}");
    }

    #[test]
    fn ticks_and_values_read_round() {
        assert_eq!(tick_label(1500.0, 500.0), "1,500");
        assert_eq!(tick_label(0.25, 0.05), "0.25");
        assert_eq!(tick_label(1.0, 0.02), "1.00");
        assert_eq!(value_label(11.6912), "11.7");
        assert_eq!(value_label(0.01234), "0.012");
        assert_eq!(value_label(123456.0), "123,456");
        assert_eq!(time_scale(11_691_000.0).unit, "ms");
        assert_eq!(time_scale(999.0).unit, "ns");
        assert_eq!(byte_scale(2.0 * 1024.0 * 1024.0).unit, "MiB");
    }

    #[test]
    fn bar_values_sit_at_the_bar_end_on_a_ticked_axis() {
        let c = BarChart {
            title: "t",
            axis: "wall time (ms)",
            unit: "ms",
            rows: vec![
                BarRow {
                    label: "a".into(),
                    value: Some(4.0),
                    spread: Some((3.0, 9.0)),
                    key: 0,
                    missing: String::new(),
                },
                BarRow {
                    label: "b".into(),
                    value: None,
                    spread: None,
                    key: 0,
                    missing: "unavailable".into(),
                },
            ],
            keys: vec![(0, "median".into())],
            whisker: Some("min to p95"),
        };
        let svg = bar_chart(&c);
        assert_eq!(svg.matches("class=\"bar\"").count(), 1);
        assert!(
            svg.contains(">4.00 ms<") && svg.contains(">unavailable<"),
            "{svg}"
        );
        // Ticks 0, 2, …, 10: the axis reaches the whisker's end.
        assert!(svg.contains(">10<") && svg.contains(">0<"), "{svg}");
        let bar_end: f64 = svg
            .split("class=\"bar\"")
            .nth(1)
            .and_then(|p| p.split("width=\"").nth(1))
            .and_then(|p| p.split('"').next())
            .and_then(|w| w.parse().ok())
            .unwrap();
        let label_x: f64 = svg
            .split("class=\"lg\">4.00 ms")
            .next()
            .and_then(|p| p.rsplit("<text x=\"").next())
            .and_then(|p| p.split('"').next())
            .and_then(|x| x.parse().ok())
            .unwrap();
        let x0: f64 = svg
            .split("class=\"bar\" x=\"")
            .nth(1)
            .and_then(|p| p.split('"').next())
            .and_then(|x| x.parse().ok())
            .unwrap();
        assert!(
            (label_x - (x0 + bar_end + 4.0)).abs() < 0.2,
            "{label_x} {x0} {bar_end}"
        );
    }

    #[test]
    fn ratio_chart_marks_one_and_the_band() {
        let rows = [RatioBar {
            label: "wall time: #2".into(),
            key: 1,
            ratio: 1.2,
            low: 1.1,
            high: 1.3,
            words: "1.20× [1.10, 1.30]".into(),
        }];
        let svg = ratio_chart("r", &rows, 0.02, 0.95, "the ratio");
        assert_eq!(svg.matches("class=\"interval\"").count(), 1);
        assert!(svg.contains("class=\"one\"") && svg.contains("class=\"band\""));
        assert!(svg.contains("1.20× [1.10, 1.30]"), "{svg}");
        assert!(svg.contains("dot: the ratio"), "{svg}");
        assert!(!ratio_chart("r", &[], 0.0, 0.95, "x").contains("NaN"));
    }
}
