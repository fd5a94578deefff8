//! The pane registry: one list of pane kinds drives the tabs, the "… view" buttons, the *Add
//! pane* menu, focus and dispatch. Adding a pane: its file under `app/`, a [`Pane`] variant, a
//! [`PaneKind`] and a line in [`PANES`].

use super::fields_view::FieldsPane;
use super::graph_view::GraphPane;
use super::plots::CurvesPane;
use super::{
    camel_view, data_view, frontier, graph_view, lessons, parse_view, plots, runs_view, theory,
    AppState,
};

/// The panes the tiles hold, each with its own state. Several graph or curve panes may exist
/// side by side.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[allow(clippy::large_enum_variant)] // a handful of panes; boxing buys nothing
pub enum Pane {
    Lessons(lessons::LessonsPane),
    Data(data_view::DataPane),
    Graph(GraphPane),
    Runs(runs_view::RunsPane),
    Curves(CurvesPane),
    Fields(FieldsPane),
    Compare(CurvesPane),
    Frontier(frontier::FrontierPane),
    Theory(theory::TheoryPane),
    Constraints(camel_view::ConstraintsPane),
    Parse(parse_view::ParsePane),
}

/// Which pane a [`Pane`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PaneKind {
    Lessons,
    Data,
    Graph,
    Runs,
    Curves,
    Fields,
    Compare,
    Frontier,
    Theory,
    Constraints,
    Parse,
}

/// A pane kind's entry in the registry.
pub struct PaneEntry {
    pub kind: PaneKind,
    pub title: &'static str,
    /// Whether *Add pane* offers another one (the others exist once).
    pub addable: bool,
    /// In the default layout's left column (else the right one).
    pub left: bool,
    pub new: fn() -> Pane,
}

/// Every pane, in the order of the tabs and buttons.
pub const PANES: [PaneEntry; 11] = [
    PaneEntry {
        kind: PaneKind::Data,
        title: "Data",
        addable: false,
        left: true,
        new: || Pane::Data(Default::default()),
    },
    PaneEntry {
        kind: PaneKind::Lessons,
        title: "Lessons",
        addable: false,
        left: true,
        new: || Pane::Lessons(Default::default()),
    },
    PaneEntry {
        kind: PaneKind::Graph,
        title: "Graph",
        addable: true,
        left: false,
        new: || Pane::Graph(Default::default()),
    },
    PaneEntry {
        kind: PaneKind::Runs,
        title: "Runs",
        addable: false,
        left: true,
        new: || Pane::Runs(Default::default()),
    },
    PaneEntry {
        kind: PaneKind::Curves,
        title: "Curves",
        addable: true,
        left: false,
        new: || Pane::Curves(Default::default()),
    },
    PaneEntry {
        kind: PaneKind::Fields,
        title: "Fields",
        addable: true,
        left: false,
        new: || Pane::Fields(Default::default()),
    },
    PaneEntry {
        kind: PaneKind::Compare,
        title: "Compare",
        addable: false,
        left: false,
        new: || Pane::Compare(Default::default()),
    },
    PaneEntry {
        kind: PaneKind::Frontier,
        title: "Frontier",
        addable: true,
        left: false,
        new: || Pane::Frontier(Default::default()),
    },
    PaneEntry {
        kind: PaneKind::Theory,
        title: "Theory",
        addable: true,
        left: false,
        new: || Pane::Theory(Default::default()),
    },
    PaneEntry {
        kind: PaneKind::Constraints,
        title: "Constraints",
        addable: true,
        left: false,
        new: || Pane::Constraints(Default::default()),
    },
    PaneEntry {
        kind: PaneKind::Parse,
        title: "Parse",
        addable: true,
        left: false,
        new: || Pane::Parse(Default::default()),
    },
];

