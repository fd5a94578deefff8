//! A sweep killed mid-way and started again loses no finished point and repeats none.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_piecewise-lab"))
}

/// Finished points: run directory → its summary.json text.
fn finished(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Ok(runs) = std::fs::read_dir(dir.join("runs")) else {
        return out;
    };
    for r in runs {
        let p = r.unwrap().path();
        if let Ok(text) = std::fs::read_to_string(p.join("summary.json")) {
            if text.contains("\"status\": \"finished\"") {
                out.insert(p.file_name().unwrap().to_string_lossy().into_owned(), text);
            }
        }
    }
    out
}

/// Exact samples of an m-node Boltzmann machine written to `dir/bm.txt`.
fn boltzmann_data(dir: &Path, m: u32, n: u32, seed: u32) -> std::path::PathBuf {
    let data = dir.join("bm.txt");
    let o = bin()
        .args(["generate", "boltzmann"])
        .args(["--m", &m.to_string(), "--n", &n.to_string()])
        .args(["--seed", &seed.to_string(), "--out"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(o.status.success());
    data
}

#[test]
fn a_killed_sweep_resumes_without_losing_or_repeating_points() {
    let tmp = tempfile::tempdir().unwrap();
    let data = boltzmann_data(tmp.path(), 6, 4000, 3);
    let out = tmp.path().join("sweep");
    let args = |c: &mut Command| {
        c.args(["sweep", "--model", "boltzmann", "--families", "pl1/fl"])
            .args([
                "--lambdas",
                "0.25,0.5,0.75,1",
                "--betas",
                "0.5,1",
                "--sigma2",
                "10",
            ])
            .args(["--jobs", "1", "--threads", "1", "--train"])
            .arg(&data)
            .arg("--out")
            .arg(&out);
    };
    let mut c = bin();
    args(&mut c);
    let mut child = c.spawn().unwrap();
    let t = Instant::now();
    // Kill it once at least one point has finished (and, almost surely, before the last).
    while finished(&out).is_empty() {
        assert!(t.elapsed() < Duration::from_secs(120), "no point finished");
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let before = finished(&out);
    assert!(!before.is_empty());
    let mut c = bin();
    args(&mut c);
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let log = String::from_utf8_lossy(&o.stderr);
    let after = finished(&out);
    assert_eq!(after.len(), 8, "every point finished: {log}");
    for (dir, text) in &before {
        assert_eq!(after.get(dir), Some(text), "{dir} was run again");
    }
    assert_eq!(log.matches("skipped").count(), before.len(), "{log}");
    assert_eq!(
        log.matches(" iterations, ").count(),
        8 - before.len(),
        "{log}"
    );
    let csv = std::fs::read_to_string(out.join("sweep.csv")).unwrap();
    assert_eq!(
        csv.lines().filter(|l| l.contains(",finished,")).count(),
        8,
        "{csv}"
    );
    // Another sweep in the same directory is refused.
    let o = bin()
        .args([
            "sweep",
            "--model",
            "boltzmann",
            "--families",
            "pl1/pl2",
            "--lambdas",
            "0.5",
        ])
        .args(["--betas", "0.5", "--train"])
        .arg(&data)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("another sweep"));
}

/// `sweep --plan` writes one `train` line per unfinished point and runs nothing; the lines run
/// by a scheduler (here two at a time, as `parallel -j2` would) and the same sweep started
/// again give every point finished, none run twice, and the table.
#[test]
fn a_planned_sweep_runs_its_lines_and_is_collected_by_the_sweep() {
    let tmp = tempfile::tempdir().unwrap();
    let data = boltzmann_data(tmp.path(), 5, 1000, 4);
    let out = tmp.path().join("sweep");
    let sweep_with = |flag: Option<&str>| {
        let mut c = bin();
        c.args(["sweep", "--model", "boltzmann", "--families", "pl1/fl"])
            .args(["--lambdas", "0.5,1", "--betas", "0.5,1", "--sigma2", "10"])
            .args(["--threads", "1", "--train"])
            .arg(&data)
            .arg("--out")
            .arg(&out);
        c.args(flag);
        c.output().unwrap()
    };
    let sweep = |plan: bool| sweep_with(plan.then_some("--plan"));
    let o = sweep(true);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let lines: Vec<String> = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(lines.len(), 4, "one line per point: {lines:?}");
    assert!(finished(&out).is_empty(), "--plan runs nothing");
    let stage = std::fs::read_to_string(out.join("plan/stage-1.txt")).unwrap();
    assert_eq!(stage.lines().collect::<Vec<_>>(), lines);
    // Collecting before the lines ran: every point missing, nothing trained, a failure.
    let o = sweep_with(Some("--collect"));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert_eq!(err.matches("): missing").count(), 4, "{err}");
    assert!(finished(&out).is_empty(), "--collect trains nothing");
    // Two at a time, as `parallel -j2 < stage-1.txt` runs them.
    for pair in lines.chunks(2) {
        let kids: Vec<_> = pair
            .iter()
            .map(|l| Command::new("bash").arg("-c").arg(l).spawn().unwrap())
            .collect();
        for mut k in kids {
            assert!(k.wait().unwrap().success());
        }
    }
    let runs = finished(&out);
    assert_eq!(runs.len(), 4);
    // Planned again: nothing left to do.
    let o = sweep(true);
    assert!(o.status.success());
    assert!(
        o.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    // The sweep collects them without running any again.
    let o = sweep(false);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(finished(&out), runs, "no point run twice");
    let csv = std::fs::read_to_string(out.join("sweep.csv")).unwrap();
    assert_eq!(csv.lines().filter(|l| l.contains(",finished,")).count(), 4);
    // And collecting says so, with the same table.
    let o = sweep_with(Some("--collect"));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read_to_string(out.join("sweep.csv")).unwrap(), csv);
    // The Frontier pane finds it when the folder is opened (as the sweep or its parent), not
    // in a workspace without it.
    use piecewise_lab::experiments::sweep::read_sweeps;
    let ws = tmp.path().join("ws");
    assert!(read_sweeps(&ws, &[]).is_empty());
    for folder in [out.clone(), tmp.path().to_path_buf()] {
        let found = read_sweeps(&ws, &[folder]);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].dir, out);
        assert_eq!(found[0].runs.len(), 4);
    }
}

/// Two sweeps started on one folder at once share its points: neither lists a point the other
/// finished (or is running) as failed, and at the end every point reads finished.
#[test]
fn two_sweeps_on_one_folder_agree_on_every_point() {
    let tmp = tempfile::tempdir().unwrap();
    let data = boltzmann_data(tmp.path(), 5, 1000, 5);
    let out = tmp.path().join("sweep");
    let start = || {
        bin()
            .args(["sweep", "--model", "boltzmann", "--families", "pl1/fl"])
            .args(["--lambdas", "0.25,0.5,0.75,1", "--betas", "0.5,1"])
            .args(["--sigma2", "10", "--jobs", "1", "--threads", "1", "--train"])
            .arg(&data)
            .arg("--out")
            .arg(&out)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (start(), start());
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    let logs = format!(
        "{}\n---\n{}",
        String::from_utf8_lossy(&a.stderr),
        String::from_utf8_lossy(&b.stderr)
    );
    assert_eq!(finished(&out).len(), 8, "{logs}");
    let index: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("sweep.json")).unwrap()).unwrap();
    for p in index["points"].as_array().unwrap() {
        assert_eq!(p["status"], "finished", "{p}\n{logs}");
    }
}
