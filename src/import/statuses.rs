//! The native status values that `native_ending` may hold verbatim under summary capture: for
//! each format, the values docs/import.md lists. Anything else a source gives as its ending (an
//! error message, an exception's text, a status this version does not know), however short, is
//! free text and written as a summary unless the capture is full.

/// Per `--from` name, the status words of its listed endings. A native ending is listed when it
/// is made of these words joined by `/` (`budget_stopped/tokens_exhausted`, `limit/message`), or
/// is `submitted (X)` around a listed ending (SWE-agent's autosubmission).
const LISTED: &[(&str, &[&str])] = &[
    (
        "code-agent",
        &[
            "completed",
            "budget_stopped",
            "model_calls_exhausted",
            "action_steps_exhausted",
            "tokens_exhausted",
            "time_exhausted",
            "model_failed",
            "invalid_output_retries_exhausted",
            "duplicate_call_id",
            "run_aborted",
        ],
    ),
    (
        "swe-agent",
        &[
            "submitted",
            "exit_command",
            "exit_forfeit",
            "exit_cost",
            "exit_context",
            "exit_total_execution_time",
            "exit_format",
            "exit_api",
            "exit_environment_error",
            "exit_error",
            "exit_command_timeout",
            "early_exit",
        ],
    ),
    (
        "mini-swe-agent",
        &[
            "Submitted",
            "LimitsExceeded",
            "TimeExceeded",
            "RepeatedFormatError",
            "RetryError",
        ],
    ),
    (
        "openhands",
        &[
            "finish",
            "reject",
            "finished",
            "awaiting_user_input",
            "rejected",
            "error",
            "rate_limited",
        ],
    ),
    (
        "codex",
        &[
            "task_complete",
            "turn_complete",
            "turn_aborted",
            "budget_limited",
            "review_ended",
            "interrupted",
            "replaced",
        ],
    ),
    ("claude-code", &["isApiErrorMessage"]),
    ("gemini-cli", &["error"]),
    (
        "inspect",
        &[
            "limit",
            "message",
            "turn",
            "token",
            "cost",
            "time",
            "working",
            "context",
            "operator",
            "custom",
            "stop_reason",
            "model_length",
        ],
    ),
    ("otel-genai", &["ok", "error", "unset", "StepLimitReached"]),
];

/// Whether `native` is one of the status values docs/import.md lists for `format`.
pub fn is_listed(format: &str, native: &str) -> bool {
    let Some((_, words)) = LISTED.iter().find(|(name, _)| *name == format) else {
        return false;
    };
    let native = native
        .strip_prefix("submitted (")
        .and_then(|rest| rest.strip_suffix(')'))
        .unwrap_or(native);
    !native.is_empty() && native.split('/').all(|word| words.contains(&word))
}

/// Every listed word with its format, for the test that holds this table and the docs together.
#[cfg(test)]
fn listed_words() -> impl Iterator<Item = (&'static str, &'static str)> {
    LISTED
        .iter()
        .flat_map(|(format, words)| words.iter().map(move |word| (*format, *word)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listed_values_are_words_of_the_format_joined_by_slashes() {
        assert!(is_listed("code-agent", "budget_stopped/tokens_exhausted"));
        assert!(is_listed("swe-agent", "submitted (exit_cost)"));
        assert!(is_listed("inspect", "limit/message"));
        assert!(!is_listed("inspect", "RetryError(<Future>)"));
        assert!(!is_listed("swe-agent", "Uncaught KeyError"));
        assert!(!is_listed("codex", "error"));
        assert!(!is_listed("openhands", "finish/"));
        assert!(!is_listed("otlp", "ok"));
    }

    #[test]
    fn docs_import_md_lists_every_word_in_its_format_section() {
        let docs = include_str!("../../docs/import.md");
        for (format, word) in listed_words() {
            let heading = format!("\n## `{format}`");
            let start = docs.find(&heading).expect("a section per format");
            let section = &docs[start + heading.len()..];
            let section = &section[..section.find("\n## ").unwrap_or(section.len())];
            assert!(
                [
                    format!("`{word}`"),
                    format!("`{word}/"),
                    format!("/{word}`")
                ]
                .iter()
                .any(|form| section.contains(form.as_str())),
                "docs/import.md does not list `{word}` under `{format}`"
            );
        }
    }
}
