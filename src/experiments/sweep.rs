//! Sweeps of SCL policies: a grid over λ, β (and optionally σ²) for one pair of component
//! families, each point an ordinary run directory, with an index (`sweep.json`) rewritten
//! atomically as points finish. A sweep started again in the same directory skips every point
//! whose run finished, so a crash loses no finished point and repeats none.
//!
//! 004's convention (§8.3): for families LOW/HIGH the selection probability λ and the weight β
//! belong to the higher-order family; the lower one is always selected with weight 1 − β:
//! `1:(1−β)*LOW + λ:β*HIGH`.

use crate::error::{Error, Result};
use crate::estimators::scl::{ComponentFamily, SelectionPolicy};
use crate::estimators::EstimatorSpec;
use crate::optim::Prior;
use crate::run::checkpoint::CheckpointPolicy;
use crate::run::store::Found;
use crate::run::{execute_with, Existing, RunFiles, RunSpec, RunSummary};
use crate::util::{read_json, write_atomic, write_json_atomic};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

/// What a sweep varies, around a base run spec.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct SweepSpec {
    /// Everything but the estimator's policy (and σ² when `sigma2s` is given).
    pub base: RunSpec,
    pub low: ComponentFamily,
    pub high: ComponentFamily,
    pub lambdas: Vec<f64>,
    pub betas: Vec<f64>,
    /// Prior variances to sweep too; empty keeps the base spec's prior.
    #[serde(default)]
    pub sigma2s: Vec<f64>,
    /// Points run at once (the base spec's threads are split between them).
    pub jobs: usize,
}

/// One point of the grid and where its run lives.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SweepPoint {
    pub lambda: f64,
    pub beta: f64,
    pub sigma2: Option<f64>,
    /// Run directory, relative to the sweep directory.
    pub dir: String,
    /// `finished` once its run finished; `pending` before; `failed` with the reason in the run.
    pub status: String,
}

/// `sweep.json`.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct SweepIndex {
    pub spec: SweepSpec,
    pub points: Vec<SweepPoint>,
}

/// The most points one sweep may have: each is a run directory and a training run.
pub const MAX_POINTS: usize = 10_000;

impl SweepSpec {
    /// Refuses a grid (from the command line or a `sweep.json`) that cannot be run: λ and β
    /// outside [0, 1], σ² ≤ 0, more than [`MAX_POINTS`] points, or a base spec out of range.
    pub fn check(&self) -> Result<()> {
        let prob = |x: &f64| (0.0..=1.0).contains(x);
        if self.lambdas.is_empty() || self.betas.is_empty() {
            return Err(Error::invalid("a sweep needs at least one λ and one β"));
        }
        if !self.lambdas.iter().all(prob) || !self.betas.iter().all(prob) {
            return Err(Error::invalid("λ and β must be in [0, 1]"));
        }
        if self.sigma2s.iter().any(|s| !(*s > 0.0 && s.is_finite())) {
            return Err(Error::invalid("σ² must be positive"));
        }
        let n = (self.lambdas.len())
            .saturating_mul(self.betas.len())
            .saturating_mul(self.sigma2s.len().max(1));
        if n > MAX_POINTS {
            return Err(Error::invalid(format!(
                "{n} points: a sweep has at most {MAX_POINTS} (one run directory each)"
            )));
        }
        crate::util::check_threads(self.jobs, "jobs")?;
        for p in self.points() {
            self.try_policy(p.lambda, p.beta)?;
        }
        self.base.check()
    }

    /// The policy of a point: `1:(1−β)*LOW + λ:β*HIGH` (every point's parses: [`Self::check`]).
    pub fn policy(&self, lambda: f64, beta: f64) -> SelectionPolicy {
        self.try_policy(lambda, beta)
            .expect("a policy SweepSpec::check accepted")
    }

    /// [`Self::policy`], or the error of a grid that was never checked (a `sweep.json` read
    /// from disk).
    pub fn try_policy(&self, lambda: f64, beta: f64) -> Result<SelectionPolicy> {
        let base = self.base.estimator.policy().cloned().unwrap_or_default();
        let text = format!(
            "1:{}*{} + {lambda}:{beta}*{}",
            1.0 - beta,
            self.low,
            self.high
        );
        SelectionPolicy::parse(&text, base.selection, self.base.seed)
    }

