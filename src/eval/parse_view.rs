//! What the Parse pane draws for one sentence under one trained grammar, computed off the GUI
//! thread: the gold and predicted trees with EVALB's bracket matches, the Viterbi chart's edges
//! with their ratio to the best edge of the same length (PT-CFG's NOTA criterion, 001 §5), and
//! the estimator's terms on the sentence with their values and candidate expansions — the
//! values from [`evaluate_terms`], the code training runs.

use super::evalb::{score_one, EvalbParams, EvalbScore};
use crate::data::treebank::{debinarise, Tree};
use crate::grammar::chart::{edge_score, viterbi, ChartWork};
use crate::grammar::train::{evaluate_terms, terms, ChartTerm, GrammarEstimator, TermWork};
use crate::grammar::{Grammar, Sentence};

/// A node of a drawn tree.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub label: String,
    /// Words `start..end` (every word, punctuation included).
    pub start: usize,
    pub end: usize,
    /// Height above the words (a part-of-speech node is 1).
    pub height: usize,
    pub parent: Option<usize>,
    /// For a bracket EVALB scores: whether the other tree has it (labels cut at `-`/`=`,
    /// `PRT` ≡ `ADVP`, spans over the words left after deleting punctuation). `None` for
    /// part-of-speech nodes, the root and brackets over punctuation only.
    pub matched: Option<bool>,
}

/// One chart edge: label `a` over `i..j` with its best subtree's score.
#[derive(Clone, Debug, PartialEq)]
pub struct Edge {
    pub label: String,
    pub score: f64,
    /// `score − best score among edges of the same length` (≤ 0): 001's NOTA criterion.
    pub log_ratio: f64,
    /// A gold bracket (label and span) of the binarised gold tree.
    pub gold: bool,
}

/// The edges of one chart cell, best first.
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    pub i: usize,
    pub j: usize,
    pub edges: Vec<Edge>,
}

/// One term of the estimator on the sentence.
#[derive(Clone, Debug, PartialEq)]
pub struct TermView {
    pub term: ChartTerm,
    /// "NP over words 3–5 → DT NN (split after word 3)", "NP over words 3–5: not gold".
    pub title: String,
    /// The term's value (a log-probability).
    pub value: f64,
    /// The outcomes the term normalises over, most probable first (at most 8), with their
    /// probabilities; the gold outcome flagged. `NOTA` is the none-of-the-above outcome.
    pub candidates: Vec<(String, f64, bool)>,
    /// How many outcomes the normaliser sums over.
    pub outcomes: usize,
    pub span: Option<(usize, usize)>,
}

/// Everything the pane draws for one sentence.
#[derive(Clone, Debug)]
pub struct SentenceView {
    pub words: Vec<String>,
    pub gold: Vec<Node>,
    pub predicted: Vec<Node>,
    /// EVALB's counts on this sentence.
    pub score: EvalbScore,
    /// Whether the grammar spanned the words (else the prediction is a flat fallback).
    pub parsed: bool,
    /// Cells of length ≥ 1, by length then start.
    pub cells: Vec<Cell>,
    pub terms: Vec<TermView>,
    /// The parameter independence diagram on this sentence (003 Fig. 1 on the chart): the
    /// groups of weights no two terms of different groups share, with this sentence's terms in
    /// each. Locally normalised models split by parent label (a term over A reads only A's
    /// rules and their feature weights); the global model is one group.
    pub groups: Vec<ParamGroup>,
}

/// One group of weights that only its own terms read.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamGroup {
    pub name: String,
    /// This sentence's terms that read it.
    pub terms: usize,
    /// Its weights in the grammar.
    pub weights: usize,
}

fn canonical(label: &str, p: &EvalbParams) -> String {
    let cut = label
        .split(['-', '='])
        .next()
        .filter(|s| !s.is_empty())
        .unwrap_or(label);
    p.equal_labels
        .iter()
        .find(|(a, _)| a == cut)
        .map(|(_, b)| b.clone())
        .unwrap_or_else(|| cut.to_string())
}

