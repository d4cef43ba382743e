//! mmap: lmbench `lat_mmap` and more — the latency of `mmap` + `munmap`
//! by size, 4 KiB to 1 GiB, of a cached file (read-only, shared) and of
//! anonymous memory: once without touching the mapping (what setting up
//! and tearing down the mapping costs) and once touching one byte of every
//! 4 KiB page in between (a read for the file: pages come from the page
//! cache, several per fault by fault-around; a write for anonymous memory:
//! a zero page allocated per fault). And the cost of
//! `madvise(MADV_DONTNEED)` on 1 MiB whose every page is mapped.
//!
//! Every mapping lies at one address on a 2 MiB boundary (a
//! [`Slot`]): where the kernel would put it moves with address-space
//! randomisation, and a touched 1 MiB mapping that crossed a 2 MiB
//! boundary cost 2.7× one that did not, so the figure moved from run to run.
//!
//! The file is a scratch file in `--dir` with no name. Its data (written,
//! so cached) reaches the largest touched size; past that it is a hole,
//! which the untouched mappings never read. The touched sweep stops at
//! 64 MiB (`--full`: 1 GiB), at `--max-bytes` and `--max-mem`, and at 90%
//! of the free space of `--dir`; the note says where and why.

use std::os::unix::fs::FileExt;
use std::time::Duration;

use super::figure::Figure;
use super::model::{BenchResult, Mode, Section};
use super::spec::{Benchmark, Ctx, Marks, Plot, PlotKind, StepError, step_err};
use crate::sys::maps::{Backing, Map, Slot};
use crate::units::human_bytes;

pub const BENCH: Benchmark = Benchmark {
    name: "mmap",
    section: Section::Memory,
    about: "mmap+munmap by size (file and anonymous, untouched and touched), madvise(DONTNEED)",
    heavy: false,
    uses_dir: true,
    switches_by_design: false,
    estimate: |c| {
        let n = sizes(c.mode, c.tiny()).len() as u32;
        let touched = touch_cap(c.mode, c.tiny());
        let t = sizes(c.mode, c.tiny())
            .iter()
            .filter(|s| **s <= touched)
            .count() as u32;
        c.budget_per_figure() * (n + t + 2)
            + Duration::from_millis(if c.mode == Mode::Full { 4000 } else { 300 })
    },
    run,
    plots: &[Plot {
        heading: "mmap",
        title: "mmap: mmap + munmap by mapping size",
        figures: "mmap.map.",
        kind: PlotKind::Sweep {
            x_label: "mapping size",
            y_label: "latency per mmap+munmap",
            x_base: 2.0,
            marks: Marks::None,
        },
    }],
};

const PAGE: usize = 4096;
/// The size of the `madvise(MADV_DONTNEED)` figures.
const DONTNEED_BYTES: usize = 1 << 20;

/// Mapping sizes: 4 KiB ×4 up to 1 GiB (a test's tiny run: up to 1 MiB).
pub fn sizes(_mode: Mode, tiny: bool) -> Vec<u64> {
    let max: u64 = if tiny { 1 << 20 } else { 1 << 30 };
    let mut out = Vec::new();
    let mut s = PAGE as u64;
    while s <= max {
        out.push(s);
        s *= 4;
    }
    out
}

/// The largest size touched page by page, before `--dir`'s room and the
/// memory caps: 64 MiB (full: 1 GiB).
pub fn touch_cap(mode: Mode, tiny: bool) -> u64 {
    match (tiny, mode) {
        (true, _) => 1 << 20,
        (false, Mode::Full) => 1 << 30,
        (false, _) => 64 << 20,
    }
}

/// One mmap + (touch) + munmap at `slot`; ns.
fn map_once(
    t: &super::harness::Timer,
    backing: Backing<'_>,
    slot: Slot,
    touch: bool,
) -> std::io::Result<f64> {
    let s = t.now();
    let m = Map::new_at(backing, slot)?;
    if touch {
        std::hint::black_box(m.touch(PAGE));
    }
    m.unmap()?;
    Ok(t.ns_since(s))
}

fn run(ctx: &mut Ctx<'_>, out: &mut BenchResult) -> Result<(), StepError> {
    let scratch = Scratch::write(ctx, out)?;
    map_sweep(ctx, out, &scratch)?;
    dont_need(ctx, out, &scratch)
}

