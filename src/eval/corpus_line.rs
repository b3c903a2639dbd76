//! What `eval --traces` keeps of each corpus line while it checks the corpus at load: the line's
//! run, whether it starts or ends one, and the few things a replay needs to be there (the task,
//! each turn's action and its content), read from the borrowed view ([`crate::trace::parse_event`])
//! and the line's top-level keys instead of parsing the whole event with serde.
//!
//! The check must refuse exactly what the full reader and [`ReplayModel::check`] refuse, with the
//! same messages, since every run is read again with the full reader when its task runs:
//!
//! - a line is well-formed when the borrowed view reads it, the rule the full reader applies to
//!   every line too (the differential tests and fuzz target hold the view to serde); a line it
//!   refuses is parsed the full way to give the full reader's message;
//! - a line not written as serde_json writes (whitespace, escaped keys), or whose `max_steps`,
//!   `action_type` or `arguments` cannot be judged from its text alone, is parsed the full way;
//! - [`replay_check`] follows [`ReplayModel::check`] rule by rule, and a test holds the two to the
//!   same verdict on every run of the sample traces and on mutated runs.
//!
//! [`ReplayModel::check`]: crate::replay::ReplayModel::check

use crate::model::InvalidOutputKind;
use crate::replay::ReplayError;
use crate::run::{ExitReason, RunOutcome};
use crate::trace::{Event, EventKind, EventRefKind, LineItem, parse_event, parse_line};

/// One checked corpus line.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct CorpusLine {
    run_id: String,
    step: u64,
    kind: LineKind,
}

/// What the replay check reads of a line, by its event type.
#[derive(Debug, Clone, PartialEq)]
enum LineKind {
    /// `run_started`: whether it records the task, its step budget, and whether it names a
    /// finish gate (`finish_gate_hash`).
    RunStarted {
        task: bool,
        max_steps: Option<u32>,
        gate: bool,
    },
    /// `model_action`: its `action_type`, and whether `tool_name`, `arguments` (as the full
    /// reader keeps them) and `answer` are there.
    Action {
        action_type: Option<String>,
        tool_name: bool,
        arguments: bool,
        answer: bool,
    },
    /// `model_feedback`: its `error_kind`, and whether `content` is there.
    Feedback {
        error_kind: Option<String>,
        content: bool,
    },
    /// `run_finished`, or a bare `internal_error`.
    Ending(ExitReason),
    /// An event type this version does not know.
    Unknown(String),
    /// `observation`: a tool's answer, which a replay with live tools never reads.
    Observation,
    /// `finish_gate`: a recorded gate verdict.
    Gate,
    /// Any other event.
    Other,
}

impl LineItem for CorpusLine {
    fn from_line(bytes: &[u8]) -> Result<Option<Self>, String> {
        if bytes
            .iter()
            .all(|byte| matches!(byte, b' ' | b'\t' | b'\r'))
        {
            return Ok(None);
        }
        match from_view(bytes) {
            Some(line) => Ok(Some(line)),
            // Refused by the view, or not judged from the text: the full reader's verdict and
            // message.
            None => parse_line(bytes).map(|event| event.map(|event| CorpusLine::of(&event))),
        }
    }

    fn run_id(&self) -> &str {
        &self.run_id
    }

    fn starts_run(&self) -> bool {
        matches!(self.kind, LineKind::RunStarted { .. })
    }

    fn ends_run(&self) -> bool {
        matches!(self.kind, LineKind::Ending(_))
    }

    fn unknown_event_type(&self) -> Option<&str> {
        match &self.kind {
            LineKind::Unknown(event_type) => Some(event_type),
            _ => None,
        }
    }
}

impl CorpusLine {
    /// What the check reads of an event the full reader parsed.
    fn of(event: &Event) -> CorpusLine {
        let kind = match &event.kind {
            EventKind::RunStarted(started) => LineKind::RunStarted {
                task: started.task.is_some(),
                max_steps: started.max_steps,
                gate: started.finish_gate_hash.is_some(),
            },
            EventKind::ModelAction(action) => LineKind::Action {
                action_type: action.action_type.clone(),
                tool_name: action.tool_name.is_some(),
                arguments: action.arguments.is_some(),
                answer: action.answer.is_some(),
            },
            EventKind::ModelFeedback(feedback) => LineKind::Feedback {
                error_kind: feedback.error_kind.clone(),
                content: feedback.content.is_some(),
            },
            EventKind::Unknown { event_type, .. } => LineKind::Unknown(event_type.clone()),
            EventKind::Observation(_) => LineKind::Observation,
            EventKind::FinishGate(_) => LineKind::Gate,
            _ => match event.ending() {
                Some(reason) => LineKind::Ending(reason),
                None => LineKind::Other,
            },
        };
        CorpusLine {
            run_id: event.run_id.clone(),
            step: event.step,
            kind,
        }
    }

