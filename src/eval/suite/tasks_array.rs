//! A suite's text read in one pass: the members before `tasks` kept as their texts, then the
//! `tasks` array walked task by task, each task's flat document built as the walk reaches it,
//! so no pass over a task only skips it to find where it ends. Only the usual shape is walked:
//! an object whose keys are not repeated and whose last member is a `tasks` array. Any other
//! shape, and any text that is not JSON, is left to the reading that says what is wrong
//! ([`TopLevel::read`] gives `None`, a batch [`Refused`]), so every message stays the one that
//! reading gives. Each piece is read by `serde_json` itself: when every piece reads and the
//! separators between them are JSON's, the whole text is JSON with these members and tasks.

use std::ops::Range;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::schema::FlatItems;

/// A suite's members before its `tasks` array, and the walk over that array.
pub struct TopLevel<'t> {
    /// Each member before `tasks`, in order: its key and its value's text.
    pub head: Vec<(String, &'t RawValue)>,
    /// The `tasks` array, not yet read.
    pub tasks: TasksWalk<'t>,
}

impl<'t> TopLevel<'t> {
    /// The members before `tasks`, and the walk positioned at its first task; `None` when the
    /// text is not an object whose keys up to `tasks` are JSON and unrepeated, with `tasks` an
    /// array.
    pub fn read(text: &'t str) -> Option<TopLevel<'t>> {
        let bytes = text.as_bytes();
        let mut at = expect(bytes, whitespace(bytes, 0), b'{')?;
        let mut head: Vec<(String, &'t RawValue)> = Vec::new();
        loop {
            let (key, end) = value::<String>(text, whitespace(bytes, at))?;
            if head.iter().any(|(earlier, _)| *earlier == key) {
                return None;
            }
            at = whitespace(bytes, expect(bytes, whitespace(bytes, end), b':')?);
            if key == "tasks" {
                let first = expect(bytes, at, b'[')?;
                let empty = bytes.get(whitespace(bytes, first)) == Some(&b']');
                let tasks = TasksWalk {
                    text,
                    at: first,
                    count: 0,
                    state: if empty { State::Closing } else { State::Open },
                };
                return Some(TopLevel { head, tasks });
            }
            let (member, end) = value::<&'t RawValue>(text, at)?;
            head.push((key, member));
            // A suite without `tasks`, or with it not last: not walked.
            at = expect(bytes, whitespace(bytes, end), b',')?;
        }
    }
}

/// The `tasks` array read a batch of tasks at a time, in order.
pub struct TasksWalk<'t> {
    text: &'t str,
    /// Where the next task starts (whitespace before it included), or the array's closing `]`.
    at: usize,
    /// How many tasks the batches so far held.
    count: usize,
    state: State,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    /// A task comes next.
    Open,
    /// The array's `]` comes next: no task is left.
    Closing,
    /// The text after the array is read: nothing is left.
    Done,
}

/// The walk found text that is not JSON, or a member after `tasks`: the suite must be read the
/// way that says what is wrong, or that reads members after `tasks` first.
#[derive(Debug)]
pub struct Refused;

/// One task of a batch: where its text is in the suite's, and where its document's root is in
/// the batch's items (`None`: it is JSON, but no document could be built: a key given twice, or
/// nested deeper than a document is built).
pub struct BatchTask {
    pub span: Range<usize>,
    pub root: Option<usize>,
}

impl<'t> TasksWalk<'t> {
    /// The suite's whole text.
    pub fn text(&self) -> &'t str {
        self.text
    }

    /// Whether the array holds at least one task.
    pub fn is_empty(&self) -> bool {
        self.count == 0 && self.state != State::Open
    }

