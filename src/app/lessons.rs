//! Lessons: guided walks through the papers' ideas over the real computation, lessons in the
//! format of [`super::lesson_format`]. Each step sets the workbench's state through
//! [`AppCommand::Lesson`], served like every other command a click sends (load data, launch and
//! tick runs, bring a pane to the front, set the Graph pane's estimator, term, BP stepper and
//! model), and shows a short explanation with the paper's equation, what to look at, and
//! optionally a question checked against the picture.

use super::data::{DataSource, Split};
use super::frontier::SweepForm;
use super::launch::LaunchForm;
use super::lesson_format::*;
use super::runs::RunStatus;
use super::{AppCommand, AppState, Pane, Workbench, PANES};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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
    egui::ScrollArea::vertical()
        .id_salt("lessons-scroll")
        .auto_shrink([false, false])
        .show(ui, |ui| match pane.lesson.clone() {
            None => list(state, pane, ui),
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
        });
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
        StepKey::Forward => {
            pane.lesson = None;
            state.command(AppCommand::LessonReveal);
        }
        StepKey::Back if i > 0 => go(state, pane, &file, &lesson, i - 1),
        StepKey::Restore if pane.trying => go(state, pane, &file, &lesson, i),
        StepKey::Back | StepKey::Restore => {}
    }
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
                        super::papers::with_hover(r, &lesson.paper);
                    });
                    let r = ui.label(clean(
                        ui,
                        &format!("{}. {}", n + 1, lesson.summary),
                        egui::TextStyle::Body,
                    ));
                    super::papers::with_hover(r, &lesson.summary);
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
        super::papers::with_hover(r, &lesson.paper);
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
            pane.lesson = None;
            state.command(AppCommand::LessonReveal);
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
    ui.heading(clean(ui, &step.title, egui::TextStyle::Heading));
    let r = ui.label(clean(ui, &step.text, egui::TextStyle::Body));
    super::papers::with_hover(r, &step.text);
    if !step.equation.is_empty() {
        ui.add_space(4.0);
        egui::Frame::group(ui.style()).show(ui, |ui| {
            ui.set_width(ui.available_width());
            let r = ui.label(
                egui::RichText::new(clean(ui, &step.equation, egui::TextStyle::Monospace))
                    .monospace(),
            );
            super::papers::with_hover(r, &step.equation);
        });
    }
    if !step.look.is_empty() {
        ui.add_space(4.0);
        ui.horizontal_wrapped(|ui| {
            ui.strong("What to look at:");
            let r = ui.label(clean(ui, &step.look, egui::TextStyle::Body));
            super::papers::with_hover(r, &step.look);
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
    let waiting = waiting_for(state, &step);
    if !waiting.is_empty() {
        ui.add_space(4.0);
        ui.horizontal_wrapped(|ui| {
            ui.spinner();
            ui.weak(format!("training: {}", waiting.join(", ")));
        });
    }
    if let Some(q) = &step.question {
        ui.add_space(6.0);
        question_ui(state, pane, q, ui);
    }
    if i + 1 == n {
        ui.add_space(6.0);
        ui.weak("This is the lesson's last step: Finish returns to the list of lessons.");
    }
}

fn question_ui(state: &mut AppState, pane: &mut LessonsPane, q: &Question, ui: &mut egui::Ui) {
    egui::Frame::group(ui.style()).show(ui, |ui| {
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
                    Some(_) => (
                        false,
                        "Not quite: look at the picture again and try once more.".into(),
                    ),
                }),
            };
        }
        if let Some((right, why)) = &pane.verdict {
            if *right {
                let text = clean(ui, &format!("Right. {why}"), egui::TextStyle::Body);
                ui.colored_label(super::appearance::good_color(ui.visuals()), text);
            } else {
                let text = clean(ui, why, egui::TextStyle::Body);
                ui.colored_label(ui.visuals().warn_fg_color, text);
            }
        }
    });
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

