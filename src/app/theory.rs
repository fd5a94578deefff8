//! The Theory pane: the asymptotic variance of SCL on a small Boltzmann machine (004 Fig. 2),
//! relative to the MLE's, against the share λ of the higher-order family in
//! `λ:1*PL(k+1) + (1−λ):1*PL(k)` — det and trace ratios in both forms (the paper's, with Z
//! replaced by λ, and the exact one for random selection) — with Monte Carlo points of the
//! estimator itself beside them. Everything is computed on background threads.

use super::jobs::Transient;
use super::jobs::{take_finished, Job};
use super::AppState;
use crate::estimators::scl::Selection;
pub use crate::experiments::scl_theory::TheoryCurve;
use crate::experiments::scl_theory::{fig2_curves, mixture, Machine, RelativeMc};
use egui::Color32;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// The pane's settings (saved with the layout).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct TheoryPane {
    /// Variables of the machine (θ0: the first five pairs −1, the rest +1, as `generate
    /// boltzmann` draws them).
    pub m: usize,
    /// Which mixtures PL(k+1)/PL(k) to draw, k = 1, 2, 3.
    pub orders: [bool; 3],
    pub selection: Selection,
    /// Draw the det ratio (else the trace ratio).
    pub det: bool,
    /// Draw the exact form beside the paper's (a lesson hides it while it reads the paper's:
    /// its peak of 10 set the scale and flattened the dashed curves).
    pub exact: bool,
    /// Monte Carlo: samples per data set, replications, and the λ values to run.
    pub mc_n: usize,
    pub mc_reps: usize,
    pub mc_lambdas: String,
    /// What the pane computes (not saved with the layout).
    #[serde(skip)]
    pub runtime: Transient<TheoryRuntime>,
}

impl Default for TheoryPane {
    fn default() -> Self {
        TheoryPane {
            m: 5,
            orders: [true, true, true],
            selection: Selection::Independent,
            det: true,
            exact: true,
            mc_n: 1000,
            mc_reps: 100,
            mc_lambdas: "0.25, 0.5, 0.75".into(),
            runtime: Transient::default(),
        }
    }
}

/// A Monte Carlo point of one curve: the mixture of orders k, k + 1 at λ (the engine's
/// [`RelativeMc`]).
#[derive(Clone, Debug)]
pub struct McPoint {
    pub k: usize,
    pub lambda: f64,
    pub mc: RelativeMc,
}

/// What the pane computes: curves, Monte Carlo points and their jobs.
#[derive(Default)]
pub struct TheoryRuntime {
    key: String,
    curves: Option<Result<Vec<TheoryCurve>, String>>,
    job: Option<Job<Vec<TheoryCurve>>>,
    pub mc: Vec<McPoint>,
    mc_job: Option<Job<Vec<McPoint>>>,
    mc_done: Arc<AtomicUsize>,
    mc_total: usize,
    mc_cancel: Arc<AtomicBool>,
    /// Points of the running Monte Carlo, shown as each (order, λ) finishes.
    mc_partial: Arc<std::sync::Mutex<Vec<McPoint>>>,
}

impl TheoryRuntime {
    /// The curves once computed.
    pub fn curves(&self) -> Option<&Result<Vec<TheoryCurve>, String>> {
        self.curves.as_ref()
    }
    pub fn mc_running(&self) -> bool {
        self.mc_job.is_some()
    }
}

/// The curves of Fig. 2 for the pane's settings: λ = 0, 0.05, …, 1 for each order.
pub fn compute_curves(p: &TheoryPane) -> Result<Vec<TheoryCurve>, String> {
    let ks: Vec<usize> = (1..=3).filter(|&k| p.orders[k - 1]).collect();
    Machine::new(p.m, None)
        .and_then(|machine| fig2_curves(&machine, &ks, 20, p.selection))
        .map_err(|e| e.to_string())
}

/// What a series of the plot is: one of its legend's entries per order.
#[derive(Clone, Copy)]
enum Kind {
    Paper,
    Exact,
    MonteCarlo,
}

/// A colour per order and series, all nine distinct: the legend tells each entry apart by
/// colour alone (three entries of one blue could not be told apart on a projector).
fn series_color(k: usize, s: Kind) -> Color32 {
    let row = [
        // PL2/PL1: blue, orange, purple.
        [(50, 110, 220), (225, 105, 20), (150, 50, 180)],
        // PL3/PL2: green, red, brown.
        [(40, 160, 80), (205, 40, 40), (130, 85, 30)],
        // PL4/PL3: grey, teal, pink.
        [(120, 120, 120), (0, 150, 160), (225, 70, 160)],
    ][(k - 1) % 3];
    let (r, g, b) = row[s as usize];
    Color32::from_rgb(r, g, b)
}

