//! The machine a run measured, and how noisy the run was.
//!
//! Everything comes from /proc and /sys (model, kernel, clocksource,
//! governor, THP mode, caches, hypervisor), except the TSC rate (the
//! harness calibration) and the core frequency (a chain of dependent multiplies,
//! three cycles each, timed against the monotonic clock). A value the machine
//! does not expose is `None` with the reason in `unavailable`.

use std::path::Path;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::harness::Harness;
use crate::procfs::{ProcRoot, cpuinfo, kernel_stat, loadavg, meminfo, sysctl};

/// One CPU cache as sysfs describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheInfo {
    pub level: u32,
    /// `Data`, `Instruction` or `Unified`.
    pub kind: String,
    pub size_bytes: u64,
    pub line_bytes: Option<u64>,
    pub shared_cpu_list: Option<String>,
}

/// What the machine is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    pub cpu_model: Option<String>,
    pub logical_cpus: usize,
    pub kernel: Option<String>,
    pub clocksource: Option<String>,
    pub governor: Option<String>,
    pub thp_enabled: Option<String>,
    pub hypervisor: Option<String>,
    pub mem_total_bytes: Option<u64>,
    /// The timer's rate: the TSC frequency where the TSC is the timer.
    pub tsc_hz: Option<f64>,
    /// The core clock, measured by a dependent-multiply chain (the timer
    /// benchmark's median when it ran, else a short probe at start-up).
    pub core_mhz: Option<f64>,
    pub caches: Vec<CacheInfo>,
    /// Whether the address space was laid out without randomisation (as
    /// `setarch -R`; `tally bench` arranges it), so that runs compare.
    #[serde(default)]
    pub layout_fixed: bool,
    /// Why a field is absent, per field name.
    pub unavailable: Vec<String>,
}

fn read_trim(path: impl AsRef<Path>) -> Option<String> {
    crate::input::read_proc_text(path.as_ref())
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// Parses a sysfs cache size (`48K`, `2048K`, `105M`).
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (digits, mult) = match s.chars().last()? {
        'K' | 'k' => (&s[..s.len() - 1], 1u64 << 10),
        'M' | 'm' => (&s[..s.len() - 1], 1 << 20),
        'G' | 'g' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    digits.trim().parse::<u64>().ok()?.checked_mul(mult)
}

/// The caches of CPU 0 under `root` (`/sys/devices/system/cpu/cpu0/cache`).
pub fn read_caches(root: &Path) -> Vec<CacheInfo> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir(root) else {
        return out;
    };
    for entry in dir.flatten() {
        let p = entry.path();
        if !entry.file_name().to_string_lossy().starts_with("index") {
            continue;
        }
        let level = read_trim(p.join("level")).and_then(|s| s.parse().ok());
        let size = read_trim(p.join("size")).and_then(|s| parse_size(&s));
        let (Some(level), Some(size_bytes)) = (level, size) else {
            continue;
        };
        out.push(CacheInfo {
            level,
            kind: read_trim(p.join("type")).unwrap_or_else(|| "Unified".into()),
            size_bytes,
            line_bytes: read_trim(p.join("coherency_line_size")).and_then(|s| s.parse().ok()),
            shared_cpu_list: read_trim(p.join("shared_cpu_list")),
        });
    }
    out.sort_by(|a, b| (a.level, &a.kind).cmp(&(b.level, &b.kind)));
    out
}

/// The data caches (L1d, L2, L3…), smallest first.
pub fn data_caches(caches: &[CacheInfo]) -> Vec<&CacheInfo> {
    caches.iter().filter(|c| c.kind != "Instruction").collect()
}

/// The last-level cache size, bytes.
pub fn llc_bytes(caches: &[CacheInfo]) -> Option<u64> {
    data_caches(caches).iter().map(|c| c.size_bytes).max()
}

fn hypervisor(cpuinfo: &str) -> Option<String> {
    if let Some(t) = read_trim("/sys/hypervisor/type") {
        return Some(t);
    }
    let flagged = cpuinfo::has_flag(cpuinfo, "hypervisor");
    let vendor = read_trim("/sys/class/dmi/id/sys_vendor");
    let product = read_trim("/sys/class/dmi/id/product_name");
    match (flagged, vendor, product) {
        (true, v, p) => Some(format!(
            "yes ({})",
            [v, p].into_iter().flatten().collect::<Vec<_>>().join(" ")
        ))
        .map(|s| s.replace(" ()", "")),
        (false, _, _) => None,
    }
}

