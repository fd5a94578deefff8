//! One settings schema. Each model family, estimator and run option is a [`Knob`], declared once
//! where it belongs (`graph::registry::MODEL_KNOBS`, `estimators::ESTIMATOR_KNOBS`,
//! `run::spec::RUN_KNOBS`) with its name, kind, default, help and what it applies to. The
//! command line's flags (`cli::knobs`), the GUI's data and launch forms (`app::knob_widgets`)
//! and `--help` are generated from the declarations; values travel as [`KnobValues`] and become a
//! `RunSpec` (and back) in one conversion per group. A knob added to a declaration reaches the
//! CLI and the GUI with nothing else to write.

use crate::error::{Error, Result};
use clap::builder::PossibleValue;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The knob that names the model family, and its default.
pub const MODEL: &str = "model";
pub const DEFAULT_MODEL: &str = "chain";
/// The knob that names the estimator, and its default.
pub const ESTIMATOR: &str = "estimator";
pub const DEFAULT_ESTIMATOR: &str = "ml";

/// One setting of a run.
pub struct Knob {
    /// Kebab-case: the flag `--name` and the key in [`KnobValues`].
    pub name: &'static str,
    /// The GUI's line it sits on, with the other knobs of that line (CAMEL's three knobs share
    /// one); the line's name is its label.
    pub row: &'static str,
    /// The GUI's label.
    pub label: &'static str,
    /// `--help` and the GUI's hover text.
    pub help: &'static str,
    pub kind: Kind,
    /// The value when none is given (`""`: none, the conversion decides).
    pub default: &'static str,
    pub applies: Applies,
}

impl Knob {
    /// Refuses a number outside the knob's range (counts and reals), naming the flag; other
    /// kinds and text that is no number are left to the conversion.
    pub fn check(&self, v: &str) -> Result<()> {
        let out = |range: String| {
            Err(Error::invalid(format!(
                "--{}: {} is out of range ({range})",
                self.name,
                crate::error::shown(v)
            )))
        };
        match self.kind {
            Kind::Count { min, max } => match v.parse::<u64>() {
                Ok(x) if x < min || x > max => out(format!("{min} to {max}")),
                Err(_) if v.parse::<u128>().is_ok() => out(format!("{min} to {max}")),
                _ => Ok(()),
            },
            Kind::Real { min, max } => match v.parse::<f64>() {
                Ok(x) if !(min..=max).contains(&x) => out(format!("{min} to {max}")),
                _ => Ok(()),
            },
            _ => Ok(()),
        }
    }
}

/// What values a knob takes.
pub enum Kind {
    /// On or off (`--name` alone).
    Flag,
    /// A whole number in a range.
    Count { min: u64, max: u64 },
    /// A real number in a range.
    Real { min: f64, max: f64 },
    /// One of named values (with their help).
    Choice(fn() -> Vec<PossibleValue>),
    /// Free text.
    Text,
    /// A file or folder.
    Path,
}

/// When a knob means something (the GUI greys it out otherwise; it is never removed, so
/// nothing moves under the hand).
pub enum Applies {
    Always,
    /// For these model families.
    Families(&'static [&'static str]),
    /// For these estimators.
    Estimators(&'static [&'static str]),
    /// When the predicate holds.
    When(fn(&KnobValues) -> bool),
}

/// The named values of a `clap::ValueEnum`, for [`Kind::Choice`].
pub fn choices<T: clap::ValueEnum>() -> Vec<PossibleValue> {
    T::value_variants()
        .iter()
        .filter_map(|v| v.to_possible_value())
        .collect()
}

/// A `clap::ValueEnum` from its name (aliases too).
pub fn parse_choice<T: clap::ValueEnum>(knob: &Knob, value: &str) -> Result<T> {
    T::from_str(value, false).map_err(|_| {
        let names: Vec<String> = choices::<T>()
            .iter()
            .map(|p| p.get_name().to_string())
            .collect();
        Error::invalid(format!(
            "--{}: {value:?} is not one of {}",
            knob.name,
            names.join(", ")
        ))
    })
}

