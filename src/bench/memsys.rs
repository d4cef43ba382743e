//! memsys: the memory system's shape, as lmbench's `line`, `tlb` and
//! `par_mem` measure it.
//!
//! - **Cache line by stride**: a chase through the blocks of a buffer
//!   whose lines outgrow L1 but fit L2 (4 KiB blocks in random order, so
//!   no prefetcher follows), loading every `stride` bytes of a block in
//!   random order; above 64 B the buffer grows with the stride, so the
//!   lines touched stay the same.
//!   Below the line size several loads share a line and hit; from the line
//!   size up, every load misses. Below the line each doubling of the
//!   stride adds twice what the one before added; the line is where that
//!   stops.
//! - **TLB reach**: a random chase touching one cache line per page (each
//!   page a different line, so the lines spread over the cache sets and
//!   all fit in L2) over more and more pages, 4 KiB pages and transparent
//!   huge pages. Latency rises where the pages outgrow a TLB level: the
//!   reach is the last size before the rise (pages × page size).
//! - **Memory-level parallelism**: 1, 2, 4, 8, 16 independent random
//!   chases in flight over a buffer beyond the last-level cache; the time
//!   per load falls as long as the core can keep more misses in flight.

use std::time::Duration;

use super::figure::Figure;
use super::harness::Samples;
use super::machine::{data_caches, llc_bytes};
use super::model::{BenchResult, Mode, Section};
use super::scratch::Rng;
use super::spec::{Benchmark, Ctx, Marks, Plot, PlotKind, StepError, step_err};
use super::staircase::boundaries;
use crate::sys::buffers::{AnonMap, HUGE_BYTES, Pages};
use crate::units::human_bytes;

pub const BENCH: Benchmark = Benchmark {
    name: "memsys",
    section: Section::Memory,
    about: "cache line size by stride, TLB reach (4 KiB and huge pages), memory-level parallelism",
    heavy: false,
    uses_dir: false,
    switches_by_design: false,
    estimate: |c| c.budget_per_figure() * 34 + Duration::from_secs(1),
    run,
    plots: &[
        Plot {
            heading: "memsys",
            title: "memsys: memory-level parallelism — ns per load with N independent chases in flight",
            figures: "memsys.mlp.",
            kind: PlotKind::Sweep {
                x_label: "chases in flight",
                y_label: "ns per load",
                x_base: 2.0,
                marks: Marks::None,
            },
        },
        Plot {
            heading: "memsys",
            title: "memsys: TLB reach — ns per load, one line per page, by pages × page size",
            figures: "memsys.tlb_",
            kind: PlotKind::Sweep {
                x_label: "memory mapped by the pages touched",
                y_label: "ns per load",
                x_base: 2.0,
                marks: Marks::None,
            },
        },
        Plot {
            heading: "memsys",
            title: "memsys: ns per load by stride (the cache line is where it stops rising)",
            figures: "memsys.stride.",
            kind: PlotKind::Sweep {
                x_label: "stride",
                y_label: "ns per load",
                x_base: 2.0,
                marks: Marks::None,
            },
        },
    ],
};

const PAGE: usize = 4096;
/// Strides tried for the line size, bytes.
pub const STRIDES: [usize; 8] = [8, 16, 32, 64, 128, 256, 512, 1024];
/// Chases in flight for the MLP curve.
pub const CHASES: [usize; 5] = [1, 2, 4, 8, 16];

/// Follows `K` independent chains `steps` times each; returns where they
/// ended (kept by the caller, so the loads cannot be dropped).
#[inline(never)]
pub fn chase_k<const K: usize>(words: &[u64], mut p: [usize; K], steps: u64) -> [usize; K] {
    for _ in 0..steps {
        for q in p.iter_mut() {
            *q = words.get(*q).map_or(0, |n| *n as usize);
        }
    }
    p
}

/// Links `offsets` (word indexes) into one cycle in the given order.
fn link(words: &mut [u64], order: &[usize]) {
    for (i, &at) in order.iter().enumerate() {
        let next = order.get(i + 1).or(order.first()).copied().unwrap_or(0);
        if let Some(w) = words.get_mut(at) {
            *w = next as u64;
        }
    }
}

fn shuffle(v: &mut [usize], rng: &mut Rng) {
    for i in (1..v.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        v.swap(i, j);
    }
}

