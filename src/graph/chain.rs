//! The linear-chain CRF builder: one state factor per position over `y_t` and one transition
//! factor per adjacent pair over `(y_{t-1}, y_t)`; no start or end transitions (the first label is
//! scored by its state factor alone). Features come from a CRF++ template.
//!
//! With [`SkipOptions`] the chain is the skip-chain CRF of 000 eq. 41: a `skip` factor
//! Ψ_uv(y_u, y_v, x) joins every pair of positions holding the same capitalised word (the first
//! column), with the always-on feature `*` and the word's own features (Table 3's per-token
//! features without the window when a built-in extractor is on, else `W=word`).

use super::family::Family;
use super::{Expected, Instance, InstanceBuilder, LabelSet, Layout, Model};
use crate::data::conll::{read_conll, read_conll_with, LabelColumn};
use crate::data::ner::NerFeatures;
use crate::data::{read_corpus, Corpus, FeatureDict, FeatureTemplate, Sequence};
use crate::error::{Error, Result};
use std::path::Path;

/// Name of the always-on per-label bias feature of the state factor.
pub const BIAS_FEATURE: &str = "*";

/// Which feature–column weights exist.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum FeatureSet {
    /// Every feature with every label (CRF++; CRFsuite with possible_states/transitions on).
    All,
    /// Only feature–label pairs seen in training (CRFsuite's default).
    Observed,
}

/// How a chain's score is cut into factors. The model (the distribution) is the same; the
/// pieces that local estimators see differ.
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
pub enum Factorisation {
    /// A state factor per position and a transition factor per adjacent pair.
    #[default]
    Split,
    /// One factor per edge (t−1, t) carrying the transition features and the state features of
    /// position t; position 0 keeps its own state factor (000 Fig. 1, "no unary factors").
    Edge,
    /// As `edge`, but the state features of position t are conjoined with the label *pair*
    /// (y_{t−1}, y_t) rather than with y_t alone — the edge factor Ψ_t(y_t, y_{t−1}, x) of the
    /// papers' GRMM/MALLET models, where every source state has its own observation weights (so
    /// a NOTA term or an edge piece has weights to act on). A different, larger model than
    /// `split`/`edge`; use `--features observed` to keep only the pairs seen in training.
    EdgePair,
    /// As `split`, but each position's state features are cut into one factor per feature
    /// bag — the features of one family, the name up to its first `=` or `:` (a CRF++ template
    /// line `U00:…`, the `ner` table's `W=…`, `SHAPE=…`, every window offset of a family in
    /// one bag; the bias `*` a bag of its own). The same weights and distribution as `split`;
    /// piecewise then trains each bag's classifier p̃(y_t | x_bag) on its own (003 Fig. 2's
    /// "features bagged").
    Bagged,
    /// As `split`, with every active state feature its own factor over y_t: piecewise trains
    /// one classifier per feature (003 Fig. 2's "independently-trained, à la naive Bayes").
    PerFeature,
}

/// The bag of state feature `name` under [`Factorisation::Bagged`]: its family, the name up
/// to the first `=` or `:` (the whole name when it has neither).
pub fn feature_bag(name: &str) -> &str {
    name.find(['=', ':']).map_or(name, |i| &name[..i])
}

/// Where a chain's state features come from, besides CRFsuite attributes in the data.
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
pub enum Extractor {
    /// The CRF++ template alone.
    #[default]
    Template,
    /// The built-in named-entity features of 000 Table 1 ([`crate::data::ner`]) from the first
    /// column and the name lists, plus the template's lines (default template: `B`).
    Ner,
    /// 000 Table 2's noun-phrase features (window ±3), as `ner`.
    Np,
    /// 000 Table 3's seminar features (window ±4, time and date patterns), as `ner`.
    Seminar,
}

impl Extractor {
    /// The built-in feature table, when the extractor is one.
    pub fn table(self) -> Option<crate::data::ner::FeatureTable> {
        use crate::data::ner::FeatureTable;
        match self {
            Extractor::Template => None,
            Extractor::Ner => Some(FeatureTable::Ner),
            Extractor::Np => Some(FeatureTable::Np),
            Extractor::Seminar => Some(FeatureTable::Seminar),
        }
    }
}

/// Default folder of the name lists for the `ner` features.
pub const DEFAULT_LEXICONS: &str = "../shared/data/lexicons";

/// The skip edges of a skip-chain CRF (000 eq. 41).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct SkipOptions {
    /// At most this many skip edges per item, the closest pairs first (0: no limit) — for
    /// documents where one word repeats very often.
    pub max_edges: usize,
    /// What a skip factor's label pair is conjoined with (000 says only "the exponential form
    /// in (2)"). Left out of specs at its default, so older runs' specs still match.
    #[serde(skip_serializing_if = "SkipFeatures::is_word")]
    pub features: SkipFeatures,
}

/// The features of a skip factor Ψ_uv(y_u, y_v, x).
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
pub enum SkipFeatures {
    /// The always-on feature and the repeated word's features (its identity, or the `ner`
    /// table's token features), each with its own weight per label pair.
    #[default]
    Word,
    /// The always-on feature alone: one weight per label pair, the same for every word.
    Bias,
}

impl SkipFeatures {
    fn is_word(&self) -> bool {
        *self == SkipFeatures::Word
    }
}

/// Skip edges of a sequence of words: every pair `u < v` of identical capitalised words, in
/// order.
pub fn skip_edges(words: &[&str]) -> Vec<(u32, u32)> {
    let mut by_word: rustc_hash::FxHashMap<&str, Vec<u32>> = Default::default();
    for (t, w) in words.iter().enumerate() {
        if w.chars().next().is_some_and(|c| c.is_uppercase()) {
            by_word.entry(w).or_default().push(t as u32);
        }
    }
    let mut edges: Vec<(u32, u32)> = by_word
        .values()
        .flat_map(|ps| {
            ps.iter()
                .enumerate()
                .flat_map(move |(i, &u)| ps[i + 1..].iter().map(move |&v| (u, v)))
        })
        .collect();
    edges.sort_unstable();
    edges
}

