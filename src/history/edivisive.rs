//! Change points of one series: E-divisive means (Matteson and James,
//! 2014) split into sliding windows and merged as Apache Otava 0.8 does
//! (`otava/analysis.py`, after Fleming et al., "Hunter", ICPE 2023), with a
//! deterministic significance test (Student's t on the two sides of a
//! point, `ttest`) in place of permutations.
//!
//! The steps, one function each:
//! - `split`: windows of [`Params::window`] points, half a window apart;
//!   in each, E-divisive picks the split that maximises the energy
//!   distance between its two sides (`best_split`) and keeps splitting
//!   while the t-test passes at a relaxed p-value (ten times the maximum,
//!   as Otava does). The union of what the windows find are the weak
//!   change points.
//! - `merge`: each weak point is tested between its neighbours; the
//!   weakest (largest p-value, or if all pass the smallest relative change
//!   under [`Params::min_magnitude`]) is dropped and its neighbours tested
//!   again, until every point left is significant.
//!
//! [`Method::Otava`] is those steps as Otava has them, for comparison.
//! [`Method::Tally`] (the default) changes four things, each measured in
//! `benches/history_otava.py`:
//! 1. Lone outliers are screened out before the split: a point further
//!    than five robust deviations from the medians of the ten points
//!    before it and the ten after it, where those two medians agree, is an
//!    outlier, not a change (Otava 0.8 reports a pair of change points
//!    around each such point). The newest point has no points after it
//!    and is never screened; a change point with only the newest point
//!    after it is *pending* (one more point tells a change from an
//!    outlier), and a point left alone between two change points is an
//!    outlier too.
//! 2. A change point's p-value is corrected for the choice of its place:
//!    the best of `m` possible splits of its two segments is only as
//!    significant as `m` times its own p-value (Bonferroni). Without it,
//!    100 stationary series of 200 points gave Otava 19 change points at
//!    p ≤ 0.001.
//! 3. When the merge drops a point, the two points beside it are tested
//!    again (Otava retests the point after it and the one after that, so
//!    the point before keeps a p-value computed against a segment that no
//!    longer exists, and real steps are dropped for it).
//! 4. Each point kept is moved, between its neighbours, to the split that
//!    best separates the two means (least squares), since the window that
//!    found it saw only part of each segment.
//!
//! A segment's spread is at least the noise of its own points, where the
//! points carry one (the standard error of each point's median, from its
//! samples), so two points that agree by chance do not look exact.

/// How change points are found; the defaults are Otava's.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Params {
    /// Points in each window of the split step (Otava's `window_len`, 50).
    pub window: usize,
    /// The largest p-value a change point may have (Otava's
    /// `max_pvalue`, 0.001).
    pub max_pvalue: f64,
    /// The smallest relative change a change point may have, as a
    /// fraction (Otava's `min_magnitude`, 0: any significant change).
    pub min_magnitude: f64,
    /// Otava's steps alone, or with tally's four changes.
    pub method: Method,
}

impl Default for Params {
    fn default() -> Params {
        Params {
            window: 50,
            max_pvalue: 0.001,
            min_magnitude: 0.0,
            method: Method::Tally,
        }
    }
}

/// Which steps find the change points (see the module's documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// Otava's steps with tally's four changes: lone outliers screened,
    /// p-values corrected for the choice of place, both neighbours
    /// retested, places refined.
    Tally,
    /// Apache Otava 0.8's `compute_change_points`, step for step.
    Otava,
}

/// What was found in a series.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Analysis {
    /// The change points, oldest first.
    pub change_points: Vec<ChangePoint>,
    /// Points screened as lone outliers (indices into the series).
    pub outliers: Vec<usize>,
    /// A change with only the newest point after it: too early to call.
    pub pending: Option<ChangePoint>,
}

/// One change point and the test of its two sides.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChangePoint {
    /// The first point after the change (an index into the series).
    pub index: usize,
    /// The last point before it (outliers between are in neither side).
    pub last_before: usize,
    pub stats: Stats,
}

