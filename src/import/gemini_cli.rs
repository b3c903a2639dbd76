//! Gemini CLI chat recordings: one JSON document per chat (`session-*.json`), or the JSONL
//! session of later versions (a metadata line with `kind`, then each message every time it
//! changes, `$set` metadata patches and `$rewindTo` records), read back as Gemini CLI itself
//! reads it. One run per user message. No ending is recorded: a run whose last message is a
//! model answer without tool calls is `finished` (inferred), with that answer; `info: "Request
//! cancelled."` leaves the run incomplete.

use std::collections::HashMap;
use std::io::BufRead;

use serde_json::Value;

use super::error::ImportError;
use super::importer::{
    Context, Imported, Importer, Sink, first_byte, head_text, parse_document, read_bytes, str_at,
    text_of,
};
use super::run::{Ending, ImportedRun, Item, arguments_of};

/// The `info` message Gemini CLI records when the user cancels a request.
const CANCELLED: &str = "Request cancelled.";

/// `--from gemini-cli`.
pub struct GeminiCli;

impl Importer for GeminiCli {
    fn name(&self) -> &'static str {
        "gemini-cli"
    }

    fn probe(&self, _name: &str, head: &[u8]) -> u8 {
        let text = head_text(head);
        if first_byte(head) == Some(b'{')
            && text.contains("\"sessionId\"")
            && text.contains("\"projectHash\"")
        {
            90
        } else {
            0
        }
    }

    fn import(
        &self,
        input: &mut dyn BufRead,
        context: &Context,
        out: &mut Sink<'_>,
    ) -> Result<(), ImportError> {
        let bytes = read_bytes(input, context)?;
        let (session, messages) = if is_jsonl(&bytes) {
            read_jsonl(&bytes, context)?
        } else {
            let document = parse_document(&bytes, context, "")?;
            let session = str_at(&document, "sessionId").map(str::to_owned);
            let messages = document
                .get("messages")
                .and_then(Value::as_array)
                .ok_or_else(|| context.malformed("$.messages", "expected an array"))?
                .clone();
            (session, messages)
        };
        let session = session.unwrap_or_else(|| context.name.clone());
        let mut current: Option<Prompt> = None;
        let mut prompts = 0usize;
        for message in &messages {
            match str_at(message, "type") {
                Some("user") => {
                    if let Some(done) = current.take() {
                        out(Imported::Run(done.finish()))?;
                    }
                    prompts += 1;
                    let mut run = ImportedRun::new(format!("{session}/prompt-{prompts}"));
                    run.native_id = str_at(message, "id").map(str::to_owned);
                    run.task = Some(text_of(message.get("content")));
                    run.agent = Some("gemini-cli".to_owned());
                    current = Some(Prompt {
                        run,
                        answer: None,
                        cancelled: false,
                    });
                }
                Some("gemini") => {
                    if let Some(prompt) = current.as_mut() {
                        prompt.model_turn(message);
                    }
                }
                Some("error") => {
                    if let Some(prompt) = current.as_mut() {
                        prompt.run.ending = Some(Ending::internal("model_failure").native("error"));
                    }
                }
                Some("info") if text_of(message.get("content")).trim() == CANCELLED => {
                    if let Some(prompt) = current.as_mut() {
                        prompt.cancelled = true;
                    }
                }
                _ => {}
            }
        }
        if let Some(done) = current.take() {
            out(Imported::Run(done.finish()))?;
        }
        Ok(())
    }
}

/// One prompt being read.
struct Prompt {
    run: ImportedRun,
    /// The text of the last model message, when it called no tool.
    answer: Option<String>,
    cancelled: bool,
}

impl Prompt {
    fn model_turn(&mut self, message: &Value) {
        let run = &mut self.run;
        run.turn();
        if let Some(model) = str_at(message, "model") {
            run.model = Some(model.to_owned());
        }
        let calls = message.get("toolCalls").and_then(Value::as_array);
        self.answer = calls
            .is_none_or(Vec::is_empty)
            .then(|| text_of(message.get("content")));
        for call in calls.into_iter().flatten() {
            let name = str_at(call, "name").unwrap_or("unknown");
            let id = str_at(call, "id").map(str::to_owned);
            run.call(name, arguments_of(call.get("args"), "args"), id);
            let status = str_at(call, "status");
            if status.is_some() || call.get("result").is_some() {
                let output = output_of(call);
                let failed =
                    status != Some("success") || exit_code(&output).is_some_and(|c| c != 0);
                run.result(name, output, Some(failed));
            }
        }
    }

