//! Significance of the difference between two taggers on the same test sequences.
//!
//! [`compare_metrics`] is what `compare` and the Compare pane show: McNemar's test on tokens
//! (and on gold segments when the labels form segments), the paired t-test on wrong tokens per
//! sequence, and a paired bootstrap interval for the difference in segment F1 (or token
//! accuracy). [`compare`] keeps 001's own pairing — McNemar on sequences labelled entirely
//! right — for the reproductions of its tables.

use crate::eval::metrics::Bits;

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

/// A paired bootstrap over sequences: the difference A − B of a corpus-level score (segment F1
/// or token accuracy, in points), its 95 % percentile interval and the two-sided bootstrap
/// p-value (twice the share of resamples on the far side of 0).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Bootstrap {
    pub metric: String,
    pub difference: f64,
    pub low: f64,
    pub high: f64,
    pub p: f64,
    pub resamples: usize,
}

impl Bootstrap {
    /// "p = 0.042", or "p < 0.002" when no resample reached 0: B resamples resolve the
    /// two-sided p only down to 2/B, so 0 is never printed.
    pub fn p_text(&self) -> String {
        if self.p == 0.0 {
            format!("p < {}", 2.0 / self.resamples.max(1) as f64)
        } else {
            format!("p = {}", show_p(self.p))
        }
    }
}

/// Two runs compared on the same test items: every test that applies, and a one-line reading.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PairComparison {
    pub a: String,
    pub b: String,
    /// McNemar on tokens: `only_a` tokens A labels right and B wrong.
    pub tokens: Option<McNemar>,
    /// McNemar on gold segments found exactly by one run only.
    pub segments: Option<McNemar>,
    /// Paired t on right tokens per sequence, A − B (positive: A labels more right, the
    /// bootstrap's and McNemar's direction too).
    pub paired_t: PairedT,
    pub bootstrap: Option<Bootstrap>,
    /// The pair's p ([`PairComparison::p`]) Holm-adjusted over every pair compared with it
    /// (set by the comparison of a set of runs when it has more than three pairs, see
    /// [`holm`]); `None` otherwise or when the pair has no p.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holm_p: Option<f64>,
    /// "ml is better than pl on 412 tokens, worse on 130: p = 2e-9 (McNemar) — unlikely to
    /// be chance".
    pub reading: String,
}

/// Resamples of the paired bootstrap (fewer on very large test sets, so one comparison stays
/// under ~2·10⁸ additions).
pub fn bootstrap_resamples(sequences: usize) -> usize {
    (200_000_000 / sequences.max(1)).clamp(200, 1000)
}

/// A p-value as the reading prints it: three decimals, or one digit and an exponent below 0.001.
pub fn show_p(p: f64) -> String {
    if p.is_nan() {
        "–".into()
    } else if p < 1e-3 {
        format!("{p:.0e}")
    } else {
        format!("{p:.3}")
    }
}

/// What a p-value says, in words (0.05 the conventional threshold).
pub fn p_words(p: f64) -> &'static str {
    if p.is_nan() {
        "no test (no differences)"
    } else if p < 0.01 {
        "significant (p < 0.01)"
    } else if p < 0.05 {
        "significant at 0.05, not at 0.01"
    } else {
        "not significant: could be chance"
    }
}

/// McNemar's test on two runs' per-item right/wrong records (tokens, or gold segments
/// found); `None` when either is missing or they differ in length.
pub fn mcnemar_bits(a: &Bits, b: &Bits) -> Option<McNemar> {
    if a.is_empty() || a.len() != b.len() {
        return None;
    }
    let (mut only_a, mut only_b) = (0, 0);
    for i in 0..a.len() {
        match (a.get(i), b.get(i)) {
            (true, false) => only_a += 1,
            (false, true) => only_b += 1,
            _ => {}
        }
    }
    Some(mcnemar_counts(only_a, only_b))
}

