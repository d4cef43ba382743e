//! Every benchmark, one line each, in the order they run and print
//! (grouped like the sections of the OS benchmarking study: CPU and
//! scheduling, memory, file system, then readiness APIs).

use std::time::Duration;

use super::{BenchResult, Config, Ctx, StepError};

/// One benchmark: its name, where it prints, how to run it.
pub struct Benchmark {
    pub name: &'static str,
    pub section: Section,
    pub about: &'static str,
    /// Runs only when named or with `--full`.
    pub heavy: bool,
    /// Writes scratch files under `--dir`.
    pub uses_dir: bool,
    /// Expected duration under a config (for `--full`'s announcement and
    /// the watchdog's limit).
    pub estimate: fn(&Config) -> Duration,
    pub run: fn(&mut Ctx<'_>, &mut BenchResult) -> Result<(), StepError>,
}

/// The report section a benchmark belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Section {
    Cpu,
    Memory,
    FileSystem,
    Events,
}

impl Section {
    pub fn title(self) -> &'static str {
        match self {
            Section::Cpu => "CPU & scheduling",
            Section::Memory => "Memory",
            Section::FileSystem => "File system",
            Section::Events => "Readiness (select / poll / epoll)",
        }
    }
}

/// The registry.
pub const BENCHMARKS: &[Benchmark] = &[
    super::timer::BENCH,
    super::call::BENCH,
    super::syscall::BENCH,
    super::spawn::BENCH,
    super::ctxswitch::BENCH,
    super::memlat::BENCH,
    super::membw::BENCH,
    super::pagefault::BENCH,
    super::filecache::BENCH,
    super::fileread::BENCH,
    super::events::BENCH,
];

/// The benchmark called `name`.
pub fn find(name: &str) -> Option<&'static Benchmark> {
    BENCHMARKS.iter().find(|b| b.name == name)
}

/// Every benchmark name, for argument validation and `--list`.
pub fn names() -> Vec<&'static str> {
    BENCHMARKS.iter().map(|b| b.name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_lowercase() {
        let names = names();
        assert_eq!(names.len(), 11);
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len());
        assert!(
            names
                .iter()
                .all(|n| n.chars().all(|c| c.is_ascii_lowercase()))
        );
    }

    #[test]
    fn sections_are_contiguous() {
        let mut seen: Vec<Section> = Vec::new();
        for b in BENCHMARKS {
            if seen.last() != Some(&b.section) {
                assert!(!seen.contains(&b.section), "{} splits a section", b.name);
                seen.push(b.section);
            }
        }
    }

    #[test]
    fn only_filecache_is_heavy() {
        let heavy: Vec<_> = BENCHMARKS
            .iter()
            .filter(|b| b.heavy)
            .map(|b| b.name)
            .collect();
        assert_eq!(heavy, ["filecache"]);
    }

    #[test]
    fn estimates_are_finite_and_full_is_longer() {
        let quick = Config::new(super::super::Mode::Quick);
        let full = Config::new(super::super::Mode::Full);
        for b in BENCHMARKS {
            let q = (b.estimate)(&quick);
            let f = (b.estimate)(&full);
            assert!(q > Duration::ZERO, "{}", b.name);
            assert!(f >= q, "{}", b.name);
        }
    }
}
