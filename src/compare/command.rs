//! `tally compare` from its configuration to its exit code, around the
//! runner: where the report and the baseline file go, opened before any
//! run ([`open`]); the baseline read and the runs made ([`execute`]); then
//! the report written where it was asked to go (stdout, `-o`, `--export`,
//! `--html`), the baseline file saved, and the exit code ([`output`]).

use std::path::{Path, PathBuf};

use super::baseline;
use super::plan::{self, Config};
use super::report::CompareReport;
use super::runner::{self, CompareError};
use crate::failure::{Failure, Usage};
use crate::progress::Progress;
use crate::report::{self, Output, OutputError, Stream};
use crate::run::RunError;

/// Why a comparison could not be made or written: what to say after
/// `tally: `, and the exit code.
#[derive(Debug, thiserror::Error)]
pub enum CompareFailure {
    #[error("{0}")]
    Usage(#[from] Usage),
    #[error("compare: {0}")]
    Baseline(#[from] baseline::BaselineError),
    #[error("compare: {0}")]
    Compare(#[from] CompareError),
    #[error(transparent)]
    Output(#[from] OutputError),
}

impl Failure for CompareFailure {
    fn exit_code(&self) -> u8 {
        match self {
            CompareFailure::Usage(e) => e.exit_code(),
            CompareFailure::Baseline(e) => e.exit_code(),
            CompareFailure::Compare(e) => e.exit_code(),
            CompareFailure::Output(e) => e.exit_code(),
        }
    }
}

/// Where the report and the baseline file go, opened before any run.
pub struct Outputs {
    report: Output,
    baseline: Option<Output>,
}

/// Opens where the report goes (`request`) and where `--save-baseline`
/// writes, before any run: a bad format or an unwritable place fails
/// first. The commands' own output cannot share stdout with the report.
pub fn open(request: &report::Request, cfg: &Config) -> Result<Outputs, CompareFailure> {
    let report = Output::open::<CompareReport>(request, "compare", Some(Stream::Stdout))?;
    if report.uses_stdout() && cfg.command_output == plan::CommandOutput::Inherit {
        return Err(Usage::new(
            "compare: --show-output (--command-output inherit) sends the commands' output to \
             stdout, where the report goes: write the report to a file (-o FILE)",
        )
        .into());
    }
    let baseline = baseline_output(&cfg.save_baseline)?;
    if let Some(b) = &baseline {
        report.refuse_shared_files(Some(b))?;
    }
    Ok(Outputs { report, baseline })
}

/// Runs the comparison `cfg` sets up: `--baseline`'s runs read and
/// matched with the commands first (a bad file fails before any run),
/// then the runs, told to `progress` as steps (`warm-up`, `runs`).
pub fn execute(cfg: &Config, progress: &mut Progress) -> Result<CompareReport, CompareFailure> {
    let with_baseline;
    let cfg = match &cfg.baseline_file {
        Some(path) => {
            with_baseline = baseline_read(cfg, path)?;
            &with_baseline
        }
        None => cfg,
    };
    let report = runner::execute(cfg, &mut |p| {
        let what = if p.warmup { "warm-up" } else { "runs" };
        progress.step(&what, p.done, p.of);
    })
    .map_err(|e| from_stored(e, cfg))?;
    Ok(report)
}

/// A command that failed or could not start, named with the baseline it
/// was read from when it came from one (`--baseline` given no command).
fn from_stored(e: CompareError, cfg: &Config) -> CompareError {
    let Some(path) = &cfg.commands_from else {
        return e;
    };
    let path = crate::text::path::display(path);
    match e {
        CompareError::Failed {
            index,
            name,
            stage,
            run,
            how,
        } => CompareError::Failed {
            index,
            name: format!("{name}, as stored in {path}"),
            stage,
            run,
            how,
        },
        CompareError::Run(
            source @ (RunError::NotFound { .. }
            | RunError::InterpreterNotFound { .. }
            | RunError::NotExecutable { .. }),
        ) => CompareError::StoredCommand { path, source },
        e => e,
    }
}

/// `cfg` with the runs of the baseline at `path`, matched with its
/// commands (the baseline's own when none were given).
fn baseline_read(cfg: &Config, path: &Path) -> Result<Config, CompareFailure> {
    let file = baseline::load(path)?;
    let mut cfg = cfg.clone();
    if cfg.instances.is_empty() {
        cfg.instances = baseline::instances(&file);
        cfg.commands_from = Some(path.to_path_buf());
        cfg.check_baseline_size()
            .map_err(|e| Usage::new(format!("compare: {e}")))?;
    }
    cfg.baseline = Some(baseline::matched(path, &file, &cfg)?);
    Ok(cfg)
}

impl Config {
    /// Refuses a `--save-baseline` of more runs than a baseline keeps, or
    /// of two commands of one name (a baseline tells them by name).
    pub fn check_baseline_size(&self) -> Result<(), String> {
        if let Some(path) = &self.save_baseline {
            for (i, c) in self.instances.iter().enumerate() {
                if let Some(j) = self.instances[..i].iter().position(|d| d.name == c.name) {
                    return Err(format!(
                        "--save-baseline {}: commands {} and {} are both named {}: a baseline \
                         tells its commands by name; give each a --name of its own",
                        crate::text::path::display(path),
                        j + 1,
                        i + 1,
                        crate::text::Foreign(&c.name)
                    ));
                }
            }
        }
        if let (Some(path), Some(n)) = (&self.save_baseline, self.runs) {
            let runs = n as usize * self.instances.len();
            if runs > baseline::MAX_RUNS {
                return Err(format!(
                    "--save-baseline {}: {runs} runs; a baseline keeps at most {} (fewer -n or commands)",
                    crate::text::path::display(path),
                    baseline::MAX_RUNS
                ));
            }
        }
        Ok(())
    }
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
        append: false,
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
