//! Checking a task's result against its expectations. With summary capture, failure reasons show
//! summaries instead of answers, so nothing the user did not opt in to is written.

use std::collections::{HashMap, HashSet};

use super::results::ResultsFile;
pub use super::results::Verdict;
use super::suite::{Expectations, Suite};
use crate::run::{ExitReason, RunResult};
use crate::trace::{Capture, Summarizer};

/// Checks `result`, which ended with `error_kind` when it did not finish; returns the verdict and
/// one reason per failed expectation.
pub fn check(
    expect: &Expectations,
    result: &RunResult,
    error_kind: Option<&str>,
    capture: Capture,
    summarizer: &Summarizer,
) -> (Verdict, Vec<String>) {
    if expect.is_empty() {
        return (Verdict::None, Vec::new());
    }
    let shown = |text: &str| match capture {
        Capture::Full => format!("{text:?}"),
        Capture::Summary => short_summary(&summarizer.summarize(text)),
    };
    // Why a run that did not finish ended: its kind, and its message with full capture (under
    // summary capture the message is only written as a summary, which says nothing here).
    let why = match (error_kind, capture, result.error.as_deref()) {
        (None, _, _) => String::new(),
        (Some(kind), Capture::Full, Some(error)) => format!(" ({kind}: {error})"),
        (Some(kind), _, _) => format!(" ({kind})"),
    };
    let mut failures = Vec::new();
    if let Some(reason) = expect.exit_reason
        && result.exit_reason != reason
    {
        failures.push(format!(
            "expected exit reason {reason}, got {}{why}",
            result.exit_reason
        ));
    }
    let answer = result.answer.as_deref();
    let text = expect.text;
    if let Some(expected) = &expect.answer
        && !answer.is_some_and(|a| text.same(a, expected))
    {
        failures.push(match answer {
            Some(actual) => format!("expected answer {}, got {}", shown(expected), shown(actual)),
            None => format!("expected answer {}, got no answer", shown(expected)),
        });
    }
    if let Some(needle) = &expect.answer_contains
        && !answer.is_some_and(|a| text.contains(a, needle))
    {
        failures.push(match answer {
            Some(actual) => format!(
                "expected the answer to contain {}, got {}",
                shown(needle),
                shown(actual)
            ),
            None => format!(
                "expected the answer to contain {}, got no answer",
                shown(needle)
            ),
        });
    }
    if expect.exit_reason.is_none() && result.exit_reason == ExitReason::InternalError {
        failures.push(format!(
            "an internal error{why} was not expected (expect exit_reason internal_error to allow it)"
        ));
    }
    if let Some(limit) = expect.max_steps_used
        && result.steps_used > limit
    {
        let unit = if limit == 1 { "step" } else { "steps" };
        failures.push(format!(
            "expected at most {limit} {unit}, used {}",
            result.steps_used
        ));
    }
    if failures.is_empty() {
        (Verdict::Met, failures)
    } else {
        (Verdict::Failed, failures)
    }
}

/// The failure reasons of a task as the console shows them: where a reason holds the summary of
/// an expected value (text the suite's author wrote), the value itself; the model's answers stay
/// summaries, and results files and JUnit keep the reasons as they were.
pub fn expected_in_full(
    expect: &Expectations,
    failures: &[String],
    summarizer: &Summarizer,
) -> Vec<String> {
    failures
        .iter()
        .map(|failure| {
            let pairs = [
                ("expected answer ", &expect.answer),
                ("expected the answer to contain ", &expect.answer_contains),
            ];
            for (prefix, value) in pairs {
                let Some(value) = value else { continue };
                let summary = format!("{prefix}{}", short_summary(&summarizer.summarize(value)));
                if let Some(rest) = failure.strip_prefix(summary.as_str()) {
                    return format!("{prefix}{value:?}{rest}");
                }
            }
            failure.clone()
        })
        .collect()
}

/// `results` as the console shows them: every failure reason with the suite's expected values in
/// full (see [`expected_in_full`]).
pub fn for_console(results: &ResultsFile, suite: &Suite, summarizer: &Summarizer) -> ResultsFile {
    let mut shown = results.clone();
    if results.capture == Capture::Full || results.tasks.iter().all(|t| t.failures.is_empty()) {
        return shown;
    }
    // Only the failing tasks are read again (a streamed suite does not hold its tasks).
    let failing: HashSet<&str> = results
        .tasks
        .iter()
        .filter(|t| !t.failures.is_empty())
        .map(|t| t.id.as_str())
        .collect();
    let expectations: HashMap<&str, Expectations> = suite
        .tasks
        .entries()
        .iter()
        .enumerate()
        .filter(|(_, entry)| failing.contains(entry.id.as_str()))
        .filter_map(|(i, entry)| Some((entry.id.as_str(), suite.tasks.get(i).ok()?.expect.clone())))
        .collect();
    for task in shown.tasks.iter_mut().filter(|t| !t.failures.is_empty()) {
        if let Some(expect) = expectations.get(task.id.as_str()) {
            task.failures = expected_in_full(expect, &task.failures, summarizer);
        }
    }
    shown
}

/// Whether a reason shows text only as a summary (`chars=N;sha256=…`).
pub fn has_summary(reason: &str) -> bool {
    reason.contains(";sha256=") || reason.contains(";hmac-sha256=")
}

/// A summary with its hash cut to 12 hex digits: enough to tell values apart in a report line.
fn short_summary(summary: &str) -> String {
    match summary.split_once('=').and_then(|_| summary.rfind('=')) {
        Some(i) if summary.len() > i + 13 => format!("{}…", &summary[..i + 13]),
        _ => summary.to_owned(),
    }
}
