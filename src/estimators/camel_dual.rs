//! CAMEL — constrained approximate maximum-entropy learning (002): maximum entropy over
//! pseudo-marginals π_a, one per factor (the clusters), with moment matching, local consistency
//! on the sepsets and the Bethe entropy (eq. 7). Its dual (eq. 12) for fixed linearisation g is
//!
//! `Σ_m Σ_a [ φ_a(c_a^m) − log Σ_c exp(φ_a(c) + Σ_{e ∋ a} ±δ_e(c_v) − g_a(c)) ] − ‖w‖²/(2σ²)`
//!
//! — a sum of local log-likelihoods like piecewise training (000 eq. 8) plus, per training
//! instance, multipliers δ_e(s) on the consistency features h_e (+1 in the edge's source cluster
//! when it agrees with s, −1 in its target), and g. The cluster graph is Bethe's: the factors
//! holding a variable v are joined by sepsets {v} in a star around v's first factor (d_v − 1
//! sepsets), so Σ_a H(π_a) − Σ_e H(μ_e) is the Bethe entropy (counting number 1 − d_v for v)
//! and on a tree the fixed point is exact ML. (A chain of the same factors is as valid, but on
//! an 8-connected grid its consistency has to travel down paths of eight sepsets: camel0 reached
//! 53.8 % there against the star's 63.4 % at the same iteration budget.)
//!
//! CCCP (Yuille 2002) linearises the convex −Σ_e H(μ_e) at the current beliefs. As 002 §3
//! suggests, each sepset marginal is taken as the mean of its two clusters' marginals and its
//! linearisation split evenly between them: g_a(c) = −½ Σ_{e ∋ a} log μ_e(c_v) (the paper's −1
//! is a constant per cluster and cancels). At a consistent fixed point this is the same as
//! attaching each sepset to one cluster; on loopy grids it halves the swings of g. `camel0`
//! keeps g = 0; `cccp-camel` starts at g = 0 and relinearises until g moves by less than a
//! tolerance; `cccp-camel-empirical` starts g at the empirical marginals, Laplace-smoothed (one
//! conditional instance's empirical marginal is a point mass, whose log is −∞).
//!
//! Fitting: piecewise first (δ = 0), then L-BFGS over w on the dual with δ minimised out
//! (`ProfiledCamel`): every evaluation solves each instance's δ by exact block coordinate
//! descent over the variables' stars, warm-started — the convex message passing that 002's
//! discussion names for this inner loop. Joint L-BFGS over (w, δ) has the same optimum but
//! stalled on loopy grids.
//!
//! Why not the term machinery: δ and g are per-instance offsets on each factor's table, while
//! terms read slot tables that several factors share. CAMEL builds and scatters tables through
//! the model like every estimator, and normalises its clusters itself; its clusters are the
//! `pw` pieces, which the term view shows.
//!
//! Sign note: the Lagrangian of eq. (10) gives π ∝ exp(w·f + δ·h − g) for the g of the update
//! rule; the paper prints "+ g". The tree test (fixed point = exact ML) is what decides it.

pub use crate::estimators::camel::{CamelOptions, CamelVariant};
use crate::graph::{Instance, Model};
use crate::optim::{minimize, Evaluation, IterReport, LbfgsSpec, Objective, Prior, StopReason};
use rayon::prelude::*;
use std::sync::atomic::AtomicBool;

/// A sepset edge of the cluster graph: factors `src` → `dst` share variable `v`.
#[derive(Clone, Copy, Debug)]
struct Sep {
    /// The shared variable.
    var: u32,
    src: u32,
    dst: u32,
    card: u32,
    /// Stride of v in each factor's table.
    src_stride: u32,
    dst_stride: u32,
    /// Start of this edge's δ in the instance's block.
    off: u32,
}

/// One instance's cluster graph.
#[derive(Clone, Debug)]
struct Graph {
    seps: Vec<Sep>,
    /// Per factor, the sepsets it is the source / target of.
    as_src: Vec<Vec<u32>>,
    as_dst: Vec<Vec<u32>>,
    /// Start of each factor's table in the per-factor layout (g, beliefs).
    factor_off: Vec<usize>,
    n_entries: usize,
    n_delta: usize,
    /// Start of this instance's δ block after the weights.
    delta_start: usize,
    /// Per variable with two or more factors, its star's sepsets `seps[a..b]` (the centre is
    /// their common source).
    stars: Vec<(u32, u32)>,
}

