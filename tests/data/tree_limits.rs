//! Trees that used to crash the commands that read them (issue 42): a tree left empty by
//! removing `-NONE-`, trees nested far deeper or spread far wider than any treebank's, and a
//! tree with very many brackets. Each command that reads trees must answer with an error that
//! names the file and line, or a result — never a panic or a stack overflow. The command-line
//! cases run the binary, so that an abort fails the test instead of killing the test process.

use piecewise_lab::data::treebank::{normalise, parse_trees, Tree, MAX_TREE_DEPTH, MAX_TREE_WORDS};
use piecewise_lab::eval::evalb::{score_one, EvalbParams};
use std::path::Path;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_piecewise-lab"))
}

fn show(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout)
            .chars()
            .take(2000)
            .collect::<String>(),
        String::from_utf8_lossy(&o.stderr)
            .chars()
            .take(2000)
            .collect::<String>()
    )
}

/// A clean refusal: exit status 1 (not a panic's 101, not a signal) and `what` on stderr.
fn refused(o: &Output, what: &[&str]) {
    assert_eq!(o.status.code(), Some(1), "{}", show(o));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!e.contains("panicked"), "{}", show(o));
    for w in what {
        assert!(e.contains(w), "expected {w:?}: {}", show(o));
    }
}

fn succeeded(o: &Output) {
    assert!(o.status.success(), "{}", show(o));
}

const SMALL: &str = "((S (NP (DT the) (NN dog)) (VP (VBD saw) (NP (DT a) (NN cat)))))
((S (NP (NN dog)) (VP (VBD barked))))
((S (NP (PRP it)) (VP (VBD saw) (NP (DT the) (NN dog)))))
";

static RUNS: AtomicUsize = AtomicUsize::new(0);

fn train_grammar(dir: &Path, train: &Path, test: &Path) -> Output {
    bin()
        .args(["train", "--model", "grammar", "--estimator", "generative"])
        .arg("--train")
        .arg(train)
        .arg("--test")
        .arg(test)
        .arg("--out")
        .arg(dir.join(format!("run{}", RUNS.fetch_add(1, Ordering::Relaxed))))
        .output()
        .unwrap()
}

/// `treebank` over a folder holding `wsj_0001.mrg` (training) and `wsj_0160.mrg` (test).
fn treebank(dir: &Path, train: &str, test: &str) -> Output {
    let data = dir.join("wsj");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("wsj_0001.mrg"), train).unwrap();
    std::fs::write(data.join("wsj_0160.mrg"), test).unwrap();
    bin()
        .args(["treebank", "--data"])
        .arg(&data)
        .arg("--out")
        .arg(dir.join("split"))
        .output()
        .unwrap()
}

/// `reproduce 001-table2 --quick` with `text` as the WSJ sample (a folder standing for the zip).
fn reproduce(dir: &Path, train: &str, test: &str) -> Output {
    let zip = dir.join("data/ptb-wsj-sample/treebank.zip");
    std::fs::create_dir_all(&zip).unwrap();
    std::fs::write(zip.join("wsj_0001.mrg"), train).unwrap();
    std::fs::write(zip.join("wsj_0160.mrg"), test).unwrap();
    bin()
        .args([
            "reproduce",
            "001-table2",
            "--quick",
            "--threads",
            "1",
            "--data",
        ])
        .arg(dir.join("data"))
        .arg("--out")
        .arg(dir.join("report"))
        .output()
        .unwrap()
}

/// F2: `(X (-NONE- (NN x)))` has no words once `-NONE-` is removed.
#[test]
fn a_tree_emptied_by_removing_none_is_refused_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = format!("{SMALL}(X (-NONE- (NN x)))\n");
    let (train, test) = (dir.path().join("train.mrg"), dir.path().join("test.mrg"));
    std::fs::write(&train, &bad).unwrap();
    std::fs::write(&test, SMALL).unwrap();
    refused(
        &train_grammar(dir.path(), &train, &test),
        &["train.mrg:4:", "-NONE-"],
    );
    // As a test tree too.
    std::fs::write(&train, SMALL).unwrap();
    std::fs::write(&test, &bad).unwrap();
    refused(
        &train_grammar(dir.path(), &train, &test),
        &["test.mrg:4:", "-NONE-"],
    );
    // `treebank` wrote a bare `X` line for it.
    let o = treebank(dir.path(), SMALL, &bad);
    refused(&o, &["wsj_0160.mrg:4:"]);
    if let Ok(t) = std::fs::read_to_string(dir.path().join("split/test.mrg")) {
        assert!(t.lines().all(|l| l.starts_with('(')), "{t}");
    }
    // EVALB scores it with the rest: evalb.c deletes a non-terminal -NONE- bracket but not
    // the word under it, so the line is a valid sentence of one word.
    let g = dir.path().join("gold.txt");
    std::fs::write(&g, SMALL.to_string() + "(X (-NONE- (NN x)))\n").unwrap();
    let o = bin()
        .args(["evalb", "--json", "--gold"])
        .arg(&g)
        .arg("--test")
        .arg(&g)
        .output()
        .unwrap();
    succeeded(&o);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["all"]["sentences"], 4, "{v}");
    assert_eq!(v["all"]["skipped"], 0, "{v}");
    assert_eq!(v["all"]["valid"], 4, "{v}");
}

