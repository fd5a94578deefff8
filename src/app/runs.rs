//! Runs in the workspace: launching them on background threads, draining their events, and
//! reloading finished ones from disk. A run is a directory written by [`crate::run::execute`]
//! (through the run store: spec, curve, summary, model files); the GUI reads nothing else.

use crate::eval::metrics::Metrics;
use crate::run::spec::RunSpec;
use crate::run::summary::{CurvePoint, RunEvent, RunSummary};
use crate::run::RunFiles;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver};
use std::sync::Arc;
use std::time::Instant;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunStatus {
    /// Launched, waiting in the queue for its turn (see [`Runs::runs_at_once`]).
    Queued,
    /// Reading data and building features.
    Setup,
    Running,
    Finished,
    Failed,
    Cancelled,
    /// Found on disk marked running: the program that ran it stopped.
    Interrupted,
    /// Found on disk marked running, and another process is still writing it.
    Elsewhere,
    /// Its files cannot be read (a damaged `spec.json`, `model.json` or weights): `error` says
    /// why; the rest of the workbench carries on.
    Broken,
}

impl RunStatus {
    pub fn label(self) -> &'static str {
        match self {
            RunStatus::Queued => "queued",
            RunStatus::Setup => "setting up",
            RunStatus::Running => "running",
            RunStatus::Finished => "finished",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Elsewhere => "running in another process",
            RunStatus::Broken => "broken",
        }
    }
    /// Not yet ended: queued, setting up or running.
    pub fn is_live(self) -> bool {
        matches!(
            self,
            RunStatus::Queued | RunStatus::Setup | RunStatus::Running
        )
    }
    /// Holding cores: setting up or running (a queued run waits for one of these to end).
    pub fn is_started(self) -> bool {
        matches!(self, RunStatus::Setup | RunStatus::Running)
    }
}

/// A live run's connection to its thread.
pub(super) struct Live {
    rx: Receiver<RunEvent>,
    cancel: Arc<AtomicBool>,
    started: Instant,
}

/// One run of the workspace.
pub struct RunEntry {
    /// Directory name; unique in the workspace.
    pub id: String,
    pub dir: PathBuf,
    pub spec: RunSpec,
    pub status: RunStatus,
    pub summary: Option<RunSummary>,
    pub curve: Vec<CurvePoint>,
    /// Latest held-out metrics (final ones once finished).
    pub metrics: Option<Metrics>,
    pub error: Option<String>,
    /// Wall seconds since launch, evaluations included (live runs; 0 for runs read from disk).
    /// The seconds the app shows are [`train_seconds`](Self::train_seconds).
    pub elapsed: f64,
    /// The opened folder it was found in (`None`: the workspace's runs).
    pub folder: Option<PathBuf>,
    pub(super) live: Option<Live>,
}

impl RunEntry {
    /// The run's spec with its data paths resolved where the run was started (its
    /// provenance's working folder), as `compare --runs` reads them.
    pub fn spec_as_started(&self) -> crate::run::RunSpec {
        let cwd = self
            .summary
            .as_ref()
            .and_then(|s| s.provenance.as_ref())
            .map_or("", |p| p.cwd.as_str());
        self.spec.clone().with_paths_from(std::path::Path::new(cwd))
    }

    /// A run directory that cannot be read, listed with the reason.
    pub(super) fn broken(dir: &Path, error: String) -> RunEntry {
        RunEntry {
            id: dir
                .file_name()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
            dir: dir.to_path_buf(),
            spec: RunSpec::default(),
            status: RunStatus::Broken,
            summary: None,
            curve: vec![],
            metrics: None,
            error: Some(error),
            elapsed: 0.0,
            folder: None,
            live: None,
        }
    }

    /// Takes what `fresh` (the same directory read again) says: status, summary, curve.
    pub(super) fn reread(&mut self, fresh: RunEntry) {
        self.spec = fresh.spec;
        self.status = fresh.status;
        self.summary = fresh.summary;
        self.curve = fresh.curve;
        self.metrics = fresh.metrics;
        self.error = fresh.error;
        self.elapsed = fresh.elapsed;
    }

    /// Ended in this program, or not ours to follow: nothing on disk changes it any more.
    pub(super) fn settled(&self) -> bool {
        !matches!(self.status, RunStatus::Elsewhere | RunStatus::Interrupted)
    }

