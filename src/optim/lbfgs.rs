//! L-BFGS with the More–Thuente line search, driven one iteration at a time so that we own the
//! stopping rule (CRFsuite's: relative improvement over the last `period` iterations below
//! `delta`, or ‖g‖/max(1, ‖θ‖) below `epsilon`, or a maximum), report every iteration to an
//! observer, and honour a cancel flag.
//!
//! The arithmetic is argmin 0.11's `LBFGS` with `MoreThuenteLineSearch` (ndarray back end)
//! operation for operation — the two-loop recursion, ndarray's eight-way dot product, the line
//! search's steps (`more_thuente`). What differs: argmin makes a new parameter-sized vector for
//! every vector operation (about 30 alive at once), this keeps 2m + 5; every vector operation,
//! dot products included, runs on the objective's threads. A dot product over more than one
//! block (32 768 weights) sums its blocks' eight-way dots, so on large models the iterates
//! differ from argmin's in the last bits; they do not depend on the thread count.

use super::{Evaluation, Objective};
use crate::error::{Error, Result};
use crate::util::dot_blocks;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
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

impl LbfgsSpec {
    /// The most correction pairs kept: each is two parameter-sized vectors, so the history is
    /// bounded before anything is allocated (CRFsuite's default is 6; 004 uses 5–20).
    pub const MAX_M: usize = 1_000;

    /// The memory the search holds for `n` weights: its m correction pairs (two vectors each)
    /// and the point, gradient, trial point, trial gradient, direction and a fit's start.
    pub fn memory_estimate(&self, n: usize) -> u64 {
        crate::memory::product(&[n as u64, 8, 2 * self.m.max(1) as u64 + 6])
    }

    /// Refuses numbers that cannot make a search (a `spec.json` is read without the command
    /// line's ranges), naming the field.
    pub fn check(&self) -> Result<()> {
        let bad =
            |field: &str, why: String| Err(Error::invalid(format!("optimiser.{field}: {why}")));
        if !(1..=1_000_000).contains(&self.max_iter) {
            return bad(
                "max_iter",
                format!("{} is not in 1 to 1000000", self.max_iter),
            );
        }
        if !(1..=Self::MAX_M).contains(&self.m) {
            return bad("m", format!("{} is not in 1 to {}", self.m, Self::MAX_M));
        }
        if !(1..=10_000).contains(&self.period) {
            return bad("period", format!("{} is not in 1 to 10000", self.period));
        }
        for (field, v) in [("delta", self.delta), ("epsilon", self.epsilon)] {
            if !(0.0..=1.0).contains(&v) {
                return bad(field, format!("{v} is not in 0 to 1"));
            }
        }
        Ok(())
    }
}

/// What the observer sees after each iteration.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct IterReport {
    pub iteration: usize,
    /// Minimised objective (−Σ value + penalty).
    pub objective: f64,
    /// Σ value over training instances, without the prior.
    pub value: f64,
    pub grad_norm: f64,
    /// Seconds of optimisation so far, the observer's time (held-out evaluation, writing the
    /// curve) left out: estimators are compared on what training costs (000 §5's timings).
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
    /// The objective rose over the last `period` iterations, which a line search on a function
    /// of θ alone never allows: the objective carries state between evaluations (loopy BP's
    /// warm-started messages settling at another fixed point). Stopped, but not converged.
    ObjectiveRose,
}

/// CRFsuite's rule on the objective `history` (one value per iteration): stop when the
/// relative improvement over the last `period` iterations is below `delta` — as
/// [`StopReason::Converged`] when it is an improvement, as [`StopReason::ObjectiveRose`] when
/// the objective went up (CRFsuite calls that converged too).
fn period_stop(history: &[f64], period: usize, delta: f64) -> Option<StopReason> {
    if period == 0 || history.len() <= period {
        return None;
    }
    let (old, f) = (
        history[history.len() - 1 - period],
        history[history.len() - 1],
    );
    let rate = (old - f) / f.abs().max(f64::MIN_POSITIVE);
    if rate >= delta {
        None
    } else if rate < 0.0 {
        Some(StopReason::ObjectiveRose)
    } else {
        Some(StopReason::Converged)
    }
}

pub struct OptimResult {
    pub theta: Vec<f64>,
    pub iterations: usize,
    pub reason: StopReason,
    pub last: Option<IterReport>,
}

/// What went wrong inside a line search: the objective (cancelled, not finite) or the search.
enum SearchError {
    Objective(Error),
    Search(String),
}

/// The objective with its evaluation count, the last evaluation and cancellation.
struct Evaluator<'a, 'b> {
    obj: &'b (dyn Objective + 'a),
    cancel: &'b AtomicBool,
    evaluations: usize,
    ops: u64,
    last: Evaluation,
}

impl Evaluator<'_, '_> {
    /// Objective and gradient (into `grad`) at `x`.
    fn eval(&mut self, x: &[f64], grad: &mut [f64]) -> Result<f64> {
        if self.cancel.load(Ordering::Relaxed) {
            return Err(Error::Cancelled);
        }
        let e = self.obj.evaluate(x, Some(grad));
        self.evaluations += 1;
        self.ops += e.ops;
        self.last = e;
        if !e.objective.is_finite() {
            return Err(Error::invalid("objective is not finite"));
        }
        Ok(e.objective)
    }
}

