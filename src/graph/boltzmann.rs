//! The Boltzmann machine of 004 §8.1: m binary variables, fully connected,
//! `p(x) ∝ exp(Σ_{i<j} θ_ij x_i x_j + Σ_i b_i x_i)` with x ∈ {0, 1}^m, the biases optional (the
//! paper has none). Generative: nothing is observed; every sample is a full assignment.
//! Each pair has its own coupling weight: one feature per pair in lexicographic order
//! (1,2), (1,3), …, (m−1,m), read through an entry map that puts it on the table entry (1, 1).

use super::family::Family;
use super::{Expected, Instance, InstanceBuilder, LabelSet, Layout, Model, NO_COLUMN};
use crate::data::samples::{format_samples, read_samples};
use crate::data::{Corpus, Sequence};
use crate::error::{Error, Result};
use std::path::Path;

#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct BoltzmannOptions {
    /// Add a bias b_i per variable.
    pub biases: bool,
}

pub const COUPLING: usize = 0;
pub const BIAS: usize = 1;

pub const MODEL_FORMAT: &str = "piecewise-lab/boltzmann/1";

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct BoltzmannMachine {
    pub m: usize,
    pub options: BoltzmannOptions,
    pub labels: LabelSet,
    pub model: Model,
}

/// Index of pair (i, j), i < j, in lexicographic order.
pub fn pair_index(m: usize, i: usize, j: usize) -> usize {
    i * m - i * (i + 1) / 2 + (j - i - 1)
}

impl BoltzmannMachine {
    pub fn new(m: usize, options: BoltzmannOptions) -> Result<BoltzmannMachine> {
        if m < 2 {
            return Err(Error::invalid(
                "a Boltzmann machine needs at least 2 variables",
            ));
        }
        let mut model = Model::default();
        model.add_template(
            "coupling",
            vec![2, 2],
            vec![NO_COLUMN, NO_COLUMN, NO_COLUMN, 0],
            m * (m - 1) / 2,
            Layout::Dense,
        )?;
        if options.biases {
            model.add_template("bias", vec![2], vec![NO_COLUMN, 0], m, Layout::Dense)?;
        }
        Ok(BoltzmannMachine {
            m,
            options,
            labels: LabelSet::new(vec!["0".into(), "1".into()]),
            model,
        })
    }

    pub fn fit(corpus: &Corpus, options: BoltzmannOptions) -> Result<(Self, Vec<Instance>)> {
        let m = corpus.sequences.first().map_or(0, |s| s.len());
        let bm = BoltzmannMachine::new(m, options)?;
        let insts = bm.instances(corpus)?;
        Ok((bm, insts))
    }

    pub fn from_json(value: serde_json::Value) -> serde_json::Result<Self> {
        #[derive(serde::Deserialize)]
        struct File {
            machine: BoltzmannMachine,
        }
        let mut f: File = serde_json::from_value(value)?;
        f.machine.labels.rebuild_index();
        Ok(f.machine)
    }

    /// The machine's factor graph with no sample attached (for the theory: enumeration over it).
    pub fn graph(&self) -> Result<Instance> {
        self.instance(&Sequence {
            columns: vec![vec![]; self.m],
            ..Default::default()
        })
    }

    /// θ in this model's layout from couplings in pair order (and biases, when the model has them).
    pub fn theta(&self, couplings: &[f64], biases: &[f64]) -> Result<Vec<f64>> {
        let p = self.m * (self.m - 1) / 2;
        if couplings.len() != p {
            return Err(Error::invalid(format!(
                "{} variables have {p} couplings, got {}",
                self.m,
                couplings.len()
            )));
        }
        let mut theta = couplings.to_vec();
        if self.options.biases {
            theta.extend((0..self.m).map(|i| biases.get(i).copied().unwrap_or(0.0)));
        }
        Ok(theta)
    }
}

