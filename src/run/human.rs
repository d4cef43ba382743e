//! `tally run`'s human layout: one run as sentences, repeated runs as a
//! table of every figure ([`FIGURES`]), then the tree, counters, exit and
//! warnings.

use std::io::{self, Write};

use super::report::{
    ColdReport, Counters, FIGURES, RunRecord, RunReport, TreeUsage, Why, WhyBasis,
};
use crate::report::Style;
use crate::report::text::{NO_TERMINAL_WIDTH, tally_lines};
use crate::units::{count, human_bytes, percent, thousands};

/// `r` for people.
pub fn write(r: &RunReport, out: &mut dyn Write, style: Style) -> io::Result<()> {
    // A failed command says so first, before any figure.
    if let Some(line) = failure(&r.runs) {
        writeln!(out, "tally: {line}")?;
    }
    // `-f TEMPLATE`: a line per run, as GNU time's -f gives.
    if let Some(text) = &r.template {
        return templated(r, text, out);
    }
    let report = r;
    // Prose fits the terminal; off one, lines of 100.
    let width = style.width.unwrap_or(NO_TERMINAL_WIDTH);
    if r.runs.len() == 1 {
        let r = &r.runs[0];
        if let Some(c) = &r.cold {
            human_cold(c, out)?;
        }
        if !r.simulated() {
            human_single(r, report.why_table, out)?;
        }
        if let Some(w) = &r.why {
            human_why_after(w, report.why_table, width, out)?;
        }
        if let Some(t) = &r.tree {
            human_tree(t, out)?;
        }
        if let Some(c) = &r.counters {
            human_counters(c, out)?;
        }
        for line in crate::gpu::human::lines(&r.gpu, r.wall_ns) {
            writeln!(out, "tally: {line}")?;
        }
        human_count(report, style, out)?;
        human_exit(r, out)?;
    } else if let Some(last) = r.runs.last() {
        let warm = if r.warmup_runs > 0 {
            format!(" after {} warm-up", r.warmup_runs)
        } else {
            String::new()
        };
        writeln!(out, "tally: {} runs{warm}", r.runs.len())?;
        summary_table(r, style, width, out)?;
        if let Some(w) = &last.why {
            writeln!(out, "tally: where the wall time went, the last run:")?;
            human_why(w, last.wall_ns, report.why_table, out)?;
            human_why_after(w, report.why_table, width, out)?;
        }
        if let Some(c) = &last.cold {
            writeln!(out, "tally: cold: before each run; the last:")?;
            human_cold(c, out)?;
        }
        match (&last.io_source, &last.io_unavailable) {
            _ if last.simulated() => {}
            (Some(source), _) => writeln!(
                out,
                "tally: storage and read()/write() figures: {}",
                source.describe()
            )?,
            (None, Some(reason)) => writeln!(out, "tally: storage I/O unavailable: {reason}")?,
            (None, None) => {}
        }
        if let Some(t) = &last.tree {
            writeln!(out, "tally: the last run:")?;
            human_tree(t, out)?;
        }
        if let Some(c) = &last.counters {
            human_counters(c, out)?;
        }
        let gpu = crate::gpu::human::lines(&last.gpu, last.wall_ns);
        if !gpu.is_empty() {
            writeln!(out, "tally: GPU, the last run:")?;
        }
        for line in gpu {
            writeln!(out, "tally: {line}")?;
        }
        human_count(report, style, out)?;
        human_exit(last, out)?;
    }
    if let Some(sig) = &r.interrupted_by {
        writeln!(
            out,
            "tally: interrupted by {sig} after {} of {} runs",
            r.runs.len(),
            r.runs_requested
        )?;
    }
    for w in &r.warnings {
        tally_lines(out, &format!("tally: warning: {w}"), width)?;
    }
    Ok(())
}

