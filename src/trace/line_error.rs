//! What is wrong with one line of a trace, as every reader of the format says it.

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
