//! Dispatch from parsed arguments to commands. One short file per command:
//! parse, measure, report, output; what a command does between them (its
//! configuration, streaming, watch loops, exit codes) is its library
//! module's `command`, which says its own errors on stderr (`diag!`).

mod bench;
mod cache;
mod compare;
mod cp;
mod history;
mod load;
mod mem;
mod progress;
mod run;
mod serve;

use std::io::{self, Write};

use anyhow::Context;
use tally::cli::{self, Command};
use tally::failure::{Failure, Outcome};
use tally::report::{self, Document};

/// Exit code for a failure of tally itself in `tally run` (timeout/env).
const RUN_OWN_FAILURE: u8 = 125;

pub fn main() -> u8 {
    let args = tally::sys::entry::args_os();
    // `tally bench spawn` execs this binary to time an exec of a static
    // program: it must exit at once, before any parsing.
    if args.len() == 2
        && args
            .get(1)
            .is_some_and(|a| a == tally::bench::spawn::EXIT_AT_ONCE)
    {
        return 0;
    }
    // `tally compare` starts its runs from this binary re-executed.
    if args.len() == 2
        && args
            .get(1)
            .is_some_and(|a| a == tally::run::spawner::SERVE_ARG)
    {
        return tally::run::spawner::serve();
    }
    let cli = match cli::parse(&args) {
        Ok(cli) => cli,
        Err(e) => {
            // A peer's spelling is answered with what tally calls it.
            if let Some(answer) = cli::peers::from_error(&e, &args) {
                let command = args.get(1).map(|a| a.to_string_lossy()).unwrap_or_default();
                let flag = e
                    .get(clap::error::ContextKind::InvalidArg)
                    .map(|f| f.to_string())
                    .unwrap_or_default();
                tally::diag!(
                    "tally {}: {}: {}\nFor more information, try 'tally {} --help'.",
                    tally::text::escape::escape_name(command.as_bytes()),
                    tally::text::escape::escape_name(flag.as_bytes()),
                    answer,
                    tally::text::escape::escape_name(command.as_bytes())
                );
                return if args.get(1).is_some_and(|a| a == "run") {
                    RUN_OWN_FAILURE
                } else {
                    2
                };
            }
            return clap_answered(&e, &args);
        }
    };
    // A setuid or file-capability install runs `tally mem` and nothing else.
    let privilege = match tally::mem::privilege::gate(matches!(cli.command, Command::Mem(_))) {
        Ok(p) => p,
        Err(e) => {
            tally::diag!("tally: {e}");
            return if matches!(cli.command, Command::Run(_)) {
                RUN_OWN_FAILURE
            } else {
                1
            };
        }
    };
    match cli.command {
        Command::Run(args) => run::run_command(args),
        Command::Compare(args) => compare::compare_command(*args),
        Command::Bench(args) => bench::bench_command(args),
        Command::Mem(args) => mem::mem_command(args, privilege),
        Command::Cache(args) => cache::cache_command(args),
        Command::Cp(args) => cp::cp_command(args),
        Command::Load(args) => load::load_command(args),
        Command::Serve(args) => serve::serve_command(args),
        Command::History(args) => history::history_command(*args),
        Command::Completions { shell } => quiet_pipe(|out| {
            cli::complete::write(shell, out).context("cannot write the completion script")
        }),
        Command::Man {
            dir: Some(dir),
            subcommand: _,
        } => match cli::man::install(&dir) {
            Ok(written) => quiet_pipe(|out| {
                for path in written {
                    writeln!(out, "{}", tally::text::path::display(&path))
                        .context("cannot write the list of pages written")?;
                }
                Ok(())
            }),
            Err(e) => {
                tally::diag!("tally: {e}");
                1
            }
        },
        Command::Man {
            subcommand,
            dir: None,
        } => quiet_pipe(|out| {
            cli::man::render(subcommand.as_deref(), out).context("cannot write the man page")
        }),
    }
}

/// The exit code of a command line clap answered itself: help and
/// version printed (1 when nobody can read them: stdout closed or
/// unwritable), or a usage error said (125 for `tally run`, else 2).
fn clap_answered(e: &clap::Error, args: &[std::ffi::OsString]) -> u8 {
    let shown = matches!(
        e.kind(),
        clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion
    );
    // std writes to a closed stdout as if to /dev/null: a help nobody
    // can read is said to be so.
    if shown && tally::sys::entry::stdout_was_closed() {
        tally::diag!(
            "tally: stdout is closed, so the help would go nowhere: leave stdout open \
             (redirect it to a file or a pipe)"
        );
        return 1;
    }
    let printed = e.print().and_then(|()| io::stdout().lock().flush());
    match printed {
        // A help nobody could read (`--help >/dev/full`) is a failure; a
        // reader that went away is not.
        Err(err) if shown && err.kind() != io::ErrorKind::BrokenPipe => {
            tally::diag!("tally: cannot write the help: {err}");
            1
        }
        _ if shown => 0,
        _ if args.get(1).is_some_and(|a| a == "run") => RUN_OWN_FAILURE,
        _ => 2,
    }
}