/// The library: the grammar, binarisation and EVALB on an emptied tree built in memory.
#[test]
fn library_calls_on_an_emptied_tree_do_not_panic() {
    use piecewise_lab::grammar::{Grammar, GrammarOptions};
    let mut trees = parse_trees(SMALL, "t.mrg").unwrap();
    trees.iter_mut().for_each(normalise);
    let mut empty = parse_trees("(X (-NONE- (NN x)))", "t.mrg")
        .unwrap()
        .pop()
        .unwrap();
    normalise(&mut empty);
    assert!(empty.children.is_empty());
    let mut with = trees.clone();
    with.push(empty.clone());
    let e = Grammar::fit(&with, &with, GrammarOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("tree 4") && e.contains("no words"), "{e}");
    let g = Grammar::fit(&trees, &trees, GrammarOptions::default()).unwrap();
    let s = g.encode(&empty);
    assert!(s.words.is_empty() && s.gold.is_none());
    let p = EvalbParams::collins(None);
    let s = score_one(&empty, &empty, &p);
    assert_eq!((s.gold_brackets, s.words), (0, 0));
}

/// `(X (X … (NN x) … ))`, `depth` brackets deep, on one line.
fn deep(depth: usize) -> String {
    let mut s = String::with_capacity(depth * 4 + 16);
    for _ in 1..depth {
        s.push_str("(X ");
    }
    s.push_str("(NN x)");
    for _ in 1..depth {
        s.push(')');
    }
    s.push('\n');
    s
}

/// `(S (NN w) (NN w) …)` with `words` words.
fn wide(words: usize) -> String {
    let mut s = String::from("(S");
    for _ in 0..words {
        s.push_str(" (NN w)");
    }
    s.push_str(")\n");
    s
}

/// F3: a million levels, and as many words under one node (binarisation turns width into
/// depth), in every command that reads trees.
#[test]
fn trees_far_deeper_or_wider_than_the_bounds_are_refused_by_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (name, text, what) in [
        ("deep", deep(1_000_000), "deeper than"),
        ("wide", wide(1_000_000), "more than"),
    ] {
        let bad = format!("{SMALL}{text}");
        let (bad_path, small) = (d.join(format!("{name}.mrg")), d.join("small.mrg"));
        std::fs::write(&bad_path, &bad).unwrap();
        std::fs::write(&small, SMALL).unwrap();
        let at = format!("{name}.mrg:4:");
        refused(&train_grammar(d, &bad_path, &small), &[&at, what]);
        refused(&train_grammar(d, &small, &bad_path), &[&at, what]);
        // EVALB: a test line it cannot read is an error sentence; a gold file it cannot
        // read is refused.
        let o = bin()
            .args(["evalb", "--json", "--gold"])
            .arg(&bad_path)
            .arg("--test")
            .arg(&bad_path)
            .output()
            .unwrap();
        succeeded(&o);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["all"]["errors"], 1, "{v}");
        assert_eq!(v["all"]["valid"], 3, "{v}");
        refused(&treebank(d, &bad, SMALL), &["wsj_0001.mrg:4:", what]);
        refused(&treebank(d, SMALL, &bad), &["wsj_0160.mrg:4:", what]);
        refused(&reproduce(d, &bad, SMALL), &["wsj_0001.mrg:4:", what]);
    }
}

