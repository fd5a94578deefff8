//! Local terms and their evaluation.
//!
//! A term names its factors, its free variables, its clamped variables (held at their gold
//! labels) and its summed-out variables. With temperature μ and weight w its value is
//!
//! `w · μ · [ log Σ_{y_sum} exp(S(y*_free, y_sum, y*_clamped)/μ) − log Σ_{y_free, y_sum} exp(S(·)/μ) ]`
//!
//! where `S` is the sum of the term's factor tables. With μ = 1 this is `w · log p(y*_free | y*_clamped)`
//! computed from those factors alone; μ ≠ 1 gives reweighted piecewise terms (000, eq. 35).
//! A *whole-graph* term (every factor, every variable free) gets its log partition function from
//! inference: forward–backward on a chain, exact belief propagation on a forest, enumeration on
//! a small graph, and — only when its list allows the Bethe approximation (the `bp` estimator) —
//! loopy BP, whose `−F_Bethe` stands in for log Z. Every other term enumerates its free × summed
//! states, reading each factor's entry through precomputed strides.
//!
//! Two extensions serve piecewise training with "none of the above" (001 eq. 6, 003 §3): a
//! term's normaliser may hold the extra outcome NOTA, whose score is fixed at 0
//! (`log(1 + Σ exp S)`), and its numerator may be that outcome instead of the gold labels
//! (`log p̃(NOTA | y′) = −log(1 + Σ_y exp S(y, y′))`); and one clamped variable may be held at a
//! state other than its gold label (the wrong source state y′ of a NOTA term).

use super::forest_term::{forest_term, is_forest_term, ForestWork};
use crate::error::{Error, Result};
use crate::graph::{Instance, TableReads};
use crate::inference::bp::{self, tree_bp_options, BpOptions, Semiring};
use crate::inference::{self, InferWork, Method, Task};
use crate::util::{exp_shifted_into, next_assignment};

/// Largest number of free × summed states one enumerated term may have.
pub const MAX_TERM_STATES: u128 = 1 << 20;

/// Terms with more free × summed states than this are evaluated by sum-product when their
/// reduced graph is a forest ([`super::forest_term`]); smaller ones are enumerated.
pub const FOREST_MIN_STATES: u128 = 1 << 12;

/// Whether a term's local distribution has the extra outcome "none of the above" (001 eq. 6).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Nota {
    /// No NOTA outcome: `log p̃(y*_free | ·)` normalised over the free states.
    #[default]
    Without,
    /// NOTA in the normaliser, the gold labels in the numerator: `S(y*) − log(1 + Σ exp S)`.
    Normaliser,
    /// NOTA is the outcome: `log p̃(NOTA | ·) = −log(1 + Σ exp S)`.
    Outcome,
}

/// What terms of one shape share: their factors and variables, μ, and the clamped variable
/// they may hold off gold.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Shape {
    factors: (u32, u32),
    free: (u32, u32),
    clamped: (u32, u32),
    summed: (u32, u32),
    temperature: f64,
    /// The clamped variable a term of this shape holds off gold (`u32::MAX`: none yet).
    off_var: u32,
}

/// One term: its shape, weight, NOTA mode and the state of its shape's off-gold variable.
/// Small, since a chain with NOTA terms has one per (position, wrong source state).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Head {
    weight: f64,
    shape: u32,
    /// The off-gold state (`u32::MAX`: every clamped variable at gold).
    off_state: u32,
    nota: Nota,
}

/// The terms of one instance, stored flat so refilling it allocates nothing once warm.
#[derive(Clone, Debug, Default)]
pub struct TermList {
    heads: Vec<Head>,
    shapes: Vec<Shape>,
    factors: Vec<u32>,
    free: Vec<u32>,
    clamped: Vec<u32>,
    summed: Vec<u32>,
    open: Option<(u32, u32, u32, u32)>,
    open_nota: Nota,
    open_off_gold: Option<(u32, u32)>,
    /// When set, whole-graph terms on graphs with cycles take log Z from loopy BP (Bethe) with
    /// these options instead of requiring exact inference.
    pub bethe: Option<BpOptions>,
    /// Scratch for estimators building terms (pairs, piece factors, piece variables).
    pub scratch: Vec<u32>,
    pub scratch_vars: Vec<u32>,
}

/// One term, borrowed from a [`TermList`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Term<'a> {
    /// Loopy BP options when the term's log Z may be the Bethe approximation.
    pub bethe: Option<&'a BpOptions>,
    pub factors: &'a [u32],
    pub free: &'a [u32],
    pub clamped: &'a [u32],
    pub summed: &'a [u32],
    pub weight: f64,
    pub temperature: f64,
    /// The NOTA outcome, in the normaliser or as the outcome.
    pub nota: Nota,
    /// A clamped variable held at this state instead of its gold label.
    pub off_gold: Option<(u32, u32)>,
}

