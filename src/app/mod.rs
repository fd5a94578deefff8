//! The eframe workbench. It holds state and draws; data loading, prediction and training run on
//! background threads (`jobs`, `runs`) and report through channels the UI drains each frame.
//! [`Workbench::ui`] is the whole app without eframe, so tests drive it with egui_kittest.

pub mod appearance;
pub mod bundled;
pub mod camel_view;
mod compare_view;
pub mod data;
mod data_view;
mod dialogs;
pub mod export;
mod fields_view;
mod frames;
pub mod frontier;
pub mod graph_view;
pub mod jobs;
mod knob_widgets;
pub mod launch;
pub mod lesson_format;
pub mod lessons;
mod models;
mod panes;
pub mod papers;
pub mod parse_view;
mod plots;
pub mod policy_view;
pub mod run_folders;
pub mod runs;
mod runs_view;
pub mod theory;
mod top_bar;
mod welcome;
mod window;

use crate::run::TrainedRun;
use data::{DataSource, GenerateForm, LoadedData, Split};
use jobs::{take_finished, Job};
use launch::LaunchForm;
use runs::Runs;
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

pub use dialogs::DialogTarget;
pub use fields_view::FieldsPane;
pub use frames::FrameStats;
pub use graph_view::GraphPane;
pub use panes::{default_tree, AppCommand, Pane, PaneEntry, PaneKind, PANES};
pub use plots::CurvesPane;
pub use window::{run_native, Opening, WorkbenchApp};

/// Where the app finds its bundled files and keeps its runs.
#[derive(Clone, Debug)]
pub struct Config {
    /// Holds `sample_data/` and `assets/`.
    pub root: PathBuf,
    /// Runs (`runs/`), generated data (`data/`) and exports (`exports/`).
    pub workspace: PathBuf,
}

impl Config {
    /// For the binary. Bundled files: from the working directory if it has them (a source
    /// tree), else from beside the binary (an unpacked release), else the copy compiled into
    /// the binary, written to the platform's data directory. The workspace: `PIECEWISE_WORKSPACE`,
    /// else a `workspace` folder in the working directory when there is one (runs made
    /// before), else `workspace` in the data directory.
    pub fn for_binary() -> Config {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        let exe_dir = std::env::current_exe()
            .ok()
            .and_then(|e| e.parent().map(Path::to_path_buf));
        let beside = exe_dir
            .iter()
            .flat_map(|d| [d.clone(), d.join("../share/piecewise-lab")])
            .collect::<Vec<_>>();
        let root = std::iter::once(cwd.clone())
            .chain(beside)
            .find(|d| bundled::is_root(d))
            .or_else(|| {
                let dir = bundled::extracted_root()?;
                match bundled::write_to(&dir) {
                    Ok(d) => Some(d),
                    Err(e) => {
                        eprintln!("warning: cannot write the bundled files: {e}");
                        None
                    }
                }
            })
            .unwrap_or_else(|| cwd.clone());
        let workspace = std::env::var_os("PIECEWISE_WORKSPACE")
            .map(PathBuf::from)
            .or_else(|| Some(cwd.join("workspace")).filter(|w| w.is_dir()))
            .or_else(|| bundled::data_dir().map(|d| d.join("workspace")))
            .unwrap_or_else(|| cwd.join("workspace"));
        Config { root, workspace }
    }

    /// The About box's lines: version, and where the bundled files and the runs are.
    pub fn about(&self) -> Vec<String> {
        vec![
            format!("Piecewise Lab {}", env!("CARGO_PKG_VERSION")),
            format!("lessons, templates, sample data: {}", self.root.display()),
            format!(
                "workspace (runs, generated data, exports): {}",
                self.workspace.display()
            ),
        ]
    }
}

/// What persists between sessions (eframe storage).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Settings {
    pub source: Option<DataSource>,
    /// Recently loaded data sets, newest first.
    pub recent: Vec<DataSource>,
    pub launch: Option<LaunchForm>,
    pub generate: GenerateForm,
    /// Start on the panes rather than the welcome screen.
    pub hide_welcome: bool,
    /// The dark theme; light (the default) suits a projector.
    pub dark: bool,
    /// The presentation scale: everything larger (F5).
    pub presenter: bool,
    /// Runs that train at once (the Runs pane's setting; 0 in older settings means 1).
    pub runs_at_once: usize,
    /// Folders of runs open at the end of the last session (opened again at start).
    pub run_folders: Vec<PathBuf>,
    /// Folders of runs opened recently, newest first.
    pub recent_run_folders: Vec<PathBuf>,
    /// Lessons finished (their files' names), marked in the list of lessons.
    pub lessons_done: std::collections::BTreeSet<String>,
}

