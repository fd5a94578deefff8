//! The skip-chain CRF (000 eq. 41) by its definition: a skip factor joins exactly the pairs of
//! identical capitalised words (the closest ones kept under a cap); without such pairs it is the
//! linear chain; `--init-from` carries a chain's weights over by name and leaves the skip
//! weights at 0; 000 Table 3's multi-token time and date patterns.

use piecewise_lab::data::conll::{read_conll, Corpus};
use piecewise_lab::data::ner::time_date_patterns;
use piecewise_lab::graph::chain::{cap_skip_edges, skip_edges, ChainOptions, SkipOptions};
use piecewise_lab::run::ModelSpec;
use std::path::Path;

#[test]
fn skip_edges_join_identical_capitalised_words() {
    let w = ["Dr", "Smith", "said", "Smith", "the", "the", "Smith", "Dr."];
    assert_eq!(skip_edges(&w), vec![(1, 3), (1, 6), (3, 6)]);
    // A cap keeps the closest pairs: (1, 3) at distance 2 and (3, 6) at 3.
    assert_eq!(cap_skip_edges(skip_edges(&w), 2), vec![(1, 3), (3, 6)]);
    assert_eq!(cap_skip_edges(skip_edges(&w), 0).len(), 3);
    assert!(skip_edges(&["a", "a", "B"]).is_empty());
}

#[test]
fn time_and_date_patterns_follow_table_3() {
    let w = [
        "3:30", "-", "4:30", "pm", "on", "Tuesday", ",", "Oct", "5", "in", "Room", "5",
    ];
    let got = time_date_patterns(&w);
    let has = |t: usize, q: &str| got.contains(&(t, q));
    assert!(has(0, "TIME-DASH") && !has(0, "DASH-TIME"));
    assert!(has(2, "DASH-TIME") && has(3, "DASH-TIME"));
    assert!(has(5, "DATE") && has(7, "DATE") && has(8, "DATE"));
    // A number far from any month name is no date.
    assert!(!has(11, "DATE") && !has(4, "DATE"));
}

fn corpus(dir: &Path) -> Corpus {
    // word lower shape time-class label (the seminar columns).
    let doc = |words: &[(&str, &str)]| {
        words
            .iter()
            .map(|(w, l)| format!("{w} {} X - {l}\n", w.to_lowercase()))
            .collect::<String>()
            + "\n"
    };
    let text = doc(&[
        ("Speaker", "O"),
        ("Ann", "speaker"),
        ("Lee", "speaker"),
        ("talks", "O"),
        ("Lee", "speaker"),
        ("at", "O"),
        ("Wean", "location"),
    ]) + &doc(&[("no", "O"), ("repeats", "O"), ("Here", "location")]);
    let p = dir.join("train.conll");
    std::fs::write(&p, text).unwrap();
    read_conll(&p).unwrap()
}

fn skip_spec(chain: ChainOptions, skip: bool) -> ModelSpec {
    if skip {
        ModelSpec::SkipChain(ChainOptions {
            skip: Some(SkipOptions::default()),
            ..chain
        })
    } else {
        ModelSpec::LinearChain(chain)
    }
}