/// The nodes of `t` (pre-order) and the EVALB bracket of each phrasal node.
#[allow(clippy::type_complexity)]
fn nodes(t: &Tree, p: &EvalbParams) -> (Vec<Node>, Vec<Option<(String, usize, usize)>>) {
    fn walk(
        t: &Tree,
        parent: Option<usize>,
        p: &EvalbParams,
        word: &mut usize,
        kept: &mut usize,
        out: &mut Vec<Node>,
        br: &mut Vec<Option<(String, usize, usize)>>,
    ) -> usize {
        let me = out.len();
        out.push(Node {
            label: t.label.clone(),
            start: *word,
            end: *word,
            height: 0,
            parent,
            matched: None,
        });
        br.push(None);
        if t.is_preterminal() {
            *word += 1;
            if !p.delete_labels.contains(&t.label) {
                *kept += 1;
            }
            out[me].end = *word;
            out[me].height = 1;
            return 1;
        }
        let k0 = *kept;
        let mut h = 0;
        for c in &t.children {
            if !c.is_leaf() {
                h = h.max(walk(c, Some(me), p, word, kept, out, br));
            }
        }
        out[me].end = *word;
        out[me].height = h + 1;
        let label = canonical(&t.label, p);
        if *kept > k0 && !p.delete_labels.contains(&label) {
            br[me] = Some((label, k0, *kept));
        }
        h + 1
    }
    let (mut out, mut br) = (Vec::new(), Vec::new());
    walk(t, None, p, &mut 0, &mut 0, &mut out, &mut br);
    (out, br)
}

/// Marks each scored bracket of `a` matched when `b` has it (a multiset, as EVALB).
fn mark(
    a: &mut [Node],
    ab: &[Option<(String, usize, usize)>],
    bb: &[Option<(String, usize, usize)>],
) {
    // What `b` has left of each bracket: the first brackets of `a` with a key take them.
    let mut left: rustc_hash::FxHashMap<&(String, usize, usize), usize> = Default::default();
    for x in bb.iter().flatten() {
        *left.entry(x).or_default() += 1;
    }
    for (n, x) in a.iter_mut().zip(ab) {
        let Some(x) = x else { continue };
        let hit = left.get_mut(x).filter(|k| **k > 0).map(|k| *k -= 1);
        n.matched = Some(hit.is_some());
    }
}

/// Computes the view of `sent` (gold tree `gold_tree`, normalised) under `theta`. NOTA terms
/// go to the wrong edges whose log ratio is at least `nota_log_threshold`.
pub fn sentence_view(
    g: &Grammar,
    theta: &[f64],
    est: &GrammarEstimator,
    gold_tree: &Tree,
    nota_log_threshold: f64,
) -> SentenceView {
    let p = EvalbParams::collins(None);
    let sent: Sentence = g.encode(gold_tree);
    let mut w = ChartWork::default();
    let best = viterbi(g, theta, &sent, est.scoring(), &mut w);
    let parsed = best.is_some();
    let predicted_tree = match &best {
        Some((t, _)) => debinarise(t),
        None => crate::grammar::parse::flat(g, &sent),
    };
    let score = score_one(gold_tree, &predicted_tree, &p);
    let (mut gold, gb) = nodes(gold_tree, &p);
    let (mut predicted, pb) = nodes(&predicted_tree, &p);
    mark(&mut gold, &gb, &pb);
    mark(&mut predicted, &pb, &gb);
    // The chart: every present edge, with its ratio to the best of its length.
    let n = sent.words.len();
    let gold_edges: Vec<(u32, usize, usize)> = sent.gold.as_ref().map_or(vec![], |gd| {
        let mut v: Vec<_> = gd
            .binary
            .iter()
            .map(|&(r, i, _, j)| (g.rules[r as usize].a, i as usize, j as usize))
            .collect();
        v.extend(gd.tags.iter().enumerate().map(|(i, &t)| (t, i, i + 1)));
        v
    });
    let mut cells = Vec::new();
    if parsed || n > 0 {
        for len in 1..=n {
            let best_len = (0..=n - len)
                .flat_map(|i| {
                    w.present(i, i + len)
                        .iter()
                        .map(move |&a| (i, a))
                        .collect::<Vec<_>>()
                })
                .map(|(i, a)| w.edge_score(i, i + len, a))
                .fold(f64::NEG_INFINITY, f64::max);
            for i in 0..=n - len {
                let j = i + len;
                let mut edges: Vec<Edge> = w
                    .present(i, j)
                    .iter()
                    .map(|&a| {
                        let s = w.edge_score(i, j, a);
                        Edge {
                            label: g.labels[a as usize].clone(),
                            score: s,
                            log_ratio: s - best_len,
                            gold: gold_edges.contains(&(a, i, j)),
                        }
                    })
                    .collect();
                edges.sort_by(|a, b| b.score.total_cmp(&a.score));
                cells.push(Cell { i, j, edges });
            }
        }
    }
    // NOTA edges: wrong binary edges at or above the threshold.
    let nota_edges: Vec<(u32, u32, u32)> = cells
        .iter()
        .filter(|c| c.j - c.i >= 2)
        .flat_map(|c| {
            c.edges
                .iter()
                .filter(|e| !e.gold && e.log_ratio >= nota_log_threshold)
                .filter_map(|e| g.label(&e.label))
                .filter(|&a| !g.by_parent[a as usize].is_empty())
                .map(|a| (a, c.i as u32, c.j as u32))
                .collect::<Vec<_>>()
        })
        .collect();
    let mut list = Vec::new();
    terms(est, &sent, &nota_edges, &mut list);
    let mut tw = TermWork::default();
    let views = list
        .iter()
        .map(|&t| {
            let value = evaluate_terms(g, theta, &sent, &[t], None, &mut tw).unwrap_or(f64::NAN);
            term_view(g, theta, &sent, t, value)
        })
        .collect();
    let groups = param_groups(g, &list);
    SentenceView {
        words: sent.words.clone(),
        gold,
        predicted,
        score,
        parsed,
        cells,
        terms: views,
        groups,
    }
}

