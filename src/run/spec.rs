//! A run is fully described by a [`RunSpec`]: the same spec runs from the CLI, the GUI and
//! tests, and is stored with its results so any figure can be regenerated.

use crate::estimators::EstimatorSpec;
use crate::eval::{Decoder, Inference};
use crate::optim::{LbfgsSpec, Prior};
pub use crate::run::registry::ModelSpec;
use crate::util::check_threads;
use std::path::PathBuf;

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct RunSpec {
    /// A label for lists and legends.
    #[serde(default)]
    pub name: Option<String>,
    /// Training data in the model family's format.
    pub train: PathBuf,
    /// Held-out data, evaluated at the end (and every `eval_every` iterations).
    #[serde(default)]
    pub test: Option<PathBuf>,
    /// CRF++ template file for chains; `None` is the built-in chunking template.
    #[serde(default)]
    pub template: Option<PathBuf>,
    #[serde(default)]
    pub model: ModelSpec,
    pub estimator: EstimatorSpec,
    #[serde(default)]
    pub optimiser: LbfgsSpec,
    pub prior: Prior,
    /// Evaluate on `test` every this many iterations (0: only at the end).
    #[serde(default)]
    pub eval_every: usize,
    #[serde(default)]
    pub seed: u64,
    /// Worker threads; 0 uses every core.
    #[serde(default)]
    pub threads: usize,
    /// Test-time decoder (`auto` picks the exact one the graph allows).
    #[serde(default)]
    pub decode: Decoder,
    /// Train on this many items of `train`, drawn without replacement with `seed` (004 §8.3
    /// samples 100 CoNLL-2000 sentences); `None` uses them all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub train_sample: Option<usize>,
    /// Also score the training data at the end (`summary.train`: the train-set NLL of 004's
    /// train/test contour maps).
    #[serde(default)]
    pub eval_train: bool,
    /// After training, fit one multiplicative factor per source state by global likelihood
    /// with the weights fixed (001 §3; `scaling.json`); test-time decoding then uses them.
    #[serde(default)]
    pub per_state_scaling: bool,
    /// After training, fit one multiplicative factor per parameter subset (003 §3: each
    /// template, a chain's state weights also by feature bag) by global likelihood with the
    /// weights fixed, and keep the calibrated weights (`subset-scaling.json`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub subset_scaling: bool,
    /// Start from the weights of a finished run: templates, features and labels with the same
    /// names are copied, the rest start at 0 — BP training of a skip-chain from a trained
    /// linear chain (000 §5.1.3: from uniform weights it was slower and worse).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_from: Option<PathBuf>,
}

/// A placeholder spec (no training data): what the GUI shows for a run whose `spec.json` it
/// cannot read.
impl Default for RunSpec {
    fn default() -> Self {
        RunSpec {
            name: None,
            train: PathBuf::new(),
            test: None,
            template: None,
            model: ModelSpec::default(),
            estimator: EstimatorSpec::Ml,
            optimiser: LbfgsSpec::default(),
            prior: Prior { sigma2: None },
            eval_every: 0,
            seed: 0,
            threads: 0,
            decode: Decoder::default(),
            train_sample: None,
            eval_train: false,
            per_state_scaling: false,
            subset_scaling: false,
            init_from: None,
        }
    }
}

impl RunSpec {
    /// Test-time inference: the decoder, and for loopy max-product the estimator's BP options
    /// (the defaults when it runs no BP).
    pub fn inference(&self) -> Inference {
        let decoder = match self.decode {
            Decoder::Auto if self.estimator.is_locally_normalised() && !self.per_state_scaling => {
                Decoder::Local
            }
            d => d,
        };
        Inference {
            decoder,
            bp: self.estimator.bp().copied().unwrap_or_default(),
            scaling: None,
        }
    }
}

impl RunSpec {
    /// The model this run's held-out log-likelihood is under ([`crate::eval::likelihood_under`]):
    /// views that show it before the run's summary exists (the Curves pane) name it by this.
    pub fn likelihood_under(&self) -> &'static str {
        crate::eval::likelihood_under(self.inference().decoder, self.per_state_scaling)
    }
}

