//! The estimators' knobs (the settings schema) and the conversion between them and an
//! [`EstimatorSpec`]. A knob that does not apply to the chosen estimator is ignored here (the
//! GUI keeps its value while another estimator is picked); the command line refuses it.

use super::camel::CamelOptions;
use super::scl::{Selection, SelectionPolicy};
use super::{EstimatorSpec, NotaSelection, Pieces};
use crate::error::{Error, Result};
use crate::inference::{BpOptions, Schedule};
use crate::settings::{choice_name, choices, set_unless_default, Applies, Kind, Knob, KnobValues};
use clap::builder::PossibleValue;

const PIECEWISE: &[&str] = &["pw", "pw-reweighted", "pwpl"];
const CAMEL: &[&str] = &["camel0", "cccp-camel", "cccp-camel-empirical"];
const SCL: &[&str] = &["scl"];
const NOTA: &[&str] = &["nota"];

fn estimator_names() -> Vec<PossibleValue> {
    EstimatorSpec::NAMES
        .iter()
        .chain(EstimatorSpec::GRAMMAR_ONLY)
        .map(|n| PossibleValue::new(*n))
        .collect()
}

/// Which wrong source states get a NOTA term, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum NotaMode {
    /// Every wrong source state (001 Table 1, NER)
    Exhaustive,
    /// A seeded fraction of the (position, wrong source state) pairs
    Sampled,
    /// After N iterations, the wrong states whose marginal exceeds the threshold (003 POS: 20 iterations, 0.2)
    ErrorDriven,
}

fn beta_modes() -> Vec<PossibleValue> {
    vec![PossibleValue::new("auto")
        .help("choose the families' weights β by 004's heuristic (§7, Algorithm 1)")]
}

