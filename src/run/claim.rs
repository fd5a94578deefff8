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

/// The locks of a claimed run directory, held until dropped (or the process ends).
pub struct Claim {
    // Dropped in this order: the heartbeat stops and the claim file goes, then the flock.
    _claim: Heartbeat,
    _lock: Option<std::fs::File>,
}

impl Claim {
    /// Takes `dir`'s locks as `o.host`: its flock (refused while another process of this host
    /// holds it; skipped where the file system has none), then its claim file (refused while
    /// another writer of any host is live; a stale one taken over).
    pub fn take(dir: &Path, o: &ClaimOptions) -> Result<Claim> {
        let lock = if o.flock {
            match lock(dir)? {
                Lock::Held(f) => Some(f),
                Lock::Unsupported => None,
                Lock::Busy => {
                    return Err(Error::file(
                        dir.display().to_string(),
                        format!(
                            "another run is writing this directory{}; wait for it or choose another --out",
                            claim_info(dir)
                                .map(|c| format!(" (process {})", c.pid))
                                .unwrap_or_default()
                        ),
                    ))
                }
            }
        } else {
            None
        };
        let claim = take(dir, o, lock.is_some())?;
        Ok(Claim {
            _claim: claim,
            _lock: lock,
        })
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

/// Creates the claim file exclusively, taking over a stale one (a dead writer's). The file is
/// written whole under a temporary name and then hard-linked into place — `link` fails when
/// the name exists, atomically on NFS too — so no claimer ever reads a half-written claim.
fn take(dir: &Path, o: &ClaimOptions, flock_held: bool) -> Result<Heartbeat> {
    let path = dir.join(CLAIM_FILE);
    let info = ClaimInfo {
        host: o.host.clone(),
        pid: std::process::id(),
        started: crate::provenance::now_rfc3339(),
        heartbeat: now_secs(),
        token: token(),
    };
    let tmp = dir.join(format!("{CLAIM_FILE}.tmp-{}-{}", info.pid, info.token));
    let text = serde_json::to_string(&info).expect("a claim serialises");
    write_synced(&tmp, text.as_bytes())?;
    let result = link_claim(dir, &tmp, &path, o, flock_held);
    let _ = std::fs::remove_file(&tmp);
    result.map(|()| Heartbeat::start(path, info))
}

fn write_synced(p: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    std::fs::File::create(p)
        .and_then(|mut f| f.write_all(bytes).and_then(|()| f.sync_all()))
        .map_err(|e| Error::io(p, e))
}

/// Links the written claim `tmp` to the claim file's name; a live claim there refuses, a stale
/// one is moved aside first.
fn link_claim(
    dir: &Path,
    tmp: &Path,
    path: &Path,
    o: &ClaimOptions,
    flock_held: bool,
) -> Result<()> {
    let busy = |why: String| Error::file(dir.display().to_string(), why);
    // Twice at most: once more after moving a stale claim aside.
    for _ in 0..2 {
        let e = match std::fs::hard_link(tmp, path) {
            Ok(()) => return Ok(()),
            Err(e) => e,
        };
        if e.kind() != std::io::ErrorKind::AlreadyExists {
            if e.kind() == std::io::ErrorKind::NotFound {
                return Err(busy(
                    "another process claimed this run at the same moment".into(),
                ));
            }
            return Err(Error::io(path, e));
        }
        match claim_info(dir) {
            Some(c) if live(&c, &o.host, flock_held, o.stale_after) => {
                return Err(busy(format!(
                    "{} (process {}, since {}) is writing this run; its heartbeat is {} s old, \
                     and another host takes it over after {} s without one",
                    if c.host == o.host {
                        "this host".to_string()
                    } else {
                        format!("host {}", c.host)
                    },
                    c.pid,
                    c.started,
                    c.age(),
                    o.stale_after.as_secs()
                )))
            }
            Some(c) => move_aside(dir, path, c.token)?,
            // Unreadable: damaged, or an older claimer's. Stale once as old as a stale claim.
            None => {
                let old = std::fs::metadata(path)
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| t.elapsed().ok())
                    .is_some_and(|age| age > o.stale_after);
                if !old {
                    return Err(busy(format!(
                        "its claim file {CLAIM_FILE} cannot be read; it is taken over once {} s old",
                        o.stale_after.as_secs()
                    )));
                }
                let _ = std::fs::remove_file(path);
            }
        }
    }
    Err(busy(
        "another process claimed this run at the same moment; choose another --out or try again"
            .into(),
    ))
}

/// Moves the stale claim `token` out of the claim file's name. Should another claimer have
/// replaced it meanwhile, its claim is put back and this one refused.
fn move_aside(dir: &Path, path: &Path, token: u64) -> Result<()> {
    let aside = dir.join(format!("{CLAIM_FILE}.tmp-stale-{}", self::token()));
    match std::fs::rename(path, &aside) {
        Ok(()) => {}
        // Another claimer moved it first.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(path, e)),
    }
    let moved: Option<ClaimInfo> = crate::util::read_json(&aside).ok();
    if moved.is_some_and(|m| m.token != token) {
        let _ = std::fs::hard_link(&aside, path);
        let _ = std::fs::remove_file(&aside);
        return Err(Error::file(
            dir.display().to_string(),
            "another process claimed this run at the same moment; choose another --out or try again",
        ));
    }
    let _ = std::fs::remove_file(&aside);
    Ok(())
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
