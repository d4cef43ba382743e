//! One test per example Apache Otava publishes in its own tests
//! (`tests/analysis_test.py`, `tests/change_point_divisive_test.py`,
//! `tests/series_test.py`), then tally's changes, each against what Otava
//! does with the same series.

use super::*;

fn otava(window: usize, max_pvalue: f64, min_magnitude: f64) -> Params {
    Params {
        window,
        max_pvalue,
        min_magnitude,
        method: Method::Otava,
    }
}

fn tally(window: usize, max_pvalue: f64, min_magnitude: f64) -> Params {
    Params {
        method: Method::Tally,
        ..otava(window, max_pvalue, min_magnitude)
    }
}

fn indices(a: &Analysis) -> Vec<usize> {
    a.change_points.iter().map(|c| c.index).collect()
}

const SINGLE: [f64; 20] = [
    1.02, 0.95, 0.99, 1.00, 1.12, 1.00, 1.01, 0.98, 1.01, 0.96, 0.50, 0.51, 0.48, 0.48, 0.55, 0.50,
    0.49, 0.51, 0.50, 0.49,
];

/// analysis_test.py, test_single_series: window 10, p 0.0001 → [10].
#[test]
fn otava_single_series() {
    for p in [otava(10, 0.0001, 0.0), tally(10, 0.0001, 0.0)] {
        assert_eq!(indices(&analyze(&SINGLE, &[], &p)), [10], "{p:?}");
    }
}

/// analysis_test.py, test_significance_tester: the t-test of two halves.
#[test]
fn otava_significance_tester() {
    let same = [1.00, 1.02, 1.05, 0.95, 0.98, 1.00, 1.02, 1.05, 0.95, 0.98];
    let seq = Seq::new(same.to_vec(), Vec::new(), Method::Otava);
    let p = seq.test(0, 5, 10).p_value;
    assert!(0.99 < p && p < 1.01, "{p}");
    let moved = [1.00, 1.02, 1.05, 0.95, 0.98, 0.80, 0.82, 0.85, 0.79, 0.77];
    let seq = Seq::new(moved.to_vec(), Vec::new(), Method::Otava);
    let p = seq.test(0, 5, 10).p_value;
    assert!(0.0 < p && p < 0.001, "{p}");
}

const SEQUENCE: [f64; 14] = [
    0.3, 2.4, 1.5, -0.9, -0.5, 99.7, 98.3, 99.1, 149.0, 149.7, 149.5, 149.1, 148.8, 150.0,
];

/// Q(τ, κ) as change_point_divisive_test.py computes it, pair by pair.
fn q_slow(x: &[f64], tau: usize, kappa: usize) -> f64 {
    let (xs, ys) = (&x[..tau], &x[tau..kappa]);
    let (n, m) = (xs.len() as f64, ys.len() as f64);
    let a: f64 = xs
        .iter()
        .flat_map(|a| ys.iter().map(move |b| (a - b).abs()))
        .sum::<f64>()
        * 2.0
        / (m + n);
    let pairs = |v: &[f64]| -> f64 {
        let mut s = 0.0;
        for i in 0..v.len() {
            for k in i + 1..v.len() {
                s += (v[i] - v[k]).abs();
            }
        }
        s
    };
    let b = if xs.len() > 1 {
        pairs(xs) * 2.0 * m / (m + n) / (n - 1.0)
    } else {
        0.0
    };
    let c = if ys.len() > 1 {
        pairs(ys) * 2.0 * n / (m + n) / (m - 1.0)
    } else {
        0.0
    };
    a - b - c
}

