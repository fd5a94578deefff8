//! The Parse pane — the grammar family (001 §5). For one sentence under one trained grammar run:
//! the gold tree above the prediction with EVALB's bracket matches; the CKY chart as a triangle
//! (start × length) with each cell's best edge, gold edges outlined and the wrong edges a NOTA
//! threshold would select in red; and the estimator's terms on the sentence, stepped one by one
//! with the outcomes each normalises over. Runs train through the same `RunSpec` and run
//! directories as every family (the form below launches them), so Runs, Curves, Compare and
//! Fields show them too. Everything is computed on background threads (`grammar::view`).

use super::jobs::{drain_finished, take_finished, Job, Transient};
use super::AppState;
use crate::data::treebank::Tree;
use crate::eval::parse_view::{sentence_view, Node, SentenceView};
use crate::grammar::train::ChartTerm;
use crate::run::grammar::GrammarRun;
use crate::settings::KnobValues;
use egui::{pos2, vec2, Align2, Color32, FontId, Rect, Sense, Stroke, Vec2};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

/// Which picture the pane shows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ParseTab {
    #[default]
    Trees,
    Chart,
    Terms,
}

/// The sentences shown: the run's test trees or its training trees.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum SentenceSet {
    #[default]
    Test,
    Training,
}

/// The pane's settings (saved with the layout).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct ParsePane {
    pub run: Option<String>,
    pub set: SentenceSet,
    pub sentence: usize,
    pub tab: ParseTab,
    /// NOTA threshold as log10 of the ratio to the best edge of the same length.
    pub threshold_log10: f64,
    pub term: usize,
    /// The training form.
    pub train: String,
    pub test: String,
    pub estimator: String,
    pub split_features: bool,
    pub max_iter: usize,
    /// Show the sentence's first term of this kind once its terms are computed (a lesson's
    /// step).
    #[serde(skip)]
    pub jump_to: Option<FirstTerm>,
    /// Opens (or closes) *Train a grammar* at the next frame (a lesson's step).
    #[serde(skip)]
    pub form_open: Option<bool>,
    #[serde(skip)]
    pub runtime: Transient<ParseRuntime>,
}

impl Default for ParsePane {
    fn default() -> Self {
        ParsePane {
            run: None,
            set: SentenceSet::Test,
            sentence: 0,
            tab: ParseTab::Trees,
            threshold_log10: -3.0,
            term: 0,
            train: String::new(),
            test: String::new(),
            estimator: "memm".into(),
            split_features: false,
            max_iter: 300,
            jump_to: None,
            form_open: None,
            runtime: Default::default(),
        }
    }
}

/// A kind of training term, for "show the first one".
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FirstTerm {
    /// An MECFG expansion term of a gold constituent.
    Expansion,
    /// A NOTA term of a wrong chart edge.
    Nota,
}

impl FirstTerm {
    fn is(self, t: &ChartTerm) -> bool {
        match self {
            FirstTerm::Expansion => matches!(t, ChartTerm::Expansion { .. }),
            FirstTerm::Nota => matches!(t, ChartTerm::Nota { .. }),
        }
    }
}

type ViewKey = (String, SentenceSet, usize, i64);

impl ParsePane {
    fn key(&self) -> Option<ViewKey> {
        Some((
            self.run.clone()?,
            self.set,
            self.sentence,
            (self.threshold_log10 * 2.0).round() as i64,
        ))
    }

    /// The computed view of the sentence on screen, once ready (tests and lessons read it).
    pub fn view(&self) -> Option<Arc<SentenceView>> {
        self.runtime.views.get(&self.key()?)?.as_ref().ok().cloned()
    }
}

/// Opened runs, computed views and the jobs computing them.
#[derive(Default)]
pub struct ParseRuntime {
    runs: HashMap<String, Result<Arc<GrammarRun>, String>>,
    run_jobs: HashMap<String, Job<GrammarRun>>,
    views: HashMap<ViewKey, Result<Arc<SentenceView>, String>>,
    view_jobs: HashMap<ViewKey, Job<SentenceView>>,
    split_job: Option<Job<(PathBuf, PathBuf, usize, usize)>>,
    /// The run whose NOTA threshold the slider was last set to.
    threshold_of: Option<String>,
    /// The training form was offered the bundled treebank.
    form_filled: bool,
}

const GREEN: Color32 = Color32::from_rgb(40, 150, 60);
const RED: Color32 = Color32::from_rgb(200, 50, 40);
const GOLD: Color32 = Color32::from_rgb(225, 170, 0);
const TERM_BLUE: Color32 = Color32::from_rgb(40, 110, 220);

/// The WSJ sample in the shared corpora, beside the repository.
fn wsj_zip(state: &AppState) -> PathBuf {
    state
        .config
        .root
        .join("../shared/data/ptb-wsj-sample/treebank.zip")
}

