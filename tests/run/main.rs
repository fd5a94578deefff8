//! Tests of the run layer: runs on disk, their faults, model files, the settings schema. One test binary per layer (tests/README.md has the map).

mod checkpoint;
mod claim;
mod model_files;
mod run_faults;
mod runs;
mod settings;
