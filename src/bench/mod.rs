//! `tally bench`: measures the machine itself — timer, function calls,
//! syscalls, process and thread creation, context switches, memory latency
//! and bandwidth, page faults, page cache, file reads and readiness APIs.
//!
//! [`harness`] calibrates and samples; [`registry`] lists the benchmarks,
//! one file each; [`execute`] runs the chosen ones into a [`BenchReport`]
//! that every format (and the HTML page) renders. Measurement never prints.

pub mod baseline;
pub mod call;
pub mod ctxswitch;
pub mod events;
pub mod figure;
pub mod filecache;
pub mod fileread;
pub mod harness;
pub mod html;
pub mod machine;
pub mod membw;
pub mod memlat;
pub mod pagefault;
pub mod plausible;
pub mod registry;
pub mod report;
pub mod spawn;
pub mod syscall;
pub mod timer;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

pub use figure::{Figure, Value};
pub use harness::Harness;
pub use report::{BenchReport, BenchResult};

use crate::sys;
use machine::Machine;
use registry::Benchmark;

/// How thorough a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Under a minute: short budgets, small sweeps.
    Quick,
    /// The default: longer budgets, the same sweeps as quick.
    Standard,
    /// Long budgets, full sweeps (memlat to 4× the LLC, files to 1 GiB),
    /// and the heavy benchmarks (filecache).
    Full,
}

impl Mode {
    /// Time for one figure.
    pub fn budget_per_figure(self) -> Duration {
        match self {
            Mode::Quick => Duration::from_millis(50),
            Mode::Standard => Duration::from_millis(100),
            Mode::Full => Duration::from_millis(300),
        }
    }
}

/// What to run and with which limits.
#[derive(Debug, Clone)]
pub struct Config {
    /// Benchmarks by name; empty means every one the mode includes.
    pub names: Vec<String>,
    pub mode: Mode,
    /// Directory for the file benchmarks' scratch files.
    pub dir: PathBuf,
    /// Upper bound on any one memory buffer (memlat, membw), bytes.
    pub max_mem_bytes: u64,
    /// Upper bound on the filecache file, bytes.
    pub max_file_bytes: u64,
    /// Override of the per-figure budget (tests use a few ms).
    pub budget: Option<Duration>,
}

impl Config {
    pub fn new(mode: Mode) -> Config {
        Config {
            names: Vec::new(),
            mode,
            dir: std::env::temp_dir(),
            max_mem_bytes: 1 << 30,
            max_file_bytes: 32 << 30,
            budget: None,
        }
    }

    pub fn budget_per_figure(&self) -> Duration {
        self.budget.unwrap_or_else(|| self.mode.budget_per_figure())
    }

    /// Whether the run uses tiny budgets (tests): sweeps shrink too.
    pub fn tiny(&self) -> bool {
        self.budget_per_figure() < Duration::from_millis(10)
    }
}

/// A failure that stops a whole run (one benchmark failing does not).
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("unknown benchmark {0:?}; `tally bench --list` shows the names")]
    UnknownBenchmark(String),
    #[error(
        "the scratch directory {} is not usable ({source}); pass --dir with a writable directory",
        crate::report::path::display(path)
    )]
    Dir {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// What `execute` reports as it goes.
#[derive(Debug, Clone)]
pub enum Progress {
    /// Before starting: the plan and its expected duration.
    Plan {
        benchmarks: Vec<String>,
        expected: Duration,
    },
    /// A benchmark starts.
    Start {
        name: String,
        index: usize,
        total: usize,
    },
    /// A step inside a benchmark (for long ones).
    Step { name: String, detail: String },
}

/// Callbacks of a run: progress, and what to do when a benchmark hangs.
pub struct Hooks<'a> {
    pub progress: &'a mut dyn FnMut(Progress),
    /// Called from the watchdog thread when a benchmark overran its limit;
    /// expected not to return (the binary reports and exits).
    pub on_hang: fn(&str, Duration),
}

/// What a benchmark sees while it runs.
pub struct Ctx<'a> {
    pub cfg: &'a Config,
    pub h: &'a Harness,
    pub machine: &'a Machine,
    /// The CPU the benchmark thread is pinned to, if pinning worked.
    pub cpu: Option<usize>,
    /// Another CPU for cross-CPU measurements.
    pub other_cpu: Option<usize>,
    /// Every CPU the process may use (to unpin helpers).
    pub allowed_cpus: Vec<usize>,
    progress: &'a mut dyn FnMut(Progress),
    name: &'static str,
}

