//! `DIR/results.json` as a view of the run store: a run's rows folded over those of its parents,
//! the latest row per row identity winning, in the run's task order.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;

use super::row_key::RowKey;
use super::run_folder::{RUNS_DIR, RunKind, RunRead, StoreError, read_run};
use crate::eval::{RESULTS_FORMAT, ResultsFile, TaskResult, Totals};

/// The runs of one output folder read so far (`None`: its folder is gone, as `gc` removes runs
/// whose rows every view has replaced).
type Runs = HashMap<String, Option<RunRead>>;

/// The rows of run `id` folded over its parents', each by identity with the id of the run that
/// wrote it. An evaluation or its resume keeps only rows it would write itself.
fn fold(
    out: &Path,
    id: &str,
    runs: &mut Runs,
    depth: usize,
) -> Result<HashMap<RowKey, (String, TaskResult)>, StoreError> {
    if !runs.contains_key(id) {
        let there = out.join(RUNS_DIR).join(id).is_dir();
        runs.insert(id.to_owned(), there.then(|| read_run(out, id)).transpose()?);
    }
    // Parents are always older runs, so a chain cannot loop unless a header was edited.
    let (Some(Some(run)), true) = (runs.get(id).cloned(), depth < 10_000) else {
        return Ok(HashMap::new());
    };
    let mut parents = run.header.parents.clone();
    parents.sort();
    let mut rows = HashMap::new();
    for parent in &parents {
        rows.extend(fold(out, parent, runs, depth + 1)?);
    }
    let rerun = run.header.kind == RunKind::Rerun;
    for (_, row) in rows.values_mut().filter(|_| rerun) {
        // What a rerun did not run again it carried over.
        row.carried_over = true;
    }
    rows.extend((run.rows.into_iter()).map(|row| (RowKey::of(&row), (id.to_owned(), row))));
    let tasks: HashSet<&str> = run.header.tasks.iter().map(String::as_str).collect();
    let repeats = run.header.repeats;
    rows.retain(|_, (_, row)| {
        let repeat = row.repeat.unwrap_or(1);
        rerun
            || (tasks.contains(row.id.as_str())
                && (1..=repeats).contains(&repeat)
                && row.repeat.is_some() == (repeats > 1))
    });
    Ok(rows)
}

/// The view of run `head` of the output folder `out`: what `DIR/results.json` holds after it.
pub fn rebuild_view(out: &Path, head: &str) -> Result<ResultsFile, StoreError> {
    let mut runs = Runs::new();
    let folded = fold(out, head, &mut runs, 0)?;
    let Some(Some(run)) = runs.remove(head) else {
        let path = out.join(RUNS_DIR).join(head);
        let source = std::io::Error::new(std::io::ErrorKind::NotFound, "no such run");
        let action = "read";
        return Err(StoreError::Io {
            action,
            path,
            source,
        });
    };
    let header = run.header;
    let position: HashMap<&str, usize> = (header.tasks.iter().enumerate())
        .map(|(i, t)| (t.as_str(), i))
        .collect();
    // In the run's task order, rows of tasks it does not list last by id; under a model matrix a
    // task's rows for its models sit together, in the models' order.
    let mut rows: Vec<(String, TaskResult)> = folded.into_values().collect();
    rows.sort_by_cached_key(|(_, row)| {
        let at = position.get(row.id.as_str()).copied();
        let model = (row.given_model()).and_then(|m| header.models.iter().position(|g| g == m));
        (
            at.unwrap_or(usize::MAX),
            at.is_none().then(|| row.id.clone()),
            model,
            row.repeat,
        )
    });
    let seal = run.seal.clone().unwrap_or_default();
    let runs: BTreeSet<String> = rows.iter().map(|(from, _)| from.clone()).collect();
    let tasks: Vec<TaskResult> = rows.into_iter().map(|(_, row)| row).collect();
    Ok(ResultsFile {
        format: RESULTS_FORMAT.to_owned(),
        looptrace_version: header.looptrace_version,
        created_at: header.created_at,
        eval_id: Some(header.eval_id),
        suite: header.suite,
        shard: header.shard,
        selection: header.selection,
        repeats: (header.repeats > 1).then_some(header.repeats),
        adaptive: header.adaptive,
        capture: header.capture,
        // A run a crash ended never finished its rows.
        interrupted: run.seal.is_none() || seal.interrupted,
        not_reached: seal.not_reached,
        partial: false,
        missing_shards: Vec::new(),
        runs: runs.into_iter().collect(),
        totals: Totals::of(&tasks),
        tasks,
        models: header.models,
    })
}
