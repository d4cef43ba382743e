//! `tally run` arguments.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;

use std::path::PathBuf;

use clap::Args;

use super::Config;
use crate::failure::Usage;
use crate::report::{Format, OutputArgs};

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
        tally run -- ls -lR /usr/share/doc\n  \
        tally run -n 10 --warmup 2 --quiet-command -- gzip -k -f big.file\n  \
        tally run --cold model.bin -- ./load model.bin\n  \
        tally run --tree --format json -o report.json -- make -j2\n\n\
        Exit status: the command's own (with -n N, that of the first run that \
        failed, else 0); 128+N if a signal N killed it; 127 if \
        it was not found, 126 if it could not be executed, 125 if tally itself \
        failed: before the command ran (a bad option, an unwritable -o), or \
        writing the report.\n\n\
        Signals: SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to tally are passed \
        on to the command and the run is still reported. A second SIGINT or \
        SIGTERM while the command still runs sends it SIGKILL (a terminal's \
        Ctrl-C, which reaches the command itself, does not count). If tally \
        dies, the command gets SIGKILL (PR_SET_PDEATHSIG).")]
pub struct RunArgs {
    /// Run the command N times and report min, median, mean ± stddev, max
    /// (default 1; with --count 3, so that the report shows whether the
    /// counts repeat).
    #[arg(short = 'n', long, value_name = "N", visible_short_alias = 'r',
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub runs: Option<u32>,

    /// Run the command N times first, unmeasured.
    #[arg(short = 'w', long, value_name = "N", default_value_t = 0,
          value_parser = clap::value_parser!(u32).range(0..=1_000_000))]
    pub warmup: u32,

    /// Send the command's stdout and stderr to /dev/null.
    #[arg(long)]
    pub quiet_command: bool,

    /// Before every run, evict PATH (a directory recursively) from the
    /// page cache, without root, and verify it left. One path per option
    /// (repeat it), so the command can follow directly.
    #[arg(long, value_name = "PATH", action = clap::ArgAction::Append)]
    pub cold: Vec<PathBuf>,

    /// Before every run, drop every clean page cache (needs root).
    #[arg(long)]
    pub drop_caches: bool,

    /// Account for the whole process tree (cgroup v2, else /proc sampling).
    #[arg(long)]
    pub tree: bool,

    /// Count cycles, instructions, cache and branch misses (perf_event_open).
    #[arg(long)]
    pub counters: bool,

    /// Count the work done, in figures no machine can move: instructions
    /// first. `hw`: the CPU's counters (needs a PMU); `sim`: Valgrind's
    /// Cachegrind (any machine with valgrind installed; 20-100x slower,
    /// and it says which functions did the work); `auto` (the default of a
    /// bare --count): hw where it counts, else sim. A run under sim is not
    /// timed: its time is Valgrind's. See docs/count.md.
    #[arg(long, value_name = "SOURCE", num_args = 0..=1, require_equals = true,
          default_missing_value = "auto", value_parser = crate::count::Choice::parse)]
    pub count: Option<crate::count::Choice>,

    /// Show where the wall time went as a table, each part with its source
    /// and what it may miss (by default: two lines). `-v`/`--verbose` as
    /// GNU time's: the full account.
    #[arg(long, short = 'v', visible_alias = "verbose")]
    pub why: bool,

    /// Leave out where the wall time went: the command is not put in a
    /// cgroup of its own, and the report has no CPU wait, storage wait,
    /// memory stall or other waits.
    #[arg(long, conflicts_with = "why")]
    pub no_why: bool,

    /// Report the command tree's GPU memory peak, GPU busy time and energy
    /// (NVIDIA, through nvidia-smi), or say why they cannot be measured.
    /// Without it they are reported when nvidia-smi is on PATH and works.
    #[arg(long)]
    pub gpu: bool,

    /// The command and its arguments (run as given, no shell).
    #[arg(required = true, trailing_var_arg = true, value_name = "COMMAND",
          value_hint = clap::ValueHint::CommandWithArguments)]
    pub argv: Vec<OsString>,

    /// The report as one line per run made from TEMPLATE, as GNU time's
    /// `-f FORMAT`: its `%` letters (`%e` elapsed s, `%U`/`%S` user/kernel
    /// s, `%M` peak KiB, `%P` cpu %, `%E`, `%F`, `%R`, `%w`, `%c`, `%I`,
    /// `%O`, `%x`, `%C`, `%Z`), `%{KEY}` for any figure of tally's by its
    /// JSON key (`%{io_wait_ns}`), `%%`, and `\n`, `\t`.
    #[arg(short = 'f', long = "template", value_name = "TEMPLATE",
          value_parser = |s: &str| super::template::Template::parse(s).map(|_| s.to_string()))]
    pub template: Option<String>,

    /// With -o FILE: add the report to the end of FILE instead of
    /// replacing it (GNU time's -a).
    #[arg(short = 'a', long, requires = "output")]
    pub append: bool,

    /// The unit of times in human output: `auto` (each scaled: ns, µs,
    /// ms, s), `ns`, `us`, `ms` or `s`. JSON and CSV keep integers.
    #[arg(short = 'u', long, value_enum, value_name = "UNIT", default_value_t = crate::units::TimeUnit::Auto)]
    pub time_unit: crate::units::TimeUnit,

    /// Where the report goes (stderr by default: stdout is the command's).
    #[command(flatten)]
    pub out: OutputArgs,

    #[command(flatten)]
    pub record: crate::record::RecordArgs,
}

