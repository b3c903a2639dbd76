//! Answer checks: the answer matches a regular expression, is JSON that satisfies a schema, is a
//! number within a tolerance, or is one of a list. Case and whitespace options apply to the
//! comparisons of text. A run without an answer fails every answer check.

use std::borrow::Cow;
use std::fmt;

use regex::{Regex, RegexBuilder};
use serde::Deserialize;
use serde_json::Value;

use super::{RunFacts, Score, ScoreEnv, Scorer};

/// `answer_number`: the answer read as a number, within `tolerance` of `value`.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NumberCheck {
    /// The expected number.
    pub value: f64,
    /// How far the answer may be from it (0 when not given).
    #[serde(default)]
    pub tolerance: f64,
}

/// How answers are compared: `ignore_case`, `normalize_whitespace`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TextOptions {
    /// Letters compare without case.
    pub ignore_case: bool,
    /// Whitespace is trimmed and each run of it is one space.
    pub normalize_whitespace: bool,
}

impl TextOptions {
    /// `text` as compared.
    pub fn normalize<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let mut text = Cow::Borrowed(text);
        if self.normalize_whitespace {
            text = Cow::Owned(text.split_whitespace().collect::<Vec<_>>().join(" "));
        }
        if self.ignore_case {
            text = Cow::Owned(text.to_lowercase());
        }
        text
    }

    /// Whether `a` and `b` are the same answer.
    pub fn same(&self, a: &str, b: &str) -> bool {
        self.normalize(a) == self.normalize(b)
    }

    /// Whether `haystack` contains `needle`.
    pub fn contains(&self, haystack: &str, needle: &str) -> bool {
        self.normalize(haystack)
            .contains(self.normalize(needle).as_ref())
    }
}

/// One check of the answer.
pub enum AnswerCheck {
    /// `answer_regex`: the pattern as written, and compiled.
    Regex(String, Regex, TextOptions),
    /// `answer_json_schema`.
    JsonSchema(Box<jsonschema::Validator>),
    /// `answer_number`.
    Number(NumberCheck),
    /// `answer_in`.
    In(Vec<String>, TextOptions),
}

impl fmt::Debug for AnswerCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl AnswerCheck {
    /// `answer_regex`; the pattern must compile. With `ignore_case` it matches without case;
    /// with `normalize_whitespace` it is matched against the normalized answer.
    pub fn regex(pattern: &str, options: TextOptions) -> Result<AnswerCheck, String> {
        let regex = RegexBuilder::new(pattern)
            .case_insensitive(options.ignore_case)
            .size_limit(1 << 20)
            .build()
            .map_err(|err| {
                // The parser's message draws the pattern over several lines: its last says why.
                let text = err.to_string();
                let why = text.lines().last().unwrap_or_default();
                format!(
                    "not a regular expression: {}",
                    why.trim().trim_start_matches("error: ")
                )
            })?;
        let options = TextOptions {
            ignore_case: false,
            ..options
        };
        Ok(AnswerCheck::Regex(pattern.to_owned(), regex, options))
    }

    /// `answer_json_schema`; the schema must be one.
    pub fn json_schema(schema: &Value) -> Result<AnswerCheck, String> {
        jsonschema::validator_for(schema)
            .map(|v| AnswerCheck::JsonSchema(Box::new(v)))
            .map_err(|err| format!("not a usable JSON Schema: {err}"))
    }

    fn name(&self) -> &'static str {
        match self {
            AnswerCheck::Regex(..) => "answer_regex",
            AnswerCheck::JsonSchema(_) => "answer_json_schema",
            AnswerCheck::Number(_) => "answer_number",
            AnswerCheck::In(..) => "answer_in",
        }
    }

    /// Whether `answer` passes, the number behind it, and the explanation of a failure.
    fn judge(&self, answer: &str, env: &ScoreEnv<'_>) -> (bool, Option<f64>, Option<String>) {
        let got = || env.shown(answer);
        match self {
            AnswerCheck::Regex(pattern, regex, options) => {
                let passed = regex.is_match(&options.normalize(answer));
                let why = (!passed)
                    .then(|| format!("expected the answer to match /{pattern}/, got {}", got()));
                (passed, None, why)
            }
            AnswerCheck::JsonSchema(validator) => match serde_json::from_str::<Value>(answer) {
                Err(err) => (
                    false,
                    None,
                    Some(format!("expected a JSON answer, got {} ({err})", got())),
                ),
                Ok(value) => match validator.iter_errors(&value).next() {
                    None => (true, None, None),
                    Some(error) => (
                        false,
                        None,
                        Some(format!(
                            "the answer does not satisfy the schema at `{}`: {}",
                            error.instance_path(),
                            match env.capture {
                                crate::trace::Capture::Full => error.to_string(),
                                crate::trace::Capture::Summary =>
                                    format!("a {} value", kind_of(error.instance().as_ref())),
                            }
                        )),
                    ),
                },
            },
            AnswerCheck::Number(check) => match read_number(answer) {
                None => (
                    false,
                    None,
                    Some(format!("expected a number, got {}", got())),
                ),
                Some(x) => {
                    let passed = (x - check.value).abs() <= check.tolerance;
                    let why = (!passed).then(|| {
                        let within = if check.tolerance > 0.0 {
                            format!(" ± {}", check.tolerance)
                        } else {
                            String::new()
                        };
                        format!("expected {}{within}, got {x}", check.value)
                    });
                    (passed, Some(x), why)
                }
            },
            AnswerCheck::In(accepted, options) => {
                let passed = accepted.iter().any(|a| options.same(a, answer));
                let why = (!passed).then(|| {
                    let list: Vec<String> = accepted.iter().map(|a| format!("{a:?}")).collect();
                    format!("expected one of [{}], got {}", list.join(", "), got())
                });
                (passed, None, why)
            }
        }
    }
}

