//! The binomial distribution: its tails (exact, in log space so thousands of trials neither
//! underflow nor overflow), the Wilson score interval of a success rate, and the exact two-sided
//! sign test that McNemar's test and the paired sign test both are.

use serde::Serialize;

use super::normal::two_sided_z;

/// A two-sided interval: `low ≤ high`, both in the estimate's own range.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Interval {
    /// The lower end.
    pub low: f64,
    /// The upper end.
    pub high: f64,
}

/// The Wilson score interval of `successes` out of `trials` at `confidence` (Wilson 1927): the
/// rates p whose score test (p̂ − p)/√(p(1−p)/n) does not reject at that level,
///
/// (p̂ + z²/2n ± z·√(p̂(1−p̂)/n + z²/4n²)) / (1 + z²/n).
///
/// Unlike p̂ ± z·√(p̂(1−p̂)/n) it stays inside [0, 1] and is not a single point at 0 of n or n of
/// n. No trials say nothing: [0, 1].
pub fn wilson(successes: u64, trials: u64, confidence: f64) -> Interval {
    if trials == 0 {
        return Interval {
            low: 0.0,
            high: 1.0,
        };
    }
    let n = trials as f64;
    let p = successes.min(trials) as f64 / n;
    wilson_of_rate(p, n, confidence)
}

/// [`wilson`] for a rate `p` observed over an `n` that need not be a whole number of trials
/// (a mean of per-task rates over `n` tasks).
pub fn wilson_of_rate(p: f64, n: f64, confidence: f64) -> Interval {
    if n <= 0.0 {
        return Interval {
            low: 0.0,
            high: 1.0,
        };
    }
    let z = two_sided_z(confidence);
    let z2 = z * z;
    let centre = p + z2 / (2.0 * n);
    let spread = z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    let scale = 1.0 + z2 / n;
    Interval {
        // At 0 (or n) of n the bound is exactly 0 (or 1); rounding must not leave it beside.
        low: if p <= 0.0 {
            0.0
        } else {
            ((centre - spread) / scale).clamp(0.0, 1.0)
        },
        high: if p >= 1.0 {
            1.0
        } else {
            ((centre + spread) / scale).clamp(0.0, 1.0)
        },
    }
}

/// ln C(n, k).
fn ln_choose(n: u64, k: u64) -> f64 {
    let k = k.min(n - k);
    (0..k).map(|i| ((n - i) as f64 / (i + 1) as f64).ln()).sum()
}

/// P(X = k) for X ~ Binomial(n, p).
pub fn pmf(k: u64, n: u64, p: f64) -> f64 {
    if k > n {
        return 0.0;
    }
    if p <= 0.0 {
        return if k == 0 { 1.0 } else { 0.0 };
    }
    if p >= 1.0 {
        return if k == n { 1.0 } else { 0.0 };
    }
    (ln_choose(n, k) + k as f64 * p.ln() + (n - k) as f64 * (1.0 - p).ln()).exp()
}

/// P(X ≤ k) for X ~ Binomial(n, p), summed term by term in log space (each term from the last
/// by the ratio (n−i)/(i+1) · p/(1−p)), so it is exact to rounding for any n.
pub fn cdf(k: u64, n: u64, p: f64) -> f64 {
    if k >= n {
        return 1.0;
    }
    if p <= 0.0 {
        return 1.0;
    }
    if p >= 1.0 {
        return 0.0;
    }
    let odds = (p / (1.0 - p)).ln();
    let mut ln_term = n as f64 * (1.0 - p).ln();
    let mut terms = Vec::with_capacity(k as usize + 1);
    for i in 0..=k {
        terms.push(ln_term);
        ln_term += ((n - i) as f64 / (i + 1) as f64).ln() + odds;
    }
    let top = terms.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let sum: f64 = terms.iter().map(|t| (t - top).exp()).sum();
    (top + sum.ln()).exp().min(1.0)
}

