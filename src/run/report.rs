//! The report of `tally run`: one record per measured run, the summary of
//! repeated runs, and [`FIGURES`], which every format renders from (see
//! `render.rs`).
//!
//! JSON schema (`schema_version` 2), keys carry their unit:
//! - `command`: the argv, lossily decoded; `runs_requested`, `warmup_runs`.
//! - `runs[]`: one [`RunRecord`] per measured run, in order.
//! - `summary`: per figure key, a [`Summary`] (only with two or more runs).
//! - `warnings[]`: outliers, trends, differing exit codes, in words.
//! - `interrupted_by`: the signal name when the user stopped the runs.

use serde::{Deserialize, Serialize};

use crate::pagecache::evict::Evicted;
use crate::procfs::io::IoCounters;
use crate::report::unit::{Quantity, Unit};
use crate::stats::{self, Summary};
use crate::units::thousands_f;

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExitInfo {
    /// The exit code, when the command exited.
    pub code: Option<i32>,
    /// The signal name (`SIGKILL`), when a signal killed it.
    pub signal: Option<String>,
    pub signal_number: Option<i32>,
    pub core_dumped: bool,
}

/// One hardware counter, with its enabled and running times.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterReading {
    pub event: String,
    pub value: u64,
    pub time_enabled_ns: u64,
    pub time_running_ns: u64,
}

/// Hardware counters of one run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "lowercase")]
pub enum Counters {
    Measured {
        readings: Vec<CounterReading>,
        /// Kernel and hypervisor excluded (`perf_event_paranoid` >= 2).
        user_only: bool,
    },
    Unavailable {
        reason: String,
    },
}

/// Whole-tree accounting of one run (`--tree`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TreeUsage {
    /// `cgroup-v2` or `proc-sampling`.
    pub method: String,
    /// The cgroup used, when one was.
    pub cgroup: Option<String>,
    pub user_us: Option<u64>,
    pub system_us: Option<u64>,
    /// Peak of the tree's memory: `memory.peak` of the cgroup, or the
    /// largest sampled sum of resident sets.
    pub peak_memory_bytes: Option<u64>,
    /// `memory.peak` or `sampled every 10 ms`.
    pub memory_method: String,
    pub storage_read_bytes: Option<u64>,
    pub storage_write_bytes: Option<u64>,
    /// Distinct processes seen in the tree (sampling can miss short ones);
    /// absent when no sample was taken or none found a live process.
    pub processes_seen: Option<u64>,
    /// Samples of /proc that found a live process of the tree (absent
    /// when the tree was not sampled: a cgroup with `memory.peak`).
    #[serde(default)]
    pub samples: Option<u64>,
    /// Figures (`user_us`, `system_us`, `peak_memory_bytes`) that came out
    /// below the command's own `wait4` figure and were raised to it: the
    /// tree contains the command, so it never cost less.
    #[serde(default)]
    pub raised_to_command: Vec<String>,
    /// What was left running or could not be measured.
    pub notes: Vec<String>,
}

/// What the shares of a [`Why`] are of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WhyBasis {
    /// The command ran as one task (one process, one thread, no
    /// children): its parts add up to the wall time.
    Wall,
    /// Several tasks ran (threads, or children it waited for): the parts
    /// are task time, what all of them spent together, which can exceed
    /// the wall time.
    TaskTime,
}

/// One text per part of a [`Why`]: where each was read, or why it could
/// not be (a part is named only where there is something to say).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WhyText {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_cpu_user_ns: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_cpu_kernel_ns: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_wait_ns: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io_wait_ns: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_stall_ns: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_wait_ns: Option<String>,
}

/// The machine's load while the command ran, for the advice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MachineLoad {
    /// CPUs online.
    pub cpus: u32,
    /// Time every CPU was busy during the run, the command's included
    /// (`/proc/stat`, in clock ticks made ns).
    pub busy_ns: u64,
    /// CPUs the command may run on (its affinity mask: `taskset`, a
    /// cpuset), when fewer than are online.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_cpus: Option<u32>,
}

/// Where one run's wall time went: on a CPU (user, kernel), waiting for a
/// CPU, waiting for storage, stalled on memory, other waits. A part is
/// `null` when it could not be measured here, with the reason in
/// `unavailable`; `sources` names where each measured part was read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Why {
    /// What the shares are of.
    pub of: WhyBasis,
    /// The whole the shares are of, in ns: the wall time, or the parts'
    /// task time added up.
    pub total_ns: u64,
    /// Time on a CPU in user mode (`ru_utime` of the command and of the
    /// descendants it waited for).
    pub on_cpu_user_ns: Option<u64>,
    /// Time on a CPU in the kernel (`ru_stime`).
    pub on_cpu_kernel_ns: Option<u64>,
    /// Time runnable but waiting for a CPU.
    pub cpu_wait_ns: Option<u64>,
    /// Time waiting for storage.
    pub io_wait_ns: Option<u64>,
    /// Time stalled on memory: reclaim, thrashing, swap-in, compaction.
    pub memory_stall_ns: Option<u64>,
    /// The rest of the wall time: sleeping, reading pipes, waiting for
    /// children or the network.
    pub other_wait_ns: Option<u64>,
    pub sources: WhyText,
    /// Why a part is `null`.
    #[serde(default)]
    pub unavailable: WhyText,
    /// The machine's load during the run, when `/proc/stat` could be read.
    #[serde(default)]
    pub machine: Option<MachineLoad>,
    /// The CPU quota over the command (cgroup `cpu.max`, v1
    /// `cpu.cfs_quota_us`) that throttled it most during the run, else the
    /// tightest; absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_quota: Option<super::quota::CpuQuota>,
    /// One line of advice, when a part dominates.
    #[serde(default)]
    pub advice: Option<String>,
    /// What the figures cover and what they may miss, in words.
    #[serde(default)]
    pub notes: Vec<String>,
}

