//! CAMEL's outer loop (002): piecewise, then the dual with δ, relinearising g (CCCP). Each fit
//! continues the curve, with the fit's index and the largest sepset violation on every point;
//! the fits, δ and g go to `camel.json`.

use super::{Context, Schedule};
use crate::error::Result;
use crate::estimators::camel::{CamelOptions, CamelVariant};
use crate::estimators::camel_dual::{fit, CamelObjective, CamelRecord};
use crate::optim::{IterReport, Objective, OptimResult};
use crate::run::store::Record;

pub struct Camel {
    pub variant: CamelVariant,
    pub options: CamelOptions,
}

impl Schedule for Camel {
    fn fit(&self, cx: &mut Context, theta0: Vec<f64>) -> Result<OptimResult> {
        let model = cx.family.model();
        let n_w = model.n_params;
        // On the run's threads, as every other estimator.
        let pool = cx.objective.pool();
        let mut cobj = CamelObjective::new(model, cx.instances, cx.spec.prior).on_pool(pool);
        let mut current = 0usize;
        let curve = &mut cx.curve;
        let r = fit(
            &mut cobj,
            self.variant,
            theta0,
            &self.options,
            &cx.spec.optimiser,
            cx.cancel,
            &mut |k, rep, x, violation| {
                if k != current {
                    current = k;
                    curve.continue_fit();
                }
                let rep = IterReport {
                    fit: Some(k),
                    violation: violation.is_finite().then_some(violation),
                    ..rep.clone()
                };
                curve.observe(&rep, &x[..n_w]);
            },
        )?;
        cx.summary.camel_fits = r.loops.clone();
        cx.summary.camel_multipliers = cobj.n_delta();
        cx.run.write_record(
            Record::CAMEL,
            &CamelRecord {
                variant: self.variant,
                options: self.options,
                fits: r.loops.clone(),
                delta: cobj.delta_blocks(&r.x).iter().map(|d| d.to_vec()).collect(),
                g: cobj.g.clone(),
            },
        )?;
        let iterations = cx.curve.last.as_ref().map_or(0, |l| l.iteration);
        Ok(OptimResult {
            theta: r.x[..n_w].to_vec(),
            iterations,
            reason: r.reason,
            last: None,
        })
    }

    /// CAMEL's dual carries δ from one evaluation to the next (the profiled multipliers), a
    /// state its checkpoint would need besides L-BFGS's: not kept, so a CAMEL run starts
    /// again.
    fn resumable(&self) -> bool {
        false
    }
}
