//! Tests of the workbench driven by clicks (egui_kittest): panes, lessons, the presenter. One test binary per layer (tests/README.md has the map).

#[macro_use]
#[path = "../common/workbench.rs"]
mod workbench;

mod gui;
mod lessons;
mod presenter;
mod run_folders;
