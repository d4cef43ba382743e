//! `tally run`: run a command and report what it cost.
//!
//! One run: optional cache eviction, fork + exec (the child held at a gate
//! until tally has opened its `/proc/PID/io` and attached counters, put
//! into a cgroup for `--tree`), `waitid(WNOWAIT)` to stop the clock and
//! read `/proc/PID/io` while the child is a zombie, then `wait4` for its
//! rusage. Repeated runs keep one compact record each, so tally stays
//! small and cannot inflate the next child's `ru_maxrss`.

pub mod args;
pub mod exec;
mod group;
mod html;
mod human;
use crate::speed as probe;
pub mod quota;
pub mod records;
mod render;
pub mod report;
pub mod spawner;
pub mod template;
mod tree;
mod why;

use std::cell::RefCell;
use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::time::Instant;

use crate::pagecache::bulk::{self, BulkError};
use crate::procfs::io::IoCounters;
use crate::procfs::{self, ProcRoot};
use crate::progress::Progress;
use crate::report::SCHEMA_VERSION;
use crate::sys::{self, perf, process::Exit, signals::Forwarder};
use report::{ColdReport, CounterReading, Counters, ExitInfo, IoSource, RunRecord, RunReport, Why};

/// What to run and how: `tally run`'s measurement options (made from its
/// arguments by [`args::RunArgs::config`]), and each run of `tally
/// compare`, `tally load` and `tally serve`'s checks.
#[derive(Debug, Clone)]
pub struct Config {
    /// Measured runs (at least one).
    pub runs: u32,
    /// Unmeasured runs before them.
    pub warmup: u32,
    /// The command's stdout and stderr to /dev/null.
    pub quiet_command: bool,
    /// The command's stdin from /dev/null rather than tally's (compare's
    /// runs under the simulator, as its other runs have it).
    pub stdin_null: bool,
    /// The command's stdout to its stderr: set when the report takes
    /// stdout, which carries one stream.
    pub stdout_to_stderr: bool,
    /// Evicted from the page cache before every run (a directory
    /// recursively), and checked to have left.
    pub cold: Vec<PathBuf>,
    /// Every clean page cache dropped before every run (root).
    pub drop_caches: bool,
    /// The whole process tree accounted (cgroup v2, else /proc sampling).
    pub tree: bool,
    /// Hardware counters read (perf_event_open).
    pub counters: bool,
    /// Counted work (`--count`): the source asked for.
    pub count: Option<crate::count::Choice>,
    /// Where the wall time went measured (see `why`): a cgroup v2 group
    /// made for each run where one can be.
    pub why: bool,
    /// GPU figures asked for (`--gpu`): a failure to measure them is said.
    pub gpu: bool,
    /// GPU figures measured when nvidia-smi is on PATH though not asked
    /// for (`tally run`'s default); off where the run's figures are not
    /// the user's command's (`load`'s own child), so that nothing samples
    /// the GPUs for them.
    pub gpu_when_present: bool,
    /// The command and its arguments (run as given, no shell).
    pub argv: Vec<OsString>,
}

impl Default for Config {
    /// One run, no warm-up.
    fn default() -> Config {
        Config {
            runs: 1,
            warmup: 0,
            quiet_command: false,
            stdin_null: false,
            stdout_to_stderr: false,
            cold: Vec::new(),
            drop_caches: false,
            tree: false,
            counters: false,
            count: None,
            why: true,
            gpu: false,
            gpu_when_present: false,
            argv: Vec::new(),
        }
    }
}

/// Why tally could not run or measure the command.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{program}: command not found")]
    NotFound { program: String },
    #[error(
        "{program}: bad interpreter: {interpreter} (named on the {named_by} of {file}) was not found"
    )]
    InterpreterNotFound {
        program: String,
        file: String,
        interpreter: String,
        named_by: &'static str,
    },
    #[error("{program}: cannot execute: {source}")]
    NotExecutable { program: String, source: io::Error },
    #[error("cannot start {program}: {source}")]
    Spawn { program: String, source: io::Error },
    #[error("cannot wait for the command: {0}")]
    Wait(io::Error),
    #[error("--cold: {0}")]
    Cold(#[from] BulkError),
    #[error("--drop-caches: {0}")]
    DropCaches(String),
    #[error("cannot handle signals: {0}")]
    Signals(io::Error),
    #[error("cannot keep the records of the runs: {0}")]
    Records(io::Error),
    /// A run made by `run::spawner`, which could not be made: its text.
    #[error("{0}")]
    Spawner(String),
    /// A signal (its name) came before the command was let go: it was not
    /// started. Not a failure: the caller stops as it does between runs.
    #[error("{signal} came before the command started: it was not started")]
    NotStarted { signal: String },
    /// `--count` cannot count here, or a run could not be prepared for it.
    #[error("--count: {0}")]
    Count(String),
}

impl crate::failure::Failure for RunError {
    /// The exit code of the `timeout(1)`/`env(1)` convention.
    fn exit_code(&self) -> u8 {
        match self {
            RunError::NotFound { .. } | RunError::InterpreterNotFound { .. } => 127,
            RunError::NotExecutable { .. } => 126,
            _ => 125,
        }
    }
}

/// Checks and opens every place `tally run`'s report goes (stderr by
/// default), before the command runs; with the report on stdout, which
/// carries one stream, the command's output goes to stderr.
pub fn open_output(
    cfg: &mut Config,
    request: &crate::report::Request,
) -> Result<crate::report::Output, crate::report::OutputError> {
    let output = crate::report::Output::open::<RunReport>(
        request,
        "run",
        Some(crate::report::Stream::Stderr),
    )?;
    cfg.stdout_to_stderr = output.uses_stdout() && !cfg.quiet_command;
    Ok(output)
}

