//! Parsing with a trained grammar: the grammar's options in a run spec and their bounds,
//! reading treebanks and token lines, choosing the estimator, and parsing sentences (CKY, with
//! a flat tree where the grammar cannot span a sentence). The run layer trains and opens
//! grammar runs (`run::grammar`); EVALB scores their parses (`eval::parsing`).

use super::chart::{viterbi, ChartWork};
use super::train::GrammarEstimator;
use super::{Grammar, GrammarOptions, Sentence};
use crate::data::treebank::{debinarise, normalise, read_treebank, Tree};
use crate::error::{Error, Result};
use crate::estimators::EstimatorSpec;
use rayon::prelude::*;
use std::path::Path;

/// `grammar.json`'s format.
pub const MODEL_FORMAT: &str = "piecewise-lab/grammar/1";

/// The grammar family's options in a run spec.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct GrammarRunOptions {
    pub grammar: GrammarOptions,
    /// The discriminative objectives train on trees of at most this many words, punctuation
    /// aside (001 §5: 15); `None`: every tree.
    pub max_words: Option<usize>,
    /// Read the rules, the PCFG's counts and the lexicon off every training tree (else the
    /// rules off the short ones only; the lexicon always reads every tree).
    pub grammar_on_all: bool,
    /// PT-CFG (error-driven): choose the ratio threshold that selects about this many NOTA
    /// edges per training sentence (001 reports ≈ 160); `None` uses the estimator's threshold.
    pub nota_per_sentence: Option<f64>,
    /// Test sentences (and `parse`'s) of more words than this, punctuation included, are not
    /// parsed but skipped and counted, as EVALB's cut-off leaves sentences out: CKY takes
    /// O(n³) time and O(n²) memory (a 400-word sentence took 126 s and 4 GB). `ml` and `nota`
    /// also leave such training trees out, since they build the full chart over every training
    /// sentence (with `max_words` unset nothing else bounds them). Left out of `spec.json` at
    /// its default, so that specs written before it stay as they were.
    #[serde(skip_serializing_if = "is_default_max_length")]
    pub max_length: usize,
}

/// [`GrammarRunOptions::max_length`]'s default.
pub const DEFAULT_MAX_LENGTH: usize = 100;
/// The largest `max_length` accepted. What bounds a parse is its chart's memory, checked
/// against the memory limit before each parse ([`check_chart_memory`]: 600 words with the
/// WSJ grammar is about 9 GB); this only keeps the number meaningful.
pub const MAX_LENGTH_LIMIT: usize = 100_000;

fn is_default_max_length(n: &usize) -> bool {
    *n == DEFAULT_MAX_LENGTH
}

/// `n` as a sentence-length bound, or an error naming `what`.
pub fn check_max_length(n: usize, what: &str) -> Result<usize> {
    if (1..=MAX_LENGTH_LIMIT).contains(&n) {
        Ok(n)
    } else {
        Err(Error::invalid(format!(
            "{what}: max-length {n} is not in 1..={MAX_LENGTH_LIMIT} (the chart of an n-word \
             sentence takes O(n²) memory and O(n³) time)"
        )))
    }
}

impl Default for GrammarRunOptions {
    fn default() -> Self {
        GrammarRunOptions {
            grammar: GrammarOptions::default(),
            max_words: Some(15),
            grammar_on_all: true,
            nota_per_sentence: Some(160.0),
            max_length: DEFAULT_MAX_LENGTH,
        }
    }
}

/// The words of a tree left after COLLINS.prm's deletions (punctuation and -NONE-): the length
/// "≤ 15 words" counts.
pub fn bare_length(t: &Tree) -> usize {
    const PUNCT: [&str; 6] = [",", ":", "``", "''", ".", "-NONE-"];
    t.tagged_words()
        .iter()
        .filter(|(tag, _)| !PUNCT.contains(tag))
        .count()
}

/// Every tree of a treebank (a `.mrg` file, a folder of them or a zip), normalised.
pub fn read_trees(path: &Path) -> Result<Vec<Tree>> {
    let mut out = Vec::new();
    for f in read_treebank(path)? {
        for mut t in f.trees {
            normalise(&mut t);
            out.push(t);
        }
    }
    Ok(out)
}

