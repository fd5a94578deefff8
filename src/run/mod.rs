//! The run layer, above every model kind: a run's spec ([`RunSpec`], with the model registry
//! [`registry`] and the settings schema's run knobs), the run store ([`store`]: the one owner of
//! a run directory), executing a spec ([`execute`]) through its model kind ([`kind`], listed in
//! [`kinds`]), the training schedules, a finished run opened ([`TrainedRun`]), and runs
//! compared side by side ([`compare`]).

pub mod checkpoint;
pub mod claim;
pub mod compare;
pub mod curve;
pub mod execute;
pub mod factor_graphs;
pub mod grammar;
pub mod inspect;
pub mod kind;
pub mod kinds;
pub mod registry;
pub mod schedule;
pub mod spec;
pub mod store;
pub mod summary;
pub mod trained;
pub mod tree;

pub use execute::{execute, execute_in, execute_with};
pub use registry::{FamilyKind, ModelSpec};
pub use spec::RunSpec;
pub use store::{Existing, RunFiles};
pub use summary::{CurvePoint, RunEvent, RunSummary};
pub use trained::TrainedRun;
