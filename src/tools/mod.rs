//! Tools: the contract a model is shown (`ToolSpec`), the handler the runtime runs
//! (`ToolDefinition`), the registry that checks arguments before any handler runs, and the
//! built-in `calculator`; the tools file with its tool kinds (command tools, bash, MCP servers),
//! each a [`ToolProvider`], and the per-task working folders they run in.

mod calculator;
mod file;
pub mod kinds;
pub mod mcp;
mod outcome;
mod provider;
mod python_number;
mod registry;
mod runtime;
mod spec;
mod task;
mod workdir;

pub use calculator::{calculator, calculator_spec};
pub use file::{
    BASE_ENV, BashConfig, CommandToolConfig, McpServerConfig, TOOL_NAME_CLASH, ToolsFile,
    ToolsFileError,
};
pub use outcome::{TOOL_PANIC, TOOL_SERVER_FAILED, ToolOutcome, ToolPanic};
pub use provider::{ToolContext, ToolFailure, ToolProvider, ToolReply};
pub use python_number::{PyNumber, format_python_float, integer_negative_zero_as_zero};
pub use registry::{RegistryError, ToolRegistry, panic_text, valid_name};
pub use runtime::ToolRuntime;
pub use spec::{ToolDefinition, ToolError, ToolHandler, ToolSpec, spec_hash};
pub use task::{TaskToolSet, TaskTools, WORKDIR_FAILED};
pub use workdir::{content_hash, copy_fresh, temp_workdir};
