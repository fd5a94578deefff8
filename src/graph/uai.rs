//! A `.uai` factor graph (read by `data::uai`) as an instance: one template per function.

use super::{Instance, InstanceBuilder, Layout, Model};
use crate::data::uai::UaiModel;
use crate::error::Result;

impl UaiModel {
    /// The factor graph as an instance (one template per function) and its log tables laid out
    /// as the instance's table buffer; evidence adds an indicator factor per observed variable.
    pub fn instance(&self, evidence: &[(u32, u32)]) -> Result<(Model, Instance, Vec<f64>)> {
        let mut model = Model::default();
        let mut phi = vec![];
        let mut scopes: Vec<&[u32]> = self.scopes.iter().map(|s| s.as_slice()).collect();
        let mut tables: Vec<Vec<f64>> = self.log_tables.clone();
        let ev_scopes: Vec<[u32; 1]> = evidence.iter().map(|&(v, _)| [v]).collect();
        for (&(v, x), s) in evidence.iter().zip(&ev_scopes) {
            scopes.push(s);
            tables.push(
                (0..self.card[v as usize])
                    .map(|y| if y == x { 0.0 } else { f64::NEG_INFINITY })
                    .collect(),
            );
        }
        for (i, s) in scopes.iter().enumerate() {
            let shape = s.iter().map(|&v| self.card[v as usize] as usize).collect();
            model.add_full_template(&format!("f{i}"), shape, 1, Layout::Dense)?;
        }
        let mut b = InstanceBuilder::new(&model);
        for &c in &self.card {
            b.add_var(c as usize);
        }
        for (i, s) in scopes.iter().enumerate() {
            b.add_factor(i, s, &[(0, 1.0)])?;
            phi.extend_from_slice(&tables[i]);
        }
        let inst = b.finish();
        debug_assert_eq!(phi.len(), inst.table_len);
        Ok((model, inst, phi))
    }
}
