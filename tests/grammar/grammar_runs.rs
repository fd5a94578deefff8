//! Grammar runs behind the run interface (issue 23): a `RunSpec` with model `grammar` trains
//! every estimator into an ordinary run directory whose summary scores the test trees as EVALB
//! does; the run reopens with its grammar read off the trees again, and refuses when they
//! changed; the factor-graph loader says what the directory is.

use piecewise_lab::estimators::{EstimatorSpec, NotaSelection};
use piecewise_lab::grammar::parse::GrammarRunOptions;
use piecewise_lab::optim::lbfgs::LbfgsSpec;
use piecewise_lab::optim::Prior;
use piecewise_lab::run::grammar::GrammarRun;
use piecewise_lab::run::spec::RunSpec;
use piecewise_lab::run::trained::TrainedRun;
use piecewise_lab::run::ModelSpec;
use piecewise_lab::run::{execute, RunEvent};
use std::sync::atomic::AtomicBool;

const TREES: &str = "((S (NP (DT the) (NN dog)) (VP (VBD saw) (NP (DT a) (NN cat)))))
((S (NP (NN dog)) (VP (VBD barked))))
((S (NP (DT a) (JJ big) (NN cat)) (VP (VBD saw) (NP (PRP it)))))
((NP (DT the) (NN cat)))
((S (NP (PRP it)) (VP (VBD saw) (NP (DT the) (JJ big) (NN dog)))))
((S (VP (VBD saw) (NP (NN cat))) (NP (DT a) (NN saw))))
((S (NP (DT the) (NN dog)) (VP (VBD saw) (NP (NP (DT a) (NN cat)) (PP (IN with) (NP (DT a) (NN telescope)))))))
((S (NP (PRP it)) (VP (VP (VBD saw) (NP (DT the) (NN dog))) (PP (IN with) (NP (DT a) (NN telescope))))))
";

/// Brackets EVALB scores in `TREES` (every phrase; the root TOP deleted), counted by hand:
/// 4 + 3 + 4 + 1 + 4 + 4 + 7 + 7. The last two attach a PP differently: the chart then has
/// wrong edges for PT-CFG.
const GOLD_BRACKETS: u64 = 34;
/// Words: 5 + 2 + 5 + 2 + 5 + 4 + 8 + 7.
const WORDS: u64 = 38;

fn spec(dir: &std::path::Path, estimator: EstimatorSpec) -> RunSpec {
    RunSpec {
        name: Some(estimator.name().into()),
        train: dir.join("train.mrg"),
        test: Some(dir.join("test.mrg")),
        model: ModelSpec::Grammar(GrammarRunOptions {
            nota_per_sentence: Some(3.0),
            ..Default::default()
        }),
        estimator,
        optimiser: LbfgsSpec {
            max_iter: 30,
            ..Default::default()
        },
        prior: Prior { sigma2: Some(10.0) },
        eval_every: 5,
        threads: 2,
        ..Default::default()
    }
}

