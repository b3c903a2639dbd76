//! A trace line read for `show`'s text: its event, with the texts `show` cuts to their first
//! [`INLINE_LIMIT`] characters (`task`, `answer`, `content`, `error`) read only that far, and the
//! captured texts it never shows (`raw_output`, `request_body`, `raw_response`) not read at all.
//! Full-capture lines are mostly such texts, so most of a line is checked (by the borrowed view,
//! as every line is) but not decoded, copied or allocated. What `show` prints is the same as from
//! the whole event (a property test holds the two together); a line this cannot shorten safely
//! is read whole.

use super::as_written::top_level;
use super::event::Event;
use super::reader::{LineItem, parse_line};
use super::show::INLINE_LIMIT;
use super::view::parse_event;

/// Texts `show` prints cut to [`INLINE_LIMIT`] characters, with `…` when longer.
const SHORTENED: [&[u8]; 4] = [b"task", b"answer", b"content", b"error"];
/// Captured texts `show` never prints.
const UNSHOWN: [&[u8]; 3] = [b"raw_output", b"request_body", b"raw_response"];

/// One event as `show` prints it.
#[derive(Clone, Debug, PartialEq)]
pub struct TextLine(pub Event);

impl LineItem for TextLine {
    fn from_line(bytes: &[u8]) -> Result<Option<Self>, String> {
        if let Some(Ok(Some(event))) = shortened(bytes).map(|line| parse_line(&line)) {
            return Ok(Some(TextLine(event)));
        }
        Ok(parse_line(bytes)?.map(TextLine))
    }

    fn run_id(&self) -> &str {
        &self.0.run_id
    }

    fn starts_run(&self) -> bool {
        self.0.starts_run()
    }

    fn ends_run(&self) -> bool {
        self.0.ends_run()
    }

    fn unknown_event_type(&self) -> Option<&str> {
        self.0.unknown_event_type()
    }
}

/// The line with its shortened texts cut and unshown texts emptied, when the whole line is
/// well-formed (checked here on the whole line, so nothing cut away could have made it
/// malformed) and written without whitespace; `None` to read the line whole.
fn shortened(bytes: &[u8]) -> Option<Vec<u8>> {
    std::str::from_utf8(bytes).ok()?;
    parse_event(bytes).ok()?;
    let pairs = top_level(bytes)?;
    let mut line = Vec::with_capacity(1024.min(bytes.len()));
    line.push(b'{');
    for (i, (key, value)) in pairs.into_iter().enumerate() {
        if i > 0 {
            line.push(b',');
        }
        line.push(b'"');
        line.extend_from_slice(key);
        line.extend_from_slice(b"\":");
        match value {
            [b'"', inner @ .., b'"'] if SHORTENED.contains(&key) => {
                match cut_after(inner, INLINE_LIMIT + 1) {
                    // Past the cut nothing that could make the string malformed (a lone
                    // surrogate escape) is dropped unseen.
                    Some(end) if !unicode_escape(&inner[end..]) => {
                        line.push(b'"');
                        line.extend_from_slice(&inner[..end]);
                        line.push(b'"');
                    }
                    _ => line.extend_from_slice(value),
                }
            }
            [b'"', inner @ .., b'"'] if UNSHOWN.contains(&key) && !unicode_escape(inner) => {
                line.extend_from_slice(b"\"\"");
            }
            _ => line.extend_from_slice(value),
        }
    }
    line.push(b'}');
    Some(line)
}

/// Where the string contents `inner` (escaped, without quotes) hold `chars` characters, if more
/// follow; `None` if it has no more than `chars`.
pub(super) fn cut_after(inner: &[u8], chars: usize) -> Option<usize> {
    let mut at = 0;
    let mut count = 0;
    while at < inner.len() {
        if count == chars {
            return Some(at);
        }
        at += match inner[at] {
            b'\\' if inner.get(at + 1) == Some(&b'u') => {
                // A surrogate pair is one character.
                let high = inner.get(at + 2..at + 4).is_some_and(|h| {
                    h[0].eq_ignore_ascii_case(&b'd')
                        && matches!(h[1].to_ascii_lowercase(), b'8'..=b'9' | b'a'..=b'b')
                });
                if high && inner.get(at + 6..at + 8) == Some(b"\\u".as_slice()) {
                    12
                } else {
                    6
                }
            }
            b'\\' => 2,
            byte if byte < 0x80 => 1,
            byte if byte >= 0xf0 => 4,
            byte if byte >= 0xe0 => 3,
            _ => 2,
        };
        count += 1;
    }
    None
}

fn unicode_escape(bytes: &[u8]) -> bool {
    memchr::memmem::find(bytes, b"\\u").is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_texts_are_cut_after_one_character_more_than_shown() {
        let content = "é".repeat(500);
        let line = format!(
            r#"{{"run_id":"r","step":1,"event_type":"observation","content":"{content}","raw_output":"x"}}"#
        );
        let cut = shortened(line.as_bytes()).unwrap();
        let expected = format!(
            r#"{{"run_id":"r","step":1,"event_type":"observation","content":"{}","raw_output":""}}"#,
            "é".repeat(INLINE_LIMIT + 1)
        );
        assert_eq!(String::from_utf8(cut).unwrap(), expected);
    }

    #[test]
    fn escapes_count_as_one_character_each() {
        let inner = br#"\n\ud83d\ude00\u0041abc"#;
        assert_eq!(cut_after(inner, 2), Some(14));
        assert_eq!(cut_after(inner, 3), Some(20));
        assert_eq!(cut_after(inner, 6), None);
    }
}
