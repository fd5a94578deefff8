//! Piecewise training with "none of the above" (001, 003). Exhaustive and sampled NOTA terms
//! are fixed and need one fit; error-driven selection (003) trains `after` iterations without
//! NOTA terms, then adds a NOTA term for every wrong state the current model finds likely and
//! refits from θ — with `refresh`, choosing anew every `refresh` iterations.

use super::{Context, Schedule};
use crate::error::Result;
use crate::estimators::memm::{choose_by_marginals, NotaChoice};
use crate::estimators::{NotaPt, NotaSelection};
use crate::eval::Decoder;
use crate::graph::{Family, Instance};
use crate::optim::{OptimResult, StopReason};
use std::sync::Arc;

pub struct Nota {
    pub selection: NotaSelection,
    pub weight: f64,
}

impl Schedule for Nota {
    fn fit(&self, cx: &mut Context, theta0: Vec<f64>) -> Result<OptimResult> {
        cx.curve.nota_terms =
            Some(NotaPt::new(self.selection.clone(), self.weight).count(cx.instances));
        let NotaSelection::ErrorDriven {
            after,
            threshold,
            refresh,
        } = self.selection
        else {
            let opt = cx.spec.optimiser.clone();
            let obj = cx.objective;
            return cx.minimize(obj, theta0, &opt);
        };
        let max_iter = cx.spec.optimiser.max_iter;
        let obj = cx.objective;
        let opt = cx.optimiser_for(after.max(1));
        let mut fit = cx.minimize(obj, theta0, &opt)?;
        let mut done = fit.iterations;
        let local = cx.inference.decoder == Decoder::Local;
        let mut round = 0;
        while fit.reason != StopReason::Cancelled
            && done < max_iter
            && (round == 0 || (refresh > 0 && fit.reason == StopReason::MaxIterations))
        {
            round += 1;
            let choice = choose_nota(cx.family, cx.instances, &fit.theta, threshold, local);
            let est = NotaPt {
                selection: self.selection.clone(),
                chosen: Some(Arc::new(choice)),
                weight: self.weight,
            };
            let k = est.count(cx.instances);
            cx.summary.nota_choices.push((done, k));
            cx.curve.nota_terms = Some(k);
            let obj = cx.objective_for(&est)?;
            cx.curve.continue_fit();
            let rest = max_iter - done;
            let opt = cx.optimiser_for(if refresh > 0 { refresh.min(rest) } else { rest });
            fit = cx.minimize(&obj, fit.theta, &opt)?;
            done += fit.iterations;
        }
        fit.iterations = done;
        Ok(fit)
    }
}

/// 003's error-driven NOTA choice at θ, from the marginals of the model the run decodes with:
/// the MEMM's (locally normalised rows) for local decoding, the CRF's otherwise.
fn choose_nota(
    fam: &dyn Family,
    instances: &[Instance],
    theta: &[f64],
    threshold: f64,
    local: bool,
) -> NotaChoice {
    choose_by_marginals(instances, threshold, |inst, tr| {
        let phi = crate::eval::tables(fam, theta, inst);
        if let Some(lay) = &inst.chain {
            tr.fill(inst, lay, &phi);
            if local {
                tr.normalise_rows();
            }
            tr.forward_backward();
        }
    })
}
