//! Why a foreign file could not be imported: always with the file and the line or JSON path.

use thiserror::Error;

/// An import failure the user can act on.
#[derive(Debug, Error)]
pub enum ImportError {
    /// The file could not be read.
    #[error("failed to read `{file}`: {source}")]
    Read {
        /// The file as named by the user.
        file: String,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// The file is not what its format says it should be.
    #[error("`{file}`: {at}: {message}")]
    Malformed {
        /// The file as named by the user.
        file: String,
        /// `line N` or a JSON path such as `$.samples[2].messages`.
        at: String,
        /// What is wrong.
        message: String,
    },
    /// No importer recognises the file.
    #[error("`{file}`: not a trace of any known format (try `--from FORMAT`)")]
    Unknown {
        /// The file as named by the user.
        file: String,
    },
    /// Writing the imported events failed.
    #[error("failed to write imported events: {0}")]
    Write(std::io::Error),
}

impl ImportError {
    /// A malformed-input error at `at` in `file`.
    pub fn malformed(file: &str, at: impl Into<String>, message: impl Into<String>) -> Self {
        ImportError::Malformed {
            file: file.to_owned(),
            at: at.into(),
            message: message.into(),
        }
    }
}
