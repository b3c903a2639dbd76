//! The fast path for loading suites: typed deserialization straight into suite tasks, for suites
//! that need no file access (no replay tasks) and break no rule. Anything it cannot prove valid
//! (an unknown key, a `null`, a replay task, a bad id, a zero budget, a key given twice, ...)
//! sends the loader to the full checker, which reports every problem with its JSON path; so both
//! paths accept exactly the same suites and only the checker ever reports. The property test
//! `fast_and_full_suite_loading_agree` in `tests/integration/eval.rs` and the `suite_load` fuzz
//! target hold the two together.
//!
//! Derived serde code is more lenient than the suite format in two ways, both closed here: a
//! derived struct also reads a JSON array (its fields by position), so every struct is read
//! through [`Object`], which takes only a JSON object; and a derived enum also reads
//! `{"full": null}`, so enums are read from strings by hand.

use std::collections::HashSet;
use std::fmt;
use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

use super::scripted_action::ScriptedAction;
use super::strict_json::UniqueKeysText;
use super::suite::{DEFAULT_MAX_STEPS, Expectations, Suite, SuiteTask, TaskId, TaskModel};
use super::suite_split::{split_tasks, whitespace_len};
use crate::run::{ExitReason, Finish};
use crate::trace::Capture;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FastSuite {
    #[serde(rename = "$schema", default, deserialize_with = "present")]
    _schema: Option<String>,
    name: String,
    #[serde(default, deserialize_with = "present")]
    defaults: Option<Object<FastDefaults>>,
    tasks: Vec<Object<FastTask>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FastDefaults {
    #[serde(default, deserialize_with = "present")]
    max_steps: Option<u32>,
    #[serde(default, deserialize_with = "capture")]
    capture: Option<Capture>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FastTask {
    id: String,
    #[serde(default, deserialize_with = "present")]
    prompt: Option<String>,
    #[serde(default, deserialize_with = "present")]
    max_steps: Option<u32>,
    model: Object<FastModel>,
    #[serde(default, deserialize_with = "present")]
    expect: Option<Object<FastExpect>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FastModel {
    #[serde(default, deserialize_with = "present")]
    responses: Option<Vec<String>>,
    #[serde(default, deserialize_with = "present")]
    actions: Option<Vec<Object<FastAction>>>,
}

/// A scripted action. Read by hand rather than as a derived internally tagged enum, which would
/// first copy every action into serde's buffered `Content` to find its `type`.
enum FastAction {
    ToolCall {
        tool_name: String,
        arguments: UniqueKeysText,
    },
    Finish {
        answer: String,
    },
}

impl<'de> Deserialize<'de> for FastAction {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(field_identifier, rename_all = "snake_case")]
        enum Key {
            Type,
            ToolName,
            Arguments,
            Answer,
        }
        struct Fields;
        impl<'de> Visitor<'de> for Fields {
            type Value = FastAction;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an action")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<FastAction, A::Error> {
                use serde::de::Error;
                fn once<T, E: Error>(
                    slot: &mut Option<T>,
                    value: T,
                    name: &'static str,
                ) -> Result<(), E> {
                    match slot.replace(value) {
                        Some(_) => Err(E::duplicate_field(name)),
                        None => Ok(()),
                    }
                }
                let (mut kind, mut tool_name, mut arguments, mut answer) =
                    (None::<String>, None, None::<UniqueKeysText>, None);
                while let Some(key) = map.next_key::<Key>()? {
                    match key {
                        Key::Type => once(&mut kind, map.next_value()?, "type")?,
                        Key::ToolName => once(&mut tool_name, map.next_value()?, "tool_name")?,
                        Key::Arguments => once(&mut arguments, map.next_value()?, "arguments")?,
                        Key::Answer => once(&mut answer, map.next_value()?, "answer")?,
                    }
                }
                match (kind.as_deref(), tool_name, arguments, answer) {
                    (Some("tool_call"), Some(_), Some(arguments), None)
                        if arguments.depth > MAX_ARGUMENT_NESTING =>
                    {
                        Err(A::Error::custom(
                            "arguments nested too deep for the fast path",
                        ))
                    }
                    (Some("tool_call"), Some(tool_name), Some(arguments), None) => {
                        Ok(FastAction::ToolCall {
                            tool_name,
                            arguments,
                        })
                    }
                    (Some("finish"), None, None, Some(answer)) => Ok(FastAction::Finish { answer }),
                    _ => Err(A::Error::custom("not an action of the fast path")),
                }
            }
        }
        deserializer.deserialize_map(Fields)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FastExpect {
    #[serde(default, deserialize_with = "exit_reason")]
    exit_reason: Option<ExitReason>,
    #[serde(default, deserialize_with = "present")]
    answer: Option<String>,
    #[serde(default, deserialize_with = "present")]
    answer_contains: Option<String>,
    #[serde(default, deserialize_with = "present")]
    max_steps_used: Option<u32>,
}

/// A key that is given must hold a value: `null` is not "absent" in a suite.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// A derived struct or internally tagged enum read only from a JSON object, never an array.
struct Object<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct OnlyMaps<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for OnlyMaps<T> {
            type Value = T;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map))
            }
        }
        deserializer
            .deserialize_map(OnlyMaps(PhantomData))
            .map(Object)
    }
}