/// The runs' figures, min to max, a row per figure measured (all-zero
/// ones left out unless a headline figure).
fn summary_table(r: &RunReport, style: Style, width: usize, out: &mut dyn Write) -> io::Result<()> {
    use crate::report::text::{Column, TextTable};
    // On a narrow terminal min goes first, then max.
    let mut table = TextTable::new(vec![
        Column::text(""),
        Column::number("min").droppable(1),
        Column::number("median"),
        Column::number("mean ± stddev"),
        Column::number("max").droppable(2),
    ])
    .prefix("tally: ");
    let mut sampled = false;
    let mut rows = 0usize;
    for fig in FIGURES {
        let Some(s) = r.summary_of(fig.key) else {
            continue;
        };
        if s.max == 0.0 && !fig.headline {
            continue;
        }
        let mean = match s.stddev {
            Some(sd) => format!("{} ± {}", fig.human(s.mean), fig.human(sd)),
            None => fig.human(s.mean),
        };
        sampled |= fig.tick_sampled();
        rows += 1;
        table.row(vec![
            fig.label.to_string(),
            fig.human(s.min),
            fig.human(s.median),
            mean,
            fig.human(s.max),
        ]);
    }
    // No figure to show (runs under the simulator that gave no count):
    // no table, not a header over nothing.
    if rows > 0 {
        table.write(out, style)?;
    }
    if sampled {
        tally_lines(out, &format!("tally: {}", super::report::TICK_NOTE), width)?;
    }
    Ok(())
}

/// A line per run made from the template `text` (`-f`).
fn templated(r: &RunReport, text: &str, out: &mut dyn Write) -> io::Result<()> {
    match super::template::Template::parse(text) {
        Ok(t) => {
            for run in &r.runs {
                writeln!(out, "{}", t.render(&r.command, run))?;
            }
            Ok(())
        }
        Err(e) => writeln!(out, "tally: {e}"),
    }
}

/// `ns` nanoseconds in the command line's unit.
fn time(ns: u64) -> String {
    crate::units::time_ns(ns as f64)
}

fn share(part: u64, whole: u64) -> String {
    percent(part, whole)
        .map(|p| format!("{p}%"))
        .unwrap_or_else(|| "0%".into())
}

fn human_single(r: &RunRecord, why_table: bool, out: &mut dyn Write) -> io::Result<()> {
    match &r.why {
        Some(w) => human_why(w, r.wall_ns, why_table, out)?,
        None => writeln!(out, "tally: took {} wall time", time(r.wall_ns))?,
    }
    writeln!(
        out,
        "tally: peak memory {} (ru_maxrss)",
        crate::units::memory_kib((r.max_rss_bytes / 1024) as f64)
    )?;
    writeln!(
        out,
        "tally: needed {} cpu (~{} kernel, from tick sampling)",
        time(r.cpu_us().saturating_mul(1000)),
        share(r.system_us, r.cpu_us())
    )?;
    let faults = r.minor_faults.saturating_add(r.major_faults);
    writeln!(
        out,
        "tally: caused {} page faults ({} minor, {} major)",
        thousands(faults),
        share(r.minor_faults, faults),
        thousands(r.major_faults)
    )?;
    let switches = r.voluntary_switches.saturating_add(r.involuntary_switches);
    if switches > 0 {
        writeln!(
            out,
            "tally: {} context switch{} ({} voluntary)",
            thousands(switches),
            if switches == 1 { "" } else { "es" },
            share(r.voluntary_switches, switches)
        )?;
    }
    if r.block_input_ops > 0 || r.block_output_ops > 0 {
        writeln!(
            out,
            "tally: read {} and wrote {} blocks of 512 bytes (ru_inblock, ru_oublock)",
            thousands(r.block_input_ops),
            thousands(r.block_output_ops)
        )?;
    }
    match (&r.io, &r.io_unavailable) {
        (Some(io), _) => {
            let source = r
                .io_source
                .map(|s| format!(" ({})", s.describe()))
                .unwrap_or_default();
            writeln!(
                out,
                "tally: storage read {} bytes, wrote {} bytes{source}",
                thousands(io.storage_read_bytes),
                thousands(io.storage_write_bytes)
            )?;
            writeln!(
                out,
                "tally: read()/write() calls passed {} and {} bytes ({} and {} calls)",
                thousands(io.read_call_bytes),
                thousands(io.write_call_bytes),
                thousands(io.read_calls),
                thousands(io.write_calls)
            )?;
        }
        (None, Some(reason)) => writeln!(out, "tally: storage I/O unavailable: {reason}")?,
        (None, None) => {}
    }
    Ok(())
}

