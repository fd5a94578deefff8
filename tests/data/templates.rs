//! CRF++ template expansion, checked against what CRF++ writes for the same template.

use crate::common;
use piecewise_lab::data::conll::{parse_conll, LabelColumn};
use piecewise_lab::data::FeatureTemplate;
use piecewise_lab::graph::chain::{ChainCrf, ChainOptions, FeatureSet, BIAS_FEATURE};

fn expand(
    t: &FeatureTemplate,
    unigram: bool,
    line: usize,
    seq: &piecewise_lab::data::Sequence,
    pos: usize,
) -> String {
    let mut s = String::new();
    let l = if unigram {
        &t.unigram[line]
    } else {
        &t.bigram[line]
    };
    l.expand_into(seq, pos, &mut s);
    s
}

#[test]
fn macros_expand_like_crfpp() {
    let c = parse_conll(
        b"the DT B-NP\ncat NN I-NP\nsat VBD B-VP\n",
        "t",
        LabelColumn::Last,
    )
    .unwrap();
    let s = &c.sequences[0];
    let t = FeatureTemplate::parse(
        "# comment\n U99:skipped (leading space, as CRF++)\nU02:%x[0,0]/%x[1,0]\nU10:%x[-2,1]\nU11:%x[3,0]x%x[-1,1]\nU\nB\nB01:%x[0,1]\n",
        "t",
    )
    .unwrap();
    assert_eq!(t.unigram.len(), 4);
    assert_eq!(t.bigram.len(), 2);
    assert_eq!(expand(&t, true, 0, s, 0), "U02:the/cat");
    assert_eq!(expand(&t, true, 0, s, 2), "U02:sat/_B+1");
    assert_eq!(expand(&t, true, 1, s, 0), "U10:_B-2");
    assert_eq!(expand(&t, true, 1, s, 1), "U10:_B-1");
    assert_eq!(expand(&t, true, 1, s, 2), "U10:DT");
    assert_eq!(expand(&t, true, 2, s, 1), "U11:_B+2xDT");
    assert_eq!(expand(&t, true, 2, s, 0), "U11:_B+1x_B-1");
    assert_eq!(expand(&t, true, 3, s, 1), "U");
    assert_eq!(expand(&t, false, 0, s, 1), "B");
    assert_eq!(expand(&t, false, 1, s, 2), "B01:VBD");
}

#[test]
fn chunking_template_is_the_crfpp_one() {
    let t = FeatureTemplate::chunking();
    assert_eq!(t.unigram.len(), 19);
    assert_eq!(t.bigram.len(), 1);
}

#[test]
fn dictionary_cutoff_bias_and_observed_layout() {
    let data = b"a X A\nb Y B\n\na X A\nc Y A\n";
    let c = parse_conll(data, "t", LabelColumn::Last).unwrap();
    let t = FeatureTemplate::parse("U0:%x[0,0]\nU1:%x[0,1]\nB\n", "t").unwrap();
    let opts = ChainOptions {
        label_bias: true,
        min_freq: 2,
        feature_set: FeatureSet::Observed,
        ..Default::default()
    };
    let (crf, insts) = ChainCrf::fit(&c, t, opts).unwrap();
    // Seen twice or more: U0:a, U1:X, U1:Y; plus the bias.
    let mut names = crf.state_features.names.clone();
    names.sort();
    assert_eq!(names, vec![BIAS_FEATURE, "U0:a", "U1:X", "U1:Y"]);
    assert_eq!(crf.labels.names, vec!["A", "B"]);
    let st = &crf.model.templates[0];
    let k = crf.state_features.get("U1:Y").unwrap() as usize;
    // U1:Y was seen with A and B; U0:a only with A.
    assert!(st.param_index(k, 0).is_some() && st.param_index(k, 1).is_some());
    let ka = crf.state_features.get("U0:a").unwrap() as usize;
    assert!(st.param_index(ka, 0).is_some() && st.param_index(ka, 1).is_none());
    // Transitions seen: A→B and A→A.
    let tt = &crf.model.templates[1];
    assert_eq!(tt.n_params(), 2);
    assert_eq!(insts.len(), 2);
    // The always-on transition feature makes every transition factor share one slot.
    assert_eq!(insts[0].factors.len(), 3);
}

