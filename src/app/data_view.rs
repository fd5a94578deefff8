//! The Data pane: open a data set (path fields, file dialogs, drag-and-drop, recent sets), generate
//! a synthetic one, statistics with a label bar chart, and a sequence viewer with gold and
//! predicted labels coloured by segment type.

use super::data::{DataSource, Split};
use super::{AppState, DialogTarget};
use crate::graph::chain::{Factorisation, FeatureSet};
use egui::{Color32, RichText};

#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct DataPane {
    pub split: Split,
    pub sequence: usize,
    /// Run whose predictions are shown.
    pub model_run: Option<String>,
}

/// A stable colour per segment type (the label without its B-/I-/E-/S- prefix).
pub fn segment_color(label: &str) -> Color32 {
    if label == "O" || label.is_empty() {
        return Color32::from_gray(150);
    }
    let ty = label
        .split_once('-')
        .map(|(t, ty)| if t.len() == 1 { ty } else { label })
        .unwrap_or(label);
    let mut h: u32 = 2166136261;
    for b in ty.bytes() {
        h = (h ^ b as u32).wrapping_mul(16777619);
    }
    let hue = (h % 360) as f32 / 360.0;
    egui::ecolor::Hsva::new(hue, 0.65, 0.85, 1.0).into()
}

pub fn ui(state: &mut AppState, pane: &mut DataPane, ui: &mut egui::Ui) {
    egui::ScrollArea::vertical()
        .id_salt("data-scroll")
        .show(ui, |ui| {
            open_section(state, ui);
            ui.separator();
            stats_section(state, ui);
            ui.separator();
            sequence_section(state, pane, ui);
        });
}

fn path_row(ui: &mut egui::Ui, label: &str, value: &mut String, hint: &str) -> bool {
    let mut browse = false;
    ui.horizontal(|ui| {
        let l = ui.label(label);
        ui.add(
            egui::TextEdit::singleline(value)
                .hint_text(hint)
                .desired_width(ui.available_width() - 80.0),
        )
        .labelled_by(l.id);
        browse = ui
            .button(format!("Browse {}", label.trim_end_matches(':')))
            .clicked();
    });
    browse
}

