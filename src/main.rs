//! `piecewise-lab`: headless commands over the engine.

use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use piecewise_lab::data::conll::{format_conll, read_conll_with, LabelColumn};
use piecewise_lab::data::{read_conll, read_corpus, synth, FeatureTemplate};
use piecewise_lab::error::{Error, Result};
use piecewise_lab::estimators::{EstimatorSpec, Workspace};
use piecewise_lab::eval::evaluate;
use piecewise_lab::graph::chain::{
    ChainCrf, ChainOptions, Factorisation, FeatureSet, STATE, TRANSITION,
};
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
    /// Train a model and record the run in a directory.
    Train(TrainArgs),
    /// Train several estimators with the same features and prior; print one table (estimator,
    /// iterations, seconds, token accuracy, segment F1, held-out log-likelihood, per-field F1).
    Compare(CompareArgs),
    /// Write the data with a predicted label column appended.
    Predict {
        /// Run directory holding model.json and weights.bin.
        #[arg(long)]
        model: PathBuf,
        /// CoNLL file: the model's observation columns, optionally followed by the gold label.
        #[arg(long)]
        data: PathBuf,
        /// Output file (default: standard output).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Score a model on labelled data: token accuracy, conlleval segment P/R/F1, per-label P/R/F1,
    /// held-out log-likelihood.
    Eval {
        #[arg(long)]
        model: PathBuf,
        #[arg(long)]
        data: PathBuf,
        /// Print JSON instead of the report.
        #[arg(long)]
        json: bool,
    },
    /// Write the weights as TSV: `state FEATURE LABEL WEIGHT` and
    /// `transition FEATURE PREV_LABEL LABEL WEIGHT` (`*` is the per-label bias).
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
        /// CRF++ template (default: the built-in chunking template).
        #[arg(long)]
        template: Option<PathBuf>,
        /// Weights TSV as written by `dump`; features or labels the data lack are ignored, missing
        /// weights are zero.
        #[arg(long)]
        weights: PathBuf,
        #[command(flatten)]
        estimator: EstimatorArgs,
        /// How the chain is cut into factors (decides the pieces of pw, pwpl, …).
        #[arg(long, value_enum, default_value_t = Factorisation::Split)]
        factorisation: Factorisation,
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
    /// Append derived observation columns to a data set's first column (the word): lowercase,
    /// shape, prefixes and suffixes of length 1–3, for word/affix/shape templates such as
    /// assets/templates/pos.tpl. The label stays last.
    Augment {
        #[arg(long)]
        data: PathBuf,
        #[arg(long)]
        out: PathBuf,
    },
    /// Generate synthetic data.
    #[command(subcommand)]
    Generate(Generate),
    /// Statistics of a CoNLL file: sequences, tokens, columns, labels with counts.
    Info {
        file: PathBuf,
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
}

/// An estimator and its knobs.
#[derive(Args, Clone)]
struct EstimatorArgs {
    /// ml, pl, pl-edge, pw, pw-reweighted or pwpl.
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
}

impl EstimatorArgs {
    fn spec(&self) -> Result<EstimatorSpec> {
        EstimatorSpec::with_knobs(&self.estimator, self.pieces.as_deref(), self.mu)
    }
}

/// What a run trains on and how: everything of a [`RunSpec`] but the estimator.
#[derive(Args, Clone)]
struct RunArgs {
    /// Training data (CoNLL columns, label last).
    #[arg(long)]
    train: Option<PathBuf>,
    /// Held-out data scored at the end.
    #[arg(long)]
    test: Option<PathBuf>,
    /// CRF++ template file (default: the built-in CRF++ chunking template).
    #[arg(long)]
    template: Option<PathBuf>,
    /// How the chain is cut into factors: split (state + transition) or edge.
    #[arg(long, value_enum, default_value_t = Factorisation::Split)]
    factorisation: Factorisation,
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
    /// Which feature–label weights exist: all (CRF++) or observed in training (CRFsuite default).
    #[arg(long, value_enum, default_value_t = FeatureSet::All)]
    features: FeatureSet,
    /// Add the always-on per-label bias feature `*`.
    #[arg(long)]
    label_bias: bool,
    /// Drop features seen fewer times than this in training.
    #[arg(long, default_value_t = 1)]
    min_freq: u64,
    /// Evaluate on --test every N iterations (0: at the end only).
    #[arg(long, default_value_t = 0)]
    eval_every: usize,
    /// Worker threads (0: all cores).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

impl RunArgs {
    fn spec(&self, estimator: EstimatorSpec) -> Result<RunSpec> {
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
        Ok(RunSpec {
            name: Some(estimator.name().to_string()),
            train,
            test: self.test.clone(),
            template: self.template.clone(),
            model: ModelSpec::LinearChain(ChainOptions {
                label_bias: self.label_bias,
                min_freq: self.min_freq,
                feature_set: self.features,
                factorisation: self.factorisation,
            }),
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
    /// Directory for the runs (one subdirectory per estimator).
    #[arg(long)]
    out: PathBuf,
    /// Print the table as JSON.
    #[arg(long)]
    json: bool,
}

fn main() {
    piecewise_lab::util::keep_large_allocations_in_heap();
    let cli = Cli::parse();
    let Some(command) = cli.command else {
        if let Err(e) = piecewise_lab::app::run_native(piecewise_lab::app::Config::for_binary()) {
            eprintln!("error: cannot open the window: {e}");
            std::process::exit(1);
        }
        return;
    };
    if let Err(e) = run(command) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run(command: Command) -> Result<()> {
    match command {
        Command::Train(a) => train(a),
        Command::Compare(a) => compare(a),
        Command::Predict { model, data, out } => {
            let (crf, theta) = load_model(&model)?;
            let corpus = read_for_model(&crf, &data)?;
            let pred = piecewise_lab::eval::predict(&crf, &theta, &corpus)?;
            let text = format_conll(&corpus.sequences, &[pred]);
            emit(out.as_deref(), &text)
        }
        Command::Eval { model, data, json } => {
            let (crf, theta) = load_model(&model)?;
            let corpus = read_corpus(&data)?;
            let m = evaluate(&crf, &theta, &corpus)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&m).unwrap());
            } else {
                print!("{}", m.report());
            }
            Ok(())
        }
        Command::Dump { model, out } => {
            let (crf, theta) = load_model(&model)?;
            emit(out.as_deref(), &dump(&crf, &theta))
        }
        Command::Objective {
            data,
            template,
            weights,
            estimator,
            factorisation,
            json,
        } => objective(
            &data,
            template.as_deref(),
            &weights,
            &estimator.spec()?,
            factorisation,
            json,
        ),
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
        Command::Info { file, json } => info(&file, json),
        Command::Augment { data, out } => {
            let mut c = read_corpus(&data)?;
            for s in &mut c.sequences {
                for cols in &mut s.columns {
                    let extra = piecewise_lab::data::word_columns(&cols[0]);
                    cols.truncate(1);
                    cols.extend(extra);
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
                format_conll(&pick(&order[..n_train]), &[]).as_bytes(),
            )?;
            write_atomic(
                &test_out,
                format_conll(&pick(&order[n_train..]), &[]).as_bytes(),
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

/// Reads data for a model: with the label column when the column count says so.
fn read_for_model(crf: &ChainCrf, path: &Path) -> Result<piecewise_lab::data::Corpus> {
    if path.is_dir() {
        return read_corpus(path);
    }
    let c = read_conll_with(path, LabelColumn::None)?;
    if c.n_columns == crf.n_obs_columns + 1 {
        read_conll(path)
    } else if c.n_columns == crf.n_obs_columns {
        Ok(c)
    } else {
        Err(Error::file(
            path.display().to_string(),
            format!(
                "{} columns per token; the model reads {} observation columns (plus an optional label)",
                c.n_columns, crf.n_obs_columns
            ),
        ))
    }
}

fn train(a: TrainArgs) -> Result<()> {
    let spec = match &a.spec {
        Some(p) => piecewise_lab::util::read_json::<RunSpec>(p)?,
        None => a.run.spec(a.estimator.spec()?)?,
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
        "token_accuracy": summary.test.as_ref().map(|m| m.token_accuracy),
        "segment_f1": summary.test.as_ref().map(|m| m.segments.f1),
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
            bar.set_message(format!(
                "objective {:.4}  |g| {:.3e}",
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

/// Trains each estimator in turn with the same data, features and prior; prints one table.
fn compare(a: CompareArgs) -> Result<()> {
    if a.run.test.is_none() {
        return Err(Error::invalid(
            "compare needs --test FILE to score the estimators",
        ));
    }
    let mut rows = vec![];
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
        };
        let spec = if matches!(name, "pw" | "pw-reweighted" | "pwpl") {
            est.spec()?
        } else {
            EstimatorSpec::from_name(name)?
        };
        let spec = a.run.spec(spec)?;
        let dir = a.out.join(name);
        let summary = run_with_progress(&spec, &dir)?;
        rows.push((name.to_string(), summary, dir));
    }
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
    if a.json {
        let j: Vec<_> = rows
            .iter()
            .map(|(n, s, dir)| {
                let m = s.test.as_ref().unwrap();
                let mut v = summary_json(s, dir);
                v["estimator"] = serde_json::json!(n);
                v["field_f1"] = serde_json::json!(fields(m)
                    .into_iter()
                    .collect::<std::collections::BTreeMap<_, _>>());
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
    for (n, s, _) in &rows {
        let m = s.test.as_ref().unwrap();
        print!(
            "{:<14} {:>6} {:>9.2} {:>9.2} {:>8.2} {:>12.1}",
            n,
            s.iterations,
            s.train_seconds,
            m.token_accuracy,
            m.segments.f1,
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
    Ok(())
}

fn truncate(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

fn dump(crf: &ChainCrf, theta: &[f64]) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let labels = &crf.labels.names;
    let l = labels.len();
    let st = &crf.model.templates[STATE];
    for (k, f) in crf.state_features.names.iter().enumerate() {
        for (y, lab) in labels.iter().enumerate() {
            if let Some(i) = st.param_index(k, y) {
                let _ = writeln!(o, "state\t{f}\t{lab}\t{}", theta[i]);
            }
        }
    }
    let tt = &crf.model.templates[TRANSITION];
    for (k, f) in crf.trans_features.names.iter().enumerate() {
        for c in 0..l * l {
            if let Some(i) = tt.param_index(k, c) {
                let _ = writeln!(
                    o,
                    "transition\t{f}\t{}\t{}\t{}",
                    labels[c / l],
                    labels[c % l],
                    theta[i]
                );
            }
        }
    }
    o
}

fn objective(
    data: &Path,
    template: Option<&Path>,
    weights: &Path,
    spec: &EstimatorSpec,
    factorisation: Factorisation,
    json: bool,
) -> Result<()> {
    let corpus = read_corpus(data)?;
    let template = match template {
        Some(p) => FeatureTemplate::read(p)?,
        None => FeatureTemplate::chunking(),
    };
    let options = ChainOptions {
        label_bias: true,
        min_freq: 1,
        feature_set: FeatureSet::All,
        factorisation,
    };
    let (crf, instances) = ChainCrf::fit(&corpus, template, options)?;
    let mut theta = vec![0.0; crf.model.n_params];
    let wname = weights.display().to_string();
    let text = std::fs::read_to_string(weights).map_err(|e| Error::io(weights, e))?;
    let l = crf.labels.len();
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        let parse_w = |s: &str| {
            s.trim()
                .parse::<f64>()
                .map_err(|_| Error::parse(&wname, line_no, format!("bad weight {s:?}")))
        };
        let idx = match (f[0], f.len()) {
            ("state", 4) => {
                let w = parse_w(f[3])?;
                let k = crf.state_features.get(f[1]);
                let y = crf.labels.get(f[2]);
                k.zip(y)
                    .and_then(|(k, y)| crf.model.templates[STATE].param_index(k as usize, y as usize))
                    .map(|i| (i, w))
            }
            ("transition", 5) => {
                let w = parse_w(f[4])?;
                let k = crf.trans_features.get(f[1]);
                let yp = crf.labels.get(f[2]);
                let y = crf.labels.get(f[3]);
                match (k, yp, y) {
                    (Some(k), Some(yp), Some(y)) => crf.model.templates[TRANSITION]
                        .param_index(k as usize, yp as usize * l + y as usize)
                        .map(|i| (i, w)),
                    _ => None,
                }
            }
            _ => {
                return Err(Error::parse(
                    &wname,
                    line_no,
                    "expected `state<TAB>FEATURE<TAB>LABEL<TAB>WEIGHT` or `transition<TAB>FEATURE<TAB>PREV<TAB>LABEL<TAB>WEIGHT`",
                ))
            }
        };
        if let Some((i, w)) = idx {
            theta[i] = w;
        }
    }
    let est = spec.build(&crf.model)?;
    let mut ws = Workspace::default();
    let mut value = 0.0;
    let mut phi = Vec::new();
    let mut cols = Vec::new();
    for (i, inst) in instances.iter().enumerate() {
        est.check(inst)
            .map_err(|e| Error::invalid(format!("sequence {}: {e}", i + 1)))?;
        phi.clear();
        phi.resize(inst.table_len, 0.0);
        crf.model.build_tables(&theta, inst, &mut phi, &mut cols);
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

fn info(file: &Path, json: bool) -> Result<()> {
    let c = read_corpus(file)?;
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
        println!(
            "columns:   {} ({} observation + label)",
            c.n_columns,
            c.n_obs_columns()
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
