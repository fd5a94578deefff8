//! `piecewise-lab`: headless commands over the engine.

use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use piecewise_lab::data::conll::format_conll;
use piecewise_lab::data::synth_loopy::{self, GridGen, LabelField};
use piecewise_lab::data::{read_conll, read_corpus, synth};
use piecewise_lab::error::{Error, Result};
use piecewise_lab::estimators::{EstimatorSpec, Workspace};
use piecewise_lab::eval::{evaluate, Decoder, Inference};
use piecewise_lab::graph::boltzmann::BoltzmannOptions;
use piecewise_lab::graph::boltzmann_chain::BoltzmannChainOptions;
use piecewise_lab::graph::chain::{
    ChainOptions, Extractor, Factorisation, FeatureSet, SkipOptions,
};
use piecewise_lab::graph::factorial::FactorialOptions;
use piecewise_lab::graph::family::{self, FamilyKind};
use piecewise_lab::graph::grid::{GridOptions, Neighbourhood, Pairwise};
use piecewise_lab::inference::{BpOptions, Schedule};
use piecewise_lab::train::{
    execute, load_model, LbfgsSpec, ModelSpec, Prior, RunEvent, RunSpec, RunSummary,
};
use piecewise_lab::util::write_atomic;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

#[derive(Parser)]
#[command(
    name = "piecewise-lab",
    version,
    about = "Train and evaluate structured models (CRFs) with exact and piecewise estimators"
)]
struct Cli {
    /// Without a command: the desktop workbench.
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// The desktop workbench, opened on a data set (the same as no command, with the data form
    /// filled in and loaded).
    Gui {
        /// Training data in the model family's format.
        #[arg(long)]
        train: Option<PathBuf>,
        #[arg(long)]
        test: Option<PathBuf>,
        /// CRF++ template (chains).
        #[arg(long)]
        template: Option<PathBuf>,
        #[command(flatten)]
        model: ModelArgs,
    },
    /// Train a model and record the run in a directory.
    Train(TrainArgs),
    /// Run one of the piecewise paper's experiments with its protocol and write a report
    /// (NAME.md, NAME.json, NAME.svg) with our numbers beside the paper's: 000-table4 …
    /// 000-table9, 000-fig4 (`--list` names them). Runs go to OUT/runs/TASK/ESTIMATOR/REP and
    /// are reused when started again with the same OUT.
    Reproduce {
        /// The experiment (see --list).
        name: Option<String>,
        /// List the experiments.
        #[arg(long)]
        list: bool,
        /// A reduced version (few items, one repetition, few iterations) that checks the
        /// machinery; the numbers mean nothing.
        #[arg(long)]
        quick: bool,
        /// Output folder (default: reproductions, or reproductions-quick with --quick).
        #[arg(long)]
        out: Option<PathBuf>,
        /// The shared corpora.
        #[arg(long, default_value = "../shared/data")]
        data: PathBuf,
        /// Worker threads per run (0: all cores).
        #[arg(long, default_value_t = 0)]
        threads: usize,
    },
    /// Sweep an SCL policy over a grid of λ and β (and σ²): `1:(1−β)*LOW + λ:β*HIGH` for
    /// `--families LOW/HIGH` (004's convention), one run directory per point, an index
    /// (`sweep.json`) and a table (`sweep.csv`) in --out. Started again on the same directory it
    /// skips the finished points.
    Sweep(SweepArgs),
    /// Train several estimators with the same features and prior; print one table (estimator,
    /// iterations, seconds, token accuracy, segment F1, held-out log-likelihood, per-field F1).
    Compare(CompareArgs),
    /// Write the data with a predicted label appended to every token (a chain's CoNLL column,
    /// a grid's cell; a Boltzmann machine writes its most probable assignment per sample).
    Predict {
        /// Run directory holding model.json and weights.bin.
        #[arg(long)]
        model: PathBuf,
        /// Data in the model family's format (for chains: the observation columns, optionally
        /// followed by the gold label).
        #[arg(long)]
        data: PathBuf,
        /// Output file (default: standard output).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Decoder (default: the run's, normally `auto`).
        #[arg(long, value_enum)]
        decode: Option<Decoder>,
    },
    /// Score a model on labelled data: token accuracy, conlleval segment P/R/F1, per-label P/R/F1,
    /// held-out log-likelihood, and how each item was decoded.
    Eval {
        #[arg(long)]
        model: PathBuf,
        #[arg(long)]
        data: PathBuf,
        /// Decoder (default: the run's, normally `auto`).
        #[arg(long, value_enum)]
        decode: Option<Decoder>,
        /// Print JSON instead of the report.
        #[arg(long)]
        json: bool,
    },
    /// Write the weights as TSV, one a line: `TEMPLATE FEATURE COLUMN… WEIGHT` — for chains
    /// `state FEATURE LABEL WEIGHT` and `transition FEATURE PREV_LABEL LABEL WEIGHT` (`*` is the
    /// per-label bias).
    Dump {
        #[arg(long)]
        model: PathBuf,
        /// Output file (default: standard output).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Value of an estimator's objective (no prior) summed over the sequences of a file, for
    /// weights given in the `dump` format. Higher is better.
    Objective {
        #[arg(long)]
        data: PathBuf,
        /// Model family and its options (chains: CRF++ template, all features, label bias).
        #[command(flatten)]
        model: ModelArgs,
        /// CRF++ template (default: the built-in chunking template).
        #[arg(long)]
        template: Option<PathBuf>,
        /// Weights TSV as written by `dump`; features or labels the data lack are ignored, missing
        /// weights are zero.
        #[arg(long)]
        weights: PathBuf,
        #[command(flatten)]
        estimator: EstimatorArgs,
        #[arg(long)]
        json: bool,
    },
    /// Score predictions like conlleval: a CoNLL file whose last two columns are the gold and the
    /// predicted label (what `predict` writes for labelled data).
    Score {
        #[arg(long)]
        data: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Pool the sequences of one or more data sets (files or seminar folders), shuffle them with
    /// a seed and write a train/test split as CoNLL files.
    Split {
        #[arg(long, required = true)]
        data: Vec<PathBuf>,
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Fraction of sequences that go to training.
        #[arg(long, default_value_t = 0.5)]
        fraction: f64,
        /// Instead of a random split: the first N sequences (in file order) train, the rest test.
        #[arg(long, conflicts_with = "fraction")]
        head: Option<usize>,
        #[arg(long)]
        train_out: PathBuf,
        #[arg(long)]
        test_out: PathBuf,
    },
    /// Insert derived observation columns after a data set's first column (the word):
    /// lowercase, shape, prefixes and suffixes of length 1–3, for word/affix/shape templates
    /// such as assets/templates/pos.tpl (columns 0–8). The file's other observation columns
    /// (a POS column, …) follow them, in order, and the label stays last.
    Augment {
        #[arg(long)]
        data: PathBuf,
        #[arg(long)]
        out: PathBuf,
    },
    /// Generate synthetic data.
    #[command(subcommand)]
    Generate(Generate),
    /// Marginals (or, with --max, most probable assignments) by loopy BP or exact inference: of a
    /// trained run's model on data (one JSON line per item), or of a factor graph in the UAI
    /// competition format (the UAI `MAR` / `MAP` answer), so BP can be checked against other
    /// solvers.
    Infer {
        /// Run directory (with --data).
        #[arg(long, conflicts_with = "uai", requires = "data")]
        model: Option<PathBuf>,
        #[arg(long)]
        data: Option<PathBuf>,
        /// A `.uai` factor graph (MARKOV or BAYES) instead of a run.
        #[arg(long)]
        uai: Option<PathBuf>,
        /// Evidence for --uai (`.evid`).
        #[arg(long, requires = "uai")]
        evid: Option<PathBuf>,
        /// bp (loopy belief propagation; exact on trees) or exact (forward–backward on chains,
        /// enumeration on small graphs).
        #[arg(long, value_enum, default_value_t = Algo::Bp)]
        algo: Algo,
        /// Most probable assignment (max-product / exact MAP) instead of marginals.
        #[arg(long)]
        max: bool,
        #[command(flatten)]
        bp: BpArgs,
        /// Run the inference this many times (cold each time) and report the median time on
        /// standard error (for benchmarks; reading the file is not timed).
        #[arg(long, default_value_t = 1)]
        repeat: usize,
        /// Output file (default: standard output).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// SCL theory on a Boltzmann machine (004 §3.1, Prop. 2): the paper's FLOPs per example of a
    /// policy and the relative efficiency of its estimator (det and trace of the asymptotic
    /// variance over the MLE's), in the paper's form and the exact form for random selection.
    Theory {
        #[arg(long, default_value_t = 5)]
        m: usize,
        /// Couplings θ0 (as for `generate boltzmann`; default 004's for m = 5).
        #[arg(long, allow_hyphen_values = true)]
        theta: Option<String>,
        #[command(flatten)]
        scl: SclArgs,
        #[arg(long)]
        json: bool,
    },
    /// Statistics of a data set: items, tokens, columns, labels with counts.
    Info {
        file: PathBuf,
        /// The family whose format the file is in.
        #[arg(long, value_enum, default_value_t = FamilyKind::Chain)]
        model: FamilyKind,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum Generate {
    /// The α-mixture of a second- and a first-order HMM (paper 000, eq. 43–44): 5 states,
    /// 26 observations. The seed fixes the generating distribution and the samples.
    HmmMixture {
        #[arg(long)]
        alpha: f64,
        #[arg(long, default_value_t = 0)]
        seed: u64,
        #[arg(long, default_value_t = 1000)]
        sequences: usize,
        #[arg(long, default_value_t = 25)]
        length: usize,
        #[arg(long)]
        out: PathBuf,
        /// Also write this many test sequences from the same distribution to --test-out.
        #[arg(long, requires = "test_out")]
        test_sequences: Option<usize>,
        #[arg(long)]
        test_out: Option<PathBuf>,
    },
    /// Grid segmentation images (K classes, label images from a Potts sampler or smooth random
    /// fields, noisy one-hot observations per pixel) in the grid format; seeded.
    Grid {
        #[arg(long, default_value_t = 5)]
        classes: usize,
        #[arg(long, default_value_t = 16)]
        height: usize,
        #[arg(long, default_value_t = 16)]
        width: usize,
        #[arg(long, default_value_t = 20)]
        images: usize,
        #[arg(long, value_enum, default_value_t = LabelField::Smooth)]
        field: LabelField,
        /// Potts coupling β (with --field potts).
        #[arg(long, default_value_t = 1.3)]
        beta: f64,
        /// Gibbs sweeps (with --field potts).
        #[arg(long, default_value_t = 60)]
        sweeps: usize,
        /// Observation noise σ.
        #[arg(long, default_value_t = 1.0)]
        noise: f64,
        /// Observations are a weak per-pixel classifier's log-probabilities (log softmax of the
        /// noisy evidence) instead of the evidence itself (CAMEL's segmentation task, 002 §4).
        #[arg(long)]
        scores: bool,
        #[arg(long, default_value_t = 0)]
        seed: u64,
        #[arg(long)]
        out: PathBuf,
        /// Also write this many test images (same distribution, after the training ones).
        #[arg(long, requires = "test_out")]
        test_images: Option<usize>,
        #[arg(long)]
        test_out: Option<PathBuf>,
    },
    /// Exact samples of a Boltzmann machine p(x) ∝ exp(Σ θ_ij x_i x_j + Σ b_i x_i), x ∈ {0,1}^m,
    /// by enumeration (004 §3.1, §8.1), one a line.
    Boltzmann {
        #[arg(long, default_value_t = 5)]
        m: usize,
        /// Couplings θ_ij, comma-separated in pair order (1,2), (1,3), …, (m−1,m); default: for
        /// m = 5 004's (−1 ×5, +1 ×5), the first five pairs −1; otherwise −1 and +1 alternating.
        #[arg(long, allow_hyphen_values = true)]
        theta: Option<String>,
        /// Biases b_i, comma-separated (default: none).
        #[arg(long, allow_hyphen_values = true)]
        biases: Option<String>,
        #[arg(long, default_value_t = 14)]
        n: usize,
        #[arg(long, default_value_t = 0)]
        seed: u64,
        #[arg(long)]
        out: PathBuf,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Algo {
    Bp,
    Exact,
}

/// The model family and its options.
#[derive(Args, Clone)]
struct ModelArgs {
    /// Model family: chain (CRF++ templates on CoNLL data), grid (lattice of labels, grid
    /// format), boltzmann (binary samples), boltzmann-chain (generative chain over CoNLL
    /// labels and words; --min-freq sets which training words become <unk>).
    #[arg(long = "model", value_enum, default_value_t = FamilyKind::Chain)]
    family: FamilyKind,
    /// How the chain is cut into factors: split (state + transition) or edge.
    #[arg(long, value_enum, default_value_t = Factorisation::Split)]
    factorisation: Factorisation,
    /// Chain state features: template (the CRF++ template alone), or one of the piecewise
    /// paper's tables of the first column plus the template (default template `B`): ner (000
    /// Table 1: word, shapes, affixes and substrings up to 5 characters, name lists, ±2), np
    /// (Table 2: word, shapes, digits, name/day/month lists, ±3) or seminar (Table 3: word,
    /// shapes, name lists, time and date patterns, ±4).
    /// CRFsuite data (`.crfsuite`) brings its own attributes either way.
    #[arg(long, value_enum, default_value_t = Extractor::Template)]
    extractor: Extractor,
    /// Folder of the ner features' name lists (first-male.txt, first-female.txt, last.txt).
    #[arg(long, default_value = piecewise_lab::graph::chain::DEFAULT_LEXICONS)]
    lexicons: PathBuf,
    /// Grid: the pairwise table's entry map (potts: one tied diagonal weight).
    #[arg(long, value_enum, default_value_t = Pairwise::Potts)]
    pairwise: Pairwise,
    /// Grid: 4- or 8-connected.
    #[arg(long, value_enum, default_value_t = Neighbourhood::Four)]
    neighbourhood: Neighbourhood,
    /// Boltzmann machine: add a bias per variable.
    #[arg(long)]
    biases: bool,
    /// Factorial: tagged text (`word<TAB>tag`, e.g. ../shared/data/ptb-wsj-sample/treebank.tsv)
    /// whose word → tags lexicon gives 000 Table 2's "lexicon of words with POS T" features;
    /// it must not overlap the test data.
    #[arg(long)]
    pos_lexicon: Option<PathBuf>,
    /// Skip-chain: at most this many skip edges per item, the closest pairs first (0: all).
    #[arg(long, default_value_t = 0)]
    max_skip_edges: usize,
}

impl ModelArgs {
    fn spec(&self, chain: ChainOptions) -> ModelSpec {
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
struct BpArgs {
    /// Message schedule: parallel (flooding), sequential or residual.
    #[arg(long, value_enum, default_value_t = Schedule::Sequential)]
    bp_schedule: Schedule,
    /// Damping: weight of the old message, in [0, 1).
    #[arg(long, default_value_t = 0.0)]
    bp_damping: f64,
    /// Converged when no log message entry moves by more than this.
    #[arg(long, default_value_t = 1e-8)]
    bp_tol: f64,
    /// Sweep limit per BP call.
    #[arg(long, default_value_t = 200)]
    bp_max_sweeps: usize,
}

impl BpArgs {
    fn options(&self) -> BpOptions {
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
struct EstimatorArgs {
    /// ml, bp, pl, pl-edge, pw, pw-reweighted, pwpl, scl, camel0, cccp-camel or
    /// cccp-camel-empirical.
    #[arg(long, default_value = "ml")]
    estimator: String,
    /// Pieces for pw, pw-reweighted and pwpl: groups of template names, `+` within a group, `;`
    /// between groups, one piece per group and position (e.g. `state+transition`); templates in
    /// no group are a piece per factor (the default: factor-as-piece).
    #[arg(long)]
    pieces: Option<String>,
    /// Temperature μ of every piece for pw-reweighted (default: uniform 1/|pieces|).
    #[arg(long)]
    mu: Option<f64>,
    #[command(flatten)]
    bp: BpArgs,
    #[command(flatten)]
    scl: SclArgs,
    #[command(flatten)]
    camel: CamelArgs,
    #[command(flatten)]
    nota: NotaArgs,
}

/// Which wrong source states get a "none of the above" term (nota; 001 eq. 6, 003 §3).
#[derive(clap::Args, Clone, Debug)]
struct NotaArgs {
    /// nota: exhaustive (every wrong source state), sampled (a seeded fraction), or
    /// error-driven (after --nota-after iterations, the wrong states whose marginal exceeds
    /// --nota-threshold).
    #[arg(long, value_enum, default_value_t = NotaMode::Exhaustive)]
    nota: NotaMode,
    /// nota sampled: the fraction of (position, wrong source state) pairs kept (seed: --seed).
    #[arg(long, default_value_t = 0.1)]
    nota_fraction: f64,
    /// nota error-driven: iterations before the NOTA terms are chosen (003: 20).
    #[arg(long, default_value_t = 20)]
    nota_after: usize,
    /// nota error-driven: marginal probability above which a wrong state gets a term (003: 0.2).
    #[arg(long, default_value_t = 0.2)]
    nota_threshold: f64,
    /// nota error-driven: choose the terms anew every N iterations (0: once).
    #[arg(long, default_value_t = 0)]
    nota_refresh: usize,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq)]
enum NotaMode {
    Exhaustive,
    Sampled,
    ErrorDriven,
}

impl NotaArgs {
    fn apply(&self, spec: EstimatorSpec, seed: u64) -> Result<EstimatorSpec> {
        use piecewise_lab::estimators::NotaSelection;
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
struct CamelArgs {
    /// CAMEL (camel0, cccp-camel, cccp-camel-empirical): stop relinearising when no entry of
    /// the linearisation g moves by more than this.
    #[arg(long, default_value_t = 1e-4)]
    camel_tol: f64,
    /// CAMEL: relinearisations of g at most.
    #[arg(long, default_value_t = 20)]
    camel_max_outer: usize,
    /// CAMEL: each evaluation sweeps the multipliers δ until no sepset marginal is off by
    /// more than this.
    #[arg(long, default_value_t = 1e-4)]
    camel_sweep_tol: f64,
}

impl CamelArgs {
    fn apply(&self, mut spec: EstimatorSpec) -> Result<EstimatorSpec> {
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
    fn spec(&self, seed: u64) -> Result<EstimatorSpec> {
        let spec = EstimatorSpec::with_knobs(&self.estimator, self.pieces.as_deref(), self.mu)?
            .with_bp(self.bp.options());
        let spec = self.camel.apply(spec)?;
        let spec = self.nota.apply(spec, seed)?;
        self.scl.apply(spec)
    }
}

/// Stochastic composite likelihood's selection policy (004 eq. 7).
#[derive(Args, Clone)]
struct SclArgs {
    /// For scl: `λ:β*family + …` with families fl, pl1, pl2, … (e.g. `0.7:1*pl1 + 0.3:1*pl2`);
    /// `;` separates the groups of a product of multinomials. Default `1:1*pl1`.
    #[arg(long, allow_hyphen_values = true)]
    policy: Option<String>,
    /// How components are selected per item: independent (each with its family's λ) or
    /// multinomial (one family per group). Z is drawn from --seed.
    #[arg(long, value_enum, default_value_t = piecewise_lab::estimators::scl::Selection::Independent)]
    selection: piecewise_lab::estimators::scl::Selection,
    /// `auto`: choose the families' weights β by 004's heuristic (§7, Algorithm 1), alternating
    /// with the fit; the policy's β are the starting point.
    #[arg(long)]
    beta: Option<String>,
    /// Draw the selection Z anew every N optimiser iterations, keeping θ (0: once per run).
    #[arg(long, default_value_t = 0)]
    resample_every: usize,
}

impl SclArgs {
    fn apply(&self, spec: EstimatorSpec) -> Result<EstimatorSpec> {
        if !matches!(spec, EstimatorSpec::Scl { .. }) {
            if self.policy.is_some() || self.beta.is_some() || self.resample_every > 0 {
                return Err(Error::invalid(
                    "--policy, --beta and --resample-every apply to scl",
                ));
            }
            return Ok(spec);
        }
        let text = self.policy.as_deref().unwrap_or("1:1*pl1");
        let mut policy =
            piecewise_lab::estimators::SelectionPolicy::parse(text, self.selection, 0)?;
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
struct RunArgs {
    /// Training data in the model family's format (chains: CoNLL columns, label last, or a
    /// seminar folder; grids: the grid format; boltzmann: one sample a line).
    #[arg(long)]
    train: Option<PathBuf>,
    /// Held-out data scored at the end.
    #[arg(long)]
    test: Option<PathBuf>,
    /// CRF++ template file for chains (default: the built-in CRF++ chunking template).
    #[arg(long)]
    template: Option<PathBuf>,
    #[command(flatten)]
    model: ModelArgs,
    /// Test-time decoder: auto (Viterbi on chains — local for memm and nota runs without
    /// per-state scales —, exact max-product on trees, enumeration on small graphs, loopy
    /// max-product otherwise), viterbi (alias global: over the potentials), local (MEMM Viterbi
    /// over locally normalised next-state distributions), max-product, exact, or marginal (each
    /// variable's most probable state under sum-product BP's beliefs).
    #[arg(long, value_enum, default_value_t = Decoder::Auto)]
    decode: Decoder,
    /// Chains: after training, fit one multiplicative factor per source state by global
    /// likelihood with the weights fixed (001 §3), and decode with them.
    #[arg(long)]
    per_state_scaling: bool,
    /// L2 penalty c2·‖w‖² as in CRFsuite (σ² = 1/(2·c2)); default 1.0.
    #[arg(long, conflicts_with = "sigma2")]
    c2: Option<f64>,
    /// Gaussian prior variance σ² (penalty ‖w‖²/(2σ²)).
    #[arg(long)]
    sigma2: Option<f64>,
    #[arg(long, default_value_t = 1000)]
    max_iter: usize,
    /// Stop when the objective improved by less than this fraction over `--period` iterations.
    #[arg(long, default_value_t = 1e-5)]
    delta: f64,
    #[arg(long, default_value_t = 10)]
    period: usize,
    /// Which feature–label weights exist: all (CRF++) or observed in training (CRFsuite
    /// default). Default: all, but observed for the factorial CRF.
    #[arg(long, value_enum)]
    features: Option<FeatureSet>,
    /// Add the always-on per-label bias feature `*`.
    #[arg(long)]
    label_bias: bool,
    /// Drop features seen fewer times than this in training.
    #[arg(long, default_value_t = 1)]
    min_freq: u64,
    /// Start from the weights of a finished run: templates, features and labels with the same
    /// names are copied, the rest start at 0 (000 §5.1.3: BP training of the skip-chain from
    /// a trained linear chain).
    #[arg(long, value_name = "RUN")]
    init_from: Option<PathBuf>,
    /// Evaluate on --test every N iterations (0: at the end only).
    #[arg(long, default_value_t = 0)]
    eval_every: usize,
    /// Train on N items of --train drawn without replacement with --seed (004 §8.3: 100).
    #[arg(long, value_name = "N")]
    train_sample: Option<usize>,
    /// Also score the training data at the end (train NLL in the summary).
    #[arg(long)]
    eval_train: bool,
    /// Worker threads (0: all cores).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

impl RunArgs {
    fn spec(&self, estimator: EstimatorSpec) -> Result<RunSpec> {
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

#[derive(Args)]
struct TrainArgs {
    #[command(flatten)]
    run: RunArgs,
    #[command(flatten)]
    estimator: EstimatorArgs,
    /// Run directory to create.
    #[arg(long)]
    out: PathBuf,
    /// Run a stored spec.json instead of the options above.
    #[arg(long, conflicts_with = "train")]
    spec: Option<PathBuf>,
    /// Print a one-line JSON summary as the last line of stdout.
    #[arg(long)]
    summary_json: bool,
}

#[derive(Args)]
struct SweepArgs {
    #[command(flatten)]
    run: RunArgs,
    /// LOW/HIGH component families, e.g. pl1/fl or pl1/pl2.
    #[arg(long, default_value = "pl1/pl2")]
    families: String,
    /// Selection probabilities λ of the higher family, comma-separated.
    #[arg(long, default_value = "0,0.25,0.5,0.75,1")]
    lambdas: String,
    /// Weights β of the higher family (the lower one has 1 − β), comma-separated.
    #[arg(long, default_value = "0,0.25,0.5,0.75,1")]
    betas: String,
    /// Prior variances σ² to sweep too, comma-separated (default: the run's prior only).
    #[arg(long)]
    sigma2s: Option<String>,
    /// Selection model.
    #[arg(long, value_enum, default_value_t = piecewise_lab::estimators::scl::Selection::Independent)]
    selection: piecewise_lab::estimators::scl::Selection,
    /// Points run at once (the --threads budget is split between them).
    #[arg(long, default_value_t = 2)]
    jobs: usize,
    /// Sweep directory (resumed when it exists).
    #[arg(long)]
    out: PathBuf,
}

#[derive(Args)]
struct CompareArgs {
    #[command(flatten)]
    run: RunArgs,
    /// Comma-separated estimators, trained in turn with the same features and prior.
    #[arg(long, default_value = "ml,pl,pl-edge,pw,pwpl")]
    estimators: String,
    /// Pieces for the piecewise estimators (see `train --help`).
    #[arg(long)]
    pieces: Option<String>,
    /// μ for pw-reweighted.
    #[arg(long)]
    mu: Option<f64>,
    #[command(flatten)]
    bp: BpArgs,
    #[command(flatten)]
    scl: SclArgs,
    #[command(flatten)]
    camel: CamelArgs,
    #[command(flatten)]
    nota: NotaArgs,
    /// Directory for the runs (one subdirectory per estimator).
    #[arg(long, required_unless_present = "runs")]
    out: Option<PathBuf>,
    /// Compare these finished run directories (comma-separated) instead of training: each
    /// must have been scored on the same test file.
    #[arg(long, conflicts_with = "out")]
    runs: Option<String>,
    /// Print the table as JSON.
    #[arg(long)]
    json: bool,
}

fn main() {
    piecewise_lab::util::keep_large_allocations_in_heap();
    let cli = Cli::parse();
    let open = match &cli.command {
        None => Some(None),
        Some(Command::Gui {
            train,
            test,
            template,
            model,
        }) => Some(train.as_ref().map(|t| {
            let config = piecewise_lab::app::Config::for_binary();
            let mut src = piecewise_lab::app::data::DataSource::sample(&config.root);
            let path = |p: &Option<PathBuf>| {
                p.as_ref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default()
            };
            src.train = t.display().to_string();
            src.test = path(test);
            src.template = path(template);
            src.set_model(&model.spec(src.options()));
            src
        })),
        Some(_) => None,
    };
    if let Some(open) = open {
        if let Err(e) =
            piecewise_lab::app::run_native(piecewise_lab::app::Config::for_binary(), open)
        {
            eprintln!("error: cannot open the window: {e}");
            std::process::exit(1);
        }
        return;
    }
    let command = cli.command.expect("a command");
    if let Err(e) = run(command) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run(command: Command) -> Result<()> {
    match command {
        Command::Gui { .. } => unreachable!("handled in main"),
        Command::Train(a) => train(a),
        Command::Reproduce {
            name,
            list,
            quick,
            out,
            data,
            threads,
        } => reproduce(name, list, quick, out, data, threads),
        Command::Sweep(a) => sweep(a),
        Command::Compare(a) => compare(a),
        Command::Predict {
            model,
            data,
            out,
            decode,
        } => {
            let (fam, theta) = load_model(&model)?;
            let how = run_inference(&model, decode);
            let corpus = fam.read(&data)?;
            let pred = piecewise_lab::eval::predict(fam.as_ref(), &theta, &corpus, &how)?;
            emit(out.as_deref(), &fam.format(&corpus.sequences, Some(&pred)))
        }
        Command::Eval {
            model,
            data,
            decode,
            json,
        } => {
            let (fam, theta) = load_model(&model)?;
            let how = run_inference(&model, decode);
            let corpus = fam.read(&data)?;
            let m = evaluate(fam.as_ref(), &theta, &corpus, &how)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&m).unwrap());
            } else {
                print!("{}", m.report());
            }
            Ok(())
        }
        Command::Dump { model, out } => {
            let (fam, theta) = load_model(&model)?;
            emit(out.as_deref(), &family::dump_weights(fam.as_ref(), &theta))
        }
        Command::Objective {
            data,
            model,
            template,
            weights,
            estimator,
            json,
        } => objective(
            &data,
            &model,
            template.as_deref(),
            &weights,
            &estimator.spec(0)?,
            json,
        ),
        Command::Generate(Generate::Grid {
            classes,
            height,
            width,
            images,
            field,
            beta,
            sweeps,
            noise,
            scores,
            seed,
            out,
            test_images,
            test_out,
        }) => {
            let g = GridGen {
                classes,
                height,
                width,
                field,
                beta,
                sweeps,
                noise,
                scores,
            };
            let n_test = test_images.unwrap_or(0);
            let all = g.images(images + n_test, seed)?;
            let (train, test) = all.split_at(images);
            let fmt = piecewise_lab::data::grid::format_grid;
            write_atomic(&out, fmt(train, None).as_bytes())?;
            eprintln!(
                "wrote {} {height}×{width} images to {}",
                train.len(),
                out.display()
            );
            if let Some(p) = test_out {
                write_atomic(&p, fmt(test, None).as_bytes())?;
                eprintln!(
                    "wrote {} {height}×{width} images to {}",
                    test.len(),
                    p.display()
                );
            }
            Ok(())
        }
        Command::Generate(Generate::Boltzmann {
            m,
            theta,
            biases,
            n,
            seed,
            out,
        }) => {
            let theta = match theta {
                Some(t) => parse_list(&t, "--theta")?,
                None => synth_loopy::paper_theta(m),
            };
            let biases = match biases {
                Some(b) => parse_list(&b, "--biases")?,
                None => vec![],
            };
            let samples = synth_loopy::boltzmann_samples(m, &theta, &biases, n, seed)?;
            // The generating parameters ride along as comments: runs report ‖θ̂ − θ0‖.
            let join = |v: &[f64]| {
                v.iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            };
            let mut text = format!("# theta: {}\n", join(&theta));
            if !biases.is_empty() {
                text += &format!("# biases: {}\n", join(&biases));
            }
            text += &piecewise_lab::data::samples::format_samples(&samples);
            write_atomic(&out, text.as_bytes())?;
            eprintln!("wrote {n} samples of {m} variables to {}", out.display());
            Ok(())
        }
        Command::Generate(Generate::HmmMixture {
            alpha,
            seed,
            sequences,
            length,
            out,
            test_sequences,
            test_out,
        }) => {
            if !(0.0..=1.0).contains(&alpha) {
                return Err(Error::invalid("--alpha must be in [0, 1]"));
            }
            let n_test = test_sequences.unwrap_or(0);
            let all = synth::hmm_mixture(alpha, seed, sequences + n_test, length);
            let (train, test) = all.split_at(sequences);
            write_atomic(&out, format_conll(train, &[]).as_bytes())?;
            eprintln!(
                "wrote {} sequences of length {length} to {}",
                train.len(),
                out.display()
            );
            if let Some(p) = test_out {
                write_atomic(&p, format_conll(test, &[]).as_bytes())?;
                eprintln!(
                    "wrote {} sequences of length {length} to {}",
                    test.len(),
                    p.display()
                );
            }
            Ok(())
        }
        Command::Info { file, model, json } => info(&file, model, json),
        Command::Theory {
            m,
            theta,
            scl,
            json,
        } => theory(m, theta.as_deref(), &scl, json),
        Command::Infer {
            model,
            data,
            uai,
            evid,
            algo,
            max,
            bp,
            repeat,
            out,
        } => {
            let opts = bp.options();
            opts.check()?;
            let text = match (model, uai) {
                (_, Some(u)) => {
                    let g = piecewise_lab::data::uai::read_uai(&u)?;
                    let ev = match &evid {
                        Some(e) => piecewise_lab::data::uai::read_evid(e, &g)?,
                        None => vec![],
                    };
                    let (_m, inst, phi) = g.instance(&ev)?;
                    let mut times = vec![];
                    let mut r = None;
                    for _ in 0..repeat.max(1) {
                        let t = std::time::Instant::now();
                        r = Some(infer_one(&inst, &phi, algo, max, &opts)?);
                        times.push(t.elapsed().as_secs_f64());
                    }
                    let r = r.expect("at least one run");
                    times.sort_by(f64::total_cmp);
                    let median = times[times.len() / 2];
                    match &r.report {
                        Some(rep) => eprintln!(
                            "{}: {} sweeps, median {median:.6} s over {} runs ({:.1} sweeps/s), residual {:.3e}, converged {}",
                            r.by,
                            rep.sweeps,
                            times.len(),
                            rep.sweeps as f64 / median,
                            rep.residual,
                            rep.converged
                        ),
                        None => eprintln!("{}: median {median:.6} s over {} runs", r.by, times.len()),
                    }
                    if let Some(lz) = r.log_z {
                        eprintln!("log Z = {lz} ({})", r.by);
                    }
                    match &r.map {
                        Some(y) => piecewise_lab::data::uai::format_map(y),
                        None => piecewise_lab::data::uai::format_mar(&r.marginals),
                    }
                }
                (Some(dir), None) => {
                    let (fam, theta) = load_model(&dir)?;
                    let data = data.ok_or_else(|| Error::invalid("infer --model needs --data"))?;
                    let corpus = fam.read(&data)?;
                    let insts = fam.instances(&corpus)?;
                    let mut o = String::new();
                    for (i, inst) in insts.iter().enumerate() {
                        let phi = piecewise_lab::eval::tables(fam.as_ref(), &theta, inst);
                        let r = infer_one(inst, &phi, algo, max, &opts)
                            .map_err(|e| Error::invalid(format!("item {}: {e}", i + 1)))?;
                        let names = |v: usize| fam.labels(inst, v as u32).names.clone();
                        let mut j = serde_json::json!({"item": i + 1, "by": r.by});
                        match &r.map {
                            Some(y) => {
                                j["map"] = serde_json::json!(y
                                    .iter()
                                    .enumerate()
                                    .map(|(v, &x)| names(v)[x as usize].clone())
                                    .collect::<Vec<_>>());
                                j["score"] = serde_json::json!(inst.score(&phi, y));
                            }
                            None => {
                                j["labels"] = serde_json::json!(names(0));
                                j["marginals"] = serde_json::json!(r.marginals);
                                j["log_z"] = serde_json::json!(r.log_z);
                            }
                        }
                        if let Some(rep) = r.report {
                            j["bp"] = serde_json::json!(rep);
                        }
                        o.push_str(&j.to_string());
                        o.push('\n');
                    }
                    o
                }
                (None, None) => {
                    return Err(Error::invalid(
                        "infer needs --model DIR --data FILE or --uai FILE",
                    ))
                }
            };
            emit(out.as_deref(), &text)
        }
        Command::Augment { data, out } => {
            let mut c = read_corpus(&data)?;
            if c.n_obs_columns() == 0 {
                return Err(Error::file(
                    data.display().to_string(),
                    "augment derives columns from the word in the first column; this data has \
                     no observation columns (CRFsuite data carries its own attributes)",
                ));
            }
            for s in &mut c.sequences {
                for cols in &mut s.columns {
                    let extra = piecewise_lab::data::word_columns(&cols[0]);
                    cols.splice(1..1, extra);
                }
            }
            write_atomic(&out, format_conll(&c.sequences, &[]).as_bytes())?;
            eprintln!("wrote {} sequences to {}", c.sequences.len(), out.display());
            Ok(())
        }
        Command::Split {
            data,
            seed,
            fraction,
            head,
            train_out,
            test_out,
        } => {
            if !(0.0..=1.0).contains(&fraction) {
                return Err(Error::invalid("--fraction must be in [0, 1]"));
            }
            let mut seqs = vec![];
            for d in &data {
                seqs.extend(read_corpus(d)?.sequences);
            }
            let (order, n_train) = match head {
                Some(n) => ((0..seqs.len()).collect::<Vec<_>>(), n.min(seqs.len())),
                None => (
                    piecewise_lab::data::shuffled(seqs.len(), seed),
                    (seqs.len() as f64 * fraction).round() as usize,
                ),
            };
            let pick = |idx: &[usize]| idx.iter().map(|&i| seqs[i].clone()).collect::<Vec<_>>();
            write_atomic(
                &train_out,
                piecewise_lab::data::format_corpus(&pick(&order[..n_train])).as_bytes(),
            )?;
            write_atomic(
                &test_out,
                piecewise_lab::data::format_corpus(&pick(&order[n_train..])).as_bytes(),
            )?;
            eprintln!(
                "{} sequences: {} to {}, {} to {}",
                seqs.len(),
                n_train,
                train_out.display(),
                seqs.len() - n_train,
                test_out.display()
            );
            Ok(())
        }
        Command::Score { data, json } => {
            let c = read_conll(&data)?;
            if c.n_obs_columns() < 1 {
                return Err(Error::file(
                    data.display().to_string(),
                    "needs a gold and a predicted label column",
                ));
            }
            let gold: Vec<Vec<String>> = c
                .sequences
                .iter()
                .map(|s| {
                    s.columns
                        .iter()
                        .map(|cols| cols[cols.len() - 1].clone())
                        .collect()
                })
                .collect();
            let pred: Vec<Vec<String>> = c.sequences.iter().map(|s| s.labels.clone()).collect();
            let m = piecewise_lab::eval::score(&gold, &pred);
            if json {
                println!("{}", serde_json::to_string_pretty(&m).unwrap());
            } else {
                print!("{}", m.report());
            }
            Ok(())
        }
    }
}

fn emit(out: Option<&Path>, text: &str) -> Result<()> {
    match out {
        Some(p) => write_atomic(p, text.as_bytes()),
        None => {
            use std::io::Write;
            let mut so = std::io::stdout().lock();
            so.write_all(text.as_bytes())
                .map_err(|e| Error::io(Path::new("<stdout>"), e))
        }
    }
}

/// What `infer` found for one instance.
struct Inferred {
    marginals: Vec<Vec<f64>>,
    map: Option<Vec<u32>>,
    log_z: Option<f64>,
    report: Option<piecewise_lab::inference::BpReport>,
    by: &'static str,
}

fn infer_one(
    inst: &piecewise_lab::graph::Instance,
    phi: &[f64],
    algo: Algo,
    max: bool,
    opts: &BpOptions,
) -> Result<Inferred> {
    use piecewise_lab::inference::{bp_node_marginals, exact_node_marginals};
    let mut r = Inferred {
        marginals: vec![],
        map: None,
        log_z: None,
        report: None,
        by: "",
    };
    match (algo, max) {
        (Algo::Exact, false) => {
            let (m, lz) = exact_node_marginals(inst, phi)?;
            (r.marginals, r.log_z, r.by) = (m, Some(lz), "exact");
        }
        (Algo::Bp, false) => {
            let (m, rep, lz) = bp_node_marginals(inst, phi, opts);
            (r.marginals, r.log_z, r.report, r.by) = (m, Some(lz), Some(rep), "sum-product BP");
        }
        (algo, true) => {
            let how = Inference {
                decoder: match algo {
                    Algo::Bp => Decoder::MaxProduct,
                    Algo::Exact if inst.chain.is_some() || inst.product.is_some() => {
                        Decoder::Viterbi
                    }
                    Algo::Exact if inst.forest => Decoder::MaxProduct,
                    Algo::Exact => Decoder::Exact,
                },
                bp: *opts,
                scaling: None,
            };
            let (y, by) = piecewise_lab::eval::decode(inst, phi, &how, &mut Workspace::default())?;
            (r.map, r.by) = (Some(y), by);
        }
    }
    Ok(r)
}

/// A run's test-time inference from its `spec.json`, with the decoder overridden when given.
fn run_inference(dir: &Path, decode: Option<Decoder>) -> Inference {
    let mut how = piecewise_lab::util::read_json::<RunSpec>(&dir.join("spec.json"))
        .map(|s| s.inference())
        .unwrap_or_default();
    // `auto` keeps what the spec resolved it to (local for memm and nota runs).
    if let Some(d) = decode.filter(|&d| d != Decoder::Auto) {
        how.decoder = d;
    }
    how.scaling = piecewise_lab::train::scaling::load(dir);
    how
}

/// Comma-separated numbers.
fn parse_list(text: &str, what: &str) -> Result<Vec<f64>> {
    text.split(',')
        .map(|x| {
            x.trim()
                .parse::<f64>()
                .map_err(|_| Error::invalid(format!("{what}: {x:?} is not a number")))
        })
        .collect()
}

fn train(a: TrainArgs) -> Result<()> {
    let spec = match &a.spec {
        Some(p) => piecewise_lab::util::read_json::<RunSpec>(p)?,
        None => a.run.spec(a.estimator.spec(a.run.seed)?)?,
    };
    let summary = run_with_progress(&spec, &a.out)?;
    if let Some(m) = &summary.test {
        eprint!("{}", m.report());
    }
    if a.summary_json {
        println!("{}", summary_json(&summary, &a.out));
    }
    Ok(())
}

/// One-line JSON summary of a run.
fn summary_json(summary: &RunSummary, out: &Path) -> serde_json::Value {
    serde_json::json!({
        "estimator": summary.estimator,
        "iterations": summary.iterations,
        "train_seconds": summary.train_seconds,
        "setup_seconds": summary.setup_seconds,
        "n_params": summary.n_params,
        "threads": summary.threads,
        "final_objective": summary.final_objective,
        "stop_reason": summary.stop_reason,
        "model": summary.model,
        "bp_unconverged": summary.bp_unconverged,
        "param_error": summary.param_error,
        "paper_flops": summary.paper_flops,
        "decoders": summary.test.as_ref().map(|m| &m.decoders),
        "token_accuracy": summary.test.as_ref().map(|m| m.token_accuracy),
        "segment_f1": summary.test.as_ref().and_then(|m| m.segment_f1()),
        "test_log_likelihood": summary.test.as_ref().and_then(|m| m.log_likelihood),
        "run_dir": out,
    })
}

/// Executes a spec with a progress bar on standard error.
fn run_with_progress(spec: &RunSpec, out: &Path) -> Result<RunSummary> {
    let max_iter = spec.optimiser.max_iter as u64;
    let bar = ProgressBar::new(max_iter);
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} it  {msg}",
        )
        .unwrap(),
    );
    let cancel = AtomicBool::new(false);
    let mut on_event = |e: RunEvent| match e {
        RunEvent::Started {
            n_params,
            n_sequences,
            n_tokens,
            threads,
        } => {
            bar.println(format!(
                "training {} on {n_sequences} sequences / {n_tokens} tokens: {n_params} parameters, {threads} threads",
                spec.estimator.name()
            ));
        }
        RunEvent::Progress(r) => {
            bar.set_position(r.iteration as u64);
            let bp = if r.bp_unconverged > 0 {
                format!("  BP unconverged on {}", r.bp_unconverged)
            } else {
                String::new()
            };
            bar.set_message(format!(
                "objective {:.4}  |g| {:.3e}{bp}",
                r.objective, r.grad_norm
            ));
        }
        RunEvent::Eval { iteration, metrics } => bar.println(format!(
            "iteration {iteration}: test accuracy {:.2}%, segment F1 {:.2}",
            metrics.token_accuracy, metrics.segments.f1
        )),
        RunEvent::Finished(_) | RunEvent::Failed(_) => bar.finish_and_clear(),
    };
    let summary = execute(spec, out, &cancel, &mut on_event)?;
    eprintln!(
        "{} iterations ({:?}) in {:.2} s; model in {}",
        summary.iterations,
        summary.stop_reason.as_ref().unwrap(),
        summary.train_seconds,
        out.display()
    );
    Ok(summary)
}

fn reproduce(
    name: Option<String>,
    list: bool,
    quick: bool,
    out: Option<PathBuf>,
    data: PathBuf,
    threads: usize,
) -> Result<()> {
    use piecewise_lab::train::reproduce::{self, Event, Options, EXPERIMENTS};
    let name = match (name, list) {
        (Some(n), false) => n,
        _ => {
            for (n, what) in EXPERIMENTS {
                println!("{n:<12} {what}");
            }
            return Ok(());
        }
    };
    let o = Options {
        quick,
        data,
        out: out.unwrap_or_else(|| {
            PathBuf::from(if quick {
                "reproductions-quick"
            } else {
                "reproductions"
            })
        }),
        threads,
    };
    let e = reproduce::experiment(&name, &o)?;
    let total: usize = e.groups.iter().map(|g| g.runs.len()).sum();
    eprintln!("{}: {} runs in {}", e.title, total, o.out.display());
    let results = reproduce::run_all(&e, &o, &mut |ev| match ev {
        Event::Reused(g, k) => eprintln!("  {g} {k}: finished before, reused"),
        Event::Started(g, k, i, n) => eprintln!("  [{i}/{n}] {g} {k} …"),
        Event::Finished(g, k, s) => eprintln!(
            "  {g} {k}: {} iterations, {:.1} s{}",
            s.iterations,
            s.train_seconds,
            s.test
                .as_ref()
                .map(|t| format!(", token accuracy {:.2}", t.token_accuracy))
                .unwrap_or_default()
        ),
    })?;
    let date = std::process::Command::new("date")
        .arg("+%Y-%m-%d %H:%M %Z")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let md = reproduce::report(&e, &o, &results, &date)?;
    println!("{md}");
    eprintln!("report: {}", o.out.join(format!("{}.md", e.name)).display());
    Ok(())
}

fn sweep(a: SweepArgs) -> Result<()> {
    use piecewise_lab::estimators::scl::ComponentFamily;
    use piecewise_lab::train::sweep::{run_sweep, SweepEvent, SweepSpec};
    let (low, high) = a
        .families
        .split_once('/')
        .ok_or_else(|| Error::invalid("--families is LOW/HIGH, e.g. pl1/fl"))?;
    let policy =
        piecewise_lab::estimators::SelectionPolicy::parse("1:1*pl1", a.selection, a.run.seed)?;
    let base = a
        .run
        .spec(EstimatorSpec::from_name("scl")?.with_policy(policy))?;
    let spec = SweepSpec {
        base,
        low: ComponentFamily::parse(low.trim())?,
        high: ComponentFamily::parse(high.trim())?,
        lambdas: parse_list(&a.lambdas, "--lambdas")?,
        betas: parse_list(&a.betas, "--betas")?,
        sigma2s: a
            .sigma2s
            .as_deref()
            .map(|s| parse_list(s, "--sigma2s"))
            .transpose()?
            .unwrap_or_default(),
        jobs: a.jobs,
    };
    let total = spec.points().len();
    let done = std::sync::atomic::AtomicUsize::new(0);
    let on_event = |e: SweepEvent| {
        let k = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        match e {
            SweepEvent::Skipped(p) => eprintln!(
                "[{k}/{total}] λ={} β={}: finished before, skipped",
                p.lambda, p.beta
            ),
            SweepEvent::Finished(p, s) => eprintln!(
                "[{k}/{total}] λ={} β={}: {} iterations, {:.2} s, held-out LL {}",
                p.lambda,
                p.beta,
                s.iterations,
                s.train_seconds,
                s.test
                    .as_ref()
                    .and_then(|m| m.log_likelihood)
                    .map_or("–".into(), |x| format!("{x:.3}"))
            ),
            SweepEvent::Failed(p, why) => {
                eprintln!("[{k}/{total}] λ={} β={}: failed: {why}", p.lambda, p.beta)
            }
        }
    };
    let idx = run_sweep(&spec, &a.out, &AtomicBool::new(false), &on_event)?;
    let finished = idx.points.iter().filter(|p| p.status == "finished").count();
    eprintln!(
        "{finished} of {total} points finished; table in {}",
        a.out.join("sweep.csv").display()
    );
    Ok(())
}

/// Trains each estimator in turn with the same data, features and prior; prints one table.
fn compare(a: CompareArgs) -> Result<()> {
    let mut rows = vec![];
    if let Some(runs) = &a.runs {
        for d in runs.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let dir = PathBuf::from(d);
            let s: piecewise_lab::train::RunSummary =
                piecewise_lab::util::read_json(&dir.join("summary.json"))?;
            if s.test.is_none() {
                return Err(Error::file(d, "the run has no test scores to compare"));
            }
            // The directory's name: two runs of one estimator (say with and without
            // per-state scales) stay apart.
            let name = dir
                .file_name()
                .map_or(d.to_string(), |f| f.to_string_lossy().into_owned());
            rows.push((name, s, dir));
        }
        return compare_table(&rows, a.json);
    }
    if a.run.test.is_none() {
        return Err(Error::invalid(
            "compare needs --test FILE to score the estimators",
        ));
    }
    let out = a.out.clone().expect("clap: --out or --runs");
    for name in a
        .estimators
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        let est = EstimatorArgs {
            estimator: name.to_string(),
            pieces: a.pieces.clone(),
            mu: a.mu,
            bp: a.bp.clone(),
            scl: a.scl.clone(),
            camel: a.camel.clone(),
            nota: a.nota.clone(),
        };
        let spec = match name {
            "pw" | "pw-reweighted" | "pwpl" => est.spec(a.run.seed)?,
            "nota" => a.nota.apply(EstimatorSpec::from_name(name)?, a.run.seed)?,
            "scl" => a.scl.apply(EstimatorSpec::from_name(name)?)?,
            _ => a
                .camel
                .apply(EstimatorSpec::from_name(name)?.with_bp(a.bp.options()))?,
        };
        let spec = a.run.spec(spec)?;
        let dir = out.join(name);
        let summary = run_with_progress(&spec, &dir)?;
        rows.push((name.to_string(), summary, dir));
    }
    compare_table(&rows, a.json)
}

/// McNemar's test and the paired t-test (001) for every pair of rows scored on the same
/// sequences.
fn significance(
    rows: &[(String, piecewise_lab::train::RunSummary, PathBuf)],
) -> Vec<piecewise_lab::eval::significance::PairTest> {
    let mut out = vec![];
    for i in 0..rows.len() {
        for j in i + 1..rows.len() {
            let (a, b) = (rows[i].1.test.as_ref(), rows[j].1.test.as_ref());
            if let (Some(a), Some(b)) = (a, b) {
                if !a.sequence_errors.is_empty()
                    && a.sequence_errors.len() == b.sequence_errors.len()
                {
                    out.push(piecewise_lab::eval::significance::compare(
                        &rows[i].0,
                        &a.sequence_errors,
                        &rows[j].0,
                        &b.sequence_errors,
                    ));
                }
            }
        }
    }
    out
}

fn compare_table(
    rows: &[(String, piecewise_lab::train::RunSummary, PathBuf)],
    json: bool,
) -> Result<()> {
    let tests = significance(rows);
    let fields = |m: &piecewise_lab::eval::Metrics| -> Vec<(String, f64)> {
        // Segment types when the labels carry chunk prefixes, else each non-O label's token F1.
        if m.segments.gold > 0 {
            m.segment_types
                .iter()
                .filter(|(k, _)| !k.is_empty())
                .map(|(k, v)| (k.clone(), v.f1))
                .collect()
        } else {
            m.labels
                .iter()
                .filter(|(k, _)| k.as_str() != "O")
                .map(|(k, v)| (k.clone(), v.f1))
                .collect()
        }
    };
    if json {
        let j: Vec<_> = rows
            .iter()
            .map(|(n, s, dir)| {
                let m = s.test.as_ref().unwrap();
                let mut v = summary_json(s, dir);
                v["estimator"] = serde_json::json!(n);
                v["field_f1"] = serde_json::json!(fields(m)
                    .into_iter()
                    .collect::<std::collections::BTreeMap<_, _>>());
                // Each test against the other rows, keyed by the other row's name.
                let sig: serde_json::Map<String, serde_json::Value> = tests
                    .iter()
                    .filter_map(|t| {
                        let other = if &t.a == n {
                            &t.b
                        } else if &t.b == n {
                            &t.a
                        } else {
                            return None;
                        };
                        Some((other.clone(), serde_json::to_value(t).unwrap()))
                    })
                    .collect();
                v["significance"] = serde_json::Value::Object(sig);
                v
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&j).unwrap());
        return Ok(());
    }
    let names: Vec<String> = rows
        .first()
        .map(|r| {
            fields(r.1.test.as_ref().unwrap())
                .into_iter()
                .map(|f| f.0)
                .collect()
        })
        .unwrap_or_default();
    print!(
        "{:<14} {:>6} {:>9} {:>9} {:>8} {:>12}",
        "estimator", "iter", "seconds", "accuracy", "seg F1", "held-out LL"
    );
    for n in &names {
        print!(" {:>9}", truncate(n, 9));
    }
    println!();
    for (n, s, _) in rows {
        let m = s.test.as_ref().unwrap();
        print!(
            "{:<14} {:>6} {:>9.2} {:>9.2} {:>8} {:>12.1}",
            n,
            s.iterations,
            s.train_seconds,
            m.token_accuracy,
            m.segment_f1()
                .map_or_else(|| "–".to_string(), |f| format!("{f:.2}")),
            m.log_likelihood.unwrap_or(f64::NAN)
        );
        let f: std::collections::BTreeMap<_, _> = fields(m).into_iter().collect();
        for n in &names {
            print!(" {:>9.2}", f.get(n).copied().unwrap_or(f64::NAN));
        }
        println!();
    }
    if !names.is_empty() {
        println!(
            "(per-field columns: {} F1)",
            if rows[0].1.test.as_ref().unwrap().segments.gold > 0 {
                "segment"
            } else {
                "token"
            }
        );
    }
    if !tests.is_empty() {
        println!(
            "\nsignificance (001): McNemar on sequences labelled entirely right by one only \
             (exact, two-sided); paired t on wrong tokens per sequence"
        );
        println!(
            "{:<14} {:<14} {:>7} {:>7} {:>10} {:>10} {:>8} {:>10}",
            "A", "B", "only A", "only B", "McNemar p", "mean A−B", "t", "t-test p"
        );
        for t in &tests {
            println!(
                "{:<14} {:<14} {:>7} {:>7} {:>10.3e} {:>10.4} {:>8.2} {:>10.3e}",
                truncate(&t.a, 14),
                truncate(&t.b, 14),
                t.mcnemar.only_a,
                t.mcnemar.only_b,
                t.mcnemar.p,
                t.paired_t.mean_difference,
                t.paired_t.t,
                t.paired_t.p
            );
        }
    }
    Ok(())
}

fn truncate(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

fn objective(
    data: &Path,
    model: &ModelArgs,
    template: Option<&Path>,
    weights: &Path,
    spec: &EstimatorSpec,
    json: bool,
) -> Result<()> {
    let mspec = model.spec(ChainOptions {
        label_bias: true,
        min_freq: 1,
        feature_set: FeatureSet::All,
        ..Default::default()
    });
    let corpus = mspec.read(data)?;
    let (fam, instances) = mspec.fit(&corpus, template)?;
    let text = piecewise_lab::util::read_text(weights)?;
    let theta = family::read_weights(fam.as_ref(), &text, &weights.display().to_string())?;
    let est = spec.build(fam.model())?;
    if matches!(spec, EstimatorSpec::Camel { .. }) {
        eprintln!(
            "note: {} is evaluated at δ = 0 and g = 0, where its dual is piecewise; its \
             multipliers belong to a training run (camel.json)",
            spec.name()
        );
    }
    let mut ws = Workspace::default();
    let mut value = 0.0;
    let mut phi = Vec::new();
    let mut cols = Vec::new();
    for (i, inst) in instances.iter().enumerate() {
        est.check(inst)
            .map_err(|e| Error::invalid(format!("sequence {}: {e}", i + 1)))?;
        phi.clear();
        phi.resize(inst.table_len, 0.0);
        fam.model().build_tables(&theta, inst, &mut phi, &mut cols);
        value += est.evaluate(inst, &phi, None, &mut ws);
    }
    if json {
        println!(
            "{}",
            serde_json::json!({"estimator": spec.name(), "value": value, "sequences": instances.len()})
        );
    } else {
        println!(
            "{}: {value} over {} sequences",
            spec.name(),
            instances.len()
        );
    }
    Ok(())
}

fn theory(m: usize, theta: Option<&str>, scl: &SclArgs, json: bool) -> Result<()> {
    use piecewise_lab::eval::asymptotic::{asymptotic_variance, component_flops, components};
    use piecewise_lab::graph::boltzmann::BoltzmannMachine;
    use piecewise_lab::graph::Family;
    if !(2..=12).contains(&m) {
        return Err(Error::invalid(
            "theory enumerates 2^m states: m must be in 2..=12",
        ));
    }
    let theta = match theta {
        Some(t) => parse_list(t, "--theta")?,
        None => synth_loopy::paper_theta(m),
    };
    let bm = BoltzmannMachine::new(m, BoltzmannOptions::default())?;
    let theta = bm.theta(&theta, &[])?;
    let inst = bm.graph()?;
    let policy = match scl.apply(EstimatorSpec::from_name("scl")?)? {
        EstimatorSpec::Scl { policy } => policy,
        _ => unreachable!("scl"),
    };
    let p = bm.model().n_params;
    // Expected FLOPs per example: each family's components times their selection rates.
    let mut flops = 0.0;
    let mut rows = vec![];
    for part in policy.groups.iter().flatten() {
        let comps = components(part.family, &inst);
        let per: f64 = comps
            .iter()
            .map(|a| component_flops(part.family, &inst, a, p))
            .sum();
        flops += part.lambda * per;
        rows.push((part.family.to_string(), comps.len(), per));
    }
    let e = asymptotic_variance(bm.model(), &inst, &theta, &policy)?.efficiency()?;
    if json {
        println!(
            "{}",
            serde_json::json!({"m": m, "policy": policy.to_string(), "selection": policy.selection,
                "expected_flops_per_example": flops, "efficiency": e})
        );
    } else {
        println!(
            "Boltzmann machine, m = {m}, policy {policy} ({:?} selection)",
            policy.selection
        );
        for (f, c, per) in rows {
            println!("  {f}: {c} components, {per} FLOPs per example when all are selected");
        }
        println!("expected FLOPs per example: {flops}");
        println!(
            "relative efficiency (det, 004 eq. 8): paper's form {:.4}, exact form {:.4}",
            e.det_paper, e.det_exact
        );
        println!(
            "relative trace: paper's form {:.4}, exact form {:.4}",
            e.trace_paper, e.trace_exact
        );
    }
    Ok(())
}

fn info(file: &Path, kind: FamilyKind, json: bool) -> Result<()> {
    let c = match kind {
        FamilyKind::Chain | FamilyKind::SkipChain | FamilyKind::BoltzmannChain => {
            read_corpus(file)?
        }
        FamilyKind::Factorial => {
            piecewise_lab::graph::factorial::FactorialCrf::read_data(file, true)?
        }
        FamilyKind::Grid => piecewise_lab::data::grid::read_grid(file)?,
        FamilyKind::Boltzmann => piecewise_lab::data::samples::read_samples(file)?,
    };
    let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
    for s in &c.sequences {
        for l in &s.labels {
            *counts.entry(l).or_default() += 1;
        }
    }
    if json {
        println!(
            "{}",
            serde_json::json!({
                "file": c.path, "sequences": c.sequences.len(), "tokens": c.tokens(),
                "columns": c.n_columns, "labels": counts,
            })
        );
    } else {
        println!("{}", c.path);
        println!("sequences: {}", c.sequences.len());
        println!("tokens:    {}", c.tokens());
        let layers = c.sequences.first().map_or(0, |s| s.layers.len());
        println!(
            "columns:   {} ({} observation + {} label)",
            c.n_columns,
            c.n_obs_columns(),
            layers + 1
        );
        println!("labels:    {}", counts.len());
        let mut v: Vec<_> = counts.into_iter().collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        for (l, n) in v {
            println!("  {l:<12} {n}");
        }
    }
    Ok(())
}
