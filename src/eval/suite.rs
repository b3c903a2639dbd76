//! Suites: a JSON file naming tasks, the model each runs against, and what to expect; or a tasks
//! file (`tasks.jsonl`, one task per line) for suites too large to hold. The shipped schema
//! (`schemas/suite.schema.json`) is the format's one definition: a suite is checked against it
//! first, every violation reported with its JSON path, then read into typed structs
//! (`suite/spec.rs`, unknown keys refused); only what a schema cannot say (unique ids, files
//! that stay inside the suite's folder and can be read) is checked by hand. Every problem is
//! collected before any task runs. `docs/suite-format.md` is the reference.

mod agent;
mod dataset;
mod read;
mod resolve;
mod schema;
mod spec;
mod tasks;
mod tasks_file;
mod template;

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use serde::Deserializer;
use serde::de::{MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use self::dataset::Dataset;
use self::read::{REPEATED_KEY, read_task, typed};
use self::resolve::{Context, Problem};
use self::spec::{DatasetSpec, DefaultsSpec, SuiteSpec};
use self::tasks_file::TasksFile;
use super::model_spec::{NamedModel, Prices};
use super::scorers::Scorer;
use super::scripted_action::ScriptedAction;
use crate::agent::Limits;
use crate::gate::CommandGate;
use crate::model::live::LiveConfig;
use crate::run::ExitReason;
use crate::tools::ToolsFile;
use crate::trace::Capture;

pub use self::tasks::{IdRef, Selected, SuiteTasks, TaskEntries, TaskEntry, TaskSource};

/// The step budget when neither the task, the suite defaults nor a recording give one.
pub const DEFAULT_MAX_STEPS: u32 = 5;

/// A loaded, checked suite.
#[derive(Clone, Debug)]
pub struct Suite {
    /// The suite's name (also the default output folder's name).
    pub name: String,
    /// Trace capture for every task.
    pub capture: Capture,
    /// The tasks, in file order: held, or read from a tasks file as they run.
    pub tasks: SuiteTasks,
    /// The suite's tools file (`tools`), loaded and checked.
    pub tools: Option<ToolsFile>,
    /// The suite's `models` section, by name.
    pub models: BTreeMap<String, NamedModel>,
}

impl Suite {
    /// The variables the suite's live models read their keys from (`api_key_env`), each once:
    /// no tool, server or gate may be given them.
    pub fn key_vars(&self) -> Vec<String> {
        let mut vars = self.tasks.key_vars().to_vec();
        for var in self.models.values().filter_map(|m| m.api_key_env.as_ref()) {
            if !vars.contains(var) {
                vars.push(var.clone());
            }
        }
        vars
    }
}

/// A task id: letters, digits, `.`, `_`, `-`; it names the task's trace file.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskId(String);

/// The longest task id: `<id>.jsonl` and the names eval gives the files it writes beside a trace
/// (a rerun's new run, a temporary file) must fit in a file name of 255 bytes.
pub const MAX_TASK_ID_CHARS: usize = 200;

impl TaskId {
    /// Checks the characters.
    pub fn parse(id: &str) -> Result<TaskId, String> {
        Self::check(id).map(|()| TaskId(id.to_owned()))
    }

    /// [`TaskId::parse`] keeping the text it is given.
    pub fn parse_owned(id: String) -> Result<TaskId, String> {
        Self::check(&id).map(|()| TaskId(id))
    }

    fn check(id: &str) -> Result<(), String> {
        if id.is_empty() {
            return Err("must not be empty".to_owned());
        }
        if id == "." || id == ".." {
            return Err(format!("{id:?} is not a usable id"));
        }
        if let Some(c) = id
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
        {
            return Err(format!(
                "{id:?} has the character {c:?}; ids use letters, digits, `.`, `_` and `-`"
            ));
        }
        // Only ASCII is left: bytes are characters.
        if id.len() > MAX_TASK_ID_CHARS {
            return Err(format!(
                "is {} characters long; ids are at most {MAX_TASK_ID_CHARS}: an id names its trace file, and file systems allow 255 bytes with room for eval's temporary names",
                id.len()
            ));
        }
        Ok(())
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Text made safe for an id or a file name: characters other than letters, digits, `.`, `_`
    /// and `-` become `_`.
    pub fn sanitize(raw: &str) -> String {
        raw.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One task of a suite.
#[derive(Clone, Debug)]
pub struct SuiteTask {
    /// The unique id.
    pub id: TaskId,
    /// The prompt (from the recording for replay tasks that omit it).
    pub prompt: String,
    /// The step budget, resolved: task, recording (replay tasks), suite defaults, then 5.
    pub max_steps: u32,
    /// What answers the task.
    pub model: TaskModel,
    /// What the result must satisfy.
    pub expect: Expectations,
    /// The finish gate that checks the task's finishes, if any.
    pub finish_gate: Option<CommandGate>,
    /// Token and time budgets: task, then suite defaults.
    pub limits: Limits,
    /// The model as given (a `--model` SPEC, a name from `models`, or `defaults.model`), when the
    /// task's model came from outside the task.
    pub model_name: Option<ModelName>,
    /// The agent command that does the task instead of looptrace's loop, if any.
    pub agent: Option<Arc<super::agent::AgentCommand>>,
}

/// A model given from outside a task, as results name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelName {
    /// The model as given.
    pub given: String,
    /// Under a matrix of models, what the task's file names carry after `@` to tell its runs
    /// apart (letters, digits, `.`, `_`, `-`).
    pub slug: Option<String>,
}

impl SuiteTask {
    /// What names the task's trace file and run id: its id, and under a matrix `<id>@<model>`.
    pub fn run_name(&self) -> String {
        match self.model_name.as_ref().and_then(|m| m.slug.as_ref()) {
            Some(slug) => format!("{}@{slug}", self.id),
            None => self.id.to_string(),
        }
    }

    /// What tells the task's rows apart across models, as [`super::TaskResult::row_key`] does.
    pub fn row_key(&self) -> String {
        match &self.model_name {
            Some(name) => format!("{}[{}]", self.id, name.given),
            None => self.id.to_string(),
        }
    }

    /// The model as results name it: as given, else the task model's kind.
    pub fn model_label(&self) -> &str {
        match &self.model_name {
            Some(name) => &name.given,
            None => self.model.kind(),
        }
    }
}

/// The model a task runs against.
#[derive(Clone, Debug)]
pub enum TaskModel {
    /// Raw response texts through the strict JSON adapter.
    Responses(Vec<String>),
    /// A scripted list of actions.
    Actions(Vec<ScriptedAction>),
    /// A recorded run, replayed.
    Replay {
        /// The trace file, resolved against the suite's folder.
        path: PathBuf,
        /// The recorded run.
        run: super::RunSource,
    },
    /// A live model server.
    Chat {
        /// Everything but the key, which is read when the task runs.
        config: Box<LiveConfig>,
        /// The environment variable holding the key.
        api_key_env: Option<String>,
        /// What its tokens cost, when the suite says.
        prices: Option<Prices>,
    },
    /// No model of its own: `eval --model` gives one.
    Unset,
}

impl TaskModel {
    /// `responses`, `actions`, `replay`, `chat`, or `none` before `eval --model` gives one.
    pub fn kind(&self) -> &'static str {
        match self {
            TaskModel::Responses(_) => "responses",
            TaskModel::Actions(_) => "actions",
            TaskModel::Replay { .. } => "replay",
            TaskModel::Chat { .. } => "chat",
            TaskModel::Unset => "none",
        }
    }

    /// A live model named outside the task.
    pub fn named(model: &NamedModel) -> TaskModel {
        TaskModel::Chat {
            config: Box::new(model.config.clone()),
            api_key_env: model.api_key_env.clone(),
            prices: model.prices,
        }
    }
}

/// What a task's result must satisfy; every given field is checked, and every scorer scores.
#[derive(Clone, Debug, Default)]
pub struct Expectations {
    /// The exit reason.
    pub exit_reason: Option<ExitReason>,
    /// The exact answer.
    pub answer: Option<String>,
    /// Text the answer must contain.
    pub answer_contains: Option<String>,
    /// The most steps the run may use.
    pub max_steps_used: Option<u32>,
    /// The most finishes the finish gate may reject.
    pub max_gate_rejections: Option<u32>,
    /// The answer and run checks, and the case and whitespace options.
    pub checks: super::scorers::Checks,
    /// The scorers of `checks`, then those of `scorers`, in order.
    pub scorers: Vec<Arc<dyn Scorer>>,
}

impl Expectations {
    /// Whether nothing is expected.
    pub fn is_empty(&self) -> bool {
        self.exit_reason.is_none()
            && self.answer.is_none()
            && self.answer_contains.is_none()
            && self.max_steps_used.is_none()
            && self.max_gate_rejections.is_none()
            && self.scorers.is_empty()
    }
}

/// Every problem found in a suite, each with its place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SuiteErrors {
    /// The suite file as the user named it.
    pub file: String,
    /// `(JSON path, what is wrong)`: the top level's, then each task's in order.
    pub problems: Vec<(String, String)>,
}

impl fmt::Display for SuiteErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        crate::text::write_problems(f, "suite", &self.file, &self.problems)
    }
}