pub fn ui(state: &mut AppState, p: &mut TheoryPane, ui: &mut egui::Ui) {
    ui.heading("Theory");
    super::papers::weak_cited(
        ui,
        "Asymptotic variance of SCL relative to the MLE (004 Proposition 2, Fig. 2) on a Boltzmann \
         machine with θ0 = −1 on the first five pairs, +1 on the rest; computed by enumerating \
         every state. The paper's form replaces Z by λ; the exact form takes Z's variance into \
         account. Dashed: the paper's form; solid: the exact form; points: Monte Carlo of the \
         estimator itself (fits on fresh data sets drawn from θ0, a fresh Z each), with a 95 % \
         error bar (jackknife over the fits): a curve inside the bar agrees with the Monte Carlo.",
    );
    let ctx = ui.ctx().clone();
    ui.horizontal_wrapped(|ui| {
        let l = ui.label("m");
        ui.add(egui::DragValue::new(&mut p.m).range(3..=9))
            .labelled_by(l.id)
            .on_hover_text("variables (2^m states are enumerated)");
        for k in 1..=3 {
            ui.checkbox(&mut p.orders[k - 1], format!("PL{}/PL{k}", k + 1));
        }
        ui.selectable_value(&mut p.selection, Selection::Independent, "independent");
        ui.selectable_value(&mut p.selection, Selection::Multinomial, "multinomial");
        ui.separator();
        ui.selectable_value(&mut p.det, true, "det ratio");
        ui.selectable_value(&mut p.det, false, "trace ratio");
        ui.separator();
        ui.checkbox(&mut p.exact, "exact form (solid)");
    });
    let key = format!("{}|{:?}|{:?}", p.m, p.orders, p.selection);
    let pane = p.clone();
    let rt = &mut p.runtime;
    if key != rt.key {
        rt.key = key;
        rt.curves = None;
        rt.mc.clear();
        rt.job = Some(Job::spawn(&ctx, "asymptotic variance", move || {
            compute_curves(&pane)
        }));
    }
    if let Some(r) = take_finished(&mut rt.job) {
        rt.curves = Some(r);
    }
    if let Some(r) = take_finished(&mut rt.mc_job) {
        rt.mc_partial.lock().unwrap().clear();
        match r {
            Ok(pts) => rt.mc.extend(pts),
            Err(e) => state.error(format!("Monte Carlo: {e}")),
        }
    } else if rt.mc_job.is_some() {
        ctx.request_repaint_after(std::time::Duration::from_millis(300));
    }
    monte_carlo_row(state, p, ui);
    let mut mc = p.runtime.mc.clone();
    mc.extend(p.runtime.mc_partial.lock().unwrap().iter().cloned());
    let curves = match &p.runtime.curves {
        None => {
            crate::app::appearance::busy(ui);
            return;
        }
        Some(Err(e)) => {
            ui.colored_label(Color32::RED, e);
            return;
        }
        Some(Ok(c)) => c.clone(),
    };
    let curves = &curves;
    // 5.10: a singular empirical covariance has no determinant; say so rather than plot 0.
    if let Some(pt) = mc.iter().find(|pt| p.det && pt.mc.det.is_none()) {
        ui.colored_label(
            ui.visuals().warn_fg_color,
            format!(
                "Monte Carlo with {} replications: the empirical covariance of {} parameters \
                 needs more than {} replications to have a determinant, so these points are \
                 drawn in the trace ratio only. Raise the replications (100 or more) or switch \
                 to the trace ratio.",
                pt.mc.reps, pt.mc.dim, pt.mc.dim
            ),
        );
    }
    let scope = theory_plot(ui, curves, &mc, p.det, p.exact);
    super::plots::plot_hint(ui);
    let rect = scope.response.rect;
    let (png, svg) = ui
        .horizontal(|ui| {
            (
                ui.button("Save theory PNG").clicked(),
                ui.button("Save theory SVG").clicked(),
            )
        })
        .inner;
    if png {
        state.request_png(rect, "theory");
    }
    if svg {
        let svg = theory_svg(p, curves, &mc);
        state.save_svg("theory", &svg);
    }
}

