//! Inference as a service: forward–backward and Viterbi on chains, exact enumeration for small
//! graphs, loopy belief propagation on any factor graph. It knows nothing about estimators.

pub mod bp;
pub mod chain;
pub mod enumerate;
pub mod transitions;

pub use bp::{BpMessages, BpOptions, BpReport, BpWork, Schedule, Semiring};
pub use chain::ChainWork;
pub use enumerate::{enumerate, Enumeration, MAX_ENUMERATION_STATES};

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
    if let (Some(lay), false) = (&inst.product, inst.forest) {
        let mut work = ChainWork::default();
        work.forward_backward_product(inst, lay, phi);
        out.exact = Some((
            work.factor_marginals_product(inst, lay),
            "forward–backward over joint states",
        ));
    } else if inst.forest && report.converged {
        out.exact = Some((beliefs.clone(), "BP (exact on a forest)"));
    } else if inst.joint_states() <= INSPECT_ENUMERATION_STATES {
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
    out.beliefs = Some((beliefs, report));
    out
}

/// Exact node marginals and log Z: forward–backward on a chain, BP on a forest, forward–backward
/// over joint states on a ladder, enumeration otherwise (an error when the graph is too large).
pub fn exact_node_marginals(
    inst: &crate::graph::Instance,
    phi: &[f64],
) -> crate::Result<(Vec<Vec<f64>>, f64)> {
    if let Some(lay) = &inst.chain {
        let mut work = ChainWork::default();
        let log_z = work.forward_backward(inst, lay, phi);
        let m = (0..inst.n_vars())
            .map(|t| (0..lay.l).map(|y| work.node_marginal(t, y)).collect())
            .collect();
        return Ok((m, log_z));
    }
    if inst.forest {
        let opts = crate::estimators::terms::tree_bp_options(inst);
        let (m, report, log_z) = bp_node_marginals(inst, phi, &opts);
        debug_assert!(report.converged);
        return Ok((m, log_z));
    }
    if let Some(lay) = &inst.product {
        let mut work = ChainWork::default();
        let log_z = work.forward_backward_product(inst, lay, phi);
        return Ok((work.var_marginals_product(lay), log_z));
    }
    let e = enumerate(inst, phi)?;
    Ok((e.node_marginals, e.log_z))
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
