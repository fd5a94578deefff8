//! The Parse pane's Chart tab: the Viterbi chart's best edge per span, shaded by its ratio to
//! the best edge of the same length (PT-CFG's NOTA criterion, 001 §5).

use super::*;
use egui::{pos2, vec2, Align2, Color32, FontId, Rect, Sense, Stroke, Vec2};

/// Cell rectangles of the chart triangle: length 1 along the bottom, the whole sentence at the
/// top, each cell centred over its words. Cells are `size` (width, height): wider than tall
/// where the pane is wide and short, so that the whole chart fits with its labels.
pub(super) fn cell_rect(origin: egui::Pos2, size: Vec2, n: usize, i: usize, j: usize) -> Rect {
    let len = j - i;
    let x = origin.x + size.x * (i as f32 + (len - 1) as f32 / 2.0);
    let y = origin.y + size.y * (n - len) as f32;
    Rect::from_min_size(pos2(x, y), size)
}

/// Blue by the best edge's ratio to the best edge of its length: strong at 1, fading into the
/// theme's background at 1e-10 (pale on the light theme, dark on the dark one).
pub(super) fn ratio_color(log_ratio: f64, dark: bool) -> Color32 {
    let t = (1.0 + log_ratio / (10.0 * std::f64::consts::LN_10)).clamp(0.0, 1.0) as f32;
    let (from, to) = if dark {
        ([45.0, 50.0, 62.0], [70.0, 100.0, 210.0])
    } else {
        ([218.0, 226.0, 246.0], [60.0, 90.0, 190.0])
    };
    let mix = |k: usize| (from[k] + (to[k] - from[k]) * t) as u8;
    Color32::from_rgb(mix(0), mix(1), mix(2))
}

/// The chart with its caption, legend and threshold; returns where the chart is.
pub(super) fn chart_tab(
    p: &mut ParsePane,
    run: &GrammarRun,
    view: &SentenceView,
    fit: Fit,
    ui: &mut egui::Ui,
) -> Rect {
    // The scale fades into the theme's background: towards white on the light theme, towards
    // black on the dark one.
    let fade = if ui.visuals().dark_mode {
        "strong blue: as good, fading to the background: 1e-10 of it"
    } else {
        "dark blue: as good, pale: 1e-10 of it"
    };
    crate::app::appearance::explanation(ui, "How to read the chart", |ui| {
        ui.weak(format!(
            "The CKY chart: a cell is a span of words (start along the bottom, length upwards), \
         coloured by its best edge's score against the best edge of the same length ({fade}), \
         labelled with that edge (@X|<…> are the binarisation's intermediate symbols; hover a \
         cell for all its edges). A gold-outlined cell holds a gold bracket; its label is still \
         the best edge's, which need not be the gold one. PT-CFG gives a NOTA term to each \
         wrong edge whose ratio to the best edge of its length is above the threshold: cells \
         with such edges are outlined red, with their count."
        ));
        // Inside the fold on a small screen: at 1024×768 its two lines squeezed the chart.
        if run.estimator.scoring() == crate::grammar::chart::Scoring::Local {
            ui.weak(
                "This run is locally normalised: a word's tag has no score of its own (the tag \
                 is chosen by the expansion above it), so the bottom row's cells tie and show \
                 any tag.",
            );
        }
    });
    let dark = ui.visuals().dark_mode;
    legend(
        ui,
        &[
            (ratio_color(0.0, dark), "best of its length"),
            (
                ratio_color(-5.0 * std::f64::consts::LN_10, dark),
                "1e-5 of it",
            ),
            (
                ratio_color(-10.0 * std::f64::consts::LN_10, dark),
                "1e-10 or less",
            ),
            (Color32::TRANSPARENT, "no edge over the span"),
            (GOLD, "gold bracket"),
            (RED, "wrong edges above the threshold"),
        ],
    );
    threshold_slider(p, view, ui);
    // What the slider selects on this sentence, then the run's own threshold over the
    // training set, apart: one "about 5 per sentence" beside a sentence with 18 read as a
    // contradiction.
    let (selected, cells) = count_selected(p, view);
    let wrong: usize = view
        .cells
        .iter()
        .filter(|c| c.j - c.i >= 2)
        .map(|c| c.edges.iter().filter(|e| !e.gold).count())
        .sum();
    // A threshold below this sentence's lowest ratio (the run's own, 10^-43.4) selects what the
    // lowest does: said as the slider says it, not as a second number for one position.
    let lowest = wrong_edge_levels(view).first().copied();
    let (at_least, below) = match lowest {
        Some(l) if p.threshold_log10 < l - 0.05 => (
            exponent(l),
            format!(
                " (the threshold, 10^{}, is below them all)",
                exponent(p.threshold_log10)
            ),
        ),
        _ => (exponent(p.threshold_log10), String::new()),
    };
    ui.label(format!(
        "This sentence: {selected} of its {wrong} wrong edges score at least 10^{at_least} of \
         the best edge of their length{below}, so they get a NOTA term: {cells} cells outlined \
         red (a cell may hold several; their count in its corner where the cell has room).",
    ));
    if let Some(t) = run.nota_threshold {
        // What the run trained at, beside what the slider shows: folded with the reading notes
        // on a small screen.
        let small = ui.ctx().content_rect().height() < 790.0;
        let line = format!(
            "The run trained at 10^{:.2}: at iteration 10 that selected {} wrong edges over \
             its {} training sentences, about {:.0} a sentence on average (001 reports about \
             160 a sentence on the WSJ).",
            t.log10(),
            run.nota_instances,
            run.data.sentences.len(),
            run.nota_instances as f64 / run.data.sentences.len().max(1) as f64,
        );
        if small {
            egui::CollapsingHeader::new(egui::RichText::new("The run's own threshold").weak())
                .id_salt("nota-run-threshold")
                .show(ui, |ui| ui.weak(line));
        } else {
            ui.weak(line);
        }
    }
    draw_chart(p, view, None, fit, ui)
}

