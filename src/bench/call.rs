//! call: the cost of calling a function that is not inlined, with 0 to 8
//! integer arguments (the System V ABI passes six in registers, the rest on
//! the stack). Arguments go through `black_box` so the compiler cannot fold
//! them; the functions are `#[inline(never)]`. The empty loop's cost is
//! subtracted, so a figure is the call, argument set-up and return.

use std::hint::black_box;

use super::harness::{Never, Samples};
use super::figure::Figure;
use super::model::{BenchResult, Section};
use super::spec::{Benchmark, Ctx, StepError};

pub const BENCH: Benchmark = Benchmark {
    name: "call",
    section: Section::Cpu,
    about: "function call cost by argument count (not inlined)",
    heavy: false,
    uses_dir: false,
    switches_by_design: false,
    estimate: |c| c.budget_per_figure() * 9,
    run,
    plots: &[],
};

#[inline(never)]
fn f0() -> u64 {
    black_box(1)
}
#[inline(never)]
fn f1(a: u64) -> u64 {
    a
}
#[inline(never)]
fn f2(a: u64, b: u64) -> u64 {
    a ^ b
}
#[inline(never)]
fn f3(a: u64, b: u64, c: u64) -> u64 {
    a ^ b ^ c
}
#[inline(never)]
fn f4(a: u64, b: u64, c: u64, d: u64) -> u64 {
    a ^ b ^ c ^ d
}
#[inline(never)]
fn f5(a: u64, b: u64, c: u64, d: u64, e: u64) -> u64 {
    a ^ b ^ c ^ d ^ e
}
#[inline(never)]
fn f6(a: u64, b: u64, c: u64, d: u64, e: u64, f: u64) -> u64 {
    a ^ b ^ c ^ d ^ e ^ f
}
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn f7(a: u64, b: u64, c: u64, d: u64, e: u64, f: u64, g: u64) -> u64 {
    a ^ b ^ c ^ d ^ e ^ f ^ g
}
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn f8(a: u64, b: u64, c: u64, d: u64, e: u64, f: u64, g: u64, h: u64) -> u64 {
    a ^ b ^ c ^ d ^ e ^ f ^ g ^ h
}

/// Calls the function with `args` arguments `iters` times.
fn calls(args: u32, iters: u64) {
    let x = black_box(7u64);
    for i in 0..iters {
        let r = match args {
            0 => f0(),
            1 => f1(black_box(i)),
            2 => f2(black_box(i), x),
            3 => f3(black_box(i), x, x),
            4 => f4(black_box(i), x, x, x),
            5 => f5(black_box(i), x, x, x, x),
            6 => f6(black_box(i), x, x, x, x, x),
            7 => f7(black_box(i), x, x, x, x, x, x),
            _ => f8(black_box(i), x, x, x, x, x, x, x),
        };
        black_box(r);
    }
}

fn run(ctx: &mut Ctx<'_>, out: &mut BenchResult) -> Result<(), StepError> {
    for args in 0..=8u32 {
        let measured: Result<Samples, Never> = ctx.h.measure(&mut |iters, t| {
            let s = t.now();
            calls(args, iters);
            Ok(t.ns_since(s))
        });
        let samples = match measured {
            Ok(s) => s,
            Err(never) => match never {},
        };
        out.push(
            Figure::latency(
                format!("call.args.{args}"),
                "call",
                "ns per call of an #[inline(never)] fn taking N u64 arguments (empty loop subtracted; a match on N picks the fn, well predicted)",
                samples,
            )
            .at(u64::from(args), "args"),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_arity_returns() {
        for a in 0..=8 {
            calls(a, 3);
        }
        assert_eq!(f8(1, 2, 4, 8, 16, 32, 64, 128), 255);
        assert_eq!(f5(1, 2, 4, 8, 16), 31);
    }
}
