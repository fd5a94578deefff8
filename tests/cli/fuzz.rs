//! Issue 21: a seeded mutation fuzzer over every reader (CoNLL, CRFsuite, grid, Boltzmann
//! samples, seminars, UAI and evidence, CRF++ templates, weight dumps) and every file of a run
//! directory (`model.json` of each family, `spec.json`, `summary.json`, `scaling.json`,
//! `camel.json`), calling the library directly and using what it reads: a model file that loads
//! is asked to evaluate, decode and differentiate on its family's data. A panic anywhere, or an
//! input that takes more than 10 s, fails the test; its input is saved under
//! `target/fuzz-failures/<target>/`. A stack overflow aborts the whole test process, which
//! fails it too. Inputs that once crashed are kept in `tests/fuzz_cases/<target>/` and run
//! first, every time.
//!
//! CI runs a short budget. For a long run (release build, both cores):
//!
//! ```text
//! PIECEWISE_FUZZ_INPUTS=1000000 PIECEWISE_FUZZ_SECONDS=36000 \
//!     cargo test --release --test fuzz -- --nocapture
//! ```
//!
//! `PIECEWISE_FUZZ_SECONDS` (default 40) and `PIECEWISE_FUZZ_INPUTS` (default: no cap) bound the
//! run, whichever comes first; `PIECEWISE_FUZZ_SEED` (default 0) picks the mutations;
//! `PIECEWISE_FUZZ_TARGETS=treebank,grammar-run` fuzzes those targets alone;
//! `PIECEWISE_FUZZ_TRACE=1` writes each input to `target/fuzz-current-W` first (an abort, which
//! no panic hook sees, leaves its input there).

use piecewise_lab::data::{self, Corpus, FeatureTemplate};
use piecewise_lab::estimators::objective::DatasetObjective;
use piecewise_lab::estimators::EstimatorSpec;
use piecewise_lab::eval::Inference;
use piecewise_lab::graph::{chain::ChainCrf, chain::ChainOptions, family, Family};
use piecewise_lab::optim::{LbfgsSpec, Prior};
use piecewise_lab::run::registry;
use piecewise_lab::run::{execute, ModelSpec, RunSpec};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Inputs grow by duplication; past this they are cut back (small inputs run fast and still
/// reach every branch of a line-based reader).
const MAX_INPUT: usize = 6_000;
/// One input taking longer than this is a hang (issue 42's target: none over 10 s).
const HANG: Duration = Duration::from_secs(10);
/// The memory limit every input is held to (the fuzzing process's, set once).
const FUZZ_MEMORY_LIMIT: u64 = 512 << 20;
/// Model files are larger; their mutations are structural.
const MAX_MODEL_INPUT: usize = 200_000;

/// What a target does with one input: `Ok` or a library error are both fine; a panic is not.
type Run = Box<dyn Fn(&[u8]) -> Result<(), String> + Send + Sync>;

struct Target {
    name: &'static str,
    seeds: Vec<Vec<u8>>,
    /// Mutate as JSON (parse, change one node, print) half of the time.
    json: bool,
    /// Words the format gives meaning to, spliced in by the mutator.
    dictionary: &'static [&'static str],
    run: Run,
}

const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "3",
    "255",
    "256",
    "65535",
    "65536",
    "2147483647",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "18446744073709551615",
    "18446744073709551616",
    "1e308",
    "-1e308",
    "1e-320",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "-0",
    "0.5",
    "99999999",
];

const TEXT_WORDS: &[&str] = &[
    "\n",
    "\n\n",
    " ",
    "\t",
    "|",
    ":",
    "%x[",
    "%x[0,0]",
    "%x[-1,0]/%x[0,0]",
    "%x[99,0]",
    "%x[0,99]",
    "U00:",
    "B",
    "U",
    "#",
    "MARKOV",
    "BAYES",
    "B-NP",
    "I-NP",
    "O",
    "<speaker>",
    "</speaker>",
    "<stime>",
    "</stime>",
    "<location>",
    "\u{feff}",
    "\u{0}",
    "é",
    "\r\n",
    "0 1",
    "1 0",
    "x:1.5",
    "x:nan",
    "\\:",
    "\\\\",
];

fn main_budget() -> (Duration, u64, u64) {
    let env = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<u64>().ok());
    let secs = env("PIECEWISE_FUZZ_SECONDS").unwrap_or(40);
    let inputs = env("PIECEWISE_FUZZ_INPUTS").unwrap_or(u64::MAX);
    let seed = env("PIECEWISE_FUZZ_SEED").unwrap_or(0);
    (Duration::from_secs(secs), inputs, seed)
}

thread_local! {
    /// The last panic's message and place, set by the hook on the panicking thread.
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Set while inputs run: panics are recorded, not printed (a panic on one of rayon's threads
/// lands in [`POOL_PANIC`], since the thread that asked for the work is waiting for it).
static FUZZING: AtomicBool = AtomicBool::new(false);
static POOL_PANIC: Mutex<Option<String>> = Mutex::new(None);

/// Panics inside [`attempt`] are recorded, not printed; any other is printed as usual.
fn quiet_panics() {
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !FUZZING.load(Ordering::Relaxed) {
            return default_hook(info);
        }
        let place = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        let what = format!("{place}: {msg}");
        if std::thread::current()
            .name()
            .is_some_and(|n| n.starts_with("fuzz-"))
        {
            LAST_PANIC.with(|p| *p.borrow_mut() = Some(what));
        } else {
            *POOL_PANIC.lock().unwrap_or_else(|p| p.into_inner()) = Some(what);
        }
    }));
}

/// Runs one input: `Ok(accepted)`, or `Err(where it panicked)`.
fn attempt(t: &Target, input: &[u8]) -> Result<bool, String> {
    LAST_PANIC.with(|p| *p.borrow_mut() = None);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (t.run)(input)));
    match r {
        Ok(r) => Ok(r.is_ok()),
        Err(_) => Err(LAST_PANIC
            .with(|p| p.borrow_mut().take())
            .or_else(|| POOL_PANIC.lock().ok()?.take())
            .unwrap_or_else(|| "a panic".into())),
    }
}

// ---- Mutation ----

fn mutate(input: &[u8], t: &Target, rng: &mut StdRng) -> Vec<u8> {
    if t.json && rng.random_bool(0.6) {
        if let Ok(mut v) = serde_json::from_slice::<serde_json::Value>(input) {
            for _ in 0..rng.random_range(1..=2) {
                mutate_json(&mut v, rng);
            }
            return serde_json::to_vec(&v).unwrap();
        }
    }
    let mut out = input.to_vec();
    for _ in 0..rng.random_range(1..=4) {
        mutate_bytes(&mut out, t.dictionary, rng);
    }
    let cap = if t.json { MAX_MODEL_INPUT } else { MAX_INPUT };
    out.truncate(cap);
    out
}

fn span(len: usize, rng: &mut StdRng) -> (usize, usize) {
    if len == 0 {
        return (0, 0);
    }
    let a = rng.random_range(0..len);
    let b = (a + rng.random_range(1..=64.min(len - a).max(1))).min(len);
    (a, b)
}

/// Byte ranges of the decimal numbers in `s`.
fn numbers(s: &[u8]) -> Vec<(usize, usize)> {
    let mut out = vec![];
    let mut i = 0;
    while i < s.len() {
        if s[i].is_ascii_digit() {
            let a = i;
            while i < s.len() && (s[i].is_ascii_digit() || s[i] == b'.') {
                i += 1;
            }
            out.push((a, i));
        } else {
            i += 1;
        }
    }
    out
}

fn line_starts(s: &[u8]) -> Vec<usize> {
    std::iter::once(0)
        .chain(
            s.iter()
                .enumerate()
                .filter(|(_, &b)| b == b'\n')
                .map(|(i, _)| i + 1),
        )
        .filter(|&i| i <= s.len())
        .collect()
}

