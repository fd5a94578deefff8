//! CRF++ template expansion, checked against what CRF++ writes for the same template.

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
