//! Small shared helpers: atomic file writes and stable log-sum-exp.

use crate::error::{Error, Result};
use std::io::Write;
use std::path::Path;

mod files;
pub use files::same_file;

/// Where a write to a path lands — decided here, once, for every command that writes a file.
#[derive(Debug, PartialEq)]
enum Target {
    /// `-` or `/dev/stdout`: this process's standard output.
    Stdout,
    /// Something that is not a regular file (a character or block device such as `/dev/null`,
    /// a FIFO, a descriptor under `/proc` or `/dev/fd`): written in place, never renamed over.
    Direct(std::path::PathBuf),
    /// A regular file or a new path (a symlink's final target): written beside it and renamed
    /// over it, so a reader never sees it half-written.
    Atomic(std::path::PathBuf),
}

/// How many symbolic links [`target`] follows before giving up (Linux's own limit).
const MAX_LINKS: usize = 40;

/// Resolves `path` to its [`Target`]: symlinks are followed to the file they name (so the link
/// stays a link), and what is not a regular file is written directly.
fn target(path: &Path) -> Result<Target> {
    if path.as_os_str() == "-" || path == Path::new("/dev/stdout") {
        return Ok(Target::Stdout);
    }
    let mut p = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        // Descriptor links (`/proc/self/fd/1` → `pipe:[…]`) name no path: let the kernel open them.
        if p.starts_with("/proc") || p.starts_with("/dev/fd") {
            return Ok(Target::Direct(p));
        }
        let meta = match std::fs::symlink_metadata(&p) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Target::Atomic(p)),
            Err(e) => return Err(Error::io(&p, e)),
        };
        let ft = meta.file_type();
        if ft.is_symlink() {
            let to = std::fs::read_link(&p).map_err(|e| Error::io(&p, e))?;
            p = match p.parent() {
                Some(dir) if to.is_relative() => dir.join(to),
                _ => to,
            };
        } else if ft.is_file() {
            return Ok(Target::Atomic(p));
        } else if ft.is_dir() {
            return Err(Error::file(
                path.display().to_string(),
                "is a directory, not a file to write",
            ));
        } else {
            return Ok(Target::Direct(p));
        }
    }
    Err(Error::file(
        path.display().to_string(),
        format!("more than {MAX_LINKS} symbolic links in a row"),
    ))
}

/// Writes `bytes` to `path` without ever leaving it half-written or clobbering what is not a
/// file: a regular file (or a new path, its folders created) is written to a temporary file
/// beside it and renamed over it; a symlink is followed and the file it names replaced the same
/// way, in that file's folder; a device, FIFO or descriptor (`/dev/null`, `/dev/stderr`) is
/// written in place; `-` and `/dev/stdout` are standard output.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_with(path, &mut |w| w.write_all(bytes))
}

/// [`write_atomic`] for a file written in pieces by `write` (a checkpoint of several hundred
/// megabytes is never gathered in memory first).
pub fn write_atomic_with(
    path: &Path,
    write: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    match target(path)? {
        Target::Stdout => {
            let mut so = std::io::stdout().lock();
            write(&mut so)
                .and_then(|()| so.flush())
                .map_err(|e| Error::io(Path::new("<stdout>"), e))
        }
        Target::Direct(p) => std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&p)
            .and_then(|f| {
                let mut w = std::io::BufWriter::new(f);
                write(&mut w).and_then(|()| w.flush())
            })
            .map_err(|e| Error::io(path, e)),
        Target::Atomic(p) => replace_file(&p, write).map_err(|e| Error::io(path, e)),
    }
}

/// Writes `bytes` to standard output and flushes them: a failed write (a full disk, a closed
/// descriptor) is an error naming standard output, never a panic as `println!`'s is.
pub fn write_stdout(bytes: &[u8]) -> Result<()> {
    let mut so = std::io::stdout().lock();
    so.write_all(bytes)
        .and_then(|()| so.flush())
        .map_err(|e| Error::io(Path::new("<stdout>"), e))
}

