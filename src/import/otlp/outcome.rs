//! How a traced run ended, read from its spans. Instrumentations put the outcome in different
//! places: the OpenAI Agents SDK's put an always-OK `workflow` span over the agent span that
//! carries the error; pydantic-ai and any-agent set it on the root `invoke_agent` span with an
//! exception event; OpenInference nests an `AGENT` span inside another. So the outcome is read
//! from the root and every agent span: their status, its description and their exception events.

use super::span::{Role, Span};
use crate::import::run::Ending;
use crate::run::ExitReason;

/// The budgets a `looptrace.budget` may name.
const BUDGETS: [&str; 6] = ["steps", "tokens", "cost", "time", "context", "other"];

/// Exceptions raised by model clients once a request failed for good (after their retries).
const PROVIDER_ERRORS: [&str; 9] = [
    "APIError",
    "APIStatusError",
    "APIConnectionError",
    "APITimeoutError",
    "InternalServerError",
    "ServiceUnavailableError",
    "ModelHTTPError",
    "ModelServerError",
    "ModelAPIError",
];

/// How the trace with this root span and these other spans ended; `None` is incomplete.
pub fn ending(root: &Span, spans: &[Span]) -> Option<Ending> {
    if let Some(reason) = root.str("looptrace.exit_reason") {
        return looptrace_ending(root, reason);
    }
    let mut deciders: Vec<&Span> = spans.iter().filter(|s| s.role() == Role::Agent).collect();
    deciders.push(root);
    let failed: Vec<&Span> = deciders
        .into_iter()
        .filter(|s| s.error || !s.exceptions.is_empty())
        .collect();
    if failed.is_empty() {
        return Some(Ending::new(ExitReason::Finished));
    }
    let native = failed.iter().find_map(|s| native_of(s)).unwrap_or("error");
    let texts: Vec<&str> = failed.iter().flat_map(|s| texts_of(s)).collect();
    if let Some(budget) = limit_budget(&texts) {
        return Some(Ending::budget(budget).native(native));
    }
    let chat_failed = spans.iter().any(|s| s.role() == Role::Chat && s.error);
    let kinds: Vec<&str> = failed
        .iter()
        .flat_map(|s| s.exceptions.iter().filter_map(|e| e.kind.as_deref()))
        .map(short_type)
        .collect();
    if kinds.contains(&"RateLimitError") {
        return Some(Ending::internal("rate_limited").native(native));
    }
    if chat_failed || kinds.iter().copied().any(is_provider_error) {
        return Some(Ending::internal("model_failure").native(native));
    }
    let kind = failed
        .iter()
        .find_map(|s| s.str("error.type"))
        .unwrap_or("agent_error");
    Some(Ending::internal(kind).native(native))
}

/// Whether an exception type (qualified or not) is a model client's final failure.
pub fn is_provider_error(kind: &str) -> bool {
    PROVIDER_ERRORS.contains(&short_type(kind))
}

/// The budget a turn, step or usage limit ran out of, if one of `texts` (exception types,
/// messages and status descriptions) says a limit stopped the run: the Agents SDK's
/// `MaxTurnsExceeded` ("Max turns exceeded"), pydantic-ai's `UsageLimitExceeded` (tokens when
/// a token limit, else steps: requests and tool calls), and step-limit exceptions such as
/// any-agent's `AgentCancel` subclasses (`StepLimitReached`): a type naming a limit that was
/// reached or exceeded.
pub fn limit_budget(texts: &[&str]) -> Option<&'static str> {
    let lower: Vec<String> = texts.iter().map(|t| t.to_ascii_lowercase()).collect();
    let any = |needle: &str| lower.iter().any(|t| t.contains(needle));
    if any("maxturnsexceeded") || any("max turns exceeded") {
        return Some("steps");
    }
    if any("usagelimitexceeded") {
        return Some(if any("tokens_limit") {
            "tokens"
        } else {
            "steps"
        });
    }
    let limit_type = lower.iter().find(|t| {
        let word = short_type(t.split(':').next().unwrap_or(""));
        !word.contains(' ')
            && (word.contains("limit") || word.starts_with("max"))
            && (word.ends_with("reached") || word.ends_with("exceeded") || word == "agentcancel")
    })?;
    let word = short_type(limit_type.split(':').next().unwrap_or(""));
    Some(if word.contains("token") {
        "tokens"
    } else if word.contains("cost") || word.contains("budget") {
        "cost"
    } else if word.contains("time") {
        "time"
    } else {
        "steps"
    })
}

/// The class name without its module (`pydantic_ai.exceptions.UsageLimitExceeded`).
fn short_type(kind: &str) -> &str {
    kind.rsplit('.').next().unwrap_or(kind).trim()
}

/// The span's own word for its failure: the exception's class, else the status description.
fn native_of(span: &Span) -> Option<&str> {
    span.exceptions
        .iter()
        .find_map(|e| e.kind.as_deref().map(short_type))
        .or(span.status_message.as_deref())
}

fn texts_of(span: &Span) -> Vec<&str> {
    let mut texts: Vec<&str> = span.status_message.iter().map(String::as_str).collect();
    for exception in &span.exceptions {
        texts.extend(exception.kind.as_deref());
        texts.extend(exception.message.as_deref());
    }
    texts.extend(span.str("error.type"));
    texts
}

/// looptrace's own export: its attributes give the ending back exactly.
fn looptrace_ending(root: &Span, reason: &str) -> Option<Ending> {
    let exit_reason: ExitReason =
        serde_json::from_value(serde_json::Value::String(reason.to_owned())).ok()?;
    let mut ending = Ending::new(exit_reason);
    ending.error_kind = root.str("looptrace.error_kind").map(str::to_owned);
    ending.budget = root
        .str("looptrace.budget")
        .and_then(|b| BUDGETS.iter().copied().find(|known| *known == b));
    ending.autosubmitted = root.bool("looptrace.autosubmitted").unwrap_or(false);
    ending.inferred = root.bool("looptrace.ending_inferred").unwrap_or(false);
    Some(ending)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_read_from_types_and_messages() {
        assert_eq!(limit_budget(&["Max turns exceeded"]), Some("steps"));
        assert_eq!(
            limit_budget(&["agents.exceptions.MaxTurnsExceeded"]),
            Some("steps")
        );
        assert_eq!(
            limit_budget(&[
                "pydantic_ai.exceptions.UsageLimitExceeded",
                "The next request would exceed the request_limit of 2."
            ]),
            Some("steps")
        );
        assert_eq!(
            limit_budget(&[
                "UsageLimitExceeded",
                "Exceeded the total_tokens_limit of 100"
            ]),
            Some("tokens")
        );
        assert_eq!(
            limit_budget(&["__main__.StepLimitReached", "reached 2 calls"]),
            Some("steps")
        );
        assert_eq!(
            limit_budget(&["StepLimitReached: reached the limit"]),
            Some("steps")
        );
        assert_eq!(limit_budget(&["TokenLimitExceeded"]), Some("tokens"));
        assert_eq!(
            limit_budget(&["ZeroDivisionError", "division by zero"]),
            None
        );
        assert_eq!(
            limit_budget(&["ValueError", "the limit was reached"]),
            None,
            "a message that mentions a limit is not a limit exception"
        );
    }
}
