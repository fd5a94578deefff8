//! Curves: learning curves of any set of runs — and the plot helpers the Fields and Compare panes
//! share (axes, grids, run colours, hints).

use super::runs::RunEntry;
use super::AppState;
use crate::experiments::charts::{svg_lines, Series};
use egui::Color32;

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Metric {
    Objective,
    HeldOutLogLikelihood,
    TokenAccuracy,
    SegmentF1,
    GradNorm,
    /// Training instances whose loopy BP did not converge at each iteration.
    BpUnconverged,
    /// CAMEL: the largest disagreement of two clusters' marginals on a sepset.
    SepsetViolation,
    /// nota: the number of NOTA terms in the objective (error-driven choices change it).
    NotaTerms,
}

impl Metric {
    const ALL: [Metric; 8] = [
        Metric::Objective,
        Metric::HeldOutLogLikelihood,
        Metric::TokenAccuracy,
        Metric::SegmentF1,
        Metric::GradNorm,
        Metric::BpUnconverged,
        Metric::SepsetViolation,
        Metric::NotaTerms,
    ];
    pub fn label(self) -> &'static str {
        match self {
            Metric::Objective => "training objective (minimised)",
            Metric::HeldOutLogLikelihood => "held-out log-likelihood",
            Metric::TokenAccuracy => "token accuracy %",
            Metric::SegmentF1 => "segment F1",
            Metric::GradNorm => "gradient norm",
            Metric::BpUnconverged => "instances with unconverged BP",
            Metric::SepsetViolation => "largest sepset violation (CAMEL)",
            Metric::NotaTerms => "NOTA terms (nota)",
        }
    }
    /// The y axis's name: short enough for a 120 px plot's height.
    pub fn short_label(self) -> &'static str {
        match self {
            Metric::Objective => "objective",
            Metric::HeldOutLogLikelihood => "held-out LL",
            Metric::TokenAccuracy => "accuracy %",
            Metric::SegmentF1 => "segment F1",
            Metric::GradNorm => "gradient norm",
            Metric::BpUnconverged => "BP unconverged",
            Metric::SepsetViolation => "sepset violation",
            Metric::NotaTerms => "NOTA terms",
        }
    }
    fn value(self, p: &crate::run::summary::CurvePoint) -> Option<f64> {
        match self {
            Metric::Objective => Some(p.report.objective),
            Metric::HeldOutLogLikelihood => p.test_log_likelihood,
            Metric::TokenAccuracy => p.test_token_accuracy,
            Metric::SegmentF1 => p.test_segment_f1,
            Metric::GradNorm => Some(p.report.grad_norm),
            Metric::BpUnconverged => Some(p.report.bp_unconverged as f64),
            Metric::SepsetViolation => p.report.violation,
            Metric::NotaTerms => p.report.nota_terms.map(|k| k as f64),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum XAxis {
    Iteration,
    Seconds,
    Operations,
}

impl XAxis {
    pub fn label(self) -> &'static str {
        match self {
            XAxis::Iteration => "iteration",
            XAxis::Seconds => "training seconds",
            XAxis::Operations => "counted operations",
        }
    }
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct CurvesPane {
    pub metric: Metric,
    pub x: XAxis,
    pub log_x: bool,
    pub log_y: bool,
    /// Compare's paired tests, computed off the GUI thread for the ticked runs and states.
    #[serde(skip)]
    pub tests: super::jobs::Transient<PairedTests>,
}

impl Default for CurvesPane {
    fn default() -> Self {
        CurvesPane {
            metric: Metric::Objective,
            x: XAxis::Iteration,
            log_x: false,
            log_y: true,
            tests: Default::default(),
        }
    }
}

/// Compare's paired tests: the ones shown, the runs and states they are for, and the
/// computation under way for another set (the bootstrap resamples every sequence 1,000 times:
/// not on the GUI thread).
#[derive(Default)]
pub struct PairedTests {
    pub(super) shown: Option<(String, std::sync::Arc<crate::run::compare::Comparison>)>,
    pub(super) job: Option<(String, super::jobs::Job<crate::run::compare::Comparison>)>,
}

/// An x-axis formatter naming categories at integer positions (bar charts).
pub fn category_axis(
    names: Vec<String>,
) -> impl Fn(egui_plot::GridMark, &std::ops::RangeInclusive<f64>) -> String {
    move |m, _| {
        let i = m.value.round();
        if (m.value - i).abs() < 1e-6 && i >= 0.0 {
            names.get(i as usize).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    }
}

/// A run's colour, from its sequence number (`0007-pw` is the palette's 7th entry), so it
/// keeps its colour whatever else is ticked; an id without one by its bytes.
pub fn run_color(id: &str) -> Color32 {
    let n = id
        .split('-')
        .next()
        .and_then(|s| s.parse::<usize>().ok())
        .unwrap_or_else(|| id.bytes().map(|b| b as usize).sum())
        .saturating_sub(1);
    super::palette(n)
}

/// The warning line when the runs drawn together were trained on different data (the engine's
/// [`crate::run::compare::mixed_data`], each run's path resolved where it was started).
pub fn mixed_data_warning(runs: &[&RunEntry], ui: &mut egui::Ui) {
    let trains: Vec<std::path::PathBuf> = runs.iter().map(|r| r.spec_as_started().train).collect();
    if let Some(w) = crate::run::compare::mixed_data(&trains) {
        let text = egui::RichText::new(format!("warning: {w}")).color(ui.visuals().warn_fg_color);
        wrapped_line(ui, text);
    }
}

/// A line wrapped at the pane's visible edge (inside a sideways-scrolling pane too).
pub fn wrapped_line(ui: &mut egui::Ui, text: egui::RichText) {
    let width = visible_width(ui, 240.0);
    ui.scope(|ui| {
        ui.set_max_width(width);
        ui.add(egui::Label::new(text).wrap());
    });
}

/// The points of one run's curve, in plot coordinates (log10 where asked; with log y the
/// magnitude |y| is plotted, so negative log-likelihoods work too).
pub fn series(run: &RunEntry, p: &CurvesPane) -> Vec<[f64; 2]> {
    curve_points(run.curve.iter(), p)
}

/// CAMEL's relinearisations of g: the first point of every fit after the first CAMEL fit.
pub fn relinearisations(run: &RunEntry, p: &CurvesPane) -> Vec<[f64; 2]> {
    let starts = run.curve.iter().enumerate().filter(|(i, c)| {
        let fit = c.report.fit.unwrap_or(0);
        fit >= 2 && (*i == 0 || run.curve[i - 1].report.fit != c.report.fit)
    });
    curve_points(starts.map(|(_, c)| c), p)
}

fn curve_points<'a>(
    points: impl Iterator<Item = &'a crate::run::summary::CurvePoint>,
    p: &CurvesPane,
) -> Vec<[f64; 2]> {
    points
        .filter_map(|c| {
            let x = match p.x {
                XAxis::Iteration => c.report.iteration as f64,
                XAxis::Seconds => c.report.seconds,
                XAxis::Operations => c.report.ops as f64,
            };
            let y = p.metric.value(c)?;
            let x = if p.log_x {
                (x > 0.0).then(|| x.log10())?
            } else {
                x
            };
            let y = if p.log_y {
                (y != 0.0).then(|| y.abs().log10())?
            } else {
                y
            };
            Some([x, y])
        })
        .collect()
}

pub(super) fn selected_runs(state: &AppState) -> Vec<&RunEntry> {
    state
        .runs
        .entries
        .iter()
        .filter(|e| state.selected.contains(&e.id))
        .collect()
}

/// 1, 2 and 5 times powers of ten in `[lo, hi]` (log10 units); only the 1s across many decades.
fn log_marks_125(lo: f64, hi: f64) -> Vec<(f64, f64)> {
    let mults: &[f64] = if hi - lo > 4.0 {
        &[1.0]
    } else {
        &[1.0, 2.0, 5.0]
    };
    let mut out = vec![];
    if !(lo.is_finite() && hi.is_finite()) {
        return out;
    }
    for d in (lo.floor() as i64)..=(hi.ceil() as i64) {
        for &m in mults {
            let v = d as f64 + m.log10();
            if (lo..=hi).contains(&v) {
                out.push((v, if m == 1.0 { 1.0 } else { 0.3 }));
            }
        }
    }
    out
}

/// Grid marks for a log10 axis: 1-2-5 values when at least two are in view; otherwise evenly
/// spaced round values of the quantity itself, so a narrow range (30,500–33,700) still gets
/// ticks. Every mark it makes is labelled by [`axis_text`].
pub(crate) fn log_grid(input: egui_plot::GridInput) -> Vec<egui_plot::GridMark> {
    let (lo, hi) = input.bounds;
    let marks = log_marks_125(lo, hi);
    if marks.len() >= 2 {
        return marks
            .into_iter()
            .map(|(value, step_size)| egui_plot::GridMark { value, step_size })
            .collect();
    }
    // Empty or NaN bounds: no marks.
    if hi.partial_cmp(&lo) != Some(std::cmp::Ordering::Greater) {
        return vec![];
    }
    let (a, b) = (10f64.powf(lo), 10f64.powf(hi));
    let step = crate::experiments::charts::nice_step((b - a) / 4.0);
    let mut out = vec![];
    let mut x = (a / step).ceil() * step;
    while x <= b && out.len() < 20 {
        out.push(egui_plot::GridMark {
            value: x.log10(),
            step_size: hi - lo,
        });
        x += step;
    }
    out
}

/// Marks for a linear axis: four to seven labelled ones at round values (1, 2 or 5 times a power
/// of ten) and unlabelled ones between. egui_plot's own spacer steps by tens only, so a
/// seconds axis from 0 to 1.4 was labelled 0 and 1 alone.
pub(crate) fn linear_grid(input: egui_plot::GridInput) -> Vec<egui_plot::GridMark> {
    let (lo, hi) = input.bounds;
    if !(lo.is_finite() && hi.is_finite()) || hi <= lo {
        return vec![];
    }
    let major = crate::experiments::charts::nice_step((hi - lo) / 7.0);
    let mantissa = major / 10f64.powf(major.log10().floor());
    let minor = major
        / if (mantissa - 2.0).abs() < 1e-9 {
            4.0
        } else {
            5.0
        };
    // (A bound on a mark, 1.4 = 28 × 0.05, must not fall to 27.9999.)
    let first = (lo / minor - 1e-9).ceil() as i64;
    let last = (hi / minor + 1e-9).floor() as i64;
    if last - first > 400 {
        return vec![];
    }
    let per_major = (major / minor).round() as i64;
    (first..=last)
        .map(|k| egui_plot::GridMark {
            value: k as f64 * minor,
            step_size: if k.rem_euclid(per_major) == 0 {
                major
            } else {
                minor
            },
        })
        .collect()
}

/// Tick text; with a log axis (values are log10) the marks come from [`log_grid`]: 1-2-5 values
/// written compactly, or, in a narrow view, round values with as many digits as the span needs.
pub(crate) fn axis_text(log: bool, v: f64, range: &std::ops::RangeInclusive<f64>) -> String {
    if log {
        let (lo, hi) = (*range.start(), *range.end());
        let x = 10f64.powf(v);
        if log_marks_125(lo, hi).len() < 2 {
            let span = (10f64.powf(hi) - 10f64.powf(lo)).abs().max(1e-300);
            let digits = (-span.log10().floor() + 1.0).max(0.0) as usize;
            return if x.abs() < 1e6 && digits <= 6 {
                format!("{x:.digits$}")
            } else {
                format!("{x:.4e}")
            };
        }
        // One format per axis: an axis reaching 1e5 writes every mark as 5e4, 1e5, 2e5
        // (lesson 6's read "50000" beside "1.0e5").
        if (0.01..1e5).contains(&x.abs()) && 10f64.powf(hi.max(lo)) < 1e5 {
            format!("{x:.3}")
                .trim_end_matches('0')
                .trim_end_matches('.')
                .to_string()
        } else {
            let t = format!("{x:.1e}");
            match t.split_once('e') {
                Some((m, e)) => format!("{}e{e}", m.trim_end_matches('0').trim_end_matches('.')),
                None => t,
            }
        }
    } else if v.abs() >= 1e5 {
        // 7e11, 1.25e11: axes of FLOP counts stay readable.
        let t = format!("{v:.3e}");
        match t.split_once('e') {
            Some((m, e)) => format!("{}e{e}", m.trim_end_matches('0').trim_end_matches('.')),
            None => t,
        }
    } else {
        // Grid marks are multiples of a step computed in floating point: -103.96 arrives as
        // -103.9600000000001. Ten significant digits, trailing zeros dropped.
        let digits = (9 - v.abs().max(1e-12).log10().floor() as i64).clamp(0, 12) as usize;
        let t = format!("{v:.digits$}");
        let t = if t.contains('.') {
            t.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            t
        };
        if t == "-0" {
            "0".into()
        } else {
            t
        }
    }
}

pub(super) fn curve_controls(p: &mut CurvesPane, ui: &mut egui::Ui, salt: &str) {
    ui.horizontal_wrapped(|ui| {
        egui::ComboBox::new(format!("{salt}-metric"), "on the y axis")
            .selected_text(p.metric.label())
            .show_ui(ui, |ui| {
                for m in Metric::ALL {
                    ui.selectable_value(&mut p.metric, m, m.label());
                }
            });
        ui.label("against");
        for x in [XAxis::Iteration, XAxis::Seconds, XAxis::Operations] {
            ui.selectable_value(&mut p.x, x, x.label());
        }
        ui.checkbox(&mut p.log_x, "log x");
        ui.checkbox(&mut p.log_y, "log y");
    });
}

/// The plot itself (shared by Curves and Compare); returns its rect for PNG export.
pub(super) fn curve_plot(
    runs: &[&RunEntry],
    p: &CurvesPane,
    ui: &mut egui::Ui,
    id: &str,
    height: f32,
) -> egui::Rect {
    let (lx, ly) = (p.log_x, p.log_y);
    // A held-out log-likelihood is under each run's own model (a MEMM's is its local
    // Σ log p(y_t|y_t−1)): the line above the plot names it when the runs share one, the
    // legend otherwise.
    let held_out = p.metric == Metric::HeldOutLogLikelihood;
    let metric = match runs.first().map(|r| r.likelihood_under()) {
        Some(u) if held_out && runs.iter().all(|r| r.likelihood_under() == u) => {
            format!("{} ({u})", p.metric.label())
        }
        _ if held_out => format!("{} (each run's model: legend)", p.metric.label()),
        _ => p.metric.label().to_string(),
    };
    // The model in the legend only where the runs' differ: the line above names a shared one.
    let mixed_models = held_out
        && runs
            .iter()
            .any(|r| Some(r.likelihood_under()) != runs.first().map(|f| f.likelihood_under()));
    let legend_name = |r: &RunEntry| {
        if mixed_models {
            format!("{} ({})", r.label(), r.likelihood_under())
        } else {
            r.label()
        }
    };
    // The axis carries a short name (a long one was clipped to "ning objective (minimised)"
    // on a short plot); the whole quantity is said above the plot.
    let (y_label, y_meaning) = if ly {
        (
            format!("|{}| (log)", p.metric.short_label()),
            format!("y: |{metric}|, log scale"),
        )
    } else {
        (p.metric.short_label().to_string(), format!("y: {metric}"))
    };
    // Each run's curve and relinearisation marks, once for the legend and the plot.
    struct Drawn<'a> {
        run: &'a RunEntry,
        color: Color32,
        points: Vec<[f64; 2]>,
        marks: Vec<[f64; 2]>,
    }
    let drawn: Vec<Drawn> = runs
        .iter()
        .map(|r| Drawn {
            run: r,
            color: run_color(&r.id),
            points: series(r, p),
            marks: relinearisations(r, p),
        })
        .filter(|d| !d.points.is_empty())
        .collect();
    let scope = ui.scope(|ui| {
        // The legend above the plot, not in it: inside, some corner always held a curve's
        // end (the overfitting step's weak prior) or was cut at the pane's edge.
        let legend = ui
            .horizontal_wrapped(|ui| {
                ui.weak(&y_meaning);
                ui.add_space(8.0);
                for Drawn {
                    run: r, color: c, ..
                } in &drawn
                {
                    crate::app::appearance::legend_entry(
                        ui,
                        "",
                        22.0,
                        &legend_name(r),
                        |p, rect| {
                            p.line_segment(
                                [rect.left_center(), rect.right_center()],
                                egui::Stroke::new(2.5, *c),
                            );
                        },
                    );
                    ui.add_space(8.0);
                }
                if drawn.iter().any(|d| !d.marks.is_empty()) {
                    // A drawn diamond, as on the plot (the font has no "◆").
                    let (r, _) =
                        ui.allocate_exact_size(egui::vec2(12.0, 12.0), egui::Sense::hover());
                    let (c, d) = (r.center(), 5.0);
                    ui.painter().add(egui::Shape::convex_polygon(
                        vec![
                            c + egui::vec2(0.0, -d),
                            c + egui::vec2(d, 0.0),
                            c + egui::vec2(0.0, d),
                            c + egui::vec2(-d, 0.0),
                        ],
                        ui.visuals().text_color(),
                        egui::Stroke::NONE,
                    ));
                    ui.label("where CCCP relinearised g");
                }
            })
            .response
            .rect;
        let mut plot = pane_plot(id.to_string());
        plot = plot.x_grid_spacer(if lx { log_grid } else { linear_grid });
        plot = plot.y_grid_spacer(if ly { log_grid } else { linear_grid });
        plot.height((height - legend.height() - 4.0).max(120.0))
            .x_axis_label(if lx {
                format!("{} (log)", p.x.label())
            } else {
                p.x.label().to_string()
            })
            .y_axis_label(y_label)
            .x_axis_formatter(move |m, r| axis_text(lx, m.value, r))
            .y_axis_formatter(move |m, r| axis_text(ly, m.value, r))
            .show(ui, |plot| {
                for Drawn {
                    run: r,
                    color: c,
                    points: pts,
                    marks,
                } in drawn
                {
                    plot.line(egui_plot::Line::new(r.label(), pts).color(c).width(1.8));
                    if !marks.is_empty() {
                        plot.points(
                            egui_plot::Points::new(format!("{}: g relinearised", r.label()), marks)
                                .shape(egui_plot::MarkerShape::Diamond)
                                .radius(4.5)
                                .filled(true)
                                .color(c),
                        );
                    }
                }
            })
    });
    plot_hint(ui);
    // The scope's rect includes the axes and their labels (the plot's own rect does not).
    scope.response.rect
}

fn export_curves(
    state: &mut AppState,
    p: &CurvesPane,
    rect: egui::Rect,
    ui: &mut egui::Ui,
    stem: &str,
) {
    let runs = selected_runs(state);
    let series_list: Vec<Series> = runs
        .iter()
        .map(|r| Series {
            markers: false,
            name: r.label(),
            color: super::rgb(run_color(&r.id)),
            points: series(r, p)
                .into_iter()
                .map(|[x, y]| {
                    [
                        if p.log_x { 10f64.powf(x) } else { x },
                        if p.log_y { 10f64.powf(y) } else { y },
                    ]
                })
                .collect(),
        })
        .collect();
    let rows: Vec<Vec<String>> = series_list
        .iter()
        .flat_map(|s| {
            s.points
                .iter()
                .map(|pt| vec![s.name.clone(), pt[0].to_string(), pt[1].to_string()])
                .collect::<Vec<_>>()
        })
        .collect();
    ui.horizontal(|ui| {
        if ui.button("Save PNG").clicked() {
            state.request_png(rect, stem);
        }
        if ui.button("Save SVG").clicked() {
            let svg = svg_lines(
                &format!("{} against {}", p.metric.label(), p.x.label()),
                p.x.label(),
                p.metric.label(),
                &series_list,
            );
            state.save_svg(stem, &svg);
        }
        if ui.button("Save CSV").clicked() {
            let header = vec!["run".into(), p.x.label().into(), p.metric.label().into()];
            state.save_csv(stem, &header, &rows);
        }
    });
}

pub fn curves_ui(state: &mut AppState, p: &mut CurvesPane, ui: &mut egui::Ui) {
    ui.heading("Learning curves");
    curve_controls(p, ui, "curves");
    let runs = selected_runs(state);
    if runs.is_empty() {
        ui.weak("Tick runs in the Runs pane to plot them.");
        return;
    }
    mixed_data_warning(&runs, ui);
    if matches!(
        p.metric,
        Metric::HeldOutLogLikelihood | Metric::TokenAccuracy | Metric::SegmentF1
    ) && runs
        .iter()
        .all(|r| r.curve.iter().all(|c| p.metric.value(c).is_none()))
    {
        ui.weak("These runs have no held-out evaluations during training: set \"Evaluate every\" and give test data.");
    }
    let rect_id = ui.scope_id().with("curves-rect");
    let last_rect = ui
        .ctx()
        .data(|d| d.get_temp::<egui::Rect>(rect_id))
        .unwrap_or(egui::Rect::NOTHING);
    export_curves(state, p, last_rect, ui, "curves");
    let runs = selected_runs(state);
    let h = (ui.available_height() - 30.0).max(200.0);
    let rect = curve_plot(&runs, p, ui, &format!("curves-{:p}", p as *const _), h);
    ui.ctx().data_mut(|d| d.insert_temp(rect_id, rect));
}

/// A plot inside a scrolling pane: the mouse wheel scrolls the pane, not the plot (5.4: it
/// panned Compare's curves out of view); drag pans, Ctrl + wheel zooms, a double click resets.
pub fn pane_plot(id: impl egui::AsIdSalt) -> egui_plot::Plot<'static> {
    egui_plot::Plot::new(id).allow_scroll(false)
}

