//! Loopy belief propagation on any factor graph: sum-product and max-product in log space, with
//! damping, three schedules (parallel/flooding, sequential, residual — Elidan et al. 2006), a
//! tolerance and a sweep limit, and a report of how it ended. It returns variable and factor
//! beliefs and the Bethe free energy (whose negative estimates log Z).
//!
//! Messages live in a [`BpMessages`] the caller owns, so training keeps one per instance and
//! warm-starts it at the next optimiser step (002 §4); scratch lives in a reusable [`BpWork`].
//! On a forest BP is exact: sum-product beliefs are the marginals, −F_Bethe is log Z and
//! max-product decoding is MAP. It knows nothing about estimators.
//!
//! Conventions: a message `m_{a→v}` is stored as a log vector normalised to log Σ exp = 0
//! (sum-product) or max = 0 (max-product), floored at [`MSG_FLOOR`] so that the variable sums
//! `Σ_a log m_{a→v}` can be updated by subtraction. The residual of an update is the largest
//! change of any *log* message entry (the dynamic range of Elidan et al.): in probability space
//! a tiny entry could move by orders of magnitude and look converged while a strong factor
//! downstream multiplies it back up. Damping `d` mixes log messages, `(1 − d)·new + d·old`.

use crate::graph::Instance;
use crate::util::next_assignment;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Lower bound on a normalised log message: e^−700 ≈ 1e−304 is zero for every purpose, and a
/// finite floor keeps `sum − own message` exact where a message has (near-)zero entries.
pub const MSG_FLOOR: f64 = -700.0;

/// Order of message updates.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum Schedule {
    /// Flooding: every message from the previous sweep's messages at once.
    Parallel,
    /// Factor by factor, each using the newest messages (Gauss–Seidel), alternating forward
    /// and backward over the factors.
    #[default]
    Sequential,
    /// Residual BP (Elidan, McGraw & Koller 2006): always the message that would change most.
    Residual,
}

impl Schedule {
    pub const NAMES: &'static [&'static str] = &["parallel", "sequential", "residual"];
    pub fn name(&self) -> &'static str {
        match self {
            Schedule::Parallel => "parallel",
            Schedule::Sequential => "sequential",
            Schedule::Residual => "residual",
        }
    }
}

/// BP knobs (stored in run specs).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct BpOptions {
    pub schedule: Schedule,
    /// Weight of the old message in each update, in [0, 1).
    pub damping: f64,
    /// Converged when no log message entry changes by more than this.
    pub tol: f64,
    /// Sweep limit; a sweep is one update of every message (for `residual`, as many updates).
    pub max_sweeps: usize,
}

impl Default for BpOptions {
    fn default() -> Self {
        BpOptions {
            schedule: Schedule::Sequential,
            damping: 0.0,
            tol: 1e-8,
            max_sweeps: 200,
        }
    }
}

impl BpOptions {
    pub fn check(&self) -> crate::Result<()> {
        if !(0.0..1.0).contains(&self.damping) {
            return Err(crate::Error::invalid(format!(
                "BP damping must be in [0, 1), got {}",
                self.damping
            )));
        }
        if self.tol.is_nan() || self.tol <= 0.0 {
            return Err(crate::Error::invalid("BP tolerance must be positive"));
        }
        if self.max_sweeps == 0 {
            return Err(crate::Error::invalid("BP needs at least one sweep"));
        }
        Ok(())
    }
}

/// Which semiring the messages are computed in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Semiring {
    /// Marginals and log Z.
    #[default]
    SumProduct,
    /// Max-marginals and MAP.
    MaxProduct,
}

/// How a BP call ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BpReport {
    /// Sweeps run (for `residual`: updates / messages, rounded up).
    pub sweeps: usize,
    /// Largest change of a log message entry in the last sweep.
    pub residual: f64,
    pub converged: bool,
    /// Counted multiply-adds.
    pub ops: u64,
}

/// The messages of one instance; keep it to warm-start the next call on the same graph.
#[derive(Clone, Debug, Default)]
pub struct BpMessages {
    /// `log m_{a→v}`, one block per factor-graph edge (flat scope index).
    msg: Vec<f64>,
    msg_off: Vec<u32>,
    /// `Σ_a log m_{a→v}`, one block per variable.
    sum: Vec<f64>,
    var_off: Vec<u32>,
    /// Per variable, the edges into it: `var_edges[var_edge_ptr[v]..var_edge_ptr[v + 1]]`.
    var_edges: Vec<u32>,
    var_edge_ptr: Vec<u32>,
    /// Factor and variable of each edge.
    edge_factor: Vec<u32>,
    edge_var: Vec<u32>,
    semiring: Option<Semiring>,
    shape: (usize, usize, usize),
}

/// `exp(φ − max φ)` of every table read by a pairwise factor, and its shift, computed once per
/// call: pairwise messages are then matrix–vector products in probability space (L exps and L
/// logs per message instead of L² exps), falling back to log space when a sum underflows.
#[derive(Clone, Debug, Default)]
struct Scaled {
    exp: Vec<f64>,
    shift: Vec<f64>,
}