/// Where the wall time went: two lines (the first starts `took`), or
/// with `table` every part with its source; then what is unavailable and
/// why, the notes (with the table) and the advice.
fn human_why(w: &Why, wall_ns: u64, table: bool, out: &mut dyn Write) -> io::Result<()> {
    use super::why::share;
    let whole = w.total_ns;
    // `27% waiting for a CPU`, or `waiting for a CPU unavailable`.
    let pct = |ns: Option<u64>, what: &str| match ns {
        Some(ns) => format!("{}% {what}", share(ns, whole)),
        None => format!("{what} unavailable"),
    };
    let of = match w.of {
        WhyBasis::Wall => String::new(),
        WhyBasis::TaskTime => format!("; its tasks spent {} together (task time)", time(whole)),
    };
    let cpu = match (w.on_cpu_user_ns, w.on_cpu_kernel_ns) {
        (Some(u), Some(k)) => Some(u.saturating_add(k)),
        _ => None,
    };
    if table {
        writeln!(
            out,
            "tally: took {} wall time{of}; where it went:",
            time(wall_ns)
        )?;
        for p in w.parts() {
            let time = p.ns.map(time).unwrap_or_else(|| "unavailable".into());
            let share_text =
                p.ns.map(|ns| format!("{}%", share(ns, whole)))
                    .unwrap_or_default();
            let said = match (p.source, p.unavailable) {
                (Some(s), _) => s,
                (None, Some(u)) => u,
                (None, None) => "",
            };
            writeln!(
                out,
                "tally:   {:<19} {:>14} {:>4}  {said}",
                p.label, time, share_text
            )?;
        }
    } else {
        writeln!(
            out,
            "tally: took {} wall time{of}: {} ({}, {}), {},",
            time(wall_ns),
            pct(cpu, "on a CPU"),
            pct(w.on_cpu_user_ns, "user"),
            pct(w.on_cpu_kernel_ns, "kernel"),
            pct(w.cpu_wait_ns, "waiting for a CPU")
        )?;
        writeln!(
            out,
            "tally:   {}, {}, {}",
            pct(w.io_wait_ns, "waiting for storage"),
            pct(w.memory_stall_ns, "stalled on memory"),
            pct(w.other_wait_ns, "other waits (sleep, pipes, children)")
        )?;
    }
    Ok(())
}

/// After the other figures: why a part is unavailable (each reason once),
/// the notes with the table, and the advice.
fn human_why_after(w: &Why, table: bool, width: usize, out: &mut dyn Write) -> io::Result<()> {
    if table {
        for note in &w.notes {
            tally_lines(out, &format!("tally: note: {note}"), width)?;
        }
    } else {
        // Each reason once, with the parts it leaves unmeasured; a reason
        // that extends another (`…; delay accounting is off`) is said as
        // its addition.
        let mut reasons: Vec<(&str, Vec<&str>)> = Vec::new();
        for p in w.parts() {
            if let (None, Some(why)) = (p.ns, p.unavailable) {
                match reasons.iter_mut().find(|(r, _)| *r == why) {
                    Some((_, parts)) => parts.push(p.label),
                    None => reasons.push((why, vec![p.label])),
                }
            }
        }
        let extended: Vec<Vec<&str>> = reasons
            .iter()
            .map(|(why, parts)| {
                let mut all = parts.clone();
                for (other, more) in &reasons {
                    if other.len() > why.len() && other.starts_with(why) {
                        all.extend(more);
                    }
                }
                all
            })
            .collect();
        let mut lines: Vec<String> = Vec::new();
        for ((why, parts), all) in reasons.iter().zip(&extended) {
            let shorter = reasons
                .iter()
                .find(|(other, _)| other.len() < why.len() && why.starts_with(other));
            lines.push(match shorter {
                Some((other, _)) => format!(
                    "{}: also {}",
                    parts.join(", "),
                    why[other.len()..].trim_start_matches([';', ' '])
                ),
                None => format!("{} unavailable: {why}", all.join(", ")),
            });
        }
        // Extensions after the reason they extend.
        lines.sort_by_key(|l| l.contains(": also "));
        for line in lines {
            tally_lines(out, &format!("tally: {line}"), width)?;
        }
    }
    if let Some(advice) = &w.advice {
        tally_lines(out, &format!("tally: {advice}"), width)?;
    }
    Ok(())
}

