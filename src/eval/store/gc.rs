//! `looptrace gc DIR`: which runs of an output folder to remove, a policy apart from writing them.
//! A run stays when the view (`results.json`) draws rows from it, when it is the newest run and
//! newer than the view (what `--resume` continues or writes the view of) or one whose rows that
//! run is folded over, or when it is among the `--keep N` newest sealed runs; every other run
//! (unsealed leftovers of crashes, runs every row of which a later run replaced) goes, and so do
//! the staging folders of runs a crash left unmade.

use std::path::Path;

use super::run_folder::{RUNS_DIR, StoreError, folders, io_error, is_run_id, read_run};

/// What `gc` removes and keeps.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GcPlan {
    /// Runs to remove: id, bytes, and why.
    pub remove: Vec<(String, u64, &'static str)>,
    /// Runs kept, and their bytes.
    pub kept: Vec<(String, u64)>,
}

/// The bytes of the files under `path` (links not followed).
pub fn bytes_under(path: &Path) -> u64 {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => (std::fs::read_dir(path).into_iter().flatten().flatten())
            .map(|entry| bytes_under(&entry.path()))
            .sum(),
        Ok(meta) => meta.len(),
        Err(_) => 0,
    }
}

/// The plan for `out`, given the runs its view names (`referenced`) and how many other sealed
/// runs to keep, newest first; the staging folders of runs a crash left unmade go too.
pub fn plan_gc(out: &Path, referenced: &[String], mut keep: usize) -> Result<GcPlan, StoreError> {
    let names = folders(out)?;
    let mut needed = referenced.to_vec();
    // The newest run, when newer than the view, is what `--resume` continues (unsealed) or whose
    // view it writes (a crash came between the seal and the view): it stays, and so do the runs
    // its rows are folded over (a resume of a resume keeps its parent's rows).
    if let Some(newest) = names.iter().rfind(|name| is_run_id(name))
        && referenced.iter().all(|r| r < newest)
    {
        needed.extend(super::view::rebuild_view(out, newest)?.runs);
        needed.push(newest.clone());
    }
    let mut plan = GcPlan::default();
    for name in names.iter().rev() {
        let why = if name.starts_with('.') && name.ends_with(".new") {
            Some("a crash ended it before it became a run")
        } else if !is_run_id(name) {
            continue;
        } else if needed.contains(name) {
            None
        } else if !read_run(out, name).is_ok_and(|run| run.seal.is_some()) {
            Some("unsealed: a crash ended it and no view names it")
        } else if keep > 0 {
            keep -= 1;
            None
        } else {
            Some("no view names it")
        };
        let bytes = bytes_under(&out.join(RUNS_DIR).join(name));
        match why {
            Some(why) => plan.remove.insert(0, (name.clone(), bytes, why)),
            None => plan.kept.insert(0, (name.clone(), bytes)),
        }
    }
    Ok(plan)
}

/// Removes the runs `plan` names, and the temporary files a crash left while the view was
/// replaced; returns the first failure, having tried every run.
pub fn remove_runs(out: &Path, plan: &GcPlan) -> Result<(), StoreError> {
    // `write_results` writes the view to `.results.json.tmp-*` beside it, then renames it.
    let temp = |name: &str| name.starts_with(".results.json.tmp-");
    for entry in std::fs::read_dir(out).into_iter().flatten().flatten() {
        if temp(&entry.file_name().to_string_lossy())
            && entry.file_type().is_ok_and(|t| t.is_file())
        {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    let mut first = None;
    for (id, _, _) in &plan.remove {
        let path = out.join(RUNS_DIR).join(id);
        if let Err(err) = std::fs::remove_dir_all(&path) {
            first.get_or_insert(io_error("remove", &path)(err));
        }
    }
    first.map_or(Ok(()), Err)
}
