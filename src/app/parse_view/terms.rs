//! The Parse pane's Terms tab: the estimator's terms on the sentence, each with its value and
//! the expansions it normalises over.

use super::*;
use egui::{vec2, Color32, Rect, Sense};

pub(super) fn terms_tab(
    p: &mut ParsePane,
    run: &GrammarRun,
    view: &SentenceView,
    fit: Fit,
    ui: &mut egui::Ui,
) -> Option<egui::Rect> {
    let what = match &run.estimator {
        crate::grammar::train::GrammarEstimator::Generative => {
            ui.label(
                "The generative PCFG has no training terms: its weights are relative frequencies \
                 (log p(B C | A), log p(word | tag)) counted off the training trees.",
            );
            return None;
        }
        crate::grammar::train::GrammarEstimator::Memm => {
            "The MECFG's terms (001 §5): one per gold constituent A over i–j, log p(B C | A, i, j) \
             — A and its span clamped, its expansions free — and the root rule. No parsing is \
             needed to train it."
        }
        crate::grammar::train::GrammarEstimator::Nota { .. } => {
            "PT-CFG's terms (001 eq. 6 on the chart): the MECFG's terms with a none-of-the-above \
             outcome in each normaliser, plus a NOTA term for each wrong edge the threshold \
             selects (set it on the Chart tab): log p(NOTA | A, i, j), drawn red."
        }
        crate::grammar::train::GrammarEstimator::Ml => {
            "The CRF-CFG has one term per sentence: log p(tree | x), the gold tree's score minus \
             log Z, which sums over every tree of the chart (inside–outside)."
        }
    };
    // Folded on a small screen, as the candidates are cut: at 1024×768 the chart under them
    // shrank to unlabelled strips 12 px high.
    let small = ui.ctx().content_rect().height() < 790.0;
    crate::app::appearance::explanation(ui, "What these terms are", |ui| {
        ui.weak(what);
    });
    if view.terms.is_empty() {
        ui.label(
            "No terms: the grammar cannot encode this sentence's gold tree (a rule or tag it \
             never saw).",
        );
        return None;
    }
    if let Some(kind) = p.jump_to.take() {
        if let Some(k) = view.terms.iter().position(|t| kind.is(&t.term)) {
            p.term = k;
        }
    }
    p.term = p.term.min(view.terms.len() - 1);
    ui.horizontal(|ui| {
        if ui.button("Previous term").clicked() {
            p.term = p.term.saturating_sub(1);
        }
        ui.label(format!("term {} of {}", p.term + 1, view.terms.len()));
        if ui.button("Next term").clicked() {
            p.term = (p.term + 1).min(view.terms.len() - 1);
        }
        ui.separator();
        ui.label("first:");
        for (name, is) in [
            (
                "expansion",
                (|t: &ChartTerm| matches!(t, ChartTerm::Expansion { .. }))
                    as fn(&ChartTerm) -> bool,
            ),
            ("NOTA term", |t: &ChartTerm| {
                matches!(t, ChartTerm::Nota { .. })
            }),
        ] {
            if let Some(k) = view.terms.iter().position(|t| is(&t.term)) {
                if ui.button(name).clicked() {
                    p.term = k;
                }
            }
        }
    });
    let t = &view.terms[p.term];
    let nota = matches!(t.term, ChartTerm::Nota { .. });
    let colour = if nota { RED } else { TERM_BLUE };
    ui.colored_label(colour, egui::RichText::new(&t.title).strong());
    ui.label(format!(
        "log-probability {:.4} (probability {:.4}){}",
        t.value,
        t.value.exp(),
        if t.outcomes > 0 {
            format!(", normalised over {} outcomes", t.outcomes)
        } else {
            String::new()
        }
    ));
    match t.term {
        ChartTerm::Expansion { .. } => {
            ui.weak("Clamped: the parent label and its span. Free: its expansions (the rules A -> B C of the grammar) — the candidates below.");
        }
        ChartTerm::Nota { .. } => {
            ui.weak("A wrong edge: the term asks its normaliser to put its mass on NOTA, pushing every expansion of this edge down.");
        }
        ChartTerm::Root { .. } => {
            ui.weak("The root rule TOP -> X, normalised over the labels seen at the root.");
        }
        ChartTerm::Global => {}
    }
    candidate_bars(
        ui,
        &t.candidates,
        t.outcomes,
        colour,
        if small { 5 } else { usize::MAX },
    );
    // The chart locates the term's span: a lesson's focus.
    let chart = t
        .span
        .map(|span| super::chart::draw_chart(p, view, Some((span, colour)), fit, ui));
    ui.separator();
    independence_groups(ui, view);
    chart
}

