//! The Data pane: open a data set (path fields, file dialogs, drag-and-drop, recent sets), generate
//! a synthetic one, statistics with a label bar chart, and a sequence viewer with gold and
//! predicted labels coloured by segment type.

use super::data::{DataSource, Split};
use super::{AppState, DialogTarget};
use crate::run::registry::MODEL_KNOBS;
use crate::settings::KnobValues;
use egui::Color32;

#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct DataPane {
    pub split: Split,
    pub sequence: usize,
    /// Page of the token viewer (`PAGE` tokens each).
    #[serde(default)]
    pub page: usize,
    /// Run whose predictions are shown.
    pub model_run: Option<String>,
}

/// Tokens per page of the sequence viewer.
const PAGE: usize = 400;

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
        let l = ui.add_sized([62.0, 18.0], egui::Label::new(label));
        let button_w = 70.0;
        ui.add(
            egui::TextEdit::singleline(value)
                .hint_text(hint)
                .desired_width((ui.available_width() - button_w - 8.0).max(80.0)),
        )
        .labelled_by(l.id);
        browse = ui
            .add_sized([button_w, 18.0], egui::Button::new("Browse…"))
            .on_hover_text(format!(
                "Choose the {} with a file dialog",
                label.trim_end_matches(':').to_lowercase()
            ))
            .clicked();
    });
    browse
}

/// The bundled templates ([`super::bundled::FILES`] under `assets/templates/`, at the app's
/// root) in a menu that fills the Template field: typing the data directory's path by hand, or
/// a file dialog that needs a desktop portal, is not needed for them.
fn template_picker(ui: &mut egui::Ui, root: &std::path::Path, template: &mut String) {
    const DIR: &str = "assets/templates/";
    let names: Vec<&str> = super::bundled::FILES
        .iter()
        .filter_map(|(p, _)| p.strip_prefix(DIR))
        .filter(|n| n.ends_with(".tpl"))
        .collect();
    let current = names
        .iter()
        .find(|n| root.join(DIR).join(n) == std::path::Path::new(template.trim()))
        .copied();
    ui.horizontal(|ui| {
        ui.add_sized([62.0, 18.0], egui::Label::new(""));
        egui::ComboBox::from_label("a bundled template")
            .selected_text(current.unwrap_or("choose…"))
            .show_ui(ui, |ui| {
                if ui
                    .selectable_label(template.trim().is_empty(), "built-in chunking")
                    .clicked()
                {
                    template.clear();
                }
                for n in &names {
                    if ui.selectable_label(current == Some(n), *n).clicked() {
                        *template = root.join(DIR).join(n).display().to_string();
                    }
                }
            });
    });
}

/// The model family and its options: the schema's model knobs, one line each, greyed where
/// the family has no use for them.
pub fn model_rows(ui: &mut egui::Ui, id: &str, model: &mut KnobValues) {
    let context = model.clone();
    super::knob_widgets::grid_rows(ui, id, MODEL_KNOBS, model, &context);
}

