//! `piecewise-lab reproduce NAME [--quick]`: the piecewise paper's experiments (000 Tables 4–9
//! and Fig. 4) with the paper's protocol — random subsets or folds, σ² = 10, the estimators it
//! compares, max-product decoding — on the corpora in `../shared/data`. Every run is an ordinary
//! run directory under `OUT/runs/TASK/ESTIMATOR/REP` (started again, it reuses every run whose
//! spec is unchanged and finished — experiments that share runs share them in one folder); the
//! report is `OUT/NAME.md`, `OUT/NAME.json` and `OUT/NAME.svg`, our numbers beside the paper's.
//!
//! `--quick` runs the same protocol shrunk (few items, one or two repetitions, few iterations):
//! it checks the machinery, not the numbers, and is what the tests run.

use crate::data::conll::{format_conll, read_conll_with, LabelColumn};
use crate::data::Sequence;
use crate::error::{Error, Result};
use crate::estimators::EstimatorSpec;
use crate::eval::{Decoder, Metrics};
use crate::graph::chain::{ChainOptions, Extractor, Factorisation, FeatureSet, SkipOptions};
use crate::graph::factorial::FactorialOptions;
use crate::graph::ModelSpec;
use crate::train::run::{execute, RunSummary};
use crate::train::spec::RunSpec;
use crate::train::{LbfgsSpec, Prior};
use crate::util::{write_atomic, write_json_atomic};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

/// The experiments by name, with one line each.
pub const EXPERIMENTS: &[(&str, &str)] = &[
    (
        "000-table4",
        "linear-chain CRF, named entities: PW, PL, per-edge PL, exact ML",
    ),
    (
        "000-table5",
        "factorial CRF, POS + NP chunking: PW, PL, per-edge PL, BP, exact ML",
    ),
    (
        "000-table6",
        "skip-chain CRF, seminars: PW, PL, per-edge PL, BP; linear-chain ML",
    ),
    (
        "000-table7",
        "basic vs reweighted PW on linear-chain, factorial and skip-chain CRFs",
    ),
    (
        "000-table8",
        "PWPL vs ML, PL, PW on POS tagging, chunking and named entities",
    ),
    (
        "000-table9",
        "skip-chain CRF, seminars, four fields: BP, PL, PW, PWPL",
    ),
    (
        "000-fig4",
        "PWPL vs PL learning curves on the α-mixture HMM data",
    ),
];

/// Where the data are, where the report goes, and how hard to try.
#[derive(Clone, Debug)]
pub struct Options {
    pub quick: bool,
    /// The shared corpora (`../shared/data`).
    pub data: PathBuf,
    pub out: PathBuf,
    /// Threads per run (0: all cores).
    pub threads: usize,
}

/// What is read off a finished run.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Metric {
    /// Segment F1 (conlleval) on the test data.
    SegmentF1,
    TokenAccuracy,
    /// Token F1 of one label (a seminar field).
    LabelF1(String),
    /// Token accuracy of an extra label layer (the factorial CRF's `pos`).
    LayerAccuracy(String),
    /// Seconds in the optimiser.
    Seconds,
}

impl Metric {
    fn of(&self, s: &RunSummary) -> Option<f64> {
        let t: &Metrics = s.test.as_ref()?;
        match self {
            Metric::SegmentF1 => Some(t.segments.f1),
            Metric::TokenAccuracy => Some(t.token_accuracy),
            Metric::LabelF1(l) => Some(t.labels.get(l).map_or(0.0, |p| p.f1)),
            Metric::LayerAccuracy(l) => t.layers.get(l).map(|m| m.token_accuracy),
            Metric::Seconds => Some(s.train_seconds),
        }
    }
}

/// A named set of runs: one spec per repetition (random subset, fold).
#[derive(Clone, Debug)]
pub struct Group {
    pub name: String,
    pub runs: Vec<RunSpec>,
}

/// One table cell: a group's metric, and the paper's value (mean, sd) when it reports one.
#[derive(Clone, Debug)]
pub struct Cell {
    pub group: String,
    pub metric: Metric,
    pub paper: Option<(f64, Option<f64>)>,
}

fn cell(group: &str, metric: Metric, paper: Option<(f64, Option<f64>)>) -> Option<Cell> {
    Some(Cell {
        group: group.into(),
        metric,
        paper,
    })
}

#[derive(Clone, Debug)]
pub struct Table {
    pub title: String,
    pub columns: Vec<String>,
    pub rows: Vec<(String, Vec<Option<Cell>>)>,
}

/// How the figure is drawn.
#[derive(Clone, Debug)]
pub enum Figure {
    /// Bars of the first table's first `n` columns (ours, with ±sd), the paper's as ticks.
    Bars(usize),
    /// Lines: per series (name, groups in x order), the metric against the x values.
    Lines {
        x_label: String,
        xs: Vec<f64>,
        series: Vec<(String, Vec<String>)>,
        metric: Metric,
    },
}

/// Extra analysis after the runs (e.g. BP against exact inference at the trained weights).
type Analysis = fn(&Experiment, &Options) -> Result<Section>;

/// A titled block of the report: Markdown text and its data for the JSON.
#[derive(Clone, Debug, Default)]
pub struct Section {
    pub title: String,
    pub markdown: String,
    pub json: serde_json::Value,
}

pub struct Experiment {
    pub name: &'static str,
    pub title: String,
    pub protocol: Vec<String>,
    pub groups: Vec<Group>,
    pub tables: Vec<Table>,
    pub figure: Figure,
    pub analysis: Option<Analysis>,
}

/// Summary statistics of one cell over repetitions.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Stat {
    pub mean: f64,
    /// Sample standard deviation (n − 1); 0 for one value.
    pub sd: f64,
    pub values: Vec<f64>,
}

impl Stat {
    pub fn of(values: Vec<f64>) -> Option<Stat> {
        if values.is_empty() {
            return None;
        }
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let sd = if values.len() > 1 {
            (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
        } else {
            0.0
        };
        Some(Stat { mean, sd, values })
    }
}

/// The finished runs of every group, by group name.
pub type Results = std::collections::BTreeMap<String, Vec<(PathBuf, RunSummary)>>;

fn missing(what: &Path) -> Error {
    Error::file(
        what.display().to_string(),
        "not found: reproduce reads the shared corpora (../shared/data, or --data DIR)",
    )
}

fn need(p: PathBuf) -> Result<PathBuf> {
    if p.exists() {
        Ok(p)
    } else {
        Err(missing(&p))
    }
}

/// The first `n` items of a column file (all when `None`), every column kept, written to `dst`.
fn head_file(src: &Path, n: Option<usize>, dst: &Path) -> Result<PathBuf> {
    let c = read_conll_with(src, LabelColumn::None)?;
    let k = n.unwrap_or(c.sequences.len()).min(c.sequences.len());
    write_items(&c.sequences[..k], dst)
}

fn write_items(items: &[Sequence], dst: &Path) -> Result<PathBuf> {
    if let Some(d) = dst.parent() {
        std::fs::create_dir_all(d).map_err(|e| Error::io(d, e))?;
    }
    write_atomic(dst, format_conll(items, &[]).as_bytes())?;
    Ok(dst.to_path_buf())
}

const POS_TEMPLATE: &str = include_str!("../../assets/templates/pos.tpl");
const HMM_TEMPLATE: &str = include_str!("../../assets/templates/hmm.tpl");

/// A template shipped with the program, written next to the experiment's data so its runs
/// name a file that exists wherever the command runs.
fn bundled_template(o: &Options, name: &str, text: &str) -> Result<PathBuf> {
    let p = o.out.join("data").join(name);
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).map_err(|e| Error::io(d, e))?;
    }
    write_atomic(&p, text.as_bytes())?;
    Ok(p)
}

