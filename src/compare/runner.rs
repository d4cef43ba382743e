//! Runs a comparison: `--setup`, warm-up rounds, measured rounds (each
//! command once per round, in an order shuffled from the seed), with
//! `--prepare` and the page-cache state before every run, then `--cleanup`.

use std::ops::ControlFlow;
use std::path::Path;
use std::process::{Command, Stdio};

use super::plan::{CommandOutput, Config, PlanError};
use super::report::{CommandResult, CompareReport, OTHER_WORK_DIFFERS, PreparedCache};
use super::sizing::{self, Sizing};
use crate::count::{Counting, Kind};
use crate::pagecache::bulk::{self, BulkError};
use crate::run::records::Records;
use crate::run::report::{ColdReport, FIGURES, RunRecord};
use crate::run::spawner::{Reply, Spawner, Streams};
use crate::run::{self, Measurer, RunError};
use crate::speed as probe;
use crate::stats::Rng as CountedRng;
use crate::stats::Rng;

/// The most time of runs asked for in one stretch (see
/// [`Session::stretch`]): the answers, and the progress shown, come at
/// least this often.
const STRETCH_NS: u64 = 100_000_000;

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
    /// A command stored in the baseline at `path` (run because none was
    /// given) could not be started.
    #[error("{source} (the command as stored in {path})")]
    StoredCommand { path: String, source: RunError },
    #[error("--warm: {0}")]
    Warm(BulkError),
    /// `--command-output` cannot be opened (see [`crate::place`]).
    #[error("{}", .source.for_option("--command-output", path))]
    Output {
        path: std::path::PathBuf,
        source: crate::place::PlaceError,
    },
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
            CompareError::Run(RunError::Count(_)) => 2,
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
pub(super) fn hook(option: &'static str, command: &str, cfg: &Config) -> Result<(), CompareError> {
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
            // its start whoever of stdout and stderr makes it. Opened as
            // every path tally writes (links, FIFOs and devices by place's
            // one policy).
            let (file, regular) =
                crate::place::open_append(path).map_err(|source| CompareError::Output {
                    path: path.clone(),
                    source,
                })?;
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

pub(super) fn failure(rec: &RunRecord) -> Option<String> {
    match (rec.exit.code, &rec.exit.signal) {
        (_, Some(sig)) => Some(format!("killed by {sig}")),
        (Some(0), None) => None,
        (Some(code), None) => Some(format!("exit status {code}")),
        (None, None) => Some("ended in an unknown way".into()),
    }
}

/// The counting `--count` asks for, resolved on this machine; `None`
/// without `--count`. A source that cannot count here is bad usage.
fn resolve_count(cfg: &Config) -> Result<Option<Counting>, CompareError> {
    let Some(choice) = cfg.count else {
        return Ok(None);
    };
    let counting = Counting::resolve(choice).map_err(RunError::Count)?;
    if counting.kind() == Kind::Sim {
        // The runs under the simulator are tally's own: stdin is
        // /dev/null, their output /dev/null or tally's.
        if cfg.input.is_some() {
            return Err(PlanError(
                "--input cannot be given with --count=sim: the runs under Valgrind read \
                 /dev/null"
                    .into(),
            )
            .into());
        }
        if matches!(
            cfg.command_output,
            CommandOutput::Pipe | CommandOutput::File(_)
        ) {
            return Err(PlanError(
                "--command-output pipe or FILE cannot be given with --count=sim: the runs under \
                 Valgrind send their output to /dev/null (or, with --show-output, to tally's)"
                    .into(),
            )
            .into());
        }
    }
    Ok(Some(counting))
}

/// Makes the counted rounds under the simulator (`--count=sim`).
fn counted_rounds(
    cfg: &Config,
    progress: &mut dyn FnMut(Progress),
) -> Result<super::counted::CountedRuns, CompareError> {
    let k = cfg.instances.len();
    let n = super::counted::runs_asked(cfg);
    let base = run::Config {
        argv: Vec::new(),
        quiet_command: cfg.command_output != CommandOutput::Inherit,
        stdin_null: true,
        cold: cfg.cold.clone(),
        drop_caches: cfg.drop_caches,
        count: cfg.count,
        why: false,
        ..run::Config::default()
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
    let mut out = super::counted::CountedRuns {
        runs: vec![Vec::new(); k],
        profiles: vec![Vec::new(); k],
        order: vec![Vec::new(); k],
        interrupted_by: None,
    };
    let mut made = 0u32;
    // Its own order, from the seed: the timed rounds keep theirs.
    let mut rng = CountedRng::new(cfg.seed ^ 0x636f_756e_7465_6421);
    let mut order: Vec<usize> = (0..k).collect();
    for round in 0..n {
        rng.shuffle(&mut order);
        for (pos, &i) in order.iter().enumerate() {
            progress(Progress {
                done: u64::from(round) * k as u64 + pos as u64,
                of: Some(u64::from(n) * k as u64),
                warmup: false,
            });
            if let Some(sig) = measurer.pending_signal() {
                out.interrupted_by = Some(sig);
                return Ok(out);
            }
            if let Some(prepare) = &cfg.prepare {
                hook("--prepare", prepare, cfg)?;
            }
            let mut rec = match measurer.measure(&configs[i]) {
                Err(RunError::NotStarted { signal }) => {
                    out.interrupted_by = Some(signal);
                    return Ok(out);
                }
                r => r?,
            };
            if let Some(conclude) = &cfg.conclude {
                hook("--conclude", conclude, cfg)?;
            }
            if let Some(sig) = rec.forwarded_signal.take() {
                out.interrupted_by = Some(sig);
                return Ok(out);
            }
            if !cfg.ignore_failure
                && let Some(how) = failure(&rec)
            {
                return Err(CompareError::Failed {
                    index: i + 1,
                    name: crate::text::escape_text(&cfg.instances[i].name),
                    stage: "run under Valgrind",
                    run: round + 1,
                    how,
                });
            }
            if let Some(p) = run::take_profile(&mut rec) {
                out.profiles[i].push(p);
            }
            rec.cold = None;
            out.runs[i].push(rec);
            made += 1;
            out.order[i].push(made);
        }
    }
    Ok(out)
}

/// Runs the comparison and returns its report: an outline over a
/// `Session` (start, the rounds with their warm-up and checkpoints,
/// finish).
pub fn execute(
    cfg: &Config,
    progress: &mut dyn FnMut(Progress),
) -> Result<CompareReport, CompareError> {
    check(cfg)?;
    // Checked before anything runs: a path that cannot be warmed is an
    // error, not a warm run made cold.
    bulk::check(&cfg.warm, "warm").map_err(CompareError::Warm)?;
    let counting = resolve_count(cfg)?;
    let simulated = counting.as_ref().is_some_and(|c| c.kind() == Kind::Sim);
    // The CPU's counters count the timed runs, 3 of each by default.
    let with_runs;
    let cfg = match &counting {
        Some(c) if c.kind() == Kind::Hw && cfg.runs.is_none() => {
            with_runs = Config {
                runs: Some(super::plan::COUNTED_RUNS),
                ..cfg.clone()
            };
            &with_runs
        }
        _ => cfg,
    };
    let streams = streams(cfg)?;
    // Other work on the machine while the runs run: what tally and its
    // children (the spawner, the commands, the hooks) did not use.
    let started = (
        std::time::Instant::now(),
        crate::bench::machine::Reading::now(),
    );
    if let Some(setup) = &cfg.setup {
        hook("--setup", setup, cfg)?;
    }
    let cleanup = || match &cfg.cleanup {
        Some(c) => hook("--cleanup", c, cfg),
        None => Ok(()),
    };
    let counted = if simulated {
        match counted_rounds(cfg, progress) {
            Ok(c) => Some(c),
            Err(e) => {
                let _ = cleanup();
                return Err(e);
            }
        }
    } else {
        None
    };
    let other = |started: &(std::time::Instant, crate::bench::machine::Reading)| {
        started
            .1
            .other_cpu_ms(&crate::bench::machine::Reading::now())
            .map(|ms| ms as f64 * 100.0 / (started.0.elapsed().as_secs_f64() * 1000.0).max(1.0))
    };
    // Counted runs only (or stopped by a signal): no timed round follows.
    let mut counted = counted;
    if let Some(c) = counted.take_if(|c| !cfg.timed || c.interrupted_by.is_some()) {
        cleanup()?;
        let profiles = c.profiles.clone();
        let mut report = counted_only(cfg, c, progress);
        report.other_cpu_percent = other(&started);
        return Ok(conclude(report, cfg, counting.as_ref(), profiles));
    }
    let hw = counting.as_ref().is_some_and(|c| c.kind() == Kind::Hw);
    let mut session = match Session::start(cfg, streams, hw) {
        Ok(s) => s,
        Err(e) => {
            // The error that stopped the comparison is the one to tell.
            let _ = cleanup();
            return Err(e);
        }
    };
    if let Some(c) = &counted {
        // The timed runs come after the counted ones in the session's order.
        session.sequence = c.runs.iter().map(|r| r.len() as u32).sum();
    }
    let result = session.rounds(progress);
    drop(session.backend.take());
    session.gpu.stop();
    let other_cpu_percent = other(&started);
    // --cleanup runs whatever happened, as long as --setup ran.
    let cleaned = cleanup();
    result?;
    cleaned?;
    let profiles = counted
        .as_ref()
        .map(|c| c.profiles.clone())
        .unwrap_or_else(|| vec![Vec::new(); cfg.instances.len()]);
    let report = session.finish(other_cpu_percent, progress, counted)?;
    Ok(conclude(report, cfg, counting.as_ref(), profiles))
}

/// The report of a comparison of counted runs only (`--count=sim`
/// without `--timed`): the counted runs, the baseline's after them.
fn counted_only(
    cfg: &Config,
    counted: super::counted::CountedRuns,
    progress: &mut dyn FnMut(Progress),
) -> CompareReport {
    let k = cfg.instances.len() as u64;
    let most = counted.runs.iter().map(Vec::len).max().unwrap_or(0) as u64;
    progress(Progress {
        done: most * k,
        of: Some(most * k),
        warmup: false,
    });
    let mut results: Vec<CommandResult> = cfg
        .instances
        .iter()
        .zip(counted.runs.into_iter().zip(counted.order))
        .map(|(inst, (runs, order))| {
            let mut c = CommandResult::new(inst, runs.len());
            c.failed_runs = runs.iter().filter(|r| failure(r).is_some()).count() as u32;
            c.runs = runs;
            c.run_order = order;
            c
        })
        .collect();
    results.extend(stored_results(cfg));
    CompareReport::build(cfg, results, counted.interrupted_by)
}

/// The counting's part of the report, then the gate over every figure.
fn conclude(
    mut report: CompareReport,
    cfg: &Config,
    counting: Option<&crate::count::Counting>,
    profiles: Vec<Vec<(u64, crate::count::Profile)>>,
) -> CompareReport {
    if let Some(c) = counting {
        super::counted::annotate(&mut report, c, profiles);
    }
    if !cfg.gate.is_empty() {
        report.gate = Some(super::gate::evaluate(&report, &cfg.gate, cfg.strict));
    }
    report
}

/// The commands and `--reference` make a comparison.
fn check(cfg: &Config) -> Result<(), CompareError> {
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
    Ok(())
}

/// A comparison under way: what it measures with, the runs asked for and
/// not yet answered, and what the runs so far gave.
struct Session<'c> {
    cfg: &'c Config,
    k: usize,
    base: run::Config,
    measurer: Measurer,
    /// Where runs are made; taken (ended) before `--cleanup`.
    backend: Option<Backend>,
    configs: Vec<run::Config>,
    results: Vec<CommandResult>,
    prepared: Preparations,
    /// The records, kept where the forked commands do not inherit them
    /// (see `run::records`), each command's last one held back so that
    /// only it keeps its eviction details.
    stores: Vec<Records>,
    last: Vec<Option<RunRecord>>,
    /// Each command's wall times, and which figures vary (over every run
    /// of every command, the baseline's stored runs among them: the
    /// report's family counts a figure that varied on either side), for
    /// the number of rounds without --runs.
    walls: Vec<Vec<f64>>,
    ranges: Vec<Option<(u64, u64)>>,
    /// The stored runs' wall times of each command, for the number of rounds.
    baseline_walls: Option<Vec<Vec<f64>>>,
    /// The gated figures with their limits, and their values of each
    /// command now and in the baseline, to take the runs that decide the
    /// gate without --runs.
    gated_figures: Vec<(&'static run::report::Figure, f64)>,
    gated: Vec<Vec<Vec<f64>>>,
    gated_reference: Vec<Vec<Vec<f64>>>,
    sized: Option<Sizing>,
    rng: Rng,
    order: Vec<usize>,
    sequence: u32,
    interrupted_by: Option<String>,
    /// The command whose run the signal cut short, and the signal.
    cut_short: Option<(usize, String)>,
    /// Runs whose peak memory was not above the spawner's own (see
    /// `run::spawner`), per command: how many, and the largest such peak (kB).
    at_floor: Vec<(u32, u64)>,
    upcoming: std::collections::VecDeque<Slot>,
    in_flight: std::collections::VecDeque<(Slot, Option<ColdReport>)>,
    /// Rounds planned so far: warm-up ones first, then measured ones.
    planned: u32,
    /// Without --runs, the pilot's rounds until its end decides (see
    /// `sizing`).
    rounds: u32,
    /// tally works before or after each run (hooks, evictions, warming):
    /// the runs are asked for one at a time.
    per_run_work: bool,
    /// The runs answered since the last stretch was asked for, and their
    /// wall time: the next stretch is sized by them (see `Session::stretch`).
    since_stretch: (u64, u64),
    /// The speed probes so far (see `super::probe`), and when the next is
    /// due.
    probes: probe::Schedule,
    /// The runs' GPU figures (see `super::gpu`).
    gpu: super::gpu::Sampling,
}

impl<'c> Session<'c> {
    /// `hw`: the CPU's counters count the timed runs (by tally's own
    /// runs: the counters are attached at its gate); the simulator's runs
    /// are rounds of their own, never these.
    fn start(cfg: &'c Config, streams: Streams, hw: bool) -> Result<Session<'c>, CompareError> {
        let k = cfg.instances.len();
        let base = run::Config {
            argv: Vec::new(),
            runs: 1,
            warmup: 0,
            quiet_command: cfg.command_output != CommandOutput::Inherit,
            stdin_null: false,
            stdout_to_stderr: false,
            cold: cfg.cold.clone(),
            drop_caches: cfg.drop_caches,
            tree: false,
            counters: false,
            count: hw.then_some(crate::count::Choice::Hw),
            why: cfg.why,
            gpu: false,
            gpu_when_present: false,
        };
        let measurer = Measurer::new(&base)?;
        let mut configs: Vec<run::Config> = cfg
            .instances
            .iter()
            .map(|i| run::Config {
                argv: i.argv.clone(),
                ..base.clone()
            })
            .collect();
        let results = cfg
            .instances
            .iter()
            .map(|i| CommandResult::new(i, cfg.runs.unwrap_or(cfg.min_runs) as usize))
            .collect();
        let gated_figures: Vec<(&run::report::Figure, f64)> = cfg
            .gate
            .iter()
            .filter_map(|r| Some((FIGURES.iter().find(|f| f.key == r.figure)?, r.limit)))
            .collect();
        let stored = |get: &dyn Fn(&RunRecord) -> Option<f64>| -> Vec<Vec<f64>> {
            cfg.baseline.as_ref().map_or_else(Vec::new, |b| {
                b.commands
                    .iter()
                    .map(|c| c.runs.iter().filter_map(get).collect())
                    .collect()
            })
        };
        let gated_reference = gated_figures
            .iter()
            .map(|(fig, _)| stored(&|r| fig.value(r).map(|v| v as f64)))
            .collect();
        let baseline_walls = cfg
            .baseline
            .as_ref()
            .map(|_| stored(&|r| Some(r.wall_ns as f64)));
        // Work tally does itself right before or after each run; without
        // it, runs are asked of the spawner ahead, so that it never waits
        // for tally.
        let per_run_work = cfg.prepare.is_some()
            || cfg.conclude.is_some()
            || !cfg.warm.is_empty()
            || !cfg.cold.is_empty()
            || cfg.drop_caches;
        let backend = if hw {
            Backend::here(cfg)?
        } else {
            Backend::start(cfg, &measurer, streams, !per_run_work)?
        };
        let spawner = match &backend {
            Backend::Spawner(s) => Some(s.pid()),
            Backend::Here => None,
        };
        let gpu = super::gpu::Sampling::start(cfg.gpu, spawner);
        // After the GPU's sampler has started: its thread and process
        // move freely.
        let mut backend = backend;
        let probes = probes_beside(cfg, &mut backend);
        if let super::gpu::Sampling::PerRun = gpu {
            for c in &mut configs {
                c.gpu = cfg.gpu;
                c.gpu_when_present = true;
            }
        }
        Ok(Session {
            cfg,
            k,
            base,
            measurer,
            backend: Some(backend),
            configs,
            results,
            prepared: Preparations::default(),
            // Runs started by the spawner are not forked from tally.
            stores: (0..k).map(|_| Records::kept(spawner.is_some())).collect(),
            last: vec![None; k],
            walls: vec![Vec::new(); k],
            ranges: stored_ranges(cfg),
            baseline_walls,
            gated: vec![vec![Vec::new(); k]; gated_figures.len()],
            gated_figures,
            gated_reference,
            sized: None,
            rng: Rng::new(cfg.seed),
            order: (0..k).collect(),
            sequence: 0,
            interrupted_by: None,
            cut_short: None,
            at_floor: vec![(0, 0); k],
            upcoming: std::collections::VecDeque::new(),
            in_flight: std::collections::VecDeque::new(),
            planned: 0,
            rounds: cfg.runs.unwrap_or(cfg.min_runs),
            per_run_work,
            since_stretch: (0, 0),
            probes,
            gpu,
        })
    }

    fn backend(&mut self) -> Result<&mut Backend, CompareError> {
        self.backend
            .as_mut()
            .ok_or_else(|| spawner_error(std::io::Error::other("ended")))
    }

    /// Warm-up rounds, then measured rounds until the last planned one
    /// (without --runs, checkpoints plan more), or a signal, has ended.
    fn rounds(&mut self, progress: &mut dyn FnMut(Progress)) -> Result<(), CompareError> {
        loop {
            if self.ask()?.is_break() {
                return Ok(());
            }
            let Some((slot, cold)) = self.in_flight.pop_front() else {
                return Ok(());
            };
            if self.one(slot, cold, progress)?.is_break() {
                return Ok(());
            }
        }
    }

    /// Once the answers to the runs asked for have been read, asks for a
    /// stretch of runs ([`Session::stretch`]), planning rounds as they
    /// are needed and preparing each run (`--prepare`, `--warm`,
    /// `--cold`). Breaks when asked to stop with nothing in flight.
    fn ask(&mut self) -> Result<ControlFlow<()>, CompareError> {
        let cfg = self.cfg;
        if !self.in_flight.is_empty() {
            return Ok(ControlFlow::Continue(()));
        }
        // Sized once its first run is known, after the probe before it.
        let mut most = None;
        while most.is_none_or(|m| self.in_flight.len() < m) {
            if self.upcoming.is_empty() {
                let Some(stage) = next_round(self.planned, cfg.warmup, self.rounds) else {
                    break;
                };
                // A stretch ends with the round a checkpoint follows: the
                // checkpoint may decide that no round more is needed.
                if let Stage::Measured(r) = stage
                    && cfg.runs.is_none()
                    && sizing::is_checkpoint(r, cfg.min_runs)
                    && !self.in_flight.is_empty()
                {
                    break;
                }
                self.planned += 1;
                self.rng.shuffle(&mut self.order);
                self.upcoming
                    .extend(
                        self.order
                            .iter()
                            .enumerate()
                            .map(|(pos, &i)| Slot { i, pos, stage }),
                    );
            }
            let Some(slot) = self.upcoming.pop_front() else {
                break;
            };
            if let Some(sig) = self.measurer.pending_signal() {
                // Asked to stop: no new run; those asked for end first.
                if self.in_flight.is_empty() {
                    self.interrupted_by = Some(sig);
                    return Ok(ControlFlow::Break(()));
                }
                self.upcoming.push_front(slot);
                break;
            }
            // The speed probe, with nothing running: the runs asked for
            // ahead end first. The first run has one; later ones once the
            // runs since took `probe::EVERY` times its time.
            if self.probes.due() {
                if !self.in_flight.is_empty() {
                    self.upcoming.push_front(slot);
                    break;
                }
                self.probes.probe();
            }
            if most.is_none() {
                most = Some(self.stretch());
            }
            if let Some(prepare) = &cfg.prepare {
                hook("--prepare", prepare, cfg)?;
            }
            if !cfg.warm.is_empty() {
                let w = bulk::warm(&cfg.warm).map_err(CompareError::Warm)?;
                self.prepared.warm_ns.push(w.elapsed_ns);
                self.prepared.warmed_files = w.files;
            }
            let cold = self.measurer.evict(&self.base)?;
            if let Some(c) = &cold {
                self.prepared.evict_ns.push(c.evict_ns);
                self.prepared.evicted_files = c.file_count;
            }
            if !self.backend()?.submit(slot.i)? {
                // The spawner holds as many requests as it can take: this
                // one waits until answers are read. Runs with work of
                // tally's own before them are asked one at a time, so none
                // was prepared here for nothing.
                self.upcoming.push_front(slot);
                break;
            }
            self.in_flight.push_back((slot, cold));
        }
        Ok(ControlFlow::Continue(()))
    }

    /// How many runs to ask for at once: the spawner runs them one after
    /// the other and tally, asleep, reads their answers after the last
    /// (see `run::spawner`). One where tally works before or after each
    /// run; else one round first, then as many as end by the next speed
    /// probe, within [`STRETCH_NS`] of runs and
    /// [`run::spawner::STRETCH_MOST`], at the last stretch's mean time.
    fn stretch(&mut self) -> usize {
        if self.per_run_work {
            return 1;
        }
        let (runs, ns) = std::mem::take(&mut self.since_stretch);
        if runs == 0 {
            return self.k;
        }
        let mean = (ns / runs).max(1);
        // A tenth more, and one: runs a little shorter than the last
        // stretch's would otherwise leave a stretch of one or two before
        // the probe (the probe then comes a little late, a little less
        // than its share of the time).
        let by_probe = self
            .probes
            .until_due_ns()
            .map_or(u64::MAX, |left| left.div_ceil(mean) * 11 / 10 + 1);
        let most = by_probe
            .min(STRETCH_NS / mean)
            .min(run::spawner::STRETCH_MOST as u64)
            .max(1);
        usize::try_from(most).unwrap_or(1)
    }

    /// The answer to the oldest run asked for: checked, kept (measured
    /// runs only), and at the end of a round a checkpoint. Breaks on a
    /// signal.
    fn one(
        &mut self,
        slot: Slot,
        cold: Option<ColdReport>,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<ControlFlow<()>, CompareError> {
        let (cfg, k) = (self.cfg, self.k);
        let (round, warmup) = match slot.stage {
            Stage::Warmup(w) => (w, true),
            Stage::Measured(r) => (r, false),
        };
        progress(Progress {
            done: u64::from(round) * k as u64 + slot.pos as u64,
            of: Some(u64::from(if warmup { cfg.warmup } else { self.rounds }) * k as u64),
            warmup,
        });
        let config = &self.configs[slot.i];
        let reply = match self.backend.as_mut() {
            Some(b) => b.collect(&self.measurer, config)?,
            None => return Err(spawner_error(std::io::Error::other("ended"))),
        };
        let mut rec = match reply {
            Reply::Ran(rec, floor, stretch) => {
                self.probes.ran(rec.wall_ns);
                self.since_stretch.0 += 1;
                self.since_stretch.1 = self.since_stretch.1.saturating_add(rec.wall_ns);
                let mut rec = *rec;
                self.gpu.record(&mut rec, stretch);
                // Measured runs only: warm-up runs are not reported.
                let floor = floor.filter(|f| !warmup && rec.max_rss_bytes <= f * 1024);
                if let Some(floor) = floor {
                    let (n, most) = &mut self.at_floor[slot.i];
                    *n += 1;
                    *most = (*most).max(floor);
                }
                rec
            }
            Reply::Skipped { signal } => {
                self.interrupted_by = signal.or_else(|| self.measurer.pending_signal());
                return Ok(ControlFlow::Break(()));
            }
            // `collect` returns a run that could not be made as its error.
            Reply::Error(e) => return Err(e.into()),
        };
        // The run has ended and been reaped: nothing else is running.
        if let Some(conclude) = &cfg.conclude {
            hook("--conclude", conclude, cfg)?;
        }
        rec.cold = cold;
        if let Some(sig) = rec.forwarded_signal.take() {
            // Cut short by the signal: its figures are of no whole run, so
            // it is left out of the statistics, and said so.
            self.cut_short = Some((slot.i, sig.clone()));
            self.interrupted_by = Some(sig);
            return Ok(ControlFlow::Break(()));
        }
        if !cfg.ignore_failure
            && let Some(how) = failure(&rec)
        {
            return Err(CompareError::Failed {
                index: slot.i + 1,
                name: crate::text::escape_text(&cfg.instances[slot.i].name),
                stage: if warmup { "warm-up run" } else { "run" },
                run: round + 1,
                how,
            });
        }
        if !warmup {
            self.keep(slot.i, rec)?;
        }
        let done = round + 1;
        if !warmup
            && cfg.runs.is_none()
            && slot.pos + 1 == k
            && sizing::is_checkpoint(done, cfg.min_runs)
        {
            self.checkpoint(done);
        }
        Ok(ControlFlow::Continue(()))
    }

    /// Keeps a measured run of command `i`.
    fn keep(&mut self, i: usize, mut rec: RunRecord) -> Result<(), CompareError> {
        self.sequence += 1;
        let r = &mut self.results[i];
        if failure(&rec).is_some() {
            r.failed_runs += 1;
        }
        rec.counters = None;
        self.walls[i].push(rec.wall_ns as f64);
        for ((fig, _), values) in self.gated_figures.iter().zip(self.gated.iter_mut()) {
            if let (Some(v), Some(of)) = (fig.value(&rec), values.get_mut(i)) {
                of.push(v as f64);
            }
        }
        widen(&mut self.ranges, &rec);
        // Only the last run keeps its eviction details: the records stay
        // small however many runs there are.
        if let Some(mut prev) = self.last[i].replace(rec) {
            prev.cold = None;
            self.stores[i].push_owned(prev).map_err(RunError::Records)?;
        }
        r.run_order.push(self.sequence);
        Ok(())
    }

    /// Without --runs, after `done` rounds: how many rounds to take in
    /// all, from the spread so far and what a gate still needs (see
    /// `sizing` and `gate::rounds_to_decide`).
    fn checkpoint(&mut self, done: u32) {
        let (cfg, k) = (self.cfg, self.k);
        let varying = varying(&self.ranges);
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
        let s =
            sizing::checkpoint_against(&self.walls, self.baseline_walls.as_deref(), done, limits);
        self.rounds = s.rounds.max(done);
        // A baseline is saved with the runs a later gate's fastest runs
        // are compared with (see `gate::fastest_runs`), within the limits:
        // saved once, it is gated against many times. (For a family twice
        // this one's: a gate's may hold more figures that varied.)
        // Not where the limits stop short of them: then they buy nothing.
        if cfg.save_baseline.is_some() {
            let fewest = super::gate::fastest_fewest(2 * limits.family, cfg.alpha);
            if fewest <= sizing::cap(&self.walls, limits) {
                self.rounds = self.rounds.max(fewest);
            }
        }
        // A gate takes the runs that decide it, within the limits.
        if !self.gated_figures.is_empty() {
            let reference = cfg.reference.unwrap_or(0);
            let mut pairs: Vec<(f64, &[f64], &[f64])> = Vec::new();
            for (g, (_, limit)) in self.gated_figures.iter().enumerate() {
                for i in 0..k {
                    let now = self.gated.get(g).and_then(|v| v.get(i));
                    let against = match &cfg.baseline {
                        Some(_) => self.gated_reference.get(g).and_then(|v| v.get(i)),
                        None if i != reference => self.gated.get(g).and_then(|v| v.get(reference)),
                        None => None,
                    };
                    if let (Some(a), Some(b)) = (now, against) {
                        pairs.push((*limit, a, b));
                    }
                }
            }
            let mut needed = super::gate::rounds_to_decide(
                &pairs,
                limits.family,
                cfg.alpha,
                cfg.baseline.is_some(),
            );
            // Against a stored baseline, a time not yet a regression by
            // its typical runs takes the runs its fastest need, where the
            // baseline has them (see `gate::fastest_rounds`).
            // (Only where the baseline's probes can judge the speed: else
            // the fastest runs are not compared.)
            let mut fastest = 0;
            if let Some(b) = &cfg.baseline
                && !b.about.probes_of_other_work
                && probe::unchecked(&b.about.speed_probe_ns).is_none()
            {
                // The machine's speed is judged from the fewest probes the
                // report judges it from, or not yet: of one or two probes the
                // spread is nothing, and a regression stood here that the
                // report, of five, called inconclusive.
                let made = self.probes.probes();
                let allowance = (made.len() >= probe::FEWEST)
                    .then(|| probe::allowance(made, &b.about.speed_probe_ns))
                    .flatten();
                for (g, (fig, limit)) in self.gated_figures.iter().enumerate() {
                    for i in 0..k {
                        let now = self.gated.get(g).and_then(|v| v.get(i));
                        let then = self.gated_reference.get(g).and_then(|v| v.get(i));
                        if let (Some(a), Some(b)) = (now, then) {
                            fastest = fastest.max(super::gate::fastest_rounds(
                                fig,
                                *limit,
                                (a, b),
                                allowance,
                                (limits.family, cfg.alpha),
                            ));
                        }
                    }
                }
            }
            // Not where the limits stop short of the fewest that bound
            // the fastest runs: then they buy nothing.
            let cap = sizing::cap(&self.walls, limits);
            if cap >= super::gate::fastest_fewest(limits.family, cfg.alpha) {
                needed = needed.max(fastest);
            }
            self.rounds = self.rounds.max(needed.min(cap));
        }
        self.sized = Some(s);
    }

    /// The report: the runs kept, the baseline's after them, and the
    /// warnings about the machine, the page cache, the runs' number and
    /// the spawner's floor.
    fn finish(
        mut self,
        other_cpu_percent: Option<f64>,
        progress: &mut dyn FnMut(Progress),
        counted: Option<super::counted::CountedRuns>,
    ) -> Result<CompareReport, CompareError> {
        let (cfg, k) = (self.cfg, self.k);
        let mut results = std::mem::take(&mut self.results);
        for ((r, mut store), held) in results.iter_mut().zip(self.stores).zip(self.last) {
            if let Some(held) = held {
                store.push_owned(held).map_err(RunError::Records)?;
            }
            r.runs = store.into_vec().map_err(RunError::Records)?;
        }
        // The runs under the simulator, after the timed ones.
        if let Some(c) = counted {
            for (r, (runs, order)) in results.iter_mut().zip(c.runs.into_iter().zip(c.order)) {
                r.failed_runs += runs.iter().filter(|x| failure(x).is_some()).count() as u32;
                r.runs.extend(runs);
                r.run_order.extend(order);
            }
        }
        let runs = results.iter().map(|r| r.runs.len()).max().unwrap_or(0) as u64;
        progress(Progress {
            done: runs * k as u64,
            of: Some(runs * k as u64),
            warmup: false,
        });
        super::gpu::keep_only_if_used(&mut results, cfg.gpu);
        results.extend(stored_results(cfg));
        let mut report = CompareReport::build(cfg, results, self.interrupted_by);
        if let Some(why) = self.gpu.unavailable() {
            report
                .warnings
                .push(format!("GPU figures unavailable: {why}"));
        }
        if let Some((i, sig)) = &self.cut_short {
            report.warnings.push(format!(
                "the run of command {} ({}) that {sig} interrupted is left out of the statistics",
                i + 1,
                crate::text::escape_text(&cfg.instances[*i].name),
            ));
        }
        report.other_cpu_percent = other_cpu_percent;
        other_work_warning(&mut report, other_cpu_percent);
        report.page_cache = self.prepared.report();
        if cfg.baseline.is_some() || cfg.save_baseline.is_some() {
            // The runs are over: probes enough to judge a baseline's speed.
            self.probes.top_up(probe::FEWEST);
        }
        speed(&mut report, self.probes.probes(), cfg);
        if let Some(Sizing {
            rounds,
            short_of: Some(needed),
            detectable,
            ..
        }) = self.sized
        {
            report.warnings.push(format!(
                "wall time: {rounds} runs of each (the limit of --max-runs or of {} s of runs) \
                 find a difference of {} with {}% chance; {} needs about {needed} runs of each \
                 (--runs {needed})",
                sizing::BUDGET.as_secs(),
                super::prose::percent(detectable),
                (sizing::POWER * 100.0).round(),
                super::prose::percent(sizing::DETECT),
            ));
        }
        for (i, (n, floor)) in self.at_floor.into_iter().enumerate() {
            if n > 0 {
                report.warnings.push(format!(
                    "#{} {}: peak memory at most {} KiB in {n} run{}, the peak of tally's \
                     own spawner: those figures are upper bounds, not measurements",
                    i + 1,
                    crate::text::Foreign(&cfg.instances[i].name),
                    crate::units::thousands(floor),
                    if n == 1 { "" } else { "s" }
                ));
            }
        }
        Ok(report)
    }
}

/// With a baseline, its stored runs, one result per command, each the
/// reference of the command measured now in its place.
fn stored_results(cfg: &Config) -> Vec<CommandResult> {
    let Some(b) = &cfg.baseline else {
        return Vec::new();
    };
    b.commands
        .iter()
        .map(|stored| {
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
            super::counted::stored(
                &mut c,
                b.about.count_source.as_ref(),
                stored.profile.clone(),
            );
            c
        })
        .collect()
}

/// The speed probes into the report: a warning when they spread, and
/// against a baseline with probes, whether the machine ran at its speed.
fn speed(report: &mut CompareReport, probes: &[u64], cfg: &Config) {
    let Some(mut speed) = probe::Speed::of(probes) else {
        return;
    };
    // Against a baseline, its own warning says how the speed is judged.
    if speed.varied() && cfg.baseline.is_none() {
        report.warnings.push(format!(
            "the machine's speed varied ±{:.0}% during these runs (speed probe): figures from \
             another time are not comparable",
            speed.spread * 100.0
        ));
    }
    if let Some(b) = &cfg.baseline
        && let Some(why) = probe::unchecked(&b.about.speed_probe_ns)
    {
        // Too few probes to judge a speed: said (probes of other work
        // already are), and with --strict the time figures are not decided
        // against it.
        let warning = format!(
            "baseline {}: {}; {}",
            crate::text::path::display(&b.about.path),
            why,
            if cfg.strict {
                "with --strict, time figures are not decided against it"
            } else {
                "time figures are compared as they are (--strict leaves them undecided)"
            }
        );
        if !b.about.probes_of_other_work {
            report.warnings.insert(0, warning);
        }
        speed.not_comparable = cfg.strict;
        speed.unchecked = Some(if b.about.probes_of_other_work {
            "the baseline's speed probes timed other work: the machine's speed then and now was \
             not checked"
                .into()
        } else {
            why
        });
    } else if let Some(b) = &cfg.baseline {
        let then = &b.about.speed_probe_ns;
        let differs = probe::differs(probes, then);
        speed.versus_baseline =
            differs.or_else(|| probe::Speed::of(then).map(|t| speed.median_ns / t.median_ns));
        // Every time against a baseline is judged in proportion to the
        // speed the probes measured; a warning where they differ.
        speed.allowance = probe::allowance(probes, then);
        if differs.is_some() {
            speed.not_comparable = true;
            if let Some(a) = &speed.allowance {
                report.warnings.insert(
                    0,
                    format!(
                        "baseline {}: {}; time figures are judged in proportion",
                        crate::text::path::display(&b.about.path),
                        a.words()
                    ),
                );
            }
        }
    }
    report.speed = Some(speed);
}

/// Warns when other work on the machine differed between the baseline's
/// runs and these by more than [`OTHER_WORK_DIFFERS`].
fn other_work_warning(report: &mut CompareReport, now: Option<f64>) {
    if let (Some(b), Some(now)) = (&mut report.baseline, now)
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

/// The speed probes' schedule, this thread kept on the spawner's CPU
/// where `Backend::start` asked for it: each probe is then made on its CPU
/// and the thread kept there again after it.
fn probes_beside(cfg: &Config, backend: &mut Backend) -> probe::Schedule {
    let mut probes =
        probe::Schedule::for_runs(cfg.baseline.is_some() || cfg.save_baseline.is_some());
    if let Backend::Spawner(s) = backend
        && let Some((cpu, all)) = s.keep_caller_beside()
    {
        probes.kept_on(cpu, all);
    }
    probes
}

/// Where runs are made: by the spawner (see `run::spawner`), or here, by
/// forking tally, when no spawner could start (each run then made when
/// its answer is asked for).
enum Backend {
    Spawner(Box<Spawner>),
    Here,
}

impl Backend {
    /// The spawner, or without one (no /proc/self/exe?) tally itself when
    /// the runs need no stream of their own: they get tally's stdin, so
    /// --input and an output file or pipe cannot be given to them.
    ///
    /// With `beside`, this thread is kept on the spawner's CPU while the
    /// spawner runs (see `run::spawner`): only when it has no work of its
    /// own between runs, where it only reads answers and asks for runs.
    /// Hooks, evictions and warming start processes and threads, which
    /// would be kept there too: with those it moves freely.
    fn start(
        cfg: &Config,
        measurer: &Measurer,
        streams: Streams,
        beside: bool,
    ) -> Result<Backend, CompareError> {
        let plain = cfg.input.is_none()
            && matches!(
                cfg.command_output,
                CommandOutput::Null | CommandOutput::Inherit
            );
        let argvs: Vec<_> = cfg.instances.iter().map(|i| i.argv.clone()).collect();
        match Spawner::start(
            &argvs,
            streams,
            !cfg.ignore_failure,
            measurer.group_dir(),
            beside,
        ) {
            Ok(s) => {
                measurer.relay_signals_to(s.pid());
                Ok(Backend::Spawner(Box::new(s)))
            }
            Err(_) if plain => Ok(Backend::Here),
            Err(e) => Err(CompareError::Stream {
                option: if cfg.input.is_some() {
                    "--input"
                } else {
                    "--command-output"
                },
                path: String::new(),
                how: format!("needs tally's spawner process, which could not start: {e}"),
            }),
        }
    }

    /// Runs made by tally itself (with the CPU's counters attached at its
    /// gate), which the commands' own streams cannot be given to.
    fn here(cfg: &Config) -> Result<Backend, CompareError> {
        if cfg.input.is_some()
            || matches!(
                cfg.command_output,
                CommandOutput::Pipe | CommandOutput::File(_)
            )
        {
            return Err(PlanError(
                "--input and --command-output pipe or FILE cannot be given with --count=hw: \
                 tally starts the counted runs itself"
                    .into(),
            )
            .into());
        }
        Ok(Backend::Here)
    }

    /// Asks for a run of command `i`; `false` when it must wait until the
    /// answers to runs in flight are read (see `Spawner::submit`).
    fn submit(&mut self, i: usize) -> Result<bool, CompareError> {
        match self {
            Backend::Spawner(s) => s.submit(i).map_err(spawner_error),
            Backend::Here => Ok(true),
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
                None => match measurer.measure_as_is(cfg) {
                    Ok(rec) => Ok(Reply::Ran(Box::new(rec), None, None)),
                    Err(RunError::NotStarted { signal }) => Ok(Reply::Skipped {
                        signal: Some(signal),
                    }),
                    Err(e) => Err(e.into()),
                },
            },
        }
    }
}

fn spawner_error(e: std::io::Error) -> CompareError {
    RunError::Spawner(format!("tally's spawner process: {e}")).into()
}

/// Widens each figure's range (its lowest and highest value so far, in
/// [`FIGURES`]' order) by `rec`'s.
pub(super) fn widen(ranges: &mut [Option<(u64, u64)>], rec: &RunRecord) {
    for (range, fig) in ranges.iter_mut().zip(FIGURES) {
        if let Some(v) = fig.value(rec) {
            let (lo, hi) = range.get_or_insert((v, v));
            *lo = (*lo).min(v);
            *hi = (*hi).max(v);
        }
    }
}

/// How many figures' ranges hold more than one value.
pub(super) fn varying(ranges: &[Option<(u64, u64)>]) -> usize {
    ranges
        .iter()
        .filter(|r| r.is_some_and(|(lo, hi)| lo != hi))
        .count()
}

/// The figures' ranges over a stored baseline's runs (none without one):
/// a figure that varied only there is in the report's family, so it is in
/// the checkpoints' too.
pub(super) fn stored_ranges(cfg: &Config) -> Vec<Option<(u64, u64)>> {
    let mut ranges = vec![None; FIGURES.len()];
    for run in cfg
        .baseline
        .iter()
        .flat_map(|b| &b.commands)
        .flat_map(|c| &c.runs)
    {
        widen(&mut ranges, run);
    }
    ranges
}
