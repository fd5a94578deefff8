//! How the workbench looks in front of a room: the light or dark theme (light by default, for a
//! projector), the presentation scale (everything larger, F5), both remembered in the
//! settings; and the References window that decodes the papers' codes.

use super::{papers, AppState, Settings};

/// The zoom of the presentation scale (egui's own Ctrl+= / Ctrl+- zoom still works on top).
pub const PRESENTER_ZOOM: f32 = 1.25;

/// The key that switches the presentation scale (a clicker's "start presentation" key).
pub const PRESENTER_KEY: egui::Key = egui::Key::F5;

/// What was last applied to the context: (dark, presenter), and the presentation zoom set.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Applied(Option<(bool, bool)>, Option<f32>);

/// The presentation zoom for this window: as much of [`PRESENTER_ZOOM`] as keeps a layout of
/// at least 1024×720 points — 25 % on a 1920×1080 projector, 10 % at 1280×800, none at
/// 1024×768, a projector's smallest (at 25 % there lesson 3's inspector and four lessons' key
/// tables fell off the screen; at 1280×800 lesson 3's and 9's did). In steps of 5 %.
pub fn presenter_zoom(ctx: &egui::Context) -> f32 {
    presenter_zoom_for(ctx.content_rect().size() * ctx.zoom_factor())
}

/// [`presenter_zoom`] for a window of `size` points at zoom 1.
pub fn presenter_zoom_for(size: egui::Vec2) -> f32 {
    let z = (size.x / 1024.0).min(size.y / 720.0);
    ((z * 20.0 + 1e-3).floor() / 20.0).clamp(1.0, PRESENTER_ZOOM)
}

/// How strong weak text (captions, notes) is against the normal text colour.
pub const WEAK_TEXT_ALPHA: f32 = 0.78;

/// The dark theme's body text.
pub const DARK_TEXT: egui::Color32 = egui::Color32::from_gray(205);

/// Applies the settings' theme and scale when they changed (and at the first frame).
pub fn apply(ctx: &egui::Context, settings: &Settings, applied: &mut Applied) {
    let want = (settings.dark, settings.presenter);
    // Presenting, the zoom follows the window's size (a window resized across 1280×800).
    if applied.0 == Some(want) {
        if settings.presenter {
            let z = presenter_zoom(ctx);
            if applied.1 != Some(z) {
                ctx.set_zoom_factor(z);
                applied.1 = Some(z);
            }
        }
        return;
    }
    ctx.set_theme(if settings.dark {
        egui::ThemePreference::Dark
    } else {
        egui::ThemePreference::Light
    });
    // Captions are weak text: egui's 60 % of the text colour washed out on a projector.
    ctx.all_styles_mut(|s| s.visuals.weak_text_alpha = WEAK_TEXT_ALPHA);
    // The dark theme's text is egui's grey 140: captions at 78 % of it were 3.6 : 1 on its
    // background, faint on a projector. Brighter text keeps them near 7 : 1.
    ctx.style_mut_of(egui::Theme::Dark, |s| {
        s.visuals.widgets.noninteractive.fg_stroke.color = DARK_TEXT;
    });
    // The zoom is set when the switch changes and at start (a presenter zoom the window
    // remembered from the last session is not this window's); a zoom the user chose with
    // Ctrl+= during a session is left alone.
    let changed = applied.0.is_none_or(|(_, p)| p != settings.presenter);
    if settings.presenter {
        let z = presenter_zoom(ctx);
        ctx.set_zoom_factor(z);
        applied.1 = Some(z);
    } else if changed {
        ctx.set_zoom_factor(1.0);
        applied.1 = None;
    }
    applied.0 = Some(want);
}

/// F5 switches the presentation scale (unless a widget has the keyboard).
pub fn keys(state: &mut AppState, ctx: &egui::Context, free: bool) {
    if free && ctx.input_mut(|i| i.consume_key(egui::Modifiers::NONE, PRESENTER_KEY)) {
        state.settings.presenter = !state.settings.presenter;
    }
}