fn graph(inst: &Instance) -> Graph {
    let nf = inst.factors.len();
    let mut factor_off = Vec::with_capacity(nf);
    let mut n_entries = 0;
    for f in &inst.factors {
        factor_off.push(n_entries);
        n_entries += inst.slots[f.slot as usize].len as usize;
    }
    let stride_of = |a: u32, v: u32| -> u32 {
        let f = &inst.factors[a as usize];
        let mut stride = 1u32;
        for &u in inst.scope(f).iter().rev() {
            if u == v {
                return stride;
            }
            stride *= inst.card[u as usize];
        }
        unreachable!("v is in the factor's scope")
    };
    let mut seps = vec![];
    let mut stars = vec![];
    let mut off = 0u32;
    for v in 0..inst.n_vars() as u32 {
        let fs = inst.var_factors(v);
        if fs.len() > 1 {
            stars.push((seps.len() as u32, (seps.len() + fs.len() - 1) as u32));
        }
        // A star around v's first factor (its unary factor when it has one): every other
        // factor is one sepset away from it, so consistency does not travel down a path.
        for &f in fs.iter().skip(1) {
            let card = inst.card[v as usize];
            seps.push(Sep {
                var: v,
                src: fs[0],
                dst: f,
                card,
                src_stride: stride_of(fs[0], v),
                dst_stride: stride_of(f, v),
                off,
            });
            off += card;
        }
    }
    let mut as_src = vec![vec![]; nf];
    let mut as_dst = vec![vec![]; nf];
    for (i, s) in seps.iter().enumerate() {
        as_src[s.src as usize].push(i as u32);
        as_dst[s.dst as usize].push(i as u32);
    }
    Graph {
        seps,
        as_src,
        as_dst,
        factor_off,
        n_entries,
        n_delta: off as usize,
        delta_start: 0,
        stars,
    }
}

/// v's state in entry `c` of a table where v has `stride` and `card` states.
#[inline]
fn digit(c: usize, stride: u32, card: u32) -> usize {
    (c / stride as usize) % card as usize
}

/// Calls `f(c, digit(c, stride, card))` for c = 0..len in order, without dividing: the table
/// is blocks of `card · stride` entries, each `stride` runs of one digit. (The δ sweeps spent
/// more time in `digit`'s divisions than in their sums.)
#[inline(always)]
fn for_each_digit(len: usize, stride: u32, card: u32, mut f: impl FnMut(usize, usize)) {
    let (stride, card) = (stride as usize, card as usize);
    let mut c = 0;
    while c < len {
        for d in 0..card {
            for _ in 0..stride {
                f(c, d);
                c += 1;
            }
        }
    }
}

/// The CAMEL dual for fixed g, over x = [w; δ] (δ left out, and held at 0, when `free_delta`
/// is off: the piecewise objective).
pub struct CamelObjective<'a> {
    pub model: &'a Model,
    pub instances: &'a [Instance],
    pub prior: Prior,
    graphs: Vec<Graph>,
    /// Per instance, g in the per-factor layout.
    pub g: Vec<Vec<f64>>,
    pub free_delta: bool,
    n_delta: usize,
    /// The point of the last gradient evaluation and its largest sepset violation, which the
    /// δ gradient holds: the per-iteration report reads it instead of a second pass.
    last: std::sync::Mutex<Option<(Vec<f64>, f64)>>,
    /// The run's threads (`None`: rayon's global pool).
    pool: Option<&'a rayon::ThreadPool>,
}

#[derive(Default)]
struct Scratch {
    phi: Vec<f64>,
    dphi: Vec<f64>,
    cols: Vec<f64>,
    t: Vec<f64>,
    /// Beliefs of every factor of the instance (per-factor layout).
    pi: Vec<f64>,
    grad_w: Vec<f64>,
    /// Cluster log-potentials with g and δ (per-factor layout), for the δ sweeps.
    theta: Vec<f64>,
    /// Per cluster of one star, its log-marginal of the shared variable.
    lm: Vec<f64>,
    /// The same normalised.
    mu: Vec<f64>,
    /// ∂(−value)/∂δ of one instance when the caller keeps no δ gradient.
    gd: Vec<f64>,
}

impl<'a> CamelObjective<'a> {
    pub fn new(model: &'a Model, instances: &'a [Instance], prior: Prior) -> Self {
        let mut graphs: Vec<Graph> = instances.iter().map(graph).collect();
        let mut start = model.n_params;
        for g in &mut graphs {
            g.delta_start = start;
            start += g.n_delta;
        }
        let g = graphs.iter().map(|g| vec![0.0; g.n_entries]).collect();
        CamelObjective {
            model,
            instances,
            prior,
            graphs,
            g,
            free_delta: true,
            n_delta: start - model.n_params,
            last: std::sync::Mutex::new(None),
            pool: None,
        }
    }

    /// Runs the passes, and L-BFGS's vector updates, on `pool` (a run's `--threads`).
    pub fn on_pool(mut self, pool: Option<&'a rayon::ThreadPool>) -> Self {
        self.pool = pool;
        self
    }

    /// Number of consistency multipliers δ over the data set.
    pub fn n_delta(&self) -> usize {
        self.n_delta
    }