/// The closest `max_edges` of `edges` (all when 0), in order.
pub fn cap_skip_edges(mut edges: Vec<(u32, u32)>, max_edges: usize) -> Vec<(u32, u32)> {
    if max_edges > 0 && edges.len() > max_edges {
        edges.sort_unstable_by_key(|&(u, v)| (v - u, u));
        edges.truncate(max_edges);
        edges.sort_unstable();
    }
    edges
}

/// Skip edges per item over a training set.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SkipStats {
    pub items: usize,
    pub edges: usize,
    pub max: usize,
    /// Items whose edges `max_edges` cut.
    pub capped: usize,
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct ChainOptions {
    /// Add the always-on per-label bias feature `*` to every state factor.
    pub label_bias: bool,
    /// Keep features seen at least this many times in training.
    pub min_freq: u64,
    pub feature_set: FeatureSet,
    #[serde(default)]
    pub factorisation: Factorisation,
    #[serde(default)]
    pub extractor: Extractor,
    /// The name lists of the `ner` features (default [`DEFAULT_LEXICONS`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lexicons: Option<std::path::PathBuf>,
    /// Skip edges: set for the skip-chain family.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip: Option<SkipOptions>,
}

impl Default for ChainOptions {
    fn default() -> Self {
        ChainOptions {
            label_bias: false,
            min_freq: 1,
            feature_set: FeatureSet::All,
            factorisation: Factorisation::Split,
            extractor: Extractor::Template,
            lexicons: None,
            skip: None,
        }
    }
}

/// A linear-chain CRF: template, labels, feature dictionaries and the parameter layout.
#[derive(Clone, Debug)]
pub struct ChainCrf {
    pub template: FeatureTemplate,
    pub labels: LabelSet,
    pub state_features: FeatureDict,
    pub trans_features: FeatureDict,
    pub model: Model,
    pub options: ChainOptions,
    pub n_obs_columns: usize,
    /// The `ner` features' name lists, when the extractor is `ner`.
    pub ner: Option<NerFeatures>,
    /// The skip factors' features and template, for a skip-chain.
    pub skip_features: FeatureDict,
    pub skip_template: Option<usize>,
    pub skip_stats: SkipStats,
}

/// Template ids inside [`ChainCrf::model`].
pub const STATE: usize = 0;
pub const TRANSITION: usize = 1;
/// With [`Factorisation::Edge`]: the state weights read through an `(y_{t−1}, y_t) → y_t` map.
pub const EDGE_STATE: usize = 2;
/// With [`Factorisation::EdgePair`]: the state features' weights per label pair.
pub const EDGE_PAIR: usize = 2;

/// One sequence's expanded state features by name, in expansion order: (position, name, value)
/// with the names laid end to end in one string.
#[derive(Default)]
struct ExpandedNames {
    text: String,
    items: Vec<(u32, u32, u32, f64)>,
    /// Per position, (id, value) with the ids of the dictionary as the batch began; `u32::MAX`
    /// where the name was not there yet.
    state: PositionFeatures,
    /// Those names: (index in `state`'s pairs, hash, item).
    missing: Vec<(u32, u64, u32)>,
}

impl ExpandedNames {
    fn push(&mut self, t: usize, name: &str, v: f64) {
        let a = self.text.len() as u32;
        self.text.push_str(name);
        self.items.push((t as u32, a, self.text.len() as u32, v));
    }
    fn name(&self, item: u32) -> &str {
        let (_, a, b, _) = self.items[item as usize];
        &self.text[a as usize..b as usize]
    }
    /// Hashes every name and looks it up in `dict` (read only, so batches do this in
    /// parallel), building the sequence's `state` rows for `len` positions.
    fn look_up(&mut self, dict: &FeatureDict, len: usize) {
        let text = &self.text;
        let missing = &mut self.missing;
        let mut found = Vec::with_capacity(self.items.len());
        for (i, &(t, a, b, v)) in self.items.iter().enumerate() {
            let name = &text[a as usize..b as usize];
            let h = crate::data::features::hash(name);
            let id = dict.find_hashed(h, name).unwrap_or_else(|| {
                missing.push((i as u32, h, i as u32));
                u32::MAX
            });
            found.push((t, id, v));
        }
        let (state, order) = PositionFeatures::from_triples(len, found);
        // The missing names' places after the sort by position.
        for m in &mut self.missing {
            m.0 = order[m.0 as usize];
        }
        self.state = state;
    }
}

/// Per position, (feature id, value) pairs laid end to end: a sequence's features in three
/// allocations rather than one per token (issue 46: per-token vectors, grown by doubling, were
/// most of the memory of setting up a large corpus).
#[derive(Clone, Debug, Default)]
struct PositionFeatures {
    /// Position t's pairs are at `start[t]..start[t + 1]`.
    start: Vec<u32>,
    ids: Vec<u32>,
    /// The values, or empty while every value is 1 (binary features, the usual case).
    vals: Vec<f64>,
}

impl PositionFeatures {
    /// From (position, id, value) in any order of positions, kept in order within each; also
    /// returns where each triple went.
    fn from_triples(len: usize, triples: Vec<(u32, u32, f64)>) -> (Self, Vec<u32>) {
        let mut start = vec![0u32; len + 1];
        for &(t, ..) in &triples {
            start[t as usize + 1] += 1;
        }
        for t in 0..len {
            start[t + 1] += start[t];
        }
        let mut next = start.clone();
        let mut ids = vec![0u32; triples.len()];
        let binary = triples.iter().all(|&(.., v)| v == 1.0);
        let mut vals = if binary {
            Vec::new()
        } else {
            vec![0.0; triples.len()]
        };
        let mut order = Vec::with_capacity(triples.len());
        for (t, id, v) in triples {
            let k = next[t as usize] as usize;
            next[t as usize] += 1;
            ids[k] = id;
            if !binary {
                vals[k] = v;
            }
            order.push(k as u32);
        }
        (PositionFeatures { start, ids, vals }, order)
    }