impl TermList {
    pub fn clear(&mut self) {
        self.heads.clear();
        self.shapes.clear();
        self.factors.clear();
        self.free.clear();
        self.clamped.clear();
        self.summed.clear();
        self.open = None;
        self.open_nota = Nota::Without;
        self.open_off_gold = None;
        self.bethe = None;
    }
    /// Drops scratch and spare capacity, for a list that is kept (one per instance).
    pub fn compact(&mut self) {
        self.scratch = Vec::new();
        self.scratch_vars = Vec::new();
        self.heads.shrink_to_fit();
        self.shapes.shrink_to_fit();
        self.factors.shrink_to_fit();
        self.free.shrink_to_fit();
        self.clamped.shrink_to_fit();
        self.summed.shrink_to_fit();
    }
    pub fn len(&self) -> usize {
        self.heads.len()
    }
    pub fn is_empty(&self) -> bool {
        self.heads.is_empty()
    }
    /// Starts a term; add its factors and variables, then [`end`](Self::end) it.
    pub fn begin(&mut self) {
        self.open = Some((
            self.factors.len() as u32,
            self.free.len() as u32,
            self.clamped.len() as u32,
            self.summed.len() as u32,
        ));
    }
    pub fn factor(&mut self, f: u32) {
        self.factors.push(f);
    }
    pub fn free(&mut self, v: u32) {
        self.free.push(v);
    }
    /// Clamps `v` unless the open term already holds it (free, clamped or summed).
    pub fn clamp(&mut self, v: u32) {
        let (_, f0, c0, s0) = self.open.expect("begin() first");
        if !self.free[f0 as usize..].contains(&v)
            && !self.clamped[c0 as usize..].contains(&v)
            && !self.summed[s0 as usize..].contains(&v)
        {
            self.clamped.push(v);
        }
    }
    pub fn sum(&mut self, v: u32) {
        self.summed.push(v);
    }
    /// Clamps `v` at `state` rather than at its gold label (one such variable per term).
    pub fn clamp_at(&mut self, v: u32, state: u32) {
        assert!(self.open_off_gold.is_none(), "one off-gold clamp per term");
        self.clamp(v);
        self.open_off_gold = Some((v, state));
    }
    /// Gives the open term the NOTA outcome (001 eq. 6).
    pub fn nota(&mut self, mode: Nota) {
        self.open_nota = mode;
    }
    /// Whether the open term already has `v` free.
    pub fn has_free(&self, v: u32) -> bool {
        let (_, b, ..) = self.open.expect("begin() first");
        self.free[b as usize..].contains(&v)
    }
    /// Whether the open term already sums `v` out.
    pub fn has_summed(&self, v: u32) -> bool {
        let (.., d) = self.open.expect("begin() first");
        self.summed[d as usize..].contains(&v)
    }
    /// Whether the open term already lists factor `f`.
    pub fn has_factor(&self, f: u32) -> bool {
        let (a, ..) = self.open.expect("begin() first");
        self.factors[a as usize..].contains(&f)
    }
    pub fn end(&mut self, weight: f64, temperature: f64) {
        let (a, b, c, d) = self.open.take().expect("begin() first");
        let off = self.open_off_gold.take();
        let shape = Shape {
            factors: (a, self.factors.len() as u32),
            free: (b, self.free.len() as u32),
            clamped: (c, self.clamped.len() as u32),
            summed: (d, self.summed.len() as u32),
            temperature,
            off_var: off.map_or(u32::MAX, |(v, _)| v),
        };
        // A term of the previous term's shape (a NOTA term beside its position's term) shares
        // it: stored once, and evaluated with it ([`source_run`]).
        let r = |(x, y): (u32, u32)| x as usize..y as usize;
        let same = self.shapes.last_mut().filter(|p| {
            p.temperature == temperature
                && (p.off_var == shape.off_var
                    || p.off_var == u32::MAX
                    || shape.off_var == u32::MAX)
                && self.factors[r(p.factors)] == self.factors[r(shape.factors)]
                && self.free[r(p.free)] == self.free[r(shape.free)]
                && self.clamped[r(p.clamped)] == self.clamped[r(shape.clamped)]
                && self.summed[r(p.summed)] == self.summed[r(shape.summed)]
        });
        match same {
            Some(p) => {
                if p.off_var == u32::MAX {
                    p.off_var = shape.off_var;
                }
                self.factors.truncate(a as usize);
                self.free.truncate(b as usize);
                self.clamped.truncate(c as usize);
                self.summed.truncate(d as usize);
            }
            None => self.shapes.push(shape),
        }
        self.heads.push(Head {
            weight,
            shape: self.shapes.len() as u32 - 1,
            off_state: off.map_or(u32::MAX, |(_, y)| y),
            nota: std::mem::take(&mut self.open_nota),
        });
    }

    /// The end of the run of terms of term `i`'s shape that starts at `i`.
    fn shape_run_end(&self, i: usize) -> usize {
        let shape = self.heads[i].shape;
        let mut j = i + 1;
        while j < self.heads.len() && self.heads[j].shape == shape {
            j += 1;
        }
        j
    }

    pub fn get(&self, i: usize) -> Term<'_> {
        let h = &self.heads[i];
        let sh = &self.shapes[h.shape as usize];
        let r = |(a, b): (u32, u32)| a as usize..b as usize;
        Term {
            bethe: self.bethe.as_ref(),
            factors: &self.factors[r(sh.factors)],
            free: &self.free[r(sh.free)],
            clamped: &self.clamped[r(sh.clamped)],
            summed: &self.summed[r(sh.summed)],
            weight: h.weight,
            temperature: sh.temperature,
            nota: h.nota,
            off_gold: (h.off_state != u32::MAX).then_some((sh.off_var, h.off_state)),
        }
    }
    pub fn iter(&self) -> impl Iterator<Item = Term<'_>> {
        (0..self.len()).map(|i| self.get(i))
    }

    /// Adds `dw` to term `i`'s weight (identical terms pooled into one).
    pub(crate) fn add_weight(&mut self, i: usize, dw: f64) {
        self.heads[i].weight += dw;
    }

    /// The terms `keep` selects, in order, as a list of their own.
    pub(crate) fn retained(&self, keep: impl Fn(usize) -> bool) -> TermList {
        let mut out = TermList {
            bethe: self.bethe,
            ..TermList::default()
        };
        for i in (0..self.len()).filter(|&i| keep(i)) {
            let t = self.get(i);
            out.begin();
            t.factors.iter().for_each(|&f| out.factor(f));
            t.free.iter().for_each(|&v| out.free(v));
            t.clamped.iter().for_each(|&v| out.clamp(v));
            t.summed.iter().for_each(|&v| out.sum(v));
            if let Some((v, y)) = t.off_gold {
                out.clamp_at(v, y);
            }
            out.nota(t.nota);
            out.end(t.weight, t.temperature);
        }
        out.compact();
        out
    }
}

impl Term<'_> {
    /// True when the term is the whole instance with every variable free: its log partition
    /// function is the model's, and inference computes it.
    pub fn is_whole_graph(&self, inst: &Instance) -> bool {
        self.temperature == 1.0
            && self.nota == Nota::Without
            && self.clamped.is_empty()
            && self.summed.is_empty()
            && self.factors.len() == inst.factors.len()
            && self.free.len() == inst.n_vars()
    }

    /// Number of free × summed states.
    pub fn states(&self, inst: &Instance) -> u128 {
        self.free.iter().chain(self.summed).fold(1u128, |a, &v| {
            a.saturating_mul(inst.card[v as usize] as u128)
        })
    }

    /// How a whole-graph term gets log Z on `inst`; `None` for other terms and for graphs that
    /// only enumeration could do (small enough or not: [`check`](Self::check) says).
    pub fn global_inference(&self, inst: &Instance) -> Option<GlobalInference> {
        if !self.is_whole_graph(inst) {
            return None;
        }
        // Enumeration of a whole graph is the term machinery's own path, so the chooser is asked
        // for the structured methods only.
        match (inference::choose(inst, Task::Marginals, 0), self.bethe) {
            (Method::ForwardBackward, _) => Some(GlobalInference::ForwardBackward),
            (Method::TreeBp, _) => Some(GlobalInference::TreeBp),
            // The `bp` estimator runs loopy BP even where exact inference exists: it is the
            // approximation under study.
            (_, Some(o)) => Some(GlobalInference::LoopyBp(*o)),
            (Method::ProductForwardBackward, None) => Some(GlobalInference::ProductForwardBackward),
            (Method::Enumeration | Method::LoopyBp, None) => None,
        }
    }

    /// Checks the term against its instance: every variable a factor touches is free, clamped or
    /// summed; the state space is small enough (or inference handles the whole graph).
    pub fn check(&self, inst: &Instance) -> Result<()> {
        if self.temperature.is_nan() || self.temperature <= 0.0 {
            return Err(Error::invalid("a term's temperature μ must be positive"));
        }
        if let Some(o) = self.bethe {
            o.check()?;
        }
        if let Some((v, y)) = self.off_gold {
            if !self.clamped.contains(&v) || y >= inst.card[v as usize] {
                return Err(Error::invalid(format!(
                    "a term holds variable {v} at state {y}, which it does not clamp or which \
                     is out of range"
                )));
            }
        }
        if self.nota != Nota::Without && self.states(inst) > MAX_TERM_STATES {
            return Err(Error::invalid(
                "a term with the NOTA outcome is enumerated and has too many states",
            ));
        }
        if self.global_inference(inst).is_some() {
            return Ok(());
        }
        for &f in self.factors {
            for &v in inst.scope(&inst.factors[f as usize]) {
                if !self.free.contains(&v)
                    && !self.clamped.contains(&v)
                    && !self.summed.contains(&v)
                {
                    return Err(Error::invalid(format!(
                        "term over factor {f} leaves variable {v} neither free, clamped nor summed"
                    )));
                }
            }
        }
        let states = self.states(inst);
        if states > FOREST_MIN_STATES && !self.is_whole_graph(inst) && is_forest_term(inst, self) {
            return Ok(());
        }
        if states > MAX_TERM_STATES {
            if self.is_whole_graph(inst) {
                return Err(Error::invalid(format!(
                    "exact likelihood on a graph with cycles needs enumeration, and this one has \
                     {states} joint states (limit {MAX_TERM_STATES}); use the bp estimator \
                     (Bethe approximation) or a local one"
                )));
            }
            return Err(Error::invalid(format!(
                "a term with {states} free × summed states is too large to enumerate (limit {MAX_TERM_STATES})"
            )));
        }
        Ok(())
    }
}

