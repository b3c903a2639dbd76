//! What a tool promises (`ToolSpec`, shown to models) and what runs it (`ToolDefinition`).

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use thiserror::Error;

/// `sha256:HEX` of `value` in canonical JSON (keys sorted at every level, no spaces), so the
/// order keys were written in does not change it.
pub fn spec_hash(value: &Value) -> String {
    crate::digest::sha256_tagged(crate::digest::canonical_json(value).as_bytes())
}

/// The serializable contract of a tool: everything a model is shown, nothing it could call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The name a model uses to call the tool.
    pub name: String,
    /// What the tool does.
    pub description: String,
    /// The JSON Schema every call's arguments must satisfy.
    pub input_schema: Value,
    /// What a successful call returns.
    pub output_description: String,
    /// Which failures come back as error observations.
    pub error_description: String,
}

/// An expected tool failure: it goes back to the model as an error observation.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("{message}")]
pub struct ToolError {
    /// A stable snake_case kind for traces and reports, such as `division_by_zero`.
    pub kind: String,
    /// The text the model reads.
    pub message: String,
}

impl ToolError {
    /// A tool error of this kind.
    pub fn new(kind: impl Into<String>, message: impl Into<String>) -> Self {
        ToolError {
            kind: kind.into(),
            message: message.into(),
        }
    }
}

/// The function behind a tool. It gets arguments already checked against the schema.
pub type ToolHandler = Arc<dyn Fn(&Map<String, Value>) -> Result<String, ToolError> + Send + Sync>;

/// A spec bound to its handler. Only the runtime holds these; models get specs.
#[derive(Clone)]
pub struct ToolDefinition {
    /// The public contract.
    pub spec: ToolSpec,
    /// The code that runs a call.
    pub handler: ToolHandler,
}

impl ToolDefinition {
    /// Binds `spec` to `handler`.
    pub fn new(
        spec: ToolSpec,
        handler: impl Fn(&Map<String, Value>) -> Result<String, ToolError> + Send + Sync + 'static,
    ) -> Self {
        ToolDefinition {
            spec,
            handler: Arc::new(handler),
        }
    }
}

impl fmt::Debug for ToolDefinition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolDefinition")
            .field("spec", &self.spec)
            .finish_non_exhaustive()
    }
}