    fn finish(mut self) -> ImportedRun {
        if self.run.ending.is_none()
            && !self.cancelled
            && let Some(answer) = self.answer
        {
            self.run.push(Item::Finish { answer });
            self.run.ending = Some(Ending::inferred_finish());
        }
        self.run
    }
}

/// A tool's output as the model read it: the `output` (or `error`) of its `functionResponse`
/// parts, else the text it showed the user, else the result as JSON.
fn output_of(call: &Value) -> String {
    let parts = call.get("result").and_then(Value::as_array);
    let texts: Vec<String> = parts
        .into_iter()
        .flatten()
        .filter_map(|part| {
            let response = part.pointer("/functionResponse/response")?;
            match response.get("output").or_else(|| response.get("error")) {
                Some(Value::String(text)) => Some(text.clone()),
                Some(other) => Some(other.to_string()),
                None => Some(response.to_string()),
            }
        })
        .collect();
    if !texts.is_empty() {
        return texts.join("\n");
    }
    match (call.get("resultDisplay"), call.get("result")) {
        (Some(Value::String(text)), _) => text.clone(),
        (_, None | Some(Value::Null)) => String::new(),
        (_, Some(result)) => result.to_string(),
    }
}

/// The `Exit Code: N` line of a shell tool's output.
fn exit_code(output: &str) -> Option<i64> {
    output
        .lines()
        .find_map(|line| line.strip_prefix("Exit Code: "))
        .and_then(|code| code.trim().parse().ok())
}

/// Whether the input is the JSONL session: its first line is a whole JSON object.
fn is_jsonl(bytes: &[u8]) -> bool {
    let first = bytes.split(|b| *b == b'\n').next().unwrap_or_default();
    serde_json::from_slice::<Value>(first).is_ok_and(|value| value.is_object())
        && bytes[first.len()..]
            .iter()
            .any(|b| !b.is_ascii_whitespace())
}

/// The session id and messages of a JSONL session, as Gemini CLI reads it back: a message line
/// replaces the earlier record of the same id in place, `$rewindTo` drops that message and all
/// after it, `$set.messages` replaces them all, other lines are metadata.
fn read_jsonl(
    bytes: &[u8],
    context: &Context,
) -> Result<(Option<String>, Vec<Value>), ImportError> {
    let mut session: Option<String> = None;
    let mut messages: Vec<Value> = Vec::new();
    // Where each message id sits in `messages`.
    let mut places: HashMap<String, usize> = HashMap::new();
    for (index, line) in bytes.split(|b| *b == b'\n').enumerate() {
        let text = line.trim_ascii();
        if text.is_empty() {
            continue;
        }
        let at = || format!("line {}", index + 1);
        let record: Value = serde_json::from_slice(text)
            .map_err(|err| context.malformed(at(), format!("invalid JSON: {err}")))?;
        if !record.is_object() {
            return Err(context.malformed(at(), "expected a JSON object"));
        }
        if let Some(target) = str_at(&record, "$rewindTo") {
            let at = places.get(target).copied().unwrap_or(0);
            let kept = messages[..at].to_vec();
            replace_all(&kept, &mut messages, &mut places);
        } else if str_at(&record, "id").is_some() {
            keep(record, &mut messages, &mut places);
        } else if let Some(set) = record.get("$set") {
            if let Some(all) = set.get("messages").and_then(Value::as_array) {
                replace_all(all, &mut messages, &mut places);
            }
            if let Some(id) = str_at(set, "sessionId") {
                session = Some(id.to_owned());
            }
        } else if let Some(id) = str_at(&record, "sessionId") {
            session = Some(id.to_owned());
            for message in record
                .get("messages")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                keep(message.clone(), &mut messages, &mut places);
            }
        }
    }
    Ok((session, messages))
}

/// Makes `all` the messages.
fn replace_all(all: &[Value], messages: &mut Vec<Value>, places: &mut HashMap<String, usize>) {
    messages.clear();
    places.clear();
    for message in all {
        keep(message.clone(), messages, places);
    }
}

/// Records a message: in place of the earlier record with its id, else at the end.
fn keep(message: Value, messages: &mut Vec<Value>, places: &mut HashMap<String, usize>) {
    let Some(id) = str_at(&message, "id").map(str::to_owned) else {
        return;
    };
    match places.get(&id) {
        Some(&at) => messages[at] = message,
        None => {
            places.insert(id, messages.len());
            messages.push(message);
        }
    }
}
