//! Compare: the selected runs' specs diffed, their final metrics, their curves together, and the
//! paired tests of the compare engine (`run::compare`, computed off the GUI thread).

use super::plots::{
    axis_text, curve_controls, curve_plot, log_grid, pane_plot, run_color, selected_runs,
    visible_width, CurvesPane,
};
use super::runs::RunEntry;
use super::AppState;
use crate::experiments::charts::{svg_lines, Series};
use egui::Color32;

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
            // A field no run has ("–" throughout) is no difference.
            let differs = vals.iter().any(|v| *v != vals[0]) && vals.iter().any(|v| v != "–");
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
            Box::new(|r: &RunEntry| r.likelihood_text(3)),
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
        // A metric no ticked run has (segment F1 of untagged labels) says nothing.
        .filter(|(_, vals): &(String, Vec<String>)| vals.iter().any(|v| v != "–"))
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
    let colors: Vec<Color32> = runs.iter().map(|r| run_color(&r.id)).collect();
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
            super::plots::mixed_data_warning(&runs, ui);
            split_hints(&runs, ui);
            if !consistency.is_empty() {
                ui.strong(
                    "Consistency: |θ − θ0| against training items n, per estimator (log–log)",
                );
                consistency_rect = consistency_plot(&consistency, ui, visible_width);
                ui.separator();
            }
            // The tests first: what a statistics class reads; the long spec table folds.
            let tests = ui.scope(|ui| paired_tests(&runs, p, ui));
            // Marked once the tests are drawn, not their spinner: the table arrives frames
            // later and is what must come into view.
            if tests.inner {
                focus.mark(ui, "compare-tests", tests.response.rect);
            }
            ui.separator();
            ui.strong("Final metrics and times");
            metrics_grid(ui, &labels, &colors, &metrics);
            ui.separator();
            egui::CollapsingHeader::new(format!("Specs ({changed} field(s) differ, highlighted)"))
                .id_salt("compare-specs")
                .default_open(true)
                .show(ui, |ui| spec_grid(ui, &labels, &colors, &diff));
            ui.separator();
            curve_controls(p, ui, "compare");
            rect = curve_plot(&runs, p, ui, "compare-curves", 260.0);
        });
    state.focus = focus;
    if save_consistency.0 {
        state.request_png(consistency_rect.intersect(ui.clip_rect()), "consistency");
    }
    if save_consistency.1 || save_consistency.2 {
        save_consistency_files(state, &consistency, save_consistency.1, save_consistency.2);
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

/// The specs side by side, the fields that differ highlighted; long values shortened to what
/// tells them apart, the whole on hover.
fn spec_grid(
    ui: &mut egui::Ui,
    labels: &[String],
    colors: &[Color32],
    diff: &[(String, Vec<String>, bool)],
) {
    egui::Grid::new("compare-spec")
        .striped(true)
        .show(ui, |ui| {
            ui.strong("field");
            for (l, c) in labels.iter().zip(colors) {
                ui.colored_label(*c, l);
            }
            ui.end_row();
            let warn = ui.visuals().warn_fg_color;
            for (k, vals, differs) in diff {
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
}

/// The final metrics and times side by side.
fn metrics_grid(
    ui: &mut egui::Ui,
    labels: &[String],
    colors: &[Color32],
    metrics: &[(String, Vec<String>)],
) {
    egui::Grid::new("compare-metrics")
        .striped(true)
        .show(ui, |ui| {
            ui.strong("");
            for (l, c) in labels.iter().zip(colors) {
                ui.colored_label(*c, l);
            }
            ui.end_row();
            for (k, vals) in metrics {
                ui.label(k);
                for v in vals {
                    ui.label(v);
                }
                ui.end_row();
            }
        });
}

/// The consistency plot's data as SVG and/or CSV.
fn save_consistency_files(state: &mut AppState, consistency: &[Series], svg: bool, csv: bool) {
    if svg {
        let svg = svg_lines(
            "|θ − θ0| against training items",
            "training items n",
            "|θ − θ0|",
            consistency,
        );
        state.save_svg("consistency", &svg);
    }
    if csv {
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
}

/// The paired tests of every pair of ticked runs (the engine's
/// [`crate::run::compare::compare_runs`], as the command line's `compare` prints them):
/// warnings first, then one row per pair and its reading in words.
/// Returns whether the tests are drawn (false while they are computed).
fn paired_tests(runs: &[&RunEntry], p: &mut CurvesPane, ui: &mut egui::Ui) -> bool {
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
            .map(|r| (name(r), r.spec_as_started(), r.metrics.clone()))
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
            crate::app::appearance::busy(ui);
            ui.weak("computing the paired tests…");
        });
        return false;
    };
    let c = c.clone();
    // The runs' scores beside their tests, named: the table above may be scrolled off when a
    // lesson brings the tests into view.
    ui.strong("Scores on the test items");
    scores_grid(ui, runs);
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
            "Every difference is A − B: positive when A is better. McNemar: tokens one run labels \
         right and the other wrong (only A, only B), exact two-sided p. Paired t: right tokens \
         per sequence. Bootstrap: the score named in its column, A − B with its 95 % interval \
         over resampled sequences. Below p = 0.05, a difference this large would be rare (under 1 in 20) if the two runs were equally accurate.",
        )
        .weak(),
    );
    // The different-data warning is said above the tables, for every ticked run.
    for w in c
        .warnings
        .iter()
        .filter(|w| !w.starts_with(crate::run::compare::MIXED_DATA))
    {
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
    tests_grid(ui, &c.pairs);
    if let Some(note) = c.holm_note() {
        wrapped(ui, egui::RichText::new(note).weak());
    }
    for t in &c.pairs {
        wrapped(ui, egui::RichText::new(&t.reading));
    }
    true
}

/// The factorisation hint ([`crate::run::registry::split_hint`]) under the runs it applies
/// to: piecewise on `split` over segment labels.
fn split_hints(runs: &[&RunEntry], ui: &mut egui::Ui) {
    let mut hint = None;
    let named: Vec<String> = runs
        .iter()
        .filter(|r| {
            let segments = r.metrics.as_ref().is_some_and(|m| m.segments.gold > 0);
            let h = crate::run::registry::split_hint(&r.spec.model, &r.spec.estimator, segments);
            hint = hint.or(h);
            h.is_some()
        })
        .map(|r| r.label())
        .collect();
    if let Some(h) = hint {
        let text = egui::RichText::new(format!("hint for {}: {h}", named.join(", ")))
            .color(ui.visuals().warn_fg_color);
        super::plots::wrapped_line(ui, text);
    }
}

/// The runs' scores on the test items, named beside their tests.
fn scores_grid(ui: &mut egui::Ui, runs: &[&RunEntry]) {
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
                let c = super::appearance::text_on(run_color(&r.id), ui.visuals());
                ui.colored_label(c, r.label());
                ui.label(format!("{:.2}", m.token_accuracy));
                ui.label(m.segment_f1().map_or("–".into(), |f| format!("{f:.2}")));
                ui.label(r.likelihood_text(1));
                ui.end_row();
            }
        });
}