#[test]
fn every_grammar_estimator_trains_as_a_run_and_reopens() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("train.mrg"), TREES).unwrap();
    std::fs::write(tmp.path().join("test.mrg"), TREES).unwrap();
    for est in all_estimators() {
        let name = est.name();
        let out = tmp.path().join(name);
        let mut evals = 0;
        let mut progress = 0;
        let s = spec(tmp.path(), est);
        let summary = execute(&s, &out, &AtomicBool::new(false), &mut |e| match e {
            RunEvent::Eval { .. } => evals += 1,
            RunEvent::Progress(_) => progress += 1,
            _ => {}
        })
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(summary.status, "finished", "{name}");
        assert_eq!(summary.model, "grammar");
        let m = summary.test.as_ref().expect("test metrics");
        assert_eq!(m.segments.gold, GOLD_BRACKETS, "{name}");
        assert_eq!(m.sequences, 8);
        assert_eq!(m.tokens, WORDS);
        // Wrong brackets per sentence add up to missed plus spurious.
        let wrong: u32 = m.sequence_errors.iter().sum();
        assert_eq!(
            wrong as u64,
            m.segments.gold + m.segments.predicted - 2 * m.segments.correct
        );
        let per_label: u64 = m.segment_types.values().map(|p| p.gold).sum();
        assert_eq!(per_label, GOLD_BRACKETS);
        // Tags: every word once in the gold counts; here no punctuation, so the correct ones
        // over the words are EVALB's tagging accuracy.
        let gold_tags: u64 = m.labels.values().map(|p| p.gold).sum();
        let correct_tags: u64 = m.labels.values().map(|p| p.correct).sum();
        assert_eq!(gold_tags, WORDS);
        assert!((100.0 * correct_tags as f64 / WORDS as f64 - m.token_accuracy).abs() < 1e-9);
        // NN by hand: 2 + 1 + 1 + 1 + 1 + 2 + 3 + 2.
        assert_eq!(m.labels["NN"].gold, 13);
        let curve = std::fs::read_to_string(out.join("curve.jsonl")).unwrap();
        assert_eq!(curve.lines().count(), progress, "{name}");
        if name == "generative" {
            assert_eq!(summary.iterations, 0);
        } else {
            assert!(summary.iterations > 0 && evals > 0, "{name}");
            assert!(summary.stop_reason.is_some());
        }
        if name == "nota" {
            assert!(summary.nota_terms.unwrap() > 0);
        }
        let run = GrammarRun::open(&out).unwrap();
        assert_eq!(run.theta.len(), run.data.grammar.n_params);
        assert_eq!(run.test.len(), 8);
        assert_eq!(run.estimator.name(), name);
        let e = TrainedRun::open(&out)
            .err()
            .expect("not a factor graph")
            .to_string();
        assert!(e.contains("grammar run"), "{e}");
    }
    // The training trees changed: the grammar no longer matches the weights.
    std::fs::write(
        tmp.path().join("train.mrg"),
        format!("{TREES}((S (NP (NNP Kim)) (VP (VBZ sleeps) (ADVP (RB soundly)))))\n"),
    )
    .unwrap();
    let e = GrammarRun::open(&tmp.path().join("memm"))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("no longer give the grammar"), "{e}");
    // A chain estimator is refused by name.
    let e = execute(
        &spec(tmp.path(), EstimatorSpec::Pl),
        &tmp.path().join("pl"),
        &AtomicBool::new(false),
        &mut |_| {},
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("not pl"), "{e}");
}

#[test]
fn the_command_line_trains_a_grammar() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("train.mrg"), TREES).unwrap();
    std::fs::write(tmp.path().join("test.mrg"), TREES).unwrap();
    let out = tmp.path().join("run");
    let st = std::process::Command::new(env!("CARGO_BIN_EXE_piecewise-lab"))
        .args([
            "train",
            "--model",
            "grammar",
            "--estimator",
            "nota",
            "--train",
        ])
        .arg(tmp.path().join("train.mrg"))
        .arg("--test")
        .arg(tmp.path().join("test.mrg"))
        .args(["--max-iter", "20", "--nota-per-sentence", "3", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let spec: RunSpec =
        serde_json::from_str(&std::fs::read_to_string(out.join("spec.json")).unwrap()).unwrap();
    // The grammar's PT-CFG defaults to 001's error-driven selection after 10 iterations.
    assert_eq!(
        spec.estimator,
        EstimatorSpec::Nota {
            selection: NotaSelection::ErrorDriven {
                after: 10,
                threshold: 0.2,
                refresh: 0
            },
            weight: 1.0,
        }
    );
    assert!(GrammarRun::open(&out).is_ok());
}

// ---- Issue 42: finite PCFG weights, `parse`, `eval` and the test-length bound ----

fn bin() -> std::process::Command {
    std::process::Command::new(env!("CARGO_BIN_EXE_piecewise-lab"))
}

fn run_ok(cmd: &mut std::process::Command) -> (String, String) {
    let o = cmd.output().unwrap();
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    );
    assert!(o.status.success(), "{out}\n{err}");
    (out, err)
}

/// Test trees unlike the training trees: unknown words, a sentence the grammar may not span,
/// and sentences of 2 to 9 words.
const TEST_TREES: &str = "((S (NP (DT the) (NN telescope)) (VP (VBD saw) (NP (PRP it)))))
((NP (DT a) (JJ big) (NN dog)))
((S (NP (NNP Kim)) (VP (VBD saw) (NP (DT the) (NN cat)) (PP (IN with) (NP (DT a) (NN telescope))))))
((S (NP (PRP it)) (VP (VBD barked))))
((S (NP (DT the) (JJ big) (NN cat)) (VP (VBD saw) (NP (DT a) (JJ big) (NN dog)))))
((X (IN @)))
";

