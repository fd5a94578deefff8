//! The two-level factorial CRF of 000 eq. 40 (Sutton et al. 2007): POS tags w_t and noun-phrase
//! chunk labels y_t over one sentence,
//! `p(y, w | x) ∝ Π_t Ψ0(y_t, y_{t−1}, x) Ψ1(w_t, w_{t−1}, x) Ψ2(w_t, y_t, x)`,
//! each factor log-linear in the observation features q_k(x, t) of 000 Table 2
//! ([`FeatureTable::Np`]) plus an always-on feature `*`.
//!
//! Variables are laid out by position — w_t is variable 2t, y_t is 2t + 1 — so an instance is a
//! ladder of (w_t, y_t) pairs: exact inference runs forward–backward over the 45 × 3 joint states
//! of a position ([`crate::graph::ProductLayout`]), and `ml` is exact maximum likelihood, the
//! reference the paper could not afford. Data: CoNLL-2000 lines `word POS chunk`; both the POS
//! and the chunk column are labels ([`Corpus::take_label_columns`]); other chunk types than NP become
//! `O` (000 §5). Evaluation scores the chunks (NP F1) and, as the `pos` layer, the tags.

use super::chain::{sparse_layout, FeatureSet, BIAS_FEATURE, DEFAULT_LEXICONS};
use super::family::{ClampedChain, Family};
use super::{Expected, Instance, InstanceBuilder, LabelSet, Layout, Model};
use crate::data::conll::{read_conll_with, LabelColumn};
use crate::data::ner::{FeatureTable, NerFeatures};
use crate::data::{Corpus, FeatureDict, Sequence};
use crate::error::{Error, Result};
use std::path::Path;

/// Template ids inside [`FactorialCrf::model`].
pub const CHUNK_TRANSITION: usize = 0;
pub const POS_TRANSITION: usize = 1;
pub const COTEMPORAL: usize = 2;

pub const MODEL_FORMAT: &str = "piecewise-lab/factorial/1";

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct FactorialOptions {
    /// Keep noun-phrase chunks only (B-NP, I-NP, O): other chunk types become O (000 §5).
    pub np_only: bool,
    /// Which feature–column weights exist; the always-on feature has every column either way.
    pub feature_set: FeatureSet,
    /// Keep features seen at least this many times in training.
    pub min_freq: u64,
    /// The name lists of Table 2's lexicon features (default `../shared/data/lexicons`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lexicons: Option<std::path::PathBuf>,
    /// Tagged text (`word<TAB>tag`) whose word → tags lexicon gives Table 2's "lexicon of words
    /// with POS T" features (`LEXPOS=T`); it must not overlap the test data.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pos_lexicon: Option<std::path::PathBuf>,
}

impl Default for FactorialOptions {
    fn default() -> Self {
        FactorialOptions {
            np_only: true,
            feature_set: FeatureSet::Observed,
            min_freq: 1,
            lexicons: None,
            pos_lexicon: None,
        }
    }
}

/// A fitted factorial CRF: the two label sets, the feature dictionary and the three templates.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct FactorialCrf {
    pub options: FactorialOptions,
    /// The POS layer (w).
    pub pos: LabelSet,
    /// The chunk layer (y).
    pub chunks: LabelSet,
    pub features: FeatureDict,
    pub lex: NerFeatures,
    pub model: Model,
}

impl FactorialCrf {
    /// Reads `word POS chunk` lines (training and test) or `word` lines (data to tag).
    pub fn read_data(path: &Path, np_only: bool) -> Result<Corpus> {
        // Read once, every column an observation; then the last two become the labels.
        let mut corpus = read_conll_with(path, LabelColumn::None)?;
        match corpus.n_columns {
            1 => {}
            3 => corpus.take_label_columns(2)?,
            n => {
                return Err(Error::file(
                    path.display().to_string(),
                    format!(
                        "{n} columns per token; the factorial CRF reads `word POS chunk` \
                         (CoNLL-2000) or `word` lines"
                    ),
                ))
            }
        }
        if np_only {
            for s in &mut corpus.sequences {
                for l in &mut s.labels {
                    if l != "B-NP" && l != "I-NP" {
                        *l = "O".into();
                    }
                }
            }
        }
        Ok(corpus)
    }