impl Scaled {
    fn prepare(&mut self, inst: &Instance, phi: &[f64]) {
        self.exp.clear();
        self.exp.resize(inst.table_len, 0.0);
        self.shift.clear();
        self.shift.resize(inst.slots.len(), f64::NAN);
        for f in &inst.factors {
            let s = f.slot as usize;
            if inst.scope(f).len() != 2 || !self.shift[s].is_nan() {
                continue;
            }
            let r = inst.table_offset(f)..inst.table_offset(f) + inst.slots[s].len as usize;
            let m = phi[r.clone()]
                .iter()
                .copied()
                .fold(f64::NEG_INFINITY, f64::max);
            self.shift[s] = m;
            if m.is_finite() {
                crate::util::exp_shifted_into(&phi[r.clone()], m, &mut self.exp[r]);
            }
        }
    }
}

/// Reusable scratch for one thread.
#[derive(Clone, Debug, Default)]
pub struct BpWork {
    scaled: Scaled,
    xa: Vec<f64>,
    xb: Vec<f64>,
    new: Vec<f64>,
    out: Vec<f64>,
    nin: Vec<f64>,
    nin_off: Vec<usize>,
    scores: Vec<f64>,
    acc: Vec<f64>,
    digits: Vec<u32>,
    card: Vec<u32>,
    residual: Vec<f64>,
    version: Vec<u32>,
    heap: BinaryHeap<Candidate>,
}

#[derive(Clone, Copy, Debug)]
struct Candidate {
    residual: f64,
    edge: u32,
    version: u32,
}
impl PartialEq for Candidate {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Candidate {}
impl PartialOrd for Candidate {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Candidate {
    fn cmp(&self, o: &Self) -> Ordering {
        self.residual
            .total_cmp(&o.residual)
            .then(o.edge.cmp(&self.edge))
            .then(self.version.cmp(&o.version))
    }
}

impl BpMessages {
    /// Lays out the messages for `inst` (keeping them when the graph's shape is unchanged) and
    /// resets them to uniform when cold or when the semiring changes.
    fn prepare(&mut self, inst: &Instance, semiring: Semiring) {
        let shape = (inst.n_vars(), inst.factors.len(), inst.n_edges());
        if self.shape != shape || self.msg_off.is_empty() {
            self.shape = shape;
            self.msg_off.clear();
            self.edge_factor.clear();
            self.edge_factor.resize(inst.n_edges(), 0);
            self.edge_var.clear();
            self.edge_var.resize(inst.n_edges(), 0);
            let mut off = vec![0u32; inst.n_edges() + 1];
            for (fi, f) in inst.factors.iter().enumerate() {
                for (e, &v) in inst.scope_range(f).zip(inst.scope(f)) {
                    off[e + 1] = inst.card[v as usize];
                    self.edge_factor[e] = fi as u32;
                    self.edge_var[e] = v;
                }
            }
            for e in 0..inst.n_edges() {
                off[e + 1] += off[e];
            }
            self.msg_off = off;
            self.var_off.clear();
            self.var_off.push(0);
            for &c in &inst.card {
                self.var_off.push(self.var_off.last().unwrap() + c);
            }
            self.var_edges.clear();
            self.var_edge_ptr.clear();
            self.var_edge_ptr.push(0);
            for v in 0..inst.n_vars() as u32 {
                for &fi in inst.var_factors(v) {
                    let f = &inst.factors[fi as usize];
                    for (e, &u) in inst.scope_range(f).zip(inst.scope(f)) {
                        if u == v {
                            self.var_edges.push(e as u32);
                        }
                    }
                }
                self.var_edge_ptr.push(self.var_edges.len() as u32);
            }
            self.semiring = None;
        }
        if self.semiring != Some(semiring) {
            self.semiring = Some(semiring);
            self.msg.clear();
            for e in 0..inst.n_edges() {
                let len = self.msg_off[e + 1] - self.msg_off[e];
                let u = match semiring {
                    Semiring::SumProduct => -(len as f64).ln(),
                    Semiring::MaxProduct => 0.0,
                };
                self.msg.extend(std::iter::repeat_n(u, len as usize));
            }
            self.sum.clear();
            self.sum.resize(*self.var_off.last().unwrap() as usize, 0.0);
        }
    }

    /// The log message on factor-graph edge `e` (flat scope index), normalised.
    pub fn message(&self, e: usize) -> &[f64] {
        &self.msg[self.edge(e)]
    }

    /// A unary factor's message is its own normalised table whatever the other messages are
    /// (evidence, in pgmax's and the textbook's terms): set it at the start of every call, so
    /// the first sweep already sees it and a warm start sees the new potentials.
    fn set_unary(&mut self, inst: &Instance, phi: &[f64], semiring: Semiring) {
        for fac in &inst.factors {
            if inst.scope(fac).len() == 1 {
                let e = inst.scope_range(fac).start;
                let r = self.edge(e);
                self.msg[r.clone()].copy_from_slice(inst.table(fac, phi));
                normalise(&mut self.msg[r], semiring);
            }
        }
    }

