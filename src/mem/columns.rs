//! The figures of a `tally mem` row, one line each: the scan's sums, the
//! JSON fields, the human table, CSV, Markdown, Prometheus and `--sort`
//! all come from [`COLUMNS`]. A new column is one line here, reading a
//! figure the smaps parser has.

use crate::procfs::smaps_rollup::MemFigures;

/// One figure of a row. Rows hold it in bytes (the kernel's kB × 1024).
pub struct Column {
    /// The figure's name: the JSON field and CSV column `KEY_bytes` (CSV:
    /// `KEY_<unit>` with `--unit`), the Prometheus families
    /// `tally_mem_KEY_bytes` (rows) and `tally_mem_total_KEY_bytes`.
    pub key: &'static str,
    /// The `--sort` value.
    pub sort: &'static str,
    /// The human table's header, before the unit (`None`: not in the
    /// human table, which stays narrow).
    pub header: Option<&'static str>,
    /// Prometheus help for the rows and for the total.
    pub help: &'static str,
    pub total_help: &'static str,
    /// The figure of one process, in kB.
    pub kb: fn(&MemFigures) -> u64,
}

/// Every figure of a row, in the order every format prints them.
#[rustfmt::skip]
pub const COLUMNS: &[Column] = &[
    Column { key: "private", sort: "private", header: Some("Private"), help: "Private memory (clean and dirty).", total_help: "Private memory of every process counted.", kb: MemFigures::private_kb },
    Column { key: "shared", sort: "shared", header: Some("Shared"), help: "Share of shared memory (PSS minus private).", total_help: "Shared memory share of every process counted.", kb: MemFigures::shared_kb },
    Column { key: "pss", sort: "ram", header: Some("RAM used"), help: "RAM used: proportional set size.", total_help: "RAM used by every process counted.", kb: |m| m.pss_kb },
    Column { key: "swap", sort: "swap", header: Some("Swap"), help: "Swap used (SwapPss where the kernel has it).", total_help: "Swap used by every process counted.", kb: MemFigures::swap_best_kb },
    Column { key: "rss", sort: "rss", header: None, help: "Resident set size (shared pages counted in full).", total_help: "Sum of the resident set sizes of every process counted (shared pages counted in each).", kb: |m| m.rss_kb },
];

/// The GPU column: the GPU memory the driver attributes to a row's
/// processes (nvidia-smi), summed over processes and GPUs. Not one of
/// [`COLUMNS`]: it comes from the driver, not from smaps, and is in a
/// report only when measured (see [`super::gpu`]). JSON `gpu_bytes`, CSV
/// `gpu_<unit>` after the COLUMNS, Prometheus `tally_mem_gpu_bytes` and
/// `tally_mem_total_gpu_bytes`.
pub struct Extra {
    pub key: &'static str,
    pub header: &'static str,
    pub help: &'static str,
    pub total_help: &'static str,
}

/// See [`Extra`].
pub const GPU: Extra = Extra {
    key: "gpu",
    header: "GPU",
    help: "GPU memory the NVIDIA driver attributes to the processes (nvidia-smi), summed over GPUs.",
    total_help: "GPU memory the NVIDIA driver attributes to every process counted.",
};

/// GPU memory of a process, a row or the total, in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum GpuBytes {
    /// Not measured: no `gpu_bytes` key, no column.
    #[default]
    NotMeasured,
    /// The driver gave no figure for a process of it (`[N/A]`): `null`.
    Unknown,
    Known(u64),
}

impl GpuBytes {
    /// The sum of two: unknown when either is (a partial sum is no figure).
    pub fn plus(self, other: GpuBytes) -> GpuBytes {
        match (self, other) {
            (GpuBytes::NotMeasured, x) | (x, GpuBytes::NotMeasured) => x,
            (GpuBytes::Known(a), GpuBytes::Known(b)) => GpuBytes::Known(a.saturating_add(b)),
            _ => GpuBytes::Unknown,
        }
    }

    pub fn is_not_measured(&self) -> bool {
        *self == GpuBytes::NotMeasured
    }

    pub fn known(self) -> Option<u64> {
        match self {
            GpuBytes::Known(b) => Some(b),
            _ => None,
        }
    }
}

impl serde::Serialize for GpuBytes {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.known().serialize(s)
    }
}

impl<'de> serde::Deserialize<'de> for GpuBytes {
    /// A present key: a number, or `null` for unknown.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<GpuBytes, D::Error> {
        Ok(Option::<u64>::deserialize(d)?.map_or(GpuBytes::Unknown, GpuBytes::Known))
    }
}

/// The index in [`COLUMNS`] of the column called `key`.
pub const fn index_of(key: &str) -> Option<usize> {
    let mut i = 0;
    while i < COLUMNS.len() {
        if crate::report::const_eq(COLUMNS[i].key, key) {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// The column rows are sorted by (ascending: the biggest comes last): a
/// figure of [`COLUMNS`], the number of processes, or the name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    /// `COLUMNS[i]`.
    Column(usize),
    /// Number of processes.
    Count,
    Name,
}

impl Default for SortKey {
    /// RAM used (PSS).
    fn default() -> SortKey {
        SortKey::RAM
    }
}

impl SortKey {
    /// RAM used (PSS), the default.
    pub const RAM: SortKey = match index_of("pss") {
        Some(i) => SortKey::Column(i),
        None => panic!("mem COLUMNS has no pss"),
    };
}

/// Every sort key: the columns, then count and name.
const SORT_KEYS: [SortKey; COLUMNS.len() + 2] = {
    let mut keys = [SortKey::Name; COLUMNS.len() + 2];
    let mut i = 0;
    while i < COLUMNS.len() {
        keys[i] = SortKey::Column(i);
        i += 1;
    }
    keys[COLUMNS.len()] = SortKey::Count;
    keys
};

impl clap::ValueEnum for SortKey {
    fn value_variants<'a>() -> &'a [SortKey] {
        &SORT_KEYS
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        use clap::builder::PossibleValue;
        match self {
            SortKey::Column(i) => COLUMNS
                .get(*i)
                .map(|c| PossibleValue::new(c.sort).help(c.help)),
            SortKey::Count => Some(PossibleValue::new("count").help("Number of processes")),
            SortKey::Name => Some(PossibleValue::new("name")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    #[test]
    fn no_import_circles_between_mem_files() {
        let graph = crate::bench::layering::imports("src/mem");
        // The rows sit below everything that shows or sorts them.
        let uses = |a: &str| graph.iter().find(|g| g.0 == a).unwrap().1.clone();
        assert!(uses("rows").iter().all(|u| u != "group" && u != "report"));
        assert!(uses("columns").iter().all(|u| u != "report"));
        crate::bench::layering::assert_no_circles(&graph);
    }

    #[test]
    fn every_column_is_a_sort_key_with_distinct_names() {
        let names: Vec<&str> = SortKey::value_variants()
            .iter()
            .filter_map(|k| k.to_possible_value())
            .map(|v| v.get_name().to_string().leak() as &str)
            .collect();
        assert_eq!(names.len(), COLUMNS.len() + 2);
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len());
        assert_eq!(SortKey::from_str("ram", false), Ok(SortKey::RAM));
        assert_eq!(SortKey::RAM, SortKey::Column(2));
        assert_eq!(COLUMNS.get(2).map(|c| c.key), Some("pss"));
    }
}
