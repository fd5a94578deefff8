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
//!   [`HEARTBEAT`]. Another host treats the run as live until its heartbeat is further than
//!   [`STALE_AFTER`] from its own clock (older, or dated that far ahead), then may take it over;
//!   this host knows at once (the writer's `flock` is gone, or its process is).
//!
//! The claim file is removed when the claim ends; one left by a killed writer is stale as
//! above. A writer whose claim was taken over (it stalled past [`STALE_AFTER`]) learns it from
//! its heartbeat or its next write ([`Ownership`]) and stops without writing again.
//!
//! The claim file is read only when it is a regular file, and at most [`MAX_CLAIM_BYTES`] of
//! it: a FIFO, a directory or a link named `.claim.json` is an error naming it, never waited on
//! or followed.

use crate::error::{Error, Result};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
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
/// The most of a claim file that is read: a claim is a few hundred bytes, so a larger file (or
/// an endless one) is not a claim, and reading it must not fill memory.
pub const MAX_CLAIM_BYTES: u64 = 64 << 10;

/// Who claims, and how.
#[derive(Clone, Debug)]
pub struct ClaimOptions {
    /// This host's name ([`crate::provenance::host`]; tests stand in for other machines).
    pub host: String,
    /// Use `flock` too (off: a file system without it, as Lustre mounted `noflock`).
    pub flock: bool,
    /// Another host's claim is stale after this long without a heartbeat.
    pub stale_after: Duration,
    /// How often the claim's heartbeat is refreshed and the claim file read back (a takeover is
    /// noticed then; tests shorten it).
    pub heartbeat: Duration,
}