/// Element-wise vector updates, split over the objective's threads. Each element is computed
/// the same way on any split, so results do not depend on the thread count.
struct Vectors<'p> {
    pool: Option<&'p rayon::ThreadPool>,
}

impl Vectors<'_> {
    const CHUNK: usize = 1 << 15;

    fn run(&self, op: impl FnOnce() + Send) {
        match self.pool {
            Some(p) => p.install(op),
            None => op(),
        }
    }

    /// [`dot_blocks`] on the objective's threads.
    fn dot(&self, a: &[f64], b: &[f64]) -> f64 {
        let mut r = 0.0;
        self.run(|| r = dot_blocks(a, b));
        r
    }

    /// `‖x‖₂` by [`Vectors::dot`].
    fn norm(&self, x: &[f64]) -> f64 {
        self.dot(x, x).sqrt()
    }

    /// `f(a[i], b[i])` for every i, updating `a`.
    fn zip2(&self, a: &mut [f64], b: &[f64], f: impl Fn(&mut f64, f64) + Sync + Send) {
        use rayon::prelude::*;
        self.run(|| {
            a.par_chunks_mut(Self::CHUNK)
                .zip(b.par_chunks(Self::CHUNK))
                .for_each(|(a, b)| a.iter_mut().zip(b).for_each(|(x, &y)| f(x, y)))
        });
    }

    /// `out[i] = f(a[i], b[i])` for every i.
    fn zip3(
        &self,
        out: &mut [f64],
        a: &[f64],
        b: &[f64],
        f: impl Fn(f64, f64) -> f64 + Sync + Send,
    ) {
        use rayon::prelude::*;
        self.run(|| {
            out.par_chunks_mut(Self::CHUNK)
                .zip(a.par_chunks(Self::CHUNK))
                .zip(b.par_chunks(Self::CHUNK))
                .for_each(|((o, a), b)| {
                    for ((o, &x), &y) in o.iter_mut().zip(a).zip(b) {
                        *o = f(x, y);
                    }
                })
        });
    }
}

/// One correction pair with `yᵀs`, kept so the two-loop recursion does not recompute it.
struct Pair {
    s: Vec<f64>,
    y: Vec<f64>,
    ys: f64,
}

/// Sees the fit as it goes: every iteration's report, and the optimiser's whole state where a
/// checkpoint may be taken (after an iteration that did not stop the fit, and at a
/// cancellation, where the state is the start of the iteration that was cut short).
pub trait Watch {
    fn observe(&mut self, report: &IterReport, theta: &[f64]);
    /// `stopping`: the fit was cancelled and ends here (offered once, after the last
    /// iteration's own offer).
    fn keep(&mut self, _state: &Snapshot, _stopping: bool) {}
}

struct Observer<'o>(&'o mut dyn FnMut(&IterReport, &[f64]));

impl Watch for Observer<'_> {
    fn observe(&mut self, report: &IterReport, theta: &[f64]) {
        (self.0)(report, theta)
    }
}

/// The optimiser's state between two iterations, borrowed: everything the next iteration reads
/// (so a fit continued from it goes on exactly as it would have).
pub struct Snapshot<'a> {
    pub x: &'a [f64],
    pub g: &'a [f64],
    pub f: f64,
    /// Correction pairs, oldest first: (s, y, yᵀs).
    pub pairs: Vec<(&'a [f64], &'a [f64], f64)>,
    /// The objective at every iteration so far (the stopping rule's window).
    pub history: &'a [f64],
    pub iterations: usize,
    pub evaluations: usize,
    pub ops: u64,
    /// Training seconds so far.
    pub seconds: f64,
    pub last: Option<&'a IterReport>,
}

impl<'a> Snapshot<'a> {
    fn of(
        x: &'a [f64],
        g: &'a [f64],
        f: f64,
        pairs: &'a VecDeque<Pair>,
        history: &'a [f64],
        (iterations, ev, seconds): (usize, &Evaluator, f64),
        last: Option<&'a IterReport>,
    ) -> Self {
        Snapshot {
            x,
            g,
            f,
            pairs: pairs.iter().map(|p| (&p.s[..], &p.y[..], p.ys)).collect(),
            history,
            iterations,
            evaluations: ev.evaluations,
            ops: ev.ops,
            seconds,
            last,
        }
    }
}

/// A [`Snapshot`] owned: where [`minimize_from`] continues a fit.
#[derive(Clone, Debug, PartialEq)]
pub struct LbfgsState {
    pub x: Vec<f64>,
    pub g: Vec<f64>,
    pub f: f64,
    pub pairs: Vec<(Vec<f64>, Vec<f64>, f64)>,
    pub history: Vec<f64>,
    pub iterations: usize,
    pub evaluations: usize,
    pub ops: u64,
    pub seconds: f64,
    pub last: Option<IterReport>,
}

/// Where a fit starts: at weights, or where an earlier process left it.
pub enum Start {
    At(Vec<f64>),
    Resume(Box<LbfgsState>),
}

/// L-BFGS on `obj` from `theta0`, every iteration shown to `observer`.
pub fn minimize(
    obj: &dyn Objective,
    theta0: Vec<f64>,
    spec: &LbfgsSpec,
    cancel: &AtomicBool,
    observer: &mut dyn FnMut(&IterReport, &[f64]),
) -> Result<OptimResult> {
    minimize_from(
        obj,
        Start::At(theta0),
        spec,
        cancel,
        &mut Observer(observer),
    )
}