/// P(X ≥ k) for X ~ Binomial(n, p).
pub fn upper_tail(k: u64, n: u64, p: f64) -> f64 {
    if k == 0 {
        return 1.0;
    }
    cdf(n - k.min(n), n, 1.0 - p).min(1.0)
}

/// The exact two-sided sign test of `worse` against `better` (ties already left out): under the
/// null each non-tied pair is worse or better with chance ½, so with m = worse + better the
/// p-value is min(1, 2·P(X ≤ min(worse, better))) for X ~ Binomial(m, ½). Nothing to test
/// (m = 0) gives 1.
pub fn sign_test(worse: u64, better: u64) -> f64 {
    let m = worse + better;
    if m == 0 {
        return 1.0;
    }
    (2.0 * cdf(worse.min(better), m, 0.5)).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tolerance: f64) -> bool {
        (a - b).abs() <= tolerance
    }

    /// Reference values: Newcombe (1998), "Two-sided confidence intervals for the single
    /// proportion", Statistics in Medicine 17, table I (method 3, Wilson without continuity
    /// correction), and the closed form at 0 of n: [0, z²/(n + z²)].
    #[test]
    fn wilson_matches_newcombes_table() {
        let cases = [
            ((81, 263), (0.2553, 0.3662)),
            ((15, 148), (0.0624, 0.1605)),
            ((0, 20), (0.0, 0.1611)),
            ((1, 29), (0.0061, 0.1718)),
        ];
        for ((c, n), (low, high)) in cases {
            let i = wilson(c, n, 0.95);
            assert!(
                close(i.low, low, 1e-4) && close(i.high, high, 1e-4),
                "{c}/{n}: {i:?}"
            );
        }
        // n = c mirrors c = 0.
        let all = wilson(20, 20, 0.95);
        assert_eq!(all.high, 1.0);
        assert!(close(all.low, 1.0 - 0.1611, 1e-4));
        let z2 = 1.959_963_984_540_054_f64.powi(2);
        assert!(close(wilson(0, 5, 0.95).high, z2 / (5.0 + z2), 1e-12));
        assert_eq!(
            wilson(0, 0, 0.95),
            Interval {
                low: 0.0,
                high: 1.0
            }
        );
    }

    /// Reference values computed by hand from C(n, k) / 2ⁿ (and R's `pbinom`, `binom.test`).
    #[test]
    fn tails_and_the_sign_test_match_exact_sums() {
        // P(X ≤ 1), n = 10, p = ½: (1 + 10) / 1024.
        assert!(close(cdf(1, 10, 0.5), 11.0 / 1024.0, 1e-15));
        // P(X ≤ 2), n = 5, p = 0.3: 0.16807 + 0.36015 + 0.3087.
        assert!(close(cdf(2, 5, 0.3), 0.836_92, 1e-12));
        assert!(close(pmf(3, 5, 0.3), 0.1323, 1e-12));
        assert!(close(upper_tail(4, 5, 0.3), 0.028_35 + 0.002_43, 1e-12));
        assert_eq!(upper_tail(0, 5, 0.3), 1.0);
        // binom.test(1, 10): 22/1024.
        assert!(close(sign_test(9, 1), 22.0 / 1024.0, 1e-15));
        assert!(close(sign_test(1, 9), 22.0 / 1024.0, 1e-15));
        // Ties: 5 against 5 is as far from a difference as it gets.
        assert_eq!(sign_test(5, 5), 1.0);
        assert_eq!(sign_test(0, 0), 1.0);
        // All discordant one way: 6 of 6 is 2 / 64.
        assert!(close(sign_test(6, 0), 2.0 / 64.0, 1e-15));
        // A large m neither underflows nor overflows: 2·P(X ≤ 4000), m = 10000, is tiny but > 0.
        let p = sign_test(6000, 4000);
        assert!(p > 0.0 && p < 1e-80, "{p}");
        assert!(close(sign_test(5000, 5000), 1.0, 1e-12));
    }
}