/// σ² = 10, the piecewise papers' prior.
const PAPER_PRIOR: Prior = Prior { sigma2: Some(10.0) };

/// A run of the paper's protocol; [`groups`] names it.
fn base_spec(o: &Options, train: PathBuf, test: PathBuf, model: ModelSpec) -> RunSpec {
    RunSpec {
        name: None,
        train,
        test: Some(test),
        template: None,
        model,
        estimator: EstimatorSpec::Ml,
        optimiser: LbfgsSpec {
            max_iter: if o.quick { 5 } else { 1000 },
            ..LbfgsSpec::default()
        },
        prior: PAPER_PRIOR,
        eval_every: 0,
        seed: 0,
        threads: o.threads,
        // "At test time, prediction is always performed using max-product belief propagation"
        // (000 §5); on a chain that is Viterbi.
        decode: Decoder::MaxProduct,
        train_sample: None,
        eval_train: false,
        per_state_scaling: false,
        init_from: None,
    }
}

fn estimator(name: &str) -> EstimatorSpec {
    EstimatorSpec::from_name(name).expect("a known estimator")
}

/// Groups `estimators` × repetitions, each repetition's spec from `rep(k)`.
fn groups(
    estimators: &[&str],
    prefix: &str,
    reps: usize,
    rep: impl Fn(usize) -> RunSpec,
) -> Vec<Group> {
    estimators
        .iter()
        .map(|e| Group {
            name: format!("{prefix}{e}"),
            runs: (0..reps)
                .map(|k| {
                    let mut s = rep(k);
                    s.estimator = estimator(e);
                    s.name = Some(format!("{prefix}{e}-{k}"));
                    s
                })
                .collect(),
        })
        .collect()
}

fn lexicons(o: &Options) -> PathBuf {
    o.data.join("lexicons")
}

// ---------------------------------------------------------------------------------------------
// Data and models of each task.

/// Dutch CoNLL-2002 with 000 Table 1's features, one factor per edge with observation weights
/// per label pair (the papers' Ψ_t(y_t, y_{t−1}, x)), observed feature–label pairs.
fn ner_task(o: &Options) -> Result<(PathBuf, PathBuf, ModelSpec)> {
    let dir = o.data.join("conll2002-ned");
    let (train, test) = (need(dir.join("ned.train"))?, need(dir.join("ned.testa"))?);
    let (train, test) = if o.quick {
        let w = o.out.join("data");
        (
            head_file(&train, Some(60), &w.join("ner-train.conll"))?,
            head_file(&test, Some(40), &w.join("ner-test.conll"))?,
        )
    } else {
        (train, test)
    };
    let model = ModelSpec::LinearChain(ChainOptions {
        extractor: Extractor::Ner,
        factorisation: Factorisation::EdgePair,
        feature_set: FeatureSet::Observed,
        lexicons: Some(lexicons(o)),
        ..ChainOptions::default()
    });
    Ok((train, test, model))
}

/// CoNLL-2000 train and test (the test shrunk for `--quick`).
fn conll2000(o: &Options) -> Result<(PathBuf, PathBuf)> {
    let dir = o.data.join("conll2000");
    let (train, test) = (need(dir.join("train.txt"))?, need(dir.join("test.txt"))?);
    let test = if o.quick {
        head_file(
            &test,
            Some(40),
            &o.out.join("data").join("conll2000-test.txt"),
        )?
    } else {
        test
    };
    Ok((train, test))
}

/// The factorial CRF, its POS lexicon from the Penn Treebank sample (sections 00–01, apart
/// from CoNLL-2000's 15–18 and 20) in place of the paper's Brill-tagger lexicon.
fn factorial_model(o: &Options) -> Result<ModelSpec> {
    Ok(ModelSpec::Factorial(FactorialOptions {
        lexicons: Some(lexicons(o)),
        pos_lexicon: Some(need(o.data.join("ptb-wsj-sample").join("treebank.tsv"))?),
        ..FactorialOptions::default()
    }))
}

/// The seminar announcements pooled (train 0–300 and test 301–484) and cut into `folds` random
/// 50/50 splits (000 §5: "10-fold cross validation with a 50/50 training/test split"), written
/// as column files (word, lowercase, shape, time class, field).
fn seminar_folds(o: &Options, folds: usize) -> Result<Vec<(PathBuf, PathBuf)>> {
    let dir = o.data.join("seminars");
    let mut all = crate::data::seminars::read_dir(&need(dir.join("train"))?)?;
    all.sequences
        .extend(crate::data::seminars::read_dir(&need(dir.join("test"))?)?.sequences);
    let items = &all.sequences;
    let w = o.out.join("data");
    (0..folds)
        .map(|k| {
            let perm = crate::data::shuffled(items.len(), 1000 + k as u64);
            let half = items.len() / 2;
            let (mut tr, mut te): (Vec<usize>, Vec<usize>) =
                (perm[..half].to_vec(), perm[half..].to_vec());
            if o.quick {
                tr.truncate(8);
                te.truncate(6);
            }
            tr.sort_unstable();
            te.sort_unstable();
            let pick = |ix: &[usize]| ix.iter().map(|&i| items[i].clone()).collect::<Vec<_>>();
            Ok((
                write_items(&pick(&tr), &w.join(format!("seminars-{k}-train.conll")))?,
                write_items(&pick(&te), &w.join(format!("seminars-{k}-test.conll")))?,
            ))
        })
        .collect()
}

/// The seminar chain: 000 Table 3's features, the edge factor Ψ_t(y_t, y_{t−1}, x) (eq. 41),
/// observed feature–label pairs; with `skip`, the skip edges of eq. 41.
fn seminar_model(o: &Options, skip: bool) -> ModelSpec {
    let c = ChainOptions {
        extractor: Extractor::Seminar,
        factorisation: Factorisation::EdgePair,
        feature_set: FeatureSet::Observed,
        lexicons: Some(lexicons(o)),
        skip: skip.then(SkipOptions::default),
        ..ChainOptions::default()
    };
    if skip {
        ModelSpec::SkipChain(c)
    } else {
        ModelSpec::LinearChain(c)
    }
}

fn reps(o: &Options, full: usize) -> usize {
    if o.quick {
        1
    } else {
        full
    }
}

const SUBSET_FCRF: usize = 223;

fn factorial_groups(o: &Options, estimators: &[&str], prefix: &str) -> Result<Vec<Group>> {
    let (train, test) = conll2000(o)?;
    let model = factorial_model(o)?;
    let n = if o.quick { 20 } else { SUBSET_FCRF };
    Ok(groups(estimators, prefix, reps(o, 5), |k| {
        let mut s = base_spec(o, train.clone(), test.clone(), model.clone());
        s.train_sample = Some(n);
        s.seed = k as u64;
        s
    }))
}

fn seminar_groups(
    o: &Options,
    folds: &[(PathBuf, PathBuf)],
    estimators: &[&str],
    prefix: &str,
    skip: bool,
) -> Vec<Group> {
    let model = seminar_model(o, skip);
    groups(estimators, prefix, folds.len(), |k| {
        base_spec(o, folds[k].0.clone(), folds[k].1.clone(), model.clone())
    })
}

fn p(mean: f64, sd: Option<f64>) -> Option<(f64, Option<f64>)> {
    Some((mean, sd))
}

