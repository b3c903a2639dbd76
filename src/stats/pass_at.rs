//! pass@k and pass^k from n runs of which c passed, without bias.
//!
//! pass@k is the chance that at least one of k runs drawn without replacement from the n passes
//! (Chen et al. 2021, "Evaluating Large Language Models Trained on Code", eq. 1):
//! 1 − C(n−c, k)/C(n, k). pass^k is the chance that all k pass (Yao et al. 2024, τ-bench):
//! C(c, k)/C(n, k) = c(c−1)…(c−k+1) / n(n−1)…(n−k+1). Both are unbiased estimators of
//! 1 − (1−p)ᵏ and pᵏ for a task that passes with chance p. Neither is defined for k > n: with
//! fewer runs than k there is no draw of k, so both are `None`, never a guess.

/// pass@k from `runs` runs of which `passed` passed; `None` when k is 0 or more than the runs.
pub fn pass_at_k(runs: u64, passed: u64, k: u64) -> Option<f64> {
    if k == 0 || k > runs {
        return None;
    }
    let failed = runs - passed.min(runs);
    if failed < k {
        // Every draw of k holds a passing run.
        return Some(1.0);
    }
    // C(n−c, k)/C(n, k) = ∏_{i=n−c+1}^{n} (1 − k/i), the product form of Chen et al.'s
    // numerically stable estimator: no factorial is ever formed.
    let all_fail: f64 = ((failed + 1)..=runs)
        .map(|i| 1.0 - k as f64 / i as f64)
        .product();
    Some(1.0 - all_fail)
}

/// pass^k from `runs` runs of which `passed` passed; `None` when k is 0 or more than the runs.
pub fn pass_hat_k(runs: u64, passed: u64, k: u64) -> Option<f64> {
    if k == 0 || k > runs {
        return None;
    }
    let passed = passed.min(runs);
    if passed < k {
        return Some(0.0);
    }
    Some(
        (0..k)
            .map(|i| (passed - i) as f64 / (runs - i) as f64)
            .product(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// C(n, k) as an exact integer, for the reference values.
    fn choose(n: u64, k: u64) -> u128 {
        if k > n {
            return 0;
        }
        (0..k).fold(1u128, |acc, i| acc * u128::from(n - i) / u128::from(i + 1))
    }

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-12)
    }

    /// Reference: the definitions computed with exact integer binomial coefficients.
    #[test]
    fn matches_the_definitions_with_exact_binomials() {
        for n in 1..=20u64 {
            for c in 0..=n {
                for k in 1..=n {
                    let at = 1.0 - choose(n - c, k) as f64 / choose(n, k) as f64;
                    let hat = if c >= k {
                        choose(c, k) as f64 / choose(n, k) as f64
                    } else {
                        0.0
                    };
                    assert!(close(pass_at_k(n, c, k), at), "pass@{k} of {c}/{n}");
                    assert!(close(pass_hat_k(n, c, k), hat), "pass^{k} of {c}/{n}");
                }
            }
        }
    }

    #[test]
    fn worked_values_and_edges() {
        // 3 of 5 passed: pass@1 is the rate, pass@3 = 1 − C(2,3)/C(5,3) = 1, pass@2 = 1 − 1/10.
        assert!(close(pass_at_k(5, 3, 1), 0.6));
        assert!(close(pass_at_k(5, 3, 2), 0.9));
        assert!(close(pass_at_k(5, 3, 3), 1.0));
        // pass^2 = 3·2/(5·4) = 0.3; pass^3 = 3·2·1/(5·4·3) = 0.1.
        assert!(close(pass_hat_k(5, 3, 2), 0.3));
        assert!(close(pass_hat_k(5, 3, 3), 0.1));
        // n = c: certain; c = 0: never.
        assert!(close(pass_at_k(4, 4, 4), 1.0) && close(pass_hat_k(4, 4, 4), 1.0));
        assert!(close(pass_at_k(4, 0, 2), 0.0) && close(pass_hat_k(4, 0, 2), 0.0));
        // k > n and k = 0 are not defined.
        assert_eq!(pass_at_k(3, 3, 5), None);
        assert_eq!(pass_hat_k(3, 3, 5), None);
        assert_eq!(pass_at_k(3, 3, 0), None);
        // Large n stays finite and in range.
        let big = pass_at_k(10_000, 1, 100).unwrap_or(f64::NAN);
        assert!((big - 0.01).abs() < 1e-12, "{big}");
    }
}