/// What every run of a session shares: the signal forwarder, the paths
/// to evict before each run, whether counters can be opened, and the
/// breakdown's cgroup. `tally run` and `tally compare` measure each run
/// through [`Measurer::measure`].
pub struct Measurer {
    forwarder: Forwarder,
    /// `--cold`'s paths, checked: walked and evicted before each run.
    cold: Vec<PathBuf>,
    counters: Option<Result<bool, String>>,
    /// The counting source `--count` resolved to.
    count: Option<crate::count::Counting>,
    /// Start commands by [`sys::process::spawn_shared`] rather than fork
    /// (see [`Measurer::share_memory`]).
    shared: bool,
    /// The breakdown's group, one for every run of the session (see
    /// [`group::SessionGroup`]): made with the measurer when the breakdown
    /// is on and `--tree` makes a group of its own per run.
    group: RefCell<Option<group::SessionGroup>>,
    /// The GPU sampling of the runs, started before the first that wants
    /// it and kept for the others (see [`crate::gpu::Runs`]).
    gpu: std::cell::RefCell<crate::gpu::Runs>,
}

impl Measurer {
    /// Installs the signal forwarder, checks `cfg.cold`'s paths (each must
    /// exist and be a regular file or a directory: a FIFO or a device has
    /// no page cache to evict, and a cold run must not be silently warm)
    /// and probes the counters when `cfg.counters` asks for them.
    pub fn new(cfg: &Config) -> Result<Measurer, RunError> {
        bulk::check(&cfg.cold, "evict")?;
        let forwarder = Forwarder::install().map_err(RunError::Signals)?;
        let counters = cfg.counters.then(probe_counters);
        let count = cfg
            .count
            .map(crate::count::Counting::resolve)
            .transpose()
            .map_err(RunError::Count)?;
        let simulated = count
            .as_ref()
            .is_some_and(|c| c.kind() == crate::count::Kind::Sim);
        Ok(Measurer {
            forwarder,
            cold: cfg.cold.clone(),
            counters,
            count,
            shared: false,
            gpu: Default::default(),
            // Under the simulator the runs' waits are not measured.
            group: RefCell::new(
                (cfg.why && !cfg.tree && !simulated).then(group::SessionGroup::make),
            ),
        })
    }

    /// The directory of the session's group, for commands started by
    /// another process (`run::spawner`): the descriptor lives as long as
    /// the measurer. `Err` says why there is none; `None`: the breakdown
    /// is off.
    pub fn group_dir(&self) -> Option<Result<(std::os::fd::RawFd, PathBuf), String>> {
        use std::os::fd::AsRawFd;
        let session = self.group.borrow();
        Some(
            session
                .as_ref()?
                .group()
                .map(|g| (g.dir().as_raw_fd(), g.path().to_path_buf()))
                .map_err(group::no_group),
        )
    }

    /// After the last run, before the report: what the report should say
    /// of the session's group (the groups the commands made below it).
    pub fn settle(&self) -> Option<String> {
        self.group.borrow_mut().as_mut()?.made_below()
    }

    /// Removes the session's group (after the report, where the caller
    /// can: see docs/run.md, The clock); returns what could not be done.
    pub fn finish(self) -> Vec<String> {
        self.group
            .into_inner()
            .map(group::SessionGroup::finish)
            .unwrap_or_default()
    }

    /// Starts the GPU sampling of the runs when `cfg` wants it (else the
    /// first run that does starts it, silently), telling `say` what it
    /// waits for when the wait lasts more than a moment. A signal during
    /// the wait ends it: [`RunError::NotStarted`], and no run starts.
    pub fn start_gpu(&self, cfg: &Config, say: &mut dyn FnMut(&str)) -> Result<(), RunError> {
        self.gpu_for(cfg, Some(say))
    }

    fn gpu_for(&self, cfg: &Config, say: Option<&mut dyn FnMut(&str)>) -> Result<(), RunError> {
        // Under the simulator the runs' GPU use is not measured.
        let simulated = self
            .count
            .as_ref()
            .is_some_and(|c| c.kind() == crate::count::Kind::Sim);
        if !(cfg.gpu || cfg.gpu_when_present) || simulated {
            return Ok(());
        }
        let interrupted = || self.forwarder.pending().is_some();
        let mut waiting = crate::gpu::Waiting {
            say,
            interrupted: Some(&interrupted),
        };
        let started = self.gpu.borrow_mut().start(cfg.gpu, &mut waiting);
        started.map_err(|_| self.not_started())
    }

    /// The error of a run that a signal kept from starting.
    fn not_started(&self) -> RunError {
        RunError::NotStarted {
            signal: self
                .forwarder
                .pending()
                .map_or_else(|| "a signal".to_string(), sys::signal_name),
        }
    }

    /// What the GPU sampling has to say once about the runs: a wait
    /// nobody asked for that came to nothing.
    pub fn gpu_warning(&self) -> Option<String> {
        self.gpu.borrow_mut().take_warning()
    }

    /// From now on, start commands the way `posix_spawn` does, sharing
    /// this process's memory until `exec` (see
    /// [`sys::process::spawn_shared`]): for a process whose own peak is
    /// smaller than what it measures, `run::spawner`'s. Counters, `--tree`
    /// and `--quiet-command` need the fork path and keep it.
    pub fn share_memory(&mut self) {
        self.shared = true;
    }

