//! The run store: the one owner of a run directory. [`RunFiles`] names every file a run writes
//! and reads and writes each as its type (the spec, the summary, the curve, the model and its
//! weights, the records some schedules keep); every reader of a run directory — the commands,
//! the GUI, sweeps and reproductions — goes through it. [`RunDir`] is the claim a run holds
//! while it writes: taken before anything is written, so two runs (or two app windows) never
//! write the same directory, a finished run or an unrelated folder is not overwritten unless
//! asked, and a run killed mid-training is recognised afterwards.
//!
//! The claim is an exclusive `flock` on the directory itself: the kernel releases it when the
//! process ends, however it ends, so a directory whose summary says `running` but which nobody
//! holds was interrupted — and no lock file is left behind. (Across hosts, a claim file too:
//! [`super::claim`].) The files of a claimed run ([`RunDir::files`]) check before every write
//! that the claim is still this process's, so a writer another host took over writes nothing.

use super::claim::{claim_info, printable, Claim, Ownership, CLAIM_FILE, LOCK_FILE, STALE_AFTER};
pub use super::claim::{is_claimed, ClaimOptions};
use super::spec::RunSpec;
use super::summary::{CurvePoint, RunSummary};
use crate::error::{Error, Result};
use crate::graph::Family;
use crate::util::{read_json, write_atomic, write_json_atomic};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The spec the run was trained with.
const SPEC: &str = "spec.json";
/// Status (`running`, `finished`, `failed`, `cancelled`), timings, stop reason, final metrics.
const SUMMARY: &str = "summary.json";
/// One [`CurvePoint`] a line, rewritten atomically as the run goes.
const CURVE: &str = "curve.jsonl";
/// A factor-graph family's labels, template, feature dictionaries and parameter layout.
const MODEL: &str = "model.json";
/// θ as little-endian f64.
const WEIGHTS: &str = "weights.bin";
/// A running run's checkpoint ([`super::checkpoint`]): removed when it finishes.
pub const CHECKPOINT: &str = "checkpoint.bin";

/// A record a run may keep beside its model: the file's name in the run directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record(&'static str);

impl Record {
    /// The per-state scales (001 §3) of a run trained with them.
    pub const SCALING: Record = Record("scaling.json");
    /// The per-subset scales (003 §3) of a run calibrated with them.
    pub const SUBSET_SCALING: Record = Record("subset-scaling.json");
    /// CAMEL's fits, δ and g per training item.
    pub const CAMEL: Record = Record("camel.json");
    /// The grammar's model file: the options and the training trees it is read off again.
    pub const GRAMMAR: Record = Record("grammar.json");
}

/// The files a run writes (and `--force` clears before a new run writes them again).
pub const RUN_FILES: &[&str] = &[
    SPEC,
    SUMMARY,
    CURVE,
    MODEL,
    WEIGHTS,
    Record::SCALING.0,
    Record::SUBSET_SCALING.0,
    Record::CAMEL.0,
    Record::GRAMMAR.0,
    CHECKPOINT,
];

/// The files every run has, for reports that point at them: "`spec.json`, …".
pub fn listed_files() -> String {
    [SPEC, SUMMARY, CURVE].map(|f| format!("`{f}`")).join(", ")
}

/// A run directory's files, read and written as their types.
#[derive(Clone, Debug)]
pub struct RunFiles {
    dir: PathBuf,
    /// The claim the writes are made under ([`RunDir::files`]): each write checks it is still
    /// this process's first, so a writer whose claim another host took over writes nothing.
    owner: Option<Arc<Ownership>>,
}

/// The same directory's files (whoever writes them).
impl PartialEq for RunFiles {
    fn eq(&self, other: &RunFiles) -> bool {
        self.dir == other.dir
    }
}
impl Eq for RunFiles {}

