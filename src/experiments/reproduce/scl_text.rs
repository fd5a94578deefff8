//! 004 §8.3: SCL on CoNLL-2000 chunking with the Boltzmann chain MRF (Figs. 9–14) and the CRF
//! (Figs. 15–20): PL1/FL and PL1/PL2 policies over a λ × β grid at the paper's σ² columns, the
//! β heuristic (Algorithm 1) against the grid's best β, full likelihood alone, and the
//! accuracy–complexity frontier with §8.4's win–win.
//!
//! 004 writes "negative log-likelihood, that is, perplexity" and puts the best test value of
//! the Boltzmann chain at ≈ 190 and of the CRF at ≈ 5.5. Those levels are the negative
//! log-likelihood per *sentence* in nats (ours: 207 and 7.5 for full likelihood), not the
//! per-token perplexity exp(−ℓ/tokens) (6,789 and 1.37): the reports give both, and compare
//! the former with the paper.

use super::tasks::*;
use super::*;
use crate::error::Result;
use crate::estimators::scl::{Selection, SelectionPolicy};
use crate::estimators::EstimatorSpec;
use crate::eval::significance;
use crate::graph::boltzmann_chain::BoltzmannChainOptions;
use crate::graph::chain::ChainOptions;
use crate::optim::Prior;
use crate::run::ModelSpec;
use std::collections::BTreeMap;

#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Model {
    BoltzmannChain,
    Crf,
}

impl Model {
    fn key(self) -> &'static str {
        match self {
            Model::BoltzmannChain => "bchain",
            Model::Crf => "crf",
        }
    }
    /// The paper's σ² columns: (PL1/FL, PL1/PL2) — Figs. 9 and 11, 15 and 17.
    fn sigma2s(self) -> [[f64; 3]; 2] {
        match self {
            Model::BoltzmannChain => [[500.0, 2500.0, 5000.0], [5000.0, 10000.0, 15000.0]],
            Model::Crf => [[100.0, 1000.0, 5000.0], [10000.0, 20000.0, 40000.0]],
        }
    }
    /// How many repeated samples the full grids average over. 004 says "several". The CRF's
    /// five are the fewest at which 004-fig21's sign tests over folds can reach p < 0.05
    /// (one-sided, 1/32); the Boltzmann chain's claims are paired t-tests, and its runs cost
    /// three times the CRF's, so it has three.
    fn folds(self) -> usize {
        match self {
            Model::BoltzmannChain => 3,
            Model::Crf => 5,
        }
    }
    /// The best test value 004 reports (Fig. 9, Fig. 15 captions).
    fn paper_best(self) -> f64 {
        match self {
            Model::BoltzmannChain => 190.0,
            Model::Crf => 5.5,
        }
    }
}

const FAMILIES: [&str; 2] = ["fl", "pl2"];

pub(super) struct Grid {
    lambdas: Vec<f64>,
    betas: Vec<f64>,
    /// Which σ² of each family's three (quick: the middle one only).
    sigma_ix: Vec<usize>,
    n: usize,
    /// Repeated samples (004's "cross-validation folds, that is, resampling both the train set
    /// and the PL1/FL policy"): fold k draws its training sentences and its Z with seed k.
    folds: usize,
}

pub(super) fn grid(o: &Options, model: Model) -> Grid {
    if o.quick {
        Grid {
            lambdas: vec![0.25, 1.0],
            betas: vec![0.3, 0.7],
            sigma_ix: vec![1],
            n: 20,
            folds: 2,
        }
    } else {
        Grid {
            lambdas: vec![0.1, 0.25, 0.5, 0.75, 1.0],
            betas: vec![0.1, 0.3, 0.5, 0.7, 0.9],
            sigma_ix: vec![0, 1, 2],
            n: 100,
            folds: model.folds(),
        }
    }
}

fn policy(text: &str, auto_beta: bool, seed: u64) -> EstimatorSpec {
    let mut policy =
        SelectionPolicy::parse(text, Selection::Independent, seed).expect("a valid policy");
    policy.auto_beta = auto_beta;
    EstimatorSpec::Scl { policy }
}

fn point(model: Model, high: &str, s2: f64, l: f64, b: f64) -> String {
    format!("{}/pl1-{high}/s{s2}/l{l}-b{b}", model.key())
}
fn heuristic(model: Model, high: &str, s2: f64, l: f64) -> String {
    format!("{}/pl1-{high}/s{s2}/heuristic-l{l}", model.key())
}
fn fl(model: Model, s2: f64) -> String {
    format!("{}/fl/s{s2}", model.key())
}
/// The higher-order family alone (PL2 alone: 004 Fig. 21's red triangle).
fn alone(model: Model, high: &str, s2: f64) -> String {
    if high == "fl" {
        fl(model, s2)
    } else {
        format!("{}/{high}/s{s2}", model.key())
    }
}

/// The runs' shared setting: the data, the model and the folds.
pub(super) struct Setup<'a> {
    o: &'a Options,
    train: std::path::PathBuf,
    test: std::path::PathBuf,
    g: Grid,
    model: Model,
}

impl<'a> Setup<'a> {
    fn new(o: &'a Options, model: Model) -> Result<Self> {
        let (train, test) = conll2000(o)?;
        Ok(Setup {
            o,
            train,
            test,
            g: grid(o, model),
            model,
        })
    }

    fn base_model(&self) -> ModelSpec {
        match self.model {
            Model::BoltzmannChain => ModelSpec::BoltzmannChain(BoltzmannChainOptions::default()),
            Model::Crf => ModelSpec::LinearChain(ChainOptions::default()),
        }
    }

    /// The group `name`: policy `text` at σ² `s2` on model `m`, one run per fold.
    fn group(&self, m: &ModelSpec, s2: f64, text: &str, auto_beta: bool, name: &str) -> Group {
        Group {
            name: name.to_string(),
            runs: (0..self.g.folds)
                .map(|k| {
                    let mut s = base_spec(self.o, self.train.clone(), self.test.clone(), m.clone());
                    s.train_sample = Some(self.g.n);
                    s.seed = k as u64;
                    s.prior = Prior { sigma2: Some(s2) };
                    s.estimator = policy(text, auto_beta, k as u64);
                    s.eval_train = true;
                    s.decode = crate::eval::Decoder::Viterbi;
                    s.name = Some(name.to_string());
                    s
                })
                .collect(),
        }
    }