/// L-BFGS on `obj` from `start`, watched by `watch`. Resumed from a state, the iterates are
/// those of the fit never interrupted, bit for bit, when the objective is a function of θ alone
/// (on the same threads: see [`crate::estimators::objective`]).
pub fn minimize_from(
    obj: &dyn Objective,
    start: Start,
    spec: &LbfgsSpec,
    cancel: &AtomicBool,
    watch: &mut dyn Watch,
) -> Result<OptimResult> {
    let n = obj.n_params();
    let m = spec.m.max(1);
    let clock = Instant::now();
    // Time spent in the observer, not counted as training.
    let mut observed = std::time::Duration::ZERO;
    let mut ev = Evaluator {
        obj,
        cancel,
        evaluations: 0,
        ops: 0,
        last: Evaluation::default(),
    };
    let mut pairs: VecDeque<Pair> = VecDeque::with_capacity(m);
    let (mut x, mut g, mut f, mut history, mut iterations, mut last, earlier) = match start {
        Start::At(theta0) => {
            if theta0.len() != n {
                return Err(Error::invalid("initial parameters have the wrong length"));
            }
            let mut g = vec![0.0; n];
            let f = ev.eval(&theta0, &mut g).map_err(|e| match e {
                Error::Cancelled => e,
                e => Error::invalid(format!("optimiser: {e}")),
            })?;
            (theta0, g, f, vec![f], 0, None, 0.0)
        }
        Start::Resume(st) => {
            let st = *st;
            if st.x.len() != n
                || st.g.len() != n
                || st.pairs.len() > m
                || st.pairs.len() > st.iterations
                || st.history.len() != st.iterations.saturating_add(1)
            {
                return Err(Error::invalid(
                    "the checkpoint does not fit this model and optimiser",
                ));
            }
            for (s, y, ys) in st.pairs {
                if s.len() != n || y.len() != n {
                    return Err(Error::invalid("the checkpoint does not fit this model"));
                }
                pairs.push_back(Pair { s, y, ys });
            }
            ev.evaluations = st.evaluations;
            ev.ops = st.ops;
            (
                st.x,
                st.g,
                st.f,
                st.history,
                st.iterations,
                st.last,
                st.seconds,
            )
        }
    };
    let seconds =
        |observed: std::time::Duration| earlier + (clock.elapsed() - observed).as_secs_f64();
    // The trial point of the line search and its gradient; the search direction.
    let mut xt = vec![0.0; n];
    let mut gt = vec![0.0; n];
    let mut d = vec![0.0; n];
    let mut alpha = vec![0.0; m];
    let mut first_search = iterations == 0;
    let mut reason = StopReason::MaxIterations;
    let vec = Vectors { pool: obj.pool() };
    // The state between iterations, offered to the watch; `stopping` at a cancellation.
    macro_rules! keep {
        ($stopping:expr) => {{
            let secs = seconds(observed);
            let s = Snapshot::of(
                &x,
                &g,
                f,
                &pairs,
                &history,
                (iterations, &ev, secs),
                last.as_ref(),
            );
            watch.keep(&s, $stopping);
        }};
    }
    while iterations < spec.max_iter {
        if cancel.load(Ordering::Relaxed) {
            reason = StopReason::Cancelled;
            break;
        }
        two_loop(&vec, &pairs, &mut alpha, &g, &mut d);
        // libLBFGS's (and CRFsuite's) first step: 1/‖d‖ on the first search (no curvature
        // yet), else 1. Step 1 on the raw gradient would put the weights where
        // forward–backward needs its slow log-space fallback.
        let dn = vec.norm(&d);
        let step = if first_search && dn > 0.0 && dn.is_finite() {
            1.0 / dn
        } else {
            1.0
        };
        first_search = false;
        let ft = match more_thuente(&mut ev, &vec, &x, f, &g, &d, step, &mut xt, &mut gt) {
            Ok(ft) => ft,
            Err(SearchError::Objective(Error::Cancelled)) => {
                reason = StopReason::Cancelled;
                break;
            }
            Err(e) => {
                let msg = match e {
                    SearchError::Objective(e) => e.to_string(),
                    SearchError::Search(m) => m,
                };
                reason = if cancel.load(Ordering::Relaxed) {
                    StopReason::Cancelled
                } else {
                    StopReason::LineSearch(noisy(
                        format!("Line search terminated with: '{msg}'"),
                        &ev.last,
                    ))
                };
                break;
            }
        };
        // s = x' − x, y = g' − g, recycling the oldest pair's buffers once m are kept.
        let mut p = if pairs.len() >= m {
            pairs.pop_front().expect("m pairs")
        } else {
            Pair {
                s: vec![0.0; n],
                y: vec![0.0; n],
                ys: 0.0,
            }
        };
        vec.zip3(&mut p.s, &xt, &x, |a, b| a - b);
        vec.zip3(&mut p.y, &gt, &g, |a, b| a - b);
        p.ys = vec.dot(&p.y, &p.s);
        pairs.push_back(p);
        std::mem::swap(&mut x, &mut xt);
        std::mem::swap(&mut g, &mut gt);
        f = ft;
        iterations += 1;
        let gnorm = vec.norm(&g);
        let report = IterReport {
            iteration: iterations,
            objective: f,
            value: ev.last.value,
            grad_norm: gnorm,
            seconds: seconds(observed),
            evaluations: ev.evaluations,
            ops: ev.ops,
            bp_unconverged: ev.last.unconverged,
            paper_flops: obj.paper_flops().map(|fl| fl * ev.evaluations as f64),
            fit: None,
            violation: None,
            nota_terms: None,
        };
        let watching = Instant::now();
        watch.observe(&report, &x);
        observed += watching.elapsed();
        last = Some(report);
        history.push(f);
        if gnorm / vec.norm(&x).max(1.0) < spec.epsilon {
            reason = StopReason::SmallGradient;
            break;
        }
        if let Some(r) = period_stop(&history, spec.period, spec.delta) {
            reason = r;
            break;
        }
        if iterations < spec.max_iter {
            let watching = Instant::now();
            keep!(false);
            observed += watching.elapsed();
        }
    }
    // Cut short: the state is the start of the iteration that was (x, g and the pairs are
    // only replaced once its line search is done).
    if reason == StopReason::Cancelled && iterations > 0 {
        keep!(true);
    }
    Ok(OptimResult {
        theta: x,
        iterations,
        reason,
        last,
    })
}