/// The two sides of a change point, as the t-test saw them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stats {
    pub mean_before: f64,
    pub mean_after: f64,
    pub std_before: f64,
    pub std_after: f64,
    pub n_before: usize,
    pub n_after: usize,
    /// The t-test's own p-value.
    pub p_value: f64,
    /// The p-value the verdict uses: `p_value` times the splits it was
    /// chosen from ([`Method::Tally`]), or `p_value` ([`Method::Otava`]).
    pub p_adjusted: f64,
}

impl Stats {
    /// The relative change from before to after (0 when before is 0, as
    /// Otava has it).
    pub fn forward_change(&self) -> f64 {
        if self.mean_before == 0.0 {
            0.0
        } else {
            self.mean_after / self.mean_before - 1.0
        }
    }

    /// The larger of the relative changes either way (Otava's
    /// `change_magnitude`).
    pub fn magnitude(&self) -> f64 {
        let back = if self.mean_after == 0.0 {
            0.0
        } else {
            self.mean_before / self.mean_after - 1.0
        };
        self.forward_change().abs().max(back.abs())
    }
}

/// The change points of `values`, oldest first; `noise[i]` is the standard
/// error of point `i` (0 or absent where unknown).
pub fn analyze(values: &[f64], noise: &[f64], params: &Params) -> Analysis {
    let params = Params {
        window: params.window.max(2),
        ..*params
    };
    let noise_of = |i: usize| noise.get(i).copied().unwrap_or(0.0);
    if params.method == Method::Otava {
        let seq = Seq::new(values.to_vec(), Vec::new(), params.method);
        let cps = merge(split(&seq, &params), &seq, &params);
        return Analysis {
            change_points: cps
                .iter()
                .map(|c| c.mapped(&identity(values.len())))
                .collect(),
            ..Analysis::default()
        };
    }
    let mut outliers = lone_outliers(values, noise);
    // A point left alone between two change points is an outlier too;
    // screening it changes the series, so look again (a few times at most).
    for _ in 0..4 {
        let keep: Vec<usize> = (0..values.len())
            .filter(|i| outliers.binary_search(i).is_err())
            .collect();
        let seq = Seq::new(
            keep.iter().map(|&i| values[i]).collect(),
            keep.iter().map(|&i| noise_of(i)).collect(),
            params.method,
        );
        let mut cps = merge(split(&seq, &params), &seq, &params);
        cps = merge(refine(&seq, cps), &seq, &params);
        let lone: Vec<usize> = lone_points(&cps).into_iter().map(|i| keep[i]).collect();
        if lone.is_empty() {
            let pending = pending_point(&seq, &mut cps, &params).map(|c| c.mapped(&keep));
            return Analysis {
                change_points: cps.iter().map(|c| c.mapped(&keep)).collect(),
                outliers,
                pending,
            };
        }
        outliers.extend(lone);
        outliers.sort_unstable();
        outliers.dedup();
    }
    // Still lone points after four passes: report what the last pass
    // left, the lone points among the outliers.
    let keep: Vec<usize> = (0..values.len())
        .filter(|i| outliers.binary_search(i).is_err())
        .collect();
    let seq = Seq::new(
        keep.iter().map(|&i| values[i]).collect(),
        keep.iter().map(|&i| noise_of(i)).collect(),
        params.method,
    );
    let mut cps = merge(split(&seq, &params), &seq, &params);
    let pending = pending_point(&seq, &mut cps, &params).map(|c| c.mapped(&keep));
    Analysis {
        change_points: cps.iter().map(|c| c.mapped(&keep)).collect(),
        outliers,
        pending,
    }
}

fn identity(n: usize) -> Vec<usize> {
    (0..n).collect()
}

/// A series as the steps see it: values, each point's noise, and which
/// method's test applies.
struct Seq {
    x: Vec<f64>,
    noise: Vec<f64>,
    method: Method,
    /// Running sums for long segments: of `x - shift`, its square, and the
    /// noise's square (entry `i` covers points before `i`).
    sums: Vec<[f64; 3]>,
    shift: f64,
}