pub static ESTIMATOR: Knob = Knob {
    row: "Estimator",
    name: crate::settings::ESTIMATOR,
    label: "estimator",
    help: "ml, bp, pl, pl-edge, pw, pw-reweighted, pwpl, scl, camel0, cccp-camel, \
           cccp-camel-empirical, memm or nota; for grammars also generative (the relative-frequency \
           PCFG)",
    kind: Kind::Choice(estimator_names),
    default: crate::settings::DEFAULT_ESTIMATOR,
    applies: Applies::Always,
};
pub static PIECES: Knob = Knob {
    row: "Pieces",
    name: "pieces",
    label: "Pieces",
    help: "Pieces for pw, pw-reweighted and pwpl: groups of template names, `+` within a group, \
           `;` between groups, one piece per group and position (e.g. `state+transition`); \
           templates in no group are a piece per factor (empty: factor-as-piece)",
    kind: Kind::Text,
    default: "",
    applies: Applies::Estimators(PIECEWISE),
};
pub static MU: Knob = Knob {
    row: "Pieces",
    name: "mu",
    label: "μ",
    help: "Temperature μ of every piece for pw-reweighted (empty: uniform 1/|pieces|)",
    kind: Kind::Real {
        min: 1e-4,
        max: 10.0,
    },
    default: "",
    applies: Applies::Estimators(&["pw-reweighted"]),
};
/// BP's options are the bp estimator's (training, and max-product decoding of its runs).
const BP: &[&str] = &["bp"];
pub static BP_SCHEDULE: Knob = Knob {
    row: "Loopy BP",
    name: "bp-schedule",
    label: "schedule",
    help: "Loopy BP's message schedule: parallel (flooding), sequential or residual",
    kind: Kind::Choice(choices::<Schedule>),
    default: "sequential",
    applies: Applies::Estimators(BP),
};
pub static BP_DAMPING: Knob = Knob {
    row: "Loopy BP",
    name: "bp-damping",
    label: "damping",
    help: "Loopy BP's damping: weight of the old message, in [0, 1)",
    kind: Kind::Real {
        min: 0.0,
        max: 0.99,
    },
    default: "0",
    applies: Applies::Estimators(BP),
};
pub static BP_TOL: Knob = Knob {
    row: "BP stops",
    name: "bp-tol",
    label: "tol",
    help: "Loopy BP has converged when no log message entry moves by more than this",
    kind: Kind::Real {
        min: 1e-15,
        max: 1.0,
    },
    default: "1e-8",
    applies: Applies::Estimators(BP),
};
pub static BP_MAX_SWEEPS: Knob = Knob {
    row: "BP stops",
    name: "bp-max-sweeps",
    label: "sweeps",
    help: "Loopy BP's sweep limit per call",
    kind: Kind::Count {
        min: 1,
        max: 100_000,
    },
    default: "200",
    applies: Applies::Estimators(BP),
};
pub static POLICY: Knob = Knob {
    row: "SCL policy",
    name: "policy",
    label: "SCL policy",
    help:
        "For scl: `λ:β*family + …` with families fl, pl1, pl2, … (e.g. `0.7:1*pl1 + 0.3:1*pl2`); \
           `;` separates the groups of a product of multinomials; Z is drawn from the seed",
    kind: Kind::Text,
    default: "1:1*pl1",
    applies: Applies::Estimators(SCL),
};
pub static SELECTION: Knob = Knob {
    row: "Selection",
    name: "selection",
    label: "selection",
    help: "How SCL's components are selected per item: independent (each with its family's λ) or \
           multinomial (one family per group)",
    kind: Kind::Choice(choices::<Selection>),
    default: "independent",
    applies: Applies::Estimators(SCL),
};
pub static BETA: Knob = Knob {
    row: "SCL rounds",
    name: "beta",
    label: "β",
    help: "`auto`: choose the families' weights β by 004's heuristic (§7, Algorithm 1), \
           alternating with the fit; the policy's β are the starting point",
    kind: Kind::Choice(beta_modes),
    default: "",
    applies: Applies::Estimators(SCL),
};
pub static RESAMPLE_EVERY: Knob = Knob {
    row: "SCL rounds",
    name: "resample-every",
    label: "resample every",
    help: "Draw SCL's selection Z anew every N optimiser iterations, keeping θ (0: once per run)",
    kind: Kind::Count {
        min: 0,
        max: 1_000_000,
    },
    default: "0",
    applies: Applies::Estimators(SCL),
};
pub static CAMEL_TOL: Knob = Knob {
    row: "CAMEL",
    name: "camel-tol",
    label: "g tol",
    help: "CAMEL: stop relinearising when no entry of the linearisation g moves by more than this",
    kind: Kind::Real {
        min: 1e-9,
        max: 10.0,
    },
    default: "1e-4",
    applies: Applies::Estimators(CAMEL),
};
pub static CAMEL_MAX_OUTER: Knob = Knob {
    row: "CAMEL",
    name: "camel-max-outer",
    label: "outer loops",
    help: "CAMEL: relinearisations of g at most",
    kind: Kind::Count { min: 1, max: 1000 },
    default: "20",
    applies: Applies::Estimators(CAMEL),
};
pub static CAMEL_SWEEP_TOL: Knob = Knob {
    row: "CAMEL",
    name: "camel-sweep-tol",
    label: "δ tol",
    help: "CAMEL: each evaluation sweeps the multipliers δ until no two clusters disagree on a \
           shared variable by more than this",
    kind: Kind::Real {
        min: 1e-12,
        max: 0.1,
    },
    default: "1e-4",
    applies: Applies::Estimators(CAMEL),
};
pub static CAMEL_MAX_SWEEPS: Knob = Knob {
    name: "camel-max-sweeps",
    row: "CAMEL",
    label: "δ sweeps",
    help: "CAMEL: δ sweeps at most per evaluation and instance",
    kind: Kind::Count {
        min: 1,
        max: 1_000_000,
    },
    default: "1000",
    applies: Applies::Estimators(CAMEL),
};
pub static NOTA_MODE: Knob = Knob {
    row: "NOTA",
    name: "nota",
    label: "NOTA terms",
    help: "nota: exhaustive (every wrong source state), sampled (a seeded fraction) or \
           error-driven (after --nota-after iterations, the wrong states whose marginal exceeds \
           --nota-threshold)",
    kind: Kind::Choice(choices::<NotaMode>),
    default: "exhaustive",
    applies: Applies::Estimators(NOTA),
};
pub static NOTA_FRACTION: Knob = Knob {
    row: "NOTA",
    name: "nota-fraction",
    label: "fraction",
    help: "nota sampled: the fraction of (position, wrong source state) pairs kept (seed: --seed)",
    kind: Kind::Real { min: 0.0, max: 1.0 },
    default: "0.1",
    applies: Applies::When(|s| s.estimator() == "nota" && s.get(&NOTA_MODE) == "sampled"),
};
fn error_driven(s: &KnobValues) -> bool {
    s.estimator() == "nota" && s.get(&NOTA_MODE) == "error-driven"
}
pub static NOTA_AFTER: Knob = Knob {
    row: "NOTA rounds",
    name: "nota-after",
    label: "after",
    help: "nota error-driven: iterations before the NOTA terms are chosen (003: 20)",
    kind: Kind::Count {
        min: 0,
        max: 1_000_000,
    },
    default: "20",
    applies: Applies::When(error_driven),
};
pub static NOTA_THRESHOLD: Knob = Knob {
    row: "NOTA rounds",
    name: "nota-threshold",
    label: "marginal >",
    help:
        "nota error-driven: marginal probability above which a wrong state gets a term (003: 0.2)",
    kind: Kind::Real {
        min: 0.0,
        max: 0.999,
    },
    default: "0.2",
    applies: Applies::When(error_driven),
};
pub static NOTA_WEIGHT: Knob = Knob {
    row: "NOTA",
    name: "nota-weight",
    label: "weight",
    help: "nota (chains): the weight of every NOTA term (001: 1; 0 keeps NOTA only in the \
           normalisers, 1/(L − 1) makes a position's exhaustive NOTA terms weigh as much as its \
           gold term)",
    kind: Kind::Real {
        min: 0.0,
        max: 100.0,
    },
    default: "1",
    applies: Applies::When(|s| s.estimator() == "nota" && s.family() != "grammar"),
};
pub static NOTA_REFRESH: Knob = Knob {
    row: "NOTA rounds",
    name: "nota-refresh",
    label: "refresh",
    help: "nota error-driven: choose the terms anew every N iterations (0: once)",
    kind: Kind::Count {
        min: 0,
        max: 1_000_000,
    },
    default: "0",
    applies: Applies::When(error_driven),
};

