//! What a benchmark is and what it sees: the types every benchmark file
//! uses to declare itself (name, section, help, plots) and to run. Below
//! the registry and every benchmark; imports none of them.

use std::path::PathBuf;
use std::time::Duration;

use super::harness::Harness;
use super::machine::Machine;
use super::model::{BenchResult, BenchRule, Mode, Section};

/// One benchmark: its name, where it prints, its help line, how to run
/// it and what to plot. Each benchmark file declares one as `BENCH`.
pub struct Benchmark {
    pub name: &'static str,
    pub section: Section,
    pub about: &'static str,
    /// Runs only when named or with `--full`.
    pub heavy: bool,
    /// Writes scratch files under `--dir`.
    pub uses_dir: bool,
    /// Its own peers preempt the measuring thread (a partner process or
    /// thread on the same CPU): its involuntary switches are the
    /// benchmark's doing, not other work's, and the noise verdict leaves
    /// them out.
    pub switches_by_design: bool,
    /// Expected duration under a config (for `--full`'s announcement and
    /// the time limit of [`OnHang`]).
    pub estimate: fn(&Config) -> Duration,
    pub run: fn(&mut Ctx<'_>, &mut BenchResult) -> Result<(), StepError>,
    /// What the HTML page draws of its figures (none: the table only).
    pub plots: &'static [Plot],
}

/// What the HTML page draws of one benchmark: declared beside its code in
/// its [`Benchmark::plots`].
#[derive(Debug, Clone, Copy)]
pub struct Plot {
    /// The heading above the plot; a plot with the same heading as the one
    /// before it shares that heading.
    pub heading: &'static str,
    /// The title inside the plot.
    pub title: &'static str,
    /// The figures drawn: those whose id starts with this (`""`: all).
    pub figures: &'static str,
    pub kind: PlotKind,
}

/// How a plot draws its figures. Values are formatted in the figures' own
/// unit (ns, GB/s, …); plots never show an implausible figure.
#[derive(Debug, Clone, Copy)]
pub enum PlotKind {
    /// One horizontal bar per figure (its median), linear from zero.
    Bars,
    /// One line per figure label through the sweep's points (x, median),
    /// both axes logarithmic.
    Sweep {
        x_label: &'static str,
        y_label: &'static str,
        /// Base of the x axis' ticks (2 for sizes and counts).
        x_base: f64,
        marks: Marks,
    },
}

/// Vertical markers on a sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marks {
    None,
    /// The data cache sizes sysfs reports.
    CacheSizes,
}

impl BenchResult {
    pub fn new(b: &Benchmark) -> BenchResult {
        BenchResult {
            name: b.name.to_string(),
            section: b.section,
            about: b.about.to_string(),
            duration_ms: 0,
            involuntary_switches: 0,
            threads_at_start: None,
            other_cpu_ms: None,
            error: None,
            notes: Vec::new(),
            memlat: None,
            figures: Vec::new(),
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
    /// `--baseline`: an earlier report to compare with.
    pub baseline: Option<PathBuf>,
    /// `--fail-on`: the gate's rules against the baseline (none: no gate).
    pub fail_on: Vec<BenchRule>,
    /// `--strict`: a figure the gate cannot decide fails too.
    pub strict: bool,
    /// What happens when a benchmark overruns its limit.
    pub on_hang: OnHang,
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
            baseline: None,
            fail_on: Vec::new(),
            strict: false,
            on_hang: OnHang::STOP,
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

/// What happens when a benchmark overruns its limit. No thread watches:
/// a second thread would share the process's descriptor table and slow
/// every descriptor lookup the benchmarks time. A timer signal
/// (`crate::sys::alarm`) writes `message(name, limit)`, prepared before the
/// benchmark starts, to stderr, then does `then` (ends the process, or
/// lets the work go on).
#[derive(Debug, Clone, Copy)]
pub struct OnHang {
    pub message: fn(&str, Duration) -> String,
    pub then: crate::sys::alarm::Then,
}

impl OnHang {
    /// `tally bench`'s: the hung benchmark named, the process ended
    /// (exit status 1).
    pub const STOP: OnHang = OnHang {
        message: |name, limit| {
            format!(
                "tally: benchmark {name} did not finish within {} s and was stopped; rerun it \
                 alone (`tally bench {name}`) to see where it hangs\n",
                limit.as_secs()
            )
        },
        then: crate::sys::alarm::Then::Exit(1),
    };
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
    /// Told each step of a long benchmark.
    pub(super) step: &'a mut dyn FnMut(&str),
}

impl Ctx<'_> {
    /// Reports a step of a long benchmark.
    pub fn step(&mut self, detail: impl Into<String>) {
        (self.step)(&detail.into());
    }

    /// The threads a bandwidth benchmark runs with, each with its CPUs:
    /// one, on the benchmark's CPU, then every allowed CPU when there is
    /// more than one (else `out` notes that the all-thread figures are
    /// unavailable).
    pub fn thread_configs(&self, out: &mut BenchResult) -> Vec<(usize, Vec<usize>)> {
        let mut configs = vec![(1, self.cpu.into_iter().collect())];
        let all = self.allowed_cpus.len().max(1);
        if all > 1 {
            configs.push((all, self.allowed_cpus.clone()));
        } else {
            out.notes
                .push("all-thread figures unavailable: one CPU allowed".into());
        }
        configs
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