impl std::error::Error for SuiteErrors {}

/// Loads a suite file, or a tasks file given directly (`.jsonl`: its file name, without the
/// extension, is the suite's name); relative paths resolve against its folder.
pub fn load_suite(path: &Path) -> Result<Suite, SuiteErrors> {
    load_suite_with_text(path).map(|(suite, _)| suite)
}

/// [`load_suite`], and the file's text: a caller that holds the suite until the process ends can
/// hold the text too rather than pay for freeing it (a few megabytes of pages for a large suite).
/// A tasks file's text is never read whole: it comes back empty.
pub fn load_suite_with_text(path: &Path) -> Result<(Suite, String), SuiteErrors> {
    load_suite_with_text_for(path, false)
}

/// [`load_suite_with_text`] for an evaluation that gives its own models (`eval --model`): tasks
/// may then have no model of their own.
pub fn load_suite_with_text_for(
    path: &Path,
    models_given: bool,
) -> Result<(Suite, String), SuiteErrors> {
    let file = path.display().to_string();
    let fail = |problems: Vec<Problem>| SuiteErrors {
        file: file.clone(),
        problems,
    };
    let base = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    if path.extension().is_some_and(|ext| ext == "jsonl") {
        let (context, _) =
            Context::with_models(base, DefaultsSpec::default(), BTreeMap::new(), models_given);
        let name = path
            .file_stem()
            .map_or_else(|| "tasks".to_owned(), |s| s.to_string_lossy().into_owned());
        let indexed = TasksFile::index(path, context).map_err(fail)?;
        let suite = Suite {
            name,
            capture: Capture::Summary,
            tasks: SuiteTasks::streamed(indexed),
            tools: None,
            models: BTreeMap::new(),
        };
        return Ok((suite, String::new()));
    }
    let text = std::fs::read(path).map_err(|err| {
        fail(vec![(
            "$".to_owned(),
            format!("failed to read the file: {err}"),
        )])
    })?;
    let text = String::from_utf8(text).map_err(|err| {
        fail(vec![(
            "$".to_owned(),
            format!(
                "invalid UTF-8 at byte {}",
                err.utf8_error().valid_up_to() + 1
            ),
        )])
    })?;
    match load_suite_from_str_for(&text, base, models_given) {
        Ok(suite) => Ok((suite, text)),
        Err(mut errors) => {
            errors.file = file;
            Err(errors)
        }
    }
}

