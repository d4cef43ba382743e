//! The samples of one run folded, as they come, into its GPU figures.
//!
//! Busy time and energy: each GPU sample describes the period since the
//! previous one (utilization is the share of the last sample period a
//! kernel ran), so the run's wall time is cut at the samples and each
//! piece takes the figures of the sample that ends it; the piece after
//! the last sample takes the last sample's. Memory: the process lines of
//! one moment (one driver timestamp) are summed per GPU over the
//! command's processes, and the largest sum is the peak.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Instant;

use super::parse::{self, AppLine, GpuLine};
use super::{Gpu, OneGpu};

const MIB: u64 = 1024 * 1024;
/// Pids listed by number in a note, at most.
const LISTED_PIDS: usize = 8;

/// Whether a process the driver names belongs to the command's tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Membership {
    /// The command or one of its descendants.
    In,
    /// Another process: another user's, another program's.
    Out,
    /// Not in this /proc: another PID namespace (a container), or gone.
    Gone,
}

/// Decides [`Membership`] of `pid` for the tree rooted at `root`.
pub type Judge = Box<dyn FnMut(u32, u32) -> Membership + Send>;

#[derive(Default)]
struct GpuAcc {
    index: u32,
    name: String,
    /// The latest sample: when it came, utilization, power.
    last: Option<(Instant, Option<u8>, Option<f64>)>,
    /// Σ utilization% × ns, so one division at the end.
    busy_pct_ns: u128,
    busy_known: bool,
    energy_j: f64,
    energy_known: bool,
    /// Samples that came during the run.
    samples: u64,
    mem_peak_mib: u64,
}

/// The fold of one run (see the module's text).
pub struct Fold {
    /// The command's pid and when it started, once it has.
    window: Option<(u32, Instant)>,
    gpus: BTreeMap<String, GpuAcc>,
    /// The process lines of the current moment: its timestamp, MiB per GPU.
    batch: Option<(String, BTreeMap<String, u64>)>,
    total_peak_mib: u64,
    judged: HashMap<u32, Membership>,
    judge: Judge,
    gone: BTreeSet<u32>,
    /// A process of the command's whose memory the driver did not give.
    mem_unknown: bool,
    app_lines: u64,
    bad_lines: u64,
    /// The first line that could not be read (escaped), and why.
    first_bad: Option<(String, String)>,
}

impl Fold {
    pub fn new(judge: Judge) -> Fold {
        Fold {
            window: None,
            gpus: BTreeMap::new(),
            batch: None,
            total_peak_mib: 0,
            judged: HashMap::new(),
            judge,
            gone: BTreeSet::new(),
            mem_unknown: false,
            app_lines: 0,
            bad_lines: 0,
            first_bad: None,
        }
    }

    /// GPUs the GPU query has named so far.
    pub fn gpu_count(&self) -> usize {
        self.gpus.values().filter(|g| !g.name.is_empty()).count()
    }

    /// The first line that could not be read, with why.
    pub fn first_bad(&self) -> Option<&str> {
        self.first_bad.as_ref().map(|(line, _)| line.as_str())
    }

    /// The command `root` started at `at`: samples count from now.
    pub fn begin(&mut self, root: u32, at: Instant) {
        self.window = Some((root, at));
    }

    fn bad(&mut self, line: &str, why: String) {
        self.bad_lines += 1;
        if self.first_bad.is_none() {
            let shown: String = line.chars().take(160).collect();
            self.first_bad = Some((crate::text::escape::escape_text(&shown), why));
        }
    }

    /// A line of the GPU query, read at `at`.
    pub fn gpu(&mut self, line: &str, at: Instant) {
        match parse::gpu_line(line) {
            Ok(l) => self.gpu_sample(l, at),
            Err(why) => self.bad(line, why),
        }
    }

