//! The tasks' data and run specs: corpora found or split under `OUT`, the paper's prior and
//! protocol turned into `RunSpec`s grouped by estimator.

use super::*;
use crate::data::conll::{format_conll, read_conll_with, LabelColumn};
use crate::data::Sequence;
use crate::error::{Error, Result};
use crate::estimators::EstimatorSpec;
use crate::eval::Decoder;
use crate::graph::chain::{ChainOptions, Extractor, Factorisation, FeatureSet, SkipOptions};
use crate::graph::factorial::FactorialOptions;
use crate::optim::{LbfgsSpec, Prior};
use crate::run::spec::RunSpec;
use crate::run::ModelSpec;
use crate::util::write_atomic;
use std::path::{Path, PathBuf};

pub(super) fn missing(what: &Path) -> Error {
    Error::file(
        what.display().to_string(),
        "not found: reproduce reads the shared corpora (../shared/data, or --data DIR)",
    )
}

pub(super) fn need(p: PathBuf) -> Result<PathBuf> {
    if p.exists() {
        Ok(p)
    } else {
        Err(missing(&p))
    }
}

/// The first `n` items of a column file (all when `None`), every column kept, written to `dst`.
pub(super) fn head_file(src: &Path, n: Option<usize>, dst: &Path) -> Result<PathBuf> {
    let c = read_conll_with(src, LabelColumn::None)?;
    let k = n.unwrap_or(c.sequences.len()).min(c.sequences.len());
    write_items(&c.sequences[..k], dst)
}

pub(super) fn write_items(items: &[Sequence], dst: &Path) -> Result<PathBuf> {
    if let Some(d) = dst.parent() {
        std::fs::create_dir_all(d).map_err(|e| Error::io(d, e))?;
    }
    write_atomic(dst, format_conll(items, &[]).as_bytes())?;
    Ok(dst.to_path_buf())
}

pub(super) const POS_TEMPLATE: &str = include_str!("../../../assets/templates/pos.tpl");

/// The current word alone (001-table1-ner's word-only rows).
pub(super) const WORD_TEMPLATE: &str = include_str!("../../../assets/templates/word.tpl");

pub(super) const HMM_TEMPLATE: &str = include_str!("../../../assets/templates/hmm.tpl");

/// A template shipped with the program, written next to the experiment's data so its runs
/// name a file that exists wherever the command runs.
pub(super) fn bundled_template(o: &Options, name: &str, text: &str) -> Result<PathBuf> {
    let p = o.out.join("data").join(name);
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).map_err(|e| Error::io(d, e))?;
    }
    write_atomic(&p, text.as_bytes())?;
    Ok(p)
}

/// σ² = 10, the piecewise papers' prior.
pub(super) const PAPER_PRIOR: Prior = Prior { sigma2: Some(10.0) };

/// A run of the paper's protocol; [`groups`] names it.
pub(super) fn base_spec(o: &Options, train: PathBuf, test: PathBuf, model: ModelSpec) -> RunSpec {
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
        subset_scaling: false,
        init_from: None,
    }
}

pub(super) fn estimator(name: &str) -> EstimatorSpec {
    EstimatorSpec::from_name(name).expect("a known estimator")
}

