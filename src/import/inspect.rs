//! Inspect AI eval logs: `.json` documents and `.eval` zip archives (read in memory, within a size
//! limit), one run per sample and epoch. A sample's `error` or `limit` is its ending.

use std::io::BufRead;

use serde_json::Value;

use super::archive::Archive;
use super::error::ImportError;
use super::importer::{
    Context, Imported, Importer, Sink, first_byte, head_text, parse_document, read_bytes, str_at,
    text_of,
};
use super::run::{Ending, ImportedRun, Item, arguments_of};
use crate::run::ExitReason;
use crate::trace::Score;

/// `--from inspect`.
pub struct Inspect;

impl Importer for Inspect {
    fn name(&self) -> &'static str {
        "inspect"
    }

    fn probe(&self, name: &str, head: &[u8]) -> u8 {
        if head.starts_with(b"PK\x03\x04") {
            return if name.ends_with(".eval") { 95 } else { 50 };
        }
        let text = head_text(head);
        if first_byte(head) == Some(b'{')
            && text.contains("\"eval\"")
            && text.contains("\"version\"")
            && text.contains("\"status\"")
        {
            85
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
        if bytes.starts_with(b"PK") {
            return read_archive(bytes, context, out);
        }
        let log = parse_document(&bytes, context, "")?;
        let header = Header::of(&log, context);
        let samples = match log.get("samples") {
            None | Some(Value::Null) => return Ok(()),
            Some(Value::Array(samples)) => samples,
            Some(_) => return Err(context.malformed("$.samples", "expected an array")),
        };
        for (index, sample) in samples.iter().enumerate() {
            out(Imported::Run(read_sample(
                sample,
                &header,
                context,
                &format!("$.samples[{index}]"),
            )?))?;
        }
        Ok(())
    }
}

/// What every sample of a log shares.
struct Header {
    eval_id: String,
    model: Option<String>,
}

impl Header {
    fn of(log: &Value, context: &Context) -> Header {
        let eval = log.get("eval").unwrap_or(&Value::Null);
        Header {
            eval_id: str_at(eval, "eval_id")
                .or_else(|| str_at(eval, "run_id"))
                .unwrap_or(&context.name)
                .to_owned(),
            model: str_at(eval, "model").map(str::to_owned),
        }
    }
}

/// A `.eval` archive: `header.json` and one `samples/<id>_epoch_<n>.json` per run, in name order.
fn read_archive(bytes: Vec<u8>, context: &Context, out: &mut Sink<'_>) -> Result<(), ImportError> {
    let mut archive = Archive::open(bytes, context)?;
    let member = |archive: &mut Archive<'_>, name: &str| -> Result<Value, ImportError> {
        let data = archive.read(name)?;
        parse_document(&data, context, &format!("{name}: "))
    };
    let header_name = if archive.contains("header.json") {
        "header.json"
    } else {
        "_journal/start.json"
    };
    let header = Header::of(&member(&mut archive, header_name)?, context);
    let mut names: Vec<String> = archive
        .names()
        .into_iter()
        .filter(|name| name.starts_with("samples/") && name.ends_with(".json"))
        .collect();
    names.sort();
    for name in names {
        let sample = member(&mut archive, &name)?;
        out(Imported::Run(read_sample(
            &sample, &header, context, &name,
        )?))?;
    }
    Ok(())
}

