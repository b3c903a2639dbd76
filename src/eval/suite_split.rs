//! Cutting a large suite's `tasks` array into parts that parse on separate threads.
//!
//! Tasks are written alike. In an indented suite, `,` + the first task's indentation + `{` starts
//! every task and nothing inside one (a raw newline never occurs inside a JSON string, and what a
//! task holds is indented deeper); on one line, a task starts as the first one does, `{` and its
//! first key (`{"id"`), after a `,`. A substring search finds either without a walk over every
//! byte. A cut is only a guess: each part is then parsed as a JSON array of its own (`[` and `]`
//! added where the cut fell), and a guess that did not land between two tasks (an argument object
//! that starts with the same key, say) leaves a task unclosed, so its part fails to parse, never
//! parses differently. When every part and the suite around them parse, the whole text is valid
//! JSON with these tasks in this order: a JSON array whose pieces are valid arrays is valid once
//! they are joined with commas.
//! Suites whose tasks do not start alike (on one line, tasks whose first keys differ) are not cut
//! (they load on one thread).

use crate::trace::json_value_end;

/// A suite's text cut for parsing on `parts.len()` threads.
#[derive(Debug, PartialEq, Eq)]
pub struct TaskParts<'a> {
    /// The text before the `tasks` array's `[`.
    pub before: &'a str,
    /// The tasks, cut between two of them: the first part starts with the array's `[` and the
    /// others with the text after a separating `,`; none holds the array's closing `]` except
    /// the last, which runs to the end of the text, the rest of the suite included.
    pub parts: Vec<&'a str>,
}

/// Cuts `text` into `parts` pieces of about the same size, or `None` when it cannot be cut so
/// (no top-level `tasks` array found by its plain name, a first task with no key, tasks that do
/// not start alike, or too few of them).
pub fn split_tasks(text: &str, parts: usize) -> Option<TaskParts<'_>> {
    // Each part holds at least one task of at least two bytes.
    if parts < 2 || parts > text.len() / 2 {
        return None;
    }
    let bytes = text.as_bytes();
    let start = tasks_array_start(bytes)?;
    let first = start + 1 + whitespace_len(&bytes[start + 1..]);
    if bytes.get(first) != Some(&b'{') {
        return None;
    }
    let indent = &bytes[start + 1..first];
    let cutter = if indent.contains(&b'\n') {
        // Indented: `,` + the first task's indentation + `{` starts every task, and only tasks
        // (what is inside them is indented deeper).
        Cutter::Separator([b",", indent, b"{"].concat())
    } else {
        // On one line: a task starts as the first one does, through its first key, after a `,`.
        let key = first + 1 + whitespace_len(&bytes[first + 1..]);
        Cutter::TaskStart(bytes[first..string_end(bytes, key)?].to_vec())
    };
    let span = bytes.len() - first;
    let mut cuts = Vec::with_capacity(parts - 1);
    let mut from = first + 1;
    for k in 1..parts {
        let comma = cutter.next_cut(bytes, from, (first + span / parts * k).max(from))?;
        cuts.push(comma);
        from = comma + 1;
    }
    let mut pieces = Vec::with_capacity(parts);
    let mut piece_start = start;
    for comma in cuts {
        pieces.push(&text[piece_start..comma]);
        piece_start = comma + 1;
    }
    pieces.push(&text[piece_start..]);
    Some(TaskParts {
        before: &text[..start],
        parts: pieces,
    })
}

/// How a task's start is recognised.
enum Cutter {
    /// `,` + indentation + `{`: the cut is at the `,`.
    Separator(Vec<u8>),
    /// `{` + the first key, after a `,` and whitespace: the cut is at that `,`.
    TaskStart(Vec<u8>),
}

impl Cutter {
    /// The `,` before the first task that starts at or after `at` (but after `from`).
    fn next_cut(&self, bytes: &[u8], from: usize, mut at: usize) -> Option<usize> {
        match self {
            Cutter::Separator(separator) => {
                Some(at + memchr::memmem::find(&bytes[at..], separator)?)
            }
            Cutter::TaskStart(start) => {
                let finder = memchr::memmem::Finder::new(start);
                loop {
                    let found = at + finder.find(&bytes[at..])?;
                    let before = &bytes[from..found];
                    let gap = before.len() - whitespace_len_back(before);
                    if gap > 0 && before[gap - 1] == b',' {
                        return Some(from + gap - 1);
                    }
                    at = found + 1;
                }
            }
        }
    }
}

