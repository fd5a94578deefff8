//! The real corpora in ../shared/data, when present: the reader's counts against the data
//! README's statistics and the chunking template's features checked by hand on the first
//! sentence. Skips with a notice when the folder is absent.

use piecewise_lab::data::{read_conll, FeatureTemplate};
use std::collections::HashSet;
use std::path::PathBuf;

fn shared(rel: &str) -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/data")
        .join(rel);
    if p.exists() {
        Some(p)
    } else {
        eprintln!(
            "skipping: {} not found (../shared/data is absent)",
            p.display()
        );
        None
    }
}

#[test]
fn conll2000_matches_its_published_statistics() {
    let (Some(train), Some(test)) = (shared("conll2000/train.txt"), shared("conll2000/test.txt"))
    else {
        return;
    };
    let tr = read_conll(&train).unwrap();
    let te = read_conll(&test).unwrap();
    assert_eq!((tr.sequences.len(), tr.tokens()), (8936, 211727));
    assert_eq!((te.sequences.len(), te.tokens()), (2012, 47377));
    let chunks: HashSet<&str> = tr
        .sequences
        .iter()
        .flat_map(|s| s.labels.iter().map(|l| l.as_str()))
        .collect();
    let pos: HashSet<&str> = tr
        .sequences
        .iter()
        .flat_map(|s| s.columns.iter().map(|c| c[1].as_str()))
        .collect();
    assert_eq!(chunks.len(), 22);
    assert_eq!(pos.len(), 44);
    // First sentence: "Confidence NN B-NP / in IN B-PP / the DT B-NP ..."
    let s = &tr.sequences[0];
    assert_eq!(s.columns[0], vec!["Confidence", "NN"]);
    let t = FeatureTemplate::chunking();
    let feats: Vec<String> = t
        .unigram
        .iter()
        .map(|l| {
            let mut o = String::new();
            l.expand_into(s, 0, &mut o);
            o
        })
        .collect();
    for want in [
        "U00:_B-2",
        "U01:_B-1",
        "U02:Confidence",
        "U03:in",
        "U05:_B-1/Confidence",
        "U06:Confidence/in",
        "U12:NN",
        "U15:_B-2/_B-1",
        "U20:_B-2/_B-1/NN",
        "U22:NN/IN/DT",
    ] {
        assert!(
            feats.contains(&want.to_string()),
            "missing {want} in {feats:?}"
        );
    }
}

#[test]
fn ptb_sample_reads() {
    let Some(p) = shared("ptb-wsj-sample/treebank.tsv") else {
        return;
    };
    let c = read_conll(&p).unwrap();
    assert_eq!((c.sequences.len(), c.tokens()), (3914, 94084));
}