    /// Every point of the grid, in a fixed order.
    pub fn points(&self) -> Vec<SweepPoint> {
        let sigmas: Vec<Option<f64>> = if self.sigma2s.is_empty() {
            vec![None]
        } else {
            self.sigma2s.iter().map(|&s| Some(s)).collect()
        };
        let mut out = vec![];
        for &s in &sigmas {
            for &l in &self.lambdas {
                for &b in &self.betas {
                    let dir = match s {
                        Some(s) => format!("runs/l{l}-b{b}-s{s}"),
                        None => format!("runs/l{l}-b{b}"),
                    };
                    out.push(SweepPoint {
                        lambda: l,
                        beta: b,
                        sigma2: s,
                        dir,
                        status: "pending".into(),
                    });
                }
            }
        }
        out
    }

    fn run_spec(&self, p: &SweepPoint, threads: usize) -> RunSpec {
        let mut spec = self.base.clone();
        spec.estimator = EstimatorSpec::Scl {
            policy: self.policy(p.lambda, p.beta),
        };
        if let Some(s) = p.sigma2 {
            spec.prior = Prior { sigma2: Some(s) };
        }
        spec.name = Some(format!("λ={} β={}", p.lambda, p.beta));
        spec.threads = threads;
        spec.eval_train = true;
        spec
    }
}

/// What a sweep reports as it goes.
#[derive(Clone, Debug)]
pub enum SweepEvent {
    /// A finished point found from an earlier start.
    Skipped(SweepPoint),
    Finished(SweepPoint, Box<RunSummary>),
    Failed(SweepPoint, String),
}

/// The sweep's points with their status read off the runs in `dir` (finished ones reported as
/// skipped), after checking that `dir` holds no other sweep; writes the index.
fn open_index(
    spec: &SweepSpec,
    dir: &Path,
    on_event: &(dyn Fn(SweepEvent) + Sync),
) -> Result<Vec<SweepPoint>> {
    spec.check()?;
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let index_path = dir.join("sweep.json");
    let mut points = spec.points();
    if index_path.exists() {
        let old: SweepIndex = read_json(&index_path)?;
        if old.spec.points() != points || old.spec.low != spec.low || old.spec.high != spec.high {
            return Err(Error::file(
                index_path.display().to_string(),
                "this directory holds another sweep (other grid or families)",
            ));
        }
    }
    // A point is done when its run says so, whatever the index said when the sweep stopped.
    for p in &mut points {
        if let Ok(s) = RunFiles::at(dir.join(&p.dir)).summary() {
            if s.status == "finished" {
                p.status = "finished".into();
                on_event(SweepEvent::Skipped(p.clone()));
            }
        }
    }
    write_json_atomic(
        &index_path,
        &SweepIndex {
            spec: spec.clone(),
            points: points.clone(),
        },
    )?;
    Ok(points)
}

/// Writes the sweep's unfinished points as a plan (`dir/plan/stage-1.txt`, one `train` command
/// line per point) for a scheduler to run; `sweep` started again on `dir` then finds them
/// finished and writes the table.
pub fn plan_sweep(spec: &SweepSpec, dir: &Path) -> Result<super::plan::Plan> {
    let points = open_index(spec, dir, &|_| {})?;
    let runs: Vec<super::plan::PlannedRun> = points
        .iter()
        .map(|p| super::plan::PlannedRun {
            spec: spec.run_spec(p, spec.base.threads),
            dir: dir.join(&p.dir),
        })
        .collect();
    let finished: std::collections::HashSet<PathBuf> = points
        .iter()
        .filter(|p| p.status == "finished")
        .map(|p| dir.join(&p.dir))
        .collect();
    super::plan::write_plan(&runs, &dir.join("plan"), &|r| finished.contains(&r.dir))
}

/// The sweep in `dir` as it is, never training: its index and `sweep.csv` written from what
/// the points' run directories hold, and each point with what its directory holds.
pub fn collect_sweep(spec: &SweepSpec, dir: &Path) -> Result<Vec<(SweepPoint, Found)>> {
    let points = open_index(spec, dir, &|_| {})?;
    let mut index = SweepIndex {
        spec: spec.clone(),
        points,
    };
    refresh(dir, &mut index);
    write_json_atomic(&dir.join("sweep.json"), &index)?;
    write_atomic(&dir.join("sweep.csv"), sweep_csv(dir, &index).as_bytes())?;
    Ok(index
        .points
        .iter()
        .map(|p| {
            let run = spec.run_spec(p, spec.base.threads);
            (p.clone(), RunFiles::at(dir.join(&p.dir)).found(&run).0)
        })
        .collect())
}

