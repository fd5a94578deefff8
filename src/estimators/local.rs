//! The local estimators of Sutton & McCallum (000) as term lists.

use super::{Estimator, TermList};
use crate::graph::pieces::ResolvedPieces;
use crate::graph::Instance;

/// Adds to the open term every variable of `f`'s scope not already in it, as clamped.
fn clamp_scope(inst: &Instance, f: u32, out: &mut TermList) {
    for &v in inst.scope(&inst.factors[f as usize]) {
        out.clamp(v);
    }
}

/// Pseudolikelihood by node (eq. 5): per variable s, the factors touching s, s free, its
/// Markov blanket clamped.
#[derive(Clone, Copy, Debug, Default)]
pub struct Pseudolikelihood;

impl Estimator for Pseudolikelihood {
    fn name(&self) -> &'static str {
        "pl"
    }
    fn terms(&self, inst: &Instance, out: &mut TermList) {
        for s in 0..inst.n_vars() as u32 {
            node_term(inst, s, out);
        }
    }
}

fn node_term(inst: &Instance, s: u32, out: &mut TermList) {
    out.begin();
    out.free(s);
    for &f in inst.var_factors(s) {
        out.factor(f);
        clamp_scope(inst, f, out);
    }
    out.end(1.0, 1.0);
}

/// Per-edge pseudolikelihood (eq. 42): for every pair of variables sharing a factor, the pair
/// free, the factors touching either, their Markov blanket clamped; a variable in no pair
/// contributes its node term.
#[derive(Clone, Copy, Debug, Default)]
pub struct EdgePseudolikelihood;

impl Estimator for EdgePseudolikelihood {
    fn name(&self) -> &'static str {
        "pl-edge"
    }
    fn terms(&self, inst: &Instance, out: &mut TermList) {
        // Pairs (s, t), s < t, packed as s·n + t in the scratch buffer.
        let n = inst.n_vars() as u32;
        let mut pairs = std::mem::take(&mut out.scratch);
        pairs.clear();
        for f in &inst.factors {
            let sc = inst.scope(f);
            for (i, &a) in sc.iter().enumerate() {
                for &b in &sc[i + 1..] {
                    if a != b {
                        pairs.push(a.min(b) * n + a.max(b));
                    }
                }
            }
        }
        pairs.sort_unstable();
        pairs.dedup();
        for &p in &pairs {
            let (s, t) = (p / n, p % n);
            out.begin();
            out.free(s);
            out.free(t);
            for v in [s, t] {
                for &f in inst.var_factors(v) {
                    if !out.has_factor(f) {
                        out.factor(f);
                        clamp_scope(inst, f, out);
                    }
                }
            }
            out.end(1.0, 1.0);
        }
        for s in 0..n {
            let in_pair = pairs.iter().any(|&p| p / n == s || p % n == s);
            if !in_pair {
                node_term(inst, s, out);
            }
        }
        out.scratch = pairs;
    }
}

/// Piecewise training (eq. 8): per piece, its factors, all their variables free, nothing
/// clamped. With `mu` set it is reweighted piecewise (eq. 35): each piece's log partition
/// function at temperature μ, `μ log Σ exp(φ/μ)`; `Some(None)` is the uniform μ = 1/|pieces|.
#[derive(Clone, Debug)]
pub struct Piecewise {
    pieces: ResolvedPieces,
    mu: Option<Option<f64>>,
}

impl Piecewise {
    pub fn new(pieces: ResolvedPieces, mu: Option<Option<f64>>) -> Self {
        Piecewise { pieces, mu }
    }
}

impl Estimator for Piecewise {
    fn name(&self) -> &'static str {
        if self.mu.is_some() {
            "pw-reweighted"
        } else {
            "pw"
        }
    }
    fn terms(&self, inst: &Instance, out: &mut TermList) {
        let mu = match self.mu {
            None => 1.0,
            Some(Some(m)) => m,
            Some(None) => 1.0 / self.pieces.count(inst).max(1) as f64,
        };
        let mut buf = std::mem::take(&mut out.scratch);
        self.pieces.for_each(inst, &mut buf, |fs| {
            out.begin();
            for &f in fs {
                out.factor(f);
            }
            for &f in fs {
                for &v in inst.scope(&inst.factors[f as usize]) {
                    if !out.has_free(v) {
                        out.free(v);
                    }
                }
            }
            out.end(1.0, mu);
        });
        out.scratch = buf;
    }
}

/// Piecewise pseudolikelihood (eq. 36–37): per piece and per variable s in it, the piece's
/// factors alone with s free and the piece's other variables clamped. A unary factor's term is
/// its softmax.
#[derive(Clone, Debug)]
pub struct Pwpl {
    pieces: ResolvedPieces,
}

impl Pwpl {
    pub fn new(pieces: ResolvedPieces) -> Self {
        Pwpl { pieces }
    }
}

impl Estimator for Pwpl {
    fn name(&self) -> &'static str {
        "pwpl"
    }
    fn terms(&self, inst: &Instance, out: &mut TermList) {
        let mut buf = std::mem::take(&mut out.scratch);
        let mut vars = std::mem::take(&mut out.scratch_vars);
        self.pieces.for_each(inst, &mut buf, |fs| {
            vars.clear();
            for &f in fs {
                for &v in inst.scope(&inst.factors[f as usize]) {
                    if !vars.contains(&v) {
                        vars.push(v);
                    }
                }
            }
            for &s in &vars {
                out.begin();
                out.free(s);
                for &f in fs {
                    out.factor(f);
                }
                for &v in &vars {
                    out.clamp(v);
                }
                out.end(1.0, 1.0);
            }
        });
        out.scratch = buf;
        out.scratch_vars = vars;
    }
}
