//! The SCL policy editor of the launch form and its live preview of 004 Fig. 1: for the first
//! items of the loaded data, which components Z selects (a diamond per selected component,
//! shaded by its paper FLOPs), with per-component and per-item totals, the total complexity,
//! and — on a Boltzmann machine whose data file records θ0 — the relative efficiency in both
//! forms. The draw is the estimator's own ([`Scl::draw`]), from the form's seed.

use super::jobs::{take_finished, Job};
use super::launch::LaunchForm;
use super::AppState;
use crate::estimators::scl::component_flops;
use crate::estimators::scl::{ComponentFamily, PolicyPart, Scl, SelectionPolicy};
use crate::eval::asymptotic::{asymptotic_variance, Efficiency};
use egui::{Color32, Pos2, Shape, Stroke, Vec2};

/// Items shown (Fig. 1 has fourteen).
pub const PREVIEW_ITEMS: usize = 14;
/// Component rows shown at most.
const MAX_ROWS: usize = 60;

/// The preview's cached draw and efficiency (recomputed when the policy or data change).
#[derive(Default)]
pub struct Preview {
    key: String,
    grid: Option<Result<Grid, String>>,
    eff_key: String,
    efficiency: Option<Result<Efficiency, String>>,
    job: Option<Job<Efficiency>>,
    /// In front of a room, the items that fit the pane's width (fewer each frame the grid
    /// ran past it).
    fit_items: Option<usize>,
}

impl Preview {
    /// The relative efficiency, once computed (or why it cannot be).
    pub fn efficiency(&self) -> Option<&Result<Efficiency, String>> {
        self.efficiency.as_ref()
    }
}

/// Components (rows) × items (columns): `None` when the item has no such component.
#[derive(Clone, Debug)]
pub struct Grid {
    pub rows: Vec<String>,
    pub cells: Vec<Vec<Option<(bool, f64)>>>,
    pub items: usize,
    pub hidden_rows: usize,
}

impl Grid {
    pub fn row_total(&self, r: usize) -> f64 {
        self.cells[r]
            .iter()
            .flatten()
            .filter(|c| c.0)
            .map(|c| c.1)
            .sum()
    }
    pub fn item_total(&self, i: usize) -> f64 {
        self.cells
            .iter()
            .filter_map(|row| row[i])
            .filter(|c| c.0)
            .map(|c| c.1)
            .sum()
    }
    pub fn total(&self) -> f64 {
        (0..self.items).map(|i| self.item_total(i)).sum()
    }
}

/// The policy's families as editable rows (single-group policies); edits rewrite the form's
/// policy text.
pub fn editor(ui: &mut egui::Ui, f: &mut LaunchForm) {
    let parsed = f.policy_spec();
    let Ok(mut policy) = parsed else {
        ui.colored_label(
            Color32::from_rgb(200, 80, 60),
            format!(
                "policy: {}",
                parsed.err().map(|e| e.to_string()).unwrap_or_default()
            ),
        );
        return;
    };
    if policy.groups.len() != 1 {
        ui.weak("several `;` groups (a product of multinomials): edit the text above");
        return;
    }
    let mut changed = false;
    let mut remove = None;
    egui::Grid::new("policy-editor")
        .num_columns(4)
        .spacing([8.0, 2.0])
        .show(ui, |ui| {
            ui.strong("family");
            ui.strong("λ (selection)");
            ui.strong("β (weight)");
            ui.end_row();
            let n = policy.groups[0].len();
            for (i, part) in policy.groups[0].iter_mut().enumerate() {
                let mut text = part.family.to_string();
                let r = ui.add(egui::TextEdit::singleline(&mut text).desired_width(50.0));
                if r.changed() {
                    if let Ok(fam) = ComponentFamily::parse(text.trim()) {
                        part.family = fam;
                        changed = true;
                    }
                }
                changed |= ui
                    .add(
                        egui::DragValue::new(&mut part.lambda)
                            .range(0.0..=1.0)
                            .speed(0.01),
                    )
                    .changed();
                changed |= ui
                    .add(
                        egui::DragValue::new(&mut part.beta)
                            .range(0.0..=100.0)
                            .speed(0.01),
                    )
                    .changed();
                if n > 1 && ui.small_button("remove").clicked() {
                    remove = Some(i);
                }
                ui.end_row();
            }
        });
    if let Some(i) = remove {
        policy.groups[0].remove(i);
        changed = true;
    }
    if ui.small_button("add family").clicked() {
        let k = policy.groups[0]
            .iter()
            .filter_map(|p| match p.family {
                ComponentFamily::Pseudo(k) => Some(k),
                ComponentFamily::Full => None,
            })
            .max()
            .unwrap_or(0)
            + 1;
        policy.groups[0].push(PolicyPart {
            lambda: 0.5,
            beta: 1.0,
            family: ComponentFamily::Pseudo(k),
        });
        changed = true;
    }
    if changed {
        f.set_policy(&policy.to_string());
    }
}

