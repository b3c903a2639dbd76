//! Claude Code session transcripts: JSONL, one line per message block, one run per user prompt
//! (a custom slash command's expanded text included). 2.1 records a turn limit as a
//! `max_turns_reached` attachment and API failures as assistant turns flagged `isApiErrorMessage`;
//! otherwise a prompt whose last assistant record is a text answer is `finished` (inferred), with
//! that text as its answer, and an interrupt or a trailing tool call is incomplete.

use std::collections::HashMap;
use std::io::BufRead;

use serde_json::Value;

use super::error::ImportError;
use super::importer::{
    Context, Imported, Importer, Sink, for_each_line_keeping, head_text, str_at, text_of,
};
use super::run::{Ending, ImportedRun, Item, arguments_of};

/// The members of a line the importer reads; the rest (`toolUseResult` repeats a tool's whole
/// output, `snapshot` lists file backups) is skipped unread.
const READ_KEYS: &[&str] = &[
    "type",
    "message",
    "sessionId",
    "agentId",
    "uuid",
    "isMeta",
    "isApiErrorMessage",
    "attachment",
];

/// User text that marks an interrupted request.
const INTERRUPTED: &str = "[Request interrupted by user";
/// How an API error turn opens when the prompt no longer fits the context window.
const PROMPT_TOO_LONG: &str = "Prompt is too long";

/// `--from claude-code`.
pub struct ClaudeCode;

impl Importer for ClaudeCode {
    fn name(&self) -> &'static str {
        "claude-code"
    }

    fn probe(&self, _name: &str, head: &[u8]) -> u8 {
        let text = head_text(head);
        let first = text.lines().next().unwrap_or("");
        if text.contains("\"sessionId\"") && text.contains("\"parentUuid\"") {
            90
        } else if first.contains("\"type\":\"file-history-snapshot\"")
            || first.contains("\"type\":\"summary\"") && first.contains("\"leafUuid\"")
        {
            80
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
        let mut prompts = 0usize;
        let mut current: Option<Prompt> = None;
        // The last user text was a slash command: its expanded text (an `isMeta` line) follows.
        let mut after_command = false;
        for_each_line_keeping(input, context, READ_KEYS, |_, line| {
            let kind = str_at(&line, "type").unwrap_or("");
            let message = line.get("message").unwrap_or(&Value::Null);
            match kind {
                "user" => {
                    let content = message.get("content");
                    let is_results = content.and_then(Value::as_array).is_some_and(|blocks| {
                        blocks
                            .iter()
                            .any(|b| str_at(b, "type") == Some("tool_result"))
                    });
                    if is_results {
                        if let Some(prompt) = current.as_mut() {
                            prompt.results(content);
                        }
                        return Ok(());
                    }
                    let text = text_of(content);
                    if text.starts_with(INTERRUPTED) {
                        if let Some(prompt) = current.as_mut() {
                            prompt.interrupted = true;
                        }
                        return Ok(());
                    }
                    let command = is_command(&text);
                    let expanded = after_command && is_meta(&line);
                    after_command = command;
                    if !expanded && (command || !is_prompt(&line, &text)) {
                        return Ok(());
                    }
                    if let Some(done) = current.take() {
                        out(Imported::Run(done.finish()))?;
                    }
                    prompts += 1;
                    let session = str_at(&line, "sessionId").unwrap_or(&context.name);
                    let id = match str_at(&line, "agentId") {
                        Some(agent) => format!("{session}/{agent}/prompt-{prompts}"),
                        None => format!("{session}/prompt-{prompts}"),
                    };
                    let mut run = ImportedRun::new(id);
                    run.native_id = str_at(&line, "uuid").map(str::to_owned);
                    run.task = Some(text);
                    run.agent = Some("claude-code".to_owned());
                    current = Some(Prompt {
                        run,
                        last_message: None,
                        answered: false,
                        answer: String::new(),
                        interrupted: false,
                        api_error: None,
                        max_turns: None,
                        names: HashMap::new(),
                    });
                }
                "assistant" => {
                    after_command = false;
                    if let Some(prompt) = current.as_mut() {
                        prompt.assistant(&line, message);
                    }
                }
                "attachment" => {
                    let attachment = line.get("attachment").unwrap_or(&Value::Null);
                    if str_at(attachment, "type") == Some("max_turns_reached")
                        && let Some(prompt) = current.as_mut()
                    {
                        prompt.max_turns = attachment.get("maxTurns").and_then(Value::as_u64);
                        prompt.max_turns.get_or_insert(0);
                    }
                }
                _ => {}
            }
            Ok(())
        })?;
        if let Some(done) = current.take() {
            out(Imported::Run(done.finish()))?;
        }
        Ok(())
    }
}

/// Whether a user text line is a prompt (not a slash command, its output or the caveat line).
fn is_prompt(line: &Value, text: &str) -> bool {
    let trimmed = text.trim_start();
    !is_meta(line)
        && !trimmed.starts_with("<local-command-stdout>")
        && !trimmed.starts_with("Caveat:")
}