/// A line in the message bar.
#[derive(Clone, Debug)]
pub struct Message {
    pub text: String,
    pub error: bool,
}

/// Predicted labels of one corpus of the loaded data by one run's model.
pub struct Predictions {
    pub run: String,
    pub split: Split,
    pub labels: Vec<Vec<String>>,
}

/// A colour as the charts module writes it.
pub fn rgb(c: egui::Color32) -> crate::experiments::charts::Rgb {
    [c.r(), c.g(), c.b()]
}

/// A chart colour on screen.
pub fn color(c: crate::experiments::charts::Rgb) -> egui::Color32 {
    egui::Color32::from_rgb(c[0], c[1], c[2])
}

/// Everything but the tile tree (which the tiles behaviour borrows separately): only what more
/// than one pane or the workbench itself reads. The data in hand and its forms (the Data pane,
/// the welcome screen and lessons fill them), the runs and the models and predictions opened
/// from them (Graph, Curves, Fields, Compare, Parse), the one running sweep (the Frontier panes,
/// the run queue and lessons wait on it), the lessons (the Lessons pane, the welcome screen and
/// the keys), dialogs, exports and messages. A pane's own runtime lives in its [`Pane`] variant
/// (its skipped-by-serde fields: the Runs and Frontier panes' policy previews, the Frontier's
/// sweeps, the Theory pane's curves and Monte Carlo job, the Parse pane's grammars and sentence
/// views, the Graph pane's cache), and a hand-over to one pane is an [`AppCommand`].
pub struct AppState {
    pub config: Config,
    pub settings: Settings,
    pub data: Option<LoadedData>,
    loading: Option<Job<LoadedData>>,
    pub runs: Runs,
    /// Runs shown in curves, fields and compare.
    pub selected: BTreeSet<String>,
    pub messages: Vec<Message>,
    /// The data form being edited (applied by "Load").
    pub form: DataSource,
    pub launch: LaunchForm,
    models: HashMap<String, Arc<TrainedRun>>,
    model_jobs: HashMap<String, Job<TrainedRun>>,
    predictions: Vec<Predictions>,
    prediction_jobs: HashMap<(String, Split), Job<Predictions>>,
    dialog: Option<Job<Option<(DialogTarget, PathBuf)>>>,
    /// What panes asked of the workbench this frame.
    commands: Vec<AppCommand>,
    pub frames: FrameStats,
    /// Load the form's data at the next frame (start-up).
    load_pending: bool,
    /// The lessons of `assets/lessons/`, and what the current one waits for.
    pub lessons: lessons::LessonRuntime,
    /// The welcome screen is shown instead of the panes.
    pub welcome: bool,
    /// Why the last load failed, shown beside the Load button until the next load.
    pub load_error: Option<String>,
    /// The sweep started from a Frontier pane, while it runs.
    pub sweep: Option<frontier::RunningSweep>,
    /// Grows as the running sweep's points finish: Frontier panes read the sweeps again.
    pub sweep_events: usize,
    shot_tx: std::sync::mpsc::Sender<(String, egui::ColorImage)>,
    shot_rx: std::sync::mpsc::Receiver<(String, egui::ColorImage)>,
    /// Exports waiting for their file name, the first one's dialog shown.
    pub exports: std::collections::VecDeque<export::Pending>,
    /// The export dialog's *Browse…* (a native save dialog on its own thread).
    export_browse: Option<Job<Option<PathBuf>>>,
    /// The theme and scale applied to the context.
    applied: appearance::Applied,
    /// A widget (a text field) had the keyboard at the end of the last frame: lesson keys
    /// wait (egui drops the focus on Esc before the frame's widgets run).
    keyboard_busy: bool,
    /// The References window is open.
    pub references_open: bool,
    /// The About window is open.
    pub about_open: bool,
    /// The run deleted last, for the message bar's *Undo*.
    pub undo: Option<runs::Trashed>,
    /// What the current lesson step points at (scrolled into view by the pane drawing it).
    pub focus: lesson_format::Focus,
    /// Teaching or presenting: pictures keep a size readable from the back of a room.
    pub lecture: bool,
}

