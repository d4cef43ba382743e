//! stream: the four kernels of the STREAM benchmark (McCalpin) over three
//! arrays of f64, on one thread and on every allowed CPU, with STREAM's
//! definitions and byte counting:
//!
//! | kernel | loop                  | bytes counted per element |
//! |--------|-----------------------|---------------------------|
//! | copy   | `c[i] = a[i]`         | 16 (8 read + 8 written)   |
//! | scale  | `b[i] = q * c[i]`     | 16                        |
//! | add    | `c[i] = a[i] + b[i]`  | 24 (16 read + 8 written)  |
//! | triad  | `a[i] = b[i] + q*c[i]`| 24                        |
//!
//! As in STREAM, the extra read a write-allocate cache makes of every
//! written line is not counted, GB means 10^9 bytes, `q` is 3.0, and each
//! array is at least 4× the last-level cache sysfs reports (STREAM's own
//! rule), so no array can stay cached between passes. A fifth, `read`
//! (sum of the bits of `a[i]` as integers, 8 bytes per element), is not part of STREAM: it is the
//! reference the copy figure is checked against (copy moves a byte in and
//! a byte out, so it cannot beat twice the read rate).

use std::sync::Barrier;
use std::time::{Duration, Instant};

use super::figure::Figure;
use super::harness::Samples;
use super::machine::llc_bytes;
use super::model::{BenchResult, Section};
use super::plausible;
use super::spec::{Benchmark, Ctx, Plot, PlotKind, StepError, step_err};
use crate::sys;
use crate::sys::buffers::{AnonMap, Pages};
use crate::units::human_bytes;

pub const BENCH: Benchmark = Benchmark {
    name: "stream",
    section: Section::Memory,
    about: "STREAM copy, scale, add, triad (and a read reference), 1 and all threads",
    heavy: false,
    uses_dir: false,
    switches_by_design: true,
    estimate: |c| c.budget_per_figure() * 20 + Duration::from_secs(1),
    run,
    plots: &[Plot {
        heading: "stream",
        title: "stream: GB/s (10^9 bytes per second, STREAM's byte counting)",
        figures: "",
        kind: PlotKind::Bars,
    }],
};

/// STREAM's scalar.
const Q: f64 = 3.0;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kernel {
    Copy,
    Scale,
    Add,
    Triad,
    Read,
}

impl Kernel {
    pub const ALL: [Kernel; 5] = [
        Kernel::Copy,
        Kernel::Scale,
        Kernel::Add,
        Kernel::Triad,
        Kernel::Read,
    ];

    pub fn key(self) -> &'static str {
        match self {
            Kernel::Copy => "copy",
            Kernel::Scale => "scale",
            Kernel::Add => "add",
            Kernel::Triad => "triad",
            Kernel::Read => "read",
        }
    }

    /// Bytes STREAM counts per element.
    pub fn bytes_per_element(self) -> u64 {
        match self {
            Kernel::Copy | Kernel::Scale => 16,
            Kernel::Add | Kernel::Triad => 24,
            Kernel::Read => 8,
        }
    }

    fn definition(self) -> &'static str {
        match self {
            Kernel::Copy => "GB/s (10^9 B), c[i] = a[i], 16 B per element (STREAM)",
            Kernel::Scale => "GB/s (10^9 B), b[i] = 3.0*c[i], 16 B per element (STREAM)",
            Kernel::Add => "GB/s (10^9 B), c[i] = a[i]+b[i], 24 B per element (STREAM)",
            Kernel::Triad => "GB/s (10^9 B), a[i] = b[i]+3.0*c[i], 24 B per element (STREAM)",
            Kernel::Read => {
                "GB/s (10^9 B), sum of a[i] (as integers, vectorised), 8 B per element (not STREAM: the copy check's reference)"
            }
        }
    }
}

/// Bytes of each array: 4× the LLC rounded up to 16 MiB, at least 16 MiB,
/// the three together at most `max_mem`.
pub fn array_bytes(llc: Option<u64>, max_mem: u64, tiny: bool) -> u64 {
    if tiny {
        return (256u64 << 10).min(max_mem / 3).max(4096) / 4096 * 4096;
    }
    let want = llc.unwrap_or(32 << 20).saturating_mul(4).max(16 << 20);
    let want = want.div_ceil(16 << 20).saturating_mul(16 << 20);
    want.min(max_mem / 3).max(4096) / 4096 * 4096
}

