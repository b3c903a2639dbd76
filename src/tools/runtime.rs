//! The runtime boundary the loop calls: anything that turns a tool call into an observation. The
//! registry is the real one; replay serves recorded observations through the same door.

use super::outcome::{ToolOutcome, ToolPanic};
use crate::run::ToolCall;

/// Runs tool calls for the loop.
pub trait ToolRuntime {
    /// The observation for `call`, or a panic that ends the run as an internal error.
    fn execute(&self, call: &ToolCall) -> Result<ToolOutcome, ToolPanic>;

    /// Each tool's name and `spec_hash`, recorded as `run_started.tools`; empty (the default)
    /// records nothing, as for the built-in calculator alone.
    fn spec_hashes(&self) -> Vec<(String, String)> {
        Vec::new()
    }
}
