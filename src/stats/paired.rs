//! The paired comparison of an evaluation with its baseline, over the tasks both ran.
//!
//! - McNemar's exact test (one run a side): the discordant tasks, passed before and fail now
//!   (`worse`) or the reverse (`better`), are under the null each way with chance ½; the p-value
//!   is the exact two-sided binomial [`sign_test`] of `worse` against `better`.
//! - The sign test (repeats on either side): each task's change in success rate is down, up or
//!   nil; the ties are left out and the rest tested the same way. With one run a side a task's
//!   change is −1, 0 or +1, so the sign test *is* McNemar's exact test and the two defaults agree.
//!   It is chosen over a paired permutation test because it is exact whatever the number of runs
//!   per task (adaptive repeats give tasks different counts), needs no random draws (the same
//!   results always give the same exit code) and lets no single task's large change outweigh
//!   many small ones.
//! - The suite's difference in mean success rate (now − before) with a normal interval over the
//!   tasks' paired differences, d̄ ± z·s/√m.
//! - Per task, Fisher's exact test of its two rates marks a change as significant or not
//!   (information only: the exit code follows the suite's test).

use serde::Serialize;

use super::binomial::sign_test;
use super::normal::two_sided_z;

/// `--regression-test`: which test decides whether the suite regressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RegressionTest {
    /// McNemar's exact test on the discordant tasks (one run a side).
    Mcnemar,
    /// The exact sign test on the tasks' changes in success rate.
    Sign,
    /// No test: a task moving down the every/some/no-run scale is a regression, as before.
    None,
}

impl RegressionTest {
    /// The default: `sign` when either side has repeats, else `mcnemar`.
    pub fn default_for(repeats: bool) -> RegressionTest {
        if repeats {
            RegressionTest::Sign
        } else {
            RegressionTest::Mcnemar
        }
    }

    /// The name used on the command line and in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            RegressionTest::Mcnemar => "mcnemar",
            RegressionTest::Sign => "sign",
            RegressionTest::None => "none",
        }
    }
}

/// One task's counts on both sides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PairedCounts {
    /// The task id.
    pub id: String,
    /// (runs that passed, runs) in the baseline.
    pub before: (u32, u32),
    /// (runs that passed, runs) now.
    pub now: (u32, u32),
}

impl PairedCounts {
    fn rate(side: (u32, u32)) -> f64 {
        if side.1 == 0 {
            0.0
        } else {
            f64::from(side.0.min(side.1)) / f64::from(side.1)
        }
    }

    /// Now's success rate minus the baseline's.
    pub fn difference(&self) -> f64 {
        Self::rate(self.now) - Self::rate(self.before)
    }

    fn repeated(&self) -> bool {
        self.before.1 > 1 || self.now.1 > 1
    }
}

/// A task whose success rate changed, with Fisher's exact p-value for the change.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TaskChange {
    /// The task id.
    pub id: String,
    /// Now's rate minus the baseline's.
    pub difference: f64,
    /// Fisher's exact two-sided p-value of the two rates.
    pub p_value: f64,
    /// Whether `p_value` is below the level.
    pub significant: bool,
}

/// The paired verdict: the test, what it found, and the suite's difference.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PairedVerdict {
    /// The test used.
    pub test: RegressionTest,
    /// The test's level, 1 − confidence.
    pub level: f64,
    /// Tasks both sides ran.
    pub tasks: usize,
    /// Tasks whose success rate went down.
    pub worse: usize,
    /// Tasks whose success rate went up.
    pub better: usize,
    /// Tasks whose success rate did not move.
    pub ties: usize,
    /// The test's two-sided p-value (`null` under `none`).
    pub p_value: Option<f64>,
    /// A statistically clear regression: p below the level, more tasks worse than better.
    pub regression: bool,
    /// A statistically clear improvement.
    pub improvement: bool,
    /// The baseline's mean success rate over the paired tasks.
    pub rate_before: f64,
    /// The mean success rate now over the paired tasks.
    pub rate_now: f64,
    /// `rate_now − rate_before`.
    pub difference: f64,
    /// The difference's interval, lower end.
    pub ci_low: f64,
    /// The difference's interval, upper end.
    pub ci_high: f64,
    /// The tasks whose rate changed, in the order given.
    pub changes: Vec<TaskChange>,
}