    /// One instance at weights `w` and its multipliers `delta` (empty: δ = 0): value, beliefs
    /// into `s.pi`, and (with `grad`) ∂(−value)/∂w into `s.grad_w` and ∂(−value)/∂δ into the
    /// given block. `w` None: `s.phi` already holds the tables (the δ sweeps built them).
    fn instance(
        &self,
        i: usize,
        w: Option<&[f64]>,
        delta: &[f64],
        s: &mut Scratch,
        grad: Option<&mut [f64]>,
        ops: &mut u64,
    ) -> f64 {
        let inst = &self.instances[i];
        let gr = &self.graphs[i];
        let gold = inst.gold.as_deref().expect("checked: gold labels");
        let delta = |e: &Sep, k: usize| -> f64 {
            if delta.is_empty() {
                0.0
            } else {
                delta[e.off as usize + k]
            }
        };
        if let Some(w) = w {
            s.phi.clear();
            s.phi.resize(inst.table_len, 0.0);
            self.model.build_tables(w, inst, &mut s.phi, &mut s.cols);
        }
        s.pi.clear();
        s.pi.resize(gr.n_entries, 0.0);
        let want = grad.is_some();
        if want {
            s.dphi.clear();
            s.dphi.resize(inst.table_len, 0.0);
        }
        let g = &self.g[i];
        let mut value = 0.0;
        for (a, f) in inst.factors.iter().enumerate() {
            let off = inst.table_offset(f);
            let len = inst.slots[f.slot as usize].len as usize;
            let fo = gr.factor_off[a];
            s.t.clear();
            s.t.extend((0..len).map(|c| s.phi[off + c] - g[fo + c]));
            for &e in &gr.as_src[a] {
                let e = &gr.seps[e as usize];
                let t = &mut s.t;
                for_each_digit(len, e.src_stride, e.card, |c, st| t[c] += delta(e, st));
            }
            for &e in &gr.as_dst[a] {
                let e = &gr.seps[e as usize];
                let t = &mut s.t;
                for_each_digit(len, e.dst_stride, e.card, |c, st| t[c] -= delta(e, st));
            }
            let m = s.t.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let mut z = 0.0;
            for (c, &t) in s.t.iter().enumerate() {
                let p = (t - m).exp();
                s.pi[fo + c] = p;
                z += p;
            }
            let inv = 1.0 / z;
            s.pi[fo..fo + len].iter_mut().for_each(|p| *p *= inv);
            let ga = inst.entry(f, gold);
            value += s.phi[off + ga] - (m + z.ln());
            *ops += 2 * len as u64;
            if want {
                for c in 0..len {
                    s.dphi[off + c] -= s.pi[fo + c];
                }
                s.dphi[off + ga] += 1.0;
            }
        }
        if let Some(gd) = grad {
            // ∂(−value)/∂w: minus the table gradient, scattered to the weights.
            self.model
                .scatter(inst, &s.dphi, -1.0, &mut s.grad_w, &mut s.cols);
            if !gd.is_empty() {
                // ∂(−value)/∂δ_e(s) = μ_src(s) − μ_dst(s): the consistency violation.
                for e in &gr.seps {
                    let o = e.off as usize;
                    for k in 0..e.card as usize {
                        gd[o + k] = 0.0;
                    }
                    let (fs, fd) = (gr.factor_off[e.src as usize], gr.factor_off[e.dst as usize]);
                    let ls = inst.slots[inst.factors[e.src as usize].slot as usize].len as usize;
                    let ld = inst.slots[inst.factors[e.dst as usize].slot as usize].len as usize;
                    for_each_digit(ls, e.src_stride, e.card, |c, st| gd[o + st] += s.pi[fs + c]);
                    for_each_digit(ld, e.dst_stride, e.card, |c, st| gd[o + st] -= s.pi[fd + c]);
                }
            }
        }
        value
    }