    /// Position by position from `f(t, push)`.
    fn build(len: usize, mut f: impl FnMut(usize, &mut dyn FnMut(u32, f64))) -> Self {
        let mut pf = PositionFeatures {
            start: Vec::with_capacity(len + 1),
            ..Default::default()
        };
        pf.start.push(0);
        for t in 0..len {
            f(t, &mut |id, v| pf.push(id, v));
            pf.start.push(pf.ids.len() as u32);
        }
        pf
    }

    fn push(&mut self, id: u32, v: f64) {
        if v != 1.0 && self.vals.is_empty() {
            self.vals.resize(self.ids.len(), 1.0);
        }
        self.ids.push(id);
        if !self.vals.is_empty() {
            self.vals.push(v);
        }
    }

    fn len(&self) -> usize {
        self.start.len().saturating_sub(1)
    }

    fn range(&self, t: usize) -> std::ops::Range<usize> {
        self.start[t] as usize..self.start[t + 1] as usize
    }

    fn ids(&self, t: usize) -> &[u32] {
        &self.ids[self.range(t)]
    }

    fn pairs(&self, t: usize) -> impl Iterator<Item = (u32, f64)> + '_ {
        let r = self.range(t);
        let vals = &self.vals;
        self.ids[r.clone()]
            .iter()
            .zip(r)
            .map(move |(&id, k)| (id, vals.get(k).copied().unwrap_or(1.0)))
    }

    /// The same positions with each pair mapped (or dropped), and `extra` appended to each.
    fn remap(&self, map: impl Fn(u32) -> Option<u32>, extra: Option<u32>) -> Self {
        PositionFeatures::build(self.len(), |t, push| {
            for (id, v) in self.pairs(t) {
                if let Some(j) = map(id) {
                    push(j, v);
                }
            }
            if let Some(b) = extra {
                push(b, 1.0);
            }
        })
    }
}

/// Expanded features of one sequence as dictionary ids with their values.
struct SeqFeatures {
    state: PositionFeatures,
    /// The transition features at t ≥ 1 (none at t = 0), values 1.
    trans: PositionFeatures,
    /// Skip edges (u, v) with their feature ids.
    skip: Vec<(u32, u32, Vec<u32>)>,
}

/// The extractor's feature table with its name lists, when the options ask for one.
fn load_extractor(corpus: &Corpus, options: &ChainOptions) -> Result<Option<NerFeatures>> {
    let Some(table) = options.extractor.table() else {
        return Ok(None);
    };
    if corpus.n_obs_columns() == 0 {
        return Err(Error::file(
            &corpus.path,
            format!(
                "the {} features read the word in the first column; this data has none",
                table.name()
            ),
        ));
    }
    let dir = options
        .lexicons
        .clone()
        .unwrap_or_else(|| DEFAULT_LEXICONS.into());
    Ok(Some(NerFeatures::load_table(&dir, table)?))
}

/// The labels of the training data in order of first appearance.
fn training_labels(corpus: &Corpus) -> Result<LabelSet> {
    let mut labels = vec![];
    let mut seen = rustc_hash::FxHashSet::default();
    for s in &corpus.sequences {
        if !s.has_labels() {
            return Err(Error::parse(
                &corpus.path,
                s.line,
                "training data needs a label column",
            ));
        }
        for l in &s.labels {
            if seen.insert(l.as_str()) {
                labels.push(l.clone());
            }
        }
    }
    Ok(LabelSet::new(labels))
}

/// The training data's features counted into dictionaries, each sequence's as ids.
struct Counted {
    state: FeatureDict,
    trans: FeatureDict,
    skip: FeatureDict,
    skip_stats: SkipStats,
    raw: Vec<SeqFeatures>,
}

fn count_features(
    corpus: &Corpus,
    template: &FeatureTemplate,
    ner: Option<&NerFeatures>,
    options: &ChainOptions,
) -> Counted {
    let mut c = Counted {
        state: FeatureDict::default(),
        trans: FeatureDict::default(),
        skip: FeatureDict::default(),
        skip_stats: SkipStats::default(),
        raw: Vec::with_capacity(corpus.sequences.len()),
    };
    let mut buf = String::new();
    // Expanding features (formatting their names) and hashing them is most of the work and is
    // independent per sequence: batches are expanded and looked up in the dictionary as it
    // stood before the batch, in parallel; then the names not found are added in file order,
    // so dictionary ids are the same as a serial pass gives, and the counts are taken from the
    // ids at the end, in parallel. A batch bounds the names held.
    const BATCH: usize = 512;
    let mut expanded: Vec<ExpandedNames> = vec![];
    for (i, s) in corpus.sequences.iter().enumerate() {
        if i % BATCH == 0 {
            use rayon::prelude::*;
            let end = (i + BATCH).min(corpus.sequences.len());
            let dict = &c.state;
            corpus.sequences[i..end]
                .par_iter()
                .map(|s| {
                    let mut e = ExpandedNames::default();
                    expand_state_features(template, ner, s, |t, name, v| e.push(t, name, v));
                    e.look_up(dict, s.len());
                    e
                })
                .collect_into_vec(&mut expanded);
            expanded.reverse();
        }
        let mut names = expanded.pop().expect("expanded with its batch");
        for &(k, h, item) in &names.missing {
            let id = c.state.insert_hashed(h, names.name(item));
            names.state.ids[k as usize] = id;
        }
        let mut sf = SeqFeatures {
            state: std::mem::take(&mut names.state),
            trans: PositionFeatures::default(),
            skip: vec![],
        };
        if let Some(o) = &options.skip {
            let (n, all) = expand_skip_features(ner, s, o, |u, v, name| {
                let id = c.skip.count(name);
                match sf.skip.last_mut() {
                    Some(e) if (e.0, e.1) == (u, v) => e.2.push(id),
                    _ => sf.skip.push((u, v, vec![id])),
                }
            });
            c.skip_stats.items += 1;
            c.skip_stats.edges += n;
            c.skip_stats.max = c.skip_stats.max.max(n);
            c.skip_stats.capped += (all > n) as usize;
        }
        let trans = &mut c.trans;
        sf.trans = PositionFeatures::build(s.len(), |t, push| {
            if t > 0 {
                for line in &template.bigram {
                    buf.clear();
                    line.expand_into(s, t, &mut buf);
                    push(trans.count(&buf), 1.0);
                }
            }
        });
        c.raw.push(sf);
    }
    c.state.counts = state_counts(&c.raw, c.state.len());
    c
}

