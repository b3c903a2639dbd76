//! The facts of one run: the task, what the model proposed, what the environment answered, and how
//! the run ended. Every value here is immutable once made; the history is built by appending.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// What the agent is asked to do. It is given to the model on every turn, never put in the history.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    /// The task text as the user wrote it.
    pub prompt: String,
}

impl Task {
    /// A task with this prompt.
    pub fn new(prompt: impl Into<String>) -> Self {
        Task {
            prompt: prompt.into(),
        }
    }
}

/// A request to run one registered tool. It is only a proposal: the runtime decides what happens.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The registered name of the tool.
    pub tool_name: String,
    /// The arguments, always a JSON object.
    pub arguments: Map<String, Value>,
}

impl ToolCall {
    /// A call of `tool_name` with these arguments.
    pub fn new(tool_name: impl Into<String>, arguments: Map<String, Value>) -> Self {
        ToolCall {
            tool_name: tool_name.into(),
            arguments,
        }
    }
}

/// The model's request to end the run with an answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finish {
    /// The final answer.
    pub answer: String,
}

/// What a model may propose on one turn.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Run a tool and show me the result.
    ToolCall(ToolCall),
    /// Stop with this answer.
    Finish(Finish),
}

impl Action {
    /// The action's kind as written in traces: `tool_call` or `finish`.
    pub fn kind(&self) -> &'static str {
        match self {
            Action::ToolCall(_) => "tool_call",
            Action::Finish(_) => "finish",
        }
    }
}

/// What the environment answered to a tool call: the tool's output, or an expected failure.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Observation {
    /// The tool that was asked for (also when it does not exist).
    pub tool_name: String,
    /// The tool's output, or the error text the model should read.
    pub content: String,
    /// Whether this is an expected failure rather than a result.
    pub is_error: bool,
}

/// A correction shown to the model after output the adapter could not accept.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelFeedback {
    /// What was wrong with the output.
    pub content: String,
    /// Always `true`: feedback only exists for errors.
    pub is_error: bool,
}

impl ModelFeedback {
    /// Feedback with this text.
    pub fn new(content: impl Into<String>) -> Self {
        ModelFeedback {
            content: content.into(),
            is_error: true,
        }
    }
}

/// One entry of the history a model sees.
#[derive(Clone, Debug, PartialEq)]
pub enum HistoryItem {
    /// A tool call the model made.
    ToolCall(ToolCall),
    /// The runtime's answer to the call before it.
    Observation(Observation),
    /// A correction after invalid model output.
    ModelFeedback(ModelFeedback),
    /// A finish the finish gate rejected, with the gate's output.
    FinishRejected(FinishRejection),
}

/// A proposed answer the finish gate rejected, as the model sees it afterwards. It is not invalid
/// output: the action was well formed, the check failed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FinishRejection {
    /// The answer that was proposed.
    pub answer: String,
    /// The gate's output, cut to its head and tail.
    pub feedback: String,
}

/// How a run ended. Reports keep these apart: budget exhaustion is an expected outcome of an agent,
/// an internal error is a bug in the loop, a tool or the model connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExitReason {
    /// The model proposed `Finish`.
    Finished,
    /// The step budget ran out before the model finished.
    MaxStepsExceeded,
    /// The model's output was still invalid on the last step.
    InvalidModelOutput,
    /// A bug or a broken model connection ended the run.
    InternalError,
}

impl ExitReason {
    /// Every exit reason, in report order.
    pub const ALL: [ExitReason; 4] = [
        ExitReason::Finished,
        ExitReason::MaxStepsExceeded,
        ExitReason::InvalidModelOutput,
        ExitReason::InternalError,
    ];

