//! Dispatch from parsed arguments to commands, and the choice of exit code
//! and error text: the only place that prints errors. One file per command
//! holds its glue from arguments to `execute` to rendering.

mod bench;
mod cache;
mod cp;
mod load;
mod mem;
mod run;

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

use anyhow::Context;
use tally::cli::{self, Command};
use tally::report::{self, Format, Style};

/// Exit code for a failure of tally itself in `tally run` (timeout/env).
const RUN_OWN_FAILURE: u8 = 125;

pub fn main() -> u8 {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let cli = match cli::parse(&args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => 0,
                _ if args.get(1).is_some_and(|a| a == "run") => RUN_OWN_FAILURE,
                _ => 2,
            };
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
        Command::Bench(args) => bench::bench_command(args),
        Command::Mem(args) => mem::mem_command(args, privilege),
        Command::Cache(args) => cache::cache_command(args),
        Command::Cp(args) => cp::cp_command(args),
        Command::Load(args) => load::load_command(args),
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

fn create_report_file(path: &Path) -> anyhow::Result<File> {
    File::create(path).with_context(|| {
        format!(
            "cannot create the report file {}: check the directory exists and is writable",
            tally::report::path::display(path)
        )
    })
}

/// Renders a report to stdout (styled for it); an I/O error says it was the report that
/// could not be written.
fn render_to<R: report::Render>(r: &R, format: Format, out: &mut dyn Write) -> anyhow::Result<()> {
    match report::render(r, format, Style::stdout(), out) {
        Ok(()) => Ok(()),
        Err(report::RenderError::Io(e)) => {
            Err(anyhow::Error::new(e).context("cannot write the report"))
        }
        Err(e) => Err(e.into()),
    }
}
