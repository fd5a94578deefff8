//! What the Graph pane derives from the shown item: its instance, terms, pieces and layout
//! (structure only, rebuilt when the item or estimator changes), and what it loads in the
//! background — a run's learned tables and marginals, and BP snapshots.

use super::super::data::Split;
use super::super::AppState;
use super::*;
use crate::estimators::terms::TermList;
use crate::estimators::EstimatorSpec;
use crate::graph::instance::Instance;
use crate::graph::pieces::{node_split, NodeSplitGraph, Pieces};
use crate::inference::bp::BpSnapshot;
use std::sync::Arc;

pub(super) type CacheKey = (usize, Split, usize, String, String);

/// Learned tables for (run, split, sequence), or why there are none.
pub(super) type LearnedFor = (String, Split, usize, Result<Arc<Learned>, String>);

/// The instance and the structures derived from it, rebuilt when the sequence, data or
/// estimator change (structure only: no numerics).
#[derive(Default)]
pub(super) struct GraphCache {
    pub(super) key: Option<CacheKey>,
    pub(super) inst: Option<Instance>,
    pub(super) terms: TermList,
    /// Factors of each piece.
    pub(super) pieces: Vec<Vec<u32>>,
    /// For estimators without piece groups (ml, pl, pl-edge, memm, nota, …): their parameter
    /// independence diagram (003 Fig. 1) — per locally normalised term, its factors and its
    /// predicted (free) variables; the pieces overlay draws these instead.
    pub(super) diagram: Vec<(Vec<u32>, Vec<u32>)>,
    pub(super) split: Option<NodeSplitGraph>,
    pub(super) error: Option<String>,
    /// Learned tables and marginals for (run, split, sequence).
    pub(super) learned: Option<LearnedFor>,
    pub(super) learned_job: Option<crate::app::jobs::Job<Learned>>,
    /// The BP stepper's snapshot for (run, split, sequence, sweeps), and its job.
    pub(super) bp: Option<(BpKey, Result<Arc<BpSnapshot>, String>)>,
    pub(super) bp_job: Option<(BpKey, crate::app::jobs::Job<BpSnapshot>)>,
    /// Where the family draws each variable (cell units).
    pub(super) cells: Vec<[f32; 2]>,
    /// Positions, for the plain (false) or node-split (true) drawing.
    pub(super) layout: Option<(bool, Layout)>,
    /// Per variable, its labels in display order (`appearance::display_order`), computed
    /// with the item rather than per variable per frame.
    pub(super) label_orders: Vec<Vec<usize>>,
    /// That layout wrapped into rows: (node-split?, columns) and the positions.
    pub(super) wrapped: Option<((bool, usize), Layout)>,
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
    /// The model's BP schedule (its beliefs' sweeps count in it).
    pub schedule: crate::inference::bp::Schedule,
    /// The run's per-state scales (001 §3) with the source states' names, start last.
    pub scales: Option<Vec<(String, f64)>>,
}

pub(super) fn learned_for(
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
        schedule: model.inference.bp.schedule,
        scales,
    })
}

pub(super) type BpKey = (String, Split, usize, usize);

pub(super) fn bp_snapshot(
    model: &crate::train::TrainedRun,
    seq: &crate::data::Sequence,
    sweeps: usize,
) -> Result<BpSnapshot, String> {
    let inst = model.family.instance(seq).map_err(|e| e.to_string())?;
    let phi = crate::eval::tables(model.family.as_ref(), &model.theta, &inst);
    Ok(crate::inference::bp::snapshot(
        &inst,
        &phi,
        model.inference.bp.damping,
        sweeps,
    ))
}

/// A run's trained model (loaded in the background on first use) and the shown item.
pub(super) fn model_and_item(
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

pub(super) fn poll_bp(state: &mut AppState, pane: &mut GraphPane, ctx: &egui::Context) {
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
        crate::app::jobs::Job::spawn(ctx, "BP sweeps", move || bp_snapshot(&model, &seq, sweeps)),
    ));
}

/// The current snapshot when it belongs to the shown item.
pub(super) fn bp_shown(pane: &GraphPane) -> Option<&BpSnapshot> {
    let (k, r) = pane.cache.bp.as_ref()?;
    if !pane.show_bp
        || pane.model_run.as_deref() != Some(k.0.as_str())
        || (k.1, k.2) != (pane.split, pane.sequence)
    {
        return None;
    }
    r.as_ref().ok().map(|s| s.as_ref())
}

pub(super) fn poll_learned(state: &mut AppState, pane: &mut GraphPane, ctx: &egui::Context) {
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
    pane.cache.learned_job = Some(crate::app::jobs::Job::spawn(ctx, "marginals", move || {
        learned_for(&model, &seq)
    }));
}

impl GraphPane {
    pub(super) fn refresh(&mut self, state: &AppState) {
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
        // Learned tables survive a change of estimator or pieces, never a change of data: they
        // index the old data's factors (issue 24, 5.1).
        let same_item = self.cache.key.as_ref().is_some_and(|k| k.0 == key.0);
        self.cache = GraphCache {
            key: Some(key.clone()),
            ..Default::default()
        };
        if same_item {
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
        self.cache.label_orders = (0..inst.n_vars() as u32)
            .map(|v| crate::app::appearance::display_order(&d.family.labels(&inst, v).names))
            .collect();
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
