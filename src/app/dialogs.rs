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
    /// A folder of runs to open (the Runs pane's *Open runs…*).
    RunFolder,
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

    /// Opens a folder of runs (any depth: `reproduce` and sweep outputs, a cluster's
    /// collection), says what it found, and remembers it.
    pub fn open_run_folder(&mut self, path: &Path) -> Result<(), String> {
        let (added, truncated) = self.runs.open_folder(path)?;
        let total = self
            .runs
            .entries
            .iter()
            .filter(|e| e.folder.as_deref() == Some(path))
            .count();
        self.info(format!(
            "opened {}: {total} runs ({added} new to the list){}; it is read again every {} s",
            path.display(),
            truncated
                .map(|t| format!(" — the search {t}"))
                .unwrap_or_default(),
            super::runs::RESCAN.as_secs()
        ));
        let recent = &mut self.settings.recent_run_folders;
        recent.retain(|r| r != path);
        recent.insert(0, path.to_path_buf());
        recent.truncate(8);
        Ok(())
    }

    /// Opens a native file dialog on a background thread (it blocks while open).
    pub fn open_dialog(&mut self, ctx: &egui::Context, target: DialogTarget) {
        if self.dialog.is_some() {
            return;
        }
        let start = match target {
            DialogTarget::Template => self.config.root.join("assets/templates"),
            DialogTarget::RunFolder => self.config.workspace.clone(),
            _ => self.config.root.join("sample_data"),
        };
        self.dialog = Some(Job::spawn(ctx, "file dialog", move || {
            let d = rfd::FileDialog::new().set_directory(start);
            let picked = match target {
                DialogTarget::TrainFolder | DialogTarget::RunFolder => d.pick_folder(),
                _ => d.pick_file(),
            };
            Ok(picked.map(|p| (target, p)))
        }));
    }
}