fn open_section(state: &mut AppState, ui: &mut egui::Ui) {
    ui.heading("Data");
    let ctx = ui.ctx().clone();
    egui::CollapsingHeader::new("Open")
        .default_open(true)
        .show(ui, |ui| {
            if path_row(ui, "Train:", &mut state.form.train, "CoNLL file or seminar folder") {
                state.open_dialog(&ctx, DialogTarget::Train);
            }
            if path_row(ui, "Test:", &mut state.form.test, "optional held-out CoNLL file or folder") {
                state.open_dialog(&ctx, DialogTarget::Test);
            }
            if path_row(ui, "Template:", &mut state.form.template, "CRF++ template; empty = built-in chunking") {
                state.open_dialog(&ctx, DialogTarget::Template);
            }
            ui.horizontal(|ui| {
                ui.label("Factorisation");
                egui::ComboBox::from_id_salt("data-fact")
                    .selected_text(format!("{:?}", state.form.factorisation).to_lowercase())
                    .show_ui(ui, |ui| {
                        ui.selectable_value(&mut state.form.factorisation, Factorisation::Split, "split")
                            .on_hover_text("state factors + transition factors");
                        ui.selectable_value(&mut state.form.factorisation, Factorisation::Edge, "edge")
                            .on_hover_text("one factor per edge carrying the next label's state features (000 Fig. 1)");
                    });
                ui.label("Features");
                egui::ComboBox::from_id_salt("data-features")
                    .selected_text(format!("{:?}", state.form.feature_set).to_lowercase())
                    .show_ui(ui, |ui| {
                        ui.selectable_value(&mut state.form.feature_set, FeatureSet::All, "all");
                        ui.selectable_value(&mut state.form.feature_set, FeatureSet::Observed, "observed");
                    });
                let l = ui.label("Min freq");
                ui.add(egui::DragValue::new(&mut state.form.min_freq).range(1..=1000))
                    .labelled_by(l.id);
            });
            ui.horizontal(|ui| {
                let loading = state.is_loading();
                if ui
                    .add_enabled(!loading, egui::Button::new("Load"))
                    .on_hover_text("Read the files, build features and the graph")
                    .clicked()
                {
                    state.load(&ctx);
                }
                if loading {
                    ui.spinner();
                }
                if ui.button("Seminar folder…").clicked() {
                    state.open_dialog(&ctx, DialogTarget::TrainFolder);
                }
                if ui.button("Bundled sample").clicked() {
                    state.form = DataSource::sample(&state.config.root);
                    state.load(&ctx);
                }
                let recent = state.settings.recent.clone();
                ui.menu_button("Recent", |ui| {
                    if recent.is_empty() {
                        ui.weak("nothing yet");
                    }
                    for r in recent {
                        if ui.button(format!("{} ({})", r.title(), r.train)).clicked() {
                            state.form = r;
                            state.load(&ctx);
                            ui.close();
                        }
                    }
                });
            });
        });
    egui::CollapsingHeader::new("Generate synthetic data")
        .default_open(false)
        .show(ui, |ui| {
            let g = &mut state.settings.generate;
            egui::Grid::new("gen-grid").num_columns(2).show(ui, |ui| {
                ui.label("α (0 = first-order HMM, 1 = second-order)");
                ui.add(egui::Slider::new(&mut g.alpha, 0.0..=1.0));
                ui.end_row();
                ui.label("Training sequences");
                ui.add(egui::DragValue::new(&mut g.sequences).range(1..=100_000));
                ui.end_row();
                ui.label("Test sequences");
                ui.add(egui::DragValue::new(&mut g.test_sequences).range(0..=100_000));
                ui.end_row();
                ui.label("Length");
                ui.add(egui::DragValue::new(&mut g.length).range(1..=10_000));
                ui.end_row();
                ui.label("Seed");
                ui.add(egui::DragValue::new(&mut g.seed));
                ui.end_row();
            });
            ui.weak("The HMM-mixture generator of 000 eq. 43–44 (5 states, 5 observations, Dirichlet(1) conditionals).");
            if ui.button("Generate and load").clicked() {
                let dir = state.config.workspace.join("data");
                let tpl = state.config.root.join("assets/templates/hmm.tpl");
                match state.settings.generate.generate(&dir, &tpl) {
                    Ok(src) => {
                        state.info(format!("generated {}", src.train));
                        state.form = src;
                        state.load(&ctx);
                    }
                    Err(e) => state.error(format!("could not generate: {e}")),
                }
            }
        });
}