/// Segments up to this long are summed point by point (as NumPy would);
/// longer ones from the running sums, in constant time.
const DIRECT: usize = 4096;

impl Seq {
    fn new(x: Vec<f64>, noise: Vec<f64>, method: Method) -> Seq {
        let mut seq = Seq {
            shift: 0.0,
            sums: Vec::new(),
            x,
            noise,
            method,
        };
        if seq.x.len() > DIRECT {
            // Sums of values less one of them: the squares then hold the
            // spread, not the level, and lose no digits to it.
            let shift = seq.x[seq.x.len() / 2];
            let mut acc = [0.0; 3];
            seq.sums.reserve(seq.x.len() + 1);
            seq.sums.push(acc);
            for (i, v) in seq.x.iter().enumerate() {
                let d = v - shift;
                let e = seq.noise.get(i).copied().unwrap_or(0.0);
                acc = [acc[0] + d, acc[1] + d * d, acc[2] + e * e];
                seq.sums.push(acc);
            }
            seq.shift = shift;
        }
        seq
    }
}

/// A change point inside the steps: an index into [`Seq::x`].
#[derive(Debug, Clone, Copy)]
struct Cp {
    index: usize,
    stats: Stats,
}

impl Cp {
    /// The change point in the series' own indices (`keep[i]` is the
    /// series index of the steps' point `i`).
    fn mapped(&self, keep: &[usize]) -> ChangePoint {
        let at = |i: usize| keep.get(i).copied().unwrap_or(i);
        ChangePoint {
            index: at(self.index),
            last_before: at(self.index.saturating_sub(1)),
            stats: self.stats,
        }
    }
}

impl Seq {
    /// The t-test of `x[lo..at]` against `x[at..hi]`.
    fn test(&self, lo: usize, at: usize, hi: usize) -> Stats {
        let (m1, s1) = self.mean_std(lo, at);
        let (m2, s2) = self.mean_std(at, hi);
        let (n1, n2) = (at - lo, hi - at);
        let p = super::ttest::two_sided_p(m1, s1, n1, m2, s2, n2);
        let p_adjusted = match self.method {
            Method::Otava => p,
            Method::Tally => (p * (n1 + n2).saturating_sub(1).max(1) as f64).min(1.0),
        };
        Stats {
            mean_before: m1,
            mean_after: m2,
            std_before: s1,
            std_after: s2,
            n_before: n1,
            n_after: n2,
            p_value: p,
            p_adjusted,
        }
    }

    /// Mean and population standard deviation (NumPy's `std`) of
    /// `x[lo..hi]`; with [`Method::Tally`], the deviation is at least the
    /// root mean square of the points' own noise.
    fn mean_std(&self, lo: usize, hi: usize) -> (f64, f64) {
        let part = &self.x[lo..hi];
        if part.is_empty() {
            return (0.0, 0.0);
        }
        if part.len() > DIRECT && self.sums.len() == self.x.len() + 1 {
            let (a, b) = (self.sums[lo], self.sums[hi]);
            let n = part.len() as f64;
            let mean = (b[0] - a[0]) / n;
            let var = ((b[1] - a[1]) / n - mean * mean).max(0.0);
            let mut std = var.sqrt();
            if self.method == Method::Tally && !self.noise.is_empty() {
                std = std.max(((b[2] - a[2]) / n).max(0.0).sqrt());
            }
            return (mean + self.shift, std);
        }
        let n = part.len() as f64;
        let mean = part.iter().sum::<f64>() / n;
        let var = if part.len() >= 2 {
            part.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n
        } else {
            0.0
        };
        let mut std = var.sqrt();
        if self.method == Method::Tally && !self.noise.is_empty() {
            let noise = &self.noise[lo..hi.min(self.noise.len())];
            let ms = noise.iter().map(|e| e * e).sum::<f64>() / n;
            std = std.max(ms.sqrt());
        }
        (mean, std)
    }