    /// Minimises the dual over instance `i`'s δ at fixed w by exact block coordinate descent.
    /// A block is one variable's star; since the star's offsets on the clusters sum to zero,
    /// the block minimum makes every cluster's log-marginal of v the mean L(s) of their
    /// current ones — each cluster's table moves by L(s) − lm_a(s). Sweeps until the largest
    /// violation found in a sweep is below `tol`; returns (sweeps, that violation, ops).
    fn solve_delta(
        &self,
        i: usize,
        w: &[f64],
        delta: &mut [f64],
        s: &mut Scratch,
        tol: f64,
        max_sweeps: usize,
    ) -> (usize, f64, u64) {
        let inst = &self.instances[i];
        let gr = &self.graphs[i];
        s.phi.clear();
        s.phi.resize(inst.table_len, 0.0);
        self.model.build_tables(w, inst, &mut s.phi, &mut s.cols);
        let g = &self.g[i];
        s.theta.clear();
        s.theta.resize(gr.n_entries, 0.0);
        for (a, f) in inst.factors.iter().enumerate() {
            let off = inst.table_offset(f);
            let len = inst.slots[f.slot as usize].len as usize;
            let fo = gr.factor_off[a];
            for c in 0..len {
                s.theta[fo + c] = s.phi[off + c] - g[fo + c];
            }
        }
        let len_of = |f: u32| inst.slots[inst.factors[f as usize].slot as usize].len as usize;
        for e in &gr.seps {
            let d = &delta[e.off as usize..(e.off + e.card) as usize];
            for (f, stride, sign) in [(e.src, e.src_stride, 1.0), (e.dst, e.dst_stride, -1.0)] {
                let fo = gr.factor_off[f as usize];
                let t = &mut s.theta[fo..fo + len_of(f)];
                for_each_digit(t.len(), stride, e.card, |c, st| t[c] += sign * d[st]);
            }
        }
        let mut ops = 0u64;
        let mut sweeps = 0;
        let mut worst = f64::INFINITY;
        while sweeps < max_sweeps && worst >= tol {
            sweeps += 1;
            worst = 0.0;
            // (Alternating the direction, as sequential BP does, cost 20–60 % more operations
            // per evaluation on chains and grids: the warm start keeps the updates local.)
            for &(a, b) in &gr.stars {
                let star = &gr.seps[a as usize..b as usize];
                let k = star[0].card as usize;
                let d = star.len() + 1;
                // Cluster 0 is the centre, cluster j the target of star[j − 1].
                let member = |j: usize| {
                    if j == 0 {
                        (star[0].src, star[0].src_stride)
                    } else {
                        (star[j - 1].dst, star[j - 1].dst_stride)
                    }
                };
                s.lm.clear();
                s.lm.resize(d * k, f64::NEG_INFINITY);
                s.mu.clear();
                s.mu.resize(d * k, 0.0);
                for j in 0..d {
                    let (f, stride) = member(j);
                    let (fo, len) = (gr.factor_off[f as usize], len_of(f));
                    let lm = &mut s.lm[j * k..(j + 1) * k];
                    let t = &s.theta[fo..fo + len];
                    for_each_digit(len, stride, k as u32, |c, st| {
                        lm[st] = lm[st].max(t[c]);
                    });
                    s.t.clear();
                    s.t.resize(k, 0.0);
                    for_each_digit(len, stride, k as u32, |c, st| {
                        s.t[st] += (t[c] - lm[st]).exp();
                    });
                    for (l, z) in lm.iter_mut().zip(&s.t) {
                        *l += z.ln();
                    }
                    ops += 2 * len as u64;
                    // Its normalised marginal, for the violation before the update.
                    let m = lm.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    let mu = &mut s.mu[j * k..(j + 1) * k];
                    let mut z = 0.0;
                    for (p, l) in mu.iter_mut().zip(lm.iter()) {
                        *p = (l - m).exp();
                        z += *p;
                    }
                    mu.iter_mut().for_each(|p| *p /= z);
                }
                for j in 1..d {
                    for st in 0..k {
                        worst = worst.max((s.mu[st] - s.mu[j * k + st]).abs());
                    }
                }
                // L(s), the mean log-marginal, into s.t.
                s.t.clear();
                s.t.resize(k, 0.0);
                for j in 0..d {
                    for st in 0..k {
                        s.t[st] += s.lm[j * k + st] / d as f64;
                    }
                }
                for j in 0..d {
                    let (f, stride) = member(j);
                    let fo = gr.factor_off[f as usize];
                    for st in 0..k {
                        s.lm[j * k + st] = s.t[st] - s.lm[j * k + st];
                    }
                    let lm = &s.lm[j * k..(j + 1) * k];
                    let t = &mut s.theta[fo..fo + len_of(f)];
                    for_each_digit(t.len(), stride, k as u32, |c, st| t[c] += lm[st]);
                    // A leaf's offset is −δ; the centre's is the sum of its star's δ.
                    if j > 0 {
                        let o = star[j - 1].off as usize;
                        for st in 0..k {
                            delta[o + st] -= s.lm[j * k + st];
                        }
                    }
                }
            }
        }
        (sweeps, worst, ops)
    }

    /// Sepset marginals of edge `e` from its source and target clusters.
    fn sep_marginals(&self, i: usize, pi: &[f64], e: &Sep) -> (Vec<f64>, Vec<f64>) {
        let inst = &self.instances[i];
        let gr = &self.graphs[i];
        let mut ms = vec![0.0; e.card as usize];
        let mut md = vec![0.0; e.card as usize];
        let (fs, fd) = (gr.factor_off[e.src as usize], gr.factor_off[e.dst as usize]);
        let ls = inst.slots[inst.factors[e.src as usize].slot as usize].len as usize;
        let ld = inst.slots[inst.factors[e.dst as usize].slot as usize].len as usize;
        for c in 0..ls {
            ms[digit(c, e.src_stride, e.card)] += pi[fs + c];
        }
        for c in 0..ld {
            md[digit(c, e.dst_stride, e.card)] += pi[fd + c];
        }
        (ms, md)
    }

    /// Instance `i`'s clusters at x = [w; δ]: each cluster's belief table and, per sepset,
    /// both clusters' marginals of the shared variable.
    pub fn cluster_beliefs(&self, i: usize, x: &[f64]) -> ClusterBeliefs {
        let mut s = Scratch::default();
        let w = &x[..self.model.n_params];
        self.instance(i, Some(w), self.delta_of(i, x), &mut s, None, &mut 0);
        let gr = &self.graphs[i];
        let inst = &self.instances[i];
        let beliefs = (0..inst.factors.len())
            .map(|a| {
                let len = inst.slots[inst.factors[a].slot as usize].len as usize;
                s.pi[gr.factor_off[a]..gr.factor_off[a] + len].to_vec()
            })
            .collect();
        let sepsets = gr
            .seps
            .iter()
            .map(|e| {
                let (mu_src, mu_dst) = self.sep_marginals(i, &s.pi, e);
                SepsetBeliefs {
                    var: e.var,
                    src: e.src,
                    dst: e.dst,
                    mu_src,
                    mu_dst,
                }
            })
            .collect();
        ClusterBeliefs { beliefs, sepsets }
    }

