//! Lessons: guided walks through the papers' ideas over the real computation. A lesson is data —
//! a TOML file in `assets/lessons/` (its format: `assets/lessons/README.md`) — so a teacher
//! writes one without Rust. Each step sets the workbench's state through [`AppCommand::Lesson`],
//! served like every other command a click sends (load data, launch and tick runs, bring a pane
//! to the front, set the Graph pane's estimator, term, BP stepper and model), and shows a short
//! explanation with the paper's equation, what to look at, and optionally a question checked
//! against the picture.

use super::data::{DataSource, Split};
use super::launch::LaunchForm;
use super::plots::{Metric, XAxis};
use super::runs::RunStatus;
use super::{AppCommand, AppState, Pane, Workbench, PANES};
use crate::estimators::EstimatorSpec;
use crate::settings::KnobValues;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One lesson file.
#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lesson {
    pub title: String,
    /// The paper and section it teaches ("000 §3").
    #[serde(default)]
    pub paper: String,
    /// One or two sentences for the list of lessons.
    #[serde(default)]
    pub summary: String,
    #[serde(rename = "step")]
    pub steps: Vec<Step>,
}

/// One step: what it says, and the state it sets. A field left out keeps the previous step's
/// value, so a step states only what changes.
#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    pub title: String,
    pub text: String,
    /// The paper's equation for this step, as plain text.
    #[serde(default)]
    pub equation: String,
    /// What to look at in the picture.
    #[serde(default)]
    pub look: String,
    #[serde(default)]
    pub data: Option<LessonData>,
    /// The pane brought to the front (its tab title: "Graph", "Curves", …).
    #[serde(default)]
    pub pane: Option<String>,
    #[serde(default)]
    pub graph: GraphState,
    #[serde(default)]
    pub curves: CurvesState,
    /// Runs the step needs: launched on the step's data unless a run of that name exists.
    #[serde(default)]
    pub run: Vec<LessonRun>,
    /// The runs ticked for Curves, Fields and Compare (by name); the others are unticked.
    #[serde(default)]
    pub tick: Option<Vec<String>>,
    /// The Constraints pane's runs, left to right (by name).
    #[serde(default)]
    pub constraints: Option<Vec<String>>,
    /// The cluster (factor index) the Constraints pane shows the beliefs of.
    #[serde(default)]
    pub cluster: Option<usize>,
    /// The SCL sweep shown in the Frontier pane (started when `start` is true).
    #[serde(default)]
    pub sweep: Option<LessonSweep>,
    #[serde(default)]
    pub theory: TheoryState,
    #[serde(default)]
    pub parse: ParseState,
    #[serde(default)]
    pub question: Option<Question>,
    /// What the step asks the student to look at ([`FOCI`]): the pane drawing it scrolls it
    /// into view when the step opens. Not carried to later steps.
    #[serde(default)]
    pub focus: Option<String>,
}

/// The elements a step can point at, and the pane that draws each.
pub const FOCI: [(&str, &str); 6] = [
    (
        "bp-table",
        "Graph: the factor inspector's tables (BP beliefs beside the exact marginal)",
    ),
    (
        "compare-tests",
        "Compare: the paired tests and their readings",
    ),
    ("frontier-plot", "Frontier: the accuracy–complexity plot"),
    (
        "fl-row",
        "Frontier: the Fig. 1 preview's full-likelihood row",
    ),
    ("chart", "Parse: the chart"),
    ("tree", "Parse: the predicted and gold trees"),
];

/// The current step's focus as the panes see it: which element, whether it still has to be
/// scrolled into view, and where it was drawn in the last frame — with whether all of it (or
/// as much as the pane can show) was inside the visible area.
#[derive(Clone, Debug, Default)]
pub struct Focus {
    pub name: Option<String>,
    scroll: bool,
    pub seen: Option<(egui::Rect, bool)>,
    /// The visible area it was checked against (for messages).
    pub clip: Option<egui::Rect>,
}

impl Focus {
    /// The focus of a step just opened: scrolled to when next drawn.
    pub fn new(name: Option<String>) -> Focus {
        Focus {
            name,
            scroll: true,
            seen: None,
            clip: None,
        }
    }

