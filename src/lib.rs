//! Piecewise Lab: training structured models (CRFs and MRFs) with exact and local estimators.
//!
//! Every model is a templated log-linear factor graph ([`graph`]); every estimator is a different
//! way of normalising the same factor tables ([`estimators`]); inference is a service
//! ([`inference`]); [`train`] turns estimators into optimised runs on disk; [`eval`] decodes and
//! scores. [`app`] is the eframe workbench that draws all of it (it holds state; the engine never
//! imports it).

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
pub mod settings;
pub mod train;
pub mod util;

pub use error::{Error, Result};
