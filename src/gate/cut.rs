//! Cutting long output to its head and tail, on UTF-8 character boundaries.

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
    use super::cut_output;

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
}