pub fn ui(state: &mut AppState, p: &mut ParsePane, ui: &mut egui::Ui) {
    ui.heading("Parse");
    super::papers::weak_cited(
        ui,
        "A grammar read off treebank trees, scored on its chart edges (001 §5): the MECFG \
         normalises each constituent's expansion locally, PT-CFG adds \"none of the above\" \
         terms for wrong chart edges, the CRF-CFG normalises the whole tree. Pick a trained \
         run and a sentence; the tabs show its trees, its chart and the estimator's terms.",
    );
    if let Some((train, test)) = state.treebank.take() {
        p.train = train;
        p.test = test;
    }
    let runs = state.finished_grammar_runs();
    if p.run.as_ref().is_some_and(|r| !runs.contains(r)) {
        p.run = None;
    }
    if p.run.is_none() {
        p.run = runs.last().cloned();
    }
    egui::CollapsingHeader::new("Train a grammar")
        .default_open(runs.is_empty())
        .open(p.form_open.take())
        .show(ui, |ui| train_form(state, p, ui));
    let Some(run_id) = p.run.clone() else {
        ui.label("No finished grammar run yet: train one above.");
        return;
    };
    let ctx = ui.ctx().clone();
    let rt = &mut p.runtime;
    for (k, r) in drain_finished(&mut rt.run_jobs) {
        rt.runs.insert(k, r.map(Arc::new));
    }
    for (k, r) in drain_finished(&mut rt.view_jobs) {
        rt.views.insert(k, r.map(Arc::new));
    }
    if !rt.runs.contains_key(&run_id) && !rt.run_jobs.contains_key(&run_id) {
        if let Some(e) = state.runs.get(&run_id) {
            let dir = e.dir.clone();
            rt.run_jobs.insert(
                run_id.clone(),
                Job::spawn(&ctx, format!("opening grammar run {run_id}"), move || {
                    GrammarRun::open(&dir).map_err(|e| e.to_string())
                }),
            );
        }
    }
    ui.horizontal_wrapped(|ui| {
        let label = |id: &str| state.runs.get(id).map_or(id.to_string(), |e| e.label());
        egui::ComboBox::new("parse-run", "run")
            .selected_text(label(&run_id))
            .show_ui(ui, |ui| {
                for r in &runs {
                    ui.selectable_value(&mut p.run, Some(r.clone()), label(r));
                }
            });
        ui.separator();
        ui.selectable_value(&mut p.set, SentenceSet::Test, "test sentences");
        ui.selectable_value(&mut p.set, SentenceSet::Training, "training sentences");
    });
    let run = match p.runtime.runs.get(&run_id).cloned() {
        Some(Ok(r)) => {
            // A PT-CFG run: the slider starts at the threshold it trained with.
            if p.runtime.threshold_of.as_deref() != Some(run_id.as_str()) {
                p.runtime.threshold_of = Some(run_id.clone());
                if let Some(t) = r.nota_threshold {
                    p.threshold_log10 = ((t.log10() * 2.0).round() / 2.0).clamp(-50.0, 0.0);
                }
            }
            r
        }
        Some(Err(e)) => {
            ui.colored_label(ui.visuals().error_fg_color, e);
            return;
        }
        None => {
            ui.horizontal(|ui| {
                ui.spinner();
                ui.label("reading the run's grammar off its training trees…");
            });
            return;
        }
    };
    let trees: &[Tree] = match p.set {
        SentenceSet::Test => &run.test,
        SentenceSet::Training => &run.data.trees,
    };
    if trees.is_empty() {
        ui.label("This run has no such sentences (no test data).");
        return;
    }
    p.sentence = p.sentence.min(trees.len() - 1);
    ui.horizontal_wrapped(|ui| {
        if ui.button("Previous sentence").clicked() {
            p.sentence = p.sentence.saturating_sub(1);
        }
        let l = ui.label("sentence");
        ui.add(egui::DragValue::new(&mut p.sentence).range(0..=trees.len() - 1))
            .labelled_by(l.id);
        ui.weak(format!("of {}", trees.len()));
        if ui.button("Next sentence").clicked() {
            p.sentence = (p.sentence + 1).min(trees.len() - 1);
        }
        ui.separator();
        ui.selectable_value(&mut p.tab, ParseTab::Trees, "Trees");
        ui.selectable_value(&mut p.tab, ParseTab::Chart, "Chart");
        ui.selectable_value(&mut p.tab, ParseTab::Terms, "Terms");
    });
    let key = p.key().expect("a run is picked");
    if !p.runtime.views.contains_key(&key) && !p.runtime.view_jobs.contains_key(&key) {
        let run = run.clone();
        let tree = trees[p.sentence].clone();
        let thr = key.3 as f64 / 2.0 * std::f64::consts::LN_10;
        p.runtime.view_jobs.insert(
            key.clone(),
            Job::spawn(&ctx, "parsing a sentence", move || {
                Ok(sentence_view(
                    &run.data.grammar,
                    &run.theta,
                    &run.estimator,
                    &tree,
                    thr,
                ))
            }),
        );
    }
    let view = match p.runtime.views.get(&key) {
        Some(Ok(v)) => v.clone(),
        Some(Err(e)) => {
            ui.colored_label(ui.visuals().error_fg_color, e);
            return;
        }
        None => {
            // Keep the last view of this sentence on screen while the threshold's is computed.
            let near = p
                .runtime
                .views
                .iter()
                .find(|(k, v)| k.0 == key.0 && k.1 == key.1 && k.2 == key.2 && v.is_ok())
                .and_then(|(_, v)| v.as_ref().ok().cloned());
            match near {
                Some(v) => v,
                None => {
                    ui.spinner();
                    return;
                }
            }
        }
    };
    ui.label(format!(
        "{}  —  {} · brackets P {:.1} R {:.1} F1 {:.1}{}",
        view.words.join(" "),
        run.estimator.paper_name(),
        view.score.precision(),
        view.score.recall(),
        view.score.f1(),
        if view.parsed {
            ""
        } else {
            " (no parse: a flat tree)"
        }
    ));
    let mut focus = std::mem::take(&mut state.focus);
    let height = ui.available_height();
    egui::ScrollArea::vertical()
        .auto_shrink([false, false])
        .show(ui, |ui| {
            let fit = Fit {
                height,
                top: ui.cursor().top(),
            };
            match p.tab {
                ParseTab::Trees => {
                    let r = trees_tab(state, &run_id, &view, fit, ui);
                    focus.mark(ui, "tree", r);
                }
                ParseTab::Chart => {
                    let r = chart_tab(p, &run, &view, fit, ui);
                    focus.mark(ui, "chart", r);
                }
                ParseTab::Terms => terms_tab(p, &run, &view, fit, ui),
            }
        });
    state.focus = focus;
}

