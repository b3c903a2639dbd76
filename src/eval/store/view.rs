//! `DIR/results.json` as a view of the run store: a run's rows folded over those of its parents,
//! the latest row per row identity winning, in the run's task order.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;

use super::row_key::RowKey;
use super::run_folder::{RUNS_DIR, RunHeader, RunKind, RunRead, Seal, StoreError, read_run};
use crate::eval::{RESULTS_FORMAT, ResultsFile, TaskResult, Totals};

/// The runs of one output folder read so far; a run whose folder is gone (`gc` removes runs whose
/// rows every view has replaced) is never among them, and adds no rows.
type Runs = HashMap<String, RunRead>;

/// The rows of run `id` folded over its parents', each by identity with the id of the run that
/// wrote it.
fn fold(
    out: &Path,
    id: &str,
    runs: &mut Runs,
    depth: usize,
) -> Result<HashMap<RowKey, (String, TaskResult)>, StoreError> {
    if !runs.contains_key(id) && out.join(RUNS_DIR).join(id).is_dir() {
        runs.insert(id.to_owned(), read_run(out, id)?);
    }
    // Parents are always older runs, so a chain cannot loop unless a header was edited.
    let (Some(run), true) = (runs.get(id).cloned(), depth < 10_000) else {
        return Ok(HashMap::new());
    };
    let (mut rows, h) = (HashMap::new(), &run.header);
    for parent in h.parents.iter().collect::<BTreeSet<_>>() {
        rows.extend(fold(out, parent, runs, depth + 1)?);
    }
    if h.kind == RunKind::Rerun {
        // What a rerun did not run again it carried over.
        rows.values_mut()
            .for_each(|(_, row)| row.carried_over = true);
    } else {
        let tasks: HashSet<&str> = h.tasks.iter().map(String::as_str).collect();
        // An evaluation or its resume keeps only rows it would write itself.
        let repeat = |r| h.repeats > 1 && (1..=h.repeats).contains(&r);
        rows.retain(|_, (_, row)| {
            tasks.contains(row.id.as_str()) && row.repeat.map_or(h.repeats == 1, repeat)
        });
    }
    rows.extend((run.rows.into_iter()).map(|row| (RowKey::of(&row), (id.to_owned(), row))));
    Ok(rows)
}

/// The view of run `head` of the output folder `out`: what `DIR/results.json` holds after it.
pub fn rebuild_view(out: &Path, head: &str) -> Result<ResultsFile, StoreError> {
    let run = read_run(out, head)?;
    let (header, seal) = (run.header.clone(), run.seal.clone());
    let mut runs = Runs::from([(head.to_owned(), run)]);
    let folded = fold(out, head, &mut runs, 0)?;
    let position: HashMap<&str, usize> = (header.tasks.iter().enumerate())
        .map(|(i, t)| (t.as_str(), i))
        .collect();
    // In the run's task order, rows of tasks it does not list last by id; under a model matrix a
    // task's rows for its models sit together, in the models' order.
    let mut rows: Vec<(String, TaskResult)> = folded.into_values().collect();
    rows.sort_by_cached_key(|(_, row)| {
        let at = position.get(row.id.as_str()).copied();
        let model = (row.given_model()).and_then(|m| header.models.iter().position(|g| g == m));
        let id = at.is_none().then(|| row.id.clone());
        (at.unwrap_or(usize::MAX), id, model, row.repeat)
    });
    let (runs, tasks): (BTreeSet<String>, Vec<TaskResult>) = rows.into_iter().unzip();
    let totals = Totals::of(&tasks);
    Ok(header.view(seal.as_ref(), runs.into_iter().collect(), totals, tasks))
}

impl<T> RunHeader<T> {
    /// The view of this run with `tasks`, the rows of `runs`, when it ended with `seal` (`None`:
    /// a crash ended it, and it never finished its rows).
    pub fn view<R>(
        &self,
        seal: Option<&Seal>,
        runs: Vec<String>,
        totals: Totals,
        tasks: R,
    ) -> ResultsFile<R> {
        ResultsFile {
            format: RESULTS_FORMAT.to_owned(),
            looptrace_version: self.looptrace_version.clone(),
            created_at: self.created_at.clone(),
            eval_id: Some(self.eval_id.clone()),
            suite: self.suite.clone(),
            shard: self.shard,
            selection: self.selection.clone(),
            models: self.models.clone(),
            repeats: (self.repeats > 1).then_some(self.repeats),
            adaptive: self.adaptive.clone(),
            capture: self.capture,
            interrupted: seal.is_none_or(|seal| seal.interrupted),
            not_reached: seal.map_or_else(Vec::new, |seal| seal.not_reached.clone()),
            partial: false,
            missing_shards: Vec::new(),
            runs,
            totals,
            tasks,
        }
    }
}