    /// Starts relaying every signal to `pid` as it comes, without the
    /// escalation to SIGKILL: for a measurer whose commands run in another
    /// process (`run::spawner`), which forwards and escalates itself.
    pub fn relay_signals_to(&self, pid: u32) {
        self.forwarder.relay_to(pid);
    }

    /// The page-cache state the configuration asks for before a run:
    /// every file under `cfg.cold`'s paths evicted (and checked) and, with
    /// `cfg.drop_caches`, every clean cache dropped. `None` when it asks
    /// for neither.
    pub fn evict(&self, cfg: &Config) -> Result<Option<ColdReport>, RunError> {
        if self.cold.is_empty() && !cfg.drop_caches {
            return Ok(None);
        }
        evict_all(&self.cold, cfg.drop_caches).map(Some)
    }

    /// One measured run of `cfg.argv` (evicting first when the measurer's
    /// `cold` files or `cfg.drop_caches` say so).
    pub fn measure(&self, cfg: &Config) -> Result<RunRecord, RunError> {
        let cold = self.evict(cfg)?;
        let mut rec = self.measure_as_is(cfg)?;
        rec.cold = cold;
        Ok(rec)
    }

    /// One measured run of `cfg.argv` in the page-cache state it finds
    /// (the caller evicts first when it should, see [`Measurer::evict`]).
    pub fn measure_as_is(&self, cfg: &Config) -> Result<RunRecord, RunError> {
        self.gpu_for(cfg, None)?;
        if self.forwarder.pending().is_some() {
            return Err(self.not_started());
        }
        run_once(&Ctx {
            cfg,
            counters: self.counters.as_ref(),
            count: self.count.as_ref(),
            forwarder: &self.forwarder,
            group: &self.group,
            gpu: &self.gpu,
            shared: self.shared
                && !cfg.tree
                && !cfg.quiet_command
                && !cfg.stdin_null
                && !cfg.stdout_to_stderr
                && !cfg.why
                && self.counters.is_none()
                && self.count.is_none(),
        })
    }

    /// The counting source the runs use, when `--count` asked for one.
    pub fn counting(&self) -> Option<&crate::count::Counting> {
        self.count.as_ref()
    }

    /// The name of a stopping signal (SIGINT, SIGTERM…) tally received
    /// between runs, if one came.
    pub fn pending_signal(&self) -> Option<String> {
        self.forwarder.pending().map(sys::signal_name)
    }
}

/// Runs the command as configured and returns the report. Repeated runs
/// (warm-up included) are told to `progress` as steps; a single run tells
/// nothing.
pub fn execute(cfg: &Config, progress: &mut Progress) -> Result<RunReport, RunError> {
    let measurer = Measurer::new(cfg)?;
    let mut report = execute_with(&measurer, cfg, progress)?;
    report.warnings.extend(measurer.finish());
    Ok(report)
}

/// [`execute`] with a measurer made before (see [`Measurer::new`]), which
/// the caller finishes ([`Measurer::finish`]) once the report is written:
/// the session's group is removed after the report, not before it.
pub fn execute_with(
    measurer: &Measurer,
    cfg: &Config,
    progress: &mut Progress,
) -> Result<RunReport, RunError> {
    let mut report = no_runs_yet(cfg);
    if let Err(e) = measurer.start_gpu(cfg, &mut |what| progress.busy(&what, false)) {
        report.interrupted_by = Some(not_started(e)?);
    }
    let steps = cfg.warmup.saturating_add(cfg.runs);
    let mut step = |what: &str, done: u32| {
        if steps > 1 {
            progress.step(&what, u64::from(done), Some(u64::from(steps)));
        }
    };
    for i in 0..cfg.warmup {
        if report.interrupted_by.is_some() {
            break;
        }
        step("warm-up", i);
        let rec = match measurer.measure(cfg) {
            Ok(rec) => rec,
            Err(e) => {
                report.interrupted_by = Some(not_started(e)?);
                break;
            }
        };
        report.warmup_runs += 1;
        // A warm-up run is never reported as a measured one, even when
        // the user interrupted it.
        if let Some(sig) = rec.forwarded_signal {
            report.interrupted_by = Some(sig);
            break;
        }
    }
    // Kept where the forked commands do not inherit them (see `records`).
    let mut records = records::Records::new();
    // The machine's speed among the runs of `run -n`, outside their clocks.
    // Under the simulator the runs are not timed: nothing to probe for.
    let simulated = measurer
        .counting()
        .is_some_and(|c| c.kind() == crate::count::Kind::Sim);
    // No baseline judges `run -n`: probes as sparse as a plain comparison's.
    let mut probes =
        (report.runs_requested > 1 && !simulated).then(|| probe::Schedule::for_runs(false));
    // Where each counted run's instructions went (`sim`), kept apart from
    // its record.
    let mut profiles = Vec::new();
    let mut probed_before = Vec::new();
    if report.interrupted_by.is_none() {
        for i in 0..report.runs_requested {
            step("runs", cfg.warmup.saturating_add(i));
            if let Some(sig) = measurer.pending_signal() {
                report.interrupted_by = Some(sig);
                break;
            }
            if let Some(s) = probes.as_mut()
                && s.before_run().is_some()
            {
                probed_before.push(i);
            }
            let mut rec = match measurer.measure(cfg) {
                Ok(rec) => rec,
                Err(e) => {
                    report.interrupted_by = Some(not_started(e)?);
                    break;
                }
            };
            if let Some(p) = take_profile(&mut rec) {
                profiles.push(p);
            }
            if let Some(s) = probes.as_mut().filter(|_| !rec.simulated()) {
                s.ran(rec.wall_ns);
            }
            let stop = rec.forwarded_signal.clone();
            if stop.is_some() || i + 1 == report.runs_requested {
                records.push_last(rec);
            } else {
                records.push(&rec).map_err(RunError::Records)?;
            }
            if let Some(sig) = stop {
                if i + 1 < report.runs_requested {
                    report.interrupted_by = Some(sig);
                }
                break;
            }
        }
        step("runs", cfg.warmup.saturating_add(records.len() as u32));
    }
    report.runs = records.into_vec().map_err(RunError::Records)?;
    if let (Some(note), Some(why)) = (
        measurer.settle(),
        report.runs.last_mut().and_then(|r| r.why.as_mut()),
    ) {
        why.notes.push(note);
    }
    report.summarize();
    report.warnings.extend(measurer.gpu_warning());
    report.count = measurer.counting().map(|c| {
        let counted: Vec<&crate::count::Counted> =
            report.runs.iter().filter_map(|r| r.counted()).collect();
        crate::count::CountReport::of(c, &counted, profiles)
    });
    report.speed = probes
        .and_then(|s| probe::Speed::of(s.probes()))
        .map(|probes| report::RunSpeed {
            probes,
            before_run: probed_before,
        });
    if let Some(w) = report.speed.as_ref().and_then(|s| s.probes.warning()) {
        report.warnings.push(w);
    }
    Ok(report)
}