/// The Monte Carlo controls: n, replications, the λ to fit at, and *Run* / *Stop*.
fn monte_carlo_row(state: &mut AppState, p: &mut TheoryPane, ui: &mut egui::Ui) {
    let ctx = ui.ctx().clone();
    let pane = p.clone();
    let rt = &mut p.runtime;
    let mut bad_lambdas = false;
    ui.horizontal_wrapped(|ui| {
        ui.label("Monte Carlo:");
        let l = ui.label("n");
        ui.add(egui::DragValue::new(&mut p.mc_n).range(50..=100_000))
            .labelled_by(l.id);
        let l = ui.label("replications");
        ui.add(egui::DragValue::new(&mut p.mc_reps).range(2..=10_000))
            .labelled_by(l.id);
        let l = ui.label("at λ");
        ui.add(egui::TextEdit::singleline(&mut p.mc_lambdas).desired_width(120.0))
            .labelled_by(l.id);
        if rt.mc_job.is_some() {
            crate::app::appearance::busy(ui);
            ui.label(format!(
                "{} of {} fits",
                rt.mc_done.load(Ordering::Relaxed),
                rt.mc_total
            ));
            if ui.button("Stop Monte Carlo").clicked() {
                rt.mc_cancel.store(true, Ordering::Relaxed);
            }
        } else if ui
            .button("Run Monte Carlo")
            .on_hover_text("fit the estimator on fresh data sets drawn from θ0, a fresh Z each")
            .clicked()
        {
            let lambdas: Result<Vec<f64>, _> = p
                .mc_lambdas
                .split(',')
                .map(|s| s.trim().parse::<f64>())
                .collect();
            match lambdas {
                Ok(ls) if ls.iter().all(|l| (0.0..=1.0).contains(l)) && !ls.is_empty() => {
                    let orders: Vec<usize> =
                        (1..=3).filter(|&k| p.orders[k - 1] && k < p.m).collect();
                    rt.mc_total = ls.len() * orders.len() * p.mc_reps;
                    rt.mc_done = Arc::new(AtomicUsize::new(0));
                    rt.mc_cancel = Arc::new(AtomicBool::new(false));
                    let (done, cancel) = (rt.mc_done.clone(), rt.mc_cancel.clone());
                    let partial = rt.mc_partial.clone();
                    rt.mc_job = Some(Job::spawn(&ctx, "Monte Carlo", move || {
                        run_mc(&pane, &orders, &ls, &done, &cancel, &partial)
                    }));
                }
                _ => bad_lambdas = true,
            }
        }
    });
    if bad_lambdas {
        state.error("Monte Carlo λ: comma-separated numbers in [0, 1]");
    }
}

/// 004 Fig. 2: each order's relative variance against λ in the paper's form (dashed) and the
/// exact form (solid), with the Monte Carlo points.
fn theory_plot(
    ui: &mut egui::Ui,
    curves: &[TheoryCurve],
    mc: &[McPoint],
    det: bool,
    exact: bool,
) -> egui::InnerResponse<egui_plot::PlotResponse<()>> {
    let what = if det { "det" } else { "trace" };
    ui.scope(|ui| {
        super::plots::pane_plot("theory-plot")
            .height((ui.available_height() - 84.0).max(220.0))
            .x_axis_label("λ (share of the higher-order family)")
            .y_axis_label(format!("relative {what} (MLE = 1)"))
            // 4–7 labelled ticks (λ had only 0 and 1 labelled).
            .x_grid_spacer(super::plots::linear_grid)
            .y_grid_spacer(super::plots::linear_grid)
            .legend(egui_plot::Legend::default())
            .show(ui, |plot| {
                for c in curves {
                    let (ip, ie) = if det { (1, 2) } else { (3, 4) };
                    let name = format!("PL{}/PL{}", c.k + 1, c.k);
                    plot.line(
                        egui_plot::Line::new(
                            // The legend's marker is a dot for every line: the style is named.
                            format!("{name} paper's form (dashed)"),
                            c.points.iter().map(|q| [q[0], q[ip]]).collect::<Vec<_>>(),
                        )
                        .color(series_color(c.k, Kind::Paper))
                        .style(egui_plot::LineStyle::dashed_loose()),
                    );
                    if !exact {
                        continue;
                    }
                    plot.line(
                        egui_plot::Line::new(
                            format!("{name} exact form (solid)"),
                            c.points.iter().map(|q| [q[0], q[ie]]).collect::<Vec<_>>(),
                        )
                        .color(series_color(c.k, Kind::Exact))
                        .width(2.0),
                    );
                }
                for pt in mc {
                    let y = if det { pt.mc.det } else { Some(pt.mc.trace) };
                    let ci = if det {
                        pt.mc.det_ci
                    } else {
                        Some(pt.mc.trace_ci)
                    };
                    if let Some((lo, hi)) = ci {
                        // The error bar: a vertical line with short caps.
                        let cap = 0.012;
                        for seg in [
                            vec![[pt.lambda, lo], [pt.lambda, hi]],
                            vec![[pt.lambda - cap, lo], [pt.lambda + cap, lo]],
                            vec![[pt.lambda - cap, hi], [pt.lambda + cap, hi]],
                        ] {
                            plot.line(
                                egui_plot::Line::new(
                                    format!(
                                        "Monte Carlo PL{}/PL{} ({} fits)",
                                        pt.k + 1,
                                        pt.k,
                                        pt.mc.reps
                                    ),
                                    seg,
                                )
                                .color(series_color(pt.k, Kind::MonteCarlo))
                                .width(1.5),
                            );
                        }
                    }
                    if let Some(y) = y {
                        plot.points(
                            egui_plot::Points::new(
                                format!(
                                    "Monte Carlo PL{}/PL{} ({} fits)",
                                    pt.k + 1,
                                    pt.k,
                                    pt.mc.reps
                                ),
                                vec![[pt.lambda, y]],
                            )
                            .radius(5.0)
                            .filled(true)
                            .color(series_color(pt.k, Kind::MonteCarlo)),
                        );
                    }
                }
            })
    })
}

