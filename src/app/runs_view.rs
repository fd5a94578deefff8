//! The Runs pane: the launch form (every knob of a `RunSpec`) and the list of runs with status,
//! progress, elapsed time, ETA, cancel, rerun-with-edits and delete.

use super::jobs::Transient;
use super::knob_widgets;
use super::launch::LaunchForm;
use super::runs::RunStatus;
use super::{fmt_seconds, AppState};
use crate::estimators::settings::ESTIMATOR_KNOBS;
use crate::estimators::EstimatorSpec;
use crate::run::registry::MODEL_KNOBS;
use crate::run::spec::{RUN_KNOBS, TEMPLATE};

/// The Runs pane's own state: the launch form's policy preview (the form itself is shared:
/// lessons and the Data pane fill it).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct RunsPane {
    #[serde(skip)]
    pub preview: Transient<super::policy_view::Preview>,
    /// The path field beside *Open runs…* (the dialog needs a desktop portal).
    #[serde(default)]
    pub folder: String,
    /// Words every listed run matches (in its id, path, estimator, model, status or name).
    #[serde(default)]
    pub filter: String,
    #[serde(default)]
    pub group: RunGroup,
    /// Folders opened when the list was last drawn: one more scrolls the list into view.
    #[serde(skip)]
    seen_opened: usize,
}

/// What the run list is grouped by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum RunGroup {
    #[default]
    None,
    /// The opened folder (or the workspace).
    Folder,
    Estimator,
    Model,
    Status,
}

impl RunGroup {
    const ALL: [RunGroup; 5] = [
        RunGroup::None,
        RunGroup::Folder,
        RunGroup::Estimator,
        RunGroup::Model,
        RunGroup::Status,
    ];
    fn label(self) -> &'static str {
        match self {
            RunGroup::None => "nothing",
            RunGroup::Folder => "folder",
            RunGroup::Estimator => "estimator",
            RunGroup::Model => "model",
            RunGroup::Status => "status",
        }
    }
    /// The group of `e`.
    fn of(self, e: &super::runs::RunEntry) -> String {
        match self {
            RunGroup::None => String::new(),
            RunGroup::Folder => e
                .folder
                .as_ref()
                .map_or("workspace".to_string(), |f| f.display().to_string()),
            RunGroup::Estimator => e.spec.estimator.name().to_string(),
            RunGroup::Model => e.spec.model.kind().name().to_string(),
            RunGroup::Status => e.status.label().to_string(),
        }
    }
}

/// Whether `e` matches every word of `filter` (case-insensitive).
fn matches(e: &super::runs::RunEntry, filter: &str) -> bool {
    let hay = format!(
        "{} {} {} {} {} {}",
        e.id,
        e.dir.display(),
        e.spec.estimator.name(),
        e.spec.model.kind().name(),
        e.status.label(),
        e.spec.name.as_deref().unwrap_or("")
    )
    .to_lowercase();
    filter
        .split_whitespace()
        .all(|w| hay.contains(&w.to_lowercase()))
}

