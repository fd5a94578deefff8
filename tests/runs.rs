//! Runs on disk: the spec round-trips, progress arrives as events, and cancelling stops the
//! optimiser at once and records the run as cancelled.

use piecewise_lab::estimators::EstimatorSpec;
use piecewise_lab::train::{execute, LbfgsSpec, ModelSpec, Prior, RunEvent, RunSpec};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

fn spec() -> RunSpec {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    RunSpec {
        name: Some("t".into()),
        train: root.join("sample_data/hmm-a0.5-train.conll"),
        test: Some(root.join("sample_data/hmm-a0.5-test.conll")),
        template: Some(root.join("assets/templates/hmm.tpl")),
        model: ModelSpec::default(),
        estimator: EstimatorSpec::Ml,
        optimiser: LbfgsSpec {
            max_iter: 50,
            ..Default::default()
        },
        prior: Prior::from_c2(1.0),
        eval_every: 2,
        seed: 0,
        threads: 2,
        decode: Default::default(),
        train_sample: None,
        eval_train: false,
        per_state_scaling: false,
        init_from: None,
    }
}

#[test]
fn cancel_from_a_progress_event_stops_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let cancel = AtomicBool::new(false);
    let mut progress = 0;
    let mut evals = 0;
    let r = execute(&spec(), &out, &cancel, &mut |e| match e {
        RunEvent::Progress(p) => {
            progress += 1;
            if p.iteration == 3 {
                cancel.store(true, Ordering::Relaxed);
            }
        }
        RunEvent::Eval { .. } => evals += 1,
        _ => {}
    });
    assert!(matches!(r, Err(piecewise_lab::Error::Cancelled)), "{r:?}");
    assert_eq!(progress, 3);
    assert_eq!(evals, 1, "iteration 2 was scored on the test set");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["status"], "cancelled");
    assert_eq!(summary["stop_reason"], "cancelled");
    let curve = std::fs::read_to_string(out.join("curve.jsonl")).unwrap();
    assert_eq!(curve.lines().count(), 3);
    assert!(curve
        .lines()
        .nth(1)
        .unwrap()
        .contains("test_token_accuracy"));
    // The spec on disk is the spec that ran.
    let stored: RunSpec =
        serde_json::from_str(&std::fs::read_to_string(out.join("spec.json")).unwrap()).unwrap();
    assert_eq!(stored.optimiser, spec().optimiser);
    assert_eq!(stored.estimator, EstimatorSpec::Ml);
}
