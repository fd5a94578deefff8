//! The option groups shared by several commands: the model family, the estimator and its
//! knobs, loopy BP, and everything else of a run spec, with their conversions to specs.

use crate::error::{Error, Result};
use crate::estimators::EstimatorSpec;
use crate::eval::Decoder;
use crate::graph::boltzmann::BoltzmannOptions;
use crate::graph::boltzmann_chain::BoltzmannChainOptions;
use crate::graph::chain::{ChainOptions, Extractor, Factorisation, FeatureSet, SkipOptions};
use crate::graph::factorial::FactorialOptions;
use crate::graph::grid::{GridOptions, Neighbourhood, Pairwise};
use crate::graph::registry::FamilyKind;
use crate::inference::{BpOptions, Schedule};
use crate::train::{LbfgsSpec, ModelSpec, Prior, RunSpec};
use clap::Args;
use std::path::PathBuf;

/// The model family and its options.
#[derive(Args, Clone)]
pub struct ModelArgs {
    /// Model family: chain (CRF++ templates on CoNLL data), grid (lattice of labels, grid
    /// format), boltzmann (binary samples), boltzmann-chain (generative chain over CoNLL
    /// labels and words; --min-freq sets which training words become <unk>).
    #[arg(long = "model", value_enum, default_value_t = FamilyKind::Chain)]
    pub family: FamilyKind,
    /// How the chain is cut into factors: split (state + transition) or edge.
    #[arg(long, value_enum, default_value_t = Factorisation::Split)]
    pub factorisation: Factorisation,
    /// Chain state features: template (the CRF++ template alone), or one of the piecewise
    /// paper's tables of the first column plus the template (default template `B`): ner (000
    /// Table 1: word, shapes, affixes and substrings up to 5 characters, name lists, ±2), np
    /// (Table 2: word, shapes, digits, name/day/month lists, ±3) or seminar (Table 3: word,
    /// shapes, name lists, time and date patterns, ±4).
    /// CRFsuite data (`.crfsuite`) brings its own attributes either way.
    #[arg(long, value_enum, default_value_t = Extractor::Template)]
    pub extractor: Extractor,
    /// Folder of the ner features' name lists (first-male.txt, first-female.txt, last.txt).
    #[arg(long, default_value = crate::graph::chain::DEFAULT_LEXICONS)]
    pub lexicons: PathBuf,
    /// Grid: the pairwise table's entry map (potts: one tied diagonal weight).
    #[arg(long, value_enum, default_value_t = Pairwise::Potts)]
    pub pairwise: Pairwise,
    /// Grid: 4- or 8-connected.
    #[arg(long, value_enum, default_value_t = Neighbourhood::Four)]
    pub neighbourhood: Neighbourhood,
    /// Boltzmann machine: add a bias per variable.
    #[arg(long)]
    pub biases: bool,
    /// Factorial: tagged text (`word<TAB>tag`, e.g. ../shared/data/ptb-wsj-sample/treebank.tsv)
    /// whose word → tags lexicon gives 000 Table 2's "lexicon of words with POS T" features;
    /// it must not overlap the test data.
    #[arg(long)]
    pub pos_lexicon: Option<PathBuf>,
    /// Skip-chain: at most this many skip edges per item, the closest pairs first (0: all).
    #[arg(long, default_value_t = 0)]
    pub max_skip_edges: usize,
}

impl ModelArgs {
    pub fn spec(&self, chain: ChainOptions) -> ModelSpec {
        match self.family {
            FamilyKind::Chain => ModelSpec::LinearChain(ChainOptions {
                factorisation: self.factorisation,
                extractor: self.extractor,
                lexicons: self.extractor.table().map(|_| self.lexicons.clone()),
                ..chain
            }),
            FamilyKind::Grid => ModelSpec::Grid(GridOptions {
                pairwise: self.pairwise,
                neighbourhood: self.neighbourhood,
            }),
            FamilyKind::Boltzmann => ModelSpec::Boltzmann(BoltzmannOptions {
                biases: self.biases,
            }),
            FamilyKind::BoltzmannChain => ModelSpec::BoltzmannChain(BoltzmannChainOptions {
                min_count: chain.min_freq.max(1) as usize,
            }),
            FamilyKind::SkipChain => ModelSpec::SkipChain(ChainOptions {
                factorisation: self.factorisation,
                extractor: self.extractor,
                lexicons: self.extractor.table().map(|_| self.lexicons.clone()),
                skip: Some(SkipOptions {
                    max_edges: self.max_skip_edges,
                }),
                ..chain
            }),
            // (Observed feature–label pairs unless `--features` says otherwise: Ψ1 has 45²
            // columns.)
            FamilyKind::Factorial => ModelSpec::Factorial(FactorialOptions {
                min_freq: chain.min_freq,
                lexicons: Some(self.lexicons.clone()),
                pos_lexicon: self.pos_lexicon.clone(),
                ..FactorialOptions::default()
            }),
        }
    }
}

