//! Statistics over repeated measurements: summaries, outliers and trends.
//!
//! Outliers use the modified z-score of Iglewicz and Hoaglin (median and
//! median absolute deviation, robust where mean and stddev are not): a value
//! is an outlier when `0.6745 * |x - median| / MAD > 3.5`. A trend is a
//! Spearman rank correlation between run order and value of at least 0.7 in
//! magnitude over six or more runs (the machine warming up, a cache filling,
//! a disk filling).

use serde::{Deserialize, Serialize};

/// The summary of one figure over several runs, in the figure's own unit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub count: usize,
    pub min: f64,
    pub median: f64,
    pub mean: f64,
    /// Sample standard deviation; absent for a single value.
    pub stddev: Option<f64>,
    pub max: f64,
    /// 95th percentile (nearest rank).
    pub p95: f64,
    /// Median absolute deviation (unscaled).
    pub mad: f64,
}

impl Summary {
    /// Coefficient of variation (stddev / mean); absent for one value or a
    /// zero mean.
    pub fn cv(&self) -> Option<f64> {
        let sd = self.stddev?;
        (self.mean != 0.0).then(|| sd / self.mean.abs())
    }
}

/// The median of already sorted values; `None` when empty.
pub fn median_sorted(sorted: &[f64]) -> Option<f64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let mid = n / 2;
    Some(if n % 2 == 1 {
        sorted[mid]
    } else {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    })
}

fn sorted(values: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    v
}

/// The nearest-rank percentile `p` (0..=100) of sorted values.
pub fn percentile_sorted(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// Summarises the finite values of `values`; `None` when there are none.
pub fn summarize(values: &[f64]) -> Option<Summary> {
    let v = sorted(values);
    let n = v.len();
    let median = median_sorted(&v)?;
    let mean = v.iter().sum::<f64>() / n as f64;
    let stddev = (n > 1).then(|| {
        let ss: f64 = v.iter().map(|x| (x - mean) * (x - mean)).sum();
        (ss / (n - 1) as f64).sqrt()
    });
    let deviations = sorted(&v.iter().map(|x| (x - median).abs()).collect::<Vec<_>>());
    Some(Summary {
        count: n,
        min: v[0],
        median,
        mean,
        stddev,
        max: v[n - 1],
        p95: percentile_sorted(&v, 95.0).unwrap_or(median),
        mad: median_sorted(&deviations).unwrap_or(0.0),
    })
}

/// Indices of the outliers of `values` by modified z-score (see the module
/// comment). With a zero MAD (most values equal) any value off the median is
/// an outlier only if there are at least three values.
pub fn outliers(values: &[f64]) -> Vec<usize> {
    let Some(s) = summarize(values) else {
        return Vec::new();
    };
    if s.count < 3 {
        return Vec::new();
    }
    values
        .iter()
        .enumerate()
        .filter(|(_, x)| {
            let dev = (**x - s.median).abs();
            if s.mad == 0.0 {
                dev > 0.0
            } else {
                0.6745 * dev / s.mad > 3.5
            }
        })
        .map(|(i, _)| i)
        .collect()
}

/// Outliers (see [`outliers`]) that matter: those whose removal moves the
/// median by more than the fraction `moved` (0.01 for 1%) and by more than
/// the median's standard error (1.2533 · 1.4826 · MAD / √n): leaving out
/// the k largest of n values moves it by about k/√n of that by itself, so
/// a few stragglers of a skewed figure are not worth a warning. A
/// spread of about zero makes any value off the median an outlier, and a
/// warning about them would fire on nearly every run; what a reader needs
/// to know is whether they changed the figure.
#[derive(Debug, Clone, PartialEq)]
pub struct MovingOutliers {
    /// Indices into the values.
    pub indices: Vec<usize>,
    pub median: f64,
    /// The median of the other values.
    pub median_without: f64,
}

/// The outliers of `values` when leaving them out moves the median by more
/// than the fraction `moved`; `None` otherwise.
pub fn outliers_moving_median(values: &[f64], moved: f64) -> Option<MovingOutliers> {
    let indices = outliers(values);
    if indices.is_empty() {
        return None;
    }
    let all = summarize(values)?;
    let median = all.median;
    let standard_error = 1.2533 * 1.4826 * all.mad / (all.count as f64).sqrt();
    let rest: Vec<f64> = values
        .iter()
        .enumerate()
        .filter(|(i, _)| !indices.contains(i))
        .map(|(_, v)| *v)
        .collect();
    let median_without = summarize(&rest)?.median;
    let change = if median != 0.0 {
        ((median_without - median) / median).abs()
    } else if median_without != 0.0 {
        f64::INFINITY
    } else {
        0.0
    };
    let beyond_chance = (median_without - median).abs() > standard_error;
    (change > moved && beyond_chance).then_some(MovingOutliers {
        indices,
        median,
        median_without,
    })
}

fn ranks(values: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..values.len()).collect();
    idx.sort_by(|a, b| values[*a].total_cmp(&values[*b]));
    let mut ranks = vec![0.0; values.len()];
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && values[idx[j + 1]] == values[idx[i]] {
            j += 1;
        }
        // Ties share the mean of their ranks.
        let rank = (i + j) as f64 / 2.0 + 1.0;
        for k in &idx[i..=j] {
            ranks[*k] = rank;
        }
        i = j + 1;
    }
    ranks
}

/// Spearman's rank correlation between run order and value; `None` with
/// fewer than two values or when every value is equal.
pub fn spearman_vs_order(values: &[f64]) -> Option<f64> {
    let n = values.len();
    if n < 2 || values.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let order: Vec<f64> = (1..=n).map(|i| i as f64).collect();
    let r = ranks(values);
    let mean = (n as f64 + 1.0) / 2.0;
    let (mut cov, mut va, mut vb) = (0.0, 0.0, 0.0);
    for (a, b) in order.iter().zip(&r) {
        cov += (a - mean) * (b - mean);
        va += (a - mean) * (a - mean);
        vb += (b - mean) * (b - mean);
    }
    (vb > 0.0).then(|| cov / (va * vb).sqrt())
}

/// The trend of `values` over run order, when there is one (see the module
/// comment): the rank correlation, positive when values grow.
pub fn trend(values: &[f64]) -> Option<f64> {
    if values.len() < 6 {
        return None;
    }
    spearman_vs_order(values).filter(|rho| rho.abs() >= 0.7)
}

/// The result of a two-sided Mann–Whitney U test of two samples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MannWhitney {
    /// U of the first sample: the number of pairs (a, b) with a > b, ties
    /// counting one half.
    pub u: f64,
    /// The two-sided p-value.
    pub p: f64,
    /// `exact` (the permutation distribution of U, for samples without
    /// ties of up to 50 values each) or `normal` (the tie-corrected normal
    /// approximation with continuity correction).
    pub method: &'static str,
}