/// Writes a temporary file (created new, never through an existing name) beside `path` with
/// the existing file's permissions, syncs it and renames it over `path`.
fn replace_file(
    path: &Path,
    write: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(dir) = dir {
        std::fs::create_dir_all(dir)?;
    }
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a file path"))?
        .to_string_lossy();
    let meta = std::fs::metadata(path).ok();
    if let Some(m) = &meta {
        may_replace(m)?;
    }
    let mode = meta.map(|m| m.permissions());
    let pid = std::process::id();
    let mut made = None;
    for k in 0..100u32 {
        let tmp = path.with_file_name(match k {
            0 => format!(".{name}.tmp-{pid}"),
            _ => format!(".{name}.tmp-{pid}-{k}"),
        });
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
        {
            Ok(f) => {
                made = Some((tmp, f));
                break;
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    let Some((tmp, f)) = made else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            "no free name for a temporary file beside it",
        ));
    };
    let result = (|| {
        if let Some(mode) = mode {
            f.set_permissions(mode)?;
        }
        let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
        write(&mut w)?;
        let f = w.into_inner().map_err(|e| e.into_error())?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Refuses to replace a file this user could not have written in place: renaming over it needs
/// only the folder's write permission, which would let a write clobber a read-only file, or (as
/// root) another user's. The file's own mode decides, by the class the user is in (root has no
/// exception here).
#[cfg(unix)]
fn may_replace(m: &std::fs::Metadata) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: these calls only read the process's credentials.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    let in_group = gid == m.gid() || {
        // SAFETY: getgroups with 0 asks for the count; the second call fills a buffer of it.
        let n = unsafe { libc::getgroups(0, std::ptr::null_mut()) };
        let mut groups = vec![0 as libc::gid_t; n.max(0) as usize];
        let got = unsafe { libc::getgroups(n.max(0), groups.as_mut_ptr()) };
        groups[..got.max(0) as usize].contains(&m.gid())
    };
    let (bit, whose) = if uid == m.uid() {
        (0o200, "")
    } else if in_group {
        (0o020, " (another user's file: its group may not write it)")
    } else {
        (0o002, " (another user's file)")
    };
    if m.mode() & bit == 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!(
                "is read-only for this user (mode {:04o}, owner uid {}){whose}: it is not \
                 replaced; make it writable or choose another path",
                m.mode() & 0o7777,
                m.uid()
            ),
        ));
    }
    Ok(())
}

#[cfg(not(unix))]
fn may_replace(m: &std::fs::Metadata) -> std::io::Result<()> {
    if m.permissions().readonly() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            "is read-only: it is not replaced; make it writable or choose another path",
        ));
    }
    Ok(())
}

/// Length of the blocks [`dot_blocks`] sums separately.
pub const DOT_BLOCK: usize = 1 << 15;

/// ndarray 0.16's `unrolled_dot` (what argmin's `dot` on `Array1<f64>` runs): eight partial
/// sums, combined in its order, so dot products round exactly as argmin's do.
pub fn dot8(xs: &[f64], ys: &[f64]) -> f64 {
    debug_assert_eq!(xs.len(), ys.len());
    let n = xs.len().min(ys.len());
    let (xs, ys) = (&xs[..n], &ys[..n]);
    let mut p = [0.0f64; 8];
    let body = n / 8 * 8;
    for (xc, yc) in xs[..body].chunks_exact(8).zip(ys[..body].chunks_exact(8)) {
        for k in 0..8 {
            p[k] += xc[k] * yc[k];
        }
    }
    let mut sum = 0.0;
    sum += p[0] + p[4];
    sum += p[1] + p[5];
    sum += p[2] + p[6];
    sum += p[3] + p[7];
    for (&x, &y) in xs[body..].iter().zip(&ys[body..]).take(7) {
        sum += x * y;
    }
    sum
}

