//! `DIR/results.json` as a view of the run store: a run's rows folded over those of its parents,
//! the latest row per row identity winning, in the run's task order.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use super::row_key::RowKey;
use super::run_folder::{RUNS_DIR, RunKind, RunRead, StoreError, read_run};
use crate::eval::{RESULTS_FORMAT, ResultsFile, TaskResult, Totals};

/// The runs of one output folder, each read at most once.
pub struct Store {
    out: PathBuf,
    read: HashMap<String, Option<RunRead>>,
}

/// A run's rows after the fold, each with the run it came from.
type Folded = Vec<(String, TaskResult)>;

impl Store {
    /// The store of the output folder `out`.
    pub fn new(out: &Path) -> Store {
        Store {
            out: out.to_path_buf(),
            read: HashMap::new(),
        }
    }

    /// Run `id`, read once; `None` when its folder is gone (`gc` removes runs whose rows every
    /// view has replaced).
    pub fn run(&mut self, id: &str) -> Result<Option<&RunRead>, StoreError> {
        if !self.read.contains_key(id) {
            let run = if self.out.join(RUNS_DIR).join(id).is_dir() {
                Some(read_run(&self.out, id)?)
            } else {
                None
            };
            self.read.insert(id.to_owned(), run);
        }
        Ok(self.read.get(id).and_then(Option::as_ref))
    }

    /// The rows of run `id` folded over its parents', each with the id of the run that wrote it.
    fn fold(&mut self, id: &str, depth: usize) -> Result<Folded, StoreError> {
        // Parents are always older runs, so a chain cannot loop unless a header was edited.
        if depth > 10_000 {
            return Ok(Vec::new());
        }
        let Some(run) = self.run(id)?.cloned() else {
            return Ok(Vec::new());
        };
        let mut by_key: HashMap<RowKey, (String, TaskResult)> = HashMap::new();
        let mut parents = run.header.parents.clone();
        parents.sort();
        for parent in &parents {
            for (from, row) in self.fold(parent, depth + 1)? {
                by_key.insert(RowKey::of(&row), (from, row));
            }
        }
        let rerun = run.header.kind == RunKind::Rerun;
        for (from, row) in by_key.values_mut() {
            // What a rerun did not run again it carried over.
            if rerun && from != id {
                row.carried_over = true;
            }
        }
        for row in run.rows {
            by_key.insert(RowKey::of(&row), (id.to_owned(), row));
        }
        let position: HashMap<&str, usize> = run
            .header
            .tasks
            .iter()
            .enumerate()
            .map(|(i, t)| (t.as_str(), i))
            .collect();
        let repeats = run.header.repeats;
        let mut rows: Folded = by_key
            .into_values()
            .filter(|(_, row)| {
                // An evaluation or its resume lists only rows it would write itself.
                rerun
                    || (position.contains_key(row.id.as_str())
                        && (1..=repeats).contains(&row.repeat.unwrap_or(1))
                        && row.repeat.is_some() == (repeats > 1))
            })
            .collect();
        // Under a model matrix a task's rows for its models sit together, in the models' order.
        let model_at = |row: &TaskResult| {
            row.given_model()
                .and_then(|m| run.header.models.iter().position(|given| given == m))
        };
        rows.sort_by(|(_, a), (_, b)| {
            let at = |row: &TaskResult| position.get(row.id.as_str()).copied();
            (
                at(a).unwrap_or(usize::MAX),
                at(a).is_none().then(|| a.id.clone()),
                model_at(a),
                a.repeat,
            )
                .cmp(&(
                    at(b).unwrap_or(usize::MAX),
                    at(b).is_none().then(|| b.id.clone()),
                    model_at(b),
                    b.repeat,
                ))
        });
        Ok(rows)
    }
}

/// The view of run `head` of the output folder `out`: what `DIR/results.json` holds after it.
pub fn rebuild_view(out: &Path, head: &str) -> Result<ResultsFile, StoreError> {
    let mut store = Store::new(out);
    let folded = store.fold(head, 0)?;
    let Some(run) = store.run(head)? else {
        let path = out.join(RUNS_DIR).join(head);
        return Err(StoreError::Io {
            action: "read",
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such run"),
            path,
        });
    };
    let header = &run.header;
    let seal = run.seal.clone().unwrap_or_default();
    let runs: BTreeSet<String> = folded.iter().map(|(from, _)| from.clone()).collect();
    let tasks: Vec<TaskResult> = folded.into_iter().map(|(_, row)| row).collect();
    Ok(ResultsFile {
        format: RESULTS_FORMAT.to_owned(),
        looptrace_version: header.looptrace_version.clone(),
        created_at: header.created_at.clone(),
        eval_id: Some(header.eval_id.clone()),
        suite: header.suite.clone(),
        shard: header.shard,
        selection: header.selection.clone(),
        models: header.models.clone(),
        repeats: (header.repeats > 1).then_some(header.repeats),
        adaptive: header.adaptive.clone(),
        capture: header.capture,
        // A run a crash ended never finished its rows.
        interrupted: run.seal.is_none() || seal.interrupted,
        not_reached: seal.not_reached,
        partial: false,
        missing_shards: Vec::new(),
        runs: runs.into_iter().collect(),
        totals: Totals::of(&tasks),
        tasks,
    })
}