    /// Whether any split of the whole series could pass the t-test at the
    /// level `critical` was made for (it holds each length's
    /// [`Critical::t`]): the first split E-divisive proposes is tested
    /// with the same degrees of freedom as every other, and the p-value
    /// falls as |t| grows, so when no split's |t| reaches the critical
    /// value, the proposal fails too and the window has no change point
    /// (found in linear time, where E-divisive's search is quadratic).
    /// The level carries a margin of a millionth of itself, far above
    /// the rounding of these sums (about 1e-12 of t), so no split that
    /// passes is ever skipped. Squares are compared, and the first split
    /// that reaches the value ends the search.
    fn may_split(&self, critical: &mut Critical) -> bool {
        let n = self.x.len();
        if n < 3 {
            return true;
        }
        let shift = self.x[0];
        let mut pre = Vec::with_capacity(n + 1);
        let mut acc = [0.0f64; 3];
        pre.push(acc);
        for (i, v) in self.x.iter().enumerate() {
            let d = v - shift;
            let e = self.noise.get(i).copied().unwrap_or(0.0);
            acc = [acc[0] + d, acc[1] + d * d, acc[2] + e * e];
            pre.push(acc);
        }
        let floor = self.method == Method::Tally && !self.noise.is_empty();
        let side = |lo: usize, hi: usize| -> (f64, f64) {
            let k = (hi - lo) as f64;
            let mean = (pre[hi][0] - pre[lo][0]) / k;
            let mut var = if hi - lo >= 2 {
                ((pre[hi][1] - pre[lo][1]) / k - mean * mean).max(0.0)
            } else {
                0.0
            };
            if floor {
                var = var.max((pre[hi][2] - pre[lo][2]) / k);
            }
            (mean, var)
        };
        let df = (n - 2) as f64;
        let t = critical.t(n);
        let t2 = t * t;
        for tau in 1..n {
            let (m1, v1) = side(0, tau);
            let (m2, v2) = side(tau, n);
            let (a, b) = (tau as f64, (n - tau) as f64);
            let pooled = ((a - 1.0) * v1 + (b - 1.0) * v2) / df;
            let diff = m1 - m2;
            let diff2 = diff * diff;
            let denom2 = pooled * (1.0 / a + 1.0 / b);
            if denom2 <= diff2 * 1e-24 {
                // No spread against a difference: certain.
                if diff != 0.0 {
                    return true;
                }
                continue;
            }
            if diff2 >= t2 * denom2 {
                return true;
            }
        }
        false
    }

    /// The test of a change point at `cps[k]`, between its neighbours.
    fn test_at(&self, cps: &[Cp], k: usize) -> Stats {
        let lo = if k == 0 { 0 } else { cps[k - 1].index };
        let hi = cps.get(k + 1).map_or(self.x.len(), |c| c.index);
        self.test(lo, cps[k].index, hi)
    }
}

/// The split step: E-divisive in windows of `params.window` points, at ten
/// times the maximum p-value (Otava's `split` with its first-pass level).
fn split(seq: &Seq, params: &Params) -> Vec<Cp> {
    let p = params.max_pvalue;
    let relaxed = if p < 0.05 {
        p * 10.0
    } else if p < 0.5 {
        p * 2.0
    } else {
        p
    };
    let n = seq.x.len();
    let step = params.window / 2;
    let mut found: Vec<usize> = Vec::new();
    let mut critical = Critical::new(relaxed * (1.0 + 1e-6));
    let mut start = 0;
    while start < n {
        let end = (start + params.window).min(n);
        let window = Seq::new(
            seq.x[start..end].to_vec(),
            seq.noise
                .get(start..end)
                .map(<[f64]>::to_vec)
                .unwrap_or_default(),
            seq.method,
        );
        let new: Vec<usize> = detect(&window, relaxed, &mut critical)
            .iter()
            .map(|i| i + start)
            .collect();
        let last = new.last().copied().unwrap_or(0);
        start = last.max(start + step);
        for i in new {
            if !found.contains(&i) {
                found.push(i);
            }
        }
    }
    found.sort_unstable();
    let placeholder = Stats {
        mean_before: 0.0,
        mean_after: 0.0,
        std_before: 0.0,
        std_after: 0.0,
        n_before: 0,
        n_after: 0,
        p_value: 1.0,
        p_adjusted: 1.0,
    };
    let mut cps: Vec<Cp> = found
        .into_iter()
        .map(|index| Cp {
            index,
            stats: placeholder,
        })
        .collect();
    for k in 0..cps.len() {
        cps[k].stats = seq.test_at(&cps, k);
    }
    cps
}

