//! One MCP server over stdio, driven through the official Rust SDK (`rmcp`): started in its own
//! process group with only the environment it is given, `initialize`d, its tools listed
//! (following `nextCursor`), and called, every request bounded by the server's timeout.
//!
//! The loop is blocking, so each client owns a small tokio runtime (one worker thread) that reads
//! the server's output while callers wait on it; several threads may call one client at once.
//! Whatever makes the server unusable (it exits, hangs past its timeout, answers what is not
//! MCP) is a [`ServerFailed`]: the client kills the server's whole process group and stays
//! failed, so its owner starts a new one.

use std::ffi::OsString;
use std::fs::OpenOptions;
use std::future::Future;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ContentBlock,
    ErrorData, Implementation,
};
use rmcp::service::{Peer, RoleClient, RunningService, ServiceError, ServiceExt};
use rmcp::transport::TokioChildProcess;
use serde_json::{Map, Value};
use thiserror::Error;

/// How long a server may take to exit once its input is closed, before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// How to start one server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launch {
    /// The server's name, for messages.
    pub name: String,
    /// The program to run.
    pub program: PathBuf,
    /// Its arguments, `{workdir}` already replaced.
    pub args: Vec<String>,
    /// The folder it runs in.
    pub cwd: PathBuf,
    /// Its whole environment: nothing of looptrace's own is passed on beside these.
    pub env: Vec<(OsString, OsString)>,
    /// Where its stderr is appended; `None` discards it.
    pub stderr_log: Option<PathBuf>,
    /// How long starting may take, through the `initialize` handshake.
    pub start_timeout: Duration,
    /// How long each request after that may take.
    pub timeout: Duration,
}

/// One tool as the server lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct McpTool {
    /// The server's name for it.
    pub name: String,
    /// The server's description, if it gave one.
    pub description: Option<String>,
    /// Its `inputSchema`.
    pub input_schema: Value,
}

/// What a server answered to one call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CallReply {
    /// A result: its content as text.
    Content(String),
    /// A result with `isError: true`: its content as text.
    ToolError(String),
    /// A JSON-RPC error.
    ProtocolError {
        /// The JSON-RPC error code.
        code: i32,
        /// The error's message.
        message: String,
    },
}

/// The server can no longer be used: it could not start, exited, hung or broke the protocol.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("MCP server {server:?} {what}")]
pub struct ServerFailed {
    /// The server's name.
    pub server: String,
    /// What happened, a fragment such as "did not answer tools/call within 30 s".
    pub what: String,
}

/// A running server.
pub struct McpClient {
    name: String,
    timeout: Duration,
    runtime: tokio::runtime::Runtime,
    peer: Peer<RoleClient>,
    service: Mutex<Option<RunningService<RoleClient, ClientConfig>>>,
    group: Option<i32>,
    failed: AtomicBool,
}

impl McpClient {
    /// Starts the server and completes the `initialize` handshake within its timeout.
    pub fn start(launch: &Launch) -> Result<McpClient, ServerFailed> {
        let failed = |what: String| ServerFailed {
            server: launch.name.clone(),
            what,
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("looptrace-mcp")
            .enable_all()
            .build()
            .map_err(|err| failed(format!("could not get a runtime: {err}")))?;
        let stderr = match &launch.stderr_log {
            None => Stdio::null(),
            Some(path) => OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map(Stdio::from)
                .map_err(|err| failed(format!("could not open {}: {err}", path.display())))?,
        };
        let mut command = tokio::process::Command::new(&launch.program);
        command
            .args(&launch.args)
            .current_dir(&launch.cwd)
            .env_clear()
            .envs(crate::secrets::without_forbidden(launch.env.clone()))
            .process_group(0)
            .kill_on_drop(true);
        // Spawning registers the child with the runtime's reaper, so it happens inside it.
        let _context = runtime.enter();
        let (transport, _) = TokioChildProcess::builder(command)
            .stderr(stderr)
            .spawn()
            .map_err(|err| {
                failed(format!(
                    "could not be started ({}): {err}",
                    launch.program.display()
                ))
            })?;
        let group = transport
            .id()
            .and_then(|pid| i32::try_from(pid).ok())
            .filter(|&pid| pid > 0);
        if let Some(group) = group {
            crate::process::groups::register(group);
        }
        let config = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("looptrace", env!("CARGO_PKG_VERSION")),
        );
        let started = runtime.block_on(async {
            tokio::time::timeout(launch.start_timeout, config.serve(transport)).await
        });
        let service = match started {
            Ok(Ok(service)) => service,
            Ok(Err(err)) => {
                if let Some(group) = group {
                    crate::process::groups::kill(group);
                }
                return Err(failed(format!("failed to initialize: {err}")));
            }
            Err(_) => {
                if let Some(group) = group {
                    crate::process::groups::kill(group);
                }
                return Err(failed(format!(
                    "did not answer initialize within {}",
                    seconds(launch.start_timeout)
                )));
            }
        };
        Ok(McpClient {
            name: launch.name.clone(),
            timeout: launch.timeout,
            peer: service.peer().clone(),
            service: Mutex::new(Some(service)),
            runtime,
            group,
            failed: AtomicBool::new(false),
        })
    }

