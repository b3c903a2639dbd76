//! Suites: a JSON file naming tasks, the model each runs against, and what to expect. Loading is
//! strict: unknown keys are errors (typos must not pass silently), and every problem is collected
//! with its JSON path before any task runs. `docs/suite-format.md` is the reference.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use super::model_spec::{NamedModel, Prices};
use super::scorers::{CheckCache, Checks, Scorer, ScorerSpec};
use super::scripted_action::ScriptedAction;
use super::suite_fast::{InParts, load_fast, load_fast_in_parts};
use crate::agent::Limits;
use crate::gate::{CommandGate, CommandGateConfig};
use crate::model::live::{Api, LiveConfig, api_key_from_env};
use crate::model::{ReplayModel, action_from_value, json_type_name as type_name};
use crate::run::ExitReason;
use crate::tools::ToolsFile;
use crate::trace::{Capture, ReadOptions, read_trace};

/// The step budget when neither the task, the suite defaults nor a recording give one.
pub const DEFAULT_MAX_STEPS: u32 = 5;

/// A loaded, checked suite.
#[derive(Clone, Debug)]
pub struct Suite {
    /// The suite's name (also the default output folder's name).
    pub name: String,
    /// Trace capture for every task.
    pub capture: Capture,
    /// The tasks, in file order.
    pub tasks: Vec<SuiteTask>,
    /// The suite's tools file (`tools`), loaded and checked.
    pub tools: Option<ToolsFile>,
    /// The suite's `models` section, by name.
    pub models: BTreeMap<String, NamedModel>,
}

impl Suite {
    /// The variables the suite's live models read their keys from (`api_key_env`), each once:
    /// no tool, server or gate may be given them.
    pub fn key_vars(&self) -> Vec<String> {
        let mut vars: Vec<String> = Vec::new();
        for task in &self.tasks {
            if let TaskModel::Chat {
                api_key_env: Some(var),
                ..
            } = &task.model
                && !vars.contains(var)
            {
                vars.push(var.clone());
            }
        }
        for model in self.models.values() {
            if let Some(var) = &model.api_key_env
                && !vars.contains(var)
            {
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
    /// No model of its own: `eval --model` gives one, else loading the suite fails.
    Unset,
    /// A live model server.
    Chat {
        /// Everything but the key, which is read when the task runs.
        config: Box<LiveConfig>,
        /// The environment variable holding the key.
        api_key_env: Option<String>,
        /// What its tokens cost, when the suite says.
        prices: Option<Prices>,
    },
}

impl TaskModel {
    /// A live model named outside the task.
    pub fn named(model: &NamedModel) -> TaskModel {
        TaskModel::Chat {
            config: Box::new(model.config.clone()),
            api_key_env: model.api_key_env.clone(),
            prices: model.prices,
        }
    }
}

impl TaskModel {
    /// `responses`, `actions` or `replay`.
    pub fn kind(&self) -> &'static str {
        match self {
            TaskModel::Responses(_) => "responses",
            TaskModel::Actions(_) => "actions",
            TaskModel::Replay { .. } => "replay",
            TaskModel::Chat { .. } => "chat",
            TaskModel::Unset => "none",
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
    pub checks: Checks,
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

    /// A task's expectations over the suite's `defaults.expect`: each key the task gives wins.
    fn over(self, defaults: &Expectations) -> Expectations {
        Expectations {
            exit_reason: self.exit_reason.or(defaults.exit_reason),
            answer: self.answer.or_else(|| defaults.answer.clone()),
            answer_contains: self
                .answer_contains
                .or_else(|| defaults.answer_contains.clone()),
            max_steps_used: self.max_steps_used.or(defaults.max_steps_used),
            max_gate_rejections: self.max_gate_rejections.or(defaults.max_gate_rejections),
            checks: self.checks.over(&defaults.checks),
            scorers: Vec::new(),
        }
    }
}

/// Every problem found in a suite, each with its place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SuiteErrors {
    /// The suite file as the user named it.
    pub file: String,
    /// `(JSON path, what is wrong)` in file order.
    pub problems: Vec<(String, String)>,
}

impl fmt::Display for SuiteErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        crate::text::write_problems(f, "suite", &self.file, &self.problems)
    }
}

impl std::error::Error for SuiteErrors {}

/// Loads a suite file; relative replay paths are resolved against its folder.
pub fn load_suite(path: &Path) -> Result<Suite, SuiteErrors> {
    load_suite_with_text(path).map(|(suite, _)| suite)
}

/// [`load_suite`], and the file's text: a caller that holds the suite until the process ends can
/// hold the text too rather than pay for freeing it (a few megabytes of pages for a large suite).
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
    let text = std::fs::read(path).map_err(|err| SuiteErrors {
        file: file.clone(),
        problems: vec![("$".to_owned(), format!("failed to read the file: {err}"))],
    })?;
    let text = String::from_utf8(text).map_err(|err| SuiteErrors {
        file: file.clone(),
        problems: vec![(
            "$".to_owned(),
            format!(
                "invalid UTF-8 at byte {}",
                err.utf8_error().valid_up_to() + 1
            ),
        )],
    })?;
    let base = path.parent().unwrap_or(Path::new("."));
    let base = if base.as_os_str().is_empty() {
        Path::new(".")
    } else {
        base
    };
    match load_text(&text, base, load_parts(&text), models_given) {
        Ok(suite) => Ok((suite, text)),
        Err(mut errors) => {
            errors.file = file;
            Err(errors)
        }
    }
}