    /// Instance `i`'s δ in x = [w; δ] (empty when x holds w alone or δ is held at 0).
    fn delta_of<'x>(&self, i: usize, x: &'x [f64]) -> &'x [f64] {
        let g = &self.graphs[i];
        if self.free_delta && x.len() > self.model.n_params {
            &x[g.delta_start..g.delta_start + g.n_delta]
        } else {
            &[]
        }
    }

    /// x's δ split per instance.
    pub fn delta_blocks<'x>(&self, x: &'x [f64]) -> Vec<&'x [f64]> {
        let n_w = self.model.n_params;
        self.graphs
            .iter()
            .map(|g| &x[g.delta_start..g.delta_start + g.n_delta])
            .filter(|_| x.len() > n_w)
            .collect()
    }

    /// Beliefs of every factor of every instance at x (per-factor layout).
    pub fn beliefs(&self, x: &[f64]) -> Vec<Vec<f64>> {
        let work = || {
            (0..self.instances.len())
                .into_par_iter()
                .map(|i| {
                    let mut s = Scratch::default();
                    let w = &x[..self.model.n_params];
                    self.instance(i, Some(w), self.delta_of(i, x), &mut s, None, &mut 0);
                    s.pi
                })
                .collect()
        };
        match self.pool {
            Some(pool) => pool.install(work),
            None => work(),
        }
    }

    /// The largest |μ_src(s) − μ_dst(s)| over every sepset of every instance at x.
    pub fn max_violation(&self, x: &[f64]) -> f64 {
        let beliefs = self.beliefs(x);
        let mut worst = 0.0f64;
        for (i, pi) in beliefs.iter().enumerate() {
            for e in &self.graphs[i].seps {
                let (ms, md) = self.sep_marginals(i, pi, e);
                for (a, b) in ms.iter().zip(&md) {
                    worst = worst.max((a - b).abs());
                }
            }
        }
        worst
    }

    /// The largest sepset violation at x: from the last gradient evaluation when it was at x
    /// (the point L-BFGS just accepted), else by a pass over the beliefs.
    pub fn violation_at(&self, x: &[f64]) -> f64 {
        if let Some((lx, v)) = self.last.lock().unwrap().as_ref() {
            if lx.as_slice() == x {
                return *v;
            }
        }
        self.max_violation(x)
    }

    /// CCCP: relinearises g at the beliefs of x; returns the largest change of g.
    pub fn relinearise(&mut self, x: &[f64]) -> f64 {
        let beliefs = self.beliefs(x);
        let mut change = 0.0f64;
        for (i, pi) in beliefs.iter().enumerate() {
            let new = self.linearisation(i, |e| {
                let (a, b) = self.sep_marginals(i, pi, e);
                a.iter().zip(&b).map(|(x, y)| 0.5 * (x + y)).collect()
            });
            for (old, n) in self.g[i].iter_mut().zip(new) {
                change = change.max((*old - n).abs());
                *old = n;
            }
        }
        change
    }

    /// g at the empirical marginals with one pseudo-count per state (Laplace).
    pub fn linearise_at_empirical(&mut self) {
        for i in 0..self.instances.len() {
            let inst = &self.instances[i];
            let gold = inst.gold.as_deref().expect("checked: gold labels");
            let new = self.linearisation(i, |e| {
                let f = &inst.factors[e.src as usize];
                let y = inst.entry(f, gold) / e.src_stride as usize % e.card as usize;
                let n = e.card as f64;
                (0..e.card as usize)
                    .map(|s| ((s == y) as u8 as f64 + 1.0) / (1.0 + n))
                    .collect()
            });
            self.g[i] = new;
        }
    }

    /// g_a(c) = −½ Σ_{e ∋ a} log μ_e(c_v) for sepset marginals `mu(e)`.
    fn linearisation(&self, i: usize, mu: impl Fn(&Sep) -> Vec<f64>) -> Vec<f64> {
        let inst = &self.instances[i];
        let gr = &self.graphs[i];
        let mut g = vec![0.0; gr.n_entries];
        for e in &gr.seps {
            let m = mu(e);
            for (f, stride) in [(e.src, e.src_stride), (e.dst, e.dst_stride)] {
                let fo = gr.factor_off[f as usize];
                let len = inst.slots[inst.factors[f as usize].slot as usize].len as usize;
                for c in 0..len {
                    g[fo + c] -= 0.5 * m[digit(c, stride, e.card)].max(1e-300).ln();
                }
            }
        }
        g
    }
}

/// What one pass over the instances returns.
struct Pass {
    value: f64,
    ops: u64,
    /// Σ over instances of ∂(−value)/∂w (no prior); empty without a gradient.
    grad_w: Vec<f64>,
    /// Largest |μ_src − μ_dst| (0 without a gradient or δ).
    violation: f64,
    /// Instances whose δ sweeps stopped at the cap.
    unconverged: u64,
}

