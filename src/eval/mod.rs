//! Decoding and metrics, for every model family.

pub mod asymptotic;
pub mod evalb;
pub mod evalb_lines;
pub mod metrics;
pub mod parse_view;
pub mod parsing;
pub mod resampled_t;
pub mod significance;

pub use metrics::{score, Metrics, Prf, Scorer};

use crate::data::Corpus;
use crate::error::{Error, Result};
use crate::estimators::{BetheMl, Estimator, ExactMl, Workspace};
use crate::graph::{Family, Instance};
use crate::inference::bp::{self, BpOptions, Semiring};
use crate::inference::transitions::Transitions;
use crate::inference::{self, enumerate, Method, Task, MAX_ENUMERATION_STATES};
use rayon::prelude::*;

/// Graphs with at most this many joint states are decoded by enumeration when no faster exact
/// decoder applies.
pub const AUTO_ENUMERATION_STATES: u128 = 1 << 16;

/// How test-time labels are chosen.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum Decoder {
    /// Viterbi on chains and ladders (a factorial CRF's joint states), exact max-product BP on
    /// forests, enumeration on small graphs, max-product loopy BP otherwise (the papers'
    /// test-time inference).
    #[default]
    Auto,
    /// Viterbi over the potentials (chains, and ladders over their joint states): CRF-style
    /// "global" decoding, with the run's per-state scales when it has them.
    #[value(alias = "global")]
    #[serde(alias = "global")]
    Viterbi,
    /// MEMM decoding (chains only): Viterbi over the locally normalised next-state
    /// distributions p̃(y_t | y_{t−1}) with NOTA removed — what 001 found best for CRF-PT, and
    /// `auto` for memm and nota runs.
    Local,
    /// Max-product BP (exact on forests).
    MaxProduct,
    /// Enumeration of every joint assignment (small graphs only).
    Exact,
    /// Max-marginal (MPM): each variable's most probable state under sum-product BP's beliefs
    /// (exact marginals on forests) — the per-pixel error's Bayes decision, and what "RBP for
    /// inference" at test time gives on a loopy graph (002 §4).
    Marginal,
}

/// Test-time inference: the decoder, the BP options its loopy max-product uses, and a chain's
/// per-state scales when the run trained them (001 §3).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Inference {
    pub decoder: Decoder,
    pub bp: BpOptions,
    pub scaling: Option<std::sync::Arc<Vec<f64>>>,
}

impl Inference {
    /// The chain's per-position matrices for the local decoder and for per-state scales:
    /// `None` when neither applies (the factor tables serve).
    fn transitions(&self, inst: &Instance, phi: &[f64]) -> Result<Option<Transitions>> {
        let local = self.decoder == Decoder::Local;
        if !local && self.scaling.is_none() {
            return Ok(None);
        }
        let lay = inst.chain.as_ref().ok_or_else(|| {
            Error::invalid("local decoding and per-state scales apply to linear chains only")
        })?;
        let mut tr = Transitions::default();
        tr.fill(inst, lay, phi);
        if let Some(a) = &self.scaling {
            if a.len() != lay.l + 1 {
                return Err(Error::invalid(format!(
                    "the run's per-state scales are for {} labels, the model has {}",
                    a.len().saturating_sub(1),
                    lay.l
                )));
            }
            tr.scale(a);
        }
        if local {
            tr.normalise_rows();
        }
        Ok(Some(tr))
    }

    /// Viterbi over [`transitions`](Self::transitions)' matrices, with the decoder's name.
    fn viterbi_on(&self, tr: &mut Transitions) -> (Vec<u32>, &'static str) {
        let mut out = Vec::new();
        tr.viterbi(&mut out);
        let name = match (self.decoder, self.scaling.is_some()) {
            (Decoder::Local, false) => "local (MEMM Viterbi)",
            (Decoder::Local, true) => "local (MEMM Viterbi, per-state scaled)",
            _ => "viterbi (per-state scaled)",
        };
        (out, name)
    }
}

/// Which model a held-out log-likelihood scored with `decoder` is under, as every view labels
/// it: local decoding scores the MEMM's Σ log p̃(y_t | y_{t−1}, x) (what a MEMM or CRF-PT run
/// reports by default), per-state scales the scaled global model, the rest the global
/// log p(y | x). The two kinds are not comparable: a locally normalised sum is not a
/// likelihood under the global model (issue 66). The label spells p̃ as p(y_t|y_t−1): egui's
/// font has no combining tilde.
pub fn likelihood_under(decoder: Decoder, scaled: bool) -> &'static str {
    match (decoder, scaled) {
        (Decoder::Local, _) => "local Σ log p(y_t|y_t−1)",
        (_, true) => "global, per-state scaled",
        _ => "global log p(y|x)",
    }
}

