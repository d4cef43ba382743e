//! `tally bench`: measures the machine itself — timer, function calls,
//! syscalls, process and thread creation, context switches, memory latency
//! and bandwidth, page faults, page cache, file reads and readiness APIs.
//!
//! [`harness`] calibrates and samples; [`registry`] lists the benchmarks,
//! one file each; [`execute`] runs the chosen ones into a [`BenchReport`]
//! that every format (and the HTML page) renders. Measurement never prints.

pub mod args;
pub mod baseline;
pub mod command;
pub mod figure;
pub mod format;
pub mod harness;
pub mod html;
#[cfg(test)]
pub(crate) mod layering;
pub mod machine;
pub mod model;
pub mod passes;
pub mod plausible;
pub mod report;
pub mod scratch;
pub mod spec;
pub mod staircase;

use std::path::PathBuf;
use std::time::{Duration, Instant};

pub use figure::{Figure, Value};
pub use harness::Harness;
pub use model::{BenchReport, BenchResult, Mode, Section};
pub use scratch::{Rng, evict, scratch_file, shown, unnamed_file};
pub use spec::{Benchmark, Config, Ctx, Marks, OnHang, Plot, PlotKind, StepError, step_err};

use crate::progress::Progress;
use crate::sys;
use machine::Machine;

/// Declares each benchmark's module (its file beside this one) and the
/// [`registry`] of their `BENCH` declarations, in order.
macro_rules! registry {
    ($($name:ident),+ $(,)?) => {
        $(pub mod $name;)+

        /// Every benchmark, in the order they run and print. The CLI's
        /// names, help and `--list`, and the HTML page's plots, come from
        /// here.
        pub mod registry {
            use super::spec::Benchmark;

            pub const BENCHMARKS: &[Benchmark] = &[$(super::$name::BENCH),+];

            /// The benchmark called `name`.
            pub fn find(name: &str) -> Option<&'static Benchmark> {
                BENCHMARKS.iter().find(|b| b.name == name)
            }

            /// Every benchmark name, for argument validation and `--list`.
            pub fn names() -> Vec<&'static str> {
                BENCHMARKS.iter().map(|b| b.name).collect()
            }
        }
    };
}

// The registry: one line per benchmark, in the order they run and print
// (grouped like the sections of the OS benchmarking study: CPU and
// scheduling, memory, file system, then readiness APIs). A new benchmark
// is its file, `src/bench/NAME.rs` with a `pub const BENCH: Benchmark`
// (name, section, help line, plots), and its name on one line here.
registry! {
    timer,
    call,
    syscall,
    ops,
    spawn,
    ctxswitch,
    signal,
    ipc,
    memlat,
    membw,
    stream,
    memsys,
    pagefault,
    mmap,
    filecache,
    fileread,
    fsops,
    filebw,
    events,
}

/// A failure that stops a whole run (one benchmark failing does not).
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("unknown benchmark {0:?}; `tally bench --list` shows the names")]
    UnknownBenchmark(String),
    #[error(
        "the scratch directory {} is not usable ({source}); pass --dir with a writable directory",
        crate::text::path::display(path)
    )]
    Dir {
        path: PathBuf,
        source: std::io::Error,
    },
    /// `--baseline`'s report cannot be used: it names the file and the fix.
    #[error(transparent)]
    Baseline(#[from] baseline::BaselineError),
}

impl crate::failure::Failure for BenchError {
    fn exit_code(&self) -> u8 {
        match self {
            BenchError::Baseline(e) => e.exit_code(),
            _ => 1,
        }
    }
}

