//! A trace line read for `show`'s text: the line of text `show` prints for its event, made as the
//! line is read, so a run holds a few short strings per event instead of parsed events. A line
//! as looptrace writes it (no whitespace, no escaped keys) is checked by the borrowed view
//! ([`super::view::parse_event`]), as every line is, and its printed fields are read straight
//! from the line: the texts `show` cuts to [`INLINE_LIMIT`] characters are decoded only that far,
//! everything else `show` never prints is not decoded at all, and no event is built. Any other
//! line, or one with a value this does not read exactly as serde does, is read as
//! [`TextLine`] reads it; a property test holds the two paths to the same text.

use std::borrow::Cow;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::as_written::{is_canonical_map, pairs};
use super::event::{Capture, Event, ReplayOf, error_by_rule};
use super::json_string::unescape;
use super::reader::LineItem;
use super::show::{
    Described, DescribedKind, INLINE_LIMIT, described_line, event_line, inline_json,
};
use super::text_line::{TextLine, cut_after};
use super::view::{EventRefKind, parse_event};
use crate::run::ExitReason;

/// One event as `show` prints it, in colour when `COLOR`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShownEvent<const COLOR: bool> {
    run_id: String,
    starts: bool,
    /// For an ending event: how the run ended, and its steps (`steps_used`, else its step).
    ending: Option<(ExitReason, u64)>,
    /// Its `event_type`, when this version does not know it.
    unknown: Option<String>,
    /// What `show` prints after the line number.
    text: String,
}

impl<const COLOR: bool> ShownEvent<COLOR> {
    /// The line of text `show` prints for the event, after its line number.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// For an ending event: how the run ended, and the steps `show` says it took.
    pub fn ending(&self) -> Option<(ExitReason, u64)> {
        self.ending
    }

    fn of_event(event: &Event) -> Self {
        ShownEvent {
            run_id: event.run_id.clone(),
            starts: event.is_run_started(),
            ending: event.ending().map(|reason| {
                let steps = event.steps_used().map_or(event.step, u64::from);
                (reason, steps)
            }),
            unknown: event.unknown_event_type().map(str::to_owned),
            text: event_line(event, COLOR),
        }
    }