/// Loads a suite from text; `base_dir` is the folder its relative paths start from. A large
/// suite's tasks are read on as many threads as there are cores.
pub fn load_suite_from_str(text: &str, base_dir: &Path) -> Result<Suite, SuiteErrors> {
    load_suite_from_str_for(text, base_dir, false)
}

/// [`load_suite_from_str`]; `models_given` as for [`load_suite_with_text_for`].
fn load_suite_from_str_for(
    text: &str,
    base_dir: &Path,
    models_given: bool,
) -> Result<Suite, SuiteErrors> {
    let fail = |problems: Vec<Problem>| SuiteErrors {
        file: "<suite>".to_owned(),
        problems,
    };
    let invalid = |err: serde_json::Error| {
        fail(vec![(
            format!("$ (line {}, column {})", err.line(), err.column()),
            format!(
                "invalid JSON: {}",
                crate::trace::describe_json_error_plain(&err)
            ),
        )])
    };
    let top = match serde_json::from_str::<Entries<'_>>(text) {
        Ok(top) => top,
        Err(err) if err.is_data() => {
            // Valid JSON, but not an object: the schema says what it is.
            let (value, repeated) =
                super::strict_json::parse_noting_repeats(text, "$").map_err(invalid)?;
            let mut problems = schema::head_problems(&value);
            problems.extend(repeated.into_iter().map(|p| (p, REPEATED_KEY.to_owned())));
            return Err(fail(problems));
        }
        Err(err) => return Err(invalid(err)),
    };
    let mut problems: Vec<Problem> = Vec::new();
    let mut head = serde_json::Map::new();
    let mut task_texts: Vec<&RawValue> = Vec::new();
    let mut seen = HashSet::new();
    for (key, member) in top.0 {
        if !seen.insert(key.clone()) {
            problems.push((format!("$.{key}"), REPEATED_KEY.to_owned()));
        }
        let raw = match member {
            Member::Tasks(list) => {
                // Each task is read on its own; the schema sees how many there are.
                let placeholder = list.first().map(|_| Value::Null);
                head.insert(key, Value::Array(placeholder.into_iter().collect()));
                task_texts = list;
                continue;
            }
            Member::Other(value) => {
                head.insert(key, value);
                continue;
            }
            Member::Raw(raw) => raw,
        };
        let (value, repeated) =
            super::strict_json::parse_noting_repeats(raw.get(), &format!("$.{key}"))
                .map_err(invalid)?;
        problems.extend(repeated.into_iter().map(|p| (p, REPEATED_KEY.to_owned())));
        head.insert(key, value);
    }
    let head = Value::Object(head);
    let head_problems = schema::head_problems(&head);
    let spec: Option<SuiteSpec> = if head_problems.is_empty() {
        typed(head, "$")
            .map_err(|found| problems.extend(found))
            .ok()
    } else {
        problems.extend(head_problems);
        None
    };
    // With a flawed top level, the tasks are still checked (against no defaults), so that one
    // run reports every problem.
    let (name, defaults, tasks_file, dataset, tools, models) = match spec {
        Some(spec) => (
            Some(spec.name),
            spec.defaults.unwrap_or_default(),
            spec.tasks_file,
            spec.dataset,
            spec.tools,
            spec.models,
        ),
        None => (None, DefaultsSpec::default(), None, None, None, None),
    };
    let models = match models {
        Some(value) => super::model_spec::models_section(&value, "$.models")
            .map_err(|found| problems.extend(found))
            .unwrap_or_default(),
        None => BTreeMap::new(),
    };
    let (context, found) = Context::with_models(base_dir, defaults, models, models_given);
    problems.extend(found);
    let tools = tools.and_then(|value| {
        tools_of(&value, &context)
            .map_err(|found| problems.extend(found))
            .ok()
    });
    let tasks = match (tasks_file, dataset) {
        (Some(relative), _) => tasks_from_file(&relative, &context),
        (None, Some(dataset)) => tasks_from_dataset(dataset, &context),
        (None, None) => read_tasks(&task_texts, &context),
    };
    let tasks = tasks.map_err(|found| problems.extend(found)).ok();
    match (name, tasks) {
        (Some(name), Some(tasks)) if problems.is_empty() => Ok(Suite {
            name,
            capture: context.capture,
            tasks,
            tools,
            models: (*context.models).clone(),
        }),
        _ => Err(fail(problems)),
    }
}

