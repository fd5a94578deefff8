//! The Constraints pane — "what the constraints buy" (002 §2–3). For one training item, the
//! cluster beliefs of up to three runs side by side (by default the latest pw, camel0 and
//! cccp-camel runs): every variable filled with its own cluster's most probable class, every
//! sepset drawn from the variable to the other cluster holding it and coloured by how far the
//! two clusters disagree on it, max_s |μ_src(s) − μ_dst(s)|. Piecewise is CAMEL with δ and g
//! removed, so its clusters disagree; CAMEL's δ make them agree. A click on a cluster shows its
//! belief table in every run. The beliefs are computed on background threads
//! (`TrainedRun::into_clusters`), from each run's own training set.

use super::jobs::Transient;
use super::jobs::{drain_finished, Job};
use super::AppState;
use crate::run::trained::RunClusters;
use crate::run::TrainedRun;
use egui::{vec2, Color32, Pos2, Rect, Sense, Stroke};
use std::collections::HashMap;
use std::sync::Arc;

/// Runs shown at most.
const SLOTS: usize = 3;

/// The pane's settings (saved with the layout).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct ConstraintsPane {
    /// Run ids, left to right; an empty slot is filled with the latest run of pw, camel0 and
    /// cccp-camel in turn.
    pub runs: Vec<String>,
    /// The user picked the runs: empty slots stay empty.
    pub runs_touched: bool,
    /// Training item (of the runs' training set).
    pub item: usize,
    /// Selected cluster (factor index).
    pub selected: Option<usize>,
    /// The cluster beliefs computed (not saved with the layout).
    #[serde(skip)]
    pub runtime: Transient<ConstraintsRuntime>,
}

type Key = (String, usize);
/// A run's cluster beliefs: computing (None), failed, or done.
type Shown = Option<Result<Arc<RunClusters>, String>>;

/// Computed cluster beliefs and the jobs computing them.
#[derive(Default)]
pub struct ConstraintsRuntime {
    done: HashMap<Key, Result<Arc<RunClusters>, String>>,
    jobs: HashMap<Key, Job<RunClusters>>,
}

/// The estimators the default slots look for, in order.
const DEFAULTS: [&[&str]; SLOTS] = [
    &["pw"],
    &["camel0"],
    &["cccp-camel", "cccp-camel-empirical"],
];

/// Violation colour: green at or below 1e-4 (CAMEL's tolerance), red at 0.5 and above, on a
/// log scale between.
fn violation_color(v: f64) -> Color32 {
    let t = ((v.max(1e-12).log10() + 4.0) / (0.5f64.log10() + 4.0)).clamp(0.0, 1.0) as f32;
    egui::ecolor::Hsva::new(0.33 * (1.0 - t), 0.85, 0.55 + 0.35 * t, 1.0).into()
}

/// The latest finished run for each slot ("" where there is none).
fn default_runs(state: &AppState) -> Vec<String> {
    let finished: Vec<_> = state
        .runs
        .entries
        .iter()
        .filter(|e| e.summary.as_ref().is_some_and(|s| s.status == "finished"))
        .collect();
    DEFAULTS
        .iter()
        .map(|names| {
            finished
                .iter()
                .rev()
                .find(|e| names.contains(&e.spec.estimator.name()))
                .map_or(String::new(), |e| e.id.clone())
        })
        .collect()
}

