//! The frontier plot (complexity against quality, coloured by λ and marked by β, with the
//! empirical Pareto frontier), hovering and opening a point, and the λ × β heat map.

use super::*;

/// The y range the plot shows: the frontier's, with room for the points near it (half as much
/// again on the good side, one and a half times on the bad); `None` with no frontier. A run far
/// off the frontier (lesson 8's λ = 0.1, β = 1 at NLL 7.95 against a frontier of 5.09 → 4.94)
/// would otherwise set the scale and flatten the frontier.
pub fn y_window(front: &[[f64; 2]], better_low: bool) -> Option<(f64, f64)> {
    let (lo, hi) = front
        .iter()
        .map(|f| f[1])
        .filter(|y| y.is_finite())
        .fold(None, |acc: Option<(f64, f64)>, y| {
            Some(acc.map_or((y, y), |(a, b)| (a.min(y), b.max(y))))
        })?;
    let span = (hi - lo).max(1e-3 * hi.abs().max(1e-6));
    Some(if better_low {
        (lo - 0.5 * span, hi + 1.5 * span)
    } else {
        (lo - 1.5 * span, hi + 0.5 * span)
    })
}

/// The frontier plot: the points coloured by λ and marked by β, the Pareto frontier and the
/// shaded unachievable region. Scaled to the frontier ([`y_window`]); a point beyond it is
/// drawn at the edge as a triangle pointing its way, with its value beside it.
pub(super) fn frontier_plot(
    ui: &mut egui::Ui,
    p: &FrontierPane,
    pts: &[(&SweepRun, [f64; 2])],
    front: &[[f64; 2]],
    (lambdas, betas): (&[f64], &[f64]),
) -> egui::InnerResponse<egui_plot::PlotResponse<()>> {
    let xf = |x: f64| if p.log_x { x.max(1e-300).log10() } else { x };
    let (lx, better_low) = (p.log_x, p.y.lower_is_better());
    let window = y_window(front, better_low);
    // Where a point is drawn: inside the window, or at its edge (and which edge).
    let place = |y: f64| -> (f64, Option<bool>) {
        match window {
            Some((lo, _)) if y < lo => (lo, Some(false)),
            Some((_, hi)) if y > hi => (hi, Some(true)),
            _ => (y, None),
        }
    };
    let xs = pts.iter().map(|(_, q)| xf(q[0]));
    let x_mid =
        (xs.clone().fold(f64::INFINITY, f64::min) + xs.fold(f64::NEG_INFINITY, f64::max)) / 2.0;
    let scope = ui.scope(|ui| {
        // No wider than what is visible of the pane: a wide table below (the heat maps, the
        // Fig. 1 preview) widens the scroll area's content, and the plot's dearest points
        // were cut off at 1280×800.
        let visible = crate::app::plots::visible_width(ui, 200.0);
        // The rest of the pane less room for its last hint line (the heat maps scroll below;
        // lesson 8's question is pinned in the Lessons pane): 185 px at 1024×768 was too
        // small to read from the back of a hall.
        let mut plot = crate::app::plots::pane_plot("frontier-plot")
            .width(ui.available_width().min(visible))
            .height((ui.available_height() - 40.0).clamp(220.0, 480.0))
            .x_axis_label(if lx {
                format!("{} (log)", p.x.label())
            } else {
                p.x.label().to_string()
            })
            .y_axis_label(p.y.label());
        // Several labelled ticks on either axis: with egui_plot's own spacer a FLOPs axis had
        // one label ("1e8") and "four times the FLOPs" could not be read off it.
        plot = plot
            .x_grid_spacer(if lx {
                crate::app::plots::log_grid
            } else {
                crate::app::plots::linear_grid
            })
            .y_grid_spacer(crate::app::plots::linear_grid);
        // One point, or points on one line, leave an axis without extent, which egui_plot
        // rejects (a sweep's first point): pad each axis around its points.
        for axis in 0..2 {
            let vals: Vec<f64> = pts
                .iter()
                .map(|(_, q)| if axis == 0 { xf(q[0]) } else { place(q[1]).0 })
                .filter(|v| v.is_finite())
                .collect();
            let (lo, hi) = vals
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
                    (a.min(v), b.max(v))
                });
            if lo.is_finite() && hi - lo <= 1e-9 * lo.abs().max(1.0) {
                let pad = (lo.abs() * 0.05).max(1e-3);
                plot = if axis == 0 {
                    plot.include_x(lo - pad).include_x(hi + pad)
                } else {
                    plot.include_y(lo - pad).include_y(hi + pad)
                };
            }
        }
        if let Some((lo, hi)) = window {
            // The whole window, so the frontier's neighbourhood shows even when no point is
            // near its edges.
            plot = plot.include_y(lo).include_y(hi);
        }
        plot = plot.x_axis_formatter(move |m, r| crate::app::plots::axis_text(lx, m.value, r));
        // Each mark to its own digits: the default's one decimal wrote "5.2, 5.2, 5.1, 5.0,
        // 5.0" while a sweep ran.
        plot = plot.y_axis_formatter(|m, r| crate::app::plots::axis_text(false, m.value, r));
        plot.show(ui, |plot| {
            if !front.is_empty() {
                // The unachievable region: below (or above, for accuracy) the frontier's steps,
                // to the window's edge.
                let ys: Vec<f64> = pts.iter().map(|(_, q)| place(q[1]).0).collect();
                let (lo, hi) = ys
                    .iter()
                    .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &y| {
                        (a.min(y), b.max(y))
                    });
                let (lo, hi) = window.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi)));
                let edge = if better_low { lo } else { hi };
                let x_end = pts
                    .iter()
                    .map(|(_, q)| xf(q[0]))
                    .fold(f64::NEG_INFINITY, f64::max);
                // One rectangle a step: the plot fills a polygon as if convex, and the
                // staircase drawn as one polygon came out as overlapping darker triangles.
                for (i, f) in front.iter().enumerate() {
                    let (x0, x1) = (xf(f[0]), front.get(i + 1).map_or(x_end, |n| xf(n[0])));
                    plot.polygon(
                        egui_plot::Polygon::new(
                            "unachievable",
                            vec![[x0, edge], [x0, f[1]], [x1, f[1]], [x1, edge]],
                        )
                        .fill_color(Color32::from_gray(120).gamma_multiply(0.25))
                        .stroke(egui::Stroke::NONE),
                    );
                }
                // The frontier as the region's own staircase (a point's value holds until a
                // dearer point beats it): straight diagonals between the points ran inside the
                // shaded region the caption says is below the line.
                let mut line: Vec<[f64; 2]> = vec![];
                for (i, f) in front.iter().enumerate() {
                    line.push([xf(f[0]), f[1]]);
                    if let Some(n) = front.get(i + 1) {
                        line.push([xf(n[0]), f[1]]);
                    }
                }
                plot.line(
                    egui_plot::Line::new("Pareto frontier", line)
                        .color(Color32::GRAY)
                        .width(1.5),
                );
            }
            for (r, q) in pts {
                let k = betas.iter().position(|b| *b == r.beta).unwrap_or(0);
                let (y, beyond) = place(q[1]);
                let shape = match beyond {
                    Some(true) => egui_plot::MarkerShape::Up,
                    Some(false) => egui_plot::MarkerShape::Down,
                    None => SHAPES[k % SHAPES.len()],
                };
                let name = match r.sigma2 {
                    Some(s) => format!("λ={} β={} σ²={s} ({})", r.lambda, r.beta, r.dir),
                    None => format!("λ={} β={} ({})", r.lambda, r.beta, r.dir),
                };
                let color = lambda_color(lambdas, r.lambda);
                plot.points(
                    egui_plot::Points::new(name.clone(), vec![[xf(q[0]), y]])
                        .id(("frontier-point", &r.dir))
                        .shape(shape)
                        // Later β values hollow and larger: points of one cost (a λ's two β)
                        // that coincide stay visible, one around the other.
                        .radius(6.0 + 4.0 * k.min(3) as f32)
                        .filled(k == 0)
                        .color(color),
                );
                if let Some(up) = beyond {
                    // Its value beside the marker, on the side towards the plot's middle.
                    let x = xf(q[0]);
                    let right = x > x_mid;
                    // (The default font has no arrow glyph.)
                    let arrow = if up { "off the top" } else { "off the bottom" };
                    let text = format!("{} (λ = {}, β = {}),", number(q[1]), r.lambda, r.beta);
                    let text = if right {
                        format!("{text} {arrow}    ")
                    } else {
                        format!("    {text} {arrow}")
                    };
                    let anchor = match (right, up) {
                        (false, true) => egui::Align2::LEFT_TOP,
                        (false, false) => egui::Align2::LEFT_BOTTOM,
                        (true, true) => egui::Align2::RIGHT_TOP,
                        (true, false) => egui::Align2::RIGHT_BOTTOM,
                    };
                    plot.text(
                        egui_plot::Text::new(
                            name,
                            egui_plot::PlotPoint::new(x, y),
                            egui::RichText::new(text).strong().size(14.0),
                        )
                        .anchor(anchor)
                        .color(color),
                    );
                }
            }
        })
    });
    scope
}

