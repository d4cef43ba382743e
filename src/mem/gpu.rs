//! GPU memory per row: what NVIDIA's driver attributes to each process
//! (one `nvidia-smi --query-compute-apps`, [`crate::gpu::apps`]), matched
//! to the processes of the scan by pid and summed per row like every other
//! figure.
//!
//! The driver names processes by the pids of its PID namespace (the
//! host's). A pid it names that the scan did not read is in no row: not in
//! this /proc (a container's processes are named by their host pids; or
//! the process started or ended during the scan), or in it but unreadable
//! (another user's, as non-root: its memory figures are not counted
//! either). The report says how many of each, and how much they hold. A
//! process whose memory the driver does not give (`[N/A]`) makes its row's
//! figure unknown, never a smaller sum.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::columns::GpuBytes;
use super::scan::Snapshot;
use crate::gpu::apps::{self, Apps, ProcessMemory, Query};

/// Whether a scan measures GPU memory.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Want {
    /// When nvidia-smi is on PATH and answers, and the tree read is
    /// `/proc` (a fixture tree's pids are not the driver's): otherwise the
    /// report is as without GPU support.
    #[default]
    Auto,
    /// `--gpu`: measured whatever the tree, and why not said.
    Asked,
    Off,
}

/// What the report says of GPU memory beyond its rows.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuSummary {
    /// Where the figures come from.
    pub source: String,
    /// Processes the driver lists (with `--pid`, those asked for).
    pub listed_processes: u64,
    /// Listed processes the scan did not see: not in this /proc (another
    /// PID namespace), or started or ended during the scan. In no row.
    pub elsewhere_processes: u64,
    /// Their GPU memory; `null` when one's is unknown.
    pub elsewhere_bytes: Option<u64>,
    /// Listed processes in /proc that could not be read (`skipped.denied`,
    /// `skipped.failed`). In no row.
    pub unread_processes: u64,
    pub unread_bytes: Option<u64>,
    /// Listed processes whose memory the driver does not give (`[N/A]`,
    /// `[Insufficient Permissions]`): their rows' `gpu_bytes` are `null`.
    pub unknown_processes: u64,
}

/// The GPU state of a report: not measured (the key is absent),
/// unavailable (`null`, with `gpu_reason`) or measured.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "Option<GpuSummary>", into = "Option<GpuSummary>")]
pub enum GpuState {
    #[default]
    NotMeasured,
    Unavailable,
    Measured(GpuSummary),
}

impl From<Option<GpuSummary>> for GpuState {
    fn from(g: Option<GpuSummary>) -> GpuState {
        g.map_or(GpuState::Unavailable, GpuState::Measured)
    }
}

impl From<GpuState> for Option<GpuSummary> {
    fn from(g: GpuState) -> Option<GpuSummary> {
        match g {
            GpuState::Measured(g) => Some(g),
            _ => None,
        }
    }
}

impl GpuState {
    pub fn is_not_measured(&self) -> bool {
        matches!(self, GpuState::NotMeasured)
    }
}

/// The `gpu` and `gpu_reason` keys of a report.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuPart {
    #[serde(default, skip_serializing_if = "GpuState::is_not_measured")]
    pub gpu: GpuState,
    /// Why `gpu` is `null`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_reason: Option<String>,
    /// How long the query took (for `tally serve`'s collector figures).
    #[serde(skip)]
    pub took: Option<Duration>,
}

impl GpuPart {
    /// Why GPU memory was asked for and not measured.
    pub fn failure(&self) -> Option<&str> {
        match self.gpu {
            GpuState::Unavailable => Some(self.gpu_reason.as_deref().unwrap_or("unknown")),
            _ => None,
        }
    }
}

/// The query under way, started when `cfg` wants one.
pub struct Pending {
    query: Query,
    want: Want,
    started: Instant,
}

/// Starts the query as `want` says: [`Want::Auto`] only when the tree
/// read is `/proc`.
pub fn start(want: Want, procfs: &crate::procfs::ProcRoot) -> Pending {
    let on_proc = procfs.path() == std::path::Path::new("/proc");
    let query = match want {
        Want::Off => Query::Off,
        Want::Auto if !on_proc => Query::Off,
        Want::Auto | Want::Asked => apps::start(),
    };
    Pending {
        query,
        want,
        started: Instant::now(),
    }
}

impl Pending {
    /// The pids of the nvidia-smi helpers under way, when the tree read
    /// is the `/proc` they run in: a scan leaves them out, as it leaves
    /// tally out.
    pub fn helpers(&self, procfs: &crate::procfs::ProcRoot) -> Vec<u32> {
        let on_proc = procfs.path() == std::path::Path::new("/proc");
        if on_proc {
            self.query.pids()
        } else {
            Vec::new()
        }
    }

