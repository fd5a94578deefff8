//! Grammar runs: a [`RunSpec`] whose model is `grammar` trains and records like every other run
//! — `spec.json`, `curve.jsonl`, `summary.json` with EVALB's scores as [`Metrics`] (labelled
//! brackets as segments, per-label brackets as segment types, tagging as token accuracy, wrong
//! brackets per sentence for the paired tests), `weights.bin` — so Runs, Curves, Compare and
//! Fields show it as they show a chain. Its model file is `grammar.json`: the grammar is a
//! function of the training trees and the options, so the file records those (and the sizes
//! they gave) and [`GrammarRun::open`] reads the grammar off the trees again, refusing when
//! they changed.

use super::chart::{viterbi, ChartWork};
use super::train::{train, GrammarEstimator, TrainReport};
use super::{Grammar, GrammarOptions, Sentence};
use crate::data::treebank::{debinarise, normalise, read_treebank, Tree};
use crate::error::{Error, Result};
use crate::estimators::EstimatorSpec;
use crate::eval::evalb::{evalb, per_label, score_one, EvalbParams, EvalbScore};
use crate::eval::metrics::{Metrics, Prf};
use crate::train::run::{CurvePoint, RunEvent, RunSummary};
use crate::train::spec::RunSpec;
use crate::util::{write_atomic, write_json_atomic};
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Instant;

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
/// The largest `max_length` accepted: a chart over 1,000 words needs about 25 GB.
pub const MAX_LENGTH_LIMIT: usize = 1000;

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
) -> (Vec<Tree>, usize) {
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
    (out.into_iter().map(|(t, _)| t).collect(), failed)
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
) -> Parsed {
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
    let (trees, fallbacks) = parse_all(g, theta, est, &encoded);
    out.fallbacks = fallbacks;
    for (k, t) in which.into_iter().zip(trees) {
        out.trees[k] = Some(t);
    }
    out
}

/// EVALB's scores of `parsed` against `gold` as a run's [`Metrics`]: labelled brackets as
/// segments, brackets per label as segment types, tagging accuracy as token accuracy, tags per
/// part of speech as labels, and per sentence the wrong brackets (missed plus spurious) that
/// `compare` pairs up.
pub fn metrics(gold: &[Tree], parsed: &[Tree], fallbacks: usize, decoder: &str) -> Result<Metrics> {
    let p = EvalbParams::collins(None);
    let total: EvalbScore = evalb(gold, parsed, &p)?;
    let prf = |correct: usize, predicted: usize, gold: usize| {
        Prf::from_counts(correct as u64, predicted as u64, gold as u64)
    };
    let per_sentence: Vec<_> = gold
        .iter()
        .zip(parsed)
        .map(|(g, t)| score_one(g, t, &p))
        .collect();
    let sequence_errors = per_sentence
        .iter()
        .map(|s| (s.gold_brackets + s.test_brackets - 2 * s.matched) as u32)
        .collect();
    // The paired tests' items: brackets per sentence for the bootstrap, tags per word for
    // McNemar on tokens; the gold trees' words and tags as the data's fingerprint.
    let mut paired = crate::eval::metrics::Paired {
        segments: per_sentence
            .iter()
            .map(|s| {
                [
                    s.matched as u32,
                    s.test_brackets as u32,
                    s.gold_brackets as u32,
                ]
            })
            .collect(),
        ..Default::default()
    };
    let mut fingerprint = String::new();
    for (g, t) in gold.iter().zip(parsed) {
        let (gw, tw) = (g.tagged_words(), t.tagged_words());
        paired.tokens.push(gw.len() as u32);
        for (k, (gt, w)) in gw.iter().enumerate() {
            paired
                .token_right
                .push(tw.get(k).is_some_and(|(tt, _)| tt == gt));
            fingerprint.push_str(&format!("{gt} {w}\u{1f}"));
        }
        fingerprint.push('\u{1e}');
    }
    paired.gold_digest = crate::eval::metrics::digest(fingerprint.as_bytes());
    // Part-of-speech tags per word (the Fields pane's "per label"), every word counted.
    let mut tags: std::collections::BTreeMap<String, (u64, u64, u64)> = Default::default();
    for (g, t) in gold.iter().zip(parsed) {
        let (gw, tw) = (g.tagged_words(), t.tagged_words());
        for (k, (gt, _)) in gw.iter().enumerate() {
            tags.entry(gt.to_string()).or_default().2 += 1;
            if let Some((tt, _)) = tw.get(k) {
                if tt == gt {
                    tags.entry(gt.to_string()).or_default().0 += 1;
                }
            }
        }
        for (tt, _) in &tw {
            tags.entry(tt.to_string()).or_default().1 += 1;
        }
    }
    let mut decoders = std::collections::BTreeMap::new();
    decoders.insert(decoder.to_string(), parsed.len() - fallbacks);
    if fallbacks > 0 {
        decoders.insert("flat (no parse)".to_string(), fallbacks);
    }
    Ok(Metrics {
        sequences: total.sentences,
        tokens: total.words as u64,
        token_accuracy: total.tagging(),
        segments: prf(total.matched, total.test_brackets, total.gold_brackets),
        segment_types: per_label(gold, parsed, &p)
            .into_iter()
            .map(|(l, g, t, m)| (l, prf(m, t, g)))
            .collect(),
        labels: tags
            .into_iter()
            .map(|(l, (c, p, g))| (l, Prf::from_counts(c, p, g)))
            .collect(),
        decoders,
        sequence_errors,
        paired,
        ..Default::default()
    })
}

