//! Terms whose free and summed variables form a forest once the clamped variables are fixed:
//! exact sum-product by two passes over each tree instead of enumerating the joint states.
//!
//! A component like p(x_t, y_t, x_{t+1}, y_{t+1} | y_{t−1}, y_{t+2}) on a Boltzmann chain has
//! (K·V)² joint states over a vocabulary of V words, but its reduced graph is a tree
//! x_t − y_t − y_{t+1} − x_{t+1}, so its normaliser costs O(K·V + K²). Every factor of the term,
//! restricted to the gold values of its clamped variables, must touch at most two of the term's
//! variables, and no two of them the same pair or a cycle.

use super::terms::{LineCache, Term};
use crate::graph::Instance;

/// A reduced pairwise factor: table entry `base + y_a·sa + y_b·sb` over local variables (a, b).
#[derive(Clone, Copy, Debug)]
struct Edge {
    slot: u32,
    base: usize,
    sa: usize,
    sb: usize,
    a: u32,
    b: u32,
}

/// A node's edge to its parent in one pass: offsets of the child's and the parent's states and
/// of the upward message, the states each takes, and whether the child is a cached leaf.
struct TreeEdge {
    e: Edge,
    p: u32,
    oc: usize,
    op: usize,
    om: usize,
    rp: std::ops::Range<usize>,
    rc: std::ops::Range<usize>,
    leaf: bool,
}

/// Reusable buffers (one per thread): nothing is allocated per term once warm.
#[derive(Clone, Debug, Default)]
pub struct ForestWork {
    /// Instance variable → local index (`u32::MAX` when not a term variable).
    local: Vec<u32>,
    vars: Vec<u32>,
    card: Vec<usize>,
    /// Start of each local variable's states in the node arrays.
    off: Vec<usize>,
    /// Σ of the reduced unary tables (÷ μ).
    unary: Vec<f64>,
    /// Reduced unary factors: (base, stride, local variable).
    unaries: Vec<(usize, usize, u32)>,
    edges: Vec<Edge>,
    /// Union–find and the trees: nodes parents-first, each with its parent and the edge to it.
    uf: Vec<u32>,
    cursor: Vec<u32>,
    visited: Vec<bool>,
    adj_ptr: Vec<u32>,
    adj: Vec<u32>,
    order: Vec<u32>,
    parent: Vec<u32>,
    parent_edge: Vec<u32>,
    /// Start of each node's upward message (over its parent's states) in `msg`.
    moff: Vec<usize>,
    inside: Vec<f64>,
    outside: Vec<f64>,
    msg: Vec<f64>,
    /// Per node: whether it is a leaf read from cached lines (no unary, no children, its edge
    /// in a shared table), and for each parent state the line's index (at `moff`).
    cached: Vec<bool>,
    lines: Vec<u32>,
    n_unary: Vec<u32>,
    /// log Z of the tree each node belongs to.
    tree_z: Vec<f64>,
    scratch: Vec<f64>,
    pub ops: u64,
}

const NONE: u32 = u32::MAX;

/// Whether the term's reduced factors form a forest of unary and pairwise tables.
pub fn is_forest_term(inst: &Instance, t: &Term<'_>) -> bool {
    ForestWork::default().setup(inst, &vec![0; inst.n_vars()], t)
}

