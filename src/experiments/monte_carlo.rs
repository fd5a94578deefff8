//! The Monte Carlo check on SCL's asymptotic variance (004 Prop. 2): fit the estimator on many
//! fresh data sets drawn from θ0 and measure the spread of √n(θ̂ − θ0). It trains, so it sits
//! above `train` and `eval`; the theory it checks is `eval::asymptotic`.

use crate::data::synth_loopy::boltzmann_samples;
use crate::data::Corpus;
use crate::error::{Error, Result};
use crate::estimators::objective::DatasetObjective;
use crate::estimators::{EstimatorSpec, SelectionPolicy};
use crate::eval::asymptotic::log_det;
use crate::graph::Family;
use crate::optim::{minimize, LbfgsSpec, Prior};
use ndarray::{Array2, Axis};
use rayon::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The empirical variance of √n(θ̂ − θ0) over replications: `reps` data sets of `n` samples
/// drawn exactly from a Boltzmann machine at θ0, each fitted by the SCL estimator with a fresh
/// Z (no prior). The check on [`crate::eval::asymptotic::asymptotic_variance`]: its exact form must match.
#[derive(Clone, Debug, serde::Serialize)]
pub struct MonteCarlo {
    pub n: usize,
    pub reps: usize,
    pub trace: f64,
    /// `None` when the empirical covariance is singular — always when `reps` ≤ the number of
    /// parameters, since `reps` centred draws span at most `reps − 1` dimensions.
    pub log_det: Option<f64>,
    /// Parameters (the covariance is dim × dim).
    pub dim: usize,
    /// `trace` ± 1.96 jackknife standard errors over the replications: the Monte Carlo's own
    /// error, drawn as an error bar (D23). Leave-one-out keeps every resample's covariance
    /// full-rank where a bootstrap's repeated draws would not.
    pub trace_ci: (f64, f64),
    /// The same interval for `log_det`; `None` when the determinant is.
    pub log_det_ci: Option<(f64, f64)>,
}

/// Trace and log-determinant of the empirical covariance of `draws[idx]` (p parameters each);
/// the determinant only when there are more draws than parameters.
fn spread(draws: &[Vec<f64>], idx: &[usize], p: usize) -> (f64, Option<f64>) {
    let r = idx.len();
    // The draws as rows, centred: cov = XᵀX / (r − 1).
    let mut x = Array2::from_shape_fn((r, p), |(i, j)| draws[idx[i]][j]);
    let mean = x.sum_axis(Axis(0)) / r as f64;
    x -= &mean;
    let cov = x.t().dot(&x) / (r - 1) as f64;
    (
        cov.diag().sum(),
        if r > p {
            log_det(cov.view()).ok()
        } else {
            None
        },
    )
}

/// `est` ± 1.96 jackknife standard errors from the leave-one-out estimates `loo`.
fn jackknife_95(est: f64, loo: &[f64]) -> (f64, f64) {
    let r = loo.len() as f64;
    let mean = loo.iter().sum::<f64>() / r;
    let se = ((r - 1.0) / r * loo.iter().map(|x| (x - mean).powi(2)).sum::<f64>()).sqrt();
    (est - 1.96 * se, est + 1.96 * se)
}

/// Runs the Monte Carlo of [`MonteCarlo`] on rayon's pool; `progress` gets the replications
/// finished so far. `cancel` stops it between fits.
pub fn monte_carlo(
    bm: &crate::graph::boltzmann::BoltzmannMachine,
    theta0: &[f64],
    policy: &SelectionPolicy,
    (n, reps, seed): (usize, usize, u64),
    cancel: &std::sync::atomic::AtomicBool,
    progress: &(dyn Fn(usize) + Sync),
) -> Result<MonteCarlo> {
    if reps < 2 {
        return Err(Error::invalid(
            "a Monte Carlo needs at least 2 replications",
        ));
    }
    let done = AtomicUsize::new(0);
    let draws: Vec<Vec<f64>> = (0..reps as u64)
        .into_par_iter()
        .map(|r| -> Result<Vec<f64>> {
            if cancel.load(Ordering::Relaxed) {
                return Err(Error::Cancelled);
            }
            let corpus = Corpus {
                path: "monte-carlo".into(),
                sequences: boltzmann_samples(bm.m, theta0, &[], n, seed + 1000 + r)?,
                n_columns: 1,
            };
            let insts = bm.instances(&corpus)?;
            let mut p = policy.clone();
            p.seed = seed + 5000 + r;
            let est = EstimatorSpec::Scl { policy: p }.build(bm.model())?;
            let obj =
                DatasetObjective::new(bm.model(), &insts, est.as_ref(), Prior { sigma2: None }, 1)?;
            let opt = LbfgsSpec {
                max_iter: 300,
                delta: 1e-12,
                epsilon: 1e-9,
                ..LbfgsSpec::default()
            };
            let res = minimize(&obj, vec![0.0; theta0.len()], &opt, cancel, &mut |_, _| {})?;
            progress(done.fetch_add(1, Ordering::Relaxed) + 1);
            Ok(res
                .theta
                .iter()
                .zip(theta0)
                .map(|(a, b)| (n as f64).sqrt() * (a - b))
                .collect())
        })
        .collect::<Result<_>>()?;
    let p = theta0.len();
    let all: Vec<usize> = (0..reps).collect();
    let (tr, ld) = spread(&draws, &all, p);
    // Leave-one-out: how far another Monte Carlo of the same size could land.
    let loo: Vec<(f64, Option<f64>)> = (0..reps)
        .into_par_iter()
        .map(|out| {
            let idx: Vec<usize> = (0..reps).filter(|&i| i != out).collect();
            spread(&draws, &idx, p)
        })
        .collect();
    let trace_ci = jackknife_95(tr, &loo.iter().map(|b| b.0).collect::<Vec<_>>());
    let dets: Option<Vec<f64>> = loo.iter().map(|b| b.1).collect();
    let log_det_ci = ld.zip(dets).map(|(d, ds)| jackknife_95(d, &ds));
    Ok(MonteCarlo {
        n,
        reps,
        trace: tr,
        log_det: ld,
        dim: p,
        trace_ci,
        log_det_ci,
    })
}