fn mutate_bytes(s: &mut Vec<u8>, dictionary: &[&str], rng: &mut StdRng) {
    match rng.random_range(0..10) {
        // A number replaced by an interesting one (sizes, counts, indices live in numbers).
        0..=2 => {
            let ns = numbers(s);
            if let Some(&(a, b)) = ns.get(rng.random_range(0..ns.len().max(1))) {
                let n = NUMBERS[rng.random_range(0..NUMBERS.len())];
                s.splice(a..b, n.bytes());
            } else {
                let at = rng.random_range(0..=s.len());
                s.splice(at..at, b"1".iter().copied());
            }
        }
        3 => {
            let (a, b) = span(s.len(), rng);
            s.drain(a..b);
        }
        4 => {
            let (a, b) = span(s.len(), rng);
            let piece = s[a..b].to_vec();
            let at = rng.random_range(0..=s.len());
            s.splice(at..at, piece);
        }
        5 => {
            if !s.is_empty() {
                let i = rng.random_range(0..s.len());
                s[i] = match rng.random_range(0..3) {
                    0 => rng.random(),
                    1 => s[i] ^ (1 << rng.random_range(0..8)),
                    _ => {
                        let special = b" \n\t|:-0[]{}\",";
                        special[rng.random_range(0..special.len())]
                    }
                };
            }
        }
        6 => {
            let words: Vec<&str> = dictionary.iter().chain(TEXT_WORDS).copied().collect();
            let w = words[rng.random_range(0..words.len())];
            let at = rng.random_range(0..=s.len());
            s.splice(at..at, w.bytes());
        }
        // Whole lines: dropped, repeated, swapped.
        7 | 8 => {
            let starts = line_starts(s);
            let i = rng.random_range(0..starts.len());
            let a = starts[i];
            let b = starts.get(i + 1).copied().unwrap_or(s.len());
            match rng.random_range(0..3) {
                0 => {
                    s.drain(a..b);
                }
                1 => {
                    let line = s[a..b].to_vec();
                    s.splice(a..a, line);
                }
                _ => {
                    let j = rng.random_range(0..starts.len());
                    let c = starts[j];
                    let d = starts.get(j + 1).copied().unwrap_or(s.len());
                    if b <= c {
                        let (l1, l2) = (s[a..b].to_vec(), s[c..d].to_vec());
                        s.splice(c..d, l1);
                        s.splice(a..b, l2);
                    }
                }
            }
        }
        _ => {
            let at = rng.random_range(0..=s.len());
            s.truncate(at);
        }
    }
}

/// A random node of `v` (a random walk down from the root).
fn pick<'a>(v: &'a mut serde_json::Value, rng: &mut StdRng) -> &'a mut serde_json::Value {
    let go_down = rng.random_bool(0.85);
    let n = match &*v {
        serde_json::Value::Array(a) => a.len(),
        serde_json::Value::Object(o) => o.len(),
        _ => 0,
    };
    if n == 0 || !go_down {
        return v;
    }
    let i = rng.random_range(0..n);
    match v {
        serde_json::Value::Array(a) => pick(&mut a[i], rng),
        serde_json::Value::Object(o) => {
            let (_, child) = o.iter_mut().nth(i).unwrap();
            pick(child, rng)
        }
        _ => unreachable!(),
    }
}

fn mutate_json(root: &mut serde_json::Value, rng: &mut StdRng) {
    use serde_json::Value;
    let v = pick(root, rng);
    match v {
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(0.0);
            let u = n.as_u64().unwrap_or(0);
            *v = match rng.random_range(0..9) {
                0 => Value::from(0),
                1 => Value::from(u.wrapping_add(1)),
                2 => Value::from(u.saturating_sub(1)),
                3 => Value::from(u.saturating_mul(2)),
                4 => Value::from(u32::MAX),
                5 => Value::from(u64::MAX),
                6 => Value::from(-1),
                7 => Value::from(-x * 3.0 + 0.5),
                _ => Value::from(rng.random_range(0..16)),
            };
        }
        Value::Array(a) => match rng.random_range(0..5) {
            0 => a.clear(),
            1 if !a.is_empty() => {
                let i = rng.random_range(0..a.len());
                a.remove(i);
            }
            2 if !a.is_empty() => {
                let i = rng.random_range(0..a.len());
                let x = a[i].clone();
                a.insert(i, x);
            }
            3 if a.len() > 1 => {
                let (i, j) = (rng.random_range(0..a.len()), rng.random_range(0..a.len()));
                a.swap(i, j);
            }
            _ => a.truncate(a.len() / 2),
        },
        Value::Object(o) => {
            if !o.is_empty() {
                let i = rng.random_range(0..o.len());
                let k = o.keys().nth(i).unwrap().clone();
                if rng.random_bool(0.5) {
                    o.remove(&k);
                } else {
                    o.insert(k, Value::Null);
                }
            }
        }
        Value::String(s) => {
            *s = match rng.random_range(0..5) {
                0 => String::new(),
                1 => format!("{s}{s}"),
                2 => s.chars().rev().collect(),
                3 => "O".into(),
                _ => "Dense".into(),
            }
        }
        Value::Bool(b) => *b = !*b,
        Value::Null => *v = Value::from(1),
    }
}

// ---- Fixtures: small valid inputs of every format, and trained runs of every family ----

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The first `n` items of a CoNLL file (blank-line separated).
fn first_items(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = String::new();
    for (i, block) in text.split("\n\n").enumerate() {
        if i == n {
            break;
        }
        out.push_str(block.trim_matches('\n'));
        out.push_str("\n\n");
    }
    out
}

struct Fixture {
    dir: tempfile::TempDir,
    hmm: String,
    chunk: String,
    grid: String,
    samples: String,
    lexicons: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let hmm = first_items(&root().join("sample_data/hmm-a0.5-train.conll"), 4);
    // A chunking-like file: word POS chunk.
    let chunk = "Confidence NN B-NP\nin IN B-PP\nthe DT B-NP\npound NN I-NP\nis VBZ B-VP\n\
                 widely RB I-VP\nexpected VBN I-VP\n. . O\n\n\
                 Chancellor NNP B-NP\nof IN B-PP\nthe DT B-NP\nExchequer NNP I-NP\n\
                 Nigel NNP B-NP\nLawson NNP I-NP\nsaid VBD B-VP\n. . O\n\n"
        .to_string();
    let grid = "2 0.2 0.3 1.8 | 0 1.2 -0.4 0.1 | 1 0.1 1.5 0.2\n\
                2 0.1 0.2 1.1 | 2 -0.3 0.2 1.4 | 1 0.3 0.9 -0.1\n\n\
                0 1.3 0.2 0.1 | 0 0.9 0.1 0.2 | 1 0.2 1.1 0.3\n\
                2 0.0 0.1 1.2 | 0 1.1 0.3 0.0 | 1 0.1 0.8 0.1\n\n"
        .to_string();
    let samples = "# theta: -1,1,-1\n1 0 1\n0 0 1\n1 1 0\n0 1 1\n1 0 0\n".to_string();
    let lexicons = dir.path().join("lexicons");
    std::fs::create_dir_all(&lexicons).unwrap();
    std::fs::write(lexicons.join("first-male.txt"), "NIGEL\nJOHN\n").unwrap();
    std::fs::write(lexicons.join("first-female.txt"), "MARY\n").unwrap();
    std::fs::write(lexicons.join("last.txt"), "LAWSON\nSMITH\n").unwrap();
    Fixture {
        dir,
        hmm,
        chunk,
        grid,
        samples,
        lexicons,
    }
}