/// One pass of `kernel` over equal-length slices; returns a value the
/// caller passes to `black_box` (the read sum).
pub fn pass(kernel: Kernel, a: &mut [f64], b: &mut [f64], c: &mut [f64]) -> f64 {
    match kernel {
        Kernel::Copy => {
            for (c, a) in c.iter_mut().zip(a.iter()) {
                *c = *a;
            }
            0.0
        }
        Kernel::Scale => {
            for (b, c) in b.iter_mut().zip(c.iter()) {
                *b = Q * *c;
            }
            0.0
        }
        Kernel::Add => {
            for ((c, a), b) in c.iter_mut().zip(a.iter()).zip(b.iter()) {
                *c = *a + *b;
            }
            0.0
        }
        Kernel::Triad => {
            for ((a, b), c) in a.iter_mut().zip(b.iter()).zip(c.iter()) {
                *a = *b + Q * *c;
            }
            0.0
        }
        // Summed as integer bit patterns: integer adds may be reordered,
        // so the compiler vectorises the loop and the read runs at memory
        // speed (a float sum is one dependent chain of adds).
        Kernel::Read => a
            .iter()
            .fold(0u64, |s, x| s.wrapping_add(x.to_bits()))
            .count_ones()
            .into(),
    }
}

fn as_f64(map: &mut AnonMap) -> &mut [f64] {
    map.f64s_mut()
}

/// Times `passes` passes of `kernel` on `threads` threads, each over its
/// own part of the arrays; returns the ns the whole arrays took (for
/// several threads, from the earliest start to the latest end, each
/// worker reading CLOCK_MONOTONIC itself, as membw does).
#[allow(clippy::too_many_arguments)]
fn timed(
    timer: &super::harness::Timer,
    kernel: Kernel,
    a: &mut [f64],
    b: &mut [f64],
    c: &mut [f64],
    threads: usize,
    cpus: &[usize],
    passes: u64,
) -> f64 {
    if threads <= 1 {
        let s = timer.now();
        for _ in 0..passes {
            std::hint::black_box(pass(kernel, a, b, c));
        }
        return timer.ns_since(s);
    }
    let chunk = a.len().div_ceil(threads).max(1);
    let parts = a.chunks(chunk).len();
    let barrier = Barrier::new(parts.max(1));
    let spans: Vec<Option<(Instant, Instant)>> = std::thread::scope(|scope| {
        let mut handles = Vec::new();
        let it = a
            .chunks_mut(chunk)
            .zip(b.chunks_mut(chunk))
            .zip(c.chunks_mut(chunk));
        for (i, ((a, b), c)) in it.enumerate() {
            let barrier = &barrier;
            let cpu = cpus.get(i % cpus.len().max(1)).copied();
            handles.push(scope.spawn(move || {
                if let Some(cpu) = cpu {
                    let _ = sys::cpu::pin_to_cpu(cpu);
                }
                barrier.wait();
                let start = Instant::now();
                let mut acc = 0.0;
                for _ in 0..passes {
                    acc += pass(kernel, a, b, c);
                }
                let end = Instant::now();
                std::hint::black_box(acc);
                (start, end)
            }));
        }
        handles.into_iter().map(|h| h.join().ok()).collect()
    });
    super::membw::span_ns(&spans)
}

