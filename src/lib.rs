//! Piecewise Lab: training structured models (CRFs and MRFs) with exact and local estimators.
//!
//! The layers, each importing only those below it: [`data`] and the optimiser [`optim`] at the
//! bottom; every model a templated log-linear factor graph ([`graph`]); inference as a service
//! ([`inference`]); every estimator a different way of normalising the same factor tables
//! ([`estimators`]), and the treebank [`grammar`] beside them; [`eval`] decodes and scores;
//! [`run`] turns a spec of any model kind into a run on disk and opens it again; [`experiments`]
//! are many runs; the command line ([`cli`]) and the eframe workbench ([`app`]) sit on top (the
//! engine never imports them). `docs/architecture.md` draws it.

pub mod app;
pub mod cli;
pub mod data;
pub mod error;
pub mod estimators;
pub mod eval;
pub mod experiments;
pub mod grammar;
pub mod graph;
pub mod inference;
pub mod memory;
pub mod optim;
pub mod provenance;
pub mod run;
pub mod settings;
pub mod util;

pub use error::{Error, Result};
