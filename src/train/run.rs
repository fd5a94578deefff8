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

use super::lbfgs::{minimize, IterReport, LbfgsSpec, StopReason};
use super::objective::DatasetObjective;
use super::spec::RunSpec;
use crate::error::{Error, Result};
use crate::estimators::EstimatorSpec;
use crate::eval::{evaluate, Metrics};
use crate::graph::family;
use crate::util::{write_atomic, write_json_atomic};
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
    /// Seconds spent in the optimiser.
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
}

/// Adds a finished fit's evaluations, operations and seconds to what later fits carry.
fn carry(carried: &std::cell::Cell<(usize, u64, f64, f64)>, fit: &super::lbfgs::OptimResult) {
    if let Some(l) = &fit.last {
        let (e, o, s, f) = carried.get();
        carried.set((
            e + l.evaluations,
            o + l.ops,
            s + l.seconds,
            f + l.paper_flops.unwrap_or(0.0),
        ));
    }
}

/// The weights of the run in `dir` carried over to `fam` by name: the template, feature and
/// label names of each weight (the weights TSV), so a skip-chain starts from a linear chain's
/// `state`/`transition` weights and its `skip` weights at 0.
pub fn initial_weights(fam: &dyn crate::graph::Family, dir: &Path) -> Result<Vec<f64>> {
    let (from, theta) = crate::graph::family::load(dir)?;
    let text = crate::graph::family::dump_weights(from.as_ref(), &theta);
    crate::graph::family::read_weights(fam, &text, &dir.join("weights.bin").display().to_string())
}

/// One round of the β heuristic.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct BetaRound {
    pub beta: Vec<f64>,
    pub j: f64,
    pub iterations: usize,
}

/// Rounds of 004's Algorithm 1 at most.
pub const MAX_BETA_ROUNDS: usize = 5;

/// Executes `spec`, writing the run directory `out`. Events go to `on_event` as they happen.
pub fn execute(
    spec: &RunSpec,
    out: &Path,
    cancel: &AtomicBool,
    on_event: &mut dyn FnMut(RunEvent),
) -> Result<RunSummary> {
    std::fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
    write_json_atomic(&out.join("spec.json"), spec)?;
    let mut summary = RunSummary {
        status: "running".into(),
        estimator: spec.estimator.name().into(),
        ..Default::default()
    };
    write_json_atomic(&out.join("summary.json"), &summary)?;
    match run_inner(spec, out, cancel, on_event, &mut summary) {
        Ok(()) => {
            write_json_atomic(&out.join("summary.json"), &summary)?;
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
            write_json_atomic(&out.join("summary.json"), &summary)?;
            on_event(RunEvent::Failed(e.to_string()));
            Err(e)
        }
    }
}

/// SCL refitted from θ under another policy (a resampled Z, or new β), same prior and threads.
#[allow(clippy::too_many_arguments)]
fn refit_scl(
    spec: &RunSpec,
    model: &crate::graph::Model,
    instances: &[crate::graph::Instance],
    policy: crate::estimators::scl::SelectionPolicy,
    theta: Vec<f64>,
    opt: &LbfgsSpec,
    cancel: &AtomicBool,
    observer: &mut dyn FnMut(&IterReport, &[f64]),
) -> Result<super::lbfgs::OptimResult> {
    let est = EstimatorSpec::Scl { policy }.build(model)?;
    let obj = DatasetObjective::new(model, instances, est.as_ref(), spec.prior, spec.threads)?;
    minimize(&obj, theta, opt, cancel, observer)
}

/// 003's error-driven NOTA choice at θ, from the marginals of the model the run decodes with:
/// the MEMM's (locally normalised rows) for local decoding, the CRF's otherwise.
fn choose_nota(
    fam: &dyn crate::graph::Family,
    instances: &[crate::graph::Instance],
    theta: &[f64],
    threshold: f64,
    local: bool,
) -> crate::estimators::memm::NotaChoice {
    crate::estimators::memm::choose_by_marginals(instances, threshold, |inst, tr| {
        let phi = crate::eval::tables(fam, theta, inst);
        if let Some(lay) = &inst.chain {
            tr.fill(inst, lay, &phi);
            if local {
                tr.normalise_rows();
            }
            tr.forward_backward();
        }
    })
}

