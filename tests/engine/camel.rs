//! CAMEL (002) against its definitions: the dual's gradient in (w, δ) against finite
//! differences with a nonzero linearisation g; with δ and g off it is piecewise (000 eq. 8)
//! exactly; on trees the Bethe approximation is exact, so CCCP-CAMEL's fixed point is exact
//! conditional ML, and its cluster beliefs agree on every sepset; on a loopy grid it is Bethe
//! ML, the weights LBP training finds; and δ minimised out by coordinate sweeps is the dual's
//! minimum over δ, with the envelope gradient in w.

use crate::common;

use common::{random_chains, random_chains_with, random_theta};
use piecewise_lab::estimators::camel_dual::{
    fit, CamelObjective, CamelOptions, CamelResult, CamelVariant, ProfiledCamel,
};
use piecewise_lab::estimators::objective::DatasetObjective;
use piecewise_lab::estimators::EstimatorSpec;
use piecewise_lab::graph::{Instance, Model};
use piecewise_lab::optim::Objective;
use piecewise_lab::optim::{minimize, LbfgsSpec, Prior};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::sync::atomic::AtomicBool;

fn tight() -> LbfgsSpec {
    LbfgsSpec {
        max_iter: 3000,
        delta: 1e-14,
        epsilon: 1e-11,
        ..LbfgsSpec::default()
    }
}

/// CCCP run until g stops moving, with δ swept to 1e-12.
fn converged() -> CamelOptions {
    CamelOptions {
        tol: 1e-9,
        max_outer: 2000,
        sweep_tol: 1e-12,
        ..CamelOptions::default()
    }
}

/// The weights of estimator `name` (exact `ml`, loopy `bp`), fitted tightly from zero.
fn reference_fit(name: &str, model: &Model, instances: &[Instance], prior: Prior) -> Vec<f64> {
    let est = EstimatorSpec::from_name(name)
        .unwrap()
        .build(model)
        .unwrap();
    let obj = DatasetObjective::new(model, instances, est.as_ref(), prior, 1).unwrap();
    let cancel = AtomicBool::new(false);
    minimize(
        &obj,
        vec![0.0; model.n_params],
        &tight(),
        &cancel,
        &mut |_, _| {},
    )
    .unwrap()
    .theta
}

/// CAMEL `variant` fitted from zero with tight inner fits.
fn camel_fit(
    model: &Model,
    instances: &[Instance],
    prior: Prior,
    variant: CamelVariant,
    opts: CamelOptions,
) -> CamelResult {
    camel_fit_from(
        model,
        instances,
        prior,
        variant,
        opts,
        vec![0.0; model.n_params],
    )
}

/// CAMEL `variant` fitted from the weights `w0` with tight inner fits.
fn camel_fit_from(
    model: &Model,
    instances: &[Instance],
    prior: Prior,
    variant: CamelVariant,
    opts: CamelOptions,
    w0: Vec<f64>,
) -> CamelResult {
    let mut obj = CamelObjective::new(model, instances, prior);
    let cancel = AtomicBool::new(false);
    fit(
        &mut obj,
        variant,
        w0,
        &opts,
        &tight(),
        &cancel,
        &mut |_, _, _, _| {},
    )
    .unwrap()
}

/// ‖a − b‖ / ‖b‖.
fn rel_dist(a: &[f64], b: &[f64]) -> f64 {
    let d: f64 = a.iter().zip(b).map(|(x, y)| (x - y).powi(2)).sum();
    (d / b.iter().map(|y| y * y).sum::<f64>()).sqrt()
}

/// `n` copies of a 3×3 grid with `l` states, one table per factor, random gold labels.
fn grid_data(
    rng: &mut StdRng,
    n: usize,
    l: u32,
) -> (
    piecewise_lab::graph::Model,
    Vec<piecewise_lab::graph::Instance>,
) {
    let (card, scopes) = common::grid_scopes(3, 3, l);
    let (model, inst) = common::factor_graph(&card, &scopes);
    let instances = (0..n)
        .map(|_| {
            let mut i = inst.clone();
            i.gold = Some((0..card.len()).map(|_| rng.random_range(0..l)).collect());
            i
        })
        .collect();
    (model, instances)
}