impl CamelObjective<'_> {
    /// A buffer over every instance's δ (or empty) split into per-instance blocks.
    fn blocks<'d>(&self, mut rest: &'d mut [f64]) -> Vec<&'d mut [f64]> {
        let mut blocks = Vec::with_capacity(self.instances.len());
        for g in &self.graphs {
            let (b, r) = rest.split_at_mut(if rest.is_empty() { 0 } else { g.n_delta });
            blocks.push(b);
            rest = r;
        }
        blocks
    }

    /// One parallel pass: per instance, the tables of w; with `solve` = (tolerance, cap) its
    /// δ block swept in place first; then its clusters' values and, with `grad`, the gradient
    /// in w and ∂(−value)/∂δ into `grad_delta` (or a scratch block), whose largest entry is
    /// the violation. `delta` holds every instance's δ (empty: δ = 0). One range of instances
    /// per thread, each summed in order and the ranges in order: the same bits on every run
    /// with the same threads (rayon's fold would split by work-stealing).
    fn pass(
        &self,
        w: &[f64],
        delta: &mut [f64],
        solve: Option<(f64, usize)>,
        grad: bool,
        grad_delta: Option<&mut [f64]>,
    ) -> Pass {
        let n_w = self.model.n_params;
        let threads = self
            .pool
            .map_or_else(rayon::current_num_threads, |p| p.current_num_threads());
        let ranges = super::objective::balanced_ranges(self.instances, threads);
        let mut gd_blocks = grad_delta.map(|gd| self.blocks(gd).into_iter());
        let mut d_blocks = self.blocks(delta).into_iter();
        type Item<'d> = (usize, &'d mut [f64], Option<&'d mut [f64]>);
        let groups: Vec<Vec<Item>> = ranges
            .into_iter()
            .map(|r| {
                r.map(|i| {
                    let gd = gd_blocks.as_mut().and_then(|b| b.next());
                    (i, d_blocks.next().expect("one δ block per instance"), gd)
                })
                .collect()
            })
            .collect();
        let work = || -> Vec<Pass> {
            groups
                .into_par_iter()
                .map(|group| {
                    let (mut p, mut s) = (zero_pass(), Scratch::default());
                    for (i, d, gd) in group {
                        self.pass_instance(i, w, d, gd, solve, grad, &mut s, &mut p);
                    }
                    if grad {
                        p.grad_w = std::mem::take(&mut s.grad_w);
                        p.grad_w.resize(n_w, 0.0);
                    }
                    p
                })
                .collect()
        };
        let parts = match self.pool {
            Some(pool) => pool.install(work),
            None => work(),
        };
        parts.into_iter().fold(zero_pass(), |mut a, b| {
            if a.grad_w.len() < b.grad_w.len() {
                a.grad_w = vec![0.0; b.grad_w.len()];
            }
            a.grad_w
                .iter_mut()
                .zip(&b.grad_w)
                .for_each(|(x, y)| *x += y);
            a.value += b.value;
            a.ops += b.ops;
            a.violation = a.violation.max(b.violation);
            a.unconverged += b.unconverged;
            a
        })
    }

    /// Instance `i` of a pass, added into `p` (its w gradient into `s.grad_w`).
    #[allow(clippy::too_many_arguments)]
    fn pass_instance(
        &self,
        i: usize,
        w: &[f64],
        d: &mut [f64],
        gd: Option<&mut [f64]>,
        solve: Option<(f64, usize)>,
        grad: bool,
        s: &mut Scratch,
        p: &mut Pass,
    ) {
        // The sweeps build the tables; else `instance` does.
        let mut tables_of = Some(w);
        if let Some((tol, cap)) = solve {
            let (_, worst, ops) = self.solve_delta(i, w, d, s, tol, cap);
            p.ops += ops;
            p.unconverged += (worst >= tol) as u64;
            tables_of = None;
        }
        if grad && s.grad_w.len() != self.model.n_params {
            s.grad_w = vec![0.0; self.model.n_params];
        }
        let mut gd_scratch = std::mem::take(&mut s.gd);
        let gd: Option<&mut [f64]> = match (grad, gd) {
            (false, _) => None,
            (true, Some(b)) => Some(b),
            (true, None) => {
                gd_scratch.clear();
                gd_scratch.resize(d.len(), 0.0);
                Some(&mut gd_scratch)
            }
        };
        let mut ops = 0;
        let (val, viol) = match gd {
            Some(gd) => {
                let v = self.instance(i, tables_of, d, s, Some(&mut *gd), &mut ops);
                (v, gd.iter().fold(0.0f64, |m, g| m.max(g.abs())))
            }
            None => (self.instance(i, tables_of, d, s, None, &mut ops), 0.0),
        };
        s.gd = gd_scratch;
        p.value += val;
        p.ops += ops;
        p.violation = p.violation.max(viol);
    }
}

fn zero_pass() -> Pass {
    Pass {
        value: 0.0,
        ops: 0,
        grad_w: vec![],
        violation: 0.0,
        unconverged: 0,
    }
}

/// −value + prior, and the prior's gradient added to `grad` (which holds Σ ∂(−value)/∂w).
fn with_prior(prior: &Prior, w: &[f64], p: &Pass, grad: Option<&mut [f64]>) -> Evaluation {
    if let Some(g) = grad {
        let inv_s2 = prior.sigma2.map(|s| 1.0 / s).unwrap_or(0.0);
        for ((g, s), &wj) in g.iter_mut().zip(&p.grad_w).zip(w) {
            *g = s + wj * inv_s2;
        }
    }
    Evaluation {
        objective: -p.value + prior.penalty(w),
        value: p.value,
        ops: p.ops,
        unconverged: p.unconverged,
    }
}

