//! The command line, end to end on generated data.

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_piecewise-lab"))
}

fn run(args: &[&str]) -> Output {
    let o = bin().args(args).output().unwrap();
    assert!(
        o.status.success(),
        "{args:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn last_json(o: &Output) -> Value {
    let s = stdout(o);
    serde_json::from_str(s.lines().last().expect("output")).expect("JSON last line")
}

const TEMPLATE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/templates/hmm.tpl");

fn generate(dir: &Path) -> (String, String) {
    let train = dir.join("train.conll").display().to_string();
    let test = dir.join("test.conll").display().to_string();
    run(&[
        "generate",
        "hmm-mixture",
        "--alpha",
        "0.25",
        "--seed",
        "4",
        "--sequences",
        "60",
        "--length",
        "12",
        "--out",
        &train,
        "--test-sequences",
        "40",
        "--test-out",
        &test,
    ]);
    (train, test)
}

#[test]
fn train_predict_eval_dump_objective_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let (train, test) = generate(dir.path());
    let info = last_json(&run(&["info", &train, "--json"]));
    assert_eq!(info["sequences"], 60);
    assert_eq!(info["tokens"], 720);
    assert_eq!(info["columns"], 2);

    let out = dir.path().join("run").display().to_string();
    let o = run(&[
        "train",
        "--train",
        &train,
        "--test",
        &test,
        "--template",
        TEMPLATE,
        "--c2",
        "0.5",
        "--max-iter",
        "40",
        "--out",
        &out,
        "--summary-json",
        "--threads",
        "2",
    ]);
    let s = last_json(&o);
    for key in ["estimator", "iterations", "train_seconds", "token_accuracy"] {
        assert!(!s[key].is_null(), "summary lacks {key}: {s}");
    }
    // S0…S4 carry no chunk prefixes: there are no segments to score.
    assert!(s["segment_f1"].is_null(), "{s}");
    assert_eq!(s["decoders"]["viterbi"], 40);
    assert_eq!(s["estimator"], "ml");
    let iterations = s["iterations"].as_u64().unwrap();
    assert!(iterations > 0 && iterations <= 40);
    let run_dir = Path::new(&out);
    for f in [
        "spec.json",
        "curve.jsonl",
        "summary.json",
        "model.json",
        "weights.bin",
    ] {
        assert!(run_dir.join(f).exists(), "{f} missing");
    }
    let curve = std::fs::read_to_string(run_dir.join("curve.jsonl")).unwrap();
    assert_eq!(curve.lines().count() as u64, iterations);
    let objs: Vec<f64> = curve
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["objective"]
                .as_f64()
                .unwrap()
        })
        .collect();
    assert!(
        objs.last().unwrap() < objs.first().unwrap(),
        "objective decreases"
    );
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["status"], "finished");
    assert!(run_dir.read_dir().unwrap().all(|e| !e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .contains(".tmp-")));

    // predict appends one column.
    let pred = stdout(&run(&["predict", "--model", &out, "--data", &test]));
    let first = pred.lines().next().unwrap();
    assert_eq!(first.split_whitespace().count(), 3);
    assert_eq!(pred.lines().filter(|l| !l.is_empty()).count(), 40 * 12);

    // eval agrees with the run's own test metrics.
    let e: Value = serde_json::from_str(&stdout(&run(&[
        "eval", "--model", &out, "--data", &test, "--json",
    ])))
    .unwrap();
    assert_eq!(e["token_accuracy"], s["token_accuracy"]);
    // Accuracy recomputed from predict's output.
    let (mut ok, mut n) = (0, 0);
    for l in pred.lines().filter(|l| !l.is_empty()) {
        let f: Vec<&str> = l.split_whitespace().collect();
        n += 1;
        ok += (f[1] == f[2]) as usize;
    }
    let acc = 100.0 * ok as f64 / n as f64;
    assert!((acc - e["token_accuracy"].as_f64().unwrap()).abs() < 1e-9);

    // dump → objective reproduces the held-out log-likelihood by another route: a dense model
    // built from the test data's own features, weights matched by name.
    let tsv = dir.path().join("w.tsv").display().to_string();
    run(&["dump", "--model", &out, "--out", &tsv]);
    let dumped = std::fs::read_to_string(&tsv).unwrap();
    assert!(dumped.lines().any(|l| l.starts_with("transition\tB\tS")));
    assert!(dumped
        .lines()
        .all(|l| l.split('\t').count() == 4 || l.split('\t').count() == 5));
    let ob = last_json(&run(&[
        "objective",
        "--data",
        &test,
        "--template",
        TEMPLATE,
        "--weights",
        &tsv,
        "--estimator",
        "ml",
        "--json",
    ]));
    assert_eq!(ob["sequences"], 40);
    let (a, b) = (
        ob["value"].as_f64().unwrap(),
        e["log_likelihood"].as_f64().unwrap(),
    );
    assert!(
        (a - b).abs() < 1e-8 * a.abs(),
        "objective {a} vs held-out log-likelihood {b}"
    );
}

