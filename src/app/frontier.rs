//! The Frontier pane: the points of SCL sweeps (`workspace/sweeps/*/sweep.json`, written by
//! `piecewise-lab sweep --out workspace/sweeps/NAME`) as complexity against quality, coloured by
//! λ, marked by β, with the empirical Pareto frontier and the shaded unachievable region below it
//! (004 Figs. 3, 6, 13, 19). Sweeps are read in a background job; nothing is computed here but
//! the frontier of a few hundred points. *New sweep* starts a small λ × β sweep on the loaded
//! data with the launch form's settings — the same [`run_sweep`] the CLI's `sweep` runs — and
//! its points appear as they finish.

use super::jobs::Job;
use super::jobs::Transient;
use super::AppState;
use crate::estimators::scl::ComponentFamily;
use crate::experiments::charts::{svg_lines, Series};
use crate::experiments::sweep::{
    read_sweeps, run_sweep, SweepData, SweepIndex, SweepRun, SweepSpec,
};
use crate::run::summary::RunSummary;
use egui::Color32;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// The x axis: how much a point cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Complexity {
    /// The paper's FLOPs of one objective evaluation (004 §3.1).
    #[default]
    PaperFlops,
    /// Counted multiply-adds of the whole run.
    Operations,
    Seconds,
}

impl Complexity {
    const ALL: [Complexity; 3] = [Self::PaperFlops, Self::Operations, Self::Seconds];
    fn label(self) -> &'static str {
        match self {
            Self::PaperFlops => "paper FLOPs per evaluation",
            Self::Operations => "counted operations",
            Self::Seconds => "training seconds",
        }
    }
    fn of(self, s: &RunSummary) -> Option<f64> {
        match self {
            Self::PaperFlops => s.paper_flops,
            Self::Operations => Some(s.ops as f64),
            Self::Seconds => Some(s.train_seconds),
        }
    }
}

/// The y axis: how good a point is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Quality {
    /// Held-out negative log-likelihood per item (lower is better).
    #[default]
    TestNll,
    /// Held-out per-token perplexity, exp(NLL / tokens) (004 §8.3).
    TestPerplexity,
    /// Training-set NLL per item (the train contours of 004 Figs. 9, 11).
    TrainNll,
    TrainPerplexity,
    /// Test token accuracy (higher is better).
    TestAccuracy,
    /// ‖θ̂ − θ0‖ for data generated from known parameters (lower is better).
    ParamError,
}

impl Quality {
    const ALL: [Quality; 6] = [
        Self::TestNll,
        Self::TestPerplexity,
        Self::TrainNll,
        Self::TrainPerplexity,
        Self::TestAccuracy,
        Self::ParamError,
    ];
    fn label(self) -> &'static str {
        match self {
            Self::TestNll => "held-out NLL per item",
            Self::TestPerplexity => "held-out perplexity per token",
            Self::TrainNll => "train NLL per item",
            Self::TrainPerplexity => "train perplexity per token",
            Self::TestAccuracy => "test token accuracy %",
            Self::ParamError => "|θ − θ0|",
        }
    }
    /// The train counterpart of a test likelihood and vice versa.
    fn train_test_twin(self) -> Option<Quality> {
        match self {
            Self::TestNll => Some(Self::TrainNll),
            Self::TrainNll => Some(Self::TestNll),
            Self::TestPerplexity => Some(Self::TrainPerplexity),
            Self::TrainPerplexity => Some(Self::TestPerplexity),
            _ => None,
        }
    }
    fn lower_is_better(self) -> bool {
        self != Self::TestAccuracy
    }
    pub fn of(self, s: &RunSummary) -> Option<f64> {
        let t = s.test.as_ref();
        let nll = |m: &crate::eval::Metrics| {
            Some(-m.log_likelihood? / m.log_likelihood_sequences.max(1) as f64)
        };
        match self {
            Self::TestNll => t.and_then(nll),
            Self::TestPerplexity => t.and_then(|m| m.perplexity()),
            Self::TrainNll => s.train.as_ref().and_then(nll),
            Self::TrainPerplexity => s.train.as_ref().and_then(|m| m.perplexity()),
            Self::TestAccuracy => t.map(|m| m.token_accuracy),
            Self::ParamError => s.param_error,
        }
    }
}

#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct FrontierPane {
    /// The sweep shown (its directory name).
    pub sweep: Option<String>,
    pub x: Complexity,
    pub y: Quality,
    pub log_x: bool,
    /// The *New sweep* form.
    pub form: SweepForm,
    /// Opens (or closes) *New sweep* at the next frame (a lesson's step).
    #[serde(skip)]
    pub form_open: Option<bool>,
    /// The sweeps read from the workspace (not saved with the layout).
    #[serde(skip)]
    pub runtime: Transient<FrontierRuntime>,
}

