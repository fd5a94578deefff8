//! Model families behind one interface.
//!
//! A family is data — a `ModelSpec` variant in the run spec, in the run layer's registry
//! (`run/registry.rs`) — and code behind [`Family`]. Fitting (label sets, feature dictionaries,
//! templates and the parameter layout from training data) is `ModelSpec::fit` there; everything
//! after it — reading data, unrolling items into [`Instance`]s, naming labels and weights,
//! writing predictions, laying instances out for drawing — goes through the trait, so runs,
//! evaluation, the commands and the GUI never name a concrete family. Adding a family is one
//! file under `graph/` and its lines in the registry.
//!
//! Every family reads its data into a [`Corpus`] of items ([`Sequence`]s): a chain's sentence,
//! a grid's image (cells row-major, `shape` set), a Boltzmann machine's sample (one token per
//! variable, no observations). Metrics over items and tokens then apply to all.

use super::{Instance, LabelSet, Model};
use crate::data::{Corpus, Sequence};
use crate::error::{Error, Result};
use std::path::Path;

/// The largest weight a model file may hold: no trained model comes near it (the prior keeps
/// weights small), and sums of a sequence's log-potentials stay finite below it, so a score is
/// never −∞ by overflow (1e308 once printed a log-likelihood of −inf).
pub const MAX_WEIGHT: f64 = 1e100;

/// The chain left when some of an instance's variables are clamped at given values (a joint
/// tagger's words, a factorial CRF's other layer): one free label per position, scored by dense
/// tables the clamped variables' factors are folded into. The chain engine decodes it
/// (`inference::chain::ChainWork::viterbi_clamped`).
#[derive(Clone, Debug)]
pub struct ClampedChain {
    /// `n × l`: the free label's log score at t.
    pub unary: ndarray::Array2<f64>,
    /// `n × l × l`: the log score of `(y_{t−1}, y_t)` at t ≥ 1 (t = 0's is unused).
    pub pair: ndarray::Array3<f64>,
    /// Every variable's value: the clamped ones at theirs (the free ones are overwritten).
    pub assignment: Vec<u32>,
    /// The variable that position t's free label is.
    pub vars: Vec<u32>,
}

impl ClampedChain {
    /// A chain of `n` free labels with `l` states each, every score 0.
    pub fn zeros(n: usize, l: usize, assignment: Vec<u32>, vars: Vec<u32>) -> ClampedChain {
        ClampedChain {
            unary: ndarray::Array2::zeros((n, l)),
            pair: ndarray::Array3::zeros((n, l, l)),
            assignment,
            vars,
        }
    }

    /// The full assignment with the free labels at `labels` (one per position).
    pub fn with_labels(&self, labels: &[u32]) -> Vec<u32> {
        let mut y = self.assignment.clone();
        for (&v, &s) in self.vars.iter().zip(labels) {
            y[v as usize] = s;
        }
        y
    }
}

/// A fitted model of some family.
pub trait Family: Send + Sync + std::fmt::Debug {
    /// The family's name on the command line (`chain`, `grid`, `boltzmann`).
    fn kind(&self) -> &'static str;
    /// The parameterised templates.
    fn model(&self) -> &Model;
    /// Label set of variable `v` of an instance (families may mix label sets).
    fn labels(&self, inst: &Instance, v: u32) -> &LabelSet;
    /// Reads a data set in the family's format (test data, data to predict or score).
    fn read(&self, path: &Path) -> Result<Corpus>;
    /// Checks that a data set fits the model (columns, sizes) before it is unrolled.
    fn check(&self, corpus: &Corpus) -> Result<()>;
    /// Unrolls one item; gold labels are attached when it has them and every one is known.
    fn instance(&self, item: &Sequence) -> Result<Instance>;
    /// One line for lists: label sets, features, parameters.
    fn describe(&self) -> String;
    /// Name of feature `k` of template `t` (the weights TSV).
    fn feature_name(&self, t: usize, k: usize) -> String;
    fn feature_index(&self, t: usize, name: &str) -> Option<usize>;
    /// Name of column `c` of template `t`: one label per variable, tab-separated (weights TSV).
    fn column_name(&self, t: usize, c: usize) -> String;
    fn column_index(&self, t: usize, name: &[&str]) -> Option<usize>;
    /// The family's `model.json` (with its `format`).
    fn to_json(&self) -> Result<serde_json::Value>;
    /// Checks the family's label sets, dictionaries and options against its templates (after
    /// [`Model::validate`]), so that a damaged `model.json` is refused when it is loaded; the
    /// message names the field.
    fn validate(&self) -> std::result::Result<(), String>;
    /// Items in the family's data format, each token's predicted label appended when given.
    fn format(&self, items: &[Sequence], predicted: Option<&[Vec<String>]>) -> String;
    /// Where to draw each variable, in cell units (x right, y down).
    fn layout(&self, inst: &Instance, item: &Sequence) -> Vec<[f32; 2]>;

