//! Issue 22's guard: what one objective evaluation (value and gradient) costs per estimator on
//! the same instances, each local estimator against exact ML, and how much two threads buy.
//!
//!     cargo bench --bench hot_paths [-- [chunk] [ner] [ner-pair] [grid] [seg8] [--evals N] [--items N]
//!                                      [--estimators ml,pwpl] [--threads N]]
//!
//! Workloads (each skipped with a notice when its corpus is absent):
//! - `chunk`: CoNLL-2000 training set, the CRF++ chunking template, observed features, c2 = 1
//!   (the CRFsuite race's model): ml, pl, pwpl, memm, nota (exhaustive) and its variants
//!   (`nota-w0`, `nota-10%`, `nota-err`: see [`nota_pt`]), scl (default policy);
//! - `ner`: Dutch CoNLL-2002 `ned.train`, the `ner` extractor, edge factorisation, σ² = 10
//!   (001 Table 1's setting): ml, pwpl, memm, nota and its variants;
//! - `ner-pair`: the same with `edge-pair` factorisation, the papers' Ψ_t(y_t, y_{t−1}, x) whose
//!   state weights are per label pair, observed pairs (as `reproduce`'s NER) — where local terms
//!   read a slice of each edge table;
//! - `grid`: 40 generated 12×12 images of 4 classes (seeded), Potts pairwise: bp, pl, pwpl;
//! - `seg8`: 002 Table 3's segmentation grid — 40 generated 10×10 images of 7 classes with a
//!   per-pixel classifier's scores (σ = 1.3, seed 21), eight-connected, symmetric pairwise, no
//!   prior: `camel` (CAMEL's profiled dual, `train::camel::ProfiledCamel`). Its first line times
//!   the cold solve of δ from 0 (many sweeps); the medians are then warm evaluations at the same
//!   w (one sweep each, plus the clusters' values and gradient) — the inner loop's unit of work.
//!
//! Per workload it prints the setup (reading and feature extraction) seconds, a memory line (the
//! resident growth over setup per token, beside the weights' share), and per estimator
//! the plan seconds (terms and table reads, once per run), the median milliseconds of an
//! evaluation on 1 and 2 threads, the speed-up, and the ratio of its 2-thread time to ML's (BP's
//! on the grid); under each NOTA variant, its term count and the nanoseconds each NOTA term adds
//! to the MEMM's evaluation on one thread (the profile by difference). Medians of `--evals` evaluations (default 7) after one warm-up. Not a test:
//! the numbers are for a quiet machine, read as ratios.

use piecewise_lab::data::synth_loopy::GridGen;
use piecewise_lab::data::Corpus;
use piecewise_lab::estimators::camel_dual::{CamelObjective, ProfiledCamel};
use piecewise_lab::estimators::objective::DatasetObjective;
use piecewise_lab::estimators::EstimatorSpec;
use piecewise_lab::graph::chain::{ChainOptions, Extractor, Factorisation, FeatureSet};
use piecewise_lab::graph::grid::{GridOptions, Neighbourhood, Pairwise};
use piecewise_lab::graph::{Family, Instance};
use piecewise_lab::optim::Objective;
use piecewise_lab::optim::Prior;
use piecewise_lab::run::ModelSpec;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

struct Workload {
    name: &'static str,
    family: Arc<dyn Family>,
    instances: Vec<Instance>,
    estimators: Vec<&'static str>,
    prior: Prior,
    setup_seconds: f64,
    describe: String,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn shared() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data")
}

fn fit(
    name: &'static str,
    spec: ModelSpec,
    mut corpus: Corpus,
    items: Option<usize>,
    estimators: Vec<&'static str>,
    prior: Prior,
    started: Instant,
) -> Workload {
    if let Some(n) = items {
        corpus.sequences.truncate(n);
    }
    let (family, instances) = spec.fit(&corpus, None).expect("fit");
    Workload {
        name,
        describe: format!(
            "{} items, {} tokens · {}",
            corpus.sequences.len(),
            corpus.tokens(),
            family.describe()
        ),
        family,
        instances,
        estimators,
        prior,
        setup_seconds: started.elapsed().as_secs_f64(),
    }
}

