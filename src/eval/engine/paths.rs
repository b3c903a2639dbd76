//! The checks `eval` and `merge` make on every output path before they write anything: an output
//! is never an input (nor a trace an input's rows name), a symbolic link, a folder, or in a folder
//! that cannot be written. Each refusal is an [`EvalError::Output`] naming the flag and the path.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use super::EvalError;
use crate::eval::ResultsFile;
use crate::output::{file_identity, refuse_file_as_folder, refuse_not_regular, resolve};
use crate::tools::ToolsFile;

/// Input files by device and inode, so an output is matched however its path is written; an
/// input that does not exist (yet) by its resolved path.
pub struct Inputs<'a> {
    existing: HashMap<(u64, u64), &'a PathBuf>,
    missing: Vec<(PathBuf, &'a PathBuf)>,
}

impl<'a> Inputs<'a> {
    pub fn of(paths: impl IntoIterator<Item = &'a PathBuf>) -> Self {
        let mut inputs = Inputs {
            existing: HashMap::new(),
            missing: Vec::new(),
        };
        for path in paths {
            match file_identity(path) {
                Some(id) => {
                    inputs.existing.insert(id, path);
                }
                None => inputs
                    .missing
                    .extend(resolve(path).map(|resolved| (resolved, path))),
            }
        }
        inputs
    }

    /// Fails when `output` is one of the inputs.
    pub fn refuse_overwriting(&self, flag: &str, output: &Path) -> Result<(), EvalError> {
        let input = match file_identity(output) {
            Some(id) => self.existing.get(&id).copied(),
            None if self.missing.is_empty() => None,
            None => resolve(output).and_then(|resolved| {
                self.missing
                    .iter()
                    .find(|(missing, _)| *missing == resolved)
                    .map(|(_, path)| *path)
            }),
        };
        match input {
            Some(input) => Err(EvalError::output(
                flag,
                output,
                format!(
                    "{flag} would overwrite the input `{}` (with `{}`)",
                    input.display(),
                    output.display()
                ),
            )),
            None => Ok(()),
        }
    }
}

/// Fails when `output` is a symbolic link: `command` never writes through one.
pub fn refuse_symlink(command: &str, flag: &str, output: &Path) -> Result<(), EvalError> {
    if crate::output::is_symlink(output) {
        return Err(EvalError::output(
            flag,
            output,
            format!(
                "{flag}: `{}`: it is a symbolic link, and {command} never writes through one (remove it or choose another path)",
                output.display()
            ),
        ));
    }
    Ok(())
}

/// The folder a file is written in (`.` for a bare file name).
pub fn folder_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Fails unless a file can be created in `dir`: a read-only mount or a folder without write
/// permission is bad input, found before anything is read or written.
pub fn probe_writable(flag: &str, dir: &Path) -> Result<(), EvalError> {
    let probe = dir.join(format!(".looptrace-probe-{}", std::process::id()));
    let created = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe);
    match created {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(err) => Err(EvalError::output(
            flag,
            dir,
            format!("{flag}: cannot write in `{}`: {err}", dir.display()),
        )),
    }
}

/// Fails when an output is there but of a kind its command cannot write: `--out` names a file the
/// command keeps (results), which must be a regular file; a report file (`--junit`, `--html`) may
/// also be a named pipe or a device (`--junit /dev/null`), never a folder or a socket.
pub fn refuse_wrong_kind(flag: &str, path: &Path) -> Result<(), EvalError> {
    match flag {
        "--out" => Ok(refuse_not_regular(flag, path)?),
        _ => refuse_folder_or_socket(flag, path),
    }
}

/// Fails when an output file's path is a folder or a socket, which cannot be written as a file
/// (a named pipe or a device can: `--junit /dev/null`).
fn refuse_folder_or_socket(flag: &str, path: &Path) -> Result<(), EvalError> {
    let kind = std::fs::metadata(path).ok().map(|meta| meta.file_type());
    let what = match kind {
        Some(kind) if kind.is_dir() => "a folder",
        Some(kind) if std::os::unix::fs::FileTypeExt::is_socket(&kind) => "a socket",
        _ => return Ok(()),
    };
    Err(EvalError::output(
        flag,
        path,
        format!("{flag}: `{}` is {what}, not a file", path.display()),
    ))
}

/// Fails when `folder`, one eval makes and fills inside its output folder (`what` says what for),
/// is a symbolic link or not a folder. Through a link, eval would write (and remove) files in a
/// folder outside `--out`, out of reach of the lock that keeps one evaluation at a time there.
pub fn refuse_own_folder_elsewhere(flag: &str, folder: &Path, what: &str) -> Result<(), EvalError> {
    if std::fs::symlink_metadata(folder).is_ok_and(|meta| meta.file_type().is_symlink()) {
        return Err(EvalError::output(
            flag,
            folder,
            format!(
                "{flag}: `{}` is a symbolic link, and {what}: eval writes only inside its output folder, never through a link (remove the link or choose another {flag})",
                folder.display()
            ),
        ));
    }
    Ok(refuse_file_as_folder(flag, folder, what)?)
}

/// Fails when the MCP servers of `tools` could not write their logs in `dir` (`flag` names it):
/// `dir` is not a folder, or a server's log there is not a regular file (a named pipe would
/// block the server's start).
pub fn refuse_blocked_logs(flag: &str, tools: &ToolsFile, dir: &Path) -> Result<(), EvalError> {
    let logs: Vec<PathBuf> = tools
        .mcp_servers()
        .iter()
        .map(|s| s.log_path(dir))
        .collect();
    Ok(crate::output::refuse_blocked_logs(flag, dir, &logs)?)
}

/// Whether `path` is a character or block device (`/dev/null`), which any number of outputs
/// may be written to.
pub fn is_device(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(path)
        .is_ok_and(|meta| meta.file_type().is_char_device() || meta.file_type().is_block_device())
}

/// Fails when one of `outputs` is a trace a row of `results` (read from `path`) names: an input
/// of the command (`--html` reads it, `report` after it), or a run that results still name. Only
/// outputs that exist can be one; they are compared by device and inode.
pub fn refuse_traces_as_outputs(
    outputs: &[(&str, &PathBuf)],
    results: &ResultsFile,
    path: &Path,
    whose: &str,
) -> Result<(), EvalError> {
    let existing: Vec<(&str, &PathBuf, (u64, u64))> = outputs
        .iter()
        .filter_map(|&(flag, output)| file_identity(output).map(|id| (flag, output, id)))
        .collect();
    if existing.is_empty() {
        return Ok(());
    }
    let folder = folder_of(path);
    for trace in named_traces(results) {
        let trace = folder.join(trace);
        let Some(id) = file_identity(&trace) else {
            continue;
        };
        if let Some((flag, output, _)) = existing.iter().find(|(_, _, other)| *other == id) {
            return Err(EvalError::output(
                flag,
                output,
                format!(
                    "{flag} `{}` is the trace `{}` of {whose} `{}`: choose another file",
                    output.display(),
                    trace.display(),
                    path.display()
                ),
            ));
        }
    }
    Ok(())
}

/// The trace files the rows of `results` name, each once (paths relative to their folder).
pub fn named_traces(results: &ResultsFile) -> HashSet<&str> {
    results
        .tasks
        .iter()
        .filter_map(|row| row.trace.as_deref())
        .collect()
}
