//! L-BFGS from argmin (More–Thuente line search), driven one iteration at a time so that we
//! own the stopping rule (CRFsuite's: relative improvement over the last `period` iterations
//! below `delta`, or ‖g‖/max(1, ‖θ‖) below `epsilon`, or a maximum), report every iteration to
//! an observer, and honour a cancel flag.

use super::objective::{Evaluation, Objective};
use crate::error::{Error, Result};
use argmin::core::{
    CostFunction, Gradient, IterState, LineSearch, Problem, Solver, State, TerminationStatus, KV,
};
use argmin::solver::linesearch::MoreThuenteLineSearch;
use argmin::solver::quasinewton::LBFGS;
use ndarray::Array1;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Instant;

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct LbfgsSpec {
    pub max_iter: usize,
    /// Number of correction pairs kept.
    pub m: usize,
    /// Iterations over which `delta` is measured.
    pub period: usize,
    /// Stop when (f_{k−period} − f_k)/|f_k| < delta.
    pub delta: f64,
    /// Stop when ‖g‖/max(1, ‖θ‖) < epsilon.
    pub epsilon: f64,
}

impl Default for LbfgsSpec {
    /// CRFsuite's defaults (with a finite iteration cap).
    fn default() -> Self {
        LbfgsSpec {
            max_iter: 1000,
            m: 6,
            period: 10,
            delta: 1e-5,
            epsilon: 1e-5,
        }
    }
}

/// What the observer sees after each iteration.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct IterReport {
    pub iteration: usize,
    /// Minimised objective (−Σ value + penalty).
    pub objective: f64,
    /// Σ value over training instances, without the prior.
    pub value: f64,
    pub grad_norm: f64,
    pub seconds: f64,
    /// Objective evaluations so far (line-search steps included).
    pub evaluations: usize,
    /// Counted multiply-adds of inference and normalisation so far.
    pub ops: u64,
    /// Training instances whose inference did not converge at this iteration's weights (loopy
    /// BP, or CAMEL's δ sweeps).
    #[serde(default)]
    pub bp_unconverged: u64,
    /// The paper's FLOPs so far (004 §3.1: evaluations × the objective's count), for SCL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paper_flops: Option<f64>,
    /// CAMEL: which fit the iteration belongs to (0 = piecewise, then one per linearisation of
    /// g) and the largest sepset consistency violation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fit: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub violation: Option<f64>,
    /// nota: the number of NOTA terms the objective had at this iteration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nota_terms: Option<usize>,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StopReason {
    /// Relative improvement over `period` iterations fell below `delta`.
    Converged,
    /// The gradient norm test passed.
    SmallGradient,
    MaxIterations,
    /// The line search could not make progress (often: converged to machine precision).
    LineSearch(String),
    Cancelled,
}

pub struct OptimResult {
    pub theta: Vec<f64>,
    pub iterations: usize,
    pub reason: StopReason,
    pub last: Option<IterReport>,
}

struct Cached {
    theta: Array1<f64>,
    grad: Array1<f64>,
    eval: Evaluation,
    valid: bool,
}

/// The dataset objective as an argmin problem; value and gradient come from one pass and are
/// cached, since argmin asks for the gradient again at the point the line search accepted.
struct ArgminProblem<'a, 'b> {
    obj: &'b (dyn Objective + 'a),
    cache: Mutex<Cached>,
    cancel: &'b AtomicBool,
    evaluations: Mutex<(usize, u64)>,
}

impl ArgminProblem<'_, '_> {
    fn eval(&self, p: &Array1<f64>) -> std::result::Result<(), argmin::core::Error> {
        let mut c = self.cache.lock().unwrap();
        if c.valid && c.theta == *p {
            return Ok(());
        }
        if self.cancel.load(Ordering::Relaxed) {
            return Err(argmin::core::Error::msg("cancelled"));
        }
        let theta = p.as_slice().expect("contiguous parameters");
        let Cached { grad, .. } = &mut *c;
        let e = self.obj.evaluate(
            theta,
            Some(grad.as_slice_mut().expect("contiguous gradient")),
        );
        c.eval = e;
        c.theta.assign(p);
        c.valid = e.objective.is_finite();
        let mut n = self.evaluations.lock().unwrap();
        n.0 += 1;
        n.1 += e.ops;
        if !e.objective.is_finite() {
            return Err(argmin::core::Error::msg("objective is not finite"));
        }
        Ok(())
    }
}