    /// The event type, as the replay check names it.
    fn event_type(&self) -> &'static str {
        match self.kind {
            LineKind::RunStarted { .. } => "run_started",
            LineKind::Action { .. } => "model_action",
            LineKind::Feedback { .. } => "model_feedback",
            // Never named: only the three above lack content.
            _ => "",
        }
    }
}

/// Whether a replay of the run reads each of its lines: all of them when the run shows a finish
/// gate (its recorded verdicts are arranged with the steps, and a malformed observation keeps the
/// recorded gate from being used, as in a replay), and otherwise all but the observations. A
/// replay with live tools never reads the tools' recorded answers, most of a recording's bytes.
pub(super) fn read_by_replay(events: &[(u64, CorpusLine)]) -> impl Fn(&CorpusLine) -> bool {
    let gated = events.iter().any(|(_, e)| {
        matches!(
            e.kind,
            LineKind::Gate | LineKind::RunStarted { gate: true, .. }
        )
    });
    move |line| gated || line.kind != LineKind::Observation
}

/// The line read through the borrowed view and its top-level keys; `None` when the view refuses
/// it or the text alone cannot tell (the caller parses it the full way).
fn from_view(bytes: &[u8]) -> Option<CorpusLine> {
    let event = parse_event(bytes).ok()?;
    let run_id = String::from_utf8(event.run_id.into_owned()).ok()?;
    let kind = match event.kind {
        EventRefKind::RunStarted => {
            let (mut task, mut max_steps, mut gate) = (false, None, false);
            each_key(bytes, |key, value| {
                match key {
                    b"task" => task = value != b"null",
                    b"finish_gate_hash" => gate = value != b"null",
                    b"max_steps" if value != b"null" => {
                        max_steps = Some(std::str::from_utf8(value).ok()?.parse().ok()?);
                    }
                    _ => {}
                }
                Some(())
            })?;
            LineKind::RunStarted {
                task,
                max_steps,
                gate,
            }
        }
        EventRefKind::ToolCall { .. } | EventRefKind::OtherAction => {
            let (mut action_type, mut tool_name, mut arguments, mut answer) =
                (None, false, false, false);
            each_key(bytes, |key, value| {
                match key {
                    b"action_type" if value != b"null" => action_type = Some(plain_string(value)?),
                    b"tool_name" => tool_name = value != b"null",
                    b"arguments" => arguments = value != b"null" && kept_arguments(value),
                    b"answer" => answer = value != b"null",
                    _ => {}
                }
                Some(())
            })?;
            LineKind::Action {
                action_type,
                tool_name,
                arguments,
                answer,
            }
        }
        EventRefKind::ModelFeedback { error_kind } => {
            let error_kind = match error_kind {
                Some(kind) => Some(String::from_utf8(kind.into_owned()).ok()?),
                None => None,
            };
            let mut content = false;
            each_key(bytes, |key, value| {
                if key == b"content" {
                    content = value != b"null";
                }
                Some(())
            })?;
            LineKind::Feedback {
                error_kind,
                content,
            }
        }
        EventRefKind::Ended { exit_reason, .. } => LineKind::Ending(exit_reason),
        EventRefKind::Observation { .. } => LineKind::Observation,
        EventRefKind::FinishGate { .. } => LineKind::Gate,
        EventRefKind::Unknown { event_type } => {
            LineKind::Unknown(String::from_utf8(event_type.into_owned()).ok()?)
        }
        _ => LineKind::Other,
    };
    Some(CorpusLine {
        run_id,
        step: event.step,
        kind,
    })
}

/// Calls `each` with every top-level key and raw value of a line written as serde_json writes
/// (no whitespace); `None` if the line is not that, or `each` gives up on a value.
fn each_key(line: &[u8], mut each: impl FnMut(&[u8], &[u8]) -> Option<()>) -> Option<()> {
    let mut pairs = crate::trace::top_level_pairs(line);
    for pair in pairs.by_ref() {
        each(pair.key, pair.value)?;
    }
    pairs.ended_well().then_some(())
}

/// A JSON string without escapes, as text; `None` for anything else.
fn plain_string(value: &[u8]) -> Option<String> {
    let inner = value.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
    if inner.contains(&b'\\') {
        return None;
    }
    String::from_utf8(inner.to_vec()).ok()
}

