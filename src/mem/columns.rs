//! The figures of a `tally mem` row, one line each: the human table, CSV,
//! Markdown, Prometheus and `--sort` all come from [`COLUMNS`]. A new
//! column is its field in [`Group`] and [`Totals`] (and where the scan
//! adds it up) plus one entry here.

use super::rows::{Group, Totals};
use crate::report::prometheus::Unit;

/// One figure of a row, in bytes.
pub struct Column {
    /// The `--sort` value.
    pub sort: &'static str,
    /// The human table's header, before the unit (`None`: not in the
    /// human table, which stays narrow).
    pub header: Option<&'static str>,
    /// The CSV and Markdown header, before `_<unit>`.
    pub csv: &'static str,
    /// The Prometheus name after `tally_mem_` (rows) or `tally_mem_total_`
    /// (the total), before the unit's suffix.
    pub metric: &'static str,
    /// The unit of the figure (Prometheus scales it to the base unit and
    /// adds its suffix).
    pub unit: Unit,
    /// Prometheus help for the rows and for the total.
    pub help: &'static str,
    pub total_help: &'static str,
    pub of_group: fn(&Group) -> u64,
    pub of_total: fn(&Totals) -> u64,
}

/// Every figure of a row, in the order every format prints them.
pub const COLUMNS: &[Column] = &[
    Column {
        sort: "private",
        header: Some("Private"),
        csv: "private",
        metric: "private",
        unit: Unit::Bytes,
        help: "Private memory (clean and dirty).",
        total_help: "Private memory of every process counted.",
        of_group: |g| g.private_bytes,
        of_total: |t| t.private_bytes,
    },
    Column {
        sort: "shared",
        header: Some("Shared"),
        csv: "shared",
        metric: "shared",
        unit: Unit::Bytes,
        help: "Share of shared memory (PSS minus private).",
        total_help: "Shared memory share of every process counted.",
        of_group: |g| g.shared_bytes,
        of_total: |t| t.shared_bytes,
    },
    Column {
        sort: "ram",
        header: Some("RAM used"),
        csv: "ram_used",
        metric: "pss",
        unit: Unit::Bytes,
        help: "RAM used: proportional set size.",
        total_help: "RAM used by every process counted.",
        of_group: |g| g.pss_bytes,
        of_total: |t| t.pss_bytes,
    },
    Column {
        sort: "swap",
        header: Some("Swap"),
        csv: "swap",
        metric: "swap",
        unit: Unit::Bytes,
        help: "Swap used (SwapPss where the kernel has it).",
        total_help: "Swap used by every process counted.",
        of_group: |g| g.swap_bytes,
        of_total: |t| t.swap_bytes,
    },
    Column {
        sort: "rss",
        header: None,
        csv: "rss",
        metric: "rss",
        unit: Unit::Bytes,
        help: "Resident set size (shared pages counted in full).",
        total_help: "Sum of the resident set sizes of every process counted (shared pages \
                     counted in each).",
        of_group: |g| g.rss_bytes,
        of_total: |t| t.rss_bytes,
    },
];

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
    pub const RAM: SortKey = SortKey::Column(2);

    /// The figure of `g` this key sorts by (`None`: by name only).
    pub fn of(self, g: &Group) -> Option<u64> {
        match self {
            SortKey::Column(i) => COLUMNS.get(i).map(|c| (c.of_group)(g)),
            SortKey::Count => Some(g.processes),
            SortKey::Name => None,
        }
    }
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
        assert_eq!(COLUMNS.get(2).map(|c| c.metric), Some("pss"));
    }
}