/// The stride chain: 4 KiB blocks in random order; inside a block, every
/// `stride`-th byte in random order. Returns the word indexes in chase
/// order (the first is where to start).
pub fn stride_order(bytes: usize, stride: usize, rng: &mut Rng) -> Vec<usize> {
    let stride = stride.clamp(8, PAGE);
    let mut blocks: Vec<usize> = (0..bytes / PAGE).collect();
    shuffle(&mut blocks, rng);
    let per_block = PAGE / stride;
    let mut order = Vec::with_capacity(blocks.len() * per_block);
    let mut inner: Vec<usize> = (0..per_block).collect();
    // Above 64 B a stride would use only every (stride / 64)-th cache set:
    // each block shifts its pattern by a line, so the sets fill evenly.
    let shifts = (stride / 64).max(1);
    for b in blocks {
        shuffle(&mut inner, rng);
        let shift = (b % shifts) * 64;
        order.extend(inner.iter().map(|k| (b * PAGE + k * stride + shift) / 8));
    }
    order
}

/// The TLB chain: one line in each of `pages` pages of `page` bytes, line
/// `i mod (page / 64)`-ish spread so the lines fill the cache sets evenly,
/// pages in random order.
pub fn tlb_order(pages: usize, page: usize, rng: &mut Rng) -> Vec<usize> {
    let lines_per_page = (page / 64).max(1);
    // Spread over at most 64 lines of a 4 KiB page, so the lines of
    // consecutive pages land in different sets.
    let spread = lines_per_page.min(PAGE / 64);
    let mut order: Vec<usize> = (0..pages)
        .map(|p| (p * page + (p * 7 % spread) * 64) / 8)
        .collect();
    shuffle(&mut order, rng);
    order
}

/// The line size from a stride curve. Below the line, a load misses once
/// per line: the latency is hit + (miss − hit) × stride / line, so each
/// doubling of the stride adds twice what the one before added; at the
/// line the rise stops. The line is the first stride whose next doubling
/// adds less than half what the doubling before it added (prefetchers
/// that follow dense accesses within a page can make larger strides rise
/// again later; the first break is the line). None when the curve never
/// rises by half (everything hit: the buffer fit a cache) or no break
/// shows.
pub fn line_from_strides(points: &[(u64, f64)]) -> Option<u64> {
    let &(_, top) = points.iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
    let &(_, bottom) = points.first()?;
    if points.len() < 3 || top.partial_cmp(&(bottom * 1.5)) != Some(std::cmp::Ordering::Greater) {
        return None;
    }
    let rises: Vec<(u64, f64)> = points.windows(2).map(|w| (w[0].0, w[1].1 - w[0].1)).collect();
    rises
        .windows(2)
        .find(|w| w[0].1 > 0.0 && w[1].1 < 0.5 * w[0].1)
        .map(|w| w[1].0)
}

/// Pages for the TLB sweep (powers of two from 16 up to `max_pages`).
pub fn tlb_pages(max_pages: usize) -> Vec<usize> {
    let mut out = Vec::new();
    let mut n = 16usize;
    while n <= max_pages {
        out.push(n);
        n *= 2;
    }
    out
}

/// AnonHugePages of this process, bytes.
fn anon_huge_bytes() -> Option<u64> {
    let text = crate::procfs::ProcRoot::default()
        .read("self/smaps_rollup")
        .ok()?;
    crate::procfs::smaps_rollup::anon_huge_pages_bytes(&text)
}

/// Measures the chase `order` (built in `words`) one chain at a time.
fn measure_chain(ctx: &Ctx<'_>, words: &[u64], start: usize, laps: u64) -> Samples {
    // One lap first: brings the working set into whatever holds it.
    let mut p = chase_k(words, [start], laps);
    let s = ctx.h.sample(&mut |iters, t| {
        let s = t.now();
        p = chase_k(words, p, iters);
        t.ns_since(s)
    });
    std::hint::black_box(p);
    s
}

fn mlp_samples(ctx: &Ctx<'_>, words: &[u64], starts: &[usize], k: usize) -> Samples {
    let h = ctx.h;
    macro_rules! run_k {
        ($k:literal) => {{
            let mut p = [0usize; $k];
            for (q, s) in p.iter_mut().zip(starts) {
                *q = *s;
            }
            let s = h.sample(&mut |iters, t| {
                let s = t.now();
                p = chase_k(words, p, iters);
                t.ns_since(s)
            });
            std::hint::black_box(p);
            s
        }};
    }
    let mut s = match k {
        1 => run_k!(1),
        2 => run_k!(2),
        4 => run_k!(4),
        8 => run_k!(8),
        _ => run_k!(16),
    };
    // A step moves every chase once: per load is per step / k.
    for v in &mut s.per_op_ns {
        *v /= k as f64;
    }
    s
}