/// Groups `estimators` × repetitions, each repetition's spec from `rep(k)`.
pub(super) fn groups(
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

pub(super) fn lexicons(o: &Options) -> PathBuf {
    o.data.join("lexicons")
}

/// Dutch CoNLL-2002's `ned.train` and the test file `test` (`ned.testa`, the development set,
/// or `ned.testb`); `--quick` takes the first 60 and 40 sentences.
pub(super) fn ner_files(o: &Options, test: &str) -> Result<(PathBuf, PathBuf)> {
    let dir = o.data.join("conll2002-ned");
    let (train, test_file) = (need(dir.join("ned.train"))?, need(dir.join(test))?);
    if o.quick {
        let w = o.out.join("data");
        Ok((
            head_file(&train, Some(60), &w.join("ner-train.conll"))?,
            head_file(&test_file, Some(40), &w.join(format!("ner-{test}.conll")))?,
        ))
    } else {
        Ok((train, test_file))
    }
}

/// `ned.testa`, the development split of 000's NER tasks, read as a chain reads its data
/// (`--quick`: its first 40 sentences).
pub(super) fn ner_dev(o: &Options) -> Result<crate::data::Corpus> {
    let path = ner_files(o, "ned.testa")?.1;
    crate::data::read_corpus(&path)
}

/// Dutch CoNLL-2002 with 000 Table 1's features, one factor per edge with observation weights
/// per label pair (the papers' Ψ_t(y_t, y_{t−1}, x)), observed feature–label pairs.
pub(super) fn ner_task(o: &Options) -> Result<(PathBuf, PathBuf, ModelSpec)> {
    let (train, test) = ner_files(o, "ned.testb")?;
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
pub(super) fn conll2000(o: &Options) -> Result<(PathBuf, PathBuf)> {
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
pub(super) fn factorial_model(o: &Options) -> Result<ModelSpec> {
    Ok(ModelSpec::Factorial(FactorialOptions {
        lexicons: Some(lexicons(o)),
        pos_lexicon: Some(need(o.data.join("ptb-wsj-sample").join("treebank.tsv"))?),
        ..FactorialOptions::default()
    }))
}

/// The seminar announcements pooled: the given training files (0–300), then the test files.
pub(super) fn seminars_pooled(o: &Options) -> Result<Vec<Sequence>> {
    let dir = o.data.join("seminars");
    let mut all = crate::data::seminars::read_dir(&need(dir.join("train"))?)?;
    all.sequences
        .extend(crate::data::seminars::read_dir(&need(dir.join("test"))?)?.sequences);
    Ok(all.sequences)
}

/// Writes each (train, test) index split of `items` as column files (word, lowercase, shape,
/// time class, field) `seminars-{tag}{k}-train.conll` and `…-test.conll`; `--quick` keeps 8
/// training and 6 test e-mails of each.
pub(super) fn write_seminar_splits(
    o: &Options,
    items: &[Sequence],
    tag: &str,
    splits: impl Iterator<Item = (Vec<usize>, Vec<usize>)>,
) -> Result<Vec<(PathBuf, PathBuf)>> {
    let w = o.out.join("data");
    splits
        .enumerate()
        .map(|(k, (mut tr, mut te))| {
            if o.quick {
                tr.truncate(8);
                te.truncate(6);
            }
            tr.sort_unstable();
            te.sort_unstable();
            let pick = |ix: &[usize]| ix.iter().map(|&i| items[i].clone()).collect::<Vec<_>>();
            Ok((
                write_items(
                    &pick(&tr),
                    &w.join(format!("seminars-{tag}{k}-train.conll")),
                )?,
                write_items(&pick(&te), &w.join(format!("seminars-{tag}{k}-test.conll")))?,
            ))
        })
        .collect()
}

/// n_test / n_train of a group whose runs are random resplits of one corpus (their training
/// sets overlap, so a paired claim over them takes the corrected resampled t): the seminars'
/// 50/50 splits of [`seminar_folds`]; `None` for disjoint folds, subsets and data sets.
pub(crate) fn resplit_test_over_train(group: &str) -> Option<f64> {
    (group.starts_with("seminars/") || group.starts_with("seminars-chain/")).then_some(1.0)
}

/// The pooled seminar announcements cut into `folds` random 50/50 splits (000 §5: "10-fold
/// cross validation with a 50/50 training/test split"; seeds 1000 + k).
pub(super) fn seminar_folds(o: &Options, folds: usize) -> Result<Vec<(PathBuf, PathBuf)>> {
    let items = seminars_pooled(o)?;
    let half = items.len() / 2;
    let splits = (0..folds).map(|k| {
        let perm = crate::data::shuffled(items.len(), 1000 + k as u64);
        (perm[..half].to_vec(), perm[half..].to_vec())
    });
    write_seminar_splits(o, &items, "", splits)
}

/// Group `group`'s runs start from the weights of the same repetition of group `from`, which
/// must run first (a later stage in a plan): loopy BP training from the trained linear chain, as
/// 000 §5.1.3 says it had to; CAMEL from the trained piecewise run, its own first fit.
pub(super) fn start_from(o: &Options, gs: &mut [Group], group: &str, from: &str) {
    for g in gs.iter_mut().filter(|g| g.name == group) {
        for (k, r) in g.runs.iter_mut().enumerate() {
            r.init_from = Some(run_dir(o, from, k));
        }
    }
}

/// The seminar chain: 000 Table 3's features, the edge factor Ψ_t(y_t, y_{t−1}, x) (eq. 41),
/// observed feature–label pairs; with `skip`, the skip edges of eq. 41.
pub(super) fn seminar_model(o: &Options, skip: bool) -> ModelSpec {
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

pub(super) fn reps(o: &Options, full: usize) -> usize {
    if o.quick {
        1
    } else {
        full
    }
}

pub(super) const SUBSET_FCRF: usize = 223;

pub(super) fn factorial_groups(
    o: &Options,
    estimators: &[&str],
    prefix: &str,
) -> Result<Vec<Group>> {
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

pub(super) fn seminar_groups(
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

pub(super) fn p(mean: f64, sd: Option<f64>) -> Option<(f64, Option<f64>)> {
    Some((mean, sd))
}

/// `full` for the paper's protocol, `quick` for `--quick`.
pub(super) fn sizes(o: &Options, full: &str, quick: &str) -> String {
    if o.quick {
        quick.to_string()
    } else {
        full.to_string()
    }
}

/// The Penn Treebank sample with `augment`'s word columns: its first 3,000 sentences the pool
/// that training sets are drawn from, the rest the test set (quick: 60 and 30).
pub(super) fn ptb_pool(o: &Options) -> Result<(std::path::PathBuf, std::path::PathBuf)> {
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
    Ok((pool, ptest))
}