/// The top bar's switches: Light/Dark, Presenter, References.
pub fn top_bar(state: &mut AppState, ui: &mut egui::Ui) {
    let s = &mut state.settings;
    ui.selectable_value(&mut s.dark, false, "Light")
        .on_hover_text("Light theme: dark text on white, for a projector (remembered)");
    ui.selectable_value(&mut s.dark, true, "Dark")
        .on_hover_text("Dark theme (remembered)");
    let key = PRESENTER_KEY.name();
    if ui
        .selectable_label(s.presenter, "Presenter")
        .on_hover_text(format!(
            "Presentation scale: everything up to {:.0} % larger for the back of the room, as \
             far as the window keeps a 1024×720 layout: 25 % at 1920×1080, 10 % at 1280×800, \
             none at 1024×768 ({key}; remembered). In a lesson, the right arrow, PageDown or Space step forward, the left arrow or PageUp back, \
             Esc leaves Try it yourself: a presenter's clicker works.",
            (PRESENTER_ZOOM - 1.0) * 100.0
        ))
        .clicked()
    {
        s.presenter = !s.presenter;
    }
    if ui
        .selectable_label(state.references_open, "References")
        .on_hover_text("The papers the lessons and panes cite by code (000 … 004)")
        .clicked()
    {
        state.references_open = !state.references_open;
    }
    if ui
        .selectable_label(state.about_open, "About")
        .on_hover_text("The version, and where the lessons, sample data and runs are")
        .clicked()
    {
        state.about_open = !state.about_open;
    }
}

/// The About window, while open: the version and the folders (what `piecewise-lab about`
/// prints).
pub fn about_window(state: &mut AppState, ctx: &egui::Context) {
    let mut open = state.about_open;
    let lines = state.config.about();
    egui::Window::new("About")
        .open(&mut open)
        .collapsible(false)
        .default_pos([40.0, 90.0])
        .show(ctx, |ui| {
            for l in &lines {
                ui.label(l);
            }
            ui.weak(
                "Installed with `cargo install --path .`, the app runs from any folder: the \
                 lessons, templates and sample data are compiled into it and written to the \
                 folder above once per version.",
            );
        });
    state.about_open = open;
}

/// The References window, while open.
pub fn references_window(state: &mut AppState, ctx: &egui::Context) {
    let mut open = state.references_open;
    egui::Window::new("References")
        .open(&mut open)
        .collapsible(false)
        .resizable(true)
        .default_width(620.0)
        // Below the top bar, not over it.
        .default_pos([40.0, 90.0])
        .show(ctx, papers::references_ui);
    state.references_open = open;
}

/// A colour for "right" and "finished" that reads on both themes.
pub fn good_color(visuals: &egui::Visuals) -> egui::Color32 {
    if visuals.dark_mode {
        egui::Color32::from_rgb(60, 170, 90)
    } else {
        egui::Color32::from_rgb(20, 120, 50)
    }
}

/// A ring around what is picked or selected: yellow on the dark theme, amber on the light one
/// (yellow vanishes on white).
pub fn highlight(visuals: &egui::Visuals) -> egui::Color32 {
    if visuals.dark_mode {
        egui::Color32::YELLOW
    } else {
        egui::Color32::from_rgb(170, 120, 0)
    }
}

/// `c` as text on the theme's background: on the light theme a pale colour (a label's hue,
/// a palette entry) is darkened until it reads on white; the dark theme keeps it.
pub fn text_on(c: egui::Color32, visuals: &egui::Visuals) -> egui::Color32 {
    if visuals.dark_mode {
        return c;
    }
    let lin = egui::Rgba::from(c);
    // Relative luminance (WCAG); 0.18 is 4.5 : 1 against white.
    let l = 0.2126 * lin.r() + 0.7152 * lin.g() + 0.0722 * lin.b();
    if l <= 0.18 {
        return c;
    }
    let k = 0.18 / l;
    egui::Rgba::from_rgba_premultiplied(lin.r() * k, lin.g() * k, lin.b() * k, lin.a()).into()
}

