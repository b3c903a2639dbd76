//! Statistics over repeated, non-deterministic runs: how sure an evaluation can be of what its
//! runs show. Pure functions of counts (runs and the runs that passed, per task), no I/O: the
//! renderers, `eval` and `merge` call them with counts they already hold.
//!
//! - [`normal`]: the standard normal quantile the intervals use.
//! - [`binomial`]: binomial tails, the Wilson score interval and the exact two-sided sign test.
//! - [`pass_at`]: the unbiased pass@k and pass^k estimators.
//! - [`summary`]: per-task and suite statistics for a report.
//! - [`paired`]: the paired comparison with a baseline (McNemar's exact test, the sign test,
//!   the suite's difference with its interval, Fisher's exact test per task).
//! - [`sequential`]: the sequential probability ratio test behind adaptive repeats.
//! - [`split_mix`]: the small deterministic generator behind `--sample` and the simulations.
//!
//! `docs/report.md` ("Statistics") explains every number with its formula and a worked example.

pub mod binomial;
pub mod normal;
pub mod paired;
pub mod pass_at;
pub mod sequential;
pub mod split_mix;
pub mod summary;

pub use binomial::{Interval, sign_test, wilson};
pub use paired::{PairedCounts, PairedVerdict, RegressionTest, TaskChange, judge};
pub use pass_at::{pass_at_k, pass_hat_k};
pub use sequential::{AdaptiveRule, Decision, Sprt};
pub use summary::{
    StatsOptions, SuiteMean, SuiteStats, TaskCounts, TaskStats, statistics, suite_statistics,
    task_stats,
};

/// The confidence `--confidence` defaults to.
pub const DEFAULT_CONFIDENCE: f64 = 0.95;

/// The narrowest and widest `--confidence` accepted: below one half an interval says less than
/// a coin; above this the normal quantile leaves the range its approximation is exact in.
pub const CONFIDENCE_RANGE: (f64, f64) = (0.5, 0.999_999);

/// Checks a confidence level given by a user (exclusive of 0 and 1).
pub fn check_confidence(confidence: f64) -> Result<f64, String> {
    let (low, high) = CONFIDENCE_RANGE;
    if confidence.is_finite() && (low..=high).contains(&confidence) {
        Ok(confidence)
    } else {
        Err(format!(
            "--confidence must be between {low} and {high} (e.g. 0.95), not {confidence}"
        ))
    }
}