impl PairedVerdict {
    /// The change of task `id`, when its rate moved.
    pub fn change(&self, id: &str) -> Option<&TaskChange> {
        self.changes.iter().find(|c| c.id == id)
    }
}

/// Runs `test` over `pairs` at level 1 − `confidence`. McNemar's test with repeats on either side
/// is refused: it counts one run a side.
pub fn judge(
    pairs: &[PairedCounts],
    test: RegressionTest,
    confidence: f64,
) -> Result<PairedVerdict, String> {
    if test == RegressionTest::Mcnemar
        && let Some(pair) = pairs.iter().find(|p| p.repeated())
    {
        return Err(format!(
            "--regression-test mcnemar needs one run a side, but task `{}` ran {} times in the baseline and {} now: use `sign` (the default with repeats)",
            pair.id, pair.before.1, pair.now.1
        ));
    }
    // 1 − 0.95 is 0.050000000000000044 in floating point: the level is shown and compared as
    // the 0.05 the user meant.
    let level = ((1.0 - confidence) * 1e9).round() / 1e9;
    let differences: Vec<f64> = pairs.iter().map(PairedCounts::difference).collect();
    let worse = differences.iter().filter(|d| **d < 0.0).count();
    let better = differences.iter().filter(|d| **d > 0.0).count();
    let p_value = match test {
        RegressionTest::None => None,
        RegressionTest::Mcnemar | RegressionTest::Sign => {
            Some(sign_test(worse as u64, better as u64))
        }
    };
    let clear = p_value.is_some_and(|p| p < level);
    let m = pairs.len() as f64;
    let mean = |values: &mut dyn Iterator<Item = f64>| {
        if pairs.is_empty() {
            0.0
        } else {
            values.sum::<f64>() / m
        }
    };
    let rate_before = mean(&mut pairs.iter().map(|p| PairedCounts::rate(p.before)));
    let rate_now = mean(&mut pairs.iter().map(|p| PairedCounts::rate(p.now)));
    let difference = mean(&mut differences.iter().copied());
    let (ci_low, ci_high) = if pairs.len() < 2 {
        (-1.0, 1.0)
    } else {
        let variance = differences
            .iter()
            .map(|d| (d - difference).powi(2))
            .sum::<f64>()
            / (m - 1.0);
        let half = two_sided_z(confidence) * (variance / m).sqrt();
        ((difference - half).max(-1.0), (difference + half).min(1.0))
    };
    let changes = pairs
        .iter()
        .zip(&differences)
        .filter(|(_, d)| **d != 0.0)
        .map(|(p, d)| {
            let p_value = fisher_exact(p.before, p.now);
            TaskChange {
                id: p.id.clone(),
                difference: *d,
                p_value,
                significant: p_value < level,
            }
        })
        .collect();
    Ok(PairedVerdict {
        test,
        level,
        tasks: pairs.len(),
        worse,
        better,
        ties: pairs.len() - worse - better,
        p_value,
        regression: clear && worse > better,
        improvement: clear && better > worse,
        rate_before,
        rate_now,
        difference,
        ci_low,
        ci_high,
        changes,
    })
}

/// ln n!.
fn ln_factorial(n: u64) -> f64 {
    (2..=n).map(|i| (i as f64).ln()).sum()
}