/// Every estimator knob, the estimator first.
pub static ESTIMATOR_KNOBS: &[&Knob] = &[
    &ESTIMATOR,
    &PIECES,
    &MU,
    &POLICY,
    &SELECTION,
    &BETA,
    &RESAMPLE_EVERY,
    &CAMEL_TOL,
    &CAMEL_MAX_OUTER,
    &CAMEL_SWEEP_TOL,
    &CAMEL_MAX_SWEEPS,
    &NOTA_MODE,
    &NOTA_FRACTION,
    &NOTA_WEIGHT,
    &NOTA_AFTER,
    &NOTA_THRESHOLD,
    &NOTA_REFRESH,
    &BP_SCHEDULE,
    &BP_DAMPING,
    &BP_TOL,
    &BP_MAX_SWEEPS,
];

/// SCL's policy knobs (the `theory` command takes these alone).
pub static SCL_KNOBS: &[&Knob] = &[&POLICY, &SELECTION, &BETA, &RESAMPLE_EVERY];

/// Loopy BP's knobs (the `infer` command takes these alone).
pub static BP_KNOBS: &[&Knob] = &[&BP_SCHEDULE, &BP_DAMPING, &BP_TOL, &BP_MAX_SWEEPS];

impl BpOptions {
    /// The BP knobs' options.
    pub fn from_settings(s: &KnobValues) -> Result<BpOptions> {
        let o = BpOptions {
            schedule: s.choice(&BP_SCHEDULE)?.unwrap_or_default(),
            damping: s.parse(&BP_DAMPING)?,
            tol: s.parse(&BP_TOL)?,
            max_sweeps: s.parse(&BP_MAX_SWEEPS)?,
        };
        o.check()?;
        Ok(o)
    }
}

impl SelectionPolicy {
    /// The SCL knobs' policy; Z drawn from `seed`.
    pub fn from_settings(s: &KnobValues, seed: u64) -> Result<SelectionPolicy> {
        let selection = s.choice(&SELECTION)?.unwrap_or(Selection::Independent);
        let mut policy = SelectionPolicy::parse(s.get(&POLICY), selection, seed)?;
        policy.auto_beta = s.get(&BETA) == "auto";
        policy.resample_every = s.parse(&RESAMPLE_EVERY)?;
        Ok(policy)
    }
}

