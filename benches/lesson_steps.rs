//! Issue 66's wait in front of the room: what every lesson step computes, timed the way the
//! workbench computes it, against the 15 s a lecture can wait.
//!
//!     cargo bench -j 1 --bench lesson_steps [-- [--quick] [--reps N] [--lesson 06]]
//!
//! It reads every `assets/lessons/*.toml` and, step by step, runs what the GUI would:
//! - the step's `run`s, each spec built by `app::lessons::planned` (the Runs form's defaults and
//!   the step's knobs, on the step's data or the run's own — lesson 9's treebank) and trained by
//!   `run::execute::execute`, the call the Runs pane's worker makes; a run whose name an earlier
//!   step already launched is reused, as the GUI reuses it, and not timed again; runs of one step
//!   queue one after another (the Runs pane's default, one run at a time), so the step's wait is
//!   their sum;
//! - its started `sweep` (`experiments::sweep::run_sweep`, the Frontier pane's worker), once per
//!   name as the GUI trains it once;
//! - its Theory Monte Carlo when the step sets one (`mc_n`, `mc_reps`, `mc_lambdas` and the
//!   drawn orders): `Machine::relative_monte_carlo` per order and λ, as the Theory pane's
//!   *Run Monte Carlo* calls it.
//!
//! A run whose data is absent (a treebank in `../shared/data`) is listed as skipped. Each line
//! is the median of `--reps` repetitions (default 3; `--quick`: 1) in a fresh folder; the last
//! column is PASS or FAIL against 15 s. Not a test: the numbers are for a quiet machine.

use piecewise_lab::app::lesson_format::Lesson;
use piecewise_lab::app::lessons::planned;
use piecewise_lab::app::theory::TheoryPane;
use piecewise_lab::experiments::scl_theory::{mixture, Machine};
use piecewise_lab::experiments::sweep::run_sweep;
use piecewise_lab::run::execute::execute;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Instant;

/// The most a lesson step may keep a lecture waiting.
const LIMIT_SECONDS: f64 = 15.0;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Median seconds of `reps` calls of `f`, each given a fresh empty folder.
fn time(reps: usize, f: &dyn Fn(&Path) -> Result<(), String>) -> Result<f64, String> {
    let mut secs = vec![];
    for _ in 0..reps {
        let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
        let t = Instant::now();
        f(tmp.path())?;
        secs.push(t.elapsed().as_secs_f64());
    }
    Ok(median(secs))
}

