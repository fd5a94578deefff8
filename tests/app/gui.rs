//! The workbench driven by label with egui_kittest (no display needed): load the sample data,
//! step through PWPL and PL terms, launch runs and see them finish, compare two runs, trigger a
//! load error and see its message.

use egui_kittest::kittest::{NodeT, Queryable};
use egui_kittest::Harness;
use piecewise_lab::app::runs::RunStatus;
use piecewise_lab::app::{Config, Settings, Workbench};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::workbench;
use workbench::{root, save_export, wait_for};

fn harness(workspace: &Path) -> Harness<'static, Workbench> {
    let wb = Workbench::new(
        Config {
            root: root(),
            workspace: workspace.to_path_buf(),
        },
        // The welcome screen has its own test (tests/lessons.rs); these start on the panes.
        Settings {
            hide_welcome: true,
            ..Settings::default()
        },
    );
    Harness::builder()
        .with_size(egui::vec2(1500.0, 950.0))
        .build_ui_state(|ui, wb: &mut Workbench| wb.ui(ui), wb)
}

/// The first Theory pane's computations.
fn theory(w: &Workbench) -> &piecewise_lab::app::theory::TheoryRuntime {
    w.tree
        .tiles
        .tiles()
        .find_map(|t| match t {
            egui_tiles::Tile::Pane(piecewise_lab::app::Pane::Theory(p)) => Some(&*p.runtime),
            _ => None,
        })
        .expect("a Theory pane")
}

/// The first Frontier pane's sweeps, once read.
fn frontier_sweeps(w: &Workbench) -> bool {
    w.tree.tiles.tiles().any(|t| {
        matches!(t, egui_tiles::Tile::Pane(piecewise_lab::app::Pane::Frontier(p))
            if p.runtime.sweeps.is_some())
    })
}

/// The Runs pane's form in front on the left and Curves on the right, so the graph pane's
/// estimator buttons (same labels as the form's) are not drawn.
fn runs_form(h: &mut Harness<'_, Workbench>) {
    h.get_by_label("Runs view").click();
    h.step();
    h.get_by_label("Curves view").click();
    h.step();
    h.step();
}

/// Picks the Curves pane's y-axis metric by its label and checks the combo box shows it.
fn pick_curve_metric(h: &mut Harness<'_, Workbench>, label: &str) {
    h.get_by_label("on the y axis").click();
    h.step();
    h.step();
    h.step();
    h.get_by_label(label).click();
    h.step();
    h.step();
    let shown = h
        .get_by_label("on the y axis")
        .accesskit_node()
        .value()
        .unwrap_or_default()
        .to_string();
    assert!(shown.contains(label), "{shown}");
}

fn loaded(h: &mut Harness<'_, Workbench>) {
    wait_for(h, "the sample data", 60.0, |w| {
        w.state.data.is_some() && !w.state.is_loading()
    });
}

