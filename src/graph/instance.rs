//! Instance factor graphs: variables, factors with scopes, and table slots.
//!
//! Factors with the same template and the same observations share one *slot*: one table to
//! build, exponentiate and scatter (e.g. every transition factor of a chain whose only
//! transition feature is the always-on one). Estimators add their table gradients per slot.

use super::Model;
use crate::error::{Error, Result};
use rustc_hash::FxHashMap;

#[derive(Clone, Copy, Debug)]
pub struct Factor {
    pub template: u32,
    scope_start: u32,
    arity: u32,
    pub slot: u32,
}

/// One table: the sum of its parts' contributions (usually one part).
#[derive(Clone, Copy, Debug)]
pub struct Slot {
    parts_start: u32,
    parts_end: u32,
    /// Start of this slot's table in the instance's table buffer.
    pub offset: u32,
    pub len: u32,
}

/// A template and its observations; a factor's table is `Σ_parts Σ_k x_k · W_part[k, col(y)]`
/// (e.g. an `edge` factor = the next label's state features + the transition features).
#[derive(Clone, Copy, Debug)]
pub struct Part {
    pub template: u32,
    obs_start: u32,
    obs_end: u32,
}

/// Where the factors of a chain-shaped instance sit: unary factors per position and pairwise
/// factors over `(y_{t-1}, y_t)`; found once by [`Instance`] construction, used by the fast paths.
#[derive(Clone, Debug)]
pub struct ChainLayout {
    pub n: usize,
    /// Common cardinality of every variable.
    pub l: usize,
    unary_ptr: Vec<u32>,
    unary: Vec<u32>,
    pair_ptr: Vec<u32>,
    pair: Vec<u32>,
}

impl ChainLayout {
    /// Unary factors at position `t`.
    pub fn unary(&self, t: usize) -> &[u32] {
        &self.unary[self.unary_ptr[t] as usize..self.unary_ptr[t + 1] as usize]
    }
    /// Pairwise factors over `(t-1, t)`; empty for `t = 0`.
    pub fn pair(&self, t: usize) -> &[u32] {
        &self.pair[self.pair_ptr[t] as usize..self.pair_ptr[t + 1] as usize]
    }
}

/// A sequence of positions of `width` consecutive variables each (the same cardinalities at
/// every position) whose factors each lie within one position or two adjacent ones — a
/// factorial CRF's ladder. Its joint states per position (`states` = Π cards) form a chain, so
/// forward–backward and Viterbi over them are exact (the product-state routines of `inference::chain`).
#[derive(Clone, Debug)]
pub struct ProductLayout {
    /// Positions.
    pub n: usize,
    pub width: usize,
    /// Cardinality of each variable within a position.
    pub cards: Vec<u32>,
    /// Joint states per position; digit `i` of joint state `s` is `(s / radix[i]) % cards[i]`
    /// (the last variable of a position fastest).
    pub states: usize,
    pub radix: Vec<usize>,
    node_ptr: Vec<u32>,
    node: Vec<u32>,
    pair_ptr: Vec<u32>,
    pair: Vec<u32>,
}

/// Product chains with more joint states per position than this are left to BP (a transition
/// matrix has `states²` entries).
pub const MAX_PRODUCT_STATES: usize = 512;

impl ProductLayout {
    /// Factors within position `t`.
    pub fn node(&self, t: usize) -> &[u32] {
        &self.node[self.node_ptr[t] as usize..self.node_ptr[t + 1] as usize]
    }
    /// Factors spanning positions `t − 1` and `t`; empty for `t = 0`.
    pub fn pair(&self, t: usize) -> &[u32] {
        &self.pair[self.pair_ptr[t] as usize..self.pair_ptr[t + 1] as usize]
    }
    /// Label of variable `i` of a position in joint state `s`.
    pub fn digit(&self, s: usize, i: usize) -> u32 {
        ((s / self.radix[i]) % self.cards[i] as usize) as u32
    }
    /// The joint state of position `t` under a full assignment.
    pub fn joint(&self, t: usize, y: &[u32]) -> usize {
        (0..self.width)
            .map(|i| y[t * self.width + i] as usize * self.radix[i])
            .sum()
    }
    /// Entry offsets of factor `f`'s table split by position: `entry(s', s) = prev[s'] +
    /// cur[s]`, where `s'` is the joint state of position `t − 1` and `s` that of `t` (a factor
    /// within position `t` has `prev` all 0).
    pub fn entry_parts(
        &self,
        inst: &Instance,
        f: &Factor,
        t: usize,
        prev: &mut Vec<usize>,
        cur: &mut Vec<usize>,
    ) {
        let s_n = self.states;
        prev.clear();
        prev.resize(s_n, 0);
        cur.clear();
        cur.resize(s_n, 0);
        let scope = inst.scope(f);
        let mut stride = 1usize;
        for &v in scope.iter().rev() {
            let (pos, i) = (v as usize / self.width, v as usize % self.width);
            let out = if pos == t { &mut *cur } else { &mut *prev };
            for (s, o) in out.iter_mut().enumerate() {
                *o += self.digit(s, i) as usize * stride;
            }
            stride *= inst.card[v as usize] as usize;
        }
    }
}

