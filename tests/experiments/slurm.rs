//! `--plan --slurm`: the generated job arrays and `submit.sh` run under a stand-in for Slurm's
//! `sbatch` (no Slurm here) that runs every array task with its `SLURM_ARRAY_TASK_ID` and holds
//! a job back unless the job it depends on (`--dependency=afterok:ID`) succeeded. The runs then
//! collect as finished.

use std::path::{Path, PathBuf};
use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_piecewise-lab"))
}

/// A directory holding the stand-in `sbatch`; its calls are logged to `calls.txt` beside it.
fn fake_slurm(dir: &Path) -> PathBuf {
    let stub = dir.join("fake-slurm");
    std::fs::create_dir_all(&stub).unwrap();
    let script = r#"#!/bin/bash
# Stand-in for sbatch: --parsable [--dependency=afterok:ID] SCRIPT.
here=$(dirname "$0")
dep=""; script=""
for a in "$@"; do
  case "$a" in
    --parsable) ;;
    --dependency=afterok:*) dep="${a#--dependency=afterok:}" ;;
    *) script="$a" ;;
  esac
done
id=$(( $(cat "$here/next" 2>/dev/null || echo 100) + 1 ))
echo "$id" > "$here/next"
echo "job $id: $script after ${dep:-none}" >> "$here/calls.txt"
if [ -n "$dep" ] && [ "$(cat "$here/status-$dep")" != ok ]; then
  echo held > "$here/status-$id"; echo "$id"; exit 0
fi
range=$(sed -n 's/^#SBATCH --array=1-\([0-9]*\)$/\1/p' "$script")
status=ok
for i in $(seq 1 "$range"); do
  SLURM_ARRAY_TASK_ID=$i bash "$script" > /dev/null 2>&1 || status=failed
done
echo "$status" > "$here/status-$id"
echo "$id"
"#;
    let f = stub.join("sbatch");
    std::fs::write(&f, script).unwrap();
    Command::new("chmod").arg("+x").arg(&f).status().unwrap();
    stub
}