/// Runs (or resumes) a sweep in `dir`. `cancel` stops it between points.
pub fn run_sweep(
    spec: &SweepSpec,
    dir: &Path,
    cancel: &AtomicBool,
    on_event: &(dyn Fn(SweepEvent) + Sync),
) -> Result<SweepIndex> {
    let points = open_index(spec, dir, on_event)?;
    let index_path = dir.join("sweep.json");
    let index = Mutex::new(SweepIndex {
        spec: spec.clone(),
        points,
    });
    let todo: Vec<usize> = index
        .lock()
        .unwrap()
        .points
        .iter()
        .enumerate()
        .filter(|(_, p)| p.status != "finished")
        .map(|(i, _)| i)
        .collect();
    let jobs = spec.jobs.max(1).min(todo.len().max(1));
    let total_threads = if spec.base.threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        spec.base.threads
    };
    let threads = (total_threads / jobs).max(1);
    let next = AtomicUsize::new(0);
    let io_error: Mutex<Option<Error>> = Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                if cancel.load(Ordering::Relaxed) {
                    return;
                }
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some(&i) = todo.get(k) else { return };
                let p = index.lock().unwrap().points[i].clone();
                // Another process (a second sweep on this folder) has it, or finished it.
                let run_dir = dir.join(&p.dir);
                if crate::run::store::is_claimed(&run_dir)
                    || crate::run::RunFiles::at(&run_dir).status().as_deref() == Some("finished")
                {
                    refresh(dir, &mut index.lock().unwrap());
                    continue;
                }
                let run = spec.run_spec(&p, threads);
                // No checkpoints: an unfinished point is trained again from its start here (the
                // plan's lines resume).
                let r = execute_with(
                    &run,
                    &dir.join(&p.dir),
                    Existing::Replace,
                    CheckpointPolicy::OFF,
                    cancel,
                    &mut |_| {},
                );
                let mut idx = index.lock().unwrap();
                idx.points[i].status = match &r {
                    Ok(_) => "finished".into(),
                    Err(Error::Cancelled) => "pending".into(),
                    Err(_) => "failed".into(),
                };
                refresh(dir, &mut idx);
                if let Err(e) = write_json_atomic(&index_path, &*idx) {
                    io_error.lock().unwrap().get_or_insert(e);
                }
                let point = idx.points[i].clone();
                drop(idx);
                match r {
                    Ok(summary) => on_event(SweepEvent::Finished(point, Box::new(summary))),
                    Err(e) => on_event(SweepEvent::Failed(point, e.to_string())),
                }
            });
        }
    });
    if let Some(e) = io_error.into_inner().unwrap() {
        return Err(e);
    }
    let mut index = index.into_inner().unwrap();
    refresh(dir, &mut index);
    write_json_atomic(&index_path, &index)?;
    write_atomic(&dir.join("sweep.csv"), sweep_csv(dir, &index).as_bytes())?;
    Ok(index)
}

/// Brings the index's statuses up to date with the run directories, which are the truth when
/// another process (a second `sweep` on the same folder, a plan's line) works on the same
/// points: a point whose run finished is finished, one another process is writing is running —
/// never "failed" because this process could not claim it.
fn refresh(dir: &Path, index: &mut SweepIndex) {
    for p in &mut index.points {
        let run = dir.join(&p.dir);
        if crate::run::store::is_claimed(&run) {
            p.status = "running".into();
        } else if RunFiles::at(&run)
            .summary()
            .is_ok_and(|s| s.status == "finished")
        {
            p.status = "finished".into();
        } else if p.status == "running" {
            // Its writer has stopped without finishing it.
            p.status = "pending".into();
        }
    }
}

/// Whether the sweep `name` of the workspace has every point finished.
pub fn sweep_finished(workspace: &Path, name: &str) -> bool {
    let dir = workspace.join("sweeps").join(name);
    let Ok(index) = read_json::<SweepIndex>(&dir.join("sweep.json")) else {
        return false;
    };
    index.points.iter().all(|p| {
        RunFiles::at(dir.join(&p.dir))
            .summary()
            .is_ok_and(|s| s.status == "finished")
    })
}

/// One finished point of a sweep.
#[derive(Clone, Debug)]
pub struct SweepRun {
    pub lambda: f64,
    pub beta: f64,
    pub sigma2: Option<f64>,
    pub dir: String,
    pub summary: RunSummary,
}

/// A sweep read from disk.
#[derive(Clone, Debug)]
pub struct SweepData {
    pub name: String,
    /// Its folder (its points' directories are relative to it).
    pub dir: PathBuf,
    pub families: String,
    pub runs: Vec<SweepRun>,
    pub total: usize,
}

