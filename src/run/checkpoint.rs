//! Checkpoints: a running run writes the optimiser's whole state (weights, gradient, the
//! correction pairs, the stopping rule's window), where its schedule is (which fit, how the
//! fits before it ended) and its curve so far to `checkpoint.bin`, atomically, every N
//! iterations or minutes and when it is cancelled (a Slurm time limit's SIGTERM included). A
//! run started again on the directory (`train --resume DIR`, a plan line's `--if-unfinished`)
//! continues from it and ends with the weights the run never stopped would have — bit for bit
//! when its objective is a function of θ alone (exact inference; loopy BP warm-starts its
//! messages, and a resumed run starts them cold).
//!
//! A schedule resumes by being run again: fits before the checkpoint's return how they ended
//! without optimising ([`Checkpoints::replayed`]), the last of them with the weights the
//! checkpoint's fit started from, so the schedule's own steps between fits (NOTA's choice, SCL's
//! β) rebuild the objective that fit had; the fit in progress continues from the state.
//!
//! The file: a magic line, the header's length (u64, little-endian), the header (JSON), then
//! the arrays as little-endian f64 — the fit's start (when it is not the first fit), x, g, and
//! each pair's s and y — and last a checksum of everything before it ([`Checksum`]). Numbers the
//! search reads again (f, yᵀs, the window) are kept as their bits, since JSON would round them.
//! A checkpoint is read only when its checksum holds and every header field is consistent with
//! the model and with itself: a damaged one is refused, never resumed into wrong weights.

use super::curve::{Curve, CurveState};
use super::store::RunFiles;
use super::summary::{BetaRound, RunSummary};
use crate::error::{Error, Result};
use crate::optim::{IterReport, LbfgsState, OptimResult, Snapshot, StopReason};
use std::io::{Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

pub use super::store::CHECKPOINT;
const MAGIC: &[u8] = b"piecewise-lab checkpoint 2\n";
/// The first version's magic line: it had no checksum, so it is refused by name.
const MAGIC_1: &[u8] = b"piecewise-lab checkpoint 1\n";
/// The most fits a schedule has (NOTA's rounds, SCL's β rounds are a few dozen).
const MAX_FITS: usize = 100_000;
/// The most iterations a fit runs (the optimiser's `max_iter` range).
const MAX_ITERATIONS: usize = 1_000_000;
/// The largest header read (the curve's text is in it: about 300 bytes an iteration).
const MAX_HEADER: u64 = 256 << 20;

/// When a run writes checkpoints.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CheckpointPolicy {
    /// Every this many iterations (0: not by count).
    pub every_iterations: usize,
    /// And whenever this long has passed since the last (`None`: not by time).
    pub every: Option<Duration>,
    /// And when the run is cancelled (Ctrl-C, SIGTERM), where it stopped.
    pub at_cancel: bool,
}

impl Default for CheckpointPolicy {
    /// Every ten minutes: a few seconds of writing per hour at most, and at most ten minutes
    /// lost to a kill.
    fn default() -> Self {
        CheckpointPolicy {
            every_iterations: 0,
            every: Some(Duration::from_secs(600)),
            at_cancel: true,
        }
    }
}

impl CheckpointPolicy {
    /// Only at a cancellation.
    pub const NEVER: CheckpointPolicy = CheckpointPolicy {
        every_iterations: 0,
        every: None,
        at_cancel: true,
    };

    /// None at all: the workbench's runs, which it cannot resume (a cancelled one would
    /// leave a file of many times its weights behind).
    pub const OFF: CheckpointPolicy = CheckpointPolicy {
        every_iterations: 0,
        every: None,
        at_cancel: false,
    };
}

/// How a fit before the checkpoint's ended.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct FitRecord {
    pub iterations: usize,
    pub reason: StopReason,
    pub last: Option<IterReport>,
}

