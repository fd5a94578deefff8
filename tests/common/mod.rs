//! Random small models for reference tests.
#![allow(dead_code)]

use piecewise_lab::graph::{Instance, InstanceBuilder, Layout, Model};
use rand::rngs::StdRng;
use rand::Rng;

pub struct RandomChain {
    pub model: Model,
    pub instances: Vec<Instance>,
    /// Per instance: per position, state observations; per position ≥ 1, transition observations.
    pub state_obs: Vec<Vec<Vec<(u32, f64)>>>,
    pub trans_obs: Vec<Vec<Vec<(u32, f64)>>>,
    pub l: usize,
    pub nf_state: usize,
    pub nf_trans: usize,
    /// `edge` factorisation: position 0 has a state factor, every (t−1, t) one edge factor.
    pub edge: bool,
}

pub fn random_obs(rng: &mut StdRng, nf: usize, always: bool) -> Vec<(u32, f64)> {
    let mut v = vec![];
    if always {
        v.push((0, 1.0));
    }
    for k in (always as usize)..nf {
        if rng.random::<f64>() < 0.5 {
            let val = if rng.random::<bool>() {
                1.0
            } else {
                rng.random_range(-1.5..1.5)
            };
            v.push((k as u32, val));
        }
    }
    v
}

/// `count` random chains of length 1..=max_len over `l` labels, dense layout, split factorisation.
pub fn random_chains(rng: &mut StdRng, count: usize, max_len: usize, l: usize) -> RandomChain {
    random_chains_with(rng, count, max_len, l, false)
}

/// As [`random_chains`]; `edge` selects the edge factorisation (same model, other factors).
pub fn random_chains_with(
    rng: &mut StdRng,
    count: usize,
    max_len: usize,
    l: usize,
    edge: bool,
) -> RandomChain {
    let nf_state = 3;
    let nf_trans = 2;
    let mut model = Model::default();
    model
        .add_full_template("state", vec![l], nf_state, Layout::Dense)
        .unwrap();
    model
        .add_full_template("transition", vec![l, l], nf_trans, Layout::Dense)
        .unwrap();
    let map = (0..l * l).map(|e| (e % l) as u32).collect();
    model
        .add_tied_template("edge-state", vec![l, l], map, 0)
        .unwrap();
    let mut instances = vec![];
    let mut state_obs = vec![];
    let mut trans_obs = vec![];
    for _ in 0..count {
        let n = rng.random_range(1..=max_len);
        let mut b = InstanceBuilder::new(&model);
        for _ in 0..n {
            b.add_var(l);
        }
        let mut so = vec![];
        let mut to = vec![vec![]];
        for t in 0..n {
            let o = random_obs(rng, nf_state, false);
            if t > 0 {
                // Half the time only the always-on feature, so transition slots are shared.
                let tr = if rng.random::<bool>() {
                    vec![(0, 1.0)]
                } else {
                    random_obs(rng, nf_trans, true)
                };
                let sc = [t as u32 - 1, t as u32];
                if edge {
                    b.add_factor_parts(&sc, &[(2, &o), (1, &tr)]).unwrap();
                } else {
                    b.add_factor(0, &[t as u32], &o).unwrap();
                    b.add_factor(1, &sc, &tr).unwrap();
                }
                to.push(tr);
            } else {
                b.add_factor(0, &[0], &o).unwrap();
            }
            so.push(o);
        }
        b.set_gold((0..n).map(|_| rng.random_range(0..l as u32)).collect())
            .unwrap();
        instances.push(b.finish());
        state_obs.push(so);
        trans_obs.push(to);
    }
    RandomChain {
        model,
        instances,
        state_obs,
        trans_obs,
        l,
        nf_state,
        nf_trans,
        edge,
    }
}

pub fn random_theta(rng: &mut StdRng, n: usize, scale: f64) -> Vec<f64> {
    (0..n).map(|_| rng.random_range(-scale..scale)).collect()
}

impl RandomChain {
    /// Σ_t Σ_k x_tk W_state[k, y_t] + Σ_t Σ_k x_tk W_trans[k, (y_{t−1}, y_t)], straight from the
    /// definition of the linear-chain CRF (dense layout: W[k, c] at offset + k·cols + c).
    pub fn score_by_definition(&self, i: usize, theta: &[f64], y: &[u32]) -> f64 {
        let l = self.l;
        let st = &self.model.templates[0];
        let tt = &self.model.templates[1];
        let mut s = 0.0;
        for (t, obs) in self.state_obs[i].iter().enumerate() {
            for &(k, v) in obs {
                s += v * theta[st.offset + k as usize * l + y[t] as usize];
            }
        }
        for t in 1..y.len() {
            for &(k, v) in &self.trans_obs[i][t] {
                s += v * theta
                    [tt.offset + k as usize * l * l + (y[t - 1] as usize * l + y[t] as usize)];
            }
        }
        s
    }

    /// State score of position t by definition: Σ_k x_tk W_state[k, y].
    pub fn state_score(&self, i: usize, theta: &[f64], t: usize, y: u32) -> f64 {
        let st = &self.model.templates[0];
        self.state_obs[i][t]
            .iter()
            .map(|&(k, v)| v * theta[st.offset + k as usize * self.l + y as usize])
            .sum()
    }

    /// Transition score of (t−1, t) by definition: Σ_k x_tk W_trans[k, (y', y)].
    pub fn trans_score(&self, i: usize, theta: &[f64], t: usize, yp: u32, y: u32) -> f64 {
        let (l, tt) = (self.l, &self.model.templates[1]);
        self.trans_obs[i][t]
            .iter()
            .map(|&(k, v)| v * theta[tt.offset + k as usize * l * l + yp as usize * l + y as usize])
            .sum()
    }

