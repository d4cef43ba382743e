//! From the command line's commands, names and parameters to the list of
//! instances a comparison runs: each command once per combination of
//! parameter values, `{NAME}` replaced.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::run::report::RunRecord;

/// What to compare and how.
#[derive(Debug, Clone, Default)]
pub struct Config {
    pub instances: Vec<Instance>,
    /// Measured runs per command; `None`: by the time budget.
    pub runs: Option<u32>,
    pub min_runs: u32,
    pub max_runs: Option<u32>,
    pub warmup: u32,
    pub prepare: Option<String>,
    /// After every run, warm-up or measured, unmeasured (`--conclude`).
    pub conclude: Option<String>,
    pub setup: Option<String>,
    pub cleanup: Option<String>,
    /// What the hooks (`--prepare`, `--conclude`, `--setup`, `--cleanup`)
    /// run with (the commands' argv come from [`expand`]).
    pub shell: Shell,
    /// Every run's stdin (`--input`); `None`: /dev/null.
    pub input: Option<PathBuf>,
    /// Where the commands' stdout and stderr go (`--command-output`).
    pub command_output: CommandOutput,
    pub cold: Vec<PathBuf>,
    pub drop_caches: bool,
    /// `--gpu`: GPU figures asked for (see `runner`'s GPU sampling).
    pub gpu: bool,
    /// Where the wall time went measured (off with `--no-why`).
    pub why: bool,
    pub warm: Vec<PathBuf>,
    /// 0-based; `None`: the fastest by median wall time.
    pub reference: Option<usize>,
    /// The family-wise error rate: the chance that a comparison flags any
    /// figure of any command when nothing differs.
    pub alpha: f64,
    /// A significant difference smaller than this fraction (0.01 for 1%)
    /// is reported as the same within it.
    pub threshold: f64,
    pub ignore_failure: bool,
    pub seed: u64,
    /// `--baseline`: the stored runs each instance is compared with, in
    /// the instances' order (read from [`Config::baseline_file`] when the
    /// comparison starts).
    pub baseline: Option<Baseline>,
    /// `--baseline FILE`: where the stored runs are read from.
    pub baseline_file: Option<PathBuf>,
    /// The file the commands were read from: a `--baseline` comparison
    /// given no command runs the baseline's own, and a message about one
    /// names where it came from.
    pub commands_from: Option<PathBuf>,
    /// `--save-baseline FILE`: where this comparison's runs are kept.
    pub save_baseline: Option<PathBuf>,
    /// `--fail-on`: the gate's rules (none: no gate).
    pub gate: Vec<Rule>,
    /// `--strict`: an inconclusive figure fails the gate too.
    pub strict: bool,
    pub view: View,
    /// `--count`: the counting source asked for.
    pub count: Option<crate::count::Choice>,
    /// `--count-runs`: counted runs of each command under the simulator
    /// (default [`COUNTED_RUNS`]).
    pub count_runs: Option<u32>,
    /// `--timed`: with the simulator, timed runs as well.
    pub timed: bool,
}

/// Counted runs of each command by default (`--count`): the fewest that
/// show whether its counts repeat.
pub const COUNTED_RUNS: u32 = 3;

/// One `--fail-on FIGURE=PCT`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rule {
    /// The figure's JSON key.
    pub figure: &'static str,
    /// The largest increase that passes, a fraction (0.05 for 5%).
    pub limit: f64,
}

/// The runs of one command kept in a baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredRuns {
    /// The command as it was saved.
    pub name: String,
    pub command: String,
    pub parameters: Vec<(String, String)>,
    pub runs: Vec<RunRecord>,
    pub failed_runs: u32,
    /// Where its instructions went (`--count=sim`), as the baseline kept it.
    pub profile: Option<crate::count::Profile>,
}

/// `--baseline`: the stored runs matched to the instances, and about them.
#[derive(Debug, Clone, PartialEq)]
pub struct Baseline {
    /// One per instance, in the instances' order: their references.
    pub commands: Vec<StoredRuns>,
    pub about: BaselineUse,
}

/// The machine a baseline was measured on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    pub cpu_model: Option<String>,
    /// Logical CPUs this process may run on.
    pub cpus: Option<u32>,
    /// The kernel release.
    pub kernel: Option<String>,
    /// `MemTotal`.
    pub memory_bytes: Option<u64>,
}

