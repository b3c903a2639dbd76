//! `RecordedTools`: a tool runtime that serves a recording's observations in order, like a VCR
//! cassette, for runs whose tools are not built in. Each call gets the next recorded observation
//! with its recorded content, `is_error` and error kind; a call for another tool than the recorded
//! one gets an error observation saying so, and a recorded tool panic (or a tool server that
//! failed) is replayed as the same internal error.

use std::cell::Cell;

use super::recording::{RecordedObservation, Recording};
use crate::run::{ExitReason, Observation, ToolCall};
use crate::tools::{TOOL_PANIC, TOOL_SERVER_FAILED, ToolOutcome, ToolPanic, ToolRuntime};

/// The error kind of the observation served for a call of another tool than the recorded one.
pub const TOOL_MISMATCH: &str = "replay_tool_mismatch";

/// The error kind of the observation served for a call past the recorded observations.
pub const NOT_RECORDED: &str = "replay_not_recorded";

/// Serves recorded observations in order, borrowed from the recording.
#[derive(Debug)]
pub struct RecordedTools<'r> {
    observations: Vec<&'r RecordedObservation>,
    last_step: u64,
    /// The recorded fatal tool failure: its kind and error text.
    panic: Option<(String, String)>,
    next: Cell<usize>,
    panicked: Cell<bool>,
}

impl<'r> RecordedTools<'r> {
    /// A cassette of the recording's observations. If the recorded run ended with a tool panic,
    /// the call after the last recorded observation panics the same way.
    pub fn new(recording: &'r Recording) -> Self {
        let panic = recording
            .ending()
            .and_then(|e| match e.error_kind.as_deref() {
                Some(kind @ (TOOL_PANIC | TOOL_SERVER_FAILED))
                    if e.exit_reason == ExitReason::InternalError =>
                {
                    Some((kind.to_owned(), e.error.clone().unwrap_or_default()))
                }
                _ => None,
            });
        RecordedTools {
            observations: recording.observations().collect(),
            last_step: recording.steps().last().map_or(0, |s| s.step),
            panic,
            next: Cell::new(0),
            panicked: Cell::new(false),
        }
    }

    /// How many recorded observations have been served.
    pub fn served(&self) -> usize {
        self.next.get()
    }
}

impl ToolRuntime for RecordedTools<'_> {
    fn execute(&self, call: &ToolCall) -> Result<ToolOutcome, ToolPanic> {
        let index = self.next.get();
        let Some(&recorded) = self.observations.get(index) else {
            if let Some((kind, error)) = &self.panic
                && !self.panicked.replace(true)
            {
                let mut panic = ToolPanic::new(
                    call.tool_name.clone(),
                    panic_message(error, &call.tool_name),
                );
                panic.kind.clone_from(kind);
                return Err(panic);
            }
            return Ok(ToolOutcome::error(
                call,
                NOT_RECORDED,
                format!(
                    "no recorded observation for this call of {}: the recording ends at step {}",
                    call.tool_name, self.last_step
                ),
            ));
        };
        self.next.set(index + 1);
        if recorded.tool_name != call.tool_name {
            return Ok(ToolOutcome::error(
                call,
                TOOL_MISMATCH,
                format!(
                    "the recording has an observation of {} here (line {}), not of {}",
                    recorded.tool_name, recorded.line, call.tool_name
                ),
            ));
        }
        Ok(ToolOutcome {
            observation: Observation {
                tool_name: recorded.tool_name.clone(),
                content: recorded.content.clone(),
                is_error: recorded.is_error,
            },
            error_kind: recorded.error_kind.clone(),
            exit_status: recorded.exit_status,
            lossy: recorded.lossy,
        })
    }
}

/// The message inside a recorded `tool "NAME" panicked: MESSAGE` (or `failed: MESSAGE`) error,
/// so the rerun's error reads the same.
fn panic_message(error: &str, tool_name: &str) -> String {
    ["panicked", "failed"]
        .iter()
        .find_map(|verb| error.strip_prefix(&format!("tool {tool_name:?} {verb}: ")))
        .unwrap_or(error)
        .to_owned()
}