impl ForestWork {
    /// Reduces the term's factors (clamped variables at gold); false when they are not a forest
    /// of unary and pairwise tables.
    fn setup(&mut self, inst: &Instance, gold: &[u32], t: &Term<'_>) -> bool {
        self.local.clear();
        self.local.resize(inst.n_vars(), NONE);
        self.vars.clear();
        self.card.clear();
        self.off.clear();
        let mut n_states = 0;
        for &v in t.free.iter().chain(t.summed) {
            self.local[v as usize] = self.vars.len() as u32;
            self.vars.push(v);
            let c = inst.card[v as usize] as usize;
            self.card.push(c);
            self.off.push(n_states);
            n_states += c;
        }
        let n = self.vars.len();
        self.unary.clear();
        self.unary.resize(n_states, 0.0);
        self.unaries.clear();
        self.edges.clear();
        self.uf.clear();
        self.uf.extend(0..n as u32);
        self.n_unary.clear();
        self.n_unary.resize(n, 0);
        for &f in t.factors {
            let fac = &inst.factors[f as usize];
            let (mut base, mut stride) = (inst.table_offset(fac), 1usize);
            let mut found = [(0usize, 0u32); 2];
            let mut k = 0;
            for &v in inst.scope(fac).iter().rev() {
                let l = self.local[v as usize];
                if l == NONE {
                    base += gold[v as usize] as usize * stride;
                } else {
                    if k == 2 {
                        return false;
                    }
                    found[k] = (stride, l);
                    k += 1;
                }
                stride *= inst.card[v as usize] as usize;
            }
            match k {
                0 => {} // constant: cancels between numerator and normaliser
                1 => {
                    self.unaries.push((base, found[0].0, found[0].1));
                    self.n_unary[found[0].1 as usize] += 1;
                }
                _ => {
                    let (ra, rb) = (self.root(found[0].1), self.root(found[1].1));
                    if ra == rb {
                        return false;
                    }
                    self.uf[ra as usize] = rb;
                    self.edges.push(Edge {
                        slot: fac.slot,
                        base,
                        sa: found[0].0,
                        sb: found[1].0,
                        a: found[0].1,
                        b: found[1].1,
                    });
                }
            }
        }
        // Adjacency, then a breadth-first order of each tree from its first variable.
        self.adj_ptr.clear();
        self.adj_ptr.resize(n + 1, 0);
        for e in &self.edges {
            self.adj_ptr[e.a as usize + 1] += 1;
            self.adj_ptr[e.b as usize + 1] += 1;
        }
        for i in 0..n {
            self.adj_ptr[i + 1] += self.adj_ptr[i];
        }
        self.adj.clear();
        self.adj.resize(2 * self.edges.len(), 0);
        self.cursor.clear();
        self.cursor.extend_from_slice(&self.adj_ptr[..n]);
        for (i, e) in self.edges.iter().enumerate() {
            for x in [e.a, e.b] {
                self.adj[self.cursor[x as usize] as usize] = i as u32;
                self.cursor[x as usize] += 1;
            }
        }
        self.parent.clear();
        self.parent.resize(n, NONE);
        self.parent_edge.clear();
        self.parent_edge.resize(n, NONE);
        self.order.clear();
        self.moff.clear();
        self.moff.resize(n, 0);
        self.visited.clear();
        self.visited.resize(n, false);
        let mut m_len = 0;
        for r in 0..n {
            if self.visited[r] {
                continue;
            }
            self.visited[r] = true;
            let start = self.order.len();
            self.order.push(r as u32);
            let mut head = start;
            while head < self.order.len() {
                let u = self.order[head] as usize;
                head += 1;
                for j in self.adj_ptr[u]..self.adj_ptr[u + 1] {
                    let ei = self.adj[j as usize];
                    let e = self.edges[ei as usize];
                    let w = if e.a as usize == u { e.b } else { e.a } as usize;
                    if !self.visited[w] {
                        self.visited[w] = true;
                        self.parent[w] = u as u32;
                        self.parent_edge[w] = ei;
                        self.moff[w] = m_len;
                        m_len += self.card[u];
                        self.order.push(w as u32);
                    }
                }
            }
        }
        self.tree_z.clear();
        self.tree_z.resize(n, 0.0);
        self.cached.clear();
        self.cached.resize(n, false);
        self.lines.clear();
        self.lines.resize(m_len, 0);
        self.msg.clear();
        self.msg.resize(m_len, 0.0);
        self.inside.clear();
        self.inside.resize(n_states, 0.0);
        self.outside.clear();
        self.outside.resize(n_states, 0.0);
        true
    }

    fn root(&mut self, mut x: u32) -> u32 {
        while self.uf[x as usize] != x {
            let p = self.uf[self.uf[x as usize] as usize];
            self.uf[x as usize] = p;
            x = p;
        }
        x
    }

    /// Entry of edge `e` with its endpoint `p` at `yp` and the other at `yc`.
    #[inline]
    fn entry(e: &Edge, p: u32, yp: usize, yc: usize) -> usize {
        if e.a == p {
            e.base + yp * e.sa + yc * e.sb
        } else {
            e.base + yp * e.sb + yc * e.sa
        }
    }

    /// Marks leaves whose edge lies in a shared table and looks up their lines (one per parent
    /// state): their upward message is the line's cached log-sum-exp, and their share of the
    /// gradient is deferred to the cache's flush.
    fn mark_cached_leaves(&mut self, phi: &[f64], mu: f64, cache: &mut LineCache) {
        for c in 0..self.vars.len() {
            let p = self.parent[c];
            let degree = self.adj_ptr[c + 1] - self.adj_ptr[c];
            if p == NONE || degree != 1 || self.n_unary[c] != 0 {
                continue;
            }
            let e = self.edges[self.parent_edge[c] as usize];
            if !cache.shared(e.slot) {
                continue;
            }
            let (sp, sc) = if e.a == p { (e.sa, e.sb) } else { (e.sb, e.sa) };
            self.cached[c] = true;
            for yp in 0..self.card[p as usize] {
                let i = cache.line(phi, e.base + yp * sp, sc, self.card[c], mu);
                self.lines[self.moff[c] + yp] = i as u32;
            }
        }
    }