impl RunFiles {
    /// The files of `dir`, for reading (or writing without a claim: tests, tools).
    pub fn at(dir: impl Into<PathBuf>) -> RunFiles {
        RunFiles {
            dir: dir.into(),
            owner: None,
        }
    }
    /// An error when the claim these files are written under was taken over by another
    /// process; every write of the run store checks it first.
    pub fn still_ours(&self) -> Result<()> {
        self.owner.as_ref().map_or(Ok(()), |o| o.check())
    }
    /// Writes `path` atomically once the claim is checked.
    fn put(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        self.still_ours()?;
        write_atomic(path, bytes)
    }
    /// Writes `value` as JSON to `path` atomically once the claim is checked.
    fn put_json<T: serde::Serialize>(&self, path: &Path, value: &T) -> Result<()> {
        self.still_ours()?;
        write_json_atomic(path, value)
    }
    pub fn dir(&self) -> &Path {
        &self.dir
    }
    /// The path of the spec, for messages that name it.
    pub fn spec_path(&self) -> PathBuf {
        self.dir.join(SPEC)
    }
    pub fn summary_path(&self) -> PathBuf {
        self.dir.join(SUMMARY)
    }
    fn curve_path(&self) -> PathBuf {
        self.dir.join(CURVE)
    }
    pub fn weights_path(&self) -> PathBuf {
        self.dir.join(WEIGHTS)
    }
    pub fn record_path(&self, r: Record) -> PathBuf {
        self.dir.join(r.0)
    }
    /// Whether the run has a spec (a directory without one is not a run).
    pub fn has_spec(&self) -> bool {
        self.spec_path().exists()
    }
    pub fn has_summary(&self) -> bool {
        self.summary_path().exists()
    }
    /// Whether a finished factor-graph model is here (`model.json`).
    pub fn has_model(&self) -> bool {
        self.dir.join(MODEL).exists()
    }
    pub fn has(&self, r: Record) -> bool {
        self.record_path(r).exists()
    }

    pub fn spec(&self) -> Result<RunSpec> {
        read_json(&self.spec_path())
    }
    pub fn write_spec(&self, spec: &RunSpec) -> Result<()> {
        self.put_json(&self.spec_path(), spec)
    }
    /// The spec as JSON, for readers that compare specs field by field (sweeps, reports).
    pub fn spec_value(&self) -> Result<serde_json::Value> {
        read_json(&self.spec_path())
    }
    pub fn summary(&self) -> Result<RunSummary> {
        read_json(&self.summary_path())
    }
    /// The summary as JSON, for readers of fields a newer build may have added.
    pub fn summary_value(&self) -> Result<serde_json::Value> {
        read_json(&self.summary_path())
    }
    pub fn write_summary(&self, summary: &RunSummary) -> Result<()> {
        self.put_json(&self.summary_path(), summary)
    }

    /// The run's status as its summary records it, with `running` read as `interrupted` when
    /// no process is writing the directory any more; `None` without a readable summary.
    pub fn status(&self) -> Option<String> {
        let s = self.summary().ok()?;
        Some(match s.status.as_str() {
            "running" if !is_claimed(&self.dir) => "interrupted".into(),
            _ => s.status,
        })
    }

    /// The run's summary when it finished with `spec` — the same spec but for its thread count,
    /// which changes how long a run takes, not what it computes (so runs planned with
    /// `--threads 1` for GNU parallel count as done for a `reproduce` on all cores).
    pub fn finished_with(&self, spec: &RunSpec) -> Option<RunSummary> {
        let s = self.summary().ok()?;
        (s.status == "finished" && self.same_spec(spec)).then_some(s)
    }

    /// Whether the stored spec is `spec`, its thread count aside.
    pub fn same_spec(&self, spec: &RunSpec) -> bool {
        let (Ok(mut old), Ok(new)) = (self.spec_value(), serde_json::to_value(spec)) else {
            return false;
        };
        let mut new = crate::util::versioned(new);
        for v in [&mut old, &mut new] {
            if let Some(m) = v.as_object_mut() {
                m.remove("threads");
            }
        }
        old == new
    }

    /// What the directory holds against `spec` ([`Found`]), with the run's summary when it
    /// has one (read once).
    pub fn found(&self, spec: &RunSpec) -> (Found, Option<RunSummary>) {
        let Ok(s) = self.summary() else {
            return (Found::Missing, None);
        };
        let found = match s.status.as_str() {
            "finished" if self.same_spec(spec) => Found::Finished,
            "finished" => Found::OtherSpec,
            "failed" => Found::Failed(s.error.clone().unwrap_or_default()),
            "cancelled" => Found::Cancelled,
            _ => {
                let here = crate::provenance::host();
                match claim_info(&self.dir) {
                    Some(c) if c.host != here && c.age() <= STALE_AFTER.as_secs() => {
                        Found::Running {
                            host: c.host,
                            here: false,
                        }
                    }
                    _ if is_claimed(&self.dir) => Found::Running {
                        host: here,
                        here: true,
                    },
                    _ => Found::Interrupted,
                }
            }
        };
        (found, Some(s))
    }

