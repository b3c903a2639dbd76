//! What one shard's results must hold for a merge to prove coverage: its share of the selected
//! tasks (task i, 0-based in suite order, belongs to shard `i mod N + 1`), each once per repeat.
//! Merge does not read the suite, so it knows a shard's tasks by id only when the results list the
//! selection; otherwise it knows how many there are (`suite.tasks`), and checks the count.

use std::collections::{HashMap, HashSet};
use std::fmt;

use crate::eval::results::{ResultsFile, Shard, TaskResult};
use crate::eval::row_checks::check_rows;

/// How many tasks a message names before it says how many more lack rows.
const NAMED: usize = 10;

/// The tasks the shards of one split were to run between them, as far as their results say.
/// Under a model matrix each is a (task, model), named `id[model]`: a shard's share is of those.
pub enum Expected {
    /// `--only`/`--skip` chose them, or the suite given lists them: their ids, in suite order,
    /// each id's position, and what lists them (for messages).
    Listed {
        ids: Vec<String>,
        position: HashMap<String, usize>,
        list: &'static str,
    },
    /// The whole suite of this many tasks, whose ids the results do not list.
    Counted(usize),
    /// A `--rerun-failed` result: its rows are those of the results it updated, whose tasks it
    /// does not list (its selection holds only the tasks it ran again).
    Unknown,
}

impl Expected {
    /// What `results` (any shard of the split: they agree on suite, selection and models) say,
    /// and the ids of their suite's tasks when the caller has them.
    pub fn of(results: &ResultsFile, suite_ids: Option<&[String]>) -> Expected {
        let listed = |ids: &[String], list| {
            let ids = slots(ids, &results.models);
            Expected::Listed {
                position: ids
                    .iter()
                    .enumerate()
                    .map(|(i, id)| (id.clone(), i))
                    .collect(),
                ids,
                list,
            }
        };
        match (&results.selection, suite_ids) {
            (None, Some(ids)) => listed(ids, "the suite"),
            (None, None) => Expected::Counted(results.suite.tasks),
            (Some(selection), _) if selection.rerun_failed.is_some() => Expected::Unknown,
            (Some(selection), _) => listed(&selection.tasks, "its selection"),
        }
    }

    /// How many tasks `shard` is to run, when known.
    fn share(&self, shard: Shard) -> Option<usize> {
        let selected = match self {
            Expected::Listed { ids, .. } => ids.len(),
            Expected::Counted(tasks) => *tasks,
            Expected::Unknown => return None,
        };
        Some(selected / shard.count + usize::from(shard.index - 1 < selected % shard.count))
    }
}

/// A shard given to merge whose results lack rows of its share: its evaluation was interrupted,
/// or the file was edited.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IncompleteShard {
    /// The input, as named on the command line.
    pub name: String,
    /// Its shard; `None` for results of a whole suite.
    pub shard: Option<Shard>,
    /// How many rows its share must have, when the results say.
    pub expected_rows: Option<usize>,
    /// How many of those rows it lacks.
    pub missing_rows: usize,
    /// Whether its evaluation says it was interrupted.
    pub interrupted: bool,
    /// The first tasks that lack rows (`t3`, `t4 (repeat 2)`), at most `NAMED`.
    pub named: Vec<String>,
    /// How many tasks lack rows in all, `named` included, when the ids are known.
    pub lacking_tasks: usize,
    /// Tasks of its share with no row at all, which results without a selection cannot name.
    pub unnamed_tasks: usize,
}

impl fmt::Display for IncompleteShard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.shard {
            Some(shard) => write!(f, "shard {shard} (`{}`)", self.name)?,
            None => write!(f, "`{}`", self.name)?,
        }
        if self.missing_rows == 0 {
            // Eval marks a run interrupted only when rows are missing: the file was edited.
            return write!(
                f,
                " holds every row of its share but says it was interrupted"
            );
        }
        match self.expected_rows {
            Some(expected) => write!(
                f,
                " lacks {} of its {}",
                self.missing_rows,
                crate::plural(expected as u64, "row", "rows")
            )?,
            None => write!(
                f,
                " lacks {}",
                crate::plural(self.missing_rows as u64, "row", "rows")
            )?,
        }
        if self.interrupted {
            write!(f, " (it was interrupted)")?;
        }
        let mut sep = ": ";
        if !self.named.is_empty() {
            write!(f, "{sep}{}", self.named.join(", "))?;
            let more = self.lacking_tasks - self.named.len();
            if more > 0 {
                write!(
                    f,
                    " and {}",
                    crate::plural(more as u64, "more task", "more tasks")
                )?;
            }
            sep = "; ";
        }
        if self.unnamed_tasks > 0 {
            write!(
                f,
                "{sep}{} of its share {} no row",
                crate::plural(self.unnamed_tasks as u64, "task", "tasks"),
                if self.unnamed_tasks == 1 {
                    "has"
                } else {
                    "have"
                }
            )?;
        }
        Ok(())
    }
}

