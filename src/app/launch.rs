//! The run-launch form: every field of a [`RunSpec`] a user sets, and the conversion both ways
//! (a spec back into the form is "rerun with edits").

use super::data::DataSource;
use crate::estimators::scl::{Selection, SelectionPolicy};
use crate::estimators::settings::{ESTIMATOR, ESTIMATOR_KNOBS, POLICY, SELECTION};
use crate::run::spec::{RunSpec, NAME, RUN_KNOBS, SEED};
use crate::settings::{Knob, KnobValues};

/// The launch form: the data (the Data pane's fields) and every estimator and run knob of the
/// settings schema, so the form has every knob the command line has.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct LaunchForm {
    /// Data, template and model options: the same fields the Data pane loads.
    pub data: DataSource,
    /// The estimator, its knobs and the run's (name, decoding, prior, optimiser, …).
    pub knobs: KnobValues,
}

/// The form's own starting values where they differ from the command line's: a short run,
/// evaluated as it goes, with the papers' prior σ² = 10; exact ML on all cores (the command
/// line's estimator and threads).
const GUI_DEFAULTS: &[(&str, &str)] = &[("max-iter", "100"), ("eval-every", "5"), ("sigma2", "10")];

impl Default for LaunchForm {
    fn default() -> Self {
        let mut knobs = KnobValues::default();
        for (k, v) in GUI_DEFAULTS {
            knobs.set(k, v);
        }
        LaunchForm {
            data: DataSource {
                train: String::new(),
                test: String::new(),
                template: String::new(),
                model: KnobValues::default(),
            },
            knobs,
        }
    }
}

/// The knobs the launch form holds beside its data.
pub fn form_knobs() -> Vec<&'static Knob> {
    ESTIMATOR_KNOBS.iter().chain(RUN_KNOBS).copied().collect()
}

impl LaunchForm {
    /// A form for the loaded data set.
    pub fn for_data(d: &DataSource) -> LaunchForm {
        let mut f = LaunchForm::default();
        f.use_data(d);
        f
    }

    /// Copies the data fields from a data source.
    pub fn use_data(&mut self, d: &DataSource) {
        self.data = d.clone();
    }

    /// Everything the form says, as one set of knob values.
    pub fn values(&self) -> KnobValues {
        let mut s = self.data.files();
        s.merge(&self.data.model);
        s.merge(&self.knobs);
        s
    }

    /// The estimator's name.
    pub fn estimator(&self) -> &str {
        self.knobs.estimator()
    }

    pub fn set_estimator(&mut self, name: &str) {
        self.knobs.set(ESTIMATOR.name, name);
    }

    /// SCL's policy text.
    pub fn policy(&self) -> &str {
        self.knobs.get(&POLICY)
    }

    pub fn set_policy(&mut self, text: &str) {
        self.knobs.set(POLICY.name, text);
    }

    /// The policy the form describes, Z drawn from the run's seed.
    pub fn policy_spec(&self) -> crate::error::Result<SelectionPolicy> {
        let selection = self
            .knobs
            .choice(&SELECTION)?
            .unwrap_or(Selection::Independent);
        let seed = self.knobs.parse(&SEED)?;
        SelectionPolicy::parse(self.policy(), selection, seed)
    }

    /// The run spec, or what is wrong with the form.
    pub fn to_spec(&self) -> Result<RunSpec, String> {
        if self.data.train.trim().is_empty() {
            return Err("the run needs training data".into());
        }
        RunSpec::from_settings(&self.values()).map_err(|e| e.to_string())
    }

    /// The form that produces `spec` (for "rerun with edits").
    pub fn from_spec(spec: &RunSpec) -> LaunchForm {
        let s = spec.to_settings();
        let mut f = LaunchForm::default();
        f.data.set_files(&s);
        f.data.model = s.only(crate::run::registry::MODEL_KNOBS);
        f.knobs = s.only(&form_knobs());
        if !s.given(NAME.name) {
            f.knobs.unset(NAME.name);
        }
        f
    }
}

#[cfg(test)]
mod tests {
    use super::LaunchForm;

    /// The SCL knobs survive form → spec → form ("Rerun with edits"), and Z's seed is the run's.
    #[test]
    fn scl_knobs_round_trip() {
        let mut f = LaunchForm::default();
        f.data.train = "train.txt".into();
        f.set_estimator("scl");
        f.set_policy("0.7:1*pl1 + 0.3:1*pl2");
        f.knobs.set("selection", "multinomial");
        f.knobs.set("beta", "auto");
        f.knobs.set("resample-every", 5);
        f.knobs.set("seed", 3);
        let spec = f.to_spec().unwrap();
        let p = spec.estimator.policy().unwrap();
        assert!(p.auto_beta && p.resample_every == 5 && p.seed == 3);
        assert_eq!(p.selection, crate::estimators::scl::Selection::Multinomial);
        let g = LaunchForm::from_spec(&spec);
        assert_eq!(
            (
                g.policy(),
                g.knobs.get(&crate::estimators::settings::SELECTION),
                g.knobs.get(&crate::estimators::settings::BETA),
                g.knobs.get(&crate::estimators::settings::RESAMPLE_EVERY)
            ),
            (f.policy(), "multinomial", "auto", "5")
        );
        // CAMEL's outer-loop knobs too.
        f.set_estimator("cccp-camel");
        f.knobs.set("camel-tol", 1e-3);
        f.knobs.set("camel-max-outer", 7);
        let spec = f.to_spec().unwrap();
        let g = LaunchForm::from_spec(&spec);
        assert_eq!(g.estimator(), "cccp-camel");
        assert_eq!(g.to_spec().unwrap().estimator, spec.estimator);
        match spec.estimator {
            crate::estimators::EstimatorSpec::Camel { camel, .. } => {
                assert_eq!((camel.tol, camel.max_outer), (1e-3, 7))
            }
            _ => panic!("a CAMEL spec"),
        }
        f.set_estimator("scl");
        f.set_policy("0.7:1*pl9x");
        assert!(f
            .to_spec()
            .unwrap_err()
            .contains("unknown component family"));
    }
}