/// The treebank the app bundles (`generate treebank`, sample_data/README.md): train and test.
fn toy_treebank(state: &AppState) -> (String, String) {
    let at = |f: &str| state.config.root.join("sample_data").join(f);
    (
        at("toy-treebank-train.mrg").display().to_string(),
        at("toy-treebank-test.mrg").display().to_string(),
    )
}

fn train_form(state: &mut AppState, p: &mut ParsePane, ui: &mut egui::Ui) {
    ui.weak(
        "Treebank trees in Penn Treebank brackets (.mrg: a file, a folder or a zip). The app \
         bundles a small treebank generated from an English grammar (300 training and 100 test \
         sentences of at most 10 words); the WSJ sample's split (files 0001–0159 train, the \
         ≤ 15-word sentences of 0160–0199 test) is one click away when ../shared/data is \
         present.",
    );
    // Empty fields start on the bundled treebank (once a session: cleared, they stay so).
    if !std::mem::replace(&mut p.runtime.form_filled, true)
        && p.train.trim().is_empty()
        && p.test.trim().is_empty()
    {
        (p.train, p.test) = toy_treebank(state);
    }
    let ctx = ui.ctx().clone();
    if let Some(r) = take_finished(&mut p.runtime.split_job) {
        match r {
            Ok((train, test, n_train, n_test)) => {
                p.train = train.display().to_string();
                p.test = test.display().to_string();
                state.info(format!(
                    "WSJ sample split: {n_train} training trees, {n_test} test trees"
                ));
            }
            Err(e) => state.error(format!("WSJ sample: {e}")),
        }
    }
    egui::Grid::new("parse-form").num_columns(2).show(ui, |ui| {
        let l = ui.label("Train trees");
        ui.add(egui::TextEdit::singleline(&mut p.train).desired_width(320.0))
            .labelled_by(l.id);
        ui.end_row();
        let l = ui.label("Test trees");
        ui.add(egui::TextEdit::singleline(&mut p.test).desired_width(320.0))
            .labelled_by(l.id);
        ui.end_row();
        ui.label("Estimator");
        ui.horizontal_wrapped(|ui| {
            for (name, help) in [
                ("generative", "relative-frequency PCFG (GENERATIVE)"),
                (
                    "memm",
                    "MECFG: each expansion normalised over its parent's rules",
                ),
                (
                    "nota",
                    "PT-CFG: MECFG plus NOTA terms for wrong chart edges",
                ),
                ("ml", "CRF-CFG: the whole tree normalised (inside–outside)"),
            ] {
                ui.selectable_value(&mut p.estimator, name.to_string(), name)
                    .on_hover_text(help);
            }
        });
        ui.end_row();
        ui.label("Features");
        ui.checkbox(&mut p.split_features, "score the split point too");
        ui.end_row();
        let l = ui.label("max iterations");
        ui.add(egui::DragValue::new(&mut p.max_iter).range(1..=100_000))
            .labelled_by(l.id);
        ui.end_row();
    });
    ui.horizontal(|ui| {
        if ui
            .button("Use the bundled treebank")
            .on_hover_text("sample_data/toy-treebank-{train,test}.mrg")
            .clicked()
        {
            (p.train, p.test) = toy_treebank(state);
        }
        let zip = wsj_zip(state);
        let busy = p.runtime.split_job.is_some();
        if ui
            .add_enabled(
                zip.exists() && !busy,
                egui::Button::new("Use the WSJ sample split"),
            )
            .on_hover_text(format!("{} -> workspace/data/wsj/", zip.display()))
            .on_disabled_hover_text("../shared/data/ptb-wsj-sample/treebank.zip is not here")
            .clicked()
        {
            let out = state.config.workspace.join("data").join("wsj");
            p.runtime.split_job = Some(Job::spawn(&ctx, "splitting the WSJ sample", move || {
                crate::experiments::reproduce::parsing::write_wsj_split(&zip, &out)
                    .map_err(|e| e.to_string())
            }));
        }
        if busy {
            ui.spinner();
        }
        if ui.button("Train").clicked() {
            match grammar_spec(p) {
                Ok(spec) => {
                    let id = state.runs.launch(&ctx, spec);
                    state.info(format!("training grammar run {id}"));
                }
                Err(e) => state.error(e),
            }
        }
    });
}

