//! The Boltzmann chain MRF of 004 §8.3.1 (Fig. 8): a generative chain over labels y_t and
//! words x_t, `p(x, y) ∝ exp(s[y_1] + Σ_t A[y_{t−1}, y_t] + Σ_t B[y_t, x_t])`. Only the start
//! state is given (`s` is A's row for it); every label and every word is modelled, so the
//! likelihood normalises over all label *and* word sequences of the item's length.
//!
//! Variables are laid out by position — label y_t is variable 2t, word x_t is 2t + 1 — so
//! k-th order pseudolikelihood takes k consecutive (label, word) pairs: p(X_2, Y_2 | Y_1, Y_3),
//! p(X_2, X_3, Y_2, Y_3 | Y_1, Y_4), …, the components of §8.3.1. The word vocabulary is the
//! training vocabulary plus `<unk>`, which stands for every word seen fewer than `min_count`
//! times in training (and every unseen word at test time); with `vocabulary`, the words of that
//! file join it at any count — 004 models "each of the possible 21,589 tokens" of CoNLL-2000,
//! so a word unseen in training is its own outcome with untrained weights, not `<unk>`. At test time the task is tagging:
//! labels are decoded by Viterbi given the words; the held-out log-likelihood is log p(x, y).

use super::family::{ClampedChain, Family};
use super::{Expected, Instance, InstanceBuilder, LabelSet, Layout, Model};
use crate::data::{read_corpus, Corpus, Sequence};
use crate::error::{Error, Result};
use std::path::Path;

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct BoltzmannChainOptions {
    /// Training words seen fewer times than this become `<unk>` (1: only unseen words do).
    pub min_count: usize,
    /// The words of this CoNLL file (first column) join the vocabulary whatever their count.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vocabulary: Option<std::path::PathBuf>,
}

impl Default for BoltzmannChainOptions {
    fn default() -> Self {
        BoltzmannChainOptions {
            min_count: 1,
            vocabulary: None,
        }
    }
}

pub const START: usize = 0;
pub const TRANSITION: usize = 1;
pub const EMISSION: usize = 2;

pub const UNK: &str = "<unk>";

pub const MODEL_FORMAT: &str = "piecewise-lab/boltzmann-chain/1";

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct BoltzmannChain {
    pub options: BoltzmannChainOptions,
    pub labels: LabelSet,
    pub words: LabelSet,
    pub model: Model,
}

impl BoltzmannChain {
    pub fn new(labels: LabelSet, words: LabelSet, options: BoltzmannChainOptions) -> Result<Self> {
        let (k, v) = (labels.len(), words.len());
        if k == 0 || v == 0 {
            return Err(Error::invalid("a Boltzmann chain needs labels and words"));
        }
        let mut model = Model::default();
        model.add_full_template("start", vec![k], 1, Layout::Dense)?;
        model.add_full_template("transition", vec![k, k], 1, Layout::Dense)?;
        model.add_full_template("emission", vec![k, v], 1, Layout::Dense)?;
        Ok(BoltzmannChain {
            options,
            labels,
            words,
            model,
        })
    }

    /// Label set from the last column, vocabulary from the first, of the training data.
    pub fn fit(corpus: &Corpus, options: BoltzmannChainOptions) -> Result<(Self, Vec<Instance>)> {
        if let Some(s) = corpus.sequences.iter().find(|s| !s.has_labels()) {
            return Err(Error::parse(
                &corpus.path,
                s.line,
                "a Boltzmann chain trains on labelled sentences (word … label)",
            ));
        }
        let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
        let mut labels = std::collections::BTreeSet::new();
        for s in &corpus.sequences {
            for (cols, l) in s.columns.iter().zip(&s.labels) {
                *counts.entry(Self::word_of(cols)).or_default() += 1;
                labels.insert(l.clone());
            }
        }
        let mut words: std::collections::BTreeSet<String> = counts
            .iter()
            .filter(|&(_, &c)| c >= options.min_count)
            .map(|(w, _)| w.to_string())
            .collect();
        if let Some(v) = &options.vocabulary {
            let extra = read_corpus(v)?;
            for s in &extra.sequences {
                for cols in &s.columns {
                    words.insert(Self::word_of(cols).to_string());
                }
            }
        }
        words.remove(UNK);
        let mut words: Vec<String> = words.into_iter().collect();
        words.push(UNK.into());
        let bc = BoltzmannChain::new(
            LabelSet::new(labels.into_iter().collect()),
            LabelSet::new(words),
            options,
        )?;
        let insts = bc.instances(corpus)?;
        Ok((bc, insts))
    }

