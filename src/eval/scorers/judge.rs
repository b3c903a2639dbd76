//! The judge: a live model (through looptrace's own wire-format adapters) grades the answer
//! against the suite's rubric. Its call is kept for the trace like any model call, so the grade
//! can be read again offline from the recorded response ([`JudgeScorer::regrade`]). The reply is
//! parsed strictly: exactly one JSON object `{"grade": "pass" | "fail", "explanation": "...",
//! "score": 0..1}` (`explanation` and `score` optional, nothing else); anything else is invalid
//! grader output, an error of its own that never passes.

use serde::Deserialize;

use super::{RunFacts, Score, ScoreEnv, Scorer};
use crate::eval::model_spec::NamedModel;
use crate::model::live::{LiveConfig, LiveModel, api_key_from_env};
use crate::model::{Model, TurnItem};
use crate::run::{Action, Task};

/// What the grader is told it is.
const SYSTEM: &str = "You grade answers to tasks against a rubric. Reply with only one JSON object \
and nothing else: {\"grade\": \"pass\" or \"fail\", \"explanation\": \"one or two sentences\"}.";

/// A grader's verdict.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grade {
    /// `pass` or `fail`.
    pub grade: GradeWord,
    /// Why.
    #[serde(default)]
    pub explanation: Option<String>,
    /// A score from 0 to 1, when the grader gives one.
    #[serde(default)]
    pub score: Option<f64>,
}

/// The grade itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GradeWord {
    /// The answer meets the rubric.
    Pass,
    /// It does not.
    Fail,
}

/// Reads a grader's reply, strictly.
pub fn parse_grade(reply: &str) -> Result<Grade, String> {
    let grade: Grade = serde_json::from_str(reply.trim()).map_err(|err| {
        format!(
            "invalid grader output: expected only {{\"grade\": \"pass\" | \"fail\", \"explanation\": \"...\"}}: {err}"
        )
    })?;
    if let Some(score) = grade.score
        && !(0.0..=1.0).contains(&score)
    {
        return Err(format!(
            "invalid grader output: `score` must be from 0 to 1, got {score}"
        ));
    }
    Ok(grade)
}

/// A model that grades answers.
#[derive(Clone, Debug)]
pub struct JudgeScorer {
    name: String,
    model: NamedModel,
    rubric: String,
}

impl JudgeScorer {
    /// A judge called `name`, asking `model` to grade against `rubric`.
    pub fn new(name: String, model: NamedModel, rubric: String) -> JudgeScorer {
        JudgeScorer {
            name,
            model,
            rubric,
        }
    }

    /// The judge `spec` describes, its model a full SPEC (`API:MODEL@BASE_URL`), for reading
    /// recorded grades again without a suite.
    pub fn from_spec(spec: &super::ScorerSpec) -> Result<JudgeScorer, String> {
        match spec {
            super::ScorerSpec::Judge(judge) => Ok(JudgeScorer::new(
                judge.name.clone().unwrap_or_else(|| "judge".to_owned()),
                crate::eval::model_spec::resolve_spec(
                    &judge.model,
                    &Default::default(),
                    judge.api_key_env.as_deref(),
                )?,
                judge.rubric.clone(),
            )),
            super::ScorerSpec::Command(_) => Err("not a judge".to_owned()),
        }
    }

    /// The question the grader is asked about one run.
    fn question(&self, facts: &RunFacts<'_>) -> String {
        let answer = facts.result.answer.as_deref().unwrap_or("(no answer)");
        format!(
            "Task:\n<task>\n{}\n</task>\n\nAnswer:\n<answer>\n{answer}\n</answer>\n\nRubric:\n<rubric>\n{}\n</rubric>\n\nDoes the answer meet the rubric? Reply with only the JSON object.",
            facts.prompt, self.rubric
        )
    }

    fn config(&self) -> Result<LiveConfig, String> {
        let mut config = self.model.config.clone();
        config.api_key = api_key_from_env(self.model.api_key_env.as_deref())?;
        if config.system.is_none() {
            config.system = Some(SYSTEM.to_owned());
        }
        Ok(config)
    }

    /// Grades one run: the grade or why there is none, and the model call to record.
    fn grade(
        &self,
        facts: &RunFacts<'_>,
    ) -> (Result<Grade, String>, Option<crate::model::CallRecord>) {
        let config = match self.config() {
            Ok(config) => config,
            Err(message) => return (Err(message), None),
        };
        let mut model = LiveModel::new(config, Vec::new());
        let reply = model.next_turn(&Task::new(self.question(facts)), &[]);
        let record = model.take_call_record();
        let grade = match reply {
            Err(err) => Err(format!("the grader's model call failed: {err}")),
            Ok(items) => match items.as_slice() {
                [
                    TurnItem::Action {
                        action: Action::Finish(finish),
                        ..
                    },
                ] => parse_grade(&finish.answer),
                _ => Err("invalid grader output: it called a tool instead of answering".to_owned()),
            },
        };
        (grade, Some(record))
    }

    /// The grade a recorded response of this judge's wire format holds, read as it was when the
    /// run was scored: offline, with no call.
    pub fn regrade(&self, raw_response: &str) -> Result<Grade, String> {
        let value: serde_json::Value = serde_json::from_str(raw_response)
            .map_err(|err| format!("the recorded response is not JSON: {err}"))?;
        let turn = self
            .model
            .config
            .api
            .wire()
            .parse(&value)
            .map_err(|err| err.to_string())?;
        match turn.items.as_slice() {
            [
                TurnItem::Action {
                    action: Action::Finish(finish),
                    ..
                },
            ] => parse_grade(&finish.answer),
            _ => Err("invalid grader output: it called a tool instead of answering".to_owned()),
        }
    }
}

impl Scorer for JudgeScorer {
    fn score(&self, facts: &RunFacts<'_>, env: &mut ScoreEnv<'_>) -> Score {
        let (grade, record) = self.grade(facts);
        if let Some(record) = record {
            env.calls.push((self.name.clone(), record));
        }
        let (passed, value, explanation) = match grade {
            Ok(grade) => {
                let passed = grade.grade == GradeWord::Pass;
                let said = grade.explanation.map(|why| match env.capture {
                    crate::trace::Capture::Full => why,
                    crate::trace::Capture::Summary => env.summarizer.summarize(&why),
                });
                let word = if passed { "pass" } else { "fail" };
                let explanation = match said {
                    Some(why) => format!("{} graded {word}: {why}", self.model.name),
                    None => format!("{} graded {word}", self.model.name),
                };
                (passed, grade.score, explanation)
            }
            Err(message) => (false, None, message),
        };
        Score {
            name: self.name.clone(),
            kind: "judge".to_owned(),
            passed: Some(passed),
            value,
            explanation: Some(explanation),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grade_is_read_strictly() {
        let grade =
            parse_grade(r#" {"grade": "pass", "explanation": "right city", "score": 0.9} "#)
                .unwrap();
        assert_eq!(grade.grade, GradeWord::Pass);
        assert_eq!(grade.score, Some(0.9));
        for reply in [
            "PASS",
            r#"{"grade": "Pass"}"#,
            r#"{"grade": "pass", "confidence": 1}"#,
            r#"{"grade": "pass", "score": 7}"#,
            "```json\n{\"grade\": \"pass\"}\n```",
            r#"{"grade": "pass"} and more"#,
        ] {
            let err = parse_grade(reply).unwrap_err();
            assert!(err.starts_with("invalid grader output"), "{reply}: {err}");
        }
    }
}
