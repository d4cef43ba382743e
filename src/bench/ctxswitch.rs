//! ctxswitch: two tasks passing a one-byte token back and forth, lmbench
//! `lat_ctx` style: the cost of the pipe operations themselves (a write and
//! a read of one byte in one task, no switch) is measured first and taken
//! out, leaving the switch. Pinned to one CPU, each hand-over is a real
//! context switch; across two CPUs it is a wake-up of a sleeping task on
//! another CPU (an IPI, maybe an idle exit). Processes and threads; for
//! threads also a futex hand-over. A result that comes out negative (pipe
//! cost above the round trip: noise) is kept and flagged, never dropped.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use super::harness::Samples;
use super::figure::Figure;
use super::model::{BenchResult, Section};
use super::spec::{Benchmark, Ctx, Plot, PlotKind, StepError, step_err};
use crate::stats;
use crate::sys;

pub const BENCH: Benchmark = Benchmark {
    name: "ctxswitch",
    section: Section::Cpu,
    about: "token passing between two processes or threads, pinned and across CPUs",
    heavy: false,
    uses_dir: false,
    switches_by_design: true,
    estimate: |c| c.budget_per_figure() * 8 + Duration::from_millis(100),
    run,
    plots: &[Plot {
        heading: "ctxswitch",
        title: "ctxswitch: per switch or hand-over",
        figures: "",
        kind: PlotKind::Bars,
    }],
};

#[derive(Clone, Copy)]
enum Placement {
    /// Both tasks on one CPU.
    Same(usize),
    /// The partner on another CPU (this one).
    Across(usize),
}

impl Placement {
    fn partner_cpu(self) -> usize {
        match self {
            Placement::Same(c) => c,
            Placement::Across(other) => other,
        }
    }
    fn key(self) -> &'static str {
        match self {
            Placement::Same(_) => "pinned",
            Placement::Across(..) => "across",
        }
    }
    fn words(self) -> &'static str {
        match self {
            Placement::Same(_) => "both on one CPU: a real switch",
            Placement::Across(..) => "on two CPUs: a cross-CPU wake-up",
        }
    }
}

fn pipe_files() -> std::io::Result<(File, File)> {
    let (r, w) = sys::process::pipe()?;
    Ok((File::from(r), File::from(w)))
}

/// Times round trips of one byte: written to the partner, read back.
fn pipe_round_trips(
    ctx: &Ctx<'_>,
    to_partner: &mut File,
    from_partner: &mut File,
) -> std::io::Result<Samples> {
    let mut b = [0u8; 1];
    ctx.h.measure_raw::<std::io::Error>(&mut |iters, t| {
        let s = t.now();
        for _ in 0..iters {
            to_partner.write_all(&[1])?;
            from_partner.read_exact(&mut b)?;
        }
        Ok(t.ns_since(s))
    })
}

/// ns per write+read of one byte through a pipe in one task.
fn pipe_overhead(ctx: &Ctx<'_>) -> Result<Samples, StepError> {
    let (mut r, mut w) = pipe_files().map_err(step_err("pipe"))?;
    let mut b = [0u8; 1];
    ctx.h
        .measure::<std::io::Error>(&mut |iters, t| {
            let s = t.now();
            for _ in 0..iters {
                w.write_all(&[1])?;
                r.read_exact(&mut b)?;
            }
            Ok(t.ns_since(s))
        })
        .map_err(step_err("pipe write+read"))
}

/// Round trips between this thread and a forked child, ns each.
fn process_round_trips(ctx: &Ctx<'_>, place: Placement) -> Result<Samples, StepError> {
    let (mut to_child_r, mut to_child_w) = pipe_files().map_err(step_err("pipe"))?;
    let (mut to_parent_r, mut to_parent_w) = pipe_files().map_err(step_err("pipe"))?;
    let cpu = place.partner_cpu();
    let parent_ends = [to_child_w.as_raw_fd(), to_parent_r.as_raw_fd()];
    let pid = sys::spawn::fork_with(&parent_ends, &mut || {
        let _ = sys::cpu::pin_to_cpu(cpu);
        let mut b = [0u8; 1];
        loop {
            match to_child_r.read(&mut b) {
                Ok(1) => {}
                _ => return 0,
            }
            if to_parent_w.write(&b).is_err() {
                return 1;
            }
        }
    })
    .map_err(step_err("fork the partner process"))?;
    drop(to_child_r);
    drop(to_parent_w);
    let result = pipe_round_trips(ctx, &mut to_child_w, &mut to_parent_r);
    drop(to_child_w);
    let _ = sys::spawn::wait_child(pid);
    result.map_err(step_err("token passing between processes"))
}

/// Round trips between this thread and a partner thread over pipes.
fn thread_pipe_round_trips(ctx: &Ctx<'_>, place: Placement) -> Result<Samples, StepError> {
    let (mut to_child_r, mut to_child_w) = pipe_files().map_err(step_err("pipe"))?;
    let (mut to_parent_r, mut to_parent_w) = pipe_files().map_err(step_err("pipe"))?;
    let cpu = place.partner_cpu();
    let partner = std::thread::Builder::new()
        .name("tally-ctx".into())
        .spawn(move || {
            let _ = sys::cpu::pin_to_cpu(cpu);
            let mut b = [0u8; 1];
            while let Ok(1) = to_child_r.read(&mut b) {
                if to_parent_w.write(&b).is_err() {
                    break;
                }
            }
        })
        .map_err(step_err("start the partner thread"))?;
    let result = pipe_round_trips(ctx, &mut to_child_w, &mut to_parent_r);
    drop(to_child_w);
    let _ = partner.join();
    result.map_err(step_err("token passing between threads"))
}

