//! Issue 65 (robustness, round 4), each finding as the command a user or an attacker would
//! run: nothing the user made is deleted or clobbered, and work that would not fit the memory
//! limit is refused before it allocates, with the estimate named. Several run the binary under
//! an address-space limit (`RLIMIT_AS`), so a command that allocated what it was refused would
//! abort instead of printing its error.

use std::path::Path;
use std::process::{Command, Output};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_piecewise-lab"))
}

/// The binary run with `args`, under an address-space limit of `limit` bytes when given.
fn run_limited(dir: &Path, args: &[&str], limit: Option<u64>) -> Output {
    let mut c = bin();
    c.current_dir(dir).args(args);
    #[cfg(unix)]
    if let Some(bytes) = limit {
        use std::os::unix::process::CommandExt;
        // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            c.pre_exec(move || {
                let l = libc::rlimit {
                    rlim_cur: bytes,
                    rlim_max: bytes,
                };
                if libc::setrlimit(libc::RLIMIT_AS, &l) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    c.output().unwrap()
}

fn run_in(dir: &Path, args: &[&str]) -> Output {
    run_limited(dir, args, None)
}

fn ok(o: &Output) -> &Output {
    assert!(
        o.status.success(),
        "failed:\n{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// The error a refused command printed; it must have exited 1 (not aborted or been killed).
fn refused(o: &Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(1), "not a clean refusal: {err}");
    err
}

const TEMPLATE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/templates/hmm.tpl");
/// One observation column: a short template keeps the feature estimate small.
const SHORT_TEMPLATE: &str = "U00:%x[0,0]\nB\n";

fn generate(dir: &Path) {
    ok(&run_in(
        dir,
        &[
            "generate",
            "hmm-mixture",
            "--alpha",
            "0.5",
            "--seed",
            "3",
            "--sequences",
            "60",
            "--length",
            "12",
            "--out",
            "train.conll",
            "--test-sequences",
            "20",
            "--test-out",
            "test.conll",
        ],
    ));
}

#[test]
fn a_plan_never_deletes_a_plan_folder_the_user_made() {
    let tmp = tempfile::tempdir().unwrap();
    let proj = tmp.path();
    generate(proj);
    std::fs::create_dir_all(proj.join("plan/q3")).unwrap();
    std::fs::write(proj.join("plan/q3/roadmap.md"), "x").unwrap();
    let sweep = |out: &str| {
        run_in(
            proj,
            &[
                "sweep",
                "--train",
                "train.conll",
                "--test",
                "train.conll",
                "--template",
                TEMPLATE,
                "--families",
                "pl1/fl",
                "--lambdas",
                "0.5",
                "--betas",
                "1",
                "--max-iter",
                "2",
                "--threads",
                "1",
                "--out",
                out,
                "--plan",
            ],
        )
    };
    // H1: `--out .` in a project folder once deleted its `plan/` recursively.
    let err = refused(&sweep("."));
    assert!(
        err.contains("plan") && err.contains("not written by this program"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(proj.join("plan/q3/roadmap.md")).unwrap(),
        "x"
    );
    // A plan folder of the program's own is replaced: its stage files and specs, not the
    // user's notes beside them.
    ok(&sweep("s"));
    let plan = proj.join("s/plan");
    assert!(plan.join(".piecewise-lab-plan").is_file());
    assert!(plan.join("stage-1.txt").is_file());
    std::fs::write(plan.join("stage-9.txt"), "stale").unwrap();
    std::fs::write(plan.join("notes.md"), "mine").unwrap();
    ok(&sweep("s"));
    assert!(
        !plan.join("stage-9.txt").exists(),
        "a stale stage file is left behind"
    );
    assert_eq!(
        std::fs::read_to_string(plan.join("notes.md")).unwrap(),
        "mine"
    );
    assert!(plan.join("stage-1.txt").is_file());
}

#[cfg(unix)]
#[test]
fn out_never_replaces_a_file_the_user_could_not_write() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let gen = |out: &str| {
        run_in(
            dir,
            &[
                "generate",
                "hmm-mixture",
                "--alpha",
                "0.5",
                "--sequences",
                "2",
                "--length",
                "3",
                "--out",
                out,
            ],
        )
    };
    // H5: a read-only file (as root too, which may rename over anything in a writable folder).
    std::fs::write(dir.join("ro.conll"), "keep").unwrap();
    std::fs::set_permissions(dir.join("ro.conll"), std::fs::Permissions::from_mode(0o444)).unwrap();
    let err = refused(&gen("ro.conll"));
    assert!(
        err.contains("ro.conll") && err.contains("read-only"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("ro.conll")).unwrap(),
        "keep"
    );
    // Another user's file, writable by its owner only: refused even for root.
    if unsafe { libc::geteuid() } == 0 {
        let theirs = dir.join("theirs.conll");
        std::fs::write(&theirs, "theirs").unwrap();
        let c = std::ffi::CString::new(theirs.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::chown(c.as_ptr(), 54321, 54321) }, 0);
        let err = refused(&gen("theirs.conll"));
        assert!(err.contains("another user's file"), "{err}");
        assert_eq!(std::fs::read_to_string(&theirs).unwrap(), "theirs");
    }
    // A writable file of the user's own is replaced as before.
    std::fs::write(dir.join("mine.conll"), "old").unwrap();
    ok(&gen("mine.conll"));
    assert_ne!(
        std::fs::read_to_string(dir.join("mine.conll")).unwrap(),
        "old"
    );
}

/// A gzip file holding one sentence of `tokens` tokens: a few hundred kilobytes that expand to
/// hundreds of megabytes.
fn gzip_bomb(path: &Path, tokens: usize) {
    use std::io::Write;
    let f = std::fs::File::create(path).unwrap();
    let mut gz = flate2::write::GzEncoder::new(f, flate2::Compression::best());
    let line = b"w O\n".repeat(4096);
    for _ in 0..tokens / 4096 {
        gz.write_all(&line).unwrap();
    }
    gz.finish().unwrap();
}

#[test]
fn one_enormous_sentence_is_refused_before_it_is_held() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // H3: 8 M tokens ≈ 1 GB once read (the input cap bounds bytes, not what they expand to).
    gzip_bomb(&dir.join("bomb.conll.gz"), 8 << 20);
    for args in [
        &["info", "bomb.conll.gz"][..],
        &[
            "train",
            "--train",
            "bomb.conll.gz",
            "--template",
            TEMPLATE,
            "--out",
            "run",
        ][..],
    ] {
        let mut a = args.to_vec();
        a.extend(["--memory-limit", "256M"]);
        let err = refused(&run_limited(dir, &a, Some(1 << 30)));
        assert!(
            err.contains("memory limit of 256.0 MB") && err.contains("bomb.conll.gz"),
            "{err}"
        );
        assert!(err.contains("into sentences"), "{err}");
    }
}

