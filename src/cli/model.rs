//! Commands on a trained run: `predict`, `eval`, `dump`, `infer` (also on UAI factor graphs),
//! `parse` (a grammar run's trees), and `objective` (an estimator's value for weights given by
//! hand).

use super::emit;
use super::knobs::{merged, BpKnobs, EstimatorKnobs, ModelKnobs};
use crate::error::{Error, Result};
use crate::estimators::{EstimatorSpec, Workspace};
use crate::eval::{Decoder, Inference};
use crate::grammar::parse::ParseInput;
use crate::graph::family;
use crate::inference::{choose, BpOptions, Method, Task, MAX_ENUMERATION_STATES};
use crate::run::registry::{ModelSpec, FEATURES, LABEL_BIAS};
use crate::run::TrainedRun;
use clap::Args;
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct PredictArgs {
    /// Run directory holding model.json and weights.bin.
    #[arg(long)]
    pub model: PathBuf,
    /// Data in the model family's format (for chains: the observation columns, optionally
    /// followed by the gold label).
    #[arg(long)]
    pub data: PathBuf,
    /// Output file (default: standard output).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Decoder (default: the run's, normally `auto`).
    #[arg(long, value_enum)]
    pub decode: Option<Decoder>,
}

pub fn predict(a: PredictArgs) -> Result<()> {
    let PredictArgs {
        model,
        data,
        out,
        decode,
    } = a;
    let run = open_run(&model)?.decoding_with(decode);
    let fam = run.family.as_ref();
    let corpus = fam.read(&data)?;
    let pred = crate::eval::predict(fam, &run.theta, &corpus, &run.inference)?;
    emit(out.as_deref(), &fam.format(&corpus.sequences, Some(&pred)))
}