// ---------------------------------------------------------------------------------------------
// The experiments.

/// Builds the named experiment (reading or writing its data splits).
pub fn experiment(name: &str, o: &Options) -> Result<Experiment> {
    match name {
        "000-table4" => table4(o),
        "000-table5" => table5(o),
        "000-table6" | "000-table9" => table6_or_9(o, name),
        "000-table7" => table7(o),
        "000-table8" => table8(o),
        "000-fig4" => fig4(o),
        other => Err(Error::invalid(format!(
            "no experiment {other:?}; reproduce knows: {}",
            EXPERIMENTS
                .iter()
                .map(|e| e.0)
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// `full` for the paper's protocol, `quick` for `--quick`.
fn sizes(o: &Options, full: &str, quick: &str) -> String {
    if o.quick {
        quick.to_string()
    } else {
        full.to_string()
    }
}

fn table4(o: &Options) -> Result<Experiment> {
    let sizes = |full: &str, quick: &str| sizes(o, full, quick);
    let (train, test, model) = ner_task(o)?;
    let gs = groups(&["pw", "pl", "pl-edge", "ml"], "ner/", 1, |_| {
        base_spec(o, train.clone(), test.clone(), model.clone())
    });
    let f1 = |e: &str, paper: f64| {
        let g = format!("ner/{e}");
        vec![
            cell(&g, Metric::SegmentF1, p(paper, None)),
            cell(&g, Metric::Seconds, None),
        ]
    };
    Ok(Experiment {
        name: "000-table4",
        title: "000 Table 4: linear-chain CRF for named-entity recognition".into(),
        protocol: vec![
            "Data: CoNLL-2002 Dutch (`ned.train`, tested on the development set `ned.testa`, as the paper tests on CoNLL-2003's); the paper's English CoNLL-2003 is not in ../shared/data, so the paper's column is a reference, not a target.".into(),
            format!("Training data: {}.", sizes("all 15,806 sentences", "the first 60 sentences (quick), 40 test sentences")),
            "Model: linear chain, 000 Table 1 features (±2 window, name lists from ../shared/data/lexicons), one factor per edge with observation weights per label pair, feature–label pairs seen in training.".into(),
            "Estimators: pw (factor-as-piece), pl (eq. 5), pl-edge (eq. 42), ml (exact, forward–backward); L-BFGS, σ² = 10; Viterbi decoding; entity F1 by conlleval.".into(),
        ],
        groups: gs,
        tables: vec![Table {
            title: "Entity F1 and training time".into(),
            columns: vec!["F1".into(), "train s".into()],
            rows: vec![
                ("PW".into(), f1("pw", 91.2)),
                ("Pseudolikelihood".into(), f1("pl", 84.7)),
                ("Per-edge PL".into(), f1("pl-edge", 89.7)),
                ("Exact".into(), f1("ml", 90.6)),
            ],
        }],
        figure: Figure::Bars(1),
        analysis: None,
    })
}

fn table5(o: &Options) -> Result<Experiment> {
    let sizes = |full: &str, quick: &str| sizes(o, full, quick);
    let gs = factorial_groups(o, &["pw", "pl", "pl-edge", "bp", "ml"], "fcrf/")?;
    let row = |e: &str, paper: Option<(f64, Option<f64>)>| {
        let g = &format!("fcrf/{e}");
        vec![
            cell(g, Metric::SegmentF1, paper),
            cell(g, Metric::LayerAccuracy("pos".into()), None),
            cell(g, Metric::Seconds, None),
        ]
    };
    Ok(Experiment {
        name: "000-table5",
        title: "000 Table 5: factorial CRF for joint POS tagging and NP chunking".into(),
        protocol: vec![
            "Data: CoNLL-2000; POS tags (45) and NP chunks (B-NP, I-NP, O; other chunk types become O) both predicted.".into(),
            format!("Training data: {}; test: {}.", sizes("5 random subsets of 223 sentences (seeds 0–4)", "1 random subset of 20 sentences (quick)"), sizes("the standard test set (2,012 sentences)", "its first 40 sentences")),
            "Model: eq. 40, Ψ0(y_t, y_{t−1}), Ψ1(w_t, w_{t−1}), Ψ2(w_t, y_t), each log-linear in 000 Table 2's features (±3 window) plus an always-on feature with every label pair; feature–label pairs seen in training. For Table 2's Brill-tagger lexicon, the word → tags lexicon of the Penn Treebank sample in ../shared/data (sections 00–01, disjoint from CoNLL-2000's); the company and geographic lists are not available, and the POS tags are predicted, never an input.".into(),
            "Estimators: pw (factor-as-piece), pl, pl-edge (eq. 42), bp (loopy BP, Bethe), and ml — exact maximum likelihood by forward–backward over the 45 × 3 joint states, which the paper did not have. L-BFGS, σ² = 10. Decoding: max-product BP (000 §5).".into(),
        ],
        groups: gs,
        tables: vec![Table {
            title: "Noun-phrase F1, POS accuracy and training time".into(),
            columns: vec!["NP F1".into(), "POS accuracy".into(), "train s".into()],
            rows: vec![
                ("Piecewise".into(), row("pw", p(88.1, Some(0.48)))),
                ("Pseudolikelihood".into(), row("pl", p(84.9, Some(0.39)))),
                ("Per-edge PL".into(), row("pl-edge", p(86.5, Some(0.64)))),
                ("BP".into(), row("bp", p(86.0, Some(0.39)))),
                ("Exact ML (not in the paper)".into(), row("ml", None)),
            ],
        }],
        figure: Figure::Bars(1),
        analysis: Some(bp_vs_exact),
    })
}

fn table6_or_9(o: &Options, name: &str) -> Result<Experiment> {
    let folds = seminar_folds(o, reps(o, 10))?;
    let table6 = name == "000-table6";
    let ests: &[&str] = if table6 {
        &["pw", "pl", "pl-edge", "bp"]
    } else {
        &["bp", "pl", "pw", "pwpl"]
    };
    // The linear chain first: BP training starts from it (000 §5.1.3).
    let mut gs = seminar_groups(o, &folds, &["ml"], "seminars-chain/", false);
    gs.extend(seminar_groups(o, &folds, ests, "seminars/", true));
    for g in gs.iter_mut().filter(|g| g.name == "seminars/bp") {
        for (k, r) in g.runs.iter_mut().enumerate() {
            r.init_from = Some(run_dir(o, "seminars-chain/ml", k));
        }
    }
    let f1 = |l: &str| Metric::LabelF1(l.into());
    let protocol = vec![
        "Data: the CMU seminar announcements (485 e-mails) pooled and split at random 50/50 into training and test, ten times (seeds 1000–1009), as the paper's \"10-fold cross validation with a 50/50 training/test split\".".into(),
        if o.quick { "Quick: one split, 8 training and 6 test e-mails, 5 iterations." } else { "Full: ten splits, L-BFGS to convergence." }.into(),
        "Model: eq. 41, a linear chain of edge factors Ψ_t(y_t, y_{t−1}, x) (observation weights per label pair) plus a skip factor between every pair of identical capitalised words of an e-mail; 000 Table 3's features (±4 window, name lists, time and date patterns); feature–label pairs seen in training. Labels: the four fields and O, token by token.".into(),
        "Estimators: pw, pl, pl-edge, pwpl, bp (loopy BP, initialised from the trained linear chain as 000 §5.1.3 says the paper had to); the linear chain (no skip edges) trained by exact ML beside them. σ² = 10. Decoding: max-product BP. Per-field token F1.".into(),
    ];
    Ok(if table6 {
        let row = |g: &str, loc: Option<(f64, Option<f64>)>, spk: Option<(f64, Option<f64>)>| {
            vec![
                cell(g, f1("location"), loc),
                cell(g, f1("speaker"), spk),
                cell(g, Metric::Seconds, None),
            ]
        };
        Experiment {
            name: "000-table6",
            title: "000 Table 6: skip-chain CRF on seminar announcements".into(),
            protocol,
            groups: gs,
            tables: vec![Table {
                title: "Token F1 (location, speaker) and training time".into(),
                columns: vec!["location".into(), "speaker".into(), "train s".into()],
                rows: vec![
                    (
                        "Piecewise".into(),
                        row("seminars/pw", p(87.7, Some(1.2)), p(75.4, Some(2.5))),
                    ),
                    (
                        "Pseudolikelihood".into(),
                        row("seminars/pl", p(67.1, Some(4.8)), p(25.5, Some(4.2))),
                    ),
                    (
                        "Per-edge PL".into(),
                        row("seminars/pl-edge", p(76.9, Some(4.1)), p(69.3, Some(3.0))),
                    ),
                    (
                        "BP".into(),
                        row("seminars/bp", p(86.6, Some(1.5)), p(78.2, Some(1.8))),
                    ),
                    (
                        "Linear chain, exact ML".into(),
                        row("seminars-chain/ml", None, None),
                    ),
                ],
            }],
            figure: Figure::Bars(2),
            analysis: None,
        }
    } else {
        let paper = [
            (
                "stime",
                "START-TIME",
                [96.5, 82.2, 97.1, 94.1],
                [2.3, 6.1, 0.42, 0.78],
            ),
            (
                "etime",
                "END-TIME",
                [95.9, 73.4, 96.5, 90.4],
                [2.4, 3.8, 0.49, 2.7],
            ),
            (
                "location",
                "LOCATION",
                [85.8, 73.0, 88.1, 85.3],
                [5.2, 2.1, 1.2, 1.6],
            ),
            (
                "speaker",
                "SPEAKER",
                [74.5, 27.9, 72.7, 65.0],
                [5.7, 3.1, 3.1, 5.2],
            ),
        ];
        let mut rows: Vec<(String, Vec<Option<Cell>>)> = paper
            .iter()
            .map(|(field, title, m, sd)| {
                (
                    title.to_string(),
                    ["bp", "pl", "pw", "pwpl"]
                        .iter()
                        .enumerate()
                        .map(|(i, g)| {
                            cell(&format!("seminars/{g}"), f1(field), p(m[i], Some(sd[i])))
                        })
                        .collect(),
                )
            })
            .collect();
        rows.push((
            "train s".into(),
            ["bp", "pl", "pw", "pwpl"]
                .iter()
                .map(|g| cell(&format!("seminars/{g}"), Metric::Seconds, None))
                .collect(),
        ));
        Experiment {
            name: "000-table9",
            title: "000 Table 9: PWPL, PW, PL and BP on seminar announcements".into(),
            protocol,
            groups: gs,
            tables: vec![Table {
                title: "Token F1 per field (rows) by estimator (columns)".into(),
                columns: vec!["BP".into(), "PL".into(), "PW".into(), "PWPL".into()],
                rows,
            }],
            figure: Figure::Bars(4),
            analysis: None,
        }
    })
}

fn table7(o: &Options) -> Result<Experiment> {
    let (train, test, model) = ner_task(o)?;
    let mut gs = groups(&["pw", "pw-reweighted"], "ner/", 1, |_| {
        base_spec(o, train.clone(), test.clone(), model.clone())
    });
    gs.extend(factorial_groups(o, &["pw", "pw-reweighted"], "fcrf/")?);
    let folds = seminar_folds(o, reps(o, 10))?;
    gs.extend(seminar_groups(
        o,
        &folds,
        &["pw", "pw-reweighted"],
        "seminars/",
        true,
    ));
    let pair = |prefix: &str, m: Metric, basic: f64, rw: f64| {
        vec![
            cell(&format!("{prefix}pw"), m.clone(), p(basic, None)),
            cell(&format!("{prefix}pw-reweighted"), m, p(rw, None)),
        ]
    };
    Ok(Experiment {
        name: "000-table7",
        title: "000 Table 7: basic piecewise against reweighted piecewise with uniform μ".into(),
        protocol: vec![
            "Reweighted PW (eq. 35) with uniform μ_a = 1/|pieces| per instance, against basic PW, on the three models of Tables 4–6 with their data and protocol (NER: Dutch CoNLL-2002, one run; factorial: 5 subsets of 223 CoNLL-2000 sentences; skip-chain: 10 random 50/50 seminar splits). σ² = 10; max-product decoding.".into(),
            if o.quick { "Quick: shrunk data, one repetition each, 5 iterations.".into() } else { "Full runs.".into() },
        ],
        groups: gs,
        tables: vec![Table {
            title: "F1 (NER: entities; FCRF: NP chunks; skip-chain: token F1 of a field)".into(),
            columns: vec!["Basic".into(), "Reweighted".into()],
            rows: vec![
                ("Linear-chain".into(), pair("ner/", Metric::SegmentF1, 91.2, 90.4)),
                ("FCRF".into(), pair("fcrf/", Metric::SegmentF1, 88.1, 86.4)),
                ("Skip-chain (location)".into(), pair("seminars/", Metric::LabelF1("location".into()), 87.7, 75.5)),
                ("Skip-chain (speaker)".into(), pair("seminars/", Metric::LabelF1("speaker".into()), 75.4, 69.2)),
            ],
        }],
        figure: Figure::Bars(2),
        analysis: None,
    })
}

fn table8(o: &Options) -> Result<Experiment> {
    let sizes = |full: &str, quick: &str| sizes(o, full, quick);
    let ests = ["ml", "pl", "pw", "pwpl"];
    // POS: the Treebank sample, first 3,000 sentences the pool, the rest the test set.
    let ptb = need(o.data.join("ptb-wsj-sample").join("treebank.tsv"))?;
    let mut c = read_conll_with(&ptb, LabelColumn::Last)?;
    for s in &mut c.sequences {
        for cols in &mut s.columns {
            let extra = crate::data::word_columns(&cols[0]);
            cols.splice(1..1, extra);
        }
    }
    let w = o.out.join("data");
    let (pool_n, test_n) = if o.quick {
        (60, 30)
    } else {
        (3000, usize::MAX)
    };
    let pool = write_items(
        &c.sequences[..pool_n.min(c.sequences.len())],
        &w.join("ptb-pool.conll"),
    )?;
    let rest = &c.sequences[3000.min(c.sequences.len())..];
    let ptest = write_items(&rest[..test_n.min(rest.len())], &w.join("ptb-test.conll"))?;
    let template = Some(bundled_template(o, "pos.tpl", POS_TEMPLATE)?);
    let chain = |f: Factorisation| {
        ModelSpec::LinearChain(ChainOptions {
            factorisation: f,
            feature_set: FeatureSet::Observed,
            ..ChainOptions::default()
        })
    };
    let mut gs = groups(&ests, "pos/", reps(o, 5), |k| {
        let mut s = base_spec(o, pool.clone(), ptest.clone(), chain(Factorisation::Edge));
        s.template = template.clone();
        s.train_sample = Some(if o.quick { 30 } else { 1911 });
        s.seed = k as u64;
        s
    });
    let (ctrain, ctest) = conll2000(o)?;
    gs.extend(groups(&ests, "chunk/", reps(o, 5), |k| {
        let mut s = base_spec(o, ctrain.clone(), ctest.clone(), chain(Factorisation::Edge));
        s.train_sample = Some(if o.quick { 20 } else { 447 });
        s.seed = k as u64;
        s
    }));
    let (ntrain, ntest, nmodel) = ner_task(o)?;
    gs.extend(groups(&ests, "ner/", 1, |_| {
        base_spec(o, ntrain.clone(), ntest.clone(), nmodel.clone())
    }));
    let row = |prefix: &str, m: Metric, paper: [(f64, Option<f64>); 4]| {
        ests.iter()
            .zip(paper)
            .map(|(e, (v, sd))| cell(&format!("{prefix}{e}"), m.clone(), p(v, sd)))
            .collect::<Vec<_>>()
    };
    Ok(Experiment {
        name: "000-table8",
        title: "000 Table 8: piecewise pseudolikelihood against PW, PL and ML".into(),
        protocol: vec![
            format!("POS: the Penn Treebank sample (45 tags); {}; tested on {}. Template assets/templates/pos.tpl (word, affixes, shape) on `augment` columns; the paper used 1,911-sentence subsets of sections 0–18 and the development set.", sizes("5 random subsets of 1,911 of its first 3,000 sentences", "1 subset of 30 of its first 60 (quick)"), sizes("the remaining 914 sentences", "30 of them")),
            format!("Chunking: CoNLL-2000, all chunk types; {}; the standard test set ({}); the CRF++ chunking template (words and the given POS tags).", sizes("5 random subsets of 447 sentences", "1 subset of 20 (quick)"), sizes("2,012 sentences", "its first 40")),
            "Named entities: as 000-table4 (Dutch CoNLL-2002; the paper's is English CoNLL-2003).".into(),
            "Chains with one factor per edge (\"no unary factors\"; NER with observation weights per label pair), feature–label pairs seen in training; σ² = 10; Viterbi decoding. Accuracy: token accuracy for POS, chunk F1 for chunking, entity F1 for NER.".into(),
        ],
        groups: gs,
        tables: vec![Table {
            title: "Accuracy and training time (seconds) by estimator".into(),
            columns: vec!["ML".into(), "PL".into(), "PW".into(), "PWPL".into()],
            rows: vec![
                ("POS accuracy".into(), row("pos/", Metric::TokenAccuracy, [(94.4, Some(0.07)), (94.4, Some(0.05)), (94.3, Some(0.08)), (94.4, Some(0.07))])),
                ("POS time (s)".into(), row("pos/", Metric::Seconds, [(33846.0, Some(6800.0)), (6705.0, Some(740.0)), (23537.0, Some(8700.0)), (3911.0, Some(1500.0))])),
                ("Chunking F1".into(), row("chunk/", Metric::SegmentF1, [(91.4, Some(0.21)), (90.3, Some(0.19)), (91.7, Some(0.14)), (91.4, Some(0.12))])),
                ("Chunking time (s)".into(), row("chunk/", Metric::Seconds, [(24769.0, Some(6183.0)), (1534.0, Some(165.0)), (5708.0, Some(701.0)), (766.0, Some(83.0))])),
                ("NER F1".into(), row("ner/", Metric::SegmentF1, [(90.5, None), (85.1, None), (90.5, None), (90.3, None)])),
                ("NER time (s)".into(), row("ner/", Metric::Seconds, [(52396.0, None), (8651.0, None), (6311.0, None), (4780.0, None)])),
            ],
        }],
        figure: Figure::Bars(4),
        analysis: None,
    })
}

/// 000 Fig. 4: PWPL and PL test accuracy against the number of training sequences, on data
/// from the α-mixture of a first- and a second-order HMM (eq. 43–44; 5 states, 26 symbols,
/// length 25), averaged over generating distributions.
fn fig4(o: &Options) -> Result<Experiment> {
    let (alphas, dists, sizes, n_test): (Vec<f64>, usize, Vec<usize>, usize) = if o.quick {
        (vec![0.5], 1, vec![10, 40], 50)
    } else {
        (
            vec![0.0, 0.1, 0.25, 0.5, 0.75, 1.0],
            5,
            vec![10, 25, 50, 100, 250, 500, 1000],
            1000,
        )
    };
    let max_n = *sizes.iter().max().unwrap();
    let w = o.out.join("data");
    let template = Some(bundled_template(o, "hmm.tpl", HMM_TEMPLATE)?);
    let mut data = vec![];
    for (ai, &a) in alphas.iter().enumerate() {
        for d in 0..dists {
            let seed = (ai * 1000 + d) as u64;
            let all = crate::data::synth::hmm_mixture(a, seed, max_n + n_test, 25);
            let tr = write_items(&all[..max_n], &w.join(format!("hmm-{a}-{d}-train.conll")))?;
            let te = write_items(&all[max_n..], &w.join(format!("hmm-{a}-{d}-test.conll")))?;
            data.push((tr, te));
        }
    }
    let mut gs = vec![];
    for e in ["pl", "pwpl"] {
        for &n in &sizes {
            gs.push(Group {
                name: format!("fig4/{e}-{n}"),
                runs: data
                    .iter()
                    .enumerate()
                    .map(|(k, (tr, te))| {
                        let mut s = base_spec(o, tr.clone(), te.clone(), ModelSpec::default());
                        s.name = Some(format!("{e}-{n}-{k}"));
                        s.template = template.clone();
                        s.estimator = estimator(e);
                        s.train_sample = Some(n);
                        s.decode = Decoder::Viterbi;
                        s
                    })
                    .collect(),
            });
        }
    }
    let rows = sizes
        .iter()
        .map(|n| {
            (
                n.to_string(),
                vec![
                    cell(&format!("fig4/pl-{n}"), Metric::TokenAccuracy, None),
                    cell(&format!("fig4/pwpl-{n}"), Metric::TokenAccuracy, None),
                ],
            )
        })
        .collect();
    Ok(Experiment {
        name: "000-fig4",
        title: "000 Fig. 4: learning curves of PWPL and pseudolikelihood".into(),
        protocol: vec![
            format!(
                "Data: the α-mixture of a second- and a first-order HMM (eq. 43–44): 5 states, 26 symbols, sequences of 25; α ∈ {alphas:?}, {dists} generating distribution(s) per α (the paper: 25), {n_test} test sequences each."
            ),
            format!("Training sets: the first N of each distribution's training sequences drawn at random (seeded), N ∈ {sizes:?}."),
            "Model: first-order linear chain with assets/templates/hmm.tpl (the observation and its neighbours); σ² = 10; Viterbi decoding. The curve is mean test token accuracy over every distribution (± sd in the table).".into(),
        ],
        groups: gs,
        tables: vec![Table {
            title: "Test accuracy by training-set size (sequences)".into(),
            columns: vec!["PL".into(), "PWPL".into()],
            rows,
        }],
        figure: Figure::Lines {
            x_label: "training sequences".into(),
            xs: sizes.iter().map(|&n| n as f64).collect(),
            series: ["pl", "pwpl"]
                .iter()
                .map(|e| {
                    (
                        e.to_uppercase(),
                        sizes.iter().map(|n| format!("fig4/{e}-{n}")).collect(),
                    )
                })
                .collect(),
            metric: Metric::TokenAccuracy,
        },
        analysis: None,
    })
}

// ---------------------------------------------------------------------------------------------
// Running and reporting.

/// Progress of a reproduction, for the caller to print.
pub enum Event<'a> {
    Reused(&'a str, usize),
    Started(&'a str, usize, usize, usize),
    Finished(&'a str, usize, &'a RunSummary),
}

/// Runs (or reuses) every run of the experiment; returns them by group.
pub fn run_all(e: &Experiment, o: &Options, on: &mut dyn FnMut(Event)) -> Result<Results> {
    let mut out = Results::new();
    let total: usize = e.groups.iter().map(|g| g.runs.len()).sum();
    let mut done = 0;
    for g in &e.groups {
        let mut rs = vec![];
        for (k, spec) in g.runs.iter().enumerate() {
            done += 1;
            let dir = run_dir(o, &g.name, k);
            if let Some(s) = finished(&dir, spec) {
                on(Event::Reused(&g.name, k));
                rs.push((dir, s));
                continue;
            }
            on(Event::Started(&g.name, k, done, total));
            let s = execute(spec, &dir, &AtomicBool::new(false), &mut |_| {}).map_err(|err| {
                Error::invalid(format!("{} run {k} ({}): {err}", g.name, dir.display()))
            })?;
            on(Event::Finished(&g.name, k, &s));
            rs.push((dir, s));
        }
        out.insert(g.name.clone(), rs);
    }
    Ok(out)
}

/// Where repetition `k` of a group runs: `OUT/runs/GROUP/K`. Group names carry their task
/// (`fcrf/pw`, `seminars/bp`), so experiments sharing runs (Tables 6, 7 and 9 on the seminars)
/// reuse them when they share an output folder.
pub fn run_dir(o: &Options, group: &str, k: usize) -> PathBuf {
    o.out.join("runs").join(group).join(k.to_string())
}

/// The run in `dir` when it finished with exactly `spec`.
fn finished(dir: &Path, spec: &RunSpec) -> Option<RunSummary> {
    let s: RunSummary = crate::util::read_json(&dir.join("summary.json")).ok()?;
    let old: serde_json::Value = crate::util::read_json(&dir.join("spec.json")).ok()?;
    let new = serde_json::to_value(spec).ok()?;
    (s.status == "finished" && old == new).then_some(s)
}

fn stat(results: &Results, c: &Cell) -> Option<Stat> {
    let runs = results.get(&c.group)?;
    Stat::of(runs.iter().filter_map(|(_, s)| c.metric.of(s)).collect())
}

fn fmt_stat(s: &Option<Stat>, seconds: bool) -> String {
    match s {
        None => "—".into(),
        Some(s) if seconds => {
            if s.values.len() > 1 {
                format!("{:.1} ± {:.1}", s.mean, s.sd)
            } else {
                format!("{:.1}", s.mean)
            }
        }
        Some(s) if s.values.len() > 1 => format!("{:.2} ± {:.2}", s.mean, s.sd),
        Some(s) => format!("{:.2}", s.mean),
    }
}

fn fmt_paper(p: &Option<(f64, Option<f64>)>) -> String {
    match p {
        None => "—".into(),
        Some((m, Some(sd))) => format!("{m:.1} ± {sd}"),
        Some((m, None)) => format!("{m:.1}"),
    }
}

/// The machine, for the report: CPU model and cores.
pub fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{cpu}, {cores} cores, {}", std::env::consts::OS)
}

fn commit() -> String {
    std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into())
}

/// Writes `NAME.md`, `NAME.json` and `NAME.svg` into `o.out`; returns the Markdown.
pub fn report(e: &Experiment, o: &Options, results: &Results, date: &str) -> Result<String> {
    use std::fmt::Write;
    let mut md = String::new();
    let _ = writeln!(md, "# {}\n", e.title);
    let _ = writeln!(
        md,
        "`piecewise-lab reproduce {}{}` — {date}, commit {}, {}.\n",
        e.name,
        if o.quick { " --quick" } else { "" },
        commit(),
        machine()
    );
    if o.quick {
        let _ = writeln!(
            md,
            "**Quick form**: shrunk data and iterations; it checks the machinery, the numbers mean nothing.\n"
        );
    }
    let _ = writeln!(md, "## Protocol\n");
    for l in &e.protocol {
        let _ = writeln!(md, "- {l}");
    }
    let mut tables_json = vec![];
    for t in &e.tables {
        let _ = writeln!(md, "\n## {}\n", t.title);
        let mut head = "| |".to_string();
        let mut rule = "|---|".to_string();
        for c in &t.columns {
            let _ = write!(head, " {c} (ours) | {c} (paper) |");
            rule.push_str("---:|---:|");
        }
        let _ = writeln!(md, "{head}\n{rule}");
        let mut rows_json = vec![];
        for (label, cells) in &t.rows {
            let mut line = format!("| {label} |");
            let mut cells_json = vec![];
            for c in cells {
                match c {
                    Some(c) => {
                        let s = stat(results, c);
                        let seconds = c.metric == Metric::Seconds;
                        let _ = write!(
                            line,
                            " {} | {} |",
                            fmt_stat(&s, seconds),
                            fmt_paper(&c.paper)
                        );
                        cells_json.push(serde_json::json!({
                            "group": c.group, "metric": c.metric, "ours": s,
                            "paper": c.paper.map(|(m, sd)| serde_json::json!({"mean": m, "sd": sd})),
                        }));
                    }
                    None => {
                        line.push_str(" — | — |");
                        cells_json.push(serde_json::Value::Null);
                    }
                }
            }
            let _ = writeln!(md, "{line}");
            rows_json.push(serde_json::json!({ "label": label, "cells": cells_json }));
        }
        tables_json.push(serde_json::json!({
            "title": t.title, "columns": t.columns, "rows": rows_json,
        }));
    }
    let mut analysis_json = serde_json::Value::Null;
    if let Some(a) = e.analysis {
        let s = a(e, o)?;
        let _ = writeln!(md, "\n## {}\n\n{}", s.title, s.markdown);
        analysis_json = serde_json::json!({ "title": s.title, "data": s.json });
    }
    let _ = writeln!(
        md,
        "\n![{}]({}.svg)\n\nRuns: `runs/TASK/ESTIMATOR/REP/` (each a run directory with `spec.json`, `summary.json`, `curve.jsonl`).",
        e.title, e.name
    );
    let runs_json: serde_json::Map<String, serde_json::Value> = results
        .iter()
        .map(|(g, rs)| {
            (
                g.clone(),
                serde_json::Value::Array(
                    rs.iter()
                        .map(|(d, s)| {
                            serde_json::json!({
                                "dir": d.strip_prefix(&o.out).unwrap_or(d),
                                "train_seconds": s.train_seconds,
                                "iterations": s.iterations,
                                "test": s.test.as_ref().map(|t| serde_json::json!({
                                    "token_accuracy": t.token_accuracy,
                                    "segment_f1": t.segments.f1,
                                    "labels": t.labels.iter().map(|(k, v)| (k.clone(), v.f1)).collect::<std::collections::BTreeMap<_, _>>(),
                                    "layers": t.layers.iter().map(|(k, v)| (k.clone(), v.token_accuracy)).collect::<std::collections::BTreeMap<_, _>>(),
                                })),
                            })
                        })
                        .collect(),
                ),
            )
        })
        .collect();
    let json = serde_json::json!({
        "name": e.name, "title": e.title, "quick": o.quick, "date": date,
        "commit": commit(), "machine": machine(), "protocol": e.protocol,
        "tables": tables_json, "analysis": analysis_json, "runs": runs_json,
    });
    write_json_atomic(&o.out.join(format!("{}.json", e.name)), &json)?;
    write_atomic(
        &o.out.join(format!("{}.svg", e.name)),
        figure(e, results).as_bytes(),
    )?;
    write_atomic(&o.out.join(format!("{}.md", e.name)), md.as_bytes())?;
    Ok(md)
}

/// The experiment's figure as SVG.
pub fn figure(e: &Experiment, results: &Results) -> String {
    match &e.figure {
        Figure::Bars(n) => bars(e, results, *n),
        Figure::Lines {
            x_label,
            xs,
            series,
            metric,
        } => {
            let ys: Vec<(String, Vec<Option<Stat>>)> = series
                .iter()
                .map(|(name, gs)| {
                    (
                        name.clone(),
                        gs.iter()
                            .map(|g| {
                                stat(
                                    results,
                                    &Cell {
                                        group: g.clone(),
                                        metric: metric.clone(),
                                        paper: None,
                                    },
                                )
                            })
                            .collect(),
                    )
                })
                .collect();
            lines(&e.title, x_label, xs, &ys)
        }
    }
}

const PALETTE: [&str; 6] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Grouped bars: one group per row of the first table, one bar per of its first `n` columns;
/// whiskers ±sd; the paper's value a black tick.
fn bars(e: &Experiment, results: &Results, n: usize) -> String {
    use std::fmt::Write;
    let t = &e.tables[0];
    let n = n.min(t.columns.len()).max(1);
    // Scores only: rows of seconds have their own scale (they are in the table).
    let rows: Vec<&(String, Vec<Option<Cell>>)> = t
        .rows
        .iter()
        .filter(|(_, cells)| !cells.iter().flatten().all(|c| c.metric == Metric::Seconds))
        .collect();
    let vals: Vec<Vec<(Option<Stat>, Option<f64>)>> = rows
        .iter()
        .map(|(_, cells)| {
            cells[..n.min(cells.len())]
                .iter()
                .map(|c| match c {
                    Some(c) => (stat(results, c), c.paper.map(|p| p.0)),
                    None => (None, None),
                })
                .collect()
        })
        .collect();
    let all: Vec<f64> = vals
        .iter()
        .flatten()
        .flat_map(|(s, p)| s.iter().map(|s| s.mean + s.sd).chain(*p))
        .collect();
    let hi = all.iter().cloned().fold(1.0, f64::max);
    let lo = all.iter().cloned().fold(hi, f64::min);
    // Round axis ends: multiples of 10 for percentages, of a power of ten for seconds.
    let unit = if hi > 100.0 {
        10f64.powf(hi.log10().floor())
    } else {
        10.0
    };
    let top = (hi / unit).ceil() * unit;
    let bottom = if lo > 50.0 && hi <= 100.0 {
        ((lo - 5.0) / unit).floor() * unit
    } else {
        0.0
    };
    let (w, h, ml, mb, mt) = (760.0, 420.0, 60.0, 90.0, 40.0);
    let ph = h - mb - mt;
    let gw = (w - ml - 20.0) / rows.len().max(1) as f64;
    let bw = gw * 0.8 / n as f64;
    let y = |v: f64| mt + ph * (1.0 - ((v - bottom) / (top - bottom).max(1e-9)).clamp(0.0, 1.0));
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12"><rect width="100%" height="100%" fill="white"/><text x="{}" y="22" text-anchor="middle" font-size="14">{}</text>"#,
        w / 2.0,
        esc(&e.title)
    );
    for v in ticks(bottom, top) {
        let _ = write!(
            s,
            r##"<line x1="{ml}" x2="{}" y1="{y0:.1}" y2="{y0:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{v}</text>"##,
            w - 20.0,
            ml - 6.0,
            y(v) + 4.0,
            y0 = y(v)
        );
    }
    for (r, ((label, _), row)) in rows.iter().map(|r| (&r.0, &r.1)).zip(&vals).enumerate() {
        let x0 = ml + gw * r as f64 + gw * 0.1;
        for (c, (st, paper)) in row.iter().enumerate() {
            let x = x0 + bw * c as f64;
            if let Some(st) = st {
                let _ = write!(
                    s,
                    r#"<rect x="{x:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{}"/>"#,
                    y(st.mean),
                    bw * 0.9,
                    (y(bottom) - y(st.mean)).max(0.0),
                    PALETTE[c % PALETTE.len()]
                );
                let xm = x + bw * 0.45;
                if st.values.len() > 1 {
                    let _ = write!(
                        s,
                        r#"<line x1="{xm:.1}" x2="{xm:.1}" y1="{:.1}" y2="{:.1}" stroke="black"/>"#,
                        y(st.mean - st.sd),
                        y(st.mean + st.sd)
                    );
                }
            }
            if let Some(pv) = paper {
                let _ = write!(
                    s,
                    r#"<line x1="{x:.1}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="black" stroke-width="3"/>"#,
                    x + bw * 0.9,
                    y(*pv),
                    y(*pv)
                );
            }
        }
        // The row's label under its bars, wrapped into lines of about 16 characters.
        let mut lines: Vec<String> = vec![String::new()];
        for word in label.split_whitespace() {
            let last = lines.last_mut().expect("one line");
            if !last.is_empty() && last.len() + word.len() > 16 {
                lines.push(word.to_string());
            } else {
                if !last.is_empty() {
                    last.push(' ');
                }
                last.push_str(word);
            }
        }
        for (i, l) in lines.iter().enumerate() {
            let _ = write!(
                s,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
                x0 + gw * 0.4,
                h - mb + 16.0 + 14.0 * i as f64,
                esc(l)
            );
        }
    }
    for (c, name) in t.columns[..n].iter().enumerate() {
        let lx = ml + 10.0 + 150.0 * c as f64;
        let _ = write!(
            s,
            r#"<rect x="{lx}" y="{}" width="12" height="12" fill="{}"/><text x="{}" y="{}">{} (ours, ±sd)</text>"#,
            h - 22.0,
            PALETTE[c % PALETTE.len()],
            lx + 16.0,
            h - 12.0,
            esc(name)
        );
    }
    let _ = write!(
        s,
        r#"<line x1="{0}" x2="{1}" y1="{2}" y2="{2}" stroke="black" stroke-width="3"/><text x="{3}" y="{4}">paper</text></svg>"#,
        w - 120.0,
        w - 100.0,
        h - 16.0,
        w - 95.0,
        h - 12.0
    );
    s
}

/// Round tick values from `lo` to `hi`: steps of 1, 2 or 5 × 10^k, about five of them.
fn ticks(lo: f64, hi: f64) -> Vec<f64> {
    let span = (hi - lo).max(1e-9);
    let raw = span / 5.0;
    let p = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|&st| st >= raw)
        .unwrap_or(10.0 * p);
    let first = (lo / step).ceil() * step;
    (0..)
        .map(|i| first + step * i as f64)
        .take_while(|&v| v <= hi + 1e-9)
        .map(|v| (v / step).round() * step)
        .collect()
}

/// Lines of the means over a logarithmic x axis, each point with whiskers of ± one standard
/// error of the mean (sd/√n: the spread between generating distributions is much wider than
/// the difference of the means it would hide).
fn lines(title: &str, x_label: &str, xs: &[f64], ys: &[(String, Vec<Option<Stat>>)]) -> String {
    use std::fmt::Write;
    let (w, h, ml, mb, mt) = (760.0, 420.0, 60.0, 60.0, 40.0);
    let se = |s: &Stat| s.sd / (s.values.len() as f64).sqrt();
    let vals: Vec<f64> = ys
        .iter()
        .flat_map(|(_, v)| {
            v.iter()
                .flatten()
                .flat_map(|s| [s.mean - se(s), s.mean + se(s)])
        })
        .collect();
    let (lo, hi) = (
        vals.iter().cloned().fold(f64::INFINITY, f64::min),
        vals.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
    );
    let (lo, hi) = if lo.is_finite() {
        (lo.floor(), hi.ceil().max(lo.floor() + 1.0))
    } else {
        (0.0, 100.0)
    };
    let (x0, x1) = (
        xs.iter().cloned().fold(f64::INFINITY, f64::min).ln(),
        xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max).ln(),
    );
    let px = |x: f64| ml + 10.0 + (w - ml - 40.0) * ((x.ln() - x0) / (x1 - x0).max(1e-9));
    let py = |v: f64| mt + (h - mt - mb) * (1.0 - (v - lo) / (hi - lo));
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12"><rect width="100%" height="100%" fill="white"/><text x="{}" y="22" text-anchor="middle" font-size="14">{}</text>"#,
        w / 2.0,
        esc(title)
    );
    for v in ticks(lo, hi) {
        let _ = write!(
            s,
            r##"<line x1="{ml}" x2="{}" y1="{y0:.1}" y2="{y0:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{v}</text>"##,
            w - 20.0,
            ml - 6.0,
            py(v) + 4.0,
            y0 = py(v)
        );
    }
    for &x in xs {
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{}" text-anchor="middle">{x}</text>"#,
            px(x),
            h - mb + 18.0
        );
    }
    let _ = write!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">{}</text><text x="16" y="{}" transform="rotate(-90 16 {})" text-anchor="middle">test accuracy (%)</text>"#,
        w / 2.0,
        h - mb + 40.0,
        esc(x_label),
        h / 2.0,
        h / 2.0
    );
    for (i, (name, v)) in ys.iter().enumerate() {
        let col = PALETTE[i % PALETTE.len()];
        let pts: Vec<(f64, &Stat)> = xs
            .iter()
            .zip(v)
            .filter_map(|(&x, s)| s.as_ref().map(|s| (x, s)))
            .collect();
        if pts.is_empty() {
            continue;
        }
        let line: Vec<String> = pts
            .iter()
            .map(|(x, s)| format!("{:.1},{:.1}", px(*x), py(s.mean)))
            .collect();
        let _ = write!(
            s,
            r#"<polyline points="{}" fill="none" stroke="{col}" stroke-width="2"/>"#,
            line.join(" ")
        );
        for (x, st) in &pts {
            let (cx, e) = (px(*x), se(st));
            let _ = write!(
                s,
                r#"<circle cx="{cx:.1}" cy="{:.1}" r="3" fill="{col}"/><line x1="{cx:.1}" x2="{cx:.1}" y1="{:.1}" y2="{:.1}" stroke="{col}"/>"#,
                py(st.mean),
                py(st.mean - e),
                py(st.mean + e)
            );
        }
        let ly = mt + 10.0 + 16.0 * i as f64;
        let _ = write!(
            s,
            r#"<rect x="{}" y="{}" width="12" height="12" fill="{col}"/><text x="{}" y="{}">{} (mean ± s.e.)</text>"#,
            ml + 16.0,
            ly - 10.0,
            ml + 32.0,
            ly,
            esc(name)
        );
    }
    s.push_str("</svg>");
    s
}

