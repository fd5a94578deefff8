//! The Graph pane: the factor graph of one sequence drawn with egui's painter (variables as
//! circles, factors as squares coloured by template, the chain along x), with overlays for pieces
//! (dashed hulls, 003 Fig. 1), the node-split graph (000 Fig. 1) and an estimator's terms (000
//! Fig. 2, 5). The terms drawn are the `TermList` the estimator trains with.

mod cache;
mod canvas;
mod captions;
mod inspector;
mod layout;
mod scene;

use super::data::Split;
use super::AppState;
use crate::estimators::EstimatorSpec;
use cache::*;
use canvas::*;
use captions::*;
use inspector::*;
pub use inspector::{heat_key, heat_table};
pub use layout::LECTURE_CIRCLE_PX;
use layout::*;
use scene::*;

/// A lesson's click question on one term: which role it asks for.
#[derive(Clone, Debug)]
pub struct Quiz {
    pub check: crate::app::lesson_format::Check,
    pub term: usize,
    pub estimator: String,
    pub sequence: usize,
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct GraphPane {
    pub split: Split,
    pub sequence: usize,
    pub zoom: f32,
    /// Zoom to fit the pane (5.6): the whole graph when it fits at a readable size, else its
    /// height with a horizontal scroll (long chains). Moving the zoom turns it off.
    pub fit: bool,
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
    /// Variables the user clicked (a lesson's question asks for them); ringed in yellow.
    #[serde(skip)]
    pub picked_vars: std::collections::BTreeSet<u32>,
    /// A lesson's click question asks for the term's variables of this role: until it is
    /// answered right their colour and the formula's part that names them are not shown
    /// (the picture gave the answer away).
    #[serde(skip)]
    pub quiz: Option<Quiz>,
    /// *Fit* wraps a long chain after this many variables (set each frame from the pane's
    /// size; `None`: one row).
    #[serde(skip)]
    wrap: Option<usize>,
    #[serde(skip)]
    cache: GraphCache,
    #[serde(skip)]
    last_step: f64,
    /// Frames left to bring the shown term into view (a step or the term stepper moved it).
    #[serde(skip)]
    pub scroll_to_term: u8,
    /// Frames left to bring the inspected factor into view (a lesson picked it).
    #[serde(skip)]
    pub scroll_to_factor: u8,
    /// The inspector's height down to its first row of tables, as last drawn.
    #[serde(skip)]
    inspector_need: f32,
}

impl Default for GraphPane {
    fn default() -> Self {
        GraphPane {
            split: Split::Train,
            sequence: 0,
            zoom: 1.0,
            fit: true,
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
            picked_vars: Default::default(),
            quiz: None,
            wrap: None,
            cache: GraphCache::default(),
            last_step: 0.0,
            scroll_to_term: 0,
            scroll_to_factor: 0,
            inspector_need: 0.0,
        }
    }
}

impl GraphPane {
    /// The shown term's variables of one role (sorted), for a lesson's question; `None` when
    /// no term is shown.
    /// The role a lesson's question hides, while the pane still shows the question's term
    /// (stepping to another term, estimator or sequence shows everything again).
    pub fn quiz_role(&self) -> Option<crate::app::lesson_format::Check> {
        self.quiz
            .as_ref()
            .filter(|q| {
                q.term == self.term && q.estimator == self.estimator && q.sequence == self.sequence
            })
            .map(|q| q.check)
    }

    pub fn term_vars(&self, role: crate::app::lesson_format::Check) -> Option<Vec<u32>> {
        use crate::app::lesson_format::Check;
        if !self.show_terms || self.cache.terms.is_empty() {
            return None;
        }
        let t = self
            .cache
            .terms
            .get(self.term.min(self.cache.terms.len() - 1));
        let mut v = match role {
            Check::Clamped => t.clamped.to_vec(),
            Check::Free => t.free.to_vec(),
            Check::Summed => t.summed.to_vec(),
            _ => return None,
        };
        v.sort_unstable();
        v.dedup();
        Some(v)
    }

    /// The probability tables the factor inspector shows for the selected factor, by title:
    /// the run's marginal, BP's belief and the BP stepper's piece and factor beliefs, each
    /// shaped by the factor's scope.
    pub fn inspected_distributions(&self) -> Vec<(String, ndarray::ArrayD<f64>)> {
        let Some(f) = self.selected_factor else {
            return vec![];
        };
        factor_tables(self, f)
            .into_iter()
            .filter_map(|(title, values, probability)| {
                Some((title, values.filter(|_| probability)?))
            })
            .collect()
    }

