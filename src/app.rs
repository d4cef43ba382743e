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
    // A setuid or file-capability install runs `tally mem` and nothing else.
    let privilege = match tally::mem::privilege::gate(matches!(cli.command, Command::Mem(_))) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("tally: {e}");
            return if matches!(cli.command, Command::Run(_)) {
                RUN_OWN_FAILURE
            } else {
                1
            };
        }
    };
    match cli.command {
        Command::Run(args) => run_command(args),
        Command::Mem(args) => mem_command(args, privilege),
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

fn mem_command(args: cli::mem::MemArgs, mut privilege: tally::mem::privilege::Privilege) -> u8 {
    use tally::mem::{self, report::Unit};
    let elevated = privilege.is_elevated();
    let note = |msg: &str| eprintln!("tally: {msg}");
    if elevated && args.watch.is_some() {
        note(
            "--watch is not available in a setuid or capability install, which keeps its \
              privilege for one scan only; run `watch tally mem` instead",
        );
        return 2;
    }
    if elevated && args.procfs.is_some() {
        note("--procfs ignored: this install reads /proc only");
    }
    // A user name is looked up with the caller's rights only: after the
    // scan when privileged, before it otherwise.
    let user = args.user.clone();
    let resolve = |user: &str| -> Result<u32, u8> {
        tally::sys::user::uid_of(user)
            .or_else(|| user.parse().ok())
            .ok_or_else(|| {
                note(&format!(
                    "no user named `{user}`: give a login name or a numeric uid"
                ));
                2
            })
    };
    let uid = match user.as_deref() {
        Some(user) if !elevated => match resolve(user) {
            Ok(uid) => Some(uid),
            Err(code) => return code,
        },
        _ => None,
    };
    let machine = matches!(args.format, Format::Csv | Format::Json | Format::Prometheus);
    let mut cfg = mem::Config {
        procfs: match &args.procfs {
            Some(path) if !elevated => tally::procfs::ProcRoot::new(path),
            _ => tally::procfs::ProcRoot::default(),
        },
        pids: (!args.pids.is_empty()).then(|| {
            let mut pids = args.pids;
            pids.sort_unstable();
            pids.dedup();
            pids
        }),
        grouping: mem::group::Grouping {
            by: args.group_by,
            name: args.name,
            split_args: args.split_args,
            filter: args.filter,
            uid,
            sort: args.sort,
            reverse: args.reverse,
            top: args.top.map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
            check_replaced: !elevated,
        },
        view: mem::report::View {
            unit: args.unit.unwrap_or(if machine { Unit::B } else { Unit::M }),
            human_sizes: args.human,
            total_only: args.total_only,
        },
        threads: args.threads,
        read_status: user.is_some(),
    };
    let report = match args.watch {
        Some(interval) => {
            let signals = match tally::sys::signals::Forwarder::install() {
                Ok(s) => s,
                Err(e) => {
                    note(&format!("cannot install signal handlers for --watch: {e}"));
                    return 1;
                }
            };
            let stdout = io::stdout();
            let mut out = stdout.lock();
            let terminal = out.is_terminal();
            let stop = || signals.pending().is_some();
            mem::watch(&cfg, interval, args.format, terminal, &mut out, &stop)
                .map(|r| r.unwrap_or_default())
        }
        None => {
            let snap = mem::scan(&cfg);
            // Privilege ends with the scan, whatever its outcome: naming,
            // user lookups and output run with the caller's rights only.
            if let Err(e) = privilege.drop_to_caller() {
                note(&mem::MemError::DropPrivileges(e).to_string());
                return 1;
            }
            if let (Some(user), None) = (user.as_deref(), cfg.grouping.uid) {
                match resolve(user) {
                    Ok(uid) => cfg.grouping.uid = Some(uid),
                    Err(code) => return code,
                }
            }
            cfg.grouping.check_replaced = true;
            snap.and_then(|snap| {
                let report = mem::summarize(&snap, &cfg);
                let stdout = io::stdout();
                let mut out = stdout.lock();
                report::render(&report, args.format, Style::default(), &mut out)?;
                Ok(report)
            })
        }
    };
    match report {
        Ok(report) => {
            for msg in mem::closing_notes(&report, elevated, tally::sys::geteuid() == 0) {
                note(&msg);
            }
            0
        }
        Err(e) if e.is_broken_pipe() => 0,
        Err(e) => {
            note(&e.to_string());
            1
        }
    }
}
