//! How many runs with each run id a stream has begun, for [`super::StreamedRun::occurrence`]
//! (a reused id begins a second run), in about 8 bytes a run: ids are kept as 64-bit hashes,
//! most of them in one sorted array grown exactly (no doubling, no hash table's spare slots),
//! the newest in a small table merged into it from time to time, and counts beyond 1 apart.
//! A hash table of counts cost 20 to 40 bytes a run and doubled as it grew: the largest part of
//! what `export`'s memory grew by with its input.

use std::collections::{HashMap, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};

/// Ids kept in the small table before a merge, at the least.
const RECENT_AT_LEAST: usize = 4096;

/// The runs begun per run id.
#[derive(Debug, Default)]
pub(super) struct RunOccurrences {
    /// Hashes of ids seen, sorted, each once.
    sorted: Vec<u64>,
    /// Hashes of ids seen since the last merge, none of them in `sorted`.
    recent: HashSet<u64>,
    /// How many runs began with each id begun more than once.
    repeated: HashMap<u64, u32>,
}

impl RunOccurrences {
    /// Counts one more run with `run_id`, and gives how many runs with it have begun, this one
    /// included (1 for a new id).
    pub(super) fn begin(&mut self, run_id: &str) -> u32 {
        let mut hasher = DefaultHasher::new();
        run_id.hash(&mut hasher);
        let hash = hasher.finish();
        if self.recent.contains(&hash) || self.sorted.binary_search(&hash).is_ok() {
            let count = self.repeated.entry(hash).or_insert(1);
            *count += 1;
            return *count;
        }
        self.recent.insert(hash);
        // The table grows with the array (a sixteenth of it), so merges cost a few moves a run.
        if self.recent.len() >= RECENT_AT_LEAST.max(self.sorted.len() / 16) {
            self.merge();
        }
        1
    }

    /// Moves the recent hashes into the sorted array: sorted apart, then merged from the back
    /// into the array's new end, so nothing but the array itself is held.
    fn merge(&mut self) {
        let mut recent: Vec<u64> = self.recent.drain().collect();
        recent.sort_unstable();
        let old = self.sorted.len();
        self.sorted.reserve_exact(recent.len());
        self.sorted.resize(old + recent.len(), 0);
        let (mut from_old, mut from_recent) = (old, recent.len());
        for at in (0..self.sorted.len()).rev() {
            if from_recent == 0 {
                break;
            }
            if from_old > 0 && self.sorted[from_old - 1] > recent[from_recent - 1] {
                self.sorted[at] = self.sorted[from_old - 1];
                from_old -= 1;
            } else {
                self.sorted[at] = recent[from_recent - 1];
                from_recent -= 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        /// The same counts as a map of every id, through any number of merges.
        #[test]
        fn counts_as_a_map_does(ids in proptest::collection::vec(0u32..30_000, 0..20_000)) {
            let mut occurrences = RunOccurrences::default();
            let mut map: HashMap<String, u32> = HashMap::new();
            for id in ids {
                let id = format!("run-{id}");
                let expected = {
                    let count = map.entry(id.clone()).or_default();
                    *count += 1;
                    *count
                };
                prop_assert_eq!(occurrences.begin(&id), expected);
            }
            prop_assert!(occurrences.sorted.windows(2).all(|pair| pair[0] < pair[1]));
        }
    }

    #[test]
    fn holds_about_eight_bytes_a_run() {
        let mut occurrences = RunOccurrences::default();
        for id in 0..200_000 {
            assert_eq!(occurrences.begin(&format!("r{id}")), 1);
        }
        assert_eq!(occurrences.begin("r7"), 2);
        assert_eq!(occurrences.begin("r7"), 3);
        assert!(occurrences.sorted.capacity() <= 200_000);
        assert!(occurrences.recent.len() < 200_000 / 16);
    }
}
