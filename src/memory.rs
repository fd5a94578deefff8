//! The memory budget: what a command may use, checked against an estimate of what its work
//! needs *before* the memory is allocated, so input that would need more (a gzip holding one
//! enormous sentence, a million labels, a chart for a 1,000-word sentence) is refused with the
//! estimate named, rather than the process being killed by the kernel. Input bytes bound
//! nothing here: a small file can expand to any size.
//!
//! The limit is `--memory-limit SIZE` (every command), else `PIECEWISE_MEMORY_LIMIT`, else half
//! of this machine's physical memory. Estimates are of the large arrays (tokens, tables,
//! weights, the optimiser's history, charts); small bookkeeping is left out.

use crate::error::{Error, Result};
use std::sync::atomic::{AtomicU64, Ordering};

/// The limit set for this process (0: not set, the default applies).
static LIMIT: AtomicU64 = AtomicU64::new(0);

/// The environment variable that sets the limit when `--memory-limit` does not.
pub const ENV: &str = "PIECEWISE_MEMORY_LIMIT";

/// Used when the machine's memory cannot be read.
const FALLBACK: u64 = 8 << 30;

/// Sets the limit for this process (`--memory-limit`).
pub fn set_limit(bytes: u64) {
    LIMIT.store(bytes.max(1), Ordering::Relaxed);
}

/// This machine's physical memory, when it can be read.
pub fn physical() -> Option<u64> {
    #[cfg(unix)]
    {
        // SAFETY: sysconf only reads system constants.
        let (pages, size) = unsafe {
            (
                libc::sysconf(libc::_SC_PHYS_PAGES),
                libc::sysconf(libc::_SC_PAGESIZE),
            )
        };
        if pages > 0 && size > 0 {
            return Some(pages as u64 * size as u64);
        }
    }
    None
}

/// The limit in force and where it comes from (for messages).
pub fn limit_and_source() -> (u64, String) {
    let set = LIMIT.load(Ordering::Relaxed);
    if set > 0 {
        return (set, "--memory-limit".into());
    }
    if let Some(v) = std::env::var_os(ENV) {
        if let Some(b) = v.to_str().and_then(|s| parse_size(s).ok()) {
            return (b, ENV.into());
        }
    }
    match physical() {
        Some(p) => (p / 2, "the default, half of this machine's memory".into()),
        None => (
            FALLBACK,
            "the default (this machine's memory is unknown)".into(),
        ),
    }
}

/// The limit in force, in bytes.
pub fn limit() -> u64 {
    limit_and_source().0
}

/// Parses a size: bytes, or a number with K, M, G or T (powers of 1024, an optional `B` or
/// `iB` after it), or a percentage of this machine's memory (`60%`).
pub fn parse_size(s: &str) -> Result<u64> {
    let bad = || {
        Error::invalid(format!(
            "memory limit {s:?}: give bytes, a size such as 12G or 512M, or a share of this \
             machine's memory such as 60%"
        ))
    };
    let t = s.trim();
    if let Some(p) = t.strip_suffix('%') {
        let p: f64 = p.trim().parse().map_err(|_| bad())?;
        if !(p > 0.0 && p <= 100.0) {
            return Err(bad());
        }
        let total = physical().unwrap_or(FALLBACK) as f64;
        return Ok((total * p / 100.0) as u64);
    }
    let upper = t.to_ascii_uppercase();
    let body = upper
        .strip_suffix("IB")
        .or_else(|| upper.strip_suffix('B'))
        .unwrap_or(&upper);
    let (num, shift) = match body.chars().last() {
        Some('K') => (&body[..body.len() - 1], 10),
        Some('M') => (&body[..body.len() - 1], 20),
        Some('G') => (&body[..body.len() - 1], 30),
        Some('T') => (&body[..body.len() - 1], 40),
        _ => (body, 0),
    };
    let x: f64 = num.trim().parse().map_err(|_| bad())?;
    let bytes = x * (1u64 << shift) as f64;
    if !(1.0..1e18).contains(&bytes) {
        return Err(bad());
    }
    Ok(bytes as u64)
}