impl RunSpec {
    /// Refuses a spec whose numbers lie outside the ranges the command line and the GUI
    /// enforce (a `spec.json` is deserialised without them), naming the field: the spec's
    /// settings are parsed back with their knobs' ranges, and the optimiser and the thread
    /// count are checked on their own.
    /// The spec with its relative data paths made absolute against `cwd` (the directory the
    /// run was started in); `-` and absolute paths stay as they are.
    pub fn with_paths_from(mut self, cwd: &std::path::Path) -> RunSpec {
        if cwd.as_os_str().is_empty() {
            return self;
        }
        let fix = |p: &mut PathBuf| {
            if p.is_relative() && !crate::util::is_stdin(p) && !p.as_os_str().is_empty() {
                *p = cwd.join(&*p);
            }
        };
        fix(&mut self.train);
        self.test.as_mut().map(fix);
        self.template.as_mut().map(fix);
        self
    }

    pub fn check(&self) -> Result<()> {
        self.optimiser.check()?;
        check_threads(self.threads, "threads")?;
        let stdin = |p: &Option<PathBuf>| p.as_deref().is_some_and(crate::util::is_stdin);
        if crate::util::is_stdin(&self.train) && stdin(&self.test) {
            return Err(Error::invalid(
                "--train and --test both read standard input (`-`): one stream cannot be both; \
                 give one of them as a file",
            ));
        }
        let mut s = self.to_settings();
        // Ranges only: a spec still without data (a lesson's sweep before it is started) passes.
        if self.train.as_os_str().is_empty() {
            s.set(TRAIN.name, "data");
        }
        RunSpec::from_settings(&s).map(|_| ())
    }
}

// ---- The run's knobs (the settings schema) ----

use crate::error::{Error, Result};
use crate::settings::{choice_name, choices, set_unless_default, Applies, Kind, Knob, KnobValues};