    /// Forgets the messages: the next call starts cold (uniform).
    pub fn reset(&mut self) {
        self.semiring = None;
    }

    fn edge(&self, e: usize) -> std::ops::Range<usize> {
        self.msg_off[e] as usize..self.msg_off[e + 1] as usize
    }
    fn var(&self, v: usize) -> std::ops::Range<usize> {
        self.var_off[v] as usize..self.var_off[v + 1] as usize
    }

    /// Recomputes every variable's sum of incoming log messages (exact; no drift).
    fn resum(&mut self) {
        self.sum.fill(0.0);
        for v in 0..self.var_off.len() - 1 {
            let r = self.var(v);
            for &e in
                &self.var_edges[self.var_edge_ptr[v] as usize..self.var_edge_ptr[v + 1] as usize]
            {
                let m = self.edge(e as usize);
                for (s, &x) in self.sum[r.clone()].iter_mut().zip(&self.msg[m]) {
                    *s += x;
                }
            }
        }
    }

    /// Variable `v`'s belief (normalised to sum 1; for max-product, its max-marginal so scaled).
    pub fn var_belief(&self, v: usize, out: &mut Vec<f64>) {
        out.clear();
        out.extend_from_slice(&self.sum[self.var(v)]);
        softmax_in_place(out);
    }

    /// Factor `f`'s belief `b_a(y_a) ∝ exp(φ_a(y_a) + Σ_{v∈a} log n_{v→a}(y_v))`, row-major over
    /// its scope, normalised to sum 1.
    pub fn factor_belief(
        &self,
        inst: &Instance,
        phi: &[f64],
        f: usize,
        work: &mut BpWork,
        out: &mut Vec<f64>,
    ) {
        let fac = &inst.factors[f];
        self.incoming(inst, f, work);
        let tab = inst.table(fac, phi);
        out.clear();
        out.extend_from_slice(tab);
        let k = inst.scope(fac).len();
        work.card.clear();
        work.card
            .extend(inst.scope(fac).iter().map(|&v| inst.card[v as usize]));
        work.digits.clear();
        work.digits.resize(k, 0);
        for o in out.iter_mut() {
            for i in 0..k {
                *o += work.nin[work.nin_off[i] + work.digits[i] as usize];
            }
            next_assignment(&mut work.digits, &work.card);
        }
        softmax_in_place(out);
    }

    /// The Bethe free energy at the current beliefs,
    /// `F = Σ_a Σ_{y_a} b_a (ln b_a − φ_a) − Σ_v (d_v − 1) Σ_{y_v} b_v ln b_v`;
    /// `−F` is BP's estimate of log Z (exact on a forest at convergence).
    pub fn bethe_free_energy(&self, inst: &Instance, phi: &[f64], work: &mut BpWork) -> f64 {
        self.bethe_and_expectations(inst, phi, None, work)
    }

    /// [`bethe_free_energy`](Self::bethe_free_energy), adding `scale · b_a(y_a)` into `dphi`
    /// (table-buffer layout) for every factor from the same pass over the factor beliefs (the
    /// belief expectations of the `bp` gradient).
    pub fn bethe_and_expectations(
        &self,
        inst: &Instance,
        phi: &[f64],
        mut expectations: Option<(&mut [f64], f64)>,
        work: &mut BpWork,
    ) -> f64 {
        let mut b = std::mem::take(&mut work.out);
        let mut f_energy = 0.0;
        for (f, fac) in inst.factors.iter().enumerate() {
            self.factor_belief(inst, phi, f, work, &mut b);
            for (&p, &x) in b.iter().zip(inst.table(fac, phi)) {
                if p > 0.0 {
                    f_energy += p * (p.ln() - x);
                }
            }
            if let Some((dphi, scale)) = expectations.as_mut() {
                let off = inst.table_offset(fac);
                for (d, &p) in dphi[off..off + b.len()].iter_mut().zip(&b) {
                    *d += *scale * p;
                }
            }
        }
        for v in 0..inst.n_vars() {
            let d = inst.var_factors(v as u32).len() as f64;
            self.var_belief(v, &mut b);
            let neg_h: f64 = b.iter().filter(|&&p| p > 0.0).map(|&p| p * p.ln()).sum();
            f_energy -= (d - 1.0) * neg_h;
        }
        work.out = b;
        f_energy
    }