/// The file mapped: `data` bytes of it cached, a hole up to `max` (the
/// largest mapping); `want` is the largest touched mapping asked for.
struct Scratch {
    file: std::fs::File,
    sizes: Vec<u64>,
    max: u64,
    data: u64,
    want: u64,
}

impl Scratch {
    /// Writes the scratch file and reads it into the page cache, noting what
    /// the room left allowed.
    fn write(ctx: &mut Ctx<'_>, out: &mut BenchResult) -> Result<Scratch, StepError> {
        let tiny = ctx.cfg.tiny();
        let sizes = sizes(ctx.cfg.mode, tiny);
        let max = sizes.last().copied().unwrap_or(PAGE as u64);
        let shown = super::scratch::shown(&ctx.cfg.dir);
        let free = crate::sys::buffers::free_bytes(&ctx.cfg.dir)
            .map_err(step_err(format!("statvfs {shown}")))?;
        let want = touch_cap(ctx.cfg.mode, tiny);
        let room = free / 10 * 9;
        let data = want
            .min(ctx.cfg.max_file_bytes)
            .min(ctx.cfg.max_mem_bytes)
            .min(room)
            / PAGE as u64
            * PAGE as u64;
        if data < want {
            let why = if data == room / PAGE as u64 * PAGE as u64 {
                format!("{} free under {shown}", human_bytes(free))
            } else {
                "--max-bytes / --max-mem".to_string()
            };
            out.notes.push(format!(
                "the touched sweep stops at {} instead of {}: {why}",
                human_bytes(data),
                human_bytes(want)
            ));
        }
        ctx.step(format!("writing a {} file", human_bytes(data)));
        let file = super::scratch::scratch_file(&ctx.cfg.dir, data)
            .map_err(step_err(format!("write a scratch file in {shown}")))?;
        // The rest, up to the largest mapping, is a hole the untouched
        // mappings cover and never read.
        file.set_len(max.max(data))
            .map_err(step_err(format!("extend the scratch file in {shown}")))?;
        // Read once: every data page is in the page cache.
        let mut buf = vec![0u8; 1 << 20];
        let mut off = 0u64;
        while off < data {
            match file.read_at(&mut buf, off) {
                Ok(0) => break,
                Ok(n) => off += n as u64,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(step_err("read the scratch file")(e)),
            }
        }
        out.notes.push(format!(
        "file: {} of cached data under {shown}, a hole up to {}; every mapping at one address on a 2 MiB boundary",
        human_bytes(data),
        human_bytes(max.max(data))
    ));
        Ok(Scratch {
            file,
            sizes,
            max,
            data,
            want,
        })
    }
}

/// mmap + munmap of each size, file and anonymous, untouched and with
/// every page touched.
fn map_sweep(ctx: &mut Ctx<'_>, out: &mut BenchResult, scratch: &Scratch) -> Result<(), StepError> {
    let Scratch {
        file,
        sizes,
        max,
        data,
        want,
    } = scratch;
    let (max, data, want) = (*max, *data, *want);
    let anon_cap = ctx.cfg.max_mem_bytes;
    // Sweep points get half the budget: there are many of them.
    let mut h = ctx.h.clone();
    h.budget.per_figure /= 2;
    let series: [(&str, &str, bool, bool, &str); 4] = [
        (
            "file",
            "file, untouched",
            true,
            false,
            "ns per mmap(PROT_READ, MAP_SHARED) of a cached file + munmap, no page touched",
        ),
        (
            "anon",
            "anonymous, untouched",
            false,
            false,
            "ns per mmap(MAP_PRIVATE|MAP_ANONYMOUS) + munmap, no page touched",
        ),
        (
            "file_touch",
            "file, every page read",
            true,
            true,
            "ns per mmap of a cached file + a 1-byte read of every 4 KiB page (fault-around maps several per fault) + munmap",
        ),
        (
            "anon_touch",
            "anonymous, every page written",
            false,
            true,
            "ns per anonymous mmap + a 1-byte write to every 4 KiB page (a zero page per fault; THP left to the system default) + munmap",
        ),
    ];
    for (key, label, is_file, touch, def) in series {
        ctx.step(format!("{label} up to {}", human_bytes(max)));
        for &size in sizes {
            let cap = match (touch, is_file) {
                (false, _) => u64::MAX,
                (true, true) => data,
                (true, false) => want.min(anon_cap),
            };
            if size > cap {
                continue;
            }
            let len = usize::try_from(size).unwrap_or(usize::MAX);
            let backing = if is_file {
                Backing::File(file)
            } else {
                Backing::Anon
            };
            let slot = Slot::aligned(len)
                .map_err(step_err(format!("find room for {}", human_bytes(size))))?;
            let s = h
                .measure_each::<std::io::Error>(&mut |t| map_once(t, backing, slot, touch))
                .map_err(step_err(format!("mmap {} ({label})", human_bytes(size))))?;
            // Per page is the figure over size / 4 KiB: the sweep's rows
            // carry no note each.
            out.push(
                Figure::latency(format!("mmap.map.{key}.{size}"), label, def, s).at(size, "bytes"),
            );
        }
    }

    Ok(())
}

