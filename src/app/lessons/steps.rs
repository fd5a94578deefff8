//! What a step does to the workbench: the runs and sweep it plans, the forms they launch
//! through, and the commands that set the panes; then waiting for it to settle.

use super::*;

/// The runs step `i` of `lesson` launches (name, spec) and the sweep it starts, built as the
/// workbench builds them: the tests read them to check that the bundled data still shows
/// what the lesson's text says.
pub fn planned(lesson: &Lesson, i: usize, root: &Path) -> (Vec<PlannedRun>, Option<PlannedSweep>) {
    let step = lesson.state_at(i);
    let source = step.data.as_ref().map(|d| d.source(root));
    let runs = step
        .run
        .iter()
        .map(|r| {
            let spec = r
                .data
                .as_ref()
                .map(|d| d.source(root))
                .or_else(|| source.clone())
                .ok_or_else(|| format!("run {}: the step has no data", r.name))
                .and_then(|data| run_form(&data, r).to_spec());
            (r.name.clone(), spec)
        })
        .collect();
    let sweep = step.sweep.as_ref().filter(|w| w.start).map(|w| {
        let source = source.clone().ok_or("the sweep's step has no data")?;
        let mut base = lesson_form(&source, &w.knobs);
        base.set_estimator("scl");
        w.form().spec(base.to_spec()?).map_err(|e| e.to_string())
    });
    (runs, sweep)
}

/// The launch form of a lesson run on `data`, named as the lesson names it.
pub(super) fn run_form(data: &DataSource, r: &LessonRun) -> LaunchForm {
    let mut form = lesson_form(data, &r.knobs);
    form.knobs.set(crate::run::spec::NAME.name, &r.name);
    form
}

/// The Runs form's defaults on `data` with a lesson's knobs (the command line's names) on top.
pub(super) fn lesson_form(data: &DataSource, knobs: &BTreeMap<String, String>) -> LaunchForm {
    let mut form = LaunchForm::for_data(data);
    // The lesson's prior replaces the form's (c2 and σ² are one knob in two spellings).
    if knobs.contains_key("c2") || knobs.contains_key("sigma2") {
        form.knobs.unset("c2");
        form.knobs.unset("sigma2");
    }
    for (k, v) in knobs {
        form.knobs.set(k, v);
    }
    form
}

/// Serves [`AppCommand::Lesson`]: sets the workbench to a step's state as the user's clicks
/// would.
pub(crate) fn apply(wb: &mut Workbench, ctx: &egui::Context, step: Step) {
    let state = &mut wb.state;
    state.focus = Focus::new(step.focus.clone());
    // Data: load it unless it is what is loaded (or loading) already.
    let source = step
        .data
        .as_ref()
        .map(|d| d.source(&state.config.root))
        .unwrap_or_else(|| state.form.clone());
    let loaded = state.data.as_ref().map(|d| &d.source);
    if step.data.is_some()
        && loaded != Some(&source)
        && !(state.is_loading() && state.form == source)
    {
        state.form = source.clone();
        state.load(ctx);
    }
    for r in &step.run {
        let data = r
            .data
            .as_ref()
            .map_or_else(|| source.clone(), |d| d.source(&state.config.root));
        // A treebank run's data becomes the data in hand (the top bar names it).
        if data.family() == crate::run::FamilyKind::Grammar && state.form != data {
            state.form = data.clone();
            state.load(ctx);
        }
        if run_named(state, &r.name).is_some() {
            continue;
        }
        match run_form(&data, r).to_spec() {
            Ok(spec) => {
                let id = state.runs.launch(ctx, spec);
                state.info(format!("lesson: started run {id} ({})", r.name));
            }
            Err(e) => state.error(format!("lesson run {}: {e}", r.name)),
        }
    }
    if let Some(w) = step.sweep.as_ref().filter(|w| w.start) {
        let running = state.sweep.as_ref().is_some_and(|s| s.name == w.name);
        if !running && !crate::experiments::sweep::sweep_finished(&state.config.workspace, &w.name)
        {
            let base = lesson_form(&source, &w.knobs);
            if let Err(e) = crate::app::frontier::start_sweep(state, ctx, &w.form(), &base) {
                state.error(format!("lesson sweep {}: {e}", w.name));
            }
        }
    }
    if let Some(names) = &step.tick {
        state.selected = names.iter().filter_map(|n| run_named(state, n)).collect();
    }
    state.lessons.pending_model = step.graph.model.clone();
    state.lessons.pending_parse = step.parse.run.clone();
    let constraints: Option<Vec<String>> = step
        .constraints
        .as_ref()
        .map(|ns| ns.iter().filter_map(|n| run_named(state, n)).collect());
    for (_, tile) in wb.tree.tiles.iter_mut() {
        match tile {
            egui_tiles::Tile::Pane(Pane::Graph(g)) => set_graph(g, &step),
            egui_tiles::Tile::Pane(Pane::Curves(c)) => {
                let s = &step.curves;
                if let Some(m) = s.metric {
                    c.metric = m;
                }
                if let Some(x) = s.x {
                    c.x = x;
                }
                if let Some(l) = s.log_y {
                    c.log_y = l;
                }
                if let Some(l) = s.log_x {
                    c.log_x = l;
                }
            }
            egui_tiles::Tile::Pane(Pane::Parse(p)) => {
                let s = &step.parse;
                if let Some(v) = s.set {
                    p.set = v;
                }
                if let Some(v) = s.sentence {
                    p.sentence = v;
                }
                if let Some(v) = s.tab {
                    p.tab = v;
                }
                if let Some(v) = s.term {
                    p.term = v;
                }
                p.jump_to = s.first;
                if s.run.is_some() {
                    // The lesson trains its own run: the form would only push the picture down.
                    p.form_open = Some(false);
                }
            }
            egui_tiles::Tile::Pane(Pane::Frontier(f)) => {
                if let Some(w) = &step.sweep {
                    f.form = w.form();
                    // The form while the policy is explained; the plot once the sweep runs.
                    f.form_open = Some(!w.start);
                    f.sweep = Some(w.name.clone());
                }
            }
            egui_tiles::Tile::Pane(Pane::Theory(t)) => set_theory(t, &step.theory),
            egui_tiles::Tile::Pane(Pane::Constraints(c)) => {
                if let Some(rs) = &constraints {
                    c.runs = rs.clone();
                    c.runs_touched = true;
                }
                c.selected = step.cluster;
            }
            _ => {}
        }
    }
    if let Some(p) = &step.pane {
        if let Some(e) = PANES.iter().find(|e| e.title == p) {
            wb.state.command(AppCommand::Focus(e.kind));
        }
    }
}