    /// The snake_case name used in traces and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            ExitReason::Finished => "finished",
            ExitReason::MaxStepsExceeded => "max_steps_exceeded",
            ExitReason::InvalidModelOutput => "invalid_model_output",
            ExitReason::InternalError => "internal_error",
        }
    }

    /// Parses the snake_case name.
    pub fn parse(name: &str) -> Option<ExitReason> {
        ExitReason::ALL.into_iter().find(|r| r.as_str() == name)
    }
}

impl fmt::Display for ExitReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a recorded run ended, as reports and `show` count it: one of the exit reasons, or
/// `incomplete` for a run with no ending at all (the process died or the file was cut), never
/// folded into an exit reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RunOutcome {
    /// It recorded an ending with this exit reason.
    Ended(ExitReason),
    /// It never recorded an ending.
    Incomplete,
}

impl RunOutcome {
    /// Every outcome, in report order: the exit reasons, then `incomplete`.
    pub const ALL: [RunOutcome; 5] = [
        RunOutcome::Ended(ExitReason::Finished),
        RunOutcome::Ended(ExitReason::MaxStepsExceeded),
        RunOutcome::Ended(ExitReason::InvalidModelOutput),
        RunOutcome::Ended(ExitReason::InternalError),
        RunOutcome::Incomplete,
    ];

    /// `finished`, ..., or `incomplete`.
    pub fn as_str(self) -> &'static str {
        match self {
            RunOutcome::Ended(reason) => reason.as_str(),
            RunOutcome::Incomplete => "incomplete",
        }
    }

    /// The position of this outcome in [`RunOutcome::ALL`].
    pub fn index(self) -> usize {
        match self {
            RunOutcome::Ended(reason) => reason as usize,
            RunOutcome::Incomplete => ExitReason::ALL.len(),
        }
    }
}

impl fmt::Display for RunOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The structured outcome of a run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunResult {
    /// Why the run ended.
    pub exit_reason: ExitReason,
    /// The answer, when the run finished.
    pub answer: Option<String>,
    /// Model turns taken, at most the budget.
    pub steps_used: u32,
    /// What went wrong, when the run did not finish normally.
    pub error: Option<String>,
}

/// The identifier that keeps the events of one run together in a trace file.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RunId(pub String);

impl RunId {
    /// A fresh id, unique across processes, machines and time: `run-` and a [`unique_token`].
    pub fn generate() -> RunId {
        RunId(format!("run-{}", unique_token()))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for RunId {
    fn from(id: &str) -> Self {
        RunId(id.to_owned())
    }
}

/// A short token unique across processes, machines and time, and ordered by time: the milliseconds
/// since 1970 in base 36 (nine digits, so tokens sort by creation time as text), a dash and eight
/// base-36 digits from the system's random source, mixed with the time, the process id and a
/// per-process counter so that a missing random source still gives distinct tokens on one machine.
/// Only `[0-9a-z-]`: it fits in run ids, task ids and file names.
pub fn unique_token() -> String {
    use sha2::{Digest, Sha256};
    use std::io::Read;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::{SystemTime, UNIX_EPOCH};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let since_epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let mut random = [0u8; 16];
    let _ = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut random));
    let mut hasher = Sha256::new();
    hasher.update(random);
    hasher.update(since_epoch.as_nanos().to_le_bytes());
    hasher.update(std::process::id().to_le_bytes());
    hasher.update(COUNTER.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    let digest = hasher.finalize();
    let mut bits = u64::from_le_bytes(digest[..8].try_into().unwrap_or_default());
    let mut tail = String::with_capacity(8);
    for _ in 0..8 {
        tail.push(base36_digit(bits % 36));
        bits /= 36;
    }
    let mut millis = since_epoch.as_millis();
    let mut head = [b'0'; 9];
    for slot in head.iter_mut().rev() {
        *slot = base36_digit((millis % 36) as u64) as u8;
        millis /= 36;
    }
    format!("{}-{tail}", String::from_utf8_lossy(&head))
}

fn base36_digit(value: u64) -> char {
    char::from_digit(value as u32, 36).unwrap_or('0')
}
