//! filebw: lmbench `bw_file_rd` and `bw_mmap_rd` — re-reading a file the
//! page cache holds, GB/s (10^9 B/s): by `pread` into a 64 KiB buffer
//! (the kernel copies each byte to user space; lmbench's `io_only`), and
//! by `mmap`, summing every 64-bit word (the file mapped, read and
//! unmapped on each pass, as lmbench's `mmap_only`; and once more over a
//! mapping made and populated before timing).
//!
//! Their twins over anonymous memory of the same size run in the same
//! benchmark: the same summing loop (the bound of the mmap figures), and
//! a copy into one 64 KiB buffer, 64 KiB at a time (the bound of read()).
//! The page cache is that same memory, so no way of reading the file can
//! beat its twin by much: a figure with a sample above [`MEMORY_SLACK`] ×
//! the twin's fastest sample is flagged (seed 001's `cat` "read" a file
//! at 726 GB/s: a read that never read).
//!
//! The file is 2× the last-level cache, at least 64 MiB and at most
//! 256 MiB (`--full`: 4×, at least 256 MiB), within `--max-bytes`,
//! `--max-mem` and 90% of `--dir`'s free space; written without `fsync`,
//! so it is cached, and read once before timing.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::time::Duration;

use super::figure::Figure;
use super::harness::Samples;
use super::machine::llc_bytes;
use super::model::{BenchResult, Mode, Section};
use super::spec::{Benchmark, Ctx, Plot, PlotKind, StepError, step_err};
use crate::sys::buffers::{AnonMap, Pages};
use crate::sys::maps::{Backing, Map, Slot};
use crate::units::human_bytes;

pub const BENCH: Benchmark = Benchmark {
    name: "filebw",
    section: Section::FileSystem,
    about: "re-read bandwidth of a cached file: read() with 64 KiB, and mmap",
    heavy: false,
    uses_dir: true,
    switches_by_design: false,
    estimate: |c| c.budget_per_figure() * 4 + Duration::from_millis(800),
    run,
    plots: &[Plot {
        heading: "filebw",
        title: "filebw: GB/s re-reading a cached file (10^9 bytes per second)",
        figures: "",
        kind: PlotKind::Bars,
    }],
};

/// How far above the same run's anonymous-memory read a file read may
/// be before it is flagged.
pub const MEMORY_SLACK: f64 = 1.5;
const CHUNK: usize = 64 << 10;

/// File size: see the module documentation.
pub fn file_bytes(llc: Option<u64>, mode: Mode, tiny: bool, cap: u64) -> u64 {
    let want = if tiny {
        1 << 20
    } else {
        let llc = llc.unwrap_or(32 << 20);
        match mode {
            Mode::Full => llc.saturating_mul(4).max(256 << 20),
            _ => llc.saturating_mul(2).clamp(64 << 20, 256 << 20),
        }
    };
    want.div_ceil(1 << 20).saturating_mul(1 << 20).min(cap) / 4096 * 4096
}

/// Sums the words (the compiler vectorises it; the sum keeps the loads).
fn sum(words: &[u64]) -> u64 {
    words.iter().fold(0u64, |a, w| a.wrapping_add(*w))
}

/// Writes `bytes` of non-zero data to a scratch file without fsync.
fn cached_file(dir: &std::path::Path, bytes: u64) -> std::io::Result<File> {
    super::scratch::written_file(dir, bytes, 0x00f1_1eb3)
}

