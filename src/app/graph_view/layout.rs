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
    egui::ecolor::Hsva::new(hue, 0.85, 0.7, 1.0).into()
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
    /// A chain wrapped into rows (see [`wrap`]): each row's height; 0 for one row.
    pub(super) row_h: f32,
}

impl Layout {
    /// The row of a wrapped chain that `p` lies in (0 when not wrapped).
    pub(super) fn row_of(&self, p: Pos2) -> i32 {
        if self.row_h > 0.0 {
            (p.y / self.row_h).floor() as i32
        } else {
            0
        }
    }

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
        row_h: 0.0,
    }
}

/// The columns and zoom that show a chain, laid out in one row as `base`, whole in `view`, wrapped into rows like a line of text (D30: fitting only the
/// height showed 8 of 25 variables). The largest zoom from 1.5 down to 0.5 at which the
/// rows fit; at 0.5 they may still scroll. `None`: one row already fits at a readable zoom.
pub(super) fn wrap_fit(base: &Layout, view: egui::Vec2, min_zoom: f32) -> Option<(usize, f32)> {
    let n = base.vars.len();
    if n == 0 || view.x / base.size.x.max(1.0) >= 0.6f32.max(min_zoom) {
        return None;
    }
    let row_h = row_extent(base).1;
    let cols_at = |z: f32| (((view.x / z) - DX * 1.2) / DX).floor().max(3.0) as usize;
    // From 1.5 down: on a large screen the graph (and its type) grows into the pane.
    let floor = 0.5f32.max(min_zoom);
    let mut z = 1.5f32.max(floor);
    while z > floor {
        let cols = cols_at(z);
        let rows = n.div_ceil(cols);
        if rows as f32 * row_h * z <= view.y {
            return Some((cols.min(n), z));
        }
        z -= 0.05;
    }
    Some((cols_at(floor).min(n), floor))
}

/// The smallest circle a picture of the graph draws, in points at zoom 1: a node-split
/// graph's copies, else the variables.
pub(super) fn smallest_circle(node_split: bool) -> f32 {
    2.0 * if node_split { VAR_R * 0.75 } else { VAR_R }
}

/// Pixels a circle must keep on screen in front of a room (issue 66: 28 px at 1024×768).
pub const LECTURE_CIRCLE_PX: f32 = 28.0;

/// The top and height of a wrapped chain's row: as tall as what is drawn — words and gold
/// labels above the variables, arcs, unary factors and belief bars below (the one-row
/// layout's margins doubled the gaps).
fn row_extent(base: &Layout) -> (f32, f32) {
    // Room above for the word and gold label, whose type stops shrinking at low zoom.
    let tops = base.vars.iter().map(|p| p.y - VAR_R * 3.4);
    let top = tops
        .chain(base.factors.iter().map(|p| p.y - FAC_H - 6.0))
        .fold(f32::INFINITY, f32::min)
        .max(0.0);
    let bottoms = base.vars.iter().map(|p| p.y + VAR_R * 2.6);
    let bottom = bottoms
        .chain(base.factors.iter().map(|p| p.y + FAC_H + 8.0))
        .fold(0.0, f32::max);
    (top, (bottom - top).max(ROW))
}

/// A flat chain's layout `base` wrapped after every `cols` variables: row r moves left by
/// r·cols cells and down by r rows (each as tall as the chain). A factor whose variables fall
/// in two rows (the transition across a break, a long skip edge) stays at the end of the
/// first; its edge to the next row is drawn dashed.
pub(super) fn wrap(base: &Layout, cols: usize) -> Layout {
    let (top, row_h) = row_extent(base);
    let cols = cols.max(1);
    let width = DX * (cols as f32 + 1.2);
    let col_of = |p: Pos2| ((p.x / DX) - 0.6).round().max(0.0) as usize;
    let var_row: Vec<usize> = base.vars.iter().map(|&p| col_of(p) / cols).collect();
    let shift = |p: Pos2, r: usize| p + vec2(-((r * cols) as f32) * DX, r as f32 * row_h - top);
    let vars: Vec<Pos2> = base
        .vars
        .iter()
        .zip(&var_row)
        .map(|(&p, &r)| shift(p, r))
        .collect();
    // A factor's row: its leftmost variable's, found by x (factors sit between their
    // variables, or below or above one).
    let factors: Vec<Pos2> = base
        .factors
        .iter()
        .map(|&p| {
            let r = ((p.x / DX - 0.6 - 0.49).max(0.0).round() as usize / cols)
                .min(var_row.iter().copied().max().unwrap_or(0));
            let mut q = shift(p, r);
            q.x = q.x.clamp(DX * 0.6, width - DX * 0.2);
            q
        })
        .collect();
    let copies: Vec<(u32, u32, Pos2)> = base
        .copies
        .iter()
        .map(|&(v, piece, p)| (v, piece, shift(p, var_row[v as usize])))
        .collect();
    let order = |xs: &[Pos2]| {
        let mut o: Vec<u32> = (0..xs.len() as u32).collect();
        o.sort_by(|&a, &b| xs[a as usize].x.total_cmp(&xs[b as usize].x));
        o
    };
    let copy_pos: Vec<Pos2> = copies.iter().map(|c| c.2).collect();
    let rows = var_row.iter().copied().max().map_or(1, |r| r + 1);
    Layout {
        var_order: order(&vars),
        factor_order: order(&factors),
        copy_order: order(&copy_pos),
        vars,
        factors,
        copies,
        factor_copies: base.factor_copies.clone(),
        flat: base.flat,
        factor_pieces: base.factor_pieces.clone(),
        size: vec2(width, rows as f32 * row_h),
        row_h,
    }
}

