//! `ToolProvider`: one source of tools (command tools, the bash builtin, an MCP server). A
//! provider says which tools it offers and runs calls of them; the registry checks every call's
//! arguments against the tool's schema before any provider sees it.

use std::ffi::OsString;
use std::path::PathBuf;

use serde_json::{Map, Value};
use thiserror::Error;

use super::spec::ToolSpec;

/// A source of tools.
pub trait ToolProvider: Send + Sync {
    /// The tools it offers, as a model is shown them.
    fn specs(&self) -> Vec<ToolSpec>;

    /// Runs `tool_name` (one of its own, named as its spec names it, so with any prefix) with
    /// arguments that satisfy its schema. Expected
    /// failures are an `Ok` reply with an error kind; `Err` is a broken tool source, which ends the
    /// run as an internal error.
    fn call(
        &self,
        tool_name: &str,
        arguments: &Map<String, Value>,
    ) -> Result<ToolReply, ToolFailure>;

    /// The `spec_hash` recorded in `run_started.tools` for one of its tools: by default the
    /// spec in canonical JSON; a tool defined in a tools file hashes its entry as written, so a
    /// changed command or timeout shows too.
    fn spec_hash(&self, spec: &ToolSpec) -> String {
        super::spec::spec_hash(&serde_json::to_value(spec).unwrap_or_default())
    }
}

/// What a provider answered to one call.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolReply {
    /// The text the model reads.
    pub content: String,
    /// `None` on success; otherwise the error kind (`exit_status`, `timeout`, `tool_error`, ...).
    pub error_kind: Option<String>,
    /// The exit status of a command that exited with one other than 0.
    pub exit_status: Option<i32>,
    /// Whether the output was not UTF-8 and was decoded with U+FFFD.
    pub lossy: bool,
}

impl ToolReply {
    /// A successful reply.
    pub fn ok(content: impl Into<String>) -> Self {
        ToolReply {
            content: content.into(),
            ..ToolReply::default()
        }
    }

    /// An expected failure the model reads as an error observation.
    pub fn error(kind: impl Into<String>, content: impl Into<String>) -> Self {
        ToolReply {
            content: content.into(),
            error_kind: Some(kind.into()),
            ..ToolReply::default()
        }
    }
}

/// A tool source that broke (a server that crashed, hung or broke its protocol): the run ends as
/// an internal error of this kind.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("{message}")]
pub struct ToolFailure {
    /// The stable kind written as the run's `error_kind`, such as `tool_server_failed`.
    pub kind: String,
    /// What went wrong.
    pub message: String,
}

impl ToolFailure {
    /// A failure of this kind.
    pub fn new(kind: impl Into<String>, message: impl Into<String>) -> Self {
        ToolFailure {
            kind: kind.into(),
            message: message.into(),
        }
    }
}

/// Where one task's tools run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolContext {
    /// The task's working folder: every tool and server of the task runs there, and relative
    /// arguments resolve there.
    pub workdir: PathBuf,
    /// The tools file's folder, where programs and scripts that ship with the file live.
    pub tools_dir: PathBuf,
    /// The whole environment tools and servers get (the allow-list), before their own fixed
    /// values.
    pub env: Vec<(OsString, OsString)>,
    /// Where servers write their stderr logs (`mcp-<name>.log`); `None` discards it.
    pub log_dir: Option<PathBuf>,
}

impl ToolContext {
    /// The environment with `extra` fixed values set over it, `{workdir}` replaced in them.
    pub fn env_with<'a>(
        &self,
        extra: impl IntoIterator<Item = (&'a String, &'a String)>,
    ) -> Vec<(OsString, OsString)> {
        let mut env = self.env.clone();
        for (name, value) in extra {
            env.retain(|(k, _)| k != name.as_str());
            env.push((name.into(), self.expand(value).into()));
        }
        env
    }

    /// `text` with every `{workdir}` replaced by the working folder and every `{toolsdir}` by
    /// the tools file's folder.
    pub fn expand(&self, text: &str) -> String {
        text.replace("{workdir}", &self.workdir.to_string_lossy())
            .replace("{toolsdir}", &self.tools_dir.to_string_lossy())
    }
}
