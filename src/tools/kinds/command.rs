//! Command tools: a program that reads the call's arguments as JSON on stdin and prints the
//! content on stdout. Exit 0 is an observation; another status, a signal or a timeout is an error
//! observation. No shell is involved: the command is an argument vector.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::process::{Ended, OutputMode, ProcessSpec, cut_bytes, run_process};
use crate::tools::file::CommandToolConfig;
use crate::tools::provider::{ToolContext, ToolFailure, ToolProvider, ToolReply};
use crate::tools::spec::ToolSpec;
use crate::tools::spec_hash;

/// Seconds a command tool may run when its entry sets no `timeout_s`.
pub const COMMAND_DEFAULT_TIMEOUT_S: u64 = 30;
/// Bytes of output kept when an entry sets no `max_output_bytes`.
pub const COMMAND_DEFAULT_MAX_OUTPUT_BYTES: usize = 10_000;

/// A command tool as loaded: its entry, its resolved program and the hash of its entry.
#[derive(Clone, Debug)]
pub struct CommandTool {
    config: CommandToolConfig,
    program: PathBuf,
    hash: String,
}

impl CommandTool {
    /// The tool of `config`, running `program`; `written` is its entry as written.
    pub fn new(config: CommandToolConfig, program: PathBuf, written: &Value) -> Self {
        CommandTool {
            config,
            program,
            hash: spec_hash(written),
        }
    }

    /// The tool's spec: what a model is shown.
    pub fn spec(&self) -> ToolSpec {
        let c = &self.config;
        let or = |text: &Option<String>, default: &str| {
            text.clone().unwrap_or_else(|| default.to_owned())
        };
        ToolSpec {
            name: c.name.clone(),
            description: or(&c.description, "(no description given)"),
            input_schema: c.input_schema.clone(),
            output_description: or(&c.output_description, "(no output description given)"),
            error_description: or(&c.error_description, "(no error description given)"),
        }
    }

    /// The tool running in one task's context.
    pub fn bind(&self, context: &ToolContext) -> BoundCommand {
        let c = &self.config;
        BoundCommand {
            spec: self.spec(),
            hash: self.hash.clone(),
            run: CommandRun {
                program: self.program.clone(),
                args: c
                    .command
                    .iter()
                    .skip(1)
                    .map(|a| context.expand(a))
                    .collect(),
                dir: context.workdir.clone(),
                env: context.env_with(&c.env),
                timeout_s: c.timeout_s.unwrap_or(COMMAND_DEFAULT_TIMEOUT_S),
                max_output_bytes: c
                    .max_output_bytes
                    .unwrap_or(COMMAND_DEFAULT_MAX_OUTPUT_BYTES),
            },
        }
    }
}

/// A command tool bound to a task's working folder and environment.
#[derive(Clone, Debug)]
pub struct BoundCommand {
    spec: ToolSpec,
    hash: String,
    run: CommandRun,
}

impl ToolProvider for BoundCommand {
    fn specs(&self) -> Vec<ToolSpec> {
        vec![self.spec.clone()]
    }

    fn spec_hash(&self, _spec: &ToolSpec) -> String {
        self.hash.clone()
    }

    fn call(
        &self,
        tool_name: &str,
        arguments: &Map<String, Value>,
    ) -> Result<ToolReply, ToolFailure> {
        let input = Value::Object(arguments.clone()).to_string();
        Ok(self
            .run
            .run(tool_name, input.into_bytes(), OutputMode::Separate))
    }
}

/// One program run the way tools run: in the task's folder, with the allowed environment only,
/// a timeout that kills the whole process group, and output cut to its head and tail.
#[derive(Clone, Debug)]
pub(super) struct CommandRun {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub dir: PathBuf,
    pub env: Vec<(OsString, OsString)>,
    pub timeout_s: u64,
    pub max_output_bytes: usize,
}

impl CommandRun {
    /// Runs the program with `stdin`; every way it can end is a reply for the model.
    pub fn run(&self, tool_name: &str, stdin: Vec<u8>, output: OutputMode) -> ToolReply {
        let spec = ProcessSpec {
            program: self.program.clone(),
            args: self.args.clone(),
            dir: Some(self.dir.clone()),
            env: Some(self.env.clone()),
            stdin,
            timeout: Duration::from_secs(self.timeout_s),
            output,
            keep_bytes: self.max_output_bytes,
        };
        let finished = match run_process(&spec) {
            Ok(finished) => finished,
            Err(err) => {
                return ToolReply::error(
                    "spawn_failed",
                    format!("{tool_name} could not be started: {err}"),
                );
            }
        };
        let out = cut_bytes(
            &finished.stdout.head,
            finished.stdout.dropped,
            &finished.stdout.tail,
            self.max_output_bytes,
        );
        let err = cut_bytes(
            &finished.stderr.head,
            finished.stderr.dropped,
            &finished.stderr.tail,
            self.max_output_bytes,
        );
        let lossy = out.lossy || err.lossy;
        // A failed command's stderr usually says why: the model reads it after stdout.
        let with_stderr = |note: String| {
            let mut text = out.text.clone();
            for part in [err.text.as_str(), note.as_str()] {
                if !part.is_empty() {
                    if !text.is_empty() && !text.ends_with('\n') {
                        text.push('\n');
                    }
                    text.push_str(part);
                }
            }
            text
        };
        let mut reply = match finished.ended {
            Ended::TimedOut => ToolReply::error(
                "timeout",
                with_stderr(format!(
                    "[{tool_name} ran past its timeout of {} s; its process group was killed]",
                    self.timeout_s
                )),
            ),
            ended => match (ended.code(), ended.signal()) {
                (Some(0), _) => ToolReply::ok(out.text.clone()),
                (Some(code), _) => {
                    let mut reply = ToolReply::error(
                        "exit_status",
                        with_stderr(format!("[exit status {code}]")),
                    );
                    reply.exit_status = Some(code);
                    reply
                }
                (None, signal) => ToolReply::error(
                    "signal",
                    with_stderr(format!("[killed by signal {}]", signal.unwrap_or_default())),
                ),
            },
        };
        reply.lossy = lossy;
        reply
    }
}
