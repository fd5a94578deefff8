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
    let (parsed, _) = parse_all(&g, &theta, &GrammarEstimator::Generative, &sents).unwrap();
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

/// EVALB proper (evalb.c with COLLINS.prm): gold and test aligned line by line, sentences it
/// cannot score counted as errors (status 1) or skips (status 2), and the summary for all
/// sentences and for those of at most 40 words.
mod lines {
    use piecewise_lab::eval::evalb::EvalbParams;
    use piecewise_lab::eval::evalb_lines::{
        evalb_lines, read_gold, read_tree_lines, EvalbReport, Status,
    };

    fn report(gold: &str, test: &str) -> EvalbReport {
        evalb_lines(
            &read_gold(gold, "gold"),
            &read_tree_lines(test, "test"),
            &EvalbParams::collins(None),
            40,
        )
    }

    const G: &str = "(TOP (S (NP (DT a) (NN b)) (VP (VB c) (NP (DT d) (NN e))) (. .)))";

    #[test]
    fn statuses_follow_evalb() {
        let gold = [G; 6].join("\n");
        let test = [
            G,
            // An empty line: no parse, skipped (evalb.c: `if(wn2==0) Status = 2`).
            "",
            // Unreadable: an error.
            "(TOP (S (NP (DT a) (NN b)) (VP (VB c)",
            // Length unmatch.
            "(TOP (S (NP (DT a) (NN b)) (VP (VB c) (NP (DT d))) (. .)))",
            // Words unmatch.
            "(TOP (S (NP (DT a) (NN b)) (VP (VB c) (NP (DT d) (NN x))) (. .)))",
            // Only a deleted word left: no test words, skipped.
            "(TOP (. .))",
        ]
        .join("\n");
        let r = report(&gold, &test);
        let st: Vec<Status> = r.sentences.iter().map(|s| s.status).collect();
        use Status::*;
        assert_eq!(st, [Ok, Skip, Error, Error, Error, Skip]);
        assert!(r.sentences[3]
            .reason
            .as_deref()
            .unwrap()
            .contains("Length unmatch (5|4)"));
        assert!(r.sentences[4]
            .reason
            .as_deref()
            .unwrap()
            .contains("Words unmatch (e|x)"));
        assert!(r.sentences[2]
            .reason
            .as_deref()
            .unwrap()
            .starts_with("test: test:3:"));
        // The length counts the full stop (every word but -NONE-).
        assert!(r.sentences.iter().all(|s| s.length == 6));
        assert_eq!(
            (r.all.sentences, r.all.errors, r.all.skipped, r.all.valid()),
            (6, 3, 2, 1)
        );
        assert_eq!((r.all.matched, r.all.gold_brackets, r.all.words), (4, 4, 5));
        assert_eq!(r.short, r.all);
    }

    /// Lines read bracket by bracket, as evalb.c reads them: words with no root bracket are
    /// a sentence with no brackets; a line evalb.c cannot read on (text outside a word's
    /// bracket, a word beside brackets: it repeats the error until it gives up on the whole
    /// file) is an error sentence here; a ')' too many is an error whose row keeps the counts
    /// (evalb.c's row there depends on memory it should not read).
    #[test]
    fn lines_are_read_bracket_by_bracket() {
        use Status::*;
        let gold = [G; 5].join("\n");
        let test = [
            "(DT a) (NN b) (VB c) (DT d) (NN e) (. .)".to_string(),
            format!("hello {G}"),
            "(TOP (S (NP x (DT a) (NN b)) (VP (VB c) (NP (DT d) (NN e))) (. .)))".into(),
            format!("{G})"),
            "(NP (DT a) (NN b)) (VP (VB c) (NP (DT d) (NN e))) (. .)".into(),
        ]
        .join("\n");
        let r = report(&gold, &test);
        let st: Vec<Status> = r.sentences.iter().map(|s| s.status).collect();
        assert_eq!(st, [Ok, Error, Error, Error, Ok]);
        let s = |i: usize| {
            let s = &r.sentences[i];
            (
                s.matched,
                s.gold_brackets,
                s.test_brackets,
                s.words,
                s.correct_tags,
            )
        };
        assert_eq!(s(0), (0, 4, 0, 5, 5));
        assert_eq!(s(3), (4, 4, 4, 5, 5));
        assert_eq!(s(4), (3, 4, 3, 5, 5));
        let why = |i: usize| r.sentences[i].reason.clone().unwrap_or_default();
        assert!(why(1).contains("test:2: Reading sentence"), "{}", why(1));
        assert!(why(2).contains("More than two elements"), "{}", why(2));
        assert!(why(3).contains("too many close bracket"), "{}", why(3));
        assert_eq!(
            (r.all.valid(), r.all.matched, r.all.gold_brackets),
            (2, 3, 8)
        );
    }

