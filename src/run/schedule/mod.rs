//! Training schedules: how a run's optimisation proceeds from θ0 to the fitted weights.
//!
//! Most estimators need one L-BFGS fit ([`Plain`]). Some need a procedure of their own: CAMEL's
//! outer loop ([`Camel`]: piecewise, then the dual, relinearised), NOTA's error-driven rounds
//! ([`Nota`], 003), SCL's resampled selections and 004's β heuristic ([`Scl`]). After the fit,
//! post-steps may refine the model with the weights fixed ([`PerStateScaling`], 001 §3).
//!
//! Every schedule fits through one [`Context`], which owns the optimiser settings, the cancel
//! flag, the run summary and the [`Curve`]: the curve records each iteration (and evaluates on
//! the test set every `eval_every` iterations), and a schedule that fits several times calls
//! [`Curve::continue_fit`] so iterations, evaluations, operations and seconds count on.
//!
//! Adding an estimator with a schedule of its own: its type here and a line in [`for_spec`].

pub mod camel;
mod nota;
mod plain;
mod scaling;
mod scl;

pub use camel::Camel;
pub use nota::Nota;
pub use plain::Plain;
pub use scaling::{PerStateScaling, SubsetScaling};
pub use scl::{Scl, MAX_BETA_ROUNDS};

pub use super::curve::Curve;
use super::spec::RunSpec;
use super::store::RunFiles;
use super::summary::RunSummary;
use crate::error::Result;
use crate::estimators::objective::DatasetObjective;
use crate::estimators::EstimatorSpec;
use crate::eval::Inference;
use crate::graph::{Family, Instance};
use crate::optim::{
    minimize_from, IterReport, LbfgsSpec, Objective, OptimResult, Snapshot, Start, Watch,
};
use crate::run::checkpoint::{Begin, Checkpoints};
use std::sync::atomic::AtomicBool;

/// A training procedure: fits the weights from `theta0`, recording every iteration through
/// `cx.curve`.
pub trait Schedule {
    fn fit(&self, cx: &mut Context, theta0: Vec<f64>) -> Result<OptimResult>;
    /// Whether a run of it can continue from a checkpoint: every fit goes through
    /// [`Context::minimize`], and the steps between fits depend only on the fits' results.
    fn resumable(&self) -> bool {
        true
    }
}

/// A step after the fit that refines the model with θ fixed (and may change how it decodes).
pub trait PostStep {
    /// Refines the model with `theta` fixed; returns the weights that replace it, if any.
    fn apply(&self, cx: &mut Context, theta: &[f64]) -> Result<Option<Vec<f64>>>;
}

/// The schedule a spec's estimator trains with.
pub fn for_spec(spec: &RunSpec) -> Box<dyn Schedule> {
    match &spec.estimator {
        EstimatorSpec::Camel { variant, camel } => Box::new(Camel {
            variant: *variant,
            options: *camel,
        }),
        EstimatorSpec::Nota { selection, weight } => Box::new(Nota {
            selection: selection.clone(),
            weight: *weight,
        }),
        EstimatorSpec::Scl { policy } if policy.resample_every > 0 || policy.auto_beta => {
            Box::new(Scl {
                policy: policy.clone(),
            })
        }
        _ => Box::new(Plain),
    }
}

/// The post-steps a spec asks for, in order.
pub fn post_steps(spec: &RunSpec) -> Vec<Box<dyn PostStep>> {
    let mut steps: Vec<Box<dyn PostStep>> = vec![];
    if spec.per_state_scaling {
        steps.push(Box::new(PerStateScaling));
    }
    if spec.subset_scaling {
        steps.push(Box::new(SubsetScaling));
    }
    steps
}

/// What every schedule fits with.
pub struct Context<'a> {
    pub spec: &'a RunSpec,
    pub family: &'a dyn Family,
    pub instances: &'a [Instance],
    /// The spec's estimator over the training instances (what [`Plain`] minimises).
    pub objective: &'a DatasetObjective<'a>,
    /// The run directory, for records a schedule keeps (CAMEL's, the per-state scales).
    pub run: &'a RunFiles,
    pub cancel: &'a AtomicBool,
    pub summary: &'a mut RunSummary,
    /// How the run decodes; post-steps may change it (per-state scales).
    pub inference: Inference,
    pub curve: Curve<'a>,
    pub checkpoints: Checkpoints,
}

/// What a fit's iterations go to: the curve, and the checkpoints.
struct Keep<'c, 'a> {
    curve: &'c mut Curve<'a>,
    checkpoints: &'c mut Checkpoints,
    summary: &'c RunSummary,
}

impl Watch for Keep<'_, '_> {
    fn observe(&mut self, r: &IterReport, theta: &[f64]) {
        self.curve.observe(r, theta)
    }
    fn keep(&mut self, s: &Snapshot, stopping: bool) {
        self.checkpoints.keep(s, self.curve, self.summary, stopping)
    }
}

impl Context<'_> {
    /// L-BFGS on `obj` from `theta` with `opt`, every iteration recorded on the curve and
    /// checkpointed as the run's policy says; a fit before a resumed checkpoint's returns how
    /// it ended, and the checkpoint's fit continues from its state.
    pub fn minimize(
        &mut self,
        obj: &dyn Objective,
        theta: Vec<f64>,
        opt: &LbfgsSpec,
    ) -> Result<OptimResult> {
        let start = match self.checkpoints.begin(theta, &mut self.curve, self.summary) {
            Begin::Replayed(r) => return Ok(r),
            Begin::Resume(state) => Start::Resume(Box::new(state)),
            Begin::Fresh(theta) => Start::At(theta),
        };
        let mut keep = Keep {
            curve: &mut self.curve,
            checkpoints: &mut self.checkpoints,
            summary: self.summary,
        };
        let r = minimize_from(obj, start, opt, self.cancel, &mut keep)?;
        self.checkpoints.end(&r);
        Ok(r)
    }

    /// The spec's optimiser settings with at most `max_iter` iterations.
    pub fn optimiser_for(&self, max_iter: usize) -> LbfgsSpec {
        LbfgsSpec {
            max_iter: max_iter.min(self.spec.optimiser.max_iter),
            ..self.spec.optimiser.clone()
        }
    }

    /// `estimator` over the training instances with the spec's prior and threads.
    pub fn objective_for<'e>(
        &self,
        estimator: &'e dyn crate::estimators::Estimator,
    ) -> Result<DatasetObjective<'e>>
    where
        Self: 'e,
    {
        DatasetObjective::new(
            self.family.model(),
            self.instances,
            estimator,
            self.spec.prior,
            self.spec.threads,
        )
    }
}