    /// Every tool the server offers, all pages of `tools/list`.
    pub fn list_tools(&self) -> Result<Vec<McpTool>, ServerFailed> {
        let tools = self
            .request("tools/list", self.peer.list_all_tools())?
            .map_err(|err| self.fail(format!("answered tools/list with an error: {err}")))?;
        Ok(tools
            .into_iter()
            .map(|tool| McpTool {
                name: tool.name.into_owned(),
                description: tool.description.map(|d| d.into_owned()),
                input_schema: Value::Object((*tool.input_schema).clone()),
            })
            .collect())
    }

    /// Calls `tool` with `arguments`.
    pub fn call(
        &self,
        tool: &str,
        arguments: &Map<String, Value>,
    ) -> Result<CallReply, ServerFailed> {
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments.clone());
        Ok(
            match self.request("tools/call", self.peer.call_tool(params))? {
                Ok(result) if result.is_error == Some(true) => {
                    CallReply::ToolError(text_of(&result))
                }
                Ok(result) => CallReply::Content(text_of(&result)),
                Err(err) => CallReply::ProtocolError {
                    code: err.code.0,
                    message: err.message.into_owned(),
                },
            },
        )
    }

    /// Whether the server failed; a failed client never answers again.
    pub fn has_failed(&self) -> bool {
        self.failed.load(Ordering::SeqCst)
    }

    /// Runs one request within the timeout. A JSON-RPC error is the inner `Err`; anything else
    /// that goes wrong fails the server.
    fn request<T>(
        &self,
        method: &str,
        request: impl Future<Output = Result<T, ServiceError>>,
    ) -> Result<Result<T, ErrorData>, ServerFailed> {
        if self.has_failed() {
            return Err(self.fail("failed earlier".to_owned()));
        }
        let timeout = self.timeout;
        match self
            .runtime
            .block_on(async { tokio::time::timeout(timeout, request).await })
        {
            Ok(Ok(value)) => Ok(Ok(value)),
            Ok(Err(ServiceError::McpError(err))) => Ok(Err(err)),
            Ok(Err(ServiceError::TransportClosed)) => {
                Err(self.fail(format!("exited during {method}")))
            }
            Ok(Err(err)) => Err(self.fail(format!("broke the protocol during {method}: {err}"))),
            Err(_) => Err(self.fail(format!(
                "did not answer {method} within {}",
                seconds(self.timeout)
            ))),
        }
    }

    /// Marks the server failed and kills it, so it can hang nothing else.
    fn fail(&self, what: String) -> ServerFailed {
        self.failed.store(true, Ordering::SeqCst);
        if let Some(group) = self.group {
            crate::process::groups::kill(group);
        }
        ServerFailed {
            server: self.name.clone(),
            what,
        }
    }
}

impl Drop for McpClient {
    /// Closes the server's input, gives it a moment to exit, then kills whatever is left of its
    /// process group (servers started through `npx` leave grandchildren).
    fn drop(&mut self) {
        let service = self
            .service
            .get_mut()
            .map_or_else(|poisoned| poisoned.into_inner().take(), Option::take);
        if let Some(mut service) = service {
            if !self.has_failed() {
                let _ = self
                    .runtime
                    .block_on(service.close_with_timeout(EXIT_GRACE));
            }
            let _context = self.runtime.enter();
            drop(service);
        }
        if let Some(group) = self.group {
            crate::process::groups::kill(group);
        }
    }
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient")
            .field("name", &self.name)
            .field("group", &self.group)
            .field("failed", &self.has_failed())
            .finish_non_exhaustive()
    }
}

/// The text a model reads for a result: text blocks as they are, any other block (an image, a
/// resource) as its JSON, one per line; a result with no content but structured content gives
/// that content's JSON.
fn text_of(result: &CallToolResult) -> String {
    if result.content.is_empty() {
        return result
            .structured_content
            .as_ref()
            .map(Value::to_string)
            .unwrap_or_default();
    }
    let blocks: Vec<String> = result
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Text(text) => text.text.clone(),
            other => serde_json::to_string(other).unwrap_or_default(),
        })
        .collect();
    blocks.join("\n")
}

fn seconds(duration: Duration) -> String {
    format!("{} s", duration.as_secs_f64())
}
