//! A sketch of run durations: a log-linear histogram (32 buckets per power of two of
//! microseconds), so memory stays bounded whatever the number of runs (at most 1,920 counters,
//! 15 KB, per exit reason; a few hundred bytes for durations under a minute) and every percentile
//! it reads off is within 1.6% of the true one. The minimum and maximum are kept exactly, and no
//! percentile is read outside them.

use super::model::DurationSummary;

/// Buckets per power of two: the bits of a value kept after its leading one.
const SUB_BITS: u32 = 5;
const SUB: u64 = 1 << SUB_BITS;

/// Counts of runs per duration bucket.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct DurationSketch {
    buckets: Vec<u64>,
    runs: u64,
    min_ms: f64,
    max_ms: f64,
}

/// The bucket of a duration in microseconds: values under 32 µs have one each; above, each
/// power of two is split in 32 buckets of equal width.
fn bucket(us: u64) -> usize {
    if us < SUB {
        return us as usize;
    }
    let shift = 63 - us.leading_zeros() - SUB_BITS;
    let mantissa = (us >> shift) - SUB;
    ((u64::from(shift) + 1) * SUB + mantissa) as usize
}

/// The smallest and largest duration in microseconds of a bucket.
fn bounds(index: usize) -> (u64, u64) {
    let index = index as u64;
    if index < SUB {
        return (index, index);
    }
    let shift = index / SUB - 1;
    let mantissa = index % SUB;
    let low = (SUB + mantissa) << shift;
    (low, low + ((1u64 << shift) - 1))
}

impl DurationSketch {
    /// Counts one run that took `ms` milliseconds.
    pub(crate) fn record(&mut self, ms: f64) {
        let ms = if ms.is_finite() { ms.max(0.0) } else { 0.0 };
        // Saturates at u64::MAX µs (half a million years).
        let index = bucket((ms * 1000.0).round() as u64);
        if self.buckets.len() <= index {
            self.buckets.resize(index + 1, 0);
        }
        self.buckets[index] += 1;
        self.min_ms = if self.runs == 0 {
            ms
        } else {
            self.min_ms.min(ms)
        };
        self.runs += 1;
        self.max_ms = self.max_ms.max(ms);
    }

    /// Adds every count of `other`.
    pub(crate) fn merge(&mut self, other: &DurationSketch) {
        if self.buckets.len() < other.buckets.len() {
            self.buckets.resize(other.buckets.len(), 0);
        }
        for (mine, theirs) in self.buckets.iter_mut().zip(&other.buckets) {
            *mine += theirs;
        }
        if other.runs > 0 {
            self.min_ms = if self.runs == 0 {
                other.min_ms
            } else {
                self.min_ms.min(other.min_ms)
            };
            self.max_ms = self.max_ms.max(other.max_ms);
        }
        self.runs += other.runs;
    }

    /// The nearest-rank `percent` percentile in milliseconds: the middle of the bucket holding
    /// the value at rank ⌈percent/100 × runs⌉, kept between the minimum and the maximum.
    fn percentile(&self, percent: u64) -> f64 {
        let rank = (percent * self.runs).div_ceil(100).max(1);
        let mut seen = 0;
        let index = self
            .buckets
            .iter()
            .position(|&runs| {
                seen += runs;
                seen >= rank
            })
            .unwrap_or(0);
        let (low, high) = bounds(index);
        let middle = (low as f64 + high as f64) / 2.0 / 1000.0;
        middle.clamp(self.min_ms, self.max_ms)
    }

    /// p50, p90, p99 and max; `None` over no runs.
    pub(crate) fn summary(&self) -> Option<DurationSummary> {
        (self.runs > 0).then(|| DurationSummary {
            p50_ms: self.percentile(50),
            p90_ms: self.percentile(90),
            p99_ms: self.percentile(99),
            max_ms: self.max_ms,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_tile_the_values_without_gaps() {
        let mut expected_low = 0;
        for index in 0..bucket(u64::MAX) + 1 {
            let (low, high) = bounds(index);
            assert_eq!(low, expected_low, "bucket {index}");
            assert_eq!(bucket(low), index);
            assert_eq!(bucket(high), index);
            assert!(high - low <= low / SUB, "bucket {index} is too wide");
            expected_low = high.wrapping_add(1);
        }
        assert_eq!(expected_low, 0, "the last bucket ends at u64::MAX");
        assert_eq!(bucket(u64::MAX), 1919);
    }

    #[test]
    fn percentiles_are_within_two_percent() {
        let mut sketch = DurationSketch::default();
        // 1 ms .. 1000 s in 1,000 steps.
        let values: Vec<f64> = (1..=1000).map(|i| f64::from(i) * f64::from(i)).collect();
        for &ms in values.iter().rev() {
            sketch.record(ms);
        }
        let summary = sketch.summary().unwrap();
        for (got, rank) in [
            (summary.p50_ms, 500),
            (summary.p90_ms, 900),
            (summary.p99_ms, 990),
        ] {
            let want = values[rank - 1];
            assert!(
                (got - want).abs() <= want * 0.016,
                "rank {rank}: {got} against {want}"
            );
        }
        assert_eq!(summary.max_ms, 1_000_000.0);
    }

    #[test]
    fn small_values_are_exact_and_merging_adds() {
        let mut left = DurationSketch::default();
        left.record(0.003);
        left.record(0.010);
        let mut right = DurationSketch::default();
        right.record(0.020);
        right.record(f64::NAN);
        left.merge(&right);
        let summary = left.summary().unwrap();
        assert_eq!(summary.p50_ms, 0.003);
        assert_eq!(summary.p90_ms, 0.020);
        assert_eq!(summary.max_ms, 0.020);
        assert_eq!(DurationSketch::default().summary(), None);
    }

    #[test]
    fn percentiles_stay_between_the_extremes() {
        let mut sketch = DurationSketch::default();
        sketch.record(10.0);
        sketch.record(2_500.0);
        let summary = sketch.summary().unwrap();
        // 10 ms lies in the bucket 9.984..10.239 ms: its middle is read.
        assert_eq!(summary.p50_ms, 10.1115);
        // 2.5 s is the maximum, and its bucket's middle is above it.
        assert_eq!((summary.p90_ms, summary.max_ms), (2_500.0, 2_500.0));
        let mut one = DurationSketch::default();
        one.record(10.0);
        assert_eq!(one.summary().unwrap().p99_ms, 10.0);
        let mut empty = DurationSketch::default();
        empty.merge(&sketch);
        assert_eq!(empty.summary(), Some(summary));
    }
}
