//! Issue 21: faults that lose nothing. A run killed mid-training reads as interrupted (and
//! `eval` says so); `train --out` refuses a finished run, an interrupted one and a non-empty
//! folder unless `--force`; two writers of one directory are refused; an output path that is a
//! file, a read-only directory and a full disk are errors before training; no temporary files
//! are left behind.

use piecewise_lab::run::store::{is_claimed, RunDir, RUN_FILES};
use piecewise_lab::run::RunFiles;
use piecewise_lab::run::{Existing, TrainedRun};
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
    assert_eq!(RunFiles::at(&out).status().as_deref(), Some("running"));
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
    assert_eq!(RunFiles::at(&out).status().as_deref(), Some("interrupted"));
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
    assert_eq!(RunFiles::at(&out).status().as_deref(), Some("finished"));
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
    assert_eq!(RunFiles::at(&out).status().as_deref(), Some("failed"));
}

// ---- Issue 42: output targets, standard output, bounds, non-finite weights, long tokens ----

/// A private device node made by `mknod` in `dir` (never a system path): `/dev/null`'s (1, 3)
/// or `/dev/full`'s (1, 7). `None`, with a notice, where this user may not make one.
fn private_node(dir: &Path, name: &str, minor: u32) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let p = dir.join(name);
    let c = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
    // SAFETY: mknod on a NUL-terminated path inside a temporary directory.
    let r = unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, minor)) };
    if r != 0 {
        eprintln!(
            "notice: mknod not permitted here ({}); the {name} case is skipped",
            std::io::Error::last_os_error()
        );
        return None;
    }
    Some(p)
}

fn generate_to(out: &Path) -> Output {
    bin()
        .args([
            "generate",
            "hmm-mixture",
            "--alpha",
            "0.5",
            "--sequences",
            "3",
            "--length",
            "4",
            "--out",
        ])
        .arg(out)
        .output()
        .unwrap()
}

#[test]
fn out_writes_through_links_and_never_replaces_a_device() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempfile::tempdir().unwrap();
    // A device node: written in place, still a device afterwards (as root, `--out /dev/null`
    // once replaced the system's /dev/null with a file).
    if let Some(null) = private_node(dir.path(), "null", 3) {
        let o = generate_to(&null);
        assert!(o.status.success(), "{}", stderr(&o));
        let ft = std::fs::symlink_metadata(&null).unwrap().file_type();
        assert!(ft.is_char_device(), "--out turned the device into {ft:?}");
    }
    // A symlink: the file it names is replaced, the link stays.
    let real = dir.path().join("real.conll");
    std::fs::write(&real, "old\n").unwrap();
    let link = dir.path().join("link.conll");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let o = generate_to(&link);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    let text = std::fs::read_to_string(&real).unwrap();
    assert!(
        text.lines().count() > 3 && !text.starts_with("old"),
        "{text}"
    );
    // `-`: standard output.
    let o = generate_to(Path::new("-"));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).lines().count() > 3);
    // A missing folder is made, as before.
    let deep = dir.path().join("a/b/c.conll");
    assert!(generate_to(&deep).status.success());
    assert!(deep.is_file());
}

#[test]
fn a_full_standard_output_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let Some(full) = private_node(dir.path(), "full", 7) else {
        return;
    };
    let data = root().join("sample_data/hmm-a0.5-train.conll");
    let lists: [&[&str]; 3] = [&["info"], &["reproduce", "--list"], &["theory", "--m", "3"]];
    for args in lists {
        let mut c = bin();
        c.args(args);
        if args == ["info"] {
            c.arg(&data);
        }
        let o = c
            .stdout(std::fs::OpenOptions::new().write(true).open(&full).unwrap())
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains("<stdout>") && !err.contains("panicked"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn numbers_from_specs_and_flags_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    // --threads far beyond the cores: refused at once, naming the flag.
    let t = Instant::now();
    let o = bin()
        .args(["train", "--train"])
        .arg(root().join("sample_data/hmm-a0.5-train.conll"))
        .args(["--threads", "10000", "--out"])
        .arg(dir.path().join("t"))
        .output()
        .unwrap();
    let err = stderr(&o);
    assert!(
        !o.status.success() && err.contains("--threads") && err.contains("10000"),
        "{err}"
    );
    assert!(t.elapsed() < Duration::from_secs(20));
    // A knob's range holds on the command line too.
    let o = train(&dir.path().join("p"), &["--period", "99999999"]);
    assert!(
        !o.status.success() && stderr(&o).contains("--period"),
        "{}",
        stderr(&o)
    );
    // spec.json: the L-BFGS history (2^31 pairs once asked for 120 GB; 2^63 panicked) and
    // the thread count.
    let ok = train(&dir.path().join("base"), &[]);
    assert!(ok.status.success(), "{}", stderr(&ok));
    let spec: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("base/spec.json")).unwrap())
            .unwrap();
    let optimiser = |field: &str, v: serde_json::Value| {
        let mut s = spec.clone();
        s["optimiser"][field] = v;
        s
    };
    let mut threads = spec.clone();
    threads["threads"] = serde_json::json!(1u64 << 40);
    for (k, (s, says)) in [
        (optimiser("m", serde_json::json!(1u64 << 31)), "optimiser.m"),
        (optimiser("m", serde_json::json!(1u64 << 63)), "optimiser.m"),
        (
            optimiser("max_iter", serde_json::json!(u64::MAX)),
            "optimiser.max_iter",
        ),
        (
            optimiser("delta", serde_json::json!(-1.0)),
            "optimiser.delta",
        ),
        (threads, "threads"),
    ]
    .into_iter()
    .enumerate()
    {
        let p = dir.path().join("spec.json");
        std::fs::write(&p, s.to_string()).unwrap();
        let o = bin()
            .args(["train", "--spec"])
            .arg(&p)
            .arg("--out")
            .arg(dir.path().join(format!("s-{k}")))
            .output()
            .unwrap();
        assert!(
            !o.status.success() && stderr(&o).contains(says),
            "{}",
            stderr(&o)
        );
    }
}

