//! The Frontier pane: the points of SCL sweeps (`workspace/sweeps/*/sweep.json`, written by
//! `piecewise-lab sweep --out workspace/sweeps/NAME`) as complexity against quality, coloured by
//! λ, marked by β, with the empirical Pareto frontier and the shaded unachievable region below it
//! (004 Figs. 3, 6, 13, 19). Sweeps are read in a background job; nothing is computed here but
//! the frontier of a few hundred points. *New sweep* starts a small λ × β sweep on the loaded
//! data with the launch form's settings — the same [`run_sweep`] the CLI's `sweep` runs — and
//! its points appear as they finish.

use super::jobs::Job;
use super::jobs::Transient;
use crate::app::AppState;
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
mod plot;
mod sweeps;

use plot::*;
pub use sweeps::*;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Complexity {
    /// The paper's FLOPs of one objective evaluation (004 §3.1): realised, the components the
    /// run's Z selected (their expectation replaces each Z by its λ).
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
            Self::PaperFlops => "paper FLOPs per evaluation (of the components Z selected)",
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
    /// The folders of runs open when the sweeps were read (their sweeps are listed too).
    seen_folders: usize,
    /// The *New sweep* form's policy preview (004 Fig. 1) of the point it names.
    pub preview: crate::app::policy_view::Preview,
    /// The y range the plot was last scaled to ([`plot::y_window`]) and the runs drawn at its
    /// edge (tests read them).
    pub y_window: Option<(f64, f64)>,
    pub beyond: Vec<String>,
}

/// The colour of `l` among the sweep's (sorted) λ values: distinct colours by rank, the run
/// palette's (a blue-to-red scale made λ = 0 and 0.1 two similar blues on a projector).
fn lambda_color(lambdas: &[f64], l: f64) -> Color32 {
    let k = lambdas.iter().position(|x| *x == l).unwrap_or(0);
    crate::app::palette(k)
}

/// The colour key for λ: a swatch per λ value of the sweep.
fn lambda_key(ui: &mut egui::Ui, lambdas: &[f64]) {
    ui.weak("colour:");
    for &l in lambdas {
        let (rect, _) = ui.allocate_exact_size(egui::vec2(12.0, 12.0), egui::Sense::hover());
        ui.painter()
            .circle_filled(rect.center(), 5.5, lambda_color(lambdas, l));
        ui.label(format!("λ = {l}"));
    }
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
    // Wrapped at the pane's visible edge: the heat maps below widen the scroll area's content,
    // and the text ran past the right edge at 1280×800.
    let visible = super::plots::visible_width(ui, 200.0);
    ui.scope(|ui| {
        ui.set_max_width(visible);
        ui.weak(
            "Each point is one SCL run of a sweep: how much it cost (x) against how good it is \
             (y). The grey line joins the points nothing beats on both axes (the empirical \
             Pareto frontier); the shaded region below it is what no policy of the sweep \
             reached. The axes are scaled to the frontier: a point far beyond it is drawn at \
             the plot's edge as a triangle, with its value written beside it.",
        );
    });
    // An Arc: the frame holds the sweeps without copying them.
    let sweeps = poll_sweeps(state, &mut p.runtime, ui);
    launcher(state, p, sweeps.as_ref().is_some_and(|s| s.is_empty()), ui);
    let Some(sweeps) = sweeps else {
        crate::app::appearance::busy(ui);
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
            crate::app::appearance::busy(ui);
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
    // Wrapped at the visible edge, as the intro is.
    ui.scope(|ui| {
        ui.set_max_width(visible);
        ui.label(format!(
            "{} ({}): {} of {} points finished · {} on the frontier · colour: λ of the higher \
             family · marker: β",
            sweep.name,
            sweep.families,
            sweep.runs.len(),
            sweep.total,
            front.len()
        ));
    });
    let mut betas: Vec<f64> = pts.iter().map(|(r, _)| r.beta).collect();
    betas.sort_by(f64::total_cmp);
    betas.dedup();
    let mut lambdas: Vec<f64> = pts.iter().map(|(r, _)| r.lambda).collect();
    lambdas.sort_by(f64::total_cmp);
    lambdas.dedup();
    ui.horizontal_wrapped(|ui| {
        ui.set_max_width(visible);
        lambda_key(ui, &lambdas);
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
    let scope = frontier_plot(ui, p, &pts, &front, (&lambdas, &betas));
    let window = plot::y_window(&front, p.y.lower_is_better());
    p.runtime.y_window = window;
    p.runtime.beyond = pts
        .iter()
        .filter(|(_, q)| window.is_some_and(|(lo, hi)| q[1] < lo || q[1] > hi))
        .map(|(r, _)| r.dir.clone())
        .collect();
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
         map, red the worst, the others coloured by their rank between them (an outlier does \
         not wash out the rest); – a point not finished.",
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
                color: super::rgb(lambda_color(&lambdas, r.lambda)),
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
        .horizontal_wrapped(|ui| {
            // At the visible width (a wide table below widens the pane's content).
            ui.set_max_width(crate::app::plots::visible_width(ui, 240.0));
            let r = ui.button("Reload sweeps").clicked();
            ui.weak(format!(
                "sweeps in {} (piecewise-lab sweep --out …/sweeps/NAME) and in the folders \
                 opened in the Runs pane",
                state.config.workspace.join("sweeps").display()
            ));
            r
        })
        .inner;
    let fresh = rt.seen_events != state.sweep_events || rt.seen_folders != state.runs.folders.len();
    if (rt.sweeps.is_none() || reload || fresh) && rt.job.is_none() {
        rt.seen_events = state.sweep_events;
        rt.seen_folders = state.runs.folders.len();
        let ws = state.config.workspace.clone();
        let folders = state.runs.folders.clone();
        rt.job = Some(Job::spawn(&ctx, "reading sweeps", move || {
            Ok(read_sweeps(&ws, &folders))
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
