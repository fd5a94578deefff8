//! The command line: one file per command group, this file only declares the commands and
//! dispatches them. Every command is the same code path the GUI takes (`run::execute`,
//! `TrainedRun::open`, `eval`, the experiments).

/// `println!` that returns an error (via [`crate::util::write_stdout`]) instead of panicking
/// when standard output cannot be written: `> /dev/full`, a closed descriptor. A reader that
/// went away (`| head`) still ends the process quietly by SIGPIPE, as in other Unix tools.
macro_rules! outln {
    () => { $crate::util::write_stdout(b"\n") };
    ($($t:tt)*) => { $crate::util::write_stdout(format!("{}\n", format_args!($($t)*)).as_bytes()) };
}

/// `print!` that returns an error instead of panicking; see [`outln!`].
#[allow(unused_macros)]
macro_rules! out {
    ($($t:tt)*) => { $crate::util::write_stdout(format!($($t)*).as_bytes()) };
}

mod compare;
mod data;
mod experiments;
mod knobs;
mod model;
mod signals;
mod train;

use crate::error::{Error, Result};
pub(crate) use crate::util::parse_list;
use crate::util::write_atomic;
use clap::{Args, Parser, Subcommand};
use compare::CompareArgs;
use data::{AugmentArgs, Generate, InfoArgs, ScoreArgs, SplitArgs};
use experiments::{ReproduceArgs, SweepArgs, TheoryArgs};
use knobs::{DataKnobs, ModelKnobs};
use model::{DumpArgs, EvalArgs, InferArgs, ObjectiveArgs, PredictArgs};
use std::path::Path;
use train::TrainArgs;

#[derive(Parser)]
#[command(
    name = "piecewise-lab",
    version = crate::provenance::VERSION_LINE,
    about = "Train and evaluate structured models (CRFs) with exact and piecewise estimators"
)]
struct Cli {
    /// Without a command: the desktop workbench.
    #[command(subcommand)]
    command: Option<Command>,
    /// The most memory a command may use (bytes, or 12G, 512M, 60%): work whose estimate is
    /// larger is refused before it allocates, naming the estimate [default: PIECEWISE_MEMORY_LIMIT,
    /// else half of this machine's memory]
    #[arg(long, global = true, value_name = "SIZE", value_parser = parse_memory_limit)]
    memory_limit: Option<u64>,
}

fn parse_memory_limit(s: &str) -> std::result::Result<u64, String> {
    crate::memory::parse_size(s).map_err(|e| e.to_string())
}