/// The sweeps a Frontier pane shows, and the job reading them.
#[derive(Default)]
pub struct FrontierRuntime {
    /// An Arc: a frame holds the sweeps without copying them.
    pub sweeps: Option<std::sync::Arc<Vec<SweepData>>>,
    job: Option<Job<Vec<SweepData>>>,
    /// [`AppState::sweep_events`] when the sweeps were last read: a point finished since, so
    /// read them again.
    seen_events: usize,
}

/// A small λ × β sweep to start from the pane: `1:(1−β)*LOW + λ:β*HIGH` at every point (004
/// §8.3), on the loaded data with the launch form's knobs.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct SweepForm {
    /// The sweep's directory under `workspace/sweeps/`.
    pub name: String,
    /// `LOW/HIGH`, e.g. `pl1/fl`.
    pub families: String,
    pub lambdas: String,
    pub betas: String,
    /// Points trained at once.
    pub jobs: usize,
    /// The point whose selection (004 Fig. 1) is previewed.
    pub preview_lambda: f64,
    pub preview_beta: f64,
}

impl Default for SweepForm {
    fn default() -> Self {
        SweepForm {
            name: "sweep".into(),
            families: "pl1/fl".into(),
            lambdas: "0.1, 0.5, 1".into(),
            betas: "0.5, 1".into(),
            jobs: 2,
            preview_lambda: 0.5,
            preview_beta: 0.5,
        }
    }
}

impl SweepForm {
    /// The sweep this form describes around the base run `base` (its estimator is replaced).
    pub fn spec(&self, base: crate::run::spec::RunSpec) -> crate::error::Result<SweepSpec> {
        use crate::error::Error;
        let (low, high) = self
            .families
            .split_once('/')
            .ok_or_else(|| Error::invalid("families are LOW/HIGH, e.g. pl1/fl"))?;
        let spec = SweepSpec {
            base,
            low: ComponentFamily::parse(low.trim())?,
            high: ComponentFamily::parse(high.trim())?,
            lambdas: crate::util::parse_list(&self.lambdas, "λ")?,
            betas: crate::util::parse_list(&self.betas, "β")?,
            sigma2s: vec![],
            jobs: self.jobs.max(1),
        };
        spec.check()?;
        Ok(spec)
    }

    /// Whether `name` is a usable directory name.
    fn name_ok(&self) -> bool {
        !self.name.is_empty()
            && self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            && !self.name.starts_with('.')
    }
}

/// A sweep started from the GUI, running on a background thread.
pub struct RunningSweep {
    pub name: String,
    pub total: usize,
    /// Points finished (or found finished) so far.
    pub done: Arc<AtomicUsize>,
    cancel: Arc<AtomicBool>,
    /// `None` while the sweep waits for its turn in the run queue.
    job: Option<Job<SweepIndex>>,
    /// What the job runs, kept until its turn comes.
    spec: SweepSpec,
    dir: PathBuf,
    ctx: egui::Context,
}

impl RunningSweep {
    /// Training its points (not waiting for its turn).
    pub fn started(&self) -> bool {
        self.job.is_some()
    }
}

/// Starts the sweep of `form` on the launch form `base` (its data and knobs); the sweep runs
/// in `workspace/sweeps/NAME` and resumes there when started again.
pub fn start_sweep(
    state: &mut AppState,
    ctx: &egui::Context,
    form: &SweepForm,
    base: &super::launch::LaunchForm,
) -> Result<(), String> {
    if let Some(s) = &state.sweep {
        return Err(format!(
            "sweep {} is running: wait for it or cancel it",
            s.name
        ));
    }
    if !form.name_ok() {
        return Err(format!(
            "sweep name {:?}: letters, digits, '-', '_' and '.' only",
            form.name
        ));
    }
    let mut base = base.clone();
    base.set_estimator("scl");
    let spec = form.spec(base.to_spec()?).map_err(|e| e.to_string())?;
    let dir = state.config.workspace.join("sweeps").join(&form.name);
    let total = spec.points().len();
    state.runs.queue_sweep(ctx, &form.name)?;
    state.info(format!(
        "queued sweep {} ({total} points, {} at once): it starts when no run trains",
        form.name,
        form.jobs.max(1)
    ));
    state.sweep = Some(RunningSweep {
        name: form.name.clone(),
        total,
        done: Arc::new(AtomicUsize::new(0)),
        cancel: Arc::new(AtomicBool::new(false)),
        job: None,
        spec,
        dir,
        ctx: ctx.clone(),
    });
    poll_sweep(state);
    Ok(())
}

