//! Tools: the contract a model is shown (`ToolSpec`), the handler the runtime runs
//! (`ToolDefinition`), the registry that checks arguments before any handler runs, and the
//! built-in `calculator`.

mod calculator;
pub mod mcp;
mod python_number;
mod registry;
mod runtime;
mod spec;

pub use calculator::{calculator, calculator_spec};
pub use python_number::{PyNumber, format_python_float, integer_negative_zero_as_zero};
pub use registry::{RegistryError, ToolOutcome, ToolPanic, ToolRegistry, panic_text};
pub use runtime::ToolRuntime;
pub use spec::{ToolDefinition, ToolError, ToolHandler, ToolSpec};