impl EstimatorSpec {
    /// The estimator the settings describe, its knobs applied; `seed` seeds SCL's selection and
    /// sampled NOTA terms.
    pub fn from_settings(s: &KnobValues, seed: u64) -> Result<EstimatorSpec> {
        let mut spec = EstimatorSpec::from_name(s.estimator())?;
        if spec.has_pieces() && !s.get(&PIECES).trim().is_empty() {
            spec = spec.with_pieces(Pieces::parse(s.get(&PIECES).trim())?);
        }
        Ok(match spec {
            EstimatorSpec::PwReweighted { pieces, .. } => EstimatorSpec::PwReweighted {
                pieces,
                mu: s.opt(&MU)?,
            },
            EstimatorSpec::Bp { .. } => EstimatorSpec::Bp {
                bp: BpOptions::from_settings(s)?,
            },
            EstimatorSpec::Scl { .. } => EstimatorSpec::Scl {
                policy: SelectionPolicy::from_settings(s, seed)?,
            },
            EstimatorSpec::Camel { variant, .. } => {
                let camel = CamelOptions {
                    tol: s.parse(&CAMEL_TOL)?,
                    max_outer: s.parse(&CAMEL_MAX_OUTER)?,
                    sweep_tol: s.parse(&CAMEL_SWEEP_TOL)?,
                    max_sweeps: s.parse(&CAMEL_MAX_SWEEPS)?,
                };
                camel.check()?;
                EstimatorSpec::Camel { variant, camel }
            }
            EstimatorSpec::Nota { .. } => {
                // The grammar's PT-CFG (001 §5) is error-driven after 10 iterations unless told
                // otherwise: every wrong chart edge is far too many terms.
                let grammar = s.family() == "grammar";
                let mode = if grammar && !s.given(NOTA_MODE.name) {
                    NotaMode::ErrorDriven
                } else {
                    s.choice(&NOTA_MODE)?.unwrap_or(NotaMode::Exhaustive)
                };
                let selection = match mode {
                    NotaMode::Exhaustive => NotaSelection::Exhaustive,
                    NotaMode::Sampled => NotaSelection::Sampled {
                        fraction: s.parse(&NOTA_FRACTION)?,
                        seed,
                    },
                    NotaMode::ErrorDriven => NotaSelection::ErrorDriven {
                        after: if grammar && !s.given(NOTA_AFTER.name) {
                            10
                        } else {
                            s.parse(&NOTA_AFTER)?
                        },
                        threshold: s.parse(&NOTA_THRESHOLD)?,
                        refresh: s.parse(&NOTA_REFRESH)?,
                    },
                };
                selection.check()?;
                let weight = if grammar { 1.0 } else { s.parse(&NOTA_WEIGHT)? };
                crate::estimators::memm::check_weight(weight)?;
                EstimatorSpec::Nota { selection, weight }
            }
            spec => spec,
        })
    }

    /// Writes the estimator's knobs into `s` (other estimators' knobs keep their values).
    pub fn to_settings(&self, s: &mut KnobValues) {
        s.set(ESTIMATOR.name, self.name());
        if let Some(p) = self.pieces() {
            set_unless_default(s, &PIECES, p);
        }
        match self {
            EstimatorSpec::PwReweighted { mu, .. } => {
                set_unless_default(s, &MU, mu.map(|m| m.to_string()).unwrap_or_default())
            }
            EstimatorSpec::Bp { bp } => {
                set_unless_default(s, &BP_SCHEDULE, choice_name(&bp.schedule));
                set_unless_default(s, &BP_DAMPING, bp.damping);
                set_unless_default(s, &BP_TOL, bp.tol);
                set_unless_default(s, &BP_MAX_SWEEPS, bp.max_sweeps);
            }
            EstimatorSpec::Scl { policy } => {
                set_unless_default(s, &POLICY, policy);
                set_unless_default(s, &SELECTION, choice_name(&policy.selection));
                set_unless_default(s, &BETA, if policy.auto_beta { "auto" } else { "" });
                set_unless_default(s, &RESAMPLE_EVERY, policy.resample_every);
            }
            EstimatorSpec::Camel { camel, .. } => {
                set_unless_default(s, &CAMEL_TOL, camel.tol);
                set_unless_default(s, &CAMEL_MAX_OUTER, camel.max_outer);
                set_unless_default(s, &CAMEL_SWEEP_TOL, camel.sweep_tol);
                set_unless_default(s, &CAMEL_MAX_SWEEPS, camel.max_sweeps);
            }
            EstimatorSpec::Nota { selection, weight } => {
                set_unless_default(s, &NOTA_WEIGHT, weight);
                match selection {
                    NotaSelection::Exhaustive => s.set(NOTA_MODE.name, "exhaustive"),
                    NotaSelection::Sampled { fraction, .. } => {
                        s.set(NOTA_MODE.name, "sampled");
                        set_unless_default(s, &NOTA_FRACTION, fraction);
                    }
                    NotaSelection::ErrorDriven {
                        after,
                        threshold,
                        refresh,
                    } => {
                        s.set(NOTA_MODE.name, "error-driven");
                        set_unless_default(s, &NOTA_AFTER, after);
                        set_unless_default(s, &NOTA_THRESHOLD, threshold);
                        set_unless_default(s, &NOTA_REFRESH, refresh);
                    }
                }
            }
            _ => {}
        }
    }
}

/// The command line's check: every estimator knob given must apply to the estimator given.
pub fn check_given(s: &KnobValues) -> Result<()> {
    for k in ESTIMATOR_KNOBS {
        if let Applies::Estimators(names) = k.applies {
            if s.given(k.name) && !k.applies(s) {
                return Err(Error::invalid(format!(
                    "--{} applies to {}, not {}",
                    k.name,
                    names.join(", "),
                    s.estimator()
                )));
            }
        }
    }
    Ok(())
}