/// The report of `cfg`'s runs before the first.
fn no_runs_yet(cfg: &Config) -> RunReport {
    RunReport {
        schema_version: SCHEMA_VERSION,
        command: cfg
            .argv
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        runs_requested: cfg.runs.max(1),
        warmup_runs: 0,
        runs: Vec::new(),
        summary: Vec::new(),
        warnings: Vec::new(),
        interrupted_by: None,
        speed: None,
        count: None,
        why_table: false,
        template: None,
    }
}

/// The signal of a run that was not started ([`RunError::NotStarted`]);
/// any other error stays one.
fn not_started(e: RunError) -> Result<String, RunError> {
    match e {
        RunError::NotStarted { signal } => Ok(signal),
        e => Err(e),
    }
}

struct Ctx<'a> {
    cfg: &'a Config,
    /// `Ok(user_only)` when counters can be opened, else the reason.
    counters: Option<&'a Result<bool, String>>,
    /// The counting source (`--count`).
    count: Option<&'a crate::count::Counting>,
    forwarder: &'a Forwarder,
    /// The session's group (see [`Measurer`]).
    group: &'a RefCell<Option<group::SessionGroup>>,
    gpu: &'a std::cell::RefCell<crate::gpu::Runs>,
    /// Spawn with [`sys::process::spawn_shared`].
    shared: bool,
}

/// Checks once whether hardware counters can be opened, on this process.
fn probe_counters() -> Result<bool, String> {
    let paranoid = procfs::sysctl::read_int(&ProcRoot::default(), "kernel.perf_event_paranoid");
    let user_only = sys::geteuid() != 0 && paranoid.is_some_and(|p| p >= 2);
    match perf::open(perf::HwEvent::Cycles, 0, user_only) {
        Ok(_) => Ok(user_only),
        Err(e) => {
            let why = match e.raw_os_error() {
                Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) | Some(libc::ENODEV) => {
                    "no hardware performance counters on this machine (a VM without a virtual PMU?)"
                        .to_string()
                }
                Some(libc::EACCES) | Some(libc::EPERM) => format!(
                    "perf_event_open refused ({e}); perf_event_paranoid is {}: run as root or lower it",
                    paranoid
                        .map(|p| p.to_string())
                        .unwrap_or_else(|| "unknown".into())
                ),
                Some(libc::ENOSYS) => "this kernel has no perf_event_open".to_string(),
                _ => format!("perf_event_open failed: {e}"),
            };
            Err(why)
        }
    }
}

fn evict_all(paths: &[PathBuf], drop_caches: bool) -> Result<ColdReport, RunError> {
    let started = std::time::Instant::now();
    if drop_caches {
        sys::cache::sync_all();
        std::fs::write("/proc/sys/vm/drop_caches", "3").map_err(|e| {
            RunError::DropCaches(format!(
                "cannot write /proc/sys/vm/drop_caches: {e} — it needs root; --cold PATH evicts named files without root"
            ))
        })?;
    }
    let e = if paths.is_empty() {
        bulk::Evictions::default()
    } else {
        bulk::evict(paths)?
    };
    Ok(ColdReport {
        file_count: e.files,
        files_omitted: e.omitted,
        files: e.listed,
        size_bytes: e.size_bytes,
        cached_before_bytes: e.cached_before_bytes,
        cached_after_bytes: e.cached_after_bytes,
        unknown_files: e.unknown_files,
        stayed_files: e.stayed_files,
        dropped_all_caches: drop_caches,
        evict_ns: u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX),
    })
}