    /// Adds the group unless a group of that name is already in `gs`.
    fn push(&self, gs: &mut Vec<Group>, s2: f64, text: &str, auto_beta: bool, name: &str) {
        if !gs.iter().any(|x| x.name == name) {
            gs.push(self.group(&self.base_model(), s2, text, auto_beta, name));
        }
    }
}

pub(super) fn experiment(o: &Options, model: Model) -> Result<Experiment> {
    let setup = Setup::new(o, model)?;
    let g = &setup.g;
    let mut gs = vec![];
    let mut tables = vec![];
    for (fi, high) in FAMILIES.iter().enumerate() {
        for &si in &g.sigma_ix {
            let s2 = model.sigma2s()[fi][si];
            setup.push(&mut gs, s2, "1:1*fl", false, &fl(model, s2));
            let mut rows = vec![];
            for &l in &g.lambdas {
                let mut cells = vec![];
                for &b in &g.betas {
                    let name = point(model, high, s2, l, b);
                    let text = format!("1:{}*pl1 + {l}:{b}*{high}", 1.0 - b);
                    setup.push(&mut gs, s2, &text, false, &name);
                    cells.push(cell(&name, Metric::SentenceNll, None));
                }
                rows.push((format!("λ = {l}"), cells));
            }
            rows.push((
                "FL alone (first column)".into(),
                std::iter::once(cell(&fl(model, s2), Metric::SentenceNll, None))
                    .chain(g.betas.iter().skip(1).map(|_| None))
                    .collect(),
            ));
            tables.push(Table {
                title: format!(
                    "PL1/{}, σ² = {s2}: test negative log-likelihood per sentence, mean ± sd over {} folds (rows λ, columns β)",
                    high.to_uppercase(),
                    g.folds
                ),
                columns: g.betas.iter().map(|b| format!("β = {b}")).collect(),
                rows,
            });
            // The β heuristic at the middle σ² (004 Figs. 14, 20).
            if si == 1 {
                for &l in &g.lambdas {
                    let text = format!("1:0.5*pl1 + {l}:0.5*{high}");
                    setup.push(&mut gs, s2, &text, true, &heuristic(model, high, s2, l));
                }
            }
        }
    }
    let mid = |fi: usize| model.sigma2s()[fi][1];
    if model == Model::BoltzmannChain {
        tables.push(unk_experiment(&setup, mid(0), &mut gs)?);
    }
    let s2 = mid(0);
    let figure = Figure::Lines {
        x_label: format!("β (weight of FL) — PL1/FL at σ² = {s2}, one line per λ"),
        xs: g.betas.clone(),
        series: g
            .lambdas
            .iter()
            .map(|&l| {
                (
                    format!("λ = {l}"),
                    g.betas
                        .iter()
                        .map(|&b| point(model, "fl", s2, l, b))
                        .collect(),
                )
            })
            .collect(),
        metric: Metric::SentenceNll,
    };
    let (name, title, figs) = match model {
        Model::BoltzmannChain => (
            "004-boltzmann-chain",
            "004 §8.3.1: SCL for the Boltzmann chain MRF on CoNLL-2000",
            "Figs. 9–14",
        ),
        Model::Crf => (
            "004-crf",
            "004 §8.3.2: SCL for the CRF on CoNLL-2000",
            "Figs. 15–20",
        ),
    };
    let sig = model.sigma2s();
    Ok(Experiment {
        name,
        title: title.into(),
        protocol: vec![
            format!("Data (004 §8.3): {} training sentences drawn without replacement from the CoNLL-2000 training set, {} times (fold k draws its sentences and every sentence's Z with seed k: 004's \"cross-validation folds, that is, resampling both the train set and the PL1/FL policy\"); {}. Every cell is the mean ± sd over the folds.", g.n, g.folds, super::tasks::sizes(o, "the whole test set (2,012 sentences)", "the first 40 test sentences (quick)")),
            match model {
                Model::BoltzmannChain => "Model: the Boltzmann chain MRF of 004 Fig. 8: p(x, y) ∝ exp(s[y1] + Σ A[y_{t−1}, y_t] + Σ B[y_t, x_t]), words and labels both modelled; vocabulary: the training words plus `<unk>` for every other word. Components: PL1 = p(x_t, y_t | y_{t−1}, y_{t+1}), PL2 = two consecutive (word, label) pairs, FL the full likelihood.".into(),
                Model::Crf => "Model: the linear-chain CRF with the built-in CRF++ chunking template (words, POS tags, their windows). Components: PL1 = p(y_t | y_{t−1}, y_{t+1}, x), PL2 = two consecutive labels, FL the full conditional likelihood.".into(),
            },
            format!("Policies (004 §8.3): 1:(1−β)·PL1 + λ:β·HIGH for HIGH = FL and PL2, λ ∈ {:?} × β ∈ {:?}; Z drawn once per sentence and fold (independent selection). σ² the paper's columns: PL1/FL {:?}, PL1/PL2 {:?} ({figs}); no σ² chosen on test data. The β heuristic (004 Algorithm 1, `--beta auto` from β = 0.5) at every λ at the middle σ²; full likelihood alone at every σ².", g.lambdas, g.betas, sig[0], sig[1]),
            "Scores: negative log-likelihood per test sentence in nats (−log p(x, y) for the Boltzmann chain, −log p(y | x) for the CRF) — the scale of 004's \"perplexity\" (see the module note: per-token perplexity exp(−ℓ/tokens) is far from 004's levels, per-sentence NLL is close); training NLL the same on the training sentences. Decoding (for chunk F1): Viterbi.".into(),
            "L-BFGS to convergence (at most 1,000 iterations).".into(),
        ],
        groups: gs,
        tables,
        figure,
        analysis: Some(match model {
            Model::BoltzmannChain => analysis_bchain,
            Model::Crf => analysis_crf,
        }),
        claims: vec![],
    })
}