/// `tasks_file`: a tasks file inside the suite's folder, checked line by line.
fn tasks_from_file(relative: &str, context: &Context) -> Result<SuiteTasks, Vec<Problem>> {
    let at = |message: String| vec![("$.tasks_file".to_owned(), message)];
    let (path, _) = context.inside(relative).map_err(at)?;
    let indexed = TasksFile::index(&path, context.clone()).map_err(|found| {
        found
            .into_iter()
            .map(|(line, message)| (format!("$.tasks_file `{relative}` {line}"), message))
            .collect::<Vec<_>>()
    })?;
    Ok(SuiteTasks::streamed(indexed))
}

/// `dataset`: a dataset file inside the suite's folder, each row checked as the task it makes.
fn tasks_from_dataset(spec: DatasetSpec, context: &Context) -> Result<SuiteTasks, Vec<Problem>> {
    let relative = spec.path.clone();
    // Said once here rather than for every row.
    if spec.model.is_none() && !context.model_given() {
        return Err(vec![(
            "$.dataset".to_owned(),
            resolve::MISSING_MODEL.to_owned(),
        )]);
    }
    let at = |message: String| vec![("$.dataset.path".to_owned(), message)];
    let (path, _) = context.inside(&relative).map_err(at)?;
    let dataset = Dataset::new(spec, &path);
    let indexed = TasksFile::index_dataset(&path, context.clone(), dataset).map_err(|found| {
        found
            .into_iter()
            .map(|(line, message)| (format!("$.dataset `{relative}` {line}"), message))
            .collect::<Vec<_>>()
    })?;
    Ok(SuiteTasks::streamed(indexed))
}

/// Below this many tasks per thread, starting a thread costs more than it saves.
const MIN_TASKS_PER_THREAD: usize = 2_000;

