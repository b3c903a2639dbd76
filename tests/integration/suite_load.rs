//! Suite loading has one verdict: the schema (`schemas/suite.schema.json`) is checked first and
//! serde reads what passed, so the loader never accepts what the schema refuses, and refuses
//! beyond it only what the schema cannot say (repeated ids, `5.0` for a whole number). A key
//! given twice in one object is refused with its JSON path. Inputs are generated valid suites and
//! mutations of them that serde's derived code is known to be lenient about: objects written as
//! arrays, enum names written as `{"name": null}`, repeated keys.

use std::path::Path;

use looptrace::eval::load_suite_from_str;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

use crate::support::{looptrace, stderr};

/// The problems of a suite the loader refuses, as `(path, message)`, or `None` if it loads.
fn problems(text: &str) -> Option<Vec<(String, String)>> {
    load_suite_from_str(text, Path::new("."))
        .err()
        .map(|errors| errors.problems)
}

/// An indented suite of `n` tasks, task `i` made by `task(i)`.
fn indented_suite(n: usize, task: impl Fn(usize) -> Value) -> String {
    let tasks: Vec<Value> = (0..n).map(task).collect();
    serde_json::to_string_pretty(&json!({"name": "parts", "tasks": tasks})).unwrap()
}

fn finishing_task(id: &str) -> Value {
    json!({"id": id, "prompt": "p", "model": {"actions": [{"type": "finish", "answer": "a"}]}})
}

#[test]
fn a_large_suite_keeps_every_task_in_order() {
    // Large enough to be read on several threads.
    let text = indented_suite(5000, |i| finishing_task(&format!("t{i:04}")));
    let suite = load_suite_from_str(&text, Path::new(".")).unwrap();
    let ids: Vec<&str> = suite
        .tasks
        .entries()
        .iter()
        .map(|t| t.id.as_str())
        .collect();
    let expected: Vec<String> = (0..5000).map(|i| format!("t{i:04}")).collect();
    assert_eq!(ids, expected);
}

#[test]
fn an_id_repeated_far_apart_is_refused_at_the_second() {
    let text = indented_suite(5000, |i| finishing_task(&format!("t{}", i % 4999)));
    let found = problems(&text).expect("refused");
    assert_eq!(
        found,
        [(
            "$.tasks[4999].id".to_owned(),
            "duplicate id \"t0\"".to_owned()
        )]
    );
}

/// The JSON paths of the problems of a suite that must be refused.
fn refused_at(text: &str) -> Vec<String> {
    problems(text)
        .unwrap_or_else(|| panic!("the suite loaded: {text}"))
        .into_iter()
        .map(|(path, _)| path)
        .collect()
}

#[test]
fn a_task_written_as_an_array_is_refused() {
    let text = r#"{"name": "n", "tasks": [["a", "p", 3, {"responses": ["x"]}]]}"#;
    assert_eq!(refused_at(text), ["$.tasks[0]"]);
}

#[test]
fn an_action_written_as_an_array_is_refused() {
    let text = r#"{"name": "n", "tasks": [{"id": "a", "prompt": "p", "model": {"actions": [["finish", "done"]]}}]}"#;
    assert_eq!(refused_at(text), ["$.tasks[0].model.actions[0]"]);
}

#[test]
fn models_defaults_and_expectations_written_as_arrays_are_refused() {
    let text = r#"{"name": "n", "defaults": [3], "tasks": [{"id": "a", "prompt": "p", "model": [["x"]], "expect": ["finished"]}]}"#;
    assert_eq!(
        refused_at(text),
        ["$.defaults", "$.tasks[0].expect", "$.tasks[0].model"]
    );
}

/// Runs `looptrace eval` on a suite holding `text`; asserts it exits 2 naming `path`, without
/// creating the output folder.
fn eval_refuses(text: &str, path: &str) {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suite.json");
    std::fs::write(&suite, text).unwrap();
    let out = dir.path().join("out");
    let output = looptrace()
        .arg("eval")
        .arg(&suite)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains(path), "{}", stderr(&output));
    assert!(!out.exists(), "nothing is written for a refused suite");
}

#[test]
fn a_capture_mode_written_as_a_map_is_refused_and_never_turns_on_full_capture() {
    eval_refuses(
        r#"{"name": "n", "defaults": {"capture": {"full": null}}, "tasks": [{"id": "a", "prompt": "secret prompt", "model": {"actions": [{"type": "finish", "answer": "secret answer"}]}}]}"#,
        "$.defaults.capture: expected",
    );
}

#[test]
fn an_exit_reason_written_as_a_map_is_refused() {
    let text = r#"{"name": "n", "tasks": [{"id": "a", "prompt": "p", "model": {"responses": ["x"]}, "expect": {"exit_reason": {"finished": null}}}]}"#;
    assert_eq!(refused_at(text), ["$.tasks[0].expect.exit_reason"]);
}