/// One unrolled factor graph with its observations and (optionally) gold labels.
#[derive(Clone, Debug)]
pub struct Instance {
    /// Cardinality of each variable.
    pub card: Vec<u32>,
    pub factors: Vec<Factor>,
    scope: Vec<u32>,
    pub slots: Vec<Slot>,
    parts: Vec<Part>,
    feat: Vec<u32>,
    val: Vec<f64>,
    /// Per observation, the range of its weights in its template's block of θ, resolved once
    /// from the layout so table building needs no row lookups.
    rows: Vec<(u32, u32)>,
    pub gold: Option<Vec<u32>>,
    /// The item's index in its data set (0 when unrolled alone): estimators that draw per item,
    /// like SCL's component selection, seed on it so the objective is deterministic.
    pub id: u64,
    /// Factors touching each variable: `adj[adj_ptr[v]..adj_ptr[v + 1]]`.
    adj_ptr: Vec<u32>,
    adj: Vec<u32>,
    /// Total length of the table buffer.
    pub table_len: usize,
    pub chain: Option<ChainLayout>,
    /// The product-state chain of a ladder of positions (set when the graph is not a chain;
    /// a ladder that is a forest — one position — still gets BP, the cheaper exact method, for
    /// likelihoods, and this for Viterbi).
    pub product: Option<ProductLayout>,
    /// True when the factor graph (variables and factors as nodes) has no cycle, so belief
    /// propagation on it is exact.
    pub forest: bool,
    /// Variables per position when the instance is a sequence of positions laid out
    /// consecutively (1 on a chain; 2 on a Boltzmann chain, label then word), else 0:
    /// k-th order pseudolikelihood takes k consecutive positions.
    pub position_width: u32,
}

