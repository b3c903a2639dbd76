//! The finish gate: a model's `Finish` is a request to end, accepted only when a check passes.
//! When the check rejects the answer, its output goes back to the model as feedback and the run
//! goes on while budget remains. [`FinishGate`] is the contract the loop calls; [`CommandGate`]
//! runs a program with the answer on stdin; [`RecordedGate`] serves the verdicts of a recording.

mod command;
mod contract;
mod recorded;

pub use crate::process::cut_output;
pub use command::{CommandGate, CommandGateConfig};
pub use contract::{EMPTY_REJECTION, FinishGate, GateFailure, GateVerdict};
pub use recorded::{RecordedGate, RecordedVerdict};
