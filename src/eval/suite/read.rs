//! Reading one task's JSON text, the same way for a task of a suite's `tasks` array and for a
//! line of a tasks file: strict JSON (a key given twice is a problem), the schema, the typed
//! struct, then the hand-written checks of [`Context::task`]. A task is first checked as it is
//! written ([`FlatDocument`], no value built) and read into its typed struct from that document;
//! only one that fails anywhere there is read again as a value, whose checks say what is wrong.

use super::resolve::{Context, Problem};
use super::schema::{FlatDocument, FlatNode, task_is_valid, task_problems};
use super::spec::TaskSpec;
use super::task::SuiteTask;
use crate::eval::strict_json::parse_noting_repeats;

/// The message of a key given twice in one object.
pub const REPEATED_KEY: &str = "key given twice in one object (which value is meant?)";

/// Reads the task written as `text`, its problems' paths under `root`.
pub fn read_task(text: &str, root: &str, context: &Context) -> Result<SuiteTask, Vec<Problem>> {
    // Scripted arguments read numbers as Python does: `-0` is the integer 0.
    let text = crate::tools::integer_negative_zero_as_zero(text);
    if let Some(spec) = passing_spec(&text, context) {
        return context.task(spec, root);
    }
    let (value, repeated) = parse_noting_repeats(&text, root).map_err(|err| {
        vec![(
            format!("{root} (column {})", err.column()),
            format!(
                "invalid JSON: {}",
                crate::trace::describe_json_error_plain(&err)
            ),
        )]
    })?;
    check_schema(&value, repeated, root, context)?;
    // Read from the value it is (moving its strings); only a task that fails is read again,
    // from its text, to find where.
    let spec: TaskSpec = match serde_json::from_value(value) {
        Ok(spec) => spec,
        Err(_) => {
            let mut de = serde_json::Deserializer::from_str(&text);
            return Err(vec![path_problem(
                serde_path_to_error::deserialize::<_, TaskSpec>(&mut de),
                root,
            )]);
        }
    };
    context.task(spec, root)
}

/// Reads the task written as `text`, whose document (`None`: none could be built) the walk over
/// the suite's `tasks` array built as it went: read from that document when it passes, else
/// from its text as [`read_task`] reads it.
pub fn read_built_task(
    text: &str,
    document: Option<FlatNode<'_>>,
    root: &str,
    context: &Context,
) -> Result<SuiteTask, Vec<Problem>> {
    let spec = match document {
        // A `-0` to rewrite makes another text: the document is not of it.
        Some(document)
            if matches!(
                crate::tools::integer_negative_zero_as_zero(text),
                std::borrow::Cow::Borrowed(_)
            ) =>
        {
            passing_spec_of(document, context)
        }
        _ => None,
    };
    match spec {
        Some(spec) => context.task(spec, root),
        None => read_task(text, root, context),
    }
}

/// The typed task `text` holds when it is JSON without a repeated key, passes the schema, has a
/// model where one is needed, and reads as [`TaskSpec`]; else `None`, and the caller finds why.
fn passing_spec(text: &str, context: &Context) -> Option<TaskSpec> {
    passing_spec_of(FlatDocument::parse(text)?.root(), context)
}

/// [`passing_spec`] of a document already built.
fn passing_spec_of(root: FlatNode<'_>, context: &Context) -> Option<TaskSpec> {
    if !task_is_valid(root) || (root.get("model").is_none() && !context.model_given()) {
        return None;
    }
    serde::Deserialize::deserialize(root).ok()
}

/// Reads the task `value` (made, not written: a dataset's row in its template): the schema, the
/// typed struct, then the hand-written checks.
pub fn check_task(
    value: serde_json::Value,
    root: &str,
    context: &Context,
) -> Result<SuiteTask, Vec<Problem>> {
    check_schema(&value, Vec::new(), root, context)?;
    let spec: TaskSpec = typed(value, root)?;
    context.task(spec, root)
}

