//! Estimators that stand on inference beyond chains: exact `ml` on forests (BP) and small loopy
//! graphs (enumeration) against brute force, and the `bp` (Bethe) estimator's gradient against
//! finite differences of its own objective with BP run to convergence at each point.

use crate::common;

use common::{complete_scopes as complete, factor_graph, grid_scopes as grid};
use piecewise_lab::estimators::objective::DatasetObjective;
use piecewise_lab::estimators::{EstimatorSpec, Workspace};
use piecewise_lab::graph::{Instance, Model};
use piecewise_lab::inference::{enumerate, BpOptions, Schedule};
use piecewise_lab::optim::Prior;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn with_gold(model: &Model, inst: Instance, rng: &mut StdRng) -> Instance {
    let _ = model;
    let mut inst = inst;
    inst.gold = Some(inst.card.iter().map(|&c| rng.random_range(0..c)).collect());
    inst
}

/// Value and θ-gradient of an estimator through the training objective (no prior): the same
/// path a run takes (terms planned once, subset tables, scatter).
fn objective(
    model: &Model,
    insts: &[Instance],
    spec: &EstimatorSpec,
    theta: &[f64],
) -> (f64, Vec<f64>, u64) {
    let est = spec.build(model).unwrap();
    let obj = DatasetObjective::new(model, insts, est.as_ref(), Prior { sigma2: None }, 1).unwrap();
    let mut g = vec![0.0; theta.len()];
    let e = obj.evaluate(theta, Some(&mut g));
    (e.value, g.iter().map(|x| -x).collect(), e.unconverged)
}

#[test]
fn exact_ml_on_trees_and_small_loopy_graphs_equals_brute_force() {
    let mut rng = StdRng::seed_from_u64(21);
    // A star (a forest that is not a chain: BP) and a 3×3 grid (cycles: enumeration).
    let star = (
        vec![3, 2, 4, 3, 2],
        vec![
            vec![0],
            vec![0, 1],
            vec![2, 0],
            vec![0, 3],
            vec![4, 0],
            vec![3],
        ],
    );
    for (name, (card, scopes)) in [("star", star), ("3x3 grid", grid(3, 3, 2))] {
        let (model, inst) = factor_graph(&card, &scopes);
        assert!(inst.chain.is_none());
        let inst = with_gold(&model, inst, &mut rng);
        let theta: Vec<f64> = (0..model.n_params)
            .map(|_| rng.random_range(-1.5..1.5))
            .collect();
        let insts = vec![inst];
        let (value, grad, _) = objective(&model, &insts, &EstimatorSpec::Ml, &theta);
        let inst = &insts[0];
        let mut phi = vec![0.0; inst.table_len];
        model.build_tables(&theta, inst, &mut phi, &mut vec![]);
        let ex = enumerate(inst, &phi).unwrap();
        let gold = inst.gold.as_ref().unwrap();
        let want = inst.score(&phi, gold) - ex.log_z;
        assert!((value - want).abs() < 1e-9, "{name}: {value} vs {want}");
        // ∂/∂φ = gold indicator − marginals; each factor has its own feature, so θ = tables.
        let mut dphi = ex.table_marginals.iter().map(|m| -m).collect::<Vec<_>>();
        inst.add_indicator(gold, 1.0, &mut dphi);
        let mut want_g = vec![0.0; model.n_params];
        model.scatter(inst, &dphi, 1.0, &mut want_g, &mut vec![]);
        for (a, b) in grad.iter().zip(&want_g) {
            assert!((a - b).abs() < 1e-9, "{name}: gradient {a} vs {b}");
        }
    }
}

#[test]
fn exact_ml_on_a_large_loopy_graph_is_a_clear_error() {
    let (card, scopes) = grid(6, 6, 5);
    let (model, inst) = factor_graph(&card, &scopes);
    let mut rng = StdRng::seed_from_u64(1);
    let insts = vec![
        with_gold(&model, inst.clone(), &mut rng),
        with_gold(&model, inst, &mut rng),
    ];
    let est = EstimatorSpec::Ml.build(&model).unwrap();
    let err = DatasetObjective::new(&model, &insts, est.as_ref(), Prior { sigma2: None }, 1)
        .err()
        .expect("exact ML must refuse")
        .to_string();
    assert!(
        err.contains("sequence 1") && err.contains("bp estimator"),
        "{err}"
    );
    // The bp estimator takes it.
    let est = EstimatorSpec::from_name("bp")
        .unwrap()
        .build(&model)
        .unwrap();
    assert!(DatasetObjective::new(&model, &insts, est.as_ref(), Prior { sigma2: None }, 1).is_ok());
}