impl PaneKind {
    pub fn entry(self) -> &'static PaneEntry {
        PANES
            .iter()
            .find(|e| e.kind == self)
            .expect("every kind is registered")
    }

    pub fn title(self) -> &'static str {
        self.entry().title
    }

    /// A new pane of this kind in its default state.
    pub fn new_pane(self) -> Pane {
        (self.entry().new)()
    }
}

impl Pane {
    pub fn kind(&self) -> PaneKind {
        match self {
            Pane::Lessons(_) => PaneKind::Lessons,
            Pane::Data(_) => PaneKind::Data,
            Pane::Graph(_) => PaneKind::Graph,
            Pane::Runs(_) => PaneKind::Runs,
            Pane::Curves(_) => PaneKind::Curves,
            Pane::Fields(_) => PaneKind::Fields,
            Pane::Compare(_) => PaneKind::Compare,
            Pane::Frontier(_) => PaneKind::Frontier,
            Pane::Theory(_) => PaneKind::Theory,
            Pane::Constraints(_) => PaneKind::Constraints,
            Pane::Parse(_) => PaneKind::Parse,
        }
    }

    /// Draws the pane.
    pub fn ui(&mut self, state: &mut AppState, ui: &mut egui::Ui) {
        match self {
            Pane::Lessons(p) => lessons::ui(state, p, ui),
            Pane::Data(p) => data_view::ui(state, p, ui),
            Pane::Graph(p) => graph_view::ui(state, p, ui),
            Pane::Runs(p) => runs_view::ui(state, p, ui),
            Pane::Curves(p) => plots::curves_ui(state, p, ui),
            Pane::Fields(p) => super::fields_view::fields_ui(state, p, ui),
            Pane::Compare(p) => super::compare_view::compare_ui(state, p, ui),
            Pane::Frontier(p) => frontier::ui(state, p, ui),
            Pane::Theory(p) => theory::ui(state, p, ui),
            Pane::Constraints(p) => camel_view::ui(state, p, ui),
            Pane::Parse(p) => parse_view::ui(state, p, ui),
        }
    }
}

/// The default layout: the left column's panes beside the right column's, as tabs.
pub fn default_tree() -> egui_tiles::Tree<Pane> {
    let mut tiles = egui_tiles::Tiles::default();
    let column = |tiles: &mut egui_tiles::Tiles<Pane>, left: bool| {
        PANES
            .iter()
            .filter(|e| e.left == left)
            .map(|e| tiles.insert_pane((e.new)()))
            .collect::<Vec<_>>()
    };
    let (left, right) = (column(&mut tiles, true), column(&mut tiles, false));
    let l = tiles.insert_tab_tile(left);
    let r = tiles.insert_tab_tile(right);
    let mut lin = egui_tiles::Linear::new(egui_tiles::LinearDir::Horizontal, vec![l, r]);
    lin.shares.set_share(l, 0.42);
    lin.shares.set_share(r, 0.58);
    let root = tiles.insert_container(egui_tiles::Container::Linear(lin));
    egui_tiles::Tree::new(egui::Id::unique("workbench"), root, tiles)
}

/// What panes and the top bar ask of the workbench; served at the end of the frame, after the
/// tiles are drawn (they are borrowed while panes draw).
#[derive(Clone, Debug)]
pub enum AppCommand {
    /// Bring the pane of this kind to the front (adding one when the layout has none).
    Focus(PaneKind),
    /// Hand a treebank (train and test files) to the Parse pane's form and bring it to the
    /// front (a treebank is not factor-graph data).
    Treebank { train: String, test: String },
    /// Add another pane of this kind beside the others.
    Add(PaneKind),
    /// Save the screen region `rect` of the next frame as PNG under the workspace's exports.
    ExportPng { rect: egui::Rect, stem: String },
    /// Set the workbench to a lesson step's state.
    Lesson(Box<super::lesson_format::Step>),
    /// Check the variables picked on the Graph pane against its current term.
    LessonCheck(super::lesson_format::Check),
    /// Show what a lesson's click question hid on the Graph pane (trying it yourself, or
    /// leaving the lesson).
    LessonReveal,
}