/// Reads the whole file with `pread` in 64 KiB chunks; bytes read.
fn read_through(file: &File, buf: &mut [u8], len: u64) -> std::io::Result<u64> {
    let mut off = 0u64;
    while off < len {
        match file.read_at(buf, off) {
            Ok(0) => break,
            Ok(n) => off += n as u64,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(off)
}

/// Flags `f` when a sample exceeds `MEMORY_SLACK` × the memory bound.
pub fn flag_above_memory(f: &mut Figure, memory: &Figure) {
    let Some(fastest) = memory.measured().map(|s| s.max) else {
        return;
    };
    let bound = fastest * MEMORY_SLACK;
    let over = f.samples.iter().filter(|v| **v > bound).count();
    if over > 0 {
        f.flag(format!(
            "{over} of {} samples exceed the same run's {} ({fastest:.2} GB/s, fastest sample) × {MEMORY_SLACK} = {bound:.2} GB/s: the page cache is that memory",
            f.samples.len(),
            memory.label
        ));
    }
}

fn run(ctx: &mut Ctx<'_>, out: &mut BenchResult) -> Result<(), StepError> {
    let shown = super::scratch::shown(&ctx.cfg.dir);
    let free = crate::sys::buffers::free_bytes(&ctx.cfg.dir)
        .map_err(step_err(format!("statvfs {shown}")))?;
    let cap = ctx
        .cfg
        .max_file_bytes
        .min(ctx.cfg.max_mem_bytes)
        .min(free / 10 * 9);
    let bytes = file_bytes(
        llc_bytes(&ctx.machine.caches),
        ctx.cfg.mode,
        ctx.cfg.tiny(),
        cap,
    );
    if bytes < 1 << 20 {
        for (id, label) in [
            ("filebw.read", "read(), 64 KiB buffer"),
            ("filebw.mmap", "mmap, map+sum+unmap"),
        ] {
            out.push(Figure::unavailable(
                id,
                label,
                "GB/s re-reading a cached file",
                format!(
                    "no room for a 1 MiB file: {} free under {shown} and the caps",
                    human_bytes(free)
                ),
            ));
        }
        return Ok(());
    }
    ctx.step(format!("writing a {} file", human_bytes(bytes)));
    let file = cached_file(&ctx.cfg.dir, bytes)
        .map_err(step_err(format!("write a scratch file in {shown}")))?;
    let mut buf = vec![0u8; CHUNK];
    read_through(&file, &mut buf, bytes).map_err(step_err("read the scratch file"))?;
    let residency = crate::pagecache::residency(&file, &ctx.cfg.dir, bytes);
    if let Some(pages) = residency.cached_pages() {
        let cached = pages.saturating_mul(crate::sys::page_size());
        out.notes.push(format!(
            "file {} under {shown}; {} of it in the page cache before timing",
            human_bytes(bytes),
            human_bytes(cached.min(bytes))
        ));
    } else {
        out.notes
            .push(format!("file {} under {shown}", human_bytes(bytes)));
    }
    let (memory_sum, memory_copy) = memory_bounds(ctx, bytes, &mut buf)?;
    ctx.step("read()");
    let mut read = read_figure(ctx, &file, &mut buf, bytes)?;
    ctx.step("mmap");
    let (mut mapped, mut premapped) = mmap_figures(ctx, &file, bytes)?;
    flag_above_memory(&mut read, &memory_copy);
    for f in [&mut mapped, &mut premapped] {
        flag_above_memory(f, &memory_sum);
    }
    out.push(read);
    out.push(mapped);
    out.push(premapped);
    out.push(memory_copy);
    out.push(memory_sum);
    Ok(())
}

/// The reference: the same loops over anonymous memory of the file's
/// size, summed (the bound of mmap) and copied into `buf` (that of read).
fn memory_bounds(
    ctx: &mut Ctx<'_>,
    bytes: u64,
    buf: &mut [u8],
) -> Result<(Figure, Figure), StepError> {
    let len = usize::try_from(bytes).unwrap_or(usize::MAX);
    ctx.step("memory read, same size");
    // Huge pages where the system grants them: the bound is the fastest
    // this memory can be read, with the fewest TLB misses.
    let mut anon = AnonMap::new(len, Pages::Huge).map_err(step_err("mmap anonymous memory"))?;
    for (i, w) in anon.words_mut().iter_mut().enumerate() {
        *w = 0x0123_4567_89ab_cdef ^ i as u64;
    }
    let s: Samples = ctx.h.sample(&mut |iters, t| {
        let s = t.now();
        for _ in 0..iters {
            std::hint::black_box(sum(anon.words()));
        }
        t.ns_since(s)
    });
    let memory_sum = Figure::bandwidth(
        "filebw.memory_sum",
        "memory, summed (bound of mmap)",
        "GB/s (10^9 B) summing the u64 words of anonymous memory (huge pages asked for) of the file's size: the bound of the mmap figures",
        s,
        bytes as f64,
    );
    let s: Samples = ctx.h.sample(&mut |iters, t| {
        let s = t.now();
        for _ in 0..iters {
            for c in anon.bytes().chunks(CHUNK) {
                let n = c.len();
                if let Some(d) = buf.get_mut(..n) {
                    d.copy_from_slice(c);
                }
                std::hint::black_box(&mut *buf);
            }
        }
        t.ns_since(s)
    });
    drop(anon);
    let memory_copy = Figure::bandwidth(
        "filebw.memory_copy",
        "memory, copied (bound of read)",
        "GB/s (10^9 B) copying anonymous memory (huge pages asked for) of the file's size into one 64 KiB buffer, 64 KiB at a time (memcpy): the bound of the read() figure",
        s,
        bytes as f64,
    );
    Ok((memory_sum, memory_copy))
}

/// Re-reading the cached `file` with pread into `buf`.
fn read_figure(
    ctx: &Ctx<'_>,
    file: &File,
    buf: &mut [u8],
    bytes: u64,
) -> Result<Figure, StepError> {
    let s = ctx
        .h
        .measure_raw::<std::io::Error>(&mut |iters, t| {
            let s = t.now();
            for _ in 0..iters {
                let n = read_through(file, buf, bytes)?;
                if n != bytes {
                    return Err(std::io::Error::other("the scratch file came back short"));
                }
            }
            Ok(t.ns_since(s))
        })
        .map_err(step_err("re-read the file"))?;
    Ok(Figure::bandwidth(
        "filebw.read",
        "read(), 64 KiB buffer",
        "GB/s (10^9 B) re-reading a cached file with pread into one 64 KiB buffer (lmbench bw_file_rd io_only)",
        s,
        bytes as f64,
    ))
}

/// Mapping the cached `file` each pass, and mapped once before timing.
fn mmap_figures(ctx: &Ctx<'_>, file: &File, bytes: u64) -> Result<(Figure, Figure), StepError> {
    let h = ctx.h;
    let len = usize::try_from(bytes).unwrap_or(usize::MAX);
    // One address on a 2 MiB boundary for every mapping (see sys::maps).
    let slot = Slot::aligned(len).map_err(step_err("find room for the mapping"))?;
    let s = h
        .measure_raw::<std::io::Error>(&mut |iters, t| {
            let s = t.now();
            for _ in 0..iters {
                let m = Map::new_at(Backing::File(file), slot)?;
                std::hint::black_box(sum(m.words()));
                m.unmap()?;
            }
            Ok(t.ns_since(s))
        })
        .map_err(step_err("map and read the file"))?;
    let mapped = Figure::bandwidth(
        "filebw.mmap",
        "mmap, map+sum+unmap",
        "GB/s (10^9 B) mapping a cached file, summing its u64 words, unmapping, each pass (lmbench bw_mmap_rd mmap_only; page faults included)",
        s,
        bytes as f64,
    );
    let premapped = match Map::new_at(Backing::File(file), slot) {
        Ok(m) => {
            // Every page mapped before timing: no faults in the samples.
            std::hint::black_box(m.touch(4096));
            let s = h.sample(&mut |iters, t| {
                let s = t.now();
                for _ in 0..iters {
                    std::hint::black_box(sum(m.words()));
                }
                t.ns_since(s)
            });
            Figure::bandwidth(
                "filebw.mmap_mapped",
                "mmap, mapped once",
                "GB/s (10^9 B) summing the u64 words of a cached file mapped, and every page faulted in, before timing: no faults in the samples",
                s,
                bytes as f64,
            )
        }
        Err(e) => Figure::unavailable(
            "filebw.mmap_mapped",
            "mmap, mapped once",
            "GB/s summing a mapping made before timing",
            format!("mmap failed: {e}"),
        ),
    };
    Ok((mapped, premapped))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_size_follows_the_llc_within_bounds() {
        let l = Some(105u64 << 20);
        assert_eq!(file_bytes(l, Mode::Quick, false, u64::MAX), 210 << 20);
        assert_eq!(file_bytes(Some(8 << 20), Mode::Quick, false, u64::MAX), 64 << 20);
        assert_eq!(file_bytes(Some(1 << 30), Mode::Quick, false, u64::MAX), 256 << 20);
        assert_eq!(file_bytes(l, Mode::Full, false, u64::MAX), 420 << 20);
        assert_eq!(file_bytes(l, Mode::Quick, false, 10 << 20), 10 << 20);
        assert_eq!(file_bytes(l, Mode::Quick, true, u64::MAX), 1 << 20);
    }

    #[test]
    fn a_read_faster_than_memory_is_flagged() {
        let s = |gbps: &[f64]| Samples {
            per_op_ns: gbps.iter().map(|g| 1.0 / g).collect(),
            iters_per_sample: 1,
            warmup_discarded: 0,
            clamped: 0,
            too_short: 0,
        };
        let memory = Figure::bandwidth("m", "m", "d", s(&[9.0, 10.0]), 1.0);
        let mut ok = Figure::bandwidth("r", "r", "d", s(&[8.0, 14.9]), 1.0);
        flag_above_memory(&mut ok, &memory);
        assert_eq!(ok.implausible, None);
        // seed 001's cat: 726 GB/s from a file never read.
        let mut bad = Figure::bandwidth("r", "r", "d", s(&[8.0, 726.0]), 1.0);
        flag_above_memory(&mut bad, &memory);
        assert!(bad.implausible.as_deref().unwrap().starts_with("1 of 2"));
    }
}
