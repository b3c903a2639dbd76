//! The readable rendering of a trace behind `looptrace show`: one line per event, runs separated,
//! each run closed by its outcome. Pure functions of the parsed runs; `show` prints each run as
//! soon as it ends. Every text from the trace is escaped ([`crate::text::escape`]).

use std::fmt::Write;

use super::event::{Event, EventKind};
use super::runs::RecordedRun;
use crate::run::{ExitReason, RunOutcome};

/// Longest content shown inline before it is shortened.
pub(crate) const INLINE_LIMIT: usize = 120;

/// Renders runs as text; `color` adds ANSI colours to outcomes and errors.
pub fn render_runs(runs: &[&RecordedRun], color: bool) -> String {
    let mut out = String::new();
    for (i, run) in runs.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&render_run(run, 1, color));
    }
    out
}

/// Renders one run; `occurrence` above 1 labels a reused run id as `ID (2nd)`.
pub fn render_run(run: &RecordedRun, occurrence: u32, color: bool) -> String {
    let mut out = String::new();
    let label = match occurrence {
        0 | 1 => String::new(),
        n => format!(" ({})", ordinal(n)),
    };
    let _ = writeln!(
        out,
        "run {}{label} ({})",
        safe(&run.run_id),
        crate::plural(run.events.len() as u64, "event", "events")
    );
    for (line, event) in &run.events {
        let _ = writeln!(
            out,
            "  {:>4}  step {:<3} {:<15} {}",
            format!("L{line}"),
            event.step,
            safe(event.event_type()),
            describe(event, color)
        );
    }
    let outcome = run.outcome();
    let steps = run
        .finished()
        .and_then(|e| e.steps_used().map(u64::from).or(Some(e.step)))
        .map(|s| format!(" after {s} step{}", if s == 1 { "" } else { "s" }))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "  outcome: {}{steps}",
        paint(outcome.as_str(), outcome_color(outcome), color)
    );
    out
}

/// `1st`, `2nd`, `3rd`, `4th`, ..., `11th`, `21st`.
pub fn ordinal(n: u32) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

fn outcome_color(outcome: RunOutcome) -> &'static str {
    match outcome {
        RunOutcome::Ended(ExitReason::Finished) => GREEN,
        RunOutcome::Ended(ExitReason::MaxStepsExceeded | ExitReason::InvalidModelOutput) => YELLOW,
        RunOutcome::Ended(ExitReason::InternalError) | RunOutcome::Incomplete => RED,
    }
}

const GREEN: &str = "32";
const YELLOW: &str = "33";
const RED: &str = "31";

fn paint(text: &str, code: &str, color: bool) -> String {
    if color {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_owned()
    }
}

/// The fields that matter for one event, content preferred over its summary when captured.
fn describe(event: &Event, color: bool) -> String {
    let mut parts: Vec<String> = Vec::new();
    let text_or_summary = |text: &Option<String>, summary: &Option<String>| -> Option<String> {
        text.as_deref()
            .map(|t| safe(&format!("{:?}", shorten(t))))
            .or_else(|| summary.as_deref().map(safe))
    };
    match &event.kind {
        EventKind::RunStarted(e) => {
            if let Some(capture) = e.capture {
                parts.push(format!("capture={}", capture.as_str()));
            }
            if let Some(max) = e.max_steps {
                parts.push(format!("max_steps={max}"));
            }
            if let Some(replay) = &e.replay_of {
                parts.push(format!(
                    "replay_of={}#{}",
                    safe(&replay.source),
                    safe(&replay.run_id)
                ));
            }
            if let Some(task) = text_or_summary(&e.task, &e.input_summary) {
                parts.push(format!("task={task}"));
            }
        }
        EventKind::ModelAction(e) => {
            let action = e.action_type.as_deref().unwrap_or("?");
            match action {
                "tool_call" => {
                    let tool = e.tool_name.as_deref().unwrap_or("?");
                    let args = match (&e.arguments, &e.argument_keys) {
                        (Some(arguments), _) => inline_json(arguments),
                        (None, Some(keys)) => format!("({})", keys.join(", ")),
                        (None, None) => String::new(),
                    };
                    parts.push(format!("tool_call {}{}", safe(tool), safe(&shorten(&args))));
                }
                other => {
                    parts.push(safe(other));
                    if let Some(answer) = text_or_summary(&e.answer, &e.output) {
                        parts.push(format!("answer={answer}"));
                    }
                }
            }
        }
        EventKind::Observation(e) => {
            if let Some(tool) = &e.tool_name {
                parts.push(safe(tool));
            }
            let status = if e.is_error_by_rule() {
                paint(
                    &format!(
                        "error {}",
                        safe(e.error_kind.as_deref().unwrap_or("unclassified"))
                    ),
                    RED,
                    color,
                )
            } else {
                "ok".to_owned()
            };
            parts.push(status);
            if let Some(code) = e.exit_status {
                parts.push(format!("exit_status={code}"));
            }
            if e.lossy == Some(true) {
                parts.push("lossy".to_owned());
            }
            if let Some(output) = text_or_summary(&e.content, &e.output) {
                parts.push(format!("output={output}"));
            }
        }
        EventKind::ModelFeedback(e) => {
            parts.push(paint(
                &safe(e.error_kind.as_deref().unwrap_or("unclassified")),
                YELLOW,
                color,
            ));
            if let Some(text) = text_or_summary(&e.content, &e.output) {
                parts.push(format!("feedback={text}"));
            }
        }
        EventKind::FinishGate(e) => {
            parts.push(match e.accepted {
                Some(true) => "accepted".to_owned(),
                _ => paint("rejected", YELLOW, color),
            });
            if let Some(text) = text_or_summary(&e.content, &e.output) {
                parts.push(format!("output={text}"));
            }
        }
        EventKind::RunFinished(_) | EventKind::InternalError(_) => {
            if let Some(reason) = event.ending() {
                parts.push(reason.as_str().to_owned());
            }
            if let Some(steps) = event.steps_used() {
                parts.push(format!("steps_used={steps}"));
            }
            if let Some(kind) = event.error_kind() {
                parts.push(format!("error_kind={}", safe(kind)));
            }
            let error = match &event.kind {
                EventKind::RunFinished(e) => e.error.as_deref(),
                EventKind::InternalError(e) => e.error.as_deref(),
                _ => None,
            };
            if let Some(error) = error {
                parts.push(format!("error={}", safe(&shorten(error))));
            }
        }
        EventKind::ModelRetry(e) => {
            parts.push(paint(
                &safe(e.error_kind.as_deref().unwrap_or("unclassified")),
                YELLOW,
                color,
            ));
            if let Some(status) = e.http_status {
                parts.push(format!("http_status={status}"));
            }
            if let Some(wait) = e.wait_ms {
                parts.push(format!("wait_ms={wait}"));
            }
        }
        EventKind::ScorerCall(e) => {
            if let Some(scorer) = &e.scorer {
                parts.push(format!("scorer={}", safe(scorer)));
            }
        }
        EventKind::Unknown { .. } => parts.push("(unknown event type)".to_owned()),
    }
    if let Some(ms) = event.duration_ms() {
        parts.push(format!("{ms}ms"));
    }
    parts.join(" ")
}