/// Where a whole-graph term's log Z comes from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum GlobalInference {
    /// Forward–backward on a chain (exact).
    ForwardBackward,
    /// Forward–backward over the joint states of a ladder's positions (exact; a factorial CRF).
    ProductForwardBackward,
    /// Belief propagation on a forest (exact).
    TreeBp,
    /// Loopy BP; log Z is the Bethe approximation.
    LoopyBp(BpOptions),
}

/// Reusable buffers for enumerated terms.
#[derive(Clone, Debug, Default)]
pub struct TermWork {
    vars: Vec<u32>,
    card: Vec<u32>,
    base: Vec<usize>,
    stride: Vec<usize>,
    digits: Vec<u32>,
    scores: Vec<f64>,
    probs: Vec<f64>,
    probs_num: Vec<f64>,
    marg_a: Vec<f64>,
    marg_b: Vec<f64>,
    entries: Vec<usize>,
    /// Per factor, its table entry at the current assignment (updated digit by digit).
    entry_now: Vec<usize>,
    gold_free: Vec<bool>,
    /// The gold labels with one term's off-gold clamp applied.
    assign: Vec<u32>,
    pub(crate) cache: LineCache,
    /// Terms too large to enumerate whose reduced graph is a forest.
    forest: ForestWork,
    /// Runs of terms that differ in one clamped variable's state.
    run: RunWork,
    pub ops: u64,
}

/// Scratch for [`source_run`], and the exponentiated rows of shared tables it has read in the
/// current instance.
#[derive(Clone, Debug, Default)]
struct RunWork {
    /// Σ of the factors without the source variable, per state of the free one.
    u: Vec<f64>,
    /// `exp(u − max u)`.
    u_exp: Vec<f64>,
    /// The gradient of the run's terms in `u`.
    du: Vec<f64>,
    scores: Vec<f64>,
    probs: Vec<f64>,
    /// Factors without the source variable: (entry at free state 0, free stride).
    fixed: Vec<(usize, usize)>,
    /// Factors with it: (entry at free and source state 0, free stride, source stride).
    moving: Vec<(usize, usize, usize)>,
    tables: Vec<ExpTable>,
    /// Rows of the tables: `exp(row − max row)`.
    rows: Vec<f64>,
    /// Per row: its max, or NaN while it is not yet computed.
    row_max: Vec<f64>,
    /// Per row: e^max, NaN where out of range ([`exp_in_range`]).
    row_max_exp: Vec<f64>,
}

/// A shared table read by rows (source state) × columns (free state), exponentiated row by row
/// on first use.
#[derive(Clone, Copy, Debug)]
struct ExpTable {
    key: (usize, usize, usize),
    /// Row r's entries at `rows[start + r·cols ..]`, its max at `row_max[max_start + r]`.
    start: usize,
    max_start: usize,
    cols: usize,
}

/// Softmaxes over *lines* of shared tables (a whole table, or a row/column with the rest
/// clamped), computed once per instance and reused by every term over the same line.
#[derive(Clone, Debug, Default)]
pub struct LineCache {
    /// Factors per slot of the current instance; only shared slots are cached.
    slot_mult: Vec<u32>,
    lines: Vec<Line>,
    line_probs: Vec<f64>,
    scores: Vec<f64>,
    probs: Vec<f64>,
    pub(crate) ops: u64,
}

/// `phi[base + y·stride]` for y < len at temperature μ, with its log partition function, its
/// softmax (in `line_probs[start..]`) and the summed weight of the terms that used it (their
/// softmax gradient is flushed once, at the end of the instance).
#[derive(Clone, Copy, Debug)]
struct Line {
    base: usize,
    stride: usize,
    len: usize,
    mu: f64,
    /// The normaliser holds the NOTA outcome (score 0).
    nota: bool,
    lse: f64,
    start: usize,
    coef: f64,
}

impl LineCache {
    /// Whether several factors of the current instance share slot `slot`.
    pub(crate) fn shared(&self, slot: u32) -> bool {
        self.slot_mult.get(slot as usize).copied().unwrap_or(0) > 1
    }

    /// log Σ_y exp(φ[base + y·stride]/μ) of line `i`.
    pub(crate) fn lse(&self, i: usize) -> f64 {
        self.lines[i].lse
    }

    /// Adds `c` to line `i`'s deferred coefficient: `c`·softmax is subtracted from the gradient
    /// once, at the end of the instance.
    pub(crate) fn add_coef(&mut self, i: usize, c: f64) {
        self.lines[i].coef += c;
    }

    /// Index of the cached line, computing it on first use.
    pub(crate) fn line(
        &mut self,
        phi: &[f64],
        base: usize,
        stride: usize,
        len: usize,
        mu: f64,
    ) -> usize {
        self.line_nota(phi, (base, stride, len), mu, false)
    }

