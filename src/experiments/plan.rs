//! Runs for a cluster: an experiment's unfinished runs written as one shell command line each
//! (`piecewise-lab train --spec … --out …`), so any scheduler — a Slurm job array, GNU
//! parallel, a batch system — runs them on many machines. Each line makes an ordinary run
//! directory; the experiment started again afterwards finds them finished and reuses them.
//!
//! A run that starts from another run's weights (`init_from`) goes into a later stage than that
//! run: stage k's lines may start once stage k − 1 has finished.

use crate::error::{Error, Result};
use crate::run::spec::RunSpec;
use crate::util::{write_atomic, write_json_atomic};
use std::path::{Path, PathBuf};

/// One run of a plan: its spec and the directory it writes.
#[derive(Clone, Debug)]
pub struct PlannedRun {
    pub spec: RunSpec,
    pub dir: PathBuf,
}

/// A written plan: the command lines by stage, and the files holding them.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    pub stages: Vec<Vec<String>>,
    pub files: Vec<PathBuf>,
    /// Runs left out because they finished with the same spec.
    pub finished: usize,
}

impl Plan {
    /// Every command line, stage after stage.
    pub fn lines(&self) -> impl Iterator<Item = &String> {
        self.stages.iter().flatten()
    }
}

/// A word quoted for a POSIX shell.
fn quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:+,@%".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// A path as one word of a plan's one-line command: quoted for the shell, and refused when it
/// would break the line (a newline or carriage return) or change in printing (not UTF-8).
fn path_word(p: &Path) -> Result<String> {
    let s = p.to_str().ok_or_else(|| {
        Error::file(
            p.display().to_string(),
            "not UTF-8: a plan's command line cannot name it",
        )
    })?;
    if s.contains(['\n', '\r', '\0']) {
        return Err(Error::file(
            s.escape_debug().to_string(),
            "holds a line break: a plan has one command a line, so it cannot name this path",
        ));
    }
    Ok(quote(s))
}

fn absolute(p: &Path) -> Result<PathBuf> {
    if p.is_absolute() {
        Ok(p.to_path_buf())
    } else {
        let cwd = std::env::current_dir().map_err(|e| Error::io(Path::new("."), e))?;
        Ok(cwd.join(p))
    }
}

/// Writes the plan of `runs` into `plan_dir`: each unfinished run's spec as
/// `specs/NNNN.json`, the command lines of stage k as `stage-k.txt`. Runs for which
/// `is_finished` holds are left out. Lines `cd` to the current directory first (the specs'
/// relative data paths are relative to it) and name this binary by its absolute path.
pub fn write_plan(
    runs: &[PlannedRun],
    plan_dir: &Path,
    is_finished: &dyn Fn(&PlannedRun) -> bool,
) -> Result<Plan> {
    let exe = std::env::current_exe().map_err(|e| Error::io(Path::new("piecewise-lab"), e))?;
    let cwd = std::env::current_dir().map_err(|e| Error::io(Path::new("."), e))?;
    let todo: Vec<&PlannedRun> = runs.iter().filter(|r| !is_finished(r)).collect();
    let finished = runs.len() - todo.len();
    // Stage of each run: one after the stage of the planned run it starts from.
    let dirs: Vec<PathBuf> = todo
        .iter()
        .map(|r| absolute(&r.dir))
        .collect::<Result<_>>()?;
    let mut stage = vec![0usize; todo.len()];
    for _ in 0..todo.len() {
        let mut changed = false;
        for (i, r) in todo.iter().enumerate() {
            if let Some(from) = &r.spec.init_from {
                let from = absolute(from)?;
                if let Some(j) = dirs.iter().position(|d| *d == from) {
                    if stage[i] <= stage[j] {
                        stage[i] = stage[j] + 1;
                        changed = true;
                    }
                }
            }
        }
        if !changed {
            break;
        }
    }
    // Every path a line names is checked before the old plan is replaced.
    let (cwd_word, exe_word) = (path_word(&cwd)?, path_word(&exe)?);
    path_word(&absolute(plan_dir)?)?;
    let dir_words: Vec<String> = dirs.iter().map(|d| path_word(d)).collect::<Result<_>>()?;
    let specs = plan_dir.join("specs");
    // A plan replaces the previous one in full: no stale stage file or spec is left behind.
    if plan_dir.exists() {
        std::fs::remove_dir_all(plan_dir).map_err(|e| Error::io(plan_dir, e))?;
    }
    std::fs::create_dir_all(&specs).map_err(|e| Error::io(&specs, e))?;
    let n_stages = stage.iter().copied().max().map_or(0, |m| m + 1);
    let mut plan = Plan {
        stages: vec![vec![]; n_stages],
        files: vec![],
        finished,
    };
    for (i, (r, dir_word)) in todo.iter().zip(&dir_words).enumerate() {
        let spec_path = specs.join(format!("{i:04}.json"));
        write_json_atomic(&spec_path, &r.spec)?;
        let spec_path = absolute(&spec_path)?;
        plan.stages[stage[i]].push(format!(
            "cd {} && {} train --spec {} --out {} --if-unfinished",
            cwd_word,
            exe_word,
            path_word(&spec_path)?,
            dir_word,
        ));
    }
    for (k, lines) in plan.stages.iter().enumerate() {
        let f = plan_dir.join(format!("stage-{}.txt", k + 1));
        let mut text = lines.join("\n");
        text.push('\n');
        write_atomic(&f, text.as_bytes())?;
        plan.files.push(f);
    }
    Ok(plan)
}

/// What to tell the user after writing a plan: where it is and how to run it.
pub fn describe(plan: &Plan, again: &str) -> String {
    if plan.stages.is_empty() {
        return format!(
            "Nothing to run: all {} run(s) finished with this spec. `{again}` writes the report.",
            plan.finished
        );
    }
    let mut s = format!(
        "{} run(s) to do in {} stage(s){}:\n",
        plan.lines().count(),
        plan.stages.len(),
        if plan.finished > 0 {
            format!(" ({} finished before, left out)", plan.finished)
        } else {
            String::new()
        }
    );
    for (k, f) in plan.files.iter().enumerate() {
        s.push_str(&format!(
            "  stage {}: {} ({} line(s){})\n",
            k + 1,
            f.display(),
            plan.stages[k].len(),
            if k > 0 {
                format!(", after stage {k} has finished")
            } else {
                String::new()
            }
        ));
    }
    s.push_str(&format!(
        "Run each stage's lines (e.g. `parallel -j2 < STAGE-FILE`, or a Slurm array: see \
         docs/cluster.md), then `{again}` to collect the runs into the report."
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::{path_word, quote};
    use std::path::Path;

    #[test]
    fn a_path_that_would_break_its_line_is_refused() {
        assert_eq!(path_word(Path::new("/runs/a b")).unwrap(), "'/runs/a b'");
        for bad in ["/runs/a\nb", "/runs/a\rb"] {
            let e = path_word(Path::new(bad)).unwrap_err().to_string();
            assert!(e.contains("line break"), "{e}");
        }
    }

    #[test]
    fn quoting_keeps_plain_words_and_escapes_the_rest() {
        assert_eq!(quote("runs/ner/pw/0"), "runs/ner/pw/0");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote(""), "''");
    }
}