/// One part of a [`Why`], for the renderers.
pub struct WhyPart<'a> {
    pub key: &'static str,
    /// For people: `waiting for a CPU`.
    pub label: &'static str,
    pub ns: Option<u64>,
    pub source: Option<&'a str>,
    pub unavailable: Option<&'a str>,
}

impl Why {
    /// The waits read back from stored figures (a baseline keeps
    /// `cpu_wait_ns`, `io_wait_ns`, `memory_stall_ns` and `other_wait_ns`
    /// per run, and only those): each present one with its source said.
    pub fn from_stored(
        wall_ns: u64,
        cpu_wait_ns: Option<u64>,
        io_wait_ns: Option<u64>,
        memory_stall_ns: Option<u64>,
        other_wait_ns: Option<u64>,
    ) -> Why {
        let said = |v: Option<u64>| v.map(|_| "stored in the baseline".to_string());
        let not = |v: Option<u64>| {
            v.is_none()
                .then(|| "not in the baseline: it was not measured there".to_string())
        };
        Why {
            of: WhyBasis::Wall,
            total_ns: wall_ns,
            on_cpu_user_ns: None,
            on_cpu_kernel_ns: None,
            cpu_wait_ns,
            io_wait_ns,
            memory_stall_ns,
            other_wait_ns,
            sources: WhyText {
                cpu_wait_ns: said(cpu_wait_ns),
                io_wait_ns: said(io_wait_ns),
                memory_stall_ns: said(memory_stall_ns),
                other_wait_ns: said(other_wait_ns),
                ..WhyText::default()
            },
            unavailable: WhyText {
                on_cpu_user_ns: Some("a baseline keeps user_us, not this part".into()),
                on_cpu_kernel_ns: Some("a baseline keeps system_us, not this part".into()),
                cpu_wait_ns: not(cpu_wait_ns),
                io_wait_ns: not(io_wait_ns),
                memory_stall_ns: not(memory_stall_ns),
                other_wait_ns: not(other_wait_ns),
            },
            machine: None,
            cpu_quota: None,
            advice: None,
            notes: Vec::new(),
        }
    }

    /// The six parts, in the order people read them.
    pub fn parts(&self) -> [WhyPart<'_>; 6] {
        fn part<'a>(
            key: &'static str,
            label: &'static str,
            ns: Option<u64>,
            source: &'a Option<String>,
            why: &'a Option<String>,
        ) -> WhyPart<'a> {
            WhyPart {
                key,
                label,
                ns,
                source: source.as_deref(),
                unavailable: why.as_deref(),
            }
        }
        let (s, u) = (&self.sources, &self.unavailable);
        #[rustfmt::skip]
        let parts = [
            part("on_cpu_user_ns", "on a CPU, user", self.on_cpu_user_ns, &s.on_cpu_user_ns, &u.on_cpu_user_ns),
            part("on_cpu_kernel_ns", "on a CPU, kernel", self.on_cpu_kernel_ns, &s.on_cpu_kernel_ns, &u.on_cpu_kernel_ns),
            part("cpu_wait_ns", "waiting for a CPU", self.cpu_wait_ns, &s.cpu_wait_ns, &u.cpu_wait_ns),
            part("io_wait_ns", "waiting for storage", self.io_wait_ns, &s.io_wait_ns, &u.io_wait_ns),
            part("memory_stall_ns", "stalled on memory", self.memory_stall_ns, &s.memory_stall_ns, &u.memory_stall_ns),
            part("other_wait_ns", "other waits", self.other_wait_ns, &s.other_wait_ns, &u.other_wait_ns),
        ];
        parts
    }
}

/// Page-cache eviction before one run (`--cold`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ColdReport {
    /// Files evicted (every regular file under the `--cold` paths).
    #[serde(default)]
    pub file_count: u64,
    /// At most 100 of them, those whose pages stayed or whose residency
    /// is unknown first (`files_omitted` counts the others). Each file's
    /// `path` is a string, or `{lossy, bytes_hex}` when it is not UTF-8
    /// (see `crate::text::path`).
    pub files: Vec<Evicted>,
    /// Files evicted but not listed in `files`.
    #[serde(default)]
    pub files_omitted: u64,
    pub size_bytes: u64,
    /// Bytes cached before eviction (files with unknown residency left out).
    pub cached_before_bytes: u64,
    /// Bytes still cached after eviction.
    pub cached_after_bytes: u64,
    /// Files whose residency the kernel would not tell.
    pub unknown_files: u64,
    /// Files that kept pages.
    #[serde(default)]
    pub stayed_files: u64,
    /// `/proc/sys/vm/drop_caches` was written (`--drop-caches`).
    pub dropped_all_caches: bool,
    /// How long the eviction took (before the run, not part of it).
    #[serde(default)]
    pub evict_ns: u64,
}