/// The name of a `clap::ValueEnum` value.
pub fn choice_name<T: clap::ValueEnum>(value: &T) -> String {
    value
        .to_possible_value()
        .map(|p| p.get_name().to_string())
        .unwrap_or_default()
}

impl Knob {
    /// Whether the knob means something under `s`.
    pub fn applies(&self, s: &KnobValues) -> bool {
        match &self.applies {
            Applies::Always => true,
            Applies::Families(fs) => fs.contains(&s.family()),
            Applies::Estimators(es) => es.contains(&s.estimator()),
            Applies::When(f) => f(s),
        }
    }
}

/// Knob values by name, as text: what a user typed or a spec held. A knob without a value has
/// its default.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct KnobValues(BTreeMap<String, String>);

impl KnobValues {
    /// The knob's value, or its default.
    pub fn get<'a>(&'a self, knob: &'a Knob) -> &'a str {
        self.0.get(knob.name).map_or(knob.default, |s| s.as_str())
    }

    /// Whether a value was given (not the default).
    pub fn given(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }

    pub fn set(&mut self, name: &str, value: impl ToString) {
        self.0.insert(name.to_string(), value.to_string());
    }

    pub fn unset(&mut self, name: &str) {
        self.0.remove(name);
    }

    /// Every value of `other` replaces ours.
    pub fn merge(&mut self, other: &KnobValues) {
        self.0
            .extend(other.0.iter().map(|(k, v)| (k.clone(), v.clone())));
    }

    /// The values of `knobs` alone.
    pub fn only(&self, knobs: &[&Knob]) -> KnobValues {
        KnobValues(
            knobs
                .iter()
                .filter_map(|k| self.0.get(k.name).map(|v| (k.name.to_string(), v.clone())))
                .collect(),
        )
    }

    pub fn family(&self) -> &str {
        self.0.get(MODEL).map_or(DEFAULT_MODEL, |s| s.as_str())
    }

    pub fn estimator(&self) -> &str {
        self.0
            .get(ESTIMATOR)
            .map_or(DEFAULT_ESTIMATOR, |s| s.as_str())
    }

    pub fn flag(&self, knob: &Knob) -> bool {
        matches!(self.get(knob), "true" | "1" | "yes" | "on")
    }

    /// The knob's value parsed, or an error naming the knob.
    /// A number outside the knob's range is an error too: every count and size from the
    /// command line, the GUI or a `spec.json` is bounded before use.
    pub fn parse<T: std::str::FromStr>(&self, knob: &Knob) -> Result<T> {
        let v = self.get(knob).trim();
        knob.check(v)?;
        v.parse()
            .map_err(|_| Error::invalid(format!("--{}: {v:?} is not a valid value", knob.name)))
    }

    /// As [`KnobValues::parse`]; an empty value is `None`.
    pub fn opt<T: std::str::FromStr>(&self, knob: &Knob) -> Result<Option<T>> {
        if self.get(knob).trim().is_empty() {
            Ok(None)
        } else {
            self.parse(knob).map(Some)
        }
    }

    /// A path; empty is `None`.
    pub fn path(&self, knob: &Knob) -> Option<PathBuf> {
        let v = self.get(knob).trim();
        (!v.is_empty()).then(|| PathBuf::from(v))
    }

    /// A choice's value; empty is `None`.
    pub fn choice<T: clap::ValueEnum>(&self, knob: &Knob) -> Result<Option<T>> {
        let v = self.get(knob).trim();
        if v.is_empty() {
            Ok(None)
        } else {
            parse_choice(knob, v).map(Some)
        }
    }
}

/// Sets `name` to `value`, or leaves it unset when `value` is the knob's default (so a spec
/// turned back into settings shows only what differs).
pub fn set_unless_default(s: &mut KnobValues, knob: &Knob, value: impl ToString) {
    let v = value.to_string();
    if v == knob.default {
        s.unset(knob.name);
    } else {
        s.set(knob.name, v);
    }
}