/// A JSON value's kind, for messages that may not show it.
fn kind_of(value: &Value) -> &'static str {
    crate::model::json_type_name(value)
}

/// The answer as a number: trimmed, with `,` and `_` between digits dropped (`1,000`).
fn read_number(answer: &str) -> Option<f64> {
    let cleaned: String = answer
        .trim()
        .chars()
        .filter(|c| !matches!(c, ',' | '_'))
        .collect();
    cleaned.parse::<f64>().ok().filter(|x| x.is_finite())
}

impl Scorer for AnswerCheck {
    fn score(&self, facts: &RunFacts<'_>, env: &mut ScoreEnv<'_>) -> Score {
        let (passed, value, explanation) = match facts.result.answer.as_deref() {
            Some(answer) => self.judge(answer, env),
            None => (false, None, Some("expected an answer, got none".to_owned())),
        };
        Score {
            name: self.name().to_owned(),
            kind: "answer".to_owned(),
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
    use crate::trace::{Capture, Summarizer};

    fn score(check: &AnswerCheck, answer: Option<&str>, capture: Capture) -> Score {
        let result = RunResult {
            exit_reason: ExitReason::Finished,
            answer: answer.map(str::to_owned),
            steps_used: 1,
            error: None,
        };
        let facts = RunFacts {
            prompt: "p",
            result: &result,
            tools_called: &[],
            tool_errors: 0,
            total_tokens: None,
            cost_usd: None,
            duration_s: 0.0,
        };
        let summarizer = Summarizer::sha256();
        let mut env = ScoreEnv {
            work_dir: None,
            env_names: &[],
            capture,
            summarizer: &summarizer,
            calls: Vec::new(),
        };
        check.score(&facts, &mut env)
    }

    #[test]
    fn each_answer_check_passes_and_fails_with_a_readable_reason() {
        let plain = TextOptions::default();
        let regex = AnswerCheck::regex(r"^\d+$", plain).unwrap();
        assert_eq!(score(&regex, Some("42"), Capture::Full).passed, Some(true));
        let failed = score(&regex, Some("forty"), Capture::Full);
        assert_eq!(
            failed.explanation.as_deref(),
            Some(r#"expected the answer to match /^\d+$/, got "forty""#)
        );
        let hidden = score(&regex, Some("forty"), Capture::Summary);
        assert!(
            hidden.explanation.unwrap().contains("got chars=5;sha256="),
            "summary capture never shows the answer"
        );
        let loose = AnswerCheck::regex(
            "^paris$",
            TextOptions {
                ignore_case: true,
                normalize_whitespace: true,
            },
        )
        .unwrap();
        assert_eq!(
            score(&loose, Some("  PARIS \n"), Capture::Full).passed,
            Some(true)
        );
        assert!(
            AnswerCheck::regex("(", plain)
                .unwrap_err()
                .starts_with("not a regular expression")
        );

        let schema = AnswerCheck::json_schema(&serde_json::json!({
            "type": "object", "required": ["city"], "properties": {"city": {"type": "string"}}
        }))
        .unwrap();
        assert_eq!(
            score(&schema, Some(r#"{"city": "Paris"}"#), Capture::Full).passed,
            Some(true)
        );
        let wrong = score(&schema, Some(r#"{"city": 7}"#), Capture::Full);
        assert!(wrong.explanation.unwrap().contains("at `/city`"));
        let not_json = score(&schema, Some("Paris"), Capture::Full);
        assert!(
            not_json
                .explanation
                .unwrap()
                .starts_with("expected a JSON answer")
        );

        let number = AnswerCheck::Number(NumberCheck {
            value: 2.5,
            tolerance: 0.01,
        });
        let close = score(&number, Some(" 2.501 "), Capture::Full);
        assert_eq!(close.passed, Some(true));
        assert_eq!(close.value, Some(2.501));
        let far = score(&number, Some("1,000"), Capture::Full);
        assert_eq!(
            far.explanation.as_deref(),
            Some("expected 2.5 ± 0.01, got 1000")
        );
        assert_eq!(
            score(&number, Some("pi"), Capture::Full).passed,
            Some(false)
        );

        let one_of = AnswerCheck::In(
            vec!["yes".into(), "y".into()],
            TextOptions {
                ignore_case: true,
                normalize_whitespace: false,
            },
        );
        assert_eq!(
            score(&one_of, Some("YES"), Capture::Full).passed,
            Some(true)
        );
        assert_eq!(
            score(&one_of, Some("no"), Capture::Full)
                .explanation
                .as_deref(),
            Some(r#"expected one of ["yes", "y"], got "no""#)
        );
        let none = score(&one_of, None, Capture::Full);
        assert_eq!(none.passed, Some(false));
        assert_eq!(
            none.explanation.as_deref(),
            Some("expected an answer, got none")
        );
    }
}