    /// [`line`](Self::line), optionally with the NOTA outcome in the normaliser.
    pub(crate) fn line_nota(
        &mut self,
        phi: &[f64],
        (base, stride, len): (usize, usize, usize),
        mu: f64,
        nota: bool,
    ) -> usize {
        if let Some(i) = self.lines.iter().position(|l| {
            l.base == base && l.stride == stride && l.len == len && l.mu == mu && l.nota == nota
        }) {
            return i;
        }
        self.scores.clear();
        self.scores
            .extend((0..len).map(|y| phi[base + y * stride] / mu));
        let lse = log_sum_exp_into(&self.scores, None, nota, &mut self.probs);
        let start = self.line_probs.len();
        self.line_probs.extend_from_slice(&self.probs);
        self.ops += len as u64;
        self.lines.push(Line {
            base,
            stride,
            len,
            mu,
            nota,
            lse,
            start,
            coef: 0.0,
        });
        self.lines.len() - 1
    }
}

impl TermWork {
    /// A term `w·(φ[base + g·stride] − μ·log Σ_y exp(φ[base + y·stride]/μ))` over a line of a
    /// shared table; with NOTA, the normaliser holds a 1 and the outcome is `g` or NOTA (score 0).
    #[allow(clippy::too_many_arguments)]
    fn line_term(
        &mut self,
        phi: &[f64],
        line: (usize, usize, usize),
        g: usize,
        nota: Nota,
        mu: f64,
        w: f64,
        dphi: Option<&mut [f64]>,
    ) -> f64 {
        let (base, stride, _) = line;
        let i = self.cache.line_nota(phi, line, mu, nota != Nota::Without);
        let num = match nota {
            Nota::Outcome => 0.0,
            _ => phi[base + g * stride],
        };
        if let Some(d) = dphi {
            if nota != Nota::Outcome {
                d[base + g * stride] += w;
            }
            self.cache.add_coef(i, w);
        }
        w * (num - mu * self.cache.lse(i))
    }
}

/// Σ of the values of an instance's terms; when `dphi` is given, adds ∂/∂φ into it.
pub fn evaluate_terms(
    inst: &Instance,
    phi: &[f64],
    gold: &[u32],
    list: &TermList,
    mut dphi: Option<&mut [f64]>,
    tw: &mut TermWork,
    infer: &mut InferWork,
) -> f64 {
    let c = &mut tw.cache;
    c.slot_mult.clear();
    c.slot_mult.resize(inst.slots.len(), 0);
    for f in &inst.factors {
        c.slot_mult[f.slot as usize] += 1;
    }
    c.lines.clear();
    c.line_probs.clear();
    tw.run.tables.clear();
    tw.run.rows.clear();
    tw.run.row_max.clear();
    tw.run.row_max_exp.clear();
    let mut value = 0.0;
    let mut assign = std::mem::take(&mut tw.assign);
    assign.clear();
    let mut i = 0;
    while i < list.len() {
        let end = list.shape_run_end(i);
        if end > i + 1 {
            if let Some(v) = run_source(inst, list, i..end) {
                value += source_run(inst, phi, gold, list, i..end, v, dphi.as_deref_mut(), tw);
                i = end;
                continue;
            }
        }
        let t = list.get(i);
        i += 1;
        value += match t.off_gold {
            None => evaluate_term(inst, phi, gold, t, dphi.as_deref_mut(), tw, infer),
            Some((v, y)) => {
                if assign.is_empty() {
                    assign.extend_from_slice(gold);
                }
                assign[v as usize] = y;
                let x = evaluate_term(inst, phi, &assign, t, dphi.as_deref_mut(), tw, infer);
                assign[v as usize] = gold[v as usize];
                x
            }
        };
    }
    tw.assign = assign;
    // Deferred softmax part of the cached lines' gradients, once per line.
    if let Some(d) = dphi {
        let c = &tw.cache;
        for l in &c.lines {
            for (y, &p) in c.line_probs[l.start..l.start + l.len].iter().enumerate() {
                d[l.base + y * l.stride] -= l.coef * p;
            }
        }
    }
    tw.ops += std::mem::take(&mut tw.cache.ops);
    value
}

/// The table entries the terms of `list` read: for each term and each of its factors, every
/// entry with the term's clamped variables at gold and its free and summed variables at any
/// state. A whole-graph term reads everything. [`evaluate_terms`] touches no other entry of `φ`
/// or `dphi`, so tables may be built on this subset alone.
pub fn table_reads(inst: &Instance, gold: &[u32], list: &TermList) -> TableReads {
    if list.iter().any(|t| t.is_whole_graph(inst)) {
        return TableReads::whole(inst);
    }
    let mut marks = vec![false; inst.table_len];
    let mut vars = Vec::new();
    let mut strides = Vec::new();
    let mut card = Vec::new();
    let mut digits = Vec::new();
    let mut assign = gold.to_vec();
    for t in list.iter() {
        if let Some((v, y)) = t.off_gold {
            assign[v as usize] = y;
        }
        for &f in t.factors {
            vars.clear();
            vars.extend_from_slice(t.free);
            vars.extend_from_slice(t.summed);
            strides.clear();
            strides.resize(vars.len(), 0);
            let base = factor_strides(inst, f, &assign, &vars, &mut strides);
            // Only the term's variables in this factor's scope move its entry.
            card.clear();
            let mut k = 0;
            for i in 0..vars.len() {
                if strides[i] > 0 {
                    strides[k] = strides[i];
                    card.push(inst.card[vars[i] as usize]);
                    k += 1;
                }
            }
            strides.truncate(k);
            digits.clear();
            digits.resize(k, 0u32);
            loop {
                let e: usize = base
                    + digits
                        .iter()
                        .zip(&strides)
                        .map(|(&d, &st)| d as usize * st)
                        .sum::<usize>();
                marks[e] = true;
                if !next_assignment(&mut digits, &card) {
                    break;
                }
            }
        }
        if let Some((v, _)) = t.off_gold {
            assign[v as usize] = gold[v as usize];
        }
    }
    TableReads::from_marks(inst, &marks)
}

/// Value of one term; when `dphi` is given, adds ∂value/∂φ into it (whole-table terms leave
/// part of their gradient for [`evaluate_terms`] to flush).
fn evaluate_term(
    inst: &Instance,
    phi: &[f64],
    gold: &[u32],
    t: Term<'_>,
    dphi: Option<&mut [f64]>,
    tw: &mut TermWork,
    infer: &mut InferWork,
) -> f64 {
    let w = t.weight;
    let mut dphi = dphi;
    // Large terms over a forest (a whole tree-shaped instance too): two sum-product passes,
    // with leaves hanging off shared tables read from the instance's cached lines.
    let try_forest = match t.global_inference(inst) {
        Some(GlobalInference::ForwardBackward | GlobalInference::ProductForwardBackward) => false,
        Some(_) => inst.forest,
        None => t.nota == Nota::Without,
    };
    if try_forest && t.states(inst) > FOREST_MIN_STATES {
        if let Some(v) = forest_term(
            inst,
            phi,
            gold,
            &t,
            dphi.as_deref_mut(),
            &mut tw.forest,
            &mut tw.cache,
        ) {
            tw.ops += std::mem::take(&mut tw.forest.ops);
            return v;
        }
    }
    if let Some(g) = t.global_inference(inst) {
        return global_term(inst, phi, gold, w, g, dphi, infer);
    }
    if t.summed.is_empty() && t.factors.len() == 1 && t.clamped.is_empty() {
        return table_term(inst, phi, gold, t, dphi, tw);
    }
    if t.summed.is_empty() && t.free.len() == 1 {
        return one_free_term(inst, phi, gold, t, dphi, tw);
    }
    if t.summed.is_empty() && t.free.len() == 2 && t.nota == Nota::Without {
        return two_free_term(inst, phi, gold, t, dphi, tw);
    }
    enumerated_term(inst, phi, gold, t, dphi, tw)
}