/// A question over runs, answered from their recorded results.
fn check_runs(state: &AppState, q: &Question, c: Check, picked: Option<usize>) -> (bool, String) {
    let Some(k) = picked else {
        return (false, "Pick an answer first.".into());
    };
    let finished = |name: &str| -> Result<&super::runs::RunEntry, String> {
        run_named(state, name)
            .and_then(|id| state.runs.get(&id))
            .filter(|e| e.status == RunStatus::Finished)
            .ok_or_else(|| format!("Wait for run {name} to finish, then check again."))
    };
    let mut scores = vec![];
    for choice in &q.choices {
        let score = match c {
            Check::LikelyChance => {
                let Some((a, b)) = choice.split_once(" / ") else {
                    return (false, format!("{choice:?} is not a pair \"a / b\"."));
                };
                let (ea, eb) = match (finished(a.trim()), finished(b.trim())) {
                    (Ok(x), Ok(y)) => (x, y),
                    (Err(e), _) | (_, Err(e)) => return (false, e),
                };
                let (Some(ma), Some(mb)) = (ea.metrics.as_ref(), eb.metrics.as_ref()) else {
                    return (false, format!("{choice} has no test scores to compare."));
                };
                // McNemar on tokens alone (no bootstrap: this runs on a click).
                (ma.paired.gold_digest == mb.paired.gold_digest)
                    .then(|| {
                        crate::eval::significance::mcnemar_bits(
                            &ma.paired.token_right,
                            &mb.paired.token_right,
                        )
                    })
                    .flatten()
                    .map(|m| m.p)
            }
            _ => {
                let e = match finished(choice) {
                    Ok(e) => e,
                    Err(e) => return (false, e),
                };
                match c {
                    Check::HigherHeldOut => e.metrics.as_ref().and_then(|m| m.log_likelihood),
                    _ => e.summary.as_ref().map(|s| -s.train_seconds),
                }
            }
        };
        match score {
            Some(x) => scores.push(x),
            None => return (false, format!("{choice} has no result to compare.")),
        }
    }
    let best = (0..scores.len())
        .max_by(|&a, &b| scores[a].total_cmp(&scores[b]))
        .expect("two or more choices");
    let show = |n: &str, s: f64| match c {
        Check::HigherHeldOut => format!("{n}: {s:.1}"),
        Check::LikelyChance => format!("{n}: p = {}", crate::eval::significance::show_p(s)),
        _ => format!("{n}: {:.2} s", -s),
    };
    if k == best {
        let detail = q
            .choices
            .iter()
            .zip(&scores)
            .map(|(n, s)| show(n, *s))
            .collect::<Vec<_>>()
            .join(" · ");
        (true, format!("{} {detail}.", q.why.trim_end()))
    } else {
        // Only the picked run's number: the others would give the answer away.
        (
            false,
            format!(
                "Not quite: {}. Look at the picture again and try once more.",
                show(&q.choices[k], scores[k])
            ),
        )
    }
}

/// A lesson run's name and spec (or why the spec cannot be built).
pub type PlannedRun = (String, Result<crate::run::spec::RunSpec, String>);
/// A lesson step's sweep spec (or why it cannot be built).
pub type PlannedSweep = Result<crate::experiments::sweep::SweepSpec, String>;

/// The runs step `i` of `lesson` launches (name, spec) and the sweep it starts, built as the
/// workbench builds them: the tests read them to check that the bundled data still shows
/// what the lesson's text says.
pub fn planned(lesson: &Lesson, i: usize, root: &Path) -> (Vec<PlannedRun>, Option<PlannedSweep>) {
    let step = lesson.state_at(i);
    let source = step.data.as_ref().map(|d| d.source(root));
    let runs = step
        .run
        .iter()
        .map(|r| {
            let spec = r
                .data
                .as_ref()
                .map(|d| d.source(root))
                .or_else(|| source.clone())
                .ok_or_else(|| format!("run {}: the step has no data", r.name))
                .and_then(|data| run_form(&data, r).to_spec());
            (r.name.clone(), spec)
        })
        .collect();
    let sweep = step.sweep.as_ref().filter(|w| w.start).map(|w| {
        let source = source.clone().ok_or("the sweep's step has no data")?;
        let mut base = lesson_form(&source, &w.knobs);
        base.set_estimator("scl");
        w.form().spec(base.to_spec()?).map_err(|e| e.to_string())
    });
    (runs, sweep)
}

/// The launch form of a lesson run on `data`, named as the lesson names it.
fn run_form(data: &DataSource, r: &LessonRun) -> LaunchForm {
    let mut form = lesson_form(data, &r.knobs);
    form.knobs.set(crate::run::spec::NAME.name, &r.name);
    form
}

/// The Runs form's defaults on `data` with a lesson's knobs (the command line's names) on top.
fn lesson_form(data: &DataSource, knobs: &BTreeMap<String, String>) -> LaunchForm {
    let mut form = LaunchForm::for_data(data);
    // The lesson's prior replaces the form's (c2 and σ² are one knob in two spellings).
    if knobs.contains_key("c2") || knobs.contains_key("sigma2") {
        form.knobs.unset("c2");
        form.knobs.unset("sigma2");
    }
    for (k, v) in knobs {
        form.knobs.set(k, v);
    }
    form
}

