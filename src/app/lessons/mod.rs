//! Lessons: guided walks through the papers' ideas over the real computation, lessons in the
//! format of [`super::lesson_format`]. Each step sets the workbench's state through
//! [`AppCommand::Lesson`], served like every other command a click sends (load data, launch and
//! tick runs, bring a pane to the front, set the Graph pane's estimator, term, BP stepper and
//! model), and shows a short explanation with the paper's equation, what to look at, and
//! optionally a question checked against the picture.

use super::{AppCommand, AppState, Pane, Workbench, PANES};
use crate::app::data::{DataSource, Split};
use crate::app::frontier::SweepForm;
use crate::app::launch::LaunchForm;
use crate::app::lesson_format::*;
use crate::app::runs::RunStatus;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod checks;
mod picture;
mod steps;

pub use checks::*;
pub(crate) use picture::*;
pub use steps::*;

impl LessonSweep {
    /// The Frontier pane's form for this sweep.
    pub fn form(&self) -> SweepForm {
        let d = SweepForm::default();
        SweepForm {
            name: self.name.clone(),
            families: self.families.clone(),
            lambdas: self.lambdas.clone(),
            betas: self.betas.clone(),
            preview_lambda: self.preview_lambda.unwrap_or(d.preview_lambda),
            preview_beta: self.preview_beta.unwrap_or(d.preview_beta),
            ..d
        }
    }
}

/// The Lessons pane: the list of lessons, or the current one's step.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct LessonsPane {
    /// The lesson's file name; `None` shows the list.
    pub lesson: Option<String>,
    pub step: usize,
    /// *Try it yourself*: the user is changing things; *Next* or *Restore* put the lesson's
    /// state back.
    pub trying: bool,
    /// The choice picked for the step's question.
    #[serde(skip)]
    pub picked: Option<usize>,
    /// The verdict on the step's question: right (with why), or what is wrong.
    #[serde(skip)]
    pub verdict: Option<(bool, String)>,
    /// The open step's state has been applied in this session: a lesson reopened at start
    /// sets its panes and relaunches its runs again (they may be gone), unless the user was
    /// trying things.
    #[serde(skip)]
    pub applied: bool,
}

/// The lessons the workbench read, and what a lesson waits for.
#[derive(Default)]
pub struct LessonRuntime {
    pub lessons: Vec<(PathBuf, Result<Lesson, String>)>,
    /// Per lesson file, the data files it needs that are not here (looked up when the lessons
    /// are read, not every frame).
    missing: std::collections::HashMap<PathBuf, Vec<String>>,
    /// The Graph pane's model to pick once its run has finished (a run's name).
    pending_model: Option<String>,
    /// The Parse pane's run to pick once it has finished (a run's name).
    pending_parse: Option<String>,
}

impl LessonRuntime {
    pub fn read(root: &Path) -> LessonRuntime {
        let lessons = read_dir(&root.join("assets/lessons"));
        let missing = lessons
            .iter()
            .filter_map(|(p, l)| Some((p.clone(), l.as_ref().ok()?.missing_files(root))))
            .collect();
        LessonRuntime {
            lessons,
            missing,
            pending_model: None,
            pending_parse: None,
        }
    }

    pub fn find(&self, file: &str) -> Option<&Lesson> {
        self.lessons
            .iter()
            .find(|(p, _)| file_name(p) == file)
            .and_then(|(_, l)| l.as_ref().ok())
    }
}

impl LessonRuntime {
    /// The lesson file `name` means and its step `step` (from 1) as an index: an error names
    /// the lessons, or the steps there are (the `gui --lesson --step` check and the app's).
    pub fn resolve_step(&self, name: &str, step: usize) -> Result<(String, usize), String> {
        let file = self.resolve(name)?;
        let steps = self.find(&file).map_or(0, |l| l.steps.len());
        if !(1..=steps).contains(&step) {
            return Err(format!("{file} has steps 1 to {steps}, not {step}"));
        }
        Ok((file, step - 1))
    }

