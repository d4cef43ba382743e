//! fsops: lmbench `lat_fs` — creating and deleting files of 0, 1 KiB,
//! 4 KiB and 10 KiB in `--dir`, and the latency of `fsync` after a 4 KiB
//! write.
//!
//! Files are made in batches of [`BATCH`]: each sample creates the batch
//! (`open(O_CREAT|O_EXCL)`, one `write` of the whole size, `close`), timed,
//! then deletes it (`unlink`), timed apart. Every name is armed for
//! removal on a fatal signal before it exists, so an interrupted run
//! leaves nothing in `--dir` (only SIGKILL can, and at most one batch).
//! The figures are ns per file; files per second are in the notes.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::figure::Figure;
use super::harness::sample_is_timed;
use super::model::{BenchResult, Section};
use super::spec::{Benchmark, Ctx, Plot, PlotKind, StepError, step_err};
use crate::sys;
use crate::units::human_bytes;

pub const BENCH: Benchmark = Benchmark {
    name: "fsops",
    section: Section::FileSystem,
    about: "create+delete of 0, 1K, 4K, 10K files; fsync of a 4 KiB write",
    heavy: false,
    uses_dir: true,
    switches_by_design: false,
    estimate: |c| c.budget_per_figure() * (SIZES.len() as u32 + 1) + Duration::from_millis(100),
    run,
    plots: &[Plot {
        heading: "fsops",
        title: "fsops: per file, by file size",
        figures: "fsops.",
        kind: PlotKind::Bars,
    }],
};

/// File sizes, lmbench's.
pub const SIZES: [usize; 4] = [0, 1 << 10, 4 << 10, 10 << 10];
/// Files per sample: enough to time (a file costs microseconds), few
/// enough that every name holds a removal slot.
pub const BATCH: usize = 16;

/// A batch of armed names: created, then deleted, sample after sample.
struct Batch {
    paths: Vec<PathBuf>,
    _guards: Vec<sys::cleanup::Guard>,
}

impl Batch {
    fn new(dir: &Path) -> std::io::Result<Batch> {
        let tag = u64::from(std::process::id())
            ^ std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
        let mut paths = Vec::new();
        let mut guards = Vec::new();
        for i in 0..BATCH {
            let p = dir.join(format!(".tally-bench-fsops-{tag:016x}-{i}"));
            guards.push(sys::cleanup::Guard::arm(&p)?);
            paths.push(p);
        }
        Ok(Batch {
            paths,
            _guards: guards,
        })
    }

    /// Creates every file with `data`; ns taken.
    fn create(&self, data: &[u8], timer: &super::harness::Timer) -> std::io::Result<f64> {
        let mut open = std::fs::OpenOptions::new();
        open.write(true).create_new(true).mode(0o600);
        let s = timer.now();
        for p in &self.paths {
            let mut f = open.open(p)?;
            if !data.is_empty() {
                f.write_all(data)?;
            }
        }
        Ok(timer.ns_since(s))
    }

    /// Deletes every file; ns taken.
    fn delete(&self, timer: &super::harness::Timer) -> std::io::Result<f64> {
        let s = timer.now();
        for p in &self.paths {
            std::fs::remove_file(p)?;
        }
        Ok(timer.ns_since(s))
    }

    /// Removes whatever a failed sample left (errors ignored).
    fn clear(&self) {
        for p in &self.paths {
            let _ = std::fs::remove_file(p);
        }
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        self.clear();
    }
}

/// ns per file created and per file deleted over samples of one batch.
struct CreateDelete {
    create: Vec<f64>,
    delete: Vec<f64>,
    untimed: usize,
}

