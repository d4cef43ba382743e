//! The human, table and Prometheus forms of `tally bench`'s report
//! ([`super::model`] holds the report itself and its JSON schema).

use std::io::{self, Write};

use super::figure::{Figure, Value};
use super::format::{MAX_WIDTH, format_in, format_ns, format_x, implausible_text, scale_for, wrap};
use super::model::BenchReport;
use crate::report::text::{Column, TextTable};
use crate::report::{Metric, Render, Style, Table};
use crate::units::{human_bytes, thousands_f};

/// The spread for people: the CV, or with preempted samples (outliers)
/// the CV without them, marked `*`; for an unstable figure, `unstable ±x%`
/// (what it may move between runs) instead.
fn cv_text(f: &Figure) -> String {
    if let Some(p) = f.unstable() {
        return format!("unstable ±{p:.0}%");
    }
    match (f.outliers, f.cv_without_outliers, f.cv) {
        (0, _, Some(c)) => format!("±{:.1}%", c * 100.0),
        (n, Some(c), _) if n > 0 => format!("±{:.1}%*", c * 100.0),
        (_, _, Some(c)) => format!("±{:.1}%", c * 100.0),
        _ => "-".into(),
    }
}

/// Writes `text` wrapped to [`MAX_WIDTH`]: first line after `first`,
/// continuations after `rest`.
fn wrapped(out: &mut dyn Write, text: &str, first: &str, rest: &str) -> io::Result<()> {
    for line in wrap(text, first, rest, MAX_WIDTH) {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

fn machine_lines(r: &BenchReport, out: &mut dyn Write) -> io::Result<()> {
    let m = &r.machine;
    wrapped(
        out,
        &format!(
            "tally bench ({:?} mode, {:.1} s) on {}, {} CPUs, kernel {}, {}",
            r.mode,
            r.duration_ms as f64 / 1000.0,
            // Read from the machine: escaped as text not from tally.
            m.cpu_model
                .as_deref()
                .map_or("unknown CPU".into(), crate::text::escape_text),
            m.logical_cpus,
            m.kernel
                .as_deref()
                .map_or("unknown".into(), crate::text::escape_text),
            m.hypervisor.as_deref().map_or(
                "bare metal or undetected hypervisor".to_string(),
                |h| format!("hypervisor: {}", crate::text::Foreign(h))
            ),
        ),
        "",
        "    ",
    )?;
    let caches: Vec<String> = m
        .caches
        .iter()
        .map(|c| {
            let kind = match c.kind.as_str() {
                "Data" => "d",
                "Instruction" => "i",
                _ => "",
            };
            format!(
                "L{}{kind} {}",
                c.level,
                human_bytes(c.size_bytes).replace(".0 ", " ")
            )
        })
        .collect();
    wrapped(
        out,
        &format!(
            "TSC {}, core {} (measured), clocksource {}, governor {}, THP {}, address layout {}, caches (sysfs): {}",
            m.tsc_hz.map_or("unavailable".into(), |hz| format!(
                "{} MHz",
                thousands_f(hz / 1e6)
            )),
            m.core_mhz.map_or("unavailable".into(), |mhz| format!(
                "{} MHz",
                thousands_f(mhz)
            )),
            m.clocksource.as_deref().unwrap_or("unknown"),
            m.governor.as_deref().unwrap_or("unavailable (no cpufreq)"),
            m.thp_enabled.as_deref().unwrap_or("unknown"),
            if m.layout_fixed {
                "fixed (setarch -R)"
            } else {
                "randomised (could not be fixed: runs may differ)"
            },
            if caches.is_empty() {
                "unavailable".to_string()
            } else {
                caches.join(", ")
            },
        ),
        "  ",
        "    ",
    )?;
    let c = &r.harness.calibration;
    wrapped(
        out,
        &format!(
            "timer {} read {}, resolution {}; empty loop {}/iter; {} per figure in {} passes over the benchmarks, {} warm-up samples dropped in each; {}; {}",
            c.timer_source.describe(),
            format_ns(c.timer_overhead_ns),
            format_ns(c.timer_resolution_ns),
            format_ns(c.loop_overhead_ns),
            format_ns(r.harness.budget_per_figure_ms as f64 * 1e6),
            r.harness.passes,
            r.harness.warmup_samples,
            r.harness
                .pinned_cpu
                .map_or("not pinned".into(), |c| format!("pinned to CPU {c}")),
            r.harness.priority,
        ),
        "  ",
        "    ",
    )?;
    wrapped(
        out,
        "figures: median ±CV (stddev/mean of the samples; * = without outliers, i.e. preempted samples, counted in the JSON), min, p95, in the unit of the row (or of the column, in sweeps); \"unstable ±x%\" instead of the CV: the samples spread, drifted or came apart between two passes by x%, so the median may move that much from run to run",
        "  ",
        "    ",
    )?;
    wrapped(out, &r.noise.describe(), "  ", "    ")?;
    if let Some(line) = r.noise.describe_reference() {
        wrapped(out, &line, "  ", "    ")?;
    }
    Ok(())
}

/// The style tables are written in: at most [`MAX_WIDTH`] wide on a
/// terminal; whole on a file or a pipe.
fn narrow(style: Style) -> Style {
    Style {
        width: style.width.map(|w| w.min(MAX_WIDTH)),
        ..style
    }
}

/// A short note fits the table's note column; longer ones go below.
const SHORT_NOTE: usize = 24;

fn short_note(f: &Figure) -> Option<&str> {
    match f.notes.as_slice() {
        [n] if n.chars().count() <= SHORT_NOTE => Some(n.as_str()),
        _ => None,
    }
}

/// The cells of a figure with no median: `word`, then nothing.
fn no_figures(word: &str) -> [String; 5] {
    [
        word.to_string(),
        String::new(),
        String::new(),
        String::new(),
        String::new(),
    ]
}

/// Writes each of `lines` wrapped, once, after `first` (later lines of
/// one indented further).
fn write_once(out: &mut dyn Write, lines: &[String], first: &str) -> io::Result<()> {
    let mut seen: Vec<&String> = Vec::new();
    for t in lines {
        if !seen.contains(&t) {
            seen.push(t);
            wrapped(out, t, first, "        ")?;
        }
    }
    Ok(())
}

/// The figures without a sweep parameter: one table, a row each (label,
/// median, ±CV, min, p95, the row's unit, a short note, the baseline
/// ratio), then the definitions, reasons and longer notes below.
fn write_singles(
    r: &BenchReport,
    figs: &[&Figure],
    out: &mut dyn Write,
    style: Style,
) -> io::Result<()> {
    if figs.is_empty() {
        return Ok(());
    }
    let with_notes = figs.iter().any(|f| short_note(f).is_some());
    let with_base = r.baseline.is_some();
    let mut columns = vec![
        Column::text("figure").cut_end(),
        Column::number("median"),
        Column::number("±CV"),
        Column::number("min"),
        Column::number("p95"),
        Column::text("unit"),
    ];
    if with_base {
        columns.push(Column::number("vs base"));
    }
    if with_notes {
        columns.push(Column::text("note"));
    }
    let mut table = TextTable::new(columns).prefix("  ");
    let mut below: Vec<String> = Vec::new();
    let mut push_below = |t: String| {
        if !below.contains(&t) {
            below.push(t);
        }
    };
    for f in figs {
        let mut row = vec![f.label.clone()];
        match (f.measured(), &f.implausible, &f.value) {
            (Some(s), _, v) => {
                let sc = scale_for(v, s.median);
                row.extend([
                    format_in(s.median, sc),
                    cv_text(f),
                    format_in(s.min, sc),
                    format_in(s.p95, sc),
                    sc.unit.to_string(),
                ]);
            }
            (None, Some(why), _) if f.value.summary().is_some() => {
                row.extend(no_figures("implausible"));
                push_below(format!("{}: {}", f.label, implausible_text(why)));
            }
            (None, _, Value::Unavailable(why)) => {
                row.extend(no_figures("unavailable"));
                push_below(format!("{}: unavailable: {why}", f.label));
            }
            (None, _, _) => row.extend(no_figures("unavailable")),
        }
        if with_base {
            row.push(
                r.baseline
                    .as_ref()
                    .and_then(|b| b.comparison_of(&f.id))
                    .map_or(String::new(), |c| {
                        format!(
                            "{}× {}",
                            crate::units::decimals(c.ratio, 2),
                            c.verdict.mark()
                        )
                    }),
            );
        }
        let short = short_note(f);
        if with_notes {
            row.push(short.unwrap_or("").to_string());
        }
        table.row(row);
        if short.is_none() {
            for n in &f.notes {
                push_below(format!("{}: {n}", f.label));
            }
        }
    }
    table.write(out, narrow(style))?;
    let defs: Vec<String> = figs
        .iter()
        .map(|f| format!("{}: {}", f.label, f.definition))
        .collect();
    write_once(out, &defs, "    ")?;
    write_once(out, &below, "    note: ")
}

/// Sweep figures (with a parameter `x`): one table per unit of `x`, the
/// parameter down the side, up to three series across, each as a median
/// column in one unit for the whole column and a ±CV column.
fn write_sweep(
    r: &BenchReport,
    figs: &[&Figure],
    out: &mut dyn Write,
    style: Style,
) -> io::Result<()> {
    // Series in order of appearance, each with its x unit.
    let mut series: Vec<(&str, Option<&str>)> = Vec::new();
    for f in figs {
        let key = (f.label.as_str(), f.x_unit.as_deref());
        if !series.contains(&key) {
            series.push(key);
        }
    }
    for (x_unit, in_unit, mut xs) in sweep_tables(figs, &series) {
        xs.sort_unstable();
        xs.dedup();
        for group in &side_by_side(&in_unit) {
            sweep_table(figs, x_unit, group, &xs).write(out, narrow(style))?;
        }
    }
    let defs: Vec<String> = series
        .iter()
        .filter_map(|(s, u)| {
            figs.iter()
                .find(|f| f.label == *s && f.x_unit.as_deref() == *u)
                .map(|f| format!("{s}: {}", f.definition))
        })
        .collect();
    write_once(out, &defs, "    ")?;
    write_once(out, &sweep_notes(figs), "    note: ")?;
    if let Some(base) = &r.baseline {
        let ratios: Vec<f64> = figs.iter().filter_map(|f| base.ratio_of(&f.id)).collect();
        if let Some(s) = crate::stats::summarize(&ratios) {
            wrapped(
                out,
                &format!(
                    "vs baseline: median ratio {}× over {} points (min {}×, max {}×)",
                    crate::units::decimals(s.median, 2),
                    s.count,
                    crate::units::decimals(s.min, 2),
                    crate::units::decimals(s.max, 2)
                ),
                "    ",
                "        ",
            )?;
        }
    }
    Ok(())
}

/// One table of a sweep: the unit of its parameter, its series, and
/// their parameter values.
type SweepTable<'a> = (Option<&'a str>, Vec<&'a str>, Vec<u64>);

/// The tables of a sweep: series side by side when their parameter has
/// the same unit and their values overlap (memlat's three series); apart
/// otherwise (memsys's strides, pages and chases).
fn sweep_tables<'a>(
    figs: &[&Figure],
    series: &[(&'a str, Option<&'a str>)],
) -> Vec<SweepTable<'a>> {
    let xs_of = |s: &str, u: Option<&str>| -> Vec<u64> {
        figs.iter()
            .filter(|f| f.label == s && f.x_unit.as_deref() == u)
            .filter_map(|f| f.x)
            .collect()
    };
    let mut tables: Vec<SweepTable<'a>> = Vec::new();
    for (s, u) in series {
        let xs = xs_of(s, *u);
        match tables
            .iter_mut()
            .find(|(tu, _, txs)| tu == u && xs.iter().any(|x| txs.contains(x)))
        {
            Some((_, labels, txs)) => {
                labels.push(s);
                txs.extend(xs);
            }
            None => tables.push((*u, vec![*s], xs)),
        }
    }
    tables
}

