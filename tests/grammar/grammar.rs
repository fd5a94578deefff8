//! The grammar family against definitions (issue 23): on tiny grammars and sentences, every
//! tree is enumerated; log Z, edge marginals, Viterbi, the MECFG and NOTA objectives are
//! checked against sums over those trees and the paper's formulas, gradients against finite
//! differences.

use piecewise_lab::data::treebank::{normalise, parse_trees, Tree};
use piecewise_lab::grammar::chart::{
    edge_score, inside_outside, leaf_score, viterbi, ChartWork, Scoring,
};
use piecewise_lab::grammar::train::{
    evaluate_terms, gold_score, terms, ChartTerm, GrammarEstimator, TermWork,
};
use piecewise_lab::grammar::{Grammar, GrammarOptions, Sentence};
use piecewise_lab::util::log_sum_exp;
use rand::{Rng, SeedableRng};

const TREES: &str = "((S (NP (DT the) (NN dog)) (VP (VBD saw) (NP (DT a) (NN cat)))))
((S (NP (NN dog)) (VP (VBD barked))))
((S (NP (DT a) (JJ big) (NN cat)) (VP (VBD saw) (NP (PRP it)))))
((NP (DT the) (NN cat)))
((S (NP (PRP it)) (VP (VBD saw) (NP (DT the) (JJ big) (NN dog)))))
((S (VP (VBD saw) (NP (NN cat))) (NP (DT a) (NN saw))))";

fn trees() -> Vec<Tree> {
    parse_trees(TREES, "tiny.mrg")
        .unwrap()
        .into_iter()
        .map(|mut t| {
            normalise(&mut t);
            t
        })
        .collect()
}

fn grammar(split: bool) -> Grammar {
    let t = trees();
    let o = GrammarOptions {
        split,
        rare: 0,
        ..GrammarOptions::default()
    };
    Grammar::fit(&t, &t, o).unwrap()
}

fn random_theta(g: &Grammar, seed: u64) -> Vec<f64> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..g.n_params)
        .map(|_| rng.random_range(-1.0..1.0))
        .collect()
}

/// A tree in chart form: root, binary edges (rule, i, k, j), tags.
#[derive(Clone, Debug)]
struct ChartTree {
    root: u32,
    edges: Vec<(u32, usize, usize, usize)>,
    tags: Vec<(usize, u32)>,
}

/// Every tree over i..j by the grammar's rules and tag dictionary.
fn enumerate(g: &Grammar, s: &Sentence, i: usize, j: usize) -> Vec<ChartTree> {
    if j - i == 1 {
        return g
            .tags_for(s.forms[i])
            .iter()
            .map(|&a| ChartTree {
                root: a,
                edges: vec![],
                tags: vec![(i, a)],
            })
            .collect();
    }
    let mut out = Vec::new();
    for k in i + 1..j {
        let left = enumerate(g, s, i, k);
        let right = enumerate(g, s, k, j);
        for l in &left {
            for r in &right {
                for (ri, rule) in g.rules.iter().enumerate() {
                    if rule.b == l.root && rule.c == r.root {
                        let mut edges = l.edges.clone();
                        edges.extend(&r.edges);
                        edges.push((ri as u32, i, k, j));
                        let mut tags = l.tags.clone();
                        tags.extend(&r.tags);
                        out.push(ChartTree {
                            root: rule.a,
                            edges,
                            tags,
                        });
                    }
                }
            }
        }
    }
    out
}

fn all_trees(g: &Grammar, s: &Sentence) -> Vec<ChartTree> {
    enumerate(g, s, 0, s.forms.len())
        .into_iter()
        .filter(|t| g.is_root[t.root as usize])
        .collect()
}

fn global_score(g: &Grammar, theta: &[f64], s: &Sentence, t: &ChartTree) -> f64 {
    theta[g.root_param(t.root)]
        + t.edges
            .iter()
            .map(|&(r, i, k, j)| edge_score(g, theta, s, r, i, k, j))
            .sum::<f64>()
        + t.tags
            .iter()
            .map(|&(i, a)| leaf_score(g, theta, s, i, a))
            .sum::<f64>()
}