impl Instance {
    /// Number of variables per position, when the instance is a sequence.
    pub fn position_width(&self) -> Option<usize> {
        if self.chain.is_some() {
            Some(1)
        } else {
            (self.position_width > 0).then_some(self.position_width as usize)
        }
    }
    pub fn n_vars(&self) -> usize {
        self.card.len()
    }
    /// Factors whose scope contains variable `v`.
    pub fn var_factors(&self, v: u32) -> &[u32] {
        &self.adj[self.adj_ptr[v as usize] as usize..self.adj_ptr[v as usize + 1] as usize]
    }
    pub fn scope(&self, f: &Factor) -> &[u32] {
        &self.scope[self.scope_range(f)]
    }
    /// Where `f`'s scope sits among all factors' scopes laid end to end: one index per
    /// (factor, variable) edge of the factor graph, e.g. for messages.
    pub fn scope_range(&self, f: &Factor) -> std::ops::Range<usize> {
        f.scope_start as usize..(f.scope_start + f.arity) as usize
    }
    /// Number of (factor, variable) edges of the factor graph.
    pub fn n_edges(&self) -> usize {
        self.scope.len()
    }
    /// The parts whose sum is a slot's table.
    pub fn parts(&self, s: &Slot) -> &[Part] {
        &self.parts[s.parts_start as usize..s.parts_end as usize]
    }
    /// A part's observations: (feature, value).
    pub fn obs(&self, p: &Part) -> (&[u32], &[f64]) {
        let r = p.obs_start as usize..p.obs_end as usize;
        (&self.feat[r.clone()], self.values(r))
    }
    /// A part's observation values with their resolved weight ranges.
    pub(crate) fn obs_rows(&self, p: &Part) -> (&[(u32, u32)], &[f64]) {
        let r = p.obs_start as usize..p.obs_end as usize;
        (&self.rows[r.clone()], self.values(r))
    }
    /// The values of observations `r`: stored, or — binary features — a run of ones.
    fn values(&self, r: std::ops::Range<usize>) -> &[f64] {
        if self.val.is_empty() {
            &ONES[..r.len()]
        } else {
            &self.val[r]
        }
    }
    /// Table of factor `f` within a table buffer.
    pub fn table<'a>(&self, f: &Factor, phi: &'a [f64]) -> &'a [f64] {
        let s = &self.slots[f.slot as usize];
        &phi[s.offset as usize..(s.offset + s.len) as usize]
    }
    /// The shape of factor `f`'s table: its scope's cardinalities (a pair factor's `l × l`).
    pub fn table_shape(&self, f: &Factor) -> Vec<usize> {
        self.scope(f)
            .iter()
            .map(|&v| self.card[v as usize] as usize)
            .collect()
    }
    /// `values` (row-major over `f`'s scope, as its table) as an array of the table's shape;
    /// `None` when the length does not fit it (an empty, not computed table).
    pub fn table_array(&self, f: &Factor, values: Vec<f64>) -> Option<ndarray::ArrayD<f64>> {
        ndarray::ArrayD::from_shape_vec(self.table_shape(f), values).ok()
    }
    /// Offset of factor `f`'s table in the table buffer.
    pub fn table_offset(&self, f: &Factor) -> usize {
        self.slots[f.slot as usize].offset as usize
    }
    /// Row-major table entry of factor `f` under a full assignment `y`.
    pub fn entry(&self, f: &Factor, y: &[u32]) -> usize {
        let mut e = 0usize;
        for &v in self.scope(f) {
            e = e * self.card[v as usize] as usize + y[v as usize] as usize;
        }
        e
    }
    /// Σ_a φ_a(y_a): the unnormalised log score of a full assignment.
    pub fn score(&self, phi: &[f64], y: &[u32]) -> f64 {
        self.factors
            .iter()
            .map(|f| phi[self.table_offset(f) + self.entry(f, y)])
            .sum()
    }
    /// Adds `scale` at the entry each factor takes under `y` (the gold indicator of a gradient).
    pub fn add_indicator(&self, y: &[u32], scale: f64, dphi: &mut [f64]) {
        for f in &self.factors {
            dphi[self.table_offset(f) + self.entry(f, y)] += scale;
        }
    }
    /// Number of joint assignments, saturating.
    pub fn joint_states(&self) -> u128 {
        self.card
            .iter()
            .fold(1u128, |a, &c| a.saturating_mul(c as u128))
    }
}

/// Builds an [`Instance`] factor by factor.
pub struct InstanceBuilder<'m> {
    model: &'m Model,
    inst: Instance,
    dedup: FxHashMap<Vec<(u32, u32, u64)>, u32>,
}

impl<'m> InstanceBuilder<'m> {
    pub fn new(model: &'m Model) -> Self {
        InstanceBuilder {
            model,
            inst: Instance {
                card: vec![],
                factors: vec![],
                scope: vec![],
                slots: vec![],
                parts: vec![],
                feat: vec![],
                val: vec![],
                rows: vec![],
                gold: None,
                id: 0,
                adj_ptr: vec![],
                adj: vec![],
                table_len: 0,
                chain: None,
                product: None,
                forest: true,
                position_width: 0,
            },
            dedup: FxHashMap::default(),
        }
    }

    pub fn add_var(&mut self, card: usize) -> u32 {
        self.inst.card.push(card as u32);
        (self.inst.card.len() - 1) as u32
    }

    /// Adds a factor of `template` over `scope` with observations `obs` (feature, value).
    pub fn add_factor(
        &mut self,
        template: usize,
        scope: &[u32],
        obs: &[(u32, f64)],
    ) -> Result<u32> {
        self.add_factor_parts(scope, &[(template, obs)])
    }

