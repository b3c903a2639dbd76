//! [`Redactor`]: takes secrets out of text before it is shown or written. A server may echo a key
//! as it was sent, JSON-escaped (`\/`, `\u002d`), percent-encoded (`%2D`) or base64-encoded; each
//! form is found, byte by byte, so no mix of them lets a key through. Text is redacted whole
//! before it is cut for a message, and a cut that ends in the first part of a key loses that
//! part too.

use std::borrow::Cow;

use base64::Engine as _;

/// What a secret is replaced with.
pub const REDACTED: &str = "[redacted]";

/// The shortest run of a key, or of its base64 form, that is treated as the key: shorter ones
/// would match ordinary text.
const MIN_PARTIAL: usize = 8;

/// Finds and replaces a set of secrets.
#[derive(Clone)]
pub struct Redactor {
    /// The keys as sent, for the prefix rule.
    keys: Vec<Vec<u8>>,
    /// The byte strings to find: each key, and the part of its base64 form that does not depend
    /// on what surrounds it, at each of the three alignments and in both alphabets.
    patterns: Vec<Vec<u8>>,
    /// Bytes a match may start with (a pattern's first byte, `\` or `%`).
    first: [bool; 256],
}

impl Default for Redactor {
    fn default() -> Self {
        Redactor {
            keys: Vec::new(),
            patterns: Vec::new(),
            first: [false; 256],
        }
    }
}

impl std::fmt::Debug for Redactor {
    /// Never prints a secret.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Redactor({} secrets)", self.keys.len())
    }
}

impl Redactor {
    /// A redactor of these secrets; empty ones are ignored.
    pub fn new<S: AsRef<str>>(secrets: impl IntoIterator<Item = S>) -> Self {
        let mut redactor = Redactor::default();
        for secret in secrets {
            let key = secret.as_ref().as_bytes();
            if key.is_empty() || redactor.keys.iter().any(|k| k == key) {
                continue;
            }
            redactor.keys.push(key.to_vec());
            redactor.patterns.push(key.to_vec());
            redactor.patterns.extend(base64_cores(key));
        }
        for pattern in &redactor.patterns {
            redactor.first[usize::from(pattern[0])] = true;
        }
        if !redactor.patterns.is_empty() {
            redactor.first[usize::from(b'\\')] = true;
            redactor.first[usize::from(b'%')] = true;
        }
        redactor
    }

    /// Whether there is nothing to redact.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// `text` with every secret, in every form, replaced by [`REDACTED`].
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if self.is_empty() {
            return Cow::Borrowed(text);
        }
        let bytes = text.as_bytes();
        let mut out: Option<String> = None;
        let mut copied = 0;
        let mut at = 0;
        while at < bytes.len() {
            if !self.first[usize::from(bytes[at])] {
                at += 1;
                continue;
            }
            let found = self
                .patterns
                .iter()
                .filter_map(|pattern| encoded_match(bytes, at, pattern))
                .max();
            match found {
                Some(end) => {
                    // A match starts and ends on ASCII bytes or whole characters of the key,
                    // so both ends are character boundaries.
                    let out = out.get_or_insert_with(|| String::with_capacity(text.len()));
                    out.push_str(&text[copied..at]);
                    out.push_str(REDACTED);
                    copied = end;
                    at = end;
                }
                None => at += 1,
            }
        }
        match out {
            Some(mut out) => {
                out.push_str(&text[copied..]);
                Cow::Owned(out)
            }
            None => Cow::Borrowed(text),
        }
    }

    /// `cut` (text already redacted, then shortened) without a tail that is the first part of
    /// a key, [`MIN_PARTIAL`] bytes or more: the cut may have split a key that the whole text
    /// held.
    pub fn redact_cut_tail<'a>(&self, cut: &'a str) -> Cow<'a, str> {
        let bytes = cut.as_bytes();
        let longest = self
            .keys
            .iter()
            .filter_map(|key| {
                (MIN_PARTIAL..key.len().min(bytes.len()) + 1)
                    .rev()
                    .find(|&len| bytes.ends_with(&key[..len]))
            })
            .max();
        match longest {
            Some(len) if cut.is_char_boundary(cut.len() - len) => {
                Cow::Owned(format!("{}{REDACTED}", &cut[..cut.len() - len]))
            }
            _ => Cow::Borrowed(cut),
        }
    }
}

