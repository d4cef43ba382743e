//! The collectors of `tally serve`: what a scrape exports.
//!
//! - mem and cache run on scrape, at most once per `min_interval` (a
//!   scrape within it gets the cached result) and never two at once (one
//!   lock holds the scan);
//! - run runs in its own thread at each check's interval; a scrape
//!   exports the last result;
//! - bench runs lazily: a scrape that finds no result younger than the
//!   bench interval wakes the bench thread and exports the last result
//!   (none before the first run ends); nothing is benchmarked while
//!   nobody scrapes;
//! - self: how long each collector took and its errors, the build
//!   (`tally_build_info`) and `process_start_time_seconds`. The processes
//!   the mem scan skipped are mem's own `tally_mem_skipped_processes`.
//!
//! Every figure is made by the commands' own code: the mem collector's
//! families are `tally mem --format prometheus`'s (the `MemReport`'s
//! metrics), run's are `tally run`'s and bench's `tally bench`'s, with a
//! `check` label added for run.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use super::config::{self, Config};
use crate::mem::privilege::Privilege;
use crate::report::Render;
use crate::report::prometheus::{Metric, MetricKind, Unit};
use crate::text::path::display;

/// The collectors that run on scrape.
pub const ON_SCRAPE: [&str; 2] = ["mem", "cache"];

/// How one collector fared.
#[derive(Debug, Clone, Default)]
struct Stats {
    /// Seconds the last collection took.
    last_duration: f64,
    /// Collections that failed (wholly or in part).
    errors: u64,
    /// Whether the last collection succeeded.
    last_ok: bool,
    runs: u64,
}

/// The shared state of a server's collectors.
pub struct Collectors {
    cfg: Config,
    privilege: Privilege,
    /// The last on-scrape result and when it was made; the lock is held
    /// for the whole scan, so scans never overlap.
    scan: Mutex<Option<(Instant, Arc<Vec<Metric>>)>>,
    /// The last result of each background check (run, bench), by name.
    background: Mutex<BTreeMap<String, Vec<Metric>>>,
    stats: Mutex<BTreeMap<String, Stats>>,
    /// Scrapes answered from the cached result.
    cached_scrapes: Mutex<u64>,
    bench: BenchState,
    /// When this process started (Unix time), if /proc tells.
    started_unix_s: Option<f64>,
    /// The last reason the GPU query failed, said once.
    gpu_failure: Mutex<Option<String>>,
}

/// The lazy bench collector: a scrape sets `wanted` when the last run is
/// older than the interval; the bench thread waits for it.
#[derive(Default)]
struct BenchState {
    wanted: Mutex<bool>,
    wake: Condvar,
    /// When the last run started.
    last: Mutex<Option<Instant>>,
    running: AtomicBool,
}

/// The version, git revision and compiler of this build.
pub fn build_info() -> [(&'static str, &'static str); 3] {
    [
        ("version", env!("CARGO_PKG_VERSION")),
        (
            "revision",
            option_env!("TALLY_GIT_REVISION").unwrap_or("unknown"),
        ),
        (
            "rustc",
            option_env!("TALLY_RUSTC_VERSION").unwrap_or("unknown"),
        ),
    ]
}

