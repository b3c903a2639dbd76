//! Trace and span ids derived from what identifies a run, so that exporting the same input twice
//! gives the same ids and two runs never share one.
//!
//! A trace id is the first 16 bytes of SHA-256 over a version tag, the source file's name, the run
//! id and the run's occurrence (a reused run id gives a second run), plus a counter that only
//! grows when two runs of one export would otherwise collide (two files of one name in different
//! folders). A span id is the first 8 bytes of SHA-256 over the trace id and the span's place in
//! the run. All-zero ids are invalid in OTLP, so a zero hash is nudged to one.

use std::collections::{HashMap, HashSet};

use sha2::{Digest, Sha256};

use crate::digest::hex;

/// Changes whenever the derivation changes, so old and new ids never meet.
const DERIVATION: &[u8] = b"looptrace.otlp.ids/1";

/// A 16-byte trace id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TraceId(pub [u8; 16]);

/// An 8-byte span id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SpanId(pub [u8; 8]);

impl TraceId {
    /// The id of the `occurrence`-th run with `run_id` in the file named `file`, with `salt`
    /// 0 unless that id was already taken.
    pub fn derive(file: &str, run_id: &str, occurrence: u32, salt: u32) -> TraceId {
        let digest = Sha256::new()
            .chain_update(DERIVATION)
            .chain_update((file.len() as u64).to_le_bytes())
            .chain_update(file.as_bytes())
            .chain_update((run_id.len() as u64).to_le_bytes())
            .chain_update(run_id.as_bytes())
            .chain_update(occurrence.to_le_bytes())
            .chain_update(salt.to_le_bytes())
            .finalize();
        let mut id = [0u8; 16];
        id.copy_from_slice(&digest[..16]);
        if id == [0; 16] {
            id[15] = 1;
        }
        TraceId(id)
    }

    /// The id of the span at `index` (0 is the root) in this trace.
    pub fn span(&self, index: u32) -> SpanId {
        let digest = Sha256::new()
            .chain_update(self.0)
            .chain_update(index.to_le_bytes())
            .finalize();
        let mut id = [0u8; 8];
        id.copy_from_slice(&digest[..8]);
        if id == [0; 8] {
            id[7] = 1;
        }
        SpanId(id)
    }

    /// 32 lowercase hex digits, as OTLP/JSON writes it.
    pub fn to_hex(self) -> String {
        hex(&self.0)
    }
}

impl SpanId {
    /// 16 lowercase hex digits, as OTLP/JSON writes it.
    pub fn to_hex(self) -> String {
        hex(&self.0)
    }
}

/// The trace ids one export has handed out: a derived id already taken is derived again with the
/// next salt. Holds 16 bytes per run of files whose name another input shares; runs of a file
/// whose name is its own cannot collide (its runs differ by run id or occurrence), so nothing is
/// kept for them and memory stays flat however many runs one file holds.
#[derive(Debug, Default)]
pub struct TraceIds {
    taken: HashSet<[u8; 16]>,
    /// How many inputs bear each file name, when known ([`TraceIds::for_files`]).
    names: Option<HashMap<String, usize>>,
}

impl TraceIds {
    /// Ids for an export of files of these names (in any order, repeats included).
    pub fn for_files<'a>(names: impl IntoIterator<Item = &'a str>) -> TraceIds {
        let mut counts: HashMap<String, usize> = HashMap::new();
        for name in names {
            *counts.entry(name.to_owned()).or_default() += 1;
        }
        TraceIds {
            taken: HashSet::new(),
            names: Some(counts),
        }
    }

    /// A trace id for this run, never one handed out before by this export.
    pub fn assign(&mut self, file: &str, run_id: &str, occurrence: u32) -> TraceId {
        let own_name = self
            .names
            .as_ref()
            .is_some_and(|names| names.get(file) == Some(&1));
        if own_name {
            return TraceId::derive(file, run_id, occurrence, 0);
        }
        let mut salt = 0;
        loop {
            let id = TraceId::derive(file, run_id, occurrence, salt);
            if self.taken.insert(id.0) {
                return id;
            }
            salt += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_run_gets_the_same_id_and_other_runs_other_ids() {
        let a = TraceId::derive("t.jsonl", "r1", 1, 0);
        assert_eq!(a, TraceId::derive("t.jsonl", "r1", 1, 0));
        assert_ne!(a, TraceId::derive("t.jsonl", "r1", 2, 0));
        assert_ne!(a, TraceId::derive("u.jsonl", "r1", 1, 0));
        // The lengths keep `("ab", "c")` and `("a", "bc")` apart.
        assert_ne!(
            TraceId::derive("ab", "c", 1, 0),
            TraceId::derive("a", "bc", 1, 0)
        );
        assert_ne!(a.span(0), a.span(1));
    }

    #[test]
    fn a_taken_id_is_derived_again() {
        let mut ids = TraceIds::default();
        let first = ids.assign("t.jsonl", "r1", 1);
        let second = ids.assign("t.jsonl", "r1", 1);
        assert_eq!(first, TraceId::derive("t.jsonl", "r1", 1, 0));
        assert_eq!(second, TraceId::derive("t.jsonl", "r1", 1, 1));
    }

    #[test]
    fn only_runs_of_shared_file_names_are_kept() {
        let mut ids = TraceIds::for_files(["a.jsonl", "t.jsonl", "t.jsonl"]);
        assert_eq!(
            ids.assign("a.jsonl", "r1", 1),
            TraceId::derive("a.jsonl", "r1", 1, 0)
        );
        assert!(ids.taken.is_empty());
        let first = ids.assign("t.jsonl", "r1", 1);
        let second = ids.assign("t.jsonl", "r1", 1);
        assert_eq!(first, TraceId::derive("t.jsonl", "r1", 1, 0));
        assert_eq!(second, TraceId::derive("t.jsonl", "r1", 1, 1));
    }

    #[test]
    fn ids_are_lowercase_hex_of_32_and_16_digits() {
        let id = TraceId::derive("t.jsonl", "r1", 1, 0);
        let text = id.to_hex();
        assert_eq!(text.len(), 32);
        assert!(
            text.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        );
        assert_eq!(id.span(3).to_hex().len(), 16);
    }
}