impl Fingerprint {
    /// What differs from `now`, one phrase each (`kernel 6.1 then, 6.8 now`).
    pub fn differences(&self, now: &Fingerprint) -> Vec<String> {
        // Read from a baseline: escaped as text that did not come from tally.
        let text = |v: &Option<String>| {
            v.as_deref()
                .map_or_else(|| "unknown".into(), crate::text::escape_text)
        };
        let mut out = Vec::new();
        if self.cpu_model != now.cpu_model {
            out.push(format!(
                "CPU \"{}\" then, \"{}\" now",
                text(&self.cpu_model),
                text(&now.cpu_model)
            ));
        }
        if self.cpus != now.cpus {
            let n = |v: Option<u32>| v.map_or("unknown".into(), |n| n.to_string());
            out.push(format!("{} CPUs then, {} now", n(self.cpus), n(now.cpus)));
        }
        if self.kernel != now.kernel {
            out.push(format!(
                "kernel {} then, {} now",
                text(&self.kernel),
                text(&now.kernel)
            ));
        }
        if self.memory_bytes != now.memory_bytes {
            let mib = |v: Option<u64>| v.map_or("unknown".into(), |b| format!("{} MiB", b >> 20));
            out.push(format!(
                "memory {} then, {} now",
                mib(self.memory_bytes),
                mib(now.memory_bytes)
            ));
        }
        out
    }
}

/// What a comparison records about the baseline it used.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BaselineUse {
    #[serde(serialize_with = "crate::text::path::serialize")]
    pub path: PathBuf,
    /// When it was written, and by which tally.
    pub saved_at: Option<String>,
    pub tally_version: Option<String>,
    pub machine: Fingerprint,
    /// Other work on the machine while the baseline's runs ran, percent of
    /// one CPU.
    pub other_cpu_percent: Option<f64>,
    /// The speed probes made with the baseline's runs (none in a baseline
    /// saved before there were).
    pub speed_probe_ns: Vec<u64>,
    /// Its probes timed the work of another probe version: none are kept
    /// (said among the differences).
    pub probes_of_other_work: bool,
    /// How its counted figures were counted (`--count`), when they were.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count_source: Option<crate::count::Source>,
    /// How this comparison differs from the one that saved it (machine,
    /// tally's version, options, other work): warned about, not failed.
    pub differences: Vec<String>,
}

/// How the human table is laid out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct View {
    pub sort: Sort,
    /// Times in this unit (`--time-unit`; `auto` scales each).
    pub time_unit: TimeUnit,
    /// Every figure in its own block (`--all-figures`), not only those
    /// that differ or matter.
    pub all_figures: bool,
}

/// `--sort`: the order of the commands in each figure's rows (hyperfine's
/// names).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Sort {
    /// As given (with a baseline, each command after its stored runs).
    #[default]
    Auto,
    /// As given on the command line.
    Command,
    /// By mean wall time, fastest first.
    MeanTime,
    /// By median wall time, fastest first.
    MedianTime,
}

pub use crate::units::TimeUnit;

/// Where the commands' stdout and stderr go (`--command-output`, as
/// hyperfine's `--output`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum CommandOutput {
    /// /dev/null.
    #[default]
    Null,
    /// A pipe that tally reads and discards (the command pays for writing
    /// to a pipe, as in a shell pipeline).
    Pipe,
    /// tally's own stdout and stderr.
    Inherit,
    /// This file, truncated before every run: it holds the last run's
    /// output.
    File(PathBuf),
}

impl CommandOutput {
    /// `null`, `pipe`, `inherit`, else a file name (`./pipe` for a file
    /// called `pipe`).
    pub fn parse(s: &OsStr) -> CommandOutput {
        match s.to_str() {
            Some("null") => CommandOutput::Null,
            Some("pipe") => CommandOutput::Pipe,
            Some("inherit") => CommandOutput::Inherit,
            _ => CommandOutput::File(PathBuf::from(s)),
        }
    }
}

/// What runs a command string (`--shell`, hyperfine's `-S`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Shell {
    /// `sh -c COMMAND`.
    #[default]
    Default,
    /// No shell: the command split on whitespace (`-N`, `--shell none`).
    None,
    /// A shell's own command line (`bash`, `bash --norc`), then `-c COMMAND`.
    Command(Vec<String>),
}