/// The schedule's records in the run summary, as they were at the checkpoint.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
struct Records {
    nota_choices: Vec<(usize, usize)>,
    resamples: usize,
    beta_rounds: Vec<BetaRound>,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Header {
    n: usize,
    /// The objective's threads: its sums are split by them, so the run resumes on as many.
    threads: usize,
    /// The fit in progress (0 = the schedule's first).
    fit: usize,
    done: Vec<FitRecord>,
    has_start: bool,
    pairs: usize,
    f_bits: u64,
    ys_bits: Vec<u64>,
    history_bits: Vec<u64>,
    iterations: usize,
    evaluations: usize,
    ops: u64,
    seconds: f64,
    last: Option<IterReport>,
    curve: CurveState,
    records: Records,
    /// Training seconds of the processes before this one.
    train_seconds: f64,
    /// Iterations (counted over the run) at which the run was resumed before.
    resumed_at: Vec<usize>,
}

impl Header {
    /// Every field against the model's `n` weights and against the others: what a resumed
    /// search reads must be a state the search could have been in.
    fn check(&self, n: usize) -> std::result::Result<(), String> {
        if self.n != n {
            return Err(format!("written for {} weights; the model has {n}", self.n));
        }
        if self.pairs > crate::optim::LbfgsSpec::MAX_M || self.ys_bits.len() != self.pairs {
            return Err(format!("{} correction pairs: not a checkpoint", self.pairs));
        }
        if self.iterations > MAX_ITERATIONS || self.fit > MAX_FITS {
            return Err(format!(
                "fit {} after {} iterations: more than a run makes (at most {MAX_FITS} fits of \
                 {MAX_ITERATIONS} iterations)",
                self.fit, self.iterations
            ));
        }
        if self.pairs > self.iterations {
            return Err(format!(
                "{} correction pairs after {} iterations (one pair an iteration at most)",
                self.pairs, self.iterations
            ));
        }
        if self.done.len() != self.fit || self.history_bits.len() != self.iterations + 1 {
            return Err("its fits or its window do not add up".into());
        }
        if self.has_start != (self.fit > 0) {
            return Err("its fit's start is kept for a fit after the first only".into());
        }
        if let Some(d) = self.done.iter().find(|d| d.iterations > MAX_ITERATIONS) {
            return Err(format!("an earlier fit of {} iterations", d.iterations));
        }
        if !(1..=4096).contains(&self.threads) {
            return Err(format!("{} threads", self.threads));
        }
        let f = f64::from_bits(self.f_bits);
        if !f.is_finite()
            || self
                .history_bits
                .iter()
                .any(|b| !f64::from_bits(*b).is_finite())
        {
            return Err("an objective value that is not a finite number".into());
        }
        if let Some(k) = self.ys_bits.iter().position(|b| {
            let ys = f64::from_bits(*b);
            !(ys.is_finite() && ys > 0.0)
        }) {
            return Err(format!(
                "pair {k}'s curvature yᵀs is {}: the search keeps positive ones only",
                f64::from_bits(self.ys_bits[k])
            ));
        }
        let secs = [self.seconds, self.train_seconds];
        if secs.iter().any(|s| !(s.is_finite() && *s >= 0.0)) {
            return Err("a time that is not a number of seconds".into());
        }
        Ok(())
    }
}

/// The checkpoint's checksum: each 8-byte little-endian word is mixed into the state by a map
/// that is one-to-one in the state (xor, an odd multiplier, an xor-shift), so changing any one
/// word — a bit flip anywhere — always changes the sum; the length is mixed in last.
#[derive(Default)]
struct Checksum {
    h: u64,
    tail: [u8; 8],
    filled: usize,
    len: u64,
}

impl Checksum {
    fn word(&mut self, w: u64) {
        self.h = (self.h ^ w).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.h ^= self.h >> 29;
    }

