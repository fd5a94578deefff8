//! The family registry: every model family by name ([`FamilyKind`]), as run-spec data
//! ([`ModelSpec`]: its options, how its data is read and how it is fitted), and rebuilt from its
//! `model.json`. This is the one file that lists the families; everything else goes through the
//! [`Family`] trait.

use crate::data::{Corpus, FeatureTemplate};
use crate::error::{Error, Result};
use crate::graph::boltzmann::{BoltzmannMachine, BoltzmannOptions};
use crate::graph::boltzmann_chain::{BoltzmannChain, BoltzmannChainOptions};
use crate::graph::chain::{ChainCrf, ChainOptions};
use crate::graph::factorial::{FactorialCrf, FactorialOptions};
use crate::graph::grid::{GridCrf, GridOptions};
use crate::graph::{Family, Instance};
use std::borrow::Cow;
use std::path::Path;
use std::sync::Arc;

/// The families by name, for `--model` and the GUI's picker.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum FamilyKind {
    /// Linear-chain CRF: CoNLL columns or a seminar folder, CRF++ template
    #[default]
    Chain,
    /// H×W lattice of labels: the grid format (cells `label obs…` separated by |)
    Grid,
    /// Fully connected Boltzmann machine: one 0/1 sample a line
    Boltzmann,
    /// Generative chain over labels and words (004 §8.3.1): CoNLL columns, word first, label last
    BoltzmannChain,
    /// Factorial CRF (000 eq. 40): POS tags and NP chunks as two coupled chains; CoNLL-2000 `word POS chunk`, exact inference over the 45 × 3 joint states
    Factorial,
    /// Skip-chain CRF (000 eq. 41): a linear chain plus skip edges between identical capitalised words; a seminar folder or CoNLL columns
    SkipChain,
    /// Binarised treebank grammar scored on its chart edges (001 §5): Penn Treebank `.mrg` trees (a file, a folder or a zip); trains generative, memm (MECFG), nota (PT-CFG) or ml (CRF-CFG)
    Grammar,
}

impl FamilyKind {
    /// Whether the family reads a CRF++ template and chain options (factorisation, extractor).
    pub fn is_chain(&self) -> bool {
        matches!(self, FamilyKind::Chain | FamilyKind::SkipChain)
    }
    pub const ALL: [FamilyKind; 7] = [
        FamilyKind::Chain,
        FamilyKind::SkipChain,
        FamilyKind::Grid,
        FamilyKind::Boltzmann,
        FamilyKind::BoltzmannChain,
        FamilyKind::Factorial,
        FamilyKind::Grammar,
    ];
    /// Whether the family's instances are factor graphs (the Data and Graph panes' families);
    /// the grammar's are charts, drawn by the Parse pane.
    pub fn is_factor_graph(&self) -> bool {
        !matches!(self, FamilyKind::Grammar)
    }
    pub fn name(&self) -> &'static str {
        match self {
            FamilyKind::Chain => "chain",
            FamilyKind::Grid => "grid",
            FamilyKind::Boltzmann => "boltzmann",
            FamilyKind::BoltzmannChain => "boltzmann-chain",
            FamilyKind::Factorial => "factorial",
            FamilyKind::SkipChain => "skip-chain",
            FamilyKind::Grammar => "grammar",
        }
    }
}

/// The model family of a run and its options, as data.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ModelSpec {
    /// Linear-chain CRF with CRF++ template features.
    LinearChain(ChainOptions),
    /// H×W lattice of labels with per-pixel observations.
    Grid(GridOptions),
    /// Fully connected Boltzmann machine over binary variables (generative).
    Boltzmann(BoltzmannOptions),
    /// Generative chain over labels and words (004 §8.3.1).
    BoltzmannChain(BoltzmannChainOptions),
    /// Two coupled chains, POS tags and NP chunks (000 eq. 40).
    Factorial(FactorialOptions),
    /// A linear chain plus skip edges between identical capitalised words (000 eq. 41); the
    /// chain's options with `skip` set.
    SkipChain(ChainOptions),
    /// A binarised treebank grammar (001 §5); its runs train through the grammar model kind (`run::grammar`).
    Grammar(crate::grammar::parse::GrammarRunOptions),
}

impl Default for ModelSpec {
    fn default() -> Self {
        ModelSpec::LinearChain(ChainOptions::default())
    }
}

