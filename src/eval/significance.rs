//! Significance of the difference between two taggers on the same test sequences, the two
//! tests 001 uses: McNemar's test on per-sequence disagreements (which sequences one labels
//! entirely right and the other not) and a paired t-test on per-sequence error counts.

/// McNemar's test: `only_a` sequences right by A alone, `only_b` by B alone; `p` is the exact
/// two-sided binomial p-value of `only_a` among `only_a + only_b` under p = ½ (the exact form
/// of the test, valid for small counts too).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct McNemar {
    pub only_a: u64,
    pub only_b: u64,
    pub p: f64,
}

/// Paired t-test on per-sequence error counts: mean of (A − B), t, degrees of freedom and the
/// two-sided p-value (`NaN` when every difference is equal, so the variance is 0).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PairedT {
    pub mean_difference: f64,
    pub t: f64,
    pub df: u64,
    pub p: f64,
}

/// Both tests for one pair of runs.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PairTest {
    pub a: String,
    pub b: String,
    pub mcnemar: McNemar,
    pub paired_t: PairedT,
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7, n = 9; relative error below 1e-15).
pub fn ln_gamma(x: f64) -> f64 {
    const C: [f64; 9] = [
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
        // Reflection.
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + 7.5;
    for (i, &c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// The exact two-sided McNemar test from the per-sequence "entirely right" flags.
pub fn mcnemar(a_right: &[bool], b_right: &[bool]) -> McNemar {
    let only_a = a_right
        .iter()
        .zip(b_right)
        .filter(|(a, b)| **a && !**b)
        .count() as u64;
    let only_b = a_right
        .iter()
        .zip(b_right)
        .filter(|(a, b)| !**a && **b)
        .count() as u64;
    let n = only_a + only_b;
    let k = only_a.min(only_b);
    // P(X ≤ k) for X ~ Bin(n, ½), summed in log space.
    let ln_half_n = -(n as f64) * std::f64::consts::LN_2;
    let ln_choose = |i: u64| {
        ln_gamma(n as f64 + 1.0) - ln_gamma(i as f64 + 1.0) - ln_gamma((n - i) as f64 + 1.0)
    };
    let terms: Vec<f64> = (0..=k).map(|i| ln_choose(i) + ln_half_n).collect();
    let mx = terms.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let tail = (mx + terms.iter().map(|t| (t - mx).exp()).sum::<f64>().ln()).exp();
    McNemar {
        only_a,
        only_b,
        p: (2.0 * tail).min(1.0),
    }
}

/// Continued fraction of the regularised incomplete beta function (Numerical Recipes' betacf).
fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let tiny = 1e-300;
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < tiny {
        d = tiny;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..=10_000 {
        let m = m as f64;
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        if d.abs() < tiny {
            d = tiny;
        }
        c = 1.0 + aa / c;
        if c.abs() < tiny {
            c = tiny;
        }
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        if d.abs() < tiny {
            d = tiny;
        }
        c = 1.0 + aa / c;
        if c.abs() < tiny {
            c = tiny;
        }
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// The regularised incomplete beta function I_x(a, b).
pub fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    if x < (a + 1.0) / (a + b + 2.0) {
        ln_front.exp() * beta_cf(a, b, x) / a
    } else {
        1.0 - ln_front.exp() * beta_cf(b, a, 1.0 - x) / b
    }
}

/// Two-sided p-value of Student's t with `df` degrees of freedom: P(|T| ≥ |t|).
pub fn t_two_sided(t: f64, df: f64) -> f64 {
    incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
}

/// The paired t-test on per-sequence error counts of A and B.
pub fn paired_t(a: &[f64], b: &[f64]) -> PairedT {
    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    let n = d.len();
    let mean = d.iter().sum::<f64>() / n.max(1) as f64;
    if n < 2 {
        return PairedT {
            mean_difference: mean,
            t: f64::NAN,
            df: 0,
            p: f64::NAN,
        };
    }
    let var = d.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64;
    let t = mean / (var / n as f64).sqrt();
    let df = (n - 1) as f64;
    PairedT {
        mean_difference: mean,
        t,
        df: n as u64 - 1,
        p: if var > 0.0 {
            t_two_sided(t, df)
        } else {
            f64::NAN
        },
    }
}

/// Both tests for runs A and B from their per-sequence token error counts.
pub fn compare(a_name: &str, a: &[u32], b_name: &str, b: &[u32]) -> PairTest {
    let right = |v: &[u32]| v.iter().map(|&e| e == 0).collect::<Vec<_>>();
    let f = |v: &[u32]| v.iter().map(|&e| e as f64).collect::<Vec<_>>();
    PairTest {
        a: a_name.into(),
        b: b_name.into(),
        mcnemar: mcnemar(&right(a), &right(b)),
        paired_t: paired_t(&f(a), &f(b)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) {
        assert!((a - b).abs() <= tol * b.abs().max(1e-300), "{a} vs {b}");
    }

    /// Reference values from SciPy 1.x: `binomtest(k, n, 0.5).pvalue`, `ttest_rel`, `t.sf`.
    #[test]
    fn against_scipy() {
        let flags = |a: u64, b: u64| {
            let mut x = vec![];
            let mut y = vec![];
            x.extend(std::iter::repeat_n(true, a as usize));
            y.extend(std::iter::repeat_n(false, a as usize));
            x.extend(std::iter::repeat_n(false, b as usize));
            y.extend(std::iter::repeat_n(true, b as usize));
            // Agreements do not count.
            x.extend([true, false, true]);
            y.extend([true, false, true]);
            (x, y)
        };
        for (a, b, p) in [
            (3, 12, 0.03515625),
            (40, 60, 0.05688793364098089),
            (0, 1, 1.0),
            (480, 520, 0.2174482932041415),
        ] {
            let (x, y) = flags(a, b);
            let m = mcnemar(&x, &y);
            assert_eq!((m.only_a, m.only_b), (a, b));
            close(m.p, p, 1e-9);
        }
        let a = [3., 1., 4., 1., 5., 9., 2., 6., 5., 3., 5.];
        let b = [2., 7., 1., 8., 2., 8., 1., 8., 2., 8., 4.];
        let r = paired_t(&a, &b);
        close(r.t, -0.5629804258555594, 1e-12);
        close(r.p, 0.5858482450695152, 1e-9);
        let a = [0., 1., 0., 2., 0., 0., 1., 0., 0., 3., 0., 1.];
        let b = [1., 1., 0., 2., 1., 0., 2., 1., 0., 4., 1., 1.];
        let r = paired_t(&a, &b);
        close(r.t, -3.3166247903554, 1e-12);
        close(r.p, 0.006872303308921113, 1e-9);
        close(t_two_sided(2.5, 3.0), 0.08770664700806556, 1e-9);
        close(t_two_sided(0.3, 50.0), 0.7654208802553033, 1e-9);
        close(t_two_sided(4.0, 1000.0), 6.800991920878163e-05, 1e-8);
        assert!(paired_t(&[1., 1.], &[0., 0.]).p.is_nan());
    }
}
