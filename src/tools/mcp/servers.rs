//! The MCP servers of one tools file and the [`ToolProvider`] each running server is. A server
//! whose command or environment uses `{workdir}` starts for every task in that task's folder;
//! any other starts once, in the tools file's folder, and serves every task until it fails: then
//! the task whose call saw it fail ends as `tool_server_failed`, and the next call of any other
//! task starts a new one.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value};

use super::client::{CallReply, Launch, McpClient, ServerFailed};
use crate::tools::file::McpServerConfig;
use crate::tools::provider::{ToolContext, ToolFailure, ToolProvider, ToolReply};
use crate::tools::spec::ToolSpec;

/// The `error_kind` of a run whose MCP server failed: it could not start, exited, hung or broke
/// the protocol.
pub const TOOL_SERVER_FAILED: &str = "tool_server_failed";

/// Seconds a server's start and each of its calls may take when the entry sets no `timeout_s`.
pub const MCP_DEFAULT_TIMEOUT_S: u64 = 30;

/// Starting may always take this long: a first `npx -y` start downloads the package.
const MIN_START_TIMEOUT: Duration = Duration::from_secs(60);

/// The MCP servers of one tools file, started on demand.
#[derive(Debug, Default)]
pub struct McpServers {
    servers: Vec<Arc<Server>>,
    folder: PathBuf,
}

#[derive(Debug)]
struct Server {
    config: McpServerConfig,
    /// The running once-per-suite server; `None` before the first task and after a failure.
    shared: Mutex<Option<Arc<Running>>>,
}

/// A started server and its tools as the model is shown them.
#[derive(Debug)]
struct Running {
    client: McpClient,
    specs: Vec<ToolSpec>,
    /// The server's own name of each tool, by position in `specs`.
    names: Vec<String>,
}

impl McpServers {
    /// The servers of `configs` (none started yet); servers that do not use `{workdir}` run in
    /// `folder`, the tools file's.
    pub fn new(configs: Vec<McpServerConfig>, folder: PathBuf) -> Self {
        let servers = configs
            .into_iter()
            .map(|config| {
                Arc::new(Server {
                    config,
                    shared: Mutex::new(None),
                })
            })
            .collect();
        McpServers { servers, folder }
    }

    /// The providers of one task, starting the servers it needs. `Err` is a server that failed
    /// to start or to list its tools (`tool_server_failed`).
    pub fn providers(
        &self,
        context: &ToolContext,
    ) -> Result<Vec<Box<dyn ToolProvider>>, ToolFailure> {
        let mut providers: Vec<Box<dyn ToolProvider>> = Vec::new();
        for server in &self.servers {
            let provider = if server.config.per_task() {
                McpProvider {
                    running: Mutex::new(Arc::new(Running::start(
                        &server.config,
                        context,
                        &context.workdir,
                    )?)),
                    restart: None,
                }
            } else {
                McpProvider {
                    running: Mutex::new(server.shared(context, &self.folder)?),
                    restart: Some(Restart {
                        server: Arc::clone(server),
                        context: context.clone(),
                        folder: self.folder.clone(),
                    }),
                }
            };
            providers.push(Box::new(provider));
        }
        Ok(providers)
    }
}

impl Server {
    /// The suite's running server, started anew when there is none or it failed.
    fn shared(&self, context: &ToolContext, folder: &Path) -> Result<Arc<Running>, ToolFailure> {
        let mut shared = self
            .shared
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(running) = shared.as_ref().filter(|r| !r.client.has_failed()) {
            return Ok(Arc::clone(running));
        }
        *shared = None;
        let running = Arc::new(Running::start(&self.config, context, folder)?);
        *shared = Some(Arc::clone(&running));
        Ok(running)
    }
}

