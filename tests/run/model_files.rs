//! Issue 21: a damaged `model.json` is refused when the run is opened, with an error naming the
//! file and the field. Each edit below once panicked (index out of range in `family.rs`,
//! `instance.rs`, `graph/mod.rs`, `bp.rs`), aborted allocating tens of GB, or was blamed on the
//! data file ("data.txt:1: template … takes 3 variables, got 2").

use piecewise_lab::estimators::EstimatorSpec;
use piecewise_lab::optim::{LbfgsSpec, Prior};
use piecewise_lab::run::{execute, ModelSpec, RunSpec, TrainedRun};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn train(out: &Path, model: ModelSpec, train: PathBuf, template: Option<PathBuf>) {
    let spec = RunSpec {
        name: None,
        train,
        template,
        model,
        estimator: EstimatorSpec::Pl,
        optimiser: LbfgsSpec {
            max_iter: 3,
            ..Default::default()
        },
        prior: Prior::from_c2(1.0),
        threads: 1,
        ..Default::default()
    };
    execute(&spec, out, &AtomicBool::new(false), &mut |_| {}).unwrap();
}

/// Opens `run` with its `model.json` edited by `f`; returns the error (the edit must be refused)
/// after checking that it names `model.json` and not the data.
fn refused(run: &Path, f: impl FnOnce(&mut Value)) -> String {
    let path = run.join("model.json");
    let original = std::fs::read_to_string(&path).unwrap();
    let mut v: Value = serde_json::from_str(&original).unwrap();
    f(&mut v);
    std::fs::write(&path, serde_json::to_string(&v).unwrap()).unwrap();
    let result = TrainedRun::open(run);
    std::fs::write(&path, &original).unwrap();
    let e = result
        .err()
        .expect("a damaged model.json must be refused")
        .to_string();
    assert!(e.contains("model.json"), "names the file: {e}");
    e
}

