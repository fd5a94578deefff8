//! The chart: edge scores, CKY in log space (Viterbi) and inside–outside for the global model.
//!
//! Cells are spans `i..j` stored as a triangle; each holds one value per label. Inside–outside
//! runs in the exponential domain with one scale per cell (`m`): a cell's `alpha` is
//! `exp(inside − m)`, its `omega` is `exp(outside − (log Z − m))`, so that an edge's marginal is
//! `alpha · omega` and every product in the recursions stays near 1 — multiply-adds, not
//! log-sum-exps, in the inner loop. Buffers live in [`ChartWork`] and are reused per sentence.

use super::{len_class, Grammar, Sentence};
use crate::data::treebank::Tree;

/// How chart edges are scored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scoring {
    /// The global model (CRF-CFG, generative PCFG): an edge adds its score `s`; a word's tag
    /// adds its leaf score.
    Global,
    /// The MECFG: an edge adds `log p(B C [, k] | A, i, j)`; a word's tag adds 0.
    Local,
}

/// Per-thread buffers, grown to the largest sentence and grammar seen.
#[derive(Clone, Debug, Default)]
pub struct ChartWork {
    n: usize,
    labels: usize,
    /// Log inside (Viterbi: best) score per cell and label; −∞ where absent.
    pub score: Vec<f64>,
    /// Viterbi back-pointers: (rule, split) per cell and label.
    back: Vec<(u32, u32)>,
    alpha: Vec<f64>,
    omega: Vec<f64>,
    /// Per cell, its scale (inside–outside) and its labels present.
    m: Vec<f64>,
    present: Vec<Vec<u32>>,
    /// Edge scores of one span per split slot (`slots × rules`) and their maxima.
    s: Vec<f64>,
    ms: Vec<f64>,
    /// Expected counts of one span per split slot.
    cnt: Vec<f64>,
    acc: Vec<f64>,
    /// Local normalisers per label of one span.
    lz: Vec<f64>,
}

/// Index of cell i..j (0 ≤ i < j ≤ n) in a triangle ordered by length.
#[inline]
fn cell(n: usize, i: usize, j: usize) -> usize {
    let len = j - i;
    // Cells of lengths 1..len−1 come first: Σ_{l<len} (n − l + 1).
    (len - 1) * (n + 1) - (len - 1) * len / 2 + i
}

impl ChartWork {
    /// The memory one chart over `n` words takes with `labels` labels and `rules` rules (split
    /// slots as [`viterbi`] and the inside–outside pass use): four numbers per cell and label
    /// (score, back-pointer, inside, outside), each cell's scale and label list, a span's edge
    /// scores.
    pub fn bytes_for(n: usize, labels: usize, rules: usize, split: bool) -> u64 {
        let n = n as u64;
        let cells = n.saturating_mul(n + 1) / 2;
        let slots = if split { n.max(2) - 1 } else { 1 };
        let per_cell = 32 * labels as u64 + 32 + 4 * labels as u64;
        crate::memory::product(&[cells, per_cell]).saturating_add(crate::memory::product(&[
            slots,
            rules as u64,
            16,
        ]))
    }

    fn reset(&mut self, n: usize, labels: usize, rules: usize, slots: usize) {
        self.n = n;
        self.labels = labels;
        let cells = n * (n + 1) / 2;
        let need = cells * labels;
        if self.score.len() < need {
            self.score.resize(need, f64::NEG_INFINITY);
            self.back.resize(need, (0, 0));
            self.alpha.resize(need, 0.0);
            self.omega.resize(need, 0.0);
        }
        self.score[..need].fill(f64::NEG_INFINITY);
        if self.m.len() < cells {
            self.m.resize(cells, f64::NEG_INFINITY);
            self.present.resize(cells, Vec::new());
        }
        self.m[..cells].fill(f64::NEG_INFINITY);
        self.present[..cells].iter_mut().for_each(Vec::clear);
        if self.s.len() < slots * rules {
            self.s.resize(slots * rules, 0.0);
            self.cnt.resize(slots * rules, 0.0);
        }
        if self.ms.len() < slots {
            self.ms.resize(slots, 0.0);
        }
        if self.acc.len() < labels {
            self.acc.resize(labels, 0.0);
            self.lz.resize(labels, 0.0);
        }
    }

    /// The chart's score of label `a` over i..j (after [`viterbi`]: the best subtree's).
    pub fn edge_score(&self, i: usize, j: usize, a: u32) -> f64 {
        self.score[cell(self.n, i, j) * self.labels + a as usize]
    }

