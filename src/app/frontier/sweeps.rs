//! Sweeps started from the Frontier pane (or a lesson): the form, the running sweep in the run
//! queue, and the pane's *New sweep* launcher.

use super::*;

/// A small λ × β sweep to start from the pane: `1:(1−β)*LOW + λ:β*HIGH` at every point (004
/// §8.3), on the loaded data with the launch form's knobs.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct SweepForm {
    /// The sweep's directory under `workspace/sweeps/`.
    pub name: String,
    /// `LOW/HIGH`, e.g. `pl1/fl`.
    pub families: String,
    pub lambdas: String,
    pub betas: String,
    /// Points trained at once.
    pub jobs: usize,
    /// The point whose selection (004 Fig. 1) is previewed.
    pub preview_lambda: f64,
    pub preview_beta: f64,
}

impl Default for SweepForm {
    fn default() -> Self {
        SweepForm {
            name: "sweep".into(),
            families: "pl1/fl".into(),
            lambdas: "0.1, 0.5, 1".into(),
            betas: "0.5, 1".into(),
            jobs: 2,
            preview_lambda: 0.5,
            preview_beta: 0.5,
        }
    }
}

impl SweepForm {
    /// The sweep this form describes around the base run `base` (its estimator is replaced).
    pub fn spec(&self, base: crate::run::spec::RunSpec) -> crate::error::Result<SweepSpec> {
        use crate::error::Error;
        let (low, high) = self
            .families
            .split_once('/')
            .ok_or_else(|| Error::invalid("families are LOW/HIGH, e.g. pl1/fl"))?;
        let spec = SweepSpec {
            base,
            low: ComponentFamily::parse(low.trim())?,
            high: ComponentFamily::parse(high.trim())?,
            lambdas: crate::util::parse_list(&self.lambdas, "λ")?,
            betas: crate::util::parse_list(&self.betas, "β")?,
            sigma2s: vec![],
            jobs: self.jobs.max(1),
        };
        spec.check()?;
        Ok(spec)
    }

    /// Whether `name` is a usable directory name.
    fn name_ok(&self) -> bool {
        !self.name.is_empty()
            && self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            && !self.name.starts_with('.')
    }
}

/// A sweep started from the GUI, running on a background thread.
pub struct RunningSweep {
    pub name: String,
    pub total: usize,
    /// Points finished (or found finished) so far.
    pub done: Arc<AtomicUsize>,
    cancel: Arc<AtomicBool>,
    /// `None` while the sweep waits for its turn in the run queue.
    job: Option<Job<SweepIndex>>,
    /// What the job runs, kept until its turn comes.
    spec: SweepSpec,
    dir: PathBuf,
    ctx: egui::Context,
}

impl RunningSweep {
    /// Training its points (not waiting for its turn).
    pub fn started(&self) -> bool {
        self.job.is_some()
    }
}

/// Starts the sweep of `form` on the launch form `base` (its data and knobs); the sweep runs
/// in `workspace/sweeps/NAME` and resumes there when started again.
pub fn start_sweep(
    state: &mut AppState,
    ctx: &egui::Context,
    form: &SweepForm,
    base: &crate::app::launch::LaunchForm,
) -> Result<(), String> {
    if let Some(s) = &state.sweep {
        return Err(format!(
            "sweep {} is running: wait for it or cancel it",
            s.name
        ));
    }
    if !form.name_ok() {
        return Err(format!(
            "sweep name {:?}: letters, digits, '-', '_' and '.' only",
            form.name
        ));
    }
    let mut base = base.clone();
    base.set_estimator("scl");
    let spec = form.spec(base.to_spec()?).map_err(|e| e.to_string())?;
    let dir = state.config.workspace.join("sweeps").join(&form.name);
    let total = spec.points().len();
    state.runs.queue_sweep(ctx, &form.name)?;
    state.info(format!(
        "queued sweep {} ({total} points, {} at once): it starts when no run trains",
        form.name,
        form.jobs.max(1)
    ));
    state.sweep = Some(RunningSweep {
        name: form.name.clone(),
        total,
        done: Arc::new(AtomicUsize::new(0)),
        cancel: Arc::new(AtomicBool::new(false)),
        job: None,
        spec,
        dir,
        ctx: ctx.clone(),
    });
    poll_sweep(state);
    Ok(())
}