/// A run's scores on gold trees, as its summary has them: the trees of at most `max_length`
/// words parsed ([`parse_all`]) and scored ([`metrics`]), the longer ones counted in
/// [`Metrics::skipped`].
pub fn score_trees(
    g: &Grammar,
    theta: &[f64],
    est: &GrammarEstimator,
    gold: &[Tree],
    max_length: usize,
) -> Result<Metrics> {
    let (kept, skipped) = within(gold, max_length);
    let (parsed, fallbacks) = parse_all(g, theta, est, &encode_words(g, &kept));
    let mut m = metrics(&kept, &parsed, fallbacks, decoder_name(est))?;
    m.skipped = skipped;
    Ok(m)
}

/// What `grammar.json` records.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct ModelFile {
    format: String,
    options: GrammarRunOptions,
    /// The training trees the grammar was read off, and the sample of them, if any.
    train: PathBuf,
    train_sample: Option<usize>,
    seed: u64,
    estimator: GrammarEstimator,
    /// What the grammar was, to check a re-read against.
    labels: usize,
    rules: usize,
    n_params: usize,
    description: String,
    /// PT-CFG: the ratio threshold that chose the NOTA edges, and how many it chose.
    #[serde(default)]
    nota_threshold: Option<f64>,
    #[serde(default)]
    nota_instances: usize,
}

/// A grammar run's data: the grammar and the encoded training sentences.
pub struct GrammarData {
    pub grammar: Grammar,
    /// The discriminative training set: the short trees (a sample of them with
    /// `train_sample`), normalised.
    pub trees: Vec<Tree>,
    pub sentences: Vec<Sentence>,
    /// Every training tree.
    pub n_all: usize,
    /// Short trees of more than `max_length` words left out of the training set (`ml` and
    /// `nota`, which build the full chart over every training sentence).
    pub too_long: usize,
}