/// One shard's rows checked against its share.
pub struct Checked {
    /// Each row's task position among the selected tasks, in row order: the merged order.
    pub positions: Vec<usize>,
    /// What the shard lacks, if anything.
    pub gap: Option<IncompleteShard>,
}

/// Checks that the rows of `results` (named `name`) belong to its shard, each (task, repeat) once,
/// and finds the rows it lacks. A row that cannot belong is an error; a lacking row is a gap.
pub fn check_shard(
    name: &str,
    results: &ResultsFile,
    expected: &Expected,
) -> Result<Checked, String> {
    // Results of a whole suite are its one shard.
    let shard = results.shard.unwrap_or(Shard { index: 1, count: 1 });
    let repeats = results.repeats.unwrap_or(1).max(1);
    // With adaptive repeats a task is whole with any of 1 to `repeats` runs.
    let needed = if results.adaptive.is_some() {
        1
    } else {
        repeats
    };
    let matrix = results.models.len() > 1;
    let row_slots: Vec<std::borrow::Cow<'_, str>> = results
        .tasks
        .iter()
        .map(|row| slot_of(row, matrix))
        .collect();
    let mut seen: HashSet<(&str, u32)> = HashSet::with_capacity(results.tasks.len());
    // Each task's rank among the shard's tasks (first row first) and how many repeats it has.
    let mut runs: HashMap<&str, (usize, u32)> = HashMap::new();
    let mut order: Vec<&str> = Vec::new();
    let mut positions = Vec::with_capacity(results.tasks.len());
    check_rows(results).map_err(|problem| format!("`{name}` {problem}"))?;
    for (row, id) in results.tasks.iter().zip(&row_slots) {
        let id: &str = id;
        seen.insert((id, row.repeat.unwrap_or(1)));
        let rank = {
            let next = order.len();
            let entry = runs.entry(id).or_insert((next, 0));
            entry.1 += 1;
            entry.0
        };
        if rank == order.len() {
            order.push(id);
        }
        let position = match expected {
            Expected::Listed { position, list, .. } => match position.get(id) {
                Some(&i) if shard.contains(i) => i,
                Some(&i) => {
                    return Err(format!(
                        "`{name}` holds task {id:?}, which belongs to shard {}/{} of {list}, not {shard}",
                        i % shard.count + 1,
                        shard.count
                    ));
                }
                None => {
                    return Err(format!(
                        "`{name}` holds task {id:?}, which {list} does not list"
                    ));
                }
            },
            // Task j of shard K sits at j * N + K - 1 among the selected tasks.
            Expected::Counted(_) | Expected::Unknown => rank
                .saturating_mul(shard.count)
                .saturating_add(shard.index - 1),
        };
        positions.push(position);
    }
    let share = expected.share(shard);
    if let (Some(share), Expected::Counted(tasks)) = (share, expected)
        && order.len() > share
    {
        return Err(format!(
            "`{name}` holds {} of a suite of {tasks}, but shard {shard} of it has {share}: the file was edited or comes from another split",
            crate::plural(order.len() as u64, "task", "tasks")
        ));
    }

    // The tasks that lack rows, in suite order.
    let have = |id: &str| runs.get(id).map_or(0, |(_, n)| *n);
    let lacking: Vec<&str> = match expected {
        Expected::Listed { ids, .. } => ids
            .iter()
            .skip(shard.index - 1)
            .step_by(shard.count)
            .map(String::as_str)
            .filter(|id| have(id) < needed)
            .collect(),
        Expected::Counted(_) | Expected::Unknown => order
            .iter()
            .copied()
            .filter(|id| have(id) < needed)
            .collect(),
    };
    let unnamed_tasks = match expected {
        Expected::Counted(_) => share.unwrap_or(0).saturating_sub(order.len()),
        _ => 0,
    };
    let expected_rows = share.map(|tasks| tasks.saturating_mul(needed as usize));
    let missing_rows = match expected_rows {
        Some(rows) if needed == repeats => rows.saturating_sub(results.tasks.len()),
        _ => {
            lacking
                .iter()
                .map(|id| (needed - have(id)) as usize)
                .sum::<usize>()
                + unnamed_tasks
        }
    };
    if missing_rows == 0 && !results.interrupted {
        return Ok(Checked {
            positions,
            gap: None,
        });
    }
    let named = lacking
        .iter()
        .take(NAMED)
        .map(|id| lacking_label(id, repeats, have(id), |k| seen.contains(&(id, k))))
        .collect();
    Ok(Checked {
        positions,
        gap: Some(IncompleteShard {
            name: name.to_owned(),
            shard: results.shard,
            expected_rows,
            missing_rows,
            interrupted: results.interrupted,
            named,
            lacking_tasks: lacking.len(),
            unnamed_tasks,
        }),
    })
}

