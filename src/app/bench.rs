//! `tally bench`: list, run, baseline, HTML.

use std::io::{self, IsTerminal};

use tally::cli;
use tally::report::Stream;

use super::quiet_pipe;

pub(super) fn bench_command(args: cli::bench::BenchArgs) -> u8 {
    use tally::bench;
    if args.list {
        return quiet_pipe(|out| {
            for b in bench::registry::BENCHMARKS {
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
        });
    }
    fix_layout();
    let mode = if args.full {
        bench::Mode::Full
    } else if args.quick {
        bench::Mode::Quick
    } else {
        bench::Mode::Standard
    };
    let mut cfg = bench::Config::new(mode);
    cfg.names = args.names;
    if let Some(dir) = args.dir {
        cfg.dir = dir;
    }
    cfg.max_mem_bytes = args.max_mem;
    cfg.max_file_bytes = args.max_bytes;
    cfg.budget = args.budget_ms.map(std::time::Duration::from_millis);
    // Bad inputs fail before minutes of measuring, not after.
    let old = match &args.baseline {
        Some(path) => match bench::baseline::load(path)
            .and_then(|r| bench::baseline::check_rules(path, &r, &args.fail_on).map(|()| r))
        {
            Ok(r) => Some((path.clone(), r)),
            Err(e) => {
                tally::diag!("tally: {e}");
                return e.exit_code();
            }
        },
        None => None,
    };
    let output =
        match super::open_output::<bench::BenchReport>(&args.out, "bench", Some(Stream::Stdout)) {
            Ok(o) => o,
            Err(code) => return code,
        };
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
    let mut on_progress = |p: bench::Progress| match p {
        bench::Progress::Plan {
            benchmarks,
            expected,
        } => {
            if mode == bench::Mode::Full || expected.as_secs() > 120 {
                tally::diag!(
                    "tally: bench: {} benchmarks ({}), expected to take about {} min",
                    benchmarks.len(),
                    benchmarks.join(" "),
                    expected.as_secs().div_ceil(60)
                );
            }
        }
        bench::Progress::Start { name, index, total } => {
            current = format!("{name} ({}/{total})", index + 1);
            match &bar {
                Some(b) => {
                    b.set_message(current.clone());
                    b.tick();
                }
                None if mode == bench::Mode::Full => tally::diag!("tally: bench: {current}"),
                None => {}
            }
        }
        bench::Progress::Step { detail, .. } => {
            if let Some(b) = &bar {
                b.set_message(format!("{current}: {detail}"));
                b.tick();
            }
        }
    };
    let hooks = bench::Hooks {
        progress: &mut on_progress,
        on_hang: bench::OnHang {
            message: |name, limit| {
                format!(
                    "tally: benchmark {name} did not finish within {} s and was stopped; rerun it alone (`tally bench {name}`) to see where it hangs\n",
                    limit.as_secs()
                )
            },
            then: tally::sys::alarm::Then::Exit(1),
        },
    };
    let result = bench::execute(&cfg, hooks);
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let mut report = match result {
        Ok(r) => r,
        Err(e) => {
            tally::diag!("tally: {e}");
            return 1;
        }
    };
    if let Some((path, old)) = &old {
        let mut base = bench::baseline::compare(path, old, &report);
        if !args.fail_on.is_empty() {
            base.gate = Some(bench::baseline::gate(
                old,
                &report,
                &args.fail_on,
                args.strict,
            ));
        }
        report.baseline = Some(base);
    }
    let code = super::said(output.write(&report));
    // A report that could not be written fails first; then the gate.
    match report.baseline.as_ref().and_then(|b| b.gate.as_ref()) {
        Some(g) if code == 0 => g.exit_status,
        _ => code,
    }
}

/// Runs tally again with address-space randomisation off (as `setarch
/// -R`), so that every run lays memory out alike (see
/// `tally::sys::personality`); returns only where that cannot be done, and
/// the report's machine line then says the layout is randomised.
fn fix_layout() {
    use std::os::unix::process::CommandExt;
    use tally::sys::personality;
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