const PARTNER_TURN: u32 = 1;
const MAIN_TURN: u32 = 2;
const STOP: u32 = 3;

/// Round trips between this thread and a partner thread over a futex.
fn thread_futex_round_trips(ctx: &Ctx<'_>, place: Placement) -> Result<Samples, StepError> {
    let word = Arc::new(AtomicU32::new(MAIN_TURN));
    let theirs = Arc::clone(&word);
    let cpu = place.partner_cpu();
    let partner = std::thread::Builder::new()
        .name("tally-futex".into())
        .spawn(move || {
            let _ = sys::cpu::pin_to_cpu(cpu);
            loop {
                match theirs.load(Ordering::Acquire) {
                    STOP => return,
                    PARTNER_TURN => {
                        theirs.store(MAIN_TURN, Ordering::Release);
                        let _ = sys::events::futex_wake(&theirs);
                    }
                    v => {
                        if sys::events::futex_wait(&theirs, v).is_err() {
                            return;
                        }
                    }
                }
            }
        })
        .map_err(step_err("start the partner thread"))?;
    let result = ctx.h.measure_raw::<std::io::Error>(&mut |iters, t| {
        let s = t.now();
        for _ in 0..iters {
            word.store(PARTNER_TURN, Ordering::Release);
            sys::events::futex_wake(&word)?;
            loop {
                let v = word.load(Ordering::Acquire);
                if v == MAIN_TURN {
                    break;
                }
                sys::events::futex_wait(&word, v)?;
            }
        }
        Ok(t.ns_since(s))
    });
    word.store(STOP, Ordering::Release);
    let _ = sys::events::futex_wake(&word);
    let _ = partner.join();
    result.map_err(step_err("futex hand-over between threads"))
}

/// Per-switch values: (round trip - 2 × overhead) / 2 for every sample,
/// negative ones kept.
fn per_switch(rt: &Samples, overhead_ns: f64) -> Vec<f64> {
    rt.per_op_ns
        .iter()
        .map(|v| (v - 2.0 * overhead_ns) / 2.0)
        .collect()
}

fn flag_negative(mut f: Figure) -> Figure {
    let negative = f.samples.iter().filter(|v| **v < 0.0).count();
    if negative > 0 {
        let total = f.samples.len();
        f = f.note(format!(
            "{negative} of {total} samples came out negative (the pipe cost measured alone exceeded the round trip): noise, not a switch cost"
        ));
    }
    f
}

fn run(ctx: &mut Ctx<'_>, out: &mut BenchResult) -> Result<(), StepError> {
    let overhead = pipe_overhead(ctx)?;
    let overhead_ns = stats::summarize(&overhead.per_op_ns).map_or(0.0, |s| s.median);
    out.push(Figure::latency(
        "ctxswitch.pipe_overhead",
        "pipe write+read, one task",
        "ns per 1-byte write plus 1-byte read on one pipe in one task (no switch); subtracted below",
        overhead,
    ));
    let mut places = Vec::new();
    match (ctx.cpu, ctx.other_cpu) {
        (Some(c), other) => {
            places.push(Placement::Same(c));
            match other {
                Some(o) => places.push(Placement::Across(o)),
                None => out
                    .notes
                    .push("across-CPU figures unavailable: one CPU only".into()),
            }
        }
        (None, _) => {
            out.notes
                .push("the benchmark thread could not be pinned (sched_setaffinity failed)".into());
        }
    }
    for place in places {
        ctx.step(format!("processes, {}", place.key()));
        let rt = process_round_trips(ctx, place)?;
        out.push(flag_negative(Figure::latency_values(
            format!("ctxswitch.process_pipe.{}", place.key()),
            &format!("process, pipe, {}", place.key()),
            &format!(
                "ns per switch = (round trip − 2 × pipe write+read) / 2, two processes {}",
                place.words()
            ),
            per_switch(&rt, overhead_ns),
        )));
        out.push(Figure::latency(
            format!("ctxswitch.process_round_trip.{}", place.key()),
            &format!("process round trip, {}", place.key()),
            "ns per round trip (2 switches, 2 writes, 2 reads), nothing subtracted",
            rt,
        ));
        ctx.step(format!("threads, {}", place.key()));
        let rt = thread_pipe_round_trips(ctx, place)?;
        out.push(flag_negative(Figure::latency_values(
            format!("ctxswitch.thread_pipe.{}", place.key()),
            &format!("thread, pipe, {}", place.key()),
            &format!(
                "ns per switch = (round trip − 2 × pipe write+read) / 2, two threads {}",
                place.words()
            ),
            per_switch(&rt, overhead_ns),
        )));
        let rt = thread_futex_round_trips(ctx, place)?;
        out.push(Figure::latency_values(
            format!("ctxswitch.thread_futex.{}", place.key()),
            &format!("thread, futex, {}", place.key()),
            &format!(
                "ns per hand-over = round trip / 2, futex wake + wait included, two threads {}",
                place.words()
            ),
            rt.per_op_ns.iter().map(|v| v / 2.0).collect(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_switch_keeps_negative_values() {
        let rt = Samples {
            per_op_ns: vec![100.0, 10.0],
            iters_per_sample: 1,
            warmup_discarded: 0,
            clamped: 0,
            too_short: 0,
        };
        assert_eq!(per_switch(&rt, 20.0), vec![30.0, -15.0]);
        let f = flag_negative(Figure::latency_values("x", "x", "d", per_switch(&rt, 20.0)));
        assert_eq!(f.samples.len(), 2);
        assert_eq!(f.notes.len(), 1);
    }
}