    /// A most probable assignment read off max-product messages: variables are visited
    /// breadth-first through their factors and each factor, conditioned on the variables already
    /// assigned, takes its best entry. Exact MAP on a forest once BP has converged; on loopy
    /// graphs the usual decoding from max-marginals, made consistent along the visit.
    pub fn decode(&self, inst: &Instance, phi: &[f64], work: &mut BpWork) -> Vec<u32> {
        let n = inst.n_vars();
        let mut y: Vec<Option<u32>> = vec![None; n];
        let mut done = vec![false; inst.factors.len()];
        let mut queue = std::collections::VecDeque::new();
        let mut b = Vec::new();
        for root in 0..n {
            if y[root].is_some() {
                continue;
            }
            self.var_belief(root, &mut b);
            y[root] = Some(argmax(&b) as u32);
            queue.push_back(root as u32);
            while let Some(u) = queue.pop_front() {
                for &f in inst.var_factors(u) {
                    if std::mem::replace(&mut done[f as usize], true) {
                        continue;
                    }
                    let fac = &inst.factors[f as usize];
                    let scope = inst.scope(fac);
                    self.factor_belief(inst, phi, f as usize, work, &mut b);
                    work.card.clear();
                    work.card
                        .extend(scope.iter().map(|&v| inst.card[v as usize]));
                    work.digits.clear();
                    work.digits.resize(scope.len(), 0);
                    let (mut best, mut best_digits) = (f64::NEG_INFINITY, vec![0u32; scope.len()]);
                    for &p in &b {
                        let fits = scope
                            .iter()
                            .zip(&work.digits)
                            .all(|(&v, &d)| y[v as usize].is_none_or(|g| g == d));
                        if fits && p > best {
                            best = p;
                            best_digits.copy_from_slice(&work.digits);
                        }
                        next_assignment(&mut work.digits, &work.card);
                    }
                    for (&v, &d) in scope.iter().zip(&best_digits) {
                        if y[v as usize].is_none() {
                            y[v as usize] = Some(d);
                            queue.push_back(v);
                        }
                    }
                }
            }
        }
        y.into_iter().map(|v| v.unwrap_or(0)).collect()
    }

    /// Fills `work.nin` with `log n_{v→a}` for each variable of factor `f`:
    /// the variable's sum of incoming messages less the factor's own.
    fn incoming(&self, inst: &Instance, f: usize, work: &mut BpWork) {
        let fac = &inst.factors[f];
        work.nin.clear();
        work.nin_off.clear();
        for (e, &v) in inst.scope_range(fac).zip(inst.scope(fac)) {
            work.nin_off.push(work.nin.len());
            let (m, s) = (&self.msg[self.edge(e)], &self.sum[self.var(v as usize)]);
            work.nin.extend(s.iter().zip(m).map(|(&s, &m)| s - m));
        }
    }

