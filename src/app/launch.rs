//! The run-launch form: every field of a [`RunSpec`] a user sets, and the conversion both ways
//! (a spec back into the form is "rerun with edits").

use super::data::DataSource;
use crate::estimators::scl::{Selection, SelectionPolicy};
use crate::estimators::EstimatorSpec;
use crate::graph::chain::{Factorisation, FeatureSet};
use crate::inference::BpOptions;
use crate::train::lbfgs::LbfgsSpec;
use crate::train::objective::Prior;
use crate::train::spec::RunSpec;
use std::path::PathBuf;

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct LaunchForm {
    pub name: String,
    /// Data, template and model options: the same fields the Data pane loads.
    #[serde(flatten)]
    pub data: DataSource,
    pub estimator: String,
    /// Piece groups (`state+transition;…`); empty = factor-as-piece.
    pub pieces: String,
    /// Temperature μ for pw-reweighted; `None` = uniform 1/|pieces|.
    pub mu: Option<f64>,
    /// Loopy BP options for bp (and for max-product decoding of loopy graphs).
    pub bp: BpOptions,
    /// SCL's policy text (`λ:β*family + …`) and selection model; Z is drawn from `seed`.
    pub policy: String,
    pub selection: Selection,
    /// Choose β by 004's heuristic; redraw Z every this many iterations (0: never).
    pub auto_beta: bool,
    pub resample_every: usize,
    /// CAMEL's outer loop: tolerance on g and relinearisations at most.
    pub camel: crate::estimators::camel::CamelOptions,
    /// Which wrong source states get a NOTA term (nota).
    pub nota: crate::estimators::NotaSelection,
    /// Fit per-state scales after training (chains; 001 §3).
    pub per_state_scaling: bool,
    /// Test-time decoder.
    pub decode: crate::eval::Decoder,
    /// CRFsuite's c2 (σ² = 1/(2·c2)); 0 = no prior.
    pub c2: f64,
    pub max_iter: usize,
    pub threads: usize,
    pub seed: u64,
    pub eval_every: usize,
    /// A finished run whose matching weights start this one (empty: from 0).
    #[serde(default)]
    pub init_from: String,
}

impl Default for LaunchForm {
    fn default() -> Self {
        LaunchForm {
            name: String::new(),
            data: DataSource {
                train: String::new(),
                test: String::new(),
                template: String::new(),
                factorisation: Factorisation::Split,
                feature_set: FeatureSet::All,
                min_freq: 1,
                extractor: Default::default(),
                family: Default::default(),
                grid: Default::default(),
                boltzmann: Default::default(),
                skip: Default::default(),
            },
            estimator: "pwpl".into(),
            pieces: String::new(),
            mu: None,
            bp: BpOptions::default(),
            policy: SelectionPolicy::default().to_string(),
            selection: Selection::Independent,
            auto_beta: false,
            resample_every: 0,
            camel: Default::default(),
            nota: Default::default(),
            per_state_scaling: false,
            init_from: String::new(),
            decode: Default::default(),
            c2: 1.0,
            max_iter: 100,
            threads: 1,
            seed: 0,
            eval_every: 5,
        }
    }
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

    /// The estimator the form describes.
    pub fn estimator_spec(&self) -> crate::error::Result<EstimatorSpec> {
        let spec = EstimatorSpec::from_name(&self.estimator)?;
        let pieces =
            (spec.has_pieces() && !self.pieces.trim().is_empty()).then(|| self.pieces.trim());
        let mu = match spec {
            EstimatorSpec::PwReweighted { .. } => self.mu,
            _ => None,
        };
        let spec = EstimatorSpec::with_knobs(&self.estimator, pieces, mu)?.with_bp(self.bp);
        Ok(match spec {
            EstimatorSpec::Scl { .. } => {
                let mut p = SelectionPolicy::parse(&self.policy, self.selection, self.seed)?;
                p.auto_beta = self.auto_beta;
                p.resample_every = self.resample_every;
                spec.with_policy(p)
            }
            EstimatorSpec::Camel { variant, .. } => {
                self.camel.check()?;
                EstimatorSpec::Camel {
                    variant,
                    camel: self.camel,
                }
            }
            EstimatorSpec::Nota { .. } => {
                self.nota.check()?;
                EstimatorSpec::Nota {
                    selection: self.nota.clone(),
                }
            }
            s => s,
        })
    }

