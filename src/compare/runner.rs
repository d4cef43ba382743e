//! Runs a comparison: `--setup`, warm-up rounds, measured rounds (each
//! command once per round, in an order shuffled from the seed), with
//! `--prepare` and the page-cache state before every run, then `--cleanup`.

use std::process::{Command, Stdio};

use super::plan::{Config, PlanError};
use super::report::{CommandResult, CompareReport, PreparedCache};
use super::sizing::{self, Sizing};
use crate::pagecache::bulk::{self, BulkError};
use crate::run::records::Records;
use crate::run::report::{ColdReport, FIGURES, RunRecord};
use crate::run::spawner::{Reply, Spawner};
use crate::run::{self, Measurer, RunError};
use crate::stats::Rng;

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
    #[error("--warm: {0}")]
    Warm(BulkError),
}

impl CompareError {
    /// 2 for a command line that cannot be compared, else 1.
    pub fn exit_code(&self) -> u8 {
        match self {
            CompareError::Plan(_) => 2,
            CompareError::Run(RunError::Cold(_)) => 2,
            CompareError::Warm(_) => 2,
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
    let status = crate::sys::signals::start_with_inherited_dispositions(&mut Command::new("sh"))
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

/// The time each run's page-cache preparation took, and how many files
/// it touched: for [`PreparedCache`].
#[derive(Default)]
struct Preparations {
    evict_ns: Vec<u64>,
    evicted_files: u64,
    warm_ns: Vec<u64>,
    warmed_files: u64,
}

impl Preparations {
    fn report(mut self) -> Option<PreparedCache> {
        if self.evict_ns.is_empty() && self.warm_ns.is_empty() {
            return None;
        }
        let median = |v: &mut Vec<u64>| {
            v.sort_unstable();
            v.get(v.len() / 2).copied()
        };
        Some(PreparedCache {
            runs: self.evict_ns.len().max(self.warm_ns.len()) as u64,
            evicted_files: (!self.evict_ns.is_empty()).then_some(self.evicted_files),
            evict_ns_total: self.evict_ns.iter().fold(0u64, |a, b| a.saturating_add(*b)),
            evict_ns_median: median(&mut self.evict_ns),
            warmed_files: (!self.warm_ns.is_empty()).then_some(self.warmed_files),
            warm_ns_total: self.warm_ns.iter().fold(0u64, |a, b| a.saturating_add(*b)),
            warm_ns_median: median(&mut self.warm_ns),
        })
    }
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
    if let Some(r) = cfg.reference
        && r >= k
    {
        return Err(PlanError(format!(
            "--reference {}: there {} only {k} command{}",
            r + 1,
            if k == 1 { "is" } else { "are" },
            if k == 1 { "" } else { "s" }
        ))
        .into());
    }
    let base = run::Config {
        argv: Vec::new(),
        runs: 1,
        warmup: 0,
        quiet_command: !cfg.show_output,
        stdout_to_stderr: false,
        cold: cfg.cold.clone(),
        drop_caches: cfg.drop_caches,
        tree: false,
        counters: false,
    };
    // Checked before anything runs: a path that cannot be warmed is an
    // error, not a warm run made cold.
    bulk::check(&cfg.warm, "warm").map_err(CompareError::Warm)?;
    let mut prepared = Preparations::default();
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
    // Each command's wall times, and which figures vary (over every run
    // of every command), for the number of rounds without --runs.
    let mut walls: Vec<Vec<f64>> = vec![Vec::new(); k];
    let mut ranges: Vec<Option<(u64, u64)>> = vec![None; FIGURES.len()];
    let mut sized: Option<Sizing> = None;
    let mut rng = Rng::new(cfg.seed);
    let mut order: Vec<usize> = (0..k).collect();
    let mut sequence = 0u32;
    let mut interrupted_by: Option<String> = None;
    // Runs whose peak memory was not above the spawner's own (see
    // `run::spawner`), per command: how many, and the largest such peak (kB).
    let mut at_floor: Vec<(u32, u64)> = vec![(0, 0); k];

    if let Some(setup) = &cfg.setup {
        hook("--setup", setup, cfg.show_output)?;
    }
    // Work tally does itself right before each run; without it, runs are
    // asked of the spawner ahead, so that it never waits for tally.
    let per_run_work =
        cfg.prepare.is_some() || !cfg.warm.is_empty() || !cfg.cold.is_empty() || cfg.drop_caches;
    let argvs: Vec<_> = cfg.instances.iter().map(|i| i.argv.clone()).collect();
    let mut backend = match Spawner::start(&argvs, cfg.show_output, !cfg.ignore_failure) {
        Ok(s) => {
            measurer.relay_signals_to(s.pid());
            Backend::Spawner(s)
        }
        // Without a spawner (no /proc/self/exe?), tally forks the runs.
        Err(_) => Backend::Here,
    };
    let result = (|| -> Result<(), CompareError> {
        let mut upcoming: std::collections::VecDeque<Slot> = std::collections::VecDeque::new();
        let mut in_flight: std::collections::VecDeque<(Slot, Option<ColdReport>)> =
            std::collections::VecDeque::new();
        // Rounds planned so far: warm-up ones first, then measured ones.
        let mut planned = 0u32;
        // Without --runs, the pilot's rounds until its end decides (see
        // `sizing`).
        let mut rounds = cfg.runs.unwrap_or(cfg.min_runs);
        let depth = if per_run_work {
            1
        } else {
            run::spawner::AHEAD.max(k + 1)
        };
        loop {
            // Keep `depth` runs asked for, planning rounds as they are needed.
            while in_flight.len() < depth {
                if upcoming.is_empty() {
                    let Some(stage) = next_round(planned, cfg.warmup, rounds) else {
                        break;
                    };
                    planned += 1;
                    rng.shuffle(&mut order);
                    upcoming.extend(order.iter().enumerate().map(|(pos, &i)| Slot {
                        i,
                        pos,
                        stage,
                    }));
                }
                let Some(slot) = upcoming.pop_front() else {
                    break;
                };
                if let Some(sig) = measurer.pending_signal() {
                    // Asked to stop: no new run; those asked for end first.
                    if in_flight.is_empty() {
                        interrupted_by = Some(sig);
                        return Ok(());
                    }
                    upcoming.push_front(slot);
                    break;
                }
                if let Some(prepare) = &cfg.prepare {
                    hook("--prepare", prepare, cfg.show_output)?;
                }
                if !cfg.warm.is_empty() {
                    let w = bulk::warm(&cfg.warm).map_err(CompareError::Warm)?;
                    prepared.warm_ns.push(w.elapsed_ns);
                    prepared.warmed_files = w.files;
                }
                let cold = measurer.evict(&base)?;
                if let Some(c) = &cold {
                    prepared.evict_ns.push(c.evict_ns);
                    prepared.evicted_files = c.file_count;
                }
                backend.submit(slot.i)?;
                in_flight.push_back((slot, cold));
            }
            let Some((slot, cold)) = in_flight.pop_front() else {
                return Ok(());
            };
            let (round, warmup) = match slot.stage {
                Stage::Warmup(w) => (w, true),
                Stage::Measured(r) => (r, false),
            };
            progress(Progress {
                done: u64::from(round) * k as u64 + slot.pos as u64,
                of: if warmup {
                    Some(u64::from(cfg.warmup) * k as u64)
                } else {
                    Some(u64::from(rounds) * k as u64)
                },
                warmup,
            });
            let mut rec = match backend.collect(&measurer, &configs[slot.i])? {
                Reply::Ran(rec, floor) => {
                    // Measured runs only: warm-up runs are not reported.
                    let floor = floor.filter(|f| !warmup && rec.max_rss_bytes <= f * 1024);
                    if let Some(floor) = floor {
                        let (n, most) = &mut at_floor[slot.i];
                        *n += 1;
                        *most = (*most).max(floor);
                    }
                    *rec
                }
                Reply::Skipped { signal } => {
                    interrupted_by = signal.or_else(|| measurer.pending_signal());
                    return Ok(());
                }
                // `collect` returns a run that could not be made as its error.
                Reply::Error(e) => return Err(e.into()),
            };
            rec.cold = cold;
            if rec.forwarded_signal.is_none()
                && !cfg.ignore_failure
                && let Some(how) = failure(&rec)
            {
                return Err(CompareError::Failed {
                    index: slot.i + 1,
                    name: cfg.instances[slot.i].name.clone(),
                    stage: if warmup { "warm-up run" } else { "run" },
                    run: round + 1,
                    how,
                });
            }
            let stop = rec.forwarded_signal.clone();
            if warmup {
                if let Some(sig) = stop {
                    interrupted_by = Some(sig);
                    return Ok(());
                }
                continue;
            }
            sequence += 1;
            let r = &mut results[slot.i];
            if failure(&rec).is_some() {
                r.failed_runs += 1;
            }
            rec.counters = None;
            walls[slot.i].push(rec.wall_ns as f64);
            for (range, fig) in ranges.iter_mut().zip(FIGURES) {
                if let Some(v) = (fig.get)(&rec) {
                    let (lo, hi) = range.get_or_insert((v, v));
                    *lo = (*lo).min(v);
                    *hi = (*hi).max(v);
                }
            }
            // Only the last run keeps its eviction details: the
            // records stay small however many runs there are.
            if let Some(mut prev) = last[slot.i].replace(rec) {
                prev.cold = None;
                stores[slot.i].push(&prev).map_err(RunError::Records)?;
            }
            r.run_order.push(sequence);
            if let Some(sig) = stop {
                interrupted_by = Some(sig);
                return Ok(());
            }
            let done = round + 1;
            if cfg.runs.is_none() && slot.pos + 1 == k && sizing::is_checkpoint(done, cfg.min_runs)
            {
                let varying = ranges
                    .iter()
                    .filter(|r| r.is_some_and(|(lo, hi)| lo != hi))
                    .count();
                let s = sizing::checkpoint(
                    &walls,
                    done,
                    sizing::Limits {
                        alpha: cfg.alpha,
                        min_rounds: cfg.min_runs,
                        max_rounds: cfg.max_runs.unwrap_or(sizing::MAX_ROUNDS),
                        budget: sizing::BUDGET,
                        family: varying.max(1) * k.saturating_sub(1).max(1),
                        reference: cfg.reference,
                    },
                );
                rounds = s.rounds.max(done);
                sized = Some(s);
            }
        }
    })();
    drop(backend);
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
    let mut report = CompareReport::build(cfg, results, interrupted_by);
    report.page_cache = prepared.report();
    if let Some(Sizing {
        rounds,
        short_of: Some(needed),
        detectable,
        ..
    }) = sized
    {
        report.warnings.push(format!(
            "wall time: {rounds} runs of each (the limit of --max-runs or of {} s of runs) find \
             a difference of {} with {}% chance; {} needs about {needed} runs of each \
             (--runs {needed})",
            sizing::BUDGET.as_secs(),
            super::report::percent(detectable),
            (sizing::POWER * 100.0).round(),
            super::report::percent(sizing::DETECT),
        ));
    }
    for (i, (n, floor)) in at_floor.into_iter().enumerate() {
        if n > 0 {
            report.warnings.push(format!(
                "#{} {}: peak memory at most {floor} kB in {n} run{}, the peak of tally's own \
                 spawner: those figures are upper bounds, not measurements",
                i + 1,
                cfg.instances[i].name,
                if n == 1 { "" } else { "s" }
            ));
        }
    }
    Ok(report)
}

/// Which round a run belongs to.
#[derive(Debug, Clone, Copy)]
enum Stage {
    Warmup(u32),
    Measured(u32),
}

/// One run to make: command `i`, `pos`-th in its round.
#[derive(Debug, Clone, Copy)]
struct Slot {
    i: usize,
    pos: usize,
    stage: Stage,
}

/// The round after `planned` rounds, or `None` when there is none (yet:
/// without `--runs`, a checkpoint may add rounds).
fn next_round(planned: u32, warmup: u32, rounds: u32) -> Option<Stage> {
    if planned < warmup {
        return Some(Stage::Warmup(planned));
    }
    let r = planned - warmup;
    (r < rounds).then_some(Stage::Measured(r))
}

/// Where runs are made: by the spawner (see `run::spawner`), or here, by
/// forking tally, when no spawner could start (each run then made when
/// its answer is asked for).
enum Backend {
    Spawner(Spawner),
    Here,
}

impl Backend {
    fn submit(&mut self, i: usize) -> Result<(), CompareError> {
        match self {
            Backend::Spawner(s) => s.submit(i).map_err(spawner_error),
            Backend::Here => Ok(()),
        }
    }

    /// The oldest run asked for (`cfg` is its command's configuration):
    /// made, or skipped; a run that could not be made is the error.
    fn collect(&mut self, measurer: &Measurer, cfg: &run::Config) -> Result<Reply, CompareError> {
        match self {
            Backend::Spawner(s) => match s.reply().map_err(spawner_error)? {
                Reply::Error(e) => Err(e.into()),
                reply => Ok(reply),
            },
            Backend::Here => match measurer.pending_signal() {
                Some(sig) => Ok(Reply::Skipped { signal: Some(sig) }),
                None => Ok(Reply::Ran(Box::new(measurer.measure_as_is(cfg)?), None)),
            },
        }
    }
}

fn spawner_error(e: std::io::Error) -> CompareError {
    RunError::Spawner(format!("tally's spawner process: {e}")).into()
}
