//! `eval --traces PATH...`: every recorded run in those files or folders becomes a replay task
//! whose expectation is the recorded exit reason, so a whole corpus reruns in one go.
//!
//! The corpus is streamed: a task holds only where its run's lines are ([`RunSource::Located`]),
//! and the runner reads the run again when the task runs, so memory grows by a few hundred bytes
//! per task, never by the recorded content.

use std::borrow::Cow;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::suite::{
    DEFAULT_MAX_STEPS, Expectations, Suite, SuiteErrors, SuiteTask, TaskId, TaskModel,
};
use crate::replay::ReplayModel;
use crate::run::RunOutcome;
use crate::trace::{Capture, LineSpan, ReadOptions, RecordedRun, RunStream, read_run_at};

/// Where a replay task's recorded run comes from.
#[derive(Clone, Debug)]
pub enum RunSource {
    /// The run itself, read when the suite was loaded (a suite's `replay` task).
    Held(Arc<RecordedRun>),
    /// Where the run's lines are in the task's trace file (`eval --traces`): read again when the
    /// task runs; its prompt is the recorded one.
    Located {
        /// The run's id.
        run_id: String,
        /// Its lines, in event order.
        spans: Arc<[LineSpan]>,
    },
}

impl RunSource {
    /// The recorded run's id.
    pub fn run_id(&self) -> &str {
        match self {
            RunSource::Held(run) => &run.run_id,
            RunSource::Located { run_id, .. } => run_id,
        }
    }

    /// The recorded run, read again from `path` if it is not held.
    pub fn load(&self, path: &Path) -> Result<Cow<'_, RecordedRun>, String> {
        match self {
            RunSource::Held(run) => Ok(Cow::Borrowed(run)),
            RunSource::Located { run_id, spans } => {
                read_run_at(path, run_id, spans).map(Cow::Owned)
            }
        }
    }

    /// The replay model of the run read from `path`.
    pub fn model(&self, path: &Path) -> Result<ReplayModel, String> {
        ReplayModel::from_run(&*self.load(path)?).map_err(|err| err.to_string())
    }

    /// Whether the task's prompt is the recorded one (the task does not hold it).
    pub fn prompt_from_recording(&self) -> bool {
        matches!(self, RunSource::Located { .. })
    }
}

/// Bytes of open runs' lines kept parsed while a corpus is read (beyond them, runs are kept as
/// line positions and read again when they end). Reading a corpus keeps every task until the
/// evaluation ends, so its reading gets a smaller share than `show` and `replay`
/// ([`crate::trace::OPEN_BYTES_BUDGET`]); runs written eight at a time fit in it many times over.
const CORPUS_OPEN_BYTES: u64 = 4 * 1024 * 1024;

/// A corpus suite and the runs that could not become tasks (with why).
#[derive(Debug)]
pub struct Corpus {
    /// The suite of replay tasks.
    pub suite: Suite,
    /// Runs left out, e.g. incomplete recordings (nothing to compare with).
    pub skipped: Vec<String>,
}

/// Collects `*.jsonl` files: files as given, folders searched recursively, in sorted order.
pub fn trace_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut files = Vec::new();
    for path in paths {
        let meta = std::fs::metadata(path)
            .map_err(|err| format!("failed to read `{}`: {err}", path.display()))?;
        if meta.is_dir() {
            walk(path, &mut files)?;
        } else if meta.is_file() {
            files.push(path.clone());
        } else {
            return Err(format!(
                "`{}` is not a regular file: traces are read from regular files only",
                path.display()
            ));
        }
    }
    // The same file named twice (or through a link) is read once.
    let mut seen = HashSet::new();
    files.retain(|file| {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(file).map_or(true, |m| seen.insert((m.dev(), m.ino())))
    });
    Ok(files)
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>) -> Result<(), String> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|err| format!("failed to read folder `{}`: {err}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for entry in entries {
        // Symlinked folders are not followed: a link back up the tree would loop.
        let is_link = std::fs::symlink_metadata(&entry).is_ok_and(|m| m.is_symlink());
        if entry.is_dir() && !is_link {
            walk(&entry, files)?;
        } else if entry.extension().is_some_and(|e| e == "jsonl") {
            // A FIFO or a device would block the walk or never end.
            if std::fs::metadata(&entry).is_ok_and(|m| m.is_file()) {
                files.push(entry);
            } else {
                eprintln!("warning: skipped `{}`: not a regular file", entry.display());
            }
        }
    }
    Ok(())
}

