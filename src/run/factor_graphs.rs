//! The factor-graph model kind: every [`Family`] of the registry. A run reads and fits its
//! data ([`ModelSpec::fit`](super::registry::ModelSpec::fit)), builds the estimator's
//! [`DatasetObjective`], fits through the estimator's schedule ([`super::schedule`]) and its
//! post-steps, saves `model.json` and the weights, and scores its test data.

use super::checkpoint::{Checkpoint, CheckpointPolicy, Checkpoints};
use super::kind::{FinishedRun, ModelKind};
use super::registry::ModelSpec;
use super::schedule::{self, Context, Curve};
use super::spec::RunSpec;
use super::store::{check_space, RunFiles};
use super::summary::{RunEvent, RunSummary};
use super::trained::TrainedRun;
use crate::error::{Error, Result};
use crate::estimators::objective::DatasetObjective;
use crate::eval::{evaluate, Decoder, Metrics};
use crate::graph::family::transfer_weights;
use crate::graph::Family;
use crate::optim::StopReason;
use crate::util::thread_pool;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

pub struct FactorGraphs;

impl ModelKind for FactorGraphs {
    fn name(&self) -> &'static str {
        "factor-graph"
    }
    fn trains(&self, model: &ModelSpec) -> bool {
        model.kind().is_factor_graph()
    }
    fn holds(&self, files: &RunFiles) -> bool {
        files.has_model()
    }
    fn opened_by(&self) -> &'static str {
        "`predict`, `eval`, `dump` and `infer` read it, and the Graph pane shows it"
    }
    fn train(
        &self,
        spec: &RunSpec,
        files: &RunFiles,
        checkpoints: CheckpointPolicy,
        cancel: &AtomicBool,
        on_event: &mut dyn FnMut(RunEvent),
        summary: &mut RunSummary,
    ) -> Result<()> {
        train(spec, files, checkpoints, cancel, on_event, summary)
    }
    fn open(&self, files: &RunFiles) -> Result<Box<dyn FinishedRun>> {
        Ok(Box::new(TrainedRun::read(files)?))
    }
}

impl FinishedRun for TrainedRun {
    fn score(&self, data: Option<&Path>, decode: Option<Decoder>) -> Result<Metrics> {
        let data = data.ok_or_else(|| Error::invalid("eval needs --data FILE"))?;
        let inference = self.inference_with(decode);
        let corpus = self.family.read(data)?;
        evaluate(self.family.as_ref(), &self.theta, &corpus, &inference)
    }
    fn report(&self, m: &Metrics) -> String {
        m.report()
    }
    fn warnings(&self) -> &[String] {
        &self.warnings
    }
}

/// The weights of the run in `dir` carried over to `fam` by name: the template, feature and
/// label names of each weight (the weights TSV), so a skip-chain starts from a linear chain's
/// `state`/`transition` weights and its `skip` weights at 0. A run directory whose summary says
/// it did not finish is refused: a cancelled or failed run saves the weights it stopped at, which
/// are not the trained model a later stage means to start from.
pub fn initial_weights(fam: &dyn Family, dir: &Path) -> Result<Vec<f64>> {
    let from_run = RunFiles::at(dir);
    if from_run.has_summary() {
        let status = from_run.status().unwrap_or_else(|| "unreadable".into());
        if status != "finished" {
            return Err(Error::file(
                from_run.summary_path().display().to_string(),
                format!(
                    "the run to start from is {status}, not finished: its weights are where it \
                     stopped, not a trained model (finish it first: `train --spec {} --out {} \
                     --if-unfinished`)",
                    from_run.spec_path().display(),
                    dir.display()
                ),
            ));
        }
    }
    let (from, theta) = from_run.model()?;
    transfer_weights(from.as_ref(), &theta, fam, &dir.display().to_string())
}