/// The text of the export under `workspace/exports` whose name contains `stem`.
fn exported(workspace: &Path, stem: &str) -> String {
    std::fs::read_dir(workspace.join("exports"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains(stem))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .unwrap_or_else(|| panic!("no {stem} export"))
}

/// Loads a grid file through the Data pane's fields and *Load*.
fn load_grid(h: &mut Harness<'_, Workbench>, file: &Path) {
    load_family(h, piecewise_lab::run::FamilyKind::Grid, file);
}

/// A workbench on `workspace` with four generated 3×3 images (3 classes, seed `seed`) loaded.
fn with_grid(
    workspace: &Path,
    seed: u64,
) -> (
    Harness<'static, Workbench>,
    Vec<piecewise_lab::data::Sequence>,
) {
    use piecewise_lab::data::synth_loopy::GridGen;
    let items = GridGen {
        classes: 3,
        height: 3,
        width: 3,
        ..GridGen::default()
    }
    .images(4, seed)
    .unwrap();
    let file = workspace.join("g.grid");
    std::fs::write(&file, piecewise_lab::data::grid::format_grid(&items, None)).unwrap();
    let mut h = harness(workspace);
    h.step();
    loaded(&mut h);
    load_grid(&mut h, &file);
    (h, items)
}

/// Loads a Boltzmann-machine sample file through the Data pane's fields and *Load*.
fn load_boltzmann(h: &mut Harness<'_, Workbench>, file: &Path) {
    load_family(h, piecewise_lab::run::FamilyKind::Boltzmann, file);
}

#[test]
fn starts_on_the_sample_data_and_steps_through_pwpl_and_pl_terms() {
    let ws = tempfile::tempdir().unwrap();
    let mut h = harness(ws.path());
    h.step();
    loaded(&mut h);
    // The first screen: the data set loaded, its statistics shown.
    h.get_by_label_contains("loaded hmm-a0.5-train.conll");
    h.get_by_label("hmm-a0.5-train.conll");
    let n = h.state().state.data.as_ref().unwrap().train.sequences[0].len();

    h.get_by_label("Graph view").click();
    h.step();
    h.step();
    // PWPL (000 eq. 36-37) on a split chain: one term per factor and variable in it,
    // n unary + 2 (n - 1) pairwise = 3n - 2 terms.
    h.get_by_label_contains(&format!("pwpl term 1 of {}", 3 * n - 2));
    for _ in 0..4 {
        h.get_by_label("Next term >").click();
        h.step();
    }
    h.step();
    h.get_by_label_contains(&format!("pwpl term 5 of {}", 3 * n - 2));
    // Every PWPL term frees one variable of one factor; a transition factor's terms clamp the
    // other end at its gold label. Step until one shows up.
    let gold = h.state().state.data.as_ref().unwrap().train.sequences[0]
        .labels
        .clone();
    let mut found = false;
    for _ in 0..6 {
        let caption = h
            .get_by_label_contains("pwpl term ")
            .accesskit_node()
            .value()
            .unwrap_or_default();
        if let Some((_, clamped)) = caption.split_once(" | ") {
            let (var, label) = clamped.trim_end_matches(')').split_once(" = ").unwrap();
            let t: usize = var[1..var.find('·').unwrap()].parse().unwrap();
            assert_eq!(label, gold[t], "{caption}");
            found = true;
            break;
        }
        h.get_by_label("Next term >").click();
        h.step();
        h.step();
    }
    assert!(
        found,
        "no PWPL term with a clamped variable in the first terms"
    );
    h.get_by_label("< Previous term").click();
    h.step();
    h.step();
    assert!(h.query_by_label_contains("pwpl term 1 of").is_none());

    // Node pseudolikelihood: one term per variable, its neighbours clamped.
    h.get_by_label("pl").click();
    h.step();
    h.step();
    h.get_by_label_contains(&format!("pl term 1 of {n}"));
}

#[test]
fn launches_runs_sees_them_finish_and_compares_them() {
    let ws = tempfile::tempdir().unwrap();
    let mut h = harness(ws.path());
    h.step();
    loaded(&mut h);
    runs_form(&mut h);
    // First run: pwpl on the loaded sample.
    h.get_by_label("pwpl").click();
    h.step();
    h.get_by_label("Train").click();
    h.step();
    wait_for(&mut h, "the first run", 120.0, |w| {
        w.state.runs.entries.len() == 1 && w.state.runs.entries[0].status == RunStatus::Finished
    });
    h.get_by_label("finished");
    // Second run with exact ML.
    h.get_by_label("ml").click();
    h.step();
    h.get_by_label("Train").click();
    h.step();
    wait_for(&mut h, "the second run", 120.0, |w| {
        w.state.runs.entries.len() == 2
            && w.state
                .runs
                .entries
                .iter()
                .all(|e| e.status == RunStatus::Finished)
    });
    assert_eq!(h.get_all_by_label("finished").count(), 2);
    // Both are ticked for comparison on launch.
    h.get_by_label("Compare view").click();
    h.step();
    h.step();
    h.get_by_label("Compare runs");
    // The spec diff highlights the estimator and nothing it should not.
    h.get_by_label("≠ estimator.name");
    assert!(h.query_by_label("≠ prior.sigma2").is_none());
    h.get_by_label("token accuracy %");
    // The comparison table exports as CSV, one column per run.
    h.get_by_label("Save table CSV").click();
    h.step();
    h.step();
    save_export(&mut h);
    let exports: Vec<_> = std::fs::read_dir(ws.path().join("exports"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(exports.len(), 1, "{exports:?}");
    let csv = std::fs::read_to_string(&exports[0]).unwrap();
    let header = csv.lines().next().unwrap();
    assert!(header.starts_with("field,001-pwpl,002-ml"), "{header}");
    assert!(csv.contains("\nspec.estimator.name,pwpl,ml\n"), "{csv}");
    // Runs persist: a new workbench on the same workspace finds both.
    let again = Workbench::new(
        Config {
            root: root(),
            workspace: ws.path().to_path_buf(),
        },
        Settings::default(),
    );
    assert_eq!(again.state.runs.entries.len(), 2);
    assert!(again
        .state
        .runs
        .entries
        .iter()
        .all(|e| e.status == RunStatus::Finished && e.curve.len() > 1));
}

#[test]
fn a_load_error_names_the_file_and_line() {
    let ws = tempfile::tempdir().unwrap();
    let bad = ws.path().join("bad.conll");
    std::fs::write(&bad, "a x B-NP\nb y I-NP\nc I-NP\n").unwrap();
    let mut h = harness(ws.path());
    h.step();
    loaded(&mut h);
    h.state_mut().state.form.train = bad.display().to_string();
    h.state_mut().state.form.test.clear();
    h.get_by_label("Load").click();
    h.step();
    wait_for(&mut h, "the load to fail", 30.0, |w| !w.state.is_loading());
    h.get_by_label("Data view").click();
    h.step();
    h.step();
    // Said in the message bar and in the Data pane, beside the files it names.
    let msgs: Vec<String> = h
        .query_all_by_label_contains("could not load the data")
        .map(|n| n.accesskit_node().value().unwrap_or_default())
        .collect();
    assert_eq!(msgs.len(), 2, "{msgs:?}");
    for msg in &msgs {
        assert!(msg.contains("bad.conll:3"), "{msg}");
    }
    // The previous data set stays loaded.
    assert!(h.state().state.data.is_some());
}

/// The launch form keeps every row whatever the estimator or model, so Train stays put.
#[test]
fn the_train_button_does_not_move_when_the_estimator_changes() {
    let ws = tempfile::tempdir().unwrap();
    let mut h = harness(ws.path());
    h.step();
    loaded(&mut h);
    runs_form(&mut h);
    let at = h.get_by_label("Train").rect();
    for est in ["pw-reweighted", "ml", "bp", "scl", "pwpl", "pl-edge"] {
        h.get_by_label(est).click();
        h.step();
        h.step();
        assert_eq!(h.get_by_label("Train").rect(), at, "after picking {est}");
    }
    h.state_mut().state.launch.data.model.set("model", "grid");
    h.step();
    h.step();
    assert_eq!(
        h.get_by_label("Train").rect(),
        at,
        "after picking the grid model"
    );
}

/// A generated grid loads as a grid: pseudolikelihood has one term per pixel, and an inner
/// pixel's term clamps its four neighbours at their gold labels.
#[test]
fn loads_a_grid_and_steps_through_its_pseudolikelihood_terms() {
    let ws = tempfile::tempdir().unwrap();
    let (mut h, items) = with_grid(ws.path(), 1);
    h.get_by_label_contains("grid (Potts pairwise, 4-connected)");
    h.get_by_label("Graph view").click();
    h.step();
    h.get_by_label("pl").click();
    h.step();
    h.step();
    h.get_by_label_contains("pl term 1 of 9");
    // Pixel 4 is the centre of the 3×3 image.
    for _ in 0..4 {
        h.get_by_label("Next term >").click();
        h.step();
    }
    h.step();
    let caption = h
        .get_by_label_contains("pl term 5 of 9")
        .accesskit_node()
        .value()
        .unwrap_or_default();
    let (_, clamped) = caption.split_once(" | ").expect("clamped variables");
    let gold = &items[0].labels;
    let mut n = 0;
    for part in clamped.trim_end_matches(')').split(", ") {
        let (var, label) = part.split_once(" = ").unwrap();
        // Pixels have no words: the variable is named `y{index}` alone.
        let v: usize = var[1..].parse().unwrap_or_else(|_| panic!("{caption}"));
        assert!([1, 3, 5, 7].contains(&v), "{caption}");
        assert_eq!(label, gold[v], "{caption}");
        n += 1;
    }
    assert_eq!(n, 4, "{caption}");
}

/// The BP stepper on a Boltzmann machine: train exact ML on generated samples, pick the run in
/// the graph view, switch BP on, sweep until it converges, and flip to "messages held at 1".
#[test]
fn steps_bp_on_a_boltzmann_machine_and_shows_piecewise_as_messages_at_one() {
    use piecewise_lab::data::samples::format_samples;
    use piecewise_lab::data::synth_loopy::{boltzmann_samples, paper_theta};
    let ws = tempfile::tempdir().unwrap();
    let file = ws.path().join("bm.txt");
    let s = boltzmann_samples(5, &paper_theta(5), &[], 300, 1).unwrap();
    std::fs::write(&file, format_samples(&s)).unwrap();
    let mut h = harness(ws.path());
    h.step();
    loaded(&mut h);
    load_boltzmann(&mut h, &file);
    let run = train_loaded(&mut h, "ml");
    h.get_by_label("Graph view").click();
    h.step();
    // Pick the trained model and switch BP on in the graph pane.
    graph_pane(&mut h).model_run = Some(run);
    h.step();
    h.get_by_label("BP messages").click();
    h.step();
    wait_for(&mut h, "the first sweep", 30.0, |w| {
        w.state.messages.iter().all(|m| !m.error)
    });
    let t = Instant::now();
    while h
        .query_by_label_contains("BP sweep 1 (parallel schedule)")
        .is_none()
    {
        assert!(t.elapsed().as_secs() < 30, "no BP caption");
        h.step();
        std::thread::sleep(Duration::from_millis(10));
    }
    let caption = h
        .get_by_label_contains("BP sweep 1 (parallel schedule)")
        .accesskit_node()
        .value()
        .unwrap_or_default();
    let k: usize = caption
        .split("converges after ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{caption}"));
    for i in 2..=k {
        h.get_by_label("Sweep +1").click();
        let t = Instant::now();
        while h
            .query_by_label_contains(&format!("BP sweep {i} "))
            .is_none()
        {
            assert!(t.elapsed().as_secs() < 30, "sweep {i} never shown");
            h.step();
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    h.get_by_label_contains(&format!("converged after {k} sweeps"));
    h.get_by_label("messages held at 1 (piecewise)").click();
    h.step();
    h.step();
    h.get_by_label_contains("Piecewise: every message held at 1");
}

/// Boltzmann runs on generated samples know θ0: Compare plots |θ − θ0| against n per estimator
/// and exports it; the exported numbers are the runs' own.
#[test]
fn compare_plots_and_exports_boltzmann_consistency() {
    use piecewise_lab::data::samples::format_samples;
    use piecewise_lab::data::synth_loopy::{boltzmann_samples, paper_theta};
    use piecewise_lab::estimators::EstimatorSpec;
    use piecewise_lab::graph::boltzmann::BoltzmannOptions;
    use piecewise_lab::optim::Prior;
    use piecewise_lab::run::{execute, ModelSpec, RunSpec};
    let ws = tempfile::tempdir().unwrap();
    let mut want = vec![];
    let mut id = 0;
    for n in [200, 2000] {
        let file = ws.path().join(format!("bm{n}.txt"));
        let theta = paper_theta(5);
        let text = format!(
            "# theta: {}\n{}",
            theta
                .iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(","),
            format_samples(&boltzmann_samples(5, &theta, &[], n, 7).unwrap())
        );
        std::fs::write(&file, text).unwrap();
        for est in ["ml", "pl"] {
            id += 1;
            let spec = RunSpec {
                name: None,
                train: file.clone(),
                test: None,
                template: None,
                model: ModelSpec::Boltzmann(BoltzmannOptions::default()),
                estimator: EstimatorSpec::from_name(est).unwrap(),
                optimiser: Default::default(),
                prior: Prior { sigma2: Some(10.0) },
                eval_every: 0,
                seed: 0,
                threads: 1,
                decode: Default::default(),
                train_sample: None,
                eval_train: false,
                per_state_scaling: false,
                subset_scaling: false,
                init_from: None,
            };
            let dir = ws.path().join(format!("runs/{id:03}-{est}"));
            let s = execute(
                &spec,
                &dir,
                &std::sync::atomic::AtomicBool::new(false),
                &mut |_| {},
            )
            .unwrap();
            want.push((est, n, s.param_error.expect("θ0 known")));
        }
    }
    let mut h = harness(ws.path());
    h.step();
    loaded(&mut h);
    let ids: Vec<String> = h
        .state()
        .state
        .runs
        .entries
        .iter()
        .map(|e| e.id.clone())
        .collect();
    assert_eq!(ids.len(), 4);
    h.state_mut().state.selected.extend(ids);
    h.get_by_label("Compare view").click();
    h.step();
    h.step();
    h.get_by_label_contains("Consistency: |θ − θ0|");
    h.get_by_label("Save consistency CSV").click();
    h.step();
    h.step();
    save_export(&mut h);
    let csv = exported(ws.path(), "consistency");
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("estimator,n,param_error"));
    let rows: Vec<(String, usize, f64)> = lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (
                f[0].to_string(),
                f[1].parse().unwrap(),
                f[2].parse().unwrap(),
            )
        })
        .collect();
    assert_eq!(rows.len(), 4, "{csv}");
    for (est, n, e) in want {
        assert!(
            rows.iter()
                .any(|r| r.0 == est && r.1 == n && (r.2 - e).abs() < 1e-12),
            "{est} n={n} {e} not in {csv}"
        );
    }
    // More data, smaller error, for both estimators.
    for est in ["ml", "pl"] {
        let e: Vec<f64> = rows.iter().filter(|r| r.0 == est).map(|r| r.2).collect();
        assert!(e[1] < e[0], "{est}: {e:?}");
    }
}

/// A sweep under workspace/sweeps appears in the Frontier pane; the exported CSV flags as
/// frontier exactly the points no other point beats on both complexity and held-out NLL.
#[test]
fn frontier_pane_shows_a_sweep_and_its_pareto_points() {
    use piecewise_lab::data::samples::format_samples;
    use piecewise_lab::data::synth_loopy::{boltzmann_samples, paper_theta};
    use piecewise_lab::estimators::scl::{ComponentFamily, SelectionPolicy};
    use piecewise_lab::estimators::EstimatorSpec;
    use piecewise_lab::experiments::sweep::{run_sweep, SweepSpec};
    use piecewise_lab::graph::boltzmann::BoltzmannOptions;
    use piecewise_lab::optim::Prior;
    use piecewise_lab::run::{ModelSpec, RunSpec};
    let ws = tempfile::tempdir().unwrap();
    let (train, test) = (ws.path().join("bm.txt"), ws.path().join("bm-test.txt"));
    let theta = paper_theta(5);
    std::fs::write(
        &train,
        format_samples(&boltzmann_samples(5, &theta, &[], 300, 1).unwrap()),
    )
    .unwrap();
    std::fs::write(
        &test,
        format_samples(&boltzmann_samples(5, &theta, &[], 200, 2).unwrap()),
    )
    .unwrap();
    let spec = SweepSpec {
        base: RunSpec {
            name: None,
            train,
            test: Some(test),
            template: None,
            model: ModelSpec::Boltzmann(BoltzmannOptions::default()),
            estimator: EstimatorSpec::from_name("scl")
                .unwrap()
                .with_policy(SelectionPolicy::default()),
            optimiser: Default::default(),
            prior: Prior { sigma2: Some(10.0) },
            eval_every: 0,
            seed: 0,
            threads: 2,
            decode: Default::default(),
            train_sample: None,
            eval_train: false,
            per_state_scaling: false,
            subset_scaling: false,
            init_from: None,
        },
        low: ComponentFamily::Pseudo(1),
        high: ComponentFamily::Full,
        lambdas: vec![0.3, 1.0],
        betas: vec![0.5, 1.0],
        sigma2s: vec![],
        jobs: 2,
    };
    run_sweep(
        &spec,
        &ws.path().join("sweeps/pl1-fl"),
        &std::sync::atomic::AtomicBool::new(false),
        &|_| {},
    )
    .unwrap();
    let mut h = harness(ws.path());
    h.step();
    loaded(&mut h);
    h.get_by_label("Frontier view").click();
    h.step();
    wait_for(&mut h, "the sweeps", 30.0, frontier_sweeps);
    h.get_by_label_contains("4 of 4 points finished");
    h.get_by_label("Save frontier CSV").click();
    h.step();
    h.step();
    save_export(&mut h);
    let csv = exported(ws.path(), "frontier");
    let rows: Vec<(f64, f64, bool)> = csv
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[3].parse().unwrap(), f[4].parse().unwrap(), f[5] == "true")
        })
        .collect();
    assert_eq!(rows.len(), 4, "{csv}");
    for (i, &(x, y, on)) in rows.iter().enumerate() {
        let beaten = rows
            .iter()
            .enumerate()
            .any(|(j, &(x2, y2, _))| j != i && x2 <= x && y2 < y);
        assert_eq!(on, !beaten, "row {i} of {csv}");
    }
    // A sweep from the pane (item 4): New sweep on the loaded sample data, two points, and
    // the points appear as they finish.
    h.get_by_label("New sweep").click();
    h.step();
    let form = &mut pane_mut!(h.state_mut(), Frontier).form;
    form.name = "from-the-pane".into();
    form.lambdas = "0.5, 1".into();
    form.betas = "1".into();
    h.step();
    h.get_by_label_contains("2 points into");
    h.get_by_label("Start sweep").click();
    h.step();
    assert!(h.state().state.sweep.is_some(), "the sweep runs");
    wait_for(&mut h, "the pane's sweep", 120.0, |w| {
        w.state.sweep.is_none()
            && pane!(w, Frontier)
                .runtime
                .sweeps
                .as_ref()
                .and_then(|s| s.iter().find(|s| s.name == "from-the-pane").cloned())
                .is_some_and(|s| s.runs.len() == 2)
    });
    assert!(piecewise_lab::experiments::sweep::sweep_finished(
        ws.path(),
        "from-the-pane"
    ));
    let shown: Vec<String> = h
        .query_all_by_label_contains("points finished")
        .map(|n| format!("{:?}", n.accesskit_node().label()))
        .collect();
    assert!(
        h.query_all_by_label_contains("from-the-pane (pl1/fl): 2 of 2 points finished")
            .next()
            .is_some(),
        "{shown:?}"
    );
}