#[test]
fn a_token_of_megabytes_is_refused_with_its_line() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // M6: one 1 GB token once trained at 11.8 GB and wrote a 4 GB model.json.
    let long = "x".repeat(2 << 20);
    std::fs::write(dir.join("long.conll"), format!("a O\n{long} B\n\nb O\n")).unwrap();
    let err = refused(&run_in(
        dir,
        &[
            "train",
            "--train",
            "long.conll",
            "--template",
            TEMPLATE,
            "--out",
            "run",
        ],
    ));
    assert!(
        err.contains("long.conll:2") && err.contains("column 1 is 2.0 MB"),
        "{err}"
    );
}

/// Labelled data with `labels` distinct labels, one token each.
fn many_labels(path: &Path, labels: usize) {
    let mut s = String::new();
    for k in 0..labels {
        s.push_str(&format!("w{} L{k}\n", k % 7));
        if k % 20 == 19 {
            s.push('\n');
        }
    }
    std::fs::write(path, s).unwrap();
}

#[test]
fn many_labels_are_refused_before_their_tables_are_made() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("short.tpl"), SHORT_TEMPLATE).unwrap();
    let train = |file: &str, limit: &str| {
        run_limited(
            dir,
            &[
                "train",
                "--train",
                file,
                "--template",
                "short.tpl",
                "--max-iter",
                "1",
                "--out",
                &format!("run-{file}"),
                "--memory-limit",
                limit,
            ],
            Some(2 << 30),
        )
    };
    // H4: 10⁵ labels make 10¹⁰ label pairs, more than a u32 table index (once truncated to 32
    // bits: a wrong-size error after 5.5 GB, or a 14 GB allocation at 10⁶ labels).
    many_labels(&dir.join("l100k.conll"), 100_000);
    let err = refused(&train("l100k.conll", "1G"));
    assert!(
        err.contains("10000000000 entries") && err.contains("table index"),
        "{err}"
    );
    // 10⁴ labels: 10⁸ pairs fit an index, and the weights' estimate is refused by the limit.
    many_labels(&dir.join("l10k.conll"), 10_000);
    let err = refused(&train("l10k.conll", "1G"));
    assert!(
        err.contains("memory limit of 1.0 GB") && err.contains("labels"),
        "{err}"
    );
}