fn run(ctx: &mut Ctx<'_>, out: &mut BenchResult) -> Result<(), StepError> {
    let mut rng = Rng::new(0x6d65_6d73_7973);
    line_by_stride(ctx, out, &mut rng)?;
    tlb_4k(ctx, out, &mut rng)?;
    // 3. TLB reach with huge pages, and 4. MLP, on one huge-page buffer.
    let mut huge = HugeBuffer::map(ctx)?;
    tlb_2m(ctx, out, &mut rng, &mut huge);
    mlp(ctx, out, &mut rng, &mut huge);
    Ok(())
}

/// Links `order` in `map` and measures one chase around it.
fn chase(ctx: &Ctx<'_>, map: &mut AnonMap, order: &[usize]) -> Samples {
    link(map.words_mut(), order);
    let start = order.first().copied().unwrap_or(0);
    measure_chain(ctx, map.words(), start, order.len() as u64)
}

/// Pushes `f`, and its fastest at `x` onto `curve` when it was measured.
fn push_point(out: &mut BenchResult, curve: &mut Vec<(u64, f64)>, x: u64, f: Figure) {
    if let Some(m) = f.measured() {
        curve.push((x, m.min));
    }
    out.push(f);
}

/// Step 1, the cache line by stride. The lines touched must outgrow L1 and fit
/// L2 at every stride: a buffer of `lines` bytes for strides up to 64 B,
/// `lines` × stride / 64 above (so `lines` / 64 loads, one line each,
/// once the stride passes the line size).
fn line_by_stride(
    ctx: &mut Ctx<'_>,
    out: &mut BenchResult,
    rng: &mut Rng,
) -> Result<(), StepError> {
    let max_mem = ctx.cfg.max_mem_bytes as usize;
    let largest = |level: u32, default: usize| {
        data_caches(&ctx.machine.caches)
            .iter()
            .filter(|c| c.level == level)
            .map(|c| c.size_bytes as usize)
            .max()
            .unwrap_or(default)
    };
    let (l1, l2) = (largest(1, 32 << 10), largest(2, 1 << 20));
    let lines = if ctx.cfg.tiny() {
        64 << 10
    } else {
        (8 * l1).clamp(64 << 10, (l2 / 2).max(64 << 10))
    } / PAGE
        * PAGE;
    let stride_buffer = |s: usize| (lines * (s / 64).max(1)).min(max_mem.max(PAGE)) / PAGE * PAGE;
    let biggest = stride_buffer(STRIDES[STRIDES.len() - 1]).max(PAGE);
    ctx.step(format!(
        "stride chase touching {} of lines",
        human_bytes(lines as u64)
    ));
    let mut map =
        AnonMap::new(biggest, Pages::Huge).map_err(step_err("mmap the stride buffer"))?;
    map.words_mut().fill(0);
    let mut points = Vec::new();
    for stride in STRIDES {
        let order = stride_order(stride_buffer(stride), stride, rng);
        let s = chase(ctx, &mut map, &order);
        let f = Figure::latency(
            format!("memsys.stride.{stride}"),
            "by stride",
            &format!(
                "ns per dependent load, every stride-th byte of random 4 KiB blocks in random order, {} of lines touched (between L1 and L2)",
                human_bytes(lines as u64)
            ),
            s,
        )
        .at(stride as u64, "bytes");
        push_point(out, &mut points, stride as u64, f);
    }
    drop(map);
    let sysfs_line = ctx
        .machine
        .caches
        .iter()
        .find(|c| c.level == 1)
        .and_then(|c| c.line_bytes);
    out.push(line_figure(&points, sysfs_line));
    Ok(())
}