fn create_delete(ctx: &Ctx<'_>, size: usize) -> std::io::Result<CreateDelete> {
    let batch = Batch::new(&ctx.cfg.dir)?;
    let data = vec![0x61u8; size];
    let timer = ctx.h.timer;
    let budget = ctx.h.budget;
    let resolution = ctx.h.calibration.timer_resolution_ns;
    let mut out = CreateDelete {
        create: Vec::new(),
        delete: Vec::new(),
        untimed: 0,
    };
    let start = Instant::now();
    let mut taken = 0;
    loop {
        let c = batch.create(&data, &timer);
        let c = match c {
            Ok(ns) => ns,
            Err(e) => {
                batch.clear();
                return Err(e);
            }
        };
        let d = batch.delete(&timer)?;
        taken += 1;
        if taken > budget.warmup_samples {
            if !sample_is_timed(c, resolution) || !sample_is_timed(d, resolution) {
                out.untimed += 1;
            }
            out.create.push(c / BATCH as f64);
            out.delete.push(d / BATCH as f64);
        }
        let kept = out.create.len();
        if kept >= budget.max_samples
            || (kept >= budget.min_samples && start.elapsed() >= budget.per_figure)
            || (kept >= 1 && start.elapsed() >= budget.per_figure * 10)
        {
            break;
        }
    }
    Ok(out)
}

fn per_second(f: Figure) -> Figure {
    match f.median() {
        Some(ns) if ns > 0.0 => {
            let rate = 1e9 / ns;
            f.note(format!("{} files per second", crate::units::thousands(rate as u64)))
        }
        _ => f,
    }
}

fn size_words(size: usize) -> String {
    if size == 0 {
        "0 B".into()
    } else {
        human_bytes(size as u64).replace(".0 ", " ")
    }
}

fn run(ctx: &mut Ctx<'_>, out: &mut BenchResult) -> Result<(), StepError> {
    let shown = super::scratch::shown(&ctx.cfg.dir);
    for size in SIZES {
        ctx.step(format!("create+delete, {} files", size_words(size)));
        let r = create_delete(ctx, size)
            .map_err(step_err(format!("create and delete files in {shown}")))?;
        let mut c = Figure::latency_values(
            format!("fsops.create.{size}"),
            &format!("create {} file", size_words(size)),
            &format!(
                "ns per file: open(O_CREAT|O_EXCL|O_WRONLY), {}close, in batches of {BATCH} in --dir",
                if size == 0 {
                    String::new()
                } else {
                    format!("one write of {size} B, ")
                }
            ),
            r.create,
        );
        let mut d = Figure::latency_values(
            format!("fsops.delete.{size}"),
            &format!("delete {} file", size_words(size)),
            &format!("ns per unlink of a {size}-byte file just created and closed, in batches of {BATCH}"),
            r.delete,
        );
        if r.untimed > 0 {
            for f in [&mut c, &mut d] {
                f.flag(format!(
                    "{} samples lasted under the timer's resolution: too short to have been timed",
                    r.untimed
                ));
            }
        }
        out.push(per_second(c));
        out.push(per_second(d));
    }

    ctx.step("fsync");
    let file: File = super::scratch::unnamed_file(&ctx.cfg.dir)
        .map_err(step_err(format!("create a scratch file in {shown}")))?;
    let block = [0x62u8; 4096];
    let s = ctx
        .h
        .measure_each::<std::io::Error>(&mut |t| {
            let s = t.now();
            file.write_all_at(&block, 0)?;
            file.sync_all()?;
            Ok(t.ns_since(s))
        })
        .map_err(step_err("fsync a 4 KiB write"))?;
    out.push(Figure::latency(
        "fsops.fsync",
        "4 KiB write + fsync",
        "ns per pwrite of 4 KiB at offset 0 (overwriting) + fsync, file in --dir",
        s,
    ));
    out.notes.push(format!("files under {shown}"));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_leave_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let b = Batch::new(dir.path()).unwrap();
        let t = super::super::harness::Timer::monotonic();
        b.create(&[1u8; 100], &t).unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), BATCH);
        assert!(b.create(&[], &t).is_err(), "O_EXCL refuses a name in use");
        b.delete(&t).unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        b.create(&[], &t).unwrap();
        drop(b);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn sizes_are_lmbench_s() {
        assert_eq!(SIZES, [0, 1024, 4096, 10240]);
        assert_eq!(size_words(0), "0 B");
        assert_eq!(size_words(10240), "10 KiB");
    }
}