/// Where a match of `pattern` starting at `at` ends, each of its bytes written as itself, as a
/// JSON escape (`\/`, `\\`, `\"`, `\u00XX`) or percent-encoded (`%XX`, either case).
fn encoded_match(text: &[u8], mut at: usize, pattern: &[u8]) -> Option<usize> {
    for &want in pattern {
        let here = *text.get(at)?;
        at += if here == want {
            1
        } else if here == b'\\' {
            match *text.get(at + 1)? {
                next @ (b'/' | b'\\' | b'"') if next == want => 2,
                b'u' if hex_value(text.get(at + 2..at + 6)?) == Some(u32::from(want)) => 6,
                _ => return None,
            }
        } else if here == b'%' && hex_value(text.get(at + 1..at + 3)?) == Some(u32::from(want)) {
            3
        } else {
            return None;
        };
    }
    Some(at)
}

/// The value of ASCII hex digits, either case.
fn hex_value(digits: &[u8]) -> Option<u32> {
    digits.iter().try_fold(0u32, |value, &digit| {
        char::from(digit).to_digit(16).map(|d| value * 16 + d)
    })
}

/// The parts of `key`'s base64 form that stay the same wherever the key sits in a longer
/// encoded stream: for each alignment (0, 1 or 2 bytes before it), the characters that only the
/// key's bits decide. Standard and URL-safe alphabets; parts shorter than [`MIN_PARTIAL`] are left
/// out.
fn base64_cores(key: &[u8]) -> Vec<Vec<u8>> {
    let engines = [
        base64::engine::general_purpose::STANDARD_NO_PAD,
        base64::engine::general_purpose::URL_SAFE_NO_PAD,
    ];
    let mut cores = Vec::new();
    for engine in engines {
        for offset in 0..3usize {
            let mut data = vec![0u8; offset];
            data.extend_from_slice(key);
            let encoded = engine.encode(&data).into_bytes();
            let start = (8 * offset).div_ceil(6);
            let end = 8 * data.len() / 6;
            if end >= start + MIN_PARTIAL {
                let core = encoded[start..end].to_vec();
                if !cores.contains(&core) {
                    cores.push(core);
                }
            }
        }
    }
    cores
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "sk-test/Key+0123456789";

    fn redacted(text: &str) -> String {
        Redactor::new([KEY]).redact(text).into_owned()
    }

    #[test]
    fn the_key_as_sent_is_replaced() {
        assert_eq!(redacted(&format!("bad key {KEY}.")), "bad key [redacted].");
        assert_eq!(redacted("nothing here"), "nothing here");
    }

    #[test]
    fn json_escaped_echoes_are_replaced() {
        assert_eq!(redacted(r#""sk-test\/Key+0123456789""#), r#""[redacted]""#);
        assert_eq!(
            redacted(r#"{"m":"sk\u002dtest\u002FKey\u002b0123456789"}"#),
            r#"{"m":"[redacted]"}"#
        );
    }

    #[test]
    fn percent_encoded_echoes_are_replaced() {
        assert_eq!(redacted("k=sk-test%2FKey%2B0123456789&x"), "k=[redacted]&x");
        assert_eq!(redacted("k=sk%2dtest%2fKey%2b0123456789"), "k=[redacted]");
    }

    #[test]
    fn base64_echoes_are_replaced_at_every_alignment_and_in_both_alphabets() {
        use base64::engine::general_purpose::{STANDARD, URL_SAFE};
        for prefix in ["", "a", "ab", "abc"] {
            for encoded in [
                STANDARD.encode(format!("{prefix}{KEY}!")),
                URL_SAFE.encode(format!("{prefix}{KEY}!")),
            ] {
                let out = redacted(&format!("token: {encoded}"));
                assert!(out.contains(REDACTED), "{prefix:?}: {out}");
                // What is left around the match cannot be decoded back to the key.
                assert!(!out.contains(&encoded[4..encoded.len() - 4]), "{out}");
            }
        }
    }

    #[test]
    fn text_cut_in_the_middle_of_a_key_loses_the_key_s_first_part() {
        let redactor = Redactor::new([KEY]);
        assert_eq!(
            redactor.redact_cut_tail("error: sk-test/K"),
            "error: [redacted]"
        );
        // Shorter than eight bytes: ordinary text.
        assert_eq!(redactor.redact_cut_tail("error: sk-tes"), "error: sk-tes");
        assert_eq!(redactor.redact_cut_tail("error"), "error");
    }

    #[test]
    fn an_empty_redactor_borrows_and_debug_hides_keys() {
        assert!(matches!(
            Redactor::new([""]).redact("x"),
            Cow::Borrowed("x")
        ));
        assert_eq!(format!("{:?}", Redactor::new([KEY])), "Redactor(1 secrets)");
    }

    #[test]
    fn non_ascii_text_around_a_key_stays_whole() {
        assert_eq!(redacted(&format!("é{KEY}ü")), "é[redacted]ü");
    }
}