#[test]
fn bp_gradient_matches_finite_differences_on_loopy_graphs() {
    let mut rng = StdRng::seed_from_u64(8);
    for schedule in [Schedule::Sequential, Schedule::Parallel, Schedule::Residual] {
        let spec = EstimatorSpec::from_name("bp").unwrap().with_bp(BpOptions {
            schedule,
            damping: if schedule == Schedule::Parallel {
                0.3
            } else {
                0.0
            },
            tol: 1e-13,
            max_sweeps: 10_000,
        });
        for (name, (card, scopes)) in [
            ("3x3 grid", grid(3, 3, 3)),
            ("5-node Boltzmann machine", complete(5)),
            ("triangle", complete(3)),
        ] {
            let (model, inst) = factor_graph(&card, &scopes);
            let insts = vec![with_gold(&model, inst, &mut rng)];
            let theta: Vec<f64> = (0..model.n_params)
                .map(|_| rng.random_range(-0.6..0.6))
                .collect();
            let (value, grad, unconverged) = objective(&model, &insts, &spec, &theta);
            assert_eq!(unconverged, 0, "{name}");
            assert!(value.is_finite());
            let h = 1e-5;
            let mut worst: f64 = 0.0;
            for j in 0..model.n_params {
                let mut tp = theta.clone();
                tp[j] += h;
                let mut tm = theta.clone();
                tm[j] -= h;
                let fd = (objective(&model, &insts, &spec, &tp).0
                    - objective(&model, &insts, &spec, &tm).0)
                    / (2.0 * h);
                worst = worst.max((fd - grad[j]).abs());
            }
            assert!(
                worst < 1e-6,
                "{schedule:?} {name}: |FD − gradient| up to {worst:.2e}"
            );
            // Bethe is not exact on these graphs, but close for weak potentials.
            let mut phi = vec![0.0; insts[0].table_len];
            model.build_tables(&theta, &insts[0], &mut phi, &mut vec![]);
            let ex = enumerate(&insts[0], &phi).unwrap();
            let exact = insts[0].score(&phi, insts[0].gold.as_ref().unwrap()) - ex.log_z;
            assert!(
                value != exact && (value - exact).abs() < 0.05,
                "{name}: {value} vs {exact}"
            );
        }
    }
}

#[test]
fn bp_messages_warm_start_across_evaluations_and_nonconvergence_is_counted() {
    let (card, scopes) = complete(6);
    let (model, inst) = factor_graph(&card, &scopes);
    let mut rng = StdRng::seed_from_u64(4);
    let insts: Vec<Instance> = (0..4)
        .map(|_| with_gold(&model, inst.clone(), &mut rng))
        .collect();
    let theta: Vec<f64> = (0..model.n_params)
        .map(|_| rng.random_range(-0.5..0.5))
        .collect();
    let spec = EstimatorSpec::from_name("bp").unwrap();
    let est = spec.build(&model).unwrap();
    let obj =
        DatasetObjective::new(&model, &insts, est.as_ref(), Prior { sigma2: None }, 2).unwrap();
    let a = obj.evaluate(&theta, None);
    let b = obj.evaluate(&theta, None);
    assert!((a.value - b.value).abs() < 1e-9 && a.unconverged == 0);
    // Warm: the second call starts at the fixed point and does almost no work.
    assert!(b.ops * 3 < a.ops, "warm {} vs cold {}", b.ops, a.ops);
    // Strong frustrated couplings and two sweeps: every instance unconverged, value still finite.
    let strong: Vec<f64> = (0..model.n_params)
        .map(|_| rng.random_range(-4.0..4.0))
        .collect();
    let spec = spec.with_bp(BpOptions {
        schedule: Schedule::Parallel,
        max_sweeps: 2,
        ..BpOptions::default()
    });
    let est = spec.build(&model).unwrap();
    let obj =
        DatasetObjective::new(&model, &insts, est.as_ref(), Prior { sigma2: None }, 2).unwrap();
    let e = obj.evaluate(&strong, None);
    assert_eq!(e.unconverged, 4);
    assert!(e.value.is_finite());
    // The same through Estimator::evaluate (cold each call).
    let mut ws = Workspace::default();
    let mut phi = vec![0.0; insts[0].table_len];
    model.build_tables(&strong, &insts[0], &mut phi, &mut vec![]);
    assert!(est.evaluate(&insts[0], &phi, None, &mut ws).is_finite());
}
