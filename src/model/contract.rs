//! The `Model` and `RawModel` traits and the two ways a model can fail.

use std::fmt;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::run::{Action, HistoryItem, Task};

/// Anything that proposes the next action from the task and the history so far.
pub trait Model {
    /// The next action, an invalid-output error (shown to the model as feedback), or a failure.
    fn next_action(&mut self, task: &Task, history: &[HistoryItem]) -> Result<Action, ModelError>;

    /// The raw text behind the last answer, for models that read provider text. Traces keep it
    /// only with full capture, so adapter changes can be replayed.
    fn last_raw_output(&self) -> Option<&str> {
        None
    }
}

/// A model that answers with provider text, to be parsed by an adapter.
pub trait RawModel {
    /// The raw response text for this turn, or a failure.
    fn next_response(&mut self, task: &Task, history: &[HistoryItem])
    -> Result<String, ModelError>;
}

/// Why a model gave no action.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ModelError {
    /// The model answered, but not with a valid action. Recoverable while budget remains.
    #[error(transparent)]
    InvalidOutput(#[from] InvalidOutput),
    /// The model could not answer at all (a broken connection, an exhausted script). Internal.
    #[error("{0}")]
    Failure(String),
}

/// Output the adapter rejected, with a stable kind for reports.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("{message}")]
pub struct InvalidOutput {
    /// Which rule the output broke.
    pub kind: InvalidOutputKind,
    /// What is wrong, naming the field or the offending value; shown to the model.
    pub message: String,
}

impl InvalidOutput {
    /// An invalid-output error of this kind.
    pub fn new(kind: InvalidOutputKind, message: impl Into<String>) -> Self {
        InvalidOutput {
            kind,
            message: message.into(),
        }
    }
}

/// The rules a model's raw output can break, as snake_case names in traces and reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InvalidOutputKind {
    /// Not JSON at all.
    InvalidJson,
    /// JSON, but not an object.
    NotAnObject,
    /// `type` is neither `tool_call` nor `finish`.
    UnknownActionType,
    /// A required field is absent.
    MissingField,
    /// A field that the action type does not have.
    UnexpectedField,
    /// A field of the wrong JSON type.
    WrongFieldType,
}

impl InvalidOutputKind {
    /// Every kind.
    pub const ALL: [InvalidOutputKind; 6] = [
        InvalidOutputKind::InvalidJson,
        InvalidOutputKind::NotAnObject,
        InvalidOutputKind::UnknownActionType,
        InvalidOutputKind::MissingField,
        InvalidOutputKind::UnexpectedField,
        InvalidOutputKind::WrongFieldType,
    ];

    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            InvalidOutputKind::InvalidJson => "invalid_json",
            InvalidOutputKind::NotAnObject => "not_an_object",
            InvalidOutputKind::UnknownActionType => "unknown_action_type",
            InvalidOutputKind::MissingField => "missing_field",
            InvalidOutputKind::UnexpectedField => "unexpected_field",
            InvalidOutputKind::WrongFieldType => "wrong_field_type",
        }
    }

    /// Parses the snake_case name.
    pub fn parse(name: &str) -> Option<InvalidOutputKind> {
        InvalidOutputKind::ALL
            .into_iter()
            .find(|k| k.as_str() == name)
    }
}

impl fmt::Display for InvalidOutputKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
