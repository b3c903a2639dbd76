//! Inspect AI eval logs: `.json` documents and `.eval` zip archives (read in memory, within a size
//! limit), one run per sample and epoch. A sample's `error` or `limit` is its ending.

use std::io::{BufRead, Cursor, Read};

use serde_json::Value;

use super::error::ImportError;
use super::importer::{
    Context, Imported, Importer, MAX_DOCUMENT_BYTES, Sink, first_byte, head_text, parse_document,
    read_bytes, str_at, text_of,
};
use super::run::{Ending, ImportedRun, Item, arguments_of};
use crate::run::ExitReason;

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
    let mut archive = zip::ZipArchive::new(Cursor::new(bytes))
        .map_err(|err| context.malformed("the archive", format!("not a readable zip: {err}")))?;
    let member = |archive: &mut zip::ZipArchive<Cursor<Vec<u8>>>, name: &str| {
        let entry = archive
            .by_name(name)
            .map_err(|err| context.malformed(name.to_owned(), format!("cannot open: {err}")))?;
        let mut data = Vec::new();
        entry
            .take(MAX_DOCUMENT_BYTES + 1)
            .read_to_end(&mut data)
            .map_err(|err| context.malformed(name.to_owned(), format!("cannot read: {err}")))?;
        if data.len() as u64 > MAX_DOCUMENT_BYTES {
            return Err(context.malformed(name.to_owned(), "larger than the size limit"));
        }
        parse_document(&data, context, &format!("{name}: "))
    };
    let header = match archive.index_for_name("header.json") {
        Some(_) => member(&mut archive, "header.json")?,
        None => member(&mut archive, "_journal/start.json")?,
    };
    let header = Header::of(&header, context);
    let mut names: Vec<String> = archive
        .file_names()
        .filter_map(Result::ok)
        .filter(|name| name.starts_with("samples/") && name.ends_with(".json"))
        .map(|name| name.into_owned())
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
    } else {
        Ending::new(ExitReason::Finished)
    });
    Ok(run)
}