    /// Factor `f`'s outgoing messages, normalised, into `work.out` (its edges' blocks in order).
    #[allow(clippy::too_many_arguments)]
    fn compute_factor(
        &self,
        inst: &Instance,
        phi: &[f64],
        f: usize,
        semiring: Semiring,
        scaled: &Scaled,
        work: &mut BpWork,
    ) -> u64 {
        let fac = &inst.factors[f];
        let scope = inst.scope(fac);
        let tab = inst.table(fac, phi);
        let k = scope.len();
        work.out.clear();
        let mut ops = 0u64;
        if k == 1 {
            work.out.extend_from_slice(tab);
            normalise(&mut work.out, semiring);
            return tab.len() as u64;
        }
        self.incoming(inst, f, work);
        if k == 2
            && scaled
                .shift
                .get(fac.slot as usize)
                .is_some_and(|m| m.is_finite())
        {
            let off = inst.table_offset(fac);
            let e = &scaled.exp[off..off + tab.len()];
            if pair_scaled(work, e, scope.len(), semiring) {
                return 2 * tab.len() as u64;
            }
            work.out.clear();
        }
        let BpWork {
            out,
            nin,
            nin_off,
            scores,
            digits,
            card,
            acc,
            ..
        } = work;
        if k == 2 {
            let (l0, l1) = (
                inst.card[scope[0] as usize] as usize,
                inst.card[scope[1] as usize] as usize,
            );
            let (n0, n1) = (&nin[nin_off[0]..nin_off[0] + l0], &nin[nin_off[1]..]);
            // To scope[0]: reduce each row over y1 with n1.
            for (row, _) in tab.chunks_exact(l1).zip(0..l0) {
                scores.clear();
                scores.extend(row.iter().zip(n1).map(|(&x, &n)| x + n));
                out.push(reduce(scores, semiring));
            }
            // To scope[1]: reduce each column over y0 with n0.
            for y1 in 0..l1 {
                scores.clear();
                scores.extend((0..l0).map(|y0| tab[y0 * l1 + y1] + n0[y0]));
                out.push(reduce(scores, semiring));
            }
            ops += 2 * (l0 * l1) as u64;
            normalise(&mut out[..l0], semiring);
            normalise(&mut out[l0..], semiring);
            return ops;
        }
        card.clear();
        card.extend(scope.iter().map(|&v| inst.card[v as usize]));
        for i in 0..k {
            let li = card[i] as usize;
            let start = out.len();
            out.resize(start + li, f64::NEG_INFINITY);
            // Max first (for a stable sum), then the sum.
            scores.clear();
            digits.clear();
            digits.resize(k, 0);
            for &x in tab {
                let mut s = x;
                for j in 0..k {
                    if j != i {
                        s += nin[nin_off[j] + digits[j] as usize];
                    }
                }
                scores.push(s);
                let o = &mut out[start + digits[i] as usize];
                *o = o.max(s);
                next_assignment(digits, card);
            }
            if semiring == Semiring::SumProduct {
                acc.clear();
                acc.resize(li, 0.0);
                digits.fill(0);
                for &s in scores.iter() {
                    let d = digits[i] as usize;
                    let m = out[start + d];
                    if m > f64::NEG_INFINITY {
                        acc[d] += (s - m).exp();
                    }
                    next_assignment(digits, card);
                }
                for (d, a) in acc.iter().enumerate() {
                    out[start + d] += a.ln();
                }
            }
            ops += (tab.len() * k) as u64;
            normalise(&mut out[start..], semiring);
        }
        ops
    }
}

/// Both messages of a pairwise factor in probability space: `m_{a→0}(y0) ∝ Σ_{y1} E(y0, y1)
/// x1(y1)` with `E = exp(φ − max φ)` and `x = exp(n − max n)` (max instead of Σ for
/// max-product), normalised before the log. Returns false, leaving the log path to it, when a
/// sum underflows.
fn pair_scaled(work: &mut BpWork, e: &[f64], _k: usize, semiring: Semiring) -> bool {
    let BpWork {
        out,
        nin,
        nin_off,
        xa,
        xb,
        ..
    } = work;
    let (l0, l1) = (nin_off[1] - nin_off[0], nin.len() - nin_off[1]);
    let (n0, n1) = (&nin[..l0], &nin[l0..]);
    let shifted = |n: &[f64], x: &mut Vec<f64>| {
        let m = n.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        x.clear();
        x.resize(n.len(), 0.0);
        crate::util::exp_shifted_into(n, m, x);
    };
    shifted(n0, xa);
    shifted(n1, xb);
    out.resize(l0 + l1, 0.0);
    let (o0, o1) = out.split_at_mut(l0);
    o1.fill(0.0);
    for (y0, row) in e.chunks_exact(l1).enumerate() {
        let x0 = xa[y0];
        match semiring {
            Semiring::SumProduct => {
                let mut acc = 0.0;
                for ((&ev, &x1), o) in row.iter().zip(xb.iter()).zip(o1.iter_mut()) {
                    acc += ev * x1;
                    *o += ev * x0;
                }
                o0[y0] = acc;
            }
            Semiring::MaxProduct => {
                let mut acc: f64 = 0.0;
                for ((&ev, &x1), o) in row.iter().zip(xb.iter()).zip(o1.iter_mut()) {
                    acc = acc.max(ev * x1);
                    *o = o.max(ev * x0);
                }
                o0[y0] = acc;
            }
        }
    }
    for o in [o0, o1] {
        let z = match semiring {
            Semiring::SumProduct => o.iter().sum::<f64>(),
            Semiring::MaxProduct => o.iter().copied().fold(0.0, f64::max),
        };
        if !(z > 1e-280 && z.is_finite()) {
            return false;
        }
        let inv = 1.0 / z;
        for x in o.iter_mut() {
            *x = if *x > 0.0 {
                (*x * inv).ln().max(MSG_FLOOR)
            } else {
                MSG_FLOOR
            };
        }
    }
    true
}

/// Stable log Σ exp (sum-product) or max (max-product) of `xs`.
fn reduce(xs: &[f64], semiring: Semiring) -> f64 {
    match semiring {
        Semiring::MaxProduct => xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        Semiring::SumProduct => crate::util::log_sum_exp(xs),
    }
}

/// Normalises a log message (log Σ exp = 0, or max = 0) and floors it at [`MSG_FLOOR`]; a
/// message with no finite entry (an impossible configuration) becomes uniform.
fn normalise(m: &mut [f64], semiring: Semiring) {
    let z = reduce(m, semiring);
    if !z.is_finite() {
        let u = match semiring {
            Semiring::SumProduct => -(m.len() as f64).ln(),
            Semiring::MaxProduct => 0.0,
        };
        m.fill(u);
        return;
    }
    for x in m.iter_mut() {
        *x = (*x - z).max(MSG_FLOOR);
    }
}

fn softmax_in_place(v: &mut [f64]) {
    let m = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if m == f64::NEG_INFINITY {
        let u = 1.0 / v.len() as f64;
        v.fill(u);
        return;
    }
    let mut s = 0.0;
    for x in v.iter_mut() {
        *x = (*x - m).exp();
        s += *x;
    }
    for x in v.iter_mut() {
        *x /= s;
    }
}

fn argmax(v: &[f64]) -> usize {
    let mut best = 0;
    for (i, &x) in v.iter().enumerate() {
        if x > v[best] {
            best = i;
        }
    }
    best
}

/// Damps `new` towards `old` (log space) and returns the largest change of a log entry. A
/// mixture of two normalised log messages needs no renormalising for the beliefs (they are
/// normalised on their own) and its log normaliser stays within [−log L, 0].
fn damp_and_residual(new: &mut [f64], old: &[f64], damping: f64) -> f64 {
    if damping > 0.0 {
        for (n, &o) in new.iter_mut().zip(old) {
            *n = (1.0 - damping) * *n + damping * o;
        }
    }
    new.iter()
        .zip(old)
        .map(|(&n, &o)| (n - o).abs())
        .fold(0.0, f64::max)
}

/// Runs BP on `inst` with log-potential tables `phi`, continuing from the messages in `msgs`
/// (uniform when cold).
pub fn run(
    inst: &Instance,
    phi: &[f64],
    opts: &BpOptions,
    semiring: Semiring,
    msgs: &mut BpMessages,
    work: &mut BpWork,
) -> BpReport {
    msgs.prepare(inst, semiring);
    msgs.set_unary(inst, phi, semiring);
    msgs.resum();
    let mut report = BpReport::default();
    if inst.n_edges() == 0 {
        report.converged = true;
        return report;
    }
    let mut scaled = std::mem::take(&mut work.scaled);
    scaled.prepare(inst, phi);
    let c = Call {
        inst,
        phi,
        opts,
        semiring,
        scaled: &scaled,
    };
    match opts.schedule {
        Schedule::Parallel => run_parallel(&c, msgs, work, &mut report),
        Schedule::Sequential => run_sequential(&c, msgs, work, &mut report),
        Schedule::Residual => run_residual(&c, msgs, work, &mut report),
    }
    work.scaled = scaled;
    report
}

/// What one BP call works on.
struct Call<'a> {
    inst: &'a Instance,
    phi: &'a [f64],
    opts: &'a BpOptions,
    semiring: Semiring,
    scaled: &'a Scaled,
}

impl Call<'_> {
    fn compute(&self, msgs: &BpMessages, f: usize, work: &mut BpWork) -> u64 {
        msgs.compute_factor(self.inst, self.phi, f, self.semiring, self.scaled, work)
    }
    /// Whether factor `f` is unary: its message is fixed for the whole call.
    fn is_unary(&self, f: usize) -> bool {
        self.inst.scope(&self.inst.factors[f]).len() == 1
    }
}

