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
        Command::Cache(args) => cache_command(args),
        Command::Cp(args) => cp_command(args),
        Command::Load(args) => load_command(args),
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

fn cache_command(args: cli::cache::CacheArgs) -> u8 {
    use tally::cache::{command, report::Action};
    let action = if args.evict {
        Action::Evict
    } else if args.warm {
        Action::Warm
    } else if args.lock {
        Action::Lock
    } else {
        Action::Status
    };
    let cfg = command::Config {
        action,
        paths: args.paths,
        recursive: args.recursive,
        null_separated: args.null,
        map: args.verbose,
        map_buckets: command::map_buckets(tally::sys::tty::stdout_columns()),
    };
    let (report, held) = match command::execute(&cfg, &mut io::stdin().lock()) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("tally: {e}");
            return 1;
        }
    };
    let code = quiet_pipe(|out| render_to(&report, args.format, out));
    if code != 0 {
        return code;
    }
    if let Some(held) = held {
        if !held.mappings.is_empty() {
            eprintln!(
                "tally: holding {} locked in memory ({} files); interrupt (Ctrl-C) to release",
                tally::units::human_bytes(held.bytes),
                held.mappings.len()
            );
            if let Err(e) = tally::sys::mem::wait_for_stop_signal() {
                eprintln!("tally: cannot wait for a signal: {e}");
                return 1;
            }
        }
    }
    u8::from(report.has_problems())
}

/// Renders a report to stdout, keeping an I/O error visible to
/// [`quiet_pipe`] so a closed pipe stays quiet.
fn render_to<R: report::Render>(r: &R, format: Format, out: &mut dyn Write) -> anyhow::Result<()> {
    match report::render(r, format, Style { color: false }, out) {
        Ok(()) => Ok(()),
        Err(report::RenderError::Io(e)) => {
            Err(anyhow::Error::new(e).context("cannot write the report"))
        }
        Err(e) => Err(e.into()),
    }
}

fn cp_command(args: cli::cp::CpArgs) -> u8 {
    use tally::copy;
    if args.format == Format::Prometheus {
        eprintln!("tally: cp has no Prometheus report; use --format human, json, csv or markdown");
        return 2;
    }
    let mut paths = args.paths;
    let Some(destination) = paths.pop() else {
        eprintln!("tally: cp needs a source and a destination");
        return 2;
    };
    let cfg = copy::Config {
        sources: paths,
        destination,
        recursive: args.recursive,
        preserve: args.preserve,
        sync: args.sync,
        keep_cache: args.keep_cache,
        via: args.via,
    };
    let mut bar: Option<indicatif::ProgressBar> = None;
    let tty = io::stderr().is_terminal();
    let mut on_progress = |p: copy::Progress| {
        if !tty || p.total_bytes < (256 << 20) {
            return;
        }
        let b = bar.get_or_insert_with(|| {
            let b = indicatif::ProgressBar::new(p.total_bytes);
            b.set_style(
                indicatif::ProgressStyle::with_template(
                    "tally: cp {bar:30} {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} eta {eta}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            b
        });
        b.set_position(p.done_bytes);
    };
    let result = copy::execute(&cfg, &mut on_progress);
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let report = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("tally: cp: {e}");
            return 1;
        }
    };
    for p in &report.problems {
        eprintln!("tally: cp: {}: {}", p.path.display(), p.error);
    }
    if args.verbose {
        let stderr = io::stderr();
        let _ = report::render(
            &report,
            Format::Human,
            Style { color: false },
            &mut stderr.lock(),
        );
    }
    if args.format != Format::Human {
        let code = quiet_pipe(|out| render_to(&report, args.format, out));
        if code != 0 {
            return code;
        }
    }
    u8::from(!report.problems.is_empty())
}

fn load_command(args: cli::load::LoadArgs) -> u8 {
    use tally::load::{self, Mode};
    if args.format == Format::Prometheus {
        eprintln!(
            "tally: load has no Prometheus report; use --format human, json, csv or markdown"
        );
        return 2;
    }
    if let Some(method) = args.child {
        // One load in this process, the result in a file for the parent.
        let result = load::child::load(method, &args.file, args.touch).unwrap_or_else(|e| {
            load::child::ChildResult {
                error: Some(e.to_string()),
                ..Default::default()
            }
        });
        let failed = result.error.is_some();
        if let Some(path) = &args.result {
            let written = serde_json::to_vec(&result)
                .map_err(io::Error::other)
                .and_then(|b| std::fs::write(path, b));
            if written.is_err() {
                return 1;
            }
        }
        return u8::from(failed);
    }
    let exe = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("tally: cannot find the tally binary to run loads with: {e}");
            return 1;
        }
    };
    let modes = if args.cold {
        vec![Mode::Cold]
    } else if args.warm {
        vec![Mode::Warm]
    } else {
        vec![Mode::Cold, Mode::Warm]
    };
    let methods = if args.methods.is_empty() {
        load::Method::ALL.to_vec()
    } else {
        let mut m = args.methods.clone();
        m.dedup();
        m
    };
    let cfg = load::Config {
        file: args.file,
        methods,
        modes,
        runs: args.runs,
        touch: args.touch,
        exe,
    };
    // Open the plot file first: a bad path should fail before the loads.
    let mut html = match &args.html {
        Some(p) => match create_report_file(p) {
            Ok(f) => Some(f),
            Err(e) => {
                eprintln!("tally: {e:#}");
                return 1;
            }
        },
        None => None,
    };
    let bar = io::stderr().is_terminal().then(|| {
        let b = indicatif::ProgressBar::new(0);
        b.set_style(
            indicatif::ProgressStyle::with_template("tally: load {msg} {bar:30} {pos}/{len}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    });
    let mut on_progress = |p: load::Progress| {
        if let Some(b) = &bar {
            b.set_length(u64::from(p.of));
            b.set_position(u64::from(p.done));
            b.set_message(format!("{:?} {}", p.mode, p.method.name()).to_lowercase());
        }
    };
    let result = load::execute(&cfg, &mut on_progress);
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let report = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("tally: load: {e}");
            return 1;
        }
    };
    if let Some(f) = html.as_mut() {
        if let Err(e) = load::report::write_html(&report, f) {
            eprintln!("tally: cannot write the HTML plot: {e}");
            return 1;
        }
    }
    let code = quiet_pipe(|out| render_to(&report, args.format, out));
    if code != 0 {
        return code;
    }
    // A method this filesystem cannot do (O_DIRECT on tmpfs) is shown as
    // unavailable, not a failure; no method working at all is one.
    let none_worked = report.results.iter().all(|r| r.error.is_some());
    u8::from(!report.ok() || none_worked)
}
