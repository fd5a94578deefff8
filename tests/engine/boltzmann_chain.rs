//! The Boltzmann chain (004 §8.3.1) against its definition: log p(x, y) with Z summed over
//! every label *and* word sequence, and the SCL components p(x_A, y_A | rest) over windows of
//! (label, word) positions — by brute force over the labels with each word summed in closed
//! form (Σ_x exp B[y, x]), an independent route from the sum-product the estimators use.
//! Gradients against finite differences of that reference.

use piecewise_lab::data::read_conll;
use piecewise_lab::estimators::scl::{Selection, SelectionPolicy};
use piecewise_lab::estimators::{EstimatorSpec, Workspace};
use piecewise_lab::graph::boltzmann_chain::{BoltzmannChain, BoltzmannChainOptions};
use piecewise_lab::graph::{Family, Instance};
use piecewise_lab::inference::chain::ChainWork;
use piecewise_lab::inference::enumerate::for_each_assignment;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn corpus(dir: &std::path::Path, rng: &mut StdRng, v: usize, n_items: usize) -> std::path::PathBuf {
    let labels = ["B-NP", "I-NP", "O"];
    let mut text = String::new();
    for _ in 0..n_items {
        for _ in 0..4 {
            text += &format!(
                "w{} POS {}\n",
                rng.random_range(0..v),
                labels[rng.random_range(0..3)]
            );
        }
        text += "\n";
    }
    let p = dir.join("train.txt");
    std::fs::write(&p, text).unwrap();
    p
}

fn lse(xs: impl Iterator<Item = f64>) -> f64 {
    let v: Vec<f64> = xs.collect();
    let m = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    m + v.iter().map(|x| (x - m).exp()).sum::<f64>().ln()
}

/// log p(x_A, y_A | everything else) for positions `a` (all positions: log p(x, y)), with the
/// tables read by factor: 0 start, 2t−… transitions at 2t, emissions at 2t + 1.
fn reference(inst: &Instance, phi: &[f64], k: usize, a: &[usize]) -> f64 {
    let gold = inst.gold.as_ref().unwrap();
    let n = inst.n_vars() / 2;
    let tab = |f: usize| inst.table(&inst.factors[f], phi);
    let v = inst.card[1] as usize;
    let emit_lse = |y: usize| lse((0..v).map(|x| tab(1)[y * v + x]));
    // Score of labels y with words at gold outside A and summed (closed form) inside A.
    let score = |y: &[u32], summed: bool| -> f64 {
        let mut s = tab(0)[y[0] as usize];
        for t in 0..n {
            if t > 0 {
                s += tab(2 * t)[y[t - 1] as usize * k + y[t] as usize];
            }
            let yt = y[t] as usize;
            s += if summed && a.contains(&t) {
                emit_lse(yt)
            } else {
                tab(2 * t + 1)[yt * v + gold[2 * t + 1] as usize]
            };
        }
        s
    };
    let gold_y: Vec<u32> = (0..n).map(|t| gold[2 * t]).collect();
    let num = score(&gold_y, false);
    let card = vec![k as u32; a.len()];
    let mut terms = vec![];
    for_each_assignment(&card, |ya| {
        let mut y = gold_y.clone();
        for (i, &t) in a.iter().enumerate() {
            y[t] = ya[i];
        }
        terms.push(score(&y, true));
    });
    num - lse(terms.into_iter())
}

