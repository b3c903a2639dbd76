//! One evaluation at a time in an output folder: two writing the same partial file and traces
//! would mix their runs, and the second to finish would find the partial file changed under it.
//! The lock is `flock` on the folder itself, so no lock file is left behind, and the kernel
//! releases it when the process ends, however it ends.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;

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
    fn a_second_lock_on_a_folder_waits_for_the_first_to_go() {
        let dir = tempfile::tempdir().unwrap();
        let first = lock_folder(dir.path()).unwrap();
        assert!(first.is_some());
        // Another open file description, as another process would have.
        assert!(lock_folder(dir.path()).unwrap().is_none());
        drop(first);
        assert!(lock_folder(dir.path()).unwrap().is_some());
    }
}