/// The two-sided Mann–Whitney U test of `a` against `b` (non-finite values
/// left out), as scipy's `mannwhitneyu(a, b, alternative="two-sided")`
/// computes it with `method="exact"` for samples without ties of up to 50
/// values each, else with `method="asymptotic"` (tie correction and
/// continuity correction). `None` when either sample is empty.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Option<MannWhitney> {
    let a: Vec<f64> = a.iter().copied().filter(|x| x.is_finite()).collect();
    let b: Vec<f64> = b.iter().copied().filter(|x| x.is_finite()).collect();
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return None;
    }
    let mut all = a.clone();
    all.extend_from_slice(&b);
    let r = ranks(&all);
    let r1: f64 = r.iter().take(n1).sum();
    let (f1, f2) = (n1 as f64, n2 as f64);
    let u1 = r1 - f1 * (f1 + 1.0) / 2.0;
    let u2 = f1 * f2 - u1;
    let big = u1.max(u2);
    // Tie groups: t^3 - t summed over groups of equal values.
    let mut sorted_all = all;
    sorted_all.sort_by(f64::total_cmp);
    let mut tie_sum = 0.0;
    let mut i = 0;
    while i < sorted_all.len() {
        let mut j = i;
        while j + 1 < sorted_all.len() && sorted_all[j + 1] == sorted_all[i] {
            j += 1;
        }
        let t = (j - i + 1) as f64;
        tie_sum += t * t * t - t;
        i = j + 1;
    }
    if tie_sum == 0.0 && n1 <= 50 && n2 <= 50 {
        let p = (2.0 * exact_u_sf(big.round() as usize, n1, n2)).min(1.0);
        return Some(MannWhitney {
            u: u1,
            p,
            method: "exact",
        });
    }
    let n = f1 + f2;
    let mu = f1 * f2 / 2.0;
    let var = f1 * f2 / 12.0 * ((n + 1.0) - tie_sum / (n * (n - 1.0)));
    let p = if var <= 0.0 {
        // Every value equal: nothing tells the samples apart.
        1.0
    } else {
        let z = (big - mu - 0.5) / var.sqrt();
        (2.0 * normal_sf(z)).clamp(0.0, 1.0)
    };
    Some(MannWhitney {
        u: u1,
        p,
        method: "normal",
    })
}

/// P(U >= u) under the null hypothesis for samples of `n1` and `n2`
/// values without ties, from [`exact_u_counts`] (computed once per pair of
/// sizes and kept: a comparison tests a dozen figures of the same sizes).
fn exact_u_sf(u: usize, n1: usize, n2: usize) -> f64 {
    use std::cell::RefCell;
    use std::collections::HashMap;
    /// P(U >= k) for every k, per pair of sample sizes.
    type Tails = HashMap<(usize, usize), std::rc::Rc<Vec<f64>>>;
    thread_local! {
        static TAILS: RefCell<Tails> = RefCell::new(HashMap::new());
    }
    let max = n1 * n2;
    if u == 0 {
        return 1.0;
    }
    if u > max {
        return 0.0;
    }
    let tails = TAILS.with(|t| {
        t.borrow_mut()
            .entry((n1, n2))
            .or_insert_with(|| {
                // tails[k] = P(U >= k).
                let counts = exact_u_counts(n1, n2);
                let total: f64 = counts.iter().sum();
                let mut tails = vec![0.0; counts.len() + 1];
                for k in (0..counts.len()).rev() {
                    tails[k] = tails[k + 1] + counts[k] / total;
                }
                std::rc::Rc::new(tails)
            })
            .clone()
    });
    tails.get(u).copied().unwrap_or(0.0)
}

/// The number of arrangements of `n1` and `n2` values with U = k, for
/// every k in 0..=n1·n2, by the recurrence
/// f(n1, n2, k) = f(n1 - 1, n2, k - n2) + f(n1, n2 - 1, k).
fn exact_u_counts(n1: usize, n2: usize) -> Vec<f64> {
    let max = n1 * n2;
    let width = max + 1;
    // Row j of a table: arrangements of i values of the first sample and
    // j of the second with U = k, for every k; two tables, the last i's
    // and this one's, built up over i and reused (allocating one per i
    // took most of a comparison's statistics at 50 runs each). Each row
    // starts with 1 (U = 0 once), and past U's largest, i · j, it holds
    // zeros: a table written two steps before wrote less of each row.
    let mut prev = vec![0.0; (n2 + 1) * width];
    for row in prev.chunks_mut(width) {
        row[0] = 1.0;
    }
    let mut cur = vec![0.0; (n2 + 1) * width];
    cur[0] = 1.0;
    for i in 1..=n1 {
        for j in 1..=n2 {
            let (before, this) = cur.split_at_mut(j * width);
            let left = &before[(j - 1) * width..];
            let up = &prev[j * width..(j + 1) * width];
            let row = &mut this[..width];
            // U of i and j values is at most i · j.
            for k in 0..=(i * j).min(max) {
                let take_a = if k >= j { up[k - j] } else { 0.0 };
                row[k] = take_a + left[k];
            }
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev.split_off(n2 * width)
}

/// The smallest two-sided p-value [`mann_whitney`] can give for samples
/// of `n1` and `n2` values (no ties, every value of one sample above every
/// value of the other): below a significance level, a difference can be
/// shown; above it, no outcome of these runs could show one.
pub fn mann_whitney_min_p(n1: usize, n2: usize) -> f64 {
    if n1 == 0 || n2 == 0 {
        return 1.0;
    }
    if n1 <= 50 && n2 <= 50 {
        // 2 / C(n1 + n2, n1), as a product to stay in range.
        let mut arrangements = 1.0f64;
        for i in 1..=n1.min(n2) {
            arrangements *= (n1.max(n2) + i) as f64 / i as f64;
        }
        return (2.0 / arrangements).min(1.0);
    }
    let (f1, f2) = (n1 as f64, n2 as f64);
    let var = f1 * f2 * (f1 + f2 + 1.0) / 12.0;
    let z = (f1 * f2 / 2.0 - 0.5) / var.sqrt();
    (2.0 * normal_sf(z)).min(1.0)
}

/// The fewest runs of each command (equal samples) with which
/// [`mann_whitney`] can reach a p-value at or below `level` at all.
pub fn runs_to_reach(level: f64) -> u32 {
    (2..=10_000u32)
        .find(|&n| mann_whitney_min_p(n as usize, n as usize) <= level)
        .unwrap_or(10_000)
}

/// Holm's step-down adjustment of p-values for a family of tests, in the
/// order given: the i-th smallest p is multiplied by (m − i + 1), and the
/// adjusted values are made monotone. Rejecting where the adjusted p is
/// below alpha keeps the chance of any false rejection in the family at
/// most alpha, whatever the dependence between the tests.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|a, b| p[*a].total_cmp(&p[*b]));
    let mut adjusted = vec![1.0; m];
    let mut running = 0.0f64;
    for (rank, &i) in order.iter().enumerate() {
        let v = (p[i] * (m - rank) as f64).min(1.0);
        running = running.max(v);
        adjusted[i] = running;
    }
    adjusted
}

/// The standard normal quantile: z with P(Z <= z) = `p` (Acklam's
/// rational approximation, relative error under 1.2e-9).
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969683028665376e1,
        2.209460984245205e2,
        -2.759285104469687e2,
        1.383_577_518_672_69e2,
        -3.066479806614716e1,
        2.506628277459239,
    ];
    const B: [f64; 5] = [
        -5.447609879822406e1,
        1.615858368580409e2,
        -1.556989798598866e2,
        6.680131188771972e1,
        -1.328068155288572e1,
    ];
    const C: [f64; 6] = [
        -7.784894002430293e-3,
        -3.223964580411365e-1,
        -2.400758277161838,
        -2.549732539343734,
        4.374664141464968,
        2.938163982698783,
    ];
    const D: [f64; 4] = [
        7.784695709041462e-3,
        3.224671290700398e-1,
        2.445134137142996,
        3.754408661907416,
    ];
    if p <= 0.0 {
        return f64::NEG_INFINITY;
    }
    if p >= 1.0 {
        return f64::INFINITY;
    }
    let low = 0.02425;
    if p < low {
        let q = (-2.0 * p.ln()).sqrt();
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    } else if p <= 1.0 - low {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    } else {
        -normal_quantile(1.0 - p)
    }
}