impl Inference {
    /// The model this inference's held-out log-likelihood is under ([`likelihood_under`]).
    pub fn likelihood_under(&self) -> &'static str {
        likelihood_under(self.decoder, self.scaling.is_some())
    }
}

/// Log-potential tables of an instance under θ.
pub fn tables(family: &dyn Family, theta: &[f64], inst: &Instance) -> Vec<f64> {
    let mut phi = vec![0.0; inst.table_len];
    family
        .model()
        .build_tables(theta, inst, &mut phi, &mut Vec::new());
    phi
}

/// Most probable labelling from an instance's tables, and the name of the decoder that found it.
pub fn decode(
    inst: &Instance,
    phi: &[f64],
    how: &Inference,
    ws: &mut Workspace,
) -> Result<(Vec<u32>, &'static str)> {
    if let Some(mut tr) = how.transitions(inst, phi)? {
        return Ok(how.viterbi_on(&mut tr));
    }
    let decoder = match how.decoder {
        Decoder::Auto => match inference::choose(inst, Task::Map, AUTO_ENUMERATION_STATES) {
            Method::ForwardBackward | Method::ProductForwardBackward => Decoder::Viterbi,
            Method::TreeBp | Method::LoopyBp => Decoder::MaxProduct,
            Method::Enumeration => Decoder::Exact,
        },
        d => d,
    };
    match decoder {
        Decoder::Viterbi => {
            let mut out = Vec::new();
            if let Some(lay) = &inst.product {
                ws.infer.chain.viterbi_product(inst, lay, phi, &mut out);
                return Ok((out, "viterbi over joint states"));
            }
            let lay = inst.chain.as_ref().ok_or_else(|| {
                Error::invalid("Viterbi decodes chains and ladders only; use max-product")
            })?;
            ws.infer.chain.viterbi(inst, lay, phi, &mut out);
            Ok((out, "viterbi"))
        }
        Decoder::Exact => {
            if inst.joint_states() > MAX_ENUMERATION_STATES {
                return Err(Error::invalid(format!(
                    "exact decoding enumerates at most {MAX_ENUMERATION_STATES} joint states; this graph has {}",
                    inst.joint_states()
                )));
            }
            Ok((enumerate::enumerate_map(inst, phi)?.0, "enumeration"))
        }
        Decoder::Local => unreachable!("decoded above"),
        Decoder::MaxProduct | Decoder::Auto | Decoder::Marginal => {
            // (forest name, loopy name, unconverged name) of each BP decoder.
            let (semiring, names) = if decoder == Decoder::Marginal {
                (
                    Semiring::SumProduct,
                    [
                        "max-marginal (exact on a forest)",
                        "max-marginal loopy BP",
                        "max-marginal loopy BP (unconverged)",
                    ],
                )
            } else {
                (
                    Semiring::MaxProduct,
                    [
                        "max-product (exact on a forest)",
                        "max-product loopy BP",
                        "max-product loopy BP (unconverged)",
                    ],
                )
            };
            let opts = if inst.forest {
                bp::tree_bp_options(inst.n_vars())
            } else {
                how.bp
            };
            let w = &mut ws.infer;
            w.msgs.reset();
            let r = bp::run(inst, phi, &opts, semiring, &mut w.msgs, &mut w.bp);
            w.ops += r.ops;
            let name = match (inst.forest, r.converged) {
                (true, _) => names[0],
                (false, true) => names[1],
                (false, false) => names[2],
            };
            if semiring == Semiring::MaxProduct {
                return Ok((w.msgs.decode(inst, phi, &mut w.bp), name));
            }
            let mut b = Vec::new();
            let y = (0..inst.n_vars())
                .map(|v| {
                    w.msgs.var_belief(v, &mut b);
                    b.iter()
                        .enumerate()
                        .max_by(|a, b| a.1.total_cmp(b.1))
                        .map_or(0, |(k, _)| k as u32)
                })
                .collect();
            Ok((y, name))
        }
    }
}