/// change_point_divisive_test.py, test_calculator_candidate: the candidate
/// and its Q equal the pair-by-pair computation's.
#[test]
fn otava_calculator_candidate() {
    let x = SEQUENCE;
    let mut best = (0, 0.0);
    for tau in 1..x.len() {
        for kappa in tau + 1..=x.len() {
            let q = q_slow(&x, tau, kappa);
            if q > best.1 {
                best = (tau, q);
            }
        }
    }
    let (tau, q) = best_split(&PairSums::new(&x), 0, x.len());
    assert_eq!(tau, best.0);
    assert!(
        (q - best.1).abs() < 1e-9 * best.1.abs(),
        "{q} against {}",
        best.1
    );
    // And inside a segment, not only over the whole series.
    let mut best = (0, f64::NEG_INFINITY);
    for tau in 3..9 {
        for kappa in tau + 1..=9 {
            let q = q_slow(&x[2..9], tau - 2, kappa - 2);
            if q > best.1 {
                best = (tau, q);
            }
        }
    }
    let (tau, q) = best_split(&PairSums::new(&x), 2, 9);
    assert_eq!(tau, best.0);
    assert!((q - best.1).abs() < 1e-9 * best.1.abs());
}

/// change_point_divisive_test.py, test_ttest: E-divisive with the t-test at
/// 0.01 over the whole sequence → [5, 8].
#[test]
fn otava_ttest_detector() {
    let seq = Seq::new(SEQUENCE.to_vec(), Vec::new(), Method::Otava);
    assert_eq!(detect(&seq, 0.01, &mut Critical::new(0.015)), [5, 8]);
}

const SERIES_1: [f64; 11] = [
    1.02, 0.95, 0.99, 1.00, 1.12, 0.90, 0.50, 0.51, 0.48, 0.48, 0.55,
];
const SERIES_2: [f64; 11] = [
    2.02, 2.03, 2.01, 2.04, 1.82, 1.85, 1.79, 1.81, 1.80, 1.76, 1.78,
];

/// series_test.py, test_change_point_detection: defaults → [6] and [4].
#[test]
fn otava_change_point_detection() {
    for p in [otava(50, 0.001, 0.0), Params::default()] {
        assert_eq!(indices(&analyze(&SERIES_1, &[], &p)), [6], "{p:?}");
        assert_eq!(indices(&analyze(&SERIES_2, &[], &p)), [4], "{p:?}");
    }
}

/// series_test.py, test_change_point_min_magnitude: 0.2 keeps series 1's
/// change (−50%) and drops series 2's (−11%).
#[test]
fn otava_min_magnitude() {
    for p in [otava(50, 0.001, 0.2), tally(50, 0.001, 0.2)] {
        let one = analyze(&SERIES_1, &[], &p);
        assert_eq!(indices(&one), [6], "{p:?}");
        assert!(one.change_points.iter().all(|c| c.stats.magnitude() >= 0.2));
        assert!(indices(&analyze(&SERIES_2, &[], &p)).is_empty(), "{p:?}");
    }
}

/// series_test.py, test_div_by_zero: a mean of 0 on one side gives a
/// change of 0 that way, not a division by zero; two change points, the
/// first at 3.
#[test]
fn otava_div_by_zero() {
    let x = [
        0.0, 0.0, 0.0, 1.00, 1.12, 0.90, 0.50, 0.51, 0.48, 0.48, 0.55,
    ];
    for p in [otava(50, 0.001, 0.0), Params::default()] {
        let a = analyze(&x, &[], &p);
        assert_eq!(a.change_points.len(), 2, "{p:?}: {:?}", indices(&a));
        assert_eq!(a.change_points[0].index, 3);
        assert_eq!(a.change_points[0].stats.forward_change(), 0.0);
        assert!(
            a.change_points
                .iter()
                .all(|c| c.stats.magnitude().is_finite())
        );
    }
}

/// A deterministic stand-in for noise: the fractional parts of multiples
/// of the golden ratio, spread to about ±1 (mean 0).
fn wobble(n: usize, seed: usize) -> Vec<f64> {
    let phi = 0.618_033_988_749_894_9;
    (0..n)
        .map(|i| {
            let u = ((i + seed * 7919) as f64 * phi).fract();
            let v = ((i * 3 + seed * 104_729 + 1) as f64 * phi * phi).fract();
            // Sum of two uniforms, centred: a triangle on (−1, 1).
            u + v - 1.0
        })
        .collect()
}

