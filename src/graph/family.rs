//! Model families behind one interface.
//!
//! A family is data — a [`ModelSpec`] variant in the run spec — and code behind [`Family`]:
//! fitting (label sets, feature dictionaries, templates and the parameter layout from training
//! data) is [`ModelSpec::fit`]; everything after it — reading data, unrolling items into
//! [`Instance`]s, naming labels and weights, saving, writing predictions, laying instances out
//! for drawing — goes through the trait, so runs, evaluation, the commands and the GUI never
//! name a concrete family. Adding a family is one file under `graph/` and one arm here.
//!
//! Every family reads its data into a [`Corpus`] of items ([`Sequence`]s): a chain's sentence,
//! a grid's image (cells row-major, `shape` set), a Boltzmann machine's sample (one token per
//! variable, no observations). Metrics over items and tokens then apply to all.

use super::boltzmann::{BoltzmannMachine, BoltzmannOptions};
use super::boltzmann_chain::{BoltzmannChain, BoltzmannChainOptions};
use super::chain::{ChainCrf, ChainOptions};
use super::factorial::{FactorialCrf, FactorialOptions};
use super::grid::{GridCrf, GridOptions};
use super::{Instance, LabelSet, Model};
use crate::data::{Corpus, FeatureTemplate, Sequence};
use crate::error::{Error, Result};
use std::path::Path;
use std::sync::Arc;

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
    /// Items in the family's data format, each token's predicted label appended when given.
    fn format(&self, items: &[Sequence], predicted: Option<&[Vec<String>]>) -> String;
    /// Where to draw each variable, in cell units (x right, y down).
    fn layout(&self, inst: &Instance, item: &Sequence) -> Vec<[f32; 2]>;

    /// The parameters that generated a training file, when it records them (synthetic data), in
    /// this model's layout: runs then report `‖θ̂ − θ0‖`.
    fn reference_theta(&self, _train: &Path) -> Option<Vec<f64>> {
        None
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
    /// chain tags given its words); `None` leaves it to the generic decoders.
    fn decode_given(&self, _inst: &Instance, _item: &Sequence, _phi: &[f64]) -> Option<Vec<u32>> {
        None
    }

    /// Instances of every item of a data set.
    fn instances(&self, corpus: &Corpus) -> Result<Vec<Instance>> {
        self.check(corpus)?;
        corpus
            .sequences
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let mut inst = self
                    .instance(s)
                    .map_err(|e| Error::parse(&corpus.path, s.line.max(1), e.to_string()))?;
                inst.id = i as u64;
                Ok(inst)
            })
            .collect()
    }
}

/// The families by name, for `--model` and the GUI's picker.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum FamilyKind {
    #[default]
    Chain,
    Grid,
    Boltzmann,
    BoltzmannChain,
    Factorial,
    SkipChain,
}

impl FamilyKind {
    /// Whether the family reads a CRF++ template and chain options (factorisation, extractor).
    pub fn is_chain(&self) -> bool {
        matches!(self, FamilyKind::Chain | FamilyKind::SkipChain)
    }
    pub const ALL: [FamilyKind; 6] = [
        FamilyKind::Chain,
        FamilyKind::SkipChain,
        FamilyKind::Grid,
        FamilyKind::Boltzmann,
        FamilyKind::BoltzmannChain,
        FamilyKind::Factorial,
    ];
    pub fn name(&self) -> &'static str {
        match self {
            FamilyKind::Chain => "chain",
            FamilyKind::Grid => "grid",
            FamilyKind::Boltzmann => "boltzmann",
            FamilyKind::BoltzmannChain => "boltzmann-chain",
            FamilyKind::Factorial => "factorial",
            FamilyKind::SkipChain => "skip-chain",
        }
    }
}

/// The model family of a run and its options, as data.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ModelSpec {
    /// Linear-chain CRF with CRF++ template features.
    LinearChain(ChainOptions),
    /// H×W lattice of labels with per-pixel observations.
    Grid(GridOptions),
    /// Fully connected Boltzmann machine over binary variables (generative).
    Boltzmann(BoltzmannOptions),
    /// Generative chain over labels and words (004 §8.3.1).
    BoltzmannChain(BoltzmannChainOptions),
    /// Two coupled chains, POS tags and NP chunks (000 eq. 40).
    Factorial(FactorialOptions),
    /// A linear chain plus skip edges between identical capitalised words (000 eq. 41); the
    /// chain's options with `skip` set.
    SkipChain(ChainOptions),
}

impl Default for ModelSpec {
    fn default() -> Self {
        ModelSpec::LinearChain(ChainOptions::default())
    }
}

impl ModelSpec {
    pub fn kind(&self) -> FamilyKind {
        match self {
            ModelSpec::LinearChain(_) => FamilyKind::Chain,
            ModelSpec::Grid(_) => FamilyKind::Grid,
            ModelSpec::Boltzmann(_) => FamilyKind::Boltzmann,
            ModelSpec::BoltzmannChain(_) => FamilyKind::BoltzmannChain,
            ModelSpec::Factorial(_) => FamilyKind::Factorial,
            ModelSpec::SkipChain(_) => FamilyKind::SkipChain,
        }
    }

