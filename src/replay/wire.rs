//! Raw replay of live runs: the recorded response bodies (`raw_response`) are fed through today's
//! adapter for the recorded `api`, offline, so a change to how responses are read shows as a
//! divergence of the model turn. Each request today's loop would send is hashed as a live model
//! hashes it and compared with the recorded `request_hash`: a difference is a `request` divergence
//! naming the step and, when the recording has the request body (full capture), the first JSON
//! path where the two differ. The transport here serves recorded bodies; nothing opens a
//! connection.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use super::model::{ReplayError, end_of_recording};
use super::recording::{Recording, ReplaySetupError};
use super::verdict::{Divergence, DivergenceKind};
use crate::model::live::http::{HttpReply, Transport, TransportError};
use crate::model::live::{Api, LiveConfig, LiveModel};
use crate::model::{
    CallRecord, LiveIdentity, Model, ModelError, ProviderError, ProviderErrorKind, TurnItem,
};
use crate::run::{Action, HistoryItem, Task};
use crate::tools::{ToolRegistry, ToolSpec};
use crate::trace::{EventKind, RecordedRun, Summarizer};

/// The request divergences a replayed wire found, waiting for the comparator to report them.
pub(crate) type RequestLog = Arc<Mutex<Vec<Divergence>>>;

/// What today's loop sends besides the conversation: the settings `looptrace run --api` takes.
/// The recording gives the wire format and the model name.
#[derive(Clone, Debug)]
pub struct WireSettings {
    /// The system prompt (`DEFAULT_SYSTEM` when unset).
    pub system: Option<String>,
    /// Sampling temperature, when set.
    pub temperature: Option<f64>,
    /// The output token limit per call, when set.
    pub max_output_tokens: Option<u32>,
    /// The tools offered to the model.
    pub tools: Vec<ToolSpec>,
}

impl Default for WireSettings {
    /// `run --api`'s defaults, offering the built-in tools.
    fn default() -> Self {
        WireSettings {
            system: None,
            temperature: None,
            max_output_tokens: None,
            tools: ToolRegistry::builtin()
                .specs()
                .into_iter()
                .cloned()
                .collect(),
        }
    }
}

/// Whether a recorded run talked to a live model server: it is then replayed through its wire.
pub fn is_live(run: &RecordedRun) -> bool {
    run.started().is_some_and(|started| started.api.is_some())
}

/// One recorded model call: the first event of a turn.
#[derive(Clone, Debug)]
struct RecordedCall {
    step: u64,
    request_hash: Option<String>,
    request_body: Option<String>,
    response: String,
}

/// A live model whose server is the recording: [`LiveModel`] over a transport that serves the
/// recorded bodies in order and checks each request against the recorded hash.
pub(crate) struct WireReplayModel {
    inner: LiveModel,
    remaining: Arc<Mutex<VecDeque<RecordedCall>>>,
    identity: LiveIdentity,
    /// The provider failure the recording ended with, and its step.
    failure: Option<(u64, ProviderError)>,
    last_step: u64,
    turns: u64,
}

impl WireReplayModel {
    /// Checks that every model turn has its `raw_response`, which only full capture records.
    pub(crate) fn check(run: &RecordedRun) -> Result<(), ReplaySetupError> {
        recorded_calls(run).map(drop)
    }

