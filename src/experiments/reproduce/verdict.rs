//! The one rule by which every report decides a claim (stated for the reader in
//! `docs/reproductions/README.md`): evidence against a claim and the absence of evidence are
//! different verdicts, and runs that cannot decide are named, not counted.

/// A claim's verdict.
///
/// - **holds**: its test is significant in the claimed direction (or an interval lies wholly
///   inside the claimed bound);
/// - **does not hold**: significant in the opposite direction, or an interval that excludes the
///   claim;
/// - **not significant**: either direction, the test cannot tell it from chance (the report
///   shows the estimate and its interval);
/// - **not decided**: the runs cannot decide it, for a reason the evidence names (failed or
///   unconverged runs, ties, a test without variance, censored optima, too few folds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Holds,
    NotSignificant,
    DoesNotHold,
    NotDecided,
}

/// A claim on a computation without sampling error (a count, an enumeration, a bound proved
/// on the data): it holds or it does not.
impl From<bool> for Verdict {
    fn from(holds: bool) -> Self {
        if holds {
            Verdict::Holds
        } else {
            Verdict::DoesNotHold
        }
    }
}

impl Verdict {
    /// A comparison: `d` is the estimate in the claim's direction (positive: as claimed), `p`
    /// its test's two-sided p. Significant at `alpha`, the sign decides between holds and does
    /// not hold; not significant, either sign is "not significant". A tie (`d` = 0) or a p the
    /// test could not compute (NaN: every paired difference the same, so no variance) decides
    /// nothing.
    pub fn paired(d: f64, p: f64, alpha: f64) -> Self {
        if d == 0.0 || d.is_nan() || p.is_nan() {
            return Verdict::NotDecided;
        }
        match (d > 0.0, p < alpha) {
            (true, true) => Verdict::Holds,
            (false, true) => Verdict::DoesNotHold,
            (_, false) => Verdict::NotSignificant,
        }
    }

    /// An equivalence: a difference with 95 % interval [`low`, `high`] holds when the interval
    /// is inside ± `tol`, does not hold when it lies wholly outside (it excludes every value
    /// the claim allows), and is not significant when it straddles a bound.
    pub fn within(low: f64, high: f64, tol: f64) -> Self {
        if low.is_nan() || high.is_nan() {
            Verdict::NotDecided
        } else if low >= -tol && high <= tol {
            Verdict::Holds
        } else if high < -tol || low > tol {
            Verdict::DoesNotHold
        } else {
            Verdict::NotSignificant
        }
    }

    /// A one-sided bound ("at most `bound`"): the interval [`low`, `high`] of the quantity holds
    /// when wholly at or below it, does not hold when wholly above it, and is not significant
    /// when it straddles it.
    pub fn at_most(low: f64, high: f64, bound: f64) -> Self {
        if low.is_nan() || high.is_nan() {
            Verdict::NotDecided
        } else if high <= bound {
            Verdict::Holds
        } else if low > bound {
            Verdict::DoesNotHold
        } else {
            Verdict::NotSignificant
        }
    }

    /// A one-sided bound ("at least `bound`"): as [`Verdict::at_most`], mirrored.
    pub fn at_least(low: f64, high: f64, bound: f64) -> Self {
        Verdict::at_most(-high, -low, -bound)
    }

    /// The weaker of two verdicts (a claim of several parts holds only when every part does).
    pub fn weaker(self, other: Verdict) -> Verdict {
        let rank = |v: Verdict| match v {
            Verdict::Holds => 0,
            Verdict::NotSignificant => 1,
            Verdict::DoesNotHold => 2,
            Verdict::NotDecided => 3,
        };
        if rank(other) > rank(self) {
            other
        } else {
            self
        }
    }

    /// As the report writes it.
    pub fn words(self) -> &'static str {
        match self {
            Verdict::Holds => "holds",
            Verdict::NotSignificant => "not significant",
            Verdict::DoesNotHold => "does not hold",
            Verdict::NotDecided => "not decided",
        }
    }
}

