//! Estimators on the grammar family (001 §5) and the objective L-BFGS minimises.
//!
//! - `generative`: relative-frequency PCFG, `θ_rule = log p(B C | A)`, leaf weights
//!   `log p(form | tag)` (rare and unknown words pooled by signature).
//! - `memm` (the MECFG): `Σ_gold edges log p(B C [, k] | A, i, j)`, each normalised over A's
//!   rules (and split points).
//! - `nota` (PT-CFG, 001 eq. 6 on the chart): every gold normaliser holds the NOTA outcome
//!   (`log(1 + Z)`), and each selected wrong edge (A, i, j) adds `−log(1 + Z(A, i, j))`.
//! - `ml` (the CRF-CFG): `log p(tree | x) = score(tree) − log Σ_trees exp score`, exact by
//!   inside–outside.
//!
//! Each term is data ([`ChartTerm`]), so the term stepper draws what is computed.

use super::chart::{
    edge_features, edge_score, inside_outside, leaf_param, leaf_score, split_rows, ChartWork,
    Scoring,
};
use super::{len_class, Grammar, Sentence};
use crate::error::{Error, Result};
use crate::estimators::NotaSelection;
use crate::optim::{Evaluation, Objective, Prior};
use rayon::prelude::*;
use std::sync::Mutex;

/// The estimators of this family.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "name", rename_all = "kebab-case")]
pub enum GrammarEstimator {
    Generative,
    Memm,
    Nota {
        #[serde(default)]
        selection: NotaSelection,
        /// Error-driven only: choose the threshold so that about this many NOTA edges per
        /// training sentence are selected (001 reports ≈ 160), in place of `threshold`.
        #[serde(default)]
        per_sentence: Option<f64>,
    },
    Ml,
}

impl GrammarEstimator {
    pub fn name(&self) -> &'static str {
        match self {
            GrammarEstimator::Generative => "generative",
            GrammarEstimator::Memm => "memm",
            GrammarEstimator::Nota { .. } => "nota",
            GrammarEstimator::Ml => "ml",
        }
    }
    /// The paper's name for the row (001 Table 2).
    pub fn paper_name(&self) -> &'static str {
        match self {
            GrammarEstimator::Generative => "GENERATIVE",
            GrammarEstimator::Memm => "MECFG",
            GrammarEstimator::Nota { .. } => "PT-CFG",
            GrammarEstimator::Ml => "CRF-CFG (global)",
        }
    }
    /// How the trained model decodes: the locally normalised models by their local
    /// probabilities (NOTA removed), the others by their global score.
    pub fn scoring(&self) -> Scoring {
        match self {
            GrammarEstimator::Memm | GrammarEstimator::Nota { .. } => Scoring::Local,
            _ => Scoring::Global,
        }
    }
}

/// One term of an objective over a sentence's chart.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ChartTerm {
    /// `log p(rule, k | A, i, j)`: A's expansions free, A clamped over i..j; `nota`: the
    /// normaliser holds the NOTA outcome.
    Expansion {
        rule: u32,
        i: u32,
        k: u32,
        j: u32,
        nota: bool,
    },
    /// `log p(NOTA | A, i, j)` for a wrong edge.
    Nota { a: u32, i: u32, j: u32 },
    /// `log p(X | TOP)`: the root rule among the root labels (locally normalised models).
    Root { nota: bool },
    /// `log p(tree | x)` under the global model.
    Global,
}

/// Which wrong edges get a NOTA term, per sentence.
#[derive(Clone, Debug)]
pub enum NotaEdges {
    /// Every wrong edge with binary rules (`fraction` 1) or each kept with probability
    /// `fraction` (seeded hash of sentence, label and span): generated when evaluated.
    Every { fraction: f64, seed: u64 },
    /// Chosen edges (error-driven).
    Chosen(Vec<Vec<(u32, u32, u32)>>),
}