    /// Node `c`'s edge to its parent as a pass reads it; `None` for roots.
    fn tree_edge(&self, c: usize, clamp: bool, n_free: usize, gold: &[u32]) -> Option<TreeEdge> {
        let p = self.parent[c];
        if p == NONE {
            return None;
        }
        let rc = self.states(c, clamp, n_free, gold);
        Some(TreeEdge {
            e: self.edges[self.parent_edge[c] as usize],
            p,
            oc: self.off[c],
            op: self.off[p as usize],
            om: self.moff[c],
            rp: self.states(p as usize, clamp, n_free, gold),
            leaf: self.cached[c] && rc.len() == self.card[c],
            rc,
        })
    }

    /// States of local variable `l` in this pass: only gold when clamped.
    #[inline]
    fn states(&self, l: usize, clamp: bool, n_free: usize, gold: &[u32]) -> std::ops::Range<usize> {
        if clamp && l < n_free {
            let g = gold[self.vars[l] as usize] as usize;
            g..g + 1
        } else {
            0..self.card[l]
        }
    }

    /// Sum-product over the forest with node potentials `unary` (÷ μ); with `clamp` the free
    /// variables are held at gold. Returns Σ_trees log Z and leaves the messages set.
    fn pass(
        &mut self,
        phi: &[f64],
        inv_mu: f64,
        gold: &[u32],
        n_free: usize,
        clamp: bool,
        cache: &LineCache,
    ) -> f64 {
        self.inside.copy_from_slice(&self.unary);
        if clamp {
            for l in 0..n_free {
                let g = gold[self.vars[l] as usize] as usize;
                let o = self.off[l];
                for y in 0..self.card[l] {
                    if y != g {
                        self.inside[o + y] = f64::NEG_INFINITY;
                    }
                }
            }
        }
        // Upward: children before parents.
        for i in (0..self.order.len()).rev() {
            let c = self.order[i] as usize;
            let Some(TreeEdge {
                e,
                p,
                oc,
                op,
                om,
                rp,
                rc,
                leaf,
            }) = self.tree_edge(c, clamp, n_free, gold)
            else {
                continue;
            };
            for yp in rp.clone() {
                let m = if leaf {
                    cache.lse(self.lines[om + yp] as usize)
                } else {
                    self.scratch.clear();
                    for yc in rc.clone() {
                        self.scratch
                            .push(self.inside[oc + yc] + phi[Self::entry(&e, p, yp, yc)] * inv_mu);
                    }
                    lse(&self.scratch)
                };
                self.msg[om + yp] = m;
                self.inside[op + yp] += m;
            }
            if !leaf {
                self.ops += (rc.len() * rp.len()) as u64;
            }
        }
        // Downward: parents before children (cached leaves need no outside message).
        let mut total = 0.0;
        for i in 0..self.order.len() {
            let c = self.order[i] as usize;
            let (lc, oc) = (self.card[c], self.off[c]);
            let p = self.parent[c];
            if p == NONE {
                self.outside[oc..oc + lc].fill(0.0);
                let z = lse(&self.inside[oc..oc + lc]);
                self.tree_z[c] = z;
                total += z;
                continue;
            }
            self.tree_z[c] = self.tree_z[p as usize];
            let rc = self.states(c, clamp, n_free, gold);
            if self.cached[c] && rc.len() == lc {
                continue;
            }
            let e = self.edges[self.parent_edge[c] as usize];
            let (op, om) = (self.off[p as usize], self.moff[c]);
            let rp = self.states(p as usize, clamp, n_free, gold);
            for yc in rc.clone() {
                self.scratch.clear();
                for yp in rp.clone() {
                    self.scratch.push(
                        self.inside[op + yp] + self.outside[op + yp] - self.msg[om + yp]
                            + phi[Self::entry(&e, p, yp, yc)] * inv_mu,
                    );
                }
                self.outside[oc + yc] = lse(&self.scratch);
            }
            self.ops += (rc.len() * rp.len()) as u64;
        }
        total
    }

