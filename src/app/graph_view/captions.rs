//! The text beside the picture: what the shown term normalises over, what the BP stepper
//! draws, and the variables' names.

use super::super::AppState;
use super::*;
use crate::graph::instance::Instance;
use egui::{vec2, Color32};

pub(super) fn describe_var(
    family: &dyn crate::graph::Family,
    inst: &Instance,
    seq: &crate::data::Sequence,
    v: u32,
) -> String {
    // Images and samples have no words: a pixel's first column is a number, a sample has none.
    // On a ladder the word belongs to the variable's position.
    let token = (v / inst.position_width.max(1)) as usize;
    let name = family.var_name(v);
    if seq.shape.is_some() || crate::app::data::word(seq, token).is_empty() {
        return name;
    }
    let w = crate::app::data::word(seq, token);
    format!("{name}·{w}")
}

pub(super) fn term_caption(state: &AppState, pane: &GraphPane, ui: &mut egui::Ui) {
    let (Some(inst), Some(d)) = (&pane.cache.inst, &state.data) else {
        return;
    };
    let seq = &d.corpus(pane.split).sequences[pane.sequence];
    graph_caption(pane, inst, d, seq, ui);
    if pane.show_terms && !pane.cache.terms.is_empty() {
        term_formula(pane, inst, d, seq, ui);
    }
}

/// What the picture shows: the legend of the variables' roles, the counts, the factors'
/// colours, the notation, and the pieces' outlines.
fn graph_caption(
    pane: &GraphPane,
    inst: &Instance,
    d: &crate::app::data::LoadedData,
    seq: &crate::data::Sequence,
    ui: &mut egui::Ui,
) {
    ui.horizontal_wrapped(|ui| {
        legend_chip(ui, FREE, "free");
        legend_chip(ui, CLAMPED, "clamped at gold");
        legend_chip(ui, SUMMED, "summed out");
        if pane.cache.terms.iter().any(|t| t.off_gold.is_some()) {
            legend_chip(ui, OFF_GOLD, "clamped at a wrong state (NOTA)");
        }
        // The estimator's own pieces: a locally normalised one's are its diagram's regions
        // (the caption below counts the same).
        let pieces = if pane.cache.diagram.is_empty() {
            pane.cache.pieces.len()
        } else {
            pane.cache.diagram.len()
        };
        let n =
            |k: usize, one: &str, many: &str| format!("{k} {}", if k == 1 { one } else { many });
        ui.weak(format!(
            "· {}, {}, {}",
            n(inst.n_vars(), "variable", "variables"),
            n(inst.factors.len(), "factor", "factors"),
            n(pieces, "piece", "pieces"),
        ));
        // The factors' colours: in the caption, not drawn over the graph (it hid y16 on a
        // grid, 5.5); in the legend's own row where it fits (a row of its own took the
        // height a projector's inspector needed).
        // Each swatch with its name as one widget, which the row wraps whole.
        ui.add_space(8.0);
        let templates = &d.family.model().templates;
        let mut lead = "factors:";
        for (i, t) in templates.iter().enumerate() {
            if t.tied_to.is_none() && inst.factors.iter().any(|f| f.template as usize == i) {
                crate::app::appearance::legend_entry(ui, lead, 11.0, &t.name, |p, r| {
                    p.rect_filled(r.shrink2(vec2(0.0, 0.5)), 1.0, template_color(i));
                });
                lead = "";
            }
        }
    });
    // The notation, where it first appears (item 2).
    let has_words = seq.shape.is_none() && !crate::app::data::word(seq, 0).is_empty();
    if has_words {
        // The example from this sentence (a fixed "y3·h" was wrong on every other one).
        let v = 3.min(seq.len().saturating_sub(1));
        let w = crate::app::data::word(seq, v);
        crate::app::appearance::explanation(ui, "How to read the graph", |ui| {
            ui.weak(format!(
                "Circles y0, y1, … are the label variables, one per token (the word above, the \
                 gold label under it); y{v}·{w} in a formula is y{v} at the word \"{w}\". \
                 Squares are factors, coloured by template (the row above). Click a factor to \
                 inspect it, a variable to pick it."
            ));
        });
    } else {
        crate::app::appearance::explanation(ui, "How to read the graph", |ui| {
            ui.weak(
                "Circles y0, y1, … are the label variables (gold label above each); squares \
                 are factors, coloured by template (the row above). Click a factor to inspect \
                 it, a variable to pick it.",
            );
        });
    }
    if pane.show_pieces && !pane.node_split && pane.cache.diagram.is_empty() {
        // What the canvas outlines (draw_pieces): pieces over one variable are left out
        // where larger ones exist.
        let single = pane
            .cache
            .pieces
            .iter()
            .filter(|p| super::layout::piece_vars(inst, p) <= 1)
            .count();
        let total = pane.cache.pieces.len();
        ui.weak(if single > 0 && single < total {
            format!(
                "Pieces: each dashed region is one piece, its factors and variables ({} of the \
                 {total} pieces outlined; the {single} over one variable, a unary factor \
                 alone, are not).",
                total - single
            )
        } else {
            format!("Pieces: each dashed region is one piece, its factors and variables ({total}).")
        });
    }
    if pane.show_pieces && !pane.node_split && !pane.cache.diagram.is_empty() {
        crate::app::papers::weak_cited(
            ui,
            format!(
            "Pieces: {}'s parameter independence diagram (003 Fig. 1) — each dashed region is one \
             locally normalised piece, its factors and the variables it predicts; variables \
             outside it are conditioned on ({} pieces)",
            pane.estimator,
            pane.cache.diagram.len()
        ),
        );
    }
}