/// Loopy belief propagation options (the bp estimator; max-product decoding of loopy graphs).
#[derive(Args, Clone)]
pub struct BpArgs {
    /// Message schedule: parallel (flooding), sequential or residual.
    #[arg(long, value_enum, default_value_t = Schedule::Sequential)]
    pub bp_schedule: Schedule,
    /// Damping: weight of the old message, in [0, 1).
    #[arg(long, default_value_t = 0.0)]
    pub bp_damping: f64,
    /// Converged when no log message entry moves by more than this.
    #[arg(long, default_value_t = 1e-8)]
    pub bp_tol: f64,
    /// Sweep limit per BP call.
    #[arg(long, default_value_t = 200)]
    pub bp_max_sweeps: usize,
}

impl BpArgs {
    pub fn options(&self) -> BpOptions {
        BpOptions {
            schedule: self.bp_schedule,
            damping: self.bp_damping,
            tol: self.bp_tol,
            max_sweeps: self.bp_max_sweeps,
        }
    }
}

/// An estimator and its knobs.
#[derive(Args, Clone)]
pub struct EstimatorArgs {
    /// ml, bp, pl, pl-edge, pw, pw-reweighted, pwpl, scl, camel0, cccp-camel or
    /// cccp-camel-empirical.
    #[arg(long, default_value = "ml")]
    pub estimator: String,
    /// Pieces for pw, pw-reweighted and pwpl: groups of template names, `+` within a group, `;`
    /// between groups, one piece per group and position (e.g. `state+transition`); templates in
    /// no group are a piece per factor (the default: factor-as-piece).
    #[arg(long)]
    pub pieces: Option<String>,
    /// Temperature μ of every piece for pw-reweighted (default: uniform 1/|pieces|).
    #[arg(long)]
    pub mu: Option<f64>,
    #[command(flatten)]
    pub bp: BpArgs,
    #[command(flatten)]
    pub scl: SclArgs,
    #[command(flatten)]
    pub camel: CamelArgs,
    #[command(flatten)]
    pub nota: NotaArgs,
}

/// Which wrong source states get a "none of the above" term (nota; 001 eq. 6, 003 §3).
#[derive(clap::Args, Clone, Debug)]
pub struct NotaArgs {
    /// nota: exhaustive (every wrong source state), sampled (a seeded fraction), or
    /// error-driven (after --nota-after iterations, the wrong states whose marginal exceeds
    /// --nota-threshold).
    #[arg(long, value_enum, default_value_t = NotaMode::Exhaustive)]
    pub nota: NotaMode,
    /// nota sampled: the fraction of (position, wrong source state) pairs kept (seed: --seed).
    #[arg(long, default_value_t = 0.1)]
    pub nota_fraction: f64,
    /// nota error-driven: iterations before the NOTA terms are chosen (003: 20).
    #[arg(long, default_value_t = 20)]
    pub nota_after: usize,
    /// nota error-driven: marginal probability above which a wrong state gets a term (003: 0.2).
    #[arg(long, default_value_t = 0.2)]
    pub nota_threshold: f64,
    /// nota error-driven: choose the terms anew every N iterations (0: once).
    #[arg(long, default_value_t = 0)]
    pub nota_refresh: usize,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq)]
pub enum NotaMode {
    Exhaustive,
    Sampled,
    ErrorDriven,
}

impl NotaArgs {
    pub fn apply(&self, spec: EstimatorSpec, seed: u64) -> Result<EstimatorSpec> {
        use crate::estimators::NotaSelection;
        if !matches!(spec, EstimatorSpec::Nota { .. }) {
            return Ok(spec);
        }
        let selection = match self.nota {
            NotaMode::Exhaustive => NotaSelection::Exhaustive,
            NotaMode::Sampled => NotaSelection::Sampled {
                fraction: self.nota_fraction,
                seed,
            },
            NotaMode::ErrorDriven => NotaSelection::ErrorDriven {
                after: self.nota_after,
                threshold: self.nota_threshold,
                refresh: self.nota_refresh,
            },
        };
        selection.check()?;
        Ok(EstimatorSpec::Nota { selection })
    }
}