fn all_estimators() -> [EstimatorSpec; 4] {
    [
        EstimatorSpec::Generative,
        EstimatorSpec::Memm,
        EstimatorSpec::Nota {
            selection: NotaSelection::ErrorDriven {
                after: 3,
                threshold: 1e-3,
                refresh: 0,
            },
            weight: 1.0,
        },
        EstimatorSpec::Ml,
    ]
}

/// The WSJ sample's `( (X (IN @) ))` (wsj_0056): `@` is rare and its signature is the generic
/// unknown form itself, so the PCFG's count of X+IN's words was 0 and log p(UNK | X+IN) =
/// log(2/0) = +∞; every generative run with such a tree was written and then refused.
#[test]
fn a_generative_run_over_a_tag_of_symbols_only_reopens() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("train.mrg"),
        format!("{TREES}( (X (IN @) ))\n"),
    )
    .unwrap();
    std::fs::write(tmp.path().join("test.mrg"), TEST_TREES).unwrap();
    let out = tmp.path().join("generative");
    let s = spec(tmp.path(), EstimatorSpec::Generative);
    execute(&s, &out, &AtomicBool::new(false), &mut |_| {}).unwrap();
    let run = GrammarRun::open(&out).unwrap_or_else(|e| panic!("{e}"));
    assert!(run.theta.iter().all(|w| w.is_finite()));
    // Every relative frequency is at most 1: no weight above 0.
    assert!(run.theta.iter().all(|&w| w <= 0.0));
    // A weight that is not finite is refused, naming the file and the weight.
    let wpath = out.join("weights.bin");
    let mut bytes = std::fs::read(&wpath).unwrap();
    bytes[..8].copy_from_slice(&f64::INFINITY.to_le_bytes());
    std::fs::write(&wpath, &bytes).unwrap();
    let e = GrammarRun::open(&out).err().unwrap().to_string();
    assert!(
        e.contains("weights.bin") && e.contains("weight 0 (rule ") && e.contains("inf"),
        "{e}"
    );
    // So do `parse` and `eval`, which open runs the same way.
    for args in [&["parse", "--data"][..], &["eval", "--data"][..]] {
        let o = bin()
            .args(args)
            .arg(tmp.path().join("test.mrg"))
            .arg("--run")
            .arg(&out)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && err.contains("weights.bin"), "{err}");
    }
}

/// The PCFG's weights on the WSJ sample's 001-table2 training trees are the plain relative
/// frequencies `log(c / total)` wherever those are finite: bounding the estimate changed only
/// the infinite ones (skipped, with a notice, without the data).
#[test]
fn wsj_pcfg_weights_are_unchanged_where_they_were_finite() {
    use piecewise_lab::experiments::reproduce::parsing::wsj_split;
    use piecewise_lab::grammar::train::generative;
    use piecewise_lab::grammar::{Grammar, GrammarOptions};
    let zip = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/data/ptb-wsj-sample/treebank.zip");
    if !zip.exists() {
        println!("{} not found; skipped", zip.display());
        return;
    }
    let (train, _) = wsj_split(&zip, false).unwrap();
    let g = Grammar::fit(&train, &train, GrammarOptions::default()).unwrap();
    let theta = generative(&g);
    let mut changed = vec![];
    for (&(a, form), &c) in &g.leaf_count {
        let Some(p) = g.leaf_weight(form, a) else {
            continue;
        };
        let plain = (c / g.label_count[a as usize]).ln();
        let name = format!("{} over {}", g.labels[a as usize], g.forms[form as usize]);
        if plain.is_finite() {
            assert_eq!(theta[p].to_bits(), plain.to_bits(), "{name}");
        } else {
            changed.push((name, theta[p]));
        }
    }
    for (r, rule) in g.rules.iter().enumerate() {
        let plain = (g.rule_count[r] / g.label_count[rule.a as usize]).ln();
        assert_eq!(
            theta[r].to_bits(),
            plain.to_bits(),
            "{}",
            g.rule_name(r as u32)
        );
    }
    assert_eq!(changed, [("X+IN over UNK".to_string(), 0.0)]);
    assert!(theta.iter().all(|w| w.is_finite()));
}

