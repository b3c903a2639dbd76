//! `looptrace merge`: combines shard results into one, refusing overlaps, mismatched suites and
//! mixed capture modes. A set of shards that leaves some out is merged only as a file marked
//! `partial`, listing the shards it lacks; the caller decides whether that is acceptable.

use std::collections::HashSet;

use super::results::{ResultsFile, Shard, Totals};

/// Merges shard results named by `names` (for messages). Tasks keep suite order when every shard
/// of one split is present (they interleave by position); otherwise they follow the inputs.
pub fn merge_results(inputs: &[(String, ResultsFile)]) -> Result<ResultsFile, String> {
    let Some((first_name, first)) = inputs.first() else {
        return Err("merge needs at least one results file".to_owned());
    };
    // Every task once per repeat: `(id, repeat)` identifies a row.
    let mut seen_ids: HashSet<(&str, Option<u32>)> = HashSet::new();
    let mut seen_shards = HashSet::new();
    for (name, results) in inputs {
        if results.suite != first.suite {
            return Err(format!(
                "`{name}` is from suite {:?} ({}, fingerprint {}), `{first_name}` from suite {:?} ({}, fingerprint {}): refusing to merge different suites",
                results.suite.name,
                crate::plural(results.suite.tasks as u64, "task", "tasks"),
                short(&results.suite.fingerprint),
                first.suite.name,
                crate::plural(first.suite.tasks as u64, "task", "tasks"),
                short(&first.suite.fingerprint)
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
        if results.repeats != first.repeats {
            return Err(format!(
                "`{name}` ran each task {} time(s), `{first_name}` {}: refusing to merge different --repeat counts",
                results.repeats.unwrap_or(1),
                first.repeats.unwrap_or(1)
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
        for task in &results.tasks {
            if !seen_ids.insert((task.id.as_str(), task.repeat)) {
                return Err(format!(
                    "task {:?} appears in more than one input (again in `{name}`): shards overlap",
                    task.label()
                ));
            }
        }
    }
    let mut tasks: Vec<_> = Vec::new();
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
    let all_sharded = inputs.iter().all(|(_, r)| r.shard.is_some()) && counts.len() == 1;
    let mut missing_shards = Vec::new();
    if let Some(&count) = counts.iter().next() {
        if !all_sharded {
            return Err(
                "the inputs mix shard results with results of a whole suite: they overlap"
                    .to_owned(),
            );
        }
        missing_shards = (1..=count)
            .filter(|index| !seen_shards.contains(&(*index, count)))
            .map(|index| Shard { index, count })
            .collect();
    }
    if all_sharded {
        // Task i of the suite sits in shard i mod N + 1 at position i / N: interleave back.
        let n = counts.into_iter().next().unwrap_or(1);
        let mut by_index: Vec<Option<&ResultsFile>> = vec![None; n];
        for (_, r) in inputs {
            if let Some(s) = r.shard {
                by_index[s.index - 1] = Some(r);
            }
        }
        // With `--repeat R` each task is R rows in a row: interleave runs of R.
        let per_task = first.repeats.unwrap_or(1).max(1) as usize;
        let longest = inputs.iter().map(|(_, r)| r.tasks.len()).max().unwrap_or(0);
        for row in (0..longest).step_by(per_task) {
            for r in by_index.iter().flatten() {
                tasks.extend(r.tasks.iter().skip(row).take(per_task).cloned());
            }
        }
    } else {
        tasks = inputs
            .iter()
            .flat_map(|(_, r)| r.tasks.iter().cloned())
            .collect();
    }
    let mut merged = first.clone();
    merged.shard = None;
    let eval_ids: HashSet<Option<&String>> =
        inputs.iter().map(|(_, r)| r.eval_id.as_ref()).collect();
    if eval_ids.len() > 1 {
        merged.eval_id = None;
    }
    merged.interrupted = inputs.iter().any(|(_, r)| r.interrupted);
    merged.created_at = inputs
        .iter()
        .map(|(_, r)| r.created_at.clone())
        .min()
        .unwrap_or_default();
    merged.partial = !missing_shards.is_empty();
    merged.missing_shards = missing_shards;
    merged.totals = Totals::of(&tasks);
    merged.tasks = tasks;
    Ok(merged)
}

fn short(fingerprint: &str) -> String {
    fingerprint.chars().take(12).collect()
}