impl ModelSpec {
    pub fn kind(&self) -> FamilyKind {
        match self {
            ModelSpec::LinearChain(_) => FamilyKind::Chain,
            ModelSpec::Grid(_) => FamilyKind::Grid,
            ModelSpec::Boltzmann(_) => FamilyKind::Boltzmann,
            ModelSpec::BoltzmannChain(_) => FamilyKind::BoltzmannChain,
            ModelSpec::Factorial(_) => FamilyKind::Factorial,
            ModelSpec::SkipChain(_) => FamilyKind::SkipChain,
            ModelSpec::Grammar(_) => FamilyKind::Grammar,
        }
    }

    pub fn name(&self) -> &'static str {
        self.kind().name()
    }

    /// Whether the family reads CRF++ feature templates.
    pub fn uses_template(&self) -> bool {
        matches!(self, ModelSpec::LinearChain(_) | ModelSpec::SkipChain(_))
    }

    /// Reads training data in the family's format.
    pub fn read(&self, path: &Path) -> Result<Corpus> {
        match self {
            ModelSpec::LinearChain(_) => crate::data::read_corpus(path),
            ModelSpec::Grid(_) => crate::data::grid::read_grid(path),
            ModelSpec::Boltzmann(_) => crate::data::samples::read_samples(path),
            ModelSpec::BoltzmannChain(_) => crate::data::read_corpus(path),
            ModelSpec::Factorial(o) => FactorialCrf::read_data(path, o.np_only),
            ModelSpec::SkipChain(_) => crate::data::read_corpus(path),
            ModelSpec::Grammar(_) => Err(grammar_elsewhere(path)),
        }
    }

    /// `info`'s statistics of a data set in the family's format. CoNLL column files and binary
    /// samples are streamed (one item in memory at a time); other formats are read whole.
    pub fn stats(&self, path: &Path) -> Result<crate::data::Stats> {
        use crate::data::{conll, samples, Stats};
        let name = path.display().to_string();
        let open = || crate::util::open_input(path);
        let mut st = Stats {
            path: name.clone(),
            ..Default::default()
        };
        let columns = !path.is_dir() && !crate::data::crfsuite::is_crfsuite(path);
        match self {
            ModelSpec::LinearChain(_) | ModelSpec::SkipChain(_) | ModelSpec::BoltzmannChain(_)
                if columns =>
            {
                st.n_columns =
                    conll::for_each_sequence(open()?, &name, conll::LabelColumn::Last, |s| {
                        st.add(&s);
                        Ok(())
                    })?;
            }
            ModelSpec::Boltzmann(_) => {
                st.n_columns = 1;
                samples::for_each_sample(open()?, &name, |s| {
                    st.add(&s);
                    Ok(())
                })?;
            }
            _ => st = Stats::of(&self.read(path)?),
        }
        Ok(st)
    }

    /// Fits the family on training data; returns the model and the training instances.
    pub fn fit(
        &self,
        train: &Corpus,
        template: Option<&Path>,
    ) -> Result<(Arc<dyn Family>, Vec<Instance>)> {
        self.fit_from(Cow::Borrowed(train), template)
    }

    /// [`fit`](Self::fit), consuming the training text: a chain drops it once its features are
    /// extracted, before its instances are assembled (issue 46: the text was a third of the
    /// peak memory of setting up a large corpus).
    pub fn fit_owned(
        &self,
        train: Corpus,
        template: Option<&Path>,
    ) -> Result<(Arc<dyn Family>, Vec<Instance>)> {
        self.fit_from(Cow::Owned(train), template)
    }

    fn fit_from(
        &self,
        train: Cow<'_, Corpus>,
        template: Option<&Path>,
    ) -> Result<(Arc<dyn Family>, Vec<Instance>)> {
        if template.is_some() && !self.uses_template() {
            return Err(Error::invalid(format!(
                "feature templates apply to the chain model, not {}",
                self.name()
            )));
        }
        Ok(match self {
            ModelSpec::LinearChain(o) | ModelSpec::SkipChain(o) => {
                let mut o = o.clone();
                match self {
                    ModelSpec::SkipChain(_) => {
                        o.skip.get_or_insert_with(Default::default);
                    }
                    _ => o.skip = None,
                }
                // Without a template: the CRF++ chunking template on column data; only the
                // always-on transition `B` when the state features come from CRFsuite
                // attributes or the `ner` extractor.
                let attributes = train.sequences.iter().any(|s| !s.attrs.is_empty());
                let template = match template {
                    Some(p) => FeatureTemplate::read(p)?,
                    None if attributes || o.extractor.table().is_some() => {
                        FeatureTemplate::transitions_only()
                    }
                    None => FeatureTemplate::chunking(),
                };
                let (m, i) = ChainCrf::fit_from(train, template, o)?;
                (Arc::new(m), i)
            }
            ModelSpec::Grid(o) => {
                let (m, i) = GridCrf::fit(&train, o.clone())?;
                (Arc::new(m), i)
            }
            ModelSpec::Boltzmann(o) => {
                let (m, i) = BoltzmannMachine::fit(&train, o.clone())?;
                (Arc::new(m), i)
            }
            ModelSpec::BoltzmannChain(o) => {
                let (m, i) = BoltzmannChain::fit(&train, o.clone())?;
                (Arc::new(m), i)
            }
            ModelSpec::Factorial(o) => {
                let (m, i) = FactorialCrf::fit(&train, o.clone())?;
                (Arc::new(m), i)
            }
            ModelSpec::Grammar(_) => return Err(grammar_elsewhere(Path::new(""))),
        })
    }
}

