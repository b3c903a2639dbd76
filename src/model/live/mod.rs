//! Live model servers. [`LiveModel`] keeps the conversation in its wire format, sends it over HTTP
//! (retries and failure classes in [`http`]), and turns each response into the turn's actions; one
//! file per wire format behind [`WireFormat`] says what the JSON looks like. The loop still decides
//! everything: the adapter only proposes.

mod anthropic_messages;
pub mod http;
mod openai_chat;
mod openai_responses;

use std::fmt;
use std::time::Duration;

use serde_json::{Map, Value};

use self::http::{RetryPolicy, Transport, UreqTransport, send_with_retries};
use super::contract::{
    CallRecord, InvalidOutput, InvalidOutputKind, LiveIdentity, Model, ModelError, ProviderError,
    ProviderErrorKind, TurnItem, Usage,
};
use crate::digest::Summarizer;
pub use crate::digest::canonical_json;
use crate::run::{Action, HistoryItem, Task};
use crate::secrets::Redactor;
use crate::tools::ToolSpec;

pub use anthropic_messages::AnthropicMessages;
pub use openai_chat::OpenAiChat;
pub use openai_responses::OpenAiResponses;

/// The system prompt sent when the configuration names none.
pub const DEFAULT_SYSTEM: &str = "Solve the user's task. Call the provided tools when they help. \
When you are done, reply with the final answer as plain text and no tool call.";

/// The wire formats looptrace speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Api {
    /// Chat Completions (`/chat/completions`): OpenAI, vLLM, llama.cpp, Ollama, LM Studio, ...
    OpenAiChat,
    /// Anthropic's Messages API (`/v1/messages`).
    AnthropicMessages,
    /// OpenAI's Responses API (`/responses`): `function_call` output items.
    OpenAiResponses,
}

impl Api {
    /// Every wire format.
    pub const ALL: [Api; 3] = [
        Api::OpenAiChat,
        Api::AnthropicMessages,
        Api::OpenAiResponses,
    ];

    /// The name users write: `openai-chat`, `anthropic-messages` or `openai-responses`.
    pub fn as_str(self) -> &'static str {
        match self {
            Api::OpenAiChat => "openai-chat",
            Api::AnthropicMessages => "anthropic-messages",
            Api::OpenAiResponses => "openai-responses",
        }
    }

    /// Parses a name.
    pub fn parse(name: &str) -> Option<Api> {
        Api::ALL.into_iter().find(|api| api.as_str() == name)
    }

    /// The format's requests and responses, as [`WireFormat`] reads them.
    pub(crate) fn wire(self) -> &'static dyn WireFormat {
        match self {
            Api::OpenAiChat => &OpenAiChat,
            Api::AnthropicMessages => &AnthropicMessages,
            Api::OpenAiResponses => &OpenAiResponses,
        }
    }
}

impl fmt::Display for Api {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Everything a live model needs to talk to its server.
#[derive(Clone)]
pub struct LiveConfig {
    /// The wire format.
    pub api: Api,
    /// `http://127.0.0.1:8080/v1` for `openai-chat` and `openai-responses` (version included), the
    /// host root for `anthropic-messages`.
    pub base_url: String,
    /// The model name sent in every request.
    pub model: String,
    /// The key, read from the environment variable the user named; never written anywhere.
    pub api_key: Option<String>,
    /// Sampling temperature, when set.
    pub temperature: Option<f64>,
    /// The output token limit per call (`anthropic-messages` needs one: 1024 when unset).
    pub max_output_tokens: Option<u32>,
    /// How long one attempt may take.
    pub timeout: Duration,
    /// Attempts after the first, for retryable failures.
    pub max_retries: u32,
    /// How long all attempts and waits of one call may take.
    pub retry_budget: Duration,
    /// The first backoff between attempts (it doubles, with jitter).
    pub retry_base_delay: Duration,
    /// The system prompt ([`DEFAULT_SYSTEM`] when unset).
    pub system: Option<String>,
}

impl LiveConfig {
    /// A configuration with the documented defaults: 120 s per attempt, 4 retries within 300 s.
    pub fn new(api: Api, base_url: impl Into<String>, model: impl Into<String>) -> Self {
        LiveConfig {
            api,
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            temperature: None,
            max_output_tokens: None,
            timeout: Duration::from_secs(120),
            max_retries: 4,
            retry_budget: Duration::from_secs(300),
            retry_base_delay: Duration::from_millis(500),
            system: None,
        }
    }