/// `"summary"` or `"full"`, and nothing else that serde would read as the enum.
fn capture<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Capture>, D::Error> {
    match String::deserialize(d)?.as_str() {
        "summary" => Ok(Some(Capture::Summary)),
        "full" => Ok(Some(Capture::Full)),
        _ => Err(serde::de::Error::custom("unknown capture mode")),
    }
}

/// An exit reason's name, and nothing else that serde would read as the enum.
fn exit_reason<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ExitReason>, D::Error> {
    ExitReason::parse(&String::deserialize(d)?)
        .map(Some)
        .ok_or_else(|| serde::de::Error::custom("unknown exit reason"))
}

/// The suite, when the fast path can prove it valid; `None` sends the caller to the checker.
pub fn load_fast(text: &str) -> Option<Suite> {
    let Object(suite) = serde_json::from_str::<Object<FastSuite>>(text).ok()?;
    build(suite)
}

/// What loading a suite in parts found.
pub enum InParts {
    /// The suite, as [`load_fast`] gives it.
    Loaded(Box<Suite>),
    /// Not a suite the fast path loads, as [`load_fast`] would find too: every part parsed and
    /// the whole did not hold, or the first part failed on what it holds (a type, an unknown
    /// key), which is the text of whole tasks read as the whole suite reads them. Only the
    /// checker can say more.
    NotFast,
    /// The text could not be cut, or a part failed where a cut between two tasks may have
    /// fallen inside one: [`load_fast`] decides.
    Uncut,
}

/// [`load_fast`] with the tasks parsed on `parts` threads, each its share of the `tasks` array
/// (see [`split_tasks`] for why that gives the same result).
pub fn load_fast_in_parts(text: &str, parts: usize) -> InParts {
    let Some(cut) = split_tasks(text, parts) else {
        return InParts::Uncut;
    };
    let Some((last_part, firsts)) = cut.parts.split_last() else {
        return InParts::Uncut;
    };
    let Some((first, middle)) = firsts.split_first() else {
        return InParts::Uncut;
    };
    // A thread that cannot be started leaves its part unread: the suite loads on one thread.
    let (first, middle, last) = std::thread::scope(|scope| {
        let last = std::thread::Builder::new()
            .spawn_scoped(scope, || parse_last_part(last_part))
            .ok();
        let middle: Vec<_> = middle
            .iter()
            .map(|part| {
                std::thread::Builder::new()
                    .spawn_scoped(scope, move || whole_part(part, false).ok())
                    .ok()
            })
            .collect();
        // The first part starts with the array's own `[`.
        let first = whole_part(first, true);
        let middle: Vec<_> = middle
            .into_iter()
            .map(|h| h.and_then(|h| h.join().ok().flatten()))
            .collect();
        (first, middle, last.and_then(|h| h.join().ok().flatten()))
    });
    let first = match first {
        Ok(tasks) => tasks,
        Err(Some(err)) if err.classify() == serde_json::error::Category::Data => {
            return InParts::NotFast;
        }
        _ => return InParts::Uncut,
    };
    let Some(middle) = middle.into_iter().collect::<Option<Vec<_>>>() else {
        return InParts::Uncut;
    };
    let Some((last, rest)) = last else {
        return InParts::Uncut;
    };
    // Every part parsed: from here on the whole text is what was read.
    let frame = format!("{}[]{}", cut.before, &last_part[rest..]);
    let Ok(Object(mut suite)) = serde_json::from_str::<Object<FastSuite>>(&frame) else {
        return InParts::NotFast;
    };
    if !suite.tasks.is_empty() {
        return InParts::NotFast;
    }
    suite.tasks = first;
    for part in middle {
        suite.tasks.extend(part);
    }
    suite.tasks.extend(last);
    match build(suite) {
        Some(suite) => InParts::Loaded(Box::new(suite)),
        None => InParts::NotFast,
    }
}

/// Tasks separated by commas, read where they stand in `part` (not copied into an array of
/// their own): after the array's `[` when `opening`, and up to the end of the part. Gives the
/// tasks, or why they do not parse: the deserializer's error, or `None` for text that is not
/// such a list.
fn whole_part(
    part: &str,
    opening: bool,
) -> Result<Vec<Object<FastTask>>, Option<serde_json::Error>> {
    let (tasks, end) = read_tasks(part, opening)?;
    if end != part.len() {
        return Err(None);
    }
    Ok(tasks)
}