/// The whole app.
pub struct Workbench {
    pub state: AppState,
    pub tree: egui_tiles::Tree<Pane>,
}

impl Workbench {
    /// A workbench with `settings` (persisted ones, or defaults); starts loading the data set
    /// it last had, or the bundled sample.
    pub fn new(config: Config, settings: Settings) -> Workbench {
        let (mut runs, problems) = Runs::open(&config.workspace);
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        runs.runs_at_once = settings.runs_at_once.clamp(1, cores);
        let form = settings
            .source
            .clone()
            .unwrap_or_else(|| DataSource::sample(&config.root));
        let launch = settings
            .launch
            .clone()
            .unwrap_or_else(|| LaunchForm::for_data(&form));
        let frames = FrameStats {
            log: std::env::var_os("PIECEWISE_FRAME_LOG")
                .and_then(|p| std::fs::File::create(p).ok()),
            ..Default::default()
        };
        let (shot_tx, shot_rx) = std::sync::mpsc::channel();
        let root = config.root.clone();
        let hide_welcome = settings.hide_welcome;
        let mut state = AppState {
            config,
            settings,
            data: None,
            loading: None,
            runs,
            selected: BTreeSet::new(),
            messages: problems
                .into_iter()
                .map(|text| Message { text, error: true })
                .collect(),
            form,
            launch,
            models: HashMap::new(),
            model_jobs: HashMap::new(),
            predictions: vec![],
            prediction_jobs: HashMap::new(),
            dialog: None,
            commands: vec![],
            frames,
            load_pending: false,
            lessons: lessons::LessonRuntime::read(&root),
            welcome: !hide_welcome,
            load_error: None,
            sweep: None,
            sweep_events: 0,
            shot_tx,
            shot_rx,
            exports: Default::default(),
            export_browse: None,
            applied: Default::default(),
            keyboard_busy: false,
            references_open: false,
            about_open: false,
            undo: None,
            focus: Default::default(),
            lecture: false,
        };
        for e in state
            .runs
            .reopen(&std::mem::take(&mut state.settings.run_folders))
        {
            state.error(e);
        }
        // Finished runs start selected, so the curves show something.
        state.selected = state
            .runs
            .entries
            .iter()
            .rev()
            .take(3)
            .map(|e| e.id.clone())
            .collect();
        state.load_pending = true;
        Workbench {
            state,
            tree: default_tree(),
        }
    }

    /// Draws one frame.
    pub fn ui(&mut self, ui: &mut egui::Ui) {
        let t0 = Instant::now();
        let ctx = ui.ctx().clone();
        if std::mem::take(&mut self.state.load_pending) {
            self.state.load(&ctx);
            // Solid scroll bars, shown whenever a pane's content overflows: egui's default
            // floating bars appear only on hover, and a student sees a pane cut off (5.3).
            ctx.all_styles_mut(|s| s.spacing.scroll = egui::style::ScrollStyle::solid());
        }
        appearance::apply(&ctx, &self.state.settings, &mut self.state.applied);
        self.state.poll();
        self.state.dropped_files(&ctx);
        // Keys for the presenter, before any pane sees them; not while a text field (or any
        // widget) has the keyboard or the export dialog is open.
        let free = !self.state.keyboard_busy
            && ctx.memory(|m| m.focused().is_none())
            && self.state.exports.is_empty();
        appearance::keys(&mut self.state, &ctx, free);
        lessons::keys(self, &ctx, free);
        self.state.lecture = lessons::teaching(&self.tree) || self.state.settings.presenter;
        egui::Panel::top("menu").show(ui, |ui| self.top_bar(ui));
        egui::Panel::bottom("messages").show(ui, |ui| self.state.message_bar(ui));
        egui::CentralPanel::default_margins().show(ui, |ui| {
            if self.state.welcome {
                welcome::ui(&mut self.state, ui);
                return;
            }
            let mut behavior = Behavior {
                state: &mut self.state,
            };
            self.tree.ui(&mut behavior, ui);
        });
        for command in std::mem::take(&mut self.state.commands) {
            match command {
                AppCommand::Add(kind) => self.add_pane(kind.new_pane()),
                AppCommand::Focus(kind) => self.focus(kind),
                AppCommand::Treebank { train, test } => {
                    self.focus(PaneKind::Parse);
                    for (_, tile) in self.tree.tiles.iter_mut() {
                        if let egui_tiles::Tile::Pane(Pane::Parse(p)) = tile {
                            p.train.clone_from(&train);
                            p.test.clone_from(&test);
                        }
                    }
                }
                AppCommand::ExportPng { rect, stem } => self.state.export_png(&ctx, rect, stem),
                AppCommand::Lesson(step) => lessons::apply(self, &ctx, *step),
                AppCommand::LessonCheck(c) => lessons::check_picture(self, c),
                AppCommand::LessonReveal => {
                    for (_, tile) in self.tree.tiles.iter_mut() {
                        if let egui_tiles::Tile::Pane(Pane::Graph(g)) = tile {
                            g.quiz = None;
                        }
                    }
                }
            }
        }
        lessons::settle(self);
        self.state.collect_exports();
        self.state.export_dialog(&ctx);
        if self.state.references_open {
            appearance::references_window(&mut self.state, &ctx);
        }
        if self.state.about_open {
            appearance::about_window(&mut self.state, &ctx);
        }
        self.state.keyboard_busy = ctx.memory(|m| m.focused().is_some());
        // A switch clicked this frame takes effect at the next.
        appearance::apply(&ctx, &self.state.settings, &mut self.state.applied);
        if self.state.runs.any_live() || self.state.is_busy() {
            ctx.request_repaint_after(std::time::Duration::from_millis(250));
        }
        // Runs other processes write appear and progress without input.
        ctx.request_repaint_after(runs::RESCAN);
        let live = self.state.runs.live_count();
        self.state
            .frames
            .record(t0.elapsed().as_secs_f32() * 1000.0, live);
    }

