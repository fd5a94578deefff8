//! The Runs pane: the launch form (every knob of a `RunSpec`) and the list of runs with status,
//! progress, elapsed time, ETA, cancel, rerun-with-edits and delete.

use super::launch::LaunchForm;
use super::runs::RunStatus;
use super::{fmt_seconds, AppState};
use crate::estimators::EstimatorSpec;

pub fn ui(state: &mut AppState, ui: &mut egui::Ui) {
    egui::ScrollArea::vertical()
        .id_salt("runs-scroll")
        .show(ui, |ui| {
            launch_form(state, ui);
            ui.separator();
            run_list(state, ui);
        });
}

/// Which line of the estimator picker a name goes on.
fn kind(name: &str) -> u8 {
    match name {
        "ml" | "bp" | "pl" | "pl-edge" => 0,
        "pw" | "pw-reweighted" | "pwpl" => 1,
        "memm" | "nota" => 3,
        _ => 2,
    }
}

fn text_row(ui: &mut egui::Ui, label: &str, value: &mut String, hint: &str) {
    text_row_if(ui, true, label, value, hint);
}

/// A labelled text field, greyed out when it does not apply.
fn text_row_if(ui: &mut egui::Ui, enabled: bool, label: &str, value: &mut String, hint: &str) {
    let l = ui.add_enabled(enabled, egui::Label::new(label));
    ui.add_enabled(
        enabled,
        egui::TextEdit::singleline(value)
            .hint_text(hint)
            .desired_width(f32::INFINITY),
    )
    .labelled_by(l.id);
    ui.end_row();
}

