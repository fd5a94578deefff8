//! The factor graph itself, painted layer by layer: pieces (or an independence diagram), edges,
//! variables (or node-split copies), factors, the template legend and the BP stepper's messages
//! and beliefs. Each layer draws only what is inside the visible region.

use super::super::AppState;
use super::*;
use egui::{pos2, vec2, Color32, Pos2, Rect, Sense, Shape, Stroke};

pub(super) fn canvas(state: &mut AppState, pane: &mut GraphPane, ui: &mut egui::Ui) {
    let (Some(inst), Some(d)) = (&pane.cache.inst, &state.data) else {
        return;
    };
    let seq = &d.corpus(pane.split).sequences[pane.sequence];
    let split = pane.node_split.then_some(()).and(pane.cache.split.as_ref());
    if pane
        .cache
        .layout
        .as_ref()
        .is_none_or(|l| l.0 != split.is_some())
    {
        pane.cache.layout = Some((
            split.is_some(),
            layout(inst, &pane.cache.cells, split, &pane.cache.pieces),
        ));
    }
    let base = &pane.cache.layout.as_ref().expect("just built").1;
    if let Some(cols) = pane.wrap {
        let key = (split.is_some(), cols);
        if pane.cache.wrapped.as_ref().is_none_or(|w| w.0 != key) {
            pane.cache.wrapped = Some((key, super::layout::wrap(base, cols)));
        }
    }
    let lay = match (&pane.wrap, &pane.cache.wrapped) {
        (Some(_), Some((_, w))) => w,
        _ => &pane.cache.layout.as_ref().expect("just built").1,
    };
    let z = pane.zoom;
    let (resp, painter) = ui.allocate_painter(lay.size * z, Sense::click());
    // Ctrl + wheel zooms.
    if resp.hovered() {
        let (zoom_delta, ctrl_scroll) = ui.input(|i| (i.zoom_delta(), i.modifiers.command));
        if zoom_delta != 1.0 && ctrl_scroll {
            pane.zoom = (pane.zoom * zoom_delta).clamp(0.15, 2.5);
            pane.fit = false;
        }
    }
    let origin = resp.rect.min;
    let clip = painter.clip_rect().expand(DX * z);
    let (x_lo, x_hi) = ((clip.min.x - origin.x) / z, (clip.max.x - origin.x) / z);
    let vis_vars: Vec<usize> = lay.var_order[Layout::range(
        &lay.var_order,
        |v| lay.vars[v as usize].x,
        x_lo - DX,
        x_hi + DX,
    )]
    .iter()
    .map(|&v| v as usize)
    .collect();
    let terms = &pane.cache.terms;
    let term =
        (pane.show_terms && !terms.is_empty()).then(|| terms.get(pane.term.min(terms.len() - 1)));
    let scene = Scene {
        painter,
        inst,
        lay,
        family: d.family.as_ref(),
        seq,
        origin,
        z,
        clip,
        vis_vars,
        vis_factors: &lay.factor_order
            [Layout::range(&lay.factor_order, |f| lay.factors[f as usize].x, x_lo, x_hi)],
        vis_copies: &lay.copy_order
            [Layout::range(&lay.copy_order, |c| lay.copies[c as usize].2.x, x_lo, x_hi)],
        text_ok: z >= 0.45,
        node_split: split.is_some(),
        term,
        quiz: pane.quiz_role(),
        visuals: ui.visuals().clone(),
        label_orders: &pane.cache.label_orders,
    };
    // The shown term into view, asked again each frame until it is visible (a step's first
    // frames may lay the graph out before the lecture zoom settles: lesson 5's y8 stayed off
    // the Pieces view's right edge).
    if pane.scroll_to_term > 0 {
        pane.scroll_to_term -= 1;
        match scene.term.and_then(|t| t.free.first()) {
            Some(&v) => {
                let c = scene.to_screen(lay.vars[v as usize]);
                let r = Rect::from_center_size(c, vec2(DX * z * 3.0, 10.0));
                // Not released once in view: a layout that settles later (BP's beliefs
                // arriving) moves it again.
                if !ui.clip_rect().contains_rect(r) {
                    ui.scroll_to_rect(r, None);
                }
            }
            None => pane.scroll_to_term = 0,
        }
    }
    // A factor a lesson opens the inspector on: into view (lesson 3's transition(11,12) was
    // off screen at 1024×768, the graph's strip showing y0…y4).
    // Asked again each frame until it is inside the visible area (the first frames of a step
    // may lay the graph out before the lecture zoom and the inspector settle), for at most
    // `scroll_to_factor` frames; then the student scrolls freely.
    if pane.scroll_to_factor > 0 {
        pane.scroll_to_factor -= 1;
        if let Some(&p) = pane.selected_factor.and_then(|f| lay.factors.get(f)) {
            // The factor with its variables' belief bars below it (lesson 3 looks at them).
            let c = scene.to_screen(p);
            let mut r = Rect::from_min_max(
                c + vec2(-DX * z * 1.5, -30.0 * z),
                c + vec2(DX * z * 1.5, 60.0 * z),
            );
            // Sideways only where it is already in view vertically (a chain's row kept whole:
            // centred on its factor, the bars under lesson 3's variables were cut).
            let clip = ui.clip_rect();
            if clip.top() <= r.top() && r.bottom() <= clip.bottom() {
                r.set_top(clip.top());
                r.set_bottom(clip.bottom());
            }
            // Not released once in view: a layout that settles later (the piece beliefs of
            // "messages held at 1" arriving and growing the rows) moved it off again.
            if !clip.contains_rect(r) {
                ui.scroll_to_rect(r, None);
            }
        }
    }
    if pane.show_pieces && !pane.node_split && !pane.cache.diagram.is_empty() {
        draw_diagram(&scene, &pane.cache.diagram);
    }
    if (pane.show_pieces && pane.cache.diagram.is_empty()) || pane.node_split {
        draw_pieces(&scene, &pane.cache.pieces);
    }
    draw_edges(&scene);
    // Picked variables (a lesson's question asks for them): a yellow (amber) ring, under the
    // words and gold labels drawn with the variables (over them it hid the gold label).
    for &v in &pane.picked_vars {
        if let Some(&p) = lay.vars.get(v as usize) {
            let s = scene.to_screen(p);
            scene.painter.circle_stroke(
                s,
                (VAR_R + 5.0) * z,
                Stroke::new(3.0, crate::app::appearance::highlight(&scene.visuals)),
            );
        }
    }
    if scene.node_split {
        draw_copies(&scene);
    } else {
        draw_variables(&scene);
    }
    draw_factors(&scene, pane.selected_factor);
    if let Some(b) = bp_shown(pane) {
        draw_bp(&scene, b, pane.bp_at_one);
    }
    // Click a variable to pick it (a second click unpicks), a factor to inspect it.
    if resp.clicked() {
        if let Some(p) = resp.interact_pointer_pos() {
            if let Some(v) = scene.var_at(p) {
                if !pane.picked_vars.remove(&v) {
                    pane.picked_vars.insert(v);
                }
            } else {
                pane.selected_factor = scene.factor_at(p);
            }
        }
    }
    if let Some(f) = resp.hover_pos().and_then(|p| scene.factor_at(p)) {
        let fac = &inst.factors[f];
        resp.clone().on_hover_text(format!(
            "{} factor over {:?} — click to inspect",
            d.family.model().templates[fac.template as usize].name,
            inst.scope(fac)
        ));
    }
}

