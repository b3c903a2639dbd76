//! The spans of one exported run, shaped like OTLP's `Span` message: what [`super::build`] makes
//! and [`super::json`] writes.

use super::ids::{SpanId, TraceId};

/// An attribute value (OTLP's `AnyValue`, the kinds the export uses).
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// `stringValue`.
    Str(String),
    /// `boolValue`.
    Bool(bool),
    /// `intValue` (written as a string, as proto3 JSON writes 64-bit integers).
    Int(i64),
    /// `doubleValue`; only finite numbers are ever stored.
    Double(f64),
    /// `arrayValue` of strings.
    StrArray(Vec<String>),
}

/// One attribute.
#[derive(Clone, Debug, PartialEq)]
pub struct Attribute {
    /// The key, such as `gen_ai.operation.name`.
    pub key: &'static str,
    /// The value.
    pub value: Value,
}

/// A list of attributes with helpers that skip absent values.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Attributes(pub Vec<Attribute>);

impl Attributes {
    /// Adds a string.
    pub fn str(&mut self, key: &'static str, value: impl Into<String>) {
        self.0.push(Attribute {
            key,
            value: Value::Str(value.into()),
        });
    }

    /// Adds a string when there is one.
    pub fn opt_str(&mut self, key: &'static str, value: Option<&str>) {
        if let Some(value) = value {
            self.str(key, value);
        }
    }

    /// Adds an integer when there is one.
    pub fn opt_int(&mut self, key: &'static str, value: Option<i64>) {
        if let Some(value) = value {
            self.0.push(Attribute {
                key,
                value: Value::Int(value),
            });
        }
    }

    /// Adds a boolean when there is one.
    pub fn opt_bool(&mut self, key: &'static str, value: Option<bool>) {
        if let Some(value) = value {
            self.0.push(Attribute {
                key,
                value: Value::Bool(value),
            });
        }
    }

    /// Adds a finite number when there is one.
    pub fn opt_double(&mut self, key: &'static str, value: Option<f64>) {
        if let Some(value) = value.filter(|v| v.is_finite()) {
            self.0.push(Attribute {
                key,
                value: Value::Double(value),
            });
        }
    }

    /// Adds a list of strings.
    pub fn str_array(&mut self, key: &'static str, values: Vec<String>) {
        self.0.push(Attribute {
            key,
            value: Value::StrArray(values),
        });
    }
}

/// OTLP's `SpanKind`, written as its integer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpanKind {
    /// `SPAN_KIND_INTERNAL` = 1.
    Internal = 1,
    /// `SPAN_KIND_CLIENT` = 3.
    Client = 3,
}

/// OTLP's `Status`: unset, or an error with a message.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Status {
    /// `STATUS_CODE_UNSET` = 0 (not written).
    #[default]
    Unset,
    /// `STATUS_CODE_ERROR` = 2, with a message.
    Error(String),
}

/// An event on a span.
#[derive(Clone, Debug, PartialEq)]
pub struct SpanEvent {
    /// The event name.
    pub name: &'static str,
    /// When, in nanoseconds since the Unix epoch.
    pub time: u64,
    /// Its attributes.
    pub attributes: Attributes,
}

/// One span.
#[derive(Clone, Debug, PartialEq)]
pub struct Span {
    /// The span id.
    pub span_id: SpanId,
    /// The parent's span id; `None` for the root.
    pub parent: Option<SpanId>,
    /// The span name, such as `chat gpt-4o`.
    pub name: String,
    /// Its kind.
    pub kind: SpanKind,
    /// Start, in nanoseconds since the Unix epoch.
    pub start: u64,
    /// End, in nanoseconds since the Unix epoch.
    pub end: u64,
    /// Its attributes.
    pub attributes: Attributes,
    /// Its events.
    pub events: Vec<SpanEvent>,
    /// Its status.
    pub status: Status,
}

/// One run as OTLP spans: the root first, then its children in time order.
#[derive(Clone, Debug, PartialEq)]
pub struct ExportedRun {
    /// The trace id.
    pub trace_id: TraceId,
    /// The `service.name` of the resource: the agent, unless `OTEL_SERVICE_NAME` says otherwise.
    pub service: String,
    /// The resource's other attributes (`OTEL_RESOURCE_ATTRIBUTES`).
    pub resource: Vec<(String, String)>,
    /// The spans.
    pub spans: Vec<Span>,
}
