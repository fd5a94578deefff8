//! What a run records as it goes and when it ends: the events it reports, one record of its
//! learning curve a line ([`CurvePoint`]), and its [`RunSummary`] (status, timings, stop reason,
//! final metrics). The run store ([`super::store`]) reads and writes them.

use crate::estimators::camel_dual::OuterLoop;
use crate::eval::Metrics;
use crate::optim::{IterReport, StopReason};

/// What a running run reports.
#[derive(Clone, Debug)]
pub enum RunEvent {
    Started {
        n_params: usize,
        n_sequences: usize,
        n_tokens: usize,
        threads: usize,
    },
    Progress(IterReport),
    Eval {
        iteration: usize,
        metrics: Box<Metrics>,
    },
    Finished(Box<RunSummary>),
    Failed(String),
    /// Something the user should know that changes nothing (a run resumed, or not).
    Note(String),
}

impl RunEvent {
    /// The event that a run's setup is done: its sizes and threads, as its summary has them.
    pub fn started(summary: &RunSummary) -> RunEvent {
        RunEvent::Started {
            n_params: summary.n_params,
            n_sequences: summary.n_sequences,
            n_tokens: summary.n_tokens,
            threads: summary.threads,
        }
    }
}

/// One line of `curve.jsonl`.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct CurvePoint {
    #[serde(flatten)]
    pub report: IterReport,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub test_token_accuracy: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub test_segment_f1: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub test_log_likelihood: Option<f64>,
}

#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct RunSummary {
    pub status: String,
    /// The model family (`chain`, `grid`, `boltzmann`).
    #[serde(default)]
    pub model: String,
    pub estimator: String,
    pub iterations: usize,
    pub stop_reason: Option<StopReason>,
    /// Seconds spent training: the optimiser and the steps after it, held-out evaluations
    /// and writing the curve left out.
    pub train_seconds: f64,
    /// Seconds reading data and building features.
    pub setup_seconds: f64,
    pub n_params: usize,
    pub n_sequences: usize,
    pub n_tokens: usize,
    pub threads: usize,
    /// Table entries built per evaluation, and the size of the full tables (they differ when
    /// the estimator's terms read only part of each table).
    #[serde(default)]
    pub table_entries_built: usize,
    #[serde(default)]
    pub table_entries: usize,
    pub evaluations: usize,
    pub ops: u64,
    pub final_objective: Option<f64>,
    /// The paper's FLOPs of one objective evaluation (004 §3.1), for SCL.
    #[serde(default)]
    pub paper_flops: Option<f64>,
    /// With `--resample-every N`: how many times Z was drawn anew.
    #[serde(default)]
    pub resamples: usize,
    /// With `--beta auto` (004 Algorithm 1): the β chosen after each fit, its J(β), and the
    /// iterations that fit took.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub beta_rounds: Vec<BetaRound>,
    /// `‖θ̂ − θ0‖` when the training file records the parameters that generated it.
    #[serde(default)]
    pub param_error: Option<f64>,
    /// CAMEL: each fit (piecewise, then one per linearisation of g) with its iterations, the
    /// largest sepset violation after it and the change of g that followed; δ and g are in
    /// `camel.json`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub camel_fits: Vec<OuterLoop>,
    /// CAMEL: number of consistency multipliers δ over the training set.
    #[serde(default)]
    pub camel_multipliers: usize,
    /// nota: NOTA terms in the final objective, and each error-driven choice (iteration it
    /// was made after, terms chosen).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nota_terms: Option<usize>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nota_choices: Vec<(usize, usize)>,
    /// The per-state scales, when the spec asks for them (`scaling.json` has the details).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_state_scales: Option<Vec<f64>>,
    /// Phase 2 of a two-stage run, when the spec asks for per-subset scales
    /// (`subset-scaling.json` names the subsets).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subset_scaling: Option<Calibration>,
    /// Training instances whose loopy BP had not converged at the final weights.
    #[serde(default)]
    pub bp_unconverged: u64,
    /// With `init_from`: the weights copied from that run (nonzero ones).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_weights: Option<usize>,
    /// The iterations after which the run was resumed from a checkpoint, one per resumption.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resumed_at: Vec<usize>,
    /// The fitted model in one line (labels, features, parameters; skip edges per item).
    #[serde(default)]
    pub model_description: String,
    /// Final test metrics; `test.decoders` says how the predictions were decoded.
    pub test: Option<Metrics>,
    /// The same metrics on the training data, when the spec asks (`eval_train`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub train: Option<Metrics>,
    pub error: Option<String>,
    /// The process that ran it: while `status` is `running`, a directory no process holds
    /// (see [`super::store::is_claimed`]) was interrupted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Who ran it, on which host, when (start and end, UTC) and with which build. Runs made
    /// before it was recorded have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<crate::provenance::Provenance>,
}

impl RunSummary {
    /// Why this run cannot decide a claim, if it cannot: it did not finish, or its training
    /// did not converge in a way that makes its weights something other than the estimator's
    /// optimum (loopy BP unconverged at the final weights, so its gradient was not the Bethe
    /// objective's; the objective rose, BP having settled at another fixed point; cancelled).
    /// Reaching the protocol's iteration cap is the protocol, not a failure.
    pub fn failure(&self) -> Option<String> {
        if let Some(e) = &self.error {
            return Some(format!("failed: {e}"));
        }
        if self.status != "finished" {
            return Some(format!("status {}", self.status));
        }
        if self.bp_unconverged > 0 {
            return Some(format!(
                "loopy BP unconverged on {} training instance(s) at its final weights",
                self.bp_unconverged
            ));
        }
        match self.stop_reason {
            Some(StopReason::ObjectiveRose) => Some(format!(
                "stopped after {} iterations as its objective rose (loopy BP at another fixed point)",
                self.iterations
            )),
            Some(StopReason::Cancelled) => Some("cancelled".into()),
            _ => None,
        }
    }
}

/// One round of the β heuristic: the β chosen after a fit, its J(β), and the iterations that fit
/// took.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct BetaRound {
    pub beta: Vec<f64>,
    pub j: f64,
    pub iterations: usize,
}

/// A two-stage run's second phase (003 §3): the per-subset scales, and what fitting them took
/// (its time is inside `train_seconds`).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Calibration {
    pub alpha: Vec<f64>,
    pub iterations: usize,
    pub seconds: f64,
}
