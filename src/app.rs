//! Dispatch from parsed arguments to commands, and the choice of exit code
//! and error text: the only place that prints errors.

use std::fs::File;
use std::io::{self, IsTerminal, Write};
use std::path::Path;

use anyhow::Context;
use clap::Parser;
use tally::cli::{self, Cli, Command};
use tally::report::{self, Format, Style};
use tally::run;

/// Exit code for a failure of tally itself in `tally run` (timeout/env).
const RUN_OWN_FAILURE: u8 = 125;

pub fn main() -> u8 {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return match e.kind() {
                clap::error::ErrorKind::DisplayHelp
                | clap::error::ErrorKind::DisplayVersion
                | clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => 0,
                _ if args.get(1).is_some_and(|a| a == "run") => RUN_OWN_FAILURE,
                _ => 2,
            };
        }
    };
    match cli.command {
        Command::Run(args) => run_command(args),
        Command::Bench(args) => bench_command(args),
        Command::Completions { shell } => quiet_pipe(|out| {
            clap_complete::generate(shell, &mut cli::command(), "tally", out);
            Ok(())
        }),
        Command::Man => quiet_pipe(|out| {
            clap_mangen::Man::new(cli::command())
                .render(out)
                .context("cannot write the man page")
        }),
    }
}

/// Runs `f` on stdout; a closed pipe ends quietly, other errors exit 1.
fn quiet_pipe(f: impl FnOnce(&mut dyn Write) -> anyhow::Result<()>) -> u8 {
    let stdout = io::stdout();
    let mut out = stdout.lock();
    match f(&mut out).and_then(|()| out.flush().map_err(Into::into)) {
        Ok(()) => 0,
        Err(e) if is_broken_pipe(&e) => 0,
        Err(e) => {
            eprintln!("tally: {e:#}");
            1
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}

fn run_command(args: cli::run::RunArgs) -> u8 {
    let cfg = run::Config {
        argv: args.command,
        runs: args.runs,
        warmup: args.warmup,
        quiet_command: args.quiet_command,
        cold: args.cold,
        drop_caches: args.drop_caches,
        tree: args.tree,
        counters: args.counters,
    };
    // Open the report file first: a bad -o path should fail before the
    // command runs, not after.
    let mut file = match &args.output {
        Some(path) => match create_report_file(path) {
            Ok(f) => Some(f),
            Err(e) => {
                eprintln!("tally: {e:#}");
                return RUN_OWN_FAILURE;
            }
        },
        None => None,
    };
    let total = cfg.warmup.saturating_add(cfg.runs);
    let bar = (total > 1 && io::stderr().is_terminal()).then(|| {
        let bar = indicatif::ProgressBar::new(u64::from(total));
        bar.set_style(
            indicatif::ProgressStyle::with_template("tally: {msg} {bar:30} {pos}/{len} eta {eta}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    });
    let mut on_progress = |p: run::Progress| {
        if let Some(bar) = &bar {
            match p {
                run::Progress::Warmup { done, .. } => {
                    bar.set_message("warm-up");
                    bar.set_position(u64::from(done));
                }
                run::Progress::Run { done, .. } => {
                    bar.set_message("runs");
                    bar.set_position(u64::from(cfg.warmup) + u64::from(done));
                }
            }
        }
    };
    let result = run::execute(&cfg, &mut on_progress);
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let report = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("tally: {e}");
            return e.exit_code();
        }
    };
    let style = Style { color: false };
    let rendered = match file.as_mut() {
        Some(f) => report::render(&report, args.format, style, f),
        None => {
            let stderr = io::stderr();
            let mut lock = stderr.lock();
            report::render(&report, args.format, style, &mut lock)
        }
    };
    if let Err(e) = rendered {
        eprintln!("tally: cannot write the report: {e}");
        if !matches!(e, report::RenderError::Unsupported(_)) || args.format != Format::Prometheus {
            return RUN_OWN_FAILURE;
        }
    }
    run::exit_code(&report)
}

fn create_report_file(path: &Path) -> anyhow::Result<File> {
    File::create(path).with_context(|| {
        format!(
            "cannot create the report file {}: check the directory exists and is writable",
            path.display()
        )
    })
}

fn bench_command(args: cli::bench::BenchArgs) -> u8 {
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
        Some(path) => match bench::baseline::load(path) {
            Ok(r) => Some((path.clone(), r)),
            Err(e) => {
                eprintln!("tally: {e}");
                return 1;
            }
        },
        None => None,
    };
    let mut html = match &args.html {
        Some(path) => match create_report_file(path) {
            Ok(f) => Some(f),
            Err(e) => {
                eprintln!("tally: {e:#}");
                return 1;
            }
        },
        None => None,
    };
    let tty = io::stderr().is_terminal();
    let bar = tty.then(|| {
        let bar = indicatif::ProgressBar::new_spinner();
        bar.set_style(
            indicatif::ProgressStyle::with_template("tally: {spinner} [{elapsed}] {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        bar.enable_steady_tick(std::time::Duration::from_millis(200));
        bar
    });
    let mut current = String::new();
    let mut on_progress = |p: bench::Progress| match p {
        bench::Progress::Plan {
            benchmarks,
            expected,
        } => {
            if mode == bench::Mode::Full || expected.as_secs() > 120 {
                eprintln!(
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
                Some(b) => b.set_message(current.clone()),
                None if mode == bench::Mode::Full => eprintln!("tally: bench: {current}"),
                None => {}
            }
        }
        bench::Progress::Step { detail, .. } => {
            if let Some(b) = &bar {
                b.set_message(format!("{current}: {detail}"));
            }
        }
    };
    let hooks = bench::Hooks {
        progress: &mut on_progress,
        on_hang: |name, limit| {
            eprintln!(
                "tally: benchmark {name} did not finish within {} s and was stopped; rerun it alone (`tally bench {name}`) to see where it hangs",
                limit.as_secs()
            );
            std::process::exit(1);
        },
    };
    let result = bench::execute(&cfg, hooks);
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let mut report = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("tally: {e}");
            return 1;
        }
    };
    if let Some((path, old)) = &old {
        report.baseline = Some(bench::baseline::compare(path, old, &report));
    }
    if let (Some(f), Some(path)) = (html.as_mut(), &args.html) {
        if let Err(e) = bench::html::write(&report, f) {
            eprintln!("tally: cannot write the HTML page {}: {e}", path.display());
            return 1;
        }
    }
    quiet_pipe(|out| {
        report::render(&report, args.format, Style { color: false }, out).map_err(|e| match e {
            // Unwrapped so quiet_pipe sees a closed pipe for what it is.
            report::RenderError::Io(io) => anyhow::Error::from(io),
            other => anyhow::Error::from(other),
        })
    })
}