/// Opens where a command's report `R` goes (see `report::output`), before
/// the command works; a failure is said on stderr and is the exit code.
fn open_output<R: report::Report>(
    out: &report::OutputArgs,
    command: &'static str,
    default: Option<report::Stream>,
) -> Result<report::Output, u8> {
    report::Output::open::<R>(&out.request(), command, default).map_err(|e| {
        report::output::say_somewhere(&format!("tally: {e}"));
        e.exit_code()
    })
}

/// Says `e` on stderr (nothing for a reader that went away); returns the
/// exit code it calls for. Every failure of a command is said here.
fn fail(e: &dyn Failure) -> u8 {
    if e.is_broken_pipe() {
        return 0;
    }
    report::output::say_somewhere(&format!("tally: {e}"));
    e.exit_code()
}

/// Says `e` on stderr (see `report::output::say_somewhere`); returns
/// `code` (`tally run`'s own failures are all 125, whatever they are).
fn fail_as(e: &dyn Failure, code: u8) -> u8 {
    report::output::say_somewhere(&format!("tally: {e}"));
    code
}

/// The output stage of a command that measured: its report written
/// where it goes, then the exit code. A failure to measure is said and is
/// the exit code; a report that could not be written fails before what
/// the report itself calls for ([`Outcome`]).
fn finish<R: Document + Outcome, E: Failure>(output: report::Output, result: Result<R, E>) -> u8 {
    match result {
        Ok(report) => match said(output.write(&report)) {
            0 => report.exit_code(),
            code => code,
        },
        Err(e) => fail(&e),
    }
}

/// Says `lines` on stderr, each after `tally: `, in one write (after a
/// report, so that they stay together).
fn say_lines(lines: impl IntoIterator<Item = String>) {
    let mut text = String::new();
    for line in lines {
        text.push_str("tally: ");
        text.push_str(&line);
        text.push('\n');
    }
    if !text.is_empty() {
        let _ = io::stderr().lock().write_all(text.as_bytes());
    }
}

/// Opens the store `--record` names, before any run: a store that
/// cannot be written is said now, with its exit code (`run`'s own failure
/// is `run_code`, 125, whatever it is).
fn recorder(
    args: &tally::record::RecordArgs,
    run_code: Option<u8>,
) -> Result<Option<tally::history::record::Recorder>, u8> {
    let said = |e: &dyn Failure| match run_code {
        Some(code) => fail_as(e, code),
        None => fail(e),
    };
    match tally::history::record::config(args) {
        Err(e) => Err(said(&e)),
        Ok(None) => Ok(None),
        Ok(Some(cfg)) => tally::history::record::open(&cfg)
            .map(Some)
            .map_err(|e| said(&e)),
    }
}

/// Records `report` in the store opened before the runs, and says where
/// it went (or where it was kept instead).
fn record(recorder: Option<tally::history::record::Recorder>, report: &dyn Document) {
    if let Some(r) = recorder {
        say_lines(r.record(report));
    }
}

/// Says every output failure on stderr; returns the exit code they call
/// for (0 when there were none).
fn said(errors: Vec<report::OutputError>) -> u8 {
    report::OutputError::say(errors)
}

/// Runs `f` on stdout; a closed pipe ends quietly, other errors exit 1.
fn quiet_pipe(f: impl FnOnce(&mut dyn Write) -> anyhow::Result<()>) -> u8 {
    // std writes to a closed stdout as if to /dev/null: say so instead.
    if tally::sys::entry::stdout_was_closed() {
        tally::diag!(
            "tally: stdout is closed, so the output would go nowhere: leave stdout open \
             (redirect it to a file or a pipe)"
        );
        return 1;
    }
    let stdout = io::stdout();
    let mut out = stdout.lock();
    match f(&mut out).and_then(|()| out.flush().map_err(Into::into)) {
        Ok(()) => 0,
        Err(e) if is_broken_pipe(&e) => 0,
        Err(e) => {
            tally::diag!("tally: {e:#}");
            1
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
            || c.downcast_ref::<report::RenderError>()
                .is_some_and(report::RenderError::is_broken_pipe)
    })
}