impl CostFunction for ArgminProblem<'_, '_> {
    type Param = Array1<f64>;
    type Output = f64;
    fn cost(&self, p: &Self::Param) -> std::result::Result<f64, argmin::core::Error> {
        self.eval(p)?;
        Ok(self.cache.lock().unwrap().eval.objective)
    }
}

impl Gradient for ArgminProblem<'_, '_> {
    type Param = Array1<f64>;
    type Gradient = Array1<f64>;
    fn gradient(&self, p: &Self::Param) -> std::result::Result<Array1<f64>, argmin::core::Error> {
        self.eval(p)?;
        Ok(self.cache.lock().unwrap().grad.clone())
    }
}

type Params = Array1<f64>;
type LbfgsState = IterState<Params, Params, (), (), (), f64>;

/// More–Thuente with libLBFGS's (and so CRFsuite's) first step: the first search direction
/// (−g, since there is no curvature history yet) starts at step 1/‖d‖, later ones at 1. Starting
/// the first search at step 1 would evaluate the objective at weights the size of the raw
/// gradient, where forward–backward needs its slow log-space fallback.
#[derive(Clone)]
struct LibLbfgsStart {
    inner: MoreThuenteLineSearch<Params, Params, f64>,
    first: bool,
}

impl LineSearch<Params, f64> for LibLbfgsStart {
    fn search_direction(&mut self, d: Params) {
        let n = norm(&d);
        let step = if self.first && n > 0.0 && n.is_finite() {
            1.0 / n
        } else {
            1.0
        };
        self.first = false;
        self.inner
            .initial_step_length(step)
            .expect("positive initial step");
        self.inner.search_direction(d);
    }
    fn initial_step_length(&mut self, alpha: f64) -> std::result::Result<(), argmin::core::Error> {
        self.inner.initial_step_length(alpha)
    }
}

impl<O> Solver<O, LbfgsState> for LibLbfgsStart
where
    MoreThuenteLineSearch<Params, Params, f64>: Solver<O, LbfgsState>,
{
    fn name(&self) -> &str {
        "More-Thuente line search (libLBFGS first step)"
    }
    fn init(
        &mut self,
        problem: &mut Problem<O>,
        state: LbfgsState,
    ) -> std::result::Result<(LbfgsState, Option<KV>), argmin::core::Error> {
        self.inner.init(problem, state)
    }
    fn next_iter(
        &mut self,
        problem: &mut Problem<O>,
        state: LbfgsState,
    ) -> std::result::Result<(LbfgsState, Option<KV>), argmin::core::Error> {
        self.inner.next_iter(problem, state)
    }
    fn terminate_internal(&mut self, state: &LbfgsState) -> TerminationStatus {
        self.inner.terminate_internal(state)
    }
    fn terminate(&mut self, state: &LbfgsState) -> TerminationStatus {
        self.inner.terminate(state)
    }
}

fn norm(x: &Array1<f64>) -> f64 {
    x.iter().map(|v| v * v).sum::<f64>().sqrt()
}