/// E-divisive on one window: split the segment with the best candidate
/// while its t-test passes at `level` (Otava's `ChangePointDetector` with
/// its t-test tester). Returns indices into the window, ascending.
fn detect(window: &Seq, level: f64, critical: &mut Critical) -> Vec<usize> {
    let n = window.x.len();
    if !window.may_split(critical) {
        return Vec::new();
    }
    let sums = PairSums::new(&window.x);
    let mut cps: Vec<usize> = Vec::new();
    loop {
        let mut bounds: Vec<usize> = Vec::with_capacity(cps.len() + 2);
        bounds.push(0);
        bounds.extend(&cps);
        bounds.push(n);
        let mut best: Option<(usize, usize, usize, f64)> = None;
        for pair in bounds.windows(2) {
            let (lo, hi) = (pair[0], pair[1]);
            if hi - lo < 2 {
                continue;
            }
            let (at, q) = best_split(&sums, lo, hi);
            if best.is_none_or(|b| q > b.3) {
                best = Some((lo, at, hi, q));
            }
        }
        let Some((lo, at, hi, _)) = best else {
            break;
        };
        if window.test(lo, at, hi).p_value <= level {
            let pos = cps.partition_point(|&c| c < at);
            cps.insert(pos, at);
        } else {
            break;
        }
    }
    cps
}

/// The |t| a split of a window must reach to pass at a p-value, by the
/// window's length (windows are mostly one length: each found once).
struct Critical {
    p: f64,
    by_len: Vec<f64>,
}

impl Critical {
    fn new(p: f64) -> Critical {
        Critical {
            p,
            by_len: Vec::new(),
        }
    }

    /// The [`super::ttest::critical_t`] of a window of `n` points.
    fn t(&mut self, n: usize) -> f64 {
        if self.by_len.len() <= n {
            self.by_len.resize(n + 1, f64::NAN);
        }
        if self.by_len[n].is_nan() {
            self.by_len[n] = super::ttest::critical_t(self.p, (n - 2) as f64);
        }
        self.by_len[n]
    }
}

/// Sums of distances within a window: `row[t][z]` is Σ_{i<t} |x_i − x_z|.
struct PairSums {
    n: usize,
    row: Vec<f64>,
}

impl PairSums {
    fn new(x: &[f64]) -> PairSums {
        let n = x.len();
        // By t, then z: each step adds |x_t − x_z| for every z at once (no
        // chain of dependent additions, so it vectorises).
        let mut row = vec![0.0; (n + 1) * n];
        for (t, &xt) in x.iter().enumerate() {
            let (done, next) = row.split_at_mut((t + 1) * n);
            let prev = &done[t * n..];
            for ((acc, &p), &xz) in next[..n].iter_mut().zip(prev).zip(x) {
                *acc = p + (xt - xz).abs();
            }
        }
        PairSums { n, row }
    }

    /// Σ_{lo≤i<hi} |x_i − x_z|.
    fn between(&self, z: usize, lo: usize, hi: usize) -> f64 {
        self.row[hi * self.n + z] - self.row[lo * self.n + z]
    }
}

