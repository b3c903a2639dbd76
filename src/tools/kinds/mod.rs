//! The kinds of tool a tools file defines beside MCP servers, one file each, every one a
//! [`super::ToolProvider`]: command tools and the bash builtin.

mod bash;
mod command;

pub use bash::{
    BASH_DEFAULT_MAX_OUTPUT_BYTES, BASH_DEFAULT_TIMEOUT_S, BashTool, BoundBash, bash_spec,
};
pub use command::{
    BoundCommand, COMMAND_DEFAULT_MAX_OUTPUT_BYTES, COMMAND_DEFAULT_TIMEOUT_S, CommandTool,
};