/// How many times each state feature occurs in `raw`: per-thread histograms, added.
fn state_counts(raw: &[SeqFeatures], n: usize) -> Vec<u64> {
    use rayon::prelude::*;
    let block = raw.len().div_ceil(rayon::current_num_threads()).max(1);
    raw.par_chunks(block)
        .map(|seqs| {
            let mut h = vec![0u64; n];
            for &id in seqs.iter().flat_map(|s| &s.state.ids) {
                h[id as usize] += 1;
            }
            h
        })
        .reduce_with(|mut a, b| {
            a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
            a
        })
        .unwrap_or_else(|| vec![0; n])
}

impl Counted {
    /// Drops features seen fewer than `min_freq` times (renumbering the rest) and adds the
    /// always-on label bias when asked.
    fn prune(&mut self, min_freq: u64, label_bias: bool) {
        use rayon::prelude::*;
        let smap = self.state.prune(min_freq);
        let tmap = self.trans.prune(min_freq);
        let bias = label_bias.then(|| self.state.append(BIAS_FEATURE));
        if smap.is_none() && tmap.is_none() && bias.is_none() {
            return;
        }
        self.raw.par_iter_mut().for_each(|sf| {
            let smap = |i: u32| smap.as_ref().map_or(Some(i), |m| m[i as usize]);
            sf.state = sf.state.remap(smap, bias);
            if let Some(m) = &tmap {
                sf.trans = sf.trans.remap(|i| m[i as usize], None);
            }
        });
    }

    /// The state, transition and edge-pair layouts: dense, or only the feature–label pairs
    /// seen with the gold labels.
    fn layouts(&self, gold: &[Vec<u32>], l: usize, options: &ChainOptions) -> [Layout; 3] {
        if options.feature_set == FeatureSet::All {
            return [Layout::Dense, Layout::Dense, Layout::Dense];
        }
        let pairs = options.factorisation == Factorisation::EdgePair;
        let (mut sp, mut tp, mut pp) = (PairSet::default(), PairSet::default(), PairSet::default());
        for (sf, g) in self.raw.iter().zip(gold) {
            for t in 0..g.len() {
                // With label-pair weights, state weights serve position 0 only.
                if !pairs || t == 0 {
                    sp.extend(sf.state.ids(t).iter().map(|&k| (k, g[t])));
                }
                if t > 0 {
                    let c = g[t - 1] * l as u32 + g[t];
                    tp.extend(sf.trans.ids(t).iter().map(|&k| (k, c)));
                    if pairs {
                        pp.extend(sf.state.ids(t).iter().map(|&k| (k, c)));
                    }
                }
            }
        }
        [
            sparse_layout(sp.into_pairs(), self.state.len()),
            sparse_layout(tp.into_pairs(), self.trans.len()),
            sparse_layout(pp.into_pairs(), self.state.len()),
        ]
    }

    /// The skip template's layout (its always-on feature keeps every label pair).
    fn skip_layout(&mut self, gold: &[Vec<u32>], l: usize, feature_set: FeatureSet) -> Layout {
        let bias = self.skip.count(BIAS_FEATURE);
        if feature_set == FeatureSet::All {
            return Layout::Dense;
        }
        let mut pairs: Vec<(u32, u32)> = (0..(l * l) as u32).map(|c| (bias, c)).collect();
        for (sf, g) in self.raw.iter().zip(gold) {
            for (u, v, ids) in &sf.skip {
                let c = g[*u as usize] * l as u32 + g[*v as usize];
                pairs.extend(ids.iter().map(|&k| (k, c)));
            }
        }
        sparse_layout(pairs, self.skip.len())
    }
}

/// (feature, column) pairs collected from every token, deduplicated as they grow: memory
/// follows the distinct pairs (the weights), not the tokens (issue 46: 0.6 GB of pairs at the
/// peak of setting up 2.1 M tokens).
#[derive(Default)]
struct PairSet {
    pairs: Vec<(u32, u32)>,
    /// Length after the last deduplication.
    distinct: usize,
}

impl PairSet {
    fn extend(&mut self, more: impl IntoIterator<Item = (u32, u32)>) {
        self.pairs.extend(more);
        if self.pairs.len() > 2 * self.distinct + (1 << 20) {
            self.pairs.sort_unstable();
            self.pairs.dedup();
            self.distinct = self.pairs.len();
        }
    }
    fn into_pairs(self) -> Vec<(u32, u32)> {
        self.pairs
    }
}