/// Instances with at least this many factor-graph edges compute a flooding sweep's messages on
/// several threads.
pub const PARALLEL_SWEEP_EDGES: usize = 8192;

fn run_parallel(c: &Call, msgs: &mut BpMessages, work: &mut BpWork, report: &mut BpReport) {
    let inst = c.inst;
    let mut new = std::mem::take(&mut work.new);
    new.clear();
    new.resize(msgs.msg.len(), 0.0);
    // Chunks of factors whose message blocks are contiguous, for the threads.
    let n_f = inst.factors.len();
    let chunks = if inst.n_edges() >= PARALLEL_SWEEP_EDGES {
        (rayon::current_num_threads() * 8).min(n_f).max(1)
    } else {
        1
    };
    // Where each chunk's messages start.
    let starts: Vec<usize> = (0..=chunks)
        .map(|i| i * n_f / chunks)
        .map(|f| match inst.factors.get(f) {
            Some(fac) => msgs.msg_off[inst.scope_range(fac).start] as usize,
            None => msgs.msg.len(),
        })
        .collect();
    let bounds: Vec<usize> = (0..=chunks).map(|i| i * n_f / chunks).collect();
    for _ in 0..c.opts.max_sweeps {
        let (ops, residual) = if chunks == 1 {
            sweep_chunk(c, msgs, 0..n_f, &mut new, work)
        } else {
            use rayon::prelude::*;
            let mut parts = Vec::with_capacity(chunks);
            let mut rest: &mut [f64] = &mut new;
            for (w, st) in bounds.windows(2).zip(starts.windows(2)) {
                let (head, tail) = rest.split_at_mut(st[1] - st[0]);
                parts.push((w[0]..w[1], head));
                rest = tail;
            }
            let m: &BpMessages = msgs;
            parts
                .into_par_iter()
                .map_init(BpWork::default, |w, (fs, out)| {
                    sweep_chunk(c, m, fs, out, w)
                })
                .reduce(|| (0, 0.0), |a, b| (a.0 + b.0, a.1.max(b.1)))
        };
        report.ops += ops;
        std::mem::swap(&mut msgs.msg, &mut new);
        msgs.resum();
        report.sweeps += 1;
        report.residual = residual;
        if residual < c.opts.tol {
            report.converged = true;
            break;
        }
    }
    work.new = new;
}

/// New (damped) messages of factors `fs` from the current ones into `out` (their blocks, in
/// order); returns the counted operations and the largest change.
fn sweep_chunk(
    c: &Call,
    msgs: &BpMessages,
    fs: std::ops::Range<usize>,
    out: &mut [f64],
    work: &mut BpWork,
) -> (u64, f64) {
    let (mut ops, mut residual, mut pos) = (0u64, 0.0f64, 0usize);
    for f in fs {
        let fac = &c.inst.factors[f];
        if c.inst.scope(fac).len() == 1 {
            let r = msgs.edge(c.inst.scope_range(fac).start);
            let len = r.len();
            out[pos..pos + len].copy_from_slice(&msgs.msg[r]);
            pos += len;
            continue;
        }
        ops += c.compute(msgs, f, work);
        let d = c.opts.damping;
        let mut at = 0;
        for e in c.inst.scope_range(fac) {
            let r = msgs.edge(e);
            let len = r.len();
            let new = &mut work.out[at..at + len];
            residual = residual.max(damp_and_residual(new, &msgs.msg[r], d));
            out[pos..pos + len].copy_from_slice(new);
            at += len;
            pos += len;
        }
    }
    (ops, residual)
}