fn train(
    spec: &RunSpec,
    files: &RunFiles,
    policy: CheckpointPolicy,
    cancel: &AtomicBool,
    on_event: &mut dyn FnMut(RunEvent),
    summary: &mut RunSummary,
) -> Result<()> {
    let setup = Instant::now();
    // Setup (feature extraction, unrolling) runs on the run's threads, as training does.
    let pool = thread_pool(spec.threads)?;
    let (train, counts, fam, instances, test) = pool.install(|| -> Result<_> {
        let mut train = spec.model.read(&spec.train)?;
        if let Some(n) = spec.train_sample {
            train = train.sample(n, spec.seed);
        }
        let counts = (train.sequences.len(), train.tokens());
        // The training text is needed again only to score the training set: otherwise the
        // fit consumes it, and a chain drops it before assembling its instances (issue 46).
        let template = spec.template.as_deref();
        let (train, (fam, instances)) = if spec.eval_train {
            let fitted = spec.model.fit(&train, template)?;
            (Some(train), fitted)
        } else {
            (None, spec.model.fit_owned(train, template)?)
        };
        let test = spec.test.as_deref().map(|p| fam.read(p)).transpose()?;
        if let Some(t) = &test {
            fam.check(t)?;
        }
        Ok((train, counts, fam, instances, test))
    })?;
    let estimator = spec.estimator.build(fam.model())?;
    let schedule = schedule::for_spec(spec);
    // A checkpoint left by an earlier process (execute keeps one only for this spec), read
    // once: resumed on the threads it was written with, since the objective's sums are split
    // by them.
    let shown = files.dir().join(super::checkpoint::CHECKPOINT);
    let resume = if schedule.resumable() {
        Checkpoint::read(files, fam.model().n_params).map_err(|e| {
            Error::invalid(format!(
                "{e} (remove it, or --force, to start the run again)"
            ))
        })?
    } else {
        if shown.exists() {
            on_event(RunEvent::Note(format!(
                "{}: this estimator's schedule keeps state besides the optimiser's, so the run starts again",
                shown.display()
            )));
            Checkpoints::remove(files)?;
        }
        None
    };
    let threads = resume
        .as_ref()
        .map_or(pool.current_num_threads(), |c| c.threads);
    check_training_memory(spec, fam.model(), &instances, threads)?;
    let obj = DatasetObjective::new(
        fam.model(),
        &instances,
        estimator.as_ref(),
        spec.prior,
        resume.as_ref().map_or(spec.threads, |c| c.threads),
    )?;
    summary.setup_seconds = setup.elapsed().as_secs_f64();
    summary.n_params = fam.model().n_params;
    summary.model = fam.kind().into();
    (summary.n_sequences, summary.n_tokens) = counts;
    summary.threads = obj.threads();
    (summary.table_entries_built, summary.table_entries) = obj.table_entries();
    summary.paper_flops = obj.paper_flops;
    summary.model_description = fam.describe();
    // Weights, and room for model.json and the curve: refused now rather than after training.
    check_space(files.dir(), 16 * fam.model().n_params as u64 + (1 << 20))?;
    let theta0 = match &spec.init_from {
        Some(dir) => {
            let th = initial_weights(fam.as_ref(), dir)?;
            summary.init_weights = Some(th.iter().filter(|w| **w != 0.0).count());
            th
        }
        None => vec![0.0; fam.model().n_params],
    };
    on_event(RunEvent::started(summary));
    let inference = spec.inference();
    let held_out: crate::run::curve::HeldOut = {
        let (fam, test, inference) = (fam.as_ref(), test.as_ref(), inference.clone());
        Box::new(move |theta: &[f64]| {
            test.map(|t| evaluate(fam, theta, t, &inference))
                .transpose()
        })
    };
    if let Some(c) = &resume {
        on_event(RunEvent::Note(resume_note(
            c,
            &shown,
            pool.current_num_threads(),
        )));
    }
    let mut checkpoints = Checkpoints::new(files.clone(), policy, obj.threads(), resume);
    if !schedule.resumable() {
        checkpoints.disable();
    }
    let curve = Curve::new(files.clone(), spec.eval_every, held_out, on_event)?;
    let mut cx = Context {
        spec,
        family: fam.as_ref(),
        instances: &instances,
        objective: &obj,
        run: files,
        cancel,
        summary,
        inference,
        curve,
        checkpoints,
    };
    let t0 = Instant::now();
    let result = schedule.fit(&mut cx, theta0)?;
    cx.checkpoints.check_reached()?;
    if let Some(e) = cx.curve.take_error() {
        return Err(e);
    }
    if let Some(e) = cx.checkpoints.failed.take() {
        cx.curve.send(RunEvent::Note(format!(
            "a checkpoint could not be written: {e}"
        )));
    }
    let cancelled = result.reason == StopReason::Cancelled;
    let mut result = result;
    if !cancelled {
        for step in schedule::post_steps(spec) {
            if let Some(theta) = step.apply(&mut cx, &result.theta)? {
                result.theta = theta;
            }
        }
    }
    let Context {
        summary,
        inference,
        curve,
        checkpoints,
        ..
    } = cx;
    summary.nota_terms = curve.nota_terms;
    summary.train_seconds =
        checkpoints.train_seconds + t0.elapsed().saturating_sub(curve.observed).as_secs_f64();
    summary.resumed_at = checkpoints.resumed_at.clone();
    summary.iterations = result.iterations;
    if let Some(l) = curve.last.as_ref().or(result.last.as_ref()) {
        summary.evaluations = l.evaluations;
        summary.ops = l.ops;
        summary.final_objective = Some(l.objective);
        summary.bp_unconverged = l.bp_unconverged;
    }
    summary.stop_reason = Some(result.reason);
    pool.install(|| files.save_model(fam.as_ref(), &result.theta))?;
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
    // Finished: its checkpoint (as large as the optimiser's state) is no longer needed.
    Checkpoints::remove(files)?;
    if let Some(t) = &test {
        summary.test = Some(evaluate(fam.as_ref(), &result.theta, t, &inference)?);
    }
    if let Some(train) = &train {
        summary.train = Some(evaluate(fam.as_ref(), &result.theta, train, &inference)?);
    }
    summary.status = "finished".into();
    Ok(())
}

/// Refuses a training whose objective (per thread) and optimiser history would not fit the
/// memory limit, before either is allocated.
fn check_training_memory(
    spec: &RunSpec,
    model: &crate::graph::Model,
    instances: &[crate::graph::Instance],
    threads: usize,
) -> Result<()> {
    let n = model.n_params;
    let objective = DatasetObjective::memory_estimate(model, instances, threads);
    let search = spec.optimiser.memory_estimate(n);
    crate::memory::check(
        objective.saturating_add(search),
        || {
            format!(
                "training {n} weights ({} for the objective on {threads} thread(s), {} for the \
                 optimiser's m = {} correction pairs)",
                crate::memory::shown(objective),
                crate::memory::shown(search),
                spec.optimiser.m
            )
        },
        "lower optimiser.m, the threads, or the features and labels",
    )
}

/// What a resume says: where it continues, and the threads when they are not those asked for.
fn resume_note(c: &Checkpoint, shown: &Path, asked: usize) -> String {
    let threads = if c.threads == asked {
        String::new()
    } else {
        format!(
            " on its {} thread(s), not the {asked} asked for: the objective's sums are split by \
             threads, so the run ends with the weights it would have had uninterrupted",
            c.threads
        )
    };
    format!(
        "resuming after iteration {} from {}{threads}",
        c.iteration(),
        shown.display()
    )
}