impl Fixture {
    fn file(&self, name: &str, text: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    /// Trains a tiny run; returns its directory.
    fn run(&self, name: &str, train: &Path, model: ModelSpec, estimator: EstimatorSpec) -> PathBuf {
        let out = self.dir.path().join(format!("run-{name}"));
        let spec = RunSpec {
            name: Some(name.into()),
            train: train.to_path_buf(),
            model,
            estimator,
            optimiser: LbfgsSpec {
                max_iter: 3,
                ..Default::default()
            },
            prior: Prior::from_c2(1.0),
            threads: 1,
            ..Default::default()
        };
        execute(&spec, &out, &AtomicBool::new(false), &mut |_| {}).unwrap();
        out
    }
}

/// Uses a loaded family the way `eval`, `predict`, `dump` and training do, on `corpus`.
fn exercise(fam: &dyn Family, corpus: &Corpus) -> Result<(), String> {
    let e = |e: piecewise_lab::Error| e.to_string();
    let model = fam.model();
    let theta: Vec<f64> = (0..model.n_params)
        .map(|i| ((i % 7) as f64 - 3.0) * 0.1)
        .collect();
    let _ = fam.describe();
    let text = family::dump_weights(fam, &theta);
    family::read_weights(fam, &text, "dump.tsv").map_err(e)?;
    let m = piecewise_lab::eval::evaluate(fam, &theta, corpus, &Inference::default()).map_err(e)?;
    let _ = m.report();
    let insts = fam.instances(corpus).map_err(e)?;
    for (inst, item) in insts.iter().zip(&corpus.sequences) {
        let _ = fam.layout(inst, item);
        let y = vec![0; inst.n_vars()];
        let _ = fam.token_labels(inst, &y);
        let _ = fam.output_labels(inst, &y);
    }
    for est in [
        EstimatorSpec::Pwpl {
            pieces: Default::default(),
        },
        EstimatorSpec::Ml,
    ] {
        let est = est.build(model).map_err(e)?;
        let obj = DatasetObjective::new(model, &insts, est.as_ref(), Prior::from_c2(1.0), 1)
            .map_err(e)?;
        let mut g = vec![0.0; model.n_params];
        let _ = obj.evaluate(&theta, Some(&mut g));
    }
    Ok(())
}

/// A zip archive with one stored `.mrg` entry, built by hand (local header, data, central
/// directory, end record) so the fuzzer starts from a valid archive.
fn treebank_zip_seed() -> Vec<u8> {
    let name = b"t/wsj_0001.mrg";
    let data = b"( (NP (DT a) (NN b)))\n";
    let mut crc = flate2::Crc::new();
    crc.update(data);
    let (crc, n) = (crc.sum(), data.len() as u32);
    let mut z = Vec::new();
    z.extend_from_slice(b"PK\x03\x04\x14\x00\x00\x00\x00\x00\x00\x00\x00\x00");
    for v in [crc, n, n] {
        z.extend_from_slice(&v.to_le_bytes());
    }
    z.extend_from_slice(&(name.len() as u16).to_le_bytes());
    z.extend_from_slice(&0u16.to_le_bytes());
    z.extend_from_slice(name);
    z.extend_from_slice(data);
    let cd = z.len() as u32;
    z.extend_from_slice(b"PK\x01\x02\x14\x00\x14\x00\x00\x00\x00\x00\x00\x00\x00\x00");
    for v in [crc, n, n] {
        z.extend_from_slice(&v.to_le_bytes());
    }
    z.extend_from_slice(&(name.len() as u16).to_le_bytes());
    z.extend_from_slice(&[0u8; 12]); // extra, comment, disk, internal and external attributes
    z.extend_from_slice(&0u32.to_le_bytes()); // the local header's offset
    z.extend_from_slice(name);
    let cd_len = z.len() as u32 - cd;
    z.extend_from_slice(b"PK\x05\x06\x00\x00\x00\x00\x01\x00\x01\x00");
    z.extend_from_slice(&cd_len.to_le_bytes());
    z.extend_from_slice(&cd.to_le_bytes());
    z.extend_from_slice(&0u16.to_le_bytes());
    z
}

fn targets(fx: &Arc<Fixture>) -> Vec<Target> {
    let mut ts = vec![];
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let e = |e: piecewise_lab::Error| e.to_string();

    // CoNLL: read, fit a chain, score it on what was read.
    for (name, label) in [
        ("conll", data::conll::LabelColumn::Last),
        ("conll-unlabelled", data::conll::LabelColumn::None),
    ] {
        ts.push(Target {
            name,
            seeds: vec![fx.chunk.clone().into_bytes()],
            json: false,
            dictionary: &[],
            run: Box::new(move |b| {
                let c = data::conll::parse_conll(b, "fuzz.conll", label).map_err(e)?;
                let _ = data::format_corpus(&c.sequences);
                if c.sequences.iter().all(|s| s.has_labels()) {
                    let (fam, _) = ModelSpec::default().fit(&c, None).map_err(e)?;
                    exercise(fam.as_ref(), &c)?;
                }
                Ok(())
            }),
        });
    }
    ts.push(Target {
        name: "crfsuite",
        seeds: vec![
            b"B-NP\tw=He\tpos=PRP\nB-VP\tw=reckons:1.5\tpos=VBZ\n\nO\tw=.\t__BOS__\n\n".to_vec(),
        ],
        json: false,
        dictionary: &["w=", ":", "\\:", "__BOS__"],
        run: Box::new(move |b| {
            let c = data::crfsuite::parse_crfsuite(b, "fuzz.crfsuite").map_err(e)?;
            if c.sequences.iter().all(|s| s.has_labels()) {
                let (fam, _) = ModelSpec::default().fit(&c, None).map_err(e)?;
                exercise(fam.as_ref(), &c)?;
            }
            Ok(())
        }),
    });
    ts.push(Target {
        name: "grid",
        seeds: vec![fx.grid.clone().into_bytes()],
        json: false,
        dictionary: &["|", " | "],
        run: Box::new(move |b| {
            let c = data::grid::parse_grid(&text(b), "fuzz.grid").map_err(e)?;
            let spec = ModelSpec::Grid(Default::default());
            if c.tokens() <= 64 && c.sequences.iter().all(|s| s.has_labels()) {
                let (fam, _) = spec.fit(&c, None).map_err(e)?;
                let insts = fam.instances(&c).map_err(e)?;
                let est = EstimatorSpec::Pwpl {
                    pieces: Default::default(),
                }
                .build(fam.model())
                .map_err(e)?;
                let obj = DatasetObjective::new(
                    fam.model(),
                    &insts,
                    est.as_ref(),
                    Prior::from_c2(1.0),
                    1,
                )
                .map_err(e)?;
                let _ = obj.evaluate(&vec![0.1; fam.model().n_params], None);
            }
            Ok(())
        }),
    });
    ts.push(Target {
        name: "samples",
        seeds: vec![fx.samples.clone().into_bytes()],
        json: false,
        dictionary: &["# theta:", "# biases:"],
        run: Box::new(move |b| {
            let c = data::samples::parse_samples(&text(b), "fuzz.samples").map_err(e)?;
            if c.sequences.first().is_some_and(|s| s.len() <= 10) {
                let spec = ModelSpec::Boltzmann(Default::default());
                let (fam, _) = spec.fit(&c, None).map_err(e)?;
                exercise(fam.as_ref(), &c)?;
            }
            Ok(())
        }),
    });
    ts.push(Target {
        name: "treebank",
        seeds: vec![
            b"( (S (NP-SBJ-1 (NNP Mr.) (-NONE- *T*-1)) (VP (VBD said) (NP=2 (DT a) (JJ b) (NN c)))\n (. .)))\n".to_vec(),
            treebank_zip_seed(),
        ],
        json: false,
        dictionary: &["(", ")", "-NONE-", "PK\x03\x04", "PK\x01\x02", "PK\x05\x06", ".mrg"],
        run: Box::new(move |b| {
            use piecewise_lab::data::treebank as tb;
            use piecewise_lab::eval::evalb;
            // EVALB's line-aligned mode reads anything, line by line, against itself.
            let text = String::from_utf8_lossy(b);
            let gold = piecewise_lab::eval::evalb_lines::read_gold(&text, "gold.mrg");
            let test = piecewise_lab::eval::evalb_lines::read_tree_lines(&text, "test.mrg");
            let report = piecewise_lab::eval::evalb_lines::evalb_lines(&gold, &test, &evalb::EvalbParams::collins(None), 40);
            let _ = (report.text(), report.to_json());
            let mut trees = vec![];
            for f in tb::parse_treebank_bytes(b, "fuzz.mrg").map_err(e)? {
                for mut t in f.trees {
                    tb::normalise(&mut t);
                    if tb::reserved_label(&t).is_none() {
                        let bin = tb::binarise(&t, tb::Binarisation::default());
                        assert_eq!(tb::debinarise(&bin), t, "binarisation inverted");
                    }
                    trees.push(t);
                }
            }
            // The grammar read off them (as `train --model grammar` does), and the trees
            // scored against themselves.
            let _ = evalb::evalb(&trees, &trees, &evalb::EvalbParams::collins(None)).map_err(e)?;
            let g = piecewise_lab::grammar::Grammar::fit(&trees, &trees, Default::default())
                .map_err(e)?;
            for t in &trees {
                let _ = g.encode(t);
            }
            Ok(())
        }),
    });
    // A folder of `.mrg` files (the WSJ layout): the mutated file beside a valid one.
    {
        let work = fx.dir.path().join("treebank-folders");
        let counter = AtomicU64::new(0);
        ts.push(Target {
            name: "treebank-folder",
            seeds: vec![
                b"( (S (NP (NNP Mr.) (-NONE- *T*-1)) (VP (VBD said)) (. .)))\n".to_vec(),
                b"( (X (IN @)))\n( (NP (DT a) (NN b)))\n".to_vec(),
            ],
            json: false,
            dictionary: &["(", ")", "-NONE-", "TOP", "@X|<A>", "+", "^"],
            run: Box::new(move |b| {
                let dir = work.join(format!("{}", counter.fetch_add(1, Ordering::Relaxed)));
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(dir.join("wsj_0001.mrg"), "( (NP (DT a) (NN b)))\n").unwrap();
                std::fs::write(dir.join("wsj_0002.mrg"), b).unwrap();
                let r = piecewise_lab::grammar::parse::read_trees(&dir);
                let _ = std::fs::remove_dir_all(&dir);
                r.map(|_| ()).map_err(e)
            }),
        });
    }
    ts.push(Target {
        name: "seminar",
        seeds: vec![b"<0.24.4.93.20.59.10.jgc+@NL.CS.CMU.EDU (0)>\nType:     cmu.cs.scs\nTopic:    Talk\nDates:    26-Apr-93\nTime:     <stime>3:30 PM</stime>\nPostedBy: jgc+ on 24-Apr-93 at 20:59 from NL.CS.CMU.EDU\nAbstract: \n\n<speaker>Jaime Carbonell</speaker> speaks in <location>Wean 5409</location>.\n".to_vec()],
        json: false,
        dictionary: &["<speaker>", "</speaker>", "<etime>", "</etime>", "<sentence>", "<paragraph>"],
        run: Box::new(move |b| {
            let s = data::seminars::parse(&text(b), "fuzz.seminar").map_err(e)?;
            let _ = s.words();
            Ok(())
        }),
    });
    let uai_seed = b"MARKOV\n3\n2 2 3\n3\n1 0\n2 0 1\n2 1 2\n\n2\n 0.4 0.6\n\n4\n 1.0 2.0\n 3.0 1.0\n\n6\n 1 2 3\n 2 1 0.5\n";
    ts.push(Target {
        name: "uai",
        seeds: vec![
            uai_seed.to_vec(),
            b"BAYES\n2\n2 2\n2\n1 0\n2 0 1\n2\n0.3 0.7\n4\n0.9 0.1 0.2 0.8\n".to_vec(),
        ],
        json: false,
        dictionary: &["MARKOV", "BAYES"],
        run: Box::new(move |b| {
            let g = data::uai::parse_uai(&text(b), "fuzz.uai").map_err(e)?;
            let (_m, inst, phi) = g.instance(&[]).map_err(e)?;
            if inst.joint_states() <= 4096 {
                if let Ok((m, _)) = piecewise_lab::inference::exact_node_marginals(&inst, &phi) {
                    let _ = data::uai::format_mar(&m);
                }
            }
            if phi.len() <= 100_000 {
                let opts = piecewise_lab::inference::bp::BpOptions {
                    max_sweeps: 20,
                    ..Default::default()
                };
                let _ = piecewise_lab::inference::bp_node_marginals(&inst, &phi, &opts);
            }
            Ok(())
        }),
    });
    let uai_model =
        data::uai::parse_uai(std::str::from_utf8(uai_seed).unwrap(), "seed.uai").unwrap();
    ts.push(Target {
        name: "evid",
        seeds: vec![b"1\n2 0 1 2 2\n".to_vec(), b"2 0 1 1 0\n".to_vec()],
        json: false,
        dictionary: &[],
        run: Box::new(move |b| {
            let ev = data::uai::parse_evid(&text(b), "fuzz.evid", &uai_model).map_err(e)?;
            let (_m, inst, phi) = uai_model.instance(&ev).map_err(e)?;
            let _ = piecewise_lab::inference::exact_node_marginals(&inst, &phi);
            Ok(())
        }),
    });
    let chunk_corpus = data::conll::parse_conll(
        fx.chunk.as_bytes(),
        "chunk.conll",
        data::conll::LabelColumn::Last,
    )
    .unwrap();
    {
        let corpus = chunk_corpus.clone();
        ts.push(Target {
            name: "template",
            seeds: vec![
                std::fs::read(root().join("assets/templates/hmm.tpl")).unwrap(),
                b"# chunking\nU00:%x[-2,0]\nU01:%x[-1,0]\nU02:%x[0,0]\nU05:%x[-1,0]/%x[0,0]\nU10:%x[0,1]\n\nB\nB01:%x[0,1]\n".to_vec(),
            ],
            json: false,
            dictionary: &["U", "B", "%x[", "]", ",", "/"],
            run: Box::new(move |b| {
                let t = FeatureTemplate::parse(&text(b), "fuzz.tpl").map_err(e)?;
                let (fam, _) = ChainCrf::fit(&corpus, t, ChainOptions::default()).map_err(e)?;
                exercise(&fam, &corpus)
            }),
        });
    }

    // Run directories: every family's model.json, then the run's other files.
    let hmm_path = fx.file("hmm.conll", &fx.hmm);
    let chunk_path = fx.file("chunk.conll", &fx.chunk);
    let grid_path = fx.file("grid.txt", &fx.grid);
    let samples_path = fx.file("samples.txt", &fx.samples);
    use piecewise_lab::graph::chain::{Extractor, Factorisation, FeatureSet};
    use piecewise_lab::graph::factorial::FactorialOptions;
    let chain = |f: Factorisation, fs: FeatureSet, ex: Extractor| ChainOptions {
        factorisation: f,
        feature_set: fs,
        extractor: ex,
        lexicons: Some(fx.lexicons.clone()),
        ..Default::default()
    };
    let runs: Vec<(&'static str, PathBuf, ModelSpec, EstimatorSpec)> = vec![
        (
            "model-chain",
            chunk_path.clone(),
            ModelSpec::LinearChain(chain(
                Factorisation::Split,
                FeatureSet::All,
                Extractor::Template,
            )),
            EstimatorSpec::Ml,
        ),
        (
            "model-chain-edge-observed",
            chunk_path.clone(),
            ModelSpec::LinearChain(chain(
                Factorisation::Edge,
                FeatureSet::Observed,
                Extractor::Template,
            )),
            EstimatorSpec::Pwpl {
                pieces: Default::default(),
            },
        ),
        (
            "model-chain-ner-edge-pair",
            chunk_path.clone(),
            ModelSpec::LinearChain(chain(
                Factorisation::EdgePair,
                FeatureSet::Observed,
                Extractor::Ner,
            )),
            EstimatorSpec::Memm,
        ),
        (
            "model-skip-chain",
            chunk_path.clone(),
            ModelSpec::SkipChain(chain(
                Factorisation::Split,
                FeatureSet::Observed,
                Extractor::Template,
            )),
            EstimatorSpec::Pw {
                pieces: Default::default(),
            },
        ),
        (
            "model-grid",
            grid_path,
            ModelSpec::Grid(Default::default()),
            EstimatorSpec::Pwpl {
                pieces: Default::default(),
            },
        ),
        (
            "model-boltzmann",
            samples_path,
            ModelSpec::Boltzmann(piecewise_lab::graph::boltzmann::BoltzmannOptions {
                biases: true,
            }),
            EstimatorSpec::Ml,
        ),
        (
            "model-boltzmann-chain",
            hmm_path.clone(),
            ModelSpec::BoltzmannChain(Default::default()),
            EstimatorSpec::Ml,
        ),
        (
            "model-factorial",
            chunk_path.clone(),
            ModelSpec::Factorial(FactorialOptions {
                lexicons: Some(fx.lexicons.clone()),
                ..Default::default()
            }),
            EstimatorSpec::Pwpl {
                pieces: Default::default(),
            },
        ),
    ];
    let mut run_dirs = vec![];
    for (name, train, model, est) in runs {
        let dir = fx.run(name, &train, model.clone(), est);
        let corpus = model.read(&train).unwrap();
        run_dirs.push(dir.clone());
        ts.push(Target {
            name,
            seeds: vec![std::fs::read(dir.join("model.json")).unwrap()],
            json: true,
            dictionary: &[],
            run: Box::new(move |b| {
                let v: serde_json::Value = serde_json::from_slice(b).map_err(|e| e.to_string())?;
                let fam = registry::from_json(v, "model.json").map_err(e)?;
                exercise(fam.as_ref(), &corpus)
            }),
        });
    }
    let chain_dir = run_dirs[0].clone();
    let spec_seeds: Vec<Vec<u8>> = run_dirs
        .iter()
        .map(|d| std::fs::read(d.join("spec.json")).unwrap())
        .collect();
    let (chain_fam, _) = piecewise_lab::run::RunFiles::at(&chain_dir)
        .model()
        .unwrap();
    {
        let fam = chain_fam.clone();
        ts.push(Target {
            name: "spec",
            seeds: spec_seeds.clone(),
            json: true,
            dictionary: &[],
            run: Box::new(move |b| {
                let s: RunSpec = serde_json::from_slice(b).map_err(|e| e.to_string())?;
                let _ = s.inference();
                let _ = s.estimator.build(fam.model());
                let back = RunSpec::from_settings(&s.to_settings()).map_err(e)?;
                let _ = back.inference();
                Ok(())
            }),
        });
    }
    ts.push(Target {
        name: "summary",
        seeds: run_dirs
            .iter()
            .map(|d| std::fs::read(d.join("summary.json")).unwrap())
            .collect(),
        json: true,
        dictionary: &[],
        run: Box::new(|b| {
            let s: piecewise_lab::run::RunSummary =
                serde_json::from_slice(b).map_err(|e| e.to_string())?;
            let _ = format!("{s:?}");
            Ok(())
        }),
    });
    {
        let fam = chain_fam.clone();
        let text0 = {
            let (f, th) = piecewise_lab::run::RunFiles::at(&chain_dir)
                .model()
                .unwrap();
            family::dump_weights(f.as_ref(), &th)
        };
        ts.push(Target {
            name: "weights-tsv",
            seeds: vec![text0.into_bytes()],
            json: false,
            dictionary: &["\t", "state", "transition"],
            run: Box::new(move |b| {
                family::read_weights(fam.as_ref(), &text(b), "fuzz.tsv").map_err(e)?;
                Ok(())
            }),
        });
    }
    // A whole run directory: model.json kept, weights.bin, spec.json or scaling.json mutated,
    // opened the way eval and the GUI open it.
    {
        let base = chain_dir.clone();
        let work = fx.dir.path().join("mutated-run");
        let corpus = chunk_corpus;
        let scaling = br#"{"alpha":[1.0,0.9,1.1,1.0,1.2,0.8,1.0],"states":["B-NP","B-PP","I-NP","B-VP","I-VP","O","<start>"],"log_likelihood_before":-1.0,"log_likelihood_after":-1.0,"iterations":1,"stop_reason":"converged","seconds":0.0}"#.to_vec();
        let counter = AtomicU64::new(0);
        let lock = Mutex::new(());
        ts.push(Target {
            name: "run-dir",
            seeds: vec![
                [
                    b"W".as_slice(),
                    &std::fs::read(base.join("weights.bin")).unwrap(),
                ]
                .concat(),
                [
                    b"S".as_slice(),
                    &std::fs::read(base.join("spec.json")).unwrap(),
                ]
                .concat(),
                [b"C".as_slice(), &scaling].concat(),
            ],
            json: false,
            dictionary: &[],
            run: Box::new(move |b| {
                let _g = lock.lock().unwrap_or_else(|p| p.into_inner());
                let n = counter.fetch_add(1, Ordering::Relaxed);
                let dir = work.join(format!("{}", n % 2));
                let _ = std::fs::remove_dir_all(&dir);
                std::fs::create_dir_all(&dir).unwrap();
                for f in ["model.json", "weights.bin", "spec.json"] {
                    std::fs::copy(base.join(f), dir.join(f)).unwrap();
                }
                let file = match b.first() {
                    Some(b'W') => "weights.bin",
                    Some(b'S') => "spec.json",
                    _ => "scaling.json",
                };
                std::fs::write(dir.join(file), b.get(1..).unwrap_or_default()).unwrap();
                let run = piecewise_lab::run::TrainedRun::open(&dir).map_err(e)?;
                piecewise_lab::eval::evaluate(
                    run.family.as_ref(),
                    &run.theta,
                    &corpus,
                    &run.inference,
                )
                .map_err(e)?;
                Ok(())
            }),
        });
    }
    // A checkpoint (a chain run cancelled after two iterations), read the way a run resuming
    // reads it: sizes checked against the file before anything large is made.
    {
        use piecewise_lab::run::checkpoint::{Checkpoint, CheckpointPolicy, CHECKPOINT};
        let mut s: RunSpec = serde_json::from_slice(&spec_seeds[0]).unwrap();
        s.threads = 1;
        s.eval_every = 0;
        let cut = fx.dir.path().join("checkpoint-seed");
        let cancel = AtomicBool::new(false);
        let _ = piecewise_lab::run::execute_with(
            &s,
            &cut,
            piecewise_lab::run::Existing::Refuse,
            CheckpointPolicy::NEVER,
            &cancel,
            &mut |ev| {
                if let piecewise_lab::run::RunEvent::Progress(p) = ev {
                    if p.iteration == 2 {
                        cancel.store(true, Ordering::Relaxed);
                    }
                }
            },
        );
        let seed = std::fs::read(cut.join(CHECKPOINT)).expect("a checkpoint at the cancel");
        let n = chain_fam.model().n_params;
        let files = piecewise_lab::run::RunFiles::at(&cut);
        if let Err(err) = Checkpoint::read(&files, n) {
            panic!("the seed checkpoint: {err}");
        }
        let work = fx.dir.path().join("mutated-checkpoint");
        std::fs::create_dir_all(&work).unwrap();
        let lock = Mutex::new(());
        ts.push(Target {
            name: "checkpoint",
            seeds: vec![seed],
            // Not JSON (its header is), but as large as a model file: mutated whole, not cut.
            json: true,
            dictionary: &[],
            run: Box::new(move |b| {
                let _g = lock.lock().unwrap_or_else(|p| p.into_inner());
                std::fs::write(work.join(CHECKPOINT), b).unwrap();
                let files = piecewise_lab::run::RunFiles::at(&work);
                Checkpoint::read(&files, n).map_err(e)?;
                Ok(())
            }),
        });
        // The same, its checksum made anew after the mutation, so the header's checks are
        // reached; a checkpoint that passes them is resumed for two iterations (a header with
        // more pairs than iterations once indexed out of bounds there).
        let work = fx.dir.path().join("resealed-checkpoint");
        std::fs::create_dir_all(&work).unwrap();
        let lock = Mutex::new(());
        let (chain, insts) = ModelSpec::default()
            .fit(
                &data::conll::parse_conll(fx.chunk.as_bytes(), "c", data::conll::LabelColumn::Last)
                    .unwrap(),
                None,
            )
            .unwrap();
        let chain = Arc::new((chain, insts));
        ts.push(Target {
            name: "checkpoint-resealed",
            seeds: vec![std::fs::read(cut.join(CHECKPOINT)).unwrap()],
            json: true,
            dictionary: &[],
            run: Box::new(move |b| {
                let _g = lock.lock().unwrap_or_else(|p| p.into_inner());
                let mut b = b.to_vec();
                piecewise_lab::run::checkpoint::reseal(&mut b);
                std::fs::write(work.join(CHECKPOINT), &b).unwrap();
                let files = piecewise_lab::run::RunFiles::at(&work);
                let Some(c) = Checkpoint::read(&files, n).map_err(e)? else {
                    return Err("none".into());
                };
                let (fam, insts) = &*chain;
                if fam.model().n_params != n {
                    return Ok(());
                }
                let est = EstimatorSpec::Ml.build(fam.model()).map_err(e)?;
                let obj =
                    DatasetObjective::new(fam.model(), insts, est.as_ref(), Prior::from_c2(1.0), 1)
                        .map_err(e)?;
                let spec = LbfgsSpec {
                    max_iter: c.state.iterations.saturating_add(2),
                    ..Default::default()
                };
                let cancel = AtomicBool::new(false);
                struct Quiet;
                impl piecewise_lab::optim::Watch for Quiet {
                    fn observe(&mut self, _: &piecewise_lab::optim::IterReport, _: &[f64]) {}
                    fn keep(&mut self, _: &piecewise_lab::optim::Snapshot, _: bool) {}
                }
                piecewise_lab::optim::minimize_from(
                    &obj,
                    piecewise_lab::optim::Start::Resume(Box::new(c.state)),
                    &spec,
                    &cancel,
                    &mut Quiet,
                )
                .map_err(e)?;
                Ok(())
            }),
        });
    }
    // A `train --spec` spec, run: its numbers checked (the history m = 2^31 once asked for
    // 120 GB), then trained for at most two iterations on the fixture's data (its own paths are
    // replaced: a mutated path may name anything on this machine).
    {
        let work = fx.dir.path().join("spec-runs");
        let chunk = fx.file("spec-chunk.conll", &fx.chunk);
        let counter = AtomicU64::new(0);
        ts.push(Target {
            name: "train-spec",
            seeds: spec_seeds.clone(),
            json: true,
            dictionary: &[],
            run: Box::new(move |b| {
                let mut s: RunSpec = serde_json::from_slice(b).map_err(|e| e.to_string())?;
                s.check().map_err(e)?;
                let train = match s.model {
                    ModelSpec::LinearChain(_)
                    | ModelSpec::SkipChain(_)
                    | ModelSpec::Factorial(_) => chunk.clone(),
                    _ => return Ok(()),
                };
                s.train = train;
                s.test = None;
                s.template = None;
                s.init_from = None;
                s.optimiser.max_iter = s.optimiser.max_iter.min(2);
                s.threads = 1;
                s.eval_every = 0;
                let n = counter.fetch_add(1, Ordering::Relaxed);
                let out = work.join(format!("{n}"));
                let r = execute(&s, &out, &AtomicBool::new(false), &mut |_| {});
                let _ = std::fs::remove_dir_all(&out);
                r.map(|_| ()).map_err(e)
            }),
        });
    }
    // A sweep folder's index (`sweep.json`), read the way `sweep` resumes it and the Frontier
    // pane lists it: checked, its table written, its unfinished points planned.
    {
        use piecewise_lab::estimators::scl::ComponentFamily;
        use piecewise_lab::experiments::sweep::{plan_sweep, sweep_csv, SweepIndex, SweepSpec};
        let samples = fx.file("sweep-samples.txt", &fx.samples);
        let seed_dir = fx.dir.path().join("sweep-seed");
        let base = RunSpec {
            train: samples,
            model: ModelSpec::Boltzmann(Default::default()),
            estimator: EstimatorSpec::Scl {
                policy: Default::default(),
            },
            prior: Prior { sigma2: Some(10.0) },
            threads: 1,
            ..Default::default()
        };
        let spec = SweepSpec {
            base,
            low: ComponentFamily::Pseudo(1),
            high: ComponentFamily::Full,
            lambdas: vec![0.5, 1.0],
            betas: vec![0.5, 1.0],
            sigma2s: vec![],
            jobs: 1,
        };
        plan_sweep(&spec, &seed_dir).unwrap();
        let work = fx.dir.path().join("sweeps");
        let counter = AtomicU64::new(0);
        ts.push(Target {
            name: "sweep-index",
            seeds: vec![std::fs::read(seed_dir.join("sweep.json")).unwrap()],
            json: true,
            dictionary: &[],
            run: Box::new(move |b| {
                let index: SweepIndex = serde_json::from_slice(b).map_err(|e| e.to_string())?;
                let dir = work.join(format!("{}", counter.fetch_add(1, Ordering::Relaxed)));
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(dir.join("sweep.json"), b).unwrap();
                let _ = sweep_csv(&dir, &index);
                let r = index
                    .spec
                    .check()
                    .and_then(|()| plan_sweep(&index.spec, &dir).map(|_| ()));
                let _ = std::fs::remove_dir_all(&dir);
                r.map_err(e)
            }),
        });
    }
    // A grammar run's directory: `grammar.json`, `weights.bin` or `spec.json` mutated, then
    // opened the way `parse`, `eval` and the Parse pane open it, and asked to parse.
    {
        use piecewise_lab::grammar::parse::GrammarRunOptions;
        use piecewise_lab::run::grammar::GrammarRun;
        let trees = fx.file(
            "grammar-train.mrg",
            "( (S (NP (DT the) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))) (. .)))\n\
             ( (S (NP (NNP John)) (VP (VBD saw) (NP (DT a) (NN dog))) (. .)))\n\
             ( (X (IN @)))\n",
        );
        let mut bases = vec![];
        for est in ["generative", "memm"] {
            let out = fx.dir.path().join(format!("grammar-{est}"));
            let spec = RunSpec {
                name: Some(est.into()),
                train: trees.clone(),
                model: ModelSpec::Grammar(GrammarRunOptions::default()),
                estimator: match est {
                    "memm" => EstimatorSpec::Memm,
                    _ => EstimatorSpec::Generative,
                },
                optimiser: LbfgsSpec {
                    max_iter: 3,
                    ..Default::default()
                },
                prior: Prior { sigma2: Some(10.0) },
                threads: 1,
                ..Default::default()
            };
            execute(&spec, &out, &AtomicBool::new(false), &mut |_| {}).unwrap();
            bases.push(out);
        }
        let mut seeds = vec![];
        for (k, base) in bases.iter().enumerate() {
            for (tag, file) in [
                (b'G', "grammar.json"),
                (b'W', "weights.bin"),
                (b'S', "spec.json"),
            ] {
                seeds.push(
                    [
                        &[tag, k as u8][..],
                        &std::fs::read(base.join(file)).unwrap(),
                    ]
                    .concat(),
                );
            }
        }
        let work = fx.dir.path().join("grammar-runs");
        let train_trees = trees.clone();
        let counter = AtomicU64::new(0);
        let sentences: Vec<Vec<String>> = ["the cat saw a dog .", "John sat on the mat", "@ @"]
            .iter()
            .map(|s| s.split(' ').map(str::to_string).collect())
            .collect();
        ts.push(Target {
            name: "grammar-run",
            seeds,
            json: false,
            dictionary: &["\"", "{", "}", ":", "0", "1", "true", "null"],
            run: Box::new(move |b| {
                let (Some(&tag), Some(&k)) = (b.first(), b.get(1)) else {
                    return Err("too short".into());
                };
                let base = &bases[k as usize % bases.len()];
                let dir = work.join(format!("{}", counter.fetch_add(1, Ordering::Relaxed)));
                std::fs::create_dir_all(&dir).unwrap();
                for f in ["grammar.json", "weights.bin", "spec.json", "summary.json"] {
                    std::fs::copy(base.join(f), dir.join(f)).unwrap();
                }
                let file = match tag {
                    b'G' => "grammar.json",
                    b'W' => "weights.bin",
                    _ => "spec.json",
                };
                let mut bytes = b[2..].to_vec();
                // A spec names its training trees by a path of the run that made it: point it at
                // this fixture's, so a saved case reads the same trees on any machine.
                if file == "spec.json" {
                    if let Ok(mut v) = serde_json::from_slice::<serde_json::Value>(&bytes) {
                        if let Some(t) = v.get_mut("train").filter(|t| t.is_string()) {
                            *t = serde_json::Value::from(train_trees.display().to_string());
                            bytes = serde_json::to_vec(&v).unwrap();
                        }
                    }
                }
                std::fs::write(dir.join(file), &bytes).unwrap();
                let r = GrammarRun::open(&dir).and_then(|run| {
                    let n = run.max_length(None)?;
                    run.parse(&sentences, n).map(|_| ())
                });
                let _ = std::fs::remove_dir_all(&dir);
                r.map_err(e)
            }),
        });
    }
    // Issue 65's classes. A plan folder built from the input (the user's files, folders and
    // links, a plan's own files, the marker or not): writing a plan there must delete nothing
    // but a marked plan's own stage files and specs.
    {
        let work = fx.dir.path().join("plan-folders");
        let counter = AtomicU64::new(0);
        let train = fx.file("plan-train.conll", &fx.hmm);
        ts.push(Target {
            name: "plan-folder",
            seeds: vec![vec![0], vec![1, 0, 0], vec![1, 4, 1]],
            json: false,
            dictionary: &[],
            run: Box::new(move |b| {
                let dir = work.join(format!("{}", counter.fetch_add(1, Ordering::Relaxed)));
                plan_folder(&dir, &train, b)
            }),
        });
    }
    // Gzip bombs: the input's text repeated as its first byte says (up to 2^22 times, every
    // repetition one sentence or one long one) inside a .gz file, read and fitted under the
    // fuzz run's memory limit: refused or read, never more than the limit.
    {
        let work = fx.dir.path().join("gzip-bombs");
        std::fs::create_dir_all(&work).unwrap();
        let counter = AtomicU64::new(0);
        let mut seed = vec![10u8, 1];
        let lines: Vec<&str> = fx.chunk.lines().take(8).collect();
        seed.extend(format!("{}\n", lines.join("\n")).into_bytes());
        ts.push(Target {
            name: "gzip-bomb",
            seeds: vec![seed],
            json: false,
            dictionary: &["\n\n", "\n"],
            run: Box::new(move |b| {
                use std::io::Write;
                let (Some(&k), Some(&sep)) = (b.first(), b.get(1)) else {
                    return Err("too short".into());
                };
                let body = b.get(2..).unwrap_or_default();
                let mut unit = body.to_vec();
                if sep % 2 == 0 {
                    // One sentence: token lines only.
                    unit.retain(|&c| c != b'\r');
                    while unit.windows(2).any(|w| w == b"\n\n") {
                        let at = unit.windows(2).position(|w| w == b"\n\n").unwrap();
                        unit.remove(at);
                    }
                }
                let path = work.join(format!(
                    "{}.conll.gz",
                    counter.fetch_add(1, Ordering::Relaxed)
                ));
                let f = std::fs::File::create(&path).unwrap();
                let mut gz = flate2::write::GzEncoder::new(f, flate2::Compression::fast());
                let reps = 1usize << (k % 23);
                let mut written = 0usize;
                for _ in 0..reps {
                    gz.write_all(&unit).unwrap();
                    written += unit.len();
                    // The gzip writer's own time is not the reader's: stop at 256 MB of text.
                    if written > 256 << 20 {
                        break;
                    }
                }
                gz.finish().unwrap();
                let r = (|| {
                    let c = data::conll::read_conll(&path).map_err(e)?;
                    let (fam, _) = ModelSpec::default().fit(&c, None).map_err(e)?;
                    let _ = fam.describe();
                    Ok(())
                })();
                let _ = std::fs::remove_file(&path);
                r
            }),
        });
    }
    // Claim files as another host (or a damaged disk) might leave them: the bytes are the
    // `.claim.json`; taking the claim (with flock, then without) must give a claim or an error
    // within the budget — never read past its bound, block, or take a live claim's directory
    // without saying so.
    {
        let work = fx.dir.path().join("claims");
        let counter = AtomicU64::new(0);
        let live = serde_json::json!({
            "host": "other-host", "pid": 1, "started": "2026-01-01T00:00:00Z",
            "heartbeat": 4102444800u64, "token": 7
        });
        ts.push(Target {
            name: "claim-file",
            seeds: vec![serde_json::to_vec(&live).unwrap(), b"{}".to_vec()],
            json: true,
            dictionary: &["heartbeat", "token", "\\u001b[2J"],
            run: Box::new(move |b| {
                use piecewise_lab::run::claim::{Claim, ClaimOptions, CLAIM_FILE};
                let dir = work.join(format!("{}", counter.fetch_add(1, Ordering::Relaxed)));
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(dir.join(CLAIM_FILE), b).unwrap();
                let take = |flock| {
                    let o = ClaimOptions {
                        host: "this-host".into(),
                        flock,
                        stale_after: Duration::from_secs(600),
                        heartbeat: Duration::from_secs(3600),
                    };
                    Claim::take(&dir, &o).map(drop).map_err(e)
                };
                // With the flock (free here): a claim or an error; without it (Lustre's
                // `noflock`), the same bytes again, its answer only checked for panics.
                let r = take(true);
                std::fs::write(dir.join(CLAIM_FILE), b).unwrap();
                let _ = take(false);
                let _ = std::fs::remove_dir_all(&dir);
                r
            }),
        });
    }
    // Label counts: two bytes give the number of labels (up to 2^16 × 64), the rest a
    // sequence's tokens; the chain is fitted and its training memory estimated and checked as a
    // run does, so many labels are refused by the u32 index or the limit, never allocated.
    ts.push(Target {
        name: "label-count",
        seeds: vec![vec![1, 0, 3, 1, 4, 1, 5], vec![2, 0, 9, 2, 6, 5, 3, 5]],
        json: false,
        dictionary: &[],
        run: Box::new(move |b| {
            if b.len() < 3 {
                return Err("too short".into());
            }
            let labels = (u16::from_le_bytes([b[0], b[1]]) as usize).max(1) * 64;
            let mut text = String::new();
            for (i, &c) in b[2..].iter().cycle().take(labels.min(400_000)).enumerate() {
                text.push_str(&format!("w{} p{} L{}\n", c % 13, c % 5, i % labels));
                if c % 17 == 0 {
                    text.push('\n');
                }
            }
            let c = data::conll::parse_conll(
                text.as_bytes(),
                "labels.conll",
                data::conll::LabelColumn::Last,
            )
            .map_err(e)?;
            let (fam, insts) = ModelSpec::default().fit(&c, None).map_err(e)?;
            let need = DatasetObjective::memory_estimate(fam.model(), &insts, 1)
                + LbfgsSpec::default().memory_estimate(fam.model().n_params);
            piecewise_lab::memory::check(need, || "training".into(), "").map_err(e)?;
            Ok(())
        }),
    });
    // Output targets: a small tree of files, folders, symlinks (chains, loops, dangling) and a
    // device node, built from the input; `--out` at one of them must never replace a link, a
    // device or a folder, and must leave no temporary file behind.
    {
        let work = fx.dir.path().join("out-targets");
        let counter = AtomicU64::new(0);
        ts.push(Target {
            name: "out-target",
            seeds: vec![
                vec![0, 1, 2, 3, 4, 5, 6, 7],
                vec![2, 0x12, 2, 0x20, 0, 3, 1, 0x40],
                vec![5, 0x31, 2, 0x03, 1, 0x05, 0x11, 0x22],
            ],
            json: false,
            dictionary: &[],
            run: Box::new(move |b| {
                out_target(
                    &work.join(format!("{}", counter.fetch_add(1, Ordering::Relaxed))),
                    b,
                )
            }),
        });
    }
    ts
}

/// What a path was before a write: its kind, and a link's target.
fn kind_of(p: &Path) -> Option<(String, Option<PathBuf>)> {
    use std::os::unix::fs::FileTypeExt;
    let m = std::fs::symlink_metadata(p).ok()?;
    let ft = m.file_type();
    let kind = if ft.is_symlink() {
        "link"
    } else if ft.is_dir() {
        "dir"
    } else if ft.is_char_device() {
        "device"
    } else if ft.is_file() {
        "file"
    } else {
        "other"
    };
    Some((kind.into(), std::fs::read_link(p).ok()))
}

/// Builds up to eight entries from `b` (two bytes each: kind and the entry a link points to)
/// in `dir`, writes to the entry the last byte picks, and checks nothing but a regular file
/// was replaced.
fn out_target(dir: &Path, b: &[u8]) -> Result<(), String> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    let name = |k: u8| format!("e{}", k % 8);
    let mut entries = vec![];
    for pair in b.chunks(2).take(8) {
        let (what, to) = (pair[0], pair.get(1).copied().unwrap_or(0));
        let at = dir.join(name(entries.len() as u8));
        match what % 7 {
            0 => std::fs::write(&at, b"old").unwrap(),
            1 => std::fs::create_dir(&at).unwrap(),
            2 => std::os::unix::fs::symlink(name(to), &at).unwrap(),
            3 => std::os::unix::fs::symlink(dir.join(name(to)), &at).unwrap(),
            4 => std::os::unix::fs::symlink(format!("sub/{}", name(to)), &at).unwrap(),
            5 => {
                use std::os::unix::ffi::OsStrExt;
                let c = std::ffi::CString::new(at.as_os_str().as_bytes()).unwrap();
                // SAFETY: mknod of /dev/null's numbers at a path inside the fixture's folder.
                unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) };
            }
            _ => std::os::unix::fs::symlink("missing/deeper/file", &at).unwrap(),
        }
        entries.push(at);
    }
    let pick = b.last().copied().unwrap_or(0) as usize;
    let target = match pick % 10 {
        8 => dir.join("sub/new"),
        9 => dir.join("new/dir/file"),
        k => dir.join(name(k as u8)),
    };
    let before: Vec<_> = entries.iter().map(|p| (p.clone(), kind_of(p))).collect();
    let r = piecewise_lab::util::write_atomic(&target, b"payload");
    for (p, was) in &before {
        let now = kind_of(p);
        if let Some("link" | "dir" | "device") = was.as_ref().map(|w| w.0.as_str()) {
            assert_eq!(&now, was, "{} changed from {was:?} to {now:?}", p.display());
        }
    }
    for d in [dir.to_path_buf(), dir.join("sub")] {
        for f in std::fs::read_dir(&d).unwrap().flatten() {
            let n = f.file_name().to_string_lossy().into_owned();
            assert!(!n.contains(".tmp-"), "temporary file left: {n}");
        }
    }
    if r.is_ok() {
        if let Ok(meta) = std::fs::metadata(&target) {
            if meta.is_file() {
                assert_eq!(std::fs::read(&target).unwrap(), b"payload");
            }
        }
    }
    r.map_err(|e| e.to_string())
}