/// What one run of the command cost.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunRecord {
    pub wall_ns: u64,
    pub user_us: u64,
    pub system_us: u64,
    /// `ru_maxrss` of the command (largest single process waited for).
    pub max_rss_bytes: u64,
    pub minor_faults: u64,
    pub major_faults: u64,
    pub voluntary_switches: u64,
    pub involuntary_switches: u64,
    /// `ru_inblock`: block input operations.
    pub block_input_ops: u64,
    /// `ru_oublock`: block output operations.
    pub block_output_ops: u64,
    /// `/proc/PID/io` of the command after it exited, before it was reaped.
    pub io: Option<IoCounters>,
    /// Where `io` was read.
    #[serde(default)]
    pub io_source: Option<IoSource>,
    /// Why `io` is absent.
    pub io_unavailable: Option<String>,
    /// Present with `--counters`.
    pub counters: Option<Counters>,
    /// Present with `--count`: the counted work of the run (instructions
    /// and the rest), or why it could not be counted. A run whose counts
    /// are `sim`'s ran under Valgrind: its `wall_ns`, cpu, memory, fault,
    /// switch and I/O figures are Valgrind's, not the command's, and no
    /// format reports them as the command's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<crate::count::CountState>,
    /// Present with `--tree`.
    pub tree: Option<TreeUsage>,
    /// Present with `--cold` or `--drop-caches`.
    pub cold: Option<ColdReport>,
    pub exit: ExitInfo,
    /// Where the wall time went; absent from records made before it was
    /// measured.
    #[serde(default)]
    pub why: Option<Why>,
    /// A signal tally received and forwarded during this run.
    pub forwarded_signal: Option<String>,
    /// A second SIGINT/SIGTERM came while the command still ran, and
    /// tally sent it SIGKILL.
    #[serde(default)]
    pub escalated_to_sigkill: bool,
    /// GPU figures (`gpu`, `null` with `gpu_reason` when they could not be
    /// measured; absent when not sampled).
    #[serde(flatten, default)]
    pub gpu: crate::gpu::GpuPart,
}

/// Where the I/O figures of a run were read. Both are `/proc/PID/io` of the
/// command once it has exited and before it is reaped, so they cover the
/// command and every descendant it waited for; they differ in when the
/// file was opened, which decides who may read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IoSource {
    /// Opened right after `fork`, read after the exit: works for ordinary
    /// users (an exited process's /proc files become root's, but a
    /// descriptor opened before stays readable by its owner).
    ProcPidIoOpenedAtStart,
    /// Opened and read after the exit: only root can (used when opening
    /// at the start failed).
    ProcPidIoOpenedAtExit,
}

impl IoSource {
    /// For people.
    pub fn describe(self) -> &'static str {
        match self {
            IoSource::ProcPidIoOpenedAtStart => "/proc/PID/io after exit, opened at start",
            IoSource::ProcPidIoOpenedAtExit => "/proc/PID/io after exit",
        }
    }
}

impl RunRecord {
    pub fn cpu_us(&self) -> u64 {
        self.user_us.saturating_add(self.system_us)
    }

    /// The run's counted work, when it was counted.
    pub fn counted(&self) -> Option<&crate::count::Counted> {
        self.count.as_ref()?.measured()
    }

    /// Whether the run was made under the simulator (`--count=sim`): its
    /// figures other than the counted ones are Valgrind's.
    pub fn simulated(&self) -> bool {
        self.count
            .as_ref()
            .is_some_and(crate::count::CountState::simulated)
    }
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    pub schema_version: u32,
    pub command: Vec<String>,
    pub runs_requested: u32,
    pub warmup_runs: u32,
    pub runs: Vec<RunRecord>,
    /// Figure key → summary over the runs; empty with fewer than two runs.
    pub summary: Vec<FigureSummary>,
    pub warnings: Vec<String>,
    pub interrupted_by: Option<String>,
    /// The speed probes made among the runs of `run -n` (none for one run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed: Option<RunSpeed>,
    /// With `--count`: the counting source, where the instructions went
    /// and what the counts may not show.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<crate::count::CountReport>,
    /// People see the breakdown of the wall time as a table with its
    /// sources (`--why`), not two lines.
    #[serde(skip)]
    pub why_table: bool,
    /// People see one line per run made from this template (`-f`, read
    /// by `super::template`; checked when the arguments were).
    #[serde(skip)]
    pub template: Option<String>,
}

/// The speed probes of `run -n` (see [`super::probe`]): the machine's speed
/// while the runs were made, timed outside their clocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSpeed {
    #[serde(flatten)]
    pub probes: crate::speed::Speed,
    /// For each probe, the run (counted from 0) it was made just before.
    pub before_run: Vec<u32>,
}

/// The summary of one figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FigureSummary {
    pub figure: String,
    #[serde(flatten)]
    pub summary: Summary,
}

/// A figure of a run: a typed figure ([`Unit`]) every format scales the
/// same way. JSON and CSV key it as `key` (which ends with the unit's
/// [`Unit::key_suffix`]) in `unit`; Prometheus in the base unit; people read
/// it in `show`.
pub struct Figure {
    pub key: &'static str,
    pub label: &'static str,
    /// The unit the figure is held in (that of the `runs[]` field).
    pub unit: Unit,
    /// The unit people read it in.
    pub show: Unit,
    /// Always shown, and watched for outliers and trends.
    pub headline: bool,
    /// Counted work (`--count`): read from the run's counts, and the only
    /// figures a run under the simulator has (see [`Figure::value`]).
    pub counted: bool,
    get: fn(&RunRecord) -> Option<u64>,
}