    /// The learning curve, one point a line (empty before the first iteration is written); a
    /// line that does not parse is an error naming it.
    pub fn curve(&self) -> Result<Vec<CurvePoint>> {
        let path = self.curve_path();
        if !path.exists() {
            return Ok(vec![]);
        }
        let text = crate::util::read_text(&path)?;
        let shown = path.display().to_string();
        text.lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| {
                serde_json::from_str(l).map_err(|e| Error::parse(&shown, i + 1, e.to_string()))
            })
            .collect()
    }
    /// Rewrites the curve with `text` (JSON lines).
    pub fn write_curve(&self, text: &str) -> Result<()> {
        self.put(&self.curve_path(), text.as_bytes())
    }

    /// A record as its type; `None` when the run did not keep it.
    pub fn record<T: serde::de::DeserializeOwned>(&self, r: Record) -> Result<Option<T>> {
        let p = self.record_path(r);
        p.exists().then(|| read_json(&p)).transpose()
    }
    pub fn write_record<T: serde::Serialize>(&self, r: Record, value: &T) -> Result<()> {
        self.put_json(&self.record_path(r), value)
    }

    /// Writes `model.json` and `weights.bin`. The weights and the model file are written side
    /// by side (on the caller's rayon pool): with millions of weights and features each takes a
    /// noticeable, serial moment.
    pub fn save_model(&self, family: &dyn Family, theta: &[f64]) -> Result<()> {
        self.still_ours()?;
        let (weights, model) = rayon::join(
            || self.write_weights(theta),
            || {
                let value = crate::util::versioned(family.to_json()?);
                let text =
                    serde_json::to_string(&value).map_err(|e| Error::invalid(e.to_string()))?;
                self.put(&self.dir.join(MODEL), text.as_bytes())
            },
        );
        weights.and(model)
    }

    /// The factor-graph model saved by [`RunFiles::save_model`]: its family (rebuilt through the
    /// registry and validated) and θ.
    pub fn model(&self) -> Result<(Arc<dyn Family>, Vec<f64>)> {
        let mpath = self.dir.join(MODEL);
        if !mpath.exists() {
            return Err(Error::file(
                self.dir.display().to_string(),
                "no model.json here: not a finished run directory",
            ));
        }
        let value: serde_json::Value = read_json(&mpath)?;
        let family = super::registry::from_json(value, &mpath.display().to_string())?;
        let theta = self.weights(family.model().n_params, &|k| format!("weight {k}"))?;
        Ok((family, theta))
    }

    /// θ as little-endian f64.
    pub fn write_weights(&self, theta: &[f64]) -> Result<()> {
        let bytes: Vec<u8> = theta.iter().flat_map(|w| w.to_le_bytes()).collect();
        self.put(&self.weights_path(), &bytes)
    }

    /// θ from `weights.bin`: exactly `n` weights (the size is checked before the bytes are
    /// read), each a finite number; an error names the file and, through `name`, the weight.
    pub fn weights(&self, n: usize, name: &dyn Fn(usize) -> String) -> Result<Vec<f64>> {
        let path = self.weights_path();
        let shown = path.display().to_string();
        let len = std::fs::metadata(&path)
            .map_err(|e| Error::io(&path, e))?
            .len();
        if len != 8 * n as u64 {
            return Err(Error::file(
                shown,
                format!("{len} bytes; the model has {n} weights ({} bytes)", 8 * n),
            ));
        }
        let bytes = crate::util::read_bytes(&path)?;
        if bytes.len() != 8 * n {
            return Err(Error::file(shown, "changed while it was read"));
        }
        let theta: Vec<f64> = bytes
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect();
        if let Some(k) = theta.iter().position(|w| !w.is_finite()) {
            return Err(Error::file(
                shown,
                format!("{} is {}, not a finite number", name(k), theta[k]),
            ));
        }
        let max = crate::graph::family::MAX_WEIGHT;
        if let Some(k) = theta.iter().position(|w| w.abs() > max) {
            return Err(Error::file(
                shown,
                format!(
                    "{} is {:e}: beyond ±{max:e}, where sums of log-potentials overflow",
                    name(k),
                    theta[k]
                ),
            ));
        }
        Ok(theta)
    }
}

