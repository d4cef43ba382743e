//! The measuring harness: a calibrated timer, the empty-loop overhead,
//! adaptive batch sizes under a fixed time budget, warm-up samples thrown
//! away, every sample kept.
//!
//! A benchmark hands the harness a closure that runs its operation `iters`
//! times and returns the elapsed timer ticks of the part that counts (setup
//! outside the timed part is allowed). The harness doubles `iters` until a
//! sample lasts at least [`Harness::target_sample_ns`] — at least 100 timer
//! reads long, so the timer costs under 1% of a sample — then takes samples
//! until the budget is spent, and returns [`Samples`]: raw per-operation
//! times. [`crate::stats::summarize`] turns them into a summary later; raw
//! samples and summaries are different types.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::sys;

/// Which clock the harness reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimerSource {
    /// `rdtscp; lfence` (x86_64 with the rdtscp flag).
    Rdtscp,
    /// `lfence; rdtsc; lfence`.
    LfenceRdtsc,
    /// `clock_gettime(CLOCK_MONOTONIC)` through `std::time::Instant`.
    Monotonic,
}

impl TimerSource {
    pub fn describe(self) -> &'static str {
        match self {
            TimerSource::Rdtscp => "rdtscp+lfence",
            TimerSource::LfenceRdtsc => "lfence+rdtsc+lfence",
            TimerSource::Monotonic => "clock_gettime(CLOCK_MONOTONIC)",
        }
    }
}

/// A calibrated clock: ticks and their length in ns.
#[derive(Debug, Clone, Copy)]
pub struct Timer {
    pub source: TimerSource,
    /// Nanoseconds per tick (1.0 for the monotonic clock).
    pub ns_per_tick: f64,
    epoch: Instant,
}

impl Timer {
    /// The monotonic clock, no calibration needed.
    pub fn monotonic() -> Timer {
        Timer {
            source: TimerSource::Monotonic,
            ns_per_tick: 1.0,
            epoch: Instant::now(),
        }
    }

    /// A timer on `source`, calibrated against CLOCK_MONOTONIC over
    /// `span`. Falls back to the monotonic clock where the TSC is absent.
    pub fn calibrated(source: TimerSource, span: Duration) -> Timer {
        let mut t = Timer {
            source,
            ns_per_tick: 1.0,
            epoch: Instant::now(),
        };
        if source == TimerSource::Monotonic {
            return t;
        }
        let (i0, c0) = (Instant::now(), t.now());
        while i0.elapsed() < span {
            std::hint::spin_loop();
        }
        let (c1, ns) = (t.now(), i0.elapsed().as_nanos() as f64);
        let ticks = c1.saturating_sub(c0) as f64;
        if ticks > 0.0 && ns > 0.0 {
            t.ns_per_tick = ns / ticks;
        } else {
            t = Timer::monotonic();
        }
        t
    }

    /// The best source on this machine.
    pub fn best_source() -> TimerSource {
        if cfg!(target_arch = "x86_64") {
            let text = crate::procfs::ProcRoot::default()
                .read("cpuinfo")
                .unwrap_or_default();
            let has = |f: &str| crate::procfs::cpuinfo::has_flag(&text, f);
            if has("rdtscp") {
                TimerSource::Rdtscp
            } else if has("tsc") {
                TimerSource::LfenceRdtsc
            } else {
                TimerSource::Monotonic
            }
        } else {
            TimerSource::Monotonic
        }
    }

    /// Reads the clock, in ticks.
    #[inline(always)]
    pub fn now(&self) -> u64 {
        match self.source {
            #[cfg(target_arch = "x86_64")]
            TimerSource::Rdtscp => sys::cpu::rdtscp(),
            #[cfg(target_arch = "x86_64")]
            TimerSource::LfenceRdtsc => sys::cpu::lfence_rdtsc(),
            _ => u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX),
        }
    }

    /// Ticks to nanoseconds.
    pub fn ns(&self, ticks: u64) -> f64 {
        ticks as f64 * self.ns_per_tick
    }

    /// Nanoseconds since `start` (a value of [`Timer::now`]).
    #[inline(always)]
    pub fn ns_since(&self, start: u64) -> f64 {
        self.ns(self.now().saturating_sub(start))
    }

    /// The tick rate in Hz.
    pub fn hz(&self) -> f64 {
        1e9 / self.ns_per_tick
    }
}

/// What the harness learnt about its own costs before measuring.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Calibration {
    pub timer_source: TimerSource,
    /// The timer's tick rate (the TSC frequency), Hz.
    pub timer_hz: f64,
    /// Median cost of one clock read, ns.
    pub timer_overhead_ns: f64,
    /// Smallest non-zero step between two reads, ns.
    pub timer_resolution_ns: f64,
    /// Median cost of one iteration of an empty counted loop, ns.
    pub loop_overhead_ns: f64,
}

