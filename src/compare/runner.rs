//! Runs a comparison: `--setup`, warm-up rounds, measured rounds (each
//! command once per round, in an order shuffled from the seed), with
//! `--prepare` and the page-cache state before every run, then `--cleanup`.

use std::path::Path;
use std::process::{Command, Stdio};

use super::plan::{CommandOutput, Config, PlanError};
use super::report::{CommandResult, CompareReport, OTHER_WORK_DIFFERS, PreparedCache};
use super::sizing::{self, Sizing};
use crate::pagecache::bulk::{self, BulkError};
use crate::run::records::Records;
use crate::run::report::{ColdReport, FIGURES, RunRecord};
use crate::run::spawner::{Reply, Spawner, Streams};
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
    /// `--input` or `--command-output` cannot be set up.
    #[error("{option} {path}: {how}")]
    Stream {
        option: &'static str,
        path: String,
        how: String,
    },
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

/// Runs `--prepare`, `--conclude`, `--setup` or `--cleanup` with the
/// comparison's shell (`sh -c` without one).
fn hook(option: &'static str, command: &str, cfg: &Config) -> Result<(), CompareError> {
    let out = || {
        if cfg.command_output == CommandOutput::Inherit {
            Stdio::inherit()
        } else {
            Stdio::null()
        }
    };
    let argv = cfg.shell.hook_argv(command);
    let (program, args) = argv.split_first().ok_or_else(|| CompareError::Hook {
        option,
        command: command.into(),
        how: "is empty".into(),
    })?;
    let status = crate::sys::signals::start_with_inherited_dispositions(&mut Command::new(program))
        .args(args)
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

/// The commands' standard streams (`--input`, `--command-output`), set up
/// before any run: a file is opened once and reset by the spawner between
/// runs, outside the measured interval; a pipe is read by a thread of
/// tally's.
fn streams(cfg: &Config) -> Result<Streams, CompareError> {
    let fail = |option: &'static str, path: &Path, how: String| CompareError::Stream {
        option,
        path: crate::text::path::display(path),
        how,
    };
    let (stdin, rewind_stdin) = match &cfg.input {
        None => (Stdio::null(), false),
        Some(path) => {
            use std::io::Seek;
            use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
            // Non-blocking, so that a FIFO is refused rather than waited on.
            let mut file = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
                .open(path)
                .map_err(|e| fail("--input", path, format!("cannot be read: {e}")))?;
            let kind = file
                .metadata()
                .map_err(|e| fail("--input", path, e.to_string()))?
                .file_type();
            if !(kind.is_file() || kind.is_char_device() || kind.is_block_device()) {
                return Err(fail(
                    "--input",
                    path,
                    "is not a file (a directory, FIFO or socket): every run reads it from its \
                     start, so give a file"
                        .into(),
                ));
            }
            // Every run reads it from its start: it must be seekable.
            file.seek(std::io::SeekFrom::Start(0)).map_err(|e| {
                fail(
                    "--input",
                    path,
                    format!(
                        "cannot be read again for every run ({e}); save it to a file and give that"
                    ),
                )
            })?;
            (Stdio::from(file), true)
        }
    };
    let (stdout, stderr, truncate_stdout) = match &cfg.command_output {
        CommandOutput::Null => (Stdio::null(), Stdio::null(), false),
        CommandOutput::Inherit => (Stdio::inherit(), Stdio::inherit(), false),
        CommandOutput::Pipe => {
            let (read, write) = crate::sys::process::pipe().map_err(|e| CompareError::Stream {
                option: "--command-output",
                path: "pipe".into(),
                how: format!("cannot make a pipe: {e}"),
            })?;
            let second = write.try_clone().map_err(|e| CompareError::Stream {
                option: "--command-output",
                path: "pipe".into(),
                how: format!("cannot make a pipe: {e}"),
            })?;
            drain(read);
            (Stdio::from(write), Stdio::from(second), false)
        }
        CommandOutput::File(path) => {
            // Appending: emptied before each run, the next write lands at
            // its start whoever of stdout and stderr makes it.
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| fail("--command-output", path, format!("cannot be written: {e}")))?;
            let meta = file
                .metadata()
                .map_err(|e| fail("--command-output", path, e.to_string()))?;
            let regular = meta.is_file();
            if regular {
                file.set_len(0)
                    .map_err(|e| fail("--command-output", path, e.to_string()))?;
            }
            let second = file
                .try_clone()
                .map_err(|e| fail("--command-output", path, e.to_string()))?;
            (Stdio::from(file), Stdio::from(second), regular)
        }
    };
    Ok(Streams {
        stdin,
        stdout,
        stderr,
        rewind_stdin,
        truncate_stdout,
    })
}