/// Fisher's exact two-sided test of (passed, runs) before against now: the chance, with the
/// margins fixed, of a table as unlikely as the one seen or less (the sum of the hypergeometric
/// probabilities not above the observed one's, as R's `fisher.test` does).
pub fn fisher_exact(before: (u32, u32), now: (u32, u32)) -> f64 {
    let (a, n0) = (u64::from(before.0.min(before.1)), u64::from(before.1));
    let (c, n1) = (u64::from(now.0.min(now.1)), u64::from(now.1));
    let passed = a + c;
    let total = n0 + n1;
    if total == 0 {
        return 1.0;
    }
    let ln_margins =
        ln_factorial(n0) + ln_factorial(n1) + ln_factorial(passed) + ln_factorial(total - passed)
            - ln_factorial(total);
    let ln_p = |x: u64| {
        ln_margins
            - ln_factorial(x)
            - ln_factorial(n0 - x)
            - ln_factorial(passed - x)
            - ln_factorial(n1 + x - passed)
    };
    let observed = ln_p(a);
    let low = passed.saturating_sub(n1);
    let high = n0.min(passed);
    let p: f64 = (low..=high)
        .map(ln_p)
        .filter(|lp| *lp <= observed + 1e-7)
        .map(f64::exp)
        .sum();
    p.min(1.0)
}

#[cfg(test)]
mod tests {
    use super::super::split_mix::SplitMix64;
    use super::*;

    fn pair(id: &str, before: (u32, u32), now: (u32, u32)) -> PairedCounts {
        PairedCounts {
            id: id.to_owned(),
            before,
            now,
        }
    }

    /// One run a side: `true` passed.
    fn once(id: &str, before: bool, now: bool) -> PairedCounts {
        pair(id, (u32::from(before), 1), (u32::from(now), 1))
    }