/// Counted work (`--count`): the source, one run's figures (a table
/// holds several runs'), where the instructions went and the notes; for
/// runs under the simulator, the time they took, which is not the
/// command's.
fn human_count(r: &RunReport, style: Style, out: &mut dyn Write) -> io::Result<()> {
    use crate::count::human;
    let Some(c) = &r.count else {
        return Ok(());
    };
    let width = style
        .width
        .unwrap_or(NO_TERMINAL_WIDTH)
        .min(NO_TERMINAL_WIDTH);
    // The source, once a run counted: where none did, the reason below
    // says why, and a tool's version no run reported is not guessed.
    let mut lines = Vec::new();
    if r.runs.iter().any(|x| x.counted().is_some()) {
        lines.push(human::source_line(&c.source));
    }
    if let [one] = r.runs.as_slice() {
        match one.count.as_ref() {
            Some(crate::count::CountState::Measured(m)) => lines.extend(human::figures(m)),
            Some(state) => lines.extend(human::unavailable(state)),
            None => {}
        }
    } else if let Some(state) = r.runs.iter().find_map(|x| {
        x.count
            .as_ref()
            .filter(|s| matches!(s, crate::count::CountState::Unavailable { .. }))
    }) {
        lines.extend(human::unavailable(state));
    }
    lines.extend(human::where_lines(c));
    let simulated: Vec<u64> = r
        .runs
        .iter()
        .filter(|x| x.simulated())
        .map(|x| x.wall_ns)
        .collect();
    if !simulated.is_empty() {
        let all: u64 = simulated.iter().fold(0u64, |a, b| a.saturating_add(*b));
        lines.push(format!(
            "under Valgrind the run{} took {}{}: that is Valgrind's time, not the command's \
             (tally run without --count=sim times it)",
            if simulated.len() == 1 { "" } else { "s" },
            time(all),
            if simulated.len() == 1 { "" } else { " in all" }
        ));
    }
    for line in lines {
        // The table of functions keeps its columns; sentences wrap.
        if line.starts_with("  ") {
            writeln!(out, "tally: {line}")?;
        } else {
            tally_lines(out, &format!("tally: {line}"), width)?;
        }
    }
    for note in &c.notes {
        tally_lines(out, &format!("tally: note: {note}"), width)?;
    }
    Ok(())
}

fn human_counters(c: &Counters, out: &mut dyn Write) -> io::Result<()> {
    match c {
        Counters::Unavailable { reason } => writeln!(out, "tally: counters unavailable: {reason}"),
        Counters::Measured {
            readings,
            user_only,
        } => {
            let scope = if *user_only { " (user space only)" } else { "" };
            for r in readings {
                let running = if r.time_enabled_ns > 0 && r.time_running_ns < r.time_enabled_ns {
                    format!(
                        " (counted {}% of the time, scaled: multiplexed)",
                        percent(r.time_running_ns, r.time_enabled_ns).unwrap_or(0)
                    )
                } else {
                    String::new()
                };
                writeln!(
                    out,
                    "tally: {} {}{scope}{running}",
                    thousands(r.value),
                    r.event
                )?;
            }
            let get = |name: &str| readings.iter().find(|r| r.event == name).map(|r| r.value);
            if let (Some(cycles), Some(instructions)) = (get("cycles"), get("instructions"))
                && cycles > 0
            {
                writeln!(
                    out,
                    "tally: {:.2} instructions per cycle",
                    instructions as f64 / cycles as f64
                )?;
            }
            Ok(())
        }
    }
}

fn human_tree(t: &TreeUsage, out: &mut dyn Write) -> io::Result<()> {
    let via = match &t.cgroup {
        Some(cg) => format!("{} {cg}", t.method),
        None => t.method.clone(),
    };
    let cpu = match (t.user_us, t.system_us) {
        (Some(u), Some(s)) => format!(
            "{} cpu (~{} kernel)",
            time(u.saturating_add(s).saturating_mul(1000)),
            share(s, u.saturating_add(s))
        ),
        _ => "cpu unavailable".into(),
    };
    let mem = t
        .peak_memory_bytes
        .map(|b| {
            format!(
                "peak memory {} ({})",
                crate::units::memory_kib((b / 1024) as f64),
                t.memory_method
            )
        })
        .unwrap_or_else(|| format!("peak memory unavailable ({})", t.memory_method));
    writeln!(out, "tally: whole tree via {via}: {cpu}, {mem}")?;

    if let (Some(r), Some(w)) = (t.storage_read_bytes, t.storage_write_bytes) {
        writeln!(
            out,
            "tally: whole tree storage read {} bytes, wrote {} bytes",
            thousands(r),
            thousands(w)
        )?;
    }
    match (t.processes_seen, t.samples) {
        (Some(n), Some(samples)) => writeln!(
            out,
            "tally: whole tree: {} seen in {}",
            count(n, "process", "processes"),
            count(samples, "sample", "samples")
        )?,
        (Some(n), None) => writeln!(
            out,
            "tally: whole tree: {} seen",
            count(n, "process", "processes")
        )?,
        (None, Some(_)) => writeln!(out, "tally: whole tree: processes not sampled")?,
        (None, None) => {}
    }
    for note in &t.notes {
        writeln!(out, "tally: whole tree: {note}")?;
    }
    Ok(())
}

