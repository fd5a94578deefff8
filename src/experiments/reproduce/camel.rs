//! 002's experiments (CAMEL, UAI 2008): named entities and seminar announcements with the
//! skip-chain CRF (Tables 1–2) and segmentation with heavily shared weights on loopy grids
//! (Table 3), each with the five estimators 002 compares — piecewise, CAMEL(0), loopy BP
//! training, CCCP-CAMEL and CCCP-CAMEL(Empirical). Table 3 is also run on 4-connected grids:
//! the controlled experiment for its failing claim (does the graph's connectivity decide
//! whether CCCP's Bethe optimum beats CAMEL(0)?).

use super::tasks::*;
use super::*;
use crate::data::synth_loopy::GridGen;
use crate::error::Result;
use crate::estimators::camel::CamelVariant;
use crate::estimators::EstimatorSpec;
use crate::graph::chain::{ChainOptions, Extractor, Factorisation, FeatureSet, SkipOptions};
use crate::graph::grid::{GridOptions, Neighbourhood, Pairwise};
use crate::optim::Prior;
use crate::run::ModelSpec;
use crate::util::write_atomic;

/// The factorisations of Table 2's controlled experiment: (name, factorisation).
const FACTORISATIONS: [(&str, Factorisation); 3] = [
    ("split", Factorisation::Split),
    ("edge", Factorisation::Edge),
    ("edge-pair", Factorisation::EdgePair),
];

/// 002's estimators in its tables' order: (group key, row label).
const ESTIMATORS: [(&str, &str); 5] = [
    ("pw", "Piecewise"),
    ("camel0", "CAMEL(0)"),
    ("bp", "LBP"),
    ("cccp-camel", "CCCP CAMEL"),
    ("cccp-camel-empirical", "CCCP CAMEL(Empirical)"),
];

/// The five estimators × folds ([`groups`]), CCCP capped at `max_outer` linearisations.
fn camel_groups(
    prefix: &str,
    folds: usize,
    max_outer: usize,
    spec: impl Fn(usize) -> RunSpec,
) -> Vec<Group> {
    let keys: Vec<&str> = ESTIMATORS.iter().map(|e| e.0).collect();
    let mut gs = groups(&keys, prefix, folds, spec);
    for r in gs.iter_mut().flat_map(|g| g.runs.iter_mut()) {
        if let EstimatorSpec::Camel { variant, camel } = &mut r.estimator {
            if *variant != CamelVariant::Camel0 {
                camel.max_outer = max_outer;
            }
        }
    }
    gs
}

/// 002's row for one estimator: macro and micro F1, outer loops, and where its table gives them
/// the inner loops summed over the outer loops and the seconds.
/// 002's row: macro F1, micro F1, outer loops, inner iterations, seconds, and the F1s' standard
/// deviations where the table prints them (Table 2).
type PaperRow = (f64, f64, f64, Option<f64>, Option<f64>, Option<(f64, f64)>);

/// A table of the five estimators: macro and micro F1, outer loops, iterations, seconds, with
/// 002's numbers beside ours.
fn text_table(prefix: &str, paper: &[PaperRow; 5], chain: &str) -> Table {
    let mut rows: Vec<(String, Vec<Option<Cell>>)> = ESTIMATORS
        .iter()
        .zip(paper)
        .map(
            |((key, label), (macro_f1, micro_f1, outer, inner, seconds, sds))| {
                let g = format!("{prefix}{key}");
                let camel = key.contains("camel");
                (
                    label.to_string(),
                    vec![
                        cell(&g, Metric::MacroF1, p(*macro_f1, sds.map(|s| s.0))),
                        cell(&g, Metric::MicroF1, p(*micro_f1, sds.map(|s| s.1))),
                        if camel {
                            cell(&g, Metric::OuterLoops, p(*outer, None))
                        } else {
                            None
                        },
                        cell(&g, Metric::Iterations, inner.and_then(|x| p(x, None))),
                        cell(&g, Metric::Seconds, seconds.and_then(|x| p(x, None))),
                    ],
                )
            },
        )
        .collect();
    rows.push((
        "Linear chain, exact ML (BP's start)".into(),
        vec![
            cell(chain, Metric::MacroF1, None),
            cell(chain, Metric::MicroF1, None),
            None,
            cell(chain, Metric::Iterations, None),
            cell(chain, Metric::Seconds, None),
        ],
    ));
    Table {
        title:
            "Macro and micro F1, CCCP's linearisations (outer loops), L-BFGS iterations, seconds"
                .into(),
        columns: [
            "macro F1",
            "micro F1",
            "outer loops",
            "iterations",
            "train s",
        ]
        .iter()
        .map(|c| c.to_string())
        .collect(),
        rows,
    }
}

