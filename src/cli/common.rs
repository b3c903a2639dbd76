//! Pieces several commands share: capture flags, reading response files, opening trace outputs.

use std::io::{self, IsTerminal, StdoutLock, Write};
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use super::CliError;
use looptrace::gate::{CommandGate, CommandGateConfig};
pub use looptrace::output::same_file;
use looptrace::terminal::Style;
use looptrace::tools::{TOOL_NAME_CLASH, TaskToolSet, TaskTools, ToolsFile, temp_workdir};
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
    /// The gate program as a path, which no output may overwrite.
    pub fn program_path(&self) -> Option<&Path> {
        self.program.as_deref().map(Path::new)
    }

    /// The gate the flags describe, with the default timeout and output limit.
    pub fn command_gate(&self) -> Option<CommandGate> {
        let program = self.program.clone()?;
        let command = std::iter::once(program).chain(self.args.iter().cloned());
        Some(CommandGate::new(CommandGateConfig::new(command.collect())))
    }
}

/// `--tools-file FILE`.
#[derive(Debug, Args)]
pub struct ToolsFileArgs {
    /// A tools file (command tools, bash, MCP servers, a working-folder template) whose tools
    /// are offered beside the calculator.
    #[arg(long, value_name = "FILE")]
    pub tools_file: Option<PathBuf>,
    /// Write each MCP server's stderr (from the tools file's `mcp_servers`) to
    /// DIR/mcp-<name>.log. Without it, `run` and `replay` discard it and `eval` writes it to
    /// OUT/runs/<eval-id>/logs.
    #[arg(long, value_name = "DIR")]
    pub log_dir: Option<PathBuf>,
}

impl ToolsFileArgs {
    /// The tools file, loaded and checked: every problem with its JSON path is exit 2.
    pub fn load(&self) -> Result<Option<ToolsFile>, CliError> {
        self.tools_file
            .as_deref()
            .map(|path| ToolsFile::load(path).map_err(CliError::input))
            .transpose()
    }

    /// The tools of one task with its own working folder: a fresh temporary copy of the
    /// template (returned, to be removed afterwards), or the tools file's folder without one.
    /// A server that fails to start is exit 3.
    /// Refused (exit 2) when the file passes on a variable in `key_vars`.
    pub fn one_task(
        &self,
        key_vars: &[String],
    ) -> Result<Option<(TaskTools, TaskToolSet, Option<PathBuf>)>, CliError> {
        let Some(file) = self.load()? else {
            return Ok(None);
        };
        file.refuse_key_vars(key_vars).map_err(CliError::input)?;
        if let Some(dir) = &self.log_dir {
            looptrace::output::refuse_blocked_logs("--log-dir", dir, &file.log_paths(dir))
                .map_err(looptrace::eval::engine::EvalError::from)?;
        }
        let temp = match file.template() {
            Some(_) => Some(temp_workdir().map_err(|err| {
                CliError::internal(format!("cannot make a temporary working folder: {err}"))
            })?),
            None => None,
        };
        let tools = TaskTools::new(file, self.log_dir.clone());
        let dir = temp
            .clone()
            .unwrap_or_else(|| tools.file().folder().to_path_buf());
        match tools.for_task(&dir) {
            Ok(set) => Ok(Some((tools, set, temp))),
            Err(failure) => {
                if let Some(temp) = &temp {
                    let _ = std::fs::remove_dir_all(temp);
                }
                if failure.kind == TOOL_NAME_CLASH {
                    Err(CliError::input(format!(
                        "tools file `{}`: {failure}",
                        self.tools_file
                            .as_deref()
                            .unwrap_or(Path::new(""))
                            .display()
                    )))
                } else {
                    Err(CliError::internal(failure))
                }
            }
        }
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

/// How text reports are drawn on standard output: see [`Style::detect`].
pub fn stdout_style() -> Style {
    let stdout = io::stdout();
    Style::detect(
        |name| std::env::var(name).ok(),
        stdout.is_terminal(),
        terminal_width(),
    )
}

/// The style of a text report written to `output`, or to standard output when `None`: a file
/// gets the plain style, whatever the terminal.
pub fn output_style(output: Option<&Path>) -> Style {
    match output {
        Some(_) => Style::plain(),
        None => stdout_style(),
    }
}

/// The width of the terminal on standard output, if it is one.
fn terminal_width() -> Option<u16> {
    // SAFETY: TIOCGWINSZ only fills the `winsize` it is given; a non-terminal fails with ENOTTY.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut size) } == 0;
    (ok && size.ws_col > 0).then_some(size.ws_col)
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

/// Ctrl-C or SIGTERM ends the command at once, as by default, but kills the process groups of
/// running tools and gates first: they run in groups of their own, out of the terminal's reach.
pub fn end_programs_on_signal() {
    looptrace::process::groups::exit_on_signal(
        &[
            (signal_hook::consts::SIGINT, 130),
            (signal_hook::consts::SIGTERM, 143),
        ],
        None,
    );
}

/// Fails when `output` (named by `flag`) is one of the files `inputs` a command reads.
pub fn refuse_overwrite<'a>(
    flag: &str,
    output: &Path,
    inputs: impl IntoIterator<Item = &'a Path>,
) -> Result<(), CliError> {
    match inputs.into_iter().find(|input| same_file(input, output)) {
        Some(input) => Err(CliError::input(format!(
            "{flag} would overwrite the input `{}`",
            input.display()
        ))),
        None => Ok(()),
    }
}

/// Every file a command reads, which no output of it may be: the paths as given, each file a
/// folder or a run store was read through (and a store's view, `results.json`), and the file
/// behind standard input when it is one (`report - -o in.jsonl < in.jsonl`).
pub fn files_read(paths: &[String], inputs: &[looptrace::report::Input]) -> Vec<PathBuf> {
    use looptrace::eval::store::{RESULTS_NAME, RUNS_DIR};
    use looptrace::report::Source;
    let mut files: Vec<PathBuf> = (inputs.iter())
        .map(|input| match &input.source {
            Source::Path(path) | Source::Runs { path, .. } => path.clone(),
            Source::Stdin => PathBuf::from("/dev/stdin"),
            Source::Lines(_) => PathBuf::from(&input.name),
        })
        .collect();
    for path in paths.iter().filter(|path| *path != "-").map(Path::new) {
        if path.join(RUNS_DIR).is_dir() {
            files.push(path.join(RESULTS_NAME));
        }
        files.push(path.to_path_buf());
    }
    files
}