/// Per-operation times of one measurement, before any summary.
#[derive(Debug, Clone, PartialEq)]
pub struct Samples {
    /// One value per kept sample: ns per operation, loop overhead removed.
    pub per_op_ns: Vec<f64>,
    pub iters_per_sample: u64,
    pub warmup_discarded: usize,
    /// Samples whose value went below zero once the loop overhead was
    /// taken out (kept, clamped at zero, and counted here).
    pub clamped: usize,
    /// Kept samples whose measured span was zero, negative, not finite or
    /// below the timer's resolution: too short to have been timed, so the
    /// figure built from them is implausible.
    pub too_short: usize,
}

/// How long and how many samples a measurement may take.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Time for one figure (calibration, warm-up and samples).
    pub per_figure: Duration,
    pub warmup_samples: usize,
    pub min_samples: usize,
    pub max_samples: usize,
}

impl Budget {
    pub fn new(per_figure: Duration) -> Budget {
        Budget {
            per_figure,
            warmup_samples: 2,
            min_samples: 5,
            max_samples: 2000,
        }
    }
}

/// The harness a benchmark measures through.
#[derive(Debug, Clone)]
pub struct Harness {
    pub timer: Timer,
    pub calibration: Calibration,
    pub budget: Budget,
}

/// Error type for closures that cannot fail.
pub type Never = std::convert::Infallible;

impl Harness {
    /// Calibrates the timer (over `span`) and the loop overhead.
    pub fn calibrate(source: TimerSource, span: Duration, budget: Budget) -> Harness {
        let timer = Timer::calibrated(source, span);
        let (overhead, resolution) = timer_cost(&timer, 20_000);
        let mut h = Harness {
            timer,
            calibration: Calibration {
                timer_source: timer.source,
                timer_hz: timer.hz(),
                timer_overhead_ns: overhead,
                timer_resolution_ns: resolution,
                loop_overhead_ns: 0.0,
            },
            budget,
        };
        // The empty loop: one black_box per iteration, as in the
        // benchmarks' own loops, so what is subtracted is the loop itself.
        let loop_ns = h
            .measure_raw::<Never>(&mut |iters, t| {
                let s = t.now();
                for i in 0..iters {
                    std::hint::black_box(i);
                }
                Ok(t.ns_since(s))
            })
            .map(|s| crate::stats::summarize(&s.per_op_ns).map_or(0.0, |s| s.median))
            .unwrap_or(0.0);
        h.calibration.loop_overhead_ns = loop_ns;
        h
    }

    /// Target length of one sample: 1/40 of the budget, and at least 100
    /// timer reads and 100 resolution steps long.
    pub fn target_sample_ns(&self) -> f64 {
        let from_budget = self.budget.per_figure.as_nanos() as f64 / 40.0;
        let from_timer = 100.0
            * self
                .calibration
                .timer_overhead_ns
                .max(self.calibration.timer_resolution_ns);
        from_budget.max(from_timer).max(1_000.0)
    }

    /// Measures `op` (which runs `iters` operations and returns the ns
    /// they took), subtracting the empty-loop overhead per operation.
    pub fn measure<E>(
        &self,
        op: &mut dyn FnMut(u64, &Timer) -> Result<f64, E>,
    ) -> Result<Samples, E> {
        let mut s = self.measure_raw(op)?;
        let overhead = self.calibration.loop_overhead_ns;
        for v in &mut s.per_op_ns {
            *v -= overhead;
            if *v < 0.0 {
                *v = 0.0;
                s.clamped += 1;
            }
        }
        Ok(s)
    }

    /// Measures an operation whose cost dwarfs any loop (a fork, a file
    /// read): one call per iteration, no overhead subtracted.
    pub fn measure_each<E>(
        &self,
        op: &mut dyn FnMut(&Timer) -> Result<f64, E>,
    ) -> Result<Samples, E> {
        self.measure_raw(&mut |iters, t| {
            let mut ns = 0.0;
            for _ in 0..iters {
                ns += op(t)?;
            }
            Ok(ns)
        })
    }

    /// [`Harness::measure_raw`] of an operation that cannot fail.
    pub fn sample(&self, op: &mut dyn FnMut(u64, &Timer) -> f64) -> Samples {
        self.measure_raw::<std::convert::Infallible>(&mut |iters, t| Ok(op(iters, t)))
            .unwrap_or_else(|never| match never {})
    }

