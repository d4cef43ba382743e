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
    /// Why a field is absent, per field name.
    pub unavailable: Vec<String>,
}

fn read_trim(path: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(path)
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
        let core_mhz = crate::stats::summarize(&mhz).map(|s| s.median);
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
            unavailable,
        }
    }
}

/// How quiet the machine was during the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Noise {
    pub load_average_1m_start: Option<f64>,
    pub load_average_1m_end: Option<f64>,
    /// Share of all CPU time the hypervisor stole during the run.
    pub steal_percent: Option<f64>,
    /// Involuntary switches of the benchmark thread over the whole run.
    pub involuntary_switches: u64,
    /// Whether the figures should be trusted less, and why.
    pub noisy: bool,
    pub reasons: Vec<String>,
}

/// Readings taken at the start of a run.
pub struct NoiseProbe {
    load: Option<f64>,
    stat: Option<(u64, u64)>,
}

fn load1(proc: &ProcRoot) -> Option<f64> {
    loadavg::one_minute(&proc.read("loadavg").ok()?)
}

fn steal(proc: &ProcRoot) -> Option<(u64, u64)> {
    kernel_stat::parse_steal(&proc.read("stat").ok()?)
}

impl NoiseProbe {
    pub fn start() -> NoiseProbe {
        let proc = ProcRoot::default();
        NoiseProbe {
            load: load1(&proc),
            stat: steal(&proc),
        }
    }

    /// The noise of a run whose benchmark thread was switched out
    /// `involuntary` times in `duration_s` seconds of benchmarks.
    pub fn finish(self, involuntary: u64, duration_s: f64, cpus: usize) -> Noise {
        let proc = ProcRoot::default();
        let end = steal(&proc);
        let steal_percent = match (self.stat, end) {
            (Some((s0, t0)), Some((s1, t1))) if t1 > t0 => {
                Some(s1.saturating_sub(s0) as f64 * 100.0 / (t1 - t0) as f64)
            }
            _ => None,
        };
        let mut reasons = Vec::new();
        let load_end = load1(&proc);
        // The run itself keeps about one CPU busy.
        let limit = (cpus as f64 * 0.5).max(1.0) + 0.5;
        if let Some(l) = self.load.filter(|l| *l > limit) {
            reasons.push(format!(
                "load average {l:.2} at the start on {cpus} CPUs (other work was running)"
            ));
        }
        if let Some(s) = steal_percent.filter(|s| *s > 2.0) {
            reasons.push(format!("the hypervisor stole {s:.1}% of CPU time"));
        }
        if duration_s > 0.0 && involuntary as f64 / duration_s > 20.0 {
            reasons.push(format!(
                "{involuntary} involuntary switches of the benchmark thread in {duration_s:.1} s (preempted by other work)"
            ));
        }
        Noise {
            load_average_1m_start: self.load,
            load_average_1m_end: load_end,
            steal_percent,
            involuntary_switches: involuntary,
            noisy: !reasons.is_empty(),
            reasons,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