/// One sample in one epoch.
fn read_sample(
    sample: &Value,
    header: &Header,
    context: &Context,
    path: &str,
) -> Result<ImportedRun, ImportError> {
    let id = text_of(sample.get("id"));
    let epoch = sample.get("epoch").and_then(Value::as_u64).unwrap_or(1);
    let mut run = ImportedRun::new(format!("{}/{id}/epoch-{epoch}", header.eval_id));
    run.native_id = Some(format!("{id}/epoch-{epoch}"));
    run.model = header.model.clone();
    run.task = Some(match sample.get("input") {
        Some(Value::Array(messages)) => messages
            .iter()
            .find(|m| str_at(m, "role") == Some("user"))
            .map(|m| text_of(m.get("content")))
            .unwrap_or_default(),
        other => text_of(other),
    });
    let messages = match sample.get("messages") {
        None | Some(Value::Null) => &[][..],
        Some(Value::Array(messages)) => messages.as_slice(),
        Some(_) => return Err(context.malformed(format!("{path}.messages"), "expected an array")),
    };
    let mut pending = 0usize;
    for message in messages {
        match str_at(message, "role") {
            Some("assistant") => {
                run.turn();
                let calls = message.get("tool_calls").and_then(Value::as_array);
                for call in calls.into_iter().flatten() {
                    let name = str_at(call, "function").unwrap_or("unknown");
                    let call_id = str_at(call, "id").map(str::to_owned);
                    run.call(
                        name,
                        arguments_of(call.get("arguments"), "arguments"),
                        call_id,
                    );
                    pending += 1;
                }
            }
            Some("tool") => {
                let name = str_at(message, "function").unwrap_or("unknown");
                if pending == 0 {
                    // A tool message with no assistant call before it (hand-made logs): the call
                    // is implied by its result.
                    run.call(name, Default::default(), None);
                } else {
                    pending -= 1;
                }
                let error = message.get("error").filter(|e| !e.is_null());
                run.push(Item::Observation {
                    tool_name: name.to_owned(),
                    content: text_of(message.get("content")),
                    is_error: Some(error.is_some()),
                    error_kind: error.and_then(|e| str_at(e, "type")).map(str::to_owned),
                });
            }
            _ => {}
        }
    }
    let error = sample.get("error").filter(|e| !e.is_null());
    let limit = sample.get("limit").filter(|l| !l.is_null());
    let stop_reason = sample
        .pointer("/output/choices/0/stop_reason")
        .and_then(Value::as_str);
    run.ending = Some(if let Some(error) = error {
        let message = str_at(error, "message").map_or_else(|| error.to_string(), str::to_owned);
        Ending::internal("sample_error").native(message)
    } else if let Some(limit) = limit {
        let kind = str_at(limit, "type").unwrap_or("");
        let budget = match kind {
            "message" | "turn" => "steps",
            "token" => "tokens",
            "cost" => "cost",
            "time" | "working" => "time",
            "context" => "context",
            _ => "other",
        };
        Ending::budget(budget).native(format!("limit/{kind}"))
    } else if stop_reason == Some("model_length") {
        // The provider refused the input as longer than the model's context window; Inspect
        // ends the sample there and records the refusal as the model's reply.
        Ending::budget("context").native("stop_reason/model_length")
    } else {
        if pending == 0
            && let Some(last) = messages
                .last()
                .filter(|m| str_at(m, "role") == Some("assistant"))
        {
            run.push(Item::Finish {
                answer: text_of(last.get("content")),
            });
        }
        Ending::new(ExitReason::Finished)
    });
    run.scores = scores(sample);
    Ok(run)
}

/// The sample's `scores` (`{name: {value, explanation, ...}}`) as verdicts: `C` passes, `I`,
/// `P` (partial) and `N` (no answer) do not; booleans are their own verdict; the numbers 1 and 0
/// pass and fail; any other number is a value without a verdict, and any other value (text,
/// lists, maps of several values) neither.
fn scores(sample: &Value) -> Vec<Score> {
    let Some(Value::Object(scores)) = sample.get("scores") else {
        return Vec::new();
    };
    scores
        .iter()
        .map(|(name, score)| {
            let (passed, value) = match score.get("value") {
                Some(Value::String(grade)) => match grade.as_str() {
                    "C" => (Some(true), Some(1.0)),
                    "I" | "N" => (Some(false), Some(0.0)),
                    "P" => (Some(false), Some(0.5)),
                    _ => (None, None),
                },
                Some(Value::Bool(passed)) => (Some(*passed), Some(f64::from(u8::from(*passed)))),
                Some(Value::Number(number)) => {
                    let value = number.as_f64();
                    let passed = match value {
                        Some(1.0) => Some(true),
                        Some(0.0) => Some(false),
                        _ => None,
                    };
                    (passed, value)
                }
                _ => (None, None),
            };
            Score {
                name: name.clone(),
                kind: "inspect".to_owned(),
                passed,
                value,
                explanation: str_at(score, "explanation").map(str::to_owned),
            }
        })
        .collect()
}
