//! Run checks: how the run went, whatever it answered: tool errors, tokens, wall time, cost, and
//! which tools it called or must not have called.

use super::{RunFacts, Score, ScoreEnv, Scorer};

/// One check of the run.
#[derive(Clone, Debug, PartialEq)]
pub enum RunCheck {
    /// `max_tool_errors`.
    MaxToolErrors(u32),
    /// `max_total_tokens`.
    MaxTotalTokens(u64),
    /// `max_duration_s`.
    MaxDuration(f64),
    /// `max_cost_usd`.
    MaxCost(f64),
    /// `tools_called`.
    ToolsCalled(Vec<String>),
    /// `tools_not_called`.
    ToolsNotCalled(Vec<String>),
}

impl RunCheck {
    fn name(&self) -> &'static str {
        match self {
            RunCheck::MaxToolErrors(_) => "max_tool_errors",
            RunCheck::MaxTotalTokens(_) => "max_total_tokens",
            RunCheck::MaxDuration(_) => "max_duration_s",
            RunCheck::MaxCost(_) => "max_cost_usd",
            RunCheck::ToolsCalled(_) => "tools_called",
            RunCheck::ToolsNotCalled(_) => "tools_not_called",
        }
    }

    fn judge(&self, facts: &RunFacts<'_>) -> (bool, Option<f64>, Option<String>) {
        let called = |tool: &String| facts.tools_called.contains(tool);
        match self {
            RunCheck::MaxToolErrors(limit) => {
                let n = facts.tool_errors;
                let why = format!(
                    "expected at most {}, got {n}",
                    crate::plural(u64::from(*limit), "tool error", "tool errors")
                );
                (n <= *limit, Some(f64::from(n)), (n > *limit).then_some(why))
            }
            RunCheck::MaxTotalTokens(limit) => match facts.total_tokens {
                // A model that reports no usage (a scripted one) used no counted tokens.
                None => (true, None, None),
                Some(n) => (
                    n <= *limit,
                    Some(n as f64),
                    (n > *limit).then(|| format!("expected at most {limit} tokens, used {n}")),
                ),
            },
            RunCheck::MaxDuration(limit) => {
                let s = facts.duration_s;
                (
                    s <= *limit,
                    Some(s),
                    (s > *limit).then(|| format!("expected at most {limit} s, took {s:.3} s")),
                )
            }
            RunCheck::MaxCost(limit) => match facts.cost_usd {
                None => (
                    false,
                    None,
                    Some(
                        "the run's cost is unknown: give the model's `prices` in the suite's `models` section"
                            .to_owned(),
                    ),
                ),
                Some(usd) => (
                    usd <= *limit,
                    Some(usd),
                    (usd > *limit).then(|| format!("expected at most ${limit}, cost ${usd:.6}")),
                ),
            },
            RunCheck::ToolsCalled(tools) => {
                let missing: Vec<&str> = tools
                    .iter()
                    .filter(|t| !called(t))
                    .map(String::as_str)
                    .collect();
                let why = format!("expected calls to {}, never called", missing.join(", "));
                (missing.is_empty(), None, (!missing.is_empty()).then_some(why))
            }
            RunCheck::ToolsNotCalled(tools) => {
                let used: Vec<String> = tools
                    .iter()
                    .filter(|t| called(t))
                    .map(|t| {
                        let n = facts.tools_called.iter().filter(|c| *c == t).count();
                        format!("{t} ({})", crate::plural(n as u64, "call", "calls"))
                    })
                    .collect();
                let why = format!("expected no calls to {}", used.join(", "));
                (used.is_empty(), None, (!used.is_empty()).then_some(why))
            }
        }
    }
}

impl Scorer for RunCheck {
    fn score(&self, facts: &RunFacts<'_>, _env: &mut ScoreEnv<'_>) -> Score {
        let (passed, value, explanation) = self.judge(facts);
        Score {
            name: self.name().to_owned(),
            kind: "run".to_owned(),
            passed: Some(passed),
            value,
            explanation,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::{ExitReason, RunResult};

    #[test]
    fn each_run_check_reads_its_fact() {
        let result = RunResult {
            exit_reason: ExitReason::Finished,
            answer: Some("a".into()),
            steps_used: 3,
            error: None,
        };
        let tools = ["read".to_owned(), "read".to_owned(), "write".to_owned()];
        let facts = RunFacts {
            prompt: "p",
            result: &result,
            tools_called: &tools,
            tool_errors: 2,
            total_tokens: Some(1500),
            cost_usd: Some(0.25),
            duration_s: 1.5,
        };
        let check = |c: RunCheck| c.judge(&facts);
        assert_eq!(
            check(RunCheck::MaxToolErrors(1)),
            (
                false,
                Some(2.0),
                Some("expected at most 1 tool error, got 2".into())
            )
        );
        assert!(check(RunCheck::MaxToolErrors(2)).0);
        assert_eq!(
            check(RunCheck::MaxTotalTokens(1000)).2.as_deref(),
            Some("expected at most 1000 tokens, used 1500")
        );
        assert!(!check(RunCheck::MaxDuration(1.0)).0);
        assert!(check(RunCheck::MaxCost(0.5)).0);
        assert_eq!(
            check(RunCheck::ToolsCalled(vec!["read".into(), "search".into()]))
                .2
                .as_deref(),
            Some("expected calls to search, never called")
        );
        assert_eq!(
            check(RunCheck::ToolsNotCalled(vec!["read".into(), "rm".into()]))
                .2
                .as_deref(),
            Some("expected no calls to read (2 calls)")
        );
        let unpriced = RunFacts {
            cost_usd: None,
            ..facts.clone()
        };
        assert!(
            !RunCheck::MaxCost(1.0).judge(&unpriced).0,
            "an unknown cost never passes"
        );
    }
}
