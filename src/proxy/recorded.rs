//! The recorded calls a replaying proxy answers from: every call of every live run in the given
//! traces (full capture: request body and raw response, with the stream chunking of streamed
//! ones), indexed by the hash of the canonical request. A first request takes the first unused
//! recorded run whose first call it matches; a run's later requests take its next calls in order.
//! A miss names the closest recorded request and the first JSON path where the two differ.

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::ignore::{IgnoredPath, matching_text};
use super::runs::Cursor;
use crate::replay::first_difference;
use crate::trace::{Capture, EventKind, ReadOptions, TraceError, read_trace, sha256_tagged};

/// One recorded model call.
#[derive(Clone, Debug)]
pub struct RecordedCall {
    /// `sha256:HEX` of the canonical request body without the `--ignore`d parts (recomputed,
    /// whatever the trace's hash).
    pub hash: String,
    /// The canonical request body.
    pub body: String,
    /// The body without the `--ignore`d parts, when some are ignored: what requests are
    /// compared with.
    pub matching: Option<String>,
    /// The HTTP status the client got.
    pub status: u16,
    /// The response body, whole.
    pub response: String,
    /// The byte length of each piece of a streamed response, as it came.
    pub chunks: Option<Vec<u64>>,
    /// The line of the trace that holds it.
    pub line: u64,
}

impl RecordedCall {
    /// What a request is compared with.
    fn compared(&self) -> &str {
        self.matching.as_deref().unwrap_or(&self.body)
    }
}

/// One recorded run's calls.
#[derive(Clone, Debug)]
pub struct RecordedRun {
    /// The trace file.
    pub file: PathBuf,
    /// The run id.
    pub run_id: String,
    /// Its calls, in order.
    pub calls: Vec<RecordedCall>,
}

/// Why recordings cannot be replayed.
#[derive(Debug, thiserror::Error)]
pub enum RecordingError {
    /// The trace could not be read.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// A run lacks what replay needs.
    #[error("cannot replay run `{run_id}` of `{file}`: {reason}")]
    NotReplayable {
        /// The trace.
        file: String,
        /// The run.
        run_id: String,
        /// What is missing.
        reason: String,
    },
    /// Nothing to replay.
    #[error("{0} holds no recorded model call")]
    Empty(String),
}

/// Every recorded run, and which are taken.
#[derive(Debug, Default)]
pub struct Recordings {
    runs: Vec<RecordedRun>,
    used: Vec<bool>,
}

/// The recorded request closest to one that matched none.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Closest {
    /// `call 2 of run R in FILE (line N)`.
    pub place: String,
    /// The first differing JSON path, `$.messages[0].content`.
    pub path: String,
    /// The recorded value there (JSON, shortened).
    pub recorded: String,
    /// The request's value there (JSON, shortened).
    pub actual: String,
}

impl fmt::Display for Closest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the closest recorded request is {}, which first differs at {}: recorded {}, got {}",
            self.place, self.path, self.recorded, self.actual
        )
    }
}

impl Recordings {
    /// Reads the traces. A run with no model call is skipped; a run recorded with summary
    /// capture, or a call without its request body or response, is refused.
    pub fn load(paths: &[PathBuf], ignored: &[IgnoredPath]) -> Result<Recordings, RecordingError> {
        let mut runs = Vec::new();
        for path in paths {
            let before = runs.len();
            let contents = read_trace(path, ReadOptions::default())?;
            for run in &contents.runs {
                runs.extend(replayable(path, run, ignored)?);
            }
            if runs.len() == before {
                return Err(RecordingError::Empty(format!("`{}`", path.display())));
            }
        }
        let used = vec![false; runs.len()];
        Ok(Recordings { runs, used })
    }