/// An estimator's parameter independence diagram (003 Fig. 1): each locally normalised term
/// circled with its factors and predicted variables; conditioned variables stay out.
fn draw_diagram(sc: &Scene, diagram: &[(Vec<u32>, Vec<u32>)]) {
    let vis: std::collections::HashSet<u32> = sc.vis_factors.iter().copied().collect();
    for (i, (fs, vs)) in diagram.iter().enumerate() {
        if !fs.iter().any(|f| vis.contains(f)) {
            continue;
        }
        let mut pts = vec![];
        for &f in fs {
            ring(sc.lay.factors[f as usize], FAC_H + 8.0, &mut pts);
        }
        for &v in vs {
            ring_var(sc, v, i, &mut pts);
        }
        outline(sc, pts, i);
    }
}

/// Points around variable `v` for piece `i`'s hull (nested hulls a little apart).
fn ring_var(sc: &Scene, v: u32, i: usize, pts: &mut Vec<Pos2>) {
    ring(
        sc.lay.vars[v as usize],
        VAR_R + 5.0 + (i % 3) as f32 * 3.0,
        pts,
    );
}

/// Piece `i`'s dashed hull around `pts` (graph coordinates). On a wrapped chain one hull per
/// row the piece reaches, in the same colour: a hull across two rows would cover the picture
/// between them, and a copy left without one was not counted as the piece's.
fn outline(sc: &Scene, pts: Vec<Pos2>, i: usize) {
    let mut rows: Vec<i32> = pts.iter().map(|&p| sc.lay.row_of(p)).collect();
    rows.sort_unstable();
    rows.dedup();
    for row in rows {
        piece_hull(
            &sc.painter,
            pts.iter()
                .filter(|&&p| sc.lay.row_of(p) == row)
                .map(|&p| sc.to_screen(p))
                .collect(),
            piece_color(i),
        );
    }
}