    /// Marks the run broken (its model could not be loaded), keeping the reason.
    pub fn mark_broken(&mut self, error: String) {
        self.status = RunStatus::Broken;
        self.error = Some(error);
    }

    /// The model the run's held-out log-likelihood is under (the MEMM's local Σ log p̃ or
    /// a global log p(y|x)): its summary's record, else what its spec decodes with.
    pub fn likelihood_under(&self) -> &str {
        self.metrics
            .as_ref()
            .map(|m| m.log_likelihood_under.as_str())
            .filter(|u| !u.is_empty())
            .unwrap_or_else(|| self.spec.likelihood_under())
    }

    /// A held-out log-likelihood with the model it is under beside it.
    pub fn likelihood_text(&self, decimals: usize) -> String {
        self.metrics
            .as_ref()
            .and_then(|m| m.log_likelihood)
            .map_or("–".into(), |l| {
                format!("{l:.decimals$} ({})", self.likelihood_under())
            })
    }

    /// Name for legends: the spec's name, else the id.
    pub fn label(&self) -> String {
        match &self.spec.name {
            Some(n) if !n.trim().is_empty() => format!("{} ({})", n.trim(), self.id),
            _ => self.id.clone(),
        }
    }

    /// Starts the run on a background thread (its turn in the queue has come).
    fn start(&mut self, ctx: &egui::Context) {
        let (tx, rx) = channel();
        let cancel = Arc::new(AtomicBool::new(false));
        {
            let spec = self.spec.clone();
            let dir = self.dir.clone();
            let cancel = cancel.clone();
            let ctx = ctx.clone();
            std::thread::Builder::new()
                .name(format!("run {}", self.id))
                .spawn(move || {
                    let mut send = |ev: RunEvent| {
                        let _ = tx.send(ev);
                        ctx.request_repaint();
                    };
                    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        crate::run::execute::execute(&spec, &dir, &cancel, &mut send)
                    }));
                    if outcome.is_err() {
                        send(RunEvent::Failed("internal error: the run panicked".into()));
                    }
                })
                .expect("spawn run thread");
        }
        self.status = RunStatus::Setup;
        self.live = Some(Live {
            rx,
            cancel,
            started: Instant::now(),
        });
    }

    pub fn iteration(&self) -> usize {
        self.curve.last().map(|p| p.report.iteration).unwrap_or(0)
    }

    /// Fraction of the iteration budget used (convergence usually stops earlier).
    pub fn progress(&self) -> f32 {
        match self.status {
            RunStatus::Finished => 1.0,
            _ => (self.iteration() as f32 / self.spec.optimiser.max_iter.max(1) as f32).min(1.0),
        }
    }

    /// The run's training seconds (the optimiser's, without setup and held-out evaluation:
    /// docs/panes/runs.md): the summary's once finished, the curve's last point while it runs.
    /// The one meaning of "seconds" in the Runs list, Curves, Compare and the CLI's tables.
    pub fn train_seconds(&self) -> Option<f64> {
        self.summary
            .as_ref()
            .filter(|s| s.iterations > 0 || s.train_seconds > 0.0)
            .map(|s| s.train_seconds)
            .or_else(|| self.curve.last().map(|c| c.report.seconds))
    }

    /// Upper bound on the seconds left: the iteration budget at the current pace.
    pub fn eta(&self) -> Option<f64> {
        if !self.status.is_live() {
            return None;
        }
        let last = self.curve.last()?;
        let per_iter = last.report.seconds / last.report.iteration.max(1) as f64;
        let left = self
            .spec
            .optimiser
            .max_iter
            .saturating_sub(last.report.iteration);
        Some(per_iter * left as f64)
    }

    /// Applies one event from the run's thread.
    fn apply(&mut self, ev: RunEvent) {
        match ev {
            RunEvent::Started { .. } => self.status = RunStatus::Running,
            RunEvent::Progress(r) => {
                self.status = RunStatus::Running;
                self.curve.push(CurvePoint {
                    report: r,
                    test_token_accuracy: None,
                    test_segment_f1: None,
                    test_log_likelihood: None,
                })
            }
            RunEvent::Eval { iteration, metrics } => {
                if let Some(p) = self
                    .curve
                    .iter_mut()
                    .rev()
                    .find(|p| p.report.iteration == iteration)
                {
                    p.test_token_accuracy = Some(metrics.token_accuracy);
                    p.test_segment_f1 = metrics.segment_f1();
                    p.test_log_likelihood = metrics.log_likelihood;
                }
                self.metrics = Some(*metrics);
            }
            RunEvent::Finished(s) => {
                self.status = RunStatus::Finished;
                if s.test.is_some() {
                    self.metrics = s.test.clone();
                }
                self.summary = Some(*s);
            }
            RunEvent::Note(_) => {}
            RunEvent::Failed(msg) => {
                self.status = if msg == crate::error::Error::Cancelled.to_string() {
                    RunStatus::Cancelled
                } else {
                    RunStatus::Failed
                };
                self.error = Some(msg);
            }
        }
    }
}

