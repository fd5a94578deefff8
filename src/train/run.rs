//! Executing a [`RunSpec`] and recording it in a run directory:
//!
//! - `spec.json` — the spec;
//! - `curve.jsonl` — one JSON record per iteration (rewritten atomically as the run goes);
//! - `summary.json` — status (`running`, `finished`, `failed`, `cancelled`), timings, stop
//!   reason and final metrics;
//! - `model.json` + `weights.bin` — labels, template, feature dictionaries, parameter layout
//!   and θ as little-endian f64.
//!
//! Every file is written to a temporary name and renamed.

use super::lbfgs::{IterReport, StopReason};
use super::objective::DatasetObjective;
use super::run_dir::{Existing, RunDir};
use super::schedule::{self, Context, Curve};
use super::spec::RunSpec;
use crate::error::{Error, Result};
use crate::eval::{evaluate, Metrics};
use crate::graph::family;
use crate::util::write_json_atomic;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

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
    pub camel_fits: Vec<super::camel::OuterLoop>,
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
    /// Training instances whose loopy BP had not converged at the final weights.
    #[serde(default)]
    pub bp_unconverged: u64,
    /// With `init_from`: the weights copied from that run (nonzero ones).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_weights: Option<usize>,
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
    /// (see [`super::run_dir::is_claimed`]) was interrupted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
}

/// A run directory's status as `summary.json` records it, with `running` read as
/// `interrupted` when no process is writing the directory any more; `None` without a
/// readable summary.
pub fn run_status(dir: &Path) -> Option<String> {
    let s: RunSummary = crate::util::read_json(&dir.join("summary.json")).ok()?;
    Some(match s.status.as_str() {
        "running" if !super::run_dir::is_claimed(dir) => "interrupted".into(),
        _ => s.status,
    })
}

/// The weights of the run in `dir` carried over to `fam` by name: the template, feature and
/// label names of each weight (the weights TSV), so a skip-chain starts from a linear chain's
/// `state`/`transition` weights and its `skip` weights at 0.
pub fn initial_weights(fam: &dyn crate::graph::Family, dir: &Path) -> Result<Vec<f64>> {
    let (from, theta) = crate::graph::family::load(dir)?;
    let text = crate::graph::family::dump_weights(from.as_ref(), &theta);
    crate::graph::family::read_weights(fam, &text, &dir.join("weights.bin").display().to_string())
}

pub use super::schedule::{BetaRound, MAX_BETA_ROUNDS};

/// Executes `spec`, writing the new run directory `out` (refused when it holds a run or other
/// files: see [`execute_in`]). Events go to `on_event` as they happen.
pub fn execute(
    spec: &RunSpec,
    out: &Path,
    cancel: &AtomicBool,
    on_event: &mut dyn FnMut(RunEvent),
) -> Result<RunSummary> {
    execute_in(spec, out, Existing::Refuse, cancel, on_event)
}

/// [`execute`], saying what to do with what `out` already holds. The directory is claimed
/// first ([`RunDir::claim`]): another process writing it, a path that is a file, or a
/// directory that cannot be written are errors before anything is written.
pub fn execute_in(
    spec: &RunSpec,
    out: &Path,
    existing: Existing,
    cancel: &AtomicBool,
    on_event: &mut dyn FnMut(RunEvent),
) -> Result<RunSummary> {
    spec.check()?;
    let _claim = RunDir::claim(out, existing)?;
    write_json_atomic(&out.join("spec.json"), spec)?;
    let mut summary = RunSummary {
        status: "running".into(),
        estimator: spec.estimator.name().into(),
        pid: Some(std::process::id()),
        ..Default::default()
    };
    write_json_atomic(&out.join("summary.json"), &summary)?;
    let result = match &spec.model {
        crate::graph::ModelSpec::Grammar(o) => {
            crate::grammar::run::execute(spec, o, out, cancel, on_event, &mut summary)
        }
        _ => run_inner(spec, out, cancel, on_event, &mut summary),
    };
    // A summary that cannot be written (a full disk) makes the run a failure, recorded as one.
    let result = result.and_then(|()| write_json_atomic(&out.join("summary.json"), &summary));
    match result {
        Ok(()) => {
            on_event(RunEvent::Finished(Box::new(summary.clone())));
            Ok(summary)
        }
        Err(e) => {
            summary.status = if matches!(e, Error::Cancelled) {
                "cancelled"
            } else {
                "failed"
            }
            .into();
            summary.error = Some(e.to_string());
            record_failure(out, &summary)?;
            on_event(RunEvent::Failed(e.to_string()));
            Err(e)
        }
    }
}

