//! Copying into a run store: a rerun with `--out` elsewhere starts from copies of the runs the
//! results it updates name, so the new folder is complete on its own; converting a folder of
//! results format 1 copies its traces into its run.

use std::fs::{self, File};
use std::io;
use std::path::Path;

use super::run_folder::{RUNS_DIR, StoreError, create_whole};

/// Copies runs `ids` from `from/runs/` to `to/runs/`, every file created new, each run renamed
/// into place whole; a run already there (run ids are unique, so it is the same run) is left as
/// it is.
pub fn copy_runs(from: &Path, to: &Path, ids: &[String]) -> Result<(), StoreError> {
    for id in ids.iter().filter(|id| !to.join(RUNS_DIR).join(id).exists()) {
        // A run gathered beside its results through a link is copied from where it is.
        let run = from.join(RUNS_DIR).join(id);
        let run = fs::canonicalize(&run).unwrap_or(run);
        create_whole(to, id, |staging| copy_new(&run, staging))?;
    }
    Ok(())
}

/// Copies `from` to `to`, which is created new: a folder with what it holds, or a regular file;
/// links and other kinds of files are not followed or copied.
pub fn copy_new(from: &Path, to: &Path) -> io::Result<()> {
    let kind = fs::symlink_metadata(from)?.file_type();
    if kind.is_dir() {
        fs::create_dir(to)?;
        for entry in fs::read_dir(from)? {
            let entry = entry?;
            copy_new(&entry.path(), &to.join(entry.file_name()))?;
        }
    } else if kind.is_file() {
        let mut copy = crate::output::create_new_append(to)?;
        io::copy(&mut File::open(from)?, &mut copy)?;
    }
    Ok(())
}
