//! Background work for the GUI: anything that reads files or computes runs on its own thread and
//! hands its result back through a channel the UI polls each frame.

use std::sync::mpsc::{channel, Receiver, TryRecvError};
use std::time::Instant;

/// One piece of background work producing a `T` (or an error message for the user).
pub struct Job<T> {
    rx: Receiver<Result<T, String>>,
    /// What the job does, for the status bar.
    pub what: String,
    pub started: Instant,
}

impl<T: Send + 'static> Job<T> {
    /// Starts `work` on a new thread; the UI is asked to repaint when it finishes.
    pub fn spawn(
        ctx: &egui::Context,
        what: impl Into<String>,
        work: impl FnOnce() -> Result<T, String> + Send + 'static,
    ) -> Job<T> {
        let (tx, rx) = channel();
        let ctx = ctx.clone();
        std::thread::spawn(move || {
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work))
                .unwrap_or_else(|_| Err("internal error: the background task panicked".into()));
            let _ = tx.send(result);
            ctx.request_repaint();
        });
        Job {
            rx,
            what: what.into(),
            started: Instant::now(),
        }
    }

    /// The result, once the job has finished.
    pub fn poll(&mut self) -> Option<Result<T, String>> {
        match self.rx.try_recv() {
            Ok(r) => Some(r),
            Err(TryRecvError::Empty) => None,
            Err(TryRecvError::Disconnected) => {
                Some(Err("background task ended without a result".into()))
            }
        }
    }
}

/// Polls an optional job slot; returns the result and empties the slot when done.
pub fn take_finished<T: Send + 'static>(slot: &mut Option<Job<T>>) -> Option<Result<T, String>> {
    let r = slot.as_mut()?.poll()?;
    *slot = None;
    Some(r)
}

/// Removes the finished jobs of a keyed set and returns their results.
pub fn drain_finished<K: Clone + Eq + std::hash::Hash, T: Send + 'static>(
    jobs: &mut std::collections::HashMap<K, Job<T>>,
) -> Vec<(K, Result<T, String>)> {
    let done: Vec<(K, Result<T, String>)> = jobs
        .iter_mut()
        .filter_map(|(k, j)| j.poll().map(|r| (k.clone(), r)))
        .collect();
    for (k, _) in &done {
        jobs.remove(k);
    }
    done
}

/// State a pane computes rather than saves (jobs and their results): skipped when the layout
/// is saved, and started afresh when a pane is copied.
#[derive(Default)]
pub struct Transient<T>(pub T);

impl<T: Default> Clone for Transient<T> {
    fn clone(&self) -> Self {
        Transient(T::default())
    }
}

impl<T> std::fmt::Debug for Transient<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Transient")
    }
}

impl<T> std::ops::Deref for Transient<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> std::ops::DerefMut for Transient<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}
