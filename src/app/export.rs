//! Exports: PNG of a screen region, SVG of line and bar charts drawn from the same series the
//! plots show, CSV of tables. Every export asks for its file first ([`Pending`], shown by the
//! workbench as a small window with a path field, *Browse…*, *Save* and *Cancel*); the path is
//! prefilled with the workspace's `exports/` folder and the chart's name. Files are written to
//! a temporary name and renamed.

use crate::util::write_atomic;
use std::path::{Path, PathBuf};

/// What an export writes.
pub enum Content {
    /// CSV or SVG text.
    Text(String),
    /// A screen region.
    Png(egui::ColorImage),
}

/// An export waiting for its file name: the workbench's Save dialog edits `path`.
pub struct Pending {
    /// The file to write, as typed (a relative path is taken inside the exports folder).
    pub path: String,
    /// The extension the file gets when the path has none (`svg`, `png`, `csv`).
    pub ext: &'static str,
    pub content: Content,
    /// The last failure to write, shown in the dialog.
    pub error: Option<String>,
    /// The dialog has been shown (its path field took the keyboard once).
    pub opened: bool,
}

impl Pending {
    /// An export of `content` proposed as `dir/stem.ext` (`stem-2.ext`, … when taken).
    pub fn new(dir: &Path, stem: &str, ext: &'static str, content: Content) -> Pending {
        Pending {
            path: default_path(dir, stem, ext).display().to_string(),
            ext,
            content,
            error: None,
            opened: false,
        }
    }

    /// What the dialog calls it: "SVG chart", "PNG image", "CSV table".
    pub fn what(&self) -> &'static str {
        match self.ext {
            "png" => "PNG image",
            "svg" => "SVG chart",
            "csv" => "CSV table",
            _ => "file",
        }
    }

    /// The file the path names: relative to `dir`, with the extension added when it has none.
    pub fn target(&self, dir: &Path) -> Result<PathBuf, String> {
        let typed = self.path.trim();
        if typed.is_empty() {
            return Err("type a file name (or Browse…)".into());
        }
        if typed == "-" {
            return Err("\"-\" is standard output, not a file: type a file name".into());
        }
        let mut p = PathBuf::from(typed);
        if p.is_relative() {
            p = dir.join(p);
        }
        if p.is_dir() || typed.ends_with('/') || typed.ends_with(std::path::MAIN_SEPARATOR) {
            return Err(format!("{} is a folder: add a file name", p.display()));
        }
        if p.extension().is_none() {
            p.set_extension(self.ext);
        }
        Ok(p)
    }

    /// Whether the file the path names exists (Save replaces it).
    pub fn exists(&self, dir: &Path) -> bool {
        self.target(dir).is_ok_and(|p| p.is_file())
    }

    /// Writes the export where the path says, creating its folder.
    pub fn write(&self, dir: &Path) -> Result<PathBuf, String> {
        let p = self.target(dir)?;
        if let Some(parent) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        let bytes = match &self.content {
            Content::Text(t) => t.as_bytes().to_vec(),
            Content::Png(image) => png_bytes(image)?,
        };
        write_atomic(&p, &bytes).map_err(|e| e.to_string())?;
        Ok(p)
    }
}

/// `stem` with only the characters safe in a file name on every system.
fn clean_stem(stem: &str) -> String {
    let s: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() {
        "export".into()
    } else {
        s
    }
}

/// `dir/stem.ext`, or `dir/stem-2.ext`, `-3`, … when that file exists.
pub fn default_path(dir: &Path, stem: &str, ext: &str) -> PathBuf {
    let stem = clean_stem(stem);
    let first = dir.join(format!("{stem}.{ext}"));
    if !first.exists() {
        return first;
    }
    (2..10_000)
        .map(|k| dir.join(format!("{stem}-{k}.{ext}")))
        .find(|p| !p.exists())
        .unwrap_or(first)
}

/// A screenshot region encoded as PNG.
pub fn png_bytes(image: &egui::ColorImage) -> Result<Vec<u8>, String> {
    let [w, h] = image.size;
    let mut bytes = Vec::with_capacity(w * h * 4);
    for c in &image.pixels {
        bytes.extend_from_slice(&c.to_array());
    }
    let img = image::RgbaImage::from_raw(w as u32, h as u32, bytes)
        .ok_or("screenshot has an inconsistent size")?;
    let mut png = std::io::Cursor::new(Vec::new());
    img.write_to(&mut png, image::ImageFormat::Png)
        .map_err(|e| format!("cannot encode PNG: {e}"))?;
    Ok(png.into_inner())
}