impl Ctx<'_> {
    /// Reports a step of a long benchmark.
    pub fn step(&mut self, detail: impl Into<String>) {
        (self.progress)(Progress::Step {
            name: self.name.to_string(),
            detail: detail.into(),
        });
    }
}

/// A per-benchmark failure, reported in its result instead of its figures.
#[derive(Debug, thiserror::Error)]
#[error("{what}: {source}")]
pub struct StepError {
    pub what: String,
    #[source]
    pub source: std::io::Error,
}

/// Attaches what was being done to an io error.
pub fn step_err(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> StepError {
    let what = what.into();
    move |source| StepError { what, source }
}

/// The benchmarks a config selects, in registry order.
pub fn select(cfg: &Config) -> Result<Vec<&'static Benchmark>, BenchError> {
    for n in &cfg.names {
        if registry::find(n).is_none() {
            return Err(BenchError::UnknownBenchmark(n.clone()));
        }
    }
    Ok(registry::BENCHMARKS
        .iter()
        .filter(|b| {
            if cfg.names.is_empty() {
                !b.heavy || cfg.mode == Mode::Full
            } else {
                cfg.names.iter().any(|n| n == b.name)
            }
        })
        .collect())
}

/// Runs the selected benchmarks and returns the report.
pub fn execute(cfg: &Config, hooks: Hooks<'_>) -> Result<BenchReport, BenchError> {
    let chosen = select(cfg)?;
    if chosen.iter().any(|b| b.uses_dir) {
        check_dir(&cfg.dir)?;
    }
    let started = Instant::now();
    let expected: Duration = chosen.iter().map(|b| (b.estimate)(cfg)).sum();
    (hooks.progress)(Progress::Plan {
        benchmarks: chosen.iter().map(|b| b.name.to_string()).collect(),
        expected,
    });

    let allowed = sys::cpu::allowed_cpus().unwrap_or_default();
    // Pin to the last allowed CPU (CPU 0 takes more of the interrupts).
    let cpu = allowed.last().copied();
    let pinned = cpu.is_some_and(|c| sys::cpu::pin_to_cpu(c).is_ok());
    let cpu = cpu.filter(|_| pinned);
    let other_cpu = allowed.iter().copied().find(|c| Some(*c) != cpu);
    let priority = match sys::cpu::set_nice(-20) {
        Ok(()) => "nice -20".to_string(),
        Err(e) => format!("unchanged (setpriority: {e})"),
    };

    let noise_start = machine::NoiseProbe::start();
    let budget = harness::Budget::new(cfg.budget_per_figure());
    let calib_span = if cfg.tiny() {
        Duration::from_millis(5)
    } else {
        Duration::from_millis(50)
    };
    let h = Harness::calibrate(harness::Timer::best_source(), calib_span, budget);
    let machine = Machine::describe(&h, cfg.tiny(), allowed.len().max(1));

    let watch = Watchdog::start(hooks.on_hang);
    let mut results = Vec::new();
    let total = chosen.len();
    for (index, b) in chosen.iter().enumerate() {
        (hooks.progress)(Progress::Start {
            name: b.name.to_string(),
            index,
            total,
        });
        let limit = (b.estimate)(cfg) * 10 + Duration::from_secs(60);
        watch.arm(b.name, limit);
        let (_, invol0) = sys::cpu::thread_switches().unwrap_or((0, 0));
        let t0 = Instant::now();
        let mut result = BenchResult::new(b);
        {
            let mut ctx = Ctx {
                cfg,
                h: &h,
                machine: &machine,
                cpu,
                other_cpu,
                allowed_cpus: allowed.clone(),
                progress: &mut *hooks.progress,
                name: b.name,
            };
            if let Err(e) = (b.run)(&mut ctx, &mut result) {
                result.error = Some(e.to_string());
            }
        }
        for f in &mut result.figures {
            plausible::check(f);
        }
        watch.disarm();
        result.duration_ms = u64::try_from(t0.elapsed().as_millis()).unwrap_or(u64::MAX);
        let (_, invol1) = sys::cpu::thread_switches().unwrap_or((0, 0));
        result.involuntary_switches = invol1.saturating_sub(invol0);
        results.push(result);
    }
    let noise = noise_start.finish(&results, machine.logical_cpus);
    let mut machine = machine;
    // The timer benchmark samples the core clock far more than the quick
    // probe at start-up: prefer its median when it ran.
    if let Some(mhz) = results
        .iter()
        .flat_map(|r| &r.figures)
        .find(|f| f.id == "timer.core_mhz")
        .and_then(|f| f.median())
    {
        machine.core_mhz = Some(mhz);
    }
    Ok(BenchReport {
        schema_version: crate::report::SCHEMA_VERSION,
        mode: cfg.mode,
        machine,
        harness: report::HarnessInfo {
            calibration: h.calibration.clone(),
            budget_per_figure_ms: u64::try_from(budget.per_figure.as_millis()).unwrap_or(0),
            warmup_samples: budget.warmup_samples,
            min_samples: budget.min_samples,
            pinned_cpu: cpu,
            priority,
        },
        noise,
        benchmarks: results,
        baseline: None,
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    })
}