/// When this process started, in Unix seconds: its start in clock ticks
/// after boot (/proc/self/stat, field 22) plus the boot time (/proc/stat
/// `btime`).
fn process_start_unix_s() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after_name = stat.get(stat.rfind(')')? + 1..)?;
    let ticks: u64 = after_name.split_whitespace().nth(19)?.parse().ok()?;
    let kernel = std::fs::read_to_string("/proc/stat").ok()?;
    let btime: u64 = kernel
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    let hz = crate::sys::clock_ticks_per_sec().max(1);
    Some(btime as f64 + ticks as f64 / hz as f64)
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding a lock leaves data that is still whole here
    // (plain figures): carry on with it.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Collectors {
    pub fn new(cfg: Config, privilege: Privilege) -> Collectors {
        Collectors {
            cfg,
            privilege,
            scan: Mutex::new(None),
            background: Mutex::new(BTreeMap::new()),
            stats: Mutex::new(BTreeMap::new()),
            cached_scrapes: Mutex::new(0),
            bench: BenchState::default(),
            started_unix_s: process_start_unix_s(),
            gpu_failure: Mutex::new(None),
        }
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    fn record(&self, collector: &str, took: Duration, ok: bool) {
        let mut stats = lock(&self.stats);
        let s = stats.entry(collector.to_string()).or_default();
        s.last_duration = took.as_secs_f64();
        s.runs += 1;
        s.last_ok = ok;
        if !ok {
            s.errors += 1;
        }
    }

    /// The GPU part of a mem scan as a collector of its own (`gpu`), when
    /// nvidia-smi was asked: its time and whether it answered. A failure
    /// is said once, and again only when its reason changes.
    fn record_gpu(&self, gpu: &crate::mem::gpu::GpuPart) {
        let Some(took) = gpu.took else { return };
        let failure = gpu.failure().map(str::to_string);
        self.record("gpu", took, failure.is_none());
        let mut said = lock(&self.gpu_failure);
        if failure.is_some() && *said != failure {
            crate::diag!(
                "tally serve: mem: GPU memory unavailable: {}",
                failure.as_deref().unwrap_or_default()
            );
        }
        *said = failure;
    }

    /// Everything a scrape exports, in exposition order.
    pub fn scrape(&self) -> Vec<Metric> {
        self.want_bench();
        let fresh = self.on_scrape();
        let mut out: Vec<Metric> = fresh.as_ref().clone();
        merge(&mut out, lock(&self.background).values().flatten().cloned());
        out.extend(self.self_metrics());
        out
    }

    /// The mem and cache figures: the cached ones if younger than
    /// `min_interval`, else a new scan (waiting for one under way).
    fn on_scrape(&self) -> Arc<Vec<Metric>> {
        let mut cached = lock(&self.scan);
        if let Some((at, metrics)) = cached.as_ref()
            && at.elapsed() < self.cfg.min_interval
        {
            *lock(&self.cached_scrapes) += 1;
            return Arc::clone(metrics);
        }
        let mut metrics = Vec::new();
        if let Some(mem) = &self.cfg.mem {
            let t0 = Instant::now();
            let got = mem_metrics(mem, self.privilege);
            let ok = got.is_ok();
            match got {
                Ok((m, gpu)) => {
                    metrics.extend(m);
                    self.record_gpu(&gpu);
                }
                Err(e) => crate::diag!("tally serve: mem: {e}"),
            }
            self.record("mem", t0.elapsed(), ok);
        }
        if !self.cfg.cache.is_empty() {
            let t0 = Instant::now();
            let (m, ok) = cache_metrics(&self.cfg.cache);
            metrics.extend(m);
            self.record("cache", t0.elapsed(), ok);
        }
        let metrics = Arc::new(metrics);
        *cached = Some((Instant::now(), Arc::clone(&metrics)));
        metrics
    }

    fn self_metrics(&self) -> Vec<Metric> {
        let stats = lock(&self.stats).clone();
        let label = |name: &str| vec![("collector".to_string(), name.to_string())];
        let mut duration = Metric::gauge(
            "tally_serve_collector_duration",
            Unit::Seconds,
            "How long the collector's last run took.",
        );
        let mut errors = Metric::new(
            "tally_serve_collector_errors",
            Unit::Count,
            MetricKind::Counter,
            "Runs of the collector that failed, wholly or in part.",
        );
        let mut runs = Metric::new(
            "tally_serve_collector_runs",
            Unit::Count,
            MetricKind::Counter,
            "Runs of the collector.",
        );
        let mut success = Metric::gauge(
            "tally_serve_collector_success",
            Unit::Count,
            "1 if the collector's last run succeeded, else 0.",
        );
        for (name, s) in &stats {
            duration.push(label(name), s.last_duration);
            errors.push(label(name), s.errors as f64);
            runs.push(label(name), s.runs as f64);
            success.push(label(name), f64::from(u8::from(s.last_ok)));
        }
        let build = Metric::gauge(
            "tally_build_info",
            Unit::Count,
            "1, labelled with the version, git revision and compiler of this tally.",
        )
        .with(
            build_info()
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            1.0,
        );
        let cached = Metric::new(
            "tally_serve_cached_scrapes",
            Unit::Count,
            MetricKind::Counter,
            "Scrapes answered with the last scan's result (within min_interval of it).",
        )
        .with(Vec::new(), *lock(&self.cached_scrapes) as f64);
        let mut out = vec![duration, errors, runs, success, cached, build];
        if let Some(at) = self.started_unix_s {
            out.push(
                Metric::gauge(
                    "process_start_time",
                    Unit::Seconds,
                    "Start time of the process since unix epoch in seconds.",
                )
                .with(Vec::new(), at),
            );
        }
        out
    }

    /// The run and bench collectors' loop: runs each job when due until
    /// `stop`. `job` runs one job and returns its metrics.
    fn background_loop(
        &self,
        jobs: &[(String, Duration)],
        stop: &AtomicBool,
        job: &mut dyn FnMut(usize) -> (Vec<Metric>, bool),
    ) {
        let mut due: Vec<Instant> = vec![Instant::now(); jobs.len()];
        while !stop.load(Ordering::SeqCst) {
            let now = Instant::now();
            let next = due
                .iter()
                .enumerate()
                .min_by_key(|(_, t)| **t)
                .map(|(i, t)| (i, *t));
            let Some((i, at)) = next else { return };
            if at > now {
                std::thread::sleep((at - now).min(Duration::from_millis(100)));
                continue;
            }
            let Some((name, interval)) = jobs.get(i) else {
                return;
            };
            let t0 = Instant::now();
            let (metrics, ok) = job(i);
            let collector = name.split_once(':').map_or(name.as_str(), |(c, _)| c);
            self.record(collector, t0.elapsed(), ok);
            lock(&self.background).insert(name.clone(), metrics);
            if let Some(d) = due.get_mut(i) {
                *d = t0 + *interval;
            }
        }
    }

    /// Runs the configured checks every interval until `stop`; `watch`
    /// bounds each by its timeout.
    pub fn run_loop(&self, stop: &AtomicBool, watch: &RunWatch) {
        let checks = &self.cfg.run;
        let jobs: Vec<(String, Duration)> = checks
            .iter()
            .map(|c| (format!("run:{}", c.name), c.interval))
            .collect();
        watch.set_thread();
        // Each check's waits added up over its runs, for the counters.
        let mut totals: Vec<WhyTotals> = vec![WhyTotals::default(); checks.len()];
        self.background_loop(
            &jobs,
            stop,
            &mut |i| match (checks.get(i), totals.get_mut(i)) {
                (Some(check), Some(t)) => run_check(check, watch, t),
                _ => (Vec::new(), false),
            },
        );
    }

    /// Asks the bench thread for a run when the last one is older than
    /// the bench interval (or there was none) and none is under way.
    fn want_bench(&self) {
        let Some(bench) = &self.cfg.bench else { return };
        if self.bench.running.load(Ordering::SeqCst) {
            return;
        }
        let due = lock(&self.bench.last).is_none_or(|at| at.elapsed() >= bench.interval);
        if due {
            *lock(&self.bench.wanted) = true;
            self.bench.wake.notify_one();
        }
    }

    /// The bench thread: runs the configured benchmarks each time a
    /// scrape asks (see `want_bench`), until `stop`.
    pub fn bench_loop(&self, stop: &AtomicBool) {
        let Some(bench) = &self.cfg.bench else { return };
        loop {
            let mut wanted = lock(&self.bench.wanted);
            while !*wanted {
                if stop.load(Ordering::SeqCst) {
                    return;
                }
                wanted = self
                    .bench
                    .wake
                    .wait_timeout(wanted, Duration::from_millis(200))
                    .map_or_else(|e| e.into_inner().0, |(g, _)| g);
            }
            *wanted = false;
            self.bench.running.store(true, Ordering::SeqCst);
            drop(wanted);
            let t0 = Instant::now();
            let (metrics, ok) = bench_metrics(bench);
            self.record("bench", t0.elapsed(), ok);
            lock(&self.background).insert("bench:".to_string(), metrics);
            *lock(&self.bench.last) = Some(t0);
            self.bench.running.store(false, Ordering::SeqCst);
        }
    }
}

