//! The credentials the proxy has seen: the `--api-key-env` key and every key a client sent in
//! its credential header. They go to the upstream only; everything the proxy writes or prints
//! passes through [`Secrets::redact`] first, which finds them in every form a server may echo
//! them ([`crate::secrets::Redactor`]).

use std::borrow::Cow;

use crate::secrets::Redactor;

/// Header names that carry a client's credential.
pub const CREDENTIAL_HEADERS: [&str; 3] = ["authorization", "x-api-key", "api-key"];

/// Keys shorter than this are placeholders (`x`, `test`); replacing them would garble text.
const MIN_SECRET: usize = 8;
/// Distinct keys kept; a proxy serves a handful of clients.
const MAX_SECRETS: usize = 64;

/// The keys seen so far.
#[derive(Clone, Debug, Default)]
pub struct Secrets {
    keys: Vec<String>,
    redactor: Redactor,
}

impl Secrets {
    /// Adds a key, or the token of an `Authorization: Bearer` value.
    pub fn add(&mut self, value: &str) {
        let value = value.trim();
        let key = value
            .strip_prefix("Bearer ")
            .or_else(|| value.strip_prefix("bearer "))
            .unwrap_or(value)
            .trim();
        if key.len() >= MIN_SECRET
            && !self.keys.iter().any(|k| k == key)
            && self.keys.len() < MAX_SECRETS
        {
            self.keys.push(key.to_owned());
            self.redactor = Redactor::new(&self.keys);
        }
    }

    /// `text` with every known key, in any form, replaced by `[redacted]`.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        self.redactor.redact(text)
    }

    /// The redactor of the keys seen so far.
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    /// Whether `text` holds a known key.
    pub fn found_in(&self, text: &str) -> bool {
        matches!(self.redact(text), Cow::Owned(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_tokens_and_bare_keys_are_redacted_but_placeholders_are_not() {
        let mut secrets = Secrets::default();
        secrets.add("Bearer sk-test-0123456789");
        secrets.add("test");
        assert_eq!(
            secrets.redact("key sk-test-0123456789 and test"),
            "key [redacted] and test"
        );
        assert!(secrets.found_in("Authorization: Bearer sk-test-0123456789"));
    }
}
