//! The suite as written, in typed form: one struct per object of `schemas/suite.schema.json`,
//! unknown keys refused. A suite is checked against the schema first, so these structs only read
//! what passed; adding a key to the format is adding it to the schema and a field here.

use serde::Deserialize;
use serde::de::{Error, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

mod compact;

use crate::eval::scorers::{Checks, ScorerSpec};
use crate::run::ExitReason;
use crate::trace::Capture;

/// The top level, its tasks aside: they are read one at a time as [`TaskSpec`].
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteSpec {
    /// For editors; ignored.
    #[serde(rename = "$schema", default)]
    pub _schema: Option<String>,
    /// The suite's name.
    pub name: String,
    /// Settings every task starts from.
    #[serde(default)]
    pub defaults: Option<DefaultsSpec>,
    /// The tasks inline (read separately).
    #[serde(rename = "tasks", default)]
    pub _tasks: Option<IgnoredAny>,
    /// A JSON Lines file of tasks, relative to the suite.
    #[serde(default)]
    pub tasks_file: Option<String>,
    /// Tasks made from the rows of a dataset file.
    #[serde(default)]
    pub dataset: Option<DatasetSpec>,
    /// A tools file's path, or the same object inline (checked by the tools file's own schema).
    #[serde(default)]
    pub tools: Option<Value>,
    /// Named live models (each entry read by `model_spec`, which says where it is wrong).
    #[serde(default)]
    pub models: Option<Value>,
}

/// `dataset`: a dataset file and the task template its rows fill. The template's keys are a
/// task's; their strings may name the row's fields (`{question}`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatasetSpec {
    /// The dataset file, relative to the suite.
    pub path: String,
    /// `jsonl` or `csv`; else from the file's extension.
    #[serde(default)]
    pub format: Option<DatasetFormat>,
    /// The id's template; `row-{row}` by default.
    #[serde(default)]
    pub id: Option<String>,
    /// The prompt's template.
    pub prompt: String,
    /// The step budget.
    #[serde(default)]
    pub max_steps: Option<u32>,
    /// The token budget.
    #[serde(default)]
    pub max_total_tokens: Option<u64>,
    /// The time budget.
    #[serde(default)]
    pub max_seconds: Option<f64>,
    /// The model's template; without one, `defaults.model` or `eval --model`.
    #[serde(default)]
    pub model: Option<Value>,
    /// The finish gate's template.
    #[serde(default)]
    pub finish_gate: Option<Value>,
    /// The expectations' template.
    #[serde(default)]
    pub expect: Option<Value>,
    /// The scorers' template.
    #[serde(default)]
    pub scorers: Option<Value>,
}

/// A dataset file's format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DatasetFormat {
    /// One JSON object per line.
    Jsonl,
    /// Comma-separated values under a header row (RFC 4180 quoting).
    Csv,
}

/// `defaults`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DefaultsSpec {
    /// The step budget.
    #[serde(default)]
    pub max_steps: Option<u32>,
    /// Trace capture.
    #[serde(default)]
    pub capture: Option<Capture>,
    /// The finish gate.
    #[serde(default)]
    pub finish_gate: Option<FinishGateSpec>,
    /// The token budget.
    #[serde(default)]
    pub max_total_tokens: Option<u64>,
    /// The time budget.
    #[serde(default)]
    pub max_seconds: Option<f64>,
    /// What every task's result must satisfy, under each task's own `expect`.
    #[serde(default)]
    pub expect: Option<ExpectSpec>,
    /// Scorers for tasks without their own.
    #[serde(default)]
    pub scorers: Option<Vec<ScorerSpec>>,
    /// A model SPEC for tasks without a `model`.
    #[serde(default)]
    pub model: Option<String>,
    /// The agent command of tasks without their own.
    #[serde(default)]
    pub agent: Option<AgentSpec>,
}

