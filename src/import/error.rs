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
    #[error(
        "`{file}`: not a trace of any known format (`looptrace import --from FORMAT` reads it as \
         one of: code-agent, swe-agent, mini-swe-agent, openhands, codex, claude-code, gemini-cli, \
         inspect, otel-genai, otlp)"
    )]
    Unknown {
        /// The file as named by the user.
        file: String,
    },
    /// `--from FORMAT` named a format the file plainly is not.
    #[error("`{file}`: not in the `{format}` format{}", match detected {
        Some(other) => format!(" (it reads as `{other}`: use `--from {other}`, or leave `--from` out)"),
        None => " (nor of any other known format)".to_owned(),
    })]
    NotFormat {
        /// The file as named by the user.
        file: String,
        /// The format asked for.
        format: &'static str,
        /// The format the file is detected as, if any.
        detected: Option<&'static str>,
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
