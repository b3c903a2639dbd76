//! The `bash` builtin: `{"command": "..."}` run with `bash -c` in the task's working folder, with
//! stdout and stderr together as a terminal shows them. It is not a sandbox: the command can do
//! whatever the user running looptrace can (see `docs/tools.md` for running in a container).

use std::path::PathBuf;

use serde_json::{Map, Value, json};

use super::command::CommandRun;
use crate::process::OutputMode;
use crate::tools::file::BashConfig;
use crate::tools::provider::{ToolContext, ToolFailure, ToolProvider, ToolReply};
use crate::tools::spec::ToolSpec;
use crate::tools::spec_hash;

/// Seconds a bash command may run by default.
pub const BASH_DEFAULT_TIMEOUT_S: u64 = 30;
/// Bytes of output kept by default.
pub const BASH_DEFAULT_MAX_OUTPUT_BYTES: usize = 10_000;

/// The bash builtin's spec.
pub fn bash_spec() -> ToolSpec {
    ToolSpec {
        name: "bash".to_owned(),
        description: "Run a bash command in the task's working folder and return its output \
                      (stdout and stderr together)."
            .to_owned(),
        input_schema: json!({
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
            "additionalProperties": false,
        }),
        output_description: "The command's output, cut to its head and tail when long.".to_owned(),
        error_description: "A non-zero exit status, a signal or a timeout, with the output so \
                            far."
            .to_owned(),
    }
}

/// The bash builtin as loaded.
#[derive(Clone, Debug)]
pub struct BashTool {
    config: BashConfig,
    program: PathBuf,
    hash: String,
}

impl BashTool {
    /// The builtin of `config`, running `program` (bash found on `PATH`); `written` is its entry
    /// as written.
    pub fn new(config: BashConfig, program: PathBuf, written: &Value) -> Self {
        BashTool {
            config,
            program,
            hash: spec_hash(written),
        }
    }

    /// The builtin running in one task's context.
    pub fn bind(&self, context: &ToolContext) -> BoundBash {
        BoundBash {
            hash: self.hash.clone(),
            run: CommandRun {
                program: self.program.clone(),
                args: Vec::new(),
                dir: context.workdir.clone(),
                env: context.env_with(&self.config.env),
                timeout_s: self.config.timeout_s.unwrap_or(BASH_DEFAULT_TIMEOUT_S),
                max_output_bytes: self
                    .config
                    .max_output_bytes
                    .unwrap_or(BASH_DEFAULT_MAX_OUTPUT_BYTES),
            },
        }
    }
}

/// The bash builtin bound to a task's working folder and environment.
#[derive(Clone, Debug)]
pub struct BoundBash {
    hash: String,
    run: CommandRun,
}

impl ToolProvider for BoundBash {
    fn specs(&self) -> Vec<ToolSpec> {
        vec![bash_spec()]
    }

    fn spec_hash(&self, _spec: &ToolSpec) -> String {
        self.hash.clone()
    }

    fn call(
        &self,
        tool_name: &str,
        arguments: &Map<String, Value>,
    ) -> Result<ToolReply, ToolFailure> {
        let command = arguments
            .get("command")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let mut run = self.run.clone();
        run.args = vec!["-c".to_owned(), command.to_owned()];
        // The shell reads nothing: its stdin is empty and closed.
        Ok(run.run(tool_name, Vec::new(), OutputMode::Merged))
    }
}
