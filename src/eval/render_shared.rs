//! What the sections of the evaluation report share: each task's pass rate over its repeats,
//! shares as percentages, and how many failed rows a table lists.

use std::borrow::Cow;

use super::pass_counts::{PackedRates, PassCounts};
use super::results::ResultsFile;
use crate::stats::TaskCounts;

/// Failed tasks listed in a table fitted to a terminal; the rest are counted.
pub const FAILED_SHOWN: usize = 20;

/// How often one task passed over its repeats.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PassRate<'a> {
    /// The task id (read back from a scratch file, owned).
    pub id: Cow<'a, str>,
    /// The model its rows name.
    pub model: &'a str,
    /// Repeats that passed ([`TaskResult::passes`]).
    pub passed: u32,
    /// Repeats that ran.
    pub runs: u32,
}

impl<'a> PassRate<'a> {
    /// The counts the statistics are computed from.
    pub fn counts(&self) -> TaskCounts<'_> {
        TaskCounts {
            id: &self.id,
            model: self.model,
            runs: self.runs,
            successes: self.passed,
        }
    }

    /// Repeats that disagree on the verdict.
    pub(super) fn flaky(&self) -> bool {
        self.passed > 0 && self.passed < self.runs
    }

    pub(super) fn rate(&self) -> f64 {
        share(self.passed as usize, self.runs as usize)
    }
}

/// Each task's pass rate as the report reads them: counted from rows the results hold, or the
/// packed counts an evaluation kept, read in place (a report lists a million tasks without a
/// second copy of them).
#[derive(Clone, Debug)]
pub enum TaskRates<'a> {
    /// One by one.
    Listed(Vec<PassRate<'a>>),
    /// As an evaluation counted them.
    Packed(&'a PassCounts),
}

impl<'a> TaskRates<'a> {
    /// Each task's rate, in order.
    pub fn iter(&self) -> RatesIter<'_, 'a> {
        match self {
            TaskRates::Listed(rates) => RatesIter::Listed(rates.iter()),
            TaskRates::Packed(counts) => RatesIter::Packed(counts.rates()),
        }
    }

    /// How many tasks.
    pub fn len(&self) -> usize {
        match self {
            TaskRates::Listed(rates) => rates.len(),
            TaskRates::Packed(counts) => counts.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Why the packed counts could not all be read back while the report was written, if
    /// they could not (the report then lacks tasks: an internal error).
    pub fn unread(&self) -> Option<&'a str> {
        match self {
            TaskRates::Listed(_) => None,
            TaskRates::Packed(counts) => counts.unread(),
        }
    }
}

impl<'s, 'a> IntoIterator for &'s TaskRates<'a> {
    type Item = PassRate<'a>;
    type IntoIter = RatesIter<'s, 'a>;

    fn into_iter(self) -> RatesIter<'s, 'a> {
        self.iter()
    }
}

/// An iterator over [`TaskRates`], which can be walked again from where it is (cloned).
#[derive(Clone)]
pub enum RatesIter<'s, 'a> {
    /// Over a list.
    Listed(std::slice::Iter<'s, PassRate<'a>>),
    /// Over packed counts.
    Packed(PackedRates<'a>),
}

impl<'s, 'a> Iterator for RatesIter<'s, 'a> {
    type Item = PassRate<'a>;

    fn next(&mut self) -> Option<PassRate<'a>> {
        match self {
            RatesIter::Listed(rates) => rates.next().cloned(),
            RatesIter::Packed(rates) => rates.next(),
        }
    }
}

/// Each task's passing runs and runs, counted from `results`' rows, in the order the tasks first
/// appear: what the statistics are computed from.
pub fn pass_rates_of(results: &ResultsFile) -> Vec<PassRate<'_>> {
    pass_rates(results).unwrap_or_default()
}

/// Per-task pass rates ([`TaskResult::passes`]), counted from the rows.
pub(super) fn pass_rates(results: &ResultsFile) -> Option<Vec<PassRate<'_>>> {
    let mut rates: Vec<PassRate<'_>> = Vec::new();
    // A task's rows are counted per model: under a matrix each (task, model) has its own rate.
    let mut index: std::collections::HashMap<(&str, &str), usize> =
        std::collections::HashMap::new();
    for task in &results.tasks {
        let key = (task.id.as_str(), task.model.as_str());
        let i = *index.entry(key).or_insert_with(|| {
            rates.push(PassRate {
                id: Cow::Borrowed(task.id.as_str()),
                model: task.model.as_str(),
                passed: 0,
                runs: 0,
            });
            rates.len() - 1
        });
        rates[i].runs += 1;
        if task.passes() {
            rates[i].passed += 1;
        }
    }
    Some(rates)
}

/// `count` of `total`, from 0 to 1 (0 when there is none).
pub(super) fn share(count: usize, total: usize) -> f64 {
    if total == 0 {
        0.0
    } else {
        count as f64 / total as f64
    }
}

/// A share as a percentage with one decimal.
pub(super) fn percent(share: f64) -> String {
    format!("{:.1}%", share * 100.0)
}