/// Pieces as dashed hulls around their factors and variables (or, node-split, their copies).
fn draw_pieces(sc: &Scene, pieces: &[Vec<u32>]) {
    let mut vis_pieces: Vec<u32> = sc
        .vis_factors
        .iter()
        .flat_map(|&f| sc.lay.factor_pieces[f as usize].iter().copied())
        .collect();
    vis_pieces.sort_unstable();
    vis_pieces.dedup();
    // A piece over one variable (a unary factor alone) is not outlined where larger pieces
    // are: forty rings around the pixels hid the clusters a lesson points at (the caption
    // counts them).
    let wide = !sc.node_split
        && pieces
            .iter()
            .any(|p| super::layout::piece_vars(sc.inst, p) > 1);
    for i in vis_pieces {
        let i = i as usize;
        if wide && super::layout::piece_vars(sc.inst, &pieces[i]) <= 1 {
            continue;
        }
        // A grid's pairwise piece as a slim band along its edge, under the variables'
        // circles: hulls as wide as the circles made 24 overlapping regions on a 4 × 4 grid
        // that no one could tell apart.
        let slim = !sc.lay.flat
            && !sc.node_split
            && matches!(pieces[i].as_slice(), [f] if sc.inst.scope(&sc.inst.factors[*f as usize]).len() == 2);
        let mut pts = vec![];
        for &f in &pieces[i] {
            let fp = sc.lay.factors[f as usize];
            if slim {
                ring(fp, FAC_H + 5.0, &mut pts);
                for &v in sc.inst.scope(&sc.inst.factors[f as usize]) {
                    ring(sc.lay.vars[v as usize], VAR_R * 0.5, &mut pts);
                }
                continue;
            }
            ring(fp, FAC_H + 8.0, &mut pts);
            if sc.node_split {
                for &c in &sc.lay.factor_copies[f as usize] {
                    ring(sc.lay.copies[c].2, VAR_R * 0.75 + 6.0, &mut pts);
                }
            } else {
                for &v in sc.inst.scope(&sc.inst.factors[f as usize]) {
                    ring_var(sc, v, i, &mut pts);
                }
            }
        }
        outline(sc, pts, i);
    }
}

