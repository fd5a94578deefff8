//! The MEMM and piecewise training with "none of the above" (001 eq. 1 and 6, 003 §3) against
//! brute force from the papers' definitions on random chains in both factorisations; their
//! gradients against finite differences; local and scaled global decoding against enumeration.

use crate::common;
use common::*;
use piecewise_lab::estimators::memm::{choose_by_marginals, NotaChoice};
use piecewise_lab::estimators::objective::DatasetObjective;
use piecewise_lab::estimators::{Estimator, Memm, NotaPt, NotaSelection, Workspace};
use piecewise_lab::graph::{Instance, InstanceBuilder, Model};
use piecewise_lab::inference::transitions::{scaled_log_likelihood, Transitions};
use piecewise_lab::optim::Prior;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::sync::Arc;

fn tables(model: &Model, theta: &[f64], inst: &Instance) -> Vec<f64> {
    let mut phi = vec![0.0; inst.table_len];
    model.build_tables(theta, inst, &mut phi, &mut Vec::new());
    phi
}

/// φ(y, y′, x_t) in log space by definition: the state score of y at t plus the transition
/// score of (y′, y); at t = 0 the state score alone (the start state has no transition).
fn m(rc: &RandomChain, i: usize, theta: &[f64], t: usize, yp: u32, y: u32) -> f64 {
    let s = rc.state_score(i, theta, t, y);
    if t == 0 {
        s
    } else {
        s + rc.trans_score(i, theta, t, yp, y)
    }
}

/// log(1 + Σ_y φ(y, y′, x_t)), or log Σ_y φ without NOTA.
fn log_norm(rc: &RandomChain, i: usize, theta: &[f64], t: usize, yp: u32, nota: bool) -> f64 {
    let mut xs: Vec<f64> = (0..rc.l as u32)
        .map(|y| m(rc, i, theta, t, yp, y))
        .collect();
    if nota {
        xs.push(0.0);
    }
    lse(xs.into_iter())
}

/// 001 eq. 1 summed: Σ_t log p̃(y*_t | y*_{t−1}).
fn memm_reference(rc: &RandomChain, i: usize, theta: &[f64]) -> f64 {
    let g = rc.instances[i].gold.clone().unwrap();
    (0..g.len())
        .map(|t| {
            let yp = if t == 0 { 0 } else { g[t - 1] };
            m(rc, i, theta, t, yp, g[t]) - log_norm(rc, i, theta, t, yp, false)
        })
        .sum()
}

/// 001 eq. 6 for one item: the gold terms with 1 in every normaliser, and −log(1 + Σ_y φ) for
/// every listed (t, y′).
fn nota_reference(rc: &RandomChain, i: usize, theta: &[f64], nota: &[(usize, u32)]) -> f64 {
    weighted_nota_reference(rc, i, theta, nota, 1.0)
}

/// Eq. 6 with every NOTA term times `w`.
fn weighted_nota_reference(
    rc: &RandomChain,
    i: usize,
    theta: &[f64],
    nota: &[(usize, u32)],
    w: f64,
) -> f64 {
    let g = rc.instances[i].gold.clone().unwrap();
    let gold: f64 = (0..g.len())
        .map(|t| {
            let yp = if t == 0 { 0 } else { g[t - 1] };
            m(rc, i, theta, t, yp, g[t]) - log_norm(rc, i, theta, t, yp, true)
        })
        .sum();
    gold - w * nota
        .iter()
        .map(|&(t, yp)| log_norm(rc, i, theta, t, yp, true))
        .sum::<f64>()
}

fn value(est: &dyn Estimator, model: &Model, theta: &[f64], inst: &Instance) -> f64 {
    est.check(inst).unwrap();
    est.evaluate(
        inst,
        &tables(model, theta, inst),
        None,
        &mut Workspace::default(),
    )
}

fn listed(est: &NotaPt, inst: &Instance) -> Vec<(usize, u32)> {
    let mut v = vec![];
    est.for_each_nota(inst, |t, y| v.push((t, y)));
    v
}

