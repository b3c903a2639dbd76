//! The results file (`results.json`, format `looptrace.results/1`): what an evaluation found,
//! per task and in total. Written atomically (a temporary file, then a rename), so a crash leaves
//! the previous complete file or none, never half of one. `docs/results-format.md` is the reference.

use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::io::{self, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::results_formatter::RowsPerLine;
use crate::run::ExitReason;
use crate::trace::Capture;

/// The format name written in every results file: version 2 is a view of a run store
/// (`DIR/runs/`).
pub const RESULTS_FORMAT: &str = "looptrace.results/2";

/// Version 1 (an output folder rewritten in place), still read as a baseline and by `merge`.
pub const RESULTS_FORMAT_V1: &str = "looptrace.results/1";

/// A whole results file. `Tasks` is the rows as held: in memory (the default), or read back from
/// the partial file one at a time while `results.json` is written.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResultsFile<Tasks = Vec<TaskResult>> {
    /// `looptrace.results/1`.
    pub format: String,
    /// The looptrace version that wrote it.
    pub looptrace_version: String,
    /// When the evaluation started, UTC, RFC 3339.
    pub created_at: String,
    /// The evaluation's id, part of every run id it wrote (absent in merged files whose shards
    /// came from different evaluations).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eval_id: Option<String>,
    /// Which suite ran.
    pub suite: SuiteInfo,
    /// The shard this file covers, if the run was sharded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    /// The tasks `--only` and `--skip` selected; absent when the whole suite was selected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selection: Option<super::select::Selection>,
    /// The `--model`s given, in order (several: a model matrix, whose rows are told apart by
    /// (task, model, repeat)); absent when none were.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<String>,
    /// `--repeat N`: how many times each task ran; absent when once. With adaptive repeats,
    /// the most a task ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeats: Option<u32>,
    /// `--repeat-until-decided`: the stopping rule; a task then has 1 to `repeats` runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive: Option<crate::stats::AdaptiveRule>,
    /// The trace capture used.
    pub capture: Capture,
    /// Whether the evaluation was interrupted before every task ran.
    #[serde(default)]
    pub interrupted: bool,
    /// In a rerun's results: the tasks the interrupted evaluation it updated did not reach and
    /// it did not run either (left out by `--only`/`--skip`, or not reached again), which the
    /// next rerun runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_reached: Vec<String>,
    /// Whether this is a merge that lacks some shards (`merge --allow-partial`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
    /// The shards a partial merge lacks, wholly or (`missing_rows`) in part.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_shards: Vec<MissingShard>,
    /// The runs (`DIR/runs/<eval-id>/`) whose rows the view lists, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<String>,
    /// Per-task results, in suite order (with `--repeat`, a task's repeats in order together).
    pub tasks: Tasks,
    /// Counts over `tasks`.
    pub totals: Totals,
}

impl<T> ResultsFile<T> {
    /// The same file with its rows held another way.
    pub fn with_tasks<U>(self, tasks: U) -> ResultsFile<U> {
        ResultsFile {
            format: self.format,
            looptrace_version: self.looptrace_version,
            created_at: self.created_at,
            eval_id: self.eval_id,
            suite: self.suite,
            shard: self.shard,
            selection: self.selection,
            models: self.models,
            repeats: self.repeats,
            adaptive: self.adaptive,
            capture: self.capture,
            interrupted: self.interrupted,
            not_reached: self.not_reached,
            partial: self.partial,
            missing_shards: self.missing_shards,
            runs: self.runs,
            tasks,
            totals: self.totals,
        }
    }
}

/// Identifies a suite, so shard results of different suites are never merged.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SuiteInfo {
    /// The suite's name.
    pub name: String,
    /// How many tasks the whole suite has (all shards).
    pub tasks: usize,
    /// SHA-256 over the suite's name and task ids in order.
    pub fingerprint: String,
}

impl SuiteInfo {
    /// The fingerprint's first 12 characters, for messages; it comes from a file, so it is cut by
    /// characters, not bytes.
    pub fn short_fingerprint(&self) -> String {
        self.fingerprint.chars().take(12).collect()
    }
}

/// `"name" (fingerprint 0123456789ab)`: a suite as messages tell two apart.
impl std::fmt::Display for SuiteInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:?} (fingerprint {})",
            self.name,
            self.short_fingerprint()
        )
    }
}

/// `--shard K/N`: this file covers shard K of N (1-based).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// K, from 1.
    pub index: usize,
    /// N.
    pub count: usize,
}

/// A shard a partial merge lacks: not given at all, or given without some of its rows (an
/// interrupted or edited shard), which `missing_rows` then counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MissingShard {
    /// K, from 1.
    pub index: usize,
    /// N.
    pub count: usize,
    /// How many of its rows the merge lacks; absent when the shard was not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing_rows: Option<usize>,
}