/// The last part of the tasks, which runs on past the array's `]` to the end of the suite: its
/// tasks, and where in `part` the array ends.
fn parse_last_part(part: &str) -> Option<(Vec<Object<FastTask>>, usize)> {
    let (tasks, end) = read_tasks(part, false).ok()?;
    if part.as_bytes().get(end) != Some(&b']') {
        return None;
    }
    Some((tasks, end + 1))
}

/// Reads `[` when `opening`, then one or more tasks separated by `,` from the start of `part`:
/// the tasks and where the text after the last one's trailing whitespace starts. JSON allows
/// nothing else between the values of an array, so what this reads is what an array made of the
/// same text holds.
fn read_tasks(
    part: &str,
    opening: bool,
) -> Result<(Vec<Object<FastTask>>, usize), Option<serde_json::Error>> {
    let bytes = part.as_bytes();
    let mut at = 0;
    if opening {
        at = whitespace_len(bytes);
        if bytes.get(at) != Some(&b'[') {
            return Err(None);
        }
        at += 1;
    }
    let mut tasks = Vec::new();
    loop {
        let mut stream = serde_json::Deserializer::from_str(&part[at..]).into_iter();
        tasks.push(stream.next().ok_or(None)?.map_err(Some)?);
        at += stream.byte_offset();
        at += whitespace_len(&bytes[at..]);
        if bytes.get(at) != Some(&b',') {
            return Ok((tasks, at));
        }
        at += 1;
    }
}

/// How deep tool arguments may nest on the fast path. serde_json refuses text nested more than
/// 128 levels counted from the suite's top, but arguments are walked as text of their own, counted
/// from theirs (and a part's tasks are read with no array around them): deeper arguments are left
/// to the checker, which reads the whole suite as one value.
const MAX_ARGUMENT_NESTING: usize = 100;

fn build(suite: FastSuite) -> Option<Suite> {
    if suite.name.trim().is_empty() || suite.tasks.is_empty() {
        return None;
    }
    let defaults = suite.defaults.map_or(
        FastDefaults {
            max_steps: None,
            capture: None,
        },
        |d| d.0,
    );
    if defaults.max_steps == Some(0) {
        return None;
    }
    let mut tasks = Vec::with_capacity(suite.tasks.len());
    for Object(task) in suite.tasks {
        if task.max_steps == Some(0) {
            return None;
        }
        let id = TaskId::parse_owned(task.id).ok()?;
        let model = match (task.model.0.responses, task.model.0.actions) {
            (Some(responses), None) if !responses.is_empty() => TaskModel::Responses(responses),
            (None, Some(actions)) if !actions.is_empty() => {
                TaskModel::Actions(actions.into_iter().map(|a| action(a.0)).collect())
            }
            _ => return None,
        };
        let expect = task
            .expect
            .map_or_else(Expectations::default, |Object(e)| Expectations {
                exit_reason: e.exit_reason,
                answer: e.answer,
                answer_contains: e.answer_contains,
                max_steps_used: e.max_steps_used,
                ..Expectations::default()
            });
        tasks.push(SuiteTask {
            id,
            prompt: task.prompt?,
            max_steps: task
                .max_steps
                .or(defaults.max_steps)
                .unwrap_or(DEFAULT_MAX_STEPS),
            model,
            expect,
            finish_gate: None,
            limits: crate::agent::Limits::default(),
            model_name: None,
        });
    }
    let mut ids = HashSet::with_capacity(tasks.len());
    if !tasks.iter().all(|task| ids.insert(task.id.as_str())) {
        return None;
    }
    Some(Suite {
        name: suite.name,
        capture: defaults.capture.unwrap_or_default(),
        tasks,
        tools: None,
        models: Default::default(),
    })
}

