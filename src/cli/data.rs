//! Commands on data files: `info`, `split`, `augment`, `score` and `generate`.

use super::parse_list;
use crate::data::conll::format_conll;
use crate::data::synth_loopy::{self, GridGen, LabelField};
use crate::data::{read_conll, read_corpus, synth};
use crate::error::{Error, Result};
use crate::util::write_atomic;
use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct InfoArgs {
    pub file: PathBuf,
    /// The family whose format the file is in (and its options).
    #[command(flatten)]
    pub model: super::knobs::ModelKnobs,
    #[arg(long)]
    pub json: bool,
}

pub fn info_command(a: InfoArgs) -> Result<()> {
    let st = crate::run::ModelSpec::from_settings(&a.model.0)?.stats(&a.file)?;
    info(&st, a.json)
}

fn info(c: &crate::data::Stats, json: bool) -> Result<()> {
    let counts = &c.labels;
    if json {
        outln!(
            "{}",
            serde_json::json!({
                "file": c.path, "sequences": c.sequences, "tokens": c.tokens,
                "columns": c.n_columns, "labels": counts,
            })
        )?;
    } else {
        outln!("{}", c.path)?;
        outln!("sequences: {}", c.sequences)?;
        outln!("tokens:    {}", c.tokens)?;
        outln!(
            "columns:   {} ({} observation + {} label)",
            c.n_columns,
            c.obs_columns,
            c.layers + 1
        )?;
        outln!("labels:    {}", counts.len())?;
        let mut v: Vec<_> = counts.iter().collect();
        v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        for (l, n) in v {
            outln!("  {l:<12} {n}")?;
        }
    }
    Ok(())
}
#[derive(Args)]
pub struct SplitArgs {
    #[arg(long, required = true)]
    pub data: Vec<PathBuf>,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Fraction of sequences that go to training.
    #[arg(long, default_value_t = 0.5)]
    pub fraction: f64,
    /// Instead of a random split: the first N sequences (in file order) train, the rest test.
    #[arg(long, conflicts_with = "fraction")]
    pub head: Option<usize>,
    #[arg(long)]
    pub train_out: PathBuf,
    #[arg(long)]
    pub test_out: PathBuf,
}

pub fn split(a: SplitArgs) -> Result<()> {
    let SplitArgs {
        data,
        seed,
        fraction,
        head,
        train_out,
        test_out,
    } = a;
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
            crate::data::shuffled(seqs.len(), seed),
            (seqs.len() as f64 * fraction).round() as usize,
        ),
    };
    let pick = |idx: &[usize]| idx.iter().map(|&i| seqs[i].clone()).collect::<Vec<_>>();
    write_atomic(
        &train_out,
        crate::data::format_corpus(&pick(&order[..n_train])).as_bytes(),
    )?;
    write_atomic(
        &test_out,
        crate::data::format_corpus(&pick(&order[n_train..])).as_bytes(),
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

#[derive(Args)]
pub struct AugmentArgs {
    #[arg(long)]
    pub data: PathBuf,
    #[arg(long)]
    pub out: PathBuf,
}

pub fn augment(a: AugmentArgs) -> Result<()> {
    let AugmentArgs { data, out } = a;
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
            let extra = crate::data::word_columns(&cols[0]);
            cols.splice(1..1, extra);
        }
    }
    write_atomic(&out, format_conll(&c.sequences, &[]).as_bytes())?;
    eprintln!("wrote {} sequences to {}", c.sequences.len(), out.display());
    Ok(())
}

#[derive(Args)]
pub struct ScoreArgs {
    #[arg(long)]
    pub data: PathBuf,
    #[arg(long)]
    pub json: bool,
}

pub fn score(a: ScoreArgs) -> Result<()> {
    let ScoreArgs { data, json } = a;
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
    let m = crate::eval::score(&gold, &pred);
    if json {
        outln!("{}", serde_json::to_string_pretty(&m).unwrap())?;
    } else {
        out!("{}", m.report())?;
    }
    Ok(())
}

