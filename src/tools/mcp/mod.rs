//! MCP servers (stdio): each server is one more [`ToolProvider`]. A server whose command or
//! environment uses `{workdir}` starts once per task, any other once per suite.

use super::file::McpServerConfig;
use super::provider::{ToolContext, ToolFailure, ToolProvider};

/// The MCP servers of one tools file, started on demand.
#[derive(Debug, Default)]
pub struct McpServers {
    configs: Vec<McpServerConfig>,
}

impl McpServers {
    /// The servers of `configs` (none started yet).
    pub fn new(configs: Vec<McpServerConfig>) -> Self {
        McpServers { configs }
    }

    /// The providers of one task, starting the servers it needs. `Err` is a server that failed
    /// to start (`tool_server_failed`).
    pub fn providers(
        &self,
        _context: &ToolContext,
    ) -> Result<Vec<Box<dyn ToolProvider>>, ToolFailure> {
        match self.configs.first() {
            None => Ok(Vec::new()),
            Some(server) => Err(ToolFailure::new(
                "tool_server_failed",
                format!(
                    "MCP server {:?} ({}): MCP servers are not supported yet",
                    server.name, server.json_path
                ),
            )),
        }
    }
}
