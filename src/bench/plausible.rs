//! Plausibility checks: a figure outside physical bounds is flagged
//! (`Figure::implausible` holds why), stays in the JSON with its samples,
//! and is left out of every table, plot, metric and baseline ratio; the
//! human report says "implausible: … excluded" in its place.
//!
//! The checks:
//! - a sample too short to be timed (zero, negative, not finite, or below
//!   the timer's resolution for the whole sample, i.e. unless batched) —
//!   counted by the harness, flagged when the figure is built;
//! - a value that is not finite;
//! - a duration (ns), frequency or bandwidth whose median is zero or
//!   negative, or a negative size;
//! - a bandwidth on N threads above N × the fastest one-thread sample ×
//!   1.5 ([`bandwidth_bound`]): threads sharing a memory system cannot
//!   beat N independent copies of one thread by half again;
//! - a STREAM copy rate above twice the read rate of the same run on the
//!   same threads ([`copy_bound`]): copy counts a byte read and a byte
//!   written, and writing is never faster than reading twice over;
//! - a per-operation latency below the timer's resolution is only
//!   possible batched: the harness batches every sample to at least 100
//!   resolution steps, and counts a sample that was not.

use super::figure::{Figure, Value};

/// Headroom of the all-threads bound over N × one thread.
pub const THREAD_SCALING_SLACK: f64 = 1.5;

/// Flags `f` when a value is impossible whatever the machine.
pub fn check(f: &mut Figure) {
    let n = f.samples.iter().filter(|v| !v.is_finite()).count();
    if n > 0 {
        f.flag(format!("{n} samples are not finite numbers"));
        return;
    }
    let Some(s) = f.value.summary() else { return };
    let median = s.median;
    let (what, bad) = match &f.value {
        Value::Ns(_) => ("a duration", median <= 0.0),
        Value::GbPerS(_) => ("a bandwidth", median <= 0.0 || s.min <= 0.0),
        Value::Mhz(_) => ("a frequency", median <= 0.0),
        Value::Bytes(_) => ("a size", s.min < 0.0),
        Value::Unavailable(_) => return,
    };
    if bad || !median.is_finite() {
        let shown = super::format::format_value(&f.value, median);
        f.flag(format!(
            "{what} of {shown} (median) is not physically possible: below what this harness can resolve"
        ));
    }
}

/// The largest plausible bandwidth on `threads` threads, from the
/// one-thread figure: its fastest sample (noise from other tasks only ever
/// slows a sample down, so the fastest is the closest to what one thread
/// can do) × threads × [`THREAD_SCALING_SLACK`]. None when the one-thread
/// figure is unavailable or implausible itself.
pub fn thread_bound(single: &Figure, threads: usize) -> Option<f64> {
    let one = single.measured()?.max;
    (one > 0.0 && one.is_finite()).then(|| one * threads.max(1) as f64 * THREAD_SCALING_SLACK)
}

/// [`bandwidth_bound`] of `all`, measured with `threads` threads, by its
/// one-thread figure `single` among `figures`, where it has one.
pub fn bound_by_one_thread(all: &mut Figure, figures: &[Figure], single: &str, threads: usize) {
    if threads > 1
        && let Some(one) = figures.iter().find(|f| f.id == single)
    {
        bandwidth_bound(all, one, threads);
    }
}

/// Flags the `threads`-thread bandwidth figure `all` when any of its
/// samples exceeds [`thread_bound`] of the one-thread figure `single`.
pub fn bandwidth_bound(all: &mut Figure, single: &Figure, threads: usize) {
    let Some(bound) = thread_bound(single, threads) else {
        return;
    };
    let Some(s) = all.value.summary() else { return };
    if s.max > bound {
        let over = all.samples.iter().filter(|v| **v > bound).count();
        all.flag(format!(
            "{over} of {} samples (up to {:.2} GB/s) exceed {threads} threads × the fastest one-thread sample ({:.2} GB/s) × {THREAD_SCALING_SLACK} = {bound:.2} GB/s",
            all.samples.len(),
            s.max,
            bound / threads.max(1) as f64 / THREAD_SCALING_SLACK,
        ));
    }
}

/// Headroom of the copy bound over the read rate.
pub const COPY_OVER_READ: f64 = 2.0;

