//! Whether two paths hold the same data (one file, or byte-identical copies).

use std::path::Path;

/// Whether two paths hold the same data: one file named two ways (relative and absolute, or
/// through a link), or two copies with the same bytes — the checkout's `sample_data/` and the
/// bundled copy, when the app was started from two folders over one workspace (a lesson's
/// runs on one copy were hidden as "trained on other data" on the other). Copies are compared
/// once per pair of (path, modification time) and remembered.
pub fn same_file(a: &Path, b: &Path) -> bool {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    type Key = (
        std::path::PathBuf,
        std::path::PathBuf,
        Option<std::time::SystemTime>,
        Option<std::time::SystemTime>,
    );
    static SEEN: OnceLock<Mutex<HashMap<Key, bool>>> = OnceLock::new();
    if a == b {
        return true;
    }
    let (Ok(ca), Ok(cb)) = (std::fs::canonicalize(a), std::fs::canonicalize(b)) else {
        return false;
    };
    if ca == cb {
        return true;
    }
    let (Ok(ma), Ok(mb)) = (std::fs::metadata(&ca), std::fs::metadata(&cb)) else {
        return false;
    };
    if !ma.is_file() || !mb.is_file() || ma.len() != mb.len() {
        return false;
    }
    let key = (ca, cb, ma.modified().ok(), mb.modified().ok());
    let seen = SEEN.get_or_init(Default::default);
    if let Some(v) = seen.lock().ok().and_then(|m| m.get(&key).copied()) {
        return v;
    }
    let same = same_bytes(&key.0, &key.1).unwrap_or(false);
    if let Ok(mut m) = seen.lock() {
        m.insert(key, same);
    }
    same
}

/// Two files' bytes compared in 64 KB blocks (memory bounded whatever their size).
fn same_bytes(a: &Path, b: &Path) -> std::io::Result<bool> {
    use std::io::Read;
    fn fill(f: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
        let mut n = 0;
        while n < buf.len() {
            match f.read(&mut buf[n..])? {
                0 => break,
                k => n += k,
            }
        }
        Ok(n)
    }
    let (mut fa, mut fb) = (std::fs::File::open(a)?, std::fs::File::open(b)?);
    let (mut ba, mut bb) = (vec![0u8; 1 << 16], vec![0u8; 1 << 16]);
    loop {
        let (na, nb) = (fill(&mut fa, &mut ba)?, fill(&mut fb, &mut bb)?);
        if na != nb || ba[..na] != bb[..nb] {
            return Ok(false);
        }
        if na == 0 {
            return Ok(true);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn same_file_knows_one_file_and_its_copies() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, c, d) = (
            dir.path().join("a"),
            dir.path().join("b"),
            dir.path().join("c"),
            dir.path().join("d"),
        );
        std::fs::write(&a, b"y1 S0\ny2 S1\n").unwrap();
        std::fs::write(&b, b"y1 S0\ny2 S1\n").unwrap();
        std::fs::write(&c, b"y1 S0\ny2 S2\n").unwrap();
        std::fs::write(&d, b"y1 S0\n").unwrap();
        assert!(super::same_file(&a, &dir.path().join(".").join("a")));
        assert!(super::same_file(&a, &b), "a copy with the same bytes");
        assert!(!super::same_file(&a, &c), "same length, other bytes");
        assert!(!super::same_file(&a, &d), "other length");
        assert!(!super::same_file(&a, &dir.path().join("missing")));
    }
}