/// The width from the cursor to the pane's visible right edge (less a margin), at least `min`:
/// what to wrap or size to when a pane's content is wider than what is on screen (a scroll
/// area with wide tables), so a plot or a sentence is not cut off at 1280×800.
pub fn visible_width(ui: &egui::Ui, min: f32) -> f32 {
    (ui.clip_rect().right() - ui.cursor().left() - 8.0).max(min)
}

/// The line under a plot that says how to move it.
pub fn plot_hint(ui: &mut egui::Ui) {
    ui.weak("Drag to pan · Ctrl + wheel to zoom · double-click to reset the view.");
}

#[cfg(test)]
mod tests {
    use super::{axis_text, log_grid};

    /// A linear axis from 0 to 1.4 gets labelled marks at 0.2 steps, unlabelled at 0.05.
    #[test]
    fn linear_grid_labels_round_values() {
        use super::linear_grid;
        let marks = linear_grid(egui_plot::GridInput {
            bounds: (0.0, 1.4),
            base_step_size: 0.001,
        });
        let labelled: Vec<f64> = marks
            .iter()
            .filter(|m| (m.step_size - 0.2).abs() < 1e-12)
            .map(|m| (m.value * 100.0).round() / 100.0)
            .collect();
        assert_eq!(labelled, vec![0.0, 0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4]);
        assert!(marks.iter().any(|m| (m.step_size - 0.05).abs() < 1e-12));
        assert!(linear_grid(egui_plot::GridInput {
            bounds: (1.0, 1.0),
            base_step_size: 0.1
        })
        .is_empty());
    }

