//! Forward–backward and Viterbi on chain-shaped instances.
//!
//! Forward–backward runs in scaled probability space (as CRFsuite does): potentials are
//! exponentiated once after subtracting their maximum, messages are renormalised at every
//! position and log Z is the sum of the log scales. Should a scale underflow (extreme weights),
//! the same quantities are recomputed in log space with stable log-sum-exp. Buffers live in a
//! reusable [`ChainWork`] so the hot loop does not allocate.

use crate::graph::{ChainLayout, ClampedChain, Instance, ProductLayout};
use crate::util::{exp_shifted_into, log_sum_exp};
use ndarray::{ArrayView2, ArrayView3};

/// Reusable buffers for one thread.
#[derive(Default, Clone, Debug)]
pub struct ChainWork {
    n: usize,
    l: usize,
    /// Log unary potentials, `n × l`.
    u: Vec<f64>,
    /// Distinct log pairwise matrices, `k × l × l`; `m_id[t]` names the one for `(t-1, t)`.
    pl: Vec<f64>,
    m_id: Vec<u32>,
    /// Scaled-space copies of `u` and `pl` and their max shifts.
    s: Vec<f64>,
    m: Vec<f64>,
    /// Transposes of `m`, for the backward pass.
    mt: Vec<f64>,
    /// The `pl` that `m`, `mt` and `m_shift` were computed from: consecutive instances
    /// usually share their transition matrices, whose exponentials are then reused.
    m_src: Vec<f64>,
    m_shift: Vec<f64>,
    u_shift: Vec<f64>,
    alpha: Vec<f64>,
    beta: Vec<f64>,
    c: Vec<f64>,
    /// `s_t(y)·β_t(y)/c_t`, `n × l` (row 0 unused): the backward pass's weights, which the
    /// pair expectations reuse.
    sb: Vec<f64>,
    tmp: Vec<f64>,
    back: Vec<u32>,
    /// A product chain's entry offsets of one factor (see [`ProductLayout::entry_parts`]) and
    /// one position's pair marginals.
    ep: Vec<usize>,
    ec: Vec<usize>,
    pm: Vec<f64>,
    /// A product chain's Viterbi path over joint states.
    joint: Vec<u32>,
    pub log_z: f64,
    /// False when the log-space fallback ran (then `alpha`/`beta` hold log messages).
    pub scaled: bool,
    /// Counted multiply-adds of inference since the last reset.
    pub ops: u64,
}

crate::wide_fn!(
    /// Forward–backward in scaled space over the prepared potentials; false when a scale
    /// underflows (then the log-space pass runs).
    fn run_scaled(w: &mut ChainWork) -> bool = ChainWork::run_scaled_body;
);

crate::wide_fn!(
    /// Adds `scale ·` (marginal of each factor's table entries) into `dphi`, after
    /// [`ChainWork::forward_backward`].
    pub fn add_expectations(w: &mut ChainWork, inst: &Instance, lay: &ChainLayout, dphi: &mut [f64], scale: f64) = ChainWork::add_expectations_body;
);