    fn update(&mut self, mut bytes: &[u8]) {
        self.len += bytes.len() as u64;
        if self.filled > 0 {
            let take = (8 - self.filled).min(bytes.len());
            self.tail[self.filled..self.filled + take].copy_from_slice(&bytes[..take]);
            self.filled += take;
            bytes = &bytes[take..];
            if self.filled < 8 {
                return;
            }
            self.word(u64::from_le_bytes(self.tail));
            self.filled = 0;
        }
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            self.word(u64::from_le_bytes(w.try_into().expect("8 bytes")));
        }
        let rest = words.remainder();
        self.tail[..rest.len()].copy_from_slice(rest);
        self.filled = rest.len();
    }

    fn finish(&self) -> u64 {
        let mut c = Checksum {
            h: self.h,
            ..Default::default()
        };
        let mut tail = [0u8; 8];
        tail[..self.filled].copy_from_slice(&self.tail[..self.filled]);
        c.word(u64::from_le_bytes(tail));
        c.word(self.len);
        c.h
    }
}

/// A reader that sums what passes through it.
struct Hashing<R> {
    inner: R,
    sum: Checksum,
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let k = self.inner.read(buf)?;
        self.sum.update(&buf[..k]);
        Ok(k)
    }
}

/// A writer that sums what passes through it.
struct Summing<'a> {
    inner: &'a mut dyn std::io::Write,
    sum: Checksum,
}

impl std::io::Write for Summing<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let k = self.inner.write(buf)?;
        self.sum.update(&buf[..k]);
        Ok(k)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Writes the checksum of `bytes` (a checkpoint less its last 8 bytes) into those 8 bytes: for
/// tests that change a header on purpose and need it read past the checksum to its checks.
#[doc(hidden)]
pub fn reseal(bytes: &mut [u8]) {
    let Some(body) = bytes.len().checked_sub(8) else {
        return;
    };
    let mut c = Checksum::default();
    c.update(&bytes[..body]);
    let sum = c.finish().to_le_bytes();
    bytes[body..].copy_from_slice(&sum);
}

/// A checkpoint read back.
pub struct Checkpoint {
    pub threads: usize,
    pub fit: usize,
    pub done: Vec<FitRecord>,
    /// The weights the checkpoint's fit started from (not kept for the first fit).
    pub start: Option<Vec<f64>>,
    pub state: LbfgsState,
    pub curve: CurveState,
    records: Records,
    pub train_seconds: f64,
    pub resumed_at: Vec<usize>,
}

