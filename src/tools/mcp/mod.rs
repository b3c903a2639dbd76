//! MCP servers (stdio): the client that starts and talks to one server.

mod client;

pub use client::{CallReply, Launch, McpClient, McpTool, ServerFailed};