fn run(ctx: &mut Ctx<'_>, out: &mut BenchResult) -> Result<(), StepError> {
    let llc = llc_bytes(&ctx.machine.caches);
    let bytes = array_bytes(llc, ctx.cfg.max_mem_bytes, ctx.cfg.tiny());
    match llc {
        Some(l) if bytes >= l.saturating_mul(4) => out.notes.push(format!(
            "arrays: 3 × {} of f64, each ≥ 4× the last-level cache ({} from sysfs), as STREAM requires",
            human_bytes(bytes),
            human_bytes(l)
        )),
        Some(l) => out.notes.push(format!(
            "arrays: 3 × {}, below 4× the last-level cache ({}) because of --max-mem or a tiny run: part may be served from cache",
            human_bytes(bytes),
            human_bytes(l)
        )),
        None => out.notes.push(format!(
            "arrays: 3 × {}; sysfs reports no last-level cache, so 4× it could not be checked",
            human_bytes(bytes)
        )),
    }
    ctx.step(format!("filling three {} arrays", human_bytes(bytes)));
    let mk = || AnonMap::new(bytes as usize, Pages::Huge);
    let mut ma = mk().map_err(step_err("mmap STREAM array a"))?;
    let mut mb = mk().map_err(step_err("mmap STREAM array b"))?;
    let mut mc = mk().map_err(step_err("mmap STREAM array c"))?;
    // STREAM's initial values (1, 2, 0), every page touched before timing.
    as_f64(&mut ma).fill(1.0);
    as_f64(&mut mb).fill(2.0);
    as_f64(&mut mc).fill(0.0);
    let elements = as_f64(&mut ma).len() as u64;
    let configs = ctx.thread_configs(out);
    for kernel in Kernel::ALL {
        for (threads, cpus) in &configs {
            let threads = *threads;
            let (a, b, c) = (as_f64(&mut ma), as_f64(&mut mb), as_f64(&mut mc));
            let s: Samples = ctx
                .h
                .sample(&mut |iters, t| timed(t, kernel, a, b, c, threads, cpus, iters));
            let which = if threads == 1 { "1" } else { "all" };
            let words = if threads == 1 {
                "1 thread".to_string()
            } else {
                format!("{threads} threads")
            };
            let mut f = Figure::bandwidth(
                format!("stream.{}.{which}", kernel.key()),
                &format!("{} ({words})", kernel.key()),
                kernel.definition(),
                s,
                (elements * kernel.bytes_per_element()) as f64,
            );
            let single = format!("stream.{}.1", kernel.key());
            plausible::bound_by_one_thread(&mut f, &out.figures, &single, threads);
            out.push(f);
        }
    }
    // Copy against read, both measured above.
    for which in ["1", "all"] {
        let read = out
            .figures
            .iter()
            .find(|f| f.id == format!("stream.read.{which}"))
            .cloned();
        let copy = out
            .figures
            .iter_mut()
            .find(|f| f.id == format!("stream.copy.{which}"));
        if let (Some(read), Some(copy)) = (read, copy) {
            plausible::copy_bound(copy, &read);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_are_four_llcs_within_the_cap() {
        assert_eq!(array_bytes(Some(32 << 20), 1 << 30, false), 128 << 20);
        assert_eq!(array_bytes(Some(1 << 20), 1 << 30, false), 16 << 20);
        assert_eq!(array_bytes(None, 1 << 40, false), 128 << 20);
        assert!(array_bytes(Some(32 << 20), 96 << 20, false) * 3 <= 96 << 20);
        assert_eq!(array_bytes(Some(32 << 20), 0, false), 4096);
        assert_eq!(array_bytes(None, 1 << 30, true), 256 << 10);
    }

    #[test]
    fn kernels_compute_streams_definitions() {
        let mut a = vec![1.0; 4];
        let mut b = vec![2.0; 4];
        let mut c = vec![0.0; 4];
        pass(Kernel::Copy, &mut a, &mut b, &mut c);
        assert_eq!(c, vec![1.0; 4]);
        pass(Kernel::Scale, &mut a, &mut b, &mut c);
        assert_eq!(b, vec![3.0; 4]);
        pass(Kernel::Add, &mut a, &mut b, &mut c);
        assert_eq!(c, vec![4.0; 4]);
        pass(Kernel::Triad, &mut a, &mut b, &mut c);
        assert_eq!(a, vec![15.0; 4]);
        let bits = 15.0f64.to_bits().wrapping_mul(4).count_ones();
        assert_eq!(pass(Kernel::Read, &mut a, &mut b, &mut c), f64::from(bits));
    }

    #[test]
    fn byte_counts_are_streams() {
        let per: Vec<u64> = Kernel::ALL.iter().map(|k| k.bytes_per_element()).collect();
        assert_eq!(per, vec![16, 16, 24, 24, 8]);
    }

    #[test]
    fn threads_cover_every_element() {
        let t = super::super::harness::Timer::monotonic();
        let mut a = vec![1.0; 1001];
        let mut b = vec![2.0; 1001];
        let mut c = vec![0.0; 1001];
        let ns = timed(&t, Kernel::Add, &mut a, &mut b, &mut c, 3, &[], 1);
        assert!(ns >= 0.0);
        assert!(c.iter().all(|v| *v == 3.0));
    }
}
