//! Checkpoints and resuming: a run killed after K iterations (its directory as the kill left
//! it — the last checkpoint, a `running` summary no process holds, the curve so far) and
//! started again on that directory ends with the weights of the run never killed, byte for
//! byte; for ML and for NOTA's error-driven rounds (a schedule whose objective changes between
//! fits). A damaged checkpoint is refused, naming the file.

use piecewise_lab::estimators::{EstimatorSpec, NotaSelection};
use piecewise_lab::optim::{LbfgsSpec, Prior};
use piecewise_lab::run::checkpoint::{CheckpointPolicy, CHECKPOINT};
use piecewise_lab::run::{execute_with, Existing, ModelSpec, RunEvent, RunSpec, RunSummary};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

fn spec(estimator: EstimatorSpec) -> RunSpec {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    RunSpec {
        name: Some("t".into()),
        train: root.join("sample_data/hmm-a0.5-train.conll"),
        test: Some(root.join("sample_data/hmm-a0.5-test.conll")),
        template: Some(root.join("assets/templates/hmm.tpl")),
        model: ModelSpec::default(),
        estimator,
        optimiser: LbfgsSpec {
            max_iter: 40,
            // Small m, so pairs are recycled before the kill.
            m: 3,
            ..Default::default()
        },
        prior: Prior::from_c2(1.0),
        eval_every: 3,
        seed: 0,
        threads: 2,
        decode: Default::default(),
        train_sample: None,
        eval_train: false,
        per_state_scaling: false,
        subset_scaling: false,
        init_from: None,
    }
}

const EVERY_ITERATION: CheckpointPolicy = CheckpointPolicy {
    every_iterations: 1,
    every: None,
    at_cancel: true,
};

/// The run never killed, and copies of its directory as a kill after each of `kills`
/// iterations would have left it (taken when the next iteration is reported, when the
/// checkpoint on disk is the last one written before it).
fn run_and_copy_at(s: &RunSpec, root: &Path, kills: &[usize]) -> RunSummary {
    let whole = root.join("whole");
    let cancel = AtomicBool::new(false);
    let r = execute_with(
        s,
        &whole,
        Existing::Refuse,
        EVERY_ITERATION,
        &cancel,
        &mut |e| {
            if let RunEvent::Progress(p) = e {
                if let Some(k) = kills.iter().find(|k| **k + 1 == p.iteration) {
                    let to = root.join(format!("killed-{k}"));
                    std::fs::create_dir_all(&to).unwrap();
                    for f in ["spec.json", "summary.json", "curve.jsonl", CHECKPOINT] {
                        std::fs::copy(whole.join(f), to.join(f)).unwrap();
                    }
                }
            }
        },
    );
    r.unwrap()
}

/// `s` run again on `dir` as a plan line does (`--if-unfinished`), writing no checkpoints.
fn started_again(s: &RunSpec, dir: &Path) -> piecewise_lab::Result<RunSummary> {
    let cancel = AtomicBool::new(false);
    execute_with(
        s,
        dir,
        Existing::IfUnfinished,
        CheckpointPolicy::NEVER,
        &cancel,
        &mut |_| {},
    )
}

/// The curve without its clock.
fn curve(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("curve.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            v.as_object_mut().unwrap().remove("seconds");
            v
        })
        .collect()
}

fn resumes_to_the_same_weights(estimator: EstimatorSpec, kills: &[usize]) {
    let tmp = tempfile::tempdir().unwrap();
    let s = spec(estimator);
    let whole = run_and_copy_at(&s, tmp.path(), kills);
    assert!(whole.iterations > kills[kills.len() - 1] + 1, "{whole:?}");
    assert!(
        !tmp.path().join("whole").join(CHECKPOINT).exists(),
        "a finished run keeps no checkpoint"
    );
    let want = std::fs::read(tmp.path().join("whole/weights.bin")).unwrap();
    for k in kills {
        let dir = tmp.path().join(format!("killed-{k}"));
        let status: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap())
                .unwrap();
        assert_eq!(status["status"], "running", "as the kill left it");
        let mut notes = vec![];
        let cancel = AtomicBool::new(false);
        let r = execute_with(
            &s,
            &dir,
            Existing::IfUnfinished,
            CheckpointPolicy::NEVER,
            &cancel,
            &mut |e| {
                if let RunEvent::Note(n) = e {
                    notes.push(n)
                }
            },
        )
        .unwrap();
        assert!(
            notes
                .iter()
                .any(|n| n.starts_with(&format!("resuming after iteration {k} "))),
            "{notes:?}"
        );
        let got = std::fs::read(dir.join("weights.bin")).unwrap();
        assert!(got == want, "killed after {k}: the weights differ");
        assert_eq!(r.iterations, whole.iterations);
        assert_eq!(r.resumed_at, vec![*k]);
        assert_eq!(r.nota_choices, whole.nota_choices);
        assert_eq!(r.final_objective, whole.final_objective);
        assert_eq!(r.test, whole.test);
        assert_eq!(
            curve(&dir),
            curve(&tmp.path().join("whole")),
            "the curve goes on"
        );
        assert!(!dir.join(CHECKPOINT).exists());
    }
}