impl NotaEdges {
    fn keep(fraction: f64, seed: u64, s: usize, a: u32, i: usize, j: usize) -> bool {
        if fraction >= 1.0 {
            return true;
        }
        // SplitMix64 of the edge: a fixed, reproducible coin per edge.
        let mut z = seed
            ^ (s as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
            ^ ((a as u64) << 40)
            ^ ((i as u64) << 20)
            ^ j as u64;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        ((z >> 11) as f64 / (1u64 << 53) as f64) < fraction
    }

    /// The wrong edges of sentence `s` (index `s` in the training set).
    pub fn edges(&self, g: &Grammar, s: usize, sent: &Sentence, out: &mut Vec<(u32, u32, u32)>) {
        out.clear();
        match self {
            NotaEdges::Chosen(v) => out.extend_from_slice(&v[s]),
            NotaEdges::Every { fraction, seed } => {
                let n = sent.forms.len();
                let gold = sent.gold.as_ref();
                for len in 2..=n {
                    for i in 0..=n - len {
                        let j = i + len;
                        for (a, r) in g.by_parent.iter().enumerate() {
                            if r.start == r.end {
                                continue;
                            }
                            let is_gold = gold.is_some_and(|gd| {
                                gd.binary.iter().any(|&(gr, gi, _, gj)| {
                                    gi as usize == i
                                        && gj as usize == j
                                        && g.rules[gr as usize].a == a as u32
                                })
                            });
                            if !is_gold && Self::keep(*fraction, *seed, s, a as u32, i, j) {
                                out.push((a as u32, i as u32, j as u32));
                            }
                        }
                    }
                }
            }
        }
    }

    pub fn count(&self, g: &Grammar, sents: &[Sentence]) -> usize {
        let mut buf = Vec::new();
        sents
            .iter()
            .enumerate()
            .map(|(s, sent)| {
                self.edges(g, s, sent, &mut buf);
                buf.len()
            })
            .sum()
    }
}

/// The terms of one sentence under an estimator (NOTA edges given separately).
pub fn terms(
    est: &GrammarEstimator,
    sent: &Sentence,
    nota_edges: &[(u32, u32, u32)],
    out: &mut Vec<ChartTerm>,
) {
    out.clear();
    let Some(gold) = &sent.gold else { return };
    match est {
        GrammarEstimator::Ml => out.push(ChartTerm::Global),
        GrammarEstimator::Generative => {}
        GrammarEstimator::Memm | GrammarEstimator::Nota { .. } => {
            let nota = matches!(est, GrammarEstimator::Nota { .. });
            out.push(ChartTerm::Root { nota });
            for &(rule, i, k, j) in &gold.binary {
                out.push(ChartTerm::Expansion {
                    rule,
                    i,
                    k,
                    j,
                    nota,
                });
            }
            if nota {
                out.extend(
                    nota_edges
                        .iter()
                        .map(|&(a, i, j)| ChartTerm::Nota { a, i, j }),
                );
            }
        }
    }
}

/// Scratch for local terms.
#[derive(Clone, Debug, Default)]
pub struct LocalWork {
    s: Vec<f64>,
}

/// A local term's value: `log p(gold | A, i, j)` (gold `Some((rule, k))`) or
/// `log p(NOTA | A, i, j)`, with the NOTA outcome in the normaliser when `nota`. With `grad`,
/// adds `scale · ∂value/∂θ`.
#[allow(clippy::too_many_arguments)]
pub fn local_term(
    g: &Grammar,
    theta: &[f64],
    sent: &Sentence,
    a: u32,
    i: usize,
    j: usize,
    gold: Option<(u32, usize)>,
    nota: bool,
    grad: Option<(&mut [f64], f64)>,
    w: &mut LocalWork,
) -> f64 {
    let range = g.by_parent[a as usize].clone();
    let (lo, hi) = (range.start, range.end);
    let m = (hi - lo) as usize;
    let slots = if g.options.split { j - i - 1 } else { 1 };
    if w.s.len() < slots * m {
        w.s.resize(slots * m, 0.0);
    }
    let lc = len_class(j - i);
    let base = [sent.first[i][lc], sent.last[j - 1][lc]];
    {
        let s0 = &mut w.s[..m];
        s0.copy_from_slice(&theta[lo as usize..hi as usize]);
        for f in base.into_iter().flatten() {
            for &(r, p) in g.span_rows.row_in(f, lo, hi) {
                s0[(r - lo) as usize] += theta[p as usize];
            }
        }
    }
    if g.options.split {
        for slot in (0..slots).rev() {
            let k = i + 1 + slot;
            if slot > 0 {
                w.s.copy_within(0..m, slot * m);
            }
            let sk = &mut w.s[slot * m..(slot + 1) * m];
            for f in split_rows(g, sent, i, k, j).into_iter().flatten() {
                for &(r, p) in g.span_rows.row_in(f, lo, hi) {
                    sk[(r - lo) as usize] += theta[p as usize];
                }
            }
        }
    }
    let all = &mut w.s[..slots * m];
    let mut mx = all.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if nota {
        mx = mx.max(0.0);
    }
    let mut z: f64 = all.iter().map(|x| (x - mx).exp()).sum();
    if nota {
        z += (-mx).exp();
    }
    let log_z = mx + z.ln();
    let value = match gold {
        Some((r, k)) => {
            let slot = if g.options.split { k - i - 1 } else { 0 };
            all[slot * m + (r - lo) as usize] - log_z
        }
        None => -log_z,
    };
    let Some((grad, scale)) = grad else {
        return value;
    };
    if let Some((r, k)) = gold {
        edge_features(g, sent, r, i, k, j, grad, scale);
    }
    // −E[features] under p(· | A, i, j): probabilities in place.
    all.iter_mut().for_each(|x| *x = (*x - log_z).exp());
    for slot in 0..slots {
        let p = &all[slot * m..(slot + 1) * m];
        for (gr, &x) in grad[lo as usize..hi as usize].iter_mut().zip(p) {
            *gr -= scale * x;
        }
        for f in base.into_iter().flatten() {
            for &(r, q) in g.span_rows.row_in(f, lo, hi) {
                grad[q as usize] -= scale * p[(r - lo) as usize];
            }
        }
        if g.options.split {
            let k = i + 1 + slot;
            for f in split_rows(g, sent, i, k, j).into_iter().flatten() {
                for &(r, q) in g.span_rows.row_in(f, lo, hi) {
                    grad[q as usize] -= scale * p[(r - lo) as usize];
                }
            }
        }
    }
    value
}

/// `log p(X | TOP)` for the gold root X, normalised over the root labels (and the NOTA outcome
/// when `nota`); with `grad`, adds `scale · ∂/∂θ`.
fn root_term(
    g: &Grammar,
    theta: &[f64],
    sent: &Sentence,
    nota: bool,
    grad: Option<(&mut [f64], f64)>,
) -> f64 {
    let root = sent.gold.as_ref().expect("gold tree").root;
    let log_z = g.root_log_z(theta, nota);
    if let Some((grad, scale)) = grad {
        grad[g.root_param(root)] += scale;
        for &a in &g.roots {
            grad[g.root_param(a)] -= scale * (theta[g.root_param(a)] - log_z).exp();
        }
    }
    theta[g.root_param(root)] - log_z
}

/// The gold tree's global score and, with `grad`, `scale ·` its features.
pub fn gold_score(
    g: &Grammar,
    theta: &[f64],
    sent: &Sentence,
    mut grad: Option<(&mut [f64], f64)>,
) -> f64 {
    let gold = sent.gold.as_ref().expect("gold tree");
    let mut v = theta[g.root_param(gold.root)];
    if let Some((gr, scale)) = grad.as_mut() {
        gr[g.root_param(gold.root)] += *scale;
    }
    for &(r, i, k, j) in &gold.binary {
        let (i, k, j) = (i as usize, k as usize, j as usize);
        v += edge_score(g, theta, sent, r, i, k, j);
        if let Some((gr, scale)) = grad.as_mut() {
            edge_features(g, sent, r, i, k, j, gr, *scale);
        }
    }
    for (i, &a) in gold.tags.iter().enumerate() {
        v += leaf_score(g, theta, sent, i, a);
        if let Some((gr, scale)) = grad.as_mut() {
            gr[g.tag_param(a)] += *scale;
            if let Some(p) = leaf_param(g, sent, i, a) {
                gr[p] += *scale;
            }
        }
    }
    v
}

/// Per-thread scratch for evaluating terms.
#[derive(Clone, Debug, Default)]
pub struct TermWork {
    pub chart: ChartWork,
    pub local: LocalWork,
    pub terms: Vec<ChartTerm>,
    pub nota: Vec<(u32, u32, u32)>,
}

/// The value of a list of terms on one sentence; with `grad`, adds `scale · ∂value/∂θ`.
pub fn evaluate_terms(
    g: &Grammar,
    theta: &[f64],
    sent: &Sentence,
    terms: &[ChartTerm],
    mut grad: Option<(&mut [f64], f64)>,
    w: &mut TermWork,
) -> Result<f64> {
    let mut v = 0.0;
    for t in terms {
        let gr = grad.as_mut().map(|(gr, s)| (&mut **gr, *s));
        v += match *t {
            ChartTerm::Expansion {
                rule,
                i,
                k,
                j,
                nota,
            } => {
                let a = g.rules[rule as usize].a;
                let (i, k, j) = (i as usize, k as usize, j as usize);
                local_term(
                    g,
                    theta,
                    sent,
                    a,
                    i,
                    j,
                    Some((rule, k)),
                    nota,
                    gr,
                    &mut w.local,
                )
            }
            ChartTerm::Nota { a, i, j } => local_term(
                g,
                theta,
                sent,
                a,
                i as usize,
                j as usize,
                None,
                true,
                gr,
                &mut w.local,
            ),
            ChartTerm::Root { nota } => root_term(g, theta, sent, nota, gr),
            ChartTerm::Global => {
                let (gr, scale) = match gr {
                    Some((gr, s)) => (Some(gr), s),
                    None => (None, 1.0),
                };
                let mut gr = gr;
                let score = gold_score(g, theta, sent, gr.as_mut().map(|x| (&mut **x, scale)));
                let log_z = inside_outside(g, theta, sent, &mut w.chart, gr.map(|x| (x, -scale)))
                    .ok_or_else(|| {
                    Error::invalid("the grammar cannot parse a training tree's words")
                })?;
                score - log_z
            }
        };
    }
    Ok(v)
}

struct Local {
    grad: Vec<f64>,
    work: TermWork,
    value: f64,
    error: Option<Error>,
}

/// Σ over sentences of an estimator's terms, with a Gaussian prior: what L-BFGS minimises.
pub struct GrammarObjective<'a> {
    pub grammar: &'a Grammar,
    pub sentences: &'a [Sentence],
    pub estimator: GrammarEstimator,
    pub nota: Option<NotaEdges>,
    pub prior: Prior,
    pool: rayon::ThreadPool,
    ranges: Vec<std::ops::Range<usize>>,
    locals: Vec<Mutex<Local>>,
}

