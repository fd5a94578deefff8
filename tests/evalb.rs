//! The EVALB scorer (COLLINS.prm) on hand-made cases with counts worked out by hand, and
//! against PYEVALB (an independent scorer from PyPI) on real parser output after the same
//! stripping.

use piecewise_lab::data::treebank::{normalise, parse_trees, Tree};
use piecewise_lab::eval::evalb::{evalb, length, score_one, strip, EvalbParams};

fn tree(s: &str) -> Tree {
    let mut t = parse_trees(s, "t.mrg").unwrap().pop().unwrap();
    normalise(&mut t);
    t
}

fn counts(gold: &str, test: &str) -> (usize, usize, usize, usize, usize) {
    let p = EvalbParams::collins(None);
    let s = score_one(&tree(gold), &tree(test), &p);
    (
        s.matched,
        s.gold_brackets,
        s.test_brackets,
        s.correct_tags,
        s.words,
    )
}

#[test]
fn hand_made_cases() {
    // Brackets S(0,3) NP(0,2) VP(2,3) against S(0,3) NP(0,1) VP(1,3): only S matches; the
    // full stop is deleted, so it is neither a word nor a tag.
    assert_eq!(
        counts(
            "( (S (NP (DT the) (NN cat)) (VP (VBD sat)) (. .)))",
            "( (S (NP (DT the)) (VP (NN cat) (VBD sat)) (. .)))"
        ),
        (1, 3, 3, 3, 3)
    );
    // A constituent of deleted words only is no bracket; function tags are cut.
    assert_eq!(
        counts(
            "( (S (NP-SBJ (NN x)) (PRN (, ,)) (VP (VB y))))",
            "( (S (NP (NN x)) (VP (VB y))))"
        ),
        (3, 3, 3, 2, 2)
    );
    // ADVP ≡ PRT, in brackets and tags alike.
    assert_eq!(
        counts(
            "( (S (NP (PRP it)) (VP (VBD went) (PRT (RP up)))))",
            "( (S (NP (PRP it)) (VP (VBD went) (ADVP (RP up)))))"
        ),
        (4, 4, 4, 3, 3)
    );
    // Brackets are a multiset: a repeated NP(0,1) in gold is matched once by one test NP.
    assert_eq!(
        counts(
            "( (S (NP (NP (NN a))) (VP (VB b))))",
            "( (S (NP (NN a)) (VP (VB b))))"
        ),
        (3, 4, 3, 2, 2)
    );
    // Wrong tags count against tagging only.
    assert_eq!(
        counts("( (NP (DT a) (NN b)))", "( (NP (DT a) (VB b)))"),
        (1, 1, 1, 1, 2)
    );
    // Different words: an error sentence, no counts.
    let p = EvalbParams::collins(None);
    let s = score_one(&tree("( (NP (DT a)))"), &tree("( (NP (DT b)))"), &p);
    assert_eq!((s.errors, s.gold_brackets), (1, 0));
    // Length counts punctuation, not -NONE-; the cut-off leaves longer sentences out.
    let t = tree("( (S (NP (-NONE- *)) (VP (VB go)) (. .)))");
    let raw = parse_trees("( (S (NP (-NONE- *)) (VP (VB go)) (. .)))", "t").unwrap();
    assert_eq!(length(&raw[0], &p), 2);
    assert_eq!(length(&t, &p), 2);
    let long = tree("( (S (NP (NN a)) (VP (VB b) (NP (NN c))) (. .)))");
    let cut = EvalbParams::collins(Some(3));
    let total = evalb(&[t.clone(), long.clone()], &[t, long], &cut).unwrap();
    assert_eq!(total.sentences, 1);
    // P, R and F1 from the counts.
    let s = score_one(
        &tree("( (S (NP (DT the) (NN cat)) (VP (VBD sat)) (. .)))"),
        &tree("( (S (NP (DT the)) (VP (NN cat) (VBD sat)) (. .)))"),
        &p,
    );
    assert!((s.precision() - 100.0 / 3.0).abs() < 1e-12 && (s.f1() - 100.0 / 3.0).abs() < 1e-12);
}

#[test]
fn strip_leaves_what_evalb_scores() {
    let p = EvalbParams::collins(None);
    let t = tree("( (S (NP-SBJ (NN x)) (PRN (, ,)) (VP (VB y) (PRT (RP up))) (. .)))");
    assert_eq!(
        strip(&t, &p).unwrap().to_string(),
        "(S (NP (NN x)) (VP (VB y) (ADVP (RP up))))"
    );
}

/// Our scorer against PYEVALB on the WSJ sample's 142 test sentences parsed by the generative
/// PCFG (skipped, with a notice, without the data or PYEVALB).
#[test]
fn equals_pyevalb_on_real_parses() {
    use piecewise_lab::experiments::reproduce::parsing::{bare_length, parse_all, wsj_split};
    use piecewise_lab::grammar::train::{generative, GrammarEstimator};
    use piecewise_lab::grammar::{Grammar, GrammarOptions};
    let zip = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/data/ptb-wsj-sample/treebank.zip");
    if !zip.exists() {
        println!("{} not found; skipped", zip.display());
        return;
    }
    let have = std::process::Command::new("python3")
        .args(["-c", "import PYEVALB"])
        .status()
        .is_ok_and(|s| s.success());
    if !have {
        println!("PYEVALB is not installed (pip install PYEVALB); skipped");
        return;
    }
    let (train, test) = wsj_split(&zip, false).unwrap();
    let test: Vec<Tree> = test.into_iter().filter(|t| bare_length(t) <= 15).collect();
    assert_eq!(test.len(), 142);
    let g = Grammar::fit(&train, &train, GrammarOptions::default()).unwrap();
    let theta = generative(&g);
    let sents: Vec<_> = test
        .iter()
        .map(|t| g.encode_words(&t.words().iter().map(|w| w.to_string()).collect::<Vec<_>>()))
        .collect();
    let (parsed, _) = parse_all(&g, &theta, &GrammarEstimator::Generative, &sents);
    let p = EvalbParams::collins(None);
    let ours = evalb(&test, &parsed, &p).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, trees: &[Tree]| {
        let text: String = trees
            .iter()
            .map(|t| format!("{}\n", strip(t, &p).unwrap()))
            .collect();
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let (gp, tp) = (write("gold.txt", &test), write("test.txt", &parsed));
    let out = std::process::Command::new("python3")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/scripts/pyevalb_score.py"
        ))
        .args([&gp, &tp])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let n = |k: &str| v[k].as_u64().unwrap() as usize;
    println!("ours {ours:?}\nPYEVALB {v}");
    assert_eq!(n("errors"), 0);
    assert_eq!(
        (
            n("sentences"),
            n("gold"),
            n("test"),
            n("words"),
            n("correct_tags")
        ),
        (
            ours.sentences,
            ours.gold_brackets,
            ours.test_brackets,
            ours.words,
            ours.correct_tags
        )
    );
    assert_eq!(n("matched"), ours.matched);
    assert!(
        ours.matched > ours.gold_brackets / 2,
        "a real parser's output"
    );
}