fn launch_form(state: &mut AppState, ui: &mut egui::Ui) {
    let ctx = ui.ctx().clone();
    ui.heading("New run");
    let f = &mut state.launch;
    egui::Grid::new("launch-grid")
        .num_columns(2)
        .striped(false)
        .show(ui, |ui| {
            text_row(ui, "Name", &mut f.name, "optional label for legends");
            text_row(
                ui,
                "Train data",
                &mut f.data.train,
                "CoNLL file or seminar folder",
            );
            text_row(ui, "Test data", &mut f.data.test, "optional");
            // Every row is always there (knobs that do not apply are greyed out), so the Train
            // button never moves when the model or the estimator changes.
            let chain = f.data.family.is_chain();
            text_row_if(
                ui,
                chain,
                "Template",
                &mut f.data.template,
                "empty = built-in chunking template (chains)",
            );
            ui.label("Model");
            super::data_view::model_row(ui, "launch", &mut f.data);
            ui.end_row();
            ui.label("Estimator");
            // One line per kind (likelihoods, pieces, SCL and CAMEL): wrapped buttons inside a
            // grid cell overlapped the next row when the pane was narrow.
            ui.vertical(|ui| {
                for group in EstimatorSpec::NAMES.chunk_by(|a, b| kind(a) == kind(b)) {
                    ui.horizontal(|ui| {
                        for name in group {
                            ui.selectable_value(&mut f.estimator, name.to_string(), *name);
                        }
                    });
                }
            });
            ui.end_row();
            let spec = EstimatorSpec::from_name(&f.estimator).ok();
            let has_pieces = spec.as_ref().is_some_and(|s| s.has_pieces());
            text_row_if(
                ui,
                has_pieces,
                "Pieces",
                &mut f.pieces,
                "factor-as-piece; e.g. state+transition (pw, pw-reweighted, pwpl)",
            );
            ui.label("μ");
            ui.add_enabled_ui(
                matches!(spec, Some(EstimatorSpec::PwReweighted { .. })),
                |ui| {
                    ui.horizontal(|ui| {
                        let mut uniform = f.mu.is_none();
                        ui.checkbox(&mut uniform, "uniform 1/|pieces|");
                        if uniform {
                            f.mu = None;
                        } else {
                            let mut m = f.mu.unwrap_or(0.5);
                            ui.add(egui::DragValue::new(&mut m).range(1e-4..=10.0).speed(0.01));
                            f.mu = Some(m);
                        }
                        ui.weak("for pw-reweighted only");
                    });
                },
            );
            ui.end_row();
            let is_scl = matches!(spec, Some(EstimatorSpec::Scl { .. }));
            text_row_if(
                ui,
                is_scl,
                "SCL policy",
                &mut f.policy,
                "λ:β*family + …, e.g. 0.7:1*pl1 + 0.3:1*pl2 (scl; Z drawn from the seed)",
            );
            ui.label("Selection");
            ui.add_enabled_ui(is_scl, |ui| {
                use crate::estimators::scl::Selection;
                ui.horizontal(|ui| {
                    ui.selectable_value(&mut f.selection, Selection::Independent, "independent")
                        .on_hover_text("each component with its family's λ");
                    ui.selectable_value(&mut f.selection, Selection::Multinomial, "multinomial")
                        .on_hover_text("exactly one family per item (per `;` group)");
                    ui.checkbox(&mut f.auto_beta, "β auto").on_hover_text(
                        "choose the families' weights β by 004's heuristic (§7, Algorithm 1)",
                    );
                    let l = ui.label("resample every");
                    ui.add(egui::DragValue::new(&mut f.resample_every).range(0..=100_000))
                        .labelled_by(l.id)
                        .on_hover_text("draw Z anew every N iterations (0: once per run)");
                });
            });
            ui.end_row();
            ui.label("CAMEL").on_hover_text("camel0, cccp-camel, cccp-camel-empirical");
            ui.add_enabled_ui(matches!(spec, Some(EstimatorSpec::Camel { .. })), |ui| {
                ui.horizontal(|ui| {
                    let l = ui.label("g tolerance");
                    ui.add(
                        egui::DragValue::new(&mut f.camel.tol)
                            .range(1e-9..=10.0)
                            .speed(1e-4),
                    )
                    .labelled_by(l.id)
                    .on_hover_text("stop relinearising when no entry of g moves more");
                    let l = ui.label("max outer loops");
                    ui.add(egui::DragValue::new(&mut f.camel.max_outer).range(1..=1000))
                        .labelled_by(l.id);
                    let l = ui.label("δ sweeps to");
                    ui.add(
                        egui::DragValue::new(&mut f.camel.sweep_tol)
                            .range(1e-12..=0.1)
                            .speed(1e-5),
                    )
                    .labelled_by(l.id)
                    .on_hover_text(
                        "each evaluation sweeps the multipliers δ until no two clusters \
                         disagree on a shared variable by more than this",
                    );
                });
            });
            ui.end_row();
            ui.label("NOTA");
            ui.add_enabled_ui(matches!(spec, Some(EstimatorSpec::Nota { .. })), |ui| {
                use crate::estimators::NotaSelection as N;
                ui.horizontal(|ui| {
                    let mode = match f.nota {
                        N::Exhaustive => 0,
                        N::Sampled { .. } => 1,
                        N::ErrorDriven { .. } => 2,
                    };
                    if ui
                        .selectable_label(mode == 0, "exhaustive")
                        .on_hover_text("a NOTA term for every wrong source state (001 Table 1, NER)")
                        .clicked()
                    {
                        f.nota = N::Exhaustive;
                    }
                    if ui
                        .selectable_label(mode == 1, "sampled")
                        .on_hover_text("a seeded fraction of the wrong source states")
                        .clicked()
                        && mode != 1
                    {
                        f.nota = N::Sampled {
                            fraction: 0.1,
                            seed: f.seed,
                        };
                    }
                    if ui
                        .selectable_label(mode == 2, "error-driven")
                        .on_hover_text(
                            "after N iterations, the wrong states the model gives marginal > \
                             threshold (003 POS: 20 iterations, 0.2)",
                        )
                        .clicked()
                        && mode != 2
                    {
                        f.nota = N::error_driven();
                    }
                    match &mut f.nota {
                        N::Exhaustive => {}
                        N::Sampled { fraction, .. } => {
                            let l = ui.label("fraction");
                            ui.add(egui::DragValue::new(fraction).range(0.0..=1.0).speed(0.01))
                                .labelled_by(l.id);
                        }
                        N::ErrorDriven {
                            after,
                            threshold,
                            refresh,
                        } => {
                            let l = ui.label("after");
                            ui.add(egui::DragValue::new(after).range(0..=100_000))
                                .labelled_by(l.id);
                            let l = ui.label("marginal >");
                            ui.add(egui::DragValue::new(threshold).range(0.0..=0.999).speed(0.01))
                                .labelled_by(l.id)
                                .on_hover_text("threshold on a wrong state's marginal");
                            let l = ui.label("refresh");
                            ui.add(egui::DragValue::new(refresh).range(0..=100_000))
                                .labelled_by(l.id)
                                .on_hover_text("choose anew every N iterations (0: once)");
                        }
                    }
                });
            });
            ui.end_row();
            ui.label("Decoding");
            ui.horizontal(|ui| {
                use crate::eval::Decoder;
                egui::ComboBox::new("launch-decoder", "decoder")
                    .selected_text(format!("{:?}", f.decode).to_lowercase())
                    .show_ui(ui, |ui| {
                        for (d, name, hint) in [
                            (Decoder::Auto, "auto", "the exact decoder the graph allows; local for memm and nota without per-state scales"),
                            (Decoder::Viterbi, "viterbi", "global: Viterbi over the potentials (CRF-style)"),
                            (Decoder::Local, "local", "MEMM Viterbi over locally normalised next-state distributions (chains)"),
                            (Decoder::MaxProduct, "max-product", "max-product BP (exact on forests)"),
                            (Decoder::Marginal, "marginal", "each variable's most probable state under sum-product BP"),
                            (Decoder::Exact, "exact", "enumeration (small graphs)"),
                        ] {
                            ui.selectable_value(&mut f.decode, d, name).on_hover_text(hint);
                        }
                    });
                let linear = f.data.family == crate::graph::FamilyKind::Chain;
                ui.add_enabled(linear, egui::Checkbox::new(&mut f.per_state_scaling, "per-state scaling"))
                    .on_hover_text("after training, fit one scale per source state by global likelihood, θ fixed (001 §3), and decode with it");
            });
            ui.end_row();
            ui.label("Loopy BP");
            ui.add_enabled_ui(
                matches!(spec, Some(EstimatorSpec::Bp { .. }))
                    || f.data.family != crate::graph::FamilyKind::Chain,
                |ui| {
                    bp_row(ui, &mut f.bp);
                },
            );
            ui.end_row();
            let l = ui.label("Prior c2");
            ui.horizontal(|ui| {
                ui.add(egui::DragValue::new(&mut f.c2).range(0.0..=1e6).speed(0.05))
                    .labelled_by(l.id);
                ui.weak("σ² = 1/(2·c2); 0 = none");
            });
            ui.end_row();
            let l = ui.label("Max iterations");
            ui.add(egui::DragValue::new(&mut f.max_iter).range(1..=100_000))
                .labelled_by(l.id);
            ui.end_row();
            text_row(
                ui,
                "Init from",
                &mut f.init_from,
                "optional run folder: its matching weights start this run (000 §5.1.3)",
            );
            let l = ui.label("Threads");
            ui.horizontal(|ui| {
                ui.add(egui::DragValue::new(&mut f.threads).range(0..=256))
                    .labelled_by(l.id);
                ui.weak("0 = all cores");
            });
            ui.end_row();
            let l = ui.label("Seed");
            ui.add(egui::DragValue::new(&mut f.seed)).labelled_by(l.id);
            ui.end_row();
            let l = ui.label("Evaluate every");
            ui.horizontal(|ui| {
                ui.add(egui::DragValue::new(&mut f.eval_every).range(0..=10_000))
                    .labelled_by(l.id);
                ui.weak("iterations on the test data (0 = at the end)");
            });
            ui.end_row();
        });
    ui.horizontal(|ui| {
        if ui
            .button("Train")
            .on_hover_text("Start this run in the background")
            .clicked()
        {
            match state.launch.to_spec() {
                Ok(spec) => {
                    let id = state.runs.launch(&ctx, spec);
                    state.selected.insert(id.clone());
                    state.info(format!("started run {id}"));
                }
                Err(e) => state.error(format!("cannot start the run: {e}")),
            }
        }
        if ui
            .button("Use loaded data")
            .on_hover_text("Fill the data fields from the Data pane")
            .clicked()
        {
            let src = state.form.clone();
            state.launch.use_data(&src);
        }
        if ui.button("Reset form").clicked() {
            state.launch = LaunchForm::for_data(&state.form);
        }
    });
    // Below the buttons, so opening it moves nothing the user aims at.
    if state.launch.estimator == "scl" {
        egui::CollapsingHeader::new("SCL policy editor and preview (004 Fig. 1)")
            .default_open(true)
            .show(ui, |ui| {
                super::policy_view::editor(ui, &mut state.launch);
                super::policy_view::ui(state, ui);
            });
    }
}