#[derive(clap::Args, Clone, Debug)]
pub struct CamelArgs {
    /// CAMEL (camel0, cccp-camel, cccp-camel-empirical): stop relinearising when no entry of
    /// the linearisation g moves by more than this.
    #[arg(long, default_value_t = 1e-4)]
    pub camel_tol: f64,
    /// CAMEL: relinearisations of g at most.
    #[arg(long, default_value_t = 20)]
    pub camel_max_outer: usize,
    /// CAMEL: each evaluation sweeps the multipliers δ until no sepset marginal is off by
    /// more than this.
    #[arg(long, default_value_t = 1e-4)]
    pub camel_sweep_tol: f64,
}

impl CamelArgs {
    pub fn apply(&self, mut spec: EstimatorSpec) -> Result<EstimatorSpec> {
        if let EstimatorSpec::Camel { camel, .. } = &mut spec {
            camel.tol = self.camel_tol;
            camel.max_outer = self.camel_max_outer;
            camel.sweep_tol = self.camel_sweep_tol;
            camel.check()?;
        }
        Ok(spec)
    }
}

impl EstimatorArgs {
    /// The estimator; `seed` seeds sampled NOTA selection.
    pub fn spec(&self, seed: u64) -> Result<EstimatorSpec> {
        let spec = EstimatorSpec::with_knobs(&self.estimator, self.pieces.as_deref(), self.mu)?
            .with_bp(self.bp.options());
        let spec = self.camel.apply(spec)?;
        let spec = self.nota.apply(spec, seed)?;
        self.scl.apply(spec)
    }
}

/// Stochastic composite likelihood's selection policy (004 eq. 7).
#[derive(Args, Clone)]
pub struct SclArgs {
    /// For scl: `λ:β*family + …` with families fl, pl1, pl2, … (e.g. `0.7:1*pl1 + 0.3:1*pl2`);
    /// `;` separates the groups of a product of multinomials. Default `1:1*pl1`.
    #[arg(long, allow_hyphen_values = true)]
    pub policy: Option<String>,
    /// How components are selected per item: independent (each with its family's λ) or
    /// multinomial (one family per group). Z is drawn from --seed.
    #[arg(long, value_enum, default_value_t = crate::estimators::scl::Selection::Independent)]
    pub selection: crate::estimators::scl::Selection,
    /// `auto`: choose the families' weights β by 004's heuristic (§7, Algorithm 1), alternating
    /// with the fit; the policy's β are the starting point.
    #[arg(long)]
    pub beta: Option<String>,
    /// Draw the selection Z anew every N optimiser iterations, keeping θ (0: once per run).
    #[arg(long, default_value_t = 0)]
    pub resample_every: usize,
}

impl SclArgs {
    pub fn apply(&self, spec: EstimatorSpec) -> Result<EstimatorSpec> {
        if !matches!(spec, EstimatorSpec::Scl { .. }) {
            if self.policy.is_some() || self.beta.is_some() || self.resample_every > 0 {
                return Err(Error::invalid(
                    "--policy, --beta and --resample-every apply to scl",
                ));
            }
            return Ok(spec);
        }
        let text = self.policy.as_deref().unwrap_or("1:1*pl1");
        let mut policy = crate::estimators::SelectionPolicy::parse(text, self.selection, 0)?;
        match self.beta.as_deref() {
            None => {}
            Some("auto") => policy.auto_beta = true,
            Some(b) => return Err(Error::invalid(format!("--beta takes `auto`, not {b:?}"))),
        }
        policy.resample_every = self.resample_every;
        Ok(spec.with_policy(policy))
    }
}