/// Runs of each of two commands with which a two-sided Mann–Whitney test
/// at `level` finds, with probability `power`, a shift of the median by
/// the fraction `shift` (0.05 for 5%) in a figure whose runs spread by the
/// fraction `spread` (a robust standard deviation over the median): the
/// normal approximation n = 2 (z₁₋ₗₑᵥₑₗ/₂ + z_power)² (spread/shift)²,
/// divided by the test's efficiency against the t-test on normal data
/// (3/π), and never fewer than [`runs_to_reach`] `level`.
pub fn runs_for_power(spread: f64, shift: f64, level: f64, power: f64) -> u32 {
    if !(spread.is_finite() && shift > 0.0 && level > 0.0 && level < 1.0) {
        return runs_to_reach(level);
    }
    let z = normal_quantile(1.0 - level / 2.0) + normal_quantile(power);
    let n = 2.0 * (z * spread / shift).powi(2) / (3.0 / std::f64::consts::PI);
    let n = if n.is_finite() {
        n.ceil().min(1e6) as u32
    } else {
        1_000_000
    };
    n.max(runs_to_reach(level))
}

/// The smallest shift of the median (a fraction) that `runs` runs of each
/// command find with probability `power` at `level`, for a figure that
/// spreads by `spread` (the inverse of [`runs_for_power`]).
pub fn detectable_shift(spread: f64, runs: u32, level: f64, power: f64) -> f64 {
    let z = normal_quantile(1.0 - level / 2.0) + normal_quantile(power);
    z * spread * (2.0 / (f64::from(runs.max(1)) * 3.0 / std::f64::consts::PI)).sqrt()
}

/// The upper tail of the standard normal distribution, P(Z > z).
pub fn normal_sf(z: f64) -> f64 {
    0.5 * erfc(z / std::f64::consts::SQRT_2)
}

/// The complementary error function: below 2.5 from the series
/// erf(x) = 2/√π · e^(-x²) · Σ 2ⁿ x^(2n+1) / (1·3·…·(2n+1)) (all terms
/// positive, no cancellation), above from the continued fraction
/// erfc(x) = e^(-x²)/√π / (x + (1/2)/(x + 1/(x + (3/2)/(x + …)))).
fn erfc(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    if x < 0.0 {
        return 2.0 - erfc(-x);
    }
    let sqrt_pi = std::f64::consts::PI.sqrt();
    if x < 2.5 {
        let mut term = x;
        let mut sum = x;
        let mut n = 0.0;
        while term > sum * 1e-17 {
            n += 1.0;
            term *= 2.0 * x * x / (2.0 * n + 1.0);
            sum += term;
        }
        return 1.0 - 2.0 / sqrt_pi * (-x * x).exp() * sum;
    }
    if x > 27.0 {
        return 0.0;
    }
    let mut f = x;
    for k in (1..=200).rev() {
        f = x + (k as f64 / 2.0) / f;
    }
    (-x * x).exp() / sqrt_pi / f
}

/// A seed no earlier run is likely to have had: from the random keys the
/// standard library draws for each process's hash maps, mixed with the
/// time.
pub fn fresh_seed() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    // Below 2^53: exact in every JSON reader, and short enough to type.
    RandomState::new().hash_one(now) >> 11
}

/// A small seeded generator (SplitMix64): the same seed, the same
/// sequence, on every machine.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A uniform index below `n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        // The high word of a 64×64-bit product (Lemire): no division.
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }

    /// A uniform value in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Shuffles `v` in place (Fisher–Yates).
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i + 1);
            v.swap(i, j);
        }
    }
}

/// So the distributions of `rand_distr` draw from the same seeded stream.
impl rand_core::TryRng for Rng {
    type Error = std::convert::Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
        Ok((self.next_u64() >> 32) as u32)
    }

    fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
        Ok(self.next_u64())
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Self::Error> {
        for chunk in dst.chunks_mut(8) {
            let bytes = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
        Ok(())
    }
}

/// The shift of one sample against another with its interval and the
/// test that interval inverts: the Hodges–Lehmann estimate (the median of
/// the n₁·n₂ differences `a − b`) and the Moses interval
/// `[D₍ₖ₎, D₍ₙ₁ₙ₂₊₁₋ₖ₎]` of the sorted differences, with `k` from the
/// distribution of the Mann–Whitney U: exact (the permutation
/// distribution, counted) for samples of up to [`EXACT_MAX`] values each,
/// else its normal approximation with continuity correction.
///
/// Ties (integer counts, a figure that is often 0) are broken against a
/// difference: the interval is closed, and the p-value is the larger of the
/// two that breaking every tie between the samples one way or the other
/// gives. Breaking ties at random keeps U's distribution exact, and the
/// worst case of that is never more significant, so the interval covers
/// at least its level and the test rejects at most at its level, ties or
/// none; without ties both are exactly the Mann–Whitney test's (scipy's
/// `mannwhitneyu(method="exact")`). The interval and the p-value come from
/// the same distribution: `p <= alpha` exactly when the interval at
/// 1 − alpha leaves out 0, so a verdict read from one never contradicts
/// the other.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Shift {
    /// The Hodges–Lehmann estimate of `a − b`.
    pub estimate: f64,
    /// The interval's bounds: −∞ and +∞ when no outcome of samples this
    /// small could leave 0 out at this level.
    pub low: f64,
    pub high: f64,
    /// The two-sided alpha the interval was made for (its level is 1 − alpha).
    pub alpha: f64,
    /// Mann–Whitney U of `a`: pairs with a > b, ties counting one half.
    pub u: f64,
    /// The two-sided p-value of no shift, from the same distribution.
    pub p: f64,
    /// `exact` or `normal`.
    pub method: &'static str,
}

/// The largest samples for which [`shift`] counts U's exact distribution.
pub const EXACT_MAX: usize = 50;

/// Up to this many differences, [`shift`] makes and sorts them.
const MADE_DIFFERENCES: usize = 1 << 16;

/// P(U <= u) for samples of `n1` and `n2` values without ties: exact up
/// to [`EXACT_MAX`] values each, else normal with continuity correction.
fn u_cdf(u: usize, n1: usize, n2: usize) -> f64 {
    let max = n1 * n2;
    if u >= max {
        return 1.0;
    }
    if n1 <= EXACT_MAX && n2 <= EXACT_MAX {
        // Symmetric: P(U <= u) = P(U >= max − u).
        return exact_u_sf(max - u, n1, n2);
    }
    let (f1, f2) = (n1 as f64, n2 as f64);
    let sd = (f1 * f2 * (f1 + f2 + 1.0) / 12.0).sqrt();
    1.0 - normal_sf((u as f64 + 0.5 - f1 * f2 / 2.0) / sd)
}

