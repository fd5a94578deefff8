//! Where things go: positions of variables, factors and node-split copies from the family's
//! layout, the drawing constants and colours, and the hulls around pieces.

use crate::graph::instance::Instance;
use crate::graph::pieces::NodeSplitGraph;
use egui::{pos2, vec2, Color32, Pos2, Shape, Stroke};

// Layout constants at zoom 1.
pub(super) const DX: f32 = 96.0;

pub(super) const VAR_R: f32 = 17.0;

pub(super) const FAC_H: f32 = 9.0;

pub(super) const ROW: f32 = 70.0;

pub(super) const FREE: Color32 = Color32::from_rgb(240, 140, 30);

pub(super) const CLAMPED: Color32 = Color32::from_rgb(60, 110, 200);

pub(super) const SUMMED: Color32 = Color32::from_rgb(150, 80, 190);

/// A variable clamped at a wrong state: the source state y' ≠ y* of a NOTA term (001 eq. 6).
pub(super) const OFF_GOLD: Color32 = Color32::from_rgb(200, 50, 60);

pub(super) fn template_color(t: usize) -> Color32 {
    // Palette slots whose hues stay clear of the term roles (free orange, clamped blue,
    // summed purple).
    const SLOTS: [usize; 6] = [3, 4, 5, 8, 9, 7];
    crate::app::palette(SLOTS[t % SLOTS.len()])
}

/// The number of variables piece `p`'s factors touch (a piece over one is a unary factor
/// alone: not outlined where larger pieces are, and the caption counts it).
pub(super) fn piece_vars(inst: &Instance, p: &[u32]) -> usize {
    let mut vs: Vec<u32> = p
        .iter()
        .flat_map(|&f| inst.scope(&inst.factors[f as usize]).iter().copied())
        .collect();
    vs.sort_unstable();
    vs.dedup();
    vs.len()
}

pub(super) fn piece_color(i: usize) -> Color32 {
    let hue = (i as f32 * 0.618_034).fract();
    egui::ecolor::Hsva::new(hue, 0.7, 0.75, 1.0).into()
}

/// Positions in graph coordinates (zoom 1, origin at the top-left of the canvas).
pub(super) struct Layout {
    pub(super) vars: Vec<Pos2>,
    pub(super) factors: Vec<Pos2>,
    /// Node-split copies: (original variable, piece, position).
    pub(super) copies: Vec<(u32, u32, Pos2)>,
    /// Per factor in node-split mode: the copies its scope uses.
    pub(super) factor_copies: Vec<Vec<usize>>,
    /// Factors and copies sorted by x, and each factor's pieces: drawing touches only what is
    /// in view, so long sequences cost what a screenful costs.
    /// Every variable on one row (a chain): tokens are drawn above the variables.
    pub(super) flat: bool,
    pub(super) var_order: Vec<u32>,
    pub(super) factor_order: Vec<u32>,
    pub(super) copy_order: Vec<u32>,
    pub(super) factor_pieces: Vec<Vec<u32>>,
    pub(super) size: egui::Vec2,
}

impl Layout {
    /// Indices into `order` whose x (by `x_of`) lies in `[lo, hi]`.
    pub(super) fn range(
        order: &[u32],
        x_of: impl Fn(u32) -> f32,
        lo: f32,
        hi: f32,
    ) -> std::ops::Range<usize> {
        let a = order.partition_point(|&i| x_of(i) < lo);
        let b = order.partition_point(|&i| x_of(i) <= hi);
        a..b.max(a)
    }
}

