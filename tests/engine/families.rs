//! The grid and Boltzmann-machine families against independent references: their tables against
//! the model's definition computed by hand, exact likelihoods against brute force written from
//! the formulas, the exact sampler's frequencies against the true probabilities, weights and
//! run directories round trips, and file:line errors for malformed files.

use piecewise_lab::data::grid::parse_grid;
use piecewise_lab::data::samples::parse_samples;
use piecewise_lab::data::synth_loopy::{boltzmann_samples, paper_theta, GridGen};
use piecewise_lab::estimators::objective::DatasetObjective;
use piecewise_lab::estimators::EstimatorSpec;
use piecewise_lab::graph::boltzmann::BoltzmannOptions;
use piecewise_lab::graph::family::{self, Family};
use piecewise_lab::graph::grid::{GridOptions, Neighbourhood, Pairwise};
use piecewise_lab::optim::Prior;
use piecewise_lab::run::ModelSpec;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const GRID: &str = "\
# two images of 2x3 pixels, two observations each
a 0.5 -1 | b 1 0 | a 0 2
b 0.25 0 | b -1 1 | c 3 0.5

c 1 1 | a 0 0 | b 2 -2
a -1 1 | c 0.5 0.5 | c 1 0
";

fn fit_grid(
    options: GridOptions,
) -> (
    std::sync::Arc<dyn Family>,
    Vec<piecewise_lab::graph::Instance>,
) {
    let corpus = parse_grid(GRID, "g.grid").unwrap();
    ModelSpec::Grid(options).fit(&corpus, None).unwrap()
}

/// φ_unary(y) = w[y,0] + Σ_k x_k w[y,k]; pairwise: Potts θ·1[a = b], symmetric θ_{min,max},
/// full θ_{a,b}; every factor's table checked entry by entry from θ by name.
#[test]
fn grid_tables_follow_the_definition() {
    for (pairwise, neighbourhood) in [
        (Pairwise::Potts, Neighbourhood::Four),
        (Pairwise::Symmetric, Neighbourhood::Eight),
        (Pairwise::Full, Neighbourhood::Four),
    ] {
        let (fam, insts) = fit_grid(GridOptions {
            pairwise,
            neighbourhood,
        });
        let model = fam.model();
        let k = 3;
        let n_pair = match pairwise {
            Pairwise::Potts => 1,
            Pairwise::Symmetric => k * (k + 1) / 2,
            Pairwise::Full => k * k,
        };
        assert_eq!(model.n_params, k * 3 + n_pair);
        let mut rng = StdRng::seed_from_u64(2);
        let theta: Vec<f64> = (0..model.n_params)
            .map(|_| rng.random_range(-1.0..1.0))
            .collect();
        // Weights by name, as the dump writes them.
        let w = |t: &str, f: &str, col: &str| -> f64 {
            let text = family::dump_weights(fam.as_ref(), &theta);
            text.lines()
                .find(|l| l.starts_with(&format!("{t}\t{f}\t{col}\t")))
                .map(|l| l.rsplit('\t').next().unwrap().parse().unwrap())
                .unwrap_or(0.0)
        };
        let corpus = parse_grid(GRID, "g.grid").unwrap();
        let names = ["a", "b", "c"];
        let label_of = |y: usize| fam.labels(&insts[0], 0).names[y].clone();
        for (inst, item) in insts.iter().zip(&corpus.sequences) {
            let n_edges = match neighbourhood {
                Neighbourhood::Four => 3 + 4,
                Neighbourhood::Eight => 3 + 4 + 2 * 2,
            };
            assert_eq!(inst.factors.len(), 6 + n_edges);
            let mut phi = vec![0.0; inst.table_len];
            model.build_tables(&theta, inst, &mut phi, &mut vec![]);
            for f in &inst.factors {
                let tab = inst.table(f, &phi);
                match *inst.scope(f) {
                    [v] => {
                        let x: Vec<f64> = item.columns[v as usize]
                            .iter()
                            .map(|s| s.parse().unwrap())
                            .collect();
                        for (y, &got) in tab.iter().enumerate() {
                            let l = label_of(y);
                            let want = w("unary", "*", &l)
                                + x[0] * w("unary", "obs1", &l)
                                + x[1] * w("unary", "obs2", &l);
                            assert!((got - want).abs() < 1e-12);
                        }
                    }
                    [_, _] => {
                        for (e, &got) in tab.iter().enumerate() {
                            let (a, b) = (label_of(e / k), label_of(e % k));
                            let want = match pairwise {
                                Pairwise::Potts if a == b => w("pairwise", "*", "=\t="),
                                Pairwise::Potts => 0.0,
                                Pairwise::Symmetric => {
                                    let (lo, hi) = if names.iter().position(|&n| n == a)
                                        <= names.iter().position(|&n| n == b)
                                    {
                                        (&a, &b)
                                    } else {
                                        (&b, &a)
                                    };
                                    // The dump names each unordered pair once, low label first.
                                    w("pairwise", "*", &format!("{lo}\t{hi}"))
                                }
                                Pairwise::Full => w("pairwise", "*", &format!("{a}\t{b}")),
                            };
                            assert!((got - want).abs() < 1e-12, "{pairwise:?} {a},{b}");
                        }
                    }
                    _ => unreachable!(),
                }
            }
        }
        // Weights survive dump → read.
        let text = family::dump_weights(fam.as_ref(), &theta);
        let back = family::read_weights(fam.as_ref(), &text, "w.tsv").unwrap();
        assert_eq!(back, theta);
        // And carried over by name without the text (`--init-from`).
        let carried = family::transfer_weights(fam.as_ref(), &theta, fam.as_ref(), "run").unwrap();
        assert_eq!(carried, theta);
    }
}