/// How often the workspace and the opened folders are read again for runs that started,
/// progressed or ended in other processes.
pub const RESCAN: std::time::Duration = std::time::Duration::from_secs(2);

/// A run directory read by the rescan: new, or one not settled read again.
pub(super) struct Scanned {
    pub(super) dir: PathBuf,
    pub(super) folder: Option<PathBuf>,
    pub(super) entry: Result<RunEntry, String>,
}

/// Every run in the workspace directory, live or finished.
pub struct Runs {
    pub dir: PathBuf,
    pub entries: Vec<RunEntry>,
    /// Runs that train at once; the rest wait in [`Runs::queue`]. One (the default) gives
    /// each run every core, so the seconds of runs launched together compare.
    pub runs_at_once: usize,
    /// Launched runs (and a sweep) waiting for their turn, first first.
    queue: std::collections::VecDeque<Queued>,
    /// A sweep's place in the line: it waits like a run, then holds every core (its points
    /// train `jobs` at once) until [`Runs::sweep_ended`]; no run starts meanwhile.
    sweep: SweepTurn,
    /// Folders of runs opened besides the workspace (`reproduce` and sweep outputs, a
    /// cluster's collection), searched at any depth.
    pub folders: Vec<PathBuf>,
    /// Folders opened so far (the Runs pane scrolls to its list when this changes).
    pub folders_opened: usize,
    /// The background rescan of the workspace and the folders, when one is under way.
    pub(super) scan: Option<Receiver<Vec<Scanned>>>,
    pub(super) last_scan: Option<Instant>,
}

/// A deleted run: its listing, and where its directory went (none when it had none).
pub struct Trashed {
    pub entry: RunEntry,
    pub to: Option<PathBuf>,
}

/// Where the sweep stands in the queue.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum SweepTurn {
    #[default]
    None,
    /// Waiting in the queue.
    Waiting(String),
    /// Its turn came: the Frontier starts it ([`Runs::take_sweep_turn`]).
    Due(String),
    /// Training its points.
    Holding(String),
}

/// A launched run, or the sweep, waiting for its turn.
struct Queued {
    id: String,
    ctx: egui::Context,
    sweep: bool,
}

