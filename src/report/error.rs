//! Why a report could not be produced (what is wrong with one line is the trace format's
//! [`LineError`]).

use std::io;

pub use crate::trace::LineError;

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