impl Running {
    /// Starts the server of `config` in `cwd` and lists its tools.
    fn start(
        config: &McpServerConfig,
        context: &ToolContext,
        cwd: &Path,
    ) -> Result<Running, ToolFailure> {
        let timeout = Duration::from_secs(config.timeout_s.unwrap_or(MCP_DEFAULT_TIMEOUT_S));
        let stderr_log = match &context.log_dir {
            None => None,
            Some(dir) => {
                std::fs::create_dir_all(dir).map_err(|err| {
                    ToolFailure::new(
                        TOOL_SERVER_FAILED,
                        format!("cannot make the log folder `{}`: {err}", dir.display()),
                    )
                })?;
                Some(config.log_path(dir))
            }
        };
        let launch = Launch {
            name: config.name.clone(),
            program: config.program.clone(),
            args: config
                .command
                .iter()
                .skip(1)
                .map(|a| context.expand(a))
                .collect(),
            cwd: cwd.to_path_buf(),
            env: context.env_with(&config.env),
            stderr_log,
            start_timeout: timeout.max(MIN_START_TIMEOUT),
            timeout,
        };
        let client = McpClient::start(&launch).map_err(failure)?;
        let tools = client.list_tools().map_err(failure)?;
        let prefix = config.prefix.as_deref().unwrap_or("");
        let specs = tools
            .iter()
            .map(|tool| ToolSpec {
                name: format!("{prefix}{}", tool.name),
                description: tool
                    .description
                    .clone()
                    .unwrap_or_else(|| "(no description given)".to_owned()),
                input_schema: tool.input_schema.clone(),
                output_description: format!("the text content of MCP server {}'s result", config.name),
                error_description: format!(
                    "tool_error: the server's result with isError; tool_protocol_error: a JSON-RPC error from MCP server {}",
                    config.name
                ),
            })
            .collect();
        let names = tools.into_iter().map(|tool| tool.name).collect();
        Ok(Running {
            client,
            specs,
            names,
        })
    }
}

/// A running server as one task's tool source.
struct McpProvider {
    running: Mutex<Arc<Running>>,
    /// How to get the suite's server anew, for a server shared by the suite's tasks: when
    /// another task's call broke it, this task goes on with a new one.
    restart: Option<Restart>,
}

struct Restart {
    server: Arc<Server>,
    context: ToolContext,
    folder: PathBuf,
}

impl McpProvider {
    /// The server to call: the task's own, or the suite's current one when the task's has failed
    /// (a failure seen by this task's own call ended the task already).
    fn running(&self) -> Result<Arc<Running>, ToolFailure> {
        let mut running = self
            .running
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(restart) = self
            .restart
            .as_ref()
            .filter(|_| running.client.has_failed())
        {
            *running = restart.server.shared(&restart.context, &restart.folder)?;
        }
        Ok(Arc::clone(&running))
    }
}

impl ToolProvider for McpProvider {
    fn specs(&self) -> Vec<ToolSpec> {
        let running = self
            .running
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        running.specs.clone()
    }

    fn call(
        &self,
        tool_name: &str,
        arguments: &Map<String, Value>,
    ) -> Result<ToolReply, ToolFailure> {
        let running = self.running()?;
        let Some(index) = running.specs.iter().position(|s| s.name == tool_name) else {
            return Ok(ToolReply::error(
                "unknown_tool",
                format!("unknown tool: {tool_name}"),
            ));
        };
        Ok(
            match running
                .client
                .call(&running.names[index], arguments)
                .map_err(failure)?
            {
                CallReply::Content(text) => ToolReply::ok(text),
                CallReply::ToolError(text) => ToolReply::error("tool_error", text),
                CallReply::ProtocolError { code, message } => ToolReply::error(
                    "tool_protocol_error",
                    format!("JSON-RPC error {code}: {message}"),
                ),
            },
        )
    }
}

impl std::fmt::Debug for McpProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpProvider")
            .field("shared", &self.restart.is_some())
            .finish_non_exhaustive()
    }
}

fn failure(failed: ServerFailed) -> ToolFailure {
    ToolFailure::new(TOOL_SERVER_FAILED, failed.to_string())
}