pub fn ui(state: &mut AppState, p: &mut RunsPane, ui: &mut egui::Ui) {
    egui::ScrollArea::vertical()
        .id_salt("runs-scroll")
        .show(ui, |ui| {
            launch_form(state, p, ui);
            ui.separator();
            run_list(state, p, ui);
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

/// The launch form: every knob of the settings schema (the command line's flags), greyed out
/// where it does not apply and never removed, so nothing moves when the model or the estimator
/// changes; *Train* and its neighbours sit above it.
fn launch_form(state: &mut AppState, p: &mut RunsPane, ui: &mut egui::Ui) {
    let ctx = ui.ctx().clone();
    ui.heading("New run");
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
                    // A name belongs to one run: the next starts unnamed (issue 24, 5.9).
                    state.launch.knobs.unset(crate::run::spec::NAME.name);
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
    // Said when the form would train on other data than the Data pane shows.
    if let Some(d) = state
        .data
        .as_ref()
        .filter(|d| d.source != state.launch.data)
    {
        ui.colored_label(
            ui.visuals().warn_fg_color,
            format!(
                "This form trains on {}, not on the loaded data ({}): \"Use loaded data\" \
                 copies the Data pane's files and model.",
                if state.launch.data.train.is_empty() {
                    "no data yet".to_string()
                } else {
                    state.launch.data.title()
                },
                d.source.title()
            ),
        );
    }
    let f = &mut state.launch;
    let context = f.values();
    egui::Grid::new("launch-grid")
        .num_columns(2)
        .striped(false)
        .show(ui, |ui| {
            text_row_if(
                ui,
                true,
                "Train data",
                &mut f.data.train,
                "CoNLL file or seminar folder",
            );
            text_row_if(ui, true, "Test data", &mut f.data.test, "optional");
            let template = TEMPLATE.applies(&context);
            text_row_if(
                ui,
                template,
                "Template",
                &mut f.data.template,
                "empty = built-in chunking template (chains)",
            );
            let model = knob_widgets::except(MODEL_KNOBS, ADVANCED);
            knob_widgets::grid_rows(ui, "launch", &model, &mut f.data.model, &context);
            ui.label("Estimator");
            estimator_picker(ui, f);
            ui.end_row();
            let est = knob_widgets::except(&ESTIMATOR_KNOBS[1..], ADVANCED);
            knob_widgets::grid_rows(ui, "launch", &est, &mut f.knobs, &context);
            let run = knob_widgets::except(RUN_KNOBS, ADVANCED);
            knob_widgets::grid_rows(ui, "launch", &run, &mut f.knobs, &context);
        });
    split_hint(state, ui);
    // Below the form, so opening it moves nothing the user aims at.
    if state.launch.estimator() == "scl" {
        egui::CollapsingHeader::new("SCL policy editor and preview (004 Fig. 1)")
            .default_open(true)
            .show(ui, |ui| {
                super::policy_view::editor(ui, &mut state.launch);
                super::policy_view::ui(state, &mut p.preview, ui);
            });
    }
    egui::CollapsingHeader::new("Advanced")
        .id_salt("launch-advanced")
        .show(ui, |ui| {
            let f = &mut state.launch;
            egui::Grid::new("launch-advanced-grid")
                .num_columns(2)
                .show(ui, |ui| {
                    let model = knob_widgets::only(MODEL_KNOBS, ADVANCED);
                    knob_widgets::grid_rows(ui, "launch", &model, &mut f.data.model, &context);
                    let est = knob_widgets::only(&ESTIMATOR_KNOBS[1..], ADVANCED);
                    knob_widgets::grid_rows(ui, "launch", &est, &mut f.knobs, &context);
                    let run = knob_widgets::only(RUN_KNOBS, ADVANCED);
                    knob_widgets::grid_rows(ui, "launch", &run, &mut f.knobs, &context);
                });
        });
}

/// The factorisation hint ([`crate::run::registry::split_hint`]) under the form when it sets
/// up a piecewise run on `split` over the loaded data's segment labels (B-/I-).
fn split_hint(state: &AppState, ui: &mut egui::Ui) {
    let Some(d) = state
        .data
        .as_ref()
        .filter(|d| d.source == state.launch.data)
    else {
        return;
    };
    let segments = d
        .train_stats
        .label_counts
        .iter()
        .any(|(l, _)| l.starts_with("B-") || l.starts_with("I-"));
    let Ok(spec) = state.launch.to_spec() else {
        return;
    };
    if let Some(h) = crate::run::registry::split_hint(&spec.model, &spec.estimator, segments) {
        ui.add(
            egui::Label::new(
                egui::RichText::new(format!("hint: {h}")).color(ui.visuals().warn_fg_color),
            )
            .wrap(),
        );
    }
}

/// The launch form's lines folded under *Advanced* (rarely changed; the form stays short).
/// The family's options are there too (the Data pane shows them all; *Use loaded data* copies
/// them).
const ADVANCED: &[&str] = &[
    "Factorisation",
    "Extractor",
    "Features",
    "Skip edges",
    "Grid",
    "Boltzmann",
    "Name lists",
    "POS lexicon",
    "Name",
    "Init from",
    "Train on",
    "Threads",
    // Estimator details rarely changed from their papers' settings (the form stays short).
    "Grammar",
    "Grammar data",
    "SCL rounds",
    "NOTA rounds",
    "Loopy BP",
    "BP stops",
    "Pieces",
];

/// The estimators as buttons, one line per kind (likelihoods, pieces, SCL and CAMEL, locally
/// normalised): wrapped buttons inside a grid cell overlapped the next row when the pane was
/// narrow.
fn estimator_picker(ui: &mut egui::Ui, f: &mut LaunchForm) {
    ui.vertical(|ui| {
        for group in EstimatorSpec::NAMES.chunk_by(|a, b| kind(a) == kind(b)) {
            ui.horizontal(|ui| {
                for name in group {
                    if ui.selectable_label(f.estimator() == *name, *name).clicked() {
                        f.set_estimator(name);
                    }
                }
            });
        }
    });
}

/// *Open runs…*: a folder of runs by the dialog or by its path, the recent ones, and the
/// folders open now with their *Close*.
fn folders(state: &mut AppState, p: &mut RunsPane, ui: &mut egui::Ui) {
    let ctx = ui.ctx().clone();
    let mut open: Option<std::path::PathBuf> = None;
    let visible = super::plots::visible_width(ui, 200.0);
    ui.horizontal_wrapped(|ui| {
        // Wrapped at the visible edge, not the (wider) launch form's.
        ui.set_max_width(visible);
        if ui
            .button("Open runs…")
            .on_hover_text(
                "List every run in a folder, at any depth: reproduce and sweep outputs, a                  cluster's collection. Runs there that start or finish later appear as they do.",
            )
            .clicked()
        {
            state.open_dialog(&ctx, super::dialogs::DialogTarget::RunFolder);
        }
        let l = ui.label("or the folder's path");
        // Room left for *Open* beside it on a narrow pane.
        let width = (visible - (ui.cursor().left() - ui.max_rect().left()) - 70.0).clamp(120.0, 260.0);
        let r = ui
            .add(
                egui::TextEdit::singleline(&mut p.folder)
                    .hint_text("e.g. reproductions/runs")
                    .desired_width(width),
            )
            .labelled_by(l.id);
        let enter = r.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
        if (ui.button("Open").clicked() || enter) && !p.folder.trim().is_empty() {
            open = Some(std::path::PathBuf::from(p.folder.trim()));
        }
        let recent: Vec<_> = state
            .settings
            .recent_run_folders
            .iter()
            .filter(|f| !state.runs.folders.contains(f))
            .cloned()
            .collect();
        if !recent.is_empty() {
            let l = ui.label("or a recent one");
            egui::ComboBox::from_id_salt("recent-run-folders")
                .selected_text("Recent")
                .show_ui(ui, |ui| {
                    for f in recent {
                        if ui.selectable_label(false, f.display().to_string()).clicked() {
                            open = Some(f);
                        }
                    }
                })
                .response
                .labelled_by(l.id);
        }
    });
    if let Some(dir) = open {
        if let Err(e) = state.open_run_folder(&dir) {
            state.error(format!("cannot open runs: {e}"));
        }
    }
    let mut close = None;
    for f in &state.runs.folders {
        ui.horizontal(|ui| {
            let n = state
                .runs
                .entries
                .iter()
                .filter(|e| e.folder.as_ref() == Some(f))
                .count();
            ui.label(format!("open: {} — {n} runs", f.display()));
            if ui
                .small_button("Close")
                .on_hover_text("Stop listing this folder's runs (nothing on disk changes)")
                .clicked()
            {
                close = Some(f.clone());
            }
        });
    }
    if let Some(f) = close {
        state.runs.close_folder(&f);
        state.selected.retain(|id| state.runs.get(id).is_some());
    }
}

fn run_list(state: &mut AppState, p: &mut RunsPane, ui: &mut egui::Ui) {
    ui.horizontal(|ui| {
        ui.heading("Runs");
        ui.weak(format!("in {}", state.runs.dir.display()));
    });
    // A folder just opened (here, by `gui --runs` or a dialog): its runs are what to see.
    if state.runs.folders_opened != p.seen_opened {
        p.seen_opened = state.runs.folders_opened;
        ui.scroll_to_cursor(Some(egui::Align::TOP));
    }
    folders(state, p, ui);
    queue_controls(state, ui);
    if state.runs.entries.is_empty() {
        ui.weak("No runs yet: fill the form above and press Train, or open a folder of runs.");
        return;
    }
    ui.horizontal(|ui| {
        let l = ui.label("Filter");
        ui.add(
            egui::TextEdit::singleline(&mut p.filter)
                .hint_text("words: estimator, status, path…")
                .desired_width(200.0),
        )
        .labelled_by(l.id);
        let l = ui.label("Group by");
        egui::ComboBox::from_id_salt("run-group")
            .selected_text(p.group.label())
            .show_ui(ui, |ui| {
                for g in RunGroup::ALL {
                    ui.selectable_value(&mut p.group, g, g.label());
                }
            })
            .response
            .labelled_by(l.id);
    });
    // Newest first, the filter applied, then grouped (groups in order of first appearance).
    let shown: Vec<usize> = (0..state.runs.entries.len())
        .rev()
        .filter(|&i| matches(&state.runs.entries[i], &p.filter))
        .collect();
    if shown.len() < state.runs.entries.len() {
        ui.weak(format!(
            "{} of {} runs match the filter",
            shown.len(),
            state.runs.entries.len()
        ));
    }
    let mut groups: Vec<(String, Vec<usize>)> = vec![];
    for i in shown {
        let g = p.group.of(&state.runs.entries[i]);
        match groups.iter_mut().find(|(k, _)| *k == g) {
            Some((_, v)) => v.push(i),
            None => groups.push((g, vec![i])),
        }
    }
    let mut action: Option<(&'static str, String)> = None;
    for (g, members) in groups {
        if p.group == RunGroup::None {
            run_rows(state, &members, &mut action, ui);
        } else {
            egui::CollapsingHeader::new(format!("{g} ({})", members.len()))
                .id_salt(("run-group", &g))
                .default_open(true)
                .show(ui, |ui| run_rows(state, &members, &mut action, ui));
        }
    }
    if let Some((what, id)) = action {
        apply(state, what, id);
    }
}

/// The runs `members` (indices into the run list), one framed row each.
fn run_rows(
    state: &AppState,
    members: &[usize],
    action: &mut Option<(&'static str, String)>,
    ui: &mut egui::Ui,
) {
    for &i in members {
        let e = &state.runs.entries[i];
        let id = e.id.clone();
        // (A run whose spec.json could not be read has only a placeholder spec.)
        let spec_known = !e.spec.train.as_os_str().is_empty();
        egui::Frame::group(ui.style()).show(ui, |ui| {
            ui.horizontal(|ui| {
                let mut sel = state.selected.contains(&id);
                if ui
                    .checkbox(&mut sel, "")
                    .on_hover_text("Show in Curves, Fields and Compare")
                    .changed()
                {
                    *action = Some((if sel { "select" } else { "unselect" }, id.clone()));
                }
                ui.strong(e.label());
                let color = match e.status {
                    RunStatus::Finished => egui::Color32::from_rgb(60, 160, 90),
                    RunStatus::Failed | RunStatus::Interrupted | RunStatus::Broken => {
                        ui.visuals().error_fg_color
                    }
                    RunStatus::Cancelled => ui.visuals().warn_fg_color,
                    _ => ui.visuals().text_color(),
                };
                ui.colored_label(color, e.status.label());
                if spec_known {
                    ui.weak(format!(
                        "{} · prior σ² {}",
                        e.spec.estimator.name(),
                        e.spec
                            .prior
                            .sigma2
                            .map(|s| format!("{s}"))
                            .unwrap_or_else(|| "none".into())
                    ));
                }
            });
            ui.horizontal(|ui| {
                if let Some(k) = state.runs.queue_position(&id) {
                    ui.label(if k == 1 {
                        "next in the queue: starts when a running run ends".to_string()
                    } else {
                        format!("waiting in the queue: {} runs start before it", k - 1)
                    });
                    if ui.button("Cancel").clicked() {
                        *action = Some(("cancel", id.clone()));
                    }
                } else if e.status.is_live() {
                    ui.add(
                        egui::ProgressBar::new(e.progress())
                            .desired_width(160.0)
                            .text(format!("iteration {} / {}", e.iteration(), e.spec.optimiser.max_iter)),
                    );
                    ui.label(format!("training {}", fmt_seconds(e.train_seconds().unwrap_or(0.0))))
                        .on_hover_text(format!("Training seconds so far: the optimiser's, without held-out evaluations. Wall time since launch: {}.", fmt_seconds(e.elapsed)));
                    if let Some(n) = e.curve.last().map(|c| c.report.bp_unconverged).filter(|&n| n > 0) {
                        ui.colored_label(ui.visuals().warn_fg_color, format!("BP unconverged on {n}"))
                            .on_hover_text("Training instances whose loopy BP hit its sweep limit at this iteration: their gradient is approximate.");
                    }
                    if let Some(eta) = e.eta() {
                        ui.weak(format!("ETA ≤ {}", fmt_seconds(eta)))
                            .on_hover_text("At the current pace, if the iteration budget is used up; convergence usually stops earlier.");
                    }
                    if ui.button("Cancel").clicked() {
                        *action = Some(("cancel", id.clone()));
                    }
                } else {
                    let iterations = e.summary.as_ref().map(|s| s.iterations).unwrap_or(e.iteration());
                    match e.train_seconds() {
                        Some(t) => ui.label(format!("{iterations} iterations · {} training", fmt_seconds(t))),
                        None => ui.label(format!("{iterations} iterations")),
                    }
                    .on_hover_text("Training seconds: the optimiser's, without setup and held-out evaluations (the summary's train_seconds; Curves and Compare show the same).");
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
                    if spec_known
                        && ui.button("Rerun with edits").on_hover_text("Copy this run's spec into the form").clicked()
                    {
                        *action = Some(("edit", id.clone()));
                    }
                    if ui.button("Delete").clicked() {
                        *action = Some(("delete", id.clone()));
                    }
                }
            });
            if e.folder.is_some() {
                ui.weak(e.dir.display().to_string());
            }
            if let Some(err) = &e.error {
                if e.status != RunStatus::Finished {
                    ui.colored_label(ui.visuals().error_fg_color, format!("why: {err}"));
                }
            }
        });
    }
}

/// The run queue's controls: runs at once, how many wait, and a queued or training sweep with
/// its *Cancel*.
fn queue_controls(state: &mut AppState, ui: &mut egui::Ui) {
    ui.horizontal(|ui| {
        ui.label("Runs at once");
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        ui.add(egui::DragValue::new(&mut state.runs.runs_at_once).range(1..=cores.max(1)))
            .on_hover_text(
                "Launched runs wait their turn in a queue. With 1 each run has every core while \
                 it trains, so the seconds of runs launched together compare; more at once \
                 share the cores.",
            );
        let queued = state
            .runs
            .entries
            .iter()
            .filter(|e| e.status == RunStatus::Queued)
            .count();
        if queued > 0 {
            ui.weak(format!("{queued} waiting in the queue"));
        }
    });
    // A sweep takes its turn in the same queue (its points are in the Frontier pane).
    let sweep = match state.runs.sweep_turn() {
        super::runs::SweepTurn::None => None,
        super::runs::SweepTurn::Holding(n) => Some(format!("sweep {n}: training its points")),
        super::runs::SweepTurn::Waiting(n) | super::runs::SweepTurn::Due(n) => Some(format!(
            "sweep {n}: queued, {}",
            match state.runs.sweep_position() {
                Some(1) | None => "next to start".to_string(),
                Some(k) => format!("position {k}"),
            }
        )),
    };
    if let Some(text) = sweep {
        let mut cancel = false;
        ui.horizontal(|ui| {
            ui.label(text);
            cancel = ui
                .button("Cancel sweep")
                .on_hover_text("A queued sweep leaves the queue; a training one stops after the points being trained")
                .clicked();
        });
        if cancel {
            super::frontier::cancel_sweep(state);
        }
    }
}

/// The message bar's *Undo delete of RUN* after a deletion (until the next one), whatever
/// messages came after it: the run back where it was.
pub fn undo_button(state: &mut AppState, ui: &mut egui::Ui) {
    let Some(id) = state.undo.as_ref().map(|t| t.entry.id.clone()) else {
        return;
    };
    if ui
        .small_button(format!("Undo delete of {id}"))
        .on_hover_text("Put the run back from the trash")
        .clicked()
    {
        let t = state.undo.take().expect("a deleted run");
        match state.runs.undelete(t) {
            Ok(id) => state.info(format!("run {id} is back")),
            Err(e) => state.error(e),
        }
    }
}

/// What a run's buttons asked for: (un)tick it, cancel it, copy its spec into the form, delete it.
fn apply(state: &mut AppState, what: &str, id: String) {
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
            Ok(t) => {
                state.selected.remove(&id);
                state.info(match &t.to {
                    Some(to) => format!("deleted run {id} (moved to {})", to.display()),
                    None => format!("deleted run {id}"),
                });
                state.undo = Some(t);
            }
            Err(e) => state.error(e),
        },
        _ => {}
    }
}