/// Cancels the sweep: a waiting one leaves the queue; a training one stops after the points
/// being trained (started again, it resumes).
pub fn cancel_sweep(state: &mut AppState) {
    let Some(s) = &state.sweep else { return };
    if s.started() {
        s.cancel.store(true, Ordering::Relaxed);
    } else {
        let name = s.name.clone();
        state.sweep = None;
        state.runs.sweep_ended();
        state.info(format!("sweep {name} cancelled before its turn came"));
    }
}

/// Each frame: counts the running sweep's finished points into [`AppState::sweep_events`] (so
/// Frontier panes read them) and collects the sweep when it ends.
pub fn poll_sweep(state: &mut AppState) {
    let Some(s) = &mut state.sweep else { return };
    if s.job.is_none() {
        // Its turn in the run queue: start it.
        if state.runs.take_sweep_turn().is_none() {
            return;
        }
        let (spec, dir) = (s.spec.clone(), s.dir.clone());
        let (d, c, repaint) = (s.done.clone(), s.cancel.clone(), s.ctx.clone());
        s.job = Some(Job::spawn(&s.ctx, format!("sweep {}", s.name), move || {
            run_sweep(&spec, &dir, &c, &|_| {
                d.fetch_add(1, Ordering::Relaxed);
                repaint.request_repaint();
            })
            .map_err(|e| e.to_string())
        }));
        let name = s.name.clone();
        state.info(format!("started sweep {name}"));
        return;
    }
    let done = s.done.load(Ordering::Relaxed);
    let ended = s.job.as_mut().and_then(|j| j.poll());
    state.sweep_events = state.sweep_events.max(done);
    if let Some(r) = ended {
        let (name, total) = (s.name.clone(), s.total);
        state.sweep = None;
        state.runs.sweep_ended();
        state.sweep_events += 1;
        match r {
            Ok(idx) => {
                let finished = idx.points.iter().filter(|p| p.status == "finished").count();
                state.info(format!(
                    "sweep {name}: {finished} of {total} points finished"
                ));
            }
            Err(e) => state.error(format!("sweep {name}: {e}")),
        }
    }
}

pub use crate::experiments::sweep::pareto;