/// What to do with a directory that already holds files.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Existing {
    /// Refuse a finished (or failed, cancelled, interrupted) run and a non-empty directory.
    #[default]
    Refuse,
    /// Replace a run's files; write beside other files.
    Replace,
    /// A plan's line, safe to run again: a run finished with the same spec is left as it is,
    /// an unfinished one (failed, cancelled, interrupted) resumed from its checkpoint when it
    /// has one of the same spec, else started again; a run finished with another spec and
    /// other files are refused.
    IfUnfinished,
}

/// What a run directory holds, read against the spec planned for it (what collecting a plan
/// reports; nothing is trained or changed).
#[derive(Clone, Debug, PartialEq)]
pub enum Found {
    Finished,
    /// Written now: by a process of this host, or of another host whose claim's heartbeat is
    /// fresh.
    Running {
        host: String,
        here: bool,
    },
    Interrupted,
    Failed(String),
    Cancelled,
    /// Finished with another spec (an older plan's run).
    OtherSpec,
    /// No run there yet.
    Missing,
}

impl std::fmt::Display for Found {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Found::Finished => f.write_str("finished"),
            Found::Running { host, here: true } => {
                write!(f, "running (on {}, this host)", printable(host))
            }
            Found::Running { host, here: false } => {
                write!(f, "running on {} (its heartbeat is fresh)", printable(host))
            }
            Found::Interrupted => f.write_str("interrupted (no process holds it)"),
            Found::Failed(why) => write!(f, "failed: {why}"),
            Found::Cancelled => f.write_str("cancelled"),
            Found::OtherSpec => f.write_str("finished with another spec (an older plan)"),
            Found::Missing => f.write_str("missing"),
        }
    }
}

/// A claimed run directory; the claim ends when this is dropped (or the process ends).
pub struct RunDir {
    path: PathBuf,
    claim: Claim,
}

impl RunDir {
    /// Claims `out` for a new run as this host: creates it, takes its locks ([`Claim`]:
    /// refusing a directory another process of any host is writing), checks it can be written,
    /// refuses existing contents as `existing` says, and removes temporary files a killed run
    /// left.
    pub fn claim(out: &Path, existing: Existing) -> Result<RunDir> {
        Self::claim_with(out, existing, &ClaimOptions::default())
    }

