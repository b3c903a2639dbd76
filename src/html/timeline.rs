//! The runs' timelines as compact JSON for the page's script: one array per run, one array per
//! event, trailing empty fields left out (a 10,000-run report must stay a few megabytes).

use serde_json::{Value, json};

use crate::report::{RunTable, TimelineStep};

/// Event type names, so each event carries a small index instead of its name.
pub fn event_names(runs: &RunTable) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for step in runs.rows.iter().flat_map(|r| &r.timeline) {
        if !names.contains(&step.event) {
            names.push(step.event.clone());
        }
    }
    names
}

/// `[[step, event, action, tool, text, is_error, error_kind, accepted, duration_ms], ...]` per
/// run, in row order.
pub fn timelines(runs: &RunTable, names: &[String]) -> Value {
    Value::Array(
        runs.rows
            .iter()
            .map(|row| Value::Array(row.timeline.iter().map(|s| entry(s, names)).collect()))
            .collect(),
    )
}

fn entry(step: &TimelineStep, names: &[String]) -> Value {
    let event = names.iter().position(|n| *n == step.event).unwrap_or(0);
    let mut fields = vec![
        json!(step.step),
        json!(event),
        json!(step.action),
        json!(step.tool),
        json!(step.text),
        json!(u8::from(step.is_error)),
        json!(step.error_kind),
        json!(step.accepted),
        json!(step.duration_ms.map(round_ms)),
    ];
    while fields.len() > 2 && matches!(fields.last(), Some(v) if v.is_null() || *v == json!(0)) {
        fields.pop();
    }
    Value::Array(fields)
}

/// Milliseconds to three decimals: enough for any duration shown, and short.
pub fn round_ms(ms: f64) -> f64 {
    (ms * 1000.0).round() / 1000.0
}