/// The controlled experiment on `<unk>` (Boltzmann chain): the full likelihood at σ² `s2` with
/// rarer training words folded into `<unk>`, and with 004's whole CoNLL-2000 vocabulary; its
/// groups go into `gs`, its table is returned.
fn unk_experiment(setup: &Setup, s2: f64, gs: &mut Vec<Group>) -> Result<Table> {
    let (o, model) = (setup.o, setup.model);
    // The controlled experiment on `<unk>`: FL at the middle σ² with rarer training words
    // folded into <unk>, and with 004's whole CoNLL-2000 vocabulary.
    let mut rows = vec![];
    for mc in [2usize, 3, 5] {
        let name = format!("bchain/unk/mc{mc}-s{s2}");
        let m = ModelSpec::BoltzmannChain(BoltzmannChainOptions {
            min_count: mc,
            vocabulary: None,
        });
        gs.push(setup.group(&m, s2, "1:1*fl", false, &name));
        rows.push((format!("training words seen < {mc} times → <unk>"), name));
    }
    let vocab = o.out.join("data").join("conll2000-vocabulary.txt");
    let words: String = [
        o.data.join("conll2000/train.txt"),
        o.data.join("conll2000/test.txt"),
    ]
    .iter()
    .map(std::fs::read_to_string)
    .collect::<std::io::Result<Vec<_>>>()
    .map_err(|e| crate::error::Error::io(&vocab, e))?
    .concat();
    crate::util::write_atomic(&vocab, words.as_bytes())?;
    let name = format!("bchain/unk/vocabulary-s{s2}");
    let m = ModelSpec::BoltzmannChain(BoltzmannChainOptions {
        min_count: 1,
        vocabulary: Some(vocab),
    });
    gs.push(setup.group(&m, s2, "1:1*fl", false, &name));
    let mut table_rows = vec![(
        "every training word (the runs above)".to_string(),
        fl(model, s2),
    )];
    table_rows.extend(rows);
    table_rows.push((
        "004's vocabulary: every word of CoNLL-2000 train and test".into(),
        name,
    ));
    Ok(Table {
        title: format!("`<unk>`: full likelihood at σ² = {s2} with other vocabularies"),
        columns: [
            "test NLL / sentence",
            "test perplexity / token",
            "train NLL / sentence",
            "chunk F1",
        ]
        .iter()
        .map(|c| c.to_string())
        .collect(),
        rows: table_rows
            .into_iter()
            .map(|(label, g)| {
                (
                    label,
                    vec![
                        cell(&g, Metric::SentenceNll, None),
                        cell(&g, Metric::Perplexity, None),
                        cell(&g, Metric::TrainSentenceNll, None),
                        cell(&g, Metric::SegmentF1, None),
                    ],
                )
            })
            .collect(),
    })
}

fn analysis_bchain(e: &Experiment, o: &Options, r: &Results) -> Result<Section> {
    analysis(e, o, r, Model::BoltzmannChain)
}
fn analysis_crf(e: &Experiment, o: &Options, r: &Results) -> Result<Section> {
    analysis(e, o, r, Model::Crf)
}

type Summary = crate::run::summary::RunSummary;
/// Values by fold.
type Folds = BTreeMap<usize, f64>;

/// Group `g`'s finished runs by fold (the repetition number of the run's folder).
fn by_fold<'r>(r: &'r Results, g: &str) -> BTreeMap<usize, &'r Summary> {
    r.get(g)
        .into_iter()
        .flatten()
        .filter_map(|(d, s)| Some((d.file_name()?.to_str()?.parse().ok()?, s)))
        .collect()
}

/// `f` of group `g`'s finished runs, by fold.
fn per_fold(r: &Results, g: &str, f: impl Fn(&Summary) -> Option<f64>) -> Folds {
    by_fold(r, g)
        .into_iter()
        .filter_map(|(k, s)| Some((k, f(s)?)))
        .collect()
}

fn nll(s: &Summary) -> Option<f64> {
    Metric::SentenceNll.of(s)
}
fn train_nll(s: &Summary) -> Option<f64> {
    Metric::TrainSentenceNll.of(s)
}

fn mean(xs: impl IntoIterator<Item = f64>) -> Option<f64> {
    Stat::of(xs.into_iter().collect()).map(|s| s.mean)
}

/// The values of `a` and `b` at the folds both have, paired.
fn paired(a: &Folds, b: &Folds) -> (Vec<f64>, Vec<f64>) {
    a.iter().filter_map(|(k, x)| Some((*x, *b.get(k)?))).unzip()
}

/// A paired t-test of `a` against `b` over their common folds: (mean a − b, p, folds).
fn paired_t(a: &Folds, b: &Folds) -> Option<(f64, f64, usize)> {
    let (x, y) = paired(a, b);
    (x.len() >= 2).then(|| {
        let t = significance::paired_t(&x, &y);
        (t.mean_difference, t.p, x.len())
    })
}

