//! `TaskTools`: a loaded tools file ready to give every task its own registry, running in the
//! task's own working folder (a fresh copy of the template) with the allowed environment only.

use std::path::{Path, PathBuf};

use super::file::ToolsFile;
use super::mcp::McpServers;
use super::provider::ToolFailure;
use super::registry::ToolRegistry;

/// The `error_kind` of a task whose working folder could not be made.
pub const WORKDIR_FAILED: &str = "workdir_failed";

/// A tools file and its MCP servers, shared by the tasks of one command.
#[derive(Debug)]
pub struct TaskTools {
    file: ToolsFile,
    servers: McpServers,
    log_dir: Option<PathBuf>,
}

/// One task's tools: the registry and the folder they run in.
#[derive(Debug)]
pub struct TaskToolSet {
    /// Every tool of the task, spec hashes recorded.
    pub registry: ToolRegistry,
    /// The folder the task's tools run in.
    pub workdir: PathBuf,
}

impl TaskTools {
    /// The tools of `file`; MCP servers log to `log_dir` (`mcp-<name>.log`) when given.
    pub fn new(file: ToolsFile, log_dir: Option<PathBuf>) -> Self {
        let servers = McpServers::new(file.mcp_servers().to_vec(), file.folder().to_path_buf());
        TaskTools {
            file,
            servers,
            log_dir,
        }
    }

    /// The tools file.
    pub fn file(&self) -> &ToolsFile {
        &self.file
    }

    /// The tools of one task. With a template, `workdir` is made a fresh copy of it and the
    /// tools run there; without one they run in the tools file's folder and `workdir` is not
    /// touched. `Err` (a folder that could not be made, a server that did not start) ends the
    /// task as an internal error of the failure's kind.
    pub fn for_task(&self, workdir: &Path) -> Result<TaskToolSet, ToolFailure> {
        let workdir = self.file.prepare_workdir(workdir).map_err(|err| {
            ToolFailure::new(
                WORKDIR_FAILED,
                format!(
                    "cannot make the working folder `{}`: {err}",
                    workdir.display()
                ),
            )
        })?;
        let context = self.file.context(workdir.clone(), self.log_dir.clone());
        let registry = self.file.registry(&context, &self.servers)?;
        Ok(TaskToolSet { registry, workdir })
    }
}