/// The pane's run as knob values of the settings schema: the grammar family with the pane's
/// training and test trees, estimator, split features and iterations, σ² = 10 (the papers'
/// prior), the test trees scored every 10 iterations, and PT-CFG's NOTA edges chosen after 10
/// iterations by the per-sentence count (001: ≈ 160).
pub fn grammar_settings(p: &ParsePane) -> KnobValues {
    use crate::estimators::settings as est;
    use crate::run::{registry, spec};
    let mut s = KnobValues::default();
    s.set(registry::FAMILY.name, "grammar");
    s.set(crate::settings::ESTIMATOR, &p.estimator);
    s.set(
        spec::NAME.name,
        format!(
            "{} grammar{}",
            p.estimator,
            if p.split_features { " + split" } else { "" }
        ),
    );
    s.set(spec::TRAIN.name, p.train.trim());
    s.set(spec::TEST.name, p.test.trim());
    s.set(registry::SPLIT_FEATURES.name, p.split_features);
    s.set(spec::MAX_ITER.name, p.max_iter);
    s.set(spec::SIGMA2.name, 10);
    s.set(spec::EVAL_EVERY.name, 10);
    s.set(est::NOTA_MODE.name, "error-driven");
    s.set(est::NOTA_AFTER.name, 10);
    s.set(est::NOTA_THRESHOLD.name, 1e-3);
    s
}

/// The pane's run spec, through the settings schema as every launch form's.
pub fn grammar_spec(p: &ParsePane) -> Result<crate::run::spec::RunSpec, String> {
    if p.train.trim().is_empty() {
        return Err("Parse: give the training trees (or use the WSJ sample split)".into());
    }
    crate::run::spec::RunSpec::from_settings(&grammar_settings(p)).map_err(|e| e.to_string())
}

fn legend(ui: &mut egui::Ui, items: &[(Color32, &str)]) {
    ui.horizontal_wrapped(|ui| {
        for (c, t) in items {
            let (r, _) = ui.allocate_exact_size(vec2(12.0, 12.0), Sense::hover());
            ui.painter().rect_filled(r, 2.0, *c);
            ui.label(*t);
            ui.add_space(8.0);
        }
    });
}

/// The pane's scrolled area, to size a picture so that it fits below what is above it.
#[derive(Clone, Copy)]
struct Fit {
    /// The visible height of the scrolled area.
    height: f32,
    /// Where its contents begin (moves with the scrolling, as the cursor does).
    top: f32,
}

impl Fit {
    /// The visible height left below the cursor when the area is scrolled to its top.
    fn room(&self, ui: &egui::Ui) -> f32 {
        self.height - (ui.cursor().top() - self.top)
    }
}

/// Draws the gold and the predicted tree, sized so that both fit below the caption; returns
/// where they are.
fn trees_tab(
    state: &AppState,
    run_id: &str,
    view: &SentenceView,
    fit: Fit,
    ui: &mut egui::Ui,
) -> Rect {
    ui.weak(
        "Gold tree above, the run's prediction below. A phrase is green when the other tree has \
         the same bracket (label and words, punctuation aside, as EVALB counts them), red when \
         it does not; grey nodes (part-of-speech tags, the root) are not scored as brackets.",
    );
    legend(
        ui,
        &[
            (GREEN, "bracket in both trees"),
            (RED, "bracket in this tree only"),
            (Color32::GRAY, "not a scored bracket"),
        ],
    );
    let levels = |nodes: &[Node]| nodes.iter().map(|x| x.height).max().unwrap_or(1) as f32;
    // Two headings and each tree's words: about 130 points beside the levels.
    let room = fit.room(ui) - 130.0;
    let row = (room / (levels(&view.gold) + levels(&view.predicted))).clamp(13.0, 24.0);
    let top = ui.strong("Gold tree").rect;
    draw_tree(ui, &view.gold, &view.words, row);
    ui.strong("Predicted tree");
    let bottom = draw_tree(ui, &view.predicted, &view.words, row);
    let drawn = top.union(bottom);
    if let Some(m) = state
        .runs
        .get(run_id)
        .and_then(|e| e.summary.as_ref())
        .and_then(|s| s.test.as_ref())
    {
        ui.separator();
        ui.label(format!(
            "The run on its whole test set: P {:.2} R {:.2} F1 {:.2}, tagging {:.2} % — per label \
             (the most frequent gold labels):",
            m.segments.precision, m.segments.recall, m.segments.f1, m.token_accuracy
        ));
        let mut rows: Vec<_> = m.segment_types.iter().collect();
        rows.sort_by_key(|r| std::cmp::Reverse(r.1.gold));
        egui::Grid::new("parse-labels")
            .striped(true)
            .num_columns(6)
            .show(ui, |ui| {
                for h in ["label", "gold", "predicted", "P", "R", "F1"] {
                    ui.strong(h);
                }
                ui.end_row();
                for (l, prf) in rows.into_iter().take(12) {
                    ui.label(l);
                    ui.label(prf.gold.to_string());
                    ui.label(prf.predicted.to_string());
                    ui.label(format!("{:.1}", prf.precision));
                    ui.label(format!("{:.1}", prf.recall));
                    ui.label(format!("{:.1}", prf.f1));
                    ui.end_row();
                }
            });
    }
    drawn
}

