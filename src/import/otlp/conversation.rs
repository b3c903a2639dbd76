//! Runs traced only at the model client (`opentelemetry-instrumentation-openai-v2`,
//! `openinference-instrumentation-openai`): no agent span, every request a trace of its own. One
//! conversation's requests are grouped into one run: a request continues the conversation when
//! the one before it asked for tools (and, where content was captured, sent more messages than
//! the one before). The client sees no ending, so the run's ending is inferred from the last
//! request: an answer is `finished` (inferred), an error a model failure, a request for tools
//! that nobody followed up `incomplete`.

use std::collections::HashMap;

use serde_json::Value;

use super::span::Span;
use crate::import::run::{Ending, ImportedRun, Item, arguments_of};
use crate::trace::Usage;

/// The model requests of one conversation so far.
pub struct Conversation {
    trace_id: String,
    chats: Vec<Span>,
}

impl Conversation {
    /// A conversation opened by `chat`, the root span of trace `trace_id`.
    pub fn new(trace_id: String, chat: Span) -> Self {
        Conversation {
            trace_id,
            chats: vec![chat],
        }
    }

    /// Whether `chat` is the next request of this conversation.
    pub fn continues_with(&self, chat: &Span) -> bool {
        let Some(last) = self.chats.last() else {
            return false;
        };
        let longer = match (last.input_message_count(), chat.input_message_count()) {
            (Some(before), Some(now)) => now > before,
            _ => true,
        };
        !self.ended() && longer && last.service == chat.service && chat.start >= last.start
    }

    /// Adds the next request.
    pub fn push(&mut self, chat: Span) {
        self.chats.push(chat);
    }

    /// Whether the last request ended the conversation (an answer or an error).
    pub fn ended(&self) -> bool {
        self.chats
            .last()
            .is_none_or(|last| last.error || !last.asked_for_tools())
    }

    /// The trace id of the conversation's first request.
    pub fn trace_id(&self) -> &str {
        &self.trace_id
    }

    /// The conversation as a run with id `run_id`.
    pub fn into_run(self, run_id: String) -> ImportedRun {
        let mut run = ImportedRun::new(run_id);
        run.native_id = Some(self.trace_id);
        run.tool_errors_recorded = false;
        run.started_ts = self.chats.first().and_then(Span::start_ts);
        run.finished_ts = self.chats.last().and_then(Span::end_ts);
        let mut names: HashMap<String, String> = HashMap::new();
        let mut usage: Option<Usage> = None;
        for chat in &self.chats {
            for (id, content) in chat.trailing_tool_results() {
                let name = id
                    .as_ref()
                    .and_then(|id| names.get(id))
                    .map_or("unknown", String::as_str);
                run.push(Item::Observation {
                    tool_name: name.to_owned(),
                    content,
                    is_error: None,
                    error_kind: None,
                });
                run.stamp(chat.start_ts());
            }
            run.turn();
            if run.task.is_none() {
                run.task = chat.user_text();
            }
            if run.model.is_none() {
                run.model = chat.model().map(str::to_owned);
            }
            for (name, arguments, id) in chat.requested_calls() {
                if let Some(id) = &id {
                    names.insert(id.clone(), name.clone());
                }
                run.call(
                    &name,
                    arguments_of(Some(&Value::String(arguments)), "arguments"),
                    id,
                );
                run.stamp(chat.end_ts());
            }
            usage = super::add_usage(usage, chat.usage());
        }
        run.usage = usage;
        run.ending = self.chats.last().and_then(|last| {
            if last.error {
                let native = last
                    .exceptions
                    .iter()
                    .find_map(|e| e.kind.as_deref())
                    .or(last.status_message.as_deref())
                    .or(last.str("error.type"))
                    .unwrap_or("error");
                let native = native.rsplit('.').next().unwrap_or(native);
                return Some(Ending::internal("model_failure").native(native));
            }
            if last.asked_for_tools() {
                return None;
            }
            let answer = last.answer_text().unwrap_or_default();
            run.push(Item::Finish { answer });
            run.stamp(last.end_ts());
            Some(Ending::inferred_finish())
        });
        run
    }
}
