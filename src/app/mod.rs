//! Dispatch from parsed arguments to commands, and the choice of exit code
//! and error text: the only place that prints errors. One file per command
//! holds its glue from arguments to `execute` to rendering.

mod bench;
mod cache;
mod compare;
mod cp;
mod load;
mod mem;
mod run;
mod serve;

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
        Command::Compare(args) => compare::compare_command(args),
        Command::Bench(args) => bench::bench_command(args),
        Command::Mem(args) => mem::mem_command(args, privilege),
        Command::Cache(args) => cache::cache_command(args),
        Command::Cp(args) => cp::cp_command(args),
        Command::Load(args) => load::load_command(args),
        Command::Serve(args) => serve::serve_command(args),
        Command::Completions { shell } => quiet_pipe(|out| {
            cli::complete::write(shell, out).context("cannot write the completion script")
        }),
        Command::Man {
            dir: Some(dir),
            subcommand: _,
        } => match cli::man::install(&dir) {
            Ok(written) => {
                for path in written {
                    let _ = writeln!(io::stdout(), "{}", report::path::display(&path));
                }
                0
            }
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

/// Where a report goes: stdout for `-`, else a file created (truncated)
/// when the sink is opened, so a bad path fails before anything is measured.
pub(crate) enum Sink {
    Stdout,
    File(File),
}

impl Sink {
    /// Opens `path`; `-` is stdout.
    pub(crate) fn open(path: &Path) -> anyhow::Result<Sink> {
        if path.as_os_str() == "-" {
            Ok(Sink::Stdout)
        } else {
            create_report_file(path).map(Sink::File)
        }
    }
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Sink::Stdout => io::stdout().lock().write(buf),
            Sink::File(f) => f.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Sink::Stdout => io::stdout().lock().write_all(buf),
            Sink::File(f) => f.write_all(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Sink::Stdout => io::stdout().lock().flush(),
            Sink::File(f) => f.flush(),
        }
    }
}

/// The `--export FORMAT=FILE` outputs of one command, checked and opened
/// before it measures, written from the same report as its main output.
pub(crate) struct Exports(Vec<(cli::Export, Sink)>);

impl Exports {
    /// Checks that `command`'s report has every asked-for format
    /// (`prometheus`: whether it has metrics) and opens every FILE. The
    /// error is the message and the exit code: 2 for a format the report
    /// does not have, 1 for a file that cannot be created.
    pub(crate) fn open(
        exports: &[cli::Export],
        command: &str,
        prometheus: bool,
    ) -> Result<Exports, (String, u8)> {
        Exports::open_with(exports, command, &|f| {
            f != Format::HTML && (f != Format::PROMETHEUS || prometheus)
        })
    }

    /// [`Exports::open`] for a report that has the formats `has` accepts.
    pub(crate) fn open_with(
        exports: &[cli::Export],
        command: &str,
        has: &dyn Fn(Format) -> bool,
    ) -> Result<Exports, (String, u8)> {
        if let Some(e) = exports.iter().find(|e| !has(e.format)) {
            let names: Vec<&str> = Format::all()
                .filter(|&f| has(f))
                .map(Format::name)
                .collect();
            return Err((
                format!(
                    "--export {}={}: {command} has no {} report; export {}",
                    e.format.name(),
                    report::path::display(&e.path),
                    e.format.name(),
                    names.join(", ")
                ),
                2,
            ));
        }
        let mut open = Vec::with_capacity(exports.len());
        for e in exports {
            match Sink::open(&e.path) {
                Ok(sink) => open.push((e.clone(), sink)),
                Err(err) => return Err((format!("{}: {err:#}", e.flag), 1)),
            }
        }
        Ok(Exports(open))
    }

    /// Renders `report` into every export; says on stderr which could not
    /// be written and returns whether all were (a closed pipe counts as
    /// written).
    pub(crate) fn write<R: report::Document>(self, r: &R) -> bool {
        let mut ok = true;
        for (e, mut sink) in self.0 {
            // Rendered whole, then written at once, like the main report.
            let mut text = Vec::with_capacity(4096);
            let written = report::render(r, e.format, Style::PLAIN, &mut text).and_then(|()| {
                sink.write_all(&text)
                    .and_then(|()| sink.flush())
                    .map_err(report::RenderError::Io)
            });
            match written {
                Ok(()) => {}
                Err(err) if err.is_broken_pipe() => {}
                Err(err) => {
                    ok = false;
                    tally::diag!(
                        "tally: cannot write the {} export to {}: {err}",
                        e.format.name(),
                        report::path::display(&e.path)
                    );
                }
            }
        }
        ok
    }
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
fn render_to<R: report::Document>(
    r: &R,
    format: Format,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    match report::render(r, format, Style::stdout(), out) {
        Ok(()) => Ok(()),
        Err(report::RenderError::Io(e)) => {
            Err(anyhow::Error::new(e).context("cannot write the report"))
        }
        Err(e) => Err(e.into()),
    }
}
