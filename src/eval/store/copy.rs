//! Copying runs into another output folder: a rerun with `--out` elsewhere starts from copies of
//! the runs the results it updates name, so the new folder is complete on its own.

use std::fs::{self, File};
use std::io;
use std::path::Path;

use super::run_folder::{RUNS_DIR, StoreError, create_whole};

/// Copies runs `ids` from `from/runs/` to `to/runs/`, every file created new, each run renamed
/// into place whole; a run already there (run ids are unique, so it is the same run) is left as
/// it is.
pub fn copy_runs(from: &Path, to: &Path, ids: &[String]) -> Result<(), StoreError> {
    for id in ids.iter().filter(|id| !to.join(RUNS_DIR).join(id).exists()) {
        create_whole(to, id, |staging| {
            copy_tree(&from.join(RUNS_DIR).join(id), staging)
        })?;
    }
    Ok(())
}

/// Copies the folders and regular files under `from` to the new folder `to`; links and other
/// kinds of files are not followed or copied.
fn copy_tree(from: &Path, to: &Path) -> io::Result<()> {
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            fs::create_dir(&target)?;
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            copy_file_new(&entry.path(), &target)?;
        }
    }
    Ok(())
}

/// Copies the regular file `from` to `to`, which is created new, with the folders it needs.
pub fn copy_file_new(from: &Path, to: &Path) -> io::Result<()> {
    if let Some(parent) = to.parent() {
        fs::create_dir_all(parent)?;
    }
    let mut source = File::open(from)?;
    let mut copy = crate::output::create_new_append(to)?;
    io::copy(&mut source, &mut copy)?;
    Ok(())
}
