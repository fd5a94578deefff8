//! Estimators: each is a list of *terms* over an instance's log-potential tables (see
//! [`terms`]); its value is the sum of the terms' values (a log-likelihood-type quantity,
//! higher is better) and its gradient ∂value/∂table entries. None of them touches features or
//! weights; [`crate::graph::Model::scatter`] does that for all. The term lists are data, so the
//! GUI draws exactly what is computed.

pub mod beta;
pub mod camel;
pub mod camel_dual;
pub mod forest_term;
pub mod local;
pub mod memm;
pub mod ml;
pub mod objective;
pub mod scaling;
pub mod scl;
pub mod settings;
pub mod terms;

pub use crate::graph::pieces::Pieces;
pub use local::{EdgePseudolikelihood, Piecewise, Pseudolikelihood, Pwpl};
pub use memm::{Memm, NotaPt, NotaSelection};
pub use ml::{BetheMl, ExactMl};
pub use scl::{Scl, SelectionPolicy};
pub use settings::{ESTIMATOR_KNOBS, SCL_KNOBS};
pub use terms::{evaluate_terms, Term, TermList, TermWork};

use crate::error::{Error, Result};
use crate::graph::{Instance, Model};
use crate::inference::{BpOptions, InferWork};

/// Per-thread scratch reused across instances so the hot loop does not allocate.
#[derive(Default, Clone, Debug)]
pub struct Workspace {
    pub infer: InferWork,
    pub terms: TermList,
    pub term_work: TermWork,
}

impl Workspace {
    /// Counted multiply-adds of inference and normalisation, and BP calls that did not
    /// converge, since the last call.
    pub fn take_counts(&mut self) -> (u64, u64) {
        let (ops, unconverged) = self.infer.take_counts();
        (ops + std::mem::take(&mut self.term_work.ops), unconverged)
    }
}

pub trait Estimator: Send + Sync {
    /// The CLI name (`ml`, `pl`, …).
    fn name(&self) -> &'static str;

    /// Fills `out` with the instance's terms.
    fn terms(&self, inst: &Instance, out: &mut TermList);

    /// The paper's FLOP count (004 §3.1) of this item's objective, for estimators that have one.
    fn paper_flops(&self, _inst: &Instance, _n_params: usize) -> Option<f64> {
        None
    }

    /// Whether every term can be evaluated on `inst` (gold labels, term shapes and sizes).
    fn check(&self, inst: &Instance) -> Result<()> {
        check_terms(self, inst)
    }

    /// The instance's value; when `dphi` is given, adds ∂value/∂φ into it (table-buffer layout).
    /// Training evaluates the same [`terms`](Self::terms) through `DatasetObjective`, which keeps
    /// them per instance and builds only the table entries they read.
    fn evaluate(
        &self,
        inst: &Instance,
        phi: &[f64],
        dphi: Option<&mut [f64]>,
        ws: &mut Workspace,
    ) -> f64 {
        let gold = inst.gold.as_deref().expect("checked: gold labels");
        let mut list = std::mem::take(&mut ws.terms);
        list.clear();
        self.terms(inst, &mut list);
        ws.infer.msgs.reset();
        let value = evaluate_terms(
            inst,
            phi,
            gold,
            &list,
            dphi,
            &mut ws.term_work,
            &mut ws.infer,
        );
        ws.terms = list;
        value
    }
}

/// An estimator and its knobs as data (stored in run specs).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "name", rename_all = "kebab-case")]
pub enum EstimatorSpec {
    /// Exact maximum (conditional) likelihood.
    Ml,
    /// Maximum likelihood with loopy-BP (Bethe) beliefs in place of marginals.
    Bp {
        #[serde(default)]
        bp: BpOptions,
    },
    /// Pseudolikelihood by node (000, eq. 5).
    Pl,
    /// Per-edge pseudolikelihood (000, eq. 42).
    PlEdge,
    /// Piecewise (000, eq. 8).
    Pw {
        #[serde(default)]
        pieces: Pieces,
    },
    /// Reweighted piecewise (000, eq. 35); `mu` = None is the uniform μ = 1/|pieces|.
    PwReweighted {
        #[serde(default)]
        pieces: Pieces,
        #[serde(default)]
        mu: Option<f64>,
    },
    /// Piecewise pseudolikelihood (000, eq. 36–37).
    Pwpl {
        #[serde(default)]
        pieces: Pieces,
    },
    /// Stochastic composite likelihood with a selection policy (004, eq. 7).
    Scl {
        #[serde(default)]
        policy: SelectionPolicy,
    },
    /// The MEMM's conditional likelihood: next-state classifiers, trained on gold source
    /// states (001 eq. 1).
    Memm,
    /// The grammar family's relative-frequency PCFG (001 Table 2's GENERATIVE), in closed
    /// form.
    Generative,
    /// Piecewise training with "none of the above" (CRF-PT; 001 eq. 6, 003 §3).
    Nota {
        #[serde(default)]
        selection: NotaSelection,
        /// The NOTA terms' weight w (001: 1; left out of the spec when 1, so older runs
        /// still match).
        #[serde(default = "one", skip_serializing_if = "is_one")]
        weight: f64,
    },
    /// CAMEL (002): the factors as clusters, consistency multipliers δ per training instance and,
    /// for CCCP, the linearised sepset entropies g. Its clusters are piecewise's pieces (factor
    /// as piece), so the term view shows them; training runs [`camel_dual::fit`].
    Camel {
        variant: camel::CamelVariant,
        #[serde(default)]
        camel: camel::CamelOptions,
    },
}