    /// Called by the pane that drew element `name` at `rect` inside `ui` (a scroll area's
    /// contents): scrolls it into view once, and records whether it is visible.
    pub fn mark(&mut self, ui: &egui::Ui, name: &str, rect: egui::Rect) {
        if self.name.as_deref() != Some(name) {
            return;
        }
        // What is on screen of the pane's visible area.
        let clip = ui.clip_rect().intersect(ui.ctx().content_rect());
        self.clip = Some(clip);
        let shown = clip.intersect(rect);
        // Its whole width, and its whole height or, where it is taller than the area, the
        // area filled by it (a margin of a few points for frames and spacing).
        let visible = shown.is_positive()
            && shown.width() >= rect.width() - 8.0
            && shown.height() >= rect.height().min(clip.height()) - 8.0;
        // Scrolled to until it is in view (its content may arrive frames after the step
        // opens: a spinner first, then the tables); after that the student scrolls freely —
        // unless it grows out of view (a third run's tests arriving after two runs' fitted).
        let grown = self
            .seen
            .is_some_and(|(r, _)| (r.height() - rect.height()).abs() > 8.0);
        if grown && !visible {
            self.scroll = true;
        }
        if self.scroll {
            if visible {
                self.scroll = false;
            } else {
                ui.scroll_to_rect(rect, Some(egui::Align::Min));
            }
        }
        self.seen = Some((rect, visible));
    }
}

/// A data set, paths relative to the app's root (where `sample_data/` is).
#[derive(Clone, Debug, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LessonData {
    pub train: String,
    #[serde(default)]
    pub test: String,
    #[serde(default)]
    pub template: String,
    /// Model knobs as the command line spells them (`model = "grid"`, …).
    #[serde(default)]
    pub model: BTreeMap<String, String>,
}

/// The Graph pane's state a step sets.
#[derive(Clone, Debug, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GraphState {
    pub estimator: Option<String>,
    pub pieces: Option<String>,
    pub term: Option<usize>,
    pub sequence: Option<usize>,
    pub test: Option<bool>,
    pub terms: Option<bool>,
    pub show_pieces: Option<bool>,
    pub node_split: Option<bool>,
    pub bp: Option<bool>,
    pub bp_sweeps: Option<usize>,
    pub bp_at_one: Option<bool>,
    /// A run's name, or "untrained".
    pub model: Option<String>,
    /// The factor inspected; a negative number closes the inspector.
    pub factor: Option<i64>,
    pub zoom: Option<f32>,
}

/// The Curves pane's axes.
#[derive(Clone, Debug, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CurvesState {
    pub metric: Option<Metric>,
    pub x: Option<XAxis>,
    pub log_y: Option<bool>,
}

/// A λ × β sweep on the step's data (the Frontier pane's *New sweep* form): `1:(1−β)*LOW +
/// λ:β*HIGH` at every point. Started when `start` is true unless it has finished before (a
/// sweep resumes in its folder `workspace/sweeps/NAME`).
#[derive(Clone, Debug, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LessonSweep {
    pub name: String,
    /// `LOW/HIGH`, e.g. `pl1/fl`.
    pub families: String,
    pub lambdas: String,
    pub betas: String,
    #[serde(default)]
    pub start: bool,
    /// Run knobs as the command line spells them (`max-iter = "50"`).
    #[serde(default)]
    pub knobs: BTreeMap<String, String>,
    /// The point whose selection (004 Fig. 1) the form previews.
    pub preview_lambda: Option<f64>,
    pub preview_beta: Option<f64>,
}

/// The Theory pane's settings a step sets.
#[derive(Clone, Debug, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TheoryState {
    pub m: Option<usize>,
    /// Which mixtures PL(k+1)/PL(k) are drawn, k = 1, 2, 3.
    pub orders: Option<[bool; 3]>,
    /// The det ratio (else the trace ratio).
    pub det: Option<bool>,
    /// The exact form drawn beside the paper's.
    pub exact: Option<bool>,
    pub mc_n: Option<usize>,
    pub mc_reps: Option<usize>,
    pub mc_lambdas: Option<String>,
}

/// The Parse pane's state a step sets.
#[derive(Clone, Debug, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParseState {
    /// A lesson run's name (picked once it has finished).
    pub run: Option<String>,
    /// `"Test"` or `"Training"` sentences.
    pub set: Option<super::parse_view::SentenceSet>,
    pub sentence: Option<usize>,
    /// `"Trees"`, `"Chart"` or `"Terms"`.
    pub tab: Option<super::parse_view::ParseTab>,
    pub term: Option<usize>,
    /// Show the sentence's first term of a kind: `"expansion"` or `"nota"` (once its terms
    /// are computed); else `term`.
    pub first: Option<super::parse_view::FirstTerm>,
}

