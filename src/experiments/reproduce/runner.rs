//! Running an experiment's runs as ordinary run directories, reusing the finished ones whose
//! spec is unchanged.

use super::*;
use crate::error::{Error, Result};
use crate::run::checkpoint::CheckpointPolicy;
use crate::run::spec::RunSpec;
use crate::run::store::Found;
use crate::run::Existing;
use crate::run::{execute_with, RunSummary};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

/// Progress of a reproduction, for the caller to print.
pub enum Event<'a> {
    Reused(&'a str, usize),
    Started(&'a str, usize, usize, usize),
    Finished(&'a str, usize, &'a RunSummary),
}

/// Runs (or reuses) every run of the experiment; returns them by group.
pub fn run_all(e: &Experiment, o: &Options, on: &mut dyn FnMut(Event)) -> Result<Results> {
    let mut out = Results::new();
    let total: usize = e.groups.iter().map(|g| g.runs.len()).sum();
    let mut done = 0;
    for g in &e.groups {
        let mut rs = vec![];
        for (k, spec) in g.runs.iter().enumerate() {
            done += 1;
            let dir = run_dir(o, &g.name, k);
            if let Some(s) = finished(&dir, spec) {
                on(Event::Reused(&g.name, k));
                rs.push((dir, s));
                continue;
            }
            on(Event::Started(&g.name, k, done, total));
            // No checkpoints: a run left unfinished here is trained again from its start (the
            // plan's lines, `train --if-unfinished`, are the ones that resume).
            let s = execute_with(
                spec,
                &dir,
                Existing::Replace,
                CheckpointPolicy::OFF,
                &AtomicBool::new(false),
                &mut |_| {},
            )
            .map_err(|err| {
                Error::invalid(format!("{} run {k} ({}): {err}", g.name, dir.display()))
            })?;
            on(Event::Finished(&g.name, k, &s));
            rs.push((dir, s));
        }
        out.insert(g.name.clone(), rs);
    }
    Ok(out)
}

/// Every run of an experiment as it is on disk, never training: the finished ones by group
/// (for the report), and each run's state.
pub struct Collected {
    pub results: Results,
    /// (group, repetition, directory, state), in the experiment's order.
    pub runs: Vec<(String, usize, PathBuf, Found)>,
}

/// Reads what the experiment's run directories hold (see [`Collected`]).
pub fn collect(e: &Experiment, o: &Options) -> Collected {
    let mut c = Collected {
        results: Results::new(),
        runs: vec![],
    };
    for g in &e.groups {
        for (k, spec) in g.runs.iter().enumerate() {
            let dir = run_dir(o, &g.name, k);
            let (found, summary) = crate::run::RunFiles::at(&dir).found(spec);
            if let (Found::Finished, Some(s)) = (&found, summary) {
                c.results
                    .entry(g.name.clone())
                    .or_default()
                    .push((dir.clone(), s));
            }
            c.runs.push((g.name.clone(), k, dir, found));
        }
    }
    c
}

/// Where repetition `k` of a group runs: `OUT/runs/GROUP/K`. Group names carry their task
/// (`fcrf/pw`, `seminars/bp`), so experiments sharing runs (Tables 6, 7 and 9 on the seminars)
/// reuse them when they share an output folder.
pub fn run_dir(o: &Options, group: &str, k: usize) -> PathBuf {
    o.out.join("runs").join(group).join(k.to_string())
}

/// The run in `dir` when it finished with `spec` ([`crate::run::RunFiles::finished_with`]).
pub(super) fn finished(dir: &Path, spec: &RunSpec) -> Option<RunSummary> {
    crate::run::RunFiles::at(dir).finished_with(spec)
}

/// The experiment's unfinished runs as command lines for a scheduler
/// (`OUT/plan/NAME/stage-K.txt`); `reproduce NAME` afterwards collects them into the report.
pub fn plan(e: &Experiment, o: &Options) -> Result<crate::experiments::plan::Plan> {
    use crate::experiments::plan::{write_plan, PlannedRun};
    let runs: Vec<PlannedRun> = e
        .groups
        .iter()
        .flat_map(|g| {
            g.runs.iter().enumerate().map(|(k, spec)| PlannedRun {
                spec: spec.clone(),
                dir: run_dir(o, &g.name, k),
            })
        })
        .collect();
    write_plan(&runs, &o.out.join("plan").join(e.name), &|r| {
        finished(&r.dir, &r.spec).is_some()
    })
}