/// Core frequency, MHz, from timed dependent-multiply chains (median of `runs`).
pub fn core_mhz_samples(runs: usize, rounds: u64) -> Vec<f64> {
    #[cfg(target_arch = "x86_64")]
    {
        (0..runs)
            .filter_map(|_| {
                let t = Instant::now();
                let done = crate::sys::cpu::mul_chain(std::hint::black_box(rounds));
                let ns = t.elapsed().as_nanos() as f64;
                let cycles = done.saturating_mul(crate::sys::cpu::MUL_CHAIN_CYCLES_PER_ROUND);
                (ns > 0.0).then(|| cycles as f64 / ns * 1000.0)
            })
            .collect()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (runs, rounds, Instant::now());
        Vec::new()
    }
}

impl Machine {
    /// Describes this machine; `tiny` shortens the frequency measurement.
    /// `logical_cpus` is counted before the caller pins itself.
    pub fn describe(h: &Harness, tiny: bool, logical_cpus: usize) -> Machine {
        let proc = ProcRoot::default();
        let cpuinfo = proc.read("cpuinfo").unwrap_or_default();
        let mut unavailable = Vec::new();
        let cpu_model = cpuinfo::model_name(&cpuinfo);
        let governor = read_trim("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
        if governor.is_none() {
            unavailable.push("governor: no cpufreq driver (usual in a VM)".to_string());
        }
        let thp_enabled = read_trim("/sys/kernel/mm/transparent_hugepage/enabled").map(|s| {
            s.split_whitespace()
                .find(|w| w.starts_with('['))
                .map_or(s.clone(), |w| w.trim_matches(['[', ']']).to_string())
        });
        let mem_total_bytes = proc
            .read("meminfo")
            .ok()
            .and_then(|t| meminfo::bytes(&t, "MemTotal"));
        let tsc_hz = (h.calibration.timer_source != super::harness::TimerSource::Monotonic)
            .then_some(h.calibration.timer_hz);
        if tsc_hz.is_none() {
            unavailable.push("tsc_hz: the timer is not the TSC on this machine".to_string());
        }
        let mhz = core_mhz_samples(
            if tiny { 3 } else { 15 },
            if tiny { 10_000 } else { 200_000 },
        );
        // The median of the fastest of each three chains, as the timer
        // benchmark measures it: a chain the scheduler stopped reads slow.
        let best: Vec<f64> = mhz
            .chunks(3)
            .filter_map(|c| c.iter().copied().reduce(f64::max))
            .collect();
        let core_mhz = crate::stats::summarize(&best).map(|s| s.median);
        if core_mhz.is_none() {
            unavailable
                .push("core_mhz: the multiply-chain probe exists for x86_64 only".to_string());
        }
        Machine {
            cpu_model,
            logical_cpus,
            kernel: sysctl::read(&proc, "kernel.osrelease"),
            clocksource: read_trim(
                "/sys/devices/system/clocksource/clocksource0/current_clocksource",
            ),
            governor,
            thp_enabled,
            hypervisor: hypervisor(&cpuinfo),
            mem_total_bytes,
            tsc_hz,
            core_mhz,
            caches: read_caches(Path::new("/sys/devices/system/cpu/cpu0/cache")),
            layout_fixed: crate::sys::personality::layout_fixed(),
            unavailable,
        }
    }
}

/// How quiet the machine was during the run: what else ran, judged apart
/// from what the benchmarks cause themselves (the context-switch and IPC
/// benchmarks preempt their own measuring thread tens of thousands of
/// times on purpose; kernel threads they wake count as other work).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Noise {
    pub load_average_1m_start: Option<f64>,
    pub load_average_1m_end: Option<f64>,
    /// Share of all CPU time the hypervisor stole during the run.
    pub steal_percent: Option<f64>,
    /// Involuntary switches of the benchmark thread over the whole run.
    pub involuntary_switches: u64,
    /// Involuntary switches over the benchmarks that do not switch by
    /// design (all but those whose own peers preempt the measuring thread).
    #[serde(default)]
    pub involuntary_switches_judged: u64,
    /// The duration of those benchmarks, ms.
    #[serde(default)]
    pub judged_ms: u64,
    /// CPU time of everything but tally and the children it reaped during
    /// the run (/proc/stat busy time less tally's own), ms.
    #[serde(default)]
    pub other_cpu_ms: Option<u64>,
    /// `other_cpu_ms` over the run's wall time: 100 = one CPU kept busy.
    #[serde(default)]
    pub other_cpu_percent: Option<f64>,
    /// Runnable tasks besides tally's thread (`procs_running` of
    /// /proc/stat less one), the mean of readings between benchmarks.
    #[serde(default)]
    pub other_runnable_mean: Option<f64>,
    /// A fixed reference measured between benchmarks; see [`Reference`].
    #[serde(default)]
    pub reference: Option<Reference>,
    /// Whether the figures should be trusted less, and why.
    pub noisy: bool,
    pub reasons: Vec<String>,
}

