//! Every local estimator against a brute-force computation from the paper's definition
//! (000: eq. 5, 8, 35, 36–37, 42) on random chains in both factorisations, gradients against
//! finite differences, and PW against exact ML on the node-split graph (§3.2).

use crate::common;
use common::*;
use piecewise_lab::estimators::objective::DatasetObjective;
use piecewise_lab::estimators::{Estimator, EstimatorSpec, ExactMl, Pieces, Workspace};
use piecewise_lab::graph::pieces::node_split;
use piecewise_lab::graph::{Instance, Model};
use piecewise_lab::optim::Prior;
use rand::rngs::StdRng;
use rand::SeedableRng;

fn tables(model: &Model, theta: &[f64], inst: &Instance) -> Vec<f64> {
    let mut phi = vec![0.0; inst.table_len];
    model.build_tables(theta, inst, &mut phi, &mut Vec::new());
    phi
}

fn value(spec: &EstimatorSpec, model: &Model, theta: &[f64], inst: &Instance) -> f64 {
    let est = spec.build(model).unwrap();
    est.check(inst).unwrap();
    est.evaluate(
        inst,
        &tables(model, theta, inst),
        None,
        &mut Workspace::default(),
    )
}

/// log Σ_{assignments of `vars`} exp f(y), the other variables held at `y0`.
fn lse_over(vars: &[usize], l: usize, y0: &[u32], f: impl Fn(&[u32]) -> f64) -> f64 {
    let mut y = y0.to_vec();
    let mut vals = vec![];
    for code in 0..l.pow(vars.len() as u32) {
        let mut c = code;
        for &v in vars.iter().rev() {
            y[v] = (c % l) as u32;
            c /= l;
        }
        vals.push(f(&y));
    }
    lse(vals.into_iter())
}

/// Reference values straight from the definitions, using full scores S(y) and factor tables
/// computed from features and weights.
struct Reference<'a> {
    rc: &'a RandomChain,
    i: usize,
    theta: &'a [f64],
}

impl Reference<'_> {
    fn gold(&self) -> Vec<u32> {
        self.rc.instances[self.i].gold.clone().unwrap()
    }
    fn s(&self, y: &[u32]) -> f64 {
        self.rc.score_by_definition(self.i, self.theta, y)
    }
    /// eq. 5: Σ_s log p(y_s | y_N(s)); factors without s cancel, so the full score serves.
    fn pl(&self) -> f64 {
        let g = self.gold();
        (0..g.len())
            .map(|s| self.s(&g) - lse_over(&[s], self.rc.l, &g, |y| self.s(y)))
            .sum()
    }
    /// eq. 42 on a chain: every adjacent pair (the pairs that share a factor); a lone variable
    /// contributes its node term.
    fn pl_edge(&self) -> f64 {
        let g = self.gold();
        if g.len() == 1 {
            return self.pl();
        }
        (1..g.len())
            .map(|t| self.s(&g) - lse_over(&[t - 1, t], self.rc.l, &g, |y| self.s(y)))
            .sum()
    }
    fn factor_value(&self, scope: &[u32], tab: &[f64], y: &[u32]) -> f64 {
        let l = self.rc.l;
        let e = scope.iter().fold(0, |e, &v| e * l + y[v as usize] as usize);
        tab[e]
    }
    /// eq. 8 with factor-as-piece, and eq. 35 when `mu` is given.
    fn pw(&self, mu: Option<f64>) -> f64 {
        let g = self.gold();
        let fs = self.rc.factor_tables(self.i, self.theta);
        let m = mu.unwrap_or(1.0);
        fs.iter()
            .map(|(sc, tab)| self.factor_value(sc, tab, &g) - m * lse(tab.iter().map(|x| x / m)))
            .sum()
    }
    /// eq. 36–37: Σ_a Σ_{s∈a} log p_LCL(y_s | y_{a∖s}).
    fn pwpl(&self) -> f64 {
        let g = self.gold();
        let fs = self.rc.factor_tables(self.i, self.theta);
        let mut v = 0.0;
        for (sc, tab) in &fs {
            for &s in sc {
                v += self.factor_value(sc, tab, &g)
                    - lse_over(&[s as usize], self.rc.l, &g, |y| {
                        self.factor_value(sc, tab, y)
                    });
            }
        }
        v
    }
    /// Pieces "state+transition" on the split chain: one piece per position t holding
    /// state_t and transition (t−1, t).
    fn pw_position_pieces(&self) -> f64 {
        let g = self.gold();
        let n = g.len();
        (0..n)
            .map(|t| {
                let vars: Vec<usize> = if t == 0 { vec![0] } else { vec![t - 1, t] };
                let piece = |y: &[u32]| {
                    let mut s = self.rc.state_score(self.i, self.theta, t, y[t]);
                    if t > 0 {
                        s += self.rc.trans_score(self.i, self.theta, t, y[t - 1], y[t]);
                    }
                    s
                };
                piece(&g) - lse_over(&vars, self.rc.l, &g, piece)
            })
            .sum()
    }
}

