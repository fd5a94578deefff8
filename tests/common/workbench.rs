//! What the GUI tests share: the app's root, waiting for background work, finding a pane.
#![allow(dead_code, unused_macros)]

use egui_kittest::Harness;
use piecewise_lab::app::Workbench;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The repository (where `sample_data/` and `assets/` are).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Steps frames until `cond` holds (background work finishes on its own threads), then two
/// more so the picture shows it.
pub fn wait_for(
    h: &mut Harness<'_, Workbench>,
    what: &str,
    secs: f64,
    cond: impl Fn(&Workbench) -> bool,
) {
    let t = Instant::now();
    while !cond(h.state()) {
        assert!(
            t.elapsed().as_secs_f64() < secs,
            "timed out after {secs} s waiting for {what}; messages: {:?}; runs: {:?}",
            h.state()
                .state
                .messages
                .iter()
                .map(|m| &m.text)
                .collect::<Vec<_>>(),
            h.state()
                .state
                .runs
                .entries
                .iter()
                .map(|e| format!("{} {}", e.label(), e.status.label()))
                .collect::<Vec<_>>()
        );
        h.step();
        std::thread::sleep(Duration::from_millis(10));
    }
    h.step();
    h.step();
}

/// The first pane of a kind: `pane!(workbench, Graph)`.
macro_rules! pane {
    ($w:expr, $kind:ident) => {
        $w.tree
            .tiles
            .tiles()
            .find_map(|t| match t {
                egui_tiles::Tile::Pane(piecewise_lab::app::Pane::$kind(p)) => Some(p),
                _ => None,
            })
            .expect(concat!("a ", stringify!($kind), " pane"))
    };
}

/// The first pane of a kind, to change: `pane_mut!(workbench, Graph)`.
macro_rules! pane_mut {
    ($w:expr, $kind:ident) => {
        $w.tree
            .tiles
            .iter_mut()
            .find_map(|(_, t)| match t {
                egui_tiles::Tile::Pane(piecewise_lab::app::Pane::$kind(p)) => Some(p),
                _ => None,
            })
            .expect(concat!("a ", stringify!($kind), " pane"))
    };
}

/// Accepts the export dialog's proposed file (the workspace's exports folder and the chart's
/// name): every export asks for its file first.
pub fn save_export(h: &mut Harness<'_, Workbench>) {
    use egui_kittest::kittest::Queryable;
    h.step();
    h.get_by_label("Save").click();
    h.step();
    h.step();
}

/// A finished two-iteration run of `estimator` on a sample file and template (relative to the
/// repository) in `dir`, named `name`: a run for tests that damage or interrupt one.
pub fn short_run(
    dir: &std::path::Path,
    name: Option<&str>,
    (train, template): (&str, &str),
    estimator: piecewise_lab::estimators::EstimatorSpec,
) {
    use piecewise_lab::optim::{LbfgsSpec, Prior};
    use piecewise_lab::run::{execute, RunSpec};
    let spec = RunSpec {
        name: name.map(str::to_string),
        train: root().join(train),
        template: Some(root().join(template)),
        estimator,
        optimiser: LbfgsSpec {
            max_iter: 2,
            ..Default::default()
        },
        prior: Prior::from_c2(1.0),
        threads: 1,
        ..Default::default()
    };
    execute(
        &spec,
        dir,
        &std::sync::atomic::AtomicBool::new(false),
        &mut |_| {},
    )
    .unwrap();
}
