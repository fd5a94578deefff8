//! A finished run directory, opened: the one loader that `eval`, `predict`, `dump`, `infer`, the
//! GUI and the experiments use, so a run decodes the same way wherever it is opened.

use super::camel::CamelRecord;
use super::spec::RunSpec;
use crate::data::Corpus;
use crate::error::{Error, Result};
use crate::eval::{Decoder, Inference};
use crate::graph::Family;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A trained run: its spec, model, weights and test-time inference.
pub struct TrainedRun {
    pub dir: PathBuf,
    /// The spec it was trained with (`spec.json`; `None` when the file is missing, and then the
    /// default inference serves).
    pub spec: Option<RunSpec>,
    pub family: Arc<dyn Family>,
    pub theta: Vec<f64>,
    /// How the run decodes: the spec's decoder (`auto` resolved as at training), its BP options
    /// and its per-state scales (`scaling.json`).
    pub inference: Inference,
    /// What the caller should tell the user (a missing `spec.json`: default decoding).
    pub warnings: Vec<String>,
}

impl TrainedRun {
    /// Opens the run in `dir`: `model.json`, `weights.bin`, `spec.json` and `scaling.json`.
    /// A weight that is not finite and a `spec.json` that cannot be read are errors naming the
    /// file (a damaged spec would silently change how the run decodes); a missing `spec.json`
    /// keeps the default decoding, with a warning.
    pub fn open(dir: &Path) -> Result<TrainedRun> {
        if crate::grammar::run::is_grammar_run(dir) {
            return Err(Error::file(
                dir.display().to_string(),
                "a grammar run: its model is a grammar over charts, not a factor graph — \
                 `parse --run DIR --data FILE` writes its trees, `eval --run DIR` scores them, \
                 and the Parse pane shows them",
            ));
        }
        if !dir.join("model.json").exists() {
            if let Some(status) = super::run::run_status(dir) {
                return Err(Error::file(
                    dir.display().to_string(),
                    match status.as_str() {
                        "interrupted" => "the run was interrupted: its process stopped while \
                                          training, so it has no model (train it again with \
                                          --force)"
                            .to_string(),
                        "running" => "the run is still training; its model is written when it \
                                      finishes"
                            .to_string(),
                        s => format!("the run {s} and has no model"),
                    },
                ));
            }
        }
        let (family, theta) = crate::graph::family::load(dir)?;
        if let Some(k) = theta.iter().position(|w| !w.is_finite()) {
            return Err(Error::file(
                dir.join("weights.bin").display().to_string(),
                format!(
                    "weight {k} is {}: a model's weights are finite numbers",
                    theta[k]
                ),
            ));
        }
        let mut warnings = vec![];
        let spec_path = dir.join("spec.json");
        let spec = if spec_path.exists() {
            Some(crate::util::read_json::<RunSpec>(&spec_path)?)
        } else {
            warnings.push(format!(
                "{}: missing; the run decodes with the default decoder",
                spec_path.display()
            ));
            None
        };
        let mut inference = spec.as_ref().map(RunSpec::inference).unwrap_or_default();
        inference.scaling = super::scaling::load(dir)?;
        Ok(TrainedRun {
            dir: dir.to_path_buf(),
            spec,
            family,
            theta,
            inference,
            warnings,
        })
    }

    /// The run with its decoder replaced by `decode` — except `auto`, which keeps what the spec
    /// resolved it to (local for memm and nota runs).
    pub fn decoding_with(mut self, decode: Option<Decoder>) -> TrainedRun {
        if let Some(d) = decode.filter(|&d| d != Decoder::Auto) {
            self.inference.decoder = d;
        }
        self
    }

    /// CAMEL's record (`camel.json`: fits, δ and g per training item), when the run has one.
    pub fn camel_record(&self) -> Result<Option<CamelRecord>> {
        let p = self.dir.join("camel.json");
        p.exists().then(|| crate::util::read_json(&p)).transpose()
    }

    /// The run's training items as it trained on them (its sample, when it drew one). A relative
    /// path is relative to where training ran: tried there, then beside the run.
    pub fn training_data(&self) -> Result<Corpus> {
        let spec_path = self.dir.join("spec.json");
        let spec = self.spec.as_ref().ok_or_else(|| {
            Error::file(
                spec_path.display().to_string(),
                "missing: the run's training data is unknown",
            )
        })?;
        let path = std::iter::once(spec.train.clone())
            .chain(self.dir.ancestors().skip(1).map(|a| a.join(&spec.train)))
            .find(|p| p.exists())
            .ok_or_else(|| {
                Error::invalid(format!(
                    "{}: the run's training data {} is not here",
                    spec_path.display(),
                    spec.train.display()
                ))
            })?;
        let mut train = spec.model.read(&path)?;
        if let Some(n) = spec.train_sample {
            train = train.sample(n, spec.seed);
        }
        Ok(train)
    }
}
