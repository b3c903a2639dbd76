//! The readable rendering of a trace behind `looptrace show`: one line per event, runs separated,
//! each run closed by its outcome. Pure functions of the parsed runs; `show` prints each run as
//! soon as it ends. Every text from the trace is escaped ([`crate::text::escape`]).

use std::borrow::Cow;
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
    let lines = run
        .events
        .iter()
        .map(|(line, event)| (*line, event_line(event, color)));
    let ending = run.finished().and_then(|e| {
        let steps = e.steps_used().map_or(e.step, u64::from);
        Some((e.ending()?, steps))
    });
    render_lines(&run.run_id, occurrence, lines, ending, color)
}

/// Renders one run from its events' lines of text (each after its line number), and its first
/// ending event's exit reason and steps (`steps_used`, else its step).
pub fn render_lines(
    run_id: &str,
    occurrence: u32,
    lines: impl ExactSizeIterator<Item = (u64, impl AsRef<str>)>,
    ending: Option<(ExitReason, u64)>,
    color: bool,
) -> String {
    let mut out = String::new();
    let label = match occurrence {
        0 | 1 => String::new(),
        n => format!(" ({})", ordinal(n)),
    };
    let _ = writeln!(
        out,
        "run {}{label} ({})",
        safe(run_id),
        crate::plural(lines.len() as u64, "event", "events")
    );
    for (line, text) in lines {
        let _ = writeln!(out, "  {:>4}  {}", format!("L{line}"), text.as_ref());
    }
    let outcome = ending.map_or(RunOutcome::Incomplete, |(reason, _)| {
        RunOutcome::Ended(reason)
    });
    let steps = ending
        .map(|(_, s)| format!(" after {s} step{}", if s == 1 { "" } else { "s" }))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "  outcome: {}{steps}",
        paint(outcome.as_str(), outcome_color(outcome), color)
    );
    out
}

/// One event's line of text after its line number: its step, type and [`describe`]d fields.
pub(crate) fn event_line(event: &Event, color: bool) -> String {
    described_line(event.step, event.event_type(), &Described::of(event), color)
}

/// An event's line of text from what [`describe`] shows of it.
pub(crate) fn described_line(
    step: u64,
    event_type: &str,
    described: &Described<'_>,
    color: bool,
) -> String {
    let mut out = String::with_capacity(256);
    let _ = write!(out, "step {:<3} {:<15} ", step, escape(event_type));
    describe(described, color, &mut out);
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

/// What `show` prints of one event, whether read from the parsed event or from its line
/// ([`super::shown_event`]): the texts it shortens already cut to [`INLINE_LIMIT`] characters
/// (with `…` when longer).
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Described<'a> {
    /// Which of the kinds below.
    pub kind: DescribedKind,
    /// `capture` of `run_started`.
    pub capture: Option<&'static str>,
    /// `max_steps` of `run_started`.
    pub max_steps: Option<u32>,
    /// `replay_of` of `run_started`: its source and run id.
    pub replay_of: Option<(Cow<'a, str>, Cow<'a, str>)>,
    /// `action_type` of `model_action`.
    pub action_type: Option<Cow<'a, str>>,
    /// `tool_name`.
    pub tool_name: Option<Cow<'a, str>>,
    /// A tool call's arguments as shown: compact JSON or `(keys)`, not yet shortened.
    pub arguments: Cow<'a, str>,
    /// The shortened text (`task`, `answer`, `content`, `error` of an ending).
    pub text: Option<Cow<'a, str>>,
    /// Its summary (`input_summary`, `output`), shown when there is no text.
    pub summary: Option<Cow<'a, str>>,
    /// Whether an observation failed, by the rule of `Observation::is_error_by_rule`.
    pub is_error: bool,
    /// `error_kind`.
    pub error_kind: Option<Cow<'a, str>>,
    /// `exit_status` of an observation.
    pub exit_status: Option<i32>,
    /// `lossy` of an observation.
    pub lossy: Option<bool>,
    /// `accepted` of a finish gate.
    pub accepted: Option<bool>,
    /// How an ending event ended the run.
    pub ending: Option<ExitReason>,
    /// `steps_used` of an ending.
    pub steps_used: Option<u32>,
    /// `http_status` of a retry.
    pub http_status: Option<u16>,
    /// `wait_ms` of a retry.
    pub wait_ms: Option<u64>,
    /// `scorer` of a scorer call.
    pub scorer: Option<Cow<'a, str>>,
    /// `duration_ms`.
    pub duration_ms: Option<f64>,
}

