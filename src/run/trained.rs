//! A finished run directory, opened: the one loader that `eval`, `predict`, `dump`, `infer`, the
//! GUI and the experiments use, so a run decodes the same way wherever it is opened.

use super::spec::RunSpec;
use super::store::{Record, RunFiles};
use crate::data::Corpus;
use crate::data::Sequence;
use crate::error::{Error, Result};
use crate::estimators::camel::CamelVariant;
use crate::estimators::camel_dual::{CamelObjective, CamelRecord, ClusterBeliefs};
use crate::estimators::scaling::PerStateScaling;
use crate::eval::{Decoder, Inference};
use crate::graph::Family;
use crate::graph::Instance;
use crate::optim::Prior;
use std::path::PathBuf;
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
    /// Reads the factor-graph run in `files`: its model and weights, its spec and its
    /// per-state scales. A weight that is not finite and a spec that cannot be read are errors
    /// naming the file (a damaged spec would silently change how the run decodes); a missing
    /// spec keeps the default decoding, with a warning. (Opening by directory, with other
    /// kinds refused by name: [`TrainedRun::open`].)
    pub fn read(files: &RunFiles) -> Result<TrainedRun> {
        let dir = files.dir();
        if !files.has_model() {
            if let Some(status) = files.status() {
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
        let (family, theta) = files.model()?;
        let mut warnings = vec![];
        let spec = if files.has_spec() {
            Some(files.spec()?)
        } else {
            warnings.push(format!(
                "{}: missing; the run decodes with the default decoder",
                files.spec_path().display()
            ));
            None
        };
        let mut inference = spec.as_ref().map(RunSpec::inference).unwrap_or_default();
        inference.scaling = scales(files)?;
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
        self.inference = self.inference_with(decode);
        self
    }

    /// The run's inference with its decoder replaced by `decode`, as [`Self::decoding_with`].
    pub fn inference_with(&self, decode: Option<Decoder>) -> Inference {
        let mut inference = self.inference.clone();
        if let Some(d) = decode.filter(|&d| d != Decoder::Auto) {
            inference.decoder = d;
        }
        inference
    }

    /// CAMEL's record (`camel.json`: fits, δ and g per training item), when the run has one.
    pub fn camel_record(&self) -> Result<Option<CamelRecord>> {
        RunFiles::at(&self.dir).record(Record::CAMEL)
    }

    /// The run's training items as it trained on them (its sample, when it drew one). A relative
    /// path is relative to where training ran: tried there, then beside the run.
    pub fn training_data(&self) -> Result<Corpus> {
        let spec_path = RunFiles::at(&self.dir).spec_path();
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

/// A run's per-state scales, when it trained them. A damaged record or a scale that is not a
/// finite number is an error naming the file: ignoring it would decode without the scales the
/// run trained.
fn scales(files: &RunFiles) -> Result<Option<Arc<Vec<f64>>>> {
    let Some(s) = files.record::<PerStateScaling>(Record::SCALING)? else {
        return Ok(None);
    };
    if let Some(i) = s.alpha.iter().position(|a| !a.is_finite()) {
        return Err(Error::file(
            files.record_path(Record::SCALING).display().to_string(),
            format!("scale {i} is {}, not a finite number", s.alpha[i]),
        ));
    }
    Ok(Some(Arc::new(s.alpha)))
}

/// A trained run's clusters on one of its training items: the run's weights with its δ and g
/// from `camel.json`, or δ = 0 and g = 0 for any other estimator (piecewise's beliefs: each
/// factor normalised alone). The item is read from the run's own training set (its spec's
/// file and sample), since δ belongs to it.
pub struct RunClusters {
    pub family: Arc<dyn Family>,
    pub item: Sequence,
    pub instance: Instance,
    pub clusters: ClusterBeliefs,
    /// Items in the run's training set.
    pub n_items: usize,
    /// The CAMEL variant whose δ and g came from `camel.json` (None: δ = 0, g = 0).
    pub camel: Option<CamelVariant>,
}

impl TrainedRun {
    /// The run's clusters on its training item `item` ([`RunClusters`]).
    pub fn into_clusters(self, item: usize) -> Result<RunClusters> {
        let run = self;
        // δ belongs to the run's own training items.
        let train = run.training_data()?;
        let record = run.camel_record()?;
        let (family, theta) = (run.family, run.theta);
        let n_items = train.sequences.len();
        let seq = train.sequences.get(item).cloned().ok_or_else(|| {
            Error::invalid(format!(
                "item {item} is past the run's {n_items} training items"
            ))
        })?;
        let instance = family.instance(&seq)?;
        let instances = std::slice::from_ref(&instance);
        let mut obj = CamelObjective::new(family.model(), instances, Prior { sigma2: None });
        let mut x = theta;
        x.resize(family.model().n_params + obj.n_delta(), 0.0);
        if let Some(r) = &record {
            let (Some(d), Some(g)) = (r.delta.get(item), r.g.get(item)) else {
                return Err(Error::invalid(format!(
                    "{}: no multipliers for item {item}",
                    RunFiles::at(&run.dir).record_path(Record::CAMEL).display()
                )));
            };
            if d.len() != obj.n_delta() || g.len() != obj.g[0].len() {
                return Err(Error::invalid(format!(
                    "{}: item {item}'s δ or g does not fit its cluster graph",
                    RunFiles::at(&run.dir).record_path(Record::CAMEL).display()
                )));
            }
            x[family.model().n_params..].copy_from_slice(d);
            obj.g[0].copy_from_slice(g);
        }
        let clusters = obj.cluster_beliefs(0, &x);
        drop(obj);
        Ok(RunClusters {
            family,
            item: seq,
            instance,
            clusters,
            n_items,
            camel: record.map(|r| r.variant),
        })
    }
}
