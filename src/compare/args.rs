//! `tally compare` arguments (named as hyperfine names them, where it has
//! them).

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Args;

use super::gate::{self, Rule};
use super::plan::{self, Config, Instance, Shell, Sort, TimeUnit};
use crate::failure::Usage;

/// The examples under `tally compare -h` and `--help`.
macro_rules! examples {
    () => {
        "Examples:\n  \
        tally compare 'sleep 0.01' 'sleep 0.03'\n  \
        tally compare --cold f.bin './load --read f.bin' './load --mmap f.bin'\n  \
        tally compare -N -n 200 /bin/true '/bin/echo hi'\n  \
        tally compare -P t 1 4 'xz -T{t} -c big > /dev/null' --html xz.html\n  \
        tally compare -N --fail-on wall=3% --fail-on maxrss=10% ./old ./new\n  \
        tally compare -N --save-baseline main.json --name app ./app\n  \
        tally compare -N --baseline main.json --fail-on wall=5% --name app ./app"
    };
}

#[derive(Debug, Args)]
#[command(after_help = examples!(), after_long_help = concat!(examples!(), "\n\n", "Exit status: 0 when every run ran (and succeeded, without -i) and no \
        gated figure regressed; 1 when a command failed (exit status not 0, or \
        killed) and -i was not given, a run could not be started, or a file \
        (a baseline, a report) could not be read or written; 2 for bad usage (no \
        command, a bad parameter range, an unknown {NAME}, an unknown --fail-on \
        figure, commands the baseline does not hold); 3 when --fail-on found a \
        regression; 4 when --strict and a gated figure was inconclusive; 128+N \
        when signal N stopped the comparison."))]