/// `parse` writes every grammar estimator's trees, one a line; the project's EVALB scorer
/// finds in them exactly the brackets, tags and F1 the run's summary reports; token lines give
/// the same trees; `eval` prints the same score.
#[test]
fn parse_writes_the_trees_each_grammar_run_scored() {
    use piecewise_lab::data::treebank::{normalise, parse_trees};
    use piecewise_lab::eval::evalb::{evalb, EvalbParams};
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("train.mrg"), TREES).unwrap();
    std::fs::write(tmp.path().join("test.mrg"), TEST_TREES).unwrap();
    let mut gold = parse_trees(TEST_TREES, "test.mrg").unwrap();
    gold.iter_mut().for_each(normalise);
    let words: String = gold
        .iter()
        .map(|t| format!("{}\n", t.words().join(" ")))
        .collect();
    std::fs::write(tmp.path().join("test.txt"), &words).unwrap();
    let mut fallbacks_seen = 0;
    for est in all_estimators() {
        let name = est.name();
        let out = tmp.path().join(name);
        let summary = execute(
            &spec(tmp.path(), est),
            &out,
            &AtomicBool::new(false),
            &mut |_| {},
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        let m = summary.test.unwrap();
        let parses = tmp.path().join(format!("{name}.parses"));
        let (_, err) = run_ok(
            bin()
                .args(["parse", "--run"])
                .arg(&out)
                .arg("--data")
                .arg(tmp.path().join("test.mrg"))
                .arg("--out")
                .arg(&parses),
        );
        let text = std::fs::read_to_string(&parses).unwrap();
        assert_eq!(text.lines().count(), gold.len(), "{name}: {text}");
        let mut parsed = parse_trees(&text, "parses").unwrap();
        parsed.iter_mut().for_each(normalise);
        let s = evalb(&gold, &parsed, &EvalbParams::collins(None)).unwrap();
        assert_eq!(s.errors, 0, "{name}");
        assert_eq!(
            (
                s.matched as u64,
                s.gold_brackets as u64,
                s.test_brackets as u64
            ),
            (m.segments.correct, m.segments.gold, m.segments.predicted),
            "{name}"
        );
        assert_eq!(s.f1(), m.segments.f1, "{name}");
        assert_eq!(s.tagging(), m.token_accuracy, "{name}");
        let fallbacks = m.decoders.get("flat (no parse)").copied().unwrap_or(0);
        fallbacks_seen += fallbacks;
        assert!(
            err.contains(&format!("{fallbacks} flat trees")),
            "{name}: {err}"
        );
        // Token lines: the same trees.
        let (from_tokens, _) = run_ok(
            bin()
                .args(["parse", "--run"])
                .arg(&out)
                .arg("--data")
                .arg(tmp.path().join("test.txt")),
        );
        assert_eq!(from_tokens, text, "{name}");
        // `eval` on the run's own test trees: the summary's F1.
        let (report, _) = run_ok(bin().args(["eval", "--run"]).arg(&out));
        assert!(
            report.contains(&format!("F1 {:.2}", m.segments.f1))
                && report.contains(&format!("{fallbacks} of them flat trees")),
            "{name}: {report}"
        );
        let (json, _) = run_ok(
            bin()
                .args(["eval", "--json", "--model"])
                .arg(&out)
                .arg("--data")
                .arg(tmp.path().join("test.mrg")),
        );
        let again: piecewise_lab::eval::metrics::Metrics = serde_json::from_str(&json).unwrap();
        assert_eq!(again.segments, m.segments, "{name}");
        // `predict` points to the commands that exist.
        let o = bin()
            .args(["predict", "--model"])
            .arg(&out)
            .arg("--data")
            .arg(tmp.path().join("test.txt"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("parse --run DIR --data FILE"), "{err}");
    }
    assert!(
        fallbacks_seen > 0,
        "the symbol-only sentence cannot be spanned"
    );
}

/// Test sentences of more than `--max-length` words are skipped and counted in the run's
/// metrics; `parse` writes an empty line for each, so its output stays line-aligned; the
/// bound stays out of `spec.json` at its default.
#[test]
fn long_test_sentences_are_skipped_and_counted() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("train.mrg"), TREES).unwrap();
    std::fs::write(tmp.path().join("test.mrg"), TEST_TREES).unwrap();
    let train = |out: &std::path::Path, extra: &[&str]| {
        run_ok(
            bin()
                .args([
                    "train",
                    "--model",
                    "grammar",
                    "--estimator",
                    "ml",
                    "--train",
                ])
                .arg(tmp.path().join("train.mrg"))
                .arg("--test")
                .arg(tmp.path().join("test.mrg"))
                .args(["--max-iter", "5", "--out"])
                .arg(out)
                .args(extra),
        );
        let summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap())
                .unwrap();
        let spec = std::fs::read_to_string(out.join("spec.json")).unwrap();
        (summary, spec)
    };
    let (summary, spec) = train(&tmp.path().join("default"), &[]);
    assert!(!spec.contains("max_length"), "{spec}");
    assert_eq!(summary["test"]["sequences"], 6);
    assert!(summary["test"].get("skipped").is_none());
    // Words per test sentence: 4, 3, 7, 2, 7, 1; the training trees: 5, 2, 5, 2, 5, 4, 8, 7.
    let out = tmp.path().join("short");
    let (summary, spec) = train(&out, &["--max-length", "4"]);
    assert!(spec.contains("\"max_length\": 4"), "{spec}");
    assert_eq!(summary["test"]["sequences"], 4);
    assert_eq!(summary["test"]["skipped"], 2);
    // ml leaves the training trees of more than 4 words out.
    assert_eq!(summary["n_sequences"], 3, "{summary}");
    let (text, err) = run_ok(
        bin()
            .args(["parse", "--run"])
            .arg(&out)
            .arg("--data")
            .arg(tmp.path().join("test.mrg")),
    );
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 6);
    assert!(lines[2].is_empty() && lines[4].is_empty(), "{text}");
    assert!(lines
        .iter()
        .enumerate()
        .all(|(i, l)| (i == 2 || i == 4) != l.starts_with("(TOP")));
    assert!(
        err.contains("2 empty lines for sentences of more than 4 words"),
        "{err}"
    );
    // `parse --max-length` overrides the run's bound; out of range is an error.
    let (text, _) = run_ok(
        bin()
            .args(["parse", "--max-length", "2", "--run"])
            .arg(&out)
            .arg("--data")
            .arg(tmp.path().join("test.mrg")),
    );
    assert_eq!(text.lines().filter(|l| l.is_empty()).count(), 4, "{text}");
    let o = bin()
        .args(["parse", "--max-length", "0", "--run"])
        .arg(&out)
        .arg("--data")
        .arg(tmp.path().join("test.mrg"))
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("max-length 0"));
}