/// Every paired test of runs A and B scored on the same items; an error names why they cannot
/// be paired (different items, or a run scored before per-item scores were kept).
pub fn compare_metrics(
    a_name: &str,
    a: &crate::eval::Metrics,
    b_name: &str,
    b: &crate::eval::Metrics,
) -> Result<PairComparison, String> {
    if a.sequence_errors.len() != b.sequence_errors.len() {
        return Err(format!(
            "{a_name} was scored on {} items and {b_name} on {}: not the same test data",
            a.sequence_errors.len(),
            b.sequence_errors.len()
        ));
    }
    for (name, m) in [(a_name, a), (b_name, b)] {
        m.check_paired()
            .map_err(|e| format!("{name}: {e}; not tested"))?;
    }
    let (pa, pb) = (&a.paired, &b.paired);
    let per_item = !pa.is_empty() && !pb.is_empty();
    if per_item && pa.gold_digest != pb.gold_digest {
        return Err(format!(
            "{a_name} and {b_name} were scored on different gold labels (the same number of \
             items, different data): their differences are not paired"
        ));
    }
    let f = |v: &[u32]| v.iter().map(|&e| e as f64).collect::<Vec<_>>();
    // Right tokens per sequence A − B = wrong tokens B − A (the sequences are the same length
    // in both): positive when A is better, as every other difference shown.
    let paired_t = paired_t(&f(&b.sequence_errors), &f(&a.sequence_errors));
    let tokens = per_item
        .then(|| mcnemar_bits(&pa.token_right, &pb.token_right))
        .flatten();
    let segments = per_item
        .then(|| mcnemar_bits(&pa.segment_found, &pb.segment_found))
        .flatten();
    let bootstrap = per_item.then(|| paired_bootstrap(a, b)).flatten();
    let reading = reading(a_name, b_name, tokens.as_ref(), &paired_t);
    Ok(PairComparison {
        a: a_name.into(),
        b: b_name.into(),
        tokens,
        segments,
        paired_t,
        bootstrap,
        holm_p: None,
        reading,
    })
}

impl PairComparison {
    /// The pair's p-value as its reading decides it: McNemar on tokens where the runs have
    /// per-token scores, else the paired t-test; `None` when there is nothing to test.
    pub fn p(&self) -> Option<f64> {
        let p = self.tokens.map_or(self.paired_t.p, |m| m.p);
        (!p.is_nan()).then_some(p)
    }
}

/// Holm–Bonferroni adjusted p-values of a family of tests (Holm 1979): sorted ascending,
/// p₍ᵢ₎ · (m − i + 1) made monotone and capped at 1, returned in the input's order. A test
/// without a p (`None`) is not in the family and stays `None`.
pub fn holm(ps: &[Option<f64>]) -> Vec<Option<f64>> {
    let mut order: Vec<usize> = (0..ps.len()).filter(|&i| ps[i].is_some()).collect();
    order.sort_by(|&i, &j| ps[i].unwrap_or(1.0).total_cmp(&ps[j].unwrap_or(1.0)));
    let m = order.len();
    let mut out = vec![None; ps.len()];
    let mut running = 0.0f64;
    for (rank, &i) in order.iter().enumerate() {
        let adjusted = (ps[i].unwrap_or(1.0) * (m - rank) as f64).min(1.0);
        running = running.max(adjusted);
        out[i] = Some(running);
    }
    out
}

fn reading(a: &str, b: &str, tokens: Option<&McNemar>, t: &PairedT) -> String {
    match tokens {
        Some(m) if m.only_a + m.only_b == 0 => {
            format!("{a} and {b} label every token alike: no difference to test")
        }
        Some(m) => {
            let (better, worse, n_better, n_worse) = if m.only_a >= m.only_b {
                (a, b, m.only_a, m.only_b)
            } else {
                (b, a, m.only_b, m.only_a)
            };
            let mut line = format!(
                "{better} is right where {worse} is wrong on {n_better} tokens, and wrong where \
                 it is right on {n_worse}: p = {} (McNemar) — {}",
                show_p(m.p),
                p_words(m.p)
            );
            // Tokens within a sequence are not independent: when the test over sequences
            // says otherwise at 0.05, the reading says so rather than read one test alone.
            if !t.p.is_nan() && (m.p < 0.05) != (t.p < 0.05) {
                line.push_str(&format!(
                    "; but the paired t-test over sequences gives p = {}: the tests disagree, \
                     so this is weak evidence",
                    show_p(t.p)
                ));
            }
            line
        }
        None => format!(
            "{a} − {b}: {:+.3} right tokens per sequence, p = {} (paired t) — {}",
            t.mean_difference,
            show_p(t.p),
            p_words(t.p)
        ),
    }
}