/// The search direction by L-BFGS's two-loop recursion (argmin's order): q = g; q −= αᵢ yᵢ
/// newest first; r = γ q; r += sᵢ (αᵢ − βᵢ) oldest first; d = −r. `d` holds q, then r, then
/// the direction; `alpha` is scratch of m entries.
#[inline]
fn two_loop(vec: &Vectors, pairs: &VecDeque<Pair>, alpha: &mut [f64], g: &[f64], d: &mut [f64]) {
    let gamma = match pairs.back() {
        Some(p) => p.ys / vec.dot(&p.y, &p.y),
        None => 1.0,
    };
    d.copy_from_slice(g);
    for (i, p) in pairs.iter().enumerate().rev() {
        let a = vec.dot(&p.s, d) * (1.0 / p.ys);
        alpha[i] = a;
        vec.zip2(d, &p.y, |q, y| *q -= y * a);
    }
    vec.zip2(d, g, |r, _| *r *= gamma);
    for (i, p) in pairs.iter().enumerate() {
        let beta = vec.dot(&p.y, d) * (1.0 / p.ys);
        let c = alpha[i] - beta;
        vec.zip2(d, &p.s, |r, s| *r += s * c);
    }
    vec.zip2(d, g, |r, _| *r *= -1.0);
}

/// A line-search failure message, saying so when the last evaluation's BP had not converged
/// (its gradient is then noisy, the usual reason a line search fails in BP training).
fn noisy(msg: String, last: &Evaluation) -> String {
    let unconverged = last.unconverged;
    if unconverged > 0 {
        format!("{msg} (inference (BP, or CAMEL's δ sweeps) did not converge on {unconverged} instances: the gradient is noisy)")
    } else {
        msg
    }
}

/// A step of the line search: its length, value and directional derivative.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Step {
    x: f64,
    fx: f64,
    gx: f64,
}

impl Step {
    fn new(x: f64, fx: f64, gx: f64) -> Self {
        Step { x, fx, gx }
    }
}

