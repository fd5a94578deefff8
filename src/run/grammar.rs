//! The grammar model kind (001 §5): a [`RunSpec`] whose model is `grammar` trains and records
//! like every other run — spec, curve, summary with EVALB's scores as [`Metrics`] (labelled
//! brackets as segments, per-label brackets as segment types, tagging as token accuracy, wrong
//! brackets per sentence for the paired tests), weights — so Runs, Curves, Compare and Fields
//! show it as they show a chain. Its model record ([`Record::GRAMMAR`]) holds the options and
//! the training trees: the grammar is a function of them, so [`GrammarRun::open`] reads the
//! grammar off the trees again, refusing when they changed.

use super::checkpoint::CheckpointPolicy;
use super::curve::Curve;
use super::kind::{FinishedRun, ModelKind};
use super::registry::ModelSpec;
use super::spec::RunSpec;
use super::store::{check_space, Record, RunFiles};
use super::summary::{RunEvent, RunSummary};
use crate::data::treebank::Tree;
use crate::error::{Error, Result};
use crate::estimators::EstimatorSpec;
use crate::eval::parsing::{metrics, score_trees};
use crate::eval::{Decoder, Metrics};
use crate::grammar::fit::TrainReport;
use crate::grammar::parse::{
    bare_length, check_max_length, decoder_name, encode_words, estimator_for, parse_all,
    parse_words, read_trees, within, GrammarRunOptions, ParseInput, Parsed, MODEL_FORMAT,
};
use crate::grammar::train::GrammarEstimator;
use crate::grammar::{Grammar, Sentence};
use crate::optim::{IterReport, StopReason};
use crate::util::thread_pool;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Instant;

pub struct Grammars;

impl ModelKind for Grammars {
    fn name(&self) -> &'static str {
        "grammar"
    }
    fn trains(&self, model: &ModelSpec) -> bool {
        matches!(model, ModelSpec::Grammar(_))
    }
    fn holds(&self, files: &RunFiles) -> bool {
        files.has(Record::GRAMMAR)
    }
    fn opened_by(&self) -> &'static str {
        "its model is a grammar over charts: `parse --run DIR --data FILE` writes its trees, \
         `eval --run DIR` scores them, and the Parse pane shows them"
    }
    fn train(
        &self,
        spec: &RunSpec,
        files: &RunFiles,
        _checkpoints: CheckpointPolicy,
        cancel: &AtomicBool,
        on_event: &mut dyn FnMut(RunEvent),
        summary: &mut RunSummary,
    ) -> Result<()> {
        let ModelSpec::Grammar(o) = &spec.model else {
            return Err(Error::invalid("not a grammar spec"));
        };
        train_run(spec, o, files, cancel, on_event, summary)
    }
    fn open(&self, files: &RunFiles) -> Result<Box<dyn FinishedRun>> {
        Ok(Box::new(GrammarRun::open(files.dir())?))
    }
}

/// What the grammar's model record holds.
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