/// Whether group `num` trains in at most `bound` of group `den`'s time, as a claimed bound is
/// tested: the ratio of each pair's seconds (run k against run k), its geometric mean and 95 %
/// interval (Student's t on the log ratios), decided by [`Verdict::at_most`]. A time from fewer
/// than three pairs decides nothing: one loaded run moved this ratio from 27 % to 104 %.
pub(crate) fn time_ratio(
    r: &super::Results,
    num: &str,
    den: &str,
    bound: f64,
) -> Option<(Verdict, String)> {
    let secs = |g: &str| -> Option<Vec<f64>> {
        r.get(g)?
            .iter()
            .map(|(_, s)| super::Metric::Seconds.of(s))
            .collect()
    };
    let (a, b) = (secs(num)?, secs(den)?);
    if a.len() != b.len() || a.is_empty() {
        return None;
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let logs: Vec<f64> = a
        .iter()
        .zip(&b)
        .filter(|(x, y)| **x > 0.0 && **y > 0.0)
        .map(|(x, y)| (x / y).ln())
        .collect();
    let seconds = format!("{:.1} s against {:.1} s", mean(&a), mean(&b));
    if logs.len() < 3 {
        return Some((
            Verdict::NotDecided,
            format!(
                "{:.0} % ({seconds}); {} timed pair(s), and a time claim needs at least three",
                100.0 * mean(&a) / mean(&b),
                logs.len()
            ),
        ));
    }
    let (m, lo, hi) = crate::eval::significance::mean_interval95(&logs)?;
    Some((
        Verdict::at_most(lo.exp(), hi.exp(), bound),
        format!(
            "{:.0} % [{:.0}, {:.0}] ({seconds}; geometric mean of {} paired ratios, 95 % interval)",
            100.0 * m.exp(),
            100.0 * lo.exp(),
            100.0 * hi.exp(),
            logs.len()
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::Verdict::{self, *};

    /// The four verdicts of a comparison, by the estimate's sign and the test's p.
    #[test]
    fn a_comparison_separates_evidence_against_from_no_evidence() {
        assert_eq!(Verdict::paired(2.4, 0.011, 0.05), Holds);
        assert_eq!(Verdict::paired(0.8, 0.30, 0.05), NotSignificant);
        // 000-table6's speaker "BP beats PW": −0.51 at p = 0.87 is no refutation.
        assert_eq!(Verdict::paired(-0.51, 0.87, 0.05), NotSignificant);
        assert_eq!(Verdict::paired(-3.0, 0.001, 0.05), DoesNotHold);
        // A tie, and a test without variance, decide nothing.
        assert_eq!(Verdict::paired(0.0, 1.0, 0.05), NotDecided);
        assert_eq!(Verdict::paired(1.0, f64::NAN, 0.05), NotDecided);
        assert_eq!(Verdict::paired(-1.0, f64::NAN, 0.05), NotDecided);
    }

    /// An interval inside the tolerance holds, wholly outside it does not, across it is not
    /// significant; a bound alike.
    #[test]
    fn intervals_decide_equivalences_and_bounds() {
        assert_eq!(Verdict::within(-0.2, 0.3, 0.5), Holds);
        assert_eq!(Verdict::within(-0.2, 0.9, 0.5), NotSignificant);
        assert_eq!(Verdict::within(0.6, 0.9, 0.5), DoesNotHold);
        assert_eq!(Verdict::within(-0.9, -0.6, 0.5), DoesNotHold);
        assert_eq!(Verdict::at_most(0.2, 0.45, 0.5), Holds);
        assert_eq!(Verdict::at_most(0.3, 0.8, 0.5), NotSignificant);
        assert_eq!(Verdict::at_most(0.7, 0.8, 0.5), DoesNotHold);
        assert_eq!(Verdict::at_least(-0.8, 0.4, -1.0), Holds);
        assert_eq!(Verdict::at_least(-1.4, 0.4, -1.0), NotSignificant);
        assert_eq!(Verdict::at_least(-2.0, -1.2, -1.0), DoesNotHold);
        assert_eq!(Verdict::within(f64::NAN, 0.1, 0.5), NotDecided);
    }

    #[test]
    fn the_weaker_part_decides_a_joint_claim() {
        assert_eq!(Holds.weaker(NotSignificant), NotSignificant);
        assert_eq!(DoesNotHold.weaker(NotDecided), NotDecided);
        assert_eq!(NotSignificant.weaker(Holds), NotSignificant);
    }
}
