//! One suite task as eval runs it, and the values it is made of: its id, its model, its
//! expectations. The suite's loader files build these; nothing here reads a file.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use crate::agent::Limits;
use crate::eval::agent::AgentCommand;
use crate::eval::model_spec::{NamedModel, Prices};
use crate::eval::scorers::Scorer;
use crate::eval::scripted_action::ScriptedAction;
use crate::gate::CommandGate;
use crate::model::live::LiveConfig;
use crate::run::ExitReason;

/// The step budget when neither the task, the suite defaults nor a recording give one.
pub const DEFAULT_MAX_STEPS: u32 = 5;

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
    pub agent: Option<Arc<AgentCommand>>,
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
        run: crate::eval::RunSource,
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
    /// How `answer` and `answer_contains` compare (`ignore_case`, `normalize_whitespace`): all
    /// the runner reads of the answer and run checks, which became `scorers` when the task was
    /// checked.
    pub text: crate::eval::scorers::TextOptions,
    /// The scorers of the answer and run checks, then those of `scorers`, in order.
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
