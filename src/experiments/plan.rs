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

/// `s` as one word of a POSIX shell command printed for the user to type (a path with spaces
/// or quotes stays one word).
pub fn shell_word(s: &str) -> String {
    quote(s)
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

/// The file that marks a folder as a plan this program wrote: only such a folder (or an empty
/// one) is written into, so `--out .` never touches a `plan/` folder of the user's own.
pub const PLAN_MARKER: &str = ".piecewise-lab-plan";
const PLAN_MARKER_TEXT: &str =
    "A plan written by piecewise-lab: writing a plan here again replaces its \
specs/NNNN.json, stage-K.txt, stage-K.sbatch and submit.sh, and nothing else.\n";

/// Whether `name` is a file a plan writes at its top level (its specs are under `specs/`).
fn is_plan_file(name: &str) -> bool {
    let stage = |ext: &str| {
        name.strip_prefix("stage-")
            .and_then(|r| r.strip_suffix(ext))
            .is_some_and(|k| !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()))
    };
    name == "submit.sh" || stage(".txt") || stage(".sbatch")
}

/// Makes `plan_dir` ready for a new plan: a missing or empty folder is fine; a folder with
/// [`PLAN_MARKER`] has the files an earlier plan wrote removed (its stage files, Slurm scripts and
/// specs — Slurm's logs and anything else stay); any other folder or file is refused, naming it.
fn clear_own_plan(plan_dir: &Path) -> Result<()> {
    let meta = match std::fs::symlink_metadata(plan_dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(plan_dir, e)),
    };
    let shown = plan_dir.display().to_string();
    if !meta.is_dir() {
        return Err(Error::file(
            shown,
            "exists and is not a folder: a plan is written into a folder of its own; move it or \
             choose another --out",
        ));
    }
    let read = |dir: &Path| -> Result<Vec<std::fs::DirEntry>> {
        std::fs::read_dir(dir)
            .and_then(|it| it.collect::<std::io::Result<Vec<_>>>())
            .map_err(|e| Error::io(dir, e))
    };
    let entries = read(plan_dir)?;
    if entries.is_empty() {
        return Ok(());
    }
    let marker = plan_dir.join(PLAN_MARKER);
    if !std::fs::symlink_metadata(&marker).is_ok_and(|m| m.is_file()) {
        return Err(Error::file(
            shown,
            format!(
                "exists and was not written by this program (it has no {PLAN_MARKER}): a plan \
                 replaces its folder's stage files, so it is not written over files of yours; \
                 move the folder or choose another --out"
            ),
        ));
    }
    // Every name a plan writes must be a regular file (or absent) before anything goes: a
    // folder or a link there would make the plan fail half-written, or write through the link.
    let not_a_file = |p: &Path| {
        Err(Error::file(
            p.display().to_string(),
            "is not a regular file: a plan writes a file of this name; move it away",
        ))
    };
    let mut own = vec![];
    for e in &entries {
        if e.file_name().to_str().is_some_and(is_plan_file) {
            if !e.file_type().is_ok_and(|t| t.is_file()) {
                return not_a_file(&e.path());
            }
            own.push(e.path());
        }
    }
    let specs = plan_dir.join("specs");
    match std::fs::symlink_metadata(&specs) {
        Ok(m) if m.is_dir() => {
            for e in read(&specs)? {
                let is_spec = e.file_name().to_str().is_some_and(|n| {
                    n.strip_suffix(".json")
                        .is_some_and(|k| k.len() >= 4 && k.bytes().all(|b| b.is_ascii_digit()))
                });
                if is_spec {
                    if !e.file_type().is_ok_and(|t| t.is_file()) {
                        return not_a_file(&e.path());
                    }
                    own.push(e.path());
                }
            }
        }
        Ok(_) => {
            return Err(Error::file(
                specs.display().to_string(),
                "is not a folder: a plan writes its specs into a folder of this name; move it away",
            ))
        }
        Err(_) => {}
    }
    for p in own {
        std::fs::remove_file(&p).map_err(|e| Error::io(&p, e))?;
    }
    Ok(())
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
    // A plan replaces the previous one: no stale stage file or spec is left behind, and
    // nothing else in the folder is touched.
    clear_own_plan(plan_dir)?;
    std::fs::create_dir_all(&specs).map_err(|e| Error::io(&specs, e))?;
    write_atomic(&plan_dir.join(PLAN_MARKER), PLAN_MARKER_TEXT.as_bytes())?;
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

/// How a plan's Slurm scripts ask for their job arrays.
#[derive(Clone, Debug)]
pub struct SlurmOptions {
    /// The job's name (its stages are `NAME-s1`, `NAME-s2`, …).
    pub name: String,
    /// Runs one array task does one after another (short runs share a task).
    pub runs_per_task: usize,
    /// CPUs per task: the plan's `--threads` (1 when it said 0, all cores: a run then uses
    /// what its allocation has).
    pub cpus_per_task: usize,
}

/// The most runs one array task may do one after another (`--runs-per-task`): far above any
/// use, and low enough that the task's line numbers stay far inside bash's integers.
pub const MAX_RUNS_PER_TASK: usize = 1_000_000;