    fn gpu_sample(&mut self, l: GpuLine, at: Instant) {
        let start = self.window.map(|(_, s)| s);
        let acc = self.gpus.entry(l.uuid).or_insert_with(|| GpuAcc {
            busy_known: true,
            energy_known: true,
            ..GpuAcc::default()
        });
        acc.index = l.index;
        acc.name = l.name;
        if let Some(start) = start.filter(|s| at > *s) {
            let from = acc.last.map_or(start, |(t, _, _)| t.max(start));
            let ns = at.saturating_duration_since(from).as_nanos();
            add(acc, ns, l.utilization, l.power_watts);
            acc.samples += 1;
        }
        acc.last = Some((at, l.utilization, l.power_watts));
    }

    /// A line of the process query, read at `at`.
    pub fn app(&mut self, line: &str) {
        match parse::app_line(line) {
            Ok(l) => self.app_sample(l),
            Err(why) => self.bad(line, why),
        }
    }

    fn app_sample(&mut self, l: AppLine) {
        let Some((root, _)) = self.window else {
            return;
        };
        self.app_lines += 1;
        if self.batch.as_ref().is_some_and(|(t, _)| *t != l.timestamp) {
            self.close_batch();
        }
        let judge = &mut self.judge;
        let member = *self
            .judged
            .entry(l.pid)
            .or_insert_with(|| judge(root, l.pid));
        match member {
            Membership::In => {}
            Membership::Out => return,
            Membership::Gone => {
                self.gone.insert(l.pid);
                return;
            }
        }
        let batch = self
            .batch
            .get_or_insert_with(|| (l.timestamp.clone(), BTreeMap::new()));
        match l.used_mib {
            Some(mib) => *batch.1.entry(l.gpu_uuid).or_default() += mib,
            None => self.mem_unknown = true,
        }
    }

    fn close_batch(&mut self) {
        let Some((_, per_gpu)) = self.batch.take() else {
            return;
        };
        let mut total = 0;
        for (uuid, mib) in per_gpu {
            total += mib;
            let acc = self.gpus.entry(uuid).or_default();
            acc.mem_peak_mib = acc.mem_peak_mib.max(mib);
        }
        self.total_peak_mib = self.total_peak_mib.max(total);
    }

    /// The figures of the run, which ended at `end`; `interval_ns` is the
    /// sampling period asked of nvidia-smi, `apps_ok` whether the process
    /// query ran to the end.
    pub fn finish(mut self, end: Instant, interval_ns: u64, apps_ok: bool) -> Gpu {
        self.close_batch();
        let mut notes = Vec::new();
        let start = self.window.map(|(_, s)| s);
        let mut gpus: Vec<OneGpu> = Vec::new();
        for (uuid, mut acc) in std::mem::take(&mut self.gpus) {
            if acc.samples == 0 {
                if acc.name.is_empty() {
                    // Named only by the process query: a GPU the GPU query
                    // never listed (MIG instances are named by MIG uuids).
                    notes.push(format!("GPU {uuid} is named by the process query only"));
                } else {
                    notes.push(format!(
                        "GPU {}: no sample came while the command ran (it ran for less than a sampling period?): no busy time or energy",
                        acc.index
                    ));
                }
            } else if let (Some((t, util, power)), Some(start)) = (acc.last, start) {
                let ns = end.saturating_duration_since(t.max(start)).as_nanos();
                add(&mut acc, ns, util, power);
            }
            let measured = acc.samples > 0;
            gpus.push(OneGpu {
                index: acc.index,
                name: acc.name,
                uuid,
                mem_peak_bytes: apps_ok.then_some(acc.mem_peak_mib * MIB),
                busy_ns: (measured && acc.busy_known)
                    .then(|| u64::try_from(acc.busy_pct_ns / 100).unwrap_or(u64::MAX)),
                energy_joules: (measured && acc.energy_known).then_some(acc.energy_j),
                samples: acc.samples,
            });
        }
        gpus.sort_by_key(|g| g.index);
        self.notes_into(&mut notes, apps_ok);
        let sum = |f: fn(&OneGpu) -> Option<u64>| -> Option<u64> {
            let mut it = gpus.iter().map(f).peekable();
            it.peek()?;
            it.sum()
        };
        let gpu_busy_ns = sum(|g| g.busy_ns);
        let energy: Option<f64> = if gpus.is_empty() {
            None
        } else {
            gpus.iter().map(|g| g.energy_joules).sum()
        };
        Gpu {
            gpu_mem_peak_bytes: (apps_ok && !gpus.is_empty()).then_some(self.total_peak_mib * MIB),
            gpu_busy_ns,
            gpu_energy_joules: energy,
            sample_interval_ns: interval_ns,
            source: super::SOURCE.to_string(),
            gpus,
            notes,
        }
    }