/// The `edge-pair` factorisation: position t ≥ 1's state features are weighted per label pair
/// (y_{t−1}, y_t), position 0 keeps per-label state weights. A labelling's score equals that
/// definition read weight by weight, only observed pairs get weights with `--features
/// observed`, and every estimator's gradient matches finite differences on it.
#[test]
fn edge_pair_factorisation_scores_by_definition() {
    use piecewise_lab::estimators::objective::DatasetObjective;
    use piecewise_lab::estimators::EstimatorSpec;
    use piecewise_lab::graph::chain::{Factorisation, EDGE_PAIR, STATE, TRANSITION};
    use piecewise_lab::optim::Prior;
    let c = parse_conll(
        b"the DT B-NP\ncat NN I-NP\nsat VBD O\n\na DT B-NP\ndog NN I-NP\n\ndogs NNS B-NP\nbark VBP O\nloud RB O\n",
        "t",
        LabelColumn::Last,
    )
    .unwrap();
    let t = FeatureTemplate::parse("U00:%x[0,0]\nU01:%x[0,1]\nU02:%x[-1,1]\nB\n", "t").unwrap();
    for fs in [FeatureSet::All, FeatureSet::Observed] {
        let (crf, insts) = ChainCrf::fit(
            &c,
            t.clone(),
            ChainOptions {
                feature_set: fs,
                factorisation: Factorisation::EdgePair,
                ..Default::default()
            },
        )
        .unwrap();
        let m = &crf.model;
        assert_eq!(m.templates[EDGE_PAIR].name, "edge-pair");
        let theta: Vec<f64> = (0..m.n_params)
            .map(|i| ((i * 7919) % 97) as f64 / 50.0 - 1.0)
            .collect();
        let l = crf.labels.len();
        let w = |tpl: usize, name: &str, col: usize| -> f64 {
            let k = crf.state_features.get(name);
            let k = if tpl == TRANSITION {
                crf.trans_features.get(name)
            } else {
                k
            };
            k.and_then(|k| m.templates[tpl].param_index(k as usize, col))
                .map_or(0.0, |i| theta[i])
        };
        for (i, (inst, seq)) in insts.iter().zip(&c.sequences).enumerate() {
            let mut phi = vec![0.0; inst.table_len];
            m.build_tables(&theta, inst, &mut phi, &mut Vec::new());
            let n = seq.len();
            for code in 0..l.pow(n as u32) {
                let y: Vec<u32> = (0..n)
                    .map(|t| ((code / l.pow(t as u32)) % l) as u32)
                    .collect();
                let mut s = 0.0;
                for t in 0..n {
                    let feats = [
                        format!("U00:{}", seq.columns[t][0]),
                        format!("U01:{}", seq.columns[t][1]),
                        format!(
                            "U02:{}",
                            if t == 0 {
                                "_B-1"
                            } else {
                                seq.columns[t - 1][1].as_str()
                            }
                        ),
                    ];
                    for f in &feats {
                        s += if t == 0 {
                            w(STATE, f, y[0] as usize)
                        } else {
                            w(EDGE_PAIR, f, (y[t - 1] as usize) * l + y[t] as usize)
                        };
                    }
                    if t > 0 {
                        s += w(TRANSITION, "B", (y[t - 1] as usize) * l + y[t] as usize);
                    }
                }
                let got = inst.score(&phi, &y);
                assert!(
                    (got - s).abs() < 1e-12,
                    "{fs:?} item {i} {y:?}: {got} vs {s}"
                );
            }
        }
        if fs == FeatureSet::Observed {
            // "cat" was only seen going B-NP → I-NP.
            let k = crf.state_features.get("U00:cat").unwrap() as usize;
            let b = crf.labels.get("B-NP").unwrap() as usize;
            let ii = crf.labels.get("I-NP").unwrap() as usize;
            assert!(m.templates[EDGE_PAIR].param_index(k, b * l + ii).is_some());
            assert!(m.templates[EDGE_PAIR].param_index(k, ii * l + ii).is_none());
        }
        let mut insts = insts;
        for (i, x) in insts.iter_mut().enumerate() {
            x.id = i as u64;
        }
        for name in ["ml", "pl", "pw", "pwpl", "memm", "nota"] {
            let est = EstimatorSpec::from_name(name).unwrap().build(m).unwrap();
            let obj =
                DatasetObjective::new(m, &insts, est.as_ref(), Prior { sigma2: Some(2.0) }, 1)
                    .unwrap();
            common::assert_gradient_matches_fd(&obj, &theta, 3, &format!("{name} {fs:?}"));
        }
    }
}

