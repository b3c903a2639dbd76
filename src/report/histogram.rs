//! A histogram of steps used: counts per step value, so memory stays constant whatever the
//! number of runs, and order statistics read off it exactly.

use std::collections::BTreeMap;

use super::model::{StepStats, StepSummary};

/// Step values below this are counted in a flat array; larger ones in a sorted map.
const DENSE: usize = 1024;

/// Counts of runs per number of steps used.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Histogram {
    dense: Vec<u64>,
    sparse: BTreeMap<u64, u64>,
    runs: u64,
}

impl Histogram {
    /// Counts one run that used `steps` steps.
    pub(crate) fn record(&mut self, steps: u64) {
        self.add(steps, 1);
    }

    fn add(&mut self, steps: u64, runs: u64) {
        self.runs += runs;
        match usize::try_from(steps) {
            Ok(index) if index < DENSE => {
                if self.dense.len() <= index {
                    self.dense.resize(index + 1, 0);
                }
                self.dense[index] += runs;
            }
            _ => *self.sparse.entry(steps).or_default() += runs,
        }
    }

    /// Adds every count of `other`.
    pub(crate) fn merge(&mut self, other: &Histogram) {
        for (steps, &runs) in other.dense.iter().enumerate() {
            if runs > 0 {
                self.add(steps as u64, runs);
            }
        }
        for (&steps, &runs) in &other.sparse {
            self.add(steps, runs);
        }
    }

    /// (steps, runs) pairs in increasing order of steps, zero counts left out.
    fn counts(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        let dense = self.dense.iter().enumerate().filter(|(_, runs)| **runs > 0);
        dense
            .map(|(steps, &runs)| (steps as u64, runs))
            .chain(self.sparse.iter().map(|(&s, &r)| (s, r)))
    }

    /// The nearest-rank `percent` percentile: the value at rank ⌈percent/100 × runs⌉ (at least 1)
    /// in increasing order, so at least `percent`% of runs used that many steps or fewer.
    fn percentile(&self, percent: u64) -> Option<u64> {
        if self.runs == 0 {
            return None;
        }
        let rank = (percent * self.runs).div_ceil(100).max(1);
        let mut seen = 0;
        self.counts().find_map(|(steps, runs)| {
            seen += runs;
            (seen >= rank).then_some(steps)
        })
    }

    /// Runs, min, median, p90 and max.
    pub(crate) fn stats(&self) -> StepStats {
        let summary = match (self.counts().next(), self.counts().last()) {
            (Some((min, _)), Some((max, _))) => Some(StepSummary {
                min,
                median: self.percentile(50).unwrap_or(min),
                p90: self.percentile(90).unwrap_or(max),
                max,
            }),
            _ => None,
        };
        StepStats {
            runs: self.runs,
            summary,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats_of(values: &[u64]) -> Option<StepSummary> {
        let mut histogram = Histogram::default();
        for &value in values {
            histogram.record(value);
        }
        histogram.stats().summary
    }

    #[test]
    fn uses_nearest_rank() {
        let summary = stats_of(&[1, 2, 3, 4]).unwrap();
        assert_eq!(
            (summary.min, summary.median, summary.p90, summary.max),
            (1, 2, 4, 4)
        );
        let summary = stats_of(&[5, 1, 9, 3, 7, 2, 8, 4, 6, 10]).unwrap();
        assert_eq!(
            (summary.min, summary.median, summary.p90, summary.max),
            (1, 5, 9, 10)
        );
        let summary = stats_of(&[7]).unwrap();
        assert_eq!(
            (summary.min, summary.median, summary.p90, summary.max),
            (7, 7, 7, 7)
        );
        assert_eq!(stats_of(&[]), None);
    }

    #[test]
    fn counts_large_values_and_merges() {
        let mut left = Histogram::default();
        left.record(3);
        left.record(u64::MAX);
        let mut right = Histogram::default();
        right.record(2_000);
        left.merge(&right);
        let stats = left.stats();
        assert_eq!(stats.runs, 3);
        let summary = stats.summary.unwrap();
        assert_eq!(
            (summary.min, summary.median, summary.max),
            (3, 2_000, u64::MAX)
        );
    }
}