/// Adds `more` to `out`, joining families of the same name (two checks'
/// `tally_run_wall_seconds` are one family with two samples).
fn merge(out: &mut Vec<Metric>, more: impl Iterator<Item = Metric>) {
    for m in more {
        match out.iter_mut().find(|o| o.name == m.name) {
            Some(o) => o.samples.extend(m.samples),
            None => out.push(m),
        }
    }
}

/// One mem scan as configured: `tally mem`'s metrics (the skipped
/// processes by reason among them, GPU memory per row when nvidia-smi is
/// on PATH), with the rows past `top` summed into one `other` row; and
/// what became of the GPU query.
fn mem_metrics(
    m: &config::Mem,
    privilege: Privilege,
) -> Result<(Vec<Metric>, crate::mem::gpu::GpuPart), crate::mem::MemError> {
    use crate::mem::{self, gpu, group, report};
    let cfg = mem::Config {
        grouping: group::Grouping {
            by: m.by,
            name: m.name,
            split_args: m.split_args,
            sort: group::SortKey::RAM,
            reverse: true,
            top: Some(m.top),
            ..Default::default()
        },
        view: report::View {
            unit: report::Unit::B,
            human_sizes: false,
            total_only: false,
        },
        // Asked when there: a failing query is a failing collector, and
        // no GPU figure is exported.
        gpu: if crate::gpu::on_path("nvidia-smi").is_some() {
            gpu::Want::Asked
        } else {
            gpu::Want::Off
        },
        ..Default::default()
    };
    // A kept privilege stays for the next scan (`Privilege::end_scan`).
    let mut privilege = privilege;
    let report = mem::measure(&cfg, &mut privilege)?;
    let mut metrics = report.metrics().unwrap_or_default();
    let label = match m.by {
        group::GroupBy::User => "user",
        group::GroupBy::Cgroup => "cgroup",
        _ => "program",
    };
    let taken = report.groups.iter().any(|g| g.name == "other");
    add_other(
        &mut metrics,
        label,
        if taken { "other (not in top)" } else { "other" },
    );
    Ok((metrics, report.gpu))
}