/// Draws a tree: words along the bottom, each node centred over its words at its height,
/// `row` points between heights. A parent is joined to its children by a bar just under it
/// and a drop to each child (a node's height is its distance from the words, so a straight
/// line from a high parent to a low child would pass through the nodes between); returns
/// where it is.
fn draw_tree(ui: &mut egui::Ui, nodes: &[Node], words: &[String], row: f32) -> Rect {
    let n = words.len().max(1);
    let levels = nodes.iter().map(|x| x.height).max().unwrap_or(1);
    let width = ui.available_width().max(200.0);
    let (rect, _) = ui.allocate_exact_size(vec2(width, row * levels as f32 + 44.0), Sense::hover());
    let painter = ui.painter_at(rect);
    let col = (rect.width() - 8.0) / n as f32;
    let font = FontId::proportional((row * 0.5).clamp(9.0, 11.5));
    let x_of = |a: usize, b: usize| rect.left() + 4.0 + col * (a + b) as f32 / 2.0;
    // The words' line; part-of-speech nodes (height 1) sit a row above it.
    let base = rect.bottom() - 26.0;
    let y_of = |h: usize| base - row * h as f32 + 4.0;
    let text = ui.visuals().text_color();
    // Words too wide for their column alternate between two lines.
    let crowded = words.iter().any(|w| {
        painter
            .layout_no_wrap(w.clone(), font.clone(), text)
            .size()
            .x
            > col - 2.0
    });
    for (k, w) in words.iter().enumerate() {
        let dy = if crowded && k % 2 == 1 { 13.0 } else { 0.0 };
        painter.text(
            pos2(x_of(k, k + 1), base + dy),
            Align2::CENTER_CENTER,
            w,
            font.clone(),
            text,
        );
    }
    let edge = Stroke::new(1.0, Color32::GRAY);
    for x in nodes {
        let at = pos2(x_of(x.start, x.end), y_of(x.height));
        if let Some(pa) = x.parent {
            let q = &nodes[pa];
            let from = pos2(x_of(q.start, q.end), y_of(q.height));
            // The bar sits half a row under the parent, above every node of lower height.
            let bar = from.y + row * 0.5;
            painter.line_segment([from, pos2(from.x, bar)], edge);
            painter.line_segment([pos2(from.x, bar), pos2(at.x, bar)], edge);
            painter.line_segment([pos2(at.x, bar), at], edge);
        }
        if x.height == 1 {
            painter.line_segment(
                [at, pos2(at.x, base - 7.0)],
                Stroke::new(1.0, Color32::GRAY),
            );
        }
    }
    for x in nodes {
        let at = pos2(x_of(x.start, x.end), y_of(x.height));
        let fill = match x.matched {
            Some(true) => GREEN,
            Some(false) => RED,
            None => Color32::from_gray(110),
        };
        let galley = painter.layout_no_wrap(x.label.clone(), font.clone(), Color32::WHITE);
        let r = Rect::from_center_size(at, galley.size() + vec2(6.0, 2.0));
        painter.rect_filled(r, 3.0, fill);
        painter.galley(r.min + vec2(3.0, 1.0), galley, Color32::WHITE);
    }
    rect
}

/// Cell rectangles of the chart triangle: length 1 along the bottom, the whole sentence at the
/// top, each cell centred over its words. Cells are `size` (width, height): wider than tall
/// where the pane is wide and short, so that the whole chart fits with its labels.
fn cell_rect(origin: egui::Pos2, size: Vec2, n: usize, i: usize, j: usize) -> Rect {
    let len = j - i;
    let x = origin.x + size.x * (i as f32 + (len - 1) as f32 / 2.0);
    let y = origin.y + size.y * (n - len) as f32;
    Rect::from_min_size(pos2(x, y), size)
}

/// Blue by the best edge's ratio to the best edge of its length: strong at 1, fading into the
/// theme's background at 1e-10 (pale on the light theme, dark on the dark one).
fn ratio_color(log_ratio: f64, dark: bool) -> Color32 {
    let t = (1.0 + log_ratio / (10.0 * std::f64::consts::LN_10)).clamp(0.0, 1.0) as f32;
    let (from, to) = if dark {
        ([45.0, 50.0, 62.0], [70.0, 100.0, 210.0])
    } else {
        ([235.0, 240.0, 250.0], [60.0, 90.0, 190.0])
    };
    let mix = |k: usize| (from[k] + (to[k] - from[k]) * t) as u8;
    Color32::from_rgb(mix(0), mix(1), mix(2))
}