    /// The factors of instance `i` by definition, as (scope, full table over the scope).
    pub fn factor_tables(&self, i: usize, theta: &[f64]) -> Vec<(Vec<u32>, Vec<f64>)> {
        let n = self.state_obs[i].len();
        let l = self.l as u32;
        let mut out = vec![];
        for t in 0..n {
            if t == 0 || !self.edge {
                out.push((
                    vec![t as u32],
                    (0..l).map(|y| self.state_score(i, theta, t, y)).collect(),
                ));
            }
            if t > 0 {
                let mut tab = vec![];
                for yp in 0..l {
                    for y in 0..l {
                        let s = if self.edge {
                            self.state_score(i, theta, t, y)
                        } else {
                            0.0
                        };
                        tab.push(s + self.trans_score(i, theta, t, yp, y));
                    }
                }
                out.push((vec![t as u32 - 1, t as u32], tab));
            }
        }
        out
    }

    /// Every labelling of instance `i` with its score by definition.
    pub fn all_scores(&self, i: usize, theta: &[f64]) -> Vec<(Vec<u32>, f64)> {
        let n = self.instances[i].n_vars();
        let mut out = vec![];
        let total = self.l.pow(n as u32);
        for code in 0..total {
            let mut y = vec![0u32; n];
            let mut c = code;
            for t in (0..n).rev() {
                y[t] = (c % self.l) as u32;
                c /= self.l;
            }
            let s = self.score_by_definition(i, theta, &y);
            out.push((y, s));
        }
        out
    }
}

pub fn lse(xs: impl Iterator<Item = f64>) -> f64 {
    let v: Vec<f64> = xs.collect();
    let m = v.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    m + v.iter().map(|x| (x - m).exp()).sum::<f64>().ln()
}

/// Central finite differences (step 1e-5) of the objective against its gradient, for every
/// `step`-th parameter: agreement to 1e-6 relative.
pub fn assert_gradient_matches_fd(
    obj: &piecewise_lab::estimators::objective::DatasetObjective<'_>,
    theta: &[f64],
    step: usize,
    what: &str,
) {
    let mut g = vec![0.0; theta.len()];
    obj.evaluate(theta, Some(&mut g));
    let h = 1e-5;
    for j in (0..theta.len()).step_by(step.max(1)) {
        let (mut tp, mut tm) = (theta.to_vec(), theta.to_vec());
        tp[j] += h;
        tm[j] -= h;
        let fd =
            (obj.evaluate(&tp, None).objective - obj.evaluate(&tm, None).objective) / (2.0 * h);
        assert!(
            (fd - g[j]).abs() <= 1e-6 * (1.0 + fd.abs()),
            "{what}: parameter {j}: finite difference {fd} vs gradient {}",
            g[j]
        );
    }
}

pub fn assert_close(a: f64, b: f64, tol: f64, what: &str) {
    let scale = 1.0f64.max(a.abs()).max(b.abs());
    assert!(
        (a - b).abs() <= tol * scale,
        "{what}: {a} vs {b} (diff {})",
        (a - b).abs()
    );
}

/// An instance with variables of cardinalities `card` and one factor per scope, each with a
/// table of its own (one template per shape, a distinct feature per factor), so a test can put
/// any log-potentials straight into the table buffer.
pub fn factor_graph(card: &[u32], scopes: &[Vec<u32>]) -> (Model, Instance) {
    let mut model = Model::default();
    let mut shapes: Vec<Vec<usize>> = vec![];
    let mut ids = vec![];
    for s in scopes {
        let shape: Vec<usize> = s.iter().map(|&v| card[v as usize] as usize).collect();
        let id = match shapes.iter().position(|x| *x == shape) {
            Some(i) => i,
            None => {
                shapes.push(shape.clone());
                shapes.len() - 1
            }
        };
        ids.push(id);
    }
    for (i, shape) in shapes.iter().enumerate() {
        model
            .add_full_template(&format!("t{i}"), shape.clone(), scopes.len(), Layout::Dense)
            .unwrap();
    }
    let mut b = InstanceBuilder::new(&model);
    for &c in card {
        b.add_var(c as usize);
    }
    for (k, (s, &id)) in scopes.iter().zip(&ids).enumerate() {
        b.add_factor(id, s, &[(k as u32, 1.0)]).unwrap();
    }
    let inst = b.finish();
    (model, inst)
}

/// Scopes of an H×W 4-connected grid with a unary factor per variable, `l` states each.
pub fn grid_scopes(h: u32, w: u32, l: u32) -> (Vec<u32>, Vec<Vec<u32>>) {
    let mut scopes: Vec<Vec<u32>> = (0..h * w).map(|v| vec![v]).collect();
    for r in 0..h {
        for c in 0..w {
            let v = r * w + c;
            if c + 1 < w {
                scopes.push(vec![v, v + 1]);
            }
            if r + 1 < h {
                scopes.push(vec![v, v + w]);
            }
        }
    }
    (vec![l; (h * w) as usize], scopes)
}

/// Scopes of a fully connected pairwise graph over m binary variables, with unary factors.
pub fn complete_scopes(m: u32) -> (Vec<u32>, Vec<Vec<u32>>) {
    let mut scopes: Vec<Vec<u32>> = (0..m).map(|v| vec![v]).collect();
    for i in 0..m {
        for j in i + 1..m {
            scopes.push(vec![i, j]);
        }
    }
    (vec![2; m as usize], scopes)
}
