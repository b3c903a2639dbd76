//! `CommandGate`: runs a program with the proposed answer on stdin as `{"answer": "..."}`. Exit 0
//! accepts; another exit status rejects, with stdout and stderr (one pipe, in the order written)
//! as the reason. A program that cannot start, exits 126 or 127 (the shell's "cannot execute"
//! and "not found"), is killed by a signal or runs past its timeout is a gate failure. The
//! program runs in its own process group, and the whole group is killed when it is done or timed
//! out, so nothing it started in that group outlives the check. Like a tool, it gets only the
//! allow-listed environment, never a secret.

use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use super::contract::{FinishGate, GateFailure, GateVerdict};
use crate::process::{Ended, OutputMode, ProcessSpec, cut_bytes, run_process};

/// A command gate as configured: what a suite or the command line says.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CommandGateConfig {
    /// The program and its arguments, as written.
    pub command: Vec<String>,
    /// Seconds before the program is killed and the check fails.
    pub timeout_s: u64,
    /// Bytes of output kept (head and tail) for the trace and the model.
    pub max_output_bytes: usize,
}

impl CommandGateConfig {
    /// The default timeout, in seconds.
    pub const DEFAULT_TIMEOUT_S: u64 = 60;
    /// The default output limit, in bytes.
    pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 10_000;

    /// A configuration of `command` with the default timeout and output limit.
    pub fn new(command: Vec<String>) -> Self {
        CommandGateConfig {
            command,
            timeout_s: Self::DEFAULT_TIMEOUT_S,
            max_output_bytes: Self::DEFAULT_MAX_OUTPUT_BYTES,
        }
    }

    /// `sha256:HEX` of the configuration as written (command, timeout, output limit).
    pub fn hash(&self) -> String {
        // Serializing a struct of strings and integers cannot fail.
        let json = serde_json::to_vec(self).unwrap_or_default();
        crate::digest::sha256_tagged(&json)
    }
}

/// Runs a program to check each proposed answer.
#[derive(Clone, Debug)]
pub struct CommandGate {
    config: CommandGateConfig,
    program: PathBuf,
    dir: Option<PathBuf>,
    /// Names passed on from our environment beside the base allow-list (a tools file's `env`).
    env_names: Vec<String>,
}

impl CommandGate {
    /// A gate running `config.command` as given, in the current folder.
    pub fn new(config: CommandGateConfig) -> Self {
        let program = PathBuf::from(config.command.first().cloned().unwrap_or_default());
        CommandGate {
            config,
            program,
            dir: None,
            env_names: Vec::new(),
        }
    }

    /// Runs the program found at `program` instead of `command[0]` (a path resolved against a
    /// suite's folder); the hash still names the configuration as written.
    pub fn with_program(mut self, program: PathBuf) -> Self {
        self.program = program;
        self
    }

    /// Runs the program in `dir`.
    pub fn in_dir(mut self, dir: PathBuf) -> Self {
        self.dir = Some(dir);
        self
    }

    /// Passes these variables on beside the base allow-list, as a tools file's `env` does for
    /// its tools.
    pub fn with_env_names(mut self, names: &[String]) -> Self {
        self.env_names = names.to_vec();
        self
    }

    /// The configuration.
    pub fn config(&self) -> &CommandGateConfig {
        &self.config
    }

    fn process(&self, answer: &str) -> ProcessSpec {
        ProcessSpec {
            program: self.program.clone(),
            args: self.config.command.iter().skip(1).cloned().collect(),
            dir: self.dir.clone(),
            env: Some(crate::process::allowed_env(
                self.env_names.iter().map(String::as_str),
            )),
            stdin: serde_json::json!({ "answer": answer })
                .to_string()
                .into_bytes(),
            timeout: Duration::from_secs(self.config.timeout_s),
            output: OutputMode::Merged,
            keep_bytes: self.config.max_output_bytes,
        }
    }
}

impl FinishGate for CommandGate {
    fn check(&mut self, answer: &str) -> Result<GateVerdict, GateFailure> {
        let finished = run_process(&self.process(answer)).map_err(|err| {
            GateFailure::new(format!("cannot run `{}`: {err}", self.program.display()))
        })?;
        let Ended::Exited(status) = finished.ended else {
            return Err(GateFailure::new(format!(
                "`{}` ran past its timeout of {} s; its process group was killed",
                self.program.display(),
                self.config.timeout_s
            )));
        };
        let out = &finished.stdout;
        let text = cut_bytes(
            &out.head,
            out.dropped,
            &out.tail,
            self.config.max_output_bytes,
        )
        .text;
        match (status.code(), status.signal()) {
            (Some(0), _) => Ok(GateVerdict {
                accepted: true,
                output: text,
            }),
            (Some(code @ (126 | 127)), _) => Err(GateFailure::new(format!(
                "`{}` exited with status {code}: the program could not be run",
                self.program.display()
            ))),
            (Some(_), _) => Ok(GateVerdict {
                accepted: false,
                output: text,
            }),
            (None, signal) => Err(GateFailure::new(format!(
                "`{}` was killed by signal {}",
                self.program.display(),
                signal.unwrap_or_default()
            ))),
        }
    }

    fn config_hash(&self) -> String {
        self.config.hash()
    }
}