fn level(n: usize, steps: &[(usize, f64)], noise: f64, seed: usize) -> Vec<f64> {
    let w = wobble(n, seed);
    (0..n)
        .map(|i| {
            let mut v = 1000.0;
            for &(at, r) in steps {
                if i >= at {
                    v *= 1.0 + r;
                }
            }
            v * (1.0 + noise * w[i])
        })
        .collect()
}

/// Otava 0.8 reports a pair of change points around a lone outlier; tally
/// screens the outlier and reports none.
#[test]
fn a_lone_outlier_is_no_change_point() {
    let mut x = level(300, &[], 0.02, 1);
    x[70] *= 1.5;
    x[200] *= 1.3;
    let o = analyze(&x, &[], &otava(50, 0.001, 0.0));
    assert!(
        indices(&o).windows(2).any(|w| w == [70, 71]),
        "Otava's pair at the outlier: {:?}",
        indices(&o)
    );
    let t = analyze(&x, &[], &Params::default());
    assert!(t.change_points.is_empty(), "{:?}", indices(&t));
    assert_eq!(t.outliers, [70, 200]);
}

/// Two outliers side by side are still no change: the context of ten
/// points on each side outvotes them.
#[test]
fn two_adjacent_outliers_are_no_change_point() {
    let mut x = level(200, &[], 0.01, 2);
    x[100] *= 1.4;
    x[101] *= 1.5;
    let t = analyze(&x, &[], &Params::default());
    assert!(t.change_points.is_empty(), "{:?}", indices(&t));
    assert_eq!(t.outliers, [100, 101]);
}

/// A step next to an outlier is found where it is, and the outlier is
/// screened.
#[test]
fn a_step_beside_an_outlier_is_found_in_place() {
    let mut x = level(200, &[(120, 0.05)], 0.01, 3);
    x[118] *= 1.4;
    let t = analyze(&x, &[], &Params::default());
    assert_eq!(indices(&t), [120]);
    assert_eq!(t.outliers, [118]);
    let cp = t.change_points[0];
    assert_eq!(cp.last_before, 119);
    assert!((cp.stats.forward_change() - 0.05).abs() < 0.01);
}

/// The newest point alone off the level is pending, not a change point;
/// with a second point at the new level it is one.
#[test]
fn the_newest_point_alone_is_pending() {
    let exact = |n: usize, at: usize| -> Vec<f64> {
        (0..n)
            .map(|i| if i >= at { 1_030_000.0 } else { 1_000_000.0 })
            .collect()
    };
    let one = analyze(&exact(20, 19), &[], &Params::default());
    assert!(one.change_points.is_empty());
    assert_eq!(one.pending.map(|c| c.index), Some(19));
    let two = analyze(&exact(21, 19), &[], &Params::default());
    assert_eq!(indices(&two), [19]);
    assert!(two.pending.is_none());
    assert_eq!(two.change_points[0].stats.p_adjusted, 0.0);
    assert!((two.change_points[0].stats.forward_change() - 0.03).abs() < 1e-12);
}

/// An exact series with one point off between equal neighbours: an
/// outlier (a lone point), not two changes.
#[test]
fn an_exact_series_with_one_point_off() {
    let mut x = vec![500.0; 40];
    x[25] = 600.0;
    let t = analyze(&x, &[], &Params::default());
    assert!(t.change_points.is_empty());
    assert_eq!(t.outliers, [25]);
}

/// Points that agree by chance carry their own noise: two points a hair
/// apart, each from runs that spread widely, are no change.
#[test]
fn each_points_noise_bounds_the_spread() {
    let x: Vec<f64> = (0..30)
        .map(|i| if i < 28 { 100.0 } else { 100.5 })
        .collect();
    let quiet = analyze(&x, &[], &Params::default());
    assert_eq!(indices(&quiet), [28], "no noise known: exact, so a change");
    let noisy = analyze(&x, &[2.0; 30], &Params::default());
    assert!(noisy.change_points.is_empty(), "{:?}", indices(&noisy));
}

