//! syscall: the cost of entering the kernel — `getpid` by raw syscall
//! (libc cannot answer it from a cache), a 1-byte `read` of /dev/zero, a
//! 1-byte `write` to /dev/null, `stat` (std's `metadata`, which is
//! `statx`) of /dev/null, and `open`+`close` of /dev/null.

use std::fs::File;
use std::io::{Read, Write};

use super::harness::Samples;
use super::figure::Figure;
use super::model::{BenchResult, Section};
use super::spec::{Benchmark, Ctx, Plot, PlotKind, StepError, step_err};
use crate::sys;

pub const BENCH: Benchmark = Benchmark {
    name: "syscall",
    section: Section::Cpu,
    about: "getpid, 1-byte read and write, stat, open+close",
    heavy: false,
    uses_dir: false,
    switches_by_design: false,
    estimate: |c| c.budget_per_figure() * 5,
    run,
    plots: &[Plot {
        heading: "syscall",
        title: "syscall: per call",
        figures: "",
        kind: PlotKind::Bars,
    }],
};

fn run(ctx: &mut Ctx<'_>, out: &mut BenchResult) -> Result<(), StepError> {
    let h = ctx.h;
    let s: Samples = h
        .measure::<std::io::Error>(&mut |iters, t| {
            let s = t.now();
            for _ in 0..iters {
                std::hint::black_box(sys::cpu::raw_getpid());
            }
            Ok(t.ns_since(s))
        })
        .map_err(step_err("getpid"))?;
    out.push(Figure::latency(
        "syscall.getpid",
        "getpid (raw syscall)",
        "ns per syscall(SYS_getpid), never cached by libc",
        s,
    ));

    let mut zero = File::open("/dev/zero").map_err(step_err("open /dev/zero"))?;
    let mut byte = [0u8; 1];
    let s = h
        .measure::<std::io::Error>(&mut |iters, t| {
            let s = t.now();
            for _ in 0..iters {
                zero.read_exact(&mut byte)?;
            }
            Ok(t.ns_since(s))
        })
        .map_err(step_err("read /dev/zero"))?;
    out.push(Figure::latency(
        "syscall.read_dev_zero",
        "read 1 byte of /dev/zero",
        "ns per read(2) of 1 byte",
        s,
    ));

    let mut null = File::options()
        .write(true)
        .open("/dev/null")
        .map_err(step_err("open /dev/null"))?;
    let s = h
        .measure::<std::io::Error>(&mut |iters, t| {
            let s = t.now();
            for _ in 0..iters {
                null.write_all(&[1u8])?;
            }
            Ok(t.ns_since(s))
        })
        .map_err(step_err("write /dev/null"))?;
    out.push(Figure::latency(
        "syscall.write_dev_null",
        "write 1 byte to /dev/null",
        "ns per write(2) of 1 byte",
        s,
    ));

    let s = h
        .measure::<std::io::Error>(&mut |iters, t| {
            let s = t.now();
            for _ in 0..iters {
                std::hint::black_box(std::fs::metadata("/dev/null")?);
            }
            Ok(t.ns_since(s))
        })
        .map_err(step_err("stat /dev/null"))?;
    out.push(Figure::latency(
        "syscall.stat",
        "stat /dev/null",
        "ns per statx(2) of a path (std::fs::metadata)",
        s,
    ));

    let s = h
        .measure::<std::io::Error>(&mut |iters, t| {
            let s = t.now();
            for _ in 0..iters {
                drop(File::open("/dev/null")?);
            }
            Ok(t.ns_since(s))
        })
        .map_err(step_err("open /dev/null"))?;
    out.push(Figure::latency(
        "syscall.open_close",
        "open+close /dev/null",
        "ns per openat(2) + close(2) pair",
        s,
    ));
    Ok(())
}
