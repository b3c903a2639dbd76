//! `--shard K/N`: a stable 1/N share of a suite, so one suite spreads across CI matrix jobs, indexed
//! Kubernetes Jobs or batch-scheduler arrays. Task i (0-based, suite order) belongs to shard
//! `i mod N + 1`: the same suite always splits the same way, shares differ by at most one task, and
//! the N shards together are exactly the suite.

use std::fmt;
use std::str::FromStr;

use super::results::Shard;

impl FromStr for Shard {
    type Err = String;

    fn from_str(text: &str) -> Result<Shard, String> {
        let bad = || {
            format!(
                "--shard takes K/N with 1 <= K <= N <= {}, got {text:?}",
                Shard::MAX_COUNT
            )
        };
        let (k, n) = text.split_once('/').ok_or_else(bad)?;
        let index: usize = k.trim().parse().map_err(|_| bad())?;
        let count: usize = n.trim().parse().map_err(|_| bad())?;
        let shard = Shard { index, count };
        if !shard.is_valid() {
            return Err(bad());
        }
        Ok(shard)
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Shards as `1/3, 3/3`, for messages.
pub fn list_shards(shards: &[Shard]) -> String {
    shards
        .iter()
        .map(Shard::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

impl Shard {
    /// The most shards a suite may be split into.
    pub const MAX_COUNT: usize = 1_000_000;

    /// Whether `1 <= index <= count <= MAX_COUNT`.
    pub fn is_valid(self) -> bool {
        self.index >= 1 && self.index <= self.count && self.count <= Shard::MAX_COUNT
    }

    /// Whether the task at `position` (0-based) belongs to this shard.
    pub fn contains(self, position: usize) -> bool {
        position % self.count + 1 == self.index
    }

    /// The items of this shard, in order.
    pub fn select<T: Clone>(self, items: &[T]) -> Vec<T> {
        items
            .iter()
            .enumerate()
            .filter(|(i, _)| self.contains(*i))
            .map(|(_, item)| item.clone())
            .collect()
    }
}