/// A chart SVG (white, black text, pale grid: `experiments::charts`) in the workbench's theme,
/// so it matches a PNG of the same chart: on the dark theme the background is the panels'
/// colour, text the text colour, the grid and axes re-greyed. The light theme keeps it as
/// drawn.
pub fn themed_svg(svg: &str, dark: bool) -> String {
    if !dark {
        return svg.to_string();
    }
    let v = egui::Visuals::dark();
    let hex = |c: egui::Color32| format!("#{:02x}{:02x}{:02x}", c.r(), c.g(), c.b());
    let (bg, fg) = (hex(v.panel_fill), hex(v.strong_text_color()));
    // The background rectangle (the first white fill), then the greys: grid #ddd → dark,
    // axes #444 → light (through a placeholder so one does not become the other).
    let s = svg
        .replacen("fill=\"white\"", &format!("fill=\"{bg}\""), 1)
        .replace("stroke=\"#444\"", "stroke=\"@AXIS@\"")
        .replace("stroke=\"#ddd\"", "stroke=\"#4a4a4a\"")
        .replace("stroke=\"@AXIS@\"", "stroke=\"#b0b0b0\"");
    // Text without a colour of its own gets the text colour, on the element itself.
    let mut out = String::with_capacity(s.len() + 1024);
    let mut rest = s.as_str();
    while let Some(k) = rest.find("<text") {
        let (head, tail) = rest.split_at(k + "<text".len());
        out.push_str(head);
        let tag_end = tail.find('>').unwrap_or(tail.len());
        if !tail[..tag_end].contains(" fill=") {
            out.push_str(&format!(" fill=\"{fg}\""));
        }
        // Some renderers (ImageMagick's) outline text in black unless told not to.
        if !tail[..tag_end].contains(" stroke=") {
            out.push_str(" stroke=\"none\"");
        }
        rest = tail;
    }
    out.push_str(rest);
    out
}

/// The workbench's side of exports: requests from the panes, screenshots arriving, the dialog
/// that asks for each file name.
impl super::AppState {
    /// Requests an export of a screen region as PNG (served after the frame is drawn).
    pub fn request_png(&mut self, rect: egui::Rect, stem: &str) {
        self.command(super::AppCommand::ExportPng {
            rect,
            stem: stem.to_string(),
        });
    }

    /// Screenshots arrive through a callback after the frame is rendered; the region then
    /// waits in the export dialog for its file name.
    pub(super) fn export_png(&mut self, ctx: &egui::Context, rect: egui::Rect, stem: String) {
        let tx = self.shot_tx.clone();
        let ctx2 = ctx.clone();
        let ppp = ctx.pixels_per_point();
        ctx.request_screenshot(move |image| {
            let _ = tx.send((stem, image.region(&rect, Some(ppp))));
            ctx2.request_repaint();
        });
    }

    /// The workspace's exports folder: where exports are proposed, and where a relative path
    /// typed in the export dialog goes.
    pub fn exports_dir(&self) -> PathBuf {
        self.config.workspace.join("exports")
    }

    /// Screenshots that arrived wait for their file name.
    pub(super) fn collect_exports(&mut self) {
        let done: Vec<(String, egui::ColorImage)> = self.shot_rx.try_iter().collect();
        for (stem, image) in done {
            let dir = self.exports_dir();
            self.exports
                .push_back(Pending::new(&dir, &stem, "png", Content::Png(image)));
        }
    }

    /// Asks for a CSV table's file name, then saves it.
    pub fn save_csv(&mut self, stem: &str, header: &[String], rows: &[Vec<String>]) {
        let text = crate::util::csv(header, rows);
        let dir = self.exports_dir();
        self.exports
            .push_back(Pending::new(&dir, stem, "csv", Content::Text(text)));
    }

    /// Asks for an SVG chart's file name, then saves it in the workbench's theme (as a PNG of
    /// the same chart looks).
    pub fn save_svg(&mut self, stem: &str, svg: &str) {
        let text = themed_svg(svg, self.settings.dark);
        let dir = self.exports_dir();
        self.exports
            .push_back(Pending::new(&dir, stem, "svg", Content::Text(text)));
    }

