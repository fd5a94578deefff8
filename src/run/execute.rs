//! Executing a [`RunSpec`]: the run directory is claimed ([`RunDir::claim`]), the spec and a
//! `running` summary are written, and the spec's model kind ([`super::kinds::for_model`]) trains
//! into it; the summary then records how it ended. Every file goes through the run store
//! ([`RunFiles`]), written to a temporary name and renamed.

use super::checkpoint::{CheckpointPolicy, CHECKPOINT};
use super::kinds;
use super::spec::RunSpec;
use super::store::{ClaimOptions, Existing, RunDir, RunFiles};
use super::summary::{RunEvent, RunSummary};
use crate::error::{Error, Result};
use crate::provenance::Provenance;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// Executes `spec`, writing the new run directory `out` (refused when it holds a run or other
/// files: see [`execute_in`]), without checkpoints (the workbench's runs: it does not resume
/// them). Events go to `on_event` as they happen.
pub fn execute(
    spec: &RunSpec,
    out: &Path,
    cancel: &AtomicBool,
    on_event: &mut dyn FnMut(RunEvent),
) -> Result<RunSummary> {
    execute_with(
        spec,
        out,
        Existing::Refuse,
        CheckpointPolicy::OFF,
        cancel,
        on_event,
    )
}

/// [`execute`], saying what to do with what `out` already holds. The directory is claimed
/// first ([`RunDir::claim`]): another process writing it, a path that is a file, or a
/// directory that cannot be written are errors before anything is written.
pub fn execute_in(
    spec: &RunSpec,
    out: &Path,
    existing: Existing,
    cancel: &AtomicBool,
    on_event: &mut dyn FnMut(RunEvent),
) -> Result<RunSummary> {
    execute_with(
        spec,
        out,
        existing,
        CheckpointPolicy::default(),
        cancel,
        on_event,
    )
}

/// [`execute_in`] writing checkpoints as `checkpoints` says.
pub fn execute_with(
    spec: &RunSpec,
    out: &Path,
    existing: Existing,
    checkpoints: CheckpointPolicy,
    cancel: &AtomicBool,
    on_event: &mut dyn FnMut(RunEvent),
) -> Result<RunSummary> {
    execute_claimed(
        spec,
        out,
        existing,
        checkpoints,
        &ClaimOptions::default(),
        cancel,
        on_event,
    )
}

/// [`execute_with`], claiming `out` as `claim` says (tests stand in for other hosts and
/// shorten the heartbeat). Should another host take the claim over while the run trains (this
/// process stalled past the stale time), the run stops and returns that error having written
/// nothing more: not its weights, its summary nor its checkpoint.
pub fn execute_claimed(
    spec: &RunSpec,
    out: &Path,
    existing: Existing,
    checkpoints: CheckpointPolicy,
    claim: &ClaimOptions,
    cancel: &AtomicBool,
    on_event: &mut dyn FnMut(RunEvent),
) -> Result<RunSummary> {
    spec.check()?;
    let claim = RunDir::claim_with(out, existing, claim)?;
    let files = claim.files();
    // What an unfinished run's directory held is kept until the new process has read its
    // inputs (the kind's `Started`): a resume that cannot read its data changes nothing.
    let mut deferred: Option<&[&str]> = None;
    if existing == Existing::IfUnfinished {
        if let Some(done) = files.finished_with(spec) {
            on_event(RunEvent::Finished(Box::new(done.clone())));
            return Ok(done);
        }
        if files.summary().is_ok_and(|s| s.status == "finished") {
            return Err(Error::file(
                out.display().to_string(),
                "holds a run finished with another spec; --force replaces it (or choose another --out)",
            ));
        }
        // The same spec's checkpoint is resumed from (the kind reads it); anything else of
        // an unfinished run is written again. Another spec's run is not resumed: its files go
        // now (its checkpoint must not be read as this spec's).
        if files.same_spec(spec) {
            deferred = Some(if files.dir().join(CHECKPOINT).exists() {
                &[CHECKPOINT]
            } else {
                &[]
            });
        } else {
            claim.clear_run_files()?;
        }
    }
    let mut summary = RunSummary {
        status: "running".into(),
        estimator: spec.estimator.name().into(),
        pid: Some(std::process::id()),
        provenance: Some(Provenance::here()),
        ..Default::default()
    };
    let begin = |summary: &RunSummary| -> Result<()> {
        files.write_spec(spec)?;
        files.write_summary(summary)
    };
    if deferred.is_none() {
        begin(&summary)?;
    }
    let kind = kinds::for_model(&spec.model);
    let started_summary = summary.clone();
    let mut begun = deferred.is_none();
    let mut begin_error = None;
    let result = stop_when_lost(&claim, cancel, &mut |stop| {
        // A cancel asked for by a listener of the events (or a lost claim) stops the run at
        // once, as when the flag was the run's own; one from elsewhere within 50 ms.
        let mut events = |ev: RunEvent| {
            if !begun && matches!(ev, RunEvent::Started { .. }) {
                begun = true;
                let keep = deferred.unwrap_or(&[]);
                if let Err(e) = claim
                    .clear_run_files_but(keep)
                    .and_then(|()| begin(&started_summary))
                {
                    begin_error.get_or_insert(e);
                    stop.store(true, Ordering::Relaxed);
                }
            }
            on_event(ev);
            if cancel.load(Ordering::Relaxed) || claim.lost() {
                stop.store(true, Ordering::Relaxed);
            }
        };
        kind.train(spec, &files, checkpoints, stop, &mut events, &mut summary)
    });
    let result = match begin_error {
        Some(e) => Err(e),
        None => result,
    };
    if !begun && !claim.lost() {
        let e = unchanged(result.err(), out);
        on_event(RunEvent::Failed(e.to_string()));
        return Err(e);
    }
    if let Some(p) = &mut summary.provenance {
        p.ended = crate::provenance::now_rfc3339();
    }
    // A summary that cannot be written (a full disk) makes the run a failure, recorded as one.
    let result = result.and_then(|()| files.write_summary(&summary));
    // Taken over by another host (in training or at the summary): its run now, so nothing of
    // this one is recorded.
    if claim.lost() {
        let e = files.still_ours().err().unwrap_or(Error::Cancelled);
        on_event(RunEvent::Failed(e.to_string()));
        return Err(e);
    }
    match result {
        Ok(()) => {
            on_event(RunEvent::Finished(Box::new(summary.clone())));
            Ok(summary)
        }
        Err(e) => {
            summary.status = if matches!(e, Error::Cancelled) {
                "cancelled"
            } else {
                "failed"
            }
            .into();
            summary.error = Some(e.to_string());
            record_failure(&files, &summary)?;
            on_event(RunEvent::Failed(e.to_string()));
            Err(e)
        }
    }
}

