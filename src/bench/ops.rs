//! ops: latency and throughput of basic operations — add, multiply and
//! divide on 32- and 64-bit integers, float and double — run as inline
//! assembly (`sys::ops`), so exactly the named instructions execute.
//!
//! - **latency**: one dependent chain (each operation waits for the one
//!   before): ns from one operation's start to its result.
//! - **throughput**: eight independent chains: ns per operation when as
//!   many are in flight as the core allows (reciprocal throughput).
//!
//! Always in ns. In core cycles where the core clock is known: `machine.
//! core_mhz`, measured at start-up by a chain of dependent 64-bit
//! multiplies taken as 3 cycles each (true of Intel since Core 2 and AMD
//! since Zen; the timer benchmark refines it when it runs). So the 64-bit
//! multiply latency is 3 cycles by construction here — a check of the
//! clock, not a finding. Where the clock is unknown the cycle counts are
//! "unavailable" and say why.

use std::time::Duration;

use super::figure::Figure;
use super::model::{BenchResult, Section};
use super::spec::{Benchmark, Ctx, Plot, PlotKind, StepError};
use crate::sys::ops::{self, OPS_PER_ROUND, Op, Ty};

pub const BENCH: Benchmark = Benchmark {
    name: "ops",
    section: Section::Cpu,
    about: "latency and throughput of add, mul, div on i32, i64, f32, f64",
    heavy: false,
    uses_dir: false,
    switches_by_design: false,
    estimate: |c| c.budget_per_figure() * 24 + Duration::from_millis(100),
    run,
    plots: &[
        Plot {
            heading: "ops",
            title: "ops: latency, ns from an operation's start to its result (dependent chain)",
            figures: "ops.latency.",
            kind: PlotKind::Bars,
        },
        Plot {
            heading: "ops",
            title: "ops: throughput, ns per operation with eight independent chains in flight",
            figures: "ops.throughput.",
            kind: PlotKind::Bars,
        },
    ],
};

/// Every (type, operation) measured, in order, with its key and label.
pub const OPS: [(Ty, Op, &str, &str); 12] = [
    (Ty::I32, Op::Add, "i32_add", "i32 add"),
    (Ty::I32, Op::Mul, "i32_mul", "i32 mul"),
    (Ty::I32, Op::Div, "i32_div", "i32 div"),
    (Ty::I64, Op::Add, "i64_add", "i64 add"),
    (Ty::I64, Op::Mul, "i64_mul", "i64 mul"),
    (Ty::I64, Op::Div, "i64_div", "i64 div"),
    (Ty::F32, Op::Add, "f32_add", "f32 add"),
    (Ty::F32, Op::Mul, "f32_mul", "f32 mul"),
    (Ty::F32, Op::Div, "f32_div", "f32 div"),
    (Ty::F64, Op::Add, "f64_add", "f64 add"),
    (Ty::F64, Op::Mul, "f64_mul", "f64 mul"),
    (Ty::F64, Op::Div, "f64_div", "f64 div"),
];

/// The instruction and operands behind one figure.
fn instruction(ty: Ty, op: Op) -> &'static str {
    match (ty, op) {
        (Ty::I32, Op::Add) => "add r32, r32 (+1)",
        (Ty::I64, Op::Add) => "add r64, r64 (+1)",
        (Ty::I32, Op::Mul) => "imul r32, r32 (×3)",
        (Ty::I64, Op::Mul) => "imul r64, r64 (×3)",
        (Ty::I32, Op::Div) => "div r32: (2^32−1) / ~2^16, 16-bit quotients",
        (Ty::I64, Op::Div) => "div r64: (2^64−1) / ~2^32, 32-bit quotients",
        (Ty::F32, Op::Add) => "addss (+1.0)",
        (Ty::F64, Op::Add) => "addsd (+1.0)",
        (Ty::F32, Op::Mul) => "mulss (×1.0)",
        (Ty::F64, Op::Mul) => "mulsd (×1.0)",
        (Ty::F32, Op::Div) => "divss (/1.0)",
        (Ty::F64, Op::Div) => "divsd (/1.0)",
    }
}

