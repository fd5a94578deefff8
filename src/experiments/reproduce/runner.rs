//! Running an experiment's runs as ordinary run directories, reusing the finished ones whose
//! spec is unchanged.

use super::*;
use crate::error::{Error, Result};
use crate::run::spec::RunSpec;
use crate::run::Existing;
use crate::run::{execute_in, RunSummary};
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
            let s = execute_in(
                spec,
                &dir,
                Existing::Replace,
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

/// Where repetition `k` of a group runs: `OUT/runs/GROUP/K`. Group names carry their task
/// (`fcrf/pw`, `seminars/bp`), so experiments sharing runs (Tables 6, 7 and 9 on the seminars)
/// reuse them when they share an output folder.
pub fn run_dir(o: &Options, group: &str, k: usize) -> PathBuf {
    o.out.join("runs").join(group).join(k.to_string())
}

/// The run in `dir` when it finished with `spec` — the same spec but for its thread count,
/// which changes how long a run takes, not what it computes (so runs planned with
/// `--threads 1` for GNU parallel are reused by a `reproduce` on all cores).
pub(super) fn finished(dir: &Path, spec: &RunSpec) -> Option<RunSummary> {
    let files = crate::run::RunFiles::at(dir);
    let s = files.summary().ok()?;
    let mut old = files.spec_value().ok()?;
    let mut new = crate::util::versioned(serde_json::to_value(spec).ok()?);
    for v in [&mut old, &mut new] {
        if let Some(m) = v.as_object_mut() {
            m.remove("threads");
        }
    }
    (s.status == "finished" && old == new).then_some(s)
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