/// The Graph pane as a step sets it: estimator, pieces, term, item, layers, BP stepper, zoom,
/// and the picture question's quiz.
fn set_graph(g: &mut crate::app::GraphPane, step: &Step) {
    let s = &step.graph;
    macro_rules! set {
        ($f:ident => $g:ident) => {
            if let Some(v) = &s.$f {
                g.$g = v.clone();
            }
        };
    }
    set!(estimator => estimator);
    set!(pieces => pieces);
    set!(term => term);
    set!(sequence => sequence);
    set!(terms => show_terms);
    // The layers and the BP stepper a lesson leaves unset are the pane's defaults, not what
    // an earlier lesson left: lesson 3's "messages held at 1" was still ticked in lesson 5.
    let d = crate::app::GraphPane::default();
    g.show_pieces = s.show_pieces.unwrap_or(d.show_pieces);
    g.node_split = s.node_split.unwrap_or(d.node_split);
    g.show_bp = s.bp.unwrap_or(d.show_bp);
    g.bp_sweeps = s.bp_sweeps.unwrap_or(d.bp_sweeps);
    g.bp_at_one = s.bp_at_one.unwrap_or(d.bp_at_one);
    set!(zoom => zoom);
    // A lesson's zoom is its own; without one, fit the pane.
    g.fit = s.zoom.is_none();
    if let Some(t) = s.test {
        g.split = if t { Split::Test } else { Split::Train };
    }
    if let Some(f) = s.factor {
        g.selected_factor = usize::try_from(f).ok();
        g.scroll_to_factor = if g.selected_factor.is_some() { 60 } else { 0 };
        g.scroll_to_term = if g.show_terms { 60 } else { 0 };
    }
    if s.model.as_deref() == Some("untrained") {
        g.model_run = None;
    }
    g.animate = false;
    g.bp_animate = false;
    g.picked_vars.clear();
    g.quiz = step
        .question
        .as_ref()
        .and_then(|q| q.check)
        .filter(|c| matches!(c, Check::Clamped | Check::Free | Check::Summed))
        .map(|check| crate::app::graph_view::Quiz {
            check,
            term: g.term,
            estimator: g.estimator.clone(),
            sequence: g.sequence,
        });
}

/// The Theory pane as a step sets it.
fn set_theory(t: &mut crate::app::theory::TheoryPane, s: &TheoryState) {
    if let Some(m) = s.m {
        t.m = m;
    }
    if let Some(o) = s.orders {
        t.orders = o;
    }
    if let Some(d) = s.det {
        t.det = d;
    }
    if let Some(e) = s.exact {
        t.exact = e;
    }
    if let Some(n) = s.mc_n {
        t.mc_n = n;
    }
    if let Some(r) = s.mc_reps {
        t.mc_reps = r;
    }
    if let Some(l) = &s.mc_lambdas {
        t.mc_lambdas = l.clone();
    }
}

/// Each frame: picks the Graph pane's model once the lesson's run has finished.
pub(crate) fn settle(wb: &mut Workbench) {
    if let Some(name) = wb.state.lessons.pending_parse.clone() {
        if let Some(id) =
            run_named(&wb.state, &name).filter(|id| wb.state.finished_grammar_runs().contains(id))
        {
            for (_, tile) in wb.tree.tiles.iter_mut() {
                if let egui_tiles::Tile::Pane(Pane::Parse(p)) = tile {
                    p.run = Some(id.clone());
                }
            }
            wb.state.lessons.pending_parse = None;
        }
    }
    let Some(name) = wb.state.lessons.pending_model.clone() else {
        return;
    };
    if name == "untrained" {
        wb.state.lessons.pending_model = None;
        return;
    }
    let Some(id) = run_named(&wb.state, &name) else {
        return;
    };
    if !wb.state.runs_for_data().0.contains(&id) {
        return;
    }
    for (_, tile) in wb.tree.tiles.iter_mut() {
        if let egui_tiles::Tile::Pane(Pane::Graph(g)) = tile {
            g.model_run = Some(id.clone());
        }
    }
    wb.state.lessons.pending_model = None;
}