impl<'a> GrammarObjective<'a> {
    pub fn new(
        grammar: &'a Grammar,
        sentences: &'a [Sentence],
        estimator: GrammarEstimator,
        nota: Option<NotaEdges>,
        prior: Prior,
        threads: usize,
    ) -> Result<Self> {
        let pool = crate::util::thread_pool(threads)?;
        let workers = pool.current_num_threads();
        // Contiguous ranges balanced by the cubic cost of a chart, summed in order.
        let cost: Vec<f64> = sentences
            .iter()
            .map(|s| (s.forms.len() as f64).powi(3))
            .collect();
        let total: f64 = cost.iter().sum::<f64>().max(1.0);
        let parts = (workers * 4).min(sentences.len()).max(1);
        let mut ranges = Vec::with_capacity(parts);
        let (mut start, mut acc) = (0, 0.0);
        for (i, c) in cost.iter().enumerate() {
            acc += c;
            if acc >= total * (ranges.len() + 1) as f64 / parts as f64 && ranges.len() + 1 < parts {
                ranges.push(start..i + 1);
                start = i + 1;
            }
        }
        ranges.push(start..sentences.len());
        let locals = ranges
            .iter()
            .map(|_| {
                Mutex::new(Local {
                    grad: Vec::new(),
                    work: TermWork::default(),
                    value: 0.0,
                    error: None,
                })
            })
            .collect();
        Ok(GrammarObjective {
            grammar,
            sentences,
            estimator,
            nota,
            prior,
            pool,
            ranges,
            locals,
        })
    }