fn chunk(items: Option<usize>) -> Option<Workload> {
    let path = shared().join("conll2000/train.txt");
    if !path.exists() {
        println!("chunk: {} not found; skipped", path.display());
        return None;
    }
    let t = Instant::now();
    let corpus = piecewise_lab::data::read_corpus(&path).unwrap();
    let spec = ModelSpec::LinearChain(ChainOptions {
        feature_set: FeatureSet::Observed,
        ..Default::default()
    });
    Some(fit(
        "chunk",
        spec,
        corpus,
        items,
        vec![
            "ml", "pl", "pwpl", "memm", "nota", "nota-w0", "nota-10%", "nota-err", "scl",
        ],
        Prior::from_c2(1.0),
        t,
    ))
}

fn ner(items: Option<usize>) -> Option<Workload> {
    ner_with("ner", Factorisation::Edge, items)
}

fn ner_pair(items: Option<usize>) -> Option<Workload> {
    ner_with("ner-pair", Factorisation::EdgePair, items)
}

/// Dutch NER with `factorisation`: `edge` shares each state feature's weights across source
/// labels; `edge-pair` is the papers' Ψ_t(y_t, y_{t−1}, x) with weights per label pair.
fn ner_with(
    name: &'static str,
    factorisation: Factorisation,
    items: Option<usize>,
) -> Option<Workload> {
    let path = shared().join("conll2002-ned/ned.train");
    if !path.exists() {
        println!("{name}: {} not found; skipped", path.display());
        return None;
    }
    let t = Instant::now();
    let corpus = piecewise_lab::data::read_corpus(&path).unwrap();
    let spec = ModelSpec::LinearChain(ChainOptions {
        // Every (feature, label pair) would be 81× the weights: the papers keep the pairs seen.
        feature_set: if factorisation == Factorisation::EdgePair {
            FeatureSet::Observed
        } else {
            FeatureSet::All
        },
        factorisation,
        extractor: Extractor::Ner,
        lexicons: Some(shared().join("lexicons")),
        ..Default::default()
    });
    Some(fit(
        name,
        spec,
        corpus,
        items,
        vec![
            "ml", "pwpl", "memm", "nota", "nota-w0", "nota-10%", "nota-err",
        ],
        Prior { sigma2: Some(10.0) },
        t,
    ))
}

/// `n` images of `gen` from `seed`, as a corpus.
fn generated(gen: &GridGen, n: usize, seed: u64) -> Corpus {
    let images = gen.images(n, seed).unwrap();
    Corpus {
        path: "generated".into(),
        n_columns: images[0].columns.first().map_or(0, |c| c.len()) + 1,
        sequences: images,
    }
}

fn grid(items: Option<usize>) -> Option<Workload> {
    let t = Instant::now();
    let gen = GridGen {
        classes: 4,
        height: 12,
        width: 12,
        ..Default::default()
    };
    let corpus = generated(&gen, items.unwrap_or(40), 1);
    Some(fit(
        "grid",
        ModelSpec::Grid(Default::default()),
        corpus,
        None,
        vec!["bp", "pl", "pwpl"],
        Prior { sigma2: Some(10.0) },
        t,
    ))
}

fn seg8(items: Option<usize>) -> Option<Workload> {
    let t = Instant::now();
    let gen = GridGen {
        classes: 7,
        height: 10,
        width: 10,
        noise: 1.3,
        scores: true,
        ..Default::default()
    };
    let corpus = generated(&gen, items.unwrap_or(40), 21);
    Some(fit(
        "seg8",
        ModelSpec::Grid(GridOptions {
            pairwise: Pairwise::Symmetric,
            neighbourhood: Neighbourhood::Eight,
        }),
        corpus,
        None,
        vec!["camel"],
        Prior { sigma2: None },
        t,
    ))
}

/// Small nonzero weights, the same for every estimator.
fn test_weights(n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| ((i * 2654435761) % 1000) as f64 * 1e-4 - 0.05)
        .collect()
}

/// CAMEL's profiled dual: (cold δ solve seconds, median warm evaluation seconds).
fn measure_camel(w: &Workload, threads: usize, evals: usize) -> (f64, f64) {
    let model = w.family.model();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("thread pool");
    pool.install(|| {
        let dual = CamelObjective::new(model, &w.instances, w.prior);
        let profiled = ProfiledCamel::new(&dual, vec![0.0; dual.n_delta()], 1e-4, 1000);
        let theta = test_weights(model.n_params);
        let mut grad = vec![0.0; model.n_params];
        let t = Instant::now();
        profiled.evaluate(&theta, Some(&mut grad));
        let cold = t.elapsed().as_secs_f64();
        let times = (0..evals)
            .map(|_| {
                let t = Instant::now();
                profiled.evaluate(&theta, Some(&mut grad));
                t.elapsed().as_secs_f64()
            })
            .collect();
        (cold, median(times))
    })
}

