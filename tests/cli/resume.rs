//! `train --resume`: a training process killed (SIGKILL, as by a node failure) or stopped by
//! SIGTERM (a batch system's time limit) after some iterations, resumed on its directory, ends
//! with `weights.bin` byte-identical to the run never stopped.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_piecewise-lab"))
}

fn train(data: &Path, out: &Path, extra: &[&str]) -> Command {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut c = bin();
    c.args(["train", "--train"])
        .arg(data)
        .arg("--template")
        .arg(root.join("assets/templates/hmm.tpl"))
        .args(["--max-iter", "25", "--threads", "1", "-q", "--out"])
        .arg(out)
        .args(extra);
    c
}

/// Waits until the run in `dir` has written `k` curve points and a checkpoint.
fn wait_for_iterations(child: &mut Child, dir: &Path, k: usize) {
    let start = Instant::now();
    loop {
        let points = std::fs::read_to_string(dir.join("curve.jsonl"))
            .map(|t| t.lines().count())
            .unwrap_or(0);
        if points >= k && dir.join("checkpoint.bin").exists() {
            return;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before {k} iterations could be seen"
        );
        assert!(start.elapsed() < Duration::from_secs(120), "no progress");
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn status(dir: &Path) -> String {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    v["status"].as_str().unwrap().to_string()
}

fn resume(dir: &Path) -> String {
    let o = bin()
        .arg("train")
        .arg("--resume")
        .arg(dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{err}");
    err
}

#[test]
fn a_killed_and_a_terminated_run_resume_to_the_weights_of_the_run_never_stopped() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("train.conll");
    let g = bin()
        .args([
            "generate",
            "hmm-mixture",
            "--alpha",
            "0.5",
            "--states",
            "12",
        ])
        .args(["--sequences", "8000", "--out"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(g.status.success());
    let whole = tmp.path().join("whole");
    assert!(train(&data, &whole, &[]).status().unwrap().success());
    let want = std::fs::read(whole.join("weights.bin")).unwrap();

    // SIGKILL: nothing runs after it; the last checkpoint (every iteration here) is what is left.
    let killed = tmp.path().join("killed");
    let mut child = train(&data, &killed, &["--checkpoint-every", "1"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_iterations(&mut child, &killed, 4);
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(status(&killed), "running", "as the kill left it");
    let err = resume(&killed);
    assert!(err.contains("resuming after iteration"), "{err}");
    assert!(std::fs::read(killed.join("weights.bin")).unwrap() == want);
    assert_eq!(status(&killed), "finished");

    // SIGTERM: the run stops at its iteration, writes a checkpoint there and says "cancelled".
    let term = tmp.path().join("term");
    let mut child = train(&data, &term, &["--checkpoint-minutes", "0"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_iterations_no_checkpoint(&mut child, &term, 3);
    let k = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(k.success());
    let code = child.wait().unwrap();
    assert!(!code.success());
    assert_eq!(status(&term), "cancelled");
    assert!(
        term.join("checkpoint.bin").exists(),
        "written as it stopped"
    );
    resume(&term);
    assert!(std::fs::read(term.join("weights.bin")).unwrap() == want);
    // Resumed again once finished: left as it is.
    let err = resume(&term);
    assert!(!err.contains("resuming"), "{err}");
}

fn wait_for_iterations_no_checkpoint(child: &mut Child, dir: &Path, k: usize) {
    let start = Instant::now();
    loop {
        let points = std::fs::read_to_string(dir.join("curve.jsonl"))
            .map(|t| t.lines().count())
            .unwrap_or(0);
        if points >= k {
            return;
        }
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        assert!(start.elapsed() < Duration::from_secs(120), "no progress");
        std::thread::sleep(Duration::from_millis(1));
    }
}