    fn system(&self) -> &str {
        self.system.as_deref().unwrap_or(DEFAULT_SYSTEM)
    }
}

impl fmt::Debug for LiveConfig {
    /// Never prints the key.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LiveConfig")
            .field("api", &self.api)
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "(set)"))
            .finish_non_exhaustive()
    }
}

/// Reads the key from the variable the user named. No variable named: no key, no auth header.
/// A named variable that is unset or empty is a usage error, found before any request.
pub fn api_key_from_env(var: Option<&str>) -> Result<Option<String>, String> {
    let Some(var) = var else { return Ok(None) };
    // From now on no child process receives this variable.
    crate::secrets::forbid_var(var);
    match std::env::var(var) {
        Ok(key) if !key.is_empty() => Ok(Some(key)),
        Ok(_) => Err(format!("the API key variable `{var}` is empty")),
        Err(std::env::VarError::NotPresent) => {
            Err(format!("the API key variable `{var}` is not set"))
        }
        Err(std::env::VarError::NotUnicode(_)) => {
            Err(format!("the API key variable `{var}` is not valid UTF-8"))
        }
    }
}

/// A tool call's answer on the wire: the observation, or feedback for an invalid call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolResult {
    /// The provider's id of the call.
    pub call_id: String,
    /// What the model reads.
    pub content: String,
    /// Whether it is an error.
    pub is_error: bool,
}

/// A response, read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ParsedTurn {
    /// What to keep in the conversation: the assistant message, or the output items of formats
    /// that answer with several (none for an empty response).
    pub assistant: Vec<Value>,
    /// The turn's actions and rejected calls; empty for an empty response.
    pub items: Vec<TurnItem>,
    /// Tokens used.
    pub usage: Option<Usage>,
    /// Why generation stopped.
    pub finish_reason: Option<String>,
}

/// One wire format: how requests are built and responses read. No I/O here.
pub trait WireFormat: Sync {
    /// The URL requests go to.
    fn endpoint(&self, base_url: &str) -> String;
    /// Auth and version headers.
    fn headers(&self, api_key: Option<&str>) -> Vec<(&'static str, String)>;
    /// The conversation's first message.
    fn task_message(&self, task: &str) -> Value;
    /// The messages answering a turn's tool calls, in order.
    fn tool_results(&self, results: &[ToolResult], messages: &mut Vec<Value>);
    /// Adds feedback that answers no call (an empty response) as a user message.
    fn feedback(&self, text: &str, messages: &mut Vec<Value>);
    /// The request body.
    fn request(&self, config: &LiveConfig, messages: &[Value], tools: &[ToolSpec]) -> Value;
    /// The request body's key whose array holds the conversation (`messages`, `input`).
    fn conversation_key(&self) -> &'static str;
    /// Reads a success body; an envelope that is not the format's is a provider failure.
    fn parse(&self, body: &Value) -> Result<ParsedTurn, ProviderError>;
}

/// A model behind an HTTP server, speaking one wire format.
pub struct LiveModel {
    config: LiveConfig,
    tools: Vec<ToolSpec>,
    transport: Box<dyn Transport>,
    summarizer: Summarizer,
    /// The request body, built on the first turn; the conversation grows inside it, so a turn
    /// copies nothing it already sent.
    body: Option<Value>,
    /// The call ids of the last turn's items, in order, to answer them on the wire.
    pending: Vec<Option<String>>,
    /// How much of the loop's history is already in the conversation.
    consumed: usize,
    record: CallRecord,
    /// Takes the key out of every body and message, in any form a server echoes it.
    redactor: Redactor,
}

impl LiveModel {
    /// A model that talks to `config.base_url` over HTTP, offering these tools.
    pub fn new(config: LiveConfig, tools: Vec<ToolSpec>) -> Self {
        let transport = Box::new(UreqTransport::new(config.timeout));
        LiveModel::with_transport(config, tools, transport)
    }