#[test]
fn every_estimator_equals_its_definition_in_both_factorisations() {
    let mut rng = StdRng::seed_from_u64(21);
    for edge in [false, true] {
        for l in 1..=4 {
            let rc = random_chains_with(&mut rng, 12, 5, l, edge);
            let theta = random_theta(&mut rng, rc.model.n_params, 1.5);
            for (i, inst) in rc.instances.iter().enumerate() {
                let r = Reference {
                    rc: &rc,
                    i,
                    theta: &theta,
                };
                let n_factors = inst.factors.len() as f64;
                let cases: Vec<(EstimatorSpec, f64)> = vec![
                    (EstimatorSpec::from_name("pl").unwrap(), r.pl()),
                    (EstimatorSpec::from_name("pl-edge").unwrap(), r.pl_edge()),
                    (EstimatorSpec::from_name("pw").unwrap(), r.pw(None)),
                    (
                        EstimatorSpec::from_name("pw-reweighted").unwrap(),
                        r.pw(Some(1.0 / n_factors)),
                    ),
                    (
                        EstimatorSpec::PwReweighted {
                            pieces: Pieces::default(),
                            mu: Some(0.3),
                        },
                        r.pw(Some(0.3)),
                    ),
                    (EstimatorSpec::from_name("pwpl").unwrap(), r.pwpl()),
                ];
                for (spec, want) in cases {
                    let got = value(&spec, &rc.model, &theta, inst);
                    assert_close(
                        got,
                        want,
                        1e-10,
                        &format!("{spec:?} edge={edge} l={l} instance {i}"),
                    );
                }
                if !edge {
                    let spec = EstimatorSpec::from_name("pw")
                        .unwrap()
                        .with_pieces(Pieces::parse("state+transition").unwrap());
                    assert_close(
                        value(&spec, &rc.model, &theta, inst),
                        r.pw_position_pieces(),
                        1e-10,
                        "pw pieces",
                    );
                }
            }
        }
    }
}

#[test]
fn ml_is_the_same_in_both_factorisations() {
    // Same seed, same observations and weights: only the factors differ.
    for seed in 0..5 {
        let split = random_chains_with(&mut StdRng::seed_from_u64(seed), 10, 5, 3, false);
        let edge = random_chains_with(&mut StdRng::seed_from_u64(seed), 10, 5, 3, true);
        let theta = random_theta(
            &mut StdRng::seed_from_u64(99 + seed),
            split.model.n_params,
            2.0,
        );
        for (a, b) in split.instances.iter().zip(&edge.instances) {
            let (va, vb) = (
                value(&EstimatorSpec::Ml, &split.model, &theta, a),
                value(&EstimatorSpec::Ml, &edge.model, &theta, b),
            );
            assert_close(va, vb, 1e-10, "ML split vs edge");
            // PL and per-edge PL depend only on the distribution, too.
            for name in ["pl", "pl-edge"] {
                let s = EstimatorSpec::from_name(name).unwrap();
                assert_close(
                    value(&s, &split.model, &theta, a),
                    value(&s, &edge.model, &theta, b),
                    1e-10,
                    name,
                );
            }
        }
    }
}

#[test]
fn every_estimator_gradient_matches_finite_differences() {
    let mut rng = StdRng::seed_from_u64(8);
    for edge in [false, true] {
        let rc = random_chains_with(&mut rng, 8, 4, 3, edge);
        let theta = random_theta(&mut rng, rc.model.n_params, 1.0);
        for name in EstimatorSpec::NAMES {
            let mut specs = vec![EstimatorSpec::from_name(name).unwrap()];
            if *name == "pw" && !edge {
                specs.push(
                    specs[0]
                        .clone()
                        .with_pieces(Pieces::parse("state+transition;state").unwrap()),
                );
            }
            for spec in specs {
                let est = spec.build(&rc.model).unwrap();
                let obj = DatasetObjective::new(
                    &rc.model,
                    &rc.instances,
                    est.as_ref(),
                    Prior { sigma2: Some(1.3) },
                    2,
                )
                .unwrap();
                assert_gradient_matches_fd(&obj, &theta, 1, &format!("{spec:?} edge={edge}"));
            }
        }
    }
}

#[test]
fn piecewise_is_exact_ml_on_the_node_split_graph() {
    let mut rng = StdRng::seed_from_u64(4);
    for edge in [false, true] {
        for l in 1..=3 {
            let rc = random_chains_with(&mut rng, 10, 3, l, edge);
            let theta = random_theta(&mut rng, rc.model.n_params, 2.0);
            for pieces in ["", "state+transition", "state+transition;state"] {
                if edge && !pieces.is_empty() {
                    continue;
                }
                let spec = EstimatorSpec::from_name("pw")
                    .unwrap()
                    .with_pieces(Pieces::parse(pieces).unwrap());
                let resolved = Pieces::parse(pieces).unwrap().resolve(&rc.model).unwrap();
                for inst in &rc.instances {
                    let mut listed = 0;
                    resolved.for_each(inst, &mut Vec::new(), |_| listed += 1);
                    assert_eq!(
                        resolved.count(inst),
                        listed,
                        "piece count, pieces {pieces:?}"
                    );
                    let split = node_split(&rc.model, inst, &resolved).unwrap().instance;
                    assert!(split.n_vars() >= inst.n_vars());
                    let pw = value(&spec, &rc.model, &theta, inst);
                    let ml = ExactMl.evaluate(
                        &split,
                        &tables(&rc.model, &theta, &split),
                        None,
                        &mut Workspace::default(),
                    );
                    assert_close(
                        pw,
                        ml,
                        1e-10,
                        &format!("PW vs ML(node-split), pieces {pieces:?}, edge={edge}"),
                    );
                }
            }
        }
    }
}