/// The figure's cycle count ("2.98 cycles"), short enough for the
/// table's note column; "cycles unavailable" without a clock or a value.
pub fn cycles_note(ns: Option<f64>, core_mhz: Option<f64>) -> String {
    match (ns, core_mhz) {
        (Some(ns), Some(mhz)) if mhz > 0.0 => format!("{:.2} cycles", ns * mhz / 1000.0),
        _ => "cycles unavailable".into(),
    }
}

/// How the cycle counts were found, or why they are unavailable.
pub fn clock_note(core_mhz: Option<f64>) -> String {
    match core_mhz {
        Some(mhz) if mhz > 0.0 => format!(
            "cycles = ns × the core clock, {} MHz (the machine's core frequency above, from a chain of dependent 64-bit multiplies taken as 3 cycles each), so i64 mul latency is 3 cycles by construction: a check of the clock",
            crate::units::thousands_f(mhz)
        ),
        _ => "cycles unavailable: the core clock is unknown (its probe, a chain of dependent multiplies, runs on x86_64 only)".into(),
    }
}

/// How far the check of the clock may miss its constructed value (the
/// 64-bit multiply's 3 cycles) before it is said to have failed.
pub const CLOCK_CHECK: f64 = 0.10;

/// The i64 multiply's latency in cycles, by construction.
const MUL_CYCLES: f64 = 3.0;

/// Writes every cycle count of an ops result `r` with `core_mhz`, the one
/// clock of the whole report (its header, the timer's figure and these
/// lines): the notes were made while the benchmark ran, with the clock
/// known then, and each pass made its own. Then checks the clock: the
/// i64 multiply latency must come out within [`CLOCK_CHECK`] of 3 cycles,
/// else the report says the check failed and by how much. Regression: a
/// report said "core frequency 4,035" MHz, "the core runs at 3918 MHz"
/// and "cycles = ns × the core clock, 3,094 MHz", and gave i64 mul
/// latency 2.29 cycles where the docs say 3 by construction.
pub fn restate_cycles(r: &mut BenchResult, core_mhz: Option<f64>) {
    if r.name != BENCH.name {
        return;
    }
    let is_clock_note = |n: &String| n.starts_with("cycles") || n.starts_with("clock check");
    r.notes.retain(|n| !is_clock_note(n));
    r.notes.insert(0, clock_note(core_mhz));
    let mut check = None;
    for f in &mut r.figures {
        if !f.id.starts_with("ops.") {
            continue;
        }
        f.notes.retain(|n| !n.ends_with("cycles") && !n.contains("cycles unavailable"));
        let note = cycles_note(f.median(), core_mhz);
        f.notes.insert(0, note);
        if f.id == "ops.latency.i64_mul"
            && let (Some(ns), Some(mhz)) = (f.median(), core_mhz.filter(|m| *m > 0.0))
        {
            check = Some(ns * mhz / 1000.0);
        }
    }
    if let Some(cycles) = check
        && (cycles / MUL_CYCLES - 1.0).abs() > CLOCK_CHECK
    {
        r.notes.insert(
            1,
            format!(
                "clock check FAILED: i64 mul latency is {cycles:.2} cycles by this clock, not 3 \
                 ({:+.0}%, more than {:.0}%): the core ran at another speed while ops ran than \
                 when the clock was measured, so every cycle count here is off by as much",
                (cycles / MUL_CYCLES - 1.0) * 100.0,
                CLOCK_CHECK * 100.0
            ),
        );
    }
}