/// The split of `x[lo..hi]` (E-divisive's candidate): the τ, lo < τ < hi,
/// of the pair τ < κ ≤ hi that maximises the energy statistic
/// Q(x[lo..τ], x[τ..κ]), and that maximum. Ties go to the first in NumPy's
/// `argmax` order over Otava's matrix (rows τ, columns κ, zeros below the
/// diagonal), so the same τ is chosen.
fn best_split(sums: &PairSums, lo: usize, hi: usize) -> (usize, f64) {
    let m = hi - lo - 1;
    // 1/j for every count a term divides by.
    let inv: Vec<f64> = (0..=hi - lo + 1)
        .map(|j| if j == 0 { 0.0 } else { 1.0 / j as f64 })
        .collect();
    // The largest Q above the diagonal and the first (row, column) it is at.
    let mut best = (usize::MAX, usize::MAX, f64::NEG_INFINITY);
    let mut within_left = 0.0;
    for i in 0..m {
        let tau = lo + 1 + i;
        let n = tau - lo;
        // Pairs inside x[lo..tau]: add the pairs of x[tau - 1] with those before it.
        within_left += sums.between(tau - 1, lo, tau - 1);
        let mut cross = 0.0;
        let mut within_right = 0.0;
        for j in i..m {
            let kappa = lo + 2 + j;
            let y = kappa - 1;
            cross += sums.between(y, lo, tau);
            within_right += sums.between(y, tau, y);
            let k = kappa - tau;
            let total = inv[n + k];
            let a = 2.0 * total * cross;
            // inv[0] is 0: no pairs on a side of one point.
            let b = 2.0 * k as f64 * total * inv[n - 1] * within_left;
            let c = 2.0 * n as f64 * total * inv[k - 1] * within_right;
            let q = a - b - c;
            if q > best.2 {
                best = (i, j, q);
            }
        }
    }
    // Below the diagonal Otava's matrix holds zeros, the first at row 1,
    // column 0 in NumPy's `argmax` order: it wins over a best below 0, and
    // over a best of 0 that comes after it.
    let (i, _, q) = best;
    if m >= 2 && (q < 0.0 || q == 0.0 && i >= 1) {
        return (lo + 2, 0.0);
    }
    (lo + 1 + i.min(m.saturating_sub(1)), q)
}

/// The merge step: drop the weakest point until every point is
/// significant at `params.max_pvalue` and changes by more than
/// `params.min_magnitude` (Otava's `merge`).
fn merge(mut cps: Vec<Cp>, seq: &Seq, params: &Params) -> Vec<Cp> {
    while !cps.is_empty() {
        let mut weakest = first_max(&cps, |c| c.stats.p_adjusted);
        if cps[weakest].stats.p_adjusted < params.max_pvalue {
            weakest = first_max(&cps, |c| -c.stats.magnitude());
            if cps[weakest].stats.magnitude() > params.min_magnitude {
                return cps;
            }
        }
        cps.remove(weakest);
        let again: [Option<usize>; 2] = match seq.method {
            // The points beside the one dropped: now at weakest - 1 and weakest.
            Method::Tally => [weakest.checked_sub(1), Some(weakest)],
            // Otava's `recompute(i)` and `recompute(i + 1)`.
            Method::Otava => [Some(weakest), Some(weakest + 1)],
        };
        for k in again.into_iter().flatten() {
            if k < cps.len() {
                cps[k].stats = seq.test_at(&cps, k);
            }
        }
    }
    cps
}

/// The index of the first largest `key` (Python's `max`); NaN is never
/// larger.
fn first_max(cps: &[Cp], key: impl Fn(&Cp) -> f64) -> usize {
    let mut best = 0;
    for (i, c) in cps.iter().enumerate().skip(1) {
        if key(c) > key(&cps[best]) {
            best = i;
        }
    }
    best
}

