//! Runs a comparison: `--setup`, warm-up rounds, measured rounds (each
//! command once per round, in an order shuffled from the seed), with
//! `--prepare` and the page-cache state before every run, then `--cleanup`.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use super::plan::{Config, PlanError};
use super::report::{CommandResult, CompareReport};
use crate::pagecache::evict;
use crate::run::records::Records;
use crate::run::report::RunRecord;
use crate::run::{self, Measurer, RunError};
use crate::stats::Rng;

/// Without `--runs`: the time each command may take, as hyperfine's.
const BUDGET_NS: u64 = 3_000_000_000;

/// Why a comparison could not be made.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error("{0}")]
    Run(#[from] RunError),
    #[error(
        "command {index} ({name}) failed in {stage} {run}: {how}; -i/--ignore-failure measures it anyway"
    )]
    Failed {
        index: usize,
        name: String,
        stage: &'static str,
        run: u32,
        how: String,
    },
    #[error("{option} {command:?} {how}")]
    Hook {
        option: &'static str,
        command: String,
        how: String,
    },
    #[error("--warm {path}: {source}")]
    Warm {
        path: String,
        source: std::io::Error,
    },
}

impl CompareError {
    /// 2 for a command line that cannot be compared, else 1.
    pub fn exit_code(&self) -> u8 {
        match self {
            CompareError::Plan(_) => 2,
            CompareError::Run(RunError::Cold(_)) => 2,
            _ => 1,
        }
    }
}

/// Progress, for a progress bar.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    pub done: u64,
    /// `None` until the number of runs is known (after the first round
    /// without `--runs`).
    pub of: Option<u64>,
    pub warmup: bool,
}

/// Runs `sh -c command` for `--prepare`, `--setup` or `--cleanup`.
fn hook(option: &'static str, command: &str, show_output: bool) -> Result<(), CompareError> {
    let out = || {
        if show_output {
            Stdio::inherit()
        } else {
            Stdio::null()
        }
    };
    let status = Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .stdout(out())
        .stderr(out())
        .status()
        .map_err(|e| CompareError::Hook {
            option,
            command: command.into(),
            how: format!("could not start: {e}"),
        })?;
    if status.success() {
        Ok(())
    } else {
        Err(CompareError::Hook {
            option,
            command: command.into(),
            how: format!("failed ({status})"),
        })
    }
}

fn warm_files(files: &[PathBuf]) -> Result<(), CompareError> {
    for path in files {
        let err = |source| CompareError::Warm {
            path: crate::report::path::display(path),
            source,
        };
        let f = std::fs::File::open(path).map_err(err)?;
        let size = f.metadata().map_err(err)?.len();
        crate::pagecache::warm::warm(&f, size).map_err(err)?;
    }
    Ok(())
}

fn failure(rec: &RunRecord) -> Option<String> {
    match (rec.exit.code, &rec.exit.signal) {
        (_, Some(sig)) => Some(format!("killed by {sig}")),
        (Some(0), None) => None,
        (Some(code), None) => Some(format!("exit status {code}")),
        (None, None) => Some("ended in an unknown way".into()),
    }
}