#[test]
fn a_long_template_and_a_long_optimiser_history_are_refused_by_their_estimates() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    generate(dir);
    // M11: a 100,000-line template on 720 tokens (once 5.3 GB).
    let mut tpl = String::new();
    for k in 0..100_000 {
        tpl.push_str(&format!("U{k}:%x[0,0]\n"));
    }
    std::fs::write(dir.join("long.tpl"), tpl).unwrap();
    let err = refused(&run_limited(
        dir,
        &[
            "train",
            "--train",
            "train.conll",
            "--template",
            "long.tpl",
            "--out",
            "r1",
            "--memory-limit",
            "1G",
        ],
        Some(2 << 30),
    ));
    assert!(
        err.contains("100000 template lines") && err.contains("memory limit"),
        "{err}"
    );
    // M7: m = 1000 correction pairs of the model's weights.
    std::fs::write(dir.join("short.tpl"), SHORT_TEMPLATE).unwrap();
    ok(&run_in(
        dir,
        &[
            "train",
            "--train",
            "train.conll",
            "--template",
            "short.tpl",
            "--max-iter",
            "1",
            "--out",
            "r2",
        ],
    ));
    let mut spec: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("r2/spec.json")).unwrap()).unwrap();
    spec["optimiser"]["m"] = 1000.into();
    std::fs::write(dir.join("m1000.json"), spec.to_string()).unwrap();
    let err = refused(&run_in(
        dir,
        &[
            "train",
            "--spec",
            "m1000.json",
            "--out",
            "r3",
            "--memory-limit",
            "2M",
        ],
    ));
    assert!(err.contains("m = 1000 correction pairs"), "{err}");
}

#[test]
fn generate_streams_what_it_writes() {
    let tmp = tempfile::tempdir().unwrap();
    // M4: 10 M tokens once held ≈ 1.5 GB before writing; streamed, 1 GB of address space do.
    ok(&run_limited(
        tmp.path(),
        &[
            "generate",
            "hmm-mixture",
            "--alpha",
            "0.5",
            "--sequences",
            "500000",
            "--length",
            "20",
            "--out",
            "big.conll",
        ],
        Some(1 << 30),
    ));
    let len = std::fs::metadata(tmp.path().join("big.conll"))
        .unwrap()
        .len();
    assert!(len > 10_000_000 * 4, "{len}");
}

