//! One writer at a time in an output folder (`eval`, an in-place `--rerun-failed`, `gc`): two
//! runs written into one store at once would each fold a view that lacks the other's rows, and
//! `gc` would race a run being written. Readers (`merge`, `report`, a rerun into another folder)
//! take no lock: they read the view, replaced whole, and the runs it names, which are sealed and
//! never written again. The lock is `flock` on the folder itself, so no lock file is left
//! behind, and the kernel releases it when the process ends, however it ends.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;

use super::engine::EvalError;

/// The lock on an output folder, held until dropped (or the process ends).
#[derive(Debug)]
pub struct FolderLock {
    _folder: File,
}

/// Locks `dir` for this process: `Ok(None)` when another process holds it. A file system that
/// cannot lock (`ENOLCK`, `EOPNOTSUPP` on some network mounts) runs without the lock rather than
/// refusing every evaluation there.
pub fn lock_folder(dir: &Path) -> io::Result<Option<FolderLock>> {
    let folder = File::open(dir)?;
    // SAFETY: `flock` on a descriptor this function owns; it touches no memory.
    let locked = unsafe { libc::flock(folder.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if locked != 0 && io::Error::last_os_error().kind() == io::ErrorKind::WouldBlock {
        return Ok(None);
    }
    Ok(Some(FolderLock { _folder: folder }))
}

/// Takes the lock that lets one command at a time write `folder`, which `flag` names (`--out`;
/// `--rerun-failed`: the folder of the results an in-place rerun updates, locked before it reads
/// them); refused while another holds it.
pub fn lock_output(flag: &str, folder: &Path) -> Result<FolderLock, EvalError> {
    let or = (flag == "--out").then_some(", or choose another --out");
    let or = or.unwrap_or_default();
    let shown = folder.display();
    let message = match lock_folder(folder) {
        Ok(Some(lock)) => return Ok(lock),
        Ok(None) => format!(
            "{flag} `{shown}` is in use by another looptrace command (an eval, a rerun or gc writing it): wait for it to end{or}"
        ),
        Err(err) => format!("{flag} `{shown}`: cannot open the folder: {err}"),
    };
    Err(EvalError::Busy {
        flag: flag.to_owned(),
        folder: folder.to_path_buf(),
        message,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_holder_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let lock = || lock_folder(dir.path()).unwrap();
        let writer = lock();
        assert!(writer.is_some());
        // Each call opens the folder anew, as another process would.
        assert!(lock().is_none());
        drop(writer);
        assert!(lock().is_some());
    }
}
