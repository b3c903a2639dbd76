//! Suites: a JSON file naming tasks, the model each runs against, and what to expect; or a tasks
//! file (`tasks.jsonl`, one task per line) for suites too large to hold. The shipped schema
//! (`schemas/suite.schema.json`) is the format's one definition: a suite is checked against it
//! first, every violation reported with its JSON path, then read into typed structs
//! (`suite/spec.rs`, unknown keys refused); only what a schema cannot say (unique ids, files
//! that stay inside the suite's folder and can be read) is checked by hand. Every problem is
//! collected before any task runs. `docs/suite-format.md` is the reference.

mod agent;
mod dataset;
mod id_hashes;
mod inline;
mod logged_entries;
mod problem;
mod read;
mod resolve;
mod schema;
mod spec;
mod task;
mod task_entries;
mod tasks;
mod tasks_array;
mod tasks_file;
mod template;

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::fmt::Write as _;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::{Mutex, PoisonError};

use serde::Deserialize;
use serde::Deserializer;
use serde::de::{MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use self::dataset::Dataset;
use self::inline::InlineTasks;
use self::read::{REPEATED_KEY, read_built_task, read_task, typed};
use self::resolve::{Context, Problem};
use self::schema::FlatItems;
use self::spec::{DatasetSpec, DefaultsSpec, SuiteSpec};
use self::tasks_array::{BatchTask, Refused, TasksWalk, TopLevel};
use self::tasks_file::{TasksFile, note};
use super::model_spec::NamedModel;
use crate::tools::ToolsFile;
use crate::trace::Capture;

pub(crate) use self::id_hashes::IdHashes;
pub(crate) use self::logged_entries::{EntryLog, LoggedEntries};
pub use self::task::{DEFAULT_MAX_STEPS, Expectations, ModelName, SuiteTask, TaskId, TaskModel};
pub use self::task_entries::{IdRef, TaskEntries, TaskEntry};
pub use self::tasks::{Selected, SuiteTasks, TaskMaker, TaskSource};

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

/// How a suite is loaded: what the evaluation gives its tasks, and which tasks it holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// The evaluation gives every task its model (`eval --model`): tasks may then have none of
    /// their own.
    pub models_given: bool,
    /// What becomes of a suite's inline tasks once checked.
    pub holding: Holding,
}

/// What becomes of a suite's inline tasks (its `tasks` array) once each is checked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Holding {
    /// Every task is held, ready to run: for an evaluation that runs them all.
    #[default]
    All,
    /// No task is held: each is read again from the suite's text when it runs, so an
    /// evaluation of a few tasks (`--only`, `--limit`, a shard) holds only what it runs. A task
    /// that runs costs a second read.
    AsTheyRun,
}

/// Loads a suite file, or a tasks file given directly (`.jsonl`: its file name, without the
/// extension, is the suite's name); relative paths resolve against its folder.
pub fn load_suite(path: &Path) -> Result<Suite, SuiteErrors> {
    load_suite_with_text(path).map(|(suite, _)| suite)
}

/// [`load_suite`], and the file's text: a caller that holds the suite until the process ends can
/// hold the text too rather than pay for freeing it (a few megabytes of pages for a large suite).
/// A tasks file's text is never read whole: it comes back empty.
pub fn load_suite_with_text(path: &Path) -> Result<(Suite, Arc<String>), SuiteErrors> {
    load_suite_with_text_for(path, LoadOptions::default())
}