impl Shell {
    /// `none`, `default`, or a shell's command line.
    pub fn parse(s: &str) -> Result<Shell, String> {
        match s.trim() {
            "none" => Ok(Shell::None),
            "default" => Ok(Shell::Default),
            "" => Err("--shell: an empty shell; give e.g. bash, 'bash --norc' or none".into()),
            words => Ok(Shell::Command(
                words.split_whitespace().map(String::from).collect(),
            )),
        }
    }

    /// The argv that runs `command`.
    pub fn argv(&self, command: &str) -> Vec<OsString> {
        match self {
            Shell::None => command.split_whitespace().map(OsString::from).collect(),
            Shell::Default => vec!["sh".into(), "-c".into(), command.into()],
            Shell::Command(words) => words
                .iter()
                .map(OsString::from)
                .chain(["-c".into(), command.into()])
                .collect(),
        }
    }

    /// The argv that runs a hook: as the commands, but `sh` without a shell.
    pub fn hook_argv(&self, command: &str) -> Vec<OsString> {
        match self {
            Shell::None => Shell::Default.argv(command),
            shell => shell.argv(command),
        }
    }

    /// How it reads in a baseline and in warnings.
    pub fn describe(&self) -> String {
        match self {
            Shell::Default => "sh".into(),
            Shell::None => "none".into(),
            Shell::Command(words) => words.join(" "),
        }
    }
}

/// A parameter of `-P/--parameter-scan` or `-L/--parameter-list`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parameter {
    pub name: String,
    pub values: Vec<String>,
}

/// One command as it is run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instance {
    /// `--name`, else the command; with parameters, `name (n=4)`.
    pub name: String,
    /// The command with its parameters filled in.
    pub command: String,
    /// What is executed: `sh -c COMMAND`, or the words of the command with
    /// `--no-shell`.
    pub argv: Vec<OsString>,
    pub parameters: Vec<(String, String)>,
}

/// A command line that cannot be compared; the message names the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PlanError(pub String);

/// The most values a parameter scan takes.
const MAX_SCAN_VALUES: u128 = 10_000;

/// The most commands one comparison runs, parameter combinations
/// included (as many as a baseline keeps).
pub const MAX_COMMANDS: usize = 1_000;

/// A decimal number as an integer mantissa and its digits after the point
/// (`-0.25` is `(-25, 2)`); no exponent.
fn decimal(s: &str) -> Option<(i128, u32)> {
    let t = s.trim();
    let (negative, digits) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    if whole.is_empty() && fraction.is_empty()
        || !whole
            .chars()
            .chain(fraction.chars())
            .all(|c| c.is_ascii_digit())
        || fraction.len() > 18
        || whole.len() > 18
    {
        return None;
    }
    let scale = fraction.len() as u32;
    let mut m: i128 = 0;
    for c in whole.chars().chain(fraction.chars()) {
        m = m * 10 + i128::from(c.to_digit(10)?);
    }
    Some((if negative { -m } else { m }, scale))
}

/// Why `s` is not a number [`decimal`] reads, said for a message.
fn not_decimal(s: &str) -> String {
    let digits = s.trim().trim_start_matches(['-', '+']);
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    let all_digits = |t: &str| t.chars().all(|c| c.is_ascii_digit());
    if !digits.is_empty() && all_digits(whole) && all_digits(fraction) {
        "has more than 18 digits before or after the point, more than a scan can step through"
            .into()
    } else if digits.contains(['e', 'E'])
        && !digits.contains(|c: char| c.is_ascii_alphabetic() && c != 'e' && c != 'E')
    {
        "is written with an exponent; write it out in digits (0.001, not 1e-3)".into()
    } else {
        "is not an integer or a decimal number".into()
    }
}

/// `m` with `scale` digits after the point.
fn decimal_text(m: i128, scale: u32) -> String {
    if scale == 0 {
        return m.to_string();
    }
    let unit = 10i128.pow(scale);
    let sign = if m < 0 { "-" } else { "" };
    let a = m.unsigned_abs();
    let unit = unit.unsigned_abs();
    format!(
        "{sign}{}.{:0width$}",
        a / unit,
        a % unit,
        width = scale as usize
    )
}