impl Figure {
    /// `value` (in [`Figure::unit`]) for people: times in the command
    /// line's unit ([`crate::units::time_ns`]), sizes in [`Figure::show`]
    /// with their unit, counts bare.
    pub fn human(&self, value: f64) -> String {
        if self.unit.base() == Unit::Seconds {
            let ns = Quantity::new(value, self.unit).to(Unit::Nanoseconds).value;
            let mark = if self.tick_sampled() { "~" } else { "" };
            return format!("{mark}{}", crate::units::time_ns(ns));
        }
        let q = Quantity::new(value, self.unit).to(self.show);
        if self.show == Unit::Kibibytes {
            return crate::units::memory_kib(q.value);
        }
        let symbol = match self.show {
            Unit::Bytes => "",
            u => u.symbol(),
        };
        // Joules keep three significant digits below 100 (a short run's
        // energy is a fraction of a joule).
        let number = match q.value.abs() {
            a if self.show == Unit::Joules && a > 0.0 && a < 1.0 => format!("{:.3}", q.value),
            a if self.show == Unit::Joules && a < 10.0 => format!("{:.2}", q.value),
            a if self.show == Unit::Joules && a < 100.0 => format!("{:.1}", q.value),
            _ => thousands_f(q.value),
        };
        format!("{number}{symbol}")
    }
}

impl Figure {
    /// The figure's value in run `r`: `None` where it was not measured,
    /// and for every figure but the counted ones in a run under the
    /// simulator, whose time, memory and I/O are Valgrind's.
    pub fn value(&self, r: &RunRecord) -> Option<u64> {
        if !self.counted && r.simulated() {
            return None;
        }
        (self.get)(r)
    }

    /// Whether run `r` is one this figure is measured in: a counted
    /// figure in runs that were counted, any other in runs that were not
    /// simulated. A figure's samples are taken over these runs.
    pub fn applies_to(&self, r: &RunRecord) -> bool {
        if self.counted {
            r.count.is_some()
        } else {
            !r.simulated()
        }
    }

    /// GPU and counted figures: a table has their columns only where they
    /// were measured, so that a report made without them reads as before
    /// they existed.
    pub fn only_when_measured(&self) -> bool {
        self.key.starts_with("gpu_") || self.counted
    }

    /// Whether a table of `runs` has this figure's column.
    pub fn in_table(&self, runs: &[RunRecord]) -> bool {
        runs.iter().any(|r| self.applies_to(r))
            && (!self.only_when_measured() || runs.iter().any(|r| self.value(r).is_some()))
    }

    /// Whether the kernel splits this figure from the cpu time by
    /// sampling at each clock tick (user and kernel cpu): approximate, to
    /// a tick, and shown with `~` ([`TICK_NOTE`]). Their sum, cpu time,
    /// is measured.
    pub fn tick_sampled(&self) -> bool {
        matches!(self.key, "user_us" | "system_us")
    }
}

/// What `~` before a user or kernel cpu figure means, said once under
/// the table that shows one.
pub const TICK_NOTE: &str = "~ user and kernel cpu: the kernel splits cpu time between them by \
    sampling at each clock tick, so each is approximate (to a tick, often 4 ms); cpu time, \
    their sum, is measured";