/// The `bagged` and `per-feature` factorisations are `split` cut finer: the same weights and
/// the same score for every labelling, but one state factor per feature family (or per active
/// feature), so piecewise trains each bag's classifier alone — checked against 000 eq. 8 written
/// out bag by bag, and `--pieces state` against piecewise on `split`.
#[test]
fn bagged_factorisations_are_split_cut_finer() {
    use piecewise_lab::estimators::{EstimatorSpec, Pieces, Workspace};
    use piecewise_lab::graph::chain::{feature_bag, Factorisation, STATE, TRANSITION};
    let c = parse_conll(
        b"the DT B-NP\ncat NN I-NP\nsat VBD O\n\na DT B-NP\ndog NN I-NP\n\ndogs NNS B-NP\nbark VBP O\nloud RB O\n",
        "t",
        LabelColumn::Last,
    )
    .unwrap();
    // Two lines share the family U01, so `bagged` has three bags and `per-feature` four factors.
    let t = FeatureTemplate::parse("U00:%x[0,0]\nU01:%x[0,1]\nU01:%x[-1,1]\nB\n", "t").unwrap();
    assert_eq!(
        (
            feature_bag("U02:DT"),
            feature_bag("W=a=b"),
            feature_bag("*")
        ),
        ("U02", "W", "*")
    );
    let fit = |f: Factorisation| {
        ChainCrf::fit(
            &c,
            t.clone(),
            ChainOptions {
                label_bias: true,
                factorisation: f,
                ..Default::default()
            },
        )
        .unwrap()
    };
    let (split, split_insts) = fit(Factorisation::Split);
    let m = &split.model;
    let theta: Vec<f64> = (0..m.n_params)
        .map(|i| ((i * 7919) % 97) as f64 / 50.0 - 1.0)
        .collect();
    let l = split.labels.len();
    let evaluate = |spec: &EstimatorSpec, inst: &piecewise_lab::graph::Instance| {
        let mut phi = vec![0.0; inst.table_len];
        m.build_tables(&theta, inst, &mut phi, &mut Vec::new());
        let est = spec.build(m).unwrap();
        est.check(inst).unwrap();
        est.evaluate(inst, &phi, None, &mut Workspace::default())
    };
    let log_softmax = |scores: &[f64], k: usize| {
        let mx = scores.iter().cloned().fold(f64::MIN, f64::max);
        scores[k] - mx - scores.iter().map(|s| (s - mx).exp()).sum::<f64>().ln()
    };
    let pw = EstimatorSpec::from_name("pw").unwrap();
    let pw_state = pw.clone().with_pieces(Pieces::parse("state").unwrap());
    for (f, bags_per_position) in [(Factorisation::Bagged, 3), (Factorisation::PerFeature, 4)] {
        let (crf, insts) = fit(f);
        assert_eq!(crf.model.n_params, m.n_params, "{f:?}: the same weights");
        assert_eq!(crf.state_features.names, split.state_features.names);
        for ((inst, si), seq) in insts.iter().zip(&split_insts).zip(&c.sequences) {
            let n = seq.len();
            // Bias, U00 and U01 (two features): three bags, four features.
            let unary = inst
                .factors
                .iter()
                .filter(|x| inst.scope(x).len() == 1)
                .count();
            assert_eq!(unary, bags_per_position * n, "{f:?}");
            // The same distribution: every labelling scores the same, and ML agrees.
            let (mut pa, mut pb) = (vec![0.0; inst.table_len], vec![0.0; si.table_len]);
            m.build_tables(&theta, inst, &mut pa, &mut Vec::new());
            m.build_tables(&theta, si, &mut pb, &mut Vec::new());
            for code in 0..l.pow(n as u32) {
                let y: Vec<u32> = (0..n)
                    .map(|t| ((code / l.pow(t as u32)) % l) as u32)
                    .collect();
                assert!((inst.score(&pa, &y) - si.score(&pb, &y)).abs() < 1e-12);
            }
            let ml = EstimatorSpec::Ml;
            assert!((evaluate(&ml, inst) - evaluate(&ml, si)).abs() < 1e-10);
            // Grouping a position's bags into one piece gives piecewise on `split` back.
            assert!((evaluate(&pw_state, inst) - evaluate(&pw, si)).abs() < 1e-10);
            // 000 eq. 8, bag by bag: Σ_t Σ_bag log p̃(y_t | x_bag) + Σ_t log p̃(y_{t−1}, y_t).
            let gold = inst.gold.as_ref().unwrap();
            let w = |tpl: usize, k: Option<u32>, col: usize| -> f64 {
                k.and_then(|k| m.templates[tpl].param_index(k as usize, col))
                    .map_or(0.0, |i| theta[i])
            };
            let mut want = 0.0;
            for tt in 0..n {
                let prev = if tt == 0 {
                    "_B-1".to_string()
                } else {
                    seq.columns[tt - 1][1].clone()
                };
                let names = [
                    BIAS_FEATURE.to_string(),
                    format!("U00:{}", seq.columns[tt][0]),
                    format!("U01:{}", seq.columns[tt][1]),
                    format!("U01:{prev}"),
                ];
                let pieces: Vec<Vec<&String>> = match f {
                    Factorisation::Bagged => {
                        vec![vec![&names[0]], vec![&names[1]], vec![&names[2], &names[3]]]
                    }
                    _ => names.iter().map(|x| vec![x]).collect(),
                };
                for piece in pieces {
                    let s: Vec<f64> = (0..l)
                        .map(|y| {
                            piece
                                .iter()
                                .map(|x| w(STATE, crf.state_features.get(x), y))
                                .sum()
                        })
                        .collect();
                    want += log_softmax(&s, gold[tt] as usize);
                }
                if tt > 0 {
                    let k = crf.trans_features.get("B");
                    let s: Vec<f64> = (0..l * l).map(|e| w(TRANSITION, k, e)).collect();
                    want += log_softmax(&s, (gold[tt - 1] * l as u32 + gold[tt]) as usize);
                }
            }
            let got = evaluate(&pw, inst);
            assert!((got - want).abs() < 1e-10, "{f:?}: pw {got} vs {want}");
        }
    }
}