fn run_once(ctx: &Ctx) -> Result<RunRecord, RunError> {
    let cfg = ctx.cfg;
    // For messages: control characters and invalid UTF-8 escaped.
    let program = cfg
        .argv
        .first()
        .map(|p| crate::text::path::display(std::path::Path::new(p)))
        .unwrap_or_default();
    let mut counting = match ctx.count {
        Some(c) => Some(c.prepare(&cfg.argv).map_err(RunError::Count)?),
        None => None,
    };
    // Under the simulator the run's time, waits and GPU use are
    // Valgrind's: none is measured, and the command is checked first, so
    // that a missing one is said as for any run, not by Valgrind.
    let simulated = counting.as_ref().is_some_and(|c| c.wrapped().is_some());
    if simulated {
        check_program(&cfg.argv, &program)?;
    }
    let mut tree = cfg.tree.then(tree::Tree::prepare);
    let why_wanted = cfg.why && !simulated;
    let mut session = ctx.group.borrow_mut();
    // The group's totals the run starts from (see `group`), read before
    // anything of the run.
    let before = why_wanted.then(|| stalled_so_far(tree.as_mut(), session.as_mut()));
    let why_before = why_wanted.then(why::before);
    let cgroup_dir = match (&tree, session.as_ref()) {
        (Some(t), _) => t.group().ok().map(group::RunGroup::dir),
        (None, Some(s)) => s.group().ok().map(group::RunGroup::dir),
        (None, None) => None,
    };
    let before_start = Instant::now();
    let Started {
        mut spawned,
        counters,
        counter_error,
    } = start_command(ctx, &program, cgroup_dir, counting.as_mut())?;
    let pid = spawned.pid;
    let gpu_wanted = (cfg.gpu || cfg.gpu_when_present) && !simulated;
    if gpu_wanted {
        // Before the clock started: the window is set to the clock's
        // interval once it is known (`finish_from`).
        ctx.gpu.borrow_mut().begin(pid, before_start);
    }
    let joined = std::mem::replace(&mut spawned.cgroup, sys::process::Joined::NotAsked);
    if let Some(t) = tree.as_mut() {
        if let Err(why) = group::outside(&joined) {
            t.not_joined(why);
        }
        t.started(pid);
    }
    let waited = sys::process::wait_exited_keep(pid);
    // The clock stops as soon as the exit is seen.
    let end_ns = sys::monotonic_ns();
    if let Err(e) = waited {
        ctx.forwarder.detach();
        return Err(RunError::Wait(e));
    }
    let outcome = spawned.outcome();
    // The GPU figures over the clock's own interval (`Instant` reads the
    // same CLOCK_MONOTONIC).
    let gpu = if gpu_wanted {
        ctx.gpu
            .borrow_mut()
            .finish_from(instant_of(outcome.started_ns), instant_of(end_ns))
    } else {
        Default::default()
    };
    if let Some(e) = outcome.exec_error {
        // The child exited with 127 after exec failed: reap it and clean up.
        abandon(ctx, pid, tree);
        return Err(exec_failure(&cfg.argv, program, e));
    }
    let wall_ns = end_ns.saturating_sub(outcome.started_ns);
    let io = less_tallys_io(
        read_io(pid, spawned.io.take()),
        outcome.pre_exec_reads,
        outcome.pre_exec_writes,
    );
    let mut notes = Vec::new();
    let why_raw = why_before.map(|machine| {
        let before = before.unwrap_or_else(|| Err(group::no_group("none was made")));
        let pressures = stalled(tree.as_mut(), session.as_mut(), before, &joined, &mut notes);
        let mut read = why::read(pid, pressures, &machine, wall_ns, cfg.warmup);
        let text = outcome
            .started_sched
            .as_ref()
            .and_then(|(text, len)| std::str::from_utf8(text.get(..*len)?).ok());
        read.raw.before_exec = why::before_exec(text, outcome.started_on_cpu_ns);
        read
    });
    drop(session);
    let counters = counters_of(ctx, counters, counter_error);
    let tree_usage = tree.as_mut().map(|t| t.finish());
    let (exit, usage) = sys::process::wait4(pid).map_err(RunError::Wait)?;
    ctx.forwarder.detach();
    let forwarded_signal = ctx.forwarder.take_received().map(sys::signal_name);
    let escalated_to_sigkill = ctx.forwarder.take_escalated();
    let mut rec = plain_record(
        std::time::Duration::from_nanos(wall_ns),
        exit,
        &usage,
        io,
        forwarded_signal,
        escalated_to_sigkill,
    );
    rec.counters = counters;
    rec.gpu = gpu;
    rec.count = counting.map(crate::count::RunCount::finish);
    rec.tree = match (tree, tree_usage) {
        (Some(t), Some(mut u)) => {
            t.cleanup(&mut u);
            tree::raise_to_command(&mut u, &usage);
            Some(u)
        }
        _ => None,
    };
    rec.why = why_raw.map(|raw| finish_why(raw, &usage, notes));
    Ok(rec)
}

/// After a command whose `exec` failed: reaps it, and removes `--tree`'s
/// group.
fn abandon(ctx: &Ctx, pid: u32, tree: Option<tree::Tree>) {
    let _ = sys::process::wait4(pid);
    ctx.forwarder.detach();
    if let Some(mut t) = tree {
        let mut usage = t.finish();
        t.cleanup(&mut usage);
    }
}

/// The run's counters as read, or why there are none (`None`: not asked
/// for).
fn counters_of(
    ctx: &Ctx,
    counters: Vec<(perf::HwEvent, perf::Counter)>,
    counter_error: Option<String>,
) -> Option<Counters> {
    match ctx.counters {
        None => None,
        Some(Err(reason)) => Some(Counters::Unavailable {
            reason: reason.clone(),
        }),
        Some(Ok(user_only)) => Some(read_counters(counters, counter_error, *user_only)),
    }
}

/// The `Instant` of `ns` on CLOCK_MONOTONIC, which `Instant` reads.
fn instant_of(ns: u64) -> Instant {
    let (now, now_ns) = (Instant::now(), sys::monotonic_ns());
    now.checked_sub(std::time::Duration::from_nanos(now_ns.saturating_sub(ns)))
        .unwrap_or(now)
}