/// `-P NAME LO HI [-D STEP]`: the numbers from LO to HI by STEP (1 by
/// default); decimal ones (`-P d 0.001 0.003 -D 0.001`) need STEP, and are
/// written with as many decimals as the most precise of the three.
pub fn scan(name: &str, lo: &str, hi: &str, step: Option<&str>) -> Result<Parameter, PlanError> {
    check_name(name, "-P/--parameter-scan")?;
    let parse = |s: &str, what: &str| {
        decimal(s).ok_or_else(|| {
            PlanError(format!(
                "-P/--parameter-scan {name}: {what} {:?} {}; give e.g. -P {name} 1 8, or -P \
                 {name} 0.1 0.5 -D 0.1",
                crate::text::escape_text(s),
                not_decimal(s)
            ))
        })
    };
    let (lo_d, hi_d) = (parse(lo, "LO")?, parse(hi, "HI")?);
    let step_d = match step {
        Some(s) => Some(decimal(s).filter(|(m, _)| *m > 0).ok_or_else(|| {
            let why = match decimal(s) {
                Some(_) => "is not above 0".to_string(),
                None => not_decimal(s),
            };
            PlanError(format!(
                "-D/--parameter-step-size {:?} {why}; give e.g. -D 2 or -D 0.1",
                crate::text::escape_text(s)
            ))
        })?),
        None => None,
    };
    let scale = lo_d.1.max(hi_d.1).max(step_d.map_or(0, |d| d.1));
    if scale > 0 && step_d.is_none() {
        return Err(PlanError(format!(
            "-P/--parameter-scan {name} {lo} {hi}: a decimal range needs its step, e.g. -D 0.1"
        )));
    }
    let at = |(m, s): (i128, u32)| m * 10i128.pow(scale - s);
    let (lo_n, hi_n) = (at(lo_d), at(hi_d));
    let step_n = step_d.map_or(1, at);
    if lo_n > hi_n {
        return Err(PlanError(format!(
            "-P/--parameter-scan {name}: LO {} is above HI {}; give the range low to high",
            decimal_text(lo_n, scale),
            decimal_text(hi_n, scale)
        )));
    }
    let count = (hi_n - lo_n).unsigned_abs() / step_n.unsigned_abs() + 1;
    if count > MAX_SCAN_VALUES {
        return Err(PlanError(format!(
            "-P/--parameter-scan {name}: {count} values; at most 10,000 (a larger -D STEP?)"
        )));
    }
    let values = (0..count as i128)
        .map(|i| decimal_text(lo_n + i * step_n, scale))
        .collect();
    Ok(Parameter {
        name: name.into(),
        values,
    })
}

/// `-L NAME a,b,c`.
pub fn list(name: &str, values: &str) -> Result<Parameter, PlanError> {
    check_name(name, "-L/--parameter-list")?;
    let values: Vec<String> = values.split(',').map(String::from).collect();
    if values.iter().all(String::is_empty) {
        return Err(PlanError(format!(
            "-L/--parameter-list {name}: no values; give them comma-separated, e.g. -L {name} a,b,c"
        )));
    }
    Ok(Parameter {
        name: name.into(),
        values,
    })
}

fn check_name(name: &str, option: &str) -> Result<(), PlanError> {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(PlanError(format!(
            "{option}: {name:?} is not a parameter name; use letters, digits and _ (it is written {{NAME}} in the commands)"
        )));
    }
    Ok(())
}

/// The `{word}`s of a command that look like parameters.
fn placeholders(command: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = command;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        match after.find('}') {
            Some(close) => {
                let word = &after[..close];
                if !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    out.push(word);
                }
                rest = &after[close..];
            }
            None => break,
        }
    }
    out
}

/// The instances to run: every command once per combination of parameter
/// values. With parameters, a `{word}` that names none is an error, and so
/// is a parameter no command uses.
pub fn expand(
    commands: &[String],
    names: &[String],
    params: &[Parameter],
    shell: &Shell,
) -> Result<Vec<Instance>, PlanError> {
    check_names(commands, names, params)?;
    check_size(commands, params)?;
    check_placeholders(commands, params)?;
    let combos = combinations(params);
    let mut out = Vec::new();
    for (i, c) in commands.iter().enumerate() {
        for combo in &combos {
            out.push(instance(c, names.get(i), combo, shell));
        }
    }
    Ok(out)
}