/// ns per raw `getpid` system call (the median of 5 batches of 200),
/// measured between benchmarks: the same work every time, so what moves
/// it is the machine under tally, not a benchmark. On a VM that is the
/// host: a neighbour on the other hyperthread made it 30% dearer for a
/// second at a time here, with nothing else running in the VM; every
/// figure moves with it, which is what the unstable marks catch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reference {
    pub readings: usize,
    pub min_ns: f64,
    pub median_ns: f64,
    pub max_ns: f64,
    /// (max − min) / min, percent.
    pub variation_percent: f64,
    /// The speed probe ([`crate::speed`], the reference `compare` measures
    /// with its runs) at each reading, in nanoseconds: a baseline's probes
    /// against this run's say whether the machine ran at another speed
    /// (see `super::baseline::gate`). Empty in reports of earlier versions.
    #[serde(default)]
    pub speed_probes_ns: Vec<u64>,
    /// Which work the probes timed (`crate::speed::VERSION`; 1 when
    /// absent): probes of another version are not compared.
    #[serde(default = "crate::speed::first_version")]
    pub speed_probe_version: u32,
}

/// One reading of the reference: ns per raw getpid.
fn reference_ns() -> Option<f64> {
    const CALLS: u32 = 200;
    let v: Vec<f64> = (0..5)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..CALLS {
                std::hint::black_box(crate::sys::cpu::raw_getpid());
            }
            t.elapsed().as_nanos() as f64 / f64::from(CALLS)
        })
        .collect();
    crate::stats::summarize(&v).map(|s| s.median)
}

impl Reference {
    fn of(readings: &[f64], speed_probes_ns: &[u64]) -> Option<Reference> {
        let s = crate::stats::summarize(readings)?;
        (s.min > 0.0).then(|| Reference {
            readings: s.count,
            min_ns: s.min,
            median_ns: s.median,
            max_ns: s.max,
            variation_percent: (s.max - s.min) * 100.0 / s.min,
            speed_probes_ns: speed_probes_ns.to_vec(),
            speed_probe_version: crate::speed::VERSION,
        })
    }
}

impl Noise {
    /// The reference line for people, when it was measured.
    pub fn describe_reference(&self) -> Option<String> {
        let r = self.reference.as_ref()?;
        Some(format!(
            "reference: a raw getpid between benchmarks took {:.0}–{:.0} ns (median {:.0} ns, {} readings, {:.0}% apart); the same work each time, so what moved it moved every figure: the machine under tally (on a VM, the host's other tenants)",
            r.min_ns, r.max_ns, r.median_ns, r.readings, r.variation_percent
        ))
    }

    /// One line for people: `NOISY RUN: reasons`, or what a quiet run saw.
    pub fn describe(&self) -> String {
        if self.noisy {
            return format!("NOISY RUN: {}", self.reasons.join("; "));
        }
        let pct = |v: Option<f64>| v.map_or("unknown".to_string(), |p| format!("{p:.1}%"));
        format!(
            "quiet run: other processes {} of a CPU, steal {}, {} involuntary switches in {:.1} s of benchmarks that do not switch by design ({} in all)",
            pct(self.other_cpu_percent),
            pct(self.steal_percent),
            crate::units::thousands(self.involuntary_switches_judged),
            self.judged_ms as f64 / 1000.0,
            crate::units::thousands(self.involuntary_switches),
        )
    }
}

