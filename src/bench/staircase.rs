//! The memlat staircase read against the machine: plateaus of a latency
//! curve, the sizes where it climbs, and how they line up with the sysfs
//! cache sizes. A model of its own, below both memlat (which computes it)
//! and the report (which carries and prints it).

use serde::{Deserialize, Serialize};

use super::format::format_ns;
use super::machine::data_caches;
use crate::units::human_bytes;

/// Whether a series found its cache levels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelCheck {
    pub level: u32,
    pub sysfs_bytes: u64,
    /// The boundary found within a factor of 2, if one was.
    pub found_bytes: Option<u64>,
    /// What happened when none was.
    pub note: Option<String>,
}

/// A run of sizes with about the same latency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plateau {
    pub from_bytes: u64,
    pub to_bytes: u64,
    pub median_ns: f64,
}

/// The plateaus of the curves (each point's fastest sample) and how they
/// line up with sysfs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    /// The series the levels were judged on.
    pub series: String,
    pub plateaus: Vec<Plateau>,
    /// Sizes after which latency rose by 25% or more (last size before
    /// the rise).
    pub boundaries_bytes: Vec<u64>,
    pub levels: Vec<LevelCheck>,
    /// Boundaries of the 4 KiB-page curve that the huge-page curve lacks:
    /// TLB reach, not a cache.
    pub tlb_boundaries_bytes: Vec<u64>,
    pub max_size_bytes: u64,
}

impl Analysis {
    pub fn lines(&self) -> Vec<String> {
        let mut out = vec![format!(
            "plateaus ({}, each point's fastest sample):",
            self.series
        )];
        for p in &self.plateaus {
            out.push(format!(
                "  {:>9} – {:<9} {}",
                human_bytes(p.from_bytes).replace(".0 ", " "),
                human_bytes(p.to_bytes).replace(".0 ", " "),
                format_ns(p.median_ns)
            ));
        }
        for l in &self.levels {
            let sys = human_bytes(l.sysfs_bytes).replace(".0 ", " ");
            match (l.found_bytes, &l.note) {
                (Some(b), _) => out.push(format!(
                    "L{} (sysfs {sys}): boundary at {} — matches within 2×",
                    l.level,
                    human_bytes(b).replace(".0 ", " ")
                )),
                (None, Some(n)) => out.push(format!("L{} (sysfs {sys}): {n}", l.level)),
                (None, None) => out.push(format!("L{} (sysfs {sys}): not found", l.level)),
            }
        }
        if !self.tlb_boundaries_bytes.is_empty() {
            out.push(format!(
                "4 KiB pages only, TLB reach: latency rises after {}",
                self.tlb_boundaries_bytes
                    .iter()
                    .map(|b| human_bytes(*b).replace(".0 ", " "))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        out
    }
}

/// Sizes after which the latency rises 25% or more above the plateau so
/// far (its lowest value); the climb that follows, while each point is
/// 10% above the one before, is one transition, and the next plateau is
/// measured from its top.
pub fn boundaries(points: &[(u64, f64)]) -> Vec<u64> {
    let mut out = Vec::new();
    let Some(&(_, first)) = points.first() else {
        return out;
    };
    let mut base = first;
    let mut i = 1;
    while let Some(&(_, v)) = points.get(i) {
        // A rise counts when the next point stays up too: one noisy point,
        // the last one included, is not a cache boundary.
        let sustained = points.get(i + 1).is_some_and(|&(_, n)| n >= 1.25 * base);
        if base > 0.0 && v >= 1.25 * base && sustained {
            if let Some(&(before, _)) = points.get(i - 1) {
                out.push(before);
            }
            while let (Some(&(_, a)), Some(&(_, b))) = (points.get(i), points.get(i + 1)) {
                if b >= a * 1.1 {
                    i += 1;
                } else {
                    break;
                }
            }
            base = points.get(i).map_or(v, |p| p.1);
        } else {
            base = base.min(v);
        }
        i += 1;
    }
    out
}

/// Runs of points between boundaries, with their median latency.
pub fn plateaus(points: &[(u64, f64)], bounds: &[u64]) -> Vec<Plateau> {
    let mut out = Vec::new();
    let mut run: Vec<(u64, f64)> = Vec::new();
    for &(s, v) in points {
        run.push((s, v));
        if bounds.contains(&s) {
            out.push(close(&run));
            run.clear();
        }
    }
    if !run.is_empty() {
        out.push(close(&run));
    }
    out
}

fn close(run: &[(u64, f64)]) -> Plateau {
    let vals: Vec<f64> = run.iter().map(|p| p.1).collect();
    Plateau {
        from_bytes: run.first().map_or(0, |p| p.0),
        to_bytes: run.last().map_or(0, |p| p.0),
        median_ns: crate::stats::summarize(&vals).map_or(0.0, |s| s.median),
    }
}

/// Judges the caches against the boundaries of `main` (huge pages where
/// they took) and `base` (4 KiB pages).
pub fn analyse(
    series: &str,
    main: &[(u64, f64)],
    base: &[(u64, f64)],
    caches: &[super::machine::CacheInfo],
) -> Analysis {
    let b_main = boundaries(main);
    let b_base = boundaries(base);
    let max = main.last().map_or(0, |p| p.0);
    let near = |a: u64, b: u64| a.saturating_mul(2) >= b && b.saturating_mul(2) >= a;
    let levels = data_caches(caches)
        .iter()
        .map(|c| {
            let found = b_main.iter().copied().find(|b| near(*b, c.size_bytes));
            let note = match found {
                Some(_) => None,
                None if c.size_bytes > max => Some(format!(
                    "not reached: the sweep stopped at {} (raise --max-mem or use --full)",
                    human_bytes(max).replace(".0 ", " ")
                )),
                None if c.size_bytes.saturating_mul(2) > max => Some(format!(
                    "not shown: the sweep ends at {}, too close to the level to see past it",
                    human_bytes(max).replace(".0 ", " ")
                )),
                None => Some(
                    "does not show: no rise of 25% within 2× of this size (in a VM sysfs may describe the host's cache, and TLB misses can blur it)"
                        .to_string(),
                ),
            };
            LevelCheck {
                level: c.level,
                sysfs_bytes: c.size_bytes,
                found_bytes: found,
                note,
            }
        })
        .collect();
    let tlb = b_base
        .iter()
        .copied()
        .filter(|b| !b_main.iter().any(|m| near(*m, *b)))
        .collect();
    Analysis {
        series: series.to_string(),
        plateaus: plateaus(main, &b_main),
        boundaries_bytes: b_main,
        levels,
        tlb_boundaries_bytes: tlb,
        max_size_bytes: max,
    }
}
