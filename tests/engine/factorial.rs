//! The factorial CRF (000 eq. 40) against brute force: forward–backward over the joint states
//! of a position gives log Z, both layers' marginals and the Viterbi labelling that enumeration
//! of every joint assignment gives; exact ML's gradient matches finite differences; the
//! `bp` estimator really runs loopy BP on it (a different value from exact ML); the reader maps
//! other chunk types to O and scores the POS layer.

use crate::common;

use common::{assert_close, assert_gradient_matches_fd, lse, random_theta};
use piecewise_lab::estimators::objective::DatasetObjective;
use piecewise_lab::estimators::{BetheMl, Estimator, ExactMl, Workspace};
use piecewise_lab::eval::{decode, tables, Decoder, Inference};
use piecewise_lab::graph::factorial::{FactorialCrf, FactorialOptions};
use piecewise_lab::graph::{Family, Instance};
use piecewise_lab::inference::enumerate::for_each_assignment;
use piecewise_lab::inference::{exact_node_marginals, factor_marginals, BpOptions};
use piecewise_lab::optim::Prior;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::path::Path;

/// A tiny CoNLL-2000-like corpus: 3 POS tags, NP/VP chunks, sentences of 1–4 tokens.
fn corpus(dir: &Path, rng: &mut StdRng, items: usize) -> std::path::PathBuf {
    let pos = ["NN", "DT", "VB"];
    let chunks = ["B-NP", "I-NP", "O", "B-VP"];
    let words = ["the", "Dog", "runs", "7", "Mary", "fast"];
    let mut text = String::new();
    for i in 0..items {
        for _ in 0..(1 + i % 4) {
            text += &format!(
                "{} {} {}\n",
                words[rng.random_range(0..words.len())],
                pos[rng.random_range(0..3)],
                chunks[rng.random_range(0..4)]
            );
        }
        text += "\n";
    }
    let p = dir.join("train.txt");
    std::fs::write(&p, text).unwrap();
    let lex = dir.join("lex");
    std::fs::create_dir_all(&lex).unwrap();
    std::fs::write(lex.join("first-male.txt"), "JOHN\n").unwrap();
    std::fs::write(lex.join("first-female.txt"), "MARY\n").unwrap();
    std::fs::write(lex.join("last.txt"), "SMITH\n").unwrap();
    p
}

fn fit(dir: &Path, seed: u64, items: usize) -> (FactorialCrf, Vec<Instance>) {
    let mut rng = StdRng::seed_from_u64(seed);
    let path = corpus(dir, &mut rng, items);
    let c = FactorialCrf::read_data(&path, true).unwrap();
    FactorialCrf::fit(
        &c,
        FactorialOptions {
            lexicons: Some(dir.join("lex")),
            ..FactorialOptions::default()
        },
    )
    .unwrap()
}

/// Every joint assignment's score straight from eq. 40: Σ_t Ψ0(y_{t−1}, y_t) + Ψ1(w_{t−1}, w_t)
/// + Ψ2(w_t, y_t), each read from the factor's table by its own label indices.
fn scores_by_definition(inst: &Instance, phi: &[f64]) -> Vec<(Vec<u32>, f64)> {
    let n = inst.n_vars() / 2;
    let ny = inst.card[1] as usize;
    let nw = inst.card[0] as usize;
    let mut out = vec![];
    for_each_assignment(&inst.card, |y| {
        let (w, c): (Vec<usize>, Vec<usize>) = (0..n)
            .map(|t| (y[2 * t] as usize, y[2 * t + 1] as usize))
            .unzip();
        let mut s = 0.0;
        for f in &inst.factors {
            let tab = inst.table(f, phi);
            let sc = inst.scope(f);
            let (a, b) = (sc[0] as usize, sc[1] as usize);
            s += match (a % 2, b % 2, b - a) {
                (1, 1, 2) => tab[c[a / 2] * ny + c[b / 2]],
                (0, 0, 2) => tab[w[a / 2] * nw + w[b / 2]],
                (0, 1, 1) => tab[w[a / 2] * ny + c[b / 2]],
                other => panic!("unexpected factor scope {other:?}"),
            };
        }
        out.push((y.to_vec(), s));
    });
    out
}