    /// How many pixels across the smallest circle of the picture is drawn (at the context's
    /// `pixels_per_point`): the lecture zoom keeps it at least [`LECTURE_CIRCLE_PX`].
    pub fn smallest_circle_px(&self, pixels_per_point: f32) -> f32 {
        smallest_circle(self.node_split) * self.zoom * pixels_per_point
    }

    /// The number of terms of the shown estimator on the shown item.
    pub fn term_count(&self) -> usize {
        self.cache.terms.len()
    }
}

pub fn ui(state: &mut AppState, pane: &mut GraphPane, ui: &mut egui::Ui) {
    let ctx = ui.ctx().clone();
    // A remembered model may belong to a run that no longer exists (deleted, other workspace).
    // A remembered run may also have been trained on other data: its factors are not these.
    if let Some(r) = &pane.model_run {
        if !state.runs_for_data().0.contains(r) {
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
            pane.scroll_to_term = 30;
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
    let width = ui.available_width();
    // A grid is about as tall as wide: in a wide pane its inspector goes beside it, so the
    // picture keeps the pane's height; a chain is wide and flat, its inspector goes below.
    let flat = pane.cache.layout.as_ref().is_none_or(|(_, l)| l.flat);
    let beside = pane.selected_factor.is_some() && !flat && width > 1.5 * avail;
    // A flat chain needs little height: below it the inspector gets the larger share, so
    // its tables (a BP belief beside the exact marginal) are on screen at 1280×800.
    // No taller than its first row of tables needs (measured last frame): at 1024×768 the
    // rest of a 60 % share left lesson 3's chain a 140 px strip.
    let inspector_h = if pane.selected_factor.is_some() && !beside {
        let share = (avail * if flat { 0.6 } else { 0.4 }).max(160.0);
        if pane.inspector_need > 0.0 {
            share.min(pane.inspector_need + 16.0)
        } else {
            share
        }
    } else {
        0.0
    };
    let view_h = (avail - inspector_h).max(120.0);
    // Beside, the picture gets what the inspector's tables leave (at least half).
    let view_w = if beside {
        (width - inspector_width(state, pane) - 12.0).max(width * 0.5)
    } else {
        width
    };
    pane.wrap = None;
    // The lecture zoom: in a lesson or presenting, Fit keeps every circle at least
    // LECTURE_CIRCLE_PX pixels across; what does not fit scrolls (the shown term in view).
    let min_zoom = if state.lecture {
        LECTURE_CIRCLE_PX / (smallest_circle(pane.node_split) * ctx.pixels_per_point())
    } else {
        0.0
    };
    if pane.fit {
        if let Some((_, lay)) = &pane.cache.layout {
            let view = egui::vec2(view_w - 12.0, view_h - 12.0);
            // A long chain wraps into rows (D30). Above the inspector only where the rows stay
            // readable (zoom 0.7): squeezed into its strip at 0.5, the piece-belief grids ran
            // into the labels, and one scrolled row reads better.
            // Pieces and node-split copies stay on one row: a wrap between two variables cut
            // the piece joining them in two hulls (lesson 2 step 4 at 1024×768).
            let wrapped = lay
                .flat
                .then(|| wrap_fit(lay, view, min_zoom))
                .flatten()
                .filter(|&(_, z)| pane.selected_factor.is_none() || z >= 0.7)
                .filter(|_| !pane.show_pieces && !pane.node_split);
            match wrapped {
                Some((cols, z)) => {
                    pane.wrap = Some(cols);
                    pane.zoom = z;
                }
                None => pane.zoom = fit_zoom(lay.size, view).max(min_zoom),
            }
        }
    }
    let graph = |state: &mut AppState, pane: &mut GraphPane, ui: &mut egui::Ui| {
        egui::ScrollArea::both()
            .id_salt("graph-canvas")
            .max_height(view_h)
            .auto_shrink([false, true])
            .show(ui, |ui| canvas(state, pane, ui));
    };
    let inspect = |state: &mut AppState, pane: &mut GraphPane, ui: &mut egui::Ui| {
        egui::ScrollArea::both()
            .id_salt("factor-inspector")
            .show(ui, |ui| inspector(state, pane, ui));
    };
    if beside {
        ui.horizontal_top(|ui| {
            ui.allocate_ui(egui::vec2(view_w, view_h), |ui| {
                ui.set_width(view_w);
                graph(state, pane, ui)
            });
            ui.separator();
            ui.vertical(|ui| inspect(state, pane, ui));
        });
    } else {
        graph(state, pane, ui);
        if pane.selected_factor.is_some() {
            ui.separator();
            inspect(state, pane, ui);
        }
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
        // On a copy: the slider rounds what it shows to two decimals and reports the rounding
        // as a change, which turned *Fit* off whenever the fitted zoom was not a round number.
        let mut zoom = pane.zoom;
        // A short slider: at its default width "Node-split graph" took a row of its own in
        // presenter mode at 1280×800, and the graph's last row fell below the fold.
        ui.spacing_mut().slider_width = 70.0;
        let moved = ui
            .add(
                egui::Slider::new(&mut zoom, 0.15..=2.5)
                    .logarithmic(true)
                    .fixed_decimals(2),
            )
            .labelled_by(l.id)
            .changed();
        if moved && (zoom - pane.zoom).abs() > 0.006 {
            pane.zoom = zoom;
            pane.fit = false;
        }
        ui.checkbox(&mut pane.fit, "Fit").on_hover_text(
            "Zoom to fit the pane (a long chain wraps into rows, like a line of text)",
        );
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
        // The term stepper only while terms are shown (as BP's below): greyed out it took a
        // row from lesson 3's graph at 1024×768.
        if pane.show_terms && nt > 0 {
            if ui.button("< Previous term").clicked() {
                pane.term = (pane.term + nt - 1) % nt.max(1);
                pane.scroll_to_term = 30;
            }
            if ui.button("Next term >").clicked() {
                pane.term = (pane.term + 1) % nt.max(1);
                pane.scroll_to_term = 30;
            }
            // Each position's NOTA terms follow its own term: a jump to the first of them.
            let first_nota = pane
                .cache
                .terms
                .iter()
                .position(|t| t.nota == crate::estimators::terms::Nota::Outcome);
            if let Some(k) = first_nota {
                if ui
                    .button("First NOTA term")
                    .on_hover_text(format!("Term {} of {nt}: the first \"none of the above\" term", k + 1))
                    .clicked()
                {
                    pane.term = k;
                    pane.scroll_to_term = 30;
                }
            }
            ui.checkbox(&mut pane.animate, "Animate");
            ui.separator();
        }
        ui.checkbox(&mut pane.show_bp, "BP messages")
            .on_hover_text("Run sum-product BP on the picked model's potentials, sweep by sweep");
        // The stepper's buttons only while it is shown: greyed out they took two rows of a
        // projector's pane.
        if pane.show_bp {
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
        }
        ui.separator();
        let (finished, hidden) = state.runs_for_data();
        // Runs by their names (a lesson's "lesson3-pw (001-pw)"), as the Runs pane lists them.
        let label = |id: &str| state.runs.get(id).map_or(id.to_string(), |e| e.label());
        egui::ComboBox::new("graph-model", "model (learned potentials, marginals)")
            .selected_text(pane.model_run.as_deref().map_or("untrained".into(), label))
            .show_ui(ui, |ui| {
                ui.selectable_value(&mut pane.model_run, None, "untrained");
                for r in &finished {
                    ui.selectable_value(&mut pane.model_run, Some(r.clone()), label(r));
                }
            });
        super::hidden_runs_note(ui, hidden);
    });
}

/// The zoom that fits a layout of `size` into `view`: the whole of it when that stays readable
/// (≥ 0.6), else its height, between 0.45 (labels still drawn) and 1, with a horizontal scroll.
pub(crate) fn fit_zoom(size: egui::Vec2, view: egui::Vec2) -> f32 {
    let both = (view.x / size.x.max(1.0)).min(view.y / size.y.max(1.0));
    if both >= 0.6 {
        both.min(1.5)
    } else {
        (view.y / size.y.max(1.0)).clamp(0.45, 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::fit_zoom;
    use egui::vec2;

    /// A grid fits the pane whole; too big a grid keeps a readable zoom and scrolls (5.6;
    /// a long chain wraps instead: `layout::wrap_fit`).
    #[test]
    fn fit_zoom_fits_grids_and_scrolls_chains() {
        let grid = fit_zoom(vec2(400.0, 400.0), vec2(600.0, 300.0));
        assert!((grid - 0.75).abs() < 1e-6, "{grid}");
        assert!(400.0 * grid <= 300.0 + 1e-3);
        assert_eq!(fit_zoom(vec2(2400.0, 250.0), vec2(800.0, 300.0)), 1.0);
        // A grid too big to read whole: its height at a readable zoom, scrolled.
        assert_eq!(fit_zoom(vec2(3000.0, 3000.0), vec2(800.0, 600.0)), 0.45);
        assert!(fit_zoom(vec2(100.0, 100.0), vec2(800.0, 600.0)) <= 1.5);
    }
}
