//! A model kind: how a run of it trains into its claimed directory and how a finished one
//! opens. Two kinds today — the factor graphs (every [`crate::graph::Family`], trained through
//! an estimator's terms and a schedule) and the grammar (charts over treebank trees). Adding a
//! kind is one file behind [`ModelKind`] and one line in [`super::kinds`]; the run layer
//! dispatches by kind, and nothing below it names one.

use super::checkpoint::CheckpointPolicy;
use super::spec::RunSpec;
use super::store::RunFiles;
use super::summary::{RunEvent, RunSummary};
use crate::error::Result;
use crate::eval::{Decoder, Metrics};
use crate::run::registry::ModelSpec;
use std::path::Path;
use std::sync::atomic::AtomicBool;

pub trait ModelKind: Sync {
    /// The kind in messages ("grammar").
    fn name(&self) -> &'static str;
    /// Whether a spec's model is of this kind.
    fn trains(&self, model: &ModelSpec) -> bool;
    /// Whether the run in `files` holds this kind's model (by its model file).
    fn holds(&self, files: &RunFiles) -> bool;
    /// How this kind's runs are read, for a reader that expected another kind.
    fn opened_by(&self) -> &'static str;
    /// Trains `spec` into `files`, claimed and holding the spec and a `running` summary;
    /// fills `summary` (the caller writes it, and records a failure).
    fn train(
        &self,
        spec: &RunSpec,
        files: &RunFiles,
        checkpoints: CheckpointPolicy,
        cancel: &AtomicBool,
        on_event: &mut dyn FnMut(RunEvent),
        summary: &mut RunSummary,
    ) -> Result<()>;
    /// Opens the finished run in `files`.
    fn open(&self, files: &RunFiles) -> Result<Box<dyn FinishedRun>>;
}

/// A finished run of any kind, opened: what `eval` does with it.
pub trait FinishedRun {
    /// The run's scores on labelled `data` in its kind's format (or, where the kind keeps
    /// them, on its own test data), decoded with `decode` where the kind has a choice.
    fn score(&self, data: Option<&Path>, decode: Option<Decoder>) -> Result<Metrics>;
    /// `eval`'s report of `m`.
    fn report(&self, m: &Metrics) -> String;
    /// What the caller should tell the user about how the run opened.
    fn warnings(&self) -> &[String] {
        &[]
    }
}
