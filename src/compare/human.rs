//! The human layout of `tally compare`: the commands, their wall time's
//! mean ± σ and min … max (as hyperfine prints them), then one block per
//! figure (a row per command: median ± MAD in percent, the ratio to the
//! reference with its interval, the verdict), figures that did not change
//! on one line, then warnings. Fits 100 columns.

use std::io::{self, Write};

use super::plan::Sort;
use super::prose::{percent, point_ratio, ratio_text};
use super::report::{CompareReport, FigureComparison, Verdict};
use super::summary;
use crate::report::Style;
use crate::report::text::{Column, TextTable, paragraph, tally_lines};
use crate::run::report::{FIGURES, Figure};
use crate::units::thousands;

/// `#2 mmap`, `#2 ✗ mmap` when some of its runs failed; a name longer
/// than [`LABEL_CHARS`] keeps what tells it from the others' (`#2 …--mmap
/// model.bin`), the part every name shares elided (a regression: a long
/// command showed as `#2` alone, to be looked up above the table).
fn label(r: &CompareReport, i: usize) -> String {
    let c = &r.commands[i];
    let flag = if c.failed_runs > 0 { " ✗" } else { "" };
    if c.from_baseline {
        return format!("#{}{flag} baseline", i + 1);
    }
    let names: Vec<String> = r
        .commands
        .iter()
        .map(|c| crate::text::escape_text(&c.name))
        .collect();
    let shown = crate::report::svg::distinct_labels(&names, LABEL_CHARS)
        .swap_remove(i.min(names.len().saturating_sub(1)));
    // The flag goes before the name, which a narrow table may cut.
    format!("#{}{flag} {shown}", i + 1)
}

/// The most characters of a command's name in a row's label.
const LABEL_CHARS: usize = 24;

/// The order of the commands in each figure's rows (`--sort`).
fn row_order(r: &CompareReport) -> Vec<usize> {
    let n = r.commands.len();
    let wall = |i: &usize, mean: bool| {
        r.commands
            .get(*i)
            .and_then(|c| c.summary_of(FIGURES[0].key))
            .map_or(f64::INFINITY, |s| if mean { s.mean } else { s.median })
    };
    let mut order: Vec<usize> = (0..n).collect();
    match r.view.sort {
        Sort::Command => {}
        Sort::Auto => {
            // With a baseline, each command after its stored runs.
            if r.baseline.is_some() {
                order = r
                    .commands
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| !c.from_baseline)
                    .flat_map(|(i, c)| c.compared_with.into_iter().chain([i]))
                    .collect();
            }
        }
        Sort::MeanTime => order.sort_by(|a, b| wall(a, true).total_cmp(&wall(b, true))),
        Sort::MedianTime => order.sort_by(|a, b| wall(a, false).total_cmp(&wall(b, false))),
    }
    order
}

pub(super) fn write(r: &CompareReport, out: &mut dyn Write, style: Style) -> io::Result<()> {
    // At most 100 columns on a terminal, narrower on a narrower one; a
    // file or a pipe gets whole lines.
    let style = Style {
        width: style.width.map(|w| w.min(100)),
        ..style
    };
    let width = style.width.unwrap_or(100).min(100);
    if r.commands.len() == 1 {
        return single(r, out, style, width);
    }
    // A gate says first what it found.
    if let Some(g) = &r.gate {
        paragraph(out, &format!("gate: {}", g.headline), width)?;
    }
    let runs = r.runs_per_command;
    let warm = if r.warmup_runs > 0 {
        format!(" after {} warm-up", r.warmup_runs)
    } else {
        String::new()
    };
    let measured = r.commands.iter().filter(|c| !c.from_baseline).count();
    let against = match &r.baseline {
        Some(b) => format!(
            ", against the baseline {}{}",
            crate::text::path::display(&b.path),
            b.saved_at
                .as_deref()
                .map_or(String::new(), |t| format!(" (saved {t})"))
        ),
        None => String::new(),
    };
    paragraph(
        out,
        &format!(
            "{measured} command{}, {} run{} each{warm}{against}, interleaved in an order \
             from seed {} (--seed {} replays it)",
            if measured == 1 { "" } else { "s" },
            thousands(u64::from(runs)),
            if runs == 1 { "" } else { "s" },
            r.seed,
            r.seed
        ),
        width,
    )?;
    let mut cmds = TextTable::new(vec![
        Column::text(""),
        Column::text("").cut_end(),
        Column::text("").cut_middle(),
    ])
    .prefix("  ")
    .without_header();
    for (i, c) in r.commands.iter().enumerate() {
        let note = if c.from_baseline {
            " (baseline)".to_string()
        } else if i == r.reference {
            match r.reference_is {
                "fastest" => " (reference: the fastest)".to_string(),
                _ => " (reference)".to_string(),
            }
        } else {
            String::new()
        };
        let shown = if c.name == c.command {
            String::new()
        } else {
            crate::text::escape_text(&c.command)
        };
        let flag = if c.failed_runs > 0 { " ✗" } else { "" };
        cmds.row(vec![
            format!("#{}{flag}{note}", i + 1),
            crate::text::escape_text(&c.name),
            shown,
        ]);
    }
    cmds.write(out, style)?;
    mean_and_range(r, out, style)?;
    if r.gate.is_some() {
        gate_tables(r, out, style)?;
    } else {
        figure_table(r, out, style)?;
    }
    if summary::shows_tick_sampled(r) {
        paragraph(out, crate::run::report::TICK_NOTE, width)?;
    }
    footer(r, out, width)
}