/// The grammar family has no factor-graph instances: its data are trees, its runs train
/// through the grammar model kind (`run::grammar`) and its models open in the Parse pane.
fn grammar_elsewhere(path: &Path) -> Error {
    Error::invalid(format!(
        "{}the grammar family reads treebanks into charts, not factor graphs: train it with \
         `train --model grammar` and look at it in the Parse pane",
        if path.as_os_str().is_empty() {
            String::new()
        } else {
            format!("{}: ", path.display())
        }
    ))
}

/// Every family's `model.json` format: `piecewise-lab/<family>/<version>`.
const MODEL_FORMATS: [&str; 5] = [
    crate::graph::chain::MODEL_FORMAT,
    crate::graph::grid::MODEL_FORMAT,
    crate::graph::boltzmann::MODEL_FORMAT,
    crate::graph::boltzmann_chain::MODEL_FORMAT,
    crate::graph::factorial::MODEL_FORMAT,
];

/// Rebuilds a family from its `model.json` (dispatching on `format`), then checks every size
/// and index of it against every other ([`Model::validate`](crate::graph::Model::validate),
/// [`Family::validate`]): a damaged file is an error naming the file and the field.
pub fn from_json(value: serde_json::Value, file: &str) -> Result<Arc<dyn Family>> {
    crate::util::check_format_version(&value, file)?;
    let format = value
        .get("format")
        .and_then(|f| f.as_str())
        .unwrap_or("")
        .to_string();
    let bad = |e: serde_json::Error| Error::file(file, format!("{format}: {e}"));
    let family: Arc<dyn Family> = match format.as_str() {
        crate::graph::chain::MODEL_FORMAT => Arc::new(ChainCrf::from_json(value).map_err(bad)?),
        crate::graph::grid::MODEL_FORMAT => Arc::new(GridCrf::from_json(value).map_err(bad)?),
        crate::graph::boltzmann::MODEL_FORMAT => {
            Arc::new(BoltzmannMachine::from_json(value).map_err(bad)?)
        }
        crate::graph::boltzmann_chain::MODEL_FORMAT => {
            Arc::new(BoltzmannChain::from_json(value).map_err(bad)?)
        }
        crate::graph::factorial::MODEL_FORMAT => {
            Arc::new(FactorialCrf::from_json(value).map_err(bad)?)
        }
        _ => {
            let family = |f: &str| {
                f.rsplit_once('/')
                    .map(|(a, v)| (a.to_string(), v.to_string()))
            };
            let ours = MODEL_FORMATS
                .iter()
                .find(|f| family(f).map(|x| x.0) == family(&format).map(|x| x.0));
            return Err(Error::file(
                file,
                match (ours, family(&format)) {
                    (Some(o), Some((_, v))) => format!(
                        "model format {format:?}: version {v} of this family's format; this \
                         build reads {o:?}"
                    ),
                    _ => format!(
                        "unknown model format {format:?} (this build reads {})",
                        MODEL_FORMATS.join(", ")
                    ),
                },
            ));
        }
    };
    family
        .model()
        .validate()
        .and_then(|()| family.validate())
        .map_err(|m| Error::file(file, m))?;
    Ok(family)
}

// ---- The model family's knobs (the settings schema) ----