    /// The sampling loop without overhead subtraction.
    pub fn measure_raw<E>(
        &self,
        op: &mut dyn FnMut(u64, &Timer) -> Result<f64, E>,
    ) -> Result<Samples, E> {
        let start = Instant::now();
        let budget = self.budget.per_figure;
        let target = self.target_sample_ns();
        // Grow the batch until one sample reaches the target length (the
        // growth runs double as warm-up).
        let mut iters: u64 = 1;
        loop {
            let ns = op(iters, &self.timer)?;
            if ns >= target || iters >= 1 << 40 || start.elapsed() > budget / 2 {
                break;
            }
            let factor = if ns > 0.0 {
                (target / ns).clamp(1.5, 64.0)
            } else {
                64.0
            };
            iters = ((iters as f64 * factor).ceil() as u64).max(iters + 1);
        }
        let mut per_op = Vec::new();
        let mut too_short = 0usize;
        let resolution = self.calibration.timer_resolution_ns;
        let mut taken = 0usize;
        let warmup = self.budget.warmup_samples;
        while taken < warmup + self.budget.max_samples {
            let ns = op(iters, &self.timer)?;
            taken += 1;
            if taken > warmup {
                if !sample_is_timed(ns, resolution) {
                    too_short += 1;
                }
                per_op.push(ns / iters as f64);
            }
            let kept = per_op.len();
            if kept >= self.budget.min_samples && start.elapsed() >= budget {
                break;
            }
            // Past ten budgets even the minimum gives way (a very slow
            // operation), as long as one sample is kept.
            if kept >= 1 && start.elapsed() >= budget * 10 {
                break;
            }
        }
        Ok(Samples {
            per_op_ns: per_op,
            iters_per_sample: iters,
            warmup_discarded: warmup,
            clamped: 0,
            too_short,
        })
    }
}

/// Whether a sample that lasted `ns` was long enough to be timed by a
/// clock of resolution `resolution_ns`: positive, finite, and at least one
/// resolution step (a batch of cheap operations counts as one sample).
pub fn sample_is_timed(ns: f64, resolution_ns: f64) -> bool {
    ns.is_finite() && ns > 0.0 && ns >= resolution_ns
}

/// Median cost of one read of `timer` and its smallest non-zero step, ns.
pub fn timer_cost(timer: &Timer, reads: usize) -> (f64, f64) {
    let reads = reads.max(2);
    let mut deltas = Vec::with_capacity(reads);
    let mut prev = timer.now();
    for _ in 0..reads {
        let now = timer.now();
        deltas.push(now.saturating_sub(prev));
        prev = now;
    }
    let min_step = deltas.iter().copied().filter(|d| *d > 0).min().unwrap_or(1);
    let ns: Vec<f64> = deltas.iter().map(|d| timer.ns(*d)).collect();
    let median = crate::stats::summarize(&ns).map_or(0.0, |s| s.median);
    (median, timer.ns(min_step))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> Harness {
        Harness::calibrate(
            Timer::best_source(),
            Duration::from_millis(2),
            Budget::new(Duration::from_millis(5)),
        )
    }

    #[test]
    fn calibration_is_positive() {
        let h = tiny();
        assert!(h.calibration.timer_hz > 0.0);
        assert!(h.calibration.timer_overhead_ns >= 0.0);
        assert!(h.calibration.timer_resolution_ns > 0.0);
        assert!(h.calibration.loop_overhead_ns >= 0.0);
    }

    #[test]
    fn keeps_at_least_min_samples_and_discards_warmup() {
        let h = tiny();
        let mut calls = 0u64;
        let s = h
            .measure::<Never>(&mut |iters, t| {
                calls += 1;
                let s = t.now();
                for i in 0..iters {
                    std::hint::black_box(i * 3);
                }
                Ok(t.ns_since(s))
            })
            .unwrap();
        assert!(s.per_op_ns.len() >= h.budget.min_samples);
        assert!(s.per_op_ns.len() <= h.budget.max_samples);
        assert_eq!(s.warmup_discarded, 2);
        assert!(calls as usize >= s.per_op_ns.len() + 2);
        assert!(s.iters_per_sample >= 1);
        assert!(s.per_op_ns.iter().all(|v| *v >= 0.0 && v.is_finite()));
    }

    #[test]
    fn batch_grows_for_cheap_operations() {
        let h = tiny();
        let s = h
            .measure::<Never>(&mut |iters, t| {
                let s = t.now();
                for i in 0..iters {
                    std::hint::black_box(i);
                }
                Ok(t.ns_since(s))
            })
            .unwrap();
        assert!(s.iters_per_sample > 1);
    }

    #[test]
    fn errors_stop_the_measurement() {
        let h = tiny();
        let r = h.measure_each(&mut |_t| Err::<f64, _>("boom"));
        assert_eq!(r, Err("boom"));
    }

    #[test]
    fn negative_values_are_clamped_and_counted() {
        let h = Harness {
            calibration: Calibration {
                loop_overhead_ns: 1e9,
                ..tiny().calibration
            },
            ..tiny()
        };
        let s = h.measure::<Never>(&mut |_iters, _t| Ok(0.0)).unwrap();
        assert_eq!(s.clamped, s.per_op_ns.len());
        assert!(s.per_op_ns.iter().all(|v| *v == 0.0));
    }
}