/// The chart with its caption, legend and threshold; returns where the chart is.
fn chart_tab(
    p: &mut ParsePane,
    run: &GrammarRun,
    view: &SentenceView,
    fit: Fit,
    ui: &mut egui::Ui,
) -> Rect {
    // The scale fades into the theme's background: towards white on the light theme, towards
    // black on the dark one.
    let fade = if ui.visuals().dark_mode {
        "strong blue: as good, fading to the background: 1e-10 of it"
    } else {
        "dark blue: as good, pale: 1e-10 of it"
    };
    ui.weak(format!(
        "The CKY chart: a cell is a span of words (start along the bottom, length upwards), \
         coloured by its best edge's score against the best edge of the same length ({fade}), \
         labelled with that edge (@X|<…> are the binarisation's intermediate symbols; hover a \
         cell for all its edges). A gold-outlined cell holds a gold bracket; its label is still \
         the best edge's, which need not be the gold one. PT-CFG gives a NOTA term to each \
         wrong edge whose ratio to the best edge of its length is above the threshold: cells \
         with such edges are outlined red, with their count."
    ));
    if run.estimator.scoring() == crate::grammar::chart::Scoring::Local {
        ui.weak(
            "This run is locally normalised: a word's tag has no score of its own (the tag is \
             chosen by the expansion above it), so the bottom row's cells tie and show any tag.",
        );
    }
    let dark = ui.visuals().dark_mode;
    legend(
        ui,
        &[
            (ratio_color(0.0, dark), "best of its length"),
            (
                ratio_color(-5.0 * std::f64::consts::LN_10, dark),
                "1e-5 of it",
            ),
            (
                ratio_color(-10.0 * std::f64::consts::LN_10, dark),
                "1e-10 or less",
            ),
            (GOLD, "gold bracket"),
            (RED, "wrong edges above the threshold"),
        ],
    );
    ui.horizontal_wrapped(|ui| {
        let l = ui.label("NOTA threshold: ratio at least 10^");
        // Down to 10^-50: a small grammar's run may take every wrong edge (10^-43).
        ui.add(egui::Slider::new(&mut p.threshold_log10, -50.0..=0.0).step_by(0.5))
            .labelled_by(l.id);
    });
    let selected = count_selected(p, view);
    ui.label(format!(
        "At 10^{:.1}: {} wrong edges of this sentence get a NOTA term.{}",
        p.threshold_log10,
        selected,
        match run.nota_threshold {
            Some(t) => format!(
                " This run chose its threshold, 10^{:.2}, to give about {:.0} per training \
                 sentence ({} in all; 001 reports about 160 per sentence).",
                t.log10(),
                run.nota_instances as f64 / run.data.sentences.len().max(1) as f64,
                run.nota_instances
            ),
            None => String::new(),
        }
    ));
    draw_chart(p, view, None, fit, ui)
}

/// The wrong binary edges the slider's threshold selects on this sentence.
fn count_selected(p: &ParsePane, view: &SentenceView) -> usize {
    let thr = p.threshold_log10 * std::f64::consts::LN_10;
    view.cells
        .iter()
        .filter(|c| c.j - c.i >= 2)
        .map(|c| {
            c.edges
                .iter()
                .filter(|e| !e.gold && e.log_ratio >= thr)
                .count()
        })
        .sum()
}