/// The totals of the run's group (`--tree`'s, else the session's) a run
/// starts from, or why there are none.
fn stalled_so_far(
    tree: Option<&mut tree::Tree>,
    session: Option<&mut group::SessionGroup>,
) -> Result<group::Pressures, String> {
    match (tree, session) {
        (Some(t), _) => t
            .group_mut()
            .map(|g| g.pressures())
            .map_err(group::no_group),
        (None, Some(s)) => s.before_run(),
        (None, None) => Err(group::no_group("none was made")),
    }
}

/// What the run's group (`--tree`'s, else the session's) stalled over a
/// run that started from `before`, or why that is not known; processes
/// the run left in the session's group are moved out (said in `notes`).
fn stalled(
    tree: Option<&mut tree::Tree>,
    session: Option<&mut group::SessionGroup>,
    before: Result<group::Pressures, String>,
    joined: &sys::process::Joined,
    notes: &mut Vec<String>,
) -> Result<group::Pressures, String> {
    match (tree, session) {
        (Some(t), _) => match (t.group_mut(), before) {
            (Ok(g), Ok(before)) => group::outside(joined).map(|()| g.pressures().since(&before)),
            (_, Err(why)) => Err(why),
            (Err(why), _) => Err(group::no_group(why)),
        },
        (None, Some(s)) => s.after_run(before, joined, notes),
        (None, None) => before,
    }
}

/// A command forked and let go, and its counters.
struct Started {
    spawned: sys::process::Spawned,
    counters: Vec<(perf::HwEvent, perf::Counter)>,
    counter_error: Option<String>,
}

/// Forks the command into the group of `cgroup_dir` (where the kernel
/// lets it: see [`sys::process::PreExec::cgroup_dir`]), attaches the
/// signal forwarder and the counters while it waits at the gate, and lets
/// it go. Its clock starts in the child, its last step before `exec`
/// ([`sys::process::Spawned::outcome`]): everything here is outside it.
fn start_command(
    ctx: &Ctx,
    program: &str,
    cgroup_dir: Option<std::os::fd::BorrowedFd<'_>>,
    counting: Option<&mut crate::count::RunCount>,
) -> Result<Started, RunError> {
    let cfg = ctx.cfg;
    let wrapped = counting.as_deref().and_then(|c| c.wrapped());
    let argv = wrapped.map_or(cfg.argv.as_slice(), |(argv, _)| argv);
    // The child waits at the gate until tally has attached the counters
    // and opened its /proc/PID/io (in `spawn`, right after the fork).
    // Without the wait, a child that the scheduler ran first could exec
    // and exit before the open, and for an ordinary user the figures would
    // be lost (seen 3 times in 1,000 runs of /bin/true).
    let pre = sys::process::PreExec {
        // With `shared`, the child opens its own /proc/PID/io and nothing
        // holds it.
        gate: !ctx.shared,
        cgroup_dir,
        quiet: cfg.quiet_command,
        stdin_null: cfg.stdin_null,
        stdout_to_stderr: cfg.stdout_to_stderr,
        open_io: true,
        // tally forks and waits on this same thread, which lives until the
        // command has been reaped: the command dies with tally, not with
        // some other thread.
        die_with_parent: true,
        own_group: false,
        env: wrapped.map(|(_, env)| env.to_vec()),
        fixed_layout: wrapped.is_some(),
        cpus: None,
    };
    let spawn = if ctx.shared {
        sys::process::spawn_shared
    } else {
        sys::process::spawn
    };
    let mut spawned = spawn(argv, pre).map_err(|source| RunError::Spawn {
        program: program.to_string(),
        source,
    })?;
    ctx.forwarder.attach(spawned.pid);
    // A signal that came before the command was let go past its gate
    // (sent to it there, before its exec): it is not started.
    if !ctx.shared
        && let Some(sig) = ctx.forwarder.take_received()
    {
        let _ = sys::signals::kill(spawned.pid, libc::SIGKILL);
        let _ = sys::process::wait4(spawned.pid);
        ctx.forwarder.detach();
        return Err(RunError::NotStarted {
            signal: sys::signal_name(sig),
        });
    }
    let mut counters = Vec::new();
    let mut counter_error = None;
    if let Some(Ok(user_only)) = ctx.counters {
        for event in perf::HwEvent::ALL {
            match perf::open(event, spawned.pid, *user_only) {
                Ok(c) => counters.push((event, c)),
                Err(e) => counter_error = Some(format!("perf_event_open({event:?}) failed: {e}")),
            }
        }
    }
    if let Some(c) = counting.filter(|c| c.needs_gate()) {
        c.attach(spawned.pid);
    }
    spawned.release();
    Ok(Started {
        spawned,
        counters,
        counter_error,
    })
}

/// The breakdown from the figures read at the command's exit and
/// `wait4`'s cpu times, with the `notes` of the run's group.
fn finish_why(mut read: why::Read, usage: &sys::process::ChildUsage, notes: Vec<String>) -> Why {
    read.raw.user_ns = nanos(usage.user);
    read.raw.system_ns = nanos(usage.system);
    let mut why = why::assemble_in(&read.raw, &read.context);
    why.notes.extend(notes);
    why
}