/// The error of a run that ended before its inputs were read: the earlier process's files in
/// `out` are as they were, and the message says so.
fn unchanged(e: Option<Error>, out: &Path) -> Error {
    match e {
        Some(Error::Cancelled) => Error::Cancelled,
        Some(e) => Error::invalid(format!("{e} (nothing in {} was changed)", out.display())),
        None => Error::invalid("the run ended before it started (a model kind sent no Started)"),
    }
}

/// Writes a failed (or cancelled) run's summary. When the atomic write fails too — a full
/// disk has no room for the temporary copy — the old summary is overwritten in place with the
/// status and error alone (truncating it first frees the blocks that write needs), so the run
/// reads "failed" with its reason, never "interrupted".
pub fn record_failure(files: &RunFiles, summary: &RunSummary) -> Result<()> {
    let path = files.summary_path();
    let Err(e) = files.write_summary(summary) else {
        return Ok(());
    };
    // Not in place either when the claim was taken over: the run is another process's now.
    files.still_ours()?;
    let short = RunSummary {
        status: summary.status.clone(),
        model: summary.model.clone(),
        estimator: summary.estimator.clone(),
        error: summary.error.clone(),
        pid: summary.pid,
        provenance: summary.provenance.clone(),
        ..Default::default()
    };
    let Ok(value) = serde_json::to_value(&short) else {
        return Err(e);
    };
    std::fs::write(&path, crate::util::versioned(value).to_string()).map_err(|_| e)
}

/// Runs `train` with a cancel flag that is set when `cancel` is, or when the claim is lost
/// (another host took the run over): the training stops at its next check either way. A
/// thread looks at both every 50 ms while `train` runs.
fn stop_when_lost<T>(
    claim: &RunDir,
    cancel: &AtomicBool,
    train: &mut dyn FnMut(&AtomicBool) -> T,
) -> T {
    let stop = AtomicBool::new(cancel.load(Ordering::Relaxed));
    let done = AtomicBool::new(false);
    /// Ends the watch however `train` ends (a panic too: the scope waits for the thread).
    struct Done<'a>(&'a AtomicBool, std::thread::Thread);
    impl Drop for Done<'_> {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
            self.1.unpark();
        }
    }
    std::thread::scope(|s| {
        let watch = s.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                if cancel.load(Ordering::Relaxed) || claim.lost() {
                    stop.store(true, Ordering::Relaxed);
                }
                std::thread::park_timeout(std::time::Duration::from_millis(50));
            }
        });
        let _done = Done(&done, watch.thread().clone());
        train(&stop)
    })
}