/// Factor-to-variable edges (to the copies, node-split); a skip edge as an arc.
fn draw_edges(sc: &Scene) {
    for &f in sc.vis_factors {
        let f = f as usize;
        let fac = &sc.inst.factors[f];
        let fp = sc.lay.factors[f];
        if !sc.visible(fp) {
            continue;
        }
        let col = if sc.in_term_factor(f) {
            sc.visuals.text_color()
        } else {
            Scene::faded(sc.visuals.text_color())
        };
        // An edge to the next row of a wrapped chain: dashed, the line's continuation.
        let across = |a: Pos2, b: Pos2| {
            sc.painter.extend(Shape::dashed_line(
                &[sc.to_screen(a), sc.to_screen(b)],
                Stroke::new(1.2, col.gamma_multiply(0.7)),
                6.0,
                5.0,
            ));
        };
        if sc.node_split {
            for &c in &sc.lay.factor_copies[f] {
                let cp = sc.lay.copies[c].2;
                if sc.lay.row_of(cp) != sc.lay.row_of(fp) {
                    across(fp, cp);
                    continue;
                }
                sc.painter
                    .line_segment([sc.to_screen(fp), sc.to_screen(cp)], Stroke::new(1.2, col));
            }
            continue;
        }
        for &v in sc.inst.scope(fac) {
            let vp = sc.lay.vars[v as usize];
            if sc.lay.row_of(vp) != sc.lay.row_of(fp) {
                across(fp, vp);
            } else if fp.y < vp.y - ROW * 0.5 {
                // A skip edge's arc: up from the variable, bending over to the factor.
                sc.painter
                    .add(egui::epaint::QuadraticBezierShape::from_points_stroke(
                        [
                            sc.to_screen(vp),
                            sc.to_screen(pos2(vp.x, fp.y)),
                            sc.to_screen(fp),
                        ],
                        false,
                        Color32::TRANSPARENT,
                        Stroke::new(1.2, col),
                    ));
            } else {
                sc.painter
                    .line_segment([sc.to_screen(fp), sc.to_screen(vp)], Stroke::new(1.2, col));
            }
        }
    }
}

/// The node-split graph (000 Fig. 1): each piece's own copy of a variable, under the
/// original's word. The original itself is not drawn: a faint ring read as one more copy
/// when a lesson asks how many copies a variable has.
fn draw_copies(sc: &Scene) {
    let (font, small) = fonts(sc.z);
    let z = sc.z;
    for &v in &sc.vis_vars {
        let p = sc.lay.vars[v];
        if !sc.visible(p) {
            continue;
        }
        if sc.text_ok {
            sc.label(
                sc.to_screen(p) + vec2(0.0, label_dy(z).0),
                sc.word(v),
                font.clone(),
                sc.visuals.text_color(),
            );
            // The gold label too, as on the plain graph (the caption says it is there).
            sc.label(
                sc.gold_at(sc.to_screen(p)),
                sc.gold_name(v as u32),
                small.clone(),
                sc.visuals.text_color(),
            );
        }
    }
    // The copies a term's factors use take the term's colours (free, clamped, summed).
    let in_term: std::collections::HashSet<usize> = sc
        .term
        .as_ref()
        .map(|t| {
            t.factors
                .iter()
                .flat_map(|&f| sc.lay.factor_copies[f as usize].iter().copied())
                .collect()
        })
        .unwrap_or_default();
    for &c in sc.vis_copies {
        let (orig, _piece, p) = sc.lay.copies[c as usize];
        if !sc.visible(p) {
            continue;
        }
        let s = sc.to_screen(p);
        let role = in_term
            .contains(&(c as usize))
            .then(|| sc.var_role(orig))
            .flatten();
        let (fill, stroke, text) = match role {
            Some(c) if c == SUMMED => (
                sc.visuals.extreme_bg_color,
                Stroke::new(2.5, c),
                sc.visuals.text_color(),
            ),
            Some(c) => (c, Stroke::new(2.0, c.gamma_multiply(0.7)), Color32::WHITE),
            None => (
                sc.visuals.extreme_bg_color,
                Stroke::new(1.5, sc.visuals.text_color()),
                sc.visuals.text_color(),
            ),
        };
        sc.painter.circle(s, VAR_R * 0.75 * z, fill, stroke);
        sc.painter.line_segment(
            [s, sc.to_screen(sc.lay.vars[orig as usize])],
            Stroke::new(0.5, Scene::faded(sc.visuals.weak_text_color())),
        );
        if sc.text_ok {
            sc.painter.text(
                s,
                egui::Align2::CENTER_CENTER,
                sc.family.var_name(orig),
                small.clone(),
                text,
            );
        }
    }
}