/// Trains the grammar run `spec` into `files` (see [`ModelKind::train`]).
fn train_run(
    spec: &RunSpec,
    o: &GrammarRunOptions,
    files: &RunFiles,
    cancel: &AtomicBool,
    on_event: &mut dyn FnMut(RunEvent),
    summary: &mut RunSummary,
) -> Result<()> {
    let setup = Instant::now();
    let pool = thread_pool(spec.threads)?;
    let est = estimator_for(&spec.estimator, o)?;
    if spec.init_from.is_some() || spec.per_state_scaling || spec.subset_scaling {
        return Err(Error::invalid(
            "grammar runs start from zero weights and have no per-state or per-subset scales",
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
    check_space(files.dir(), 16 * g.n_params as u64 + (1 << 20))?;
    on_event(RunEvent::started(summary));
    let decoder = decoder_name(&est);
    let evaluate = |theta: &[f64]| -> Result<Option<Metrics>> {
        match (&test, &test_sents) {
            (Some(t), Some(s)) => {
                let (parsed, fallbacks) = pool.install(|| parse_all(g, theta, &est, s))?;
                let mut m = metrics(t, &parsed, fallbacks, decoder)?;
                m.skipped = test_skipped;
                Ok(Some(m))
            }
            _ => Ok(None),
        }
    };
    // Empty for the closed-form PCFG, as for any run before its first iteration.
    let t0 = Instant::now();
    let mut curve = Curve::new(
        files.clone(),
        spec.eval_every,
        Box::new(|theta: &[f64]| evaluate(theta)),
        on_event,
    )?;
    let mut observer = |r: &IterReport, theta: &[f64]| curve.observe(r, theta);
    let result = crate::grammar::fit::train(
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
    if let Some(e) = curve.take_error() {
        return Err(e);
    }
    summary.train_seconds = t0.elapsed().saturating_sub(curve.observed).as_secs_f64();
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
    save(files, spec, o, &est, g, &theta, &report)?;
    if summary.stop_reason == Some(StopReason::Cancelled) {
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
    files: &RunFiles,
    spec: &RunSpec,
    o: &GrammarRunOptions,
    est: &GrammarEstimator,
    g: &Grammar,
    theta: &[f64],
    report: &TrainReport,
) -> Result<()> {
    // A weight that is not finite would make a run no reader can open: refused here.
    if let Some(k) = theta.iter().position(|w| !w.is_finite()) {
        return Err(Error::file(
            files.weights_path().display().to_string(),
            format!(
                "not written: {} is {}, not a finite number",
                weight_name(g, k),
                theta[k]
            ),
        ));
    }
    files.write_weights(theta)?;
    files.write_record(
        Record::GRAMMAR,
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

/// Weight `k` as messages name it.
fn weight_name(g: &Grammar, k: usize) -> String {
    format!("weight {k} ({})", g.weight_name(k))
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
    /// Opens the run in `dir`: its spec, model record and weights; the grammar is read off the
    /// training trees again and must have the sizes the record holds.
    pub fn open(dir: &Path) -> Result<GrammarRun> {
        let files = RunFiles::at(dir);
        let shown = files.record_path(Record::GRAMMAR).display().to_string();
        let m: ModelFile = files
            .record(Record::GRAMMAR)?
            .ok_or_else(|| Error::file(&shown, "missing: not a grammar run"))?;
        if m.format != MODEL_FORMAT {
            return Err(Error::file(
                &shown,
                format!("format {} (this build reads {MODEL_FORMAT})", m.format),
            ));
        }
        let spec = files.spec()?;
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
        let theta = files.weights(g.n_params, &|k| weight_name(g, k))?;
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
        thread_pool(self.spec.threads)
    }

    /// The run's parses of word sequences ([`parse_words`]), as it parsed its test trees.
    pub fn parse(&self, sentences: &[Vec<String>], max_length: usize) -> Result<Parsed> {
        let g = &self.data.grammar;
        self.pool()?
            .install(|| parse_words(g, &self.theta, &self.estimator, sentences, max_length))
    }

    /// The run's scores on gold trees ([`score_trees`]): on its own test trees and its own
    /// bound, the summary's test scores.
    pub fn score_gold(&self, gold: &[Tree], max_length: usize) -> Result<Metrics> {
        let g = &self.data.grammar;
        self.pool()?
            .install(|| score_trees(g, &self.theta, &self.estimator, gold, max_length))
    }
}

impl FinishedRun for GrammarRun {
    /// EVALB's scores (COLLINS.prm) of the run's parses of `data`'s trees, or of its own test
    /// trees, with its own length bound; on its test trees, its summary's numbers.
    fn score(&self, data: Option<&Path>, decode: Option<Decoder>) -> Result<Metrics> {
        if decode.is_some() {
            return Err(Error::invalid(
                "--decode: a grammar run decodes with its chart (CKY), as it was scored",
            ));
        }
        let gold = match data {
            Some(d) => match ParseInput::read(d)? {
                ParseInput::Trees(t) => t,
                ParseInput::Tokens(_) => {
                    return Err(Error::file(
                        d.display().to_string(),
                        "token lines have no gold trees to score against: give trees, or \
                         write the parses with `parse`",
                    ))
                }
            },
            None => match &self.spec.test {
                Some(_) => self.test.clone(),
                None => {
                    return Err(Error::invalid(format!(
                        "{}: the run has no test trees; give --data TREES",
                        self.dir.display()
                    )))
                }
            },
        };
        self.score_gold(&gold, self.options.max_length)
    }

    fn report(&self, m: &Metrics) -> String {
        let fallbacks = m.decoders.get("flat (no parse)").copied().unwrap_or(0);
        format!(
            "{} ({}): {} sentences parsed, {} of them flat trees (no parse); {} skipped (more \
             than {} words)\nlabelled brackets: P {:.2}  R {:.2}  F1 {:.2}  (matched {}, gold \
             {}, test {})\ntagging: {:.2} over {} words\n",
            self.dir.display(),
            self.estimator.paper_name(),
            m.sequences,
            fallbacks,
            m.skipped,
            self.options.max_length,
            m.segments.precision,
            m.segments.recall,
            m.segments.f1,
            m.segments.correct,
            m.segments.gold,
            m.segments.predicted,
            m.token_accuracy,
            m.tokens
        )
    }
}
