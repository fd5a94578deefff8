//! The lesson format: a lesson is data — a TOML file in `assets/lessons/` (documented in
//! `assets/lessons/README.md`) — so a teacher writes one without Rust. Here are its types, its
//! reading and checking, and what the panes see of the current step (its [`Focus`] and the
//! [`Check`] of its question); the Lessons pane (`lessons.rs`) walks through the steps.

use super::data::DataSource;
use super::plots::{Metric, XAxis};
use super::PANES;
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
    /// Where the step's question was drawn in the last frame, and whether it was wholly
    /// inside the Lessons pane.
    pub question: Option<(egui::Rect, bool)>,
}

impl Focus {
    /// The focus of a step just opened: scrolled to when next drawn.
    pub fn new(name: Option<String>) -> Focus {
        Focus {
            name,
            scroll: true,
            seen: None,
            clip: None,
            question: None,
        }
    }

    /// Records where the Lessons pane drew the step's question (`ui`: the pane).
    pub fn mark_question(&mut self, ui: &egui::Ui, rect: egui::Rect) {
        let clip = ui.clip_rect().intersect(ui.ctx().content_rect());
        let inside = clip.expand(1.0).contains_rect(rect);
        self.question = Some((rect, inside));
    }

    /// Called by the pane that drew element `name` at `rect` inside `ui` (a scroll area's
    /// contents): scrolls it into view once, and records whether it is visible.
    pub fn mark(&mut self, ui: &egui::Ui, name: &str, rect: egui::Rect) {
        if self.name.as_deref() != Some(name) {
            return;
        }
        // What is on screen of the pane's visible area.
        let clip = ui.clip_rect().intersect(ui.ctx().content_rect());
        // The window resized, or the presentation scale switched: scrolled to again.
        let resized = self
            .clip
            .is_some_and(|c| (c.size() - clip.size()).length() > 8.0);
        self.clip = Some(clip);
        let shown = clip.intersect(rect);
        // Its whole width, and its whole height or, where it is taller than the area, the
        // area filled by it (a margin of a few points for frames; 8 let lesson 3's compared
        // tables pass with their titles cut).
        let visible = shown.is_positive()
            && shown.width() >= rect.width() - 8.0
            && shown.height() >= rect.height().min(clip.height()) - 2.0;
        // Scrolled to until it is in view (its content may arrive frames after the step
        // opens: a spinner first, then the tables); after that the student scrolls freely —
        // unless it grows out of view (a third run's tests arriving after two runs' fitted).
        let grown = self
            .seen
            .is_some_and(|(r, _)| (r.height() - rect.height()).abs() > 8.0);
        if (grown || resized) && !visible {
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
    /// A log x axis (counted operations spanning orders of magnitude).
    pub log_x: Option<bool>,
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
    /// Per choice, what a student who picked it is told (empty: the step's `look` as the hint).
    #[serde(default)]
    pub hints: Vec<String>,
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
    /// The choices are run names: which has the highest final token accuracy on the test file.
    HigherAccuracy,
    /// The choices are run names: which trained fastest (training seconds).
    Faster,
    /// The choices are run names: which trained in the fewest counted operations (the engine's
    /// count, which machine noise cannot reorder as it can seconds).
    FewerOperations,
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
                    (
                        Some(
                            Check::HigherHeldOut
                            | Check::HigherAccuracy
                            | Check::Faster
                            | Check::FewerOperations
                            | Check::LikelyChance,
                        ),
                        _,
                    ) if q.choices.len() < 2 => {
                        return Err(at(
                            "this check needs two or more run names as choices".into()
                        ))
                    }
                    _ => {}
                }
                if !q.hints.is_empty() && q.hints.len() != q.choices.len() {
                    return Err(at(format!(
                        "{} hints for {} choices (one per choice, \"\" for the default)",
                        q.hints.len(),
                        q.choices.len()
                    )));
                }
            }
            for r in &s.run {
                if r.name.trim().is_empty() {
                    return Err(at("a run needs a name".into()));
                }
            }
            if let Some(w) = &s.sweep {
                w.form()
                    .spec(crate::run::spec::RunSpec::default())
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
            keep!(curves.log_x);
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
