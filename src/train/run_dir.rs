//! A run directory while a run writes it: claimed before anything is written, so two runs (or
//! two app windows) never write the same directory, a finished run or an unrelated folder is
//! not overwritten unless asked, and a run killed mid-training is recognised afterwards.
//!
//! The claim is an exclusive `flock` on the directory itself: the kernel releases it when the
//! process ends, however it ends, so a directory whose `summary.json` says `running` but which
//! nobody holds was interrupted — and no lock file is left behind.

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// The files a run writes (and `--force` clears before a new run writes them again).
pub const RUN_FILES: &[&str] = &[
    "spec.json",
    "summary.json",
    "curve.jsonl",
    "model.json",
    "weights.bin",
    "scaling.json",
    "camel.json",
];

/// What to do with a directory that already holds files.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Existing {
    /// Refuse a finished (or failed, cancelled, interrupted) run and a non-empty directory.
    #[default]
    Refuse,
    /// Replace a run's files; write beside other files.
    Replace,
}

/// A claimed run directory; the claim ends when this is dropped (or the process ends).
pub struct RunDir {
    path: PathBuf,
    _lock: std::fs::File,
}

impl RunDir {
    /// Claims `out` for a new run: creates it, takes its lock (refusing a directory another
    /// process is writing), checks it can be written, refuses existing contents unless
    /// `existing` is [`Existing::Replace`], and removes temporary files a killed run left.
    pub fn claim(out: &Path, existing: Existing) -> Result<RunDir> {
        let name = out.display().to_string();
        if out.exists() && !out.is_dir() {
            return Err(Error::file(
                &name,
                "exists and is not a directory: a run directory is a folder",
            ));
        }
        std::fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
        let lock =
            lock(out)?.ok_or_else(|| {
                Error::file(
                    &name,
                    format!(
                    "another run is writing this directory{}; wait for it or choose another --out",
                    owner(out).map(|p| format!(" (process {p})")).unwrap_or_default()
                ),
                )
            })?;
        if existing == Existing::Refuse {
            refuse_contents(out)?;
        }
        for entry in std::fs::read_dir(out)
            .map_err(|e| Error::io(out, e))?
            .flatten()
        {
            let f = entry.file_name().to_string_lossy().into_owned();
            let ours = RUN_FILES.contains(&f.as_str());
            if is_temporary(&f) || (existing == Existing::Replace && ours) {
                std::fs::remove_file(entry.path()).map_err(|e| Error::io(&entry.path(), e))?;
            }
        }
        // Can it be written? (A read-only directory fails here, before any training.)
        let probe = out.join(format!(".write-test-{}", std::process::id()));
        std::fs::write(&probe, b"")
            .and_then(|()| std::fs::remove_file(&probe))
            .map_err(|e| Error::file(&name, format!("cannot write here: {e}")))?;
        Ok(RunDir {
            path: out.to_path_buf(),
            _lock: lock,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
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

/// Whether a process holds `dir` (a run is writing it now).
pub fn is_claimed(dir: &Path) -> bool {
    matches!(lock(dir), Ok(None))
}

/// The writer's process id, as the run's `summary.json` records it.
fn owner(dir: &Path) -> Option<u32> {
    let s: serde_json::Value = crate::util::read_json(&dir.join("summary.json")).ok()?;
    s.get("pid")?.as_u64().map(|p| p as u32)
}

/// Takes the directory's exclusive lock without waiting: `None` when another process holds it.
/// std's `File::try_lock` (flock on Unix, as before, so older binaries see the same claim).
fn lock(dir: &Path) -> Result<Option<std::fs::File>> {
    let f = lock_file(dir)?;
    match f.try_lock() {
        Ok(()) => Ok(Some(f)),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => Err(Error::io(dir, e)),
    }
}

/// What the claim locks: the directory itself on Unix.
#[cfg(unix)]
fn lock_file(dir: &Path) -> Result<std::fs::File> {
    std::fs::File::open(dir).map_err(|e| Error::io(dir, e))
}

/// What the claim locks: elsewhere a directory cannot be opened as a file, so a `.claim` file
/// inside it (ignored as the temporary files are).
#[cfg(not(unix))]
fn lock_file(dir: &Path) -> Result<std::fs::File> {
    let p = dir.join(CLAIM_FILE);
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&p)
        .map_err(|e| Error::io(&p, e))
}

/// The lock file of a claim where directories cannot be locked (not Unix).
#[cfg_attr(unix, allow(dead_code))]
const CLAIM_FILE: &str = ".claim";

/// Temporary files of [`crate::util::write_atomic`] (`.NAME.tmp-PID`) and of the write test.
fn is_temporary(f: &str) -> bool {
    f.starts_with('.') && (f.contains(".tmp-") || f.starts_with(".write-test-") || f == CLAIM_FILE)
}

fn refuse_contents(out: &Path) -> Result<()> {
    let name = out.display().to_string();
    let summary = out.join("summary.json");
    if summary.exists() {
        let status = crate::util::read_json::<serde_json::Value>(&summary)
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
        .filter(|f| !is_temporary(f))
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
