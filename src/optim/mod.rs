//! The optimiser, below every model: an [`Objective`] (value and gradient over a flat parameter
//! vector), its [`Evaluation`], the Gaussian [`Prior`], and L-BFGS ([`lbfgs`]). Nothing here
//! knows a model, an estimator or a run: the estimators build objectives
//! (the dataset objective, CAMEL's dual, the grammar's), and the
//! run layer hands them to [`minimize`].

pub mod lbfgs;

pub use lbfgs::{
    minimize, minimize_from, IterReport, LbfgsSpec, LbfgsState, OptimResult, Snapshot, Start,
    StopReason, Watch,
};

/// Gaussian prior N(0, σ²) on every weight: penalty ‖θ‖² / (2σ²). CRFsuite's `c2` penalises
/// c2·‖θ‖², so σ² = 1/(2·c2).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Prior {
    /// Variance σ²; `None` means no prior.
    pub sigma2: Option<f64>,
}

impl Prior {
    pub fn from_c2(c2: f64) -> Prior {
        Prior {
            sigma2: if c2 > 0.0 {
                Some(1.0 / (2.0 * c2))
            } else {
                None
            },
        }
    }
    pub fn penalty(&self, theta: &[f64]) -> f64 {
        match self.sigma2 {
            // Blocks summed in order: the same bits on any number of threads.
            Some(s2) => crate::util::dot_blocks(theta, theta) / (2.0 * s2),
            None => 0.0,
        }
    }
}

/// One evaluation of the objective.
#[derive(Clone, Copy, Debug, Default)]
pub struct Evaluation {
    /// What the optimiser minimises: −Σ value + penalty.
    pub objective: f64,
    /// Σ over instances of the estimator's value (no prior).
    pub value: f64,
    /// Counted multiply-adds of inference and normalisation.
    pub ops: u64,
    /// Instances whose loopy BP did not converge.
    pub unconverged: u64,
}

/// What L-BFGS minimises: a value and gradient over a flat parameter vector.
pub trait Objective: Sync {
    fn n_params(&self) -> usize;
    /// Evaluates at `x`; when `grad` is given, writes ∂objective/∂x into it.
    fn evaluate(&self, x: &[f64], grad: Option<&mut [f64]>) -> Evaluation;
    /// The paper's FLOPs of one evaluation (004 §3.1), when counted.
    fn paper_flops(&self) -> Option<f64> {
        None
    }
    /// The objective's threads, where the optimiser's vector updates run too (`None`: rayon's
    /// global pool).
    fn pool(&self) -> Option<&rayon::ThreadPool> {
        None
    }
}