/// Text drawn on a cell filled with `fill`: white on a dark fill, black on a light one (white
/// on a yellow heat cell could not be read).
pub fn ink_on(fill: egui::Color32) -> egui::Color32 {
    let [r, g, b, _] = fill.to_array();
    let luma = 0.299 * r as f32 + 0.587 * g as f32 + 0.114 * b as f32;
    if luma < 140.0 {
        egui::Color32::WHITE
    } else {
        egui::Color32::BLACK
    }
}

/// A colour scale drawn as one strip across `rect`: `steps` segments, each filled with
/// `color(t)` at its middle t in [0, 1] (the keys of the Frontier's λ and of CAMEL's
/// disagreement).
pub fn gradient_strip(
    painter: &egui::Painter,
    rect: egui::Rect,
    steps: usize,
    color: impl Fn(f32) -> egui::Color32,
) {
    let steps = steps.max(1);
    for k in 0..steps {
        let (t0, t1) = (k as f32 / steps as f32, (k + 1) as f32 / steps as f32);
        let x = |t: f32| rect.left() + t * rect.width();
        painter.rect_filled(
            egui::Rect::from_x_y_ranges(x(t0)..=x(t1), rect.y_range()),
            0.0,
            color((t0 + t1) / 2.0),
        );
    }
}

/// The order labels are shown in: natural order of their names (S0, S1, … S10; B-NP before
/// I-NP), not the order the data happened to mention them (D17). Indices into `names`.
pub fn display_order(names: &[String]) -> Vec<usize> {
    // A name as runs of digits (compared as numbers) and of other text.
    fn key(s: &str) -> Vec<(u8, u64, String)> {
        let mut out = vec![];
        let mut rest = s;
        while !rest.is_empty() {
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            if digits > 0 {
                // Bounded: 19 digits fit a u64; longer runs compare as text.
                let (d, r) = rest.split_at(digits);
                match d.parse::<u64>() {
                    Ok(n) if digits <= 19 => out.push((0, n, String::new())),
                    _ => out.push((1, 0, d.to_string())),
                }
                rest = r;
            } else {
                let n = rest
                    .char_indices()
                    .find(|(_, c)| c.is_ascii_digit())
                    .map_or(rest.len(), |(i, _)| i);
                let (t, r) = rest.split_at(n);
                out.push((1, 0, t.to_string()));
                rest = r;
            }
        }
        out
    }
    let keys: Vec<_> = names.iter().map(|n| key(n)).collect();
    let mut order: Vec<usize> = (0..names.len()).collect();
    order.sort_by(|&a, &b| keys[a].cmp(&keys[b]).then(a.cmp(&b)));
    order
}

/// A spinner animated at ten frames a second. egui's asks for the next frame every frame:
/// while a job ran that kept the GUI thread (and a software renderer's two threads) busy —
/// lesson 8's Monte Carlo took 17 s in the app against 8 s alone on two cores.
pub fn busy(ui: &mut egui::Ui) -> egui::Response {
    let size = ui.style().spacing.interact_size.y;
    let (rect, response) = ui.allocate_exact_size(egui::vec2(size, size), egui::Sense::hover());
    response.widget_info(|| egui::WidgetInfo::new(egui::Role::ProgressIndicator));
    if ui.is_rect_visible(rect) {
        let radius = rect.height() * 0.5 - 2.0;
        let time = ui.input(|i| i.time);
        let start = time * std::f64::consts::TAU;
        let end = start + 240f64.to_radians() * time.sin();
        let points: Vec<egui::Pos2> = (0..12)
            .map(|i| {
                let a = egui::lerp(start..=end, i as f64 / 12.0);
                rect.center() + radius * egui::vec2(a.cos() as f32, a.sin() as f32)
            })
            .collect();
        let color = ui.visuals().strong_text_color();
        ui.painter()
            .add(egui::Shape::line(points, egui::Stroke::new(3.0, color)));
        ui.ctx()
            .request_repaint_after(std::time::Duration::from_millis(100));
    }
    response
}

