//! OTLP/HTTP protobuf encoding: exported runs as one `ExportTraceServiceRequest`, the body every
//! collector and Phoenix accept, built from the OpenTelemetry project's own generated messages
//! (`opentelemetry-proto`). A pure function from spans to bytes, like [`super::json`].

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{
    AnyValue, ArrayValue, InstrumentationScope, KeyValue, any_value,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{
    ResourceSpans, ScopeSpans, Span as ProtoSpan, Status as ProtoStatus, span, status,
};
use prost::Message;

use super::json::{SCHEMA_URL, SCOPE_NAME};
use super::span::{Attributes, ExportedRun, Span, Status, Value};

/// The request body for `runs`: one `ResourceSpans` per run, in their order.
pub fn encode_request(runs: &[ExportedRun]) -> Vec<u8> {
    let request = ExportTraceServiceRequest {
        resource_spans: runs.iter().map(resource_spans).collect(),
    };
    request.encode_to_vec()
}

fn resource_spans(run: &ExportedRun) -> ResourceSpans {
    let mut attributes = vec![key_value("service.name", &Value::Str(run.service.clone()))];
    attributes.extend(
        run.resource
            .iter()
            .map(|(key, value)| key_value(key, &Value::Str(value.clone()))),
    );
    let trace_id = run.trace_id.0.to_vec();
    ResourceSpans {
        resource: Some(Resource {
            attributes,
            ..Resource::default()
        }),
        scope_spans: vec![ScopeSpans {
            scope: Some(InstrumentationScope {
                name: SCOPE_NAME.to_owned(),
                version: env!("CARGO_PKG_VERSION").to_owned(),
                ..InstrumentationScope::default()
            }),
            spans: run.spans.iter().map(|s| proto_span(s, &trace_id)).collect(),
            schema_url: SCHEMA_URL.to_owned(),
        }],
        schema_url: SCHEMA_URL.to_owned(),
    }
}

fn proto_span(span: &Span, trace_id: &[u8]) -> ProtoSpan {
    ProtoSpan {
        trace_id: trace_id.to_vec(),
        span_id: span.span_id.0.to_vec(),
        parent_span_id: span
            .parent
            .map_or_else(Vec::new, |parent| parent.0.to_vec()),
        name: span.name.clone(),
        kind: span.kind as i32,
        start_time_unix_nano: span.start,
        end_time_unix_nano: span.end,
        attributes: key_values(&span.attributes),
        events: span
            .events
            .iter()
            .map(|event| span::Event {
                time_unix_nano: event.time,
                name: event.name.to_owned(),
                attributes: key_values(&event.attributes),
                ..span::Event::default()
            })
            .collect(),
        status: match &span.status {
            Status::Unset => None,
            Status::Error(message) => Some(ProtoStatus {
                message: message.clone(),
                code: status::StatusCode::Error as i32,
            }),
        },
        ..ProtoSpan::default()
    }
}

fn key_values(attributes: &Attributes) -> Vec<KeyValue> {
    attributes
        .0
        .iter()
        .map(|attribute| key_value(attribute.key, &attribute.value))
        .collect()
}

fn key_value(key: &str, value: &Value) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(any(value)),
        ..KeyValue::default()
    }
}

fn any(value: &Value) -> AnyValue {
    let value = match value {
        Value::Str(text) => any_value::Value::StringValue(text.clone()),
        Value::Bool(flag) => any_value::Value::BoolValue(*flag),
        Value::Int(n) => any_value::Value::IntValue(*n),
        Value::Double(x) => any_value::Value::DoubleValue(*x),
        Value::StrArray(items) => any_value::Value::ArrayValue(ArrayValue {
            values: items
                .iter()
                .map(|item| AnyValue {
                    value: Some(any_value::Value::StringValue(item.clone())),
                })
                .collect(),
        }),
    };
    AnyValue { value: Some(value) }
}
