//! Digests, at the bottom of the layers: hex, `sha256:HEX` content hashes, canonical JSON (the
//! form requests are sent and hashed in), and safe summaries: `chars=N;sha256=HEX` instead of the
//! text itself, or `chars=N;hmac-sha256=HEX` when `LOOPTRACE_HASH_KEY` is set, so low-entropy text
//! cannot be guessed from its hash. Tools, models, the gate and the trace format all hash through
//! here, so none of them imports another for it.

use std::fmt::Write;

use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::secrets::HASH_KEY_VAR;

/// The hash behind the summaries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum HashAlgorithm {
    /// Plain SHA-256.
    #[serde(rename = "sha256")]
    Sha256,
    /// HMAC-SHA256 keyed with `LOOPTRACE_HASH_KEY`.
    #[serde(rename = "hmac-sha256")]
    HmacSha256,
}

impl HashAlgorithm {
    /// The name on disk.
    pub fn as_str(self) -> &'static str {
        match self {
            HashAlgorithm::Sha256 => "sha256",
            HashAlgorithm::HmacSha256 => "hmac-sha256",
        }
    }
}

/// Turns text into its summary.
#[derive(Clone)]
pub struct Summarizer {
    key: Option<Vec<u8>>,
}

impl Summarizer {
    /// Plain SHA-256 summaries.
    pub fn sha256() -> Self {
        Summarizer { key: None }
    }

    /// HMAC-SHA256 summaries keyed with `key`.
    pub fn hmac(key: impl Into<Vec<u8>>) -> Self {
        Summarizer {
            key: Some(key.into()),
        }
    }

    /// HMAC when `LOOPTRACE_HASH_KEY` is set (and not empty), plain SHA-256 otherwise.
    pub fn from_env() -> Self {
        match std::env::var_os(HASH_KEY_VAR) {
            Some(key) if !key.is_empty() => Summarizer::hmac(key.into_encoded_bytes()),
            _ => Summarizer::sha256(),
        }
    }

    /// Which hash the summaries use.
    pub fn algorithm(&self) -> HashAlgorithm {
        if self.key.is_some() {
            HashAlgorithm::HmacSha256
        } else {
            HashAlgorithm::Sha256
        }
    }

    /// The summary of `text`: its length in Unicode scalar values (Python's `len`) and its hash.
    pub fn summarize(&self, text: &str) -> String {
        // Built in one buffer: every event's summaries pass through here.
        let mut out = String::with_capacity(96);
        let _ = write!(out, "chars={};", text.chars().count());
        self.push_digest(text.as_bytes(), &mut out);
        out
    }

    /// The hash of `bytes` as `sha256=HEX` or `hmac-sha256=HEX`.
    pub fn digest(&self, bytes: &[u8]) -> String {
        let mut out = String::with_capacity(80);
        self.push_digest(bytes, &mut out);
        out
    }

    fn push_digest(&self, bytes: &[u8], out: &mut String) {
        match &self.key {
            None => {
                out.push_str("sha256=");
                push_hex(&Sha256::digest(bytes), out);
            }
            Some(key) => {
                // HMAC accepts keys of any length, so this cannot fail.
                let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key)
                    .expect("HMAC takes keys of any length");
                mac.update(bytes);
                out.push_str("hmac-sha256=");
                push_hex(&mac.finalize().into_bytes(), out);
            }
        }
    }
}

impl std::fmt::Debug for Summarizer {
    /// Never prints the key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Summarizer({})", self.algorithm().as_str())
    }
}

/// `sha256:HEX` of `bytes`: the form of configuration and content hashes in `run_started`.
pub fn sha256_tagged(bytes: &[u8]) -> String {
    format!("sha256:{}", hex(&Sha256::digest(bytes)))
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    push_hex(bytes, &mut out);
    out
}

fn push_hex(bytes: &[u8], out: &mut String) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    out.reserve(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[(b >> 4) as usize] as char);
        out.push(DIGITS[(b & 0xf) as usize] as char);
    }
}

/// JSON with object keys sorted at every level and no whitespace; numbers and strings as
/// serde_json prints them. Requests are sent and hashed in this form. serde_json's maps are
/// sorted (`BTreeMap`, without its `preserve_order` feature), so its compact output already is
/// this form, written in one pass; a unit test fails if a dependency ever turns that feature on.
pub fn canonical_json(value: &Value) -> String {
    // A `Value` always serializes: its keys are strings and its numbers finite.
    serde_json::to_string(value).expect("a JSON value serializes")
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, json};

    use super::*;

    #[test]
    fn canonical_json_sorts_keys_at_every_level_whatever_the_insertion_order() {
        let mut inner = Map::new();
        inner.insert("y".to_owned(), json!([{"n": "\u{1}", "m": null}]));
        inner.insert("x".to_owned(), json!(1.5));
        let mut outer = Map::new();
        outer.insert("b".to_owned(), json!(2));
        outer.insert("a".to_owned(), Value::Object(inner));
        assert_eq!(
            canonical_json(&Value::Object(outer)),
            r#"{"a":{"x":1.5,"y":[{"m":null,"n":"\u0001"}]},"b":2}"#
        );
    }
}
