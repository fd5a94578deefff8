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

/// Dutch NER with the `ner` features, small: the README's counts; MEMM, CRF-PT (exhaustive NOTA,
/// local decoding) and CRF-PT with per-state scales train on 150 sentences and tag 150 of
/// testa far above chance; the NOTA terms are every wrong source state.
#[test]
fn dutch_ner_trains_memm_and_crf_pt_with_the_ner_features() {
    use piecewise_lab::estimators::{EstimatorSpec, NotaSelection};
    use piecewise_lab::graph::chain::{ChainOptions, Extractor, Factorisation};
    use piecewise_lab::optim::Prior;
    use piecewise_lab::run::{execute, ModelSpec, RunSpec};
    let (Some(train), Some(testa), Some(lex)) = (
        shared("conll2002-ned/ned.train"),
        shared("conll2002-ned/ned.testa"),
        shared("lexicons"),
    ) else {
        return;
    };
    let tr = read_conll(&train).unwrap();
    assert_eq!((tr.sequences.len(), tr.tokens()), (15806, 202644));
    let dir = tempfile::tempdir().unwrap();
    let head = |src: &PathBuf, n: usize, name: &str| {
        let c = read_conll(src).unwrap();
        let p = dir.path().join(name);
        std::fs::write(
            &p,
            piecewise_lab::data::format_corpus(&c.sequences[..n.min(c.sequences.len())]),
        )
        .unwrap();
        p
    };
    let (tr, te) = (head(&train, 150, "tr.conll"), head(&testa, 150, "te.conll"));
    let spec = |est: EstimatorSpec, scaling: bool| RunSpec {
        name: None,
        train: tr.clone(),
        test: Some(te.clone()),
        template: None,
        model: ModelSpec::LinearChain(ChainOptions {
            factorisation: Factorisation::Edge,
            extractor: Extractor::Ner,
            lexicons: Some(lex.clone()),
            ..Default::default()
        }),
        estimator: est,
        optimiser: piecewise_lab::optim::LbfgsSpec {
            max_iter: 60,
            ..Default::default()
        },
        prior: Prior { sigma2: Some(10.0) },
        eval_every: 0,
        seed: 0,
        threads: 2,
        decode: Default::default(),
        train_sample: None,
        eval_train: false,
        per_state_scaling: scaling,
        subset_scaling: false,
        init_from: None,
    };
    let nota = EstimatorSpec::Nota {
        selection: NotaSelection::Exhaustive,
        weight: 1.0,
    };
    let cancel = std::sync::atomic::AtomicBool::new(false);
    for (name, est, scaling) in [
        ("memm", EstimatorSpec::Memm, false),
        ("nota", nota.clone(), false),
        ("nota-scaled", nota, true),
    ] {
        let out = dir.path().join(name);
        let s = execute(&spec(est, scaling), &out, &cancel, &mut |_| {}).unwrap();
        let m = s.test.as_ref().unwrap();
        let f1 = m.segment_f1().unwrap();
        eprintln!("{name}: F1 {f1:.2}, decoders {:?}", m.decoders);
        // 150 sentences of newswire (about 20 F1 here): well above the all-O tagger's 0.
        assert!(f1 > 10.0, "{name}: F1 {f1}");
        let decoder = m.decoders.keys().next().unwrap().clone();
        if scaling {
            assert_eq!(decoder, "viterbi (per-state scaled)");
            assert!(out.join("scaling.json").exists());
        } else {
            assert_eq!(decoder, "local (MEMM Viterbi)");
        }
        if name.starts_with("nota") {
            let l = 9; // PER/ORG/LOC/MISC in IOB2, and O
            let want: usize = read_conll(&tr)
                .unwrap()
                .sequences
                .iter()
                .map(|q| (q.len() - 1) * (l - 1))
                .sum();
            assert_eq!(s.nota_terms, Some(want));
        }
    }
}
