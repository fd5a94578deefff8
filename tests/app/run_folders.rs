//! Folders of runs opened in the workbench (`gui --runs OUT`, *Open runs…*): every run of a
//! `reproduce --quick` output is listed, a run that another process trains there appears and
//! finishes without a restart, and the filter narrows the list.

use crate::workbench::{root, wait_for};
use egui_kittest::kittest::Queryable;
use egui_kittest::Harness;
use piecewise_lab::app::{Config, Opening, Settings, Workbench};
use std::path::{Path, PathBuf};
use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_piecewise-lab"))
}

/// Every directory holding a spec.json under `dir` (counted independently of the app).
fn specs_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.join("spec.json").is_file() {
            out.push(p);
        } else if p.is_dir() {
            specs_under(&p, out);
        }
    }
}

#[test]
fn gui_runs_lists_every_run_of_a_reproduction_and_one_finishing_elsewhere_appears() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("repro");
    let r = bin()
        .args([
            "reproduce",
            "000-fig4",
            "--quick",
            "--threads",
            "1",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let mut want = vec![];
    specs_under(&out, &mut want);
    assert!(want.len() >= 4, "{want:?}");

    let workspace = tmp.path().join("ws");
    let mut wb = Workbench::new(
        Config {
            root: root(),
            workspace: workspace.clone(),
        },
        Settings {
            hide_welcome: true,
            ..Settings::default()
        },
    );
    wb.open_at(&Opening {
        runs: vec![out.clone()],
        ..Default::default()
    })
    .unwrap();
    let mut h = Harness::builder()
        .with_size(egui::vec2(1500.0, 1400.0))
        .build_ui_state(|ui, wb: &mut Workbench| wb.ui(ui), wb);
    h.step();
    h.step();
    let listed: Vec<&PathBuf> = h
        .state()
        .state
        .runs
        .entries
        .iter()
        .map(|e| &e.dir)
        .collect();
    for dir in &want {
        assert!(listed.contains(&dir), "{} not listed", dir.display());
    }
    // Each is on screen by its path below the folder, with its state.
    for dir in &want {
        let rel = dir.strip_prefix(&out).unwrap().display().to_string();
        assert!(
            h.query_all_by_label_contains(&format!("repro/{rel}"))
                .next()
                .is_some(),
            "{rel} is not on screen"
        );
    }
    assert!(h.query_all_by_label("finished").count() >= want.len());
    let said = format!("opened {}: {} runs", out.display(), want.len());
    assert!(
        h.state()
            .state
            .messages
            .iter()
            .any(|m| m.text.starts_with(&said)),
        "{said}"
    );

    // Another process trains a run into the folder: first it is there half-written (as a
    // run killed in setup leaves it), then it is trained to the end; the list follows both
    // without a restart.
    use piecewise_lab::app::runs::RunStatus;
    let extra = out.join("runs/extra/ml/0");
    std::fs::create_dir_all(&extra).unwrap();
    std::fs::copy(want[0].join("spec.json"), extra.join("spec.json")).unwrap();
    std::fs::write(extra.join("summary.json"), r#"{"status": "running"}"#).unwrap();
    let status_of = |w: &Workbench| {
        w.state
            .runs
            .entries
            .iter()
            .find(|e| e.dir == extra)
            .map(|e| e.status)
    };
    wait_for(&mut h, "the interrupted run listed", 30.0, |w| {
        status_of(w) == Some(RunStatus::Interrupted)
    });
    let r = bin()
        .args(["train", "--train"])
        .arg(root().join("sample_data/hmm-a0.5-train.conll"))
        .arg("--template")
        .arg(root().join("assets/templates/hmm.tpl"))
        .args([
            "--max-iter",
            "3",
            "--threads",
            "1",
            "-q",
            "--force",
            "--out",
        ])
        .arg(&extra)
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    wait_for(&mut h, "the run trained elsewhere, finished", 30.0, |w| {
        status_of(w) == Some(RunStatus::Finished)
    });
    assert!(h
        .query_all_by_label_contains("repro/runs/extra/ml/0")
        .next()
        .is_some());

    // The filter: only the PWPL runs.
    h.get_by_label("Filter").click();
    h.step();
    h.get_by_label("Filter").type_text("pwpl");
    h.step();
    h.step();
    let pwpl = want
        .iter()
        .filter(|d| d.display().to_string().contains("pwpl"))
        .count();
    h.get_by_label_contains(&format!(
        "{pwpl} of {} runs match the filter",
        want.len() + 1
    ));
    assert!(h.query_by_label_contains("repro/runs/extra/ml/0").is_none());
}

#[test]
fn delete_moves_a_run_to_the_trash_and_undo_brings_it_back() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    let dir = ws.join("runs/001-ml");
    crate::workbench::short_run(
        &dir,
        Some("doomed"),
        (
            "sample_data/hmm-a0.5-train.conll",
            "assets/templates/hmm.tpl",
        ),
        piecewise_lab::estimators::EstimatorSpec::Ml,
    );
    let mut wb = Workbench::new(
        Config {
            root: root(),
            workspace: ws.clone(),
        },
        Settings {
            hide_welcome: true,
            ..Settings::default()
        },
    );
    wb.state.command(piecewise_lab::app::AppCommand::Focus(
        piecewise_lab::app::PaneKind::Runs,
    ));
    let mut h = Harness::builder()
        .with_size(egui::vec2(1500.0, 1400.0))
        .build_ui_state(|ui, wb: &mut Workbench| wb.ui(ui), wb);
    h.step();
    h.get_by_label("Delete").click();
    h.step();
    h.step();
    assert!(!dir.exists(), "moved out of runs/");
    let trashed: Vec<_> = std::fs::read_dir(ws.join(".trash"))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(trashed.len(), 1);
    assert!(trashed[0].path().join("spec.json").exists());
    assert!(h
        .state()
        .state
        .messages
        .iter()
        .any(|m| m.text.starts_with("deleted run 001-ml (moved to")));
    assert!(h.state().state.runs.get("001-ml").is_none());
    h.get_by_label("Undo delete of 001-ml").click();
    h.step();
    h.step();
    assert!(dir.join("weights.bin").exists(), "back where it was");
    assert!(h.state().state.runs.get("001-ml").is_some());
    assert!(h
        .state()
        .state
        .messages
        .iter()
        .any(|m| m.text == "run 001-ml is back"));
    assert!(h.query_by_label("Undo delete of 001-ml").is_none());
}