/// A whole-graph term by the inference its shape allows: `w (score(y*) − log Z)`, log Z by
/// forward–backward (over joint states on a ladder) or BP (exact on a forest, Bethe otherwise).
fn global_term(
    inst: &Instance,
    phi: &[f64],
    gold: &[u32],
    w: f64,
    g: GlobalInference,
    dphi: Option<&mut [f64]>,
    infer: &mut InferWork,
) -> f64 {
    match g {
        GlobalInference::ForwardBackward => {
            let lay = inst.chain.as_ref().unwrap();
            let log_z = infer.chain.forward_backward(inst, lay, phi);
            if let Some(d) = dphi {
                inst.add_indicator(gold, w, d);
                crate::inference::chain::add_expectations(&mut infer.chain, inst, lay, d, -w);
            }
            w * (inst.score(phi, gold) - log_z)
        }
        GlobalInference::ProductForwardBackward => {
            let lay = inst.product.as_ref().unwrap();
            let log_z = infer.chain.forward_backward_product(inst, lay, phi);
            if let Some(d) = dphi {
                inst.add_indicator(gold, w, d);
                infer.chain.add_expectations_product(inst, lay, d, -w);
            }
            w * (inst.score(phi, gold) - log_z)
        }
        GlobalInference::TreeBp | GlobalInference::LoopyBp(_) => {
            let opts = match g {
                GlobalInference::LoopyBp(o) => o,
                _ => tree_bp_options(inst.n_vars()),
            };
            let InferWork {
                bp: work,
                msgs,
                ops,
                unconverged,
                ..
            } = infer;
            let report = bp::run(inst, phi, &opts, Semiring::SumProduct, msgs, work);
            *ops += report.ops;
            if !report.converged && g != GlobalInference::TreeBp {
                *unconverged += 1;
            }
            let free_energy = match dphi {
                Some(d) => {
                    inst.add_indicator(gold, w, d);
                    msgs.bethe_and_expectations(inst, phi, Some((d, -w)), work)
                }
                None => msgs.bethe_free_energy(inst, phi, work),
            };
            w * (inst.score(phi, gold) + free_energy)
        }
    }
}

/// The general term: every assignment of its free and summed variables enumerated, the clamped
/// ones at gold (or the NOTA term's wrong state); `μ (log Σ_{free at gold} − log Σ)`, with NOTA's
/// score-0 outcome in the normaliser when the term has it.
fn enumerated_term(
    inst: &Instance,
    phi: &[f64],
    gold: &[u32],
    t: Term<'_>,
    dphi: Option<&mut [f64]>,
    tw: &mut TermWork,
) -> f64 {
    let w = t.weight;
    let mu = t.temperature;
    let nf = t.factors.len();
    tw.vars.clear();
    tw.vars.extend_from_slice(t.free);
    tw.vars.extend_from_slice(t.summed);
    let nv = tw.vars.len();
    tw.card.clear();
    tw.card
        .extend(tw.vars.iter().map(|&v| inst.card[v as usize]));
    // Per factor: table offset + entry of the clamped part, and the stride of each term variable.
    tw.base.clear();
    tw.stride.clear();
    tw.stride.resize(nf * nv, 0);
    for (k, &f) in t.factors.iter().enumerate() {
        let base = factor_strides(
            inst,
            f,
            gold,
            &tw.vars,
            &mut tw.stride[k * nv..(k + 1) * nv],
        );
        tw.base.push(base);
    }
    let total: usize = tw.card.iter().map(|&c| c as usize).product();
    tw.scores.clear();
    tw.entries.clear();
    tw.gold_free.clear();
    tw.digits.clear();
    tw.digits.resize(nv, 0);
    let n_free = t.free.len();
    let inv_mu = 1.0 / mu;
    // The entries are kept per factor and moved by the strides of the digits that change (the
    // same integers as Σ digit × stride, so the same scores); only the gradient reads them back.
    let keep_entries = dphi.is_some();
    tw.entry_now.clear();
    tw.entry_now.extend_from_slice(&tw.base);
    for _ in 0..total {
        let mut s = 0.0;
        for &e in &tw.entry_now {
            s += phi[e];
        }
        if keep_entries {
            tw.entries.extend_from_slice(&tw.entry_now);
        }
        tw.scores.push(s * inv_mu);
        tw.gold_free
            .push((0..n_free).all(|i| tw.digits[i] == gold[tw.vars[i] as usize]));
        // next_assignment, moving each factor's entry with the digits.
        for i in (0..nv).rev() {
            tw.digits[i] += 1;
            if tw.digits[i] < tw.card[i] {
                for (k, e) in tw.entry_now.iter_mut().enumerate() {
                    *e += tw.stride[k * nv + i];
                }
                break;
            }
            let back = (tw.card[i] - 1) as usize;
            for (k, e) in tw.entry_now.iter_mut().enumerate() {
                *e -= back * tw.stride[k * nv + i];
            }
            tw.digits[i] = 0;
        }
    }
    tw.ops += (total * nf) as u64;
    let den = log_sum_exp_into(&tw.scores, None, t.nota != Nota::Without, &mut tw.probs);
    let nota_outcome = t.nota == Nota::Outcome;
    let num = if nota_outcome {
        0.0
    } else if t.summed.is_empty() {
        // Exactly one assignment has every free variable at gold.
        let j = tw
            .gold_free
            .iter()
            .position(|&g| g)
            .expect("gold assignment enumerated");
        tw.scores[j]
    } else {
        log_sum_exp_into(&tw.scores, Some(&tw.gold_free), false, &mut tw.probs_num)
    };
    if let Some(d) = dphi {
        let summed = !t.summed.is_empty();
        for j in 0..total {
            let pn = if nota_outcome {
                0.0
            } else if summed {
                tw.probs_num[j]
            } else {
                tw.gold_free[j] as u8 as f64
            };
            let coef = w * (pn - tw.probs[j]);
            if coef != 0.0 {
                for &e in &tw.entries[j * nf..(j + 1) * nf] {
                    d[e] += coef;
                }
            }
        }
        tw.ops += (total * nf) as u64;
    }
    w * mu * (num - den)
}

