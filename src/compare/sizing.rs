//! How many runs a comparison takes without `--runs`: enough that a
//! difference of [`DETECT`] in wall time would be found, and no more.
//!
//! A pilot of `--min-runs` rounds measures how much each command's wall
//! time spreads from run to run (a standard deviation from the MAD and
//! from the 10th to 90th percentiles, whichever is larger, over the
//! median, with a margin for how roughly a few runs know it);
//! the rounds needed follow from the power of the
//! Mann–Whitney test at the level the family of figures needs (alpha over
//! the figures that vary, Bonferroni), see
//! [`stats::runs_for_power`]. The estimate is made again at checkpoints
//! (every doubling of the rounds), as the spread is known better, and
//! the comparison stops early when the wall-time difference of every
//! command is already beyond doubt (adjusted p below alpha / 100: the
//! interim looks spend at most a few hundredths of alpha). It never takes
//! more than `--max-runs` rounds, nor longer than [`BUDGET`]; when that
//! is too few, the report says which difference could go unseen.

use std::time::Duration;

use crate::stats;

/// The difference in wall time a comparison is sized to find.
pub const DETECT: f64 = 0.05;
/// The chance of finding it.
pub const POWER: f64 = 0.9;
/// The measured time a comparison may take without `--runs`.
pub const BUDGET: Duration = Duration::from_secs(60);
/// The most rounds without `--runs` or `--max-runs`.
pub const MAX_ROUNDS: u32 = 10_000;

/// What a checkpoint decided.
#[derive(Debug, Clone, PartialEq)]
pub struct Sizing {
    /// Rounds to take in all.
    pub rounds: u32,
    /// The rounds a difference of [`DETECT`] needs, when more than
    /// `rounds` (the limit or the budget stopped short).
    pub short_of: Option<u32>,
    /// The difference in wall time `rounds` rounds find with [`POWER`].
    pub detectable: f64,
    /// Stopped early: every wall-time difference is already clear.
    pub clear: bool,
}

/// The limits a checkpoint works within.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub alpha: f64,
    pub min_rounds: u32,
    pub max_rounds: u32,
    pub budget: Duration,
    /// The tests the report will make (figures that vary, times the
    /// commands compared with the reference), at least 1.
    pub family: usize,
    /// `--reference` (0-based), else the fastest by median wall time.
    pub reference: Option<usize>,
    /// `--threshold`: a difference is called one only when its interval
    /// lies beyond it, so the runs must find [`DETECT`] less this.
    pub threshold: f64,
}

/// The shift beyond the threshold the runs must find: [`DETECT`] less
/// `threshold`, at least a fifth of [`DETECT`].
fn margin(threshold: f64) -> f64 {
    (DETECT - threshold).max(DETECT / 5.0)
}

/// The relative spread of `walls`: the larger of 1.4826 · MAD and
/// (p90 − p10) / 2.563 (both a standard deviation for normal data; the
/// second sees the slow tail a loaded machine gives, which the test's
/// power depends on and the MAD ignores), over the median, raised by
/// 1 + 1.5/√n: the spread of a few runs is known only roughly (ten runs
/// underestimate it by a third one time in ten), and too low an estimate
/// stops a comparison before it could find anything.
fn spread(walls: &[f64]) -> Option<f64> {
    let s = stats::summarize(walls)?;
    let mut sorted = walls.to_vec();
    sorted.sort_by(f64::total_cmp);
    let p10 = stats::quantile_sorted(&sorted, 0.10)?;
    let p90 = stats::quantile_sorted(&sorted, 0.90)?;
    let sd = (1.4826 * s.mad).max((p90 - p10) / 2.563);
    let margin = 1.0 + 1.5 / (s.count.max(1) as f64).sqrt();
    (s.median > 0.0).then(|| sd / s.median * margin)
}

/// The decision at a checkpoint, from each command's wall times so far
/// (`done` rounds of each).
pub fn checkpoint(walls: &[Vec<f64>], done: u32, limits: Limits) -> Sizing {
    checkpoint_against(walls, None, done, limits)
}

/// [`checkpoint`], each command compared with its own stored runs
/// (`references[i]` for `walls[i]`, from a baseline) when they are given:
/// their spread counts, and a difference is clear against them.
pub fn checkpoint_against(
    walls: &[Vec<f64>],
    references: Option<&[Vec<f64>]>,
    done: u32,
    limits: Limits,
) -> Sizing {
    let level = limits.alpha / limits.family.max(1) as f64;
    let widest = walls
        .iter()
        .chain(references.unwrap_or_default())
        .filter_map(|w| spread(w))
        .fold(0.0f64, f64::max);
    let margin = margin(limits.threshold);
    let needed = stats::runs_for_power(widest, margin, level, POWER);
    let medians: Vec<f64> = walls
        .iter()
        .map(|w| stats::summarize(w).map_or(f64::INFINITY, |s| s.median))
        .collect();
    let reference = limits.reference.unwrap_or_else(|| {
        (0..medians.len())
            .min_by(|a, b| medians[*a].total_cmp(&medians[*b]))
            .unwrap_or(0)
    });
    let beyond_doubt = |w: &Vec<f64>, r: &Vec<f64>| {
        stats::mann_whitney(w, r)
            .is_some_and(|t| t.p * (limits.family.max(1) as f64) < limits.alpha / 100.0)
    };
    // Clear: every command's wall time differs from its reference's
    // beyond doubt already.
    let clear = match references {
        Some(refs) => {
            !walls.is_empty()
                && walls.len() == refs.len()
                && walls.iter().zip(refs).all(|(w, r)| beyond_doubt(w, r))
        }
        None => {
            walls.len() > 1
                && walls.iter().enumerate().all(|(i, w)| {
                    i == reference || walls.get(reference).is_some_and(|r| beyond_doubt(w, r))
                })
        }
    };
    let cap = cap(walls, limits);
    let rounds = if clear {
        done.max(limits.min_rounds)
    } else {
        needed.clamp(limits.min_rounds, cap.max(limits.min_rounds))
    };
    Sizing {
        rounds,
        short_of: (!clear && needed > rounds).then_some(needed),
        detectable: stats::detectable_shift(widest, rounds, level, POWER) + DETECT - margin,
        clear,
    }
}