    /// [`claim`](Self::claim) as `o.host`, with or without flock (tests stand in for other
    /// machines; see `claim.rs`).
    pub fn claim_with(out: &Path, existing: Existing, o: &ClaimOptions) -> Result<RunDir> {
        let name = out.display().to_string();
        if out.exists() && !out.is_dir() {
            return Err(Error::file(
                &name,
                "exists and is not a directory: a run directory is a folder",
            ));
        }
        std::fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
        let claim = Claim::take(out, o)?;
        match existing {
            Existing::Refuse => refuse_contents(out)?,
            Existing::IfUnfinished => refuse_foreign(out)?,
            Existing::Replace => {}
        }
        for entry in std::fs::read_dir(out)
            .map_err(|e| Error::io(out, e))?
            .flatten()
        {
            let f = entry.file_name().to_string_lossy().into_owned();
            let ours = RUN_FILES.contains(&f.as_str());
            // Not the lock, nor another claimer's claim in the making (it is refused anyway).
            let claiming = f == LOCK_FILE || f.starts_with(&format!("{CLAIM_FILE}.tmp-"));
            if (is_temporary(&f) && !claiming) || (existing == Existing::Replace && ours) {
                match std::fs::remove_file(entry.path()) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        return Err(Error::io(&entry.path(), e))
                    }
                    _ => {}
                }
            }
        }
        // Can it be written? (A read-only directory fails here, before any training.)
        let probe = out.join(format!(".write-test-{}", std::process::id()));
        std::fs::write(&probe, b"")
            .and_then(|()| std::fs::remove_file(&probe))
            .map_err(|e| Error::file(&name, format!("cannot write here: {e}")))?;
        Ok(RunDir {
            path: out.to_path_buf(),
            claim,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The run's files, each write checked against this claim ([`RunFiles::still_ours`]).
    pub fn files(&self) -> RunFiles {
        RunFiles {
            dir: self.path.clone(),
            owner: Some(self.claim.ownership()),
        }
    }

    /// Whether another process took the claim over (the run should stop: its writes are
    /// refused).
    pub fn lost(&self) -> bool {
        self.claim.ownership().is_lost()
    }

    /// Removes the run's files the directory holds (the claim is kept): a run starting again.
    pub fn clear_run_files(&self) -> Result<()> {
        self.clear_run_files_but(&[])
    }

    /// [`clear_run_files`](Self::clear_run_files) but for `keep` (a run resuming keeps its
    /// checkpoint).
    pub fn clear_run_files_but(&self, keep: &[&str]) -> Result<()> {
        self.files().still_ours()?;
        for f in RUN_FILES.iter().filter(|f| !keep.contains(f)) {
            let p = self.path.join(f);
            if p.exists() {
                std::fs::remove_file(&p).map_err(|e| Error::io(&p, e))?;
            }
        }
        Ok(())
    }
}

/// Refuses to start when the file system holding `dir` has less room than the run's files will
/// take (`bytes`, with a margin): better an error before training than after it.
pub fn check_space(dir: &Path, bytes: u64) -> Result<()> {
    let Some(free) = free_bytes(dir) else {
        return Ok(());
    };
    let need = bytes + bytes / 10 + (1 << 16);
    if free < need {
        return Err(Error::file(
            dir.display().to_string(),
            format!(
                "the run's files need about {} and the file system has {} free",
                human(need),
                human(free)
            ),
        ));
    }
    Ok(())
}

/// Temporary files of [`crate::util::write_atomic`] (`.NAME.tmp-PID`) and of the write test.
fn is_temporary(f: &str) -> bool {
    f.starts_with('.') && (f.contains(".tmp-") || f.starts_with(".write-test-") || f == LOCK_FILE)
}

/// Files of the directory that are neither temporary nor the claim's.
fn listed(f: &str) -> bool {
    !is_temporary(f) && f != CLAIM_FILE
}

/// Refuses a directory holding files that are not a run's.
fn refuse_foreign(out: &Path) -> Result<()> {
    let mut others: Vec<String> = std::fs::read_dir(out)
        .map_err(|e| Error::io(out, e))?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|f| listed(f) && !RUN_FILES.contains(&f.as_str()))
        .collect();
    if others.is_empty() {
        return Ok(());
    }
    others.sort();
    Err(Error::file(
        out.display().to_string(),
        format!(
            "holds files that are not a run's ({}): not a run directory of this plan",
            others.join(", ")
        ),
    ))
}

fn refuse_contents(out: &Path) -> Result<()> {
    let name = out.display().to_string();
    let files = RunFiles::at(out);
    if files.has_summary() {
        let status = files
            .summary_value()
            .ok()
            .and_then(|s| s.get("status")?.as_str().map(str::to_string))
            .map(|s| {
                if s == "running" {
                    "interrupted".into()
                } else {
                    s
                }
            })
            .unwrap_or_else(|| "damaged".into());
        let a = if status.starts_with(['a', 'e', 'i', 'o', 'u']) {
            "an"
        } else {
            "a"
        };
        return Err(Error::file(
            &name,
            format!("holds {a} {status} run; --force replaces it (or choose another --out)"),
        ));
    }
    let mut others: Vec<String> = std::fs::read_dir(out)
        .map_err(|e| Error::io(out, e))?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|f| listed(f))
        .collect();
    if !others.is_empty() {
        others.sort();
        let n = others.len();
        others.truncate(3);
        return Err(Error::file(
            &name,
            format!(
                "is not empty ({n} entries: {}{}); --force writes the run's files beside them",
                others.join(", "),
                if n > 3 { ", …" } else { "" }
            ),
        ));
    }
    Ok(())
}

/// Bytes available to an unprivileged writer on the file system holding `dir`.
#[cfg(unix)]
fn free_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs writes only into the struct we pass; the path is NUL-terminated.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::statvfs(c.as_ptr(), &mut s) };
    (r == 0).then(|| s.f_bavail as u64 * s.f_frsize as u64)
}

/// Not measured off Unix: the free-space check before a run is skipped there.
#[cfg(not(unix))]
fn free_bytes(_dir: &Path) -> Option<u64> {
    None
}

fn human(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{:.1} GB", b as f64 / (1u64 << 30) as f64),
        b if b >= 1 << 20 => format!("{:.1} MB", b as f64 / (1u64 << 20) as f64),
        b => format!("{:.0} KB", (b as f64 / 1024.0).ceil()),
    }
}
