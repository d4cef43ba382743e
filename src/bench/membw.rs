//! membw: RAM bandwidth — read, write and copy over a buffer at least 4×
//! the last-level cache (so the caches cannot hold it), on one thread and
//! on every allowed CPU. GB means 10^9 bytes. Read is a plain loop summing
//! u64 words (the compiler vectorises it); write is `slice::fill` (libc
//! memset); copy is `copy_from_slice` (libc memcpy) and counts each byte
//! copied once (as sysbench and mbw do), not read + write.

use std::sync::Barrier;
use std::time::{Duration, Instant};

use super::harness::{Samples, Timer};
use super::machine::llc_bytes;
use super::plausible;
use super::figure::Figure;
use super::model::{BenchResult, Section};
use super::spec::{Benchmark, Ctx, Plot, PlotKind, StepError, step_err};
use crate::sys;
use crate::sys::buffers::{AnonMap, Pages};
use crate::units::human_bytes;

pub const BENCH: Benchmark = Benchmark {
    name: "membw",
    section: Section::Memory,
    about: "read, write and copy bandwidth, one thread and all threads",
    heavy: false,
    uses_dir: false,
    switches_by_design: true,
    estimate: |c| c.budget_per_figure() * 12 + Duration::from_secs(2),
    run,
    plots: &[Plot {
        heading: "membw",
        title: "membw: GB/s (10^9 bytes per second)",
        figures: "",
        kind: PlotKind::Bars,
    }],
};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kernel {
    Read,
    Write,
    Copy,
}

impl Kernel {
    fn key(self) -> &'static str {
        match self {
            Kernel::Read => "read",
            Kernel::Write => "write",
            Kernel::Copy => "copy",
        }
    }
    fn definition(self) -> &'static str {
        match self {
            Kernel::Read => {
                "GB/s (10^9 B) read: plain loop summing u64 words (compiler-vectorised)"
            }
            Kernel::Write => "GB/s (10^9 B) written: slice::fill (libc memset)",
            Kernel::Copy => {
                "GB/s (10^9 B) copied, each byte counted once: copy_from_slice (libc memcpy)"
            }
        }
    }
}

/// Buffer size: 4× the LLC rounded up to 64 MiB, at least 64 MiB, at
/// most `max_mem` (copy uses two of them).
pub fn buffer_bytes(llc: Option<u64>, max_mem: u64, tiny: bool) -> u64 {
    if tiny {
        return (1u64 << 20).min(max_mem).max(4096);
    }
    let want = llc.unwrap_or(32 << 20).saturating_mul(4).max(64 << 20);
    let want = want.div_ceil(64 << 20).saturating_mul(64 << 20);
    want.min(max_mem / 2).max(4096) / 4096 * 4096
}

/// One pass of `kernel` over `src` (and `dst`).
fn pass(kernel: Kernel, src: &[u64], dst: &mut [u64], salt: u64) -> u64 {
    match kernel {
        Kernel::Read => src.iter().fold(0u64, |a, w| a.wrapping_add(*w)),
        Kernel::Write => {
            dst.fill(salt | 1);
            0
        }
        Kernel::Copy => {
            let n = src.len().min(dst.len());
            if let (Some(d), Some(s)) = (dst.get_mut(..n), src.get(..n)) {
                d.copy_from_slice(s);
            }
            0
        }
    }
}

/// Times `passes` passes on `threads` threads, each over its own slice,
/// and returns the ns the whole buffer took.
///
/// With more than one thread, every worker reads CLOCK_MONOTONIC (the one
/// clock comparable across CPUs) itself, right after the common start (a
/// barrier) and right after its last pass; the span is the earliest start
/// to the latest end, so the bytes of all threads are divided by the time
/// all of them took. (The span used to be read by the calling thread,
/// which shares a CPU with a worker: when the scheduler ran the worker
/// first, the span began late and the bandwidth came out far above what
/// the memory can deliver.)
fn timed_passes(
    timer: &Timer,
    kernel: Kernel,
    src: &AnonMap,
    dst: &mut AnonMap,
    threads: usize,
    cpus: &[usize],
    passes: u64,
) -> f64 {
    let src = src.words();
    let dst = dst.words_mut();
    if threads <= 1 {
        let s = timer.now();
        for p in 0..passes {
            std::hint::black_box(pass(kernel, src, dst, p));
        }
        return timer.ns_since(s);
    }
    let chunk = src.len().div_ceil(threads).max(1);
    let parts = src.chunks(chunk).len().min(dst.len().div_ceil(chunk));
    let barrier = Barrier::new(parts.max(1));
    let spans: Vec<Option<(Instant, Instant)>> = std::thread::scope(|scope| {
        let mut handles = Vec::new();
        for (i, (s, d)) in src.chunks(chunk).zip(dst.chunks_mut(chunk)).enumerate() {
            let barrier = &barrier;
            let cpu = cpus.get(i % cpus.len().max(1)).copied();
            handles.push(scope.spawn(move || {
                if let Some(c) = cpu {
                    let _ = sys::cpu::pin_to_cpu(c);
                }
                barrier.wait();
                let start = Instant::now();
                let mut acc = 0u64;
                for p in 0..passes {
                    acc = acc.wrapping_add(pass(kernel, s, d, p));
                }
                let end = Instant::now();
                std::hint::black_box(acc);
                (start, end)
            }));
        }
        handles.into_iter().map(|h| h.join().ok()).collect()
    });
    span_ns(&spans)
}