impl crate::failure::Outcome for BenchReport {
    /// The gate's status (3: a regression, 4: inconclusive under
    /// `--strict`) when it is not 0; else 1 when a benchmark failed (its
    /// `error` is set), as the help promises; else 0.
    fn exit_code(&self) -> u8 {
        let gate = self
            .baseline
            .as_ref()
            .and_then(|b| b.gate.as_ref())
            .map_or(0, |g| g.exit_status);
        if gate != 0 {
            gate
        } else if self.benchmarks.iter().any(|b| b.error.is_some()) {
            1
        } else {
            0
        }
    }
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

/// Runs the selected benchmarks and returns the report: `--baseline`'s
/// report is read first (a bad one fails before minutes of measuring),
/// then compared with and, with `--fail-on`'s rules, gated. The plan of a
/// long run is said, and each benchmark and its steps are told to
/// `progress` as they start.
pub fn execute(cfg: &Config, progress: &mut Progress) -> Result<BenchReport, BenchError> {
    let old = baseline::read(cfg.baseline.as_deref(), &cfg.fail_on)?;
    let chosen = select(cfg)?;
    if chosen.iter().any(|b| b.uses_dir) {
        check_dir(&cfg.dir)?;
    }
    let started = Instant::now();
    let expected: Duration = chosen.iter().map(|b| (b.estimate)(cfg)).sum();
    if cfg.mode == Mode::Full || expected.as_secs() > 120 {
        let names: Vec<&str> = chosen.iter().map(|b| b.name).collect();
        progress.say(&format_args!(
            "bench: {} benchmarks ({}), expected to take about {} min",
            names.len(),
            names.join(" "),
            expected.as_secs().div_ceil(60)
        ));
    }
    let mut run = Run::start(cfg);
    let results = run.passes(&chosen, progress);
    let mut report = run.report(results, &chosen, started);
    if let Some((path, old)) = old {
        baseline::apply(&mut report, &path, &old, &cfg.fail_on, cfg.strict);
    }
    Ok(report)
}

/// A run under way: the CPU it is pinned to, its priority, the harness
/// calibrated and the machine described, the noise probe watching.
struct Run<'a> {
    cfg: &'a Config,
    allowed: Vec<usize>,
    cpu: Option<usize>,
    other_cpu: Option<usize>,
    priority: String,
    noise: machine::NoiseProbe,
    budget: harness::Budget,
    h: Harness,
    machine: Machine,
    own_threads: u64,
}

