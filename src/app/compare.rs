//! `tally compare`: from arguments to the plan, the baseline and the gate,
//! the runs and the report (stdout, `-o`, `--export`, `--html`), the
//! baseline file, and the exit code.

use std::path::PathBuf;

use tally::cli::compare::CompareArgs;
use tally::compare::{self, baseline, gate, plan};
use tally::report::{self, Stream};

use super::progress;

/// A command line that cannot be compared: what to say, and the exit code.
struct Refused(String, u8);

impl From<plan::PlanError> for Refused {
    fn from(e: plan::PlanError) -> Refused {
        Refused(e.to_string(), 2)
    }
}

impl From<baseline::BaselineError> for Refused {
    fn from(e: baseline::BaselineError) -> Refused {
        let code = e.exit_code();
        Refused(e.to_string(), code)
    }
}

fn shell_of(args: &CompareArgs) -> plan::Shell {
    match (&args.shell, args.no_shell) {
        (_, true) => plan::Shell::None,
        (Some(s), false) => s.clone(),
        (None, false) => plan::Shell::Default,
    }
}

fn plan_of(args: &CompareArgs) -> Result<Vec<compare::Instance>, plan::PlanError> {
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
fn config_of(args: &CompareArgs) -> Result<compare::Config, Refused> {
    let stored = match &args.baseline {
        Some(path) => Some((path.clone(), baseline::load(path)?)),
        None => None,
    };
    let instances = match (&stored, args.commands.is_empty()) {
        (Some((_, file)), true) => baseline::instances(file),
        _ => plan_of(args)?,
    };
    gate::check_rules(&args.fail_on).map_err(|e| Refused(e, 2))?;
    if !args.fail_on.is_empty() && stored.is_none() && instances.len() < 2 {
        return Err(Refused(
            "--fail-on needs a reference: give two commands (the first is the reference), or \
             --baseline FILE"
                .into(),
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
            return Err(Refused(
                format!(
                    "--save-baseline {}: {runs} runs; a baseline keeps at most {} (fewer -n or commands)",
                    report::path::display(path),
                    baseline::MAX_RUNS
                ),
                2,
            ));
        }
    }
    let mut cfg = compare::Config {
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
        seed: args.seed.unwrap_or_else(tally::stats::fresh_seed),
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
fn baseline_output(path: &Option<PathBuf>) -> Result<Option<report::Output>, u8> {
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
    report::Output::open::<baseline::BaselineFile>(&request, "compare", None)
        .map(Some)
        .map_err(|e| {
            tally::diag!("tally: {e}");
            e.exit_code()
        })
}

pub(super) fn compare_command(args: CompareArgs) -> u8 {
    let cfg = match config_of(&args) {
        Ok(cfg) => cfg,
        Err(Refused(e, code)) => {
            tally::diag!("tally: compare: {e}");
            return code;
        }
    };
    let output = match super::open_output::<compare::report::CompareReport>(
        &args.out,
        "compare",
        Some(Stream::Stdout),
    ) {
        Ok(o) => o,
        Err(code) => return code,
    };
    if output.uses_stdout() && cfg.command_output == plan::CommandOutput::Inherit {
        tally::diag!(
            "tally: compare: --show-output (--command-output inherit) sends the commands' output \
             to stdout, where the report goes: write the report to a file (-o FILE)"
        );
        return 2;
    }
    let saved = match baseline_output(&args.save_baseline) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let report = match measure(&cfg) {
        Ok(r) => r,
        Err(e) => {
            tally::diag!("tally: compare: {e}");
            return e.exit_code();
        }
    };
    let mut code = super::said(output.write(&report));
    if let Some(out) = saved {
        code = code.max(save(out, &report, &cfg));
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

/// The runs, with a progress bar on a terminal.
fn measure(cfg: &compare::Config) -> Result<compare::report::CompareReport, compare::CompareError> {
    let bar = progress::bar(Some(0));
    let mut on_progress = |p: compare::Progress| {
        if let Some(bar) = &bar {
            bar.set_message(if p.warmup { "warm-up" } else { "runs" });
            if let Some(of) = p.of {
                bar.set_length(of);
            }
            bar.set_position(p.done);
        }
    };
    let result = compare::execute(cfg, &mut on_progress);
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    result
}

/// Writes the baseline file (not after an interruption: its runs would be
/// short); the exit code of its failure.
fn save(out: report::Output, report: &compare::report::CompareReport, cfg: &compare::Config) -> u8 {
    if let Some(sig) = &report.interrupted_by {
        tally::diag!(
            "tally: compare: --save-baseline: not written: the comparison was interrupted by {sig}"
        );
        return 0;
    }
    match baseline::BaselineFile::of(report, cfg) {
        Ok(file) => super::said(out.write(&file)),
        Err(e) => {
            tally::diag!("tally: compare: {e}");
            1
        }
    }
}
