//! Maximum likelihood: one term with every factor and every variable free,
//! `log p(y*) = Σ_a φ_a(y*_a) − log Z`.
//!
//! [`ExactMl`] gets log Z exactly: forward–backward on chains, belief propagation on forests,
//! forward–backward over joint states on ladders (a factorial CRF),
//! enumeration on other graphs small enough (and an error naming the instance otherwise).
//! [`BetheMl`] (`bp`, the papers' baseline) allows loopy BP on graphs with cycles: value
//! `Σ_a φ_a(y*_a) + F_Bethe`, gradient `1[y_a = y*_a] − b_a(y_a)` with the BP factor beliefs.

use super::{Estimator, TermList};
use crate::graph::Instance;
use crate::inference::BpOptions;

#[derive(Clone, Copy, Debug, Default)]
pub struct ExactMl;

impl Estimator for ExactMl {
    fn name(&self) -> &'static str {
        "ml"
    }

    fn terms(&self, inst: &Instance, out: &mut TermList) {
        whole_graph_term(inst, out);
    }
}

/// Approximate maximum likelihood with loopy-BP beliefs in place of marginals.
#[derive(Clone, Copy, Debug, Default)]
pub struct BetheMl {
    pub opts: BpOptions,
}

impl Estimator for BetheMl {
    fn name(&self) -> &'static str {
        "bp"
    }

    fn terms(&self, inst: &Instance, out: &mut TermList) {
        out.bethe = Some(self.opts);
        whole_graph_term(inst, out);
    }
}

fn whole_graph_term(inst: &Instance, out: &mut TermList) {
    out.begin();
    for f in 0..inst.factors.len() as u32 {
        out.factor(f);
    }
    for v in 0..inst.n_vars() as u32 {
        out.free(v);
    }
    out.end(1.0, 1.0);
}