/// Cancels the sweep: a waiting one leaves the queue; a training one stops after the points
/// being trained (started again, it resumes).
pub fn cancel_sweep(state: &mut AppState) {
    let Some(s) = &state.sweep else { return };
    if s.started() {
        s.cancel.store(true, Ordering::Relaxed);
    } else {
        let name = s.name.clone();
        state.sweep = None;
        state.runs.sweep_ended();
        state.info(format!("sweep {name} cancelled before its turn came"));
    }
}

/// Each frame: counts the running sweep's finished points into [`AppState::sweep_events`] (so
/// Frontier panes read them) and collects the sweep when it ends.
pub fn poll_sweep(state: &mut AppState) {
    let Some(s) = &mut state.sweep else { return };
    if s.job.is_none() {
        // Its turn in the run queue: start it.
        if state.runs.take_sweep_turn().is_none() {
            return;
        }
        let (spec, dir) = (s.spec.clone(), s.dir.clone());
        let (d, c, repaint) = (s.done.clone(), s.cancel.clone(), s.ctx.clone());
        s.job = Some(Job::spawn(&s.ctx, format!("sweep {}", s.name), move || {
            run_sweep(&spec, &dir, &c, &|_| {
                d.fetch_add(1, Ordering::Relaxed);
                repaint.request_repaint();
            })
            .map_err(|e| e.to_string())
        }));
        let name = s.name.clone();
        state.info(format!("started sweep {name}"));
        return;
    }
    let done = s.done.load(Ordering::Relaxed);
    let ended = s.job.as_mut().and_then(|j| j.poll());
    state.sweep_events = state.sweep_events.max(done);
    if let Some(r) = ended {
        let (name, total) = (s.name.clone(), s.total);
        state.sweep = None;
        state.runs.sweep_ended();
        state.sweep_events += 1;
        match r {
            Ok(idx) => {
                let finished = idx.points.iter().filter(|p| p.status == "finished").count();
                state.info(format!(
                    "sweep {name}: {finished} of {total} points finished"
                ));
            }
            Err(e) => state.error(format!("sweep {name}: {e}")),
        }
    }
}

pub use crate::experiments::sweep::pareto;

/// λ from blue (0) to red (1).
fn lambda_color(l: f64) -> Color32 {
    // Deep enough to read on white (at value 0.95 the greens were pastel on a projector).
    egui::ecolor::Hsva::new(0.66 * (1.0 - l.clamp(0.0, 1.0) as f32), 0.9, 0.8, 1.0).into()
}

/// The colour key for λ (D19): a strip from blue (0) to red (1) with a tick at each λ the
/// sweep ran.
fn lambda_bar(ui: &mut egui::Ui, lambdas: &[f64]) {
    ui.weak("λ  0");
    let (rect, resp) = ui.allocate_exact_size(egui::vec2(140.0, 14.0), egui::Sense::hover());
    super::appearance::gradient_strip(ui.painter(), rect.shrink2(egui::vec2(0.0, 3.0)), 28, |t| {
        lambda_color(f64::from(t))
    });
    let ink = ui.visuals().text_color();
    for &l in lambdas {
        let x = rect.left() + rect.width() * l.clamp(0.0, 1.0) as f32;
        ui.painter().line_segment(
            [egui::pos2(x, rect.top()), egui::pos2(x, rect.bottom())],
            egui::Stroke::new(1.5, ink),
        );
    }
    ui.weak("1");
    resp.on_hover_text(format!(
        "λ of the higher family, from blue (0) to red (1); ticks: the λ values of this sweep ({})",
        lambdas
            .iter()
            .map(|l| format!("{l}"))
            .collect::<Vec<_>>()
            .join(", ")
    ));
}

const SHAPES: [egui_plot::MarkerShape; 6] = [
    egui_plot::MarkerShape::Circle,
    egui_plot::MarkerShape::Square,
    egui_plot::MarkerShape::Diamond,
    egui_plot::MarkerShape::Up,
    egui_plot::MarkerShape::Down,
    egui_plot::MarkerShape::Cross,
];

pub fn ui(state: &mut AppState, p: &mut FrontierPane, ui: &mut egui::Ui) {
    egui::ScrollArea::vertical()
        .id_salt("frontier-scroll")
        .auto_shrink([false, false])
        .show(ui, |ui| pane(state, p, ui));
}