    /// The first waiting export's dialog: the file's path (prefilled), *Browse…*, *Save*,
    /// *Cancel*. Enter saves, Esc cancels.
    pub(super) fn export_dialog(&mut self, ctx: &egui::Context) {
        match super::jobs::take_finished(&mut self.export_browse) {
            Some(Ok(Some(p))) => {
                if let Some(e) = self.exports.front_mut() {
                    e.path = p.display().to_string();
                    e.error = None;
                }
            }
            Some(Ok(None)) => {
                if let Some(e) = self.exports.front_mut() {
                    e.error = Some(
                        "No file chosen (cancelled, or no file dialog here): type the path above."
                            .into(),
                    );
                }
            }
            Some(Err(err)) => {
                if let Some(e) = self.exports.front_mut() {
                    e.error = Some(format!(
                        "The file dialog failed ({err}): type the path above."
                    ));
                }
            }
            None => {}
        }
        let dir = self.exports_dir();
        let browsing = self.export_browse.is_some();
        let Some(e) = self.exports.front_mut() else {
            return;
        };
        let (mut save, mut cancel, mut browse) = (false, false, false);
        let modal = egui::Modal::new(egui::Id::unique("export-dialog")).show(ctx, |ui| {
            ui.set_width(560.0);
            ui.heading(format!("Save {}", e.what()));
            ui.label(format!(
                "File (a name alone goes to {}):",
                super::show_path(&dir)
            ));
            let field = ui.add(
                egui::TextEdit::singleline(&mut e.path)
                    .desired_width(f32::INFINITY)
                    .id_salt("export-path"),
            );
            if !e.opened {
                field.request_focus();
                e.opened = true;
            }
            if field.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter)) {
                save = true;
            }
            if let Ok(p) = e.target(&dir) {
                if p.is_file() {
                    ui.colored_label(
                        ui.visuals().warn_fg_color,
                        format!("{} exists: Save replaces it.", super::show_path(&p)),
                    );
                } else if Some(p.to_string_lossy().as_ref()) != Some(e.path.trim()) {
                    ui.weak(format!("Saves {}", super::show_path(&p)));
                }
            }
            if let Some(err) = &e.error {
                ui.colored_label(ui.visuals().error_fg_color, err);
            }
            ui.add_space(4.0);
            ui.horizontal(|ui| {
                save |= ui.button("Save").clicked();
                cancel = ui.button("Cancel").clicked();
                browse = ui
                    .add_enabled(!browsing, egui::Button::new("Browse…"))
                    .on_hover_text("Choose the folder and name in the desktop's file dialog")
                    .clicked();
                if browsing {
                    crate::app::appearance::busy(ui);
                }
            });
        });
        if browse {
            let target = e.target(&dir).unwrap_or_else(|_| dir.join("export"));
            let ext = e.ext;
            let folder = target
                .parent()
                .filter(|d| d.is_dir())
                .map(Path::to_path_buf)
                .unwrap_or_else(|| self.config.workspace.clone());
            let name = target
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            self.export_browse = Some(super::jobs::Job::spawn(ctx, "file dialog", move || {
                Ok(rfd::FileDialog::new()
                    .set_directory(folder)
                    .set_file_name(name)
                    .add_filter(ext, &[ext])
                    .save_file())
            }));
            return;
        }
        if save {
            match e.write(&dir) {
                Ok(p) => {
                    self.exports.pop_front();
                    self.info(format!("saved {}", p.display()));
                }
                Err(err) => e.error = Some(err),
            }
        } else if cancel
            || (modal.is_top_modal
                && !browsing
                && ctx.input_mut(|i| i.consume_key(egui::Modifiers::NONE, egui::Key::Escape)))
        {
            self.exports.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_only_what_needs_it() {
        let h = vec!["a".to_string(), "b,c".to_string()];
        let rows = vec![vec!["say \"hi\"".to_string(), "x".to_string()]];
        assert_eq!(
            crate::util::csv(&h, &rows),
            "a,\"b,c\"\n\"say \"\"hi\"\"\",x\n"
        );
    }

    #[test]
    fn paths_are_proposed_resolved_and_written() {
        let dir = tempfile::tempdir().unwrap();
        let exports = dir.path().join("exports");
        let mut p = Pending::new(
            &exports,
            "curves: ml/pl",
            "svg",
            Content::Text("<svg/>".into()),
        );
        assert_eq!(
            PathBuf::from(&p.path),
            exports.join("curves__ml_pl.svg"),
            "the stem cleaned, in the exports folder"
        );
        assert_eq!(
            p.write(&exports).unwrap(),
            exports.join("curves__ml_pl.svg")
        );
        // Taken: the next proposal is numbered.
        let q = Pending::new(
            &exports,
            "curves: ml/pl",
            "svg",
            Content::Text(String::new()),
        );
        assert!(q.path.ends_with("curves__ml_pl-2.svg"), "{}", q.path);
        // A name without folder or extension lands in the exports folder with one.
        p.path = "mine".into();
        assert_eq!(p.write(&exports).unwrap(), exports.join("mine.svg"));
        // A new folder elsewhere is created.
        let other = dir.path().join("talk/figs/a.svg");
        p.path = other.display().to_string();
        assert_eq!(p.write(&exports).unwrap(), other);
        assert_eq!(std::fs::read_to_string(&other).unwrap(), "<svg/>");
        p.path = "  ".into();
        assert!(p.write(&exports).is_err());
        p.path = dir.path().display().to_string();
        assert!(p.write(&exports).unwrap_err().contains("folder"));
    }

    #[test]
    fn dark_svg_has_the_panels_background_and_light_text() {
        let svg = crate::experiments::charts::svg_lines("t", "x", "y", &[]);
        assert_eq!(themed_svg(&svg, false), svg);
        let d = themed_svg(&svg, true);
        assert!(!d.contains("fill=\"white\""), "{d}");
        assert!(!d.contains("#ddd") && !d.contains("#444"), "{d}");
        let fg = {
            let c = egui::Visuals::dark().strong_text_color();
            format!("<text fill=\"#{:02x}{:02x}{:02x}\"", c.r(), c.g(), c.b())
        };
        assert!(d.contains(&fg), "{d}");
        assert_eq!(d.matches("<text").count(), d.matches(&fg).count(), "{d}");
    }
}
