//! The rows of `tally mem` and their total: what grouping makes and every
//! format renders ([`super::columns`] says how each figure is shown).

use serde::{Deserialize, Serialize};

use super::columns::{COLUMNS, Column, GpuBytes};
use super::scan::ProcSample;

/// The figures of a row or the total, in bytes: one per [`COLUMNS`]
/// entry. In JSON they are fields `KEY_bytes` of the row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Figures([u64; COLUMNS.len()]);

impl Default for Figures {
    fn default() -> Figures {
        Figures([0; COLUMNS.len()])
    }
}

impl Figures {
    /// The figure of `COLUMNS[i]`.
    pub fn get(&self, i: usize) -> Option<u64> {
        self.0.get(i).copied()
    }

    /// The figure of the column called `key` (`pss`, `rss`, …).
    pub fn of(&self, key: &str) -> Option<u64> {
        COLUMNS
            .iter()
            .position(|c| c.key == key)
            .and_then(|i| self.get(i))
    }

    /// Every figure with its column.
    pub fn iter(&self) -> impl Iterator<Item = (&'static Column, u64)> + '_ {
        COLUMNS.iter().zip(self.0.iter().copied())
    }

    fn add(&mut self, s: &ProcSample) {
        for (sum, c) in self.0.iter_mut().zip(COLUMNS) {
            *sum = sum.saturating_add((c.kb)(&s.mem).saturating_mul(1024));
        }
    }
}

impl Serialize for Figures {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(COLUMNS.len()))?;
        for (c, v) in self.iter() {
            map.serialize_entry(&format!("{}_bytes", c.key), &v)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Figures {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Figures, D::Error> {
        let fields = std::collections::BTreeMap::<String, serde_json::Value>::deserialize(d)?;
        let mut f = Figures::default();
        for (i, c) in COLUMNS.iter().enumerate() {
            let key = format!("{}_bytes", c.key);
            let v = fields
                .get(&key)
                .ok_or_else(|| serde::de::Error::missing_field(c.key))?;
            let n = v
                .as_u64()
                .ok_or_else(|| serde::de::Error::custom(format!("{key}: not a byte count")))?;
            if let Some(slot) = f.0.get_mut(i) {
                *slot = n;
            }
        }
        Ok(f)
    }
}

/// One row.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Group {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    pub processes: u64,
    pub pids: Vec<u32>,
    #[serde(flatten)]
    pub figures: Figures,
    /// GPU memory of its processes (see [`super::columns::GPU`]); the key
    /// is absent when not measured, `null` when unknown.
    #[serde(default, skip_serializing_if = "GpuBytes::is_not_measured")]
    pub gpu_bytes: GpuBytes,
}

impl Group {
    pub(crate) fn add(&mut self, s: &ProcSample) {
        self.processes = self.processes.saturating_add(1);
        self.pids.push(s.pid);
        self.figures.add(s);
        self.gpu_bytes = self.gpu_bytes.plus(s.gpu);
    }
}

/// The sum over every process kept.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    pub processes: u64,
    pub groups: u64,
    #[serde(flatten)]
    pub figures: Figures,
    /// GPU memory of every process counted, as in [`Group::gpu_bytes`].
    #[serde(default, skip_serializing_if = "GpuBytes::is_not_measured")]
    pub gpu_bytes: GpuBytes,
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
        self.figures.add(s);
        self.gpu_bytes = self.gpu_bytes.plus(s.gpu);
    }
}