/// A size for people: `3.2 GB`, `512 MB`.
pub fn shown(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= (1u64 << 30) as f64 {
        format!("{:.1} GB", b / (1u64 << 30) as f64)
    } else if b >= (1u64 << 20) as f64 {
        format!("{:.1} MB", b / (1u64 << 20) as f64)
    } else {
        format!("{:.0} KB", (b / 1024.0).ceil())
    }
}

/// Refuses work estimated at `bytes` when it is over the limit; `what` says what the work is
/// and how the estimate was made (`"the optimiser's history: m = 1000 pairs × 2 × 7.4 M
/// weights × 8 bytes"`), and `knob` what would make it smaller.
pub fn check(bytes: u64, what: impl FnOnce() -> String, knob: &str) -> Result<()> {
    let (limit, source) = limit_and_source();
    if bytes <= limit {
        return Ok(());
    }
    Err(Error::invalid(format!(
        "{} needs about {}, over the memory limit of {} ({source}); {knob}, or raise the limit \
         with --memory-limit SIZE (or {ENV})",
        what(),
        shown(bytes),
        shown(limit),
    )))
}

/// `a × b × …` in u64, saturating: an estimate that overflows is simply too large.
pub fn product(factors: &[u64]) -> u64 {
    factors.iter().fold(1u64, |acc, &f| acc.saturating_mul(f))
}

/// A running estimate, checked as it grows: for work whose size is known only as it is read
/// (a corpus, a feature dictionary). Checks happen every [`Meter::STEP`] bytes of growth, so the
/// overshoot is bounded by it.
pub struct Meter {
    used: u64,
    next_check: u64,
    limit: u64,
}

impl Meter {
    /// How much the estimate grows between two checks.
    pub const STEP: u64 = 16 << 20;

    pub fn new() -> Self {
        // Checked every STEP, and the process holds some memory besides what is metered (its
        // code, buffers, a vector's spare capacity): the meter stops that much short.
        let limit = limit();
        let limit = limit
            .saturating_sub(Self::STEP)
            .saturating_sub(limit / 32)
            .max(limit / 2);
        Meter {
            used: 0,
            next_check: Self::STEP.min(limit),
            limit,
        }
    }

    /// Adds `bytes` to the estimate; an error (made by [`check`]) when it passes the limit.
    #[inline]
    pub fn add(&mut self, bytes: u64, what: impl FnOnce(u64) -> String, knob: &str) -> Result<()> {
        self.used = self.used.saturating_add(bytes);
        if self.used >= self.next_check {
            self.next_check = self.used.saturating_add(Self::STEP);
            if self.used > self.limit {
                // The work is not over: what it holds so far already reaches the limit.
                let (limit, source) = limit_and_source();
                return Err(Error::invalid(format!(
                    "{} needs more than the memory limit of {} ({source}) allows; {knob}, or \
                     raise the limit with --memory-limit SIZE (or {ENV})",
                    what(self.used),
                    shown(limit),
                )));
            }
        }
        Ok(())
    }

    /// Takes `bytes` off the estimate (memory handed back).
    pub fn sub(&mut self, bytes: u64) {
        self.used = self.used.saturating_sub(bytes);
        self.next_check = self.next_check.min(self.used.saturating_add(Self::STEP));
    }

    pub fn used(&self) -> u64 {
        self.used
    }
}

impl Default for Meter {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_in_the_usual_units() {
        assert_eq!(parse_size("12G").unwrap(), 12 << 30);
        assert_eq!(parse_size("512m").unwrap(), 512 << 20);
        assert_eq!(parse_size("1.5GiB").unwrap(), 3 << 29);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert!(parse_size("50%").unwrap() > 0);
        for bad in ["", "G", "-1G", "0", "101%", "twelve"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_product_that_overflows_saturates() {
        assert_eq!(product(&[1 << 40, 1 << 40]), u64::MAX);
        assert_eq!(product(&[3, 4, 5]), 60);
    }
}
