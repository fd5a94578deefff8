//! CRFsuite's data format as an input: a file written by a small Python feature extractor
//! (`scripts/crfsuite_features.py`) trains to the same model as the CoNLL file with the
//! equivalent CRF++ template; real-valued attributes train; malformed lines are file:line errors.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_piecewise-lab"))
}

fn run(args: &[&str]) -> Output {
    let o = bin().args(args).output().unwrap();
    assert!(
        o.status.success(),
        "{args:?} failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

const TEMPLATE: &str =
    "U00:%x[-1,0]\nU01:%x[0,0]\nU02:%x[1,0]\nU03:%x[0,1]\nU04:%x[-1,1]/%x[0,1]\nB\n";

/// HMM-mixture data with a second observation column (a "POS" from the word's last
/// character), so the template reads two columns.
fn data(dir: &Path) -> (String, String) {
    let p = |n: &str| dir.join(n).display().to_string();
    run(&[
        "generate",
        "hmm-mixture",
        "--alpha",
        "0.5",
        "--seed",
        "9",
        "--sequences",
        "50",
        "--length",
        "10",
        "--out",
        &p("raw-train.conll"),
        "--test-sequences",
        "30",
        "--test-out",
        &p("raw-test.conll"),
    ]);
    for (raw, out) in [
        ("raw-train.conll", "train.conll"),
        ("raw-test.conll", "test.conll"),
    ] {
        let text = std::fs::read_to_string(dir.join(raw)).unwrap();
        let mut o = String::new();
        for line in text.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.is_empty() {
                o.push('\n');
                continue;
            }
            let pos = format!("P{}", f[0].chars().last().unwrap());
            o.push_str(&format!("{} {pos} {}\n", f[0], f[f.len() - 1]));
        }
        std::fs::write(dir.join(out), o).unwrap();
    }
    (p("train.conll"), p("test.conll"))
}

fn python(args: &[&str]) -> bool {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/crfsuite_features.py");
    match Command::new("python3").arg(script).args(args).status() {
        Ok(s) => {
            assert!(s.success(), "the feature extractor failed");
            true
        }
        Err(e) => {
            eprintln!("skipping: python3 is not available ({e})");
            false
        }
    }
}

/// `dump` as (template, feature, column) → weight.
fn weights(run_dir: &str, dir: &Path) -> BTreeMap<String, f64> {
    let tsv = dir.join("w.tsv");
    run(&[
        "dump",
        "--model",
        run_dir,
        "--out",
        &tsv.display().to_string(),
    ]);
    std::fs::read_to_string(&tsv)
        .unwrap()
        .lines()
        .map(|l| {
            let (k, w) = l.rsplit_once('\t').unwrap();
            (k.to_string(), w.parse().unwrap())
        })
        .collect()
}

fn accuracy(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .find(|l| l.starts_with("accuracy"))
        .unwrap_or_default()
        .to_string()
}

#[test]
fn a_python_extractor_trains_the_same_model_as_the_template() {
    let dir = tempfile::tempdir().unwrap();
    let (train, test) = data(dir.path());
    let p = |n: &str| dir.path().join(n).display().to_string();
    if !python(&[&train, &p("train.crfsuite")]) {
        return;
    }
    python(&[&test, &p("test.crfsuite")]);
    std::fs::write(dir.path().join("t.tpl"), TEMPLATE).unwrap();
    let common = [
        "--sigma2",
        "10",
        "--max-iter",
        "40",
        "--estimator",
        "ml",
        "--threads",
        "1",
    ];
    let a = run(&[
        &[
            "train",
            "--train",
            &train,
            "--test",
            &test,
            "--template",
            &p("t.tpl"),
            "--out",
            &p("conll"),
        ][..],
        &common[..],
    ]
    .concat());
    let b = run(&[
        &[
            "train",
            "--train",
            &p("train.crfsuite"),
            "--test",
            &p("test.crfsuite"),
            "--out",
            &p("crfs"),
        ][..],
        &common[..],
    ]
    .concat());
    let (wa, wb) = (
        weights(&p("conll"), dir.path()),
        weights(&p("crfs"), dir.path()),
    );
    assert_eq!(wa.len(), wb.len(), "same parameters");
    for (k, x) in &wa {
        let y = wb
            .get(k)
            .unwrap_or_else(|| panic!("{k} is missing from the CRFsuite model"));
        assert!((x - y).abs() < 1e-9, "{k}: {x} vs {y}");
    }
    assert_eq!(accuracy(&a), accuracy(&b), "same predictions");
    // Prediction writes CRFsuite data back, the predicted label first.
    run(&[
        "predict",
        "--model",
        &p("crfs"),
        "--data",
        &p("test.crfsuite"),
        "--out",
        &p("pred.crfsuite"),
    ]);
    let pred = std::fs::read_to_string(dir.path().join("pred.crfsuite")).unwrap();
    assert!(
        pred.lines().next().unwrap().contains("\tU00\\:_B-1\t"),
        "{}",
        &pred[..80]
    );
    // Real-valued attributes: `len` gets weights.
    python(&[&train, &p("real.crfsuite"), "--real"]);
    run(&[
        &["train", "--train", &p("real.crfsuite"), "--out", &p("real")][..],
        &common[..],
    ]
    .concat());
    let wr = weights(&p("real"), dir.path());
    assert!(wr
        .iter()
        .any(|(k, w)| k.starts_with("state\tlen\t") && *w != 0.0));
}

#[test]
fn malformed_crfsuite_lines_are_file_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("bad.crfsuite");
    for (text, line, what) in [
        ("O\tw=a\nO\tw=b:x1\n", ":2:", "x1"),
        ("O\tw=a\n\n\tw=b\n", ":3:", "empty label"),
        ("O\t:3\n", ":1:", "empty name"),
    ] {
        std::fs::write(&f, text).unwrap();
        let o = bin()
            .args(["train", "--train", &f.display().to_string(), "--out"])
            .arg(dir.path().join("r"))
            .arg("--force")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success());
        assert!(
            err.contains("bad.crfsuite") && err.contains(line) && err.contains(what),
            "{err}"
        );
    }
}

