//! Curves (learning curves of any set of runs), Fields (per-field / per-label P/R/F1 as grouped
//! bars with a table) and Compare (specs diffed, final metrics, curves together).

use super::runs::RunEntry;
use super::AppState;
use crate::experiments::charts::{svg_bars, svg_lines, Series};
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
            XAxis::Seconds => "seconds",
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
    shown: Option<(String, std::sync::Arc<crate::run::compare::Comparison>)>,
    job: Option<(String, super::jobs::Job<crate::run::compare::Comparison>)>,
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

/// A stable colour per run.
pub fn run_color(ticked: &[&RunEntry], id: &str) -> Color32 {
    // By position among the ticked runs, so the runs drawn together get the palette's first,
    // most distinct colours (by sequence number, runs 8–10 were pink, brown and grey beside
    // red); a run not ticked by its sequence number.
    let n = ticked.iter().position(|r| r.id == id).unwrap_or_else(|| {
        id.split('-')
            .next()
            .and_then(|s| s.parse::<usize>().ok())
            .unwrap_or_else(|| id.bytes().map(|b| b as usize).sum())
            .saturating_sub(1)
    });
    super::palette(n)
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

fn selected_runs(state: &AppState) -> Vec<&RunEntry> {
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
        if (0.01..1e5).contains(&x.abs()) {
            format!("{x:.3}")
                .trim_end_matches('0')
                .trim_end_matches('.')
                .to_string()
        } else {
            format!("{x:.1e}")
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

fn curve_controls(p: &mut CurvesPane, ui: &mut egui::Ui, salt: &str) {
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
fn curve_plot(
    runs: &[&RunEntry],
    p: &CurvesPane,
    ui: &mut egui::Ui,
    id: &str,
    height: f32,
) -> egui::Rect {
    let (lx, ly) = (p.log_x, p.log_y);
    let y_label = if ly {
        format!("|{}| (log)", p.metric.label())
    } else {
        p.metric.label().to_string()
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
            color: run_color(runs, &r.id),
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
                for Drawn {
                    run: r, color: c, ..
                } in &drawn
                {
                    let (rect, _) =
                        ui.allocate_exact_size(egui::vec2(22.0, 12.0), egui::Sense::hover());
                    ui.painter().line_segment(
                        [rect.left_center(), rect.right_center()],
                        egui::Stroke::new(2.5, *c),
                    );
                    ui.label(r.label());
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
            color: super::rgb(run_color(&runs, &r.id)),
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

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum FieldsBy {
    SegmentType,
    Label,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Score {
    Precision,
    Recall,
    F1,
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct FieldsPane {
    pub by: FieldsBy,
    pub score: Score,
}

impl Default for FieldsPane {
    fn default() -> Self {
        FieldsPane {
            by: FieldsBy::Label,
            score: Score::F1,
        }
    }
}

pub fn fields_ui(state: &mut AppState, p: &mut FieldsPane, ui: &mut egui::Ui) {
    ui.heading("Per-field scores");
    ui.horizontal(|ui| {
        ui.selectable_value(&mut p.by, FieldsBy::Label, "per label (token)");
        ui.selectable_value(&mut p.by, FieldsBy::SegmentType, "per segment type");
        ui.separator();
        ui.selectable_value(&mut p.score, Score::Precision, "precision");
        ui.selectable_value(&mut p.score, Score::Recall, "recall");
        ui.selectable_value(&mut p.score, Score::F1, "F1");
    });
    // Colours as on the Curves pane: by position among every ticked run.
    let ticked = selected_runs(state);
    let runs: Vec<&RunEntry> = ticked
        .iter()
        .copied()
        .filter(|r| r.metrics.is_some())
        .collect();
    if runs.is_empty() {
        ui.weak("Tick finished runs with test data in the Runs pane.");
        return;
    }
    // Each run's table, borrowed once (it was cloned per run, per cell, per frame).
    let tables: Vec<_> = runs
        .iter()
        .map(|r| {
            let m = r.metrics.as_ref().expect("filtered");
            match p.by {
                FieldsBy::Label => &m.labels,
                FieldsBy::SegmentType => &m.segment_types,
            }
        })
        .collect();
    let mut cats: Vec<String> = tables
        .iter()
        .flat_map(|t| t.keys().cloned())
        .filter(|c| !(p.by == FieldsBy::Label && c == "O"))
        .collect();
    cats.sort();
    cats.dedup();
    let pick = |prf: &crate::eval::metrics::Prf| match p.score {
        Score::Precision => prf.precision,
        Score::Recall => prf.recall,
        Score::F1 => prf.f1,
    };
    let k = runs.len() as f64;
    let w = 0.8 / k;
    let charts: Vec<(String, Color32, Vec<f64>)> = runs
        .iter()
        .zip(&tables)
        .map(|(r, t)| {
            (
                r.label(),
                run_color(&ticked, &r.id),
                cats.iter()
                    .map(|c| t.get(c).map(pick).unwrap_or(0.0))
                    .collect(),
            )
        })
        .collect();
    let names = cats.clone();
    let score_name = format!("{:?}", p.score);
    let h = ((ui.available_height() - 40.0) * 0.55).max(180.0);
    let scope = ui.scope(|ui| {
        // The legend above the plot (inside it needed headroom to 130 %).
        let legend = ui
            .horizontal_wrapped(|ui| {
                for (name, color, _) in &charts {
                    let (r, _) =
                        ui.allocate_exact_size(egui::vec2(12.0, 12.0), egui::Sense::hover());
                    ui.painter().rect_filled(r, 1.0, *color);
                    ui.label(name);
                    ui.add_space(8.0);
                }
            })
            .response
            .rect;
        pane_plot("fields-plot")
            .height((h - legend.height() - 4.0).max(140.0))
            .include_y(0.0)
            .include_y(100.0)
            .y_axis_label(format!("{score_name} %"))
            .allow_scroll(false)
            .x_axis_formatter(category_axis(names))
            .show(ui, |plot| {
                for (j, (name, color, vals)) in charts.iter().enumerate() {
                    let bars: Vec<egui_plot::Bar> = vals
                        .iter()
                        .enumerate()
                        .map(|(i, v)| {
                            // Filled in the run's colour: the default 20 % fill was near
                            // black on the dark theme and did not match the legend.
                            egui_plot::Bar::new(i as f64 - 0.4 + w * (j as f64 + 0.5), *v)
                                .width(w * 0.95)
                                .fill(color.gamma_multiply(0.75))
                                .stroke(egui::Stroke::new(1.0, *color))
                                .name(format!("{} · {}", cats[i], name))
                        })
                        .collect();
                    plot.bar_chart(egui_plot::BarChart::new(name.clone(), bars).color(*color));
                }
            })
    });
    let rect = scope.response.rect;
    // The table beneath: category × run × (P, R, F1).
    let mut header = vec!["field".to_string()];
    for r in &runs {
        for s in ["P", "R", "F1"] {
            header.push(format!("{} {s}", r.label()));
        }
    }
    let rows: Vec<Vec<String>> = cats
        .iter()
        .map(|c| {
            let mut row = vec![c.clone()];
            for t in &tables {
                match t.get(c) {
                    Some(x) => {
                        row.push(format!("{:.2}", x.precision));
                        row.push(format!("{:.2}", x.recall));
                        row.push(format!("{:.2}", x.f1));
                    }
                    None => row.extend(["–".into(), "–".into(), "–".into()]),
                }
            }
            row
        })
        .collect();
    // On screen the score the plot shows, one column per run (four runs' P, R and F1 were
    // twelve columns, cut at 1280×800); the CSV keeps all three.
    egui::ScrollArea::both()
        .id_salt("fields-table")
        .max_height((ui.available_height() - 50.0).max(60.0))
        .show(ui, |ui| {
            egui::Grid::new("fields-grid").striped(true).show(ui, |ui| {
                ui.strong(format!("{score_name} %"));
                for (name, color, _) in &charts {
                    ui.colored_label(
                        super::appearance::text_on(*color, ui.visuals()),
                        egui::RichText::new(name).strong(),
                    );
                }
                ui.end_row();
                for c in &cats {
                    ui.label(c);
                    for t in &tables {
                        ui.label(t.get(c).map_or("–".into(), |x| format!("{:.2}", pick(x))));
                    }
                    ui.end_row();
                }
            });
        });
    ui.weak("Precision, recall and F1 of every run: Save CSV.");
    let title = format!(
        "{score_name} per {}",
        if p.by == FieldsBy::Label {
            "label"
        } else {
            "segment type"
        }
    );
    ui.horizontal(|ui| {
        if ui.button("Save PNG").clicked() {
            state.request_png(rect, "fields");
        }
        if ui.button("Save SVG").clicked() {
            let bars: Vec<_> = charts
                .iter()
                .map(|(n, c, v)| (n.clone(), super::rgb(*c), v.clone()))
                .collect();
            let svg = svg_bars(&title, &format!("{score_name} %"), &cats, &bars);
            state.save_svg("fields", &svg);
        }
        if ui.button("Save CSV").clicked() {
            state.save_csv("fields", &header, &rows);
        }
    });
}

/// Flattens JSON into `path = value` pairs for the spec diff.
fn flatten(prefix: &str, v: &serde_json::Value, out: &mut Vec<(String, String)>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&p, x, out);
            }
        }
        serde_json::Value::String(s) => out.push((prefix.to_string(), s.clone())),
        serde_json::Value::Null => out.push((prefix.to_string(), "–".into())),
        other => out.push((prefix.to_string(), other.to_string())),
    }
}

/// One row per spec field for each run, and whether the runs differ in it.
pub fn spec_diff(runs: &[&RunEntry]) -> Vec<(String, Vec<String>, bool)> {
    let flat: Vec<Vec<(String, String)>> = runs
        .iter()
        .map(|r| {
            let mut out = vec![];
            flatten(
                "",
                &serde_json::to_value(&r.spec).unwrap_or_default(),
                &mut out,
            );
            out
        })
        .collect();
    let mut keys: Vec<String> = flat
        .iter()
        .flat_map(|f| f.iter().map(|(k, _)| k.clone()))
        .collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .map(|k| {
            let vals: Vec<String> = flat
                .iter()
                .map(|f| {
                    f.iter()
                        .find(|(kk, _)| *kk == k)
                        .map(|(_, v)| v.clone())
                        .unwrap_or_else(|| "–".into())
                })
                .collect();
            let differs = vals.iter().any(|v| *v != vals[0]);
            (k, vals, differs)
        })
        .collect()
}

/// Final metrics rows for the comparison table.
pub fn metrics_rows(runs: &[&RunEntry]) -> Vec<(String, Vec<String>)> {
    let f = |o: Option<f64>, p: usize| o.map(|x| format!("{x:.p$}")).unwrap_or_else(|| "–".into());
    type Row<'a> = (&'a str, Box<dyn Fn(&RunEntry) -> String>);
    let rows: Vec<Row> = vec![
        (
            "status",
            Box::new(|r: &RunEntry| r.status.label().to_string()),
        ),
        (
            "iterations",
            Box::new(|r: &RunEntry| r.iteration().to_string()),
        ),
        (
            "stop reason",
            Box::new(|r: &RunEntry| {
                r.summary
                    .as_ref()
                    .and_then(|s| s.stop_reason.as_ref().map(|x| format!("{x:?}")))
                    .unwrap_or_else(|| "–".into())
            }),
        ),
        (
            "train seconds",
            Box::new(move |r: &RunEntry| f(r.summary.as_ref().map(|s| s.train_seconds), 2)),
        ),
        (
            "setup seconds",
            Box::new(move |r: &RunEntry| f(r.summary.as_ref().map(|s| s.setup_seconds), 2)),
        ),
        (
            "evaluations",
            Box::new(|r: &RunEntry| {
                r.summary
                    .as_ref()
                    .map(|s| s.evaluations.to_string())
                    .unwrap_or_else(|| "–".into())
            }),
        ),
        (
            "counted operations",
            Box::new(|r: &RunEntry| {
                r.summary
                    .as_ref()
                    .map(|s| format!("{:.3e}", s.ops as f64))
                    .unwrap_or_else(|| "–".into())
            }),
        ),
        (
            "parameters",
            Box::new(|r: &RunEntry| {
                r.summary
                    .as_ref()
                    .map(|s| s.n_params.to_string())
                    .unwrap_or_else(|| "–".into())
            }),
        ),
        (
            "final objective",
            Box::new(move |r: &RunEntry| f(r.summary.as_ref().and_then(|s| s.final_objective), 4)),
        ),
        (
            "token accuracy %",
            Box::new(move |r: &RunEntry| f(r.metrics.as_ref().map(|m| m.token_accuracy), 2)),
        ),
        (
            "segment F1",
            Box::new(move |r: &RunEntry| f(r.metrics.as_ref().and_then(|m| m.segment_f1()), 2)),
        ),
        (
            "held-out log-likelihood",
            Box::new(move |r: &RunEntry| f(r.metrics.as_ref().and_then(|m| m.log_likelihood), 3)),
        ),
        (
            "|θ − θ0|",
            Box::new(move |r: &RunEntry| f(r.summary.as_ref().and_then(|s| s.param_error), 4)),
        ),
        (
            "training items",
            Box::new(|r: &RunEntry| {
                r.summary
                    .as_ref()
                    .map(|s| s.n_sequences.to_string())
                    .unwrap_or_else(|| "–".into())
            }),
        ),
    ];
    rows.into_iter()
        .map(|(name, get)| (name.to_string(), runs.iter().map(|r| get(r)).collect()))
        .collect()
}

/// Of the ticked runs that know their generating parameters (`param_error`), one series per
/// estimator: (training items n, |θ − θ0|), sorted by n. Empty unless two runs qualify.
fn consistency_series(runs: &[&RunEntry]) -> Vec<Series> {
    let mut by: std::collections::BTreeMap<String, Vec<[f64; 2]>> = Default::default();
    for r in runs {
        if let Some(s) = &r.summary {
            if let Some(e) = s.param_error {
                by.entry(r.spec.estimator.name().to_string())
                    .or_default()
                    .push([s.n_sequences as f64, e]);
            }
        }
    }
    if by.values().map(|v| v.len()).sum::<usize>() < 2 {
        return vec![];
    }
    by.into_iter()
        .enumerate()
        .map(|(i, (name, mut points))| {
            points.sort_by(|a, b| a[0].total_cmp(&b[0]));
            Series {
                name,
                color: super::rgb(super::palette(i)),
                points,
                markers: false,
            }
        })
        .collect()
}

fn consistency_plot(series: &[Series], ui: &mut egui::Ui, width: f32) -> egui::Rect {
    let scope = ui.scope(|ui| {
        pane_plot("consistency-plot")
            .x_grid_spacer(log_grid)
            .y_grid_spacer(log_grid)
            .height(260.0)
            .width(width.clamp(240.0, 900.0))
            .legend(egui_plot::Legend::default())
            .x_axis_label("training items n (log)")
            .y_axis_label("|θ − θ0| (log)")
            .x_axis_formatter(|m, r| axis_text(true, m.value, r))
            .y_axis_formatter(|m, r| axis_text(true, m.value, r))
            .show(ui, |plot| {
                for s in series {
                    let pts: Vec<[f64; 2]> = s
                        .points
                        .iter()
                        .filter(|p| p[0] > 0.0 && p[1] > 0.0)
                        .map(|p| [p[0].log10(), p[1].log10()])
                        .collect();
                    plot.line(
                        egui_plot::Line::new(s.name.clone(), pts.clone())
                            .color(super::color(s.color))
                            .width(1.8),
                    );
                    plot.points(
                        egui_plot::Points::new(s.name.clone(), pts)
                            .color(super::color(s.color))
                            .radius(3.5),
                    );
                }
            })
    });
    scope.response.rect
}

pub fn compare_ui(state: &mut AppState, p: &mut CurvesPane, ui: &mut egui::Ui) {
    ui.heading("Compare runs");
    // Out of the state while the ticked runs are borrowed from it; back after the tables.
    let mut focus = std::mem::take(&mut state.focus);
    let runs = selected_runs(state);
    if runs.len() < 2 {
        ui.weak("Tick two or more runs in the Runs pane to compare them.");
        state.focus = focus;
        return;
    }
    let diff = spec_diff(&runs);
    let metrics = metrics_rows(&runs);
    let labels: Vec<String> = runs.iter().map(|r| r.label()).collect();
    let colors: Vec<Color32> = runs.iter().map(|r| run_color(&runs, &r.id)).collect();
    let changed = diff.iter().filter(|d| d.2).count();
    let mut rect = egui::Rect::NOTHING;
    let (mut save_csv, mut save_png) = (false, false);
    let consistency = consistency_series(&runs);
    // The tables below may be wider than the pane: the plot keeps to what is visible.
    let visible_width = ui.available_width() - 16.0;
    let mut consistency_rect = egui::Rect::NOTHING;
    let mut save_consistency = (false, false, false);
    ui.horizontal(|ui| {
        save_csv = ui.button("Save table CSV").clicked();
        save_png = ui.button("Save curves PNG").clicked();
        if !consistency.is_empty() {
            ui.separator();
            save_consistency = (
                ui.button("Save consistency PNG").clicked(),
                ui.button("Save consistency SVG").clicked(),
                ui.button("Save consistency CSV").clicked(),
            );
        }
    });
    // Both ways: with three runs the tables are wider than a 1400 px window's pane (5.3).
    egui::ScrollArea::both()
        .id_salt("compare-scroll")
        .show(ui, |ui| {
            if !consistency.is_empty() {
                ui.strong(
                    "Consistency: |θ − θ0| against training items n, per estimator (log–log)",
                );
                consistency_rect = consistency_plot(&consistency, ui, visible_width);
                ui.separator();
            }
            ui.strong(format!("Specs ({changed} field(s) differ, highlighted)"));
            egui::Grid::new("compare-spec")
                .striped(true)
                .show(ui, |ui| {
                    ui.strong("field");
                    for (l, c) in labels.iter().zip(&colors) {
                        ui.colored_label(*c, l);
                    }
                    ui.end_row();
                    let warn = ui.visuals().warn_fg_color;
                    for (k, vals, differs) in &diff {
                        if *differs {
                            ui.label(egui::RichText::new(format!("≠ {k}")).color(warn).strong());
                        } else {
                            ui.label(k);
                        }
                        for v in vals {
                            // Long paths end in what tells them apart; the whole on hover, so
                            // three runs fit a 1400 px window's pane (5.3).
                            let shown = short_value(v);
                            let r = if *differs {
                                ui.label(egui::RichText::new(shown).color(warn))
                            } else {
                                ui.weak(shown)
                            };
                            if v.chars().count() > SHORT_VALUE {
                                r.on_hover_text(v);
                            }
                        }
                        ui.end_row();
                    }
                });
            ui.separator();
            ui.strong("Final metrics and times");
            egui::Grid::new("compare-metrics")
                .striped(true)
                .show(ui, |ui| {
                    ui.strong("");
                    for (l, c) in labels.iter().zip(&colors) {
                        ui.colored_label(*c, l);
                    }
                    ui.end_row();
                    for (k, vals) in &metrics {
                        ui.label(k);
                        for v in vals {
                            ui.label(v);
                        }
                        ui.end_row();
                    }
                });
            ui.separator();
            let tests = ui.scope(|ui| paired_tests(&runs, p, ui));
            // Marked once the tests are drawn, not their spinner: the table arrives frames
            // later and is what must come into view.
            if tests.inner {
                focus.mark(ui, "compare-tests", tests.response.rect);
            }
            ui.separator();
            curve_controls(p, ui, "compare");
            rect = curve_plot(&runs, p, ui, "compare-curves", 260.0);
        });
    state.focus = focus;
    if save_consistency.0 {
        state.request_png(consistency_rect.intersect(ui.clip_rect()), "consistency");
    }
    if save_consistency.1 {
        let svg = svg_lines(
            "|θ − θ0| against training items",
            "training items n",
            "|θ − θ0|",
            &consistency,
        );
        state.save_svg("consistency", &svg);
    }
    if save_consistency.2 {
        let header = vec!["estimator".into(), "n".into(), "param_error".into()];
        let rows: Vec<Vec<String>> = consistency
            .iter()
            .flat_map(|s| {
                s.points
                    .iter()
                    .map(|p| vec![s.name.clone(), p[0].to_string(), p[1].to_string()])
                    .collect::<Vec<_>>()
            })
            .collect();
        state.save_csv("consistency", &header, &rows);
    }
    let mut header = vec!["field".to_string()];
    header.extend(labels.iter().cloned());
    let rows: Vec<Vec<String>> = diff
        .iter()
        .map(|(k, v, _)| {
            std::iter::once(format!("spec.{k}"))
                .chain(v.iter().cloned())
                .collect()
        })
        .chain(metrics.iter().map(|(k, v)| {
            std::iter::once(k.clone())
                .chain(v.iter().cloned())
                .collect()
        }))
        .collect();
    if save_csv {
        state.save_csv("compare", &header, &rows);
    }
    if save_png {
        // The curves may be scrolled out of view: save what is on screen of them.
        state.request_png(rect.intersect(ui.clip_rect()), "compare-curves");
    }
}

/// The paired tests of every pair of ticked runs (the engine's
/// [`crate::run::compare::compare_runs`], as the command line's `compare` prints them):
/// warnings first, then one row per pair and its reading in words.
/// Returns whether the tests are drawn (false while they are computed).
fn paired_tests(runs: &[&RunEntry], p: &mut CurvesPane, ui: &mut egui::Ui) -> bool {
    use crate::eval::significance::show_p;
    // The sentences wrap at the visible edge of the pane (it scrolls sideways for the wide
    // tables, and they were cut off at 1280×800).
    let visible = visible_width(ui, 240.0);
    let key: String = runs
        .iter()
        .map(|r| format!("{}:{}:{};", r.id, r.status.label(), r.metrics.is_some()))
        .collect();
    let t = &mut *p.tests;
    if let Some((k, job)) = t.job.as_mut() {
        if let Some(r) = job.poll() {
            let c = r.unwrap_or_else(|e| crate::run::compare::Comparison {
                warnings: vec![e],
                ..Default::default()
            });
            t.shown = Some((k.clone(), std::sync::Arc::new(c)));
            t.job = None;
        }
    }
    let shown_now = t.shown.as_ref().is_some_and(|(k, _)| *k == key);
    let computing = t.job.as_ref().is_some_and(|(k, _)| *k == key);
    if !shown_now && !computing {
        let finished: Vec<&&RunEntry> = runs
            .iter()
            .filter(|r| r.status == crate::app::runs::RunStatus::Finished)
            .collect();
        // The runs' names (short enough for the table at 1280×800); the id too where two
        // ticked runs share a name.
        let name = |r: &RunEntry| match r.spec.name.as_deref().map(str::trim) {
            Some(n)
                if !n.is_empty()
                    && finished
                        .iter()
                        .filter(|q| q.spec.name.as_deref().map(str::trim) == Some(n))
                        .count()
                        == 1 =>
            {
                n.to_string()
            }
            _ => r.label(),
        };
        let owned: Vec<(String, crate::run::RunSpec, Option<crate::eval::Metrics>)> = finished
            .iter()
            .map(|r| (name(r), r.spec.clone(), r.metrics.clone()))
            .collect();
        let job = super::jobs::Job::spawn(ui.ctx(), "paired tests", move || {
            let scored: Vec<crate::run::compare::Scored> = owned
                .iter()
                .map(|(name, spec, m)| crate::run::compare::Scored {
                    name: name.clone(),
                    spec,
                    test: m.as_ref(),
                })
                .collect();
            Ok(crate::run::compare::compare_runs(&scored))
        });
        t.job = Some((key.clone(), job));
    }
    let Some(c) = t.shown.as_ref().filter(|(k, _)| *k == key).map(|s| &s.1) else {
        ui.horizontal(|ui| {
            ui.spinner();
            ui.weak("computing the paired tests…");
        });
        return false;
    };
    let c = c.clone();
    // The runs' scores beside their tests, named: the table above may be scrolled off when a
    // lesson brings the tests into view.
    ui.strong("Scores on the test items");
    egui::Grid::new("compare-scores")
        .striped(true)
        .num_columns(4)
        .show(ui, |ui| {
            for h in [
                "run",
                "token accuracy %",
                "segment F1",
                "held-out log-likelihood",
            ] {
                ui.strong(h);
            }
            ui.end_row();
            for r in runs {
                let Some(m) = r.metrics.as_ref() else {
                    continue;
                };
                let c = super::appearance::text_on(run_color(runs, &r.id), ui.visuals());
                ui.colored_label(c, r.label());
                ui.label(format!("{:.2}", m.token_accuracy));
                ui.label(m.segment_f1().map_or("–".into(), |f| format!("{f:.2}")));
                ui.label(m.log_likelihood.map_or("–".into(), |l| format!("{l:.1}")));
                ui.end_row();
            }
        });
    ui.add_space(4.0);
    ui.strong("Paired tests on the test items");
    let wrapped = |ui: &mut egui::Ui, text: egui::RichText| {
        ui.scope(|ui| {
            ui.set_max_width(visible);
            ui.add(egui::Label::new(text).wrap());
        });
    };
    wrapped(
        ui,
        egui::RichText::new(
            "McNemar: tokens one run labels right and the other wrong (only A, only B), exact \
         two-sided p. Paired t: wrong tokens per sequence. Bootstrap: the score difference A − B \
         with its 95 % interval over resampled sequences. Below p = 0.05 a difference is \
         unlikely to be chance.",
        )
        .weak(),
    );
    for w in &c.warnings {
        let text = egui::RichText::new(format!("warning: {w}")).color(ui.visuals().warn_fg_color);
        wrapped(ui, text);
    }
    if c.pairs.is_empty() {
        if runs
            .iter()
            .any(|r| r.status != crate::app::runs::RunStatus::Finished)
        {
            ui.weak("The tests appear when the runs have finished.");
        }
        return true;
    }
    egui::Grid::new("compare-tests")
        .striped(true)
        .show(ui, |ui| {
            for h in [
                "A",
                "B",
                "only A",
                "only B",
                "McNemar p",
                "paired t p",
                "A − B in points [95 % bootstrap]",
            ] {
                ui.strong(h);
            }
            ui.end_row();
            for t in &c.pairs {
                ui.label(&t.a);
                ui.label(&t.b);
                match t.tokens {
                    Some(m) => {
                        ui.label(m.only_a.to_string());
                        ui.label(m.only_b.to_string());
                        ui.label(show_p(m.p));
                    }
                    None => {
                        for _ in 0..3 {
                            ui.weak("–");
                        }
                    }
                }
                ui.label(show_p(t.paired_t.p));
                match &t.bootstrap {
                    Some(b) => ui
                        .label(format!(
                            "{:+.2} [{:+.2}, {:+.2}]",
                            b.difference, b.low, b.high
                        ))
                        .on_hover_text(format!(
                            "{} in points, {} resamples; bootstrap p = {}",
                            b.metric,
                            b.resamples,
                            show_p(b.p)
                        )),
                    None => ui.weak("–"),
                };
                ui.end_row();
            }
        });
    for t in &c.pairs {
        wrapped(ui, egui::RichText::new(&t.reading));
    }
    true
}

/// Characters of a spec value Compare shows before eliding its start.
const SHORT_VALUE: usize = 28;

/// `v`, or "…" and its last characters when longer than [`SHORT_VALUE`].
fn short_value(v: &str) -> String {
    let n = v.chars().count();
    if n <= SHORT_VALUE {
        return v.to_string();
    }
    let tail: String = v.chars().skip(n - (SHORT_VALUE - 1)).collect();
    format!("…{tail}")
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
    }
}
