//! The grammar's scores as a run's [`Metrics`]: EVALB (COLLINS.prm) over parsed trees —
//! labelled brackets as segments, per-label brackets as segment types, tagging as token
//! accuracy, and per sentence the wrong brackets the paired tests compare.

use super::evalb::{evalb, per_label, score_one, EvalbParams, EvalbScore};
use super::metrics::{Metrics, Prf};
use crate::data::treebank::Tree;
use crate::error::Result;
use crate::grammar::parse::{decoder_name, encode_words, parse_all, within};
use crate::grammar::train::GrammarEstimator;
use crate::grammar::Grammar;

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
    let mut paired = super::metrics::Paired {
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
    paired.gold_digest = super::metrics::digest(fingerprint.as_bytes());
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
    let (parsed, fallbacks) = parse_all(g, theta, est, &encode_words(g, &kept))?;
    let mut m = metrics(&kept, &parsed, fallbacks, decoder_name(est))?;
    m.skipped = skipped;
    Ok(m)
}