    /// The lesson file a name or number means: `4`, `04`, `04-training-side-by-side` or the
    /// file name itself.
    pub fn resolve(&self, name: &str) -> Result<String, String> {
        let files: Vec<String> = self.lessons.iter().map(|(p, _)| file_name(p)).collect();
        let hit = name
            .parse::<usize>()
            .ok()
            .and_then(|n| {
                files
                    .iter()
                    .find(|f| f.split('-').next().and_then(|k| k.parse().ok()) == Some(n))
            })
            .or_else(|| {
                files
                    .iter()
                    .find(|f| *f == name || f.strip_suffix(".toml") == Some(name))
            });
        hit.cloned().ok_or_else(|| {
            format!(
                "no lesson {name:?}: the lessons are {}",
                files
                    .iter()
                    .map(|f| f.trim_end_matches(".toml"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
    }
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The newest run named `name` that has finished or may still finish: a failed, cancelled,
/// broken or interrupted one (its app was closed mid-training) is trained again, where a
/// lesson once waited for it forever.
fn run_named(state: &AppState, name: &str) -> Option<String> {
    state
        .runs
        .entries
        .iter()
        .rev()
        .find(|e| {
            e.spec.name.as_deref().map(str::trim) == Some(name)
                && !matches!(
                    e.status,
                    RunStatus::Failed
                        | RunStatus::Cancelled
                        | RunStatus::Broken
                        | RunStatus::Interrupted
                )
        })
        .map(|e| e.id.clone())
}

/// The lesson's runs not finished yet, with their progress.
pub fn waiting_for(state: &AppState, step: &Step) -> Vec<String> {
    let sweep = step.sweep.as_ref().filter(|w| w.start).and_then(|w| {
        let running = state.sweep.as_ref().filter(|s| s.name == w.name);
        running.map(|s| {
            format!(
                "sweep {} ({} of {} points)",
                w.name,
                s.done.load(std::sync::atomic::Ordering::Relaxed),
                s.total
            )
        })
    });
    sweep
        .into_iter()
        .chain(step.run.iter().filter_map(|r| {
            let id = run_named(state, &r.name);
            match id.as_deref().and_then(|id| state.runs.get(id)) {
                Some(e) if e.status == RunStatus::Finished => None,
                Some(e) => Some(format!(
                    "{} ({}, iteration {})",
                    r.name,
                    e.status.label(),
                    e.iteration()
                )),
                None => Some(format!("{} (not started)", r.name)),
            }
        }))
        .collect()
}

pub fn ui(state: &mut AppState, pane: &mut LessonsPane, ui: &mut egui::Ui) {
    if !pane.applied {
        pane.applied = true;
        if let Some(file) = pane.lesson.clone().filter(|_| !pane.trying) {
            if let Some(lesson) = state.lessons.find(&file).cloned() {
                let step = pane.step;
                go(state, pane, &file, &lesson, step);
            }
        }
    }
    match pane.lesson.clone() {
        None => {
            egui::ScrollArea::vertical()
                .id_salt("lessons-scroll")
                .auto_shrink([false, false])
                .show(ui, |ui| list(state, pane, ui));
        }
        Some(file) => match state.lessons.find(&file).cloned() {
            Some(lesson) => step_ui(state, pane, &file, &lesson, ui),
            None => {
                ui.colored_label(
                    ui.visuals().error_fg_color,
                    format!("lesson {file} is gone"),
                );
                if ui.button("All lessons").clicked() {
                    pane.lesson = None;
                }
            }
        },
    }
}

/// A lesson is being taught: open at a step, not *Try it yourself*.
pub(super) fn teaching(tree: &egui_tiles::Tree<Pane>) -> bool {
    tree.tiles.iter().any(|(_, t)| {
        matches!(t, egui_tiles::Tile::Pane(Pane::Lessons(l)) if l.lesson.is_some() && !l.trying)
    })
}

/// Starts (or restores) step `i` of the lesson in `file`.
pub fn go(state: &mut AppState, pane: &mut LessonsPane, file: &str, lesson: &Lesson, i: usize) {
    pane.lesson = Some(file.to_string());
    pane.applied = true;
    pane.step = i.min(lesson.steps.len().saturating_sub(1));
    pane.trying = false;
    pane.picked = None;
    pane.verdict = None;
    state.command(AppCommand::Lesson(Box::new(lesson.state_at(pane.step))));
}

/// What a key (or a presenter's clicker) asks of the open lesson.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepKey {
    /// →, PageDown, Space: what *Next* does (*Finish* on the last step).
    Forward,
    /// ←, PageUp: what *Back* does.
    Back,
    /// Esc: leave *Try it yourself* (what *Restore this step* does).
    Restore,
}

/// The lesson keys pressed this frame, consumed so no widget sees them too. Only while a lesson
/// is open and `free` (no widget, a text field say, has the keyboard).
pub(super) fn keys(wb: &mut Workbench, ctx: &egui::Context, free: bool) {
    use egui::{Key, Modifiers};
    if !free || wb.state.welcome {
        return;
    }
    let Some(pane) = wb.tree.tiles.iter_mut().find_map(|(_, t)| match t {
        egui_tiles::Tile::Pane(Pane::Lessons(l)) if l.lesson.is_some() => Some(l),
        _ => None,
    }) else {
        return;
    };
    let pressed: Vec<StepKey> = ctx.input_mut(|i| {
        let mut out = vec![];
        for (key, what) in [
            (Key::ArrowRight, StepKey::Forward),
            (Key::PageDown, StepKey::Forward),
            (Key::Space, StepKey::Forward),
            (Key::ArrowLeft, StepKey::Back),
            (Key::PageUp, StepKey::Back),
            (Key::Escape, StepKey::Restore),
        ] {
            for _ in 0..i.count_and_consume_key(Modifiers::NONE, key) {
                out.push(what);
            }
        }
        out
    });
    for k in pressed {
        step_key(&mut wb.state, pane, k);
    }
}

/// Serves one [`StepKey`] on the open lesson, as its button would.
pub fn step_key(state: &mut AppState, pane: &mut LessonsPane, key: StepKey) {
    let Some(file) = pane.lesson.clone() else {
        return;
    };
    let Some(lesson) = state.lessons.find(&file).cloned() else {
        return;
    };
    let n = lesson.steps.len();
    let i = pane.step.min(n.saturating_sub(1));
    match key {
        StepKey::Forward if i + 1 < n => go(state, pane, &file, &lesson, i + 1),
        StepKey::Forward => finish(state, pane, &file),
        StepKey::Back if i > 0 => go(state, pane, &file, &lesson, i - 1),
        StepKey::Restore if pane.trying => go(state, pane, &file, &lesson, i),
        StepKey::Back | StepKey::Restore => {}
    }
}

/// Leaves the lesson in `file` from its last step: back to the list, where it is marked
/// finished (remembered in the settings).
fn finish(state: &mut AppState, pane: &mut LessonsPane, file: &str) {
    pane.lesson = None;
    state.settings.lessons_done.insert(file.to_string());
    state.command(AppCommand::LessonReveal);
}

fn list(state: &mut AppState, pane: &mut LessonsPane, ui: &mut egui::Ui) {
    ui.heading("Lessons");
    ui.label(
        "Each lesson walks through one idea of the papers on the real computation: it loads \
         data, trains runs and sets the panes for you, step by step. Change anything at any \
         time (Try it yourself); Next puts the lesson's state back.",
    );
    ui.add_space(6.0);
    let lessons = state.lessons.lessons.clone();
    for (n, (path, l)) in lessons.iter().enumerate() {
        let file = file_name(path);
        ui.group(|ui| {
            ui.set_width(ui.available_width());
            match l {
                Ok(lesson) => {
                    let missing = state.lessons.missing.get(path).cloned().unwrap_or_default();
                    ui.horizontal_wrapped(|ui| {
                        if ui
                            .add_enabled(
                                missing.is_empty(),
                                egui::Button::new(clean(
                                    ui,
                                    &format!("Start: {}", lesson.title),
                                    egui::TextStyle::Button,
                                )),
                            )
                            .on_hover_text(format!("{} steps", lesson.steps.len()))
                            .clicked()
                        {
                            go(state, pane, &file, lesson, 0);
                        }
                        let paper = clean(ui, &lesson.paper, egui::TextStyle::Body);
                        let r = ui.weak(format!("{paper} · {} steps", lesson.steps.len()));
                        crate::app::papers::with_hover(r, &lesson.paper);
                        if state.settings.lessons_done.contains(&file) {
                            ui.colored_label(
                                crate::app::appearance::good_color(ui.visuals()),
                                "lesson finished",
                            )
                            .on_hover_text("You went through this lesson to its last step");
                        }
                    });
                    let r = ui.label(clean(
                        ui,
                        &format!("{}. {}", n + 1, lesson.summary),
                        egui::TextStyle::Body,
                    ));
                    crate::app::papers::with_hover(r, &lesson.summary);
                    if !missing.is_empty() {
                        ui.colored_label(
                            ui.visuals().warn_fg_color,
                            format!("Needs {} (not here).", missing.join(", ")),
                        );
                    }
                }
                Err(e) => {
                    ui.colored_label(ui.visuals().error_fg_color, e);
                }
            }
        });
    }
    if lessons.is_empty() {
        ui.weak(format!(
            "No lessons found in {}.",
            state.config.root.join("assets/lessons").display()
        ));
    }
    ui.add_space(6.0);
    if ui
        .button("Reload lessons")
        .on_hover_text("Read assets/lessons/ again (after editing a lesson file)")
        .clicked()
    {
        state.lessons = LessonRuntime::read(&state.config.root);
    }
}

fn step_ui(
    state: &mut AppState,
    pane: &mut LessonsPane,
    file: &str,
    lesson: &Lesson,
    ui: &mut egui::Ui,
) {
    let n = lesson.steps.len();
    let i = pane.step.min(n - 1);
    let step = lesson.state_at(i);
    ui.horizontal_wrapped(|ui| {
        if ui.button("All lessons").clicked() {
            pane.lesson = None;
            state.command(AppCommand::LessonReveal);
        }
        ui.strong(clean(ui, &lesson.title, egui::TextStyle::Body));
        let r = ui.weak(clean(ui, &lesson.paper, egui::TextStyle::Body));
        crate::app::papers::with_hover(r, &lesson.paper);
    });
    ui.add(
        egui::ProgressBar::new((i + 1) as f32 / n as f32).text(format!("step {} of {n}", i + 1)),
    );
    ui.horizontal(|ui| {
        if ui
            .add_enabled(i > 0, egui::Button::new("< Back"))
            .on_hover_text("The previous step (left arrow or PageUp)")
            .clicked()
        {
            go(state, pane, file, lesson, i - 1);
        }
        if i + 1 < n {
            if ui
                .button("Next >")
                .on_hover_text(
                    "The next step (right arrow, PageDown or Space: a presenter's clicker works)",
                )
                .clicked()
            {
                go(state, pane, file, lesson, i + 1);
            }
        } else if ui
            .button("Finish")
            .on_hover_text("Back to the list of lessons (right arrow, PageDown or Space)")
            .clicked()
        {
            finish(state, pane, file);
        }
        if pane.trying {
            if ui
                .button("Restore this step")
                .on_hover_text("Put back the lesson's state for this step (Esc)")
                .clicked()
            {
                go(state, pane, file, lesson, i);
            }
        } else if ui
            .button("Try it yourself")
            .on_hover_text(
                "Change anything in the other panes; Next or Restore puts the lesson's state back",
            )
            .clicked()
        {
            pane.trying = true;
            state.command(AppCommand::LessonReveal);
        }
    });
    ui.separator();
    // The step's text scrolls; its question stays pinned below it, whole on screen however
    // long the text or small the window (a projector at 1024×768 pushed it below the fold).
    let question_h = match &step.question {
        Some(_) => {
            let id = egui::Id::unique(("question-height", file, i));
            ui.data(|d| d.get_temp::<f32>(id)).unwrap_or(160.0)
        }
        None => 0.0,
    };
    let text_h = (ui.available_height() - question_h - 12.0).max(80.0);
    egui::ScrollArea::vertical()
        .id_salt(("lesson-text", file, i))
        .max_height(text_h)
        .auto_shrink([false, true])
        .show(ui, |ui| step_text(state, pane, &step, i + 1 == n, ui));
    if let Some(q) = &step.question {
        ui.add_space(6.0);
        let r = question_ui(state, pane, q, &step.look, ui);
        let id = egui::Id::unique(("question-height", file, i));
        ui.data_mut(|d| d.insert_temp(id, r.height()));
        state.focus.mark_question(ui, r);
    }
}

/// The step's explanation: title, text, equation, what to look at, and what it waits for.
fn step_text(state: &AppState, pane: &LessonsPane, step: &Step, last: bool, ui: &mut egui::Ui) {
    ui.heading(clean(ui, &step.title, egui::TextStyle::Heading));
    let r = ui.label(clean(ui, &step.text, egui::TextStyle::Body));
    crate::app::papers::with_hover(r, &step.text);
    if !step.equation.is_empty() {
        ui.add_space(4.0);
        egui::Frame::group(ui.style()).show(ui, |ui| {
            ui.set_width(ui.available_width());
            let r = ui.label(
                egui::RichText::new(clean(ui, &step.equation, egui::TextStyle::Monospace))
                    .monospace(),
            );
            crate::app::papers::with_hover(r, &step.equation);
        });
    }
    if !step.look.is_empty() {
        ui.add_space(4.0);
        ui.horizontal_wrapped(|ui| {
            ui.strong("What to look at:");
            let r = ui.label(clean(ui, &step.look, egui::TextStyle::Body));
            crate::app::papers::with_hover(r, &step.look);
        });
    }
    if pane.trying {
        ui.add_space(4.0);
        ui.colored_label(
            ui.visuals().warn_fg_color,
            "Trying it yourself: change estimators, terms, runs or panes as you like. Next (or \
             Restore this step) puts the lesson's state back.",
        );
    }
    let waiting = waiting_for(state, step);
    if !waiting.is_empty() {
        ui.add_space(4.0);
        ui.horizontal_wrapped(|ui| {
            crate::app::appearance::busy(ui);
            ui.weak(format!("training: {}", waiting.join(", ")));
        });
    }
    if last {
        ui.add_space(6.0);
        ui.weak("This is the lesson's last step: Finish returns to the list of lessons.");
    }
}

/// The step's question and its verdict; returns where it was drawn. A wrong choice gets a
/// hint from the step's `look` text.
fn question_ui(
    state: &mut AppState,
    pane: &mut LessonsPane,
    q: &Question,
    look: &str,
    ui: &mut egui::Ui,
) -> egui::Rect {
    egui::Frame::group(ui.style())
        .show(ui, |ui| {
            ui.set_width(ui.available_width());
            ui.strong(clean(
                ui,
                &format!("Question: {}", q.ask),
                egui::TextStyle::Body,
            ));
            let on_picture = matches!(q.check, Some(Check::Clamped | Check::Free | Check::Summed));
            if on_picture {
                ui.weak(
                    "Click the variables on the graph (a second click unpicks), then Check answer.",
                );
            }
            for (k, c) in q.choices.iter().enumerate() {
                let c = clean(ui, c, egui::TextStyle::Body);
                ui.radio_value(&mut pane.picked, Some(k), c);
            }
            if ui.button("Check answer").clicked() {
                pane.verdict = match q.check {
                    Some(c @ (Check::Clamped | Check::Free | Check::Summed)) => {
                        state.command(AppCommand::LessonCheck(c));
                        None
                    }
                    Some(c) => Some(check_runs(state, q, c, pane.picked)),
                    None => Some(match pane.picked {
                        None => (false, "Pick an answer first.".into()),
                        Some(k) if Some(k) == q.answer => (true, q.why.clone()),
                        Some(k) => (
                            false,
                            match q.hints.get(k).filter(|h| !h.trim().is_empty()) {
                                Some(h) => format!("Not quite. {h}"),
                                None => checks::choice_hint(look),
                            },
                        ),
                    }),
                };
            }
            if let Some((right, why)) = &pane.verdict {
                if *right {
                    let text = clean(ui, &format!("Right. {why}"), egui::TextStyle::Body);
                    ui.colored_label(crate::app::appearance::good_color(ui.visuals()), text);
                } else {
                    let text = clean(ui, why, egui::TextStyle::Body);
                    ui.colored_label(ui.visuals().warn_fg_color, text);
                }
            }
        })
        .response
        .rect
}

/// `text` with the characters the font lacks written out in ASCII (a teacher's lesson may use
/// any Unicode; egui's default fonts have Greek and arrows but few mathematical symbols).
pub fn drawable(ctx: &egui::Context, font: &egui::FontId, text: &str) -> String {
    if ctx.fonts_mut(|f| f.has_glyphs(font, text)) {
        return text.to_string();
    }
    ctx.fonts_mut(|f| {
        text.chars()
            .map(|c| {
                if c.is_whitespace() || f.has_glyph(font, c) {
                    return c.to_string();
                }
                match c {
                    '∖' => "\\".into(),
                    '∈' => " in ".into(),
                    '∋' => " contains ".into(),
                    '⇒' => "=>".into(),
                    '≡' => "==".into(),
                    '≠' => "!=".into(),
                    '∝' => " ~ ".into(),
                    '≤' => "<=".into(),
                    '≥' => ">=".into(),
                    '≈' => "~".into(),
                    '→' => "->".into(),
                    '←' => "<-".into(),
                    '−' => "-".into(),
                    '′' => "'".into(),
                    // A hat over the previous letter (θ̂).
                    '\u{302}' => "^".into(),
                    '\u{300}'..='\u{36f}' => String::new(),
                    _ => "?".into(),
                }
            })
            .collect()
    })
}

/// [`drawable`] text in one of the style's text styles.
fn clean(ui: &egui::Ui, text: &str, style: egui::TextStyle) -> String {
    let font = style.resolve(ui.style());
    drawable(ui.ctx(), &font, text)
}