/// Serves [`AppCommand::Lesson`]: sets the workbench to a step's state as the user's clicks
/// would.
pub(super) fn apply(wb: &mut Workbench, ctx: &egui::Context, step: Step) {
    let state = &mut wb.state;
    state.focus = Focus::new(step.focus.clone());
    // Data: load it unless it is what is loaded (or loading) already.
    let source = step
        .data
        .as_ref()
        .map(|d| d.source(&state.config.root))
        .unwrap_or_else(|| state.form.clone());
    let loaded = state.data.as_ref().map(|d| &d.source);
    if step.data.is_some()
        && loaded != Some(&source)
        && !(state.is_loading() && state.form == source)
    {
        state.form = source.clone();
        state.load(ctx);
    }
    for r in &step.run {
        let data = r
            .data
            .as_ref()
            .map_or_else(|| source.clone(), |d| d.source(&state.config.root));
        // A treebank run's data becomes the data in hand (the top bar names it).
        if data.family() == crate::run::FamilyKind::Grammar && state.form != data {
            state.form = data.clone();
            state.load(ctx);
        }
        if run_named(state, &r.name).is_some() {
            continue;
        }
        match run_form(&data, r).to_spec() {
            Ok(spec) => {
                let id = state.runs.launch(ctx, spec);
                state.info(format!("lesson: started run {id} ({})", r.name));
            }
            Err(e) => state.error(format!("lesson run {}: {e}", r.name)),
        }
    }
    if let Some(w) = step.sweep.as_ref().filter(|w| w.start) {
        let running = state.sweep.as_ref().is_some_and(|s| s.name == w.name);
        if !running && !crate::experiments::sweep::sweep_finished(&state.config.workspace, &w.name)
        {
            let base = lesson_form(&source, &w.knobs);
            if let Err(e) = super::frontier::start_sweep(state, ctx, &w.form(), &base) {
                state.error(format!("lesson sweep {}: {e}", w.name));
            }
        }
    }
    if let Some(names) = &step.tick {
        state.selected = names.iter().filter_map(|n| run_named(state, n)).collect();
    }
    state.lessons.pending_model = step.graph.model.clone();
    state.lessons.pending_parse = step.parse.run.clone();
    let constraints: Option<Vec<String>> = step
        .constraints
        .as_ref()
        .map(|ns| ns.iter().filter_map(|n| run_named(state, n)).collect());
    for (_, tile) in wb.tree.tiles.iter_mut() {
        match tile {
            egui_tiles::Tile::Pane(Pane::Graph(g)) => {
                let s = &step.graph;
                macro_rules! set {
                    ($f:ident => $g:ident) => {
                        if let Some(v) = &s.$f {
                            g.$g = v.clone();
                        }
                    };
                }
                set!(estimator => estimator);
                set!(pieces => pieces);
                set!(term => term);
                set!(sequence => sequence);
                set!(terms => show_terms);
                set!(show_pieces => show_pieces);
                set!(node_split => node_split);
                set!(bp => show_bp);
                set!(bp_sweeps => bp_sweeps);
                set!(bp_at_one => bp_at_one);
                set!(zoom => zoom);
                // A lesson's zoom is its own; without one, fit the pane.
                g.fit = s.zoom.is_none();
                if let Some(t) = s.test {
                    g.split = if t { Split::Test } else { Split::Train };
                }
                if let Some(f) = s.factor {
                    g.selected_factor = usize::try_from(f).ok();
                }
                if s.model.as_deref() == Some("untrained") {
                    g.model_run = None;
                }
                g.animate = false;
                g.bp_animate = false;
                g.picked_vars.clear();
                g.quiz = step
                    .question
                    .as_ref()
                    .and_then(|q| q.check)
                    .filter(|c| matches!(c, Check::Clamped | Check::Free | Check::Summed))
                    .map(|check| super::graph_view::Quiz {
                        check,
                        term: g.term,
                        estimator: g.estimator.clone(),
                        sequence: g.sequence,
                    });
            }
            egui_tiles::Tile::Pane(Pane::Curves(c)) => {
                let s = &step.curves;
                if let Some(m) = s.metric {
                    c.metric = m;
                }
                if let Some(x) = s.x {
                    c.x = x;
                }
                if let Some(l) = s.log_y {
                    c.log_y = l;
                }
            }
            egui_tiles::Tile::Pane(Pane::Parse(p)) => {
                let s = &step.parse;
                if let Some(v) = s.set {
                    p.set = v;
                }
                if let Some(v) = s.sentence {
                    p.sentence = v;
                }
                if let Some(v) = s.tab {
                    p.tab = v;
                }
                if let Some(v) = s.term {
                    p.term = v;
                }
                p.jump_to = s.first;
                if s.run.is_some() {
                    // The lesson trains its own run: the form would only push the picture down.
                    p.form_open = Some(false);
                }
            }
            egui_tiles::Tile::Pane(Pane::Frontier(f)) => {
                if let Some(w) = &step.sweep {
                    f.form = w.form();
                    // The form while the policy is explained; the plot once the sweep runs.
                    f.form_open = Some(!w.start);
                    f.sweep = Some(w.name.clone());
                }
            }
            egui_tiles::Tile::Pane(Pane::Theory(t)) => {
                let s = &step.theory;
                if let Some(m) = s.m {
                    t.m = m;
                }
                if let Some(o) = s.orders {
                    t.orders = o;
                }
                if let Some(d) = s.det {
                    t.det = d;
                }
                if let Some(e) = s.exact {
                    t.exact = e;
                }
                if let Some(n) = s.mc_n {
                    t.mc_n = n;
                }
                if let Some(r) = s.mc_reps {
                    t.mc_reps = r;
                }
                if let Some(l) = &s.mc_lambdas {
                    t.mc_lambdas = l.clone();
                }
            }
            egui_tiles::Tile::Pane(Pane::Constraints(c)) => {
                if let Some(rs) = &constraints {
                    c.runs = rs.clone();
                    c.runs_touched = true;
                }
                c.selected = step.cluster;
            }
            _ => {}
        }
    }
    if let Some(p) = &step.pane {
        if let Some(e) = PANES.iter().find(|e| e.title == p) {
            wb.state.command(AppCommand::Focus(e.kind));
        }
    }
}