/// The event kinds as `show` tells them apart.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DescribedKind {
    RunStarted,
    ModelAction,
    Observation,
    ModelFeedback,
    FinishGate,
    /// `run_finished` or `internal_error`.
    Ending,
    ModelRetry,
    ScorerCall,
    #[default]
    Unknown,
}

impl<'a> Described<'a> {
    /// What `show` prints of a parsed event.
    pub(crate) fn of(event: &'a Event) -> Self {
        let text = |text: &'a Option<String>| text.as_deref().map(|t| Cow::Owned(shorten(t)));
        let summary = |summary: &'a Option<String>| summary.as_deref().map(Cow::Borrowed);
        let name = |name: &'a Option<String>| name.as_deref().map(Cow::Borrowed);
        let mut described = Described {
            duration_ms: event.duration_ms(),
            ..Described::default()
        };
        match &event.kind {
            EventKind::RunStarted(e) => {
                described.kind = DescribedKind::RunStarted;
                described.capture = e.capture.map(|c| c.as_str());
                described.max_steps = e.max_steps;
                described.replay_of = (e.replay_of.as_ref()).map(|r| {
                    (
                        Cow::Borrowed(r.source.as_str()),
                        Cow::Borrowed(r.run_id.as_str()),
                    )
                });
                described.text = text(&e.task);
                described.summary = summary(&e.input_summary);
            }
            EventKind::ModelAction(e) => {
                described.kind = DescribedKind::ModelAction;
                described.action_type = name(&e.action_type);
                described.tool_name = name(&e.tool_name);
                described.arguments = Cow::Owned(match (&e.arguments, &e.argument_keys) {
                    (Some(arguments), _) => inline_json(arguments),
                    (None, Some(keys)) => format!("({})", keys.join(", ")),
                    (None, None) => String::new(),
                });
                described.text = text(&e.answer);
                described.summary = summary(&e.output);
            }
            EventKind::Observation(e) => {
                described.kind = DescribedKind::Observation;
                described.tool_name = name(&e.tool_name);
                described.is_error = e.is_error_by_rule();
                described.error_kind = name(&e.error_kind);
                described.exit_status = e.exit_status;
                described.lossy = e.lossy;
                described.text = text(&e.content);
                described.summary = summary(&e.output);
            }
            EventKind::ModelFeedback(e) => {
                described.kind = DescribedKind::ModelFeedback;
                described.error_kind = name(&e.error_kind);
                described.text = text(&e.content);
                described.summary = summary(&e.output);
            }
            EventKind::FinishGate(e) => {
                described.kind = DescribedKind::FinishGate;
                described.accepted = e.accepted;
                described.text = text(&e.content);
                described.summary = summary(&e.output);
            }
            EventKind::RunFinished(e) => {
                described.kind = DescribedKind::Ending;
                described.ending = Some(e.exit_reason);
                described.steps_used = e.steps_used;
                described.error_kind = name(&e.error_kind);
                described.text = text(&e.error);
            }
            EventKind::InternalError(e) => {
                described.kind = DescribedKind::Ending;
                described.ending = Some(ExitReason::InternalError);
                described.steps_used = e.steps_used;
                described.error_kind = name(&e.error_kind);
                described.text = text(&e.error);
            }
            EventKind::ModelRetry(e) => {
                described.kind = DescribedKind::ModelRetry;
                described.error_kind = name(&e.error_kind);
                described.http_status = e.http_status;
                described.wait_ms = e.wait_ms;
            }
            EventKind::ScorerCall(e) => {
                described.kind = DescribedKind::ScorerCall;
                described.scorer = name(&e.scorer);
            }
            EventKind::Unknown { .. } => {}
        }
        described
    }
}