/// Trace text made safe for a terminal.
fn safe(text: &str) -> String {
    crate::text::escape(text).into_owned()
}

/// The first [`INLINE_LIMIT`] characters, with `…` when there were more; reads no further.
fn shorten(text: &str) -> String {
    match text.char_indices().nth(INLINE_LIMIT) {
        None => text.to_owned(),
        Some((end, _)) => format!("{}…", &text[..end]),
    }
}

/// Arguments as compact JSON, written only as far as [`shorten`] shows them: large arguments
/// (a file's content) are neither copied nor written whole.
fn inline_json(arguments: &serde_json::Map<String, serde_json::Value>) -> String {
    // Enough bytes for more than INLINE_LIMIT characters of up to 4 bytes each.
    let mut head = Head {
        bytes: Vec::new(),
        limit: 4 * (INLINE_LIMIT + 2),
    };
    // Stopping at the limit is the only error a `Vec` can give.
    let _ = serde_json::to_writer(&mut head, arguments);
    let mut bytes = head.bytes;
    loop {
        match String::from_utf8(bytes) {
            Ok(text) => return text,
            // A character cut at the limit: drop its first bytes.
            Err(err) => {
                let valid = err.utf8_error().valid_up_to();
                bytes = err.into_bytes();
                bytes.truncate(valid);
            }
        }
    }
}

/// A writer that keeps the first `limit` bytes, then refuses more.
struct Head {
    bytes: Vec<u8>,
    limit: usize,
}

impl std::io::Write for Head {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let room = self.limit - self.bytes.len();
        if room == 0 {
            return Err(std::io::Error::other("enough"));
        }
        let n = buf.len().min(room);
        self.bytes.extend_from_slice(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortening_reads_no_further_than_it_shows() {
        assert_eq!(shorten("abc"), "abc");
        let exact = "é".repeat(INLINE_LIMIT);
        assert_eq!(shorten(&exact), exact);
        let long = "😀".repeat(INLINE_LIMIT + 1);
        assert_eq!(shorten(&long), format!("{}…", "😀".repeat(INLINE_LIMIT)));
    }

    #[test]
    fn arguments_are_shown_as_their_whole_json_shortened() {
        for value in [
            serde_json::json!({}),
            serde_json::json!({"a": 1, "b": "x"}),
            serde_json::json!({"content": "😀é\n\"".repeat(400), "path": "a"}),
            serde_json::json!({"content": "x".repeat(INLINE_LIMIT - 12)}),
        ] {
            let serde_json::Value::Object(map) = value else {
                unreachable!()
            };
            let whole = serde_json::Value::Object(map.clone()).to_string();
            assert_eq!(shorten(&inline_json(&map)), shorten(&whole));
        }
    }
}