/// Minimises the objective from `theta0`.
pub fn minimize(
    obj: &dyn Objective,
    theta0: Vec<f64>,
    spec: &LbfgsSpec,
    cancel: &AtomicBool,
    observer: &mut dyn FnMut(&IterReport, &[f64]),
) -> Result<OptimResult> {
    let n = obj.n_params();
    if theta0.len() != n {
        return Err(Error::invalid("initial parameters have the wrong length"));
    }
    let start = Instant::now();
    let prob = ArgminProblem {
        obj,
        cache: Mutex::new(Cached {
            theta: Array1::zeros(n),
            grad: Array1::zeros(n),
            eval: Evaluation::default(),
            valid: false,
        }),
        cancel,
        evaluations: Mutex::new((0, 0)),
    };
    let mut problem = Problem::new(prob);
    let line_search = LibLbfgsStart {
        inner: MoreThuenteLineSearch::new(),
        first: true,
    };
    let mut solver: LBFGS<_, Params, Params, f64> = LBFGS::new(line_search, spec.m.max(1));
    let state = IterState::new().param(Array1::from(theta0));
    let (mut state, _) = solver
        .init(&mut problem, state)
        .map_err(|e| map_err(e, cancel))?;
    let mut theta = state.get_param().cloned().expect("initial parameters");
    let mut history = vec![state.get_cost()];
    let mut last = None;
    let mut reason = StopReason::MaxIterations;
    let mut iterations = 0;
    while iterations < spec.max_iter {
        if cancel.load(Ordering::Relaxed) {
            reason = StopReason::Cancelled;
            break;
        }
        let next = solver.next_iter(&mut problem, state);
        let mut new_state = match next {
            Ok((s, _)) => s,
            Err(e) => {
                reason = if cancel.load(Ordering::Relaxed) {
                    StopReason::Cancelled
                } else {
                    StopReason::LineSearch(noisy(e.to_string(), &problem))
                };
                break;
            }
        };
        if let TerminationStatus::Terminated(r) = new_state.get_termination_status() {
            reason = if cancel.load(Ordering::Relaxed) {
                StopReason::Cancelled
            } else {
                StopReason::LineSearch(noisy(r.to_string(), &problem))
            };
            break;
        }
        new_state.increment_iter();
        iterations += 1;
        let p = new_state
            .get_param()
            .expect("parameters after an iteration");
        theta.assign(p);
        let f = new_state.get_cost();
        let gnorm = new_state.get_gradient().map(norm).unwrap_or(f64::NAN);
        let (evals, ops) = *problem
            .problem
            .as_ref()
            .expect("problem present between iterations")
            .evaluations
            .lock()
            .unwrap();
        let eval = problem.problem.as_ref().unwrap().cache.lock().unwrap().eval;
        let report = IterReport {
            iteration: iterations,
            objective: f,
            value: eval.value,
            grad_norm: gnorm,
            seconds: start.elapsed().as_secs_f64(),
            evaluations: evals,
            ops,
            bp_unconverged: eval.unconverged,
            paper_flops: obj.paper_flops().map(|f| f * evals as f64),
            fit: None,
            violation: None,
            nota_terms: None,
        };
        observer(&report, theta.as_slice().expect("contiguous"));
        last = Some(report);
        history.push(f);
        state = new_state;
        if gnorm / norm(&theta).max(1.0) < spec.epsilon {
            reason = StopReason::SmallGradient;
            break;
        }
        if spec.period > 0 && history.len() > spec.period {
            let old = history[history.len() - 1 - spec.period];
            let rate = (old - f) / f.abs().max(f64::MIN_POSITIVE);
            if rate < spec.delta {
                reason = StopReason::Converged;
                break;
            }
        }
    }
    Ok(OptimResult {
        theta: theta.to_vec(),
        iterations,
        reason,
        last,
    })
}

/// A line-search failure message, saying so when the last evaluation's BP had not converged
/// (its gradient is then noisy, the usual reason a line search fails in BP training).
fn noisy(msg: String, problem: &Problem<ArgminProblem<'_, '_>>) -> String {
    let unconverged = problem
        .problem
        .as_ref()
        .map(|p| p.cache.lock().unwrap().eval.unconverged)
        .unwrap_or(0);
    if unconverged > 0 {
        format!("{msg} (inference (BP, or CAMEL's δ sweeps) did not converge on {unconverged} instances: the gradient is noisy)")
    } else {
        msg
    }
}

fn map_err(e: argmin::core::Error, cancel: &AtomicBool) -> Error {
    if cancel.load(Ordering::Relaxed) {
        Error::Cancelled
    } else {
        Error::invalid(format!("optimiser: {e}"))
    }
}