impl EstimatorSpec {
    /// Names accepted on the command line.
    pub const NAMES: &'static [&'static str] = &[
        "ml",
        "bp",
        "pl",
        "pl-edge",
        "pw",
        "pw-reweighted",
        "pwpl",
        "scl",
        "camel0",
        "cccp-camel",
        "cccp-camel-empirical",
        "memm",
        "nota",
    ];

    /// Estimators only the grammar family trains (the relative-frequency PCFG); `NAMES` are the
    /// factor-graph families' (the grammar takes ml, memm and nota too).
    pub const GRAMMAR_ONLY: &'static [&'static str] = &["generative"];

    /// The estimator called `name`, with default knobs.
    pub fn from_name(name: &str) -> Result<Self> {
        Ok(match name {
            "ml" => EstimatorSpec::Ml,
            "bp" => EstimatorSpec::Bp {
                bp: BpOptions::default(),
            },
            "pl" => EstimatorSpec::Pl,
            "pl-edge" => EstimatorSpec::PlEdge,
            "pw" => EstimatorSpec::Pw {
                pieces: Pieces::default(),
            },
            "pw-reweighted" => EstimatorSpec::PwReweighted {
                pieces: Pieces::default(),
                mu: None,
            },
            "pwpl" => EstimatorSpec::Pwpl {
                pieces: Pieces::default(),
            },
            "scl" => EstimatorSpec::Scl {
                policy: SelectionPolicy::default(),
            },
            "memm" => EstimatorSpec::Memm,
            "generative" => EstimatorSpec::Generative,
            "nota" => EstimatorSpec::Nota {
                selection: NotaSelection::default(),
                weight: 1.0,
            },
            "camel0" | "cccp-camel" | "cccp-camel-empirical" => {
                use camel::CamelVariant;
                EstimatorSpec::Camel {
                    variant: match name {
                        "camel0" => CamelVariant::Camel0,
                        "cccp-camel" => CamelVariant::Cccp,
                        _ => CamelVariant::CccpEmpirical,
                    },
                    camel: Default::default(),
                }
            }
            _ => {
                return Err(Error::invalid(format!(
                    "unknown estimator {name:?}; known: {} (and for grammars: {})",
                    Self::NAMES.join(", "),
                    Self::GRAMMAR_ONLY.join(", ")
                )))
            }
        })
    }

    /// The estimator called `name` with its knobs: piece groups (pw, pw-reweighted, pwpl) and
    /// the temperature μ (pw-reweighted). The CLI's flags and the GUI's form both come here.
    pub fn with_knobs(name: &str, pieces: Option<&str>, mu: Option<f64>) -> Result<Self> {
        let mut spec = EstimatorSpec::from_name(name)?;
        if let Some(p) = pieces {
            if !spec.has_pieces() {
                return Err(Error::invalid(format!(
                    "pieces apply to pw, pw-reweighted and pwpl, not {}",
                    spec.name()
                )));
            }
            spec = spec.with_pieces(Pieces::parse(p)?);
        }
        if let Some(m) = mu {
            match &mut spec {
                EstimatorSpec::PwReweighted { mu, .. } => *mu = Some(m),
                _ => return Err(Error::invalid("mu applies to pw-reweighted")),
            }
        }
        Ok(spec)
    }

    /// The loopy-BP options, for the estimators that run BP.
    pub fn bp(&self) -> Option<&BpOptions> {
        match self {
            EstimatorSpec::Bp { bp } => Some(bp),
            _ => None,
        }
    }

    /// Sets the loopy-BP options (for the estimators that run BP).
    pub fn with_bp(mut self, opts: BpOptions) -> Self {
        if let EstimatorSpec::Bp { bp } = &mut self {
            *bp = opts;
        }
        self
    }

    /// The selection policy, for SCL.
    pub fn policy(&self) -> Option<&SelectionPolicy> {
        match self {
            EstimatorSpec::Scl { policy } => Some(policy),
            _ => None,
        }
    }

    /// Sets the selection policy (for SCL).
    pub fn with_policy(mut self, p: SelectionPolicy) -> Self {
        if let EstimatorSpec::Scl { policy } = &mut self {
            *policy = p;
        }
        self
    }

    /// Whether the estimator trains a chain's next-state classifiers locally (memm, nota):
    /// such runs decode with local normalisation unless asked otherwise (001 §4).
    pub fn is_locally_normalised(&self) -> bool {
        matches!(self, EstimatorSpec::Memm | EstimatorSpec::Nota { .. })
    }

    /// The NOTA selection, for `nota`.
    pub fn nota(&self) -> Option<&NotaSelection> {
        match self {
            EstimatorSpec::Nota { selection, .. } => Some(selection),
            _ => None,
        }
    }

    /// Whether the estimator is defined by pieces.
    pub fn has_pieces(&self) -> bool {
        matches!(
            self,
            EstimatorSpec::Pw { .. }
                | EstimatorSpec::PwReweighted { .. }
                | EstimatorSpec::Pwpl { .. }
        )
    }

    /// The piece groups, for the estimators that have them.
    pub fn pieces(&self) -> Option<&Pieces> {
        match self {
            EstimatorSpec::Pw { pieces }
            | EstimatorSpec::PwReweighted { pieces, .. }
            | EstimatorSpec::Pwpl { pieces } => Some(pieces),
            _ => None,
        }
    }

    /// Sets the piece groups (for the estimators that have pieces).
    pub fn with_pieces(mut self, p: Pieces) -> Self {
        match &mut self {
            EstimatorSpec::Pw { pieces }
            | EstimatorSpec::PwReweighted { pieces, .. }
            | EstimatorSpec::Pwpl { pieces } => *pieces = p,
            _ => {}
        }
        self
    }

    pub fn name(&self) -> &'static str {
        match self {
            EstimatorSpec::Ml => "ml",
            EstimatorSpec::Bp { .. } => "bp",
            EstimatorSpec::Pl => "pl",
            EstimatorSpec::PlEdge => "pl-edge",
            EstimatorSpec::Pw { .. } => "pw",
            EstimatorSpec::PwReweighted { .. } => "pw-reweighted",
            EstimatorSpec::Pwpl { .. } => "pwpl",
            EstimatorSpec::Scl { .. } => "scl",
            EstimatorSpec::Memm => "memm",
            EstimatorSpec::Generative => "generative",
            EstimatorSpec::Nota { .. } => "nota",
            EstimatorSpec::Camel { variant, .. } => match variant {
                camel::CamelVariant::Camel0 => "camel0",
                camel::CamelVariant::Cccp => "cccp-camel",
                camel::CamelVariant::CccpEmpirical => "cccp-camel-empirical",
            },
        }
    }

    /// The estimator for a model (piece groups name its templates).
    pub fn build(&self, model: &Model) -> Result<Box<dyn Estimator>> {
        Ok(match self {
            EstimatorSpec::Ml => Box::new(ExactMl),
            EstimatorSpec::Bp { bp } => {
                bp.check()?;
                Box::new(BetheMl { opts: *bp })
            }
            EstimatorSpec::Pl => Box::new(Pseudolikelihood),
            EstimatorSpec::PlEdge => Box::new(EdgePseudolikelihood),
            EstimatorSpec::Pw { pieces } => Box::new(Piecewise::new(pieces.resolve(model)?, None)),
            EstimatorSpec::PwReweighted { pieces, mu } => {
                if let Some(m) = mu {
                    if m.is_nan() || *m <= 0.0 {
                        return Err(Error::invalid("reweighted piecewise needs μ > 0"));
                    }
                }
                Box::new(Piecewise::new(pieces.resolve(model)?, Some(*mu)))
            }
            EstimatorSpec::Pwpl { pieces } => Box::new(Pwpl::new(pieces.resolve(model)?)),
            EstimatorSpec::Scl { policy } => Box::new(Scl {
                policy: policy.clone(),
            }),
            EstimatorSpec::Memm => Box::new(Memm),
            EstimatorSpec::Generative => {
                return Err(Error::invalid(
                    "generative is the grammar family's relative-frequency PCFG (--model \
                     grammar); factor-graph families train by likelihoods and their relatives",
                ))
            }
            EstimatorSpec::Nota { selection, weight } => {
                selection.check()?;
                memm::check_weight(*weight)?;
                Box::new(NotaPt::new(selection.clone(), *weight))
            }
            EstimatorSpec::Camel { camel, .. } => {
                camel.check()?;
                Box::new(Piecewise::new(Pieces::default().resolve(model)?, None))
            }
        })
    }
}

fn one() -> f64 {
    1.0
}

fn is_one(w: &f64) -> bool {
    *w == 1.0
}

/// The default [`Estimator::check`]: gold labels, and every term valid on the instance.
/// Estimators that add conditions of their own call it after them.
pub fn check_terms<E: Estimator + ?Sized>(est: &E, inst: &Instance) -> Result<()> {
    need_gold(inst)?;
    let mut list = TermList::default();
    est.terms(inst, &mut list);
    for t in list.iter() {
        t.check(inst)?;
    }
    Ok(())
}

/// Error for an instance that has no gold labels.
pub(crate) fn need_gold(inst: &Instance) -> Result<&[u32]> {
    inst.gold
        .as_deref()
        .ok_or_else(|| Error::invalid("this estimator needs gold labels for every token"))
}