    /// The labels present over i..j.
    pub fn present(&self, i: usize, j: usize) -> &[u32] {
        &self.present[cell(self.n, i, j)]
    }

    /// After [`inside_outside`]: the marginal probability of label `a` over i..j.
    pub fn marginal(&self, i: usize, j: usize, a: u32) -> f64 {
        let c = cell(self.n, i, j) * self.labels + a as usize;
        self.alpha[c] * self.omega[c]
    }
}

/// A tag's leaf score at a word: its bias and its (form, tag) weight.
pub fn leaf_score(g: &Grammar, theta: &[f64], sent: &Sentence, i: usize, a: u32) -> f64 {
    theta[g.tag_param(a)] + leaf_param(g, sent, i, a).map_or(0.0, |p| theta[p])
}

/// The weight of (word i's form, tag a), when the grammar has it.
pub fn leaf_param(g: &Grammar, sent: &Sentence, i: usize, a: u32) -> Option<usize> {
    let row = g.leaf_rows.row(sent.leaf[i]?);
    row.binary_search_by_key(&a, |e| e.0)
        .ok()
        .map(|x| row[x].1 as usize)
}

/// Edge scores of every rule over i..j without split features, into `s` (`rules` long).
pub fn span_scores(g: &Grammar, theta: &[f64], sent: &Sentence, i: usize, j: usize, s: &mut [f64]) {
    let nr = g.n_rules();
    s[..nr].copy_from_slice(&theta[..nr]);
    let lc = len_class(j - i);
    for f in [sent.first[i][lc], sent.last[j - 1][lc]]
        .into_iter()
        .flatten()
    {
        for &(r, p) in g.span_rows.row(f) {
            s[r as usize] += theta[p as usize];
        }
    }
}

/// The split rows of edge i..j split at k (split variant).
pub fn split_rows(g: &Grammar, sent: &Sentence, i: usize, k: usize, j: usize) -> [Option<u32>; 3] {
    [
        sent.split_left[k - 1],
        sent.split_right[k],
        g.split_lengths_row(k - i, j - k),
    ]
}

/// The span's score slots: one per split (split variant), else one. Fills `w.s` and `w.ms`.
fn fill_slots(
    g: &Grammar,
    theta: &[f64],
    sent: &Sentence,
    i: usize,
    j: usize,
    w: &mut ChartWork,
) -> usize {
    let nr = g.n_rules();
    span_scores(g, theta, sent, i, j, &mut w.s[..nr]);
    if !g.options.split {
        w.ms[0] = max(&w.s[..nr]);
        return 1;
    }
    let slots = j - i - 1;
    for k in (i + 1..j).rev() {
        let slot = k - i - 1;
        if slot > 0 {
            w.s.copy_within(0..nr, slot * nr);
        }
        let sk = &mut w.s[slot * nr..(slot + 1) * nr];
        for f in split_rows(g, sent, i, k, j).into_iter().flatten() {
            for &(r, p) in g.span_rows.row(f) {
                sk[r as usize] += theta[p as usize];
            }
        }
        w.ms[slot] = max(sk);
    }
    slots
}

fn max(xs: &[f64]) -> f64 {
    xs.iter().copied().fold(f64::NEG_INFINITY, f64::max)
}

/// Turns slot scores into local log-probabilities `s − log Z(A, i, j)` (001 §5), Z over A's
/// rules (and, split variant, the split points).
fn localise(g: &Grammar, slots: usize, w: &mut ChartWork) {
    let nr = g.n_rules();
    for (a, range) in g.by_parent.iter().enumerate() {
        let (lo, hi) = (range.start as usize, range.end as usize);
        if lo == hi {
            continue;
        }
        let mut m = f64::NEG_INFINITY;
        for slot in 0..slots {
            m = m.max(max(&w.s[slot * nr + lo..slot * nr + hi]));
        }
        let mut z = 0.0;
        for slot in 0..slots {
            z += w.s[slot * nr + lo..slot * nr + hi]
                .iter()
                .map(|x| (x - m).exp())
                .sum::<f64>();
        }
        w.lz[a] = m + z.ln();
        for slot in 0..slots {
            w.s[slot * nr + lo..slot * nr + hi]
                .iter_mut()
                .for_each(|x| *x -= w.lz[a]);
        }
    }
}