/// The chain's templates: state, transition and the factorisation's edge template.
fn chain_model(c: &Counted, gold: &[Vec<u32>], l: usize, options: &ChainOptions) -> Result<Model> {
    // The label-pair table first: a million labels is refused before any table is laid out.
    crate::graph::check_table("transition", &[l, l], 0, &Layout::Dense)?;
    let [state_layout, trans_layout, pair_layout] = c.layouts(gold, l, options);
    let mut model = Model::default();
    model.add_full_template("state", vec![l], c.state.len(), state_layout)?;
    model.add_full_template("transition", vec![l, l], c.trans.len(), trans_layout)?;
    match options.factorisation {
        Factorisation::Split | Factorisation::Bagged | Factorisation::PerFeature => {}
        Factorisation::Edge => {
            let map = (0..l * l).map(|e| (e % l) as u32).collect();
            model.add_tied_template("edge-state", vec![l, l], map, STATE)?;
        }
        Factorisation::EdgePair => {
            model.add_full_template("edge-pair", vec![l, l], c.state.len(), pair_layout)?;
        }
    }
    Ok(model)
}

/// Calls `f(u, v, name)` for every feature of every skip edge of `seq` that the cap keeps;
/// returns (edges kept, edges before the cap).
fn expand_skip_features(
    ner: Option<&NerFeatures>,
    seq: &Sequence,
    o: &SkipOptions,
    mut f: impl FnMut(u32, u32, &str),
) -> (usize, usize) {
    let words = seq.words();
    let all = skip_edges(&words);
    let total = all.len();
    let edges = cap_skip_edges(all, o.max_edges);
    let mut buf = vec![];
    for &(u, v) in &edges {
        f(u, v, BIAS_FEATURE);
        if o.features == SkipFeatures::Bias {
            continue;
        }
        match ner {
            Some(n) => {
                n.token(words[u as usize], &mut buf);
                for q in &buf {
                    f(u, v, q);
                }
            }
            None => f(u, v, &format!("W={}", words[u as usize])),
        }
    }
    (edges.len(), total)
}

/// Calls `f(t, name, value)` for every state feature of every position of `seq`: the
/// template's unigram lines, the sequence's CRFsuite attributes and the `ner` features.
fn expand_state_features(
    template: &FeatureTemplate,
    ner: Option<&NerFeatures>,
    seq: &Sequence,
    mut f: impl FnMut(usize, &str, f64),
) {
    let mut buf = String::new();
    for t in 0..seq.len() {
        for line in &template.unigram {
            buf.clear();
            line.expand_into(seq, t, &mut buf);
            f(t, &buf, 1.0);
        }
        if let Some(a) = seq.attrs.get(t) {
            for (name, v) in a {
                f(t, name, *v);
            }
        }
    }
    if let Some(n) = ner {
        n.expand(&seq.words(), |t, name| f(t, name, 1.0));
    }
}

/// Refuses a fit whose expanded features would not fit the memory limit: every position gets
/// one feature per template line (and per CRFsuite attribute), each a name of about the line's
/// length with its cells filled (in the dictionary when it is new — counted as if every one
/// were) and an id and value in its sequence's list. A 100,000-line template on a thousand
/// tokens is refused here, before any name is made.
fn check_fit_memory(corpus: &Corpus, template: &FeatureTemplate) -> Result<()> {
    let (mut cells, mut bytes, mut attrs) = (0u64, 0u64, 0u64);
    for s in &corpus.sequences {
        for c in &s.columns {
            cells += c.len() as u64;
            bytes += c.iter().map(|w| w.len() as u64).sum::<u64>();
        }
        attrs += s.attrs.iter().map(|a| a.len() as u64).sum::<u64>();
    }
    let field = (bytes / cells.max(1)) as usize;
    let tokens = corpus.tokens() as u64;
    let lines = (template.unigram.len() + template.bigram.len()) as u64;
    let names: u64 = template
        .unigram
        .iter()
        .chain(&template.bigram)
        .map(|l| l.name_bytes(field) as u64 + 48)
        .sum();
    let obs = crate::memory::product(&[tokens, lines]).saturating_add(attrs);
    let need = crate::memory::product(&[tokens, names])
        .saturating_add(crate::memory::product(&[obs, 16]))
        .saturating_add(crate::memory::product(&[attrs, 64]));
    crate::memory::check(
        need,
        || {
            format!(
                "the features of {} ({tokens} tokens × {lines} template lines{}, names of about \
                 {} bytes)",
                corpus.path,
                if attrs > 0 {
                    format!(" + {attrs} attributes")
                } else {
                    String::new()
                },
                names / lines.max(1)
            )
        },
        "use a shorter template or less data",
    )
}

impl ChainCrf {
    /// Builds labels, dictionaries and the model from training data; returns the training
    /// instances too (their features are expanded once).
    pub fn fit(
        corpus: &Corpus,
        template: FeatureTemplate,
        options: ChainOptions,
    ) -> Result<(ChainCrf, Vec<Instance>)> {
        Self::fit_from(std::borrow::Cow::Borrowed(corpus), template, options)
    }