/// 100 · Σ numerators / Σ denominators over the sequences `idx` (with repeats): a corpus-level
/// score of a bootstrap resample.
pub fn ratio_score(parts: &[(f64, f64)], idx: &[usize]) -> f64 {
    let (num, den) = idx
        .iter()
        .fold((0.0, 0.0), |(n, d), &i| (n + parts[i].0, d + parts[i].1));
    if den > 0.0 {
        100.0 * num / den
    } else {
        0.0
    }
}

/// Each sequence's (numerator, denominator) of a run's corpus-level score — segment F1 where
/// the gold has segments (2·matched, gold + predicted), token accuracy otherwise — so a
/// resample's score is [`ratio_score`]; `None` without per-item scores.
/// `segments` says which score both runs of a comparison use.
pub fn score_parts(m: &crate::eval::Metrics, segments: bool) -> Option<Vec<(f64, f64)>> {
    let n = m.sequence_errors.len();
    if segments {
        (m.paired.segments.len() == n).then(|| {
            m.paired
                .segments
                .iter()
                .map(|s| (2.0 * s[0] as f64, (s[1] + s[2]) as f64))
                .collect()
        })
    } else {
        (m.paired.tokens.len() == n).then(|| {
            m.paired
                .tokens
                .iter()
                .zip(&m.sequence_errors)
                .map(|(&t, &e)| ((t.saturating_sub(e)) as f64, t as f64))
                .collect()
        })
    }
}

/// Whether a run's score is segment F1 (its gold has segments) rather than token accuracy.
pub fn scores_segments(m: &crate::eval::Metrics) -> bool {
    m.paired.segments.len() == m.sequence_errors.len() && m.paired.segments.iter().any(|s| s[2] > 0)
}

/// The paired bootstrap of the difference in segment F1 (token accuracy without segments):
/// sequences drawn with replacement, the same draw for both runs, seeded so it repeats.
fn paired_bootstrap(a: &crate::eval::Metrics, b: &crate::eval::Metrics) -> Option<Bootstrap> {
    let n = a.sequence_errors.len();
    if n < 2 || a.paired.tokens.len() != n || b.paired.tokens.len() != n {
        return None;
    }
    let seg = b.paired.segments.len() == n && scores_segments(a);
    let metric = if seg { "segment F1" } else { "token accuracy" };
    paired_bootstrap_ratio(metric, &score_parts(a, seg)?, &score_parts(b, seg)?)
}

/// The paired bootstrap of a difference A − B in a corpus-level ratio score (in points), from
/// each item's (numerator, denominator) — F1 is (2·matched, gold + predicted) — items drawn
/// with replacement, the same draw for both, seeded so it repeats; `None` with fewer than two
/// items or unpaired lengths.
pub fn paired_bootstrap_ratio(
    metric: &str,
    xa: &[(f64, f64)],
    xb: &[(f64, f64)],
) -> Option<Bootstrap> {
    if xb.len() != xa.len() {
        return None;
    }
    paired_bootstrap_of(metric, xa.len(), |idx| {
        ratio_score(xa, idx) - ratio_score(xb, idx)
    })
}