impl Default for ClaimOptions {
    fn default() -> ClaimOptions {
        ClaimOptions {
            host: crate::provenance::host(),
            flock: true,
            stale_after: STALE_AFTER,
            heartbeat: HEARTBEAT,
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
    /// Seconds between the last heartbeat and now, either way: a heartbeat dated in the future
    /// (a clock far ahead, a damaged file) ages as one as far in the past, so it cannot keep a
    /// run claimed for ever.
    pub fn age(&self) -> u64 {
        now_secs().abs_diff(self.heartbeat)
    }

    /// The heartbeat's age in words, for messages.
    fn age_words(&self) -> String {
        let now = now_secs();
        if self.heartbeat > now {
            format!(
                "its heartbeat is dated {} s ahead of this host's clock",
                self.heartbeat - now
            )
        } else {
            format!("its heartbeat is {} s old", now - self.heartbeat)
        }
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// `s` as it may be printed on a terminal: control characters (escape sequences, line breaks)
/// and invisible direction marks escaped, and cut after 200 characters. A claim file's host is
/// whatever the file says, not a name this program checked.
pub fn printable(s: &str) -> String {
    const MAX: usize = 200;
    let hidden = |c: char| {
        c.is_control()
            || matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
    };
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i == MAX {
            out.push('…');
            break;
        }
        if hidden(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// What a path named like a claim file holds.
#[derive(Debug)]
enum ClaimFile {
    Missing,
    Claim(ClaimInfo),
    /// A regular file that is no claim (empty, cut short, too large, not one's JSON), or one
    /// that cannot be read; why.
    Garbage(String),
    /// Not a regular file: what it is ("a directory", "a FIFO", …).
    NotAFile(&'static str),
}

/// What `t` is, when it is not a regular file.
fn not_a_file(t: &std::fs::FileType) -> Option<&'static str> {
    if t.is_file() {
        return None;
    }
    if t.is_dir() {
        return Some("a directory");
    }
    if t.is_symlink() {
        return Some("a symbolic link");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return Some("a FIFO");
        }
        if t.is_socket() {
            return Some("a socket");
        }
        if t.is_block_device() || t.is_char_device() {
            return Some("a device");
        }
    }
    Some("not a regular file")
}

/// Opens `path` for reading without following a symbolic link and without waiting on a FIFO
/// (its type is checked on the open file afterwards).
#[cfg(unix)]
fn open_plain(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
}

#[cfg(not(unix))]
fn open_plain(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::File::open(path)
}

/// Reads the claim file at `path`: only a regular file, at most [`MAX_CLAIM_BYTES`] of it.
fn read_claim(path: &Path) -> ClaimFile {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return ClaimFile::Missing,
        Err(e) => return ClaimFile::Garbage(e.to_string()),
    };
    if let Some(kind) = not_a_file(&meta.file_type()) {
        return ClaimFile::NotAFile(kind);
    }
    let f = match open_plain(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return ClaimFile::Missing,
        // Replaced by a link between the look and the open (O_NOFOLLOW).
        #[cfg(unix)]
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return ClaimFile::NotAFile("a symbolic link")
        }
        Err(e) => return ClaimFile::Garbage(e.to_string()),
    };
    match f.metadata() {
        Ok(m) => {
            if let Some(kind) = not_a_file(&m.file_type()) {
                return ClaimFile::NotAFile(kind);
            }
        }
        Err(e) => return ClaimFile::Garbage(e.to_string()),
    }
    let mut bytes = vec![];
    if let Err(e) = f.take(MAX_CLAIM_BYTES + 1).read_to_end(&mut bytes) {
        return ClaimFile::Garbage(e.to_string());
    }
    if bytes.len() as u64 > MAX_CLAIM_BYTES {
        return ClaimFile::Garbage(format!(
            "larger than {} KiB, not a claim",
            MAX_CLAIM_BYTES >> 10
        ));
    }
    match serde_json::from_slice(&bytes) {
        Ok(c) => ClaimFile::Claim(c),
        Err(e) => ClaimFile::Garbage(e.to_string()),
    }
}

/// The claim file of `dir`, if there is one that reads (a regular file holding a claim).
pub fn claim_info(dir: &Path) -> Option<ClaimInfo> {
    match read_claim(&dir.join(CLAIM_FILE)) {
        ClaimFile::Claim(c) => Some(c),
        _ => None,
    }
}

/// Whether a claim is still this process's, shared by its heartbeat and the run's writes: once
/// another claim stands in the claim file, every write of the run is refused.
#[derive(Debug)]
pub struct Ownership {
    dir: PathBuf,
    token: u64,
    lost: AtomicBool,
    /// The host that took the claim over, once one has.
    lost_to: Mutex<Option<String>>,
}

impl Ownership {
    fn new(dir: &Path, token: u64) -> Ownership {
        Ownership {
            dir: dir.to_path_buf(),
            token,
            lost: AtomicBool::new(false),
            lost_to: Mutex::new(None),
        }
    }

    /// Whether another claim has been seen in the claim file (by the heartbeat or a write).
    pub fn is_lost(&self) -> bool {
        self.lost.load(Ordering::SeqCst)
    }

    /// Reads the claim file back: an error once it holds another claim than this one. A file
    /// that is missing or does not read is not taken for a loss (a takeover moves the old claim
    /// aside only to link its own in its place, which the next look sees).
    pub fn check(&self) -> Result<()> {
        if !self.is_lost() {
            match read_claim(&self.dir.join(CLAIM_FILE)) {
                ClaimFile::Claim(c) if c.token != self.token => self.mark_lost(c.host),
                _ => return Ok(()),
            }
        }
        Err(self.error())
    }

    fn mark_lost(&self, host: String) {
        if let Ok(mut h) = self.lost_to.lock() {
            h.get_or_insert(host);
        }
        self.lost.store(true, Ordering::SeqCst);
    }

    /// The error of a run whose claim was taken over.
    pub fn error(&self) -> Error {
        let host = self
            .lost_to
            .lock()
            .ok()
            .and_then(|h| h.clone())
            .unwrap_or_else(|| "another process".into());
        Error::invalid(format!(
            "the claim on {} was taken over by {}; this process stops without writing",
            self.dir.display(),
            printable(&host)
        ))
    }
}

/// The locks of a claimed run directory, held until dropped (or the process ends).
pub struct Claim {
    // Dropped in this order: the heartbeat stops and the claim file goes, then the flock.
    claim: Heartbeat,
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
        Ok(Claim { claim, _lock: lock })
    }

    /// Whether the claim is still this process's, for the run's writes to check.
    pub fn ownership(&self) -> Arc<Ownership> {
        self.claim.own.clone()
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
    result.map(|()| Heartbeat::start(path, info, o.heartbeat, dir))
}

fn write_synced(p: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    std::fs::File::create(p)
        .and_then(|mut f| f.write_all(bytes).and_then(|()| f.sync_all()))
        .map_err(|e| Error::io(p, e))
}

/// Links the written claim `tmp` to the claim file's name; a live claim there refuses, a stale
/// one is moved aside first, and what is not a regular file is refused, left as it is.
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
        match read_claim(path) {
            // Moved aside since: link again.
            ClaimFile::Missing => {}
            ClaimFile::Claim(c) if live(&c, &o.host, flock_held, o.stale_after) => {
                return Err(busy(format!(
                    "{} (process {}, since {}) is writing this run; {}, and another host takes \
                     it over after {} s without one",
                    if c.host == o.host {
                        "this host".to_string()
                    } else {
                        format!("host {}", printable(&c.host))
                    },
                    c.pid,
                    printable(&c.started),
                    c.age_words(),
                    o.stale_after.as_secs()
                )))
            }
            ClaimFile::Claim(c) => move_aside(dir, path, Some(c.token))?,
            ClaimFile::NotAFile(kind) => {
                return Err(Error::file(
                    path.display().to_string(),
                    format!(
                        "is {kind}, not a claim file this program wrote; remove it to run in \
                         this directory"
                    ),
                ))
            }
            // A claim is written whole and linked into place, so one that does not read is no
            // live claimer's: with the directory's flock ours, no process of this host writes
            // here and it is taken over at once; without flock, once as old as a stale claim.
            ClaimFile::Garbage(why) => {
                if !flock_held && !older_than(path, o.stale_after) {
                    return Err(busy(format!(
                        "its claim file {CLAIM_FILE} cannot be read ({}); it is taken over once \
                         {} s old",
                        printable(&why),
                        o.stale_after.as_secs()
                    )));
                }
                move_aside(dir, path, None)?
            }
        }
    }
    Err(busy(
        "another process claimed this run at the same moment; choose another --out or try again"
            .into(),
    ))
}

/// Whether `path` was last modified further than `age` from now, either way (a time in the
/// future ages too).
fn older_than(path: &Path, age: Duration) -> bool {
    std::fs::symlink_metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .map(|t| t.elapsed().unwrap_or_else(|e| e.duration()))
        .is_some_and(|d| d > age)
}

/// Moves the stale claim `token` (`None`: a file that did not read as a claim) out of the claim
/// file's name. Should another claimer have replaced it meanwhile, its claim is put back and
/// this one refused.
fn move_aside(dir: &Path, path: &Path, token: Option<u64>) -> Result<()> {
    let aside = dir.join(format!("{CLAIM_FILE}.tmp-stale-{}", self::token()));
    match std::fs::rename(path, &aside) {
        Ok(()) => {}
        // Another claimer moved it first.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(path, e)),
    }
    let replaced = match read_claim(&aside) {
        ClaimFile::Claim(m) => token != Some(m.token),
        ClaimFile::NotAFile(_) => {
            let _ = std::fs::rename(&aside, path);
            true
        }
        ClaimFile::Missing | ClaimFile::Garbage(_) => false,
    };
    if replaced {
        if aside.exists() {
            let _ = std::fs::hard_link(&aside, path);
            let _ = std::fs::remove_file(&aside);
        }
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

/// The thread that refreshes a claim's heartbeat and reads the claim back, marking it lost
/// when another claim stands there; dropping it stops the thread and removes the claim file
/// (when it is still this claim's).
struct Heartbeat {
    path: PathBuf,
    own: Arc<Ownership>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Heartbeat {
    fn start(path: PathBuf, info: ClaimInfo, every: Duration, dir: &Path) -> Heartbeat {
        let stop = Arc::new(AtomicBool::new(false));
        let own = Arc::new(Ownership::new(dir, info.token));
        let (p, s, o) = (path.clone(), stop.clone(), own.clone());
        let thread = std::thread::Builder::new()
            .name("claim heartbeat".into())
            .spawn(move || {
                let mut info = info;
                let mut last = std::time::Instant::now();
                while !s.load(Ordering::Relaxed) {
                    std::thread::sleep(every.min(Duration::from_millis(100)));
                    if last.elapsed() < every {
                        continue;
                    }
                    last = std::time::Instant::now();
                    match read_claim(&p) {
                        ClaimFile::Claim(c) if c.token == info.token => {}
                        // Taken over (this host was thought dead): the run stops writing.
                        ClaimFile::Claim(c) => return o.mark_lost(c.host),
                        // Moved aside mid-takeover, or unreadable: not refreshed, looked at
                        // again at the next beat.
                        _ => continue,
                    }
                    info.heartbeat = now_secs();
                    let text = serde_json::to_string(&info).expect("a claim serialises");
                    let _ = crate::util::write_atomic(&p, text.as_bytes());
                }
            })
            .ok();
        Heartbeat {
            path,
            own,
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
        if matches!(read_claim(&self.path), ClaimFile::Claim(c) if c.token == self.own.token) {
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