/// Whether a user text is a slash command as typed (`<command-name>` / `<command-message>`).
fn is_command(text: &str) -> bool {
    let trimmed = text.trim_start();
    trimmed.starts_with("<command-name>") || trimmed.starts_with("<command-message>")
}

/// Whether a line was written by Claude Code rather than typed (`isMeta`).
fn is_meta(line: &Value) -> bool {
    line.get("isMeta").and_then(Value::as_bool) == Some(true)
}

/// One prompt being read.
struct Prompt {
    run: ImportedRun,
    last_message: Option<String>,
    /// The last assistant record is a text answer.
    answered: bool,
    /// The text of the last answer.
    answer: String,
    interrupted: bool,
    /// The text of an API error stored as the assistant's turn.
    api_error: Option<String>,
    /// The turn limit a `max_turns_reached` attachment records.
    max_turns: Option<u64>,
    names: HashMap<String, String>,
}

impl Prompt {
    fn assistant(&mut self, line: &Value, message: &Value) {
        let id = str_at(message, "id").map(str::to_owned);
        let new_message = id.is_none() || id != self.last_message;
        if new_message {
            self.run.turn();
            self.last_message = id;
        }
        if let Some(model) = str_at(message, "model") {
            self.run.model = Some(model.to_owned());
        }
        let blocks = message.get("content").and_then(Value::as_array);
        if line.get("isApiErrorMessage").and_then(Value::as_bool) == Some(true) {
            self.api_error = Some(text_of(message.get("content")));
            return;
        }
        // A gateway's own error payload (Bedrock behind a proxy) stored as the turn.
        if let Some(kind) = message.pointer("/Output/__type").and_then(Value::as_str)
            && blocks.is_none_or(Vec::is_empty)
        {
            self.api_error = Some(kind.to_owned());
            return;
        }
        for block in blocks.into_iter().flatten() {
            match str_at(block, "type") {
                Some("text") => {
                    let text = str_at(block, "text").unwrap_or("");
                    if self.answered && !new_message {
                        self.answer.push('\n');
                        self.answer.push_str(text);
                    } else {
                        self.answer = text.to_owned();
                    }
                    self.answered = true;
                }
                Some("tool_use") => {
                    let name = str_at(block, "name").unwrap_or("unknown");
                    let call_id = str_at(block, "id").map(str::to_owned);
                    if let Some(id) = &call_id {
                        self.names.insert(id.clone(), name.to_owned());
                    }
                    self.run
                        .call(name, arguments_of(block.get("input"), "input"), call_id);
                    self.answered = false;
                }
                _ => {}
            }
        }
    }

    fn results(&mut self, content: Option<&Value>) {
        let blocks = content.and_then(Value::as_array);
        for block in blocks.into_iter().flatten() {
            if str_at(block, "type") != Some("tool_result") {
                continue;
            }
            let id = str_at(block, "tool_use_id").unwrap_or("");
            let name = self
                .names
                .get(id)
                .map_or("unknown", String::as_str)
                .to_owned();
            let is_error = block.get("is_error").and_then(Value::as_bool) == Some(true);
            self.run
                .result(&name, text_of(block.get("content")), Some(is_error));
            self.answered = false;
        }
    }

    fn finish(mut self) -> ImportedRun {
        self.run.ending = if let Some(limit) = self.max_turns {
            Some(Ending::budget("steps").native(format!("max_turns_reached/{limit}")))
        } else if let Some(error) = &self.api_error {
            Some(if error.starts_with(PROMPT_TOO_LONG) {
                Ending::budget("context").native(PROMPT_TOO_LONG)
            } else {
                Ending::internal("model_failure").native("isApiErrorMessage")
            })
        } else if !self.interrupted && self.answered {
            // An answer ends the prompt even if earlier calls never got a result: they stay
            // calls without one.
            self.run.push(Item::Finish {
                answer: std::mem::take(&mut self.answer),
            });
            Some(Ending::inferred_finish())
        } else {
            None
        };
        self.run
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(jsonl: &str) -> Vec<ImportedRun> {
        let context = Context {
            file: "s.jsonl".to_owned(),
            name: "s.jsonl".to_owned(),
        };
        let mut runs = Vec::new();
        ClaudeCode
            .import(&mut jsonl.as_bytes(), &context, &mut |imported| {
                if let Imported::Run(run) = imported {
                    runs.push(run);
                }
                Ok(())
            })
            .unwrap();
        runs
    }

    #[test]
    fn a_gateway_error_payload_stored_as_the_turn_is_a_model_failure() {
        let runs = runs(concat!(
            r#"{"type":"user","sessionId":"s","parentUuid":null,"message":{"role":"user","content":"Fix it"}}"#,
            "\n",
            r#"{"type":"assistant","sessionId":"s","message":{"Output":{"__type":"com.amazon.coral.service#UnknownOperationException"},"Version":"1.0","content":[]}}"#,
            "\n",
        ));
        assert_eq!(runs.len(), 1);
        let ending = runs[0].ending.as_ref().unwrap();
        assert_eq!(ending.exit_reason, crate::run::ExitReason::InternalError);
        assert_eq!(ending.error_kind.as_deref(), Some("model_failure"));
        assert_eq!(runs[0].steps, 1);
    }
}