#[derive(Subcommand)]
pub enum Generate {
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
        /// Dirichlet concentration of the transition distributions (1: the paper's uniform
        /// Dirichlet; below 1: states kept or left by habit).
        #[arg(long, default_value_t = 1.0)]
        transition_concentration: f64,
        /// Dirichlet concentration of the emission distributions (1: the paper's; below 1:
        /// each state emits a few letters of its own, so the labels can be learnt).
        #[arg(long, default_value_t = 1.0)]
        emission_concentration: f64,
        /// Hidden states (labels `S0`, `S1`, …); the paper's 5 by default.
        #[arg(long, default_value_t = synth::STATES)]
        states: usize,
    },
    /// Label-bias data (Lafferty et al. 2001 §2, rib/rob): words whose first letter is
    /// ambiguous and whose middle letter, after a state with a single successor, tells them
    /// apart; one word of each pair is drawn more often. Columns: letter, label; seeded.
    LabelBias {
        /// Word pairs (rib/rob, cat/cot, pin/pan, bed/bad, dig/dug, fun/fin: the first ones).
        #[arg(long, default_value_t = 4)]
        pairs: usize,
        /// Probability of each pair's majority word.
        #[arg(long, default_value_t = 0.75)]
        majority: f64,
        /// Probability that a word's middle letter is a random vowel.
        #[arg(long, default_value_t = 0.1)]
        noise: f64,
        /// Words per sequence.
        #[arg(long, default_value_t = 4)]
        words: usize,
        /// At most this many filler tokens (label `O`) between two words.
        #[arg(long, default_value_t = 2)]
        max_gap: usize,
        #[arg(long, default_value_t = 0)]
        seed: u64,
        #[arg(long, default_value_t = 300)]
        sequences: usize,
        #[arg(long)]
        out: PathBuf,
        /// Also write this many test sequences (after the training ones) to --test-out.
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
    /// Sentences from a small English grammar with Penn Treebank labels (lesson 9's bundled
    /// treebank): PP attachment the parser must learn, one tree a line in `.mrg` form; seeded.
    Treebank {
        #[arg(long, default_value_t = 300)]
        sentences: usize,
        /// Draws of fewer words (the full stop counted) are rejected and drawn again.
        #[arg(long, default_value_t = 3)]
        min_words: usize,
        /// Draws of more words are rejected and drawn again.
        #[arg(long, default_value_t = 10)]
        max_words: usize,
        #[arg(long, default_value_t = 0)]
        seed: u64,
        #[arg(long)]
        out: PathBuf,
        /// Also write this many test trees (after the training ones) to --test-out.
        #[arg(long, requires = "test_out")]
        test_sentences: Option<usize>,
        #[arg(long)]
        test_out: Option<PathBuf>,
    },
}
/// The most values (tokens, pixel observations, sample bits) one `generate` makes: far beyond
/// any experiment here (000 Fig. 4's largest set is 25,000 tokens), far below filling memory.
const MAX_GENERATED: u128 = 200_000_000;

/// What one generated value held in memory takes (a token's strings and their vectors).
const BYTES_PER_VALUE: u128 = 160;

/// Refuses a data set of (Σ `counts`) × Π `sizes` values above [`MAX_GENERATED`], naming what
/// was multiplied (the arithmetic cannot overflow), and, when the values are `held` in memory
/// before they are written, one whose estimate is over the memory limit.
fn check_generated(what: &str, counts: &[usize], sizes: &[usize], held: bool) -> Result<()> {
    let n: u128 = counts.iter().map(|&c| c as u128).sum::<u128>()
        * sizes.iter().map(|&s| s as u128).product::<u128>();
    if n > MAX_GENERATED {
        return Err(Error::invalid(format!(
            "{what} = {n} values: at most {MAX_GENERATED} in one data set"
        )));
    }
    if held {
        let bytes = (n * BYTES_PER_VALUE).min(u64::MAX as u128) as u64;
        crate::memory::check(
            bytes,
            || format!("generating {what} = {n} values, held before they are written"),
            "generate fewer",
        )?;
    }
    Ok(())
}

/// Writes the generated data.
pub fn generate(g: Generate) -> Result<()> {
    match g {
        g @ Generate::Grid { .. } => generate_grid(g),
        g @ Generate::Boltzmann { .. } => generate_boltzmann(g),
        g @ Generate::HmmMixture { .. } => generate_hmm(g),
        g @ Generate::LabelBias { .. } => generate_label_bias(g),
        g @ Generate::Treebank { .. } => generate_treebank(g),
    }
}

fn generate_treebank(a: Generate) -> Result<()> {
    let Generate::Treebank {
        sentences,
        min_words,
        max_words,
        seed,
        out,
        test_sentences,
        test_out,
    } = a
    else {
        unreachable!()
    };
    // The grammar's shortest sentence has 3 words; sentences of 12 words are drawn often
    // enough (about one in thirty) that rejection ends quickly.
    if !(3..=12).contains(&min_words) || !(min_words..=40).contains(&max_words) {
        return Err(Error::invalid(
            "--min-words must be in 3…12 and --max-words in --min-words…40",
        ));
    }
    let n_test = test_sentences.unwrap_or(0);
    check_generated(
        "sentences × max words",
        &[sentences, n_test],
        &[max_words],
        true,
    )?;
    let all = crate::data::synth_treebank::english_treebank(
        seed,
        sentences + n_test,
        min_words,
        max_words,
    );
    let (train, test) = all.split_at(sentences);
    for (trees, path) in [(train, Some(&out)), (test, test_out.as_ref())] {
        if let Some(p) = path {
            write_atomic(p, crate::data::synth_treebank::format_mrg(trees).as_bytes())?;
            eprintln!("wrote {} trees to {}", trees.len(), p.display());
        }
    }
    Ok(())
}