#[test]
fn gradient_in_w_and_delta_matches_finite_differences() {
    let mut rng = StdRng::seed_from_u64(3);
    for edge in [false, true] {
        let rc = random_chains_with(&mut rng, 4, 5, 3, edge);
        let mut obj = CamelObjective::new(&rc.model, &rc.instances, Prior { sigma2: Some(2.0) });
        for g in obj.g.iter_mut() {
            g.iter_mut().for_each(|x| *x = rng.random_range(-1.0..1.0));
        }
        let n = obj.n_params();
        assert!(n > rc.model.n_params, "δ exists");
        let x: Vec<f64> = (0..n).map(|_| rng.random_range(-1.0..1.0)).collect();
        let mut grad = vec![0.0; n];
        let e = obj.evaluate(&x, Some(&mut grad));
        assert!(e.objective.is_finite());
        // The violation read off the δ gradient is the one a pass over the beliefs finds.
        assert!((obj.violation_at(&x) - obj.max_violation(&x)).abs() < 1e-12);
        assert!(obj.max_violation(&x) > 1e-3);
        let h = 1e-6;
        for j in 0..n {
            let (mut p, mut m) = (x.clone(), x.clone());
            p[j] += h;
            m[j] -= h;
            let fd =
                (obj.evaluate(&p, None).objective - obj.evaluate(&m, None).objective) / (2.0 * h);
            assert!(
                (fd - grad[j]).abs() < 1e-6 * (1.0 + fd.abs()),
                "edge={edge} x[{j}] (n_w = {}): FD {fd} vs {}",
                rc.model.n_params,
                grad[j]
            );
        }
    }
}

#[test]
fn without_delta_and_g_it_is_piecewise() {
    let mut rng = StdRng::seed_from_u64(5);
    for edge in [false, true] {
        let rc = random_chains_with(&mut rng, 6, 6, 3, edge);
        let prior = Prior { sigma2: Some(10.0) };
        let mut camel = CamelObjective::new(&rc.model, &rc.instances, prior);
        camel.free_delta = false;
        let pw = EstimatorSpec::from_name("pw")
            .unwrap()
            .build(&rc.model)
            .unwrap();
        let pw = DatasetObjective::new(&rc.model, &rc.instances, pw.as_ref(), prior, 1).unwrap();
        let w = random_theta(&mut rng, rc.model.n_params, 1.0);
        let (mut g1, mut g2) = (vec![0.0; w.len()], vec![0.0; w.len()]);
        let a = camel.evaluate(&w, Some(&mut g1));
        let b = pw.evaluate(&w, Some(&mut g2));
        assert!(
            (a.objective - b.objective).abs() < 1e-10,
            "{} vs {}",
            a.objective,
            b.objective
        );
        for (x, y) in g1.iter().zip(&g2) {
            assert!((x - y).abs() < 1e-10, "{x} vs {y}");
        }
    }
}

#[test]
fn on_trees_cccp_camel_converges_to_exact_ml() {
    let mut rng = StdRng::seed_from_u64(11);
    let rc = random_chains(&mut rng, 12, 5, 3);
    let prior = Prior { sigma2: Some(5.0) };
    let w_ml = reference_fit("ml", &rc.model, &rc.instances, prior);
    for variant in [CamelVariant::Cccp, CamelVariant::CccpEmpirical] {
        let r = camel_fit(&rc.model, &rc.instances, prior, variant, converged());
        let err = rel_dist(&r.x[..rc.model.n_params], &w_ml);
        let last = r.loops.last().unwrap();
        println!(
            "{variant:?}: {} fits, relative error {err:.2e}, violation {:.2e}",
            r.loops.len(),
            last.violation
        );
        assert!(err < 1e-5, "{variant:?}: relative error {err}");
        assert!(
            last.violation < 1e-5,
            "{variant:?}: violation {}",
            last.violation
        );
    }
    // camel0 (g = 0) is consistent but not ML: the entropy is the clusters' alone.
    let r = camel_fit(
        &rc.model,
        &rc.instances,
        prior,
        CamelVariant::Camel0,
        CamelOptions::default(),
    );
    assert_eq!(r.loops.len(), 2);
    assert!(r.loops[1].violation < 1e-4 && r.loops[0].violation > 1e-3);
}

