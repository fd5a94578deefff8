//! Consistency by a rule that can fail (004-consistency): the slope of log error against log n
//! over the largest sample sizes, with its interval — a consistent estimator's error falls like
//! n^-0.5, a biased one's levels off at its bias (slope 0).

use super::Results;

/// The slope that separates a consistent estimator's rate (−0.5) from a bias floor (0).
pub(super) const CONSISTENT_SLOPE: f64 = -0.25;

/// (n, ‖θ̂ − θ0‖) of every run at each sample size in `ns`; `None` when a size has no runs.
pub(super) fn error_points(
    r: &Results,
    group: &dyn Fn(usize) -> String,
    ns: &[usize],
) -> Option<Vec<(f64, f64)>> {
    let mut out = vec![];
    for &n in ns {
        let runs = r.get(&group(n)).filter(|v| !v.is_empty())?;
        for (_, s) in runs {
            out.push((n as f64, s.param_error?));
        }
    }
    Some(out)
}

/// The least-squares slope of log error against log n with its 95 % interval (Student's t
/// on N − 2 degrees of freedom); `None` below three points, two sizes, or a zero error.
pub(super) fn log_slope(points: &[(f64, f64)]) -> Option<(f64, f64, f64)> {
    if points.len() < 3 || points.iter().any(|&(n, e)| n <= 0.0 || e <= 0.0) {
        return None;
    }
    let xy: Vec<(f64, f64)> = points.iter().map(|&(n, e)| (n.ln(), e.ln())).collect();
    let k = xy.len() as f64;
    let (mx, my) = (
        xy.iter().map(|p| p.0).sum::<f64>() / k,
        xy.iter().map(|p| p.1).sum::<f64>() / k,
    );
    let sxx: f64 = xy.iter().map(|p| (p.0 - mx).powi(2)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let b = xy.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum::<f64>() / sxx;
    let sse: f64 = xy.iter().map(|p| (p.1 - my - b * (p.0 - mx)).powi(2)).sum();
    let se = (sse / (k - 2.0) / sxx).sqrt();
    let h = crate::eval::significance::t975(k - 2.0) * se;
    Some((b, b - h, b + h))
}

#[cfg(test)]
mod tests {
    /// The consistency rule can fail: errors falling like 1/√n (with ±10 % noise) give a slope
    /// near −0.5 and hold; a bias floor, 0.5 + 1/√n, levels off (slope about −0.1 over
    /// n = 1000…10000) and does not hold; the interval is Student's on the fit.
    #[test]
    fn the_consistency_slope_tells_a_bias_from_a_rate() {
        use super::super::Verdict;
        use super::{log_slope, CONSISTENT_SLOPE};
        let noise = [0.9, 1.1, 1.0, 0.95, 1.05];
        let pts = |f: &dyn Fn(f64) -> f64| -> Vec<(f64, f64)> {
            [1000.0, 3000.0, 10000.0]
                .iter()
                .flat_map(|&n| noise.iter().map(move |z| (n, z)))
                .map(|(n, z)| (n, f(n) * z))
                .collect()
        };
        let (b, lo, hi) = log_slope(&pts(&|n: f64| 1.0 / n.sqrt())).unwrap();
        assert!(
            (b + 0.5).abs() < 0.05 && lo < b && b < hi,
            "{b} [{lo}, {hi}]"
        );
        assert_eq!(Verdict::at_most(lo, hi, CONSISTENT_SLOPE), Verdict::Holds);
        let (b, lo, hi) = log_slope(&pts(&|n: f64| 0.5 + 1.0 / n.sqrt())).unwrap();
        assert!(b > -0.15, "{b}");
        assert_eq!(
            Verdict::at_most(lo, hi, CONSISTENT_SLOPE),
            Verdict::DoesNotHold,
            "{b} [{lo}, {hi}]"
        );
        // By hand: two sizes, exact powers: slope exactly −0.5, no residual.
        let (b, lo, hi) = log_slope(&[(100.0, 0.1), (10000.0, 0.01), (100.0, 0.1)]).unwrap();
        assert!((b + 0.5).abs() < 1e-12 && (hi - lo).abs() < 1e-9);
        assert!(log_slope(&[(100.0, 0.1), (100.0, 0.2), (100.0, 0.3)]).is_none());
    }
}