    /// Reads the one run `run_id` of the trace at `path` (the last of that id). A run with no
    /// model call gives recordings that answer nothing.
    pub fn load_run(
        path: &Path,
        run_id: &str,
        ignored: &[IgnoredPath],
    ) -> Result<Recordings, RecordingError> {
        let contents = read_trace(path, ReadOptions::default())?;
        let Some(run) = contents.runs.iter().rev().find(|run| run.run_id == run_id) else {
            return Err(RecordingError::NotReplayable {
                file: path.display().to_string(),
                run_id: run_id.to_owned(),
                reason: "the trace has no such run".to_owned(),
            });
        };
        let runs: Vec<RecordedRun> = replayable(path, run, ignored)?.into_iter().collect();
        let used = vec![false; runs.len()];
        Ok(Recordings { runs, used })
    }

    /// How many runs and calls are recorded.
    pub fn counts(&self) -> (usize, usize) {
        (
            self.runs.len(),
            self.runs.iter().map(|run| run.calls.len()).sum(),
        )
    }

    /// The model names recorded, for `/v1/models`.
    pub fn model_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .runs
            .iter()
            .flat_map(|run| &run.calls)
            .filter_map(|call| {
                serde_json::from_str::<Value>(&call.body)
                    .ok()?
                    .get("model")?
                    .as_str()
                    .map(str::to_owned)
            })
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// The call at a cursor.
    pub fn call(&self, (run, index): Cursor) -> Option<&RecordedCall> {
        self.runs.get(run)?.calls.get(index)
    }

    /// The recorded run at a cursor.
    pub fn run(&self, (run, _): Cursor) -> Option<&RecordedRun> {
        self.runs.get(run)
    }

    /// Takes the first unused run whose first call has `hash` (one named `preferred` first).
    pub fn start(&mut self, hash: &str, preferred: Option<&str>) -> Option<Cursor> {
        let matches = |(index, run): &(usize, &RecordedRun)| {
            !self.used[*index] && run.calls.first().is_some_and(|call| call.hash == hash)
        };
        let found = preferred
            .and_then(|id| {
                self.runs
                    .iter()
                    .enumerate()
                    .filter(matches)
                    .find(|(_, run)| run.run_id == id)
            })
            .or_else(|| self.runs.iter().enumerate().find(matches))
            .map(|(index, _)| index)?;
        self.used[found] = true;
        Some((found, 0))
    }

    /// The recorded request that agrees longest with `canonical` (canonical JSON sorts keys, so
    /// the longest common prefix is the latest first difference), preferring `hint`'s call. Both
    /// sides are taken without the `--ignore`d parts.
    pub fn closest(&self, canonical: &str, hint: Option<Cursor>) -> Option<Closest> {
        let common = |body: &str| {
            body.bytes()
                .zip(canonical.bytes())
                .take_while(|(a, b)| a == b)
                .count()
        };
        let hinted = hint.and_then(|cursor| Some((cursor, self.call(cursor)?)));
        let best = hinted.or_else(|| {
            self.runs
                .iter()
                .enumerate()
                .flat_map(|(r, run)| {
                    run.calls
                        .iter()
                        .enumerate()
                        .map(move |(c, call)| ((r, c), call))
                })
                .max_by_key(|(_, call)| (common(call.compared()), std::cmp::Reverse(call.line)))
        });
        let ((run_index, call_index), call) = best?;
        let run = &self.runs[run_index];
        let parse = |text: &str| serde_json::from_str::<Value>(text).unwrap_or(Value::Null);
        let difference = first_difference(&parse(call.compared()), &parse(canonical))?;
        Some(Closest {
            place: format!(
                "call {} of run `{}` in `{}` (line {})",
                call_index + 1,
                run.run_id,
                file_name(&run.file),
                call.line
            ),
            path: difference.path,
            recorded: around(&difference.recorded, &difference.actual),
            actual: around(&difference.actual, &difference.recorded),
        })
    }
}