/// A word of an `#SBATCH` line, which no shell unquotes: refused when it would need quoting.
/// (A backslash, which would also turn off Slurm's `%` patterns in a file name, is refused so.)
fn directive_word(s: &str) -> Result<String> {
    if quote(s) == s {
        Ok(s.to_string())
    } else {
        Err(Error::invalid(format!(
            "{s:?} cannot stand in an #SBATCH line (spaces or quotes); choose a plainer name or --out"
        )))
    }
}

/// The `#SBATCH --output` pattern of the plan's logs folder (`%` is Slurm's pattern character:
/// a literal one is written `%%`).
fn logs_pattern(plan_dir: &Path) -> Result<String> {
    let logs = absolute(&plan_dir.join("logs"))?;
    Ok(directive_word(&logs.display().to_string())?.replace('%', "%%"))
}

/// Checks everything the Slurm scripts of a plan in `plan_dir` need (the job's name, the logs
/// folder's path, `--runs-per-task`) without writing anything: called before the plan is
/// written, so a refused `--slurm` leaves no files behind.
pub fn check_slurm(plan_dir: &Path, o: &SlurmOptions) -> Result<()> {
    if !(1..=MAX_RUNS_PER_TASK).contains(&o.runs_per_task) {
        return Err(Error::invalid(format!(
            "--runs-per-task: give 1 to {MAX_RUNS_PER_TASK} (runs one array task does one after \
             another), not {}",
            o.runs_per_task
        )));
    }
    directive_word(&o.name)?;
    logs_pattern(plan_dir)?;
    path_word(&absolute(plan_dir)?)?;
    Ok(())
}

/// Writes a Slurm job array per stage beside the plan's line files (`stage-K.sbatch`: task i
/// runs lines (i − 1)·N + 1 … i·N of `stage-K.txt`, failing when any of them fails, or when it
/// finds no line) and `submit.sh`, which submits them in order, each stage
/// `--dependency=afterok` on the one before. Returns the files written.
pub fn write_slurm(plan: &Plan, plan_dir: &Path, o: &SlurmOptions) -> Result<Vec<PathBuf>> {
    check_slurm(plan_dir, o)?;
    let per = o.runs_per_task;
    let plan_word = path_word(&absolute(plan_dir)?)?;
    let logs_word = logs_pattern(plan_dir)?;
    let mut written = vec![];
    let mut submit = String::from(
        "#!/bin/bash\n# Submits the plan's stages in order; each starts when the one before has finished\n\
         # without a failed task.\nset -euo pipefail\n",
    );
    submit.push_str(&format!("cd {plan_word}\n"));
    let mut previous: Option<String> = None;
    for (k, (lines, file)) in plan.stages.iter().zip(&plan.files).enumerate() {
        let stage = k + 1;
        let tasks = lines.len().div_ceil(per);
        let lines_word = path_word(&absolute(file)?)?;
        let logs = absolute(&plan_dir.join("logs"))?;
        std::fs::create_dir_all(&logs).map_err(|e| Error::io(&logs, e))?;
        let script = format!(
            "#!/bin/bash\n\
             #SBATCH --job-name={name}-s{stage}\n\
             #SBATCH --array=1-{tasks}\n\
             #SBATCH --cpus-per-task={cpus}\n\
             #SBATCH --output={logs_word}/stage-{stage}-%A_%a.log\n\
             # Task i runs lines (i - 1) * {per} + 1 … i * {per} of the stage's line file, one after\n\
             # another; it fails when any of them fails (so afterok holds the next stage back), and\n\
             # when it has no line to run.\n\
             set -u\n\
             task=${{SLURM_ARRAY_TASK_ID:-}}\n\
             if ! [[ $task =~ ^[1-9][0-9]{{0,8}}$ ]] || (( task > {tasks} )); then\n  \
             echo \"array task '$task' is not one of 1-{tasks}\" >&2\n  exit 1\nfi\n\
             first=$(( (task - 1) * {per} + 1 ))\n\
             last=$(( task * {per} ))\n\
             mapfile -t lines < <(sed -n \"${{first}},${{last}}p\" {lines_word})\n\
             if (( ${{#lines[@]}} == 0 )); then\n  \
             echo \"array task $task found no line $first-$last in its stage's line file\" >&2\n  exit 1\nfi\n\
             status=0\n\
             for line in \"${{lines[@]}}\"; do\n  bash -c \"$line\" || status=1\ndone\n\
             exit $status\n",
            name = directive_word(&o.name)?,
            cpus = o.cpus_per_task.max(1),
        );
        let f = plan_dir.join(format!("stage-{stage}.sbatch"));
        write_atomic(&f, script.as_bytes())?;
        written.push(f);
        let dep = previous
            .as_ref()
            .map(|p| format!(" --dependency=afterok:\"${p}\""))
            .unwrap_or_default();
        submit.push_str(&format!(
            "s{stage}=$(sbatch --parsable{dep} stage-{stage}.sbatch)\ns{stage}=${{s{stage}%%;*}}  # ID;CLUSTER on a federation\necho \"stage {stage}: job $s{stage} ({tasks} task(s))\"\n"
        ));
        previous = Some(format!("s{stage}"));
    }
    let f = plan_dir.join("submit.sh");
    write_atomic(&f, submit.as_bytes())?;
    written.push(f);
    Ok(written)
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
