//! signal: lmbench `lat_sig` — installing a handler (`sigaction`), a
//! signal sent to this process (`kill(getpid(), SIGUSR1)`) and caught by a
//! handler, and a protection fault: a page made inaccessible with
//! `mprotect`, written to, the SIGSEGV caught by a handler that makes the
//! page accessible again, the write retried and completed. The same two
//! `mprotect` calls without the fault are timed beside it, so the fault
//! and its delivery show apart. Every caught signal is counted: a batch
//! whose signals did not all reach the handler is an error, not a figure.

use std::time::Duration;

use super::figure::Figure;
use super::model::{BenchResult, Section};
use super::spec::{Benchmark, Ctx, Plot, PlotKind, StepError, step_err};
use crate::sys::sigbench::{FaultPage, UserSignal};

pub const BENCH: Benchmark = Benchmark {
    name: "signal",
    section: Section::Cpu,
    about: "sigaction install, kill(getpid()) to a handler, protection-fault SIGSEGV",
    heavy: false,
    uses_dir: false,
    switches_by_design: false,
    estimate: |c| c.budget_per_figure() * 4 + Duration::from_millis(50),
    run,
    plots: &[Plot {
        heading: "signal",
        title: "signal: per call, per signal, per fault",
        figures: "",
        kind: PlotKind::Bars,
    }],
};

/// Waits briefly for signals still on their way (delivered to another
/// thread of the process); the count caught since `before`.
fn settle(before: u64, want: u64) -> u64 {
    let start = std::time::Instant::now();
    while UserSignal::caught().saturating_sub(before) < want
        && start.elapsed() < Duration::from_millis(100)
    {
        std::thread::yield_now();
    }
    UserSignal::caught().saturating_sub(before)
}

fn run(ctx: &mut Ctx<'_>, out: &mut BenchResult) -> Result<(), StepError> {
    let h = ctx.h;
    let sig = UserSignal::install(libc::SIGUSR1).map_err(step_err("install a SIGUSR1 handler"))?;
    let s = h
        .measure::<std::io::Error>(&mut |iters, t| {
            let s = t.now();
            for _ in 0..iters {
                sig.reinstall()?;
            }
            Ok(t.ns_since(s))
        })
        .map_err(step_err("sigaction"))?;
    out.push(Figure::latency(
        "signal.install",
        "sigaction install",
        "ns per sigaction(SIGUSR1) installing a handler (SA_RESTART)",
        s,
    ));

    let mut missing = 0u64;
    let s = h
        .measure::<std::io::Error>(&mut |iters, t| {
            let before = UserSignal::caught();
            let s = t.now();
            for _ in 0..iters {
                sig.raise()?;
            }
            let ns = t.ns_since(s);
            missing += iters.saturating_sub(settle(before, iters));
            Ok(ns)
        })
        .map_err(step_err("kill(getpid(), SIGUSR1)"))?;
    let mut f = Figure::latency(
        "signal.deliver",
        "kill(getpid()) + handler",
        "ns per kill(getpid(), SIGUSR1) whose handler runs before the call returns (handler entry, an atomic increment, sigreturn)",
        s,
    );
    if missing > 0 {
        f.flag(format!(
            "{missing} signals did not reach the handler before kill returned (another thread took them): not the delivery this figure defines"
        ));
    }
    out.push(f);
    drop(sig);

    match FaultPage::new() {
        Ok(page) => {
            let mut unrepaired = 0u64;
            let s = h
                .measure_each::<std::io::Error>(&mut |t| {
                    let before = FaultPage::repaired();
                    let s = t.now();
                    page.fault_once()?;
                    let ns = t.ns_since(s);
                    if FaultPage::repaired() != before + 1 {
                        unrepaired += 1;
                    }
                    Ok(ns)
                })
                .map_err(step_err("protection fault"))?;
            let mut f = Figure::latency(
                "signal.prot_fault",
                "protection fault, SIGSEGV caught",
                "ns per mprotect(PROT_NONE) of a page + a write to it that faults + SIGSEGV handler that mprotects it read/write + sigreturn + the write retried",
                s,
            );
            if unrepaired > 0 {
                f.flag(format!(
                    "{unrepaired} writes did not fault into the handler: not the fault this figure defines"
                ));
            }
            out.push(f);
            let s = h
                .measure::<std::io::Error>(&mut |iters, t| {
                    let s = t.now();
                    for _ in 0..iters {
                        page.protect_unprotect()?;
                    }
                    Ok(t.ns_since(s))
                })
                .map_err(step_err("mprotect"))?;
            out.push(Figure::latency(
                "signal.mprotect_pair",
                "mprotect none + read/write, no fault",
                "ns per mprotect(PROT_NONE) + mprotect(PROT_READ|PROT_WRITE) of one page: the protection fault's two system calls without the fault",
                s,
            ));
        }
        Err(e) => {
            for (id, label) in [
                ("signal.prot_fault", "protection fault, SIGSEGV caught"),
                ("signal.mprotect_pair", "mprotect none + read/write, no fault"),
            ] {
                out.push(Figure::unavailable(
                    id,
                    label,
                    "ns per protection fault",
                    format!("could not set up the page and handler: {e}"),
                ));
            }
        }
    }
    Ok(())
}