/// One command, compared with nothing: hyperfine's summary of its wall
/// time (`hyperfine CMD`: mean ± σ with user and system, min … max and the
/// runs), then each figure's median ± MAD and range, as `tally run -n`
/// gives them.
fn single(r: &CompareReport, out: &mut dyn Write, style: Style, width: usize) -> io::Result<()> {
    let Some(c) = r.commands.first() else {
        return Ok(());
    };
    let warm = if r.warmup_runs > 0 {
        format!(" after {} warm-up", r.warmup_runs)
    } else {
        String::new()
    };
    paragraph(
        out,
        &format!(
            "{}: {}{warm}",
            crate::text::escape_text(&c.command),
            crate::units::count(c.runs.len() as u64, "run", "runs")
        ),
        width,
    )?;
    let wall = &FIGURES[0];
    let v = |fig: &Figure, x: f64| summary::value(fig, x, &r.view);
    let find = |key: &str| FIGURES.iter().find(|f| f.key == key);
    if let Some(s) = c.summary_of(wall.key) {
        let sd = s.stddev.map_or("—".to_string(), |sd| v(wall, sd));
        let part = |key: &str| {
            let fig = find(key)?;
            Some(v(fig, c.summary_of(key)?.mean))
        };
        let cpu = match (part("user_us"), part("system_us")) {
            (Some(u), Some(k)) => format!("  [user: {u}, kernel: {k}, means]"),
            _ => String::new(),
        };
        let mut t = TextTable::new(vec![Column::text(""), Column::number(""), Column::text("")])
            .prefix("  ")
            .without_header();
        t.row(vec![
            "wall time (mean ± σ):".into(),
            format!("{} ± {sd}", v(wall, s.mean)),
            cpu,
        ]);
        t.row(vec![
            "range (min … max):".into(),
            format!("{} … {}", v(wall, s.min), v(wall, s.max)),
            format!(
                "  {}",
                crate::units::count(c.runs.len() as u64, "run", "runs")
            ),
        ]);
        t.write(out, style)?;
    }
    let mut t = TextTable::new(vec![
        Column::text("").cut_end(),
        Column::number("median ± MAD"),
        Column::number("min … max"),
    ]);
    let mut zero = Vec::new();
    for fig in FIGURES {
        let Some(s) = c.summary_of(fig.key) else {
            continue;
        };
        if s.max == 0.0 && !fig.headline {
            zero.push(fig.label.to_string());
            continue;
        }
        let spread = if s.median != 0.0 {
            format!(" ±{:.1}%", s.mad / s.median.abs() * 100.0)
        } else {
            String::new()
        };
        t.row(vec![
            format!("  {}", fig.label),
            format!("{}{spread}", v(fig, s.median)),
            format!("{} … {}", v(fig, s.min), v(fig, s.max)),
        ]);
    }
    t.write(out, style)?;
    names_line(out, "0 in every run:", &zero, width)?;
    if summary::shows_tick_sampled(r) {
        paragraph(out, crate::run::report::TICK_NOTE, width)?;
    }
    for w in &r.warnings {
        tally_lines(out, &format!("tally: warning: {w}"), width)?;
    }
    Ok(())
}