/// Positions from the family's layout (cell units): a chain (every variable on one row) keeps
/// its pairwise factors on the line and its unary factors below; grids and circles put pairwise
/// factors at the midpoint of their variables and unary factors diagonally beside them.
pub(super) fn layout(
    inst: &Instance,
    cells: &[[f32; 2]],
    split: Option<&NodeSplitGraph>,
    pieces: &[Vec<u32>],
) -> Layout {
    let n = inst.n_vars();
    let y_var = ROW * 1.2;
    let flat = cells
        .iter()
        .all(|c| c[1] == cells.first().map_or(0.0, |f| f[1]));
    let vars: Vec<Pos2> = (0..n)
        .map(|v| {
            let c = cells.get(v).copied().unwrap_or([v as f32, 0.0]);
            pos2(DX * (c[0] + 0.6), y_var + DX * c[1])
        })
        .collect();
    let factors: Vec<Pos2> = inst
        .factors
        .iter()
        .map(|f| {
            let sc = inst.scope(f);
            let centre = sc
                .iter()
                .map(|&v| vars[v as usize].to_vec2())
                .fold(egui::Vec2::ZERO, |a, b| a + b)
                / sc.len() as f32;
            match (sc.len(), flat) {
                (1, true) => centre.to_pos2() + vec2(0.0, ROW),
                (1, false) => centre.to_pos2() + vec2(0.3, 0.3) * DX,
                // A skip edge of a chain: an arc above it, higher the longer it reaches.
                (2, true) if sc[1].abs_diff(sc[0]) > 1 => {
                    let span = sc[1].abs_diff(sc[0]) as f32;
                    centre.to_pos2() - vec2(0.0, ROW * (0.9 + 0.45 * span.ln()))
                }
                (2, _) => centre.to_pos2(),
                (_, true) => centre.to_pos2() - vec2(0.0, ROW),
                _ => centre.to_pos2(),
            }
        })
        .collect();
    // Arcs above a chain push everything down so the highest stays on the canvas.
    let top = factors.iter().map(|p| p.y).fold(f32::INFINITY, f32::min);
    let (mut vars, mut factors) = (vars, factors);
    if top < ROW * 0.3 {
        let d = vec2(0.0, ROW * 0.3 - top);
        for p in vars.iter_mut().chain(factors.iter_mut()) {
            *p += d;
        }
    }
    // Pairwise factors that land on the same point (a circle's diameters all cross its centre)
    // are spread along their own chords.
    let mut seen: std::collections::HashMap<(i32, i32), u32> = Default::default();
    for (f, p) in factors.iter_mut().enumerate() {
        let n = seen
            .entry((p.x.round() as i32, p.y.round() as i32))
            .or_insert(0);
        if *n > 0 {
            if let [a, b] = *inst.scope(&inst.factors[f]) {
                let (pa, pb) = (vars[a as usize], vars[b as usize]);
                let t = 0.5 + 0.14 * (*n as f32).min(3.0) * if *n % 2 == 1 { -1.0 } else { 1.0 };
                *p = pa + (pb - pa) * t;
            }
        }
        *n += 1;
    }
    let mut copies = vec![];
    let mut factor_copies = vec![vec![]; inst.factors.len()];
    if let Some(sg) = split {
        // Copies of a piece's variables sit between the original and the piece's centre.
        for (c, (&orig, &piece)) in sg.origin.iter().zip(&sg.piece_of).enumerate() {
            let fs = &pieces[piece as usize];
            let centre = fs
                .iter()
                .map(|&f| factors[f as usize].to_vec2())
                .fold(egui::Vec2::ZERO, |a, b| a + b)
                / fs.len().max(1) as f32;
            let p = vars[orig as usize];
            let to = centre.to_pos2() - vars[orig as usize];
            let d = to.length().max(1.0);
            let shift = to / d * (d * 0.45).min(DX * 0.3);
            copies.push((orig, piece, p + shift));
            for &f in fs {
                if inst.scope(&inst.factors[f as usize]).contains(&orig) {
                    factor_copies[f as usize].push(c);
                }
            }
        }
    }
    let mut var_order: Vec<u32> = (0..vars.len() as u32).collect();
    var_order.sort_by(|&a, &b| vars[a as usize].x.total_cmp(&vars[b as usize].x));
    let mut factor_order: Vec<u32> = (0..factors.len() as u32).collect();
    factor_order.sort_by(|&a, &b| factors[a as usize].x.total_cmp(&factors[b as usize].x));
    let mut copy_order: Vec<u32> = (0..copies.len() as u32).collect();
    copy_order.sort_by(|&a, &b| copies[a as usize].2.x.total_cmp(&copies[b as usize].2.x));
    let (mx, my) = vars
        .iter()
        .chain(&factors)
        .fold((0.0f32, 0.0f32), |(a, b), p| (a.max(p.x), b.max(p.y)));
    // Room below for the template legend.
    let mut templates: Vec<u32> = inst.factors.iter().map(|f| f.template).collect();
    templates.sort_unstable();
    templates.dedup();
    let size = vec2(
        mx + DX * 0.6,
        my + ROW * 0.6 + 14.0 * templates.len() as f32 + 8.0,
    );
    let mut factor_pieces = vec![vec![]; factors.len()];
    for (i, fs) in pieces.iter().enumerate() {
        for &f in fs {
            factor_pieces[f as usize].push(i as u32);
        }
    }
    Layout {
        vars,
        factors,
        copies,
        factor_copies,
        flat,
        var_order,
        factor_order,
        copy_order,
        factor_pieces,
        size,
    }
}

/// Convex hull (monotone chain) of points.
/// A piece drawn as a dashed, faintly filled hull around its points (screen coordinates).
pub(super) fn piece_hull(painter: &egui::Painter, pts: Vec<Pos2>, c: Color32) {
    let mut h = hull(pts);
    if let Some(&first) = h.first() {
        h.push(first);
    }
    painter.add(Shape::convex_polygon(
        h.clone(),
        c.gamma_multiply(0.06),
        Stroke::NONE,
    ));
    painter.extend(Shape::dashed_line(&h, Stroke::new(1.5, c), 6.0, 4.0));
}

pub(super) fn hull(mut pts: Vec<Pos2>) -> Vec<Pos2> {
    pts.sort_by(|a, b| a.x.total_cmp(&b.x).then(a.y.total_cmp(&b.y)));
    pts.dedup_by(|a, b| (a.x - b.x).abs() < 1e-3 && (a.y - b.y).abs() < 1e-3);
    if pts.len() < 3 {
        return pts;
    }
    let cross = |o: Pos2, a: Pos2, b: Pos2| (a.x - o.x) * (b.y - o.y) - (a.y - o.y) * (b.x - o.x);
    let mut lower: Vec<Pos2> = vec![];
    for &p in &pts {
        while lower.len() >= 2 && cross(lower[lower.len() - 2], lower[lower.len() - 1], p) <= 0.0 {
            lower.pop();
        }
        lower.push(p);
    }
    let mut upper: Vec<Pos2> = vec![];
    for &p in pts.iter().rev() {
        while upper.len() >= 2 && cross(upper[upper.len() - 2], upper[upper.len() - 1], p) <= 0.0 {
            upper.pop();
        }
        upper.push(p);
    }
    lower.pop();
    upper.pop();
    lower.extend(upper);
    lower
}

/// Points of a circle around `c`, for padded hulls.
pub(super) fn ring(c: Pos2, r: f32, out: &mut Vec<Pos2>) {
    for k in 0..12 {
        let a = k as f32 / 12.0 * std::f32::consts::TAU;
        out.push(c + vec2(a.cos(), a.sin()) * r);
    }
}
