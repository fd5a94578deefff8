//! The treebank reader and transforms (issue 23's data): hand-made trees with their expected
//! forms, malformed input as file:line errors, and on the WSJ sample (skipped when absent) the
//! counts the data's README and the issue give, and binarisation inverted exactly on every tree.

use piecewise_lab::data::treebank::{
    binarise, debinarise, normalise, parse_trees, read_treebank, Binarisation, Tree,
};
use std::path::PathBuf;

fn one(text: &str) -> Tree {
    let mut t = parse_trees(text, "t.mrg").unwrap();
    assert_eq!(t.len(), 1, "{text}");
    t.pop().unwrap()
}

#[test]
fn trees_read_and_print_back() {
    let text = "( (S\n  (NP-SBJ (NNP Pierre) (NNP Vinken))\n  (VP (MD will) (VP (VB join)))\n  (. .)))\n((NP (DT a)))";
    let trees = parse_trees(text, "t.mrg").unwrap();
    assert_eq!(trees.len(), 2);
    assert_eq!(
        trees[0].to_string(),
        "( (S (NP-SBJ (NNP Pierre) (NNP Vinken)) (VP (MD will) (VP (VB join))) (. .)))"
    );
    assert_eq!(trees[0].label, "");
    assert_eq!(trees[0].words(), ["Pierre", "Vinken", "will", "join", "."]);
    assert_eq!(trees[1].to_string(), "( (NP (DT a)))");
}

#[test]
fn malformed_trees_are_errors_at_their_line() {
    let cases = [
        (
            "((S (NP (DT a)))\n)\n)",
            "t.mrg:3:",
            "')' without a matching '('",
        ),
        ("((S (NP (DT a))\n", "t.mrg:1:", "never closed"),
        ("((S (NP (DT a))))\n\n()", "t.mrg:3:", "empty tree"),
        (
            "((S (NP (DT a))))\nstray",
            "t.mrg:2:",
            "text outside a tree",
        ),
        (
            "((S (NP (DT a) dog)))",
            "t.mrg:1:",
            "word beside other children",
        ),
        ("((S (NP)))", "t.mrg:1:", "has no children"),
        (
            "( (NP (DT a)) dog)",
            "t.mrg:1:",
            "no part-of-speech bracket",
        ),
    ];
    for (text, at, what) in cases {
        let e = parse_trees(text, "t.mrg").unwrap_err().to_string();
        assert!(e.starts_with(at) && e.contains(what), "{text:?}: {e}");
    }
}

#[test]
fn normalise_drops_empty_elements_and_function_tags() {
    // The trace's NP is emptied by removing -NONE- and goes too; -LRB- keeps its dashes.
    let mut t = one(
        "( (S (NP-SBJ-1 (NNP Mr.) (-LRB- -LRB-)) (VP (VBD said) (SBAR (-NONE- 0) (S (NP-SBJ (-NONE- *T*-1)) (VP (VB go))))) (NP=2 (NN x))))",
    );
    normalise(&mut t);
    assert_eq!(
        t.to_string(),
        "(TOP (S (NP (NNP Mr.) (-LRB- -LRB-)) (VP (VBD said) (SBAR (S (VP (VB go))))) (NP (NN x))))"
    );
}

#[test]
fn binarisation_is_markovised_and_inverted() {
    let mut t = one("( (S (NP (DT a) (JJ b) (JJ c) (NN d)) (VP (VBD e))))");
    normalise(&mut t);
    let b = binarise(
        &t,
        Binarisation {
            horizontal: 2,
            parent: false,
        },
    );
    // TOP → S collapses; VP → VBD collapses onto the part-of-speech node; the NP's four
    // children factor to the right with the last two siblings remembered.
    assert_eq!(
        b.to_string(),
        "(TOP+S (NP (DT a) (@NP|<DT> (JJ b) (@NP|<DT,JJ> (JJ c) (NN d)))) (VP+VBD e))"
    );
    assert_eq!(debinarise(&b), t);
    let h1 = binarise(
        &t,
        Binarisation {
            horizontal: 1,
            parent: true,
        },
    );
    assert_eq!(
        h1.to_string(),
        "(TOP+S (NP^S (DT a) (@NP|<DT> (JJ b) (@NP|<JJ> (JJ c) (NN d)))) (VP+VBD e))"
    );
    assert_eq!(debinarise(&h1), t);
}