/// Each frame: picks the Graph pane's model once the lesson's run has finished.
pub(super) fn settle(wb: &mut Workbench) {
    if let Some(name) = wb.state.lessons.pending_parse.clone() {
        if let Some(id) =
            run_named(&wb.state, &name).filter(|id| wb.state.finished_grammar_runs().contains(id))
        {
            for (_, tile) in wb.tree.tiles.iter_mut() {
                if let egui_tiles::Tile::Pane(Pane::Parse(p)) = tile {
                    p.run = Some(id.clone());
                }
            }
            wb.state.lessons.pending_parse = None;
        }
    }
    let Some(name) = wb.state.lessons.pending_model.clone() else {
        return;
    };
    if name == "untrained" {
        wb.state.lessons.pending_model = None;
        return;
    }
    let Some(id) = run_named(&wb.state, &name) else {
        return;
    };
    if !wb.state.runs_for_data().0.contains(&id) {
        return;
    }
    for (_, tile) in wb.tree.tiles.iter_mut() {
        if let egui_tiles::Tile::Pane(Pane::Graph(g)) = tile {
            g.model_run = Some(id.clone());
        }
    }
    wb.state.lessons.pending_model = None;
}

/// What a wrong answer to a click question is told: how to find the variables, not which
/// they are (their colours stay hidden until the answer is right).
fn hint(check: Check) -> &'static str {
    match check {
        Check::Clamped => {
            "A term clamps at gold the variables its factors (the bright squares) touch \
             besides the orange free one."
        }
        Check::Free => "A term's free variables are those its normaliser sums over.",
        _ => "Look at which variables the term's factors (the bright squares) touch.",
    }
}

/// Serves [`AppCommand::LessonCheck`]: the variables picked on the Graph pane against the
/// current term's; a right answer shows the term's colours and formula again.
pub(super) fn check_picture(wb: &mut Workbench, check: Check) {
    let mut verdict = (
        false,
        "Open the Graph pane and pick variables on it.".to_string(),
    );
    let why = wb
        .tree
        .tiles
        .tiles()
        .find_map(|t| match t {
            egui_tiles::Tile::Pane(Pane::Lessons(l)) => l.lesson.as_ref().and_then(|f| {
                let lesson = wb.state.lessons.find(f)?;
                lesson
                    .steps
                    .get(l.step)?
                    .question
                    .as_ref()
                    .map(|q| q.why.clone())
            }),
            _ => None,
        })
        .unwrap_or_default();
    if let Some(g) = wb.tree.tiles.tiles().find_map(|t| match t {
        egui_tiles::Tile::Pane(Pane::Graph(g)) => Some(g),
        _ => None,
    }) {
        if let Some(want) = g.term_vars(check) {
            let got: Vec<u32> = g.picked_vars.iter().copied().collect();
            verdict = if got == want {
                (true, why)
            } else {
                let missing = want.iter().filter(|v| !got.contains(v)).count();
                let extra = got.iter().filter(|v| !want.contains(v)).count();
                (
                    false,
                    format!(
                        "Not quite: {missing} missing, {extra} too many. {}",
                        hint(check)
                    ),
                )
            };
        }
    }
    for (_, tile) in wb.tree.tiles.iter_mut() {
        match tile {
            egui_tiles::Tile::Pane(Pane::Lessons(l)) => l.verdict = Some(verdict.clone()),
            egui_tiles::Tile::Pane(Pane::Graph(g)) if verdict.0 => g.quiz = None,
            _ => {}
        }
    }
}
