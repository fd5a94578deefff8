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

/// Per-subset scaling (003 §3: "calibrate the magnitude of the parameters Λ_s across each
/// subset s, by learning a per-subset multiplicative factor α_s Λ_s ... via traditional global
/// inference"), as a run records it. The calibrated weights α_{s(i)} θ_i are the run's model.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct SubsetScaling {
    /// One per subset, in the order of `subsets`.
    pub alpha: Vec<f64>,
    pub subsets: Vec<String>,
    /// Training log-likelihood (exact) before (α = 1) and after.
    pub log_likelihood_before: f64,
    pub log_likelihood_after: f64,
    pub iterations: usize,
    pub stop_reason: Option<StopReason>,
    pub seconds: f64,
}

/// Σ_i log p(y*_i | x_i; α ∘ θ) − ‖α − 1‖²/(2σ²), exact ML on the instances. Its gradient
/// is the weights' gradient at α ∘ θ folded by subset: ∂/∂α_s = Σ_{i∈s} θ_i ∂ℓ/∂θ′_i.
struct SubsetObjective<'a> {
    ml: crate::estimators::objective::DatasetObjective<'a>,
    theta: &'a [f64],
    of: &'a [u32],
    k: usize,
    prior: Prior,
    /// θ′ and its gradient, reused across evaluations.
    work: std::sync::Mutex<(Vec<f64>, Vec<f64>)>,
}

impl Objective for SubsetObjective<'_> {
    fn n_params(&self) -> usize {
        self.k
    }
    fn evaluate(&self, alpha: &[f64], grad: Option<&mut [f64]>) -> Evaluation {
        let mut work = self.work.lock().unwrap_or_else(|e| e.into_inner());
        let (scaled, g) = &mut *work;
        for ((x, &t), &s) in scaled.iter_mut().zip(self.theta).zip(self.of) {
            *x = alpha[s as usize] * t;
        }
        let want = grad.is_some();
        let e = self.ml.evaluate(scaled, want.then_some(g.as_mut_slice()));
        let s2 = self.prior.sigma2;
        let penalty = s2.map_or(0.0, |s2| {
            alpha.iter().map(|a| (a - 1.0) * (a - 1.0)).sum::<f64>() / (2.0 * s2)
        });
        if let Some(out) = grad {
            out.fill(0.0);
            for ((&gi, &t), &s) in g.iter().zip(self.theta).zip(self.of) {
                out[s as usize] += gi * t;
            }
            for (j, o) in out.iter_mut().enumerate() {
                *o += s2.map_or(0.0, |s2| (alpha[j] - 1.0) / s2);
            }
        }
        Evaluation {
            objective: e.objective + penalty,
            value: e.value,
            ops: e.ops,
            ..Default::default()
        }
    }
}

/// Fits one α per subset of `subsets` with θ fixed (exact ML, `threads` workers); returns the
/// record and the calibrated weights α_{s(i)} θ_i. `progress` sees every iteration (one may
/// take seconds: each is exact inference over the training set).
#[allow(clippy::too_many_arguments)]
pub fn fit_subsets(
    model: &Model,
    instances: &[Instance],
    theta: &[f64],
    subsets: &crate::graph::family::ParameterSubsets,
    prior: Prior,
    opt: &LbfgsSpec,
    threads: usize,
    cancel: &AtomicBool,
    progress: &mut dyn FnMut(&crate::optim::IterReport),
) -> Result<(SubsetScaling, Vec<f64>)> {
    let t0 = std::time::Instant::now();
    if subsets.of.len() != theta.len() || subsets.names.is_empty() {
        return Err(Error::invalid(format!(
            "per-subset scaling: {} subsets over {} of the model's {} weights",
            subsets.names.len(),
            subsets.of.len(),
            theta.len()
        )));
    }
    let est = crate::estimators::EstimatorSpec::Ml.build(model)?;
    let ml = crate::estimators::objective::DatasetObjective::new(
        model,
        instances,
        est.as_ref(),
        Prior { sigma2: None },
        threads,
    )?;
    let k = subsets.names.len();
    let obj = SubsetObjective {
        ml,
        theta,
        of: &subsets.of,
        k,
        prior,
        work: std::sync::Mutex::new((vec![0.0; theta.len()], vec![0.0; theta.len()])),
    };
    let ones = vec![1.0; k];
    let before = obj.evaluate(&ones, None).value;
    let r = minimize(&obj, ones, opt, cancel, &mut |r, _| progress(r))?;
    let after = obj.evaluate(&r.theta, None).value;
    let calibrated = theta
        .iter()
        .zip(&subsets.of)
        .map(|(t, &s)| r.theta[s as usize] * t)
        .collect();
    Ok((
        SubsetScaling {
            alpha: r.theta,
            subsets: subsets.names.clone(),
            log_likelihood_before: before,
            log_likelihood_after: after,
            iterations: r.iterations,
            stop_reason: Some(r.reason),
            seconds: t0.elapsed().as_secs_f64(),
        },
        calibrated,
    ))
}