/// One task.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskSpec {
    /// The unique id.
    pub id: String,
    /// The prompt; replay tasks may take the recorded one.
    #[serde(default)]
    pub prompt: Option<String>,
    /// The step budget.
    #[serde(default)]
    pub max_steps: Option<u32>,
    /// The token budget.
    #[serde(default)]
    pub max_total_tokens: Option<u64>,
    /// The time budget.
    #[serde(default)]
    pub max_seconds: Option<f64>,
    /// What answers the task; else `defaults.model` or `eval --model`.
    #[serde(default)]
    pub model: Option<ModelSpec>,
    /// Scorers, replacing `defaults.scorers`.
    #[serde(default)]
    pub scorers: Option<Vec<ScorerSpec>>,
    /// The finish gate, replacing the default one.
    #[serde(default)]
    pub finish_gate: Option<FinishGateSpec>,
    /// What the result must satisfy.
    #[serde(default)]
    pub expect: Option<ExpectSpec>,
    /// An agent command that does the task instead of looptrace's loop.
    #[serde(default)]
    pub agent: Option<AgentSpec>,
}

/// `agent`: an agent command run through a proxy of its own (`docs/suite-format.md`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    /// The program and its arguments; strings may hold placeholders.
    pub command: Vec<String>,
    /// Seconds before its process group is killed.
    #[serde(default)]
    pub timeout_s: Option<f64>,
    /// Variables set for it.
    #[serde(default)]
    pub env: Option<std::collections::BTreeMap<String, String>>,
    /// Variables passed on from looptrace's environment.
    #[serde(default)]
    pub pass_env: Option<Vec<String>>,
    /// Request parts a replay leaves out of the match.
    #[serde(default)]
    pub ignore: Option<Vec<String>>,
}

/// `model`: exactly one kind is given (the schema says so).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    /// Raw responses.
    #[serde(default)]
    pub responses: Option<Vec<String>>,
    /// Scripted actions.
    #[serde(default)]
    pub actions: Option<Vec<ActionSpec>>,
    /// A trace file to replay.
    #[serde(default)]
    pub replay: Option<String>,
    /// Which run of the trace file.
    #[serde(default)]
    pub run_id: Option<String>,
    /// Which occurrence of a reused run id, from 1.
    #[serde(default)]
    pub occurrence: Option<u32>,
    /// A live model server.
    #[serde(default)]
    pub chat: Option<ChatSpec>,
}

/// A scripted action: `type` says which of the other keys it has (the schema checks they match).
/// A struct rather than a tagged enum, which serde reads by first copying the whole action aside.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActionSpec {
    /// `tool_call` or `finish`.
    #[serde(rename = "type")]
    pub kind: ActionKind,
    /// A tool call's tool.
    #[serde(default)]
    pub tool_name: Option<String>,
    /// A tool call's arguments (an object), as compact JSON text: how a scripted action holds
    /// them.
    #[serde(default, deserialize_with = "compact::compact")]
    pub arguments: Option<Box<RawValue>>,
    /// A finish's answer.
    #[serde(default)]
    pub answer: Option<String>,
}

/// An action's `type`.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionKind {
    /// A tool call.
    ToolCall,
    /// A finish.
    Finish,
}

/// `chat`: a live model server (`docs/models.md`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChatSpec {
    /// The wire format.
    pub api: String,
    /// The server.
    pub base_url: String,
    /// The model's name.
    pub model: String,
    /// The variable the key is read from.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Sampling temperature.
    #[serde(default)]
    pub temperature: Option<f64>,
    /// The most tokens of one answer.
    #[serde(default)]
    pub max_output_tokens: Option<u32>,
    /// Seconds one request may take.
    #[serde(default)]
    pub timeout_s: Option<f64>,
    /// Retries of a failed request.
    #[serde(default)]
    pub max_retries: Option<u32>,
    /// Seconds all retries of one call may take.
    #[serde(default)]
    pub retry_budget_s: Option<f64>,
    /// The system prompt.
    #[serde(default)]
    pub system: Option<String>,
}

/// `finish_gate`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FinishGateSpec {
    /// The program and its arguments.
    pub command: Vec<String>,
    /// Seconds the check may take.
    #[serde(default)]
    pub timeout_s: Option<u64>,
    /// Bytes of the check's output the model reads.
    #[serde(default)]
    pub max_output_bytes: Option<u64>,
}

