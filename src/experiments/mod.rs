//! Experiments over many runs: `reproduce` (the papers' tables and figures with their
//! protocols), SCL sweeps over (λ, β), and the Monte Carlo check on asymptotic variance. They
//! sit above `train` and `eval` and use both; nothing in the engine imports them.

pub mod charts;
pub mod monte_carlo;
pub mod plan;
pub mod reproduce;
pub mod scl_theory;
pub mod sweep;
