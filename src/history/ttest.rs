//! Student's two-sample t-test from summary statistics, as SciPy's
//! `ttest_ind_from_stats` computes it (pooled variance, two-sided), which is
//! the significance test of Apache Otava's change points. Deterministic:
//! the p-value is the regularized incomplete beta function, evaluated by
//! its continued fraction (Lentz's method), not by resampling.

/// The two-sided p-value of the difference of two means, each given with
/// its standard deviation and count, the variances pooled (Student's t
/// with `n1 + n2 - 2` degrees of freedom). Two equal means with no spread
/// give 1 (no evidence of a difference); two different means with no
/// spread give 0.
pub fn two_sided_p(mean1: f64, std1: f64, n1: usize, mean2: f64, std2: f64, n2: usize) -> f64 {
    if n1 == 0 || n2 == 0 || n1 + n2 <= 2 {
        return 1.0;
    }
    let (a, b) = (n1 as f64, n2 as f64);
    let df = a + b - 2.0;
    let pooled = ((a - 1.0) * std1 * std1 + (b - 1.0) * std2 * std2) / df;
    let denom = (pooled * (1.0 / a + 1.0 / b)).sqrt();
    let diff = mean1 - mean2;
    if !diff.is_finite() || !denom.is_finite() {
        return 1.0;
    }
    if denom == 0.0 {
        return if diff == 0.0 { 1.0 } else { 0.0 };
    }
    let t = diff / denom;
    student_two_sided(t, df)
}

/// P(|T| ≥ |t|) for Student's t with `df` degrees of freedom.
pub fn student_two_sided(t: f64, df: f64) -> f64 {
    if t.is_nan() || df <= 0.0 {
        return 1.0;
    }
    if t.is_infinite() {
        return 0.0;
    }
    let x = df / (df + t * t);
    incomplete_beta(df / 2.0, 0.5, x).clamp(0.0, 1.0)
}

/// A |t| at or below the smallest whose two-sided p-value with `df`
/// degrees of freedom is at most `p`: every |t| whose p-value passes is at
/// least this (the p-value falls as |t| grows). Found by bisection, so a
/// check made many times costs one comparison, not a continued fraction.
pub fn critical_t(p: f64, df: f64) -> f64 {
    if p.is_nan() || p <= 0.0 || df <= 0.0 {
        return f64::INFINITY;
    }
    if p >= 1.0 {
        return 0.0;
    }
    let mut hi = 1.0f64;
    while student_two_sided(hi, df) > p {
        hi *= 2.0;
        if hi > 1e15 {
            return f64::INFINITY;
        }
    }
    let mut lo = 0.0f64;
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if student_two_sided(mid, df) > p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    // lo fails and hi passes: lo is below every |t| that passes.
    lo
}

/// The regularized incomplete beta function I_x(a, b).
fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    let front = ln_front.exp();
    // The continued fraction converges fast for x < (a + 1) / (a + b + 2);
    // otherwise use the symmetry I_x(a, b) = 1 - I_{1-x}(b, a).
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_fraction(b, a, 1.0 - x) / b
    }
}

/// The continued fraction of the incomplete beta function (Lentz).
fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    const EPS: f64 = 1e-15;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..=500 {
        let m = f64::from(m);
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < EPS {
            break;
        }
    }
    h
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7, 9 terms: about 15 digits).
fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1-x) = π / sin(πx).
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).abs().ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut sum = G[0];
    for (i, g) in G.iter().enumerate().skip(1) {
        sum += g / (x + i as f64);
    }
    let t = x + 7.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference values from SciPy (`scipy.stats.t.sf(t, df) * 2`).
    #[test]
    fn p_values_match_scipy() {
        let cases = [
            (1.0, 1.0, 0.499_999_999_999_999_56),
            (2.0, 10.0, 0.073_388_034_770_740_39),
            (3.0, 20.0, 0.007_075_898_791_211_097),
            (5.0, 48.0, 8.061_665_181_471_024e-6),
            (10.0, 198.0, 2.561_013_500_528_058_4e-19),
            (0.1, 3.0, 0.926_652_348_800_805_8),
        ];
        for (t, df, want) in cases {
            let got = student_two_sided(t, df);
            assert!(
                ((got - want) / want).abs() < 1e-8,
                "t={t} df={df}: {got} against {want}"
            );
        }
    }

    #[test]
    fn the_critical_t_parts_passing_from_failing() {
        for df in [1.0, 3.0, 48.0, 198.0, 4000.0] {
            for p in [0.5, 0.015, 0.0015, 1e-6] {
                let t = critical_t(p, df);
                assert!(student_two_sided(t, df) > p, "df {df} p {p}: {t} passes");
                assert!(
                    student_two_sided(t * (1.0 + 1e-9), df) <= p,
                    "df {df} p {p}: just above {t} fails"
                );
            }
        }
        assert_eq!(critical_t(0.0, 10.0), f64::INFINITY);
        assert_eq!(critical_t(1.0, 10.0), 0.0);
    }

    #[test]
    fn no_spread_is_certain_and_equal_means_are_not_evidence() {
        assert_eq!(two_sided_p(1.0, 0.0, 5, 2.0, 0.0, 5), 0.0);
        assert_eq!(two_sided_p(1.0, 0.0, 5, 1.0, 0.0, 5), 1.0);
        assert_eq!(two_sided_p(1.0, 0.0, 1, 2.0, 0.0, 1), 1.0);
        assert_eq!(two_sided_p(f64::NAN, 0.0, 3, 2.0, 0.0, 3), 1.0);
    }
}