/// The correction for the choice of place: a p-value times the splits of
/// the two segments it was chosen among.
#[test]
fn p_values_are_corrected_for_the_place_chosen() {
    let x = level(120, &[(60, 0.02)], 0.01, 4);
    let t = analyze(&x, &[], &Params::default());
    assert_eq!(indices(&t), [60]);
    let s = t.change_points[0].stats;
    assert_eq!(s.n_before + s.n_after, 120);
    assert!((s.p_adjusted - (s.p_value * 119.0).min(1.0)).abs() <= 1e-12 * s.p_adjusted);
}

/// A 5% step at 100 in 2% noise, as NumPy drew it (`default_rng(1)`, the
/// 97th series of the power run in benches/history_otava.py, to 4 places).
#[rustfmt::skip]
const STEP_96: [f64; 200] = [
    100.7736, 98.8276, 98.5502, 98.1878, 100.8077, 101.0711, 101.6471, 101.5413, 99.7294, 99.5650,
    101.1352, 103.8376, 102.8259, 103.6445, 101.8402, 99.2711, 102.0927, 98.3126, 100.1240, 100.2740,
    99.7171, 102.6832, 101.0797, 99.4198, 100.9336, 102.1495, 99.8382, 100.8507, 100.3751, 100.2818,
    99.4709, 101.0630, 97.6677, 98.3173, 102.1716, 101.8959, 102.4429, 96.8806, 99.0186, 101.9703,
    100.6970, 99.5277, 99.3436, 100.8813, 98.4796, 98.1304, 102.4713, 99.4519, 99.5657, 100.1688,
    99.7478, 98.9792, 98.6086, 102.4301, 99.8647, 99.6679, 99.3062, 99.8294, 98.4736, 100.9255,
    98.2411, 101.4379, 99.3245, 98.9925, 99.5076, 101.7892, 97.1466, 101.3490, 99.4069, 96.5207,
    99.0144, 98.1177, 100.6071, 97.8337, 97.5409, 98.5188, 97.6279, 99.9587, 98.6429, 101.2667,
    97.3050, 103.2669, 98.5571, 97.8375, 97.6709, 94.3155, 96.8321, 101.3680, 101.3002, 100.1071,
    103.3297, 96.5584, 97.7220, 102.8031, 100.4501, 100.5761, 103.1056, 103.8165, 103.1417, 101.7330,
    107.2087, 106.1568, 103.2315, 103.4384, 104.2972, 103.7715, 105.3063, 102.9419, 104.8906, 106.9373,
    102.4919, 104.3565, 105.8124, 107.9076, 105.9735, 103.5653, 102.9187, 104.0173, 100.3176, 105.8486,
    108.3669, 104.6099, 104.1251, 106.5818, 107.0219, 103.8503, 107.8040, 107.9402, 105.0455, 107.4624,
    104.1645, 102.9107, 106.5778, 105.1617, 106.1094, 101.4746, 108.1687, 106.1308, 102.8939, 107.2652,
    104.6056, 103.7544, 102.7800, 104.9309, 102.2387, 104.9970, 108.7338, 105.9492, 108.2068, 102.9211,
    106.4819, 106.0531, 104.9267, 104.2533, 106.1900, 105.1289, 109.0016, 105.6688, 107.3731, 107.5108,
    108.4108, 104.9438, 108.0653, 103.3943, 107.4411, 105.5290, 106.7641, 103.1335, 101.9740, 104.3618,
    104.8349, 104.8280, 104.9154, 103.6417, 108.4221, 103.7142, 105.6596, 103.1891, 106.1652, 104.7351,
    104.3105, 103.9243, 102.1680, 105.1941, 107.6265, 106.7049, 102.2778, 105.2490, 107.3759, 105.1902,
    102.3493, 101.2094, 104.6931, 104.2222, 107.5671, 106.1783, 103.5752, 105.5441, 102.4528, 103.4966,
];

