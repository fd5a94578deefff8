//! Inference as a service: forward–backward and Viterbi on chains, exact enumeration for small
//! graphs, loopy belief propagation on any factor graph. It knows nothing about estimators.

pub mod bp;
pub mod chain;
pub mod enumerate;
pub mod transitions;

pub use bp::{tree_bp_options, BpMessages, BpOptions, BpReport, BpWork, Schedule, Semiring};
pub use chain::ChainWork;
pub use enumerate::{enumerate, Enumeration, MAX_ENUMERATION_STATES};

/// What a caller asks of inference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Task {
    /// Marginals (and log Z).
    Marginals,
    /// The most probable assignment.
    Map,
}

/// An inference algorithm, as [`choose`] picks it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// Forward–backward (or Viterbi) on a chain: exact.
    ForwardBackward,
    /// Forward–backward (or Viterbi) over the joint states of a ladder's positions: exact.
    ProductForwardBackward,
    /// Belief propagation on a forest: exact.
    TreeBp,
    /// Enumeration of every joint state: exact, for small graphs.
    Enumeration,
    /// Loopy belief propagation: the approximation left when nothing exact fits.
    LoopyBp,
}

/// The one place that picks inference by an instance's shape (libDAI's `newInfAlg` idea): the
/// exact method the structure allows, enumeration up to `max_enumeration` joint states, loopy BP
/// otherwise. For MAP a ladder's joint-state Viterbi comes before max-product on a forest; for
/// marginals tree BP comes first (the joint states are only worth it when the ladder is loopy).
pub fn choose(inst: &crate::graph::Instance, task: Task, max_enumeration: u128) -> Method {
    if inst.chain.is_some() {
        Method::ForwardBackward
    } else if task == Task::Map && inst.product.is_some() {
        Method::ProductForwardBackward
    } else if inst.forest {
        Method::TreeBp
    } else if inst.product.is_some() {
        Method::ProductForwardBackward
    } else if inst.joint_states() <= max_enumeration {
        Method::Enumeration
    } else {
        Method::LoopyBp
    }
}

/// Per-thread inference scratch: chain buffers, BP scratch, and the BP messages of the instance
/// at hand (a caller that keeps messages per instance swaps them in here to warm-start).
#[derive(Clone, Debug, Default)]
pub struct InferWork {
    pub chain: ChainWork,
    pub bp: BpWork,
    pub msgs: BpMessages,
    /// Counted multiply-adds since the last take.
    pub ops: u64,
    /// BP calls that ended unconverged since the last take.
    pub unconverged: u64,
}

impl InferWork {
    /// Counted multiply-adds and unconverged BP calls since the last call.
    pub fn take_counts(&mut self) -> (u64, u64) {
        (
            std::mem::take(&mut self.chain.ops) + std::mem::take(&mut self.ops),
            std::mem::take(&mut self.unconverged),
        )
    }
}