/// A key whose integer order is the order of finite floats.
fn order_key(x: f64) -> i64 {
    let bits = x.to_bits() as i64;
    if bits < 0 {
        i64::MIN.wrapping_sub(bits).wrapping_sub(1)
    } else {
        bits
    }
}

fn from_order_key(k: i64) -> f64 {
    let bits = if k < 0 {
        i64::MIN.wrapping_sub(k).wrapping_sub(1)
    } else {
        k
    };
    f64::from_bits(bits as u64)
}

/// How many differences `a[i] − b[j]` are at most `t` (both sorted), the
/// largest of them and the smallest of the others.
fn differences_at_most(a: &[f64], b: &[f64], t: f64) -> (usize, Option<f64>, Option<f64>) {
    // For each a, the b with a − b <= t are those from the first such on.
    let mut j = 0;
    let mut count = 0;
    let (mut largest, mut above): (Option<f64>, Option<f64>) = (None, None);
    // a ascending: the first b with a − b <= t moves right only.
    for x in a {
        while j < b.len() && *x - b[j] > t {
            j += 1;
        }
        count += b.len() - j;
        // a − b falls as b rises: this row's largest at most t is at j,
        // its smallest above t just before.
        if let Some(y) = b.get(j) {
            let d = *x - y;
            largest = Some(largest.map_or(d, |l| l.max(d)));
        }
        if let Some(y) = j.checked_sub(1).and_then(|i| b.get(i)) {
            let d = *x - y;
            above = Some(above.map_or(d, |m| m.min(d)));
        }
    }
    (count, largest, above)
}

/// The `k`-th smallest (1-based) of the differences `a[i] − b[j]` of two
/// sorted samples, without making them all: bisection over the floats,
/// each step counting in O(n₁ + n₂) and moving a bound onto a difference,
/// until at most [`GATHERED`] differences lie between the bounds, which are
/// then made and the one wanted selected among them, or one value is left
/// (a comparison of 500 runs each took 64 steps per difference sought,
/// three-quarters of the time its statistics took).
fn kth_difference(a: &[f64], b: &[f64], k: usize) -> f64 {
    let (Some(a0), Some(a1), Some(b0), Some(b1)) = (a.first(), a.last(), b.first(), b.last())
    else {
        return f64::NAN;
    };
    let (mut lo, mut hi) = (order_key(a0 - b1), order_key(a1 - b0));
    // Invariant: the answer's key lies in lo..=hi; `at_hi` differences are
    // at most hi's value, `below` at most `below_value` (which lies under
    // lo's): the differences between are `at_hi − below`.
    let mut at_hi = a.len() * b.len();
    let (mut below, mut below_value) = (0, f64::NEG_INFINITY);
    while lo < hi {
        if at_hi - below <= GATHERED {
            return kth_between(
                a,
                b,
                (below_value, from_order_key(hi)),
                k - below,
                at_hi - below,
            );
        }
        let mid = ((i128::from(lo) + i128::from(hi)).div_euclid(2)) as i64;
        let value = from_order_key(mid);
        // Each bound moves onto a difference there is (none lies between
        // it and `value`), so that differences tied in their thousands
        // end the search as soon as only their value is left.
        let (count, largest, above) = differences_at_most(a, b, value);
        if count >= k {
            hi = largest.map_or(mid, order_key).min(mid);
            at_hi = count;
        } else {
            lo = above.map_or(mid + 1, order_key).max(mid + 1);
            below = count;
            below_value = value;
        }
    }
    from_order_key(lo)
}

/// At most this many differences are made by [`kth_difference`] to select
/// from.
const GATHERED: usize = 4096;

/// The `k`-th smallest (1-based) of the `count` differences `a[i] − b[j]`
/// above `low` and at most `high` (both samples sorted).
fn kth_between(a: &[f64], b: &[f64], (low, high): (f64, f64), k: usize, count: usize) -> f64 {
    let mut made = Vec::with_capacity(count);
    // a ascending: for each, the differences within lie at b from the
    // first with a − b <= high to the first with a − b <= low, and both
    // move right only.
    let (mut from, mut to) = (0, 0);
    for x in a {
        while from < b.len() && *x - b[from] > high {
            from += 1;
        }
        to = to.max(from);
        while to < b.len() && *x - b[to] > low {
            to += 1;
        }
        made.extend(b[from..to].iter().map(|y| x - y));
    }
    match made.len().checked_sub(k) {
        Some(_) if k > 0 => *made.select_nth_unstable_by(k - 1, f64::total_cmp).1,
        _ => f64::NAN,
    }
}

/// The shift of `a` against `b` with its interval at `1 − alpha` and the
/// p-value of no shift (see [`Shift`]). `None` when a sample has no finite
/// value.
pub fn shift(a: &[f64], b: &[f64], alpha: f64) -> Option<Shift> {
    let a = sorted(a);
    let b = sorted(b);
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return None;
    }
    let n = n1 * n2;
    // Pairs below (a < b), tied and above, from the values: a − b <= 0
    // exactly when a <= b, so these count the differences too.
    let below = count_below(&a, &b);
    let below_or_tied: usize = a
        .iter()
        .map(|x| b.len() - b.partition_point(|y| y < x))
        .sum();
    let tied = below_or_tied - below;
    let above = n - below_or_tied;
    let cdf = |u: usize| u_cdf(u, n1, n2);
    // Leaves 0 out above when #{D <= 0} <= k − 1, below when #{D >= 0} <= k − 1.
    let p = (2.0 * cdf(below_or_tied).min(cdf(above + tied))).min(1.0);
    // k: the number of u with P(U <= u) <= alpha / 2 (a prefix of 0..).
    let half = alpha / 2.0;
    let (mut lo, mut hi) = (0usize, n / 2 + 1);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if cdf(mid) <= half {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    let k = lo;
    // The k-th smallest difference: from the differences made and sorted
    // when there are not too many, else by bisection without making them.
    let mut made: Option<Vec<f64>> = (n <= MADE_DIFFERENCES).then(|| {
        a.iter()
            .flat_map(|x| b.iter().map(move |y| x - y))
            .collect()
    });
    let mut kth = |k: usize| match &mut made {
        Some(d) => *d.select_nth_unstable_by(k - 1, f64::total_cmp).1,
        None => kth_difference(&a, &b, k),
    };
    let (low, high) = if k == 0 {
        (f64::NEG_INFINITY, f64::INFINITY)
    } else {
        (kth(k), kth(n + 1 - k))
    };
    let estimate = if n % 2 == 1 {
        kth(n / 2 + 1)
    } else {
        (kth(n / 2) + kth(n / 2 + 1)) / 2.0
    };
    Some(Shift {
        estimate,
        low,
        high,
        alpha,
        u: above as f64 + tied as f64 / 2.0,
        p,
        method: if n1 <= EXACT_MAX && n2 <= EXACT_MAX {
            "exact"
        } else {
            "normal"
        },
    })
}

/// Pairs with a < b, counted from the values (not their differences).
fn count_below(a: &[f64], b: &[f64]) -> usize {
    a.iter()
        .map(|x| b.len() - b.partition_point(|y| y <= x))
        .sum()
}

