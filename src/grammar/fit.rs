//! Fitting a grammar estimator: L-BFGS on its objective (the generative PCFG in closed form),
//! and PT-CFG's error-driven rounds — fit, choose the NOTA edges whose score comes closest to the
//! best edge of their length (a ratio threshold, or the one that selects a given number per
//! sentence), refit (001 §5).

use super::chart::{viterbi, ChartWork, Scoring};
use super::train::*;
use super::{Grammar, Sentence};
use crate::error::{Error, Result};
use crate::estimators::NotaSelection;
use crate::optim::lbfgs::{minimize, IterReport, LbfgsSpec, OptimResult};
use crate::optim::Prior;
use rayon::prelude::*;
use std::sync::atomic::AtomicBool;

/// What training reports beside the weights.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct TrainReport {
    pub iterations: usize,
    pub seconds: f64,
    /// NOTA terms in the final objective (PT-CFG).
    pub nota_instances: usize,
    /// Seconds spent parsing the training set to choose NOTA edges.
    pub selection_seconds: f64,
    /// The threshold chosen to meet a per-sentence count of NOTA edges.
    pub nota_threshold: Option<f64>,
    /// Why the optimiser stopped (`None`: the closed-form PCFG).
    pub stop: Option<crate::optim::lbfgs::StopReason>,
    /// The optimiser's last iteration.
    #[serde(skip)]
    pub last: Option<IterReport>,
}

/// Trains `estimator` on `sentences` (each with its gold tree).
#[allow(clippy::too_many_arguments)]
pub fn train(
    g: &Grammar,
    sentences: &[Sentence],
    estimator: &GrammarEstimator,
    prior: Prior,
    lbfgs: &LbfgsSpec,
    threads: usize,
    cancel: &AtomicBool,
    observer: &mut dyn FnMut(&IterReport, &[f64]),
) -> Result<(Vec<f64>, TrainReport)> {
    let start = std::time::Instant::now();
    let mut report = TrainReport::default();
    if sentences.iter().any(|s| s.gold.is_none()) {
        return Err(Error::invalid(
            "every training sentence needs its gold tree in the grammar",
        ));
    }
    let run = |est: GrammarEstimator,
               nota: Option<NotaEdges>,
               theta0: Vec<f64>,
               spec: &LbfgsSpec,
               observer: &mut dyn FnMut(&IterReport, &[f64])|
     -> Result<OptimResult> {
        let obj = GrammarObjective::new(g, sentences, est, nota, prior, threads)?;
        obj.value_and_grad(&theta0, None)?;
        minimize(&obj, theta0, spec, cancel, observer)
    };
    let theta = match estimator {
        GrammarEstimator::Generative => generative(g),
        GrammarEstimator::Memm | GrammarEstimator::Ml => {
            let r = run(
                estimator.clone(),
                None,
                vec![0.0; g.n_params],
                lbfgs,
                observer,
            )?;
            report.iterations = r.iterations;
            report.stop = Some(r.reason);
            report.last = r.last;
            r.theta
        }
        GrammarEstimator::Nota {
            selection,
            per_sentence,
        } => {
            selection.check()?;
            let (edges, theta0, done) = match *selection {
                NotaSelection::Exhaustive => (
                    NotaEdges::Every {
                        fraction: 1.0,
                        seed: 0,
                    },
                    vec![0.0; g.n_params],
                    0,
                ),
                NotaSelection::Sampled { fraction, seed } => (
                    NotaEdges::Every { fraction, seed },
                    vec![0.0; g.n_params],
                    0,
                ),
                NotaSelection::ErrorDriven {
                    after, threshold, ..
                } => {
                    let first = LbfgsSpec {
                        max_iter: after,
                        ..lbfgs.clone()
                    };
                    let r = run(
                        GrammarEstimator::Memm,
                        None,
                        vec![0.0; g.n_params],
                        &first,
                        observer,
                    )?;
                    if r.reason == crate::optim::lbfgs::StopReason::Cancelled {
                        return Err(Error::Cancelled);
                    }
                    let t0 = std::time::Instant::now();
                    let threshold = match per_sentence {
                        Some(k) => {
                            let t = nota_threshold_for(g, &r.theta, sentences, *k, threads)?;
                            report.nota_threshold = Some(t);
                            t
                        }
                        None => threshold,
                    };
                    let chosen = select_nota(g, &r.theta, sentences, threshold, threads)?;
                    report.selection_seconds = t0.elapsed().as_secs_f64();
                    (NotaEdges::Chosen(chosen), r.theta, r.iterations)
                }
            };
            report.nota_instances = edges.count(g, sentences);
            let rest = LbfgsSpec {
                max_iter: lbfgs.max_iter.saturating_sub(done).max(1),
                ..lbfgs.clone()
            };
            let r = run(estimator.clone(), Some(edges), theta0, &rest, observer)?;
            report.iterations = done + r.iterations;
            report.stop = Some(r.reason);
            report.last = r.last;
            r.theta
        }
    };
    report.seconds = start.elapsed().as_secs_f64();
    Ok((theta, report))
}

