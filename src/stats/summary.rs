//! Per-task and suite statistics of an evaluation: each task's success rate with its Wilson
//! interval, pass@k and pass^k, and the suite's means with their intervals.

use std::collections::BTreeMap;

use serde::Serialize;

use super::binomial::{Interval, wilson, wilson_of_rate};
use super::pass_at::{pass_at_k, pass_hat_k};

/// What the statistics are computed with: `--confidence` and `--pass-at`.
#[derive(Clone, Debug, PartialEq)]
pub struct StatsOptions {
    /// The confidence of every interval, and 1 − the level of every test.
    pub confidence: f64,
    /// The k of pass@k and pass^k, in the order given, without repeats.
    pub pass_at: Vec<u32>,
}

impl Default for StatsOptions {
    fn default() -> Self {
        StatsOptions {
            confidence: super::DEFAULT_CONFIDENCE,
            pass_at: vec![1],
        }
    }
}

impl StatsOptions {
    /// The level of the tests: 1 − confidence.
    pub fn alpha(&self) -> f64 {
        ((1.0 - self.confidence) * 1e9).round() / 1e9
    }
}

/// One task's runs, counted: the input of every statistic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskCounts<'a> {
    /// The task id.
    pub id: &'a str,
    /// The model the runs used, as the results rows name it.
    pub model: &'a str,
    /// Runs that ran.
    pub runs: u32,
    /// Runs that passed.
    pub successes: u32,
}

/// One task's statistics: `statistics.tasks[]` in JSON.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TaskStats {
    /// The task id.
    pub id: String,
    /// The model.
    pub model: String,
    /// Runs.
    pub runs: u32,
    /// Runs that passed.
    pub successes: u32,
    /// successes / runs.
    pub rate: f64,
    /// The Wilson interval's lower end.
    pub ci_low: f64,
    /// The Wilson interval's upper end.
    pub ci_high: f64,
    /// pass@k per k asked (`null` when the task ran fewer than k times).
    pub pass_at: BTreeMap<String, Option<f64>>,
    /// pass^k per k asked (`null` when the task ran fewer than k times).
    pub pass_hat: BTreeMap<String, Option<f64>>,
}

/// A mean over tasks with its interval.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SuiteMean {
    /// The mean over the tasks it covers (`null` when it covers none).
    pub mean: Option<f64>,
    /// The interval's lower end.
    pub ci_low: Option<f64>,
    /// The interval's upper end.
    pub ci_high: Option<f64>,
    /// The tasks it covers (for pass@k and pass^k: those with at least k runs).
    pub tasks: usize,
}

/// The suite's statistics: `statistics.suite` in JSON.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SuiteStats {
    /// Tasks with at least one run.
    pub tasks: usize,
    /// Runs over all tasks.
    pub runs: u64,
    /// Runs that passed, over all tasks.
    pub successes: u64,
    /// The confidence of the intervals.
    pub confidence: f64,
    /// The mean of the tasks' success rates (each task counts once, however often it ran).
    pub rate: SuiteMean,
    /// The mean pass@k per k, over the tasks with at least k runs.
    pub pass_at: BTreeMap<String, SuiteMean>,
    /// The mean pass^k per k, over the tasks with at least k runs.
    pub pass_hat: BTreeMap<String, SuiteMean>,
}