pub fn ui(state: &mut AppState, p: &mut ConstraintsPane, ui: &mut egui::Ui) {
    ui.heading("Constraints");
    // Folded on a small screen: at 1024×768 its five lines left the pictures 115 px tall.
    super::appearance::explanation(ui, "What the pictures show", |ui| {
        super::papers::weak_cited(
            ui,
            "CAMEL (002) is piecewise training plus multipliers δ that make the clusters (factors) \
         agree on the variables they share, and, for CCCP, a linearisation g of the Bethe \
         entropy's sepset terms. Each picture is one run's clusters on one training item: a \
         variable's fill is its own cluster's most probable class, and each sepset line from it \
         to another cluster shows how much the two disagree on it. Click a cluster to see its \
         beliefs in every run.",
        );
    });
    // An empty slot takes its estimator's latest finished run, also one that finished after
    // the pane opened (issue 24, 5.11); a slot the user filled keeps its run.
    p.runs.resize(SLOTS, String::new());
    for (slot, d) in p.runs.iter_mut().zip(default_runs(state)) {
        if slot.is_empty() && !p.runs_touched {
            *slot = d;
        }
    }
    let ids: Vec<(String, String)> = state
        .runs
        .entries
        .iter()
        .filter(|e| e.summary.is_some() || e.status.is_live())
        .map(|e| (e.id.clone(), e.label()))
        .collect();
    run_pickers(ui, p, &ids);
    let ctx = ui.ctx().clone();
    let rt = &mut p.runtime;
    for (k, r) in drain_finished(&mut rt.jobs) {
        rt.done.insert(k, r.map(Arc::new));
    }
    let mut shown: Vec<(String, Shown)> = vec![];
    let mut waiting: std::collections::HashMap<String, String> = Default::default();
    for id in p.runs.iter().filter(|r| !r.is_empty()) {
        let Some(entry) = state.runs.get(id) else {
            continue;
        };
        // A run still training has no model yet: wait for it, and compute nothing (a cached
        // "still training" error would outlive the run).
        if entry.status != super::runs::RunStatus::Finished {
            waiting.insert(
                entry.label(),
                format!(
                    "waiting for the run to finish ({}, iteration {})…",
                    entry.status.label(),
                    entry.iteration()
                ),
            );
            shown.push((entry.label(), None));
            continue;
        }
        let key = (id.clone(), p.item);
        if !rt.done.contains_key(&key) && !rt.jobs.contains_key(&key) {
            let dir = entry.dir.clone();
            let item = p.item;
            rt.jobs.insert(
                key.clone(),
                Job::spawn(&ctx, format!("cluster beliefs of {id}"), move || {
                    TrainedRun::open(&dir)
                        .and_then(|r| r.into_clusters(item))
                        .map_err(|e| e.to_string())
                }),
            );
        }
        shown.push((entry.label(), rt.done.get(&key).cloned()));
    }
    if shown.is_empty() {
        ui.label(
            "No finished runs yet. Train pw, camel0 and cccp-camel on the same data (Runs pane, \
             or `piecewise-lab train --estimator camel0 …`) to compare their clusters here.",
        );
        return;
    }
    // The item count of the first computed run bounds the item field.
    if let Some(n) = shown
        .iter()
        .find_map(|(_, r)| r.as_ref().and_then(|r| r.as_ref().ok()).map(|c| c.n_items))
    {
        if p.item >= n {
            p.item = n.saturating_sub(1);
        }
    }
    ui.horizontal_wrapped(|ui| {
        disagreement_key(ui);
        if let Some(c) = shown
            .iter()
            .find_map(|(_, r)| r.as_ref().and_then(|r| r.as_ref().ok()))
        {
            fill_key(ui, c);
        }
    });
    let width = ui.available_width() / shown.len() as f32 - 8.0;
    ui.horizontal_top(|ui| {
        for (label, r) in &shown {
            ui.vertical(|ui| {
                ui.set_width(width);
                ui.strong(label);
                match r {
                    None => {
                        ui.horizontal(|ui| {
                            crate::app::appearance::busy(ui);
                            ui.weak(
                                waiting
                                    .get(label)
                                    .map_or("computing cluster beliefs…", |w| w.as_str()),
                            );
                        });
                    }
                    Some(Err(e)) => {
                        ui.colored_label(ui.visuals().error_fg_color, e);
                    }
                    Some(Ok(c)) => panel(ui, c, width, &mut p.selected),
                }
            });
        }
    });
    if let Some(a) = p.selected {
        ui.separator();
        ui.horizontal(|ui| {
            ui.strong(format!(
                "Cluster {a}: beliefs in each run (gold entry outlined)"
            ));
            if ui.button("Close").clicked() {
                p.selected = None;
            }
            super::graph_view::heat_key(ui);
        });
        // Each run's column in its share of the visible width (at 300 each, the second run's
        // marginal lines ran off the pane at 1024×768).
        let each = crate::app::plots::visible_width(ui, 200.0) / shown.len().max(1) as f32 - 12.0;
        egui::ScrollArea::horizontal().show(ui, |ui| {
            ui.horizontal_top(|ui| {
                for (label, r) in &shown {
                    if let Some(Ok(c)) = r {
                        cluster_table(ui, label, c, a, each);
                    }
                }
            });
        });
    }
}