/// Convex hull (monotone chain) of points.
/// A piece drawn as a dashed, faintly filled hull around its points (screen coordinates).
pub(super) fn piece_hull(painter: &egui::Painter, pts: Vec<Pos2>, c: Color32) {
    let mut h = hull(pts);
    if let Some(&first) = h.first() {
        h.push(first);
    }
    // A tinted region under a 2.5 px saturated dash: 1.5 px pastel dashes washed out on a
    // projector, where "each dashed region is a piece" is the lesson's point.
    painter.add(Shape::convex_polygon(
        h.clone(),
        c.gamma_multiply(0.12),
        Stroke::NONE,
    ));
    painter.extend(Shape::dashed_line(&h, Stroke::new(2.5, c), 8.0, 4.0));
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A chain of `n` variables as `layout` places it: unary factors below, transitions
    /// between.
    fn chain(n: usize) -> Layout {
        let y = ROW * 1.2;
        let vars: Vec<Pos2> = (0..n).map(|t| pos2(DX * (t as f32 + 0.6), y)).collect();
        let mut factors: Vec<Pos2> = vars.iter().map(|p| *p + vec2(0.0, ROW)).collect();
        factors.extend((1..n).map(|t| pos2(DX * (t as f32 + 0.1), y)));
        let order: Vec<u32> = (0..n as u32).collect();
        Layout {
            factor_order: (0..factors.len() as u32).collect(),
            factor_copies: vec![vec![]; factors.len()],
            factor_pieces: vec![vec![]; factors.len()],
            vars,
            factors,
            copies: vec![],
            flat: true,
            var_order: order,
            copy_order: vec![],
            size: vec2(DX * (n as f32 + 0.2), ROW * 3.0),
            row_h: 0.0,
        }
    }

    /// D30: a 25-variable chain in a 700 × 500 pane wraps into rows that fit it whole at a
    /// readable zoom; a short one stays on one row.
    #[test]
    fn a_long_chain_wraps_to_fit_the_pane() {
        let base = chain(25);
        let view = vec2(700.0, 500.0);
        let (cols, z) = wrap_fit(&base, view, 0.0).expect("wraps");
        let lay = wrap(&base, cols);
        assert!(z >= 0.6, "zoom {z}");
        assert!(lay.size.x * z <= view.x + 1e-3, "{:?} at {z}", lay.size);
        assert!(lay.size.y * z <= view.y + 1e-3, "{:?} at {z}", lay.size);
        // Every variable and factor on the canvas, each variable in its row.
        for p in lay.vars.iter().chain(&lay.factors) {
            assert!(
                p.x > 0.0 && p.x < lay.size.x && p.y > 0.0 && p.y < lay.size.y,
                "{p:?}"
            );
        }
        for (t, p) in lay.vars.iter().enumerate() {
            assert_eq!(lay.row_of(*p), (t / cols) as i32, "y{t}");
        }
        // The transition across the first break stays at the end of the first row.
        let across = lay.factors[25 + cols - 1];
        assert_eq!(lay.row_of(across), 0);
        assert!(across.x > lay.vars[cols - 1].x);
        // A unary factor is in its variable's row.
        assert_eq!(lay.row_of(lay.factors[cols]), 1);
        assert!(wrap_fit(&chain(5), view, 0.0).is_none());
        // The lecture zoom's floor holds: more rows, each at least that large.
        let (cols_big, z_big) = wrap_fit(&base, view, 1.2).expect("wraps");
        assert!(
            z_big >= 1.2 && cols_big < cols,
            "{cols_big} columns at {z_big}"
        );
    }
}