fn pane(state: &mut AppState, p: &mut FrontierPane, ui: &mut egui::Ui) {
    ui.heading("Frontier");
    ui.weak(
        "Each point is one SCL run of a sweep: how much it cost (x) against how good it is (y). \
         The grey line joins the points nothing beats on both axes (the empirical Pareto \
         frontier); the shaded region below it is what no policy of the sweep reached.",
    );
    // An Arc: the frame holds the sweeps without copying them.
    let sweeps = poll_sweeps(state, &mut p.runtime, ui);
    launcher(state, p, sweeps.as_ref().is_some_and(|s| s.is_empty()), ui);
    let Some(sweeps) = sweeps else {
        ui.spinner();
        return;
    };
    if sweeps.is_empty() {
        ui.weak(
            "No sweeps yet: start one above, or run `piecewise-lab sweep … --out \
             workspace/sweeps/NAME`.",
        );
        return;
    }
    // The sweep shown: the one chosen, unless it is gone (a sweep just started counts: its
    // index appears once its first point is read).
    let running = state.sweep.as_ref().map(|s| &s.name);
    // Only a list read after the last sweep event may say a sweep is gone (a sweep that just
    // finished is missing from a list read before it started).
    let fresh = p.runtime.job.is_none() && p.runtime.seen_events == state.sweep_events;
    if p.sweep
        .as_ref()
        .is_none_or(|s| fresh && !sweeps.iter().any(|w| &w.name == s) && Some(s) != running)
    {
        p.sweep = Some(sweeps[0].name.clone());
    }
    let Some(sweep) = sweeps.iter().find(|s| Some(&s.name) == p.sweep.as_ref()) else {
        ui.horizontal(|ui| {
            ui.spinner();
            ui.weak("waiting for the sweep's first point…");
        });
        return;
    };
    let (save_png, save_svg, save_csv) = toolbar(ui, p, &sweeps);
    let pts: Vec<(&SweepRun, [f64; 2])> = sweep
        .runs
        .iter()
        .filter_map(|r| Some((r, [p.x.of(&r.summary)?, p.y.of(&r.summary)?])))
        .collect();
    let front = pareto(
        &pts.iter().map(|(_, q)| *q).collect::<Vec<_>>(),
        p.y.lower_is_better(),
    );
    ui.label(format!(
        "{} ({}): {} of {} points finished · {} on the frontier · colour: λ of the higher family (the bar below) · marker: β",
        sweep.name,
        sweep.families,
        sweep.runs.len(),
        sweep.total,
        front.len()
    ));
    let mut betas: Vec<f64> = pts.iter().map(|(r, _)| r.beta).collect();
    betas.sort_by(f64::total_cmp);
    betas.dedup();
    let mut lambdas: Vec<f64> = pts.iter().map(|(r, _)| r.lambda).collect();
    lambdas.sort_by(f64::total_cmp);
    lambdas.dedup();
    ui.horizontal_wrapped(|ui| {
        lambda_bar(ui, &lambdas);
        ui.separator();
        for (i, b) in betas.iter().enumerate() {
            let shape = [
                "circle",
                "square",
                "diamond",
                "triangle up",
                "triangle down",
                "cross",
            ];
            let fill = if i == 0 { "filled " } else { "hollow " };
            ui.weak(format!("{fill}{}: β = {b}", shape[i % 6]));
        }
    });
    let scope = frontier_plot(ui, p, &pts, &front, &betas);
    state.focus.mark(ui, "frontier-plot", scope.response.rect);
    super::plots::plot_hint(ui);
    let rect = scope.response.rect;
    hover_and_open(state, p, sweep, &pts, &scope);
    // Train and test side by side for likelihoods (004 Figs. 5, 9, 11).
    ui.horizontal_top(|ui| {
        heat_map(ui, sweep, p.y);
        if let Some(other) = p.y.train_test_twin() {
            ui.separator();
            heat_map(ui, sweep, other);
        }
    });
    ui.weak(
        "Heat maps: each cell is one point (rows λ, columns β); green is the best value of the \
         map, red the worst, the colours scaled between them; – a point not finished.",
    );
    let stem = format!("frontier-{}", sweep.name);
    if save_png {
        state.request_png(rect, &stem);
    }
    if save_svg {
        let mut series: Vec<Series> = pts
            .iter()
            .map(|(r, q)| Series {
                name: format!("λ={} β={}", r.lambda, r.beta),
                color: super::rgb(lambda_color(r.lambda)),
                points: vec![*q],
                markers: true,
            })
            .collect();
        series.push(Series {
            name: "Pareto frontier".into(),
            color: super::rgb(Color32::GRAY),
            points: front.clone(),
            markers: false,
        });
        let svg = svg_lines(
            &format!("{} ({})", sweep.name, sweep.families),
            p.x.label(),
            p.y.label(),
            &series,
        );
        state.save_svg(&stem, &svg);
    }
    if save_csv {
        let header: Vec<String> = ["lambda", "beta", "sigma2", "x", "y", "frontier", "run"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let rows: Vec<Vec<String>> = pts
            .iter()
            .map(|(r, q)| {
                vec![
                    r.lambda.to_string(),
                    r.beta.to_string(),
                    r.sigma2.map(|s| s.to_string()).unwrap_or_default(),
                    q[0].to_string(),
                    q[1].to_string(),
                    front.contains(q).to_string(),
                    r.dir.clone(),
                ]
            })
            .collect();
        state.save_csv(&stem, &header, &rows);
    }
}

/// *New sweep*: the form, the Fig. 1 preview of one point's policy, and the running sweep's
/// progress. Open at first when there is no sweep yet.
fn launcher(state: &mut AppState, p: &mut FrontierPane, none_yet: bool, ui: &mut egui::Ui) {
    let ctx = ui.ctx().clone();
    if let Some(s) = &state.sweep {
        let done = s.done.load(Ordering::Relaxed).min(s.total);
        let mut cancel = false;
        ui.horizontal(|ui| {
            ui.spinner();
            if s.started() {
                ui.add(
                    egui::ProgressBar::new(done as f32 / s.total.max(1) as f32)
                        .desired_width(260.0)
                        .text(format!("sweep {}: {done} of {} points", s.name, s.total)),
                );
            } else {
                let ahead =
                    state.runs.sweep_position().map_or(0, |k| k - 1) + state.runs.started_count();
                ui.label(format!(
                    "sweep {}: waiting for {ahead} run(s) ahead of it in the queue (one \
                     thing trains at a time, so seconds compare)",
                    s.name
                ));
            }
            cancel = ui
                .button("Cancel sweep")
                .on_hover_text("Stops after the points being trained; starting it again resumes")
                .clicked();
        });
        if cancel {
            cancel_sweep(state);
        }
    }
    egui::CollapsingHeader::new("New sweep")
        .id_salt("frontier-new-sweep")
        .default_open(none_yet)
        .open(p.form_open.take())
        .show(ui, |ui| {
            ui.weak(
                "Every point trains SCL with the policy 1:(1−β)·LOW + λ:β·HIGH (004 §8.3): the \
                 lower family always, with weight 1 − β; the higher one with probability λ and \
                 weight β. It runs on the loaded data with the Runs pane's settings (iterations, \
                 prior, threads).",
            );
            let f = &mut p.form;
            egui::Grid::new("sweep-form").num_columns(2).show(ui, |ui| {
                let row = |ui: &mut egui::Ui, label: &str, v: &mut String, hint: &str| {
                    let l = ui.label(label);
                    ui.add(
                        egui::TextEdit::singleline(v)
                            .desired_width(180.0)
                            .hint_text(hint),
                    )
                    .labelled_by(l.id);
                    ui.end_row();
                };
                row(ui, "Name", &mut f.name, "a folder under workspace/sweeps");
                row(
                    ui,
                    "Families LOW/HIGH",
                    &mut f.families,
                    "pl1/fl, pl1/pl2, …",
                );
                row(ui, "λ values", &mut f.lambdas, "0.1, 0.5, 1");
                row(ui, "β values", &mut f.betas, "0.5, 1");
                let l = ui.label("Points at once");
                ui.add(egui::DragValue::new(&mut f.jobs).range(1..=16))
                    .labelled_by(l.id);
                ui.end_row();
            });
            let base = state.data.as_ref().map(|d| {
                let mut b = state.launch.clone();
                b.use_data(&d.source);
                b
            });
            let spec = base
                .as_ref()
                .ok_or_else(|| "load a data set first (Data pane)".to_string())
                .and_then(|b| {
                    let mut b = b.clone();
                    b.set_estimator("scl");
                    b.to_spec()
                })
                .and_then(|b| p.form.spec(b).map_err(|e| e.to_string()));
            ui.horizontal_wrapped(|ui| {
                let ok = spec.is_ok() && state.sweep.is_none();
                let points = spec.as_ref().map_or(0, |s| s.points().len());
                if ui
                    .add_enabled(ok, egui::Button::new("Start sweep"))
                    .on_hover_text(
                        "Train every point in the background; a sweep of this name resumes",
                    )
                    .clicked()
                {
                    let base = base.clone().expect("checked");
                    if let Err(e) = start_sweep(state, &ctx, &p.form, &base) {
                        state.error(format!("cannot start the sweep: {e}"));
                    } else {
                        p.sweep = Some(p.form.name.clone());
                    }
                }
                match &spec {
                    Ok(_) => ui.weak(format!(
                        "{points} points into {}",
                        state
                            .config
                            .workspace
                            .join("sweeps")
                            .join(&p.form.name)
                            .display()
                    )),
                    Err(e) => ui.colored_label(ui.visuals().warn_fg_color, e),
                };
            });
            if let Ok(spec) = &spec {
                let f = &mut p.form;
                ui.horizontal_wrapped(|ui| {
                    ui.label("Preview the selection of the point");
                    pick_value(ui, "λ", &spec.lambdas, &mut f.preview_lambda);
                    pick_value(ui, "β", &spec.betas, &mut f.preview_beta);
                });
                match spec.try_policy(f.preview_lambda, f.preview_beta) {
                    Ok(policy) => {
                        ui.monospace(format!("policy: {policy}"));
                        super::policy_view::preview(state, &policy, ui);
                    }
                    Err(e) => {
                        ui.colored_label(ui.visuals().warn_fg_color, e.to_string());
                    }
                }
            }
        });
}

/// A combo box over a sweep's values (the current one kept when it is among them).
fn pick_value(ui: &mut egui::Ui, label: &str, values: &[f64], v: &mut f64) {
    if !values.contains(v) {
        *v = values[values.len() / 2];
    }
    egui::ComboBox::new(("sweep-preview", label), label)
        .selected_text(v.to_string())
        .show_ui(ui, |ui| {
            for x in values {
                ui.selectable_value(v, *x, x.to_string());
            }
        });
}

/// The sweeps under the workspace, read in the background (again on *Reload sweeps*).
fn poll_sweeps(
    state: &mut AppState,
    rt: &mut FrontierRuntime,
    ui: &mut egui::Ui,
) -> Option<std::sync::Arc<Vec<SweepData>>> {
    let ctx = ui.ctx().clone();
    if let Some(job) = &mut rt.job {
        if let Some(r) = job.poll() {
            rt.job = None;
            match r {
                Ok(s) => rt.sweeps = Some(std::sync::Arc::new(s)),
                Err(e) => state.error(format!("could not read the sweeps: {e}")),
            }
        }
    }
    let reload = ui
        .horizontal(|ui| {
            let r = ui.button("Reload sweeps").clicked();
            ui.weak(format!(
                "sweeps in {} (piecewise-lab sweep --out …/sweeps/NAME)",
                state.config.workspace.join("sweeps").display()
            ));
            r
        })
        .inner;
    let fresh = rt.seen_events != state.sweep_events;
    if (rt.sweeps.is_none() || reload || fresh) && rt.job.is_none() {
        rt.seen_events = state.sweep_events;
        let ws = state.config.workspace.clone();
        rt.job = Some(Job::spawn(&ctx, "reading sweeps", move || {
            Ok(read_sweeps(&ws))
        }));
    }
    rt.sweeps.clone()
}

/// The sweep, axes and export buttons; returns which exports were asked for.
fn toolbar(ui: &mut egui::Ui, p: &mut FrontierPane, sweeps: &[SweepData]) -> (bool, bool, bool) {
    let (mut save_png, mut save_svg, mut save_csv) = (false, false, false);
    let visible = super::plots::visible_width(ui, 200.0);
    ui.horizontal_wrapped(|ui| {
        // Wrapped at the visible edge, not the (wider) content's.
        ui.set_max_width(visible);
        egui::ComboBox::new("frontier-sweep", "sweep")
            .selected_text(p.sweep.clone().unwrap_or_default())
            .show_ui(ui, |ui| {
                for s in sweeps.iter() {
                    ui.selectable_value(&mut p.sweep, Some(s.name.clone()), &s.name);
                }
            });
        egui::ComboBox::new("frontier-x", "complexity")
            .selected_text(p.x.label())
            .show_ui(ui, |ui| {
                for c in Complexity::ALL {
                    ui.selectable_value(&mut p.x, c, c.label());
                }
            });
        egui::ComboBox::new("frontier-y", "quality")
            .selected_text(p.y.label())
            .show_ui(ui, |ui| {
                for q in Quality::ALL {
                    ui.selectable_value(&mut p.y, q, q.label());
                }
            });
        ui.checkbox(&mut p.log_x, "log x");
        save_png = ui.button("Save frontier PNG").clicked();
        save_svg = ui.button("Save frontier SVG").clicked();
        save_csv = ui.button("Save frontier CSV").clicked();
    });
    (save_png, save_svg, save_csv)
}

/// The frontier plot: the points coloured by λ and marked by β, the Pareto frontier and the
/// shaded unachievable region.
fn frontier_plot(
    ui: &mut egui::Ui,
    p: &FrontierPane,
    pts: &[(&SweepRun, [f64; 2])],
    front: &[[f64; 2]],
    betas: &[f64],
) -> egui::InnerResponse<egui_plot::PlotResponse<()>> {
    let xf = |x: f64| if p.log_x { x.max(1e-300).log10() } else { x };
    let (lx, better_low) = (p.log_x, p.y.lower_is_better());
    let scope = ui.scope(|ui| {
        // No wider than what is visible of the pane: a wide table below (the heat maps, the
        // Fig. 1 preview) widens the scroll area's content, and the plot's dearest points
        // were cut off at 1280×800.
        let visible = super::plots::visible_width(ui, 200.0);
        let mut plot = super::plots::pane_plot("frontier-plot")
            .width(ui.available_width().min(visible))
            .height(((ui.available_height() - 190.0) * 0.98).max(240.0))
            .x_axis_label(if lx {
                format!("{} (log)", p.x.label())
            } else {
                p.x.label().to_string()
            })
            .y_axis_label(p.y.label());
        if lx {
            plot = plot.x_grid_spacer(super::plots::log_grid);
        }
        // One point, or points on one line, leave an axis without extent, which egui_plot
        // rejects (a sweep's first point): pad each axis around its points.
        for axis in 0..2 {
            let vals: Vec<f64> = pts
                .iter()
                .map(|(_, q)| if axis == 0 { xf(q[0]) } else { q[1] })
                .filter(|v| v.is_finite())
                .collect();
            let (lo, hi) = vals
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
                    (a.min(v), b.max(v))
                });
            if lo.is_finite() && hi - lo <= 1e-9 * lo.abs().max(1.0) {
                let pad = (lo.abs() * 0.05).max(1e-3);
                plot = if axis == 0 {
                    plot.include_x(lo - pad).include_x(hi + pad)
                } else {
                    plot.include_y(lo - pad).include_y(hi + pad)
                };
            }
        }
        plot = plot.x_axis_formatter(move |m, r| super::plots::axis_text(lx, m.value, r));
        plot.show(ui, |plot| {
            if !front.is_empty() {
                // The unachievable region: below (or above, for accuracy) the frontier's steps.
                let ys: Vec<f64> = pts.iter().map(|(_, q)| q[1]).collect();
                let (lo, hi) = ys
                    .iter()
                    .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &y| {
                        (a.min(y), b.max(y))
                    });
                let pad = (hi - lo).max(1e-9) * 0.15;
                let edge = if better_low { lo - pad } else { hi + pad };
                let x_end = pts
                    .iter()
                    .map(|(_, q)| xf(q[0]))
                    .fold(f64::NEG_INFINITY, f64::max);
                let mut poly = vec![[xf(front[0][0]), edge]];
                for (i, f) in front.iter().enumerate() {
                    poly.push([xf(f[0]), f[1]]);
                    let next_x = front.get(i + 1).map_or(x_end, |n| xf(n[0]));
                    poly.push([next_x, f[1]]);
                }
                poly.push([x_end, edge]);
                plot.polygon(
                    egui_plot::Polygon::new("unachievable", poly)
                        .fill_color(Color32::from_gray(120).gamma_multiply(0.25))
                        .stroke(egui::Stroke::NONE),
                );
                let line: Vec<[f64; 2]> = front.iter().map(|f| [xf(f[0]), f[1]]).collect();
                plot.line(
                    egui_plot::Line::new("Pareto frontier", line)
                        .color(Color32::GRAY)
                        .width(1.5),
                );
            }
            for (r, q) in pts {
                let k = betas.iter().position(|b| *b == r.beta).unwrap_or(0);
                let shape = SHAPES[k % SHAPES.len()];
                let name = match r.sigma2 {
                    Some(s) => format!("λ={} β={} σ²={s} ({})", r.lambda, r.beta, r.dir),
                    None => format!("λ={} β={} ({})", r.lambda, r.beta, r.dir),
                };
                plot.points(
                    egui_plot::Points::new(name, vec![[xf(q[0]), q[1]]])
                        .id(("frontier-point", &r.dir))
                        .shape(shape)
                        // Later β values hollow and larger: points of one cost (a λ's two β)
                        // that coincide stay visible, one around the other.
                        .radius(6.0 + 3.0 * k.min(3) as f32)
                        .filled(k == 0)
                        .color(lambda_color(r.lambda)),
                );
            }
        })
    });
    scope
}