/// The paired bootstrap of any statistic of `n` paired items that is 0 under "no difference"
/// (a difference of scores, or a difference of two differences): `stat` of the resampled item
/// indices, items drawn with replacement, seeded so it repeats; the statistic on all items, its
/// 95 % percentile interval and the two-sided p (twice the share of resamples on the far side
/// of 0). `None` with fewer than two items.
pub fn paired_bootstrap_of(
    metric: &str,
    n: usize,
    stat: impl Fn(&[usize]) -> f64,
) -> Option<Bootstrap> {
    use rand::{Rng, SeedableRng};
    if n < 2 {
        return None;
    }
    let all: Vec<usize> = (0..n).collect();
    let difference = stat(&all);
    let resamples = bootstrap_resamples(n);
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x5eed);
    let mut idx = all;
    let mut diffs = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        idx.iter_mut().for_each(|i| *i = rng.random_range(0..n));
        diffs.push(stat(&idx));
    }
    diffs.sort_by(f64::total_cmp);
    let q = |f: f64| diffs[((f * (resamples - 1) as f64).round() as usize).min(resamples - 1)];
    let below = diffs.iter().filter(|d| **d <= 0.0).count() as f64 / resamples as f64;
    let above = diffs.iter().filter(|d| **d >= 0.0).count() as f64 / resamples as f64;
    Some(Bootstrap {
        metric: metric.into(),
        difference,
        low: q(0.025),
        high: q(0.975),
        p: (2.0 * below.min(above)).min(1.0),
        resamples,
    })
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
    mcnemar_counts(only_a, only_b)
}

