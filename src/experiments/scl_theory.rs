//! SCL's theory on 004's Boltzmann machines (§3.1, Prop. 2, §8.1): the machine at θ0, the
//! mixtures of Fig. 2, their curves of relative efficiency against λ, and a policy's expected
//! FLOPs per example. The Theory pane, `piecewise-lab theory` and `reproduce 004-fig1/2` all
//! compute through here.

use crate::data::synth_loopy::paper_theta;
use crate::error::Result;
use crate::estimators::scl::{
    component_flops, components, ComponentFamily, Selection, SelectionPolicy,
};
use crate::eval::asymptotic::{asymptotic_variance, Efficiency};
use crate::graph::boltzmann::{BoltzmannMachine, BoltzmannOptions};
use crate::graph::{Family, Instance};

/// An m-node Boltzmann machine, its graph and parameters θ0.
pub struct Machine {
    pub bm: BoltzmannMachine,
    pub inst: Instance,
    pub theta: Vec<f64>,
}

impl Machine {
    /// At 004's θ0 (`paper_theta`), or at the couplings given.
    pub fn new(m: usize, couplings: Option<&[f64]>) -> Result<Machine> {
        let bm = BoltzmannMachine::new(m, BoltzmannOptions::default())?;
        let inst = bm.graph()?;
        let c = couplings.map_or_else(|| paper_theta(m), <[f64]>::to_vec);
        let theta = bm.theta(&c, &[])?;
        Ok(Machine { bm, inst, theta })
    }

    /// det and trace of the policy's asymptotic variance over the MLE's, both forms.
    pub fn efficiency(&self, policy: &SelectionPolicy) -> Result<Efficiency> {
        asymptotic_variance(self.bm.model(), &self.inst, &self.theta, policy)?.efficiency()
    }

    /// Expected paper FLOPs per example (004 §3.1): each family's components' costs times its
    /// selection rate λ.
    pub fn expected_flops(&self, policy: &SelectionPolicy) -> f64 {
        policy
            .groups
            .iter()
            .flatten()
            .map(|part| part.lambda * self.family_flops(part.family).1)
            .sum()
    }

    /// A family's components on this machine and their FLOPs per example when all are
    /// selected.
    pub fn family_flops(&self, family: ComponentFamily) -> (usize, f64) {
        let p = self.bm.model().n_params;
        let comps = components(family, &self.inst);
        let per = comps
            .iter()
            .map(|a| component_flops(family, &self.inst, a, p))
            .sum();
        (comps.len(), per)
    }
}

/// A Monte Carlo of the SCL estimator relative to the MLE's asymptotic variance, as Fig. 2's
/// curves are: det and trace ratios of the fits' empirical variance, with 95 % intervals.
#[derive(Clone, Debug, serde::Serialize)]
pub struct RelativeMc {
    /// `None` when the empirical covariance is singular (no more fits than parameters).
    pub det: Option<f64>,
    pub det_ci: Option<(f64, f64)>,
    pub trace: f64,
    pub trace_ci: (f64, f64),
    pub n: usize,
    pub reps: usize,
    /// Parameters: a determinant needs more fits than this.
    pub dim: usize,
}

impl Machine {
    /// `policy` fitted `reps` times on `n` fresh samples from θ0 (see
    /// [`crate::experiments::monte_carlo::monte_carlo`]), relative to the MLE's asymptotic
    /// variance on this machine. The Theory pane's points and `theory --monte-carlo`.
    pub fn relative_monte_carlo(
        &self,
        policy: &SelectionPolicy,
        (n, reps, seed): (usize, usize, u64),
        cancel: &std::sync::atomic::AtomicBool,
        progress: &(dyn Fn(usize) + Sync),
    ) -> Result<RelativeMc> {
        use crate::eval::asymptotic::log_det;
        let v = asymptotic_variance(self.bm.model(), &self.inst, &self.theta, policy)?;
        let mc = crate::experiments::monte_carlo::monte_carlo(
            &self.bm,
            &self.theta,
            policy,
            (n, reps, seed),
            cancel,
            progress,
        )?;
        let (dm, tm) = (log_det(v.ml.view())?, v.ml.diag().sum());
        Ok(RelativeMc {
            det: mc.log_det.map(|d| (d - dm).exp()),
            det_ci: mc.log_det_ci.map(|(a, b)| ((a - dm).exp(), (b - dm).exp())),
            trace: mc.trace / tm,
            trace_ci: (mc.trace_ci.0 / tm, mc.trace_ci.1 / tm),
            n,
            reps: mc.reps,
            dim: mc.dim,
        })
    }
}