/// The bootstrap column's header, on two lines (the table fits a 1280×800 pane): the score it
/// resamples, named — segment F1 where the labels form segments, token accuracy otherwise;
/// "score per row" when the pairs differ.
pub fn bootstrap_header(pairs: &[crate::eval::significance::PairComparison]) -> String {
    let mut metrics: Vec<&str> = pairs
        .iter()
        .filter_map(|t| t.bootstrap.as_ref().map(|b| b.metric.as_str()))
        .collect();
    metrics.dedup();
    match metrics.as_slice() {
        [m] => format!("bootstrap A − B [95 %]\n{m}, points"),
        [] => "bootstrap A − B [95 %]".into(),
        _ => "bootstrap A − B [95 %]\nscore per row, points".into(),
    }
}

/// One row per pair of runs: McNemar on tokens, the paired t-test, the bootstrap interval, and
/// with more than three pairs the Holm-adjusted p.
fn tests_grid(ui: &mut egui::Ui, pairs: &[crate::eval::significance::PairComparison]) {
    use crate::eval::significance::show_p;
    let holm = pairs.iter().any(|t| t.holm_p.is_some());
    let boot = bootstrap_header(pairs);
    let mixed = boot.ends_with("score per row, points");
    egui::Grid::new("compare-tests")
        .striped(true)
        .show(ui, |ui| {
            // Two lines each, saying what each column counts: McNemar on tokens while the
            // bootstrap may be on segment F1.
            // A over B in one column: two run names side by side made the table wider than
            // a projector's pane (1024×768).
            let mut headers = vec![
                "A\nB",
                "only A\n(tokens)",
                "only B\n(tokens)",
                "McNemar p\n(tokens)",
                "paired t p\n(tokens/seq)",
                boot.as_str(),
            ];
            if holm {
                headers.push("Holm p");
            }
            for h in headers {
                ui.strong(h);
            }
            ui.end_row();
            for t in pairs {
                ui.label(format!("{}\n{}", t.a, t.b));
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
                    Some(b) => {
                        let cell = format!("{:+.2} [{:+.2}, {:+.2}]", b.difference, b.low, b.high);
                        ui.label(if mixed {
                            format!("{cell} {}", b.metric)
                        } else {
                            cell
                        })
                        .on_hover_text(format!(
                            "{} A − B in points, {} resamples; bootstrap {}",
                            b.metric,
                            b.resamples,
                            b.p_text()
                        ))
                    }
                    None => ui.weak("–"),
                };
                if holm {
                    match t.holm_p {
                        Some(h) => ui.label(show_p(h)),
                        None => ui.weak("–"),
                    };
                }
                ui.end_row();
            }
        });
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