impl Runs {
    /// Opens (creating if needed) `workspace/runs` and reloads every run found there.
    /// Returns the runs and messages about run directories that could not be read.
    pub fn open(workspace: &Path) -> (Runs, Vec<String>) {
        let dir = workspace.join("runs");
        let mut problems = vec![];
        if let Err(e) = std::fs::create_dir_all(&dir) {
            problems.push(format!("cannot create {}: {e}", dir.display()));
        }
        let mut entries = vec![];
        let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.path()).collect())
            .unwrap_or_default();
        names.sort();
        for path in names {
            if !RunFiles::at(&path).has_spec() {
                continue;
            }
            match load_entry(&path) {
                Ok(e) => entries.push(e),
                Err(e) => {
                    entries.push(RunEntry::broken(&path, e.clone()));
                    problems.push(e);
                }
            }
        }
        (
            Runs {
                dir,
                entries,
                runs_at_once: 1,
                queue: Default::default(),
                sweep: SweepTurn::None,
                folders: vec![],
                folders_opened: 0,
                scan: None,
                last_scan: None,
            },
            problems,
        )
    }

    /// Adds a finished run that lives outside `runs/` (a sweep point) under the id `label`,
    /// or finds it when already added; returns its id.
    pub fn adopt(&mut self, dir: &Path, label: &str) -> Result<String, String> {
        if let Some(e) = self.entries.iter().find(|e| e.dir == dir) {
            return Ok(e.id.clone());
        }
        let mut e = load_entry(dir)?;
        e.id = label.to_string();
        self.entries.push(e);
        Ok(label.to_string())
    }

    pub fn get(&self, id: &str) -> Option<&RunEntry> {
        self.entries.iter().find(|e| e.id == id)
    }

    pub fn any_live(&self) -> bool {
        self.live_count() > 0
    }

    pub fn live_count(&self) -> usize {
        self.entries.iter().filter(|e| e.status.is_live()).count()
    }

    /// A new directory name: a sequence number, then the estimator.
    fn next_id(&self, spec: &RunSpec) -> String {
        let n = self
            .entries
            .iter()
            .filter_map(|e| e.id.split('-').next()?.parse::<u32>().ok())
            .max()
            .unwrap_or(0)
            + 1;
        let mut id = format!("{n:03}-{}", spec.estimator.name());
        while self.dir.join(&id).exists() {
            id.push('x');
        }
        id
    }

    /// Queues `spec` and starts it when its turn comes (at once when fewer than
    /// [`Runs::runs_at_once`] runs are training); returns the new run's id.
    pub fn launch(&mut self, ctx: &egui::Context, spec: RunSpec) -> String {
        let id = self.next_id(&spec);
        let dir = self.dir.join(&id);
        self.entries.push(RunEntry {
            id: id.clone(),
            dir,
            spec,
            status: RunStatus::Queued,
            summary: None,
            curve: vec![],
            metrics: None,
            error: None,
            elapsed: 0.0,
            folder: None,
            live: None,
        });
        self.queue.push_back(Queued {
            id: id.clone(),
            ctx: ctx.clone(),
            sweep: false,
        });
        self.start_queued();
        id
    }

    /// Puts the sweep `name` in the line; [`Runs::take_sweep_turn`] says when it may start.
    /// One sweep at a time: an error while another waits or trains.
    pub fn queue_sweep(&mut self, ctx: &egui::Context, name: &str) -> Result<(), String> {
        match &self.sweep {
            SweepTurn::None => {}
            SweepTurn::Waiting(n) | SweepTurn::Due(n) | SweepTurn::Holding(n) => {
                return Err(format!(
                    "sweep {n} is queued or running: wait for it or cancel it"
                ))
            }
        }
        self.sweep = SweepTurn::Waiting(name.to_string());
        self.queue.push_back(Queued {
            id: name.to_string(),
            ctx: ctx.clone(),
            sweep: true,
        });
        self.start_queued();
        Ok(())
    }

    /// The sweep whose turn has come (once): the caller starts it; it holds the cores until
    /// [`Runs::sweep_ended`].
    pub fn take_sweep_turn(&mut self) -> Option<String> {
        match std::mem::take(&mut self.sweep) {
            SweepTurn::Due(n) => {
                self.sweep = SweepTurn::Holding(n.clone());
                Some(n)
            }
            other => {
                self.sweep = other;
                None
            }
        }
    }

    /// The sweep ended (or was cancelled before its turn): its place is freed and the next in
    /// line starts.
    pub fn sweep_ended(&mut self) {
        self.queue.retain(|q| !q.sweep);
        self.sweep = SweepTurn::None;
        self.start_queued();
    }

    pub fn sweep_turn(&self) -> &SweepTurn {
        &self.sweep
    }

    /// Where run `id` waits: 1 for the next to start; `None` when it is not queued.
    pub fn queue_position(&self, id: &str) -> Option<usize> {
        self.queue
            .iter()
            .position(|q| q.id == id && !q.sweep)
            .map(|i| i + 1)
    }

    /// Where the waiting sweep stands: 1 for the next to start.
    pub fn sweep_position(&self) -> Option<usize> {
        self.queue.iter().position(|q| q.sweep).map(|i| i + 1)
    }

    /// Runs holding cores now.
    pub fn started_count(&self) -> usize {
        self.entries
            .iter()
            .filter(|e| e.status.is_started())
            .count()
    }

    /// Starts queued runs while fewer than [`Runs::runs_at_once`] are training; the sweep
    /// at the front waits until no run trains, and while it is due or trains nothing starts.
    fn start_queued(&mut self) {
        while self.started_count() < self.runs_at_once.max(1) {
            if matches!(self.sweep, SweepTurn::Due(_) | SweepTurn::Holding(_)) {
                return;
            }
            if self.queue.front().is_some_and(|q| q.sweep) {
                if self.started_count() == 0 {
                    let q = self.queue.pop_front().expect("a front");
                    self.sweep = SweepTurn::Due(q.id);
                    q.ctx.request_repaint();
                }
                return;
            }
            let Some(q) = self.queue.pop_front() else {
                return;
            };
            if let Some(e) = self.entries.iter_mut().find(|e| e.id == q.id) {
                if e.status == RunStatus::Queued {
                    e.start(&q.ctx);
                }
            }
        }
    }

    /// Drains every live run's events; call once per frame. Returns the runs that failed
    /// since the last call.
    pub fn poll(&mut self) -> Vec<String> {
        let mut failed = vec![];
        for e in &mut self.entries {
            let Some(live) = &e.live else { continue };
            let events: Vec<RunEvent> = live.rx.try_iter().collect();
            e.elapsed = live.started.elapsed().as_secs_f64();
            let disconnected = matches!(
                live.rx.try_recv(),
                Err(std::sync::mpsc::TryRecvError::Disconnected)
            );
            for ev in events {
                e.apply(ev);
            }
            if !e.status.is_live() || disconnected {
                if e.status.is_live() {
                    e.status = RunStatus::Failed;
                    e.error
                        .get_or_insert("the run's thread ended without a result".into());
                }
                e.live = None;
                if e.status == RunStatus::Failed {
                    failed.push(e.id.clone());
                }
            }
        }
        self.start_queued();
        self.rescan();
        failed
    }

    /// Cancels run `id`: a running one stops at its next iteration; a queued one leaves the
    /// queue without starting.
    pub fn cancel(&mut self, id: &str) {
        if let Some(i) = self.queue.iter().position(|q| q.id == id && !q.sweep) {
            self.queue.remove(i);
            if let Some(e) = self.entries.iter_mut().find(|e| e.id == id) {
                e.status = RunStatus::Cancelled;
                e.error = Some("cancelled before its turn came".into());
            }
            return;
        }
        if let Some(live) = self
            .entries
            .iter()
            .find(|e| e.id == id)
            .and_then(|e| e.live.as_ref())
        {
            live.cancel.store(true, Ordering::Relaxed);
        }
    }

    /// Deletes a run that is not running: its directory moves to the workspace's trash
    /// (`.trash`, beside `runs/`; a run on another file system to a `.trash` beside it), from
    /// where [`Runs::undelete`] puts it back. Hidden folders are never listed as runs.
    pub fn delete(&mut self, id: &str) -> Result<Trashed, String> {
        let Some(i) = self.entries.iter().position(|e| e.id == id) else {
            return Err(format!("no run {id}"));
        };
        if self.entries[i].status.is_live() {
            return Err(format!("run {id} is still running: cancel it first"));
        }
        let dir = self.entries[i].dir.clone();
        if crate::run::store::is_claimed(&dir) {
            return Err(format!("run {id} is being written by another process"));
        }
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let name = format!(
            "{stamp}-{}",
            id.replace(|c: char| !c.is_ascii_alphanumeric() && c != '-', "_")
        );
        let workspace_trash = self.dir.parent().unwrap_or(&self.dir).join(".trash");
        let beside = dir.parent().map(|p| p.join(".trash"));
        let mut to = None;
        if dir.exists() {
            let mut last_err = None;
            for trash in std::iter::once(workspace_trash).chain(beside) {
                let target = trash.join(&name);
                let moved =
                    std::fs::create_dir_all(&trash).and_then(|()| std::fs::rename(&dir, &target));
                match moved {
                    Ok(()) => {
                        to = Some(target);
                        break;
                    }
                    Err(e) => last_err = Some(e),
                }
            }
            if to.is_none() {
                return Err(format!(
                    "cannot move {} to the trash: {}",
                    dir.display(),
                    last_err.map_or("no trash folder".into(), |e| e.to_string())
                ));
            }
        }
        let entry = self.entries.remove(i);
        Ok(Trashed { entry, to })
    }

    /// Puts a deleted run back where it was (refused when something else is there now).
    pub fn undelete(&mut self, t: Trashed) -> Result<String, String> {
        let Trashed { entry, to } = t;
        if let Some(to) = to {
            if entry.dir.exists() {
                return Err(format!(
                    "{} exists again: the deleted run stays in {}",
                    entry.dir.display(),
                    to.display()
                ));
            }
            std::fs::rename(&to, &entry.dir)
                .map_err(|e| format!("cannot put {} back: {e}", entry.dir.display()))?;
        }
        let id = entry.id.clone();
        self.entries.push(entry);
        Ok(id)
    }

    /// Asks every live run to stop (on exit).
    pub fn cancel_all(&mut self) {
        for q in std::mem::take(&mut self.queue) {
            if q.sweep {
                continue;
            }
            if let Some(e) = self.entries.iter_mut().find(|e| e.id == q.id) {
                e.status = RunStatus::Cancelled;
            }
        }
        for e in &self.entries {
            if let Some(l) = &e.live {
                l.cancel.store(true, Ordering::Relaxed);
            }
        }
    }
}