    /// Adds a factor whose table is the sum of several parts, each a template with its
    /// observations; every part's template must have the factor's shape.
    pub fn add_factor_parts(
        &mut self,
        scope: &[u32],
        parts: &[(usize, &[(u32, f64)])],
    ) -> Result<u32> {
        if parts.is_empty() {
            return Err(Error::invalid("a factor needs at least one part"));
        }
        for &(template, obs) in parts {
            let tp = self
                .model
                .templates
                .get(template)
                .ok_or_else(|| Error::invalid(format!("no factor template {template}")))?;
            if scope.len() != tp.shape.len() {
                return Err(Error::invalid(format!(
                    "template {} takes {} variables, got {}",
                    tp.name,
                    tp.shape.len(),
                    scope.len()
                )));
            }
            for (&v, &c) in scope.iter().zip(&tp.shape) {
                let card = *self
                    .inst
                    .card
                    .get(v as usize)
                    .ok_or_else(|| Error::invalid(format!("no variable {v}")))?;
                if card as usize != c {
                    return Err(Error::invalid(format!(
                        "template {} expects {c} states for variable {v}, it has {card}",
                        tp.name
                    )));
                }
            }
            if let Some(&(k, _)) = obs.iter().find(|(k, _)| *k as usize >= tp.n_features) {
                return Err(Error::invalid(format!(
                    "feature {k} out of range for template {}",
                    tp.name
                )));
            }
        }
        let key: Vec<(u32, u32, u64)> = parts
            .iter()
            .flat_map(|&(t, obs)| {
                std::iter::once((t as u32, u32::MAX, 0))
                    .chain(obs.iter().map(move |&(k, v)| (t as u32, k, v.to_bits())))
            })
            .collect();
        let slot = match self.dedup.get(&key) {
            Some(&s) => s,
            None => {
                let s = self.inst.slots.len() as u32;
                let parts_start = self.inst.parts.len() as u32;
                for &(template, obs) in parts {
                    let tp = &self.model.templates[template];
                    let start = self.inst.feat.len() as u32;
                    for &(k, v) in obs {
                        self.inst.feat.push(k);
                        self.inst.val.push(v);
                        self.inst.rows.push(tp.row_range(k as usize));
                    }
                    self.inst.parts.push(Part {
                        template: template as u32,
                        obs_start: start,
                        obs_end: self.inst.feat.len() as u32,
                    });
                }
                let len = self.model.templates[parts[0].0].n_entries() as u32;
                self.inst.slots.push(Slot {
                    parts_start,
                    parts_end: self.inst.parts.len() as u32,
                    offset: self.inst.table_len as u32,
                    len,
                });
                self.inst.table_len += len as usize;
                self.dedup.insert(key, s);
                s
            }
        };
        let scope_start = self.inst.scope.len() as u32;
        self.inst.scope.extend_from_slice(scope);
        self.inst.factors.push(Factor {
            template: parts[0].0 as u32,
            scope_start,
            arity: scope.len() as u32,
            slot,
        });
        Ok((self.inst.factors.len() - 1) as u32)
    }

    /// Declares the instance a sequence of positions of `w` consecutive variables each.
    pub fn set_position_width(&mut self, w: u32) {
        self.inst.position_width = w;
    }

    pub fn set_gold(&mut self, gold: Vec<u32>) -> Result<()> {
        if gold.len() != self.inst.card.len() {
            return Err(Error::invalid("gold labels do not match the variables"));
        }
        if gold.iter().zip(&self.inst.card).any(|(&g, &c)| g >= c) {
            return Err(Error::invalid("gold label out of range"));
        }
        self.inst.gold = Some(gold);
        Ok(())
    }

    pub fn finish(mut self) -> Instance {
        let n = self.inst.card.len();
        let mut lists: Vec<Vec<u32>> = vec![vec![]; n];
        for (i, f) in self.inst.factors.iter().enumerate() {
            for &v in self.inst.scope(f) {
                lists[v as usize].push(i as u32);
            }
        }
        self.inst.adj_ptr = vec![0];
        for l in lists {
            self.inst.adj.extend(l);
            self.inst.adj_ptr.push(self.inst.adj.len() as u32);
        }
        // Binary features (every value 1, the usual case) store no values; the slack of
        // growing vectors goes (issue 46: memory per token of a large corpus).
        let longest = self
            .inst
            .parts
            .iter()
            .map(|p| (p.obs_end - p.obs_start) as usize)
            .max()
            .unwrap_or(0);
        if longest <= ONES.len() && self.inst.val.iter().all(|&v| v == 1.0) {
            self.inst.val = Vec::new();
        }
        let i = &mut self.inst;
        i.card.shrink_to_fit();
        i.factors.shrink_to_fit();
        i.scope.shrink_to_fit();
        i.slots.shrink_to_fit();
        i.parts.shrink_to_fit();
        i.feat.shrink_to_fit();
        i.val.shrink_to_fit();
        i.rows.shrink_to_fit();
        i.adj.shrink_to_fit();
        i.adj_ptr.shrink_to_fit();
        self.inst.chain = detect_chain(&self.inst);
        self.inst.forest = is_forest(&self.inst);
        if self.inst.chain.is_none() {
            self.inst.product = detect_product(&self.inst);
        }
        self.inst
    }
}