/// Hover names the run; a click opens it in Compare beside the runs already ticked.
pub(super) fn hover_and_open(
    state: &mut AppState,
    p: &FrontierPane,
    sweep: &SweepData,
    pts: &[(&SweepRun, [f64; 2])],
    scope: &egui::InnerResponse<egui_plot::PlotResponse<()>>,
) {
    let hovered = scope.inner.hovered_plot_item.and_then(|id| {
        pts.iter()
            .find(|(r, _)| egui_plot::ItemId::new(("frontier-point", &r.dir)) == id)
    });
    if let Some((r, q)) = hovered {
        let resp = scope.inner.response.clone().on_hover_ui_at_pointer(|ui| {
            ui.strong(format!("λ = {} · β = {}", r.lambda, r.beta));
            if let Some(s) = r.sigma2 {
                ui.label(format!("σ² = {s}"));
            }
            ui.label(format!("{}: {}", p.x.label(), number(q[0])));
            ui.label(format!("{}: {}", p.y.label(), number(q[1])));
            ui.label(format!(
                "{} iterations · {:.1} s",
                r.summary.iterations, r.summary.train_seconds
            ));
            ui.weak(format!("{} — click to open in Compare", r.dir));
        });
        if resp.clicked() {
            let dir = sweep.dir.join(&r.dir);
            let label = format!("{}/{}", sweep.name, r.dir.trim_start_matches("runs/"));
            match state.runs.adopt(&dir, &label) {
                Ok(id) => {
                    state.selected.insert(id.clone());
                    state.command(crate::app::AppCommand::Focus(crate::app::PaneKind::Compare));
                    state.info(format!(
                        "{id} opened in Compare beside the {} other ticked run(s)",
                        state.selected.len() - 1
                    ));
                }
                Err(e) => state.error(format!("could not open {}: {e}", dir.display())),
            }
        }
    }
}

