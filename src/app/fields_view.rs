//! Fields: per-field / per-label P/R/F1 of the selected runs as grouped bars with a table.

use super::plots::{category_axis, pane_plot, run_color, selected_runs};
use super::runs::RunEntry;
use super::AppState;
use crate::experiments::charts::svg_bars;
use egui::Color32;

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum FieldsBy {
    SegmentType,
    Label,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Score {
    Precision,
    Recall,
    F1,
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct FieldsPane {
    pub by: FieldsBy,
    pub score: Score,
    /// Bars from 0 rather than from just below the lowest score (which shows 1–5 point
    /// differences).
    pub from_zero: bool,
}

impl Default for FieldsPane {
    fn default() -> Self {
        FieldsPane {
            by: FieldsBy::Label,
            score: Score::F1,
            from_zero: false,
        }
    }
}

pub fn fields_ui(state: &mut AppState, p: &mut FieldsPane, ui: &mut egui::Ui) {
    ui.heading("Per-field scores");
    ui.horizontal(|ui| {
        ui.selectable_value(&mut p.by, FieldsBy::Label, "per label (token)");
        ui.selectable_value(&mut p.by, FieldsBy::SegmentType, "per segment type");
        ui.separator();
        ui.selectable_value(&mut p.score, Score::Precision, "precision");
        ui.selectable_value(&mut p.score, Score::Recall, "recall");
        ui.selectable_value(&mut p.score, Score::F1, "F1");
        ui.separator();
        ui.checkbox(&mut p.from_zero, "bars from 0");
    });
    // Colours as on the Curves pane: each run its own.
    let ticked = selected_runs(state);
    let runs: Vec<&RunEntry> = ticked
        .iter()
        .copied()
        .filter(|r| r.metrics.is_some())
        .collect();
    if runs.is_empty() {
        ui.weak("Tick finished runs with test data in the Runs pane.");
        return;
    }
    // Each run's table, borrowed once (it was cloned per run, per cell, per frame).
    let tables: Vec<_> = runs
        .iter()
        .map(|r| {
            let m = r.metrics.as_ref().expect("filtered");
            match p.by {
                FieldsBy::Label => &m.labels,
                FieldsBy::SegmentType => &m.segment_types,
            }
        })
        .collect();
    let mut cats: Vec<String> = tables
        .iter()
        .flat_map(|t| t.keys().cloned())
        .filter(|c| !(p.by == FieldsBy::Label && c == "O"))
        .collect();
    cats.sort();
    cats.dedup();
    let pick = |prf: &crate::eval::metrics::Prf| match p.score {
        Score::Precision => prf.precision,
        Score::Recall => prf.recall,
        Score::F1 => prf.f1,
    };
    let k = runs.len() as f64;
    let w = 0.8 / k;
    let charts: Vec<(String, Color32, Vec<f64>)> = runs
        .iter()
        .zip(&tables)
        .map(|(r, t)| {
            (
                r.label(),
                run_color(&r.id),
                cats.iter()
                    .map(|c| t.get(c).map(pick).unwrap_or(0.0))
                    .collect(),
            )
        })
        .collect();
    let score_name = format!("{:?}", p.score);
    let base = if p.from_zero {
        0.0
    } else {
        // The scores there are: a field a run lacks (drawn as 0) does not pull the base down.
        bar_base(
            tables
                .iter()
                .flat_map(|t| cats.iter().filter_map(|c| t.get(c).map(pick))),
        )
    };
    let rect = fields_plot(ui, &charts, &cats, &score_name, w, base);
    // The table beneath: category × run × (P, R, F1).
    let mut header = vec!["field".to_string()];
    for r in &runs {
        for s in ["P", "R", "F1"] {
            header.push(format!("{} {s}", r.label()));
        }
    }
    let rows: Vec<Vec<String>> = cats
        .iter()
        .map(|c| {
            let mut row = vec![c.clone()];
            for t in &tables {
                match t.get(c) {
                    Some(x) => {
                        row.push(format!("{:.2}", x.precision));
                        row.push(format!("{:.2}", x.recall));
                        row.push(format!("{:.2}", x.f1));
                    }
                    None => row.extend(["–".into(), "–".into(), "–".into()]),
                }
            }
            row
        })
        .collect();
    // On screen the score the plot shows, one column per run (four runs' P, R and F1 were
    // twelve columns, cut at 1280×800); the CSV keeps all three.
    egui::ScrollArea::both()
        .id_salt("fields-table")
        .max_height((ui.available_height() - 50.0).max(60.0))
        .show(ui, |ui| {
            egui::Grid::new("fields-grid").striped(true).show(ui, |ui| {
                ui.strong(format!("{score_name} %"));
                for (name, color, _) in &charts {
                    ui.colored_label(
                        super::appearance::text_on(*color, ui.visuals()),
                        egui::RichText::new(name).strong(),
                    );
                }
                ui.end_row();
                for c in &cats {
                    ui.label(c);
                    for t in &tables {
                        ui.label(t.get(c).map_or("–".into(), |x| format!("{:.2}", pick(x))));
                    }
                    ui.end_row();
                }
            });
        });
    ui.weak("Precision, recall and F1 of every run: Save CSV.");
    let title = format!(
        "{score_name} per {}",
        if p.by == FieldsBy::Label {
            "label"
        } else {
            "segment type"
        }
    );
    ui.horizontal(|ui| {
        if ui.button("Save PNG").clicked() {
            state.request_png(rect, "fields");
        }
        if ui.button("Save SVG").clicked() {
            let bars: Vec<_> = charts
                .iter()
                .map(|(n, c, v)| (n.clone(), super::rgb(*c), v.clone()))
                .collect();
            let svg = svg_bars(&title, &format!("{score_name} %"), &cats, &bars, base);
            state.save_svg("fields", &svg);
        }
        if ui.button("Save CSV").clicked() {
            state.save_csv("fields", &header, &rows);
        }
    });
}

/// Where the bars start: 5 points below the lowest score, at a multiple of 5 (0 at least), so
/// the differences between runs fill the plot.
pub fn bar_base(values: impl Iterator<Item = f64>) -> f64 {
    let lo = values
        .filter(|v| v.is_finite())
        .fold(f64::INFINITY, f64::min);
    if lo.is_finite() {
        ((lo / 5.0).floor() * 5.0 - 5.0).clamp(0.0, 95.0)
    } else {
        0.0
    }
}

/// The grouped bars, one colour per run, with their legend above, starting at `base` (said
/// under the plot when it is not 0); returns where they are.
fn fields_plot(
    ui: &mut egui::Ui,
    charts: &[(String, Color32, Vec<f64>)],
    cats: &[String],
    score_name: &str,
    w: f64,
    base: f64,
) -> egui::Rect {
    let h = ((ui.available_height() - 40.0) * 0.55).max(180.0);
    let scope = ui.scope(|ui| {
        // The legend above the plot (inside it needed headroom to 130 %).
        let legend = ui
            .horizontal_wrapped(|ui| {
                for (name, color, _) in charts {
                    let (r, _) =
                        ui.allocate_exact_size(egui::vec2(12.0, 12.0), egui::Sense::hover());
                    ui.painter().rect_filled(r, 1.0, *color);
                    ui.label(name);
                    ui.add_space(8.0);
                }
            })
            .response
            .rect;
        pane_plot("fields-plot")
            .height((h - legend.height() - 4.0).max(140.0))
            .include_y(base)
            .include_y(100.0)
            .y_axis_label(if base > 0.0 {
                format!("{score_name} % (from {base:.0})")
            } else {
                format!("{score_name} %")
            })
            .allow_scroll(false)
            .x_axis_formatter(category_axis(cats.to_vec()))
            .show(ui, |plot| {
                for (j, (name, color, vals)) in charts.iter().enumerate() {
                    let bars: Vec<egui_plot::Bar> = vals
                        .iter()
                        .enumerate()
                        .map(|(i, v)| {
                            // Filled in the run's colour: the default 20 % fill was near
                            // black on the dark theme and did not match the legend.
                            egui_plot::Bar::new(
                                i as f64 - 0.4 + w * (j as f64 + 0.5),
                                (*v - base).max(0.0),
                            )
                            .base_offset(base)
                            .width(w * 0.95)
                            .fill(color.gamma_multiply(0.75))
                            .stroke(egui::Stroke::new(1.0, *color))
                            .name(format!("{} · {}: {v:.2}", cats[i], name))
                        })
                        .collect();
                    plot.bar_chart(egui_plot::BarChart::new(name.clone(), bars).color(*color));
                }
            })
    });
    if base > 0.0 {
        ui.weak(format!(
            "The bars start at {base:.0} %, not 0, so differences of a few points show: read \
             heights against the axis (\"bars from 0\" for whole bars)."
        ));
    }
    scope.response.rect
}

#[cfg(test)]
mod tests {
    /// Scores of 81–86 start the bars at 75, so a 2-point difference is a quarter of the plot;
    /// a 0 keeps them at 0; nothing to draw starts at 0.
    #[test]
    fn bars_start_below_the_lowest_score() {
        assert_eq!(super::bar_base([84.0, 81.2, 86.0].into_iter()), 75.0);
        assert_eq!(super::bar_base([3.0, 90.0].into_iter()), 0.0);
        assert_eq!(super::bar_base(std::iter::empty()), 0.0);
        assert_eq!(super::bar_base([100.0].into_iter()), 95.0);
    }
}