    /// Waits for the answer and gives each process of `snap` its GPU
    /// memory (0 for one the driver does not list); returns what the
    /// report says of it. Not asked for, a failure leaves the scan as
    /// without GPU support.
    pub fn attribute(self, snap: &mut Snapshot, pids: Option<&[u32]>) -> GpuPart {
        self.attribute_saying(snap, pids, &mut |_| {})
    }

    /// [`Pending::attribute`], telling `say` what it waits for once the
    /// wait for nvidia-smi lasts more than a moment.
    pub fn attribute_saying(
        self,
        snap: &mut Snapshot,
        pids: Option<&[u32]>,
        say: &mut dyn FnMut(&str),
    ) -> GpuPart {
        let asked = self.want == Want::Asked;
        let answer = self.query.finish_saying(say);
        let took = Some(self.started.elapsed());
        let unavailable = |why: String| GpuPart {
            gpu: GpuState::Unavailable,
            gpu_reason: Some(why),
            took,
        };
        match answer {
            Apps::Off if asked => unavailable(apps::NOT_ON_PATH.to_string()),
            Apps::Unavailable(why) if asked => unavailable(why),
            Apps::Off | Apps::Unavailable(_) => GpuPart::default(),
            Apps::Listed { processes, took } => GpuPart {
                gpu: GpuState::Measured(match_processes(snap, &processes, pids)),
                gpu_reason: None,
                took: Some(took),
            },
        }
    }
}

/// Sets each sample's GPU memory from `listed` and sums up the listed
/// processes no sample stands for. `pids`: only these were asked for.
fn match_processes(
    snap: &mut Snapshot,
    listed: &BTreeMap<u32, ProcessMemory>,
    pids: Option<&[u32]>,
) -> GpuSummary {
    let bytes = |p: &ProcessMemory| p.bytes().map_or(GpuBytes::Unknown, GpuBytes::Known);
    for s in &mut snap.samples {
        s.gpu = listed.get(&s.pid).map_or(GpuBytes::Known(0), bytes);
    }
    let mut summary = GpuSummary {
        source: format!("{}, once per scan (whole MiB)", apps::QUERY),
        ..GpuSummary::default()
    };
    let (mut elsewhere, mut unread) = (GpuBytes::Known(0), GpuBytes::Known(0));
    let read = |pid: &u32| snap.samples.binary_search_by_key(pid, |s| s.pid).is_ok();
    for (pid, p) in listed {
        if pids.is_some_and(|asked| asked.binary_search(pid).is_err()) {
            continue;
        }
        summary.listed_processes += 1;
        if p.bytes().is_none() {
            summary.unknown_processes += 1;
        }
        if read(pid) {
            continue;
        }
        if snap.unread_pids.binary_search(pid).is_ok() {
            summary.unread_processes += 1;
            unread = unread.plus(bytes(p));
        } else {
            summary.elsewhere_processes += 1;
            elsewhere = elsewhere.plus(bytes(p));
        }
    }
    summary.elsewhere_bytes = elsewhere.known();
    summary.unread_bytes = unread.known();
    summary
}

