//! The factor inspector: the selected factor's table, gold entry, learned log-potentials,
//! exact marginals, loopy BP beliefs and piece belief.

use super::super::AppState;
use super::*;
use egui::{vec2, Color32, Sense, Stroke};
use ndarray::{ArrayD, ArrayView2, ArrayViewD, Axis};

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
    let start = ui.cursor().min.y;
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
    ui.horizontal_wrapped(|ui| {
        ui.strong(format!("Factor {f}: {tname} over {:?}", scope));
        if ui.button("Close").clicked() {
            close = true;
        }
        // The tables' key on the same line (below them, their notes were off a projector's
        // strip, and students asked what the colours and the outlined cell are).
        heat_key(ui);
    });
    // What this function reads of the learned tables (the tables themselves: `factor_tables`).
    let learned = match &pane.cache.learned {
        Some((_, _, _, Ok(l))) => Some((
            l.scales.clone(),
            l.beliefs.as_ref().is_some_and(|(b, _)| b.get(f).is_some()),
        )),
        Some((_, _, _, Err(e))) => {
            ui.colored_label(ui.visuals().error_fg_color, e);
            None
        }
        None => {
            if pane.model_run.is_some() {
                ui.horizontal(|ui| {
                    crate::app::appearance::busy(ui);
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
    if let Some(sc) = learned.as_ref().and_then(|l| l.0.as_ref()) {
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
    let has_model_bp = learned.as_ref().is_some_and(|l| l.1);
    // Laid out in rows that fit the pane: side by side they were cut off at 1400 px (5.3).
    let tables = factor_tables(pane, f);
    let cols = shape.last().copied().unwrap_or(1);
    let full = table_width(names.len(), cols, false);
    // Rows as wide as the visible part of the pane (it may scroll sideways).
    let visible = crate::app::plots::visible_width(ui, full);
    let fits = |w: f32| ((visible + 8.0) / (w + 8.0)).floor().max(1.0) as usize;
    let compact =
        fits(full) < 2 && tables.len() >= 2 && fits(table_width(names.len(), cols, true)) >= 2;
    let per_row = fits(table_width(names.len(), cols, compact));
    let top = ui.cursor().min;
    // What a BP step compares comes first (see `factor_tables`): its first row is the
    // lesson's focus, visible without scrolling the inspector.
    let mut first_row: Option<egui::Rect> = None;
    for row in tables.chunks(per_row) {
        // The tables' own extent: the row's includes the separator, which takes all the
        // height left (and so grew with the room given to the inspector).
        let mut drawn: Option<egui::Rect> = None;
        ui.horizontal_top(|ui| {
            for (k, (title, values, prob)) in row.iter().enumerate() {
                if k > 0 {
                    ui.separator();
                }
                let r = ui
                    .scope(|ui| {
                        heat_table(
                            ui,
                            title,
                            &corner,
                            names,
                            &shape,
                            &gold,
                            values.as_ref().map(|v| v.view()),
                            *prob,
                            compact,
                        )
                    })
                    .response
                    .rect;
                drawn = Some(drawn.map_or(r, |d| d.union(r)));
            }
        });
        ui.add_space(4.0);
        if let Some(d) = drawn {
            first_row.get_or_insert(d);
        }
    }
    let tables_rect = first_row.unwrap_or(egui::Rect::from_min_size(top, egui::Vec2::ZERO));
    state.focus.mark(ui, "bp-table", tables_rect);
    pane.inspector_need = tables_rect.bottom() - start;
    // How to read them, below them: above, it pushed lesson 3's compared tables out of the
    // inspector's strip at 1024×768.
    let slot = &inst.slots[fac.slot as usize];
    let n_obs: usize = inst.parts(slot).iter().map(|p| inst.obs(p).0.len()).sum();
    ui.weak(format!(
        "{} active observation(s); gold entry outlined. Cell colours run from dark blue (a \
         table's lowest value; 0 for probabilities) to red (its highest). Each probability table \
         sums to 1 over its entries.",
        n_obs
    ));
    if bp_shown(pane).is_some() && has_model_bp {
        ui.weak(
            "The stepper above runs the parallel schedule (every message from the previous \
             sweep at once), which needs more sweeps than the model's schedule to reach the \
             same beliefs.",
        );
    }
}

/// The heat tables' key: the colour scale from a table's lowest value to its highest, and the
/// gold entry's outline.
pub fn heat_key(ui: &mut egui::Ui) {
    let (r, _) = ui.allocate_exact_size(vec2(44.0, 12.0), Sense::hover());
    crate::app::appearance::gradient_strip(ui.painter(), r, 16, heat_color);
    ui.weak("low to high");
    let (g, _) = ui.allocate_exact_size(vec2(14.0, 12.0), Sense::hover());
    ui.painter().rect_stroke(
        g,
        0.0,
        Stroke::new(2.0, Color32::YELLOW),
        egui::StrokeKind::Inside,
    );
    ui.weak("gold");
}

/// A heat table's colour at `t` (0: its lowest value, 1: its highest).
fn heat_color(t: f32) -> Color32 {
    egui::ecolor::Hsva::new(0.62 - 0.62 * t, 0.75, 0.35 + 0.6 * t, 1.0).into()
}

/// The factor `f`'s tables as the inspector shows them — (title, values, a probability
/// table?): the learned log-potentials, the exact marginal, the BP stepper's piece and factor
/// beliefs, and the model's own BP belief.
pub(super) fn factor_tables(
    pane: &GraphPane,
    f: usize,
) -> Vec<(String, Option<ArrayD<f64>>, bool)> {
    let learned = match &pane.cache.learned {
        Some((_, _, _, Ok(l))) => Some(l),
        _ => None,
    };
    let phi = learned.and_then(|lr| lr.phi.get(f).cloned());
    let mut tables: Vec<(String, Option<ArrayD<f64>>, bool)> =
        vec![("log-potential φ".into(), phi, false)];
    if let Some((m, by)) = learned.and_then(|lr| lr.marginals.as_ref()) {
        if let Some(Some(m)) = m.get(f) {
            tables.push((format!("marginal p ({by})"), Some(m.clone()), true));
        }
    }
    if let Some(bp) = bp_shown(pane) {
        if let (Some(pb), Some(fb)) = (bp.piece_beliefs.get(f), bp.factor_beliefs.get(f)) {
            tables.push((
                "piece belief (messages at 1)".into(),
                Some(pb.clone()),
                true,
            ));
            tables.push((
                format!("BP belief after {} sweeps", bp.sweeps),
                Some(fb.clone()),
                true,
            ));
        }
    }
    if let Some((Some(Some(b)), r, l)) =
        learned.and_then(|l| l.beliefs.as_ref().map(|(b, r)| (b.get(f), r, l)))
    {
        // The model's own BP, in its schedule: the stepper runs the parallel one, which takes
        // more sweeps to the same fixed point (5.7).
        let sched = crate::inference::bp::Schedule::NAMES[l.schedule as usize];
        let title = if r.converged {
            format!(
                "BP belief (the model's {sched} schedule: converged in {} sweeps)",
                r.sweeps
            )
        } else {
            format!(
                "BP belief (the model's {sched} schedule: not converged, residual {:.1e})",
                r.residual
            )
        };
        tables.push((title, Some(b.clone()), true));
    }
    // With the BP stepper on, its beliefs lead, beside what they are compared with: the
    // piece belief and BP's belief with every message held at 1 (000 §3.4), else BP's belief
    // and the exact marginal.
    if bp_shown(pane).is_some() {
        let first: [&str; 2] = if pane.bp_at_one {
            ["piece belief", "BP belief after"]
        } else {
            ["BP belief after", "marginal p"]
        };
        let rank = |t: &str| first.iter().position(|p| t.starts_with(p)).unwrap_or(2);
        tables.sort_by_key(|(t, _, _)| rank(t));
    }
    tables
}

/// The width the inspector takes beside a grid: its widest table and a margin, or its header
/// line. Half the pane cut a 4×4 grid's last column at 1024×768, where tables of two labels
/// need 150 px.
pub(super) fn inspector_width(state: &AppState, pane: &GraphPane) -> f32 {
    let (Some(inst), Some(d), Some(f)) = (&pane.cache.inst, &state.data, pane.selected_factor)
    else {
        return 0.0;
    };
    let Some(scope) = inst.factors.get(f).map(|fac| inst.scope(fac)) else {
        return 0.0;
    };
    let (Some(&first), Some(&last)) = (scope.first(), scope.last()) else {
        return 0.0;
    };
    let names = d.family.labels(inst, first).names.len();
    let cols = inst.card[last as usize] as usize;
    (table_width(names, cols, false) + 24.0).max(250.0)
}

/// The width [`heat_table`] takes for `cols` columns of labels `names`.
fn table_width(n_names: usize, cols: usize, compact: bool) -> f32 {
    44.0 + cols as f32 * (cell_width(n_names, compact) + 1.0)
}

/// A table cell's width: narrow for many labels; `compact` (42) where two tables then fit
/// side by side — at 1024×768 the BP belief stacked over the exact marginal it is compared
/// with pushed the marginal below the fold.
fn cell_width(n_names: usize, compact: bool) -> f32 {
    if n_names > 12 {
        34.0
    } else if compact {
        42.0
    } else {
        52.0
    }
}

#[allow(clippy::too_many_arguments)]
pub fn heat_table(
    ui: &mut egui::Ui,
    title: &str,
    corner: &str,
    names: &[String],
    shape: &[usize],
    gold: &[Option<u32>],
    values: Option<ArrayViewD<'_, f64>>,
    probability: bool,
    compact: bool,
) {
    // A vector is a one-row table; a table of another rank, or none, draws empty cells.
    let values: Option<ArrayView2<f64>> = values.and_then(|v| match v.ndim() {
        1 => v.insert_axis(Axis(0)).into_dimensionality().ok(),
        _ => v.into_dimensionality().ok(),
    });
    ui.vertical(|ui| {
        // The title wraps at the table's width: a long one made the table wider than
        // `table_width` says, and two side by side no longer fit the pane.
        ui.set_max_width(table_width(
            names.len(),
            *shape.last().unwrap_or(&1),
            compact,
        ));
        ui.add(egui::Label::new(egui::RichText::new(title).strong()).wrap());
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
            heat_color(t)
        };
        // In a compact cell a probability drops its leading zero (".498", as statistics
        // tables print them) so that its digits can be 14 px.
        let fmt = |x: f64| {
            if probability && compact && (0.0..0.9995).contains(&x) {
                format!("{x:.3}").trim_start_matches('0').to_string()
            } else if probability && compact {
                "1.00".to_string()
            } else if probability {
                format!("{x:.3}")
            } else {
                format!("{x:.2}")
            }
        };
        // Keep in step with `table_width`; compact cells are also 2 px lower (lesson 3's two
        // compared tables with their titles in the inspector's strip at 1024×768).
        let cell = vec2(
            cell_width(names.len(), compact),
            if compact { 16.0 } else { 18.0 },
        );
        let (rows, cols) = match (values, shape) {
            (Some(v), _) => v.dim(),
            (None, [a]) => (1, *a),
            (None, [a, b]) => (*a, *b),
            _ => (0, 0),
        };
        // Rows and columns in the labels' natural order (S0, S1, …), as the graph's bars.
        let shown = crate::app::appearance::display_order(names);
        let order = |n: usize| -> Vec<usize> {
            if names.len() == n {
                shown.clone()
            } else {
                (0..n).collect()
            }
        };
        let (row_order, col_order) = (order(rows), order(cols));
        let name = |i: usize| names.get(i).map_or("", |n| n.as_str());
        egui::Grid::new(ui.next_auto_id())
            .spacing(vec2(1.0, 1.0))
            .min_row_height(cell.y)
            .show(ui, |ui| {
                // Small, so that it fits the row names' column (at body size "y11 \ y12" ran
                // into the first column's header).
                ui.label(egui::RichText::new(if rows > 1 { corner } else { "" }).size(10.0));
                for &c in &col_order {
                    ui.label(egui::RichText::new(name(c)).size(13.0));
                }
                ui.end_row();
                for &r in &row_order {
                    ui.label(egui::RichText::new(if rows > 1 { name(r) } else { "" }).size(13.0));
                    for &c in &col_order {
                        let is_gold = if rows > 1 {
                            gold.first() == Some(&Some(r as u32))
                                && gold.get(1) == Some(&Some(c as u32))
                        } else {
                            gold.first() == Some(&Some(c as u32))
                        };
                        let (rect, resp) = ui.allocate_exact_size(cell, Sense::hover());
                        let fill = values
                            .map(|v| color(v[(r, c)]))
                            .unwrap_or(ui.visuals().faint_bg_color);
                        ui.painter().rect_filled(rect, 0.0, fill);
                        if let Some(v) = values {
                            let text = fmt(v[(r, c)]);
                            // 14 px where the digits fit the cell (monospace: 0.6 em a
                            // character), else 12; 9 px in the narrow cells of many labels.
                            let px = if names.len() > 12 {
                                9.0
                            } else if text.chars().count() as f32 * 0.6 * 14.0 <= cell.x - 4.0 {
                                14.0
                            } else {
                                12.0
                            };
                            ui.painter().text(
                                rect.center(),
                                egui::Align2::CENTER_CENTER,
                                text,
                                egui::FontId::monospace(px),
                                crate::app::appearance::ink_on(fill),
                            );
                            resp.on_hover_text(format!(
                                "{}: {}",
                                if rows > 1 {
                                    format!("{} -> {}", name(r), name(c))
                                } else {
                                    name(c).to_string()
                                },
                                v[(r, c)]
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