    #[test]
    fn mcnemar_counts_the_discordant_tasks() {
        // 8 tasks passed before and fail now, 1 the reverse, 3 alike: binom.test(1, 9) = 20/512.
        let mut pairs: Vec<PairedCounts> = (0..8)
            .map(|i| once(&format!("w{i}"), true, false))
            .collect();
        pairs.push(once("b", false, true));
        pairs.extend((0..3).map(|i| once(&format!("s{i}"), true, true)));
        let v = judge(&pairs, RegressionTest::Mcnemar, 0.95).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((v.worse, v.better, v.ties, v.tasks), (8, 1, 3, 12));
        assert!((v.p_value.unwrap_or(1.0) - 20.0 / 512.0).abs() < 1e-15);
        assert!(v.regression && !v.improvement);
        assert!((v.difference - (-7.0 / 12.0)).abs() < 1e-12);
        assert!(v.ci_low < v.difference && v.difference < v.ci_high && v.ci_high < 0.0);
        // One run a side, the sign test gives the same p-value.
        let s = judge(&pairs, RegressionTest::Sign, 0.95).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.p_value, v.p_value);
    }

    #[test]
    fn edges_ties_all_discordant_one_task() {
        // Every task discordant the same way: 5 of 5 is 2/32 = 0.0625, not clear at 0.05.
        let pairs: Vec<PairedCounts> = (0..5)
            .map(|i| once(&format!("t{i}"), true, false))
            .collect();
        let v = judge(&pairs, RegressionTest::Mcnemar, 0.95).unwrap_or_else(|e| panic!("{e}"));
        assert!((v.p_value.unwrap_or(0.0) - 0.0625).abs() < 1e-15);
        assert!(!v.regression);
        // ... and 6 of 6 (2/64) is.
        let pairs: Vec<PairedCounts> = (0..6)
            .map(|i| once(&format!("t{i}"), true, false))
            .collect();
        assert!(judge(&pairs, RegressionTest::Mcnemar, 0.95).is_ok_and(|v| v.regression));
        // Only ties: nothing to test.
        let ties = [once("a", true, true), once("b", false, false)];
        let v = judge(&ties, RegressionTest::Sign, 0.95).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (v.p_value, v.regression, v.difference),
            (Some(1.0), false, 0.0)
        );
        assert_eq!((v.ci_low, v.ci_high), (0.0, 0.0));
        // One task: its change, an interval that says nothing.
        let v = judge(&[once("a", true, false)], RegressionTest::Sign, 0.95)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((v.p_value, v.ci_low, v.ci_high), (Some(1.0), -1.0, 1.0));
        // No tasks at all.
        let v = judge(&[], RegressionTest::Sign, 0.95).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((v.tasks, v.p_value), (0, Some(1.0)));
        // `none` runs no test.
        let v = judge(&ties, RegressionTest::None, 0.95).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(v.p_value, None);
    }

    #[test]
    fn mcnemar_with_repeats_is_refused() {
        let pairs = [once("a", true, true), pair("b", (4, 5), (3, 5))];
        let err = judge(&pairs, RegressionTest::Mcnemar, 0.95)
            .err()
            .unwrap_or_default();
        assert!(err.contains("task `b` ran 5 times"), "{err}");
        assert!(judge(&pairs, RegressionTest::Sign, 0.95).is_ok());
    }

    #[test]
    fn sign_test_with_repeats_counts_directions_not_sizes() {
        // 4 of 5 → 3 of 5 is a change down like 5 of 5 → 0 of 5: the noisy case alone
        // is far from clear.
        let pairs = [pair("noisy", (4, 5), (3, 5))];
        let v = judge(&pairs, RegressionTest::Sign, 0.95).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((v.worse, v.p_value, v.regression), (1, Some(1.0), false));
        assert!((v.difference + 0.2).abs() < 1e-12);
    }

    /// Reference values: R's `fisher.test(matrix(c(a, n0 - a, c, n1 - c), 2))`, and the
    /// hypergeometric sums by hand for the small tables.
    #[test]
    fn fisher_matches_r() {
        // 5/5 against 0/5: 2 · 1/C(10,5) = 2/252.
        assert!((fisher_exact((5, 5), (0, 5)) - 2.0 / 252.0).abs() < 1e-12);
        // Tea tasting, 3/4 against 1/4: 0.4857.
        assert!((fisher_exact((3, 4), (1, 4)) - 0.485_714_285_714_285_7).abs() < 1e-12);
        assert!((fisher_exact((4, 5), (3, 5)) - 1.0).abs() < 1e-12);
        assert_eq!(fisher_exact((1, 1), (1, 1)), 1.0);
        assert_eq!(fisher_exact((0, 0), (0, 0)), 1.0);
    }

    /// How many of `runs` runs pass, each with chance `p`.
    fn passes(rng: &mut SplitMix64, p: f64, runs: u32) -> u32 {
        (0..runs).map(|_| u32::from(rng.uniform() < p)).sum()
    }

    /// Under the null (each task passes with the same chance before and now), a test at level α
    /// must reject at most about α of the time: simulated suites of 5 to 40 tasks, each with its
    /// own pass chance, one run a side (McNemar) and 1 to 8 runs a side (sign test).
    #[test]
    fn p_values_under_the_null_are_not_too_small_too_often() {
        const SUITES: u32 = 4000;
        let mut rng = SplitMix64::new(0x5EED);
        for (test, max_runs) in [(RegressionTest::Mcnemar, 1), (RegressionTest::Sign, 8)] {
            for confidence in [0.95, 0.9] {
                let alpha = 1.0 - confidence;
                let mut rejected = 0u32;
                for _ in 0..SUITES {
                    let tasks = 5 + rng.next_u64() % 36;
                    let pairs: Vec<PairedCounts> = (0..tasks)
                        .map(|i| {
                            let p = rng.uniform();
                            let runs_before = 1 + (rng.next_u64() % max_runs) as u32;
                            let runs_now = 1 + (rng.next_u64() % max_runs) as u32;
                            pair(
                                &format!("t{i}"),
                                (passes(&mut rng, p, runs_before), runs_before),
                                (passes(&mut rng, p, runs_now), runs_now),
                            )
                        })
                        .collect();
                    let v = judge(&pairs, test, confidence).unwrap_or_else(|e| panic!("{e}"));
                    rejected += u32::from(v.p_value.is_some_and(|p| p < alpha));
                }
                let rate = f64::from(rejected) / f64::from(SUITES);
                // Three standard errors of slack over the nominal level.
                let slack = 3.0 * (alpha * (1.0 - alpha) / f64::from(SUITES)).sqrt();
                assert!(
                    rate <= alpha + slack,
                    "{} at {confidence}: rejected {rate} of null suites",
                    test.as_str()
                );
            }
        }
    }
}