#[test]
fn non_finite_weights_are_refused_naming_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let o = train(&run, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let dump = bin().args(["dump", "--model"]).arg(&run).output().unwrap();
    assert!(dump.status.success(), "{}", stderr(&dump));
    let text = String::from_utf8(dump.stdout).unwrap();
    for bad in ["NaN", "inf", "-inf"] {
        // The third weight line's value replaced.
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        let k = 2;
        let mut f: Vec<&str> = lines[k].split('\t').collect();
        *f.last_mut().unwrap() = bad;
        lines[k] = f.join("\t");
        let w = dir.path().join("w.tsv");
        std::fs::write(&w, lines.join("\n")).unwrap();
        let o = bin()
            .args(["objective", "--data"])
            .arg(root().join("sample_data/hmm-a0.5-train.conll"))
            .arg("--template")
            .arg(root().join("assets/templates/hmm.tpl"))
            .arg("--weights")
            .arg(&w)
            .output()
            .unwrap();
        let err = stderr(&o);
        assert!(
            !o.status.success() && err.contains(&format!("w.tsv:{}:", k + 1)),
            "{bad}: {err}\n{}",
            String::from_utf8_lossy(&o.stdout)
        );
    }
    // weights.bin with a NaN: the run cannot be opened.
    let wb = run.join("weights.bin");
    let mut bytes = std::fs::read(&wb).unwrap();
    bytes[..8].copy_from_slice(&f64::NAN.to_le_bytes());
    std::fs::write(&wb, bytes).unwrap();
    let o = bin().args(["dump", "--model"]).arg(&run).output().unwrap();
    assert!(
        !o.status.success() && stderr(&o).contains("not a finite number"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn an_error_quotes_a_huge_token_cut_short() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("trees.mrg");
    std::fs::write(&f, "x".repeat(1 << 20)).unwrap();
    let o = bin()
        .args(["train", "--model", "grammar", "--train"])
        .arg(&f)
        .arg("--out")
        .arg(dir.path().join("run"))
        .output()
        .unwrap();
    let err = stderr(&o);
    assert!(!o.status.success(), "{err}");
    assert!(err.len() < 4_000, "{} bytes of error", err.len());
    assert!(err.contains("trees.mrg:1:") && err.contains('…'), "{err}");
    // EVALB's mode scores such a line as an error sentence and says why, cut short too.
    let o = bin()
        .args(["evalb", "--gold"])
        .arg(&f)
        .arg("--test")
        .arg(&f)
        .output()
        .unwrap();
    let err = stderr(&o);
    assert!(err.len() < 4_000, "{} bytes of error", err.len());
}

#[test]
fn a_summary_that_cannot_be_written_still_reads_failed() {
    let dir = tempfile::tempdir().unwrap();
    let Some(m) = Mount::tmpfs(&dir.path().join("small"), "size=64k") else {
        eprintln!("skipped: cannot mount a tmpfs here (not root?)");
        return;
    };
    let run = m.0.join("run");
    std::fs::create_dir(&run).unwrap();
    let mut summary = piecewise_lab::run::RunSummary {
        status: "running".into(),
        estimator: "ml".into(),
        pid: Some(std::process::id()),
        model_description: "x".repeat(16_000),
        ..Default::default()
    };
    piecewise_lab::util::write_json_atomic(&run.join("summary.json"), &summary).unwrap();
    // Fill the file system to the last byte.
    let mut filler = std::fs::File::create(m.0.join("filler")).unwrap();
    let block = vec![0u8; 4096];
    while std::io::Write::write_all(&mut filler, &block).is_ok() {}
    while std::io::Write::write_all(&mut filler, &[0]).is_ok() {}
    summary.status = "failed".into();
    summary.error = Some("disk full".into());
    assert!(
        piecewise_lab::util::write_json_atomic(&run.join("summary.json"), &summary).is_err(),
        "the disk should be full"
    );
    piecewise_lab::run::execute::record_failure(&RunFiles::at(&run), &summary).unwrap();
    assert_eq!(RunFiles::at(&run).status().as_deref(), Some("failed"));
}

/// M10: under a file-size limit (`ulimit -f`) a checkpoint too large for it fails with "File
/// too large" instead of the kernel's SIGXFSZ ending the process (status 153): the failure is
/// reported once and the run finishes, its own files (well under the limit) written.
#[test]
fn a_checkpoint_past_the_file_size_limit_is_reported_and_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    // 128 KiB: the weights are 31 KB, a checkpoint 15 times that.
    let o = Command::new("bash")
        .arg("-c")
        .arg("ulimit -f 128 && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_piecewise-lab"))
        .args(["train", "--train"])
        .arg(root().join("sample_data/hmm-a0.5-train.conll"))
        .arg("--template")
        .arg(root().join("assets/templates/hmm.tpl"))
        .args(["--estimator", "pl", "--max-iter", "6", "--threads", "1"])
        .args(["--checkpoint-every", "1", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_eq!(
        err.matches("a checkpoint could not be written").count(),
        1,
        "{err}"
    );
    assert!(err.contains("File too large"), "{err}");
    assert_eq!(
        RunFiles::at(&out).summary().unwrap().status,
        "finished",
        "{err}"
    );
    assert!(out.join("weights.bin").exists());
    assert!(!out.join("checkpoint.bin").exists());
}
