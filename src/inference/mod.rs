//! Inference as a service: forward–backward and Viterbi on chains, exact enumeration for small
//! graphs. It knows nothing about estimators.

pub mod chain;
pub mod enumerate;

pub use chain::ChainWork;
pub use enumerate::{enumerate, Enumeration, MAX_ENUMERATION_STATES};