/// The cache line found by the stride chase, against what sysfs says.
fn line_figure(points: &[(u64, f64)], sysfs_line: Option<u64>) -> Figure {
    let line_def = "the stride where latency stops rising in proportion: the first doubling of the stride that adds less than half what the doubling before it added";
    match line_from_strides(points) {
        Some(b) => {
            let f = Figure::bytes("memsys.line", "cache line (by stride)", line_def, vec![b as f64]);
            f.note(match sysfs_line {
                Some(s) if s == b => format!("sysfs says {s} B: agrees"),
                Some(s) => format!(
                    "sysfs says {s} B: differs (a prefetcher fetching lines in pairs shows as a larger line; a noisy run can break the curve early)"
                ),
                None => "sysfs gives no line size to compare with".into(),
            })
        }
        None => Figure::unavailable(
            "memsys.line",
            "cache line (by stride)",
            line_def,
            "the latency did not rise with the stride by half (the buffer was served from a near cache, or the run was too short)",
        ),
    }
}

/// Step 2, the TLB reach with 4 KiB pages: up to 8,192 pages (32 MiB); the lines
/// touched (8,192 × 64 B = 512 KiB) stay within L2 on most machines.
fn tlb_4k(ctx: &mut Ctx<'_>, out: &mut BenchResult, rng: &mut Rng) -> Result<(), StepError> {
    let max_mem = ctx.cfg.max_mem_bytes as usize;
    let max_pages_4k = if ctx.cfg.tiny() { 64 } else { 8192 }
        .min(max_mem / PAGE)
        .max(16);
    ctx.step(format!("TLB chase over up to {max_pages_4k} pages of 4 KiB"));
    let mut map = AnonMap::new(max_pages_4k * PAGE, Pages::Base)
        .map_err(step_err("mmap the 4 KiB TLB buffer"))?;
    map.words_mut().fill(0);
    let tlb = Tlb {
        page: PAGE,
        key: "tlb_4k",
        label: "4 KiB pages",
        def: "ns per dependent load, one line per 4 KiB page, pages in random order (MADV_NOHUGEPAGE)",
    };
    let curve = tlb.curve(ctx, out, rng, &mut map, &tlb_pages(max_pages_4k));
    drop(map);
    out.push(reach_figure("memsys.tlb_reach_4k", "TLB reach, 4 KiB pages", &curve));
    Ok(())
}

/// A TLB chase over pages of one size: one line per page.
struct Tlb {
    page: usize,
    /// The figures' ids are `memsys.KEY.SPAN`.
    key: &'static str,
    label: &'static str,
    def: &'static str,
}

impl Tlb {
    /// A figure per count of pages in `counts`, chased in `map`: the
    /// curve of the fastest latency against the span.
    fn curve(
        &self,
        ctx: &Ctx<'_>,
        out: &mut BenchResult,
        rng: &mut Rng,
        map: &mut AnonMap,
        counts: &[usize],
    ) -> Vec<(u64, f64)> {
        let mut curve = Vec::new();
        for &pages in counts {
            let order = tlb_order(pages, self.page, rng);
            let s = chase(ctx, map, &order);
            let span = (pages * self.page) as u64;
            let f = Figure::latency(format!("memsys.{}.{span}", self.key), self.label, self.def, s)
                .at(span, "bytes");
            push_point(out, &mut curve, span, f);
        }
        curve
    }
}

/// The buffer of the huge-page TLB chase and of MLP: beyond the
/// last-level cache, mapped with transparent huge pages where the kernel
/// gives them.
struct HugeBuffer {
    map: AnonMap,
    /// Its size.
    big: usize,
    /// What the kernel backed with huge pages.
    got: u64,
    /// Whether that is at least half of it.
    huge_ok: bool,
    /// The last-level cache's size.
    llc: usize,
}

impl HugeBuffer {
    fn map(ctx: &mut Ctx<'_>) -> Result<HugeBuffer, StepError> {
        let llc = llc_bytes(&ctx.machine.caches).unwrap_or(32 << 20) as usize;
        let big = if ctx.cfg.tiny() {
            4 << 20
        } else {
            match ctx.cfg.mode {
                Mode::Full => (4 * llc).max(256 << 20),
                _ => (4 * llc).clamp(64 << 20, 128 << 20),
            }
        }
        .min(ctx.cfg.max_mem_bytes as usize)
            / HUGE_BYTES
            * HUGE_BYTES;
        let big = big.max(HUGE_BYTES);
        ctx.step(format!("huge-page buffer of {}", human_bytes(big as u64)));
        let before = anon_huge_bytes().unwrap_or(0);
        let mut map =
            AnonMap::new(big, Pages::Huge).map_err(step_err("mmap the huge-page buffer"))?;
        map.words_mut().fill(0);
        let got = anon_huge_bytes().unwrap_or(0).saturating_sub(before);
        Ok(HugeBuffer {
            map,
            big,
            got,
            huge_ok: got as usize >= big / 2,
            llc,
        })
    }
}

