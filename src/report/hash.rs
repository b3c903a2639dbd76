//! Hashing for the report's maps and run-id fingerprints.
//!
//! The maps are keyed by short strings taken from the trace (run ids, tool names, error kinds) and
//! are looked up once or twice per event, so the default SipHash would be a visible share of the
//! time. Trace files are the user's own data, not an adversary's, so a fast multiplicative hash is
//! enough for the maps. Fingerprints of run ids (used to find ids that appear in two files) use
//! std's SipHash (`DefaultHasher`, fixed keys) instead: there a collision would be a wrong warning.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A hash map using [`FastHasher`].
pub(crate) type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;

/// A word-at-a-time multiplicative hasher (the `FxHash` scheme) for short keys.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct FastHasher {
    hash: u64,
}

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FastHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FastHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word));
        }
    }

    #[inline]
    fn write_u8(&mut self, value: u8) {
        self.add(u64::from(value));
    }

    #[inline]
    fn write_u32(&mut self, value: u32) {
        self.add(u64::from(value));
    }

    #[inline]
    fn write_u64(&mut self, value: u64) {
        self.add(value);
    }

    #[inline]
    fn write_usize(&mut self, value: usize) {
        self.add(value as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        // The multiply only carries low bits upwards, so keys that differ only in their last
        // bytes (`run-000017`, `run-000018`) would share their low bits, which pick the bucket:
        // fold the high bits down.
        let hash = (self.hash ^ (self.hash >> 32)).wrapping_mul(SEED);
        hash ^ (hash >> 29)
    }
}

/// A 64-bit fingerprint of a run id, the same in every thread of one process.
pub(crate) fn fingerprint(run_id: &[u8]) -> u64 {
    let mut hasher = std::hash::DefaultHasher::new();
    hasher.write(run_id);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_differing_in_their_last_byte_spread_over_buckets() {
        use std::hash::{BuildHasher, BuildHasherDefault};
        let build = BuildHasherDefault::<FastHasher>::default();
        let buckets: std::collections::HashSet<u64> = (0..256)
            .map(|n| build.hash_one(format!("run-1-{n:09}").as_bytes()) & 0xff)
            .collect();
        assert!(buckets.len() > 128, "{} buckets", buckets.len());
    }

    #[test]
    fn fingerprints_differ_for_close_ids() {
        assert_ne!(fingerprint(b"run-1"), fingerprint(b"run-2"));
        assert_eq!(fingerprint(b"run-1"), fingerprint(b"run-1"));
    }
}
