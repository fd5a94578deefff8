//! The model kinds a run can be, one line each: a spec trains with the first kind that
//! [`trains`](ModelKind::trains) its model, and a finished run opens with the kind that
//! [`holds`](ModelKind::holds) it.

use super::factor_graphs::FactorGraphs;
use super::grammar::Grammars;
use super::kind::{FinishedRun, ModelKind};
use super::registry::ModelSpec;
use super::store::RunFiles;
use super::trained::TrainedRun;
use crate::error::{Error, Result};
use std::path::Path;

static KINDS: [&dyn ModelKind; 2] = [&Grammars, &FactorGraphs];

/// The kind that trains `model` (the factor graphs, unless another claims it).
pub fn for_model(model: &ModelSpec) -> &'static dyn ModelKind {
    KINDS
        .iter()
        .copied()
        .find(|k| k.trains(model))
        .unwrap_or(&FactorGraphs)
}

/// The kind whose model the run in `files` holds, if any.
pub fn holding(files: &RunFiles) -> Option<&'static dyn ModelKind> {
    KINDS.iter().copied().find(|k| k.holds(files))
}

/// Opens the finished run in `dir`, whatever its kind (a directory without a model opens as a
/// factor graph, whose errors say why it has none).
pub fn open(dir: &Path) -> Result<Box<dyn FinishedRun>> {
    let files = RunFiles::at(dir);
    holding(&files).unwrap_or(&FactorGraphs).open(&files)
}

impl TrainedRun {
    /// Opens the factor-graph run in `dir` ([`TrainedRun::read`]); a run of another kind is
    /// refused, saying how its runs are read.
    pub fn open(dir: &Path) -> Result<TrainedRun> {
        let files = RunFiles::at(dir);
        match holding(&files) {
            Some(k) if k.name() != FactorGraphs.name() => Err(Error::file(
                dir.display().to_string(),
                format!(
                    "a {} run: its model is not a factor graph — {}",
                    k.name(),
                    k.opened_by()
                ),
            )),
            _ => TrainedRun::read(&files),
        }
    }
}