/// The series of one table in groups, as many side by side as fit the
/// width.
fn side_by_side<'a>(in_unit: &[&'a str]) -> Vec<Vec<&'a str>> {
    let mut groups: Vec<Vec<&str>> = Vec::new();
    let mut used = MAX_WIDTH;
    for s in in_unit {
        // Header with " (ns)", its ±CV column (up to "unstable ±100%"), gaps.
        let w = 2 + s.chars().count().max(8) + 6 + 2 + 14;
        match groups.last_mut() {
            Some(g) if used + w <= MAX_WIDTH => {
                g.push(s);
                used += w;
            }
            _ => {
                groups.push(vec![s]);
                used = 2 + 9 + w;
            }
        }
    }
    groups
}

/// The table of the series of `group`: a row per parameter value of
/// `xs`, each series as its median (in one unit for the column) and ±CV.
fn sweep_table(figs: &[&Figure], x_unit: Option<&str>, group: &[&str], xs: &[u64]) -> TextTable {
    let mut columns = vec![Column::number(x_unit.unwrap_or(""))];
    let mut scales = Vec::new();
    for s in group {
        let medians: Vec<f64> = figs
            .iter()
            .filter(|f| f.label == *s && f.x_unit.as_deref() == x_unit)
            .filter_map(|f| f.median())
            .collect();
        let kind = figs
            .iter()
            .find(|f| f.label == *s && f.value.summary().is_some())
            .map(|f| &f.value);
        let typical = crate::stats::summarize(&medians).map_or(0.0, |m| m.median);
        let sc = kind.map(|k| scale_for(k, typical));
        let unit = sc.map_or(String::new(), |s| format!(" ({})", s.unit));
        columns.push(Column::number(format!("{s}{unit}")));
        columns.push(Column::number("±CV"));
        scales.push(sc);
    }
    let find = |x: u64, s: &str| {
        figs.iter()
            .find(|f| f.x == Some(x) && f.label == s && f.x_unit.as_deref() == x_unit)
    };
    let mut table = TextTable::new(columns).prefix("  ");
    for x in xs {
        let shown = format_x(*x, x_unit).replace(&format!(" {}", x_unit.unwrap_or("")), "");
        let mut row = vec![shown];
        for (s, sc) in group.iter().zip(&scales) {
            let (median, cv) = match find(*x, s) {
                Some(f) => match (f.measured(), sc) {
                    (Some(sum), Some(sc)) => (format_in(sum.median, *sc), cv_text(f)),
                    _ if f.implausible.is_some() && f.value.summary().is_some() => {
                        ("implausible".into(), String::new())
                    }
                    _ => ("unavailable".into(), String::new()),
                },
                None => (String::new(), String::new()),
            };
            row.push(median);
            row.push(cv);
        }
        table.row(row);
    }
    table
}