// ---------------------------------------------------------------------------------------------
// Table 5's analysis: how far BP is from exact inference on the factorial CRF.

/// At each trained weight vector of the `ml` and `bp` groups: the mean absolute difference
/// between sum-product BP's node beliefs and the exact marginals (forward–backward over joint
/// states) on the test data, and NP F1 under exact Viterbi and under max-product BP decoding.
fn bp_vs_exact(e: &Experiment, o: &Options) -> Result<Section> {
    use crate::inference::{bp_node_marginals, exact_node_marginals};
    use std::fmt::Write;
    let mut md = String::from(
        "At the trained weights of each subset, on the test data: the mean and largest absolute difference between sum-product BP's node beliefs and the exact marginals (forward–backward over the 135 joint states), and NP F1 with exact Viterbi decoding against max-product BP decoding.\n\n| weights from | mean \\|b − p\\| | max \\|b − p\\| | NP F1, exact Viterbi | NP F1, max-product BP | BP unconverged |\n|---|---:|---:|---:|---:|---:|\n",
    );
    let mut json = serde_json::Map::new();
    for g in ["fcrf/ml", "fcrf/bp"] {
        let Some(group) = e.groups.iter().find(|x| x.name == g) else {
            continue;
        };
        let (mut mean_d, mut max_d, mut f_exact, mut f_mp, mut unconv) =
            (vec![], vec![], vec![], vec![], 0usize);
        for (k, spec) in group.runs.iter().enumerate() {
            let (fam, theta) = crate::graph::family::load(&run_dir(o, g, k))?;
            let test = fam.read(spec.test.as_ref().expect("the experiment has a test set"))?;
            let insts = fam.instances(&test)?;
            let bp = spec.inference().bp;
            let (mut sum, mut count, mut mx) = (0.0, 0usize, 0.0f64);
            for inst in &insts {
                let phi = crate::eval::tables(fam.as_ref(), &theta, inst);
                let (exact, _) = exact_node_marginals(inst, &phi)?;
                let (beliefs, rep, _) = bp_node_marginals(inst, &phi, &bp);
                unconv += !rep.converged as usize;
                for (a, b) in exact.iter().zip(&beliefs) {
                    for (x, y) in a.iter().zip(b) {
                        let d = (x - y).abs();
                        sum += d;
                        count += 1;
                        mx = mx.max(d);
                    }
                }
            }
            mean_d.push(sum / count.max(1) as f64);
            max_d.push(mx);
            for (dec, out) in [
                (Decoder::Viterbi, &mut f_exact),
                (Decoder::MaxProduct, &mut f_mp),
            ] {
                let how = crate::eval::Inference {
                    decoder: dec,
                    bp,
                    scaling: None,
                };
                out.push(
                    crate::eval::evaluate(fam.as_ref(), &theta, &test, &how)?
                        .segments
                        .f1,
                );
            }
        }
        let (a, b, c, d) = (
            Stat::of(mean_d).map(|s| s.mean),
            Stat::of(max_d).map(|s| s.mean),
            Stat::of(f_exact),
            Stat::of(f_mp),
        );
        let _ = writeln!(
            md,
            "| {g} | {:.2e} | {:.3} | {} | {} | {unconv} |",
            a.unwrap_or(f64::NAN),
            b.unwrap_or(f64::NAN),
            fmt_stat(&c, false),
            fmt_stat(&d, false)
        );
        json.insert(
            g.into(),
            serde_json::json!({
                "mean_abs_diff": a, "max_abs_diff": b, "f1_exact": c, "f1_max_product": d,
                "bp_unconverged_instances": unconv,
            }),
        );
    }
    Ok(Section {
        title: "BP against exact inference on the factorial CRF".into(),
        markdown: md,
        json: serde_json::Value::Object(json),
    })
}

#[cfg(test)]
mod tests {
    use super::ticks;

    #[test]
    fn ticks_are_round() {
        assert_eq!(ticks(0.0, 90.0), vec![0.0, 20.0, 40.0, 60.0, 80.0]);
        assert_eq!(ticks(60.0, 90.0), vec![60.0, 70.0, 80.0, 90.0]);
        assert_eq!(ticks(0.0, 3.0), vec![0.0, 1.0, 2.0, 3.0]);
    }
}
