//! Basic-operation kernels for `tally bench ops`, in inline assembly so
//! that exactly the instructions named run, none folded or vectorised by
//! the compiler: 16 operations per loop round, either one dependent chain
//! (each operation waits for the one before: latency) or eight independent
//! chains (as many in flight as the core allows: throughput). Each
//! returns its final value, so a caller can check the arithmetic.
//!
//! Operands: adds add 1; multiplies multiply by 3 (integers) or 1.0
//! (floating point, which keeps the value constant: no overflow and no
//! denormals); integer divisions divide `2^32−1` (32-bit) or `2^64−1`
//! (64-bit) by a value that keeps the quotient at 16 or 32 significant
//! bits; floating-point divisions divide by 1.0.

/// Operations per loop round.
pub const OPS_PER_ROUND: u64 = 16;

/// The operand types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    I32,
    I64,
    F32,
    F64,
}

/// The operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Add,
    Mul,
    Div,
}

/// Runs `rounds` rounds of `op` on `ty`, as one dependent chain
/// (`dependent`) or eight independent ones; returns the final value (of
/// the first chain) as bits. None where the kernels do not exist (not
/// x86_64).
pub fn run(ty: Ty, op: Op, dependent: bool, rounds: u64) -> Option<u64> {
    #[cfg(target_arch = "x86_64")]
    {
        Some(x86::run(ty, op, dependent, rounds))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (ty, op, dependent, rounds);
        None
    }
}

