//! One evaluation at a time in an output folder: two writing runs into one store at once would
//! each fold a view that lacks the other's rows, and `gc` would race a run being written.
//! The lock is `flock` on the folder itself, so no lock file is left behind, and the kernel
//! releases it when the process ends, however it ends.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;

use super::engine::{EvalError, folder_of};

/// How a folder is locked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockMode {
    /// An evaluation writes it: no other may write or read it meanwhile.
    Write,
    /// A rerun reads it (into another folder): any number may, while none writes it.
    Read,
}

/// The lock on an output folder, held until dropped (or the process ends).
#[derive(Debug)]
pub struct FolderLock {
    _folder: File,
}

/// Locks `dir` for this process: `Ok(None)` when another process holds a lock that excludes
/// `mode`. A file system that cannot lock (`ENOLCK`, `EOPNOTSUPP` on some network mounts) runs
/// without the lock rather than refusing every evaluation there.
pub fn lock_folder(dir: &Path, mode: LockMode) -> io::Result<Option<FolderLock>> {
    let folder = File::open(dir)?;
    let operation = match mode {
        LockMode::Write => libc::LOCK_EX,
        LockMode::Read => libc::LOCK_SH,
    };
    // SAFETY: `flock` on a descriptor this function owns; it touches no memory.
    let locked = unsafe { libc::flock(folder.as_raw_fd(), operation | libc::LOCK_NB) };
    if locked != 0 {
        let err = io::Error::last_os_error();
        if err.kind() == io::ErrorKind::WouldBlock {
            return Ok(None);
        }
    }
    Ok(Some(FolderLock { _folder: folder }))
}

/// Takes the lock that lets one evaluation at a time write `out`; refused while another holds
/// it, or while a rerun reads it.
pub fn lock_output(out: &Path) -> Result<FolderLock, EvalError> {
    lock_or_refuse(
        out,
        LockMode::Write,
        "--out",
        "is in use by another looptrace command (an eval writing it, or a rerun or merge reading it): wait for it to end, or choose another --out",
    )
}

/// Takes the lock on the folder of the results an in-place rerun updates, before it reads them;
/// refused while another evaluation writes it or a rerun reads it.
pub(crate) fn lock_rerun_in_place(folder: &Path) -> Result<FolderLock, EvalError> {
    lock_or_refuse(
        folder,
        LockMode::Write,
        "--rerun-failed",
        "is in use by another looptrace command (an eval writing it, or a rerun or merge reading it): wait for it to end",
    )
}

/// Takes the lock that keeps evaluations from writing `folder` while this command (a rerun into
/// another folder, `merge`, named by `flag`) reads it; refused while one writes it.
pub fn lock_read(flag: &str, folder: &Path) -> Result<FolderLock, EvalError> {
    lock_or_refuse(
        folder,
        LockMode::Read,
        flag,
        "is being written by another looptrace eval: wait for it to end",
    )
}

/// The shared lock on the folder a results file at `path` really lies in, when `path` is a
/// symbolic link into a folder other than its own: the evaluation that writes the file locks
/// that folder, not the link's. `None` when `path` lies where it is found.
pub fn lock_read_linked(flag: &str, path: &Path) -> Result<Option<FolderLock>, EvalError> {
    let Ok(real) = std::fs::canonicalize(path) else {
        return Ok(None);
    };
    let real_folder = folder_of(&real);
    if crate::output::same_file(&real_folder, &folder_of(path)) {
        return Ok(None);
    }
    lock_read(flag, &real_folder).map(Some)
}

/// Locks `folder` in `mode`, or refuses saying it is `busy` under `flag`.
fn lock_or_refuse(
    folder: &Path,
    mode: LockMode,
    flag: &str,
    busy: &str,
) -> Result<FolderLock, EvalError> {
    let refuse = |message: String| EvalError::Busy {
        flag: flag.to_owned(),
        folder: folder.to_path_buf(),
        message,
    };
    match lock_folder(folder, mode) {
        Ok(Some(lock)) => Ok(lock),
        Ok(None) => Err(refuse(format!("{flag} `{}` {busy}", folder.display()))),
        Err(err) => Err(refuse(format!(
            "{flag} `{}`: cannot open the folder: {err}",
            folder.display()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_writer_excludes_everyone_and_readers_only_writers() {
        let dir = tempfile::tempdir().unwrap();
        let lock = |mode| lock_folder(dir.path(), mode).unwrap();
        let writer = lock(LockMode::Write);
        assert!(writer.is_some());
        // Each call opens the folder anew, as another process would.
        assert!(lock(LockMode::Write).is_none());
        assert!(lock(LockMode::Read).is_none());
        drop(writer);
        let readers = [lock(LockMode::Read), lock(LockMode::Read)];
        assert!(readers.iter().all(Option::is_some));
        assert!(lock(LockMode::Write).is_none());
        drop(readers);
        assert!(lock(LockMode::Write).is_some());
    }
}