#[test]
fn a_key_given_twice_is_refused_with_its_path_at_any_depth() {
    let text = r#"{"name": "n", "tasks": [{"id": "a", "prompt": "p", "prompt": "q", "model": {"actions": [{"type": "tool_call", "tool_name": "calculator", "arguments": {"left": 1, "left": 2, "operation": "add", "right": 3}}]}}], "name": "n"}"#;
    let found = problems(text).expect("refused");
    // The top level's problems come first, then each task's.
    assert_eq!(
        found,
        [
            (
                "$.name".to_owned(),
                "key given twice in one object (which value is meant?)".to_owned()
            ),
            (
                "$.tasks[0].prompt".to_owned(),
                "key given twice in one object (which value is meant?)".to_owned()
            ),
            (
                "$.tasks[0].model.actions[0].arguments.left".to_owned(),
                "key given twice in one object (which value is meant?)".to_owned()
            ),
        ]
    );
}

#[test]
fn eval_names_the_repeated_key_and_exits_2() {
    eval_refuses(
        r#"{"name": "n", "tasks": [{"id": "a", "prompt": "p", "model": {"responses": ["x"], "responses": ["y"]}}]}"#,
        "$.tasks[0].model.responses: key given twice",
    );
}

fn action() -> impl Strategy<Value = Value> {
    prop_oneof![
        ("[a-z]{1,3}").prop_map(|answer| json!({"type": "finish", "answer": answer})),
        (0..100i64, 0..100i64).prop_map(|(l, r)| json!({
            "type": "tool_call",
            "tool_name": "calculator",
            "arguments": {"left": l, "operation": "add", "right": r}
        })),
    ]
}

fn model() -> impl Strategy<Value = Value> {
    prop_oneof![
        prop::collection::vec("[a-z{}\" ]{0,6}", 1..3).prop_map(|r| json!({"responses": r})),
        prop::collection::vec(action(), 1..3).prop_map(|a| json!({"actions": a})),
    ]
}

fn expect() -> impl Strategy<Value = Value> {
    (
        prop::option::of(prop::sample::select(vec![
            "finished",
            "max_steps_exceeded",
            "invalid_model_output",
            "internal_error",
        ])),
        prop::option::of("[a-z]{0,2}"),
        prop::option::of("[a-z]{0,2}"),
        prop::option::of(0..6u32),
    )
        .prop_map(|(exit_reason, answer, contains, used)| {
            let mut map = Map::new();
            if let Some(v) = exit_reason {
                map.insert("exit_reason".into(), json!(v));
            }
            if let Some(v) = answer {
                map.insert("answer".into(), json!(v));
            }
            if let Some(v) = contains {
                map.insert("answer_contains".into(), json!(v));
            }
            if let Some(v) = used {
                map.insert("max_steps_used".into(), json!(v));
            }
            Value::Object(map)
        })
}

fn task() -> impl Strategy<Value = Value> {
    (
        "[a-z0-9._-]{1,4}",
        "[a-z ]{0,5}",
        prop::option::of(1..9u32),
        model(),
        prop::option::of(expect()),
        prop::option::of(1..100u64),
    )
        .prop_map(|(id, prompt, max_steps, model, expect, tokens)| {
            let mut map = Map::new();
            map.insert("id".into(), json!(id));
            map.insert("prompt".into(), json!(prompt));
            if let Some(v) = max_steps {
                map.insert("max_steps".into(), json!(v));
            }
            map.insert("model".into(), model);
            if let Some(v) = expect {
                map.insert("expect".into(), v);
            }
            if let Some(v) = tokens {
                map.insert("max_total_tokens".into(), json!(v));
            }
            Value::Object(map)
        })
}

/// A valid suite (ids may repeat, which only the hand-written rules catch).
fn suite() -> impl Strategy<Value = Value> {
    (
        "[a-z ]{1,4}",
        prop::option::of((
            prop::option::of(1..9u32),
            prop::option::of(prop::sample::select(vec!["summary", "full"])),
        )),
        // Up to six tasks, so that suites can be cut into parts.
        prop::collection::vec(task(), 1..7),
    )
        .prop_map(|(name, defaults, tasks)| {
            let mut suite = Map::new();
            suite.insert("name".into(), json!(name));
            if let Some((steps, capture)) = defaults {
                let mut d = Map::new();
                if let Some(v) = steps {
                    d.insert("max_steps".into(), json!(v));
                }
                if let Some(v) = capture {
                    d.insert("capture".into(), json!(v));
                }
                suite.insert("defaults".into(), Value::Object(d));
            }
            suite.insert("tasks".into(), Value::Array(tasks));
            Value::Object(suite)
        })
}