/// For every row family `tally_mem_X` that has a total
/// `tally_mem_total_X`, adds the row `label="name"`: the total less the
/// rows shown, i.e. the rows `top` left out.
pub fn add_other(metrics: &mut [Metric], label: &str, name: &str) {
    let totals: BTreeMap<String, f64> = metrics
        .iter()
        .filter_map(|m| {
            let rest = m.name.strip_prefix("tally_mem_total_")?;
            let value = m.samples.first()?.value;
            Some((format!("tally_mem_{rest}"), value))
        })
        .collect();
    for m in metrics.iter_mut() {
        let Some(total) = totals.get(&m.name) else {
            continue;
        };
        let shown: f64 = m.samples.iter().map(|s| s.value).sum();
        m.samples.push(crate::report::prometheus::Sample {
            labels: vec![(label.to_string(), name.to_string())],
            value: (total - shown).max(0.0),
        });
    }
}

/// Residency of each configured path (a directory: every file under it).
fn cache_metrics(paths: &[PathBuf]) -> (Vec<Metric>, bool) {
    use crate::cache::{command, report::Action};
    let gauge = |stem: &str, unit: Unit, help: &str| Metric::gauge(stem, unit, help);
    let mut cached = gauge(
        "tally_cache_path_cached",
        Unit::Bytes,
        "Bytes of the configured path in the page cache (files of unknown residency left out).",
    );
    let mut dirty = gauge(
        "tally_cache_path_dirty",
        Unit::Bytes,
        "Dirty bytes of the configured path in the page cache (where the kernel tells: cachestat).",
    );
    let mut writeback = gauge(
        "tally_cache_path_writeback",
        Unit::Bytes,
        "Bytes of the configured path under writeback (where the kernel tells: cachestat).",
    );
    let mut size = gauge(
        "tally_cache_path_size",
        Unit::Bytes,
        "Size of the configured path (the files under a directory).",
    );
    let mut files = gauge(
        "tally_cache_path_files",
        Unit::Count,
        "Files under the configured path.",
    );
    let mut unknown = gauge(
        "tally_cache_path_unknown_files",
        Unit::Count,
        "Files whose residency the kernel would not tell.",
    );
    let mut ok = true;
    for path in paths {
        let cfg = command::Config {
            action: Action::Status,
            paths: vec![path.clone()],
            recursive: true,
            ..Default::default()
        };
        let label = vec![("path".to_string(), display(path))];
        match command::report_of(&cfg, &mut std::io::empty()) {
            Ok((report, _)) => {
                ok &= report.problems.is_empty();
                let t = &report.total;
                cached.push(label.clone(), t.cached_bytes as f64);
                dirty.push(label.clone(), t.dirty_bytes as f64);
                writeback.push(label.clone(), t.writeback_bytes as f64);
                size.push(label.clone(), t.size_bytes as f64);
                files.push(label.clone(), t.files as f64);
                unknown.push(label, t.unknown_files as f64);
            }
            Err(e) => {
                ok = false;
                crate::diag!("tally serve: cache: {}: {e}", display(path));
            }
        }
    }
    (vec![cached, dirty, writeback, size, files, unknown], ok)
}