impl Checkpoint {
    /// Reads the checkpoint in `files` for a model of `n` weights: `None` when there is none.
    /// Sizes are checked against the file's length before anything large is read.
    pub fn read(files: &RunFiles, n: usize) -> Result<Option<Checkpoint>> {
        let path = files.dir().join(CHECKPOINT);
        let shown = path.display().to_string();
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(&path, e)),
        };
        // A FIFO or device here would block or never end: only a regular file is read.
        if !meta.is_file() {
            return Err(Error::file(
                &shown,
                "is not a regular file: not a checkpoint",
            ));
        }
        let file = std::fs::File::open(&path).map_err(|e| Error::io(&path, e))?;
        let len = file.metadata().map_err(|e| Error::io(&path, e))?.len();
        let mut r = Hashing {
            inner: std::io::BufReader::with_capacity(1 << 20, file),
            sum: Checksum::default(),
        };
        let (h, header_len) = read_header(&mut r, &path, len)?;
        h.check(n).map_err(|why| Error::file(&shown, why))?;
        let arrays = 2 + 2 * h.pairs + usize::from(h.has_start);
        let want = (8 * arrays as u64)
            .checked_mul(n as u64)
            .and_then(|b| b.checked_add(header_len + 8));
        if want != Some(len) {
            return Err(Error::file(
                &shown,
                format!(
                    "{len} bytes, not the {} its header says (cut short?)",
                    want.map_or("many".into(), |w| w.to_string())
                ),
            ));
        }
        let mut next = |what: &str| -> Result<Vec<f64>> {
            let mut v = vec![0.0; n];
            let mut buf = [0u8; 8];
            for x in v.iter_mut() {
                r.read_exact(&mut buf).map_err(|e| Error::io(&path, e))?;
                *x = f64::from_le_bytes(buf);
            }
            if let Some(k) = v.iter().position(|x| !x.is_finite()) {
                return Err(Error::file(
                    &shown,
                    format!("{what}[{k}] is {}, not a finite number", v[k]),
                ));
            }
            Ok(v)
        };
        let start = h.has_start.then(|| next("start")).transpose()?;
        let x = next("x")?;
        let g = next("g")?;
        let mut pairs = Vec::with_capacity(h.pairs);
        for ys in &h.ys_bits {
            let s = next("s")?;
            let y = next("y")?;
            pairs.push((s, y, f64::from_bits(*ys)));
        }
        let sum = r.sum.finish();
        let mut stored = [0u8; 8];
        r.inner
            .read_exact(&mut stored)
            .map_err(|e| Error::io(&path, e))?;
        if u64::from_le_bytes(stored) != sum {
            return Err(Error::file(
                &shown,
                "its checksum does not match its contents: the file is damaged (remove it, or \
                 --force, to start the run again)",
            ));
        }
        Ok(Some(Checkpoint {
            threads: h.threads,
            fit: h.fit,
            done: h.done,
            start,
            state: LbfgsState {
                x,
                g,
                f: f64::from_bits(h.f_bits),
                pairs,
                history: h.history_bits.iter().map(|b| f64::from_bits(*b)).collect(),
                iterations: h.iterations,
                evaluations: h.evaluations,
                ops: h.ops,
                seconds: h.seconds,
                last: h.last,
            },
            curve: h.curve,
            records: h.records,
            train_seconds: h.train_seconds,
            resumed_at: h.resumed_at,
        }))
    }

    /// The iteration (counted over the run) the checkpoint was written after.
    pub fn iteration(&self) -> usize {
        self.curve.last.as_ref().map_or(0, |l| l.iteration)
    }
}

/// The header and the bytes up to its end, its length checked against the file's (`file_len`)
/// before it is read.
fn read_header(r: &mut dyn Read, path: &Path, file_len: u64) -> Result<(Header, u64)> {
    let shown = path.display().to_string();
    let mut magic = vec![0u8; MAGIC.len()];
    let mut len = [0u8; 8];
    r.read_exact(&mut magic)
        .and_then(|()| r.read_exact(&mut len))
        .map_err(|e| Error::file(&shown, format!("not a checkpoint: {e}")))?;
    if magic == MAGIC_1 {
        return Err(Error::file(
            &shown,
            "a checkpoint of an earlier version (without a checksum): it cannot be resumed; \
             remove it, or --force, to start the run again",
        ));
    }
    if magic != MAGIC {
        return Err(Error::file(&shown, "not a checkpoint of this program"));
    }
    let len = u64::from_le_bytes(len);
    if len > file_len.saturating_sub(MAGIC.len() as u64 + 16) {
        return Err(Error::file(
            &shown,
            format!("a header of {len} bytes in a file of {file_len}: cut short"),
        ));
    }
    if len > MAX_HEADER {
        return Err(Error::file(
            &shown,
            format!("a header of {len} bytes (at most {MAX_HEADER})"),
        ));
    }
    let mut text = vec![0u8; len as usize];
    r.read_exact(&mut text)
        .map_err(|e| Error::file(&shown, format!("its header is cut short: {e}")))?;
    let h = serde_json::from_slice(&text)
        .map_err(|e| Error::file(&shown, format!("its header: {e}")))?;
    Ok((h, MAGIC.len() as u64 + 8 + len))
}

