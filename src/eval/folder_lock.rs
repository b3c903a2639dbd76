//! One evaluation at a time in an output folder: two writing the same partial file and traces
//! would mix their runs, and the second to finish would find the partial file changed under it.
//! The lock is `flock` on the folder itself, so no lock file is left behind, and the kernel
//! releases it when the process ends, however it ends.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;

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