/// Draws the chart, sized to the room below the cursor (or, where that is too little, to the
/// pane: it is then scrolled to); `term` outlines a term's span. Returns where it is.
fn draw_chart(
    p: &ParsePane,
    view: &SentenceView,
    term: Option<((usize, usize), Color32)>,
    fit: Fit,
    ui: &mut egui::Ui,
) -> Rect {
    let n = view.words.len().max(1);
    let nf = n as f32;
    let w = ((ui.available_width() - 10.0) / nf).clamp(14.0, 96.0);
    // The words' line takes 22 points; cells of 14 points still show their colours and
    // outlines (a label from 20).
    let room = fit.room(ui) - 30.0;
    let h_room = if room / nf >= 14.0 {
        room
    } else {
        fit.height - 30.0
    };
    let h = (h_room / nf).clamp(14.0, w.min(56.0));
    let size = vec2(w, h);
    let (rect, resp) = ui.allocate_exact_size(vec2(w * nf + 10.0, h * nf + 22.0), Sense::hover());
    let painter = ui.painter_at(rect);
    let origin = rect.min + vec2(5.0, 0.0);
    let thr = p.threshold_log10 * std::f64::consts::LN_10;
    let font = FontId::proportional((h * 0.6).min(w * 0.2).clamp(9.0, 13.0));
    // What a cell has room for: a label and a count once it is 14 points high and 24 wide
    // (smaller, the label would be too small to read; hover names it). At 20 the chart under
    // lesson 9's NOTA bars lost every label at 1280×800.
    let labelled = h >= 14.0 && w >= 24.0;
    let chars = |px: f32| (w / px) as usize;
    let mut hovered = None;
    for c in &view.cells {
        let r = cell_rect(origin, size, n, c.i, c.j).shrink(1.0);
        let best = c.edges.first();
        let fill = best.map_or(ui.visuals().faint_bg_color, |e| {
            ratio_color(e.log_ratio, ui.visuals().dark_mode)
        });
        painter.rect_filled(r, 2.0, fill);
        // A thin border: pale cells vanished into a white pane, and with them which span a
        // raised cell covers.
        painter.rect_stroke(
            r,
            2.0,
            Stroke::new(0.8, ui.visuals().weak_text_color().gamma_multiply(0.5)),
            egui::StrokeKind::Inside,
        );
        let wrong = if c.j - c.i >= 2 {
            c.edges
                .iter()
                .filter(|e| !e.gold && e.log_ratio >= thr)
                .count()
        } else {
            0
        };
        if c.edges.iter().any(|e| e.gold) {
            painter.rect_stroke(r, 2.0, Stroke::new(2.5, GOLD), egui::StrokeKind::Inside);
        }
        if wrong > 0 {
            painter.rect_stroke(
                r.shrink(3.0),
                1.0,
                Stroke::new(1.5, RED),
                egui::StrokeKind::Inside,
            );
            if labelled && h >= 2.0 * font.size + 8.0 {
                // Below the label (a lower cell shows the red outline alone), on a white chip: red digits on the blue cells could not be read.
                let galley = painter.layout_no_wrap(wrong.to_string(), font.clone(), RED);
                let at = Align2::RIGHT_BOTTOM
                    .anchor_size(r.right_bottom() - vec2(3.0, 2.0), galley.size());
                painter.rect_filled(at.expand(1.5), 2.0, Color32::WHITE);
                painter.galley(at.min, galley, RED);
            }
        }
        if let (Some(e), true) = (best, labelled) {
            let mut label = e.label.clone();
            let max_chars = chars(font.size * 0.62);
            if label.chars().count() > max_chars {
                label = label
                    .chars()
                    .take(max_chars.saturating_sub(1))
                    .collect::<String>()
                    + "…";
            }
            let ink = super::appearance::ink_on(fill);
            painter.text(
                r.center_top() + vec2(0.0, 2.0),
                Align2::CENTER_TOP,
                label,
                font.clone(),
                ink,
            );
        }
        if resp.hover_pos().is_some_and(|h| r.contains(h)) {
            hovered = Some(c);
        }
    }
    if let Some(((i, j), colour)) = term {
        // A white halo: the term's colour alone is lost on the blue cells.
        let r = cell_rect(origin, size, n, i, j);
        painter.rect_stroke(
            r,
            2.0,
            Stroke::new(6.0, Color32::WHITE),
            egui::StrokeKind::Outside,
        );
        painter.rect_stroke(r, 2.0, Stroke::new(3.0, colour), egui::StrokeKind::Outside);
    }
    for (k, w) in view.words.iter().enumerate() {
        let r = cell_rect(origin, size, n, k, k + 1);
        let mut w = w.clone();
        let max_chars = chars(font.size * 0.5);
        if w.chars().count() > max_chars {
            w = w
                .chars()
                .take(max_chars.saturating_sub(1))
                .collect::<String>()
                + "…";
        }
        painter.text(
            pos2(r.center().x, r.bottom() + 10.0),
            Align2::CENTER_CENTER,
            w,
            font.clone(),
            ui.visuals().text_color(),
        );
    }
    if let Some(c) = hovered {
        resp.on_hover_ui(|ui| {
            ui.strong(format!(
                "{}: {}",
                crate::eval::parse_view::words(c.i, c.j),
                view.words[c.i..c.j].join(" ")
            ));
            for e in c.edges.iter().take(12) {
                ui.label(format!(
                    "{:<14} score {:>8.2}  ratio 10^{:.1}{}",
                    e.label,
                    e.score,
                    e.log_ratio / std::f64::consts::LN_10,
                    if e.gold { "  gold" } else { "" }
                ));
            }
            if c.edges.len() > 12 {
                ui.weak(format!("… {} edges in all", c.edges.len()));
            }
        });
    }
    rect
}

