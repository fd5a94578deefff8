//! One frame's drawing context for the factor graph: the instance and its layout, the transform
//! to the screen, what is visible, and the term being stepped through; the canvas's layers draw
//! through it.

use super::*;
use crate::data::Sequence;
use crate::estimators::terms::Term;
use crate::graph::{Family, Instance};
use egui::{vec2, Color32, Pos2, Rect};

/// One frame's drawing context: the instance and its layout, the transform to the screen, what
/// is visible, and the term being stepped through.
pub(super) struct Scene<'a> {
    pub(super) painter: egui::Painter,
    pub(super) inst: &'a Instance,
    pub(super) lay: &'a Layout,
    pub(super) family: &'a dyn Family,
    pub(super) seq: &'a Sequence,
    pub(super) origin: Pos2,
    pub(super) z: f32,
    pub(super) clip: Rect,
    pub(super) vis_vars: Vec<usize>,
    pub(super) vis_factors: &'a [u32],
    pub(super) vis_copies: &'a [u32],
    /// Text is drawn only where it is large enough to read.
    pub(super) text_ok: bool,
    pub(super) node_split: bool,
    pub(super) term: Option<Term<'a>>,
    /// The role a lesson's question asks for, not coloured until answered.
    pub(super) quiz: Option<crate::app::lesson_format::Check>,
    pub(super) visuals: egui::Visuals,
    /// Per variable, its labels in display order (from the graph cache).
    pub(super) label_orders: &'a [Vec<usize>],
}

impl Scene<'_> {
    pub(super) fn to_screen(&self, p: Pos2) -> Pos2 {
        self.origin + p.to_vec2() * self.z
    }

    pub(super) fn visible(&self, p: Pos2) -> bool {
        self.clip.contains(self.to_screen(p))
    }

    /// Tokens are words on chains, over the first variable of each position on ladders (a
    /// factorial CRF's POS row, a Boltzmann chain's labels); a grid's variables have none.
    pub(super) fn word(&self, v: usize) -> &str {
        let width = self.inst.position_width.max(1) as usize;
        if self.lay.flat {
            crate::app::data::word(self.seq, v)
        } else if width > 1 && v.is_multiple_of(width) {
            crate::app::data::word(self.seq, v / width)
        } else {
            ""
        }
    }

    /// A label over a patch of the background, so hull outlines and edges passing under it do
    /// not cross its letters.
    pub(super) fn label(&self, at: Pos2, text: impl ToString, font: egui::FontId, color: Color32) {
        let galley = self.painter.layout_no_wrap(text.to_string(), font, color);
        if galley.size().x <= 0.0 {
            return;
        }
        let rect = egui::Align2::CENTER_CENTER.anchor_size(at, galley.size());
        self.painter
            .rect_filled(rect.expand(1.0), 2.0, self.visuals.panel_fill);
        self.painter.galley(rect.min, galley, color);
    }

    /// Where a variable's gold label goes, for a variable drawn at screen point `s`: above it
    /// on a chain; on a grid to its upper left, off the vertical edge whose BP arrows hid it.
    pub(super) fn gold_at(&self, s: Pos2) -> Pos2 {
        if self.lay.flat {
            s + vec2(0.0, label_dy(self.z).1)
        } else {
            s + vec2(-(VAR_R * self.z + 9.0), -(VAR_R * self.z * 0.8))
        }
    }

    pub(super) fn in_term_factor(&self, f: usize) -> bool {
        self.term
            .as_ref()
            .is_none_or(|t| t.factors.contains(&(f as u32)))
    }

    /// The variable's role in the shown term: free, clamped (at a wrong state for NOTA) or
    /// summed out.
    pub(super) fn var_role(&self, v: u32) -> Option<Color32> {
        use crate::app::lesson_format::Check;
        let t = self.term.as_ref()?;
        let hidden = |c: Check| self.quiz == Some(c);
        if hidden(Check::Free) && t.free.contains(&v)
            || hidden(Check::Clamped) && t.clamped.contains(&v)
            || hidden(Check::Summed) && t.summed.contains(&v)
        {
            None
        } else if t.free.contains(&v) {
            Some(FREE)
        } else if t.off_gold.is_some_and(|(u, _)| u == v) {
            Some(OFF_GOLD)
        } else if t.clamped.contains(&v) {
            Some(CLAMPED)
        } else if t.summed.contains(&v) {
            Some(SUMMED)
        } else {
            None
        }
    }

    pub(super) fn faded(c: Color32) -> Color32 {
        c.gamma_multiply(0.25)
    }

    pub(super) fn gold_name(&self, v: u32) -> &str {
        self.inst
            .gold
            .as_ref()
            .map(|g| self.family.labels(self.inst, v).names[g[v as usize] as usize].as_str())
            .unwrap_or("")
    }

    /// Variable `v`'s `k` labels in display order (see `display_order`).
    pub(super) fn label_order(&self, v: u32, k: usize) -> std::borrow::Cow<'_, [usize]> {
        match self.label_orders.get(v as usize) {
            Some(o) if o.len() == k => std::borrow::Cow::Borrowed(o.as_slice()),
            _ => std::borrow::Cow::Owned((0..k).collect()),
        }
    }

    /// The variable under the screen point `p`, if any (plain drawing only).
    pub(super) fn var_at(&self, p: Pos2) -> Option<u32> {
        if self.node_split {
            return None;
        }
        self.vis_vars
            .iter()
            .map(|&v| (v, self.to_screen(self.lay.vars[v]).distance(p)))
            .filter(|(_, dist)| *dist <= VAR_R * self.z)
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(v, _)| v as u32)
    }

    /// The factor under the screen point `p`, if any.
    pub(super) fn factor_at(&self, p: Pos2) -> Option<usize> {
        self.lay
            .factors
            .iter()
            .enumerate()
            .map(|(f, &fp)| (f, self.to_screen(fp).distance(p)))
            .filter(|(_, dist)| *dist <= (FAC_H + 4.0) * self.z.max(0.5))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(f, _)| f)
    }
}

/// Where a variable's word and gold label go above its centre (screen points, up negative):
/// stacked by their fonts' sizes, which stop shrinking at low zoom while the circle does.
pub(super) fn label_dy(z: f32) -> (f32, f32) {
    let (font, small) = fonts(z);
    let gold = -(VAR_R * z + 2.0 + 0.6 * small.size);
    (gold - (0.6 * small.size + 0.6 * font.size + 1.0), gold)
}

/// Words and labels: with the zoom, but never below 12 px (a fitted graph's zoom of 0.55–0.75
/// made them 6–8 px, unreadable on a projector; 10 px gold labels were still too small from
/// the back of a hall).
pub(super) fn fonts(z: f32) -> (egui::FontId, egui::FontId) {
    (
        egui::FontId::proportional((11.0 * z).max(12.0)),
        egui::FontId::proportional((10.0 * z).max(12.0)),
    )
}
