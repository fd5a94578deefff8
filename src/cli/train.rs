//! `train`: one run, with a progress bar on standard error.

use super::knobs::{merged, run_spec, EstimatorKnobs, RunKnobs};
use crate::error::Result;
use crate::run::checkpoint::CheckpointPolicy;
use crate::run::{execute_with, Existing, RunEvent, RunSpec, RunSummary};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct TrainArgs {
    #[command(flatten)]
    pub run: RunKnobs,
    #[command(flatten)]
    pub estimator: EstimatorKnobs,
    /// Run directory to create.
    #[arg(long, required_unless_present = "resume")]
    pub out: Option<PathBuf>,
    /// Continue the run in DIR (its spec.json) from its checkpoint, or start it again when it
    /// has none; a finished run is left as it is.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["out", "spec", "force", "train"])]
    pub resume: Option<PathBuf>,
    /// Write a checkpoint every N iterations (besides every --checkpoint-minutes).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub checkpoint_every: usize,
    /// Write a checkpoint whenever this many minutes have passed since the last (0: not by
    /// time). A cancelled run (Ctrl-C, SIGTERM) writes one as it stops.
    #[arg(long, value_name = "MINUTES", default_value_t = 10.0)]
    pub checkpoint_minutes: f64,
    /// Replace the run already in --out, or write into a directory that holds other files
    /// (without it both are refused).
    #[arg(long)]
    pub force: bool,
    /// Safe to run again (a plan's lines): leave --out as it is when it holds this spec's run
    /// finished; start a failed, cancelled or interrupted run there again; refuse a run
    /// finished with another spec.
    #[arg(long, conflicts_with = "force")]
    pub if_unfinished: bool,
    /// Run a stored spec.json instead of the options above.
    #[arg(long, conflicts_with = "train")]
    pub spec: Option<PathBuf>,
    /// Print a one-line JSON summary as the last line of stdout.
    #[arg(long)]
    pub summary_json: bool,
    /// No progress on standard error (off a terminal it is plain lines: the setup, every
    /// 10 iterations or 30 seconds, each evaluation).
    #[arg(long, short)]
    pub quiet: bool,
}

pub fn train(a: TrainArgs) -> Result<()> {
    let spec = match (&a.resume, &a.spec) {
        (Some(dir), _) => {
            let files = crate::run::RunFiles::at(dir);
            if !files.has_spec() {
                return Err(crate::error::Error::file(
                    dir.display().to_string(),
                    "holds no run to resume (no spec.json)",
                ));
            }
            files.spec()?
        }
        (None, Some(p)) => crate::util::read_json::<RunSpec>(p)?,
        (None, None) => {
            let s = merged(&[&a.run.0, &a.estimator.0]);
            crate::estimators::settings::check_given(&s)?;
            run_spec(&s)?
        }
    };
    let how = Report::for_stderr(a.quiet);
    let existing = if a.if_unfinished || a.resume.is_some() {
        Existing::IfUnfinished
    } else {
        existing(a.force)
    };
    if !(0.0..=1e6).contains(&a.checkpoint_minutes) {
        return Err(crate::error::Error::invalid(
            "--checkpoint-minutes: give 0 to 1000000",
        ));
    }
    let checkpoints = CheckpointPolicy {
        every_iterations: a.checkpoint_every,
        every: (a.checkpoint_minutes > 0.0)
            .then(|| std::time::Duration::from_secs_f64(a.checkpoint_minutes * 60.0)),
        at_cancel: true,
    };
    let out = a
        .resume
        .clone()
        .or(a.out.clone())
        .expect("clap: --out or --resume");
    let summary = run_with_progress(&spec, &out, existing, checkpoints, how)?;
    if let (Some(m), false) = (&summary.test, a.quiet) {
        eprint!("{}", m.report());
    }
    if a.summary_json {
        outln!("{}", summary_json(&summary, &out))?;
    }
    Ok(())
}

/// One-line JSON summary of a run.
pub fn summary_json(summary: &RunSummary, out: &Path) -> serde_json::Value {
    serde_json::json!({
        "estimator": summary.estimator,
        "iterations": summary.iterations,
        "train_seconds": summary.train_seconds,
        "setup_seconds": summary.setup_seconds,
        "n_params": summary.n_params,
        "threads": summary.threads,
        "final_objective": summary.final_objective,
        "stop_reason": summary.stop_reason,
        "model": summary.model,
        "bp_unconverged": summary.bp_unconverged,
        "param_error": summary.param_error,
        "paper_flops": summary.paper_flops,
        "decoders": summary.test.as_ref().map(|m| &m.decoders),
        "token_accuracy": summary.test.as_ref().map(|m| m.token_accuracy),
        "segment_f1": summary.test.as_ref().and_then(|m| m.segment_f1()),
        "test_log_likelihood": summary.test.as_ref().and_then(|m| m.log_likelihood),
        "run_dir": out,
    })
}

