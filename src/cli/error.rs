//! How a command's result becomes an exit code and a message on stderr.

use std::fmt;
use std::io;

/// What a command that ran to the end found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Everything passed: exit 0.
    Success,
    /// The work ran and found failures: exit 1.
    Failures,
}

/// Why a command could not do its work.
#[derive(Debug)]
pub enum CliError {
    /// Bad input or usage: exit 2.
    Input(String),
    /// A bug or a broken dependency: exit 3.
    Internal(String),
    /// Standard output was closed early (`looptrace show | head`): not an error. Commands whose
    /// exit code reports an outcome write through `common::OutcomeStdout` instead, which never
    /// returns this.
    BrokenPipe,
}

/// The result every command returns.
pub type CliResult = Result<Outcome, CliError>;

impl CliError {
    /// A bad-input error from anything printable.
    pub fn input(message: impl fmt::Display) -> Self {
        CliError::Input(message.to_string())
    }

    /// An internal error from anything printable.
    pub fn internal(message: impl fmt::Display) -> Self {
        CliError::Internal(message.to_string())
    }
}

impl From<io::Error> for CliError {
    /// Errors writing to stdout/stderr: a closed pipe is fine, anything else is internal.
    fn from(err: io::Error) -> Self {
        if err.kind() == io::ErrorKind::BrokenPipe {
            CliError::BrokenPipe
        } else {
            CliError::Internal(format!("failed to write output: {err}"))
        }
    }
}

impl From<looptrace::eval::engine::EvalError> for CliError {
    /// The one place an evaluation's errors become exit codes: internal errors exit 3, every
    /// refusal of input or usage exits 2.
    fn from(err: looptrace::eval::engine::EvalError) -> Self {
        if err.is_internal() {
            CliError::Internal(err.to_string())
        } else {
            CliError::Input(err.to_string())
        }
    }
}

impl From<looptrace::replay::ReplayPlanError> for CliError {
    /// A replay's errors as exit codes: internal errors exit 3, the rest exit 2.
    fn from(err: looptrace::replay::ReplayPlanError) -> Self {
        if err.is_internal() {
            CliError::Internal(err.to_string())
        } else {
            CliError::Input(err.to_string())
        }
    }
}

/// Prints the error, if any, and maps the result to the process exit code.
pub fn finish(result: CliResult) -> i32 {
    match result {
        Ok(Outcome::Success) | Err(CliError::BrokenPipe) => 0,
        Ok(Outcome::Failures) => 1,
        Err(CliError::Input(message)) => {
            eprintln!("error: {}", printable(&message));
            2
        }
        Err(CliError::Internal(message)) => {
            eprintln!("internal error: {}", printable(&message));
            3
        }
    }
}

/// A message made safe for the terminal line by line: it may quote text from a trace.
fn printable(message: &str) -> String {
    message
        .split('\n')
        .map(|line| looptrace::text::escape(line).into_owned())
        .collect::<Vec<_>>()
        .join("\n")
}