    /// A model that sends its requests through `transport` (offline replay, tests).
    pub fn with_transport(
        config: LiveConfig,
        tools: Vec<ToolSpec>,
        transport: Box<dyn Transport>,
    ) -> Self {
        let redactor = Redactor::new(config.api_key.as_deref());
        LiveModel {
            config,
            tools,
            transport,
            redactor,
            summarizer: Summarizer::from_env(),
            body: None,
            pending: Vec::new(),
            consumed: 0,
            record: CallRecord::default(),
        }
    }

    /// Hashes request bodies with this summarizer instead of the environment's.
    pub fn with_summarizer(mut self, summarizer: Summarizer) -> Self {
        self.summarizer = summarizer;
        self
    }

    /// The body the next request would carry after this history, without sending it.
    pub fn next_request(
        &mut self,
        task: &Task,
        history: &[HistoryItem],
    ) -> Result<Value, ModelError> {
        self.absorb(task, history)?;
        Ok(self.body.clone().unwrap_or(Value::Null))
    }

    /// The conversation inside the request body, which is built with the task message first.
    fn conversation(&mut self, task: &Task) -> Result<&mut Vec<Value>, ModelError> {
        let wire = self.config.api.wire();
        let body = self.body.get_or_insert_with(|| {
            wire.request(
                &self.config,
                &[wire.task_message(&task.prompt)],
                &self.tools,
            )
        });
        body[wire.conversation_key()].as_array_mut().ok_or_else(|| {
            ModelError::Failure(format!(
                "the {} request has no `{}` array",
                self.config.api,
                wire.conversation_key()
            ))
        })
    }

    /// Adds the history since the last turn to the conversation, answering each call by its id.
    fn absorb(&mut self, task: &Task, history: &[HistoryItem]) -> Result<(), ModelError> {
        let wire = self.config.api.wire();
        let Some(new) = history.get(self.consumed..) else {
            return Err(ModelError::Failure(
                "the history is shorter than the conversation sent so far".to_owned(),
            ));
        };
        let mut ids = std::mem::take(&mut self.pending).into_iter();
        let mut results = Vec::new();
        let mut feedback = Vec::new();
        let mut items = new.iter();
        while let Some(item) = items.next() {
            let call_id = ids.next().flatten();
            let (content, is_error) = match item {
                HistoryItem::ToolCall(_) => match items.next() {
                    Some(HistoryItem::Observation(observation)) => {
                        (observation.content.clone(), observation.is_error)
                    }
                    _ => {
                        return Err(ModelError::Failure(
                            "a tool call in the history has no observation after it".to_owned(),
                        ));
                    }
                },
                HistoryItem::ModelFeedback(item) => (item.content.clone(), true),
                // A finish is its turn's only item and has no call id: a user message answers it.
                HistoryItem::FinishRejected(rejection) => (rejection.feedback.clone(), true),
                HistoryItem::Observation(_) => {
                    return Err(ModelError::Failure(
                        "an observation in the history follows no tool call".to_owned(),
                    ));
                }
            };
            match call_id {
                Some(call_id) => results.push(ToolResult {
                    call_id,
                    content,
                    is_error,
                }),
                None => feedback.push(content),
            }
        }
        let messages = self.conversation(task)?;
        wire.tool_results(&results, messages);
        for text in feedback {
            wire.feedback(&text, messages);
        }
        self.consumed = history.len();
        Ok(())
    }
}

impl Model for LiveModel {
    /// One action per turn, for callers that do not run multi-call turns; the loop uses
    /// [`Model::next_turn`].
    fn next_action(&mut self, task: &Task, history: &[HistoryItem]) -> Result<Action, ModelError> {
        let mut items = self.next_turn(task, history)?;
        match (items.pop(), items.is_empty()) {
            (Some(TurnItem::Action { action, .. }), true) => Ok(action),
            (Some(TurnItem::Invalid { error, .. }), true) => Err(error.into()),
            _ => Err(ModelError::Failure(
                "the model proposed several tool calls in one turn".to_owned(),
            )),
        }
    }