/// Where the run collector's commands run, so a command past its timeout
/// (or running at shutdown) can be killed: the children of its thread.
#[derive(Default)]
pub struct RunWatch {
    /// `/proc/self/task/TID/children` of the run thread.
    children: Mutex<Option<PathBuf>>,
    /// When the current command must end.
    deadline: Mutex<Option<Instant>>,
}

impl RunWatch {
    fn set_thread(&self) {
        // /proc/thread-self is `PID/task/TID`.
        if let Ok(link) = std::fs::read_link("/proc/thread-self") {
            *lock(&self.children) = Some(PathBuf::from("/proc").join(link).join("children"));
        }
    }

    fn arm(&self, timeout: Duration) {
        *lock(&self.deadline) = Some(Instant::now() + timeout);
    }

    fn disarm(&self) {
        *lock(&self.deadline) = None;
    }

    /// Kills the running command when it is past its deadline, or when
    /// `now` says so (shutdown). Returns whether it sent a signal.
    pub fn check(&self, now: bool) -> bool {
        let late = lock(&self.deadline).is_some_and(|d| Instant::now() >= d);
        if !(late || now) {
            return false;
        }
        let Some(path) = lock(&self.children).clone() else {
            return false;
        };
        let Ok(list) = crate::input::read_proc_text(&path) else {
            return false;
        };
        let mut sent = false;
        for pid in list
            .split_whitespace()
            .filter_map(|p| p.parse::<u32>().ok())
        {
            // The child is `tally run`; its children are the command,
            // killed so that `tally run` reaps it and reports it killed
            // (and at shutdown the server waits for that). Before it has
            // started the command, `tally run` itself goes.
            let commands = crate::input::read_proc_text(std::path::Path::new(&format!(
                "/proc/{pid}/task/{pid}/children"
            )))
            .unwrap_or_default();
            let mut any = false;
            for c in commands
                .split_whitespace()
                .filter_map(|p| p.parse::<u32>().ok())
            {
                any |= crate::sys::signals::kill(c, libc::SIGKILL).is_ok();
            }
            if !any {
                any |= crate::sys::signals::kill(pid, libc::SIGKILL).is_ok();
            }
            sent |= any;
        }
        sent
    }
}

/// Runs one check as `tally run --quiet-command --format json -- COMMAND`
/// in a process of its own; its figures get a `check` label, plus its
/// exit code, interval and when it ran.
///
/// Its own process, not this one: a forked command starts with a copy of
/// its parent's memory, which the kernel counts into the command's peak
/// (`ru_maxrss`), and the server's memory (its last scans) would be a
/// floor under the peak of every check. A fresh `tally run` is small.
/// Where a check's runs' wall time went, each part added up over the
/// runs that measured it (ns), and whether any did.
#[derive(Debug, Clone, Default)]
pub struct WhyTotals([Option<u64>; 6]);

