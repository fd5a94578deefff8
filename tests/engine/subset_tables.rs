//! Training builds and scatters only the table entries an estimator's terms read (PWPL and PL
//! read a row and a column of each pair table; MEMM one row, a window of each sorted sparse
//! weight row under `edge-pair`), and pools identical one-table terms across sequences (the
//! per-feature and bagged pieces). Checked against the full-table route (every
//! entry built, each estimator's `evaluate` on every sequence, `Model::scatter`), which the
//! brute-force tests check against the paper's definitions. Debug builds fill unread entries with NaN, so a term
//! reading outside its subset turns the value into NaN here.

use crate::common;
use common::*;
use piecewise_lab::data::{Corpus, FeatureTemplate, Sequence};
use piecewise_lab::estimators::objective::DatasetObjective;
use piecewise_lab::estimators::terms::table_reads;
use piecewise_lab::estimators::{EstimatorSpec, TermList, Workspace};
use piecewise_lab::graph::chain::{ChainCrf, ChainOptions, Factorisation, FeatureSet};
use piecewise_lab::graph::{RowMaps, TableScratch};
use piecewise_lab::optim::Prior;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const LABELS: usize = 12;

/// Sequences from a random Markov chain over 12 labels, with a word column that depends on the
/// label and a coarse shape column; long enough that the always-on transition feature sees
/// more than 64 label pairs (so its weights get a dense row map).
fn corpus(seed: u64) -> Corpus {
    let mut rng = StdRng::seed_from_u64(seed);
    let sequences = (0..60)
        .map(|i| {
            let n = rng.random_range(4..=14);
            let mut y = rng.random_range(0..LABELS);
            let (mut columns, mut labels) = (vec![], vec![]);
            for _ in 0..n {
                y = if rng.random::<f64>() < 0.3 {
                    (y + 1) % LABELS
                } else {
                    rng.random_range(0..LABELS)
                };
                let w = (y * 3 + rng.random_range(0..5)) % 40;
                columns.push(vec![format!("w{w}"), format!("s{}", w % 4)]);
                labels.push(format!("L{y}"));
            }
            Sequence {
                columns,
                labels,
                line: i + 1,
                shape: None,
                attrs: Vec::new(),
                layers: vec![],
            }
        })
        .collect();
    Corpus {
        path: "random-markov".into(),
        sequences,
        n_columns: 3,
    }
}

const TEMPLATE: &str = "U00:%x[0,0]\nU01:%x[-1,0]\nU02:%x[0,1]\nB\nB01:%x[0,0]\nB02:%x[-1,1]\n";

#[test]
fn subset_tables_give_the_full_table_value_and_gradient() {
    let train = corpus(5);
    for feature_set in [FeatureSet::Observed, FeatureSet::All] {
        for factorisation in [
            Factorisation::Split,
            Factorisation::Edge,
            Factorisation::EdgePair,
            Factorisation::Bagged,
            Factorisation::PerFeature,
        ] {
            let options = ChainOptions {
                feature_set,
                factorisation,
                ..Default::default()
            };
            let template = FeatureTemplate::parse(TEMPLATE, "test").unwrap();
            let (crf, insts) = ChainCrf::fit(&train, template, options).unwrap();
            let model = &crf.model;
            let maps = RowMaps::new(model);
            if feature_set == FeatureSet::Observed {
                assert!(maps.rows() > 0, "the always-on transition row is mapped");
            }
            let theta = random_theta(&mut StdRng::seed_from_u64(3), model.n_params, 0.7);
            let prior = Prior { sigma2: Some(2.0) };
            for name in piecewise_lab::estimators::EstimatorSpec::NAMES {
                let spec = EstimatorSpec::from_name(name).unwrap();
                let est = spec.build(model).unwrap();
                let what = format!("{name} {feature_set:?} {factorisation:?}");
                // Reference: full tables, the estimator's own evaluate, full scatter.
                let (mut want_v, mut want_g) = (0.0, vec![0.0; model.n_params]);
                let mut ws = Workspace::default();
                for inst in &insts {
                    let mut phi = vec![0.0; inst.table_len];
                    model.build_tables(&theta, inst, &mut phi, &mut vec![]);
                    let mut dphi = vec![0.0; inst.table_len];
                    want_v += est.evaluate(inst, &phi, Some(&mut dphi), &mut ws);
                    model.scatter(inst, &dphi, 1.0, &mut want_g, &mut vec![]);
                }
                let want_obj = -want_v + prior.penalty(&theta);
                let obj = DatasetObjective::new(model, &insts, est.as_ref(), prior, 2).unwrap();
                let (built, total) = obj.table_entries();
                let bagged = matches!(
                    factorisation,
                    Factorisation::Bagged | Factorisation::PerFeature
                );
                if bagged && matches!(*name, "pw" | "pwpl") {
                    assert!(
                        obj.pooled_terms > 0,
                        "{what}: the repeated (feature, label) pieces are pooled"
                    );
                }
                if matches!(*name, "pl" | "pwpl") && !bagged {
                    assert!(
                        built * 4 < total,
                        "{what}: {built} of {total} entries built; expected a subset"
                    );
                }
                if *name == "ml" {
                    assert_eq!(built, total, "{what}: ML reads every entry");
                }
                let mut g = vec![0.0; model.n_params];
                let e = obj.evaluate(&theta, Some(&mut g));
                assert_close(e.objective, want_obj, 1e-10, &what);
                let e2 = obj.evaluate(&theta, None);
                assert_close(e2.objective, want_obj, 1e-10, &what);
                for (j, (&gj, &wj)) in g.iter().zip(&want_g).enumerate() {
                    let wj = -wj + theta[j] / 2.0;
                    assert!(
                        (gj - wj).abs() <= 1e-9 * (1.0 + wj.abs()),
                        "{what}: gradient {j}: {gj} vs full tables {wj}"
                    );
                }
            }
        }
    }
}

#[test]
fn subset_entries_equal_the_full_tables() {
    let train = corpus(9);
    let template = FeatureTemplate::parse(TEMPLATE, "test").unwrap();
    let options = ChainOptions {
        feature_set: FeatureSet::Observed,
        factorisation: Factorisation::Edge,
        ..Default::default()
    };
    let (crf, insts) = ChainCrf::fit(&train, template, options).unwrap();
    let model = &crf.model;
    let theta = random_theta(&mut StdRng::seed_from_u64(1), model.n_params, 1.0);
    let maps = RowMaps::new(model);
    let est = EstimatorSpec::from_name("pwpl")
        .unwrap()
        .build(model)
        .unwrap();
    let mut scratch = TableScratch::default();
    for inst in &insts {
        let mut terms = TermList::default();
        est.terms(inst, &mut terms);
        let reads = table_reads(inst, inst.gold.as_deref().unwrap(), &terms);
        let mut full = vec![0.0; inst.table_len];
        model.build_tables(&theta, inst, &mut full, &mut vec![]);
        let mut sub = vec![f64::NAN; inst.table_len];
        model.build_tables_subset(&theta, inst, &reads, &maps, &mut sub, &mut scratch);
        let mut n_read = 0;
        for (si, slot) in inst.slots.iter().enumerate() {
            let entries: Vec<usize> = match reads.slot(si) {
                Some(es) => es.iter().map(|&e| e as usize).collect(),
                None => (0..slot.len as usize).collect(),
            };
            for e in entries {
                let k = slot.offset as usize + e;
                assert_close(sub[k], full[k], 1e-12, "subset entry");
                n_read += 1;
            }
        }
        assert_eq!(n_read, reads.built(inst));
    }
}