/// With a gate: per command its gated figures, the headline figures and
/// every figure that differs (see [`summary::tables`]).
fn gate_tables(r: &CompareReport, out: &mut dyn Write, style: Style) -> io::Result<()> {
    for t in summary::tables(r) {
        writeln!(
            out,
            "{} against {}",
            summary::who(r, t.index),
            summary::who(r, t.reference)
        )?;
        let mut table = TextTable::new(vec![
            Column::text("figure").cut_end(),
            Column::number("reference"),
            Column::number("now"),
            Column::number("ratio"),
            Column::text("interval"),
            Column::text("verdict"),
        ])
        .prefix("  ");
        for row in &t.rows {
            table.row(vec![
                row.figure.clone(),
                row.reference.clone(),
                row.now.clone(),
                row.ratio.clone(),
                row.interval.clone(),
                row.verdict.clone(),
            ]);
        }
        table.write(out, style)?;
        if t.others > 0 {
            writeln!(
                out,
                "  {} other figure{} not different",
                t.others,
                if t.others == 1 { "" } else { "s" }
            )?;
        }
    }
    Ok(())
}

/// Without a gate: a block per figure, a row per command.
/// Wall time as hyperfine prints it, beside the medians below: mean ± σ
/// and min … max of each command's runs.
fn mean_and_range(r: &CompareReport, out: &mut dyn Write, style: Style) -> io::Result<()> {
    let fig = &FIGURES[0];
    // Commands counted under the simulator only were not timed.
    if r.commands.iter().all(|c| c.summary_of(fig.key).is_none()) {
        return Ok(());
    }
    let mut table = TextTable::new(vec![
        Column::text(fig.label).cut_end(),
        Column::number("mean ± σ"),
        Column::number("min … max"),
    ]);
    for i in row_order(r) {
        let Some(s) = r.commands[i].summary_of(fig.key) else {
            continue;
        };
        let v = |x: f64| summary::value(fig, x, &r.view);
        let sd = s.stddev.map_or("—".to_string(), v);
        table.row(vec![
            format!("  {}", label(r, i)),
            format!("{} ± {sd}", v(s.mean)),
            format!("{} … {}", v(s.min), v(s.max)),
        ]);
    }
    table.write(out, style)
}

/// Where a figure goes in the default layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// Its own block: a headline figure (wall time, cpu time, peak
    /// memory), one that differs for some command, or one whose ranges
    /// are apart where the runs are too few for an interval.
    Block,
    /// The `unchanged:` line: every command's median is its reference's,
    /// and no verdict calls it different (every run alike, or runs that
    /// vary around the same median).
    Still,
    /// The `not different` line: no difference shown, medians apart.
    Quiet,
}

fn place(r: &CompareReport, fig: &Figure, present: &[usize]) -> Place {
    let versus: Vec<&FigureComparison> = present
        .iter()
        .filter_map(|i| r.commands[*i].versus(fig.key))
        .collect();
    let apart = versus.iter().any(|v| v.ranges_overlap == Some(false));
    if r.view.all_figures || fig.headline || apart || versus.iter().any(|v| v.verdict.differs()) {
        return Place::Block;
    }
    let median = |i: usize| {
        r.commands
            .get(i)
            .and_then(|c| c.summary_of(fig.key))
            .map(|s| s.median)
    };
    let still = present.iter().all(|&i| match r.commands[i].compared_with {
        Some(j) => median(i).is_some() && median(i) == median(j),
        None => true,
    });
    if still { Place::Still } else { Place::Quiet }
}

/// The ratio of `i`'s median of `fig` over its reference's: what runs too
/// few for an interval show.
fn medians_ratio(r: &CompareReport, i: usize, fig: &Figure) -> Option<f64> {
    let c = r.commands.get(i)?;
    let here = c.summary_of(fig.key)?.median;
    let there = r
        .commands
        .get(c.compared_with?)?
        .summary_of(fig.key)?
        .median;
    (there != 0.0).then(|| here / there)
}

