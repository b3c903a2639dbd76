//! `--only PATTERN` and `--skip PATTERN`: which tasks of a suite an evaluation runs. A pattern is
//! a task id, or a glob where `*` stands for any run of characters (task ids never contain `*`).
//! Every pattern must match some task of the suite, so a typo is an error, not an empty run.

use serde::{Deserialize, Serialize};

use std::ops::ControlFlow;

use super::suite::SuiteTasks;

/// What `results.json` records of a selection (`selection`): the patterns given and the tasks
/// they chose, in suite order, before any `--shard` split them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Selection {
    /// The `--only` patterns: a task runs only if it matches one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub only: Vec<String>,
    /// The `--skip` patterns: a task that matches one does not run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skip: Vec<String>,
    /// The results file `--rerun-failed` took its failed tasks from, as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerun_failed: Option<String>,
    /// `--limit N`: the first N of the tasks the patterns chose.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    /// `--sample N`: N of the tasks the patterns chose, by `seed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample: Option<usize>,
    /// The seed of `--sample`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// The ids of the selected tasks, in suite order.
    pub tasks: Vec<String>,
}

/// Whether `id` matches `pattern`, where `*` matches any run of characters.
pub fn glob_match(pattern: &str, id: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = id.strip_prefix(first) else {
        return false;
    };
    let middle: Vec<&str> = parts.collect();
    let Some((last, middle)) = middle.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// The positions (suite order) of the tasks `only` and `skip` select, with the record of the
/// selection; or the first pattern that matches no task of the suite. Only ids are read, in one
/// pass: a streamed suite's tasks are not, nor are its ids held.
pub fn select_tasks(
    tasks: &SuiteTasks,
    only: &[String],
    skip: &[String],
) -> Result<(Vec<usize>, Selection), SelectError> {
    let mut matched = vec![false; only.len() + skip.len()];
    let mut selected = Vec::new();
    let mut ids = Vec::new();
    tasks
        .scan(0, |i, task| {
            let id = task.id.as_str();
            let (mut in_only, mut skipped) = (only.is_empty(), false);
            for (k, pattern) in only.iter().chain(skip).enumerate() {
                if glob_match(pattern, id) {
                    matched[k] = true;
                    match k < only.len() {
                        true => in_only = true,
                        false => skipped = true,
                    }
                }
            }
            if in_only && !skipped {
                selected.push(i);
                ids.push(id.to_owned());
            }
            ControlFlow::Continue(())
        })
        .map_err(SelectError::Unread)?;
    let flags = only.iter().map(|p| ("--only", p));
    let flags = flags.chain(skip.iter().map(|p| ("--skip", p)));
    if let Some((flag, pattern)) = flags.zip(&matched).find(|(_, m)| !**m).map(|(f, _)| f) {
        return Err(SelectError::Flags(format!(
            "{flag} {pattern:?} matches no task of the suite (task ids, `*` for any characters)"
        )));
    }
    let selection = Selection {
        only: only.to_vec(),
        skip: skip.to_vec(),
        rerun_failed: None,
        limit: None,
        sample: None,
        seed: None,
        tasks: ids,
    };
    Ok((selected, selection))
}

/// Why tasks could not be selected.
#[derive(Debug)]
pub enum SelectError {
    /// A pattern matches no task.
    Flags(String),
    /// The suite's ids could not be read back.
    Unread(String),
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn a_star_matches_any_run_of_characters_and_the_rest_is_literal() {
        let cases = [
            ("abc", "abc", true),
            ("abc", "abcd", false),
            ("ab", "abc", false),
            ("*", "", true),
            ("*", "anything", true),
            ("a*", "abc", true),
            ("a*", "ba", false),
            ("*c", "abc", true),
            ("*c", "abcd", false),
            ("a*c", "ac", true),
            ("a*c", "abbbc", true),
            ("a*b*c", "abc", true),
            ("a*b*c", "acb", false),
            ("a*a", "a", false),
            ("*.x.*", "t.x.1", true),
            ("a.c", "abc", false),
        ];
        for (pattern, id, expected) in cases {
            assert_eq!(glob_match(pattern, id), expected, "{pattern} vs {id}");
        }
    }
}