impl Objective for CamelObjective<'_> {
    fn pool(&self) -> Option<&rayon::ThreadPool> {
        self.pool
    }
    fn n_params(&self) -> usize {
        self.model.n_params + if self.free_delta { self.n_delta } else { 0 }
    }

    fn evaluate(&self, x: &[f64], grad: Option<&mut [f64]>) -> Evaluation {
        let n_w = self.model.n_params;
        let (w, d) = x.split_at(n_w);
        // The pass takes δ mutably (the profiled dual sweeps it); here it is only read.
        let mut delta = d.to_vec();
        let want = grad.is_some();
        let (gw, gd) = match grad {
            Some(g) => {
                let (gw, gd) = g.split_at_mut(n_w);
                (Some(gw), Some(gd))
            }
            None => (None, None),
        };
        let p = self.pass(w, &mut delta, None, want, gd);
        if want && self.free_delta {
            *self.last.lock().unwrap() = Some((x.to_vec(), p.violation));
        }
        with_prior(&self.prior, w, &p, gw)
    }
}

/// The CAMEL dual with δ minimised out, f(w) = min_δ D(w, δ): convex in w like D, and by the
/// envelope theorem ∇f(w) = ∂_w D(w, δ*(w)). L-BFGS then works on the < 100 weights while the
/// (often 10⁵) multipliers are solved per instance by exact block coordinate descent
/// (`solve_delta`), warm-started from the previous evaluation. Same optimum as a joint L-BFGS
/// over (w, δ), which on loopy grids stalled with violations of 0.2–0.6 after 1,000 iterations.
pub struct ProfiledCamel<'o, 'a> {
    pub dual: &'o CamelObjective<'a>,
    delta: std::sync::Mutex<Vec<f64>>,
    tol: f64,
    max_sweeps: usize,
    /// The weights of the last evaluation and the sepset violation there.
    last: std::sync::Mutex<Option<(Vec<f64>, f64)>>,
}

impl<'o, 'a> ProfiledCamel<'o, 'a> {
    /// `delta`: the starting multipliers (all instances); `tol`: the largest sepset violation
    /// the δ sweeps leave; `max_sweeps`: their cap per evaluation and instance.
    pub fn new(dual: &'o CamelObjective<'a>, delta: Vec<f64>, tol: f64, max_sweeps: usize) -> Self {
        assert_eq!(delta.len(), dual.n_delta(), "one δ per sepset state");
        ProfiledCamel {
            dual,
            delta: std::sync::Mutex::new(delta),
            tol,
            max_sweeps,
            last: std::sync::Mutex::new(None),
        }
    }

    /// The multipliers of the last evaluation.
    pub fn into_delta(self) -> Vec<f64> {
        self.delta.into_inner().unwrap()
    }

    /// The largest sepset violation at w (from the last evaluation when it was at w).
    pub fn violation_at(&self, w: &[f64]) -> f64 {
        if let Some((lw, v)) = self.last.lock().unwrap().as_ref() {
            if lw.as_slice() == w {
                return *v;
            }
        }
        self.evaluate(w, None);
        self.last.lock().unwrap().as_ref().map_or(f64::NAN, |l| l.1)
    }
}

impl Objective for ProfiledCamel<'_, '_> {
    fn pool(&self) -> Option<&rayon::ThreadPool> {
        self.dual.pool
    }
    fn n_params(&self) -> usize {
        self.dual.model.n_params
    }

    fn evaluate(&self, w: &[f64], grad: Option<&mut [f64]>) -> Evaluation {
        let dual = self.dual;
        if !w.iter().all(|v| v.is_finite()) {
            // A failed line-search step: keep the warm start intact.
            return Evaluation {
                objective: f64::NAN,
                value: f64::NAN,
                ..Evaluation::default()
            };
        }
        let mut delta = self.delta.lock().unwrap();
        // Always with the gradient: its δ part is the violation the report shows.
        let p = dual.pass(w, &mut delta, Some((self.tol, self.max_sweeps)), true, None);
        drop(delta);
        *self.last.lock().unwrap() = Some((w.to_vec(), p.violation));
        with_prior(&dual.prior, w, &p, grad)
    }
}

/// One instance's clusters as CAMEL sees them ("what the constraints buy", 002 §2).
#[derive(Clone, Debug)]
pub struct ClusterBeliefs {
    /// Per factor (cluster), its belief table.
    pub beliefs: Vec<Vec<f64>>,
    pub sepsets: Vec<SepsetBeliefs>,
}

/// A sepset {var} between clusters `src` and `dst`, with each one's marginal of `var`.
#[derive(Clone, Debug)]
pub struct SepsetBeliefs {
    pub var: u32,
    pub src: u32,
    pub dst: u32,
    pub mu_src: Vec<f64>,
    pub mu_dst: Vec<f64>,
}

impl SepsetBeliefs {
    /// max_s |μ_src(s) − μ_dst(s)|.
    pub fn violation(&self) -> f64 {
        self.mu_src
            .iter()
            .zip(&self.mu_dst)
            .fold(0.0, |m, (a, b)| m.max((a - b).abs()))
    }
}