/// Writes the fields that matter for one event, content preferred over its summary when
/// captured, separated by spaces.
fn describe(d: &Described<'_>, color: bool, out: &mut String) {
    let mut parts = Parts { out, first: true };
    let text_or_summary = |label: &str, parts: &mut Parts<'_>| {
        if let Some(text) = &d.text {
            let _ = write!(parts.next(), "{label}={}", escape(&format!("{text:?}")));
        } else if let Some(summary) = &d.summary {
            let _ = write!(parts.next(), "{label}={}", escape(summary));
        }
    };
    match d.kind {
        DescribedKind::RunStarted => {
            if let Some(capture) = d.capture {
                let _ = write!(parts.next(), "capture={capture}");
            }
            if let Some(max) = d.max_steps {
                let _ = write!(parts.next(), "max_steps={max}");
            }
            if let Some((source, run_id)) = &d.replay_of {
                let _ = write!(
                    parts.next(),
                    "replay_of={}#{}",
                    escape(source),
                    escape(run_id)
                );
            }
            text_or_summary("task", &mut parts);
        }
        DescribedKind::ModelAction => match d.action_type.as_deref().unwrap_or("?") {
            "tool_call" => {
                let tool = d.tool_name.as_deref().unwrap_or("?");
                let _ = write!(
                    parts.next(),
                    "tool_call {}{}",
                    escape(tool),
                    escape(&shorten(&d.arguments))
                );
            }
            other => {
                parts.next().push_str(&escape(other));
                text_or_summary("answer", &mut parts);
            }
        },
        DescribedKind::Observation => {
            if let Some(tool) = &d.tool_name {
                parts.next().push_str(&escape(tool));
            }
            if d.is_error {
                let kind = d.error_kind.as_deref().unwrap_or("unclassified");
                let status = format!("error {}", escape(kind));
                parts.next().push_str(&paint(&status, RED, color));
            } else {
                parts.next().push_str("ok");
            }
            if let Some(code) = d.exit_status {
                let _ = write!(parts.next(), "exit_status={code}");
            }
            if d.lossy == Some(true) {
                parts.next().push_str("lossy");
            }
            text_or_summary("output", &mut parts);
        }
        DescribedKind::ModelFeedback => {
            let kind = escape(d.error_kind.as_deref().unwrap_or("unclassified"));
            parts.next().push_str(&paint(&kind, YELLOW, color));
            text_or_summary("feedback", &mut parts);
        }
        DescribedKind::FinishGate => {
            match d.accepted {
                Some(true) => parts.next().push_str("accepted"),
                _ => parts.next().push_str(&paint("rejected", YELLOW, color)),
            }
            text_or_summary("output", &mut parts);
        }
        DescribedKind::Ending => {
            if let Some(reason) = d.ending {
                parts.next().push_str(reason.as_str());
            }
            if let Some(steps) = d.steps_used {
                let _ = write!(parts.next(), "steps_used={steps}");
            }
            if let Some(kind) = &d.error_kind {
                let _ = write!(parts.next(), "error_kind={}", escape(kind));
            }
            if let Some(error) = &d.text {
                let _ = write!(parts.next(), "error={}", escape(error));
            }
        }
        DescribedKind::ModelRetry => {
            let kind = escape(d.error_kind.as_deref().unwrap_or("unclassified"));
            parts.next().push_str(&paint(&kind, YELLOW, color));
            if let Some(status) = d.http_status {
                let _ = write!(parts.next(), "http_status={status}");
            }
            if let Some(wait) = d.wait_ms {
                let _ = write!(parts.next(), "wait_ms={wait}");
            }
        }
        DescribedKind::ScorerCall => {
            if let Some(scorer) = &d.scorer {
                let _ = write!(parts.next(), "scorer={}", escape(scorer));
            }
        }
        DescribedKind::Unknown => parts.next().push_str("(unknown event type)"),
    }
    if let Some(ms) = d.duration_ms {
        let _ = write!(parts.next(), "{ms}ms");
    }
}

/// Parts of a line written one after another, a space between each two.
struct Parts<'a> {
    out: &'a mut String,
    first: bool,
}

impl Parts<'_> {
    /// Where the next part goes, after a space unless it is the first.
    fn next(&mut self) -> &mut String {
        if !self.first {
            self.out.push(' ');
        }
        self.first = false;
        self.out
    }
}

/// Trace text made safe for a terminal.
fn safe(text: &str) -> String {
    escape(text).into_owned()
}

/// [`crate::text::escape`], with printable ASCII (which it never changes) let through at once.
fn escape(text: &str) -> Cow<'_, str> {
    if text.bytes().all(|byte| (b' '..=b'~').contains(&byte)) {
        Cow::Borrowed(text)
    } else {
        crate::text::escape(text)
    }
}

/// The first [`INLINE_LIMIT`] characters, with `…` when there were more; reads no further.
pub(crate) fn shorten(text: &str) -> String {
    match text.char_indices().nth(INLINE_LIMIT) {
        None => text.to_owned(),
        Some((end, _)) => format!("{}…", &text[..end]),
    }
}

/// Arguments as compact JSON, written only as far as [`shorten`] shows them: large arguments
/// (a file's content) are neither copied nor written whole.
pub(crate) fn inline_json(arguments: &serde_json::Map<String, serde_json::Value>) -> String {
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