pub struct CompareArgs {
    /// Measured runs of each command (default: as many as a 5% difference needs).
    ///
    /// Without it: enough to find a 5% difference in wall time with 90%
    /// chance, judged from the spread of the first --min-runs and again as
    /// runs come in; fewer when every difference is already clear; at most
    /// --max-runs and 60 s of runs.
    #[arg(short = 'n', long, value_name = "N", visible_short_alias = 'r',
          value_parser = clap::value_parser!(u32).range(2..=1_000_000))]
    pub runs: Option<u32>,

    /// Without --runs: at least N runs of each command.
    #[arg(short = 'm', long, value_name = "N", default_value_t = 10,
          value_parser = clap::value_parser!(u32).range(2..=1_000_000))]
    pub min_runs: u32,

    /// Without --runs: at most N runs of each command (default 10,000).
    #[arg(short = 'M', long, value_name = "N",
          value_parser = clap::value_parser!(u32).range(2..=1_000_000))]
    pub max_runs: Option<u32>,

    /// Run each command N times first, unmeasured.
    #[arg(short = 'w', long, value_name = "N", default_value_t = 0,
          value_parser = clap::value_parser!(u32).range(0..=1_000_000))]
    pub warmup: u32,

    /// Run CMD before every run, unmeasured.
    ///
    /// Run CMD (with `sh -c`, or --shell) before every run, warm-up or
    /// measured, unmeasured.
    #[arg(short = 'p', long, value_name = "CMD")]
    pub prepare: Option<String>,

    /// Run CMD after every run, unmeasured.
    ///
    /// Run CMD (with `sh -c`, or --shell) after every run, warm-up or
    /// measured, unmeasured (e.g. to stop a server --prepare started).
    #[arg(short = 'C', long, value_name = "CMD")]
    pub conclude: Option<String>,

    /// Run CMD (with `sh -c`) once before the first run of the comparison.
    #[arg(short = 's', long, value_name = "CMD")]
    pub setup: Option<String>,

    /// Run CMD (with `sh -c`) once after the last run of the comparison.
    #[arg(short = 'c', long, value_name = "CMD")]
    pub cleanup: Option<String>,

    /// A name for each command, in order (repeat the option).
    #[arg(long = "name", visible_alias = "command-name", value_name = "NAME",
          action = clap::ArgAction::Append)]
    pub names: Vec<String>,

    /// Run each command without a shell, split on whitespace.
    ///
    /// Split each command on whitespace and run it without a shell (the
    /// shell's own start-up is then not measured); the same as --shell none.
    #[arg(short = 'N', long, conflicts_with = "shell")]
    pub no_shell: bool,

    /// The shell that runs each command string (`none`: -N).
    ///
    /// The shell that runs each command string (`SHELL -c COMMAND`): a
    /// name, a path or a command line (`bash --norc`); `none` for no shell
    /// (-N), `default` for sh.
    #[arg(short = 'S', long, value_name = "SHELL", value_parser = Shell::parse)]
    pub shell: Option<Shell>,

    /// Every run reads FILE as its stdin (default: /dev/null).
    ///
    /// Every run reads FILE as its stdin, from its start (default:
    /// /dev/null). Opened once and rewound between runs, outside the
    /// measured time.
    #[arg(long, value_name = "FILE")]
    pub input: Option<PathBuf>,

    /// Where the commands' output goes: null, pipe, inherit or a FILE.
    ///
    /// Where the commands' stdout and stderr go: `null` (default), `pipe`
    /// (read and discarded by tally, as in a pipeline), `inherit` (tally's
    /// own), or a FILE, emptied before every run (it holds the last run's
    /// output; `./pipe` for a file so named). -o is the report's place.
    #[arg(long, value_name = "WHERE", conflicts_with = "show_output")]
    pub command_output: Option<OsString>,

    /// Evict PATH from the page cache before every run.
    ///
    /// Before every run, evict PATH (a directory recursively) from the
    /// page cache, without root, and verify it left. One path per option
    /// (repeat it), so the commands can follow directly.
    #[arg(long, value_name = "PATH", action = clap::ArgAction::Append)]
    pub cold: Vec<PathBuf>,

    /// Before every run, drop every clean page cache (needs root).
    #[arg(long)]
    pub drop_caches: bool,

    /// Compare the commands' GPU memory, busy time and energy (NVIDIA).
    ///
    /// Compare the command trees' GPU memory peak, GPU busy time and
    /// energy (NVIDIA, through nvidia-smi), or say why they cannot be
    /// measured. Without it they are compared when nvidia-smi is on PATH
    /// and a command used a GPU.
    #[arg(long)]
    pub gpu: bool,

    /// Leave out where the wall time went (CPU wait, storage wait, memory
    /// stall, other waits): the runs are not put in a cgroup of their own
    /// and those figures are not compared.
    #[arg(long, hide_short_help = true)]
    pub no_why: bool,

    /// Read PATH into the page cache before every run.
    ///
    /// Before every run, read PATH (a directory recursively) into the page
    /// cache. One path per option (repeat it).
    #[arg(long, value_name = "PATH", action = clap::ArgAction::Append,
          conflicts_with_all = ["cold", "drop_caches"])]
    pub warm: Vec<PathBuf>,

    /// Run each command for every value of {NAME} from LO to HI.
    ///
    /// Run each command once per value from LO to HI (integers, or
    /// decimals with -D: `-P d 0.001 0.003 -D 0.001`), with `{NAME}` in
    /// the commands replaced by the value.
    #[arg(short = 'P', long, num_args = 3, value_names = ["NAME", "LO", "HI"],
          conflicts_with = "parameter_list", allow_negative_numbers = true)]
    pub parameter_scan: Vec<String>,

    /// The step of --parameter-scan (1 by default; needed for decimals).
    #[arg(
        short = 'D',
        long,
        value_name = "STEP",
        requires = "parameter_scan",
        hide_short_help = true
    )]
    pub parameter_step_size: Option<String>,

    /// Run each command for every value of {NAME} in a list.
    ///
    /// Run each command once per value of a comma-separated list, with
    /// `{NAME}` in the commands replaced by the value. Repeatable: every
    /// combination runs.
    #[arg(short = 'L', long, num_args = 2, value_names = ["NAME", "VALUES"],
          action = clap::ArgAction::Append)]
    pub parameter_list: Vec<String>,

    /// Compare against command N or CMD (default: the fastest).
    ///
    /// Compare against command N (1-based), or against CMD (as hyperfine
    /// takes it: one of the commands given, or another run first),
    /// instead of the fastest by median wall time (with --fail-on: instead
    /// of the first).
    #[arg(long, value_name = "N|CMD", value_parser = parse_reference,
          conflicts_with = "baseline")]
    pub reference: Option<Reference>,

    /// Also save every run to FILE, for a later --baseline.
    ///
    /// Also write every run of every command to FILE (JSON), with the
    /// options that shape a run, tally's version and the machine's
    /// fingerprint, for a later --baseline FILE. Written whole, or not at
    /// all. Without --runs it takes at least the runs that bound their
    /// fastest 5% (about 150 for one command), which a later gate on a
    /// time compares, where --max-runs and the time budget allow them.
    #[arg(long, value_name = "FILE")]
    pub save_baseline: Option<PathBuf>,

    /// Compare each command with its runs stored in FILE.
    ///
    /// Compare each command with its runs stored in FILE (by
    /// --save-baseline), matched by --name, else by command string; with no
    /// COMMAND, run every command FILE holds. Warns when the machine, tally
    /// or the options differ. Times are judged in proportion to the
    /// machine's speed then and now (speed probes); a gate may also decide
    /// a regression on the fastest 5% of runs, and then takes as many runs
    /// as FILE holds (docs/compare.md).
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,

    /// Exit 3 when FIGURE regressed by more than PCT (e.g. wall=5%).
    ///
    /// Fail (exit 3) when FIGURE regressed by more than PCT: the whole
    /// interval of its ratio to the reference (family-wise corrected) lies
    /// beyond 1 + PCT. Pass when it lies within; inconclusive otherwise,
    /// with about how many runs would decide. FIGURE as the JSON names it
    /// (`wall`, `cpu`, `user`, `system`, `maxrss`, `minor_faults`,
    /// `read_bytes`, … or `wall_ns`, `max_rss_bytes`, …). Repeatable. The
    /// reference is the first command (or --reference N, or --baseline).
    #[arg(long = "fail-on", value_name = "FIGURE=PCT", value_parser = crate::compare::gate::parse_rule,
          action = clap::ArgAction::Append)]
    pub fail_on: Vec<Rule>,

    /// With --fail-on: an inconclusive figure fails too (exit 4).
    #[arg(long, requires = "fail_on")]
    pub strict: bool,

    /// Count the work done (instructions first), compared exactly.
    ///
    /// Figures no machine can move: a change is decided from the runs
    /// there are when the counts repeat. `hw`: the CPU's counters, in the
    /// timed runs (3 by default); `sim`: Valgrind's Cachegrind, in runs of
    /// their own (--count-runs, 3 by default; not timed unless --timed),
    /// which also says which functions a change is in; `auto` (a bare
    /// --count): hw where it counts, else sim. Gate with --fail-on
    /// instructions=1%. See docs/count.md.
    #[arg(long, value_name = "SOURCE", num_args = 0..=1, require_equals = true,
          default_missing_value = "auto", value_parser = crate::count::Choice::parse)]
    pub count: Option<crate::count::Choice>,

    /// With --count=sim: runs of each command under Valgrind (default 3).
    ///
    /// One is enough for a count that repeats.
    #[arg(long, value_name = "N", requires = "count", hide_short_help = true,
          value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub count_runs: Option<u32>,

    /// With --count=sim: time the commands as well, and report both.
    ///
    /// The timed runs are runs of their own, interleaved as without
    /// --count.
    #[arg(long, requires = "count", hide_short_help = true)]
    pub timed: bool,

    /// The order of the commands in the human table.
    ///
    /// The order of the commands in the human table: `auto` (as given; with
    /// --baseline each after its stored runs), `command`, `mean-time` or
    /// `median-time` (fastest first).
    #[arg(long, value_enum, value_name = "METHOD", default_value_t = Sort::Auto)]
    pub sort: Sort,

    /// The unit of times in human output.
    ///
    /// The unit of times in human output: `auto` (each scaled: ns, µs,
    /// ms, s), `ns`, `us`, `ms` or `s`. JSON and CSV keep integers.
    #[arg(short = 'u', long, value_enum, value_name = "UNIT", default_value_t = TimeUnit::Auto)]
    pub time_unit: TimeUnit,

    /// Every figure in its own block of the human report.
    ///
    /// Every figure in its own block of the human report. Without it, the
    /// blocks are the wall time, cpu time, peak memory and the figures that
    /// differ; the figures that did not move and those with no difference
    /// shown are named on a line each.
    #[arg(long)]
    pub all_figures: bool,

    /// The family-wise significance level.
    ///
    /// The family-wise significance level: the chance that a comparison
    /// calls any figure of any command different when none differs (each
    /// figure's interval at 1 − ALPHA/m over the m figures, Bonferroni).
    #[arg(long, value_name = "ALPHA", default_value_t = 0.05, value_parser = parse_alpha)]
    pub alpha: f64,

    /// The difference below which a figure counts as the same.
    ///
    /// A figure is different when its ratio's interval lies beyond 1 ± PCT
    /// (`1%`, `0.5%`), the same within PCT when it lies inside, undecided
    /// otherwise.
    #[arg(long, value_name = "PCT", default_value = "1%", value_parser = parse_percent)]
    pub threshold: f64,

    /// Keep measuring commands that exit non-zero (they are flagged).
    #[arg(short = 'i', long)]
    pub ignore_failure: bool,

    /// Show the commands' output (--command-output inherit).
    ///
    /// Show the commands' output instead of sending it to /dev/null (the
    /// same as --command-output inherit).
    #[arg(long)]
    pub show_output: bool,

    /// The seed of the run order (printed; give it to replay).
    ///
    /// The seed of the run order (shuffled within each round; default: a
    /// fresh one for each comparison, printed in the report; give it to
    /// replay that order).
    #[arg(long, value_name = "SEED")]
    pub seed: Option<u64>,

    #[command(flatten)]
    pub out: crate::report::OutputArgs,

    #[command(flatten)]
    pub record: crate::record::RecordArgs,

    /// The commands to compare (one: hyperfine's summary of it).
    ///
    /// The commands to compare, each one string run by `sh -c` (or split
    /// on whitespace with -N); with --baseline, none runs every stored one.
    #[arg(required_unless_present = "baseline", value_name = "COMMAND",
          value_hint = clap::ValueHint::CommandString)]
    pub commands: Vec<String>,
}