    pub fn name(&self) -> &'static str {
        self.kind().name()
    }

    /// Whether the family reads CRF++ feature templates.
    pub fn uses_template(&self) -> bool {
        matches!(self, ModelSpec::LinearChain(_) | ModelSpec::SkipChain(_))
    }

    /// Reads training data in the family's format.
    pub fn read(&self, path: &Path) -> Result<Corpus> {
        match self {
            ModelSpec::LinearChain(_) => crate::data::read_corpus(path),
            ModelSpec::Grid(_) => crate::data::grid::read_grid(path),
            ModelSpec::Boltzmann(_) => crate::data::samples::read_samples(path),
            ModelSpec::BoltzmannChain(_) => crate::data::read_corpus(path),
            ModelSpec::Factorial(o) => FactorialCrf::read_data(path, o.np_only),
            ModelSpec::SkipChain(_) => crate::data::read_corpus(path),
        }
    }

    /// Fits the family on training data; returns the model and the training instances.
    pub fn fit(
        &self,
        train: &Corpus,
        template: Option<&Path>,
    ) -> Result<(Arc<dyn Family>, Vec<Instance>)> {
        if template.is_some() && !self.uses_template() {
            return Err(Error::invalid(format!(
                "feature templates apply to the chain model, not {}",
                self.name()
            )));
        }
        Ok(match self {
            ModelSpec::LinearChain(o) | ModelSpec::SkipChain(o) => {
                let mut o = o.clone();
                match self {
                    ModelSpec::SkipChain(_) => {
                        o.skip.get_or_insert_with(Default::default);
                    }
                    _ => o.skip = None,
                }
                // Without a template: the CRF++ chunking template on column data; only the
                // always-on transition `B` when the state features come from CRFsuite
                // attributes or the `ner` extractor.
                let attributes = train.sequences.iter().any(|s| !s.attrs.is_empty());
                let template = match template {
                    Some(p) => FeatureTemplate::read(p)?,
                    None if attributes || o.extractor.table().is_some() => {
                        FeatureTemplate::transitions_only()
                    }
                    None => FeatureTemplate::chunking(),
                };
                let (m, i) = ChainCrf::fit(train, template, o)?;
                (Arc::new(m), i)
            }
            ModelSpec::Grid(o) => {
                let (m, i) = GridCrf::fit(train, o.clone())?;
                (Arc::new(m), i)
            }
            ModelSpec::Boltzmann(o) => {
                let (m, i) = BoltzmannMachine::fit(train, o.clone())?;
                (Arc::new(m), i)
            }
            ModelSpec::BoltzmannChain(o) => {
                let (m, i) = BoltzmannChain::fit(train, o.clone())?;
                (Arc::new(m), i)
            }
            ModelSpec::Factorial(o) => {
                let (m, i) = FactorialCrf::fit(train, o.clone())?;
                (Arc::new(m), i)
            }
        })
    }
}

/// Rebuilds a family from its `model.json` (dispatching on `format`).
pub fn from_json(value: serde_json::Value, file: &str) -> Result<Arc<dyn Family>> {
    let format = value
        .get("format")
        .and_then(|f| f.as_str())
        .unwrap_or("")
        .to_string();
    let bad = |e: serde_json::Error| Error::file(file, format!("{format}: {e}"));
    Ok(match format.as_str() {
        super::chain::MODEL_FORMAT => Arc::new(ChainCrf::from_json(value).map_err(bad)?),
        super::grid::MODEL_FORMAT => Arc::new(GridCrf::from_json(value).map_err(bad)?),
        super::boltzmann::MODEL_FORMAT => {
            Arc::new(BoltzmannMachine::from_json(value).map_err(bad)?)
        }
        super::boltzmann_chain::MODEL_FORMAT => {
            Arc::new(BoltzmannChain::from_json(value).map_err(bad)?)
        }
        super::factorial::MODEL_FORMAT => Arc::new(FactorialCrf::from_json(value).map_err(bad)?),
        _ => {
            return Err(Error::file(
                file,
                format!("unknown model format {format:?}"),
            ))
        }
    })
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
        for k in 0..tp.n_features {
            let f = family.feature_name(t, k);
            for (c, cname) in cols.iter().enumerate() {
                if let Some(i) = tp.param_index(k, c) {
                    let _ = writeln!(o, "{}\t{f}\t{cname}\t{}", tp.name, theta[i]);
                }
            }
        }
    }
    o
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
            .map_err(|_| Error::parse(file, line_no, format!("bad weight {w_text:?}")))?;
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

/// Writes `model.json` and `weights.bin` (little-endian f64) into a run directory.
pub fn save(dir: &Path, family: &dyn Family, theta: &[f64]) -> Result<()> {
    let mut bytes = Vec::with_capacity(theta.len() * 8);
    for w in theta {
        bytes.extend_from_slice(&w.to_le_bytes());
    }
    crate::util::write_atomic(&dir.join("weights.bin"), &bytes)?;
    let text =
        serde_json::to_string(&family.to_json()?).map_err(|e| Error::invalid(e.to_string()))?;
    crate::util::write_atomic(&dir.join("model.json"), text.as_bytes())
}

/// Reads a model saved by [`save`] (a run directory).
pub fn load(dir: &Path) -> Result<(Arc<dyn Family>, Vec<f64>)> {
    let mpath = dir.join("model.json");
    if !mpath.exists() {
        return Err(Error::file(
            dir.display().to_string(),
            "no model.json here: not a finished run directory",
        ));
    }
    let value: serde_json::Value = crate::util::read_json(&mpath)?;
    let family = from_json(value, &mpath.display().to_string())?;
    let wpath = dir.join("weights.bin");
    let bytes = std::fs::read(&wpath).map_err(|e| Error::io(&wpath, e))?;
    let n = family.model().n_params;
    if bytes.len() != n * 8 {
        return Err(Error::file(
            wpath.display().to_string(),
            format!("{} bytes, expected {n} weights", bytes.len()),
        ));
    }
    let theta = bytes
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    Ok((family, theta))
}