    /// Puts a new pane next to the others (in the root container).
    fn add_pane(&mut self, pane: Pane) {
        let id = self.tree.tiles.insert_pane(pane);
        match self.tree.root() {
            Some(root) => {
                if let Some(egui_tiles::Tile::Container(c)) = self.tree.tiles.get_mut(root) {
                    c.add_child(id);
                } else {
                    let new_root = self.tree.tiles.insert_horizontal_tile(vec![root, id]);
                    self.tree.root = Some(new_root);
                }
            }
            None => self.tree.root = Some(id),
        }
    }

    /// The Runs pane's policy preview: its relative efficiency once computed.
    pub fn policy_preview_efficiency(
        &self,
    ) -> Option<&Result<crate::eval::asymptotic::Efficiency, String>> {
        self.tree.tiles.iter().find_map(|(_, t)| match t {
            egui_tiles::Tile::Pane(Pane::Runs(p)) => p.preview.efficiency(),
            _ => None,
        })
    }

    /// Brings the pane of `kind` to the front, adding one when the layout has none.
    fn focus(&mut self, kind: PaneKind) {
        self.state.welcome = false;
        let found = self
            .tree
            .make_active(|_, tile| matches!(tile, egui_tiles::Tile::Pane(p) if p.kind() == kind));
        // A layout saved before this pane existed: add it.
        if !found {
            self.add_pane(kind.new_pane());
        }
    }

    /// The persisted settings (with the current forms).
    pub fn settings(&self) -> Settings {
        let mut s = self.state.settings.clone();
        s.launch = Some(self.state.launch.clone());
        s.runs_at_once = self.state.runs.runs_at_once;
        s.run_folders = self.state.runs.folders.clone();
        s
    }
}

impl AppState {
    /// Starts loading the data form in the background.
    pub fn load(&mut self, ctx: &egui::Context) {
        // Treebanks are not factor-graph data: the Parse pane trains grammars on them.
        if self.form.family() == crate::run::FamilyKind::Grammar {
            // The factor-graph data is no longer the data set in hand (the top bar says so).
            self.data = None;
            self.commands.push(AppCommand::Treebank {
                train: self.form.train.clone(),
                test: self.form.test.clone(),
            });
            self.info("a treebank: the Parse pane trains grammars on it and draws their charts");
            return;
        }
        self.load_error = None;
        let source = self.form.clone();
        self.loading = Some(Job::spawn(
            ctx,
            format!("loading {}", source.title()),
            move || LoadedData::load(&source).map_err(|e| e.to_string()),
        ));
    }