#[test]
fn objective_matches_a_hand_computation() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d.conll");
    std::fs::write(&data, "a A\nb B\n").unwrap();
    let tpl = dir.path().join("t.tpl");
    std::fs::write(&tpl, "U0:%x[0,0]\nB\n").unwrap();
    let w = dir.path().join("w.tsv");
    std::fs::write(
        &w,
        "state\tU0:a\tA\t1.0\nstate\tU0:zzz\tA\t7\ntransition\tB\tA\tB\t0.5\nstate\tU0:b\tC\t3\n",
    )
    .unwrap();
    let o = last_json(&run(&[
        "objective",
        "--data",
        &data.display().to_string(),
        "--template",
        &tpl.display().to_string(),
        "--weights",
        &w.display().to_string(),
        "--json",
    ]));
    // Scores: AA = 1, AB = 1 + 0.5, BA = 0, BB = 0; gold AB.
    let want = 1.5 - (1f64.exp() + 1.5f64.exp() + 2.0).ln();
    assert!((o["value"].as_f64().unwrap() - want).abs() < 1e-12, "{o}");
    // Factors: state_0 = [A: 1, B: 0], state_1 = [0, 0], transition = [AA 0, AB 0.5, BA 0, BB 0].
    let e = |x: f64| x.exp();
    let hand = [
        // PW (eq. 8), factor-as-piece: each table's own softmax at the gold entry.
        (
            "pw",
            (1.0 - (e(1.0) + 1.0).ln()) + (0.0 - 2f64.ln()) + (0.5 - (3.0 + e(0.5)).ln()),
        ),
        // PWPL (eq. 36–37): state softmaxes; transition row A at B, column B at A.
        (
            "pwpl",
            (1.0 - (e(1.0) + 1.0).ln()) + (0.0 - 2f64.ln()) + 2.0 * (0.5 - (1.0 + e(0.5)).ln()),
        ),
        // PL (eq. 5): y0 given y1 = B: scores A: 1 + 0.5, B: 0; y1 given y0 = A: A: 1 + 0, B: 1.5.
        (
            "pl",
            (1.5 - (e(1.5) + 1.0).ln()) + (1.5 - (e(1.0) + e(1.5)).ln()),
        ),
    ];
    for (name, want) in hand {
        let o = last_json(&run(&[
            "objective",
            "--data",
            &data.display().to_string(),
            "--template",
            &tpl.display().to_string(),
            "--weights",
            &w.display().to_string(),
            "--estimator",
            name,
            "--json",
        ]));
        assert!(
            (o["value"].as_f64().unwrap() - want).abs() < 1e-12,
            "{name}: {o} vs {want}"
        );
    }
}

#[test]
fn c2_and_sigma2_are_the_same_prior() {
    let dir = tempfile::tempdir().unwrap();
    let (train, _) = generate(dir.path());
    let mut finals = vec![];
    for prior in [["--c2", "2.0"], ["--sigma2", "0.25"]] {
        let out = dir
            .path()
            .join(prior[0].trim_start_matches('-'))
            .display()
            .to_string();
        let s = last_json(&run(&[
            "train",
            "--train",
            &train,
            "--template",
            TEMPLATE,
            prior[0],
            prior[1],
            "--max-iter",
            "15",
            "--out",
            &out,
            "--summary-json",
        ]));
        finals.push(s["final_objective"].as_f64().unwrap());
    }
    assert_eq!(finals[0], finals[1]);
}

#[test]
fn bad_input_is_a_clear_error_with_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.conll");
    std::fs::write(&bad, "a X B-NP\nb Y I-NP\nc B-NP\n").unwrap();
    let out = dir.path().join("run");
    // `train --train FILE --out DIR --force` must fail; returns its standard error.
    let train_fails = |data: &std::path::Path| {
        let o = bin()
            .args([
                "train",
                "--train",
                &data.display().to_string(),
                "--out",
                &out.display().to_string(),
                "--force",
            ])
            .output()
            .unwrap();
        assert!(
            !o.status.success(),
            "training on {} should fail",
            data.display()
        );
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let err = train_fails(&bad);
    assert!(err.contains(&format!("{}:3:", bad.display())), "{err}");
    // The run directory records the failure.
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["status"], "failed");
    // Template reading a column the data lacks.
    let good = dir.path().join("good.conll");
    std::fs::write(&good, "a B-NP\nb I-NP\n").unwrap();
    let err = train_fails(&good);
    assert!(err.contains("builtin:chunking:"), "{err}");
    let o = bin()
        .args([
            "train", "--train", "x", "--c2", "1", "--sigma2", "1", "--out", "y",
        ])
        .output()
        .unwrap();
    assert!(!o.status.success());
}