/// `aᵀb`: the [`dot8`] of each [`DOT_BLOCK`]-long block on the current rayon pool, summed
/// block by block in order — the same bits on any number of threads ([`dot8`]'s below one
/// block). For parameter-sized vectors (L-BFGS, the prior), which a serial pass would leave
/// on one core.
pub fn dot_blocks(a: &[f64], b: &[f64]) -> f64 {
    use rayon::prelude::*;
    if a.len() <= DOT_BLOCK {
        return dot8(a, b);
    }
    let mut parts = Vec::with_capacity(a.len().div_ceil(DOT_BLOCK));
    a.par_chunks(DOT_BLOCK)
        .zip(b.par_chunks(DOT_BLOCK))
        .map(|(a, b)| dot8(a, b))
        .collect_into_vec(&mut parts);
    parts.iter().sum()
}

/// Hands memory freed in bulk (a corpus's text, after its features are extracted) back to the
/// system. glibc keeps freed small blocks in the arena of the thread that freed them, where the
/// worker threads building instances next would not reuse them: the process's peak then holds
/// both (issue 46, 15 M tokens: 8.3 GB resident at the peak without this, 6.9 GB with it).
pub fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free heap pages to the kernel.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Whether the CPU runs AVX2 (checked once; the answer is cached).
#[inline]
pub fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `wide_fn!(fn name(args) -> R = body;)` defines `name`, which calls `body` — an
/// `#[inline(always)]` function of the hot loops, taking the same arguments — in a copy compiled
/// for AVX2 when the CPU has it, so its element-wise loops run four lanes wide instead of two.
/// Only the lane width changes: no fused multiply-add and no reordered sums, so the results are
/// bit-for-bit the same on either path.
#[macro_export]
macro_rules! wide_fn {
    ($(#[$m:meta])* $vis:vis fn $name:ident($($a:ident: $t:ty),* $(,)?) $(-> $r:ty)? = $body:path;) => {
        $(#[$m])*
        $vis fn $name($($a: $t),*) $(-> $r)? {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx2")]
                fn avx2($($a: $t),*) $(-> $r)? {
                    $body($($a),*)
                }
                if $crate::util::has_avx2() {
                    // SAFETY: the CPU has AVX2, checked just above.
                    return unsafe { avx2($($a),*) };
                }
            }
            $body($($a),*)
        }
    };
}

/// The version of the files a run directory holds (the spec, the summary, the model file, …;
/// `run::store` names them), written into each as `format_version`. A file without one predates
/// versions and reads as version 1; a newer version is refused by [`check_format_version`].
pub const FORMAT_VERSION: u64 = 1;

/// `value` with `format_version` set, when it is a JSON object.
pub fn versioned(mut value: serde_json::Value) -> serde_json::Value {
    if let Some(o) = value.as_object_mut() {
        o.insert("format_version".into(), FORMAT_VERSION.into());
    }
    value
}

/// Refuses a file whose `format_version` this build cannot read, saying which it is.
pub fn check_format_version(value: &serde_json::Value, file: &str) -> Result<()> {
    value
        .get("format_version")
        .map_or(Ok(()), |v| check_version(v, file))
}

fn check_version(v: &serde_json::Value, file: &str) -> Result<()> {
    match v.as_u64() {
        Some(n) if (1..=FORMAT_VERSION).contains(&n) => Ok(()),
        Some(n) if n > FORMAT_VERSION => Err(Error::file(
            file,
            format!(
                "format version {n}: written by a newer piecewise-lab; this build reads versions \
                 up to {FORMAT_VERSION}"
            ),
        )),
        _ => Err(Error::file(
            file,
            format!("format_version is {v}, not a version (1 to {FORMAT_VERSION})"),
        )),
    }
}

/// Serialises `value` as pretty JSON, with its `format_version`, and writes it atomically.
pub fn write_json_atomic<T: serde::Serialize>(path: &Path, value: &T) -> Result<()> {
    let bad = |e: serde_json::Error| Error::invalid(format!("{}: {e}", path.display()));
    let value = versioned(serde_json::to_value(value).map_err(bad)?);
    let mut text = serde_json::to_string_pretty(&value).map_err(bad)?;
    text.push('\n');
    write_atomic(path, text.as_bytes())
}

/// Reads and parses a JSON file, naming the file (and line) on failure; a `format_version`
/// this build cannot read is an error.
pub fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T> {
    let text = read_text(path)?;
    let name = path.display().to_string();
    let err = |e: serde_json::Error| Error::parse(&name, e.line(), e.to_string());
    #[derive(serde::Deserialize)]
    struct Version {
        #[serde(default)]
        format_version: Option<serde_json::Value>,
    }
    // Objects carry a version; other JSON (a list) has none to check.
    if let Ok(Version {
        format_version: Some(v),
    }) = serde_json::from_str::<Version>(&text)
    {
        check_version(&v, &name)?;
    }
    serde_json::from_str(&text).map_err(err)
}

/// The largest input file read whole (2 GiB, about 100 M tokens of CoNLL text): a reader given a
/// never-ending file (`/dev/zero`, a FIFO) stops here with an error instead of filling memory.
pub const MAX_INPUT_BYTES: u64 = 2 << 30;

/// Reads a whole file of at most [`MAX_INPUT_BYTES`]; a larger one (or an endless stream) is an
/// error naming the file and the limit.
pub fn read_bytes(path: &Path) -> Result<Vec<u8>> {
    read_at_most(path, MAX_INPUT_BYTES)
}

/// Whether `path` names standard input.
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// An input file opened for reading: `-` is standard input, and gzip data (known by its
/// magic bytes, whatever the name) is decompressed as it is read.
pub fn open_input(path: &Path) -> Result<Box<dyn std::io::BufRead>> {
    if is_stdin(path) {
        return gunzip_if_gzip(std::io::stdin(), path);
    }
    let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    gunzip_if_gzip(f, path)
}

/// `r` buffered, decompressed when it starts with gzip's magic bytes.
fn gunzip_if_gzip<R: std::io::Read + 'static>(
    r: R,
    path: &Path,
) -> Result<Box<dyn std::io::BufRead>> {
    use std::io::BufRead;
    let mut r = std::io::BufReader::with_capacity(1 << 16, r);
    let gz = r
        .fill_buf()
        .map_err(|e| Error::io(path, e))?
        .starts_with(&[0x1f, 0x8b]);
    let limited = |r: Box<dyn std::io::Read>| -> Box<dyn std::io::BufRead> {
        Box::new(std::io::BufReader::with_capacity(
            1 << 16,
            AtMost {
                inner: r,
                left: MAX_INPUT_BYTES,
            },
        ))
    };
    Ok(if gz {
        limited(Box::new(flate2::bufread::MultiGzDecoder::new(r)))
    } else {
        limited(Box::new(r))
    })
}

