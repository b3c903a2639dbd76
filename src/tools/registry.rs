//! The registry and runtime boundary: look a tool up, check its arguments against the compiled
//! schema, run the handler, and turn every expected failure into an error observation. A handler
//! panic is a bug, not an observation: it comes back as a [`ToolPanic`].

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};

use serde_json::Value;
use thiserror::Error;

use super::runtime::ToolRuntime;
use super::spec::{ToolDefinition, ToolSpec};
use crate::run::{Observation, ToolCall};

/// Tools by name, each with its schema compiled once.
#[derive(Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, RegisteredTool>,
}

struct RegisteredTool {
    definition: ToolDefinition,
    validator: jsonschema::Validator,
}

/// Why a tool could not be registered.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum RegistryError {
    /// Two tools with one name.
    #[error("a tool named {0:?} is already registered")]
    DuplicateName(String),
    /// The tool's `input_schema` is not a valid JSON Schema.
    #[error("the input schema of tool {name:?} is invalid: {reason}")]
    InvalidSchema {
        /// The tool.
        name: String,
        /// What the schema compiler said.
        reason: String,
    },
}

/// What running one call produced: the observation for the history and, for an error, its kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolOutcome {
    /// What the model will see.
    pub observation: Observation,
    /// `unknown_tool`, `invalid_arguments`, or the handler's own kind; `None` on success.
    pub error_kind: Option<String>,
}

/// A handler panicked: a bug in the tool, surfaced as an internal error.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("tool {tool_name:?} panicked: {message}")]
pub struct ToolPanic {
    /// The tool whose handler panicked.
    pub tool_name: String,
    /// The panic message.
    pub message: String,
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        ToolRegistry::default()
    }

    /// A registry with the built-in tools.
    pub fn builtin() -> Self {
        let mut registry = ToolRegistry::new();
        registry
            .register(super::calculator())
            .expect("the built-in tools have distinct names and valid schemas");
        registry
    }

    /// Adds a tool, compiling its schema; refuses a name already taken.
    pub fn register(&mut self, definition: ToolDefinition) -> Result<(), RegistryError> {
        let name = definition.spec.name.clone();
        if self.tools.contains_key(&name) {
            return Err(RegistryError::DuplicateName(name));
        }
        let validator =
            jsonschema::validator_for(&definition.spec.input_schema).map_err(|err| {
                RegistryError::InvalidSchema {
                    name: name.clone(),
                    reason: err.to_string(),
                }
            })?;
        self.tools.insert(
            name,
            RegisteredTool {
                definition,
                validator,
            },
        );
        Ok(())
    }

    /// The specs a model may be shown, by name. The handlers stay inside the registry.
    pub fn specs(&self) -> Vec<&ToolSpec> {
        self.tools.values().map(|t| &t.definition.spec).collect()
    }

    /// The spec of one tool.
    pub fn spec(&self, name: &str) -> Option<&ToolSpec> {
        self.tools.get(name).map(|t| &t.definition.spec)
    }
}

impl ToolRuntime for ToolRegistry {
    /// Runs one call through the contract: unknown tools and schema violations never reach a
    /// handler; the handler's `ToolError`s become error observations; a panic is a `ToolPanic`.
    fn execute(&self, call: &ToolCall) -> Result<ToolOutcome, ToolPanic> {
        let Some(tool) = self.tools.get(&call.tool_name) else {
            return Ok(ToolOutcome::error(
                call,
                "unknown_tool",
                format!("unknown tool: {}", call.tool_name),
            ));
        };
        let arguments = Value::Object(call.arguments.clone());
        let violations: Vec<String> = tool
            .validator
            .iter_errors(&arguments)
            .map(|err| {
                let pointer = err.instance_path().as_str();
                let at = if pointer.is_empty() {
                    "(root)"
                } else {
                    pointer
                };
                format!("{at}: {err}")
            })
            .collect();
        if !violations.is_empty() {
            return Ok(ToolOutcome::error(
                call,
                "invalid_arguments",
                format!(
                    "invalid arguments for {}: {}",
                    call.tool_name,
                    violations.join("; ")
                ),
            ));
        }
        let handler = &tool.definition.handler;
        match catch_unwind(AssertUnwindSafe(|| handler(&call.arguments))) {
            Ok(Ok(content)) => Ok(ToolOutcome {
                observation: Observation {
                    tool_name: call.tool_name.clone(),
                    content,
                    is_error: false,
                },
                error_kind: None,
            }),
            Ok(Err(err)) => Ok(ToolOutcome::error(call, &err.kind, err.message)),
            Err(payload) => Err(ToolPanic {
                tool_name: call.tool_name.clone(),
                message: panic_text(payload.as_ref()),
            }),
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
        }
    }
}

/// The text of a panic payload (`panic!` gives a `&str` or a `String`).
pub fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-text payload".to_owned()
    }
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.tools.keys()).finish()
    }
}
