//! `reproduce`, `sweep` and `theory`: experiments over many runs, and SCL's asymptotics.

use super::knobs::{run_spec, ExperimentKnobs, RunKnobs, SclKnobs};
use super::parse_list;
use crate::error::{Error, Result};
use clap::Args;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

/// Runs for a cluster, the same for `reproduce` and `sweep` (docs/cluster.md).
#[derive(Args)]
pub struct ClusterArgs {
    /// Do not run: write the unfinished runs as command lines, one per run
    /// (OUT/plan/…/stage-K.txt), for a scheduler (Slurm array, GNU parallel); then --collect.
    #[arg(long)]
    pub plan: bool,
    /// Do not train: read what the runs' folders hold, write the report (or the sweep's table)
    /// from the finished runs, list every run that is not finished (running with its host,
    /// failed with its reason, interrupted, missing), and fail when any is not.
    #[arg(long, conflicts_with = "plan")]
    pub collect: bool,
    /// With --plan: also a Slurm job array per stage (stage-K.sbatch beside the line files) and
    /// submit.sh, which submits them with each stage after the one before.
    #[arg(long, requires = "plan")]
    pub slurm: bool,
    /// With --slurm: runs one array task does one after another.
    #[arg(long, default_value_t = 1, requires = "slurm")]
    pub runs_per_task: usize,
}

#[derive(Args)]
pub struct ReproduceArgs {
    /// The experiment (see --list).
    pub name: Option<String>,
    /// List the experiments.
    #[arg(long)]
    pub list: bool,
    /// A reduced version (few items, one repetition, few iterations) that checks the
    /// machinery; the numbers mean nothing.
    #[arg(long)]
    pub quick: bool,
    /// Output folder (default: reproductions, or reproductions-quick with --quick).
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// The shared corpora.
    #[arg(long, default_value = "../shared/data")]
    pub data: PathBuf,
    /// Worker threads per run (0: all cores).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// The experiments' own options (001-table2's).
    #[command(flatten)]
    pub experiment: ExperimentKnobs,
}