pub static NAME: Knob = Knob {
    row: "Name",
    name: "name",
    label: "Name",
    help: "A label for lists and legends (the command line uses the estimator's name)",
    kind: Kind::Text,
    default: "",
    applies: Applies::Always,
};
pub static TRAIN: Knob = Knob {
    row: "Train data",
    name: "train",
    label: "Train data",
    help: "Training data in the model family's format (chains: CoNLL columns, label last, or a \
           seminar folder; grids: the grid format; boltzmann: one sample a line)",
    kind: Kind::Path,
    default: "",
    applies: Applies::Always,
};
pub static TEST: Knob = Knob {
    row: "Test data",
    name: "test",
    label: "Test data",
    help: "Held-out data scored at the end (and every --eval-every iterations)",
    kind: Kind::Path,
    default: "",
    applies: Applies::Always,
};
pub static TEMPLATE: Knob = Knob {
    row: "Template",
    name: "template",
    label: "Template",
    help: "CRF++ template file for chains (empty: the built-in CRF++ chunking template)",
    kind: Kind::Path,
    default: "",
    applies: Applies::Families(&["chain", "skip-chain"]),
};
pub static DECODE: Knob = Knob {
    row: "Decoding",
    name: "decode",
    label: "decoder",
    help: "Test-time decoder: auto (Viterbi on chains — local for memm and nota runs without \
           per-state scales —, exact max-product on trees, enumeration on small graphs, loopy \
           max-product otherwise), viterbi (alias global), local, max-product, exact or marginal",
    kind: Kind::Choice(choices::<Decoder>),
    default: "auto",
    applies: Applies::Always,
};
pub static PER_STATE_SCALING: Knob = Knob {
    row: "Decoding",
    name: "per-state-scaling",
    label: "per-state scaling",
    help: "Chains: after training, fit one multiplicative factor per source state by global \
           likelihood with the weights fixed (001 §3), and decode with them",
    kind: Kind::Flag,
    default: "false",
    applies: Applies::Families(&["chain"]),
};
pub static SUBSET_SCALING: Knob = Knob {
    row: "Decoding",
    name: "subset-scaling",
    label: "per-subset scaling",
    help: "After training, fit one multiplicative factor per parameter subset (each template; \
           a bagged chain's state weights per feature bag) by global likelihood with the \
           weights fixed, and keep the calibrated weights (003 §3, the two-stage training of \
           Fig. 2)",
    kind: Kind::Flag,
    default: "false",
    applies: Applies::Always,
};
pub static C2: Knob = Knob {
    row: "Prior",
    name: "c2",
    label: "c2",
    help: "L2 penalty c2·‖w‖² as in CRFsuite (σ² = 1/(2·c2); 0: no prior); default 1.0",
    kind: Kind::Real { min: 0.0, max: 1e6 },
    default: "",
    applies: Applies::Always,
};
pub static SIGMA2: Knob = Knob {
    row: "Prior",
    name: "sigma2",
    label: "or σ²",
    help: "Gaussian prior variance σ² (penalty ‖w‖²/(2σ²)); instead of --c2",
    kind: Kind::Real {
        min: 1e-12,
        max: 1e12,
    },
    default: "",
    applies: Applies::Always,
};
pub static MAX_ITER: Knob = Knob {
    row: "Optimiser",
    name: "max-iter",
    label: "max iterations",
    help: "L-BFGS iterations at most",
    kind: Kind::Count {
        min: 1,
        max: 1_000_000,
    },
    default: "1000",
    applies: Applies::Always,
};
pub static DELTA: Knob = Knob {
    row: "Optimiser",
    name: "delta",
    label: "stop below",
    help: "Stop when the objective improved by less than this fraction over --period iterations",
    kind: Kind::Real { min: 0.0, max: 1.0 },
    default: "1e-5",
    applies: Applies::Always,
};
pub static PERIOD: Knob = Knob {
    row: "Optimiser",
    name: "period",
    label: "over",
    help: "The window of the --delta stopping test",
    kind: Kind::Count {
        min: 1,
        max: 10_000,
    },
    default: "10",
    applies: Applies::Always,
};
pub static INIT_FROM: Knob = Knob {
    row: "Init from",
    name: "init-from",
    label: "Init from",
    help: "Start from the weights of a finished run: templates, features and labels with the \
           same names are copied, the rest start at 0 (000 §5.1.3: BP training of the \
           skip-chain from a trained linear chain)",
    kind: Kind::Path,
    default: "",
    applies: Applies::Always,
};
pub static EVAL_EVERY: Knob = Knob {
    row: "Evaluate every",
    name: "eval-every",
    label: "Evaluate every",
    help: "Evaluate on the test data every N iterations (0: at the end only)",
    kind: Kind::Count {
        min: 0,
        max: 100_000,
    },
    default: "0",
    applies: Applies::Always,
};
pub static TRAIN_SAMPLE: Knob = Knob {
    row: "Train on",
    name: "train-sample",
    label: "Train on",
    help: "Train on N items of the training data drawn without replacement with the seed \
           (004 §8.3: 100); empty: all",
    kind: Kind::Count {
        min: 1,
        max: u32::MAX as u64,
    },
    default: "",
    applies: Applies::Always,
};
pub static EVAL_TRAIN: Knob = Knob {
    row: "Evaluate every",
    name: "eval-train",
    label: "score training data",
    help: "Also score the training data at the end (train NLL in the summary)",
    kind: Kind::Flag,
    default: "false",
    applies: Applies::Always,
};
pub static THREADS: Knob = Knob {
    row: "Threads",
    name: "threads",
    label: "Threads",
    help: "Worker threads (0: all cores)",
    kind: Kind::Count { min: 0, max: 1024 },
    default: "0",
    applies: Applies::Always,
};
pub static SEED: Knob = Knob {
    row: "Threads",
    name: "seed",
    label: "Seed",
    help: "Seeds SCL's selection, sampled NOTA terms and --train-sample",
    kind: Kind::Count {
        min: 0,
        max: u64::MAX,
    },
    default: "0",
    applies: Applies::Always,
};

/// The data of a run.
pub static DATA_KNOBS: &[&Knob] = &[&TRAIN, &TEST, &TEMPLATE];

/// Everything of a run but its data, model and estimator.
pub static RUN_KNOBS: &[&Knob] = &[
    &NAME,
    &DECODE,
    &PER_STATE_SCALING,
    &SUBSET_SCALING,
    &C2,
    &SIGMA2,
    &MAX_ITER,
    &DELTA,
    &PERIOD,
    &INIT_FROM,
    &EVAL_EVERY,
    &TRAIN_SAMPLE,
    &EVAL_TRAIN,
    &THREADS,
    &SEED,
];

