//! Ctrl-C and SIGTERM as a cancellation: the first sets the flag a run polls between (and
//! inside) iterations, so it stops where it is, writes its checkpoint and records itself as
//! cancelled; a second ends the process at once. Slurm sends SIGTERM at a job's time limit and
//! SIGKILL some seconds later, so a run cut off by its limit resumes from where it stopped.

use std::sync::atomic::{AtomicBool, Ordering};

static CANCEL: AtomicBool = AtomicBool::new(false);

#[cfg(unix)]
extern "C" fn on_signal(sig: libc::c_int) {
    if CANCEL.swap(true, Ordering::SeqCst) {
        // SAFETY: `_exit` is async-signal-safe.
        unsafe { libc::_exit(128 + sig) }
    }
}

/// Installs the handlers (once) and returns the flag they set.
pub fn cancel_on_signals() -> &'static AtomicBool {
    #[cfg(unix)]
    {
        static INSTALLED: std::sync::Once = std::sync::Once::new();
        INSTALLED.call_once(|| {
            let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            // SAFETY: the handler only touches an atomic and calls `_exit`.
            unsafe {
                libc::signal(libc::SIGINT, handler);
                libc::signal(libc::SIGTERM, handler);
            }
        });
    }
    &CANCEL
}