/// The deepest and widest tree the reader takes, through every command: the bounds leave the
/// recursive walks (binarisation makes the tree `depth + words` deep) room on a 2 MB stack.
#[test]
fn a_tree_at_the_bounds_goes_through_every_command() {
    // MAX_TREE_DEPTH brackets deep with MAX_TREE_WORDS words: a spine of binary nodes (a word
    // and the rest) and, at its foot, a node holding every word left.
    let spine = MAX_TREE_DEPTH - 3;
    let mut s = String::from("( ");
    for _ in 0..spine {
        s.push_str("(S (NN a) ");
    }
    s.push_str("(NP");
    for _ in 0..MAX_TREE_WORDS - spine {
        s.push_str(" (NN b)");
    }
    s.push(')');
    for _ in 0..spine {
        s.push(')');
    }
    s.push_str(")\n");
    let t = parse_trees(&s, "max.mrg").unwrap().pop().unwrap();
    assert_eq!(t.words().len(), MAX_TREE_WORDS);
    assert!(parse_trees(&format!("({s})"), "over.mrg").is_err());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let big = format!("{SMALL}{s}");
    let (big_path, small) = (d.join("big.mrg"), d.join("small.mrg"));
    std::fs::write(&big_path, &big).unwrap();
    std::fs::write(&small, SMALL).unwrap();
    // The grammar reads its rules off every training tree; it trains and parses short ones.
    succeeded(&train_grammar(d, &big_path, &small));
    let o = bin()
        .args(["evalb", "--json", "--gold"])
        .arg(&big_path)
        .arg("--test")
        .arg(&big_path)
        .output()
        .unwrap();
    succeeded(&o);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["all"]["valid"], 4, "{v}");
    assert_eq!(v["all"]["recall"], 100.0, "{v}");
    succeeded(&treebank(d, &big, &big));
    let train = std::fs::read_to_string(d.join("split/train.mrg")).unwrap();
    assert_eq!(train.lines().count(), 4);
    succeeded(&reproduce(d, &big, SMALL));
    // In process, on a quarter of a rayon worker's 2 MB stack: every transform, EVALB and
    // the grammar.
    let stack = 512 << 10;
    std::thread::Builder::new()
        .stack_size(stack)
        .spawn(move || walks(t, s))
        .unwrap()
        .join()
        .unwrap();
}

fn walks(t: Tree, s: String) {
    use piecewise_lab::data::treebank::{binarise, debinarise, Binarisation};
    use piecewise_lab::grammar::{Grammar, GrammarOptions};
    let mut t = t;
    normalise(&mut t);
    for how in [
        Binarisation::default(),
        Binarisation {
            horizontal: 1,
            parent: true,
        },
    ] {
        let b = binarise(&t, how);
        assert_eq!(debinarise(&b), t);
        let g = Grammar::fit(
            std::slice::from_ref(&t),
            std::slice::from_ref(&t),
            GrammarOptions {
                binarisation: how,
                ..Default::default()
            },
        )
        .unwrap();
        assert!(g.encode(&t).gold.is_some());
        assert_eq!(g.binarise(&t).words(), b.words());
    }
    let p = EvalbParams::collins(None);
    assert_eq!(
        score_one(&t, &t, &p).matched,
        score_one(&t, &t, &p).gold_brackets
    );
    assert!(piecewise_lab::eval::evalb::strip(&t, &p).is_some());
    // Printed on one line: the outer "( " became "(TOP ", the newline is gone.
    assert_eq!(t.to_string().len(), s.len() + 2);
}

/// F9: brackets are matched through a multiset, in linear time. 400 words, each under a
/// chain of `X` brackets over its one word (998 in gold; in the test, 998 or 499): about
/// 400,000 brackets, each test one matched once (the pairwise search took 3.8 s for 160,000).
#[test]
fn many_brackets_are_matched_in_linear_time() {
    let word = |w: usize, chain: usize| {
        let mut t = Tree {
            label: "NN".into(),
            children: vec![Tree::leaf(&format!("w{w}"))],
        };
        for _ in 0..chain {
            t = Tree {
                label: "X".into(),
                children: vec![t],
            };
        }
        t
    };
    let chain = MAX_TREE_DEPTH - 2;
    let tree = |short: usize| Tree {
        label: "TOP".into(),
        children: (0..400)
            .map(|w| word(w, if w % 2 == 0 { short } else { chain }))
            .collect(),
    };
    let (gold, test) = (tree(chain), tree(chain / 2));
    let p = EvalbParams::collins(None);
    let t0 = std::time::Instant::now();
    let s = score_one(&gold, &test, &p);
    let took = t0.elapsed().as_secs_f64();
    assert_eq!(s.gold_brackets, 400 * chain);
    assert_eq!(s.test_brackets, 200 * chain + 200 * (chain / 2));
    assert_eq!(s.matched, s.test_brackets);
    assert!(took < 5.0, "{took:.1} s for {} brackets", s.gold_brackets);
}