    pub fn is_busy(&self) -> bool {
        self.loading.is_some()
            || self.dialog.is_some()
            || !self.model_jobs.is_empty()
            || !self.prediction_jobs.is_empty()
            || self.sweep.is_some()
    }

    /// Whether a data set is being loaded.
    pub fn is_loading(&self) -> bool {
        self.loading.is_some()
    }

    pub fn info(&mut self, text: impl Into<String>) {
        self.messages.push(Message {
            text: text.into(),
            error: false,
        });
    }

    pub fn error(&mut self, text: impl Into<String>) {
        self.messages.push(Message {
            text: text.into(),
            error: true,
        });
    }

    /// Collects finished background work.
    fn poll(&mut self) {
        for id in self.runs.poll() {
            // A failed run has no curve to show: unticked, and why said where it is seen.
            self.selected.remove(&id);
            let why = self
                .runs
                .get(&id)
                .and_then(|e| e.error.clone())
                .unwrap_or_else(|| "no reason recorded".into());
            self.error(format!("run {id} failed: {why}"));
        }
        frontier::poll_sweep(self);
        match take_finished(&mut self.loading) {
            Some(Ok(d)) => {
                self.info(format!(
                    "loaded {}: {} sequences, {} tokens, {} labels, {} parameters",
                    d.source.title(),
                    d.train_stats.sequences,
                    d.train_stats.tokens,
                    d.train_stats.label_counts.len(),
                    d.family.model().n_params
                ));
                let s = d.source.clone();
                self.settings.recent.retain(|r| r != &s);
                self.settings.recent.insert(0, s.clone());
                self.settings.recent.truncate(8);
                self.settings.source = Some(s);
                self.predictions.clear();
                self.prediction_jobs.clear();
                // Runs of another family stop being ticked: Curves and Compare would put them
                // on one axis with this data's runs (issue 24, 5.12).
                let kind = d.family.kind().to_string();
                let runs = &self.runs;
                self.selected
                    .retain(|id| runs.get(id).is_some_and(|e| e.spec.model.name() == kind));
                // The Runs form follows the loaded data unless it was given other data: two
                // paths that silently differ train on the wrong data (issue 43, D44).
                let followed = self
                    .data
                    .as_ref()
                    .is_none_or(|old| old.source == self.launch.data);
                if followed {
                    self.launch.use_data(&d.source);
                }
                self.data = Some(d);
            }
            Some(Err(e)) => {
                let text = format!("could not load the data: {e}");
                self.load_error = Some(text.clone());
                self.error(text);
            }
            None => {}
        }
        match take_finished(&mut self.dialog) {
            Some(Ok(Some((target, path)))) => {
                let p = path.display().to_string();
                match target {
                    DialogTarget::Train | DialogTarget::TrainFolder => self.form.train = p,
                    DialogTarget::Test => self.form.test = p,
                    DialogTarget::Template => self.form.template = p,
                    DialogTarget::RunFolder => {
                        if let Err(e) = self.open_run_folder(&path) {
                            self.error(format!("cannot open runs: {e}"));
                        }
                    }
                }
            }
            Some(Ok(None)) => self.info(
                "no file chosen (the dialog was cancelled, or no desktop portal is available): \
                 type the path into the field or drop the file on the window",
            ),
            Some(Err(e)) => self.error(format!(
                "the file dialog failed ({e}): type the path into the field or drop the file on \
                 the window"
            )),
            None => {}
        }
        for (k, r) in jobs::drain_finished(&mut self.model_jobs) {
            match r {
                Ok(m) => {
                    for w in &m.warnings {
                        self.info(format!("run {k}: {w}"));
                    }
                    self.models.insert(k, Arc::new(m));
                }
                Err(e) => {
                    if let Some(r) = self.runs.entries.iter_mut().find(|r| r.id == k) {
                        r.mark_broken(e.clone());
                    }
                    self.error(format!("could not load the model of run {k}: {e}"))
                }
            }
        }
        for (k, r) in jobs::drain_finished(&mut self.prediction_jobs) {
            match r {
                Ok(p) => self.predictions.push(p),
                Err(e) => self.error(format!("could not predict with run {}: {e}", k.0)),
            }
        }
    }