#[test]
fn compare_split_and_augment() {
    let dir = tempfile::tempdir().unwrap();
    let (train, test) = generate(dir.path());
    // split: a seeded shuffle is reproducible and keeps every sequence; --head keeps file order.
    let (a, b) = (dir.path().join("a.conll"), dir.path().join("b.conll"));
    let (a2, b2) = (dir.path().join("a2.conll"), dir.path().join("b2.conll"));
    let s = |p: &std::path::PathBuf| p.display().to_string();
    run(&[
        "split",
        "--data",
        &train,
        "--data",
        &test,
        "--seed",
        "3",
        "--train-out",
        &s(&a),
        "--test-out",
        &s(&b),
    ]);
    run(&[
        "split",
        "--data",
        &train,
        "--data",
        &test,
        "--seed",
        "3",
        "--train-out",
        &s(&a2),
        "--test-out",
        &s(&b2),
    ]);
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&a2).unwrap());
    let count = |p: &std::path::PathBuf| {
        std::fs::read_to_string(p)
            .unwrap()
            .split("\n\n")
            .filter(|x| !x.trim().is_empty())
            .count()
    };
    assert_eq!((count(&a), count(&b)), (50, 50));
    run(&[
        "split",
        "--data",
        &train,
        "--head",
        "10",
        "--train-out",
        &s(&a),
        "--test-out",
        &s(&b),
    ]);
    assert_eq!((count(&a), count(&b)), (10, 50));
    assert!(std::fs::read_to_string(&train)
        .unwrap()
        .starts_with(&std::fs::read_to_string(&a).unwrap()));
    // augment: word, lowercase, shape, 3 prefixes, 3 suffixes, label.
    let aug = dir.path().join("aug.conll");
    let word = dir.path().join("w.conll");
    std::fs::write(&word, "Dogs NNS\nx NN\n").unwrap();
    run(&["augment", "--data", &s(&word), "--out", &s(&aug)]);
    assert_eq!(
        std::fs::read_to_string(&aug).unwrap(),
        "Dogs dogs Xx D Do Dog s gs ogs NNS\nx x x x _ _ x _ _ NN\n\n"
    );
    // Every observation column is kept: a POS column follows the derived ones.
    std::fs::write(&word, "Dogs NNS B-NP\nbark VBP B-VP\n").unwrap();
    run(&["augment", "--data", &s(&word), "--out", &s(&aug)]);
    assert_eq!(
        std::fs::read_to_string(&aug).unwrap(),
        "Dogs dogs Xx D Do Dog s gs ogs NNS B-NP\nbark bark x b ba bar k rk ark VBP B-VP\n\n"
    );
    // compare: one row per estimator, same features.
    let out = dir.path().join("cmp").display().to_string();
    let o = run(&[
        "compare",
        "--train",
        &train,
        "--test",
        &test,
        "--template",
        TEMPLATE,
        "--estimators",
        "ml,pwpl,pw",
        "--pieces",
        "state+transition",
        "--max-iter",
        "20",
        "--out",
        &out,
        "--json",
    ]);
    let table: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(table["warnings"], serde_json::json!([]));
    let rows = table["runs"].as_array().unwrap();
    let names: Vec<&str> = rows
        .iter()
        .map(|r| r["estimator"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["ml", "pwpl", "pw"]);
    let n_params: Vec<u64> = rows
        .iter()
        .map(|r| r["n_params"].as_u64().unwrap())
        .collect();
    assert!(n_params.iter().all(|&n| n == n_params[0]));
    assert!(rows
        .iter()
        .all(|r| r["field_f1"].as_object().unwrap().contains_key("S0")));
    // The paired tests (McNemar on tokens, paired t, bootstrap), each pair both ways.
    let sig = &rows[0]["significance"]["pw"];
    assert_eq!(sig["a"], "ml");
    let p = sig["paired_t"]["p"].as_f64().unwrap();
    let t = &sig["tokens"];
    assert!((0.0..=1.0).contains(&p) && t["p"].as_f64().unwrap() <= 1.0);
    assert!(t["only_a"].as_u64().unwrap() + t["only_b"].as_u64().unwrap() > 0);
    let b = &sig["bootstrap"];
    assert!(b["low"].as_f64().unwrap() <= b["high"].as_f64().unwrap());
    assert!(sig["reading"].as_str().unwrap().contains("tokens"));
    assert_eq!(rows[2]["significance"]["ml"], *sig);
    // The same table from the finished runs.
    let again: Value = serde_json::from_str(&stdout(&run(&[
        "compare",
        "--runs",
        &format!("{out}/ml,{out}/pw"),
        "--json",
    ])))
    .unwrap();
    assert_eq!(again["runs"][0]["significance"]["pw"], *sig);
    // And with the directories as separate words, as a shell glob gives them.
    let spaced: Value = serde_json::from_str(&stdout(&run(&[
        "compare",
        "--runs",
        &format!("{out}/ml"),
        &format!("{out}/pw"),
        "--json",
    ])))
    .unwrap();
    assert_eq!(spaced, again);
    // A run scored on another test file is named, not paired (a byte-identical copy is the
    // same data and would be paired: this one lacks the last sentence).
    let other = dir.path().join("other-test.conll");
    let text = std::fs::read_to_string(&test).unwrap();
    let (kept, _) = text.trim_end().rsplit_once("\n\n").unwrap();
    std::fs::write(&other, format!("{kept}\n\n")).unwrap();
    let o2 = dir.path().join("cmp2").display().to_string();
    run(&[
        "train",
        "--train",
        &train,
        "--test",
        &other.display().to_string(),
        "--template",
        TEMPLATE,
        "--max-iter",
        "5",
        "--out",
        &o2,
    ]);
    let mixed: Value = serde_json::from_str(&stdout(&run(&[
        "compare",
        "--runs",
        &format!("{out}/ml,{o2}"),
        "--json",
    ])))
    .unwrap();
    let w = mixed["warnings"].to_string();
    assert!(
        w.contains("other-test.conll") && w.contains("not paired"),
        "{w}"
    );
    let spec: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("cmp/pw/spec.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        spec["estimator"]["pieces"],
        serde_json::json!([["state", "transition"]])
    );
}