/// A reader that fails (rather than ends) after [`MAX_INPUT_BYTES`]: a decompression bomb or
/// an endless stream is an error, never a silently cut corpus.
struct AtMost {
    inner: Box<dyn std::io::Read>,
    left: u64,
}

impl std::io::Read for AtMost {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n as u64 > self.left {
            return Err(std::io::Error::other(format!(
                "more than {MAX_INPUT_BYTES} bytes, the most an input may hold"
            )));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

fn read_at_most(path: &Path, limit: u64) -> Result<Vec<u8>> {
    use std::io::Read;
    let too_big = || {
        Error::file(
            path.display().to_string(),
            format!("larger than {limit} bytes, the most an input file may hold"),
        )
    };
    let len = if is_stdin(path) {
        0
    } else {
        std::fs::metadata(path)
            .map_err(|e| Error::io(path, e))?
            .len()
    };
    if len > limit {
        return Err(too_big());
    }
    let mut bytes = Vec::with_capacity(len as usize);
    open_input(path)?
        .take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(path, e))?;
    if bytes.len() as u64 > limit {
        return Err(too_big());
    }
    Ok(bytes)
}

/// Reads a text file; invalid UTF-8 is an error naming the file and the line it is on.
pub fn read_text(path: &Path) -> Result<String> {
    let bytes = read_bytes(path)?;
    String::from_utf8(bytes).map_err(|e| {
        let valid = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..valid]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1;
        Error::parse(path.display().to_string(), line, "invalid UTF-8")
    })
}