fn generate_grid(a: Generate) -> Result<()> {
    let Generate::Grid {
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
    } = a
    else {
        unreachable!()
    };
    check_generated(
        "images × height × width × classes",
        &[images, test_images.unwrap_or(0)],
        &[height, width, classes],
        true,
    )?;
    if sweeps > 100_000 {
        return Err(Error::invalid(format!("--sweeps {sweeps}: at most 100000")));
    }
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
    let fmt = crate::data::grid::format_grid;
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

fn generate_boltzmann(a: Generate) -> Result<()> {
    let Generate::Boltzmann {
        m,
        theta,
        biases,
        n,
        seed,
        out,
    } = a
    else {
        unreachable!()
    };
    let theta = match theta {
        Some(t) => parse_list(&t, "--theta")?,
        None => synth_loopy::paper_theta(m),
    };
    let biases = match biases {
        Some(b) => parse_list(&b, "--biases")?,
        None => vec![],
    };
    check_generated("samples × variables", &[n], &[m], true)?;
    let samples = synth_loopy::boltzmann_samples(m, &theta, &biases, n, seed)?;
    // The generating parameters ride along as comments: runs report ‖θ̂ − θ0‖.
    let text = crate::graph::boltzmann::samples_with_theta(&theta, &biases, &samples);
    write_atomic(&out, text.as_bytes())?;
    eprintln!("wrote {n} samples of {m} variables to {}", out.display());
    Ok(())
}

fn generate_hmm(a: Generate) -> Result<()> {
    let Generate::HmmMixture {
        alpha,
        seed,
        sequences,
        length,
        out,
        test_sequences,
        test_out,
        transition_concentration,
        emission_concentration,
        states,
    } = a
    else {
        unreachable!()
    };
    if !(0.0..=1.0).contains(&alpha) {
        return Err(Error::invalid("--alpha must be in [0, 1]"));
    }
    for (name, c) in [
        ("--transition-concentration", transition_concentration),
        ("--emission-concentration", emission_concentration),
    ] {
        if !(0.01..=100.0).contains(&c) {
            return Err(Error::invalid(format!("{name} must be in [0.01, 100]")));
        }
    }
    let n_test = test_sequences.unwrap_or(0);
    check_generated("sequences × length", &[sequences, n_test], &[length], false)?;
    // Streamed: one sequence at a time is held.
    check_generated("one sequence's length", &[1], &[length], true)?;
    if !(2..=50).contains(&states) {
        return Err(Error::invalid("--states must be in [2, 50]"));
    }
    let c = synth::Concentration {
        states,
        transitions: transition_concentration,
        emissions: emission_concentration,
    };
    // Streamed: one sequence is held at a time, whatever the size asked for.
    let mut all = synth::hmm_mixture_stream(alpha, c, seed, length);
    let mut write = |path: &Path, n: usize| -> Result<()> {
        crate::util::write_atomic_with(path, &mut |w| {
            for s in all.by_ref().take(n) {
                w.write_all(format_conll(std::slice::from_ref(&s), &[]).as_bytes())?;
            }
            Ok(())
        })?;
        eprintln!(
            "wrote {n} sequences of length {length} to {}",
            path.display()
        );
        Ok(())
    };
    write(&out, sequences)?;
    if let Some(p) = test_out {
        write(&p, n_test)?;
    }
    Ok(())
}

fn generate_label_bias(a: Generate) -> Result<()> {
    let Generate::LabelBias {
        pairs,
        majority,
        noise,
        words,
        max_gap,
        seed,
        sequences,
        out,
        test_sequences,
        test_out,
    } = a
    else {
        unreachable!()
    };
    let g = crate::data::synth_label_bias::LabelBias {
        pairs,
        majority,
        noise,
        words,
        max_gap,
    };
    g.check()?;
    let n_test = test_sequences.unwrap_or(0);
    check_generated(
        "sequences × tokens",
        &[sequences, n_test],
        &[g.max_len()],
        false,
    )?;
    // Streamed: one sequence at a time is held.
    check_generated("one sequence's tokens", &[1], &[g.max_len()], true)?;
    let mut all = crate::data::synth_label_bias::label_bias_stream(g, seed);
    let mut write = |path: &Path, n: usize| -> Result<()> {
        crate::util::write_atomic_with(path, &mut |w| {
            for s in all.by_ref().take(n) {
                w.write_all(format_conll(std::slice::from_ref(&s), &[]).as_bytes())?;
            }
            Ok(())
        })?;
        eprintln!("wrote {n} sequences of {words} words to {}", path.display());
        Ok(())
    };
    write(&out, sequences)?;
    if let Some(p) = test_out {
        write(&p, n_test)?;
    }
    Ok(())
}

#[derive(Args)]
pub struct EvalbArgs {
    /// Gold trees: one a line (EVALB's format; an empty line is a sentence too), or a `.mrg`
    /// file whose trees run over several lines (`-`: standard input, whose first line that is
    /// not blank tells which).
    #[arg(long)]
    pub gold: PathBuf,
    /// Test trees, one a line, aligned with the gold sentences (an empty line: no parse).
    #[arg(long)]
    pub test: PathBuf,
    /// The length of the second summary section (EVALB's `-c`; the length counts every word
    /// but -NONE-).
    #[arg(long, default_value_t = crate::eval::evalb::EVALB_CUT_LEN)]
    pub cutoff: usize,
    #[arg(long)]
    pub json: bool,
}

/// EVALB with COLLINS.prm: the per-sentence table and the summary for every sentence and for
/// those of at most `--cutoff` words. Each line is read as evalb.c reads it; sentences that
/// cannot be scored (unbalanced brackets, other words) are counted as errors and empty test
/// lines as skipped, as EVALB does. Streamed: rows are written as they are scored, so memory
/// is that of the longest sentence, not of the files.
pub fn evalb(a: EvalbArgs) -> Result<()> {
    use crate::eval::evalb::EvalbParams;
    use crate::eval::evalb_lines::{evalb_stream, gold_reader, test_reader, EvalbTotals, Status};
    use crate::util::{is_stdin, write_stdout};
    if is_stdin(&a.gold) && is_stdin(&a.test) {
        return Err(Error::invalid(
            "--gold and --test cannot both be standard input (-)",
        ));
    }
    let (gold, test) = (gold_reader(&a.gold)?, test_reader(&a.test)?);
    // Rows go out in blocks of about 64 KB.
    let mut out = String::from(if a.json {
        "{\"sentences\":["
    } else {
        EvalbTotals::header()
    });
    let mut first = true;
    let totals = evalb_stream(gold, test, &EvalbParams::collins(None), a.cutoff, |r| {
        if let Some(why) = r.reason.as_deref().filter(|_| r.status == Status::Error) {
            eprintln!("{} : {}", r.id, crate::error::shown(why));
        }
        if a.json {
            if !first {
                out.push(',');
            }
            first = false;
            out.push_str(&serde_json::to_string(r).map_err(|e| Error::invalid(e.to_string()))?);
        } else {
            out.push_str(&r.row());
        }
        if out.len() >= 1 << 16 {
            write_stdout(out.as_bytes())?;
            out.clear();
        }
        Ok(())
    })?;
    if let Some(m) = &totals.line_mismatch {
        eprintln!("{m}");
    }
    if a.json {
        let fields = serde_json::Value::Object(totals.json_fields()).to_string();
        // The summary's fields after the sentences, in the same object.
        out.push_str("],");
        out.push_str(fields.strip_prefix('{').unwrap_or(&fields));
        out.push('\n');
    } else {
        out.push_str(&totals.footer());
    }
    write_stdout(out.as_bytes())
}

#[derive(Args)]
pub struct TreebankArgs {
    /// The WSJ sample (a zip, a folder of .mrg files or one file).
    #[arg(long, default_value = "../shared/data/ptb-wsj-sample/treebank.zip")]
    pub data: PathBuf,
    /// Folder for train.mrg (every training tree, normalised, one a line), test.mrg (the ≤ 15-word
    /// test trees) and test.txt (their words, one sentence a line) — 001-table2's split.
    #[arg(long)]
    pub out: PathBuf,
}

/// Writes 001-table2's split for outside parsers (`benches/parser_opennlp.sh`).
pub fn treebank(a: TreebankArgs) -> Result<()> {
    let (_, _, n_train, n_test) =
        crate::experiments::reproduce::parsing::write_wsj_split(&a.data, &a.out)?;
    eprintln!(
        "{n_train} training trees, {n_test} test trees in {}",
        a.out.display()
    );
    Ok(())
}