/// What `--reference` names: a command by its place, or by its text.
#[derive(Debug, Clone, PartialEq)]
pub enum Reference {
    /// The Nth command (1-based).
    Index(u32),
    /// A command string: the one given that equals it, or one more run first.
    Command(String),
}

fn parse_reference(s: &str) -> Result<Reference, String> {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return match s.parse::<u32>() {
            Ok(n) if n >= 1 => Ok(Reference::Index(n)),
            _ => Err(format!(
                "{s:?} is not a command's place; give 1 for the first command, 2 for the second, …, or the command itself"
            )),
        };
    }
    if s.trim().is_empty() {
        return Err("an empty reference; give a command, or its place (1, 2, …)".into());
    }
    Ok(Reference::Command(s.to_owned()))
}

/// The commands, their names and the reference's 0-based place.
type WithReference = (Vec<String>, Vec<String>, Option<usize>);

/// `1%`, `0.5%` or `1` (percent) as a fraction, from 0 up to 100%.
pub fn parse_percent(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let number = t.strip_suffix('%').unwrap_or(t).trim();
    match number.parse::<f64>() {
        Ok(p) if (0.0..100.0).contains(&p) => Ok(p / 100.0),
        _ => Err(format!(
            "{s:?} is not a percentage; give one from 0 up to 100, e.g. 1% or 0.5%"
        )),
    }
}