    /// [`fit`](Self::fit); a corpus handed over is dropped once its features are extracted,
    /// before the instances are assembled.
    pub fn fit_from(
        corpus: std::borrow::Cow<'_, Corpus>,
        template: FeatureTemplate,
        options: ChainOptions,
    ) -> Result<(ChainCrf, Vec<Instance>)> {
        template.check_columns(corpus.n_obs_columns(), &corpus.path)?;
        check_fit_memory(&corpus, &template)?;
        let ner = load_extractor(&corpus, &options)?;
        let labels = training_labels(&corpus)?;
        let mut c = count_features(&corpus, &template, ner.as_ref(), &options);
        c.prune(options.min_freq, options.label_bias);
        let gold: Vec<Vec<u32>> = corpus
            .sequences
            .iter()
            .map(|s| s.labels.iter().map(|x| labels.get(x).unwrap()).collect())
            .collect();
        let l = labels.len();
        let mut model = chain_model(&c, &gold, l, &options)?;
        let skip_template = match options.skip {
            None => None,
            Some(_) => {
                let layout = c.skip_layout(&gold, l, options.feature_set);
                model.add_full_template("skip", vec![l, l], c.skip.len(), layout)?;
                Some(model.templates.len() - 1)
            }
        };
        let n_obs_columns = corpus.n_obs_columns();
        if let std::borrow::Cow::Owned(text) = corpus {
            drop(text);
            crate::util::release_freed_memory();
        }
        let Counted {
            state: state_features,
            trans: trans_features,
            skip: skip_features,
            skip_stats,
            raw,
        } = c;
        let crf = ChainCrf {
            template,
            labels,
            state_features,
            trans_features,
            model,
            options,
            n_obs_columns,
            ner,
            skip_features,
            skip_template,
            skip_stats,
        };
        let instances: Vec<Result<Instance>> = {
            use rayon::prelude::*;
            // Each sequence's expanded features are dropped once its instance is built.
            raw.into_par_iter()
                .zip(gold)
                .enumerate()
                .map(|(i, (sf, g))| {
                    let mut inst = crf.assemble(&sf, Some(g))?;
                    inst.id = i as u64;
                    Ok(inst)
                })
                .collect()
        };
        // (Collected whole, then the first error in file order: the same message every run.)
        let instances = instances.into_iter().collect::<Result<Vec<_>>>()?;
        Ok((crf, instances))
    }

    /// Unrolls a sequence with this model's features (unknown features are ignored). The gold
    /// labels are attached when the sequence has them and all are known labels.
    pub fn instance(&self, seq: &Sequence) -> Result<Instance> {
        let mut buf = String::new();
        let bias = self
            .state_features
            .get(BIAS_FEATURE)
            .filter(|_| self.options.label_bias);
        let mut found = vec![];
        expand_state_features(&self.template, self.ner.as_ref(), seq, |t, name, v| {
            found.extend(self.state_features.get(name).map(|k| (t as u32, k, v)))
        });
        // The bias last at each position, as in training.
        found.extend(
            bias.into_iter()
                .flat_map(|b| (0..seq.len() as u32).map(move |t| (t, b, 1.0))),
        );
        let mut sf = SeqFeatures {
            state: PositionFeatures::from_triples(seq.len(), found).0,
            trans: PositionFeatures::default(),
            skip: vec![],
        };
        if let Some(o) = &self.options.skip {
            expand_skip_features(self.ner.as_ref(), seq, o, |u, v, name| {
                let id = self.skip_features.get(name);
                match sf.skip.last_mut() {
                    Some(e) if (e.0, e.1) == (u, v) => e.2.extend(id),
                    _ => sf.skip.push((u, v, id.into_iter().collect())),
                }
            });
        }
        sf.trans = PositionFeatures::build(seq.len(), |t, push| {
            if t > 0 {
                for line in &self.template.bigram {
                    buf.clear();
                    line.expand_into(seq, t, &mut buf);
                    if let Some(k) = self.trans_features.get(&buf) {
                        push(k, 1.0);
                    }
                }
            }
        });
        self.assemble(&sf, self.labels.gold(&seq.labels))
    }

    fn assemble(&self, sf: &SeqFeatures, gold: Option<Vec<u32>>) -> Result<Instance> {
        let l = self.labels.len();
        let mut b = InstanceBuilder::new(&self.model);
        let n = sf.state.len();
        for _ in 0..n {
            b.add_var(l);
        }
        let mut obs: Vec<(u32, f64)> = Vec::new();
        let mut tobs: Vec<(u32, f64)> = Vec::new();
        for t in 0..n {
            obs.clear();
            obs.extend(sf.state.pairs(t));
            if t > 0 {
                tobs.clear();
                tobs.extend(sf.trans.ids(t).iter().map(|&k| (k, 1.0)));
            }
            let (a, c) = (t as u32 - (t > 0) as u32, t as u32);
            match (self.options.factorisation, t) {
                (Factorisation::Split, _) | (Factorisation::Edge | Factorisation::EdgePair, 0) => {
                    b.add_factor(STATE, &[c], &obs)?;
                    if t > 0 {
                        b.add_factor(TRANSITION, &[a, c], &tobs)?;
                    }
                }
                (Factorisation::Bagged, _) => {
                    // One state factor per bag, the bags in name order (deterministic).
                    let dict = &self.state_features;
                    obs.sort_by(|x, y| {
                        feature_bag(&dict.names[x.0 as usize])
                            .cmp(feature_bag(&dict.names[y.0 as usize]))
                            .then(x.0.cmp(&y.0))
                    });
                    if obs.is_empty() {
                        b.add_factor(STATE, &[c], &obs)?;
                    }
                    for bag in obs.chunk_by(|x, y| {
                        feature_bag(&dict.names[x.0 as usize])
                            == feature_bag(&dict.names[y.0 as usize])
                    }) {
                        b.add_factor(STATE, &[c], bag)?;
                    }
                    if t > 0 {
                        b.add_factor(TRANSITION, &[a, c], &tobs)?;
                    }
                }
                (Factorisation::PerFeature, _) => {
                    if obs.is_empty() {
                        b.add_factor(STATE, &[c], &obs)?;
                    }
                    for o in &obs {
                        b.add_factor(STATE, &[c], std::slice::from_ref(o))?;
                    }
                    if t > 0 {
                        b.add_factor(TRANSITION, &[a, c], &tobs)?;
                    }
                }
                (Factorisation::Edge, _) => {
                    b.add_factor_parts(&[a, c], &[(EDGE_STATE, &obs), (TRANSITION, &tobs)])?;
                }
                (Factorisation::EdgePair, _) => {
                    b.add_factor_parts(&[a, c], &[(EDGE_PAIR, &obs), (TRANSITION, &tobs)])?;
                }
            }
        }
        if let Some(t) = self.skip_template {
            for (u, v, ids) in &sf.skip {
                obs.clear();
                obs.extend(ids.iter().map(|&k| (k, 1.0)));
                b.add_factor(t, &[*u, *v], &obs)?;
            }
        }
        if let Some(g) = gold {
            b.set_gold(g)?;
        }
        Ok(b.finish())
    }