    /// Σ value over sentences; the first error (a sentence the grammar cannot parse) aborts.
    pub fn value_and_grad(&self, x: &[f64], grad: Option<&mut [f64]>) -> Result<f64> {
        let want = grad.is_some();
        let n = self.grammar.n_params;
        self.pool.install(|| {
            self.ranges
                .par_iter()
                .zip(&self.locals)
                .for_each(|(range, local)| {
                    let mut l = local.lock().expect("not poisoned");
                    let l = &mut *l;
                    l.value = 0.0;
                    l.error = None;
                    if want {
                        l.grad.clear();
                        l.grad.resize(n, 0.0);
                    }
                    for s in range.clone() {
                        let sent = &self.sentences[s];
                        let mut terms_buf = std::mem::take(&mut l.work.terms);
                        let mut nota_buf = std::mem::take(&mut l.work.nota);
                        if let Some(e) = &self.nota {
                            e.edges(self.grammar, s, sent, &mut nota_buf);
                        } else {
                            nota_buf.clear();
                        }
                        terms(&self.estimator, sent, &nota_buf, &mut terms_buf);
                        let gr = want.then(|| (&mut l.grad[..], 1.0));
                        match evaluate_terms(self.grammar, x, sent, &terms_buf, gr, &mut l.work) {
                            Ok(v) => l.value += v,
                            Err(e) => {
                                l.error.get_or_insert(e);
                            }
                        }
                        l.work.terms = terms_buf;
                        l.work.nota = nota_buf;
                    }
                });
        });
        let mut value = 0.0;
        let mut grad = grad;
        if let Some(g) = grad.as_mut() {
            g.fill(0.0);
        }
        for local in &self.locals {
            let mut l = local.lock().expect("not poisoned");
            if let Some(e) = l.error.take() {
                return Err(e);
            }
            value += l.value;
            if let Some(g) = grad.as_mut() {
                for (a, b) in g.iter_mut().zip(&l.grad) {
                    *a += b;
                }
            }
        }
        Ok(value)
    }
}