/// NOTA by its variant's name here: `nota` (exhaustive, w = 1), `nota-w0` (every NOTA term at
/// weight 0: the cost of terms that weigh nothing), `nota-10%` (sampled, 001's 10 %),
/// `nota-err` (003's error-driven choice, from the CRF's marginals at the test weights — which
/// are nearly uniform, so the threshold is 1.5/L rather than 003's 0.2 of trained weights, for
/// a realistic share of the exhaustive terms); `None` for other estimators.
fn nota_pt(w: &Workload, name: &str) -> Option<piecewise_lab::estimators::memm::NotaPt> {
    use piecewise_lab::estimators::memm::{choose_by_marginals, NotaPt};
    use piecewise_lab::estimators::NotaSelection;
    Some(match name {
        "nota" => NotaPt::new(NotaSelection::Exhaustive, 1.0),
        "nota-w0" => NotaPt::new(NotaSelection::Exhaustive, 0.0),
        "nota-10%" => NotaPt::new(
            NotaSelection::Sampled {
                fraction: 0.1,
                seed: 1,
            },
            1.0,
        ),
        "nota-err" => {
            let theta = test_weights(w.family.model().n_params);
            let fam = w.family.as_ref();
            let l = w.instances[0].chain.as_ref().map_or(2, |c| c.l) as f64;
            let choice = choose_by_marginals(&w.instances, 1.5 / l, |inst, tr| {
                let phi = piecewise_lab::eval::tables(fam, &theta, inst);
                if let Some(lay) = &inst.chain {
                    tr.fill(inst, lay, &phi);
                    tr.forward_backward();
                }
            });
            NotaPt {
                selection: NotaSelection::error_driven(),
                chosen: Some(Arc::new(choice)),
                weight: 1.0,
            }
        }
        _ => return None,
    })
}

type Estimator = Box<dyn piecewise_lab::estimators::Estimator>;

/// An estimator by its name, built once for every measurement of it: NOTA's variants
/// ([`nota_pt`]) with their NOTA term count and whether those terms are built (w > 0), else
/// the registry's; `None` for `camel` (its own objective).
fn estimator(w: &Workload, name: &str) -> Option<(Estimator, Option<(usize, bool)>)> {
    if name == "camel" {
        return None;
    }
    Some(match nota_pt(w, name) {
        Some(n) => {
            let k = (n.count(&w.instances), n.weight > 0.0);
            (Box::new(n), Some(k))
        }
        None => (
            EstimatorSpec::from_name(name)
                .and_then(|e| e.build(w.family.model()))
                .expect("estimator"),
            None,
        ),
    })
}

/// The process's resident memory in bytes (Linux; 0 elsewhere).
fn resident_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