/// The β heuristic against the grid's best β (lowest training NLL, chosen per fold) at every
/// λ, as rows of the Markdown table in `md` and as JSON; with the heuristic's and the best β's
/// test NLL per fold, summed over the λs, for the claim.
fn heuristic_rows(
    r: &Results,
    model: Model,
    high: &str,
    s2: f64,
    g: &Grid,
    md: &mut String,
) -> (Vec<serde_json::Value>, Folds, Folds) {
    use std::fmt::Write;
    let (mut heur_sum, mut best_sum) = (Folds::new(), Folds::new());
    let mut rows = vec![];
    for &l in &g.lambdas {
        let h = by_fold(r, &heuristic(model, high, s2, l));
        let pts: Vec<(f64, BTreeMap<usize, &Summary>)> = g
            .betas
            .iter()
            .map(|&b| (b, by_fold(r, &point(model, high, s2, l, b))))
            .collect();
        let (mut best_b, mut tr, mut te) = (vec![], vec![], vec![]);
        let (mut hb, mut rounds) = (vec![], vec![]);
        for (&k, hs) in &h {
            // The fold's best grid β by training NLL.
            let best = pts
                .iter()
                .filter_map(|(b, runs)| {
                    let s = *runs.get(&k)?;
                    Some((*b, train_nll(s)?, s))
                })
                .min_by(|a, b| a.1.total_cmp(&b.1));
            let (Some((bb, btr, bs)), Some(htr), Some(hte)) = (best, train_nll(hs), nll(hs)) else {
                continue;
            };
            let Some(bte) = nll(bs) else { continue };
            best_b.push(bb);
            tr.push((btr, htr));
            te.push((bte, hte));
            *heur_sum.entry(k).or_insert(0.0) += hte;
            *best_sum.entry(k).or_insert(0.0) += bte;
            rounds.push(hs.beta_rounds.len() as f64);
            if let Some(r) = hs.beta_rounds.last() {
                let total: f64 = r.beta.iter().sum();
                hb.push(
                    r.beta.last().copied().unwrap_or(0.0) / if total > 0.0 { total } else { 1.0 },
                );
            }
        }
        if te.is_empty() {
            continue;
        }
        let m = |v: &[(f64, f64)], i: usize| mean(v.iter().map(|p| if i == 0 { p.0 } else { p.1 }));
        let f = |v: Option<f64>, d: usize| v.map_or("—".into(), |v| format!("{v:.d$}"));
        let _ = writeln!(
            md,
            "| {l} | {} | {} | {} | {} / {} | {} / {} |",
            best_b
                .iter()
                .map(|b| b.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            f(mean(hb.iter().copied()), 3),
            f(mean(rounds.iter().copied()), 1),
            f(m(&tr, 0), 2),
            f(m(&tr, 1), 2),
            f(m(&te, 0), 2),
            f(m(&te, 1), 2)
        );
        rows.push(serde_json::json!({"lambda": l, "best_beta": best_b, "heuristic_beta": mean(hb.iter().copied()),
            "train_best": m(&tr, 0), "train_heuristic": m(&tr, 1), "test_best": m(&te, 0), "test_heuristic": m(&te, 1)}));
    }
    (rows, heur_sum, best_sum)
}

/// A policy point against full likelihood alone at its σ², over the folds.
struct Versus {
    l: f64,
    b: f64,
    /// Mean test NLL of the point minus FL's, and the paired t-test's p.
    diff: f64,
    p: f64,
    /// The point's cost over FL's, by 004's FLOPs and by the operations the run counted.
    flops: Option<f64>,
    ops: f64,
}

/// A claim that some point is better than FL at a lower cost: holds when one is significantly
/// better after Bonferroni over `tested`, does not hold when every one is significantly worse,
/// and is otherwise not significant; without a point to test, not decided.
fn some_win(pts: &[&Versus], tested: usize) -> Verdict {
    if pts.is_empty() {
        return Verdict::NotDecided;
    }
    let cut = 0.05 / tested.max(1) as f64;
    // Holm's first step is this same cut: "some point wins" is decided alike under Holm.
    if pts.iter().any(|v| v.diff < 0.0 && v.p < cut) {
        Verdict::Holds
    } else if pts.iter().all(|v| v.diff > 0.0 && v.p < cut) {
        Verdict::DoesNotHold
    } else {
        Verdict::NotSignificant
    }
}

/// β heuristic against the grid's best β (Figs. 14, 20), the frontier and §8.4's win–win
/// (Figs. 13, 19), PL1/PL2 against PL1/FL (Fig. 12), and the level against the paper's — each
/// decided over the folds.
fn analysis(_e: &Experiment, o: &Options, r: &Results, model: Model) -> Result<Section> {
    use std::fmt::Write;
    let g = grid(o, model);
    let sig = model.sigma2s();
    let mut md = String::new();
    let mut claims: Vec<(String, Verdict, String)> = vec![];
    let mut json = serde_json::Map::new();
    let (mut heur, mut best) = (Folds::new(), Folds::new());
    let mut versus: Vec<Versus> = vec![];
    // Each family's cells by mean test NLL: (mean, group).
    let mut cells: [Vec<(f64, String)>; 2] = [vec![], vec![]];
    for (fi, high) in FAMILIES.iter().enumerate() {
        let s2 = sig[fi][1];
        let _ = writeln!(
            md,
            "**PL1/{}, σ² = {s2}: the β heuristic against the grid's best β** (the β with the lowest training NLL, as 004 Fig. 14's caption, chosen in each fold; means over the folds):\n\n| λ | best grid β, per fold | heuristic β | rounds | train NLL best / heuristic | test NLL best / heuristic |\n|---:|---|---:|---:|---|---|",
            high.to_uppercase()
        );
        let (rows, h, b) = heuristic_rows(r, model, high, s2, &g, &mut md);
        for (k, v) in h {
            *heur.entry(k).or_insert(0.0) += v;
        }
        for (k, v) in b {
            *best.entry(k).or_insert(0.0) += v;
        }
        json.insert(
            format!("heuristic_pl1_{high}"),
            serde_json::Value::Array(rows),
        );
        md.push('\n');
        // Win–win (§8.4) at every σ²: λ < 1 points against FL alone at the same σ².
        for &si in &g.sigma_ix {
            let s2 = sig[fi][si];
            let f = fl(model, s2);
            let ft = per_fold(r, &f, nll);
            let (Some(ftm), Some(ff), Some(fo)) = (
                mean(ft.values().copied()),
                mean(per_fold(r, &f, |s| s.paper_flops).into_values()),
                mean(per_fold(r, &f, |s| Some(s.ops as f64)).into_values()),
            ) else {
                continue;
            };
            if *high == "fl" {
                // FL alone is PL1/FL's (λ, β) = (1, 1).
                cells[fi].push((ftm, f.clone()));
            }
            let first = versus.len();
            for &l in &g.lambdas {
                for &b in &g.betas {
                    let name = point(model, high, s2, l, b);
                    let t = per_fold(r, &name, nll);
                    if let Some(m) = mean(t.values().copied()) {
                        cells[fi].push((m, name.clone()));
                    }
                    if l >= 1.0 {
                        continue;
                    }
                    let Some((diff, p, _)) = paired_t(&t, &ft) else {
                        continue;
                    };
                    versus.push(Versus {
                        l,
                        b,
                        diff,
                        p,
                        flops: mean(per_fold(r, &name, |s| s.paper_flops).into_values())
                            .map(|x| x / ff),
                        ops: mean(per_fold(r, &name, |s| Some(s.ops as f64)).into_values())
                            .unwrap_or(f64::INFINITY)
                            / fo,
                    });
                }
            }
            let here = &versus[first..];
            let better = here.iter().filter(|v| v.diff < 0.0 && v.p < 0.05);
            let by_ops = better.clone().filter(|v| v.ops < 1.0).count();
            let by_flops: Vec<&Versus> = better
                .filter(|v| v.flops.is_some_and(|x| x < 1.0))
                .collect();
            let best_win = by_flops.iter().min_by(|a, b| a.diff.total_cmp(&b.diff));
            let _ = writeln!(
                md,
                "Win–win, PL1/{}, σ² = {s2} (FL alone: test NLL {ftm:.2}, {ff:.3e} FLOPs, {fo:.3e} counted operations): of {} points with λ < 1, {} have a lower test NLL than FL alone (paired t over the folds, p < 0.05); {by_ops} of them at fewer counted operations, {} at fewer FLOPs (004 §3.1's count){}\n",
                high.to_uppercase(),
                here.len(),
                here.iter().filter(|v| v.diff < 0.0 && v.p < 0.05).count(),
                by_flops.len(),
                best_win.map_or(".".to_string(), |v| format!(
                    "; the best, (λ, β) = ({}, {}): {:+.2} at {:.2}× FL's FLOPs.", v.l, v.b, v.diff, v.flops.unwrap_or(f64::NAN)
                ))
            );
            json.insert(
                format!("win_win_pl1_{high}_s{s2}"),
                serde_json::json!({"fl_test": ftm, "fl_flops": ff, "fl_ops": fo, "points": here.len(),
                    "better": here.iter().filter(|v| v.diff < 0.0 && v.p < 0.05).count(), "op_wins": by_ops, "wins": by_flops.len()}),
            );
        }
    }
    let cmp = |a: &Folds, b: &Folds| paired_t(a, b);
    if let Some((d, p, n)) = cmp(&heur, &best) {
        claims.push((
            "the β heuristic out-performs the grid's best β (lowest training NLL) on the test set (004 Fig. 14: \"the heuristic out-performed the optimal on the test set and had slightly higher perplexity on the training set\"); paired t over the folds of the test NLL summed over λ and both families, α = 0.05".to_string(),
            Verdict::paired(-d, p, 0.05),
            format!("heuristic − best: {d:+.2} nats per sentence summed over {} λ × 2 families, {n} folds, p = {}", g.lambdas.len(), significance::show_p(p)),
        ));
    }
    let tested = versus.len();
    let wins = |cost: &dyn Fn(&Versus) -> bool| -> Vec<&Versus> {
        versus.iter().filter(|v| cost(v)).collect()
    };
    let cheaper_flops = wins(&|v| v.flops.is_some_and(|x| x < 1.0));
    let cheaper_ops = wins(&|v| v.ops < 1.0);
    let sig_better = |pts: &[&Versus]| pts.iter().filter(|v| v.diff < 0.0 && v.p < 0.05).count();
    // The multiplicity policy of every report: Holm over the family, here every point tested
    // against full likelihood.
    let holm = significance::holm(&versus.iter().map(|v| Some(v.p)).collect::<Vec<_>>());
    let holm_better = |pts: &[&Versus]| {
        pts.iter()
            .filter(|v| {
                let k = versus.iter().position(|x| std::ptr::eq(x, **v));
                v.diff < 0.0 && k.and_then(|k| holm[k]).is_some_and(|p| p < 0.05)
            })
            .count()
    };
    if model == Model::Crf && tested > 0 {
        let n = holm_better(&cheaper_flops);
        claims.push((
            format!("the CRF shows the win–win only to a minor extent (004 §8.4): fewer than half of the policies with λ < 1 have a lower test NLL than full likelihood alone at its σ² at fewer FLOPs (paired t over the folds, p < 0.05 after Holm's adjustment over the {tested} points)"),
            (n * 2 < tested).into(),
            format!(
                "{n} of {tested} such points over both families and every σ² ({} before the adjustment)",
                sig_better(&cheaper_flops)
            ),
        ));
    }
    if model == Model::BoltzmannChain && tested > 0 {
        for (cost, pts, why) in [
            ("the operations the run counted", &cheaper_ops, "its PL1 components reuse the vocabulary sums cached once per evaluation"),
            ("004 §3.1's FLOP count", &cheaper_flops, "every PL1 component normalises over the vocabulary as FL does, so no policy is cheaper"),
        ] {
            claims.push((
                format!("win–win (004 §8.4, \"a striking win–win\" for the Boltzmann chain), cost by {cost}: some policy with λ < 1 has a lower test NLL than full likelihood alone at its σ² at a lower cost; paired t over the folds, Holm over the {tested} points — for \"some point\" its first step, p < 0.05 / {tested} ({why})"),
                some_win(pts, tested),
                format!("{} of the {} cheaper points lower on average, {} with p < 0.05, {} with p < 0.05 / {tested}", pts.iter().filter(|v| v.diff < 0.0).count(), pts.len(), sig_better(pts), pts.iter().filter(|v| v.diff < 0.0 && v.p < 0.05 / tested as f64).count()),
            ));
        }
    }
    // The best cell of each family by mean test NLL — the same oracle for both ("the best
    // achievable"), compared over the folds.
    let best_of = |fi: usize| cells[fi].iter().min_by(|a, b| a.0.total_cmp(&b.0)).cloned();
    if let (Some((bf, gf)), Some((b2, g2))) = (best_of(0), best_of(1)) {
        let (ff, f2) = (per_fold(r, &gf, nll), per_fold(r, &g2, nll));
        let t = cmp(&f2, &ff);
        let rel: Vec<f64> = {
            let (a, b) = paired(&f2, &ff);
            a.iter().zip(&b).map(|(x, y)| (x - y) / y).collect()
        };
        let (verdict, rule) = match model {
            Model::BoltzmannChain => (
                t.map_or(Verdict::NotDecided, |(d, p, _)| Verdict::paired(-d, p, 0.05)),
                "paired t over the folds, α = 0.05",
            ),
            // "Meets": PL1/PL2 no more than 5 % above PL1/FL, on the 95 % interval.
            Model::Crf => (
                significance::mean_interval95(&rel)
                    .map_or(Verdict::NotDecided, |(_, lo, hi)| Verdict::at_most(lo, hi, 0.05)),
                "meets: the 95 % interval over the folds of (PL1/PL2 − PL1/FL) / PL1/FL below +5 %; 004 gives no number",
            ),
        };
        claims.push((
            match model {
                Model::BoltzmannChain => format!("PL1/PL2 reaches a lower test NLL than PL1/FL (004 Fig. 12: \"PL1/PL2 outperforms PL1/FL test perplexity\"); each family's best cell by mean test NLL over its grid, {rule}"),
                Model::Crf => format!("PL1/PL2's test NLL meets PL1/FL's (004 Fig. 18: \"the test perplexity meets that of the PL1/FL\"); each family's best cell by mean test NLL over its grid, {rule}"),
            },
            verdict,
            format!(
                "PL1/PL2 {b2:.2} (`{g2}`), PL1/FL {bf:.2} (`{gf}`); difference {}{}",
                t.map_or("—".into(), |(d, p, n)| format!("{d:+.2}, p = {} over {n} folds", significance::show_p(p))),
                significance::mean_interval95(&rel).map_or(String::new(), |(m, lo, hi)| format!(", relative {:+.1} % [{:+.1}, {:+.1}]", 100.0 * m, 100.0 * lo, 100.0 * hi))
            ),
        ));
        // The level: 004 writes "about 190" and "about 5.5"; read as ± one unit of the last
        // printed digit.
        let (bv, bg, bfolds) = if bf <= b2 {
            (bf, &gf, &ff)
        } else {
            (b2, &g2, &f2)
        };
        let p = model.paper_best();
        let tol = match model {
            Model::BoltzmannChain => 10.0,
            Model::Crf => 0.1,
        };
        let v: Vec<f64> = bfolds.values().copied().collect();
        let verdict = significance::mean_interval95(&v)
            .map_or(Verdict::NotDecided, |(_, lo, hi)| {
                Verdict::within(lo - p, hi - p, tol)
            });
        claims.push((
            format!("the best achievable test NLL is about {p} per sentence (004 {} caption); \"about\" read as ± {tol} (one unit of the paper's last digit): holds when the 95 % interval over the folds lies inside {}–{}, does not hold when it lies outside", if model == Model::Crf { "Fig. 15" } else { "Fig. 9" }, p - tol, p + tol),
            verdict,
            format!("ours {bv:.2} (`{bg}`){}", significance::mean_interval95(&v).map_or(String::new(), |(_, lo, hi)| format!(", 95 % interval [{lo:.2}, {hi:.2}]"))),
        ));
        json.insert(
            "best_test".into(),
            serde_json::json!({"pl1_fl": bf, "pl1_pl2": b2, "pl1_fl_group": gf, "pl1_pl2_group": g2}),
        );
    }
    Ok(Section {
        title: "β heuristic, win–win and levels".into(),
        markdown: md,
        json: serde_json::Value::Object(json),
        svg: None,
        claims,
    })
}

/// 004 Fig. 21's axes: σ² from 004-crf's PL1/FL columns and PL1/PL2's middle one (so the
/// heuristic runs at each family's middle σ² are 004-crf's), λ from small to 1 (004 clips its
/// small λ). Each point is a β-heuristic run of several rounds (about 40 s each), which is why
/// the axes are four by three and not 004-crf's five λs at every σ².
const FIG21_SIGMA2: [f64; 4] = [100.0, 1000.0, 5000.0, 20000.0];
const FIG21_LAMBDAS: [f64; 3] = [0.1, 0.5, 1.0];

fn fig21_sigma2(o: &Options) -> Vec<f64> {
    if o.quick {
        vec![1000.0, 20000.0]
    } else {
        FIG21_SIGMA2.to_vec()
    }
}

/// 004-crf's grid with Fig. 21's λs.
fn fig21_grid(o: &Options) -> Grid {
    let mut g = grid(o, Model::Crf);
    if !o.quick {
        g.lambdas = FIG21_LAMBDAS.to_vec();
    }
    g
}

/// 004 Fig. 21 (§8.5): the β heuristic over a (λ, σ²) grid for the CRF's PL1/FL and PL1/PL2,
/// the optimal σ² (lowest test NLL) per λ against each higher-order family alone, and the test
/// NLL at the optimum. Shares 004-crf's runs where the names meet (the heuristic at the middle
/// σ², full likelihood alone).
pub(super) fn fig21(o: &Options) -> Result<Experiment> {
    let model = Model::Crf;
    let mut setup = Setup::new(o, model)?;
    setup.g = fig21_grid(o);
    let g = &setup.g;
    let s2s = fig21_sigma2(o);
    let (mut gs, mut tables) = (vec![], vec![]);
    for high in FAMILIES {
        let mut rows = vec![];
        for &l in &g.lambdas {
            let mut cells = vec![];
            for &s2 in &s2s {
                let name = heuristic(model, high, s2, l);
                let text = format!("1:0.5*pl1 + {l}:0.5*{high}");
                setup.push(&mut gs, s2, &text, true, &name);
                cells.push(cell(&name, Metric::SentenceNll, None));
            }
            rows.push((format!("λ = {l}, β heuristic"), cells));
        }
        let mut cells = vec![];
        for &s2 in &s2s {
            let name = alone(model, high, s2);
            setup.push(&mut gs, s2, &format!("1:1*{high}"), false, &name);
            cells.push(cell(&name, Metric::SentenceNll, None));
        }
        rows.push((format!("{} alone", high.to_uppercase()), cells));
        tables.push(Table {
            title: format!(
                "PL1/{}: test NLL per sentence, mean ± sd over {} folds (rows λ with the β heuristic, and {} alone; columns σ²)",
                high.to_uppercase(),
                g.folds,
                high.to_uppercase()
            ),
            columns: s2s.iter().map(|s| format!("σ² = {s}")).collect(),
            rows,
        });
    }
    Ok(Experiment {
        name: "004-fig21",
        title: "004 Fig. 21: the optimal σ² as a function of λ, CRF on CoNLL-2000, β heuristic".into(),
        protocol: vec![
            format!("Data and model as 004-crf (004 §8.3.2): the linear-chain CRF with the CRF++ chunking template; {} training sentences drawn from the CoNLL-2000 training set in each of {} folds (fold k: sentences and Z with seed k); {}.", g.n, g.folds, super::tasks::sizes(o, "the whole test set (2,012 sentences)", "the first 40 test sentences (quick)")),
            format!("Policies (004 §8.5): 1:(1−β̂)·PL1 + λ:β̂·HIGH with β̂ from the β heuristic (004 Algorithm 1, from β = 0.5), for HIGH = FL and PL2, λ ∈ {:?}, σ² ∈ {s2s:?} (004-crf's PL1/FL columns and PL1/PL2's middle one; 004 puts full likelihood alone's best at 500, between our first two); each higher-order family alone at every σ² (004's red triangles).", g.lambdas),
            "The optimal σ² of a policy in a fold: the σ² with the lowest test NLL per sentence, as 004 defines it (\"the σ² with smallest test perplexity\"); it is a property of the test set, not a choice made for training.".into(),
            "L-BFGS to convergence (at most 1,000 iterations) in every round.".into(),
        ],
        groups: gs,
        tables,
        figure: Figure::Analysis,
        analysis: Some(fig21_analysis),
        claims: vec![],
    })
}

/// A policy's optimal σ² per fold: (index into the σ² axis, test NLL there), over the folds
/// where every σ² finished.
fn optimum(r: &Results, groups: &[String]) -> BTreeMap<usize, (usize, f64)> {
    let cols: Vec<Folds> = groups.iter().map(|g| per_fold(r, g, nll)).collect();
    let Some(first) = cols.first() else {
        return BTreeMap::new();
    };
    first
        .keys()
        .filter_map(|&k| {
            let v: Option<Vec<f64>> = cols.iter().map(|c| c.get(&k).copied()).collect();
            let (i, t) = v?
                .into_iter()
                .enumerate()
                .min_by(|a, b| a.1.total_cmp(&b.1))?;
            Some((k, (i, t)))
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    (n > 0).then(|| {
        if n % 2 == 1 {
            v[n / 2]
        } else {
            0.5 * (v[n / 2 - 1] + v[n / 2])
        }
    })
}

/// Sign test of `a` above `b` over the common folds: (folds above, folds below, p).
fn above(a: &BTreeMap<usize, f64>, b: &BTreeMap<usize, f64>) -> (usize, usize, f64) {
    let (x, y) = paired(a, b);
    let up = x.iter().zip(&y).filter(|(p, q)| p > q).count();
    let down = x.iter().zip(&y).filter(|(p, q)| p < q).count();
    (up, down, significance::sign_test(up, down))
}

fn fig21_analysis(_e: &Experiment, o: &Options, r: &Results) -> Result<Section> {
    use crate::experiments::charts::{svg_lines, Series};
    use std::fmt::Write;
    let model = Model::Crf;
    let g = fig21_grid(o);
    let s2s = fig21_sigma2(o);
    let mut md = String::new();
    let mut json = serde_json::Map::new();
    let mut claims: Vec<(String, Verdict, String)> = vec![];
    let mut series = vec![];
    // Per family: the optimal σ² index by fold at each λ, and alone's; the NLL at the optimum.
    let mut opt: Vec<Vec<BTreeMap<usize, (usize, f64)>>> = vec![];
    let mut alone_opt: Vec<BTreeMap<usize, (usize, f64)>> = vec![];
    for (fi, high) in FAMILIES.iter().enumerate() {
        let _ = writeln!(
            md,
            "**PL1/{}: the optimal σ² (lowest test NLL) per fold**\n\n| policy | optimal σ², per fold | median | test NLL at the optimum |\n|---|---|---:|---|",
            high.to_uppercase()
        );
        let mut per_l = vec![];
        let mut pts = vec![];
        let row = |label: String, o: &BTreeMap<usize, (usize, f64)>, md: &mut String| {
            let s: Vec<f64> = o.values().map(|(i, _)| s2s[*i]).collect();
            let t: Vec<f64> = o.values().map(|(_, t)| *t).collect();
            let m = median(s.clone());
            let (tm, sd) = match significance::mean_interval95(&t) {
                Some((m, lo, _)) => (m, Some(m - lo)),
                None => (mean(t.iter().copied()).unwrap_or(f64::NAN), None),
            };
            let _ = writeln!(
                md,
                "| {label} | {} | {} | {tm:.2}{} |",
                s.iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                m.map_or("—".into(), |m| m.to_string()),
                sd.map_or(String::new(), |h| format!(" ± {h:.2} (95 %)"))
            );
            m
        };
        for &l in &g.lambdas {
            let groups: Vec<String> = s2s
                .iter()
                .map(|&s2| heuristic(model, high, s2, l))
                .collect();
            let o = optimum(r, &groups);
            if let Some(m) = row(format!("λ = {l}"), &o, &mut md) {
                pts.push([l, m.log10()]);
            }
            per_l.push(o);
        }
        let groups: Vec<String> = s2s.iter().map(|&s2| alone(model, high, s2)).collect();
        let a = optimum(r, &groups);
        let am = row(format!("{} alone", high.to_uppercase()), &a, &mut md);
        md.push('\n');
        series.push(Series {
            name: format!("PL1/{}, β heuristic", high.to_uppercase()),
            color: [[31, 119, 180], [255, 127, 14]][fi],
            points: pts,
            markers: false,
        });
        if let Some(m) = am {
            series.push(Series {
                name: format!("{} alone (at λ = 1)", high.to_uppercase()),
                color: [[31, 119, 180], [255, 127, 14]][fi],
                points: vec![[1.0, m.log10()]],
                markers: true,
            });
        }
        json.insert(
            format!("pl1_{high}"),
            serde_json::json!({
                "lambdas": g.lambdas,
                "optimal_sigma2": per_l.iter().map(|o| o.iter().map(|(k, (i, t))| serde_json::json!({"fold": k, "sigma2": s2s[*i], "test_nll": t})).collect::<Vec<_>>()).collect::<Vec<_>>(),
                "alone": a.iter().map(|(k, (i, t))| serde_json::json!({"fold": k, "sigma2": s2s[*i], "test_nll": t})).collect::<Vec<_>>(),
            }),
        );
        opt.push(per_l);
        alone_opt.push(a);
    }
    let ix = |o: &BTreeMap<usize, (usize, f64)>| -> Folds {
        o.iter().map(|(k, (i, _))| (*k, *i as f64)).collect()
    };
    let nlls = |o: &BTreeMap<usize, (usize, f64)>| -> Folds {
        o.iter().map(|(k, (_, t))| (*k, *t)).collect()
    };
    let sign = |(up, down, p): (usize, usize, f64)| {
        (
            Verdict::paired(up as f64 - down as f64, p, 0.05),
            format!(
                "above in {up} folds, below in {down}, ties {}; one-sided sign test p = {}",
                g.folds.saturating_sub(up + down),
                significance::show_p(p)
            ),
        )
    };
    let last = g.lambdas.len().saturating_sub(1);
    if opt.len() == 2 && !g.lambdas.is_empty() {
        for (i, which) in [
            (0, format!("the smallest λ ({})", g.lambdas[0])),
            (last, "λ = 1".to_string()),
        ] {
            let (v, e) = sign(above(&ix(&opt[0][i]), &ix(&alone_opt[0])));
            claims.push((
                format!("PL1/FL at {which}: the optimal σ² is weaker (larger) than full likelihood alone's (004 Fig. 21: \"a few FL samples add uncertainty to the objective thus a weaker regularizer is preferable … still acts to regularize\"); one-sided sign test over the folds, α = 0.05"),
                v,
                e,
            ));
        }
        // How far the optimum moves with λ: its range on the σ² axis, in steps, per fold.
        let range = |per_l: &[BTreeMap<usize, (usize, f64)>]| -> Folds {
            let mut out = Folds::new();
            for k in 0..g.folds {
                let v: Option<Vec<usize>> = per_l.iter().map(|o| o.get(&k).map(|x| x.0)).collect();
                if let Some(v) = v.filter(|v| !v.is_empty()) {
                    out.insert(
                        k,
                        (v.iter().max().unwrap_or(&0) - v.iter().min().unwrap_or(&0)) as f64,
                    );
                }
            }
            out
        };
        let (rf, r2) = (range(&opt[0]), range(&opt[1]));
        let (v, e) = sign(above(&rf, &r2));
        claims.push((
            "the optimal σ² moves more with λ under PL1/FL than under PL1/PL2 (004 Fig. 21: PL1/FL's optimum \"has considerable range\", PL1/PL2 \"exhibits only a minor change as λ is increased\"); the range of the optimum over λ in steps of the σ² axis, per fold, one-sided sign test, α = 0.05".to_string(),
            v,
            format!("ranges PL1/FL {:?}, PL1/PL2 {:?}; {e}", rf.values().collect::<Vec<_>>(), r2.values().collect::<Vec<_>>()),
        ));
        // PL1/PL2's optimum (its median over λ, per fold) against PL2 alone's.
        let mid2: Folds = (0..g.folds)
            .filter_map(|k| {
                let v: Vec<f64> = opt[1]
                    .iter()
                    .filter_map(|o| o.get(&k).map(|x| x.0 as f64))
                    .collect();
                (v.len() == g.lambdas.len())
                    .then(|| median(v))
                    .flatten()
                    .map(|m| (k, m))
            })
            .collect();
        let (v, e) = sign(above(&mid2, &ix(&alone_opt[1])));
        claims.push((
            "PL1/PL2 is best served by a much weaker regularizer than PL2 alone (004 Fig. 21); PL1/PL2's optimal σ² (its median over λ) against PL2 alone's, one-sided sign test over the folds, α = 0.05".to_string(),
            v,
            e,
        ));
        // The right panel: the test NLL at the optimum is lowest at λ = 1.
        for (fi, high) in FAMILIES.iter().enumerate() {
            let at = |i: usize| nlls(&opt[fi][i]);
            let rival = (0..last)
                .filter_map(|i| Some((mean(at(i).into_values())?, i)))
                .min_by(|a, b| a.0.total_cmp(&b.0));
            if let Some((_, i)) = rival {
                if let Some((d, p, n)) = paired_t(&at(last), &at(i)) {
                    claims.push((
                        format!("PL1/{}: the test NLL at the optimal σ² is lowest when both components are always selected, λ = 1 (004 Fig. 21, right); against the best λ < 1 by mean, paired t over the folds, α = 0.05", high.to_uppercase()),
                        Verdict::paired(-d, p, 0.05),
                        format!("λ = 1 minus λ = {}: {d:+.3}, p = {} over {n} folds", g.lambdas[i], significance::show_p(p)),
                    ));
                }
            }
        }
        if let Some((d, p, n)) = paired_t(&nlls(&opt[0][last]), &nlls(&opt[1][last])) {
            claims.push((
                "PL1/FL outperforms PL1/PL2 at λ = 1, each at its optimal σ² (004 Fig. 21, right: \"the PL1/FL policy outperforms the PL1/PL2 policy as expected\"); paired t over the folds, α = 0.05".to_string(),
                Verdict::paired(-d, p, 0.05),
                format!("PL1/FL − PL1/PL2: {d:+.3}, p = {} over {n} folds", significance::show_p(p)),
            ));
        }
    }
    md.push_str("The figure draws the median over the folds of the optimal σ² (log scale) against λ, as 004 Fig. 21's left and centre panels; each family alone is the marker at λ = 1. The test NLL at the optimum (004's right panel) is the tables' last column.\n");
    let svg = svg_lines(
        "004 Fig. 21: optimal σ² against λ (median over the folds), CRF, β heuristic",
        "λ (probability of selecting the higher-order component)",
        "log10 optimal σ²",
        &series,
    );
    Ok(Section {
        title: "The optimal σ²".into(),
        markdown: md,
        json: serde_json::Value::Object(json),
        svg: Some(svg),
        claims,
    })
}
