//! What a trained run shows of one item, computed for the Graph pane's inspector off the GUI
//! thread: each factor's log-potential table at the run's weights, its exact marginal where
//! exact inference is possible, loopy BP's beliefs where the graph is not a chain, the per-state
//! scales, and BP's messages after any number of sweeps (the stepper).

use super::trained::TrainedRun;
use crate::data::Sequence;
use crate::error::Result;
use crate::inference::bp::{BpSnapshot, Schedule};
use crate::inference::BpReport;
use ndarray::ArrayD;

/// A trained model's view of one item.
pub struct Learned {
    /// Per factor, its log-potential table, shaped by its scope (a pair factor's `l × l`).
    pub phi: Vec<ArrayD<f64>>,
    /// Per factor, its exact marginal table (`None` where not computed), and how it was
    /// computed.
    pub marginals: Option<(Vec<Option<ArrayD<f64>>>, &'static str)>,
    /// Per factor, loopy BP's belief, with BP's report.
    pub beliefs: Option<(Vec<Option<ArrayD<f64>>>, BpReport)>,
    /// The model's BP schedule (its beliefs' sweeps count in it).
    pub schedule: Schedule,
    /// The run's per-state scales (001 §3) with the source states' names, start last.
    pub scales: Option<Vec<(String, f64)>>,
}

impl TrainedRun {
    /// The run's view of `seq` ([`Learned`]).
    pub fn learned(&self, seq: &Sequence) -> Result<Learned> {
        let inst = self.family.instance(seq)?;
        let mut phi = vec![0.0; inst.table_len];
        self.family
            .model()
            .build_tables(&self.theta, &inst, &mut phi, &mut vec![]);
        let tables = inst
            .factors
            .iter()
            .map(|f| inst.table_array(f, inst.table(f, &phi).to_vec()))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| {
                crate::error::Error::invalid("a factor's table does not fit its scope")
            })?;
        let m = crate::inference::factor_marginals(&inst, &phi, &self.inference.bp);
        let arrays = |per_factor: Vec<Vec<f64>>| -> Vec<Option<ArrayD<f64>>> {
            inst.factors
                .iter()
                .zip(per_factor)
                .map(|(f, t)| inst.table_array(f, t))
                .collect()
        };
        let scales = self.inference.scaling.as_ref().and_then(|a| {
            let names = &self.family.labels(&inst, 0).names;
            (a.len() == names.len() + 1).then(|| {
                names
                    .iter()
                    .cloned()
                    .chain(std::iter::once("start".to_string()))
                    .zip(a.iter().copied())
                    .collect()
            })
        });
        Ok(Learned {
            phi: tables,
            marginals: m.exact.map(|(t, by)| (arrays(t), by)),
            beliefs: m.beliefs.map(|(t, r)| (arrays(t), r)),
            schedule: self.inference.bp.schedule,
            scales,
        })
    }

    /// Loopy BP on `seq` at the run's weights after `sweeps` sweeps, with the run's damping.
    pub fn bp_snapshot(&self, seq: &Sequence, sweeps: usize) -> Result<BpSnapshot> {
        let inst = self.family.instance(seq)?;
        let phi = crate::eval::tables(self.family.as_ref(), &self.theta, &inst);
        Ok(crate::inference::bp::snapshot(
            &inst,
            &phi,
            self.inference.bp.damping,
            sweeps,
        ))
    }
}
