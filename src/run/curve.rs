//! A run's learning curve, for every model kind: one point per optimiser iteration in the run's
//! curve file, the progress events, and a held-out evaluation every `eval_every` iterations.
//! Later fits of the same run (NOTA's rounds, SCL's β rounds, CAMEL's outer loops) continue it.
//!
//! One policy for both kinds: a held-out evaluation that fails leaves that point without test
//! scores (the run's final evaluation, after its weights are saved, reports the error), while
//! a curve that cannot be written fails the run once training stops.

use super::store::RunFiles;
use super::summary::{CurvePoint, RunEvent};
use crate::error::{Error, Result};
use crate::eval::metrics::Metrics;
use crate::optim::IterReport;

/// What a checkpoint keeps of the curve.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct CurveState {
    pub text: String,
    pub base: Option<IterReport>,
    pub last: Option<IterReport>,
    pub nota_terms: Option<usize>,
}

/// Scores the weights on the held-out set: `None` when the run has none.
pub type HeldOut<'a> = Box<dyn FnMut(&[f64]) -> Result<Option<Metrics>> + 'a>;

/// The run's learning curve (see the module).
pub struct Curve<'a> {
    held_out: HeldOut<'a>,
    eval_every: usize,
    on_event: &'a mut dyn FnMut(RunEvent),
    files: RunFiles,
    text: String,
    io_error: Option<Error>,
    /// The counts the current fit starts from (the last point of the fits before it).
    base: Option<IterReport>,
    /// The last point recorded.
    pub last: Option<IterReport>,
    /// nota: the number of NOTA terms in the objective being fitted.
    pub nota_terms: Option<usize>,
    /// Time spent here (held-out evaluation, writing the curve): not training, so left out
    /// of the run's seconds as the optimiser leaves it out of each point's.
    pub observed: std::time::Duration,
}

impl<'a> Curve<'a> {
    /// A curve written to the run's curve file (emptied now).
    pub fn new(
        files: RunFiles,
        eval_every: usize,
        held_out: HeldOut<'a>,
        on_event: &'a mut dyn FnMut(RunEvent),
    ) -> Result<Self> {
        files.write_curve("")?;
        Ok(Curve {
            held_out,
            eval_every,
            on_event,
            files,
            text: String::new(),
            io_error: None,
            base: None,
            last: None,
            nota_terms: None,
            observed: std::time::Duration::ZERO,
        })
    }

    /// Sends an event to the run's listener.
    pub fn send(&mut self, event: RunEvent) {
        (self.on_event)(event)
    }

    /// The next fit's iterations, evaluations, operations, seconds and FLOPs count on from the
    /// last point recorded.
    pub fn continue_fit(&mut self) {
        if self.last.is_some() {
            self.base = self.last.clone();
        }
    }

    /// Records one iteration of the current fit (its counts relative to the fit's start).
    pub fn observe(&mut self, r: &IterReport, theta: &[f64]) {
        let started = std::time::Instant::now();
        self.record(r, theta);
        self.observed += started.elapsed();
    }

    fn record(&mut self, r: &IterReport, theta: &[f64]) {
        let r = match &self.base {
            Some(b) => IterReport {
                iteration: r.iteration + b.iteration,
                evaluations: r.evaluations + b.evaluations,
                ops: r.ops + b.ops,
                seconds: r.seconds + b.seconds,
                paper_flops: r.paper_flops.map(|f| f + b.paper_flops.unwrap_or(0.0)),
                nota_terms: self.nota_terms,
                ..r.clone()
            },
            None => IterReport {
                nota_terms: self.nota_terms,
                ..r.clone()
            },
        };
        self.last = Some(r.clone());
        let mut point = CurvePoint {
            report: r.clone(),
            test_token_accuracy: None,
            test_segment_f1: None,
            test_log_likelihood: None,
        };
        (self.on_event)(RunEvent::Progress(r.clone()));
        if self.eval_every > 0 && r.iteration.is_multiple_of(self.eval_every) {
            if let Ok(Some(m)) = (self.held_out)(theta) {
                point.test_token_accuracy = Some(m.token_accuracy);
                point.test_segment_f1 = m.segment_f1();
                point.test_log_likelihood = m.log_likelihood;
                (self.on_event)(RunEvent::Eval {
                    iteration: r.iteration,
                    metrics: Box::new(m),
                });
            }
        }
        self.text
            .push_str(&serde_json::to_string(&point).expect("curve point serialises"));
        self.text.push('\n');
        if let Err(e) = self.files.write_curve(&self.text) {
            self.io_error.get_or_insert(e);
        }
    }

    /// What a checkpoint keeps of the curve.
    pub fn state(&self) -> CurveState {
        CurveState {
            text: self.text.clone(),
            base: self.base.clone(),
            last: self.last.clone(),
            nota_terms: self.nota_terms,
        }
    }

    /// The curve as a checkpoint kept it (its file written again at once).
    pub fn restore(&mut self, s: &CurveState) {
        self.text = s.text.clone();
        self.base = s.base.clone();
        self.last = s.last.clone();
        self.nota_terms = s.nota_terms;
        if let Err(e) = self.files.write_curve(&self.text) {
            self.io_error.get_or_insert(e);
        }
    }

    /// The first error writing the curve file, if any.
    pub fn take_error(&mut self) -> Option<Error> {
        self.io_error.take()
    }
}