/// Fills the one-word cells: every tag the word's form allows, scored by `scoring`.
fn leaves(
    g: &Grammar,
    theta: &[f64],
    sent: &Sentence,
    scoring: Scoring,
    w: &mut ChartWork,
    exp: bool,
) {
    let (n, l) = (w.n, w.labels);
    for i in 0..n {
        let c = cell(n, i, i + 1);
        let mut m = f64::NEG_INFINITY;
        for &a in g.tags_for(sent.forms[i]) {
            let v = match scoring {
                Scoring::Global => leaf_score(g, theta, sent, i, a),
                Scoring::Local => 0.0,
            };
            w.score[c * l + a as usize] = v;
            w.present[c].push(a);
            m = m.max(v);
        }
        w.present[c].sort_unstable();
        w.m[c] = m;
        if exp {
            w.alpha[c * l..(c + 1) * l].fill(0.0);
            w.omega[c * l..(c + 1) * l].fill(0.0);
            for &a in &w.present[c] {
                w.alpha[c * l + a as usize] = (w.score[c * l + a as usize] - m).exp();
            }
        }
    }
}

/// The best tree (binarised, words at the leaves) and its score, or `None` when the grammar
/// cannot span the sentence with a root label. The chart keeps every edge's best score.
pub fn viterbi(
    g: &Grammar,
    theta: &[f64],
    sent: &Sentence,
    scoring: Scoring,
    w: &mut ChartWork,
) -> Option<(Tree, f64)> {
    let n = sent.forms.len();
    if n == 0 {
        return None;
    }
    let (nl, nr) = (g.labels.len(), g.n_rules());
    let slots_max = if g.options.split { n.max(2) - 1 } else { 1 };
    w.reset(n, nl, nr, slots_max);
    leaves(g, theta, sent, scoring, w, false);
    for len in 2..=n {
        for i in 0..=n - len {
            let j = i + len;
            let slots = fill_slots(g, theta, sent, i, j, w);
            if scoring == Scoring::Local {
                localise(g, slots, w);
            }
            let c = cell(n, i, j);
            for k in i + 1..j {
                let (cl, cr) = (cell(n, i, k), cell(n, k, j));
                if w.present[cl].is_empty() || w.present[cr].is_empty() {
                    continue;
                }
                let slot = if g.options.split { k - i - 1 } else { 0 };
                for bi in 0..w.present[cl].len() {
                    let b = w.present[cl][bi];
                    let vb = w.score[cl * nl + b as usize];
                    for &r in &g.by_left[b as usize] {
                        let rule = g.rules[r as usize];
                        let vc = w.score[cr * nl + rule.c as usize];
                        if vc == f64::NEG_INFINITY {
                            continue;
                        }
                        let v = w.s[slot * nr + r as usize] + vb + vc;
                        let e = c * nl + rule.a as usize;
                        if v > w.score[e] {
                            w.score[e] = v;
                            w.back[e] = (r, k as u32);
                        }
                    }
                }
            }
            let (score, present) = (&w.score, &mut w.present[c]);
            present
                .extend((0..nl as u32).filter(|&a| score[c * nl + a as usize] > f64::NEG_INFINITY));
        }
    }
    let top = cell(n, 0, n);
    // The root rule TOP → a: θ (global) or its log probability among the roots (local).
    let shift = match scoring {
        Scoring::Global => 0.0,
        Scoring::Local => g.root_log_z(theta, false),
    };
    let (root, best) = w.present[top]
        .iter()
        .filter(|&&a| g.is_root[a as usize])
        .map(|&a| {
            (
                a,
                w.score[top * nl + a as usize] + theta[g.root_param(a)] - shift,
            )
        })
        .max_by(|x, y| x.1.total_cmp(&y.1))?;
    Some((g.reroot(build(g, sent, w, 0, n, root)), best))
}

fn build(g: &Grammar, sent: &Sentence, w: &ChartWork, i: usize, j: usize, a: u32) -> Tree {
    let label = g.labels[a as usize].clone();
    if j - i == 1 {
        return Tree {
            label,
            children: vec![Tree::leaf(&sent.words[i])],
        };
    }
    let (r, k) = w.back[cell(w.n, i, j) * w.labels + a as usize];
    let rule = g.rules[r as usize];
    let k = k as usize;
    Tree {
        label,
        children: vec![
            build(g, sent, w, i, k, rule.b),
            build(g, sent, w, k, j, rule.c),
        ],
    }
}

