//! The locks `eval` and `merge` take on the folders they write and read ([`looptrace::eval::lock_folder`]),
//! and what it says when another evaluation holds one: exit 2, naming the folder.

use std::path::Path;

use super::CliError;
use super::common::same_file;
use super::output_checks::folder_of;

/// Takes the lock that lets one evaluation at a time write `out`; fails (exit 2) while another
/// holds it, or while a rerun reads it.
pub fn lock_output(out: &Path) -> Result<looptrace::eval::FolderLock, CliError> {
    lock_or_refuse(
        out,
        looptrace::eval::LockMode::Write,
        "--out",
        "is in use by another looptrace command (an eval writing it, or a rerun or merge reading it): wait for it to end, or choose another --out",
    )
}

/// Takes the lock on the folder of the results an in-place rerun updates, before it reads them;
/// fails (exit 2) while another evaluation writes it or a rerun reads it.
pub fn lock_rerun_in_place(folder: &Path) -> Result<looptrace::eval::FolderLock, CliError> {
    lock_or_refuse(
        folder,
        looptrace::eval::LockMode::Write,
        "--rerun-failed",
        "is in use by another looptrace command (an eval writing it, or a rerun or merge reading it): wait for it to end",
    )
}

/// Takes the lock that keeps evaluations from writing `folder` while this command (a rerun into
/// another folder, `merge`, named by `flag`) reads it; fails (exit 2) while one writes it.
pub fn lock_read(flag: &str, folder: &Path) -> Result<looptrace::eval::FolderLock, CliError> {
    lock_or_refuse(
        folder,
        looptrace::eval::LockMode::Read,
        flag,
        "is being written by another looptrace eval: wait for it to end",
    )
}

/// Locks `folder` in `mode`, or fails (exit 2) saying it `busy` under `flag`.
fn lock_or_refuse(
    folder: &Path,
    mode: looptrace::eval::LockMode,
    flag: &str,
    busy: &str,
) -> Result<looptrace::eval::FolderLock, CliError> {
    match looptrace::eval::lock_folder(folder, mode) {
        Ok(Some(lock)) => Ok(lock),
        Ok(None) => Err(CliError::input(format!(
            "{flag} `{}` {busy}",
            folder.display()
        ))),
        Err(err) => Err(CliError::input(format!(
            "{flag} `{}`: cannot open the folder: {err}",
            folder.display()
        ))),
    }
}

/// The shared lock on the folder a results file at `path` really lies in, when `path` is a
/// symbolic link into a folder other than its own: the evaluation that writes the file locks
/// that folder, not the link's. `None` when `path` lies where it is found.
pub fn lock_read_linked(
    flag: &str,
    path: &Path,
) -> Result<Option<looptrace::eval::FolderLock>, CliError> {
    let Ok(real) = std::fs::canonicalize(path) else {
        return Ok(None);
    };
    let real_folder = folder_of(&real);
    if same_file(&real_folder, &folder_of(path)) {
        return Ok(None);
    }
    lock_read(flag, &real_folder).map(Some)
}
