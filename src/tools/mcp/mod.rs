//! MCP servers (stdio): the client that starts and talks to one server, and the servers of a
//! tools file, each one more [`ToolProvider`](super::ToolProvider). A server whose command or
//! environment uses `{workdir}` starts once per task, any other once per suite.

mod client;
mod servers;

pub use client::{CallReply, Launch, McpClient, McpTool, ServerFailed};
pub use servers::{MCP_DEFAULT_TIMEOUT_S, McpServers, TOOL_SERVER_FAILED};
