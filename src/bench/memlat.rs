//! memlat: load-to-use latency by working-set size. A random cyclic
//! pointer chase (Sattolo's shuffle) over 64-byte nodes, one per cache
//! line, spread over every line and page of the working set, so neither
//! the prefetchers nor out-of-order execution can help: each load waits
//! for the one before. Run with 4 KiB pages and with transparent huge
//! pages (`MADV_HUGEPAGE`) to separate cache misses from TLB misses, and
//! as a sequential 64-byte-stride chase to show what prefetching hides.
//!
//! The plateaus of the curve are found and set beside the cache sizes
//! sysfs reports; a level that does not show is reported as such, never
//! given an invented boundary.

use std::time::Duration;

use super::harness::Samples;
use super::machine::llc_bytes;
pub use super::staircase::{Analysis, LevelCheck, Plateau, analyse, boundaries, plateaus};
use super::figure::Figure;
use super::scratch::Rng;
use super::model::{BenchResult, Mode, Section};
use super::spec::{Benchmark, Ctx, Marks, Plot, PlotKind, StepError, step_err};
use crate::sys::buffers::{AnonMap, Pages};
use crate::units::human_bytes;

pub const BENCH: Benchmark = Benchmark {
    name: "memlat",
    section: Section::Memory,
    about: "load-to-use latency by working-set size (random and stride chase)",
    heavy: false,
    uses_dir: false,
    switches_by_design: false,
    estimate: |c| {
        let sizes = sizes(c.mode, c.max_mem_bytes, Some(128 << 20), c.tiny()).len() as u32;
        c.budget_per_figure() * sizes * 3
            + Duration::from_secs(if c.mode == Mode::Full { 8 } else { 2 })
    },
    run,
    plots: &[Plot {
        heading: "Memory latency",
        title: "memlat: load-to-use latency by working set (dashed: sysfs cache sizes within the sweep)",
        figures: "",
        kind: PlotKind::Sweep {
            x_label: "working set",
            y_label: "ns per load",
            x_base: 2.0,
            marks: Marks::CacheSizes,
        },
    }],
};

const LINE: usize = 64;
const WORDS_PER_LINE: usize = LINE / 8;

/// Working-set sizes: 1 KiB up to the mode's bound (quick: 64 MiB; full:
/// at least 4× the LLC), never above `max_mem`, at every power of two and
/// halfway (×1.5) between, so a 48 KiB cache has a point of its own.
pub fn sizes(mode: Mode, max_mem: u64, llc: Option<u64>, tiny: bool) -> Vec<u64> {
    let bound = if tiny {
        64 << 10
    } else {
        match mode {
            Mode::Quick | Mode::Standard => 64 << 20,
            Mode::Full => llc
                .map_or(512 << 20, |l| l.saturating_mul(4))
                .max(256 << 20)
                .next_power_of_two(),
        }
    };
    let bound = bound.min(max_mem).max(1024);
    let mut out = Vec::new();
    let mut s = 1024u64;
    while s <= bound {
        out.push(s);
        if s + s / 2 <= bound {
            out.push(s + s / 2);
        }
        s *= 2;
    }
    out
}

/// Links the first `bytes` of `words` into one random cycle over its
/// cache lines (Sattolo: every node is visited once per lap).
pub fn build_random_chain(words: &mut [u64], bytes: usize, rng: &mut Rng) {
    let nodes = (bytes / LINE).min(words.len() / WORDS_PER_LINE);
    if nodes == 0 {
        return;
    }
    let mut order: Vec<usize> = (0..nodes).collect();
    for i in (1..nodes).rev() {
        let j = rng.below(i as u64) as usize;
        order.swap(i, j);
    }
    for (i, &node) in order.iter().enumerate() {
        let next = order.get(i + 1).or(order.first()).copied().unwrap_or(0);
        if let Some(w) = words.get_mut(node * WORDS_PER_LINE) {
            *w = (next * WORDS_PER_LINE) as u64;
        }
    }
}

/// Links the lines in address order (a fixed 64-byte stride), wrapping.
pub fn build_stride_chain(words: &mut [u64], bytes: usize) {
    let nodes = (bytes / LINE).min(words.len() / WORDS_PER_LINE);
    for node in 0..nodes {
        if let Some(w) = words.get_mut(node * WORDS_PER_LINE) {
            *w = (((node + 1) % nodes) * WORDS_PER_LINE) as u64;
        }
    }
}

/// Follows the chain `steps` times from `start`; returns where it ended.
#[inline(never)]
pub fn chase(words: &[u64], start: usize, steps: u64) -> usize {
    let mut p = start;
    for _ in 0..steps {
        // A miss would be a bug in the chain; the branch is never taken
        // and stays off the dependent-load path.
        match words.get(p) {
            Some(&n) => p = n as usize,
            None => break,
        }
    }
    p
}