/// The grammar-family estimator a run spec names: `generative`, `memm` (MECFG), `nota`
/// (PT-CFG) or `ml` (the global CRF-CFG).
pub fn estimator_for(spec: &EstimatorSpec, o: &GrammarRunOptions) -> Result<GrammarEstimator> {
    Ok(match spec {
        EstimatorSpec::Generative => GrammarEstimator::Generative,
        EstimatorSpec::Memm => GrammarEstimator::Memm,
        EstimatorSpec::Ml => GrammarEstimator::Ml,
        EstimatorSpec::Nota { weight, .. } if *weight != 1.0 => {
            return Err(Error::invalid(format!(
                "nota-weight {weight}: the grammar's PT-CFG weighs its NOTA edges as 001 does (1)"
            )))
        }
        EstimatorSpec::Nota { selection, .. } => GrammarEstimator::Nota {
            selection: selection.clone(),
            per_sentence: matches!(
                selection,
                crate::estimators::NotaSelection::ErrorDriven { .. }
            )
            .then_some(o.nota_per_sentence)
            .flatten(),
        },
        other => {
            return Err(Error::invalid(format!(
                "the grammar family trains generative, memm (MECFG), nota (PT-CFG) or ml (the \
                 global CRF-CFG), not {}",
                other.name()
            )))
        }
    })
}

/// Parses every sentence (rayon across sentences, one chart each thread); a sentence the
/// grammar cannot span gets a flat tree over its most frequent tags. Returns the trees and how
/// many fell back.
pub fn parse_all(
    g: &Grammar,
    theta: &[f64],
    est: &GrammarEstimator,
    test: &[Sentence],
) -> Result<(Vec<Tree>, usize)> {
    check_chart_memory(g, test.iter().map(|s| s.forms.len()).max().unwrap_or(0))?;
    let scoring = est.scoring();
    let out: Vec<(Tree, bool)> = test
        .par_iter()
        .map_init(ChartWork::default, |w, s| {
            match viterbi(g, theta, s, scoring, w) {
                Some((t, _)) => (debinarise(&t), false),
                None => (flat(g, s), true),
            }
        })
        .collect();
    let failed = out.iter().filter(|(_, f)| *f).count();
    Ok((out.into_iter().map(|(t, _)| t).collect(), failed))
}

/// Refuses to parse a sentence of `longest` words when the charts (one a thread) would not
/// fit the memory limit: the bound on sentence length is the chart's memory.
pub fn check_chart_memory(g: &Grammar, longest: usize) -> Result<()> {
    let threads = rayon::current_num_threads() as u64;
    let one = ChartWork::bytes_for(longest, g.labels.len(), g.n_rules(), g.options.split);
    crate::memory::check(
        crate::memory::product(&[one, threads]),
        || {
            format!(
                "parsing a {longest}-word sentence (a chart of {} cells × {} labels: {} a \
                 thread, on {threads} thread(s))",
                longest * (longest + 1) / 2,
                g.labels.len(),
                crate::memory::shown(one)
            )
        },
        "lower --max-length (longer sentences are skipped and counted) or --threads",
    )
}

/// A flat tree over the words, each with its most frequent allowed tag.
pub fn flat(g: &Grammar, s: &Sentence) -> Tree {
    let kids = s
        .words
        .iter()
        .zip(&s.forms)
        .map(|(w, &f)| {
            let tag = g
                .tags_for(f)
                .iter()
                .copied()
                .max_by(|a, b| g.label_count[*a as usize].total_cmp(&g.label_count[*b as usize]))
                .map(|a| g.labels[a as usize].clone())
                .unwrap_or_else(|| "NN".into());
            let t = Tree {
                label: tag,
                children: vec![Tree::leaf(w)],
            };
            debinarise(&t)
        })
        .collect();
    Tree {
        label: "TOP".into(),
        children: vec![Tree {
            label: "S".into(),
            children: kids,
        }],
    }
}

/// The decoder a run's metrics name: local probabilities (MECFG, PT-CFG) or global scores.
pub fn decoder_name(est: &GrammarEstimator) -> &'static str {
    match est.scoring() {
        super::chart::Scoring::Local => "cky-local",
        super::chart::Scoring::Global => "cky",
    }
}