/// What the machine and tally had done at one instant.
#[derive(Debug, Clone, Copy)]
pub struct Reading {
    at: Instant,
    cpu: Option<kernel_stat::CpuTicks>,
    runnable: Option<u64>,
    /// tally's CPU time and that of the children it reaped, µs.
    own_cpu_us: Option<u64>,
}

fn own_cpu_us() -> Option<u64> {
    let me = crate::sys::process::self_usage().ok()?;
    let kids = crate::sys::process::children_usage().ok()?;
    let us = |d: std::time::Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
    Some(
        us(me.user)
            .saturating_add(us(me.system))
            .saturating_add(us(kids.user))
            .saturating_add(us(kids.system)),
    )
}

impl Reading {
    pub fn now() -> Reading {
        let text = ProcRoot::default().read("stat").unwrap_or_default();
        Reading {
            at: Instant::now(),
            cpu: kernel_stat::parse_cpu(&text),
            runnable: kernel_stat::procs_running(&text),
            own_cpu_us: own_cpu_us(),
        }
    }

    /// CPU time others used between `self` and `later`, ms: the machine's
    /// busy time less tally's own (0 where clock-tick rounding makes it
    /// negative).
    pub fn other_cpu_ms(&self, later: &Reading) -> Option<u64> {
        let hz = crate::sys::clock_ticks_per_sec().max(1);
        let busy_ticks = later.cpu?.busy.saturating_sub(self.cpu?.busy);
        let busy_us = busy_ticks.saturating_mul(1_000_000) / hz;
        let own_us = later.own_cpu_us?.saturating_sub(self.own_cpu_us?);
        Some(busy_us.saturating_sub(own_us) / 1000)
    }
}

/// Involuntary switches of the measuring thread, all and over the
/// benchmarks judged (those that do not switch by design).
#[derive(Debug, Clone, Copy, Default)]
pub struct Switches {
    pub all: u64,
    pub judged: u64,
    pub judged_ms: u64,
}

/// Readings taken through a run.
pub struct NoiseProbe {
    load: Option<f64>,
    start: Reading,
    /// Runnable tasks besides ours at each reading between benchmarks.
    runnable_others: Vec<u64>,
    /// The reference at each reading between benchmarks, ns.
    reference: Vec<f64>,
    /// The speed probe at each reading between benchmarks, ns, made as
    /// `compare`'s are ([`crate::speed::Schedule::probe`]): on the CPU the
    /// benchmarks run on, where `bench` pinned its thread, else on each
    /// CPU it may use in turn.
    speed_probes: crate::speed::Schedule,
}

fn load1(proc: &ProcRoot) -> Option<f64> {
    loadavg::one_minute(&proc.read("loadavg").ok()?)
}

/// Other work above this share of one CPU (on average over the run) makes
/// a run noisy. An idle VM here runs its agents at about 1%.
pub const OTHER_CPU_PERCENT_LIMIT: f64 = 10.0;
/// Stolen time above this share of all CPU time makes a run noisy (an
/// idle VM here loses 0–2%; the medians of many samples shrug that off).
pub const STEAL_PERCENT_LIMIT: f64 = 5.0;
/// More than this many other tasks runnable on average makes a run noisy.
pub const OTHER_RUNNABLE_LIMIT: f64 = 0.5;
/// Involuntary switches per second of the benchmarks judged above this
/// make a run noisy.
pub const SWITCHES_PER_S_LIMIT: f64 = 20.0;

impl NoiseProbe {
    pub fn start() -> NoiseProbe {
        let proc = ProcRoot::default();
        let start = Reading::now();
        NoiseProbe {
            load: load1(&proc),
            runnable_others: start
                .runnable
                .map(|r| r.saturating_sub(1))
                .into_iter()
                .collect(),
            reference: reference_ns().into_iter().collect(),
            speed_probes: {
                let mut probes = crate::speed::Schedule::default();
                probes.probe();
                probes
            },
            start,
        }
    }

    /// A reading between two benchmarks (nothing of ours but this thread
    /// runs), kept for the run-queue mean.
    pub fn reading(&mut self) -> Reading {
        self.reference.extend(reference_ns());
        self.speed_probes.probe();
        let r = Reading::now();
        if let Some(n) = r.runnable {
            self.runnable_others.push(n.saturating_sub(1));
        }
        r
    }

