//! OTLP/JSON encoding of one exported run as one `TracesData` line, the OpenTelemetry Collector
//! file exporter's format: proto3 JSON with OTLP's exceptions (lowerCamelCase field names, trace
//! and span ids as lowercase hex, enums as integers, 64-bit integers as strings). A pure function
//! from spans to bytes.

use std::io::Write;

use super::span::{Attributes, ExportedRun, Span, Status, Value};

/// The semantic-conventions release the attributes follow.
pub const SEMCONV_VERSION: &str = "1.38.0";
/// Its schema URL, written on the resource and the scope.
pub const SCHEMA_URL: &str = "https://opentelemetry.io/schemas/1.38.0";
/// The instrumentation scope name.
pub const SCOPE_NAME: &str = "looptrace";

/// Appends `run` to `out` as one JSON line (ending in `\n`).
pub fn encode_run(run: &ExportedRun, out: &mut Vec<u8>) {
    let trace_id = run.trace_id.to_hex();
    out.extend_from_slice(b"{\"resourceSpans\":[{\"resource\":{\"attributes\":[");
    key_value(out, "service.name", &Value::Str(run.service.clone()));
    for (key, value) in &run.resource {
        out.push(b',');
        key_value(out, key, &Value::Str(value.clone()));
    }
    out.extend_from_slice(b"]},\"scopeSpans\":[{\"scope\":{\"name\":");
    string(out, SCOPE_NAME);
    out.extend_from_slice(b",\"version\":");
    string(out, env!("CARGO_PKG_VERSION"));
    out.extend_from_slice(b"},\"spans\":[");
    for (i, span) in run.spans.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        encode_span(span, &trace_id, out);
    }
    out.extend_from_slice(b"],\"schemaUrl\":");
    string(out, SCHEMA_URL);
    out.extend_from_slice(b"}],\"schemaUrl\":");
    string(out, SCHEMA_URL);
    out.extend_from_slice(b"}]}\n");
}

fn encode_span(span: &Span, trace_id: &str, out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"traceId\":\"");
    out.extend_from_slice(trace_id.as_bytes());
    out.extend_from_slice(b"\",\"spanId\":\"");
    out.extend_from_slice(span.span_id.to_hex().as_bytes());
    out.push(b'"');
    if let Some(parent) = span.parent {
        out.extend_from_slice(b",\"parentSpanId\":\"");
        out.extend_from_slice(parent.to_hex().as_bytes());
        out.push(b'"');
    }
    out.extend_from_slice(b",\"name\":");
    string(out, &span.name);
    let _ = write!(
        out,
        ",\"kind\":{},\"startTimeUnixNano\":\"{}\",\"endTimeUnixNano\":\"{}\",\"attributes\":",
        span.kind as i32, span.start, span.end
    );
    attributes(out, &span.attributes);
    if !span.events.is_empty() {
        out.extend_from_slice(b",\"events\":[");
        for (i, event) in span.events.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            let _ = write!(out, "{{\"timeUnixNano\":\"{}\",\"name\":", event.time);
            string(out, event.name);
            out.extend_from_slice(b",\"attributes\":");
            attributes(out, &event.attributes);
            out.push(b'}');
        }
        out.push(b']');
    }
    match &span.status {
        Status::Unset => out.extend_from_slice(b",\"status\":{}"),
        Status::Error(message) => {
            out.extend_from_slice(b",\"status\":{\"message\":");
            string(out, message);
            out.extend_from_slice(b",\"code\":2}");
        }
    }
    out.push(b'}');
}

fn attributes(out: &mut Vec<u8>, attributes: &Attributes) {
    out.push(b'[');
    for (i, attribute) in attributes.0.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        key_value(out, attribute.key, &attribute.value);
    }
    out.push(b']');
}

fn key_value(out: &mut Vec<u8>, key: &str, value: &Value) {
    out.extend_from_slice(b"{\"key\":");
    string(out, key);
    out.extend_from_slice(b",\"value\":");
    any_value(out, value);
    out.push(b'}');
}

fn any_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Str(text) => {
            out.extend_from_slice(b"{\"stringValue\":");
            string(out, text);
            out.push(b'}');
        }
        Value::Bool(flag) => {
            let _ = write!(out, "{{\"boolValue\":{flag}}}");
        }
        Value::Int(n) => {
            let _ = write!(out, "{{\"intValue\":\"{n}\"}}");
        }
        Value::Double(x) => {
            // Only finite numbers are stored; serde_json prints them round-trippably.
            out.extend_from_slice(b"{\"doubleValue\":");
            let _ = serde_json::to_writer(&mut *out, x);
            out.push(b'}');
        }
        Value::StrArray(items) => {
            out.extend_from_slice(b"{\"arrayValue\":{\"values\":[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(b"{\"stringValue\":");
                string(out, item);
                out.push(b'}');
            }
            out.extend_from_slice(b"]}}");
        }
    }
}

/// A JSON string literal.
fn string(out: &mut Vec<u8>, text: &str) {
    // Writing a `&str` to a `Vec` cannot fail.
    let _ = serde_json::to_writer(&mut *out, text);
}