/// The runs shown side by side (one picker a slot) and the training item.
fn run_pickers(ui: &mut egui::Ui, p: &mut ConstraintsPane, ids: &[(String, String)]) {
    ui.horizontal_wrapped(|ui| {
        for (k, slot) in p.runs.iter_mut().enumerate() {
            let shown = ids
                .iter()
                .find(|(id, _)| id == slot)
                .map_or("(none)".to_string(), |(_, l)| l.clone());
            egui::ComboBox::from_id_salt(("constraints-run", k))
                .selected_text(shown)
                .width(190.0)
                .show_ui(ui, |ui| {
                    let mut changed = ui.selectable_value(slot, String::new(), "(none)").changed();
                    for (id, label) in ids {
                        changed |= ui.selectable_value(slot, id.clone(), label).changed();
                    }
                    p.runs_touched |= changed;
                });
        }
        ui.separator();
        let l = ui.label("training item");
        ui.add(egui::DragValue::new(&mut p.item).range(0..=100_000))
            .labelled_by(l.id);
    });
}

/// The key of the sepset lines' colours: a continuous log scale of the disagreement, 1e-4 … 0.5.
fn disagreement_key(ui: &mut egui::Ui) {
    ui.horizontal(|ui| {
        ui.weak("sepset disagreement:");
        // A continuous scale, drawn as one: separate swatches hid that 0.42 is between
        // the "0.1" and "≥ 0.5" colours.
        let (r, _) = ui.allocate_exact_size(vec2(240.0, 26.0), Sense::hover());
        let strip = egui::Rect::from_min_size(r.min, vec2(r.width(), 10.0));
        // On violation_color's log scale, 1e-4 … 0.5.
        let span = 0.5f64.log10() + 4.0;
        let at = |v: f64| {
            let t = ((v.log10() + 4.0) / span).clamp(0.0, 1.0) as f32;
            strip.left() + t * strip.width()
        };
        super::appearance::gradient_strip(ui.painter(), strip, 48, |t| {
            violation_color(10f64.powf(-4.0 + f64::from(t) * span))
        });
        let ink = ui.visuals().weak_text_color();
        for (v, text) in [
            (1e-4, "≤ 1e-4"),
            (1e-3, "1e-3"),
            (1e-2, "1e-2"),
            (0.1, "0.1"),
            (0.5, "≥ 0.5"),
        ] {
            let x = at(v);
            ui.painter().line_segment(
                [
                    egui::pos2(x, strip.bottom()),
                    egui::pos2(x, strip.bottom() + 3.0),
                ],
                egui::Stroke::new(1.0, ink),
            );
            let align = match v {
                v if v <= 1e-4 => egui::Align2::LEFT_TOP,
                v if v >= 0.5 => egui::Align2::RIGHT_TOP,
                _ => egui::Align2::CENTER_TOP,
            };
            ui.painter().text(
                egui::pos2(x, strip.bottom() + 3.0),
                align,
                text,
                egui::FontId::proportional(11.0),
                ink,
            );
        }
    });
}

/// Which fill is which class, once for every picture (each run's own line cost the pictures
/// 20 px at 1024×768).
fn fill_key(ui: &mut egui::Ui, c: &RunClusters) {
    let inst = &c.instance;
    if inst.n_vars() == 0 {
        return;
    }
    ui.weak("fill:");
    let names = &c.family.labels(inst, 0).names;
    for k in super::appearance::display_order(names) {
        let (r, _) = ui.allocate_exact_size(vec2(10.0, 10.0), Sense::hover());
        ui.painter()
            .circle_filled(r.center(), 5.0, super::palette(k));
        ui.weak(&names[k]);
    }
    ui.weak("· ringed: not gold");
}

/// Where each cluster sits: a one-variable cluster on its variable, a larger one at the mean
/// of its variables.
fn cluster_positions(c: &RunClusters, var_pos: &[Pos2]) -> Vec<Pos2> {
    let inst = &c.instance;
    inst.factors
        .iter()
        .map(|f| {
            let s = inst.scope(f);
            let sum = s
                .iter()
                .fold(vec2(0.0, 0.0), |a, &v| a + var_pos[v as usize].to_vec2());
            (sum / s.len().max(1) as f32).to_pos2()
        })
        .collect()
}