impl Family for BoltzmannMachine {
    fn kind(&self) -> &'static str {
        "boltzmann"
    }
    fn model(&self) -> &Model {
        &self.model
    }
    fn labels(&self, _inst: &Instance, _v: u32) -> &LabelSet {
        &self.labels
    }
    fn read(&self, path: &Path) -> Result<Corpus> {
        read_samples(path)
    }
    fn check(&self, corpus: &Corpus) -> Result<()> {
        if let Some(s) = corpus.sequences.iter().find(|s| s.len() != self.m) {
            return Err(Error::parse(
                &corpus.path,
                s.line,
                format!(
                    "{} values, but the machine has {} variables",
                    s.len(),
                    self.m
                ),
            ));
        }
        Ok(())
    }
    fn instance(&self, item: &Sequence) -> Result<Instance> {
        let m = self.m;
        let mut b = InstanceBuilder::new(&self.model);
        for _ in 0..m {
            b.add_var(2);
        }
        for i in 0..m {
            for j in i + 1..m {
                b.add_factor(
                    COUPLING,
                    &[i as u32, j as u32],
                    &[(pair_index(m, i, j) as u32, 1.0)],
                )?;
            }
        }
        if self.options.biases {
            for i in 0..m {
                b.add_factor(BIAS, &[i as u32], &[(i as u32, 1.0)])?;
            }
        }
        if let Some(g) = self.labels.gold(&item.labels) {
            b.set_gold(g)?;
        }
        Ok(b.finish())
    }
    fn describe(&self) -> String {
        format!(
            "Boltzmann machine: {} binary variables · {} couplings{} · {} parameters",
            self.m,
            self.m * (self.m - 1) / 2,
            if self.options.biases {
                " and biases"
            } else {
                ""
            },
            self.model.n_params
        )
    }
    fn feature_name(&self, t: usize, k: usize) -> String {
        if t == BIAS {
            return format!("x{}", k + 1);
        }
        let (mut i, mut rest) = (0, k);
        while rest >= self.m - 1 - i {
            rest -= self.m - 1 - i;
            i += 1;
        }
        format!("x{}*x{}", i + 1, i + rest + 2)
    }
    fn feature_index(&self, t: usize, name: &str) -> Option<usize> {
        let var = |s: &str| -> Option<usize> {
            s.strip_prefix('x')?
                .parse::<usize>()
                .ok()
                .filter(|&i| (1..=self.m).contains(&i))
        };
        match t {
            BIAS => var(name).map(|i| i - 1),
            _ => {
                let (a, b) = name.split_once('*')?;
                let (i, j) = (var(a)? - 1, var(b)? - 1);
                (i < j).then(|| pair_index(self.m, i, j))
            }
        }
    }
    fn column_name(&self, t: usize, _c: usize) -> String {
        if t == BIAS { "1" } else { "1\t1" }.into()
    }
    fn column_index(&self, t: usize, name: &[&str]) -> Option<usize> {
        match (t, name) {
            (BIAS, ["1"]) | (COUPLING, ["1", "1"]) => Some(0),
            _ => None,
        }
    }
    fn validate(&self) -> std::result::Result<(), String> {
        let m = self.m;
        let pairs = m
            .checked_mul(m.wrapping_sub(1))
            .filter(|_| m >= 2)
            .ok_or_else(|| format!("m is {m}: a Boltzmann machine has 2 or more variables"))?
            / 2;
        if self.labels.names != ["0", "1"] {
            return Err(format!(
                "labels are {:?}, not [\"0\", \"1\"]",
                self.labels.names
            ));
        }
        let mut x = vec![Expected {
            name: "coupling",
            shape: vec![2, 2],
            n_features: pairs,
            tied_to: None,
        }];
        if self.options.biases {
            x.push(Expected {
                name: "bias",
                shape: vec![2],
                n_features: m,
                tied_to: None,
            });
        }
        self.model.expect(&x)?;
        let maps: [&[u32]; 2] = [&[NO_COLUMN, NO_COLUMN, NO_COLUMN, 0], &[NO_COLUMN, 0]];
        for (t, (tp, map)) in self.model.templates.iter().zip(maps).enumerate() {
            if tp.entry_col != map {
                return Err(format!(
                    "template {t} (`{}`): the entry map is not the x_i·x_j indicator",
                    tp.name
                ));
            }
        }
        Ok(())
    }
    fn to_json(&self) -> Result<serde_json::Value> {
        Ok(serde_json::json!({ "format": MODEL_FORMAT, "machine": self }))
    }
    /// Samples one a line; with predictions, the predicted (most probable) assignments.
    fn format(&self, items: &[Sequence], predicted: Option<&[Vec<String>]>) -> String {
        match predicted {
            Some(p) => {
                let pred: Vec<Sequence> = p
                    .iter()
                    .map(|labels| Sequence {
                        labels: labels.clone(),
                        ..Default::default()
                    })
                    .collect();
                format_samples(&pred)
            }
            None => format_samples(items),
        }
    }
    /// θ0 from the `# theta:` (and `# biases:`) comment lines `generate boltzmann` writes.
    fn reference_theta(&self, train: &Path) -> Option<Vec<f64>> {
        let text = crate::util::read_text(train).ok()?;
        let list = |key: &str| -> Option<Vec<f64>> {
            let line = text.lines().find_map(|l| l.trim().strip_prefix(key))?;
            line.split(',').map(|x| x.trim().parse().ok()).collect()
        };
        let couplings = list("# theta:")?;
        let biases = list("# biases:").unwrap_or_default();
        self.theta(&couplings, &biases).ok()
    }

    /// On a circle.
    fn layout(&self, inst: &Instance, _item: &Sequence) -> Vec<[f32; 2]> {
        let n = inst.n_vars().max(1) as f32;
        let r = (n / std::f32::consts::PI).max(1.0);
        (0..inst.n_vars())
            .map(|i| {
                let a = std::f32::consts::TAU * i as f32 / n - std::f32::consts::FRAC_PI_2;
                [r + r * a.cos(), r + r * a.sin()]
            })
            .collect()
    }
}

/// A sample file with its generating parameters as the `# theta:` (and `# biases:`) comments
/// that `reference_theta` reads back, so runs on it report ‖θ̂ − θ0‖.
pub fn samples_with_theta(theta: &[f64], biases: &[f64], samples: &[Sequence]) -> String {
    let join = |v: &[f64]| {
        v.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    let mut text = format!("# theta: {}\n", join(theta));
    if !biases.is_empty() {
        text += &format!("# biases: {}\n", join(biases));
    }
    text + &format_samples(samples)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pair_names_round_trip() {
        let bm = BoltzmannMachine::new(6, BoltzmannOptions::default()).unwrap();
        let mut k = 0;
        for i in 0..6 {
            for j in i + 1..6 {
                assert_eq!(pair_index(6, i, j), k);
                let name = bm.feature_name(COUPLING, k);
                assert_eq!(name, format!("x{}*x{}", i + 1, j + 1));
                assert_eq!(bm.feature_index(COUPLING, &name), Some(k));
                k += 1;
            }
        }
    }
}