/// Row label of a component: its family and A (1-based variables as 004 numbers a Boltzmann
/// machine's, or on sequences the positions by the Graph pane's names y0, y1, …).
fn component_label(part: &PolicyPart, inst: &crate::graph::Instance, a: &[u32]) -> String {
    match part.family {
        ComponentFamily::Full => "fl".into(),
        ComponentFamily::Pseudo(_) => match inst.position_width() {
            Some(w) => {
                let (s, e) = (a[0] as usize / w, a[a.len() - 1] as usize / w);
                if s == e {
                    format!("{} y{s}", part.family)
                } else {
                    format!("{} y{s}…y{e}", part.family)
                }
            }
            None => format!(
                "{} {{{}}}",
                part.family,
                a.iter()
                    .map(|v| (v + 1).to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        },
    }
}

/// The draw for the loaded data's first items.
pub fn build_grid(
    family: &dyn crate::graph::Family,
    items: &[crate::data::Sequence],
    policy: &SelectionPolicy,
) -> Result<Grid, String> {
    let scl = Scl {
        policy: policy.clone(),
    };
    let parts: Vec<PolicyPart> = policy.parts().copied().collect();
    let n_params = family.model().n_params;
    // Rows keyed by (family index, component index), in that order.
    let mut keys: Vec<(usize, usize)> = vec![];
    let mut labels: Vec<String> = vec![];
    type Cell = ((usize, usize), bool, f64);
    let mut per_item: Vec<Vec<Cell>> = vec![];
    for (i, item) in items.iter().enumerate() {
        let mut inst = family.instance(item).map_err(|e| e.to_string())?;
        inst.id = i as u64;
        let mut cells = vec![];
        for d in scl.draw(&inst) {
            let key = (d.part, d.index);
            if let Err(pos) = keys.binary_search(&key) {
                keys.insert(pos, key);
                labels.insert(pos, component_label(&parts[d.part], &inst, &d.a));
            }
            let fl = component_flops(parts[d.part].family, &inst, &d.a, n_params);
            cells.push((key, d.selected, fl));
        }
        per_item.push(cells);
    }
    let hidden_rows = keys.len().saturating_sub(MAX_ROWS);
    keys.truncate(MAX_ROWS);
    labels.truncate(MAX_ROWS);
    let mut cells = vec![vec![None; items.len()]; keys.len()];
    for (i, item_cells) in per_item.iter().enumerate() {
        for &(key, on, fl) in item_cells {
            if let Ok(r) = keys.binary_search(&key) {
                cells[r][i] = Some((on, fl));
            }
        }
    }
    Ok(Grid {
        rows: labels,
        cells,
        items: items.len(),
        hidden_rows,
    })
}

fn flops_text(x: f64) -> String {
    if x >= 1e5 {
        format!("{x:.2e}")
    } else {
        format!("{x:.0}")
    }
}

/// At most four characters, for the totals under the items' columns: 496, 3.4k, 52k, 3.4M.
fn short_flops(x: f64) -> String {
    let (v, unit) = match x {
        x if x >= 1e9 => (x / 1e9, "G"),
        x if x >= 1e6 => (x / 1e6, "M"),
        x if x >= 1e3 => (x / 1e3, "k"),
        x => return format!("{x:.0}"),
    };
    if v < 10.0 {
        format!("{v:.1}{unit}")
    } else {
        format!("{v:.0}{unit}")
    }
}

/// The preview under the editor.
pub fn ui(state: &mut AppState, pv: &mut Preview, ui: &mut egui::Ui) {
    // A policy the editor cannot read: the editor says why.
    if let Ok(policy) = state.launch.policy_spec() {
        preview(state, pv, &policy, ui);
    }
}

/// Fig. 1 for `policy` on the loaded data (the launch form's, or a sweep point's), cached in
/// the drawing pane's `pv`: each pane owns its preview, so two panes showing two policies do
/// not recompute each other's every frame.
pub fn preview(
    state: &mut AppState,
    pv: &mut Preview,
    policy: &SelectionPolicy,
    ui: &mut egui::Ui,
) {
    // Out of the state while the data is borrowed from it.
    let mut focus = std::mem::take(&mut state.focus);
    preview_grid(state, pv, policy, &mut focus, ui);
    state.focus = focus;
}

fn preview_grid(
    state: &mut AppState,
    pv: &mut Preview,
    policy: &SelectionPolicy,
    focus: &mut super::lesson_format::Focus,
    ui: &mut egui::Ui,
) {
    let ctx = ui.ctx().clone();
    let Some(data) = &state.data else {
        ui.weak("Load a data set in the Data pane to preview the policy on its items.");
        return;
    };
    // In front of a room, as many items as the pane's width shows whole (down to 4): at
    // 1024×768 fourteen columns ran past the pane's edge, with the row totals the lesson
    // asks about.
    // What is on screen of the width: the pane may scroll sideways, its available width
    // then larger than what shows.
    let avail = ui
        .available_width()
        .min(ui.clip_rect().right() - ui.max_rect().left());
    let fits = if state.lecture {
        pv.fit_items.unwrap_or(PREVIEW_ITEMS)
    } else {
        PREVIEW_ITEMS
    };
    let items = &data.train.sequences[..data.train.sequences.len().min(PREVIEW_ITEMS.min(fits))];
    let key = format!(
        "{}|{policy}|{:?}|{}|{:p}|{}",
        items.len(),
        policy.selection,
        policy.seed,
        std::sync::Arc::as_ptr(&data.family),
        data.train.path
    );
    if pv.key != key {
        pv.key = key.clone();
        pv.grid = Some(build_grid(data.family.as_ref(), items, policy));
    }
    // Relative efficiency: Boltzmann machines small enough to enumerate, with θ0 on file.
    let eff_key = format!("{policy}|{:?}|{}", policy.selection, data.train.path);
    if pv.eff_key != eff_key && data.family.kind() == "boltzmann" {
        pv.eff_key = eff_key;
        pv.efficiency = None;
        let family = data.family.clone();
        let path = std::path::PathBuf::from(&data.train.path);
        let item = items.first().cloned();
        let pol = policy.clone();
        pv.job = Some(Job::spawn(&ctx, "relative efficiency", move || {
            let theta = family.reference_theta(&path).ok_or(
                "the data file records no θ0 (`# theta:`); `generate boltzmann` writes it",
            )?;
            let inst = family
                .instance(&item.ok_or("no items")?)
                .map_err(|e| e.to_string())?;
            asymptotic_variance(family.model(), &inst, &theta, &pol)
                .and_then(|v| v.efficiency())
                .map_err(|e| e.to_string())
        }));
    }
    if let Some(r) = take_finished(&mut pv.job) {
        pv.efficiency = Some(r);
    }
    let grid = match &pv.grid {
        Some(Ok(g)) => g,
        Some(Err(e)) => {
            ui.colored_label(Color32::from_rgb(200, 80, 60), e);
            return;
        }
        None => return,
    };
    let (min_fl, max_fl) = grid
        .cells
        .iter()
        .flatten()
        .flatten()
        .map(|c| c.1)
        .fold((f64::INFINITY, 0.0f64), |(a, b), x| (a.min(x), b.max(x)));
    // Wrapped at the pane's visible width: the table below is wider, and the line was cut at
    // "blue: cheape" at 1024×768.
    crate::app::plots::wrapped_line(
        ui,
        egui::RichText::new(format!(
            "Components selected by Z for the first {} items (seed {}), coloured by paper FLOPs \
             (blue: cheapest, orange: dearest); totals per component (right) and per item \
             (bottom). Each Z is its own coin flip with probability λ, so a few items stray \
             from λ × items (the fixed seed draws the same each time).",
            grid.items, policy.seed
        )),
    );
    let cell = 16.0;
    let drawn = egui::ScrollArea::both()
        .id_salt("policy-preview")
        .max_height(600.0)
        .show(ui, |ui| {
            egui::Grid::new("policy-preview-grid")
                .spacing([2.0, 1.0])
                // Wide enough for an item's total under its column ("362k") at body size:
                // the totals are what the lesson's question reads (small type was 7 px).
                .min_col_width(cell + 18.0)
                .show(ui, |ui| {
                    ui.label("");
                    for i in 0..grid.items {
                        ui.label(format!("x{}", i + 1));
                    }
                    ui.strong("FLOPs");
                    ui.end_row();
                    for (r, label) in grid.rows.iter().enumerate() {
                        let first = ui.label(egui::RichText::new(label).small().monospace());
                        for c in &grid.cells[r] {
                            component_cell(ui, c, label, (min_fl, max_fl), cell);
                        }
                        let last = ui.label(flops_text(grid.row_total(r)));
                        if label == "fl" {
                            focus.mark(ui, "fl-row", first.rect.union(last.rect));
                        }
                        ui.end_row();
                    }
                    ui.strong("FLOPs");
                    for i in 0..grid.items {
                        ui.label(short_flops(grid.item_total(i)))
                            .on_hover_text(format!(
                                "item x{}: {} FLOPs",
                                i + 1,
                                flops_text(grid.item_total(i))
                            ));
                    }
                    ui.end_row();
                });
        });
    let shrink = (state.lecture && drawn.content_size.x > avail + 1.0 && grid.items > 4)
        .then_some(grid.items - 1);
    if grid.hidden_rows > 0 {
        ui.weak(format!(
            "… {} more component rows not shown",
            grid.hidden_rows
        ));
    }
    let eff = match &pv.efficiency {
        Some(Ok(e)) => format!(
            "relative efficiency (det, 004 eq. 8): paper's form {:.3}, exact form {:.3} · \
             relative trace {:.3} / {:.3}",
            e.det_paper, e.det_exact, e.trace_paper, e.trace_exact
        ),
        Some(Err(e)) => format!("relative efficiency: {e}"),
        None if data.family.kind() == "boltzmann" => "relative efficiency: computing…".into(),
        None => "relative efficiency: Boltzmann machines with θ0 on file only (enumeration)".into(),
    };
    ui.strong(format!(
        "total complexity: {} FLOPs over {} items · {eff}",
        flops_text(grid.total()),
        grid.items
    ));
    if shrink.is_some() {
        pv.fit_items = shrink;
        ctx.request_repaint();
    }
}

/// One cell of Fig. 1's grid: a diamond for a selected component, coloured by its paper FLOPs
/// from blue (cheapest) to orange (dearest) on a log scale; a dot for one not selected.
fn component_cell(
    ui: &mut egui::Ui,
    c: &Option<(bool, f64)>,
    label: &str,
    (min_fl, max_fl): (f64, f64),
    cell: f32,
) {
    let (rect, resp) = ui.allocate_exact_size(Vec2::splat(cell), egui::Sense::hover());
    let p = ui.painter();
    let m = rect.center();
    match c {
        Some((true, fl)) => {
            // Blue (cheapest) to orange (dearest), on a log scale:
            // components differ by orders of magnitude.
            let t = if max_fl > min_fl {
                ((fl / min_fl).ln() / (max_fl / min_fl).ln()) as f32
            } else {
                0.5
            };
            let fill =
                Color32::from_rgb(110, 150, 215).lerp_to_gamma(Color32::from_rgb(235, 120, 45), t);
            let h = cell * 0.45;
            p.add(Shape::convex_polygon(
                vec![
                    Pos2::new(m.x, m.y - h),
                    Pos2::new(m.x + h, m.y),
                    Pos2::new(m.x, m.y + h),
                    Pos2::new(m.x - h, m.y),
                ],
                fill,
                Stroke::new(1.0, Color32::from_gray(200)),
            ));
            resp.on_hover_text(format!("{label}: {} FLOPs", flops_text(*fl)));
        }
        Some((false, _)) => {
            p.circle_filled(m, 1.5, Color32::from_gray(130));
        }
        None => {}
    }
}