/// log p(r, k | A, i, j) from the definition (001 §5): the edge's score against every rule of
/// A (and, split variant, every split point); `nota` adds the outcome with potential 1.
#[allow(clippy::too_many_arguments)]
fn local_log_p(
    g: &Grammar,
    theta: &[f64],
    s: &Sentence,
    r: Option<(u32, usize)>,
    a: u32,
    i: usize,
    j: usize,
    nota: bool,
) -> f64 {
    let mut all = Vec::new();
    let ks: Vec<usize> = if g.options.split {
        (i + 1..j).collect()
    } else {
        vec![i + 1]
    };
    for (ri, rule) in g.rules.iter().enumerate() {
        if rule.a == a {
            for &k in &ks {
                all.push(edge_score(g, theta, s, ri as u32, i, k, j));
            }
        }
    }
    if nota {
        all.push(0.0);
    }
    let log_z = log_sum_exp(&all);
    match r {
        Some((r, k)) => edge_score(g, theta, s, r, i, k, j) - log_z,
        None => -log_z,
    }
}

/// log p(X | TOP) among the root labels (and NOTA).
fn root_log_p(g: &Grammar, theta: &[f64], root: u32, nota: bool) -> f64 {
    let mut all: Vec<f64> = (0..g.labels.len() as u32)
        .filter(|&a| g.is_root[a as usize])
        .map(|a| theta[g.root_param(a)])
        .collect();
    if nota {
        all.push(0.0);
    }
    theta[g.root_param(root)] - log_sum_exp(&all)
}

fn local_tree_score(g: &Grammar, theta: &[f64], s: &Sentence, t: &ChartTree) -> f64 {
    root_log_p(g, theta, t.root, false)
        + t.edges
            .iter()
            .map(|&(r, i, k, j)| {
                local_log_p(
                    g,
                    theta,
                    s,
                    Some((r, k)),
                    g.rules[r as usize].a,
                    i,
                    j,
                    false,
                )
            })
            .sum::<f64>()
}

fn sentences(g: &Grammar) -> Vec<Sentence> {
    let mut out: Vec<Sentence> = trees().iter().map(|t| g.encode(t)).collect();
    // A sentence the training trees do not hold, words known.
    let words: Vec<String> = ["the", "cat", "saw", "a", "dog"]
        .iter()
        .map(|w| w.to_string())
        .collect();
    out.push(g.encode_words(&words));
    out
}

