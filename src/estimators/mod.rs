//! Estimators: each sees an instance's log-potential tables and gold labels and returns its
//! value (a log-likelihood-type quantity, higher is better) and ∂value/∂table entries. None of
//! them touches features or weights; [`crate::graph::Model::scatter`] does that for all.

pub mod ml;

pub use ml::ExactMl;

use crate::error::{Error, Result};
use crate::graph::Instance;
use crate::inference::ChainWork;

/// Per-thread scratch reused across instances so the hot loop does not allocate.
#[derive(Default, Clone, Debug)]
pub struct Workspace {
    pub chain: ChainWork,
}

impl Workspace {
    /// Counted multiply-adds of inference and normalisation since the last call.
    pub fn take_ops(&mut self) -> u64 {
        std::mem::take(&mut self.chain.ops)
    }
}

pub trait Estimator: Send + Sync {
    /// The CLI name (`ml`, …).
    fn name(&self) -> &'static str;
    /// Whether this estimator can evaluate `inst` (its shape, size and gold labels).
    fn check(&self, inst: &Instance) -> Result<()>;
    /// The instance's value; when `dphi` is given, adds ∂value/∂φ into it (table-buffer layout).
    fn evaluate(
        &self,
        inst: &Instance,
        phi: &[f64],
        dphi: Option<&mut [f64]>,
        ws: &mut Workspace,
    ) -> f64;
}

/// An estimator and its knobs as data (stored in run specs).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "name", rename_all = "kebab-case")]
pub enum EstimatorSpec {
    /// Exact maximum (conditional) likelihood.
    Ml,
}

impl EstimatorSpec {
    /// Names accepted on the command line.
    pub const NAMES: &'static [&'static str] = &["ml"];

    pub fn from_name(name: &str) -> Result<Self> {
        match name {
            "ml" => Ok(EstimatorSpec::Ml),
            _ => Err(Error::invalid(format!(
                "unknown estimator {name:?}; known: {}",
                Self::NAMES.join(", ")
            ))),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            EstimatorSpec::Ml => "ml",
        }
    }

    pub fn build(&self) -> Box<dyn Estimator> {
        match self {
            EstimatorSpec::Ml => Box::new(ExactMl),
        }
    }
}

/// Error for an instance that has no gold labels.
pub(crate) fn need_gold(inst: &Instance) -> Result<&[u32]> {
    inst.gold
        .as_deref()
        .ok_or_else(|| Error::invalid("this estimator needs gold labels for every token"))
}
