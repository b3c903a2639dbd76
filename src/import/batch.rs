//! Batch output folders: `mini-extra swebench` writes `<id>/<id>.traj.json` per instance and
//! `exit_statuses_*.yaml` summaries side by side. Read together, each instance counts once: its
//! trajectory wins, and a summary adds only the instances no trajectory covers.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// The instances each folder's trajectories cover, among the files of one import or report.
#[derive(Debug, Default)]
pub struct BatchFolders {
    covered: HashMap<PathBuf, HashSet<String>>,
}

impl BatchFolders {
    /// Which instance ids the mini-swe-agent trajectories among `files` cover, per batch folder:
    /// `<folder>/<id>/<id>.traj.json` (as `mini-extra swebench` writes them) and
    /// `<folder>/<id>.traj.json`.
    pub fn of(files: &[PathBuf]) -> Self {
        let mut covered: HashMap<PathBuf, HashSet<String>> = HashMap::new();
        for file in files {
            let Some(id) = file
                .file_name()
                .and_then(|name| name.to_str())
                .and_then(|name| name.strip_suffix(".traj.json"))
            else {
                continue;
            };
            let Some(parent) = file.parent() else {
                continue;
            };
            let folder = match parent.file_name().and_then(|name| name.to_str()) {
                Some(own) if own == id => parent.parent().unwrap_or(parent),
                _ => parent,
            };
            covered
                .entry(folder.to_path_buf())
                .or_default()
                .insert(id.to_owned());
        }
        BatchFolders { covered }
    }

    /// The instances a batch summary at `summary` must leave out: those with a trajectory in
    /// its folder. `None` for any other file.
    pub fn covered(&self, summary: &Path) -> Option<&HashSet<String>> {
        let name = summary.file_name()?.to_str()?;
        if !(name.starts_with("exit_statuses")
            && (name.ends_with(".yaml") || name.ends_with(".yml")))
        {
            return None;
        }
        self.covered.get(summary.parent()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trajectories_cover_their_folder_s_summaries() {
        let files: Vec<PathBuf> = [
            "out/a__a-1/a__a-1.traj.json",
            "out/b.traj.json",
            "out/exit_statuses_1.yaml",
            "other/exit_statuses_2.yaml",
            "out/c/other.traj.json",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        let batch = BatchFolders::of(&files);
        let covered = batch
            .covered(Path::new("out/exit_statuses_1.yaml"))
            .unwrap();
        let mut ids: Vec<&str> = covered.iter().map(String::as_str).collect();
        ids.sort();
        assert_eq!(ids, ["a__a-1", "b"]);
        assert!(
            batch
                .covered(Path::new("other/exit_statuses_2.yaml"))
                .is_none()
        );
        assert!(batch.covered(Path::new("out/b.traj.json")).is_none());
        // A trajectory in a folder not named after it covers the folder it is in.
        assert!(
            batch
                .covered(Path::new("out/c/exit_statuses_3.yaml"))
                .unwrap()
                .contains("other")
        );
    }
}