    /// Builds the model and the log its request divergences go to.
    pub(crate) fn new(
        run: &RecordedRun,
        recording: &Recording,
        settings: &WireSettings,
    ) -> Result<(WireReplayModel, RequestLog), ReplaySetupError> {
        let calls = recorded_calls(run)?;
        let started = run.started();
        let malformed = |problem: String| {
            ReplaySetupError::Recording(ReplayError::Malformed {
                run_id: run.run_id.clone(),
                line: run.events.first().map_or(0, |(line, _)| *line),
                problem,
            })
        };
        let api_name = started.and_then(|e| e.api.as_deref()).unwrap_or_default();
        let api = Api::parse(api_name).ok_or_else(|| {
            malformed(format!(
                "run_started has api {api_name:?}, which this version cannot replay (known: {})",
                Api::ALL.map(Api::as_str).join(", ")
            ))
        })?;
        let model = started.and_then(|e| e.model.as_ref()).ok_or_else(|| {
            malformed("run_started has an api but no model to replay it with".to_owned())
        })?;
        let mut config = LiveConfig::new(api, "http://recording.invalid", model.name.clone());
        config.system = settings.system.clone();
        config.temperature = settings.temperature;
        config.max_output_tokens = settings.max_output_tokens;
        config.max_retries = 0;
        config.retry_base_delay = Duration::ZERO;
        let log = RequestLog::default();
        let remaining = Arc::new(Mutex::new(VecDeque::from(calls)));
        let transport = RecordedWire {
            remaining: Arc::clone(&remaining),
            summarizer: recording.summarizer().clone(),
            log: Arc::clone(&log),
        };
        let inner = LiveModel::with_transport(config, settings.tools.clone(), Box::new(transport))
            .with_summarizer(recording.summarizer().clone());
        let failure = recording.ending().and_then(|ending| {
            let kind = ProviderErrorKind::parse(ending.error_kind.as_deref()?)?;
            let message = ending.error.clone().unwrap_or_default();
            Some((
                u64::from(ending.steps_used?),
                ProviderError::new(kind, message),
            ))
        });
        let identity = LiveIdentity {
            api: api.as_str().to_owned(),
            provider: model
                .provider
                .clone()
                .unwrap_or_else(|| "recording".to_owned()),
            model: model.name.clone(),
        };
        Ok((
            WireReplayModel {
                inner,
                remaining,
                identity,
                failure,
                last_step: recording.last_step(),
                turns: 0,
            },
            log,
        ))
    }
}

impl Model for WireReplayModel {
    fn next_action(&mut self, task: &Task, history: &[HistoryItem]) -> Result<Action, ModelError> {
        self.inner.next_action(task, history)
    }

    /// The next recorded response, read by today's adapter; past the recorded responses, the
    /// provider failure the recording ended with at that step, else the end of the recording.
    fn next_turn(
        &mut self,
        task: &Task,
        history: &[HistoryItem],
    ) -> Result<Vec<TurnItem>, ModelError> {
        self.turns += 1;
        let has_response = !lock(&self.remaining).is_empty();
        if has_response {
            return self.inner.next_turn(task, history);
        }
        match &self.failure {
            Some((step, error)) if *step == self.turns => Err(ModelError::Provider(error.clone())),
            _ => Err(ModelError::Failure(end_of_recording(
                usize::try_from(self.last_step).unwrap_or(usize::MAX),
            ))),
        }
    }

    fn take_call_record(&mut self) -> CallRecord {
        self.inner.take_call_record()
    }

    fn live_identity(&self) -> Option<LiveIdentity> {
        Some(self.identity.clone())
    }
}

/// The recording as a model server: each request gets the next recorded response body.
struct RecordedWire {
    remaining: Arc<Mutex<VecDeque<RecordedCall>>>,
    summarizer: Summarizer,
    log: RequestLog,
}

