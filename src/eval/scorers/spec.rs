//! What a suite writes for scorers: the new keys of `expect` ([`Checks`]) and the entries of
//! `scorers` ([`ScorerSpec`]). Plain serde types with unknown fields denied, so any suite loader
//! reads them; [`Checks::set`] reads one key at a time for a loader that reports each problem
//! at its JSON path. Turning them into scorers checks what a type cannot (a regex that compiles,
//! a schema that is one, a model SPEC that resolves).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

use super::Scorer;
pub use super::answer::NumberCheck;
use super::answer::{AnswerCheck, TextOptions};
use super::command::CommandScorer;
pub use super::command::CommandSpec;
use super::judge::JudgeScorer;
use super::run::RunCheck;
use crate::eval::model_spec::{NamedModel, resolve_spec};

/// The answer and run checks of `expect` (beyond the five it always had).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Checks {
    /// A regular expression the answer must match (anywhere; anchor it with `^…$`).
    #[serde(default)]
    pub answer_regex: Option<String>,
    /// A JSON Schema the answer, read as JSON, must satisfy.
    #[serde(default)]
    pub answer_json_schema: Option<Value>,
    /// A number the answer must be, within a tolerance.
    #[serde(default)]
    pub answer_number: Option<NumberCheck>,
    /// Answers that are accepted; the answer must be one of them.
    #[serde(default)]
    pub answer_in: Option<Vec<String>>,
    /// Compare answers ignoring case.
    #[serde(default)]
    pub ignore_case: bool,
    /// Compare answers with whitespace trimmed and runs of it as one space.
    #[serde(default)]
    pub normalize_whitespace: bool,
    /// The most tool calls that may come back as errors.
    #[serde(default)]
    pub max_tool_errors: Option<u32>,
    /// The most input plus output tokens the run may use.
    #[serde(default)]
    pub max_total_tokens: Option<u64>,
    /// The most seconds the run may take.
    #[serde(default)]
    pub max_duration_s: Option<f64>,
    /// The most US dollars the run may cost (the model's `prices` say what tokens cost).
    #[serde(default)]
    pub max_cost_usd: Option<f64>,
    /// Tools the run must call (each at least once).
    #[serde(default)]
    pub tools_called: Option<Vec<String>>,
    /// Tools the run must not call.
    #[serde(default)]
    pub tools_not_called: Option<Vec<String>>,
}

impl Checks {
    /// The keys, as written in `expect`.
    pub const KEYS: [&'static str; 12] = [
        "answer_regex",
        "answer_json_schema",
        "answer_number",
        "answer_in",
        "ignore_case",
        "normalize_whitespace",
        "max_tool_errors",
        "max_total_tokens",
        "max_duration_s",
        "max_cost_usd",
        "tools_called",
        "tools_not_called",
    ];

    /// Reads one key's value (a key of [`Checks::KEYS`]); the message says what is wrong with it.
    pub fn set(&mut self, key: &str, value: &Value) -> Result<(), String> {
        fn read<T: for<'de> Deserialize<'de>>(value: &Value) -> Result<T, String> {
            T::deserialize(value).map_err(|err| err.to_string())
        }
        match key {
            "answer_regex" => self.answer_regex = Some(read(value)?),
            "answer_json_schema" => self.answer_json_schema = Some(value.clone()),
            "answer_number" => self.answer_number = Some(read(value)?),
            "answer_in" => self.answer_in = Some(read(value)?),
            "ignore_case" => self.ignore_case = read(value)?,
            "normalize_whitespace" => self.normalize_whitespace = read(value)?,
            "max_tool_errors" => self.max_tool_errors = Some(read(value)?),
            "max_total_tokens" => self.max_total_tokens = Some(read(value)?),
            "max_duration_s" => self.max_duration_s = Some(read(value)?),
            "max_cost_usd" => self.max_cost_usd = Some(read(value)?),
            "tools_called" => self.tools_called = Some(read(value)?),
            "tools_not_called" => self.tools_not_called = Some(read(value)?),
            other => return Err(format!("unknown key `{other}`")),
        }
        Ok(())
    }

    /// A task's checks over the suite's defaults: each key the task gives wins.
    pub fn over(self, defaults: &Checks) -> Checks {
        let d = defaults.clone();
        Checks {
            answer_regex: self.answer_regex.or(d.answer_regex),
            answer_json_schema: self.answer_json_schema.or(d.answer_json_schema),
            answer_number: self.answer_number.or(d.answer_number),
            answer_in: self.answer_in.or(d.answer_in),
            ignore_case: self.ignore_case || d.ignore_case,
            normalize_whitespace: self.normalize_whitespace || d.normalize_whitespace,
            max_tool_errors: self.max_tool_errors.or(d.max_tool_errors),
            max_total_tokens: self.max_total_tokens.or(d.max_total_tokens),
            max_duration_s: self.max_duration_s.or(d.max_duration_s),
            max_cost_usd: self.max_cost_usd.or(d.max_cost_usd),
            tools_called: self.tools_called.or(d.tools_called),
            tools_not_called: self.tools_not_called.or(d.tools_not_called),
        }
    }

    /// How answers are compared.
    pub fn text_options(&self) -> TextOptions {
        TextOptions {
            ignore_case: self.ignore_case,
            normalize_whitespace: self.normalize_whitespace,
        }
    }