/// The notes below a sweep: why a point is unavailable or implausible,
/// and each point's notes.
fn sweep_notes(figs: &[&Figure]) -> Vec<String> {
    let mut notes: Vec<String> = Vec::new();
    for f in figs {
        let at =
            f.x.map_or(String::new(), |x| format_x(x, f.x_unit.as_deref()));
        match (&f.value, &f.implausible) {
            (Value::Unavailable(why), _) => notes.push(format!("{} unavailable: {why}", f.label)),
            (_, Some(why)) => notes.push(format!("{} at {at}: {}", f.label, implausible_text(why))),
            _ => {}
        }
        notes.extend(f.notes.iter().map(|n| format!("{} at {at}: {n}", f.label)));
    }
    notes
}

// The formats BenchReport renders (checked before the command works).
crate::forms_of!(BenchReport: Text, Data, Table, Metrics, Page);

impl Render for BenchReport {
    fn html(&self, out: &mut dyn Write) -> Option<io::Result<()>> {
        Some(super::html::write(self, out))
    }

    fn human(&self, out: &mut dyn Write, style: Style) -> io::Result<()> {
        // A gate says first what it found, then each gated figure.
        if let Some(g) = self.baseline.as_ref().and_then(|b| b.gate.as_ref()) {
            wrapped(out, &format!("gate: {}", g.headline), "", "    ")?;
            for r in &g.results {
                wrapped(
                    out,
                    &format!(
                        "  {} {}: {} ({})",
                        r.id,
                        r.unit,
                        super::baseline::gate_change(r),
                        super::baseline::gate_phrase(r)
                    ),
                    "",
                    "      ",
                )?;
            }
        }
        machine_lines(self, out)?;
        if let Some(b) = &self.baseline {
            wrapped(out, &format!("baseline: {}", b.describe()), "  ", "    ")?;
            wrapped(
                out,
                &format!(
                    "vs base: ✓ better, ✗ worse (Mann–Whitney U on both runs' samples, p < {}), \
                     = no difference shown (not proof of sameness), ? too few samples",
                    super::baseline::ALPHA
                ),
                "  ",
                "    ",
            )?;
        }
        let mut section = None;
        for b in &self.benchmarks {
            if section != Some(b.section) {
                section = Some(b.section);
                writeln!(out, "\n== {} ==", b.section.title())?;
            }
            writeln!(out)?;
            wrapped(
                out,
                &format!(
                    "{} — {} ({:.1} s)",
                    b.name,
                    b.about,
                    b.duration_ms as f64 / 1000.0
                ),
                "",
                "    ",
            )?;
            if let Some(e) = &b.error {
                wrapped(out, &format!("failed: {e}"), "  ", "    ")?;
            }
            let singles: Vec<&Figure> = b.figures.iter().filter(|f| f.x.is_none()).collect();
            let sweeps: Vec<&Figure> = b.figures.iter().filter(|f| f.x.is_some()).collect();
            if !sweeps.is_empty() {
                write_sweep(self, &sweeps, out, style)?;
            }
            write_singles(self, &singles, out, style)?;
            if let Some(a) = &b.memlat {
                for line in a.lines() {
                    wrapped(out, &line, "  ", "      ")?;
                }
            }
            for n in &b.notes {
                wrapped(out, &format!("note: {n}"), "  ", "    ")?;
            }
        }
        Ok(())
    }