#[test]
fn inside_outside_and_viterbi_match_enumeration() {
    for split in [false, true] {
        let g = grammar(split);
        let mut w = ChartWork::default();
        for seed in 0..3 {
            let theta = random_theta(&g, seed);
            for s in sentences(&g) {
                let all = all_trees(&g, &s);
                assert!(!all.is_empty(), "no tree over {:?}", s.words);
                let scores: Vec<f64> = all
                    .iter()
                    .map(|t| global_score(&g, &theta, &s, t))
                    .collect();
                let log_z = log_sum_exp(&scores);
                let mut grad = vec![0.0; g.n_params];
                let ours = inside_outside(&g, &theta, &s, &mut w, Some((&mut grad, 1.0))).unwrap();
                assert!(
                    (ours - log_z).abs() < 1e-10,
                    "split {split}: log Z {ours} vs {log_z}"
                );
                // Edge marginals: Σ over trees holding the edge of p(tree).
                let n = s.forms.len();
                for len in 1..=n {
                    for i in 0..=n - len {
                        let j = i + len;
                        for a in 0..g.labels.len() as u32 {
                            let want: f64 = all
                                .iter()
                                .zip(&scores)
                                .filter(|(t, _)| {
                                    if len == 1 {
                                        t.tags.contains(&(i, a))
                                    } else {
                                        t.edges.iter().any(|&(r, ei, _, ej)| {
                                            ei == i && ej == j && g.rules[r as usize].a == a
                                        })
                                    }
                                })
                                .map(|(_, &sc)| (sc - log_z).exp())
                                .sum();
                            let got = w.marginal(i, j, a);
                            assert!(
                                (got - want).abs() < 1e-10,
                                "marginal {a} over {i}..{j}: {got} vs {want}"
                            );
                        }
                    }
                }
                // Expected features: E[f] = ∂ log Z / ∂θ by central differences.
                for p in (0..g.n_params).step_by(7) {
                    let h = 1e-5;
                    let mut tp = theta.clone();
                    tp[p] += h;
                    let up = inside_outside(&g, &tp, &s, &mut w, None).unwrap();
                    tp[p] -= 2.0 * h;
                    let down = inside_outside(&g, &tp, &s, &mut w, None).unwrap();
                    let fd = (up - down) / (2.0 * h);
                    assert!((fd - grad[p]).abs() < 1e-6, "E[f_{p}] {} vs {fd}", grad[p]);
                }
                // Viterbi, global and local, against the best enumerated tree.
                let (_, best) = viterbi(&g, &theta, &s, Scoring::Global, &mut w).unwrap();
                let want = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                assert!((best - want).abs() < 1e-10, "viterbi {best} vs {want}");
                let (tree, best) = viterbi(&g, &theta, &s, Scoring::Local, &mut w).unwrap();
                let want = all
                    .iter()
                    .map(|t| local_tree_score(&g, &theta, &s, t))
                    .fold(f64::NEG_INFINITY, f64::max);
                assert!(
                    (best - want).abs() < 1e-10,
                    "local viterbi {best} vs {want}"
                );
                assert_eq!(
                    tree.words(),
                    s.words.iter().map(|w| w.as_str()).collect::<Vec<_>>()
                );
            }
        }
    }
}

fn fd_check(g: &Grammar, s: &Sentence, list: &[ChartTerm], theta: &[f64]) {
    let mut w = TermWork::default();
    let mut grad = vec![0.0; g.n_params];
    evaluate_terms(g, theta, s, list, Some((&mut grad, 1.0)), &mut w).unwrap();
    for p in 0..g.n_params {
        let h = 1e-5;
        let mut tp = theta.to_vec();
        tp[p] += h;
        let up = evaluate_terms(g, &tp, s, list, None, &mut w).unwrap();
        tp[p] -= 2.0 * h;
        let down = evaluate_terms(g, &tp, s, list, None, &mut w).unwrap();
        let fd = (up - down) / (2.0 * h);
        assert!(
            (fd - grad[p]).abs() < 1e-6,
            "∂/∂θ_{p}: {} vs {fd} ({list:?})",
            grad[p]
        );
    }
}