#[test]
fn ml_killed_and_resumed_ends_with_the_same_weights() {
    resumes_to_the_same_weights(EstimatorSpec::Ml, &[1, 4, 9]);
}

#[test]
fn nota_rounds_killed_and_resumed_end_with_the_same_weights() {
    // Rounds of 5 iterations: kills in the first fit (no NOTA terms), in the first round and
    // in a later one, where the replayed rounds must rebuild the objective from their weights.
    let nota = EstimatorSpec::Nota {
        selection: NotaSelection::ErrorDriven {
            after: 3,
            threshold: 0.2,
            refresh: 5,
        },
        weight: 1.0,
    };
    resumes_to_the_same_weights(nota, &[2, 5, 11]);
}

#[test]
fn a_cancelled_run_keeps_its_checkpoint_and_resumes_from_where_it_stopped() {
    let tmp = tempfile::tempdir().unwrap();
    let s = spec(EstimatorSpec::Ml);
    let whole = run_and_copy_at(&s, tmp.path(), &[]);
    let dir = tmp.path().join("cut");
    let cancel = AtomicBool::new(false);
    let r = execute_with(
        &s,
        &dir,
        Existing::Refuse,
        CheckpointPolicy::NEVER,
        &cancel,
        &mut |e| {
            if let RunEvent::Progress(p) = e {
                if p.iteration == 6 {
                    cancel.store(true, std::sync::atomic::Ordering::Relaxed);
                }
            }
        },
    );
    assert!(r.is_err());
    assert!(dir.join(CHECKPOINT).exists(), "written as it stopped");
    let r = started_again(&s, &dir).unwrap();
    assert_eq!(r.resumed_at, vec![6]);
    assert_eq!(r.iterations, whole.iterations);
    assert!(
        std::fs::read(dir.join("weights.bin")).unwrap()
            == std::fs::read(tmp.path().join("whole/weights.bin")).unwrap()
    );
}

#[test]
fn a_damaged_checkpoint_is_refused_naming_it_and_another_spec_starts_again() {
    let tmp = tempfile::tempdir().unwrap();
    let s = spec(EstimatorSpec::Ml);
    run_and_copy_at(&s, tmp.path(), &[3]);
    let dir = tmp.path().join("killed-3");
    let ck = dir.join(CHECKPOINT);
    let bytes = std::fs::read(&ck).unwrap();
    // Cut short.
    std::fs::write(&ck, &bytes[..bytes.len() - 8]).unwrap();
    let err = started_again(&s, &dir).unwrap_err().to_string();
    assert!(
        err.contains("checkpoint.bin") && err.contains("cut short"),
        "{err}"
    );
    // Not a checkpoint at all.
    std::fs::write(&ck, b"hello").unwrap();
    let err = started_again(&s, &dir).unwrap_err().to_string();
    assert!(
        err.contains("checkpoint.bin") && err.contains("not a checkpoint"),
        "{err}"
    );
    // A different spec on the same directory: the checkpoint is not its own, the run starts
    // from zero.
    std::fs::write(&ck, &bytes).unwrap();
    let mut other = s.clone();
    other.prior = Prior::from_c2(2.0);
    let r = started_again(&other, &dir).unwrap();
    assert!(r.resumed_at.is_empty());
}

// ---- Checkpoints that cannot lie (issue 65: H2, M1, M2) ----

/// A checkpoint's parts: the header (JSON) and the bytes after it, less the checksum.
fn split_checkpoint(bytes: &[u8]) -> (serde_json::Value, Vec<u8>) {
    let magic = b"piecewise-lab checkpoint 2\n".len();
    let len = u64::from_le_bytes(bytes[magic..magic + 8].try_into().unwrap()) as usize;
    let header = serde_json::from_slice(&bytes[magic + 8..magic + 8 + len]).unwrap();
    let arrays = bytes[magic + 8 + len..bytes.len() - 8].to_vec();
    (header, arrays)
}