impl<'a> Run<'a> {
    /// Pins to the last allowed CPU (CPU 0 takes more of the interrupts),
    /// raises the priority, starts the noise probe and calibrates.
    fn start(cfg: &'a Config) -> Run<'a> {
        let allowed = sys::cpu::allowed_cpus().unwrap_or_default();
        let cpu = allowed.last().copied();
        let pinned = cpu.is_some_and(|c| sys::cpu::pin_to_cpu(c).is_ok());
        let cpu = cpu.filter(|_| pinned);
        let other_cpu = allowed.iter().copied().find(|c| Some(*c) != cpu);
        let priority = match sys::cpu::set_nice(-20) {
            Ok(()) => "nice -20".to_string(),
            Err(e) => format!("unchanged (setpriority: {e})"),
        };
        let noise = machine::NoiseProbe::start();
        // Each pass gets half of a figure's time (see `passes`).
        let budget = harness::Budget::new(cfg.budget_per_figure() / passes::PASSES);
        let calib_span = if cfg.tiny() {
            Duration::from_millis(5)
        } else {
            Duration::from_millis(50)
        };
        let h = Harness::calibrate(harness::Timer::best_source(), calib_span, budget);
        let machine = Machine::describe(&h, cfg.tiny(), allowed.len().max(1));
        Run {
            cfg,
            cpu,
            other_cpu,
            priority,
            noise,
            budget,
            h,
            machine,
            own_threads: threads_now().unwrap_or(1).max(1),
            allowed,
        }
    }

    /// Every benchmark in every pass, the passes merged.
    fn passes(
        &mut self,
        chosen: &[&'static Benchmark],
        progress: &mut Progress,
    ) -> Vec<BenchResult> {
        let total = chosen.len() * passes::PASSES as usize;
        let mut by_pass: Vec<Vec<BenchResult>> = Vec::new();
        for pass in 0..passes::PASSES as usize {
            let mut results = Vec::new();
            for (index, b) in chosen.iter().enumerate() {
                let at = format!("{} ({}/{total})", b.name, pass * chosen.len() + index + 1);
                progress.busy(&format_args!("bench: {at}"), self.cfg.mode == Mode::Full);
                let mut step =
                    |detail: &str| progress.busy(&format_args!("bench: {at}: {detail}"), false);
                results.push(self.one(b, &mut step));
            }
            by_pass.push(results);
        }
        let mut passes_left = by_pass.into_iter();
        let mut results = passes_left.next().unwrap_or_default();
        for later in passes_left {
            results = results
                .into_iter()
                .zip(later)
                .map(|(a, b)| passes::merge(a, b))
                .collect();
        }
        results
    }

    /// One benchmark, under its time limit; its steps told to `step`.
    fn one(&mut self, b: &'static Benchmark, step: &mut dyn FnMut(&str)) -> BenchResult {
        let cfg = self.cfg;
        let mut result = BenchResult::new(b);
        // What earlier benchmarks freed leaves the resident set: a fork
        // copies the page tables of what stays (fork+exit+wait took 4× as
        // long in the second pass, at 12.7 MiB, as in the first, at 4.3
        // MiB).
        sys::shed::release_free_heap();
        // A benchmark before this one may have joined its threads an
        // instant ago: the kernel still counts them while it tears them
        // down, and their share of the descriptor table with them.
        result.threads_at_start = threads_settled(self.own_threads, Duration::from_secs(1));
        let limit = (b.estimate)(cfg) * 10 + Duration::from_secs(60);
        let deadline = sys::alarm::Deadline::arm(
            limit,
            (cfg.on_hang.message)(b.name, limit),
            cfg.on_hang.then,
        );
        if let Err(e) = &deadline {
            result
                .notes
                .push(format!("no time limit: the alarm timer failed ({e})"));
        }
        let before = self.noise.reading();
        let (_, invol0) = sys::cpu::thread_switches().unwrap_or((0, 0));
        let t0 = Instant::now();
        {
            let mut ctx = Ctx {
                cfg,
                h: &self.h,
                machine: &self.machine,
                cpu: self.cpu,
                other_cpu: self.other_cpu,
                allowed_cpus: self.allowed.clone(),
                step,
            };
            if let Err(e) = (b.run)(&mut ctx, &mut result) {
                result.error = Some(e.to_string());
            }
        }
        for f in &mut result.figures {
            plausible::check(f);
        }
        drop(deadline);
        result.duration_ms = u64::try_from(t0.elapsed().as_millis()).unwrap_or(u64::MAX);
        let (_, invol1) = sys::cpu::thread_switches().unwrap_or((0, 0));
        result.involuntary_switches = invol1.saturating_sub(invol0);
        result.other_cpu_ms = before.other_cpu_ms(&self.noise.reading());
        result
    }

    /// The report of `results`, the noise judged over the benchmarks that
    /// do not switch by design.
    fn report(
        self,
        results: Vec<BenchResult>,
        chosen: &[&'static Benchmark],
        started: Instant,
    ) -> BenchReport {
        let cfg = self.cfg;
        let mut switches = machine::Switches::default();
        for (r, b) in results.iter().zip(chosen) {
            switches.all = switches.all.saturating_add(r.involuntary_switches);
            if !b.switches_by_design {
                switches.judged = switches.judged.saturating_add(r.involuntary_switches);
                switches.judged_ms = switches.judged_ms.saturating_add(r.duration_ms);
            }
        }
        let noise = self.noise.finish(switches);
        let mut machine = self.machine;
        // The timer benchmark samples the core clock far more than the
        // quick probe at start-up: prefer its median when it ran.
        if let Some(mhz) = results
            .iter()
            .flat_map(|r| &r.figures)
            .find(|f| f.id == "timer.core_mhz")
            .and_then(|f| f.median())
        {
            machine.core_mhz = Some(mhz);
        }
        // One clock in every line that uses one: the header's, the timer's
        // note and the cycle counts of ops.
        let mut results = results;
        for r in &mut results {
            timer::restate_clock_note(r, machine.core_mhz);
            ops::restate_cycles(r, machine.core_mhz);
        }
        BenchReport {
            schema_version: crate::report::SCHEMA_VERSION,
            mode: cfg.mode,
            machine,
            harness: model::HarnessInfo {
                calibration: self.h.calibration.clone(),
                budget_per_figure_ms: u64::try_from(cfg.budget_per_figure().as_millis())
                    .unwrap_or(0),
                passes: passes::PASSES,
                warmup_samples: self.budget.warmup_samples,
                min_samples: self.budget.min_samples,
                pinned_cpu: self.cpu,
                priority: self.priority,
            },
            noise,
            benchmarks: results,
            baseline: None,
            duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        }
    }
}

fn check_dir(dir: &std::path::Path) -> Result<(), BenchError> {
    unnamed_file(dir)
        .map(|_| ())
        .map_err(|source| BenchError::Dir {
            path: dir.to_path_buf(),
            source,
        })
}

/// The threads of this process now; `None` when /proc does not say.
fn threads_now() -> Option<u64> {
    crate::procfs::ProcRoot::default()
        .read("self/status")
        .ok()
        .and_then(|t| crate::procfs::status::threads(&t))
}

/// The threads of this process, once those an earlier benchmark joined
/// are gone: no more than `before` (the process's own before the run: 1
/// for `tally bench`, more in `tally serve`), waiting at most `patience`.
fn threads_settled(before: u64, patience: Duration) -> Option<u64> {
    let start = Instant::now();
    loop {
        let n = threads_now();
        match n {
            Some(more) if more > before && start.elapsed() < patience => {
                std::thread::sleep(Duration::from_millis(1));
            }
            _ => return n,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_lowercase() {
        let names = registry::names();
        assert_eq!(names.len(), registry::BENCHMARKS.len());
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len());
        assert!(
            names
                .iter()
                .all(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_lowercase()))
        );
    }

    #[test]
    fn sections_are_contiguous() {
        let mut seen: Vec<Section> = Vec::new();
        for b in registry::BENCHMARKS {
            if seen.last() != Some(&b.section) {
                assert!(!seen.contains(&b.section), "{} splits a section", b.name);
                seen.push(b.section);
            }
        }
    }

    #[test]
    fn only_filecache_is_heavy() {
        let heavy: Vec<_> = registry::BENCHMARKS
            .iter()
            .filter(|b| b.heavy)
            .map(|b| b.name)
            .collect();
        assert_eq!(heavy, ["filecache"]);
    }

    #[test]
    fn estimates_are_finite_and_full_is_longer() {
        let quick = Config::new(Mode::Quick);
        let full = Config::new(Mode::Full);
        for b in registry::BENCHMARKS {
            let q = (b.estimate)(&quick);
            let f = (b.estimate)(&full);
            assert!(q > Duration::ZERO, "{}", b.name);
            assert!(f >= q, "{}", b.name);
        }
    }

    #[test]
    fn plots_have_titles_and_share_a_heading_only_in_a_row() {
        for b in registry::BENCHMARKS {
            let mut headings: Vec<&str> = Vec::new();
            for p in b.plots {
                assert!(!p.title.is_empty() && !p.heading.is_empty(), "{}", b.name);
                if headings.last() != Some(&p.heading) {
                    assert!(!headings.contains(&p.heading), "{}", b.name);
                    headings.push(p.heading);
                }
            }
        }
    }

    #[test]
    fn no_import_circles_between_bench_files() {
        let graph = layering::imports("src/bench");
        // The layering this guards, lowest first.
        let uses = |a: &str| graph.iter().find(|g| g.0 == a).unwrap().1.clone();
        assert!(uses("spec").iter().all(|u| u != "mod"));
        assert!(uses("timer").contains(&"spec".to_string()));
        assert!(uses("mod").contains(&"timer".to_string()));
        layering::assert_no_circles(&graph);
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
