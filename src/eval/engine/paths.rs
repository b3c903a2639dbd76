//! The checks `eval` and `merge` make on every output path before they write anything: an output
//! is never an input (nor a trace an input's rows name), a symbolic link, a folder, or in a folder
//! that cannot be written. Each refusal is an [`EvalError::Output`] naming the flag and the path.

use std::path::{Path, PathBuf};

use super::EvalError;
use crate::eval::ResultsFile;
use crate::output::{refuse_file_as_folder, refuse_not_regular, same_file, special_kind};

/// Fails unless `output`, named by `flag`, may be written: never through a symbolic link (the
/// refusal every looptrace output gets), never over one of `inputs` (however their paths are
/// written: through links, `..`, or before they exist), never a folder or a socket; a file it
/// keeps (all but a report, `--junit` or `--html`, which may be a named pipe or a device:
/// `--junit /dev/null`) only where a regular file is or none.
pub fn check_output(flag: &str, output: &Path, inputs: &[PathBuf]) -> Result<(), EvalError> {
    let shown = output.display();
    let refuse = |message: String| Err(EvalError::output(flag, output, message));
    if let Err(link) = crate::output::refuse_symlink(output) {
        return refuse(format!(
            "{flag}: `{shown}`: {link} (remove it or choose another path)"
        ));
    }
    if !matches!(flag, "--junit" | "--html") {
        refuse_not_regular(flag, output)?;
    } else if let Ok(meta) = std::fs::metadata(output)
        && let Some(what) = (meta.is_dir().then_some("a folder"))
            .or(special_kind(meta.file_type()).filter(|kind| *kind == "a socket"))
    {
        return refuse(format!("{flag}: `{shown}` is {what}, not a file"));
    }
    match inputs.iter().find(|input| same_file(input, output)) {
        Some(input) => refuse(format!(
            "{flag} would overwrite the input `{}` (with `{shown}`)",
            input.display()
        )),
        None => Ok(()),
    }
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
    let Err(err) = crate::output::create_new_append(&probe) else {
        let _ = std::fs::remove_file(&probe);
        return Ok(());
    };
    let message = format!("{flag}: cannot write in `{}`: {err}", dir.display());
    Err(EvalError::output(flag, dir, message))
}

/// Fails when `folder`, one eval makes and fills inside its output folder (`what` says what for),
/// is a symbolic link or not a folder. Through a link, eval would write (and remove) files in a
/// folder outside `--out`, out of reach of the lock that keeps one evaluation at a time there.
pub fn refuse_own_folder_elsewhere(flag: &str, folder: &Path, what: &str) -> Result<(), EvalError> {
    if crate::output::is_symlink(folder) {
        let shown = folder.display();
        let message = format!(
            "{flag}: `{shown}` is a symbolic link, and {what}: eval writes only inside its output folder, never through a link (remove the link or choose another {flag})"
        );
        return Err(EvalError::output(flag, folder, message));
    }
    Ok(refuse_file_as_folder(flag, folder, what)?)
}

/// Whether `path` is a character or block device (`/dev/null`), which any number of outputs
/// may be written to.
pub fn is_device(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|meta| special_kind(meta.file_type()) == Some("a device"))
}

/// Fails when one of `outputs` that exists is a trace a row of `results` (read from `path`)
/// names: an input of the command (`--html` reads it, `report` after it), or a run that results
/// still name. An output that does not exist yet is none of them.
pub fn refuse_traces_as_outputs(
    outputs: &[(&str, &PathBuf)],
    results: &ResultsFile,
    path: &Path,
) -> Result<(), EvalError> {
    let folder = folder_of(path);
    let mut traces: Vec<PathBuf> = (results.tasks.iter())
        .filter_map(|row| row.trace.as_deref().map(|trace| folder.join(trace)))
        .collect();
    // Each file once: one file holds every run of the single layout.
    traces.sort_unstable();
    traces.dedup();
    (outputs.iter().filter(|(_, output)| output.exists()))
        .try_for_each(|&(flag, output)| check_output(flag, output, &traces))
}
