//! A run is fully described by a [`RunSpec`]: the same spec runs from the CLI, the GUI and
//! tests, and is stored with its results so any figure can be regenerated.

use super::lbfgs::LbfgsSpec;
use super::objective::Prior;
use crate::estimators::EstimatorSpec;
use crate::eval::{Decoder, Inference};
pub use crate::graph::family::ModelSpec;
use std::path::PathBuf;

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct RunSpec {
    /// A label for lists and legends.
    #[serde(default)]
    pub name: Option<String>,
    /// Training data in the model family's format.
    pub train: PathBuf,
    /// Held-out data, evaluated at the end (and every `eval_every` iterations).
    #[serde(default)]
    pub test: Option<PathBuf>,
    /// CRF++ template file for chains; `None` is the built-in chunking template.
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
    /// Test-time decoder (`auto` picks the exact one the graph allows).
    #[serde(default)]
    pub decode: Decoder,
    /// Train on this many items of `train`, drawn without replacement with `seed` (004 §8.3
    /// samples 100 CoNLL-2000 sentences); `None` uses them all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub train_sample: Option<usize>,
    /// Also score the training data at the end (`summary.train`: the train-set NLL of 004's
    /// train/test contour maps).
    #[serde(default)]
    pub eval_train: bool,
    /// After training, fit one multiplicative factor per source state by global likelihood
    /// with the weights fixed (001 §3; `scaling.json`); test-time decoding then uses them.
    #[serde(default)]
    pub per_state_scaling: bool,
    /// Start from the weights of a finished run: templates, features and labels with the same
    /// names are copied, the rest start at 0 — BP training of a skip-chain from a trained
    /// linear chain (000 §5.1.3: from uniform weights it was slower and worse).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_from: Option<PathBuf>,
}

impl RunSpec {
    /// Test-time inference: the decoder, and for loopy max-product the estimator's BP options
    /// (the defaults when it runs no BP).
    pub fn inference(&self) -> Inference {
        let decoder = match self.decode {
            Decoder::Auto if self.estimator.is_locally_normalised() && !self.per_state_scaling => {
                Decoder::Local
            }
            d => d,
        };
        Inference {
            decoder,
            bp: self.estimator.bp().copied().unwrap_or_default(),
            scaling: None,
        }
    }
}
