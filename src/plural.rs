//! Counts with their noun in the right number ("1 task", "2 tasks") for every message and report.

/// `count` followed by `one` when it is 1, else by `many`.
pub fn plural(count: impl Into<u64>, one: &str, many: &str) -> String {
    let count = count.into();
    format!("{count} {}", if count == 1 { one } else { many })
}
