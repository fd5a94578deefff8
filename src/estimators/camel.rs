//! CAMEL's specification (002): which variant, and its outer- and inner-loop knobs. The fitting
//! lives in [`super::camel_dual`] (the dual, δ sweeps and the CCCP loop); this is what a run spec names.

use crate::error::{Error, Result};

/// Which CAMEL.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CamelVariant {
    /// Piecewise plus the consistency multipliers δ; g = 0.
    Camel0,
    /// CCCP: g relinearised at the beliefs, from g = 0.
    Cccp,
    /// CCCP from g at the (smoothed) empirical marginals.
    CccpEmpirical,
}

/// CAMEL's outer-loop knobs.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct CamelOptions {
    /// Stop relinearising when no entry of g moves by more than this.
    pub tol: f64,
    /// Relinearisations at most.
    pub max_outer: usize,
    /// Each evaluation sweeps δ until no sepset marginal is off by more than this.
    pub sweep_tol: f64,
    /// δ sweeps at most per evaluation and instance.
    pub max_sweeps: usize,
}

impl Default for CamelOptions {
    fn default() -> Self {
        CamelOptions {
            tol: 1e-4,
            max_outer: 20,
            sweep_tol: 1e-4,
            max_sweeps: 1000,
        }
    }
}

impl CamelOptions {
    pub fn check(&self) -> Result<()> {
        if self.tol.is_nan() || self.tol <= 0.0 || self.max_outer == 0 {
            return Err(Error::invalid(
                "CAMEL needs a positive tolerance on g and at least one outer loop",
            ));
        }
        if self.sweep_tol.is_nan() || self.sweep_tol <= 0.0 || self.max_sweeps == 0 {
            return Err(Error::invalid(
                "CAMEL needs a positive δ-sweep tolerance and at least one sweep",
            ));
        }
        Ok(())
    }
}
