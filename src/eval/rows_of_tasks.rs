//! Some tasks' rows of a results file, read as a stream: every other row is read and dropped, so
//! what is held is what is kept, however many rows the file has.

use std::collections::HashSet;
use std::fmt;
use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::results::TaskResult;
use crate::trace::Capture;

/// The capture of the results file at `path` and its rows whose task id `ids` holds, in order.
pub fn read_rows_of_tasks(
    path: &Path,
    ids: &HashSet<String>,
) -> Result<(Capture, Vec<TaskResult>), String> {
    let file =
        File::open(path).map_err(|err| format!("failed to read `{}`: {err}", path.display()))?;
    let mut reader = serde_json::Deserializer::from_reader(BufReader::with_capacity(1 << 16, file));
    (reader.deserialize_map(Results { ids }))
        .map_err(|err| format!("`{}` is not a results file: {err}", path.display()))
}

/// The results file's top level: its capture and the rows kept of its `tasks`.
struct Results<'i> {
    ids: &'i HashSet<String>,
}

impl<'de> Visitor<'de> for Results<'_> {
    type Value = (Capture, Vec<TaskResult>);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a results file")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut capture, mut rows) = (Capture::default(), Vec::new());
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "capture" => capture = map.next_value()?,
                "tasks" => rows = map.next_value_seed(Rows { ids: self.ids })?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok((capture, rows))
    }
}

/// The `tasks` array: each row read, kept when its task is wanted.
struct Rows<'i> {
    ids: &'i HashSet<String>,
}

impl<'de> DeserializeSeed<'de> for Rows<'_> {
    type Value = Vec<TaskResult>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Rows<'_> {
    type Value = Vec<TaskResult>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of result rows")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut rows = Vec::new();
        while let Some(row) = seq.next_element::<TaskResult>()? {
            if self.ids.contains(&row.id) {
                rows.push(row);
            }
        }
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_wanted_tasks_rows_are_kept_in_order_with_the_capture() {
        let row = |id: &str, repeat: u32| {
            serde_json::json!({
                "id": id, "repeat": repeat, "model": "actions", "exit_reason": "finished",
                "steps_used": 1, "max_steps": 5, "tool_calls": 0, "tool_errors": 0,
                "feedback": 0, "duration_ms": 0.0, "expectation": "met"
            })
        };
        let results = serde_json::json!({
            "format": "looptrace.results/2", "capture": "full", "suite": {"name": "s"},
            "tasks": [row("a", 1), row("b", 1), row("a", 2), row("c", 1), row("b", 2)],
            "totals": {"tasks": 5}
        });
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.json");
        std::fs::write(&path, serde_json::to_vec_pretty(&results).unwrap()).unwrap();
        let ids: HashSet<String> = ["b".to_owned()].into();
        let (capture, rows) = read_rows_of_tasks(&path, &ids).unwrap();
        assert_eq!(capture, Capture::Full);
        let kept: Vec<(&str, Option<u32>)> =
            rows.iter().map(|r| (r.id.as_str(), r.repeat)).collect();
        assert_eq!(kept, [("b", Some(1)), ("b", Some(2))]);
        std::fs::write(&path, b"{\"tasks\": [1]}").unwrap();
        let err = read_rows_of_tasks(&path, &ids).unwrap_err();
        assert!(err.contains("results.json` is not a results file"), "{err}");
    }
}