    /// The noise of the run, given the measuring thread's involuntary
    /// switches.
    pub fn finish(mut self, switches: Switches) -> Noise {
        // Probes enough to judge their spread against a baseline's, as
        // `tally compare` makes (a bench of one benchmark reads twice).
        self.speed_probes.top_up(crate::speed::FEWEST);
        let end = Reading::now();
        let load_end = load1(&ProcRoot::default());
        self.judge(&end, load_end, switches)
    }

    /// The verdict from the readings at the start and at the `end`.
    fn judge(self, end: &Reading, load_end: Option<f64>, switches: Switches) -> Noise {
        let steal_percent = match (self.start.cpu, end.cpu) {
            (Some(a), Some(b)) if b.total() > a.total() => Some(
                b.steal.saturating_sub(a.steal) as f64 * 100.0 / (b.total() - a.total()) as f64,
            ),
            _ => None,
        };
        let wall_ms = end.at.duration_since(self.start.at).as_secs_f64() * 1000.0;
        let other_cpu_ms = self.start.other_cpu_ms(end);
        let other_cpu_percent = other_cpu_ms
            .filter(|_| wall_ms > 0.0)
            .map(|ms| ms as f64 * 100.0 / wall_ms);
        let other_runnable_mean = (!self.runnable_others.is_empty()).then(|| {
            self.runnable_others.iter().sum::<u64>() as f64 / self.runnable_others.len() as f64
        });
        let mut reasons = Vec::new();
        if let (Some(p), Some(ms)) = (other_cpu_percent, other_cpu_ms)
            && p > OTHER_CPU_PERCENT_LIMIT
        {
            reasons.push(format!(
                "other processes kept {p:.0}% of a CPU busy ({:.1} s of CPU time in {:.1} s)",
                ms as f64 / 1000.0,
                wall_ms / 1000.0
            ));
        }
        if let Some(s) = steal_percent.filter(|s| *s > STEAL_PERCENT_LIMIT) {
            reasons.push(format!("the hypervisor stole {s:.1}% of CPU time"));
        }
        if let Some(m) = other_runnable_mean.filter(|m| *m > OTHER_RUNNABLE_LIMIT) {
            reasons.push(format!(
                "{m:.1} other tasks runnable on average between benchmarks"
            ));
        }
        let judged_s = switches.judged_ms as f64 / 1000.0;
        if judged_s > 0.0 && switches.judged as f64 / judged_s > SWITCHES_PER_S_LIMIT {
            reasons.push(format!(
                "{} involuntary switches of the benchmark thread in {judged_s:.1} s of benchmarks that do not switch by design (preempted by other work)",
                switches.judged
            ));
        }
        Noise {
            load_average_1m_start: self.load,
            load_average_1m_end: load_end,
            steal_percent,
            involuntary_switches: switches.all,
            involuntary_switches_judged: switches.judged,
            judged_ms: switches.judged_ms,
            other_cpu_ms,
            other_cpu_percent,
            other_runnable_mean,
            reference: Reference::of(&self.reference, self.speed_probes.probes()),
            noisy: !reasons.is_empty(),
            reasons,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run of 20 s on 2 CPUs: tally kept one CPU busy (its own CPU
    /// time, `own_s`), others `other_s`, the hypervisor stole `steal_s`.
    fn run(own_s: u64, other_s: u64, steal_s: u64, runnable: &[u64]) -> (NoiseProbe, Reading) {
        let t0 = Instant::now();
        let hz = crate::sys::clock_ticks_per_sec();
        let start = Reading {
            at: t0,
            cpu: Some(kernel_stat::CpuTicks {
                busy: 1000,
                idle: 5000,
                steal: 10,
            }),
            runnable: Some(1),
            own_cpu_us: Some(0),
        };
        let busy = (own_s + other_s) * hz;
        let end = Reading {
            at: t0 + std::time::Duration::from_secs(20),
            cpu: Some(kernel_stat::CpuTicks {
                busy: 1000 + busy,
                idle: 5000 + (40 - own_s - other_s - steal_s) * hz,
                steal: 10 + steal_s * hz,
            }),
            runnable: Some(1),
            own_cpu_us: Some(own_s * 1_000_000),
        };
        let probe = NoiseProbe {
            load: Some(1.8),
            start,
            runnable_others: runnable.to_vec(),
            reference: vec![160.0, 222.0, 170.0],
            speed_probes: crate::speed::Schedule::made(&[1_000_000, 1_010_000, 990_000]),
        };
        (probe, end)
    }

    /// Regression: three idle `bench --quick` runs were all NOISY, for the
    /// 76,645 involuntary switches the context-switch and IPC benchmarks
    /// cause on purpose (and a load average our own previous run left).
    #[test]
    fn switches_the_benchmarks_cause_do_not_make_an_idle_run_noisy() {
        let (probe, end) = run(20, 0, 0, &[0, 0, 1, 0]);
        let switches = Switches {
            all: 76_645,
            judged: 120,
            judged_ms: 17_000,
        };
        let n = probe.judge(&end, Some(1.9), switches);
        assert!(!n.noisy, "{:?}", n.reasons);
        assert_eq!(n.other_cpu_ms, Some(0));
        assert_eq!(n.involuntary_switches, 76_645);
        assert!(n.describe().starts_with("quiet run:"), "{}", n.describe());
        let r = n.reference.as_ref().unwrap();
        assert_eq!(
            (r.readings, r.min_ns, r.median_ns, r.max_ns),
            (3, 160.0, 170.0, 222.0)
        );
        assert_eq!(r.speed_probes_ns, [1_000_000, 1_010_000, 990_000]);
        assert!(
            n.describe_reference()
                .unwrap()
                .contains("160–222 ns (median 170 ns")
        );
    }

    #[test]
    fn other_work_steal_run_queue_and_preemption_make_a_run_noisy() {
        let quiet = Switches {
            all: 100,
            judged: 10,
            judged_ms: 17_000,
        };
        let (probe, end) = run(20, 6, 0, &[0]);
        let n = probe.judge(&end, None, quiet);
        assert!(n.noisy);
        assert_eq!(n.other_cpu_ms, Some(6000));
        assert!((n.other_cpu_percent.unwrap() - 30.0).abs() < 1e-6);
        assert!(n.reasons[0].starts_with("other processes kept 30% of a CPU busy"));

        let (probe, end) = run(20, 0, 4, &[0]);
        let n = probe.judge(&end, None, quiet);
        assert!(
            n.noisy && n.reasons[0].contains("stole 10.0%"),
            "{:?}",
            n.reasons
        );

        let (probe, end) = run(20, 0, 0, &[1, 1, 0, 2]);
        let n = probe.judge(&end, None, quiet);
        assert!(
            n.noisy && n.reasons[0].contains("runnable"),
            "{:?}",
            n.reasons
        );

        let (probe, end) = run(20, 0, 0, &[0]);
        let preempted = Switches {
            judged: 2000,
            ..quiet
        };
        let n = probe.judge(&end, None, preempted);
        assert!(
            n.noisy && n.reasons[0].contains("involuntary"),
            "{:?}",
            n.reasons
        );
        assert!(n.describe().starts_with("NOISY RUN: "));
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("48K"), Some(48 << 10));
        assert_eq!(parse_size("105M"), Some(105 << 20));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size(""), None);
        assert_eq!(parse_size("K"), None);
        assert_eq!(parse_size("xK"), None);
        assert_eq!(parse_size("99999999999999999999G"), None);
    }

    #[test]
    fn caches_from_a_fake_tree() {
        let d = tempfile::tempdir().unwrap();
        for (i, (lvl, kind, size)) in [
            (1, "Data", "48K"),
            (1, "Instruction", "32K"),
            (2, "Unified", "2048K"),
        ]
        .iter()
        .enumerate()
        {
            let p = d.path().join(format!("index{i}"));
            std::fs::create_dir(&p).unwrap();
            std::fs::write(p.join("level"), format!("{lvl}\n")).unwrap();
            std::fs::write(p.join("type"), format!("{kind}\n")).unwrap();
            std::fs::write(p.join("size"), format!("{size}\n")).unwrap();
        }
        std::fs::create_dir(d.path().join("index9")).unwrap(); // no files: skipped
        let c = read_caches(d.path());
        assert_eq!(c.len(), 3);
        assert_eq!(data_caches(&c).len(), 2);
        assert_eq!(llc_bytes(&c), Some(2048 << 10));
    }
}
