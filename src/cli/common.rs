//! Pieces several commands share: capture flags, reading response files, opening trace outputs.

use std::io::{self, StdoutLock, Write};
use std::path::Path;

use clap::{Args, ValueEnum};

use super::CliError;
use looptrace::gate::{CommandGate, CommandGateConfig};
use looptrace::trace::{Capture, TraceWriter};

/// `--capture summary|full`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CaptureArg {
    /// Character counts and hashes only.
    Summary,
    /// The content itself too (needed for replay).
    Full,
}

impl From<CaptureArg> for Capture {
    fn from(arg: CaptureArg) -> Capture {
        match arg {
            CaptureArg::Summary => Capture::Summary,
            CaptureArg::Full => Capture::Full,
        }
    }
}

/// `--finish-gate PROGRAM [--finish-gate-arg ARG]...`.
#[derive(Debug, Args)]
pub struct GateArgs {
    /// Accept a finish only when PROGRAM, given `{"answer": ...}` on stdin, exits 0; otherwise
    /// its output goes back to the model.
    #[arg(long = "finish-gate", value_name = "PROGRAM")]
    pub program: Option<String>,
    /// An argument for the finish gate program (repeat for several).
    #[arg(
        long = "finish-gate-arg",
        value_name = "ARG",
        requires = "program",
        allow_hyphen_values = true
    )]
    pub args: Vec<String>,
}

impl GateArgs {
    /// The gate the flags describe, with the default timeout and output limit.
    pub fn command_gate(&self) -> Option<CommandGate> {
        let program = self.program.clone()?;
        let command = std::iter::once(program).chain(self.args.iter().cloned());
        Some(CommandGate::new(CommandGateConfig::new(command.collect())))
    }
}

/// Reads a responses file: one raw model response per line, blank lines skipped.
pub fn read_responses(path: &Path) -> Result<Vec<String>, CliError> {
    let bytes = std::fs::read(path).map_err(|err| {
        CliError::input(format!(
            "failed to read responses file `{}`: {err}",
            path.display()
        ))
    })?;
    let mut responses = Vec::new();
    for (index, line) in bytes.split(|b| *b == b'\n').enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let text = std::str::from_utf8(line).map_err(|err| {
            CliError::input(format!(
                "{}:{}: invalid UTF-8 at byte {}",
                path.display(),
                index + 1,
                err.valid_up_to() + 1
            ))
        })?;
        if !text.trim().is_empty() {
            responses.push(text.to_owned());
        }
    }
    if responses.is_empty() {
        return Err(CliError::input(format!(
            "responses file `{}` holds no responses (one raw model response per line)",
            path.display()
        )));
    }
    Ok(responses)
}

/// Standard output for commands whose exit code reports what the work found (`eval`, `replay`,
/// `run`): a reader that stops early (`| head`) must not change that code, so once the pipe is
/// closed the rest of the output is dropped and the command goes on to its real outcome.
pub struct OutcomeStdout {
    inner: StdoutLock<'static>,
    closed: bool,
}

/// Standard output that ignores a closed pipe; see [`OutcomeStdout`].
pub fn outcome_stdout() -> OutcomeStdout {
    OutcomeStdout {
        inner: io::stdout().lock(),
        closed: false,
    }
}

impl OutcomeStdout {
    fn absorb(&mut self, result: io::Result<()>) -> io::Result<()> {
        match result {
            Err(err) if err.kind() == io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(())
            }
            other => other,
        }
    }
}

impl Write for OutcomeStdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.closed {
            return Ok(buf.len());
        }
        let result = self.inner.write_all(buf);
        self.absorb(result).map(|()| buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.closed {
            return Ok(());
        }
        let result = self.inner.flush();
        self.absorb(result)
    }
}

/// Opens a trace for appending, with a message that names the file.
pub fn open_trace_writer(path: &Path, fsync: bool) -> Result<TraceWriter, CliError> {
    TraceWriter::append(path, fsync).map_err(|err| {
        CliError::input(format!(
            "failed to open trace `{}` for appending: {err}",
            path.display()
        ))
    })
}

/// The device and inode of an existing file (following symlinks), which identify it whatever
/// path names it.
pub fn file_identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// Whether two paths name the same file: the same path after resolving symlinks and `..`, or the
/// same device and inode. A path that does not exist yet is resolved through its nearest existing
/// folder, so `o/results.json` and `./o/../o/results.json` are one file before `o` exists.
pub fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    if let (Ok(ma), Ok(mb)) = (std::fs::metadata(a), std::fs::metadata(b)) {
        return ma.dev() == mb.dev() && ma.ino() == mb.ino();
    }
    match (resolve(a), resolve(b)) {
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

/// `path` made absolute with symlinks resolved as far as it exists; the rest is added as written,
/// `.` dropped and `..` taking away the step before it.
pub fn resolve(path: &Path) -> Option<std::path::PathBuf> {
    use std::path::Component;
    if let Ok(canonical) = path.canonicalize() {
        return Some(canonical);
    }
    let absolute = std::env::current_dir().ok()?.join(path);
    let mut existing = absolute.as_path();
    let mut base = loop {
        match existing.canonicalize() {
            Ok(canonical) => break canonical,
            Err(_) => existing = existing.parent()?,
        }
    };
    for component in absolute.strip_prefix(existing).ok()?.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                base.pop();
            }
            Component::Normal(name) => base.push(name),
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(base)
}