/// Loads a suite from text; `base_dir` is the folder replay paths are relative to. A large suite's
/// tasks are parsed on as many threads as there are cores.
pub fn load_suite_from_str(text: &str, base_dir: &Path) -> Result<Suite, SuiteErrors> {
    load_suite_from_str_in_parts(text, base_dir, load_parts(text))
}

/// How many threads parse a suite of this text.
fn load_parts(text: &str) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    cores.min(text.len() / MIN_PART_BYTES).min(MAX_LOAD_THREADS)
}

/// Below this many bytes of suite per thread, starting the thread costs more than it saves.
const MIN_PART_BYTES: usize = 512 * 1024;
const MAX_LOAD_THREADS: usize = 8;

/// [`load_suite_from_str`] with the tasks parsed on `parts` threads, whatever the suite's size,
/// where the text can be cut so: the same result, which the tests hold it to.
pub fn load_suite_from_str_in_parts(
    text: &str,
    base_dir: &Path,
    parts: usize,
) -> Result<Suite, SuiteErrors> {
    load_text(text, base_dir, parts, false)
}

fn load_text(
    text: &str,
    base_dir: &Path,
    parts: usize,
    models_given: bool,
) -> Result<Suite, SuiteErrors> {
    // Scripted arguments read numbers as Python does: `-0` is the integer 0.
    let text = &crate::tools::integer_negative_zero_as_zero(text);
    let fast = match parts {
        0 | 1 => load_fast(text),
        _ => match load_fast_in_parts(text, parts) {
            InParts::Loaded(suite) => Some(*suite),
            InParts::NotFast => None,
            InParts::Uncut => load_fast(text),
        },
    };
    match fast {
        Some(suite) => Ok(suite),
        None => check_text(text, base_dir, models_given),
    }
}

/// Loads a suite with the full checker only, never the typed fast path: the same result as
/// [`load_suite_from_str`], slower; every problem is reported with its JSON path.
pub fn check_suite_from_str(text: &str, base_dir: &Path) -> Result<Suite, SuiteErrors> {
    check_text(text, base_dir, false)
}

fn check_text(text: &str, base_dir: &Path, models_given: bool) -> Result<Suite, SuiteErrors> {
    let mut checker = Checker {
        models_given,
        check_cache: CheckCache::default(),
        problems: Vec::new(),
        base_dir,
        canonical_base: base_dir.canonicalize().ok(),
        models: BTreeMap::new(),
    };
    let text = &crate::tools::integer_negative_zero_as_zero(text);
    let value: Value = match super::strict_json::parse_noting_repeats(text) {
        Ok((value, repeated)) => {
            for path in repeated {
                checker.problem(
                    &path,
                    "key given twice in one object (which value is meant?)",
                );
            }
            value
        }
        Err(err) => {
            return Err(SuiteErrors {
                file: "<suite>".to_owned(),
                problems: vec![(
                    format!("$ (line {}, column {})", err.line(), err.column()),
                    format!(
                        "invalid JSON: {}",
                        crate::trace::describe_json_error_plain(&err)
                    ),
                )],
            });
        }
    };
    let suite = checker.suite(&value);
    match suite {
        Some(suite) if checker.problems.is_empty() => Ok(suite),
        _ => Err(SuiteErrors {
            file: "<suite>".to_owned(),
            problems: checker.problems,
        }),
    }
}