    /// The parameters that generated a training file, when it records them (synthetic data), in
    /// this model's layout: runs then report `‖θ̂ − θ0‖`.
    fn reference_theta(&self, _train: &Path) -> Option<Vec<f64>> {
        None
    }

    /// 003 §3's parameter subsets s, each calibrated by its own factor α_s in two-stage
    /// training: their names and each weight's subset. By default one per template that owns
    /// weights (a tied template reads another's).
    fn parameter_subsets(&self) -> ParameterSubsets {
        ParameterSubsets::per_template(self.model())
    }

    /// An assignment's labels per token of the item (default: every variable's label).
    fn token_labels(&self, inst: &Instance, y: &[u32]) -> Vec<String> {
        y.iter()
            .enumerate()
            .map(|(v, &i)| self.labels(inst, v as u32).names[i as usize].clone())
            .collect()
    }

    /// A variable's name in drawings and captions (`y3`; a factorial CRF's `w1`/`y1`).
    fn var_name(&self, v: u32) -> String {
        format!("y{v}")
    }

    /// Names of the label layers beside the primary one, matching [`Sequence::layers`] (a
    /// factorial CRF's `pos`); evaluation scores each.
    fn extra_layers(&self) -> Vec<String> {
        vec![]
    }

    /// An assignment's labels per extra layer (`[layer][token]`).
    fn extra_labels(&self, _inst: &Instance, _y: &[u32]) -> Vec<Vec<String>> {
        vec![]
    }

    /// What `predict` writes per token: the primary labels, or every layer's (space-separated,
    /// in the data's column order) for multi-layer families.
    fn output_labels(&self, inst: &Instance, y: &[u32]) -> Vec<String> {
        self.token_labels(inst, y)
    }

    /// Test-time decoding for families whose task conditions on part of the item (a generative
    /// chain tags given its words): the chain of the free labels left with the rest clamped,
    /// which the chain engine decodes; `None` leaves it to the generic decoders.
    fn clamped_chain(
        &self,
        _inst: &Instance,
        _item: &Sequence,
        _phi: &[f64],
    ) -> Option<ClampedChain> {
        None
    }

    /// Instances of every item of a data set, unrolled in parallel; an error is the first in
    /// file order, naming the item's line.
    fn instances(&self, corpus: &Corpus) -> Result<Vec<Instance>> {
        use rayon::prelude::*;
        self.check(corpus)?;
        let all: Vec<Result<Instance>> = corpus
            .sequences
            .par_iter()
            .enumerate()
            .map(|(i, s)| {
                let mut inst = self
                    .instance(s)
                    .map_err(|e| Error::parse(&corpus.path, s.line.max(1), e.to_string()))?;
                inst.id = i as u64;
                Ok(inst)
            })
            .collect();
        all.into_iter().collect()
    }
}