fn human_cold(c: &ColdReport, out: &mut dyn Write) -> io::Result<()> {
    if c.dropped_all_caches {
        writeln!(
            out,
            "tally: cold: dropped every clean page cache (drop_caches)"
        )?;
    }
    if c.file_count == 0 && c.files.is_empty() {
        return Ok(());
    }
    // Records written before `file_count` existed list every file.
    let count = c.file_count.max(c.files.len() as u64);
    let left = c.cached_before_bytes.saturating_sub(c.cached_after_bytes);
    if c.unknown_files >= count {
        // Nothing was measured: "0 of 0 bytes left" would pose as a figure.
        writeln!(
            out,
            "tally: cold: {} ({}) evicted in {}, before the run; how much left the cache is \
             unknown: the kernel would not tell the residency of any of them",
            crate::units::count(count, "file", "files"),
            human_bytes(c.size_bytes),
            time(c.evict_ns),
        )?;
    } else {
        let unknown = if c.unknown_files > 0 {
            format!(
                "; residency unknown for {}",
                crate::units::count(c.unknown_files, "file", "files")
            )
        } else {
            String::new()
        };
        writeln!(
            out,
            "tally: cold: {} of {} cached bytes left the cache ({}, {}) in {}, before the run; {} \
             bytes stayed{unknown}",
            thousands(left),
            thousands(c.cached_before_bytes),
            crate::units::count(count, "file", "files"),
            human_bytes(c.size_bytes),
            time(c.evict_ns),
            thousands(c.cached_after_bytes)
        )?;
    }
    let mut said = 0u64;
    for f in &c.files {
        if let Some(reason) = &f.stayed_reason {
            said += 1;
            let pages = f.after.cached_pages().unwrap_or(0);
            writeln!(
                out,
                "tally: cold: {}: {} pages stayed: {reason}",
                crate::text::path::display(&f.path),
                thousands(pages)
            )?;
        }
        if let crate::pagecache::Residency::Unknown { reason } = &f.after {
            said += 1;
            writeln!(
                out,
                "tally: cold: {}: residency unknown: {reason}",
                crate::text::path::display(&f.path)
            )?;
        }
    }
    let unsaid = (c.stayed_files + c.unknown_files).saturating_sub(said);
    if unsaid > 0 {
        writeln!(
            out,
            "tally: cold: {} more kept pages or could not be checked (--format json lists {} files)",
            crate::units::count(unsaid, "file", "files"),
            crate::pagecache::bulk::LISTED
        )?;
    }
    Ok(())
}

fn human_exit(r: &RunRecord, out: &mut dyn Write) -> io::Result<()> {
    if let Some(sig) = &r.forwarded_signal {
        writeln!(out, "tally: forwarded {sig} to the command")?;
    }
    if r.escalated_to_sigkill {
        writeln!(
            out,
            "tally: the command still ran at a second SIGINT/SIGTERM: tally sent it SIGKILL"
        )?;
    }
    Ok(())
}

/// How a run ended, when it failed: `exit status 1`, `killed by SIGSEGV
/// (core dumped)`.
fn ended(r: &RunRecord) -> Option<String> {
    match (&r.exit.signal, r.exit.code) {
        (Some(sig), _) => Some(format!(
            "killed by {sig}{}",
            if r.exit.core_dumped {
                " (core dumped)"
            } else {
                ""
            }
        )),
        (None, Some(0)) => None,
        (None, Some(code)) => Some(format!("exit status {code}")),
        (None, None) => Some("ended in an unknown way".into()),
    }
}

/// The first line of a report whose command failed: `the command failed:
/// exit status 1`, `the command was killed by SIGSEGV (core dumped)`, or
/// for repeated runs `3 of 10 runs failed: exit status 1`.
fn failure(runs: &[RunRecord]) -> Option<String> {
    let mut how: Vec<String> = runs.iter().filter_map(ended).collect();
    if how.is_empty() {
        return None;
    }
    let failed = how.len();
    if let [r] = runs {
        let text = ended(r)?;
        return Some(if r.exit.signal.is_some() {
            format!("the command was {text}")
        } else {
            format!("the command failed: {text}")
        });
    }
    how.sort();
    how.dedup();
    Some(format!(
        "{failed} of {} runs failed: {}",
        runs.len(),
        how.join(", ")
    ))
}