fn check_dir(dir: &std::path::Path) -> Result<(), BenchError> {
    unnamed_file(dir)
        .map(|_| ())
        .map_err(|source| BenchError::Dir {
            path: dir.to_path_buf(),
            source,
        })
}

/// A thread that calls `on_hang` when an armed deadline passes.
struct Watchdog {
    state: Arc<Mutex<Armed>>,
}

/// The benchmark being watched, when it started, and its limit.
type Armed = Option<(&'static str, Instant, Duration)>;

impl Watchdog {
    fn start(on_hang: fn(&str, Duration)) -> Watchdog {
        let state: Arc<Mutex<Armed>> = Arc::new(Mutex::new(None));
        let seen = Arc::clone(&state);
        let _ = std::thread::Builder::new()
            .name("tally-watchdog".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(Duration::from_millis(200));
                    if Arc::strong_count(&seen) == 1 {
                        return;
                    }
                    let armed = seen.lock().map(|g| *g).unwrap_or(None);
                    if let Some((name, start, limit)) = armed {
                        if start.elapsed() > limit {
                            on_hang(name, limit);
                            return;
                        }
                    }
                }
            });
        Watchdog { state }
    }

    fn arm(&self, name: &'static str, limit: Duration) {
        if let Ok(mut g) = self.state.lock() {
            *g = Some((name, Instant::now(), limit));
        }
    }

    fn disarm(&self) {
        if let Ok(mut g) = self.state.lock() {
            *g = None;
        }
    }
}

/// A deterministic xorshift generator for shuffles and random offsets (a
/// benchmark needs spread, not cryptography, and the same run twice).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// A value in `0..n` (0 when n is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
        }
    }
}

/// A file with no name under `dir`, for scratch data: `O_TMPFILE`, or
/// where the filesystem refuses that (NFS, some FUSE), a `.tally-bench-*`
/// name removed right after it is created, and armed for removal on a
/// fatal signal for the few instructions it has one. Nothing is left
/// behind on any exit, not even SIGKILL: the space is freed when the file
/// is closed.
pub fn unnamed_file(dir: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut open = std::fs::OpenOptions::new();
    open.read(true).write(true).mode(0o600);
    match open.clone().custom_flags(libc::O_TMPFILE).open(dir) {
        Ok(f) => return Ok(f),
        // Refused by the filesystem (EOPNOTSUPP), or an old kernel that
        // takes the flag for O_DIRECTORY (EISDIR, EINVAL): use a name.
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL)
            ) => {}
        Err(e) => return Err(e),
    }
    named_then_unlinked(dir)
}