impl Objective for GrammarObjective<'_> {
    fn n_params(&self) -> usize {
        self.grammar.n_params
    }
    fn pool(&self) -> Option<&rayon::ThreadPool> {
        Some(&self.pool)
    }
    fn evaluate(&self, x: &[f64], grad: Option<&mut [f64]>) -> Evaluation {
        let want = grad.is_some();
        let mut grad = grad;
        // The only error, a training tree the grammar cannot span, does not depend on θ:
        // `train` meets it before the optimiser starts.
        let value = self
            .value_and_grad(x, grad.as_deref_mut())
            .unwrap_or(f64::NAN);
        // Minimise −value + ‖θ‖²/(2σ²).
        if let Some(g) = grad {
            g.iter_mut().for_each(|v| *v = -*v);
            if let Some(s2) = self.prior.sigma2 {
                for (gv, &t) in g.iter_mut().zip(x) {
                    *gv += t / s2;
                }
            }
        }
        let _ = want;
        Evaluation {
            objective: -value + self.prior.penalty(x),
            value,
            ops: 0,
            unconverged: 0,
        }
    }
}

/// The relative-frequency PCFG as weights of the global model: `θ_rule = log p(B C | A)`,
/// leaf weights `log p(form | tag)`; everything else 0.
///
/// The unknown-word estimate is `p(UNK | T) = c(T, UNK) / c(T)`: every rare training word
/// counts once at its signature and once more at the generic form `UNK`, and `c(T)` counts
/// each of T's words once, at its own form (the generic form left out). A rare word whose
/// signature *is* the generic form (a symbol such as `@`) counts twice at `UNK` and not in
/// `c(T)`, so `c(T, UNK)` can exceed `c(T)`, and a tag whose only word is one — `X+IN` over
/// `@` in the WSJ sample's `(X (IN @))`, wsj_0056 — has `c(T) = 0`: `log(2/0) = +∞`, a
/// weight no run could be opened with. Every relative frequency is therefore bounded by 1
/// ([`log_share`]): such a tag's `p(UNK | T)` is 1 (every word of it was rare), and no weight
/// is infinite (counts are at least 1). A weight that was finite and at most 0 — every weight
/// on ordinary data — is unchanged.
pub fn generative(g: &Grammar) -> Vec<f64> {
    let mut theta = vec![0.0; g.n_params];
    for (r, rule) in g.rules.iter().enumerate() {
        theta[r] = log_share(g.rule_count[r], g.label_count[rule.a as usize]);
    }
    let roots: f64 = g.root_count.iter().sum();
    for (a, &c) in g.root_count.iter().enumerate() {
        if c > 0.0 {
            theta[g.root_param(a as u32)] = log_share(c, roots);
        }
    }
    for (&(a, form), &c) in &g.leaf_count {
        if let Some(p) = g.leaf_weight(form, a) {
            theta[p] = log_share(c, g.label_count[a as usize]);
        }
    }
    theta
}

/// `log(count / total)` with the share bounded by 1: `log min(count / total, 1)`, 0 when
/// `total` is 0 (see [`generative`]); `count` ≥ 1, so the value is finite.
fn log_share(count: f64, total: f64) -> f64 {
    if total >= count && total > 0.0 {
        (count / total).ln()
    } else {
        0.0
    }
}
