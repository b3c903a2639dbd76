//! `CommandGate`: runs a program with the proposed answer on stdin as `{"answer": "..."}`. Exit 0
//! accepts; another exit status rejects, with stdout and stderr (one pipe, in the order written)
//! as the reason. A program that cannot start, exits 126 or 127 (the shell's "cannot execute"
//! and "not found"), is killed by a signal or runs past its timeout is a gate failure. The
//! program runs in its own process group, and the whole group is killed when it is done or timed
//! out, so nothing it started outlives the check.

use std::io::{Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::contract::{FinishGate, GateFailure, GateVerdict};
use super::cut::cut_output;

/// How long to wait for the output pipe to close after the program ended and its group was
/// killed (a process that left the group may still hold it).
const DRAIN_GRACE: Duration = Duration::from_secs(1);

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
        let digest = Sha256::digest(&json);
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        format!("sha256:{hex}")
    }
}

/// Runs a program to check each proposed answer.
#[derive(Clone, Debug)]
pub struct CommandGate {
    config: CommandGateConfig,
    program: PathBuf,
    dir: Option<PathBuf>,
}

impl CommandGate {
    /// A gate running `config.command` as given, in the current folder.
    pub fn new(config: CommandGateConfig) -> Self {
        let program = PathBuf::from(config.command.first().cloned().unwrap_or_default());
        CommandGate {
            config,
            program,
            dir: None,
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

    /// The configuration.
    pub fn config(&self) -> &CommandGateConfig {
        &self.config
    }

    fn spawn(&self) -> Result<(Child, mpsc::Receiver<Vec<u8>>), GateFailure> {
        let (reader, writer) = std::io::pipe()
            .map_err(|err| GateFailure::new(format!("cannot make a pipe: {err}")))?;
        let writer_err = writer
            .try_clone()
            .map_err(|err| GateFailure::new(format!("cannot make a pipe: {err}")))?;
        let mut command = Command::new(&self.program);
        command
            .args(self.config.command.iter().skip(1))
            .stdin(Stdio::piped())
            .stdout(writer)
            .stderr(writer_err)
            .process_group(0);
        if let Some(dir) = &self.dir {
            command.current_dir(dir);
        }
        let child = command.spawn().map_err(|err| {
            GateFailure::new(format!("cannot run `{}`: {err}", self.program.display()))
        })?;
        // `command` holds the pipe's write ends until it is dropped: drop it now, so the reader
        // sees the end of the output when the program and its children close theirs.
        drop(command);
        let (sender, receiver) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = reader;
            let mut output = Vec::new();
            let _ = reader.read_to_end(&mut output);
            let _ = sender.send(output);
        });
        Ok((child, receiver))
    }
}

impl FinishGate for CommandGate {
    fn check(&mut self, answer: &str) -> Result<GateVerdict, GateFailure> {
        let timeout = Duration::from_secs(self.config.timeout_s);
        let (mut child, output) = self.spawn()?;
        let group = child.id();
        if let Some(mut stdin) = child.stdin.take() {
            let input = serde_json::json!({ "answer": answer }).to_string();
            // A gate may exit without reading its input; a broken pipe is then no error.
            std::thread::spawn(move || {
                let _ = stdin.write_all(input.as_bytes());
            });
        }
        let started = Instant::now();
        let finished = loop {
            match exited_unreaped(group) {
                Ok(true) => break true,
                Ok(false) if started.elapsed() >= timeout => break false,
                Ok(false) => std::thread::sleep(Duration::from_millis(5)),
                Err(err) => {
                    kill_group(group);
                    let _ = child.wait();
                    return Err(GateFailure::new(format!("cannot wait for the gate: {err}")));
                }
            }
        };
        // Whatever the program left running in its group goes with it. The program is not reaped
        // yet, so its pid (the group's id) cannot have been reused by then.
        kill_group(group);
        let status = child.wait();
        if !finished {
            return Err(GateFailure::new(format!(
                "`{}` ran past its timeout of {} s; its process group was killed",
                self.program.display(),
                self.config.timeout_s
            )));
        }
        let status =
            status.map_err(|err| GateFailure::new(format!("cannot wait for the gate: {err}")))?;
        let bytes = output.recv_timeout(DRAIN_GRACE).unwrap_or_default();
        let text = cut_output(
            &String::from_utf8_lossy(&bytes),
            self.config.max_output_bytes,
        );
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

/// Whether the child `pid` has exited, leaving it unreaped (`WNOWAIT`) so its pid stays taken.
fn exited_unreaped(pid: u32) -> std::io::Result<bool> {
    let id = libc::id_t::from(pid);
    // SAFETY: `siginfo_t` is plain data for which all zeros is a valid value, and `waitid` only
    // writes into the struct it is given.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
        if libc::waitid(libc::P_PID, id, &mut info, flags) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // With WNOHANG and no change of state, `si_pid` stays 0.
        Ok(info.si_pid() != 0)
    }
}

/// Kills every process of the group led by `leader` (the gate ran with `process_group(0)`).
fn kill_group(leader: u32) {
    if let Ok(pid) = libc::pid_t::try_from(leader) {
        // SAFETY: `kill` has no memory-safety preconditions; a group that is gone gives ESRCH.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
}