/// Hover names the run; a click opens it in Compare beside the runs already ticked.
fn hover_and_open(
    state: &mut AppState,
    p: &FrontierPane,
    sweep: &SweepData,
    pts: &[(&SweepRun, [f64; 2])],
    scope: &egui::InnerResponse<egui_plot::PlotResponse<()>>,
) {
    let hovered = scope.inner.hovered_plot_item.and_then(|id| {
        pts.iter()
            .find(|(r, _)| egui_plot::ItemId::new(("frontier-point", &r.dir)) == id)
    });
    if let Some((r, q)) = hovered {
        let resp = scope.inner.response.clone().on_hover_ui_at_pointer(|ui| {
            ui.strong(format!("λ = {} · β = {}", r.lambda, r.beta));
            if let Some(s) = r.sigma2 {
                ui.label(format!("σ² = {s}"));
            }
            ui.label(format!("{}: {}", p.x.label(), number(q[0])));
            ui.label(format!("{}: {}", p.y.label(), number(q[1])));
            ui.label(format!(
                "{} iterations · {:.1} s",
                r.summary.iterations, r.summary.train_seconds
            ));
            ui.weak(format!("{} — click to open in Compare", r.dir));
        });
        if resp.clicked() {
            let dir = state
                .config
                .workspace
                .join("sweeps")
                .join(&sweep.name)
                .join(&r.dir);
            let label = format!("{}/{}", sweep.name, r.dir.trim_start_matches("runs/"));
            match state.runs.adopt(&dir, &label) {
                Ok(id) => {
                    state.selected.insert(id.clone());
                    state.command(super::AppCommand::Focus(super::PaneKind::Compare));
                    state.info(format!(
                        "{id} opened in Compare beside the {} other ticked run(s)",
                        state.selected.len() - 1
                    ));
                }
                Err(e) => state.error(format!("could not open {}: {e}", dir.display())),
            }
        }
    }
}