    /// The scorers the checks make, in key order; each problem as `(key, message)`. Patterns
    /// and schemas are compiled once per `cache`: a suite's tasks often share them.
    pub fn scorers(&self, cache: &mut CheckCache) -> Result<Vec<Arc<dyn Scorer>>, CheckProblems> {
        let options = self.text_options();
        let mut scorers: Vec<Arc<dyn Scorer>> = Vec::new();
        let mut problems = Vec::new();
        if let Some(pattern) = &self.answer_regex {
            let key = format!(
                "{}{}{pattern}",
                options.ignore_case as u8, options.normalize_whitespace as u8
            );
            match cache.compiled(key, || AnswerCheck::regex(pattern, options)) {
                Ok(check) => scorers.push(check),
                Err(message) => problems.push(("answer_regex", message)),
            }
        }
        if let Some(schema) = &self.answer_json_schema {
            match cache.compiled(format!("schema{schema}"), || {
                AnswerCheck::json_schema(schema)
            }) {
                Ok(check) => scorers.push(check),
                Err(message) => problems.push(("answer_json_schema", message)),
            }
        }
        if let Some(number) = self.answer_number {
            if number.value.is_finite() && number.tolerance.is_finite() && number.tolerance >= 0.0 {
                scorers.push(Arc::new(AnswerCheck::Number(number)));
            } else {
                problems.push((
                    "answer_number",
                    "`value` must be a number and `tolerance` a number of at least 0".to_owned(),
                ));
            }
        }
        if let Some(accepted) = &self.answer_in {
            if accepted.is_empty() {
                problems.push(("answer_in", "must list at least one answer".to_owned()));
            } else {
                scorers.push(Arc::new(AnswerCheck::In(accepted.clone(), options)));
            }
        }
        let positive = |x: f64| x.is_finite() && x >= 0.0;
        if let Some(n) = self.max_tool_errors {
            scorers.push(Arc::new(RunCheck::MaxToolErrors(n)));
        }
        if let Some(n) = self.max_total_tokens {
            scorers.push(Arc::new(RunCheck::MaxTotalTokens(n)));
        }
        if let Some(s) = self.max_duration_s {
            if positive(s) {
                scorers.push(Arc::new(RunCheck::MaxDuration(s)));
            } else {
                problems.push((
                    "max_duration_s",
                    format!("expected a number of at least 0, got {s}"),
                ));
            }
        }
        if let Some(usd) = self.max_cost_usd {
            if positive(usd) {
                scorers.push(Arc::new(RunCheck::MaxCost(usd)));
            } else {
                problems.push((
                    "max_cost_usd",
                    format!("expected a number of at least 0, got {usd}"),
                ));
            }
        }
        if let Some(tools) = &self.tools_called {
            scorers.push(Arc::new(RunCheck::ToolsCalled(tools.clone())));
        }
        if let Some(tools) = &self.tools_not_called {
            scorers.push(Arc::new(RunCheck::ToolsNotCalled(tools.clone())));
        }
        if problems.is_empty() {
            Ok(scorers)
        } else {
            Err(problems)
        }
    }
}

/// Compiled answer checks by what they were compiled from, shared by the tasks of one suite.
#[derive(Debug, Default)]
pub struct CheckCache {
    compiled: std::collections::HashMap<String, Result<Arc<dyn Scorer>, String>>,
}

impl CheckCache {
    fn compiled(
        &mut self,
        key: String,
        compile: impl FnOnce() -> Result<AnswerCheck, String>,
    ) -> Result<Arc<dyn Scorer>, String> {
        self.compiled
            .entry(key)
            .or_insert_with(|| compile().map(|check| Arc::new(check) as Arc<dyn Scorer>))
            .clone()
    }
}

/// Problems found in checks: the `expect` key and what is wrong with it.
pub type CheckProblems = Vec<(&'static str, String)>;

/// One entry of `scorers`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ScorerSpec {
    /// A program run after the run ends, in the task's working folder.
    Command(CommandSpec),
    /// A live model grading the answer against a rubric.
    Judge(JudgeSpec),
}

/// `{"kind": "judge", ...}`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JudgeSpec {
    /// The score's name (`judge` when not given).
    #[serde(default)]
    pub name: Option<String>,
    /// The grading model: `API:MODEL@BASE_URL` or a name from `models`.
    pub model: String,
    /// What a passing answer is.
    pub rubric: String,
    /// The variable holding the key of a model given as `API:MODEL@BASE_URL`.
    #[serde(default)]
    pub api_key_env: Option<String>,
}

impl ScorerSpec {
    /// The score's name: the one given, else the kind.
    pub fn name(&self) -> String {
        match self {
            ScorerSpec::Command(spec) => spec.name.clone().unwrap_or_else(|| "command".to_owned()),
            ScorerSpec::Judge(spec) => spec.name.clone().unwrap_or_else(|| "judge".to_owned()),
        }
    }

    /// Reads one entry of `scorers`.
    pub fn from_value(value: &Value) -> Result<ScorerSpec, String> {
        ScorerSpec::deserialize(value).map_err(|err| err.to_string())
    }

    /// The scorer: the program resolved against `suite_dir`, the judge's model against `models`.
    pub fn build(
        &self,
        suite_dir: &Path,
        models: &BTreeMap<String, NamedModel>,
    ) -> Result<Arc<dyn Scorer>, String> {
        match self {
            ScorerSpec::Command(spec) => {
                CommandScorer::new(spec, suite_dir).map(|s| Arc::new(s) as Arc<dyn Scorer>)
            }
            ScorerSpec::Judge(spec) => {
                if spec.rubric.trim().is_empty() {
                    return Err("`rubric` must not be empty".to_owned());
                }
                let model = resolve_spec(&spec.model, models, spec.api_key_env.as_deref())?;
                Ok(Arc::new(JudgeScorer::new(
                    spec.name.clone().unwrap_or_else(|| "judge".to_owned()),
                    model,
                    spec.rubric.clone(),
                )))
            }
        }
    }
}
