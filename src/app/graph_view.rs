//! The Graph pane: the factor graph of one sequence drawn with egui's painter (variables as
//! circles, factors as squares coloured by template, the chain along x), with overlays for pieces
//! (dashed hulls, 003 Fig. 1), the node-split graph (000 Fig. 1) and an estimator's terms (000
//! Fig. 2, 5). The terms drawn are the `TermList` the estimator trains with.

use super::data::Split;
use super::AppState;
use crate::estimators::terms::TermList;
use crate::estimators::EstimatorSpec;
use crate::graph::instance::Instance;
use crate::graph::pieces::{node_split, NodeSplitGraph, Pieces};
use egui::{pos2, vec2, Color32, Pos2, Rect, Sense, Shape, Stroke};
use std::sync::Arc;

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct GraphPane {
    pub split: Split,
    pub sequence: usize,
    pub zoom: f32,
    pub show_pieces: bool,
    pub node_split: bool,
    pub estimator: String,
    /// Piece groups for the pieces overlay and the piecewise estimators; empty = factor-as-piece.
    pub pieces: String,
    pub show_terms: bool,
    pub term: usize,
    pub animate: bool,
    pub selected_factor: Option<usize>,
    pub model_run: Option<String>,
    /// The BP stepper: shown, sweeps run so far, animated, and the teaching switch "piecewise =
    /// BP with every message held at 1" (000 §3.4, 002 §2.3).
    pub show_bp: bool,
    pub bp_sweeps: usize,
    pub bp_animate: bool,
    pub bp_at_one: bool,
    #[serde(skip)]
    cache: GraphCache,
    #[serde(skip)]
    last_step: f64,
    #[serde(skip)]
    scroll_to_term: bool,
}

impl Default for GraphPane {
    fn default() -> Self {
        GraphPane {
            split: Split::Train,
            sequence: 0,
            zoom: 1.0,
            show_pieces: false,
            node_split: false,
            estimator: "pwpl".into(),
            pieces: String::new(),
            show_terms: true,
            term: 0,
            animate: false,
            selected_factor: None,
            model_run: None,
            show_bp: false,
            bp_sweeps: 1,
            bp_animate: false,
            bp_at_one: false,
            cache: GraphCache::default(),
            last_step: 0.0,
            scroll_to_term: false,
        }
    }
}

type CacheKey = (usize, Split, usize, String, String);
/// Learned tables for (run, split, sequence), or why there are none.
type LearnedFor = (String, Split, usize, Result<Arc<Learned>, String>);

/// The instance and the structures derived from it, rebuilt when the sequence, data or
/// estimator change (structure only: no numerics).
#[derive(Default)]
struct GraphCache {
    key: Option<CacheKey>,
    inst: Option<Instance>,
    terms: TermList,
    /// Factors of each piece.
    pieces: Vec<Vec<u32>>,
    /// For estimators without piece groups (ml, pl, pl-edge, memm, nota, …): their parameter
    /// independence diagram (003 Fig. 1) — per locally normalised term, its factors and its
    /// predicted (free) variables; the pieces overlay draws these instead.
    diagram: Vec<(Vec<u32>, Vec<u32>)>,
    split: Option<NodeSplitGraph>,
    error: Option<String>,
    /// Learned tables and marginals for (run, split, sequence).
    learned: Option<LearnedFor>,
    learned_job: Option<super::jobs::Job<Learned>>,
    /// The BP stepper's snapshot for (run, split, sequence, sweeps), and its job.
    bp: Option<(BpKey, Result<Arc<BpSnapshot>, String>)>,
    bp_job: Option<(BpKey, super::jobs::Job<BpSnapshot>)>,
    /// Where the family draws each variable (cell units).
    cells: Vec<[f32; 2]>,
    /// Positions, for the plain (false) or node-split (true) drawing.
    layout: Option<(bool, Layout)>,
}

impl Clone for GraphCache {
    fn clone(&self) -> Self {
        GraphCache::default()
    }
}

impl std::fmt::Debug for GraphCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("GraphCache")
    }
}