/// The values of a binary part's observations, read in place of stored ones.
static ONES: [f64; 4096] = [1.0; 4096];

/// A graph is a forest when edges = nodes − components; union–find over variables and factors.
fn is_forest(inst: &Instance) -> bool {
    let n = inst.card.len();
    let mut parent: Vec<usize> = (0..n + inst.factors.len()).collect();
    fn root(p: &mut [usize], mut x: usize) -> usize {
        while p[x] != x {
            p[x] = p[p[x]];
            x = p[x];
        }
        x
    }
    for (i, f) in inst.factors.iter().enumerate() {
        for &v in inst.scope(f) {
            let (a, b) = (root(&mut parent, n + i), root(&mut parent, v as usize));
            if a == b {
                return false;
            }
            parent[a] = b;
        }
    }
    true
}

/// A chain: all variables share one cardinality and every factor is unary or pairwise over
/// `(t-1, t)` in that order.
fn detect_chain(inst: &Instance) -> Option<ChainLayout> {
    let n = inst.card.len();
    if n == 0 {
        return None;
    }
    let l = inst.card[0] as usize;
    if inst.card.iter().any(|&c| c as usize != l) {
        return None;
    }
    let mut unary: Vec<Vec<u32>> = vec![vec![]; n];
    let mut pair: Vec<Vec<u32>> = vec![vec![]; n];
    for (i, f) in inst.factors.iter().enumerate() {
        match *inst.scope(f) {
            [a] => unary[a as usize].push(i as u32),
            [a, b] if b >= 1 && a == b - 1 => pair[b as usize].push(i as u32),
            _ => return None,
        }
    }
    let (unary_ptr, unary) = flatten(unary);
    let (pair_ptr, pair) = flatten(pair);
    Some(ChainLayout {
        n,
        l,
        unary_ptr,
        unary,
        pair_ptr,
        pair,
    })
}

/// A ladder: positions of `position_width ≥ 2` variables with equal cardinalities at every
/// position, every factor within one position or two adjacent ones, and few joint states.
fn detect_product(inst: &Instance) -> Option<ProductLayout> {
    let width = inst.position_width as usize;
    let nv = inst.card.len();
    if width < 2 || nv == 0 || !nv.is_multiple_of(width) {
        return None;
    }
    let cards: Vec<u32> = inst.card[..width].to_vec();
    if inst.card.chunks(width).any(|c| c != cards.as_slice()) {
        return None;
    }
    let states = cards
        .iter()
        .try_fold(1usize, |a, &c| a.checked_mul(c as usize))?;
    if states > MAX_PRODUCT_STATES {
        return None;
    }
    let mut radix = vec![1usize; width];
    for i in (0..width - 1).rev() {
        radix[i] = radix[i + 1] * cards[i + 1] as usize;
    }
    let n = nv / width;
    let mut node: Vec<Vec<u32>> = vec![vec![]; n];
    let mut pair: Vec<Vec<u32>> = vec![vec![]; n];
    for (i, f) in inst.factors.iter().enumerate() {
        let scope = inst.scope(f);
        let lo = scope.iter().map(|&v| v as usize / width).min()?;
        let hi = scope.iter().map(|&v| v as usize / width).max()?;
        match hi - lo {
            0 => node[lo].push(i as u32),
            1 => pair[hi].push(i as u32),
            _ => return None,
        }
    }
    let (node_ptr, node) = flatten(node);
    let (pair_ptr, pair) = flatten(pair);
    Some(ProductLayout {
        n,
        width,
        cards,
        states,
        radix,
        node_ptr,
        node,
        pair_ptr,
        pair,
    })
}

/// Lists laid end to end: (start of each list and the end, items).
fn flatten(v: Vec<Vec<u32>>) -> (Vec<u32>, Vec<u32>) {
    let mut ptr = vec![0u32];
    let mut flat = vec![];
    for x in v {
        flat.extend(x);
        ptr.push(flat.len() as u32);
    }
    (ptr, flat)
}