/// The trees of at most `max_length` words, and how many were longer (left out, as EVALB's
/// cut-off leaves sentences out).
pub fn within(trees: &[Tree], max_length: usize) -> (Vec<Tree>, usize) {
    let kept: Vec<Tree> = trees
        .iter()
        .filter(|t| t.words().len() <= max_length)
        .cloned()
        .collect();
    let skipped = trees.len() - kept.len();
    (kept, skipped)
}

/// The run's parses of some sentences, in their order.
#[derive(Clone, Debug, Default)]
pub struct Parsed {
    /// Per sentence its tree (debinarised, rooted `TOP` as normalised gold trees are), or
    /// `None` when it was not parsed: longer than the bound, or without words.
    pub trees: Vec<Option<Tree>>,
    /// Sentences the grammar could not span: they got [`flat`]'s tree, as in [`parse_all`].
    pub fallbacks: usize,
    /// Sentences of more words than the bound.
    pub skipped: usize,
    /// Sentences without words.
    pub empty: usize,
}

/// Parses word sequences as a run scores its test trees ([`encode_words`] and [`parse_all`]);
/// a sentence of more than `max_length` words, or of none, is left unparsed and counted.
pub fn parse_words(
    g: &Grammar,
    theta: &[f64],
    est: &GrammarEstimator,
    sentences: &[Vec<String>],
    max_length: usize,
) -> Result<Parsed> {
    let mut out = Parsed {
        trees: vec![None; sentences.len()],
        ..Default::default()
    };
    let mut which = Vec::new();
    let mut encoded = Vec::new();
    for (k, words) in sentences.iter().enumerate() {
        if words.is_empty() {
            out.empty += 1;
        } else if words.len() > max_length {
            out.skipped += 1;
        } else {
            which.push(k);
            encoded.push(g.encode_words(words));
        }
    }
    let (trees, fallbacks) = parse_all(g, theta, est, &encoded)?;
    out.fallbacks = fallbacks;
    for (k, t) in which.into_iter().zip(trees) {
        out.trees[k] = Some(t);
    }
    Ok(out)
}

/// Encodes test trees' words for parsing.
pub fn encode_words(g: &Grammar, trees: &[Tree]) -> Vec<Sentence> {
    trees
        .iter()
        .map(|t| {
            let words: Vec<String> = t.words().iter().map(|w| w.to_string()).collect();
            g.encode_words(&words)
        })
        .collect()
}

/// What `parse` reads: trees (their words are parsed; the trees are the gold) or sentences
/// as token lines.
#[derive(Clone, Debug)]
pub enum ParseInput {
    Trees(Vec<Tree>),
    /// One sentence per line, words separated by white space (an empty line: a sentence
    /// without words, which keeps its line in the output).
    Tokens(Vec<Vec<String>>),
}

impl ParseInput {
    /// Reads `path`: a folder or a zip archive is a treebank (read by [`read_trees`]), and
    /// so is a text whose first character other than white space is `(` (a `.mrg` file, one
    /// tree a line or not); any other text is token lines. A first word that is a bracket
    /// is written `-LRB-` in the treebank's way, so a token file does not start with `(`.
    pub fn read(path: &Path) -> Result<ParseInput> {
        if path.is_dir() {
            return read_trees(path).map(ParseInput::Trees);
        }
        let bytes = crate::util::read_bytes(path)?;
        let trees = bytes.starts_with(b"PK\x03\x04")
            || bytes
                .iter()
                .find(|b| !b.is_ascii_whitespace())
                .is_some_and(|&b| b == b'(');
        if trees {
            return read_trees(path).map(ParseInput::Trees);
        }
        let text = crate::util::read_text(path)?;
        Ok(ParseInput::Tokens(
            text.lines()
                .map(|l| l.split_whitespace().map(str::to_string).collect())
                .collect(),
        ))
    }

    /// The words of each sentence.
    pub fn sentences(&self) -> Vec<Vec<String>> {
        match self {
            ParseInput::Trees(ts) => ts
                .iter()
                .map(|t| t.words().iter().map(|w| w.to_string()).collect())
                .collect(),
            ParseInput::Tokens(s) => s.clone(),
        }
    }
}