/// Per-factor marginal tables of one instance, for inspection.
#[derive(Clone, Debug, Default)]
pub struct FactorMarginals {
    /// Exact marginals, when the graph allows exact inference, and how they were computed.
    pub exact: Option<(Vec<Vec<f64>>, &'static str)>,
    /// Loopy BP's factor beliefs and its report (graphs that are not chains).
    pub beliefs: Option<(Vec<Vec<f64>>, BpReport)>,
}

/// Graphs with at most this many joint states get exact marginals by enumeration.
pub const INSPECT_ENUMERATION_STATES: u128 = 1 << 18;

/// Per-factor marginals by the best exact method the graph allows — forward–backward on a
/// chain, BP on a forest, enumeration on a small graph — and, on every graph that is not a
/// chain, sum-product BP's factor beliefs beside them (with `opts`).
pub fn factor_marginals(
    inst: &crate::graph::Instance,
    phi: &[f64],
    opts: &BpOptions,
) -> FactorMarginals {
    let mut out = FactorMarginals::default();
    if let Some(lay) = &inst.chain {
        let mut work = ChainWork::default();
        work.forward_backward(inst, lay, phi);
        let l = lay.l;
        let m = inst
            .factors
            .iter()
            .map(|f| match *inst.scope(f) {
                [v] => (0..l).map(|y| work.node_marginal(v as usize, y)).collect(),
                [_, b] => (0..l * l)
                    .map(|i| work.pair_marginal(b as usize, i / l, i % l))
                    .collect(),
                _ => vec![],
            })
            .collect();
        out.exact = Some((m, "forward–backward"));
        return out;
    }
    let mut work = BpWork::default();
    let mut msgs = BpMessages::default();
    let report = bp::run(inst, phi, opts, Semiring::SumProduct, &mut msgs, &mut work);
    let beliefs: Vec<Vec<f64>> = (0..inst.factors.len())
        .map(|f| {
            let mut b = Vec::new();
            msgs.factor_belief(inst, phi, f, &mut work, &mut b);
            b
        })
        .collect();
    match choose(inst, Task::Marginals, INSPECT_ENUMERATION_STATES) {
        Method::ProductForwardBackward => {
            let lay = inst.product.as_ref().expect("chosen for a ladder");
            let mut work = ChainWork::default();
            work.forward_backward_product(inst, lay, phi);
            out.exact = Some((
                work.factor_marginals_product(inst, lay),
                "forward–backward over joint states",
            ));
        }
        Method::TreeBp if report.converged => {
            out.exact = Some((beliefs.clone(), "BP (exact on a forest)"));
        }
        Method::Enumeration => {
            let mut m: Vec<Vec<f64>> = inst
                .factors
                .iter()
                .map(|f| vec![0.0; inst.table(f, phi).len()])
                .collect();
            let log_z = enumerate(inst, phi).map(|e| e.log_z).unwrap_or(f64::NAN);
            enumerate::for_each_assignment(&inst.card, |y| {
                let p = (inst.score(phi, y) - log_z).exp();
                for (fm, f) in m.iter_mut().zip(&inst.factors) {
                    fm[inst.entry(f, y)] += p;
                }
            });
            out.exact = Some((m, "enumeration"));
        }
        _ => {}
    }
    out.beliefs = Some((beliefs, report));
    out
}

/// Exact node marginals and log Z: forward–backward on a chain, BP on a forest, forward–backward
/// over joint states on a ladder, enumeration otherwise (an error when the graph is too large).
pub fn exact_node_marginals(
    inst: &crate::graph::Instance,
    phi: &[f64],
) -> crate::Result<(Vec<Vec<f64>>, f64)> {
    let (m, log_z) = exact_node_marginals_by_shape(inst, phi)?;
    // Evidence or tables that rule out every assignment leave nothing to normalise: say so
    // rather than answer NaN.
    if log_z.is_nan() || log_z == f64::NEG_INFINITY {
        return Err(crate::Error::invalid(
            "every assignment has probability zero (log Z = −∞): the evidence contradicts the \
             model's zero entries",
        ));
    }
    Ok((m, log_z))
}

fn exact_node_marginals_by_shape(
    inst: &crate::graph::Instance,
    phi: &[f64],
) -> crate::Result<(Vec<Vec<f64>>, f64)> {
    match choose(inst, Task::Marginals, MAX_ENUMERATION_STATES) {
        Method::ForwardBackward => {
            let lay = inst.chain.as_ref().expect("chosen for a chain");
            let mut work = ChainWork::default();
            let log_z = work.forward_backward(inst, lay, phi);
            let m = (0..inst.n_vars())
                .map(|t| (0..lay.l).map(|y| work.node_marginal(t, y)).collect())
                .collect();
            Ok((m, log_z))
        }
        Method::TreeBp => {
            let (m, report, log_z) = bp_node_marginals(inst, phi, &tree_bp_options(inst.n_vars()));
            debug_assert!(report.converged);
            Ok((m, log_z))
        }
        Method::ProductForwardBackward => {
            let lay = inst.product.as_ref().expect("chosen for a ladder");
            let mut work = ChainWork::default();
            let log_z = work.forward_backward_product(inst, lay, phi);
            Ok((work.var_marginals_product(lay), log_z))
        }
        // Past the limit, enumeration says how large the graph is.
        Method::Enumeration | Method::LoopyBp => {
            let e = enumerate(inst, phi)?;
            Ok((e.node_marginals, e.log_z))
        }
    }
}

/// Sum-product BP's node beliefs, its report and its log Z estimate (−F_Bethe).
pub fn bp_node_marginals(
    inst: &crate::graph::Instance,
    phi: &[f64],
    opts: &BpOptions,
) -> (Vec<Vec<f64>>, BpReport, f64) {
    let mut work = BpWork::default();
    let mut msgs = BpMessages::default();
    let report = bp::run(inst, phi, opts, Semiring::SumProduct, &mut msgs, &mut work);
    let m = (0..inst.n_vars())
        .map(|v| {
            let mut b = Vec::new();
            msgs.var_belief(v, &mut b);
            b
        })
        .collect();
    let log_z = -msgs.bethe_free_energy(inst, phi, &mut work);
    (m, report, log_z)
}