    fn notes_into(&self, notes: &mut Vec<String>, apps_ok: bool) {
        if !apps_ok {
            notes.push("the process query of nvidia-smi failed: no GPU memory figure".into());
        }
        if self.mem_unknown {
            notes.push(
                "the driver did not give the GPU memory of a process of the command ([N/A]: MIG, or a container without access): the peak leaves it out"
                    .into(),
            );
        }
        if !self.gone.is_empty() {
            let listed: Vec<String> = self
                .gone
                .iter()
                .take(LISTED_PIDS)
                .map(u32::to_string)
                .collect();
            notes.push(format!(
                "nvidia-smi named {} not in this /proc (pid {}{}): inside a container or another PID namespace the driver names pids of the host, which cannot be matched to the command; their memory is left out",
                crate::units::count(self.gone.len() as u64, "process", "processes"),
                listed.join(", "),
                if self.gone.len() > LISTED_PIDS { ", …" } else { "" }
            ));
        }
        if let Some((line, why)) = &self.first_bad {
            notes.push(format!(
                "nvidia-smi printed {} tally could not read, the first: {line} ({why})",
                crate::units::count(self.bad_lines, "line", "lines")
            ));
        }
    }
}

/// Adds `ns` of the run at `util`% and `power` W to `acc`.
fn add(acc: &mut GpuAcc, ns: u128, util: Option<u8>, power: Option<f64>) {
    match util {
        Some(u) => acc.busy_pct_ns += ns * u128::from(u),
        None => acc.busy_known = false,
    }
    match power {
        Some(w) => acc.energy_j += w * ns as f64 / 1e9,
        None => acc.energy_known = false,
    }
}