/// Steps `digits` (a state per variable, cardinalities `card`) to the next joint assignment, last
/// variable fastest; returns false, back at all zeros, after the last one.
pub fn next_assignment(digits: &mut [u32], card: &[u32]) -> bool {
    for i in (0..digits.len()).rev() {
        digits[i] += 1;
        if digits[i] < card[i] {
            return true;
        }
        digits[i] = 0;
    }
    false
}

/// Stable log Σ exp(x) (−∞ for an empty slice): the one log-sum-exp of the engine (the terms'
/// masked, NOTA-extended form builds on [`exp_shifted_into`]).
#[inline]
pub fn log_sum_exp(xs: &[f64]) -> f64 {
    let m = xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    if m == f64::NEG_INFINITY {
        return m;
    }
    if m == f64::INFINITY {
        return m;
    }
    m + xs.iter().map(|x| (x - m).exp()).sum::<f64>().ln()
}

/// `dst[i] = exp(src[i] − shift)` for arguments ≤ 0 (max-shifted potentials), written so the
/// compiler vectorises it with baseline SSE2: Cody–Waite reduction `x = n·ln2 + r`, |r| ≤ ln2/2,
/// a degree-13 Taylor polynomial for e^r (truncation error < 1e-17), and 2^n built from its bits.
/// Agrees with libm's `exp` to within a few ulps (see the unit test); results below e^−708 are 0.
#[inline(always)]
pub fn exp_shifted_into(src: &[f64], shift: f64, dst: &mut [f64]) {
    const LOG2E: f64 = std::f64::consts::LOG2_E;
    // fdlibm's split of ln 2: n·LN2_HI is exact for |n| < 2^11.
    const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
    const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);
    const MAGIC: f64 = 6_755_399_441_055_744.0; // 1.5·2^52: adding it rounds to an integer
    for (d, &s) in dst.iter_mut().zip(src) {
        let x = (s - shift).clamp(-708.0, 0.0);
        let t = x * LOG2E + MAGIC;
        let n = t - MAGIC;
        let r = (x - n * LN2_HI) - n * LN2_LO;
        let mut p = 1.0 / 6_227_020_800.0; // 1/13!
        p = p * r + 1.0 / 479_001_600.0;
        p = p * r + 1.0 / 39_916_800.0;
        p = p * r + 1.0 / 3_628_800.0;
        p = p * r + 1.0 / 362_880.0;
        p = p * r + 1.0 / 40_320.0;
        p = p * r + 1.0 / 5_040.0;
        p = p * r + 1.0 / 720.0;
        p = p * r + 1.0 / 120.0;
        p = p * r + 1.0 / 24.0;
        p = p * r + 1.0 / 6.0;
        p = p * r + 0.5;
        p = p * r + 1.0;
        p = p * r + 1.0;
        // n sits in the low bits of t's representation; 2^n = bits (n + 1023) << 52.
        let ni = t.to_bits().wrapping_sub(MAGIC.to_bits());
        let scale = f64::from_bits(ni.wrapping_add(1023) << 52);
        *d = if s - shift < -708.0 { 0.0 } else { p * scale };
    }
}

/// A table as CSV (RFC 4180 quoting by the `csv` crate), header first.
pub fn csv<S: AsRef<str>>(header: &[S], rows: &[Vec<String>]) -> String {
    // Flexible: rows of any length are written as they are, so writing to memory cannot fail.
    let mut w = csv::WriterBuilder::new().flexible(true).from_writer(vec![]);
    w.write_record(header.iter().map(|h| h.as_ref()))
        .expect("CSV into memory");
    for r in rows {
        w.write_record(r).expect("CSV into memory");
    }
    String::from_utf8(w.into_inner().expect("CSV into memory")).expect("CSV of UTF-8 text")
}