#[derive(Args)]
pub struct EvalArgs {
    /// Run directory (`--run` too).
    #[arg(long, alias = "run")]
    pub model: PathBuf,
    /// Labelled data in the model family's format; a grammar run takes trees (`.mrg` file,
    /// folder or zip) and scores its own test trees without it.
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Decoder (default: the run's, normally `auto`).
    #[arg(long, value_enum)]
    pub decode: Option<Decoder>,
    /// Print JSON instead of the report.
    #[arg(long)]
    pub json: bool,
}

pub fn eval(a: EvalArgs) -> Result<()> {
    let EvalArgs {
        model,
        data,
        decode,
        json,
    } = a;
    let run = crate::run::kinds::open(&model)?;
    for w in run.warnings() {
        eprintln!("warning: {w}");
    }
    let m = run.score(data.as_deref(), decode)?;
    if json {
        let text = serde_json::to_string_pretty(&m)
            .map_err(|e| Error::invalid(format!("the metrics as JSON: {e}")))?;
        outln!("{text}")?;
    } else {
        out!("{}", run.report(&m))?;
    }
    Ok(())
}

#[derive(Args)]
pub struct ParseArgs {
    /// A grammar run's directory (`train --model grammar`).
    #[arg(long, alias = "model")]
    pub run: PathBuf,
    /// Sentences: trees (a `.mrg` file, a folder of them or a zip; their words are parsed) or
    /// token lines (one sentence a line, words separated by spaces). A text whose first
    /// character other than white space is `(` is read as trees.
    #[arg(long)]
    pub data: PathBuf,
    /// Output file (default: standard output).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Sentences of more words than this are not parsed; each still gets a line, an empty
    /// one, which EVALB counts as a failed parse (default: the run's, 100 unless trained
    /// with another --max-length).
    #[arg(long)]
    pub max_length: Option<usize>,
}

/// `parse`: the run's tree for every sentence, one a line in the bracketed form EVALB reads
/// (debinarised, rooted `TOP` as `treebank`'s gold files are), in input order. A sentence the
/// grammar cannot span gets a flat tree, as when the run scored its test set; a skipped or
/// empty sentence an empty line. The counts go to standard error.
pub fn parse(a: ParseArgs) -> Result<()> {
    let run = crate::run::grammar::GrammarRun::open(&a.run)?;
    let max_length = run.max_length(a.max_length)?;
    let sentences = ParseInput::read(&a.data)?.sentences();
    let parsed = run.parse(&sentences, max_length)?;
    let mut text = String::new();
    for t in &parsed.trees {
        if let Some(t) = t {
            text.push_str(&t.to_string());
        }
        text.push('\n');
    }
    emit(a.out.as_deref(), &text)?;
    eprintln!(
        "parsed {} of {} sentences; {} flat trees (the grammar could not span them); {} empty \
         lines for sentences of more than {max_length} words (EVALB: failed parses){}",
        sentences.len() - parsed.skipped - parsed.empty,
        sentences.len(),
        parsed.fallbacks,
        parsed.skipped,
        if parsed.empty > 0 {
            format!("; {} empty lines for empty input lines", parsed.empty)
        } else {
            String::new()
        }
    );
    Ok(())
}

#[derive(Args)]
pub struct DumpArgs {
    #[arg(long)]
    pub model: PathBuf,
    /// Output file (default: standard output).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

pub fn dump(a: DumpArgs) -> Result<()> {
    let DumpArgs { model, out } = a;
    let run = open_run(&model)?;
    emit(
        out.as_deref(),
        &family::dump_weights(run.family.as_ref(), &run.theta),
    )
}

#[derive(Args)]
pub struct ObjectiveArgs {
    #[arg(long)]
    pub data: PathBuf,
    /// Model family and its options (chains: CRF++ template, all features, label bias).
    #[command(flatten)]
    pub model: ModelKnobs,
    /// CRF++ template (default: the built-in chunking template).
    #[arg(long)]
    pub template: Option<PathBuf>,
    /// Weights TSV as written by `dump`; features or labels the data lack are ignored, missing
    /// weights are zero.
    #[arg(long)]
    pub weights: PathBuf,
    #[command(flatten)]
    pub estimator: EstimatorKnobs,
    #[arg(long)]
    pub json: bool,
}

pub fn objective(a: ObjectiveArgs) -> Result<()> {
    let ObjectiveArgs {
        data,
        model,
        template,
        weights,
        estimator,
        json,
    } = a;
    let mut s = merged(&[&model.0, &estimator.0]);
    crate::estimators::settings::check_given(&s)?;
    // Every weight a dump can hold exists: all feature–label pairs and the label bias.
    for (k, v) in [(&LABEL_BIAS, "true"), (&FEATURES, "all")] {
        if !s.given(k.name) {
            s.set(k.name, v);
        }
    }
    let spec = &EstimatorSpec::from_settings(&s, 0)?;
    let template = template.as_deref();
    let mspec = ModelSpec::from_settings(&s)?;
    let corpus = mspec.read(&data)?;
    let (fam, instances) = mspec.fit(&corpus, template)?;
    let text = crate::util::read_text(&weights)?;
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
    if !value.is_finite() {
        return Err(Error::invalid(format!(
            "{}'s objective is {value} at these weights (a term's normaliser over- or \
             underflowed): no value to report",
            spec.name()
        )));
    }
    if json {
        outln!(
            "{}",
            serde_json::json!({"estimator": spec.name(), "value": value, "sequences": instances.len()})
        )?;
    } else {
        outln!(
            "{}: {value} over {} sequences",
            spec.name(),
            instances.len()
        )?;
    }
    Ok(())
}

#[derive(Args)]
pub struct InferArgs {
    /// Run directory (with --data).
    #[arg(long, conflicts_with = "uai", requires = "data")]
    pub model: Option<PathBuf>,
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// A `.uai` factor graph (MARKOV or BAYES) instead of a run.
    #[arg(long)]
    pub uai: Option<PathBuf>,
    /// Evidence for --uai (`.evid`).
    #[arg(long, requires = "uai")]
    pub evid: Option<PathBuf>,
    /// bp (loopy belief propagation; exact on trees) or exact (forward–backward on chains,
    /// enumeration on small graphs).
    #[arg(long, value_enum, default_value_t = Algo::Bp)]
    pub algo: Algo,
    /// Most probable assignment (max-product / exact MAP) instead of marginals.
    #[arg(long)]
    pub max: bool,
    /// With --uai: the UAI `PR` answer, log10 of the partition function with the evidence
    /// clamped (for a BAYES network, log10 of the evidence's probability) — exact, or BP's
    /// Bethe estimate.
    #[arg(long, requires = "uai", conflicts_with = "max")]
    pub pr: bool,
    #[command(flatten)]
    pub bp: BpKnobs,
    /// Run the inference this many times (cold each time) and report the median time on
    /// standard error (for benchmarks; reading the file is not timed).
    #[arg(long, default_value_t = 1)]
    pub repeat: usize,
    /// Output file (default: standard output).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

pub fn infer(a: InferArgs) -> Result<()> {
    let opts = BpOptions::from_settings(&a.bp.0)?;
    let text = match (&a.model, &a.uai) {
        (_, Some(u)) => infer_uai(u, a.evid.as_deref(), &a, &opts)?,
        (Some(dir), None) => infer_run(dir, a.data.as_ref(), &a, &opts)?,
        (None, None) => {
            return Err(Error::invalid(
                "infer needs --model DIR --data FILE or --uai FILE",
            ))
        }
    };
    emit(a.out.as_deref(), &text)
}

/// A `.uai` factor graph's `MAR`, `MAP` or `PR` answer, with timings on standard error.
fn infer_uai(u: &Path, evid: Option<&Path>, a: &InferArgs, opts: &BpOptions) -> Result<String> {
    let (algo, max, repeat) = (a.algo, a.max, a.repeat);
    let g = crate::data::uai::read_uai(u)?;
    let ev = match evid {
        Some(e) => crate::data::uai::read_evid(e, &g)?,
        None => vec![],
    };
    let (_m, inst, phi) = g.instance(&ev)?;
    let mut times = vec![];
    let mut r = None;
    for _ in 0..repeat.max(1) {
        let t = std::time::Instant::now();
        r = Some(infer_one(&inst, &phi, algo, max, opts)?);
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
    if a.pr {
        let lz = r
            .log_z
            .ok_or_else(|| Error::invalid("no partition function was computed"))?;
        return Ok(crate::data::uai::format_pr(lz));
    }
    match &r.map {
        Some(y) => Ok(crate::data::uai::format_map(y)),
        None => Ok(crate::data::uai::format_mar(&r.marginals)),
    }
}

/// One JSON line per item of `data` under the run in `dir`.
fn infer_run(
    dir: &Path,
    data: Option<&PathBuf>,
    a: &InferArgs,
    opts: &BpOptions,
) -> Result<String> {
    let (algo, max) = (a.algo, a.max);
    let run = open_run(dir)?;
    let (fam, theta) = (&run.family, &run.theta);
    let data = data
        .as_ref()
        .ok_or_else(|| Error::invalid("infer --model needs --data"))?;
    let corpus = fam.read(data)?;
    let insts = fam.instances(&corpus)?;
    let mut o = String::new();
    for (i, inst) in insts.iter().enumerate() {
        let phi = crate::eval::tables(fam.as_ref(), theta, inst);
        let r = infer_one(inst, &phi, algo, max, opts)
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
    Ok(o)
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Algo {
    Bp,
    Exact,
}
/// What `infer` found for one instance.
struct Inferred {
    marginals: Vec<Vec<f64>>,
    map: Option<Vec<u32>>,
    log_z: Option<f64>,
    report: Option<crate::inference::BpReport>,
    by: &'static str,
}
fn infer_one(
    inst: &crate::graph::Instance,
    phi: &[f64],
    algo: Algo,
    max: bool,
    opts: &BpOptions,
) -> Result<Inferred> {
    use crate::inference::{bp_node_marginals, exact_node_marginals};
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
                    // Past enumeration's limit, exact decoding says how large the graph is.
                    Algo::Exact => match choose(inst, Task::Map, MAX_ENUMERATION_STATES) {
                        Method::ForwardBackward | Method::ProductForwardBackward => {
                            Decoder::Viterbi
                        }
                        Method::TreeBp => Decoder::MaxProduct,
                        Method::Enumeration | Method::LoopyBp => Decoder::Exact,
                    },
                },
                bp: *opts,
                scaling: None,
            };
            let (y, by) = crate::eval::decode(inst, phi, &how, &mut Workspace::default())?;
            (r.map, r.by) = (Some(y), by);
        }
    }
    Ok(r)
}

/// Opens a run, telling the user what `TrainedRun::open` warns about.
fn open_run(dir: &Path) -> Result<TrainedRun> {
    let run = TrainedRun::open(dir)?;
    for w in &run.warnings {
        eprintln!("warning: {w}");
    }
    Ok(run)
}
