//! A run is fully described by a [`RunSpec`]: the same spec runs from the CLI, the GUI and
//! tests, and is stored with its results so any figure can be regenerated.

use super::lbfgs::LbfgsSpec;
use super::objective::Prior;
use crate::estimators::EstimatorSpec;
use crate::graph::chain::ChainOptions;
use std::path::PathBuf;

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ModelSpec {
    /// Linear-chain CRF with CRF++ template features.
    LinearChain(ChainOptions),
}

impl Default for ModelSpec {
    fn default() -> Self {
        ModelSpec::LinearChain(ChainOptions::default())
    }
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct RunSpec {
    /// A label for lists and legends.
    #[serde(default)]
    pub name: Option<String>,
    /// Training data (CoNLL columns).
    pub train: PathBuf,
    /// Held-out data, evaluated at the end (and every `eval_every` iterations).
    #[serde(default)]
    pub test: Option<PathBuf>,
    /// CRF++ template file; `None` is the built-in chunking template.
    #[serde(default)]
    pub template: Option<PathBuf>,
    #[serde(default)]
    pub model: ModelSpec,
    pub estimator: EstimatorSpec,
    #[serde(default)]
    pub optimiser: LbfgsSpec,
    pub prior: Prior,
    /// Evaluate on `test` every this many iterations (0: only at the end).
    #[serde(default)]
    pub eval_every: usize,
    #[serde(default)]
    pub seed: u64,
    /// Worker threads; 0 uses every core.
    #[serde(default)]
    pub threads: usize,
}