#[test]
fn objectives_match_their_definitions_and_gradients_match_differences() {
    for split in [false, true] {
        let g = grammar(split);
        let theta = random_theta(&g, 11);
        let mut w = TermWork::default();
        for s in sentences(&g).iter().filter(|s| s.gold.is_some()) {
            let gold = s.gold.as_ref().unwrap();
            // ML: log p(gold tree | x) by enumeration.
            let all = all_trees(&g, s);
            let scores: Vec<f64> = all.iter().map(|t| global_score(&g, &theta, s, t)).collect();
            let want = gold_score(&g, &theta, s, None) - log_sum_exp(&scores);
            let mut list = Vec::new();
            terms(&GrammarEstimator::Ml, s, &[], &mut list);
            let got = evaluate_terms(&g, &theta, s, &list, None, &mut w).unwrap();
            assert!((got - want).abs() < 1e-10, "ml {got} vs {want}");
            fd_check(&g, s, &list, &theta);
            // MECFG: Σ over gold expansions of log p(B C [, k] | A, i, j).
            terms(&GrammarEstimator::Memm, s, &[], &mut list);
            let want: f64 = root_log_p(&g, &theta, gold.root, false)
                + gold
                    .binary
                    .iter()
                    .map(|&(r, i, k, j)| {
                        local_log_p(
                            &g,
                            &theta,
                            s,
                            Some((r, k as usize)),
                            g.rules[r as usize].a,
                            i as usize,
                            j as usize,
                            false,
                        )
                    })
                    .sum::<f64>();
            let got = evaluate_terms(&g, &theta, s, &list, None, &mut w).unwrap();
            assert!((got - want).abs() < 1e-10, "memm {got} vs {want}");
            fd_check(&g, s, &list, &theta);
            // NOTA (001 eq. 6 on the chart): gold normalisers with the outcome, and wrong edges.
            let n = s.forms.len() as u32;
            let wrong: Vec<(u32, u32, u32)> = (0..g.labels.len() as u32)
                .filter(|&a| g.by_parent[a as usize].start < g.by_parent[a as usize].end)
                .flat_map(|a| [(a, 0, n), (a, 0, 2.min(n))])
                .filter(|&(a, i, j)| {
                    j - i >= 2
                        && !gold
                            .binary
                            .iter()
                            .any(|&(r, gi, _, gj)| gi == i && gj == j && g.rules[r as usize].a == a)
                })
                .collect();
            let est = GrammarEstimator::Nota {
                per_sentence: None,
                selection: Default::default(),
            };
            terms(&est, s, &wrong, &mut list);
            let want: f64 = root_log_p(&g, &theta, gold.root, true)
                + gold
                    .binary
                    .iter()
                    .map(|&(r, i, k, j)| {
                        local_log_p(
                            &g,
                            &theta,
                            s,
                            Some((r, k as usize)),
                            g.rules[r as usize].a,
                            i as usize,
                            j as usize,
                            true,
                        )
                    })
                    .sum::<f64>()
                + wrong
                    .iter()
                    .map(|&(a, i, j)| {
                        local_log_p(&g, &theta, s, None, a, i as usize, j as usize, true)
                    })
                    .sum::<f64>();
            let got = evaluate_terms(&g, &theta, s, &list, None, &mut w).unwrap();
            assert!((got - want).abs() < 1e-10, "nota {got} vs {want}");
            fd_check(&g, s, &list, &theta);
        }
    }
}

