//! SCL's schedules (004): selections Z drawn anew every `resample_every` iterations with θ kept
//! (each block a fresh L-BFGS start), then, with `auto_beta`, 004's Algorithm 1 — alternate
//! choosing β (eq. 16, the Hadamard approximation) and refitting θ from the last θ until β
//! settles.

use super::{Context, Schedule};
use crate::error::Result;
use crate::estimators::beta::diag_covariances;
use crate::estimators::{EstimatorSpec, SelectionPolicy};
use crate::optim::{LbfgsSpec, OptimResult, StopReason};
use crate::run::summary::BetaRound;

/// Rounds of 004's Algorithm 1 at most.
pub const MAX_BETA_ROUNDS: usize = 5;

pub struct Scl {
    pub policy: SelectionPolicy,
}

impl Schedule for Scl {
    fn fit(&self, cx: &mut Context, theta0: Vec<f64>) -> Result<OptimResult> {
        let fit = self.resampled(cx, theta0)?;
        if self.policy.auto_beta {
            self.beta_rounds(cx, fit)
        } else {
            Ok(fit)
        }
    }
}

impl Scl {
    /// Fits in blocks of `resample_every` iterations, a new Z (the policy's seed moved on) for
    /// each; one fit when the policy does not resample.
    fn resampled(&self, cx: &mut Context, theta0: Vec<f64>) -> Result<OptimResult> {
        let every = self.policy.resample_every;
        let max_iter = cx.spec.optimiser.max_iter;
        let obj = cx.objective;
        let opt = cx.optimiser_for(if every > 0 { every } else { max_iter });
        let mut fit = cx.minimize(obj, theta0, &opt)?;
        if every == 0 {
            return Ok(fit);
        }
        let mut done = fit.iterations;
        let mut block = 0u64;
        while fit.reason == StopReason::MaxIterations && done < max_iter {
            block += 1;
            let mut policy = self.policy.clone();
            policy.seed = self.policy.seed.wrapping_add(block);
            cx.curve.continue_fit();
            let opt = cx.optimiser_for(every.min(max_iter - done));
            fit = refit(cx, policy, fit.theta, &opt)?;
            done += fit.iterations;
            cx.summary.resamples = block as usize;
        }
        fit.iterations = done;
        Ok(fit)
    }

    /// 004 Algorithm 1 from a first fit.
    fn beta_rounds(&self, cx: &mut Context, mut fit: OptimResult) -> Result<OptimResult> {
        let mut policy = self.policy.clone();
        let mut done = fit.iterations;
        let lambdas: Vec<f64> = policy.groups.iter().flatten().map(|x| x.lambda).collect();
        for _ in 0..MAX_BETA_ROUNDS {
            if fit.reason == StopReason::Cancelled {
                break;
            }
            let k = diag_covariances(cx.family.model(), cx.instances, &policy, &fit.theta)?;
            let (beta, j) = k.best_beta(&lambdas);
            let old: Vec<f64> = policy.groups.iter().flatten().map(|x| x.beta).collect();
            cx.summary.beta_rounds.push(BetaRound {
                beta: beta.clone(),
                j,
                iterations: fit.iterations,
            });
            if old.iter().zip(&beta).all(|(a, b)| (a - b).abs() < 1e-3) {
                break;
            }
            policy.set_betas(&beta);
            cx.curve.continue_fit();
            let opt = cx.spec.optimiser.clone();
            fit = refit(cx, policy.clone(), fit.theta, &opt)?;
            done += fit.iterations;
        }
        fit.iterations = done;
        Ok(fit)
    }
}

/// SCL refitted from θ under another policy (a resampled Z, or new β), same prior and threads.
fn refit(
    cx: &mut Context,
    policy: SelectionPolicy,
    theta: Vec<f64>,
    opt: &LbfgsSpec,
) -> Result<OptimResult> {
    let est = EstimatorSpec::Scl { policy }.build(cx.family.model())?;
    let obj = cx.objective_for(est.as_ref())?;
    cx.minimize(&obj, theta, opt)
}