/// δ minimised out by block coordinate descent (`ProfiledCamel`) on a loopy 3×3 grid: the
/// sweeps reach the dual's minimum over δ (δ gradient zero, no perturbation lower), and the
/// gradient in w matches finite differences of the profiled value (the envelope theorem).
#[test]
fn profiled_dual_minimises_delta_and_has_the_envelope_gradient() {
    let mut rng = StdRng::seed_from_u64(17);
    let (model, instances) = grid_data(&mut rng, 3, 3);
    let mut obj = CamelObjective::new(&model, &instances, Prior { sigma2: Some(3.0) });
    for g in obj.g.iter_mut() {
        g.iter_mut().for_each(|x| *x = rng.random_range(-0.5..0.5));
    }
    let n_w = model.n_params;
    let w: Vec<f64> = (0..n_w).map(|_| rng.random_range(-1.0..1.0)).collect();
    let profiled = ProfiledCamel::new(&obj, vec![0.0; obj.n_delta()], 1e-12, 100_000);
    let mut grad = vec![0.0; n_w];
    let e = profiled.evaluate(&w, Some(&mut grad));
    assert!(profiled.violation_at(&w) < 1e-11, "sweeps converged");
    let delta = ProfiledCamel::into_delta(profiled);
    let x: Vec<f64> = w.iter().chain(&delta).copied().collect();
    assert!(obj.max_violation(&x) < 1e-11);
    let joint = obj.evaluate(&x, None).objective;
    assert!(
        (joint - e.objective).abs() < 1e-9,
        "{joint} vs {}",
        e.objective
    );
    for _ in 0..50 {
        let y: Vec<f64> = x
            .iter()
            .enumerate()
            .map(|(j, v)| {
                v + if j >= n_w {
                    rng.random_range(-0.3..0.3)
                } else {
                    0.0
                }
            })
            .collect();
        assert!(obj.evaluate(&y, None).objective > joint - 1e-12);
    }
    let profiled = ProfiledCamel::new(&obj, delta, 1e-12, 100_000);
    let h = 1e-5;
    for j in 0..n_w {
        let (mut p, mut m) = (w.clone(), w.clone());
        p[j] += h;
        m[j] -= h;
        let fd = (profiled.evaluate(&p, None).objective - profiled.evaluate(&m, None).objective)
            / (2.0 * h);
        assert!(
            (fd - grad[j]).abs() < 1e-6 * (1.0 + fd.abs()),
            "w[{j}]: FD {fd} vs {}",
            grad[j]
        );
    }
}

/// On a loopy graph the Bethe approximation is not exact, but CCCP-CAMEL's fixed points are
/// Bethe ML's: consistent beliefs that match the moments are a BP fixed point whose expected
/// features equal the empirical ones (002 §2–3), i.e. where LBP training's gradient vanishes.
/// On a weakly coupled 3×3 grid, where BP has one fixed point, both reach the same weights.
#[test]
fn on_a_loopy_grid_cccp_camel_reaches_lbp_trainings_weights() {
    let mut rng = StdRng::seed_from_u64(23);
    let (model, instances) = grid_data(&mut rng, 6, 2);
    let prior = Prior { sigma2: Some(0.5) };
    let w_bp = reference_fit("bp", &model, &instances, prior);
    let r = camel_fit(&model, &instances, prior, CamelVariant::Cccp, converged());
    let err = rel_dist(&r.x[..model.n_params], &w_bp);
    println!("{} fits, ‖w − w_bp‖/‖w_bp‖ = {err:.2e}", r.loops.len());
    assert!(
        err < 1e-4,
        "relative distance to LBP training's weights {err}"
    );
    // camel0 (g = 0) is a different, convex approximation: not the same weights.
    let r0 = camel_fit(
        &model,
        &instances,
        prior,
        CamelVariant::Camel0,
        CamelOptions::default(),
    );
    let d0 = rel_dist(&r0.x[..model.n_params], &w_bp);
    assert!(d0 > 1e-2, "camel0 differs from Bethe ML: {d0}");
}