/// Every per-run figure, in display order. Adding a figure is one line.
#[rustfmt::skip]
pub const FIGURES: &[Figure] = &[
    Figure { key: "wall_ns", label: "wall time", unit: Unit::Nanoseconds, show: Unit::Microseconds, headline: true, counted: false, get: |r| Some(r.wall_ns) },
    Figure { key: "cpu_us", label: "cpu time", unit: Unit::Microseconds, show: Unit::Microseconds, headline: true, counted: false, get: |r| Some(r.cpu_us()) },
    Figure { key: "user_us", label: "user cpu", unit: Unit::Microseconds, show: Unit::Microseconds, headline: false, counted: false, get: |r| Some(r.user_us) },
    Figure { key: "system_us", label: "kernel cpu", unit: Unit::Microseconds, show: Unit::Microseconds, headline: false, counted: false, get: |r| Some(r.system_us) },
    Figure { key: "max_rss_bytes", label: "peak memory", unit: Unit::Bytes, show: Unit::Kibibytes, headline: true, counted: false, get: |r| Some(r.max_rss_bytes) },
    Figure { key: "minor_faults", label: "minor faults", unit: Unit::Count, show: Unit::Count, headline: false, counted: false, get: |r| Some(r.minor_faults) },
    Figure { key: "major_faults", label: "major faults", unit: Unit::Count, show: Unit::Count, headline: false, counted: false, get: |r| Some(r.major_faults) },
    Figure { key: "voluntary_switches", label: "voluntary switches", unit: Unit::Count, show: Unit::Count, headline: false, counted: false, get: |r| Some(r.voluntary_switches) },
    Figure { key: "involuntary_switches", label: "involuntary switches", unit: Unit::Count, show: Unit::Count, headline: false, counted: false, get: |r| Some(r.involuntary_switches) },
    Figure { key: "block_input_ops", label: "512-byte blocks read", unit: Unit::Count, show: Unit::Count, headline: false, counted: false, get: |r| Some(r.block_input_ops) },
    Figure { key: "block_output_ops", label: "512-byte blocks written", unit: Unit::Count, show: Unit::Count, headline: false, counted: false, get: |r| Some(r.block_output_ops) },
    Figure { key: "storage_read_bytes", label: "storage read bytes", unit: Unit::Bytes, show: Unit::Bytes, headline: false, counted: false, get: |r| r.io.map(|i| i.storage_read_bytes) },
    Figure { key: "storage_write_bytes", label: "storage written bytes", unit: Unit::Bytes, show: Unit::Bytes, headline: false, counted: false, get: |r| r.io.map(|i| i.storage_write_bytes) },
    Figure { key: "read_call_bytes", label: "read() passed bytes", unit: Unit::Bytes, show: Unit::Bytes, headline: false, counted: false, get: |r| r.io.map(|i| i.read_call_bytes) },
    Figure { key: "write_call_bytes", label: "write() passed bytes", unit: Unit::Bytes, show: Unit::Bytes, headline: false, counted: false, get: |r| r.io.map(|i| i.write_call_bytes) },
    Figure { key: "cpu_wait_ns", label: "waiting for a CPU", unit: Unit::Nanoseconds, show: Unit::Microseconds, headline: false, counted: false, get: |r| r.why.as_ref()?.cpu_wait_ns },
    Figure { key: "io_wait_ns", label: "waiting for storage", unit: Unit::Nanoseconds, show: Unit::Microseconds, headline: false, counted: false, get: |r| r.why.as_ref()?.io_wait_ns },
    Figure { key: "memory_stall_ns", label: "stalled on memory", unit: Unit::Nanoseconds, show: Unit::Microseconds, headline: false, counted: false, get: |r| r.why.as_ref()?.memory_stall_ns },
    Figure { key: "other_wait_ns", label: "other waits", unit: Unit::Nanoseconds, show: Unit::Microseconds, headline: false, counted: false, get: |r| r.why.as_ref()?.other_wait_ns },
    Figure { key: "gpu_mem_peak_bytes", label: "GPU memory peak", unit: Unit::Bytes, show: Unit::Mebibytes, headline: false, counted: false, get: |r| r.gpu.gpu.measured()?.gpu_mem_peak_bytes },
    Figure { key: "gpu_busy_ns", label: "GPU busy", unit: Unit::Nanoseconds, show: Unit::Microseconds, headline: false, counted: false, get: |r| r.gpu.gpu.measured()?.gpu_busy_ns },
    Figure { key: "gpu_energy_mj", label: "GPU energy", unit: Unit::Millijoules, show: Unit::Joules, headline: false, counted: false, get: |r| r.gpu.gpu.measured()?.energy_mj() },
    Figure { key: "instructions", label: "instructions", unit: Unit::Count, show: Unit::Count, headline: true, counted: true, get: |r| r.counted()?.instructions },
    Figure { key: "cycles", label: "cycles", unit: Unit::Count, show: Unit::Count, headline: false, counted: true, get: |r| r.counted()?.cycles },
    Figure { key: "estimated_cycles", label: "estimated cycles", unit: Unit::Count, show: Unit::Count, headline: false, counted: true, get: |r| r.counted()?.estimated_cycles },
    Figure { key: "data_reads", label: "data reads", unit: Unit::Count, show: Unit::Count, headline: false, counted: true, get: |r| r.counted()?.data_reads },
    Figure { key: "data_writes", label: "data writes", unit: Unit::Count, show: Unit::Count, headline: false, counted: true, get: |r| r.counted()?.data_writes },
    Figure { key: "l1_misses", label: "L1 misses", unit: Unit::Count, show: Unit::Count, headline: false, counted: true, get: |r| r.counted()?.l1_misses },
    Figure { key: "ll_misses", label: "last-level misses", unit: Unit::Count, show: Unit::Count, headline: false, counted: true, get: |r| r.counted()?.ll_misses },
];

/// The figure's values over the runs it applies to ([`Figure::applies_to`]:
/// counted figures over the counted runs, the others over the runs not
/// simulated), when every one of them has it and there is one.
pub fn samples(fig: &Figure, runs: &[RunRecord]) -> Option<Vec<f64>> {
    let mut n = 0usize;
    let mut v = Vec::new();
    for r in runs.iter().filter(|r| fig.applies_to(r)) {
        n += 1;
        if let Some(x) = fig.value(r) {
            v.push(x as f64);
        }
    }
    (n > 0 && v.len() == n).then_some(v)
}

/// Outliers move a median by more than this fraction before they are
/// reported.
pub const OUTLIERS_MOVE: f64 = 0.01;

/// The warning about `fig`'s outliers among `values` (one per run), when
/// leaving them out moves the median by more than [`OUTLIERS_MOVE`]: which
/// runs, and the median with and without them.
pub fn outlier_warning(fig: &Figure, values: &[f64]) -> Option<String> {
    let moving = stats::outliers_moving_median(values, OUTLIERS_MOVE)?;
    let n = moving.indices.len();
    let mut list: Vec<String> = moving
        .indices
        .iter()
        .take(5)
        .map(|i| {
            format!(
                "{} ({})",
                i + 1,
                fig.human(values.get(*i).copied().unwrap_or(0.0))
            )
        })
        .collect();
    if n > 5 {
        list.push(format!("{} more", n - 5));
    }
    let change = if moving.median != 0.0 {
        format!(
            " ({:+.1}%)",
            (moving.median_without - moving.median) / moving.median * 100.0
        )
    } else {
        String::new()
    };
    Some(format!(
        "{}: {} outlier{} (run{} {}) move the median: {} with them, {} without{change}",
        fig.label,
        n,
        if n == 1 { "" } else { "s" },
        if n == 1 { "" } else { "s" },
        list.join(", "),
        fig.human(moving.median),
        fig.human(moving.median_without),
    ))
}