/// A trained model's view of one item: per factor, its log-potential table, its exact marginal
/// table where exact inference is possible (and how it was computed), and loopy BP's beliefs on
/// graphs that are not chains.
pub struct Learned {
    pub phi: Vec<Vec<f64>>,
    pub marginals: Option<(Vec<Vec<f64>>, &'static str)>,
    pub beliefs: Option<(Vec<Vec<f64>>, crate::inference::BpReport)>,
    /// The run's per-state scales (001 §3) with the source states' names, start last.
    pub scales: Option<Vec<(String, f64)>>,
}

fn learned_for(
    model: &crate::train::TrainedRun,
    seq: &crate::data::Sequence,
) -> Result<Learned, String> {
    let inst = model.family.instance(seq).map_err(|e| e.to_string())?;
    let mut phi = vec![0.0; inst.table_len];
    model
        .family
        .model()
        .build_tables(&model.theta, &inst, &mut phi, &mut vec![]);
    let tables: Vec<Vec<f64>> = inst
        .factors
        .iter()
        .map(|f| inst.table(f, &phi).to_vec())
        .collect();
    let m = crate::inference::factor_marginals(&inst, &phi, &model.inference.bp);
    let scales = model.inference.scaling.as_ref().and_then(|a| {
        let names = &model.family.labels(&inst, 0).names;
        (a.len() == names.len() + 1).then(|| {
            names
                .iter()
                .cloned()
                .chain(std::iter::once("start".to_string()))
                .zip(a.iter().copied())
                .collect()
        })
    });
    Ok(Learned {
        phi: tables,
        marginals: m.exact,
        beliefs: m.beliefs,
        scales,
    })
}

type BpKey = (String, Split, usize, usize);

/// Sum-product BP on one item after a number of flooding sweeps from uniform messages, with what
/// the stepper draws: variable and factor beliefs, how much each message moved in the last sweep,
/// and the pieces' own beliefs `∝ exp(φ_a)` — BP's factor beliefs with every message held at 1,
/// which is what piecewise training normalises.
pub struct BpSnapshot {
    pub sweeps: usize,
    pub report: crate::inference::BpReport,
    pub var_beliefs: Vec<Vec<f64>>,
    pub factor_beliefs: Vec<Vec<f64>>,
    pub piece_beliefs: Vec<Vec<f64>>,
    /// Per factor-graph edge (flat scope index): largest change of its log message in the last
    /// sweep.
    pub edge_residual: Vec<f64>,
    /// Sweeps a cold run needs to converge (tolerance 1e-8), or None within 1000.
    pub converges_after: Option<usize>,
}

fn bp_snapshot(
    model: &crate::train::TrainedRun,
    seq: &crate::data::Sequence,
    sweeps: usize,
) -> Result<BpSnapshot, String> {
    use crate::inference::bp::{self, BpMessages, BpOptions, BpWork, Schedule, Semiring};
    let inst = model.family.instance(seq).map_err(|e| e.to_string())?;
    let phi = crate::eval::tables(model.family.as_ref(), &model.theta, &inst);
    let opts = |n: usize| BpOptions {
        schedule: Schedule::Parallel,
        damping: model.inference.bp.damping,
        tol: 1e-300,
        max_sweeps: n,
    };
    let (mut work, mut msgs) = (BpWork::default(), BpMessages::default());
    let mut before = vec![];
    if sweeps > 1 {
        bp::run(
            &inst,
            &phi,
            &opts(sweeps - 1),
            Semiring::SumProduct,
            &mut msgs,
            &mut work,
        );
        before = (0..inst.n_edges())
            .map(|e| msgs.message(e).to_vec())
            .collect();
    }
    let mut report = bp::run(
        &inst,
        &phi,
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
    let factor_beliefs = (0..inst.factors.len())
        .map(|f| {
            msgs.factor_belief(&inst, &phi, f, &mut work, &mut b);
            b.clone()
        })
        .collect();
    let piece_beliefs = inst
        .factors
        .iter()
        .map(|f| {
            let t = inst.table(f, &phi);
            let m = t.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let e: Vec<f64> = t.iter().map(|x| (x - m).exp()).collect();
            let z: f64 = e.iter().sum();
            e.iter().map(|x| x / z).collect()
        })
        .collect();
    let mut cold = BpMessages::default();
    let conv = bp::run(
        &inst,
        &phi,
        &BpOptions {
            tol: 1e-8,
            ..opts(1000)
        },
        Semiring::SumProduct,
        &mut cold,
        &mut work,
    );
    Ok(BpSnapshot {
        sweeps,
        report,
        var_beliefs,
        factor_beliefs,
        piece_beliefs,
        edge_residual,
        converges_after: conv.converged.then_some(conv.sweeps),
    })
}

/// A run's trained model (loaded in the background on first use) and the shown item.
fn model_and_item(
    state: &mut AppState,
    pane: &GraphPane,
    ctx: &egui::Context,
    run: &str,
) -> Option<(Arc<crate::train::TrainedRun>, crate::data::Sequence)> {
    let model = state.model(ctx, run)?;
    let seq = state
        .data
        .as_ref()?
        .corpus(pane.split)
        .sequences
        .get(pane.sequence)?
        .clone();
    Some((model, seq))
}

fn poll_bp(state: &mut AppState, pane: &mut GraphPane, ctx: &egui::Context) {
    if !pane.show_bp {
        return;
    }
    let Some(run) = pane.model_run.clone() else {
        return;
    };
    let key: BpKey = (
        run.clone(),
        pane.split,
        pane.sequence,
        pane.bp_sweeps.max(1),
    );
    if let Some((k, job)) = &mut pane.cache.bp_job {
        if let Some(r) = job.poll() {
            let k = k.clone();
            pane.cache.bp_job = None;
            pane.cache.bp = Some((k, r.map(Arc::new)));
        } else {
            return;
        }
    }
    if pane.cache.bp.as_ref().is_some_and(|(k, _)| *k == key) {
        return;
    }
    let Some((model, seq)) = model_and_item(state, pane, ctx, &run) else {
        return;
    };
    let sweeps = key.3;
    pane.cache.bp_job = Some((
        key,
        super::jobs::Job::spawn(ctx, "BP sweeps", move || bp_snapshot(&model, &seq, sweeps)),
    ));
}

/// The current snapshot when it belongs to the shown item.
fn bp_shown(pane: &GraphPane) -> Option<&BpSnapshot> {
    let (k, r) = pane.cache.bp.as_ref()?;
    if !pane.show_bp
        || pane.model_run.as_deref() != Some(k.0.as_str())
        || (k.1, k.2) != (pane.split, pane.sequence)
    {
        return None;
    }
    r.as_ref().ok().map(|s| s.as_ref())
}

// Layout constants at zoom 1.
const DX: f32 = 96.0;
const VAR_R: f32 = 17.0;
const FAC_H: f32 = 9.0;
const ROW: f32 = 70.0;

const FREE: Color32 = Color32::from_rgb(240, 140, 30);
const CLAMPED: Color32 = Color32::from_rgb(60, 110, 200);
const SUMMED: Color32 = Color32::from_rgb(150, 80, 190);
/// A variable clamped at a wrong state: the source state y' ≠ y* of a NOTA term (001 eq. 6).
const OFF_GOLD: Color32 = Color32::from_rgb(200, 50, 60);

fn template_color(t: usize) -> Color32 {
    // Palette slots whose hues stay clear of the term roles (free orange, clamped blue,
    // summed purple).
    const SLOTS: [usize; 6] = [3, 4, 5, 8, 9, 7];
    super::palette(SLOTS[t % SLOTS.len()])
}

fn piece_color(i: usize) -> Color32 {
    let hue = (i as f32 * 0.618_034).fract();
    egui::ecolor::Hsva::new(hue, 0.7, 0.75, 1.0).into()
}

/// Positions in graph coordinates (zoom 1, origin at the top-left of the canvas).
struct Layout {
    vars: Vec<Pos2>,
    factors: Vec<Pos2>,
    /// Node-split copies: (original variable, piece, position).
    copies: Vec<(u32, u32, Pos2)>,
    /// Per factor in node-split mode: the copies its scope uses.
    factor_copies: Vec<Vec<usize>>,
    /// Factors and copies sorted by x, and each factor's pieces: drawing touches only what is
    /// in view, so long sequences cost what a screenful costs.
    /// Every variable on one row (a chain): tokens are drawn above the variables.
    flat: bool,
    var_order: Vec<u32>,
    factor_order: Vec<u32>,
    copy_order: Vec<u32>,
    factor_pieces: Vec<Vec<u32>>,
    size: egui::Vec2,
}

impl Layout {
    /// Indices into `order` whose x (by `x_of`) lies in `[lo, hi]`.
    fn range(order: &[u32], x_of: impl Fn(u32) -> f32, lo: f32, hi: f32) -> std::ops::Range<usize> {
        let a = order.partition_point(|&i| x_of(i) < lo);
        let b = order.partition_point(|&i| x_of(i) <= hi);
        a..b.max(a)
    }
}

/// Positions from the family's layout (cell units): a chain (every variable on one row) keeps
/// its pairwise factors on the line and its unary factors below; grids and circles put pairwise
/// factors at the midpoint of their variables and unary factors diagonally beside them.
fn layout(
    inst: &Instance,
    cells: &[[f32; 2]],
    split: Option<&NodeSplitGraph>,
    pieces: &[Vec<u32>],
) -> Layout {
    let n = inst.n_vars();
    let y_var = ROW * 1.2;
    let flat = cells
        .iter()
        .all(|c| c[1] == cells.first().map_or(0.0, |f| f[1]));
    let vars: Vec<Pos2> = (0..n)
        .map(|v| {
            let c = cells.get(v).copied().unwrap_or([v as f32, 0.0]);
            pos2(DX * (c[0] + 0.6), y_var + DX * c[1])
        })
        .collect();
    let factors: Vec<Pos2> = inst
        .factors
        .iter()
        .map(|f| {
            let sc = inst.scope(f);
            let centre = sc
                .iter()
                .map(|&v| vars[v as usize].to_vec2())
                .fold(egui::Vec2::ZERO, |a, b| a + b)
                / sc.len() as f32;
            match (sc.len(), flat) {
                (1, true) => centre.to_pos2() + vec2(0.0, ROW),
                (1, false) => centre.to_pos2() + vec2(0.3, 0.3) * DX,
                // A skip edge of a chain: an arc above it, higher the longer it reaches.
                (2, true) if sc[1].abs_diff(sc[0]) > 1 => {
                    let span = sc[1].abs_diff(sc[0]) as f32;
                    centre.to_pos2() - vec2(0.0, ROW * (0.9 + 0.45 * span.ln()))
                }
                (2, _) => centre.to_pos2(),
                (_, true) => centre.to_pos2() - vec2(0.0, ROW),
                _ => centre.to_pos2(),
            }
        })
        .collect();
    // Arcs above a chain push everything down so the highest stays on the canvas.
    let top = factors.iter().map(|p| p.y).fold(f32::INFINITY, f32::min);
    let (mut vars, mut factors) = (vars, factors);
    if top < ROW * 0.3 {
        let d = vec2(0.0, ROW * 0.3 - top);
        for p in vars.iter_mut().chain(factors.iter_mut()) {
            *p += d;
        }
    }
    // Pairwise factors that land on the same point (a circle's diameters all cross its centre)
    // are spread along their own chords.
    let mut seen: std::collections::HashMap<(i32, i32), u32> = Default::default();
    for (f, p) in factors.iter_mut().enumerate() {
        let n = seen
            .entry((p.x.round() as i32, p.y.round() as i32))
            .or_insert(0);
        if *n > 0 {
            if let [a, b] = *inst.scope(&inst.factors[f]) {
                let (pa, pb) = (vars[a as usize], vars[b as usize]);
                let t = 0.5 + 0.14 * (*n as f32).min(3.0) * if *n % 2 == 1 { -1.0 } else { 1.0 };
                *p = pa + (pb - pa) * t;
            }
        }
        *n += 1;
    }
    let mut copies = vec![];
    let mut factor_copies = vec![vec![]; inst.factors.len()];
    if let Some(sg) = split {
        // Copies of a piece's variables sit between the original and the piece's centre.
        for (c, (&orig, &piece)) in sg.origin.iter().zip(&sg.piece_of).enumerate() {
            let fs = &pieces[piece as usize];
            let centre = fs
                .iter()
                .map(|&f| factors[f as usize].to_vec2())
                .fold(egui::Vec2::ZERO, |a, b| a + b)
                / fs.len().max(1) as f32;
            let p = vars[orig as usize];
            let to = centre.to_pos2() - vars[orig as usize];
            let d = to.length().max(1.0);
            let shift = to / d * (d * 0.45).min(DX * 0.3);
            copies.push((orig, piece, p + shift));
            for &f in fs {
                if inst.scope(&inst.factors[f as usize]).contains(&orig) {
                    factor_copies[f as usize].push(c);
                }
            }
        }
    }
    let mut var_order: Vec<u32> = (0..vars.len() as u32).collect();
    var_order.sort_by(|&a, &b| vars[a as usize].x.total_cmp(&vars[b as usize].x));
    let mut factor_order: Vec<u32> = (0..factors.len() as u32).collect();
    factor_order.sort_by(|&a, &b| factors[a as usize].x.total_cmp(&factors[b as usize].x));
    let mut copy_order: Vec<u32> = (0..copies.len() as u32).collect();
    copy_order.sort_by(|&a, &b| copies[a as usize].2.x.total_cmp(&copies[b as usize].2.x));
    let (mx, my) = vars
        .iter()
        .chain(&factors)
        .fold((0.0f32, 0.0f32), |(a, b), p| (a.max(p.x), b.max(p.y)));
    // Room below for the template legend.
    let mut templates: Vec<u32> = inst.factors.iter().map(|f| f.template).collect();
    templates.sort_unstable();
    templates.dedup();
    let size = vec2(
        mx + DX * 0.6,
        my + ROW * 0.6 + 14.0 * templates.len() as f32 + 8.0,
    );
    let mut factor_pieces = vec![vec![]; factors.len()];
    for (i, fs) in pieces.iter().enumerate() {
        for &f in fs {
            factor_pieces[f as usize].push(i as u32);
        }
    }
    Layout {
        vars,
        factors,
        copies,
        factor_copies,
        flat,
        var_order,
        factor_order,
        copy_order,
        factor_pieces,
        size,
    }
}

/// Convex hull (monotone chain) of points.
/// A piece drawn as a dashed, faintly filled hull around its points (screen coordinates).
fn piece_hull(painter: &egui::Painter, pts: Vec<Pos2>, c: Color32) {
    let mut h = hull(pts);
    if let Some(&first) = h.first() {
        h.push(first);
    }
    painter.add(Shape::convex_polygon(
        h.clone(),
        c.gamma_multiply(0.06),
        Stroke::NONE,
    ));
    painter.extend(Shape::dashed_line(&h, Stroke::new(1.5, c), 6.0, 4.0));
}

fn hull(mut pts: Vec<Pos2>) -> Vec<Pos2> {
    pts.sort_by(|a, b| a.x.total_cmp(&b.x).then(a.y.total_cmp(&b.y)));
    pts.dedup_by(|a, b| (a.x - b.x).abs() < 1e-3 && (a.y - b.y).abs() < 1e-3);
    if pts.len() < 3 {
        return pts;
    }
    let cross = |o: Pos2, a: Pos2, b: Pos2| (a.x - o.x) * (b.y - o.y) - (a.y - o.y) * (b.x - o.x);
    let mut lower: Vec<Pos2> = vec![];
    for &p in &pts {
        while lower.len() >= 2 && cross(lower[lower.len() - 2], lower[lower.len() - 1], p) <= 0.0 {
            lower.pop();
        }
        lower.push(p);
    }
    let mut upper: Vec<Pos2> = vec![];
    for &p in pts.iter().rev() {
        while upper.len() >= 2 && cross(upper[upper.len() - 2], upper[upper.len() - 1], p) <= 0.0 {
            upper.pop();
        }
        upper.push(p);
    }
    lower.pop();
    upper.pop();
    lower.extend(upper);
    lower
}

/// Points of a circle around `c`, for padded hulls.
fn ring(c: Pos2, r: f32, out: &mut Vec<Pos2>) {
    for k in 0..12 {
        let a = k as f32 / 12.0 * std::f32::consts::TAU;
        out.push(c + vec2(a.cos(), a.sin()) * r);
    }
}

fn describe_var(
    family: &dyn crate::graph::Family,
    inst: &Instance,
    seq: &crate::data::Sequence,
    v: u32,
) -> String {
    // Images and samples have no words: a pixel's first column is a number, a sample has none.
    // On a ladder the word belongs to the variable's position.
    let token = (v / inst.position_width.max(1)) as usize;
    let name = family.var_name(v);
    if seq.shape.is_some() || super::data::word(seq, token).is_empty() {
        return name;
    }
    let w = super::data::word(seq, token);
    format!("{name}·{w}")
}

impl GraphPane {
    fn refresh(&mut self, state: &AppState) {
        let Some(d) = &state.data else {
            self.cache = GraphCache::default();
            return;
        };
        let n = d.corpus(self.split).sequences.len();
        self.sequence = self.sequence.min(n.saturating_sub(1));
        let key: CacheKey = (
            Arc::as_ptr(&d.family) as *const () as usize,
            self.split,
            self.sequence,
            self.estimator.clone(),
            self.pieces.clone(),
        );
        if self.cache.key.as_ref() == Some(&key) {
            return;
        }
        let learned = self.cache.learned.take();
        let learned_job = self.cache.learned_job.take();
        self.cache = GraphCache {
            key: Some(key.clone()),
            ..Default::default()
        };
        if (key.0, key.1, key.2) == (key.0, self.split, self.sequence) {
            self.cache.learned = learned.filter(|l| l.1 == self.split && l.2 == self.sequence);
            self.cache.learned_job = learned_job;
        }
        let Some(seq) = d.corpus(self.split).sequences.get(self.sequence) else {
            return;
        };
        let inst = match d.family.instance(seq) {
            Ok(i) => i,
            Err(e) => {
                self.cache.error = Some(e.to_string());
                return;
            }
        };
        self.cache.cells = d.family.layout(&inst, seq);
        let pieces_str = self.pieces.trim();
        let pieces = match Pieces::parse(pieces_str).and_then(|p| p.resolve(d.family.model())) {
            Ok(p) => p,
            Err(e) => {
                self.cache.error = Some(format!("pieces: {e}"));
                return;
            }
        };
        let mut buf = vec![];
        pieces.for_each(&inst, &mut buf, |fs| self.cache.pieces.push(fs.to_vec()));
        match node_split(d.family.model(), &inst, &pieces) {
            Ok(sg) => self.cache.split = Some(sg),
            Err(e) => self.cache.error = Some(format!("node split: {e}")),
        }
        let spec = EstimatorSpec::from_name(&self.estimator).map(|s| {
            if s.has_pieces() && !pieces_str.is_empty() {
                Pieces::parse(pieces_str)
                    .map(|p| s.clone().with_pieces(p))
                    .unwrap_or(s)
            } else {
                s
            }
        });
        let has_pieces = spec.as_ref().is_ok_and(|s| s.has_pieces());
        match spec.and_then(|s| s.build(d.family.model())) {
            Ok(est) => est.terms(&inst, &mut self.cache.terms),
            Err(e) => self.cache.error = Some(e.to_string()),
        }
        if !has_pieces {
            use crate::estimators::terms::Nota;
            for t in self.cache.terms.iter() {
                // NOTA terms share their factors with the position's gold term.
                if t.nota == Nota::Outcome {
                    continue;
                }
                let p = (t.factors.to_vec(), t.free.to_vec());
                if !self.cache.diagram.contains(&p) {
                    self.cache.diagram.push(p);
                }
            }
        }
        if self.term >= self.cache.terms.len() {
            self.term = 0;
        }
        self.cache.inst = Some(inst);
    }
}

pub fn ui(state: &mut AppState, pane: &mut GraphPane, ui: &mut egui::Ui) {
    let ctx = ui.ctx().clone();
    // A remembered model may belong to a run that no longer exists (deleted, other workspace).
    if let Some(r) = &pane.model_run {
        if !state.finished_runs().contains(r) {
            pane.model_run = None;
        }
    }
    if state.data.is_none() {
        ui.heading("Graph");
        ui.weak("Load a data set to draw its factor graph.");
        return;
    }
    pane.refresh(state);
    controls(state, pane, ui);
    if let Some(e) = &pane.cache.error {
        ui.colored_label(ui.visuals().error_fg_color, e);
    }
    // Animation: one term per 0.8 s.
    if pane.animate && pane.show_terms && !pane.cache.terms.is_empty() {
        let now = ctx.input(|i| i.time);
        if now - pane.last_step > 0.8 {
            pane.last_step = now;
            pane.term = (pane.term + 1) % pane.cache.terms.len();
            pane.scroll_to_term = true;
        }
        ctx.request_repaint_after(std::time::Duration::from_millis(100));
    }
    // BP animation: one sweep per 0.6 s until converged.
    if pane.show_bp && pane.bp_animate {
        let now = ctx.input(|i| i.time);
        let done = bp_shown(pane).is_some_and(|b| b.converges_after.is_some_and(|k| b.sweeps >= k));
        if !done && now - pane.last_step > 0.6 && pane.cache.bp_job.is_none() {
            pane.last_step = now;
            pane.bp_sweeps += 1;
        }
        ctx.request_repaint_after(std::time::Duration::from_millis(100));
    }
    term_caption(state, pane, ui);
    bp_caption(state, pane, ui);
    poll_learned(state, pane, &ctx);
    poll_bp(state, pane, &ctx);
    let avail = ui.available_height();
    let inspector_h = if pane.selected_factor.is_some() {
        (avail * 0.45).max(160.0)
    } else {
        0.0
    };
    egui::ScrollArea::both()
        .id_salt("graph-canvas")
        .max_height((avail - inspector_h).max(120.0))
        .auto_shrink([false, true])
        .show(ui, |ui| canvas(state, pane, ui));
    if pane.selected_factor.is_some() {
        ui.separator();
        egui::ScrollArea::both()
            .id_salt("factor-inspector")
            .show(ui, |ui| inspector(state, pane, ui));
    }
}

fn controls(state: &mut AppState, pane: &mut GraphPane, ui: &mut egui::Ui) {
    let d = state.data.as_ref().expect("checked");
    let has_test = d.test.is_some();
    let n = d.corpus(pane.split).sequences.len();
    let longest = d
        .corpus(pane.split)
        .sequences
        .iter()
        .enumerate()
        .max_by_key(|(_, s)| s.len())
        .map(|(i, _)| i)
        .unwrap_or(0);
    ui.horizontal_wrapped(|ui| {
        ui.selectable_value(&mut pane.split, Split::Train, "train");
        ui.add_enabled_ui(has_test, |ui| {
            ui.selectable_value(&mut pane.split, Split::Test, "test")
        });
        if ui.button("<").on_hover_text("previous sequence").clicked() {
            pane.sequence = pane.sequence.saturating_sub(1);
        }
        let l = ui.label("Sequence");
        ui.add(egui::DragValue::new(&mut pane.sequence).range(0..=n.saturating_sub(1)))
            .labelled_by(l.id);
        if ui.button(">").on_hover_text("next sequence").clicked() {
            pane.sequence = (pane.sequence + 1).min(n.saturating_sub(1));
        }
        if ui.button("Longest").clicked() {
            pane.sequence = longest;
        }
        ui.separator();
        let l = ui.label("Zoom");
        ui.add(egui::Slider::new(&mut pane.zoom, 0.15..=2.5).logarithmic(true))
            .labelled_by(l.id);
        ui.checkbox(&mut pane.show_pieces, "Pieces");
        ui.checkbox(&mut pane.node_split, "Node-split graph");
    });
    ui.horizontal_wrapped(|ui| {
        ui.checkbox(&mut pane.show_terms, "Terms of");
        for name in EstimatorSpec::NAMES {
            if ui
                .selectable_label(pane.estimator == *name, *name)
                .on_hover_text("Show this estimator's terms")
                .clicked()
            {
                pane.estimator = name.to_string();
                pane.term = 0;
                pane.show_terms = true;
            }
        }
        let l = ui.label("Pieces");
        ui.add(
            egui::TextEdit::singleline(&mut pane.pieces)
                .hint_text("factor-as-piece; e.g. state+transition")
                .desired_width(170.0),
        )
        .labelled_by(l.id)
        .on_hover_text("Groups of template names: `+` joins templates into one piece per position, `;` separates groups");
    });
    ui.horizontal_wrapped(|ui| {
        let nt = pane.cache.terms.len();
        ui.add_enabled_ui(pane.show_terms && nt > 0, |ui| {
            if ui.button("< Previous term").clicked() {
                pane.term = (pane.term + nt - 1) % nt.max(1);
                pane.scroll_to_term = true;
            }
            if ui.button("Next term >").clicked() {
                pane.term = (pane.term + 1) % nt.max(1);
                pane.scroll_to_term = true;
            }
            ui.checkbox(&mut pane.animate, "Animate");
        });
        ui.separator();
        ui.checkbox(&mut pane.show_bp, "BP messages")
            .on_hover_text("Run sum-product BP on the picked model's potentials, sweep by sweep");
        ui.add_enabled_ui(pane.show_bp, |ui| {
            if ui.button("Sweep +1").clicked() {
                pane.bp_sweeps += 1;
            }
            if ui.button("Reset BP").clicked() {
                pane.bp_sweeps = 1;
                pane.bp_animate = false;
            }
            ui.checkbox(&mut pane.bp_animate, "Animate BP");
            ui.checkbox(&mut pane.bp_at_one, "messages held at 1 (piecewise)")
                .on_hover_text("Piecewise training is BP with every message held at 1 (000 §3.4): each factor then believes only its own potentials");
        });
        ui.separator();
        let finished = state.finished_runs();
        egui::ComboBox::new("graph-model", "model (learned potentials, marginals)")
            .selected_text(pane.model_run.clone().unwrap_or_else(|| "untrained".into()))
            .show_ui(ui, |ui| {
                ui.selectable_value(&mut pane.model_run, None, "untrained");
                for r in &finished {
                    ui.selectable_value(&mut pane.model_run, Some(r.clone()), r);
                }
            });
    });
}

fn term_caption(state: &AppState, pane: &GraphPane, ui: &mut egui::Ui) {
    let (Some(inst), Some(d)) = (&pane.cache.inst, &state.data) else {
        return;
    };
    let seq = &d.corpus(pane.split).sequences[pane.sequence];
    let nt = pane.cache.terms.len();
    ui.horizontal_wrapped(|ui| {
        legend_chip(ui, FREE, "free");
        legend_chip(ui, CLAMPED, "clamped at gold");
        legend_chip(ui, SUMMED, "summed out");
        if pane.cache.terms.iter().any(|t| t.off_gold.is_some()) {
            legend_chip(ui, OFF_GOLD, "clamped at a wrong state (NOTA)");
        }
        ui.weak(format!(
            "· {} variables, {} factors, {} pieces",
            inst.n_vars(),
            inst.factors.len(),
            pane.cache.pieces.len()
        ));
    });
    if pane.show_pieces && !pane.node_split && !pane.cache.diagram.is_empty() {
        ui.weak(format!(
            "Pieces: {}'s parameter independence diagram (003 Fig. 1) — each dashed region is one \
             locally normalised piece, its factors and the variables it predicts; variables \
             outside it are conditioned on ({} pieces)",
            pane.estimator,
            pane.cache.diagram.len()
        ));
    }
    if !pane.show_terms || nt == 0 {
        return;
    }
    let t = pane.cache.terms.get(pane.term);
    let names = |vs: &[u32]| {
        vs.iter()
            .map(|&v| {
                let g = inst
                    .gold
                    .as_ref()
                    .map(|g| d.family.labels(inst, v).names[g[v as usize] as usize].as_str())
                    .unwrap_or("?");
                (describe_var(d.family.as_ref(), inst, seq, v), g.to_string())
            })
            .collect::<Vec<_>>()
    };
    let free = names(t.free);
    let mut clamped = names(t.clamped);
    if let Some((v, y)) = t.off_gold {
        if let Some(i) = t.clamped.iter().position(|&u| u == v) {
            clamped[i].1 = format!(
                "{} (wrong; gold {})",
                d.family.labels(inst, v).names[y as usize],
                clamped[i].1
            );
        }
    }
    use crate::estimators::terms::Nota;
    let outcome = match t.nota {
        Nota::Outcome => "NOTA".to_string(),
        _ => free
            .iter()
            .map(|(v, _)| v.clone())
            .collect::<Vec<_>>()
            .join(", "),
    };
    // (egui's font has no combining tilde for 001's p̃; the caption below says "local".)
    let mut formula = format!("log p({outcome}");
    if !clamped.is_empty() {
        formula.push_str(" | ");
        formula.push_str(
            &clamped
                .iter()
                .map(|(v, g)| format!("{v} = {g}"))
                .collect::<Vec<_>>()
                .join(", "),
        );
    }
    formula.push(')');
    let factors: Vec<String> = t
        .factors
        .iter()
        .map(|&f| {
            let fac = &inst.factors[f as usize];
            let sc: Vec<String> = inst.scope(fac).iter().map(|v| v.to_string()).collect();
            format!(
                "{}({})",
                d.family.model().templates[fac.template as usize].name,
                sc.join(",")
            )
        })
        .collect();
    ui.label(
        egui::RichText::new(format!(
            "{} term {} of {nt}: {formula}",
            pane.estimator,
            pane.term + 1
        ))
        .strong(),
    );
    let mut extra = format!(
        "normalises over {} factor(s): {}",
        factors.len(),
        factors.join(" ")
    );
    if !t.summed.is_empty() {
        extra.push_str(&format!(" · sums out {} variable(s)", t.summed.len()));
    }
    if t.weight != 1.0 {
        extra.push_str(&format!(" · weight {}", t.weight));
    }
    if t.temperature != 1.0 {
        extra.push_str(&format!(" · temperature μ = {:.4}", t.temperature));
    }
    match t.nota {
        Nota::Without => {}
        Nota::Normaliser => extra.push_str(
            " · locally normalised, and the normaliser holds the outcome NOTA (score 0): \
             1 + Σ_y φ(y, y') (001 eq. 6)",
        ),
        Nota::Outcome => extra.push_str(
            " · NOTA term: −log(1 + Σ_y φ(y, y')) for a wrong source state y' (001 eq. 6)",
        ),
    }
    ui.weak(extra);
}

fn bp_caption(_state: &AppState, pane: &GraphPane, ui: &mut egui::Ui) {
    if !pane.show_bp {
        return;
    }
    if pane.model_run.is_none() {
        ui.weak("BP runs on a trained model's potentials: pick one under \"model\".");
        return;
    }
    match (&pane.cache.bp, bp_shown(pane)) {
        (_, Some(b)) => {
            let conv = match b.converges_after {
                Some(k) if b.sweeps >= k => format!("converged after {k} sweeps"),
                Some(k) => format!("converges after {k} sweeps"),
                None => "does not converge within 1000 sweeps".into(),
            };
            let what = if pane.bp_at_one {
                "piecewise: every message held at 1, so each factor believes exp(φ_a) alone (small tables beside the factors); BP's beliefs for comparison in the inspector"
            } else {
                "arrows: factor-to-variable messages, width = how much each moved in this sweep; bars: variable beliefs"
            };
            ui.label(format!(
                "BP sweep {} (parallel schedule): largest message change {:.2e}; {conv}. {what}",
                b.sweeps, b.report.residual
            ));
        }
        (Some((_, Err(e))), _) => {
            ui.colored_label(ui.visuals().error_fg_color, e);
        }
        _ => {
            ui.horizontal(|ui| {
                ui.spinner();
                ui.weak("running BP…");
            });
        }
    }
}

fn legend_chip(ui: &mut egui::Ui, c: Color32, text: &str) {
    let (r, _) = ui.allocate_exact_size(vec2(12.0, 12.0), Sense::hover());
    ui.painter().circle_filled(r.center(), 6.0, c);
    ui.label(text);
}

fn poll_learned(state: &mut AppState, pane: &mut GraphPane, ctx: &egui::Context) {
    let Some(run) = pane.model_run.clone() else {
        return;
    };
    if let Some(job) = &mut pane.cache.learned_job {
        if let Some(r) = job.poll() {
            pane.cache.learned_job = None;
            pane.cache.learned = Some((run.clone(), pane.split, pane.sequence, r.map(Arc::new)));
        }
        return;
    }
    let fresh = matches!(&pane.cache.learned, Some((r, s, q, _)) if *r == run && *s == pane.split && *q == pane.sequence);
    if fresh {
        return;
    }
    let Some((model, seq)) = model_and_item(state, pane, ctx, &run) else {
        return;
    };
    pane.cache.learned = None;
    pane.cache.learned_job = Some(super::jobs::Job::spawn(ctx, "marginals", move || {
        learned_for(&model, &seq)
    }));
}

fn canvas(state: &mut AppState, pane: &mut GraphPane, ui: &mut egui::Ui) {
    let (Some(inst), Some(d)) = (&pane.cache.inst, &state.data) else {
        return;
    };
    let seq = &d.corpus(pane.split).sequences[pane.sequence];
    let split = pane.node_split.then_some(()).and(pane.cache.split.as_ref());
    if pane
        .cache
        .layout
        .as_ref()
        .is_none_or(|l| l.0 != split.is_some())
    {
        pane.cache.layout = Some((
            split.is_some(),
            layout(inst, &pane.cache.cells, split, &pane.cache.pieces),
        ));
    }
    let lay = &pane.cache.layout.as_ref().expect("just built").1;
    let z = pane.zoom;
    let (resp, painter) = ui.allocate_painter(lay.size * z, Sense::click());
    // Ctrl + wheel zooms.
    if resp.hovered() {
        let (zoom_delta, ctrl_scroll) = ui.input(|i| (i.zoom_delta(), i.modifiers.command));
        if zoom_delta != 1.0 && ctrl_scroll {
            pane.zoom = (pane.zoom * zoom_delta).clamp(0.15, 2.5);
        }
    }
    let origin = resp.rect.min;
    let to_screen = |p: Pos2| origin + p.to_vec2() * z;
    let clip = painter.clip_rect().expand(DX * z);
    let visible = |p: Pos2| clip.contains(to_screen(p));
    let (x_lo, x_hi) = ((clip.min.x - origin.x) / z, (clip.max.x - origin.x) / z);
    let vis_vars: Vec<usize> = lay.var_order[Layout::range(
        &lay.var_order,
        |v| lay.vars[v as usize].x,
        x_lo - DX,
        x_hi + DX,
    )]
    .iter()
    .map(|&v| v as usize)
    .collect();
    let vis_factors = &lay.factor_order
        [Layout::range(&lay.factor_order, |f| lay.factors[f as usize].x, x_lo, x_hi)];
    let vis_copies =
        &lay.copy_order[Layout::range(&lay.copy_order, |c| lay.copies[c as usize].2.x, x_lo, x_hi)];
    let text_ok = z >= 0.45;
    // Tokens are words on chains, over the first variable of each position on ladders (a
    // factorial CRF's POS row, a Boltzmann chain's labels); a grid's variables have none.
    let width = inst.position_width.max(1) as usize;
    let word = |v: usize| {
        if lay.flat {
            super::data::word(seq, v)
        } else if width > 1 && v.is_multiple_of(width) {
            super::data::word(seq, v / width)
        } else {
            ""
        }
    };
    let visuals = ui.visuals().clone();
    let faded = |c: Color32| c.gamma_multiply(0.25);

    let term = (pane.show_terms && !pane.cache.terms.is_empty()).then(|| {
        pane.cache
            .terms
            .get(pane.term.min(pane.cache.terms.len() - 1))
    });
    if let (Some(t), true) = (&term, pane.scroll_to_term) {
        if let Some(&v) = t.free.first() {
            let c = to_screen(lay.vars[v as usize]);
            ui.scroll_to_rect(Rect::from_center_size(c, vec2(DX * z * 3.0, 10.0)), None);
        }
        pane.scroll_to_term = false;
    }
    let in_term_factor = |f: usize| {
        term.as_ref()
            .is_none_or(|t| t.factors.contains(&(f as u32)))
    };
    let var_role = |v: u32| -> Option<Color32> {
        let t = term.as_ref()?;
        if t.free.contains(&v) {
            Some(FREE)
        } else if t.off_gold.is_some_and(|(u, _)| u == v) {
            Some(OFF_GOLD)
        } else if t.clamped.contains(&v) {
            Some(CLAMPED)
        } else if t.summed.contains(&v) {
            Some(SUMMED)
        } else {
            None
        }
    };

    // An estimator's parameter independence diagram (003 Fig. 1): each locally normalised
    // term circled with its factors and predicted variables; conditioned variables stay out.
    if pane.show_pieces && !pane.node_split && !pane.cache.diagram.is_empty() {
        let vis: std::collections::HashSet<u32> = vis_factors.iter().copied().collect();
        for (i, (fs, vs)) in pane.cache.diagram.iter().enumerate() {
            if !fs.iter().any(|f| vis.contains(f)) {
                continue;
            }
            let mut pts = vec![];
            for &f in fs {
                ring(lay.factors[f as usize], FAC_H + 8.0, &mut pts);
            }
            for &v in vs {
                ring(
                    lay.vars[v as usize],
                    VAR_R + 5.0 + (i % 3) as f32 * 3.0,
                    &mut pts,
                );
            }
            piece_hull(
                &painter,
                pts.into_iter().map(to_screen).collect(),
                piece_color(i),
            );
        }
    }
    // Pieces as dashed hulls.
    if (pane.show_pieces && pane.cache.diagram.is_empty()) || pane.node_split {
        let mut vis_pieces: Vec<u32> = vis_factors
            .iter()
            .flat_map(|&f| lay.factor_pieces[f as usize].iter().copied())
            .collect();
        vis_pieces.sort_unstable();
        vis_pieces.dedup();
        for i in vis_pieces {
            let i = i as usize;
            let fs = &pane.cache.pieces[i];
            let mut pts = vec![];
            for &f in fs {
                let fp = lay.factors[f as usize];
                ring(fp, FAC_H + 8.0, &mut pts);
                if split.is_some() {
                    for &c in &lay.factor_copies[f as usize] {
                        ring(lay.copies[c].2, VAR_R * 0.75 + 6.0, &mut pts);
                    }
                } else {
                    for &v in inst.scope(&inst.factors[f as usize]) {
                        ring(
                            lay.vars[v as usize],
                            VAR_R + 5.0 + (i % 3) as f32 * 3.0,
                            &mut pts,
                        );
                    }
                }
            }
            piece_hull(
                &painter,
                pts.into_iter().map(to_screen).collect(),
                piece_color(i),
            );
        }
    }

    // Edges.
    for &f in vis_factors {
        let f = f as usize;
        let fac = &inst.factors[f];
        let fp = lay.factors[f];
        if !visible(fp) {
            continue;
        }
        let col = if in_term_factor(f) {
            visuals.text_color()
        } else {
            faded(visuals.text_color())
        };
        if split.is_some() {
            for &c in &lay.factor_copies[f] {
                painter.line_segment(
                    [to_screen(fp), to_screen(lay.copies[c].2)],
                    Stroke::new(1.2, col),
                );
            }
        } else {
            for &v in inst.scope(fac) {
                let vp = lay.vars[v as usize];
                if fp.y < vp.y - ROW * 0.5 {
                    // A skip edge's arc: up from the variable, bending over to the factor.
                    painter.add(egui::epaint::QuadraticBezierShape::from_points_stroke(
                        [to_screen(vp), to_screen(pos2(vp.x, fp.y)), to_screen(fp)],
                        false,
                        Color32::TRANSPARENT,
                        Stroke::new(1.2, col),
                    ));
                } else {
                    painter.line_segment([to_screen(fp), to_screen(vp)], Stroke::new(1.2, col));
                }
            }
        }
    }

    // Variables (or their copies).
    let font = egui::FontId::proportional(11.0 * z.max(0.6));
    let small = egui::FontId::proportional(10.0 * z.max(0.6));
    let gold_name = |v: u32| {
        inst.gold
            .as_ref()
            .map(|g| d.family.labels(inst, v).names[g[v as usize] as usize].as_str())
            .unwrap_or("")
    };
    if let Some(_sg) = split {
        for &v in &vis_vars {
            let p = lay.vars[v];
            if visible(p) {
                painter.circle_stroke(
                    to_screen(p),
                    VAR_R * z,
                    Stroke::new(1.0, faded(visuals.weak_text_color())),
                );
                if text_ok {
                    painter.text(
                        to_screen(p) + vec2(0.0, -VAR_R * 2.3 * z),
                        egui::Align2::CENTER_CENTER,
                        word(v),
                        font.clone(),
                        visuals.text_color(),
                    );
                }
            }
        }
        for &c in vis_copies {
            let (orig, _piece, p) = lay.copies[c as usize];
            if !visible(p) {
                continue;
            }
            let s = to_screen(p);
            painter.circle(
                s,
                VAR_R * 0.75 * z,
                visuals.extreme_bg_color,
                Stroke::new(1.5, visuals.text_color()),
            );
            painter.line_segment(
                [s, to_screen(lay.vars[orig as usize])],
                Stroke::new(0.5, faded(visuals.weak_text_color())),
            );
            if text_ok {
                painter.text(
                    s,
                    egui::Align2::CENTER_CENTER,
                    d.family.var_name(orig),
                    small.clone(),
                    visuals.text_color(),
                );
            }
        }
    } else {
        for &v in &vis_vars {
            let p = lay.vars[v];
            if !visible(p) {
                continue;
            }
            let s = to_screen(p);
            let role = var_role(v as u32);
            let (fill, stroke) = match role {
                Some(c) if c == SUMMED => (visuals.extreme_bg_color, Stroke::new(2.5, c)),
                Some(c) => (c, Stroke::new(2.0, c.gamma_multiply(0.7))),
                None if term.is_some() => (
                    visuals.extreme_bg_color,
                    Stroke::new(1.0, faded(visuals.text_color())),
                ),
                None => (
                    visuals.extreme_bg_color,
                    Stroke::new(1.5, visuals.text_color()),
                ),
            };
            if role == Some(SUMMED) {
                painter.circle_filled(s, VAR_R * z, fill);
                let pts: Vec<Pos2> = (0..=32)
                    .map(|k| {
                        let a = k as f32 / 32.0 * std::f32::consts::TAU;
                        s + vec2(a.cos(), a.sin()) * VAR_R * z
                    })
                    .collect();
                painter.extend(Shape::dashed_line(&pts, stroke, 4.0, 3.0));
            } else {
                painter.circle(s, VAR_R * z, fill, stroke);
            }
            if text_ok {
                let tc = if role.is_some() && role != Some(SUMMED) {
                    Color32::WHITE
                } else {
                    visuals.text_color()
                };
                painter.text(
                    s,
                    egui::Align2::CENTER_CENTER,
                    d.family.var_name(v as u32),
                    small.clone(),
                    tc,
                );
                painter.text(
                    s + vec2(0.0, -VAR_R * 2.3 * z),
                    egui::Align2::CENTER_CENTER,
                    word(v),
                    font.clone(),
                    visuals.text_color(),
                );
                let g = gold_name(v as u32);
                let gc = match role {
                    Some(CLAMPED) => CLAMPED,
                    Some(OFF_GOLD) => OFF_GOLD,
                    _ => super::data_view::segment_color(g),
                };
                let gtext = match (role, term.as_ref().and_then(|t| t.off_gold)) {
                    (Some(CLAMPED), _) => format!("= {g}"),
                    // The NOTA term's wrong source state, with the gold label beside it.
                    (Some(OFF_GOLD), Some((_, y))) => format!(
                        "= {} (gold {g})",
                        d.family.labels(inst, v as u32).names[y as usize]
                    ),
                    _ => g.to_string(),
                };
                painter.text(
                    s + vec2(0.0, -VAR_R * 1.5 * z),
                    egui::Align2::CENTER_CENTER,
                    gtext,
                    small.clone(),
                    gc,
                );
            }
        }
    }

    // Factors.
    for &f in vis_factors {
        let f = f as usize;
        let fac = &inst.factors[f];
        let fp = lay.factors[f];
        if !visible(fp) {
            continue;
        }
        let s = to_screen(fp);
        let c = template_color(fac.template as usize);
        let on = in_term_factor(f);
        let fill = if on { c } else { faded(c) };
        let r = Rect::from_center_size(s, vec2(2.0 * FAC_H * z, 2.0 * FAC_H * z));
        let sel = pane.selected_factor == Some(f);
        painter.rect(
            r,
            1.0,
            fill,
            Stroke::new(
                if sel { 3.0 } else { 1.0 },
                if sel {
                    visuals.selection.stroke.color
                } else {
                    visuals.text_color()
                },
            ),
            egui::StrokeKind::Outside,
        );
    }

    // Template legend (bottom-left of the visible region, clear of the words above the
    // variables).
    let shown: Vec<usize> = (0..d.family.model().templates.len())
        .filter(|&i| {
            d.family.model().templates[i].tied_to.is_none()
                && inst.factors.iter().any(|f| f.template as usize == i)
        })
        .collect();
    let mut y = painter.clip_rect().max.y - 6.0 - 14.0 * shown.len() as f32;
    let x = painter.clip_rect().min.x + 6.0;
    for (i, t) in d.family.model().templates.iter().enumerate() {
        if !shown.contains(&i) {
            continue;
        }
        painter.rect_filled(
            Rect::from_min_size(pos2(x, y), vec2(10.0, 10.0)),
            1.0,
            template_color(i),
        );
        painter.text(
            pos2(x + 14.0, y + 5.0),
            egui::Align2::LEFT_CENTER,
            &t.name,
            egui::FontId::proportional(11.0),
            visuals.text_color(),
        );
        y += 14.0;
    }

    // The BP stepper: messages as arrows (width: how much each moved in the last sweep), variable
    // beliefs as bars; with messages held at 1, each factor's own belief exp(φ_a) instead.
    if let Some(b) = bp_shown(pane) {
        let msg_color = Color32::from_rgb(220, 90, 40);
        let max_res = b.edge_residual.iter().copied().fold(1e-300, f64::max);
        let bars = |p: Pos2, probs: &[f64], color: Color32| {
            let w = (VAR_R * 1.6 / probs.len().max(1) as f32).max(2.0) * z;
            let h = VAR_R * 1.3 * z;
            let base = p + vec2(-(w * probs.len() as f32) / 2.0, -VAR_R * z - 4.0);
            painter.rect_filled(
                Rect::from_min_max(
                    base - vec2(1.0, h + 1.0),
                    base + vec2(w * probs.len() as f32 + 1.0, 1.0),
                ),
                1.0,
                visuals.extreme_bg_color.gamma_multiply(0.9),
            );
            for (y, &pr) in probs.iter().enumerate() {
                let x0 = base.x + y as f32 * w;
                painter.rect_filled(
                    Rect::from_min_max(
                        pos2(x0 + 0.5, base.y - h * pr as f32),
                        pos2(x0 + w - 0.5, base.y),
                    ),
                    0.0,
                    color,
                );
            }
        };
        for &f in vis_factors {
            let f = f as usize;
            let fac = &inst.factors[f];
            let fp = lay.factors[f];
            for (e, &v) in inst.scope_range(fac).zip(inst.scope(fac)) {
                let vp = lay.vars[v as usize];
                let (a, c) = (to_screen(fp), to_screen(vp));
                let dir = (c - a).normalized();
                let (a, c) = (a + dir * FAC_H * z, c - dir * (VAR_R + 2.0) * z);
                if pane.bp_at_one {
                    painter.extend(Shape::dashed_line(
                        &[a, c],
                        Stroke::new(1.0, visuals.weak_text_color()),
                        4.0,
                        3.0,
                    ));
                } else {
                    // Relative to the largest change of this sweep, so the messages still moving
                    // stand out at every stage.
                    let r = b.edge_residual.get(e).copied().unwrap_or(0.0);
                    let width = (0.5 + 6.0 * (r / max_res).sqrt()) as f32 * z.max(0.4);
                    painter.arrow(a, c - a, Stroke::new(width, msg_color.gamma_multiply(0.8)));
                }
            }
            if pane.bp_at_one {
                if let Some(pb) = b.piece_beliefs.get(f) {
                    bars(to_screen(fp) + vec2(0.0, -FAC_H * z), pb, piece_color(f));
                }
            }
        }
        if !pane.bp_at_one {
            for &v in &vis_vars {
                if let Some(vb) = b.var_beliefs.get(v) {
                    bars(to_screen(lay.vars[v]), vb, msg_color);
                }
            }
        }
    }

    // Click a factor to inspect it.
    if resp.clicked() {
        if let Some(p) = resp.interact_pointer_pos() {
            let hit = lay
                .factors
                .iter()
                .enumerate()
                .map(|(f, &fp)| (f, to_screen(fp).distance(p)))
                .filter(|(_, dist)| *dist <= (FAC_H + 4.0) * z.max(0.5))
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .map(|(f, _)| f);
            pane.selected_factor = hit;
        }
    }
    if let Some(p) = resp.hover_pos() {
        if let Some((f, _)) = lay
            .factors
            .iter()
            .enumerate()
            .map(|(f, &fp)| (f, to_screen(fp).distance(p)))
            .filter(|(_, dist)| *dist <= (FAC_H + 4.0) * z.max(0.5))
            .min_by(|a, b| a.1.total_cmp(&b.1))
        {
            let fac = &inst.factors[f];
            resp.clone().on_hover_text(format!(
                "{} factor over {:?} — click to inspect",
                d.family.model().templates[fac.template as usize].name,
                inst.scope(fac)
            ));
        }
    }
}

/// The selected factor's table: gold entry, and for a trained model its learned log-potentials
/// and marginals, as heat maps.
fn inspector(state: &mut AppState, pane: &mut GraphPane, ui: &mut egui::Ui) {
    let (Some(inst), Some(d), Some(f)) = (&pane.cache.inst, &state.data, pane.selected_factor)
    else {
        return;
    };
    let Some(fac) = inst.factors.get(f) else {
        pane.selected_factor = None;
        return;
    };
    let scope = inst.scope(fac).to_vec();
    // Rows are the first variable of the scope, columns the second.
    let corner = match scope.as_slice() {
        [a, b] => format!("y{a} \\ y{b}"),
        _ => String::new(),
    };
    // Label names of the scope's first variable (tables are drawn over one label set).
    let names = &d.family.labels(inst, scope[0]).names;
    let gold: Vec<Option<u32>> = scope
        .iter()
        .map(|&v| inst.gold.as_ref().map(|g| g[v as usize]))
        .collect();
    let tname = &d.family.model().templates[fac.template as usize].name;
    let mut close = false;
    ui.horizontal(|ui| {
        ui.strong(format!("Factor {f}: {tname} over {:?}", scope));
        if ui.button("Close").clicked() {
            close = true;
        }
    });
    let slot = &inst.slots[fac.slot as usize];
    let n_obs: usize = inst.parts(slot).iter().map(|p| inst.obs(p).0.len()).sum();
    ui.weak(format!(
        "{} active observation(s); gold entry outlined.",
        n_obs
    ));
    let learned = match &pane.cache.learned {
        Some((_, _, _, Ok(l))) => Some(l.clone()),
        Some((_, _, _, Err(e))) => {
            ui.colored_label(ui.visuals().error_fg_color, e);
            None
        }
        None => {
            if pane.model_run.is_some() {
                ui.horizontal(|ui| {
                    ui.spinner();
                    ui.weak("computing potentials and marginals…");
                });
            } else {
                ui.weak("Pick a trained model above to see learned potentials and marginals.");
            }
            None
        }
    };
    if close {
        pane.selected_factor = None;
        return;
    }
    if let Some(sc) = learned.as_ref().and_then(|l| l.scales.as_ref()) {
        // Which scale multiplies this factor: its position's source state (y_{t−1}), or the
        // start's at t = 0.
        let row = if scope.len() == 2 {
            "row y' (the source state y_{t−1}) is multiplied by α_{y'}"
        } else if scope.first() == Some(&0) {
            "at t = 0 the whole table is multiplied by α_start"
        } else {
            "it is multiplied by the α of whatever source state y_{t−1} takes"
        };
        ui.label(format!(
            "Per-state scales α (001 §3, fitted by global likelihood with θ fixed): {row}. {}",
            sc.iter()
                .map(|(n, a)| format!("{n} {a:.3}"))
                .collect::<Vec<_>>()
                .join(" · ")
        ));
    }
    let shape: Vec<usize> = scope
        .iter()
        .map(|&v| inst.card[v as usize] as usize)
        .collect();
    ui.horizontal_top(|ui| {
        let phi = learned.as_ref().and_then(|lr| lr.phi.get(f).cloned());
        let (marg, by) = learned
            .as_ref()
            .and_then(|lr| lr.marginals.as_ref())
            .map(|(m, by)| (m.get(f).cloned(), *by))
            .unwrap_or((None, ""));
        let beliefs = learned
            .as_ref()
            .and_then(|lr| lr.beliefs.as_ref())
            .map(|(b, r)| (b.get(f).cloned(), *r));
        heat_table(
            ui,
            "log-potential φ",
            &corner,
            names,
            &shape,
            &gold,
            phi.as_deref(),
            false,
        );
        if marg.as_ref().is_some_and(|m| !m.is_empty()) {
            ui.separator();
            heat_table(
                ui,
                &format!("marginal p ({by})"),
                &corner,
                names,
                &shape,
                &gold,
                marg.as_deref(),
                true,
            );
        }
        if let Some(bp) = bp_shown(pane) {
            if let (Some(pb), Some(fb)) = (bp.piece_beliefs.get(f), bp.factor_beliefs.get(f)) {
                ui.separator();
                heat_table(
                    ui,
                    "piece belief (messages at 1)",
                    &corner,
                    names,
                    &shape,
                    &gold,
                    Some(pb),
                    true,
                );
                ui.separator();
                heat_table(
                    ui,
                    &format!("BP belief after {} sweeps", bp.sweeps),
                    &corner,
                    names,
                    &shape,
                    &gold,
                    Some(fb),
                    true,
                );
            }
        }
        if let Some((Some(b), r)) = beliefs {
            ui.separator();
            let title = if r.converged {
                format!("BP belief ({} sweeps)", r.sweeps)
            } else {
                format!("BP belief (not converged, residual {:.1e})", r.residual)
            };
            heat_table(ui, &title, &corner, names, &shape, &gold, Some(&b), true);
        }
    });
}

#[allow(clippy::too_many_arguments)]
pub(super) fn heat_table(
    ui: &mut egui::Ui,
    title: &str,
    corner: &str,
    names: &[String],
    shape: &[usize],
    gold: &[Option<u32>],
    values: Option<&[f64]>,
    probability: bool,
) {
    ui.vertical(|ui| {
        ui.strong(title);
        let (lo, hi) = values
            .map(|v| {
                v.iter()
                    .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
                        (a.min(x), b.max(x))
                    })
            })
            .unwrap_or((0.0, 1.0));
        let lo = if probability { 0.0 } else { lo };
        let color = |x: f64| {
            let t = if hi > lo {
                ((x - lo) / (hi - lo)) as f32
            } else {
                0.5
            };
            egui::ecolor::Hsva::new(0.62 - 0.62 * t, 0.75, 0.35 + 0.6 * t, 1.0).into()
        };
        let fmt = |x: f64| {
            if probability {
                format!("{x:.3}")
            } else {
                format!("{x:.2}")
            }
        };
        let cell = vec2(if names.len() > 12 { 34.0 } else { 52.0 }, 16.0);
        let (rows, cols) = match shape {
            [a] => (1, *a),
            [a, b] => (*a, *b),
            _ => (0, 0),
        };
        egui::Grid::new(ui.next_auto_id())
            .spacing(vec2(1.0, 1.0))
            .show(ui, |ui| {
                ui.label(if rows > 1 { corner } else { "" });
                for name in names.iter().take(cols) {
                    ui.label(egui::RichText::new(name).small());
                }
                ui.end_row();
                for r in 0..rows {
                    ui.label(
                        egui::RichText::new(if rows > 1 { names[r].as_str() } else { "" }).small(),
                    );
                    for c in 0..cols {
                        let i = r * cols + c;
                        let is_gold = if rows > 1 {
                            gold.first() == Some(&Some(r as u32))
                                && gold.get(1) == Some(&Some(c as u32))
                        } else {
                            gold.first() == Some(&Some(c as u32))
                        };
                        let (rect, resp) = ui.allocate_exact_size(cell, Sense::hover());
                        let fill = values
                            .map(|v| color(v[i]))
                            .unwrap_or(ui.visuals().faint_bg_color);
                        ui.painter().rect_filled(rect, 0.0, fill);
                        if let Some(v) = values {
                            ui.painter().text(
                                rect.center(),
                                egui::Align2::CENTER_CENTER,
                                fmt(v[i]),
                                egui::FontId::monospace(9.0),
                                Color32::WHITE,
                            );
                            resp.on_hover_text(format!(
                                "{}: {}",
                                if rows > 1 {
                                    format!("{} -> {}", names[r], names[c])
                                } else {
                                    names[c].clone()
                                },
                                v[i]
                            ));
                        }
                        if is_gold {
                            ui.painter().rect_stroke(
                                rect,
                                0.0,
                                Stroke::new(2.0, Color32::YELLOW),
                                egui::StrokeKind::Inside,
                            );
                        }
                    }
                    ui.end_row();
                }
            });
    });
}
