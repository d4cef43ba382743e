//! pagefault: what the kernel takes to service a fault — anonymous minor
//! faults (fresh zero pages), file-backed minor faults (file in the page
//! cache, new mapping) and major faults (file evicted first, `MADV_RANDOM`
//! so each fault reads one page instead of a readahead window). Times are
//! divided by the faults `getrusage` counted, so a figure is per fault;
//! file minor faults map several pages each (fault-around), which the note
//! gives as pages per fault.

use std::time::Duration;

use super::figure::Figure;
use super::harness::Timer;
use super::model::{BenchResult, Section};
use super::spec::{Benchmark, Ctx, StepError, step_err};
use crate::sys;
use crate::sys::buffers::{AnonMap, FileMap, Pages};

pub const BENCH: Benchmark = Benchmark {
    name: "pagefault",
    section: Section::Memory,
    about: "anonymous minor, file minor and major page faults",
    heavy: false,
    uses_dir: true,
    switches_by_design: false,
    estimate: |c| c.budget_per_figure() * 6 + Duration::from_millis(500),
    run,
    plots: &[],
};

const PAGE: usize = 4096;

fn faults() -> (u64, u64) {
    sys::cpu::self_faults().unwrap_or((0, 0))
}

/// Collects per-fault ns over repeated passes until the budget is spent.
#[derive(Default)]
struct PerFault {
    values: Vec<f64>,
    faults: u64,
    pages: u64,
}

fn run(ctx: &mut Ctx<'_>, out: &mut BenchResult) -> Result<(), StepError> {
    let tiny = ctx.cfg.tiny();
    let passes = Passes {
        budget: ctx.h.budget.per_figure * 2,
        min: if tiny { 2 } else { 5 },
    };
    anon_minor(ctx, out, passes)?;
    // File-backed faults need a file.
    let file_bytes: u64 = if tiny { 1 << 20 } else { 16 << 20 };
    ctx.step("writing the scratch file");
    let file =
        &super::scratch::scratch_file(&ctx.cfg.dir, file_bytes).map_err(step_err(format!(
            "write a scratch file in {}",
            super::scratch::shown(&ctx.cfg.dir)
        )))?;
    let len = file_bytes as usize;
    file_minor(ctx, out, passes, file, len)?;
    major(ctx, out, passes, file, len)
}

impl PerFault {
    /// Minor faults: passes of `pass` (the ns it took, the faults it
    /// made, the pages it touched) as `passes` says.
    fn minor(
        passes: Passes,
        pass: &mut dyn FnMut() -> Result<(f64, u64, u64), StepError>,
    ) -> Result<PerFault, StepError> {
        let mut p = PerFault::default();
        let start = std::time::Instant::now();
        while p.values.len() < passes.min
            || (start.elapsed() < passes.budget && p.values.len() < 500)
        {
            let (ns, n, pages) = pass()?;
            p.values.push(ns / n as f64);
            p.faults += n;
            p.pages += pages;
        }
        Ok(p)
    }
}

/// Times `touch` (which returns the pages it touched): the ns, the minor
/// faults counted (at least one) and the pages.
fn timed_minor(timer: &Timer, touch: &mut dyn FnMut() -> u64) -> (f64, u64, u64) {
    let (f0, _) = faults();
    let s = timer.now();
    let pages = touch();
    let ns = timer.ns_since(s);
    let (f1, _) = faults();
    (ns, f1.saturating_sub(f0).max(1), pages)
}

/// How long a figure's passes go on: at least `min`, then until the
/// budget is spent.
#[derive(Clone, Copy)]
struct Passes {
    budget: Duration,
    min: usize,
}

/// Anonymous minor faults: a fresh base-page mapping per pass.
fn anon_minor(ctx: &Ctx<'_>, out: &mut BenchResult, passes: Passes) -> Result<(), StepError> {
    let timer = ctx.h.timer;
    let region = if ctx.cfg.tiny() { 1 << 20 } else { 8 << 20 };
    let anon = PerFault::minor(passes, &mut || {
        let mut m = AnonMap::new(region, Pages::Base).map_err(step_err("mmap anonymous memory"))?;
        Ok(timed_minor(&timer, &mut || m.touch_write(PAGE) as u64))
    })?;
    out.push(
        Figure::latency_values(
            "pagefault.anon_minor",
            "anonymous minor fault",
            "ns per fault: first write to each 4 KiB page of a fresh MADV_NOHUGEPAGE mapping (zero page allocated and mapped)",
            anon.values,
        )
        .note(format!(
            "{:.2} pages per fault over {} faults",
            anon.pages as f64 / anon.faults.max(1) as f64,
            anon.faults
        )),
    );
    Ok(())
}

