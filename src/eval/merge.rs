//! `looptrace merge`: combines shard results into one, refusing overlaps, mismatched suites and
//! mixed capture modes, and proving coverage: every task of the selection once per repeat. A set
//! of shards that leaves some out, or holds a shard without all of its rows (interrupted or
//! edited), is merged only as a file marked `partial`, listing what it lacks; the caller decides
//! whether that is acceptable.

mod coverage;

use std::collections::HashSet;

pub use coverage::IncompleteShard;

use super::results::{MissingShard, ResultsFile, Shard, TaskResult, Totals};
use super::store::RowKey;

/// Merged results, and the shards given that lack rows of their share.
#[derive(Clone, Debug)]
pub struct Merged {
    /// The merged file; `partial` when shards are missing or incomplete.
    pub results: ResultsFile,
    /// The shards given whose rows are not all there, in input order.
    pub incomplete: Vec<IncompleteShard>,
}

/// Merges shard results named by `names` (for messages). Rows come in suite order, a task's
/// repeats together in order, as an unsharded evaluation writes them.
pub fn merge_results(inputs: &[(String, ResultsFile)]) -> Result<Merged, String> {
    merge_results_of(inputs, None)
}

/// [`merge_results`] knowing the ids of the suite's tasks (in suite order): rows are placed and
/// checked by id, so a shard that lacks rows in the middle of its share, or holds a task that is
/// not its own, is told apart exactly even when the shards ran the whole suite (whose results do
/// not list its tasks).
pub fn merge_results_of(
    inputs: &[(String, ResultsFile)],
    suite_ids: Option<&[String]>,
) -> Result<Merged, String> {
    let Some((first_name, first)) = inputs.first() else {
        return Err("merge needs at least one results file".to_owned());
    };
    let mut seen_shards = HashSet::new();
    let mut whole_suite: Option<&str> = None;
    for (name, results) in inputs {
        if results.suite != first.suite {
            return Err(format!(
                "`{name}` is from suite {:?} ({}, fingerprint {}), `{first_name}` from suite {:?} ({}, fingerprint {}): refusing to merge different suites",
                results.suite.name,
                crate::plural(results.suite.tasks as u64, "task", "tasks"),
                results.suite.short_fingerprint(),
                first.suite.name,
                crate::plural(first.suite.tasks as u64, "task", "tasks"),
                first.suite.short_fingerprint()
            ));
        }
        if results.capture != first.capture {
            return Err(format!(
                "`{name}` was recorded with {} capture, `{first_name}` with {}: refusing to merge shards of different capture modes",
                results.capture.as_str(),
                first.capture.as_str()
            ));
        }
        if results.selection != first.selection {
            return Err(format!(
                "`{name}` selected other tasks (--only, --skip) than `{first_name}`: refusing to merge shards of different selections"
            ));
        }
        if results.models != first.models {
            return Err(format!(
                "`{name}` ran the models [{}], `{first_name}` [{}]: refusing to merge different --model sets",
                results.models.join(", "),
                first.models.join(", ")
            ));
        }
        if results.repeats != first.repeats {
            return Err(format!(
                "`{name}` ran each task {} time(s), `{first_name}` {}: refusing to merge different --repeat counts",
                results.repeats.unwrap_or(1),
                first.repeats.unwrap_or(1)
            ));
        }
        if results.adaptive != first.adaptive {
            return Err(format!(
                "`{name}` and `{first_name}` stopped repeating by different rules (--repeat-until-decided, --pass-threshold, --confidence): refusing to merge them"
            ));
        }
        if results.partial {
            return Err(format!(
                "`{name}` is itself a partial merge: merge the shard results it came from instead"
            ));
        }
        if let Some(shard) = results.shard
            && !shard.is_valid()
        {
            return Err(format!(
                "`{name}` names the impossible shard {}/{}",
                shard.index, shard.count
            ));
        }
        if let Some(shard) = results.shard
            && !seen_shards.insert((shard.index, shard.count))
        {
            return Err(format!(
                "`{name}` repeats shard {}/{}",
                shard.index, shard.count
            ));
        }
        if results.shard.is_none() {
            if let Some(other) = whole_suite {
                return Err(format!(
                    "`{other}` and `{name}` are both results of the whole suite: they overlap"
                ));
            }
            whole_suite = Some(name);
        }
    }
    let counts: HashSet<usize> = inputs
        .iter()
        .filter_map(|(_, r)| r.shard.map(|s| s.count))
        .collect();
    if counts.len() > 1 {
        let splits: Vec<String> = inputs
            .iter()
            .filter_map(|(name, r)| {
                r.shard
                    .map(|s| format!("`{name}` is {}/{}", s.index, s.count))
            })
            .collect();
        return Err(format!(
            "the inputs come from different splits ({}): merge the shards of one --shard K/N split",
            splits.join(", ")
        ));
    }
    let mut missing_shards = Vec::new();
    if let Some(&count) = counts.iter().next() {
        if whole_suite.is_some() {
            return Err(
                "the inputs mix shard results with results of a whole suite: they overlap"
                    .to_owned(),
            );
        }
        missing_shards = (1..=count)
            .filter(|index| !seen_shards.contains(&(*index, count)))
            .map(|index| MissingShard {
                index,
                count,
                missing_rows: None,
            })
            .collect();
    }

    // Every row once: `(task, model, repeat)` identifies it, across the shards too (without a
    // selection the shards' task ids are not known, so only this tells two shards' tasks apart).
    let expected = coverage::Expected::of(first, suite_ids);
    let mut seen_rows: HashSet<RowKey> = HashSet::new();
    let mut ordered: Vec<(usize, u32, &TaskResult)> = Vec::new();
    let mut incomplete = Vec::new();
    for (name, results) in inputs {
        let checked = coverage::check_shard(name, results, &expected)?;
        for (row, position) in results.tasks.iter().zip(checked.positions) {
            let repeat = row.repeat.unwrap_or(1);
            if !seen_rows.insert(RowKey::of(row)) {
                return Err(format!(
                    "task {:?} appears in more than one input (again in `{name}`): shards overlap",
                    row.label()
                ));
            }
            ordered.push((position, repeat, row));
        }
        incomplete.extend(checked.gap);
    }
    ordered.sort_by_key(|&(position, repeat, _)| (position, repeat));
    let tasks: Vec<TaskResult> = ordered.into_iter().map(|(_, _, row)| row.clone()).collect();
    missing_shards.extend(incomplete.iter().map(|gap| {
        let shard = gap.shard.unwrap_or(Shard { index: 1, count: 1 });
        MissingShard {
            index: shard.index,
            count: shard.count,
            missing_rows: Some(gap.missing_rows),
        }
    }));
    missing_shards.sort_by_key(|shard| shard.index);

    let mut merged = first.clone();
    merged.shard = None;
    let eval_ids: HashSet<Option<&String>> =
        inputs.iter().map(|(_, r)| r.eval_id.as_ref()).collect();
    if eval_ids.len() > 1 {
        merged.eval_id = None;
    }
    // An interrupted shard always lacks rows (or says so), so this implies `partial`.
    merged.interrupted = inputs.iter().any(|(_, r)| r.interrupted);
    merged.created_at = inputs
        .iter()
        .map(|(_, r)| r.created_at.clone())
        .min()
        .unwrap_or_default();
    merged.partial = !missing_shards.is_empty();
    merged.missing_shards = missing_shards;
    // The shards' runs: gathered beside the merged file, a rerun from it builds on them.
    let mut runs: Vec<String> = inputs
        .iter()
        .flat_map(|(_, r)| r.runs.iter().cloned())
        .collect();
    runs.sort();
    runs.dedup();
    merged.runs = runs;
    // Version 1 shards merge into version 1 results: their traces are not in runs.
    if inputs
        .iter()
        .any(|(_, r)| r.format != super::RESULTS_FORMAT)
    {
        merged.format = super::RESULTS_FORMAT_V1.to_owned();
    }
    merged.totals = Totals::of(&tasks);
    merged.tasks = tasks;
    Ok(Merged {
        results: merged,
        incomplete,
    })
}