/// The policy editor's preview of 004 Fig. 1 on 14 samples of the 5-node machine: PL costs
/// 1,540 FLOPs in all (110 per sample), the relative efficiency appears once computed, and the
/// editor's "add family" rewrites the policy text.
#[test]
fn policy_editor_previews_fig1() {
    use piecewise_lab::data::samples::format_samples;
    use piecewise_lab::data::synth_loopy::{boltzmann_samples, paper_theta};
    let ws = tempfile::tempdir().unwrap();
    let file = ws.path().join("bm.txt");
    let theta = paper_theta(5);
    let text = format!(
        "# theta: {}\n{}",
        theta
            .iter()
            .map(|t| t.to_string())
            .collect::<Vec<_>>()
            .join(","),
        format_samples(&boltzmann_samples(5, &theta, &[], 14, 3).unwrap())
    );
    std::fs::write(&file, text).unwrap();
    let mut h = harness(ws.path());
    h.step();
    loaded(&mut h);
    load_boltzmann(&mut h, &file);
    runs_form(&mut h);
    h.get_by_label("Use loaded data").click();
    h.step();
    h.get_by_label("scl").click();
    h.step();
    h.state_mut().state.launch.set_policy("1:1*pl1");
    h.step();
    h.step();
    h.get_by_label_contains("total complexity: 1540 FLOPs over 14 items");
    wait_for(&mut h, "the relative efficiency", 30.0, |w| {
        w.policy_preview_efficiency().is_some()
    });
    h.get_by_label_contains("relative efficiency (det, 004 eq. 8): paper's form 1.624");
    h.get_by_label("add family").click();
    h.step();
    assert_eq!(h.state().state.launch.policy(), "1:1*pl1 + 0.5:1*pl2");
    h.step();
    h.step();
    // Fig. 1's per-component row for PL1 {1} exists, with PL2 rows after it.
    h.get_by_label("pl1 {1}");
    h.get_by_label("pl2 {1,2}");
}