/// Step 3, the TLB reach with 2 MiB pages, or why it is unavailable.
fn tlb_2m(ctx: &Ctx<'_>, out: &mut BenchResult, rng: &mut Rng, huge: &mut HugeBuffer) {
    let (big, got) = (huge.big, huge.got);
    if !huge.huge_ok {
        let thp = ctx.machine.thp_enabled.clone().unwrap_or_default();
        let why = if thp.contains("[never]") {
            "transparent huge pages are disabled (/sys/kernel/mm/transparent_hugepage/enabled is never); tally does not use hugetlbfs pages".to_string()
        } else {
            format!(
                "the kernel backed only {} of the {} buffer with huge pages (THP mode {}; memory too fragmented, or a cap); tally does not use hugetlbfs pages",
                human_bytes(got),
                human_bytes(big as u64),
                if thp.is_empty() { "unknown" } else { thp.as_str() }
            )
        };
        out.push(Figure::unavailable(
            "memsys.tlb_reach_2m",
            "TLB reach, 2 MiB pages",
            "memory mapped by the pages touched before latency rises 25%",
            why,
        ));
        return;
    }
    let max_pages = big / HUGE_BYTES;
    let counts: Vec<usize> = std::iter::successors(Some(2usize), |p| Some(p * 2))
        .take_while(|p| *p <= max_pages)
        .collect();
    let tlb = Tlb {
        page: HUGE_BYTES,
        key: "tlb_2m",
        label: "2 MiB pages",
        def: "ns per dependent load, one line per 2 MiB transparent huge page, pages in random order",
    };
    let curve = tlb.curve(ctx, out, rng, &mut huge.map, &counts);
    out.push(
        reach_figure("memsys.tlb_reach_2m", "TLB reach, 2 MiB pages", &curve).note(format!(
            "{} of the {} buffer backed by transparent huge pages",
            human_bytes(got),
            human_bytes(big as u64)
        )),
    );
}

/// Step 4, MLP over the whole buffer: one random cycle over its lines, the
/// chases started evenly apart along it.
fn mlp(ctx: &mut Ctx<'_>, out: &mut BenchResult, rng: &mut Rng, huge: &mut HugeBuffer) {
    ctx.step("memory-level parallelism");
    let big = huge.big;
    let nodes = big / 64;
    let mut order: Vec<usize> = (0..nodes).map(|n| n * 8).collect();
    shuffle(&mut order, rng);
    link(huge.map.words_mut(), &order);
    let words = huge.map.words();
    // Warm the TLB and whatever caches hold part of the buffer.
    std::hint::black_box(chase_k(words, [order.first().copied().unwrap_or(0)], nodes as u64));
    let mut base = None;
    for k in CHASES {
        let starts: Vec<usize> = (0..k)
            .map(|i| order.get(i * nodes / k).copied().unwrap_or(0))
            .collect();
        let s = mlp_samples(ctx, words, &starts, k);
        let mut f = Figure::latency(
            format!("memsys.mlp.{k}"),
            "per load",
            &format!(
                "ns per load with N independent random chases in flight over {} ({})",
                human_bytes(big as u64),
                if huge.huge_ok { "huge pages" } else { "4 KiB pages: TLB misses included" }
            ),
            s,
        )
        .at(k as u64, "chases");
        match (k, f.measured().map(|m| m.median)) {
            (1, Some(m)) => base = Some(m),
            (_, Some(m)) => {
                if let Some(b) = base {
                    f = f.note(format!("{:.1}× the loads per second of one chase", b / m));
                }
            }
            _ => {}
        }
        out.push(f);
    }
    if big < 2 * huge.llc && !ctx.cfg.tiny() {
        out.notes.push(format!(
            "the MLP buffer ({}) is under twice the last-level cache ({}): some loads hit it",
            human_bytes(big as u64),
            human_bytes(huge.llc as u64)
        ));
    }
}