/// A term that is one whole table, every variable free: `φ(y*) − μ log Σ exp(φ/μ)`. For a
/// table shared by several factors (e.g. every chain transition) it is a cached line.
fn table_term(
    inst: &Instance,
    phi: &[f64],
    gold: &[u32],
    t: Term<'_>,
    dphi: Option<&mut [f64]>,
    tw: &mut TermWork,
) -> f64 {
    let fac = &inst.factors[t.factors[0] as usize];
    let (mu, w) = (t.temperature, t.weight);
    let sl = &inst.slots[fac.slot as usize];
    let (off, len) = (sl.offset as usize, sl.len as usize);
    let g = inst.entry(fac, gold);
    if tw.cache.shared(fac.slot) {
        return tw.line_term(phi, (off, 1, len), g, t.nota, mu, w, dphi);
    }
    tw.scores.clear();
    tw.scores
        .extend(phi[off..off + len].iter().map(|&x| x / mu));
    let lse = log_sum_exp_into(&tw.scores, None, t.nota != Nota::Without, &mut tw.probs);
    tw.ops += len as u64;
    let outcome = t.nota != Nota::Outcome;
    if let Some(d) = dphi {
        for (o, &p) in d[off..off + len].iter_mut().zip(&tw.probs) {
            *o -= w * p;
        }
        if outcome {
            d[off + g] += w;
        }
    }
    w * (if outcome { phi[off + g] } else { 0.0 } - mu * lse)
}

/// A term with one free variable and nothing summed (the rest clamped): a softmax over the free
/// variable's states, each factor read through its stride.
fn one_free_term(
    inst: &Instance,
    phi: &[f64],
    gold: &[u32],
    t: Term<'_>,
    dphi: Option<&mut [f64]>,
    tw: &mut TermWork,
) -> f64 {
    let s = t.free[0];
    let l = inst.card[s as usize] as usize;
    let (mu, w) = (t.temperature, t.weight);
    tw.base.clear();
    tw.stride.clear();
    tw.stride.resize(t.factors.len(), 0);
    for (k, &f) in t.factors.iter().enumerate() {
        let base = factor_strides(inst, f, gold, &[s], &mut tw.stride[k..k + 1]);
        tw.base.push(base);
    }
    if t.factors.len() == 1 && tw.cache.shared(inst.factors[t.factors[0] as usize].slot) {
        let (base, st) = (tw.base[0], tw.stride[0]);
        let g = gold[s as usize] as usize;
        return tw.line_term(phi, (base, st, l), g, t.nota, mu, w, dphi);
    }
    tw.scores.clear();
    tw.scores.resize(l, 0.0);
    for (&b, &st) in tw.base.iter().zip(&tw.stride) {
        for (y, sc) in tw.scores.iter_mut().enumerate() {
            *sc += phi[b + y * st];
        }
    }
    if mu != 1.0 {
        tw.scores.iter_mut().for_each(|x| *x /= mu);
    }
    let lse = log_sum_exp_into(&tw.scores, None, t.nota != Nota::Without, &mut tw.probs);
    let g = gold[s as usize] as usize;
    let outcome = t.nota != Nota::Outcome;
    tw.ops += (l * t.factors.len()) as u64;
    if let Some(d) = dphi {
        for (&b, &st) in tw.base.iter().zip(&tw.stride) {
            for (y, &p) in tw.probs.iter().enumerate() {
                d[b + y * st] -= w * p;
            }
            if outcome {
                d[b + g * st] += w;
            }
        }
    }
    w * mu * (if outcome { tw.scores[g] } else { 0.0 } - lse)
}

/// The variable whose state tells apart the terms of a run of one shape (`list[run]`: at most
/// one clamped variable held off gold, the source state y′ of NOTA terms), when [`source_run`]
/// can evaluate them: one free variable, nothing summed, μ = 1.
fn run_source(inst: &Instance, list: &TermList, run: std::ops::Range<usize>) -> Option<u32> {
    let t = list.get(run.start);
    let sh = &list.shapes[list.heads[run.start].shape as usize];
    if t.free.len() != 1
        || !t.summed.is_empty()
        || t.clamped.is_empty()
        || t.temperature != 1.0
        || inst.card[t.free[0] as usize] as u128 > FOREST_MIN_STATES
    {
        return None;
    }
    Some(if sh.off_var == u32::MAX {
        t.clamped[0]
    } else {
        sh.off_var
    })
}

/// Below this, `Σ_y exp(row_y − max row)·exp(u_y − max u)` has lost precision to underflow, and
/// the term is computed in log space instead.
const RUN_MIN_SUM: f64 = 1e-250;