/// The Theory pane draws Fig. 2's curves and adds Monte Carlo points of the estimator.
#[test]
fn theory_pane_draws_fig2_and_monte_carlo_points() {
    use piecewise_lab::app::Pane;
    let ws = tempfile::tempdir().unwrap();
    let mut h = harness(ws.path());
    h.step();
    loaded(&mut h);
    h.get_by_label("Theory view").click();
    h.step();
    wait_for(&mut h, "the asymptotic variance", 60.0, |w| {
        theory(w).curves().is_some()
    });
    let curves = theory(h.state()).curves().unwrap().clone().unwrap();
    assert_eq!(curves.len(), 3);
    // Fig. 2: the paper's form falls monotonically in λ for each mixture; the exact form
    // agrees with it at λ = 0 and 1 (deterministic policies) and lies above it in between
    // (random selection adds Z's variance).
    for c in &curves {
        assert!(
            c.points.windows(2).all(|w| w[1][1] <= w[0][1] + 1e-9),
            "PL{}",
            c.k + 1
        );
        let (first, last) = (c.points[0], c.points[c.points.len() - 1]);
        assert!((first[1] - first[2]).abs() < 1e-9 && (last[1] - last[2]).abs() < 1e-9);
        assert!(c.points[10][2] > c.points[10][1]);
    }
    for (_, tile) in h.state_mut().tree.tiles.iter_mut() {
        if let egui_tiles::Tile::Pane(Pane::Theory(p)) = tile {
            p.mc_n = 300;
            p.mc_reps = 6;
            p.mc_lambdas = "0.5".into();
            p.orders = [true, false, false];
        }
    }
    h.step();
    wait_for(&mut h, "the curves again", 60.0, |w| {
        theory(w).curves().is_some()
    });
    h.get_by_label("Run Monte Carlo").click();
    h.step();
    wait_for(&mut h, "the Monte Carlo", 120.0, |w| {
        !theory(w).mc_running() && !theory(w).mc.is_empty()
    });
    let pt = &theory(h.state()).mc[0];
    assert_eq!((pt.k, pt.lambda, pt.mc.reps), (1, 0.5, 6));
    assert!(pt.mc.trace.is_finite() && pt.mc.trace > 0.0);
    // Six replications of ten parameters: no determinant, and the pane says so (5.10).
    assert_eq!((pt.mc.det, pt.mc.dim), (None, 10));
    h.step();
    h.get_by_label_contains("needs more than 10 replications");
}