/// CAMEL's first fit is piecewise training, so starting it from the trained piecewise weights
/// (what `002-table1` does to save that fit) ends where the fit from zero ends.
#[test]
fn started_from_piecewise_it_ends_where_it_ends_from_zero() {
    let mut rng = StdRng::seed_from_u64(11);
    let rc = random_chains_with(&mut rng, 8, 6, 3, true);
    let prior = Prior { sigma2: Some(10.0) };
    let pw = reference_fit("pw", &rc.model, &rc.instances, prior);
    let opts = CamelOptions {
        sweep_tol: 1e-12,
        ..CamelOptions::default()
    };
    for variant in [
        CamelVariant::Camel0,
        CamelVariant::Cccp,
        CamelVariant::CccpEmpirical,
    ] {
        let from = |w0| camel_fit_from(&rc.model, &rc.instances, prior, variant, opts, w0);
        let (zero, warm) = (from(vec![0.0; rc.model.n_params]), from(pw.clone()));
        assert!(
            warm.loops[0].iterations < zero.loops[0].iterations,
            "{variant:?}"
        );
        assert_eq!(warm.loops.len(), zero.loops.len(), "{variant:?}");
        let d = rel_dist(&warm.x, &zero.x);
        assert!(d < 1e-5, "{variant:?}: {d}");
    }
}

/// A pass sums its instances in fixed ranges, one per thread of the run's pool, and the ranges
/// in order: the same bits on every evaluation with the same threads (rayon's fold split by
/// work-stealing, so two runs of one spec differed in the last bits), and the same value to
/// rounding on one thread.
#[test]
fn profiled_passes_are_the_same_bits_on_the_same_threads() {
    let mut rng = StdRng::seed_from_u64(29);
    let (model, instances) = grid_data(&mut rng, 40, 3);
    let w: Vec<f64> = (0..model.n_params)
        .map(|_| rng.random_range(-1.0..1.0))
        .collect();
    let pools: Vec<rayon::ThreadPool> = [1, 2]
        .iter()
        .map(|&n| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .build()
                .unwrap()
        })
        .collect();
    let evaluate = |pool: &rayon::ThreadPool| {
        let obj = CamelObjective::new(&model, &instances, Prior { sigma2: Some(3.0) })
            .on_pool(Some(pool));
        let profiled = ProfiledCamel::new(&obj, vec![0.0; obj.n_delta()], 1e-10, 10_000);
        assert!(std::ptr::eq(profiled.pool().unwrap(), pool));
        let mut grad = vec![0.0; model.n_params];
        let e = profiled.evaluate(&w, Some(&mut grad));
        let delta = profiled.into_delta();
        (e.objective, grad, delta)
    };
    let two = evaluate(&pools[1]);
    for _ in 0..4 {
        let again = evaluate(&pools[1]);
        assert_eq!(again.0.to_bits(), two.0.to_bits());
        assert!(again
            .1
            .iter()
            .zip(&two.1)
            .all(|(a, b)| a.to_bits() == b.to_bits()));
        assert!(again
            .2
            .iter()
            .zip(&two.2)
            .all(|(a, b)| a.to_bits() == b.to_bits()));
    }
    let one = evaluate(&pools[0]);
    assert!(
        (one.0 - two.0).abs() <= 1e-12 * two.0.abs(),
        "{} vs {}",
        one.0,
        two.0
    );
    assert!(rel_dist(&one.1, &two.1) < 1e-12);
}
