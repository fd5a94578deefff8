//! A chain read as one score matrix per position, `M_t(y′, y)`: the sum of the tables of the
//! factors at position t (its unary factors and those over `(y_{t−1}, y_t)`), with a single
//! "start" row at t = 0. This is the next-state classifier of an MEMM (001 eq. 1) before
//! normalisation, whatever the chain's factorisation, and it is where two things live that do
//! not fit factor tables:
//!
//! - **local normalisation** (001: "standard MEMM inference"): each row becomes
//!   `log p̃(y | y′) = M_t(y′, y) − log Σ_y exp M_t(y′, y)`; Viterbi over those rows is MEMM
//!   decoding, and forward–backward over them gives the MEMM's own marginals;
//! - **per-state scaling** (001/003: "a per-subset multiplicative factor α_s Λ_s"): row y′ of
//!   every `M_t` multiplied by `α_{y′}` (the start row by `α_start`). A scale per source state
//!   multiplies the state features of the next label too, so it is no reweighting of factor
//!   tables; forward–backward over the scaled rows gives the scaled CRF's likelihood and its
//!   gradient in α.

//!
//! Forward–backward and Viterbi over the matrices are the chain engine's
//! ([`ChainWork`](super::chain::ChainWork)): `M_0` is its first unary row and `M_t` its pair
//! matrix at t, with no other unary terms.

use super::chain::ChainWork;
use crate::graph::{ChainLayout, Instance};

/// Per-position score matrices of one chain instance, and the chain engine's scratch.
#[derive(Clone, Debug, Default)]
pub struct Transitions {
    pub n: usize,
    pub l: usize,
    /// `M_0` (l entries), then `M_t` row-major (l × l) for t = 1 … n−1.
    m: Vec<f64>,
    work: ChainWork,
}

use crate::util::log_sum_exp as lse;

impl Transitions {
    fn off(&self, t: usize) -> usize {
        if t == 0 {
            0
        } else {
            self.l + (t - 1) * self.l * self.l
        }
    }

    /// Row `y′` of `M_t` (`y′` ignored at t = 0, whose only row is the start row).
    pub fn row(&self, t: usize, yp: usize) -> &[f64] {
        let o = self.off(t) + if t == 0 { 0 } else { yp * self.l };
        &self.m[o..o + self.l]
    }

    fn row_mut(&mut self, t: usize, yp: usize) -> &mut [f64] {
        let o = self.off(t) + if t == 0 { 0 } else { yp * self.l };
        let l = self.l;
        &mut self.m[o..o + l]
    }

    /// Rows per position: 1 at t = 0, l after.
    pub fn rows(&self, t: usize) -> usize {
        if t == 0 {
            1
        } else {
            self.l
        }
    }

    /// Fills the matrices from an instance's tables.
    pub fn fill(&mut self, inst: &Instance, lay: &ChainLayout, phi: &[f64]) {
        let (n, l) = (lay.n, lay.l);
        self.n = n;
        self.l = l;
        self.m.clear();
        self.m
            .resize(if n == 0 { 0 } else { l + (n - 1) * l * l }, 0.0);
        for t in 0..n {
            let o = self.off(t);
            let rows = self.rows(t);
            for &f in lay.unary(t) {
                let tab = inst.table(&inst.factors[f as usize], phi);
                for r in 0..rows {
                    for (x, &v) in self.m[o + r * l..o + (r + 1) * l].iter_mut().zip(tab) {
                        *x += v;
                    }
                }
            }
            for &f in lay.pair(t) {
                let tab = inst.table(&inst.factors[f as usize], phi);
                for (x, &v) in self.m[o..o + l * l].iter_mut().zip(tab) {
                    *x += v;
                }
            }
        }
    }