/// Calls `f(a, i, j, log ratio)` for every wrong edge (A, i, j), j − i ≥ 2, A with binary
/// rules, in the MECFG's Viterbi chart at `theta`: the log ratio of its best score to the best
/// edge's of the same length (001 §5).
fn wrong_edges(
    g: &Grammar,
    theta: &[f64],
    sent: &Sentence,
    w: &mut ChartWork,
    mut f: impl FnMut(u32, usize, usize, f64),
) {
    let n = sent.forms.len();
    // The chart keeps every edge's best score, parse or not.
    let _ = viterbi(g, theta, sent, Scoring::Local, w);
    let gold = sent.gold.as_ref();
    for len in 2..=n {
        let mut best = f64::NEG_INFINITY;
        for i in 0..=n - len {
            for &a in w.present(i, i + len) {
                best = best.max(w.edge_score(i, i + len, a));
            }
        }
        for i in 0..=n - len {
            let j = i + len;
            for &a in w.present(i, j) {
                let r = &g.by_parent[a as usize];
                if r.start == r.end {
                    continue;
                }
                let is_gold = gold.is_some_and(|gd| {
                    gd.binary.iter().any(|&(gr, gi, _, gj)| {
                        gi as usize == i && gj as usize == j && g.rules[gr as usize].a == a
                    })
                });
                if !is_gold {
                    f(a, i, j, w.edge_score(i, j, a) - best);
                }
            }
        }
    }
}

fn pool(threads: usize) -> Result<rayon::ThreadPool> {
    crate::util::thread_pool(threads)
}

/// The ratio threshold that selects about `per_sentence` wrong edges per sentence: the
/// log ratios binned by 0.01 over [−100, 0], the threshold at the bin where the count from
/// the top reaches the target.
pub fn nota_threshold_for(
    g: &Grammar,
    theta: &[f64],
    sentences: &[Sentence],
    per_sentence: f64,
    threads: usize,
) -> Result<f64> {
    const BINS: usize = 10_000;
    let hist = pool(threads)?.install(|| {
        sentences
            .par_iter()
            .map_init(ChartWork::default, |w, sent| {
                let mut h = vec![0u64; BINS];
                wrong_edges(g, theta, sent, w, |_, _, _, lr| {
                    let b = (-lr * 100.0).floor();
                    if b < BINS as f64 {
                        h[b.max(0.0) as usize] += 1;
                    }
                });
                h
            })
            .reduce(
                || vec![0u64; BINS],
                |mut a, b| {
                    a.iter_mut().zip(&b).for_each(|(x, y)| *x += y);
                    a
                },
            )
    });
    let target = (per_sentence * sentences.len() as f64) as u64;
    let mut acc = 0;
    for (b, &c) in hist.iter().enumerate() {
        acc += c;
        if acc >= target {
            return Ok((-(b as f64 + 1.0) / 100.0).exp());
        }
    }
    Ok((-(BINS as f64) / 100.0).exp())
}

/// 001 §5's error-driven NOTA edges: parse each training sentence with the MECFG at `theta`
/// and keep every wrong edge (A, i, j), j − i ≥ 2, whose best score is within a factor
/// `threshold` of the best edge of the same length: `score − best_len > log threshold`.
pub fn select_nota(
    g: &Grammar,
    theta: &[f64],
    sentences: &[Sentence],
    threshold: f64,
    threads: usize,
) -> Result<Vec<Vec<(u32, u32, u32)>>> {
    let log_t = threshold.ln();
    Ok(pool(threads)?.install(|| {
        sentences
            .par_iter()
            .map_init(ChartWork::default, |w, sent| {
                let mut out = Vec::new();
                wrong_edges(g, theta, sent, w, |a, i, j, lr| {
                    if lr > log_t {
                        out.push((a, i as u32, j as u32));
                    }
                });
                out
            })
            .collect()
    }))
}