fn run(ctx: &mut Ctx<'_>, out: &mut BenchResult) -> Result<(), StepError> {
    let h = ctx.h;
    // The cycle counts are written once the report's one clock is known
    // (`restate_cycles`); these are the start-up clock's.
    let mhz = ctx.machine.core_mhz;
    out.notes.push(clock_note(mhz));
    for (dependent, kind) in [(true, "latency"), (false, "throughput")] {
        for (ty, op, key, label) in OPS {
            let id = format!("ops.{kind}.{key}");
            let def = if dependent {
                format!(
                    "ns per operation, one dependent chain of {}, 16 per loop round",
                    instruction(ty, op)
                )
            } else {
                format!(
                    "ns per operation, 8 independent chains of {}, 16 per loop round",
                    instruction(ty, op)
                )
            };
            let label = format!("{label} {kind}");
            if ops::run(ty, op, dependent, 1).is_none() {
                out.push(Figure::unavailable(
                    id,
                    &label,
                    &def,
                    "the operation kernels are x86_64 assembly",
                ));
                continue;
            }
            let s = h
                .sample(&mut |iters, t| {
                    let rounds = iters.div_ceil(OPS_PER_ROUND).max(1);
                    let s = t.now();
                    std::hint::black_box(ops::run(ty, op, dependent, std::hint::black_box(rounds)));
                    // Per operation: the harness divides by `iters`.
                    t.ns_since(s) * iters as f64 / (rounds * OPS_PER_ROUND) as f64
                });
            let f = Figure::latency(id, &label, &def, s);
            let note = cycles_note(f.median(), mhz);
            out.push(f.note(note));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cycles_need_a_clock() {
        assert_eq!(cycles_note(Some(1.0), Some(3000.0)), "3.00 cycles");
        assert_eq!(cycles_note(Some(1.0), None), "cycles unavailable");
        assert_eq!(cycles_note(None, Some(3000.0)), "cycles unavailable");
        assert!(clock_note(None).contains("unknown"));
        assert!(clock_note(Some(3000.0)).contains("3,000 MHz"));
    }

    fn result(i64_mul_ns: f64) -> BenchResult {
        let mut r = BenchResult::new(&BENCH);
        r.notes.push(clock_note(Some(3094.0)));
        for (id, ns) in [("ops.latency.i64_mul", i64_mul_ns), ("ops.latency.i32_add", 0.24)] {
            let f = Figure::latency_values(id.to_string(), id, "d", vec![ns; 9]);
            let note = cycles_note(f.median(), Some(3094.0));
            r.push(f.note(note));
        }
        r
    }

    /// Regression: three clocks in one report, and i64 mul latency 2.29
    /// cycles where 3 is its value by construction.
    #[test]
    fn every_cycle_count_uses_the_one_clock_and_a_failed_check_is_said() {
        // 0.74 ns at 4,035 MHz: 2.99 cycles, the check holds.
        let mut r = result(0.74);
        restate_cycles(&mut r, Some(4035.0));
        assert!(r.notes[0].contains("4,035 MHz"), "{:?}", r.notes);
        assert!(!r.notes.iter().any(|n| n.contains("3,094")), "{:?}", r.notes);
        assert!(!r.notes.iter().any(|n| n.contains("FAILED")), "{:?}", r.notes);
        let mul = r.figures.iter().find(|f| f.id == "ops.latency.i64_mul").unwrap();
        assert_eq!(mul.notes, vec!["2.99 cycles".to_string()]);
        // 0.74 ns at 3,094 MHz: 2.29 cycles, more than 10% off 3.
        let mut r = result(0.74);
        restate_cycles(&mut r, Some(3094.0));
        assert!(
            r.notes.iter().any(|n| n.starts_with("clock check FAILED: i64 mul latency is 2.29")),
            "{:?}",
            r.notes
        );
        // Within 10% is no failure.
        let mut r = result(1.05);
        restate_cycles(&mut r, Some(3094.0));
        assert!(!r.notes.iter().any(|n| n.contains("FAILED")), "{:?}", r.notes);
    }

    #[test]
    fn every_type_and_operation_once() {
        let mut keys: Vec<&str> = OPS.iter().map(|o| o.2).collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), 12);
    }
}