/// CAMEL from the launch form (pw, camel0, cccp-camel on a loopy grid), its sepset violation as
/// a curve metric, and the Constraints pane: piecewise's clusters disagree on their sepsets,
/// CAMEL's agree to the δ sweeps' tolerance.
#[test]
fn camel_runs_show_what_the_constraints_buy() {
    let ws = tempfile::tempdir().unwrap();
    let (mut h, _) = with_grid(ws.path(), 2);
    runs_form(&mut h);
    for (k, est) in ["pw", "camel0", "cccp-camel"].into_iter().enumerate() {
        h.get_by_label(est).click();
        h.step();
        h.get_by_label("Train").click();
        h.step();
        // A bound for a hang, not a timing: CCCP's outer loops took over 120 s on a loaded
        // 2-core machine.
        wait_for(&mut h, est, 600.0, |w| {
            w.state.runs.entries.len() == k + 1
                && w.state.runs.entries[k].status == RunStatus::Finished
        });
    }
    let cccp = &h.state().state.runs.entries[2];
    let fits = &cccp.summary.as_ref().unwrap().camel_fits;
    assert!(
        fits.len() >= 3,
        "piecewise, then at least two linearisations: {fits:?}"
    );
    // The violation is a curve metric.
    pick_curve_metric(&mut h, "largest sepset violation (CAMEL)");
    // The Constraints pane picks the three runs and shows their sepset disagreement.
    h.get_by_label("Constraints view").click();
    h.step();
    let t = Instant::now();
    let largest = |h: &Harness<'_, Workbench>, which: &str| -> Option<f64> {
        let node = h.query_by_label_contains(which)?;
        let text = node
            .accesskit_node()
            .value()
            .unwrap_or_default()
            .to_string();
        let v = text
            .split("largest ")
            .nth(1)?
            .split(',')
            .next()?
            .trim()
            .to_string();
        Some(v.parse().unwrap_or_else(|_| panic!("{text}")))
    };
    while h
        .query_all_by_label_contains("disagreement: largest")
        .count()
        < 3
    {
        assert!(t.elapsed().as_secs() < 60, "cluster beliefs did not appear");
        h.step();
        std::thread::sleep(Duration::from_millis(10));
    }
    let pw = largest(&h, "no δ, no g").expect("pw panel");
    assert!(pw > 1e-2, "piecewise's clusters disagree: {pw}");
    for which in ["with δ, g = 0", "with δ and g"] {
        let v = largest(&h, which).expect(which);
        assert!(
            v <= 2e-4,
            "CAMEL's clusters agree to the sweep tolerance: {v}"
        );
    }
}

#[test]
fn nota_terms_diagrams_and_a_scaled_crf_pt_run() {
    let ws = tempfile::tempdir().unwrap();
    let mut h = harness(ws.path());
    h.step();
    loaded(&mut h);
    let d = h.state().state.data.as_ref().unwrap();
    let (n, l) = (d.train.sequences[0].len(), 5);
    h.get_by_label("Graph view").click();
    h.step();
    h.get_by_label("nota").click();
    h.step();
    h.step();
    // n next-state classifiers, each followed by a NOTA term per wrong source state (001 eq. 6).
    let k = n + (n - 1) * (l - 1);
    h.get_by_label_contains(&format!("nota term 1 of {k}"));
    h.get_by_label_contains("the normaliser holds the outcome NOTA");
    // One click to the first NOTA term (it follows the terms of positions 0 and 1).
    h.get_by_label("First NOTA term").click();
    h.step();
    h.step();
    let caption = h
        .get_by_label_contains(&format!("nota term 3 of {k}"))
        .accesskit_node()
        .value()
        .unwrap_or_default()
        .to_string();
    assert!(
        caption.contains("log p(NOTA | ") && caption.contains("(wrong; gold "),
        "{caption}"
    );
    h.get_by_label_contains("clamped at a wrong state (NOTA)");
    // The MEMM's parameter independence diagram (003 Fig. 1): one piece per position.
    h.get_by_label("memm").click();
    h.step();
    h.get_all_by_label("Pieces")
        .find(|n| n.accesskit_node().role() == egui::accesskit::Role::CheckBox)
        .expect("the Pieces checkbox")
        .click();
    h.step();
    h.step();
    h.get_by_label_contains("memm's parameter independence diagram (003 Fig. 1)");
    h.get_by_label_contains(&format!("({n} pieces)"));

    // CRF-PT with error-driven NOTA and per-state scales from the launch form.
    runs_form(&mut h);
    h.get_by_label("nota").click();
    h.step();
    h.get_by_label("error-driven").click();
    h.step();
    h.get_by_label("per-state scaling").click();
    h.step();
    h.get_by_label("Train").click();
    h.step();
    wait_for(&mut h, "the nota run", 120.0, |w| {
        w.state.runs.entries.len() == 1 && w.state.runs.entries[0].status == RunStatus::Finished
    });
    let s = h.state().state.runs.entries[0].summary.clone().unwrap();
    assert_eq!(s.nota_choices.len(), 1, "chosen once, after 20 iterations");
    assert_eq!(s.nota_choices[0].0, 20);
    assert_eq!(s.per_state_scales.as_ref().map(|a| a.len()), Some(l + 1));
    let t = s.test.unwrap();
    assert_eq!(
        t.decoders.keys().collect::<Vec<_>>(),
        ["viterbi (per-state scaled)"]
    );
    // The number of NOTA terms is a curve: 0 for 20 iterations, then the choice.
    pick_curve_metric(&mut h, "NOTA terms (nota)");
}

/// Trains `estimator` on the loaded data from the Runs form; returns the finished run's id.
fn train_loaded(h: &mut Harness<'_, Workbench>, estimator: &str) -> String {
    runs_form(h);
    h.get_by_label("Use loaded data").click();
    h.step();
    h.get_by_label(estimator).click();
    h.step();
    h.get_by_label("Train").click();
    h.step();
    wait_for(h, "the run", 120.0, |w| {
        w.state
            .runs
            .entries
            .first()
            .is_some_and(|e| e.status == RunStatus::Finished)
    });
    h.state().state.runs.entries[0].id.clone()
}

/// The workbench's graph pane.
fn graph_pane<'a>(h: &'a mut Harness<'_, Workbench>) -> &'a mut piecewise_lab::app::GraphPane {
    h.state_mut()
        .tree
        .tiles
        .iter_mut()
        .find_map(|(_, t)| match t {
            egui_tiles::Tile::Pane(piecewise_lab::app::Pane::Graph(g)) => Some(g),
            _ => None,
        })
        .expect("a graph pane")
}

/// Loads a file of `family` through the Data pane's fields and *Load* (chains with the
/// seminar features and no template).
fn load_family(
    h: &mut Harness<'_, Workbench>,
    family: piecewise_lab::run::FamilyKind,
    file: &Path,
) {
    {
        let f = &mut h.state_mut().state.form;
        f.model.set("model", family.name());
        f.train = file.display().to_string();
        f.test.clear();
        f.template.clear();
        f.model.set("extractor", "seminar");
    }
    h.get_by_label("Load").click();
    h.step();
    wait_for(h, "the data to load", 60.0, |w| {
        !w.state.is_loading()
            && w.state
                .data
                .as_ref()
                .is_some_and(|d| d.family.kind() == family.name())
    });
}