#[test]
fn likelihood_and_components_equal_their_definitions() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = StdRng::seed_from_u64(7);
    // 30 words: a window of two positions has (3·31)² > 4,096 states, so the sum-product path
    // (with the emission rows read from the instance's cached lines) is the one under test.
    let path = corpus(dir.path(), &mut rng, 30, 3);
    let train = read_conll(&path).unwrap();
    let (bc, insts) = BoltzmannChain::fit(&train, BoltzmannChainOptions::default()).unwrap();
    let k = bc.labels.len();
    assert_eq!(k, 3);
    let model = bc.model();
    for (name, spec, windows) in [
        ("fl", EstimatorSpec::Ml, 4usize),
        (
            "pl1",
            EstimatorSpec::Scl {
                policy: SelectionPolicy::parse("1:1*pl1", Selection::Independent, 0).unwrap(),
            },
            1,
        ),
        (
            "pl2",
            EstimatorSpec::Scl {
                policy: SelectionPolicy::parse("1:1*pl2", Selection::Independent, 0).unwrap(),
            },
            2,
        ),
    ] {
        let est = spec.build(model).unwrap();
        for inst in &insts {
            est.check(inst).unwrap();
            let theta: Vec<f64> = (0..model.n_params)
                .map(|_| rng.random_range(-1.0..1.0))
                .collect();
            let mut phi = vec![0.0; inst.table_len];
            model.build_tables(&theta, inst, &mut phi, &mut Vec::new());
            let n = inst.n_vars() / 2;
            let refv = |phi: &[f64]| -> f64 {
                (0..=n - windows)
                    .map(|t| reference(inst, phi, k, &(t..t + windows).collect::<Vec<_>>()))
                    .sum()
            };
            let mut dphi = vec![0.0; inst.table_len];
            let v = est.evaluate(inst, &phi, Some(&mut dphi), &mut Workspace::default());
            let want = refv(&phi);
            assert!((v - want).abs() < 1e-9, "{name}: {v} vs {want}");
            let h = 1e-6;
            for e in 0..phi.len() {
                let (mut p, mut m) = (phi.clone(), phi.clone());
                p[e] += h;
                m[e] -= h;
                let fd = (refv(&p) - refv(&m)) / (2.0 * h);
                assert!(
                    (fd - dphi[e]).abs() < 1e-6,
                    "{name} entry {e}: FD {fd} vs {}",
                    dphi[e]
                );
            }
        }
    }
}

#[test]
fn tagging_decodes_labels_given_words_and_unknown_words_are_unk() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = StdRng::seed_from_u64(9);
    let path = corpus(dir.path(), &mut rng, 6, 4);
    let train = read_conll(&path).unwrap();
    let (bc, insts) = BoltzmannChain::fit(&train, BoltzmannChainOptions::default()).unwrap();
    let model = bc.model();
    let theta: Vec<f64> = (0..model.n_params)
        .map(|_| rng.random_range(-2.0..2.0))
        .collect();
    let k = bc.labels.len() as u32;
    for (inst, item) in insts.iter().zip(&train.sequences) {
        let mut phi = vec![0.0; inst.table_len];
        model.build_tables(&theta, inst, &mut phi, &mut Vec::new());
        let chain = bc.clamped_chain(inst, item, &phi).unwrap();
        let (y, _) = ChainWork::default().viterbi_clamped(&chain);
        // Brute force: the best labels with the words held.
        let gold = inst.gold.as_ref().unwrap();
        let n = inst.n_vars() / 2;
        let mut best = (f64::NEG_INFINITY, vec![]);
        for_each_assignment(&vec![k; n], |ys| {
            let mut full = gold.clone();
            for t in 0..n {
                full[2 * t] = ys[t];
            }
            let s = inst.score(&phi, &full);
            if s > best.0 {
                best = (s, full.clone());
            }
        });
        assert_eq!(y, best.1);
        assert_eq!(bc.token_labels(inst, &y).len(), n);
    }
    assert_eq!(bc.words.names[bc.word("never-seen") as usize], "<unk>");
}

/// `vocabulary`: the words of another file join the vocabulary (004 models every CoNLL-2000
/// word), each its own outcome; a word in neither file is still `<unk>`, and without the option
/// the training words keep their indices.
#[test]
fn a_vocabulary_file_adds_its_words_as_their_own_outcomes() {
    let dir = tempfile::tempdir().unwrap();
    let train_path = dir.path().join("train.conll");
    std::fs::write(&train_path, "the B-NP\ncat I-NP\nsat B-VP\n\n").unwrap();
    let vocab = dir.path().join("all.conll");
    std::fs::write(&vocab, "the B-NP\ndog I-NP\nran B-VP\n\n").unwrap();
    let train = read_conll(&train_path).unwrap();
    let (plain, _) = BoltzmannChain::fit(&train, BoltzmannChainOptions::default()).unwrap();
    let opts = BoltzmannChainOptions {
        vocabulary: Some(vocab),
        ..BoltzmannChainOptions::default()
    };
    let (bc, _) = BoltzmannChain::fit(&train, opts).unwrap();
    // {cat, dog, ran, sat, the} and <unk>.
    assert_eq!(bc.words.len(), 6);
    assert_eq!(plain.words.len(), 4);
    for w in ["dog", "ran", "cat", "the"] {
        assert_eq!(bc.words.names[bc.word(w) as usize], w);
    }
    assert_eq!(bc.words.names[bc.word("bird") as usize], "<unk>");
    assert_eq!(plain.words.names[plain.word("dog") as usize], "<unk>");
    // K × (V + K + 1) weights: the emission table grows with the vocabulary.
    let k = bc.labels.len();
    assert_eq!(bc.model().n_params, k + k * k + k * 6);
}