/// [`Membership`] from /proc: `pid` is in the tree when following parents
/// from it reaches `root`.
pub fn membership(root: u32, pid: u32) -> Membership {
    let proc = crate::procfs::ProcRoot::default();
    let mut at = pid;
    // A chain longer than this is not a process tree tally started.
    for _ in 0..1024 {
        if at == root {
            return Membership::In;
        }
        match crate::procfs::stat::read(&proc, at) {
            None if at == pid => return Membership::Gone,
            None => return Membership::Out,
            Some(s) if s.ppid <= 1 => return Membership::Out,
            Some(s) => at = s.ppid,
        }
    }
    Membership::Out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const A: &str = "GPU-aaaaaaaa-0000-0000-0000-000000000000";
    const B: &str = "GPU-bbbbbbbb-0000-0000-0000-000000000000";

    fn judge() -> Judge {
        // 100 and 101 are the command's, 7 another user's, 9 elsewhere.
        Box::new(|_, pid| match pid {
            100 | 101 => Membership::In,
            9 => Membership::Gone,
            _ => Membership::Out,
        })
    }

    fn ms(t0: Instant, n: u64) -> Instant {
        t0 + Duration::from_millis(n)
    }

    #[test]
    fn busy_and_energy_cover_the_wall_time_exactly() {
        let t0 = Instant::now();
        let mut f = Fold::new(judge());
        f.gpu(&format!("0, NVIDIA H200, {A}, 90, 500, 1"), t0);
        f.begin(100, ms(t0, 10));
        for i in 1..=5 {
            f.gpu(
                &format!("0, NVIDIA H200, {A}, 50, 100, 1"),
                ms(t0, 10 + i * 20),
            );
        }
        let g = f.finish(ms(t0, 120), 20_000_000, true);
        let one = &g.gpus[0];
        assert_eq!(one.samples, 5);
        // 110 ms at 50%: the sample before the start is not counted.
        assert_eq!(one.busy_ns, Some(55_000_000));
        assert!((one.energy_joules.unwrap() - 11.0).abs() < 1e-9);
        assert_eq!(g.gpu_busy_ns, Some(55_000_000));
    }

    #[test]
    fn memory_peak_sums_the_tree_per_moment_and_leaves_others_out() {
        let t0 = Instant::now();
        let mut f = Fold::new(judge());
        f.app(&format!("t1, 100, 4000, {A}"));
        f.begin(100, t0);
        f.gpu(&format!("0, H200, {A}, 0, 1, 1"), ms(t0, 20));
        f.gpu(&format!("1, H200, {B}, 0, 1, 1"), ms(t0, 20));
        for l in [
            format!("t2, 100, 1000, {A}"),
            format!("t2, 101, 112, {A}"),
            format!("t2, 7, 9999, {A}"),
            format!("t2, 101, 500, {B}"),
            format!("t3, 100, 4112, {A}"),
            format!("t3, 9, 77, {B}"),
            format!("t4, 100, [N/A], {A}"),
        ] {
            f.app(&l);
        }
        let g = f.finish(ms(t0, 40), 20_000_000, true);
        assert_eq!(g.gpus[0].mem_peak_bytes, Some(4112 * MIB));
        assert_eq!(g.gpus[1].mem_peak_bytes, Some(500 * MIB));
        // t2: 1,112 + 500; t3: 4,112.
        assert_eq!(g.gpu_mem_peak_bytes, Some(4112 * MIB));
        assert_eq!(g.notes.len(), 2, "{:?}", g.notes);
        assert!(g.notes[0].contains("[N/A]"));
        assert!(g.notes[1].contains("pid 9"));
    }

    #[test]
    fn not_available_figures_are_none_never_zero() {
        let t0 = Instant::now();
        let mut f = Fold::new(judge());
        f.begin(100, t0);
        f.gpu(
            &format!("0, H200, {A}, [N/A], [Not Supported], 1"),
            ms(t0, 20),
        );
        f.gpu("garbage", ms(t0, 21));
        let g = f.finish(ms(t0, 30), 20_000_000, false);
        assert_eq!(g.gpus[0].busy_ns, None);
        assert_eq!(g.gpus[0].energy_joules, None);
        assert_eq!(g.gpus[0].mem_peak_bytes, None);
        assert_eq!(
            (g.gpu_busy_ns, g.gpu_energy_joules, g.gpu_mem_peak_bytes),
            (None, None, None)
        );
        assert!(
            g.notes.iter().any(|n| n.contains("garbage")),
            "{:?}",
            g.notes
        );
    }

    #[test]
    fn a_run_shorter_than_a_sample_has_no_busy_figure() {
        let t0 = Instant::now();
        let mut f = Fold::new(judge());
        f.gpu(&format!("0, H200, {A}, 10, 100, 1"), t0);
        f.begin(100, ms(t0, 1));
        let g = f.finish(ms(t0, 2), 20_000_000, true);
        assert_eq!(g.gpus[0].busy_ns, None);
        assert!(g.notes[0].contains("no sample came"), "{:?}", g.notes);
    }

    #[test]
    fn this_process_is_in_its_own_tree_and_init_is_not() {
        let me = std::process::id();
        assert_eq!(membership(me, me), Membership::In);
        assert_eq!(membership(me, 1), Membership::Out);
        assert_eq!(membership(me, u32::MAX - 1), Membership::Gone);
    }
}
