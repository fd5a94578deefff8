//! The Parse pane — the grammar family (001 §5). For one sentence under one trained grammar run:
//! the gold tree above the prediction with EVALB's bracket matches; the CKY chart as a triangle
//! (start × length) with each cell's best edge, gold edges outlined and the wrong edges a NOTA
//! threshold would select in red; and the estimator's terms on the sentence, stepped one by one
//! with the outcomes each normalises over. Runs train through the same `RunSpec` and run
//! directories as every family (the form below launches them), so Runs, Curves, Compare and
//! Fields show them too. Everything is computed on background threads (`grammar::view`).

use crate::app::jobs::{drain_finished, take_finished, Job, Transient};
use crate::app::AppState;
use crate::data::treebank::Tree;
use crate::eval::parse_view::{sentence_view, Node, SentenceView};
use crate::grammar::train::ChartTerm;
use crate::run::grammar::GrammarRun;
use crate::settings::KnobValues;
use egui::{vec2, Color32};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

/// Which picture the pane shows.
mod chart;
mod terms;
mod trees;

use chart::chart_tab;
use terms::terms_tab;
use trees::trees_tab;

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
            // To a hundredth of a decade: the slider's notches are the sentence's own ratios.
            (self.threshold_log10 * 100.0).round() as i64,
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
    crate::app::appearance::explanation(ui, "What this pane shows", |ui| {
        crate::app::papers::weak_cited(
            ui,
            "A grammar read off treebank trees, scored on its chart edges (001 §5): the MECFG \
             normalises each constituent's expansion locally, PT-CFG adds \"none of the above\" \
             terms for wrong chart edges, the CRF-CFG normalises the whole tree. Pick a trained \
             run and a sentence; the tabs show its trees, its chart and the estimator's terms.",
        );
    });
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
                    // Down to the hundredth of a decade the views are computed at.
                    p.threshold_log10 = (t.log10() * 100.0).floor() / 100.0;
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
                crate::app::appearance::busy(ui);
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
    let Some(view) = sentence_view_for(p, &run, trees, &ctx, ui) else {
        return;
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
                ParseTab::Terms => {
                    if let Some(r) = terms_tab(p, &run, &view, fit, ui) {
                        focus.mark(ui, "chart", r);
                    }
                }
            }
        });
    state.focus = focus;
}

/// The view of the picked sentence (parsed in the background, at the Chart tab's threshold);
/// while a new threshold's is computed, the last view of the sentence stays on screen. `None`
/// while there is none to show (a spinner or the error is drawn).
fn sentence_view_for(
    p: &mut ParsePane,
    run: &Arc<GrammarRun>,
    trees: &[Tree],
    ctx: &egui::Context,
    ui: &mut egui::Ui,
) -> Option<Arc<SentenceView>> {
    let key = p.key().expect("a run is picked");
    if !p.runtime.views.contains_key(&key) && !p.runtime.view_jobs.contains_key(&key) {
        let run = run.clone();
        let tree = trees[p.sentence].clone();
        let thr = key.3 as f64 / 100.0 * std::f64::consts::LN_10;
        p.runtime.view_jobs.insert(
            key.clone(),
            Job::spawn(ctx, "parsing a sentence", move || {
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
            return None;
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
                    crate::app::appearance::busy(ui);
                    return None;
                }
            }
        }
    };
    Some(view)
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
            crate::app::appearance::busy(ui);
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
            // Each swatch with its name as one widget, which the row wraps whole ("gold" at
            // one line's end, "bracket" at the next's start, read as two entries).
            let weak = ui.visuals().weak_text_color();
            crate::app::appearance::legend_entry(ui, "", 12.0, t, |p, r| {
                let r = egui::Rect::from_center_size(r.center(), vec2(12.0, 12.0));
                // A transparent entry is an outline alone (the chart's empty spans).
                if *c == Color32::TRANSPARENT {
                    p.rect_stroke(
                        r,
                        2.0,
                        egui::Stroke::new(1.0, weak),
                        egui::StrokeKind::Inside,
                    );
                } else {
                    p.rect_filled(r, 2.0, *c);
                }
            });
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