/// A chain of `n` steps (at least one) on one stack slot: load it, add
/// the step's index, store it back, each step waiting for the store
/// before it; returns the slot's final value, `n·(n−1)/2` (wrapping). The
/// speed probe's memory work (src/speed.rs): a chain on a stack slot is
/// what a C loop over a local `volatile` runs, and on this VM its speed
/// moved sevenfold (0.37 to 2.8 ns a step) from one minute to the next
/// while register work did not. A slot addressed through another register
/// does not show it, so the chain is written here, on `rsp`.
pub fn stack_chain(n: u64) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        let mut i: u64 = 0;
        let out: u64;
        // SAFETY: the block takes 8 bytes of stack below rsp and gives them
        // back (no `nostack`: the stack pointer is aligned and the space
        // below it is the block's), reads and writes only that slot, and
        // ends with rsp as it found it; the loop runs `n.max(1)` times.
        unsafe {
            std::arch::asm!(
                "sub rsp, 8",
                "mov qword ptr [rsp], 0",
                "2:",
                "mov {v}, qword ptr [rsp]",
                "add {v}, {i}",
                "mov qword ptr [rsp], {v}",
                "inc {i}",
                "cmp {i}, {n}",
                "jb 2b",
                "mov {v}, qword ptr [rsp]",
                "add rsp, 8",
                v = out(reg) out,
                i = inout(reg) i,
                n = in(reg) n.max(1),
            );
        }
        let _ = i;
        out
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let kept = std::sync::atomic::AtomicU64::new(0);
        std::hint::black_box(&kept);
        for i in 0..n.max(1) {
            let v = kept.load(std::sync::atomic::Ordering::Relaxed);
            kept.store(v.wrapping_add(i), std::sync::atomic::Ordering::Relaxed);
        }
        kept.load(std::sync::atomic::Ordering::Relaxed)
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{Op, Ty};
    use std::arch::asm;

    /// 16 copies of one instruction template.
    macro_rules! x16 {
        ($s:expr) => {
            concat!(
                $s, "\n", $s, "\n", $s, "\n", $s, "\n", $s, "\n", $s, "\n", $s, "\n", $s, "\n", $s,
                "\n", $s, "\n", $s, "\n", $s, "\n", $s, "\n", $s, "\n", $s, "\n", $s, "\n"
            )
        };
    }

    /// Eight independent chains, twice: `$ins {aN}, {y}` for N in 0..8.
    macro_rules! x8x2 {
        ($ins:literal, $m:literal) => {
            concat!(
                $ins, " {a0", $m, "}, {y", $m, "}\n", $ins, " {a1", $m, "}, {y", $m, "}\n", $ins,
                " {a2", $m, "}, {y", $m, "}\n", $ins, " {a3", $m, "}, {y", $m, "}\n", $ins, " {a4",
                $m, "}, {y", $m, "}\n", $ins, " {a5", $m, "}, {y", $m, "}\n", $ins, " {a6", $m,
                "}, {y", $m, "}\n", $ins, " {a7", $m, "}, {y", $m, "}\n", $ins, " {a0", $m,
                "}, {y", $m, "}\n", $ins, " {a1", $m, "}, {y", $m, "}\n", $ins, " {a2", $m,
                "}, {y", $m, "}\n", $ins, " {a3", $m, "}, {y", $m, "}\n", $ins, " {a4", $m,
                "}, {y", $m, "}\n", $ins, " {a5", $m, "}, {y", $m, "}\n", $ins, " {a6", $m,
                "}, {y", $m, "}\n", $ins, " {a7", $m, "}, {y", $m, "}\n"
            )
        };
    }

    /// A dependent chain of `$ins x, y` on general registers.
    macro_rules! int_chain {
        ($ins:literal, $m:literal, $x:expr, $y:expr, $n:expr) => {{
            let mut x: u64 = $x;
            let mut n: u64 = $n;
            // SAFETY: register-only arithmetic and a backward branch.
            unsafe {
                asm!(
                    "2:",
                    x16!(concat!($ins, " {x", $m, "}, {y", $m, "}")),
                    "dec {n}",
                    "jnz 2b",
                    x = inout(reg) x,
                    y = in(reg) $y,
                    n = inout(reg) n,
                    options(nostack, nomem)
                );
            }
            let _ = n;
            x
        }};
    }

    /// Eight independent chains of `$ins aN, y` on general registers.
    macro_rules! int_stream {
        ($ins:literal, $m:literal, $x:expr, $y:expr, $n:expr) => {{
            let (mut a0, mut a1, mut a2, mut a3): (u64, u64, u64, u64) = ($x, $x, $x, $x);
            let (mut a4, mut a5, mut a6, mut a7): (u64, u64, u64, u64) = ($x, $x, $x, $x);
            let mut n: u64 = $n;
            // SAFETY: register-only arithmetic and a backward branch.
            unsafe {
                asm!(
                    "2:",
                    x8x2!($ins, $m),
                    "dec {n}",
                    "jnz 2b",
                    a0 = inout(reg) a0, a1 = inout(reg) a1, a2 = inout(reg) a2,
                    a3 = inout(reg) a3, a4 = inout(reg) a4, a5 = inout(reg) a5,
                    a6 = inout(reg) a6, a7 = inout(reg) a7,
                    y = in(reg) $y,
                    n = inout(reg) n,
                    options(nostack, nomem)
                );
            }
            let _ = n;
            std::hint::black_box((a1, a2, a3, a4, a5, a6, a7));
            a0
        }};
    }

    /// A dependent chain of `$ins x, y` on xmm registers.
    macro_rules! fp_chain {
        ($ins:literal, $t:ty, $x:expr, $y:expr, $n:expr) => {{
            let mut x: $t = $x;
            let y: $t = $y;
            let mut n: u64 = $n;
            // SAFETY: register-only arithmetic and a backward branch.
            unsafe {
                asm!(
                    "2:",
                    x16!(concat!($ins, " {x}, {y}")),
                    "dec {n}",
                    "jnz 2b",
                    x = inout(xmm_reg) x,
                    y = in(xmm_reg) y,
                    n = inout(reg) n,
                    options(nostack, nomem)
                );
            }
            let _ = n;
            x
        }};
    }

    /// Eight independent chains of `$ins aN, y` on xmm registers.
    macro_rules! fp_stream {
        ($ins:literal, $t:ty, $x:expr, $y:expr, $n:expr) => {{
            let (mut a0, mut a1, mut a2, mut a3): ($t, $t, $t, $t) = ($x, $x, $x, $x);
            let (mut a4, mut a5, mut a6, mut a7): ($t, $t, $t, $t) = ($x, $x, $x, $x);
            let y: $t = $y;
            let mut n: u64 = $n;
            // SAFETY: register-only arithmetic and a backward branch.
            unsafe {
                asm!(
                    "2:",
                    x8x2!($ins, ""),
                    "dec {n}",
                    "jnz 2b",
                    a0 = inout(xmm_reg) a0, a1 = inout(xmm_reg) a1, a2 = inout(xmm_reg) a2,
                    a3 = inout(xmm_reg) a3, a4 = inout(xmm_reg) a4, a5 = inout(xmm_reg) a5,
                    a6 = inout(xmm_reg) a6, a7 = inout(xmm_reg) a7,
                    y = in(xmm_reg) y,
                    n = inout(reg) n,
                    options(nostack, nomem)
                );
            }
            let _ = n;
            std::hint::black_box((a1, a2, a3, a4, a5, a6, a7));
            a0
        }};
    }

    /// 32-bit division chain: x = (2^32−1) / x, from x = 65,535 (the
    /// quotient alternates between 65,537 and 65,535).
    fn div32_chain(n: u64) -> u64 {
        let mut x: u64 = 65_535;
        let mut n = n;
        // SAFETY: register-only arithmetic; the divisor is never 0 (it
        // alternates between 65,535 and 65,537) and the quotient fits.
        unsafe {
            asm!(
                "2:",
                x16!("mov eax, {k:e}\nxor edx, edx\ndiv ecx\nmov ecx, eax"),
                "dec {n}",
                "jnz 2b",
                k = in(reg) u64::from(u32::MAX),
                n = inout(reg) n,
                inout("rcx") x,
                out("rax") _,
                out("rdx") _,
                options(nostack, nomem)
            );
        }
        let _ = n;
        x
    }

    /// 64-bit division chain: x = (2^64−1) / x, from x = 2^32−1.
    fn div64_chain(n: u64) -> u64 {
        let mut x: u64 = u64::from(u32::MAX);
        let mut n = n;
        // SAFETY: as div32_chain; x alternates between 2^32−1 and 2^32+1.
        unsafe {
            asm!(
                "2:",
                x16!("mov rax, {k}\nxor edx, edx\ndiv rcx\nmov rcx, rax"),
                "dec {n}",
                "jnz 2b",
                k = in(reg) u64::MAX,
                n = inout(reg) n,
                inout("rcx") x,
                out("rax") _,
                out("rdx") _,
                options(nostack, nomem)
            );
        }
        let _ = n;
        x
    }

    /// 32-bit divisions of the same operands, none waiting for another.
    fn div32_stream(n: u64) -> u64 {
        let mut n = n;
        let q: u64;
        // SAFETY: register-only arithmetic; divisor 65,535.
        unsafe {
            asm!(
                "2:",
                x16!("mov eax, {k:e}\nxor edx, edx\ndiv {d:e}"),
                "dec {n}",
                "jnz 2b",
                k = in(reg) u64::from(u32::MAX),
                d = in(reg) 65_535u64,
                n = inout(reg) n,
                out("rax") q,
                out("rdx") _,
                options(nostack, nomem)
            );
        }
        let _ = n;
        q
    }

    /// 64-bit divisions of the same operands, none waiting for another.
    fn div64_stream(n: u64) -> u64 {
        let mut n = n;
        let q: u64;
        // SAFETY: register-only arithmetic; divisor 2^32−1.
        unsafe {
            asm!(
                "2:",
                x16!("mov rax, {k}\nxor edx, edx\ndiv {d}"),
                "dec {n}",
                "jnz 2b",
                k = in(reg) u64::MAX,
                d = in(reg) u64::from(u32::MAX),
                n = inout(reg) n,
                out("rax") q,
                out("rdx") _,
                options(nostack, nomem)
            );
        }
        let _ = n;
        q
    }

    pub(super) fn run(ty: Ty, op: Op, dependent: bool, rounds: u64) -> u64 {
        // A zero count would run 2^64 rounds (dec before the test).
        let n = rounds.max(1);
        match (ty, op, dependent) {
            (Ty::I32, Op::Add, true) => int_chain!("add", ":e", 0, 1u64, n),
            (Ty::I32, Op::Add, false) => int_stream!("add", ":e", 0, 1u64, n),
            (Ty::I64, Op::Add, true) => int_chain!("add", "", 0, 1u64, n),
            (Ty::I64, Op::Add, false) => int_stream!("add", "", 0, 1u64, n),
            (Ty::I32, Op::Mul, true) => int_chain!("imul", ":e", 1, 3u64, n),
            (Ty::I32, Op::Mul, false) => int_stream!("imul", ":e", 1, 3u64, n),
            (Ty::I64, Op::Mul, true) => int_chain!("imul", "", 1, 3u64, n),
            (Ty::I64, Op::Mul, false) => int_stream!("imul", "", 1, 3u64, n),
            (Ty::I32, Op::Div, true) => div32_chain(n),
            (Ty::I32, Op::Div, false) => div32_stream(n),
            (Ty::I64, Op::Div, true) => div64_chain(n),
            (Ty::I64, Op::Div, false) => div64_stream(n),
            (Ty::F32, Op::Add, true) => fp_chain!("addss", f32, 0.0, 1.0, n).to_bits().into(),
            (Ty::F32, Op::Add, false) => fp_stream!("addss", f32, 0.0, 1.0, n).to_bits().into(),
            (Ty::F32, Op::Mul, true) => fp_chain!("mulss", f32, 1.5, 1.0, n).to_bits().into(),
            (Ty::F32, Op::Mul, false) => fp_stream!("mulss", f32, 1.5, 1.0, n).to_bits().into(),
            (Ty::F32, Op::Div, true) => fp_chain!("divss", f32, 1.5, 1.0, n).to_bits().into(),
            (Ty::F32, Op::Div, false) => fp_stream!("divss", f32, 1.5, 1.0, n).to_bits().into(),
            (Ty::F64, Op::Add, true) => fp_chain!("addsd", f64, 0.0, 1.0, n).to_bits(),
            (Ty::F64, Op::Add, false) => fp_stream!("addsd", f64, 0.0, 1.0, n).to_bits(),
            (Ty::F64, Op::Mul, true) => fp_chain!("mulsd", f64, 1.5, 1.0, n).to_bits(),
            (Ty::F64, Op::Mul, false) => fp_stream!("mulsd", f64, 1.5, 1.0, n).to_bits(),
            (Ty::F64, Op::Div, true) => fp_chain!("divsd", f64, 1.5, 1.0, n).to_bits(),
            (Ty::F64, Op::Div, false) => fp_stream!("divsd", f64, 1.5, 1.0, n).to_bits(),
        }
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    #[test]
    fn the_stack_chain_sums_its_step_indices() {
        assert_eq!(stack_chain(1), 0);
        assert_eq!(stack_chain(0), 0);
        assert_eq!(stack_chain(1_000), 999 * 1_000 / 2);
    }

    #[test]
    fn chains_compute_what_they_say() {
        // 3 rounds of 16 dependent adds of 1.
        assert_eq!(run(Ty::I64, Op::Add, true, 3), Some(48));
        assert_eq!(run(Ty::I32, Op::Add, true, 3), Some(48));
        // Eight chains of two adds per round each.
        assert_eq!(run(Ty::I64, Op::Add, false, 3), Some(6));
        assert_eq!(run(Ty::I64, Op::Mul, true, 1), Some(3u64.pow(16)));
        assert_eq!(
            run(Ty::I32, Op::Mul, true, 1),
            Some(u64::from(3u32.wrapping_pow(16)))
        );
        // 16 divisions: the quotient alternates and ends where it began.
        assert_eq!(run(Ty::I32, Op::Div, true, 1), Some(65_535));
        assert_eq!(run(Ty::I64, Op::Div, true, 1), Some(u64::from(u32::MAX)));
        assert_eq!(run(Ty::I32, Op::Div, false, 2), Some(65_537));
        assert_eq!(
            run(Ty::I64, Op::Div, false, 2),
            Some(u64::from(u32::MAX) + 2)
        );
        assert_eq!(run(Ty::F64, Op::Add, true, 2), Some(32.0f64.to_bits()));
        assert_eq!(
            run(Ty::F32, Op::Add, false, 2),
            Some(u64::from(4.0f32.to_bits()))
        );
        assert_eq!(run(Ty::F64, Op::Div, true, 5), Some(1.5f64.to_bits()));
        assert_eq!(
            run(Ty::F32, Op::Mul, false, 5),
            Some(u64::from(1.5f32.to_bits()))
        );
    }

    #[test]
    fn zero_rounds_run_one() {
        assert_eq!(run(Ty::I64, Op::Add, true, 0), Some(16));
    }
}
