//! `eval --replay-models RESULTS`: an earlier evaluation's runs as the recordings its agent
//! tasks are answered from. Each attempt replays the run of the row with its identity (task,
//! model, repeat) in those results, read from that row's trace when the attempt starts.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::eval::read_results;
use crate::proxy::{IgnoredPath, Recordings};

/// The results file's name inside an output folder.
const RESULTS_NAME: &str = "results.json";

/// The earlier results: for each row identity, its trace and run id.
#[derive(Clone, Debug)]
pub struct ModelRecordings {
    /// The results as named.
    source: PathBuf,
    /// `(task id, model, repeat)` to `(trace file, run id)`.
    runs: HashMap<(String, String, u32), (PathBuf, String)>,
}

impl ModelRecordings {
    /// Reads the results at `path` (a `results.json`, or the folder holding one).
    pub fn read(path: &Path) -> Result<ModelRecordings, String> {
        let file = if path.is_dir() {
            path.join(RESULTS_NAME)
        } else {
            path.to_path_buf()
        };
        let results = read_results(&file)?;
        let folder = match file.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let runs = results
            .tasks
            .iter()
            .filter_map(|row| {
                let trace = row.trace.as_ref()?;
                let run_id = row.run_id.clone()?;
                let key = (row.id.clone(), row.model.clone(), row.repeat.unwrap_or(1));
                Some((key, (folder.join(trace), run_id)))
            })
            .collect();
        Ok(ModelRecordings {
            source: path.to_path_buf(),
            runs,
        })
    }

    /// The recorded run of the row `(task, model, repeat)`, to answer an attempt from.
    pub fn for_row(
        &self,
        task: &str,
        model: &str,
        repeat: u32,
        ignored: &[IgnoredPath],
    ) -> Result<Recordings, String> {
        let key = (task.to_owned(), model.to_owned(), repeat);
        let Some((trace, run_id)) = self.runs.get(&key) else {
            return Err(format!(
                "`{}` has no run of task `{task}` with model `{model}`, repeat {repeat}, to replay",
                self.source.display()
            ));
        };
        Recordings::load_run(trace, run_id, ignored).map_err(|err| err.to_string())
    }
}