/// A comma-separated list of numbers (`0,0.25,0.5`); errors name the option (`what`).
pub fn parse_list(text: &str, what: &str) -> Result<Vec<f64>> {
    text.split(',')
        .map(|x| {
            x.trim()
                .parse::<f64>()
                .map_err(|_| Error::invalid(format!("{what}: {x:?} is not a number")))
        })
        .collect()
}

/// The most worker threads a run may ask for: a few per core. More threads than that only
/// contend (`--threads 10000` spent 30 s starting threads for a 6-token file).
pub fn max_threads() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (4 * cores).max(8)
}

/// The worker pool of `threads` threads (0: every core), never more than [`max_threads`]:
/// a run opened from a bigger machine's spec (or a damaged one asking for 65,536) still gets a
/// pool this machine can start. Every pool of the engine is made here.
pub fn thread_pool(threads: usize) -> Result<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads.min(max_threads()))
        .build()
        .map_err(|e| Error::invalid(format!("thread pool: {e}")))
}

/// Refuses a thread count above [`max_threads`], naming the option (`what`).
pub fn check_threads(n: usize, what: &str) -> Result<()> {
    let max = max_threads();
    if n > max {
        return Err(Error::invalid(format!(
            "{what} {n}: at most {max} (four per core on this machine; 0 uses every core)"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {

    use super::*;

    #[cfg(unix)]
    mod output_targets {
        use super::super::*;
        use std::os::unix::fs::{FileTypeExt, PermissionsExt};

        /// A private node made by `mknod` in `dir` (never a system path), or `None` with a
        /// notice where this user may not make one.
        fn private_null(dir: &Path) -> Option<std::path::PathBuf> {
            use std::os::unix::ffi::OsStrExt;
            let p = dir.join("null");
            let c = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
            // SAFETY: mknod on a NUL-terminated path we own; the device is /dev/null's (1, 3).
            let r = unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) };
            if r != 0 {
                eprintln!(
                    "notice: mknod not permitted here ({}); the device-node case is skipped",
                    std::io::Error::last_os_error()
                );
                return None;
            }
            Some(p)
        }

        #[test]
        fn a_device_node_is_written_in_place_and_stays_a_device() {
            let d = tempfile::tempdir().unwrap();
            let Some(null) = private_null(d.path()) else {
                return;
            };
            write_atomic(&null, b"gone").unwrap();
            let ft = std::fs::symlink_metadata(&null).unwrap().file_type();
            assert!(ft.is_char_device(), "the node became {ft:?}");
            // Nothing left beside it.
            assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
        }

        #[test]
        fn a_fifo_is_written_not_replaced() {
            let d = tempfile::tempdir().unwrap();
            let fifo = d.path().join("pipe");
            let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
            // SAFETY: mkfifo on a NUL-terminated path in our temporary directory.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
            let reader = {
                let fifo = fifo.clone();
                std::thread::spawn(move || std::fs::read(fifo).unwrap())
            };
            write_atomic(&fifo, b"through the pipe\n").unwrap();
            assert_eq!(reader.join().unwrap(), b"through the pipe\n");
            let ft = std::fs::symlink_metadata(&fifo).unwrap().file_type();
            assert!(ft.is_fifo(), "the FIFO became {ft:?}");
        }

        #[test]
        fn a_symlink_is_followed_and_stays_a_link() {
            let d = tempfile::tempdir().unwrap();
            let sub = d.path().join("real");
            std::fs::create_dir(&sub).unwrap();
            let file = sub.join("out.txt");
            std::fs::write(&file, b"old").unwrap();
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
            let link = d.path().join("link.txt");
            std::os::unix::fs::symlink("real/out.txt", &link).unwrap();
            write_atomic(&link, b"new").unwrap();
            assert!(std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink());
            assert_eq!(std::fs::read(&file).unwrap(), b"new");
            let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o640, "the file's permissions are kept");
            // A dangling link makes the file it names.
            let dangling = d.path().join("dangling");
            std::os::unix::fs::symlink("real/made.txt", &dangling).unwrap();
            write_atomic(&dangling, b"made").unwrap();
            assert_eq!(std::fs::read(sub.join("made.txt")).unwrap(), b"made");
            // A loop of links is an error, not a hang.
            let (a, b) = (d.path().join("a"), d.path().join("b"));
            std::os::unix::fs::symlink(&b, &a).unwrap();
            std::os::unix::fs::symlink(&a, &b).unwrap();
            assert!(write_atomic(&a, b"x").is_err());
        }

        #[test]
        fn regular_files_and_new_paths_are_replaced_atomically() {
            let d = tempfile::tempdir().unwrap();
            let f = d.path().join("missing/dir/out.txt");
            write_atomic(&f, b"one").unwrap();
            write_atomic(&f, b"two").unwrap();
            assert_eq!(std::fs::read(&f).unwrap(), b"two");
            let names: Vec<_> = std::fs::read_dir(f.parent().unwrap())
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            assert_eq!(names, ["out.txt"], "no temporary file is left");
            // A temporary name already taken (even by a link) is never written through.
            let victim = d.path().join("victim");
            std::fs::write(&victim, b"keep").unwrap();
            let taken = f.with_file_name(format!(".out.txt.tmp-{}", std::process::id()));
            std::os::unix::fs::symlink(&victim, &taken).unwrap();
            write_atomic(&f, b"three").unwrap();
            assert_eq!(std::fs::read(&f).unwrap(), b"three");
            assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
            // A directory is refused.
            let e = write_atomic(d.path(), b"x").unwrap_err().to_string();
            assert!(e.contains("is a directory"), "{e}");
        }

        #[test]
        fn dash_and_dev_stdout_mean_standard_output() {
            assert_eq!(target(Path::new("-")).unwrap(), Target::Stdout);
            assert_eq!(target(Path::new("/dev/stdout")).unwrap(), Target::Stdout);
            assert!(matches!(
                target(Path::new("/dev/stderr")).unwrap(),
                Target::Direct(_)
            ));
        }

        #[test]
        fn an_endless_or_huge_input_stops_at_the_limit() {
            // A stream that never ends (read-only: /dev/zero), against a small limit.
            let e = read_at_most(Path::new("/dev/zero"), 1 << 20).unwrap_err();
            assert!(
                e.to_string().contains("the most an input file may hold"),
                "{e}"
            );
            // A file past the real limit is refused by its length, before reading: sparse.
            let d = tempfile::tempdir().unwrap();
            let p = d.path().join("huge");
            let f = std::fs::File::create(&p).unwrap();
            f.set_len(MAX_INPUT_BYTES + 1).unwrap();
            let e = read_bytes(&p).unwrap_err().to_string();
            assert!(e.contains("the most an input file may hold"), "{e}");
        }
    }

    #[test]
    fn fast_exp_agrees_with_libm() {
        let xs: Vec<f64> = (0..200_001)
            .map(|i| -(i as f64) * 708.0 / 200_000.0)
            .collect();
        let mut out = vec![0.0; xs.len()];
        exp_shifted_into(&xs, 0.0, &mut out);
        let mut worst = 0.0f64;
        for (&x, &y) in xs.iter().zip(&out) {
            let want = x.exp();
            worst = worst.max(((y - want) / want).abs());
        }
        assert!(worst < 5.0 * f64::EPSILON, "worst relative error {worst:e}");
        let mut o = [1.0; 3];
        exp_shifted_into(&[-800.0, 3.0, 3.0 - 1e-300], 3.0, &mut o);
        assert_eq!(o[0], 0.0);
        assert_eq!(o[1], 1.0);
        assert_eq!(o[2], 1.0);
    }
}