/// Column data with each token's predicted labels appended when given (CoNLL families).
pub fn format_columns(items: &[Sequence], predicted: Option<&[Vec<String>]>) -> String {
    match predicted {
        Some(p) => crate::data::conll::format_conll(items, &[p.to_vec()]),
        None => crate::data::conll::format_conll(items, &[]),
    }
}

/// Positions of `width` variables drawn as columns: variable i at (i / width, i % width).
pub fn ladder_layout(n_vars: usize, width: usize) -> Vec<[f32; 2]> {
    (0..n_vars)
        .map(|i| [(i / width) as f32, (i % width) as f32])
        .collect()
}

/// The weights as TSV, one a line: `TEMPLATE<TAB>FEATURE<TAB>COLUMN…<TAB>WEIGHT`, where the
/// column is one label per variable of the template (a chain's `state F LABEL W` and
/// `transition F PREV LABEL W`). Templates that read another's weights are skipped.
pub fn dump_weights(family: &dyn Family, theta: &[f64]) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    for (t, tp) in family.model().templates.iter().enumerate() {
        if tp.tied_to.is_some() {
            continue;
        }
        let cols: Vec<String> = (0..tp.n_cols).map(|c| family.column_name(t, c)).collect();
        // The feature's name once per feature, not per weight.
        let mut feature = (usize::MAX, String::new());
        for_each_weight(tp, theta, |k, c, w| {
            if feature.0 != k {
                feature = (k, family.feature_name(t, k));
            }
            let _ = writeln!(o, "{}\t{}\t{}\t{w}", tp.name, feature.1, cols[c]);
        });
    }
    o
}

/// Calls `visit(feature, column, weight)` for every weight of template `tp` in θ, feature by
/// feature: a dense block read row by row as a view, a sparse one by its stored columns.
fn for_each_weight(
    tp: &super::FactorTemplate,
    theta: &[f64],
    mut visit: impl FnMut(usize, usize, f64),
) {
    if let Some(block) = tp.block(theta) {
        for (k, row) in block.outer_iter().enumerate() {
            for (c, &w) in row.iter().enumerate() {
                visit(k, c, w);
            }
        }
        return;
    }
    for k in 0..tp.n_features {
        for c in 0..tp.n_cols {
            if let Some(i) = tp.param_index(k, c) {
                visit(k, c, theta[i]);
            }
        }
    }
}

/// θ for `to` from the weights `theta` of another model `from`, matched by template, feature
/// and label names — what `--init-from` starts a run from, and what [`dump_weights`] then
/// [`read_weights`] give, without the text: weights `to` lacks are dropped, weights `from`
/// lacks start at 0. `source` names the other run in errors.
pub fn transfer_weights(
    from: &dyn Family,
    theta: &[f64],
    to: &dyn Family,
    source: &str,
) -> Result<Vec<f64>> {
    let dst = to.model();
    let mut out = vec![0.0; dst.n_params];
    for (t, tp) in from.model().templates.iter().enumerate() {
        if tp.tied_to.is_some() {
            continue;
        }
        let Some(t2) = dst
            .templates
            .iter()
            .position(|x| x.name == tp.name && x.tied_to.is_none())
        else {
            continue;
        };
        let tp2 = &dst.templates[t2];
        if tp.shape.len() != tp2.shape.len() && tp.n_params() > 0 {
            return Err(Error::invalid(format!(
                "{source}: template {} names {} labels per weight, this model's {}",
                tp.name,
                tp.shape.len(),
                tp2.shape.len()
            )));
        }
        let cols: Vec<Option<usize>> = (0..tp.n_cols)
            .map(|c| {
                let name = from.column_name(t, c);
                to.column_index(t2, &name.split('\t').collect::<Vec<_>>())
            })
            .collect();
        let rows: Vec<Option<usize>> = (0..tp.n_features)
            .map(|k| to.feature_index(t2, &from.feature_name(t, k)))
            .collect();
        for_each_weight(tp, theta, |k, c, w| {
            if let Some(j) = rows[k]
                .zip(cols[c])
                .and_then(|(k2, c2)| tp2.param_index(k2, c2))
            {
                out[j] = w;
            }
        });
    }
    Ok(out)
}