/// Writes a failed (or cancelled) run's summary. When the atomic write fails too — a full
/// disk has no room for the temporary copy — the old summary is overwritten in place with the
/// status and error alone (truncating it first frees the blocks that write needs), so the run
/// reads "failed" with its reason, never "interrupted".
pub fn record_failure(out: &Path, summary: &RunSummary) -> Result<()> {
    let path = out.join("summary.json");
    let Err(e) = write_json_atomic(&path, summary) else {
        return Ok(());
    };
    let short = RunSummary {
        status: summary.status.clone(),
        model: summary.model.clone(),
        estimator: summary.estimator.clone(),
        error: summary.error.clone(),
        pid: summary.pid,
        ..Default::default()
    };
    let Ok(value) = serde_json::to_value(&short) else {
        return Err(e);
    };
    std::fs::write(&path, crate::util::versioned(value).to_string()).map_err(|_| e)
}

fn run_inner(
    spec: &RunSpec,
    out: &Path,
    cancel: &AtomicBool,
    on_event: &mut dyn FnMut(RunEvent),
    summary: &mut RunSummary,
) -> Result<()> {
    let setup = Instant::now();
    // Setup (feature extraction, unrolling) runs on the run's threads, as training does.
    let pool = crate::train::spec::thread_pool(spec.threads)?;
    let (train, fam, instances, test) = pool.install(|| -> Result<_> {
        let mut train = spec.model.read(&spec.train)?;
        if let Some(n) = spec.train_sample {
            train = train.sample(n, spec.seed);
        }
        let (fam, instances) = spec.model.fit(&train, spec.template.as_deref())?;
        let test = spec.test.as_deref().map(|p| fam.read(p)).transpose()?;
        if let Some(t) = &test {
            fam.check(t)?;
        }
        Ok((train, fam, instances, test))
    })?;
    let estimator = spec.estimator.build(fam.model())?;
    let obj = DatasetObjective::new(
        fam.model(),
        &instances,
        estimator.as_ref(),
        spec.prior,
        spec.threads,
    )?;
    summary.setup_seconds = setup.elapsed().as_secs_f64();
    summary.n_params = fam.model().n_params;
    summary.model = fam.kind().into();
    summary.n_sequences = train.sequences.len();
    summary.n_tokens = train.tokens();
    summary.threads = obj.threads();
    (summary.table_entries_built, summary.table_entries) = obj.table_entries();
    summary.paper_flops = obj.paper_flops;
    summary.model_description = fam.describe();
    // Weights, and room for model.json and the curve: refused now rather than after training.
    super::run_dir::check_space(out, 16 * fam.model().n_params as u64 + (1 << 20))?;
    let theta0 = match &spec.init_from {
        Some(dir) => {
            let th = initial_weights(fam.as_ref(), dir)?;
            summary.init_weights = Some(th.iter().filter(|w| **w != 0.0).count());
            th
        }
        None => vec![0.0; fam.model().n_params],
    };
    on_event(RunEvent::Started {
        n_params: summary.n_params,
        n_sequences: summary.n_sequences,
        n_tokens: summary.n_tokens,
        threads: summary.threads,
    });
    let inference = spec.inference();
    let curve = Curve::new(
        out.join("curve.jsonl"),
        fam.as_ref(),
        test.as_ref(),
        inference.clone(),
        spec.eval_every,
        on_event,
    )?;
    let mut cx = Context {
        spec,
        family: fam.as_ref(),
        instances: &instances,
        objective: &obj,
        out,
        cancel,
        summary,
        inference,
        curve,
    };
    let t0 = Instant::now();
    let result = schedule::for_spec(spec).fit(&mut cx, theta0)?;
    if let Some(e) = cx.curve.take_error() {
        return Err(e);
    }
    let cancelled = result.reason == StopReason::Cancelled;
    if !cancelled {
        for step in schedule::post_steps(spec) {
            step.apply(&mut cx, &result.theta)?;
        }
    }
    let Context {
        summary,
        inference,
        curve,
        ..
    } = cx;
    summary.nota_terms = curve.nota_terms;
    summary.train_seconds = t0.elapsed().saturating_sub(curve.observed).as_secs_f64();
    summary.iterations = result.iterations;
    if let Some(l) = curve.last.as_ref().or(result.last.as_ref()) {
        summary.evaluations = l.evaluations;
        summary.ops = l.ops;
        summary.final_objective = Some(l.objective);
        summary.bp_unconverged = l.bp_unconverged;
    }
    summary.stop_reason = Some(result.reason);
    pool.install(|| family::save(out, fam.as_ref(), &result.theta))?;
    summary.param_error = fam.reference_theta(&spec.train).map(|t0| {
        t0.iter()
            .zip(&result.theta)
            .map(|(a, b)| (a - b) * (a - b))
            .sum::<f64>()
            .sqrt()
    });
    if cancelled {
        return Err(Error::Cancelled);
    }
    if let Some(t) = &test {
        summary.test = Some(evaluate(fam.as_ref(), &result.theta, t, &inference)?);
    }
    if spec.eval_train {
        summary.train = Some(evaluate(fam.as_ref(), &result.theta, &train, &inference)?);
    }
    summary.status = "finished".into();
    Ok(())
}

/// Reads the model of a run directory (any family).
pub use crate::graph::family::load as load_model;