/// The plot as SVG, drawn from the same series.
fn theory_svg(p: &TheoryPane, curves: &[TheoryCurve], mc: &[McPoint]) -> String {
    let det = p.det;
    let what = if det { "det" } else { "trace" };
    let mut series = vec![];
    for c in curves {
        let (ip, ie) = if det { (1, 2) } else { (3, 4) };
        for (form, i, kind) in [
            ("paper's form", ip, Kind::Paper),
            ("exact form", ie, Kind::Exact),
        ] {
            if form == "exact form" && !p.exact {
                continue;
            }
            series.push(crate::experiments::charts::Series {
                name: format!("PL{}/PL{} {form}", c.k + 1, c.k),
                color: super::rgb(series_color(c.k, kind)),
                points: c.points.iter().map(|q| [q[0], q[i]]).collect(),
                markers: false,
            });
        }
    }
    for pt in mc {
        if let Some((lo, hi)) = if det {
            pt.mc.det_ci
        } else {
            Some(pt.mc.trace_ci)
        } {
            series.push(crate::experiments::charts::Series {
                name: format!("95 % interval PL{}/PL{} λ={}", pt.k + 1, pt.k, pt.lambda),
                color: super::rgb(series_color(pt.k, Kind::MonteCarlo)),
                points: vec![[pt.lambda, lo], [pt.lambda, hi]],
                markers: false,
            });
        }
        if let Some(y) = if det { pt.mc.det } else { Some(pt.mc.trace) } {
            series.push(crate::experiments::charts::Series {
                name: format!("Monte Carlo PL{}/PL{} λ={}", pt.k + 1, pt.k, pt.lambda),
                color: super::rgb(series_color(pt.k, Kind::MonteCarlo)),
                points: vec![[pt.lambda, y]],
                markers: true,
            });
        }
    }
    crate::experiments::charts::svg_lines(
        &format!("SCL asymptotic variance, m = {}", p.m),
        "λ",
        &format!("relative {what}"),
        &series,
    )
}

/// Monte Carlo points for each order and λ, relative to the MLE's variance: the engine's
/// `Machine::relative_monte_carlo` per point, shown as each finishes.
fn run_mc(
    p: &TheoryPane,
    orders: &[usize],
    lambdas: &[f64],
    done: &AtomicUsize,
    cancel: &AtomicBool,
    partial: &std::sync::Mutex<Vec<McPoint>>,
) -> Result<Vec<McPoint>, String> {
    let machine = Machine::new(p.m, None).map_err(|e| e.to_string())?;
    let mut out = vec![];
    for &k in orders {
        for &l in lambdas {
            let policy = mixture(k, l, p.selection).map_err(|e| e.to_string())?;
            let base = done.load(Ordering::Relaxed);
            let mc = machine
                .relative_monte_carlo(&policy, (p.mc_n, p.mc_reps, 0), cancel, &|d| {
                    done.store(base + d, Ordering::Relaxed)
                })
                .map_err(|e| e.to_string())?;
            let pt = McPoint { k, lambda: l, mc };
            partial.lock().unwrap().push(pt.clone());
            out.push(pt);
        }
    }
    Ok(out)
}
