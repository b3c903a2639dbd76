//! `looptrace merge`: combines shard results into one, refusing overlaps and mismatched suites.

use std::collections::HashSet;

use super::results::{ResultsFile, Totals};

/// Merges shard results named by `names` (for messages). Tasks keep suite order when every shard
/// of one split is present (they interleave by position); otherwise they follow the inputs.
pub fn merge_results(inputs: &[(String, ResultsFile)]) -> Result<ResultsFile, String> {
    let Some((first_name, first)) = inputs.first() else {
        return Err("merge needs at least one results file".to_owned());
    };
    let mut seen_ids: HashSet<&str> = HashSet::new();
    let mut seen_shards = HashSet::new();
    for (name, results) in inputs {
        if results.suite != first.suite {
            return Err(format!(
                "`{name}` is from suite {:?} ({} tasks, fingerprint {}), `{first_name}` from suite {:?} ({} tasks, fingerprint {}): refusing to merge different suites",
                results.suite.name,
                results.suite.tasks,
                short(&results.suite.fingerprint),
                first.suite.name,
                first.suite.tasks,
                short(&first.suite.fingerprint)
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
            if !seen_ids.insert(task.id.as_str()) {
                return Err(format!(
                    "task {:?} appears in more than one input (again in `{name}`): shards overlap",
                    task.id
                ));
            }
        }
    }
    let mut tasks: Vec<_> = Vec::new();
    let counts: HashSet<usize> = inputs
        .iter()
        .filter_map(|(_, r)| r.shard.map(|s| s.count))
        .collect();
    let all_sharded = inputs.iter().all(|(_, r)| r.shard.is_some()) && counts.len() == 1;
    if all_sharded {
        // Task i of the suite sits in shard i mod N + 1 at position i / N: interleave back.
        let n = counts.into_iter().next().unwrap_or(1);
        let mut by_index: Vec<Option<&ResultsFile>> = vec![None; n];
        for (_, r) in inputs {
            if let Some(s) = r.shard {
                by_index[s.index - 1] = Some(r);
            }
        }
        let longest = inputs.iter().map(|(_, r)| r.tasks.len()).max().unwrap_or(0);
        for row in 0..longest {
            for r in by_index.iter().flatten() {
                if let Some(t) = r.tasks.get(row) {
                    tasks.push(t.clone());
                }
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
    merged.totals = Totals::of(&tasks);
    merged.tasks = tasks;
    Ok(merged)
}

fn short(fingerprint: &str) -> String {
    fingerprint.chars().take(12).collect()
}
