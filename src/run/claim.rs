//! Claiming a run directory: one writer at a time, on one machine or many sharing a file system.
//!
//! Two locks, because neither serves alone:
//!
//! - **`flock` on the directory** (std's `File::try_lock`; a `.lock` file where directories
//!   cannot be opened) — the same-host fast path. The kernel releases it however the process
//!   ends, so a run nobody holds reads as interrupted at once. On NFS it excludes only processes
//!   of the same node, and Lustre mounted `noflock` does not have it (then the claim goes on
//!   without it).
//! - **The claim file** `.claim.json`, created exclusively (`create_new`, atomic on NFS v3+ and
//!   Lustre), holding the host, the process, the start and a heartbeat the run refreshes every
//!   [`HEARTBEAT`]. Another host treats the run as live until its heartbeat is older than
//!   [`STALE_AFTER`], then may take it over; this host knows at once (the writer's `flock` is
//!   gone, or its process is).
//!
//! The claim file is removed when the claim ends; one left by a killed writer is stale as
//! above.

use super::store::{is_temporary, refuse_contents, refuse_foreign, Existing, RunFiles, RUN_FILES};
use crate::error::{Error, Result};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The claim file's name in a run directory.
pub const CLAIM_FILE: &str = ".claim.json";
/// What `flock` locks where a directory cannot be opened as a file (not Unix).
pub const LOCK_FILE: &str = ".lock";
/// How often a running run refreshes its claim file's heartbeat.
pub const HEARTBEAT: Duration = Duration::from_secs(30);
/// Another host's claim with a heartbeat older than this is stale (its writer died): ten
/// heartbeats, room for clocks a few minutes apart.
pub const STALE_AFTER: Duration = Duration::from_secs(600);

/// Who claims, and how.
#[derive(Clone, Debug)]
pub struct ClaimOptions {
    /// This host's name ([`crate::provenance::host`]; tests stand in for other machines).
    pub host: String,
    /// Use `flock` too (off: a file system without it, as Lustre mounted `noflock`).
    pub flock: bool,
    /// Another host's claim is stale after this long without a heartbeat.
    pub stale_after: Duration,
}

impl Default for ClaimOptions {
    fn default() -> ClaimOptions {
        ClaimOptions {
            host: crate::provenance::host(),
            flock: true,
            stale_after: STALE_AFTER,
        }
    }
}

/// What the claim file says.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ClaimInfo {
    pub host: String,
    pub pid: u32,
    /// UTC, RFC 3339.
    pub started: String,
    /// Seconds since 1970 (UTC) of the last heartbeat.
    pub heartbeat: u64,
    /// Tells this claim from a later one of the same host and process.
    pub token: u64,
}