/// hyperfine's first-run warning, for wall time: the first run slower than
/// every other and by more than half their median (a cache it filled, a
/// start-up cost), with the fix. `None` with fewer than three runs.
fn first_run_warning(fig: &Figure, values: &[f64]) -> Option<String> {
    let (first, rest) = values.split_first()?;
    if fig.key != "wall_ns" || rest.len() < 2 {
        return None;
    }
    let s = stats::summarize(rest)?;
    (*first > s.max && *first > 1.5 * s.median).then(|| {
        format!(
            "{}: the first run took {}, the others {} (median): a cache it filled or a \
             start-up cost; warm-up runs (--warmup 1) leave it out",
            fig.label,
            fig.human(*first),
            fig.human(s.median)
        )
    })
}

/// A figure that rises or falls over the runs (rank correlation `rho`):
/// warm-up runs are suggested only when none were made.
fn trend_warning(fig: &Figure, rho: f64, warmups: u32) -> String {
    let way = if rho > 0.0 { "rises" } else { "falls" };
    match warmups {
        0 => format!(
            "{}: {way} over the runs (rank correlation {rho:.2}); warm-up runs (--warmup) or a quieter machine may help",
            fig.label
        ),
        n => format!(
            "{}: {way} over the runs (rank correlation {rho:.2}) after {}: the machine's load changed while they ran, or the command's work does (a cache it keeps filling)",
            fig.label,
            crate::units::count(u64::from(n), "warm-up run", "warm-up runs")
        ),
    }
}

impl RunReport {
    /// Fills `summary` and `warnings` from `runs`.
    pub fn summarize(&mut self) {
        self.summary.clear();
        for fig in FIGURES {
            // A count is a summary of one run too: it repeats (compare
            // decides counts from one run a side).
            let fewest = if fig.counted { 1 } else { 2 };
            let Some(values) = samples(fig, &self.runs).filter(|v| v.len() >= fewest) else {
                continue;
            };
            if let Some(summary) = stats::summarize(&values) {
                self.summary.push(FigureSummary {
                    figure: fig.key.into(),
                    summary,
                });
            }
            if !fig.headline {
                continue;
            }
            if let Some(w) = outlier_warning(fig, &values) {
                self.warnings.push(w);
            }
            if let Some(w) = first_run_warning(fig, &values) {
                self.warnings.push(w);
            }
            if let Some(rho) = stats::trend(&values) {
                self.warnings
                    .push(trend_warning(fig, rho, self.warmup_runs));
            }
        }
        let mut codes: Vec<String> = self.runs.iter().map(|r| exit_text(&r.exit)).collect();
        codes.sort();
        codes.dedup();
        if codes.len() > 1 {
            self.warnings
                .push(format!("the runs ended differently: {}", codes.join(", ")));
        }
    }

    pub(super) fn summary_of(&self, key: &str) -> Option<&Summary> {
        self.summary
            .iter()
            .find(|f| f.figure == key)
            .map(|f| &f.summary)
    }
}

fn exit_text(exit: &ExitInfo) -> String {
    match (&exit.signal, exit.code) {
        (Some(sig), _) => format!("killed by {sig}"),
        (None, Some(code)) => format!("exit {code}"),
        (None, None) => "unknown".into(),
    }
}

impl RunRecord {
    /// The figures of hyperfine's schema ([`crate::report::hyperfine`]).
    pub fn timed(&self) -> crate::report::hyperfine::TimedRun {
        crate::report::hyperfine::TimedRun {
            wall_ns: self.wall_ns,
            user_us: self.user_us,
            system_us: self.system_us,
            max_rss_bytes: self.max_rss_bytes,
            exit_code: self.exit.code,
        }
    }
}