impl WhyTotals {
    /// Adds a run's parts.
    fn add(&mut self, why: &crate::run::report::Why) {
        for (total, part) in self.0.iter_mut().zip(why.parts()) {
            if let Some(ns) = part.ns {
                *total = Some(total.unwrap_or(0).saturating_add(ns));
            }
        }
    }

    /// One counter per part measured so far, in seconds, labelled with
    /// the check.
    fn metrics(&self, check: &str) -> Vec<Metric> {
        const STEMS: [&str; 6] = [
            "on_cpu_user",
            "on_cpu_kernel",
            "cpu_wait",
            "io_wait",
            "memory_stall",
            "other_wait",
        ];
        self.0
            .iter()
            .zip(STEMS)
            .filter_map(|(total, stem)| {
                let ns = (*total)?;
                Some(
                    Metric::new(
                        &format!("tally_serve_run_{stem}"),
                        Unit::Nanoseconds,
                        crate::report::prometheus::MetricKind::Counter,
                        format!(
                            "Where the check's wall time went: {} over its runs since the server started (see tally run's breakdown).",
                            stem.replace('_', " ")
                        ),
                    )
                    .with(vec![("check".to_string(), check.to_string())], ns as f64),
                )
            })
            .collect()
    }
}

fn run_check(
    check: &config::RunCheck,
    watch: &RunWatch,
    totals: &mut WhyTotals,
) -> (Vec<Metric>, bool) {
    watch.arm(check.timeout);
    let result = run_in_child(&check.command, check.count);
    watch.disarm();
    let label = || vec![("check".to_string(), check.name.clone())];
    let mut metrics = vec![
        Metric::gauge(
            "tally_serve_run_interval",
            Unit::Seconds,
            "Interval of the check.",
        )
        .with(label(), check.interval.as_secs_f64()),
        Metric::gauge(
            "tally_serve_run_last_run_timestamp",
            Unit::Seconds,
            "When the check last ran (Unix time).",
        )
        .with(
            label(),
            SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64()),
        ),
    ];
    let (code, figures, ok) = match result {
        Ok(report) => {
            let code = crate::run::exit_code(&report);
            if let Some(why) = report.runs.last().and_then(|r| r.why.as_ref()) {
                totals.add(why);
            }
            (code, report.metrics(), code == 0)
        }
        Err((why, code)) => {
            crate::diag!("tally serve: run check {}: {why}", check.name);
            (code, None, false)
        }
    };
    metrics.push(
        Metric::gauge(
            "tally_serve_run_exit_code",
            Unit::Count,
            "Exit code of the check's last run (128+N: killed by signal N, as a shell says).",
        )
        .with(label(), f64::from(code)),
    );
    metrics.extend(totals.metrics(&check.name));
    for mut m in figures.unwrap_or_default() {
        for s in &mut m.samples {
            // The command is in the config; the check names it.
            s.labels.retain(|(k, _)| k != "command");
            s.labels
                .insert(0, ("check".to_string(), check.name.clone()));
        }
        metrics.push(m);
    }
    (metrics, ok)
}

/// `tally run`'s report of one run of `command`, measured by a `tally run`
/// process started from this binary; or why not, with the exit code to
/// export (`tally run`'s own: 127 not found, 126 not executable, 125 other;
/// 128+N when that process was killed by signal N).
fn run_in_child(
    command: &[String],
    count: Option<crate::count::Choice>,
) -> Result<crate::run::report::RunReport, (String, u8)> {
    use std::os::unix::process::ExitStatusExt;
    use std::process::{Command, Stdio};
    let exe =
        std::env::current_exe().map_err(|e| (format!("cannot find the tally binary: {e}"), 125))?;
    let out = Command::new(exe)
        .args(["run", "--quiet-command", "--format", "json", "-o", "-"])
        .args(count.map(|c| format!("--count={}", c.as_str())))
        .arg("--")
        .args(command)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| (format!("cannot start tally run: {e}"), 125))?;
    if let Ok(report) = serde_json::from_slice(&out.stdout) {
        return Ok(report);
    }
    let why = String::from_utf8_lossy(&out.stderr)
        .lines()
        .last()
        .unwrap_or("tally run gave no report")
        .to_string();
    let code = match (out.status.code(), out.status.signal()) {
        (Some(c), _) => u8::try_from(c).unwrap_or(125),
        (None, Some(sig)) => 128u8.saturating_add(u8::try_from(sig).unwrap_or(0)),
        (None, None) => 125,
    };
    Err((why, code))
}

