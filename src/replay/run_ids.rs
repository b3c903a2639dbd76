//! Which runs a streamed trace held, for the messages of commands that pick one run by id
//! (`show --run`, `replay --run`): the first few ids, how many runs in all, and how many had the
//! id asked for.

use crate::text::escape;

/// `once`, `twice`, `3 times`.
pub fn times(n: u32) -> String {
    match n {
        1 => "once".to_owned(),
        2 => "twice".to_owned(),
        n => format!("{n} times"),
    }
}

/// What a streamed trace held, for messages: the first few run ids, how many runs in all, and how
/// many runs had the selected id.
#[derive(Debug, Default)]
pub struct RunIds {
    first: Vec<String>,
    total: usize,
    selected: u32,
}

impl RunIds {
    /// Notes one run; `selected` is the id asked for, if any.
    pub fn note(&mut self, id: &str, selected: Option<&str>) {
        self.total += 1;
        if self.first.len() < 5 && !self.first.iter().any(|f| f == id) {
            self.first.push(id.to_owned());
        }
        if selected == Some(id) {
            self.selected += 1;
        }
    }

    /// How many runs had the selected id.
    pub fn selected(&self) -> u32 {
        self.selected
    }

    /// The message for a `--run ID --occurrence N` that matched no run.
    pub fn not_found(&self, id: &str, wanted: u32, shown: &str) -> String {
        match self.selected {
            0 => format!(
                "no run {:?} in `{shown}` (it has {})",
                escape(id),
                self.describe()
            ),
            n => format!(
                "run {:?} occurs {} in `{shown}`: --occurrence {wanted} is past the last",
                escape(id),
                times(n)
            ),
        }
    }

    /// `"a", "b" and 3 more runs`, or `no runs`.
    pub fn describe(&self) -> String {
        let ids: Vec<&str> = self.first.iter().map(String::as_str).collect();
        let text = list_ids(&ids);
        match self.total.saturating_sub(ids.len()) {
            0 => text,
            1 => format!("{text} and 1 more run"),
            more => format!("{text} and {more} more runs"),
        }
    }
}

/// A short list of run ids for messages.
pub fn list_ids(ids: &[&str]) -> String {
    match ids.len() {
        0 => "no runs".to_owned(),
        n if n <= 5 => ids
            .iter()
            .map(|id| escape(&format!("{id:?}")).into_owned())
            .collect::<Vec<_>>()
            .join(", "),
        n => format!(
            "{} and {} more",
            ids[..5]
                .iter()
                .map(|id| escape(&format!("{id:?}")).into_owned())
                .collect::<Vec<_>>()
                .join(", "),
            n - 5
        ),
    }
}