    /// Rebuilds a chain from its `model.json`.
    pub fn from_json(value: serde_json::Value) -> serde_json::Result<ChainCrf> {
        let mut file: ModelFile = serde_json::from_value(value)?;
        file.labels.rebuild_index();
        file.state_features.rebuild_index();
        file.trans_features.rebuild_index();
        let template = FeatureTemplate::parse(&file.template_text, &file.template_source)
            .map_err(serde::de::Error::custom)?;
        if let Some(n) = &mut file.ner {
            n.rebuild_index();
        }
        file.skip_features.rebuild_index();
        Ok(ChainCrf {
            template,
            labels: file.labels,
            state_features: file.state_features,
            trans_features: file.trans_features,
            model: file.model,
            options: file.options,
            n_obs_columns: file.n_obs_columns,
            ner: file.ner,
            skip_features: file.skip_features,
            skip_template: file.skip_template,
            skip_stats: file.skip_stats,
        })
    }

    fn features(&self, t: usize) -> &FeatureDict {
        // (`edge-pair` reads the state features.)
        if Some(t) == self.skip_template {
            &self.skip_features
        } else if t == TRANSITION {
            &self.trans_features
        } else {
            &self.state_features
        }
    }
}

/// `model.json` of a chain: everything but θ.
#[derive(serde::Serialize, serde::Deserialize)]
struct ModelFile {
    format: String,
    template_source: String,
    template_text: String,
    labels: LabelSet,
    state_features: FeatureDict,
    trans_features: FeatureDict,
    options: ChainOptions,
    n_obs_columns: usize,
    model: Model,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ner: Option<NerFeatures>,
    #[serde(default)]
    skip_features: FeatureDict,
    #[serde(default)]
    skip_template: Option<usize>,
    #[serde(default)]
    skip_stats: SkipStats,
}

pub const MODEL_FORMAT: &str = "piecewise-lab/linear-chain/1";