/// 4 significant digits, in e-notation when large.
pub(super) fn number(x: f64) -> String {
    if x.abs() >= 1e5 {
        format!("{x:.4e}")
    } else {
        format!("{x:.4}")
    }
}

/// The quality over (β, λ) as a table of coloured cells (004 Figs. 5, 9, 11), one per σ².
pub(super) fn heat_map(ui: &mut egui::Ui, sweep: &SweepData, q: Quality) {
    let mut sigmas: Vec<Option<f64>> = sweep.runs.iter().map(|r| r.sigma2).collect();
    sigmas.sort_by(|a, b| a.unwrap_or(0.0).total_cmp(&b.unwrap_or(0.0)));
    sigmas.dedup();
    let mut lambdas: Vec<f64> = sweep.runs.iter().map(|r| r.lambda).collect();
    let mut betas: Vec<f64> = sweep.runs.iter().map(|r| r.beta).collect();
    for v in [&mut lambdas, &mut betas] {
        v.sort_by(f64::total_cmp);
        v.dedup();
    }
    let vals: Vec<f64> = sweep.runs.iter().filter_map(|r| q.of(&r.summary)).collect();
    let (lo, hi) = vals
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
            (a.min(v), b.max(v))
        });
    // Good is green, bad is red, whichever way the metric points; by rank among the sweep's
    // points, so one outlier (lesson 8's λ = 0.1, β = 1 at 7.95) does not paint every other
    // cell the same green.
    let mut sorted = vals.clone();
    sorted.sort_by(f64::total_cmp);
    let color = |v: f64| -> Color32 {
        let t = if sorted.len() > 1 && hi > lo {
            let rank = sorted.partition_point(|&x| x < v);
            rank as f32 / (sorted.len() - 1) as f32
        } else {
            0.5
        };
        let good = if q.lower_is_better() { 1.0 - t } else { t };
        egui::ecolor::Hsva::new(0.33 * good, 0.7, 0.45, 1.0).into()
    };
    // What the colours mean, under each map's title.
    let key = |ui: &mut egui::Ui| {
        ui.horizontal(|ui| {
            ui.weak("colour:");
            for (t, what) in [(0.0, "worst"), (0.5, "middle"), (1.0, "best")] {
                // The value at that rank.
                let at = |r: f64| {
                    let k = (r * sorted.len().saturating_sub(1) as f64).round() as usize;
                    sorted.get(k).copied().unwrap_or(0.0)
                };
                let v = if q.lower_is_better() {
                    at(1.0 - t)
                } else {
                    at(t)
                };
                egui::Frame::new()
                    .fill(color(v))
                    .inner_margin(egui::Margin::symmetric(4, 1))
                    .show(ui, |ui| {
                        ui.label(egui::RichText::new(what).small().color(Color32::WHITE));
                    });
            }
            ui.weak("of this sweep");
        });
    };
    ui.horizontal_wrapped(|ui| {
        for s in sigmas {
            ui.vertical(|ui| {
                ui.strong(match s {
                    Some(s) => format!("{} over (β, λ), σ² = {s}", q.label()),
                    None => format!("{} over (β, λ)", q.label()),
                });
                key(ui);
                // Body-sized numbers in cells of a common width: small print on 20-point
                // cells could not be read from the back of a room.
                egui::Grid::new(("frontier-heat", s.map(f64::to_bits), q.label()))
                    .spacing(egui::vec2(2.0, 2.0))
                    .min_col_width(48.0)
                    .show(ui, |ui| {
                        ui.label("λ \\ β");
                        for b in &betas {
                            ui.label(format!("β = {b}"));
                        }
                        ui.end_row();
                        for l in lambdas.iter().rev() {
                            ui.label(format!("λ = {l}"));
                            for b in &betas {
                                let v = sweep
                                    .runs
                                    .iter()
                                    .find(|r| r.lambda == *l && r.beta == *b && r.sigma2 == s)
                                    .and_then(|r| q.of(&r.summary));
                                let (text, fill) = match v {
                                    Some(v) => (format!("{v:.3}"), color(v)),
                                    None => ("–".into(), Color32::TRANSPARENT),
                                };
                                egui::Frame::new()
                                    .fill(fill)
                                    .inner_margin(egui::Margin::symmetric(6, 3))
                                    .show(ui, |ui| {
                                        ui.label(egui::RichText::new(text).color(Color32::WHITE));
                                    });
                            }
                            ui.end_row();
                        }
                    });
            });
        }
    });
}