    /// A `.mrg` gold file on standard input (it cannot be read twice to find its layout): its
    /// first line leaves brackets open, so its trees run over several lines.
    #[test]
    fn a_mrg_gold_file_on_standard_input() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("test.txt");
        std::fs::write(
            &t,
            "(S (NP (DT a) (NN b)) (VP (VB c)))\n(S (NP (NN d)) (VP (VB e)))\n",
        )
        .unwrap();
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_piecewise-lab"))
            .args(["evalb", "--json", "--gold", "-", "--test"])
            .arg(&t)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        c.stdin
            .take()
            .unwrap()
            .write_all(b"\n( (S\n  (NP (DT a) (NN b))\n  (VP (VB c))))\n( (S\n  (NP (NN d))\n  (VP (VB e))))\n")
            .unwrap();
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success());
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["all"]["valid"], 2);
        assert_eq!(v["all"]["matched"], 6);
        assert_eq!(v["line_mismatch"], serde_json::Value::Null);
    }

    /// 24 lines: 5 errors, 2 skipped, 17 valid.
    #[test]
    fn a_24_line_file_counts_its_errors_and_skips() {
        let gold = vec![G; 24].join("\n") + "\n";
        let mut test = vec![G.to_string(); 24];
        test[2] = String::new();
        test[6] = "   ".into();
        test[4] = "(TOP (S (NP (DT a) (NN b)".into();
        test[8] = "(TOP (S (NP (DT a) (NN b)) (VP (VB c) (NP (DT d))) (. .)))".into();
        test[10] = "(TOP (S (NP (DT a) (NN b)) (VP (VB c) (NP (DT d) (NN f))) (. .)))".into();
        test[12] = format!("{G} {G}");
        test[14] = format!("{G})");
        let r = report(&gold, &(test.join("\n") + "\n"));
        assert_eq!(
            (r.all.sentences, r.all.errors, r.all.skipped, r.all.valid()),
            (24, 5, 2, 17)
        );
        assert_eq!(r.all.recall(), 100.0);
        assert_eq!(r.all.complete_match(), 100.0);
        assert!(r.line_mismatch.is_none());
        let text = r.text();
        for line in [
            "-- All --",
            "-- len<=40 --",
            "Number of sentence        =     24",
            "Number of Error sentence  =      5",
            "Number of Skip  sentence  =      2",
            "Number of Valid sentence  =     17",
            "Bracketing FMeasure       = 100.00",
            "2 or less crossing        = 100.00",
        ] {
            assert!(text.contains(line), "{line:?} in\n{text}");
        }
        assert!(text.contains("   3    6    2  "), "{text}");
    }

    #[test]
    fn crossing_brackets_by_hand() {
        // Gold S(0,5) NP(0,2) VP(2,5) NP(3,5); test S(0,5) A(0,3) B(1,3) C(3,5). A crosses VP
        // (0 < 2 < 3 < 5), B crosses the first NP (0 < 1 < 2 < 3); C nests in VP; only S
        // matches.
        let gold = "(TOP (S (NP (DT a) (NN b)) (VP (VB c) (NP (DT d) (NN e)))))";
        let test = "(TOP (S (A (DT a) (B (NN b) (VB c))) (C (DT d) (NN e))))";
        let r = report(gold, test);
        let s = &r.sentences[0];
        assert_eq!(
            (s.matched, s.gold_brackets, s.test_brackets, s.crossing),
            (1, 4, 4, 2)
        );
        assert_eq!(r.all.average_crossing(), 2.0);
        assert_eq!(
            (r.all.no_crossing_pct(), r.all.two_or_less_crossing_pct()),
            (0.0, 100.0)
        );
        // Each test bracket counts once however many gold brackets it crosses; gold against
        // itself crosses nothing.
        let r = report(test, gold);
        assert_eq!(r.sentences[0].crossing, 2);
        assert_eq!(report(gold, gold).sentences[0].crossing, 0);
    }

    #[test]
    fn sentences_over_the_cutoff_leave_the_second_section_only() {
        let words = |n: usize, none: bool| {
            let mut s = String::from("(TOP (S");
            if none {
                s.push_str(" (NP (-NONE- *))");
            }
            for _ in 0..n {
                s.push_str(" (NN w)");
            }
            s + "))"
        };
        // 40 words, 41 words, 40 words and a trace (length 40), and a 41-word error.
        let gold = [
            words(40, false),
            words(41, false),
            words(40, true),
            words(41, false),
        ]
        .join("\n");
        let test = [
            words(40, false),
            words(41, false),
            words(40, false),
            words(40, false),
        ]
        .join("\n");
        let r = report(&gold, &test);
        let len: Vec<usize> = r.sentences.iter().map(|s| s.length).collect();
        assert_eq!(len, [40, 41, 40, 41]);
        assert_eq!((r.all.sentences, r.all.errors, r.all.valid()), (4, 1, 3));
        assert_eq!(
            (r.short.sentences, r.short.errors, r.short.valid()),
            (2, 0, 2)
        );
        assert_eq!(r.short.words, 80);
        assert_eq!(r.all.words, 121);
        let cut = evalb_lines(
            &read_gold(&gold, "g"),
            &read_tree_lines(&test, "t"),
            &EvalbParams::collins(None),
            10,
        );
        assert_eq!(cut.short.sentences, 0);
        assert!(cut.text().contains("-- len<=10 --"));
    }

    #[test]
    fn multi_line_gold_and_files_of_other_lengths() {
        // A .mrg gold file (trees over several lines) against one test tree a line.
        let gold =
            "( (S\n  (NP (DT a) (NN b))\n  (VP (VB c))))\n( (S\n  (NP (NN d))\n  (VP (VB e))))\n";
        let test = "(S (NP (DT a) (NN b)) (VP (VB c)))\n(S (NP (NN d)) (VP (VB e)))\n";
        let r = report(gold, test);
        assert_eq!(
            (r.all.valid(), r.all.matched, r.all.gold_brackets),
            (2, 6, 6)
        );
        assert_eq!(r.sentences[1].id, 2);
        // Fewer test lines: EVALB warns and scores the sentences both files have.
        let r = report(gold, "(S (NP (DT a) (NN b)) (VP (VB c)))\n");
        assert_eq!(r.all.sentences, 1);
        assert!(r
            .line_mismatch
            .as_deref()
            .unwrap()
            .contains("2 gold sentences, 1 test lines"));
        // One tree a line: the line numbers are the IDs; an empty gold line is a sentence.
        let gold = "(S (NP (DT a) (NN b)) (VP (VB c)))\n\n(S (NP (NN d)) (VP (VB e)))\n";
        let test = "(S (NP (DT a) (NN b)) (VP (VB c)))\n\n(S (NP (NN d)) (VP (VB e)))\n";
        let r = report(gold, test);
        let ids: Vec<usize> = r.sentences.iter().map(|s| s.id).collect();
        assert_eq!(ids, [1, 2, 3]);
        assert_eq!((r.all.valid(), r.all.skipped), (2, 1));
    }

    /// The command line: EVALB's table and both summary sections, in text and in JSON.
    #[test]
    fn the_command_prints_evalb_s_summary() {
        let dir = tempfile::tempdir().unwrap();
        let (g, t) = (dir.path().join("gold.mrg"), dir.path().join("test.txt"));
        std::fs::write(&g, [G, G, G].join("\n")).unwrap();
        std::fs::write(&t, format!("{G}\n\n(TOP (S (NN a)))\n")).unwrap();
        let run = |json: bool| {
            let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_piecewise-lab"));
            c.arg("evalb").arg("--gold").arg(&g).arg("--test").arg(&t);
            if json {
                c.arg("--json");
            }
            let o = c.output().unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            (
                String::from_utf8(o.stdout).unwrap(),
                String::from_utf8(o.stderr).unwrap(),
            )
        };
        let (text, err) = run(false);
        assert!(err.contains("3 : Length unmatch (5|1)"), "{err}");
        for line in [
            " ID  Len.  Stat. Recal  Prec.  Bracket gold test Bracket Words  Tags Accracy",
            "   1    6    0  100.00 100.00     4      4    4      0      5     5   100.00",
            "=== Summary ===",
            "-- All --",
            "Number of Error sentence  =      1",
            "Number of Skip  sentence  =      1",
            "Number of Valid sentence  =      1",
            "Bracketing Recall         = 100.00",
            "Tagging accuracy          = 100.00",
            "-- len<=40 --",
        ] {
            assert!(text.contains(line), "{line:?} in\n{text}");
        }
        let (json, _) = run(true);
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["all"]["errors"], 1);
        assert_eq!(v["short"]["skipped"], 1);
        assert_eq!(v["cut_len"], 40);
        assert_eq!(v["sentences"][1]["status"], 2);
        assert_eq!(v["all"]["fmeasure"], 100.0);
    }
}