/// Loopy BP options: schedule, damping, tolerance, sweep limit (the bp estimator; max-product
/// decoding of loopy graphs).
fn bp_row(ui: &mut egui::Ui, bp: &mut crate::inference::BpOptions) {
    use crate::inference::Schedule;
    ui.horizontal(|ui| {
        egui::ComboBox::new("launch-bp-schedule", "schedule")
            .selected_text(bp.schedule.name())
            .show_ui(ui, |ui| {
                for s in [Schedule::Parallel, Schedule::Sequential, Schedule::Residual] {
                    ui.selectable_value(&mut bp.schedule, s, s.name());
                }
            });
        let l = ui.label("damping");
        ui.add(
            egui::DragValue::new(&mut bp.damping)
                .range(0.0..=0.99)
                .speed(0.01),
        )
        .labelled_by(l.id);
        let l = ui.label("tol");
        ui.add(
            egui::DragValue::new(&mut bp.tol)
                .range(1e-14..=1.0)
                .custom_formatter(|x, _| format!("{x:.0e}"))
                .speed(0.0),
        )
        .labelled_by(l.id);
        let l = ui.label("max sweeps");
        ui.add(egui::DragValue::new(&mut bp.max_sweeps).range(1..=100_000))
            .labelled_by(l.id);
    });
}