/// A legend entry: `lead` (weak text, may be empty), a swatch `swatch_w` points wide painted
/// by `paint`, and `text` — one widget, which a wrapping row moves whole (a row break fell
/// between a run's line and its name, a factor's colour and its template).
pub fn legend_entry(
    ui: &mut egui::Ui,
    lead: &str,
    swatch_w: f32,
    text: &str,
    paint: impl FnOnce(&egui::Painter, egui::Rect),
) -> egui::Response {
    let font = egui::TextStyle::Body.resolve(ui.style());
    let (ink, weak) = (ui.visuals().text_color(), ui.visuals().weak_text_color());
    let painter = ui.painter();
    let lead_g = painter.layout_no_wrap(lead.to_string(), font.clone(), weak);
    let text_g = painter.layout_no_wrap(text.to_string(), font, ink);
    let gap = 4.0;
    let lead_w = if lead.is_empty() {
        0.0
    } else {
        lead_g.size().x + gap
    };
    let size = egui::vec2(
        lead_w + swatch_w + gap + text_g.size().x,
        text_g.size().y.max(12.0),
    );
    let (r, response) = ui.allocate_exact_size(size, egui::Sense::hover());
    let said = format!("{lead} {text}");
    response.widget_info(|| egui::WidgetInfo::labeled(egui::Role::Label, true, said.trim()));
    let p = ui.painter();
    p.galley(r.min, lead_g, weak);
    let swatch = egui::Rect::from_min_size(
        egui::pos2(r.left() + lead_w, r.center().y - 6.0),
        egui::vec2(swatch_w, 12.0),
    );
    paint(p, swatch);
    p.galley(egui::pos2(swatch.right() + gap, r.top()), text_g, ink);
    response
}

/// An explanation in full where the screen is tall, or folded under `title` where it is
/// short (under 790 points: a projector's 1024×768, or presenting at 1280×800), where its
/// lines took the room of the picture it explains (lesson 3's graph was left a 120 px strip,
/// lesson 9's chart 14 px cells).
pub fn explanation(ui: &mut egui::Ui, title: &str, add: impl FnOnce(&mut egui::Ui)) {
    if ui.ctx().content_rect().height() >= 790.0 {
        add(ui);
    } else {
        egui::CollapsingHeader::new(egui::RichText::new(title).weak())
            .id_salt(("explanation", title))
            .default_open(false)
            .show(ui, add);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_presentation_scale_gives_way_on_a_small_window() {
        let z = |w: f32, h: f32| super::presenter_zoom_for(egui::vec2(w, h));
        assert_eq!(z(1024.0, 768.0), 1.0);
        assert_eq!(z(1152.0, 864.0), 1.1);
        assert_eq!(z(1280.0, 800.0), 1.1);
        assert_eq!(z(1600.0, 900.0), super::PRESENTER_ZOOM);
        assert_eq!(z(1920.0, 1080.0), super::PRESENTER_ZOOM);
        assert_eq!(z(800.0, 600.0), 1.0);
    }

    use super::*;

    #[test]
    fn labels_show_in_natural_order() {
        let names: Vec<String> = ["S3", "S1", "S10", "S2", "S0", "O", "I-NP", "B-NP"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let shown: Vec<&str> = display_order(&names)
            .into_iter()
            .map(|i| names[i].as_str())
            .collect();
        assert_eq!(shown, ["B-NP", "I-NP", "O", "S0", "S1", "S2", "S3", "S10"]);
    }

    #[test]
    fn pale_text_is_darkened_on_light_only() {
        let pale = egui::Color32::from_rgb(120, 220, 230);
        let light = egui::Visuals::light();
        let d = text_on(pale, &light);
        let lum = |c: egui::Color32| {
            let l = egui::Rgba::from(c);
            0.2126 * l.r() + 0.7152 * l.g() + 0.0722 * l.b()
        };
        assert!(lum(d) <= 0.19, "{d:?}");
        assert!(d.b() > d.r(), "the hue kept: {d:?}");
        assert_eq!(text_on(pale, &egui::Visuals::dark()), pale);
        let dark_blue = egui::Color32::from_rgb(30, 60, 160);
        assert_eq!(text_on(dark_blue, &light), dark_blue);
    }
}