use crate::graph::chain::{
    Extractor, Factorisation, FeatureSet, SkipFeatures, SkipOptions, DEFAULT_LEXICONS,
};
use crate::graph::grid::{Neighbourhood, Pairwise};
use crate::settings::{choice_name, choices, set_unless_default, Applies, Kind, Knob, KnobValues};

const CHAINS: &[&str] = &["chain", "skip-chain"];

pub static FAMILY: Knob = Knob {
    row: "Model",
    name: crate::settings::MODEL,
    label: "model",
    help: "The model family: chain (CRF++ templates on CoNLL data), skip-chain, factorial, grid \
           (lattice of labels, grid format), boltzmann (binary samples), boltzmann-chain \
           (generative chain over CoNLL labels and words), grammar (Penn Treebank trees: 001 §5's \
           parsers; the Parse pane)",
    kind: Kind::Choice(choices::<FamilyKind>),
    default: crate::settings::DEFAULT_MODEL,
    applies: Applies::Always,
};
pub static FACTORISATION: Knob = Knob {
    row: "Factorisation",
    name: "factorisation",
    label: "factorisation",
    help: "How the chain is cut into factors: split (state + transition), edge (one factor per \
           edge carrying the next label's state features, 000 Fig. 1) or edge-pair (the state \
           features weighted per label pair: every source state has its own weights); bagged and \
           per-feature cut split's state factor into one factor per feature family or per \
           feature (the same model; piecewise then trains each bag's classifier alone, 003 \
           Fig. 2)",
    kind: Kind::Choice(choices::<Factorisation>),
    default: "split",
    applies: Applies::Families(CHAINS),
};
/// The line beside a piecewise run (pw, pw-reweighted, pwpl) of a chain on the default `split`
/// factorisation whose labels form segments (B-/I-, `segments`): there each transition piece
/// p̃(y_{t−1}, y_t) carries no observation and counts the label prior again, and on NER data PW
/// reaches F1 34.6 against ML's 62.1. The papers cut the chain per edge (000 Fig. 1); 000
/// Table 4 chose `edge-pair` on its development split. `None` where the hint does not apply.
pub fn split_hint(
    model: &ModelSpec,
    estimator: &crate::estimators::EstimatorSpec,
    segments: bool,
) -> Option<&'static str> {
    let split = match model {
        ModelSpec::LinearChain(o) | ModelSpec::SkipChain(o) => {
            o.factorisation == Factorisation::Split
        }
        _ => false,
    };
    (split && segments && estimator.has_pieces()).then_some(
        "Piecewise on `split` counts the label prior again in every transition piece: on NER \
         data PW gets F1 34.6 against ML's 62.1. Choose Factorisation `edge-pair` (the papers', \
         000 Table 4) or `edge` (Advanced).",
    )
}

