//! `RecordedGate`: serves the verdicts of a recording in order, for replay without rerunning the
//! gate.

use std::collections::VecDeque;

use super::contract::{FinishGate, GateFailure, GateVerdict};

/// One recorded verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedVerdict {
    /// The step of the finish it checked.
    pub step: u64,
    /// The verdict with the recorded output.
    pub verdict: GateVerdict,
}

/// Serves recorded verdicts in order.
#[derive(Clone, Debug)]
pub struct RecordedGate {
    verdicts: VecDeque<RecordedVerdict>,
    hash: String,
}

impl RecordedGate {
    /// A gate serving `verdicts` in order, reporting `hash` as its configuration.
    pub fn new(verdicts: Vec<RecordedVerdict>, hash: String) -> Self {
        RecordedGate {
            verdicts: verdicts.into(),
            hash,
        }
    }
}

impl FinishGate for RecordedGate {
    fn check(&mut self, _answer: &str) -> Result<GateVerdict, GateFailure> {
        self.verdicts
            .pop_front()
            .map(|recorded| recorded.verdict)
            .ok_or_else(|| GateFailure::new("no recorded gate verdict for this finish"))
    }

    fn config_hash(&self) -> String {
        self.hash.clone()
    }
}