fn cnf(t: &Tree) -> bool {
    t.is_preterminal() || (t.children.len() == 2 && t.children.iter().all(cnf))
}

#[test]
fn the_wsj_sample_reads_and_binarises_invertibly() {
    let zip = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/data/ptb-wsj-sample/treebank.zip");
    if !zip.exists() {
        println!("{} not found; skipped", zip.display());
        return;
    }
    let files = read_treebank(&zip).unwrap();
    assert_eq!(files.len(), 199);
    assert_eq!(files[0].name, "wsj_0001.mrg");
    assert_eq!(files[0].number(), Some(1));
    let all: Vec<(u32, &Tree)> = files
        .iter()
        .flat_map(|f| f.trees.iter().map(move |t| (f.number().unwrap(), t)))
        .collect();
    assert_eq!(all.len(), 3914);
    assert_eq!(all.iter().filter(|(n, _)| *n <= 159).count(), 3396);
    // EVALB's length counts every word but -NONE-; "≤ 15 words" for the splits leaves out
    // COLLINS.prm's deleted punctuation too (the 142 test and 1,070 training trees).
    const PUNCT: [&str; 5] = [",", ":", "``", "''", "."];
    let (mut evalb15, mut train15, mut test15) = (0, 0, 0);
    for (n, t) in &all {
        let words: Vec<_> = t
            .tagged_words()
            .into_iter()
            .filter(|(tag, _)| *tag != "-NONE-")
            .collect();
        evalb15 += (words.len() <= 15) as usize;
        let bare = words.iter().filter(|(tag, _)| !PUNCT.contains(tag)).count();
        if bare <= 15 {
            if *n <= 159 {
                train15 += 1;
            } else {
                test15 += 1;
            }
        }
    }
    assert_eq!((evalb15, train15, test15), (922, 1070, 142));
    for how in [
        Binarisation::default(),
        Binarisation {
            horizontal: 1,
            parent: true,
        },
    ] {
        for (_, t) in &all {
            let mut t = (*t).clone();
            normalise(&mut t);
            let b = binarise(&t, how);
            assert!(cnf(&b), "not binary: {b}");
            assert_eq!(b.words(), t.words());
            assert_eq!(debinarise(&b), t, "{how:?}");
        }
    }
}

#[test]
fn files_directories_and_damaged_archives() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("wsj_0002.mrg");
    std::fs::write(&a, "( (S (NP (DT a)) (VP (VB b))))\n").unwrap();
    std::fs::write(dir.path().join("wsj_0001.mrg"), "( (NP (DT c)))\n").unwrap();
    std::fs::write(dir.path().join("notes.txt"), "not a tree").unwrap();
    let files = read_treebank(dir.path()).unwrap();
    let names: Vec<_> = files.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["wsj_0001.mrg", "wsj_0002.mrg"]);
    assert_eq!(files[1].trees[0].words(), ["a", "b"]);
    assert_eq!(read_treebank(&a).unwrap()[0].number(), Some(2));
    let bad = dir.path().join("broken.mrg");
    std::fs::write(&bad, "( (S (NP (DT a))\n\n").unwrap();
    let e = read_treebank(&bad).unwrap_err().to_string();
    assert!(
        e.contains("broken.mrg:1:") && e.contains("never closed"),
        "{e}"
    );
    let zip = dir.path().join("t.zip");
    std::fs::write(&zip, b"PK\x03\x04 truncated").unwrap();
    let e = read_treebank(&zip).unwrap_err().to_string();
    assert!(
        e.contains("t.zip") && e.contains("damaged zip archive"),
        "{e}"
    );
}