pub fn reproduce(a: ReproduceArgs) -> Result<()> {
    let ReproduceArgs {
        name,
        list,
        quick,
        out,
        cluster:
            ClusterArgs {
                plan,
                collect,
                slurm,
                runs_per_task,
            },
        data,
        threads,
        experiment,
    } = a;
    use crate::experiments::reproduce::{self, Build, Event, Options, EXPERIMENTS};
    crate::util::check_threads(threads, "--threads")?;
    let name = match (name, list) {
        (Some(n), false) => n,
        _ => {
            for e in EXPERIMENTS {
                outln!("{:<12} {}", e.name, e.line)?;
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
        settings: experiment.0,
    };
    if let Build::InProcess { why, knobs, run } = &reproduce::entry(&name)?.build {
        if plan || collect {
            return Err(Error::invalid(format!(
                "{name} trains in one process ({why}): it has no --plan or --collect; run it on one machine"
            )));
        }
        // Checked before the long work: a value out of range is an error naming its flag.
        for k in knobs.iter() {
            if o.settings.given(k.name) {
                k.check(o.settings.get(k))?;
            }
        }
        let md = run(&o, &mut |m| eprintln!("  {m}"))?;
        outln!("{md}")?;
        eprintln!("report: {}", o.out.join(format!("{name}.md")).display());
        return Ok(());
    }
    let e = reproduce::experiment(&name, &o)?;
    if collect {
        return collect_runs(&e, &o);
    }
    if plan {
        use crate::experiments::plan::{check_slurm, shell_word};
        let dir = o.out.join("plan").join(&name);
        let slurm = slurm.then(|| slurm_options(&name, runs_per_task, threads));
        // Refused before the plan is written: a refused --slurm writes nothing.
        if let Some(so) = &slurm {
            check_slurm(&dir, so)?;
        }
        let p = reproduce::plan(&e, &o)?;
        for line in p.lines() {
            outln!("{line}")?;
        }
        if let Some(so) = &slurm {
            slurm_scripts(&p, &dir, so)?;
        }
        let mut again = format!(
            "piecewise-lab reproduce {} --out {}",
            shell_word(&name),
            shell_word(&o.out.to_string_lossy())
        );
        if quick {
            again.push_str(" --quick");
        }
        again.push_str(" --collect");
        eprintln!("{}", crate::experiments::plan::describe(&p, &again));
        return Ok(());
    }
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
    let date = crate::provenance::now_rfc3339();
    let md = reproduce::report(&e, &o, &results, &date)?;
    outln!("{md}")?;
    eprintln!("report: {}", o.out.join(format!("{}.md", e.name)).display());
    Ok(())
}

#[derive(Args)]
pub struct SweepArgs {
    #[command(flatten)]
    pub run: RunKnobs,
    /// LOW/HIGH component families, e.g. pl1/fl or pl1/pl2.
    #[arg(long, default_value = "pl1/pl2")]
    pub families: String,
    /// Selection probabilities λ of the higher family, comma-separated.
    #[arg(long, default_value = "0,0.25,0.5,0.75,1")]
    pub lambdas: String,
    /// Weights β of the higher family (the lower one has 1 − β), comma-separated.
    #[arg(long, default_value = "0,0.25,0.5,0.75,1")]
    pub betas: String,
    /// Prior variances σ² to sweep too, comma-separated (default: the run's prior only).
    #[arg(long)]
    pub sigma2s: Option<String>,
    /// Selection model.
    #[arg(long, value_enum, default_value_t = crate::estimators::scl::Selection::Independent)]
    pub selection: crate::estimators::scl::Selection,
    /// Points run at once (the --threads budget is split between them).
    #[arg(long, default_value_t = 2)]
    pub jobs: usize,
    /// Sweep directory (resumed when it exists).
    #[arg(long)]
    pub out: PathBuf,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

pub fn sweep(a: SweepArgs) -> Result<()> {
    use crate::estimators::scl::ComponentFamily;
    use crate::experiments::sweep::{run_sweep, SweepEvent, SweepSpec};
    let (low, high) = a
        .families
        .split_once('/')
        .ok_or_else(|| Error::invalid("--families is LOW/HIGH, e.g. pl1/fl"))?;
    let mut run = a.run.0.clone();
    run.set(crate::settings::ESTIMATOR, "scl");
    run.set(
        crate::estimators::settings::SELECTION.name,
        crate::settings::choice_name(&a.selection),
    );
    let base = run_spec(&run)?;
    crate::util::check_threads(a.jobs, "--jobs")?;
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
    if a.cluster.collect {
        let points = crate::experiments::sweep::collect_sweep(&spec, &a.out)?;
        eprintln!("table: {}", a.out.join("sweep.csv").display());
        return unfinished(
            "points of the sweep",
            points.iter().map(|(p, found)| {
                let at = format!(
                    "λ={} β={} ({})",
                    p.lambda,
                    p.beta,
                    a.out.join(&p.dir).display()
                );
                (at, found)
            }),
        );
    }
    if a.cluster.plan {
        let dir = a.out.join("plan");
        let slurm = a.cluster.slurm.then(|| {
            let name = a
                .out
                .file_name()
                .map_or("sweep".into(), |n| n.to_string_lossy().into_owned());
            slurm_options(&name, a.cluster.runs_per_task, spec.base.threads)
        });
        // Refused before the sweep's index and plan are written: a refused --slurm writes
        // nothing.
        if let Some(so) = &slurm {
            crate::experiments::plan::check_slurm(&dir, so)?;
        }
        let p = crate::experiments::sweep::plan_sweep(&spec, &a.out)?;
        for line in p.lines() {
            outln!("{line}")?;
        }
        if let Some(so) = &slurm {
            slurm_scripts(&p, &dir, so)?;
        }
        eprintln!(
            "{}",
            crate::experiments::plan::describe(&p, "the same sweep command with --collect")
        );
        return Ok(());
    }
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

#[derive(Args)]
pub struct TheoryArgs {
    #[arg(long, default_value_t = 5)]
    pub m: usize,
    /// Couplings θ0 (as for `generate boltzmann`; default 004's for m = 5).
    #[arg(long, allow_hyphen_values = true)]
    pub theta: Option<String>,
    #[command(flatten)]
    pub scl: SclKnobs,
    /// Check the theory by simulation: fit the policy this many times on fresh samples from
    /// θ0 and print the fits' relative det and trace with 95 % intervals (the Theory pane's
    /// Monte Carlo points).
    #[arg(long, value_name = "FITS")]
    pub monte_carlo: Option<usize>,
    /// Samples per Monte Carlo data set.
    #[arg(long, default_value_t = 1000)]
    pub monte_carlo_n: usize,
    #[arg(long)]
    pub json: bool,
}

pub fn theory(a: TheoryArgs) -> Result<()> {
    let TheoryArgs {
        m,
        theta,
        scl,
        monte_carlo,
        monte_carlo_n,
        json,
    } = a;
    if let Some(r) = monte_carlo {
        if !(2..=10_000).contains(&r) {
            return Err(Error::invalid("--monte-carlo: between 2 and 10000 fits"));
        }
        if !(10..=1_000_000).contains(&monte_carlo_n) {
            return Err(Error::invalid(
                "--monte-carlo-n: between 10 and 1000000 samples",
            ));
        }
    }
    use crate::experiments::scl_theory::Machine;
    if !(2..=12).contains(&m) {
        return Err(Error::invalid(
            "theory enumerates 2^m states: m must be in 2..=12",
        ));
    }
    let couplings = theta
        .as_deref()
        .map(|t| parse_list(t, "--theta"))
        .transpose()?;
    let machine = Machine::new(m, couplings.as_deref())?;
    let policy = crate::estimators::SelectionPolicy::from_settings(&scl.0, 0)?;
    // Each family's components and their FLOPs when all are selected.
    let rows: Vec<(String, usize, f64)> = policy
        .groups
        .iter()
        .flatten()
        .map(|part| {
            let (c, per) = machine.family_flops(part.family);
            (part.family.to_string(), c, per)
        })
        .collect();
    let flops = machine.expected_flops(&policy);
    let e = machine.efficiency(&policy)?;
    let mc = monte_carlo
        .map(|reps| {
            machine.relative_monte_carlo(
                &policy,
                (monte_carlo_n, reps, 0),
                &AtomicBool::new(false),
                // Progress on stderr about every tenth of the fits (each count comes once).
                &|k| {
                    if k % (reps / 10).max(1) == 0 {
                        eprintln!("Monte Carlo: {k} of {reps} fits");
                    }
                },
            )
        })
        .transpose()?;
    if json {
        outln!(
            "{}",
            serde_json::json!({"m": m, "policy": policy.to_string(), "selection": policy.selection,
                "expected_flops_per_example": flops, "efficiency": e, "monte_carlo": mc})
        )?;
    } else {
        outln!(
            "Boltzmann machine, m = {m}, policy {policy} ({:?} selection)",
            policy.selection
        )?;
        for (f, c, per) in rows {
            outln!("  {f}: {c} components, {per} FLOPs per example when all are selected")?;
        }
        outln!("expected FLOPs per example: {flops}")?;
        outln!(
            "relative efficiency (det, 004 eq. 8): paper's form {:.4}, exact form {:.4}",
            e.det_paper,
            e.det_exact
        )?;
        outln!(
            "relative trace: paper's form {:.4}, exact form {:.4}",
            e.trace_paper,
            e.trace_exact
        )?;
        if let Some(mc) = &mc {
            let ci = |(a, b): (f64, f64)| format!("[{a:.4}, {b:.4}]");
            outln!(
                "Monte Carlo ({} fits of n = {}; 95 % jackknife intervals): relative det {}, \
                 relative trace {:.4} {}",
                mc.reps,
                mc.n,
                match (mc.det, mc.det_ci) {
                    (Some(d), Some(c)) => format!("{d:.4} {}", ci(c)),
                    (Some(d), None) => format!("{d:.4}"),
                    _ => format!(
                        "none ({} fits of {} parameters are singular)",
                        mc.reps, mc.dim
                    ),
                },
                mc.trace,
                ci(mc.trace_ci)
            )?;
        }
    }
    Ok(())
}

/// `reproduce NAME --collect`: the report from the finished runs and the state of the others;
/// trains nothing.
fn collect_runs(
    e: &crate::experiments::reproduce::Experiment,
    o: &crate::experiments::reproduce::Options,
) -> Result<()> {
    use crate::experiments::reproduce;
    let c = reproduce::collect(e, o);
    let md = reproduce::report(e, o, &c.results, &crate::provenance::now_rfc3339())?;
    outln!("{md}")?;
    eprintln!("report: {}", o.out.join(format!("{}.md", e.name)).display());
    unfinished(
        &format!("runs of {}", e.name),
        c.runs
            .iter()
            .map(|(g, k, dir, found)| (format!("{g} {k} ({})", dir.display()), found)),
    )
}

/// Lists the runs (or points) collecting found not finished, each with its state, and fails
/// when there is any.
fn unfinished<'a>(
    what: &str,
    runs: impl Iterator<Item = (String, &'a crate::run::store::Found)>,
) -> Result<()> {
    let mut total = 0;
    let open: Vec<(String, &crate::run::store::Found)> = runs
        .inspect(|_| total += 1)
        .filter(|(_, f)| **f != crate::run::store::Found::Finished)
        .collect();
    if open.is_empty() {
        eprintln!("all {total} {what} finished");
        return Ok(());
    }
    eprintln!("{} of {total} {what} are not finished:", open.len());
    for (at, found) in &open {
        eprintln!("  {at}: {found}");
    }
    Err(Error::invalid(format!(
        "{} of {total} {what} are not finished",
        open.len()
    )))
}

/// What `--slurm` asks of the job arrays.
fn slurm_options(
    name: &str,
    runs_per_task: usize,
    threads: usize,
) -> crate::experiments::plan::SlurmOptions {
    crate::experiments::plan::SlurmOptions {
        name: name.to_string(),
        runs_per_task,
        cpus_per_task: threads,
    }
}

/// `--plan --slurm`: the stages as Slurm job arrays beside the line files, and what to type.
fn slurm_scripts(
    p: &crate::experiments::plan::Plan,
    dir: &std::path::Path,
    o: &crate::experiments::plan::SlurmOptions,
) -> Result<()> {
    use crate::experiments::plan::{shell_word, write_slurm};
    if p.stages.is_empty() {
        return Ok(());
    }
    let files = write_slurm(p, dir, o)?;
    for f in &files {
        eprintln!("slurm: {}", f.display());
    }
    eprintln!(
        "submit every stage, each after the one before: bash {}",
        shell_word(&dir.join("submit.sh").to_string_lossy())
    );
    Ok(())
}