/// Reads every sweep under `workspace/sweeps`, and the sweeps in `folders` (a folder that is a
/// sweep's `--out`, or holds some): the Frontier pane calls it off the GUI thread.
pub fn read_sweeps(workspace: &Path, folders: &[PathBuf]) -> Vec<SweepData> {
    let children = |root: &Path| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(root)
            .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        v.sort();
        v
    };
    let mut dirs = children(&workspace.join("sweeps"));
    for f in folders {
        dirs.push(f.clone());
        dirs.extend(children(f));
    }
    let mut out = vec![];
    let mut seen = std::collections::HashSet::new();
    for dir in dirs {
        if !seen.insert(dir.clone()) {
            continue;
        }
        let Ok(index) = read_json::<SweepIndex>(&dir.join("sweep.json")) else {
            continue;
        };
        let runs = index
            .points
            .iter()
            .filter_map(|p| {
                let s = RunFiles::at(dir.join(&p.dir)).summary().ok()?;
                (s.status == "finished").then(|| SweepRun {
                    lambda: p.lambda,
                    beta: p.beta,
                    sigma2: p.sigma2,
                    dir: p.dir.clone(),
                    summary: s,
                })
            })
            .collect();
        out.push(SweepData {
            dir: dir.clone(),
            name: dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            families: format!("{}/{}", index.spec.low, index.spec.high),
            runs,
            total: index.points.len(),
        });
    }
    out
}

/// The results of every finished point, one row each.
pub fn sweep_csv(dir: &Path, index: &SweepIndex) -> String {
    let header = [
        "lambda",
        "beta",
        "sigma2",
        "status",
        "iterations",
        "train_seconds",
        "paper_flops",
        "ops",
        "test_log_likelihood",
        "test_token_accuracy",
        "param_error",
        "run",
        "train_log_likelihood",
        "test_perplexity",
        "train_perplexity",
    ];
    let f = |x: Option<f64>| x.map(|v| v.to_string()).unwrap_or_default();
    let rows: Vec<Vec<String>> = index
        .points
        .iter()
        .map(|p| {
            let s = RunFiles::at(dir.join(&p.dir)).summary().ok();
            let s = s.as_ref();
            vec![
                p.lambda.to_string(),
                p.beta.to_string(),
                f(p.sigma2),
                p.status.clone(),
                s.map(|s| s.iterations.to_string()).unwrap_or_default(),
                f(s.map(|s| s.train_seconds)),
                f(s.and_then(|s| s.paper_flops)),
                s.map(|s| s.ops.to_string()).unwrap_or_default(),
                f(s.and_then(|s| s.test.as_ref()?.log_likelihood)),
                f(s.and_then(|s| s.test.as_ref().map(|m| m.token_accuracy))),
                f(s.and_then(|s| s.param_error)),
                PathBuf::from(&p.dir).display().to_string(),
                f(s.and_then(|s| s.train.as_ref()?.log_likelihood)),
                f(s.and_then(|s| s.test.as_ref()?.perplexity())),
                f(s.and_then(|s| s.train.as_ref()?.perplexity())),
            ]
        })
        .collect();
    crate::util::csv(&header, &rows)
}

/// The points that no other point beats on both axes, in order of complexity.
pub fn pareto(points: &[[f64; 2]], lower_is_better: bool) -> Vec<[f64; 2]> {
    let mut sorted: Vec<[f64; 2]> = points.to_vec();
    sorted.sort_by(|a, b| a[0].total_cmp(&b[0]).then(a[1].total_cmp(&b[1])));
    let better = |a: f64, b: f64| if lower_is_better { a < b } else { a > b };
    let mut out: Vec<[f64; 2]> = vec![];
    for p in sorted {
        if out.last().is_none_or(|q| better(p[1], q[1])) {
            out.push(p);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::pareto;

    #[test]
    fn pareto_keeps_the_points_nothing_beats() {
        let pts = [
            [1.0, 5.0],
            [2.0, 3.0],
            [3.0, 4.0],
            [4.0, 1.0],
            [2.5, 3.0],
            [0.5, 9.0],
        ];
        assert_eq!(
            pareto(&pts, true),
            vec![[0.5, 9.0], [1.0, 5.0], [2.0, 3.0], [4.0, 1.0]]
        );
        assert_eq!(pareto(&pts, false), vec![[0.5, 9.0]]);
    }
}