/// The terms `list[run]` of one shape — one free variable s, the same factors, clamps and μ = 1
/// — that differ only in the state y′ of the clamped variable `v` (which may be gold), in NOTA
/// and in weight: a position's next-state classifier and its NOTA terms (001 eq. 6), each
/// `w·(num − log(N + Σ_y exp(u_y + r_{y′}(y))))` with `u` the factors without v, `r_{y′}` the
/// row y′ of those with v, N = 1 with NOTA in the normaliser, and num the gold score (0 for the
/// NOTA outcome). `u` is summed and exponentiated once for the run and its gradient written once;
/// a shared table's rows (a chain's transitions) are exponentiated once per instance, so a term
/// costs a dot product over s's states — in log space instead should that sum underflow.
#[allow(clippy::too_many_arguments)]
fn source_run(
    inst: &Instance,
    phi: &[f64],
    gold: &[u32],
    list: &TermList,
    run: std::ops::Range<usize>,
    v: u32,
    mut dphi: Option<&mut [f64]>,
    tw: &mut TermWork,
) -> f64 {
    let first = list.get(run.start);
    let s = first.free[0];
    let l = inst.card[s as usize] as usize;
    let g = gold[s as usize] as usize;
    let rw = &mut tw.run;
    rw.fixed.clear();
    rw.moving.clear();
    let mut shared = None;
    for &f in first.factors {
        let mut st = [0usize; 2];
        let base = factor_strides(inst, f, gold, &[s, v], &mut st);
        if st[1] == 0 {
            rw.fixed.push((base, st[0]));
        } else {
            rw.moving.push((base, st[0], st[1]));
            shared = tw.cache.shared(inst.factors[f as usize].slot).then_some(f);
        }
    }
    // The run's rows come from one shared table: exponentiate each of its rows once.
    let table = match (rw.moving.as_slice(), shared) {
        ([(base, st, sv)], Some(f)) => {
            let key = (*base, *st, *sv);
            Some(match rw.tables.iter().find(|e| e.key == key) {
                Some(e) => *e,
                None => {
                    let n_rows = inst.card[v as usize] as usize;
                    debug_assert!(inst.scope(&inst.factors[f as usize]).contains(&v));
                    let e = ExpTable {
                        key,
                        start: rw.rows.len(),
                        max_start: rw.row_max.len(),
                        cols: l,
                    };
                    rw.rows.resize(e.start + n_rows * l, 0.0);
                    rw.row_max.resize(e.max_start + n_rows, f64::NAN);
                    rw.row_max_exp.resize(e.max_start + n_rows, f64::NAN);
                    rw.tables.push(e);
                    e
                }
            })
        }
        _ => None,
    };
    rw.u.clear();
    rw.u.resize(l, 0.0);
    for &(base, st) in &rw.fixed {
        for (y, u) in rw.u.iter_mut().enumerate() {
            *u += phi[base + y * st];
        }
    }
    let u_max = rw.u.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    rw.u_exp.resize(l, 0.0);
    exp_shifted_into(&rw.u, u_max, &mut rw.u_exp);
    let u_max_exp = exp_in_range(u_max);
    rw.du.clear();
    rw.du.resize(l, 0.0);
    rw.scores.resize(l, 0.0);
    let gv = gold[v as usize];
    let (mut value, mut num_weight) = (0.0, 0.0);
    let mut logs = LogProduct::default();
    for i in run.clone() {
        let h = &list.heads[i];
        let w = h.weight;
        let yp = if h.off_state == u32::MAX {
            gv
        } else {
            h.off_state
        } as usize;
        let nota = h.nota != Nota::Without;
        // log(N + Σ_y exp(u_y + r(y))) and the probabilities, from the shared table's row or
        // in log space.
        let mut lse = f64::NAN;
        if let Some(e) = table {
            let row = e.start + yp * e.cols;
            let m = &mut rw.row_max[e.max_start + yp];
            if m.is_nan() {
                let (base, st, sv) = rw.moving[0];
                rw.scores
                    .iter_mut()
                    .enumerate()
                    .for_each(|(y, x)| *x = phi[base + yp * sv + y * st]);
                *m = rw.scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                exp_shifted_into(&rw.scores, *m, &mut rw.rows[row..row + l]);
                rw.row_max_exp[e.max_start + yp] = exp_in_range(*m);
            }
            let er = &rw.rows[row..row + l];
            let sum = crate::util::dot8(er, &rw.u_exp);
            if sum > RUN_MIN_SUM {
                // Z = e^a·sum; with NOTA, log(1 + Z) by one log1p while e^a is in range.
                let a = u_max + *m;
                // e^a from the run's e^{max u} and the row's e^{max}, each in range.
                let mut ea = u_max_exp * rw.row_max_exp[e.max_start + yp];
                if !ea.is_finite() && a < 700.0 {
                    ea = a.exp();
                }
                let c;
                (lse, c) = if !nota {
                    (a + sum.ln(), 1.0 / sum)
                } else if ea.is_finite() {
                    // log(1 + Z) joins the run's product of logarithms.
                    let z = ea * sum;
                    logs.add(w, 1.0 + z);
                    (0.0, ea / (1.0 + z))
                } else {
                    let lse = log_one_plus_exp(a + sum.ln());
                    (lse, (a - lse).exp())
                };
                // The probabilities serve the gradient only.
                if dphi.is_some() {
                    rw.probs.resize(l, 0.0);
                    for ((p, &x), &y) in rw.probs.iter_mut().zip(er).zip(&rw.u_exp) {
                        *p = c * x * y;
                    }
                }
            }
        }
        if lse.is_nan() {
            rw.scores.copy_from_slice(&rw.u);
            for &(base, st, sv) in &rw.moving {
                for (y, x) in rw.scores.iter_mut().enumerate() {
                    *x += phi[base + yp * sv + y * st];
                }
            }
            // log(N + Σ) = max + log(sum), the log joining the run's product.
            let (max, sum) = exp_normalised(&rw.scores, None, nota, &mut rw.probs);
            logs.add(w, sum);
            lse = max;
        }
        let outcome = h.nota != Nota::Outcome;
        let num = if outcome {
            rw.u[g]
                + rw.moving
                    .iter()
                    .map(|&(base, st, sv)| phi[base + yp * sv + g * st])
                    .sum::<f64>()
        } else {
            0.0
        };
        value += w * (num - lse);
        tw.ops += (l * (1 + rw.moving.len())) as u64;
        if let Some(d) = dphi.as_deref_mut() {
            for (du, &p) in rw.du.iter_mut().zip(&rw.probs) {
                *du += w * p;
            }
            for &(base, st, sv) in &rw.moving {
                let row = base + yp * sv;
                if st == 1 {
                    for (o, &p) in d[row..row + l].iter_mut().zip(&rw.probs) {
                        *o -= w * p;
                    }
                } else {
                    for (y, &p) in rw.probs.iter().enumerate() {
                        d[row + y * st] -= w * p;
                    }
                }
                if outcome {
                    d[row + g * st] += w;
                }
            }
            if outcome {
                num_weight += w;
            }
            tw.ops += (l * (1 + rw.moving.len())) as u64;
        }
    }
    if let Some(d) = dphi {
        for &(base, st) in &rw.fixed {
            for (y, &du) in rw.du.iter().enumerate() {
                d[base + y * st] -= du;
            }
            d[base + g * st] += num_weight;
        }
    }
    value - logs.finish()
}

/// `Σ_i w_i log x_i` (x_i ≥ 1) by logarithms of products: one log per run of equal weights
/// (or per 10¹⁵⁰, so a product never overflows) instead of one per term.
#[derive(Debug)]
struct LogProduct {
    w: f64,
    product: f64,
    sum: f64,
}

impl Default for LogProduct {
    fn default() -> Self {
        LogProduct {
            w: 0.0,
            product: 1.0,
            sum: 0.0,
        }
    }
}

impl LogProduct {
    fn add(&mut self, w: f64, x: f64) {
        if w != self.w {
            self.flush();
            self.w = w;
        }
        if x > 1e150 {
            self.sum += w * x.ln();
            return;
        }
        if self.product > 1e150 {
            self.flush();
        }
        self.product *= x;
    }
    fn flush(&mut self) {
        self.sum += self.w * self.product.ln();
        self.product = 1.0;
    }
    fn finish(mut self) -> f64 {
        self.flush();
        self.sum
    }
}

/// eˣ for |x| < 350 (so a product of two stays finite and normal), else NaN.
fn exp_in_range(x: f64) -> f64 {
    if x.abs() < 350.0 {
        x.exp()
    } else {
        f64::NAN
    }
}

/// `log(1 + eˣ)` without overflow.
fn log_one_plus_exp(x: f64) -> f64 {
    if x > 0.0 {
        x + (-x).exp().ln_1p()
    } else {
        x.exp().ln_1p()
    }
}