/// log p(x) = Σ_{i<j} θ_ij x_i x_j + Σ b_i x_i − log Σ_x' exp(…), written out from 004 §8.1.
#[test]
fn boltzmann_likelihood_equals_the_formula() {
    let m = 5;
    let text = "0 1 1 0 1\n1 1 1 1 1\n0 0 0 0 0\n1 0 0 1 0\n";
    let corpus = parse_samples(text, "s.txt").unwrap();
    for biases in [false, true] {
        let (fam, insts) = ModelSpec::Boltzmann(BoltzmannOptions { biases })
            .fit(&corpus, None)
            .unwrap();
        let mut rng = StdRng::seed_from_u64(9);
        let theta: Vec<f64> = (0..fam.model().n_params)
            .map(|_| rng.random_range(-1.5..1.5))
            .collect();
        let energy = |x: &[usize]| {
            let mut e = 0.0;
            let mut k = 0;
            for i in 0..m {
                for j in i + 1..m {
                    e += theta[k] * (x[i] * x[j]) as f64;
                    k += 1;
                }
            }
            if biases {
                e += (0..m).map(|i| theta[k + i] * x[i] as f64).sum::<f64>();
            }
            e
        };
        let log_z = (0..1usize << m)
            .map(|s| energy(&(0..m).map(|i| (s >> i) & 1).collect::<Vec<_>>()).exp())
            .sum::<f64>()
            .ln();
        let want: f64 = corpus
            .sequences
            .iter()
            .map(|s| {
                let x: Vec<usize> = s.labels.iter().map(|l| l.parse().unwrap()).collect();
                energy(&x) - log_z
            })
            .sum();
        let est = EstimatorSpec::Ml.build(fam.model()).unwrap();
        let obj =
            DatasetObjective::new(fam.model(), &insts, est.as_ref(), Prior { sigma2: None }, 1)
                .unwrap();
        let got = obj.evaluate(&theta, None).value;
        assert!(
            (got - want).abs() < 1e-10,
            "biases {biases}: {got} vs {want}"
        );
        let text = family::dump_weights(fam.as_ref(), &theta);
        assert!(text.starts_with("coupling\tx1*x2\t1\t1\t"));
        assert_eq!(
            family::read_weights(fam.as_ref(), &text, "w").unwrap(),
            theta
        );
    }
}

