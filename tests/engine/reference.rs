//! Inference and exact ML against brute-force enumeration from the model's definition, and
//! gradients against finite differences.

use crate::common;
use common::*;
use piecewise_lab::estimators::objective::DatasetObjective;
use piecewise_lab::estimators::{Estimator, ExactMl, Workspace};
use piecewise_lab::graph::{InstanceBuilder, Layout, Model};
use piecewise_lab::inference::{enumerate, ChainWork};
use piecewise_lab::optim::Prior;
use rand::rngs::StdRng;
use rand::SeedableRng;

fn tables(model: &Model, theta: &[f64], inst: &piecewise_lab::graph::Instance) -> Vec<f64> {
    let mut phi = vec![0.0; inst.table_len];
    model.build_tables(theta, inst, &mut phi, &mut Vec::new());
    phi
}

#[test]
fn forward_backward_marginals_and_viterbi_match_enumeration() {
    let mut rng = StdRng::seed_from_u64(7);
    for l in 1..=4 {
        let rc = random_chains(&mut rng, 30, 5, l);
        for scale in [0.5, 3.0] {
            let theta = random_theta(&mut rng, rc.model.n_params, scale);
            for (i, inst) in rc.instances.iter().enumerate() {
                let phi = tables(&rc.model, &theta, inst);
                let all = rc.all_scores(i, &theta);
                let log_z = lse(all.iter().map(|x| x.1));
                let lay = inst.chain.as_ref().expect("chain detected");
                let mut w = ChainWork::default();
                let fb = w.forward_backward(inst, lay, &phi);
                assert_close(fb, log_z, 1e-10, "log Z");
                let n = inst.n_vars();
                for t in 0..n {
                    for y in 0..l {
                        let p: f64 = all
                            .iter()
                            .filter(|(a, _)| a[t] == y as u32)
                            .map(|(_, s)| (s - log_z).exp())
                            .sum();
                        assert_close(w.node_marginal(t, y), p, 1e-9, "node marginal");
                        let e = enumerate(inst, &phi).unwrap();
                        assert_close(e.node_marginals[t][y], p, 1e-9, "enumerated node marginal");
                    }
                }
                for t in 1..n {
                    for yp in 0..l {
                        for y in 0..l {
                            let p: f64 = all
                                .iter()
                                .filter(|(a, _)| a[t - 1] == yp as u32 && a[t] == y as u32)
                                .map(|(_, s)| (s - log_z).exp())
                                .sum();
                            assert_close(w.pair_marginal(t, yp, y), p, 1e-9, "pair marginal");
                        }
                    }
                }
                let mut path = vec![];
                let best = w.viterbi(inst, lay, &phi, &mut path);
                let max = all.iter().map(|x| x.1).fold(f64::NEG_INFINITY, f64::max);
                assert_close(best, max, 1e-10, "Viterbi score");
                assert_close(
                    rc.score_by_definition(i, &theta, &path),
                    max,
                    1e-10,
                    "Viterbi path",
                );
                // The enumeration service agrees too.
                let e = enumerate(inst, &phi).unwrap();
                assert_close(e.log_z, log_z, 1e-10, "enumeration log Z");
            }
        }
    }
}

#[test]
fn exact_ml_value_is_log_conditional_likelihood() {
    let mut rng = StdRng::seed_from_u64(11);
    for l in 1..=4 {
        let rc = random_chains(&mut rng, 20, 5, l);
        let theta = random_theta(&mut rng, rc.model.n_params, 2.0);
        let mut ws = Workspace::default();
        for (i, inst) in rc.instances.iter().enumerate() {
            let phi = tables(&rc.model, &theta, inst);
            let all = rc.all_scores(i, &theta);
            let gold = inst.gold.as_ref().unwrap();
            let want = rc.score_by_definition(i, &theta, gold) - lse(all.iter().map(|x| x.1));
            let got = ExactMl.evaluate(inst, &phi, None, &mut ws);
            assert_close(got, want, 1e-10, "log p(y*|x)");
        }
    }
}

#[test]
fn scaled_forward_backward_falls_back_to_log_space_on_extreme_weights() {
    let mut rng = StdRng::seed_from_u64(3);
    let rc = random_chains(&mut rng, 20, 5, 4);
    let theta = random_theta(&mut rng, rc.model.n_params, 400.0);
    for (i, inst) in rc.instances.iter().enumerate() {
        let phi = tables(&rc.model, &theta, inst);
        let all = rc.all_scores(i, &theta);
        let log_z = lse(all.iter().map(|x| x.1));
        let mut w = ChainWork::default();
        let fb = w.forward_backward(inst, inst.chain.as_ref().unwrap(), &phi);
        assert_close(fb, log_z, 1e-10, "log Z with extreme weights");
        assert!(fb.is_finite());
    }
}

