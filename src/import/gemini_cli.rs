//! Gemini CLI chat recordings: one JSON document per chat, one run per user message. No ending is
//! recorded: a run whose last message is a model answer without tool calls is `finished`
//! (inferred).

use std::io::BufRead;

use serde_json::Value;

use super::error::ImportError;
use super::importer::{
    Context, Imported, Importer, Sink, first_byte, head_text, read_document, str_at, text_of,
};
use super::run::{Ending, ImportedRun, arguments_of};

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
        let document = read_document(input, context)?;
        let session = str_at(&document, "sessionId")
            .unwrap_or(&context.name)
            .to_owned();
        let messages = document
            .get("messages")
            .and_then(Value::as_array)
            .ok_or_else(|| context.malformed("$.messages", "expected an array"))?;
        let mut current: Option<(ImportedRun, bool)> = None;
        let mut prompts = 0usize;
        for message in messages {
            match str_at(message, "type") {
                Some("user") => {
                    if let Some((run, answered)) = current.take() {
                        out(Imported::Run(finish(run, answered)))?;
                    }
                    prompts += 1;
                    let mut run = ImportedRun::new(format!("{session}/prompt-{prompts}"));
                    run.native_id = str_at(message, "id").map(str::to_owned);
                    run.task = Some(text_of(message.get("content")));
                    run.agent = Some("gemini-cli".to_owned());
                    current = Some((run, false));
                }
                Some("gemini") => {
                    let Some((run, answered)) = current.as_mut() else {
                        continue;
                    };
                    run.turn();
                    if let Some(model) = str_at(message, "model") {
                        run.model = Some(model.to_owned());
                    }
                    let calls = message.get("toolCalls").and_then(Value::as_array);
                    *answered = calls.is_none_or(Vec::is_empty);
                    for call in calls.into_iter().flatten() {
                        let name = str_at(call, "name").unwrap_or("unknown");
                        let id = str_at(call, "id").map(str::to_owned);
                        run.call(name, arguments_of(call.get("args"), "args"), id);
                        let status = str_at(call, "status");
                        let result = call.get("result").map(Value::to_string).unwrap_or_default();
                        if status.is_some() || call.get("result").is_some() {
                            run.result(name, result, Some(status != Some("success")));
                        }
                    }
                }
                Some("error") => {
                    if let Some((run, _)) = current.as_mut() {
                        run.ending = Some(Ending::internal("model_failure").native("error"));
                    }
                }
                _ => {}
            }
        }
        if let Some((run, answered)) = current.take() {
            out(Imported::Run(finish(run, answered)))?;
        }
        Ok(())
    }
}

fn finish(mut run: ImportedRun, answered: bool) -> ImportedRun {
    if run.ending.is_none() && answered {
        run.ending = Some(Ending::inferred_finish());
    }
    run
}