pub static EXTRACTOR: Knob = Knob {
    row: "Extractor",
    name: "extractor",
    label: "extractor",
    help: "Chain state features: template (the CRF++ template alone), or one of the piecewise \
           paper's tables of the first column plus the template (default template `B`): ner (000 \
           Table 1), np (Table 2) or seminar (Table 3). CRFsuite data brings its own attributes \
           either way",
    kind: Kind::Choice(choices::<Extractor>),
    default: "template",
    applies: Applies::Families(CHAINS),
};
pub static LEXICONS: Knob = Knob {
    row: "Name lists",
    name: "lexicons",
    label: "name lists",
    help: "Folder of the feature tables' name lists (first-male.txt, first-female.txt, last.txt)",
    kind: Kind::Path,
    default: DEFAULT_LEXICONS,
    applies: Applies::When(|s| {
        s.family() == "factorial"
            || (CHAINS.contains(&s.family()) && s.get(&EXTRACTOR) != "template")
    }),
};
pub static FEATURES: Knob = Knob {
    row: "Features",
    name: "features",
    label: "features",
    help: "Which feature–label weights exist: all (CRF++) or observed in training (CRFsuite \
           default). Default: all, but observed for the factorial CRF",
    kind: Kind::Choice(choices::<FeatureSet>),
    default: "",
    applies: Applies::Families(&["chain", "skip-chain", "factorial"]),
};
pub static LABEL_BIAS: Knob = Knob {
    row: "Features",
    name: "label-bias",
    label: "label bias",
    help: "Add the always-on per-label bias feature `*`",
    kind: Kind::Flag,
    default: "false",
    applies: Applies::Families(CHAINS),
};
pub static MIN_FREQ: Knob = Knob {
    row: "Features",
    name: "min-freq",
    label: "min count",
    help: "Drop features seen fewer times than this in training (boltzmann-chain: training words \
           seen fewer times become <unk>)",
    kind: Kind::Count {
        min: 1,
        max: 1_000_000,
    },
    default: "1",
    applies: Applies::Families(&["chain", "skip-chain", "factorial", "boltzmann-chain"]),
};
pub static MAX_SKIP_EDGES: Knob = Knob {
    row: "Skip edges",
    name: "max-skip-edges",
    label: "at most",
    help: "Skip-chain: at most this many skip edges per item, the closest pairs first (0: all)",
    kind: Kind::Count {
        min: 0,
        max: 1_000_000,
    },
    default: "0",
    applies: Applies::Families(&["skip-chain"]),
};
pub static SKIP_FEATURES: Knob = Knob {
    row: "Skip edges",
    name: "skip-features",
    label: "features",
    help: "Skip-chain: what each skip factor's label pair is conjoined with: word (the always-on \
           feature and the repeated word's features) or bias (the always-on feature alone: one \
           weight per label pair)",
    kind: Kind::Choice(choices::<SkipFeatures>),
    default: "word",
    applies: Applies::Families(&["skip-chain"]),
};
pub static POS_LEXICON: Knob = Knob {
    row: "POS lexicon",
    name: "pos-lexicon",
    label: "POS lexicon",
    help:
        "Factorial: tagged text (`word<TAB>tag`, e.g. ../shared/data/ptb-wsj-sample/treebank.tsv) \
           whose word → tags lexicon gives 000 Table 2's \"lexicon of words with POS T\" \
           features; it must not overlap the test data",
    kind: Kind::Path,
    default: "",
    applies: Applies::Families(&["factorial"]),
};
pub static VOCABULARY: Knob = Knob {
    row: "Boltzmann chain",
    name: "vocabulary",
    label: "vocabulary",
    help: "Boltzmann chain: the words of this CoNLL file (first column) join the vocabulary \
           whatever their training count, as 004 §8.3.1 models \"each of the possible 21,589 \
           tokens\" of CoNLL-2000 (train and test); empty: the training words and <unk>",
    kind: Kind::Path,
    default: "",
    applies: Applies::Families(&["boltzmann-chain"]),
};
pub static PAIRWISE: Knob = Knob {
    row: "Grid",
    name: "pairwise",
    label: "pairwise",
    help: "Grid: the pairwise table's entry map (potts: one tied diagonal weight)",
    kind: Kind::Choice(choices::<Pairwise>),
    default: "potts",
    applies: Applies::Families(&["grid"]),
};
pub static NEIGHBOURHOOD: Knob = Knob {
    row: "Grid",
    name: "neighbourhood",
    label: "neighbours",
    help: "Grid: 4- or 8-connected",
    kind: Kind::Choice(choices::<Neighbourhood>),
    default: "4",
    applies: Applies::Families(&["grid"]),
};
pub static BIASES: Knob = Knob {
    row: "Boltzmann",
    name: "biases",
    label: "biases",
    help: "Boltzmann machine: add a bias per variable",
    kind: Kind::Flag,
    default: "false",
    applies: Applies::Families(&["boltzmann"]),
};

