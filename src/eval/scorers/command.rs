//! The command scorer: a program run after the run ends, in the task's working folder (else the
//! suite's folder), with the tools' environment allow-list. Unlike the finish gate the model never
//! sees it. It reads `{"answer", "exit_reason"}` on stdin; its exit status decides, unless the
//! scorer has `min_score`: then the `score` of a JSON `{"score": x, "explanation": "..."}` on its
//! stdout decides. Its output is kept under the capture rules.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use super::{RunFacts, Score, ScoreEnv, Scorer};
use crate::gate::CommandGateConfig;
use crate::process::{Ended, OutputMode, ProcessSpec, cut_bytes, run_process};
use crate::trace::Capture;

/// `{"kind": "command", ...}`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandSpec {
    /// The score's name (`command` when not given).
    #[serde(default)]
    pub name: Option<String>,
    /// The program and its arguments; a program path with a `/` is relative to the suite's folder.
    pub command: Vec<String>,
    /// Seconds before the program is killed (60 when not given).
    #[serde(default)]
    pub timeout_s: Option<u64>,
    /// With it, the `score` the program prints decides: at least this passes.
    #[serde(default)]
    pub min_score: Option<f64>,
    /// Bytes of output kept, head and tail (10,000 when not given).
    #[serde(default)]
    pub max_output_bytes: Option<usize>,
}

/// A program that scores runs.
#[derive(Clone, Debug)]
pub struct CommandScorer {
    name: String,
    program: PathBuf,
    /// Where it runs for tasks without a working folder.
    suite_dir: PathBuf,
    args: Vec<String>,
    timeout: Duration,
    min_score: Option<f64>,
    max_output_bytes: usize,
}

/// What the program may print on stdout.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Printed {
    score: f64,
    #[serde(default)]
    explanation: Option<String>,
}

impl CommandScorer {
    /// The scorer `spec` describes; a program path with a `/` is relative to `suite_dir`.
    pub fn new(spec: &CommandSpec, suite_dir: &Path) -> Result<CommandScorer, String> {
        let Some((program, args)) = spec.command.split_first() else {
            return Err("`command` must name a program".to_owned());
        };
        let timeout_s = spec
            .timeout_s
            .unwrap_or(CommandGateConfig::DEFAULT_TIMEOUT_S);
        if !(1..=86_400).contains(&timeout_s) {
            return Err(format!(
                "`timeout_s` must be a whole number from 1 to 86400, got {timeout_s}"
            ));
        }
        if spec.min_score.is_some_and(|m| !m.is_finite()) {
            return Err("`min_score` must be a number".to_owned());
        }
        let program = if program.contains('/') {
            suite_dir.join(program)
        } else {
            PathBuf::from(program)
        };
        Ok(CommandScorer {
            name: spec.name.clone().unwrap_or_else(|| "command".to_owned()),
            program,
            suite_dir: suite_dir.to_path_buf(),
            args: args.to_vec(),
            timeout: Duration::from_secs(timeout_s),
            min_score: spec.min_score,
            max_output_bytes: spec
                .max_output_bytes
                .unwrap_or(CommandGateConfig::DEFAULT_MAX_OUTPUT_BYTES)
                .clamp(1, 16 << 20),
        })
    }

    /// Runs the program: pass or fail, the score it printed, and why.
    fn run(&self, facts: &RunFacts<'_>, env: &ScoreEnv<'_>) -> (bool, Option<f64>, String) {
        let input = serde_json::json!({
            "answer": facts.result.answer,
            "exit_reason": facts.result.exit_reason.as_str(),
        });
        let spec = ProcessSpec {
            program: self.program.clone(),
            args: self.args.clone(),
            dir: Some(
                env.work_dir
                    .clone()
                    .unwrap_or_else(|| self.suite_dir.clone()),
            ),
            env: Some(crate::process::allowed_env(
                env.env_names.iter().map(String::as_str),
            )),
            stdin: input.to_string().into_bytes(),
            timeout: self.timeout,
            output: OutputMode::Separate,
            keep_bytes: self.max_output_bytes,
        };
        let program = self.program.display();
        let finished = match run_process(&spec) {
            Ok(finished) => finished,
            Err(err) => return (false, None, format!("cannot run `{program}`: {err}")),
        };
        let text = |kept: &crate::process::Kept| {
            cut_bytes(&kept.head, kept.dropped, &kept.tail, self.max_output_bytes).text
        };
        let stdout = text(&finished.stdout);
        let stderr = text(&finished.stderr);
        let status = match finished.ended {
            Ended::TimedOut => {
                return (
                    false,
                    None,
                    format!(
                        "`{program}` ran past its timeout of {} s; its process group was killed",
                        self.timeout.as_secs()
                    ),
                );
            }
            Ended::Exited(status) => status,
        };
        let printed = serde_json::from_str::<Printed>(stdout.trim()).ok();
        let score = printed.as_ref().map(|p| p.score).filter(|s| s.is_finite());
        // The program's own words, else its output: text from the run, kept by the capture rules.
        let said = printed
            .as_ref()
            .and_then(|p| p.explanation.clone())
            .unwrap_or_else(|| [stdout.trim(), stderr.trim()].join("\n").trim().to_owned());
        let said = match (env.capture, said.is_empty()) {
            (_, true) => String::new(),
            (Capture::Full, false) => format!(": {said}"),
            (Capture::Summary, false) => format!(": {}", env.summarizer.summarize(&said)),
        };
        let code = match std::os::unix::process::ExitStatusExt::signal(&status) {
            Some(signal) => format!("was killed by signal {signal}"),
            None => format!("exited with status {}", status.code().unwrap_or(-1)),
        };
        match (self.min_score, status.success()) {
            (_, false) => (false, score, format!("`{program}` {code}{said}")),
            (None, true) => (
                true,
                score,
                format!("`{program}` exited with status 0{said}"),
            ),
            (Some(min), true) => match score {
                Some(s) if s >= min => (true, Some(s), format!("score {s} ≥ {min}{said}")),
                Some(s) => (false, Some(s), format!("score {s} < min_score {min}{said}")),
                None => (
                    false,
                    None,
                    format!(
                        "`{program}` printed no JSON {{\"score\": number}} on stdout, which `min_score` needs"
                    ),
                ),
            },
        }
    }
}

impl Scorer for CommandScorer {
    fn score(&self, facts: &RunFacts<'_>, env: &mut ScoreEnv<'_>) -> Score {
        let (passed, value, explanation) = self.run(facts, env);
        Score {
            name: self.name.clone(),
            kind: "command".to_owned(),
            passed: Some(passed),
            value,
            explanation: Some(explanation),
        }
    }
}