/// Our `evalb`'s table and summary against EVALB's own output (`expected`, what evalb.c with
/// COLLINS.prm printed for `gold` and `test`): the same rows and the same summary.
fn same_as_evalb(gold: &std::path::Path, test: &std::path::Path, expected: &std::path::Path) {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_piecewise-lab"))
        .args(["evalb", "--gold"])
        .arg(gold)
        .arg("--test")
        .arg(test)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let ours = String::from_utf8(o.stdout).unwrap();
    let theirs = std::fs::read_to_string(expected).unwrap();
    let rows = |s: &str| -> Vec<String> {
        s.lines()
            .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect()
    };
    let summary = |s: &str| -> Vec<String> {
        let at = s.find("=== Summary ===").expect("a summary");
        s[at..]
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .filter(|l| !l.is_empty())
            .collect()
    };
    assert_eq!(rows(&ours), rows(&theirs));
    assert_eq!(summary(&ours), summary(&theirs));
}

/// The 24 sentences of `tests/evalb_cases/` (failed parses, word and length mismatches, an
/// unbalanced line, crossing brackets, sentences over 40 words), whose `evalb-collins.out` is
/// what EVALB itself (evalb.c with COLLINS.prm, `evalb -p COLLINS.prm gold.txt test.txt`)
/// printed for them: our `evalb` prints the same per-sentence rows and the same summary.
#[test]
fn evalb_s_own_output_on_its_kinds_of_error_cases() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/evalb_cases");
    same_as_evalb(
        &dir.join("gold.txt"),
        &dir.join("test.txt"),
        &dir.join("evalb-collins.out"),
    );
    let theirs = std::fs::read_to_string(dir.join("evalb-collins.out")).unwrap();
    assert!(theirs.contains("Number of Error sentence  =      5"));
}