/// Writes factor `f`'s new messages (in `work.out`) and updates the variable sums; returns the
/// largest change.
fn apply_factor(c: &Call, f: usize, msgs: &mut BpMessages, work: &mut BpWork) -> f64 {
    let inst = c.inst;
    let d = c.opts.damping;
    let fac = &inst.factors[f];
    let mut residual: f64 = 0.0;
    let mut pos = 0;
    for (e, &v) in inst.scope_range(fac).zip(inst.scope(fac)) {
        let r = msgs.edge(e);
        let len = r.len();
        let new = &mut work.out[pos..pos + len];
        residual = residual.max(damp_and_residual(new, &msgs.msg[r.clone()], d));
        let vr = msgs.var(v as usize);
        for ((s, m), &n) in msgs.sum[vr].iter_mut().zip(&mut msgs.msg[r]).zip(&*new) {
            *s += n - *m;
            *m = n;
        }
        pos += len;
    }
    residual
}

fn run_sequential(c: &Call, msgs: &mut BpMessages, work: &mut BpWork, report: &mut BpReport) {
    for sweep in 0..c.opts.max_sweeps {
        if sweep > 0 {
            msgs.resum();
        }
        let mut residual: f64 = 0.0;
        // Alternate directions (symmetric Gauss–Seidel): on a chain or a tree numbered along
        // it, one forward and one backward sweep are exact, where one direction only would
        // carry information one factor per sweep against it.
        let n = c.inst.factors.len();
        for i in 0..n {
            let f = if sweep % 2 == 0 { i } else { n - 1 - i };
            if c.is_unary(f) {
                continue;
            }
            report.ops += c.compute(msgs, f, work);
            residual = residual.max(apply_factor(c, f, msgs, work));
        }
        report.sweeps += 1;
        report.residual = residual;
        if residual < c.opts.tol {
            report.converged = true;
            break;
        }
    }
}

/// Residual BP: every edge holds a candidate message (computed, damped, not yet applied) and
/// its residual; the largest is applied, and the candidates of the factors around its variable
/// are recomputed.
fn run_residual(c: &Call, msgs: &mut BpMessages, work: &mut BpWork, report: &mut BpReport) {
    let (inst, opts) = (c.inst, c.opts);
    let n_edges = inst.n_edges();
    let mut cand = std::mem::take(&mut work.new);
    cand.clear();
    cand.resize(msgs.msg.len(), 0.0);
    work.residual.clear();
    work.residual.resize(n_edges, 0.0);
    work.version.clear();
    work.version.resize(n_edges, 0);
    work.heap.clear();
    let refresh = |f: usize,
                   msgs: &BpMessages,
                   work: &mut BpWork,
                   cand: &mut [f64],
                   report: &mut BpReport| {
        report.ops += c.compute(msgs, f, work);
        let d = c.opts.damping;
        let fac = &inst.factors[f];
        let mut pos = 0;
        for e in inst.scope_range(fac) {
            let r = msgs.edge(e);
            let len = r.len();
            let res = damp_and_residual(&mut work.out[pos..pos + len], &msgs.msg[r.clone()], d);
            cand[r].copy_from_slice(&work.out[pos..pos + len]);
            pos += len;
            work.residual[e] = res;
            work.version[e] = work.version[e].wrapping_add(1);
            work.heap.push(Candidate {
                residual: res,
                edge: e as u32,
                version: work.version[e],
            });
        }
    };
    for f in 0..inst.factors.len() {
        if !c.is_unary(f) {
            refresh(f, msgs, work, &mut cand, report);
        }
    }
    let budget = (opts.max_sweeps as u64).saturating_mul(n_edges as u64);
    let mut updates = 0u64;
    let mut last = 0.0;
    loop {
        let top = loop {
            match work.heap.peek() {
                Some(c) if c.version != work.version[c.edge as usize] => {
                    work.heap.pop();
                }
                other => break other.copied(),
            }
        };
        let Some(top) = top else {
            report.converged = true;
            break;
        };
        if top.residual < opts.tol {
            report.converged = true;
            last = top.residual;
            break;
        }
        if updates >= budget {
            last = top.residual;
            break;
        }
        work.heap.pop();
        let e = top.edge as usize;
        let r = msgs.edge(e);
        let v = msgs.edge_var[e];
        let vr = msgs.var(v as usize);
        for ((s, m), &n) in msgs.sum[vr]
            .iter_mut()
            .zip(&mut msgs.msg[r.clone()])
            .zip(&cand[r])
        {
            *s += n - *m;
            *m = n;
        }
        work.residual[e] = 0.0;
        work.version[e] = work.version[e].wrapping_add(1);
        updates += 1;
        last = top.residual;
        let (a, b) = (
            msgs.var_edge_ptr[v as usize] as usize,
            msgs.var_edge_ptr[v as usize + 1] as usize,
        );
        for i in a..b {
            let f = msgs.edge_factor[msgs.var_edges[i] as usize] as usize;
            if !c.is_unary(f) {
                refresh(f, msgs, work, &mut cand, report);
            }
        }
    }
    report.sweeps = updates.div_ceil(n_edges as u64) as usize;
    report.residual = last;
    work.new = cand;
}