#[derive(Subcommand)]
enum Command {
    /// The desktop workbench, opened on a data set (the same as no command, with the data form
    /// filled in and loaded).
    Gui(GuiArgs),
    /// Train a model and record the run in a directory.
    Train(TrainArgs),
    /// Run one of the papers' experiments with its protocol and write a report (NAME.md,
    /// NAME.json, NAME.svg) with our numbers beside the paper's and its claims decided:
    /// 000-table4 … 000-table9, 000-fig3, 000-fig4, 001-table1-ner/pos, 001-table2,
    /// 002-table1 … 002-table3, 003-fig1, 004-fig1 … 004-fig3, 004-consistency, 004-crf,
    /// 004-boltzmann-chain, 004-fig21 (`--list` names them, with a line each). Runs go to OUT/runs/TASK/ESTIMATOR/REP and are
    /// reused when started again with the same OUT; `--plan` writes them as command lines for
    /// a cluster instead.
    Reproduce(ReproduceArgs),
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
    Predict(PredictArgs),
    /// Score a model on labelled data: token accuracy, conlleval segment P/R/F1, per-label P/R/F1,
    /// held-out log-likelihood, and how each item was decoded. On a grammar run: EVALB's
    /// labelled P/R/F1 and tagging on trees (default: the run's test trees).
    Eval(EvalArgs),
    /// A grammar run's parses of trees' words or token lines (one sentence a line): one
    /// bracketed tree a line, as EVALB reads them, line-aligned with the input.
    Parse(model::ParseArgs),
    /// Write the weights as TSV, one a line: `TEMPLATE FEATURE COLUMN… WEIGHT` — for chains
    /// `state FEATURE LABEL WEIGHT` and `transition FEATURE PREV_LABEL LABEL WEIGHT` (`*` is the
    /// per-label bias).
    Dump(DumpArgs),
    /// Value of an estimator's objective (no prior) summed over the sequences of a file, for
    /// weights given in the `dump` format. Higher is better.
    Objective(ObjectiveArgs),
    /// Score predictions like conlleval: a CoNLL file whose last two columns are the gold and the
    /// predicted label (what `predict` writes for labelled data).
    Score(ScoreArgs),
    /// Pool the sequences of one or more data sets (files or seminar folders), shuffle them with
    /// a seed and write a train/test split as CoNLL files.
    Split(SplitArgs),
    /// Insert derived observation columns after a data set's first column (the word):
    /// lowercase, shape, prefixes and suffixes of length 1–3, for word/affix/shape templates
    /// such as assets/templates/pos.tpl (columns 0–8). The file's other observation columns
    /// (a POS column, …) follow them, in order, and the label stays last.
    Augment(AugmentArgs),
    /// Generate synthetic data.
    #[command(subcommand)]
    Generate(Generate),
    /// Marginals (or, with --max, most probable assignments) by loopy BP or exact inference: of a
    /// trained run's model on data (one JSON line per item), or of a factor graph in the UAI
    /// competition format (the UAI `MAR` / `MAP` answer), so BP can be checked against other
    /// solvers.
    Infer(InferArgs),
    /// SCL theory on a Boltzmann machine (004 §3.1, Prop. 2): the paper's FLOPs per example of a
    /// policy and the relative efficiency of its estimator (det and trace of the asymptotic
    /// variance over the MLE's), in the paper's form and the exact form for random selection.
    Theory(TheoryArgs),
    /// Statistics of a data set: items, tokens, columns, labels with counts.
    Info(InfoArgs),
    /// Score parse trees against gold trees as EVALB does with COLLINS.prm: labelled bracket
    /// P / R / F1 and tagging accuracy.
    Evalb(data::EvalbArgs),
    /// Write 001-table2's WSJ split (training trees, ≤ 15-word test trees and their words) for
    /// outside parsers.
    Treebank(data::TreebankArgs),
    /// The version, and where the workbench finds its lessons, templates and sample data and
    /// keeps its runs (the About box's lines).
    About,
    /// Print a completion script for a shell: `piecewise-lab completions bash >
    /// ~/.local/share/bash-completion/completions/piecewise-lab` (zsh: a file `_piecewise-lab`
    /// on `$fpath`; fish: `~/.config/fish/completions/piecewise-lab.fish`).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

#[derive(Args)]
pub struct GuiArgs {
    #[command(flatten)]
    pub data: DataKnobs,
    #[command(flatten)]
    pub model: ModelKnobs,
    /// Open this lesson: its number (`4`) or file name (`04-training-side-by-side`).
    #[arg(long)]
    pub lesson: Option<String>,
    /// The lesson's step to open, from 1.
    #[arg(long, default_value_t = 1, requires = "lesson")]
    pub step: usize,
    /// The theme (remembered, as the top bar's switch is).
    #[arg(long, value_parser = ["light", "dark"])]
    pub theme: Option<String>,
    /// Larger type for a projector (the top bar's Presenter switch).
    #[arg(long)]
    pub presenter: bool,
    /// The window's size in points, `WIDTHxHEIGHT` (default 1400x900): a projector's
    /// resolution, say.
    #[arg(long, value_parser = parse_window_size)]
    pub window_size: Option<[f32; 2]>,
    /// Open these folders of runs in the Runs pane: every run below them, at any depth
    /// (`reproduce` and `sweep` outputs, a cluster's collection), read again as they change.
    #[arg(long, value_name = "DIR", num_args = 1..)]
    pub runs: Vec<std::path::PathBuf>,
}

/// `1280x800` as [width, height], each 320…10000.
fn parse_window_size(s: &str) -> std::result::Result<[f32; 2], String> {
    let (w, h) = s
        .split_once(['x', 'X'])
        .ok_or_else(|| format!("{s:?}: give WIDTHxHEIGHT, e.g. 1280x800"))?;
    let n = |t: &str| match t.trim().parse::<u32>() {
        Ok(v) if (320..=10_000).contains(&v) => Ok(v as f32),
        _ => Err(format!(
            "{s:?}: width and height are whole numbers from 320 to 10000"
        )),
    };
    Ok([n(w)?, n(h)?])
}

/// Parses the command line and runs the command, or opens the workbench.
pub fn main() {
    // Output piped into `head` ends quietly, as with other Unix tools, rather than panicking
    // on the first write after the reader has gone. A write past the file-size limit
    // (`ulimit -f`) fails with EFBIG instead of killing the process (SIGXFSZ): a checkpoint
    // that cannot be written is reported and the run goes on, and any other file is an error
    // naming it.
    // SAFETY: setting signal dispositions at start-up, before any thread exists.
    #[cfg(unix)]
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
    let cli = Cli::parse();
    if let Some(bytes) = cli.memory_limit {
        crate::memory::set_limit(bytes);
    }
    let result = match cli.command {
        None => open_workbench(None),
        Some(Command::Gui(a)) => open_workbench(Some(a)),
        Some(command) => run(command),
    };

    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

/// The workbench, with the data form filled in and loaded when `gui` names a training set.
fn open_workbench(gui: Option<GuiArgs>) -> Result<()> {
    let config = crate::app::Config::for_binary();
    let opening = gui
        .as_ref()
        .map(|a| crate::app::Opening {
            lesson: a.lesson.clone().map(|l| (l, a.step)),
            dark: a.theme.as_deref().map(|t| t == "dark"),
            presenter: a.presenter.then_some(true),
            window_size: a.window_size,
            runs: a.runs.clone(),
        })
        .unwrap_or_default();
    for dir in &opening.runs {
        if !dir.is_dir() {
            return Err(Error::file(
                dir.display().to_string(),
                "--runs: not a folder",
            ));
        }
    }
    if let Some((name, step)) = &opening.lesson {
        // A wrong name or step is a command-line error, before any window opens.
        crate::app::lessons::LessonRuntime::read(&config.root)
            .resolve_step(name, *step)
            .map_err(Error::invalid)?;
    }
    let open = gui
        .filter(|a| a.data.0.given(crate::run::spec::TRAIN.name))
        .map(|a| {
            let mut src = crate::app::data::DataSource::sample(&config.root);
            src.set_files(&a.data.0);
            src.model.merge(&a.model.0);
            src
        });
    crate::app::run_native(config, open, opening)
        .map_err(|e| Error::invalid(format!("cannot open the window: {e}")))
}

fn run(command: Command) -> Result<()> {
    match command {
        Command::Gui(_) => unreachable!("opens the workbench"),
        Command::Train(a) => train::train(a),
        Command::Reproduce(a) => experiments::reproduce(a),
        Command::Sweep(a) => experiments::sweep(a),
        Command::Theory(a) => experiments::theory(a),
        Command::Compare(a) => compare::compare(a),
        Command::Predict(a) => model::predict(a),
        Command::Eval(a) => model::eval(a),
        Command::Parse(a) => model::parse(a),
        Command::Dump(a) => model::dump(a),
        Command::Objective(a) => model::objective(a),
        Command::Infer(a) => model::infer(a),
        Command::Generate(g) => data::generate(g),
        Command::Info(a) => data::info_command(a),
        Command::Augment(a) => data::augment(a),
        Command::Split(a) => data::split(a),
        Command::Score(a) => data::score(a),
        Command::Evalb(a) => data::evalb(a),
        Command::Treebank(a) => data::treebank(a),
        Command::About => {
            for line in crate::app::Config::for_binary().about() {
                outln!("{line}")?;
            }
            Ok(())
        }
        Command::Completions { shell } => {
            use clap::CommandFactory;
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "piecewise-lab", &mut script);
            crate::util::write_stdout(&script)
        }
    }
}

/// Writes `text` to `out` ([`write_atomic`]'s rules: `-` is standard output), or to standard
/// output.
fn emit(out: Option<&Path>, text: &str) -> Result<()> {
    write_atomic(out.unwrap_or(Path::new("-")), text.as_bytes())
}