/// The weights each term reads, grouped so that no weight is read by two groups: per parent
/// label for local terms (its rules and their feature weights; the root rule's weights for the
/// root term), everything for the global term. Largest groups (by this sentence's terms) first.
fn param_groups(g: &Grammar, terms: &[ChartTerm]) -> Vec<ParamGroup> {
    if terms.iter().any(|t| matches!(t, ChartTerm::Global)) {
        return vec![ParamGroup {
            name: "every weight (log Z couples them)".into(),
            terms: terms.len(),
            weights: g.n_params,
        }];
    }
    let mut per_label = vec![0usize; g.labels.len()];
    let mut root = 0;
    for t in terms {
        match *t {
            ChartTerm::Expansion { rule, .. } => per_label[g.rules[rule as usize].a as usize] += 1,
            ChartTerm::Nota { a, .. } => per_label[a as usize] += 1,
            ChartTerm::Root { .. } => root += 1,
            ChartTerm::Global => {}
        }
    }
    // Weights of each parent label: its rules, and the feature entries on them.
    let mut weights = vec![0usize; g.labels.len()];
    let parent_of = |r: u32| g.rules[r as usize].a as usize;
    for (a, r) in g.by_parent.iter().enumerate() {
        weights[a] += (r.end - r.start) as usize;
    }
    for f in 0..g.span_rows.n_rows() {
        for &(r, _) in g.span_rows.row(f as u32) {
            weights[parent_of(r)] += 1;
        }
    }
    let mut out: Vec<ParamGroup> = per_label
        .iter()
        .enumerate()
        .filter(|(_, &n)| n > 0)
        .map(|(a, &n)| ParamGroup {
            name: g.labels[a].clone(),
            terms: n,
            weights: weights[a],
        })
        .collect();
    if root > 0 {
        out.push(ParamGroup {
            name: "TOP (the root rule)".into(),
            terms: root,
            weights: g.roots.len(),
        });
    }
    out.sort_by(|a, b| b.terms.cmp(&a.terms).then(a.name.cmp(&b.name)));
    out
}