#[test]
fn product_forward_backward_equals_enumeration() {
    let dir = tempfile::tempdir().unwrap();
    let (fam, insts) = fit(dir.path(), 3, 12);
    let mut rng = StdRng::seed_from_u64(9);
    let mut checked = 0;
    for inst in insts.iter().filter(|i| i.n_vars() >= 4) {
        assert!(
            inst.product.is_some(),
            "a ladder of ≥ 2 positions has a product layout"
        );
        let theta = random_theta(&mut rng, fam.model.n_params, 1.0);
        let phi = tables(&fam, &theta, inst);
        let all = scores_by_definition(inst, &phi);
        let log_z = lse(all.iter().map(|(_, s)| *s));
        let (marg, lz) = exact_node_marginals(inst, &phi).unwrap();
        assert_close(lz, log_z, 1e-10, "log Z");
        // Both layers' node marginals.
        for (v, mv) in marg.iter().enumerate() {
            assert_eq!(mv.len(), inst.card[v] as usize);
            for (k, &m) in mv.iter().enumerate() {
                let p: f64 = all
                    .iter()
                    .filter(|(y, _)| y[v] as usize == k)
                    .map(|(_, s)| (s - log_z).exp())
                    .sum();
                assert_close(m, p, 1e-10, &format!("marginal of variable {v}"));
            }
        }
        // Factor marginals (the gradient's expectations).
        let fm = factor_marginals(inst, &phi, &BpOptions::default());
        let (exact, by) = fm.exact.unwrap();
        assert!(by.contains("joint states"), "{by}");
        for (fi, f) in inst.factors.iter().enumerate() {
            let mut want = vec![0.0; exact[fi].len()];
            for (y, s) in &all {
                want[inst.entry(f, y)] += (s - log_z).exp();
            }
            for (a, b) in exact[fi].iter().zip(&want) {
                assert_close(*a, *b, 1e-10, "factor marginal");
            }
        }
        // The ML value is log p(y*) by definition.
        let gold = inst.gold.as_ref().unwrap();
        let gold_score = all.iter().find(|(y, _)| y == gold).unwrap().1;
        let v = ExactMl.evaluate(inst, &phi, None, &mut Workspace::default());
        assert_close(v, gold_score - log_z, 1e-10, "log p(y*)");
        // Viterbi over joint states = the best enumerated assignment.
        let how = Inference {
            decoder: Decoder::Viterbi,
            ..Inference::default()
        };
        let (y, by) = decode(inst, &phi, &how, &mut Workspace::default()).unwrap();
        assert_eq!(by, "viterbi over joint states");
        let best = all.iter().max_by(|a, b| a.1.total_cmp(&b.1)).unwrap();
        assert_eq!(y, best.0, "Viterbi labelling");
        checked += 1;
    }
    assert!(checked >= 6, "checked {checked} instances");
}

#[test]
fn exact_ml_gradient_matches_finite_differences_and_bp_is_loopy() {
    let dir = tempfile::tempdir().unwrap();
    let (fam, insts) = fit(dir.path(), 5, 10);
    let mut rng = StdRng::seed_from_u64(2);
    let theta = random_theta(&mut rng, fam.model.n_params, 0.5);
    let obj = DatasetObjective::new(
        &fam.model,
        &insts,
        &ExactMl,
        Prior { sigma2: Some(10.0) },
        2,
    )
    .unwrap();
    assert_gradient_matches_fd(&obj, &theta, 1, "factorial ml");
    // The bp estimator is the Bethe approximation, not the exact value, on a ladder with loops.
    let bp = BetheMl {
        opts: BpOptions::default(),
    };
    let inst = insts.iter().find(|i| i.n_vars() >= 6).unwrap();
    let phi = tables(&fam, &theta, inst);
    let mut ws = Workspace::default();
    let (exact, bethe) = (
        ExactMl.evaluate(inst, &phi, None, &mut ws),
        bp.evaluate(inst, &phi, None, &mut ws),
    );
    assert!(
        (exact - bethe).abs() > 1e-6,
        "exact {exact} vs Bethe {bethe}"
    );
}

#[test]
fn reader_keeps_np_chunks_and_scores_the_pos_layer() {
    let dir = tempfile::tempdir().unwrap();
    let (fam, insts) = fit(dir.path(), 7, 8);
    assert_eq!(fam.chunks.len(), 3, "B-VP became O: {:?}", fam.chunks.names);
    assert!(fam.chunks.get("B-VP").is_none());
    assert_eq!(fam.kind(), "factorial");
    let c = fam.read(&dir.path().join("train.txt")).unwrap();
    assert_eq!(
        c.sequences[0].layers.len(),
        1,
        "the POS column is a label layer"
    );
    let theta = vec![0.0; fam.model.n_params];
    let m = piecewise_lab::eval::evaluate(&fam, &theta, &c, &Inference::default()).unwrap();
    assert!(m.layers.contains_key("pos"));
    assert_eq!(m.layers["pos"].tokens, m.tokens);
    let y = insts[1].gold.clone().unwrap();
    assert_eq!(fam.token_labels(&insts[1], &y), c.sequences[1].labels);
    assert_eq!(fam.extra_labels(&insts[1], &y)[0], c.sequences[1].layers[0]);
    // A file with two columns is neither labelled nor plain words.
    let bad = dir.path().join("bad.txt");
    std::fs::write(&bad, "the DT\ndog NN\n").unwrap();
    let e = fam.read(&bad).unwrap_err().to_string();
    assert!(e.contains("bad.txt") && e.contains("word POS chunk"), "{e}");
}

