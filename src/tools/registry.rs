//! The registry and runtime boundary: look a tool up, check its arguments against the compiled
//! schema, run the handler, and turn every expected failure into an error observation. A handler
//! panic is a bug, not an observation: it comes back as a [`ToolPanic`].

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};

use serde_json::Value;
use thiserror::Error;

use super::outcome::{ToolOutcome, ToolPanic};
use super::provider::{ToolProvider, ToolReply};
use super::runtime::ToolRuntime;
use super::spec::{ToolDefinition, ToolHandler, ToolSpec};
use crate::run::{Observation, ToolCall};

/// Tools by name, each with its schema compiled once.
#[derive(Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, RegisteredTool>,
    providers: Vec<Box<dyn ToolProvider>>,
    record_hashes: bool,
}

struct RegisteredTool {
    spec: ToolSpec,
    runner: Runner,
    validator: jsonschema::Validator,
    hash: String,
}

/// What runs a registered tool.
enum Runner {
    Handler(ToolHandler),
    /// The index of its provider.
    Provider(usize),
}

/// Why a tool could not be registered.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum RegistryError {
    /// Two tools with one name.
    #[error("a tool named {0:?} is already registered")]
    DuplicateName(String),
    /// The name breaks the providers' rule `^[a-zA-Z0-9_-]{1,64}$`.
    #[error("the tool name {0:?} does not match ^[a-zA-Z0-9_-]{{1,64}}$")]
    InvalidName(String),
    /// The tool's `input_schema` is not a valid JSON Schema.
    #[error("the input schema of tool {name:?} is invalid: {reason}")]
    InvalidSchema {
        /// The tool.
        name: String,
        /// What the schema compiler said.
        reason: String,
    },
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

    /// Whether every tool runs inside this process as a handler (the built-in calculator), with
    /// no provider's command or server: nothing a run does then happens outside looptrace.
    pub fn runs_in_process(&self) -> bool {
        self.providers.is_empty()
    }

    /// Adds a tool, compiling its schema; refuses a name already taken.
    pub fn register(&mut self, definition: ToolDefinition) -> Result<(), RegistryError> {
        let hash =
            super::spec::spec_hash(&serde_json::to_value(&definition.spec).unwrap_or_default());
        self.insert(definition.spec, Runner::Handler(definition.handler), hash)
    }

    /// Adds every tool of `provider`; refuses a name already taken or an invalid schema, leaving
    /// the registry as it was.
    pub fn register_provider(
        &mut self,
        provider: Box<dyn ToolProvider>,
    ) -> Result<(), RegistryError> {
        let index = self.providers.len();
        let specs = provider.specs();
        let mut added = Vec::new();
        for spec in specs {
            let hash = provider.spec_hash(&spec);
            let name = spec.name.clone();
            if let Err(err) = self.insert(spec, Runner::Provider(index), hash) {
                for name in added {
                    self.tools.remove(&name);
                }
                return Err(err);
            }
            added.push(name);
        }
        self.providers.push(provider);
        Ok(())
    }

    fn insert(
        &mut self,
        spec: ToolSpec,
        runner: Runner,
        hash: String,
    ) -> Result<(), RegistryError> {
        let name = spec.name.clone();
        if self.tools.contains_key(&name) {
            return Err(RegistryError::DuplicateName(name));
        }
        if !valid_name(&name) {
            return Err(RegistryError::InvalidName(name));
        }
        let validator = jsonschema::validator_for(&spec.input_schema).map_err(|err| {
            RegistryError::InvalidSchema {
                name: name.clone(),
                reason: err.to_string(),
            }
        })?;
        self.tools.insert(
            name,
            RegisteredTool {
                spec,
                runner,
                validator,
                hash,
            },
        );
        Ok(())
    }

    /// Makes [`ToolRuntime::spec_hashes`] list every tool, so `run_started.tools` is recorded
    /// (set for registries built from a tools file).
    pub fn record_spec_hashes(&mut self) {
        self.record_hashes = true;
    }

    /// The specs a model may be shown, by name. The handlers stay inside the registry.
    pub fn specs(&self) -> Vec<&ToolSpec> {
        self.tools.values().map(|t| &t.spec).collect()
    }

    /// The spec of one tool.
    pub fn spec(&self, name: &str) -> Option<&ToolSpec> {
        self.tools.get(name).map(|t| &t.spec)
    }

    /// Every tool's name and `spec_hash`, by name.
    pub fn all_spec_hashes(&self) -> Vec<(String, String)> {
        self.tools
            .iter()
            .map(|(name, tool)| (name.clone(), tool.hash.clone()))
            .collect()
    }
}

/// The providers' rule for tool names: `^[a-zA-Z0-9_-]{1,64}$`.
pub fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
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
        // Valid arguments are the common case: checking them stops at nothing to report, while
        // gathering the violations builds each one.
        let violations: Vec<String> = if tool.validator.is_valid(&arguments) {
            Vec::new()
        } else {
            tool.validator
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
                .collect()
        };
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
        let run = || match &tool.runner {
            Runner::Handler(handler) => Ok(match handler(&call.arguments) {
                Ok(content) => ToolReply::ok(content),
                Err(err) => ToolReply::error(err.kind, err.message),
            }),
            Runner::Provider(index) => {
                self.providers[*index].call(&call.tool_name, &call.arguments)
            }
        };
        match catch_unwind(AssertUnwindSafe(run)) {
            Ok(Ok(reply)) => Ok(ToolOutcome {
                observation: Observation {
                    tool_name: call.tool_name.clone(),
                    content: reply.content,
                    is_error: reply.error_kind.is_some(),
                },
                error_kind: reply.error_kind,
                exit_status: reply.exit_status,
                lossy: reply.lossy,
            }),
            Ok(Err(failure)) => Err(ToolPanic {
                tool_name: call.tool_name.clone(),
                message: failure.message,
                kind: failure.kind,
            }),
            Err(payload) => Err(ToolPanic::new(
                call.tool_name.clone(),
                panic_text(payload.as_ref()),
            )),
        }
    }

    fn spec_hashes(&self) -> Vec<(String, String)> {
        if self.record_hashes {
            self.all_spec_hashes()
        } else {
            Vec::new()
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

// Providers are `Send + Sync` and handlers are `Arc<dyn Fn + Send + Sync>`, so a registry can be
// shared by eval's worker threads.
impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.tools.keys()).finish()
    }
}
