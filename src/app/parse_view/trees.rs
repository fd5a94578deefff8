//! The Parse pane's Trees tab: the gold and the predicted tree, brackets coloured by EVALB's
//! matches.

use super::*;
use egui::{pos2, vec2, Align2, Color32, FontId, Rect, Sense, Stroke};

/// Draws the gold and the predicted tree, sized so that both fit below the caption; returns
/// where they are.
pub(super) fn trees_tab(
    state: &AppState,
    run_id: &str,
    view: &SentenceView,
    fit: Fit,
    ui: &mut egui::Ui,
) -> Rect {
    ui.weak(
        "Gold tree above, the run's prediction below. A phrase is green when the other tree has \
         the same bracket (label and words, punctuation aside, as EVALB counts them), red when \
         it does not; grey nodes (part-of-speech tags, the root) are not scored as brackets.",
    );
    legend(
        ui,
        &[
            (GREEN, "bracket in both trees"),
            (RED, "bracket in this tree only"),
            (Color32::GRAY, "not a scored bracket"),
        ],
    );
    let levels = |nodes: &[Node]| nodes.iter().map(|x| x.height).max().unwrap_or(1) as f32;
    // Two headings and each tree's words (and its type's lift): about 140 points beside the
    // levels.
    let room = fit.room(ui) - 140.0;
    let row = (room / (levels(&view.gold) + levels(&view.predicted))).clamp(13.0, 24.0);
    let top = ui.strong("Gold tree").rect;
    draw_tree(ui, &view.gold, &view.words, row);
    ui.strong("Predicted tree");
    let bottom = draw_tree(ui, &view.predicted, &view.words, row);
    let drawn = top.union(bottom);
    if let Some(m) = state
        .runs
        .get(run_id)
        .and_then(|e| e.summary.as_ref())
        .and_then(|s| s.test.as_ref())
    {
        ui.separator();
        ui.label(format!(
            "The run on its whole test set: P {:.2} R {:.2} F1 {:.2}, tagging {:.2} % — per label \
             (the most frequent gold labels):",
            m.segments.precision, m.segments.recall, m.segments.f1, m.token_accuracy
        ));
        let mut rows: Vec<_> = m.segment_types.iter().collect();
        rows.sort_by_key(|r| std::cmp::Reverse(r.1.gold));
        egui::Grid::new("parse-labels")
            .striped(true)
            .num_columns(6)
            .show(ui, |ui| {
                for h in ["label", "gold", "predicted", "P", "R", "F1"] {
                    ui.strong(h);
                }
                ui.end_row();
                for (l, prf) in rows.into_iter().take(12) {
                    ui.label(l);
                    ui.label(prf.gold.to_string());
                    ui.label(prf.predicted.to_string());
                    ui.label(format!("{:.1}", prf.precision));
                    ui.label(format!("{:.1}", prf.recall));
                    ui.label(format!("{:.1}", prf.f1));
                    ui.end_row();
                }
            });
    }
    drawn
}

/// Draws a tree: words along the bottom, each node centred over its words at its height,
/// `row` points between heights. A parent is joined to its children by a bar just under it
/// and a drop to each child (a node's height is its distance from the words, so a straight
/// line from a high parent to a low child would pass through the nodes between); returns
/// where it is.
pub(super) fn draw_tree(ui: &mut egui::Ui, nodes: &[Node], words: &[String], row: f32) -> Rect {
    let n = words.len().max(1);
    let levels = nodes.iter().map(|x| x.height).max().unwrap_or(1);
    // At least 12 px, up to 15 as the row allows: 9–11 px labels could not be read from the
    // back of a hall at 1024×768. Type above 11 px lifts the nodes off the words' line.
    let font = FontId::proportional((row * 0.78).clamp(12.0, 15.0));
    let lift = font.size - 11.0;
    let width = ui.available_width().max(200.0);
    let (rect, _) = ui.allocate_exact_size(
        vec2(width, row * levels as f32 + 44.0 + lift),
        Sense::hover(),
    );
    let painter = ui.painter_at(rect);
    let col = (rect.width() - 8.0) / n as f32;
    let x_of = |a: usize, b: usize| rect.left() + 4.0 + col * (a + b) as f32 / 2.0;
    // The words' line; part-of-speech nodes (height 1) sit a row above it.
    let base = rect.bottom() - 26.0;
    let y_of = |h: usize| base - row * h as f32 + 4.0 - lift;
    let text = ui.visuals().text_color();
    // Words too wide for their column alternate between two lines.
    let crowded = words.iter().any(|w| {
        painter
            .layout_no_wrap(w.clone(), font.clone(), text)
            .size()
            .x
            > col - 2.0
    });
    for (k, w) in words.iter().enumerate() {
        let dy = if crowded && k % 2 == 1 { 13.0 } else { 0.0 };
        painter.text(
            pos2(x_of(k, k + 1), base + dy),
            Align2::CENTER_CENTER,
            w,
            font.clone(),
            text,
        );
    }
    let edge = Stroke::new(1.0, Color32::GRAY);
    for x in nodes {
        let at = pos2(x_of(x.start, x.end), y_of(x.height));
        if let Some(pa) = x.parent {
            let q = &nodes[pa];
            let from = pos2(x_of(q.start, q.end), y_of(q.height));
            // The bar sits half a row under the parent, above every node of lower height.
            let bar = from.y + row * 0.5;
            painter.line_segment([from, pos2(from.x, bar)], edge);
            painter.line_segment([pos2(from.x, bar), pos2(at.x, bar)], edge);
            painter.line_segment([pos2(at.x, bar), at], edge);
        }
        if x.height == 1 {
            painter.line_segment(
                [at, pos2(at.x, base - 7.0)],
                Stroke::new(1.0, Color32::GRAY),
            );
        }
    }
    for x in nodes {
        let at = pos2(x_of(x.start, x.end), y_of(x.height));
        let fill = match x.matched {
            Some(true) => GREEN,
            Some(false) => RED,
            None => Color32::from_gray(110),
        };
        let galley = painter.layout_no_wrap(x.label.clone(), font.clone(), Color32::WHITE);
        let r = Rect::from_center_size(at, galley.size() + vec2(6.0, 2.0));
        painter.rect_filled(r, 3.0, fill);
        painter.galley(r.min + vec2(3.0, 1.0), galley, Color32::WHITE);
    }
    rect
}