fn terms_tab(
    p: &mut ParsePane,
    run: &GrammarRun,
    view: &SentenceView,
    fit: Fit,
    ui: &mut egui::Ui,
) {
    let what = match &run.estimator {
        crate::grammar::train::GrammarEstimator::Generative => {
            ui.label(
                "The generative PCFG has no training terms: its weights are relative frequencies \
                 (log p(B C | A), log p(word | tag)) counted off the training trees.",
            );
            return;
        }
        crate::grammar::train::GrammarEstimator::Memm => {
            "The MECFG's terms (001 §5): one per gold constituent A over i–j, log p(B C | A, i, j) \
             — A and its span clamped, its expansions free — and the root rule. No parsing is \
             needed to train it."
        }
        crate::grammar::train::GrammarEstimator::Nota { .. } => {
            "PT-CFG's terms (001 eq. 6 on the chart): the MECFG's terms with a none-of-the-above \
             outcome in each normaliser, plus a NOTA term for each wrong edge the threshold \
             selects (set it on the Chart tab): log p(NOTA | A, i, j), drawn red."
        }
        crate::grammar::train::GrammarEstimator::Ml => {
            "The CRF-CFG has one term per sentence: log p(tree | x), the gold tree's score minus \
             log Z, which sums over every tree of the chart (inside–outside)."
        }
    };
    ui.weak(what);
    if view.terms.is_empty() {
        ui.label(
            "No terms: the grammar cannot encode this sentence's gold tree (a rule or tag it \
             never saw).",
        );
        return;
    }
    if let Some(kind) = p.jump_to.take() {
        if let Some(k) = view.terms.iter().position(|t| kind.is(&t.term)) {
            p.term = k;
        }
    }
    p.term = p.term.min(view.terms.len() - 1);
    ui.horizontal(|ui| {
        if ui.button("Previous term").clicked() {
            p.term = p.term.saturating_sub(1);
        }
        ui.label(format!("term {} of {}", p.term + 1, view.terms.len()));
        if ui.button("Next term").clicked() {
            p.term = (p.term + 1).min(view.terms.len() - 1);
        }
        ui.separator();
        ui.label("first:");
        for (name, is) in [
            (
                "expansion",
                (|t: &ChartTerm| matches!(t, ChartTerm::Expansion { .. }))
                    as fn(&ChartTerm) -> bool,
            ),
            ("NOTA term", |t: &ChartTerm| {
                matches!(t, ChartTerm::Nota { .. })
            }),
        ] {
            if let Some(k) = view.terms.iter().position(|t| is(&t.term)) {
                if ui.button(name).clicked() {
                    p.term = k;
                }
            }
        }
    });
    let t = &view.terms[p.term];
    let nota = matches!(t.term, ChartTerm::Nota { .. });
    let colour = if nota { RED } else { TERM_BLUE };
    ui.colored_label(colour, egui::RichText::new(&t.title).strong());
    ui.label(format!(
        "log-probability {:.4} (probability {:.4}){}",
        t.value,
        t.value.exp(),
        if t.outcomes > 0 {
            format!(", normalised over {} outcomes", t.outcomes)
        } else {
            String::new()
        }
    ));
    match t.term {
        ChartTerm::Expansion { .. } => {
            ui.weak("Clamped: the parent label and its span. Free: its expansions (the rules A -> B C of the grammar) — the candidates below.");
        }
        ChartTerm::Nota { .. } => {
            ui.weak("A wrong edge: the term asks its normaliser to put its mass on NOTA, pushing every expansion of this edge down.");
        }
        ChartTerm::Root { .. } => {
            ui.weak("The root rule TOP -> X, normalised over the labels seen at the root.");
        }
        ChartTerm::Global => {}
    }
    for (label, prob, gold) in &t.candidates {
        ui.horizontal(|ui| {
            // The probability beside a plain bar: a progress bar's rounded end covered the
            // number of a small one.
            ui.monospace(format!("{prob:.3}"));
            let (r, _) = ui.allocate_exact_size(vec2(220.0, 14.0), Sense::hover());
            let painter = ui.painter_at(r);
            painter.rect_filled(r, 0.0, ui.visuals().extreme_bg_color);
            let fill = if *gold {
                colour
            } else {
                Color32::from_gray(150)
            };
            let w = r.width() * (*prob as f32).clamp(0.0, 1.0);
            painter.rect_filled(Rect::from_min_size(r.min, vec2(w, r.height())), 0.0, fill);
            ui.label(if *gold {
                format!("{label}  (this term's outcome)")
            } else {
                label.clone()
            });
        });
    }
    if let Some(span) = t.span {
        draw_chart(p, view, Some((span, colour)), fit, ui);
    }
    ui.separator();
    ui.strong("Parameter independence (003 Fig. 1 on the chart)");
    ui.weak(match view.groups.as_slice() {
        [one] if one.name.starts_with("every") => {
            "The global model has one term that reads every weight: training cannot be split."
                .to_string()
        }
        groups => format!(
            "A locally normalised term over A reads only A's rules and their feature weights, so \
             the objective splits into one independent problem per parent label: this \
             sentence's {} terms fall into {} groups that share no weight.",
            view.terms.len(),
            groups.len()
        ),
    });
    egui::Grid::new("parse-groups")
        .striped(true)
        .num_columns(3)
        .show(ui, |ui| {
            ui.strong("group");
            ui.strong("terms here");
            ui.strong("weights");
            ui.end_row();
            for grp in view.groups.iter().take(15) {
                ui.label(&grp.name);
                ui.label(grp.terms.to_string());
                ui.label(grp.weights.to_string());
                ui.end_row();
            }
        });
    if view.groups.len() > 15 {
        ui.weak(format!("… {} groups in all", view.groups.len()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimators::{EstimatorSpec, NotaSelection};
    use crate::grammar::parse::GrammarRunOptions;

    /// The spec the pane built by hand before it launched through the settings schema.
    fn by_hand(p: &ParsePane) -> crate::run::spec::RunSpec {
        let estimator = match p.estimator.as_str() {
            "nota" => EstimatorSpec::Nota {
                selection: NotaSelection::ErrorDriven {
                    after: 10,
                    threshold: 1e-3,
                    refresh: 0,
                },
                weight: 1.0,
            },
            name => EstimatorSpec::from_name(name).unwrap(),
        };
        let mut model = GrammarRunOptions::default();
        model.grammar.split = p.split_features;
        crate::run::spec::RunSpec {
            name: Some(format!(
                "{} grammar{}",
                p.estimator,
                if p.split_features { " + split" } else { "" }
            )),
            train: PathBuf::from(p.train.trim()),
            test: (!p.test.trim().is_empty()).then(|| PathBuf::from(p.test.trim())),
            model: crate::run::ModelSpec::Grammar(model),
            estimator,
            optimiser: crate::optim::LbfgsSpec {
                max_iter: p.max_iter,
                ..Default::default()
            },
            prior: crate::optim::Prior { sigma2: Some(10.0) },
            eval_every: 10,
            ..Default::default()
        }
    }

    #[test]
    fn the_settings_give_the_spec_the_pane_built_by_hand() {
        for estimator in ["generative", "memm", "nota", "ml"] {
            for split_features in [false, true] {
                let p = ParsePane {
                    train: " train.mrg ".into(),
                    test: "test.mrg".into(),
                    estimator: estimator.into(),
                    split_features,
                    max_iter: 37,
                    ..Default::default()
                };
                let got = serde_json::to_value(grammar_spec(&p).unwrap()).unwrap();
                let want = serde_json::to_value(by_hand(&p)).unwrap();
                assert_eq!(got, want, "{estimator}, split {split_features}");
            }
        }
    }
}