fn open_section(state: &mut AppState, ui: &mut egui::Ui) {
    ui.heading("Data");
    let ctx = ui.ctx().clone();
    egui::CollapsingHeader::new("Open")
        .default_open(true)
        .show(ui, |ui| {
            if path_row(
                ui,
                "Train:",
                &mut state.form.train,
                "CoNLL file, seminar folder, grid or samples file",
            ) {
                state.open_dialog(&ctx, DialogTarget::Train);
            }
            if path_row(
                ui,
                "Test:",
                &mut state.form.test,
                "optional held-out CoNLL file or folder",
            ) {
                state.open_dialog(&ctx, DialogTarget::Test);
            }
            if path_row(
                ui,
                "Template:",
                &mut state.form.template,
                "CRF++ template; empty = built-in chunking",
            ) {
                state.open_dialog(&ctx, DialogTarget::Template);
            }
            template_picker(ui, &state.config.root, &mut state.form.template);
            egui::Grid::new("data-model-grid")
                .num_columns(2)
                .show(ui, |ui| model_rows(ui, "data", &mut state.form.model));
            // A failed load is said here, where the files were given, not only in the bar.
            if let Some(e) = &state.load_error {
                ui.colored_label(ui.visuals().error_fg_color, e);
            }
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
                    crate::app::appearance::busy(ui);
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
                ui.label("States");
                ui.add(egui::DragValue::new(&mut g.states).range(2..=50));
                ui.end_row();
                ui.label("Transition concentration")
                    .on_hover_text("The Dirichlet parameter of the transition rows: 1 is the paper's; below 1 states are kept or left by habit");
                ui.add(egui::Slider::new(&mut g.transition_concentration, 0.01..=10.0).logarithmic(true));
                ui.end_row();
                ui.label("Emission concentration")
                    .on_hover_text("The Dirichlet parameter of the emission rows: 1 is the paper's (noisy: about 40 % accuracy); below 1 each state emits a few letters of its own, so the labels can be learnt (the lessons' sample: 0.15)");
                ui.add(egui::Slider::new(&mut g.emission_concentration, 0.01..=10.0).logarithmic(true));
                ui.end_row();
            });
            ui.weak(format!(
                "The HMM-mixture generator of 000 eq. 43–44 ({} observations; the paper's 5 states and Dirichlet(1) conditionals by default).",
                crate::data::synth::OBSERVATIONS
            ));
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
    ui.label(d.family.describe());
    let has_o = d.train_stats.label_counts.iter().any(|(l, _)| l == "O");
    let mut show_o = ui
        .ctx()
        .data(|m| m.get_temp::<bool>(egui::Id::unique("data-show-o")))
        .unwrap_or(false);
    if has_o {
        ui.horizontal(|ui| {
            ui.label("Label counts (train)");
            if ui.checkbox(&mut show_o, "include O").changed() {
                ui.ctx()
                    .data_mut(|m| m.insert_temp(egui::Id::unique("data-show-o"), show_o));
            }
        });
    }
    let counts: Vec<(String, usize)> = d
        .train_stats
        .label_counts
        .iter()
        .filter(|(l, _)| show_o || l != "O")
        .cloned()
        .collect();
    let counts = &counts;
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
    super::plots::pane_plot("label-counts")
        .height(160.0)
        .allow_scroll(false)
        .allow_drag(false)
        .allow_zoom(false)
        .y_axis_label("tokens (train)")
        .x_axis_formatter(super::plots::category_axis(names))
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
    let (finished, hidden) = state.runs_for_data();
    if pane
        .model_run
        .as_ref()
        .is_some_and(|r| !finished.contains(r))
    {
        pane.model_run = None;
    }
    ui.horizontal(|ui| {
        egui::ComboBox::new("data-model", "model whose predictions are shown")
            .selected_text(pane.model_run.clone().unwrap_or_else(|| "no model".into()))
            .show_ui(ui, |ui| {
                ui.selectable_value(&mut pane.model_run, None, "no model");
                for r in &finished {
                    ui.selectable_value(&mut pane.model_run, Some(r.clone()), r);
                }
            });
        super::hidden_runs_note(ui, hidden);
    });
    let predicted: Option<Vec<String>> = match pane.model_run.clone() {
        Some(run) => match state.predictions(&ctx, &run, pane.split) {
            Some(p) => p.labels.get(pane.sequence).cloned(),
            None => {
                ui.horizontal(|ui| {
                    crate::app::appearance::busy(ui);
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
    // Long documents are shown a page of tokens at a time.
    let pages = seq.len().div_ceil(PAGE).max(1);
    pane.page = pane.page.min(pages - 1);
    let shown = pane.page * PAGE..((pane.page + 1) * PAGE).min(seq.len());
    if pages > 1 {
        ui.horizontal(|ui| {
            if ui.button("< tokens").clicked() {
                pane.page = pane.page.saturating_sub(1);
            }
            ui.label(format!(
                "tokens {}–{} of {}",
                shown.start,
                shown.end,
                seq.len()
            ));
            if ui.button("tokens >").clicked() {
                pane.page = (pane.page + 1).min(pages - 1);
            }
        });
    }
    token_chips(ui, seq, predicted.as_deref(), shown);
}

/// Each token as a painted chip (word, gold label, prediction marked right or wrong); only
/// chips in view are painted.
fn token_chips(
    ui: &mut egui::Ui,
    seq: &crate::data::Sequence,
    predicted: Option<&[String]>,
    shown: std::ops::Range<usize>,
) {
    ui.horizontal_wrapped(|ui| {
        ui.spacing_mut().item_spacing = egui::vec2(5.0, 5.0);
        let word_font = egui::FontId::proportional(13.0);
        let small = egui::FontId::proportional(10.0);
        let rows = if predicted.is_some() { 3.0 } else { 2.0 };
        let error = ui.visuals().error_fg_color;
        let text = ui.visuals().text_color();
        let weak = ui.visuals().weak_text_color();
        for (t, gold) in seq
            .labels
            .iter()
            .enumerate()
            .take(shown.end)
            .skip(shown.start)
        {
            let word = super::data::word(seq, t);
            let pred = predicted.as_ref().and_then(|p| p.get(t));
            let wrong = pred.is_some_and(|p| p != gold);
            let painter = ui.painter();
            let gw = painter.layout_no_wrap(word.to_string(), word_font.clone(), text);
            let gl = painter.layout_no_wrap(
                gold.clone(),
                small.clone(),
                super::appearance::text_on(segment_color(gold), ui.visuals()),
            );
            let gp = pred.map(|p| {
                painter.layout_no_wrap(
                    format!("{} {p}", if wrong { "x" } else { "ok" }),
                    small.clone(),
                    if wrong { error } else { weak },
                )
            });
            let w = gw
                .size()
                .x
                .max(gl.size().x)
                .max(gp.as_ref().map_or(0.0, |g| g.size().x))
                + 8.0;
            let (rect, resp) = ui.allocate_exact_size(
                egui::vec2(w, 6.0 + 16.0 + 12.0 * (rows - 1.0)),
                egui::Sense::hover(),
            );
            if !ui.is_rect_visible(rect) {
                continue;
            }
            let p = ui.painter();
            p.rect(
                rect,
                3.0,
                segment_color(gold).gamma_multiply(0.25),
                egui::Stroke::new(
                    if wrong { 2.0 } else { 1.0 },
                    if wrong { error } else { segment_color(gold) },
                ),
                egui::StrokeKind::Inside,
            );
            let mut y = rect.min.y + 3.0;
            p.galley(egui::pos2(rect.min.x + 4.0, y), gw, text);
            y += 16.0;
            p.galley(egui::pos2(rect.min.x + 4.0, y), gl, text);
            y += 12.0;
            if let Some(g) = gp {
                p.galley(egui::pos2(rect.min.x + 4.0, y), g, text);
            }
            resp.on_hover_text(format!(
                "token {t}: {word}, gold {gold}{}",
                pred.map(|p| format!(", predicted {p}")).unwrap_or_default()
            ));
        }
    });
}