/// A run a lesson trains: a name and the command line's knobs (`estimator = "pw"`).
#[derive(Clone, Debug, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LessonRun {
    pub name: String,
    #[serde(default)]
    pub knobs: BTreeMap<String, String>,
    /// The run's own data (a treebank for the Parse pane); else the step's.
    #[serde(default)]
    pub data: Option<LessonData>,
}

/// A question: pick one of `choices` (the `answer`-th is right, counted from 0), or answer on
/// the picture (`check`).
#[derive(Clone, Debug, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Question {
    pub ask: String,
    #[serde(default)]
    pub choices: Vec<String>,
    #[serde(default)]
    pub answer: Option<usize>,
    #[serde(default)]
    pub check: Option<Check>,
    /// Shown once answered right: why.
    #[serde(default)]
    pub why: String,
}

/// Answers read off the picture rather than written in the lesson.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Check {
    /// Click the variables the Graph pane's current term clamps at gold.
    Clamped,
    /// Click the variables the current term leaves free (those it normalises over).
    Free,
    /// Click the variables the current term sums out.
    Summed,
    /// The choices are run names: which has the highest final held-out log-likelihood.
    HigherHeldOut,
    /// The choices are run names: which trained fastest (training seconds).
    Faster,
    /// The choices are pairs of run names, "a / b": the pair whose difference is likeliest
    /// chance — the largest p of McNemar's test on tokens.
    LikelyChance,
}

impl Lesson {
    /// Reads and checks a lesson file; errors name the file and line.
    pub fn read(path: &Path) -> Result<Lesson, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Lesson::parse(&text).map_err(|e| format!("{}:{e}", path.display()))
    }

    /// Parses a lesson; errors start with "line:".
    pub fn parse(text: &str) -> Result<Lesson, String> {
        let lesson: Lesson = toml::from_str(text).map_err(|e| {
            let line = e
                .span()
                .map(|s| text[..s.start.min(text.len())].lines().count().max(1))
                .unwrap_or(1);
            format!("{line}: {}", e.message())
        })?;
        lesson.check(text)?;
        Ok(lesson)
    }

    /// What the parser cannot see: names of panes and estimators, question shapes.
    fn check(&self, text: &str) -> Result<(), String> {
        if self.steps.is_empty() {
            return Err("1: a lesson needs at least one [[step]]".into());
        }
        // Steps start at their `[[step]]` lines.
        let starts: Vec<usize> = text
            .lines()
            .enumerate()
            .filter(|(_, l)| l.trim() == "[[step]]")
            .map(|(i, _)| i + 1)
            .collect();
        for (i, s) in self.steps.iter().enumerate() {
            let at = |msg: String| {
                format!(
                    "{}: step {} ({}): {msg}",
                    starts.get(i).copied().unwrap_or(1),
                    i + 1,
                    s.title
                )
            };
            if let Some(f) = &s.focus {
                if !FOCI.iter().any(|(n, _)| n == f) {
                    return Err(at(format!(
                        "focus '{f}' is not one of {}",
                        FOCI.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
                    )));
                }
            }
            if let Some(p) = &s.pane {
                // The Lessons pane is in the left column: a step brings a pane of the right one
                // to the front, so the lesson stays in view beside it.
                let right: Vec<&str> = PANES.iter().filter(|e| !e.left).map(|e| e.title).collect();
                if !right.contains(&p.as_str()) {
                    return Err(at(format!(
                        "pane '{p}' is not one a lesson shows beside itself ({})",
                        right.join(", ")
                    )));
                }
            }
            if let Some(e) = &s.graph.estimator {
                EstimatorSpec::from_name(e).map_err(|err| at(err.to_string()))?;
            }
            if let Some(q) = &s.question {
                match (q.check, q.answer) {
                    (None, None) => return Err(at("a question needs `answer` or `check`".into())),
                    (None, Some(a)) if a >= q.choices.len() => {
                        return Err(at(format!(
                            "answer {a} but only {} choices (counted from 0)",
                            q.choices.len()
                        )))
                    }
                    (Some(Check::HigherHeldOut | Check::Faster | Check::LikelyChance), _)
                        if q.choices.len() < 2 =>
                    {
                        return Err(at(
                            "this check needs two or more run names as choices".into()
                        ))
                    }
                    _ => {}
                }
            }
            for r in &s.run {
                if r.name.trim().is_empty() {
                    return Err(at("a run needs a name".into()));
                }
            }
            if let Some(w) = &s.sweep {
                w.form()
                    .spec(crate::train::spec::RunSpec::default())
                    .map_err(|e| at(format!("sweep {}: {e}", w.name)))?;
            }
        }
        Ok(())
    }

    /// The state at step `i`: every earlier step's settings with the later ones on top; the
    /// runs of all steps so far.
    pub fn state_at(&self, i: usize) -> Step {
        let mut acc = Step::default();
        for s in self.steps.iter().take(i + 1) {
            macro_rules! keep {
                ($($f:ident).+) => {
                    if s.$($f).+.is_some() {
                        acc.$($f).+ = s.$($f).+.clone();
                    }
                };
            }
            keep!(data);
            keep!(pane);
            keep!(tick);
            keep!(constraints);
            keep!(cluster);
            keep!(sweep);
            keep!(parse.run);
            keep!(parse.set);
            keep!(parse.sentence);
            keep!(parse.tab);
            keep!(parse.term);
            keep!(parse.first);
            keep!(theory.m);
            keep!(theory.orders);
            keep!(theory.det);
            keep!(theory.exact);
            keep!(theory.mc_n);
            keep!(theory.mc_reps);
            keep!(theory.mc_lambdas);
            keep!(graph.estimator);
            keep!(graph.pieces);
            keep!(graph.term);
            keep!(graph.sequence);
            keep!(graph.test);
            keep!(graph.terms);
            keep!(graph.show_pieces);
            keep!(graph.node_split);
            keep!(graph.bp);
            keep!(graph.bp_sweeps);
            keep!(graph.bp_at_one);
            keep!(graph.model);
            keep!(graph.factor);
            keep!(graph.zoom);
            keep!(curves.metric);
            keep!(curves.x);
            keep!(curves.log_y);
            for r in &s.run {
                if !acc.run.iter().any(|q| q.name == r.name) {
                    acc.run.push(r.clone());
                }
            }
        }
        if let Some(s) = self.steps.get(i) {
            acc.title = s.title.clone();
            acc.text = s.text.clone();
            acc.equation = s.equation.clone();
            acc.look = s.look.clone();
            acc.question = s.question.clone();
            acc.focus = s.focus.clone();
        }
        acc
    }
}