    fn next_turn(
        &mut self,
        task: &Task,
        history: &[HistoryItem],
    ) -> Result<Vec<TurnItem>, ModelError> {
        self.record = CallRecord::default();
        self.absorb(task, history)?;
        let wire = self.config.api.wire();
        let body = canonical_json(self.body.as_ref().unwrap_or(&Value::Null));
        self.record.request_hash = Some(self.summarizer.digest(body.as_bytes()));
        let policy = RetryPolicy {
            max_retries: self.config.max_retries,
            budget: self.config.retry_budget,
            base_delay: self.config.retry_base_delay,
        };
        let url = wire.endpoint(&self.config.base_url);
        let headers = wire.headers(self.config.api_key.as_deref());
        let reply = send_with_retries(
            self.transport.as_mut(),
            &url,
            &headers,
            &body,
            &policy,
            &self.redactor,
            &mut self.record.retries,
        );
        self.record.request_body = Some(body);
        let reply = reply?;
        let parsed = serde_json::from_str::<Value>(&reply)
            .map_err(|err| {
                ProviderError::new(
                    ProviderErrorKind::BadResponse,
                    format!("the response body is not JSON: {err}"),
                )
            })
            .and_then(|value| wire.parse(&value));
        self.record.raw_response = Some(reply);
        let parsed = parsed?;
        self.record.usage = parsed.usage;
        self.record.finish_reason = parsed.finish_reason;
        self.conversation(task)?.extend(parsed.assistant);
        if parsed.items.is_empty() {
            self.pending = vec![None];
            return Err(InvalidOutput::new(
                InvalidOutputKind::MissingField,
                "the response has neither text nor a tool call",
            )
            .into());
        }
        self.pending = parsed
            .items
            .iter()
            .map(|item| match item {
                TurnItem::Action { call_id, .. } | TurnItem::Invalid { call_id, .. } => {
                    call_id.clone()
                }
            })
            .collect();
        Ok(parsed.items)
    }

    fn take_call_record(&mut self) -> CallRecord {
        std::mem::take(&mut self.record)
    }

    fn live_identity(&self) -> Option<LiveIdentity> {
        Some(LiveIdentity {
            api: self.config.api.as_str().to_owned(),
            provider: provider_of(&self.config.base_url),
            model: self.config.model.clone(),
        })
    }
}

/// The host and port of a URL: no scheme, credentials, path or query.
pub fn provider_of(base_url: &str) -> String {
    let rest = base_url
        .split_once("://")
        .map_or(base_url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host)
        .to_owned()
}

/// Adds the offered tools (none: no `tools` key), each in the format's shape, the temperature, and
/// the output limit under the format's key when it is optional there.
fn add_tools_and_sampling(
    body: &mut Value,
    config: &LiveConfig,
    tools: &[ToolSpec],
    tool: impl Fn(&ToolSpec) -> Value,
    max_output_key: Option<&str>,
) {
    if !tools.is_empty() {
        body["tools"] = Value::Array(tools.iter().map(tool).collect());
    }
    if let Some(temperature) = config.temperature {
        body["temperature"] = serde_json::json!(temperature);
    }
    if let (Some(key), Some(max)) = (max_output_key, config.max_output_tokens) {
        body[key] = serde_json::json!(max);
    }
}

/// An object from pairs, for building bodies tersely.
fn object<const N: usize>(pairs: [(&str, Value); N]) -> Value {
    Value::Object(
        pairs
            .into_iter()
            .map(|(key, value)| (key.to_owned(), value))
            .collect::<Map<String, Value>>(),
    )
}

/// A tool call's arguments: a JSON object, or the reason it is not one.
fn arguments_object(value: Value, call: &str) -> Result<Map<String, Value>, InvalidOutput> {
    match value {
        Value::Object(arguments) => Ok(arguments),
        other => Err(InvalidOutput::new(
            InvalidOutputKind::NotAnObject,
            format!(
                "the arguments of {call} must be a JSON object, got {}",
                super::json_type_name(&other)
            ),
        )),
    }
}

/// A non-negative integer field of a usage object.
fn count(usage: &Value, path: &[&str]) -> Option<u64> {
    path.iter()
        .try_fold(usage, |value, key| value.get(key))
        .and_then(Value::as_u64)
}

fn bad_response(message: impl Into<String>) -> ProviderError {
    ProviderError::new(ProviderErrorKind::BadResponse, message)
}