/// The pair matrices of t = 1 … n−1, row-major (t = 0's is unused).
fn pair_rows(pair: ArrayView3<'_, f64>) -> impl Iterator<Item = f64> + '_ {
    let (_, a, b) = pair.dim();
    pair.into_iter().skip(a * b).copied()
}

/// `out[c] = Σ_r v[r]·m[r·l + c]` (`m` is `l × l`, `l = v.len()`), each sum in `r` order from
/// zero, skipping `v[r] = 0`: the same bits as row-by-row axpys into `out`, with up to sixteen
/// columns at a time held in registers instead of `out` loaded and stored for every row.
#[inline(always)]
fn vec_mat(v: &[f64], m: &[f64], out: &mut [f64]) {
    for (c, w) in column_blocks(v.len()) {
        match w {
            16 => vec_mat_block::<16>(v, m, c, out),
            8 => vec_mat_block::<8>(v, m, c, out),
            4 => vec_mat_block::<4>(v, m, c, out),
            2 => vec_mat_block::<2>(v, m, c, out),
            _ => vec_mat_block::<1>(v, m, c, out),
        }
    }
}

/// `0..l` as (start, width) blocks: sixteen columns at a time (four independent vector sums,
/// so the adds overlap), then at most one block each of 8, 4, 2 and 1.
#[inline(always)]
fn column_blocks(l: usize) -> impl Iterator<Item = (usize, usize)> {
    let full = l / 16;
    let tail = [8, 4, 2, 1].into_iter().scan(full * 16, move |c, w| {
        let at = *c;
        if at + w <= l {
            *c += w;
            Some(Some((at, w)))
        } else {
            Some(None)
        }
    });
    (0..full).map(|b| (b * 16, 16)).chain(tail.flatten())
}

#[inline(always)]
fn vec_mat_block<const W: usize>(v: &[f64], m: &[f64], c: usize, out: &mut [f64]) {
    let l = v.len();
    let mut acc = [0.0f64; W];
    for (r, &a) in v.iter().enumerate() {
        if a == 0.0 {
            continue;
        }
        let row: &[f64; W] = m[r * l + c..r * l + c + W].try_into().unwrap();
        for k in 0..W {
            acc[k] += a * row[k];
        }
    }
    out[c..c + W].copy_from_slice(&acc);
}

/// Pair expectations of a run of positions sharing one table `d` (`l × l`) and matrix `m`:
/// `d[y', y] += (scale·α_{t−1}(y') · m[y', y]) · sb_t(y)` for each position t in order, where
/// `alpha` and `sb` hold the run's rows. Up to sixteen entries of `d` stay in registers over
/// the run.
#[inline(always)]
fn pair_expectations(d: &mut [f64], m: &[f64], alpha: &[f64], sb: &[f64], l: usize, scale: f64) {
    for yp in 0..l {
        for (c, w) in column_blocks(l) {
            match w {
                16 => pair_block::<16>(d, m, alpha, sb, l, scale, yp, c),
                8 => pair_block::<8>(d, m, alpha, sb, l, scale, yp, c),
                4 => pair_block::<4>(d, m, alpha, sb, l, scale, yp, c),
                2 => pair_block::<2>(d, m, alpha, sb, l, scale, yp, c),
                _ => pair_block::<1>(d, m, alpha, sb, l, scale, yp, c),
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn pair_block<const W: usize>(
    d: &mut [f64],
    m: &[f64],
    alpha: &[f64],
    sb: &[f64],
    l: usize,
    scale: f64,
    yp: usize,
    c: usize,
) {
    let at = yp * l + c;
    let mut acc: [f64; W] = d[at..at + W].try_into().unwrap();
    let mv: &[f64; W] = m[at..at + W].try_into().unwrap();
    for (a, s) in alpha.chunks_exact(l).zip(sb.chunks_exact(l)) {
        let a = scale * a[yp];
        let s: &[f64; W] = s[c..c + W].try_into().unwrap();
        for k in 0..W {
            acc[k] += a * mv[k] * s[k];
        }
    }
    d[at..at + W].copy_from_slice(&acc);
}

impl ChainWork {
    /// Loads dense log potentials instead of an instance's tables: `u` is `n × l` and `pl` the
    /// `n − 1` matrices over `(y_{t−1}, y_t)` for t = 1 … n−1, row-major.
    pub(super) fn load_dense(
        &mut self,
        (n, l): (usize, usize),
        u: impl IntoIterator<Item = f64>,
        pl: impl IntoIterator<Item = f64>,
    ) {
        self.n = n;
        self.l = l;
        self.u.clear();
        self.u.extend(u);
        self.pl.clear();
        self.pl.extend(pl);
        debug_assert_eq!(self.u.len(), n * l);
        debug_assert_eq!(self.pl.len(), n.saturating_sub(1) * l * l);
        self.m_id.clear();
        self.m_id.push(u32::MAX);
        self.m_id.extend(0..n.saturating_sub(1) as u32);
    }

    /// Viterbi over dense log potentials: `unary` (n × l) and `pair` (n × l × l, the matrix at
    /// t over `(y_{t−1}, y_t)`; t = 0's is unused). Returns the best score.
    pub fn viterbi_dense(
        &mut self,
        unary: ArrayView2<f64>,
        pair: ArrayView3<f64>,
        out: &mut Vec<u32>,
    ) -> f64 {
        let (n, l) = unary.dim();
        self.load_dense((n, l), unary.iter().copied(), pair_rows(pair));
        self.viterbi_core(out)
    }

    /// The best free labels of a [`ClampedChain`], as the full assignment; returns it and its
    /// score over the chain's tables.
    pub fn viterbi_clamped(&mut self, c: &ClampedChain) -> (Vec<u32>, f64) {
        let mut labels = Vec::new();
        let score = self.viterbi_dense(c.unary.view(), c.pair.view(), &mut labels);
        (c.with_labels(&labels), score)
    }

    /// Forward–backward over the loaded potentials: scaled space, log space should a scale
    /// underflow; an empty chain has log Z = 0.
    pub(super) fn run_loaded(&mut self) -> f64 {
        if self.n == 0 {
            self.scaled = true;
            self.log_z = 0.0;
            return 0.0;
        }
        self.scaled = run_scaled(self);
        if !self.scaled {
            self.run_log();
        }
        self.log_z
    }

    /// Collects the unary and pairwise log potentials of `inst` from its tables.
    fn prepare(&mut self, inst: &Instance, lay: &ChainLayout, phi: &[f64]) {
        let (n, l) = (lay.n, lay.l);
        self.n = n;
        self.l = l;
        self.u.clear();
        self.u.resize(n * l, 0.0);
        for t in 0..n {
            let row = &mut self.u[t * l..(t + 1) * l];
            for &f in lay.unary(t) {
                let tab = inst.table(&inst.factors[f as usize], phi);
                for (r, &x) in row.iter_mut().zip(tab) {
                    *r += x;
                }
            }
        }
        self.m_id.clear();
        self.m_id.push(u32::MAX);
        let mut k = 0usize;
        for t in 1..n {
            let fs = lay.pair(t);
            let same = t > 1 && {
                let prev = lay.pair(t - 1);
                prev.len() == fs.len()
                    && prev.iter().zip(fs).all(|(&a, &b)| {
                        inst.factors[a as usize].slot == inst.factors[b as usize].slot
                    })
            };
            if !same {
                k += 1;
                if self.pl.len() < k * l * l {
                    self.pl.resize(k * l * l, 0.0);
                }
                let mat = &mut self.pl[(k - 1) * l * l..k * l * l];
                mat.fill(0.0);
                for &f in fs {
                    let tab = inst.table(&inst.factors[f as usize], phi);
                    for (r, &x) in mat.iter_mut().zip(tab) {
                        *r += x;
                    }
                }
            }
            self.m_id.push((k.max(1) - 1) as u32);
        }
        self.pl.truncate(k * l * l);
    }

    fn pair_log(&self, t: usize) -> &[f64] {
        let (l, k) = (self.l, self.m_id[t] as usize);
        &self.pl[k * l * l..(k + 1) * l * l]
    }

    /// Runs forward–backward; afterwards `log_z` and the marginals are available.
    pub fn forward_backward(&mut self, inst: &Instance, lay: &ChainLayout, phi: &[f64]) -> f64 {
        self.prepare(inst, lay, phi);
        self.run_loaded()
    }

    #[inline(always)]
    pub(crate) fn run_scaled_body(&mut self) -> bool {
        let (n, l) = (self.n, self.l);
        let l2 = l * l;
        let km = self.pl.len() / l2.max(1);
        let reuse = self.m_src == self.pl;
        self.m.resize(self.pl.len(), 0.0);
        self.mt.resize(self.pl.len(), 0.0);
        self.m_shift.resize(km, 0.0);
        for k in (0..km).filter(|_| !reuse) {
            let src = &self.pl[k * l2..(k + 1) * l2];
            let mx = src.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            self.m_shift[k] = mx;
            let m = &mut self.m[k * l2..(k + 1) * l2];
            exp_shifted_into(src, mx, m);
            let mt = &mut self.mt[k * l2..(k + 1) * l2];
            for a in 0..l {
                for b in 0..l {
                    mt[b * l + a] = m[a * l + b];
                }
            }
        }
        if !reuse {
            self.m_src.clone_from(&self.pl);
        }
        self.s.resize(n * l, 0.0);
        self.u_shift.resize(n, 0.0);
        for t in 0..n {
            let src = &self.u[t * l..(t + 1) * l];
            let mx = src.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            self.u_shift[t] = mx;
            exp_shifted_into(src, mx, &mut self.s[t * l..(t + 1) * l]);
        }
        self.alpha.resize(n * l, 0.0);
        self.beta.resize(n * l, 0.0);
        self.c.resize(n, 0.0);
        self.tmp.resize(l, 0.0);
        self.ops += (n * l + km * l2) as u64;
        // Forward.
        let mut log_z = 0.0;
        for t in 0..n {
            if t == 0 {
                self.alpha[..l].copy_from_slice(&self.s[..l]);
            } else {
                let k = self.m_id[t] as usize;
                let m = &self.m[k * l2..(k + 1) * l2];
                let prev = &self.alpha[(t - 1) * l..t * l];
                vec_mat(prev, m, &mut self.tmp);
                let s = &self.s[t * l..(t + 1) * l];
                for ((a, &x), &sv) in self.alpha[t * l..(t + 1) * l]
                    .iter_mut()
                    .zip(&self.tmp)
                    .zip(s)
                {
                    *a = x * sv;
                }
                log_z += self.m_shift[k];
            }
            let row = &mut self.alpha[t * l..(t + 1) * l];
            let c: f64 = row.iter().sum();
            if !(c > 1e-280 && c.is_finite()) {
                return false;
            }
            let inv = 1.0 / c;
            for a in row.iter_mut() {
                *a *= inv;
            }
            self.c[t] = c;
            log_z += c.ln() + self.u_shift[t];
        }
        self.ops += ((n.saturating_sub(1)) * l2) as u64;
        // Backward: beta[t] scaled so that alpha[t]·beta[t] is the node marginal.
        self.beta[(n - 1) * l..].fill(1.0);
        self.sb.resize(n * l, 0.0);
        for t in (1..n).rev() {
            let k = self.m_id[t] as usize;
            let mt = &self.mt[k * l2..(k + 1) * l2];
            let inv = 1.0 / self.c[t];
            let (head, tail) = self.beta.split_at_mut(t * l);
            let w = &mut self.sb[t * l..(t + 1) * l];
            for ((w, &sv), &b) in w
                .iter_mut()
                .zip(&self.s[t * l..(t + 1) * l])
                .zip(&tail[..l])
            {
                *w = sv * b * inv;
            }
            // β_{t−1}(y') = Σ_y M(y', y)·s_t(y)·β_t(y)/c_t: the weights times rows of Mᵀ.
            vec_mat(w, mt, &mut head[(t - 1) * l..t * l]);
        }
        self.ops += ((n.saturating_sub(1)) * l2) as u64;
        self.log_z = log_z;
        log_z.is_finite()
    }

    fn run_log(&mut self) {
        let (n, l) = (self.n, self.l);
        self.alpha.resize(n * l, 0.0);
        self.beta.resize(n * l, 0.0);
        self.tmp.resize(l, 0.0);
        self.alpha[..l].copy_from_slice(&self.u[..l]);
        for t in 1..n {
            for y in 0..l {
                let k = self.m_id[t] as usize;
                for yp in 0..l {
                    self.tmp[yp] = self.alpha[(t - 1) * l + yp] + self.pl[k * l * l + yp * l + y];
                }
                self.alpha[t * l + y] = self.u[t * l + y] + log_sum_exp(&self.tmp);
            }
        }
        self.log_z = log_sum_exp(&self.alpha[(n - 1) * l..n * l]);
        self.beta[(n - 1) * l..].fill(0.0);
        for t in (1..n).rev() {
            let k = self.m_id[t] as usize;
            for yp in 0..l {
                for y in 0..l {
                    self.tmp[y] =
                        self.pl[k * l * l + yp * l + y] + self.u[t * l + y] + self.beta[t * l + y];
                }
                self.beta[(t - 1) * l + yp] = log_sum_exp(&self.tmp);
            }
        }
        self.ops += (3 * n.saturating_sub(1) * l * l) as u64;
    }

    /// Node marginal p(y_t = y) after [`forward_backward`](Self::forward_backward).
    pub fn node_marginal(&self, t: usize, y: usize) -> f64 {
        let i = t * self.l + y;
        if self.scaled {
            self.alpha[i] * self.beta[i]
        } else {
            (self.alpha[i] + self.beta[i] - self.log_z).exp()
        }
    }

    /// Pair marginal p(y_{t-1} = yp, y_t = y), `t ≥ 1`.
    pub fn pair_marginal(&self, t: usize, yp: usize, y: usize) -> f64 {
        let l = self.l;
        if self.scaled {
            let k = self.m_id[t] as usize;
            self.alpha[(t - 1) * l + yp]
                * self.m[k * l * l + yp * l + y]
                * self.s[t * l + y]
                * self.beta[t * l + y]
                / self.c[t]
        } else {
            (self.alpha[(t - 1) * l + yp]
                + self.pair_log(t)[yp * l + y]
                + self.u[t * l + y]
                + self.beta[t * l + y]
                - self.log_z)
                .exp()
        }
    }

    #[inline(always)]
    pub(crate) fn add_expectations_body(
        &mut self,
        inst: &Instance,
        lay: &ChainLayout,
        dphi: &mut [f64],
        scale: f64,
    ) {
        let (n, l) = (self.n, self.l);
        let l2 = l * l;
        for t in 0..n {
            for &f in lay.unary(t) {
                let off = inst.table_offset(&inst.factors[f as usize]);
                let d = &mut dphi[off..off + l];
                if self.scaled {
                    let (a, b) = (
                        &self.alpha[t * l..(t + 1) * l],
                        &self.beta[t * l..(t + 1) * l],
                    );
                    for ((o, &x), &y) in d.iter_mut().zip(a).zip(b) {
                        *o += scale * x * y;
                    }
                } else {
                    for (y, o) in d.iter_mut().enumerate() {
                        *o += scale * self.node_marginal(t, y);
                    }
                }
            }
        }
        if self.scaled {
            // Positions whose pair factors share their tables (one `m_id`) are a run: each
            // entry of a shared table takes the run's terms in position order, held in
            // registers across the run rather than loaded and stored per position.
            let mut t = 1;
            while t < n {
                let k = self.m_id[t];
                let mut end = t + 1;
                while end < n && self.m_id[end] == k {
                    end += 1;
                }
                // (`prepare` gives positions one `m_id` only when their pair factors have the
                // same slots. Two factors of a position on one slot keep the per-position order.)
                let fs = lay.pair(t);
                let slot = |f: &u32| inst.factors[*f as usize].slot;
                let distinct = fs
                    .iter()
                    .enumerate()
                    .all(|(i, f)| fs[..i].iter().all(|g| slot(g) != slot(f)));
                let end = if distinct { end } else { t + 1 };
                let runs = end - t;
                let m = &self.m[k as usize * l2..(k as usize + 1) * l2];
                for &f in fs {
                    let off = inst.table_offset(&inst.factors[f as usize]);
                    pair_expectations(
                        &mut dphi[off..off + l2],
                        m,
                        &self.alpha[(t - 1) * l..(end - 1) * l],
                        &self.sb[t * l..end * l],
                        l,
                        scale,
                    );
                }
                self.ops += (fs.len() * l2 * runs) as u64;
                t = end;
            }
            return;
        }
        for t in 1..n {
            let fs = lay.pair(t);
            for &f in fs {
                let off = inst.table_offset(&inst.factors[f as usize]);
                for yp in 0..l {
                    for y in 0..l {
                        dphi[off + yp * l + y] += scale * self.pair_marginal(t, yp, y);
                    }
                }
            }
            self.ops += (fs.len() * l2) as u64;
        }
    }

    /// Most probable labelling (Viterbi, log space); returns its score Σ_a φ_a(y_a).
    pub fn viterbi(
        &mut self,
        inst: &Instance,
        lay: &ChainLayout,
        phi: &[f64],
        out: &mut Vec<u32>,
    ) -> f64 {
        self.prepare(inst, lay, phi);
        self.viterbi_core(out)
    }

    /// Viterbi over the prepared potentials: one state per position.
    pub(super) fn viterbi_core(&mut self, out: &mut Vec<u32>) -> f64 {
        let (n, l) = (self.n, self.l);
        out.clear();
        if n == 0 {
            return 0.0;
        }
        self.alpha.resize(n * l, 0.0);
        self.back.resize(n * l, 0);
        self.alpha[..l].copy_from_slice(&self.u[..l]);
        for t in 1..n {
            let k = self.m_id[t] as usize;
            for y in 0..l {
                let mut best = f64::NEG_INFINITY;
                let mut arg = 0u32;
                for yp in 0..l {
                    let v = self.alpha[(t - 1) * l + yp] + self.pl[k * l * l + yp * l + y];
                    if v > best {
                        best = v;
                        arg = yp as u32;
                    }
                }
                self.alpha[t * l + y] = best + self.u[t * l + y];
                self.back[t * l + y] = arg;
            }
        }
        self.ops += (n.saturating_sub(1) * l * l) as u64;
        let last = &self.alpha[(n - 1) * l..n * l];
        let (mut y, mut best) = (0usize, f64::NEG_INFINITY);
        for (i, &v) in last.iter().enumerate() {
            if v > best {
                best = v;
                y = i;
            }
        }
        out.resize(n, 0);
        out[n - 1] = y as u32;
        for t in (1..n).rev() {
            y = self.back[t * l + y] as usize;
            out[t - 1] = y as u32;
        }
        best
    }

    /// Collects a product chain's joint-state log potentials: `u[t][s]` from the factors
    /// within position `t`, one matrix per `t ≥ 1` from the factors spanning `(t − 1, t)`.
    fn prepare_product(&mut self, inst: &Instance, lay: &ProductLayout, phi: &[f64]) {
        let (n, l) = (lay.n, lay.states);
        let l2 = l * l;
        self.n = n;
        self.l = l;
        self.u.clear();
        self.u.resize(n * l, 0.0);
        self.m_id.clear();
        self.m_id.push(u32::MAX);
        self.pl.clear();
        self.pl.resize(n.saturating_sub(1) * l2, 0.0);
        for t in 0..n {
            for &f in lay.node(t) {
                let fac = &inst.factors[f as usize];
                lay.entry_parts(inst, fac, t, &mut self.ep, &mut self.ec);
                let tab = inst.table(fac, phi);
                for (u, &e) in self.u[t * l..(t + 1) * l].iter_mut().zip(&self.ec) {
                    *u += tab[e];
                }
            }
            if t == 0 {
                continue;
            }
            self.m_id.push((t - 1) as u32);
            let mat = &mut self.pl[(t - 1) * l2..t * l2];
            for &f in lay.pair(t) {
                let fac = &inst.factors[f as usize];
                lay.entry_parts(inst, fac, t, &mut self.ep, &mut self.ec);
                let tab = inst.table(fac, phi);
                for (row, &base) in mat.chunks_exact_mut(l).zip(&self.ep) {
                    for (r, &e) in row.iter_mut().zip(&self.ec) {
                        *r += tab[base + e];
                    }
                }
            }
            self.ops += (lay.pair(t).len() * l2) as u64;
        }
    }

    /// Forward–backward over a product chain's joint states; returns log Z.
    pub fn forward_backward_product(
        &mut self,
        inst: &Instance,
        lay: &ProductLayout,
        phi: &[f64],
    ) -> f64 {
        self.prepare_product(inst, lay, phi);
        self.run_loaded()
    }

    /// Viterbi over a product chain's joint states; `out` gets one label per variable.
    pub fn viterbi_product(
        &mut self,
        inst: &Instance,
        lay: &ProductLayout,
        phi: &[f64],
        out: &mut Vec<u32>,
    ) -> f64 {
        self.prepare_product(inst, lay, phi);
        let mut joint = std::mem::take(&mut self.joint);
        let best = self.viterbi_core(&mut joint);
        out.clear();
        for &s in &joint {
            out.extend((0..lay.width).map(|i| lay.digit(s as usize, i)));
        }
        self.joint = joint;
        best
    }

    /// Pair marginals `p(s_{t−1} = s', s_t = s)` of a product chain into `self.pm`.
    fn product_pair_marginals(&mut self, t: usize) {
        let l = self.l;
        self.pm.resize(l * l, 0.0);
        if self.scaled {
            let k = self.m_id[t] as usize;
            let inv = 1.0 / self.c[t];
            let m = &self.m[k * l * l..(k + 1) * l * l];
            for (sp, (row, mrow)) in self
                .pm
                .chunks_exact_mut(l)
                .zip(m.chunks_exact(l))
                .enumerate()
            {
                let a = self.alpha[(t - 1) * l + sp] * inv;
                for (s, (o, &mv)) in row.iter_mut().zip(mrow).enumerate() {
                    *o = a * mv * self.s[t * l + s] * self.beta[t * l + s];
                }
            }
        } else {
            for sp in 0..l {
                for s in 0..l {
                    self.pm[sp * l + s] = self.pair_marginal(t, sp, s);
                }
            }
        }
    }

    /// Calls `add(f, entry, p)` with the marginal p of every entry of every factor's table,
    /// after [`forward_backward_product`](Self::forward_backward_product).
    fn each_factor_marginal_product(
        &mut self,
        inst: &Instance,
        lay: &ProductLayout,
        mut add: impl FnMut(u32, usize, f64),
    ) {
        let l = self.l;
        for t in 0..lay.n {
            for &f in lay.node(t) {
                lay.entry_parts(
                    inst,
                    &inst.factors[f as usize],
                    t,
                    &mut self.ep,
                    &mut self.ec,
                );
                for s in 0..l {
                    add(f, self.ec[s], self.node_marginal(t, s));
                }
            }
            if t == 0 || lay.pair(t).is_empty() {
                continue;
            }
            self.product_pair_marginals(t);
            for &f in lay.pair(t) {
                lay.entry_parts(
                    inst,
                    &inst.factors[f as usize],
                    t,
                    &mut self.ep,
                    &mut self.ec,
                );
                for (row, &base) in self.pm.chunks_exact(l).zip(&self.ep) {
                    for (&p, &e) in row.iter().zip(&self.ec) {
                        add(f, base + e, p);
                    }
                }
            }
            self.ops += (lay.pair(t).len() * l * l) as u64;
        }
    }

    /// Adds `scale ·` (the marginal of each factor's table entries) into `dphi`.
    pub fn add_expectations_product(
        &mut self,
        inst: &Instance,
        lay: &ProductLayout,
        dphi: &mut [f64],
        scale: f64,
    ) {
        self.each_factor_marginal_product(inst, lay, |f, e, p| {
            dphi[inst.table_offset(&inst.factors[f as usize]) + e] += scale * p;
        });
    }

    /// Each factor's table marginal.
    pub fn factor_marginals_product(
        &mut self,
        inst: &Instance,
        lay: &ProductLayout,
    ) -> Vec<Vec<f64>> {
        let mut out: Vec<Vec<f64>> = inst
            .factors
            .iter()
            .map(|f| vec![0.0; inst.slots[f.slot as usize].len as usize])
            .collect();
        self.each_factor_marginal_product(inst, lay, |f, e, p| out[f as usize][e] += p);
        out
    }

    /// Every variable's marginal, after
    /// [`forward_backward_product`](Self::forward_backward_product).
    pub fn var_marginals_product(&self, lay: &ProductLayout) -> Vec<Vec<f64>> {
        let mut out: Vec<Vec<f64>> = (0..lay.n * lay.width)
            .map(|v| vec![0.0; lay.cards[v % lay.width] as usize])
            .collect();
        for t in 0..lay.n {
            for s in 0..self.l {
                let p = self.node_marginal(t, s);
                for i in 0..lay.width {
                    out[t * lay.width + i][lay.digit(s, i) as usize] += p;
                }
            }
        }
        out
    }
}
