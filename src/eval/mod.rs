//! Decoding and metrics.

pub mod metrics;

pub use metrics::{score, Metrics, Prf, Scorer};

use crate::data::Corpus;
use crate::error::{Error, Result};
use crate::estimators::{Estimator, ExactMl, Workspace};
use crate::graph::chain::ChainCrf;
use crate::graph::Instance;
use crate::inference::enumerate;
use rayon::prelude::*;

/// Log-potential tables of an instance under θ.
fn tables(crf: &ChainCrf, theta: &[f64], inst: &Instance) -> Vec<f64> {
    let mut phi = vec![0.0; inst.table_len];
    crf.model
        .build_tables(theta, inst, &mut phi, &mut Vec::new());
    phi
}

/// Most probable labelling from an instance's tables: Viterbi on chains, enumeration otherwise.
pub fn decode_tables(inst: &Instance, phi: &[f64], ws: &mut Workspace) -> Result<Vec<u32>> {
    if let Some(lay) = &inst.chain {
        let mut out = Vec::new();
        ws.infer.chain.viterbi(inst, lay, phi, &mut out);
        Ok(out)
    } else {
        Ok(enumerate(inst, phi)?.map)
    }
}

/// Predicted labels (as strings) for every sequence of `corpus`.
pub fn predict(crf: &ChainCrf, theta: &[f64], corpus: &Corpus) -> Result<Vec<Vec<String>>> {
    let insts = crf.instances(corpus)?;
    insts
        .par_iter()
        .map_init(Workspace::default, |ws, inst| {
            decode_tables(inst, &tables(crf, theta, inst), ws).map(|y| {
                y.iter()
                    .map(|&i| crf.labels.names[i as usize].clone())
                    .collect()
            })
        })
        .collect()
}

/// Decodes and scores a labelled corpus; adds the held-out conditional log-likelihood.
pub fn evaluate(crf: &ChainCrf, theta: &[f64], corpus: &Corpus) -> Result<Metrics> {
    if let Some(s) = corpus.sequences.iter().find(|s| !s.has_labels()) {
        return Err(Error::parse(
            &corpus.path,
            s.line,
            "evaluation needs gold labels",
        ));
    }
    let insts = crf.instances(corpus)?;
    let results: Vec<(Vec<String>, Option<f64>)> = insts
        .par_iter()
        .map_init(Workspace::default, |ws, inst| {
            let phi = tables(crf, theta, inst);
            let y = decode_tables(inst, &phi, ws)?;
            let ll = inst
                .gold
                .as_ref()
                .map(|_| ExactMl.evaluate(inst, &phi, None, ws));
            Ok((
                y.iter()
                    .map(|&i| crf.labels.names[i as usize].clone())
                    .collect(),
                ll,
            ))
        })
        .collect::<Result<_>>()?;
    let mut scorer = Scorer::default();
    let mut ll = 0.0;
    let mut n_ll = 0;
    for (s, (pred, l)) in corpus.sequences.iter().zip(&results) {
        scorer.add(&s.labels, pred);
        if let Some(l) = l {
            ll += l;
            n_ll += 1;
        }
    }
    let mut m = scorer.finish();
    m.log_likelihood = Some(ll);
    m.log_likelihood_sequences = n_ll;
    Ok(m)
}
