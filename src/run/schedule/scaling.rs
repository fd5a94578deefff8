//! Per-state scaling (001 §3) as a post-step: with θ fixed, one factor α per source state
//! maximises the CRF's training likelihood; the run then decodes with them.

use super::{Context, PostStep};
use crate::error::Result;
use crate::estimators::scaling::fit;
use crate::run::store::Record;
use std::sync::Arc;

pub struct PerStateScaling;

impl PostStep for PerStateScaling {
    fn apply(&self, cx: &mut Context, theta: &[f64]) -> Result<()> {
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
        Ok(())
    }
}
