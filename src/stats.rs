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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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