/// A run of `wall_ns` that exited 0, every other figure 0 and nothing
/// optional measured: what unit tests and stored runs are built from.
impl RunRecord {
    pub(crate) fn bare(wall_ns: u64) -> RunRecord {
        RunRecord {
            wall_ns,
            user_us: 0,
            system_us: 0,
            max_rss_bytes: 0,
            minor_faults: 0,
            major_faults: 0,
            voluntary_switches: 0,
            involuntary_switches: 0,
            block_input_ops: 0,
            block_output_ops: 0,
            io: None,
            io_source: None,
            io_unavailable: Some("test".into()),
            counters: None,
            count: None,
            tree: None,
            cold: None,
            why: None,
            exit: ExitInfo {
                code: Some(0),
                signal: None,
                signal_number: None,
                core_dumped: false,
            },
            forwarded_signal: None,
            escalated_to_sigkill: false,
            gpu: Default::default(),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::report::{Format, Render, Style, render};

    /// A record with every figure set.
    pub(crate) fn record(wall_us: u64, rss_kib: u64) -> RunRecord {
        RunRecord {
            wall_ns: wall_us * 1000 + 417,
            user_us: 800,
            system_us: 200,
            max_rss_bytes: rss_kib * 1024,
            minor_faults: 89,
            major_faults: 1,
            voluntary_switches: 99,
            involuntary_switches: 1,
            block_input_ops: 16,
            block_output_ops: 0,
            io: Some(IoCounters {
                read_call_bytes: 1_234_567,
                write_call_bytes: 56,
                read_calls: 10,
                write_calls: 1,
                storage_read_bytes: 8192,
                storage_write_bytes: 0,
                cancelled_write_bytes: 0,
            }),
            io_source: Some(IoSource::ProcPidIoOpenedAtStart),
            io_unavailable: None,
            counters: Some(Counters::Unavailable {
                reason: "no PMU".into(),
            }),
            why: Some(why(wall_us * 1000 + 417)),
            ..RunRecord::bare(0)
        }
    }

    /// A breakdown of `wall_ns` as one task: 800 µs user, 200 µs kernel,
    /// 100 µs waiting for a CPU, 50 µs for storage, the rest other waits.
    fn why(wall_ns: u64) -> Why {
        let measured = 1_150_000;
        Why {
            of: WhyBasis::Wall,
            total_ns: wall_ns,
            on_cpu_user_ns: Some(800_000),
            on_cpu_kernel_ns: Some(200_000),
            cpu_wait_ns: Some(100_000),
            io_wait_ns: Some(50_000),
            memory_stall_ns: Some(0),
            other_wait_ns: Some(wall_ns.saturating_sub(measured)),
            sources: WhyText {
                on_cpu_user_ns: Some("rusage (ru_utime)".into()),
                on_cpu_kernel_ns: Some("rusage (ru_stime)".into()),
                cpu_wait_ns: Some("schedstat (run_delay of /proc/PID/schedstat)".into()),
                io_wait_ns: Some("PSI io of the run's cgroup (some)".into()),
                memory_stall_ns: Some("PSI memory of the run's cgroup (some)".into()),
                other_wait_ns: Some("the wall time less the parts measured".into()),
            },
            unavailable: WhyText::default(),
            machine: Some(MachineLoad {
                cpus: 2,
                busy_ns: wall_ns,
                allowed_cpus: None,
            }),
            cpu_quota: None,
            advice: None,
            notes: Vec::new(),
        }
    }

    fn report(runs: Vec<RunRecord>) -> RunReport {
        let mut r = RunReport {
            schema_version: crate::report::SCHEMA_VERSION,
            command: vec!["ls".into(), "-l".into()],
            runs_requested: runs.len() as u32,
            warmup_runs: 0,
            runs,
            summary: Vec::new(),
            warnings: Vec::new(),
            interrupted_by: None,
            speed: None,
            count: None,
            why_table: false,
            template: None,
        };
        r.summarize();
        r
    }

    fn rendered(r: &RunReport, format: Format) -> String {
        let mut out = Vec::new();
        render(r, format, Style::default(), &mut out).expect("renders");
        String::from_utf8(out).expect("utf-8")
    }

    /// Regression: with `-n 10 -w 2` a rising wall time said "warm-up runs
    /// (--warmup) … may help" though two were made. They are suggested
    /// only when none were.
    #[test]
    fn a_trend_after_warm_ups_does_not_suggest_warm_ups() {
        let walls = [1000, 1100, 1200, 1300, 1400, 1500, 1600, 1700];
        let runs = || walls.iter().map(|w| record(*w, 1472)).collect::<Vec<_>>();
        let r = report(runs());
        let trend = |r: &RunReport| {
            r.warnings
                .iter()
                .find(|w| w.contains("over the runs"))
                .cloned()
                .unwrap_or_default()
        };
        assert!(
            trend(&r).contains("warm-up runs (--warmup)"),
            "{:?}",
            r.warnings
        );
        let mut r = report(Vec::new());
        r.warmup_runs = 2;
        r.runs = runs();
        r.summarize();
        let said = trend(&r);
        assert!(said.contains("after 2 warm-up runs"), "{said}");
        assert!(!said.contains("--warmup"), "{said}");
    }

    #[test]
    fn repeated_runs_table_fits_a_narrow_terminal_by_leaving_out_min_then_max() {
        let walls = [1000, 1010, 990, 1005, 995, 1002, 9000];
        let r = report(walls.iter().map(|w| record(*w, 1472)).collect());
        let narrow = |width| {
            let mut out = Vec::new();
            let style = Style {
                color: false,
                width: Some(width),
            };
            r.human(&mut out, style).expect("renders");
            String::from_utf8(out).expect("utf-8")
        };
        let text = narrow(60);
        let header = text.lines().nth(1).expect("header");
        assert_eq!(
            header.split_whitespace().collect::<Vec<_>>()[1..],
            ["median", "mean", "±", "stddev"]
        );
        let rows: Vec<&str> = text.lines().skip(1).take(14).collect();
        assert!(rows.iter().all(|l| l.chars().count() <= 60), "{text}");
        assert!(narrow(72).lines().nth(1).expect("header").ends_with("max"));
        assert!(narrow(200).lines().nth(1).expect("header").contains("min"));
    }

    /// Outlier warnings fired whenever the spread was about zero (every
    /// value off the median is then an outlier), so nearly every report
    /// had them; now only outliers that move the median are reported,
    /// with the median with and without them.
    #[test]
    fn outliers_are_reported_only_when_they_move_the_median() {
        let same = report(
            (0..10)
                .map(|i| record(1000 + u64::from(i == 3), 1472))
                .collect(),
        );
        assert!(same.warnings.is_empty(), "{:?}", same.warnings);
        // Eight runs of twenty twice as slow: the median is theirs too.
        let walls: Vec<u64> = (0..12).map(|i| 1000 + 6 * i).chain([2000; 8]).collect();
        let r = report(walls.iter().map(|w| record(*w, 1472)).collect());
        let w = r
            .warnings
            .iter()
            .find(|w| w.contains("outlier"))
            .unwrap_or_else(|| panic!("{:?}", r.warnings));
        assert!(w.contains("8 outliers") && w.contains("without"), "{w}");
    }

    /// A warning naming five outlier runs was one 130-column line: the
    /// human report wraps it under `tally:   ` like every other.
    #[test]
    fn a_long_outlier_warning_ran_past_100_columns() {
        let walls: Vec<u64> = (0..12)
            .map(|i| 1_000_000 + 6_000 * i)
            .chain([2_000_000; 8])
            .collect();
        let r = report(walls.iter().map(|w| record(*w, 1472)).collect());
        let text = rendered(&r, Format::HUMAN);
        assert!(text.contains("8 outliers"), "{text}");
        assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
        assert!(text.lines().any(|l| l.starts_with("tally:   ")), "{text}");
    }

    /// One switch read "1 context switches"; memory reads in KiB, as
    /// every other command's sizes do.
    #[test]
    fn one_context_switch_is_singular_and_memory_is_in_kib() {
        let mut one = record(1000, 1472);
        (one.voluntary_switches, one.involuntary_switches) = (1, 0);
        let text = rendered(&report(vec![one]), Format::HUMAN);
        assert!(
            text.contains("tally: 1 context switch (100% voluntary)"),
            "{text}"
        );
        assert!(text.contains("peak memory 1,472KiB (ru_maxrss)"), "{text}");
    }

    #[test]
    fn one_run_in_every_format() {
        let r = report(vec![record(75_260_133, 8_272_800)]);
        insta::assert_snapshot!("one_run_human", rendered(&r, Format::HUMAN));
        insta::assert_snapshot!("one_run_json", rendered(&r, Format::JSON));
        insta::assert_snapshot!("one_run_csv", rendered(&r, Format::CSV));
        insta::assert_snapshot!("one_run_markdown", rendered(&r, Format::MARKDOWN));
        insta::assert_snapshot!("one_run_prometheus", rendered(&r, Format::PROMETHEUS));
    }

    #[test]
    fn repeated_runs_with_an_outlier_in_every_format() {
        let walls = [1000, 1010, 990, 1005, 995, 1002, 9000];
        let r = report(walls.iter().map(|w| record(*w, 1472)).collect());
        // One straggler does not move the median: no warning to learn to
        // ignore.
        assert!(
            !r.warnings.iter().any(|w| w.contains("outlier")),
            "{:?}",
            r.warnings
        );
        insta::assert_snapshot!("runs_human", rendered(&r, Format::HUMAN));
        insta::assert_snapshot!("runs_csv", rendered(&r, Format::CSV));
        insta::assert_snapshot!("runs_markdown", rendered(&r, Format::MARKDOWN));
        insta::assert_snapshot!("runs_prometheus", rendered(&r, Format::PROMETHEUS));
    }

    #[test]
    fn gpu_energy_reads_in_joules_with_the_digits_it_needs() {
        let energy = FIGURES.iter().find(|f| f.key == "gpu_energy_mj").unwrap();
        assert_eq!(energy.human(412_345.0), "412J");
        assert_eq!(energy.human(22_060.0), "22.1J");
        assert_eq!(energy.human(2_345.0), "2.35J");
        assert_eq!(energy.human(123.0), "0.123J");
        assert_eq!(energy.human(0.0), "0.00J");
        assert_eq!(energy.human(1_234_567.0), "1,235J");
        let mem = FIGURES
            .iter()
            .find(|f| f.key == "gpu_mem_peak_bytes")
            .unwrap();
        assert_eq!(mem.human((2660u64 << 20) as f64), "2,660MiB");
    }

    #[test]
    fn every_figure_has_a_prometheus_family_in_base_units() {
        let mut run = record(1000, 1472);
        run.gpu = crate::gpu::GpuPart::measured(crate::gpu::Gpu::from_stored(
            Some(2 << 30),
            Some(400),
            Some(212_450),
        ));
        run.count = Some(crate::count::CountState::Measured(Box::new(
            crate::count::Counted {
                source: crate::count::Kind::Hw,
                instructions: Some(1_000_000),
                cycles: Some(800_000),
                data_reads: Some(300_000),
                data_writes: Some(100_000),
                l1_misses: Some(1_000),
                ll_misses: Some(100),
                estimated_cycles: Some(1_500_000),
                processes: 1,
                forked_copies: 0,
                tool_version: None,
                time_enabled_ns: Some(1_000),
                time_running_ns: Some(1_000),
                events: Vec::new(),
                refused: Vec::new(),
                profile: None,
            },
        )));
        let r = report(vec![run]);
        let metrics = r.metrics().expect("run has metrics");
        assert_eq!(metrics.len(), FIGURES.len());
        for (f, m) in FIGURES.iter().zip(&metrics) {
            assert!(
                f.key.ends_with(f.unit.key_suffix()),
                "{}: the key names its unit {:?}",
                f.key,
                f.unit
            );
            assert_eq!(f.unit.base(), f.show.base(), "{}", f.key);
            for word in m.name.split('_') {
                assert!(
                    !["us", "ns", "ms", "kb", "mj", "mib"].contains(&word),
                    "{}",
                    m.name
                );
            }
        }
    }

    #[test]
    fn killed_run_says_so() {
        let mut rec = record(10, 1000);
        rec.exit = ExitInfo {
            code: None,
            signal: Some("SIGSEGV".into()),
            signal_number: Some(11),
            core_dumped: true,
        };
        rec.io = None;
        rec.io_source = None;
        rec.io_unavailable = Some("this kernel has no /proc/PID/io".into());
        let text = rendered(&report(vec![rec]), Format::HUMAN);
        assert!(
            text.starts_with("tally: the command was killed by SIGSEGV (core dumped)\n"),
            "{text}"
        );
        assert!(text.contains("tally: storage I/O unavailable: this kernel has no /proc/PID/io\n"));
        assert!(text.lines().all(|l| l.starts_with("tally: ")));
    }
}
