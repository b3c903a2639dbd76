//! `eval --traces PATH...`: every recorded run in those files or folders becomes a replay task
//! whose expectation is the recorded exit reason, so a whole corpus reruns in one go.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::suite::{
    DEFAULT_MAX_STEPS, Expectations, Suite, SuiteErrors, SuiteTask, TaskId, TaskModel,
};
use crate::model::ReplayModel;
use crate::trace::{Capture, ReadOptions, RunOutcome, read_trace};

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
        } else {
            files.push(path.clone());
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
            files.push(entry);
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
        let contents = match read_trace(file, ReadOptions::default()) {
            Ok(contents) => contents,
            Err(err) => {
                problems.push((file.display().to_string(), err.to_string()));
                continue;
            }
        };
        let stem = file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        for run in &contents.runs {
            let place = format!("{}#{}", file.display(), run.run_id);
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
                prompt: model.task().prompt.clone(),
                max_steps: model.max_steps().unwrap_or(DEFAULT_MAX_STEPS),
                model: TaskModel::Replay {
                    path: file.clone(),
                    run: Arc::new(run.clone()),
                },
                expect: Expectations {
                    exit_reason: Some(reason),
                    ..Expectations::default()
                },
                finish_gate: None,
                limits: crate::agent::Limits::default(),
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
            tasks,
        },
        skipped,
    })
}

/// A valid task id from a file stem and run id: other characters become `_`, repeats get `-2`, ...
fn unique_id(raw: &str, seen: &mut HashSet<TaskId>) -> TaskId {
    let clean = TaskId::sanitize(raw);
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