/// Whether the full reader keeps these `arguments` (it leaves out arguments holding a number too
/// large for an `f64`): judged from the text when no number could be that large, by reading them
/// as the full reader does otherwise.
fn kept_arguments(value: &[u8]) -> bool {
    if !may_not_be_representable(value) {
        return true;
    }
    serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(value).is_ok()
}

/// Whether a value may hold a number beyond an `f64` (an exponent, or 300 digits in a row) or a
/// `\u` escape (a lone surrogate): the text alone does not tell whether serde reads it.
fn may_not_be_representable(value: &[u8]) -> bool {
    let mut digits = 0;
    let mut previous = 0u8;
    for &byte in value {
        if byte.is_ascii_digit() {
            digits += 1;
            if digits >= 300 {
                return true;
            }
        } else {
            digits = 0;
            let exponent =
                matches!(byte, b'e' | b'E') && (previous.is_ascii_digit() || previous == b'.');
            if exponent || (byte == b'u' && previous == b'\\') {
                return true;
            }
        }
        previous = byte;
    }
    false
}

/// The run's outcome, from its first ending event (as [`crate::trace::RecordedRun::outcome`]).
pub(super) fn outcome(events: &[(u64, CorpusLine)]) -> RunOutcome {
    events
        .iter()
        .find_map(|(_, line)| match line.kind {
            LineKind::Ending(reason) => Some(reason),
            _ => None,
        })
        .map_or(RunOutcome::Incomplete, RunOutcome::Ended)
}