/// Reads the spec's training trees and fits the grammar.
pub fn prepare(spec: &RunSpec, o: &GrammarRunOptions) -> Result<GrammarData> {
    check_max_length(o.max_length, &spec.train.display().to_string())?;
    let all = read_trees(&spec.train)?;
    let mut short: Vec<Tree> = all
        .iter()
        .filter(|t| o.max_words.is_none_or(|m| bare_length(t) <= m))
        .cloned()
        .collect();
    let mut too_long = 0;
    if matches!(
        spec.estimator,
        EstimatorSpec::Ml | EstimatorSpec::Nota { .. }
    ) {
        (short, too_long) = within(&short, o.max_length);
    }
    if let Some(n) = spec.train_sample.filter(|&n| n < short.len()) {
        use rand::{seq::index::sample, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(spec.seed);
        let mut keep = sample(&mut rng, short.len(), n).into_vec();
        keep.sort_unstable();
        short = keep.into_iter().map(|i| short[i].clone()).collect();
    }
    if short.is_empty() {
        return Err(Error::file(
            spec.train.display().to_string(),
            format!(
                "no training tree of at most {} words{}",
                o.max_words.unwrap_or(0),
                if too_long > 0 {
                    format!(" and at most {} with punctuation", o.max_length)
                } else {
                    String::new()
                }
            ),
        ));
    }
    let grammar = Grammar::fit(
        if o.grammar_on_all { &all } else { &short },
        &all,
        o.grammar,
    )?;
    let sentences = short.iter().map(|t| grammar.encode(t)).collect();
    Ok(GrammarData {
        grammar,
        trees: short,
        sentences,
        n_all: all.len(),
        too_long,
    })
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

/// Trains the grammar run `spec` into `out` (claimed, `spec.json` and a running summary written
/// by [`crate::train::run::execute_in`]), filling `summary`.
pub fn execute(
    spec: &RunSpec,
    o: &GrammarRunOptions,
    out: &Path,
    cancel: &AtomicBool,
    on_event: &mut dyn FnMut(RunEvent),
    summary: &mut RunSummary,
) -> Result<()> {
    let setup = Instant::now();
    let pool = crate::train::spec::thread_pool(spec.threads)?;
    let est = estimator_for(&spec.estimator, o)?;
    if spec.init_from.is_some() || spec.per_state_scaling {
        return Err(Error::invalid(
            "grammar runs start from zero weights and have no per-state scales",
        ));
    }
    let (data, test) = pool.install(|| -> Result<_> {
        let data = prepare(spec, o)?;
        let test = spec.test.as_deref().map(read_trees).transpose()?;
        Ok((data, test))
    })?;
    let g = &data.grammar;
    // The longer test sentences are counted, not parsed (`max_length`).
    let (test, test_skipped) = match test {
        Some(t) => {
            let (kept, skipped) = within(&t, o.max_length);
            (Some(kept), skipped)
        }
        None => (None, 0),
    };
    let test_sents = test.as_ref().map(|t| encode_words(g, t));
    summary.setup_seconds = setup.elapsed().as_secs_f64();
    summary.model = "grammar".into();
    summary.n_params = g.n_params;
    summary.n_sequences = data.sentences.len();
    summary.n_tokens = data.sentences.iter().map(|s| s.words.len()).sum();
    summary.threads = pool.current_num_threads();
    summary.model_description = format!(
        "{}; trained on {} of {} trees{}",
        g.describe(),
        data.sentences.len(),
        data.n_all,
        if data.too_long > 0 {
            format!(
                " ({} of more than {} words left out)",
                data.too_long, o.max_length
            )
        } else {
            String::new()
        }
    );
    crate::train::run_dir::check_space(out, 16 * g.n_params as u64 + (1 << 20))?;
    on_event(RunEvent::Started {
        n_params: summary.n_params,
        n_sequences: summary.n_sequences,
        n_tokens: summary.n_tokens,
        threads: summary.threads,
    });
    let decoder = decoder_name(&est);
    let evaluate = |theta: &[f64]| -> Result<Option<Metrics>> {
        match (&test, &test_sents) {
            (Some(t), Some(s)) => {
                let (parsed, fallbacks) = pool.install(|| parse_all(g, theta, &est, s));
                let mut m = metrics(t, &parsed, fallbacks, decoder)?;
                m.skipped = test_skipped;
                Ok(Some(m))
            }
            _ => Ok(None),
        }
    };
    let curve_path = out.join("curve.jsonl");
    // Empty for the closed-form PCFG, as for any run before its first iteration.
    write_atomic(&curve_path, b"")?;
    let mut curve_text = String::new();
    let mut curve_error = None;
    let t0 = Instant::now();
    // Time in the observer (evaluating, writing the curve): left out of the run's seconds.
    let mut observed = std::time::Duration::ZERO;
    let mut observer = |r: &crate::train::lbfgs::IterReport, theta: &[f64]| {
        let watching = Instant::now();
        let mut point = CurvePoint {
            report: r.clone(),
            test_token_accuracy: None,
            test_segment_f1: None,
            test_log_likelihood: None,
        };
        if spec.eval_every > 0 && r.iteration.is_multiple_of(spec.eval_every) {
            match evaluate(theta) {
                Ok(Some(m)) => {
                    point.test_token_accuracy = Some(m.token_accuracy);
                    point.test_segment_f1 = Some(m.segments.f1);
                    on_event(RunEvent::Eval {
                        iteration: r.iteration,
                        metrics: Box::new(m),
                    });
                }
                Ok(None) => {}
                Err(e) => curve_error = Some(e),
            }
        }
        on_event(RunEvent::Progress(r.clone()));
        if let Ok(line) = serde_json::to_string(&point) {
            curve_text.push_str(&line);
            curve_text.push('\n');
            if let Err(e) = write_atomic(&curve_path, curve_text.as_bytes()) {
                curve_error = Some(e);
            }
        }
        observed += watching.elapsed();
    };
    let result = train(
        g,
        &data.sentences,
        &est,
        spec.prior,
        &spec.optimiser,
        spec.threads,
        cancel,
        &mut observer,
    );
    let (theta, report): (Vec<f64>, TrainReport) = result?;
    if let Some(e) = curve_error {
        return Err(e);
    }
    summary.train_seconds = t0.elapsed().saturating_sub(observed).as_secs_f64();
    summary.iterations = report.iterations;
    summary.stop_reason = report.stop.clone();
    if let Some(l) = &report.last {
        summary.evaluations = l.evaluations;
        summary.ops = l.ops;
        summary.final_objective = Some(l.objective);
    }
    if matches!(est, GrammarEstimator::Nota { .. }) {
        summary.nota_terms = Some(report.nota_instances);
    }
    save(out, spec, o, &est, g, &theta, &report)?;
    if summary.stop_reason == Some(crate::train::lbfgs::StopReason::Cancelled) {
        return Err(Error::Cancelled);
    }
    summary.test = evaluate(&theta)?;
    if spec.eval_train {
        summary.train =
            Some(pool.install(|| score_trees(g, &theta, &est, &data.trees, o.max_length))?);
    }
    summary.status = "finished".into();
    Ok(())
}

fn save(
    out: &Path,
    spec: &RunSpec,
    o: &GrammarRunOptions,
    est: &GrammarEstimator,
    g: &Grammar,
    theta: &[f64],
    report: &TrainReport,
) -> Result<()> {
    // A weight that is not finite would make a run no reader can open: refused here.
    check_finite(theta, g).map_err(|m| {
        Error::file(
            out.join("weights.bin").display().to_string(),
            format!("not written: {m}"),
        )
    })?;
    let bytes: Vec<u8> = theta.iter().flat_map(|w| w.to_le_bytes()).collect();
    write_atomic(&out.join("weights.bin"), &bytes)?;
    write_json_atomic(
        &out.join("grammar.json"),
        &ModelFile {
            format: MODEL_FORMAT.into(),
            options: o.clone(),
            train: spec.train.clone(),
            train_sample: spec.train_sample,
            seed: spec.seed,
            estimator: est.clone(),
            labels: g.labels.len(),
            rules: g.rules.len(),
            n_params: g.n_params,
            description: g.describe(),
            nota_threshold: report.nota_threshold,
            nota_instances: report.nota_instances,
        },
    )
}

/// The weights of grammar `g` from `path` (`weights.bin`: little-endian f64, one per weight):
/// the one reader of a grammar run's weights (the Parse pane, `parse` and `eval` open runs
/// with [`GrammarRun::open`], which reads them here). A file of the wrong size, or a weight
/// that is not a finite number, is an error naming the file and the weight.
pub fn read_weights(path: &Path, g: &Grammar) -> Result<Vec<f64>> {
    let shown = path.display().to_string();
    let len = std::fs::metadata(path)
        .map_err(|e| Error::io(path, e))?
        .len();
    if len != 8 * g.n_params as u64 {
        return Err(Error::file(
            shown,
            format!(
                "{len} bytes; the grammar has {} weights ({} bytes)",
                g.n_params,
                8 * g.n_params
            ),
        ));
    }
    let bytes = crate::util::read_bytes(path)?;
    if bytes.len() != 8 * g.n_params {
        return Err(Error::file(shown, "changed while it was read"));
    }
    let theta: Vec<f64> = bytes
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect();
    check_finite(&theta, g).map_err(|m| Error::file(shown, m))?;
    Ok(theta)
}

/// `Err` naming the first weight that is not a finite number.
fn check_finite(theta: &[f64], g: &Grammar) -> std::result::Result<(), String> {
    match theta.iter().position(|w| !w.is_finite()) {
        Some(k) => Err(format!(
            "weight {k} ({}) is {}: a grammar's weights are finite numbers",
            g.weight_name(k),
            theta[k]
        )),
        None => Ok(()),
    }
}

/// Whether `dir` holds a grammar run's model.
pub fn is_grammar_run(dir: &Path) -> bool {
    dir.join("grammar.json").exists()
}

/// A finished grammar run, opened.
pub struct GrammarRun {
    pub dir: PathBuf,
    pub spec: RunSpec,
    pub options: GrammarRunOptions,
    pub estimator: GrammarEstimator,
    pub data: GrammarData,
    /// The spec's test trees, normalised (empty without test data).
    pub test: Vec<Tree>,
    pub theta: Vec<f64>,
    /// PT-CFG: the ratio threshold its NOTA edges were chosen with, and their number.
    pub nota_threshold: Option<f64>,
    pub nota_instances: usize,
}

impl GrammarRun {
    /// Opens the run in `dir`: `spec.json`, `grammar.json` and `weights.bin`; the grammar is
    /// read off the training trees again and must have the sizes the file records.
    pub fn open(dir: &Path) -> Result<GrammarRun> {
        let mpath = dir.join("grammar.json");
        let shown = mpath.display().to_string();
        let m: ModelFile = crate::util::read_json(&mpath)?;
        if m.format != MODEL_FORMAT {
            return Err(Error::file(
                &shown,
                format!("format {} (this build reads {MODEL_FORMAT})", m.format),
            ));
        }
        let spec: RunSpec = crate::util::read_json(&dir.join("spec.json"))?;
        let data = prepare(&spec, &m.options)?;
        let g = &data.grammar;
        if (g.labels.len(), g.rules.len(), g.n_params) != (m.labels, m.rules, m.n_params) {
            return Err(Error::file(
                &shown,
                format!(
                    "the training trees ({}) no longer give the grammar this run was trained \
                     with ({} labels, {} rules, {} weights; now {}, {}, {})",
                    spec.train.display(),
                    m.labels,
                    m.rules,
                    m.n_params,
                    g.labels.len(),
                    g.rules.len(),
                    g.n_params
                ),
            ));
        }
        let theta = read_weights(&dir.join("weights.bin"), g)?;
        let test = spec.test.as_deref().map(read_trees).transpose()?;
        Ok(GrammarRun {
            dir: dir.to_path_buf(),
            options: m.options,
            estimator: m.estimator,
            data,
            test: test.unwrap_or_default(),
            theta,
            nota_threshold: m.nota_threshold,
            nota_instances: m.nota_instances,
            spec,
        })
    }

    /// The sentence-length bound: `max_length` when given (checked), else the run's own.
    pub fn max_length(&self, max_length: Option<usize>) -> Result<usize> {
        match max_length {
            Some(n) => check_max_length(n, "parse"),
            None => Ok(self.options.max_length),
        }
    }

    fn pool(&self) -> Result<rayon::ThreadPool> {
        crate::train::spec::thread_pool(self.spec.threads)
    }

    /// The run's parses of word sequences ([`parse_words`]), as it parsed its test trees.
    pub fn parse(&self, sentences: &[Vec<String>], max_length: usize) -> Result<Parsed> {
        let g = &self.data.grammar;
        Ok(self
            .pool()?
            .install(|| parse_words(g, &self.theta, &self.estimator, sentences, max_length)))
    }

    /// The run's scores on gold trees ([`score_trees`]): on its own test trees and its own
    /// bound, the summary's test scores.
    pub fn score(&self, gold: &[Tree], max_length: usize) -> Result<Metrics> {
        let g = &self.data.grammar;
        self.pool()?
            .install(|| score_trees(g, &self.theta, &self.estimator, gold, max_length))
    }
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
