//! `--limit N` and `--sample N [--seed S]`: a smoke run of a few of the selected tasks. `--limit`
//! takes the first N; `--sample` takes N chosen at random but reproducibly: the same seed over
//! the same tasks always chooses the same ones, on any machine and in any later version, since the
//! generator (`stats::split_mix`) and the choice (selection sampling, Knuth's Algorithm S) are
//! looptrace's own code rather than borrowed from a crate whose output may change. The chosen
//! tasks keep their suite order.

use std::fmt;

use super::select::Selection;
use crate::stats::split_mix::SplitMix64;

/// The seed `--sample` uses when `--seed` is not given.
pub const DEFAULT_SEED: u64 = 0;

/// `--limit N` or `--sample N [--seed S]`: how a selection is narrowed for a smoke run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Narrowing {
    /// `--limit N`.
    pub limit: Option<usize>,
    /// `--sample N`.
    pub sample: Option<usize>,
    /// `--seed S` (with `--sample`).
    pub seed: Option<u64>,
}

impl Narrowing {
    /// Whether every selected task runs.
    pub fn is_none(&self) -> bool {
        self.limit.is_none() && self.sample.is_none()
    }

    /// The narrowing a selection records.
    pub fn of(selection: Option<&Selection>) -> Narrowing {
        selection.map_or_else(Narrowing::default, |s| Narrowing {
            limit: s.limit,
            sample: s.sample,
            seed: s.seed,
        })
    }

    /// `items` narrowed: the first `limit`, or `sample` of them by the seed, in their order.
    pub fn apply<T>(&self, mut items: Vec<T>) -> Vec<T> {
        if let Some(count) = self.sample {
            items = sample(items, count, self.seed.unwrap_or(DEFAULT_SEED));
        }
        if let Some(limit) = self.limit {
            items.truncate(limit);
        }
        items
    }

    /// Writes the narrowing into the record of a selection.
    pub fn record(&self, selection: &mut Selection) {
        selection.limit = self.limit;
        selection.sample = self.sample;
        selection.seed = self.sample.map(|_| self.seed.unwrap_or(DEFAULT_SEED));
    }
}

/// As given on the command line, for messages: `--sample 5 --seed 7`, `no --limit or --sample`.
impl fmt::Display for Narrowing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.limit, self.sample) {
            (None, None) => f.write_str("no --limit or --sample"),
            (Some(limit), None) => write!(f, "--limit {limit}"),
            (limit, Some(count)) => {
                write!(
                    f,
                    "--sample {count} --seed {}",
                    self.seed.unwrap_or(DEFAULT_SEED)
                )?;
                match limit {
                    Some(limit) => write!(f, " --limit {limit}"),
                    None => Ok(()),
                }
            }
        }
    }
}

/// `count` of `items` (all of them when there are fewer), chosen by `seed`, in their order.
pub fn sample<T>(items: Vec<T>, count: usize, seed: u64) -> Vec<T> {
    let mut rng = SplitMix64::new(seed);
    let mut left = items.len() as u64;
    let mut wanted = (count as u64).min(left);
    let mut chosen = Vec::with_capacity(wanted as usize);
    for item in items {
        if wanted == 0 {
            break;
        }
        if rng.below(left) < wanted {
            chosen.push(item);
            wanted -= 1;
        }
        left -= 1;
    }
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_chooses_the_same_items_in_order() {
        let items: Vec<usize> = (0..1000).collect();
        let a = sample(items.clone(), 10, 42);
        assert_eq!(a.len(), 10);
        assert_eq!(a, sample(items.clone(), 10, 42));
        assert!(a.windows(2).all(|w| w[0] < w[1]), "{a:?}");
        assert_ne!(a, sample(items.clone(), 10, 43));
        // Pinned (and computed independently): a later version must choose the same tasks for
        // the same seed.
        assert_eq!(
            sample((0..20).collect::<Vec<usize>>(), 5, 7),
            [1, 5, 8, 10, 17]
        );
    }

    #[test]
    fn asking_for_more_than_there_are_gives_them_all() {
        assert_eq!(sample(vec![1, 2, 3], 10, 1), [1, 2, 3]);
        assert_eq!(sample(Vec::<u8>::new(), 3, 1), Vec::<u8>::new());
        assert_eq!(sample(vec![1, 2, 3], 0, 1), Vec::<i32>::new());
    }

    #[test]
    fn every_item_is_as_likely_to_be_chosen() {
        let mut counts = [0u32; 10];
        for seed in 0..20_000 {
            for i in sample((0..10).collect::<Vec<usize>>(), 3, seed) {
                counts[i] += 1;
            }
        }
        // Each is chosen 6,000 times on average; a biased choice strays by thousands.
        assert!(
            counts.iter().all(|&c| (5_500..6_500).contains(&c)),
            "{counts:?}"
        );
    }
}
