//! Cutting long output to its head and tail, on UTF-8 character boundaries.

use std::borrow::Cow;

/// Output decoded and cut for a model to read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CutText {
    /// The text, with U+FFFD for bytes that were not UTF-8 and an elision marker when cut.
    pub text: String,
    /// Whether some bytes were not UTF-8.
    pub lossy: bool,
}

/// Decodes output kept as `head`, `dropped` bytes not kept, and `tail` (see
/// [`super::run_process`]), and cuts it like [`cut_output`] to at most `max_bytes` of its own.
pub fn cut_bytes(head: &[u8], dropped: u64, tail: &[u8], max_bytes: usize) -> CutText {
    if dropped == 0 {
        let whole = [head, tail].concat();
        let text = String::from_utf8_lossy(&whole);
        let lossy = matches!(text, Cow::Owned(_));
        return CutText {
            text: cut_output(&text, max_bytes),
            lossy,
        };
    }
    // The cut may have split a character at the end of the head or the start of the tail: those
    // partial bytes count as elided, not as invalid UTF-8.
    let head_end = match std::str::from_utf8(head) {
        Err(err) if err.error_len().is_none() => err.valid_up_to(),
        _ => head.len(),
    };
    let tail_start = tail
        .iter()
        .take(3)
        .take_while(|b| (0x80..0xC0).contains(*b))
        .count();
    let head_text = String::from_utf8_lossy(&head[..head_end]);
    let tail_text = String::from_utf8_lossy(&tail[tail_start..]);
    let lossy = matches!(head_text, Cow::Owned(_)) || matches!(tail_text, Cow::Owned(_));
    let keep_head = floor_boundary(&head_text, (max_bytes / 2).min(head_text.len()));
    let tail_from = ceil_boundary(
        &tail_text,
        tail_text.len().saturating_sub(max_bytes - max_bytes / 2),
    );
    let elided = (head_text.len() - keep_head) as u64
        + (head.len() - head_end) as u64
        + dropped
        + tail_start as u64
        + tail_from as u64;
    CutText {
        text: format!(
            "{}\n[... {elided} bytes elided ...]\n{}",
            &head_text[..keep_head],
            &tail_text[tail_from..]
        ),
        lossy,
    }
}

/// Cuts `text` to at most `max_bytes` bytes of its own, keeping the head and the tail and putting
/// a marker with the number of bytes left out between them (the marker is not counted).
pub fn cut_output(text: &str, max_bytes: usize) -> String {
    if text.len() <= max_bytes {
        return text.to_owned();
    }
    let head_end = floor_boundary(text, max_bytes / 2);
    let tail_start = ceil_boundary(text, text.len() - (max_bytes - max_bytes / 2));
    let elided = tail_start - head_end;
    format!(
        "{}\n[... {elided} bytes elided ...]\n{}",
        &text[..head_end],
        &text[tail_start..]
    )
}

fn floor_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn ceil_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::{cut_bytes, cut_output};

    #[test]
    fn short_output_is_kept() {
        assert_eq!(cut_output("abc", 3), "abc");
    }

    #[test]
    fn long_output_keeps_head_and_tail() {
        assert_eq!(
            cut_output("0123456789", 4),
            "01\n[... 6 bytes elided ...]\n89"
        );
    }

    #[test]
    fn cuts_never_split_a_character() {
        // "é" is two bytes: the head stops before it, the tail starts after it.
        let cut = cut_output("aébcdeé", 4);
        assert_eq!(cut, "a\n[... 6 bytes elided ...]\né");
    }

    #[test]
    fn kept_head_and_tail_read_like_the_whole_output_cut() {
        let whole = "0123456789".repeat(10);
        let bytes = whole.as_bytes();
        let cut = cut_bytes(&bytes[..20], 60, &bytes[80..], 10);
        assert_eq!(cut.text, cut_output(&whole, 10));
        assert!(!cut.lossy);
    }

    #[test]
    fn characters_split_by_the_keeping_are_elided_not_lossy() {
        // "é" is 0xC3 0xA9: the head ends inside one, the tail starts inside another.
        let cut = cut_bytes(b"ab\xC3", 5, b"\xA9cd", 4);
        assert_eq!(cut.text, "ab\n[... 7 bytes elided ...]\ncd");
        assert!(!cut.lossy);
    }

    #[test]
    fn invalid_bytes_become_replacement_characters() {
        let cut = cut_bytes(b"a\xFFb", 0, b"", 100);
        assert_eq!(cut.text, "a\u{FFFD}b");
        assert!(cut.lossy);
    }
}