impl Lesson {
    /// The data files the lesson reads that are not here (the shared corpora beside the
    /// repository, say): the lesson cannot start without them.
    pub fn missing_files(&self, root: &Path) -> Vec<String> {
        let mut out = vec![];
        let datas = self.steps.iter().flat_map(|s| {
            s.data
                .iter()
                .chain(s.run.iter().filter_map(|r| r.data.as_ref()))
        });
        for d in datas {
            let src = d.source(root);
            for f in [&src.train, &src.test, &src.template] {
                if !f.is_empty() && !Path::new(f).exists() && !out.contains(f) {
                    out.push(f.clone());
                }
            }
        }
        out
    }
}

impl LessonSweep {
    /// The Frontier pane's form for this sweep.
    pub fn form(&self) -> super::frontier::SweepForm {
        let d = super::frontier::SweepForm::default();
        super::frontier::SweepForm {
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

impl LessonData {
    /// The data source, relative paths resolved against `root`.
    pub fn source(&self, root: &Path) -> DataSource {
        let resolve = |p: &str| {
            if p.trim().is_empty() {
                String::new()
            } else {
                let q = Path::new(p.trim());
                if q.is_absolute() {
                    p.trim().to_string()
                } else {
                    root.join(q).display().to_string()
                }
            }
        };
        let mut model = KnobValues::default();
        for (k, v) in &self.model {
            model.set(k, v);
        }
        DataSource {
            train: resolve(&self.train),
            test: resolve(&self.test),
            template: resolve(&self.template),
            model,
        }
    }
}

/// The lessons of `dir` (file name order), each read or with its error.
pub fn read_dir(dir: &Path) -> Vec<(PathBuf, Result<Lesson, String>)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "toml"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let l = Lesson::read(&p);
            (p, l)
        })
        .collect()
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
pub type PlannedRun = (String, Result<crate::train::spec::RunSpec, String>);
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
    form.knobs.set(crate::train::spec::NAME.name, &r.name);
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
        if data.family() == crate::graph::FamilyKind::Grammar && state.form != data {
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
        if !running && !super::frontier::sweep_finished(&state.config.workspace, &w.name) {
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
