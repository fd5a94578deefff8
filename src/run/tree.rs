//! Finding runs under a folder: every directory holding a `spec.json`, at any depth — a
//! workspace's `runs/`, `reproduce`'s `OUT/runs/TASK/ESTIMATOR/REP`, a sweep's points, a
//! cluster's collection. The walk is bounded (depth, directories visited, runs found), does
//! not enter a run's directory or a hidden one (a trash), and visits a folder reached twice
//! through symbolic links once.

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// The deepest folder searched below the root (`reproduce`'s runs are 4 deep).
pub const MAX_DEPTH: usize = 12;
/// The most directories read in one walk.
pub const MAX_DIRS: usize = 100_000;
/// The most runs listed from one root.
pub const MAX_RUNS: usize = 20_000;

/// The runs found under a root, sorted by path, and what the walk left out.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunTree {
    pub runs: Vec<PathBuf>,
    /// Why the walk stopped early, when it did (a limit reached).
    pub truncated: Option<String>,
}

/// The runs under `root` (itself, when it is one).
pub fn find_runs(root: &Path) -> Result<RunTree> {
    if !root.is_dir() {
        return Err(Error::file(
            root.display().to_string(),
            "is not a folder of runs",
        ));
    }
    let mut tree = RunTree::default();
    let mut seen = std::collections::HashSet::new();
    let mut stack = vec![(root.to_path_buf(), 0usize)];
    let mut dirs = 0usize;
    while let Some((dir, depth)) = stack.pop() {
        if let Ok(real) = dir.canonicalize() {
            if !seen.insert(real) {
                continue;
            }
        }
        dirs += 1;
        if dirs > MAX_DIRS {
            tree.truncated = Some(format!("stopped after reading {MAX_DIRS} folders"));
            break;
        }
        if dir.join("spec.json").is_file() {
            tree.runs.push(dir);
            if tree.runs.len() >= MAX_RUNS {
                tree.truncated = Some(format!("stopped at {MAX_RUNS} runs"));
                break;
            }
            continue;
        }
        if depth >= MAX_DEPTH {
            continue;
        }
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in rd.flatten() {
            let name = entry.file_name();
            if name.to_string_lossy().starts_with('.') {
                continue;
            }
            let path = entry.path();
            if path.is_dir() {
                stack.push((path, depth + 1));
            }
        }
    }
    tree.runs.sort();
    Ok(tree)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_runs_at_any_depth_and_nothing_hidden_nested_or_looped() {
        let tmp = tempfile::tempdir().unwrap();
        let r = tmp.path();
        let run = |p: &str| {
            std::fs::create_dir_all(r.join(p)).unwrap();
            std::fs::write(r.join(p).join("spec.json"), "{}").unwrap();
        };
        run("runs/001-ml");
        run("out/runs/000-fig3/pl/0");
        run("out/runs/000-fig3/pl/0/inner");
        run(".trash/old");
        std::fs::create_dir_all(r.join("empty/deeper")).unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(r, r.join("out/loop")).unwrap();
        let t = find_runs(r).unwrap();
        assert_eq!(
            t.runs,
            vec![r.join("out/runs/000-fig3/pl/0"), r.join("runs/001-ml")]
        );
        assert_eq!(t.truncated, None);
        assert_eq!(find_runs(&r.join("runs/001-ml")).unwrap().runs.len(), 1);
        assert!(find_runs(&r.join("nowhere")).is_err());
    }
}