/// Runs the configured benchmarks with `tally bench`'s code.
fn bench_metrics(b: &config::Bench) -> (Vec<Metric>, bool) {
    use crate::bench;
    let mut cfg = bench::Config::new(bench::Mode::Quick);
    cfg.names = b.names.clone();
    cfg.on_hang = bench::OnHang {
        message: |name, limit| {
            format!(
                "tally serve: benchmark {name} did not finish within {} s; its figures stay stale\n",
                limit.as_secs()
            )
        },
        then: crate::sys::alarm::Then::Continue,
    };
    match bench::execute(&cfg, &mut crate::progress::Progress::none()) {
        Ok(report) => {
            let ok = report.benchmarks.iter().all(|r| r.error.is_none());
            (report.metrics().unwrap_or_default(), ok)
        }
        Err(e) => {
            crate::diag!("tally serve: bench: {e}");
            (Vec::new(), false)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checks_waits_add_up_into_counters_in_seconds() {
        use crate::run::report::{Why, WhyBasis, WhyText};
        let why = |cpu_wait: Option<u64>| Why {
            of: WhyBasis::Wall,
            total_ns: 10_000_000,
            on_cpu_user_ns: Some(1_000_000),
            on_cpu_kernel_ns: Some(0),
            cpu_wait_ns: cpu_wait,
            io_wait_ns: None,
            memory_stall_ns: None,
            other_wait_ns: Some(2_000_000),
            sources: WhyText::default(),
            unavailable: WhyText::default(),
            machine: None,
            cpu_quota: None,
            advice: None,
            notes: Vec::new(),
        };
        let mut totals = WhyTotals::default();
        totals.add(&why(Some(3_000_000)));
        totals.add(&why(None));
        let metrics = totals.metrics("nightly");
        let get = |name: &str| {
            metrics
                .iter()
                .find(|m| m.name == name)
                .map(|m| (m.kind, m.samples[0].value))
        };
        assert_eq!(
            get("tally_serve_run_cpu_wait_seconds_total"),
            Some((crate::report::MetricKind::Counter, 0.003))
        );
        assert_eq!(
            get("tally_serve_run_other_wait_seconds_total").map(|(_, v)| v),
            Some(0.004)
        );
        // Never measured: no counter, rather than a 0 posing as one.
        assert_eq!(get("tally_serve_run_io_wait_seconds_total"), None);
        assert_eq!(metrics.len(), 4);
    }

    #[test]
    fn other_is_the_total_less_the_rows_shown() {
        let row = |stem: &str, values: &[f64]| {
            let mut m = Metric::gauge(stem, Unit::Bytes, "");
            for (i, v) in values.iter().enumerate() {
                m.push(vec![("program".into(), format!("p{i}"))], *v);
            }
            m
        };
        let mut metrics = vec![
            row("tally_mem_pss", &[10.0, 20.0]),
            Metric::gauge("tally_mem_total_pss", Unit::Bytes, "").with(Vec::new(), 100.0),
            row("tally_mem_skipped", &[1.0]),
        ];
        add_other(&mut metrics, "program", "other");
        let other = metrics[0].samples.last().unwrap();
        assert_eq!(other.labels, vec![("program".into(), "other".into())]);
        assert_eq!(other.value, 70.0);
        assert_eq!(metrics[1].samples.len(), 1);
        assert_eq!(metrics[2].samples.len(), 1);
    }
}