/// Variables as circles coloured by their role in the shown term, with their name, word and
/// gold label (or the state a clamp holds them at).
fn draw_variables(sc: &Scene) {
    let (font, small) = fonts(sc.z);
    let z = sc.z;
    let visuals = &sc.visuals;
    for &v in &sc.vis_vars {
        let p = sc.lay.vars[v];
        if !sc.visible(p) {
            continue;
        }
        let s = sc.to_screen(p);
        let role = sc.var_role(v as u32);
        let (fill, stroke) = match role {
            Some(c) if c == SUMMED => (visuals.extreme_bg_color, Stroke::new(2.5, c)),
            Some(c) => (c, Stroke::new(2.0, c.gamma_multiply(0.7))),
            None if sc.term.is_some() => (
                visuals.extreme_bg_color,
                Stroke::new(1.0, Scene::faded(visuals.text_color())),
            ),
            None => (
                visuals.extreme_bg_color,
                Stroke::new(1.5, visuals.text_color()),
            ),
        };
        if role == Some(SUMMED) {
            sc.painter.circle_filled(s, VAR_R * z, fill);
            let pts: Vec<Pos2> = (0..=32)
                .map(|k| {
                    let a = k as f32 / 32.0 * std::f32::consts::TAU;
                    s + vec2(a.cos(), a.sin()) * VAR_R * z
                })
                .collect();
            sc.painter
                .extend(Shape::dashed_line(&pts, stroke, 4.0, 3.0));
        } else {
            sc.painter.circle(s, VAR_R * z, fill, stroke);
        }
        if !sc.text_ok {
            continue;
        }
        let tc = if role.is_some() && role != Some(SUMMED) {
            Color32::WHITE
        } else {
            visuals.text_color()
        };
        sc.painter.text(
            s,
            egui::Align2::CENTER_CENTER,
            sc.family.var_name(v as u32),
            small.clone(),
            tc,
        );
        sc.label(
            s + vec2(0.0, label_dy(z).0),
            sc.word(v),
            font.clone(),
            visuals.text_color(),
        );
        let g = sc.gold_name(v as u32);
        // Coloured only where the colour means something on the legend (clamped at gold,
        // clamped off gold): a colour per label was never explained, and its red read as NOTA.
        let gc = match role {
            Some(CLAMPED) => CLAMPED,
            Some(OFF_GOLD) => OFF_GOLD,
            _ => visuals.text_color(),
        };
        let gtext = match (role, sc.term.as_ref().and_then(|t| t.off_gold)) {
            (Some(CLAMPED), _) => format!("= {g}"),
            // The NOTA term's wrong source state, with the gold label beside it.
            (Some(OFF_GOLD), Some((_, y))) => format!(
                "= {} (gold {g})",
                sc.family.labels(sc.inst, v as u32).names[y as usize]
            ),
            _ => g.to_string(),
        };
        let gc = crate::app::appearance::text_on(gc, visuals);
        sc.label(sc.gold_at(s), gtext, small.clone(), gc);
    }
}

/// Factors as squares coloured by template; those outside the shown term faded, the selected
/// one outlined.
fn draw_factors(sc: &Scene, selected: Option<usize>) {
    for &f in sc.vis_factors {
        let f = f as usize;
        let fp = sc.lay.factors[f];
        if !sc.visible(fp) {
            continue;
        }
        let c = template_color(sc.inst.factors[f].template as usize);
        let fill = if sc.in_term_factor(f) {
            c
        } else {
            Scene::faded(c)
        };
        let r = Rect::from_center_size(
            sc.to_screen(fp),
            vec2(2.0 * FAC_H * sc.z, 2.0 * FAC_H * sc.z),
        );
        let sel = selected == Some(f);
        let stroke = if sel {
            Stroke::new(3.0, sc.visuals.selection.stroke.color)
        } else {
            Stroke::new(1.0, sc.visuals.text_color())
        };
        sc.painter
            .rect(r, 1.0, fill, stroke, egui::StrokeKind::Outside);
    }
}