/// Every task's statistics and the suite's, from each task's counts (tasks without runs are left
/// out).
pub fn statistics(
    tasks: &[TaskCounts<'_>],
    options: &StatsOptions,
) -> (Vec<TaskStats>, SuiteStats) {
    let ran = tasks.iter().filter(|t| t.runs > 0);
    let per_task = ran.map(|t| task_stats(t, options)).collect();
    let counts = tasks.iter().map(|t| (t.runs, t.successes));
    (per_task, suite_statistics(counts, options))
}

/// The suite's statistics from each task's runs and successes (tasks without runs are left out),
/// in one pass that keeps nothing per task: a report of a million tasks computes each task's
/// figures only as it shows them ([`task_stats`]).
pub fn suite_statistics(
    tasks: impl IntoIterator<Item = (u32, u32)>,
    options: &StatsOptions,
) -> SuiteStats {
    let ks: Vec<u64> = options.pass_at.iter().map(|&k| u64::from(k)).collect();
    // Per figure, the sum of the tasks' values and how many tasks have one.
    let (mut rate, mut at, mut hat) =
        ((0.0, 0), vec![(0.0, 0); ks.len()], vec![(0.0, 0); ks.len()]);
    let (mut ran, mut runs, mut successes) = (0, 0, 0);
    for (task_runs, task_successes) in tasks.into_iter().filter(|(runs, _)| *runs > 0) {
        let n = u64::from(task_runs);
        let passed = u64::from(task_successes.min(task_runs));
        (ran, runs) = (ran + 1, runs + n);
        successes += u64::from(task_successes);
        rate = (rate.0 + passed as f64 / n as f64, rate.1 + 1);
        for (i, &k) in ks.iter().enumerate() {
            add(&mut at[i], pass_at_k(n, passed, k));
            add(&mut hat[i], pass_hat_k(n, passed, k));
        }
    }
    let means = |sums: &[(f64, usize)]| -> BTreeMap<String, SuiteMean> {
        (ks.iter().zip(sums))
            .map(|(k, &(sum, n))| (k.to_string(), mean_of_sum(sum, n, options.confidence)))
            .collect()
    };
    SuiteStats {
        tasks: ran,
        runs,
        successes,
        confidence: options.confidence,
        rate: mean_of_sum(rate.0, rate.1, options.confidence),
        pass_at: means(&at),
        pass_hat: means(&hat),
    }
}

/// Adds a task's value, when it has one, to a figure's sum and count.
fn add(sums: &mut (f64, usize), value: Option<f64>) {
    if let Some(value) = value {
        *sums = (sums.0 + value, sums.1 + 1);
    }
}

/// One task's statistics: its rate with its Wilson interval, and pass@k and pass^k per k asked.
pub fn task_stats(t: &TaskCounts<'_>, options: &StatsOptions) -> TaskStats {
    let (runs, passed) = (u64::from(t.runs), u64::from(t.successes.min(t.runs)));
    let Interval { low, high } = wilson(passed, runs, options.confidence);
    let per_k = |estimate: fn(u64, u64, u64) -> Option<f64>| {
        options
            .pass_at
            .iter()
            .map(|&k| (k.to_string(), estimate(runs, passed, u64::from(k))))
            .collect()
    };
    TaskStats {
        id: t.id.to_owned(),
        model: t.model.to_owned(),
        runs: t.runs,
        successes: passed as u32,
        rate: passed as f64 / runs as f64,
        ci_low: low,
        ci_high: high,
        pass_at: per_k(pass_at_k),
        pass_hat: per_k(pass_hat_k),
    }
}

/// The mean of per-task values in [0, 1] with a Wilson interval that takes the tasks as the
/// sample: a value in [0, 1] with mean m has a variance of at most m(1 − m), the variance of a
/// single pass or fail, so the interval is that of a rate m over the tasks, and never narrower
/// than the spread between tasks allows. With one run per task it is exactly the Wilson interval
/// of the suite's successes over its tasks.
pub fn suite_mean(values: &[f64], confidence: f64) -> SuiteMean {
    mean_of_sum(values.iter().sum(), values.len(), confidence)
}

/// [`suite_mean`] of `n` values summing to `sum`.
fn mean_of_sum(sum: f64, n: usize, confidence: f64) -> SuiteMean {
    if n == 0 {
        return SuiteMean {
            mean: None,
            ci_low: None,
            ci_high: None,
            tasks: 0,
        };
    }
    let mean = (sum / n as f64).clamp(0.0, 1.0);
    let Interval { low, high } = wilson_of_rate(mean, n as f64, confidence);
    SuiteMean {
        mean: Some(mean),
        ci_low: Some(low),
        ci_high: Some(high),
        tasks: n,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(id: &'static str, successes: u32, runs: u32) -> TaskCounts<'static> {
        TaskCounts {
            id,
            model: "actions",
            runs,
            successes,
        }
    }

    #[test]
    fn the_suite_in_one_pass_is_the_mean_of_the_tasks_figures() {
        let tasks = [
            counts("a", 0, 1),
            counts("b", 3, 4),
            counts("c", 2, 2),
            counts("d", 0, 0),
            counts("e", 5, 7),
        ];
        let options = options(&[1, 2, 5]);
        let (per_task, suite) = statistics(&tasks, &options);
        let rates: Vec<f64> = per_task.iter().map(|t| t.rate).collect();
        assert_eq!(suite.rate, suite_mean(&rates, options.confidence));
        for k in ["1", "2", "5"] {
            for (means, pick) in [
                (
                    &suite.pass_at,
                    (|t| &t.pass_at) as fn(&TaskStats) -> &BTreeMap<_, _>,
                ),
                (&suite.pass_hat, |t| &t.pass_hat),
            ] {
                let values: Vec<f64> = per_task.iter().filter_map(|t| pick(t)[k]).collect();
                assert_eq!(means[k], suite_mean(&values, options.confidence));
            }
        }
        assert_eq!((suite.tasks, suite.runs, suite.successes), (4, 14, 10));
    }

    fn options(pass_at: &[u32]) -> StatsOptions {
        StatsOptions {
            confidence: 0.95,
            pass_at: pass_at.to_vec(),
        }
    }

    #[test]
    fn tasks_and_suite_of_the_worked_example() {
        // The example of docs/report.md: a passes 5 of 5, b 3 of 5, c 0 of 5.
        let tasks = [counts("a", 5, 5), counts("b", 3, 5), counts("c", 0, 5)];
        let (per_task, suite) = statistics(&tasks, &options(&[1, 3]));
        let b = &per_task[1];
        assert_eq!((b.runs, b.successes, b.rate), (5, 3, 0.6));
        // Wilson 3/5 at 95%: 0.2307 to 0.8824 (Newcombe's formula, by hand).
        assert!((b.ci_low - 0.2307).abs() < 1e-4 && (b.ci_high - 0.8824).abs() < 1e-4);
        assert_eq!(b.pass_at["3"], Some(1.0));
        assert!((b.pass_hat["3"].unwrap_or(0.0) - 0.1).abs() < 1e-12);
        assert_eq!(suite.tasks, 3);
        assert_eq!((suite.runs, suite.successes), (15, 8));
        // The mean of 1, 0.6 and 0: 0.5333…; its interval is Wilson's for 0.5333 over 3 tasks.
        let mean = suite.rate.mean.unwrap_or(0.0);
        assert!((mean - 1.6 / 3.0).abs() < 1e-12);
        let expected = wilson_of_rate(1.6 / 3.0, 3.0, 0.95);
        assert_eq!(suite.rate.ci_low, Some(expected.low));
        assert_eq!(suite.rate.ci_high, Some(expected.high));
        // pass^3 over the three: (1 + 0.1 + 0) / 3.
        let hat = suite.pass_hat["3"].mean.unwrap_or(0.0);
        assert!((hat - 1.1 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn one_run_per_task_is_the_wilson_interval_of_the_suite() {
        let tasks = [
            counts("a", 1, 1),
            counts("b", 0, 1),
            counts("c", 1, 1),
            counts("d", 1, 1),
        ];
        let (_, suite) = statistics(&tasks, &options(&[1]));
        let direct = wilson(3, 4, 0.95);
        assert_eq!(suite.rate.mean, Some(0.75));
        assert!((suite.rate.ci_low.unwrap_or(0.0) - direct.low).abs() < 1e-12);
        assert!((suite.rate.ci_high.unwrap_or(0.0) - direct.high).abs() < 1e-12);
    }

    #[test]
    fn k_beyond_a_tasks_runs_is_left_out_of_the_mean() {
        let tasks = [counts("few", 1, 2), counts("many", 4, 5)];
        let (per_task, suite) = statistics(&tasks, &options(&[5]));
        assert_eq!(per_task[0].pass_at["5"], None);
        assert_eq!(per_task[1].pass_at["5"], Some(1.0));
        assert_eq!(suite.pass_at["5"].tasks, 1);
        assert_eq!(suite.pass_at["5"].mean, Some(1.0));
        // One task: the suite is that task.
        let (_, one) = statistics(&[counts("only", 2, 4)], &options(&[1]));
        assert_eq!(one.rate.mean, Some(0.5));
        let none = statistics(&[counts("unrun", 0, 0)], &options(&[1])).1;
        assert_eq!((none.tasks, none.rate.mean), (0, None));
    }
}
