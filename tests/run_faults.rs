//! Issue 21: faults that lose nothing. A run killed mid-training reads as interrupted (and
//! `eval` says so); `train --out` refuses a finished run, an interrupted one and a non-empty
//! folder unless `--force`; two writers of one directory are refused; an output path that is a
//! file, a read-only directory and a full disk are errors before training; no temporary files
//! are left behind.

use piecewise_lab::train::run::run_status;
use piecewise_lab::train::run_dir::{is_claimed, RunDir, RUN_FILES};
use piecewise_lab::train::{Existing, TrainedRun};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_piecewise-lab"))
}

/// `train` on the sample data into `out`, with extra arguments.
fn train(out: &Path, extra: &[&str]) -> Output {
    bin()
        .args(["train", "--train"])
        .arg(root().join("sample_data/hmm-a0.5-train.conll"))
        .arg("--template")
        .arg(root().join("assets/templates/hmm.tpl"))
        .args([
            "--estimator",
            "pl",
            "--max-iter",
            "3",
            "--threads",
            "1",
            "--out",
        ])
        .arg(out)
        .args(extra)
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Kills the child when dropped, so a failing assertion leaves no training process behind.
struct Killer(std::process::Child);
impl Drop for Killer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_killed_run_reads_as_interrupted_and_is_replaced_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    // A run that would go on for minutes: no prior, no stopping test.
    let child = bin()
        .args(["train", "--train"])
        .arg(root().join("sample_data/hmm-a0.5-train.conll"))
        .arg("--template")
        .arg(root().join("assets/templates/hmm.tpl"))
        .args([
            "--c2",
            "0",
            "--delta",
            "0",
            "--max-iter",
            "1000000",
            "--threads",
            "1",
        ])
        .arg("--out")
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut child = Killer(child);
    let t = Instant::now();
    while std::fs::read_to_string(out.join("curve.jsonl")).map_or(true, |c| c.lines().count() < 2) {
        assert!(
            t.elapsed() < Duration::from_secs(120),
            "the run never iterated"
        );
        assert!(child.0.try_wait().unwrap().is_none(), "the run ended early");
        std::thread::sleep(Duration::from_millis(5));
    }
    // While it trains: its directory is claimed, and reads as running.
    assert!(is_claimed(&out));
    assert_eq!(run_status(&out).as_deref(), Some("running"));
    let e = TrainedRun::open(&out).err().unwrap().to_string();
    assert!(e.contains("still training"), "{e}");
    let o = train(&out, &["--force"]);
    assert!(
        !o.status.success() && stderr(&o).contains("another run is writing this directory"),
        "a second writer is refused: {}",
        stderr(&o)
    );
    // Killed (SIGKILL: nothing runs after it).
    child.0.kill().unwrap();
    child.0.wait().unwrap();
    let summary = std::fs::read_to_string(out.join("summary.json")).unwrap();
    assert!(
        summary.contains("\"running\""),
        "the file still says running"
    );
    assert!(!is_claimed(&out));
    assert_eq!(run_status(&out).as_deref(), Some("interrupted"));
    let e = TrainedRun::open(&out).err().unwrap().to_string();
    assert!(e.contains("interrupted"), "{e}");
    let o = bin()
        .args(["eval", "--model"])
        .arg(&out)
        .arg("--data")
        .arg(root().join("sample_data/hmm-a0.5-test.conll"))
        .output()
        .unwrap();
    assert!(
        !o.status.success() && stderr(&o).contains("the run was interrupted"),
        "{}",
        stderr(&o)
    );
    // Not replaced unless asked.
    let o = train(&out, &[]);
    assert!(
        !o.status.success() && stderr(&o).contains("holds an interrupted run; --force"),
        "{}",
        stderr(&o)
    );
    // A temporary file a killed writer may leave is removed by the next run.
    std::fs::write(out.join(".summary.json.tmp-999999"), b"{").unwrap();
    let o = train(&out, &["--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        files(&out),
        [
            "curve.jsonl",
            "model.json",
            "spec.json",
            "summary.json",
            "weights.bin"
        ],
        "a finished run's files, and nothing else"
    );
    assert_eq!(run_status(&out).as_deref(), Some("finished"));
    TrainedRun::open(&out).unwrap();
    // A finished run is not overwritten either.
    let o = train(&out, &[]);
    assert!(
        !o.status.success() && stderr(&o).contains("holds a finished run; --force"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn output_paths_that_cannot_hold_a_run_are_refused_before_training() {
    let dir = tempfile::tempdir().unwrap();
    // A file where the directory should go.
    let file = dir.path().join("file");
    std::fs::write(&file, b"mine").unwrap();
    let o = train(&file, &["--force"]);
    assert!(
        !o.status.success() && stderr(&o).contains("exists and is not a directory"),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read(&file).unwrap(), b"mine");
    // A folder of other things: refused, then written beside them with --force.
    let notes = dir.path().join("notes");
    std::fs::create_dir(&notes).unwrap();
    std::fs::write(notes.join("todo.txt"), b"keep me").unwrap();
    let o = train(&notes, &[]);
    assert!(
        !o.status.success() && stderr(&o).contains("is not empty (1 entries: todo.txt)"),
        "{}",
        stderr(&o)
    );
    assert_eq!(files(&notes), ["todo.txt"]);
    let o = train(&notes, &["--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read(notes.join("todo.txt")).unwrap(), b"keep me");
    // Two writers in one process: the second claim is refused while the first holds it.
    let claimed = dir.path().join("claimed");
    let first = RunDir::claim(&claimed, Existing::Refuse).unwrap();
    let e = RunDir::claim(&claimed, Existing::Replace)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("another run is writing"), "{e}");
    drop(first);
    RunDir::claim(&claimed, Existing::Refuse).unwrap();
    assert!(RUN_FILES.contains(&"model.json"));
}

/// Mounts a small tmpfs (root only: skipped with a notice elsewhere).
struct Mount(PathBuf);
impl Mount {
    fn tmpfs(at: &Path, options: &str) -> Option<Mount> {
        std::fs::create_dir_all(at).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", options, "tmpfs"])
            .arg(at)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Mount(at.to_path_buf()))
    }
}
impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn read_only_and_full_file_systems_are_errors_before_training() {
    let dir = tempfile::tempdir().unwrap();
    let Some(ro) = Mount::tmpfs(&dir.path().join("ro"), "ro,size=1m") else {
        eprintln!(
            "skipped: cannot mount a tmpfs here (not root?); read-only and full disks untested"
        );
        return;
    };
    let o = train(&ro.0.join("run"), &[]);
    assert!(
        !o.status.success() && stderr(&o).contains("Read-only file system"),
        "{}",
        stderr(&o)
    );
    let Some(full) = Mount::tmpfs(&dir.path().join("full"), "size=256k") else {
        return;
    };
    let out = full.0.join("run");
    let t = Instant::now();
    let o = train(&out, &[]);
    let err = stderr(&o);
    assert!(
        !o.status.success() && err.contains("the run's files need about") && err.contains("free"),
        "{err}"
    );
    // Refused at setup: no iteration ran.
    let curve = std::fs::read_to_string(out.join("curve.jsonl")).unwrap_or_default();
    assert_eq!(curve.lines().count(), 0, "{curve}");
    assert!(t.elapsed() < Duration::from_secs(60));
    assert_eq!(run_status(&out).as_deref(), Some("failed"));
}