/// The smallest `alpha` at which `runs` runs of each of two samples can
/// leave 0 out of a [`shift`] interval at all: [`mann_whitney_min_p`].
pub fn shift_min_alpha(n1: usize, n2: usize) -> f64 {
    (2.0 * u_cdf(0, n1, n2)).min(1.0)
}

/// A figure's ratio (this sample over the reference) with its interval
/// and test, from the [`shift`] of log values when every value is
/// positive (a shift of logs is a ratio), else from the shift of the
/// values over the reference's median (a figure that is sometimes 0).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RatioShift {
    /// The ratio and its interval's bounds (the upper one +∞ when these
    /// runs cannot bound it); absent when the reference's median is 0 and
    /// some value is 0.
    pub ratio: Option<(f64, f64, f64)>,
    /// The shift it was read from.
    pub shift: Shift,
}

impl RatioShift {
    /// Whether no outcome of samples this small could leave 0 out of the
    /// shift's interval at its level.
    pub fn unbounded(&self) -> bool {
        self.shift.low == f64::NEG_INFINITY
    }
}

/// [`RatioShift`] of `a` over `b` at two-sided `alpha`; `None` when a
/// sample has no finite value.
pub fn ratio_shift(a: &[f64], b: &[f64], alpha: f64) -> Option<RatioShift> {
    let positive = |v: &[f64]| v.iter().filter(|x| x.is_finite()).all(|x| *x > 0.0);
    if positive(a) && positive(b) {
        let ln = |v: &[f64]| v.iter().map(|x| x.ln()).collect::<Vec<f64>>();
        let s = shift(&ln(a), &ln(b), alpha)?;
        return Some(RatioShift {
            ratio: Some((s.estimate.exp(), s.low.exp(), s.high.exp())),
            shift: s,
        });
    }
    let s = shift(a, b, alpha)?;
    let reference = median_sorted(&sorted(b))?;
    let floor = if positive(a) || a.iter().all(|x| *x >= 0.0) {
        0.0
    } else {
        f64::NEG_INFINITY
    };
    let r = |d: f64| (1.0 + d / reference).max(floor);
    Some(RatioShift {
        ratio: (reference > 0.0).then(|| (r(s.estimate), r(s.low), r(s.high))),
        shift: s,
    })
}

/// A confidence interval of a ratio.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RatioInterval {
    /// median(a) / median(b).
    pub ratio: f64,
    pub low: f64,
    pub high: f64,
    /// The confidence level, 0.95 for a 95% interval.
    pub level: f64,
}

/// Resamples each of [`ratio_of_medians`]'s bootstrap draws.
pub const BOOTSTRAP_RESAMPLES: usize = 10_000;

/// The ratio of the medians of `a` and `b` with a percentile bootstrap
/// interval at `level`: each sample resampled with replacement on its own,
/// at its own size, [`BOOTSTRAP_RESAMPLES`] times, from the seeded [`Rng`],
/// so the same samples always give the same interval. `None` when a
/// sample is empty or b's median is zero.
///
/// A resample's median is drawn directly rather than by building the
/// resample (see `MedianOfResample`): the same distribution at a cost
/// that does not grow with the sample, so the interval of 10,000 runs
/// takes no longer than that of ten.
pub fn ratio_of_medians(a: &[f64], b: &[f64], level: f64, seed: u64) -> Option<RatioInterval> {
    let sa = sorted(a);
    let sb = sorted(b);
    let ma = median_sorted(&sa)?;
    let mb = median_sorted(&sb)?;
    if mb == 0.0 {
        return None;
    }
    let ratio = ma / mb;
    if sa.first() == sa.last() && sb.first() == sb.last() {
        // Both constant: every resample gives the same ratio.
        return Some(RatioInterval {
            ratio,
            low: ratio,
            high: ratio,
            level,
        });
    }
    let (da, db) = (MedianOfResample::new(&sa)?, MedianOfResample::new(&sb)?);
    let mut rng = Rng::new(seed);
    let mut ratios = Vec::with_capacity(BOOTSTRAP_RESAMPLES);
    for _ in 0..BOOTSTRAP_RESAMPLES {
        let ra = da.draw(&mut rng);
        let rb = db.draw(&mut rng);
        if rb != 0.0 {
            ratios.push(ra / rb);
        } else if ra != 0.0 {
            ratios.push(f64::INFINITY);
        }
    }
    ratios.sort_by(f64::total_cmp);
    let tail = (1.0 - level.clamp(0.0, 1.0)) / 2.0;
    let low = quantile_sorted(&ratios, tail).unwrap_or(ratio);
    let high = quantile_sorted(&ratios, 1.0 - tail).unwrap_or(ratio);
    Some(RatioInterval {
        ratio,
        low: low.min(ratio),
        high: high.max(ratio),
        level,
    })
}

/// The median of a resample (with replacement, of the sample's own size
/// n) of a sorted sample, drawn without building the resample.
///
/// Each of the n draws picks index `floor(u · n)` for a uniform u, a
/// monotone map, so the resample's k-th smallest value is the sample's
/// value at `floor(U₍ₖ₎ · n)`, where U₍ₖ₎, the k-th smallest of n
/// uniforms, is Beta(k, n − k + 1). For an even n the median also needs
/// the next order statistic: the smallest of the n − k uniforms above
/// U₍ₖ₎, that is U₍ₖ₎ + (1 − U₍ₖ₎) · Beta(1, n − k), and Beta(1, m) is
/// 1 − V^(1/m) for a uniform V.
struct MedianOfResample<'a> {
    sorted: &'a [f64],
    kth: rand_distr::Beta<f64>,
}

