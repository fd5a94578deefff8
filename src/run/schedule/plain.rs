//! One L-BFGS fit of the spec's estimator: what every estimator without a schedule of its own
//! trains with.

use super::{Context, Schedule};
use crate::error::Result;
use crate::optim::OptimResult;

pub struct Plain;

impl Schedule for Plain {
    fn fit(&self, cx: &mut Context, theta0: Vec<f64>) -> Result<OptimResult> {
        let opt = cx.spec.optimiser.clone();
        let obj = cx.objective;
        cx.minimize(obj, theta0, &opt)
    }
}