/// Builds the replay suite; every unreplayable run is reported together.
pub fn corpus_suite(paths: &[PathBuf], capture: Capture) -> Result<Corpus, SuiteErrors> {
    let fail = |problems: Vec<(String, String)>| SuiteErrors {
        file: "--traces".to_owned(),
        problems,
    };
    let files = trace_files(paths).map_err(|e| fail(vec![("--traces".to_owned(), e)]))?;
    let mut problems = Vec::new();
    let mut tasks = Vec::new();
    let mut skipped = Vec::new();
    let mut ids = HashSet::new();
    for file in &files {
        let mut stream = match RunStream::open(file, ReadOptions::default()) {
            Ok(stream) => stream.with_budget(CORPUS_OPEN_BYTES),
            Err(err) => {
                problems.push((file.display().to_string(), err.to_string()));
                continue;
            }
        };
        let stem = file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        for streamed in stream.by_ref() {
            let streamed = match streamed {
                Ok(streamed) => streamed,
                Err(err) => {
                    problems.push((file.display().to_string(), err.to_string()));
                    break;
                }
            };
            let run = &streamed.run;
            let place =
                crate::text::escape(&format!("{}#{}", file.display(), run.run_id)).into_owned();
            let RunOutcome::Ended(reason) = run.outcome() else {
                skipped.push(format!(
                    "{place}: incomplete recording, nothing to compare with"
                ));
                continue;
            };
            let model = match ReplayModel::from_run(run) {
                Ok(model) => model,
                Err(err) => {
                    problems.push((place, err.to_string()));
                    continue;
                }
            };
            let id = unique_id(&format!("{stem}.{}", run.run_id), &mut ids);
            tasks.push(SuiteTask {
                id,
                // Read again with the run when the task runs.
                prompt: String::new(),
                max_steps: model.max_steps().unwrap_or(DEFAULT_MAX_STEPS),
                model: TaskModel::Replay {
                    path: file.clone(),
                    run: RunSource::Located {
                        run_id: run.run_id.clone(),
                        spans: streamed.spans.into(),
                    },
                },
                expect: Expectations {
                    exit_reason: Some(reason),
                    ..Expectations::default()
                },
                finish_gate: None,
                limits: crate::agent::Limits::default(),
                model_name: None,
                agent: None,
            });
        }
    }
    if tasks.is_empty() && problems.is_empty() {
        problems.push(("--traces".to_owned(), "no replayable runs found".to_owned()));
    }
    if !problems.is_empty() {
        return Err(fail(problems));
    }
    Ok(Corpus {
        suite: Suite {
            name: "traces".to_owned(),
            capture,
            tasks: super::suite::SuiteTasks::held(tasks),
            tools: None,
            models: Default::default(),
        },
        skipped,
    })
}

/// The longest task id made from a run id; a task's id names its trace file, and file names are
/// limited (255 bytes on most file systems).
const MAX_ID_CHARS: usize = 100;

/// A valid task id from a file stem and run id: other characters become `_`, repeats get `-2`, ...
/// A long one is cut and ends with a hash of the whole, so it stays unique and a usable file name.
fn unique_id(raw: &str, seen: &mut HashSet<TaskId>) -> TaskId {
    let mut clean = TaskId::sanitize(raw);
    if clean.len() > MAX_ID_CHARS {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(raw.as_bytes());
        let hash: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
        clean.truncate(MAX_ID_CHARS - hash.len() - 1);
        clean = format!("{clean}-{hash}");
    }
    let mut n = 1;
    loop {
        let candidate = if n == 1 {
            clean.clone()
        } else {
            format!("{clean}-{n}")
        };
        if let Ok(id) = TaskId::parse(&candidate)
            && seen.insert(id.clone())
        {
            return id;
        }
        n += 1;
    }
}
