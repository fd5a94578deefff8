//! Logs and provenance: off a terminal `train` writes plain lines (the setup, progress, every
//! evaluation) to standard error, `--quiet` none; `summary.json` says who ran it, where, when
//! and with which build; `--version` names the commit.

use serde_json::Value;
use std::process::Command;

const SAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/sample_data/hmm-a0.5-");
const TEMPLATE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/templates/hmm.tpl");

fn train(out: &std::path::Path, extra: &[&str]) -> std::process::Output {
    let (train, test) = (
        format!("{SAMPLE}train.conll"),
        format!("{SAMPLE}test.conll"),
    );
    let o = Command::new(env!("CARGO_BIN_EXE_piecewise-lab"))
        .args([
            "train",
            "--train",
            &train,
            "--test",
            &test,
            "--template",
            TEMPLATE,
        ])
        .args([
            "--max-iter",
            "6",
            "--eval-every",
            "2",
            "--threads",
            "2",
            "--out",
        ])
        .arg(out)
        .args(extra)
        .env("PIECEWISE_HOST", "node-a.cluster")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    o
}

/// Standard error to a pipe, as to a file: a line per evaluation, the setup line, progress.
#[test]
fn off_a_terminal_train_logs_plain_lines_and_quiet_none() {
    let dir = tempfile::tempdir().unwrap();
    let o = train(&dir.path().join("run"), &[]);
    let log = String::from_utf8(o.stderr).unwrap();
    assert!(log.contains("training ml on "), "{log}");
    for it in [2, 4, 6] {
        assert!(
            log.contains(&format!("iteration {it}: test accuracy ")),
            "evaluation {it}: {log}"
        );
    }
    assert!(log.contains("iteration 1: objective "), "{log}");
    let quiet = train(&dir.path().join("quiet"), &["--quiet"]);
    assert_eq!(String::from_utf8(quiet.stderr).unwrap(), "");
}

/// `summary.json` records host, user, start and end (UTC, RFC 3339), version and commit, and the
/// commit is the one `--version` names.
#[test]
fn a_run_records_where_when_and_which_build() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    train(&out, &["--quiet"]);
    let s: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let p = &s["provenance"];
    assert_eq!(p["host"], "node-a.cluster");
    let rfc3339 = |v: &Value| {
        let t = v.as_str().unwrap_or_default();
        let b = t.as_bytes();
        assert!(
            t.len() == 20 && b[4] == b'-' && b[10] == b'T' && b[19] == b'Z',
            "not RFC 3339 UTC: {v}"
        );
        t.to_string()
    };
    let (started, ended) = (rfc3339(&p["started"]), rfc3339(&p["ended"]));
    assert!(started <= ended, "{started} after {ended}");
    assert_eq!(p["version"], env!("CARGO_PKG_VERSION"));
    let version = Command::new(env!("CARGO_BIN_EXE_piecewise-lab"))
        .arg("--version")
        .output()
        .unwrap();
    let version = String::from_utf8(version.stdout).unwrap();
    let commit = p["commit"].as_str().unwrap();
    assert!(!commit.is_empty());
    assert!(
        version.contains(&format!("(commit {commit})")),
        "{version} against {commit}"
    );
    assert!(!p["user"].as_str().unwrap_or_default().is_empty());
}
