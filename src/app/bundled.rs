//! The files the app ships with — lessons, templates and sample data — compiled into the
//! binary, so that a copy installed with `cargo install --path .` and started from any folder
//! finds them. They are written out once per version into the platform's data directory and
//! read from there like any other files (the lessons name them by relative paths).

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

macro_rules! bundle {
    ($($p:literal,)*) => {
        &[$(($p, include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/", $p)) as &[u8]),)*]
    };
}

/// Every bundled file: its path under the root, and its bytes.
pub const FILES: &[(&str, &[u8])] = bundle!(
    "assets/lessons/01-what-an-estimator-normalises.toml",
    "assets/lessons/02-node-split.toml",
    "assets/lessons/03-bp-messages-at-one.toml",
    "assets/lessons/04-training-side-by-side.toml",
    "assets/lessons/05-label-bias-and-nota.toml",
    "assets/lessons/06-loopy-models.toml",
    "assets/lessons/07-camel-constraints.toml",
    "assets/lessons/08-stochastic-composite-likelihood.toml",
    "assets/lessons/09-grammar-chart-and-nota.toml",
    "assets/lessons/README.md",
    "assets/templates/chunking-pairs.tpl",
    "assets/templates/chunking.tpl",
    "assets/templates/hmm-window.tpl",
    "assets/templates/hmm.tpl",
    "assets/templates/pos-pairs.tpl",
    "assets/templates/pos.tpl",
    "assets/templates/seminars-pairs.tpl",
    "assets/templates/seminars.tpl",
    "assets/templates/word.tpl",
    "sample_data/README.md",
    "sample_data/grid-10x10-dev.grid",
    "sample_data/grid-10x10-test.grid",
    "sample_data/grid-10x10-train.grid",
    "sample_data/grid-4x4-test.grid",
    "sample_data/grid-4x4-train.grid",
    "sample_data/hmm-a0.5-test.conll",
    "sample_data/hmm-a0.5-train.conll",
    "sample_data/hmm-peaked-dev.conll",
    "sample_data/hmm-peaked-test.conll",
    "sample_data/hmm-peaked-train.conll",
    "sample_data/label-bias-dev.conll",
    "sample_data/label-bias-test.conll",
    "sample_data/label-bias-train.conll",
    "sample_data/toy-treebank-test.mrg",
    "sample_data/toy-treebank-train.mrg",
);

/// The folders a root holds (the test checks [`FILES`] lists all of their files).
pub const FOLDERS: [&str; 3] = ["assets/lessons", "assets/templates", "sample_data"];

/// Whether `dir` holds the bundled folders (a source tree, an unpacked release, a copy).
pub fn is_root(dir: &Path) -> bool {
    dir.join("sample_data").is_dir() && dir.join("assets/lessons").is_dir()
}

/// The platform's per-user data directory for the app: `$XDG_DATA_HOME/piecewise-lab` or
/// `~/.local/share/piecewise-lab` on Linux, `~/Library/Application Support/piecewise-lab` on
/// macOS, `%APPDATA%\\piecewise-lab` on Windows; `None` without a home directory.
pub fn data_dir() -> Option<PathBuf> {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let base = if cfg!(target_os = "windows") {
        env("APPDATA")
    } else if cfg!(target_os = "macos") {
        env("HOME").map(|h| h.join("Library/Application Support"))
    } else {
        env("XDG_DATA_HOME").or_else(|| env("HOME").map(|h| h.join(".local/share")))
    };
    base.map(|b| b.join("piecewise-lab"))
}

/// Writes the bundled files under `dir` (those already there with the same bytes are left
/// alone) and returns `dir`.
pub fn write_to(dir: &Path) -> Result<PathBuf> {
    for (rel, bytes) in FILES {
        let path = dir.join(rel);
        if std::fs::read(&path).is_ok_and(|b| b == *bytes) {
            continue;
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
        }
        crate::util::write_atomic(&path, bytes)?;
    }
    Ok(dir.to_path_buf())
}

/// The bundled files' folder in the data directory, for this version.
pub fn extracted_root() -> Option<PathBuf> {
    data_dir().map(|d| d.join(format!("bundled-{}", env!("CARGO_PKG_VERSION"))))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every file of the bundled folders is in [`FILES`], byte for byte, and nothing else.
    #[test]
    fn the_bundle_lists_every_file_of_its_folders() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut on_disk = vec![];
        for f in FOLDERS {
            for e in std::fs::read_dir(root.join(f)).unwrap() {
                let e = e.unwrap();
                if e.file_type().unwrap().is_file() {
                    on_disk.push(format!("{f}/{}", e.file_name().to_string_lossy()));
                }
            }
        }
        on_disk.sort();
        let mut listed: Vec<String> = FILES.iter().map(|(p, _)| p.to_string()).collect();
        listed.sort();
        assert_eq!(
            listed, on_disk,
            "add new files to bundle!(…) in src/app/bundled.rs"
        );
        let tmp = tempfile::tempdir().unwrap();
        let out = write_to(tmp.path()).unwrap();
        assert!(is_root(&out));
        for (p, bytes) in FILES {
            assert_eq!(std::fs::read(out.join(p)).unwrap(), *bytes, "{p}");
        }
        // A second write leaves the files as they are.
        write_to(tmp.path()).unwrap();
    }
}
