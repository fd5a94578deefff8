//! Dataset objective, optimiser, run specs, and runs on disk.

pub mod beta;
pub mod camel;
pub mod compare;
pub mod lbfgs;
pub mod objective;
pub mod run;
pub mod run_dir;
pub mod scaling;
pub mod schedule;
pub mod spec;
pub mod trained;

pub use lbfgs::{minimize, IterReport, LbfgsSpec, StopReason};
pub use objective::{DatasetObjective, Evaluation, Prior};
pub use run::{execute, execute_in, load_model, RunEvent, RunSummary};
pub use run_dir::Existing;
pub use spec::{ModelSpec, RunSpec};
pub use trained::TrainedRun;