/// `tests/evalb_cases/reading/`: lines as evalb.c reads them, bracket by bracket — words with
/// no root bracket (EVALB's own sample has such a line), several trees on a line, an
/// unlabelled root `( (S …))` (a bracket EVALB counts), brackets left open (an error whose row
/// still shows its counts), an empty bracket, an empty word, tabs — against what EVALB printed.
#[test]
fn evalb_s_own_output_on_how_it_reads_a_line() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/evalb_cases/reading");
    same_as_evalb(
        &dir.join("gold.txt"),
        &dir.join("test.txt"),
        &dir.join("evalb-collins.out"),
    );
}

/// EVALB's own sample (`sample/sample.gld` and `sample.tst` of its release) against what
/// evalb.c with COLLINS.prm prints for it, when `../shared/data/evalb-sample/` holds them
/// (skipped, with a notice, without).
#[test]
fn evalb_s_own_sample() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/evalb-sample");
    let files = ["sample.gld", "sample.tst", "sample-collins.out"].map(|f| dir.join(f));
    if !files.iter().all(|f| f.exists()) {
        println!("{} has no EVALB sample; skipped", dir.display());
        return;
    }
    same_as_evalb(&files[0], &files[1], &files[2]);
}

/// Streaming: each row is scored as soon as its two lines are read, so only a sentence of each
/// file is ever held. Counted on generated files read through `SentenceReader`: when a row
/// arrives, at most a reader's buffer more than its own lines has been read.
#[test]
fn rows_come_as_their_lines_are_read() {
    use piecewise_lab::eval::evalb::EvalbParams;
    use piecewise_lab::eval::evalb_lines::{evalb_stream, Layout, SentenceReader};
    use std::cell::Cell;
    use std::rc::Rc;

    /// `n` copies of a line, made as they are read, counting the bytes handed out.
    struct Lines {
        line: &'static [u8],
        left: usize,
        at: usize,
        read: Rc<Cell<usize>>,
    }
    impl std::io::Read for Lines {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let mut n = 0;
            while n < buf.len() && self.left > 0 {
                let k = (self.line.len() - self.at).min(buf.len() - n);
                buf[n..n + k].copy_from_slice(&self.line[self.at..self.at + k]);
                (n, self.at) = (n + k, self.at + k);
                if self.at == self.line.len() {
                    (self.at, self.left) = (0, self.left - 1);
                }
            }
            self.read.set(self.read.get() + n);
            Ok(n)
        }
    }
    const LINE: &[u8] = b"(S (NP (DT a) (NN b)) (VP (VB c) (NP (DT d) (NN e))) (. .))\n";
    let n = 200_000;
    let read = Rc::new(Cell::new(0));
    let open = |name: &str| {
        let r = Lines {
            line: LINE,
            left: n,
            at: 0,
            read: read.clone(),
        };
        SentenceReader::new(std::io::BufReader::new(r), name, Layout::Lines)
    };
    let mut rows = 0usize;
    let totals = evalb_stream(
        open("gold"),
        open("test"),
        &EvalbParams::collins(None),
        40,
        |r| {
            rows += 1;
            assert_eq!(r.id, rows);
            let own = 2 * rows * LINE.len();
            assert!(
                read.get() <= own + 2 * 8192,
                "row {rows}: {} bytes read for {own}",
                read.get()
            );
            Ok(())
        },
    )
    .unwrap();
    assert_eq!((rows, totals.all.valid()), (n, n));
    assert_eq!(read.get(), 2 * n * LINE.len());
}