    fn table(&self) -> Table {
        let headers = [
            "benchmark",
            "id",
            "label",
            "x",
            "x_unit",
            "unit",
            "median",
            "min",
            "p95",
            "cv_percent",
            "cv_without_outliers_percent",
            "outliers",
            "spread_percent",
            "halves_percent",
            "passes_percent",
            "unstable_percent",
            "samples",
            "baseline_ratio",
            "baseline_p",
            "baseline_verdict",
            "definition",
            "unavailable",
            "implausible",
        ];
        let mut rows = Vec::new();
        let has_gate = self.baseline.as_ref().and_then(|b| b.gate.as_ref());
        let gated = |id: &str| {
            self.baseline
                .as_ref()?
                .gate
                .as_ref()?
                .results
                .iter()
                .find(|g| g.id == id)
        };
        for b in &self.benchmarks {
            for f in &b.figures {
                let s = f.measured();
                let num =
                    |v: Option<f64>| v.map_or(String::new(), |v| crate::units::decimals(v, 4));
                let pct = |v: Option<f64>| {
                    v.filter(|_| s.is_some())
                        .map_or(String::new(), |v| crate::units::decimals(v, 2))
                };
                rows.push(vec![
                    b.name.clone(),
                    f.id.clone(),
                    f.label.clone(),
                    f.x.map_or(String::new(), |x| x.to_string()),
                    f.x_unit.clone().unwrap_or_default(),
                    f.value.unit_key().to_string(),
                    num(s.map(|s| s.median)),
                    num(s.map(|s| s.min)),
                    num(s.map(|s| s.p95)),
                    f.cv.filter(|_| s.is_some())
                        .map_or(String::new(), |c| format!("{:.2}", c * 100.0)),
                    f.cv_without_outliers
                        .filter(|_| s.is_some())
                        .map_or(String::new(), |c| format!("{:.2}", c * 100.0)),
                    f.outliers.to_string(),
                    pct(f.stability.spread_percent),
                    pct(f.stability.halves_percent),
                    pct(f.stability.passes_percent),
                    pct(f.unstable()),
                    s.map_or("0".into(), |s| s.count.to_string()),
                    num(self.baseline.as_ref().and_then(|bl| bl.ratio_of(&f.id))),
                    num(self
                        .baseline
                        .as_ref()
                        .and_then(|bl| bl.comparison_of(&f.id)?.p_value)),
                    self.baseline
                        .as_ref()
                        .and_then(|bl| bl.comparison_of(&f.id))
                        .map_or(String::new(), |c| c.verdict.name().to_string()),
                    f.definition.clone(),
                    match &f.value {
                        Value::Unavailable(w) => w.clone(),
                        _ => String::new(),
                    },
                    f.implausible
                        .as_deref()
                        .map_or(String::new(), |w| format!("{w}; excluded")),
                ]);
                if let (Some(_), Some(row)) = (has_gate, rows.last_mut()) {
                    row.push(gated(&f.id).map_or(String::new(), |g| g.limit.to_string()));
                    row.push(gated(&f.id).map_or(String::new(), |g| g.outcome.name().to_string()));
                }
            }
        }
        let mut headers: Vec<String> = headers.iter().map(|h| h.to_string()).collect();
        // The gate's columns only with a gate, after the others.
        if has_gate.is_some() {
            headers.extend(["gate_limit".to_string(), "gate_outcome".to_string()]);
        }
        Table { headers, rows }
    }