/// `expect`: the five keys it always had, and the answer and run checks ([`Checks`]), each read
/// with unknown keys refused.
#[derive(Debug, Default)]
pub struct ExpectSpec {
    /// `exit_reason`, `answer`, `answer_contains`, `max_steps_used`, `max_gate_rejections`.
    pub basic: BasicExpectSpec,
    /// The answer and run checks.
    pub checks: Checks,
}

impl<'de> Deserialize<'de> for ExpectSpec {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ExpectVisitor)
    }
}

/// Reads `expect` key by key: the five into their fields, the answer and run checks (rare) into
/// a map read as [`Checks`] at the end.
struct ExpectVisitor;

impl<'de> Visitor<'de> for ExpectVisitor {
    type Value = ExpectSpec;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ExpectSpec, A::Error> {
        fn once<T, E: Error>(slot: &mut Option<T>, value: T, name: &'static str) -> Result<(), E> {
            match slot.replace(value) {
                Some(_) => Err(E::duplicate_field(name)),
                None => Ok(()),
            }
        }
        let mut basic = BasicExpectSpec::default();
        let mut checks = Map::new();
        while let Some(key) = map.next_key::<ExpectKey>()? {
            match key {
                ExpectKey::ExitReason => {
                    once(&mut basic.exit_reason, map.next_value()?, "exit_reason")?
                }
                ExpectKey::Answer => once(&mut basic.answer, map.next_value()?, "answer")?,
                ExpectKey::AnswerContains => once(
                    &mut basic.answer_contains,
                    map.next_value()?,
                    "answer_contains",
                )?,
                ExpectKey::MaxStepsUsed => once(
                    &mut basic.max_steps_used,
                    map.next_value()?,
                    "max_steps_used",
                )?,
                ExpectKey::MaxGateRejections => once(
                    &mut basic.max_gate_rejections,
                    map.next_value()?,
                    "max_gate_rejections",
                )?,
                ExpectKey::Check(name) => {
                    let value: Value = map.next_value()?;
                    if checks.insert(name.to_owned(), value).is_some() {
                        return Err(A::Error::duplicate_field(name));
                    }
                }
            }
        }
        let checks = if checks.is_empty() {
            Checks::default()
        } else {
            Checks::deserialize(Value::Object(checks)).map_err(A::Error::custom)?
        };
        Ok(ExpectSpec { basic, checks })
    }
}

/// A key of `expect`.
enum ExpectKey {
    ExitReason,
    Answer,
    AnswerContains,
    MaxStepsUsed,
    MaxGateRejections,
    /// One of [`Checks::KEYS`].
    Check(&'static str),
}

impl<'de> Deserialize<'de> for ExpectKey {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Name;
        impl Visitor<'_> for Name {
            type Value = ExpectKey;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a key of `expect`")
            }
            fn visit_str<E: Error>(self, name: &str) -> Result<ExpectKey, E> {
                Ok(match name {
                    "exit_reason" => ExpectKey::ExitReason,
                    "answer" => ExpectKey::Answer,
                    "answer_contains" => ExpectKey::AnswerContains,
                    "max_steps_used" => ExpectKey::MaxStepsUsed,
                    "max_gate_rejections" => ExpectKey::MaxGateRejections,
                    other => match Checks::KEYS.iter().find(|key| **key == other) {
                        Some(key) => ExpectKey::Check(key),
                        // The schema lists the keys `expect` may have; only a value that
                        // skipped it gets here.
                        None => return Err(E::custom(format!("unknown key `{other}`"))),
                    },
                })
            }
        }
        deserializer.deserialize_identifier(Name)
    }
}

/// The five keys `expect` always had.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BasicExpectSpec {
    /// The exit reason.
    #[serde(default)]
    pub exit_reason: Option<ExitReason>,
    /// The exact answer.
    #[serde(default)]
    pub answer: Option<String>,
    /// Text the answer must contain.
    #[serde(default)]
    pub answer_contains: Option<String>,
    /// The most steps the run may use.
    #[serde(default)]
    pub max_steps_used: Option<u32>,
    /// The most finishes the finish gate may reject.
    #[serde(default)]
    pub max_gate_rejections: Option<u32>,
}