/// A term with two free variables (a, b) and nothing summed: the score is
/// `c + u_a(y_a) + u_b(y_b) + M(y_a, y_b)`, each factor read once into the part it touches.
/// Factors touching neither free variable add a constant that cancels in value and gradient.
fn two_free_term(
    inst: &Instance,
    phi: &[f64],
    gold: &[u32],
    t: Term<'_>,
    dphi: Option<&mut [f64]>,
    tw: &mut TermWork,
) -> f64 {
    let (a, b) = (t.free[0], t.free[1]);
    let (la, lb) = (
        inst.card[a as usize] as usize,
        inst.card[b as usize] as usize,
    );
    let (mu, w) = (t.temperature, t.weight);
    let (ga, gb) = (gold[a as usize] as usize, gold[b as usize] as usize);
    // Per factor: base entry (clamped part) and the strides of a and b (0 when absent).
    tw.base.clear();
    tw.stride.clear();
    tw.stride.resize(2 * t.factors.len(), 0);
    for (k, &f) in t.factors.iter().enumerate() {
        let base = factor_strides(inst, f, gold, &[a, b], &mut tw.stride[2 * k..2 * k + 2]);
        tw.base.push(base);
    }
    let (ua, ub) = (&mut tw.marg_a, &mut tw.marg_b);
    ua.clear();
    ua.resize(la, 0.0);
    ub.clear();
    ub.resize(lb, 0.0);
    tw.scores.clear();
    tw.scores.resize(la * lb, 0.0);
    let mut gold_score = 0.0;
    for (k, &base) in tw.base.iter().enumerate() {
        let (sa, sb) = (tw.stride[2 * k], tw.stride[2 * k + 1]);
        gold_score += phi[base + ga * sa + gb * sb];
        match (sa > 0, sb > 0) {
            (true, true) => {
                for ya in 0..la {
                    let row = &mut tw.scores[ya * lb..(ya + 1) * lb];
                    for (yb, sc) in row.iter_mut().enumerate() {
                        *sc += phi[base + ya * sa + yb * sb];
                    }
                }
            }
            (true, false) => ua
                .iter_mut()
                .enumerate()
                .for_each(|(y, u)| *u += phi[base + y * sa]),
            (false, true) => ub
                .iter_mut()
                .enumerate()
                .for_each(|(y, u)| *u += phi[base + y * sb]),
            (false, false) => {}
        }
    }
    let inv_mu = 1.0 / mu;
    for (row, &va) in tw.scores.chunks_mut(lb).zip(ua.iter()) {
        for (sc, &u) in row.iter_mut().zip(ub.iter()) {
            *sc = (*sc + va + u) * inv_mu;
        }
    }
    // log Σ exp of the non-constant part; the constant part is in gold_score and cancels.
    let lse = log_sum_exp_into(&tw.scores, None, false, &mut tw.probs);
    let constant: f64 = tw
        .base
        .iter()
        .enumerate()
        .filter(|&(k, _)| tw.stride[2 * k] == 0 && tw.stride[2 * k + 1] == 0)
        .map(|(_, &b)| phi[b])
        .sum();
    tw.ops += (la * lb + la + lb) as u64 * t.factors.len() as u64;
    if let Some(d) = dphi {
        ua.fill(0.0);
        ub.fill(0.0);
        for (row, pa) in tw.probs.chunks(lb).zip(ua.iter_mut()) {
            for (&p, pb) in row.iter().zip(ub.iter_mut()) {
                *pa += p;
                *pb += p;
            }
        }
        for (k, &base) in tw.base.iter().enumerate() {
            let (sa, sb) = (tw.stride[2 * k], tw.stride[2 * k + 1]);
            match (sa > 0, sb > 0) {
                (true, true) => {
                    for ya in 0..la {
                        for (yb, &p) in tw.probs[ya * lb..(ya + 1) * lb].iter().enumerate() {
                            d[base + ya * sa + yb * sb] -= w * p;
                        }
                    }
                }
                (true, false) => ua
                    .iter()
                    .enumerate()
                    .for_each(|(y, &p)| d[base + y * sa] -= w * p),
                (false, true) => ub
                    .iter()
                    .enumerate()
                    .for_each(|(y, &p)| d[base + y * sb] -= w * p),
                (false, false) => continue,
            }
            d[base + ga * sa + gb * sb] += w;
        }
        tw.ops += (la * lb) as u64 * t.factors.len() as u64;
    }
    w * ((gold_score - constant) - mu * lse)
}

/// Table offset plus the entry of factor `f`'s clamped variables (at their gold labels); the
/// stride of each of `vars` in the factor's table goes to `strides` (0 when not in its scope).
fn factor_strides(
    inst: &Instance,
    f: u32,
    gold: &[u32],
    vars: &[u32],
    strides: &mut [usize],
) -> usize {
    let fac = &inst.factors[f as usize];
    strides.fill(0);
    let (mut base, mut stride) = (inst.table_offset(fac), 1usize);
    for &v in inst.scope(fac).iter().rev() {
        match vars.iter().position(|&u| u == v) {
            Some(i) => strides[i] = stride,
            None => base += gold[v as usize] as usize * stride,
        }
        stride *= inst.card[v as usize] as usize;
    }
    base
}

/// Stable log Σ exp over `scores` (restricted to `mask` when given), plus an outcome of score 0
/// when `nota` (001's "none of the above"); leaves the normalised probabilities (0 outside the
/// mask; with `nota` they sum to 1 − p(NOTA)) in `probs`.
fn log_sum_exp_into(
    scores: &[f64],
    mask: Option<&[bool]>,
    nota: bool,
    probs: &mut Vec<f64>,
) -> f64 {
    let (max, sum) = exp_normalised(scores, mask, nota, probs);
    max + sum.ln()
}

/// [`log_sum_exp_into`] as (max, Σ exp(x − max)), so log Σ exp = max + log(sum) with sum ≥ 1.
fn exp_normalised(
    scores: &[f64],
    mask: Option<&[bool]>,
    nota: bool,
    probs: &mut Vec<f64>,
) -> (f64, f64) {
    let keep = |j: usize| mask.is_none_or(|m| m[j]);
    let mx = scores
        .iter()
        .enumerate()
        .filter(|&(j, _)| keep(j))
        .map(|(_, &x)| x)
        .fold(if nota { 0.0 } else { f64::NEG_INFINITY }, f64::max);
    probs.resize(scores.len(), 0.0);
    exp_shifted_into(scores, mx, probs);
    if let Some(m) = mask {
        for (p, &k) in probs.iter_mut().zip(m) {
            if !k {
                *p = 0.0;
            }
        }
    }
    let sum: f64 = probs.iter().sum::<f64>() + if nota { (-mx).exp() } else { 0.0 };
    let inv = 1.0 / sum;
    for p in probs.iter_mut() {
        *p *= inv;
    }
    (mx, sum)
}