/// The term's candidates (its normaliser's outcomes) as probability bars, its own outcome in
/// the term's colour; beyond `most`, the most probable ones, the term's own outcome always among
/// them, and one line for the rest.
fn candidate_bars(
    ui: &mut egui::Ui,
    candidates: &[(String, f64, bool)],
    outcomes: usize,
    colour: Color32,
    most: usize,
) {
    let mut order: Vec<usize> = (0..candidates.len()).collect();
    order.sort_by(|&a, &b| candidates[b].1.total_cmp(&candidates[a].1));
    let mut shown: Vec<usize> = order.iter().copied().take(most).collect();
    if let Some(own) = order.iter().position(|&k| candidates[k].2) {
        if own >= most && most > 0 {
            shown[most - 1] = order[own];
        }
    }
    shown.sort_unstable();
    for (label, prob, gold) in shown.iter().map(|&k| &candidates[k]) {
        ui.horizontal(|ui| {
            // The probability beside a plain bar: a progress bar's rounded end covered the
            // number of a small one.
            ui.monospace(format!("{prob:.3}"));
            let (r, _) = ui.allocate_exact_size(vec2(220.0, 14.0), Sense::hover());
            let painter = ui.painter_at(r);
            painter.rect_filled(r, 0.0, ui.visuals().extreme_bg_color);
            let fill = if *gold {
                colour
            } else {
                Color32::from_gray(150)
            };
            let w = r.width() * (*prob as f32).clamp(0.0, 1.0);
            painter.rect_filled(Rect::from_min_size(r.min, vec2(w, r.height())), 0.0, fill);
            ui.label(if *gold {
                format!("{label}  (this term's outcome)")
            } else {
                label.clone()
            });
        });
    }
    // The rest of the normaliser's outcomes (the view keeps the most probable few): their
    // probabilities sum to what the shown ones leave of 1.
    let more = outcomes.max(candidates.len()) - shown.len();
    if more > 0 {
        let rest = 1.0 - shown.iter().map(|&k| candidates[k].1).sum::<f64>();
        ui.weak(format!(
            "… {more} more {}, together {:.3}",
            if more == 1 { "outcome" } else { "outcomes" },
            rest.max(0.0)
        ));
    }
}

/// Parameter independence on the chart (003 Fig. 1): the terms' groups that share no weight.
fn independence_groups(ui: &mut egui::Ui, view: &SentenceView) {
    ui.strong("Parameter independence (003 Fig. 1 on the chart)");
    ui.weak(match view.groups.as_slice() {
        [one] if one.name.starts_with("every") => {
            "The global model has one term that reads every weight: training cannot be split."
                .to_string()
        }
        groups => format!(
            "A locally normalised term over A reads only A's rules and their feature weights, so \
             the objective splits into one independent problem per parent label: this \
             sentence's {} terms fall into {} groups that share no weight.",
            view.terms.len(),
            groups.len()
        ),
    });
    egui::Grid::new("parse-groups")
        .striped(true)
        .num_columns(3)
        .show(ui, |ui| {
            ui.strong("group");
            ui.strong("terms here");
            ui.strong("weights");
            ui.end_row();
            for grp in view.groups.iter().take(15) {
                ui.label(&grp.name);
                ui.label(grp.terms.to_string());
                ui.label(grp.weights.to_string());
                ui.end_row();
            }
        });
    if view.groups.len() > 15 {
        ui.weak(format!("… {} groups in all", view.groups.len()));
    }
}