    /// Multiplies row y′ of every matrix by `alpha[y′]` and the start row by `alpha[l]`.
    pub fn scale(&mut self, alpha: &[f64]) {
        assert_eq!(
            alpha.len(),
            self.l + 1,
            "one scale per label and one for the start"
        );
        for t in 0..self.n {
            for r in 0..self.rows(t) {
                let a = if t == 0 { alpha[self.l] } else { alpha[r] };
                self.row_mut(t, r).iter_mut().for_each(|x| *x *= a);
            }
        }
    }

    /// Normalises every row: `M_t(y′, y) ← log p̃(y | y′)` (NOTA removed: over the labels only).
    pub fn normalise_rows(&mut self) {
        for t in 0..self.n {
            for r in 0..self.rows(t) {
                let row = self.row_mut(t, r);
                let z = lse(row);
                row.iter_mut().for_each(|x| *x -= z);
            }
        }
    }

    /// Score of a labelling: Σ_t M_t(y_{t−1}, y_t).
    pub fn score(&self, y: &[u32]) -> f64 {
        (0..self.n)
            .map(|t| {
                let yp = if t == 0 { 0 } else { y[t - 1] as usize };
                self.row(t, yp)[y[t] as usize]
            })
            .sum()
    }

    /// Hands the matrices to the chain engine: `M_0` as position 0's unary row, `M_t` as the
    /// pair matrix at t.
    fn load(&mut self) {
        let (n, l) = (self.n, self.l);
        let start = &self.m[..l.min(self.m.len())];
        let u = start
            .iter()
            .copied()
            .chain(std::iter::repeat_n(0.0, n.saturating_sub(1) * l));
        let pl = self.m[start.len()..].iter().copied();
        self.work.load_dense((n, l), u, pl);
    }

    /// The labelling of highest score (Viterbi; the first best state on ties).
    pub fn viterbi(&mut self, out: &mut Vec<u32>) {
        self.load();
        self.work.viterbi_core(out);
    }

    /// Forward–backward; returns log Z (0 up to rounding for normalised rows).
    pub fn forward_backward(&mut self) -> f64 {
        self.load();
        self.work.run_loaded()
    }

    /// p(y_t = y) after [`forward_backward`](Self::forward_backward).
    pub fn node_marginal(&self, t: usize, y: usize) -> f64 {
        self.work.node_marginal(t, y)
    }

    /// p(y_{t−1} = y′, y_t = y) for t ≥ 1, or p(y_0 = y) at t = 0, after forward–backward.
    pub fn pair_marginal(&self, t: usize, yp: usize, y: usize) -> f64 {
        if t == 0 {
            self.work.node_marginal(0, y)
        } else {
            self.work.pair_marginal(t, yp, y)
        }
    }
}

/// Per-state scales: the gradient of one instance's scaled log-likelihood
/// `Σ_t α_{y*_{t−1}} M_t(y*_{t−1}, y*_t) − log Z_α` in α, added into `grad` (l + 1 entries,
/// the start's last); returns the log-likelihood. `tr` holds the *unscaled* matrices.
pub fn scaled_log_likelihood(
    tr: &Transitions,
    scaled: &mut Transitions,
    alpha: &[f64],
    gold: &[u32],
    grad: Option<&mut [f64]>,
) -> f64 {
    scaled.clone_from(tr);
    scaled.scale(alpha);
    let log_z = scaled.forward_backward();
    let ll = scaled.score(gold) - log_z;
    if let Some(g) = grad {
        let l = tr.l;
        for t in 0..tr.n {
            let src = |yp: usize| if t == 0 { l } else { yp };
            let gp = if t == 0 { 0 } else { gold[t - 1] as usize };
            g[src(gp)] += tr.row(t, gp)[gold[t] as usize];
            for yp in 0..tr.rows(t) {
                let row = tr.row(t, yp);
                let e: f64 = (0..l)
                    .map(|y| scaled.pair_marginal(t, yp, y) * row[y])
                    .sum();
                g[src(yp)] -= e;
            }
        }
    }
    ll
}