/// Fig. 2's mixture `λ PL(k+1) + (1 − λ) PL(k)`: the higher order selected with probability λ,
/// the lower with 1 − λ, both with weight 1.
pub fn mixture(k: usize, lambda: f64, selection: Selection) -> Result<SelectionPolicy> {
    let text = format!("{lambda}:1*pl{} + {}:1*pl{k}", k + 1, 1.0 - lambda);
    SelectionPolicy::parse(&text, selection, 0)
}

/// One curve of Fig. 2: the mixture of orders k and k + 1, and per λ the point
/// `[λ, det paper, det exact, trace paper, trace exact]`.
#[derive(Clone, Debug)]
pub struct TheoryCurve {
    pub k: usize,
    pub points: Vec<[f64; 5]>,
}

/// Fig. 2's curves for the orders `ks` on `machine`, at λ = 0, 1/steps, …, 1.
pub fn fig2_curves(
    machine: &Machine,
    ks: &[usize],
    steps: usize,
    selection: Selection,
) -> Result<Vec<TheoryCurve>> {
    let m = machine.inst.n_vars();
    let mut out = vec![];
    for &k in ks.iter().filter(|&&k| k < m) {
        let mut points = vec![];
        for i in 0..=steps {
            let l = i as f64 / steps as f64;
            let e = machine.efficiency(&mixture(k, l, selection)?)?;
            points.push([l, e.det_paper, e.det_exact, e.trace_paper, e.trace_exact]);
        }
        out.push(TheoryCurve { k, points });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 004 §3.1's FLOPs on the 5-node machine (P = 10): FL P·(2^5 + 1) = 330, PL1 5 components
    /// of P·(2 + 1/5) = 22, PL2 10 of P·(4 + 1/10) = 41; a mixture pays each at its rate.
    #[test]
    fn expected_flops_are_the_papers_costs_at_the_selection_rates() {
        let m = Machine::new(5, None).unwrap();
        let f = |t: &str| {
            m.expected_flops(&SelectionPolicy::parse(t, Selection::Independent, 0).unwrap())
        };
        assert!((f("1:1*fl") - 330.0).abs() < 1e-9);
        assert!((f("1:1*pl1") - 110.0).abs() < 1e-9);
        assert!((f("1:1*pl2") - 410.0).abs() < 1e-9);
        assert!((f("0.7:1*pl1 + 0.3:1*pl2") - (0.7 * 110.0 + 0.3 * 410.0)).abs() < 1e-9);
    }

    /// At λ = 0 and 1 the selection is not random, so the exact form equals the paper's; FL's
    /// efficiency is 1 by definition.
    #[test]
    fn both_forms_agree_where_selection_is_deterministic() {
        let m = Machine::new(5, None).unwrap();
        for c in fig2_curves(&m, &[1, 2], 2, Selection::Independent).unwrap() {
            for p in [c.points[0], *c.points.last().unwrap()] {
                assert!((p[1] - p[2]).abs() < 1e-9 * p[1], "{p:?}");
                assert!((p[3] - p[4]).abs() < 1e-9 * p[3], "{p:?}");
            }
            assert!(
                c.points[1][2] > c.points[1][1],
                "random selection costs variance"
            );
        }
        let fl = SelectionPolicy::parse("1:1*fl", Selection::Independent, 0).unwrap();
        let e = m.efficiency(&fl).unwrap();
        assert!((e.det_paper - 1.0).abs() < 1e-9 && (e.trace_exact - 1.0).abs() < 1e-9);
    }
}
