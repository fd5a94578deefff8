//! Per-state scaling (001 §3, 003 §3: "a per-subset multiplicative factor α_s Λ_s ... learned
//! via traditional global inference"): with the weights of a locally trained chain held fixed,
//! one factor α_{y′} per source state (and one for the start) multiplies row y′ of every
//! position's score matrix, and the α maximise the CRF's conditional log-likelihood of the
//! training data. The papers give no prior for α; ours is N(1, σ²) with the run's σ², so
//! without evidence α stays at 1 (the unscaled model).

use crate::error::{Error, Result};
use crate::graph::{Instance, Model};
use crate::inference::transitions::{scaled_log_likelihood, Transitions};
use crate::optim::{minimize, Evaluation, LbfgsSpec, Objective, Prior, StopReason};
use rayon::prelude::*;
use std::sync::atomic::AtomicBool;

/// The fitted scales, as a run records them.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct PerStateScaling {
    /// One per label (source state y′), then the start's.
    pub alpha: Vec<f64>,
    /// The labels, in the order of `alpha` (the start is `<start>`).
    pub states: Vec<String>,
    /// Training log-likelihood of the CRF with the unscaled weights (α = 1), and after.
    pub log_likelihood_before: f64,
    pub log_likelihood_after: f64,
    pub iterations: usize,
    pub stop_reason: Option<StopReason>,
    pub seconds: f64,
}

/// Σ_i log p_α(y*_i | x_i) − ‖α − 1‖²/(2σ²) over fixed per-position matrices.
struct ScalingObjective<'a> {
    transitions: Vec<Transitions>,
    gold: Vec<&'a [u32]>,
    prior: Prior,
    l: usize,
}

impl Objective for ScalingObjective<'_> {
    fn n_params(&self) -> usize {
        self.l + 1
    }
    fn evaluate(&self, alpha: &[f64], grad: Option<&mut [f64]>) -> Evaluation {
        let k = self.l + 1;
        let want = grad.is_some();
        let (value, g) = self
            .transitions
            .par_iter()
            .zip(&self.gold)
            .fold(
                || (0.0, vec![0.0; k], Transitions::default()),
                |(v, mut g, mut work), (tr, gold)| {
                    let ll = scaled_log_likelihood(
                        tr,
                        &mut work,
                        alpha,
                        gold,
                        want.then_some(g.as_mut_slice()),
                    );
                    (v + ll, g, work)
                },
            )
            .map(|(v, g, _)| (v, g))
            .reduce(
                || (0.0, vec![0.0; k]),
                |(a, mut ga), (b, gb)| {
                    ga.iter_mut().zip(&gb).for_each(|(x, y)| *x += y);
                    (a + b, ga)
                },
            );
        let s2 = self.prior.sigma2;
        let penalty = s2.map_or(0.0, |s2| {
            alpha.iter().map(|a| (a - 1.0) * (a - 1.0)).sum::<f64>() / (2.0 * s2)
        });
        if let Some(out) = grad {
            for (j, o) in out.iter_mut().enumerate() {
                *o = -g[j] + s2.map_or(0.0, |s2| (alpha[j] - 1.0) / s2);
            }
        }
        Evaluation {
            objective: -value + penalty,
            value,
            ..Default::default()
        }
    }
}

/// Fits α with θ fixed. `labels` names the states for the record.
pub fn fit(
    model: &Model,
    instances: &[Instance],
    theta: &[f64],
    labels: &[String],
    prior: Prior,
    opt: &LbfgsSpec,
    cancel: &AtomicBool,
) -> Result<PerStateScaling> {
    let t0 = std::time::Instant::now();
    let l = match instances.first().and_then(|i| i.chain.as_ref()) {
        Some(c) => c.l,
        None => {
            return Err(Error::invalid(
                "per-state scaling needs a linear chain (scales per source state)",
            ))
        }
    };
    let mut gold = Vec::with_capacity(instances.len());
    for inst in instances {
        if inst.chain.is_none() {
            return Err(Error::invalid("per-state scaling needs linear chains"));
        }
        gold.push(crate::estimators::need_gold(inst)?);
    }
    let transitions: Vec<Transitions> = instances
        .par_iter()
        .map_init(Vec::new, |phi, inst| {
            phi.clear();
            phi.resize(inst.table_len, 0.0);
            model.build_tables(theta, inst, phi, &mut Vec::new());
            let mut tr = Transitions::default();
            tr.fill(inst, inst.chain.as_ref().expect("checked"), phi);
            tr
        })
        .collect();
    let obj = ScalingObjective {
        transitions,
        gold,
        prior,
        l,
    };
    let ones = vec![1.0; l + 1];
    let before = obj.evaluate(&ones, None).value;
    let r = minimize(&obj, ones, opt, cancel, &mut |_, _| {})?;
    let after = obj.evaluate(&r.theta, None).value;
    let mut states = labels.to_vec();
    states.push("<start>".into());
    Ok(PerStateScaling {
        alpha: r.theta,
        states,
        log_likelihood_before: before,
        log_likelihood_after: after,
        iterations: r.iterations,
        stop_reason: Some(r.reason),
        seconds: t0.elapsed().as_secs_f64(),
    })
}