/// AnonHugePages of this process, bytes.
fn anon_huge_bytes() -> Option<u64> {
    let text = crate::procfs::ProcRoot::default()
        .read("self/smaps_rollup")
        .ok()?;
    crate::procfs::smaps_rollup::anon_huge_pages_bytes(&text)
}

struct Series {
    key: &'static str,
    label: &'static str,
    pages: Pages,
    random: bool,
    definition: &'static str,
}

const SERIES: [Series; 3] = [
    Series {
        key: "random_4k",
        label: "random, 4 KiB pages",
        pages: Pages::Base,
        random: true,
        definition: "ns per dependent load, random cyclic chase over 64 B lines, MADV_NOHUGEPAGE (loop overhead not subtracted: it overlaps the loads)",
    },
    Series {
        key: "random_huge",
        label: "random, huge pages",
        pages: Pages::Huge,
        random: true,
        definition: "ns per dependent load, random cyclic chase over 64 B lines, MADV_HUGEPAGE (2 MiB pages where the kernel granted them)",
    },
    Series {
        key: "stride_4k",
        label: "stride 64 B, 4 KiB pages",
        pages: Pages::Base,
        random: false,
        definition: "ns per dependent load, sequential 64 B-stride chase (what prefetchers hide)",
    },
];

fn run(ctx: &mut Ctx<'_>, out: &mut BenchResult) -> Result<(), StepError> {
    let llc = llc_bytes(&ctx.machine.caches);
    let sizes = sizes(ctx.cfg.mode, ctx.cfg.max_mem_bytes, llc, ctx.cfg.tiny());
    let Some(&max) = sizes.last() else {
        return Ok(());
    };
    if let Some(l) = llc
        && ctx.cfg.mode == Mode::Full && max < l.saturating_mul(4) {
            out.notes.push(format!(
                "--max-mem caps the sweep at {}, below 4× the LLC ({})",
                human_bytes(max),
                human_bytes(l.saturating_mul(4))
            ));
        }
    let mut curves: Vec<(String, Vec<(u64, f64)>)> = Vec::new();
    let mut huge_ok = false;
    for series in &SERIES {
        ctx.step(format!("{} up to {}", series.label, human_bytes(max)));
        let huge_before = anon_huge_bytes().unwrap_or(0);
        let mut map = AnonMap::new(max as usize, series.pages)
            .map_err(step_err(format!("mmap {} for memlat", human_bytes(max))))?;
        // Non-zero fill doubles as the pre-touch (first touch in a VM is slow).
        for (i, w) in map.words_mut().iter_mut().enumerate() {
            *w = 0x5a5a_5a5a_0000_0001 ^ i as u64;
        }
        if series.pages == Pages::Huge {
            let got = anon_huge_bytes().unwrap_or(0).saturating_sub(huge_before);
            huge_ok = got >= max / 2 && max >= 4 << 20;
            out.notes.push(format!(
                "huge pages: {} of the {} buffer backed by transparent huge pages (THP mode {})",
                human_bytes(got),
                human_bytes(max),
                ctx.machine.thp_enabled.as_deref().unwrap_or("unknown")
            ));
        }
        let mut rng = Rng::new(0x6d65_6d6c_6174);
        let mut points = Vec::new();
        for &size in &sizes {
            let bytes = size as usize;
            let words = map.words_mut();
            if series.random {
                build_random_chain(words, bytes, &mut rng);
            } else {
                build_stride_chain(words, bytes);
            }
            let words = map.words();
            // One lap first: brings the working set into whatever holds it.
            let mut p = chase(words, 0, (bytes / LINE) as u64);
            let s: Samples = ctx
                .h
                .sample(&mut |iters, t| {
                    let s = t.now();
                    p = chase(words, p, iters);
                    t.ns_since(s)
                });
            std::hint::black_box(p);
            let f = Figure::latency(
                format!("memlat.{}.{size}", series.key),
                series.label,
                series.definition,
                s,
            )
            .at(size, "bytes");
            // Plateaus are judged on each point's fastest sample: on a
            // shared machine preemption only ever adds time, and one slow
            // median must not make or hide a cache level.
            if let Some(s) = f.measured() {
                points.push((size, s.min));
            }
            out.push(f);
        }
        curves.push((series.label.to_string(), points));
    }
    let find = |label: &str| {
        curves
            .iter()
            .find(|(l, _)| l == label)
            .map(|(_, p)| p.clone())
            .unwrap_or_default()
    };
    let base = find(SERIES[0].label);
    let (label, main) = if huge_ok {
        (SERIES[1].label, find(SERIES[1].label))
    } else {
        (SERIES[0].label, base.clone())
    };
    out.memlat = Some(analyse(label, &main, &base, &ctx.machine.caches));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::machine::CacheInfo;
    use super::*;

    #[test]
    fn sizes_double_and_respect_the_cap() {
        let s = sizes(Mode::Quick, 1 << 40, None, false);
        assert_eq!(s.first(), Some(&1024));
        assert_eq!(s.last(), Some(&(64 << 20)));
        assert!(s.windows(2).all(|w| w[1] > w[0] && w[1] <= w[0] * 2));
        assert!(s.contains(&(48 << 10)));
        let capped = sizes(Mode::Full, 1 << 20, Some(100 << 20), false);
        assert_eq!(capped.last(), Some(&(1 << 20)));
        let full = sizes(Mode::Full, 1 << 40, Some(105 << 20), false);
        assert!(*full.last().unwrap() >= 4 * (105 << 20));
        assert_eq!(sizes(Mode::Quick, 0, None, false), vec![1024]);
        assert_eq!(
            sizes(Mode::Quick, 1 << 30, None, true).last(),
            Some(&(64 << 10))
        );
    }

    #[test]
    fn random_chain_is_one_cycle_over_every_line() {
        let mut words = vec![0u64; 1024];
        build_random_chain(&mut words, 8192, &mut Rng::new(1));
        let nodes = 8192 / LINE;
        let mut seen = vec![false; nodes];
        let mut p = 0usize;
        for _ in 0..nodes {
            assert_eq!(p % WORDS_PER_LINE, 0);
            assert!(!seen[p / WORDS_PER_LINE], "node visited twice");
            seen[p / WORDS_PER_LINE] = true;
            p = chase(&words, p, 1);
        }
        assert_eq!(p, 0);
        assert!(seen.iter().all(|s| *s));
    }

    #[test]
    fn stride_chain_walks_in_order() {
        let mut words = vec![0u64; 64];
        build_stride_chain(&mut words, 512);
        assert_eq!(chase(&words, 0, 1), 8);
        assert_eq!(chase(&words, 0, 8), 0);
    }

    #[test]
    fn tiny_buffers_do_not_panic() {
        let mut words = vec![0u64; 4];
        build_random_chain(&mut words, 1 << 20, &mut Rng::new(2));
        build_stride_chain(&mut words, 1 << 20);
        assert_eq!(chase(&[], 5, 10), 5);
    }

    fn cache(level: u32, size: u64) -> CacheInfo {
        CacheInfo {
            level,
            kind: "Unified".into(),
            size_bytes: size,
            line_bytes: Some(64),
            shared_cpu_list: None,
        }
    }

    #[test]
    fn staircase_finds_levels_and_reports_missing_ones() {
        let pts: Vec<(u64, f64)> = (10..=26)
            .map(|p| {
                let s = 1u64 << p;
                let v = if s <= 32 << 10 {
                    1.3
                } else if s <= 1 << 20 {
                    4.0
                } else {
                    20.0
                };
                (s, v)
            })
            .collect();
        let caches = [cache(1, 48 << 10), cache(2, 2 << 20), cache(3, 105 << 20)];
        let a = analyse("x", &pts, &pts, &caches);
        assert_eq!(a.boundaries_bytes, vec![32 << 10, 1 << 20]);
        assert_eq!(a.plateaus.len(), 3);
        assert_eq!(a.levels[0].found_bytes, Some(32 << 10));
        assert_eq!(a.levels[1].found_bytes, Some(1 << 20));
        assert_eq!(a.levels[2].found_bytes, None);
        assert!(a.levels[2].note.as_deref().unwrap().contains("not reached"));
        assert!(a.tlb_boundaries_bytes.is_empty());
    }

    #[test]
    fn flat_curves_find_nothing() {
        let pts = vec![(1024, 1.0), (2048, 1.1), (4096, 1.0)];
        assert!(boundaries(&pts).is_empty());
        assert_eq!(plateaus(&pts, &[]).len(), 1);
        assert!(boundaries(&[]).is_empty());
        // A slow climb in small steps is still one transition.
        let climb = vec![(1, 1.0), (2, 1.0), (3, 1.15), (4, 1.3), (5, 1.5), (6, 1.5)];
        assert_eq!(boundaries(&climb), vec![3]);
        // One noisy point is not a boundary.
        let blip = vec![(1, 1.0), (2, 2.0), (3, 1.0), (4, 1.0)];
        assert!(boundaries(&blip).is_empty());
        let last = vec![(1, 1.0), (2, 1.0), (3, 2.0)];
        assert!(boundaries(&last).is_empty());
    }
}