fn check_gradient(
    model: &Model,
    insts: &[piecewise_lab::graph::Instance],
    theta: &[f64],
    prior: Prior,
) {
    let est = ExactMl;
    let obj = DatasetObjective::new(model, insts, &est, prior, 2).unwrap();
    let mut g = vec![0.0; theta.len()];
    let e = obj.evaluate(theta, Some(&mut g));
    let e2 = obj.evaluate(theta, None);
    assert_close(
        e.objective,
        e2.objective,
        1e-12,
        "value with and without gradient",
    );
    let h = 1e-5;
    for j in 0..theta.len() {
        let mut tp = theta.to_vec();
        tp[j] += h;
        let mut tm = theta.to_vec();
        tm[j] -= h;
        let fd =
            (obj.evaluate(&tp, None).objective - obj.evaluate(&tm, None).objective) / (2.0 * h);
        assert!(
            (fd - g[j]).abs() <= 1e-6 * (1.0 + fd.abs()),
            "parameter {j}: finite difference {fd} vs gradient {}",
            g[j]
        );
    }
}

#[test]
fn exact_ml_gradient_matches_finite_differences() {
    let mut rng = StdRng::seed_from_u64(5);
    for l in 1..=4 {
        let rc = random_chains(&mut rng, 12, 5, l);
        let theta = random_theta(&mut rng, rc.model.n_params, 1.5);
        check_gradient(
            &rc.model,
            &rc.instances,
            &theta,
            Prior { sigma2: Some(0.7) },
        );
        check_gradient(&rc.model, &rc.instances, &theta, Prior { sigma2: None });
    }
}

/// Tied entries (a Potts table: one column for "equal", one for "different"), a sparse layout and
/// a graph that is not a chain (a triangle, so exact ML enumerates).
#[test]
fn tied_tables_sparse_layout_and_loopy_graph_gradients() {
    let mut rng = StdRng::seed_from_u64(9);
    let l = 3;
    let mut model = Model::default();
    model
        .add_template(
            "state",
            vec![l],
            vec![0, 1, 2],
            3,
            Layout::Sparse {
                row_ptr: vec![0, 2, 3, 5],
                cols: vec![0, 2, 1, 0, 1],
            },
        )
        .unwrap();
    let potts: Vec<u32> = (0..l * l)
        .map(|e| if e / l == e % l { 0 } else { 1 })
        .collect();
    model
        .add_template("potts", vec![l, l], potts, 2, Layout::Dense)
        .unwrap();
    let mut insts = vec![];
    for _ in 0..6 {
        let mut b = InstanceBuilder::new(&model);
        for _ in 0..3 {
            b.add_var(l);
        }
        for v in 0..3u32 {
            b.add_factor(0, &[v], &random_obs(&mut rng, 3, false))
                .unwrap();
        }
        for (a, c) in [(0u32, 1u32), (1, 2), (0, 2)] {
            b.add_factor(1, &[a, c], &random_obs(&mut rng, 2, true))
                .unwrap();
        }
        b.set_gold(
            (0..3)
                .map(|_| rand::Rng::random_range(&mut rng, 0..l as u32))
                .collect(),
        )
        .unwrap();
        let inst = b.finish();
        assert!(inst.chain.is_none(), "a triangle is not a chain");
        insts.push(inst);
    }
    let theta = random_theta(&mut rng, model.n_params, 1.0);
    assert_eq!(model.n_params, 5 + 4);
    check_gradient(&model, &insts, &theta, Prior { sigma2: Some(2.0) });
    // Value by definition: tables from the tied map equal the sum of the tied weights.
    let inst = &insts[0];
    let phi = tables(&model, &theta, inst);
    let e = enumerate(inst, &phi).unwrap();
    let mut ws = Workspace::default();
    let gold = inst.gold.as_ref().unwrap();
    let v = ExactMl.evaluate(inst, &phi, None, &mut ws);
    assert_close(
        v,
        inst.score(&phi, gold) - e.log_z,
        1e-12,
        "enumerated ML value",
    );
}