/// More and Thuente's line search (ACM TOMS 20(3), 1994) as argmin 0.11 implements it, with its
/// constants (c1 = 1e-4, c2 = 0.9, width tolerance 1e-10, steps in [√ε, ∞)), from `x0` (value
/// `f0`, gradient `g0`) along `d`, first trying `step`. Leaves the accepted point in `xt` and its
/// gradient in `gt`; returns its value.
// The conditions are kept as More and Thuente (and argmin) write them.
#[allow(clippy::too_many_arguments, clippy::nonminimal_bool)]
fn more_thuente(
    ev: &mut Evaluator<'_, '_>,
    vec: &Vectors<'_>,
    x0: &[f64],
    f0: f64,
    g0: &[f64],
    d: &[f64],
    step: f64,
    xt: &mut [f64],
    gt: &mut [f64],
) -> std::result::Result<f64, SearchError> {
    const FTOL: f64 = 1e-4;
    const GTOL: f64 = 0.9;
    const XTRAPF: f64 = 4.0;
    const XTOL: f64 = 1e-10;
    let stpmin = f64::EPSILON.sqrt();
    let stpmax = f64::INFINITY;
    let finit = f0;
    let dginit = vec.dot(g0, d);
    if dginit >= 0.0 {
        return Err(SearchError::Search(
            "Condition violated: `MoreThuenteLineSearch`: Search direction must be a descent direction."
                .into(),
        ));
    }
    let mut brackt = false;
    let mut stage1 = true;
    let mut infoc = 1usize;
    let dgtest = FTOL * dginit;
    let mut width = stpmax - stpmin;
    let mut width1 = 2.0 * width;
    let mut stp = Step::new(step, f64::NAN, f64::NAN);
    let mut stx = Step::new(0.0, finit, dginit);
    let mut sty = Step::new(0.0, finit, dginit);
    loop {
        let (stmin, stmax) = if brackt {
            (stx.x.min(sty.x), stx.x.max(sty.x))
        } else {
            (stx.x, stp.x + XTRAPF * (stp.x - stx.x))
        };
        stp.x = stp.x.max(stpmin);
        stp.x = stp.x.min(stpmax);
        if (brackt && (stp.x <= stmin || stp.x >= stmax))
            || (brackt && (stmax - stmin) <= XTOL * stmax)
            || infoc == 0
        {
            stp.x = stx.x;
        }
        let a = stp.x;
        vec.zip3(xt, x0, d, |x, d| x + a * d);
        let fv = ev.eval(xt, gt).map_err(SearchError::Objective)?;
        let dg = vec.dot(d, gt);
        let ftest1 = finit + stp.x * dgtest;
        let mut info = 0;
        if (brackt && (stp.x <= stmin || stp.x >= stmax)) || infoc == 0 {
            info = 6;
        }
        if (stp.x - stpmax).abs() < f64::EPSILON && fv <= ftest1 && dg <= dgtest {
            info = 5;
        }
        if (stp.x - stpmin).abs() < f64::EPSILON && (fv > ftest1 || dg >= dgtest) {
            info = 4;
        }
        if brackt && stmax - stmin <= XTOL * stmax {
            info = 2;
        }
        if fv <= ftest1 && dg.abs() <= GTOL * (-dginit) {
            info = 1;
        }
        if info != 0 {
            return Ok(fv);
        }
        if stage1 && fv <= ftest1 && dg >= FTOL.min(GTOL) * dginit {
            stage1 = false;
        }
        if stage1 && fv <= stp.fx && fv > ftest1 {
            let fm = fv - stp.x * dgtest;
            let fxm = stx.fx - stx.x * dgtest;
            let fym = sty.fx - sty.x * dgtest;
            let dgm = dg - dgtest;
            let dgxm = stx.gx - dgtest;
            let dgym = sty.gx - dgtest;
            let (stx1, sty1, stp1, brackt1, c) = cstep(
                Step::new(stx.x, fxm, dgxm),
                Step::new(sty.x, fym, dgym),
                Step::new(stp.x, fm, dgm),
                brackt,
                stmin,
                stmax,
            )?;
            stx.x = stx1.x;
            sty.x = sty1.x;
            stx.fx += stx1.x * dgtest;
            sty.fx += sty1.x * dgtest;
            stx.gx += dgtest;
            sty.gx += dgtest;
            brackt = brackt1;
            stp = stp1;
            infoc = c;
        } else {
            let (stx1, sty1, stp1, brackt1, c) =
                cstep(stx, sty, Step::new(stp.x, fv, dg), brackt, stmin, stmax)?;
            stx = stx1;
            sty = sty1;
            stp = stp1;
            brackt = brackt1;
            infoc = c;
        }
        if brackt {
            if (sty.x - stx.x).abs() >= 0.66 * width1 {
                stp.x = stx.x + 0.5 * (sty.x - stx.x);
            }
            width1 = width;
            width = (sty.x - stx.x).abs();
        }
    }
}

/// γ of the cubic interpolating two steps (More and Thuente's cstep, in argmin's arithmetic):
/// `s·√((θ/s)² − (g1/s)(g2/s))` with s = max(θ, g1, g2), the root's argument clamped at 0 when
/// `clamp`. Non-finite inputs end the search.
/// The minimiser of the cubic through `stp` and `other` (values and slopes), taken from
/// `stp`'s side: `cstep`'s cases 2 and 4, whose arithmetic is the same with `other` = `stx` or
/// `sty` (the ratio's signs flip together, so the bits do too).
fn cubic_from(stp: &Step, other: &Step) -> std::result::Result<f64, SearchError> {
    let theta = 3.0 * (other.fx - stp.fx) / (stp.x - other.x) + other.gx + stp.gx;
    let mut gamma = cubic_gamma(theta, other.gx, stp.gx, false)?;
    if stp.x > other.x {
        gamma = -gamma;
    }
    let p = (gamma - stp.gx) + theta;
    let q = ((gamma - stp.gx) + gamma) + other.gx;
    let r = p / q;
    Ok(stp.x + r * (other.x - stp.x))
}

fn cubic_gamma(theta: f64, g1: f64, g2: f64, clamp: bool) -> std::result::Result<f64, SearchError> {
    let tmp = [theta, g1, g2];
    if tmp.iter().any(|n| !n.is_finite()) {
        return Err(SearchError::Search(
            "Condition violated: MoreThuenteLineSearch: NaN or Inf encountered during iteration"
                .into(),
        ));
    }
    // Finite, so the comparison never fails; argmin's max, to the signed zero.
    let s = *tmp
        .iter()
        .max_by(|a, b| a.partial_cmp(b).expect("finite"))
        .expect("three values");
    let arg = (theta / s).powi(2) - (g1 / s) * (g2 / s);
    Ok(s * if clamp {
        0.0f64.max(arg).sqrt()
    } else {
        arg.sqrt()
    })
}