/// A run's checkpoints: when to write them, where the schedule is, and the checkpoint being
/// resumed from.
pub struct Checkpoints {
    files: RunFiles,
    policy: CheckpointPolicy,
    /// False for schedules that cannot resume (nothing is written).
    enabled: bool,
    threads: usize,
    /// The fit in progress (the schedule's calls to [`super::schedule::Context::minimize`]).
    fit: usize,
    done: Vec<FitRecord>,
    start: Option<Vec<f64>>,
    resume: Option<Checkpoint>,
    last_write: Instant,
    last_iteration: usize,
    /// When this process began training.
    born: Instant,
    /// The first error writing one (reported once; the run goes on).
    pub failed: Option<Error>,
    /// Training seconds and resumption points of the processes before this one.
    pub train_seconds: f64,
    pub resumed_at: Vec<usize>,
}

/// What [`Checkpoints::begin`] says the schedule's next fit is.
pub enum Begin {
    /// Before the checkpoint: it ended like this (nothing to optimise).
    Replayed(OptimResult),
    /// The checkpoint's fit: continue from its state.
    Resume(LbfgsState),
    /// A fit to run from its start.
    Fresh(Vec<f64>),
}

impl Checkpoints {
    pub fn new(
        files: RunFiles,
        policy: CheckpointPolicy,
        threads: usize,
        resume: Option<Checkpoint>,
    ) -> Self {
        let (train_seconds, mut resumed_at) = resume
            .as_ref()
            .map_or((0.0, vec![]), |c| (c.train_seconds, c.resumed_at.clone()));
        if let Some(c) = &resume {
            resumed_at.push(c.iteration());
        }
        Checkpoints {
            files,
            policy,
            enabled: true,
            threads,
            fit: 0,
            done: vec![],
            start: None,
            resume,
            last_write: Instant::now(),
            last_iteration: 0,
            born: Instant::now(),
            failed: None,
            train_seconds,
            resumed_at,
        }
    }

    /// Writes none (a schedule that cannot resume).
    pub fn disable(&mut self) {
        self.enabled = false;
    }

    /// Whether a checkpoint is waiting for its fit.
    pub fn resuming(&self) -> bool {
        self.resume.is_some()
    }

    /// The curve state to start from when resuming (its text, written again at once).
    pub fn resumed_curve(&self) -> Option<&CurveState> {
        self.resume.as_ref().map(|c| &c.curve)
    }

    /// The schedule starts a fit from `theta`: replayed, resumed or run afresh. On resuming,
    /// the curve and the summary's schedule records are put back as the checkpoint had them.
    pub fn begin(&mut self, theta: Vec<f64>, curve: &mut Curve, summary: &mut RunSummary) -> Begin {
        let k = self.fit;
        self.fit += 1;
        if let Some(c) = &mut self.resume {
            if k < c.fit {
                let d = &c.done[k];
                let theta = match (&mut c.start, k + 1 == c.fit) {
                    (Some(s), true) => std::mem::take(s),
                    _ => theta,
                };
                self.done.push(d.clone());
                return Begin::Replayed(OptimResult {
                    theta,
                    iterations: d.iterations,
                    reason: d.reason.clone(),
                    last: d.last.clone(),
                });
            }
            let c = self.resume.take().expect("a checkpoint");
            curve.restore(&c.curve);
            summary.nota_choices = c.records.nota_choices;
            summary.resamples = c.records.resamples;
            summary.beta_rounds = c.records.beta_rounds;
            self.last_iteration = c.curve.last.as_ref().map_or(0, |l| l.iteration);
            if self.enabled && k > 0 {
                self.start = Some(theta);
            }
            return Begin::Resume(c.state);
        }
        self.start = (self.enabled && k > 0).then(|| theta.clone());
        Begin::Fresh(theta)
    }

    /// Refuses a schedule that ended without reaching the checkpoint's fit: the checkpoint
    /// names a fit this spec's schedule does not have, so its weights are not this run's.
    pub fn check_reached(&self) -> Result<()> {
        match &self.resume {
            Some(c) => Err(Error::file(
                self.files.dir().join(CHECKPOINT).display().to_string(),
                format!(
                    "its fit {} is past the {} fit(s) this run's schedule makes: the file is \
                     damaged (remove it, or --force, to start the run again)",
                    c.fit + 1,
                    self.fit
                ),
            )),
            None => Ok(()),
        }
    }

