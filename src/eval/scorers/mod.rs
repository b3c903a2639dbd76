//! Scorers: what decides, after a run ends, whether it did well. One [`Scorer`] trait, one file
//! per kind: checks on the answer (`answer`), checks on how the run went (`run`), a program that
//! inspects the task's working folder (`command`), and a live model that grades the answer
//! against a rubric (`judge`). Each gives one [`Score`] per check; a run passes when every
//! expectation and every score passes (`../shared` rules: the one pass rule).

mod answer;
mod command;
mod judge;
mod run;
mod spec;

use std::path::PathBuf;

use crate::model::CallRecord;
use crate::run::RunResult;
use crate::trace::{Capture, Summarizer};

/// One scorer's verdict on one run: the shape results rows and `run_finished` share.
pub use crate::trace::Score;
pub use answer::{AnswerCheck, TextOptions};
pub use command::CommandScorer;
pub use judge::{Grade, JudgeScorer, parse_grade};
pub use run::RunCheck;
pub use spec::{CheckCache, Checks, CommandSpec, JudgeSpec, NumberCheck, ScorerSpec};

/// What a run left behind for scorers to read.
#[derive(Clone, Debug)]
pub struct RunFacts<'a> {
    /// The task's prompt.
    pub prompt: &'a str,
    /// How the run ended and its answer.
    pub result: &'a RunResult,
    /// The tools called, in order, once per call.
    pub tools_called: &'a [String],
    /// Tool calls that came back as errors.
    pub tool_errors: u32,
    /// Input plus output tokens, when the model reported usage.
    pub total_tokens: Option<u64>,
    /// The run's cost in US dollars, when the model has prices (0 for scripted models).
    pub cost_usd: Option<f64>,
    /// Wall time of the run in seconds.
    pub duration_s: f64,
}

/// Where and how scorers run: the folder commands run in, the variables they may see, how text
/// from the run is shown, and where a judge's model calls are recorded.
pub struct ScoreEnv<'a> {
    /// The task's working folder, when the suite's tools give tasks one.
    pub work_dir: Option<PathBuf>,
    /// The environment allow-list of the suite's tools.
    pub env_names: &'a [String],
    /// Trace capture: with summary capture, text from the run is shown as its summary.
    pub capture: Capture,
    /// How summaries are hashed.
    pub summarizer: &'a Summarizer,
    /// Every model call a judge made, with the scorer's name, to record in the trace.
    pub calls: Vec<(String, CallRecord)>,
}

impl ScoreEnv<'_> {
    /// Text from the run as the capture rules allow it in results: itself, quoted, with full
    /// capture; its summary otherwise.
    pub fn shown(&self, text: &str) -> String {
        match self.capture {
            Capture::Full => format!("{text:?}"),
            Capture::Summary => self.summarizer.summarize(text),
        }
    }
}

/// A check made after a run ends.
pub trait Scorer: Send + Sync + std::fmt::Debug {
    /// Scores one run. A scorer that cannot decide (a program that would not start, a grader's
    /// invalid reply) fails, saying why: it never passes.
    fn score(&self, facts: &RunFacts<'_>, env: &mut ScoreEnv<'_>) -> Score;
}

/// Every score of a run, in order: the `expect` checks, then the `scorers`.
pub fn score_all(
    scorers: &[std::sync::Arc<dyn Scorer>],
    facts: &RunFacts<'_>,
    env: &mut ScoreEnv<'_>,
) -> Vec<Score> {
    scorers.iter().map(|s| s.score(facts, env)).collect()
}

/// The failure line of a score that did not pass, as results and JUnit show it.
pub fn failure_line(score: &Score) -> String {
    match &score.explanation {
        Some(why) => format!("{} ({}): {why}", score.name, score.kind),
        None => format!("{} ({}) failed", score.name, score.kind),
    }
}