/// |a − b| ≤ `within` on the groups' mean of `m`.
fn close(r: &Results, a: &str, b: &str, m: &Metric, within: f64) -> Option<(Verdict, String)> {
    let (x, y) = (group_mean(r, a, m)?, group_mean(r, b, m)?);
    Some((
        ((x - y).abs() <= within).into(),
        format!("{x:.2} against {y:.2} (difference {:.2})", x - y),
    ))
}

/// The groups' means of `m`, each named by its estimator.
fn means(r: &Results, groups: &[String], m: &Metric) -> Option<Vec<(String, f64)>> {
    groups
        .iter()
        .map(|g| Some((g.rsplit('/').next()?.to_string(), group_mean(r, g, m)?)))
        .collect()
}

fn list(means: &[(String, f64)]) -> String {
    means
        .iter()
        .map(|(g, v)| format!("{g} {v:.2}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// "`tops` perform best": each of `tops` above each of `others`, paired ([`difference`]),
/// p < 0.05.
fn best_of(
    r: &Results,
    tops: &[String],
    others: &[String],
    m: &Metric,
) -> Option<(Verdict, Vec<String>)> {
    let mut verdict = Verdict::Holds;
    let mut evidence = vec![];
    for a in tops {
        for b in others {
            let (d, _, _, p, ev) = paired_difference(r, a, b, m)?;
            verdict = verdict.weaker(Verdict::paired(d, p, 0.05));
            evidence.push(ev);
        }
    }
    Some((verdict, evidence))
}

/// "Almost identical", within ± this many points: fixed before the runs, below the 0.7 by
/// which 002 Table 1's best pair leads the nearest row it beats (CAMEL(0)).
const IDENTICAL: f64 = 0.5;

/// 002 Table 1: named entities with the skip-chain CRF. 002 used English CoNLL-2003; here
/// Dutch CoNLL-2002 (train `ned.train`, test `ned.testb`).
pub(super) fn table1(o: &Options) -> Result<Experiment> {
    let (train, test) = ner_files(o, "ned.testb")?;
    let chain = ChainOptions {
        extractor: Extractor::Ner,
        factorisation: Factorisation::EdgePair,
        feature_set: FeatureSet::Observed,
        lexicons: Some(lexicons(o)),
        ..ChainOptions::default()
    };
    let skip = ModelSpec::SkipChain(ChainOptions {
        skip: Some(SkipOptions::default()),
        ..chain.clone()
    });
    let prefix = "camel-ner/";
    let mut gs = camel_groups(prefix, 1, 3, |_| {
        base_spec(o, train.clone(), test.clone(), skip.clone())
    });
    // Loopy BP training starts from the trained linear chain (exact ML), as 000 §5.1.3 had to
    // and as 002's restarts of the optimiser do in effect.
    let chain_name = format!("{prefix}chain-ml");
    let mut chain_first = groups(&["ml"], &format!("{prefix}chain-"), 1, |_| {
        base_spec(
            o,
            train.clone(),
            test.clone(),
            ModelSpec::LinearChain(chain.clone()),
        )
    });
    start_from(o, &mut gs, &format!("{prefix}bp"), &chain_name);
    // CAMEL's first fit is piecewise training itself (δ = 0, g = 0): on these hours-long runs
    // it starts from the trained pw run instead of doing that fit again.
    for v in ["camel0", "cccp-camel", "cccp-camel-empirical"] {
        start_from(o, &mut gs, &format!("{prefix}{v}"), &format!("{prefix}pw"));
    }
    chain_first.append(&mut gs);
    let gs = chain_first;
    // 002 Table 1's inner loops summed over its outer loops (LBP 97 + 20 + 12, CCCP 250 + 41,
    // empirical 150 + 40) and its seconds.
    let paper = [
        (83.7, 85.2, 1.0, Some(82.0), Some(7348.0), None),
        (83.9, 85.5, 1.0, Some(20.0), Some(9348.0), None),
        (84.6, 86.2, 3.0, Some(129.0), Some(13871.0), None),
        (84.6, 86.1, 2.0, Some(291.0), Some(40000.0), None),
        (84.5, 85.9, 2.0, Some(190.0), Some(24833.0), None),
    ];
    let g = |k: &str| format!("{prefix}{k}");
    let all: Vec<String> = ESTIMATORS.iter().map(|(k, _)| g(k)).collect();
    let all2 = all.clone();
    let (tops, others) = (vec![g("bp"), g("cccp-camel")], vec![g("pw"), g("camel0")]);
    let claims = vec![
        Claim {
            test: None,
            says: format!("LBP and CCCP CAMEL perform best and almost identically (002 Table 1: macro F1 84.6 both against PW 83.7 and CAMEL(0) 83.9): each above PW and CAMEL(0) by the paired bootstrap of micro F1 over the test sentences (p < 0.05), and LBP − CCCP inside ± {IDENTICAL} points (its 95 % interval inside: holds; only the difference inside: not significant)"),
            check: Box::new(move |r| {
                let (best, mut ev) = best_of(r, &tops, &others, &Metric::MacroF1)?;
                let (_, lo, hi, _, e) = paired_difference(r, &tops[0], &tops[1], &Metric::MacroF1)?;
                let same = Verdict::within(lo, hi, IDENTICAL);
                ev.push(e);
                let ms = means(r, &all, &Metric::MacroF1)?;
                Some((best.weaker(same), format!("{}; macro F1: {}", ev.join("; "), list(&ms))))
            }),
        },
        Claim {
            test: None,
            says: "all of the methods perform reasonably well: every estimator within 1 point of the best macro F1 (002 Table 1: 83.7–84.6)".into(),
            check: Box::new(move |r| {
                let ms = means(r, &all2, &Metric::MacroF1)?;
                let top = ms.iter().map(|m| m.1).fold(f64::MIN, f64::max);
                let low = ms.iter().map(|m| m.1).fold(f64::MAX, f64::min);
                Some(((top - low <= 1.0).into(), format!("spread {:.2} points ({})", top - low, list(&ms))))
            }),
        },
    ];
    Ok(Experiment {
        name: "002-table1",
        title: "002 Table 1: CAMEL on named entities, skip-chain CRF".into(),
        protocol: vec![
            "Data: CoNLL-2002 Dutch, trained on `ned.train`, tested on `ned.testb`; 002 used English CoNLL-2003 (947 documents, tested on its 231), which is not in ../shared/data: compare orders, not levels.".into(),
            format!("Training data: {}.", super::tasks::sizes(o, "all 15,806 sentences", "the first 60 sentences, 40 test sentences, 5 iterations (quick)")),
            "Model: the skip-chain CRF (000 eq. 41): the linear chain with edge factors Ψ_t(y_t, y_{t−1}, x) (observation weights per label pair, observed pairs; 000 Table 1's features, name lists) plus a skip factor between identical capitalised words of a sentence. 002 used Finkel et al.'s features, which we do not have.".into(),
            "Estimators: pw, camel0, bp (loopy BP, started from the trained linear chain, whose exact ML row is shown), cccp-camel (from g = 0) and cccp-camel-empirical (g from the smoothed empirical marginals), CCCP capped at 3 linearisations (002 reports 2 on this task; the cap is not chosen on test scores). The CAMEL runs start from the trained pw run's weights: their first fit is piecewise training itself, so it converges at once to the same optimum (checked on 1,000 training sentences: the same F1 to the last digit, the objective to 3e-7 relative), and their iterations and seconds count the CAMEL fits only. σ² = 10 (002 §4's setting for text). L-BFGS to convergence (at most 1,000 iterations per fit). Decoding: max-product BP (002 used RBP).".into(),
            "Macro F1: the mean of the four entity types' F1 (conlleval); micro F1: conlleval's overall F1. Outer loops: CAMEL fits after the piecewise start (CCCP: linearisations of g).".into(),
            "002's iterations are its inner loops summed over its outer loops (LBP 97 + 20 + 12, CCCP CAMEL 250 + 41, empirical 150 + 40); its seconds are from 2008 hardware and, in 002's words, \"only a very coarse guideline to the orders of magnitude\" (they depend on each inner loop's convergence criterion): compare the ratios between rows, not the seconds.".into(),
        ],
        groups: gs,
        tables: vec![text_table(prefix, &paper, &chain_name)],
        figure: Figure::Bars(2),
        analysis: None,
        claims,
    })
}

/// The pooled seminar announcements (485 e-mails) permuted once (seed 2002) and cut into
/// `folds` folds: fold k tests on its part and trains on the rest; `--quick` runs fold 0.
fn seminar_cv(o: &Options, folds: usize) -> Result<Vec<(std::path::PathBuf, std::path::PathBuf)>> {
    let items = seminars_pooled(o)?;
    let n = items.len();
    let perm = crate::data::shuffled(n, 2002);
    let splits = (0..if o.quick { 1 } else { folds }).map(|k| {
        let (lo, hi) = (k * n / folds, (k + 1) * n / folds);
        let train = perm[..lo].iter().chain(&perm[hi..]).copied().collect();
        (train, perm[lo..hi].to_vec())
    });
    write_seminar_splits(o, &items, "cv", splits)
}

/// 002 Table 2: seminar announcements, skip-chain CRF, four folds.
pub(super) fn table2(o: &Options) -> Result<Experiment> {
    let folds = seminar_cv(o, 4)?;
    let prefix = "camel-seminars/";
    let skip = seminar_model(o, true);
    let mut gs = camel_groups(prefix, folds.len(), 3, |k| {
        base_spec(o, folds[k].0.clone(), folds[k].1.clone(), skip.clone())
    });
    let chain_name = format!("{prefix}chain-ml");
    let mut chain_first = seminar_groups(o, &folds, &["ml"], &format!("{prefix}chain-"), false);
    start_from(o, &mut gs, &format!("{prefix}bp"), &chain_name);
    chain_first.append(&mut gs);
    let mut gs = chain_first;
    // The controlled experiment for "pw gets speaker F1 1.33" (the bench's linear chain used
    // the default `split` factorisation): piecewise on the linear chain with `split`, `edge`
    // and `edge-pair` factors, nothing else changed.
    let ModelSpec::LinearChain(c) = seminar_model(o, false) else {
        unreachable!("the seminar chain without skip edges is a linear chain")
    };
    for (key, factorisation) in FACTORISATIONS {
        let m = ModelSpec::LinearChain(ChainOptions {
            factorisation,
            ..c.clone()
        });
        gs.extend(groups(
            &["pw"],
            &format!("{prefix}chain-{key}-"),
            folds.len(),
            |k| base_spec(o, folds[k].0.clone(), folds[k].1.clone(), m.clone()),
        ));
    }
    // 002 Table 2 gives no inner loops or seconds; its F1s carry standard deviations over the
    // folds, "88.5(1.0)" (docs/reproductions/paper-numbers.tsv cites each).
    let paper = [
        (88.5, 88.5, 0.0, None, None, Some((1.0, 0.9))),
        (88.5, 88.5, 0.0, None, None, Some((1.0, 0.9))),
        (89.6, 89.6, 0.0, None, None, Some((1.1, 1.0))),
        (88.7, 88.6, 2.0, None, None, Some((1.1, 1.0))),
        (88.7, 88.7, 1.0, None, None, Some((1.1, 1.0))),
    ];
    let g = |k: &str| format!("{prefix}{k}");
    let all: Vec<String> = ESTIMATORS.iter().map(|(k, _)| g(k)).collect();
    let (bp, pw, camel0) = (g("bp"), g("pw"), g("camel0"));
    let (pw2, camel02, bp2) = (pw.clone(), camel0.clone(), bp.clone());
    let f1 = |l: &str| Metric::LabelF1(l.into());
    let fields = ["stime", "etime", "location", "speaker"];
    let field_rows = ESTIMATORS
        .iter()
        .map(|(k, label)| {
            (
                label.to_string(),
                fields.iter().map(|f| cell(&g(k), f1(f), None)).collect(),
            )
        })
        .chain(
            std::iter::once(("Linear chain, exact ML".to_string(), "chain-ml".to_string()))
                .chain(FACTORISATIONS.iter().map(|(key, _)| {
                    (
                        format!("Linear chain, pw, `{key}`"),
                        format!("chain-{key}-pw"),
                    )
                }))
                .map(|(label, k)| {
                    (
                        label,
                        fields.iter().map(|f| cell(&g(&k), f1(f), None)).collect(),
                    )
                }),
        )
        .collect();
    let claims = vec![
        Claim {
            test: None,
            says: "loopy belief propagation performs the best (002 Table 2: 89.6 macro F1 against 88.5–88.7): above every other estimator by the paired t-test of macro F1 over the folds (p < 0.05)".into(),
            check: Box::new(move |r| {
                let others: Vec<String> = all.iter().filter(|g| **g != bp2).cloned().collect();
                let (v, ev) = best_of(r, std::slice::from_ref(&bp2), &others, &Metric::MacroF1)?;
                Some((v, format!("{}; macro F1: {}", ev.join("; "), list(&means(r, &all, &Metric::MacroF1)?))))
            }),
        },
        Claim {
            test: None,
            says: "Piecewise and CAMEL(0) agree: the marginal consistency constraints are automatically satisfied (002 Table 2: 88.5 both; within 0.2 macro F1 here)".into(),
            check: Box::new(move |r| close(r, &camel02, &pw2, &Metric::MacroF1, 0.2)),
        },
        Claim {
            test: None,
            says: "the differences between the algorithms are not much larger than the standard deviation (002: ≈ 1 point)".into(),
            check: Box::new(move |r| close(r, &bp, &pw, &Metric::MacroF1, 2.0)),
        },
    ];
    Ok(Experiment {
        name: "002-table2",
        title: "002 Table 2: CAMEL on seminar announcements, skip-chain CRF".into(),
        protocol: vec![
            "Data: the CMU seminar announcements (485 e-mails) pooled, permuted (seed 2002) and cut into four folds; each fold tests on its quarter and trains on the other three (002: \"averaged over four folds\").".into(),
            super::tasks::sizes(o, "Full: four folds, L-BFGS to convergence (at most 1,000 iterations per fit).", "Quick: one fold, 8 training and 6 test e-mails, 5 iterations."),
            "Model: the skip-chain CRF (000 eq. 41): edge factors Ψ_t(y_t, y_{t−1}, x) (observation weights per label pair, observed pairs), 000 Table 3's features, a skip factor between identical capitalised words of an e-mail. 002 used Finkel et al.'s features.".into(),
            "Estimators: pw, camel0, bp (loopy BP, started from the trained linear chain — its exact ML row is shown), cccp-camel and cccp-camel-empirical, CCCP capped at 3 linearisations (002 reports 2 and 1; not chosen on test scores). σ² = 10. Decoding: max-product BP.".into(),
            "Macro F1: the mean of the four fields' token F1; micro F1: token F1 pooled over the four fields (correct, predicted and gold tokens summed). Outer loops: CAMEL fits after the piecewise start.".into(),
            "Controlled experiment (the issue's \"pw gets speaker F1 1.33\": that bench's linear chain used the default `split` factorisation): piecewise on the linear chain with `split` (state factors plus observation-free transition factors), `edge` (one factor per edge, state weights shared by every source state) and `edge-pair` factors, nothing else changed.".into(),
        ],
        groups: gs,
        tables: vec![
            text_table(prefix, &paper, &chain_name),
            Table {
                title: "Token F1 per field".into(),
                columns: fields.iter().map(|f| f.to_string()).collect(),
                rows: field_rows,
            },
        ],
        figure: Figure::Bars(2),
        analysis: None,
        claims,
    })
}

/// The classifier's noise in Table 3's data (its accuracy alone ≈ 34 %).
const NOISE: f64 = 1.3;

/// The controlled experiment on the classifier's strength: 8-connected grids with less noise
/// (accuracy alone ≈ 50 % and ≈ 73 %; the paper's boosted super-pixel classifiers are strong
/// enough that its CRFs reach 78–84 %), one change from the table's data.
const STRONGER: [(f64, &str); 2] = [(0.8, "seg8-n0.8/"), (0.5, "seg8-n0.5/")];

/// Grid folds for Table 3: 40 train and 40 test images per fold (quick: 10 and 10 of 6×6),
/// generated from seeds 21–23 with a per-pixel classifier's scores (noise σ) as observations.
fn segmentation_folds(
    o: &Options,
    noise: f64,
) -> Result<Vec<(std::path::PathBuf, std::path::PathBuf)>> {
    let (h, n, seeds): (usize, usize, &[u64]) = if o.quick {
        (6, 10, &[21])
    } else {
        (10, 40, &[21, 22, 23])
    };
    let gen = GridGen {
        classes: 7,
        height: h,
        width: h,
        noise,
        scores: true,
        ..GridGen::default()
    };
    let w = o.out.join("data");
    // The table's files keep their names; the stronger classifiers' carry their noise.
    let tag = if noise == NOISE {
        String::new()
    } else {
        format!("n{noise}-")
    };
    let fmt = crate::data::grid::format_grid;
    seeds
        .iter()
        .map(|&seed| {
            let all = gen.images(2 * n, seed)?;
            let (tr, te) = all.split_at(n);
            let (ptr, pte) = (
                w.join(format!("seg-{h}-{tag}{seed}-train.grid")),
                w.join(format!("seg-{h}-{tag}{seed}-test.grid")),
            );
            write_atomic(&ptr, fmt(tr, None).as_bytes())?;
            write_atomic(&pte, fmt(te, None).as_bytes())?;
            Ok((ptr, pte))
        })
        .collect()
}

/// 002 Table 3: segmentation, 8-connected grids (and 4-connected, the controlled experiment).
pub(super) fn table3(o: &Options) -> Result<Experiment> {
    let mut gs = vec![];
    for (prefix, nb, noise) in [
        ("seg8/", Neighbourhood::Eight, NOISE),
        ("seg4/", Neighbourhood::Four, NOISE),
    ]
    .into_iter()
    .chain(STRONGER.map(|(n, p)| (p, Neighbourhood::Eight, n)))
    {
        let folds = segmentation_folds(o, noise)?;
        let model = ModelSpec::Grid(GridOptions {
            pairwise: Pairwise::Symmetric,
            neighbourhood: nb,
        });
        gs.extend(camel_groups(prefix, folds.len(), 8, |k| {
            let mut s = base_spec(o, folds[k].0.clone(), folds[k].1.clone(), model.clone());
            // 002 §4: no regularisation for the vision task (84 weights, thousands of pixels).
            s.prior = Prior { sigma2: None };
            s
        }));
    }
    // 002 Table 3 per estimator: accuracy and seconds, each as mean and sd over its 3 folds.
    let paper = [
        ((78.6, 1.3), (911.0, 20.0)),
        ((82.9, 0.9), (4082.0, 267.0)),
        ((53.2, 4.2), (4437.0, 307.0)),
        ((84.4, 0.6), (40501.0, 3994.0)),
        ((84.4, 0.5), (37032.0, 4419.0)),
    ];
    let rows = ESTIMATORS
        .iter()
        .zip(paper)
        .map(|((k, label), ((acc, acc_sd), (secs, secs_sd)))| {
            (
                label.to_string(),
                vec![
                    cell(
                        &format!("seg8/{k}"),
                        Metric::TokenAccuracy,
                        p(acc, Some(acc_sd)),
                    ),
                    cell(&format!("seg4/{k}"), Metric::TokenAccuracy, None),
                    cell(&format!("seg8/{k}"), Metric::OuterLoops, None),
                    cell(
                        &format!("seg8/{k}"),
                        Metric::Seconds,
                        p(secs, Some(secs_sd)),
                    ),
                    cell(&format!("seg4/{k}"), Metric::Seconds, None),
                ],
            )
        })
        .map(|(l, mut cells)| {
            if !l.contains("CCCP") {
                cells[2] = None;
            }
            (l, cells)
        })
        .collect();
    let order = |prefix: &'static str, what: String| -> Claim {
        Claim {
            test: None,
            says: format!(
                "{what}: CCCP CAMEL > CAMEL(0) > Piecewise > LBP (002 Table 3: 84.4 > 82.9 > 78.6 > 53.2)"
            ),
            check: Box::new(move |r| {
                let m = |k: &str| group_mean(r, &format!("{prefix}{k}"), &Metric::TokenAccuracy);
                let (c, c0, pw, bp) = (m("cccp-camel")?, m("camel0")?, m("pw")?, m("bp")?);
                // Each step of the order by the paired t-test over the folds.
                let order = ["cccp-camel", "camel0", "pw", "bp"].map(|k| format!("{prefix}{k}"));
                let mut verdict = Verdict::Holds;
                let mut steps = vec![];
                for w in order.windows(2) {
                    let (d, _, _, p, ev) = paired_difference(r, &w[0], &w[1], &Metric::TokenAccuracy)?;
                    verdict = verdict.weaker(Verdict::paired(d, p, 0.05));
                    steps.push(ev);
                }
                Some((
                    verdict,
                    format!("CCCP {c:.2}, CAMEL(0) {c0:.2}, PW {pw:.2}, LBP {bp:.2}; {}", steps.join("; ")),
                ))
            }),
        }
    };
    Ok(Experiment {
        name: "002-table3",
        title: "002 Table 3: CAMEL on segmentation with heavy weight sharing".into(),
        protocol: vec![
            "Data: generated (the Corel images and their super-pixels are not available): label images of K = 7 classes (the class of the largest of 7 smooth random fields), each pixel observed through a weak per-pixel classifier's log-probabilities log softmax(one-hot + N(0, 1.3²)) — 002's pre-trained node potentials. Three folds of 40 training and 40 test images (seeds 21, 22, 23), as 002's \"three folds of 40 training and 40 test images\".".into(),
            super::tasks::sizes(o, "Full: 10×10 images, three folds.", "Quick: 6×6 images, 10 and 10, one fold, 5 iterations."),
            "Model: a grid CRF with one symmetric 7×7 edge table shared by every edge (28 weights; 002: 21 + the diagonal) and per class a weight on each of the 7 classifier scores plus a bias (56 weights) — 84 in all, as 002's. 8-connected (the paper's super-pixel graph is dense with tight loops); the 4-connected rows change only the neighbourhood.".into(),
            "Estimators: pw, camel0, bp (loopy BP training from zero), cccp-camel and cccp-camel-empirical, CCCP capped at 8 linearisations (002: \"essentially converged after seven linearizations\"). No prior (002 §4's vision setting). CAMEL's δ sweeps and g to 1e-4. Decoding: max-product loopy BP. Accuracy per pixel.".into(),
            "Controlled experiment, one change: the classifier's strength. The same images (seeds, sizes, classes) observed through less noise, σ = 0.8 and 0.5 (the classifier alone ≈ 50 % and ≈ 73 % by its noise; 002's boosted super-pixel classifiers are strong enough that its CRFs reach 78–84 %), 8-connected. The σ values were fixed by the classifier's own accuracy, before any run.".into(),
            "002's seconds (mean ± sd over its 3 folds) are from 2008 hardware on the Corel images, ours on generated 10×10 grids: compare the ratios between rows, not the seconds.".into(),
        ],
        groups: gs,
        tables: vec![Table {
            title: "Pixel accuracy, CCCP's linearisations and seconds, 8- and 4-connected".into(),
            columns: ["accuracy, 8-conn.", "accuracy, 4-conn.", "outer loops, 8-conn.", "train s, 8-conn.", "train s, 4-conn."]
                .iter()
                .map(|c| c.to_string())
                .collect(),
            rows,
        }, Table {
            title: "8-connected, by the classifier's strength (one change: its noise σ; 1.3 is the table's)".into(),
            columns: std::iter::once(NOISE)
                .chain(STRONGER.map(|s| s.0))
                .map(|n| format!("accuracy, σ = {n}"))
                .chain(STRONGER.map(|s| format!("train s, σ = {}", s.0)))
                .collect(),
            rows: ESTIMATORS
                .iter()
                .map(|(k, label)| {
                    let acc = |prefix: &str| cell(&format!("{prefix}{k}"), Metric::TokenAccuracy, None);
                    let secs = |prefix: &str| cell(&format!("{prefix}{k}"), Metric::Seconds, None);
                    (
                        label.to_string(),
                        std::iter::once(acc("seg8/"))
                            .chain(STRONGER.map(|s| acc(s.1)))
                            .chain(STRONGER.map(|s| secs(s.1)))
                            .collect(),
                    )
                })
                .collect(),
        }],
        figure: Figure::Bars(2),
        analysis: Some(classifier_alone),
        claims: std::iter::once(order("seg8/", "8-connected".into()))
            .chain(std::iter::once(order("seg4/", "4-connected".into())))
            .chain(STRONGER.map(|(n, p)| order(p, format!("8-connected, classifier noise σ = {n}"))))
            .collect(),
    })
}

/// The test pixels (%) whose highest classifier score is their gold label: the per-pixel
/// classifier alone, no model.
fn classifier_accuracy(c: &crate::data::Corpus) -> f64 {
    let (mut ok, mut n) = (0usize, 0usize);
    for s in &c.sequences {
        for (obs, label) in s.columns.iter().zip(&s.labels) {
            let best = obs
                .iter()
                .enumerate()
                .map(|(i, v)| (i, v.parse::<f64>().unwrap_or(f64::MIN)))
                .fold((0, f64::MIN), |a, b| if b.1 > a.1 { b } else { a })
                .0;
            ok += (best.to_string() == *label) as usize;
            n += 1;
        }
    }
    100.0 * ok as f64 / n.max(1) as f64
}

/// The weak per-pixel classifier alone (each test pixel's highest score), and how much each
/// trained model's max-product labelling collapses: distinct labels per test image and the
/// share of its pixels under its most frequent label, against the gold images'.
fn classifier_alone(e: &Experiment, _o: &Options, results: &Results) -> Result<Section> {
    use std::fmt::Write;
    // Each noise level's test images, read once: fold k of every group tests on tests[k].
    let read_tests = |group: &str| -> Result<Vec<crate::data::Corpus>> {
        e.groups
            .iter()
            .find(|g| g.name == group)
            .map(|g| {
                g.runs
                    .iter()
                    .filter_map(|r| r.test.as_deref())
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
            .into_iter()
            .map(crate::data::grid::read_grid)
            .collect()
    };
    let levels: Vec<(f64, &str)> = std::iter::once((NOISE, "seg8/")).chain(STRONGER).collect();
    let mut tests = std::collections::BTreeMap::new();
    let mut json = serde_json::Map::new();
    let mut md = String::new();
    let mut gold_div = vec![];
    for (noise, prefix) in &levels {
        let t = read_tests(&format!("{prefix}pw"))?;
        let mut accs = vec![];
        for c in &t {
            accs.push(classifier_accuracy(c));
            if *noise == NOISE {
                gold_div.extend(c.sequences.iter().map(|s| diversity(&s.labels)));
            }
        }
        let st = Stat::of(accs.clone());
        let _ = writeln!(
            md,
            "- σ = {noise}{}: {} (per fold {})",
            if *noise == NOISE {
                " (the table's)"
            } else {
                ""
            },
            report::fmt_stat(&st, false),
            accs.iter()
                .map(|a| format!("{a:.2}"))
                .collect::<Vec<_>>()
                .join(" / ")
        );
        json.insert(
            format!("classifier_accuracy_noise_{noise}"),
            serde_json::json!(st),
        );
        if *noise == NOISE {
            json.insert("classifier_accuracy".into(), serde_json::json!(st));
            tests.insert("seg4/", t.clone());
        }
        tests.insert(prefix, t);
    }
    md = format!(
        "Each test pixel's highest classifier score, no model (a trained model below this has learnt edge weights that hurt):\n\n{md}\n"
    );
    let mean = |v: &[(f64, f64)], i: usize| {
        v.iter()
            .map(|x| if i == 0 { x.0 } else { x.1 })
            .sum::<f64>()
            / v.len().max(1) as f64
    };
    let columns: Vec<(&str, String)> = [
        ("seg8/", "8-conn.".to_string()),
        ("seg4/", "4-conn.".into()),
    ]
    .into_iter()
    .chain(STRONGER.map(|(n, p)| (p, format!("8-conn., σ = {n}"))))
    .collect();
    let _ = writeln!(
        md,
        "**Collapse of the max-product labelling** (all folds' test images): distinct labels per image and the share of an image's pixels under its most frequent label. Gold images: {:.2} labels, {:.1} % under the top one.\n\n| estimator |{}\n|---|{}",
        mean(&gold_div, 0),
        100.0 * mean(&gold_div, 1),
        columns.iter().map(|(_, c)| format!(" labels / image, {c} | top label %, {c} |")).collect::<String>(),
        "---:|---:|".repeat(columns.len()),
    );
    let mut coupling_md = format!(
        "\n**Coupling against evidence** (the learnt weights, mean over folds): (mean diagonal − mean off-diagonal edge weight) / (mean over labels of the weight on the label's own classifier score − the mean weight on the other scores). Max-product labelling depends on the weights only up to a common scale, so this ratio says how far neighbours outvote a pixel's own evidence.\n\n| estimator |{}\n|---|{}\n",
        columns.iter().map(|(_, c)| format!(" {c} |")).collect::<String>(),
        "---:|".repeat(columns.len()),
    );
    for (key, label) in ESTIMATORS {
        let mut row = format!("| {label} |");
        let mut coupling_row = format!("| {label} |");
        for (prefix, _) in &columns {
            let g = format!("{prefix}{key}");
            let (Some(group), Some(runs), Some(tests)) = (
                e.groups.iter().find(|x| x.name == g),
                results.get(&g),
                tests.get(prefix),
            ) else {
                row.push_str(" — | — |");
                coupling_row.push_str(" — |");
                continue;
            };
            let mut div = vec![];
            let mut ratios = vec![];
            for ((dir, _), (spec, test)) in runs.iter().zip(group.runs.iter().zip(tests)) {
                let (fam, theta) = crate::run::RunFiles::at(dir).model()?;
                for y in crate::eval::predict(fam.as_ref(), &theta, test, &spec.inference())? {
                    div.push(diversity(&y));
                }
                if let Some((c, ev)) = coupling_and_evidence(fam.as_ref(), &theta) {
                    ratios.push(c / ev);
                }
            }
            let ratio = Stat::of(ratios);
            let _ = write!(
                coupling_row,
                " {} |",
                ratio
                    .as_ref()
                    .map_or("—".into(), |r| format!("{:.2}", r.mean))
            );
            let _ = write!(
                row,
                " {:.2} | {:.1} |",
                mean(&div, 0),
                100.0 * mean(&div, 1)
            );
            json.insert(g, serde_json::json!({"labels_per_image": mean(&div, 0), "top_label_share": mean(&div, 1), "coupling_over_evidence": ratio}));
        }
        let _ = writeln!(md, "{row}");
        let _ = writeln!(coupling_md, "{coupling_row}");
    }
    md.push_str(&coupling_md);
    json.insert("gold".into(), serde_json::json!({"labels_per_image": mean(&gold_div, 0), "top_label_share": mean(&gold_div, 1)}));
    Ok(Section {
        title: "The per-pixel classifier alone, and collapsed labellings".into(),
        markdown: md,
        json: serde_json::Value::Object(json),
        ..Section::default()
    })
}

/// A trained grid model's (coupling, evidence): the mean diagonal minus the mean off-diagonal
/// weight of the shared edge table, and the mean over labels of the weight on the label's own
/// classifier score (feature `obs{l+1}`) minus the mean weight on the other scores. `None` for
/// models without those templates.
fn coupling_and_evidence(
    fam: &dyn crate::graph::family::Family,
    theta: &[f64],
) -> Option<(f64, f64)> {
    let m = fam.model();
    let find = |n: &str| m.templates.iter().position(|t| t.name == n);
    let (pt, ut) = (find("pairwise")?, find("unary")?);
    // The grid's dense blocks: the shared edge table's one row, and unary features × labels.
    let (pair, unary) = (m.templates[pt].block(theta)?, m.templates[ut].block(theta)?);
    let (mut diag, mut off) = (vec![], vec![]);
    for (c, &w) in pair.row(0).iter().enumerate() {
        let name = fam.column_name(pt, c);
        let (a, b) = name.split_once('\t')?;
        if a == b {
            diag.push(w)
        } else {
            off.push(w)
        }
    }
    let n_obs = unary.nrows().checked_sub(1).filter(|&n| n > 1)?;
    let mut evidence = vec![];
    for (c, column) in unary.columns().into_iter().enumerate() {
        let own = fam.column_name(ut, c).parse::<usize>().ok()? + 1;
        let others: Vec<f64> = (1..=n_obs)
            .filter(|&k| k != own)
            .map(|k| column[k])
            .collect();
        evidence.push(*column.get(own)? - others.iter().sum::<f64>() / others.len().max(1) as f64);
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    Some((mean(&diag) - mean(&off), mean(&evidence)))
}

/// Distinct labels in an image, and the share of its pixels under the most frequent one.
fn diversity(labels: &[String]) -> (f64, f64) {
    let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
    for l in labels {
        *counts.entry(l.as_str()).or_default() += 1;
    }
    let top = counts.values().copied().max().unwrap_or(0);
    (counts.len() as f64, top as f64 / labels.len().max(1) as f64)
}