/// Runs the comparison and returns its report.
pub fn execute(
    cfg: &Config,
    progress: &mut dyn FnMut(Progress),
) -> Result<CompareReport, CompareError> {
    let k = cfg.instances.len();
    if k == 0 {
        return Err(PlanError("no command to compare".into()).into());
    }
    if let Some(r) = cfg.reference {
        if r >= k {
            return Err(PlanError(format!(
                "--reference {}: there {} only {k} command{}",
                r + 1,
                if k == 1 { "is" } else { "are" },
                if k == 1 { "" } else { "s" }
            ))
            .into());
        }
    }
    let base = run::Config {
        argv: Vec::new(),
        runs: 1,
        warmup: 0,
        quiet_command: !cfg.show_output,
        cold: cfg.cold.clone(),
        drop_caches: cfg.drop_caches,
        tree: false,
        counters: false,
    };
    let warm_list = if cfg.warm.is_empty() {
        Vec::new()
    } else {
        evict::regular_files(&cfg.warm).map_err(RunError::Cold)?
    };
    let measurer = Measurer::new(&base)?;
    let configs: Vec<run::Config> = cfg
        .instances
        .iter()
        .map(|i| run::Config {
            argv: i.argv.clone(),
            ..base.clone()
        })
        .collect();
    let mut results: Vec<CommandResult> = cfg
        .instances
        .iter()
        .map(|i| CommandResult::new(i, cfg.runs.unwrap_or(cfg.min_runs) as usize))
        .collect();
    // The records, kept where the forked commands do not inherit them
    // (see `run::records`), each command's last one held back so that
    // only it keeps its eviction details; and each command's first wall
    // time, for the time budget.
    let mut stores: Vec<Records> = (0..k).map(|_| Records::new()).collect();
    let mut last: Vec<Option<RunRecord>> = vec![None; k];
    let mut first_wall: Vec<Option<u64>> = vec![None; k];
    let mut rng = Rng::new(cfg.seed);
    let mut order: Vec<usize> = (0..k).collect();
    let mut sequence = 0u32;
    let mut interrupted_by: Option<String> = None;

    if let Some(setup) = &cfg.setup {
        hook("--setup", setup, cfg.show_output)?;
    }
    // One run of instance `i`: prepare, cache state, measure, check.
    let one = |i: usize, round: u32, warmup: bool| -> Result<Option<RunRecord>, CompareError> {
        if let Some(prepare) = &cfg.prepare {
            hook("--prepare", prepare, cfg.show_output)?;
        }
        warm_files(&warm_list)?;
        let rec = measurer.measure(&configs[i])?;
        if rec.forwarded_signal.is_none() && !cfg.ignore_failure {
            if let Some(how) = failure(&rec) {
                return Err(CompareError::Failed {
                    index: i + 1,
                    name: cfg.instances[i].name.clone(),
                    stage: if warmup { "warm-up run" } else { "run" },
                    run: round + 1,
                    how,
                });
            }
        }
        Ok(Some(rec))
    };
    let result = (|| -> Result<(), CompareError> {
        let total_warm = u64::from(cfg.warmup) * k as u64;
        for w in 0..cfg.warmup {
            rng.shuffle(&mut order);
            for (j, &i) in order.iter().enumerate() {
                progress(Progress {
                    done: u64::from(w) * k as u64 + j as u64,
                    of: Some(total_warm),
                    warmup: true,
                });
                if let Some(sig) = measurer.pending_signal() {
                    interrupted_by = Some(sig);
                    return Ok(());
                }
                if let Some(rec) = one(i, w, true)? {
                    if let Some(sig) = rec.forwarded_signal {
                        interrupted_by = Some(sig);
                        return Ok(());
                    }
                }
            }
        }
        let mut rounds = cfg.runs;
        let mut round = 0u32;
        while rounds.is_none_or(|r| round < r) {
            rng.shuffle(&mut order);
            for (j, &i) in order.iter().enumerate() {
                progress(Progress {
                    done: u64::from(round) * k as u64 + j as u64,
                    of: rounds.map(|r| u64::from(r) * k as u64),
                    warmup: false,
                });
                if let Some(sig) = measurer.pending_signal() {
                    interrupted_by = Some(sig);
                    return Ok(());
                }
                let Some(mut rec) = one(i, round, false)? else {
                    continue;
                };
                let stop = rec.forwarded_signal.clone();
                sequence += 1;
                let r = &mut results[i];
                if failure(&rec).is_some() {
                    r.failed_runs += 1;
                }
                rec.counters = None;
                first_wall[i].get_or_insert(rec.wall_ns);
                // Only the last run keeps its eviction details: the
                // records stay small however many runs there are.
                if let Some(mut prev) = last[i].replace(rec) {
                    prev.cold = None;
                    stores[i].push(&prev).map_err(RunError::Records)?;
                }
                r.run_order.push(sequence);
                if let Some(sig) = stop {
                    interrupted_by = Some(sig);
                    return Ok(());
                }
            }
            round += 1;
            if rounds.is_none() {
                // After the first round: as many rounds as the slowest
                // command fits in the budget.
                let slowest = first_wall
                    .iter()
                    .flatten()
                    .copied()
                    .max()
                    .unwrap_or(1)
                    .max(1);
                let fit = u32::try_from(BUDGET_NS / slowest).unwrap_or(u32::MAX);
                rounds = Some(fit.clamp(
                    cfg.min_runs,
                    cfg.max_runs.unwrap_or(u32::MAX).max(cfg.min_runs),
                ));
            }
        }
        Ok(())
    })();
    // --cleanup runs whatever happened, as long as --setup ran.
    let cleaned = match &cfg.cleanup {
        Some(c) => hook("--cleanup", c, cfg.show_output),
        None => Ok(()),
    };
    result?;
    cleaned?;
    for ((r, mut store), held) in results.iter_mut().zip(stores).zip(last) {
        if let Some(held) = held {
            store.push(&held).map_err(RunError::Records)?;
        }
        r.runs = store.into_vec().map_err(RunError::Records)?;
    }
    let runs = results.iter().map(|r| r.runs.len()).max().unwrap_or(0) as u64;
    progress(Progress {
        done: runs * k as u64,
        of: Some(runs * k as u64),
        warmup: false,
    });
    Ok(CompareReport::build(cfg, results, interrupted_by))
}