fn panel(ui: &mut egui::Ui, c: &RunClusters, width: f32, selected: &mut Option<usize>) {
    let inst = &c.instance;
    let cl = &c.clusters;
    let worst = cl.max_violation();
    let mean =
        cl.sepsets.iter().map(|s| s.violation()).sum::<f64>() / cl.sepsets.len().max(1) as f64;
    // Accuracy of each variable's own-cluster argmax against gold.
    let own = own_cluster_argmax(c);
    let gold = inst.gold.as_deref();
    let correct = gold.map(|g| own.iter().zip(g).filter(|(a, b)| **a == Some(**b)).count());
    ui.label(format!(
        "{} · disagreement: largest {worst:.2e}, mean {mean:.2e}",
        match c.camel {
            None => "no δ, no g",
            Some(crate::estimators::camel::CamelVariant::Camel0) => "with δ, g = 0",
            Some(_) => "with δ and g",
        },
    ));
    if let Some(k) = correct {
        ui.weak(format!(
            "own-cluster argmax matches gold on {k} of {} variables",
            own.len()
        ));
    }
    let cells = c.family.layout(inst, &c.item);
    let (lo, hi) = cells.iter().fold(
        ([f32::INFINITY; 2], [f32::NEG_INFINITY; 2]),
        |(lo, hi), p| {
            (
                [lo[0].min(p[0]), lo[1].min(p[1])],
                [hi[0].max(p[0]), hi[1].max(p[1])],
            )
        },
    );
    let span = [(hi[0] - lo[0]).max(1.0), (hi[1] - lo[1]).max(1.0)];
    // As large as the column allows, leaving room below for a selected cluster's tables.
    let room = ui.available_height() - 30.0 - if selected.is_some() { 230.0 } else { 0.0 };
    let step = ((width - 30.0) / span[0])
        .min(room / span[1])
        .clamp(8.0, 100.0);
    let size = vec2(width, span[1] * step + 30.0);
    let (rect, resp) = ui.allocate_exact_size(size, Sense::click());
    let painter = ui.painter_at(rect);
    let origin = rect.min + vec2(15.0, 15.0);
    let var_pos: Vec<Pos2> = cells
        .iter()
        .map(|p| origin + vec2((p[0] - lo[0]) * step, (p[1] - lo[1]) * step))
        .collect();
    let pos = cluster_positions(c, &var_pos);
    for s in &cl.sepsets {
        // Draw from the variable to the cluster that is not the variable's own one.
        let other = if inst.scope(&inst.factors[s.src as usize]).len() == 1 {
            s.dst
        } else {
            s.src
        };
        painter.line_segment(
            [var_pos[s.var as usize], pos[other as usize]],
            Stroke::new(
                (step * 0.12).clamp(1.0, 4.0),
                violation_color(s.violation()),
            ),
        );
    }
    let r = (step * 0.28).clamp(3.0, 14.0);
    for (a, f) in inst.factors.iter().enumerate() {
        if inst.scope(f).len() > 1 {
            let rr = Rect::from_center_size(pos[a], vec2(r * 0.6, r * 0.6));
            painter.rect_filled(rr, 1.0, ui.visuals().weak_text_color());
        }
    }
    for (v, &p) in var_pos.iter().enumerate() {
        let fill = own[v].map_or(Color32::GRAY, |k| super::palette(k as usize));
        painter.circle_filled(p, r, fill);
        if let Some(g) = gold {
            if own[v] != Some(g[v]) {
                painter.circle_stroke(p, r, Stroke::new(1.5, ui.visuals().strong_text_color()));
            }
        }
    }
    if let Some(a) = *selected {
        if let Some(&p) = pos.get(a) {
            // A square, as clusters are drawn: a ring read as one more variable, or as the
            // "not gold" ring.
            painter.rect_stroke(
                Rect::from_center_size(p, vec2(r * 0.6 + 8.0, r * 0.6 + 8.0)),
                2.0,
                Stroke::new(2.5, super::appearance::highlight(ui.visuals())),
                egui::StrokeKind::Outside,
            );
        }
    }
    if resp.clicked() {
        if let Some(at) = resp.interact_pointer_pos() {
            *selected = pos
                .iter()
                .enumerate()
                .min_by(|a, b| a.1.distance(at).total_cmp(&b.1.distance(at)))
                .filter(|(_, p)| p.distance(at) < step * 0.5)
                .map(|(a, _)| a);
        }
    }
    resp.on_hover_text(
        "Fill: the variable's own cluster's most probable class (ringed: not the gold \
         class). Lines: sepsets, coloured by the two clusters' disagreement.",
    );
}

