//! Hashing for the report's maps and run-id fingerprints.
//!
//! The maps are keyed by short strings taken from the trace (run ids, tool names, error kinds) and
//! are looked up once or twice per event, so the default SipHash would be a visible share of the
//! time. Trace files are the user's own data, not an adversary's, so fast hashes are enough:
//! a word-at-a-time multiplicative hash for the small maps, and for run ids a folded
//! multiply (the 64×64→128-bit product's halves XORed, the core of `wyhash` and `foldhash`),
//! which mixes every input bit into every output bit. A run id is hashed once per chunk: that
//! hash is its fingerprint across chunks and inputs (where two ids sharing one would merge their
//! runs: for a million distinct ids about one chance in 2^25 on a 64-bit hash) and the chunk's
//! map of runs uses it as it is ([`Prehashed`]).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};

/// A hash map using [`FastHasher`].
pub(crate) type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;

/// A hash map whose keys carry their own hash ([`Prehashed`]).
pub(crate) type PrehashedMap<K, V> = HashMap<Prehashed<K>, V, BuildHasherDefault<PassHasher>>;

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

/// Constants of the folded multiply (the fractional digits of pi, as `foldhash` takes them).
const PI: [u64; 4] = [
    0x243f_6a88_85a3_08d3,
    0x1319_8a2e_0370_7344,
    0xa409_3822_299f_31d0,
    0x082e_fa98_ec4e_6c89,
];

/// The 128-bit product of `a` and `b`, its halves XORed.
#[inline]
fn folded_multiply(a: u64, b: u64) -> u64 {
    let product = u128::from(a) * u128::from(b);
    (product as u64) ^ ((product >> 64) as u64)
}

/// Up to eight bytes as a little-endian word, zero-padded.
#[inline]
fn word(bytes: &[u8]) -> u64 {
    match bytes.first_chunk::<8>() {
        Some(word) => u64::from_le_bytes(*word),
        None => {
            let mut word = [0u8; 8];
            word[..bytes.len()].copy_from_slice(bytes);
            u64::from_le_bytes(word)
        }
    }
}

/// A 64-bit fingerprint of a run id, the same in every thread and run of any process.
#[inline]
pub(crate) fn fingerprint(run_id: &[u8]) -> u64 {
    // The length goes in first, so that ids differing only in trailing NUL bytes differ.
    let mut hash = PI[0] ^ (run_id.len() as u64).wrapping_mul(PI[1]);
    let mut rest = run_id;
    while rest.len() > 16 {
        let (block, tail) = rest.split_at(16);
        hash = folded_multiply(word(&block[..8]) ^ hash ^ PI[2], word(&block[8..]) ^ PI[3]);
        rest = tail;
    }
    let (low, high) = rest.split_at(rest.len().min(8));
    hash = folded_multiply(word(low) ^ hash ^ PI[2], word(high) ^ PI[3]);
    folded_multiply(hash ^ PI[0], PI[1])
}

/// A key stored with its hash, so that a map looks it up without hashing it again.
#[derive(Debug, Clone)]
pub(crate) struct Prehashed<K> {
    /// The key's hash.
    pub hash: u64,
    /// The key.
    pub key: K,
}

impl<K: PartialEq> PartialEq for Prehashed<K> {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        self.hash == other.hash && self.key == other.key
    }
}

impl<K: Eq> Eq for Prehashed<K> {}

impl<K> Hash for Prehashed<K> {
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

/// A hasher for keys that are already hashes: it passes the one `u64` through.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct PassHasher {
    hash: u64,
}

impl Hasher for PassHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is used by [`Prehashed`]; anything else still gets a hash.
        for byte in bytes {
            self.hash = (self.hash.rotate_left(5) ^ u64::from(*byte)).wrapping_mul(SEED);
        }
    }

    #[inline]
    fn write_u64(&mut self, value: u64) {
        self.hash = value;
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.hash
    }
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
        assert_ne!(fingerprint(b"run"), fingerprint(b"run\0"));
        assert_ne!(fingerprint(b""), fingerprint(b"\0"));
    }

    #[test]
    fn fingerprints_of_numbered_ids_are_distinct_and_spread() {
        // Ids as writers make them: a shared prefix, a counter, a copy suffix; every length
        // from short to past two 16-byte blocks.
        let mut seen = std::collections::HashSet::new();
        let mut low_bytes = std::collections::HashSet::new();
        for prefix in ["", "r", "raw-calc-", "eval-0123456789abcdef-task-"] {
            for n in 0..20_000 {
                let id = format!("{prefix}{n:06}-c{}", n % 7);
                let hash = fingerprint(id.as_bytes());
                assert!(seen.insert(hash), "two ids share a fingerprint: {id}");
                low_bytes.insert(hash & 0xfff);
            }
        }
        // Every bucket of a 4,096-bucket table is used.
        assert_eq!(low_bytes.len(), 4096);
    }
}
