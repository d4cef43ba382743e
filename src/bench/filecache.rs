//! filecache: how much of a big file the page cache will hold. Writes a
//! file of non-zero data (up to `--max-bytes`, and never more than 90% of
//! the free space under `--dir`), reads it through once, then asks
//! `cachestat` (or `mincore`) how much of it is cached. Heavy: it runs
//! with `--full` or when named. A file smaller than memory stays cached
//! whole, and the report then says the limit was not reached.

use std::os::unix::fs::FileExt;
use std::time::Duration;

use super::figure::Figure;
use super::model::{BenchResult, Section};
use super::spec::{Benchmark, Ctx, StepError, step_err};
use crate::units::human_bytes;

pub const BENCH: Benchmark = Benchmark {
    name: "filecache",
    section: Section::FileSystem,
    about: "how much of a big file the page cache holds",
    heavy: true,
    uses_dir: true,
    switches_by_design: false,
    // Writing then reading the file at a few hundred MB/s.
    estimate: |c| Duration::from_secs(c.max_file_bytes / (150 << 20) + 1),
    run,
    plots: &[],
};

fn run(ctx: &mut Ctx<'_>, out: &mut BenchResult) -> Result<(), StepError> {
    let free = crate::sys::buffers::free_bytes(&ctx.cfg.dir)
        .map_err(step_err(format!("statvfs {}", super::scratch::shown(&ctx.cfg.dir))))?;
    let size = ctx.cfg.max_file_bytes.min(free / 10 * 9) / 4096 * 4096;
    let def = "bytes of the file resident in the page cache after writing it and reading it through once (cachestat)";
    if size < 4096 {
        out.push(Figure::unavailable(
            "filecache.cached_bytes",
            "page cache held",
            def,
            format!(
                "no room: {} free under {}",
                human_bytes(free),
                super::scratch::shown(&ctx.cfg.dir)
            ),
        ));
        return Ok(());
    }
    ctx.step(format!("writing {}", human_bytes(size)));
    let f = super::scratch::scratch_file(&ctx.cfg.dir, size).map_err(step_err(format!(
        "write a scratch file in {}",
        super::scratch::shown(&ctx.cfg.dir)
    )))?;
    ctx.step(format!("reading {} back", human_bytes(size)));
    let mut buf = vec![0u8; 1 << 20];
    let mut off = 0u64;
    loop {
        match f.read_at(&mut buf, off) {
            Ok(0) => break,
            Ok(n) => off += n as u64,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(step_err("read the scratch file back")(e)),
        }
    }
    let res = crate::pagecache::residency(&f, &ctx.cfg.dir, size);
    match res.cached_pages() {
        Some(pages) => {
            let cached = pages.saturating_mul(crate::sys::page_size());
            let mut fig = Figure::bytes(
                "filecache.cached_bytes",
                "page cache held",
                def,
                vec![cached as f64],
            )
            .note(format!("file {}", human_bytes(size)));
            if let Some(total) = ctx.machine.mem_total_bytes {
                fig = fig.note(format!(
                    "{:.0}% of MemTotal ({})",
                    cached as f64 * 100.0 / total.max(1) as f64,
                    human_bytes(total)
                ));
                if cached.saturating_add(size / 50) >= size && size < total {
                    fig = fig.note(
                        "the whole file stayed cached: the limit lies above the file size; raise --max-bytes above RAM to find it",
                    );
                }
            }
            out.push(fig);
        }
        None => out.push(Figure::unavailable(
            "filecache.cached_bytes",
            "page cache held",
            def,
            "the kernel would not report the file's residency",
        )),
    }
    Ok(())
}
