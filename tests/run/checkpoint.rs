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