const GRAMMAR: &[&str] = &["grammar"];
pub static SPLIT_FEATURES: Knob = Knob {
    row: "Grammar",
    name: "split-features",
    label: "split point",
    help: "Grammar: score the split point too (the children's boundary words and lengths); \
           001 §5 leaves it out",
    kind: Kind::Flag,
    default: "false",
    applies: Applies::Families(GRAMMAR),
};
pub static HORIZONTAL: Knob = Knob {
    row: "Grammar",
    name: "horizontal",
    label: "horizontal order",
    help: "Grammar: binarisation's horizontal Markov order (siblings an intermediate symbol \
           remembers)",
    kind: Kind::Count { min: 0, max: 100 },
    default: "2",
    applies: Applies::Families(GRAMMAR),
};
pub static PARENT: Knob = Knob {
    row: "Grammar",
    name: "parent",
    label: "parent labels",
    help: "Grammar: annotate each phrasal label with its parent's (NP^S)",
    kind: Kind::Flag,
    default: "false",
    applies: Applies::Families(GRAMMAR),
};
pub static MAX_WORDS: Knob = Knob {
    row: "Grammar data",
    name: "max-words",
    label: "≤ words",
    help: "Grammar: the discriminative objectives train on trees of at most this many words, \
           punctuation aside (001: 15; 0: every tree); the rules and lexicon read every tree",
    kind: Kind::Count {
        min: 0,
        max: 1_000_000,
    },
    default: "15",
    applies: Applies::Families(GRAMMAR),
};
pub static RARE: Knob = Knob {
    row: "Grammar data",
    name: "rare",
    label: "rare ≤",
    help: "Grammar: training words seen at most this often are read as their signature \
           (UNK-C-ing…), as unknown test words are",
    kind: Kind::Count {
        min: 0,
        max: 1_000_000,
    },
    default: "1",
    applies: Applies::Families(GRAMMAR),
};
pub static NOTA_PER_SENTENCE: Knob = Knob {
    row: "Grammar data",
    name: "nota-per-sentence",
    label: "NOTA / sentence",
    help: "Grammar, error-driven nota (PT-CFG): choose the ratio threshold that selects about \
           this many wrong chart edges per training sentence (001: ≈ 160); empty: use \
           --nota-threshold as the ratio to the best edge of the same length",
    kind: Kind::Real { min: 0.0, max: 1e9 },
    default: "160",
    applies: Applies::Families(GRAMMAR),
};
pub static MAX_LENGTH: Knob = Knob {
    row: "Grammar data",
    name: "max-length",
    label: "test ≤ words",
    help: "Grammar: test sentences of more words than this (punctuation included) are skipped \
           and counted, as EVALB's cut-off does — a chart takes O(n²) memory and O(n³) time; \
           ml and nota also leave such training trees out",
    kind: Kind::Count {
        min: 1,
        max: crate::grammar::parse::MAX_LENGTH_LIMIT as u64,
    },
    default: "100",
    applies: Applies::Families(GRAMMAR),
};

/// Every model knob, the family first.
pub static MODEL_KNOBS: &[&Knob] = &[
    &FAMILY,
    &FACTORISATION,
    &EXTRACTOR,
    &LEXICONS,
    &FEATURES,
    &LABEL_BIAS,
    &MIN_FREQ,
    &MAX_SKIP_EDGES,
    &SKIP_FEATURES,
    &POS_LEXICON,
    &VOCABULARY,
    &PAIRWISE,
    &NEIGHBOURHOOD,
    &BIASES,
    &SPLIT_FEATURES,
    &HORIZONTAL,
    &PARENT,
    &MAX_WORDS,
    &RARE,
    &NOTA_PER_SENTENCE,
    &MAX_LENGTH,
];

impl ModelSpec {
    /// The model the settings describe.
    pub fn from_settings(s: &KnobValues) -> Result<ModelSpec> {
        let family = crate::settings::parse_choice::<FamilyKind>(&FAMILY, s.family())?;
        let features = s.choice::<FeatureSet>(&FEATURES)?;
        let min_freq: u64 = s.parse(&MIN_FREQ)?;
        let lexicons = s.path(&LEXICONS);
        let chain = || -> Result<ChainOptions> {
            let extractor = s.choice::<Extractor>(&EXTRACTOR)?.unwrap_or_default();
            Ok(ChainOptions {
                label_bias: s.flag(&LABEL_BIAS),
                min_freq,
                feature_set: features.unwrap_or(FeatureSet::All),
                factorisation: s.choice(&FACTORISATION)?.unwrap_or_default(),
                extractor,
                lexicons: extractor.table().and(lexicons.clone()),
                skip: None,
            })
        };
        Ok(match family {
            FamilyKind::Chain => ModelSpec::LinearChain(chain()?),
            FamilyKind::SkipChain => ModelSpec::SkipChain(ChainOptions {
                skip: Some(SkipOptions {
                    max_edges: s.parse(&MAX_SKIP_EDGES)?,
                    features: s.choice(&SKIP_FEATURES)?.unwrap_or_default(),
                }),
                ..chain()?
            }),
            FamilyKind::Grid => ModelSpec::Grid(GridOptions {
                pairwise: s.choice(&PAIRWISE)?.unwrap_or(Pairwise::Potts),
                neighbourhood: s.choice(&NEIGHBOURHOOD)?.unwrap_or(Neighbourhood::Four),
            }),
            FamilyKind::Boltzmann => ModelSpec::Boltzmann(BoltzmannOptions {
                biases: s.flag(&BIASES),
            }),
            FamilyKind::BoltzmannChain => ModelSpec::BoltzmannChain(BoltzmannChainOptions {
                min_count: min_freq.max(1) as usize,
                vocabulary: s.path(&VOCABULARY),
            }),
            // (Observed feature–label pairs unless `--features` says otherwise: Ψ1 has 45²
            // columns.)
            FamilyKind::Factorial => ModelSpec::Factorial(FactorialOptions {
                feature_set: features.unwrap_or(FeatureSet::Observed),
                min_freq: min_freq.max(1),
                lexicons,
                pos_lexicon: s.path(&POS_LEXICON),
                ..FactorialOptions::default()
            }),
            FamilyKind::Grammar => {
                use crate::data::treebank::Binarisation;
                use crate::grammar::{parse::GrammarRunOptions, GrammarOptions};
                let max_words: usize = s.parse(&MAX_WORDS)?;
                ModelSpec::Grammar(GrammarRunOptions {
                    grammar: GrammarOptions {
                        binarisation: Binarisation {
                            horizontal: s.parse(&HORIZONTAL)?,
                            parent: s.flag(&PARENT),
                        },
                        split: s.flag(&SPLIT_FEATURES),
                        rare: s.parse(&RARE)?,
                    },
                    max_words: (max_words > 0).then_some(max_words),
                    grammar_on_all: true,
                    nota_per_sentence: s.opt(&NOTA_PER_SENTENCE)?,
                    max_length: crate::grammar::parse::check_max_length(
                        s.parse(&MAX_LENGTH)?,
                        "--max-length",
                    )?,
                })
            }
        })
    }

