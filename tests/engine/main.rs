//! Tests of models, inference and estimators, each against an independent reference (enumeration, finite differences, the papers' definitions). One test binary per layer (tests/README.md has the map).

#[path = "../common/mod.rs"]
mod common;

mod boltzmann_chain;
mod bp;
mod bp_training;
mod camel;
mod factorial;
mod families;
mod local_estimators;
mod memm;
mod reference;
mod scl;
mod scl_theory;
mod skip_chain;
mod subset_tables;