fn run_list(state: &mut AppState, ui: &mut egui::Ui) {
    ui.horizontal(|ui| {
        ui.heading("Runs");
        ui.weak(format!("in {}", state.runs.dir.display()));
    });
    if state.runs.entries.is_empty() {
        ui.weak("No runs yet: fill the form above and press Train.");
        return;
    }
    let mut action: Option<(&'static str, String)> = None;
    for e in state.runs.entries.iter().rev() {
        let id = e.id.clone();
        egui::Frame::group(ui.style()).show(ui, |ui| {
            ui.horizontal(|ui| {
                let mut sel = state.selected.contains(&id);
                if ui
                    .checkbox(&mut sel, "")
                    .on_hover_text("Show in Curves, Fields and Compare")
                    .changed()
                {
                    action = Some((if sel { "select" } else { "unselect" }, id.clone()));
                }
                ui.strong(e.label());
                let color = match e.status {
                    RunStatus::Finished => egui::Color32::from_rgb(60, 160, 90),
                    RunStatus::Failed | RunStatus::Interrupted => ui.visuals().error_fg_color,
                    RunStatus::Cancelled => ui.visuals().warn_fg_color,
                    _ => ui.visuals().text_color(),
                };
                ui.colored_label(color, e.status.label());
                ui.weak(format!(
                    "{} · c2 {}",
                    e.spec.estimator.name(),
                    e.spec
                        .prior
                        .sigma2
                        .map(|s| format!("{:.3}", 1.0 / (2.0 * s)))
                        .unwrap_or_else(|| "0".into())
                ));
            });
            ui.horizontal(|ui| {
                if e.status.is_live() {
                    ui.add(
                        egui::ProgressBar::new(e.progress())
                            .desired_width(160.0)
                            .text(format!("iteration {} / {}", e.iteration(), e.spec.optimiser.max_iter)),
                    );
                    ui.label(format!("elapsed {}", fmt_seconds(e.elapsed)));
                    if let Some(n) = e.curve.last().map(|c| c.report.bp_unconverged).filter(|&n| n > 0) {
                        ui.colored_label(ui.visuals().warn_fg_color, format!("BP unconverged on {n}"))
                            .on_hover_text("Training instances whose loopy BP hit its sweep limit at this iteration: their gradient is approximate.");
                    }
                    if let Some(eta) = e.eta() {
                        ui.weak(format!("ETA ≤ {}", fmt_seconds(eta)))
                            .on_hover_text("At the current pace, if the iteration budget is used up; convergence usually stops earlier.");
                    }
                    if ui.button("Cancel").clicked() {
                        action = Some(("cancel", id.clone()));
                    }
                } else {
                    ui.label(format!(
                        "{} iterations · {}",
                        e.summary.as_ref().map(|s| s.iterations).unwrap_or(e.iteration()),
                        fmt_seconds(e.elapsed)
                    ));
                    if let Some(n) = e.summary.as_ref().map(|s| s.bp_unconverged).filter(|&n| n > 0) {
                        ui.colored_label(ui.visuals().warn_fg_color, format!("BP unconverged on {n}"))
                            .on_hover_text("Training instances whose loopy BP had not converged at the final weights.");
                    }
                    if let Some(m) = &e.metrics {
                        match m.segment_f1() {
                            Some(f1) => ui.label(format!("acc {:.2}% · F1 {f1:.2}", m.token_accuracy)),
                            None => ui.label(format!("acc {:.2}%", m.token_accuracy)),
                        };
                    }
                    if ui.button("Rerun with edits").on_hover_text("Copy this run's spec into the form").clicked() {
                        action = Some(("edit", id.clone()));
                    }
                    if ui.button("Delete").clicked() {
                        action = Some(("delete", id.clone()));
                    }
                }
            });
            if let Some(err) = &e.error {
                if e.status != RunStatus::Finished {
                    ui.colored_label(ui.visuals().error_fg_color, format!("why: {err}"));
                }
            }
        });
    }
    if let Some((what, id)) = action {
        match what {
            "select" => {
                state.selected.insert(id);
            }
            "unselect" => {
                state.selected.remove(&id);
            }
            "cancel" => state.runs.cancel(&id),
            "edit" => {
                if let Some(e) = state.runs.get(&id) {
                    state.launch = LaunchForm::from_spec(&e.spec);
                    state.info(format!(
                        "the form now holds run {id}'s spec: edit and press Train"
                    ));
                }
            }
            "delete" => match state.runs.delete(&id) {
                Ok(()) => {
                    state.selected.remove(&id);
                    state.info(format!("deleted run {id}"));
                }
                Err(e) => state.error(e),
            },
            _ => {}
        }
    }
}