/// [`unnamed_file`] where `O_TMPFILE` is refused: a fresh
/// `.tally-bench-*` name, armed for removal on a fatal signal before it
/// exists, removed as soon as the file is open.
fn named_then_unlinked(dir: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut open = std::fs::OpenOptions::new();
    open.read(true).write(true).mode(0o600).create_new(true);
    let mut rng = Rng::new(
        u64::from(std::process::id())
            ^ std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64),
    );
    let mut tries = 0;
    loop {
        let path = dir.join(format!(".tally-bench-{:016x}", rng.next_u64()));
        // Armed before it exists, so a signal at any point removes it.
        let guard = sys::cleanup::Guard::arm(&path).ok();
        match open.open(&path) {
            Ok(f) => {
                let removed = std::fs::remove_file(&path);
                drop(guard);
                removed?;
                return Ok(f);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && tries < 16 => tries += 1,
            Err(e) => return Err(e),
        }
    }
}

/// A scratch file of `bytes` bytes of non-zero pseudo-random data under
/// `dir`, with no name ([`unnamed_file`]): closing it frees it. Written
/// with plain `write` and synced; the caller decides whether it stays
/// cached.
pub fn scratch_file(dir: &std::path::Path, bytes: u64) -> std::io::Result<std::fs::File> {
    use std::io::Write;
    let mut f = unnamed_file(dir)?;
    let mut rng = Rng::new(0x7a11_b3c4 ^ bytes);
    let mut chunk = vec![0u8; 1 << 20];
    let mut left = bytes;
    while left > 0 {
        for w in chunk.chunks_exact_mut(8) {
            w.copy_from_slice(&(rng.next_u64() | 0x0101_0101_0101_0101).to_ne_bytes());
        }
        let n = usize::try_from(left.min(chunk.len() as u64)).unwrap_or(chunk.len());
        f.write_all(chunk.get(..n).unwrap_or(&chunk))?;
        left -= n as u64;
    }
    f.sync_data()?;
    Ok(f)
}

/// Evicts `file` (a scratch file this process wrote, under `dir`) from the
/// page cache and returns the pages still cached (`None` when the kernel
/// will not tell).
pub fn evict(file: &std::fs::File, dir: &std::path::Path) -> std::io::Result<Option<u64>> {
    let size = file.metadata()?.len();
    // Dirty pages cannot be dropped: write them first.
    let _ = sys::cache::fdatasync(file);
    sys::cache::fadvise(file, 0, 0, sys::cache::Advice::DontNeed)?;
    Ok(crate::pagecache::residency(file, dir, size).cached_pages())
}

/// A directory for messages: control characters and invalid UTF-8
/// escaped.
pub fn shown(dir: &std::path::Path) -> String {
    crate::report::path::display(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rng_stays_below_bound() {
        let mut r = Rng::new(0);
        for n in [1u64, 2, 7, 1000] {
            for _ in 0..100 {
                assert!(r.below(n) < n);
            }
        }
        assert_eq!(r.below(0), 0);
    }

    #[test]
    fn scratch_files_have_no_name() {
        let dir = tempfile::tempdir().unwrap();
        let f = scratch_file(dir.path(), 10_000).unwrap();
        assert_eq!(f.metadata().unwrap().len(), 10_000);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let mut pages = None;
        if let Ok(p) = evict(&f, dir.path()) {
            pages = p;
        }
        // tmpfs cannot evict; elsewhere the file leaves the cache.
        if let Some(p) = pages {
            assert!(p <= 3);
        }
    }

    #[test]
    fn named_scratch_files_are_unlinked_once_open() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = named_then_unlinked(dir.path()).unwrap();
        std::io::Write::write_all(&mut f, b"data").unwrap();
        assert_eq!(f.metadata().unwrap().len(), 4);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn unknown_names_are_refused() {
        let mut cfg = Config::new(Mode::Quick);
        cfg.names = vec!["nope".into()];
        assert!(matches!(select(&cfg), Err(BenchError::UnknownBenchmark(_))));
    }

    #[test]
    fn heavy_benchmarks_only_in_full() {
        let quick = select(&Config::new(Mode::Quick)).unwrap();
        let full = select(&Config::new(Mode::Full)).unwrap();
        assert!(quick.iter().all(|b| !b.heavy));
        assert!(full.len() > quick.len());
        assert_eq!(full.len(), registry::BENCHMARKS.len());
    }

    #[test]
    fn naming_a_heavy_benchmark_selects_it() {
        let mut cfg = Config::new(Mode::Quick);
        cfg.names = vec!["filecache".into()];
        assert_eq!(select(&cfg).unwrap().len(), 1);
    }
}