/// Whether some figure had too few runs for an interval: the table then
/// shows each command's range and, for those figures, the ratio of the
/// medians.
fn too_few_runs(r: &CompareReport) -> bool {
    r.commands
        .iter()
        .flat_map(|c| &c.versus_reference)
        .any(|v| v.verdict == Verdict::TooFewRuns)
}

fn figure_table(r: &CompareReport, out: &mut dyn Write, style: Style) -> io::Result<()> {
    let reference = r.reference + 1;
    let level = percent(r.interval_level);
    let few = too_few_runs(r);
    let against = if r.baseline.is_some() {
        "vs baseline".to_string()
    } else {
        format!("vs #{reference}")
    };
    let versus = if few {
        against
    } else {
        format!("{against} ({level} CI)")
    };
    let mut table = TextTable::new(vec![
        Column::text("").cut_end(),
        Column::number(if few {
            "median (range)"
        } else {
            "median ± MAD"
        }),
        Column::text(versus),
        Column::text("verdict"),
    ]);
    let order = row_order(r);
    let mut still = Vec::new();
    let mut quiet = Vec::new();
    for fig in FIGURES {
        let present: Vec<usize> = order
            .iter()
            .copied()
            .filter(|i| r.commands[*i].summary_of(fig.key).is_some())
            .collect();
        if present.is_empty() {
            continue;
        }
        match place(r, fig, &present) {
            Place::Block => {}
            Place::Still => {
                let median = r
                    .commands
                    .get(r.reference)
                    .and_then(|c| c.summary_of(fig.key))
                    .map(|s| summary::value(fig, s.median, &r.view))
                    .unwrap_or_default();
                still.push(format!("{} ({median})", fig.label));
                continue;
            }
            Place::Quiet => {
                quiet.push(fig.label.to_string());
                continue;
            }
        }
        table.span(vec![fig.label.to_string()], String::new());
        for &i in &present {
            let c = &r.commands[i];
            let Some(s) = c.summary_of(fig.key) else {
                continue;
            };
            let v = |x: f64| summary::value(fig, x, &r.view);
            let median = if few {
                format!("{} ({} … {})", v(s.median), v(s.min), v(s.max))
            } else if s.median != 0.0 {
                format!("{} ±{:.1}%", v(s.median), s.mad / s.median.abs() * 100.0)
            } else {
                v(s.median)
            };
            let (ratio, verdict) = match c.versus(fig.key) {
                Some(x) if x.verdict == Verdict::TooFewRuns => (
                    medians_ratio(r, i, fig).map_or("—".to_string(), point_ratio),
                    summary::verdict_text(fig, x, r.threshold),
                ),
                // The reference's median is 0: no ratio, a direction.
                Some(x) if x.ratio.is_none() => (
                    "from 0".to_string(),
                    summary::verdict_text(fig, x, r.threshold),
                ),
                Some(x) => (ratio_text(x), summary::verdict_text(fig, x, r.threshold)),
                None if i == r.reference || c.from_baseline => {
                    ("reference".to_string(), String::new())
                }
                None => ("—".to_string(), String::new()),
            };
            table.row(vec![format!("  {}", label(r, i)), median, ratio, verdict]);
        }
    }
    table.write(out, style)?;
    let width = style.width.unwrap_or(100).min(100);
    names_line(out, "unchanged:", &still, width)?;
    if !quiet.is_empty() {
        names_line(
            out,
            &format!(
                "no difference shown{}:",
                if r.view.all_figures {
                    ""
                } else {
                    " (--all-figures shows them)"
                }
            ),
            &quiet,
            width,
        )?;
    }
    Ok(())
}

/// `head` and `names`, comma-separated, in lines of at most `width`
/// characters, continued two spaces in.
fn names_line(out: &mut dyn Write, head: &str, names: &[String], width: usize) -> io::Result<()> {
    if names.is_empty() {
        return Ok(());
    }
    paragraph(out, &format!("{head} {}", names.join(", ")), width)
}