/// Frequencies of 40,000 exact samples against the enumerated probabilities (each within 5 sd).
#[test]
fn boltzmann_sampler_draws_the_model() {
    let m = 4;
    let theta = vec![-1.0, 0.5, 1.0, -0.5, 0.8, -1.2];
    let n = 40_000;
    let s = boltzmann_samples(m, &theta, &[0.3, -0.2, 0.0, 0.4], n, 5).unwrap();
    let mut counts = vec![0usize; 1 << m];
    for x in &s {
        let idx = x
            .labels
            .iter()
            .fold(0, |a, l| a * 2 + l.parse::<usize>().unwrap());
        counts[idx] += 1;
    }
    let energy = |st: usize| {
        let bit = |i: usize| ((st >> (m - 1 - i)) & 1) as f64;
        let mut e = 0.0;
        let mut k = 0;
        for i in 0..m {
            for j in i + 1..m {
                e += theta[k] * bit(i) * bit(j);
                k += 1;
            }
        }
        e + 0.3 * bit(0) - 0.2 * bit(1) + 0.4 * bit(3)
    };
    let z: f64 = (0..1 << m).map(|st| energy(st).exp()).sum();
    for (st, &c) in counts.iter().enumerate() {
        let p = energy(st).exp() / z;
        let sd = (n as f64 * p * (1.0 - p)).sqrt();
        assert!(
            (c as f64 - n as f64 * p).abs() < 5.0 * sd + 1.0,
            "state {st}: {c} vs {}",
            n as f64 * p
        );
    }
    assert_eq!(
        paper_theta(5),
        vec![-1.0, -1.0, -1.0, -1.0, -1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    );
}

#[test]
fn generated_grids_have_their_shape_and_read_back() {
    let g = GridGen {
        classes: 4,
        height: 5,
        width: 7,
        ..GridGen::default()
    };
    for field in [
        piecewise_lab::data::synth_loopy::LabelField::Smooth,
        piecewise_lab::data::synth_loopy::LabelField::Potts,
    ] {
        let items = GridGen { field, ..g.clone() }.images(3, 1).unwrap();
        let text = piecewise_lab::data::grid::format_grid(&items, None);
        let back = parse_grid(&text, "gen.grid").unwrap();
        assert_eq!(back.sequences.len(), 3);
        assert_eq!(back.n_columns, 5);
        for (a, b) in items.iter().zip(&back.sequences) {
            assert_eq!(b.shape, Some((5, 7)));
            assert_eq!(a.labels, b.labels);
        }
    }
    // Same seed, same images.
    assert_eq!(
        g.images(2, 3).unwrap()[1].labels,
        g.images(2, 3).unwrap()[1].labels
    );
}

#[test]
fn malformed_grid_and_sample_files_name_the_line() {
    let cases = [
        ("a 1 | b 2\nb 1\n", "g.grid:2", "cells in this row"),
        (
            "a 1 | b 2\n\nc 1 | d x\n",
            "g.grid:3",
            "not a finite number",
        ),
        ("a 1 | b 2 3\n", "g.grid:1", "observations"),
        ("a 1 |  | b 2\n", "g.grid:1", "empty"),
        ("# nothing\n\n", "g.grid:1", "no grid"),
        ("_ 1 | _ 2\n\na 1 | b 2\n", "g.grid:1", "no labels"),
    ];
    for (text, at, what) in cases {
        let e = parse_grid(text, "g.grid").unwrap_err().to_string();
        assert!(e.starts_with(at) && e.contains(what), "{text:?}: {e}");
    }
    let cases = [
        ("0 1 1\n0 2 1\n", "s.txt:2", "0s and 1s"),
        ("0 1 1\n\n0 1\n", "s.txt:3", "earlier samples have 3"),
        ("\n# c\n", "s.txt:1", "no samples"),
    ];
    for (text, at, what) in cases {
        let e = parse_samples(text, "s.txt").unwrap_err().to_string();
        assert!(e.starts_with(at) && e.contains(what), "{text:?}: {e}");
    }
    // A test file whose pixels have another number of observations than training.
    let (fam, _) = fit_grid(GridOptions::default());
    let other = parse_grid("a 1 2 3\n", "t.grid").unwrap();
    let e = fam.instances(&other).unwrap_err().to_string();
    assert!(
        e.contains("t.grid") && e.contains("3 observations per pixel"),
        "{e}"
    );
}

/// Every estimator runs on both families through the training objective, and local ones need no
/// inference over the whole graph.
#[test]
fn every_estimator_trains_on_grids_and_boltzmann_machines() {
    let (grid, grid_insts) = fit_grid(GridOptions::default());
    let bm_corpus = parse_samples("0 1 1 0 1\n1 1 0 1 1\n0 0 1 0 0\n", "s").unwrap();
    let (bm, bm_insts) = ModelSpec::Boltzmann(BoltzmannOptions::default())
        .fit(&bm_corpus, None)
        .unwrap();
    for (fam, insts) in [(grid, grid_insts), (bm, bm_insts)] {
        for name in EstimatorSpec::NAMES {
            let spec = EstimatorSpec::from_name(name).unwrap();
            let est = spec.build(fam.model()).unwrap();
            let obj =
                DatasetObjective::new(fam.model(), &insts, est.as_ref(), Prior::from_c2(0.1), 1);
            if spec.is_locally_normalised() {
                // Next-state classifiers exist on chains only: a clear error elsewhere.
                let e = obj
                    .err()
                    .unwrap_or_else(|| panic!("{name} on a {}", fam.kind()));
                assert!(e.to_string().contains("linear chains"), "{e}");
                continue;
            }
            let obj = obj.unwrap_or_else(|e| panic!("{} {name}: {e}", fam.kind()));
            let theta = vec![0.1; fam.model().n_params];
            let mut g = vec![0.0; theta.len()];
            let e = obj.evaluate(&theta, Some(&mut g));
            assert!(
                e.value.is_finite() && g.iter().all(|x| x.is_finite()),
                "{} {name}",
                fam.kind()
            );
        }
    }
}

/// Every estimator's gradient through the training objective (subset tables, shared Potts slots,
/// scatter through entry maps) against central finite differences of its value, on a 2×3 grid
/// (Potts and symmetric pairwise maps) and on a Boltzmann machine with biases.
#[test]
fn every_estimator_gradient_matches_finite_differences_on_grids_and_boltzmann() {
    let bm_corpus = parse_samples("0 1 1 0\n1 1 0 1\n0 0 1 0\n1 1 1 1\n", "s").unwrap();
    type Fitted = (
        std::sync::Arc<dyn Family>,
        Vec<piecewise_lab::graph::Instance>,
    );
    let cases: Vec<(&str, Fitted)> = vec![
        ("grid potts", fit_grid(GridOptions::default())),
        (
            "grid symmetric 8",
            fit_grid(GridOptions {
                pairwise: Pairwise::Symmetric,
                neighbourhood: Neighbourhood::Eight,
            }),
        ),
        (
            "boltzmann",
            ModelSpec::Boltzmann(BoltzmannOptions { biases: true })
                .fit(&bm_corpus, None)
                .unwrap(),
        ),
    ];
    let mut rng = StdRng::seed_from_u64(31);
    for (name, (fam, insts)) in cases {
        let model = fam.model();
        let theta: Vec<f64> = (0..model.n_params)
            .map(|_| rng.random_range(-0.8..0.8))
            .collect();
        for est_name in EstimatorSpec::NAMES {
            let spec = EstimatorSpec::from_name(est_name).unwrap().with_bp(
                piecewise_lab::inference::BpOptions {
                    tol: 1e-13,
                    max_sweeps: 10_000,
                    ..Default::default()
                },
            );
            if spec.is_locally_normalised() {
                continue; // chains only (checked above)
            }
            let est = spec.build(model).unwrap();
            let obj = DatasetObjective::new(model, &insts, est.as_ref(), Prior { sigma2: None }, 1)
                .unwrap();
            let mut g = vec![0.0; theta.len()];
            obj.evaluate(&theta, Some(&mut g));
            let h = 1e-5;
            for j in 0..theta.len() {
                let (mut tp, mut tm) = (theta.clone(), theta.clone());
                tp[j] += h;
                tm[j] -= h;
                let fd = (obj.evaluate(&tp, None).objective - obj.evaluate(&tm, None).objective)
                    / (2.0 * h);
                assert!(
                    (fd - g[j]).abs() < 1e-6 * (1.0 + fd.abs()),
                    "{name} {est_name} θ{j}: FD {fd} vs gradient {}",
                    g[j]
                );
            }
        }
    }
}