    /// Reads up to `max` tasks into `items` and `tasks` (both emptied first): the number of the
    /// first, or `None` when no task is left and the text after the array has been read.
    pub fn next_batch(
        &mut self,
        items: &mut FlatItems<'t>,
        tasks: &mut Vec<BatchTask>,
        max: usize,
    ) -> Result<Option<usize>, Refused> {
        items.clear();
        tasks.clear();
        let bytes = self.text.as_bytes();
        while self.state == State::Open && tasks.len() < max {
            let start = whitespace(bytes, self.at);
            let rest = self.text.get(start..).ok_or(Refused)?;
            let (root, len) = match items.push_value(rest) {
                Some((root, len)) => (Some(root), len),
                None => (
                    None,
                    value::<&RawValue>(self.text, start).ok_or(Refused)?.1 - start,
                ),
            };
            tasks.push(BatchTask {
                span: start..start + len,
                root,
            });
            let after = whitespace(bytes, start + len);
            match bytes.get(after) {
                Some(b',') => self.at = after + 1,
                Some(b']') => {
                    self.at = after;
                    self.state = State::Closing;
                }
                _ => return Err(Refused),
            }
        }
        if self.state == State::Closing {
            // `]`, then the object's `}`, then nothing but whitespace.
            let close = expect(bytes, whitespace(bytes, self.at), b']').ok_or(Refused)?;
            let end = expect(bytes, whitespace(bytes, close), b'}').ok_or(Refused)?;
            if whitespace(bytes, end) != bytes.len() {
                return Err(Refused);
            }
            self.state = State::Done;
        }
        if tasks.is_empty() {
            return Ok(None);
        }
        let first = self.count;
        self.count += tasks.len();
        Ok(Some(first))
    }
}

/// Where the first byte at or after `at` that is not JSON whitespace is.
fn whitespace(bytes: &[u8], mut at: usize) -> usize {
    while let Some(b' ' | b'\n' | b'\t' | b'\r') = bytes.get(at) {
        at += 1;
    }
    at
}

/// Just after `byte`, when it is at `at`.
fn expect(bytes: &[u8], at: usize, byte: u8) -> Option<usize> {
    (bytes.get(at) == Some(&byte)).then_some(at + 1)
}

/// The value at `at` of `text`, read by `serde_json`, and where it ends.
fn value<'t, T: Deserialize<'t>>(text: &'t str, at: usize) -> Option<(T, usize)> {
    let mut de = serde_json::Deserializer::from_str(text.get(at..)?);
    let value = T::deserialize(&mut de).ok()?;
    Some((
        value,
        at + de.into_iter::<serde::de::IgnoredAny>().byte_offset(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every task's text, or `None` when the walk is refused somewhere.
    fn walked(text: &str) -> Option<(Vec<String>, Vec<&str>)> {
        let top = TopLevel::read(text)?;
        let keys = top.head.iter().map(|(key, _)| key.clone()).collect();
        let mut walk = top.tasks;
        let (mut items, mut batch) = (FlatItems::default(), Vec::new());
        let mut tasks = Vec::new();
        while let Some(first) = walk.next_batch(&mut items, &mut batch, 2).ok()? {
            assert_eq!(first, tasks.len());
            tasks.extend(batch.iter().map(|task| &text[task.span.clone()]));
        }
        Some((keys, tasks))
    }

    #[test]
    fn the_usual_shape_is_walked_task_by_task() {
        let text = " {\"name\" : \"n\", \"d\\u0065faults\": {\"a\": [1]},\n \"tasks\": [ {\"id\": \"a\"},{\"id\": \"b\", \"id\": \"c\"} ,\n[3] ]\n}\n";
        let (keys, tasks) = walked(text).expect("walked");
        assert_eq!(keys, ["name", "defaults"]);
        assert_eq!(
            tasks,
            [r#"{"id": "a"}"#, r#"{"id": "b", "id": "c"}"#, "[3]"]
        );
        assert_eq!(walked(r#"{"tasks": [ ]}"#).unwrap().1, Vec::<&str>::new());
    }

    #[test]
    fn any_other_shape_or_text_that_is_not_json_is_refused() {
        for text in [
            r#"{"name": "n"}"#,
            r#"{"tasks": [], "name": "n"}"#,
            r#"{"tasks": {}}"#,
            r#"{"name": "n", "name": "m", "tasks": []}"#,
            r#"{"tasks": [{"id": "a"},]}"#,
            r#"{"tasks": [{"id": "a"} {"id": "b"}]}"#,
            r#"{"tasks": [{"id": "a"}]} x"#,
            r#"{"tasks": [{"id": "a"}]"#,
            r#"{"tasks": [{"id": "a}]}"#,
            r#"{"tasks": [{"id": "a"]}"#,
            "\u{feff}{\"tasks\": []}",
            r#"[{"tasks": []}]"#,
        ] {
            assert!(walked(text).is_none(), "{text}");
        }
    }
}
