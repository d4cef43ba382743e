//! fileread: latency of one 4 KiB read, sequential against random, for
//! files from 4 KiB up (quick: 256 MiB, full: 1 GiB), uncached: `O_DIRECT`
//! where the filesystem allows it, else buffered reads with the file
//! evicted before each pass and readahead turned off (`POSIX_FADV_RANDOM`).
//! Sequential reads wrap around at the end of small files. `--dir` points
//! it at another filesystem (a network mount, say).

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::time::Duration;

use super::harness::Samples;
use super::figure::Figure;
use super::scratch::Rng;
use super::model::{BenchResult, Mode, Section};
use super::spec::{Benchmark, Ctx, Marks, Plot, PlotKind, StepError, step_err};
use crate::sys::buffers::{AnonMap, Pages};
use crate::sys::cache::{Advice, fadvise};
use crate::units::human_bytes;

pub const BENCH: Benchmark = Benchmark {
    name: "fileread",
    section: Section::FileSystem,
    about: "4 KiB read latency, sequential vs random, uncached, by file size",
    heavy: false,
    uses_dir: true,
    switches_by_design: false,
    estimate: |c| {
        let n = sizes(c.mode, c.tiny()).len() as u32;
        c.budget_per_figure() * n * 4
            + Duration::from_secs(if c.mode == Mode::Full { 10 } else { 3 })
    },
    run,
    plots: &[Plot {
        heading: "File reads",
        title: "fileread: 4 KiB read latency by file size, uncached",
        figures: "",
        kind: PlotKind::Sweep {
            x_label: "file size",
            y_label: "latency per read",
            x_base: 2.0,
            marks: Marks::None,
        },
    }],
};

const BLOCK: u64 = 4096;

/// File sizes: 4 KiB, ×16 up to 256 MiB (quick), ×4 up to 1 GiB (full).
pub fn sizes(mode: Mode, tiny: bool) -> Vec<u64> {
    let (step, max) = match (tiny, mode) {
        (true, _) => (16, 64 << 10),
        (false, Mode::Full) => (4, 1 << 30),
        (false, _) => (16, 256 << 20),
    };
    let mut out = Vec::new();
    let mut s = BLOCK;
    while s <= max {
        out.push(s);
        s *= step;
    }
    out
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Method {
    Direct,
    Evicted,
}

/// Reads `file` around the page cache: `O_DIRECT` where the filesystem
/// allows it, else buffered reads with readahead off.
fn direct(file: &File) -> std::io::Result<Method> {
    match crate::sys::buffers::set_direct(file) {
        Ok(()) => Ok(Method::Direct),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            // No readahead, so each 4 KiB read is its own.
            let _ = fadvise(file, 0, 0, Advice::Random);
            Ok(Method::Evicted)
        }
        Err(e) => Err(e),
    }
}

fn run(ctx: &mut Ctx<'_>, out: &mut BenchResult) -> Result<(), StepError> {
    let sizes = sizes(ctx.cfg.mode, ctx.cfg.tiny());
    let mut buf =
        AnonMap::new(BLOCK as usize, Pages::Base).map_err(step_err("mmap a read buffer"))?;
    let mut rng = Rng::new(0x6669_6c65);
    let mut direct_failed = false;
    for &size in &sizes {
        ctx.step(format!("writing a {} file", human_bytes(size)));
        let file = super::scratch::scratch_file(&ctx.cfg.dir, size).map_err(step_err(format!(
            "write a scratch file in {}",
            super::scratch::shown(&ctx.cfg.dir)
        )))?;
        let method = direct(&file).map_err(step_err("turn on O_DIRECT for the scratch file"))?;
        if method == Method::Evicted {
            direct_failed = true;
        }
        let blocks = (size / BLOCK).max(1);
        for (key, label, random) in [("seq", "sequential", false), ("random", "random", true)] {
            let _ = super::scratch::evict(&file, &ctx.cfg.dir);
            let mut next = 0u64;
            let bytes = buf.bytes_mut();
            let s: Samples = ctx
                .h
                .measure_raw::<std::io::Error>(&mut |iters, t| {
                    if method == Method::Evicted {
                        let _ = fadvise(&file, 0, 0, Advice::DontNeed);
                    }
                    let s = t.now();
                    for _ in 0..iters {
                        let block = if random {
                            rng.below(blocks)
                        } else {
                            next = (next + 1) % blocks;
                            next
                        };
                        file.read_at(bytes, block * BLOCK)?;
                    }
                    Ok(t.ns_since(s))
                })
                .map_err(step_err(format!("read the {} file", human_bytes(size))))?;
            let definition = match method {
                Method::Direct => "ns per 4 KiB pread with O_DIRECT (no page cache)",
                Method::Evicted => {
                    "ns per 4 KiB pread, buffered, file evicted before each sample, POSIX_FADV_RANDOM (O_DIRECT refused)"
                }
            };
            out.push(
                Figure::latency(format!("fileread.{key}.{size}"), label, definition, s)
                    .at(size, "bytes"),
            );
        }
    }
    out.notes.push(format!(
        "files under {} ({})",
        super::scratch::shown(&ctx.cfg.dir),
        if direct_failed {
            "this filesystem refused O_DIRECT: buffered reads of evicted files"
        } else {
            "O_DIRECT"
        }
    ));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_start_at_one_block_and_grow() {
        let q = sizes(Mode::Quick, false);
        assert_eq!(q.first(), Some(&4096));
        assert_eq!(q.last(), Some(&(256 << 20)));
        let f = sizes(Mode::Full, false);
        assert_eq!(f.last(), Some(&(1 << 30)));
        assert!(f.windows(2).all(|w| w[1] == w[0] * 4));
        assert_eq!(sizes(Mode::Full, true), vec![4096, 65536]);
    }
}