/// The family's test-time decoding when it has one, else [`decode`].
fn decode_item(
    family: &dyn Family,
    inst: &Instance,
    item: &crate::data::Sequence,
    phi: &[f64],
    how: &Inference,
    ws: &mut Workspace,
) -> Result<(Vec<u32>, &'static str)> {
    match family.clamped_chain(inst, item, phi) {
        Some(c) => Ok((
            ws.infer.chain.viterbi_clamped(&c).0,
            "viterbi given the words",
        )),
        None => decode(inst, phi, how, ws),
    }
}

/// Predicted labels (as strings, every layer's for multi-layer families) for every item of
/// `corpus`.
pub fn predict(
    family: &dyn Family,
    theta: &[f64],
    corpus: &Corpus,
    how: &Inference,
) -> Result<Vec<Vec<String>>> {
    let insts = family.instances(corpus)?;
    insts
        .par_iter()
        .zip(&corpus.sequences)
        .map_init(Workspace::default, |ws, (inst, item)| {
            decode_item(family, inst, item, &tables(family, theta, inst), how, ws)
                .map(|(y, _)| family.output_labels(inst, &y))
        })
        .collect()
}

/// Decodes and scores a labelled corpus; adds the held-out log-likelihood (exact where exact
/// inference is possible, the Bethe approximation on larger loopy graphs).
pub fn evaluate(
    family: &dyn Family,
    theta: &[f64],
    corpus: &Corpus,
    how: &Inference,
) -> Result<Metrics> {
    if let Some(s) = corpus.sequences.iter().find(|s| !s.has_labels()) {
        return Err(Error::parse(
            &corpus.path,
            s.line,
            "evaluation needs gold labels",
        ));
    }
    let insts = family.instances(corpus)?;
    let bethe = BetheMl { opts: how.bp };
    // (primary labels, extra layers' labels, decoder, log-likelihood and whether it is Bethe's)
    type Row = (
        Vec<String>,
        Vec<Vec<String>>,
        &'static str,
        Option<(f64, bool)>,
    );
    let results: Vec<Row> = insts
        .par_iter()
        .zip(&corpus.sequences)
        .map_init(Workspace::default, |ws, (inst, item)| {
            let phi = tables(family, theta, inst);
            // Local decoding and per-state scales decode and score from one set of matrices:
            // the likelihood is the decoding model's (the MEMM's Σ log p̃, the scaled CRF's).
            if let Some(mut tr) = how.transitions(inst, &phi)? {
                let (y, by) = how.viterbi_on(&mut tr);
                let ll = inst
                    .gold
                    .as_ref()
                    .map(|g| (tr.score(g) - tr.forward_backward(), false));
                return Ok((
                    family.token_labels(inst, &y),
                    family.extra_labels(inst, &y),
                    by,
                    ll,
                ));
            }
            let (y, by) = decode_item(family, inst, item, &phi, how, ws)?;
            let ll = inst.gold.as_ref().map(|_| {
                if ExactMl.check(inst).is_ok() {
                    (ExactMl.evaluate(inst, &phi, None, ws), false)
                } else {
                    (bethe.evaluate(inst, &phi, None, ws), true)
                }
            });
            Ok((
                family.token_labels(inst, &y),
                family.extra_labels(inst, &y),
                by,
                ll,
            ))
        })
        .collect::<Result<_>>()?;
    let names = family.extra_layers();
    let mut layer_scorers: Vec<Scorer> = names.iter().map(|_| Scorer::default()).collect();
    let mut scorer = Scorer::default();
    let (mut ll, mut n_ll, mut n_bethe, mut ll_tokens) = (0.0, 0, 0, 0u64);
    let mut decoders = std::collections::BTreeMap::new();
    for (s, (pred, extra, by, l)) in corpus.sequences.iter().zip(&results) {
        scorer.add(&s.labels, pred);
        for ((sc, gold), p) in layer_scorers.iter_mut().zip(&s.layers).zip(extra) {
            sc.add(gold, p);
        }
        *decoders.entry(by.to_string()).or_insert(0) += 1;
        if let Some((l, b)) = l {
            ll += l;
            n_ll += 1;
            ll_tokens += s.len() as u64;
            n_bethe += *b as usize;
        }
    }
    let mut m = scorer.finish();
    m.log_likelihood = Some(ll);
    m.log_likelihood_under = how.likelihood_under().to_string();
    m.log_likelihood_sequences = n_ll;
    m.log_likelihood_tokens = ll_tokens;
    m.log_likelihood_bethe = n_bethe;
    m.decoders = decoders;
    m.layers = names
        .into_iter()
        .zip(layer_scorers)
        .map(|(n, sc)| (n, sc.finish()))
        .collect();
    Ok(m)
}