/// 4 significant digits, in e-notation when large.
fn number(x: f64) -> String {
    if x.abs() >= 1e5 {
        format!("{x:.4e}")
    } else {
        format!("{x:.4}")
    }
}

/// The quality over (β, λ) as a table of coloured cells (004 Figs. 5, 9, 11), one per σ².
fn heat_map(ui: &mut egui::Ui, sweep: &SweepData, q: Quality) {
    let mut sigmas: Vec<Option<f64>> = sweep.runs.iter().map(|r| r.sigma2).collect();
    sigmas.sort_by(|a, b| a.unwrap_or(0.0).total_cmp(&b.unwrap_or(0.0)));
    sigmas.dedup();
    let mut lambdas: Vec<f64> = sweep.runs.iter().map(|r| r.lambda).collect();
    let mut betas: Vec<f64> = sweep.runs.iter().map(|r| r.beta).collect();
    for v in [&mut lambdas, &mut betas] {
        v.sort_by(f64::total_cmp);
        v.dedup();
    }
    let vals: Vec<f64> = sweep.runs.iter().filter_map(|r| q.of(&r.summary)).collect();
    let (lo, hi) = vals
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
            (a.min(v), b.max(v))
        });
    // Good is green, bad is red, whichever way the metric points.
    let color = |v: f64| -> Color32 {
        let t = if hi > lo {
            ((v - lo) / (hi - lo)) as f32
        } else {
            0.5
        };
        let good = if q.lower_is_better() { 1.0 - t } else { t };
        egui::ecolor::Hsva::new(0.33 * good, 0.7, 0.45, 1.0).into()
    };
    // What the colours mean, under each map's title.
    let key = |ui: &mut egui::Ui| {
        ui.horizontal(|ui| {
            ui.weak("colour:");
            for (t, what) in [(0.0, "worst"), (0.5, "middle"), (1.0, "best")] {
                let v = if q.lower_is_better() {
                    hi - t * (hi - lo)
                } else {
                    lo + t * (hi - lo)
                };
                egui::Frame::new()
                    .fill(color(v))
                    .inner_margin(egui::Margin::symmetric(4, 1))
                    .show(ui, |ui| {
                        ui.label(egui::RichText::new(what).small().color(Color32::WHITE));
                    });
            }
            ui.weak("of this sweep");
        });
    };
    ui.horizontal_wrapped(|ui| {
        for s in sigmas {
            ui.vertical(|ui| {
                ui.strong(match s {
                    Some(s) => format!("{} over (β, λ), σ² = {s}", q.label()),
                    None => format!("{} over (β, λ)", q.label()),
                });
                key(ui);
                // Body-sized numbers in cells of a common width: small print on 20-point
                // cells could not be read from the back of a room.
                egui::Grid::new(("frontier-heat", s.map(f64::to_bits), q.label()))
                    .spacing(egui::vec2(2.0, 2.0))
                    .min_col_width(48.0)
                    .show(ui, |ui| {
                        ui.label("λ \\ β");
                        for b in &betas {
                            ui.label(format!("β = {b}"));
                        }
                        ui.end_row();
                        for l in lambdas.iter().rev() {
                            ui.label(format!("λ = {l}"));
                            for b in &betas {
                                let v = sweep
                                    .runs
                                    .iter()
                                    .find(|r| r.lambda == *l && r.beta == *b && r.sigma2 == s)
                                    .and_then(|r| q.of(&r.summary));
                                let (text, fill) = match v {
                                    Some(v) => (format!("{v:.3}"), color(v)),
                                    None => ("–".into(), Color32::TRANSPARENT),
                                };
                                egui::Frame::new()
                                    .fill(fill)
                                    .inner_margin(egui::Margin::symmetric(6, 3))
                                    .show(ui, |ui| {
                                        ui.label(egui::RichText::new(text).color(Color32::WHITE));
                                    });
                            }
                            ui.end_row();
                        }
                    });
            });
        }
    });
}
