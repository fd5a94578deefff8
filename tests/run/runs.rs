//! Runs on disk: the spec round-trips, progress arrives as events, and cancelling stops the
//! optimiser at once and records the run as cancelled.

use piecewise_lab::estimators::EstimatorSpec;
use piecewise_lab::optim::{LbfgsSpec, Prior};
use piecewise_lab::run::{execute, ModelSpec, RunEvent, RunSpec};
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
        subset_scaling: false,
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
    // `execute` (the workbench's) writes no checkpoint, not even at the cancel: the workbench
    // does not resume runs.
    assert!(!out.join("checkpoint.bin").exists());
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

/// Issue 21: a damaged run is refused, not quietly misread. NaN weights used to give a NaN
/// log-likelihood and one label everywhere; a damaged `spec.json` was replaced by defaults, so
/// a MEMM run decoded with Viterbi instead of its local decoder without a word.
#[test]
fn damaged_runs_are_refused_and_a_missing_spec_is_said() {
    use piecewise_lab::eval::Decoder;
    use piecewise_lab::run::TrainedRun;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("memm");
    let mut s = spec();
    s.estimator = EstimatorSpec::Memm;
    s.optimiser.max_iter = 5;
    s.eval_every = 0;
    execute(&s, &out, &AtomicBool::new(false), &mut |_| {}).unwrap();
    let run = TrainedRun::open(&out).unwrap();
    assert_eq!(
        run.inference.decoder,
        Decoder::Local,
        "a MEMM run decodes locally"
    );
    assert!(run.warnings.is_empty());

    // A missing spec: default decoding, and a warning that says so.
    let spec_json = std::fs::read(out.join("spec.json")).unwrap();
    std::fs::remove_file(out.join("spec.json")).unwrap();
    let run = TrainedRun::open(&out).unwrap();
    assert_eq!(run.inference.decoder, Decoder::Auto);
    assert!(
        run.warnings.len() == 1 && run.warnings[0].contains("spec.json: missing"),
        "{:?}",
        run.warnings
    );

    // A damaged spec: an error naming the file.
    std::fs::write(out.join("spec.json"), &spec_json[..spec_json.len() / 2]).unwrap();
    let e = TrainedRun::open(&out)
        .err()
        .expect("a damaged spec.json")
        .to_string();
    assert!(e.contains("spec.json"), "{e}");
    std::fs::write(out.join("spec.json"), &spec_json).unwrap();

    // A NaN weight: an error naming weights.bin and the weight.
    let mut w = std::fs::read(out.join("weights.bin")).unwrap();
    w[8..16].copy_from_slice(&f64::NAN.to_le_bytes());
    std::fs::write(out.join("weights.bin"), &w).unwrap();
    let e = TrainedRun::open(&out)
        .err()
        .expect("a NaN weight")
        .to_string();
    assert!(
        e.contains("weights.bin") && e.contains("weight 1 is NaN"),
        "{e}"
    );
}

/// The Graph pane's inspector reads a run's view of an item from the engine: each factor's
/// table at the run's weights, and its exact marginal — checked against enumeration.
#[test]
fn a_run_s_learned_tables_and_marginals_match_enumeration() {
    use piecewise_lab::inference::enumerate::{enumerate, for_each_assignment};
    use piecewise_lab::run::TrainedRun;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("ml");
    let mut s = spec();
    s.optimiser.max_iter = 10;
    s.eval_every = 0;
    execute(&s, &out, &AtomicBool::new(false), &mut |_| {}).unwrap();
    let run = TrainedRun::open(&out).unwrap();
    let train = run.training_data().unwrap();
    // The first item's first four tokens: few enough joint states to enumerate.
    let mut seq = train.sequences[0].clone();
    seq.columns.truncate(4);
    seq.labels.truncate(4);
    assert_eq!(seq.len(), 4);
    let learned = run.learned(&seq).unwrap();
    let inst = run.family.instance(&seq).unwrap();
    let phi = piecewise_lab::eval::tables(run.family.as_ref(), &run.theta, &inst);
    let (marginals, how) = learned
        .marginals
        .as_ref()
        .expect("a chain's exact marginals");
    assert!(!how.is_empty());
    let e = enumerate(&inst, &phi).unwrap();
    let card = inst.card.clone();
    for (k, f) in inst.factors.iter().enumerate() {
        // Shaped by the factor's scope, its entries row-major as the table's.
        let shape: Vec<usize> = inst
            .scope(f)
            .iter()
            .map(|&v| card[v as usize] as usize)
            .collect();
        assert_eq!(
            learned.phi[k].shape(),
            shape.as_slice(),
            "factor {k}'s shape"
        );
        assert_eq!(
            learned.phi[k].as_slice().unwrap(),
            inst.table(f, &phi),
            "factor {k}'s table"
        );
        // The factor's marginal by enumeration: Σ over assignments of p(y) at its entry.
        let mut want = vec![0.0; learned.phi[k].len()];
        for_each_assignment(&card, |y| {
            want[inst.entry(f, y)] += (inst.score(&phi, y) - e.log_z).exp();
        });
        let got = marginals[k].as_ref().expect("every factor's marginal");
        assert_eq!(
            got.shape(),
            shape.as_slice(),
            "factor {k}'s marginal's shape"
        );
        for (a, b) in got.iter().zip(&want) {
            assert!((a - b).abs() < 1e-9, "factor {k}: {a} against {b}");
        }
    }
}

/// The curve's policy, one for every model kind: a held-out evaluation that fails (local
/// decoding asked of a grid) leaves the curve's points without test scores and training goes
/// on; the run's final evaluation then says why, after its weights are saved.
#[test]
fn a_failing_held_out_evaluation_leaves_points_unscored_and_the_weights_saved() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let s = RunSpec {
        train: root.join("sample_data/grid-4x4-train.grid"),
        test: Some(root.join("sample_data/grid-4x4-test.grid")),
        template: None,
        model: ModelSpec::Grid(Default::default()),
        estimator: EstimatorSpec::Pl,
        optimiser: LbfgsSpec {
            max_iter: 4,
            ..Default::default()
        },
        eval_every: 1,
        decode: piecewise_lab::eval::Decoder::Local,
        ..spec()
    };
    let mut evals = 0;
    let r = execute(&s, &out, &AtomicBool::new(false), &mut |e| {
        if let RunEvent::Eval { .. } = e {
            evals += 1;
        }
    });
    let e = r.expect_err("the final evaluation fails").to_string();
    assert!(e.contains("linear chains only"), "{e}");
    assert_eq!(evals, 0);
    let curve = std::fs::read_to_string(out.join("curve.jsonl")).unwrap();
    assert!(curve.lines().count() >= 2, "training went on: {curve}");
    for line in curve.lines() {
        let point: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(point["test_token_accuracy"].is_null(), "unscored: {line}");
    }
    let files = piecewise_lab::run::RunFiles::at(&out);
    assert!(files.model().is_ok(), "the weights are saved");
}