/// Pieces by template groups on the factorial CRF: with `pos-chunk+chunk-transition` each
/// piece at position t holds Ψ2(w_t, y_t) and Ψ0(y_{t−1}, y_t) (anchored at y_t), the POS
/// transitions are pieces of their own; PW's value is Σ_pieces [score(gold) − log Σ exp score]
/// over each piece's own variables, by brute force.
#[test]
fn piecewise_by_template_groups_matches_its_definition() {
    use piecewise_lab::estimators::EstimatorSpec;
    use piecewise_lab::graph::pieces::Pieces;
    let dir = tempfile::tempdir().unwrap();
    let (fam, insts) = fit(dir.path(), 11, 10);
    let spec = EstimatorSpec::from_name("pw")
        .unwrap()
        .with_pieces(Pieces::parse("pos-chunk+chunk-transition").unwrap());
    let est = spec.build(&fam.model).unwrap();
    let mut rng = StdRng::seed_from_u64(4);
    let theta = random_theta(&mut rng, fam.model.n_params, 1.0);
    for inst in insts.iter().filter(|i| i.n_vars() >= 6) {
        let phi = tables(&fam, &theta, inst);
        let gold = inst.gold.as_ref().unwrap();
        // Pieces: per position t the factors {Ψ2(w_t, y_t), Ψ0(y_{t−1}, y_t)}; each Ψ1 alone.
        let n = inst.n_vars() / 2;
        let mut pieces: Vec<Vec<usize>> = vec![vec![]; n];
        let mut singles = vec![];
        for (fi, f) in inst.factors.iter().enumerate() {
            let sc = inst.scope(f);
            if sc[0] % 2 == 0 && sc[1] % 2 == 0 {
                singles.push(vec![fi]);
            } else {
                pieces[sc[1] as usize / 2].push(fi);
            }
        }
        let mut want = 0.0;
        for piece in pieces.into_iter().chain(singles) {
            let mut vars: Vec<u32> = piece
                .iter()
                .flat_map(|&f| inst.scope(&inst.factors[f]).to_vec())
                .collect();
            vars.sort_unstable();
            vars.dedup();
            let card: Vec<u32> = vars.iter().map(|&v| inst.card[v as usize]).collect();
            let score = |y: &[u32]| -> f64 {
                piece
                    .iter()
                    .map(|&f| {
                        let fac = &inst.factors[f];
                        let mut full = gold.clone();
                        for (i, &v) in vars.iter().enumerate() {
                            full[v as usize] = y[i];
                        }
                        inst.table(fac, &phi)[inst.entry(fac, &full)]
                    })
                    .sum()
            };
            let mut all = vec![];
            for_each_assignment(&card, |y| all.push(score(y)));
            let g: Vec<u32> = vars.iter().map(|&v| gold[v as usize]).collect();
            want += score(&g) - lse(all.into_iter());
        }
        let got = est.evaluate(inst, &phi, None, &mut Workspace::default());
        assert_close(got, want, 1e-10, "pw with template-group pieces");
    }
}

/// Chunks decoded given the gold POS tags (000 Table 5's analysis) against enumeration: among
/// every joint assignment whose tags are the gold ones, none scores above ours, and ours keeps
/// the gold tags.
#[test]
fn chunks_given_gold_pos_is_the_best_assignment_with_those_tags() {
    use piecewise_lab::graph::factorial::chunks_given_gold_pos;
    use piecewise_lab::inference::chain::ChainWork;
    let dir = tempfile::tempdir().unwrap();
    let (fam, insts) = fit(dir.path(), 11, 12);
    let mut rng = StdRng::seed_from_u64(11);
    for inst in &insts {
        let theta = random_theta(&mut rng, fam.model.n_params, 1.0);
        let phi = tables(&fam, &theta, inst);
        let gold = inst.gold.clone().unwrap();
        let chain = chunks_given_gold_pos(inst, &phi).unwrap();
        let (ours, score) = ChainWork::default().viterbi_clamped(&chain);
        // The chain's tables score any chunks as the full model does, up to the terms the
        // clamped tags alone fix: the same offset for ours and for the gold chunks.
        let chain_score = |y: &[u32]| -> f64 {
            let n = y.len() / 2;
            (0..n)
                .map(|t| {
                    let s = y[2 * t + 1] as usize;
                    let p = if t > 0 {
                        chain.pair[(t, y[2 * t - 1] as usize, s)]
                    } else {
                        0.0
                    };
                    chain.unary[(t, s)] + p
                })
                .sum()
        };
        assert_close(score, chain_score(&ours), 1e-9, "the Viterbi score");
        assert_close(
            inst.score(&phi, &ours) - score,
            inst.score(&phi, &gold) - chain_score(&gold),
            1e-9,
            "one offset for every chunk labelling",
        );
        let n = inst.n_vars() / 2;
        assert!((0..n).all(|t| ours[2 * t] == gold[2 * t]), "tags kept");
        let mut best = f64::NEG_INFINITY;
        for (y, s) in scores_by_definition(inst, &phi) {
            if (0..n).all(|t| y[2 * t] == gold[2 * t]) {
                best = best.max(s);
            }
        }
        assert_close(
            inst.score(&phi, &ours),
            best,
            1e-9,
            "best score with the gold tags",
        );
    }
}
