//! Wald's sequential probability ratio test (SPRT), which decides after each run of a task
//! whether it passes at least `threshold` of the time, so that `--repeat-until-decided` stops
//! repeating a task as soon as its verdict is clear.
//!
//! The test weighs H₁: p = threshold + δ against H₀: p = threshold − δ (δ = [`INDIFFERENCE`],
//! each kept inside (0.001, 0.999)). After c passes in n runs its log-likelihood ratio is
//! λ = c·ln(p₁/p₀) + (n − c)·ln((1 − p₁)/(1 − p₀)); it decides *pass* when λ ≥ ln((1 − β)/α),
//! *fail* when λ ≤ ln(β/(1 − α)), and runs again otherwise. Wald's bounds hold the chance of
//! deciding *pass* for a task whose p is at most p₀ to α/(1 − β) or less, and of deciding *fail*
//! for one at least p₁ to β/(1 − α) or less; looptrace takes α = β = 1 − confidence. A task
//! still undecided after the most runs allowed stays undecided.

use serde::Serialize;

/// How an evaluation with adaptive repeats stopped repeating: `adaptive` in `results.json`.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct AdaptiveRule {
    /// The most runs of a task (`--repeat-until-decided MAX`).
    pub max: u32,
    /// The pass rate a task must reach (`--pass-threshold`).
    pub pass_threshold: f64,
    /// The test: `sprt`.
    pub test: String,
    /// Both of the test's error levels, 1 − confidence.
    pub alpha: f64,
    /// Half the indifference zone: the test weighs threshold − δ against threshold + δ.
    pub indifference: f64,
}

impl AdaptiveRule {
    /// The rule of `--repeat-until-decided max --pass-threshold threshold` at `confidence`.
    pub fn new(max: u32, threshold: f64, confidence: f64) -> AdaptiveRule {
        AdaptiveRule {
            max,
            pass_threshold: threshold,
            test: "sprt".to_owned(),
            alpha: ((1.0 - confidence) * 1e9).round() / 1e9,
            indifference: INDIFFERENCE,
        }
    }

    /// The test it runs.
    pub fn sprt(&self) -> Sprt {
        Sprt::new(self.pass_threshold, self.alpha)
    }
}

/// Half the width of the indifference zone around the threshold.
pub const INDIFFERENCE: f64 = 0.1;

/// What the test says of a task so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// It passes at least the threshold of the time.
    Pass,
    /// It passes less often than the threshold.
    Fail,
    /// Not clear yet.
    Undecided,
}

/// An SPRT for one threshold and error level.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sprt {
    /// The pass chance under H₀.
    pub p0: f64,
    /// The pass chance under H₁.
    pub p1: f64,
    /// ln((1 − β)/α): decide *pass* at or above.
    pub upper: f64,
    /// ln(β/(1 − α)): decide *fail* at or below.
    pub lower: f64,
}

impl Sprt {
    /// The test of `threshold` (in [0, 1]) with both error levels `alpha`.
    pub fn new(threshold: f64, alpha: f64) -> Sprt {
        let p0 = (threshold - INDIFFERENCE).clamp(0.001, 0.999 - 2.0 * INDIFFERENCE);
        let p1 = (threshold + INDIFFERENCE).clamp(0.001 + 2.0 * INDIFFERENCE, 0.999);
        let beta = alpha;
        Sprt {
            p0,
            p1,
            upper: ((1.0 - beta) / alpha).ln(),
            lower: (beta / (1.0 - alpha)).ln(),
        }
    }

    /// The log-likelihood ratio after `passed` of `runs`.
    pub fn log_ratio(&self, passed: u32, runs: u32) -> f64 {
        let passed = passed.min(runs);
        f64::from(passed) * (self.p1 / self.p0).ln()
            + f64::from(runs - passed) * ((1.0 - self.p1) / (1.0 - self.p0)).ln()
    }

    /// The decision after `passed` of `runs`.
    pub fn decide(&self, passed: u32, runs: u32) -> Decision {
        let ratio = self.log_ratio(passed, runs);
        if ratio >= self.upper {
            Decision::Pass
        } else if ratio <= self.lower {
            Decision::Fail
        } else {
            Decision::Undecided
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference: the bounds by hand. At threshold 0.5 and α = β = 0.05, p₀ = 0.4, p₁ = 0.6, each
    /// pass adds ln 1.5 = 0.405 and each failure takes it away; ln 19 = 2.944 needs 8 net passes.
    #[test]
    fn clear_tasks_decide_after_a_few_runs() {
        let sprt = Sprt::new(0.5, 0.05);
        assert!((sprt.upper - 19f64.ln()).abs() < 1e-12);
        assert!((sprt.lower + 19f64.ln()).abs() < 1e-12);
        assert_eq!(sprt.decide(7, 7), Decision::Undecided);
        assert_eq!(sprt.decide(8, 8), Decision::Pass);
        assert_eq!(sprt.decide(0, 8), Decision::Fail);
        // A task at the threshold wanders: 5 of 10 is undecided.
        assert_eq!(sprt.decide(5, 10), Decision::Undecided);
        // A high threshold: one failure weighs ln(0.1/0.3), about −1.1, so three decide fail.
        let strict = Sprt::new(0.8, 0.05);
        assert_eq!(strict.decide(0, 3), Decision::Fail);
        assert_eq!(strict.decide(0, 2), Decision::Undecided);
        // Thresholds at the ends stay inside (0, 1).
        let top = Sprt::new(1.0, 0.05);
        assert!(top.p1 < 1.0 && top.p0 < top.p1);
        let bottom = Sprt::new(0.0, 0.05);
        assert!(bottom.p0 > 0.0 && bottom.p0 < bottom.p1);
    }

    /// The error bounds hold in simulation: a task passing with chance p₀ is decided *pass*
    /// (within 100 runs) at most about α/(1 − β) of the time, and one at p₁ *fail* likewise.
    #[test]
    fn wrong_decisions_stay_within_walds_bounds() {
        let sprt = Sprt::new(0.6, 0.05);
        let mut state = 0x1234_5678_u64;
        let mut uniform = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        for (p, wrong) in [(sprt.p0, Decision::Pass), (sprt.p1, Decision::Fail)] {
            let mut errors = 0u32;
            const TASKS: u32 = 4000;
            for _ in 0..TASKS {
                let (mut passed, mut runs) = (0, 0);
                let mut decision = Decision::Undecided;
                while decision == Decision::Undecided && runs < 100 {
                    runs += 1;
                    passed += u32::from(uniform() < p);
                    decision = sprt.decide(passed, runs);
                }
                errors += u32::from(decision == wrong);
            }
            let rate = f64::from(errors) / f64::from(TASKS);
            let bound = 0.05 / 0.95;
            assert!(
                rate <= bound + 3.0 * (bound / f64::from(TASKS)).sqrt(),
                "{rate}"
            );
        }
    }
}