/// What `--force` says to do with an output directory's contents.
pub fn existing(force: bool) -> Existing {
    if force {
        Existing::Replace
    } else {
        Existing::Refuse
    }
}

/// How a run reports on standard error: a progress bar on a terminal; off one (a log file, a
/// cluster job) plain lines — the setup, a line every [`LINE_EVERY_ITERATIONS`] iterations or
/// [`LINE_EVERY_SECONDS`] seconds, each evaluation; nothing with `--quiet`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Report {
    Bar,
    Lines,
    Quiet,
}

/// Off a terminal, a progress line at least every this many iterations…
pub const LINE_EVERY_ITERATIONS: usize = 10;
/// …or this many seconds, whichever comes first.
pub const LINE_EVERY_SECONDS: u64 = 30;

impl Report {
    /// A bar when standard error is a terminal, else lines; `quiet` silences both.
    pub fn for_stderr(quiet: bool) -> Report {
        use std::io::IsTerminal;
        if quiet {
            Report::Quiet
        } else if std::io::stderr().is_terminal() {
            Report::Bar
        } else {
            Report::Lines
        }
    }
}

/// Where a run's lines go: the bar (printed above it) or standard error.
struct Reporter {
    how: Report,
    bar: ProgressBar,
    last_line: std::time::Instant,
    last_iteration: usize,
}

impl Reporter {
    fn new(how: Report, max_iter: u64) -> Reporter {
        let bar = if how == Report::Bar {
            let bar = ProgressBar::new(max_iter);
            bar.set_style(
                ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} it  {msg}",
                )
                .expect("the template is valid"),
            );
            bar
        } else {
            ProgressBar::hidden()
        };
        Reporter {
            how,
            bar,
            last_line: std::time::Instant::now(),
            last_iteration: 0,
        }
    }

    /// A line that always shows (setup, evaluations) unless quiet.
    fn line(&mut self, text: String) {
        match self.how {
            Report::Bar => self.bar.println(text),
            Report::Lines => eprintln!("{text}"),
            Report::Quiet => {}
        }
        self.last_line = std::time::Instant::now();
    }

    fn progress(&mut self, r: &crate::optim::IterReport) {
        let bp = if r.bp_unconverged > 0 {
            format!("  BP unconverged on {}", r.bp_unconverged)
        } else {
            String::new()
        };
        let msg = format!("objective {:.4}  |g| {:.3e}{bp}", r.objective, r.grad_norm);
        match self.how {
            Report::Bar => {
                self.bar.set_position(r.iteration as u64);
                self.bar.set_message(msg);
            }
            Report::Lines => {
                let due = r.iteration == 1
                    || r.iteration >= self.last_iteration + LINE_EVERY_ITERATIONS
                    || self.last_line.elapsed().as_secs() >= LINE_EVERY_SECONDS;
                if due {
                    self.last_iteration = r.iteration;
                    self.line(format!("iteration {}: {msg}", r.iteration));
                }
            }
            Report::Quiet => {}
        }
    }
}

/// Executes a spec, reporting on standard error as `how` says.
pub fn run_with_progress(
    spec: &RunSpec,
    out: &Path,
    existing: Existing,
    checkpoints: CheckpointPolicy,
    how: Report,
) -> Result<RunSummary> {
    let mut rep = Reporter::new(how, spec.optimiser.max_iter as u64);
    // Ctrl-C or SIGTERM (a batch system's time limit) stops the run at its iteration and
    // writes a checkpoint; a second signal ends the process at once.
    let cancel = super::signals::cancel_on_signals();
    let mut on_event = |e: RunEvent| {
        match e {
        RunEvent::Started {
            n_params,
            n_sequences,
            n_tokens,
            threads,
        } => rep.line(format!(
            "training {} on {n_sequences} sequences / {n_tokens} tokens: {n_params} parameters, {threads} threads",
            spec.estimator.name()
        )),
        RunEvent::Progress(r) => rep.progress(&r),
        RunEvent::Eval { iteration, metrics } => rep.line(format!(
            "iteration {iteration}: test accuracy {:.2}%, segment F1 {:.2}",
            metrics.token_accuracy, metrics.segments.f1
        )),
        RunEvent::Note(msg) => rep.line(msg),
        RunEvent::Finished(_) | RunEvent::Failed(_) => rep.bar.finish_and_clear(),
    }
    };
    let summary = execute_with(spec, out, existing, checkpoints, cancel, &mut on_event)?;
    if how != Report::Quiet {
        eprintln!(
            "{} iterations ({}) in {:.2} s; model in {}",
            summary.iterations,
            summary
                .stop_reason
                .as_ref()
                .map_or("closed form".to_string(), |r| format!("{r:?}")),
            summary.train_seconds,
            out.display()
        );
    }
    Ok(summary)
}
