//! Why an evaluation could not be planned or run: one variant per kind of problem, each carrying
//! what a user needs to act on it (the flag, the file, the row). The command line maps the
//! variants to exit codes in one place: [`EvalError::is_internal`] is exit 3, the rest exit 2.

use std::path::PathBuf;

/// An evaluation refused (bad input or usage) or failed (an internal error).
///
/// Messages are lowercase fragments that name the flag or the file they are about, so that a
/// caller can print them as they are.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// A flag's value, or a combination of flags, that cannot be run.
    #[error("{message}")]
    Usage {
        /// The flag the problem is about (`--repeat`, `--only`), when one is.
        flag: Option<String>,
        /// What is wrong, naming the flag.
        message: String,
    },
    /// An input file (suite, tools file, corpus, baseline, results) that cannot be read or is
    /// not one this evaluation can use.
    #[error("{message}")]
    Input {
        /// The file, when the problem is about one file.
        path: Option<PathBuf>,
        /// What is wrong, naming the file and, inside it, the JSON path.
        message: String,
    },
    /// A row of a results file that cannot be used (a rerun's carried row naming a trace
    /// outside its runs).
    #[error("{message}")]
    Row {
        /// The results file.
        path: PathBuf,
        /// The row's index in its `tasks`.
        row: usize,
        /// What is wrong with the row.
        message: String,
    },
    /// An output path the evaluation refuses to write: an input, a link, a folder, a file under
    /// the run store, a folder that cannot be written.
    #[error("{message}")]
    Output {
        /// The flag naming the output (`--out`, `--junit`, `--html`, `--log-dir`).
        flag: String,
        /// The path given.
        path: PathBuf,
        /// What is wrong, naming both.
        message: String,
    },
    /// A folder another looptrace command holds (writes it, or reads it for a rerun or merge).
    #[error("{message}")]
    Busy {
        /// The flag naming the folder.
        flag: String,
        /// The folder.
        folder: PathBuf,
        /// What holds it and what to do.
        message: String,
    },
    /// The run store below an output folder cannot be continued as asked (`--resume` on another
    /// suite or settings, a format 1 folder).
    #[error("{message}")]
    Store {
        /// The output folder or run folder.
        path: PathBuf,
        /// What differs, and what to run instead.
        message: String,
    },
    /// A bug or a failing system underneath (a write that failed, a runner that broke): exit 3.
    #[error("{0}")]
    Internal(String),
}

impl From<crate::output::OutputRefused> for EvalError {
    fn from(refused: crate::output::OutputRefused) -> Self {
        EvalError::Output {
            flag: refused.flag,
            path: refused.path,
            message: refused.message,
        }
    }
}

/// A run store that cannot be read or written as asked, naming its file.
impl From<crate::eval::store::StoreError> for EvalError {
    fn from(error: crate::eval::store::StoreError) -> Self {
        EvalError::Store {
            path: error.path,
            message: error.message,
        }
    }
}

impl EvalError {
    /// A usage error about `flag`.
    pub(crate) fn usage(flag: &str, message: impl std::fmt::Display) -> Self {
        EvalError::Usage {
            flag: Some(flag.to_owned()),
            message: message.to_string(),
        }
    }

    /// A usage error about flags together.
    pub(crate) fn flags(message: impl std::fmt::Display) -> Self {
        EvalError::Usage {
            flag: None,
            message: message.to_string(),
        }
    }

    /// A problem with the input file `path`.
    pub(crate) fn input(path: impl Into<PathBuf>, message: impl std::fmt::Display) -> Self {
        EvalError::Input {
            path: Some(path.into()),
            message: message.to_string(),
        }
    }

    /// A problem with the inputs that names no single file (a message that names its own).
    pub(crate) fn inputs(message: impl std::fmt::Display) -> Self {
        EvalError::Input {
            path: None,
            message: message.to_string(),
        }
    }

    /// A refused output `path` given as `flag`.
    pub(crate) fn output(
        flag: &str,
        path: &std::path::Path,
        message: impl std::fmt::Display,
    ) -> Self {
        EvalError::Output {
            flag: flag.to_owned(),
            path: path.to_path_buf(),
            message: message.to_string(),
        }
    }

    /// A run store that cannot be continued as asked.
    pub(crate) fn store(path: &std::path::Path, message: impl std::fmt::Display) -> Self {
        EvalError::Store {
            path: path.to_path_buf(),
            message: message.to_string(),
        }
    }

    /// An internal error.
    pub(crate) fn internal(message: impl std::fmt::Display) -> Self {
        EvalError::Internal(message.to_string())
    }

    /// An internal error from failing to `what` (`write`, `create`) the file at `path`.
    pub(crate) fn io(what: &str, path: &std::path::Path, err: impl std::fmt::Display) -> Self {
        EvalError::Internal(format!("failed to {what} `{}`: {err}", path.display()))
    }

    /// Whether this is an internal error (exit 3) rather than bad input or usage (exit 2).
    pub fn is_internal(&self) -> bool {
        matches!(self, EvalError::Internal(_))
    }
}
