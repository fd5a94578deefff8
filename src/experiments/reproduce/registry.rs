//! The experiment registry: every experiment by name, with one line and its builder — the one
//! list `reproduce`, `--list`, `--plan` and the tests read. Adding an experiment is its builder
//! in the file of its paper and one entry here.

use super::{
    camel, diagrams, nota, paper000, paper000_pwpl, paper000_reweighted, parsing, scl, scl_text,
    Experiment, Options,
};
use crate::error::{Error, Result};
use crate::settings::Knob;

/// One experiment: its name, one line, and how it is built.
pub struct Entry {
    pub name: &'static str,
    pub line: &'static str,
    pub build: Build,
}

/// How an experiment runs.
pub enum Build {
    /// Groups of ordinary runs: planned (`--plan`), reused when finished, collected into the
    /// report.
    Runs(fn(&Options) -> Result<Experiment>),
    /// Trained in one process (`why`), so it has no `--plan`; its options are `knobs` (in
    /// [`Options::settings`]); `run` writes the report and returns its Markdown, telling its
    /// progress.
    InProcess {
        why: &'static str,
        knobs: &'static [&'static Knob],
        run: InProcessRun,
    },
}

/// An in-process experiment: writes its report into `Options::out`, tells its progress, and
/// returns the report's Markdown.
pub type InProcessRun = fn(&Options, &mut dyn FnMut(&str)) -> Result<String>;

