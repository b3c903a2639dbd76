//! Claude Code session transcripts: JSONL, one line per message block, one run per user prompt.
//! Nothing records how a run ended: a prompt answered by a final text block with every tool call
//! answered is `finished` (inferred); an interrupt or a dangling tool call is incomplete.

use std::collections::{HashMap, HashSet};
use std::io::BufRead;

use serde_json::Value;

use super::error::ImportError;
use super::importer::{
    Context, Imported, Importer, Sink, for_each_line_keeping, head_text, str_at, text_of,
};
use super::run::{Ending, ImportedRun, arguments_of};

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
];

/// User text that marks an interrupted request.
const INTERRUPTED: &str = "[Request interrupted by user";

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
                    if !is_prompt(&line, &text) {
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
                        interrupted: false,
                        api_error: false,
                        open_calls: HashSet::new(),
                        names: HashMap::new(),
                    });
                }
                "assistant" => {
                    if let Some(prompt) = current.as_mut() {
                        prompt.assistant(&line, message);
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
    let meta = line.get("isMeta").and_then(Value::as_bool) == Some(true);
    let trimmed = text.trim_start();
    !meta
        && !trimmed.starts_with("<command-name>")
        && !trimmed.starts_with("<command-message>")
        && !trimmed.starts_with("<local-command-stdout>")
        && !trimmed.starts_with("Caveat:")
}

/// One prompt being read.
struct Prompt {
    run: ImportedRun,
    last_message: Option<String>,
    answered: bool,
    interrupted: bool,
    api_error: bool,
    open_calls: HashSet<String>,
    names: HashMap<String, String>,
}

impl Prompt {
    fn assistant(&mut self, line: &Value, message: &Value) {
        let id = str_at(message, "id").map(str::to_owned);
        if id.is_none() || id != self.last_message {
            self.run.turn();
            self.last_message = id;
        }
        if let Some(model) = str_at(message, "model") {
            self.run.model = Some(model.to_owned());
        }
        if line.get("isApiErrorMessage").and_then(Value::as_bool) == Some(true) {
            self.api_error = true;
        }
        let blocks = message.get("content").and_then(Value::as_array);
        for block in blocks.into_iter().flatten() {
            match str_at(block, "type") {
                Some("text") => self.answered = true,
                Some("tool_use") => {
                    let name = str_at(block, "name").unwrap_or("unknown");
                    let call_id = str_at(block, "id").map(str::to_owned);
                    if let Some(id) = &call_id {
                        self.open_calls.insert(id.clone());
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
            self.open_calls.remove(id);
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
        self.run.ending = if self.api_error {
            Some(Ending::internal("model_failure").native("isApiErrorMessage"))
        } else if !self.interrupted && self.answered && self.open_calls.is_empty() {
            Some(Ending::inferred_finish())
        } else {
            None
        };
        self.run
    }
}