/// The Parse pane's sentence view shows what the objective computes: each term's value from
/// `evaluate_terms` equals the definition, its gold outcome's probability equals exp(value),
/// the candidates of a normaliser sum to one, the chart's ratios peak at 0 per length, and
/// the trees' bracket colours count what EVALB counts.
#[test]
fn sentence_views_show_what_the_objective_computes() {
    use piecewise_lab::eval::parse_view::sentence_view;
    for split in [false, true] {
        let g = grammar(split);
        let theta = random_theta(&g, 7);
        let est = GrammarEstimator::Nota {
            selection: Default::default(),
            per_sentence: None,
        };
        for tree in trees() {
            let s = g.encode(&tree);
            let v = sentence_view(&g, &theta, &est, &tree, f64::NEG_INFINITY);
            // Trees: green nodes are EVALB's matches, scored nodes its bracket counts.
            let scored = |ns: &[piecewise_lab::eval::parse_view::Node]| {
                ns.iter().filter(|x| x.matched.is_some()).count()
            };
            let green = |ns: &[piecewise_lab::eval::parse_view::Node]| {
                ns.iter().filter(|x| x.matched == Some(true)).count()
            };
            assert_eq!(scored(&v.gold), v.score.gold_brackets);
            assert_eq!(scored(&v.predicted), v.score.test_brackets);
            assert_eq!(green(&v.gold), v.score.matched);
            assert_eq!(green(&v.predicted), v.score.matched);
            // Chart: the best edge of each length has ratio 0, every other ≤ 0.
            let n = s.words.len();
            for len in 1..=n {
                let best = v
                    .cells
                    .iter()
                    .filter(|c| c.j - c.i == len)
                    .flat_map(|c| c.edges.iter().map(|e| e.log_ratio))
                    .fold(f64::NEG_INFINITY, f64::max);
                assert!(
                    best == 0.0 || best == f64::NEG_INFINITY,
                    "len {len}: {best}"
                );
            }
            // Terms: one per gold expansion, the root, and (threshold −∞) every wrong binary
            // edge of the chart.
            let gold = s.gold.as_ref().unwrap();
            let wrong = v
                .cells
                .iter()
                .filter(|c| c.j - c.i >= 2)
                .flat_map(|c| c.edges.iter())
                .filter(|e| {
                    !e.gold && {
                        let a = g.label(&e.label).unwrap();
                        !g.by_parent[a as usize].is_empty()
                    }
                })
                .count();
            assert_eq!(v.terms.len(), 1 + gold.binary.len() + wrong);
            for t in &v.terms {
                let def = match t.term {
                    ChartTerm::Expansion { rule, i, k, j, .. } => local_log_p(
                        &g,
                        &theta,
                        &s,
                        Some((rule, k as usize)),
                        g.rules[rule as usize].a,
                        i as usize,
                        j as usize,
                        true,
                    ),
                    ChartTerm::Nota { a, i, j } => {
                        local_log_p(&g, &theta, &s, None, a, i as usize, j as usize, true)
                    }
                    ChartTerm::Root { .. } => root_log_p(&g, &theta, gold.root, true),
                    ChartTerm::Global => unreachable!("not a PT-CFG term"),
                };
                assert!(
                    (t.value - def).abs() < 1e-9,
                    "{}: {} vs {def}",
                    t.title,
                    t.value
                );
                let outcome = t
                    .candidates
                    .iter()
                    .find(|c| c.2)
                    .expect("the outcome shown");
                assert!((outcome.1 - t.value.exp()).abs() < 1e-9, "{}", t.title);
                if t.outcomes <= t.candidates.len() {
                    let total: f64 = t.candidates.iter().map(|c| c.1).sum();
                    assert!((total - 1.0).abs() < 1e-9, "{}: {total}", t.title);
                }
            }
        }
    }
}

/// The independence diagram's groups partition the weights the terms read: every weight a
/// local term's gradient touches belongs to its parent label's group, and two groups' terms
/// never touch the same weight.
#[test]
fn parameter_groups_share_no_weight() {
    use piecewise_lab::eval::parse_view::sentence_view;
    let g = grammar(true);
    let theta = random_theta(&g, 3);
    let est = GrammarEstimator::Nota {
        selection: Default::default(),
        per_sentence: None,
    };
    let tree = &trees()[0];
    let s = g.encode(tree);
    let v = sentence_view(&g, &theta, &est, tree, f64::NEG_INFINITY);
    let mut owner: std::collections::HashMap<usize, String> = Default::default();
    let mut w = TermWork::default();
    for t in &v.terms {
        let group = match t.term {
            ChartTerm::Expansion { rule, .. } => {
                g.labels[g.rules[rule as usize].a as usize].clone()
            }
            ChartTerm::Nota { a, .. } => g.labels[a as usize].clone(),
            ChartTerm::Root { .. } => "TOP (the root rule)".to_string(),
            ChartTerm::Global => unreachable!(),
        };
        let mut grad = vec![0.0; g.n_params];
        evaluate_terms(&g, &theta, &s, &[t.term], Some((&mut grad, 1.0)), &mut w).unwrap();
        for (k, &x) in grad.iter().enumerate() {
            if x != 0.0 {
                let o = owner.entry(k).or_insert_with(|| group.clone());
                assert_eq!(*o, group, "weight {k} read by {o} and {group}");
            }
        }
    }
    let mut groups: Vec<String> = owner.values().cloned().collect();
    groups.sort();
    groups.dedup();
    let mut shown: Vec<String> = v.groups.iter().map(|x| x.name.clone()).collect();
    shown.sort();
    assert_eq!(groups, shown);
    let terms: usize = v.groups.iter().map(|x| x.terms).sum();
    assert_eq!(terms, v.terms.len());
}