impl Family for ChainCrf {
    fn kind(&self) -> &'static str {
        if self.skip_template.is_some() {
            "skip-chain"
        } else {
            "chain"
        }
    }
    fn model(&self) -> &Model {
        &self.model
    }
    fn labels(&self, _inst: &Instance, _v: u32) -> &LabelSet {
        &self.labels
    }
    /// A seminar folder, or a CoNLL file with the model's observation columns and an optional
    /// label column.
    fn read(&self, path: &Path) -> Result<Corpus> {
        if path.is_dir() || crate::data::crfsuite::is_crfsuite(path) {
            return read_corpus(path);
        }
        let c = read_conll_with(path, LabelColumn::None)?;
        if c.n_columns == self.n_obs_columns + 1 {
            read_conll(path)
        } else if c.n_columns == self.n_obs_columns {
            Ok(c)
        } else {
            Err(Error::file(
                path.display().to_string(),
                format!(
                    "{} columns per token; the model reads {} observation columns (plus an optional label)",
                    c.n_columns, self.n_obs_columns
                ),
            ))
        }
    }
    fn check(&self, corpus: &Corpus) -> Result<()> {
        let n = corpus.n_obs_columns();
        if n != self.n_obs_columns && !corpus.sequences.is_empty() {
            return Err(Error::file(
                &corpus.path,
                format!(
                    "{n} observation columns, but the model was trained on {} (plus the label column)",
                    self.n_obs_columns
                ),
            ));
        }
        Ok(())
    }
    fn instance(&self, item: &Sequence) -> Result<Instance> {
        ChainCrf::instance(self, item)
    }
    fn describe(&self) -> String {
        let skip = match self.skip_template {
            Some(_) => {
                let st = &self.skip_stats;
                format!(
                    " · skip edges per training item: mean {:.1}, max {}{}",
                    st.edges as f64 / st.items.max(1) as f64,
                    st.max,
                    if st.capped > 0 {
                        format!(" ({} items capped)", st.capped)
                    } else {
                        String::new()
                    }
                )
            }
            None => String::new(),
        };
        format!(
            "{}: {} labels · {} state features · {} parameters · templates: {}{skip}",
            if skip.is_empty() {
                "linear chain"
            } else {
                "skip chain"
            },
            self.labels.len(),
            self.state_features.len(),
            self.model.n_params,
            self.model
                .templates
                .iter()
                .map(|t| t.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
    fn feature_name(&self, t: usize, k: usize) -> String {
        self.features(t).names[k].clone()
    }
    /// Per template; with the `bagged` and `per-feature` factorisations the state weights are
    /// split by feature bag too (the pieces' subsets, 003 Fig. 2).
    fn parameter_subsets(&self) -> super::family::ParameterSubsets {
        let mut s = super::family::ParameterSubsets::per_template(&self.model);
        if matches!(
            self.options.factorisation,
            Factorisation::Bagged | Factorisation::PerFeature
        ) {
            let names = &self.state_features.names;
            s.split_template(&self.model, STATE, |k| feature_bag(&names[k]).to_string());
        }
        s
    }
    fn feature_index(&self, t: usize, name: &str) -> Option<usize> {
        self.features(t).get(name).map(|k| k as usize)
    }
    fn column_name(&self, t: usize, c: usize) -> String {
        let (l, names) = (self.labels.len(), &self.labels.names);
        if Some(t) == self.skip_template {
            return format!("{}\t{}", names[c / l], names[c % l]);
        }
        match t {
            TRANSITION => format!("{}\t{}", names[c / l], names[c % l]),
            EDGE_PAIR if self.options.factorisation == Factorisation::EdgePair => {
                format!("{}\t{}", names[c / l], names[c % l])
            }
            _ => names[c].clone(),
        }
    }
    fn column_index(&self, t: usize, name: &[&str]) -> Option<usize> {
        let l = self.labels.len();
        if let (true, [a, b]) = (Some(t) == self.skip_template, name) {
            return Some(self.labels.get(a)? as usize * l + self.labels.get(b)? as usize);
        }
        match (t, name) {
            (TRANSITION, [a, b]) | (EDGE_PAIR, [a, b]) => {
                Some(self.labels.get(a)? as usize * l + self.labels.get(b)? as usize)
            }
            (_, [a]) => self.labels.get(a).map(|y| y as usize),
            _ => None,
        }
    }
    fn validate(&self) -> std::result::Result<(), String> {
        self.labels.validate("labels")?;
        let l = self.labels.len();
        let (ns, nt) = (self.state_features.len(), self.trans_features.len());
        let full = |name, shape, n_features| Expected {
            name,
            shape,
            n_features,
            tied_to: None,
        };
        let mut x = vec![
            full("state", vec![l], ns),
            full("transition", vec![l, l], nt),
        ];
        match self.options.factorisation {
            Factorisation::Split | Factorisation::Bagged | Factorisation::PerFeature => {}
            Factorisation::Edge => x.push(Expected {
                tied_to: Some(STATE),
                ..full("edge-state", vec![l, l], ns)
            }),
            Factorisation::EdgePair => x.push(full("edge-pair", vec![l, l], ns)),
        }
        match (self.options.skip.is_some(), self.skip_template) {
            (false, None) => {}
            (true, Some(t)) if t == x.len() => {
                x.push(full("skip", vec![l, l], self.skip_features.len()))
            }
            (skip, t) => {
                return Err(format!(
                    "skip_template is {t:?}, but the options {} skip edges",
                    if skip { "ask for" } else { "have no" }
                ))
            }
        }
        self.model.expect(&x)?;
        self.template
            .check_columns(self.n_obs_columns, "the model's data")
            .map_err(|e| format!("template: {e}"))?;
        if self.options.extractor.table().is_some() != self.ner.is_some() {
            return Err("ner: the extractor's feature table is missing or not asked for".into());
        }
        Ok(())
    }
    fn to_json(&self) -> Result<serde_json::Value> {
        let file = ModelFile {
            format: MODEL_FORMAT.into(),
            template_source: self.template.source.clone(),
            template_text: self.template.text.clone(),
            labels: self.labels.clone(),
            state_features: self.state_features.clone(),
            trans_features: self.trans_features.clone(),
            options: self.options.clone(),
            n_obs_columns: self.n_obs_columns,
            model: self.model.clone(),
            ner: self.ner.clone(),
            skip_features: self.skip_features.clone(),
            skip_template: self.skip_template,
            skip_stats: self.skip_stats.clone(),
        };
        serde_json::to_value(file).map_err(|e| Error::invalid(e.to_string()))
    }
    fn format(&self, items: &[Sequence], predicted: Option<&[Vec<String>]>) -> String {
        if items.iter().any(|s| !s.attrs.is_empty()) {
            // CRFsuite data: the predicted label replaces the first field.
            let mut out = items.to_vec();
            if let Some(p) = predicted {
                for (s, p) in out.iter_mut().zip(p) {
                    s.labels = p.clone();
                }
            }
            return crate::data::crfsuite::format_crfsuite(&out);
        }
        super::family::format_columns(items, predicted)
    }
    fn layout(&self, inst: &Instance, _item: &Sequence) -> Vec<[f32; 2]> {
        (0..inst.n_vars()).map(|t| [t as f32, 0.0]).collect()
    }
}

/// Sparse layout from (feature, column) pairs: each feature gets the sorted set of its columns.
pub(crate) fn sparse_layout(mut pairs: Vec<(u32, u32)>, n_features: usize) -> Layout {
    pairs.sort_unstable();
    pairs.dedup();
    let mut row_ptr = vec![0u32; n_features + 1];
    for &(k, _) in &pairs {
        row_ptr[k as usize + 1] += 1;
    }
    for k in 0..n_features {
        row_ptr[k + 1] += row_ptr[k];
    }
    Layout::Sparse {
        row_ptr,
        cols: pairs.into_iter().map(|(_, c)| c).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::PositionFeatures;

    #[test]
    fn position_features_keep_each_positions_order_and_their_values() {
        // Triples out of position order; within a position, the order given.
        let triples = vec![(2, 7, 1.0), (0, 3, 1.0), (2, 5, 1.0), (0, 1, 1.0)];
        let (pf, order) = PositionFeatures::from_triples(3, triples);
        assert_eq!(
            (pf.len(), pf.ids(0), pf.ids(1), pf.ids(2)),
            (3, &[3, 1][..], &[][..], &[7, 5][..])
        );
        assert!(pf.vals.is_empty(), "binary features store no values");
        assert_eq!(order, vec![2, 0, 3, 1]);
        // A non-binary value stores them all; remap drops, renumbers and appends.
        let (pf, _) = PositionFeatures::from_triples(2, vec![(1, 4, 0.5), (0, 2, 1.0)]);
        assert_eq!(pf.pairs(1).collect::<Vec<_>>(), vec![(4, 0.5)]);
        let r = pf.remap(|i| (i != 2).then_some(i + 10), Some(99));
        assert_eq!(r.pairs(0).collect::<Vec<_>>(), vec![(99, 1.0)]);
        assert_eq!(r.pairs(1).collect::<Vec<_>>(), vec![(14, 0.5), (99, 1.0)]);
        let b = PositionFeatures::build(2, |t, push| push(t as u32, 1.0));
        assert!(b.vals.is_empty());
        assert_eq!(b.pairs(1).collect::<Vec<_>>(), vec![(1, 1.0)]);
    }
}