    /// The run spec, or what is wrong with the form.
    pub fn to_spec(&self) -> Result<RunSpec, String> {
        if self.data.train.trim().is_empty() {
            return Err("the run needs training data".into());
        }
        if self.c2.is_nan() || self.c2 < 0.0 {
            return Err("c2 must be ≥ 0".into());
        }
        if self.max_iter == 0 {
            return Err("the run needs at least one iteration".into());
        }
        let estimator = self.estimator_spec().map_err(|e| e.to_string())?;
        Ok(RunSpec {
            name: (!self.name.trim().is_empty()).then(|| self.name.trim().to_string()),
            train: PathBuf::from(self.data.train.trim()),
            test: self.data.test_path(),
            template: self.data.template_path(),
            model: self.data.model_spec(),
            estimator,
            optimiser: LbfgsSpec {
                max_iter: self.max_iter,
                ..LbfgsSpec::default()
            },
            prior: Prior::from_c2(self.c2),
            eval_every: self.eval_every,
            seed: self.seed,
            threads: self.threads,
            decode: self.decode,
            train_sample: None,
            eval_train: false,
            per_state_scaling: self.per_state_scaling,
            init_from: (!self.init_from.trim().is_empty())
                .then(|| PathBuf::from(self.init_from.trim())),
        })
    }

    /// The form that produces `spec` (for "rerun with edits").
    pub fn from_spec(spec: &RunSpec) -> LaunchForm {
        let path = |p: &Option<PathBuf>| {
            p.as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        };
        let mut data = LaunchForm::default().data;
        data.train = spec.train.display().to_string();
        data.test = path(&spec.test);
        data.template = path(&spec.template);
        data.set_model(&spec.model);
        LaunchForm {
            name: spec.name.clone().unwrap_or_default(),
            data,
            bp: spec.estimator.bp().copied().unwrap_or_default(),
            policy: spec
                .estimator
                .policy()
                .map(|p| p.to_string())
                .unwrap_or_else(|| SelectionPolicy::default().to_string()),
            selection: spec
                .estimator
                .policy()
                .map(|p| p.selection)
                .unwrap_or_default(),
            auto_beta: spec.estimator.policy().is_some_and(|p| p.auto_beta),
            resample_every: spec.estimator.policy().map_or(0, |p| p.resample_every),
            camel: match &spec.estimator {
                EstimatorSpec::Camel { camel, .. } => *camel,
                _ => Default::default(),
            },
            nota: spec.estimator.nota().cloned().unwrap_or_default(),
            per_state_scaling: spec.per_state_scaling,
            init_from: path(&spec.init_from),
            decode: spec.decode,
            estimator: spec.estimator.name().to_string(),
            pieces: spec
                .estimator
                .pieces()
                .map(|p| p.to_string())
                .unwrap_or_default(),
            mu: match &spec.estimator {
                EstimatorSpec::PwReweighted { mu, .. } => *mu,
                _ => None,
            },
            c2: spec.prior.sigma2.map(|s2| 1.0 / (2.0 * s2)).unwrap_or(0.0),
            max_iter: spec.optimiser.max_iter,
            threads: spec.threads,
            seed: spec.seed,
            eval_every: spec.eval_every,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::LaunchForm;
    use crate::estimators::scl::Selection;

    /// The SCL knobs survive form → spec → form ("Rerun with edits"), and Z's seed is the run's.
    #[test]
    fn scl_knobs_round_trip() {
        let mut f = LaunchForm::default();
        f.data.train = "train.txt".into();
        f.estimator = "scl".into();
        f.policy = "0.7:1*pl1 + 0.3:1*pl2".into();
        f.selection = Selection::Multinomial;
        f.auto_beta = true;
        f.resample_every = 5;
        f.seed = 3;
        let spec = f.to_spec().unwrap();
        let p = spec.estimator.policy().unwrap();
        assert!(p.auto_beta && p.resample_every == 5 && p.seed == 3);
        assert_eq!(p.selection, Selection::Multinomial);
        let g = LaunchForm::from_spec(&spec);
        assert_eq!(
            (
                g.policy.as_str(),
                g.selection,
                g.auto_beta,
                g.resample_every
            ),
            (f.policy.as_str(), f.selection, true, 5)
        );
        // CAMEL's outer-loop knobs too.
        f.estimator = "cccp-camel".into();
        f.camel.tol = 1e-3;
        f.camel.max_outer = 7;
        let g = LaunchForm::from_spec(&f.to_spec().unwrap());
        assert_eq!((g.estimator.as_str(), g.camel), ("cccp-camel", f.camel));
        f.estimator = "scl".into();
        f.policy = "0.7:1*pl9x".into();
        assert!(f
            .to_spec()
            .unwrap_err()
            .contains("unknown component family"));
    }
}