/// What a row of `results` is of, but for its repeat: its task id, and under a model matrix
/// `id[model]`.
pub fn slot_of(row: &TaskResult, matrix: bool) -> std::borrow::Cow<'_, str> {
    if matrix {
        row.row_key()
    } else {
        std::borrow::Cow::Borrowed(row.id.as_str())
    }
}

/// The slots of the task `ids` (in suite order, each once per model under a matrix, as the
/// selection lists them) under `models`: each task once per model, task by task.
fn slots(ids: &[String], models: &[String]) -> Vec<String> {
    if models.len() < 2 {
        return ids.to_vec();
    }
    let mut seen = std::collections::HashSet::new();
    ids.iter()
        .filter(|id| seen.insert(id.as_str()))
        .flat_map(|id| models.iter().map(move |m| format!("{id}[{m}]")))
        .collect()
}

/// A task that lacks rows, for messages: `t3` (one run each), `t3 (all 3 repeats)`,
/// `t3 (repeat 2)`, `t3 (repeats 2, 3)`.
fn lacking_label(id: &str, repeats: u32, have: u32, present: impl Fn(u32) -> bool) -> String {
    if repeats == 1 {
        return id.to_owned();
    }
    if have == 0 {
        return format!("{id} (all {repeats} repeats)");
    }
    // Every repeat up to the missing ones shown is a present one: at most `have` + 4 are tried.
    let missing: Vec<String> = (1..=repeats)
        .filter(|k| !present(*k))
        .take(4)
        .map(|k| k.to_string())
        .collect();
    let more = (repeats - have) as usize - missing.len();
    let mut label = match missing.as_slice() {
        [one] => format!("{id} (repeat {one}"),
        many => format!("{id} (repeats {}", many.join(", ")),
    };
    if more > 0 {
        label.push_str(&format!(" and {more} more"));
    }
    label.push(')');
    label
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_of_a_split_differ_by_at_most_one_task_and_add_up() {
        let counted = Expected::Counted(10);
        let shares: Vec<Option<usize>> = (1..=3)
            .map(|index| counted.share(Shard { index, count: 3 }))
            .collect();
        assert_eq!(shares, [Some(4), Some(3), Some(3)]);
        let few = Expected::Counted(2);
        let shares: Vec<Option<usize>> = (1..=4)
            .map(|index| few.share(Shard { index, count: 4 }))
            .collect();
        assert_eq!(shares, [Some(1), Some(1), Some(0), Some(0)]);
        assert_eq!(Expected::Unknown.share(Shard { index: 1, count: 1 }), None);
    }

    #[test]
    fn a_lacking_task_is_named_with_the_repeats_it_lacks() {
        assert_eq!(lacking_label("t", 1, 0, |_| false), "t");
        assert_eq!(lacking_label("t", 3, 0, |_| false), "t (all 3 repeats)");
        assert_eq!(lacking_label("t", 3, 2, |k| k != 2), "t (repeat 2)");
        assert_eq!(lacking_label("t", 3, 1, |k| k == 1), "t (repeats 2, 3)");
        assert_eq!(
            lacking_label("t", 10, 1, |k| k == 1),
            "t (repeats 2, 3, 4, 5 and 5 more)"
        );
    }
}