/// Probabilities as a small bar chart whose bottom-left corner is `base`.
/// The bars run in the labels' display order (`order`, indices into `probs`).
fn belief_bars(sc: &Scene, base: Pos2, probs: &[f64], order: &[usize], color: Color32) {
    // Never smaller than 7 × 24 px: at a fitted chain's zoom (about 0.55) bars of 3 px could
    // not be told apart on a projector, and 5 × 18 were still unreadable from the back.
    let w = bar_width(sc.z, probs.len());
    let h = bars_height(sc.z);
    // The box is the scale: its top is probability 1 (the caption says so). On the faint
    // background, not egui's extreme one, which is black in the dark theme.
    sc.painter.rect(
        Rect::from_min_max(
            base - vec2(1.0, h + 1.0),
            base + vec2(w * probs.len() as f32 + 1.0, 1.0),
        ),
        1.0,
        sc.visuals.faint_bg_color,
        Stroke::new(0.75, sc.visuals.weak_text_color()),
        egui::StrokeKind::Outside,
    );
    for (k, &y) in order.iter().enumerate() {
        let Some(&pr) = probs.get(y) else { continue };
        let x0 = base.x + k as f32 * w;
        sc.painter.rect_filled(
            Rect::from_min_max(
                pos2(x0 + 0.5, base.y - h * pr as f32),
                pos2(x0 + w - 0.5, base.y),
            ),
            0.0,
            color,
        );
    }
}

/// The width of one bar of a belief over `k` labels at zoom `z`.
fn bar_width(z: f32, k: usize) -> f32 {
    ((VAR_R * 1.6 / k.max(1) as f32).max(2.0) * z).max(7.0)
}

/// The height of a belief's box (probability 1) at zoom `z`.
fn bars_height(z: f32) -> f32 {
    (VAR_R * 1.3 * z).max(24.0)
}

/// The message change drawn at full arrow width (a probability moving by 0.1).
pub const FULL_WIDTH_CHANGE: f64 = 0.1;

/// An arrow's width for a message that moved by `change` in the last sweep: 0.5 (no change)
/// to 6.5 points (a change of [`FULL_WIDTH_CHANGE`] or more), by the square root between.
pub fn arrow_width(change: f64) -> f32 {
    (0.5 + 6.0 * (change / FULL_WIDTH_CHANGE).clamp(0.0, 1.0).sqrt()) as f32
}

/// The BP stepper: messages as arrows (width: how much each moved in the last sweep), variable
/// beliefs as bars; with messages held at 1, each factor's own belief exp(φ_a) instead.
fn draw_bp(sc: &Scene, b: &crate::inference::bp::BpSnapshot, at_one: bool) {
    let msg_color = Color32::from_rgb(220, 90, 40);
    let z = sc.z;
    for &f in sc.vis_factors {
        let f = f as usize;
        let fac = &sc.inst.factors[f];
        let fp = sc.lay.factors[f];
        for (e, &v) in sc.inst.scope_range(fac).zip(sc.inst.scope(fac)) {
            let vp = sc.lay.vars[v as usize];
            // A message to the next row of a wrapped chain comes in from the left, as the
            // edge would if the row went on: drawn along the dashed line it spanned the
            // picture, a thick arrow from one word to another far away.
            let from = if sc.lay.row_of(vp) != sc.lay.row_of(fp) {
                vp - vec2(DX * 0.5, 0.0)
            } else {
                fp
            };
            let (a, c) = (sc.to_screen(from), sc.to_screen(vp));
            let dir = (c - a).normalized();
            let (a, c) = (a + dir * FAC_H * z, c - dir * (VAR_R + 2.0) * z);
            if at_one {
                sc.painter.extend(Shape::dashed_line(
                    &[a, c],
                    Stroke::new(1.0, sc.visuals.weak_text_color()),
                    4.0,
                    3.0,
                ));
            } else {
                // On one fixed scale for every sweep (full width from a change of
                // [`FULL_WIDTH_CHANGE`]), so the arrows thin out as BP converges and a
                // converged graph shows hairlines, as its caption's change says.
                let r = b.edge_residual.get(e).copied().unwrap_or(0.0);
                let width = arrow_width(r) * z.max(0.4);
                sc.painter
                    .arrow(a, c - a, Stroke::new(width, msg_color.gamma_multiply(0.8)));
            }
        }
        if at_one {
            if let Some(pb) = b.piece_beliefs.get(f) {
                let top = sc.to_screen(fp) + vec2(0.0, -FAC_H * z - 3.0);
                match sc.inst.scope(fac) {
                    // A pairwise table as a heat grid: 25 bars would each be a sliver (5.5).
                    &[u, v] => {
                        let (ku, kv) = (sc.inst.card[u as usize], sc.inst.card[v as usize]);
                        let (ou, ov) = (
                            sc.label_order(u, ku as usize),
                            sc.label_order(v, kv as usize),
                        );
                        if let Ok(pb) = pb.view().into_dimensionality() {
                            belief_grid(sc, top, pb, (&ou, &ov), piece_color(f));
                        }
                    }
                    scope => {
                        let pb = pb.as_slice().unwrap_or_default();
                        let w = bar_width(z, pb.len());
                        let order = match scope {
                            &[u] => sc.label_order(u, pb.len()),
                            _ => std::borrow::Cow::Owned((0..pb.len()).collect()),
                        };
                        belief_bars(
                            sc,
                            top - vec2(w * pb.len() as f32 / 2.0, 0.0),
                            pb,
                            &order,
                            piece_color(f),
                        )
                    }
                }
            }
        }
    }
    if !at_one {
        for &v in &sc.vis_vars {
            if let Some(vb) = b.var_beliefs.get(v) {
                // Below and to the right of the variable: above it are its word and gold
                // label, and on a grid its vertical factors (5.5).
                let c = sc.to_screen(sc.lay.vars[v]);
                // Clear of the circle whatever the bars' minimum height; on a grid to the
                // lower left, where no factor is (its unary factors sit lower right).
                let h = bars_height(z);
                let dx = if sc.lay.flat {
                    VAR_R * 0.5 * z + 3.0
                } else {
                    -(VAR_R * 0.5 * z + 3.0) - bar_width(z, vb.len()) * vb.len() as f32
                };
                let base = c + vec2(dx, (VAR_R * 2.4 * z + 2.0).max(VAR_R * z + 3.0 + h));
                belief_bars(sc, base, vb, &sc.label_order(v as u32, vb.len()), msg_color);
            }
        }
    }
}