/// Issue 65 (M3): what bounds a parse is its chart's memory, checked before the chart is made:
/// a sentence whose charts would pass the memory limit is refused naming the estimate, not
/// parsed until the machine runs out (600 words once took 8.9 GB, 1,000 aborted).
#[test]
fn a_sentence_whose_chart_would_not_fit_is_refused_by_its_estimate() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("train.mrg"), TREES).unwrap();
    let out = tmp.path().join("run");
    run_ok(
        bin()
            .args([
                "train",
                "--model",
                "grammar",
                "--estimator",
                "ml",
                "--train",
            ])
            .arg(tmp.path().join("train.mrg"))
            .args(["--max-iter", "3", "--out"])
            .arg(&out),
    );
    let words = vec!["the"; 3000].join(" ");
    std::fs::write(tmp.path().join("long.txt"), format!("{words}\n")).unwrap();
    let o = bin()
        .args([
            "parse",
            "--max-length",
            "5000",
            "--memory-limit",
            "64M",
            "--run",
        ])
        .arg(&out)
        .arg("--data")
        .arg(tmp.path().join("long.txt"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("parsing a 3000-word sentence") && err.contains("memory limit of 64.0 MB"),
        "{err}"
    );
    assert!(err.contains("--max-length"), "{err}");
}
