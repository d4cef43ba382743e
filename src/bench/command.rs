//! `tally bench` as a command: `--list`, the re-execution with a fixed
//! memory layout, the configuration and baseline from the arguments, and
//! a run with its progress on a terminal.

use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;

use super::args::BenchArgs;
use super::{BenchError, BenchReport, Config, Hooks, Mode, OnHang, Progress, baseline, registry};

/// Writes `--list`: every benchmark's name, section and help line.
pub fn list(out: &mut dyn Write) -> io::Result<()> {
    for b in registry::BENCHMARKS {
        writeln!(
            out,
            "{:<10} {:<18} {}{}",
            b.name,
            b.section.title().split(' ').next().unwrap_or(""),
            b.about,
            if b.heavy {
                " (heavy: --full or by name)"
            } else {
                ""
            }
        )?;
    }
    Ok(())
}

/// Runs tally again with address-space randomisation off (as `setarch
/// -R`), so that every run lays memory out alike (see
/// `crate::sys::personality`); returns only where that cannot be done, and
/// the report's machine line then says the layout is randomised.
pub fn fix_layout() {
    use crate::sys::personality;
    use std::os::unix::process::CommandExt;
    if personality::layout_fixed() || personality::fix_layout_at_exec().is_err() {
        return;
    }
    let mut args = std::env::args_os();
    let argv0 = args.next().unwrap_or_else(|| "tally".into());
    // Replaces this process; returns only on failure (no /proc/self/exe).
    let _ = std::process::Command::new("/proc/self/exe")
        .arg0(argv0)
        .args(args)
        .exec();
}

/// The run `args` ask for: mode, names, scratch directory and limits.
pub fn config(args: &BenchArgs) -> Config {
    let mode = if args.full {
        Mode::Full
    } else if args.quick {
        Mode::Quick
    } else {
        Mode::Standard
    };
    let mut cfg = Config::new(mode);
    cfg.names = args.names.clone();
    if let Some(dir) = &args.dir {
        cfg.dir = dir.clone();
    }
    cfg.max_mem_bytes = args.max_mem;
    cfg.max_file_bytes = args.max_bytes;
    cfg.budget = args.budget_ms.map(std::time::Duration::from_millis);
    cfg
}

/// The report of `--baseline`, read and checked against `--fail-on`'s
/// rules, with its path; `None` without one.
pub fn baseline(
    args: &BenchArgs,
) -> Result<Option<(PathBuf, BenchReport)>, baseline::BaselineError> {
    let Some(path) = &args.baseline else {
        return Ok(None);
    };
    let old = baseline::load(path)?;
    baseline::check_rules(path, &old, &args.fail_on)?;
    Ok(Some((path.clone(), old)))
}

/// Runs the configured benchmarks with their progress on stderr: a
/// spinner on a terminal, else the benchmarks' names with `--full`, and
/// the plan of a long run. A benchmark that hangs ends the process
/// (exit status 1) with a message naming it.
pub fn execute(cfg: &Config) -> Result<BenchReport, BenchError> {
    let mode = cfg.mode;
    let tty = io::stderr().is_terminal();
    let bar = tty.then(|| {
        let bar = indicatif::ProgressBar::new_spinner();
        bar.set_style(
            indicatif::ProgressStyle::with_template("tally: {spinner} [{elapsed}] {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        // No steady tick: indicatif ticks from a thread of its own, and a
        // second thread in the measuring process slows the descriptor
        // lookups the benchmarks time. The spinner moves on progress events.
        bar.tick();
        bar
    });
    let mut current = String::new();
    let mut on_progress = |p: Progress| match p {
        Progress::Plan {
            benchmarks,
            expected,
        } => {
            if mode == Mode::Full || expected.as_secs() > 120 {
                crate::diag!(
                    "tally: bench: {} benchmarks ({}), expected to take about {} min",
                    benchmarks.len(),
                    benchmarks.join(" "),
                    expected.as_secs().div_ceil(60)
                );
            }
        }
        Progress::Start { name, index, total } => {
            current = format!("{name} ({}/{total})", index + 1);
            match &bar {
                Some(b) => {
                    b.set_message(current.clone());
                    b.tick();
                }
                None if mode == Mode::Full => crate::diag!("tally: bench: {current}"),
                None => {}
            }
        }
        Progress::Step { detail, .. } => {
            if let Some(b) = &bar {
                b.set_message(format!("{current}: {detail}"));
                b.tick();
            }
        }
    };
    let hooks = Hooks {
        progress: &mut on_progress,
        on_hang: OnHang {
            message: |name, limit| {
                format!(
                    "tally: benchmark {name} did not finish within {} s and was stopped; rerun it alone (`tally bench {name}`) to see where it hangs\n",
                    limit.as_secs()
                )
            },
            then: crate::sys::alarm::Then::Exit(1),
        },
    };
    let result = super::execute(cfg, hooks);
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    result
}

/// Compares `report` with the baseline `old` (read from `path`) and,
/// with `--fail-on` rules, gates it.
pub fn compare(report: &mut BenchReport, old: Option<(PathBuf, BenchReport)>, args: &BenchArgs) {
    if let Some((path, old)) = &old {
        let mut base = baseline::compare(path, old, report);
        if !args.fail_on.is_empty() {
            base.gate = Some(baseline::gate(old, report, &args.fail_on, args.strict));
        }
        report.baseline = Some(base);
    }
}

/// The exit status of a run whose report's output ended with `code`: a
/// report that could not be written fails first; then the gate.
pub fn exit_status(report: &BenchReport, code: u8) -> u8 {
    match report.baseline.as_ref().and_then(|b| b.gate.as_ref()) {
        Some(g) if code == 0 => g.exit_status,
        _ => code,
    }
}