/// One name per command and each name once; each parameter given once.
fn check_names(
    commands: &[String],
    names: &[String],
    params: &[Parameter],
) -> Result<(), PlanError> {
    if commands.is_empty() {
        return Err(PlanError(
            "no command to compare; give one or more, each one quoted string".into(),
        ));
    }
    if !names.is_empty() && names.len() != commands.len() {
        return Err(PlanError(format!(
            "{} --name for {} command{}; give one name per command, in order",
            names.len(),
            commands.len(),
            if commands.len() == 1 { "" } else { "s" }
        )));
    }
    for (i, n) in names.iter().enumerate() {
        if let Some(j) = names[..i].iter().position(|m| m == n) {
            return Err(PlanError(format!(
                "--name {} is given to commands {} and {}: a name tells a command apart (in the \
                 report and in a baseline); give each its own",
                crate::text::Foreign(n),
                j + 1,
                i + 1
            )));
        }
    }
    for (i, p) in params.iter().enumerate() {
        if params[..i].iter().any(|q| q.name == p.name) {
            return Err(PlanError(format!(
                "parameter {} is given twice (-P/-L): give each parameter once, all its values \
                 in one -L {} a,b,c or -P range",
                p.name, p.name
            )));
        }
    }
    Ok(())
}

/// The number of commands the plan expands to stays within [`MAX_COMMANDS`].
fn check_size(commands: &[String], params: &[Parameter]) -> Result<(), PlanError> {
    let total = params
        .iter()
        .fold(commands.len(), |n, p| n.saturating_mul(p.values.len()));
    if total > MAX_COMMANDS {
        let sizes: Vec<String> = params
            .iter()
            .map(|p| format!("{} values of {}", p.values.len(), p.name))
            .collect();
        return Err(PlanError(format!(
            "{} commands to compare ({} command{} × {}); at most {MAX_COMMANDS}: give fewer \
             values (-L), a larger -D step, or fewer commands",
            crate::units::thousands(total as u64),
            commands.len(),
            if commands.len() == 1 { "" } else { "s" },
            sizes.join(" × ")
        )));
    }
    if params.is_empty() && commands.len() > MAX_COMMANDS {
        return Err(PlanError(format!(
            "{} commands to compare; at most {MAX_COMMANDS}: compare them in groups",
            crate::units::thousands(commands.len() as u64)
        )));
    }
    Ok(())
}

/// No command is empty, every `{name}` is a parameter and every parameter
/// is used.
fn check_placeholders(commands: &[String], params: &[Parameter]) -> Result<(), PlanError> {
    for (i, c) in commands.iter().enumerate() {
        if c.trim().is_empty() {
            return Err(PlanError(format!("command {} is empty", i + 1)));
        }
        if !params.is_empty() {
            for word in placeholders(c) {
                if !params.iter().any(|p| p.name == word) {
                    let known: Vec<String> =
                        params.iter().map(|p| format!("{{{}}}", p.name)).collect();
                    return Err(PlanError(format!(
                        "command {}: unknown {{{word}}}; the parameters are {} (from -P/-L)",
                        i + 1,
                        known.join(", ")
                    )));
                }
            }
        }
    }
    for p in params {
        let used = format!("{{{}}}", p.name);
        if !commands.iter().any(|c| c.contains(&used)) {
            return Err(PlanError(format!(
                "parameter {} is not used: write {used} in a command",
                p.name
            )));
        }
    }
    Ok(())
}

/// Every combination of parameter values, the first parameter slowest.
fn combinations(params: &[Parameter]) -> Vec<Vec<(String, String)>> {
    let mut combos: Vec<Vec<(String, String)>> = vec![Vec::new()];
    for p in params {
        combos = combos
            .into_iter()
            .flat_map(|c| {
                p.values.iter().map(move |v| {
                    let mut c = c.clone();
                    c.push((p.name.clone(), v.clone()));
                    c
                })
            })
            .collect();
    }
    combos
}