/// (plan seconds, median evaluation seconds) of `est` (CAMEL when `None`) on `threads`
/// threads.
fn measure(w: &Workload, est: Option<&Estimator>, threads: usize, evals: usize) -> (f64, f64) {
    let Some(est) = est else {
        return measure_camel(w, threads, evals);
    };
    let model = w.family.model();
    let t = Instant::now();
    let obj = DatasetObjective::new(model, &w.instances, est.as_ref(), w.prior, threads)
        .expect("objective");
    let plan = t.elapsed().as_secs_f64();
    let theta = test_weights(model.n_params);
    let mut grad = vec![0.0; model.n_params];
    obj.evaluate(&theta, Some(&mut grad));
    let times = (0..evals)
        .map(|_| {
            let t = Instant::now();
            obj.evaluate(&theta, Some(&mut grad));
            t.elapsed().as_secs_f64()
        })
        .collect();
    (plan, median(times))
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse::<usize>().ok())
    };
    let evals = value("--evals").unwrap_or(7).max(1);
    let items = value("--items");
    let named: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .filter(|a| matches!(*a, "chunk" | "ner" | "ner-pair" | "grid" | "seg8"))
        .collect();
    let wanted = |w: &str| named.is_empty() || named.contains(&w);
    // `--estimators ml,pwpl` measures only those (for profiling one of them).
    let only: Option<Vec<String>> = args
        .iter()
        .position(|a| a == "--estimators")
        .and_then(|i| args.get(i + 1))
        .map(|v| v.split(',').map(str::to_string).collect());
    // `--threads N` measures N threads only (a profile of one configuration).
    let threads_only = value("--threads");
    println!(
        "hot paths: median of {evals} evaluations (value + gradient), {} cores",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    type Make = fn(Option<usize>) -> Option<Workload>;
    let makers: [(&str, Make); 5] = [
        ("chunk", chunk),
        ("ner", ner),
        ("ner-pair", ner_pair),
        ("grid", grid),
        ("seg8", seg8),
    ];
    for (name, make) in makers {
        if !wanted(name) {
            continue;
        }
        let before = resident_bytes();
        let Some(w) = make(items) else { continue };
        let after = resident_bytes();
        let tokens: usize = w.instances.iter().map(|i| i.n_vars()).sum();
        println!("\n== {} — {}", w.name, w.describe);
        println!(
            "setup (read, extract features, unroll): {:.2} s",
            w.setup_seconds
        );
        // The memory line: what the corpus, its features and instances and the model hold,
        // per token (resident growth over setup; the weights are 8 bytes each of them).
        println!(
            "memory: {:.1} MB resident over setup for {tokens} tokens = {:.0} bytes per token \
             ({} weights: {:.1} MB of them)",
            after.saturating_sub(before) as f64 / 1e6,
            after.saturating_sub(before) as f64 / tokens.max(1) as f64,
            w.family.model().n_params,
            8.0 * w.family.model().n_params as f64 / 1e6
        );
        // How much a table cache shared across items could save: the table parts built per
        // evaluation against the distinct (template, observations) among them.
        let mut distinct = std::collections::HashSet::new();
        let (mut parts, mut reads) = (0usize, 0usize);
        for inst in &w.instances {
            for slot in &inst.slots {
                for part in inst.parts(slot) {
                    let (f, v) = inst.obs(part);
                    parts += 1;
                    reads += f.len();
                    let key: Vec<u64> = std::iter::once(part.template as u64)
                        .chain(f.iter().map(|&k| k as u64))
                        .chain(v.iter().map(|x| x.to_bits()))
                        .collect();
                    distinct.insert(key);
                }
            }
        }
        println!(
            "table parts per evaluation: {parts} ({reads} weight rows); distinct: {} ({:.1}×)",
            distinct.len(),
            parts as f64 / distinct.len().max(1) as f64
        );
        println!(
            "{:<8} {:>8} {:>12} {:>12} {:>8} {:>10}",
            "", "plan s", "1 thread ms", "2 threads ms", "speedup", "× first"
        );
        let mut first = None;
        let mut memm = None;
        for est in &w.estimators {
            if only.as_ref().is_some_and(|o| !o.iter().any(|x| x == est)) {
                continue;
            }
            let built = estimator(&w, est);
            let (estimator, nota) = match &built {
                Some((e, k)) => (Some(e), *k),
                None => (None, None),
            };
            if let Some(n) = threads_only {
                let (plan, t) = measure(&w, estimator, n, evals);
                println!("{est:<8} {plan:>8.2} {:>12.2} ms on {n} threads", t * 1e3);
                continue;
            }
            let (plan, t1) = measure(&w, estimator, 1, evals);
            let (_, t2) = measure(&w, estimator, 2, evals);
            let base = *first.get_or_insert(t2);
            if *est == "memm" {
                memm = Some(t1);
            }
            println!(
                "{:<8} {:>8.2} {:>12.2} {:>12.2} {:>8.2} {:>10.2}",
                est,
                plan,
                t1 * 1e3,
                t2 * 1e3,
                t1 / t2,
                t2 / base
            );
            // NOTA's profile by difference: what its terms add to the MEMM's evaluation (the
            // same position terms, each normalised with NOTA), per NOTA term, on one thread.
            if let (Some(m), Some((k, built))) = (memm, nota.filter(|n| n.0 > 0)) {
                println!(
                    "{:<8} {k} NOTA terms{}: {:.1} ns each over the MEMM's evaluation (1 thread); {:.2}× the MEMM",
                    "",
                    if built { "" } else { " selected, none built at w = 0" },
                    (t1 - m) * 1e9 / k as f64,
                    t1 / m
                );
            }
        }
    }
}