/// A random choice of NOTA terms (t ≥ 1, y′ ≠ y*_{t−1}) per item, as error-driven selection
/// would hand them over.
fn random_choice(rng: &mut StdRng, insts: &[Instance], l: usize) -> NotaChoice {
    insts
        .iter()
        .map(|inst| {
            let g = inst.gold.as_ref().unwrap();
            let mut c = vec![];
            for t in 1..g.len() {
                for y in 0..l as u32 {
                    if y != g[t - 1] && rng.random::<f64>() < 0.4 {
                        c.push((t as u32, y));
                    }
                }
            }
            c
        })
        .collect()
}

fn selections() -> Vec<NotaSelection> {
    vec![
        NotaSelection::Exhaustive,
        NotaSelection::Sampled {
            fraction: 0.5,
            seed: 3,
        },
        NotaSelection::error_driven(),
    ]
}

/// Random chains whose every factor sees the same observations, so all edge (or transition)
/// factors share one table: the cached-line path of the term evaluator.
fn shared_chains(rng: &mut StdRng, count: usize, l: usize, edge: bool) -> RandomChain {
    let mut rc = random_chains_with(rng, count, 5, l, edge);
    let so = vec![(1u32, 1.0)];
    let to = vec![(0u32, 1.0)];
    let mut insts = vec![];
    for (i, inst) in rc.instances.iter().enumerate() {
        let n = inst.n_vars();
        let mut b = InstanceBuilder::new(&rc.model);
        for _ in 0..n {
            b.add_var(l);
        }
        for t in 0..n {
            if t == 0 {
                b.add_factor(0, &[0], &so).unwrap();
            } else if edge {
                b.add_factor_parts(&[t as u32 - 1, t as u32], &[(2, &so), (1, &to)])
                    .unwrap();
            } else {
                b.add_factor(0, &[t as u32], &so).unwrap();
                b.add_factor(1, &[t as u32 - 1, t as u32], &to).unwrap();
            }
        }
        b.set_gold(inst.gold.clone().unwrap()).unwrap();
        let mut new = b.finish();
        new.id = i as u64;
        insts.push(new);
        rc.state_obs[i] = vec![so.clone(); n];
        rc.trans_obs[i] = std::iter::once(vec![])
            .chain(std::iter::repeat_n(to.clone(), n.saturating_sub(1)))
            .collect();
    }
    rc.instances = insts;
    rc
}

fn with_ids(mut rc: RandomChain) -> RandomChain {
    for (i, inst) in rc.instances.iter_mut().enumerate() {
        inst.id = i as u64;
    }
    rc
}