/// The exact two-sided McNemar test from its discordant counts: items right by A only, by B
/// only.
pub fn mcnemar_counts(only_a: u64, only_b: u64) -> McNemar {
    let n = only_a + only_b;
    let k = only_a.min(only_b);
    // P(X ≤ k) for X ~ Bin(n, ½). For k ≤ n/2 the terms grow with i, so the largest is at k:
    // summed from k down, each term relative to it (C(n, i−1) = C(n, i) · i / (n − i + 1)),
    // until they no longer count — no table of k terms (k comes from the data: a summary
    // file may claim billions of tokens).
    let ln_top = ln_gamma(n as f64 + 1.0)
        - ln_gamma(k as f64 + 1.0)
        - ln_gamma((n - k) as f64 + 1.0)
        - n as f64 * std::f64::consts::LN_2;
    let (mut sum, mut term) = (0.0f64, 1.0f64);
    let mut i = k;
    loop {
        sum += term;
        if i == 0 || term < 1e-17 * sum {
            break;
        }
        term *= i as f64 / (n - i + 1) as f64;
        i -= 1;
    }
    let tail = (ln_top + sum.ln()).exp();
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

/// The one-sided sign test: the chance of at least `wins` of `wins + losses` untied pairs going
/// the claimed way if either way were equally likely (ties dropped).
pub fn sign_test(wins: usize, losses: usize) -> f64 {
    let n = wins + losses;
    let choose = |n: usize, k: usize| (0..k).fold(1.0, |c, i| c * (n - i) as f64 / (i + 1) as f64);
    (wins..=n).map(|k| choose(n, k)).sum::<f64>() / 2f64.powi(n as i32)
}

/// The two-sided 95 % point of Student's t with `df` degrees of freedom (bisection on
/// [`t_two_sided`]).
pub fn t975(df: f64) -> f64 {
    let (mut lo, mut hi) = (0.0, 1000.0);
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if t_two_sided(mid, df) > 0.05 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// The mean of `xs` and its 95 % interval by Student's t (folds, splits, samples); `None`
/// below two values.
pub fn mean_interval95(xs: &[f64]) -> Option<(f64, f64, f64)> {
    let n = xs.len();
    if n < 2 {
        return None;
    }
    let m = xs.iter().sum::<f64>() / n as f64;
    let sd = (xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1) as f64).sqrt();
    let h = t975((n - 1) as f64) * sd / (n as f64).sqrt();
    Some((m, m - h, m + h))
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
    #[test]
    fn t975_matches_the_tables() {
        // Student's t, two-sided 5 %: df 1 12.706, 4 2.776, 30 2.042.
        for (df, t) in [(1.0, 12.706), (4.0, 2.776), (30.0, 2.042)] {
            assert!(
                (super::t975(df) - t).abs() < 1e-3,
                "df {df}: {}",
                super::t975(df)
            );
        }
        let (m, lo, hi) = super::mean_interval95(&[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
        // sd = 1.5811, se = 0.7071, half-width 2.776 × 0.7071 = 1.963.
        assert!(
            (m - 3.0).abs() < 1e-12
                && (hi - m - 1.9632).abs() < 1e-3
                && (m - lo - 1.9632).abs() < 1e-3
        );
        assert!(super::mean_interval95(&[1.0]).is_none());
    }

    #[test]
    fn sign_test_counts_the_binomial_tail() {
        // 5 of 5: 1/32; 4 of 5: 6/32; 0 of 3: every outcome is at least as many.
        assert!((super::sign_test(5, 0) - 1.0 / 32.0).abs() < 1e-15);
        assert!((super::sign_test(4, 1) - 6.0 / 32.0).abs() < 1e-15);
        assert!((super::sign_test(0, 3) - 1.0).abs() < 1e-15);
        assert_eq!(super::sign_test(0, 0), 1.0);
    }

    /// A bootstrap where no resample crosses 0 says "p < 2/B", never "p = 0".
    #[test]
    fn a_bootstrap_p_of_zero_prints_its_resolution() {
        // Every sentence favours A: no resample can reach a difference of 0.
        let a: Vec<(f64, f64)> = (0..50).map(|_| (2.0, 2.0)).collect();
        let b: Vec<(f64, f64)> = (0..50).map(|i| (f64::from(i % 2), 2.0)).collect();
        let bs = super::paired_bootstrap_ratio("F1", &a, &b).unwrap();
        assert_eq!(bs.p, 0.0);
        assert_eq!(bs.p_text(), format!("p < {}", 2.0 / bs.resamples as f64));
        let mixed: Vec<(f64, f64)> = (0..50)
            .map(|i| (f64::from(i % 3 == 0) * 2.0, 2.0))
            .collect();
        let bs = super::paired_bootstrap_ratio("F1", &mixed, &b).unwrap();
        assert!(
            bs.p > 0.0 && bs.p_text().starts_with("p = "),
            "{}",
            bs.p_text()
        );
    }

    use super::*;

    /// The reading says when McNemar on tokens and the t-test over sequences disagree at
    /// 0.05 (lesson 4's ml / pl: 0.019 against 0.075), and says nothing more when they agree.
    #[test]
    fn the_reading_says_when_the_tests_disagree() {
        let m = McNemar {
            only_a: 137,
            only_b: 100,
            p: 0.019,
        };
        let t = |p| PairedT {
            mean_difference: -0.1,
            t: 1.8,
            df: 299,
            p,
        };
        let r = reading("ml", "pl", Some(&m), &t(0.075));
        assert!(
            r.contains("significant at 0.05") && r.contains("the tests disagree"),
            "{r}"
        );
        let r = reading("ml", "pl", Some(&m), &t(0.03));
        assert!(!r.contains("disagree"), "{r}");
    }

    /// Holm's adjustment by hand: 0.005·4, 0.01·3, 0.03·2, then 0.04·1 lifted to the 0.06
    /// before it; a pair without a p stays out of the family.
    #[test]
    fn holm_adjusts_by_rank_and_stays_monotone() {
        let h = holm(&[Some(0.01), Some(0.04), Some(0.03), Some(0.005), None]);
        let want = [Some(0.03), Some(0.06), Some(0.06), Some(0.02), None];
        for (g, w) in h.iter().zip(want) {
            match (g, w) {
                (Some(g), Some(w)) => close(*g, w, 1e-12),
                (None, None) => {}
                _ => panic!("{h:?}"),
            }
        }
        assert_eq!(holm(&[Some(0.6), Some(0.9)]), vec![Some(1.0), Some(1.0)]);
    }

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

    /// The paired tests of two runs read off the scorer's per-item record: McNemar on tokens
    /// and on gold segments counted by hand, the bootstrap interval bracketing the difference
    /// and repeatable, and runs scored on different gold labels refused.
    #[test]
    fn compare_metrics_pairs_tokens_segments_and_sequences() {
        use crate::eval::metrics::score;
        let s = |v: &str| v.split(' ').map(String::from).collect::<Vec<_>>();
        let gold = vec![s("B-NP I-NP O B-VP"), s("B-NP O O"), s("O B-PP B-NP I-NP")];
        // A misses the last NP's second token; B mislabels the first sequence's VP and one O.
        let a = vec![s("B-NP I-NP O B-VP"), s("B-NP O O"), s("O B-PP B-NP O")];
        let b = vec![
            s("B-NP I-NP O B-NP"),
            s("B-NP O B-NP"),
            s("O B-PP B-NP I-NP"),
        ];
        let (ma, mb) = (score(&gold, &a), score(&gold, &b));
        let c = compare_metrics("a", &ma, "b", &mb).unwrap();
        // Tokens: a right, b wrong at 2 (B-VP, the O); b right, a wrong at 1 (I-NP).
        let t = c.tokens.unwrap();
        assert_eq!((t.only_a, t.only_b), (2, 1));
        close(t.p, 1.0, 1e-12);
        // Gold segments (NP, VP, NP, PP, NP): a finds all but the last NP, b all but the VP.
        let g = c.segments.unwrap();
        assert_eq!((g.only_a, g.only_b), (1, 1));
        let boot = c.bootstrap.clone().unwrap();
        assert_eq!(boot.metric, "segment F1");
        close(boot.difference, ma.segments.f1 - mb.segments.f1, 1e-9);
        assert!(boot.low <= boot.difference && boot.difference <= boot.high);
        assert_eq!(compare_metrics("a", &ma, "b", &mb).unwrap(), c, "seeded");
        assert!(c
            .reading
            .starts_with("a is right where b is wrong on 2 tokens"));
        // Same number of sequences, other gold labels: refused.
        let other = vec![s("B-NP I-NP O O"), s("B-NP O O"), s("O B-PP B-NP I-NP")];
        let e = compare_metrics("a", &ma, "c", &score(&other, &a)).unwrap_err();
        assert!(e.contains("different gold labels"), "{e}");
        // A large one-sided difference is significant by every test.
        let many = |right: bool| {
            let mut sc = crate::eval::metrics::Scorer::default();
            for i in 0..200 {
                let g = s("S0 S1 S2 S3");
                let p = if right || i % 4 == 0 {
                    g.clone()
                } else {
                    s("S0 S1 S1 S3")
                };
                sc.add(&g, &p);
            }
            sc.finish()
        };
        let c = compare_metrics("good", &many(true), "bad", &many(false)).unwrap();
        assert_eq!(c.tokens.unwrap().only_a, 150);
        assert!(c.tokens.unwrap().p < 1e-40 && !c.paired_t.p.is_nan());
        let boot = c.bootstrap.unwrap();
        assert_eq!(boot.metric, "token accuracy");
        close(boot.difference, 100.0 - 81.25, 1e-9);
        assert!(boot.low > 0.0 && boot.p < 0.01);
    }

    #[test]
    fn bits_round_trip_through_json() {
        use crate::eval::metrics::Bits;
        for n in [0usize, 1, 3, 4, 63, 64, 65, 130] {
            let mut b = Bits::default();
            for i in 0..n {
                b.push(i % 3 == 0 || i % 7 == 1);
            }
            let j = serde_json::to_string(&b).unwrap();
            let back: Bits = serde_json::from_str(&j).unwrap();
            assert_eq!(back, b, "{j}");
            assert!((0..n).all(|i| back.get(i) == (i % 3 == 0 || i % 7 == 1)));
        }
        assert!(serde_json::from_str::<Bits>("\"5:f\"").is_err());
        assert!(serde_json::from_str::<Bits>("\"4:g\"").is_err());
    }

    /// McNemar's p from counts a summary file may claim (billions) comes without a table of
    /// terms, and agrees with the exact small-count values and the normal limit.
    #[test]
    fn mcnemar_counts_needs_no_table() {
        close(mcnemar_counts(3, 12).p, 0.03515625, 1e-12);
        close(mcnemar_counts(0, 1).p, 1.0, 1e-12);
        assert_eq!(mcnemar_counts(3_000_000_000, 3_000_000_000).p, 1.0);
        // 2σ below the mean of Bin(2·10⁹, ½): the two-sided normal tail, 0.0455.
        let n = 2_000_000_000u64;
        let k = n / 2 - (n as f64).sqrt() as u64;
        close(mcnemar_counts(k, n - k).p, 0.0455, 0.01);
    }
}