/// The command's peak memory on a ~50 MB pair of files (generated) stays far below the files'
/// size: it was ~37 times their size (1.87 GB) when every tree was held. The peak is the
/// child's VmHWM, read from /proc while it runs (the high-water mark only grows, so the last
/// reading is close to the final one; the kernel's ru_maxrss would also count the test process's
/// own memory, which a spawned child carries until its exec).
#[test]
fn the_command_s_memory_is_bounded_by_a_sentence() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let (g, t) = (dir.path().join("gold.txt"), dir.path().join("test.txt"));
    let mut line = String::from("(TOP (S");
    for i in 0..40 {
        line.push_str(&format!(" (NP (DT the) (NN w{i}))"));
    }
    line.push_str(" (. .)))\n");
    let n = 25_000_000 / line.len();
    for path in [&g, &t] {
        let mut w = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
        for _ in 0..n {
            w.write_all(line.as_bytes()).unwrap();
        }
        w.flush().unwrap();
    }
    let bytes = 2 * n * line.len();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_piecewise-lab"))
        .args(["evalb", "--gold"])
        .arg(&g)
        .arg("--test")
        .arg(&t)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let status_file = format!("/proc/{}/status", child.id());
    let (mut peak, mut readings) = (0usize, 0usize);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        let text = std::fs::read_to_string(&status_file).unwrap_or_default();
        // Only once the child runs our program: before its exec it shares the test's memory.
        if text.lines().any(|l| l == "Name:\tpiecewise-lab") {
            if let Some(kb) = text
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
            {
                peak = peak.max(kb * 1024);
                readings += 1;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    };
    assert!(status.success());
    println!(
        "{} MB of trees: peak {} MB ({readings} readings)",
        bytes / 1_000_000,
        peak / 1_000_000
    );
    assert!(readings > 0, "the child ended before it could be measured");
    assert!(
        peak < bytes / 2,
        "peak {peak} bytes on {bytes} bytes of input"
    );
}
