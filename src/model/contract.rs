//! The `Model` and `RawModel` traits and the two ways a model can fail.

use std::fmt;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::run::{Action, HistoryItem, Task};

/// Anything that proposes the next action from the task and the history so far.
pub trait Model {
    /// The next action, an invalid-output error (shown to the model as feedback), or a failure.
    fn next_action(&mut self, task: &Task, history: &[HistoryItem]) -> Result<Action, ModelError>;

    /// The raw text behind the last answer, for models that read provider text. Traces keep it
    /// only with full capture, so adapter changes can be replayed.
    fn last_raw_output(&self) -> Option<&str> {
        None
    }

    /// The whole next turn: every tool call of one response, in order, each with its provider call
    /// id. Models that propose one action per turn keep this default.
    fn next_turn(
        &mut self,
        task: &Task,
        history: &[HistoryItem],
    ) -> Result<Vec<TurnItem>, ModelError> {
        let action = self.next_action(task, history)?;
        Ok(vec![TurnItem::Action {
            call_id: None,
            action,
        }])
    }

    /// What the last call to the provider cost and left behind (usage, request hash, response
    /// body, retried attempts). Taken once per turn by the loop; models without a wire keep none.
    fn take_call_record(&mut self) -> CallRecord {
        CallRecord::default()
    }

    /// The wire format and model name of a live model, for `run_started`.
    fn live_identity(&self) -> Option<LiveIdentity> {
        None
    }
}

/// One entry of a model turn: a valid action, or a tool call the adapter rejected.
#[derive(Clone, Debug, PartialEq)]
pub enum TurnItem {
    /// A valid action (a finish is always a turn's only item).
    Action {
        /// The provider's id for the call, when it gives one.
        call_id: Option<String>,
        /// The action.
        action: Action,
    },
    /// A tool call with malformed arguments or an unknown shape; it is answered with feedback.
    Invalid {
        /// The provider's id for the call, when it gives one.
        call_id: Option<String>,
        /// What is wrong with it.
        error: InvalidOutput,
    },
}

/// Token counts of one model call, as the provider reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// Generated tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// Prompt tokens read from the provider's cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_tokens: Option<u64>,
    /// Prompt tokens written to the provider's cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u64>,
    /// Reasoning tokens (counted within the output tokens by the providers that report them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
}

impl Usage {
    /// Input plus output tokens: what a token budget counts.
    pub fn total(&self) -> u64 {
        self.input_tokens.unwrap_or(0) + self.output_tokens.unwrap_or(0)
    }

    /// Adds another call's counts; a count neither reports stays absent.
    pub fn add(&mut self, other: &Usage) {
        let sum = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
        };
        self.input_tokens = sum(self.input_tokens, other.input_tokens);
        self.output_tokens = sum(self.output_tokens, other.output_tokens);
        self.cache_read_tokens = sum(self.cache_read_tokens, other.cache_read_tokens);
        self.cache_write_tokens = sum(self.cache_write_tokens, other.cache_write_tokens);
        self.reasoning_tokens = sum(self.reasoning_tokens, other.reasoning_tokens);
    }
}

/// A failed attempt at a model call that was retried.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetriedAttempt {
    /// The attempt that failed, from 1.
    pub attempt: u32,
    /// `rate_limited`, `provider_unavailable`, `timeout` or `connection_failed`.
    pub error_kind: String,
    /// The HTTP status, when the server answered.
    pub http_status: Option<u16>,
    /// How long the loop waited before the next attempt.
    pub wait_ms: u64,
}

/// What one model turn left behind besides its actions.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CallRecord {
    /// Tokens used by the call that answered.
    pub usage: Option<Usage>,
    /// The hash of the request body in canonical JSON (`sha256=HEX` or `hmac-sha256=HEX`).
    pub request_hash: Option<String>,
    /// The request body as sent (canonical JSON), written to traces with full capture only.
    pub request_body: Option<String>,
    /// The response body, written to traces with full capture only.
    pub raw_response: Option<String>,
    /// Why the provider stopped generating (`stop`, `length`, `tool_calls`, `end_turn`, ...).
    pub finish_reason: Option<String>,
    /// The attempts that failed and were retried, in order.
    pub retries: Vec<RetriedAttempt>,
}

/// Which wire format and model a live run talked to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveIdentity {
    /// The wire format: `openai-chat`, `anthropic-messages` or `openai-responses`.
    pub api: String,
    /// Where the server is: the base URL's host and port, never credentials or paths.
    pub provider: String,
    /// The model name sent in every request.
    pub model: String,
}

/// A model that answers with provider text, to be parsed by an adapter.
pub trait RawModel {
    /// The raw response text for this turn, or a failure.
    fn next_response(&mut self, task: &Task, history: &[HistoryItem])
    -> Result<String, ModelError>;
}