pub static EXPERIMENTS: &[Entry] = &[
    Entry {
        name: "000-table4",
        line: "linear-chain CRF, named entities: PW, PL, per-edge PL, exact ML",
        build: Build::Runs(paper000::table4),
    },
    Entry {
        name: "000-table5",
        line: "factorial CRF, POS + NP chunking: PW, PL, per-edge PL, BP, exact ML",
        build: Build::Runs(paper000::table5),
    },
    Entry {
        name: "000-table6",
        line: "skip-chain CRF, seminars: PW, PL, per-edge PL, BP; linear-chain ML",
        build: Build::Runs(|o| paper000::table6_or_9(o, "000-table6")),
    },
    Entry {
        name: "000-table7",
        line: "basic vs reweighted PW on linear-chain, factorial and skip-chain CRFs",
        build: Build::Runs(paper000_reweighted::table7),
    },
    Entry {
        name: "000-table8",
        line: "PWPL vs ML, PL, PW on POS tagging, chunking and named entities",
        build: Build::Runs(paper000_pwpl::table8),
    },
    Entry {
        name: "000-table9",
        line: "skip-chain CRF, seminars, four fields: BP, PL, PW, PWPL",
        build: Build::Runs(|o| paper000::table6_or_9(o, "000-table9")),
    },
    Entry {
        name: "000-fig3",
        line: "PW against PL (and PWPL) on the α-mixture HMM data, one point per data set",
        build: Build::Runs(paper000_pwpl::fig3),
    },
    Entry {
        name: "000-fig4",
        line: "PWPL vs PL learning curves on the α-mixture HMM data",
        build: Build::Runs(paper000_pwpl::fig4),
    },
    Entry {
        name: "001-table1-ner",
        line: "MEMM, CRF and CRF-PT (NOTA: exhaustive, sampled, error-driven; per-state scales; local and global decoding) on Dutch NER",
        build: Build::Runs(|o| nota::table1(o, nota::Task::Ner)),
    },
    Entry {
        name: "001-table1-pos",
        line: "MEMM, CRF and CRF-PT on POS tagging, the Penn Treebank sample",
        build: Build::Runs(|o| nota::table1(o, nota::Task::Pos)),
    },
    Entry {
        name: "003-fig1",
        line: "parameter independence diagrams of MEMM, PL, CRF, PW and CRF-PT, from the estimators' terms",
        build: Build::Runs(diagrams::fig1),
    },
    Entry {
        name: "003-fig2",
        line: "two-stage training (piecewise, then per-subset scales) and feature-bagged classifiers, named entities",
        build: Build::Runs(diagrams::fig2),
    },
    Entry {
        name: "004-fig1",
        line: "three SCL policies on a 5-node Boltzmann machine: FLOPs and relative efficiency",
        build: Build::Runs(scl::fig1),
    },
    Entry {
        name: "004-fig2",
        line: "asymptotic variance of PL(k+1)/PL(k) mixtures against λ, m = 5, both forms",
        build: Build::Runs(scl::fig2),
    },
    Entry {
        name: "004-fig3",
        line: "accuracy–complexity frontier of PL1/PL2, PL1/PL3, PL2/PL3 policies, m = 9",
        build: Build::Runs(scl::fig3),
    },
    Entry {
        name: "004-consistency",
        line: "Boltzmann machines, m = 5 and 9: ‖θ̂ − θ0‖ of ML, PL, BP and SCL as n grows",
        build: Build::Runs(scl::consistency),
    },
    Entry {
        name: "002-table1",
        line: "CAMEL on named entities (Dutch), skip-chain CRF: PW, CAMEL(0), LBP, CCCP-CAMEL (both starts)",
        build: Build::Runs(camel::table1),
    },
    Entry {
        name: "002-table2",
        line: "CAMEL on seminar announcements, skip-chain CRF, four folds",
        build: Build::Runs(camel::table2),
    },
    Entry {
        name: "002-table3",
        line: "CAMEL on segmentation (generated, 84 shared weights), 8- and 4-connected grids, three folds",
        build: Build::Runs(camel::table3),
    },
    Entry {
        name: "004-crf",
        line: "SCL for the CRF on CoNLL-2000: PL1/FL and PL1/PL2 grids, the β heuristic, win–win",
        build: Build::Runs(|o| scl_text::experiment(o, scl_text::Model::Crf)),
    },
    Entry {
        name: "004-boltzmann-chain",
        line: "SCL for the Boltzmann chain on CoNLL-2000: PL1/FL and PL1/PL2 grids, the β heuristic, win–win, <unk>",
        build: Build::Runs(|o| scl_text::experiment(o, scl_text::Model::BoltzmannChain)),
    },
    Entry {
        name: "004-fig21",
        line: "the optimal σ² as a function of λ for the CRF's PL1/FL and PL1/PL2 (β heuristic, repeated samples)",
        build: Build::Runs(scl_text::fig21),
    },
    Entry {
        name: "001-table2",
        line: "parsing the WSJ sample: GENERATIVE, MECFG, PT-CFG and the global CRF-CFG",
        build: Build::InProcess {
            why: "its grammars share the chart's features",
            knobs: parsing::TABLE2_KNOBS,
            run: parsing::table2_from_settings,
        },
    },
];

/// The experiment called `name`.
pub fn entry(name: &str) -> Result<&'static Entry> {
    EXPERIMENTS.iter().find(|e| e.name == name).ok_or_else(|| {
        Error::invalid(format!(
            "no experiment {name:?}; reproduce knows: {}",
            EXPERIMENTS
                .iter()
                .map(|e| e.name)
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })
}

/// Builds the named experiment of runs (reading or writing its data splits).
pub fn experiment(name: &str, o: &Options) -> Result<Experiment> {
    match &entry(name)?.build {
        Build::Runs(build) => build(o),
        Build::InProcess { why, .. } => Err(Error::invalid(format!(
            "{name} trains in one process ({why}): it is not a set of runs"
        ))),
    }
}

/// Every experiment's own options, each once (the command line's flags).
pub fn experiment_knobs() -> Vec<&'static Knob> {
    let mut out: Vec<&'static Knob> = vec![];
    for e in EXPERIMENTS {
        if let Build::InProcess { knobs, .. } = &e.build {
            for k in knobs.iter() {
                if !out.iter().any(|o| o.name == k.name) {
                    out.push(k);
                }
            }
        }
    }
    out
}
