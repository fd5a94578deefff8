//! Command-line flags generated from the settings schema: each group of knobs is a clap
//! argument group whose values arrive as [`KnobValues`] (only the flags given; the rest keep their
//! defaults). `--help` shows each knob's help, default and possible values.

use crate::error::Result;
use crate::estimators::settings::{BP_KNOBS, ESTIMATOR_KNOBS, SCL_KNOBS};
use crate::run::registry::MODEL_KNOBS;
use crate::run::spec::{DATA_KNOBS, RUN_KNOBS};
use crate::run::RunSpec;
use crate::settings::{Kind, Knob, KnobValues};
use clap::builder::PossibleValuesParser;
use clap::{Arg, ArgAction, ArgMatches, Command};

/// The flag of one knob.
fn arg(k: &'static Knob) -> Arg {
    let help = if k.default.is_empty() || matches!(k.kind, Kind::Flag) {
        k.help.to_string()
    } else {
        format!("{} [default: {}]", k.help, k.default)
    };
    let a = Arg::new(k.name).long(k.name).help(help);
    match &k.kind {
        Kind::Flag => a.action(ArgAction::SetTrue),
        Kind::Count { .. } => a.value_parser(clap::value_parser!(u64)),
        Kind::Real { .. } => a
            .value_parser(clap::value_parser!(f64))
            .allow_negative_numbers(true),
        Kind::Choice(values) => a
            .value_parser(PossibleValuesParser::new(values()))
            .hide_possible_values(false),
        Kind::Text => a.allow_hyphen_values(true),
        Kind::Path => a.value_parser(clap::value_parser!(std::path::PathBuf)),
    }
}

fn augment(cmd: Command, knobs: &[&'static Knob]) -> Command {
    cmd.args(knobs.iter().map(|k| arg(k)))
}

/// The values given on the command line.
fn collect(m: &ArgMatches, knobs: &[&'static Knob]) -> KnobValues {
    let mut s = KnobValues::default();
    for k in knobs {
        match k.kind {
            Kind::Flag => {
                if m.get_flag(k.name) {
                    s.set(k.name, "true");
                }
            }
            _ => {
                if let Some(mut raw) = m.get_raw(k.name) {
                    if let Some(v) = raw.next() {
                        s.set(k.name, v.to_string_lossy());
                    }
                }
            }
        }
    }
    s
}

/// A clap argument group over a list of knobs.
macro_rules! knob_group {
    ($(#[$doc:meta])* $name:ident, $knobs:expr) => {
        $(#[$doc])*
        #[derive(Clone, Debug, Default)]
        pub struct $name(pub KnobValues);

        impl $name {
            fn knobs() -> Vec<&'static Knob> {
                $knobs
            }
        }

        impl clap::FromArgMatches for $name {
            fn from_arg_matches(m: &ArgMatches) -> std::result::Result<Self, clap::Error> {
                Ok($name(collect(m, &Self::knobs())))
            }
            fn update_from_arg_matches(
                &mut self,
                m: &ArgMatches,
            ) -> std::result::Result<(), clap::Error> {
                self.0.merge(&collect(m, &Self::knobs()));
                Ok(())
            }
        }

        impl clap::Args for $name {
            fn augment_args(cmd: Command) -> Command {
                augment(cmd, &Self::knobs())
            }
            fn augment_args_for_update(cmd: Command) -> Command {
                augment(cmd, &Self::knobs())
            }
        }
    };
}

knob_group!(
    /// The model family and its options.
    ModelKnobs,
    MODEL_KNOBS.to_vec()
);
knob_group!(
    /// The estimator and its knobs.
    EstimatorKnobs,
    ESTIMATOR_KNOBS.to_vec()
);
knob_group!(
    /// The estimators' knobs without the estimator (`compare` names several).
    EstimatorOptionKnobs,
    ESTIMATOR_KNOBS[1..].to_vec()
);
knob_group!(
    /// What a run trains on and how: its data, model and run options (everything of a run
    /// spec but the estimator).
    RunKnobs,
    DATA_KNOBS
        .iter()
        .chain(MODEL_KNOBS)
        .chain(RUN_KNOBS)
        .copied()
        .collect()
);
knob_group!(
    /// The data files of a run.
    DataKnobs,
    DATA_KNOBS.to_vec()
);
knob_group!(
    /// SCL's selection policy.
    SclKnobs,
    SCL_KNOBS.to_vec()
);
knob_group!(
    /// The experiments' own options (`reproduce`).
    ExperimentKnobs,
    crate::experiments::reproduce::experiment_knobs()
);
knob_group!(
    /// Loopy belief propagation's options.
    BpKnobs,
    BP_KNOBS.to_vec()
);

/// KnobValues merged from several groups, later ones winning.
pub fn merged(groups: &[&KnobValues]) -> KnobValues {
    let mut s = KnobValues::default();
    for g in groups {
        s.merge(g);
    }
    s
}

/// A run spec from the command line's knobs; the run is named after its estimator unless
/// `--name` says otherwise.
pub fn run_spec(s: &KnobValues) -> Result<RunSpec> {
    let mut s = s.clone();
    if !s.given(crate::run::spec::NAME.name) {
        let e = s.estimator().to_string();
        s.set(crate::run::spec::NAME.name, e);
    }
    RunSpec::from_settings(&s)
}