    /// The last message on the left; the frame time at the right, where nothing else is drawn
    /// (issue 24, 5.2: it overlapped the data set's name in the top bar).
    fn message_bar(&mut self, ui: &mut egui::Ui) {
        ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
            ui.weak(format!(
                "frame {:.1} ms (median {:.1})",
                self.frames.last_ms,
                self.frames.median_ms()
            ));
            ui.separator();
            ui.with_layout(
                egui::Layout::left_to_right(egui::Align::Center).with_main_wrap(true),
                |ui| self.message_line(ui),
            );
        });
    }

    fn message_line(&mut self, ui: &mut egui::Ui) {
        {
            if let Some(m) = self.messages.last() {
                let color = if m.error {
                    ui.visuals().error_fg_color
                } else {
                    ui.visuals().text_color()
                };
                ui.label(egui::RichText::new(&m.text).color(color));
                runs_view::undo_button(self, ui);
                if ui.small_button("Dismiss").clicked() {
                    self.messages.pop();
                }
                if self.messages.len() > 1 {
                    ui.weak(format!("({} earlier)", self.messages.len() - 1));
                }
            } else {
                ui.weak("Drop a CoNLL file, a seminar folder or a .tpl template on the window to load it.");
            }
        }
    }

    /// Asks the workbench for something at the end of the frame.
    pub fn command(&mut self, command: AppCommand) {
        self.commands.push(command);
    }
}

struct Behavior<'a> {
    state: &'a mut AppState,
}

impl egui_tiles::Behavior<Pane> for Behavior<'_> {
    fn pane_ui(
        &mut self,
        ui: &mut egui::Ui,
        _tile_id: egui_tiles::TileId,
        pane: &mut Pane,
    ) -> egui_tiles::UiResponse {
        egui::Frame::new()
            .inner_margin(egui::Margin::same(6))
            .show(ui, |ui| pane.ui(self.state, ui));
        egui_tiles::UiResponse::None
    }

    fn tab_title_for_pane(&mut self, pane: &Pane) -> egui::WidgetText {
        pane.kind().title().into()
    }

    fn is_tab_closable(
        &self,
        tiles: &egui_tiles::Tiles<Pane>,
        tile_id: egui_tiles::TileId,
    ) -> bool {
        // A kind may be closed only while another pane of the same kind remains.
        let Some(egui_tiles::Tile::Pane(p)) = tiles.get(tile_id) else {
            return false;
        };
        tiles
            .tiles()
            .filter(|t| matches!(t, egui_tiles::Tile::Pane(q) if q.kind() == p.kind()))
            .count()
            > 1
    }

    fn simplification_options(&self) -> egui_tiles::SimplificationOptions {
        egui_tiles::SimplificationOptions {
            all_panes_must_have_tabs: true,
            ..Default::default()
        }
    }
}

/// Says, beside a model picker, that runs trained on other data are left out of it.
pub fn hidden_runs_note(ui: &mut egui::Ui, hidden: usize) {
    if hidden > 0 {
        ui.weak(format!(
            "({hidden} run(s) trained on other data not listed)"
        ))
        .on_hover_text(
            "A run is listed only with the data it was trained on (same training file, \
                 template and model): its factors are the ones drawn here",
        );
    }
}

/// Ten colours for runs and templates: Tableau-10, yellow darkened, pink and grey replaced.
pub fn palette(i: usize) -> egui::Color32 {
    use egui::Color32;
    const P: [Color32; 10] = [
        Color32::from_rgb(78, 121, 167),
        Color32::from_rgb(242, 142, 43),
        Color32::from_rgb(225, 87, 89),
        Color32::from_rgb(118, 183, 178),
        Color32::from_rgb(89, 161, 79),
        Color32::from_rgb(188, 152, 30),
        Color32::from_rgb(176, 122, 161),
        Color32::from_rgb(40, 40, 40),
        Color32::from_rgb(156, 117, 95),
        Color32::from_rgb(120, 60, 200),
    ];
    P[i % P.len()]
}

/// Formats seconds for lists: `12.3 s`, `4 min 05 s`.
pub fn fmt_seconds(s: f64) -> String {
    if s < 1.0 {
        format!("{s:.2} s")
    } else if s < 60.0 {
        format!("{s:.1} s")
    } else {
        let m = (s / 60.0).floor();
        format!("{m:.0} min {:02.0} s", s - 60.0 * m)
    }
}

/// The path as typed, for messages.
pub fn show_path(p: &Path) -> String {
    p.display().to_string()
}