/// The current term as a formula, log p(free | clamped = gold), with what it normalises over,
/// sums out and how it is weighted; a picture question's variables stay hidden until answered.
fn term_formula(
    pane: &GraphPane,
    inst: &Instance,
    d: &crate::app::data::LoadedData,
    seq: &crate::data::Sequence,
    ui: &mut egui::Ui,
) {
    let nt = pane.cache.terms.len();
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
    // In the variables' order: "p(y3·r, y4·f)", not the term's internal order.
    let mut free_vars = t.free.to_vec();
    free_vars.sort_unstable();
    let free = names(&free_vars);
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
        _ => listed(&free.iter().map(|(v, _)| v.clone()).collect::<Vec<_>>()),
    };
    use crate::app::lesson_format::Check;
    // A lesson's question asks for these variables: the formula keeps their place, not
    // their names, until it is answered (the caption gave the answer away).
    let asked = |c: Check| pane.quiz_role() == Some(c);
    let outcome = if asked(Check::Free) {
        "?".to_string()
    } else {
        outcome
    };
    // (egui's font has no combining tilde for 001's p̃; the caption below says "local".)
    let mut formula = format!("log p({outcome}");
    if asked(Check::Clamped) && !clamped.is_empty() {
        formula.push_str(" | ? = gold");
    } else if !clamped.is_empty() {
        formula.push_str(" | ");
        formula.push_str(&listed(
            &clamped
                .iter()
                .map(|(v, g)| format!("{v} = {g}"))
                .collect::<Vec<_>>(),
        ));
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
    let mut extra = if pane.quiz_role().is_some() {
        format!(
            "normalises over {} factor(s), the bright squares; the variables your question asks \
             for are named here once you have answered it",
            factors.len()
        )
    } else {
        format!(
            "normalises over {} factor(s): {}",
            factors.len(),
            listed(&factors)
        )
    };
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
             1 + Σ_y exp φ(y, y') (001 eq. 6)",
        ),
        Nota::Outcome => extra.push_str(
            " · NOTA term: −log(1 + Σ_y exp φ(y, y')) for a wrong source state y' (001 eq. 6)",
        ),
    }
    crate::app::papers::weak_cited(ui, extra);
}

pub(super) fn bp_caption(state: &AppState, pane: &GraphPane, ui: &mut egui::Ui) {
    // Which bar is which label (item 2).
    let labels = match (&pane.cache.inst, &state.data) {
        (Some(inst), Some(d)) if inst.n_vars() > 0 => {
            let names = &d.family.labels(inst, 0).names;
            pane.cache
                .label_orders
                .first()
                .into_iter()
                .flatten()
                .filter_map(|&i| names.get(i).map(String::as_str))
                .collect::<Vec<_>>()
                .join(", ")
        }
        _ => String::new(),
    };
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
                format!(
                    "Piecewise: every message held at 1, so each factor believes exp(φ_a) alone, \
                     normalised over its own table: bars over a unary factor's labels ({labels}; \
                     the box's top is probability 1), a grid over a pairwise factor's label \
                     pairs (rows: its first variable; stronger colour = more probable). BP's beliefs for comparison in the inspector \
                     (click a factor)."
                )
            } else {
                format!(
                    "Arrows: factor-to-variable messages, width = how much each moved in this \
                     sweep (full width from a change of 0.1; hairlines once BP has converged). \
                     Bars below each variable: its belief over the labels, left to right \
                     {labels}; the top of each box is probability 1."
                )
            };
            let change = b.report.residual;
            let change = if (1e-3..1e4).contains(&change) {
                format!("{change:.3}")
            } else {
                format!("{change:.2e}")
            };
            ui.label(format!(
                "BP sweep {} (parallel schedule): largest message change {change}; {conv}.",
                b.sweeps
            ));
            let title = if pane.bp_at_one {
                "What the piece beliefs show"
            } else {
                "What the arrows and bars show"
            };
            crate::app::appearance::explanation(ui, title, |ui| {
                ui.label(what);
            });
        }
        (Some((_, Err(e))), _) => {
            ui.colored_label(ui.visuals().error_fg_color, e);
        }
        _ => {
            ui.horizontal(|ui| {
                crate::app::appearance::busy(ui);
                ui.weak("running BP…");
            });
        }
    }
}

pub(super) fn legend_chip(ui: &mut egui::Ui, c: Color32, text: &str) {
    crate::app::appearance::legend_entry(ui, "", 12.0, text, |p, r| {
        p.circle_filled(r.center(), 6.0, c);
    });
}

/// A list for a caption: whole up to [`LISTED`] items, else its first and last few with the
/// count — ML's term over a 25-word sentence named 49 factors, six lines that pushed the
/// graph off a projector's screen.
fn listed(items: &[String]) -> String {
    if items.len() <= LISTED {
        return items.join(", ");
    }
    format!(
        "{}, …, {} ({} in all)",
        items[..3].join(", "),
        items[items.len() - 2..].join(", "),
        items.len()
    )
}

/// The longest list a caption writes out whole.
const LISTED: usize = 10;