struct Checker<'a> {
    problems: Vec<(String, String)>,
    base_dir: &'a Path,
    canonical_base: Option<PathBuf>,
    /// The suite's `models` section, read before anything names a model.
    models: BTreeMap<String, NamedModel>,
    /// Whether the evaluation gives every task its model (`eval --model`).
    models_given: bool,
    /// Answer checks compiled so far, shared by the tasks.
    check_cache: CheckCache,
}

/// Defaults given at the top of a suite.
#[derive(Default)]
struct Defaults {
    max_steps: Option<u32>,
    capture: Capture,
    finish_gate: Option<CommandGate>,
    limits: Limits,
    /// `defaults.expect`, under every task's own.
    expect: Expectations,
    /// `defaults.scorers`, for tasks without their own.
    scorers: Vec<Arc<dyn Scorer>>,
    /// `defaults.model`, for tasks without their own.
    model: Option<NamedModel>,
}

impl Checker<'_> {
    fn problem(&mut self, path: &str, message: impl Into<String>) {
        self.problems.push((path.to_owned(), message.into()));
    }

    fn object<'v>(&mut self, value: &'v Value, path: &str) -> Option<&'v Map<String, Value>> {
        match value {
            Value::Object(map) => Some(map),
            other => {
                self.problem(
                    path,
                    format!("expected an object, got {}", type_name(other)),
                );
                None
            }
        }
    }

    fn only_keys(&mut self, map: &Map<String, Value>, allowed: &[&str], path: &str) {
        for key in map.keys() {
            if !allowed.contains(&key.as_str()) {
                self.problem(
                    &format!("{path}.{key}"),
                    format!("unknown key (expected one of: {})", allowed.join(", ")),
                );
            }
        }
    }

    fn string(&mut self, value: &Value, path: &str) -> Option<String> {
        match value {
            Value::String(s) => Some(s.clone()),
            other => {
                self.problem(path, format!("expected a string, got {}", type_name(other)));
                None
            }
        }
    }

    fn steps(&mut self, value: &Value, path: &str) -> Option<u32> {
        match value.as_u64() {
            Some(0) => {
                self.problem(path, "must be at least 1");
                None
            }
            Some(n) if n <= u64::from(u32::MAX) => Some(n as u32),
            _ => {
                self.problem(
                    path,
                    format!(
                        "expected a whole number from 1 to {}, got {value}",
                        u32::MAX
                    ),
                );
                None
            }
        }
    }

    fn suite(&mut self, value: &Value) -> Option<Suite> {
        let map = self.object(value, "$")?;
        self.only_keys(
            map,
            &["$schema", "name", "defaults", "tasks", "tools", "models"],
            "$",
        );
        if let Some(v) = map.get("models") {
            match super::model_spec::models_section(v, "$.models") {
                Ok(models) => self.models = models,
                Err(problems) => self.problems.extend(problems),
            }
        }
        if let Some(v) = map.get("$schema") {
            self.string(v, "$.$schema");
        }
        let tools = map.get("tools").and_then(|v| self.tools(v));
        let name = match map.get("name") {
            Some(v) => self.string(v, "$.name").and_then(|name| {
                if name.trim().is_empty() {
                    self.problem("$.name", "must not be empty");
                    None
                } else {
                    Some(name)
                }
            }),
            None => {
                self.problem("$", "missing key `name`");
                None
            }
        };
        let defaults = match map.get("defaults") {
            Some(v) => self.defaults(v),
            None => Defaults::default(),
        };
        let tasks = match map.get("tasks") {
            Some(Value::Array(tasks)) => {
                if tasks.is_empty() {
                    self.problem("$.tasks", "a suite needs at least one task");
                }
                let mut seen = HashSet::new();
                let mut out = Vec::new();
                for (i, task) in tasks.iter().enumerate() {
                    let path = format!("$.tasks[{i}]");
                    if let Some(task) = self.task(task, &path, &defaults) {
                        if !seen.insert(task.id.clone()) {
                            self.problem(
                                &format!("{path}.id"),
                                format!("duplicate id {:?}", task.id.as_str()),
                            );
                        }
                        out.push(task);
                    }
                }
                out
            }
            Some(other) => {
                self.problem(
                    "$.tasks",
                    format!("expected an array, got {}", type_name(other)),
                );
                Vec::new()
            }
            None => {
                self.problem("$", "missing key `tasks`");
                Vec::new()
            }
        };
        Some(Suite {
            name: name?,
            capture: defaults.capture,
            tasks,
            tools,
            models: std::mem::take(&mut self.models),
        })
    }

    /// `tools`: a tools file's path, relative to the suite and inside its folder, or the same
    /// object inline (its paths then resolve against the suite's folder).
    fn tools(&mut self, value: &Value) -> Option<ToolsFile> {
        let base = self
            .canonical_base
            .clone()
            .unwrap_or_else(|| self.base_dir.to_path_buf());
        match value {
            Value::String(relative) => {
                let path = base.join(relative);
                let inside = path
                    .canonicalize()
                    .is_ok_and(|resolved| resolved.starts_with(&base));
                if Path::new(relative).is_absolute() || !inside {
                    self.problem(
                        "$.tools",
                        format!("`{relative}` is not a file inside the suite's folder"),
                    );
                    return None;
                }
                match ToolsFile::load(&path) {
                    Ok(tools) => Some(tools),
                    Err(err) => {
                        for (at, message) in err.problems {
                            self.problem("$.tools", format!("`{relative}` {at}: {message}"));
                        }
                        None
                    }
                }
            }
            Value::Object(_) => match ToolsFile::from_value(value, &base, "$.tools") {
                Ok(tools) => Some(tools),
                Err(problems) => {
                    self.problems.extend(problems);
                    None
                }
            },
            other => {
                self.problem(
                    "$.tools",
                    format!(
                        "expected a tools file's path or a tools object, got {}",
                        type_name(other)
                    ),
                );
                None
            }
        }
    }

    fn defaults(&mut self, value: &Value) -> Defaults {
        let mut defaults = Defaults::default();
        let Some(map) = self.object(value, "$.defaults") else {
            return defaults;
        };
        self.only_keys(
            map,
            &[
                "max_steps",
                "capture",
                "finish_gate",
                "max_total_tokens",
                "max_seconds",
                "expect",
                "scorers",
                "model",
            ],
            "$.defaults",
        );
        if let Some(v) = map.get("expect") {
            defaults.expect = self.expect(v, "$.defaults.expect");
        }
        if let Some(v) = map.get("scorers") {
            defaults.scorers = self.scorers(v, "$.defaults.scorers");
        }
        if let Some(v) = map.get("model") {
            defaults.model = self.named_model(v, "$.defaults.model");
        }
        if let Some(v) = map.get("finish_gate") {
            defaults.finish_gate = self.finish_gate(v, "$.defaults.finish_gate");
        }
        defaults.limits = self.limits(map, "$.defaults", Limits::default());
        if let Some(v) = map.get("max_steps") {
            defaults.max_steps = self.steps(v, "$.defaults.max_steps");
        }
        if let Some(v) = map.get("capture") {
            match v.as_str() {
                Some("summary") => defaults.capture = Capture::Summary,
                Some("full") => defaults.capture = Capture::Full,
                _ => self.problem(
                    "$.defaults.capture",
                    format!("expected \"summary\" or \"full\", got {v}"),
                ),
            }
        }
        defaults
    }

    fn task(&mut self, value: &Value, path: &str, defaults: &Defaults) -> Option<SuiteTask> {
        let map = self.object(value, path)?;
        self.only_keys(
            map,
            &[
                "id",
                "prompt",
                "max_steps",
                "model",
                "expect",
                "finish_gate",
                "max_total_tokens",
                "max_seconds",
                "scorers",
            ],
            path,
        );
        let finish_gate = match map.get("finish_gate") {
            Some(v) => self.finish_gate(v, &format!("{path}.finish_gate")),
            None => defaults.finish_gate.clone(),
        };
        let limits = self.limits(map, path, defaults.limits);
        let id = match map.get("id") {
            Some(v) => self.string(v, &format!("{path}.id")).and_then(|id| {
                TaskId::parse(&id)
                    .map_err(|message| self.problem(&format!("{path}.id"), message))
                    .ok()
            }),
            None => {
                self.problem(path, "missing key `id`");
                None
            }
        };
        let prompt = map
            .get("prompt")
            .and_then(|v| self.string(v, &format!("{path}.prompt")));
        let max_steps = map
            .get("max_steps")
            .and_then(|v| self.steps(v, &format!("{path}.max_steps")));
        let (model, model_name) = match (map.get("model"), &defaults.model) {
            (Some(v), _) => (self.model(v, &format!("{path}.model")), None),
            (None, Some(named)) => (
                Some(TaskModel::named(named)),
                Some(ModelName {
                    given: named.name.clone(),
                    slug: None,
                }),
            ),
            (None, None) if self.models_given => (Some(TaskModel::Unset), None),
            (None, None) => {
                self.problem(
                    path,
                    "missing key `model` (give the task a `model`, the suite a `defaults.model`, or eval --model SPEC)",
                );
                (None, None)
            }
        };
        let expect_path = format!("{path}.expect");
        let mut expect = match map.get("expect") {
            Some(v) => self.expect(v, &expect_path),
            None => Expectations::default(),
        }
        .over(&defaults.expect);
        let given_scorers = map
            .get("scorers")
            .map(|v| self.scorers(v, &format!("{path}.scorers")));
        match expect.checks.scorers(&mut self.check_cache) {
            Ok(checks) => expect.scorers = checks,
            Err(problems) => {
                for (key, message) in problems {
                    self.problem(&format!("{expect_path}.{key}"), message);
                }
            }
        }
        expect
            .scorers
            .extend(given_scorers.unwrap_or_else(|| defaults.scorers.clone()));
        let model = model?;
        let (prompt, recorded_steps) = match &model {
            TaskModel::Replay { run, path } => {
                let replay = run.model(path).ok();
                let recorded_prompt = replay.as_ref().map(|m| m.task().prompt.clone());
                (
                    prompt.or(recorded_prompt),
                    replay.and_then(|m| m.max_steps()),
                )
            }
            _ => {
                if prompt.is_none() && !map.contains_key("prompt") {
                    self.problem(path, "missing key `prompt` (only replay tasks may omit it)");
                }
                (prompt, None)
            }
        };
        Some(SuiteTask {
            id: id?,
            prompt: prompt?,
            // A replay keeps its recorded budget unless the task itself sets one.
            max_steps: max_steps
                .or(recorded_steps)
                .or(defaults.max_steps)
                .unwrap_or(DEFAULT_MAX_STEPS),
            model,
            expect,
            finish_gate,
            limits,
            model_name,
        })
    }

    /// `scorers`: a list of `{"kind": "command" | "judge", ...}`, each built (programs resolved
    /// against the suite's folder, judges' models against `models`).
    fn scorers(&mut self, value: &Value, path: &str) -> Vec<Arc<dyn Scorer>> {
        let Some(list) = self.array(value, path) else {
            return Vec::new();
        };
        let base = self
            .canonical_base
            .clone()
            .unwrap_or_else(|| self.base_dir.to_path_buf());
        let mut scorers = Vec::new();
        let mut names = HashSet::new();
        for (i, item) in list.iter().enumerate() {
            let at = format!("{path}[{i}]");
            let built = ScorerSpec::from_value(item).and_then(|spec| {
                let name = spec.name();
                if !names.insert(name.clone()) {
                    return Err(format!(
                        "another scorer is named {name:?}: give each a distinct `name`"
                    ));
                }
                spec.build(&base, &self.models)
            });
            match built {
                Ok(scorer) => scorers.push(scorer),
                Err(message) => self.problem(&at, message),
            }
        }
        scorers
    }

    /// A model SPEC (`API:MODEL@BASE_URL` or a name from `models`), resolved.
    fn named_model(&mut self, value: &Value, path: &str) -> Option<NamedModel> {
        let spec = self.string(value, path)?;
        super::model_spec::resolve_spec(&spec, &self.models, None)
            .map_err(|message| self.problem(path, message))
            .ok()
    }

    /// `max_total_tokens` and `max_seconds` of an object, each falling back to `fallback`.
    fn limits(&mut self, map: &Map<String, Value>, path: &str, fallback: Limits) -> Limits {
        let mut limits = fallback;
        if let Some(v) = map.get("max_total_tokens") {
            match v.as_u64() {
                Some(n) if n >= 1 => limits.max_total_tokens = Some(n),
                _ => self.problem(
                    &format!("{path}.max_total_tokens"),
                    format!("expected a whole number of at least 1, got {v}"),
                ),
            }
        }
        if let Some(v) = map.get("max_seconds") {
            limits.max_seconds = self.positive(v, &format!("{path}.max_seconds"));
        }
        limits
    }

    fn positive(&mut self, value: &Value, path: &str) -> Option<f64> {
        match value.as_f64() {
            Some(x) if x.is_finite() && x > 0.0 => Some(x),
            _ => {
                self.problem(path, format!("expected a positive number, got {value}"));
                None
            }
        }
    }

    /// `"chat": {api, base_url, model, ...}`: a live model server (see `docs/models.md`).
    fn chat(&mut self, value: &Value, path: &str) -> Option<TaskModel> {
        let path = format!("{path}.chat");
        let map = self.object(value, &path)?;
        const KEYS: [&str; 10] = [
            "api",
            "base_url",
            "model",
            "api_key_env",
            "temperature",
            "max_output_tokens",
            "timeout_s",
            "max_retries",
            "retry_budget_s",
            "system",
        ];
        self.only_keys(map, &KEYS, &path);
        let required = |checker: &mut Self, key: &str| match map.get(key) {
            Some(v) => checker.string(v, &format!("{path}.{key}")),
            None => {
                checker.problem(&path, format!("missing key `{key}`"));
                None
            }
        };
        let api = required(self, "api").and_then(|name| {
            Api::parse(&name).or_else(|| {
                self.problem(
                    &format!("{path}.api"),
                    format!(
                        "expected \"openai-chat\", \"anthropic-messages\" or \"openai-responses\", got {name:?}"
                    ),
                );
                None
            })
        });
        let base_url = required(self, "base_url");
        let model = required(self, "model");
        let api_key_env = map
            .get("api_key_env")
            .and_then(|v| self.string(v, &format!("{path}.api_key_env")));
        if let Err(message) = api_key_from_env(api_key_env.as_deref()) {
            self.problem(&format!("{path}.api_key_env"), message);
        }
        let mut config = LiveConfig::new(api?, base_url?, model?);
        if let Some(v) = map.get("temperature") {
            match v.as_f64() {
                Some(t) if t.is_finite() && t >= 0.0 => config.temperature = Some(t),
                _ => self.problem(
                    &format!("{path}.temperature"),
                    format!("expected a number of at least 0, got {v}"),
                ),
            }
        }
        if let Some(v) = map.get("max_output_tokens") {
            config.max_output_tokens = self.steps(v, &format!("{path}.max_output_tokens"));
        }
        if let Some(v) = map.get("max_retries") {
            match v.as_u64().and_then(|n| u32::try_from(n).ok()) {
                Some(n) => config.max_retries = n,
                None => self.problem(
                    &format!("{path}.max_retries"),
                    format!("expected a whole number, got {v}"),
                ),
            }
        }
        for (key, slot) in [
            ("timeout_s", &mut config.timeout),
            ("retry_budget_s", &mut config.retry_budget),
        ] {
            if let Some(v) = map.get(key)
                && let Some(seconds) = self.positive(v, &format!("{path}.{key}"))
            {
                *slot = Duration::from_secs_f64(seconds.min(1e9));
            }
        }
        if let Some(v) = map.get("system") {
            config.system = self.string(v, &format!("{path}.system"));
        }
        Some(TaskModel::Chat {
            config: Box::new(config),
            api_key_env,
            prices: None,
        })
    }

    /// A `finish_gate` object: `command` (a program and its arguments; a program path with a `/`
    /// is relative to the suite's folder), `timeout_s`, `max_output_bytes`. The gate runs in the
    /// suite's folder.
    fn finish_gate(&mut self, value: &Value, path: &str) -> Option<CommandGate> {
        let map = self.object(value, path)?;
        self.only_keys(map, &["command", "timeout_s", "max_output_bytes"], path);
        let command_path = format!("{path}.command");
        let command = match map.get("command") {
            Some(v) => {
                let list = self.array(v, &command_path)?;
                let mut command = Vec::new();
                for (i, item) in list.iter().enumerate() {
                    command.extend(self.string(item, &format!("{command_path}[{i}]")));
                }
                if list.is_empty() {
                    self.problem(&command_path, "must name a program");
                }
                (!list.is_empty() && command.len() == list.len()).then_some(command)
            }
            None => {
                self.problem(path, "missing key `command`");
                None
            }
        };
        let mut config = CommandGateConfig::new(command?);
        let mut whole = |key: &str, max: u64| -> Option<u64> {
            let v = map.get(key)?;
            match v.as_u64() {
                Some(n) if (1..=max).contains(&n) => Some(n),
                _ => {
                    self.problem(
                        &format!("{path}.{key}"),
                        format!("expected a whole number from 1 to {max}, got {v}"),
                    );
                    None
                }
            }
        };
        if let Some(n) = whole("timeout_s", 86_400) {
            config.timeout_s = n;
        }
        if let Some(n) = whole("max_output_bytes", 16 << 20) {
            config.max_output_bytes = usize::try_from(n).unwrap_or(usize::MAX);
        }
        let base = self
            .canonical_base
            .clone()
            .unwrap_or_else(|| self.base_dir.to_path_buf());
        let program = Path::new(&config.command[0]);
        let program = if program.to_string_lossy().contains('/') {
            base.join(program)
        } else {
            program.to_path_buf()
        };
        Some(CommandGate::new(config).with_program(program).in_dir(base))
    }

    fn model(&mut self, value: &Value, path: &str) -> Option<TaskModel> {
        let map = self.object(value, path)?;
        let kinds: Vec<&str> = ["responses", "actions", "replay", "chat"]
            .into_iter()
            .filter(|k| map.contains_key(*k))
            .collect();
        match kinds.as_slice() {
            [] => {
                self.only_keys(
                    map,
                    &[
                        "responses",
                        "actions",
                        "replay",
                        "run_id",
                        "occurrence",
                        "chat",
                    ],
                    path,
                );
                self.problem(
                    path,
                    "expected one of `responses`, `actions`, `replay` or `chat`",
                );
                None
            }
            ["responses"] => {
                self.only_keys(map, &["responses"], path);
                let path = format!("{path}.responses");
                let list = self.non_empty_array(&map["responses"], &path)?;
                let mut responses = Vec::new();
                for (i, item) in list.iter().enumerate() {
                    responses.extend(self.string(item, &format!("{path}[{i}]")));
                }
                (responses.len() == list.len()).then_some(TaskModel::Responses(responses))
            }
            ["actions"] => {
                self.only_keys(map, &["actions"], path);
                let path = format!("{path}.actions");
                let list = self.non_empty_array(&map["actions"], &path)?;
                let mut actions = Vec::new();
                for (i, item) in list.iter().enumerate() {
                    match action_from_value(item.clone()) {
                        Ok(action) => actions.push(ScriptedAction::from_action(action)),
                        Err(err) => self.problem(&format!("{path}[{i}]"), err.message),
                    }
                }
                (actions.len() == list.len()).then_some(TaskModel::Actions(actions))
            }
            ["chat"] => {
                self.only_keys(map, &["chat"], path);
                self.chat(&map["chat"], path)
            }
            ["replay"] => {
                self.only_keys(map, &["replay", "run_id", "occurrence"], path);
                let file = self.string(&map["replay"], &format!("{path}.replay"));
                let run_id = match map.get("run_id") {
                    Some(v) => self.string(v, &format!("{path}.run_id")),
                    None => None,
                };
                let occurrence = match map.get("occurrence") {
                    Some(_) if run_id.is_none() => {
                        self.problem(&format!("{path}.occurrence"), "needs `run_id`");
                        return None;
                    }
                    Some(v) => Some(self.steps(v, &format!("{path}.occurrence"))?),
                    None => None,
                };
                self.replay(file?, run_id, occurrence, path)
            }
            several => {
                self.problem(
                    path,
                    format!("give exactly one model kind, not {}", several.join(" and ")),
                );
                None
            }
        }
    }

    fn array<'v>(&mut self, value: &'v Value, path: &str) -> Option<&'v Vec<Value>> {
        match value {
            Value::Array(list) => Some(list),
            other => {
                self.problem(path, format!("expected an array, got {}", type_name(other)));
                None
            }
        }
    }

    /// An array with at least one item: a scripted model with nothing to say is a suite mistake,
    /// not a run that ends in an internal error.
    fn non_empty_array<'v>(&mut self, value: &'v Value, path: &str) -> Option<&'v Vec<Value>> {
        let list = self.array(value, path)?;
        if list.is_empty() {
            self.problem(path, "expected at least one item, got an empty array");
            return None;
        }
        Some(list)
    }

    /// Resolves and reads a replay source; it must stay inside the suite's folder.
    fn replay(
        &mut self,
        file: String,
        run_id: Option<String>,
        occurrence: Option<u32>,
        path: &str,
    ) -> Option<TaskModel> {
        let replay_path = format!("{path}.replay");
        let relative = Path::new(&file);
        if relative.is_absolute() {
            self.problem(
                &replay_path,
                format!("{file:?} must be relative to the suite's folder"),
            );
            return None;
        }
        let resolved = self.base_dir.join(relative);
        let canonical = match resolved.canonicalize() {
            Ok(canonical) => canonical,
            Err(err) => {
                self.problem(&replay_path, format!("cannot read {file:?}: {err}"));
                return None;
            }
        };
        match &self.canonical_base {
            Some(base) if canonical.starts_with(base) => {}
            _ => {
                self.problem(
                    &replay_path,
                    format!("{file:?} leads outside the suite's folder"),
                );
                return None;
            }
        }
        // Opening a named pipe would wait for a writer forever: only regular files are read.
        match std::fs::metadata(&canonical) {
            Ok(meta) if meta.is_dir() => {
                self.problem(
                    &replay_path,
                    format!("{file:?} is a folder, not a trace file"),
                );
                return None;
            }
            Ok(meta) => {
                if let Some(what) = crate::output::special_kind(meta.file_type()) {
                    self.problem(
                        &replay_path,
                        format!("{file:?} is {what}, not a regular file"),
                    );
                    return None;
                }
            }
            Err(err) => {
                self.problem(&replay_path, format!("cannot read {file:?}: {err}"));
                return None;
            }
        }
        let contents = match read_trace(&canonical, ReadOptions::default()) {
            Ok(contents) => contents,
            Err(err) => {
                self.problem(&replay_path, format!("cannot read {file:?}: {err}"));
                return None;
            }
        };
        let run = match run_id {
            Some(id) => match contents.occurrence(&id, occurrence.unwrap_or(1)) {
                Some(run) => run.clone(),
                None => {
                    let problem = match occurrence {
                        Some(n) if contents.run(&id).is_some() => {
                            format!("{file:?} has no {} run {id:?}", crate::trace::ordinal(n))
                        }
                        _ => format!("no run {id:?} in {file:?}"),
                    };
                    self.problem(&format!("{path}.run_id"), problem);
                    return None;
                }
            },
            None => match contents.runs.as_slice() {
                [only] => only.clone(),
                runs => {
                    self.problem(
                        path,
                        format!("{file:?} holds {} runs: name one with `run_id`", runs.len()),
                    );
                    return None;
                }
            },
        };
        if let Err(err) = ReplayModel::from_run(&run) {
            self.problem(&replay_path, err.to_string());
            return None;
        }
        Some(TaskModel::Replay {
            path: resolved,
            run: super::RunSource::Held(Arc::new(run)),
        })
    }

    fn expect(&mut self, value: &Value, path: &str) -> Expectations {
        let mut expect = Expectations::default();
        let Some(map) = self.object(value, path) else {
            return expect;
        };
        const KEYS: [&str; 5] = [
            "exit_reason",
            "answer",
            "answer_contains",
            "max_steps_used",
            "max_gate_rejections",
        ];
        let all: Vec<&str> = KEYS.iter().chain(Checks::KEYS.iter()).copied().collect();
        self.only_keys(map, &all, path);
        for (key, v) in map {
            if Checks::KEYS.contains(&key.as_str())
                && let Err(message) = expect.checks.set(key, v)
            {
                self.problem(&format!("{path}.{key}"), message);
            }
        }
        if let Some(v) = map.get("max_gate_rejections") {
            match v.as_u64() {
                Some(n) if n <= u64::from(u32::MAX) => expect.max_gate_rejections = Some(n as u32),
                _ => self.problem(
                    &format!("{path}.max_gate_rejections"),
                    format!("expected a whole number, got {v}"),
                ),
            }
        }
        if let Some(v) = map.get("exit_reason") {
            match v.as_str().and_then(ExitReason::parse) {
                Some(reason) => expect.exit_reason = Some(reason),
                None => self.problem(
                    &format!("{path}.exit_reason"),
                    format!(
                        "expected one of finished, max_steps_exceeded, invalid_model_output, internal_error; got {v}"
                    ),
                ),
            }
        }
        if let Some(v) = map.get("answer") {
            expect.answer = self.string(v, &format!("{path}.answer"));
        }
        if let Some(v) = map.get("answer_contains") {
            expect.answer_contains = self.string(v, &format!("{path}.answer_contains"));
        }
        if let Some(v) = map.get("max_steps_used") {
            match v.as_u64() {
                Some(n) if n <= u64::from(u32::MAX) => expect.max_steps_used = Some(n as u32),
                _ => self.problem(
                    &format!("{path}.max_steps_used"),
                    format!("expected a whole number, got {v}"),
                ),
            }
        }
        expect
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