impl ClusterBeliefs {
    pub fn max_violation(&self) -> f64 {
        self.sepsets
            .iter()
            .map(|s| s.violation())
            .fold(0.0, f64::max)
    }
}

/// CAMEL's record of a run: the variant, its fits, and δ and g per training item.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct CamelRecord {
    pub variant: CamelVariant,
    pub options: CamelOptions,
    pub fits: Vec<OuterLoop>,
    /// Per training instance, its multipliers δ (sepsets in order, states within).
    pub delta: Vec<Vec<f64>>,
    /// Per training instance, the linearisation g (factors in order, table entries within).
    pub g: Vec<Vec<f64>>,
}

/// One inner optimisation: which phase, its iterations, and the state after it.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct OuterLoop {
    /// `piecewise` (δ held at 0), then `camel` fits, one per linearisation.
    pub phase: String,
    pub iterations: usize,
    /// Largest |μ_src − μ_dst| over the sepsets after the fit.
    pub violation: f64,
    /// Largest change of g at the relinearisation that followed (CCCP only).
    pub g_change: Option<f64>,
}

pub struct CamelResult {
    /// [w; δ].
    pub x: Vec<f64>,
    pub loops: Vec<OuterLoop>,
    pub reason: StopReason,
}

/// Sees each inner iteration: the fit's index, the report, the weights w, the sepset violation.
pub type FitObserver<'o> = dyn FnMut(usize, &IterReport, &[f64], f64) + 'o;

/// Fits CAMEL (002 §3): piecewise first (δ = 0, g = 0), then the CAMEL dual with δ free; for
/// CCCP, relinearise g and refit until g settles. `observer` sees every inner iteration with the
/// index of the fit it belongs to and the largest sepset violation (NaN in the piecewise fit,
/// where δ is held at 0).
pub fn fit(
    obj: &mut CamelObjective,
    variant: CamelVariant,
    w0: Vec<f64>,
    opts: &CamelOptions,
    lbfgs: &LbfgsSpec,
    cancel: &AtomicBool,
    observer: &mut FitObserver,
) -> crate::error::Result<CamelResult> {
    let mut loops = vec![];
    obj.free_delta = false;
    let r = {
        let o: &CamelObjective = obj;
        minimize(o, w0, lbfgs, cancel, &mut |rep, x| {
            observer(0, rep, x, f64::NAN)
        })?
    };
    loops.push(OuterLoop {
        phase: "piecewise".into(),
        iterations: r.iterations,
        violation: f64::NAN,
        g_change: None,
    });
    obj.free_delta = true;
    let mut w = r.theta;
    let mut delta = vec![0.0; obj.n_delta()];
    let mut x: Vec<f64> = w.iter().chain(&delta).copied().collect();
    loops[0].violation = obj.max_violation(&x);
    if variant == CamelVariant::CccpEmpirical {
        obj.linearise_at_empirical();
    }
    let mut reason = r.reason;
    for k in 1.. {
        let (r, d, violation) = {
            let profiled = ProfiledCamel::new(obj, delta, opts.sweep_tol, opts.max_sweeps);
            let r = minimize(&profiled, w, lbfgs, cancel, &mut |rep, w| {
                observer(k, rep, w, profiled.violation_at(w))
            })?;
            let violation = profiled.violation_at(&r.theta);
            (r, profiled.into_delta(), violation)
        };
        w = r.theta;
        delta = d;
        x = w.iter().chain(&delta).copied().collect();
        reason = r.reason;
        let mut l = OuterLoop {
            phase: "camel".into(),
            iterations: r.iterations,
            violation,
            g_change: None,
        };
        if variant == CamelVariant::Camel0 || reason == StopReason::Cancelled {
            loops.push(l);
            break;
        }
        let fitted = obj.g.clone();
        let change = obj.relinearise(&x);
        l.g_change = Some(change);
        loops.push(l);
        if change < opts.tol || k >= opts.max_outer {
            // Keep the g that δ was fitted with: the stored (w, δ, g) are consistent.
            obj.g = fitted;
            break;
        }
    }
    Ok(CamelResult { x, loops, reason })
}

#[cfg(test)]
mod tests {
    use super::{digit, for_each_digit};

    #[test]
    fn for_each_digit_visits_every_entry_in_order_with_its_digit() {
        // (cards of the factor's variables, the position of the shared one)
        for (cards, at) in [
            (vec![3u32], 0),
            (vec![3, 4], 0),
            (vec![3, 4], 1),
            (vec![2, 5, 3], 1),
            (vec![2, 5, 3], 2),
            (vec![2, 5, 3], 0),
        ] {
            // Row-major with the last variable fastest, as the factor tables are.
            let len: u32 = cards.iter().product();
            let stride: u32 = cards[at + 1..].iter().product();
            let mut seen = vec![];
            for_each_digit(len as usize, stride, cards[at], |c, d| seen.push((c, d)));
            let want: Vec<(usize, usize)> = (0..len as usize)
                .map(|c| (c, digit(c, stride, cards[at])))
                .collect();
            assert_eq!(seen, want, "cards {cards:?}, variable {at}");
        }
    }
}