/// *New sweep*: the form, the Fig. 1 preview of one point's policy, and the running sweep's
/// progress. Open at first when there is no sweep yet.
pub(super) fn launcher(
    state: &mut AppState,
    p: &mut FrontierPane,
    none_yet: bool,
    ui: &mut egui::Ui,
) {
    let ctx = ui.ctx().clone();
    if let Some(s) = &state.sweep {
        let done = s.done.load(Ordering::Relaxed).min(s.total);
        let mut cancel = false;
        ui.horizontal(|ui| {
            crate::app::appearance::busy(ui);
            if s.started() {
                ui.add(
                    egui::ProgressBar::new(done as f32 / s.total.max(1) as f32)
                        .desired_width(260.0)
                        .text(format!("sweep {}: {done} of {} points", s.name, s.total)),
                );
            } else {
                let ahead =
                    state.runs.sweep_position().map_or(0, |k| k - 1) + state.runs.started_count();
                ui.label(format!(
                    "sweep {}: waiting for {ahead} run(s) ahead of it in the queue (one \
                     thing trains at a time, so seconds compare)",
                    s.name
                ));
            }
            cancel = ui
                .button("Cancel sweep")
                .on_hover_text("Stops after the points being trained; starting it again resumes")
                .clicked();
        });
        if cancel {
            cancel_sweep(state);
        }
    }
    egui::CollapsingHeader::new("New sweep")
        .id_salt("frontier-new-sweep")
        .default_open(none_yet)
        .open(p.form_open.take())
        .show(ui, |ui| {
            ui.weak(
                "Every point trains SCL with the policy 1:(1−β)·LOW + λ:β·HIGH (004 §8.3): the \
                 lower family always, with weight 1 − β; the higher one with probability λ and \
                 weight β. It runs on the loaded data with the Runs pane's settings (iterations, \
                 prior, threads).",
            );
            let f = &mut p.form;
            egui::Grid::new("sweep-form").num_columns(2).show(ui, |ui| {
                let row = |ui: &mut egui::Ui, label: &str, v: &mut String, hint: &str| {
                    let l = ui.label(label);
                    ui.add(
                        egui::TextEdit::singleline(v)
                            .desired_width(180.0)
                            .hint_text(hint),
                    )
                    .labelled_by(l.id);
                    ui.end_row();
                };
                row(ui, "Name", &mut f.name, "a folder under workspace/sweeps");
                row(
                    ui,
                    "Families LOW/HIGH",
                    &mut f.families,
                    "pl1/fl, pl1/pl2, …",
                );
                row(ui, "λ values", &mut f.lambdas, "0.1, 0.5, 1");
                row(ui, "β values", &mut f.betas, "0.5, 1");
                let l = ui.label("Points at once");
                ui.add(egui::DragValue::new(&mut f.jobs).range(1..=16))
                    .labelled_by(l.id);
                ui.end_row();
            });
            let base = state.data.as_ref().map(|d| {
                let mut b = state.launch.clone();
                b.use_data(&d.source);
                b
            });
            let spec = base
                .as_ref()
                .ok_or_else(|| "load a data set first (Data pane)".to_string())
                .and_then(|b| {
                    let mut b = b.clone();
                    b.set_estimator("scl");
                    b.to_spec()
                })
                .and_then(|b| p.form.spec(b).map_err(|e| e.to_string()));
            ui.horizontal_wrapped(|ui| {
                let ok = spec.is_ok() && state.sweep.is_none();
                let points = spec.as_ref().map_or(0, |s| s.points().len());
                if ui
                    .add_enabled(ok, egui::Button::new("Start sweep"))
                    .on_hover_text(
                        "Train every point in the background; a sweep of this name resumes",
                    )
                    .clicked()
                {
                    let base = base.clone().expect("checked");
                    if let Err(e) = start_sweep(state, &ctx, &p.form, &base) {
                        state.error(format!("cannot start the sweep: {e}"));
                    } else {
                        p.sweep = Some(p.form.name.clone());
                    }
                }
                match &spec {
                    Ok(_) => ui.weak(format!(
                        "{points} points into {}",
                        state
                            .config
                            .workspace
                            .join("sweeps")
                            .join(&p.form.name)
                            .display()
                    )),
                    Err(e) => ui.colored_label(ui.visuals().warn_fg_color, e),
                };
            });
            if let Ok(spec) = &spec {
                let f = &mut p.form;
                ui.horizontal_wrapped(|ui| {
                    ui.label("Preview the selection of the point");
                    pick_value(ui, "λ", &spec.lambdas, &mut f.preview_lambda);
                    pick_value(ui, "β", &spec.betas, &mut f.preview_beta);
                });
                match spec.try_policy(f.preview_lambda, f.preview_beta) {
                    Ok(policy) => {
                        ui.monospace(format!("policy: {policy}"));
                        crate::app::policy_view::preview(
                            state,
                            &mut p.runtime.preview,
                            &policy,
                            ui,
                        );
                    }
                    Err(e) => {
                        ui.colored_label(ui.visuals().warn_fg_color, e.to_string());
                    }
                }
            }
        });
}

/// A combo box over a sweep's values (the current one kept when it is among them).
pub(super) fn pick_value(ui: &mut egui::Ui, label: &str, values: &[f64], v: &mut f64) {
    if !values.contains(v) {
        *v = values[values.len() / 2];
    }
    egui::ComboBox::new(("sweep-preview", label), label)
        .selected_text(v.to_string())
        .show_ui(ui, |ui| {
            for x in values {
                ui.selectable_value(v, *x, x.to_string());
            }
        });
}