#[test]
fn skip_factors_sit_on_the_skip_edges_only() {
    let dir = tempfile::tempdir().unwrap();
    let c = corpus(dir.path());
    let (fam, insts) = skip_spec(ChainOptions::default(), true)
        .fit(&c, Some(&write_template(dir.path())))
        .unwrap();
    assert_eq!(fam.kind(), "skip-chain");
    let skip = fam
        .model()
        .templates
        .iter()
        .position(|t| t.name == "skip")
        .unwrap();
    let scopes: Vec<Vec<u32>> = insts[0]
        .factors
        .iter()
        .filter(|f| f.template as usize == skip)
        .map(|f| insts[0].scope(f).to_vec())
        .collect();
    assert_eq!(scopes, vec![vec![2, 4]], "Lee … Lee");
    assert!(
        insts[0].chain.is_none() && !insts[0].forest,
        "a skip edge closes a loop"
    );
    // The second document has no repeated capitalised word: it is the linear chain.
    assert!(insts[1].chain.is_some());
    let (chain_fam, chain_insts) = skip_spec(ChainOptions::default(), false)
        .fit(&c, Some(&write_template(dir.path())))
        .unwrap();
    assert_eq!(chain_insts[1].factors.len(), insts[1].factors.len());
    assert!(fam
        .describe()
        .contains("skip edges per training item: mean 0.5, max 1"));
    // --init-from: same-named weights carried over, the skip weights at 0.
    let theta: Vec<f64> = (0..chain_fam.model().n_params)
        .map(|i| 0.01 * (i as f64 + 1.0))
        .collect();
    let run = dir.path().join("chain-run");
    std::fs::create_dir_all(&run).unwrap();
    piecewise_lab::run::RunFiles::at(&run)
        .save_model(chain_fam.as_ref(), &theta)
        .unwrap();
    let init = piecewise_lab::run::factor_graphs::initial_weights(fam.as_ref(), &run).unwrap();
    // The same as the weights' text read into the skip chain.
    use piecewise_lab::graph::family::{dump_weights, read_weights};
    let text = dump_weights(chain_fam.as_ref(), &theta);
    assert_eq!(init, read_weights(fam.as_ref(), &text, "w.tsv").unwrap());
    for (t, tp) in fam.model().templates.iter().enumerate() {
        let src = chain_fam
            .model()
            .templates
            .iter()
            .position(|x| x.name == tp.name);
        for k in 0..tp.n_features {
            for c in 0..tp.n_cols {
                let Some(i) = tp.param_index(k, c) else {
                    continue;
                };
                match src {
                    None => assert_eq!(init[i], 0.0, "skip weight {k},{c}"),
                    Some(s) => {
                        let st = &chain_fam.model().templates[s];
                        let j = chain_fam
                            .feature_index(s, &fam.feature_name(t, k))
                            .and_then(|k2| st.param_index(k2, c))
                            .unwrap();
                        assert_eq!(init[i], theta[j], "{} weight {k},{c}", tp.name);
                    }
                }
            }
        }
    }
    // A run that did not finish saved the weights it stopped at: refused, naming its summary.
    let files = piecewise_lab::run::RunFiles::at(&run);
    for status in ["cancelled", "failed", "finished"] {
        let summary = piecewise_lab::run::RunSummary {
            status: status.into(),
            ..Default::default()
        };
        files.write_summary(&summary).unwrap();
        let got = piecewise_lab::run::factor_graphs::initial_weights(fam.as_ref(), &run);
        match status {
            "finished" => assert_eq!(got.unwrap(), init),
            _ => {
                let e = got.unwrap_err().to_string();
                assert!(
                    e.contains(status)
                        && e.contains("summary.json")
                        && e.contains("--if-unfinished"),
                    "{e}"
                );
            }
        }
    }
}

fn write_template(dir: &Path) -> std::path::PathBuf {
    let p = dir.join("t.tpl");
    std::fs::write(&p, "U00:%x[0,1]\nU01:%x[-1,1]\nB\n").unwrap();
    p
}

/// `skip-features bias`: each skip factor is its label pair alone (one weight per pair); by
/// default the pair is also conjoined with the repeated word's features.
#[test]
fn bias_skip_factors_have_one_feature() {
    use piecewise_lab::graph::chain::SkipFeatures;
    let dir = tempfile::tempdir().unwrap();
    let c = corpus(dir.path());
    let skip_features = |features: SkipFeatures| {
        let spec = ModelSpec::SkipChain(ChainOptions {
            skip: Some(SkipOptions {
                features,
                ..SkipOptions::default()
            }),
            ..ChainOptions::default()
        });
        let (fam, _) = spec.fit(&c, Some(&write_template(dir.path()))).unwrap();
        let t = fam
            .model()
            .templates
            .iter()
            .position(|t| t.name == "skip")
            .unwrap();
        (0..fam.model().templates[t].n_features)
            .map(|k| fam.feature_name(t, k))
            .collect::<Vec<_>>()
    };
    let bias = skip_features(SkipFeatures::Bias);
    assert_eq!(bias.len(), 1, "{bias:?}");
    let word = skip_features(SkipFeatures::Word);
    assert!(word.contains(&bias[0]) && word.len() > 1, "{word:?}");
    // The default stays out of specs (older runs still match); `bias` is written.
    let o = SkipOptions::default();
    assert_eq!(
        serde_json::to_value(&o).unwrap(),
        serde_json::json!({"max_edges": 0})
    );
    let b = SkipOptions {
        features: SkipFeatures::Bias,
        ..o
    };
    let v = serde_json::to_value(&b).unwrap();
    assert_eq!(v["features"], "bias");
    assert_eq!(serde_json::from_value::<SkipOptions>(v).unwrap(), b);
}