    /// Adds `coef` × each reduced factor's marginal (from the last [`pass`](Self::pass)) to `d`;
    /// cached leaves' edges go to their lines' deferred coefficients.
    #[allow(clippy::too_many_arguments)]
    fn add_marginals(
        &mut self,
        phi: &[f64],
        inv_mu: f64,
        coef: f64,
        d: &mut [f64],
        gold: &[u32],
        n_free: usize,
        clamp: bool,
        cache: &mut LineCache,
    ) {
        for &(base, stride, l) in &self.unaries {
            let (o, z) = (self.off[l as usize], self.tree_z[l as usize]);
            for y in self.states(l as usize, clamp, n_free, gold) {
                let lp = self.inside[o + y] + self.outside[o + y] - z;
                if lp > f64::NEG_INFINITY {
                    d[base + y * stride] += coef * lp.exp();
                }
            }
        }
        for i in 0..self.order.len() {
            let c = self.order[i] as usize;
            let Some(TreeEdge {
                e,
                p,
                oc,
                op,
                om,
                rp,
                rc,
                leaf,
            }) = self.tree_edge(c, clamp, n_free, gold)
            else {
                continue;
            };
            let z = self.tree_z[c];
            for yp in rp.clone() {
                if leaf {
                    // P(y_p, y_c) = P(y_p)·softmax of the line: deferred.
                    let lp = self.inside[op + yp] + self.outside[op + yp] - z;
                    if lp > f64::NEG_INFINITY {
                        cache.add_coef(self.lines[om + yp] as usize, -coef * lp.exp());
                    }
                    continue;
                }
                let a = self.inside[op + yp] + self.outside[op + yp] - self.msg[om + yp] - z;
                if a == f64::NEG_INFINITY {
                    continue;
                }
                for yc in rc.clone() {
                    let en = Self::entry(&e, p, yp, yc);
                    let lpr = a + phi[en] * inv_mu + self.inside[oc + yc];
                    if lpr > f64::NEG_INFINITY {
                        d[en] += coef * lpr.exp();
                    }
                }
            }
            if !leaf {
                self.ops += (rc.len() * rp.len()) as u64;
            }
        }
    }
}

use crate::util::log_sum_exp as lse;

/// Value of a forest term, `w·μ·(log Σ_{summed} exp(S/μ) − log Σ_{free, summed} exp(S/μ))`;
/// adds its gradient to `dphi` when given (part of it through `cache`'s deferred lines).
/// `None` when the term is not a forest.
pub fn forest_term(
    inst: &Instance,
    phi: &[f64],
    gold: &[u32],
    t: &Term<'_>,
    dphi: Option<&mut [f64]>,
    fw: &mut ForestWork,
    cache: &mut LineCache,
) -> Option<f64> {
    if !fw.setup(inst, gold, t) {
        return None;
    }
    let (mu, w) = (t.temperature, t.weight);
    let inv_mu = 1.0 / mu;
    for &(base, stride, l) in &fw.unaries {
        let o = fw.off[l as usize];
        for y in 0..fw.card[l as usize] {
            fw.unary[o + y] += phi[base + y * stride] * inv_mu;
        }
    }
    fw.mark_cached_leaves(phi, mu, cache);
    let n_free = t.free.len();
    let summed = !t.summed.is_empty();
    let den = fw.pass(phi, inv_mu, gold, n_free, false, cache);
    let mut d = dphi;
    if let Some(d) = d.as_deref_mut() {
        fw.add_marginals(phi, inv_mu, -w, d, gold, n_free, false, cache);
    }
    let num = if summed {
        let num = fw.pass(phi, inv_mu, gold, n_free, true, cache);
        if let Some(d) = d.as_deref_mut() {
            fw.add_marginals(phi, inv_mu, w, d, gold, n_free, true, cache);
        }
        num
    } else {
        // Every variable free: the numerator is the reduced score at gold.
        let mut s = 0.0;
        for &(base, stride, l) in &fw.unaries {
            let y = gold[fw.vars[l as usize] as usize] as usize;
            s += phi[base + y * stride];
            if let Some(d) = d.as_deref_mut() {
                d[base + y * stride] += w;
            }
        }
        for e in &fw.edges {
            let (ya, yb) = (
                gold[fw.vars[e.a as usize] as usize] as usize,
                gold[fw.vars[e.b as usize] as usize] as usize,
            );
            s += phi[e.base + ya * e.sa + yb * e.sb];
            if let Some(d) = d.as_deref_mut() {
                d[e.base + ya * e.sa + yb * e.sb] += w;
            }
        }
        s * inv_mu
    };
    Some(w * mu * (num - den))
}