impl Transport for RecordedWire {
    fn post(
        &mut self,
        _url: &str,
        _headers: &[(&'static str, String)],
        body: &str,
    ) -> Result<HttpReply, TransportError> {
        let Some(call) = lock(&self.remaining).pop_front() else {
            return Err(TransportError::Connection(
                "the recording has no response for this request".to_owned(),
            ));
        };
        let actual = self.summarizer.digest(body.as_bytes());
        if let Some(recorded) = &call.request_hash
            && *recorded != actual
        {
            let mut divergence =
                Divergence::new(call.step, DivergenceKind::Request, recorded, actual);
            if let Some(recorded_body) = &call.request_body {
                let parse = |text: &str| serde_json::from_str::<Value>(text).ok();
                if let (Some(before), Some(after)) = (parse(recorded_body), parse(body))
                    && let Some(found) = first_difference(&before, &after)
                {
                    divergence.path = Some(found.path);
                    divergence.recorded_text = Some(found.recorded);
                    divergence.actual_text = Some(found.actual);
                }
            }
            lock(&self.log).push(divergence);
        }
        Ok(HttpReply {
            location: None,
            status: 200,
            retry_after: None,
            body: call.response,
        })
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The first event of every turn, which carries the call's record; each needs `raw_response`.
fn recorded_calls(run: &RecordedRun) -> Result<Vec<RecordedCall>, ReplaySetupError> {
    let mut calls: Vec<RecordedCall> = Vec::new();
    for (line, event) in &run.events {
        let call = match &event.kind {
            EventKind::ModelAction(action) => &action.call,
            EventKind::ModelFeedback(feedback) => &feedback.call,
            _ => continue,
        };
        if calls
            .last()
            .is_some_and(|recorded| recorded.step == event.step)
        {
            continue;
        }
        let Some(response) = call.raw_response.clone() else {
            return Err(ReplaySetupError::Recording(ReplayError::MissingContent {
                run_id: run.run_id.clone(),
                line: *line,
                event_type: event.event_type().to_owned(),
                step: event.step,
                field: "raw_response",
            }));
        };
        calls.push(RecordedCall {
            step: event.step,
            request_hash: call.request_hash.clone(),
            request_body: call.request_body.clone(),
            response,
        });
    }
    Ok(calls)
}

/// Where two JSON documents first differ, with the value on each side (`absent` where one has
/// nothing at that path).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsonDifference {
    /// `$.messages[2].content`.
    pub path: String,
    /// The first document's value there, as JSON.
    pub recorded: String,
    /// The second document's value there, as JSON.
    pub actual: String,
}

/// The first path, in document order with object keys sorted, where `recorded` and `actual`
/// differ; `None` when they are equal.
pub fn first_difference(recorded: &Value, actual: &Value) -> Option<JsonDifference> {
    let mut path = String::from("$");
    walk(Some(recorded), Some(actual), &mut path)
}

fn walk(
    recorded: Option<&Value>,
    actual: Option<&Value>,
    path: &mut String,
) -> Option<JsonDifference> {
    match (recorded, actual) {
        (Some(Value::Object(a)), Some(Value::Object(b))) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort_unstable();
            keys.dedup();
            for key in keys {
                let len = path.len();
                push_key(path, key);
                let found = walk(a.get(key), b.get(key), path);
                if found.is_some() {
                    return found;
                }
                path.truncate(len);
            }
            None
        }
        (Some(Value::Array(a)), Some(Value::Array(b))) => {
            for index in 0..a.len().max(b.len()) {
                let len = path.len();
                path.push_str(&format!("[{index}]"));
                let found = walk(a.get(index), b.get(index), path);
                if found.is_some() {
                    return found;
                }
                path.truncate(len);
            }
            None
        }
        (a, b) if a == b => None,
        (a, b) => {
            let shown = |value: Option<&Value>| value.map_or("absent".to_owned(), Value::to_string);
            Some(JsonDifference {
                path: path.clone(),
                recorded: shown(a),
                actual: shown(b),
            })
        }
    }
}

/// `.key` for plain names, `["key"]` for anything else.
fn push_key(path: &mut String, key: &str) {
    let plain = key
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain {
        path.push('.');
        path.push_str(key);
    } else {
        path.push('[');
        path.push_str(&Value::String(key.to_owned()).to_string());
        path.push(']');
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_first_difference_names_its_path_and_both_values() {
        let recorded = json!({"model": "m", "messages": [{"role": "system", "content": "A"}, {"role": "user"}]});
        let actual = json!({"model": "m", "messages": [{"role": "system", "content": "B"}, {"role": "user"}]});
        assert_eq!(
            first_difference(&recorded, &actual),
            Some(JsonDifference {
                path: "$.messages[0].content".to_owned(),
                recorded: "\"A\"".to_owned(),
                actual: "\"B\"".to_owned(),
            })
        );
    }

    #[test]
    fn a_missing_element_or_key_is_absent_on_its_side() {
        let recorded = json!({"tools": [1], "x-y": 1});
        let actual = json!({"tools": [1, 2], "x-y": 1});
        let found = first_difference(&recorded, &actual).unwrap();
        assert_eq!(
            (
                found.path.as_str(),
                found.recorded.as_str(),
                found.actual.as_str()
            ),
            ("$.tools[1]", "absent", "2")
        );
        let found = first_difference(&json!({"x-y": 1}), &json!({})).unwrap();
        assert_eq!(found.path, "$[\"x-y\"]");
        assert_eq!(first_difference(&recorded, &recorded), None);
    }
}