fn parse_alpha(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(a) if a > 0.0 && a < 1.0 => Ok(a),
        _ => Err(format!(
            "{s:?} is not a significance level; give a number between 0 and 1, e.g. 0.05"
        )),
    }
}

impl CompareArgs {
    /// The comparison the arguments ask for, checked: the commands and
    /// parameters expanded into the instances run, the gate's rules, the
    /// reference. Reads no file: `--baseline` is read when the comparison
    /// starts ([`super::execute`]), and its commands stand in for none
    /// given here. The seed, when none is given, is drawn here.
    pub fn config(&self) -> Result<Config, Usage> {
        let usage = |e: &dyn std::fmt::Display| Usage::new(format!("compare: {e}"));
        let (commands, names, reference) = self.with_reference().map_err(|e| usage(&e))?;
        let instances = match (&self.baseline, commands.is_empty()) {
            (Some(_), true) => Vec::new(),
            _ => self.plan(&commands, &names).map_err(|e| usage(&e))?,
        };
        gate::check_rules(&self.fail_on).map_err(|e| usage(&e))?;
        if self.count.is_none()
            && let Some(r) = self.fail_on.iter().find(|r| gate::counted(r.figure))
        {
            return Err(usage(&format!(
                "--fail-on {}: a counted figure needs --count (--count=sim counts on any machine \
                 with valgrind)",
                r.figure
            )));
        }
        if !self.fail_on.is_empty() && self.baseline.is_none() && instances.len() < 2 {
            return Err(usage(
                &"--fail-on needs a reference: give two commands (the first is the reference), \
                  or --baseline FILE",
            ));
        }
        // One command compares with nothing: its runs are summarised as
        // hyperfine summarises them (`hyperfine CMD`, the commonest call).
        if instances.is_empty() && self.baseline.is_none() {
            return Err(usage(&"give one or more commands"));
        }
        let command_output = match (&self.command_output, self.show_output) {
            (Some(w), _) => plan::CommandOutput::parse(w),
            (None, true) => plan::CommandOutput::Inherit,
            (None, false) => plan::CommandOutput::Null,
        };
        // A gate compares with the first command unless told otherwise.
        let reference = match (reference, self.fail_on.is_empty()) {
            (Some(r), _) => Some(r),
            (None, false) => Some(0),
            (None, true) => None,
        };
        let cfg = Config {
            instances,
            runs: self.runs,
            min_runs: self.min_runs,
            max_runs: self.max_runs,
            warmup: self.warmup,
            prepare: self.prepare.clone(),
            conclude: self.conclude.clone(),
            setup: self.setup.clone(),
            cleanup: self.cleanup.clone(),
            shell: self.shell(),
            input: self.input.clone(),
            command_output,
            cold: self.cold.clone(),
            drop_caches: self.drop_caches,
            gpu: self.gpu,
            why: !self.no_why,
            warm: self.warm.clone(),
            reference,
            alpha: self.alpha,
            threshold: self.threshold,
            ignore_failure: self.ignore_failure,
            seed: self.seed.unwrap_or_else(crate::stats::fresh_seed),
            baseline: None,
            baseline_file: self.baseline.clone(),
            commands_from: None,
            save_baseline: self.save_baseline.clone(),
            gate: self.fail_on.clone(),
            strict: self.strict,
            view: plan::View {
                sort: self.sort,
                time_unit: self.time_unit,
                all_figures: self.all_figures,
            },
            count: self.count,
            count_runs: self.count_runs,
            timed: self.timed,
        };
        if !cfg.instances.is_empty() {
            cfg.check_baseline_size().map_err(|e| usage(&e))?;
        }
        Ok(cfg)
    }