#[test]
fn one_stream_for_train_and_test_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let err = refused(&run_in(
        tmp.path(),
        &[
            "train",
            "--train",
            "-",
            "--test",
            "-",
            "--template",
            TEMPLATE,
            "--out",
            "r",
        ],
    ));
    assert!(err.contains("both read standard input"), "{err}");
}

#[test]
fn a_weight_too_large_to_score_is_refused_not_scored_minus_infinity() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    generate(dir);
    ok(&run_in(
        dir,
        &[
            "train",
            "--train",
            "train.conll",
            "--template",
            TEMPLATE,
            "--max-iter",
            "2",
            "--out",
            "r",
        ],
    ));
    let w = dir.join("r/weights.bin");
    let mut bytes = std::fs::read(&w).unwrap();
    bytes[..8].copy_from_slice(&1e308f64.to_le_bytes());
    std::fs::write(&w, bytes).unwrap();
    let err = refused(&run_in(
        dir,
        &["eval", "--model", "r", "--data", "test.conll"],
    ));
    assert!(
        err.contains("weights.bin") && err.contains("overflow"),
        "{err}"
    );
}

/// Trains `estimator` in `dir` on its `train.conll`, scored on `test` (as given).
fn train_in(dir: &Path, estimator: &str, test: &str, out: &str) {
    ok(&run_in(
        dir,
        &[
            "train",
            "--train",
            "train.conll",
            "--test",
            test,
            "--template",
            TEMPLATE,
            "--estimator",
            estimator,
            "--max-iter",
            "3",
            "--out",
            out,
        ],
    ));
}

fn compare_json(dir: &Path, runs: &str) -> serde_json::Value {
    let o = run_in(dir, &["compare", "--runs", runs, "--json"]);
    ok(&o);
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn compare_pairs_files_as_files_and_tests_no_damaged_summary() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    generate(&a);
    // b's training file has a's name and other data.
    ok(&run_in(
        &b,
        &[
            "generate",
            "hmm-mixture",
            "--alpha",
            "0.5",
            "--seed",
            "9",
            "--sequences",
            "30",
            "--length",
            "10",
            "--out",
            "train.conll",
        ],
    ));
    train_in(&a, "ml", "test.conll", "ml");
    // The same test file named another way.
    train_in(&a, "pl", &a.join("test.conll").display().to_string(), "pl");
    let test_b = a.join("test.conll").display().to_string();
    train_in(&b, "pw", &test_b, "pw");
    let elsewhere = tmp.path();
    let (ml, pl, pw) = (
        a.join("ml").display().to_string(),
        a.join("pl").display().to_string(),
        b.join("pw").display().to_string(),
    );
    // `A,,B` names two runs; from another folder, one test file named two ways pairs.
    let j = compare_json(elsewhere, &format!("{ml},,{pl}"));
    let text = j.to_string();
    assert!(!text.contains("not paired"), "{text}");
    assert!(!text.contains("different data"), "{text}");
    // Two training files of one name are two data sets.
    let j = compare_json(elsewhere, &format!("{ml},{pw}"));
    assert!(j.to_string().contains("trained on different data"), "{j}");
    // A summary whose per-item scores were zeroed is not tested (once a bootstrap of +36.97).
    let bad = a.join("pl-bad");
    std::fs::create_dir_all(&bad).unwrap();
    for f in [
        "spec.json",
        "summary.json",
        "model.json",
        "weights.bin",
        "curve.jsonl",
    ] {
        std::fs::copy(a.join("pl").join(f), bad.join(f)).unwrap();
    }
    let path = bad.join("summary.json");
    let mut s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let n = s["test"]["paired"]["tokens"].as_array().unwrap().len();
    s["test"]["paired"]["tokens"] = vec![0; n].into();
    std::fs::write(&path, s.to_string()).unwrap();
    let j = compare_json(elsewhere, &format!("{ml},{}", bad.display()));
    assert!(j.to_string().contains("the summary is damaged"), "{j}");
}