/// Options that make BP exact on a forest of `n_vars` variables: sequential sweeps until nothing
/// moves (a forest converges within its diameter; the limit is only a guard).
pub fn tree_bp_options(n_vars: usize) -> BpOptions {
    BpOptions {
        schedule: Schedule::Sequential,
        damping: 0.0,
        tol: 1e-13,
        max_sweeps: n_vars + 2,
    }
}

/// Sum-product BP on one instance after a number of flooding sweeps from uniform messages, with what
/// the stepper draws: variable and factor beliefs, how much each message moved in the last sweep,
/// and the pieces' own beliefs `∝ exp(φ_a)` — BP's factor beliefs with every message held at 1,
/// which is what piecewise training normalises.
#[derive(Clone, Debug)]
pub struct BpSnapshot {
    pub sweeps: usize,
    pub report: BpReport,
    pub var_beliefs: Vec<Vec<f64>>,
    /// Per factor, shaped by its scope (a pair factor's `l × l`).
    pub factor_beliefs: Vec<ndarray::ArrayD<f64>>,
    /// Per factor, its own belief with every message at 1, `exp φ_a / Σ exp φ_a`; shaped so.
    pub piece_beliefs: Vec<ndarray::ArrayD<f64>>,
    /// Per factor-graph edge (flat scope index): largest change of its log message in the last
    /// sweep.
    pub edge_residual: Vec<f64>,
    /// Sweeps a cold run needs to converge (tolerance 1e-8), or None within 1000.
    pub converges_after: Option<usize>,
}

pub fn snapshot(inst: &Instance, phi: &[f64], damping: f64, sweeps: usize) -> BpSnapshot {
    let opts = |n: usize| BpOptions {
        schedule: Schedule::Parallel,
        damping,
        tol: 1e-300,
        max_sweeps: n,
    };
    let (mut work, mut msgs) = (BpWork::default(), BpMessages::default());
    let mut before = vec![];
    if sweeps > 1 {
        run(
            inst,
            phi,
            &opts(sweeps - 1),
            Semiring::SumProduct,
            &mut msgs,
            &mut work,
        );
        before = (0..inst.n_edges())
            .map(|e| msgs.message(e).to_vec())
            .collect();
    }
    let mut report = run(
        inst,
        phi,
        &opts(1),
        Semiring::SumProduct,
        &mut msgs,
        &mut work,
    );
    report.sweeps = sweeps;
    let edge_residual = (0..inst.n_edges())
        .map(|e| {
            let now = msgs.message(e);
            let old = before.get(e).map(|m| m.as_slice());
            now.iter()
                .enumerate()
                .map(|(y, &x)| (x - old.map_or(-(now.len() as f64).ln(), |o| o[y])).abs())
                .fold(0.0, f64::max)
        })
        .collect();
    let mut b = Vec::new();
    let var_beliefs = (0..inst.n_vars())
        .map(|v| {
            msgs.var_belief(v, &mut b);
            b.clone()
        })
        .collect();
    // Shaped by the factor's scope (a flat vector should the length not fit it).
    let shaped = |f: &crate::graph::Factor, t: Vec<f64>| {
        let shape = Some(inst.table_shape(f))
            .filter(|s| s.iter().product::<usize>() == t.len())
            .unwrap_or_else(|| vec![t.len()]);
        ndarray::ArrayD::from_shape_vec(shape, t).expect("the shape fits the length")
    };
    let factor_beliefs = (0..inst.factors.len())
        .map(|f| {
            msgs.factor_belief(inst, phi, f, &mut work, &mut b);
            shaped(&inst.factors[f], b.clone())
        })
        .collect();
    let piece_beliefs = inst
        .factors
        .iter()
        .map(|f| {
            let t = inst.table(f, phi);
            let m = t.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let e: Vec<f64> = t.iter().map(|x| (x - m).exp()).collect();
            let z: f64 = e.iter().sum();
            shaped(f, e.iter().map(|x| x / z).collect())
        })
        .collect();
    let mut cold = BpMessages::default();
    let conv = run(
        inst,
        phi,
        &BpOptions {
            tol: 1e-8,
            ..opts(1000)
        },
        Semiring::SumProduct,
        &mut cold,
        &mut work,
    );
    BpSnapshot {
        sweeps,
        report,
        var_beliefs,
        factor_beliefs,
        piece_beliefs,
        edge_residual,
        converges_after: conv.converged.then_some(conv.sweeps),
    }
}
