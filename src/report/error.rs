//! Errors of the report: what is wrong with one line, and why a report could not be produced.

use std::io;

/// What is wrong with one line of a trace, as a lowercase fragment.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    /// The line is not valid UTF-8.
    #[error("invalid UTF-8")]
    InvalidUtf8,
    /// The line is longer than the limit (16 MiB unless configured).
    #[error("line is longer than {limit} bytes")]
    TooLong {
        /// The limit in bytes.
        limit: usize,
    },
    /// The line is not one well-formed JSON object.
    #[error("{message} at column {column}")]
    Syntax {
        /// What the scanner expected or found.
        message: &'static str,
        /// The 1-based byte column.
        column: usize,
    },
    /// A field of the trace format appears twice in one line.
    #[error("duplicate field `{0}`")]
    DuplicateField(&'static str),
    /// A field every event must have is absent (or null).
    #[error("missing `{0}`")]
    MissingField(&'static str),
    /// A field the report reads has the wrong JSON type.
    #[error("`{field}` must be {expected}")]
    WrongType {
        /// The field name.
        field: &'static str,
        /// What it must be, e.g. "a string".
        expected: &'static str,
    },
    /// A `run_finished` event with an exit reason outside the four of the format.
    #[error("unknown exit reason `{0}`")]
    UnknownExitReason(String),
}

/// Why a report could not be produced.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A file could not be opened or read.
    #[error("failed to read `{path}`: {source}")]
    Read {
        /// The input as named on the command line or found in a folder.
        path: String,
        /// The operating system's error.
        source: io::Error,
    },
    /// A folder could not be listed.
    #[error("failed to list `{path}`: {source}")]
    List {
        /// The folder.
        path: String,
        /// The operating system's error.
        source: io::Error,
    },
    /// A line of an input is malformed (and `--lenient` was not given).
    #[error("{path}:{line}: {problem}")]
    Line {
        /// The input holding the line.
        path: String,
        /// The 1-based line number.
        line: u64,
        /// What is wrong with it.
        problem: LineError,
    },
    /// `-` was given more than once: standard input can be read only once.
    #[error("`-` (standard input) given more than once")]
    StdinTwice,
}