impl<'a> MedianOfResample<'a> {
    fn new(sorted: &'a [f64]) -> Option<MedianOfResample<'a>> {
        let n = sorted.len();
        // k-th smallest, 1-based: the middle one (odd n), the lower middle (even n).
        let k = n.div_ceil(2);
        let kth = rand_distr::Beta::new(k as f64, (n - k + 1) as f64).ok()?;
        Some(MedianOfResample { sorted, kth })
    }

    fn at(&self, u: f64) -> f64 {
        let n = self.sorted.len();
        let i = ((u * n as f64) as usize).min(n - 1);
        self.sorted[i]
    }

    fn draw(&self, rng: &mut Rng) -> f64 {
        use rand_distr::Distribution;
        let n = self.sorted.len();
        let uk = self.kth.sample(rng);
        if n % 2 == 1 {
            return self.at(uk);
        }
        let above = n - n / 2;
        let next = uk + (1.0 - uk) * (1.0 - rng.unit().powf(1.0 / above as f64));
        (self.at(uk) + self.at(next)) / 2.0
    }
}

/// A distribution-free interval for the `q` quantile (0 < q < 1) of the
/// population `sorted` (ascending) was drawn from, at confidence `level`:
/// two of the values themselves, at the ranks of [`quantile_ranks`]. It
/// holds for any continuous distribution, a bimodal one included. `None`
/// when there are too few values for such ranks (e.g. for q = 0.05 at
/// level 0.99, fewer than 104).
pub fn quantile_interval(sorted: &[f64], q: f64, level: f64) -> Option<(f64, f64)> {
    let (lower, upper) = quantile_ranks(sorted.len(), q, level)?;
    Some((sorted[lower - 1], sorted[upper - 1]))
}

/// The ranks (1-based) `l` and `u` of `n` values whose `l`-th and `u`-th
/// smallest bound the `q` quantile at `level`: the number of values below
/// the quantile, Binomial(n, q), falls below `l` or at or above `u` each
/// with a chance of at most (1 − level)/2. `None` when no such ranks lie
/// within the `n`, or `q` or `level` lies outside (0, 1).
pub fn quantile_ranks(n: usize, q: f64, level: f64) -> Option<(usize, usize)> {
    if n == 0 || !(q > 0.0 && q < 1.0) || !(level > 0.0 && level < 1.0) {
        return None;
    }
    let tail = (1.0 - level) / 2.0;
    // P(B <= k) for k = 0..n, summed in logs from k = 0: the first terms
    // of a large n underflow to 0, harmlessly, before the mass begins.
    let (lp, lq) = (q.ln(), (1.0 - q).ln());
    let mut log_pmf = n as f64 * lq;
    let mut cdf = 0.0_f64;
    // l: the largest rank with P(B <= l - 1) <= tail; u: the smallest
    // with P(B >= u) <= tail, i.e. P(B <= u - 1) >= 1 - tail.
    let mut lower = 0usize;
    let mut upper = None;
    for k in 0..=n {
        cdf += log_pmf.exp();
        if cdf <= tail {
            lower = k + 1;
        }
        if cdf >= 1.0 - tail {
            upper = Some(k + 1);
            break;
        }
        if k < n {
            log_pmf += ((n - k) as f64).ln() - ((k + 1) as f64).ln() + lp - lq;
        }
    }
    let upper = upper?;
    (lower > 0 && upper <= n).then_some((lower, upper))
}

/// The fewest values for which [`quantile_ranks`] gives ranks of the `q`
/// quantile at `level`: both ends must exist, (1 − q)^n and q^n at most
/// (1 − level)/2; from there, the first `n` the summed binomial agrees
/// with (a step or two at most). `None` for a `q` or `level` outside
/// (0, 1).
pub fn quantile_interval_fewest(q: f64, level: f64) -> Option<usize> {
    if !(q > 0.0 && q < 1.0 && level > 0.0 && level < 1.0) {
        return None;
    }
    let tail = (1.0 - level) / 2.0;
    let n = (tail.ln() / (1.0 - q).ln()).max(tail.ln() / q.ln()).ceil();
    let n = n.max(1.0) as usize;
    (n..n.saturating_add(16)).find(|&m| quantile_ranks(m, q, level).is_some())
}

/// The `q` quantile (0..=1) of sorted values, linearly interpolated
/// (numpy's default).
pub fn quantile_sorted(sorted: &[f64], q: f64) -> Option<f64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let pos = q.clamp(0.0, 1.0) * (n - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    let (a, b) = (*sorted.get(lo)?, *sorted.get(hi)?);
    Some(a + (b - a) * (pos - lo as f64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The ranks against the binomial, computed apart: for 300 values
    /// and the 5% quantile at 99%, the 6th and the 26th smallest; too few
    /// values give no interval; and over many samples of a bimodal
    /// population the interval holds its quantile at least as often as
    /// its level says.
    #[test]
    fn quantile_intervals_hold_their_level_for_any_population() {
        let v: Vec<f64> = (1..=300).map(f64::from).collect();
        assert_eq!(quantile_interval(&v, 0.05, 0.99), Some((6.0, 26.0)));
        assert_eq!(quantile_interval(&v[..103], 0.05, 0.99), None);
        assert!(quantile_interval(&v[..104], 0.05, 0.99).is_some());
        assert_eq!(quantile_interval(&[], 0.05, 0.99), None);
        assert_eq!(quantile_interval(&v, 0.0, 0.99), None);
        assert_eq!(quantile_interval_fewest(0.05, 0.99), Some(104));
        // Two modes, 60% of the values in the slower one at twice the
        // time: the 5% quantile is the fast mode's 1/12 quantile.
        let mut rng = super::Rng::new(7);
        let truth = 1.0 + 0.05 / 0.4;
        let tries = 2_000;
        let mut held = 0;
        for _ in 0..tries {
            let mut s: Vec<f64> = (0..300)
                .map(|_| {
                    let u = rng.unit();
                    if rng.unit() < 0.6 { 2.0 + u } else { 1.0 + u }
                })
                .collect();
            s.sort_by(f64::total_cmp);
            let (lo, hi) = quantile_interval(&s, 0.05, 0.95).unwrap();
            held += usize::from(lo <= truth && truth <= hi);
        }
        assert!(held as f64 / tries as f64 >= 0.94, "{held} of {tries}");
    }

    #[test]
    fn summary_of_known_values() {
        let s = summarize(&[4.0, 1.0, 3.0, 2.0, 5.0]).unwrap();
        assert_eq!(s.count, 5);
        assert_eq!(s.min, 1.0);
        assert_eq!(s.max, 5.0);
        assert_eq!(s.median, 3.0);
        assert_eq!(s.mean, 3.0);
        assert!((s.stddev.unwrap() - 2.5f64.sqrt()).abs() < 1e-12);
        assert_eq!(s.mad, 1.0);
        assert_eq!(s.p95, 5.0);
    }

    #[test]
    fn one_value_has_no_stddev() {
        let s = summarize(&[7.0]).unwrap();
        assert_eq!(s.stddev, None);
        assert_eq!(s.cv(), None);
    }

    #[test]
    fn empty_and_non_finite_input() {
        assert!(summarize(&[]).is_none());
        assert!(summarize(&[f64::NAN]).is_none());
        assert_eq!(summarize(&[f64::NAN, 2.0]).unwrap().count, 1);
    }

    #[test]
    fn finds_the_outlier() {
        let v = [10.0, 11.0, 10.0, 12.0, 11.0, 10.0, 95.0];
        assert_eq!(outliers(&v), vec![6]);
        assert!(outliers(&[10.0, 11.0, 10.0, 12.0, 11.0]).is_empty());
    }

    #[test]
    fn finds_a_trend_and_no_trend() {
        let rising: Vec<f64> = (0..10).map(|i| 100.0 + i as f64).collect();
        assert!(trend(&rising).unwrap() > 0.99);
        let flat = [5.0, 7.0, 5.0, 7.0, 5.0, 7.0, 5.0, 7.0];
        assert_eq!(trend(&flat), None);
        assert_eq!(trend(&[1.0, 2.0, 3.0]), None, "too few runs");
    }

    #[derive(serde::Deserialize)]
    struct MwuCase {
        a: Vec<f64>,
        b: Vec<f64>,
        u: f64,
        p: f64,
        method: String,
    }

    #[derive(serde::Deserialize)]
    struct BootCase {
        a: Vec<f64>,
        b: Vec<f64>,
        ratio: f64,
        low: f64,
        high: f64,
    }

    #[derive(serde::Deserialize)]
    struct Fixture {
        mann_whitney: Vec<MwuCase>,
        ratio_of_medians: Vec<BootCase>,
    }

    /// Values computed by scipy (tests/fixtures/stats_scipy.py).
    fn fixture() -> Fixture {
        serde_json::from_str(include_str!("../tests/fixtures/stats_scipy.json")).unwrap()
    }

    #[test]
    fn mann_whitney_agrees_with_scipy() {
        for c in fixture().mann_whitney {
            let r = mann_whitney(&c.a, &c.b).unwrap();
            assert_eq!(r.method, c.method, "{:?} vs {:?}", c.a, c.b);
            assert_eq!(r.u, c.u, "{:?} vs {:?}", c.a, c.b);
            assert!(
                (r.p - c.p).abs() <= 1e-9 + 1e-7 * c.p,
                "p {} against scipy's {} ({})",
                r.p,
                c.p,
                c.method
            );
        }
    }

    #[test]
    fn shift_test_is_mann_whitney_without_ties() {
        for c in fixture().mann_whitney {
            let r = shift(&c.a, &c.b, 0.05).unwrap();
            assert_eq!(r.u, c.u, "{:?} vs {:?}", c.a, c.b);
            if c.method == "exact" {
                assert!(
                    (r.p - c.p).abs() <= 1e-9 + 1e-7 * c.p,
                    "p {} against scipy's exact {}",
                    r.p,
                    c.p
                );
            }
        }
    }

    /// The exact distribution of U, counted in two reused tables, is the
    /// arrangements' own: every arrangement of small samples enumerated,
    /// and for sizes up to 50 each, counts that add up to C(n1 + n2, n1)
    /// and are symmetric (U and n1 · n2 − U as often).
    #[test]
    fn the_exact_distribution_of_u_counts_every_arrangement_once() {
        for (n1, n2) in [(1, 1), (1, 4), (3, 2), (4, 6), (6, 6), (7, 3)] {
            let mut want = vec![0.0; n1 * n2 + 1];
            // Each arrangement: which of the n1 + n2 places hold the first
            // sample's values; U counts the pairs with the first above.
            for mask in 0u32..1 << (n1 + n2) {
                if mask.count_ones() as usize != n1 {
                    continue;
                }
                let mut u = 0;
                let mut seconds_below = 0;
                for place in 0..n1 + n2 {
                    if mask & (1 << place) != 0 {
                        u += seconds_below;
                    } else {
                        seconds_below += 1;
                    }
                }
                want[u] += 1.0;
            }
            assert_eq!(exact_u_counts(n1, n2), want, "{n1} and {n2}");
        }
        for (n1, n2) in [(50, 50), (50, 13), (9, 50), (20, 21)] {
            let counts = exact_u_counts(n1, n2);
            assert_eq!(counts.len(), n1 * n2 + 1);
            let total: f64 = counts.iter().sum();
            let mut arrangements = 1.0f64;
            for i in 1..=n1 {
                arrangements *= (n2 + i) as f64 / i as f64;
            }
            assert!((total / arrangements - 1.0).abs() < 1e-9, "{n1} and {n2}");
            for (k, c) in counts.iter().enumerate() {
                let mirror = counts[n1 * n2 - k];
                assert!(
                    (c - mirror).abs() <= 1e-9 * c.max(1.0),
                    "{n1}, {n2}: U = {k}"
                );
            }
        }
    }

    /// Six runs of each that do not overlap: the smallest p there is,
    /// 2 / C(12, 6), with or without ties inside each sample; an interval
    /// that leaves 0 out at any alpha above it and is unbounded below it.
    #[test]
    fn samples_that_separate_completely_reach_the_exact_minimum() {
        let a = [53.0, 53.0, 53.0, 53.0, 53.0, 53.0];
        let b = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
        let r = shift(&a, &b, 0.0022).unwrap();
        assert!((r.p - 2.0 / 924.0).abs() < 1e-15, "{r:?}");
        assert_eq!((r.low, r.high, r.estimate), (52.0, 52.0, 52.0));
        let r = shift(&a, &b, 0.002).unwrap();
        assert_eq!((r.low, r.high), (f64::NEG_INFINITY, f64::INFINITY));
        let ratio = ratio_shift(&a, &b, 0.0022).unwrap();
        let (x, lo, hi) = ratio.ratio.unwrap();
        assert!(
            (x - 53.0).abs() < 1e-9 && lo > 52.9 && hi < 53.1,
            "{ratio:?}"
        );
        assert_eq!(shift_min_alpha(6, 6), 2.0 / 924.0);
    }

    /// Over random samples with and without ties, of sizes from 1 to 70
    /// (exact and normal; a few sizes, as each pair of sizes counts its
    /// distribution once), the p-value is at most alpha exactly when the
    /// interval leaves 0 out, the interval holds the estimate, and the
    /// differences found by bisection are the sorted differences'.
    #[test]
    fn shift_interval_and_p_value_never_disagree() {
        let mut rng = super::Rng::new(77);
        for case in 0..3000 {
            const SIZES: [usize; 8] = [1, 2, 3, 6, 9, 20, 50, 70];
            let (n1, n2) = (SIZES[rng.below(8)], SIZES[rng.below(8)]);
            let tied = case % 2 == 0;
            let offset = rng.below(5) as f64;
            let mut draw = |n: usize, shift_by: f64| -> Vec<f64> {
                (0..n)
                    .map(|_| {
                        let x = normal_quantile(rng.unit().clamp(1e-9, 1.0 - 1e-9)) + shift_by;
                        if tied { x.round() } else { x }
                    })
                    .collect()
            };
            let a = draw(n1, offset * 0.3);
            let b = draw(n2, 0.0);
            let alpha = [0.05, 0.01, 0.002, 0.0005][rng.below(4)];
            let r = shift(&a, &b, alpha).unwrap();
            let excludes = r.low > 0.0 || r.high < 0.0;
            assert_eq!(r.p <= alpha, excludes, "{a:?} {b:?} {alpha} {r:?}");
            assert!(r.low <= r.estimate && r.estimate <= r.high, "{r:?}");
            if case % 10 == 0 {
                let (sa, sb) = (sorted(&a), sorted(&b));
                let d = all_differences(&sa, &sb);
                for k in [1, d.len() / 2 + 1, d.len()] {
                    assert_eq!(kth_difference(&sa, &sb, k), d[k - 1], "k {k}");
                }
            }
        }
    }

    /// Every difference `a[i] − b[j]`, sorted: what [`kth_difference`]
    /// finds without making them all.
    fn all_differences(a: &[f64], b: &[f64]) -> Vec<f64> {
        let mut d: Vec<f64> = a
            .iter()
            .flat_map(|x| b.iter().map(move |y| x - y))
            .collect();
        d.sort_by(f64::total_cmp);
        d
    }

    /// Samples whose differences outnumber [`GATHERED`] many times over,
    /// with ties and without: every difference sought is the one sorting
    /// them all gives.
    #[test]
    fn the_kth_difference_of_large_samples_is_the_sorted_ones() {
        let mut rng = Rng(7);
        for case in 0..6 {
            let (n1, n2) = ([300, 500, 120][case % 3], [400, 500, 900][case % 3]);
            let tied = case >= 3;
            let mut draw = |n: usize, by: f64| -> Vec<f64> {
                (0..n)
                    .map(|_| {
                        let x = 1e5
                            * (1.0 + 0.1 * normal_quantile(rng.unit().clamp(1e-9, 1.0 - 1e-9)))
                            + by;
                        if tied { (x / 1e3).round() * 1e3 } else { x }
                    })
                    .collect()
            };
            let (sa, sb) = (sorted(&draw(n1, 2e3)), sorted(&draw(n2, 0.0)));
            let d = all_differences(&sa, &sb);
            let n = d.len();
            for k in [1, 2, n / 100, n / 2, n / 2 + 1, n - n / 100, n - 1, n] {
                assert_eq!(kth_difference(&sa, &sb, k), d[k - 1], "case {case} k {k}");
            }
        }
        // Minor faults of a command that touches the same pages every run:
        // a few values, each thousands of times.
        let (a, b): (Vec<f64>, Vec<f64>) = (
            (0..500).map(|i| f64::from(52 + i % 3)).collect(),
            (0..500).map(|i| f64::from(52 + i % 2)).collect(),
        );
        let (sa, sb) = (sorted(&a), sorted(&b));
        let d = all_differences(&sa, &sb);
        for k in [1, 1000, d.len() / 2, d.len() / 2 + 1, d.len()] {
            assert_eq!(kth_difference(&sa, &sb, k), d[k - 1], "tied, k {k}");
        }
    }

    #[test]
    fn ratio_interval_agrees_with_scipy_bootstrap() {
        for c in fixture().ratio_of_medians {
            let r = ratio_of_medians(&c.a, &c.b, 0.95, 1).unwrap();
            assert!((r.ratio - c.ratio).abs() < 1e-12);
            // Both are Monte Carlo estimates: agree to a fifth of the width.
            let slack = (c.high - c.low) / 5.0;
            assert!(
                (r.low - c.low).abs() <= slack,
                "{r:?} vs {} {}",
                c.low,
                c.high
            );
            assert!(
                (r.high - c.high).abs() <= slack,
                "{r:?} vs {} {}",
                c.low,
                c.high
            );
            assert_eq!(Some(r), ratio_of_medians(&c.a, &c.b, 0.95, 1), "seeded");
        }
    }

    /// P(the median of a resample of `n` sorted values has index <= j),
    /// n odd: at least k = (n + 1) / 2 of the n draws land at or below j.
    fn exact_median_cdf(n: usize, j: usize) -> f64 {
        let p = (j + 1) as f64 / n as f64;
        let k = n.div_ceil(2);
        let mut choose = 1.0f64;
        let mut sum = 0.0;
        for i in 0..=n {
            if i > 0 {
                choose = choose * (n - i + 1) as f64 / i as f64;
            }
            if i >= k {
                sum += choose * p.powi(i as i32) * (1.0 - p).powi((n - i) as i32);
            }
        }
        sum
    }

    #[test]
    fn median_of_a_resample_is_drawn_with_the_exact_distribution() {
        // Odd n: against the binomial formula.
        let odd: Vec<f64> = (0..9).map(f64::from).collect();
        let d = MedianOfResample::new(&odd).unwrap();
        let mut rng = super::Rng::new(3);
        let draws = 40_000;
        let mut counts = [0usize; 9];
        for _ in 0..draws {
            counts[d.draw(&mut rng) as usize] += 1;
        }
        let mut cum = 0;
        for (j, c) in counts.iter().enumerate() {
            cum += c;
            let want = exact_median_cdf(9, j);
            let got = cum as f64 / draws as f64;
            assert!((got - want).abs() < 0.01, "index {j}: {got} vs {want}");
        }
        // Even n: against building the resamples, value by value.
        let even = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0];
        let d = MedianOfResample::new(&even).unwrap();
        let mut direct = std::collections::BTreeMap::<u64, (f64, f64)>::new();
        for _ in 0..draws {
            let fast = d.draw(&mut rng);
            let mut r: Vec<f64> = (0..6).map(|_| even[rng.below(6)]).collect();
            r.sort_by(f64::total_cmp);
            let built = (r[2] + r[3]) / 2.0;
            direct.entry(fast.to_bits()).or_default().0 += 1.0;
            direct.entry(built.to_bits()).or_default().1 += 1.0;
        }
        let distance: f64 =
            direct.values().map(|(a, b)| (a - b).abs()).sum::<f64>() / 2.0 / draws as f64;
        assert!(distance < 0.02, "total variation distance {distance}");
    }

    #[test]
    fn normal_tail_matches_known_values() {
        // P(Z > z) from tables (R's pnorm(z, lower.tail = FALSE)).
        for (z, p) in [
            (0.0, 0.5),
            (1.0, 0.158_655_253_931_457_05),
            (1.959_963_984_540_054, 0.025),
            (3.0, 0.001_349_898_031_630_094_6),
            (5.0, 2.866_515_718_791_939e-7),
            (-2.0, 0.977_249_868_051_820_8),
        ] {
            let got = normal_sf(z);
            assert!((got - p).abs() <= 1e-13 + 1e-10 * p, "{z}: {got} vs {p}");
        }
    }

    /// A command compared with itself: two samples from one distribution.
    /// The test should call them different about 5% of the time; over 20
    /// seeded repetitions at least 19 must say "no significant difference".
    #[test]
    fn same_distribution_is_no_significant_difference_in_19_of_20() {
        let mut rng = super::Rng::new(42);
        let mut draw = |n: usize| -> Vec<f64> {
            (0..n)
                .map(|_| {
                    // Skewed, like run times: 10 ms plus an exponential tail.
                    10_000_000.0 - 400_000.0 * (1.0 - rng.unit()).ln()
                })
                .collect()
        };
        let mut same = 0;
        for _ in 0..20 {
            let (a, b) = (draw(30), draw(30));
            let r = mann_whitney(&a, &b).unwrap();
            let ci = ratio_of_medians(&a, &b, 0.95, 7).unwrap();
            assert!(ci.low <= ci.ratio && ci.ratio <= ci.high);
            if r.p >= 0.05 {
                same += 1;
            }
        }
        assert!(same >= 19, "only {same} of 20");
        // And the test does tell a 5% shift apart.
        let a = draw(30);
        let b: Vec<f64> = draw(30).iter().map(|x| x * 1.05).collect();
        assert!(mann_whitney(&a, &b).unwrap().p < 0.05);
    }

    #[test]
    fn empty_or_constant_samples() {
        assert!(mann_whitney(&[], &[1.0]).is_none());
        let r = mann_whitney(&[3.0; 5], &[3.0; 5]).unwrap();
        assert_eq!(r.p, 1.0);
        assert!(ratio_of_medians(&[1.0], &[0.0], 0.95, 1).is_none());
        let r = ratio_of_medians(&[2.0; 4], &[1.0; 4], 0.95, 1).unwrap();
        assert_eq!((r.ratio, r.low, r.high), (2.0, 2.0, 2.0));
    }

    proptest! {
        #[test]
        fn summary_invariants(v in proptest::collection::vec(-1e9f64..1e9, 1..60)) {
            let s = summarize(&v).unwrap();
            prop_assert_eq!(s.count, v.len());
            prop_assert!(s.min <= s.median && s.median <= s.max);
            prop_assert!(s.min <= s.mean + 1e-6 && s.mean <= s.max + 1e-6);
            prop_assert!(s.min <= s.p95 && s.p95 <= s.max);
            prop_assert!(s.mad >= 0.0);
            if let Some(sd) = s.stddev { prop_assert!(sd >= 0.0); }
            for i in outliers(&v) { prop_assert!(i < v.len()); }
            if let Some(rho) = spearman_vs_order(&v) { prop_assert!((-1.0 - 1e-9..=1.0 + 1e-9).contains(&rho)); }
        }
    }
}