/// The distinct log10 ratios of this sentence's wrong binary edges (those a threshold can give
/// a NOTA term), ascending, each rounded down to the hundredth of a decade the pane computes
/// its terms at (so a level still selects its edges).
pub(super) fn wrong_edge_levels(view: &SentenceView) -> Vec<f64> {
    let mut v: Vec<i64> = view
        .cells
        .iter()
        .filter(|c| c.j - c.i >= 2)
        .flat_map(|c| c.edges.iter().filter(|e| !e.gold))
        .map(|e| e.log_ratio / std::f64::consts::LN_10)
        .filter(|x| x.is_finite())
        .map(|x| (x * 100.0).floor() as i64)
        .collect();
    v.sort_unstable();
    v.dedup();
    v.into_iter().map(|x| x as f64 / 100.0).collect()
}

/// The threshold slider steps over the sentence's wrong edges, one notch per distinct ratio
/// (from "every wrong edge" to "none"): a log scale over 10^-50 … 1 left most of its travel
/// where the count did not change (issue 66: 18 from 10^-43.5 to 10^-1.5).
fn threshold_slider(p: &mut ParsePane, view: &SentenceView, ui: &mut egui::Ui) {
    let levels = wrong_edge_levels(view);
    ui.horizontal_wrapped(|ui| {
        let l = ui.label("NOTA threshold");
        let Some(&top) = levels.last() else {
            ui.weak("(this sentence has no wrong edge for a threshold to select)");
            return;
        };
        // Notch r sets the threshold at the r-th ratio (r = len: above them all); a threshold
        // set elsewhere (the run's own) sits at the first notch at or above it.
        let at = |r: usize| levels.get(r).copied().unwrap_or(top + 0.1);
        let mut notch = levels
            .iter()
            .filter(|&&v| v < p.threshold_log10 - 1e-9)
            .count();
        let before = notch;
        ui.add(egui::Slider::new(&mut notch, 0..=levels.len()).show_value(false))
            .labelled_by(l.id)
            .on_hover_text(
                "one notch per distinct ratio of a wrong edge of this sentence: left, every \
                 wrong edge gets a NOTA term; right, none",
            );
        if notch != before {
            p.threshold_log10 = at(notch);
        }
        // At the left end the threshold may lie below every edge (the run's own): one
        // reading, not two values for one knob position.
        let now = if notch == 0 {
            format!(
                "left end: every wrong edge (the lowest scores 10^{} of the best of its length)",
                exponent(levels[0])
            )
        } else if notch == levels.len() {
            "right end: no wrong edge".to_string()
        } else {
            format!(
                "threshold 10^{} of the best edge of its length",
                exponent(p.threshold_log10)
            )
        };
        ui.weak(now);
    });
}

