//! Files given to the workbench from outside: dropped on the window, or picked in the system's
//! file dialog (which needs a desktop portal; every dialog also has a path field, and a dialog
//! that fails is a message, not a crash).

use super::*;

/// Which form field a file dialog fills.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DialogTarget {
    Train,
    TrainFolder,
    Test,
    Template,
}

impl AppState {
    /// Files dropped on the window: a folder or data file becomes the training data (a file
    /// whose name says "test" the test data, a `.tpl` the template) and is loaded.
    pub(super) fn dropped_files(&mut self, ctx: &egui::Context) {
        let dropped: Vec<PathBuf> = ctx.input(|i| {
            i.raw
                .dropped_files
                .iter()
                .map(|f| f.path().to_path_buf())
                .collect()
        });
        if dropped.is_empty() {
            return;
        }
        for p in dropped {
            let name = p
                .file_name()
                .map(|s| s.to_string_lossy().to_lowercase())
                .unwrap_or_default();
            let s = p.display().to_string();
            if name.ends_with(".tpl") || name.contains("template") {
                self.form.template = s;
            } else if name.contains("test") && !p.is_dir() {
                self.form.test = s;
            } else {
                self.form.train = s;
                if p.is_dir() {
                    self.form.test.clear();
                }
            }
        }
        self.load(ctx);
    }

    /// Opens a native file dialog on a background thread (it blocks while open).
    pub fn open_dialog(&mut self, ctx: &egui::Context, target: DialogTarget) {
        if self.dialog.is_some() {
            return;
        }
        let start = match target {
            DialogTarget::Template => self.config.root.join("assets/templates"),
            _ => self.config.root.join("sample_data"),
        };
        self.dialog = Some(Job::spawn(ctx, "file dialog", move || {
            let d = rfd::FileDialog::new().set_directory(start);
            let picked = match target {
                DialogTarget::TrainFolder => d.pick_folder(),
                _ => d.pick_file(),
            };
            Ok(picked.map(|p| (target, p)))
        }));
    }
}