/// One command with one combination of parameter values filled in, named
/// by its `--name` (with the values) or by its text.
fn instance(
    template: &str,
    given: Option<&String>,
    combo: &[(String, String)],
    shell: &Shell,
) -> Instance {
    let mut command = template.to_string();
    for (name, value) in combo {
        command = command.replace(&format!("{{{name}}}"), value);
    }
    let name = match given {
        None => command.clone(),
        Some(base) if combo.is_empty() => base.clone(),
        Some(base) => {
            let set: Vec<String> = combo.iter().map(|(n, v)| format!("{n}={v}")).collect();
            format!("{base} ({})", set.join(", "))
        }
    };
    let argv = shell.argv(&command);
    Instance {
        name,
        command,
        argv,
        parameters: combo.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn scans_and_lists_expand_every_combination() {
        let p = vec![
            scan("n", "1", "5", Some("2")).unwrap(),
            list("mode", "read,mmap").unwrap(),
        ];
        assert_eq!(p[0].values, s(&["1", "3", "5"]));
        let got = expand(&s(&["load -t{n} --{mode}"]), &[], &p, &Shell::None).unwrap();
        assert_eq!(got.len(), 6);
        assert_eq!(got[0].command, "load -t1 --read");
        assert_eq!(got[5].argv, ["load", "-t5", "--mmap"]);
        let named = expand(&s(&["x {n}"]), &s(&["x"]), &p[..1], &Shell::Default).unwrap();
        assert_eq!(named[1].name, "x (n=3)");
        assert_eq!(named[1].argv, ["sh", "-c", "x 3"]);
    }

    #[test]
    fn bad_plans_say_what_to_fix() {
        assert!(scan("n", "5", "1", None).unwrap_err().0.contains("above"));
        assert!(
            scan("n", "a", "1", None)
                .unwrap_err()
                .0
                .contains("not an integer")
        );
        assert!(scan("n-1", "1", "2", None).is_err());
        let p = vec![scan("n", "1", "2", None).unwrap()];
        let sh = Shell::Default;
        let e = expand(&s(&["x {m}"]), &[], &p, &sh).unwrap_err();
        assert!(e.0.contains("unknown {m}"), "{e}");
        assert!(
            expand(&s(&["x"]), &[], &p, &sh)
                .unwrap_err()
                .0
                .contains("not used")
        );
        assert!(expand(&[], &[], &[], &sh).is_err());
        assert!(expand(&s(&["a", "b"]), &s(&["x"]), &[], &sh).is_err());
        // Without parameters, braces are the command's own business.
        assert!(expand(&s(&["awk '{print}'"]), &[], &[], &sh).is_ok());
    }

    #[test]
    fn decimal_scans_step_exactly_and_need_a_step() {
        let p = scan("d", "0.001", "0.003", Some("0.001")).unwrap();
        assert_eq!(p.values, s(&["0.001", "0.002", "0.003"]));
        // No drift from binary fractions: 0.1 + 0.2 is 0.3 here.
        let p = scan("x", "0", "1", Some("0.1")).unwrap();
        assert_eq!(p.values.len(), 11);
        assert_eq!(p.values[3], "0.3");
        assert_eq!(p.values[10], "1.0");
        let p = scan("t", "-0.5", "0.5", Some("0.25")).unwrap();
        assert_eq!(p.values, s(&["-0.50", "-0.25", "0.00", "0.25", "0.50"]));
        // A HI off the grid stops below it.
        assert_eq!(
            scan("n", "1", "6", Some("2")).unwrap().values,
            s(&["1", "3", "5"])
        );
        assert!(
            scan("d", "0.1", "0.3", None)
                .unwrap_err()
                .0
                .contains("needs its step")
        );
        for bad in ["0", "-1", "x", ""] {
            assert!(scan("n", "1", "2", Some(bad)).is_err(), "{bad}");
        }
        for bad in ["1e3", ".", "1.2.3", "--1"] {
            assert!(scan("n", bad, "2000", Some("1")).is_err(), "{bad}");
        }
        assert!(
            scan("n", "0", "100000", None)
                .unwrap_err()
                .0
                .contains("10,000")
        );
    }

    #[test]
    fn a_shell_runs_the_command_string() {
        let argv = |sh: &Shell| -> Vec<String> {
            sh.argv("echo a  b")
                .into_iter()
                .map(|a| a.into_string().unwrap())
                .collect()
        };
        assert_eq!(argv(&Shell::Default), ["sh", "-c", "echo a  b"]);
        assert_eq!(argv(&Shell::None), ["echo", "a", "b"]);
        let bash = Shell::parse("bash --norc").unwrap();
        assert_eq!(argv(&bash), ["bash", "--norc", "-c", "echo a  b"]);
        assert_eq!(Shell::parse("none").unwrap(), Shell::None);
        assert!(Shell::parse(" ").is_err());
        assert_eq!(Shell::None.hook_argv("x")[0], "sh");
        assert_eq!(
            CommandOutput::parse(OsStr::new("pipe")),
            CommandOutput::Pipe
        );
        assert_eq!(
            CommandOutput::parse(OsStr::new("out.txt")),
            CommandOutput::File("out.txt".into())
        );
    }
}