/// One safeguarded step of More–Thuente (their `cstep`, as argmin 0.11 has it): updates the
/// interval of uncertainty `[stx, sty]` and picks the next trial step. `stpmin`/`stpmax` bound
/// the step. Returns the new `stx`, `sty`, `stp`, whether a minimiser is bracketed, and `info`.
fn cstep(
    stx: Step,
    sty: Step,
    stp: Step,
    brackt: bool,
    stpmin: f64,
    stpmax: f64,
) -> std::result::Result<(Step, Step, Step, bool, usize), SearchError> {
    let mut info: usize = 0;
    let bound: bool;
    let mut stpf: f64;
    let stpc: f64;
    let stpq: f64;
    let mut brackt = brackt;

    if (brackt && (stp.x <= stx.x.min(sty.x) || stp.x >= stx.x.max(sty.x)))
        || stx.gx * (stp.x - stx.x) >= 0.0
        || stpmax < stpmin
    {
        return Ok((stx, sty, stp, brackt, info));
    }

    let sgnd = stp.gx * (stx.gx / stx.gx.abs());

    if stp.fx > stx.fx {
        info = 1;
        bound = true;
        let theta = 3.0 * (stx.fx - stp.fx) / (stp.x - stx.x) + stx.gx + stp.gx;
        let mut gamma = cubic_gamma(theta, stx.gx, stp.gx, false)?;
        if stp.x < stx.x {
            gamma = -gamma;
        }

        let p = (gamma - stx.gx) + theta;
        let q = ((gamma - stx.gx) + gamma) + stp.gx;
        let r = p / q;
        stpc = stx.x + r * (stp.x - stx.x);
        stpq = stx.x
            + ((stx.gx / ((stx.fx - stp.fx) / (stp.x - stx.x) + stx.gx)) / 2.0) * (stp.x - stx.x);
        if (stpc - stx.x).abs() < (stpq - stx.x).abs() {
            stpf = stpc;
        } else {
            stpf = stpc + (stpq - stpc) / 2.0;
        }
        brackt = true;
    } else if sgnd < 0.0 {
        info = 2;
        bound = false;
        stpc = cubic_from(&stp, &stx)?;
        stpq = stp.x + (stp.gx / (stp.gx - stx.gx)) * (stx.x - stp.x);
        if (stpc - stp.x).abs() > (stpq - stp.x).abs() {
            stpf = stpc;
        } else {
            stpf = stpq;
        }
        brackt = true;
    } else if stp.gx.abs() < stx.gx.abs() {
        info = 3;
        bound = true;
        let theta = 3.0 * (stx.fx - stp.fx) / (stp.x - stx.x) + stx.gx + stp.gx;
        let mut gamma = cubic_gamma(theta, stx.gx, stp.gx, true)?;
        if stp.x > stx.x {
            gamma = -gamma;
        }

        let p = (gamma - stp.gx) + theta;
        let q = (gamma + (stx.gx - stp.gx)) + gamma;
        let r = p / q;
        if r < 0.0 && gamma != 0.0 {
            stpc = stp.x + r * (stx.x - stp.x);
        } else if stp.x > stx.x {
            stpc = stpmax;
        } else {
            stpc = stpmin;
        }
        stpq = stp.x + (stp.gx / (stp.gx - stx.gx)) * (stx.x - stp.x);
        if brackt {
            if (stp.x - stpc).abs() < (stp.x - stpq).abs() {
                stpf = stpc;
            } else {
                stpf = stpq;
            }
        } else if (stp.x - stpc).abs() > (stp.x - stpq).abs() {
            stpf = stpc;
        } else {
            stpf = stpq;
        }
    } else {
        info = 4;
        bound = false;
        if brackt {
            stpc = cubic_from(&stp, &sty)?;
            stpf = stpc;
        } else if stp.x > stx.x {
            stpf = stpmax;
        } else {
            stpf = stpmin;
        }
    }

    let mut stx_o = stx;
    let mut sty_o = sty;
    let mut stp_o = stp;
    if stp_o.fx > stx_o.fx {
        sty_o = Step::new(stp_o.x, stp_o.fx, stp_o.gx);
    } else {
        if sgnd < 0.0 {
            sty_o = Step::new(stx_o.x, stx_o.fx, stx_o.gx);
        }
        stx_o = Step::new(stp_o.x, stp_o.fx, stp_o.gx);
    }

    stpf = stpmax.min(stpf);
    stpf = stpmin.max(stpf);

    stp_o.x = stpf;
    if brackt && bound {
        if sty_o.x > stx_o.x {
            stp_o.x = stp_o.x.min(stx_o.x + 0.66 * (sty_o.x - stx_o.x));
        } else {
            stp_o.x = stp_o.x.max(stx_o.x + 0.66 * (sty_o.x - stx_o.x));
        }
    }

    Ok((stx_o, sty_o, stp_o, brackt, info))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::{dot8 as dot, DOT_BLOCK};

    /// f(x) = Σ_i a_i (x_i − c_i)² + (x_0 x_1 − 1)²/4 (convex near its minimum), gradient exact.
    struct Bowl {
        a: Vec<f64>,
        c: Vec<f64>,
    }

    impl Objective for Bowl {
        fn n_params(&self) -> usize {
            self.a.len()
        }
        fn evaluate(&self, x: &[f64], grad: Option<&mut [f64]>) -> Evaluation {
            let mut f = 0.0;
            let mut g = vec![0.0; x.len()];
            for i in 0..x.len() {
                f += self.a[i] * (x[i] - self.c[i]).powi(2);
                g[i] = 2.0 * self.a[i] * (x[i] - self.c[i]);
            }
            let r = x[0] * x[1] - 1.0;
            f += r * r / 4.0;
            g[0] += r / 2.0 * x[1];
            g[1] += r / 2.0 * x[0];
            if let Some(out) = grad {
                out.copy_from_slice(&g);
            }
            Evaluation {
                objective: f,
                value: -f,
                ops: 0,
                unconverged: 0,
            }
        }
    }

    fn bowl(n: usize) -> Bowl {
        Bowl {
            a: (0..n).map(|i| 1.0 + (i % 7) as f64).collect(),
            c: (0..n).map(|i| ((i * 37 % 11) as f64 - 5.0) / 3.0).collect(),
        }
    }

    #[test]
    fn dot_is_the_eight_way_sum() {
        let xs: Vec<f64> = (0..29).map(|i| 0.1 * i as f64 - 1.3).collect();
        let ys: Vec<f64> = (0..29).map(|i| (i as f64).sin()).collect();
        let mut p = [0.0; 8];
        for i in 0..24 {
            p[i % 8] += xs[i] * ys[i];
        }
        let mut want = 0.0;
        for k in 0..4 {
            want += p[k] + p[k + 4];
        }
        for i in 24..29 {
            want += xs[i] * ys[i];
        }
        assert_eq!(dot(&xs, &ys).to_bits(), want.to_bits());
        let naive: f64 = xs.iter().zip(&ys).map(|(a, b)| a * b).sum();
        assert!((dot(&xs, &ys) - naive).abs() < 1e-12);
    }

    #[test]
    fn a_long_dot_is_its_blocks_summed_in_order_on_any_thread_count() {
        let n = 3 * DOT_BLOCK + 1234;
        let xs: Vec<f64> = (0..n)
            .map(|i| ((i * 7919) % 1000) as f64 * 1e-3 - 0.4)
            .collect();
        let ys: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).cos()).collect();
        let want: f64 = xs
            .chunks(DOT_BLOCK)
            .zip(ys.chunks(DOT_BLOCK))
            .map(|(a, b)| dot(a, b))
            .sum();
        let naive: f64 = xs.iter().zip(&ys).map(|(a, b)| a * b).sum();
        assert!((want - naive).abs() < 1e-9 * naive.abs().max(1.0));
        for threads in [1, 2, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let v = Vectors { pool: Some(&pool) };
            assert_eq!(v.dot(&xs, &ys).to_bits(), want.to_bits(), "{threads}");
            assert_eq!(v.norm(&xs), v.dot(&xs, &xs).sqrt());
        }
        assert_eq!(
            Vectors { pool: None }.dot(&xs, &ys).to_bits(),
            want.to_bits()
        );
        // One block or less: argmin's eight-way dot itself.
        let short = &xs[..1000];
        assert_eq!(
            Vectors { pool: None }.dot(short, short).to_bits(),
            dot(short, short).to_bits()
        );
    }

    /// Keeps the state after iteration `at` (owned), and counts iterations seen.
    struct KeepAt {
        at: usize,
        kept: Option<LbfgsState>,
        seen: Vec<usize>,
    }

    impl Watch for KeepAt {
        fn observe(&mut self, r: &IterReport, _: &[f64]) {
            self.seen.push(r.iteration);
        }
        fn keep(&mut self, s: &Snapshot, _: bool) {
            if s.iterations == self.at {
                self.kept = Some(LbfgsState {
                    x: s.x.to_vec(),
                    g: s.g.to_vec(),
                    f: s.f,
                    pairs: s
                        .pairs
                        .iter()
                        .map(|(a, b, c)| (a.to_vec(), b.to_vec(), *c))
                        .collect(),
                    history: s.history.to_vec(),
                    iterations: s.iterations,
                    evaluations: s.evaluations,
                    ops: s.ops,
                    seconds: s.seconds,
                    last: s.last.cloned(),
                });
            }
        }
    }

    #[test]
    fn a_fit_resumed_from_any_iteration_ends_bit_for_bit_where_the_whole_fit_ends() {
        let obj = bowl(30);
        let x0: Vec<f64> = (0..30).map(|i| (i as f64 * 0.7).cos() * 3.0).collect();
        // m = 3 < the iterations before the cut, so recycled pairs are resumed too.
        let spec = LbfgsSpec {
            m: 3,
            delta: 1e-12,
            epsilon: 1e-12,
            ..Default::default()
        };
        let cancel = AtomicBool::new(false);
        let whole = minimize(&obj, x0.clone(), &spec, &cancel, &mut |_, _| {}).unwrap();
        assert!(whole.iterations > 8, "{} iterations", whole.iterations);
        for at in [1, 2, 5, whole.iterations - 1] {
            let mut w = KeepAt {
                at,
                kept: None,
                seen: vec![],
            };
            minimize_from(&obj, Start::At(x0.clone()), &spec, &cancel, &mut w).unwrap();
            let state = w.kept.expect("a state after that iteration");
            let mut rest = KeepAt {
                at: 0,
                kept: None,
                seen: vec![],
            };
            let r = minimize_from(
                &obj,
                Start::Resume(Box::new(state)),
                &spec,
                &cancel,
                &mut rest,
            )
            .unwrap();
            assert_eq!(rest.seen.first(), Some(&(at + 1)), "numbering goes on");
            assert_eq!(r.iterations, whole.iterations);
            assert_eq!(r.reason, whole.reason);
            let bits = |t: &[f64]| t.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&r.theta), bits(&whole.theta), "resumed after {at}");
            assert_eq!(
                r.last.unwrap().evaluations,
                whole.last.as_ref().unwrap().evaluations
            );
        }
    }

    #[test]
    fn a_cancelled_fit_keeps_the_state_it_stopped_in() {
        let obj = bowl(10);
        let cancel = AtomicBool::new(false);
        struct CancelAt<'c>(&'c AtomicBool, Option<usize>);
        impl Watch for CancelAt<'_> {
            fn observe(&mut self, r: &IterReport, _: &[f64]) {
                if r.iteration == 3 {
                    self.0.store(true, Ordering::Relaxed);
                }
            }
            fn keep(&mut self, s: &Snapshot, stopping: bool) {
                if stopping {
                    self.1 = Some(s.iterations);
                }
            }
        }
        let mut w = CancelAt(&cancel, None);
        let r = minimize_from(
            &obj,
            Start::At(vec![1.0; 10]),
            &LbfgsSpec::default(),
            &cancel,
            &mut w,
        )
        .unwrap();
        assert_eq!(r.reason, StopReason::Cancelled);
        assert_eq!(w.1, Some(3));
    }

    #[test]
    fn finds_the_minimum_where_the_gradient_vanishes() {
        let obj = bowl(40);
        let spec = LbfgsSpec {
            delta: 0.0,
            epsilon: 1e-8,
            ..LbfgsSpec::default()
        };
        let mut seen = 0;
        let r = minimize(
            &obj,
            vec![0.0; 40],
            &spec,
            &AtomicBool::new(false),
            &mut |rep, _| {
                seen += 1;
                assert_eq!(rep.iteration, seen);
            },
        )
        .unwrap();
        assert_eq!(r.reason, StopReason::SmallGradient);
        let mut g = vec![0.0; 40];
        obj.evaluate(&r.theta, Some(&mut g));
        let gn = g.iter().map(|v| v * v).sum::<f64>().sqrt();
        assert!(gn < 1e-7, "‖g‖ = {gn}");
        // Away from x_0, x_1 the minimum is c.
        for i in 2..40 {
            assert!((r.theta[i] - obj.c[i]).abs() < 1e-7);
        }
        // L-BFGS with the objective's values decreasing at every iteration.
        assert!(r.iterations > 3 && r.iterations < 200);
    }

    #[test]
    fn accepted_steps_satisfy_the_strong_wolfe_conditions() {
        let obj = bowl(6);
        let x0 = vec![2.0, -1.0, 0.5, 0.0, 3.0, -2.0];
        let mut g0 = vec![0.0; 6];
        let f0 = obj.evaluate(&x0, Some(&mut g0)).objective;
        let d: Vec<f64> = g0.iter().map(|g| -g).collect();
        let cancel = AtomicBool::new(false);
        let vec = Vectors { pool: None };
        for step in [1e-3, 0.05, 1.0, 30.0] {
            let mut ev = Evaluator {
                obj: &obj,
                cancel: &cancel,
                evaluations: 0,
                ops: 0,
                last: Evaluation::default(),
            };
            let (mut xt, mut gt) = (vec![0.0; 6], vec![0.0; 6]);
            let ft = more_thuente(&mut ev, &vec, &x0, f0, &g0, &d, step, &mut xt, &mut gt)
                .unwrap_or_else(|_| panic!("search from step {step}"));
            let dg0: f64 = g0.iter().zip(&d).map(|(a, b)| a * b).sum();
            let dgt: f64 = gt.iter().zip(&d).map(|(a, b)| a * b).sum();
            // The step taken: xt = x0 + α d.
            let alpha = (xt[0] - x0[0]) / d[0];
            assert!(alpha > 0.0);
            assert!(
                ft <= f0 + 1e-4 * alpha * dg0,
                "sufficient decrease from step {step}"
            );
            assert!(
                dgt.abs() <= 0.9 * dg0.abs() + 1e-12,
                "curvature from step {step}"
            );
            assert_eq!(ft, obj.evaluate(&xt, None).objective);
        }
    }

    #[test]
    fn an_ascent_direction_and_a_cancel_stop_the_search() {
        let obj = bowl(3);
        let x0 = vec![1.0, 1.0, 1.0];
        let mut g0 = vec![0.0; 3];
        let f0 = obj.evaluate(&x0, Some(&mut g0)).objective;
        let cancel = AtomicBool::new(false);
        let mut ev = Evaluator {
            obj: &obj,
            cancel: &cancel,
            evaluations: 0,
            ops: 0,
            last: Evaluation::default(),
        };
        let (mut xt, mut gt) = (vec![0.0; 3], vec![0.0; 3]);
        let vec = Vectors { pool: None };
        let up = g0.clone();
        assert!(matches!(
            more_thuente(&mut ev, &vec, &x0, f0, &g0, &up, 1.0, &mut xt, &mut gt),
            Err(SearchError::Search(m)) if m.contains("descent direction")
        ));
        cancel.store(true, Ordering::Relaxed);
        let r = minimize(&obj, x0, &LbfgsSpec::default(), &cancel, &mut |_, _| {});
        assert!(matches!(r, Err(Error::Cancelled)));
    }

    #[test]
    fn a_risen_objective_is_not_called_converged() {
        // Improving by less than δ over the period: converged; rising: not.
        assert_eq!(period_stop(&[10.0, 9.0, 8.0], 2, 1e-5), None);
        assert_eq!(
            period_stop(&[10.0, 9.0, 10.0 - 1e-9], 2, 1e-5),
            Some(StopReason::Converged)
        );
        assert_eq!(
            period_stop(&[10.0, 9.0, 12.0], 2, 1e-5),
            Some(StopReason::ObjectiveRose)
        );
        assert_eq!(period_stop(&[10.0, 12.0], 2, 1e-5), None);
        assert_eq!(period_stop(&[10.0, 12.0], 0, 1e-5), None);
    }
}
