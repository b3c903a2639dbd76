//! What the loop asks of a finish gate, and what a gate answers.

use thiserror::Error;

/// The text a rejection shows the model when the gate printed nothing.
pub const EMPTY_REJECTION: &str = "the finish gate rejected the answer and printed nothing";

/// Decides whether a proposed answer ends the run.
pub trait FinishGate {
    /// Checks `answer`. `Ok` is a decision (accepted or rejected, with the gate's output);
    /// `Err` means the gate could not run or could not decide, which ends the run as an
    /// internal error, never as an accept.
    fn check(&mut self, answer: &str) -> Result<GateVerdict, GateFailure>;

    /// A hash of the gate's configuration, written as `run_started.finish_gate_hash` so that
    /// runs checked by different gates can be told apart without recording the gate itself.
    fn config_hash(&self) -> String;
}

/// A gate's decision on one answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GateVerdict {
    /// Whether the run may end with this answer.
    pub accepted: bool,
    /// The gate's output, cut to its head and tail; a rejection shows it to the model.
    pub output: String,
}

impl GateVerdict {
    /// The feedback a rejected model reads: the gate's output, or [`EMPTY_REJECTION`] when it
    /// printed nothing.
    pub fn feedback(&self) -> &str {
        if self.output.is_empty() {
            EMPTY_REJECTION
        } else {
            &self.output
        }
    }
}

/// A gate that could not run or could not decide.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("finish gate failed: {message}")]
pub struct GateFailure {
    /// What went wrong, such as a missing program or a timeout.
    pub message: String,
}

impl GateFailure {
    /// A failure with this message.
    pub fn new(message: impl Into<String>) -> Self {
        GateFailure {
            message: message.into(),
        }
    }
}