/// The span from the earliest start to the latest end, ns; 0 when a
/// thread did not report (it panicked), so the sample shows as too short
/// to time instead of as a figure.
pub(super) fn span_ns(spans: &[Option<(Instant, Instant)>]) -> f64 {
    if spans.is_empty() || spans.iter().any(Option::is_none) {
        return 0.0;
    }
    let first = spans.iter().flatten().map(|(s, _)| *s).min();
    let last = spans.iter().flatten().map(|(_, e)| *e).max();
    match (first, last) {
        (Some(f), Some(l)) => l.saturating_duration_since(f).as_nanos() as f64,
        _ => 0.0,
    }
}

fn run(ctx: &mut Ctx<'_>, out: &mut BenchResult) -> Result<(), StepError> {
    let llc = llc_bytes(&ctx.machine.caches);
    let bytes = buffer_bytes(llc, ctx.cfg.max_mem_bytes, ctx.cfg.tiny());
    if let Some(l) = llc
        && bytes < l.saturating_mul(4) && !ctx.cfg.tiny() {
            out.notes.push(format!(
                "the buffer ({}) is below 4× the LLC ({}) because of --max-mem: part of it may be served from cache",
                human_bytes(bytes),
                human_bytes(l)
            ));
        }
    ctx.step(format!("filling two {} buffers", human_bytes(bytes)));
    let mut src =
        AnonMap::new(bytes as usize, Pages::Huge).map_err(step_err("mmap the source buffer"))?;
    let mut dst = AnonMap::new(bytes as usize, Pages::Huge)
        .map_err(step_err("mmap the destination buffer"))?;
    // Non-zero data, and every page touched before timing.
    for (i, w) in src.words_mut().iter_mut().enumerate() {
        *w = 0x0123_4567_89ab_cdef ^ i as u64;
    }
    dst.words_mut().fill(0x1111_1111_1111_1111);
    out.notes.push(format!(
        "buffers: {} each, huge pages asked for, filled with non-zero data before timing",
        human_bytes(bytes)
    ));
    let configs = ctx.thread_configs(out);
    for kernel in [Kernel::Read, Kernel::Write, Kernel::Copy] {
        for (threads, cpus) in &configs {
            let threads = *threads;
            let words = if threads == 1 { "1 thread" } else { "all threads" };
            let s: Samples = ctx.h.sample(&mut |iters, t| {
                timed_passes(t, kernel, &src, &mut dst, threads, cpus, iters)
            });
            let label = format!("{} ({words})", kernel.key());
            let mut f = Figure::bandwidth(
                format!(
                    "membw.{}.{}",
                    kernel.key(),
                    if threads == 1 { "1" } else { "all" }
                ),
                &label,
                &format!("{}, {threads} thread(s)", kernel.definition()),
                s,
                bytes as f64,
            );
            let single = format!("membw.{}.1", kernel.key());
            plausible::bound_by_one_thread(&mut f, &out.figures, &single, threads);
            out.push(f);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffer_is_four_llcs_within_the_cap() {
        assert_eq!(buffer_bytes(Some(105 << 20), 1 << 40, false), 448 << 20);
        assert_eq!(buffer_bytes(None, 1 << 40, false), 128 << 20);
        assert_eq!(buffer_bytes(Some(105 << 20), 64 << 20, false), 32 << 20);
        assert_eq!(buffer_bytes(Some(105 << 20), 0, false), 4096);
        assert_eq!(buffer_bytes(None, 1 << 30, true), 1 << 20);
    }

    #[test]
    fn span_runs_from_the_first_start_to_the_last_end() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        // The second thread started late and ended last: the span covers
        // both, not either thread alone.
        let spans = [Some((ms(0), ms(10))), Some((ms(4), ms(30)))];
        assert_eq!(span_ns(&spans), 30e6);
        assert_eq!(span_ns(&[Some((ms(5), ms(5)))]), 0.0);
        assert_eq!(
            span_ns(&[Some((ms(0), ms(10))), None]),
            0.0,
            "a lost thread"
        );
        assert_eq!(span_ns(&[]), 0.0);
    }

    #[test]
    fn all_threads_move_the_whole_buffer() {
        let h = crate::bench::Harness::calibrate(
            crate::bench::harness::Timer::best_source(),
            Duration::from_millis(1),
            crate::bench::harness::Budget::new(Duration::from_millis(1)),
        );
        let mut src = AnonMap::new(1 << 16, Pages::Base).unwrap();
        let mut dst = AnonMap::new(1 << 16, Pages::Base).unwrap();
        src.words_mut().fill(7);
        let ns = timed_passes(&h.timer, Kernel::Copy, &src, &mut dst, 3, &[], 2);
        assert!(ns > 0.0);
        assert!(dst.words().iter().all(|w| *w == 7), "every slice copied");
    }

    #[test]
    fn kernels_do_their_work() {
        let src = vec![1u64, 2, 3];
        let mut dst = vec![0u64; 3];
        assert_eq!(pass(Kernel::Read, &src, &mut dst, 0), 6);
        pass(Kernel::Copy, &src, &mut dst, 0);
        assert_eq!(dst, src);
        pass(Kernel::Write, &src, &mut dst, 4);
        assert_eq!(dst, vec![5, 5, 5]);
    }
}