fn nanos(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Before a run under the simulator: the error the command's own `exec`
/// would give, for a program that is not there or cannot be executed.
fn check_program(argv: &[OsString], program: &str) -> Result<(), RunError> {
    use std::os::unix::fs::PermissionsExt;
    let Some(first) = argv.first() else {
        return Err(RunError::NotFound {
            program: program.to_string(),
        });
    };
    let Some(path) = exec::resolve(first) else {
        return Err(exec_failure(
            argv,
            program.to_string(),
            io::ErrorKind::NotFound.into(),
        ));
    };
    match std::fs::metadata(&path) {
        Err(e) => Err(exec_failure(argv, program.to_string(), e)),
        Ok(m) if m.is_dir() => Err(exec_failure(
            argv,
            program.to_string(),
            io::Error::from_raw_os_error(libc::EISDIR),
        )),
        Ok(m) if m.permissions().mode() & 0o111 == 0 => Err(exec_failure(
            argv,
            program.to_string(),
            io::Error::from_raw_os_error(libc::EACCES),
        )),
        Ok(_) => Ok(()),
    }
}

/// The profile of a counted run (`sim`), taken out of its record, with
/// its instructions: the records keep figures only.
pub fn take_profile(rec: &mut RunRecord) -> Option<(u64, crate::count::Profile)> {
    let c = match rec.count.as_mut()? {
        crate::count::CountState::Measured(c) => c,
        crate::count::CountState::Unavailable { .. } => return None,
    };
    let p = c.profile.take()?;
    Some((c.instructions.unwrap_or(0), p))
}

/// The error of a command whose `exec` failed with `e`.
pub(crate) fn exec_failure(argv: &[OsString], program: String, e: io::Error) -> RunError {
    match e.kind() {
        io::ErrorKind::NotFound => match argv.first().and_then(|p| exec::missing_interpreter(p)) {
            Some(m) => RunError::InterpreterNotFound {
                program,
                file: crate::text::path::display(&m.file),
                interpreter: crate::text::path::display(&m.interpreter),
                named_by: m.named_by,
            },
            None => RunError::NotFound { program },
        },
        io::ErrorKind::PermissionDenied => RunError::NotExecutable { program, source: e },
        _ if e.raw_os_error() == Some(libc::ENOEXEC) || e.raw_os_error() == Some(libc::EISDIR) => {
            RunError::NotExecutable { program, source: e }
        }
        _ => RunError::Spawn { program, source: e },
    }
}

/// The figures `/proc/PID/io` gave: the counters and where they came
/// from, or why there are none.
pub(crate) type IoFigures = (Option<IoCounters>, Option<IoSource>, Option<String>);

/// `io` less what tally read and wrote in the command's process before
/// `exec` (`(bytes, calls)` each, see
/// [`sys::process::Outcome::pre_exec_reads`] and
/// [`sys::process::Outcome::pre_exec_writes`]), which the kernel counts
/// as the command's.
pub(crate) fn less_tallys_io(
    mut io: IoFigures,
    (read_bytes, reads): (u64, u64),
    (written_bytes, writes): (u64, u64),
) -> IoFigures {
    if let Some(c) = io.0.as_mut() {
        c.read_call_bytes = c.read_call_bytes.saturating_sub(read_bytes);
        c.read_calls = c.read_calls.saturating_sub(reads);
        c.write_call_bytes = c.write_call_bytes.saturating_sub(written_bytes);
        c.write_calls = c.write_calls.saturating_sub(writes);
    }
    io
}

/// The record of a run without counters, `--tree` or eviction.
pub(crate) fn plain_record(
    wall: std::time::Duration,
    exit: Exit,
    usage: &sys::process::ChildUsage,
    io: IoFigures,
    forwarded_signal: Option<String>,
    escalated_to_sigkill: bool,
) -> RunRecord {
    let exit = match exit {
        Exit::Code(code) => ExitInfo {
            code: Some(code),
            signal: None,
            signal_number: None,
            core_dumped: false,
        },
        Exit::Signal {
            signal,
            core_dumped,
        } => ExitInfo {
            code: None,
            signal: Some(sys::signal_name(signal)),
            signal_number: Some(signal),
            core_dumped,
        },
    };
    let (io, io_source, io_unavailable) = io;
    RunRecord {
        wall_ns: u64::try_from(wall.as_nanos()).unwrap_or(u64::MAX),
        user_us: crate::units::micros(usage.user),
        system_us: crate::units::micros(usage.system),
        max_rss_bytes: usage.max_rss_kib.saturating_mul(1024),
        minor_faults: usage.minor_faults,
        major_faults: usage.major_faults,
        voluntary_switches: usage.voluntary_switches,
        involuntary_switches: usage.involuntary_switches,
        block_input_ops: usage.block_input,
        block_output_ops: usage.block_output,
        io,
        io_source,
        io_unavailable,
        counters: None,
        count: None,
        tree: None,
        cold: None,
        why: None,
        exit,
        forwarded_signal,
        escalated_to_sigkill,
        gpu: Default::default(),
    }
}

/// Reads `/proc/PID/io` of the exited, unreaped command: through the
/// descriptor opened at the fork when there is one (see
/// `sys::process::Spawned::io`), else by opening it now, which only root
/// may do once the command has exited.
fn read_io(pid: u32, early: Option<io::Result<File>>) -> IoFigures {
    let mut buf = [0u8; 1024];
    let early = early.map(|opened| match opened {
        Ok(file) => read_whole_at(&file, &mut buf).map_err(|e| (true, e)),
        Err(e) => Err((false, e)),
    });
    let early = match early {
        Some(Ok(text)) => Some(Ok(text.to_owned())),
        Some(Err(e)) => Some(Err(e)),
        None => None,
    };
    io_figures(pid, early, true)
}

/// The figures of a command's `/proc/PID/io`, from what its early
/// descriptor gave (`Err((opened, error))`: the open, or the read after
/// it, failed) and, when `late` and that did not give them, from opening
/// the file now, which only root may do once the command has exited.
pub(crate) fn io_figures(
    pid: u32,
    early: Option<Result<String, (bool, io::Error)>>,
    late: bool,
) -> IoFigures {
    let parsed = |text: &str, source| match procfs::io::parse(text) {
        Some(io) => (Some(io), Some(source), None),
        None => (
            None,
            None,
            Some("/proc/PID/io has no counters on this kernel".to_string()),
        ),
    };
    let early_error = match early {
        Some(Ok(text)) => return parsed(&text, IoSource::ProcPidIoOpenedAtStart),
        Some(Err(e)) => Some(e),
        None => None,
    };
    let late = if late {
        let mut buf = [0u8; 1024];
        let root = ProcRoot::default();
        match procfs::read_small(&root.pid_file(pid, "io"), &mut buf) {
            Ok(text) => return parsed(text, IoSource::ProcPidIoOpenedAtExit),
            Err(e) => e,
        }
    } else {
        // Not tried: the early error stands for it.
        let errno = early_error.as_ref().and_then(|(_, e)| e.raw_os_error());
        io::Error::from_raw_os_error(errno.unwrap_or(libc::EACCES))
    };
    let missing = |e: &io::Error| e.kind() == io::ErrorKind::NotFound;
    let denied = |e: &io::Error| {
        e.kind() == io::ErrorKind::PermissionDenied || e.raw_os_error() == Some(libc::EPERM)
    };
    let why = match &early_error {
        _ if missing(&late) || early_error.as_ref().is_some_and(|(_, e)| missing(e)) => {
            "this kernel has no /proc/PID/io (CONFIG_TASK_IO_ACCOUNTING off)".to_string()
        }
        Some((true, e)) if denied(e) => format!(
            "the command ran with other credentials than tally (a setuid or file-capability program?): reading its /proc/{pid}/io needs root ({e})"
        ),
        Some((false, e)) if denied(&late) => format!(
            "tally could not open /proc/{pid}/io while the command ran ({e}), and once a process has exited only root may"
        ),
        _ => format!("cannot read /proc/{pid}/io: {late}"),
    };
    (None, None, Some(why))
}

/// Reads a small file whole from offset 0 through an open descriptor, as
/// much as `buf` holds; returns the length.
pub(crate) fn read_all_at(file: &File, buf: &mut [u8]) -> io::Result<usize> {
    let mut len = 0;
    while len < buf.len() {
        match file.read_at(&mut buf[len..], len as u64) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(len)
}

/// One small /proc file read whole from offset 0 through an open descriptor.
fn read_whole_at<'a>(file: &File, buf: &'a mut [u8]) -> io::Result<&'a str> {
    let len = read_all_at(file, buf)?;
    std::str::from_utf8(&buf[..len])
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not text"))
}