/// The rule scores of span i..j per slot ([`fill_slots`]) as exp(score − the slot's max),
/// the form inside–outside multiplies; returns the number of slots.
#[inline]
fn exp_slots(
    g: &Grammar,
    theta: &[f64],
    sent: &Sentence,
    i: usize,
    j: usize,
    w: &mut ChartWork,
) -> usize {
    let nr = g.n_rules();
    let slots = fill_slots(g, theta, sent, i, j, w);
    for slot in 0..slots {
        let (ms, s) = (w.ms[slot], &mut w.s[slot * nr..(slot + 1) * nr]);
        s.iter_mut().for_each(|x| *x = (*x - ms).exp());
    }
    slots
}

/// The global model's log-partition function `log Σ_trees exp(score)`; with `grad`, adds
/// `scale · E[f]` (the expected features) into it. `None` when no tree spans the sentence.
pub fn inside_outside(
    g: &Grammar,
    theta: &[f64],
    sent: &Sentence,
    w: &mut ChartWork,
    grad: Option<(&mut [f64], f64)>,
) -> Option<f64> {
    let n = sent.forms.len();
    if n == 0 {
        return None;
    }
    let (nl, nr) = (g.labels.len(), g.n_rules());
    let slots_max = if g.options.split { n.max(2) - 1 } else { 1 };
    w.reset(n, nl, nr, slots_max);
    leaves(g, theta, sent, Scoring::Global, w, true);
    // Inside.
    for len in 2..=n {
        for i in 0..=n - len {
            let j = i + len;
            let c = cell(n, i, j);
            exp_slots(g, theta, sent, i, j, w);
            let slot_of = |k: usize| if g.options.split { k - i - 1 } else { 0 };
            let mut reference = f64::NEG_INFINITY;
            for k in i + 1..j {
                let h = w.ms[slot_of(k)] + w.m[cell(n, i, k)] + w.m[cell(n, k, j)];
                reference = reference.max(h);
            }
            if reference == f64::NEG_INFINITY {
                continue;
            }
            w.acc[..nl].fill(0.0);
            for k in i + 1..j {
                let (cl, cr) = (cell(n, i, k), cell(n, k, j));
                let slot = slot_of(k);
                let h = (w.ms[slot] + w.m[cl] + w.m[cr] - reference).exp();
                if h == 0.0 {
                    continue;
                }
                let es = &w.s[slot * nr..(slot + 1) * nr];
                let (al, ar) = (
                    &w.alpha[cl * nl..(cl + 1) * nl],
                    &w.alpha[cr * nl..(cr + 1) * nl],
                );
                for &b in &w.present[cl] {
                    let u = al[b as usize] * h;
                    for &r in &g.by_left[b as usize] {
                        let rule = g.rules[r as usize];
                        let ac = ar[rule.c as usize];
                        if ac != 0.0 {
                            w.acc[rule.a as usize] += es[r as usize] * u * ac;
                        }
                    }
                }
            }
            let top = max(&w.acc[..nl]);
            if top <= 0.0 {
                continue;
            }
            w.m[c] = reference + top.ln();
            let (alpha, acc) = (&mut w.alpha[c * nl..(c + 1) * nl], &w.acc[..nl]);
            w.omega[c * nl..(c + 1) * nl].fill(0.0);
            for a in 0..nl {
                alpha[a] = acc[a] / top;
                if acc[a] > 0.0 {
                    w.present[c].push(a as u32);
                }
            }
        }
    }
    let top = cell(n, 0, n);
    // The root rule TOP → a adds θ[TOP → a]; shifted by the largest root weight.
    let root_max = g
        .roots
        .iter()
        .map(|&a| theta[g.root_param(a)])
        .fold(f64::NEG_INFINITY, f64::max);
    let root_w = |a: u32| (theta[g.root_param(a)] - root_max).exp();
    let z: f64 = w.present[top]
        .iter()
        .filter(|&&a| g.is_root[a as usize])
        .map(|&a| w.alpha[top * nl + a as usize] * root_w(a))
        .sum();
    if z <= 0.0 {
        return None;
    }
    let log_z = w.m[top] + root_max + z.ln();
    let Some((grad, scale)) = grad else {
        return Some(log_z);
    };
    // Outside, longest spans first, with the expected counts of every edge.
    for &a in &w.present[top] {
        if g.is_root[a as usize] {
            let o = root_w(a) / z;
            w.omega[top * nl + a as usize] = o;
            grad[g.root_param(a)] += scale * o * w.alpha[top * nl + a as usize];
        }
    }
    for len in (2..=n).rev() {
        for i in 0..=n - len {
            let j = i + len;
            let c = cell(n, i, j);
            if w.present[c].is_empty() {
                continue;
            }
            let slots = exp_slots(g, theta, sent, i, j, w);
            w.cnt[..slots * nr].fill(0.0);
            for k in i + 1..j {
                let (cl, cr) = (cell(n, i, k), cell(n, k, j));
                if w.present[cl].is_empty() || w.present[cr].is_empty() {
                    continue;
                }
                let slot = if g.options.split { k - i - 1 } else { 0 };
                let gk = (w.ms[slot] + w.m[cl] + w.m[cr] - w.m[c]).exp();
                for bi in 0..w.present[cl].len() {
                    let b = w.present[cl][bi] as usize;
                    let ab = w.alpha[cl * nl + b];
                    for &r in &g.by_left[b] {
                        let rule = g.rules[r as usize];
                        let ac = w.alpha[cr * nl + rule.c as usize];
                        let oa = w.omega[c * nl + rule.a as usize];
                        if ac == 0.0 || oa == 0.0 {
                            continue;
                        }
                        let x = oa * w.s[slot * nr + r as usize] * gk;
                        w.omega[cl * nl + b] += x * ac;
                        w.omega[cr * nl + rule.c as usize] += x * ab;
                        w.cnt[slot * nr + r as usize] += x * ab * ac;
                    }
                }
            }
            scatter_span(g, sent, i, j, slots, &w.cnt, grad, scale);
        }
    }
    for i in 0..n {
        let c = cell(n, i, i + 1);
        for &a in &w.present[c] {
            let mu = w.alpha[c * nl + a as usize] * w.omega[c * nl + a as usize];
            grad[g.tag_param(a)] += scale * mu;
            if let Some(p) = leaf_param(g, sent, i, a) {
                grad[p] += scale * mu;
            }
        }
    }
    Some(log_z)
}