/// Flags the STREAM copy figure `copy` when any of its samples exceeds
/// [`COPY_OVER_READ`] × the fastest sample of the read figure `read` of
/// the same run and thread count. Nothing to compare with when the read
/// figure is unavailable or implausible itself.
pub fn copy_bound(copy: &mut Figure, read: &Figure) {
    let Some(r) = read.measured() else { return };
    let bound = r.max * COPY_OVER_READ;
    if !(bound > 0.0 && bound.is_finite()) {
        return;
    }
    let Some(s) = copy.value.summary() else {
        return;
    };
    if s.max > bound {
        let over = copy.samples.iter().filter(|v| **v > bound).count();
        copy.flag(format!(
            "{over} of {} samples (up to {:.2} GB/s) exceed {COPY_OVER_READ} × the fastest read sample of this run ({:.2} GB/s) = {bound:.2} GB/s",
            copy.samples.len(),
            s.max,
            r.max,
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::harness::Samples;

    fn samples(per_op_ns: &[f64], too_short: usize) -> Samples {
        Samples {
            per_op_ns: per_op_ns.to_vec(),
            iters_per_sample: 10,
            warmup_discarded: 2,
            clamped: 0,
            too_short,
        }
    }

    /// GB/s figure with these values (1 byte per op, so ns = 1/GB/s).
    fn bw(id: &str, gbps: &[f64]) -> Figure {
        let ns: Vec<f64> = gbps.iter().map(|g| 1.0 / g).collect();
        Figure::bandwidth(id, id, "GB/s", samples(&ns, 0), 1.0)
    }

    #[test]
    fn all_threads_above_the_bound_is_flagged() {
        // The figures of the report that showed the bug: 27 GB/s on one
        // thread, 210 GB/s median (p95 23,307) on two.
        let single = bw("membw.read.1", &[26.0, 27.0, 28.0]);
        let mut all = bw("membw.read.all", &[150.0, 210.0, 23_307.0]);
        bandwidth_bound(&mut all, &single, 2);
        let why = all.implausible.as_deref().expect("flagged");
        assert!(why.contains("3 of 3 samples"), "{why}");
        assert!(why.contains("84.00 GB/s"), "2 × 28 × 1.5: {why}");
        assert_eq!(all.median(), None, "kept out of tables and plots");
        assert!(all.value.summary().is_some(), "kept in the JSON");
        assert_eq!(all.samples.len(), 3);
    }

    #[test]
    fn one_sample_above_the_bound_is_enough() {
        let single = bw("membw.read.1", &[20.0, 27.0]);
        let mut all = bw("membw.read.all", &[30.0, 31.0, 81.5]);
        bandwidth_bound(&mut all, &single, 2);
        assert!(all.implausible.as_deref().unwrap().starts_with("1 of 3"));
    }

    #[test]
    fn all_threads_within_the_bound_stays() {
        let single = bw("membw.read.1", &[20.0, 27.0]);
        let mut all = bw("membw.read.all", &[30.0, 31.0, 81.0]);
        bandwidth_bound(&mut all, &single, 2);
        assert_eq!(all.implausible, None);
        assert_eq!(all.median(), Some(31.0));
    }

    #[test]
    fn no_bound_without_a_plausible_single_thread_figure() {
        let mut single = bw("membw.read.1", &[27.0]);
        single.flag("test");
        let mut all = bw("membw.read.all", &[1e6]);
        bandwidth_bound(&mut all, &single, 2);
        assert_eq!(all.implausible, None, "nothing to compare with");
        assert_eq!(thread_bound(&single, 2), None);
    }

    #[test]
    fn stream_copy_above_twice_read_is_flagged() {
        let read = bw("stream.read.1", &[9.0, 10.0, 10.5]);
        let mut copy = bw("stream.copy.1", &[12.0, 14.0, 21.5]);
        copy_bound(&mut copy, &read);
        let why = copy.implausible.as_deref().expect("flagged");
        assert!(why.starts_with("1 of 3 samples"), "{why}");
        assert!(why.contains("21.00 GB/s"), "2 × 10.5: {why}");
        assert_eq!(copy.median(), None, "kept out of tables and plots");
    }

    #[test]
    fn stream_copy_within_twice_read_stays() {
        let read = bw("stream.read.1", &[9.0, 10.0, 10.5]);
        let mut copy = bw("stream.copy.1", &[12.0, 14.0, 20.9]);
        copy_bound(&mut copy, &read);
        assert_eq!(copy.implausible, None);
        let mut bad_read = bw("stream.read.1", &[1.0]);
        bad_read.flag("test");
        let mut copy = bw("stream.copy.1", &[1e6]);
        copy_bound(&mut copy, &bad_read);
        assert_eq!(copy.implausible, None, "nothing to compare with");
    }

    #[test]
    fn stream_all_threads_bound_uses_the_same_rule() {
        let one = bw("stream.triad.1", &[10.0, 11.0]);
        let mut all = bw("stream.triad.all", &[20.0, 34.0]);
        bandwidth_bound(&mut all, &one, 2);
        assert!(all.implausible.is_some(), "34 > 2 × 11 × 1.5 = 33");
        let mut all = bw("stream.triad.all", &[20.0, 32.0]);
        bandwidth_bound(&mut all, &one, 2);
        assert_eq!(all.implausible, None);
    }

    #[test]
    fn batched_latency_below_the_resolution_stays_unbatched_does_not() {
        // 1000 operations of 0.3 ns in a sample of 300 ns, on a clock of
        // 29 ns resolution: timed as a batch, plausible.
        let mut f = Figure::latency("ops.x", "x", "d", samples(&[0.3, 0.31, 0.3], 0));
        check(&mut f);
        assert_eq!(f.implausible, None);
        assert!(crate::bench::harness::sample_is_timed(300.0, 29.0));
        // The same per-op value from samples the harness could not time.
        let mut f = Figure::latency("ops.x", "x", "d", samples(&[0.3, 0.31, 0.3], 3));
        check(&mut f);
        assert!(f.implausible.is_some());
    }

    #[test]
    fn zero_and_negative_durations_are_flagged() {
        let f = Figure::bandwidth("m.r", "r", "d", samples(&[1.0, 0.0, -3.0], 0), 1.0);
        let why = f.implausible.as_deref().expect("flagged");
        assert!(why.starts_with("2 of 3 samples"), "{why}");
        assert_eq!(f.samples, vec![1.0], "only the timed sample has a value");
        let mut f = Figure::latency_values("c.x", "x", "d", vec![-5.0, -4.0, 3.0]);
        check(&mut f);
        assert!(f.implausible.as_deref().unwrap().contains("-4.00 ns"));
        let mut f = Figure::latency_values("c.x", "x", "d", vec![0.0, 0.0, 0.0]);
        check(&mut f);
        assert!(f.implausible.is_some());
    }

    #[test]
    fn samples_below_the_timer_resolution_are_flagged() {
        // The harness counts them (not batched enough to be timed).
        let f = Figure::latency("s.x", "x", "d", samples(&[3.0, 3.1, 3.2], 2));
        let why = f.implausible.as_deref().expect("flagged");
        assert!(why.starts_with("2 of 3 samples"), "{why}");
        assert_eq!(f.median(), None);
        // The harness's rule: a batch is timed as a whole.
        use crate::bench::harness::sample_is_timed;
        assert!(sample_is_timed(30.0, 29.0));
        assert!(!sample_is_timed(20.0, 29.0));
        assert!(!sample_is_timed(0.0, 0.0));
        assert!(!sample_is_timed(-1.0, 0.0));
        assert!(!sample_is_timed(f64::NAN, 1.0));
    }

    #[test]
    fn ordinary_figures_pass() {
        let mut f = Figure::latency("s.x", "x", "d", samples(&[120.0, 121.0, 900.0], 0));
        check(&mut f);
        assert_eq!(f.implausible, None);
        let mut f = Figure::mhz("t.m", "m", "d", vec![2100.0, 2101.0]);
        check(&mut f);
        assert_eq!(f.implausible, None);
        let mut f = Figure::bytes("f.b", "b", "d", vec![0.0]);
        check(&mut f);
        assert_eq!(f.implausible, None, "nothing cached is a real answer");
        let mut f = Figure::unavailable("a.b", "b", "d", "no TSC");
        check(&mut f);
        assert_eq!(f.implausible, None);
    }

    #[test]
    fn non_finite_and_non_positive_values_are_flagged() {
        let mut f = Figure::mhz("t.m", "m", "d", vec![0.0, 0.0, 1.0]);
        check(&mut f);
        assert!(f.implausible.is_some());
        let mut f = Figure::bytes("f.b", "b", "d", vec![-4096.0]);
        check(&mut f);
        assert!(f.implausible.is_some());
        let mut f = Figure::latency_values("c.x", "x", "d", vec![1.0, 2.0]);
        f.samples.push(f64::INFINITY);
        check(&mut f);
        assert!(f.implausible.as_deref().unwrap().contains("not finite"));
    }
}
