//! Where, when and by what a run or a report was made: the host, the user, UTC times in
//! RFC 3339 (computed here, no process spawned), the binary's version and the commit it was
//! built from (`build.rs`), and the CPU. A run's summary keeps them as [`Provenance`].

use std::time::{SystemTime, UNIX_EPOCH};

/// The package version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The commit the binary was built from (`-modified` when its sources differed), or `unknown`.
pub const COMMIT: &str = env!("PIECEWISE_COMMIT");
/// `--version`'s text: the version and the commit.
pub const VERSION_LINE: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("PIECEWISE_COMMIT"),
    ")"
);

/// Who made a run, where, when and with which build.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Provenance {
    pub host: String,
    pub user: String,
    /// UTC, RFC 3339.
    pub started: String,
    /// UTC, RFC 3339; empty while the run is going.
    pub ended: String,
    pub version: String,
    pub commit: String,
    pub cpu: String,
    /// The working directory the spec's relative data paths are relative to (empty in runs
    /// written before it was recorded): `compare` resolves them against it, so one file named
    /// two ways pairs, and two files of one name do not.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cwd: String,
}

impl Provenance {
    /// This process, now.
    pub fn here() -> Provenance {
        Provenance {
            host: host(),
            user: user(),
            started: now_rfc3339(),
            ended: String::new(),
            version: VERSION.into(),
            commit: COMMIT.into(),
            cpu: cpu(),
            cwd: std::env::current_dir()
                .map(|d| d.display().to_string())
                .unwrap_or_default(),
        }
    }
}

/// The host's name: `PIECEWISE_HOST` when set (tests stand in for other machines with it), else
/// the kernel's, else `HOSTNAME` / `COMPUTERNAME`, else `unknown`.
pub fn host() -> String {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    env("PIECEWISE_HOST")
        .or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|h| h.trim().to_string())
                .filter(|h| !h.is_empty())
        })
        .or_else(|| env("HOSTNAME"))
        .or_else(|| env("COMPUTERNAME"))
        .unwrap_or_else(|| "unknown".into())
}

/// The user's name from the environment (`USER`, `USERNAME`, `LOGNAME`), else `unknown`.
pub fn user() -> String {
    ["USER", "USERNAME", "LOGNAME"]
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
        .unwrap_or_else(|| "unknown".into())
}

/// The CPU's model name (`/proc/cpuinfo`), else `unknown CPU`.
pub fn cpu() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into())
}

/// Now, UTC, RFC 3339 to the second: `2026-11-27T15:04:05Z`.
pub fn now_rfc3339() -> String {
    rfc3339(SystemTime::now())
}

/// `t`, UTC, RFC 3339 to the second (a time before 1970 reads as 1970-01-01T00:00:00Z).
pub fn rfc3339(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The proleptic Gregorian date `days` after 1970-01-01 (H. Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Dates checked against `date -u -d @SECONDS` (GNU coreutils).
    #[test]
    fn rfc3339_matches_known_dates() {
        for (secs, want) in [
            (0, "1970-01-01T00:00:00Z"),
            (951_782_400, "2000-02-29T00:00:00Z"),
            (1_709_251_199, "2024-02-29T23:59:59Z"),
            (1_795_791_845, "2026-11-27T15:04:05Z"),
            (4_107_542_400, "2100-03-01T00:00:00Z"),
        ] {
            assert_eq!(
                rfc3339(UNIX_EPOCH + Duration::from_secs(secs)),
                want,
                "{secs}"
            );
        }
    }
}