/// The most rounds the limits allow: `max_rounds`, and what fits in the
/// budget at the wall times so far; at least `min_rounds`.
pub fn cap(walls: &[Vec<f64>], limits: Limits) -> u32 {
    let per_round_ns: f64 = walls
        .iter()
        .filter_map(|w| stats::summarize(w).map(|s| s.median))
        .filter(|m| m.is_finite())
        .sum();
    let fit = if per_round_ns > 0.0 {
        (limits.budget.as_nanos() as f64 / per_round_ns).floor() as u32
    } else {
        u32::MAX
    };
    limits.max_rounds.min(fit).max(limits.min_rounds)
}

/// Whether `done` rounds is a checkpoint: the end of the pilot, then every
/// doubling.
pub fn is_checkpoint(done: u32, min_rounds: u32) -> bool {
    let first = min_rounds.max(2);
    done >= first && done.is_multiple_of(first) && (done / first).is_power_of_two()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits {
            alpha: 0.05,
            min_rounds: 10,
            max_rounds: MAX_ROUNDS,
            budget: BUDGET,
            family: 10,
            reference: None,
            threshold: 0.01,
        }
    }

    /// `n` wall times around `median` ns spreading by about `cv`.
    fn walls(n: usize, median: f64, cv: f64, seed: u64) -> Vec<f64> {
        let mut rng = stats::Rng::new(seed);
        (0..n)
            .map(|_| {
                let u = rng.unit().clamp(1e-9, 1.0 - 1e-9);
                median * (1.0 + cv * stats::normal_quantile(u))
            })
            .collect()
    }

    #[test]
    fn a_noisier_command_needs_more_runs_and_a_quiet_one_the_minimum_or_more() {
        let quiet = checkpoint(
            &[walls(10, 18e6, 0.01, 1), walls(10, 18e6, 0.01, 2)],
            10,
            limits(),
        );
        let noisy = checkpoint(
            &[walls(10, 18e6, 0.08, 1), walls(10, 18e6, 0.08, 2)],
            10,
            limits(),
        );
        assert!(quiet.rounds >= 10, "{quiet:?}");
        assert!(noisy.rounds > 3 * quiet.rounds, "{quiet:?} {noisy:?}");
        // Some tens of rounds for 8% spread at alpha 0.05 over 10 figures
        // (the spread of ten runs is itself known only roughly).
        assert!((30..=200).contains(&noisy.rounds), "{noisy:?}");
        assert!(noisy.short_of.is_none());
        assert!(noisy.detectable <= DETECT * 1.01, "{noisy:?}");
    }

    #[test]
    fn the_budget_stops_short_and_says_what_could_go_unseen() {
        // One second a run, 8% spread: a hundred rounds would take 200 s.
        let s = checkpoint(
            &[walls(10, 1e9, 0.08, 1), walls(10, 1e9, 0.08, 2)],
            10,
            limits(),
        );
        assert!((28..=30).contains(&s.rounds), "60 s of 2 s rounds: {s:?}");
        assert!(s.short_of.is_some_and(|n| n > s.rounds), "{s:?}");
        assert!(s.detectable > DETECT, "{s:?}");
    }

    #[test]
    fn a_clear_difference_stops_at_the_checkpoint() {
        let s = checkpoint(
            &[walls(20, 10e6, 0.02, 1), walls(20, 20e6, 0.02, 2)],
            20,
            limits(),
        );
        assert!(s.clear, "{s:?}");
        assert_eq!(s.rounds, 20);
    }

    #[test]
    fn against_a_baseline_its_spread_counts_and_a_clear_difference_stops() {
        let now = [walls(10, 18e6, 0.01, 1)];
        let quiet = [walls(10, 18e6, 0.01, 2)];
        let noisy = [walls(10, 18e6, 0.08, 2)];
        let a = checkpoint_against(&now, Some(&quiet), 10, limits());
        let b = checkpoint_against(&now, Some(&noisy), 10, limits());
        assert!(b.rounds > 3 * a.rounds, "{a:?} {b:?}");
        let slower = [walls(20, 36e6, 0.01, 3)];
        let c = checkpoint_against(&slower, Some(&[walls(20, 18e6, 0.01, 4)]), 20, limits());
        assert!(c.clear, "{c:?}");
        assert!(!checkpoint(&now, 10, limits()).clear, "one command alone");
    }

    #[test]
    fn checkpoints_are_the_pilot_and_its_doublings() {
        let at: Vec<u32> = (1..=100).filter(|d| is_checkpoint(*d, 10)).collect();
        assert_eq!(at, [10, 20, 40, 80]);
    }
}