    /// Read from the view and the line's own fields, when the line is written without
    /// whitespace and every printed value reads here exactly as serde reads it.
    fn from_view(bytes: &[u8]) -> Option<Self> {
        let view = parse_event(bytes).ok()?;
        let mut described = Described::default();
        let mut steps_used = None;
        described.kind = match view.kind {
            EventRefKind::RunStarted => DescribedKind::RunStarted,
            EventRefKind::ToolCall { .. } | EventRefKind::OtherAction => DescribedKind::ModelAction,
            EventRefKind::Observation { .. } => DescribedKind::Observation,
            EventRefKind::ModelFeedback { .. } => DescribedKind::ModelFeedback,
            EventRefKind::FinishGate { .. } => DescribedKind::FinishGate,
            EventRefKind::ModelRetry => DescribedKind::ModelRetry,
            EventRefKind::ScorerCall => DescribedKind::ScorerCall,
            EventRefKind::Ended { exit_reason, .. } => {
                described.ending = Some(exit_reason);
                DescribedKind::Ending
            }
            EventRefKind::Unknown { .. } => return None,
        };
        let mut event_type = None;
        let mut is_error = None;
        let mut arguments = None;
        let mut argument_keys = None;
        let mut fields = pairs(bytes);
        for pair in fields.by_ref() {
            let value = pair.value;
            let kind = described.kind;
            use DescribedKind as K;
            match pair.key {
                b"event_type" => event_type = Some(name(value)?),
                b"capture" if kind == K::RunStarted => {
                    described.capture = serde::<Option<Capture>>(value)?.map(|c| c.as_str());
                }
                b"max_steps" if kind == K::RunStarted => described.max_steps = integer(value)?,
                b"replay_of" if kind == K::RunStarted => {
                    described.replay_of = serde::<Option<ReplayOf>>(value)?
                        .map(|r| (Cow::Owned(r.source), Cow::Owned(r.run_id)));
                }
                b"task" if kind == K::RunStarted => described.text = shortened(value)?,
                b"input_summary" if kind == K::RunStarted => described.summary = text(value)?,
                b"action_type" if kind == K::ModelAction => described.action_type = text(value)?,
                b"tool_name" if matches!(kind, K::ModelAction | K::Observation) => {
                    described.tool_name = text(value)?;
                }
                b"arguments" if kind == K::ModelAction => arguments = Some(value),
                b"argument_keys" if kind == K::ModelAction => argument_keys = Some(value),
                b"answer" if kind == K::ModelAction => described.text = shortened(value)?,
                b"content" if matches!(kind, K::Observation | K::ModelFeedback | K::FinishGate) => {
                    described.text = shortened(value)?;
                }
                b"output"
                    if matches!(
                        kind,
                        K::ModelAction | K::Observation | K::ModelFeedback | K::FinishGate
                    ) =>
                {
                    described.summary = text(value)?;
                }
                b"is_error" if kind == K::Observation => is_error = boolean(value)?,
                b"error_kind"
                    if matches!(
                        kind,
                        K::Observation | K::ModelFeedback | K::Ending | K::ModelRetry
                    ) =>
                {
                    described.error_kind = text(value)?;
                }
                b"exit_status" if kind == K::Observation => described.exit_status = integer(value)?,
                b"lossy" if kind == K::Observation => described.lossy = boolean(value)?,
                b"accepted" if kind == K::FinishGate => described.accepted = boolean(value)?,
                b"steps_used" if kind == K::Ending => steps_used = integer(value)?,
                b"error" if kind == K::Ending => described.text = shortened(value)?,
                b"http_status" if kind == K::ModelRetry => described.http_status = integer(value)?,
                b"wait_ms" if kind == K::ModelRetry => described.wait_ms = integer(value)?,
                b"scorer" if kind == K::ScorerCall => described.scorer = text(value)?,
                b"duration_ms" if !matches!(kind, K::RunStarted | K::ScorerCall) => {
                    described.duration_ms = serde::<Option<f64>>(value)?;
                }
                _ => {}
            }
        }
        if !fields.ended_well() {
            return None;
        }
        described.is_error = error_by_rule(is_error, described.error_kind.is_some());
        described.steps_used = steps_used;
        described.arguments = match arguments {
            // Already the compact JSON serde would write them as: shown as they are.
            Some(raw) if is_canonical_map(raw) => Cow::Borrowed(std::str::from_utf8(raw).ok()?),
            Some(raw) => match read_arguments(raw)? {
                Some(arguments) => Cow::Owned(inline_json(&arguments)),
                None => Cow::Owned(keys_shown(argument_keys)?),
            },
            None => Cow::Owned(keys_shown(argument_keys)?),
        };
        let run_id = String::from_utf8(view.run_id.into_owned()).ok()?;
        let ending = described
            .ending
            .map(|reason| (reason, steps_used.map_or(view.step, u64::from)));
        Some(ShownEvent {
            run_id,
            starts: described.kind == DescribedKind::RunStarted,
            ending,
            unknown: None,
            text: described_line(view.step, event_type?, &described, COLOR),
        })
    }
}

impl<const COLOR: bool> LineItem for ShownEvent<COLOR> {
    fn from_line(bytes: &[u8]) -> Result<Option<Self>, String> {
        if let Some(shown) = ShownEvent::from_view(bytes) {
            return Ok(Some(shown));
        }
        Ok(TextLine::from_line(bytes)?.map(|TextLine(event)| ShownEvent::of_event(&event)))
    }

    fn run_id(&self) -> &str {
        &self.run_id
    }

    fn starts_run(&self) -> bool {
        self.starts
    }

    fn ends_run(&self) -> bool {
        self.ending.is_some()
    }

    fn unknown_event_type(&self) -> Option<&str> {
        self.unknown.as_deref()
    }
}

/// A value of a type serde reads it as (small, rare values: names, key lists, numbers); `None`
/// to read the line the other way.
fn serde<T: DeserializeOwned>(value: &[u8]) -> Option<T> {
    serde_json::from_slice(value).ok()
}

/// `argument_keys` as `show` prints them when there are no arguments: `(a, b)`, or nothing.
fn keys_shown(raw: Option<&[u8]>) -> Option<String> {
    let keys = match raw {
        Some(raw) => serde::<Option<Vec<String>>>(raw)?,
        None => None,
    };
    Some(
        keys.map(|keys| format!("({})", keys.join(", ")))
            .unwrap_or_default(),
    )
}

/// `arguments` as the reader takes them ([`super::wire`]): absent when serde cannot represent
/// them (a number beyond `f64`); `None` when they are no object (the line is not read here).
fn read_arguments(raw: &[u8]) -> Option<Option<Map<String, Value>>> {
    if raw == b"null" {
        return Some(None);
    }
    match serde_json::from_slice::<Map<String, Value>>(raw) {
        Ok(arguments) => Some(Some(arguments)),
        Err(err) if err.classify() == serde_json::error::Category::Data => None,
        Err(_) => Some(None),
    }
}