/// A checkpoint with `header` over `arrays`, its checksum made anew: what a writer that lied
/// (or a damaged file whose checksum happened to agree) would leave.
fn sealed(header: &serde_json::Value, arrays: &[u8]) -> Vec<u8> {
    let h = serde_json::to_vec(header).unwrap();
    let mut out = b"piecewise-lab checkpoint 2\n".to_vec();
    out.extend((h.len() as u64).to_le_bytes());
    out.extend(h);
    out.extend(arrays);
    out.extend([0u8; 8]);
    piecewise_lab::run::checkpoint::reseal(&mut out);
    out
}

/// A cancelled run after `at` iterations: its directory and its checkpoint's bytes.
fn cancelled_at(s: &RunSpec, root: &Path, at: usize) -> (PathBuf, Vec<u8>) {
    let dir = root.join(format!("cut-{at}"));
    let cancel = AtomicBool::new(false);
    let r = execute_with(
        s,
        &dir,
        Existing::Refuse,
        CheckpointPolicy::NEVER,
        &cancel,
        &mut |e| {
            if let RunEvent::Progress(p) = e {
                if p.iteration == at {
                    cancel.store(true, std::sync::atomic::Ordering::Relaxed);
                }
            }
        },
    );
    assert!(r.is_err());
    let bytes = std::fs::read(dir.join(CHECKPOINT)).unwrap();
    (dir, bytes)
}

fn refused_with(s: &RunSpec, dir: &Path, bytes: &[u8], words: &[&str]) {
    std::fs::write(dir.join(CHECKPOINT), bytes).unwrap();
    let err = started_again(s, dir)
        .expect_err("a damaged checkpoint is refused")
        .to_string();
    for w in words {
        assert!(err.contains(w), "{w:?} not in: {err}");
    }
}

#[test]
fn a_checkpoint_with_more_pairs_than_iterations_is_refused_not_a_panic() {
    let tmp = tempfile::tempdir().unwrap();
    let s = spec(EstimatorSpec::Ml);
    let (dir, bytes) = cancelled_at(&s, tmp.path(), 6);
    let (mut h, arrays) = split_checkpoint(&bytes);
    // m = 3 pairs kept at iteration 6; a header claiming 2 iterations once indexed past the
    // two-loop recursion's scratch (H2: a panic, the run left "running").
    h["iterations"] = 2.into();
    let hist: Vec<_> = h["history_bits"].as_array().unwrap()[..3].to_vec();
    h["history_bits"] = hist.into();
    refused_with(
        &s,
        &dir,
        &sealed(&h, &arrays),
        &["checkpoint.bin", "3 correction pairs after 2 iterations"],
    );
    let summary = std::fs::read_to_string(dir.join("summary.json")).unwrap();
    assert!(!summary.contains("\"running\""), "{summary}");
}

#[test]
fn every_damaged_header_field_is_refused_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let s = spec(EstimatorSpec::Ml);
    let (dir, bytes) = cancelled_at(&s, tmp.path(), 6);
    let (h, arrays) = split_checkpoint(&bytes);
    // A single bit flipped anywhere: the checksum.
    for at in [40, bytes.len() / 2, bytes.len() - 9] {
        let mut b = bytes.clone();
        b[at] ^= 0x10;
        refused_with(&s, &dir, &b, &["checkpoint.bin"]);
    }
    let mut b = bytes.clone();
    b[bytes.len() / 2] ^= 1;
    refused_with(&s, &dir, &b, &["checksum"]);
    // The first version's file: no checksum, refused by name.
    let mut b = bytes.clone();
    b[..27].copy_from_slice(b"piecewise-lab checkpoint 1\n");
    refused_with(&s, &dir, &b, &["earlier version"]);
    let edit = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut h = h.clone();
        f(&mut h);
        sealed(&h, &arrays)
    };
    // An iteration count that overflows the window's length.
    refused_with(
        &s,
        &dir,
        &edit(&|h| h["iterations"] = u64::MAX.into()),
        &["more than a run makes"],
    );
    // Curvature pairs of zero, negative or NaN yᵀs (M1).
    for bits in [0f64.to_bits(), (-1f64).to_bits(), f64::NAN.to_bits()] {
        refused_with(
            &s,
            &dir,
            &edit(&|h| h["ys_bits"][0] = bits.into()),
            &["curvature"],
        );
    }
    // A fit past the schedule's (M1: once finished with all-zero weights).
    let past = edit(&|h| {
        h["fit"] = 3.into();
        let done = serde_json::json!({"iterations": 1, "reason": "max-iterations", "last": null});
        h["done"] = vec![done; 3].into();
        h["has_start"] = true.into();
    });
    // The fit's start is one more array: append x again as the start.
    let n = h["n"].as_u64().unwrap() as usize;
    let (head, _) = split_checkpoint(&past);
    let mut with_start = arrays[..8 * n].to_vec();
    with_start.extend(&arrays);
    refused_with(
        &s,
        &dir,
        &sealed(&head, &with_start),
        &["past the 1 fit(s)"],
    );
    // Threads out of range.
    refused_with(
        &s,
        &dir,
        &edit(&|h| h["threads"] = 0.into()),
        &["0 threads"],
    );
    // And the untouched checkpoint still resumes.
    std::fs::write(dir.join(CHECKPOINT), &bytes).unwrap();
    assert_eq!(started_again(&s, &dir).unwrap().resumed_at, vec![6]);
}

