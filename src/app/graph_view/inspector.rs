//! The factor inspector: the selected factor's table, gold entry, learned log-potentials,
//! exact marginals, loopy BP beliefs and piece belief.

use super::super::AppState;
use super::*;
use egui::{vec2, Color32, Sense, Stroke};

/// The selected factor's table: gold entry, and for a trained model its learned log-potentials
/// and marginals, as heat maps.
pub(super) fn inspector(state: &mut AppState, pane: &mut GraphPane, ui: &mut egui::Ui) {
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
pub fn heat_table(
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