/// Reads weights in the [`dump_weights`] format; templates, features and labels the model lacks
/// are ignored, missing weights are 0. Malformed lines are errors naming `file` and the line.
pub fn read_weights(family: &dyn Family, text: &str, file: &str) -> Result<Vec<f64>> {
    let model = family.model();
    let mut theta = vec![0.0; model.n_params];
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() < 4 {
            return Err(Error::parse(
                file,
                line_no,
                "expected TEMPLATE<TAB>FEATURE<TAB>COLUMN…<TAB>WEIGHT",
            ));
        }
        let w_text = f[f.len() - 1].trim();
        let w: f64 = w_text
            .parse()
            .ok()
            .filter(|w: &f64| w.is_finite())
            .ok_or_else(|| {
                Error::parse(
                    file,
                    line_no,
                    format!("bad weight {w_text:?}: not a finite number"),
                )
            })?;
        if w.abs() > MAX_WEIGHT {
            return Err(Error::parse(
                file,
                line_no,
                format!("weight {w_text}: beyond ±{MAX_WEIGHT:e}, where sums of log-potentials overflow"),
            ));
        }
        let Some(t) = model
            .templates
            .iter()
            .position(|tp| tp.name == f[0] && tp.tied_to.is_none())
        else {
            continue;
        };
        let tp = &model.templates[t];
        let col = &f[2..f.len() - 1];
        if col.len() != tp.shape.len() {
            return Err(Error::parse(
                file,
                line_no,
                format!(
                    "template {} names {} labels per weight, got {}",
                    tp.name,
                    tp.shape.len(),
                    col.len()
                ),
            ));
        }
        let idx = family
            .feature_index(t, f[1])
            .zip(family.column_index(t, col))
            .and_then(|(k, c)| tp.param_index(k, c));
        if let Some(j) = idx {
            theta[j] = w;
        }
    }
    Ok(theta)
}

/// A partition of θ into named subsets (003 §3's α_s Λ_s).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ParameterSubsets {
    pub names: Vec<String>,
    /// The subset of each weight, by index into `names`.
    pub of: Vec<u32>,
}

impl ParameterSubsets {
    /// One subset per template that owns weights.
    pub fn per_template(model: &Model) -> ParameterSubsets {
        let mut out = ParameterSubsets {
            names: vec![],
            of: vec![0; model.n_params],
        };
        for t in model.templates.iter().filter(|t| t.tied_to.is_none()) {
            let n = t.n_params();
            if n == 0 {
                continue;
            }
            let id = out.names.len() as u32;
            out.names.push(t.name.clone());
            out.of[t.offset..t.offset + n].fill(id);
        }
        out
    }

    /// Splits template `t`'s weights by feature: feature k's weights go to subset
    /// `name(k)` (subsets named after the template and that name, in order of first use).
    pub fn split_template(&mut self, model: &Model, t: usize, name: impl Fn(usize) -> String) {
        let tpl = &model.templates[t];
        let Some(base) = self.names.iter().position(|n| *n == tpl.name) else {
            return;
        };
        let mut ids: std::collections::HashMap<String, u32> = Default::default();
        for k in 0..tpl.n_features {
            let (a, b) = tpl.row_range(k);
            if a == b {
                continue;
            }
            let key = format!("{}:{}", tpl.name, name(k));
            let next = self.names.len() as u32;
            let id = *ids.entry(key.clone()).or_insert_with(|| {
                self.names.push(key);
                next
            });
            self.of[tpl.offset + a as usize..tpl.offset + b as usize].fill(id);
        }
        // The whole template's subset is empty now: drop it and renumber.
        self.names.remove(base);
        for s in &mut self.of {
            if *s > base as u32 {
                *s -= 1;
            }
        }
    }
}
