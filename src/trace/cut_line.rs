//! Telling a line a write cut short (the beginning of a well-formed line) from a malformed one:
//! readers keep the first as an unfinished last line and refuse the second.

use super::line_error::LineError;
use super::scan::scan_line;

/// Whether a line that does not scan fails only because it ends early: it is the beginning
/// of a well-formed line (JSON's end-of-input error, or a UTF-8 sequence cut at the end), as a
/// write cut short leaves it.
pub fn ends_early(line: &[u8]) -> bool {
    cut_short(line, |text| {
        matches!(
            scan_line(text.as_bytes()),
            Err(LineError::Syntax { column, .. }) if column == text.len() + 1
        )
    })
}

/// The rule for a line cut short, whatever reads it: without a last `\r`, its UTF-8 may end
/// inside a character (the rest must then be cut short too), and `json_ends_early` says whether
/// its valid text is JSON that stops at the end of input.
pub fn cut_short(line: &[u8], json_ends_early: impl Fn(&str) -> bool) -> bool {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    match std::str::from_utf8(line) {
        // Cut inside a character: the rest must be a cut line too.
        Err(err) if err.error_len().is_none() => {
            cut_short(&line[..err.valid_up_to()], json_ends_early)
        }
        Err(_) => false,
        Ok(text) => json_ends_early(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_ends_early_only_if_it_is_the_start_of_a_well_formed_line() {
        for cut in [
            &br#"{"run_id":"r","st"#[..],
            br#"{"run_id":"r","step":1"#,
            br#"{"run_id":"r","step":1."#,
            br#"{"a":tr"#,
            br#"{"a":"\ud83d"#,
            b"{\"a\":\"\xc3",
            b"{",
            b"{\"a\":1\r",
        ] {
            assert!(ends_early(cut), "{:?}", String::from_utf8_lossy(cut));
        }
        for bad in [
            &br#"{"run_id":"r","run_id":"#[..],
            br#"{"a":tx"#,
            br#"{"step":"1"}"#,
            br#"{"a":1}}"#,
            b"{\"a\":\"\xff",
            br#"{"run_id":"r","step":1,"event_type":"x"}"#,
        ] {
            assert!(!ends_early(bad), "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
