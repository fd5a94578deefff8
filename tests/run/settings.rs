//! The settings schema: every knob's name is unique within what a command takes, every default
//! is a value of its kind, and a run spec survives the trip to knob values and back (the GUI's
//! "rerun with edits" and the command line share this conversion).

use piecewise_lab::estimators::settings::{BP_KNOBS, ESTIMATOR_KNOBS, SCL_KNOBS};
use piecewise_lab::run::registry::MODEL_KNOBS;
use piecewise_lab::run::spec::{DATA_KNOBS, RUN_KNOBS};
use piecewise_lab::run::RunSpec;
use piecewise_lab::settings::{Kind, Knob, KnobValues};

fn all() -> Vec<&'static Knob> {
    DATA_KNOBS
        .iter()
        .chain(MODEL_KNOBS)
        .chain(ESTIMATOR_KNOBS)
        .chain(RUN_KNOBS)
        .copied()
        .collect()
}

#[test]
fn knob_names_are_unique_and_defaults_are_values_of_their_kind() {
    let knobs = all();
    let mut names: Vec<&str> = knobs.iter().map(|k| k.name).collect();
    names.sort_unstable();
    let n = names.len();
    names.dedup();
    assert_eq!(names.len(), n, "a knob name is declared twice");
    for k in knobs.iter().chain(SCL_KNOBS).chain(BP_KNOBS) {
        let d = k.default;
        let ok = match &k.kind {
            Kind::Flag => matches!(d, "true" | "false"),
            Kind::Count { min, max } => {
                d.is_empty() || d.parse::<u64>().is_ok_and(|v| (*min..=*max).contains(&v))
            }
            Kind::Real { min, max } => {
                d.is_empty() || d.parse::<f64>().is_ok_and(|v| (*min..=*max).contains(&v))
            }
            Kind::Choice(values) => d.is_empty() || values().iter().any(|p| p.matches(d, false)),
            Kind::Text | Kind::Path => true,
        };
        assert!(ok, "--{}: default {d:?} is not a value of its kind", k.name);
    }
}

/// The defaults alone make a run: the command line's `train --train FILE`.
#[test]
fn defaults_make_the_command_lines_default_run() {
    let mut s = KnobValues::default();
    s.set("train", "data.txt");
    let spec = RunSpec::from_settings(&s).unwrap();
    assert_eq!(spec.estimator.name(), "ml");
    assert_eq!(spec.model.name(), "chain");
    assert_eq!(spec.prior.sigma2, Some(0.5), "c2 = 1 by default");
    assert_eq!(spec.optimiser.max_iter, 1000);
}

#[test]
fn run_specs_survive_the_trip_to_knob_values_and_back() {
    let cases: &[&[(&str, &str)]] = &[
        &[
            ("estimator", "pwpl"),
            ("pieces", "state+transition"),
            ("c2", "0.5"),
        ],
        &[
            ("estimator", "nota"),
            ("nota", "error-driven"),
            ("nota-after", "3"),
            ("nota-threshold", "0.3"),
            ("factorisation", "edge-pair"),
            ("features", "observed"),
            ("per-state-scaling", "true"),
        ],
        &[
            ("estimator", "pw"),
            ("factorisation", "bagged"),
            ("subset-scaling", "true"),
        ],
        &[
            ("estimator", "nota"),
            ("nota", "sampled"),
            ("nota-fraction", "0.25"),
            ("seed", "9"),
        ],
        &[
            ("estimator", "scl"),
            ("policy", "0.7:1*pl1 + 0.3:1*pl2"),
            ("selection", "multinomial"),
            ("beta", "auto"),
            ("resample-every", "4"),
        ],
        &[
            ("estimator", "pw-reweighted"),
            ("mu", "0.25"),
            ("label-bias", "true"),
            ("min-freq", "2"),
        ],
        &[
            ("estimator", "cccp-camel"),
            ("camel-tol", "0.001"),
            ("camel-max-outer", "3"),
        ],
        &[
            ("model", "grid"),
            ("pairwise", "full"),
            ("neighbourhood", "8"),
            ("estimator", "bp"),
            ("bp-schedule", "residual"),
            ("bp-damping", "0.5"),
            ("bp-tol", "1e-6"),
            ("bp-max-sweeps", "40"),
            ("decode", "marginal"),
        ],
        &[
            ("model", "boltzmann"),
            ("biases", "true"),
            ("estimator", "pl"),
            ("sigma2", "10"),
        ],
        &[
            ("model", "boltzmann-chain"),
            ("min-freq", "3"),
            ("train-sample", "7"),
            ("eval-train", "true"),
        ],
        &[
            ("model", "boltzmann-chain"),
            ("vocabulary", "all-words.conll"),
        ],
        &[
            ("model", "factorial"),
            ("features", "all"),
            ("pos-lexicon", "lex.tsv"),
        ],
        &[
            ("model", "skip-chain"),
            ("max-skip-edges", "5"),
            ("extractor", "seminar"),
            ("lexicons", "lists"),
        ],
        &[
            ("max-iter", "17"),
            ("delta", "0.001"),
            ("period", "4"),
            ("threads", "2"),
            ("eval-every", "3"),
            ("init-from", "runs/x"),
            ("name", "mine"),
        ],
    ];
    for case in cases {
        let mut s = KnobValues::default();
        s.set("train", "train.txt");
        s.set("test", "test.txt");
        for (k, v) in *case {
            s.set(k, v);
        }
        let spec = RunSpec::from_settings(&s).unwrap_or_else(|e| panic!("{case:?}: {e}"));
        let back = RunSpec::from_settings(&spec.to_settings()).unwrap();
        assert_eq!(
            serde_json::to_value(&back).unwrap(),
            serde_json::to_value(&spec).unwrap(),
            "{case:?}"
        );
    }
}