fn stats_section(state: &mut AppState, ui: &mut egui::Ui) {
    let Some(d) = &state.data else {
        ui.weak("No data loaded.");
        return;
    };
    ui.horizontal(|ui| {
        ui.strong(d.source.title());
        ui.weak(&d.source.train);
    });
    egui::Grid::new("stats").striped(true).show(ui, |ui| {
        ui.label("");
        ui.strong("sequences");
        ui.strong("tokens");
        ui.strong("longest");
        ui.end_row();
        ui.label("train");
        ui.label(d.train_stats.sequences.to_string());
        ui.label(d.train_stats.tokens.to_string());
        ui.label(d.train_stats.longest.to_string());
        ui.end_row();
        if let Some(t) = &d.test_stats {
            ui.label("test");
            ui.label(t.sequences.to_string());
            ui.label(t.tokens.to_string());
            ui.label(t.longest.to_string());
            ui.end_row();
        }
    });
    ui.label(format!(
        "{} labels · {} state features · {} parameters · templates: {}",
        d.crf.labels.len(),
        d.crf.state_features.len(),
        d.crf.model.n_params,
        d.crf
            .model
            .templates
            .iter()
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    ));
    let counts = &d.train_stats.label_counts;
    let bars: Vec<egui_plot::Bar> = counts
        .iter()
        .enumerate()
        .map(|(i, (l, c))| {
            egui_plot::Bar::new(i as f64, *c as f64)
                .name(l)
                .fill(segment_color(l))
                .width(0.8)
        })
        .collect();
    let names: Vec<String> = counts.iter().map(|(l, _)| l.clone()).collect();
    egui_plot::Plot::new("label-counts")
        .height(160.0)
        .allow_scroll(false)
        .allow_drag(false)
        .allow_zoom(false)
        .y_axis_label("tokens (train)")
        .x_axis_formatter(move |m, _| {
            let i = m.value.round();
            if (m.value - i).abs() < 1e-6 && i >= 0.0 {
                names.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .show(ui, |p| {
            p.bar_chart(egui_plot::BarChart::new("labels", bars))
        });
}

fn sequence_section(state: &mut AppState, pane: &mut DataPane, ui: &mut egui::Ui) {
    let ctx = ui.ctx().clone();
    let Some(d) = &state.data else { return };
    let has_test = d.test.is_some();
    let n = d.corpus(pane.split).sequences.len();
    ui.horizontal(|ui| {
        ui.strong("Sequence");
        ui.selectable_value(&mut pane.split, Split::Train, "train");
        ui.add_enabled_ui(has_test, |ui| {
            ui.selectable_value(&mut pane.split, Split::Test, "test")
        });
        if ui.button("<").clicked() {
            pane.sequence = pane.sequence.saturating_sub(1);
        }
        let l = ui.label("#");
        ui.add(egui::DragValue::new(&mut pane.sequence).range(0..=n.saturating_sub(1)))
            .labelled_by(l.id);
        if ui.button(">").clicked() {
            pane.sequence += 1;
        }
        ui.weak(format!("of {n}"));
    });
    pane.sequence = pane.sequence.min(n.saturating_sub(1));
    let finished = state.finished_runs();
    ui.horizontal(|ui| {
        ui.label("Predictions from");
        egui::ComboBox::from_id_salt("data-model")
            .selected_text(pane.model_run.clone().unwrap_or_else(|| "no model".into()))
            .show_ui(ui, |ui| {
                ui.selectable_value(&mut pane.model_run, None, "no model");
                for r in &finished {
                    ui.selectable_value(&mut pane.model_run, Some(r.clone()), r);
                }
            });
    });
    let predicted: Option<Vec<String>> = match pane.model_run.clone() {
        Some(run) => match state.predictions(&ctx, &run, pane.split) {
            Some(p) => p.labels.get(pane.sequence).cloned(),
            None => {
                ui.horizontal(|ui| {
                    ui.spinner();
                    ui.weak("predicting…");
                });
                None
            }
        },
        None => None,
    };
    let Some(d) = &state.data else { return };
    let Some(seq) = d.corpus(pane.split).sequences.get(pane.sequence) else {
        ui.weak("empty corpus");
        return;
    };
    let mistakes = predicted
        .as_ref()
        .map(|p| p.iter().zip(&seq.labels).filter(|(a, b)| a != b).count());
    if let Some(m) = mistakes {
        ui.label(format!(
            "{m} of {} tokens predicted wrongly (marked x, in red)",
            seq.len()
        ));
    }
    ui.horizontal_wrapped(|ui| {
        ui.spacing_mut().item_spacing = egui::vec2(6.0, 6.0);
        for (t, gold) in seq.labels.iter().enumerate() {
            let word = super::data::word(seq, t);
            egui::Frame::new()
                .fill(segment_color(gold).gamma_multiply(0.25))
                .stroke(egui::Stroke::new(1.0, segment_color(gold)))
                .corner_radius(3.0)
                .inner_margin(egui::Margin::symmetric(4, 2))
                .show(ui, |ui| {
                    ui.vertical(|ui| {
                        ui.label(RichText::new(word).strong());
                        ui.label(RichText::new(gold).small().color(segment_color(gold)));
                        if let Some(p) = &predicted {
                            let pl = &p[t];
                            if pl == gold {
                                ui.label(RichText::new(format!("ok {pl}")).small().weak());
                            } else {
                                ui.label(
                                    RichText::new(format!("x {pl}"))
                                        .small()
                                        .color(ui.visuals().error_fg_color),
                                );
                            }
                        }
                    });
                });
        }
    });
}
