//! Request parts left out of matching: `--ignore PATH` names a JSON path (`$.metadata.user_id`,
//! `$.messages[0].content`, `$["x-y"]`, `$.input[*].id` for every element) whose value differs between runs of the same agent
//! (session ids, dates) and so must not make a replay miss. The recording keeps the whole body;
//! only the hash a replay matches by is taken without these parts.

use serde_json::Value;

/// One step of a path.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Step {
    Key(String),
    Index(usize),
    /// `[*]`: every element of an array.
    Every,
}

/// A JSON path to leave out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IgnoredPath {
    text: String,
    steps: Vec<Step>,
}

impl IgnoredPath {
    /// Reads `$` followed by `.name`, `[N]`, `[*]` or `["key"]` steps.
    pub fn parse(text: &str) -> Result<IgnoredPath, String> {
        let bad = |why: &str| {
            format!("--ignore `{text}` is not a JSON path such as $.metadata.user_id: {why}")
        };
        let mut rest = text
            .strip_prefix('$')
            .ok_or_else(|| bad("it must start with `$`"))?;
        let mut steps = Vec::new();
        while !rest.is_empty() {
            if let Some(after) = rest.strip_prefix('.') {
                let end = after.find(['.', '[']).unwrap_or(after.len());
                if end == 0 {
                    return Err(bad("a `.` must be followed by a name"));
                }
                steps.push(Step::Key(after[..end].to_owned()));
                rest = &after[end..];
            } else if let Some(after) = rest.strip_prefix("[\"") {
                let end = after
                    .find("\"]")
                    .ok_or_else(|| bad("a `[\"` has no closing `\"]`"))?;
                steps.push(Step::Key(after[..end].to_owned()));
                rest = &after[end + 2..];
            } else if let Some(after) = rest.strip_prefix("[*]") {
                steps.push(Step::Every);
                rest = after;
            } else if let Some(after) = rest.strip_prefix('[') {
                let end = after
                    .find(']')
                    .ok_or_else(|| bad("a `[` has no closing `]`"))?;
                let index = after[..end]
                    .parse()
                    .map_err(|_| bad("an index must be a number"))?;
                steps.push(Step::Index(index));
                rest = &after[end + 1..];
            } else {
                return Err(bad("expected `.name`, `[N]`, `[*]` or `[\"key\"]`"));
            }
        }
        if steps.is_empty() {
            return Err(bad("it names the whole request"));
        }
        Ok(IgnoredPath {
            text: text.to_owned(),
            steps,
        })
    }

    /// The path as given.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Removes the value at this path, if there is one.
    fn remove_from(&self, value: &mut Value) {
        remove(&self.steps, value);
    }
}

fn remove(steps: &[Step], at: &mut Value) {
    let Some((step, rest)) = steps.split_first() else {
        return;
    };
    if rest.is_empty() {
        match (step, at) {
            (Step::Key(key), Value::Object(map)) => {
                map.remove(key);
            }
            // Replaced, not removed, so later elements keep their places.
            (Step::Index(index), Value::Array(items)) if *index < items.len() => {
                items[*index] = Value::Null;
            }
            (Step::Every, Value::Array(items)) => items.iter_mut().for_each(|v| *v = Value::Null),
            _ => {}
        }
        return;
    }
    match (step, at) {
        (Step::Key(key), Value::Object(map)) => {
            if let Some(next) = map.get_mut(key) {
                remove(rest, next);
            }
        }
        (Step::Index(index), Value::Array(items)) => {
            if let Some(next) = items.get_mut(*index) {
                remove(rest, next);
            }
        }
        (Step::Every, Value::Array(items)) => items.iter_mut().for_each(|next| remove(rest, next)),
        _ => {}
    }
}

/// The canonical JSON a replay matches by: the body without the ignored parts.
pub fn matching_text(body: &Value, ignored: &[IgnoredPath]) -> String {
    if ignored.is_empty() {
        return crate::model::live::canonical_json(body);
    }
    let mut body = body.clone();
    for path in ignored {
        path.remove_from(&mut body);
    }
    crate::model::live::canonical_json(&body)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn ignored_paths_leave_the_match_and_bad_ones_are_named() {
        let paths = [
            IgnoredPath::parse("$.metadata.user_id").unwrap(),
            IgnoredPath::parse("$.messages[0][\"x-y\"]").unwrap(),
        ];
        let a =
            json!({"metadata": {"user_id": "s1"}, "messages": [{"x-y": 1, "k": 2}], "model": "m"});
        let b =
            json!({"metadata": {"user_id": "s2"}, "messages": [{"x-y": 3, "k": 2}], "model": "m"});
        assert_eq!(matching_text(&a, &paths), matching_text(&b, &paths));
        assert_ne!(
            matching_text(&a, &paths[..1]),
            matching_text(&b, &paths[..1])
        );
        assert!(
            IgnoredPath::parse("metadata")
                .unwrap_err()
                .contains("must start with `$`")
        );
        assert!(
            IgnoredPath::parse("$")
                .unwrap_err()
                .contains("whole request")
        );
        assert!(IgnoredPath::parse("$.a[x]").is_err());
        let every = [IgnoredPath::parse("$.input[*].id").unwrap()];
        let a = json!({"input": [{"id": "a1", "t": 1}, {"id": "a2", "t": 2}]});
        let b = json!({"input": [{"id": "b1", "t": 1}, {"id": "b2", "t": 2}]});
        assert_eq!(matching_text(&a, &every), matching_text(&b, &every));
        assert_eq!(matching_text(&a, &every), r#"{"input":[{"t":1},{"t":2}]}"#);
    }
}