/// The factorial CRF's terms name 000 eq. 40's variables (w_t POS, y_t chunk) and its PWPL
/// steps through the cotemporal and both transition templates; a skip-chain's pl-edge has a
/// term for the skip edge (Lee … Lee) and the BP stepper runs on it.
#[test]
fn factorial_terms_and_skip_chain_bp_in_the_graph_view() {
    if !root().join("../shared/data/lexicons").exists() {
        eprintln!("skipping: ../shared/data/lexicons is absent");
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let fcrf = ws.path().join("fcrf.txt");
    std::fs::write(
        &fcrf,
        "Confidence NN B-NP\nin IN B-PP\nthe DT B-NP\npound NN I-NP\n\nIt PRP B-NP\nrose VBD B-VP\n\n",
    )
    .unwrap();
    let mut h = harness(ws.path());
    h.step();
    loaded(&mut h);
    load_family(&mut h, piecewise_lab::run::FamilyKind::Factorial, &fcrf);
    h.get_by_label("Data view").click();
    h.step();
    h.get_by_label("Graph view").click();
    h.step();
    h.get_by_label("pwpl").click();
    h.step();
    h.step();
    // 4 positions: 4 cotemporal + 3 + 3 transition factors, two variables each.
    h.get_by_label_contains("pwpl term 1 of 20: log p(w0·Confidence | y0·Confidence = B-NP)");
    let d = h.state().state.data.as_ref().unwrap();
    assert!(d
        .family
        .describe()
        .starts_with("factorial CRF: 5 POS tags × 3 chunk labels"));

    // A skip-chain: "Lee" twice in the first document.
    let sk = ws.path().join("skip.conll");
    let words = "Speaker : Ann Lee , CMU . Lee talks".split(' ');
    let labels = [
        "O", "O", "speaker", "speaker", "O", "O", "O", "speaker", "O",
    ];
    let text: String = words
        .zip(labels)
        .map(|(w, l)| format!("{w} {} X - {l}\n", w.to_lowercase()))
        .collect();
    std::fs::write(&sk, text + "\n").unwrap();
    load_family(&mut h, piecewise_lab::run::FamilyKind::SkipChain, &sk);
    h.step();
    h.get_by_label("pl-edge").click();
    h.step();
    h.step();
    // Pairs sharing a factor: 8 chain edges and the skip edge (3, 7).
    h.get_by_label_contains("pl-edge term 1 of 9");
    // BP runs on a trained model: train pw on it and pick the run.
    let run = train_loaded(&mut h, "pw");
    h.get_by_label("Data view").click();
    h.step();
    h.get_by_label("Graph view").click();
    h.step();
    graph_pane(&mut h).model_run = Some(run);
    h.step();
    h.get_by_label("BP messages").click();
    h.step();
    let t = Instant::now();
    while h.query_by_label_contains("BP sweep 1 (").is_none() {
        assert!(
            t.elapsed().as_secs() < 30,
            "no BP caption on the skip-chain"
        );
        h.step();
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Issue 21: a workspace with damaged runs opens; each shows as broken (or interrupted) with the
/// reason, and the workbench keeps working.
#[test]
fn damaged_runs_show_as_broken_and_the_workbench_carries_on() {
    use piecewise_lab::estimators::EstimatorSpec;
    let ws = tempfile::tempdir().unwrap();
    let runs = ws.path().join("runs");
    // A finished run whose model.json is then damaged (its label set emptied).
    let good = runs.join("001-pl");
    workbench::short_run(
        &good,
        None,
        (
            "sample_data/hmm-a0.5-train.conll",
            "assets/templates/hmm.tpl",
        ),
        EstimatorSpec::Pl,
    );
    let model = std::fs::read_to_string(good.join("model.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&model).unwrap();
    v["labels"]["names"] = serde_json::json!([]);
    std::fs::write(good.join("model.json"), v.to_string()).unwrap();
    // A run whose spec.json is cut short, and one killed while training.
    std::fs::create_dir_all(runs.join("002-ml")).unwrap();
    std::fs::write(runs.join("002-ml/spec.json"), "{\"train\": \"x").unwrap();
    let killed = runs.join("003-pw");
    std::fs::create_dir_all(&killed).unwrap();
    std::fs::copy(good.join("spec.json"), killed.join("spec.json")).unwrap();
    std::fs::write(killed.join("summary.json"), "{\"status\": \"running\", \"estimator\": \"pw\", \"iterations\": 0, \"train_seconds\": 0, \"setup_seconds\": 0, \"n_params\": 0, \"n_sequences\": 0, \"n_tokens\": 0, \"threads\": 1, \"evaluations\": 0, \"ops\": 0, \"model\": \"chain\", \"stop_reason\": null, \"final_objective\": null, \"test\": null, \"error\": null}").unwrap();

    let mut h = harness(ws.path());
    h.step();
    let status = |w: &Workbench, id: &str| {
        w.state
            .runs
            .entries
            .iter()
            .find(|e| e.id == id)
            .map(|e| (e.status, e.error.clone().unwrap_or_default()))
            .unwrap()
    };
    let (s, why) = status(h.state(), "002-ml");
    assert_eq!(s, RunStatus::Broken);
    assert!(why.contains("002-ml/spec.json"), "{why}");
    assert_eq!(status(h.state(), "003-pw").0, RunStatus::Interrupted);
    assert_eq!(status(h.state(), "001-pl").0, RunStatus::Finished);
    // Asking for the damaged model (as a model picker does) marks its run broken, once.
    let ctx = h.ctx.clone();
    assert!(h.state_mut().state.model(&ctx, "001-pl").is_none());
    wait_for(&mut h, "the model load to fail", 30.0, |w| {
        status(w, "001-pl").0 == RunStatus::Broken
    });
    let (_, why) = status(h.state(), "001-pl");
    assert!(
        why.contains("model.json") && why.contains("labels"),
        "{why}"
    );
    for _ in 0..5 {
        assert!(h.state_mut().state.model(&ctx, "001-pl").is_none());
        h.step();
    }
    let said = |w: &Workbench| {
        w.state
            .messages
            .iter()
            .filter(|m| m.text.contains("could not load the model of run 001-pl"))
            .count()
    };
    assert_eq!(said(h.state()), 1, "no second attempt at a broken model");
    // The Runs list says so, and the workbench carries on: load the sample data.
    runs_form(&mut h);
    assert!(h.get_all_by_label("broken").count() >= 2);
    h.get_by_label("interrupted");
    loaded(&mut h);
    assert!(h.state().state.data.is_some());
}

/// The workbench's first Parse pane.
fn parse_pane<'a>(h: &'a Harness<'_, Workbench>) -> &'a piecewise_lab::app::parse_view::ParsePane {
    h.state()
        .tree
        .tiles
        .tiles()
        .find_map(|t| match t {
            egui_tiles::Tile::Pane(piecewise_lab::app::Pane::Parse(p)) => Some(p),
            _ => None,
        })
        .expect("a Parse pane")
}

/// Loading a treebank in the Data pane hands its files to the Parse pane's form and brings the
/// Parse pane to the front (a treebank is not factor-graph data).
#[test]
fn loading_a_treebank_hands_it_to_the_parse_pane() {
    let tmp = tempfile::tempdir().unwrap();
    let (train, test) = (tmp.path().join("a.mrg"), tmp.path().join("b.mrg"));
    let mut h = harness(&tmp.path().join("ws"));
    h.step();
    loaded(&mut h);
    {
        let f = &mut h.state_mut().state.form;
        f.model
            .set("model", piecewise_lab::run::FamilyKind::Grammar.name());
        f.train = train.display().to_string();
        f.test = test.display().to_string();
    }
    h.get_by_label("Load").click();
    h.step();
    h.step();
    let p = parse_pane(&h);
    assert_eq!(
        (p.train.as_str(), p.test.as_str()),
        (f_str(&train), f_str(&test))
    );
    assert!(
        h.state().state.data.is_none(),
        "the factor-graph data is put down"
    );
    h.get_by_label_contains("a treebank: the Parse pane trains grammars");
}

fn f_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn parse_pane_trains_a_grammar_and_steps_through_its_chart_and_terms() {
    const TREES: &str = "((S (NP (DT the) (NN dog)) (VP (VBD saw) (NP (DT a) (NN cat)))))
((S (NP (NN dog)) (VP (VBD barked))))
((S (NP (DT a) (JJ big) (NN cat)) (VP (VBD saw) (NP (PRP it)))))
((S (NP (PRP it)) (VP (VBD saw) (NP (DT the) (JJ big) (NN dog)))))
";
    let tmp = tempfile::tempdir().unwrap();
    let train = tmp.path().join("train.mrg");
    std::fs::write(&train, TREES).unwrap();
    std::fs::write(tmp.path().join("test.mrg"), TREES).unwrap();
    let mut h = harness(&tmp.path().join("ws"));
    h.get_by_label("Parse view").click();
    h.step();
    h.step();
    // The form opens on the bundled treebank; these trees replace it.
    {
        let p = pane_mut!(h.state_mut(), Parse);
        assert!(p.train.ends_with("toy-treebank-train.mrg"), "{}", p.train);
        p.train.clear();
        p.test.clear();
    }
    h.step();
    h.get_by_label("Train trees").focus();
    h.step();
    h.get_by_label("Train trees")
        .type_text(&train.display().to_string());
    h.get_by_label("Test trees").focus();
    h.step();
    h.get_by_label("Test trees")
        .type_text(&tmp.path().join("test.mrg").display().to_string());
    h.step();
    h.get_by_label("nota").click();
    h.step();
    h.get_by_label("Train").click();
    h.step();
    wait_for(&mut h, "the grammar run", 120.0, |w| {
        w.state
            .runs
            .entries
            .first()
            .is_some_and(|e| e.status == RunStatus::Finished)
    });
    let entry = &h.state().state.runs.entries[0];
    assert_eq!(entry.spec.model.name(), "grammar");
    assert!(entry.summary.as_ref().unwrap().test.is_some());
    // The pane opens the run and shows the first test sentence's trees.
    wait_for(&mut h, "the sentence view", 60.0, |w| {
        w.tree.tiles.tiles().any(|t| {
            matches!(t, egui_tiles::Tile::Pane(piecewise_lab::app::Pane::Parse(p))
                if p.view().is_some())
        })
    });
    h.get_by_label("Gold tree");
    h.get_by_label("Predicted tree");
    h.get_by_label("Next sentence").click();
    h.step();
    wait_for(&mut h, "the next sentence", 60.0, |w| {
        w.tree.tiles.tiles().any(|t| {
            matches!(t, egui_tiles::Tile::Pane(piecewise_lab::app::Pane::Parse(p))
                if p.sentence == 1 && p.view().is_some())
        })
    });
    h.get_by_label("Chart").click();
    h.step();
    assert_eq!(
        parse_pane(&h).tab,
        piecewise_lab::app::parse_view::ParseTab::Chart
    );
    h.get_by_label("Terms").click();
    h.step();
    // The slider moved to the run's own NOTA threshold: that view is computed anew.
    wait_for(&mut h, "the view at the run's threshold", 60.0, |w| {
        w.tree.tiles.tiles().any(|t| {
            matches!(t, egui_tiles::Tile::Pane(piecewise_lab::app::Pane::Parse(p))
                if p.view().is_some())
        })
    });
    let view = parse_pane(&h).view().unwrap();
    // The first term is the root rule, then the gold expansions, then NOTA edges.
    h.get_by_label(&view.terms[0].title);
    h.get_by_label("Next term").click();
    h.step();
    assert_eq!(parse_pane(&h).term, 1);
    h.get_by_label(&view.terms[1].title);
}

/// Issue 24, 5.9 and 5.12: a run's name does not carry over to the next run, and loading data
/// of another family unticks the runs of the old one (Curves put them on one axis).
#[test]
fn a_run_name_is_used_once_and_another_family_unticks_old_runs() {
    let ws = tempfile::tempdir().unwrap();
    let mut h = harness(ws.path());
    h.step();
    loaded(&mut h);
    runs_form(&mut h);
    // (The form's text fields carry no accessible label: the name is set as typing would.)
    h.state_mut().state.launch.knobs.set("name", "pw sample");
    h.step();
    h.get_by_label("Train").click();
    h.step();
    wait_for(&mut h, "the named run", 120.0, |w| {
        w.state
            .runs
            .entries
            .first()
            .is_some_and(|e| e.status == RunStatus::Finished)
    });
    let st = &h.state().state;
    assert_eq!(st.runs.entries[0].spec.name.as_deref(), Some("pw sample"));
    assert!(
        !st.launch.knobs.given("name"),
        "the name field is empty again"
    );
    assert!(st.selected.contains(&st.runs.entries[0].id));
    // A grid data set: the chain run is no longer ticked.
    let items = piecewise_lab::data::synth_loopy::GridGen {
        classes: 3,
        height: 3,
        width: 3,
        ..Default::default()
    }
    .images(2, 1)
    .unwrap();
    let grid = ws.path().join("g.grid");
    std::fs::write(&grid, piecewise_lab::data::grid::format_grid(&items, None)).unwrap();
    h.get_by_label("Data view").click();
    h.step();
    h.step();
    load_grid(&mut h, &grid);
    assert!(
        h.state().state.selected.is_empty(),
        "{:?}",
        h.state().state.selected
    );
}

/// Trains `estimator` by the command line into the workspace's runs folder as run `id`, on
/// `train` and `test` (the workbench finds it at start).
fn cli_run(ws: &Path, id: &str, estimator: &str, train: &Path, test: &Path, template: &Path) {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_piecewise-lab"))
        .args(["train", "--estimator", estimator, "--max-iter", "15"])
        .arg("--train")
        .arg(train)
        .arg("--test")
        .arg(test)
        .arg("--template")
        .arg(template)
        .arg("--out")
        .arg(ws.join("runs").join(id))
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{id}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A workbench on `ws` with every run there finished and ticked, Compare in front.
fn compare_all(ws: &Path, n: usize) -> Harness<'static, Workbench> {
    let mut h = harness(ws);
    h.step();
    wait_for(&mut h, "the runs", 60.0, |w| {
        w.state.runs.entries.len() == n
            && w.state
                .runs
                .entries
                .iter()
                .all(|e| e.status == RunStatus::Finished)
    });
    let ids: Vec<String> = h
        .state()
        .state
        .runs
        .entries
        .iter()
        .map(|e| e.id.clone())
        .collect();
    h.state_mut().state.selected = ids.into_iter().collect();
    h.get_by_label("Compare view").click();
    h.step();
    h.step();
    h
}

/// Steps frames until a label containing `text` is drawn.
fn wait_for_label(h: &mut Harness<'_, Workbench>, text: &str, secs: f64) {
    let t = Instant::now();
    while h.query_by_label_contains(text).is_none() {
        assert!(
            t.elapsed().as_secs_f64() < secs,
            "no {text:?} after {secs} s"
        );
        h.step();
        std::thread::sleep(Duration::from_millis(10));
    }
    h.step();
}

/// Compare with four runs (six pairs): the paired tests above the specs, a Holm p column
/// with its one-line note, every column saying what it counts (McNemar on tokens, the
/// bootstrap's score named), every difference A − B.
#[test]
fn compare_puts_the_tests_first_and_adds_holm_beyond_three_runs() {
    let ws = tempfile::tempdir().unwrap();
    let r = root();
    let (train, test, tpl) = (
        r.join("sample_data/hmm-peaked-train.conll"),
        r.join("sample_data/hmm-peaked-test.conll"),
        r.join("assets/templates/hmm.tpl"),
    );
    for (i, est) in ["ml", "pl", "pw", "pwpl"].iter().enumerate() {
        cli_run(
            ws.path(),
            &format!("{:03}-{est}", i + 1),
            est,
            &train,
            &test,
            &tpl,
        );
    }
    let mut h = compare_all(ws.path(), 4);
    wait_for_label(&mut h, "Holm p: each pair's p", 120.0);
    h.get_by_label("Holm p");
    h.get_by_label("McNemar p\n(tokens)");
    h.get_by_label("paired t p\n(tokens/seq)");
    // The sample's labels are S0…S4, no segments: the bootstrap resamples token accuracy.
    h.get_by_label("bootstrap A − B [95 %]\ntoken accuracy, points");
    h.get_by_label_contains("Every difference is A − B");
    // The tests come before the spec table (which folds).
    let tests = h.get_by_label("Paired tests on the test items").rect();
    let specs = h
        .get_by_label_contains("field(s) differ, highlighted")
        .rect();
    assert!(tests.top() < specs.top(), "{tests:?} {specs:?}");
    // One data set: no warning; the sample has no B-/I- labels: no factorisation hint.
    assert!(h
        .query_by_label_contains("trained on different data")
        .is_none());
    assert!(h.query_by_label_contains("hint for").is_none());
    // Fields: the bars start 5 points below the lowest score (a multiple of 5), said under the
    // plot, so the estimators' few-point differences show.
    let lowest = h
        .state()
        .state
        .runs
        .entries
        .iter()
        .flat_map(|e| {
            e.metrics
                .as_ref()
                .unwrap()
                .labels
                .iter()
                .filter(|(k, _)| k.as_str() != "O")
                .map(|(_, v)| v.f1)
        })
        .fold(f64::INFINITY, f64::min);
    let base = ((lowest / 5.0).floor() * 5.0 - 5.0).clamp(0.0, 95.0);
    h.get_by_label("Fields view").click();
    h.step();
    h.step();
    if base > 0.0 {
        h.get_by_label_contains(&format!("The bars start at {base:.0} %, not 0"));
        h.get_by_label("bars from 0").click();
        h.step();
        h.step();
    }
    assert!(h.query_by_label_contains("The bars start at").is_none());
    h.get_by_label("Compare view").click();
    h.step();
    // Three runs: three pairs, no Holm column (once their tests are computed).
    let first: String = h.state().state.runs.entries[0].id.clone();
    h.state_mut().state.selected.remove(&first);
    h.step();
    h.step();
    let t = Instant::now();
    while h
        .query_by_label_contains("computing the paired tests")
        .is_some()
        || h.query_by_label("Paired tests on the test items").is_none()
    {
        assert!(t.elapsed().as_secs_f64() < 120.0, "the three runs' tests");
        h.step();
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(h.query_by_label("Holm p").is_none());
    assert!(h.query_by_label_contains("Holm p: each pair's p").is_none());
}

/// Runs of two data sets: Curves and Compare say so; a piecewise run on `split` over
/// segment labels (B-/I-) gets the factorisation hint; the Data pane's template menu fills
/// the Template field with a bundled template's path.
#[test]
fn mixed_data_is_warned_and_split_piecewise_is_hinted() {
    let ws = tempfile::tempdir().unwrap();
    let r = root();
    let chunks = ws.path().join("chunks.conll");
    let sentence =
        "He PRP B-NP\nreckons VBZ B-VP\nthe DT B-NP\ncurrent JJ I-NP\ndeficit NN I-NP\n. . O\n\n";
    std::fs::write(&chunks, sentence.repeat(20)).unwrap();
    let chunk_tpl = r.join("assets/templates/chunking.tpl");
    cli_run(ws.path(), "001-pw", "pw", &chunks, &chunks, &chunk_tpl);
    cli_run(
        ws.path(),
        "002-ml",
        "ml",
        &r.join("sample_data/hmm-peaked-train.conll"),
        &r.join("sample_data/hmm-peaked-test.conll"),
        &r.join("assets/templates/hmm.tpl"),
    );
    let mut h = compare_all(ws.path(), 2);
    h.get_by_label_contains("warning: the runs were trained on different data");
    h.get_by_label_contains("hint for pw (001-pw): Piecewise on `split` counts the label prior");
    h.get_by_label("Curves view").click();
    h.step();
    h.step();
    h.get_by_label_contains("warning: the runs were trained on different data");
    // The bundled templates, picked from a menu.
    h.get_by_label("Data view").click();
    h.step();
    h.get_by_label("a bundled template").click();
    h.step();
    h.step();
    h.get_by_label("chunking.tpl").click();
    h.step();
    h.step();
    let t = h.state().state.form.template.clone();
    assert_eq!(Path::new(&t), r.join("assets/templates/chunking.tpl"));
    // Setting up pw on the chunks (B-/I- labels) with the default `split`: the form hints;
    // ml, or pw on `edge-pair`, gets no hint.
    h.state_mut().state.form.train = chunks.display().to_string();
    h.get_by_label("Load").click();
    h.step();
    wait_for(&mut h, "the chunks to load", 60.0, |w| {
        !w.state.is_loading()
            && w.state
                .data
                .as_ref()
                .is_some_and(|d| Path::new(&d.source.train) == chunks)
    });
    runs_form(&mut h);
    h.get_by_label("Use loaded data").click();
    h.step();
    h.get_by_label("pw").click();
    h.step();
    h.step();
    h.get_by_label_contains("hint: Piecewise on `split` counts the label prior");
    h.get_by_label("ml").click();
    h.step();
    h.step();
    assert!(h.query_by_label_contains("hint: Piecewise").is_none());
    h.get_by_label("pw").click();
    h.state_mut()
        .state
        .launch
        .data
        .model
        .set("factorisation", "edge-pair");
    h.step();
    h.step();
    assert!(h.query_by_label_contains("hint: Piecewise").is_none());
}