    /// The labels of the marks the log grid makes for a range of the quantity itself.
    fn ticks(a: f64, b: f64) -> Vec<String> {
        let (lo, hi) = (a.log10(), b.log10());
        log_grid(egui_plot::GridInput {
            bounds: (lo, hi),
            base_step_size: 1e-3,
        })
        .iter()
        .map(|m| axis_text(true, m.value, &(lo..=hi)))
        .collect()
    }

    /// A run's colour is its own (its sequence number), not its place among the ticked runs.
    #[test]
    fn a_run_keeps_its_colour() {
        use super::run_color;
        assert_eq!(run_color("0003-pw"), crate::app::palette(2));
        assert_eq!(run_color("003-pw"), run_color("0003-ml"));
        assert_ne!(run_color("0003-pw"), run_color("0004-pw"));
    }

    #[test]
    fn linear_ticks_drop_floating_point_noise() {
        let r = 0.0..=1.0;
        assert_eq!(axis_text(false, -103.960_000_000_000_1, &r), "-103.96");
        assert_eq!(axis_text(false, 0.1 + 0.2, &r), "0.3");
        assert_eq!(axis_text(false, -0.0, &r), "0");
        assert_eq!(axis_text(false, 2500.0, &r), "2500");
        assert_eq!(axis_text(false, 0.000_125, &r), "0.000125");
    }

    #[test]
    fn log_axes_always_get_labelled_ticks() {
        // The reported case: one run's objective between 30,500 and 33,700.
        let t = ticks(30_500.0, 33_700.0);
        assert!(t.len() >= 2 && t.iter().all(|x| !x.is_empty()), "{t:?}");
        assert!(t.contains(&"31000".to_string()), "{t:?}");
        // One 1-2-5 value in view (50,000) is not enough on its own: round values again.
        let t = ticks(36_000.0, 69_000.0);
        assert!(t.len() >= 2 && t.iter().all(|x| !x.is_empty()), "{t:?}");
        // Wider ranges: 1-2-5 values.
        assert_eq!(ticks(15_000.0, 69_000.0), vec!["20000", "50000"]);
        assert_eq!(
            ticks(0.9, 600.0),
            vec!["1", "2", "5", "10", "20", "50", "100", "200", "500"]
        );
        // An axis reaching 1e5 writes every mark alike.
        assert_eq!(ticks(30_000.0, 3e5), vec!["5e4", "1e5", "2e5"]);
    }
}