    fn metrics(&self) -> Option<Vec<Metric>> {
        use crate::report::prometheus::Unit;
        // One family per base unit: latencies in seconds, bandwidths in
        // bytes per second, frequencies in hertz, sizes in bytes.
        let mut families: Vec<Metric> = Vec::new();
        let mut spread = Metric::gauge(
            "tally_bench_spread",
            Unit::Ratio,
            "Robust spread of a tally bench figure's samples (1.4826 × MAD / median).",
        );
        let mut unstable = Metric::gauge(
            "tally_bench_unstable",
            Unit::Ratio,
            "How much an unstable tally bench figure may move between runs (±, a ratio); 0 for a stable figure.",
        );
        for b in &self.benchmarks {
            for f in &b.figures {
                let Some(s) = f.measured() else { continue };
                let (unit, what) = match f.value {
                    Value::Ns(_) => (
                        Unit::Nanoseconds,
                        "seconds per operation the figure defines",
                    ),
                    Value::GbPerS(_) => (Unit::GigabytesPerSecond, "bytes per second"),
                    Value::Mhz(_) => (Unit::Megahertz, "hertz"),
                    Value::Bytes(_) => (Unit::Bytes, "bytes"),
                    Value::Unavailable(_) => continue,
                };
                let mut labels = vec![
                    ("benchmark".to_string(), b.name.clone()),
                    ("figure".to_string(), f.id.clone()),
                ];
                if let Some(x) = f.x {
                    labels.push(("x".to_string(), x.to_string()));
                }
                let at = match families
                    .iter()
                    .position(|m| m.unit.suffix() == unit.suffix())
                {
                    Some(i) => i,
                    None => {
                        families.push(Metric::gauge(
                            "tally_bench_median",
                            unit,
                            format!("Median of a tally bench figure, in {what}."),
                        ));
                        families.len() - 1
                    }
                };
                if let Some(m) = families.get_mut(at) {
                    m.push(labels.clone(), s.median);
                }
                spread.push(
                    labels.clone(),
                    f.stability.spread_percent.map_or(0.0, |p| p / 100.0),
                );
                unstable.push(labels, f.unstable().map_or(0.0, |p| p / 100.0));
            }
        }
        families.extend(
            [spread, unstable]
                .into_iter()
                .filter(|m| !m.samples.is_empty()),
        );
        Some(families)
    }
}

