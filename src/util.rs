//! Small shared helpers: atomic file writes and stable log-sum-exp.

use crate::error::{Error, Result};
use std::io::Write;
use std::path::Path;

/// Writes `bytes` to a temporary file beside `path`, then renames it over `path`,
/// so a reader never sees a half-written file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(dir) = dir {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    let name = path
        .file_name()
        .ok_or_else(|| Error::invalid(format!("{}: not a file path", path.display())))?
        .to_string_lossy();
    let tmp = path.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(Error::io(path, e));
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

/// The version of the files a run directory holds (`spec.json`, `summary.json`,
/// `model.json`, …), written into each as `format_version`. A file without one predates
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
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
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

/// Reads a text file; invalid UTF-8 is an error naming the file and the line it is on.
pub fn read_text(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
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

/// Stable log Σ exp(x).
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

#[cfg(test)]
mod tests {
    use super::*;

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