/// What the rows of figures too few runs could decide show instead of an
/// interval, and how often ranges lie apart by chance.
fn few_runs_note(r: &CompareReport) -> Option<String> {
    let (mut least, mut need) = (usize::MAX, 0);
    for (c, v) in r
        .commands
        .iter()
        .flat_map(|c| c.versus_reference.iter().map(move |v| (c, v)))
        .filter(|(_, v)| v.verdict == Verdict::TooFewRuns)
    {
        least = least.min(c.runs.len());
        need = need.max(v.runs_needed.unwrap_or(0));
    }
    if least == usize::MAX {
        return None;
    }
    let n = r
        .commands
        .get(r.reference)
        .map_or(least, |c| c.runs.len())
        .min(least);
    let chance = super::prose::ranges_apart_by_chance(least, n);
    Some(format!(
        "too few runs: {least} of each bound no interval at {} ({need} would); those rows \
         show each command's range (least … greatest) and the ratio of the medians, and no \
         verdict: the ranges of a command and itself lie apart by chance {}",
        percent(r.interval_level),
        super::prose::one_in(chance)
    ))
}

/// Failed runs, the method, the headlines and the warnings.
fn footer(r: &CompareReport, out: &mut dyn Write, width: usize) -> io::Result<()> {
    let level = percent(r.interval_level);
    for (i, c) in r.commands.iter().enumerate() {
        if c.failed_runs > 0 {
            writeln!(
                out,
                "✗ #{}: {} of {} runs failed ({})",
                i + 1,
                c.failed_runs,
                c.runs.len(),
                c.exits.join(", ")
            )?;
        }
    }
    if let Some(sig) = &r.interrupted_by {
        writeln!(out, "tally: interrupted by {sig}")?;
    }
    if let Some(p) = &r.page_cache {
        let line = |what: &str, done: &str, files: u64, median: Option<u64>, total: u64| {
            format!(
                "{what}: {} {done} before each of {} runs: {} per run (median), {} \
                 in all, counted in no run",
                crate::units::count(files, "file", "files"),
                thousands(p.runs),
                crate::units::time_ns(median.unwrap_or(0) as f64),
                crate::units::time_ns(total as f64),
            )
        };
        if let Some(files) = p.warmed_files {
            let text = line("warm", "warmed", files, p.warm_ns_median, p.warm_ns_total);
            paragraph(out, &text, width)?;
        }
        if let Some(files) = p.evicted_files {
            let text = line(
                "cold",
                "evicted",
                files,
                p.evict_ns_median,
                p.evict_ns_total,
            );
            paragraph(out, &text, width)?;
        }
    }
    let over = if r.baseline.is_some() {
        "the baseline's".to_string()
    } else {
        format!("#{}'s", r.reference + 1)
    };
    if r.family_size > 0 || r.count.is_none() {
        paragraph(
            out,
            &format!(
                "ratios over {over}: Hodges-Lehmann, {level} Mann-Whitney (Moses) interval \
                 (all {} together at {}, Bonferroni); verdict from the interval: beyond {} \
                 different, inside the same, across undecided",
                r.family_size.max(1),
                percent(1.0 - r.alpha),
                percent(r.threshold)
            ),
            width,
        )?;
    }
    if let Some(c) = &r.count {
        paragraph(
            out,
            &format!(
                "counts: {}; a counted figure whose runs repeat within {} is compared exactly: \
                 its interval runs from the smallest to the largest ratio of two runs",
                crate::count::human::source_line(&c.source),
                percent(super::report::COUNT_SPREAD)
            ),
            width,
        )?;
    }
    if let Some(text) = few_runs_note(r) {
        paragraph(out, &text, width)?;
    }
    for c in r.commands.iter().filter(|c| !c.headline.is_empty()) {
        paragraph(out, &format!("verdict {}", c.headline), width)?;
    }
    for line in super::summary::where_changed(r) {
        paragraph(out, &line, width)?;
    }
    let mut said: Vec<&String> = Vec::new();
    for note in r
        .commands
        .iter()
        .filter_map(|c| c.count.as_ref())
        .flat_map(|c| &c.notes)
    {
        if !said.contains(&note) {
            said.push(note);
            tally_lines(out, &format!("tally: note: {note}"), width)?;
        }
    }
    for w in &r.warnings {
        if w.contains("runs failed") || summary::said_by_gate(r, w) {
            continue;
        }
        tally_lines(out, &format!("tally: warning: {w}"), width)?;
    }
    Ok(())
}