/// The same CRFsuite bytes named `x.crfsuite`, `x.crfsuite.txt` (the usual name) and `x.txt`
/// read alike, labels from the first field; a CoNLL file stays columns, label last.
#[test]
fn crfsuite_files_are_known_by_name_or_content_never_read_as_columns() {
    use piecewise_lab::data::crfsuite::{is_crfsuite, looks_like_crfsuite};
    use piecewise_lab::data::read_corpus;
    let dir = tempfile::tempdir().unwrap();
    let bytes = "B-NP\tw[0]=He\tpos=PRP\nB-VP\tw[0]=reckons\tpos=VBZ\tlen:7\n\nO\tw[0]=.\n";
    let labels = |name: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        assert!(is_crfsuite(&p), "{name}");
        read_corpus(&p)
            .unwrap()
            .sequences
            .iter()
            .map(|s| s.labels.clone())
            .collect::<Vec<_>>()
    };
    let want = vec![
        vec!["B-NP".to_string(), "B-VP".to_string()],
        vec!["O".to_string()],
    ];
    for name in ["x.crfsuite", "x.crfsuite.txt", "x.txt"] {
        assert_eq!(labels(name), want, "{name}");
    }
    let conll = dir.path().join("c.txt");
    std::fs::write(&conll, "He PRP B-NP\nreckons VBZ B-VP\n").unwrap();
    assert!(!is_crfsuite(&conll));
    assert_eq!(
        read_corpus(&conll).unwrap().sequences[0].labels,
        ["B-NP", "B-VP"]
    );
    // Tab-separated columns are not CRFsuite either.
    assert!(!looks_like_crfsuite(b"He\tPRP\tB-NP\nreckons\tVBZ\tB-VP\n"));
}
