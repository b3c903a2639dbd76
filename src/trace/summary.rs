//! Safe summaries: `chars=N;sha256=HEX` instead of the text itself, or `chars=N;hmac-sha256=HEX`
//! when `LOOPTRACE_HASH_KEY` is set, so low-entropy text cannot be guessed from its hash.

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

use super::event::HashAlgorithm;

/// The environment variable holding the HMAC key.
pub const HASH_KEY_VAR: &str = "LOOPTRACE_HASH_KEY";

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
        let chars = text.chars().count();
        format!("chars={chars};{}", self.digest(text.as_bytes()))
    }

    /// The hash of `bytes` as `sha256=HEX` or `hmac-sha256=HEX`.
    pub fn digest(&self, bytes: &[u8]) -> String {
        match &self.key {
            None => format!("sha256={}", hex(&Sha256::digest(bytes))),
            Some(key) => {
                // HMAC accepts keys of any length, so this cannot fail.
                let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key)
                    .expect("HMAC takes keys of any length");
                mac.update(bytes);
                format!("hmac-sha256={}", hex(&mac.finalize().into_bytes()))
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

pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[(b >> 4) as usize] as char);
        out.push(DIGITS[(b & 0xf) as usize] as char);
    }
    out
}