/// The tasks of a suite's `tasks` array, read on up to one thread per core; ids must be unique.
fn read_tasks(texts: &[&RawValue], context: &Context) -> Result<SuiteTasks, Vec<Problem>> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = cores.min(texts.len() / MIN_TASKS_PER_THREAD).max(1);
    let per_thread = texts.len().div_ceil(threads).max(1);
    let read_part = |first: usize, part: &[&RawValue]| {
        part.iter()
            .enumerate()
            .map(|(i, text)| read_task(text.get(), &format!("$.tasks[{}]", first + i), context))
            .collect::<Vec<_>>()
    };
    let parts: Vec<Vec<Result<SuiteTask, Vec<Problem>>>> = if threads == 1 {
        vec![read_part(0, texts)]
    } else {
        std::thread::scope(|scope| {
            let parts: Vec<_> = texts
                .chunks(per_thread)
                .enumerate()
                .map(|(k, part)| scope.spawn(move || read_part(k * per_thread, part)))
                .collect();
            parts
                .into_iter()
                .map(|part| part.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
                .collect()
        })
    };
    let mut problems = Vec::new();
    // Each part is freed as it is moved, so the tasks are held once, not twice.
    let mut tasks = Vec::with_capacity(texts.len());
    for part in parts {
        for result in part {
            match result {
                Ok(task) => tasks.push(task),
                Err(found) => problems.extend(found),
            }
        }
    }
    let mut seen = HashSet::with_capacity(tasks.len());
    for (i, task) in tasks.iter().enumerate() {
        if !seen.insert(task.id.as_str()) {
            problems.push((
                format!("$.tasks[{i}].id"),
                format!("duplicate id {:?}", task.id.as_str()),
            ));
        }
    }
    if problems.is_empty() {
        Ok(SuiteTasks::held(tasks))
    } else {
        Err(problems)
    }
}

/// `tools`: a tools file's path, relative to the suite and inside its folder, or the same
/// object inline (its paths then resolve against the suite's folder).
fn tools_of(value: &Value, context: &Context) -> Result<ToolsFile, Vec<Problem>> {
    match value {
        Value::String(relative) => {
            let outside = || {
                vec![(
                    "$.tools".to_owned(),
                    format!("`{relative}` is not a file inside the suite's folder"),
                )]
            };
            let (path, _) = context.inside(relative).map_err(|_| outside())?;
            ToolsFile::load(&path).map_err(|err| {
                err.problems
                    .into_iter()
                    .map(|(at, message)| {
                        (
                            "$.tools".to_owned(),
                            format!("`{relative}` {at}: {message}"),
                        )
                    })
                    .collect()
            })
        }
        _ => ToolsFile::from_value(value, &context.base(), "$.tools"),
    }
}

/// An object's members in file order, each kept as its text (`tasks`, when it is an array, as
/// the text of each task); repeated keys are kept too.
struct Entries<'a>(Vec<(String, Member<'a>)>);

/// A member of the top level.
enum Member<'a> {
    /// Any member but `tasks`.
    Raw(&'a RawValue),
    /// `tasks` as an array: each task's text.
    Tasks(Vec<&'a RawValue>),
    /// `tasks` as anything else, for the schema to refuse.
    Other(Value),
}

impl<'de> serde::Deserialize<'de> for Entries<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Members;
        impl<'de> Visitor<'de> for Members {
            type Value = Entries<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entries<'de>, A::Error> {
                let mut entries = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    let member = if key == "tasks" {
                        map.next_value::<TasksMember<'de>>()?.0
                    } else {
                        Member::Raw(map.next_value()?)
                    };
                    entries.push((key, member));
                }
                Ok(Entries(entries))
            }
        }
        deserializer.deserialize_map(Members)
    }
}

/// `tasks`, read in one pass: an array's items are kept as their text.
struct TasksMember<'a>(Member<'a>);

impl<'de> serde::Deserialize<'de> for TasksMember<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Tasks;
        impl<'de> Visitor<'de> for Tasks {
            type Value = TasksMember<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some(item) = seq.next_element::<&'de RawValue>()? {
                    items.push(item);
                }
                Ok(TasksMember(Member::Tasks(items)))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                let value = Value::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(TasksMember(Member::Other(value)))
            }
            fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
                Ok(TasksMember(Member::Other(Value::Bool(v))))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
                Ok(TasksMember(Member::Other(Value::from(v))))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
                Ok(TasksMember(Member::Other(Value::from(v))))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
                Ok(TasksMember(Member::Other(Value::from(v))))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(TasksMember(Member::Other(Value::from(v))))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(TasksMember(Member::Other(Value::Null)))
            }
        }
        deserializer.deserialize_any(Tasks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_id_is_told_its_first_problem() {
        let long = "a".repeat(MAX_TASK_ID_CHARS);
        assert!(TaskId::parse(&long).is_ok());
        let too_long = TaskId::parse(&format!("{long}b")).unwrap_err();
        assert!(too_long.starts_with("is 201 characters long"), "{too_long}");
        // Not ASCII: the character is the problem, not the byte count.
        let accented = TaskId::parse(&"é".repeat(101)).unwrap_err();
        assert!(accented.contains("has the character 'é'"), "{accented}");
    }
}