/// A power of ten's exponent to a tenth, a rounded zero written 0 (not "10^-0.0").
fn exponent(x: f64) -> String {
    if x.abs() < 0.05 {
        "0".into()
    } else {
        format!("{x:.1}")
    }
}

/// The wrong edges of cell `c` a threshold of `thr` (natural log of the ratio to the best edge
/// of its length) gives a NOTA term: binary spans only.
fn selected_in(c: &crate::eval::parse_view::Cell, thr: f64) -> usize {
    if c.j - c.i < 2 {
        return 0;
    }
    c.edges
        .iter()
        .filter(|e| !e.gold && e.log_ratio >= thr)
        .count()
}

/// The wrong binary edges the slider's threshold selects on this sentence, and the cells
/// holding them (the chart outlines cells: one may hold several).
pub(super) fn count_selected(p: &ParsePane, view: &SentenceView) -> (usize, usize) {
    let thr = p.threshold_log10 * std::f64::consts::LN_10;
    view.cells
        .iter()
        .map(|c| selected_in(c, thr))
        .filter(|&k| k > 0)
        .fold((0, 0), |(edges, cells), k| (edges + k, cells + 1))
}

/// Draws the chart, sized to the room below the cursor (or, where that is too little, to the
/// pane: it is then scrolled to); `term` outlines a term's span. Returns where it is.
pub(super) fn draw_chart(
    p: &ParsePane,
    view: &SentenceView,
    term: Option<((usize, usize), Color32)>,
    fit: Fit,
    ui: &mut egui::Ui,
) -> Rect {
    let n = view.words.len().max(1);
    let nf = n as f32;
    let w = ((ui.available_width() - 10.0) / nf).clamp(14.0, 96.0);
    // The words' line takes 22 points; cells of 14 points still show their colours and
    // outlines (a label from 20).
    let room = fit.room(ui) - 30.0;
    // Under a term (the Terms tab) the chart locates the term's span: cells down to 9 points
    // keep it on screen below the candidates at 1024×768 (the labels go, the outline stays).
    let min_h = if term.is_some() { 9.0 } else { 14.0 };
    let h_room = if room / nf >= min_h {
        room
    } else {
        fit.height - 30.0
    };
    let h = (h_room / nf).clamp(min_h, w.min(56.0));
    let size = vec2(w, h);
    let (rect, resp) = ui.allocate_exact_size(vec2(w * nf + 10.0, h * nf + 22.0), Sense::hover());
    let painter = ui.painter_at(rect);
    let origin = rect.min + vec2(5.0, 0.0);
    let thr = p.threshold_log10 * std::f64::consts::LN_10;
    // At least 10 points: 9 (a cell 48 wide) could not be read from the back of a hall.
    let font = FontId::proportional((h * 0.6).min(w * 0.26).clamp(10.0, 14.0));
    // What a cell has room for: a label and a count once it is 14 points high and 24 wide
    // (smaller, the label would be too small to read; hover names it). At 20 the chart under
    // lesson 9's NOTA bars lost every label at 1280×800.
    let labelled = h >= 14.0 && w >= 24.0;
    let chars = |px: f32| (w / px) as usize;
    let mut hovered = None;
    for c in &view.cells {
        let r = cell_rect(origin, size, n, c.i, c.j).shrink(1.0);
        let best = c.edges.first();
        // A span without an edge is an outline alone: filled near-white it read as "1e-10 or
        // less" beside a caption counting every wrong edge above 10^-1.4.
        let fill = best.map_or(Color32::TRANSPARENT, |e| {
            ratio_color(e.log_ratio, ui.visuals().dark_mode)
        });
        painter.rect_filled(r, 2.0, fill);
        // A thin border: pale cells vanished into a white pane, and with them which span a
        // raised cell covers.
        painter.rect_stroke(
            r,
            2.0,
            Stroke::new(0.8, ui.visuals().weak_text_color().gamma_multiply(0.5)),
            egui::StrokeKind::Inside,
        );
        let wrong = selected_in(c, thr);
        if c.edges.iter().any(|e| e.gold) {
            painter.rect_stroke(r, 2.0, Stroke::new(2.5, GOLD), egui::StrokeKind::Inside);
        }
        if wrong > 0 {
            painter.rect_stroke(
                r.shrink(3.0),
                1.0,
                Stroke::new(2.5, RED),
                egui::StrokeKind::Inside,
            );
            if labelled && h >= 2.0 * font.size + 8.0 {
                // Below the label (a lower cell shows the red outline alone), on a white chip: red digits on the blue cells could not be read.
                let galley = painter.layout_no_wrap(wrong.to_string(), font.clone(), RED);
                let at = Align2::RIGHT_BOTTOM
                    .anchor_size(r.right_bottom() - vec2(3.0, 2.0), galley.size());
                painter.rect_filled(at.expand(1.5), 2.0, Color32::WHITE);
                painter.galley(at.min, galley, RED);
            }
        }
        if let (Some(e), true) = (best, labelled) {
            let mut label = e.label.clone();
            let max_chars = chars(font.size * 0.62);
            if label.chars().count() > max_chars {
                label = label
                    .chars()
                    .take(max_chars.saturating_sub(1))
                    .collect::<String>()
                    + "…";
            }
            let ink = crate::app::appearance::ink_on(fill);
            painter.text(
                r.center_top() + vec2(0.0, 2.0),
                Align2::CENTER_TOP,
                label,
                font.clone(),
                ink,
            );
        }
        if resp.hover_pos().is_some_and(|h| r.contains(h)) {
            hovered = Some(c);
        }
    }
    if let Some(((i, j), colour)) = term {
        // A white halo: the term's colour alone is lost on the blue cells.
        let r = cell_rect(origin, size, n, i, j);
        painter.rect_stroke(
            r,
            2.0,
            Stroke::new(6.0, Color32::WHITE),
            egui::StrokeKind::Outside,
        );
        painter.rect_stroke(r, 2.0, Stroke::new(3.0, colour), egui::StrokeKind::Outside);
    }
    for (k, w) in view.words.iter().enumerate() {
        let r = cell_rect(origin, size, n, k, k + 1);
        let mut w = w.clone();
        let max_chars = chars(font.size * 0.5);
        if w.chars().count() > max_chars {
            w = w
                .chars()
                .take(max_chars.saturating_sub(1))
                .collect::<String>()
                + "…";
        }
        painter.text(
            pos2(r.center().x, r.bottom() + 10.0),
            Align2::CENTER_CENTER,
            w,
            font.clone(),
            ui.visuals().text_color(),
        );
    }
    if let Some(c) = hovered {
        resp.on_hover_ui(|ui| {
            ui.strong(format!(
                "{}: {}",
                crate::eval::parse_view::words(c.i, c.j),
                view.words[c.i..c.j].join(" ")
            ));
            for e in c.edges.iter().take(12) {
                ui.label(format!(
                    "{:<14} score {:>8.2}  ratio 10^{:.1}{}",
                    e.label,
                    e.score,
                    e.log_ratio / std::f64::consts::LN_10,
                    if e.gold { "  gold" } else { "" }
                ));
            }
            if c.edges.len() > 12 {
                ui.weak(format!("… {} edges in all", c.edges.len()));
            }
        });
    }
    rect
}