/// [`ReplayModel::check`] of a run read as corpus lines: the same errors, in the same order, and
/// the recorded step budget.
///
/// [`ReplayModel::check`]: crate::replay::ReplayModel::check
pub(super) fn replay_check(
    run_id: &str,
    events: &[(u64, CorpusLine)],
) -> Result<Option<u32>, ReplayError> {
    let missing =
        |line: u64, event: &CorpusLine, field: &'static str| ReplayError::MissingContent {
            run_id: run_id.to_owned(),
            line,
            event_type: event.event_type().to_owned(),
            step: event.step,
            field,
        };
    let malformed = |line: u64, problem: String| ReplayError::Malformed {
        run_id: run_id.to_owned(),
        line,
        problem,
    };
    let Some((line, started, task, max_steps)) = events.iter().find_map(|(line, e)| match e.kind {
        LineKind::RunStarted {
            task, max_steps, ..
        } => Some((*line, e, task, max_steps)),
        _ => None,
    }) else {
        let line = events.first().map_or(0, |(line, _)| *line);
        return Err(malformed(
            line,
            "the run has no run_started event".to_owned(),
        ));
    };
    if !task {
        return Err(missing(line, started, "task"));
    }
    for (line, event) in events {
        match &event.kind {
            LineKind::Action {
                action_type,
                tool_name,
                arguments,
                answer,
            } => match action_type.as_deref() {
                Some("tool_call") if !tool_name => return Err(missing(*line, event, "tool_name")),
                Some("tool_call") if !arguments => return Err(missing(*line, event, "arguments")),
                Some("tool_call") => {}
                Some("finish") if !answer => return Err(missing(*line, event, "answer")),
                Some("finish") => {}
                Some(other) => {
                    return Err(malformed(*line, format!("unknown action_type {other:?}")));
                }
                None => return Err(missing(*line, event, "action_type")),
            },
            LineKind::Feedback {
                error_kind,
                content,
            } => {
                let Some(kind_name) = error_kind else {
                    return Err(missing(*line, event, "error_kind"));
                };
                if InvalidOutputKind::parse(kind_name).is_none() {
                    let problem = format!("unknown model_feedback error_kind {kind_name:?}");
                    return Err(malformed(*line, problem));
                }
                if !content {
                    return Err(missing(*line, event, "content"));
                }
            }
            _ => {}
        }
    }
    Ok(max_steps)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::ReplayModel;
    use crate::trace::RecordedRun;

    /// The events of `lines` (one run) read both ways: the check's verdict must be the replay's.
    fn assert_same_verdict(lines: &[String]) {
        let mut full = Vec::new();
        let mut light = Vec::new();
        for (i, line) in lines.iter().enumerate() {
            let number = i as u64 + 1;
            let event = parse_line(line.as_bytes());
            let corpus = CorpusLine::from_line(line.as_bytes());
            match (event, corpus) {
                (Ok(Some(event)), Ok(Some(corpus))) => {
                    assert_eq!(corpus, CorpusLine::of(&event), "{line}");
                    full.push((number, event));
                    light.push((number, corpus));
                }
                (Ok(None), Ok(None)) => {}
                (Err(a), Err(b)) => assert_eq!(a, b, "{line}"),
                (a, b) => panic!("the readers disagree on {line}: {a:?} against {b:?}"),
            }
        }
        let run_id = full
            .first()
            .map_or(String::new(), |(_, e): &(u64, Event)| e.run_id.clone());
        let run = RecordedRun {
            run_id: run_id.clone(),
            events: full,
        };
        assert_eq!(
            replay_check(&run_id, &light),
            ReplayModel::check(&run),
            "{lines:#?}"
        );
    }

    fn sample_runs() -> Vec<Vec<String>> {
        let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_traces");
        let mut files: Vec<_> = std::fs::read_dir(&folder)
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
            .collect();
        files.sort();
        let mut runs: Vec<Vec<String>> = Vec::new();
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            let mut by_id: Vec<(String, Vec<String>)> = Vec::new();
            for line in text.lines() {
                let id = parse_event(line.as_bytes())
                    .map(|e| String::from_utf8_lossy(&e.run_id).into_owned())
                    .unwrap_or_default();
                match by_id.iter_mut().find(|(i, _)| *i == id) {
                    Some((_, lines)) => lines.push(line.to_owned()),
                    None => by_id.push((id, vec![line.to_owned()])),
                }
            }
            runs.extend(by_id.into_iter().map(|(_, lines)| lines));
        }
        assert!(runs.len() > 10, "{}", runs.len());
        runs
    }

    #[test]
    fn the_check_gives_the_replays_verdict_on_every_sample_run() {
        for run in sample_runs() {
            assert_same_verdict(&run);
        }
    }

    #[test]
    fn the_check_gives_the_replays_verdict_on_mutated_runs() {
        // Each mutation of each line that holds its text: removed, set to null, spaced out.
        let mutations: [(&str, &str); 14] = [
            (r#""task":"#, r#""task_":"#),
            (r#""arguments":"#, r#""arguments_":"#),
            (r#""arguments":{"#, r#""arguments":{"big":1e999,"#),
            (r#""arguments":{"#, r#""arguments":{"small":1e-5,"#),
            (r#""arguments":{"#, r#""arguments":{"s":"\ud800","#),
            (r#""answer":"#, r#""answer_":"#),
            (r#""action_type":"tool_call""#, r#""action_type":"ask""#),
            (
                r#""action_type":"finish""#,
                r#""action_type":"fin\u0069sh""#,
            ),
            (r#""action_type":"#, r#""action_type_":"#),
            (r#""tool_name":"#, r#""tool_name_":"#),
            (r#""max_steps":"#, r#""max_steps": "#),
            (r#""max_steps":"#, r#""max_steps":null,"x":"#),
            (
                r#""event_type":"run_started""#,
                r#""event_type":"run_begun""#,
            ),
            (r#""content":"#, r#""content_":"#),
        ];
        let mut mutated = 0;
        for run in sample_runs() {
            for (i, line) in run.iter().enumerate() {
                for (from, to) in mutations {
                    if !line.contains(from) {
                        continue;
                    }
                    let mut changed = run.clone();
                    changed[i] = line.replacen(from, to, 1);
                    assert_same_verdict(&changed);
                    mutated += 1;
                }
            }
        }
        assert!(mutated > 50, "{mutated}");
        // Feedback of a kind this version does not know, and lines the view refuses.
        let feedback = r#"{"run_id":"f","step":1,"event_type":"model_feedback","error_kind":"#;
        let start = r#"{"run_id":"f","step":0,"event_type":"run_started","task":"t"}"#;
        for line in [
            format!(r#"{feedback}"no_such_kind","content":"c"}}"#),
            format!(r#"{feedback}"invalid_json"}}"#),
            format!(r#"{feedback}"invalid_json","content":"c"}}"#),
            format!(r#"{feedback}null,"content":"c"}}"#),
            r#"{"run_id":"f","step":"1","event_type":"model_action"}"#.to_owned(),
            r#"{"run_id":"f","step":1,"event_type":"model_action","arguments":5}"#.to_owned(),
            r#" {"run_id":"f","step":1,"event_type":"model_action","action_type":"finish","answer":"a"} "#.to_owned(),
            "not json".to_owned(),
        ] {
            assert_same_verdict(&[start.to_owned(), line]);
        }
    }
}
