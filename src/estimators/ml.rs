//! Exact maximum likelihood: one term with every factor and every variable free,
//! `log p(y*) = Σ_a φ_a(y*_a) − log Z`, whose gradient is (gold indicator − marginals).
//! Chains go through forward–backward; other graphs small enough are enumerated.

use super::{need_gold, Estimator, Workspace};
use crate::error::Result;
use crate::graph::Instance;
use crate::inference::enumerate;

#[derive(Clone, Copy, Debug, Default)]
pub struct ExactMl;

impl Estimator for ExactMl {
    fn name(&self) -> &'static str {
        "ml"
    }

    fn check(&self, inst: &Instance) -> Result<()> {
        need_gold(inst)?;
        if inst.chain.is_none() {
            // Not a chain: only enumeration is exact.
            if inst.joint_states() > crate::inference::MAX_ENUMERATION_STATES {
                return Err(crate::error::Error::invalid(format!(
                    "exact ML needs a chain or a graph small enough to enumerate (this one has {} joint states)",
                    inst.joint_states()
                )));
            }
        }
        Ok(())
    }

    fn evaluate(
        &self,
        inst: &Instance,
        phi: &[f64],
        dphi: Option<&mut [f64]>,
        ws: &mut Workspace,
    ) -> f64 {
        let gold = inst.gold.as_deref().expect("checked: gold labels");
        let score = inst.score(phi, gold);
        if let Some(lay) = &inst.chain {
            let log_z = ws.chain.forward_backward(inst, lay, phi);
            if let Some(d) = dphi {
                inst.add_indicator(gold, 1.0, d);
                ws.chain.add_expectations(inst, lay, d, -1.0);
            }
            score - log_z
        } else {
            let e = enumerate(inst, phi).expect("checked: enumerable");
            ws.chain.ops += inst.joint_states() as u64 * inst.factors.len() as u64;
            if let Some(d) = dphi {
                inst.add_indicator(gold, 1.0, d);
                for (o, m) in d.iter_mut().zip(&e.table_marginals) {
                    *o -= m;
                }
            }
            score - e.log_z
        }
    }
}