/// Which live model a `chat` task ran against.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatName {
    /// `openai-chat`, `anthropic-messages` or `openai-responses`.
    pub api: String,
    /// The model name sent in requests.
    pub model: String,
    /// The server's host and port (never credentials or paths); absent in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
}

/// One task's outcome.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskResult {
    /// The task id.
    pub id: String,
    /// The run id in the task's trace: `<task-id>.<eval-id>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// Which repeat of the task this row is (1-based), with `--repeat N`; absent when once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<u32>,
    /// The model as given (a `--model` SPEC or a name from the suite's `models`); for a task's
    /// own model its kind, as `model_kind` says.
    pub model: String,
    /// `responses`, `actions`, `replay` or `chat` (absent in files written before it was added,
    /// whose `model` is the kind).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_kind: Option<String>,
    /// The wire format and model name of a `chat` task (never its key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat: Option<ChatName>,
    /// How the run ended.
    pub exit_reason: ExitReason,
    /// Model turns used.
    pub steps_used: u32,
    /// The budget.
    pub max_steps: u32,
    /// The answer: its summary, or the text with full capture.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// Tool calls made.
    pub tool_calls: u32,
    /// Tool calls that came back as error observations.
    pub tool_errors: u32,
    /// Invalid model outputs turned into feedback.
    pub feedback: u32,
    /// Finishes the task's finish gate rejected; absent when the task has no gate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate_rejections: Option<u32>,
    /// Wall time of the run in milliseconds.
    pub duration_ms: f64,
    /// A stable kind when the run did not finish.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<String>,
    /// Why the run did not finish: a summary, or the text with full capture.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The expectation verdict.
    pub expectation: Verdict,
    /// Why expectations failed, one line each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<String>,
    /// The task's trace, relative to the results file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
    /// Whether this row was carried over from the results `--rerun-failed` updated, not run again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub carried_over: bool,
    /// `--retries`: how many times the task ran again after a provider failure; the row is the
    /// last attempt's, and every attempt's run stays in the task's trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retried: Option<u32>,
    /// Each scorer's verdict (`expect` checks and `scorers`), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scores: Vec<crate::eval::scorers::Score>,
}

impl TaskResult {
    /// An internal error in a task without expectations: it fails the evaluation like a failed
    /// expectation. (A task with expectations fails them on an internal error it does not
    /// expect; see `expect::check`.)
    pub fn is_unexpected_internal_error(&self) -> bool {
        self.exit_reason == ExitReason::InternalError && self.expectation == Verdict::None
    }

    /// The row's name in reports: the task id, and its repeat when the task ran several times.
    pub fn label(&self) -> String {
        let id = self.row_key().into_owned();
        match self.repeat {
            Some(k) => format!("{id} (repeat {k})"),
            None => id,
        }
    }

    /// What tells a task's rows apart across models, for comparisons with a baseline: the task
    /// id, and `id[model]` when the model was given from outside the task.
    pub fn row_key(&self) -> std::borrow::Cow<'_, str> {
        match self.given_model() {
            Some(model) => std::borrow::Cow::Owned(format!("{}[{model}]", self.id)),
            None => std::borrow::Cow::Borrowed(&self.id),
        }
    }

    /// The model as given from outside the task (a `--model` SPEC, a name from `models`,
    /// `defaults.model`), when the row's model is not just the task's own model's kind.
    pub fn given_model(&self) -> Option<&str> {
        match &self.model_kind {
            Some(kind) if *kind != self.model => Some(&self.model),
            _ => None,
        }
    }

    /// Whether the run passes (`../shared` rules, "Passing"): every expectation met, or, without
    /// expectations, finished. The one rule statistics and paired comparisons count.
    pub fn passes(&self) -> bool {
        match self.expectation {
            Verdict::Met => true,
            Verdict::Failed => false,
            Verdict::None => self.exit_reason == ExitReason::Finished,
        }
    }

    /// Whether this task fails the evaluation: a failed expectation or an unexpected internal error.
    pub fn fails(&self) -> bool {
        self.expectation == Verdict::Failed || self.is_unexpected_internal_error()
    }
}

/// Counts over the tasks of a results file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    /// Tasks run.
    pub tasks: usize,
    /// Tasks by exit reason; every reason present, zeros included.
    pub exit_reasons: BTreeMap<ExitReason, usize>,
    /// Expectation verdicts.
    pub expectations: ExpectationTotals,
}

/// Expectation verdict counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExpectationTotals {
    /// Tasks whose expectations all held.
    pub met: usize,
    /// Tasks with a failed expectation.
    pub failed: usize,
    /// Tasks without expectations.
    pub none: usize,
}