/// Grid and Boltzmann families through every command: generate, info, train (exact ml and bp),
/// predict, eval, dump, and objective reproducing the held-out log-likelihood from the dump.
#[test]
fn loopy_families_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).display().to_string();
    let (train, test) = (p("g-train.grid"), p("g-test.grid"));
    run(&[
        "generate",
        "grid",
        "--classes",
        "3",
        "--height",
        "3",
        "--width",
        "3",
        "--images",
        "12",
        "--test-images",
        "6",
        "--test-out",
        &test,
        "--seed",
        "2",
        "--out",
        &train,
    ]);
    let info = last_json(&run(&["info", &train, "--model", "grid", "--json"]));
    assert_eq!(info["sequences"], 12);
    assert_eq!(info["tokens"], 12 * 9);
    for (est, decoder) in [("ml", "enumeration"), ("bp", "enumeration")] {
        let out = p(&format!("grid-{est}"));
        let s = last_json(&run(&[
            "train",
            "--model",
            "grid",
            "--pairwise",
            "symmetric",
            "--train",
            &train,
            "--test",
            &test,
            "--estimator",
            est,
            "--sigma2",
            "10",
            "--out",
            &out,
            "--summary-json",
        ]));
        assert_eq!(s["model"], "grid");
        assert_eq!(s["decoders"][decoder], 6, "{s}");
        assert_eq!(s["bp_unconverged"], 0);
        // predict appends the predicted label to every cell.
        let pred = stdout(&run(&["predict", "--model", &out, "--data", &test]));
        let cells: Vec<&str> = pred
            .lines()
            .filter(|l| !l.is_empty())
            .flat_map(|l| l.split('|'))
            .collect();
        assert_eq!(cells.len(), 6 * 9);
        assert!(cells
            .iter()
            .all(|c| c.split_whitespace().count() == 1 + 3 + 1));
        let e: Value = serde_json::from_str(&stdout(&run(&[
            "eval", "--model", &out, "--data", &test, "--json",
        ])))
        .unwrap();
        assert_eq!(e["token_accuracy"], s["token_accuracy"]);
        let (ok, n) = cells.iter().fold((0, 0), |(ok, n), c| {
            let f: Vec<&str> = c.split_whitespace().collect();
            (ok + (f[0] == f[4]) as usize, n + 1)
        });
        assert!(
            (100.0 * ok as f64 / n as f64 - e["token_accuracy"].as_f64().unwrap()).abs() < 1e-9
        );
        // The max-product decoder, forced, agrees with enumeration here or nearly.
        let mp: Value = serde_json::from_str(&stdout(&run(&[
            "eval",
            "--model",
            &out,
            "--data",
            &test,
            "--decode",
            "max-product",
            "--json",
        ])))
        .unwrap();
        assert_eq!(mp["decoders"]["max-product loopy BP"], 6, "{mp}");
        let tsv = p(&format!("w-{est}.tsv"));
        run(&["dump", "--model", &out, "--out", &tsv]);
        let ob = last_json(&run(&[
            "objective",
            "--model",
            "grid",
            "--pairwise",
            "symmetric",
            "--data",
            &test,
            "--weights",
            &tsv,
            "--estimator",
            "ml",
            "--json",
        ]));
        let (a, b) = (
            ob["value"].as_f64().unwrap(),
            e["log_likelihood"].as_f64().unwrap(),
        );
        assert!(
            (a - b).abs() < 1e-8 * a.abs(),
            "{est}: objective {a} vs held-out {b}"
        );
    }

    let (bm, bm_test) = (p("bm.txt"), p("bm-test.txt"));
    run(&[
        "generate",
        "boltzmann",
        "--m",
        "5",
        "--n",
        "20000",
        "--seed",
        "1",
        "--out",
        &bm,
    ]);
    run(&[
        "generate",
        "boltzmann",
        "--m",
        "5",
        "--n",
        "200",
        "--seed",
        "2",
        "--out",
        &bm_test,
    ]);
    let out = p("bm-ml");
    let s = last_json(&run(&[
        "train",
        "--model",
        "boltzmann",
        "--train",
        &bm,
        "--test",
        &bm_test,
        "--estimator",
        "ml",
        "--c2",
        "0",
        "--out",
        &out,
        "--summary-json",
    ]));
    assert_eq!(s["model"], "boltzmann");
    // ML from 20,000 exact samples recovers 004's θ0 = (−1 ×5, +1 ×5) to within about 4
    // standard errors (≈ 0.05 each at this n).
    let dumped = stdout(&run(&["dump", "--model", &out]));
    let w: Vec<f64> = dumped
        .lines()
        .map(|l| l.rsplit('\t').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(w.len(), 10);
    let mut sq = 0.0;
    for (i, x) in w.iter().enumerate() {
        let want = if i < 5 { -1.0 } else { 1.0 };
        assert!((x - want).abs() < 0.2, "θ{i} = {x}");
        sq += (x - want) * (x - want);
    }
    // The sample file records θ0, so the run reports ‖θ̂ − θ0‖: the same number as above.
    assert!(std::fs::read_to_string(&bm)
        .unwrap()
        .starts_with("# theta: -1,-1,-1,-1,-1,1,1,1,1,1\n"));
    let pe = s["param_error"].as_f64().expect("param_error");
    assert!((pe - sq.sqrt()).abs() < 1e-9, "{pe} vs {}", sq.sqrt());
    let pred = stdout(&run(&["predict", "--model", &out, "--data", &bm_test]));
    assert_eq!(pred.lines().count(), 200);
    // Bad input for the family: a grid file given to a Boltzmann model.
    let o = bin()
        .args(["eval", "--model", &out, "--data", &test])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("g-test.grid:1"), "{err}");
}

