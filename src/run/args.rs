//! `tally run` arguments.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;

use clap::Args;

use crate::report::Format;
use crate::run;

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
        tally run -- ls -lR /usr/share/doc\n  \
        tally run -n 10 --warmup 2 --quiet-command -- gzip -k -f big.file\n  \
        tally run --cold model.bin -- ./load model.bin\n  \
        tally run --tree --format json -o report.json -- make -j2\n\n\
        Exit status: the command's own; 128+N if a signal N killed it; 127 if \
        it was not found, 126 if it could not be executed, 125 if tally itself \
        failed: before the command ran (a bad option, an unwritable -o), or \
        writing the report.\n\n\
        Signals: SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to tally are passed \
        on to the command and the run is still reported. A second SIGINT or \
        SIGTERM while the command still runs sends it SIGKILL (a terminal's \
        Ctrl-C, which reaches the command itself, does not count). If tally \
        dies, the command gets SIGKILL (PR_SET_PDEATHSIG).")]
pub struct RunArgs {
    /// What to run and how: the options of the measurement.
    #[command(flatten)]
    pub config: run::Config,

    /// Where the report goes (stderr by default: stdout is the command's).
    #[command(flatten)]
    pub out: crate::report::OutputArgs,
}

impl Default for RunArgs {
    /// The defaults clap applies: one run, no warm-up, human format.
    fn default() -> RunArgs {
        RunArgs {
            config: run::Config::default(),
            out: crate::report::OutputArgs {
                format: Format::HUMAN,
                output: None,
                export: Vec::new(),
                html: None,
            },
        }
    }
}

/// Reads `tally run …` without clap, for the common spellings only.
///
/// Whatever tally does before it forks is added to the measured command's
/// wall time, and building clap's argument tree is most of it (its code and
/// heap pages are faulted in on every run). So the plain forms (`--flag`,
/// `--opt VALUE`, `-n N`, `-o FILE`, `--html FILE`, `--cold PATH` and
/// `--export F=FILE` (both repeatable, as in clap), then `--` or the first
/// word not starting with `-`) are read here. Anything else, including
/// `--opt=VALUE`, repeated options, help, and every error, returns `None`
/// and is left to clap. A test checks that every `Some` equals clap's parse.
pub fn scan(args: &[OsString]) -> Option<RunArgs> {
    if args.get(1).is_none_or(|a| a != "run") {
        return None;
    }
    let mut out = RunArgs::default();
    let mut seen = [false; 10];
    let mut once = |i: usize| !std::mem::replace(&mut seen[i], true);
    let mut rest = args[2..].iter().peekable();
    // A value for an option: present, not empty, not flag-like.
    fn value(v: Option<&OsString>) -> Option<&OsString> {
        v.filter(|v| !v.is_empty() && !v.as_bytes().starts_with(b"-"))
    }
    let count = |v: Option<&OsString>, min: u32| {
        let s = value(v)?.to_str()?;
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) || s.len() > 7 {
            return None;
        }
        let n: u32 = s.parse().ok()?;
        (min..=1_000_000).contains(&n).then_some(n)
    };
    while let Some(arg) = rest.next() {
        match arg.as_bytes() {
            b"--" => {
                out.config.argv = rest.cloned().collect();
                break;
            }
            b"-n" | b"--runs" if once(0) => out.config.runs = count(rest.next(), 1)?,
            b"--warmup" if once(1) => out.config.warmup = count(rest.next(), 0)?,
            b"--quiet-command" if once(2) => out.config.quiet_command = true,
            b"--drop-caches" if once(3) => out.config.drop_caches = true,
            b"--tree" if once(4) => out.config.tree = true,
            b"--counters" if once(5) => out.config.counters = true,
            b"--format" if once(6) => {
                // The names clap accepts, from the clap definition itself.
                let name = value(rest.next())?.to_str()?;
                out.out.format = <Format as clap::ValueEnum>::from_str(name, false).ok()?;
            }
            b"--export" => out
                .out
                .export
                .push(crate::report::flags::parse_export(value(rest.next())?).ok()?),
            b"-o" | b"--output" if once(7) => out.out.output = Some(value(rest.next())?.into()),
            b"--html" if once(9) => out.out.html = Some(value(rest.next())?.into()),
            b"--cold" => out.config.cold.push(value(rest.next())?.into()),
            [b'-', ..] => return None,
            _ => {
                out.config.argv = std::iter::once(arg).chain(rest).cloned().collect();
                break;
            }
        }
    }
    (!out.config.argv.is_empty()).then_some(out)
}