/// Otava's merge retests the wrong neighbours after a drop (the point
/// after the one dropped, and the one after that): the point before keeps
/// a p-value computed against a segment that no longer exists. Here the
/// weak points are 93, 100, 119 and 167; dropping 119 leaves 100 with its
/// p-value against [93, 100), so it is dropped next and the step is lost.
#[test]
fn both_neighbours_are_retested_after_a_drop() {
    let params = otava(50, 0.001, 0.0);
    let as_otava = Seq::new(STEP_96.to_vec(), Vec::new(), Method::Otava);
    let weak: Vec<usize> = split(&as_otava, &params).iter().map(|c| c.index).collect();
    assert_eq!(weak, [93, 100, 119, 167]);
    assert!(merge(split(&as_otava, &params), &as_otava, &params).is_empty());
    let as_tally = Seq::new(STEP_96.to_vec(), Vec::new(), Method::Tally);
    let kept: Vec<usize> = merge(split(&as_tally, &params), &as_tally, &params)
        .iter()
        .map(|c| c.index)
        .collect();
    assert_eq!(kept, [100]);
}

/// No panics, and sane output, on the degenerate series.
#[test]
fn degenerate_series() {
    for x in [
        &[][..],
        &[1.0],
        &[1.0, 2.0],
        &[1.0, 1.0, 1.0],
        &[0.0; 60],
        &[f64::MAX, -f64::MAX, f64::MAX],
    ] {
        for p in [Params::default(), otava(50, 0.001, 0.0), tally(2, 0.5, 0.0)] {
            let a = analyze(x, &[], &p);
            assert!(a.change_points.iter().all(|c| c.index < x.len()));
        }
    }
}

/// The screen written plainly, each median sought afresh.
fn lone_outliers_by_sorting(x: &[f64], noise: &[f64]) -> Vec<usize> {
    let med = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        let m = v.len() / 2;
        if v.len() % 2 == 1 {
            v[m]
        } else {
            (v[m - 1] + v[m]) / 2.0
        }
    };
    let spread: Vec<f64> = x
        .chunks(SCREEN_BLOCK)
        .map(|c| {
            let m = med(&mut c.to_vec());
            let mut dev: Vec<f64> = c.iter().map(|v| (v - m).abs()).collect();
            1.4826 * med(&mut dev)
        })
        .collect();
    let mut out = Vec::new();
    for i in 0..x.len() {
        let after = &x[i + 1..(i + 1 + SCREEN_CONTEXT).min(x.len())];
        let before = &x[i.saturating_sub(SCREEN_CONTEXT)..i];
        if after.is_empty() || before.is_empty() && after.len() < 3 {
            continue;
        }
        let med_a = med(&mut after.to_vec());
        let med_b = if before.is_empty() {
            med_a
        } else {
            med(&mut before.to_vec())
        };
        let sigma = spread[i / SCREEN_BLOCK].hypot(noise.get(i).copied().unwrap_or(0.0));
        let gap = (med_b - med_a).abs();
        let d = (x[i] - med_b).abs().min((x[i] - med_a).abs());
        if d > SCREEN_DEVIATIONS * sigma + gap && d > 0.0 {
            out.push(i);
        }
    }
    out
}

#[test]
fn the_sliding_screen_finds_what_sorting_finds() {
    for seed in 0..20 {
        let mut x = level(400, &[], 0.02, seed);
        for k in 0..12 {
            let at = (seed * 37 + k * 31) % 400;
            x[at] *= 1.2 + 0.05 * k as f64;
        }
        for v in &mut x[150 + seed % 50..] {
            *v *= 1.04;
        }
        // Ties: an exact stretch.
        for v in &mut x[300..330] {
            *v = 1234.0;
        }
        let noise: Vec<f64> = (0..400)
            .map(|i| if i % 3 == 0 { 2.0 } else { 0.0 })
            .collect();
        assert_eq!(
            lone_outliers(&x, &noise),
            lone_outliers_by_sorting(&x, &noise),
            "seed {seed}"
        );
        assert_eq!(
            lone_outliers(&x, &[]),
            lone_outliers_by_sorting(&x, &[]),
            "seed {seed}"
        );
    }
}