fn submit(plan: &Path, stub: &Path) -> String {
    let path = format!(
        "{}:{}",
        stub.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = Command::new("bash")
        .arg(plan.join("submit.sh"))
        .env("PATH", path)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// A sweep's four points in two array tasks of three runs at most: every point finishes.
#[test]
fn a_sweeps_job_array_runs_every_point() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("bm.txt");
    let o = bin()
        .args([
            "generate",
            "boltzmann",
            "--m",
            "5",
            "--n",
            "1000",
            "--seed",
            "4",
            "--out",
        ])
        .arg(&data)
        .output()
        .unwrap();
    assert!(o.status.success());
    let out = tmp.path().join("sweep");
    let sweep = |extra: &[&str]| {
        bin()
            .args(["sweep", "--model", "boltzmann", "--families", "pl1/fl"])
            .args(["--lambdas", "0.5,1", "--betas", "0.5,1", "--sigma2", "10"])
            .args(["--threads", "1", "--train"])
            .arg(&data)
            .arg("--out")
            .arg(&out)
            .args(extra)
            .output()
            .unwrap()
    };
    let o = sweep(&["--plan", "--slurm", "--runs-per-task", "3"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let sbatch = std::fs::read_to_string(out.join("plan/stage-1.sbatch")).unwrap();
    assert!(sbatch.contains("#SBATCH --array=1-2\n"), "{sbatch}");
    assert!(sbatch.contains("#SBATCH --cpus-per-task=1\n"), "{sbatch}");
    let stub = fake_slurm(tmp.path());
    let said = submit(&out.join("plan"), &stub);
    assert!(said.contains("stage 1: job 101 (2 task(s))"), "{said}");
    let o = sweep(&["--collect"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// 000-table6's two stages: the second is submitted after the first and runs once it has
/// succeeded; a stage whose task failed holds the next one back.
#[test]
fn a_reproductions_stages_run_in_order() {
    let d = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data");
    if !d.join("seminars").exists() {
        eprintln!("skipping: ../shared/data is absent");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let reproduce = |extra: &[&str]| {
        bin()
            .args([
                "reproduce",
                "000-table6",
                "--quick",
                "--threads",
                "1",
                "--data",
            ])
            .arg(&d)
            .arg("--out")
            .arg(&out)
            .args(extra)
            .output()
            .unwrap()
    };
    let o = reproduce(&["--plan", "--slurm", "--runs-per-task", "2"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let plan = out.join("plan/000-table6");
    let submit_sh = std::fs::read_to_string(plan.join("submit.sh")).unwrap();
    assert!(
        submit_sh.contains("--dependency=afterok:\"$s1\" stage-2.sbatch"),
        "{submit_sh}"
    );
    let stub = fake_slurm(tmp.path());
    let said = submit(&plan, &stub);
    assert!(said.contains("stage 2: job 102"), "{said}");
    let calls = std::fs::read_to_string(stub.join("calls.txt")).unwrap();
    assert!(
        calls.contains("job 102: stage-2.sbatch after 101"),
        "{calls}"
    );
    let o = reproduce(&["--collect"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // A line of stage 1 that fails fails its task, and stage 2 is held back.
    let lines = plan.join("stage-1.txt");
    let text = std::fs::read_to_string(&lines).unwrap();
    std::fs::write(&lines, format!("false\n{text}")).unwrap();
    submit(&plan, &stub);
    let status = |id: u32| std::fs::read_to_string(stub.join(format!("status-{id}"))).unwrap();
    assert_eq!(status(103).trim(), "failed");
    assert_eq!(status(104).trim(), "held");
}

/// Boltzmann data for a small sweep, in `dir`.
fn boltzmann(dir: &Path) -> PathBuf {
    let data = dir.join("bm.txt");
    let o = bin()
        .args([
            "generate",
            "boltzmann",
            "--m",
            "5",
            "--n",
            "200",
            "--seed",
            "4",
        ])
        .arg("--out")
        .arg(&data)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    data
}

/// `sweep … --plan` of two points into `out`, with extra arguments.
fn plan_sweep(data: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    bin()
        .args(["sweep", "--model", "boltzmann", "--families", "pl1/fl"])
        .args(["--lambdas", "0.5,1", "--betas", "1", "--sigma2", "10"])
        .args(["--max-iter", "2", "--threads", "1", "--train"])
        .arg(data)
        .arg("--out")
        .arg(out)
        .arg("--plan")
        .args(extra)
        .output()
        .unwrap()
}

/// M9: `--runs-per-task` past any use (2^63 made the task's line numbers overflow bash's
/// integers, so every task ran no line and succeeded) or 0 is refused naming the flag, before
/// anything is written.
#[test]
fn runs_per_task_out_of_range_is_refused_before_anything_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let data = boltzmann(tmp.path());
    for n in [
        "9223372036854775808",
        "18446744073709551615",
        "1000001",
        "0",
    ] {
        let out = tmp.path().join(format!("sweep-{n}"));
        let o = plan_sweep(&data, &out, &["--slurm", "--runs-per-task", n]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{n}: {err}");
        assert!(err.contains("--runs-per-task: give 1 to 1000000"), "{err}");
        assert!(!out.exists(), "{n}: nothing written");
    }
}

/// An array task that finds no line to run (an index past the array, or none at all) fails
/// rather than succeeding and releasing the next stage.
#[test]
fn an_array_task_with_no_line_to_run_fails() {
    let tmp = tempfile::tempdir().unwrap();
    let data = boltzmann(tmp.path());
    let out = tmp.path().join("sweep");
    let o = plan_sweep(&data, &out, &["--slurm", "--runs-per-task", "1000000"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let sbatch = out.join("plan/stage-1.sbatch");
    let n = Command::new("bash")
        .arg("-n")
        .arg(&sbatch)
        .status()
        .unwrap();
    assert!(n.success());
    for task in ["2", "0", "", "99999999999999999999", "1 + 1"] {
        let o = Command::new("bash")
            .arg(&sbatch)
            .env("SLURM_ARRAY_TASK_ID", task)
            .output()
            .unwrap();
        assert!(!o.status.success(), "task {task:?} succeeded");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("is not one of 1-1"), "{task:?}: {err}");
    }
    // The line file emptied after planning: task 1 finds nothing to run.
    std::fs::write(out.join("plan/stage-1.txt"), "").unwrap();
    let o = Command::new("bash")
        .arg(&sbatch)
        .env("SLURM_ARRAY_TASK_ID", "1")
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("found no line 1-1000000"), "{err}");
}

/// Slurm reads `%` in `#SBATCH --output` as a pattern (`%j` the job's number): a `%` of the
/// path is written `%%`, so the logs land in the plan's folder.
#[test]
fn a_percent_in_the_logs_path_is_escaped_for_slurm() {
    let tmp = tempfile::tempdir().unwrap();
    let data = boltzmann(tmp.path());
    let out = tmp.path().join("sweep%j");
    let o = plan_sweep(&data, &out, &["--slurm"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let sbatch = std::fs::read_to_string(out.join("plan/stage-1.sbatch")).unwrap();
    let logs = out
        .join("plan/logs")
        .display()
        .to_string()
        .replace('%', "%%");
    assert!(
        sbatch.contains(&format!("#SBATCH --output={logs}/stage-1-%A_%a.log\n")),
        "{sbatch}"
    );
}

/// A `--slurm` refused (a name or path no `#SBATCH` line can hold) writes nothing: no stage
/// files, no specs, no sweep index.
#[test]
fn a_refused_slurm_plan_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let data = boltzmann(tmp.path());
    let out = tmp.path().join("my sweep");
    let o = plan_sweep(&data, &out, &["--slurm"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("cannot stand in an #SBATCH line"), "{err}");
    assert!(!out.exists(), "nothing written");
    // Without --slurm the same plan is written.
    let o = plan_sweep(&data, &out, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.join("plan/stage-1.txt").exists());
}

/// The hint printed after a plan names `--out` as one shell word (quoted when it holds a
/// space), so it can be typed as printed; likewise `submit.sh`.
#[test]
fn the_collect_hint_quotes_the_out_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("my runs");
    let o = bin()
        .args(["reproduce", "004-consistency", "--quick", "--threads", "1"])
        .arg("--out")
        .arg(&out)
        .arg("--plan")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let hint = format!(
        "piecewise-lab reproduce 004-consistency --out '{}' --quick --collect",
        out.display()
    );
    assert!(err.contains(&hint), "{err}");
}
