//! timer: what one clock read costs, how fine it is, the TSC rate against
//! CLOCK_MONOTONIC and the core clock (a dependent-multiply chain). In a VM the
//! TSC ticks at the nominal rate while the core may run faster, so TSC
//! deltas are not core cycles; the report says so when the two differ.

use std::time::{Duration, Instant};

use super::harness::{Never, Timer, TimerSource, timer_cost};
use super::figure::Figure;
use super::model::{BenchResult, Section};
use super::spec::{Benchmark, Ctx, StepError};

pub const BENCH: Benchmark = Benchmark {
    name: "timer",
    section: Section::Cpu,
    about: "clock read cost and resolution, TSC and core frequency",
    heavy: false,
    uses_dir: false,
    switches_by_design: false,
    estimate: |c| c.budget_per_figure() * 6 + Duration::from_millis(200),
    run,
    plots: &[],
};

fn read_cost(ctx: &Ctx<'_>, timer: Timer) -> super::harness::Samples {
    let measured = ctx.h.measure::<Never>(&mut |iters, t| {
        let s = t.now();
        for _ in 0..iters {
            std::hint::black_box(timer.now());
        }
        Ok(t.ns_since(s))
    });
    match measured {
        Ok(s) => s,
        Err(never) => match never {},
    }
}

fn run(ctx: &mut Ctx<'_>, out: &mut BenchResult) -> Result<(), StepError> {
    let span = if ctx.cfg.tiny() {
        Duration::from_millis(1)
    } else {
        Duration::from_millis(10)
    };
    let sources = [
        (TimerSource::Rdtscp, "rdtscp", "rdtscp+lfence read"),
        (
            TimerSource::LfenceRdtsc,
            "lfence_rdtsc",
            "lfence+rdtsc+lfence read",
        ),
        (
            TimerSource::Monotonic,
            "clock_gettime",
            "clock_gettime(MONOTONIC)",
        ),
    ];
    let best = Timer::best_source();
    for (source, key, label) in sources {
        let id = format!("timer.read.{key}");
        let def = "ns per clock read, back to back in a loop (loop overhead subtracted)";
        let usable = match source {
            TimerSource::Monotonic => true,
            TimerSource::Rdtscp => best == TimerSource::Rdtscp,
            TimerSource::LfenceRdtsc => best != TimerSource::Monotonic,
        };
        if !usable {
            out.push(Figure::unavailable(
                id,
                label,
                def,
                "this CPU lacks the instruction",
            ));
            continue;
        }
        let timer = Timer::calibrated(source, span);
        out.push(Figure::latency(id, label, def, read_cost(ctx, timer)));
        let res: Vec<f64> = (0..5).map(|_| timer_cost(&timer, 2_000).1).collect();
        out.push(Figure::latency_values(
            format!("timer.resolution.{key}"),
            &format!("{label}: resolution"),
            "smallest non-zero step between consecutive reads, ns",
            res,
        ));
    }
    if best == TimerSource::Monotonic {
        out.push(Figure::unavailable(
            "timer.tsc_mhz",
            "TSC frequency",
            "TSC ticks per µs against CLOCK_MONOTONIC",
            "no usable TSC on this machine",
        ));
    } else {
        let samples = if ctx.cfg.tiny() { 3 } else { 9 };
        let mhz: Vec<f64> = (0..samples)
            .map(|_| Timer::calibrated(best, span).hz() / 1e6)
            .collect();
        out.push(Figure::mhz(
            "timer.tsc_mhz",
            "TSC frequency",
            &format!(
                "TSC ticks per µs against CLOCK_MONOTONIC over {} ms spans",
                span.as_millis()
            ),
            mhz,
        ));
    }
    let deadline = Instant::now() + ctx.h.budget.per_figure;
    let mut core = Vec::new();
    let rounds = if ctx.cfg.tiny() { 10_000 } else { 100_000 };
    while core.len() < 5 || (Instant::now() < deadline && core.len() < 200) {
        // The fastest of three chains: a chain the scheduler stopped reads
        // slow, never fast (a busy 2-core VM put a quarter of single
        // chains below 1,000 MHz of a 3,000 MHz core).
        let got = super::machine::core_mhz_samples(3, rounds);
        let Some(best) = got.into_iter().reduce(f64::max) else {
            break;
        };
        core.push(best);
    }
    let core_def =
        "cycles per µs of a chain of dependent 3-cycle 64-bit multiplies (16 per loop round), the fastest of 3 chains per sample";
    if core.is_empty() {
        out.push(Figure::unavailable(
            "timer.core_mhz",
            "core frequency",
            core_def,
            "the multiply-chain probe exists for x86_64 only",
        ));
    } else {
        // Its note, TSC against core, is written with the report's one
        // clock (`restate_clock_note`).
        out.push(Figure::mhz("timer.core_mhz", "core frequency", core_def, core));
    }
    Ok(())
}

/// The note on the core frequency of a timer result `r`, written with the
/// report's one clock `core_mhz` (the core frequency's median over every
/// pass) and the TSC's median, when they differ by more than 5%: written
/// while a pass ran, it quoted that pass's median beside another in the
/// table.
pub fn restate_clock_note(r: &mut BenchResult, core_mhz: Option<f64>) {
    if r.name != BENCH.name {
        return;
    }
    let tsc = r
        .figures
        .iter()
        .find(|f| f.id == "timer.tsc_mhz")
        .and_then(|f| f.median());
    let Some(f) = r.figures.iter_mut().find(|f| f.id == "timer.core_mhz") else {
        return;
    };
    f.notes.retain(|n| !n.starts_with("the TSC ticks at"));
    if let (Some(tsc), Some(c)) = (tsc, core_mhz)
        && tsc > 0.0
        && (c / tsc - 1.0).abs() > 0.05
    {
        f.notes.push(format!(
            "the TSC ticks at {} MHz while the core runs at {} MHz: TSC deltas are not core cycles (1 tick = {:.2} cycles)",
            crate::units::thousands_f(tsc),
            crate::units::thousands_f(c),
            c / tsc
        ));
    }
}