    fn word_of(cols: &[String]) -> &str {
        cols.first().map_or("", |w| w.as_str())
    }

    /// Index of a word, `<unk>` for words outside the vocabulary.
    pub fn word(&self, w: &str) -> u32 {
        self.words
            .get(w)
            .or_else(|| self.words.get(UNK))
            .expect("the vocabulary holds <unk>")
    }

    pub fn from_json(value: serde_json::Value) -> serde_json::Result<Self> {
        #[derive(serde::Deserialize)]
        struct File {
            chain: BoltzmannChain,
        }
        let mut f: File = serde_json::from_value(value)?;
        f.chain.labels.rebuild_index();
        f.chain.words.rebuild_index();
        Ok(f.chain)
    }
}

impl Family for BoltzmannChain {
    fn kind(&self) -> &'static str {
        "boltzmann-chain"
    }
    fn model(&self) -> &Model {
        &self.model
    }
    fn labels(&self, _inst: &Instance, v: u32) -> &LabelSet {
        if v.is_multiple_of(2) {
            &self.labels
        } else {
            &self.words
        }
    }
    fn read(&self, path: &Path) -> Result<Corpus> {
        read_corpus(path)
    }
    fn check(&self, corpus: &Corpus) -> Result<()> {
        if let Some(s) = corpus
            .sequences
            .iter()
            .find(|s| s.columns.iter().any(|c| c.is_empty()))
        {
            return Err(Error::parse(
                &corpus.path,
                s.line,
                "a Boltzmann chain reads the word from the first column; this token has none",
            ));
        }
        Ok(())
    }
    fn instance(&self, item: &Sequence) -> Result<Instance> {
        let n = item.len();
        let (k, v) = (self.labels.len(), self.words.len());
        let mut b = InstanceBuilder::new(&self.model);
        for _ in 0..n {
            b.add_var(k);
            b.add_var(v);
        }
        b.set_position_width(2);
        let one = [(0u32, 1.0)];
        for t in 0..n as u32 {
            if t == 0 {
                b.add_factor(START, &[0], &one)?;
            } else {
                b.add_factor(TRANSITION, &[2 * t - 2, 2 * t], &one)?;
            }
            b.add_factor(EMISSION, &[2 * t, 2 * t + 1], &one)?;
        }
        if item.has_labels() {
            let mut gold = Vec::with_capacity(2 * n);
            let mut known = true;
            for (cols, l) in item.columns.iter().zip(&item.labels) {
                match self.labels.get(l) {
                    Some(y) => gold.push(y),
                    None => known = false,
                }
                gold.push(self.word(Self::word_of(cols)));
            }
            if known {
                b.set_gold(gold)?;
            }
        }
        Ok(b.finish())
    }
    fn describe(&self) -> String {
        format!(
            "Boltzmann chain: {} labels · {} words (with {UNK}) · {} parameters",
            self.labels.len(),
            self.words.len(),
            self.model.n_params
        )
    }
    fn feature_name(&self, _t: usize, _k: usize) -> String {
        "1".into()
    }
    fn feature_index(&self, _t: usize, name: &str) -> Option<usize> {
        (name == "1").then_some(0)
    }
    fn column_name(&self, t: usize, c: usize) -> String {
        let (k, v) = (self.labels.len(), self.words.len());
        let (l, w) = (&self.labels.names, &self.words.names);
        match t {
            START => l[c].clone(),
            TRANSITION => format!("{}\t{}", l[c / k], l[c % k]),
            _ => format!("{}\t{}", l[c / v], w[c % v]),
        }
    }
    fn column_index(&self, t: usize, name: &[&str]) -> Option<usize> {
        let (k, v) = (self.labels.len(), self.words.len());
        match (t, name) {
            (START, [a]) => self.labels.get(a).map(|y| y as usize),
            (TRANSITION, [a, b]) => {
                Some(self.labels.get(a)? as usize * k + self.labels.get(b)? as usize)
            }
            (EMISSION, [a, w]) => {
                Some(self.labels.get(a)? as usize * v + self.words.get(w)? as usize)
            }
            _ => None,
        }
    }
    fn validate(&self) -> std::result::Result<(), String> {
        self.labels.validate("labels")?;
        self.words.validate("words")?;
        let (k, v) = (self.labels.len(), self.words.len());
        if self.words.get(UNK).is_none() {
            return Err(format!("words: the vocabulary has no {UNK}"));
        }
        self.model.expect(&[
            Expected {
                name: "start",
                shape: vec![k],
                n_features: 1,
                tied_to: None,
            },
            Expected {
                name: "transition",
                shape: vec![k, k],
                n_features: 1,
                tied_to: None,
            },
            Expected {
                name: "emission",
                shape: vec![k, v],
                n_features: 1,
                tied_to: None,
            },
        ])
    }
    fn to_json(&self) -> Result<serde_json::Value> {
        Ok(serde_json::json!({ "format": MODEL_FORMAT, "chain": self }))
    }
    fn format(&self, items: &[Sequence], predicted: Option<&[Vec<String>]>) -> String {
        super::family::format_columns(items, predicted)
    }
    /// Labels on the top row, each word below its label.
    fn layout(&self, inst: &Instance, _item: &Sequence) -> Vec<[f32; 2]> {
        super::family::ladder_layout(inst.n_vars(), 2)
    }
    /// Label y_t, word x_t (004 §8.3.1).
    fn var_name(&self, v: u32) -> String {
        format!("{}{}", if v.is_multiple_of(2) { "y" } else { "x" }, v / 2)
    }
    fn token_labels(&self, inst: &Instance, y: &[u32]) -> Vec<String> {
        y.iter()
            .step_by(2)
            .map(|&l| self.labels(inst, 0).names[l as usize].clone())
            .collect()
    }
    /// Tagging: the label chain with the words clamped at the item's words.
    fn clamped_chain(&self, inst: &Instance, item: &Sequence, phi: &[f64]) -> Option<ClampedChain> {
        let n = inst.n_vars() / 2;
        let words: Vec<u32> = item
            .columns
            .iter()
            .map(|c| self.word(Self::word_of(c)))
            .collect();
        let (k, nv) = (self.labels.len(), self.words.len());
        let mut assignment = vec![0u32; 2 * n];
        for (t, &w) in words.iter().enumerate().take(n) {
            assignment[2 * t + 1] = w;
        }
        let vars = (0..n as u32).map(|t| 2 * t).collect();
        let mut c = ClampedChain::zeros(n, k, assignment, vars);
        // Factor order per position: start (t = 0) or transition, then emission.
        let table = |f: usize| inst.table(&inst.factors[f], phi);
        for (t, &w) in words.iter().enumerate().take(n) {
            let (emission, x) = (table(2 * t + 1), w as usize);
            for (y, u) in c.unary.row_mut(t).iter_mut().enumerate() {
                *u = emission[y * nv + x] + if t == 0 { table(0)[y] } else { 0.0 };
            }
            if t > 0 {
                let trans = table(2 * t);
                for (p, v) in c
                    .pair
                    .index_axis_mut(ndarray::Axis(0), t)
                    .iter_mut()
                    .zip(trans)
                {
                    *p = *v;
                }
            }
        }
        Some(c)
    }
}