#[test]
fn a_resume_that_cannot_read_its_data_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("train.conll");
    let mut s = spec(EstimatorSpec::Ml);
    std::fs::copy(&s.train, &data).unwrap();
    s.train = data.clone();
    let (dir, _) = cancelled_at(&s, tmp.path(), 4);
    let files = [
        "weights.bin",
        "model.json",
        "curve.jsonl",
        "summary.json",
        "spec.json",
        CHECKPOINT,
    ];
    let before: Vec<Vec<u8>> = files
        .iter()
        .map(|f| std::fs::read(dir.join(f)).unwrap_or_else(|e| panic!("{f}: {e}")))
        .collect();
    // The data moved away (M2: the resume removed the results, then failed on the data).
    std::fs::rename(&data, tmp.path().join("moved.conll")).unwrap();
    let err = started_again(&s, &dir).unwrap_err().to_string();
    assert!(
        err.contains("train.conll") && err.contains("nothing in"),
        "{err}"
    );
    for (f, b) in files.iter().zip(&before) {
        assert!(
            std::fs::read(dir.join(f)).unwrap() == *b,
            "{f} changed by a resume that failed"
        );
    }
    // Back in place, the run resumes from its checkpoint.
    std::fs::rename(tmp.path().join("moved.conll"), &data).unwrap();
    assert_eq!(started_again(&s, &dir).unwrap().resumed_at, vec![4]);
}

#[cfg(unix)]
#[test]
fn a_fifo_at_the_checkpoint_is_refused_not_waited_on() {
    let tmp = tempfile::tempdir().unwrap();
    let s = spec(EstimatorSpec::Ml);
    let (dir, _) = cancelled_at(&s, tmp.path(), 3);
    std::fs::remove_file(dir.join(CHECKPOINT)).unwrap();
    let c = std::ffi::CString::new(dir.join(CHECKPOINT).to_str().unwrap()).unwrap();
    // SAFETY: mkfifo at a path inside the test's own folder.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    // Opening a FIFO for reading blocks until a writer comes: the resume must not open it.
    let (tx, rx) = std::sync::mpsc::channel();
    let (s2, d2) = (s.clone(), dir.clone());
    std::thread::spawn(move || {
        let _ = tx.send(
            started_again(&s2, &d2)
                .map(|_| ())
                .map_err(|e| e.to_string()),
        );
    });
    let r = rx
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("the resume blocked on a FIFO");
    let err = r.unwrap_err();
    assert!(err.contains("not a regular file"), "{err}");
}

#[test]
fn a_resume_on_other_threads_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let s = spec(EstimatorSpec::Ml);
    let (dir, _) = cancelled_at(&s, tmp.path(), 3);
    let mut one = s.clone();
    one.threads = 1;
    // The thread count is not part of the spec's identity (a plan's lines run on any machine).
    let mut notes = vec![];
    let cancel = AtomicBool::new(false);
    execute_with(
        &one,
        &dir,
        Existing::IfUnfinished,
        CheckpointPolicy::NEVER,
        &cancel,
        &mut |e| {
            if let RunEvent::Note(n) = e {
                notes.push(n);
            }
        },
    )
    .unwrap();
    assert!(
        notes
            .iter()
            .any(|n| n.contains("resuming after iteration 3")
                && n.contains("on its 2 thread(s), not the 1 asked for")),
        "{notes:?}"
    );
}