/// Where the top-level object's `"tasks"` value starts, if it is an array. Values before it are
/// stepped over (they must be well-formed); a key written with escapes is not recognised.
fn tasks_array_start(bytes: &[u8]) -> Option<usize> {
    let mut i = whitespace_len(bytes);
    if bytes.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    loop {
        i += whitespace_len(&bytes[i..]);
        let key_end = string_end(bytes, i)?;
        let key = &bytes[i..key_end];
        i = key_end + whitespace_len(&bytes[key_end..]);
        if bytes.get(i) != Some(&b':') {
            return None;
        }
        i += 1;
        i += whitespace_len(&bytes[i..]);
        if key == b"\"tasks\"" {
            return (bytes.get(i) == Some(&b'[')).then_some(i);
        }
        i = json_value_end(bytes, i)?;
        i += whitespace_len(&bytes[i..]);
        if bytes.get(i) != Some(&b',') {
            return None;
        }
        i += 1;
    }
}

/// The length of the JSON whitespace `bytes` starts with.
pub fn whitespace_len(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .position(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        .unwrap_or(bytes.len())
}

/// The length of the JSON whitespace `bytes` ends with.
fn whitespace_len_back(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .rev()
        .position(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        .unwrap_or(bytes.len())
}

/// Just past the string starting at `i` (its closing quote included).
fn string_end(bytes: &[u8], i: usize) -> Option<usize> {
    if bytes.get(i) != Some(&b'"') {
        return None;
    }
    json_value_end(bytes, i)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUITE: &str = "{\n \"name\": \"s\",\n \"defaults\": {\"max_steps\": [1, {\"x\": \"]\\\"\"}]},\n \"tasks\": [\n  {\"id\": \"a\", \"model\": {\"actions\": [\n   {\"type\": \"finish\"},\n   {}]}},\n  {\"id\": \"b\"},\n  {\"id\": \"c\"},\n  {\"id\": \"d\"}\n ]\n}\n";

    #[test]
    fn an_indented_suite_is_cut_between_tasks() {
        let cut = split_tasks(SUITE, 2).unwrap();
        assert!(cut.before.ends_with("\"tasks\": "));
        assert_eq!(cut.parts.len(), 2);
        assert!(cut.parts[0].starts_with("[\n  {\"id\": \"a\""));
        assert!(cut.parts[1].starts_with("\n  {\"id\": \""));
        assert!(cut.parts[1].ends_with(" ]\n}\n"));
        // The pieces and the commas between them are the text again.
        assert_eq!(format!("{}{}", cut.before, cut.parts.join(",")), SUITE);
    }

    #[test]
    fn each_cut_falls_after_the_previous_one() {
        let cut = split_tasks(SUITE, 4).unwrap();
        assert_eq!(cut.parts.len(), 4);
        assert_eq!(format!("{}{}", cut.before, cut.parts.join(",")), SUITE);
        assert!(cut.parts[1..].iter().all(|p| p.starts_with("\n  {")));
    }

    #[test]
    fn a_suite_on_one_line_is_cut_where_a_task_starts_with_the_first_ones_key() {
        let text = r#"{"name": "s", "tasks": [{"id": "a", "model": {"actions": [{"type": "finish"}, {"type": "x"}]}}, {"id": "b"}, {"id": "c"}]}"#;
        let cut = split_tasks(text, 2).unwrap();
        assert_eq!(cut.parts.len(), 2);
        assert!(cut.parts[1].starts_with(r#" {"id": ""#), "{cut:?}");
        assert_eq!(format!("{}{}", cut.before, cut.parts.join(",")), text);
    }

    #[test]
    fn suites_that_cannot_be_cut_are_left_whole() {
        // Tasks that do not start alike, or a first task with no key.
        assert_eq!(
            split_tasks(
                r#"{"name": "s", "tasks": [{"id": "a"}, {"prompt": "p", "id": "b"}]}"#,
                2
            ),
            None
        );
        assert_eq!(
            split_tasks(r#"{"tasks": [{}, {"id": "b"}, {"id": "c"}]}"#, 2),
            None
        );
        // Too few tasks for the parts asked.
        assert_eq!(split_tasks("{\"tasks\": [\n {\"id\": \"a\"}\n]}", 2), None);
        // `tasks` spelled with an escape, not an array, or no object at all.
        assert_eq!(
            split_tasks("{\"t\\u0061sks\": [\n {\"id\": 1},\n {\"id\": 2}\n]}", 2),
            None
        );
        assert_eq!(split_tasks("{\"tasks\": 3}", 2), None);
        assert_eq!(split_tasks("[\n {},\n {}\n]", 2), None);
        assert_eq!(split_tasks("{\"name\": \"unterminated", 2), None);
        assert_eq!(split_tasks(SUITE, 1), None);
    }
}