/// The notes on GPU memory for the end of `tally mem`'s output.
pub fn notes(part: &GpuPart) -> Vec<String> {
    let s = match &part.gpu {
        GpuState::Measured(s) => s,
        GpuState::Unavailable => {
            return vec![format!(
                "GPU memory unavailable: {}",
                part.gpu_reason.as_deref().unwrap_or("unknown")
            )];
        }
        GpuState::NotMeasured => return Vec::new(),
    };
    let count = |n: u64| crate::units::count(n, "process", "processes");
    let held = |b: Option<u64>| match b {
        // Whole MiB, as the driver gives them.
        Some(b) => format!("holding {} MiB", crate::units::thousands(b >> 20)),
        None => "holding GPU memory the driver does not size".to_string(),
    };
    let mut notes = Vec::new();
    if s.elsewhere_processes > 0 {
        notes.push(format!(
            "the NVIDIA driver lists {} {} that this /proc does not show (a container's \
             processes, named by the host's pids; or one that started or ended during the \
             scan): left out of every row and the TOTAL",
            count(s.elsewhere_processes),
            held(s.elsewhere_bytes),
        ));
    }
    if s.unread_processes > 0 {
        notes.push(format!(
            "the NVIDIA driver lists {} {} that could not be read here: like their RAM, their \
             GPU memory is in no row and not in the TOTAL",
            count(s.unread_processes),
            held(s.unread_bytes),
        ));
    }
    if s.unknown_processes > 0 {
        notes.push(format!(
            "the NVIDIA driver gives no GPU memory figure for {} (MIG, or not permitted): \
             the GPU figure of a row holding one is unknown (—), never a smaller sum",
            count(s.unknown_processes),
        ));
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::scan::{ProcSample, Source};
    use crate::procfs::smaps_rollup::MemFigures;

    fn sample(pid: u32) -> ProcSample {
        ProcSample {
            pid,
            mem: MemFigures::default(),
            source: Source::SmapsRollup,
            exe: None,
            status: None,
            comm: None,
            cmdline: None,
            cgroup: None,
            gpu: GpuBytes::NotMeasured,
        }
    }

    fn listed(entries: &[(u32, Option<u64>)]) -> BTreeMap<u32, ProcessMemory> {
        entries
            .iter()
            .map(|&(pid, mib)| {
                let per_gpu = vec![("GPU-a".to_string(), mib)];
                (pid, ProcessMemory { per_gpu })
            })
            .collect()
    }

    #[test]
    fn listed_processes_are_matched_counted_or_left_out_with_what_they_hold() {
        let mut snap = Snapshot {
            samples: vec![sample(10), sample(11), sample(12)],
            unread_pids: vec![20],
            ..Snapshot::default()
        };
        let l = listed(&[(10, Some(4112)), (12, None), (20, Some(1)), (30, Some(2))]);
        let s = match_processes(&mut snap, &l, None);
        let gpu: Vec<GpuBytes> = snap.samples.iter().map(|s| s.gpu).collect();
        assert_eq!(
            gpu,
            [
                GpuBytes::Known(4112 << 20),
                GpuBytes::Known(0),
                GpuBytes::Unknown
            ]
        );
        assert_eq!(s.listed_processes, 4);
        assert_eq!((s.unread_processes, s.unread_bytes), (1, Some(1 << 20)));
        assert_eq!(
            (s.elsewhere_processes, s.elsewhere_bytes),
            (1, Some(2 << 20))
        );
        assert_eq!(s.unknown_processes, 1);
        let notes = notes(&GpuPart {
            gpu: GpuState::Measured(s),
            ..GpuPart::default()
        });
        assert_eq!(notes.len(), 3, "{notes:?}");
        assert!(notes[0].contains("1 process holding 2 MiB"), "{notes:?}");
    }

    #[test]
    fn with_pid_only_the_processes_asked_for_are_spoken_of() {
        let mut snap = Snapshot {
            samples: vec![sample(10)],
            ..Snapshot::default()
        };
        let l = listed(&[(1, Some(9999)), (10, Some(4112))]);
        let s = match_processes(&mut snap, &l, Some(&[10]));
        assert_eq!((s.listed_processes, s.elsewhere_processes), (1, 0));
        assert!(
            notes(&GpuPart {
                gpu: GpuState::Measured(s),
                ..GpuPart::default()
            })
            .is_empty()
        );
    }

    #[test]
    fn a_report_with_gpu_memory_reads_back_as_written() {
        use crate::mem::report::{Group, MemReport};
        let mut report = MemReport::default();
        report.groups.push(Group {
            name: "python3".into(),
            processes: 1,
            gpu_bytes: GpuBytes::Known(1634 << 20),
            ..Group::default()
        });
        report.groups.push(Group {
            name: "mig".into(),
            gpu_bytes: GpuBytes::Unknown,
            ..Group::default()
        });
        report.total.gpu_bytes = GpuBytes::Unknown;
        report.gpu.gpu = GpuState::Measured(GpuSummary::default());
        let json = serde_json::to_string(&report).unwrap();
        assert!(json.contains("\"gpu_bytes\":null"), "{json}");
        let back: MemReport = serde_json::from_str(&json).unwrap();
        assert_eq!(back, report);
        let unmeasured = serde_json::to_string(&MemReport::default()).unwrap();
        assert!(!unmeasured.contains("gpu"), "{unmeasured}");
        let back: MemReport = serde_json::from_str(&unmeasured).unwrap();
        assert_eq!(back.gpu, GpuPart::default());
    }

    #[test]
    fn unknown_memory_makes_a_sum_unknown_never_smaller() {
        let sum = GpuBytes::Known(5)
            .plus(GpuBytes::Unknown)
            .plus(GpuBytes::Known(1));
        assert_eq!(sum, GpuBytes::Unknown);
        assert_eq!(
            GpuBytes::NotMeasured.plus(GpuBytes::Known(3)),
            GpuBytes::Known(3)
        );
        let json = serde_json::to_string(&[GpuBytes::Unknown, GpuBytes::Known(7)]).unwrap();
        assert_eq!(json, "[null,7]");
    }
}