/// Reads and discards what the commands write to their pipe
/// (`--command-output pipe`), on a thread of its own that ends when the
/// last writer has gone (the thread is not joined: a command's leftover
/// child may hold the pipe open).
fn drain(read: std::os::fd::OwnedFd) {
    use std::io::Read;
    let mut pipe = std::fs::File::from(read);
    let _ = std::thread::Builder::new()
        .name("tally-drain".into())
        .spawn(move || {
            // tally's signals are handled by the thread that measures.
            let _mask = crate::sys::signals::block_forwarded();
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                match pipe.read(&mut buf) {
                    Ok(0) => break,
                    Ok(_) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
        });
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
        quiet_command: cfg.command_output != CommandOutput::Inherit,
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
    // Each gated figure's values of each command, to take the runs that
    // decide the gate without --runs.
    let gated_figures: Vec<(&run::report::Figure, f64)> = cfg
        .gate
        .iter()
        .filter_map(|r| Some((FIGURES.iter().find(|f| f.key == r.figure)?, r.limit)))
        .collect();
    let mut gated: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); k]; gated_figures.len()];
    let gated_reference: Vec<Vec<Vec<f64>>> = gated_figures
        .iter()
        .map(|(fig, _)| match &cfg.baseline {
            Some(b) => b
                .commands
                .iter()
                .map(|c| {
                    c.runs
                        .iter()
                        .filter_map(|r| (fig.get)(r))
                        .map(|v| v as f64)
                        .collect()
                })
                .collect(),
            None => Vec::new(),
        })
        .collect();
    let mut ranges: Vec<Option<(u64, u64)>> = vec![None; FIGURES.len()];
    let mut sized: Option<Sizing> = None;
    let mut rng = Rng::new(cfg.seed);
    let mut order: Vec<usize> = (0..k).collect();
    let mut sequence = 0u32;
    let mut interrupted_by: Option<String> = None;
    // Runs whose peak memory was not above the spawner's own (see
    // `run::spawner`), per command: how many, and the largest such peak (kB).
    let mut at_floor: Vec<(u32, u64)> = vec![(0, 0); k];

    // The stored runs of each command, for the number of rounds.
    let baseline_walls: Option<Vec<Vec<f64>>> = cfg.baseline.as_ref().map(|b| {
        b.commands
            .iter()
            .map(|c| c.runs.iter().map(|r| r.wall_ns as f64).collect())
            .collect()
    });
    let streams = streams(cfg)?;
    let plain = cfg.input.is_none()
        && matches!(
            cfg.command_output,
            CommandOutput::Null | CommandOutput::Inherit
        );
    // Other work on the machine while the runs run: what tally and its
    // children (the spawner, the commands, the hooks) did not use.
    let started = (
        std::time::Instant::now(),
        crate::bench::machine::Reading::now(),
    );
    if let Some(setup) = &cfg.setup {
        hook("--setup", setup, cfg)?;
    }
    // Work tally does itself right before or after each run; without it,
    // runs are asked of the spawner ahead, so that it never waits for tally.
    let per_run_work = cfg.prepare.is_some()
        || cfg.conclude.is_some()
        || !cfg.warm.is_empty()
        || !cfg.cold.is_empty()
        || cfg.drop_caches;
    let argvs: Vec<_> = cfg.instances.iter().map(|i| i.argv.clone()).collect();
    let mut backend = match Spawner::start(&argvs, streams, !cfg.ignore_failure) {
        Ok(s) => {
            measurer.relay_signals_to(s.pid());
            Backend::Spawner(s)
        }
        // Without a spawner (no /proc/self/exe?), tally forks the runs;
        // they get tally's stdin, so --input and an output file or pipe
        // cannot be given to them.
        Err(e) if plain => {
            let _ = e;
            Backend::Here
        }
        Err(e) => {
            return Err(CompareError::Stream {
                option: if cfg.input.is_some() {
                    "--input"
                } else {
                    "--command-output"
                },
                path: String::new(),
                how: format!("needs tally's spawner process, which could not start: {e}"),
            });
        }
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
                    hook("--prepare", prepare, cfg)?;
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
            // The run has ended and been reaped: nothing else is running.
            if let Some(conclude) = &cfg.conclude {
                hook("--conclude", conclude, cfg)?;
            }
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
            for ((fig, _), values) in gated_figures.iter().zip(gated.iter_mut()) {
                if let (Some(v), Some(of)) = ((fig.get)(&rec), values.get_mut(slot.i)) {
                    of.push(v as f64);
                }
            }
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
                let limits = sizing::Limits {
                    alpha: cfg.alpha,
                    min_rounds: cfg.min_runs,
                    max_rounds: cfg.max_runs.unwrap_or(sizing::MAX_ROUNDS),
                    budget: sizing::BUDGET,
                    family: varying.max(1)
                        * if cfg.baseline.is_some() {
                            k
                        } else {
                            k.saturating_sub(1).max(1)
                        },
                    reference: cfg.reference,
                    threshold: cfg.threshold,
                };
                let s = sizing::checkpoint_against(&walls, baseline_walls.as_deref(), done, limits);
                rounds = s.rounds.max(done);
                // A gate takes the runs that decide it, within the limits.
                if !gated_figures.is_empty() {
                    let reference = cfg.reference.unwrap_or(0);
                    let mut pairs: Vec<(f64, &[f64], &[f64])> = Vec::new();
                    for (g, (_, limit)) in gated_figures.iter().enumerate() {
                        for i in 0..k {
                            let now = gated.get(g).and_then(|v| v.get(i));
                            let against = match &cfg.baseline {
                                Some(_) => gated_reference.get(g).and_then(|v| v.get(i)),
                                None if i != reference => {
                                    gated.get(g).and_then(|v| v.get(reference))
                                }
                                None => None,
                            };
                            if let (Some(a), Some(b)) = (now, against) {
                                pairs.push((*limit, a, b));
                            }
                        }
                    }
                    let needed = super::gate::rounds_to_decide(
                        &pairs,
                        limits.family,
                        cfg.alpha,
                        cfg.baseline.is_some(),
                    );
                    rounds = rounds.max(needed.min(sizing::cap(&walls, limits)));
                }
                sized = Some(s);
            }
        }
    })();
    drop(backend);
    let other_cpu_percent = started
        .1
        .other_cpu_ms(&crate::bench::machine::Reading::now())
        .map(|ms| ms as f64 * 100.0 / (started.0.elapsed().as_secs_f64() * 1000.0).max(1.0));
    // --cleanup runs whatever happened, as long as --setup ran.
    let cleaned = match &cfg.cleanup {
        Some(c) => hook("--cleanup", c, cfg),
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
    // With a baseline, its stored runs follow, one per command, each the
    // reference of the command measured now in its place.
    if let Some(b) = &cfg.baseline {
        for stored in &b.commands {
            let saved = super::plan::Instance {
                name: stored.name.clone(),
                command: stored.command.clone(),
                argv: Vec::new(),
                parameters: stored.parameters.clone(),
            };
            let mut c = CommandResult::new(&saved, stored.runs.len());
            c.runs.clone_from(&stored.runs);
            c.run_order = (1..=c.runs.len() as u32).collect();
            c.failed_runs = stored.failed_runs;
            c.from_baseline = true;
            results.push(c);
        }
    }
    let mut report = CompareReport::build(cfg, results, interrupted_by);
    report.other_cpu_percent = other_cpu_percent;
    if let (Some(b), Some(now)) = (&mut report.baseline, other_cpu_percent)
        && let Some(then) = b.other_cpu_percent
        && (now - then).abs() > OTHER_WORK_DIFFERS
    {
        let said = format!(
            "other work on the machine took {now:.0}% of a CPU while these runs ran, {then:.0}% \
             while the baseline's did: wall times may differ for that; gate cpu time, or both \
             versions interleaved in one comparison"
        );
        report.warnings.insert(
            0,
            format!("baseline {}: {said}", crate::text::path::display(&b.path)),
        );
        b.differences.push(said);
    }
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
    if !cfg.gate.is_empty() {
        report.gate = Some(super::gate::evaluate(&report, &cfg.gate, cfg.strict));
    }
    for (i, (n, floor)) in at_floor.into_iter().enumerate() {
        if n > 0 {
            report.warnings.push(format!(
                "#{} {}: peak memory at most {floor} KiB in {n} run{}, the peak of tally's own \
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