/// Why a model gave no action.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ModelError {
    /// The model answered, but not with a valid action. Recoverable while budget remains.
    #[error(transparent)]
    InvalidOutput(#[from] InvalidOutput),
    /// The model could not answer at all (a broken connection, an exhausted script). Internal.
    #[error("{0}")]
    Failure(String),
    /// A model server failed in a classified way (rate limits, outages, auth, context length).
    #[error(transparent)]
    Provider(#[from] ProviderError),
}

/// A classified failure of a model server. Never a finish, never invalid model output.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("{message}")]
pub struct ProviderError {
    /// The class of failure.
    pub kind: ProviderErrorKind,
    /// What happened, with the HTTP status; never contains the API key.
    pub message: String,
}

/// The classes of model-server failure (see `docs/models.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProviderErrorKind {
    /// 429 on every attempt within the retry limits.
    RateLimited,
    /// 5xx, 529, timeouts or refused connections on every attempt within the retry limits.
    ProviderUnavailable,
    /// 401 or 403: the key is missing, wrong or not allowed.
    AuthFailed,
    /// The account's quota or spend limit is exhausted.
    QuotaExceeded,
    /// The request no longer fits the model's context window: a budget, not a bug.
    ContextLengthExceeded,
    /// Another 4xx: the server refused the request as sent.
    RequestRejected,
    /// A success status with a body that is not the wire format's response.
    BadResponse,
}

impl ProviderErrorKind {
    /// Every class.
    pub const ALL: [ProviderErrorKind; 7] = [
        ProviderErrorKind::RateLimited,
        ProviderErrorKind::ProviderUnavailable,
        ProviderErrorKind::AuthFailed,
        ProviderErrorKind::QuotaExceeded,
        ProviderErrorKind::ContextLengthExceeded,
        ProviderErrorKind::RequestRejected,
        ProviderErrorKind::BadResponse,
    ];

    /// Parses the snake_case name.
    pub fn parse(name: &str) -> Option<ProviderErrorKind> {
        ProviderErrorKind::ALL
            .into_iter()
            .find(|kind| kind.as_str() == name)
    }

    /// The snake_case name used as `error_kind` in traces.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderErrorKind::RateLimited => "rate_limited",
            ProviderErrorKind::ProviderUnavailable => "provider_unavailable",
            ProviderErrorKind::AuthFailed => "auth_failed",
            ProviderErrorKind::QuotaExceeded => "quota_exceeded",
            ProviderErrorKind::ContextLengthExceeded => "context_length_exceeded",
            ProviderErrorKind::RequestRejected => "request_rejected",
            ProviderErrorKind::BadResponse => "bad_response",
        }
    }
}

impl ProviderError {
    /// A provider error of this kind.
    pub fn new(kind: ProviderErrorKind, message: impl Into<String>) -> Self {
        ProviderError {
            kind,
            message: message.into(),
        }
    }
}

/// Output the adapter rejected, with a stable kind for reports.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("{message}")]
pub struct InvalidOutput {
    /// Which rule the output broke.
    pub kind: InvalidOutputKind,
    /// What is wrong, naming the field or the offending value; shown to the model.
    pub message: String,
}

impl InvalidOutput {
    /// An invalid-output error of this kind.
    pub fn new(kind: InvalidOutputKind, message: impl Into<String>) -> Self {
        InvalidOutput {
            kind,
            message: message.into(),
        }
    }
}

/// The rules a model's raw output can break, as snake_case names in traces and reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InvalidOutputKind {
    /// Not JSON at all.
    InvalidJson,
    /// JSON, but not an object.
    NotAnObject,
    /// `type` is neither `tool_call` nor `finish`.
    UnknownActionType,
    /// A required field is absent.
    MissingField,
    /// A field that the action type does not have.
    UnexpectedField,
    /// A field of the wrong JSON type.
    WrongFieldType,
}

impl InvalidOutputKind {
    /// Every kind.
    pub const ALL: [InvalidOutputKind; 6] = [
        InvalidOutputKind::InvalidJson,
        InvalidOutputKind::NotAnObject,
        InvalidOutputKind::UnknownActionType,
        InvalidOutputKind::MissingField,
        InvalidOutputKind::UnexpectedField,
        InvalidOutputKind::WrongFieldType,
    ];

    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            InvalidOutputKind::InvalidJson => "invalid_json",
            InvalidOutputKind::NotAnObject => "not_an_object",
            InvalidOutputKind::UnknownActionType => "unknown_action_type",
            InvalidOutputKind::MissingField => "missing_field",
            InvalidOutputKind::UnexpectedField => "unexpected_field",
            InvalidOutputKind::WrongFieldType => "wrong_field_type",
        }
    }

    /// Parses the snake_case name.
    pub fn parse(name: &str) -> Option<InvalidOutputKind> {
        InvalidOutputKind::ALL
            .into_iter()
            .find(|k| k.as_str() == name)
    }
}

impl fmt::Display for InvalidOutputKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