/// The schema's problems with a task, and its repeated keys (at the JSON paths `repeated`).
fn check_schema(
    value: &serde_json::Value,
    repeated: Vec<String>,
    root: &str,
    context: &Context,
) -> Result<(), Vec<Problem>> {
    let mut problems: Vec<Problem> = repeated
        .into_iter()
        .map(|path| (path, REPEATED_KEY.to_owned()))
        .collect();
    problems.extend(task_problems(value, root));
    // The schema lets a task go without a model (the suite's defaults or `eval --model` may
    // give one); whether one is given is known here.
    if value.is_object() && value.get("model").is_none() && !context.model_given() {
        problems.push((root.to_owned(), super::resolve::MISSING_MODEL.to_owned()));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

/// `value`, which the schema passed, as its typed struct; what the schema cannot say (a whole
/// number written as `5.0`) is reported at its path.
pub fn typed<T: serde::de::DeserializeOwned>(
    value: serde_json::Value,
    root: &str,
) -> Result<T, Vec<Problem>> {
    serde_path_to_error::deserialize(value)
        .map_err(|err| vec![path_problem::<T, _>(Err(err), root)])
}

/// The problem a typed read found, at its JSON path under `root`.
fn path_problem<T, E: std::fmt::Display>(
    read: Result<T, serde_path_to_error::Error<E>>,
    root: &str,
) -> Problem {
    let Err(err) = read else {
        return (
            root.to_owned(),
            "the task reads one way as a whole and another piece by piece".to_owned(),
        );
    };
    let inner = err.inner().to_string();
    let at = err.path().to_string();
    let path = if at == "." {
        root.to_owned()
    } else {
        format!("{root}.{at}")
    };
    let message = if inner.starts_with("invalid type: floating point") {
        format!("a whole number is written without a fraction or an exponent ({inner})")
    } else {
        inner
    };
    (path, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::suite::spec::DefaultsSpec;

    #[test]
    fn a_task_that_passes_is_read_from_its_document() {
        let context = Context::new(std::path::Path::new("."), DefaultsSpec::default());
        for text in [
            r#"{"id": "a", "prompt": "p", "model": {"responses": ["x"]}}"#,
            r#"{"id": "scripted-calc-000001", "prompt": "compute -37 + 367", "model": {"actions": [{"type": "tool_call", "tool_name": "calculator", "arguments": {"left": -37, "operation": "add", "right": 367}}, {"type": "finish", "answer": "330"}]}, "expect": {"exit_reason": "finished", "answer": "330"}}"#,
        ] {
            let document = FlatDocument::parse(text).expect("a document");
            assert!(task_is_valid(document.root()), "{text}");
            assert!(serde_json::from_str::<TaskSpec>(text).is_ok(), "{text}");
            assert!(passing_spec(text, &context).is_some(), "{text}");
        }
    }

    #[test]
    fn a_task_read_from_its_text_is_the_task_read_from_its_value() {
        let base = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_traces");
        let suite: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(base.join("suite.json")).unwrap())
                .unwrap();
        let defaults: DefaultsSpec = serde_json::from_value(suite["defaults"].clone()).unwrap();
        let context = Context::new(&base, defaults);
        let tasks = suite["tasks"].as_array().unwrap();
        assert!(tasks.len() > 5, "a suite of several tasks");
        for (i, task) in tasks.iter().enumerate() {
            let root = format!("$.tasks[{i}]");
            // Spaced as people write, with a scripted call's arguments over several lines.
            let text = serde_json::to_string_pretty(task).unwrap();
            assert!(passing_spec(&text, &context).is_some(), "{text}");
            let from_text = read_task(&text, &root, &context).unwrap();
            let from_value = check_task(task.clone(), &root, &context).unwrap();
            assert_eq!(
                format!("{from_text:?}"),
                format!("{from_value:?}"),
                "{text}"
            );
        }
    }

    #[test]
    fn a_task_read_from_its_document_is_the_task_read_from_its_text() {
        let base = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_traces");
        let suite: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(base.join("suite.json")).unwrap())
                .unwrap();
        for task in suite["tasks"].as_array().unwrap() {
            let text = serde_json::to_string_pretty(task).unwrap();
            let document = FlatDocument::parse(&text).expect("a document");
            let from_document: TaskSpec = serde::Deserialize::deserialize(document.root()).unwrap();
            let from_text: TaskSpec = serde_json::from_str(&text).unwrap();
            assert_eq!(
                format!("{from_document:?}"),
                format!("{from_text:?}"),
                "{text}"
            );
        }
    }

    #[test]
    fn scripted_arguments_are_held_as_compact_text() {
        let context = Context::new(std::path::Path::new("."), DefaultsSpec::default());
        let text = "{\"id\": \"a\", \"prompt\": \"p\", \"model\": {\"actions\": [{\"type\": \"tool_call\", \"tool_name\": \"t\", \"arguments\": {\n  \"q\": \"two  words\\\" \",\n  \"n\": [1, 2]\n}}]}}";
        let task = read_task(text, "$", &context).unwrap();
        let super::super::task::TaskModel::Actions(actions) = &task.model else {
            panic!("{:?}", task.model);
        };
        let crate::eval::scripted_action::ScriptedAction::ToolCall { arguments, .. } = &actions[0]
        else {
            panic!("{actions:?}");
        };
        assert_eq!(arguments.get(), r#"{"q":"two  words\" ","n":[1,2]}"#);
    }
}