/// Every node of `value`, in pre-order, as a mutable reference to apply `f` to the `n`th.
fn mutate_nth(value: &mut Value, n: &mut usize, f: &dyn Fn(&mut Value)) -> bool {
    if *n == 0 {
        f(value);
        return true;
    }
    *n -= 1;
    match value {
        Value::Array(items) => items.iter_mut().any(|item| mutate_nth(item, n, f)),
        Value::Object(map) => map.values_mut().any(|item| mutate_nth(item, n, f)),
        _ => false,
    }
}

/// One change to one node, chosen by `kind`.
fn mutation(kind: u8) -> impl Fn(&mut Value) {
    move |value: &mut Value| {
        *value = match (kind, value.take()) {
            (0, Value::Object(map)) => Value::Array(map.into_iter().map(|(_, v)| v).collect()),
            (1, Value::String(s)) => json!({ s: null }),
            (2, Value::Object(mut map)) => {
                map.insert("extra".into(), json!(1));
                Value::Object(map)
            }
            (3, Value::Object(mut map)) => {
                let first = map.keys().next().cloned();
                if let Some(key) = first {
                    map.remove(&key);
                }
                Value::Object(map)
            }
            (4, Value::Array(_)) => json!([]),
            (5, Value::Number(_)) => json!(0),
            (6, Value::Number(_)) => json!(4294967296u64),
            (7, Value::Number(n)) => json!(n.as_f64()),
            (8, v) => json!([v]),
            (9, _) => Value::Null,
            (10, Value::String(_)) => json!(""),
            (11, Value::String(s)) => json!(format!("{s}/")),
            (_, v) => v,
        };
    }
}

/// `value` as JSON text with the first key of its `n`th object (pre-order) written twice, the
/// first time with `first` as its value; the text has no repeated key if there is no such object.
fn write_with_repeat(value: &Value, n: &mut Option<usize>, first: &Value, out: &mut String) {
    match value {
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_with_repeat(item, n, first, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let here = *n == Some(0) && !map.is_empty();
            if !map.is_empty() {
                *n = n.and_then(|n| n.checked_sub(1));
            }
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                if here && i == 0 {
                    out.push_str(&first.to_string());
                    out.push(',');
                    out.push_str(&Value::String(key.clone()).to_string());
                    out.push(':');
                }
                write_with_repeat(item, n, first, out);
            }
            out.push('}');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// The shipped schema's verdict on `text`: valid or not.
fn schema_accepts(text: &str) -> bool {
    static SCHEMA: std::sync::LazyLock<jsonschema::Validator> = std::sync::LazyLock::new(|| {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/suite.schema.json");
        let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        jsonschema::validator_for(&schema).unwrap()
    });
    SCHEMA.is_valid(&serde_json::from_str::<Value>(text).unwrap())
}

/// Whether `value` holds a number with a fraction or an exponent, such as `1.0`: JSON Schema
/// counts `1.0` as an integer, the suite format does not (a whole number is written as one).
fn has_float(value: &Value) -> bool {
    match value {
        Value::Number(n) => n.is_f64(),
        Value::Array(items) => items.iter().any(has_float),
        Value::Object(map) => map.values().any(has_float),
        _ => false,
    }
}

/// Whether two tasks of `text` share an id, or a whole number is written as `1.0`: the rules
/// here the schema cannot state.
fn beyond_the_schema(text: &str) -> bool {
    let value: Value = serde_json::from_str(text).unwrap();
    if has_float(&value) {
        return true;
    }
    let Some(tasks) = value.get("tasks").and_then(Value::as_array) else {
        return false;
    };
    let ids: Vec<&Value> = tasks.iter().filter_map(|t| t.get("id")).collect();
    let unique: std::collections::HashSet<String> = ids.iter().map(|v| v.to_string()).collect();
    unique.len() != ids.len()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

    /// Where the loader accepts, so does the schema (and the other way round, unless ids
    /// repeat or a whole number is written `1.0`).
    #[test]
    fn the_loader_and_the_schema_agree(
        suite in suite(),
        changes in prop::collection::vec((0..200usize, 0..13u8), 0..3),
        repeat in prop::option::of((0..12usize, prop_oneof![Just(json!("x")), Just(json!(1)), Just(json!({}))])),
    ) {
        let mut suite = suite;
        for (node, kind) in changes {
            mutate_nth(&mut suite, &mut { node }, &mutation(kind));
        }
        let mut text = String::new();
        let asked = repeat.is_some();
        let (mut n, first) = match repeat {
            Some((n, first)) => (Some(n), first),
            None => (None, Value::Null),
        };
        write_with_repeat(&suite, &mut n, &first, &mut text);
        let repeated = asked && n.is_none();
        let verdict = problems(&text);
        if repeated {
            prop_assert!(verdict.as_ref().is_some_and(|p| p.iter().any(|(_, m)| m.starts_with("key given twice"))), "{text}: {verdict:?}");
        } else if !beyond_the_schema(&text) {
            prop_assert_eq!(verdict.is_none(), schema_accepts(&text), "{}: {:?}", text, verdict);
        }
    }
}
