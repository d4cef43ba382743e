//! `tally compare` from its arguments to its exit code, around
//! [`execute`](super::execute): the plan, the baseline and the gate
//! checked and read before any run ([`prepare`]), then the report written
//! where it was asked to go (stdout, `-o`, `--export`, `--html`), the
//! baseline file saved, and the exit code ([`output`]).

use std::path::PathBuf;

use super::args::CompareArgs;
use super::report::CompareReport;
use super::{CompareError, Config, Instance, baseline, gate, plan};
use crate::report::{self, Output, OutputError, Stream};

/// A comparison that cannot go on: what to say after `tally: `, and the
/// exit code.
#[derive(Debug)]
pub struct Refused {
    message: String,
    code: u8,
}

impl Refused {
    fn compare(message: impl std::fmt::Display, code: u8) -> Refused {
        Refused {
            message: format!("compare: {message}"),
            code,
        }
    }

    /// The exit code the refusal calls for.
    pub fn exit_code(&self) -> u8 {
        self.code
    }
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<plan::PlanError> for Refused {
    fn from(e: plan::PlanError) -> Refused {
        Refused::compare(e, 2)
    }
}

impl From<baseline::BaselineError> for Refused {
    fn from(e: baseline::BaselineError) -> Refused {
        let code = e.exit_code();
        Refused::compare(e, code)
    }
}

impl From<CompareError> for Refused {
    fn from(e: CompareError) -> Refused {
        let code = e.exit_code();
        Refused::compare(e, code)
    }
}

impl From<OutputError> for Refused {
    fn from(e: OutputError) -> Refused {
        Refused {
            code: e.exit_code(),
            message: e.to_string(),
        }
    }
}

/// Where the report and the baseline file go, opened before any run.
pub struct Outputs {
    report: Output,
    baseline: Option<Output>,
}

/// Everything checked, read and opened before any command runs: the
/// [`Config`] (the plan, the baseline and its match, the gate's rules),
/// where the report goes, and where `--save-baseline` writes.
pub fn prepare(args: &CompareArgs) -> Result<(Config, Outputs), Refused> {
    let cfg = config_of(args)?;
    let report =
        Output::open::<CompareReport>(&args.out.request(), "compare", Some(Stream::Stdout))?;
    if report.uses_stdout() && cfg.command_output == plan::CommandOutput::Inherit {
        return Err(Refused::compare(
            "--show-output (--command-output inherit) sends the commands' output to stdout, \
             where the report goes: write the report to a file (-o FILE)",
            2,
        ));
    }
    let baseline = baseline_output(&args.save_baseline)?;
    Ok((cfg, Outputs { report, baseline }))
}

/// Writes `report` where it goes and the baseline file, saying every
/// failure on stderr; returns the exit code: that of an interrupting
/// signal (128 + its number), else of a report that could not be
/// written, else the gate's.
pub fn output(outputs: Outputs, report: &CompareReport, cfg: &Config) -> u8 {
    let mut code = OutputError::say(outputs.report.write(report));
    if let Some(out) = outputs.baseline {
        code = code.max(save(out, report, cfg));
    }
    match report.interrupted_by.as_deref() {
        Some("SIGHUP") => 128 + libc::SIGHUP as u8,
        Some("SIGQUIT") => 128 + libc::SIGQUIT as u8,
        Some("SIGTERM") => 128 + libc::SIGTERM as u8,
        Some(_) => 128 + libc::SIGINT as u8,
        // A report that could not be written fails first; then the gate.
        None if code != 0 => code,
        None => report.gate.as_ref().map_or(0, |g| g.exit_status),
    }
}

fn shell_of(args: &CompareArgs) -> plan::Shell {
    match (&args.shell, args.no_shell) {
        (_, true) => plan::Shell::None,
        (Some(s), false) => s.clone(),
        (None, false) => plan::Shell::Default,
    }
}

fn plan_of(args: &CompareArgs) -> Result<Vec<Instance>, plan::PlanError> {
    let mut params = Vec::new();
    for p in args.parameter_scan.chunks(3) {
        let get = |i: usize| p.get(i).map(String::as_str).unwrap_or_default();
        params.push(plan::scan(
            get(0),
            get(1),
            get(2),
            args.parameter_step_size.as_deref(),
        )?);
    }
    for p in args.parameter_list.chunks(2) {
        let get = |i: usize| p.get(i).map(String::as_str).unwrap_or_default();
        params.push(plan::list(get(0), get(1))?);
    }
    plan::expand(&args.commands, &args.names, &params, &shell_of(args))
}

/// Everything checked and read before any command runs: the plan, the
/// baseline and its match, the gate's rules.
fn config_of(args: &CompareArgs) -> Result<Config, Refused> {
    let stored = match &args.baseline {
        Some(path) => Some((path.clone(), baseline::load(path)?)),
        None => None,
    };
    let instances = match (&stored, args.commands.is_empty()) {
        (Some((_, file)), true) => baseline::instances(file),
        _ => plan_of(args)?,
    };
    gate::check_rules(&args.fail_on).map_err(|e| Refused::compare(e, 2))?;
    if !args.fail_on.is_empty() && stored.is_none() && instances.len() < 2 {
        return Err(Refused::compare(
            "--fail-on needs a reference: give two commands (the first is the reference), or \
             --baseline FILE",
            2,
        ));
    }
    let command_output = match (&args.command_output, args.show_output) {
        (Some(w), _) => plan::CommandOutput::parse(w),
        (None, true) => plan::CommandOutput::Inherit,
        (None, false) => plan::CommandOutput::Null,
    };
    // A gate compares with the first command unless told otherwise.
    let reference = match (args.reference, args.fail_on.is_empty()) {
        (Some(r), _) => Some(r.saturating_sub(1) as usize),
        (None, false) => Some(0),
        (None, true) => None,
    };
    if let (Some(path), Some(n)) = (&args.save_baseline, args.runs) {
        let runs = n as usize * instances.len();
        if runs > baseline::MAX_RUNS {
            return Err(Refused::compare(
                format!(
                    "--save-baseline {}: {runs} runs; a baseline keeps at most {} (fewer -n or commands)",
                    crate::text::path::display(path),
                    baseline::MAX_RUNS
                ),
                2,
            ));
        }
    }
    let mut cfg = Config {
        instances,
        runs: args.runs,
        min_runs: args.min_runs,
        max_runs: args.max_runs,
        warmup: args.warmup,
        prepare: args.prepare.clone(),
        conclude: args.conclude.clone(),
        setup: args.setup.clone(),
        cleanup: args.cleanup.clone(),
        shell: shell_of(args),
        input: args.input.clone(),
        command_output,
        cold: args.cold.clone(),
        drop_caches: args.drop_caches,
        warm: args.warm.clone(),
        reference,
        alpha: args.alpha,
        threshold: args.threshold,
        ignore_failure: args.ignore_failure,
        seed: args.seed.unwrap_or_else(crate::stats::fresh_seed),
        baseline: None,
        gate: args.fail_on.clone(),
        strict: args.strict,
        view: plan::View {
            sort: args.sort,
            time_unit: args.time_unit,
        },
    };
    if let Some((path, file)) = &stored {
        cfg.baseline = Some(baseline::matched(path, file, &cfg)?);
    }
    Ok(cfg)
}

/// Where `--save-baseline` writes, opened (checked) before any run.
fn baseline_output(path: &Option<PathBuf>) -> Result<Option<Output>, OutputError> {
    let Some(path) = path else {
        return Ok(None);
    };
    let request = report::Request {
        format: report::Format::JSON,
        output: None,
        exports: vec![report::Export {
            format: report::Format::JSON,
            path: path.clone(),
            flag: "--save-baseline",
        }],
    };
    Output::open::<baseline::BaselineFile>(&request, "compare", None).map(Some)
}

/// Writes the baseline file (not after an interruption: its runs would be
/// short); the exit code of its failure.
fn save(out: Output, report: &CompareReport, cfg: &Config) -> u8 {
    if let Some(sig) = &report.interrupted_by {
        crate::diag!(
            "tally: compare: --save-baseline: not written: the comparison was interrupted by {sig}"
        );
        return 0;
    }
    match baseline::BaselineFile::of(report, cfg) {
        Ok(file) => OutputError::say(out.write(&file)),
        Err(e) => {
            crate::diag!("tally: compare: {e}");
            1
        }
    }
}