    /// Builds label sets, the feature dictionary and the model from training data; returns the
    /// training instances too.
    pub fn fit(corpus: &Corpus, options: FactorialOptions) -> Result<(Self, Vec<Instance>)> {
        if let Some(s) = corpus
            .sequences
            .iter()
            .find(|s| !s.has_labels() || s.layers.len() != 1)
        {
            return Err(Error::parse(
                &corpus.path,
                s.line,
                "the factorial CRF trains on `word POS chunk` lines",
            ));
        }
        let dir = options
            .lexicons
            .clone()
            .unwrap_or_else(|| DEFAULT_LEXICONS.into());
        let mut lex = NerFeatures::load_table(&dir, FeatureTable::Np)?;
        if let Some(p) = &options.pos_lexicon {
            lex.load_pos_lexicon(p)?;
        }
        let (mut pos, mut chunks) = (vec![], vec![]);
        let mut seen = rustc_hash::FxHashSet::default();
        for s in &corpus.sequences {
            for l in &s.layers[0] {
                if seen.insert(("w", l.as_str())) {
                    pos.push(l.clone());
                }
            }
            for l in &s.labels {
                if seen.insert(("y", l.as_str())) {
                    chunks.push(l.clone());
                }
            }
        }
        let mut features = FeatureDict::default();
        let mut raw: Vec<Vec<Vec<u32>>> = Vec::with_capacity(corpus.sequences.len());
        for s in &corpus.sequences {
            let mut per: Vec<Vec<u32>> = vec![vec![]; s.len()];
            lex.expand(&s.words(), |t, name| per[t].push(features.count(name)));
            raw.push(per);
        }
        let map = features.prune(options.min_freq);
        let bias = features.append(BIAS_FEATURE);
        for per in &mut raw {
            for ids in per.iter_mut() {
                if let Some(m) = &map {
                    ids.retain_mut(|i| m[*i as usize].map(|j| *i = j).is_some());
                }
                ids.push(bias);
            }
        }
        let mut f = FactorialCrf {
            options,
            pos: LabelSet::new(pos),
            chunks: LabelSet::new(chunks),
            features,
            lex,
            model: Model::default(),
        };
        let golds: Vec<Vec<u32>> = corpus
            .sequences
            .iter()
            .map(|s| f.gold(s).expect("labels come from this corpus"))
            .collect();
        let (nw, ny, nk) = (f.pos.len(), f.chunks.len(), f.features.len());
        let shapes = [vec![ny, ny], vec![nw, nw], vec![nw, ny]];
        let layouts: Vec<Layout> = match f.options.feature_set {
            FeatureSet::All => vec![Layout::Dense, Layout::Dense, Layout::Dense],
            FeatureSet::Observed => {
                let mut pairs: [Vec<(u32, u32)>; 3] = Default::default();
                for (per, g) in raw.iter().zip(&golds) {
                    for (t, ids) in per.iter().enumerate() {
                        let (w, y) = (g[2 * t], g[2 * t + 1]);
                        let mut cols = vec![(COTEMPORAL, w * ny as u32 + y)];
                        if t > 0 {
                            let (wp, yp) = (g[2 * t - 2], g[2 * t - 1]);
                            cols.push((CHUNK_TRANSITION, yp * ny as u32 + y));
                            cols.push((POS_TRANSITION, wp * nw as u32 + w));
                        }
                        for (tp, c) in cols {
                            pairs[tp].extend(ids.iter().map(|&k| (k, c)));
                        }
                    }
                }
                // The always-on feature has every column: unseen label pairs get a weight.
                for (tp, shape) in shapes.iter().enumerate() {
                    let n: usize = shape.iter().product();
                    pairs[tp].extend((0..n as u32).map(|c| (bias, c)));
                }
                pairs.into_iter().map(|p| sparse_layout(p, nk)).collect()
            }
        };
        let names = ["chunk-transition", "pos-transition", "pos-chunk"];
        for ((name, shape), layout) in names.iter().zip(shapes).zip(layouts) {
            f.model.add_full_template(name, shape, nk, layout)?;
        }
        let instances = raw
            .iter()
            .zip(golds)
            .enumerate()
            .map(|(i, (per, g))| {
                let mut inst = f.assemble(per, Some(g))?;
                inst.id = i as u64;
                Ok(inst)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok((f, instances))
    }

    /// Gold labels in variable order (w_t, y_t per position), when every one is known.
    fn gold(&self, item: &Sequence) -> Option<Vec<u32>> {
        let pos = self.pos.gold(item.layers.first()?)?;
        let chunks = self.chunks.gold(&item.labels)?;
        (pos.len() == chunks.len()).then(|| {
            pos.iter()
                .zip(&chunks)
                .flat_map(|(&w, &y)| [w, y])
                .collect()
        })
    }

    fn assemble(&self, per: &[Vec<u32>], gold: Option<Vec<u32>>) -> Result<Instance> {
        let (nw, ny) = (self.pos.len(), self.chunks.len());
        let mut b = InstanceBuilder::new(&self.model);
        b.set_position_width(2);
        for _ in per {
            b.add_var(nw);
            b.add_var(ny);
        }
        let mut obs: Vec<(u32, f64)> = vec![];
        for (t, ids) in per.iter().enumerate() {
            obs.clear();
            obs.extend(ids.iter().map(|&k| (k, 1.0)));
            let (w, y) = (2 * t as u32, 2 * t as u32 + 1);
            if t > 0 {
                b.add_factor(CHUNK_TRANSITION, &[y - 2, y], &obs)?;
                b.add_factor(POS_TRANSITION, &[w - 2, w], &obs)?;
            }
            b.add_factor(COTEMPORAL, &[w, y], &obs)?;
        }
        if let Some(g) = gold {
            b.set_gold(g)?;
        }
        Ok(b.finish())
    }

    fn label_set(&self, t: usize, i: usize) -> &LabelSet {
        match (t, i) {
            (CHUNK_TRANSITION, _) | (COTEMPORAL, 1) => &self.chunks,
            _ => &self.pos,
        }
    }
}

impl Family for FactorialCrf {
    fn kind(&self) -> &'static str {
        "factorial"
    }
    fn model(&self) -> &Model {
        &self.model
    }
    fn labels(&self, _inst: &Instance, v: u32) -> &LabelSet {
        if v.is_multiple_of(2) {
            &self.pos
        } else {
            &self.chunks
        }
    }
    fn read(&self, path: &Path) -> Result<Corpus> {
        Self::read_data(path, self.options.np_only)
    }
    fn check(&self, corpus: &Corpus) -> Result<()> {
        if corpus.n_obs_columns() != 1 && !corpus.sequences.is_empty() {
            return Err(Error::file(
                &corpus.path,
                "the factorial CRF reads `word POS chunk` or `word` lines",
            ));
        }
        Ok(())
    }
    fn instance(&self, item: &Sequence) -> Result<Instance> {
        let mut per: Vec<Vec<u32>> = vec![vec![]; item.len()];
        self.lex.expand(&item.words(), |t, name| {
            per[t].extend(self.features.get(name))
        });
        // (Every fitted model has the always-on feature; a model file without it has none.)
        if let Some(bias) = self.features.get(BIAS_FEATURE) {
            for ids in &mut per {
                ids.push(bias);
            }
        }
        self.assemble(&per, self.gold(item))
    }
    fn describe(&self) -> String {
        format!(
            "factorial CRF: {} POS tags × {} chunk labels · {} features · {} parameters{}",
            self.pos.len(),
            self.chunks.len(),
            self.features.len(),
            self.model.n_params,
            match self.lex.pos_lexicon_len() {
                0 => String::new(),
                n => format!(" · POS lexicon of {n} words"),
            }
        )
    }
    fn feature_name(&self, _t: usize, k: usize) -> String {
        self.features.names[k].clone()
    }
    fn feature_index(&self, _t: usize, name: &str) -> Option<usize> {
        self.features.get(name).map(|k| k as usize)
    }
    fn column_name(&self, t: usize, c: usize) -> String {
        let (a, b) = (self.label_set(t, 0), self.label_set(t, 1));
        format!("{}\t{}", a.names[c / b.len()], b.names[c % b.len()])
    }
    fn column_index(&self, t: usize, name: &[&str]) -> Option<usize> {
        let (a, b) = (self.label_set(t, 0), self.label_set(t, 1));
        match name {
            [x, y] => Some(a.get(x)? as usize * b.len() + b.get(y)? as usize),
            _ => None,
        }
    }
    fn validate(&self) -> std::result::Result<(), String> {
        self.pos.validate("pos")?;
        self.chunks.validate("chunks")?;
        let (nw, ny, nk) = (self.pos.len(), self.chunks.len(), self.features.len());
        self.model.expect(&[
            Expected {
                name: "chunk-transition",
                shape: vec![ny, ny],
                n_features: nk,
                tied_to: None,
            },
            Expected {
                name: "pos-transition",
                shape: vec![nw, nw],
                n_features: nk,
                tied_to: None,
            },
            Expected {
                name: "pos-chunk",
                shape: vec![nw, ny],
                n_features: nk,
                tied_to: None,
            },
        ])
    }
    fn to_json(&self) -> Result<serde_json::Value> {
        Ok(serde_json::json!({ "format": MODEL_FORMAT, "factorial": self }))
    }
    fn format(&self, items: &[Sequence], predicted: Option<&[Vec<String>]>) -> String {
        super::family::format_columns(items, predicted)
    }
    /// The POS chain on top, the chunk chain below it, the cotemporal factors between them.
    fn layout(&self, inst: &Instance, _item: &Sequence) -> Vec<[f32; 2]> {
        super::family::ladder_layout(inst.n_vars(), 2)
    }
    /// The chunk labels (the scored task).
    fn token_labels(&self, _inst: &Instance, y: &[u32]) -> Vec<String> {
        y.iter()
            .skip(1)
            .step_by(2)
            .map(|&l| self.chunks.names[l as usize].clone())
            .collect()
    }
    /// 000 eq. 40's names: w_t the POS tag, y_t the chunk label.
    fn var_name(&self, v: u32) -> String {
        format!("{}{}", if v.is_multiple_of(2) { "w" } else { "y" }, v / 2)
    }
    fn extra_layers(&self) -> Vec<String> {
        vec!["pos".into()]
    }
    fn extra_labels(&self, _inst: &Instance, y: &[u32]) -> Vec<Vec<String>> {
        vec![y
            .iter()
            .step_by(2)
            .map(|&l| self.pos.names[l as usize].clone())
            .collect()]
    }
    /// Each token's predicted tag and chunk label, as the two columns CoNLL-2000 has.
    fn output_labels(&self, inst: &Instance, y: &[u32]) -> Vec<String> {
        let pos = &self.extra_labels(inst, y)[0];
        pos.iter()
            .zip(self.token_labels(inst, y))
            .map(|(w, c)| format!("{w} {c}"))
            .collect()
    }
}

impl FactorialCrf {
    /// Rebuilds a factorial CRF from its `model.json`.
    pub fn from_json(value: serde_json::Value) -> serde_json::Result<FactorialCrf> {
        let v = value
            .get("factorial")
            .cloned()
            .ok_or_else(|| serde::de::Error::missing_field("factorial"))?;
        let mut f: FactorialCrf = serde_json::from_value(v)?;
        f.pos.rebuild_index();
        f.chunks.rebuild_index();
        f.features.rebuild_index();
        f.lex.rebuild_index();
        Ok(f)
    }
}

/// The chunk chain left with every POS variable (even index: w_t) clamped at its gold tag: the
/// chunk variables (odd: y_t) are its free labels, decoded exactly by the chain engine —
/// decoding one layer given the other (000 Table 5's analysis of the estimators' chunk terms).
pub fn chunks_given_gold_pos(inst: &Instance, phi: &[f64]) -> Result<ClampedChain> {
    let gold = inst
        .gold
        .as_deref()
        .ok_or_else(|| Error::invalid("gold tags needed"))?;
    let n = inst.card.len() / 2;
    let k = if n == 0 { 0 } else { inst.card[1] as usize };
    let vars = (0..n as u32).map(|t| 2 * t + 1).collect();
    let mut c = ClampedChain::zeros(n, k, gold.to_vec(), vars);
    let mut y = gold.to_vec();
    // Per position t: the chunk-only scores of y_t (unary) and of (y_{t−1}, y_t) (pair).
    for f in &inst.factors {
        let scope = inst.scope(f);
        let chunks: Vec<u32> = scope.iter().copied().filter(|v| v % 2 == 1).collect();
        let off = inst.table_offset(f);
        match chunks.as_slice() {
            [] => {}
            [v] => {
                let t = (*v / 2) as usize;
                for (s, u) in c.unary.row_mut(t).iter_mut().enumerate() {
                    y[*v as usize] = s as u32;
                    *u += phi[off + inst.entry(f, &y)];
                }
                y[*v as usize] = gold[*v as usize];
            }
            [a, b] if b / 2 == a / 2 + 1 => {
                let t = (*b / 2) as usize;
                for p in 0..k {
                    for s in 0..k {
                        y[*a as usize] = p as u32;
                        y[*b as usize] = s as u32;
                        c.pair[(t, p, s)] += phi[off + inst.entry(f, &y)];
                    }
                }
                y[*a as usize] = gold[*a as usize];
                y[*b as usize] = gold[*b as usize];
            }
            _ => return Err(Error::invalid("not the factorial CRF's factors")),
        }
    }
    Ok(c)
}
