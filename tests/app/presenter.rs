//! A presenter's workbench (issue 43, 5), driven with egui_kittest: lessons stepped by the keys
//! a clicker sends, the light/dark switch and the presentation scale, exports written where the
//! user typed, paper codes decoded.

use egui::accesskit::Role;
use egui::{Key, Modifiers};
use egui_kittest::kittest::Queryable;
use egui_kittest::Harness;
use piecewise_lab::app::lesson_format::Lesson;
use piecewise_lab::app::{Config, Settings, Workbench};
use std::path::Path;

use crate::workbench;
use workbench::root;

fn harness(workspace: &Path, settings: Settings) -> Harness<'static, Workbench> {
    let wb = Workbench::new(
        Config {
            root: root(),
            workspace: workspace.to_path_buf(),
        },
        settings,
    );
    Harness::builder()
        .with_size(egui::vec2(1280.0, 800.0))
        .build_ui_state(|ui, wb: &mut Workbench| wb.ui(ui), wb)
}

/// A workbench that starts on its panes (no welcome screen).
fn on_panes(workspace: &Path) -> Harness<'static, Workbench> {
    harness(
        workspace,
        Settings {
            hide_welcome: true,
            ..Settings::default()
        },
    )
}

/// The first lesson of assets/lessons/ with three or more steps that trains no run (so the
/// test stays quick): its title and step count.
fn quick_lesson() -> (String, usize) {
    let mut files: Vec<_> = std::fs::read_dir(root().join("assets/lessons"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    files
        .iter()
        .filter_map(|p| Lesson::read(p).ok())
        .find(|l| l.steps.len() >= 3 && l.steps.iter().all(|s| s.run.is_empty()))
        .map(|l| (l.title.clone(), l.steps.len()))
        .expect("a lesson without runs")
}

fn step_of(h: &Harness<'_, Workbench>) -> Option<usize> {
    let p = pane!(h.state(), Lessons);
    p.lesson.as_ref().map(|_| p.step)
}

fn press(h: &mut Harness<'_, Workbench>, key: Key) {
    h.key_press(key);
    h.step();
    h.step();
}

#[test]
fn keys_step_the_open_lesson() {
    let ws = tempfile::tempdir().unwrap();
    let mut h = harness(ws.path(), Settings::default());
    h.step();
    // No lesson open: the keys do nothing (and nothing breaks).
    press(&mut h, Key::ArrowRight);
    h.get_by_label("Take a lesson").click();
    h.step();
    h.step();
    let (title, n) = quick_lesson();
    h.get_by_label(&format!("Start: {title}")).click();
    h.step();
    h.step();
    assert_eq!(step_of(&h), Some(0));
    press(&mut h, Key::ArrowRight);
    assert_eq!(step_of(&h), Some(1), "→ is Next");
    press(&mut h, Key::PageDown);
    assert_eq!(step_of(&h), Some(2), "PageDown (a clicker) is Next");
    press(&mut h, Key::ArrowLeft);
    assert_eq!(step_of(&h), Some(1), "← is Back");
    press(&mut h, Key::PageUp);
    assert_eq!(step_of(&h), Some(0), "PageUp is Back");
    press(&mut h, Key::PageUp);
    assert_eq!(step_of(&h), Some(0), "no step before the first");
    press(&mut h, Key::Space);
    assert_eq!(step_of(&h), Some(1), "Space is Next");

    // Esc leaves Try it yourself, as Restore this step does.
    h.get_by_label("Try it yourself").click();
    h.step();
    assert!(pane!(h.state(), Lessons).trying);
    press(&mut h, Key::Escape);
    assert!(
        !pane!(h.state(), Lessons).trying,
        "Esc leaves Try it yourself"
    );
    assert_eq!(step_of(&h), Some(1), "on the same step");
    h.get_by_label("Try it yourself");

    // Not while a text field has the keyboard: → then moves its cursor, not the lesson. (The
    // Graph pane's Pieces field, shown for a piecewise estimator.)
    workbench::wait_for(&mut h, "the lesson's data", 60.0, |w| {
        !w.state.is_loading() && w.state.data.is_some()
    });
    pane_mut!(h.state_mut(), Graph).estimator = "pw".into();
    h.step();
    h.step();
    h.get_all_by_role(Role::TextInput)
        .next()
        .expect("a text field on screen")
        .focus();
    h.step();
    h.step();
    press(&mut h, Key::ArrowRight);
    press(&mut h, Key::Space);
    assert_eq!(step_of(&h), Some(1), "keys go to the focused text field");
    press(&mut h, Key::Escape); // leaves the field
    press(&mut h, Key::ArrowRight);
    assert_eq!(
        step_of(&h),
        Some(2),
        "back to the lesson once the field lets go"
    );

    // On the last step → does what Finish does: back to the list.
    for _ in 2..n - 1 {
        press(&mut h, Key::PageDown);
    }
    assert_eq!(step_of(&h), Some(n - 1));
    h.get_by_label("Finish");
    press(&mut h, Key::PageDown);
    assert_eq!(step_of(&h), None, "Finish returns to the list");
    h.get_by_label(&format!("Start: {title}"));
}

#[test]
fn theme_and_presentation_scale_switch_and_are_remembered() {
    let ws = tempfile::tempdir().unwrap();
    let mut h = on_panes(ws.path());
    h.step();
    h.step();
    let dark = |h: &Harness<'_, Workbench>| h.ctx.global_style().visuals.dark_mode;
    assert!(!dark(&h), "light by default (a projector)");
    // Captions stronger than egui's default weak text, on both themes.
    assert_eq!(
        h.ctx.global_style().visuals.weak_text_alpha,
        piecewise_lab::app::appearance::WEAK_TEXT_ALPHA
    );
    h.get_by_label("Dark").click();
    h.step();
    h.step();
    assert!(dark(&h), "the switch makes it dark");
    // The dark theme's captions read on a projector: weak text at least 6 : 1 against the
    // panel (egui's default grey text made them 3.6 : 1).
    let v = h.ctx.global_style().visuals.clone();
    let lum = |l: egui::Rgba| 0.2126 * l.r() + 0.7152 * l.g() + 0.0722 * l.b();
    // Weak text is translucent: what shows is it over the panel.
    let (text, bg) = (
        egui::Rgba::from(v.weak_text_color()),
        egui::Rgba::from(v.panel_fill),
    );
    let shown = text + bg * (1.0 - text.a());
    let contrast = (lum(shown) + 0.05) / (lum(bg) + 0.05);
    assert!(
        contrast >= 6.0,
        "weak text {contrast:.1} : 1 on the dark panel"
    );
    assert!(h.state().settings().dark, "and the settings remember it");
    h.get_by_label("Light").click();
    h.step();
    h.step();
    assert!(!dark(&h));

    // A workbench opened on the saved settings starts dark.
    let mut saved = h.state().settings();
    saved.dark = true;
    let mut again = harness(ws.path(), saved);
    again.step();
    again.step();
    assert!(again.ctx.global_style().visuals.dark_mode);

    // The presentation scale: the button and F5.
    assert_eq!(h.ctx.zoom_factor(), 1.0);
    h.get_by_label("Presenter").click();
    h.step();
    h.step();
    // (At 1280×800 the scale is 10 %: as much as keeps a 1024×720 layout.)
    assert_eq!(
        h.ctx.zoom_factor(),
        piecewise_lab::app::appearance::presenter_zoom_for(egui::vec2(1280.0, 800.0))
    );
    assert!(h.ctx.zoom_factor() > 1.0);
    assert!(h.state().settings().presenter);
    press(&mut h, Key::F5);
    assert_eq!(h.ctx.zoom_factor(), 1.0, "F5 switches it back");
    assert!(!h.state().settings().presenter);
}

/// Settings saved before the switches existed still load: light, normal scale.
#[test]
fn old_settings_load_light() {
    let s: Settings = serde_json::from_str(r#"{"hide_welcome": true}"#).unwrap();
    assert!(s.hide_welcome && !s.dark && !s.presenter);
}

#[test]
fn an_export_goes_where_the_user_typed() {
    let ws = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let mut h = on_panes(ws.path());
    h.step();
    // An export asks first: the dialog proposes the exports folder and the table's name.
    h.state_mut().state.save_csv(
        "my table",
        &["a".to_string(), "b".to_string()],
        &[vec!["1".to_string(), "2".to_string()]],
    );
    h.step();
    h.step();
    h.get_by_label("Save CSV table");
    let proposed = ws.path().join("exports").join("my_table.csv");
    let field = h
        .get_all_by_role(Role::TextInput)
        .find(|n| n.value().as_deref() == Some(proposed.to_str().unwrap()))
        .expect("the path field, prefilled");
    assert!(field.is_focused(), "the path field has the keyboard");
    // Lesson and presenter keys wait while it is open.
    press(&mut h, Key::F5);
    assert!(!h.state().settings().presenter);
    // Type another path over the proposed one, and Save.
    let target = out.path().join("talk").join("slide-3");
    h.key_press_modifiers(Modifiers::COMMAND, Key::A);
    h.step();
    h.get_all_by_role(Role::TextInput)
        .find(|n| n.is_focused())
        .expect("the path field keeps the keyboard")
        .type_text(target.to_str().unwrap());
    h.step();
    h.step();
    h.get_by_label("Save").click();
    h.step();
    h.step();
    let written = target.with_extension("csv");
    assert_eq!(
        std::fs::read_to_string(&written).unwrap(),
        "a,b\n1,2\n",
        "written where typed, with the extension added"
    );
    assert!(h.state().state.exports.is_empty(), "the dialog closed");
    assert!(!ws.path().join("exports").join("my_table.csv").exists());
    assert!(h
        .state()
        .state
        .messages
        .iter()
        .any(|m| m.text.contains("slide-3.csv")));

    // Cancel writes nothing.
    h.state_mut()
        .state
        .save_svg("chart", "<svg xmlns=\"http://www.w3.org/2000/svg\"></svg>");
    h.step();
    h.get_by_label("Cancel").click();
    h.step();
    assert!(h.state().state.exports.is_empty());
    assert!(!ws.path().join("exports").join("chart.svg").exists());
}

#[test]
fn paper_codes_are_decoded() {
    use piecewise_lab::app::papers;
    // Every lesson's paper field names papers of the table.
    for e in std::fs::read_dir(root().join("assets/lessons")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "toml") {
            continue;
        }
        let l = Lesson::read(&p).unwrap();
        if !l.paper.is_empty() {
            assert!(
                papers::hover(&l.paper).is_some(),
                "{}: {:?} cites no known paper",
                p.display(),
                l.paper
            );
        }
    }
    // The References window lists all five.
    let ws = tempfile::tempdir().unwrap();
    let mut h = on_panes(ws.path());
    h.step();
    h.get_by_label("References").click();
    h.step();
    h.step();
    for p in &papers::PAPERS {
        h.get_by_label(p.title);
    }
}

/// The About window names the version and the folders the app reads and writes.
#[test]
fn about_names_the_version_and_the_folders() {
    let ws = tempfile::tempdir().unwrap();
    let mut h = on_panes(ws.path());
    h.step();
    h.get_by_label("About").click();
    h.step();
    h.step();
    h.get_by_label(&format!("Piecewise Lab {}", env!("CARGO_PKG_VERSION")));
    h.get_by_label_contains(&format!(
        "workspace (runs, generated data, exports): {}",
        ws.path().display()
    ));
}

/// `gui --lesson 2 --step 3 --theme dark`: the workbench opens on that step, applied, in the
/// dark theme; a wrong step is a message naming the steps there are.
#[test]
fn opens_on_a_lessons_step() {
    use piecewise_lab::app::Opening;
    let ws = tempfile::tempdir().unwrap();
    let mut h = harness(ws.path(), Settings::default());
    let wrong = Opening {
        lesson: Some(("2".into(), 9)),
        ..Default::default()
    };
    let err = h.state_mut().open_at(&wrong).unwrap_err();
    assert!(err.contains("has steps 1 to 4"), "{err}");
    let open = Opening {
        lesson: Some(("02".into(), 3)),
        dark: Some(true),
        ..Default::default()
    };
    h.state_mut().open_at(&open).unwrap();
    for _ in 0..6 {
        h.step();
    }
    let w = h.state();
    assert!(!w.state.welcome, "straight to the panes");
    assert!(w.settings().dark);
    let p = pane!(w, Lessons);
    assert_eq!(p.lesson.as_deref(), Some("02-node-split.toml"));
    assert_eq!(p.step, 2);
    assert!(p.applied, "the step's state was applied");
    let lesson = Lesson::read(&root().join("assets/lessons/02-node-split.toml")).unwrap();
    assert!(h.query_by_label(&lesson.steps[2].title).is_some());
}

/// `gui --train A --test B` with a lesson left in progress (issue 66): the user's data is
/// loaded, not the lesson's; the lesson waits at its step as *Try it yourself*, and Restore
/// takes it up again with its own data.
#[test]
fn own_data_wins_over_a_lesson_in_progress() {
    use piecewise_lab::app::data::DataSource;
    let ws = tempfile::tempdir().unwrap();
    let mut h = harness(ws.path(), Settings::default());
    // A lesson in progress, as a saved layout restores it at start (not yet applied).
    let open = piecewise_lab::app::Opening {
        lesson: Some(("02".into(), 2)),
        ..Default::default()
    };
    h.state_mut().open_at(&open).unwrap();
    let mine = DataSource {
        train: root()
            .join("sample_data/hmm-a0.5-train.conll")
            .display()
            .to_string(),
        test: root()
            .join("sample_data/hmm-a0.5-test.conll")
            .display()
            .to_string(),
        template: root()
            .join("assets/templates/hmm.tpl")
            .display()
            .to_string(),
        model: Default::default(),
    };
    h.state_mut().open_data(mine.clone());
    workbench::wait_for(&mut h, "the user's data loaded", 60.0, |w| {
        !w.state.is_loading() && w.state.data.is_some()
    });
    for _ in 0..6 {
        h.step();
    }
    let w = h.state();
    assert_eq!(
        w.state.data.as_ref().unwrap().source,
        mine,
        "the user's data"
    );
    let p = pane!(w, Lessons);
    assert_eq!(p.lesson.as_deref(), Some("02-node-split.toml"));
    assert_eq!(p.step, 1, "the lesson kept its step");
    assert!(p.trying, "the lesson waits as Try it yourself");
    // The Data pane is in front; the lesson is a tab away. Restore this step: the lesson's
    // own data again.
    h.get_by_label("Lessons view").click();
    h.step();
    h.step();
    h.get_by_label("Restore this step").click();
    let lesson = Lesson::read(&root().join("assets/lessons/02-node-split.toml")).unwrap();
    let theirs = lesson.state_at(1).data.unwrap().source(&root());
    workbench::wait_for(&mut h, "the lesson's data loaded", 60.0, |w| {
        !w.state.is_loading() && w.state.data.as_ref().is_some_and(|d| d.source == theirs)
    });
}

/// A layer an earlier lesson switched on is not carried into the next (issue 66): lesson 3
/// ends with "messages held at 1" ticked; lesson 1, which never mentions BP, shows none.
#[test]
fn a_lesson_starts_without_an_earlier_lessons_layers() {
    use piecewise_lab::app::Opening;
    let ws = tempfile::tempdir().unwrap();
    let mut h = harness(ws.path(), Settings::default());
    let at = |l: &str, k| Opening {
        lesson: Some((l.into(), k)),
        ..Default::default()
    };
    h.state_mut().open_at(&at("03", 4)).unwrap();
    for _ in 0..4 {
        h.step();
    }
    let g = pane!(h.state(), Graph);
    assert!(
        g.show_bp && g.bp_at_one,
        "lesson 3 step 4 holds messages at 1"
    );
    h.state_mut().open_at(&at("01", 1)).unwrap();
    for _ in 0..4 {
        h.step();
    }
    let g = pane!(h.state(), Graph);
    assert!(!g.show_bp && !g.bp_at_one && !g.node_split && !g.show_pieces);
}