/// A term's title and the distribution it normalises.
fn term_view(g: &Grammar, theta: &[f64], sent: &Sentence, t: ChartTerm, value: f64) -> TermView {
    let name = |a: u32| g.labels[a as usize].clone();
    let span = |i: u32, j: u32| words(i as usize, j as usize);
    match t {
        ChartTerm::Expansion {
            rule,
            i,
            k,
            j,
            nota,
            ..
        } => {
            let a = g.rules[rule as usize].a;
            let (cands, outcomes) = expansions(
                g,
                theta,
                sent,
                a,
                i as usize,
                j as usize,
                nota,
                Some((rule, k)),
            );
            let r = g.rules[rule as usize];
            TermView {
                term: t,
                title: format!(
                    "{} over {} -> {} {}{}",
                    name(a),
                    span(i, j),
                    name(r.b),
                    name(r.c),
                    if g.options.split {
                        format!(" (split after word {k})")
                    } else {
                        String::new()
                    }
                ),
                value,
                candidates: cands,
                outcomes,
                span: Some((i as usize, j as usize)),
            }
        }
        ChartTerm::Nota { a, i, j } => {
            let (cands, outcomes) =
                expansions(g, theta, sent, a, i as usize, j as usize, true, None);
            TermView {
                term: t,
                title: format!("{} over {}: not gold", name(a), span(i, j)),
                value,
                candidates: cands,
                outcomes,
                span: Some((i as usize, j as usize)),
            }
        }
        ChartTerm::Root { nota } => {
            let root = sent.gold.as_ref().map_or(0, |gd| gd.root);
            let log_z = g.root_log_z(theta, nota);
            let mut c: Vec<(String, f64, bool)> = g
                .roots
                .iter()
                .map(|&a| {
                    (
                        format!("TOP -> {}", name(a)),
                        (theta[g.root_param(a)] - log_z).exp(),
                        a == root,
                    )
                })
                .collect();
            if nota {
                c.push(("NOTA".into(), (-log_z).exp(), false));
            }
            let outcomes = c.len();
            c.sort_by(|a, b| b.1.total_cmp(&a.1));
            c.truncate(8);
            TermView {
                term: t,
                title: format!("TOP -> {}", name(root)),
                value,
                candidates: c,
                outcomes,
                span: Some((0, sent.words.len())),
            }
        }
        ChartTerm::Global => TermView {
            term: t,
            title: "the whole tree: log p(tree | x), normalised over every tree of the chart"
                .into(),
            value,
            candidates: vec![],
            outcomes: 0,
            span: Some((0, sent.words.len())),
        },
    }
}

/// `p(B C [, k] | A, i, j)` over A's rules (and split points), with NOTA when `nota`: the top
/// 8 and the number of outcomes.
#[allow(clippy::too_many_arguments)]
fn expansions(
    g: &Grammar,
    theta: &[f64],
    sent: &Sentence,
    a: u32,
    i: usize,
    j: usize,
    nota: bool,
    gold: Option<(u32, u32)>,
) -> (Vec<(String, f64, bool)>, usize) {
    let splits: Vec<usize> = if g.options.split {
        (i + 1..j).collect()
    } else {
        vec![i + 1]
    };
    let mut v: Vec<(String, f64, bool)> = Vec::new();
    for r in g.by_parent[a as usize].clone() {
        let rule = g.rules[r as usize];
        for &k in &splits {
            let s = edge_score(g, theta, sent, r, i, k, j);
            let is_gold =
                gold.is_some_and(|(gr, gk)| gr == r && (!g.options.split || gk as usize == k));
            let label = if g.options.split {
                format!(
                    "{} {} | {}",
                    g.labels[rule.b as usize], g.labels[rule.c as usize], k
                )
            } else {
                format!(
                    "{} {}",
                    g.labels[rule.b as usize], g.labels[rule.c as usize]
                )
            };
            v.push((label, s, is_gold));
        }
    }
    if nota {
        v.push(("NOTA".into(), 0.0, gold.is_none()));
    }
    let mx = v.iter().map(|x| x.1).fold(f64::NEG_INFINITY, f64::max);
    let z: f64 = v.iter().map(|x| (x.1 - mx).exp()).sum();
    for x in &mut v {
        x.1 = (x.1 - mx).exp() / z;
    }
    let outcomes = v.len();
    v.sort_by(|a, b| b.1.total_cmp(&a.1));
    // Keep the gold outcome in view even when it is not among the top.
    let gold_at = v.iter().position(|x| x.2);
    let mut top: Vec<_> = v.iter().take(8).cloned().collect();
    if let Some(gi) = gold_at.filter(|&gi| gi >= 8) {
        top[7] = v[gi].clone();
    }
    (top, outcomes)
}

/// The span of words i..j (fenceposts, j exclusive) as a reader counts them: "words 3–5" for
/// the third to the fifth word, "word 3" for one.
pub fn words(i: usize, j: usize) -> String {
    if j == i + 1 {
        format!("word {j}")
    } else {
        format!("words {}–{j}", i + 1)
    }
}