    fn shell(&self) -> Shell {
        match (&self.shell, self.no_shell) {
            (_, true) => Shell::None,
            (Some(s), false) => s.clone(),
            (None, false) => Shell::Default,
        }
    }

    /// The commands and their names with `--reference CMD` in place (the
    /// command given that equals it, or one more command first), and the
    /// reference as a 0-based place.
    fn with_reference(&self) -> Result<WithReference, String> {
        let (mut commands, mut names) = (self.commands.clone(), self.names.clone());
        let place = match &self.reference {
            None => None,
            Some(Reference::Index(n)) => Some(*n as usize - 1),
            Some(Reference::Command(c)) => match commands.iter().position(|x| x == c) {
                Some(i) => Some(i),
                None if !self.parameter_scan.is_empty() || !self.parameter_list.is_empty() => {
                    return Err(format!(
                        "--reference {}: with -P or -L, the reference must be one of the commands given (or its place: 1, 2, …)",
                        crate::text::escape::escape_name(c.as_bytes())
                    ));
                }
                None => {
                    commands.insert(0, c.clone());
                    if !names.is_empty() {
                        names.insert(0, c.clone());
                    }
                    Some(0)
                }
            },
        };
        Ok((commands, names, place))
    }

    /// The commands and parameter scans expanded into instances.
    fn plan(
        &self,
        commands: &[String],
        names: &[String],
    ) -> Result<Vec<Instance>, plan::PlanError> {
        let mut params = Vec::new();
        for p in self.parameter_scan.chunks(3) {
            let get = |i: usize| p.get(i).map(String::as_str).unwrap_or_default();
            params.push(plan::scan(
                get(0),
                get(1),
                get(2),
                self.parameter_step_size.as_deref(),
            )?);
        }
        for p in self.parameter_list.chunks(2) {
            let get = |i: usize| p.get(i).map(String::as_str).unwrap_or_default();
            params.push(plan::list(get(0), get(1))?);
        }
        plan::expand(commands, names, &params, &self.shell())
    }
}