#[test]
fn memm_and_nota_equal_their_definitions() {
    let mut rng = StdRng::seed_from_u64(31);
    for edge in [false, true] {
        for l in 1..=4 {
            for shared in [false, true] {
                let rc = if shared {
                    shared_chains(&mut rng, 10, l, edge)
                } else {
                    with_ids(random_chains_with(&mut rng, 10, 5, l, edge))
                };
                let theta = random_theta(&mut rng, rc.model.n_params, 1.5);
                let choice = Arc::new(random_choice(&mut rng, &rc.instances, l));
                for (i, inst) in rc.instances.iter().enumerate() {
                    let what = format!("edge={edge} l={l} shared={shared} item {i}");
                    assert_close(
                        value(&Memm, &rc.model, &theta, inst),
                        memm_reference(&rc, i, &theta),
                        1e-10,
                        &format!("memm {what}"),
                    );
                    for sel in selections() {
                        let mut est = NotaPt::new(sel.clone(), 1.0);
                        if matches!(sel, NotaSelection::ErrorDriven { .. }) {
                            // Before any choice: no NOTA terms, only the 1 in each normaliser.
                            assert_close(
                                value(&est, &rc.model, &theta, inst),
                                nota_reference(&rc, i, &theta, &[]),
                                1e-10,
                                &format!("nota before selection {what}"),
                            );
                            est.chosen = Some(choice.clone());
                        }
                        let list = listed(&est, inst);
                        let g = inst.gold.as_ref().unwrap();
                        let expected: Vec<(usize, u32)> = match sel {
                            NotaSelection::Exhaustive => (1..g.len())
                                .flat_map(|t| {
                                    (0..l as u32)
                                        .filter(move |&y| y != g[t - 1])
                                        .map(move |y| (t, y))
                                })
                                .collect(),
                            NotaSelection::Sampled { .. } => {
                                assert!(list.iter().all(|&(t, y)| t >= 1 && y != g[t - 1]));
                                list.clone()
                            }
                            NotaSelection::ErrorDriven { .. } => {
                                choice[i].iter().map(|&(t, y)| (t as usize, y)).collect()
                            }
                        };
                        assert_eq!(list, expected, "{sel:?} {what}");
                        assert_close(
                            value(&est, &rc.model, &theta, inst),
                            nota_reference(&rc, i, &theta, &expected),
                            1e-10,
                            &format!("nota {sel:?} {what}"),
                        );
                        for w in [0.0, 0.37, 2.5] {
                            est.weight = w;
                            assert_close(
                                value(&est, &rc.model, &theta, inst),
                                weighted_nota_reference(&rc, i, &theta, &expected, w),
                                1e-10,
                                &format!("nota {sel:?} weight {w} {what}"),
                            );
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn sampled_selection_keeps_about_the_fraction_and_is_seeded() {
    let mut rng = StdRng::seed_from_u64(5);
    let rc = with_ids(random_chains_with(&mut rng, 200, 8, 5, true));
    let all = NotaPt::new(NotaSelection::Exhaustive, 1.0).count(&rc.instances) as f64;
    for fraction in [0.1, 0.5, 0.9] {
        let s = |seed| {
            NotaPt::new(NotaSelection::Sampled { fraction, seed }, 1.0).count(&rc.instances) as f64
        };
        let k = s(1);
        let sd = (all * fraction * (1.0 - fraction)).sqrt();
        assert!(
            (k - all * fraction).abs() < 5.0 * sd,
            "{k} of {all} at {fraction}"
        );
        assert_eq!(k, s(1), "same seed, same terms");
    }
    let pick = |seed| {
        let est = NotaPt::new(
            NotaSelection::Sampled {
                fraction: 0.5,
                seed,
            },
            1.0,
        );
        rc.instances
            .iter()
            .map(|i| listed(&est, i))
            .collect::<Vec<_>>()
    };
    assert_ne!(pick(1), pick(2), "another seed, other terms");
}

#[test]
fn memm_and_nota_gradients_match_finite_differences() {
    let mut rng = StdRng::seed_from_u64(8);
    for edge in [false, true] {
        for shared in [false, true] {
            let rc = if shared {
                shared_chains(&mut rng, 8, 3, edge)
            } else {
                with_ids(random_chains_with(&mut rng, 8, 4, 3, edge))
            };
            let theta = random_theta(&mut rng, rc.model.n_params, 1.0);
            let mut ests: Vec<(String, Box<dyn Estimator>)> = vec![("memm".into(), Box::new(Memm))];
            for sel in selections() {
                let mut e = NotaPt::new(sel.clone(), 1.0);
                if matches!(sel, NotaSelection::ErrorDriven { .. }) {
                    e.chosen = Some(Arc::new(random_choice(&mut rng, &rc.instances, 3)));
                }
                ests.push((format!("nota {sel:?}"), Box::new(e.clone())));
                e.weight = 0.37;
                ests.push((format!("nota {sel:?} weight 0.37"), Box::new(e.clone())));
                e.weight = 0.0;
                ests.push((format!("nota {sel:?} weight 0"), Box::new(e)));
            }
            for (name, est) in &ests {
                // The objective builds only the table entries its terms read: this also checks
                // that the entries of wrong source states are among them.
                let obj = DatasetObjective::new(
                    &rc.model,
                    &rc.instances,
                    est.as_ref(),
                    Prior { sigma2: Some(1.3) },
                    2,
                )
                .unwrap();
                let full: f64 = rc
                    .instances
                    .iter()
                    .map(|inst| value(est.as_ref(), &rc.model, &theta, inst))
                    .sum();
                let e = obj.evaluate(&theta, None);
                assert_close(e.value, full, 1e-10, &format!("{name}: subset tables"));
                assert_gradient_matches_fd(
                    &obj,
                    &theta,
                    1,
                    &format!("{name} edge={edge} shared={shared}"),
                );
            }
        }
    }
}

/// Every labelling of item i with `score(y)`; the best one.
fn brute_argmax(rc: &RandomChain, i: usize, score: impl Fn(&[u32]) -> f64) -> Vec<u32> {
    let n = rc.instances[i].n_vars();
    let mut best = (f64::NEG_INFINITY, vec![]);
    for code in 0..rc.l.pow(n as u32) {
        let mut y = vec![0u32; n];
        let mut c = code;
        for t in (0..n).rev() {
            y[t] = (c % rc.l) as u32;
            c /= rc.l;
        }
        let s = score(&y);
        if s > best.0 {
            best = (s, y);
        }
    }
    best.1
}

fn transitions(rc: &RandomChain, theta: &[f64], inst: &Instance) -> Transitions {
    let mut tr = Transitions::default();
    tr.fill(
        inst,
        inst.chain.as_ref().unwrap(),
        &tables(&rc.model, theta, inst),
    );
    tr
}

#[test]
fn local_and_scaled_decoding_equal_enumeration() {
    let mut rng = StdRng::seed_from_u64(12);
    for edge in [false, true] {
        let rc = random_chains_with(&mut rng, 30, 5, 3, edge);
        let theta = random_theta(&mut rng, rc.model.n_params, 2.0);
        let alpha: Vec<f64> = (0..=3).map(|_| rng.random_range(0.3..2.0)).collect();
        for (i, inst) in rc.instances.iter().enumerate() {
            let src = |t: usize, y: &[u32]| if t == 0 { 0 } else { y[t - 1] };
            // MEMM decoding: argmax Π_t p̃(y_t | y_{t−1}) (no NOTA).
            let local = |y: &[u32]| -> f64 {
                (0..y.len())
                    .map(|t| {
                        m(&rc, i, &theta, t, src(t, y), y[t])
                            - log_norm(&rc, i, &theta, t, src(t, y), false)
                    })
                    .sum()
            };
            let mut tr = transitions(&rc, &theta, inst);
            tr.normalise_rows();
            let mut got = vec![];
            tr.viterbi(&mut got);
            let want = brute_argmax(&rc, i, local);
            assert_eq!(got, want, "local decoding, edge={edge} item {i}");
            // Scaled global decoding: argmax Σ_t α_{y_{t−1}} φ(y_t, y_{t−1}).
            let scale = |t: usize, y: &[u32]| {
                if t == 0 {
                    alpha[3]
                } else {
                    alpha[y[t - 1] as usize]
                }
            };
            let scaled = |y: &[u32]| -> f64 {
                (0..y.len())
                    .map(|t| scale(t, y) * m(&rc, i, &theta, t, src(t, y), y[t]))
                    .sum()
            };
            let mut tr = transitions(&rc, &theta, inst);
            tr.scale(&alpha);
            tr.viterbi(&mut got);
            assert_eq!(got, brute_argmax(&rc, i, scaled), "scaled decoding {i}");
            // The MEMM's marginals: forward–backward over normalised rows.
            let mut tr = transitions(&rc, &theta, inst);
            tr.normalise_rows();
            let lz = tr.forward_backward();
            assert!(lz.abs() < 1e-12, "normalised rows have log Z = 0, got {lz}");
            let n = inst.n_vars();
            for t in 0..n {
                for y in 0..3u32 {
                    let mut p = vec![];
                    for code in 0..3usize.pow(n as u32) {
                        let mut yy = vec![0u32; n];
                        let mut c = code;
                        for s in (0..n).rev() {
                            yy[s] = (c % 3) as u32;
                            c /= 3;
                        }
                        if yy[t] == y {
                            p.push(local(&yy));
                        }
                    }
                    assert_close(
                        tr.node_marginal(t, y as usize),
                        lse(p.into_iter()).exp(),
                        1e-10,
                        "MEMM marginal",
                    );
                }
            }
        }
    }
}

#[test]
fn per_state_scaling_likelihood_and_gradient() {
    let mut rng = StdRng::seed_from_u64(17);
    let rc = random_chains_with(&mut rng, 20, 4, 3, true);
    let theta = random_theta(&mut rng, rc.model.n_params, 1.5);
    let alpha: Vec<f64> = (0..=3).map(|_| rng.random_range(0.3..2.0)).collect();
    for (i, inst) in rc.instances.iter().enumerate() {
        let tr = transitions(&rc, &theta, inst);
        let gold = inst.gold.clone().unwrap();
        let scaled = |a: &[f64], y: &[u32]| -> f64 {
            (0..y.len())
                .map(|t| {
                    let (s, yp) = if t == 0 {
                        (a[3], 0)
                    } else {
                        (a[y[t - 1] as usize], y[t - 1])
                    };
                    s * m(&rc, i, &theta, t, yp, y[t])
                })
                .sum()
        };
        let reference = |a: &[f64]| {
            let n = gold.len();
            let all = (0..3usize.pow(n as u32)).map(|code| {
                let mut y = vec![0u32; n];
                let mut c = code;
                for t in (0..n).rev() {
                    y[t] = (c % 3) as u32;
                    c /= 3;
                }
                scaled(a, &y)
            });
            scaled(a, &gold) - lse(all)
        };
        let mut work = Transitions::default();
        let mut g = vec![0.0; 4];
        let ll = scaled_log_likelihood(&tr, &mut work, &alpha, &gold, Some(&mut g));
        assert_close(ll, reference(&alpha), 1e-10, "scaled log-likelihood");
        let h = 1e-6;
        for j in 0..4 {
            let (mut ap, mut am) = (alpha.clone(), alpha.clone());
            ap[j] += h;
            am[j] -= h;
            let fd = (reference(&ap) - reference(&am)) / (2.0 * h);
            assert!(
                (fd - g[j]).abs() < 1e-6 * (1.0 + fd.abs()),
                "α_{j}: {fd} vs {}",
                g[j]
            );
        }
    }
}

#[test]
fn error_driven_choice_takes_wrong_states_above_the_threshold() {
    let mut rng = StdRng::seed_from_u64(2);
    let rc = with_ids(random_chains_with(&mut rng, 15, 5, 3, false));
    let theta = random_theta(&mut rng, rc.model.n_params, 1.0);
    let choice = choose_by_marginals(&rc.instances, 0.2, |inst, tr| {
        tr.fill(
            inst,
            inst.chain.as_ref().unwrap(),
            &tables(&rc.model, &theta, inst),
        );
        tr.forward_backward();
    });
    for (i, inst) in rc.instances.iter().enumerate() {
        let n = inst.n_vars();
        let g = inst.gold.as_ref().unwrap();
        let all = rc.all_scores(i, &theta);
        let z = lse(all.iter().map(|(_, s)| *s));
        let mut want = vec![];
        for t in 0..n.saturating_sub(1) {
            for y in 0..3u32 {
                let p = lse(all.iter().filter(|(yy, _)| yy[t] == y).map(|(_, s)| *s)) - z;
                if y != g[t] && p.exp() > 0.2 {
                    want.push((t as u32 + 1, y));
                }
            }
        }
        assert_eq!(choice[i], want, "item {i}");
    }
}

/// Scores hundreds of nats apart: a position's terms share `exp(u − max u)` and the
/// transitions' exponentiated rows, whose products underflow here, so those terms fall back to
/// log space. Values against eq. 6 by brute force, gradients against finite differences.
#[test]
fn nota_terms_hold_under_extreme_scores() {
    let mut rng = StdRng::seed_from_u64(46);
    for edge in [false, true] {
        let rc = shared_chains(&mut rng, 12, 4, edge);
        let theta = random_theta(&mut rng, rc.model.n_params, 2000.0);
        let est = NotaPt::new(NotaSelection::Exhaustive, 0.6);
        for (i, inst) in rc.instances.iter().enumerate() {
            assert_close(
                value(&est, &rc.model, &theta, inst),
                weighted_nota_reference(&rc, i, &theta, &listed(&est, inst), 0.6),
                1e-12,
                &format!("edge={edge} item {i}"),
            );
        }
        let obj = DatasetObjective::new(&rc.model, &rc.instances, &est, Prior { sigma2: None }, 2)
            .unwrap();
        assert_gradient_matches_fd(&obj, &theta, 1, &format!("extreme edge={edge}"));
    }
}

/// 003 §3's per-subset scales: the fitted α maximise the exact log-likelihood of α_{s(i)} θ_i
/// (its derivative in every α_s, by finite differences of an enumeration, is zero there), the
/// record's likelihoods are that enumeration's before and after, and the calibrated weights
/// are θ scaled subset by subset.
#[test]
fn per_subset_scaling_maximises_the_enumerated_likelihood() {
    use piecewise_lab::estimators::scaling::fit_subsets;
    use piecewise_lab::graph::family::ParameterSubsets;
    use piecewise_lab::optim::LbfgsSpec;
    let mut rng = StdRng::seed_from_u64(23);
    let rc = random_chains_with(&mut rng, 15, 4, 3, false);
    let theta = random_theta(&mut rng, rc.model.n_params, 1.5);
    let subsets = ParameterSubsets::per_template(&rc.model);
    // `edge-state` is tied to `state`: two subsets.
    assert_eq!(subsets.names, vec!["state", "transition"]);
    let ll = |w: &[f64]| -> f64 {
        (0..rc.instances.len())
            .map(|i| {
                let all = rc.all_scores(i, w);
                let gold = rc.instances[i].gold.as_ref().unwrap();
                let g = all.iter().find(|(y, _)| y == gold).unwrap().1;
                g - lse(all.iter().map(|(_, s)| *s))
            })
            .sum()
    };
    let scaled = |a: &[f64]| -> Vec<f64> {
        theta
            .iter()
            .zip(&subsets.of)
            .map(|(t, &s)| a[s as usize] * t)
            .collect()
    };
    let cancel = std::sync::atomic::AtomicBool::new(false);
    let (rec, calibrated) = fit_subsets(
        &rc.model,
        &rc.instances,
        &theta,
        &subsets,
        Prior { sigma2: None },
        &LbfgsSpec::default(),
        2,
        &cancel,
        &mut |_| {},
    )
    .unwrap();
    assert_close(rec.log_likelihood_before, ll(&theta), 1e-9, "before");
    assert_close(rec.log_likelihood_after, ll(&calibrated), 1e-9, "after");
    assert!(rec.log_likelihood_after >= rec.log_likelihood_before);
    assert_eq!(calibrated, scaled(&rec.alpha));
    let h = 1e-5;
    for j in 0..rec.alpha.len() {
        let (mut ap, mut am) = (rec.alpha.clone(), rec.alpha.clone());
        ap[j] += h;
        am[j] -= h;
        let fd = (ll(&scaled(&ap)) - ll(&scaled(&am))) / (2.0 * h);
        assert!(fd.abs() < 1e-4, "∂ℓ/∂α_{j} = {fd} at the fit");
    }
    // The fit moved: random weights are far from calibrated.
    assert!(
        rec.alpha.iter().any(|a| (a - 1.0).abs() > 0.05),
        "{:?}",
        rec.alpha
    );
}