/// Builds up to eight entries of `dir/plan` from `b` (kind, then a name), writes a plan there
/// and checks that only a marked plan's own files went, and nothing at all when it was refused.
fn plan_folder(dir: &Path, train: &Path, b: &[u8]) -> Result<(), String> {
    use piecewise_lab::experiments::plan::{write_plan, PlannedRun, PLAN_MARKER};
    let _ = std::fs::remove_dir_all(dir);
    let plan = dir.join("plan");
    let names = [
        "notes.md",
        "stage-1.txt",
        "stage-2.sbatch",
        "submit.sh",
        "specs/0000.json",
        "specs/mine.json",
        "q3/roadmap.md",
        "stage-x.txt",
    ];
    let first = b.first().copied().unwrap_or(0);
    if first % 5 != 0 {
        std::fs::create_dir_all(&plan).unwrap();
    }
    for (k, &c) in b.iter().enumerate().skip(1).take(8) {
        if first % 5 == 0 {
            break;
        }
        let name = names[(c as usize + k) % names.len()];
        let at = plan.join(name);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        match c % 4 {
            0 | 1 => {
                let body = format!("user {k}").into_bytes();
                let _ = std::fs::write(&at, &body);
            }
            2 => {
                let _ = std::fs::create_dir_all(&at);
            }
            _ => {
                // A link out of the plan folder (never to a path outside the fixture).
                let _ = std::os::unix::fs::symlink(dir.join("outside"), &at);
            }
        }
    }
    let marked = first % 3 == 1;
    if marked && plan.is_dir() {
        std::fs::write(plan.join(PLAN_MARKER), "marker").unwrap();
    }
    let snapshot = |p: &Path| -> Vec<(PathBuf, Vec<u8>)> {
        let mut out = vec![];
        let mut stack = vec![p.to_path_buf()];
        while let Some(d) = stack.pop() {
            let Ok(rd) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in rd.flatten() {
                let ft = e.file_type().unwrap();
                if ft.is_dir() {
                    stack.push(e.path());
                }
                out.push((e.path(), std::fs::read(e.path()).unwrap_or_default()));
            }
        }
        out.sort();
        out
    };
    let before = snapshot(&plan);
    let spec = RunSpec {
        train: train.to_path_buf(),
        ..Default::default()
    };
    let runs = vec![PlannedRun {
        spec,
        dir: dir.join("runs/0"),
    }];
    let r = write_plan(&runs, &plan, &|_| false);
    let after = snapshot(&plan);
    if r.is_err() {
        assert_eq!(before, after, "a refused plan changed {}", plan.display());
    } else {
        // Every entry a plan does not write is still there, as it was.
        let own = |p: &Path| {
            let rel = p
                .strip_prefix(&plan)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            rel == "submit.sh"
                || (rel.starts_with("stage-")
                    && (rel.ends_with(".txt") || rel.ends_with(".sbatch"))
                    && rel["stage-".len()..rel.rfind('.').unwrap()]
                        .bytes()
                        .all(|c| c.is_ascii_digit())
                    && rel.len() > "stage-.txt".len() - 1)
                || (rel.starts_with("specs/")
                    && rel.ends_with(".json")
                    && rel[6..rel.len() - 5].bytes().all(|c| c.is_ascii_digit()))
                || rel == PLAN_MARKER
        };
        for (p, body) in &before {
            if own(p) {
                continue;
            }
            let now = after.iter().find(|(q, _)| q == p);
            assert!(now.is_some(), "{} was deleted by a plan", p.display());
            assert_eq!(
                &now.unwrap().1,
                body,
                "{} was changed by a plan",
                p.display()
            );
        }
    }
    r.map(|_| ()).map_err(|e| e.to_string())
}