/// madvise(MADV_DONTNEED) of 1 MiB, anonymous and of the file.
fn dont_need(ctx: &mut Ctx<'_>, out: &mut BenchResult, scratch: &Scratch) -> Result<(), StepError> {
    let (file, data) = (&scratch.file, scratch.data);
    ctx.step("madvise(MADV_DONTNEED)");
    for (key, label, is_file) in [
        ("anon", "madvise DONTNEED, anonymous", false),
        ("file", "madvise DONTNEED, file", true),
    ] {
        if is_file && (data as usize) < DONTNEED_BYTES {
            out.push(
                Figure::unavailable(
                    format!("mmap.dontneed.{key}"),
                    label,
                    "ns per madvise(MADV_DONTNEED)",
                    format!("the file holds only {} of data", human_bytes(data)),
                )
                .at(DONTNEED_BYTES as u64, "bytes"),
            );
            continue;
        }
        let backing = if is_file {
            Backing::File(file)
        } else {
            Backing::Anon
        };
        let m = Slot::aligned(DONTNEED_BYTES)
            .and_then(|slot| Map::new_at(backing, slot))
            .map_err(step_err("mmap 1 MiB"))?;
        let s = ctx
            .h
            .measure_each::<std::io::Error>(&mut |t| {
                // Every page mapped again first (not timed).
                std::hint::black_box(m.touch(PAGE));
                let s = t.now();
                m.dont_need()?;
                Ok(t.ns_since(s))
            })
            .map_err(step_err("madvise(MADV_DONTNEED)"))?;
        let def = if is_file {
            "ns per madvise(MADV_DONTNEED) of 1 MiB of a cached file mapping whose 256 pages were all just read (they leave the mapping, not the page cache)"
        } else {
            "ns per madvise(MADV_DONTNEED) of 1 MiB of anonymous memory whose 256 pages were all just written (they are freed)"
        };
        let mut f = Figure::latency(format!("mmap.dontneed.{key}"), label, def, s)
            .at(DONTNEED_BYTES as u64, "bytes");
        if let Some(m) = f.median() {
            f = f.note(format!(
                "{:.1} ns per page",
                m / (DONTNEED_BYTES / PAGE) as f64
            ));
        }
        out.push(f);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_grow_by_four_from_a_page_to_a_gibibyte() {
        let s = sizes(Mode::Quick, false);
        assert_eq!(s.first(), Some(&4096));
        assert_eq!(s.last(), Some(&(1 << 30)));
        assert!(s.windows(2).all(|w| w[1] == w[0] * 4));
        assert_eq!(sizes(Mode::Full, true).last(), Some(&(1 << 20)));
        assert!(touch_cap(Mode::Full, false) > touch_cap(Mode::Quick, false));
    }

    #[test]
    fn one_mapping_round_trips() {
        let t = super::super::harness::Timer::monotonic();
        let slot = Slot::aligned(3 * PAGE).unwrap();
        assert!(map_once(&t, Backing::Anon, slot, true).unwrap() > 0.0);
        assert!(map_once(&t, Backing::Anon, slot, false).unwrap() > 0.0);
    }
}