/// [`load_suite_with_text`] with `options`.
pub fn load_suite_with_text_for(
    path: &Path,
    options: LoadOptions,
) -> Result<(Suite, Arc<String>), SuiteErrors> {
    let models_given = options.models_given;
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
        return Ok((suite, Arc::default()));
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
    let text = Arc::new(text);
    match load_suite_from_str_for(&text, base, options) {
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
    load_suite_from_str_for(&Arc::new(text.to_owned()), base_dir, LoadOptions::default())
}

/// [`load_suite_from_str`] with `options`; a suite whose tasks are not held keeps `text`.
fn load_suite_from_str_for(
    text: &Arc<String>,
    base_dir: &Path,
    options: LoadOptions,
) -> Result<Suite, SuiteErrors> {
    // The usual shape is read in one pass; what that pass refuses is read the way that says
    // what is wrong (or that reads members after `tasks` before the tasks).
    if let Some(top) = TopLevel::read(text) {
        let mut members: Vec<(String, Member<'_>)> = top
            .head
            .into_iter()
            .map(|(key, raw)| (key, Member::Raw(raw)))
            .collect();
        members.push(("tasks".to_owned(), Member::Walked(top.tasks)));
        if let Ok(loaded) = load_members(text, members, base_dir, options) {
            return loaded;
        }
    }
    let (fail, invalid) = (unnamed, invalid_json);
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
    // Nothing is walked: every task's text is split out already.
    load_members(text, top.0, base_dir, options).unwrap_or_else(|Refused| {
        Err(fail(vec![(
            "$".to_owned(),
            "the suite read one way as a whole and another piece by piece".to_owned(),
        )]))
    })
}

/// `problems` of a suite read from text (the caller names its file).
fn unnamed(problems: Vec<Problem>) -> SuiteErrors {
    SuiteErrors {
        file: "<suite>".to_owned(),
        problems,
    }
}

/// A suite's text that is not JSON, at the line and column `err` names.
fn invalid_json(err: serde_json::Error) -> SuiteErrors {
    unnamed(vec![(
        format!("$ (line {}, column {})", err.line(), err.column()),
        format!(
            "invalid JSON: {}",
            crate::trace::describe_json_error_plain(&err)
        ),
    )])
}

/// The suite of the top level's `members`; `Err` when its tasks are walked and the walk was
/// refused (nothing is kept then: the suite must be read again the other way).
fn load_members<'t>(
    text: &'t Arc<String>,
    members: Vec<(String, Member<'t>)>,
    base_dir: &Path,
    options: LoadOptions,
) -> Result<Result<Suite, SuiteErrors>, Refused> {
    let models_given = options.models_given;
    let (fail, invalid) = (unnamed, invalid_json);
    let mut problems: Vec<Problem> = Vec::new();
    let mut head = serde_json::Map::new();
    let mut task_texts = TaskTexts::Split(Vec::new());
    let mut seen = HashSet::new();
    for (key, member) in members {
        if !seen.insert(key.clone()) {
            problems.push((format!("$.{key}"), REPEATED_KEY.to_owned()));
        }
        let raw = match member {
            Member::Tasks(list) => {
                // Each task is read on its own; the schema sees how many there are.
                let placeholder = list.first().map(|_| Value::Null);
                head.insert(key, Value::Array(placeholder.into_iter().collect()));
                task_texts = TaskTexts::Split(list);
                continue;
            }
            Member::Walked(walk) => {
                let placeholder = (!walk.is_empty()).then_some(Value::Null);
                head.insert(key, Value::Array(placeholder.into_iter().collect()));
                task_texts = TaskTexts::Walked(walk);
                continue;
            }
            Member::Other(value) => {
                head.insert(key, value);
                continue;
            }
            Member::Raw(raw) => raw,
        };
        let (value, repeated) =
            match super::strict_json::parse_noting_repeats(raw.get(), &format!("$.{key}")) {
                Ok(read) => read,
                Err(err) => return Ok(Err(invalid(err))),
            };
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
    let tasks = match (tasks_file, dataset, task_texts) {
        (Some(relative), _, _) => tasks_from_file(&relative, &context),
        (None, Some(dataset), _) => tasks_from_dataset(dataset, &context),
        (None, None, TaskTexts::Split(texts)) => {
            read_tasks(text, &texts, &context, options.holding)
        }
        (None, None, TaskTexts::Walked(walk)) => walk_tasks(text, walk, &context, options.holding)?,
    };
    let tasks = tasks.map_err(|found| problems.extend(found)).ok();
    Ok(match (name, tasks) {
        (Some(name), Some(tasks)) if problems.is_empty() => Ok(Suite {
            name,
            capture: context.capture,
            tasks,
            tools,
            models: (*context.models).clone(),
        }),
        _ => Err(fail(problems)),
    })
}

/// A suite's `tasks` array: each task's text split out, or a walk that reads them in turn.
enum TaskTexts<'t> {
    Split(Vec<&'t RawValue>),
    Walked(TasksWalk<'t>),
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
/// Held, or (`Holding::AsTheyRun`) noted and dropped, to be read again from `text` as they run.
fn read_tasks(
    text: &Arc<String>,
    texts: &[&RawValue],
    context: &Context,
    holding: Holding,
) -> Result<SuiteTasks, Vec<Problem>> {
    let hold = holding == Holding::All;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = cores.min(texts.len() / MIN_TASKS_PER_THREAD).max(1);
    let per_thread = texts.len().div_ceil(threads).max(1);
    let read_part = |first: usize, part: &[&RawValue]| {
        let mut read = Part::default();
        for (i, task_text) in part.iter().enumerate() {
            let root = format!("$.tasks[{}]", first + i);
            match read_task(task_text.get(), &root, context) {
                Ok(task) => read.add(task, hold),
                Err(found) => read.problems.extend(found),
            }
        }
        read
    };
    let parts: Vec<Part> = if threads == 1 {
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
    let mut whole = Part::default();
    for part in parts {
        whole.append(part);
    }
    // Where each task's text is in the suite's: its place in `text`, which it borrows from.
    let spans = || {
        texts
            .iter()
            .map(|task| {
                let start = task.get().as_ptr() as usize - text.as_ptr() as usize;
                start..start + task.get().len()
            })
            .collect()
    };
    finish_tasks(text, whole, spans, context, hold)
}

/// Tasks per batch of a walk over the `tasks` array: enough that the walk's lock is taken
/// rarely, few enough that the threads share the work evenly.
const BATCH: usize = 256;

/// Below this many bytes of suite per thread, starting a thread costs more than it saves.
const MIN_BYTES_PER_THREAD: usize = 256 * 1024;

/// The tasks of a suite's `tasks` array walked in batches of [`BATCH`] on up to one thread per
/// core: each thread takes the next batch from the walk (the only part done in turn), then
/// checks its tasks. `Err` when the walk was refused.
fn walk_tasks(
    text: &Arc<String>,
    walk: TasksWalk<'_>,
    context: &Context,
    holding: Holding,
) -> Result<Result<SuiteTasks, Vec<Problem>>, Refused> {
    let hold = holding == Holding::All;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = cores.min(text.len() / MIN_BYTES_PER_THREAD).max(1);
    let suite_text = walk.text();
    let walk = Mutex::new(walk);
    let joined = Mutex::new(InOrder::default());
    let read = || -> Result<(), Refused> {
        let mut items = FlatItems::default();
        let mut batch: Vec<BatchTask> = Vec::new();
        let mut root = String::new();
        loop {
            let next = walk
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .next_batch(&mut items, &mut batch, BATCH);
            let Some(first) = next? else {
                return Ok(());
            };
            let mut part = Part::default();
            for (k, task) in batch.iter().enumerate() {
                root.clear();
                let _ = write!(root, "$.tasks[{}]", first + k);
                let document = task.root.map(|at| items.node(at));
                let task_text = suite_text.get(task.span.clone()).unwrap_or_default();
                match read_built_task(task_text, document, &root, context) {
                    Ok(task) => part.add(task, hold),
                    Err(found) => part.problems.extend(found),
                }
            }
            if !hold {
                part.spans = batch.iter().map(|task| task.span.clone()).collect();
            }
            joined
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .deliver(first, batch.len(), part);
        }
    };
    if threads == 1 {
        read()?;
    } else {
        std::thread::scope(|scope| {
            let others: Vec<_> = (1..threads).map(|_| scope.spawn(read)).collect();
            let mine = read();
            others
                .into_iter()
                .map(|other| {
                    other
                        .join()
                        .unwrap_or_else(|e| std::panic::resume_unwind(e))
                })
                .fold(mine, Result::and)
        })?;
    }
    let mut whole = joined
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner)
        .whole;
    let spans = std::mem::take(&mut whole.spans);
    Ok(finish_tasks(text, whole, || spans, context, hold))
}

/// Batches of tasks joined in the walk's order as they are done, whichever thread did each:
/// one that is done early waits here, so the tasks are never held twice.
#[derive(Default)]
struct InOrder {
    whole: Part,
    /// The first task of the batch to join next.
    next: usize,
    /// Batches done before the one to join next, by their first task: how many tasks each
    /// read, and what it read.
    waiting: BTreeMap<usize, (usize, Part)>,
}

impl InOrder {
    fn deliver(&mut self, first: usize, len: usize, part: Part) {
        self.waiting.insert(first, (len, part));
        while let Some((len, part)) = self.waiting.remove(&self.next) {
            self.whole.append(part);
            self.next += len;
        }
    }
}

/// Every task of a suite's `tasks` array once read: refused when an id repeats, else held or
/// (not `hold`) read again from `text` at `spans` as each runs.
fn finish_tasks(
    text: &Arc<String>,
    whole: Part,
    spans: impl FnOnce() -> Vec<Range<usize>>,
    context: &Context,
    hold: bool,
) -> Result<SuiteTasks, Vec<Problem>> {
    let mut problems = whole.problems;
    let mut seen = HashSet::with_capacity(whole.entries.len());
    for (i, entry) in whole.entries.iter().enumerate() {
        if !seen.insert(entry.id.as_str()) {
            problems.push((
                format!("$.tasks[{i}].id"),
                format!("duplicate id {:?}", entry.id.as_str()),
            ));
        }
    }
    drop(seen);
    if !problems.is_empty() {
        return Err(problems);
    }
    if hold {
        return Ok(SuiteTasks::held(whole.tasks));
    }
    let inline = InlineTasks::new(Arc::clone(text), spans(), context.clone());
    Ok(SuiteTasks::inline(
        whole.entries,
        inline,
        whole.key_vars,
        whole.read_files,
    ))
}

/// What one thread read of a suite's tasks, in order.
#[derive(Default)]
struct Part {
    /// The tasks, when they are held.
    tasks: Vec<SuiteTask>,
    /// Every task's id and model, held or not.
    entries: TaskEntries,
    key_vars: Vec<String>,
    read_files: Vec<PathBuf>,
    problems: Vec<Problem>,
    /// Where each task's text is in the suite's, when a walk read them and they are not held.
    spans: Vec<Range<usize>>,
}

impl Part {
    fn add(&mut self, task: SuiteTask, hold: bool) {
        note(&task, &mut self.key_vars, &mut self.read_files);
        self.entries.push_task(&task);
        if hold {
            self.tasks.push(task);
        }
    }

    /// Adds the next part's tasks after these.
    fn append(&mut self, next: Part) {
        if self.entries.is_empty() {
            let mut problems = std::mem::take(&mut self.problems);
            problems.extend(next.problems);
            *self = Part { problems, ..next };
            return;
        }
        self.tasks.extend(next.tasks);
        for entry in next.entries.iter() {
            self.entries
                .push(entry.id.as_str(), entry.model_kind, entry.model_name);
        }
        for var in next.key_vars {
            if !self.key_vars.contains(&var) {
                self.key_vars.push(var);
            }
        }
        self.read_files.extend(next.read_files);
        self.problems.extend(next.problems);
        self.spans.extend(next.spans);
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
            // Opening a named pipe would wait for a writer forever: a suite names regular files.
            let kind = std::fs::metadata(&path).ok().map(|meta| meta.file_type());
            if let Some(what) = kind.and_then(crate::output::special_kind) {
                let message = format!("`{relative}` is {what}, not a regular file");
                return Err(vec![("$.tools".to_owned(), message)]);
            }
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
    /// `tasks` as an array, to be walked task by task.
    Walked(TasksWalk<'a>),
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
    use super::task::MAX_TASK_ID_CHARS;
    use super::*;

    #[test]
    fn tasks_read_again_as_they_run_are_the_tasks_held() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_traces/suite.json");
        let load = |holding| {
            let options = LoadOptions {
                models_given: false,
                holding,
            };
            load_suite_with_text_for(&path, options).unwrap_or_else(|e| panic!("{e}"))
        };
        let (held, _) = load(Holding::All);
        let (inline, text) = load(Holding::AsTheyRun);
        let held_tasks = held.tasks.held_tasks().expect("held");
        assert!(inline.tasks.held_tasks().is_none());
        assert!(held_tasks.len() > 5, "a suite of several tasks");
        assert_eq!(inline.tasks.entries(), held.tasks.entries());
        assert_eq!(inline.tasks.key_vars(), held.tasks.key_vars());
        assert_eq!(inline.tasks.read_files(), held.tasks.read_files());
        for (i, task) in held_tasks.iter().enumerate() {
            let again = inline.tasks.get(i).unwrap();
            assert_eq!(format!("{again:?}"), format!("{task:?}"), "task {i}");
        }
        assert!(inline.tasks.get(held_tasks.len()).is_err());
        // The suite's text is what the tasks are read from, and what the caller is given.
        assert_eq!(*text, std::fs::read_to_string(&path).unwrap());
    }

    #[test]
    fn a_suite_walked_in_one_pass_loads_as_one_read_whole() {
        let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_traces");
        let text = std::fs::read_to_string(base.join("suite.json")).unwrap();
        let value: Value = serde_json::from_str(&text).unwrap();
        let tasks = value["tasks"].as_array().unwrap();
        // Walked: the tasks last, several batches of them.
        let many: Vec<Value> = (0..3 * BATCH)
            .map(|i| {
                let mut task = tasks[i % tasks.len()].clone();
                task["id"] = Value::from(format!("t{i}"));
                task
            })
            .collect();
        let mut walked = value.clone();
        walked["tasks"] = Value::Array(many.clone());
        let walked = serde_json::to_string_pretty(&walked).unwrap();
        assert!(TopLevel::read(&walked).is_some());
        // Read whole: `tasks` first, which the walk leaves to the other reading.
        let mut rest = value.clone();
        rest.as_object_mut().unwrap().remove("tasks");
        let rest = serde_json::to_string(&rest).unwrap();
        let many = serde_json::to_string(&many).unwrap();
        let whole = format!("{{\"tasks\":{many},{}", &rest[1..]);
        assert!(whole.starts_with(r#"{"tasks""#), "{whole}");
        let mut walk = TopLevel::read(&whole).unwrap().tasks;
        let (mut items, mut batch) = (FlatItems::default(), Vec::new());
        let refused = loop {
            match walk.next_batch(&mut items, &mut batch, BATCH) {
                Ok(Some(_)) => {}
                Ok(None) => break false,
                Err(Refused) => break true,
            }
        };
        assert!(refused, "a member after `tasks` is refused");
        for holding in [Holding::All, Holding::AsTheyRun] {
            let load = |text: &str| {
                let options = LoadOptions {
                    models_given: false,
                    holding,
                };
                load_suite_from_str_for(&Arc::new(text.to_owned()), &base, options)
                    .unwrap_or_else(|e| panic!("{e}"))
            };
            let (walked, whole) = (load(&walked), load(&whole));
            assert_eq!(walked.tasks.entries(), whole.tasks.entries());
            assert_eq!(walked.tasks.len(), 3 * BATCH);
            for i in 0..walked.tasks.len() {
                let (a, b) = (walked.tasks.get(i).unwrap(), whole.tasks.get(i).unwrap());
                assert_eq!(format!("{a:?}"), format!("{b:?}"), "task {i}");
            }
        }
        // A task that is not JSON is told as the whole text's problem, as it was.
        let broken = walked.replacen("\"t5\"", "\"t5\" \"", 1);
        let err = load_suite_from_str(&broken, &base).unwrap_err();
        assert_eq!(err.problems.len(), 1, "{err}");
        assert!(err.problems[0].0.starts_with("$ (line "), "{err}");
        assert!(err.problems[0].1.starts_with("invalid JSON"), "{err}");
    }

    #[test]
    fn a_task_whose_recording_went_away_is_not_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let sample =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_traces/finished.full.jsonl");
        std::fs::copy(sample, dir.path().join("run.jsonl")).unwrap();
        let path = dir.path().join("suite.json");
        std::fs::write(
            &path,
            r#"{"name": "r", "tasks": [{"id": "again", "model": {"replay": "run.jsonl"}}]}"#,
        )
        .unwrap();
        let options = LoadOptions {
            models_given: false,
            holding: Holding::AsTheyRun,
        };
        let (suite, _) = load_suite_with_text_for(&path, options).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(suite.tasks.get(0).unwrap().id.as_str(), "again");
        std::fs::remove_file(dir.path().join("run.jsonl")).unwrap();
        let err = suite.tasks.get(0).unwrap_err();
        assert!(
            err.starts_with("$.tasks[0] no longer reads as it did when eval checked it: $.tasks[0].model.replay: cannot read \"run.jsonl\""),
            "{err}"
        );
    }

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