/// A run's recorded calls, if it made any: a run recorded with summary capture, or a call
/// without its request body or response, is refused.
fn replayable(
    path: &Path,
    run: &crate::trace::RecordedRun,
    ignored: &[IgnoredPath],
) -> Result<Option<RecordedRun>, RecordingError> {
    let refuse = |reason: String| RecordingError::NotReplayable {
        file: path.display().to_string(),
        run_id: run.run_id.clone(),
        reason,
    };
    let started = run.started();
    if started.is_none_or(|s| s.api.is_none()) {
        return Ok(None);
    }
    if started.is_some_and(|s| s.capture != Some(Capture::Full)) {
        return Err(refuse(
            "it was recorded with summary capture, which keeps hashes of the requests and \
             responses but not the bodies a replay answers with; record with full capture \
             (`looptrace proxy` always does)"
                .to_owned(),
        ));
    }
    let calls = calls_of(run, ignored).map_err(refuse)?;
    Ok((!calls.is_empty()).then(|| RecordedRun {
        file: path.to_path_buf(),
        run_id: run.run_id.clone(),
        calls,
    }))
}

/// The calls of one run: the first event of each turn and each failed call, in order.
fn calls_of(
    run: &crate::trace::RecordedRun,
    ignored: &[IgnoredPath],
) -> Result<Vec<RecordedCall>, String> {
    let mut calls: Vec<RecordedCall> = Vec::new();
    let mut last_turn: Option<u64> = None;
    for (line, event) in &run.events {
        let (is_failure, http_status) = match &event.kind {
            EventKind::ModelAction(_) | EventKind::ModelFeedback(_) => (false, None),
            EventKind::ModelRetry(retry) => (true, retry.http_status),
            _ => continue,
        };
        let Some(call) = event.model_call() else {
            continue;
        };
        if !is_failure && last_turn == Some(event.step) {
            continue;
        }
        if !is_failure {
            last_turn = Some(event.step);
        }
        if is_failure && call.request_body.is_none() {
            // A retry recorded by looptrace's own loop: no call to answer with.
            continue;
        }
        let (Some(body), Some(response)) = (&call.request_body, &call.raw_response) else {
            return Err(format!(
                "the {} at line {line} has no {}; only full-capture recordings of live calls \
                 can be replayed",
                event.event_type(),
                if call.request_body.is_none() {
                    "request_body"
                } else {
                    "raw_response"
                }
            ));
        };
        if event.error_kind() == Some("replay_miss") {
            continue;
        }
        let unanswered = is_failure && http_status.is_none();
        if unanswered {
            // A call that got no whole answer is not replayed: the client's retry follows it.
            continue;
        }
        let matching = match serde_json::from_str::<Value>(body) {
            Ok(value) if !ignored.is_empty() => Some(matching_text(&value, ignored)),
            _ => None,
        };
        calls.push(RecordedCall {
            hash: sha256_tagged(matching.as_deref().unwrap_or(body).as_bytes()),
            matching,
            body: body.clone(),
            status: http_status.unwrap_or(200),
            response: response.clone(),
            chunks: call.stream_chunks.clone(),
            line: *line,
        });
    }
    Ok(calls)
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// At most about 80 characters of a JSON value, for messages: where two long texts differ deep
/// inside, the part around the first differing character, so the difference shows.
fn around(text: &str, other: &str) -> String {
    const BEFORE: usize = 20;
    const LIMIT: usize = 80;
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= LIMIT {
        return text.to_owned();
    }
    let same = chars
        .iter()
        .zip(other.chars())
        .take_while(|(a, b)| **a == *b)
        .count();
    let start = same
        .saturating_sub(BEFORE)
        .min(chars.len().saturating_sub(LIMIT));
    let end = (start + LIMIT).min(chars.len());
    let head = if start > 0 { "…" } else { "" };
    let tail = if end < chars.len() { "…" } else { "" };
    format!(
        "{head}{}{tail}",
        chars[start..end].iter().collect::<String>()
    )
}

#[cfg(test)]
mod tests {
    use super::around;

    #[test]
    fn long_texts_are_shown_around_their_first_difference() {
        let recorded = format!("\"{}date 2026-12-06{}\"", "a".repeat(100), "z".repeat(100));
        let actual = format!("\"{}date 2026-12-07{}\"", "a".repeat(100), "z".repeat(100));
        let shown = around(&recorded, &actual);
        assert!(shown.starts_with('…') && shown.ends_with('…'), "{shown}");
        assert!(shown.contains("date 2026-12-06"), "{shown}");
        assert_eq!(around("\"short\"", "\"other\""), "\"short\"");
    }
}
