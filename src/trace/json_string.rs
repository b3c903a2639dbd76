//! The bytes of JSON strings, for the fast scanner: finding the next byte that needs a look,
//! checking UTF-8 the way `std::str::from_utf8` does, and decoding escapes.

use super::line_error::LineError;

/// The index of the first `"`, `\`, control or non-ASCII byte at or after `from`, or the length.
#[inline]
pub(super) fn find_special(bytes: &[u8], from: usize) -> usize {
    let mut at = from;
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            _mm_cmpeq_epi8, _mm_cmplt_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128,
            _mm_set1_epi8,
        };
        // SAFETY: SSE2 is part of every x86_64 processor, and each load reads the 16 bytes of
        // `block`, which lie inside `bytes` (no alignment needed).
        unsafe {
            let quote = _mm_set1_epi8(b'"' as i8);
            let backslash = _mm_set1_epi8(b'\\' as i8);
            let space = _mm_set1_epi8(0x20);
            // Sixteen bytes at a time.
            while let Some(block) = bytes.get(at..at + 16) {
                let word = _mm_loadu_si128(block.as_ptr().cast());
                // A signed comparison: below 0x20 holds the control bytes and, as negative
                // numbers, every byte from 0x80.
                let special = _mm_or_si128(
                    _mm_or_si128(_mm_cmpeq_epi8(word, quote), _mm_cmpeq_epi8(word, backslash)),
                    _mm_cmplt_epi8(word, space),
                );
                let mask = _mm_movemask_epi8(special) as u32;
                if mask != 0 {
                    return at + mask.trailing_zeros() as usize;
                }
                at += 16;
            }
        }
    }
    find_special_words(bytes, at)
}

/// [`find_special`] eight bytes at a time, for the bytes a 16-byte block does not cover.
#[inline]
fn find_special_words(bytes: &[u8], from: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    const QUOTES: u64 = ONES * b'"' as u64;
    const BACKSLASHES: u64 = ONES * b'\\' as u64;
    const SPACES: u64 = ONES * 0x20;
    let mut at = from;
    // Eight bytes at a time: each term flags its lowest matching byte exactly (false positives
    // can only sit above a true one), so the lowest flag of the union is the first special byte.
    while let Some(word) = bytes.get(at..).and_then(|rest| rest.first_chunk::<8>()) {
        let word = u64::from_le_bytes(*word);
        let quotes = word ^ QUOTES;
        let backslashes = word ^ BACKSLASHES;
        let flags = ((quotes.wrapping_sub(ONES) & !quotes)
            | (backslashes.wrapping_sub(ONES) & !backslashes)
            | (word.wrapping_sub(SPACES) & !word)
            | word)
            & HIGHS;
        if flags != 0 {
            return at + (flags.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    while let Some(&byte) = bytes.get(at) {
        if byte == b'"' || byte == b'\\' || !(0x20..0x80).contains(&byte) {
            return at;
        }
        at += 1;
    }
    at
}

/// The width of the UTF-8 sequence starting at `at`, if it is a valid one (the rules of
/// `std::str::from_utf8`: no overlong forms, no surrogates, nothing past U+10FFFF).
pub(super) fn utf8_width(bytes: &[u8], at: usize) -> Option<usize> {
    let (width, second) = match bytes[at] {
        0xC2..=0xDF => (2, 0x80..=0xBF),
        0xE0 => (3, 0xA0..=0xBF),
        0xE1..=0xEC | 0xEE..=0xEF => (3, 0x80..=0xBF),
        0xED => (3, 0x80..=0x9F),
        0xF0 => (4, 0x90..=0xBF),
        0xF1..=0xF3 => (4, 0x80..=0xBF),
        0xF4 => (4, 0x80..=0x8F),
        _ => return None,
    };
    let sequence = bytes.get(at..at + width)?;
    let rest_ok = sequence[2..]
        .iter()
        .all(|byte| (0x80..=0xBF).contains(byte));
    (second.contains(&sequence[1]) && rest_ok).then_some(width)
}

/// Decodes the content of a string that holds escapes (already checked by `raw_string`).
pub(super) fn unescape(raw: &[u8], column: usize) -> Result<String, LineError> {
    let invalid = |message| LineError::Syntax {
        message,
        column: column + 1,
    };
    let mut out: Vec<u8> = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let byte = raw[i];
        if byte != b'\\' {
            out.push(byte);
            i += 1;
            continue;
        }
        let escape = raw
            .get(i + 1)
            .copied()
            .ok_or_else(|| invalid("invalid escape in a string"))?;
        i += 2;
        let decoded = match escape {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let high = hex4(raw, i).ok_or_else(|| invalid("invalid `\\u` escape"))?;
                i += 4;
                let code = if (0xD800..0xDC00).contains(&high) {
                    let low = match (raw.get(i), raw.get(i + 1)) {
                        (Some(b'\\'), Some(b'u')) => hex4(raw, i + 2),
                        _ => None,
                    }
                    .filter(|low| (0xDC00..0xE000).contains(low))
                    .ok_or_else(|| invalid("lone surrogate in a `\\u` escape"))?;
                    i += 6;
                    0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
                } else {
                    high
                };
                char::from_u32(code).ok_or_else(|| invalid("lone surrogate in a `\\u` escape"))?
            }
            _ => return Err(invalid("invalid escape in a string")),
        };
        let mut buf = [0u8; 4];
        out.extend_from_slice(decoded.encode_utf8(&mut buf).as_bytes());
    }
    String::from_utf8(out).map_err(|_| LineError::InvalidUtf8)
}

/// Four hex digits at `at`, if they are there.
fn hex4(raw: &[u8], at: usize) -> Option<u32> {
    let digits = raw.get(at..at + 4)?;
    let text = std::str::from_utf8(digits).ok()?;
    u32::from_str_radix(text, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_special_bytes_at_every_offset() {
        for len in 0..48 {
            let mut bytes = vec![b'a'; len];
            assert_eq!(find_special(&bytes, 0), len);
            for special in [b'"', b'\\', 0x1f, 0] {
                for at in 0..len {
                    bytes[at] = special;
                    assert_eq!(find_special(&bytes, 0), at, "len {len} at {at}");
                    bytes[at] = 0xc3;
                    assert_eq!(find_special(&bytes, 0), at);
                    bytes[at] = b'a';
                }
            }
        }
    }
}
