//! `train`: one run, with a progress bar on standard error.

use super::knobs::{merged, run_spec, EstimatorKnobs, RunKnobs};
use crate::error::Result;
use crate::run::{execute_in, Existing, RunEvent, RunSpec, RunSummary};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

#[derive(Args)]
pub struct TrainArgs {
    #[command(flatten)]
    pub run: RunKnobs,
    #[command(flatten)]
    pub estimator: EstimatorKnobs,
    /// Run directory to create.
    #[arg(long)]
    pub out: PathBuf,
    /// Replace the run already in --out, or write into a directory that holds other files
    /// (without it both are refused).
    #[arg(long)]
    pub force: bool,
    /// Run a stored spec.json instead of the options above.
    #[arg(long, conflicts_with = "train")]
    pub spec: Option<PathBuf>,
    /// Print a one-line JSON summary as the last line of stdout.
    #[arg(long)]
    pub summary_json: bool,
}

pub fn train(a: TrainArgs) -> Result<()> {
    let spec = match &a.spec {
        Some(p) => crate::util::read_json::<RunSpec>(p)?,
        None => {
            let s = merged(&[&a.run.0, &a.estimator.0]);
            crate::estimators::settings::check_given(&s)?;
            run_spec(&s)?
        }
    };
    let summary = run_with_progress(&spec, &a.out, existing(a.force))?;
    if let Some(m) = &summary.test {
        eprint!("{}", m.report());
    }
    if a.summary_json {
        outln!("{}", summary_json(&summary, &a.out))?;
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

/// Executes a spec with a progress bar on standard error.
pub fn run_with_progress(spec: &RunSpec, out: &Path, existing: Existing) -> Result<RunSummary> {
    let max_iter = spec.optimiser.max_iter as u64;
    let bar = ProgressBar::new(max_iter);
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} it  {msg}",
        )
        .unwrap(),
    );
    let cancel = AtomicBool::new(false);
    let mut on_event = |e: RunEvent| match e {
        RunEvent::Started {
            n_params,
            n_sequences,
            n_tokens,
            threads,
        } => {
            bar.println(format!(
                "training {} on {n_sequences} sequences / {n_tokens} tokens: {n_params} parameters, {threads} threads",
                spec.estimator.name()
            ));
        }
        RunEvent::Progress(r) => {
            bar.set_position(r.iteration as u64);
            let bp = if r.bp_unconverged > 0 {
                format!("  BP unconverged on {}", r.bp_unconverged)
            } else {
                String::new()
            };
            bar.set_message(format!(
                "objective {:.4}  |g| {:.3e}{bp}",
                r.objective, r.grad_norm
            ));
        }
        RunEvent::Eval { iteration, metrics } => bar.println(format!(
            "iteration {iteration}: test accuracy {:.2}%, segment F1 {:.2}",
            metrics.token_accuracy, metrics.segments.f1
        )),
        RunEvent::Finished(_) | RunEvent::Failed(_) => bar.finish_and_clear(),
    };
    let summary = execute_in(spec, out, existing, &cancel, &mut on_event)?;
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
    Ok(summary)
}