fn run_inner(
    spec: &RunSpec,
    out: &Path,
    cancel: &AtomicBool,
    on_event: &mut dyn FnMut(RunEvent),
    summary: &mut RunSummary,
) -> Result<()> {
    let setup = Instant::now();
    let mut train = spec.model.read(&spec.train)?;
    if let Some(n) = spec.train_sample {
        train = train.sample(n, spec.seed);
    }
    let (fam, instances) = spec.model.fit(&train, spec.template.as_deref())?;
    let test = spec.test.as_deref().map(|p| fam.read(p)).transpose()?;
    if let Some(t) = &test {
        fam.check(t)?;
    }
    let mut how = spec.inference();
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
    let theta0 = match &spec.init_from {
        Some(dir) => {
            let th = initial_weights(fam.as_ref(), dir)?;
            summary.init_weights = Some(th.iter().filter(|w| **w != 0.0).count());
            th
        }
        None => vec![0.0; fam.model().n_params],
    };
    let nota_count = std::cell::Cell::new(match &spec.estimator {
        EstimatorSpec::Nota { selection } => {
            Some(crate::estimators::NotaPt::new(selection.clone()).count(&instances))
        }
        _ => None,
    });
    on_event(RunEvent::Started {
        n_params: summary.n_params,
        n_sequences: summary.n_sequences,
        n_tokens: summary.n_tokens,
        threads: summary.threads,
    });
    let mut curve_text = String::new();
    let curve_path = out.join("curve.jsonl");
    write_atomic(&curve_path, b"")?;
    let mut io_error: Option<Error> = None;
    let last_seen: std::cell::RefCell<Option<IterReport>> = std::cell::RefCell::new(None);
    let t0 = Instant::now();
    let result = {
        // Later fits (resampled Z, β rounds) continue the curve: iterations, evaluations,
        // operations and seconds count on from where the previous fit stopped.
        let offset = std::cell::Cell::new(0usize);
        let carried = std::cell::Cell::new((0usize, 0u64, 0.0f64, 0.0f64));
        let mut observer = |r: &IterReport, theta: &[f64]| {
            let (e0, o0, s0, f0) = carried.get();
            let r = &IterReport {
                iteration: r.iteration + offset.get(),
                evaluations: r.evaluations + e0,
                ops: r.ops + o0,
                seconds: r.seconds + s0,
                paper_flops: r.paper_flops.map(|f| f + f0),
                nota_terms: nota_count.get(),
                ..r.clone()
            };
            last_seen.replace(Some(r.clone()));
            let mut point = CurvePoint {
                report: r.clone(),
                test_token_accuracy: None,
                test_segment_f1: None,
                test_log_likelihood: None,
            };
            on_event(RunEvent::Progress(r.clone()));
            if let (Some(t), true) = (
                &test,
                spec.eval_every > 0 && r.iteration.is_multiple_of(spec.eval_every),
            ) {
                if let Ok(m) = evaluate(fam.as_ref(), theta, t, &how) {
                    point.test_token_accuracy = Some(m.token_accuracy);
                    point.test_segment_f1 = m.segment_f1();
                    point.test_log_likelihood = m.log_likelihood;
                    on_event(RunEvent::Eval {
                        iteration: r.iteration,
                        metrics: Box::new(m),
                    });
                }
            }
            curve_text.push_str(&serde_json::to_string(&point).expect("curve point serialises"));
            curve_text.push('\n');
            if let Err(e) = write_atomic(&curve_path, curve_text.as_bytes()) {
                io_error.get_or_insert(e);
            }
        };
        if let EstimatorSpec::Camel { variant, camel } = &spec.estimator {
            // CAMEL (002): piecewise, then the dual with δ, relinearising g (CCCP); each fit
            // continues the curve, with the fit index and the sepset violation on every point.
            let n_w = fam.model().n_params;
            let mut cobj = super::camel::CamelObjective::new(fam.model(), &instances, spec.prior);
            let mut current = 0usize;
            let r = super::camel::fit(
                &mut cobj,
                *variant,
                theta0.clone(),
                camel,
                &spec.optimiser,
                cancel,
                &mut |k, rep, x, violation| {
                    if k != current {
                        current = k;
                        if let Some(l) = last_seen.borrow().as_ref() {
                            offset.set(l.iteration);
                            carried.set((
                                l.evaluations,
                                l.ops,
                                l.seconds,
                                l.paper_flops.unwrap_or(0.0),
                            ));
                        }
                    }
                    let rep = IterReport {
                        fit: Some(k),
                        violation: violation.is_finite().then_some(violation),
                        ..rep.clone()
                    };
                    observer(&rep, &x[..n_w]);
                },
            )?;
            summary.camel_fits = r.loops.clone();
            summary.camel_multipliers = cobj.n_delta();
            crate::util::write_json_atomic(
                &out.join("camel.json"),
                &super::camel::CamelRecord {
                    variant: *variant,
                    options: *camel,
                    fits: r.loops.clone(),
                    delta: cobj.delta_blocks(&r.x).iter().map(|d| d.to_vec()).collect(),
                    g: cobj.g.clone(),
                },
            )?;
            let iterations = last_seen.borrow().as_ref().map_or(0, |l| l.iteration);
            super::lbfgs::OptimResult {
                theta: r.x[..n_w].to_vec(),
                iterations,
                reason: r.reason,
                last: None,
            }
        } else {
            let resample = spec.estimator.policy().map_or(0, |p| p.resample_every);
            let error_driven = match spec.estimator.nota() {
                Some(crate::estimators::NotaSelection::ErrorDriven {
                    after,
                    threshold,
                    refresh,
                }) => Some((*after, *threshold, *refresh)),
                _ => None,
            };
            let first_block = match (resample, error_driven) {
                (r, _) if r > 0 => r,
                (_, Some((after, ..))) => after.max(1),
                _ => spec.optimiser.max_iter,
            };
            let mut first = minimize(
                &obj,
                theta0.clone(),
                &LbfgsSpec {
                    max_iter: first_block.min(spec.optimiser.max_iter),
                    ..spec.optimiser.clone()
                },
                cancel,
                &mut observer,
            )?;
            // 003: after `after` iterations, NOTA terms for the wrong states the current model
            // finds likely; with `refresh`, chosen anew every `refresh` iterations.
            if let Some((_, threshold, refresh)) = error_driven {
                let mut done = first.iterations;
                let local = how.decoder == crate::eval::Decoder::Local;
                let mut round = 0;
                while first.reason != super::lbfgs::StopReason::Cancelled
                    && done < spec.optimiser.max_iter
                    && (round == 0 || (refresh > 0 && first.reason == StopReason::MaxIterations))
                {
                    round += 1;
                    let choice =
                        choose_nota(fam.as_ref(), &instances, &first.theta, threshold, local);
                    let est = crate::estimators::NotaPt {
                        selection: spec.estimator.nota().cloned().unwrap_or_default(),
                        chosen: Some(std::sync::Arc::new(choice)),
                    };
                    let k = est.count(&instances);
                    summary.nota_choices.push((done, k));
                    nota_count.set(Some(k));
                    let obj2 = DatasetObjective::new(
                        fam.model(),
                        &instances,
                        &est,
                        spec.prior,
                        spec.threads,
                    )?;
                    offset.set(done);
                    carry(&carried, &first);
                    let rest = spec.optimiser.max_iter - done;
                    let opt = LbfgsSpec {
                        max_iter: if refresh > 0 { refresh.min(rest) } else { rest },
                        ..spec.optimiser.clone()
                    };
                    first = minimize(&obj2, first.theta.clone(), &opt, cancel, &mut observer)?;
                    done += first.iterations;
                }
                first.iterations = done;
            }
            // `--resample-every N`: a new Z (the policy's seed moved on) every N iterations, θ kept.
            if let Some(p0) = spec.estimator.policy().filter(|_| resample > 0) {
                let mut done = first.iterations;
                let mut block = 0u64;
                while first.reason == super::lbfgs::StopReason::MaxIterations
                    && done < spec.optimiser.max_iter
                {
                    block += 1;
                    let mut policy = p0.clone();
                    policy.seed = p0.seed.wrapping_add(block);
                    offset.set(done);
                    carry(&carried, &first);
                    let opt = LbfgsSpec {
                        max_iter: resample.min(spec.optimiser.max_iter - done),
                        ..spec.optimiser.clone()
                    };
                    first = refit_scl(
                        spec,
                        fam.model(),
                        &instances,
                        policy,
                        first.theta.clone(),
                        &opt,
                        cancel,
                        &mut observer,
                    )?;
                    done += first.iterations;
                    summary.resamples = block as usize;
                }
                first.iterations = done;
            }
            // 004 Algorithm 1: alternate choosing β (eq. 16, Hadamard approximation) and refitting θ
            // from the last θ, until β settles.
            match spec.estimator.policy().filter(|p| p.auto_beta) {
                None => first,
                Some(p0) => {
                    let mut policy = p0.clone();
                    let mut result = first;
                    let lambdas: Vec<f64> =
                        policy.groups.iter().flatten().map(|x| x.lambda).collect();
                    for _ in 0..MAX_BETA_ROUNDS {
                        if result.reason == super::lbfgs::StopReason::Cancelled {
                            break;
                        }
                        let k = super::beta::diag_covariances(
                            fam.model(),
                            &instances,
                            &policy,
                            &result.theta,
                        )?;
                        let (beta, j) = k.best_beta(&lambdas);
                        let old: Vec<f64> =
                            policy.groups.iter().flatten().map(|x| x.beta).collect();
                        summary.beta_rounds.push(BetaRound {
                            beta: beta.clone(),
                            j,
                            iterations: result.iterations,
                        });
                        if old.iter().zip(&beta).all(|(a, b)| (a - b).abs() < 1e-3) {
                            break;
                        }
                        policy.set_betas(&beta);
                        result = refit_scl(
                            spec,
                            fam.model(),
                            &instances,
                            policy.clone(),
                            result.theta.clone(),
                            &spec.optimiser,
                            cancel,
                            &mut observer,
                        )?;
                    }
                    result
                }
            }
        }
    };
    if let Some(e) = io_error {
        return Err(e);
    }
    summary.nota_terms = nota_count.get();
    // 001 §3: per-state scales by global likelihood, the weights fixed.
    if spec.per_state_scaling && result.reason != StopReason::Cancelled {
        let labels = instances
            .first()
            .map(|i| fam.labels(i, 0).names.clone())
            .unwrap_or_default();
        let sc = super::scaling::fit(
            fam.model(),
            &instances,
            &result.theta,
            &labels,
            spec.prior,
            &spec.optimiser,
            cancel,
        )?;
        write_json_atomic(&out.join(super::scaling::SCALING_FILE), &sc)?;
        summary.per_state_scales = Some(sc.alpha.clone());
        how.scaling = Some(std::sync::Arc::new(sc.alpha));
    }
    summary.train_seconds = t0.elapsed().as_secs_f64();
    summary.iterations = result.iterations;
    if let Some(l) = last_seen.borrow().as_ref().or(result.last.as_ref()) {
        summary.evaluations = l.evaluations;
        summary.ops = l.ops;
        summary.final_objective = Some(l.objective);
        summary.bp_unconverged = l.bp_unconverged;
    }
    let cancelled = result.reason == StopReason::Cancelled;
    summary.stop_reason = Some(result.reason);
    family::save(out, fam.as_ref(), &result.theta)?;
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
        summary.test = Some(evaluate(fam.as_ref(), &result.theta, t, &how)?);
    }
    if spec.eval_train {
        summary.train = Some(evaluate(fam.as_ref(), &result.theta, &train, &how)?);
    }
    summary.status = "finished".into();
    Ok(())
}

/// Reads the model of a run directory (any family).
pub use crate::graph::family::load as load_model;