impl Totals {
    /// Counts `tasks`.
    pub fn of(tasks: &[TaskResult]) -> Totals {
        let mut totals = Totals::zero();
        for task in tasks {
            totals.add(task);
        }
        totals
    }

    /// No tasks yet.
    pub fn zero() -> Totals {
        Totals {
            tasks: 0,
            exit_reasons: ExitReason::ALL.iter().map(|r| (*r, 0)).collect(),
            expectations: ExpectationTotals::default(),
        }
    }

    /// Counts one more task.
    pub fn add(&mut self, task: &TaskResult) {
        self.tasks += 1;
        *self.exit_reasons.entry(task.exit_reason).or_default() += 1;
        match task.expectation {
            Verdict::Met => self.expectations.met += 1,
            Verdict::Failed => self.expectations.failed += 1,
            Verdict::None => self.expectations.none += 1,
        }
    }
}

/// The runs `rows` name: what the traces beside their results must hold.
pub fn run_ids<'a>(rows: impl IntoIterator<Item = &'a TaskResult>) -> HashSet<String> {
    rows.into_iter()
        .filter_map(|row| row.run_id.clone())
        .collect()
}

/// Reads a results file, for baselines and merging.
pub fn read_results(path: &Path) -> Result<ResultsFile, String> {
    let text = fs::read_to_string(path).map_err(|err| {
        // A run store whose first evaluation did not finish has runs but no view yet.
        let runs = path.with_file_name(super::store::RUNS_DIR);
        let unfinished = if err.kind() == io::ErrorKind::NotFound && runs.is_dir() {
            format!(
                " (`{}` holds runs: the evaluation there did not finish; the same eval command again with `--resume` finishes it, or `looptrace eval --rebuild-view` writes the view of its newest run)",
                runs.display()
            )
        } else {
            String::new()
        };
        format!("failed to read results `{}`: {err}{unfinished}", path.display())
    })?;
    let results: ResultsFile = serde_json::from_str(&text).map_err(|err| {
        format!(
            "`{}` is not a looptrace results file: {err}",
            path.display()
        )
    })?;
    if let Some(shard) = results.shard
        && !shard.is_valid()
    {
        return Err(format!(
            "`{}`: shard {}/{} is not a valid shard (1 <= K <= N <= {})",
            path.display(),
            shard.index,
            shard.count,
            Shard::MAX_COUNT
        ));
    }
    if results.format != RESULTS_FORMAT && results.format != RESULTS_FORMAT_V1 {
        return Err(format!(
            "`{}` has format {:?}; this looptrace reads {RESULTS_FORMAT:?}",
            path.display(),
            results.format
        ));
    }
    Ok(results)
}

/// Writes `bytes` to `path` atomically (see [`crate::output::Replacement`]); a target that is a
/// symbolic link is refused, not replaced.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut replacement = crate::output::Replacement::begin(path)?;
    replacement.writer().write_all(bytes)?;
    replacement.commit()
}

/// Writes `results` to `path` as pretty JSON with one line per row, atomically, serialized straight into the file: a
/// large evaluation's results are never held as one string.
pub fn write_results<Tasks: Serialize>(
    path: &Path,
    results: &ResultsFile<Tasks>,
) -> io::Result<()> {
    let mut replacement = crate::output::Replacement::begin(path)?;
    let mut out = io::BufWriter::with_capacity(256 * 1024, replacement.writer());
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, RowsPerLine::new());
    results
        .serialize(&mut serializer)
        .map_err(io::Error::other)?;
    out.write_all(b"\n")?;
    out.flush()?;
    drop(out);
    crate::fault::results_partly_written();
    replacement.commit()
}

/// The current time as RFC 3339 UTC, to the second.
pub fn now_rfc3339() -> String {
    // The trace form to the second: results record when an evaluation ran, not its milliseconds.
    let ts = crate::time::now_ts();
    format!("{}Z", &ts[..19])
}

/// The identity of a suite for results files: name, size and a fingerprint of its task ids;
/// `Err` when a tasks file's ids cannot be read back.
pub fn suite_info(suite: &super::suite::Suite) -> Result<SuiteInfo, String> {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    hasher.update(suite.name.as_bytes());
    suite.tasks.scan(0, |_, task| {
        hasher.update([0]);
        hasher.update(task.id.as_str().as_bytes());
        std::ops::ControlFlow::Continue(())
    })?;
    let digest = hasher.finalize();
    Ok(SuiteInfo {
        name: suite.name.clone(),
        tasks: suite.tasks.len(),
        fingerprint: digest.iter().map(|b| format!("{b:02x}")).collect(),
    })
}

/// How a task fared against its expectations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Every expectation held.
    Met,
    /// At least one did not.
    Failed,
    /// The task had none.
    None,
}

impl Verdict {
    /// The name in results and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Met => "met",
            Verdict::Failed => "failed",
            Verdict::None => "none",
        }
    }
}
