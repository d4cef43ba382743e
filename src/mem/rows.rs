//! The rows of `tally mem` and their total: what grouping makes and every
//! format renders ([`super::columns`] says how each figure is shown).

use serde::{Deserialize, Serialize};

use super::scan::ProcSample;

/// Figures of one row.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Group {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    pub processes: u64,
    pub pids: Vec<u32>,
    pub private_bytes: u64,
    pub shared_bytes: u64,
    pub pss_bytes: u64,
    pub swap_bytes: u64,
    pub rss_bytes: u64,
}

fn kb(n: u64) -> u64 {
    n.saturating_mul(1024)
}

impl Group {
    pub(crate) fn add(&mut self, s: &ProcSample) {
        self.processes = self.processes.saturating_add(1);
        self.pids.push(s.pid);
        self.private_bytes = self.private_bytes.saturating_add(kb(s.mem.private_kb()));
        self.shared_bytes = self.shared_bytes.saturating_add(kb(s.mem.shared_kb()));
        self.pss_bytes = self.pss_bytes.saturating_add(kb(s.mem.pss_kb));
        self.swap_bytes = self.swap_bytes.saturating_add(kb(s.mem.swap_best_kb()));
        self.rss_bytes = self.rss_bytes.saturating_add(kb(s.mem.rss_kb));
    }
}

/// The sum over every process kept.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    pub processes: u64,
    pub groups: u64,
    pub private_bytes: u64,
    pub shared_bytes: u64,
    pub pss_bytes: u64,
    pub swap_bytes: u64,
    pub rss_bytes: u64,
    /// Swap in use that no process's SwapPss holds.
    #[serde(default)]
    pub swap_not_attributed: SwapRest,
}

/// Swap in use that is in no process's `SwapPss`: swapped pages of tmpfs
/// (`/dev/shm`), SysV shared memory and shared anonymous mappings whose
/// processes map them no more, or not at this moment (PostgreSQL's shared
/// buffers). `SwapTotal − SwapFree` from meminfo minus the sum of every
/// process's `SwapPss`; only when the scan saw every process.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwapRest {
    /// `None` when unavailable (see `unavailable`).
    pub bytes: Option<u64>,
    /// `SwapTotal` and `SwapTotal − SwapFree`, when meminfo was read.
    pub swap_total_bytes: Option<u64>,
    pub swap_used_bytes: Option<u64>,
    /// Why `bytes` is unavailable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

impl SwapRest {
    /// The phrase for the TOTAL line; `None` on a machine without swap.
    pub(crate) fn phrase(&self) -> Option<String> {
        let what = "swap not attributed to a process";
        match (&self.unavailable, self.bytes) {
            (Some(why), _) => Some(format!("{what}: unavailable ({why})")),
            (None, Some(_)) if self.swap_total_bytes == Some(0) => None,
            (None, Some(b)) => Some(format!("{what}: {}", crate::units::human_bytes(b))),
            (None, None) => None,
        }
    }

    /// The cell for CSV and Markdown: the size, or why it is unavailable.
    pub(crate) fn cell(&self, size: impl Fn(u64) -> String) -> String {
        match (&self.unavailable, self.bytes) {
            (Some(why), _) => format!("unavailable: {why}"),
            (None, Some(b)) => size(b),
            (None, None) => String::new(),
        }
    }
}

impl Totals {
    pub(crate) fn add(&mut self, s: &ProcSample) {
        self.processes = self.processes.saturating_add(1);
        self.private_bytes = self.private_bytes.saturating_add(kb(s.mem.private_kb()));
        self.shared_bytes = self.shared_bytes.saturating_add(kb(s.mem.shared_kb()));
        self.pss_bytes = self.pss_bytes.saturating_add(kb(s.mem.pss_kb));
        self.swap_bytes = self.swap_bytes.saturating_add(kb(s.mem.swap_best_kb()));
        self.rss_bytes = self.rss_bytes.saturating_add(kb(s.mem.rss_kb));
    }
}
