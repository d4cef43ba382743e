//! The human layout of `tally compare`: the commands, then one block per
//! figure (a row per command: median ± MAD in percent, the ratio to the
//! reference with its interval, the verdict), figures that did not change
//! on one line, then warnings. Fits 100 columns.

use std::io::{self, Write};

use super::report::{CompareReport, Verdict, direction, p_text, percent, ratio_text};
use crate::report::Style;
use crate::report::text::{Column, TextTable};
use crate::run::report::FIGURES;
use crate::units::thousands;

/// `#2 mmap`, `#2 ✗ mmap` when some of its runs failed; a command without a
/// name longer than 16 characters is its number alone (the list of
/// commands above the table spells it out).
fn label(r: &CompareReport, i: usize) -> String {
    let c = &r.commands[i];
    let flag = if c.failed_runs > 0 { " ✗" } else { "" };
    // The flag goes before the name, which a narrow table may cut.
    if c.name == c.command && c.name.chars().count() > 16 {
        format!("#{}{flag}", i + 1)
    } else {
        format!("#{}{flag} {}", i + 1, c.name)
    }
}

pub(super) fn write(r: &CompareReport, out: &mut dyn Write, style: Style) -> io::Result<()> {
    // At most 100 columns, narrower on a narrower terminal.
    let style = Style {
        width: Some(style.width.unwrap_or(100).min(100)),
        ..style
    };
    let runs = r.runs_per_command;
    let warm = if r.warmup_runs > 0 {
        format!(" after {} warm-up", r.warmup_runs)
    } else {
        String::new()
    };
    wrapped(
        out,
        &format!(
            "tally: {} commands, {} run{} each{warm}, interleaved in an order from seed {} \
             (--seed {} replays it)",
            r.commands.len(),
            thousands(u64::from(runs)),
            if runs == 1 { "" } else { "s" },
            r.seed,
            r.seed
        ),
        style.width.unwrap_or(100).min(100),
    )?;
    let mut cmds = TextTable::new(vec![
        Column::text(""),
        Column::text("").cut_end(),
        Column::text("").cut_middle(),
    ])
    .prefix("tally:   ")
    .without_header();
    for (i, c) in r.commands.iter().enumerate() {
        let note = if i == r.reference {
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
            c.command.clone()
        };
        let flag = if c.failed_runs > 0 { " ✗" } else { "" };
        cmds.row(vec![
            format!("#{}{flag}{note}", i + 1),
            c.name.clone(),
            shown,
        ]);
    }
    cmds.write(out, style)?;

    let reference = r.reference + 1;
    let level = percent(r.interval_level);
    let mut table = TextTable::new(vec![
        Column::text("").cut_end(),
        Column::number("median ± MAD"),
        Column::text(format!("vs #{reference} ({level} CI)")),
        Column::text("verdict"),
    ])
    .prefix("tally: ");
    let mut unchanged = Vec::new();
    // A difference whose medians' interval still holds 1 (marked `*`).
    let mut starred = false;
    for fig in FIGURES {
        let present: Vec<usize> = (0..r.commands.len())
            .filter(|i| r.commands[*i].summary_of(fig.key).is_some())
            .collect();
        if present.is_empty() {
            continue;
        }
        let all_same = r.unchanged(fig.key);
        let zero = present.iter().all(|i| {
            r.commands[*i]
                .summary_of(fig.key)
                .is_some_and(|s| s.max == 0.0)
        });
        if (all_same || zero) && !fig.headline {
            let median = r
                .commands
                .get(r.reference)
                .and_then(|c| c.summary_of(fig.key))
                .map(|s| fig.human(s.median))
                .unwrap_or_default();
            unchanged.push(format!("{} ({median})", fig.label));
            continue;
        }
        table.span(vec![fig.label.to_string()], String::new());
        for &i in &present {
            let c = &r.commands[i];
            let Some(s) = c.summary_of(fig.key) else {
                continue;
            };
            let spread = if s.median != 0.0 {
                format!(" ±{:.1}%", s.mad / s.median.abs() * 100.0)
            } else {
                String::new()
            };
            let median = format!("{}{spread}", fig.human(s.median));
            let (ratio, verdict) = match c.versus(fig.key) {
                Some(v) => {
                    let word = direction(fig, v.verdict);
                    let verdict = match v.verdict {
                        Verdict::Lower | Verdict::Higher => {
                            let star = v.interval_holds_one();
                            starred |= star;
                            format!(
                                "{word} ({}){}",
                                p_text(v.p_adjusted),
                                if star { "*" } else { "" }
                            )
                        }
                        Verdict::SameWithinThreshold => {
                            format!("{word} {}", percent(r.threshold))
                        }
                        Verdict::TooFewRuns => match v.runs_needed {
                            Some(n) => format!("{word} (need {n})"),
                            None => word.to_string(),
                        },
                        _ => word.to_string(),
                    };
                    (ratio_text(v), verdict)
                }
                None if i == r.reference => ("reference".to_string(), String::new()),
                None => ("—".to_string(), String::new()),
            };
            table.row(vec![format!("  {}", label(r, i)), median, ratio, verdict]);
        }
    }
    table.write(out, style)?;
    if !unchanged.is_empty() {
        let mut line = String::from("tally: unchanged:");
        let width = style.width.unwrap_or(100).min(100);
        for (n, u) in unchanged.iter().enumerate() {
            let piece = if n == 0 {
                format!(" {u}")
            } else {
                format!(", {u}")
            };
            if line.chars().count() + piece.chars().count() + 1 > width {
                writeln!(out, "{line},")?;
                line = format!("tally:   {}", piece.trim_start_matches(", ").trim_start());
            } else {
                line.push_str(&piece);
            }
        }
        writeln!(out, "{line}")?;
    }
    for (i, c) in r.commands.iter().enumerate() {
        if c.failed_runs > 0 {
            writeln!(
                out,
                "tally: ✗ #{}: {} of {} runs failed ({})",
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
    let width = style.width.unwrap_or(100).min(100);
    if let Some(p) = &r.page_cache {
        let line = |what: &str, done: &str, files: u64, median: Option<u64>, total: u64| {
            format!(
                "tally: {what}: {} {done} before each of {} runs: {}µs per run (median), {}µs \
                 in all, counted in no run",
                crate::units::count(files, "file", "files"),
                thousands(p.runs),
                thousands(median.unwrap_or(0) / 1000),
                thousands(total / 1000),
            )
        };
        if let Some(files) = p.warmed_files {
            let text = line("warm", "warmed", files, p.warm_ns_median, p.warm_ns_total);
            wrapped(out, &text, width)?;
        }
        if let Some(files) = p.evicted_files {
            let text = line(
                "cold",
                "evicted",
                files,
                p.evict_ns_median,
                p.evict_ns_total,
            );
            wrapped(out, &text, width)?;
        }
    }
    wrapped(
        out,
        &format!(
            "tally: ratios: median over #{reference}'s, {level} bootstrap interval (all {} \
             together at {}); verdict: Mann-Whitney U, Holm-adjusted over {} figure{} at \
             alpha {}; a difference under {} is the same",
            r.family_size.max(1),
            percent(1.0 - r.alpha),
            r.family_size,
            if r.family_size == 1 { "" } else { "s" },
            r.alpha,
            percent(r.threshold)
        ),
        width,
    )?;
    if starred {
        wrapped(
            out,
            "tally: * the runs differ as a whole (Mann-Whitney), but the interval of the \
             ratio of medians still holds 1: the medians differ less surely",
            width,
        )?;
    }
    for c in r.commands.iter().filter(|c| !c.headline.is_empty()) {
        wrapped(out, &format!("tally: verdict {}", c.headline), width)?;
    }
    for w in &r.warnings {
        if w.contains("runs failed") {
            continue;
        }
        wrapped(out, &format!("tally: warning: {w}"), width)?;
    }
    Ok(())
}

/// `text` in lines of at most `width` characters, broken at spaces,
/// continued under `tally:   `.
fn wrapped(out: &mut dyn Write, text: &str, width: usize) -> io::Result<()> {
    let text = text.strip_prefix("tally: ").unwrap_or(text);
    for line in crate::report::text::wrap(text, "tally: ", "tally:   ", width) {
        writeln!(out, "{line}")?;
    }
    Ok(())
}