/// Per variable, the most probable class in its own cluster (the one-variable factor on it, or
/// else the first factor holding it).
fn own_cluster_argmax(c: &RunClusters) -> Vec<Option<u32>> {
    let inst = &c.instance;
    (0..inst.n_vars() as u32)
        .map(|v| {
            let fs = inst.var_factors(v);
            let a = *fs
                .iter()
                .find(|&&a| inst.scope(&inst.factors[a as usize]).len() == 1)
                .or(fs.first())?;
            let f = &inst.factors[a as usize];
            let scope = inst.scope(f);
            let pos = scope.iter().position(|&u| u == v)?;
            let stride: usize = scope[pos + 1..]
                .iter()
                .map(|&u| inst.card[u as usize] as usize)
                .product();
            let card = inst.card[v as usize] as usize;
            let mut m = vec![0.0; card];
            for (e, b) in c.clusters.beliefs[a as usize].iter().enumerate() {
                m[(e / stride) % card] += b;
            }
            m.iter()
                .enumerate()
                .max_by(|a, b| a.1.total_cmp(b.1))
                .map(|(k, _)| k as u32)
        })
        .collect()
}

fn cluster_table(ui: &mut egui::Ui, label: &str, c: &RunClusters, a: usize, width: f32) {
    let inst = &c.instance;
    let Some(f) = inst.factors.get(a) else {
        return;
    };
    let scope = inst.scope(f).to_vec();
    let names = &c.family.labels(inst, scope[0]).names;
    let shape: Vec<usize> = scope
        .iter()
        .map(|&v| inst.card[v as usize] as usize)
        .collect();
    let gold: Vec<Option<u32>> = scope
        .iter()
        .map(|&v| inst.gold.as_ref().map(|g| g[v as usize]))
        .collect();
    let corner = match scope.as_slice() {
        [a, b] => format!("y{a} \\ y{b}"),
        _ => String::new(),
    };
    ui.vertical(|ui| {
        // Room for the sepset lines beneath the table at body size: the share `width` of the
        // pane, at most 300, never narrower than the table.
        let table = 60.0 + 52.0 * shape.last().copied().unwrap_or(1) as f32;
        ui.set_max_width(width.min(300.0).max(table));
        super::graph_view::heat_table(
            ui,
            &format!("{label}: cluster {a} over {scope:?}"),
            &corner,
            names,
            &shape,
            &gold,
            ndarray::ArrayViewD::from_shape(shape.as_slice(), &c.clusters.beliefs[a]).ok(),
            true,
            false,
        );
        for s in c
            .clusters
            .sepsets
            .iter()
            .filter(|s| s.src as usize == a || s.dst as usize == a)
        {
            let other = if s.src as usize == a { s.dst } else { s.src };
            let (mine, theirs) = if s.src as usize == a {
                (&s.mu_src, &s.mu_dst)
            } else {
                (&s.mu_dst, &s.mu_src)
            };
            // Which cluster the other side is: y2's own unary factor, or a pair.
            let describe = |b: usize| match inst.factors.get(b).map(|f| inst.scope(f)) {
                Some([v]) => format!("y{v}'s own"),
                Some(sc) => format!(
                    "over {}",
                    sc.iter()
                        .map(|v| format!("y{v}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                None => String::new(),
            };
            let fmt = |m: &[f64]| {
                m.iter()
                    .map(|x| format!("{x:.2}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            // Body-size text with the sepset's colour as a swatch: small coloured text was
            // 9 px, yellow on grey.
            ui.horizontal_top(|ui| {
                let (r, _) = ui.allocate_exact_size(egui::vec2(10.0, 10.0), Sense::hover());
                ui.painter().rect_filled(
                    r.translate(egui::vec2(0.0, 3.0)),
                    1.0,
                    violation_color(s.violation()),
                );
                ui.add(
                    egui::Label::new(format!(
                        "y{}'s marginal: here [{}], in cluster {other} ({}) [{}] (they differ \
                         by {:.2})",
                        s.var,
                        fmt(mine),
                        describe(other as usize),
                        fmt(theirs),
                        s.violation(),
                    ))
                    .wrap(),
                );
            });
        }
    });
}