/// An integer of the type serde reads the field as, or null.
fn integer<T: std::str::FromStr>(value: &[u8]) -> Option<Option<T>> {
    if value == b"null" {
        return Some(None);
    }
    let digits = value.strip_prefix(b"-").unwrap_or(value);
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(value).ok()?.parse().ok().map(Some)
}

fn boolean(value: &[u8]) -> Option<Option<bool>> {
    match value {
        b"true" => Some(Some(true)),
        b"false" => Some(Some(false)),
        b"null" => Some(None),
        _ => None,
    }
}

/// The `event_type`, which needs no decoding.
fn name(value: &[u8]) -> Option<&str> {
    match value {
        [b'"', inner @ .., b'"'] if !has_escape(inner) => std::str::from_utf8(inner).ok(),
        _ => None,
    }
}

/// A whole string, or null.
fn text(value: &[u8]) -> Option<Option<Cow<'_, str>>> {
    match value {
        b"null" => Some(None),
        [b'"', inner @ .., b'"'] if !has_escape(inner) => std::str::from_utf8(inner)
            .ok()
            .map(|t| Some(Cow::Borrowed(t))),
        _ => serde::<Option<String>>(value).map(|t| t.map(Cow::Owned)),
    }
}

/// A string's first [`INLINE_LIMIT`] characters with `…` when longer (as `show` shortens), or
/// null; decoded no further than that.
fn shortened(value: &[u8]) -> Option<Option<Cow<'_, str>>> {
    let inner = match value {
        b"null" => return Some(None),
        [b'"', inner @ .., b'"'] => inner,
        _ => return None,
    };
    let (head, more) = decode_head(inner, INLINE_LIMIT)?;
    Some(Some(if more {
        Cow::Owned(format!("{head}…"))
    } else {
        head
    }))
}

/// The first `limit` characters of a JSON string's contents (escaped, without its quotes), and
/// whether more follow. Reads at most a few bytes past them.
fn decode_head(inner: &[u8], limit: usize) -> Option<(Cow<'_, str>, bool)> {
    // `limit + 1` characters take at most four bytes each.
    let head = &inner[..inner.len().min(4 * (limit + 1))];
    if !has_escape(head) {
        let text = match std::str::from_utf8(head) {
            Ok(text) => text,
            // Cut inside a character: a whole one follows in `inner`.
            Err(err) if err.error_len().is_none() => {
                std::str::from_utf8(&head[..err.valid_up_to()]).ok()?
            }
            Err(_) => return None,
        };
        return Some(match text.char_indices().nth(limit) {
            Some((end, _)) => (Cow::Borrowed(&text[..end]), true),
            None => (Cow::Borrowed(text), false),
        });
    }
    // With escapes: the head's end found, then decoded as the scanner decodes.
    Some(match cut_after(inner, limit) {
        Some(end) => (Cow::Owned(unescape(&inner[..end], 0).ok()?), true),
        None => (Cow::Owned(unescape(inner, 0).ok()?), false),
    })
}

fn has_escape(inner: &[u8]) -> bool {
    memchr::memchr(b'\\', inner).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_are_decoded_as_far_as_asked() {
        let inner = br#"a\n\ud83d\ude00\u00e9\"b"#;
        assert_eq!(decode_head(inner, 3), Some(("a\n😀".into(), true)));
        assert_eq!(decode_head(inner, 6), Some(("a\n😀é\"b".into(), false)));
        assert_eq!(decode_head(inner, 7), Some(("a\n😀é\"b".into(), false)));
        assert_eq!(
            decode_head("é".repeat(5).as_bytes(), 5),
            Some(("ééééé".into(), false))
        );
        assert_eq!(
            decode_head("é".repeat(6).as_bytes(), 5),
            Some(("ééééé".into(), true))
        );
        assert_eq!(decode_head(br"\ud83d", 5), None);
    }

    #[test]
    fn lines_are_read_the_fast_way_only_when_written_compactly() {
        let line = br#"{"run_id":"r","step":1,"event_type":"observation","content":"x"}"#;
        assert!(ShownEvent::<false>::from_view(line).is_some());
        let spaced = br#"{"run_id":"r", "step":1,"event_type":"observation","content":"x"}"#;
        assert!(ShownEvent::<false>::from_view(spaced).is_none());
        let unknown = br#"{"run_id":"r","step":1,"event_type":"new_kind"}"#;
        assert!(ShownEvent::<false>::from_view(unknown).is_none());
    }
}