/// Reads a run directory.
pub(super) fn load_entry(dir: &Path) -> Result<RunEntry, String> {
    let id = dir
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let files = RunFiles::at(dir);
    let spec = files.spec().map_err(|e| e.to_string())?;
    let summary = files.summary().ok();
    let curve = files.curve().map_err(|e| e.to_string())?;
    let (status, error, metrics, elapsed) = match &summary {
        Some(s) => (
            match s.status.as_str() {
                "finished" => RunStatus::Finished,
                "failed" => RunStatus::Failed,
                "cancelled" => RunStatus::Cancelled,
                "running" if crate::run::store::is_claimed(dir) => RunStatus::Elsewhere,
                _ => RunStatus::Interrupted,
            },
            s.error.clone(),
            s.test.clone(),
            0.0,
        ),
        None => (
            RunStatus::Interrupted,
            Some(format!(
                "{}: missing or unreadable",
                files.summary_path().display()
            )),
            None,
            0.0,
        ),
    };
    Ok(RunEntry {
        id,
        dir: dir.to_path_buf(),
        spec,
        status,
        summary,
        curve,
        metrics,
        error,
        elapsed,
        folder: None,
        live: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::spec::RunSpec;

    fn spec(name: &str) -> RunSpec {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        RunSpec {
            name: Some(name.into()),
            train: root.join("sample_data/hmm-peaked-train.conll"),
            template: Some(root.join("assets/templates/hmm-window.tpl")),
            optimiser: crate::optim::lbfgs::LbfgsSpec {
                max_iter: 2,
                ..Default::default()
            },
            ..Default::default()
        }
    }

    /// Polls until no run holds cores (a run of two iterations ends in well under a minute).
    fn until_idle(runs: &mut Runs) {
        let t0 = std::time::Instant::now();
        while runs.started_count() > 0 {
            assert!(t0.elapsed().as_secs() < 120, "a run did not end");
            std::thread::sleep(std::time::Duration::from_millis(10));
            runs.poll();
        }
    }

    /// A sweep waits its turn behind the runs launched before it, then holds the cores: a run
    /// launched after it waits until it ends.
    #[test]
    fn a_sweep_takes_its_turn_in_the_run_queue() {
        let ws = tempfile::tempdir().unwrap();
        let (mut runs, problems) = Runs::open(ws.path());
        assert!(problems.is_empty(), "{problems:?}");
        let ctx = egui::Context::default();
        let a = runs.launch(&ctx, spec("a"));
        assert!(runs.get(&a).unwrap().status.is_started());
        runs.queue_sweep(&ctx, "s").unwrap();
        assert!(runs.queue_sweep(&ctx, "t").is_err(), "one sweep at a time");
        let b = runs.launch(&ctx, spec("b"));
        assert_eq!(runs.sweep_position(), Some(1));
        assert_eq!(runs.queue_position(&b), Some(2));
        assert_eq!(runs.take_sweep_turn(), None, "run a still trains");
        until_idle(&mut runs);
        assert_eq!(runs.sweep_turn(), &SweepTurn::Due("s".into()));
        assert_eq!(runs.get(&b).unwrap().status, RunStatus::Queued);
        assert_eq!(runs.take_sweep_turn(), Some("s".into()));
        assert_eq!(runs.take_sweep_turn(), None, "given once");
        runs.poll();
        assert_eq!(
            runs.get(&b).unwrap().status,
            RunStatus::Queued,
            "no run starts while the sweep trains"
        );
        runs.sweep_ended();
        assert!(runs.get(&b).unwrap().status.is_started());
        until_idle(&mut runs);
        assert_eq!(runs.get(&b).unwrap().status, RunStatus::Finished);
        // A sweep queued on an idle workbench is due at once.
        runs.queue_sweep(&ctx, "u").unwrap();
        assert_eq!(runs.take_sweep_turn(), Some("u".into()));
        runs.sweep_ended();
        assert_eq!(runs.sweep_turn(), &SweepTurn::None);
    }
}