struct Row {
    lesson: String,
    step: usize,
    what: String,
    seconds: Result<f64, String>,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let reps = if args.iter().any(|a| a == "--quick") {
        1
    } else {
        value("--reps").and_then(|r| r.parse().ok()).unwrap_or(3)
    };
    let only = value("--lesson");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("assets/lessons"))
        .expect("assets/lessons")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .filter(|p| {
            only.as_ref().is_none_or(|o| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(o.as_str()))
            })
        })
        .collect();
    files.sort();
    println!(
        "lesson steps: median of {reps} in a fresh folder each, {} threads available",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    println!(
        "{:<36} {:>4}  {:<40} {:>9}  verdict",
        "lesson", "step", "what", "seconds"
    );
    let cancel = AtomicBool::new(false);
    let mut rows = vec![];
    for file in &files {
        let name = file.file_stem().unwrap().to_string_lossy().into_owned();
        let lesson = match Lesson::read(file) {
            Ok(l) => l,
            Err(e) => {
                println!("{name}: {e}");
                continue;
            }
        };
        // Runs and sweeps the lesson launched at an earlier step: the GUI reuses them by name.
        let mut launched = BTreeSet::new();
        let mut swept = BTreeSet::new();
        for i in 0..lesson.steps.len() {
            let (runs, sweep) = planned(&lesson, i, &root);
            let mut step_rows = vec![];
            for (run, spec) in runs {
                if !launched.insert(run.clone()) {
                    continue;
                }
                let seconds = spec.and_then(|spec| {
                    time(reps, &|dir| {
                        execute(&spec, &dir.join(&run), &cancel, &mut |_| {})
                            .map(|_| ())
                            .map_err(|e| e.to_string())
                    })
                });
                step_rows.push((format!("run {run}"), seconds));
            }
            // A sweep the step starts (a step that only shows its form starts none), timed at
            // the first step that starts it.
            let fresh = sweep.is_some()
                && lesson
                    .state_at(i)
                    .sweep
                    .is_some_and(|w| swept.insert(w.name));
            if let Some(sweep) = sweep.filter(|_| fresh) {
                let seconds = sweep.and_then(|spec| {
                    time(reps, &|dir| {
                        run_sweep(&spec, dir, &cancel, &|_| {})
                            .map(|_| ())
                            .map_err(|e| e.to_string())
                    })
                });
                step_rows.push(("sweep".to_string(), seconds));
            }
            // The Monte Carlo of a step that sets it (a later step that only keeps the pane
            // shows the points already computed).
            let own = &lesson.steps[i].theory;
            if own.mc_n.is_some() || own.mc_reps.is_some() || own.mc_lambdas.is_some() {
                let t = lesson.state_at(i).theory;
                let d = TheoryPane::default();
                let (m, orders) = (t.m.unwrap_or(d.m), t.orders.unwrap_or(d.orders));
                let (n, r) = (t.mc_n.unwrap_or(d.mc_n), t.mc_reps.unwrap_or(d.mc_reps));
                let lambdas = t.mc_lambdas.unwrap_or(d.mc_lambdas);
                let seconds = monte_carlo(m, orders, d.selection, n, r, &lambdas, reps, &cancel);
                step_rows.push((format!("Monte Carlo n={n} reps={r} at {lambdas}"), seconds));
            }
            if step_rows.len() > 1 {
                let total = step_rows
                    .iter()
                    .filter_map(|(_, s)| s.as_ref().ok())
                    .sum::<f64>();
                step_rows.push(("the step's wait (sum)".to_string(), Ok(total)));
            }
            for (what, seconds) in step_rows {
                let row = Row {
                    lesson: name.clone(),
                    step: i + 1,
                    what,
                    seconds,
                };
                print_row(&row);
                rows.push(row);
            }
        }
    }
    let failed: Vec<&Row> = rows
        .iter()
        .filter(|r| r.seconds.as_ref().is_ok_and(|&s| s > LIMIT_SECONDS))
        .collect();
    println!(
        "{} timed, {} over {LIMIT_SECONDS} s, {} skipped",
        rows.iter().filter(|r| r.seconds.is_ok()).count(),
        failed.len(),
        rows.iter().filter(|r| r.seconds.is_err()).count()
    );
}

/// The Theory pane's Monte Carlo: every drawn order k (k < m) at every λ.
#[allow(clippy::too_many_arguments)]
fn monte_carlo(
    m: usize,
    orders: [bool; 3],
    selection: piecewise_lab::estimators::scl::Selection,
    n: usize,
    r: usize,
    lambdas: &str,
    reps: usize,
    cancel: &AtomicBool,
) -> Result<f64, String> {
    let ls: Vec<f64> = lambdas
        .split(',')
        .map(|s| s.trim().parse::<f64>().map_err(|e| format!("λ {s:?}: {e}")))
        .collect::<Result<_, _>>()?;
    let machine = Machine::new(m, None).map_err(|e| e.to_string())?;
    time(reps, &|_| {
        for k in (1..=3).filter(|&k| orders[k - 1] && k < m) {
            for &l in &ls {
                let policy = mixture(k, l, selection).map_err(|e| e.to_string())?;
                machine
                    .relative_monte_carlo(&policy, (n, r, 0), cancel, &|_| {})
                    .map_err(|e| e.to_string())?;
            }
        }
        Ok(())
    })
}

fn print_row(r: &Row) {
    let (secs, verdict) = match &r.seconds {
        Ok(s) if *s <= LIMIT_SECONDS => (format!("{s:.2}"), "PASS".to_string()),
        Ok(s) => (format!("{s:.2}"), "FAIL".to_string()),
        Err(e) => ("–".to_string(), format!("skipped: {e}")),
    };
    let what: String = r.what.chars().take(40).collect();
    println!(
        "{:<36} {:>4}  {:<40} {:>9}  {verdict}",
        r.lesson, r.step, what, secs
    );
}