/// A small fixed report, for renderer tests.
#[cfg(test)]
pub(crate) fn sample_report() -> BenchReport {
    use super::harness::{Calibration, Samples, TimerSource};
    use super::machine::{CacheInfo, Machine, Noise};
    use super::model::{BenchResult, HarnessInfo, Mode};
    use super::registry::find;
    let samples = |v: &[f64]| Samples {
        per_op_ns: v.to_vec(),
        iters_per_sample: 1000,
        warmup_discarded: 2,
        clamped: 0,
        too_short: 0,
    };
    let mut sys = BenchResult::new(find("syscall").expect("registered"));
    sys.duration_ms = 310;
    sys.push(Figure::latency(
        "syscall.getpid",
        "getpid (raw syscall)",
        "ns per syscall(SYS_getpid), never cached by libc",
        samples(&[120.0, 121.0, 122.0, 125.0, 900.0]),
    ));
    sys.push(Figure::unavailable(
        "syscall.stat",
        "stat /dev/null",
        "ns per statx(2)",
        "no /dev/null",
    ));
    let mut mem = BenchResult::new(find("memlat").expect("registered"));
    mem.duration_ms = 7400;
    for (x, v) in [(1024u64, 2.0), (2048, 2.1), (65536, 6.8), (4 << 20, 160.0)] {
        mem.push(
            Figure::latency(
                format!("memlat.random_huge.{x}"),
                "random, huge pages",
                "ns per dependent load",
                samples(&[v, v, v * 1.02]),
            )
            .at(x, "bytes"),
        );
    }
    let mut bw = BenchResult::new(find("membw").expect("registered"));
    bw.push(Figure::bandwidth(
        "membw.read.1",
        "read (1 thread)",
        "GB/s read",
        samples(&[100e6, 110e6, 105e6]),
        1e9,
    ));
    let mut all = Figure::bandwidth(
        "membw.read.all",
        "read (all threads)",
        "GB/s read",
        samples(&[1e6, 2e6, 3e6]),
        1e9,
    );
    super::plausible::bandwidth_bound(&mut all, &bw.figures[0], 2);
    bw.push(all);
    BenchReport {
        schema_version: 1,
        mode: Mode::Quick,
        duration_ms: 17_600,
        machine: Machine {
            cpu_model: Some("Test CPU".into()),
            logical_cpus: 2,
            kernel: Some("6.18.0".into()),
            clocksource: Some("tsc".into()),
            governor: None,
            thp_enabled: Some("madvise".into()),
            hypervisor: Some("yes (KVM)".into()),
            mem_total_bytes: Some(24 << 30),
            tsc_hz: Some(2.1e9),
            core_mhz: Some(3000.0),
            caches: vec![CacheInfo {
                level: 1,
                kind: "Data".into(),
                size_bytes: 48 << 10,
                line_bytes: Some(64),
                shared_cpu_list: None,
            }],
            layout_fixed: true,
            unavailable: vec![],
        },
        harness: HarnessInfo {
            calibration: Calibration {
                timer_source: TimerSource::Rdtscp,
                timer_hz: 2.1e9,
                timer_overhead_ns: 30.0,
                timer_resolution_ns: 29.0,
                loop_overhead_ns: 0.4,
            },
            budget_per_figure_ms: 50,
            passes: 2,
            warmup_samples: 2,
            min_samples: 5,
            pinned_cpu: Some(1),
            priority: "nice -20".into(),
        },
        noise: Noise {
            load_average_1m_start: Some(0.1),
            load_average_1m_end: Some(0.5),
            steal_percent: Some(0.0),
            involuntary_switches: 3,
            involuntary_switches_judged: 1,
            judged_ms: 17_000,
            other_cpu_ms: Some(120),
            other_cpu_percent: Some(0.7),
            other_runnable_mean: Some(0.0),
            reference: None,
            noisy: false,
            reasons: vec![],
        },
        benchmarks: vec![sys, mem, bw],
        baseline: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rendered(format: crate::report::Format) -> String {
        let mut out = Vec::new();
        crate::report::render(&sample_report(), format, Style::default(), &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn human_snapshot() {
        insta::assert_snapshot!(rendered(crate::report::Format::HUMAN));
    }

    #[test]
    fn human_lines_fit_100_columns() {
        let text = rendered(crate::report::Format::HUMAN);
        for line in text.lines() {
            assert!(
                line.chars().count() <= MAX_WIDTH,
                "{} chars: {line}",
                line.chars().count()
            );
        }
        // Numbers right-aligned, the unit in a column of its own.
        assert!(text.contains("122.0  ±1.8%*  120.0  900.0  ns\n"), "{text}");
    }

    #[test]
    fn csv_snapshot() {
        insta::assert_snapshot!(rendered(crate::report::Format::CSV));
    }

    #[test]
    fn markdown_snapshot() {
        insta::assert_snapshot!(rendered(crate::report::Format::MARKDOWN));
    }

    #[test]
    fn prometheus_snapshot() {
        insta::assert_snapshot!(rendered(crate::report::Format::PROMETHEUS));
    }

    #[test]
    fn json_round_trips() {
        let r = sample_report();
        let text = rendered(crate::report::Format::JSON);
        let back: BenchReport = serde_json::from_str(&text).unwrap();
        // serde_json may round the last bit of a float: compare closely.
        assert_eq!(back.machine, r.machine);
        assert_eq!(back.benchmarks.len(), r.benchmarks.len());
        let figs = |r: &BenchReport| -> Vec<(String, &'static str, Option<f64>, usize)> {
            r.benchmarks
                .iter()
                .flat_map(|b| &b.figures)
                .map(|f| {
                    (
                        f.id.clone(),
                        f.value.unit_key(),
                        f.median(),
                        f.samples.len(),
                    )
                })
                .collect()
        };
        for (a, b) in figs(&back).iter().zip(figs(&r).iter()) {
            assert_eq!((&a.0, a.1, a.3), (&b.0, b.1, b.3));
            match (a.2, b.2) {
                (Some(x), Some(y)) => assert!((x - y).abs() <= 1e-12 * y.abs().max(1.0)),
                (x, y) => assert_eq!(x, y),
            }
        }
        assert_eq!(figs(&back).len(), 8);
    }

    /// Regression: figures that moved 25–85% between idle runs looked as
    /// exact as any other. An unstable figure says so in every format.
    #[test]
    fn unstable_figures_are_marked_in_every_format() {
        use crate::report::Format;
        let r = sample_report();
        let f = r
            .benchmarks
            .iter()
            .flat_map(|b| &b.figures)
            .find(|f| f.id == "membw.read.1")
            .unwrap();
        let p = f
            .unstable()
            .expect("the sample report has an unstable figure");
        let stable = r
            .benchmarks
            .iter()
            .flat_map(|b| &b.figures)
            .filter(|f| f.measured().is_some() && f.unstable().is_none())
            .count();
        assert!(stable > 0);
        let human = rendered(Format::HUMAN);
        let mark = format!("unstable ±{p:.0}%");
        assert_eq!(human.matches(&mark).count(), 1, "{human}");
        assert!(
            human
                .lines()
                .any(|l| l.starts_with("  read (1 thread)") && l.contains(&mark)),
            "{human}"
        );
        let json: serde_json::Value = serde_json::from_str(&rendered(Format::JSON)).unwrap();
        let figs: Vec<&serde_json::Value> = json["benchmarks"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|b| b["figures"].as_array().unwrap())
            .collect();
        let marked: Vec<&str> = figs
            .iter()
            .filter(|f| {
                f["stability"]["unstable_percent"].is_number() && f["implausible"].is_null()
            })
            .map(|f| f["id"].as_str().unwrap())
            .collect();
        assert_eq!(marked, ["membw.read.1"]);
        let csv = rendered(Format::CSV);
        let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
        let col = header
            .iter()
            .position(|h| *h == "unstable_percent")
            .unwrap();
        let row = csv.lines().find(|l| l.contains("membw.read.1")).unwrap();
        assert_eq!(row.split(',').nth(col), Some(format!("{p:.2}").as_str()));
        let md = rendered(Format::MARKDOWN);
        assert!(
            md.lines()
                .any(|l| l.contains("membw.read.1") && l.contains(&format!("| {p:.2} |")))
        );
        let prom = rendered(Format::PROMETHEUS);
        assert!(prom.contains(&format!(
            "tally_bench_unstable_ratio{{benchmark=\"membw\",figure=\"membw.read.1\"}} {}",
            p / 100.0
        )));
        assert_eq!(
            prom.lines()
                .filter(|l| l.starts_with("tally_bench_unstable_ratio{") && !l.ends_with(" 0"))
                .count(),
            1
        );
        let mut html = Vec::new();
        crate::report::render(&r, Format::HTML, Style::default(), &mut html).unwrap();
        let html = String::from_utf8(html).unwrap();
        assert!(
            html.contains(&mark),
            "in the table of every figure and the bar's label"
        );
    }

    #[test]
    fn ns_formatting_picks_a_unit() {
        assert_eq!(format_ns(0.5), "0.50 ns");
        assert_eq!(format_ns(84.0), "84.0 ns");
        assert_eq!(format_ns(3_145.0), "3.15 µs");
        assert_eq!(format_ns(2_500_000.0), "2.50 ms");
        assert_eq!(format_ns(-800.0), "-800.0 ns");
    }

    #[test]
    fn sizes_drop_the_trailing_zero() {
        assert_eq!(format_x(4096, Some("bytes")), "4 KiB");
        assert_eq!(format_x(16384, Some("fds")), "16,384 fds");
    }
}