fn read_counters(
    counters: Vec<(perf::HwEvent, perf::Counter)>,
    error: Option<String>,
    user_only: bool,
) -> Counters {
    if counters.is_empty() {
        return Counters::Unavailable {
            reason: error.unwrap_or_else(|| "no counter could be opened".into()),
        };
    }
    let mut readings = Vec::new();
    for (event, mut c) in counters {
        let name = match event {
            perf::HwEvent::Cycles => "cycles",
            perf::HwEvent::Instructions => "instructions",
            perf::HwEvent::CacheMisses => "cache-misses",
            perf::HwEvent::BranchMisses => "branch-misses",
        };
        if let Ok(v) = c.read() {
            // Scale a multiplexed counter to its enabled time, as perf does.
            let value = if v.time_running_ns > 0 && v.time_running_ns < v.time_enabled_ns {
                (v.value as u128 * v.time_enabled_ns as u128 / v.time_running_ns as u128) as u64
            } else {
                v.value
            };
            readings.push(CounterReading {
                event: name.into(),
                value,
                time_enabled_ns: v.time_enabled_ns,
                time_running_ns: v.time_running_ns,
            });
        }
    }
    Counters::Measured {
        readings,
        user_only,
    }
}

impl crate::failure::Outcome for RunReport {
    /// The command's own exit code, or 128+N for one killed by signal N.
    fn exit_code(&self) -> u8 {
        exit_code(self)
    }
}

/// The exit code tally exits with for a finished run: the command's own,
/// or 128+N for a command killed by signal N. With `-n N`, the first run
/// that failed gives it (a failing run among good ones is not hidden by
/// the last run's 0); when every run succeeded, 0.
pub fn exit_code(report: &RunReport) -> u8 {
    let status = |r: &RunRecord| match (r.exit.code, r.exit.signal_number) {
        (Some(code), _) => (code & 0xff) as u8,
        (None, Some(sig)) => (128 + sig).clamp(0, 255) as u8,
        (None, None) => 125,
    };
    let first_failed = report.runs.iter().map(status).find(|&s| s != 0);
    match report.runs.last() {
        Some(r) => first_failed.unwrap_or_else(|| status(r)),
        // Stopped by a signal before any run finished.
        None => match report.interrupted_by.as_deref() {
            Some("SIGHUP") => 128 + libc::SIGHUP as u8,
            Some("SIGQUIT") => 128 + libc::SIGQUIT as u8,
            Some("SIGTERM") => 128 + libc::SIGTERM as u8,
            _ => 128 + libc::SIGINT as u8,
        },
    }
}
