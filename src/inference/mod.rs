//! Inference as a service: forward–backward and Viterbi on chains, exact enumeration for small
//! graphs, loopy belief propagation on any factor graph. It knows nothing about estimators.

pub mod bp;
pub mod chain;
pub mod enumerate;

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
