//! The native window: the eframe app around the workbench, its persistence, and opening on a
//! given lesson slide.

use super::*;

/// The eframe app: the workbench plus persistence.
pub struct WorkbenchApp {
    pub bench: Workbench,
    /// `--window-size`, sent to the window at the first frame: eframe restores the size it
    /// saved last time over the one the window was created with.
    resize: Option<egui::Vec2>,
}

const SETTINGS_KEY: &str = "piecewise-lab/settings";
const TREE_KEY: &str = "piecewise-lab/tiles";

impl WorkbenchApp {
    pub fn new(cc: &eframe::CreationContext<'_>, config: Config) -> WorkbenchApp {
        let settings: Settings = cc
            .storage
            .and_then(|s| eframe::get_value(s, SETTINGS_KEY))
            .unwrap_or_default();
        let mut bench = Workbench::new(config, settings);
        if let Some(tree) = cc
            .storage
            .and_then(|s| eframe::get_value::<egui_tiles::Tree<Pane>>(s, TREE_KEY))
        {
            bench.tree = tree;
        }
        WorkbenchApp {
            bench,
            resize: None,
        }
    }
}

impl eframe::App for WorkbenchApp {
    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
        self.bench.ui(ui);
        // After the frame has set its zoom, and in points at that zoom, so the window is
        // `size` pixels at any zoom (a saved presenter zoom of 1.1 opened `--window-size
        // 1280x800` as 1408×880).
        if let Some(size) = self.resize.take() {
            let zoom = ui.ctx().zoom_factor();
            ui.ctx()
                .send_viewport_cmd(egui::ViewportCommand::InnerSize(size / zoom));
        }
    }

    fn save(&mut self, storage: &mut dyn eframe::Storage) {
        eframe::set_value(storage, SETTINGS_KEY, &self.bench.settings());
        eframe::set_value(storage, TREE_KEY, &self.bench.tree);
    }

    fn on_exit(&mut self, _gl: Option<&eframe::glow::Context>) {
        self.bench.state.runs.cancel_all();
    }
}

/// Where the workbench opens (the `gui` command's `--lesson`, `--step`, `--theme`,
/// `--presenter`): a lecturer starts on the slide they want.
#[derive(Clone, Debug, Default)]
pub struct Opening {
    /// A lesson's number or file name, and its step (from 1).
    pub lesson: Option<(String, usize)>,
    pub dark: Option<bool>,
    pub presenter: Option<bool>,
    /// The window's inner size in points (default 1400×900).
    pub window_size: Option<[f32; 2]>,
    /// Folders of runs to open (`gui --runs DIR…`).
    pub runs: Vec<PathBuf>,
}

impl Workbench {
    /// Opens the workbench on the user's data (the `gui` command's `--train …`): the data form
    /// replaced and loaded, straight to the panes. A lesson left in progress stays at its step
    /// as *Try it yourself*, so it does not load its own data over the user's (Restore or Next
    /// take it up again).
    pub fn open_data(&mut self, src: DataSource) {
        self.state.launch = LaunchForm::for_data(&src);
        self.state.form = src;
        self.state.load_pending = true;
        self.state.welcome = false;
        for (_, t) in self.tree.tiles.iter_mut() {
            if let egui_tiles::Tile::Pane(Pane::Lessons(p)) = t {
                if p.lesson.is_some() {
                    p.trying = true;
                    p.applied = true;
                }
            }
        }
        self.state.command(AppCommand::Focus(PaneKind::Data));
    }

    /// Applies `o`: the theme and scale, and the lesson at its step (applied at the next
    /// frame, as a lesson reopened at start is). Errors name the lessons there are.
    pub fn open_at(&mut self, o: &Opening) -> Result<(), String> {
        if let Some(d) = o.dark {
            self.state.settings.dark = d;
        }
        if let Some(p) = o.presenter {
            self.state.settings.presenter = p;
        }
        for dir in &o.runs {
            self.state
                .open_run_folder(dir)
                .map_err(|e| format!("--runs: {e}"))?;
            self.state.command(AppCommand::Focus(PaneKind::Runs));
        }
        let Some((name, step)) = &o.lesson else {
            return Ok(());
        };
        let (file, index) = self.state.lessons.resolve_step(name, *step)?;
        self.state.command(AppCommand::Focus(PaneKind::Lessons));
        let pane = self.tree.tiles.iter_mut().find_map(|(_, t)| match t {
            egui_tiles::Tile::Pane(Pane::Lessons(p)) => Some(p),
            _ => None,
        });
        let Some(pane) = pane else {
            return Err("the layout has no Lessons pane".into());
        };
        pane.lesson = Some(file);
        pane.step = index;
        pane.trying = false;
        pane.applied = false;
        Ok(())
    }
}

/// Runs the desktop app (the binary's no-argument mode).
/// Opens the workbench; `open`, when given, replaces the remembered data form and is loaded
/// first (the `gui` command's `--train …`).
pub fn run_native(
    config: Config,
    open: Option<DataSource>,
    opening: Opening,
) -> eframe::Result<()> {
    let options = eframe::NativeOptions {
        viewport: egui::ViewportBuilder::default()
            .with_title("Piecewise Lab")
            .with_inner_size(opening.window_size.unwrap_or([1400.0, 900.0]))
            .with_drag_and_drop(true),
        // A size given for a projector is not remembered as the laptop's.
        persist_window: opening.window_size.is_none(),
        ..Default::default()
    };
    eframe::run_native(
        "Piecewise Lab",
        options,
        Box::new(move |cc| {
            let mut app = WorkbenchApp::new(cc, config);
            app.resize = opening.window_size.map(egui::Vec2::from);
            if let Some(src) = open {
                app.bench.open_data(src);
            }
            if let Err(e) = app.bench.open_at(&opening) {
                app.bench.state.error(e);
            }
            Ok(Box::new(app))
        }),
    )
}
