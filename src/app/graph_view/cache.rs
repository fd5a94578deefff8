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
use crate::run::inspect::Learned;
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

pub(super) type BpKey = (String, Split, usize, usize);

/// A run's trained model (loaded in the background on first use) and the shown item.
pub(super) fn model_and_item(
    state: &mut AppState,
    pane: &GraphPane,
    ctx: &egui::Context,
    run: &str,
) -> Option<(Arc<crate::run::TrainedRun>, crate::data::Sequence)> {
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
        crate::app::jobs::Job::spawn(ctx, "BP sweeps", move || {
            model.bp_snapshot(&seq, sweeps).map_err(|e| e.to_string())
        }),
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
        model.learned(&seq).map_err(|e| e.to_string())
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