/// Adds `scale · cnt` (per slot and rule over i..j) into the weights that score those edges.
#[allow(clippy::too_many_arguments)]
pub fn scatter_span(
    g: &Grammar,
    sent: &Sentence,
    i: usize,
    j: usize,
    slots: usize,
    cnt: &[f64],
    grad: &mut [f64],
    scale: f64,
) {
    let nr = g.n_rules();
    let lc = len_class(j - i);
    for slot in 0..slots {
        let c = &cnt[slot * nr..(slot + 1) * nr];
        for (gr, &x) in grad[..nr].iter_mut().zip(c) {
            *gr += scale * x;
        }
        for f in [sent.first[i][lc], sent.last[j - 1][lc]]
            .into_iter()
            .flatten()
        {
            for &(r, p) in g.span_rows.row(f) {
                grad[p as usize] += scale * c[r as usize];
            }
        }
        if g.options.split {
            let k = i + 1 + slot;
            for f in split_rows(g, sent, i, k, j).into_iter().flatten() {
                for &(r, p) in g.span_rows.row(f) {
                    grad[p as usize] += scale * c[r as usize];
                }
            }
        }
    }
}

/// The score of one edge: rule `r` over i..j split at k (global scoring).
pub fn edge_score(
    g: &Grammar,
    theta: &[f64],
    sent: &Sentence,
    r: u32,
    i: usize,
    k: usize,
    j: usize,
) -> f64 {
    let mut v = theta[r as usize];
    for f in edge_rows(g, sent, i, k, j).into_iter().flatten() {
        let row = g.span_rows.row(f);
        if let Ok(x) = row.binary_search_by_key(&r, |e| e.0) {
            v += theta[row[x].1 as usize];
        }
    }
    v
}

/// The feature rows of an edge over i..j split at k: first and last word, then (split
/// variant) the split features.
fn edge_rows(g: &Grammar, sent: &Sentence, i: usize, k: usize, j: usize) -> [Option<u32>; 5] {
    let lc = len_class(j - i);
    let mut rows = [None; 5];
    rows[0] = sent.first[i][lc];
    rows[1] = sent.last[j - 1][lc];
    if g.options.split {
        rows[2..].copy_from_slice(&split_rows(g, sent, i, k, j));
    }
    rows
}

/// Adds `scale` into every weight of one edge (rule `r` over i..j split at k).
#[allow(clippy::too_many_arguments)]
pub fn edge_features(
    g: &Grammar,
    sent: &Sentence,
    r: u32,
    i: usize,
    k: usize,
    j: usize,
    grad: &mut [f64],
    scale: f64,
) {
    grad[r as usize] += scale;
    for f in edge_rows(g, sent, i, k, j).into_iter().flatten() {
        let row = g.span_rows.row(f);
        if let Ok(x) = row.binary_search_by_key(&r, |e| e.0) {
            grad[row[x].1 as usize] += scale;
        }
    }
}