#[test]
fn damaged_model_files_are_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let chain = dir.path().join("chain");
    train(
        &chain,
        ModelSpec::default(),
        root().join("sample_data/hmm-a0.5-train.conll"),
        Some(root().join("assets/templates/hmm.tpl")),
    );
    TrainedRun::open(&chain).expect("the undamaged run opens");
    let at = |v: &mut Value, t: usize, field: &str, x: Value| {
        v["model"]["templates"][t][field] = x;
    };

    // An empty label set (labels indexed at family.rs:64).
    let e = refused(&chain, |v| v["labels"]["names"] = json!([]));
    assert!(e.contains("labels"), "{e}");
    // An entry-map column out of range (graph/mod.rs).
    let e = refused(&chain, |v| {
        v["model"]["templates"][1]["entry_col"][3] = json!(99)
    });
    assert!(
        e.contains("template 1 (`transition`): entry 3 maps to column 99"),
        "{e}"
    );
    // n_cols changed: one more, and large enough to have aborted allocating it.
    let n_cols = |v: &Value| v["model"]["templates"][0]["n_cols"].as_u64().unwrap();
    let e = refused(&chain, |v| {
        let n = n_cols(v);
        at(v, 0, "n_cols", json!(n + 1))
    });
    assert!(e.contains("template 0 (`state`): n_cols is"), "{e}");
    let e = refused(&chain, |v| at(v, 0, "n_cols", json!(1u64 << 40)));
    assert!(e.contains("n_cols"), "{e}");
    // A template's weights moved.
    let e = refused(&chain, |v| at(v, 1, "offset", json!(3)));
    assert!(e.contains("weights start at 3"), "{e}");
    // A table shape that no longer matches its entry map, or its label set.
    let e = refused(&chain, |v| at(v, 1, "shape", json!([5, 4])));
    assert!(
        e.contains("entry map has 25 entries, the table has 20"),
        "{e}"
    );
    let e = refused(&chain, |v| at(v, 1, "shape", json!([5])));
    assert!(
        e.contains("entry map has 25 entries, the table has 5"),
        "{e}"
    );
    // A feature count that disagrees with the dictionary (the layout kept consistent).
    let e = refused(&chain, |v| {
        let n = v["model"]["templates"][0]["n_features"].as_u64().unwrap();
        at(v, 0, "n_features", json!(n + 1));
        let o = v["model"]["templates"][1]["offset"].as_u64().unwrap();
        at(v, 1, "offset", json!(o + 5));
        let p = v["model"]["n_params"].as_u64().unwrap();
        v["model"]["n_params"] = json!(p + 5);
    });
    assert!(
        e.contains("template 0 (`state`)") && e.contains("feature dictionary has"),
        "{e}"
    );
    // n_params alone.
    let e = refused(&chain, |v| v["model"]["n_params"] = json!(7));
    assert!(e.contains("n_params is 7"), "{e}");
    // A template removed.
    let e = refused(&chain, |v| {
        v["model"]["templates"].as_array_mut().unwrap().pop();
    });
    assert!(e.contains("templates"), "{e}");
    // Versions: a newer file format, and a newer version of the family's format.
    let e = refused(&chain, |v| v["format_version"] = json!(2));
    assert!(e.contains("format version 2") && e.contains("newer"), "{e}");
    let e = refused(&chain, |v| {
        v["format"] = json!("piecewise-lab/linear-chain/2")
    });
    assert!(e.contains("version 2 of this family's format"), "{e}");

    // A grid whose pairwise map is a valid map, but not its options' one.
    let grid_data = dir.path().join("grid.txt");
    std::fs::write(
        &grid_data,
        "1 0.2 0.9 | 0 1.0 0.1\n0 0.8 0.1 | 1 0.2 1.1\n\n0 0.9 0.3 | 1 0.1 0.7\n1 0.4 1.2 | 1 0.0 0.8\n\n",
    )
    .unwrap();
    let grid = dir.path().join("grid");
    train(&grid, ModelSpec::Grid(Default::default()), grid_data, None);
    TrainedRun::open(&grid).expect("the undamaged grid opens");
    let e = refused(&grid, |v| {
        v["crf"]["model"]["templates"][1]["entry_col"][1] = json!(0)
    });
    assert!(e.contains("not the Potts map"), "{e}");
    let e = refused(&grid, |v| v["crf"]["n_obs"] = json!(1));
    assert!(e.contains("template 0 (`unary`)"), "{e}");

    // A Boltzmann machine whose coupling became a three-variable table (consistent in itself):
    // this was blamed on the data ("data.txt:1: template coupling takes 3 variables, got 2").
    let samples = dir.path().join("samples.txt");
    std::fs::write(&samples, "1 0 1\n0 1 1\n1 1 0\n0 0 1\n").unwrap();
    let bm = dir.path().join("bm");
    train(&bm, ModelSpec::Boltzmann(Default::default()), samples, None);
    TrainedRun::open(&bm).expect("the undamaged machine opens");
    let e = refused(&bm, |v| {
        let t = &mut v["machine"]["model"]["templates"][0];
        t["shape"] = json!([2, 2, 2]);
        t["entry_col"] = json!([
            u32::MAX,
            u32::MAX,
            u32::MAX,
            u32::MAX,
            u32::MAX,
            u32::MAX,
            u32::MAX,
            0
        ]);
    });
    assert!(
        e.contains("template 0 (`coupling`): shape [2, 2, 2]") && !e.contains("samples.txt"),
        "{e}"
    );

    // spec.json from a newer build.
    let spec = chain.join("spec.json");
    let original = std::fs::read_to_string(&spec).unwrap();
    let mut v: Value = serde_json::from_str(&original).unwrap();
    v["format_version"] = json!(7);
    std::fs::write(&spec, v.to_string()).unwrap();
    let e = TrainedRun::open(&chain).err().unwrap().to_string();
    assert!(
        e.contains("spec.json") && e.contains("format version 7"),
        "{e}"
    );
    std::fs::write(&spec, original).unwrap();
    // Files we write carry their version.
    for f in ["spec.json", "summary.json", "model.json"] {
        let v: Value =
            serde_json::from_str(&std::fs::read_to_string(chain.join(f)).unwrap()).unwrap();
        assert_eq!(v["format_version"], json!(1), "{f}");
    }
}