/// The TLB reach from a curve: the first size after which latency rises
/// 25% and stays up.
fn reach_figure(id: &str, label: &str, curve: &[(u64, f64)]) -> Figure {
    let def = "memory mapped by the pages touched before latency rises 25% (first TLB level)";
    match boundaries(curve).first() {
        Some(&b) => {
            let mut f = Figure::bytes(id, label, def, vec![b as f64]);
            let more: Vec<String> = boundaries(curve)
                .iter()
                .skip(1)
                .map(|b| human_bytes(*b).replace(".0 ", " "))
                .collect();
            if !more.is_empty() {
                f = f.note(format!("further rises after {}", more.join(", ")));
            }
            f
        }
        None => Figure::unavailable(
            id,
            label,
            def,
            format!(
                "no sustained rise of 25% up to {}: the TLBs reach further than the sweep",
                curve
                    .last()
                    .map_or("the end".into(), |c| human_bytes(c.0).replace(".0 ", " "))
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cycle_len(words: &[u64], start: usize) -> usize {
        let mut p = start;
        let mut n = 0;
        loop {
            p = chase_k(words, [p], 1)[0];
            n += 1;
            if p == start || n > words.len() {
                return n;
            }
        }
    }

    #[test]
    fn stride_chain_visits_every_stride_once() {
        for stride in STRIDES {
            let bytes = 64 << 10;
            let mut words = vec![0u64; bytes / 8];
            let order = stride_order(bytes, stride, &mut Rng::new(3));
            assert_eq!(order.len(), bytes / stride, "stride {stride}");
            link(&mut words, &order);
            assert_eq!(cycle_len(&words, order[0]), order.len());
            assert!(order.iter().all(|w| (w * 8) % stride.min(64) == 0));
            // Every cache set of a 64-set-per-page cache gets used.
            let mut sets: Vec<usize> = order.iter().map(|w| w * 8 / 64 % 64).collect();
            sets.sort_unstable();
            sets.dedup();
            assert_eq!(sets.len(), 64, "stride {stride}");
        }
    }

    #[test]
    fn tlb_chain_touches_one_line_per_page() {
        let mut words = vec![0u64; 64 * PAGE / 8];
        let order = tlb_order(64, PAGE, &mut Rng::new(4));
        let mut pages: Vec<usize> = order.iter().map(|w| w * 8 / PAGE).collect();
        pages.sort_unstable();
        assert_eq!(pages, (0..64).collect::<Vec<_>>());
        link(&mut words, &order);
        assert_eq!(cycle_len(&words, order[0]), 64);
    }

    #[test]
    fn chases_in_flight_each_advance() {
        let mut words = vec![0u64; 16];
        link(&mut words, &(0..16).collect::<Vec<_>>());
        assert_eq!(chase_k(&words, [0, 4, 8], 3), [3, 7, 11]);
        assert_eq!(chase_k(&[], [5], 2), [0]);
    }

    #[test]
    fn line_is_where_the_stride_curve_levels() {
        let pts: Vec<(u64, f64)> = [(8, 2.0), (16, 3.5), (32, 6.5), (64, 12.0), (128, 12.5), (256, 12.4)]
            .to_vec();
        assert_eq!(line_from_strides(&pts), Some(64));
        // This machine's curve (prefetchers make 256 B and up rise again).
        let seen = [
            (8, 1.53),
            (16, 1.68),
            (32, 2.01),
            (64, 2.69),
            (128, 2.48),
            (256, 3.02),
            (512, 4.54),
            (1024, 4.83),
        ];
        assert_eq!(line_from_strides(&seen), Some(64));
        let flat = [(8, 2.0), (16, 2.0), (32, 2.1)];
        assert_eq!(line_from_strides(&flat), None);
        assert_eq!(line_from_strides(&[]), None);
    }

    #[test]
    fn tlb_pages_double() {
        assert_eq!(tlb_pages(100), vec![16, 32, 64]);
        assert!(tlb_pages(8).is_empty());
    }

    #[test]
    fn reach_is_the_size_before_the_rise() {
        let curve: Vec<(u64, f64)> = (4..12)
            .map(|p| (1u64 << p, if p <= 7 { 3.0 } else { 9.0 }))
            .collect();
        let f = reach_figure("m.r", "r", &curve);
        assert_eq!(f.median(), Some(128.0));
        let flat = [(16u64, 3.0), (32, 3.0), (64, 3.1)];
        assert!(reach_figure("m.r", "r", &flat).median().is_none());
    }
}