/// Moves each point, between its neighbours, to the split with the largest
/// between-sides sum of squares, keeping two points a side (a point with
/// one on a side stays); then tests every point again.
fn refine(seq: &Seq, mut cps: Vec<Cp>) -> Vec<Cp> {
    let n = seq.x.len();
    for k in 0..cps.len() {
        let lo = if k == 0 { 0 } else { cps[k - 1].index };
        let hi = cps.get(k + 1).map_or(n, |c| c.index);
        // A side of one point (a pending change at the newest point) stays
        // as it is: moving it would make two points of one.
        let at = cps[k].index;
        if at - lo < 2 || hi - at < 2 {
            continue;
        }
        let part = &seq.x[lo..hi];
        let base = part[0];
        let total: f64 = part.iter().map(|v| v - base).sum();
        let len = part.len() as f64;
        let mut left = 0.0;
        let mut best = (cps[k].index, f64::NEG_INFINITY);
        for (t, v) in part.iter().enumerate().take(part.len() - 2) {
            left += v - base;
            let n1 = (t + 1) as f64;
            if t + 1 < 2 {
                continue;
            }
            let n2 = len - n1;
            let d = left / n1 - (total - left) / n2;
            let score = n1 * n2 / len * d * d;
            if score > best.1 {
                best = (lo + t + 1, score);
            }
        }
        cps[k].index = best.0;
    }
    cps.dedup_by_key(|c| c.index);
    for k in 0..cps.len() {
        cps[k].stats = seq.test_at(&cps, k);
    }
    cps
}

/// The steps' points left alone between two change points (or before the
/// first): lone outliers the screen could not see.
fn lone_points(cps: &[Cp]) -> Vec<usize> {
    let mut lone = Vec::new();
    let mut prev = 0;
    for (k, c) in cps.iter().enumerate() {
        if c.index - prev == 1 && (k > 0 || c.index == 1) {
            lone.push(prev);
        }
        prev = c.index;
    }
    lone
}

/// Takes out a last change point with only the newest point after it.
fn pending_point(seq: &Seq, cps: &mut Vec<Cp>, params: &Params) -> Option<Cp> {
    let last = cps.last()?;
    if last.index + 1 != seq.x.len() {
        return None;
    }
    let pending = cps.pop();
    if let Some(k) = cps.len().checked_sub(1) {
        cps[k].stats = seq.test_at(cps, k);
        *cps = merge(std::mem::take(cps), seq, params);
    }
    pending
}

/// Lone outliers: points further than [`SCREEN_DEVIATIONS`] robust
/// deviations beyond the medians of the [`SCREEN_CONTEXT`] points before
/// and after them, and further from both than those medians are from each
/// other. A deviation is the spread of the point's block of
/// [`SCREEN_BLOCK`] points (1.4826 MAD: a few outliers do not move it; a
/// step inside the block widens it, so the screen is the more careful
/// beside a step), and at least the point's own noise. The newest point
/// (nothing after it) is never one; the oldest needs three after it.
pub fn lone_outliers(x: &[f64], noise: &[f64]) -> Vec<usize> {
    let n = x.len();
    let mut out = Vec::new();
    let spread = block_spreads(x);
    // The points before and after, kept sorted as the screen moves along
    // (a point in, a point out), so each median is read, not sought.
    let mut before = Sorted::default();
    let mut after = Sorted::default();
    for v in x.iter().skip(1).take(SCREEN_CONTEXT) {
        after.insert(*v);
    }
    for i in 0..n {
        if i > 0 {
            if i > SCREEN_CONTEXT {
                before.replace(x[i - 1 - SCREEN_CONTEXT], x[i - 1]);
            } else {
                before.insert(x[i - 1]);
            }
            match x.get(i + SCREEN_CONTEXT) {
                Some(v) => after.replace(x[i], *v),
                None => after.remove(x[i]),
            }
        }
        if after.is_empty() || before.is_empty() && after.len < 3 {
            continue;
        }
        let med_a = after.median();
        let med_b = if before.is_empty() {
            med_a
        } else {
            before.median()
        };
        let gap = (med_b - med_a).abs();
        let d = (x[i] - med_b).abs().min((x[i] - med_a).abs());
        let own = noise.get(i).copied().unwrap_or(0.0);
        let sigma = spread[i / SCREEN_BLOCK].hypot(own);
        if d > SCREEN_DEVIATIONS * sigma + gap && d > 0.0 {
            out.push(i);
        }
    }
    out
}

/// Points whose spread is taken together.
pub const SCREEN_BLOCK: usize = 64;

