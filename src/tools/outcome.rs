//! What running one tool call produced: an outcome the model sees (an observation, an error
//! observation with its kind), or a panic or broken tool source surfaced as an internal error.

use thiserror::Error;

use crate::run::{Observation, ToolCall};

/// What running one call produced: the observation for the history and, for an error, its kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolOutcome {
    /// What the model will see.
    pub observation: Observation,
    /// `unknown_tool`, `invalid_arguments`, or the handler's own kind; `None` on success.
    pub error_kind: Option<String>,
    /// The exit status of a command tool that exited with one other than 0.
    pub exit_status: Option<i32>,
    /// Whether the output was not UTF-8 and was decoded with U+FFFD.
    pub lossy: bool,
}

/// A handler panicked (a bug in the tool) or a tool source broke (a server that crashed or hung):
/// surfaced as an internal error of `kind`.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("tool {tool_name:?} {}: {message}", if kind == TOOL_PANIC { "panicked" } else { "failed" })]
pub struct ToolPanic {
    /// The tool whose handler panicked.
    pub tool_name: String,
    /// The panic message.
    pub message: String,
    /// `tool_panic`, or the provider's failure kind such as `tool_server_failed`.
    pub kind: String,
}

/// The kind of a handler panic.
pub const TOOL_PANIC: &str = "tool_panic";

/// The kind of a tool server that crashed, hung or broke its protocol.
pub const TOOL_SERVER_FAILED: &str = "tool_server_failed";

impl ToolPanic {
    /// A handler panic of `tool_name` with this message.
    pub fn new(tool_name: String, message: String) -> Self {
        ToolPanic {
            tool_name,
            message,
            kind: TOOL_PANIC.to_owned(),
        }
    }
}

impl ToolOutcome {
    /// An expected failure of `call`: an error observation with this kind and text.
    pub fn error(call: &ToolCall, kind: &str, content: String) -> ToolOutcome {
        ToolOutcome {
            observation: Observation {
                tool_name: call.tool_name.clone(),
                content,
                is_error: true,
            },
            error_kind: Some(kind.to_owned()),
            exit_status: None,
            lossy: false,
        }
    }
}