/// The Boltzmann chain end to end: a sampled training subset, SCL PL1/PL2, tagging given the
/// words on held-out data with unseen words, perplexity, predict's columns, the train-set
/// metrics, and a sweep's CSV carrying the train NLL and both perplexities.
#[test]
fn boltzmann_chain_round_trip_and_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let (train, test) = generate(dir.path());
    let p = |n: &str| dir.path().join(n).display().to_string();
    let out = p("bc");
    let s = last_json(&run(&[
        "train",
        "--model",
        "boltzmann-chain",
        "--train",
        &train,
        "--test",
        &test,
        "--train-sample",
        "30",
        "--estimator",
        "scl",
        "--policy",
        "1:0.5*pl1 + 0.5:0.5*pl2",
        "--sigma2",
        "10",
        "--eval-train",
        "--out",
        &out,
        "--summary-json",
    ]));
    assert_eq!(s["model"], "boltzmann-chain");
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("bc/summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["n_sequences"], 30);
    let t = &summary["test"];
    assert!(
        t["decoders"]["viterbi given the words"].as_u64().unwrap() > 0,
        "{t}"
    );
    let ppl = (-t["log_likelihood"].as_f64().unwrap()
        / t["log_likelihood_tokens"].as_f64().unwrap())
    .exp();
    assert!(ppl.is_finite() && ppl > 1.0);
    assert!(summary["train"]["log_likelihood"].as_f64().unwrap() < 0.0);
    // predict: word, the other columns, gold, predicted label — one token a line.
    let pred = stdout(&run(&["predict", "--model", &out, "--data", &test]));
    let first = pred.lines().next().unwrap();
    let test_first = std::fs::read_to_string(&test).unwrap();
    let test_first = test_first.lines().next().unwrap();
    assert_eq!(
        first.split_whitespace().count(),
        test_first.split_whitespace().count() + 1
    );
    // A 2 × 1 sweep with train NLL and perplexities in its CSV.
    let sw = p("sweep");
    run(&[
        "sweep",
        "--model",
        "boltzmann-chain",
        "--train",
        &train,
        "--test",
        &test,
        "--train-sample",
        "20",
        "--families",
        "pl1/fl",
        "--lambdas",
        "0.5,1",
        "--betas",
        "0.5",
        "--sigma2",
        "10",
        "--jobs",
        "2",
        "--out",
        &sw,
    ]);
    let csv = std::fs::read_to_string(dir.path().join("sweep/sweep.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    for row in csv.lines().skip(1) {
        let f: Vec<&str> = row.split(',').collect();
        assert_eq!(f[col("status")], "finished");
        for c in [
            "train_log_likelihood",
            "test_perplexity",
            "train_perplexity",
        ] {
            assert!(
                f[col(c)].parse::<f64>().unwrap().is_finite(),
                "{c} in {row}"
            );
        }
    }
}

/// memm and nota runs decode locally by default and with `--decode auto`, globally when asked;
/// per-state scales are written and used; error-driven NOTA records its choice.
#[test]
fn locally_normalised_runs_decode_locally_unless_asked() {
    let dir = tempfile::tempdir().unwrap();
    let (train, test) = generate(dir.path());
    let out = |n: &str| dir.path().join(n).display().to_string();
    let decoders = |run_dir: &str, decode: Option<&str>| -> Vec<String> {
        let mut args = vec!["eval", "--model", run_dir, "--data", &test, "--json"];
        if let Some(d) = decode {
            args.extend(["--decode", d]);
        }
        let v: Value = serde_json::from_str(&stdout(&run(&args))).unwrap();
        v["decoders"].as_object().unwrap().keys().cloned().collect()
    };
    let base = [
        "train",
        "--train",
        &train,
        "--test",
        &test,
        "--template",
        TEMPLATE,
        "--sigma2",
        "10",
        "--max-iter",
        "40",
    ];
    run(&[&base[..], &["--estimator", "memm", "--out", &out("memm")]].concat());
    assert_eq!(decoders(&out("memm"), None), ["local (MEMM Viterbi)"]);
    assert_eq!(
        decoders(&out("memm"), Some("auto")),
        ["local (MEMM Viterbi)"]
    );
    assert_eq!(decoders(&out("memm"), Some("global")), ["viterbi"]);
    run(&[
        &base[..],
        &[
            "--estimator",
            "nota",
            "--nota",
            "error-driven",
            "--nota-after",
            "5",
            "--per-state-scaling",
            "--out",
            &out("nota"),
        ],
    ]
    .concat());
    assert_eq!(decoders(&out("nota"), None), ["viterbi (per-state scaled)"]);
    assert_eq!(
        decoders(&out("nota"), Some("local")),
        ["local (MEMM Viterbi, per-state scaled)"]
    );
    let s: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("nota/summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(s["nota_choices"][0][0], 5);
    assert!(s["nota_terms"].as_u64().unwrap() > 0);
    let sc: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("nota/scaling.json")).unwrap(),
    )
    .unwrap();
    assert!(
        sc["log_likelihood_after"].as_f64().unwrap()
            >= sc["log_likelihood_before"].as_f64().unwrap()
    );
    // Every curve point says how many NOTA terms the objective had: none before the choice.
    let curve = std::fs::read_to_string(dir.path().join("nota/curve.jsonl")).unwrap();
    let counts: Vec<u64> = curve
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["nota_terms"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert!(counts[..5].iter().all(|&c| c == 0) && counts[5..].iter().all(|&c| c > 0));
}

/// `--nota-weight` reaches the run's spec (and 1, 001's weight, is left out of it, so runs made
/// before the knob existed are still reused); a negative weight is an error naming the knob.
#[test]
fn nota_weight_is_recorded_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    let (train, test) = generate(dir.path());
    let out = |n: &str| dir.path().join(n).display().to_string();
    let args = |w: &str, o: &str| {
        vec![
            "train".to_string(),
            "--train".into(),
            train.clone(),
            "--test".into(),
            test.clone(),
            "--template".into(),
            TEMPLATE.into(),
            "--max-iter".into(),
            "5".into(),
            "--estimator".into(),
            "nota".into(),
            "--nota-weight".into(),
            w.into(),
            "--out".into(),
            out(o),
        ]
    };
    let spec = |o: &str| -> Value {
        serde_json::from_str(
            &std::fs::read_to_string(dir.path().join(o).join("spec.json")).unwrap(),
        )
        .unwrap()
    };
    let a = args("0.25", "quarter");
    run(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(spec("quarter")["estimator"]["weight"], 0.25);
    let a = args("1", "one");
    run(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(spec("one")["estimator"].get("weight").is_none());
    let a = args("-1", "neg");
    let o = bin().args(a.iter().map(String::as_str)).output().unwrap();
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("nota-weight"), "{e}");
}

/// Started from an empty folder with no source tree in sight, the binary finds its lessons,
/// templates and sample data (written from the copy compiled into it to the data directory)
/// and keeps its workspace in the data directory; a `workspace` folder in the working
/// directory is used when there is one.
#[test]
fn about_from_an_empty_folder_uses_the_data_directory() {
    let (cwd, home) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let about = |cwd: &std::path::Path| {
        let o = bin()
            .arg("about")
            .current_dir(cwd)
            .env("HOME", home.path())
            .env_remove("XDG_DATA_HOME")
            .env_remove("PIECEWISE_WORKSPACE")
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    let text = about(cwd.path());
    let data = home.path().join(".local/share/piecewise-lab");
    let root = data.join(format!("bundled-{}", env!("CARGO_PKG_VERSION")));
    assert!(
        text.contains(&format!("sample data: {}", root.display())),
        "{text}"
    );
    assert!(text.contains(&format!("exports): {}", data.join("workspace").display())));
    for f in [
        "assets/lessons/04-training-side-by-side.toml",
        "assets/templates/hmm-window.tpl",
        "sample_data/hmm-peaked-train.conll",
    ] {
        assert!(root.join(f).is_file(), "{f}");
    }
    std::fs::create_dir(cwd.path().join("workspace")).unwrap();
    let text = about(cwd.path());
    assert!(text.contains(&format!(
        "exports): {}",
        cwd.path().join("workspace").display()
    )));
}

/// `generate label-bias` remakes lesson 5's bundled split with sample_data/README.md's command:
/// the training file, then the development and test sentences, in that order.
#[test]
fn generate_label_bias_remakes_the_bundled_sample() {
    let dir = tempfile::tempdir().unwrap();
    let (train, rest) = (
        dir.path().join("train.conll"),
        dir.path().join("rest.conll"),
    );
    run(&[
        "generate",
        "label-bias",
        "--majority",
        "0.65",
        "--seed",
        "1",
        "--sequences",
        "300",
        "--out",
        train.to_str().unwrap(),
        "--test-sequences",
        "600",
        "--test-out",
        rest.to_str().unwrap(),
    ]);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_data");
    let read = |p: &Path| std::fs::read_to_string(p).unwrap();
    assert_eq!(read(&train), read(&root.join("label-bias-train.conll")));
    // The README's awk split: the first 300 blank-line separated sentences, then the rest.
    let sentences: Vec<String> = read(&rest)
        .split("\n\n")
        .filter(|s| !s.trim().is_empty())
        .map(|s| format!("{}\n\n", s.trim_end()))
        .collect();
    assert_eq!(sentences.len(), 600);
    assert_eq!(
        sentences[..300].concat(),
        read(&root.join("label-bias-dev.conll"))
    );
    assert_eq!(
        sentences[300..].concat(),
        read(&root.join("label-bias-test.conll"))
    );
    // Out-of-range settings are refused with the flag's name.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_piecewise-lab"))
        .args(["generate", "label-bias", "--pairs", "9", "--out"])
        .arg(dir.path().join("x.conll"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--pairs"));
}

/// `generate treebank` writes trees the grammar commands read, within the length bounds, the
/// same for the same seed; the bundled treebank is what sample_data/README.md's command makes.
#[test]
fn generate_treebank_remakes_the_bundled_sample() {
    let dir = tempfile::tempdir().unwrap();
    let (train, test) = (dir.path().join("train.mrg"), dir.path().join("test.mrg"));
    run(&[
        "generate",
        "treebank",
        "--sentences",
        "300",
        "--seed",
        "1",
        "--out",
        train.to_str().unwrap(),
        "--test-sentences",
        "100",
        "--test-out",
        test.to_str().unwrap(),
    ]);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_data");
    for (made, bundled) in [
        (&train, "toy-treebank-train.mrg"),
        (&test, "toy-treebank-test.mrg"),
    ] {
        assert_eq!(
            std::fs::read(made).unwrap(),
            std::fs::read(root.join(bundled)).unwrap(),
            "{bundled} is not what its command makes"
        );
    }
    let trees = std::fs::read_to_string(&train).unwrap();
    assert_eq!(trees.lines().count(), 300);
    for t in piecewise_lab::data::treebank::parse_trees(&trees, "train.mrg").unwrap() {
        let n = t.words().len();
        assert!((3..=10).contains(&n), "{n} words: {t}");
    }
    // The grammar family trains on it and scores its test trees.
    let out = dir.path().join("run");
    run(&[
        "train",
        "--model",
        "grammar",
        "--estimator",
        "memm",
        "--train",
        train.to_str().unwrap(),
        "--test",
        test.to_str().unwrap(),
        "--max-iter",
        "30",
        "--out",
        out.to_str().unwrap(),
    ]);
    let s: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert!(s["test"]["segments"]["f1"].as_f64().unwrap() > 80.0, "{s}");
    // Bounds are checked before anything is drawn.
    let o = bin()
        .args(["generate", "treebank", "--min-words", "20", "--out"])
        .arg(dir.path().join("x.mrg"))
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--min-words"));
}

/// `gui --lesson` names the lessons there are when it is given one that is not, before any
/// window opens (no display is needed for the error).
#[test]
fn gui_names_the_lessons_when_asked_for_a_missing_one() {
    let o = bin()
        .args(["gui", "--lesson", "42"])
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("no lesson \"42\"") && err.contains("09-grammar-chart-and-nota"),
        "{err}"
    );
    let o = bin()
        .args(["gui", "--step", "2"])
        .env_remove("DISPLAY")
        .output()
        .unwrap();
    assert!(!o.status.success(), "--step needs --lesson");
    let o = bin()
        .args(["gui", "--lesson", "9", "--step", "5"])
        .env_remove("DISPLAY")
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("has steps 1 to 4"), "{err}");
}

#[test]
fn completions_name_the_commands_and_their_flags() {
    for shell in ["bash", "zsh", "fish"] {
        let o = bin().args(["completions", shell]).output().unwrap();
        assert!(o.status.success(), "{shell}");
        let s = String::from_utf8(o.stdout).unwrap();
        for word in ["piecewise-lab", "reproduce", "resume", "checkpoint-every"] {
            assert!(s.contains(word), "{shell}: no {word}");
        }
    }
    let o = bin().args(["completions", "tcsh"]).output().unwrap();
    assert!(!o.status.success());
}

/// `compare`'s differences all read A − B (positive: A better) in the table and the JSON, and
/// with four runs (six pairs) each pair's p is Holm-adjusted — checked against Holm's rule
/// computed here; three runs get no Holm column.
#[test]
fn compare_signs_agree_and_holm_adjusts_four_runs() {
    let dir = tempfile::tempdir().unwrap();
    let (train, test) = generate(dir.path());
    let out = dir.path().join("cmp").display().to_string();
    let o = run(&[
        "compare",
        "--train",
        &train,
        "--test",
        &test,
        "--template",
        TEMPLATE,
        "--estimators",
        "ml,pl,pw,pwpl",
        "--max-iter",
        "15",
        "--out",
        &out,
        "--json",
    ]);
    let table: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let rows = table["runs"].as_array().unwrap();
    let names: Vec<&str> = rows
        .iter()
        .map(|r| r["estimator"].as_str().unwrap())
        .collect();
    // The six pairs, A before B as the engine orders them.
    let mut pairs = vec![];
    for (i, row) in rows.iter().enumerate() {
        for other in &names[i + 1..] {
            pairs.push(row["significance"][*other].clone());
        }
    }
    assert_eq!(pairs.len(), 6);
    let sequences = 40.0;
    for p in &pairs {
        let t = &p["tokens"];
        let d = t["only_a"].as_f64().unwrap() - t["only_b"].as_f64().unwrap();
        // Right tokens per sequence A − B is (only A − only B) / sequences, exactly.
        let mean = p["paired_t"]["mean_difference"].as_f64().unwrap();
        assert!((mean * sequences - d).abs() < 1e-9, "{p}");
        let boot = p["bootstrap"]["difference"].as_f64().unwrap();
        assert!(boot.signum() == d.signum() || d == 0.0, "{p}");
    }
    // Holm by hand: sort the McNemar p's, multiply the i-th smallest by 6 − i, keep the running
    // maximum, cap at 1.
    let ps: Vec<f64> = pairs
        .iter()
        .map(|p| p["tokens"]["p"].as_f64().unwrap())
        .collect();
    let mut order: Vec<usize> = (0..6).collect();
    order.sort_by(|&a, &b| ps[a].total_cmp(&ps[b]));
    let mut want = [0.0; 6];
    let mut running: f64 = 0.0;
    for (rank, &i) in order.iter().enumerate() {
        running = running.max((ps[i] * (6 - rank) as f64).min(1.0));
        want[i] = running;
    }
    for (p, w) in pairs.iter().zip(want) {
        let h = p["holm_p"].as_f64().expect("a Holm p with six pairs");
        assert!((h - w).abs() <= 1e-12 * w.max(1e-300), "{h} against {w}");
        assert!(h >= p["tokens"]["p"].as_f64().unwrap());
    }
    // The table: one sign convention, said in the header; a Holm column and its note.
    let dirs: Vec<String> = names.iter().map(|n| format!("{out}/{n}")).collect();
    let mut args = vec!["compare", "--runs"];
    args.extend(dirs.iter().map(String::as_str));
    let text = stdout(&run(&args));
    assert!(
        text.contains("every difference is A − B (positive: A better)"),
        "{text}"
    );
    assert!(
        text.contains("bootstrap 95 % interval of token accuracy in points"),
        "{text}"
    );
    assert!(
        text.contains("Holm p") && text.contains("adjusted for the 6 pairs"),
        "{text}"
    );
    let lines: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("A "))
        .skip(1)
        .take(6)
        .collect();
    for (l, p) in lines.iter().zip(&pairs) {
        let f: Vec<&str> = l.split_whitespace().collect();
        let d = f[2].parse::<f64>().unwrap() - f[3].parse::<f64>().unwrap();
        let right: f64 = f[5].parse().unwrap();
        let boot: f64 = f[8].parse().unwrap();
        for x in [right, boot] {
            assert!(x.signum() == d.signum() || d == 0.0 || x == 0.0, "{l}");
        }
        let holm: f64 = f[11].parse().unwrap();
        let want = p["holm_p"].as_f64().unwrap();
        assert!((holm - want).abs() <= 1e-3 * want.max(1e-300), "{l}");
    }
    // Three runs, three pairs: no Holm column.
    let text = stdout(&run(&["compare", "--runs", &dirs[0], &dirs[1], &dirs[2]]));
    assert!(!text.contains("Holm"), "{text}");
}