/// Each block's spread: 1.4826 MAD of its values.
fn block_spreads(x: &[f64]) -> Vec<f64> {
    let mut v = Vec::with_capacity(SCREEN_BLOCK);
    x.chunks(SCREEN_BLOCK)
        .map(|chunk| {
            v.clear();
            v.extend_from_slice(chunk);
            let m = middle(&mut v);
            for d in v.iter_mut() {
                *d = (*d - m).abs();
            }
            1.4826 * middle(&mut v)
        })
        .collect()
}

/// The median of `v` (reordered).
fn middle(v: &mut [f64]) -> f64 {
    let odd = v.len() % 2 == 1;
    let mid = v.len() / 2;
    let (below, m, _) = v.select_nth_unstable_by(mid, f64::total_cmp);
    if odd {
        *m
    } else {
        (below.iter().copied().fold(f64::NEG_INFINITY, f64::max) + *m) / 2.0
    }
}

/// A few values kept in order (`f64::total_cmp`'s), in place: the screen
/// moves each point in and out of two of these, so they stay off the heap
/// and compare as integers.
struct Sorted {
    /// Each value's bits as an integer in `total_cmp`'s order.
    keys: [i64; SCREEN_CONTEXT + 1],
    len: usize,
}

impl Default for Sorted {
    fn default() -> Sorted {
        Sorted {
            keys: [0; SCREEN_CONTEXT + 1],
            len: 0,
        }
    }
}

/// `v`'s bits as an integer that orders as `f64::total_cmp` orders values.
fn total_key(v: f64) -> i64 {
    let bits = v.to_bits() as i64;
    bits ^ ((((bits >> 63) as u64) >> 1) as i64)
}

/// The value of a [`total_key`].
fn from_total_key(k: i64) -> f64 {
    f64::from_bits((k ^ ((((k >> 63) as u64) >> 1) as i64)) as u64)
}

impl Sorted {
    fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn insert(&mut self, v: f64) {
        let k = total_key(v);
        if self.len == self.keys.len() {
            return; // never: each holds at most SCREEN_CONTEXT values
        }
        let mut at = self.len;
        while at > 0 && self.keys[at - 1] >= k {
            self.keys[at] = self.keys[at - 1];
            at -= 1;
        }
        self.keys[at] = k;
        self.len += 1;
    }

    /// Removes one value equal to `v`, or else the first above it (as a
    /// search for where `v` would go finds it).
    fn remove(&mut self, v: f64) {
        let k = total_key(v);
        let Some(at) = self.keys[..self.len].iter().position(|&a| a >= k) else {
            return;
        };
        self.keys.copy_within(at + 1..self.len, at);
        self.len -= 1;
    }

    /// [`Sorted::remove`] of `old` and [`Sorted::insert`] of `new` in
    /// one pass: the gap `old` leaves slides to where `new` belongs.
    fn replace(&mut self, old: f64, new: f64) {
        let (o, k) = (total_key(old), total_key(new));
        let Some(mut at) = self.keys[..self.len].iter().position(|&a| a >= o) else {
            self.insert(new);
            return;
        };
        while at + 1 < self.len && self.keys[at + 1] < k {
            self.keys[at] = self.keys[at + 1];
            at += 1;
        }
        while at > 0 && self.keys[at - 1] > k {
            self.keys[at] = self.keys[at - 1];
            at -= 1;
        }
        self.keys[at] = k;
    }

    fn median(&self) -> f64 {
        let (v, m) = (&self.keys[..self.len], self.len / 2);
        if v.len() % 2 == 1 {
            from_total_key(v[m])
        } else {
            (from_total_key(v[m - 1]) + from_total_key(v[m])) / 2.0
        }
    }
}

/// Points on each side of a point that the outlier screen looks at.
pub const SCREEN_CONTEXT: usize = 10;
/// Robust deviations beyond which a point is a lone outlier.
pub const SCREEN_DEVIATIONS: f64 = 5.0;

#[cfg(test)]
mod tests;