/// Minor faults of a file: it is cached (just written and synced, read
/// once).
fn file_minor(
    ctx: &Ctx<'_>,
    out: &mut BenchResult,
    passes: Passes,
    file: &std::fs::File,
    len: usize,
) -> Result<(), StepError> {
    let timer = ctx.h.timer;
    let _ = FileMap::new(file, len, false).map(|m| m.touch(PAGE));
    let minor = PerFault::minor(passes, &mut || {
        let m = FileMap::new(file, len, false).map_err(step_err("mmap the scratch file"))?;
        Ok(timed_minor(&timer, &mut || {
            std::hint::black_box(m.touch(PAGE));
            (len / PAGE) as u64
        }))
    })?;
    out.push(
        Figure::latency_values(
            "pagefault.file_minor",
            "file minor fault (cached)",
            "ns per fault: first read of each page of a new shared mapping of a cached file",
            minor.values,
        )
        .note(format!(
            "{:.1} pages mapped per fault (fault-around) over {} faults",
            minor.pages as f64 / minor.faults.max(1) as f64,
            minor.faults
        )),
    );
    Ok(())
}

/// Major faults: the file evicted before each pass, one page read per
/// fault.
fn major(
    ctx: &mut Ctx<'_>,
    out: &mut BenchResult,
    passes: Passes,
    file: &std::fs::File,
    len: usize,
) -> Result<(), StepError> {
    let timer = ctx.h.timer;
    let (budget, min_passes) = (passes.budget, passes.min);
    let touches: usize = if ctx.cfg.tiny() { 16 } else { 128 };
    let stride = (len / touches).max(PAGE) / PAGE * PAGE;
    let mut major = PerFault::default();
    let mut still_cached = 0u64;
    let start = std::time::Instant::now();
    ctx.step("major faults");
    while major.values.len() < min_passes.min(3)
        || (start.elapsed() < budget * 2 && major.values.len() < 200)
    {
        match super::scratch::evict(file, &ctx.cfg.dir) {
            Ok(Some(left)) => still_cached = still_cached.max(left),
            Ok(None) => {}
            Err(e) => {
                out.push(Figure::unavailable(
                    "pagefault.major",
                    "major fault (evicted file)",
                    "ns per major fault",
                    format!("cannot evict the scratch file: {e}"),
                ));
                return Ok(());
            }
        }
        let m = FileMap::new(file, len, true).map_err(step_err("mmap the scratch file"))?;
        let (_, j0) = faults();
        let s = timer.now();
        std::hint::black_box(m.touch(stride));
        let ns = timer.ns_since(s);
        let (_, j1) = faults();
        let n = j1.saturating_sub(j0);
        if n > 0 {
            major.values.push(ns / n as f64);
            major.faults += n;
            major.pages += (len / stride) as u64;
        }
        if major.values.is_empty() && start.elapsed() > budget {
            break;
        }
    }
    let def = "ns per major fault: read of a page of an evicted file through a MADV_RANDOM mapping (one page per fault, no readahead)";
    if major.values.is_empty() {
        out.push(Figure::unavailable(
            "pagefault.major",
            "major fault (evicted file)",
            def,
            format!(
                "no major fault was counted: the file stayed cached ({still_cached} pages after eviction) or the filesystem under {} keeps it in memory (tmpfs)",
                super::scratch::shown(&ctx.cfg.dir)
            ),
        ));
    } else {
        let mut f = Figure::latency_values(
            "pagefault.major",
            "major fault (evicted file)",
            def,
            major.values,
        )
        .note(format!(
            "{} major faults for {} pages touched, stride {} KiB",
            major.faults,
            major.pages,
            stride / 1024
        ));
        if still_cached > 0 {
            f = f.note(format!("{still_cached} pages stayed cached after eviction"));
        }
        out.push(f);
    }
    Ok(())
}