impl RunSpec {
    /// The run the settings describe (data, model, estimator and run knobs together).
    pub fn from_settings(s: &KnobValues) -> Result<RunSpec> {
        let train = s
            .path(&TRAIN)
            .ok_or_else(|| Error::invalid("the run needs training data (--train FILE)"))?;
        let prior = match (s.opt::<f64>(&C2)?, s.opt::<f64>(&SIGMA2)?) {
            (Some(_), Some(_)) => {
                return Err(Error::invalid(
                    "--c2 and --sigma2 set the same prior: give one",
                ))
            }
            (_, Some(v)) if v > 0.0 => Prior { sigma2: Some(v) },
            (_, Some(_)) => return Err(Error::invalid("--sigma2 must be positive")),
            (Some(c2), None) if c2 >= 0.0 => Prior::from_c2(c2),
            (Some(_), None) => return Err(Error::invalid("--c2 must be non-negative")),
            (None, None) => Prior::from_c2(1.0),
        };
        let model = ModelSpec::from_settings(s)?;
        let seed: u64 = s.parse(&SEED)?;
        let template = s.path(&TEMPLATE).filter(|_| model.uses_template());
        Ok(RunSpec {
            name: Some(s.get(&NAME).trim().to_string()).filter(|n| !n.is_empty()),
            train,
            test: s.path(&TEST),
            template,
            model,
            estimator: EstimatorSpec::from_settings(s, seed)?,
            optimiser: LbfgsSpec {
                max_iter: s.parse(&MAX_ITER)?,
                period: s.parse(&PERIOD)?,
                delta: s.parse(&DELTA)?,
                ..LbfgsSpec::default()
            },
            prior,
            eval_every: s.parse(&EVAL_EVERY)?,
            seed,
            threads: {
                let n = s.parse(&THREADS)?;
                check_threads(n, "--threads")?;
                n
            },
            decode: s.choice(&DECODE)?.unwrap_or_default(),
            train_sample: s.opt(&TRAIN_SAMPLE)?,
            eval_train: s.flag(&EVAL_TRAIN),
            per_state_scaling: s.flag(&PER_STATE_SCALING),
            subset_scaling: s.flag(&SUBSET_SCALING),
            init_from: s.path(&INIT_FROM),
        })
    }

    /// The settings that give this spec (for "rerun with edits").
    pub fn to_settings(&self) -> KnobValues {
        let mut s = KnobValues::default();
        let path = |p: &Option<PathBuf>| {
            p.as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        };
        set_unless_default(&mut s, &NAME, self.name.clone().unwrap_or_default());
        s.set(TRAIN.name, self.train.display());
        set_unless_default(&mut s, &TEST, path(&self.test));
        set_unless_default(&mut s, &TEMPLATE, path(&self.template));
        self.model.to_settings(&mut s);
        self.estimator.to_settings(&mut s);
        // The prior as CRFsuite's c2 (0: none), the form the GUI edits.
        s.set(
            C2.name,
            self.prior.sigma2.map_or(0.0, |s2| 1.0 / (2.0 * s2)),
        );
        set_unless_default(&mut s, &DECODE, choice_name(&self.decode));
        set_unless_default(&mut s, &PER_STATE_SCALING, self.per_state_scaling);
        set_unless_default(&mut s, &SUBSET_SCALING, self.subset_scaling);
        set_unless_default(&mut s, &MAX_ITER, self.optimiser.max_iter);
        set_unless_default(&mut s, &DELTA, self.optimiser.delta);
        set_unless_default(&mut s, &PERIOD, self.optimiser.period);
        set_unless_default(&mut s, &INIT_FROM, path(&self.init_from));
        set_unless_default(&mut s, &EVAL_EVERY, self.eval_every);
        set_unless_default(
            &mut s,
            &TRAIN_SAMPLE,
            self.train_sample.map(|n| n.to_string()).unwrap_or_default(),
        );
        set_unless_default(&mut s, &EVAL_TRAIN, self.eval_train);
        set_unless_default(&mut s, &THREADS, self.threads);
        set_unless_default(&mut s, &SEED, self.seed);
        s
    }
}