/// A pairwise belief as a ku × kv grid above `bottom` (its bottom centre), each cell shaded by
/// its probability relative to the table's largest.
/// Rows and columns run in the labels' display order (`orders`, indices into the table).
fn belief_grid(
    sc: &Scene,
    bottom: Pos2,
    probs: ndarray::ArrayView2<f64>,
    (rows, cols): (&[usize], &[usize]),
    color: Color32,
) {
    let (ku, kv) = (rows.len(), cols.len());
    if probs.dim() != (ku, kv) || ku == 0 || kv == 0 {
        return;
    }
    let z = sc.z;
    let cell = ((VAR_R * 1.8) / ku.max(kv) as f32).clamp(2.0, 7.0) * z.max(0.6);
    let (w, h) = (cell * kv as f32, cell * ku as f32);
    let min = bottom - vec2(w / 2.0, h);
    let bg = sc.visuals.faint_bg_color;
    sc.painter.rect(
        Rect::from_min_size(min - vec2(1.0, 1.0), vec2(w + 2.0, h + 2.0)),
        1.0,
        bg,
        Stroke::new(0.75, sc.visuals.weak_text_color()),
        egui::StrokeKind::Outside,
    );
    let top = probs.iter().copied().fold(1e-300, f64::max);
    for (a, &ya) in rows.iter().enumerate() {
        for (b, &yb) in cols.iter().enumerate() {
            let t = (probs[(ya, yb)] / top) as f32;
            sc.painter.rect_filled(
                Rect::from_min_size(
                    min + vec2(b as f32 * cell, a as f32 * cell),
                    vec2(cell, cell),
                ),
                0.0,
                bg.lerp_to_gamma(color, t.clamp(0.0, 1.0).sqrt()),
            );
        }
    }
}

#[cfg(test)]
mod arrow_tests {
    /// A converged sweep (changes of 1e-16) draws hairlines; a moving one full arrows.
    #[test]
    fn arrows_thin_out_as_bp_converges() {
        assert!((super::arrow_width(4.44e-16) - 0.5).abs() < 1e-3);
        assert!((super::arrow_width(0.5) - 6.5).abs() < 1e-6);
        assert!(super::arrow_width(1e-3) < 1.2);
    }
}