fn action(action: FastAction) -> ScriptedAction {
    match action {
        FastAction::ToolCall {
            tool_name,
            arguments,
        } => ScriptedAction::ToolCall {
            tool_name,
            arguments: arguments.text,
        },
        FastAction::Finish { answer } => ScriptedAction::Finish(Finish { answer }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// An indented suite of `n` tasks, the first one made by `first` and the others scripted.
    fn indented(n: usize, first: serde_json::Value) -> String {
        let mut tasks = vec![first];
        tasks.extend((1..n).map(|i| {
            json!({"id": format!("t{i}"), "prompt": "p", "model": {"actions": [
                {"type": "tool_call", "tool_name": "calculator", "arguments": {"left": i, "operation": "add", "right": 1}},
                {"type": "finish", "answer": "a"}
            ]}, "expect": {"answer": "a"}})
        }));
        serde_json::to_string_pretty(
            &json!({"name": "s", "defaults": {"max_steps": 4}, "tasks": tasks}),
        )
        .unwrap()
    }

    fn scripted(id: &str) -> serde_json::Value {
        json!({"id": id, "prompt": "p", "model": {"responses": ["x"]}})
    }

    #[test]
    fn an_indented_suite_loads_in_parts_as_on_one_thread() {
        let text = indented(40, scripted("t0"));
        let whole = format!("{:?}", load_fast(&text).unwrap());
        for parts in 2..=8 {
            match load_fast_in_parts(&text, parts) {
                InParts::Loaded(suite) => assert_eq!(format!("{suite:?}"), whole, "{parts}"),
                _ => panic!("{parts} parts: not loaded in parts"),
            }
        }
    }

    #[test]
    fn a_first_task_the_fast_path_refuses_needs_no_second_try() {
        let replay = json!({"id": "t0", "prompt": "p", "model": {"replay": "run.jsonl"}});
        assert!(matches!(
            load_fast_in_parts(&indented(40, replay), 2),
            InParts::NotFast
        ));
        // Every part parses, the ids do not hold: the whole was read.
        assert!(matches!(
            load_fast_in_parts(&indented(40, scripted("t39")), 2),
            InParts::NotFast
        ));
    }

    #[test]
    fn tasks_are_read_in_place_only_as_an_array_would_hold_them() {
        let task = r#"{"id": "a", "prompt": "p", "model": {"responses": ["x"]}}"#;
        let ids = |part: &str, opening| {
            whole_part(part, opening)
                .map(|tasks| tasks.into_iter().map(|t| t.0.id).collect::<Vec<_>>())
        };
        assert_eq!(
            ids(&format!(" [\n{task} ,\t{task}\r\n"), true)
                .unwrap()
                .len(),
            2
        );
        assert_eq!(ids(&format!("\n {task}"), false).unwrap(), ["a"]);
        for not_a_list in [
            format!("{task},"),       // a comma with no task after it
            format!(", {task}"),      // a comma with no task before it
            format!("{task} {task}"), // two tasks with no comma between them
            format!("{task}]"),       // text after the last task
            String::new(),            // no task
        ] {
            assert!(
                ids(&format!("[{not_a_list}"), true).is_err(),
                "[{not_a_list}"
            );
        }
        for not_a_list in [
            format!("{task},"),
            format!(", {task}"),
            format!("{task} {task}"),
        ] {
            assert!(ids(&not_a_list, false).is_err(), "{not_a_list}");
        }
        assert!(
            ids(&format!("{task}, {task}"), true).is_err(),
            "no `[` where the array opens"
        );
        // The last part ends with the array's `]`; where the suite goes on after it is given.
        let last = format!("{task},{task} ]\n}}");
        assert_eq!(
            parse_last_part(&last).map(|(t, end)| (t.len(), end)),
            Some((2, last.len() - 2))
        );
        assert!(parse_last_part(&format!("{task},{task} }}")).is_none());
        // A task the fast path refuses is the deserializer's own error, kept for the caller.
        let unknown = r#"[{"id": "a", "prompt": "p", "model": {"responses": ["x"]}, "extra": 1}"#;
        assert!(matches!(whole_part(unknown, true), Err(Some(e)) if e.is_data()));
    }

    #[test]
    fn what_may_have_been_cut_wrong_is_left_to_one_thread() {
        // On one line, the middle of the text is a list of objects that start as tasks do.
        let listed: Vec<_> = (0..200).map(|i| json!({"id": i})).collect();
        let tasks = [
            scripted("a"),
            json!({"id": "b", "prompt": "p", "model": {"actions": [
                {"type": "tool_call", "tool_name": "calculator", "arguments": {"left": listed}}
            ]}}),
            scripted("c"),
        ];
        let one_line = serde_json::to_string(&json!({"name": "s", "tasks": tasks})).unwrap();
        assert!(matches!(load_fast_in_parts(&one_line, 2), InParts::Uncut));
    }

    #[test]
    fn arguments_nested_deeper_than_the_fast_path_reads_are_left_to_the_checker() {
        let nested = |levels| {
            let mut nested = json!(1);
            for _ in 0..levels {
                nested = json!([nested]);
            }
            json!({"id": "t0", "prompt": "p", "model": {"actions": [
                {"type": "tool_call", "tool_name": "calculator", "arguments": {"left": nested}}
            ]}})
        };
        // The arguments object is one level more than what it holds.
        let deepest = indented(40, nested(MAX_ARGUMENT_NESTING - 1));
        assert!(load_fast(&deepest).is_some());
        assert!(matches!(
            load_fast_in_parts(&deepest, 2),
            InParts::Loaded(_)
        ));
        let deeper = indented(40, nested(MAX_ARGUMENT_NESTING));
        assert!(load_fast(&deeper).is_none());
        assert!(matches!(load_fast_in_parts(&deeper, 2), InParts::NotFast));
    }
}