fn cases_dir(target: &str) -> PathBuf {
    root().join("tests/fuzz_cases").join(target)
}

#[test]
fn no_input_makes_the_readers_or_model_files_panic() {
    let (budget, max_inputs, seed) = main_budget();
    // Every input is held to a memory limit, as a command is: what would need more is refused
    // by its estimate (the peak is printed at the end).
    piecewise_lab::memory::set_limit(FUZZ_MEMORY_LIMIT);
    let fx = Arc::new(fixture());
    let mut ts = targets(&fx);
    // PIECEWISE_FUZZ_TRACE=1 writes each input to target/fuzz-current-W before running it.
    let trace = std::env::var_os("PIECEWISE_FUZZ_TRACE").is_some();
    // PIECEWISE_FUZZ_TARGETS=a,b fuzzes those targets alone (to chase one failure).
    if let Ok(only) = std::env::var("PIECEWISE_FUZZ_TARGETS") {
        let only: Vec<&str> = only.split(',').collect();
        ts.retain(|t| only.contains(&t.name));
    }
    quiet_panics();
    FUZZING.store(true, Ordering::Relaxed);
    let mut failures: Vec<String> = vec![];

    // The regression cases first: every input that once crashed.
    let mut regression = 0;
    for t in &ts {
        let Ok(rd) = std::fs::read_dir(cases_dir(t.name)) else {
            continue;
        };
        for f in rd.flatten() {
            let input = std::fs::read(f.path()).unwrap();
            regression += 1;
            if let Err(p) = attempt(t, &input) {
                failures.push(format!("{}: {p}", f.path().display()));
            }
        }
    }
    // The seeds must be valid inputs: a target whose seed is refused fuzzes nothing useful.
    for t in &ts {
        for s in &t.seeds {
            match attempt(t, s) {
                Err(p) => failures.push(format!("{} seed panicked: {p}", t.name)),
                Ok(false) => failures.push(format!(
                    "{} seed refused: {}",
                    t.name,
                    (t.run)(s).unwrap_err()
                )),
                Ok(true) => {}
            }
        }
    }

    // Then mutation, both cores, targets interleaved.
    let start = Instant::now();
    let done = AtomicU64::new(0);
    let errors = AtomicU64::new(0);
    let found = Mutex::new(Vec::<String>::new());
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(2);
    let per_target: Vec<AtomicU64> = ts.iter().map(|_| AtomicU64::new(0)).collect();
    let accepted: Vec<AtomicU64> = ts.iter().map(|_| AtomicU64::new(0)).collect();
    std::thread::scope(|scope| {
        for w in 0..workers {
            let (ts, done, errors, found) = (&ts, &done, &errors, &found);
            let (per_target, accepted) = (&per_target, &accepted);
            let worker = std::thread::Builder::new().name(format!("fuzz-{w}"));
            worker
                .spawn_scoped(scope, move || {
                    let mut rng = StdRng::seed_from_u64(seed.wrapping_mul(1_000_003) + w as u64);
                    let mut i = w;
                    while start.elapsed() < budget && done.load(Ordering::Relaxed) < max_inputs {
                        let k = i % ts.len();
                        let t = &ts[k];
                        i += 1;
                        let base = &t.seeds[rng.random_range(0..t.seeds.len())];
                        let input = mutate(base, t, &mut rng);
                        done.fetch_add(1, Ordering::Relaxed);
                        per_target[k].fetch_add(1, Ordering::Relaxed);
                        if trace {
                            // An abort (no unwinding) leaves this file naming its input.
                            let p = root().join(format!("target/fuzz-current-{w}"));
                            std::fs::write(&p, [t.name.as_bytes(), b"\n", &input].concat())
                                .unwrap();
                        }
                        let t0 = Instant::now();
                        let r = attempt(t, &input);
                        let took = t0.elapsed();
                        // An input that takes longer than HANG counts as a hang, as a panic does.
                        let r = match r {
                            Ok(_) if took > HANG => Err(format!("took {took:.1?} (a hang)")),
                            r => r,
                        };
                        match r {
                            Ok(true) => {
                                accepted[k].fetch_add(1, Ordering::Relaxed);
                            }
                            Ok(false) => {}
                            Err(p) => {
                                let dir = root().join("target/fuzz-failures").join(t.name);
                                std::fs::create_dir_all(&dir).unwrap();
                                let h = input.iter().fold(0xcbf29ce484222325u64, |h, &b| {
                                    (h ^ b as u64).wrapping_mul(0x100000001b3)
                                });
                                let path = dir.join(format!("{h:016x}"));
                                std::fs::write(&path, &input).unwrap();
                                errors.fetch_add(1, Ordering::Relaxed);
                                found
                                    .lock()
                                    .unwrap()
                                    .push(format!("{}: {p}", path.display()));
                            }
                        }
                    }
                })
                .unwrap();
        }
    });
    FUZZING.store(false, Ordering::Relaxed);
    let n = done.load(Ordering::Relaxed);
    let secs = start.elapsed().as_secs_f64();
    // Written to the terminal itself, past the test harness's capture, so CI logs show the count.
    let mut tty = std::io::stderr().lock();
    use std::io::Write;
    let _ = writeln!(
        tty,
        "fuzz: {n} mutated inputs in {secs:.1} s ({:.0}/s) over {} targets, seed {seed}; {} regression cases; {} panics or hangs",
        n as f64 / secs.max(1e-9),
        ts.len(),
        regression,
        errors.load(Ordering::Relaxed)
    );
    let _ = writeln!(
        tty,
        "  {:<28} {:>10} {:>10}",
        "target", "inputs", "accepted"
    );
    for ((t, c), a) in ts.iter().zip(&per_target).zip(&accepted) {
        let _ = writeln!(
            tty,
            "  {:<28} {:>10} {:>10}",
            t.name,
            c.load(Ordering::Relaxed),
            a.load(Ordering::Relaxed)
        );
    }
    let peak = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|t| {
            t.lines().find(|l| l.starts_with("VmHWM:")).map(|l| {
                l.split_whitespace()
                    .nth(1)
                    .unwrap_or("0")
                    .parse::<u64>()
                    .unwrap_or(0)
            })
        })
        .unwrap_or(0);
    let _ = writeln!(
        tty,
        "  peak memory of the fuzzing process: {} MB (limit for each input: {} MB)",
        peak / 1024,
        FUZZ_MEMORY_LIMIT >> 20
    );
    drop(tty);
    failures.extend(found.into_inner().unwrap());
    failures.sort();
    failures.dedup();
    assert!(
        failures.is_empty(),
        "{} inputs panicked (saved; copy them into tests/fuzz_cases/<target>/ once fixed):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The hand-built archive the treebank target starts from is a valid zip with its tree.
#[test]
fn the_treebank_seed_archive_reads() {
    let files =
        piecewise_lab::data::treebank::parse_treebank_bytes(&treebank_zip_seed(), "seed").unwrap();
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].name, "wsj_0001.mrg");
    assert_eq!(files[0].trees[0].words(), ["a", "b"]);
}
