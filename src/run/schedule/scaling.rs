//! The two-stage calibrations as post-steps, θ fixed: per-state scaling (001 §3), one factor
//! α per source state that the run then decodes with; and per-subset scaling (003 §3 and
//! Fig. 2's phase 2), one factor α_s per parameter subset, folded into the run's weights.

use super::{Context, PostStep};
use crate::error::Result;
use crate::estimators::scaling::{fit, fit_subsets};
use crate::run::store::Record;
use crate::run::RunEvent;
use std::sync::Arc;

pub struct PerStateScaling;

impl PostStep for PerStateScaling {
    fn apply(&self, cx: &mut Context, theta: &[f64]) -> Result<Option<Vec<f64>>> {
        let labels = cx
            .instances
            .first()
            .map(|i| cx.family.labels(i, 0).names.clone())
            .unwrap_or_default();
        let sc = fit(
            cx.family.model(),
            cx.instances,
            theta,
            &labels,
            cx.spec.prior,
            &cx.spec.optimiser,
            cx.cancel,
        )?;
        cx.run.write_record(Record::SCALING, &sc)?;
        cx.summary.per_state_scales = Some(sc.alpha.clone());
        cx.inference.scaling = Some(Arc::new(sc.alpha));
        Ok(None)
    }
}

pub struct SubsetScaling;

impl PostStep for SubsetScaling {
    fn apply(&self, cx: &mut Context, theta: &[f64]) -> Result<Option<Vec<f64>>> {
        let subsets = cx.family.parameter_subsets();
        let curve = &mut cx.curve;
        let (sc, calibrated) = fit_subsets(
            cx.family.model(),
            cx.instances,
            theta,
            &subsets,
            cx.spec.prior,
            &cx.spec.optimiser,
            cx.objective.threads(),
            cx.cancel,
            &mut |r| {
                if r.iteration % 10 == 1 {
                    curve.send(RunEvent::Note(format!(
                        "per-subset scaling, iteration {}: objective {:.4} (exact, α with θ fixed; {:.0} s)",
                        r.iteration, r.objective, r.seconds
                    )));
                }
            },
        )?;
        cx.run.write_record(Record::SUBSET_SCALING, &sc)?;
        cx.summary.subset_scaling = Some(crate::run::summary::Calibration {
            alpha: sc.alpha.clone(),
            iterations: sc.iterations,
            seconds: sc.seconds,
        });
        Ok(Some(calibrated))
    }
}