    /// The fit just begun ended with `r`.
    pub fn end(&mut self, r: &OptimResult) {
        self.done.push(FitRecord {
            iterations: r.iterations,
            reason: r.reason.clone(),
            last: r.last.clone(),
        });
        self.start = None;
    }

    /// Writes a checkpoint of `s` when one is due (or `now`, at a cancellation).
    pub fn keep(&mut self, s: &Snapshot, curve: &Curve, summary: &RunSummary, now: bool) {
        if !self.enabled {
            return;
        }
        let at = curve.last.as_ref().map_or(0, |l| l.iteration);
        let by_count = self.policy.every_iterations > 0
            && at >= self.last_iteration + self.policy.every_iterations;
        let by_time = self
            .policy
            .every
            .is_some_and(|d| self.last_write.elapsed() >= d);
        if !((now && self.policy.at_cancel) || by_count || by_time) {
            return;
        }
        self.last_write = Instant::now();
        self.last_iteration = at;
        if let Err(e) = self.write(s, curve, summary) {
            self.failed.get_or_insert(e);
        }
    }

    fn write(&self, s: &Snapshot, curve: &Curve, summary: &RunSummary) -> Result<()> {
        // Not into a run another host took over.
        self.files.still_ours()?;
        let h = Header {
            n: s.x.len(),
            threads: self.threads,
            fit: self.fit - 1,
            done: self.done.clone(),
            has_start: self.start.is_some(),
            pairs: s.pairs.len(),
            f_bits: s.f.to_bits(),
            ys_bits: s.pairs.iter().map(|p| p.2.to_bits()).collect(),
            history_bits: s.history.iter().map(|v| v.to_bits()).collect(),
            iterations: s.iterations,
            evaluations: s.evaluations,
            ops: s.ops,
            seconds: s.seconds,
            last: s.last.cloned(),
            curve: curve.state(),
            records: Records {
                nota_choices: summary.nota_choices.clone(),
                resamples: summary.resamples,
                beta_rounds: summary.beta_rounds.clone(),
            },
            train_seconds: self.train_seconds
                + self
                    .born
                    .elapsed()
                    .saturating_sub(curve.observed)
                    .as_secs_f64(),
            resumed_at: self.resumed_at.clone(),
        };
        let header =
            serde_json::to_vec(&h).map_err(|e| Error::invalid(format!("checkpoint: {e}")))?;
        let arrays = 2 + 2 * s.pairs.len() + usize::from(self.start.is_some());
        super::store::check_space(
            self.files.dir(),
            (header.len() + 8 * arrays * s.x.len() + 8) as u64,
        )?;
        let path = self.files.dir().join(CHECKPOINT);
        crate::util::write_atomic_with(&path, &mut |out| {
            let w = &mut Summing {
                inner: out,
                sum: Checksum::default(),
            };
            w.write_all(MAGIC)?;
            w.write_all(&(header.len() as u64).to_le_bytes())?;
            w.write_all(&header)?;
            let mut put = |v: &[f64]| -> std::io::Result<()> {
                for x in v {
                    w.write_all(&x.to_le_bytes())?;
                }
                Ok(())
            };
            if let Some(start) = &self.start {
                put(start)?;
            }
            put(s.x)?;
            put(s.g)?;
            for (sv, yv, _) in &s.pairs {
                put(sv)?;
                put(yv)?;
            }
            let sum = w.sum.finish();
            w.inner.write_all(&sum.to_le_bytes())
        })
    }

    /// Removes the checkpoint (a finished run needs none).
    pub fn remove(files: &RunFiles) -> Result<()> {
        files.still_ours()?;
        let path = files.dir().join(CHECKPOINT);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(&path, e)),
            _ => Ok(()),
        }
    }
}