    /// Writes the model's knobs into `s` (the other families' knobs keep their values).
    pub fn to_settings(&self, s: &mut KnobValues) {
        s.set(FAMILY.name, choice_name(&self.kind()));
        let path = |p: &Option<std::path::PathBuf>| {
            p.as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        };
        match self {
            ModelSpec::LinearChain(o) | ModelSpec::SkipChain(o) => {
                set_unless_default(s, &FACTORISATION, choice_name(&o.factorisation));
                set_unless_default(s, &EXTRACTOR, choice_name(&o.extractor));
                set_unless_default(s, &FEATURES, choice_name(&o.feature_set));
                set_unless_default(s, &LABEL_BIAS, o.label_bias);
                set_unless_default(s, &MIN_FREQ, o.min_freq);
                if o.lexicons.is_some() {
                    set_unless_default(s, &LEXICONS, path(&o.lexicons));
                }
                if let Some(k) = &o.skip {
                    set_unless_default(s, &MAX_SKIP_EDGES, k.max_edges);
                    set_unless_default(s, &SKIP_FEATURES, choice_name(&k.features));
                }
            }
            ModelSpec::Factorial(o) => {
                set_unless_default(s, &FEATURES, choice_name(&o.feature_set));
                set_unless_default(s, &MIN_FREQ, o.min_freq);
                if o.lexicons.is_some() {
                    set_unless_default(s, &LEXICONS, path(&o.lexicons));
                }
                set_unless_default(s, &POS_LEXICON, path(&o.pos_lexicon));
            }
            ModelSpec::Grid(o) => {
                set_unless_default(s, &PAIRWISE, choice_name(&o.pairwise));
                set_unless_default(s, &NEIGHBOURHOOD, choice_name(&o.neighbourhood));
            }
            ModelSpec::Boltzmann(o) => set_unless_default(s, &BIASES, o.biases),
            ModelSpec::BoltzmannChain(o) => {
                set_unless_default(s, &MIN_FREQ, o.min_count);
                set_unless_default(s, &VOCABULARY, path(&o.vocabulary));
            }
            ModelSpec::Grammar(o) => {
                set_unless_default(s, &SPLIT_FEATURES, o.grammar.split);
                set_unless_default(s, &HORIZONTAL, o.grammar.binarisation.horizontal);
                set_unless_default(s, &PARENT, o.grammar.binarisation.parent);
                set_unless_default(s, &MAX_WORDS, o.max_words.unwrap_or(0));
                set_unless_default(s, &RARE, o.grammar.rare);
                set_unless_default(
                    s,
                    &NOTA_PER_SENTENCE,
                    o.nota_per_sentence
                        .map(|n| n.to_string())
                        .unwrap_or_default(),
                );
                set_unless_default(s, &MAX_LENGTH, o.max_length);
            }
        }
    }
}