/// What a run trains on and how: everything of a [`RunSpec`] but the estimator.
#[derive(Args, Clone)]
pub struct RunArgs {
    /// Training data in the model family's format (chains: CoNLL columns, label last, or a
    /// seminar folder; grids: the grid format; boltzmann: one sample a line).
    #[arg(long)]
    pub train: Option<PathBuf>,
    /// Held-out data scored at the end.
    #[arg(long)]
    pub test: Option<PathBuf>,
    /// CRF++ template file for chains (default: the built-in CRF++ chunking template).
    #[arg(long)]
    pub template: Option<PathBuf>,
    #[command(flatten)]
    pub model: ModelArgs,
    /// Test-time decoder: auto (Viterbi on chains — local for memm and nota runs without
    /// per-state scales —, exact max-product on trees, enumeration on small graphs, loopy
    /// max-product otherwise), viterbi (alias global: over the potentials), local (MEMM Viterbi
    /// over locally normalised next-state distributions), max-product, exact, or marginal (each
    /// variable's most probable state under sum-product BP's beliefs).
    #[arg(long, value_enum, default_value_t = Decoder::Auto)]
    pub decode: Decoder,
    /// Chains: after training, fit one multiplicative factor per source state by global
    /// likelihood with the weights fixed (001 §3), and decode with them.
    #[arg(long)]
    pub per_state_scaling: bool,
    /// L2 penalty c2·‖w‖² as in CRFsuite (σ² = 1/(2·c2)); default 1.0.
    #[arg(long, conflicts_with = "sigma2")]
    pub c2: Option<f64>,
    /// Gaussian prior variance σ² (penalty ‖w‖²/(2σ²)).
    #[arg(long)]
    pub sigma2: Option<f64>,
    #[arg(long, default_value_t = 1000)]
    pub max_iter: usize,
    /// Stop when the objective improved by less than this fraction over `--period` iterations.
    #[arg(long, default_value_t = 1e-5)]
    pub delta: f64,
    #[arg(long, default_value_t = 10)]
    pub period: usize,
    /// Which feature–label weights exist: all (CRF++) or observed in training (CRFsuite
    /// default). Default: all, but observed for the factorial CRF.
    #[arg(long, value_enum)]
    pub features: Option<FeatureSet>,
    /// Add the always-on per-label bias feature `*`.
    #[arg(long)]
    pub label_bias: bool,
    /// Drop features seen fewer times than this in training.
    #[arg(long, default_value_t = 1)]
    pub min_freq: u64,
    /// Start from the weights of a finished run: templates, features and labels with the same
    /// names are copied, the rest start at 0 (000 §5.1.3: BP training of the skip-chain from
    /// a trained linear chain).
    #[arg(long, value_name = "RUN")]
    pub init_from: Option<PathBuf>,
    /// Evaluate on --test every N iterations (0: at the end only).
    #[arg(long, default_value_t = 0)]
    pub eval_every: usize,
    /// Train on N items of --train drawn without replacement with --seed (004 §8.3: 100).
    #[arg(long, value_name = "N")]
    pub train_sample: Option<usize>,
    /// Also score the training data at the end (train NLL in the summary).
    #[arg(long)]
    pub eval_train: bool,
    /// Worker threads (0: all cores).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

impl RunArgs {
    pub fn spec(&self, estimator: EstimatorSpec) -> Result<RunSpec> {
        let estimator = match estimator.policy() {
            Some(p) => {
                let mut p = p.clone();
                p.seed = self.seed;
                estimator.with_policy(p)
            }
            None => estimator,
        };
        let train = self
            .train
            .clone()
            .ok_or_else(|| Error::invalid("needs --train FILE"))?;
        let prior = match (self.c2, self.sigma2) {
            (_, Some(s)) if s > 0.0 => Prior { sigma2: Some(s) },
            (_, Some(_)) => return Err(Error::invalid("--sigma2 must be positive")),
            (Some(c2), None) if c2 >= 0.0 => Prior::from_c2(c2),
            (Some(_), None) => return Err(Error::invalid("--c2 must be non-negative")),
            (None, None) => Prior::from_c2(1.0),
        };
        let mut model = self.model.spec(ChainOptions {
            label_bias: self.label_bias,
            min_freq: self.min_freq,
            feature_set: self.features.unwrap_or(FeatureSet::All),
            ..Default::default()
        });
        if let (ModelSpec::Factorial(o), Some(f)) = (&mut model, self.features) {
            o.feature_set = f;
        }
        Ok(RunSpec {
            name: Some(estimator.name().to_string()),
            train,
            test: self.test.clone(),
            template: self.template.clone(),
            model,
            estimator,
            optimiser: LbfgsSpec {
                max_iter: self.max_iter,
                period: self.period,
                delta: self.delta,
                ..LbfgsSpec::default()
            },
            prior,
            eval_every: self.eval_every,
            seed: self.seed,
            threads: self.threads,
            decode: self.decode,
            train_sample: self.train_sample,
            eval_train: self.eval_train,
            per_state_scaling: self.per_state_scaling,
            init_from: self.init_from.clone(),
        })
    }
}