impl ClaimInfo {
    /// Seconds since the last heartbeat (0 when the clocks disagree the other way).
    pub fn age(&self) -> u64 {
        now_secs().saturating_sub(self.heartbeat)
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The claim file of `dir`, if there is one that reads.
pub fn claim_info(dir: &Path) -> Option<ClaimInfo> {
    crate::util::read_json(&dir.join(CLAIM_FILE)).ok()
}

/// A claimed run directory; the claim ends when this is dropped (or the process ends).
pub struct RunDir {
    path: PathBuf,
    // Dropped in this order: the heartbeat stops and the claim file goes, then the flock.
    _claim: Heartbeat,
    _lock: Option<std::fs::File>,
}

impl RunDir {
    /// Claims `out` for a new run as this host ([`ClaimOptions::default`]): see
    /// [`claim_with`](Self::claim_with).
    pub fn claim(out: &Path, existing: Existing) -> Result<RunDir> {
        Self::claim_with(out, existing, &ClaimOptions::default())
    }

    /// Claims `out`: creates it, takes its locks (refusing a directory another process of any
    /// host is writing), checks it can be written, refuses existing contents unless `existing`
    /// allows them, and removes temporary files a killed run left.
    pub fn claim_with(out: &Path, existing: Existing, o: &ClaimOptions) -> Result<RunDir> {
        let name = out.display().to_string();
        if out.exists() && !out.is_dir() {
            return Err(Error::file(
                &name,
                "exists and is not a directory: a run directory is a folder",
            ));
        }
        std::fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
        let lock = if o.flock {
            match lock(out)? {
                Lock::Held(f) => Some(f),
                Lock::Unsupported => None,
                Lock::Busy => {
                    return Err(Error::file(
                        &name,
                        format!(
                            "another run is writing this directory{}; wait for it or choose another --out",
                            owner(out).map(|p| format!(" (process {p})")).unwrap_or_default()
                        ),
                    ))
                }
            }
        } else {
            None
        };
        let claim = take(out, o, lock.is_some())?;
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
            if (is_temporary(&f) && f != LOCK_FILE) || (existing == Existing::Replace && ours) {
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
            _claim: claim,
            _lock: lock,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the run's files the directory holds (the claim is kept): a run starting again.
    pub fn clear_run_files(&self) -> Result<()> {
        for f in RUN_FILES {
            let p = self.path.join(f);
            if p.exists() {
                std::fs::remove_file(&p).map_err(|e| Error::io(&p, e))?;
            }
        }
        Ok(())
    }
}

/// Whether a process holds `dir` (a run is writing it now): this host's by its `flock`, another
/// host's by a fresh heartbeat.
pub fn is_claimed(dir: &Path) -> bool {
    let flock_free = match lock(dir) {
        Ok(Lock::Busy) => return true,
        Ok(Lock::Held(_)) => true,
        Ok(Lock::Unsupported) | Err(_) => false,
    };
    let here = crate::provenance::host();
    claim_info(dir).is_some_and(|c| live(&c, &here, flock_free, STALE_AFTER))
}

/// Whether the claim `c` has a live writer, seen from `host` (holding the directory's flock
/// or not).
fn live(c: &ClaimInfo, host: &str, flock_held: bool, stale_after: Duration) -> bool {
    if c.host == host {
        // This host: its writer's flock would have kept ours out; without flock, its process.
        !flock_held && process_alive(c.pid)
    } else {
        c.age() <= stale_after.as_secs()
    }
}

/// Whether process `pid` of this host runs (Linux: `/proc`; elsewhere assumed, so the heartbeat
/// decides).
fn process_alive(pid: u32) -> bool {
    if cfg!(target_os = "linux") {
        Path::new(&format!("/proc/{pid}")).exists()
    } else {
        true
    }
}

/// Creates the claim file exclusively, taking over a stale one (a dead writer's).
fn take(dir: &Path, o: &ClaimOptions, flock_held: bool) -> Result<Heartbeat> {
    let path = dir.join(CLAIM_FILE);
    let info = ClaimInfo {
        host: o.host.clone(),
        pid: std::process::id(),
        started: crate::provenance::now_rfc3339(),
        heartbeat: now_secs(),
        token: token(),
    };
    // Twice at most: once more after removing a stale claim (another taker may win that race).
    for _ in 0..2 {
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(mut f) => {
                use std::io::Write;
                let text = serde_json::to_string(&info).expect("a claim serialises");
                f.write_all(text.as_bytes())
                    .and_then(|()| f.sync_all())
                    .map_err(|e| Error::io(&path, e))?;
                return Ok(Heartbeat::start(path, info));
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                match claim_info(dir) {
                    Some(c) if live(&c, &o.host, flock_held, o.stale_after) => {
                        return Err(Error::file(
                            dir.display().to_string(),
                            format!(
                                "{} (process {}, since {}) is writing this run; its heartbeat is {} s old, \
                                 and another host takes it over after {} s without one",
                                if c.host == o.host { "this host".to_string() } else { format!("host {}", c.host) },
                                c.pid,
                                c.started,
                                c.age(),
                                o.stale_after.as_secs()
                            ),
                        ))
                    }
                    // Stale, or unreadable (a writer killed while creating it): taken over.
                    _ => {
                        let _ = std::fs::remove_file(&path);
                    }
                }
            }
            Err(e) => return Err(Error::io(&path, e)),
        }
    }
    Err(Error::file(
        dir.display().to_string(),
        "another process claimed this run at the same moment; choose another --out or try again",
    ))
}

/// A value unlikely to repeat: the time in nanoseconds mixed with the process and a counter.
fn token() -> u64 {
    static COUNT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let t = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    t ^ (u64::from(std::process::id()) << 32) ^ COUNT.fetch_add(1, Ordering::Relaxed)
}

/// The thread that refreshes a claim's heartbeat; dropping it stops the thread and removes
/// the claim file (when it is still this claim's).
struct Heartbeat {
    path: PathBuf,
    token: u64,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Heartbeat {
    fn start(path: PathBuf, info: ClaimInfo) -> Heartbeat {
        let stop = Arc::new(AtomicBool::new(false));
        let (p, s, token) = (path.clone(), stop.clone(), info.token);
        let thread = std::thread::Builder::new()
            .name("claim heartbeat".into())
            .spawn(move || {
                let mut info = info;
                let mut last = std::time::Instant::now();
                while !s.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(100));
                    if last.elapsed() < HEARTBEAT {
                        continue;
                    }
                    last = std::time::Instant::now();
                    // Taken over (this host was thought dead): stop refreshing it.
                    let dir = p.parent().unwrap_or(Path::new("."));
                    if claim_info(dir).is_none_or(|c| c.token != info.token) {
                        return;
                    }
                    info.heartbeat = now_secs();
                    let text = serde_json::to_string(&info).expect("a claim serialises");
                    let _ = crate::util::write_atomic(&p, text.as_bytes());
                }
            })
            .ok();
        Heartbeat {
            path,
            token,
            stop,
            thread,
        }
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let dir = self.path.parent().unwrap_or(Path::new("."));
        if claim_info(dir).is_some_and(|c| c.token == self.token) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// The writer's process id, as the run's summary records it.
fn owner(dir: &Path) -> Option<u32> {
    RunFiles::at(dir)
        .summary_value()
        .ok()?
        .get("pid")?
        .as_u64()
        .map(|p| p as u32)
}

/// The directory's `flock`, tried without waiting.
enum Lock {
    Held(std::fs::File),
    Busy,
    /// The file system has no `flock` (Lustre `noflock`: ENOSYS; NFS without lockd: ENOLCK).
    Unsupported,
}

/// Takes the directory's exclusive lock without waiting. std's `File::try_lock` (flock on Unix,
/// as before, so older binaries see the same claim).
fn lock(dir: &Path) -> Result<Lock> {
    let f = lock_file(dir)?;
    match f.try_lock() {
        Ok(()) => Ok(Lock::Held(f)),
        Err(std::fs::TryLockError::WouldBlock) => Ok(Lock::Busy),
        Err(std::fs::TryLockError::Error(e)) if unsupported(&e) => Ok(Lock::Unsupported),
        Err(std::fs::TryLockError::Error(e)) => Err(Error::io(dir, e)),
    }
}

fn unsupported(e: &std::io::Error) -> bool {
    if e.kind() == std::io::ErrorKind::Unsupported {
        return true;
    }
    #[cfg(unix)]
    {
        matches!(
            e.raw_os_error(),
            Some(libc::ENOSYS) | Some(libc::ENOLCK) | Some(libc::EOPNOTSUPP)
        )
    }
    #[cfg(not(unix))]
    {
        false
    }
}

/// What the claim locks: the directory itself on Unix.
#[cfg(unix)]
fn lock_file(dir: &Path) -> Result<std::fs::File> {
    std::fs::File::open(dir).map_err(|e| Error::io(dir, e))
}

/// What the claim locks: elsewhere a directory cannot be opened as a file, so [`LOCK_FILE`]
/// inside it (ignored as the temporary files are).
#[cfg(not(unix))]
fn lock_file(dir: &Path) -> Result<std::fs::File> {
    let p = dir.join(LOCK_FILE);
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&p)
        .map_err(|e| Error::io(&p, e))
}