impl Default for RunArgs {
    /// The defaults clap applies: one run, no warm-up, human format.
    fn default() -> RunArgs {
        RunArgs {
            runs: None,
            warmup: 0,
            quiet_command: false,
            cold: Vec::new(),
            drop_caches: false,
            tree: false,
            counters: false,
            count: None,
            why: false,
            no_why: false,
            gpu: false,
            argv: Vec::new(),
            template: None,
            append: false,
            time_unit: crate::units::TimeUnit::Auto,
            out: OutputArgs::default(),
            record: crate::record::RecordArgs::default(),
        }
    }
}

impl RunArgs {
    /// The run the arguments ask for (clap has checked them all).
    pub fn config(self) -> Result<Config, Usage> {
        Ok(Config {
            runs: self.runs.unwrap_or(if self.count.is_some() {
                COUNTED_RUNS
            } else {
                1
            }),
            warmup: self.warmup,
            quiet_command: self.quiet_command,
            stdin_null: false,
            stdout_to_stderr: false,
            cold: self.cold,
            drop_caches: self.drop_caches,
            tree: self.tree,
            counters: self.counters,
            count: self.count,
            why: !self.no_why,
            gpu: self.gpu,
            gpu_when_present: true,
            argv: self.argv,
        })
    }
}

/// Runs made by default with `--count`: the fewest that show whether the
/// counts repeat from run to run.
pub const COUNTED_RUNS: u32 = 3;

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
    let mut seen = [false; 13];
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
                out.argv = rest.cloned().collect();
                break;
            }
            b"-n" | b"-r" | b"--runs" if once(0) => out.runs = Some(count(rest.next(), 1)?),
            b"-w" | b"--warmup" if once(1) => out.warmup = count(rest.next(), 0)?,
            b"--quiet-command" if once(2) => out.quiet_command = true,
            b"--drop-caches" if once(3) => out.drop_caches = true,
            b"--tree" if once(4) => out.tree = true,
            b"--counters" if once(5) => out.counters = true,
            b"--gpu" if once(11) => out.gpu = true,
            b"--why" | b"-v" | b"--verbose" if once(10) => out.why = true,
            b"--no-why" if once(12) => out.no_why = true,
            b"--format" if once(6) => {
                // The names clap accepts, from the clap definition itself.
                let name = value(rest.next())?.to_str()?;
                out.out.format = <Format as clap::ValueEnum>::from_str(name, false).ok()?;
            }
            b"--export" => out
                .out
                .export
                .push(crate::report::flags::parse_export(value(rest.next())?).ok()?),
            b"-o" | b"--output" if once(7) => {
                // hyperfine's words for the command's output are clap's to refuse.
                let place = value(rest.next())
                    .filter(|v| !matches!(v.as_bytes(), b"null" | b"pipe" | b"inherit"))?;
                out.out.output = Some(place.into());
            }
            b"--html" if once(9) => out.out.html = Some(value(rest.next())?.into()),
            b"--cold" => out.cold.push(value(rest.next())?.into()),
            [b'-', ..] => return None,
            _ => {
                out.argv = std::iter::once(arg).chain(rest).cloned().collect();
                break;
            }
        }
    }
    // Both `--why` and `--no-why` are clap's to refuse.
    let refused = out.why && out.no_why;
    (!out.argv.is_empty() && !refused).then_some(out)
}
