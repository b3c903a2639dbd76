//! A tasks file (`tasks.jsonl`): one task per line, each as a suite's `tasks` array holds it. It
//! is read twice, never held: once when the suite loads, to check every line and note where each
//! task starts, and again line by line as the runner reaches each task. Memory grows with the
//! tasks in flight and a few words per task, not with the file.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::read::read_task;
use super::resolve::{Context, Problem};
use super::tasks::TaskEntry;
use crate::eval::suite::{SuiteTask, TaskModel};

/// The most problems a tasks file's check lists: past them, the file is plainly not a tasks file.
const MAX_PROBLEMS: usize = 100;

/// Where one task's line is.
#[derive(Clone, Copy, Debug)]
struct Span {
    offset: u64,
    len: u32,
    line: u32,
}

/// A checked tasks file, open for reading its tasks as they run; copies share the open file.
#[derive(Clone, Debug)]
pub struct TasksFile {
    path: PathBuf,
    file: Arc<File>,
    context: Context,
    spans: Vec<Span>,
}

/// What the check of a tasks file found besides its tasks' places.
pub struct Indexed {
    /// The file, ready to read tasks from.
    pub file: TasksFile,
    /// Each task's id and model kind, in file order.
    pub entries: Vec<TaskEntry>,
    /// Every variable a live model reads its key from.
    pub key_vars: Vec<String>,
    /// Every recording a replay task reads.
    pub read_files: Vec<PathBuf>,
}

impl TasksFile {
    /// Checks every line of the tasks file at `path` (as the user named it, for messages) against
    /// `context`; `Err` holds the problems, each `line N: $.path`.
    pub fn index(path: &Path, context: Context) -> Result<Indexed, Vec<Problem>> {
        let fail = |message: String| vec![("$".to_owned(), message)];
        let file =
            File::open(path).map_err(|err| fail(format!("failed to read the file: {err}")))?;
        let meta = file
            .metadata()
            .map_err(|err| fail(format!("failed to read the file: {err}")))?;
        if !meta.is_file() {
            return Err(fail("not a regular file".to_owned()));
        }
        let mut reader = BufReader::with_capacity(1 << 16, &file);
        let mut problems = Vec::new();
        let mut spans = Vec::new();
        let mut entries = Vec::new();
        let mut key_vars: Vec<String> = Vec::new();
        let mut read_files = Vec::new();
        let mut line = Vec::new();
        let (mut offset, mut number) = (0u64, 0u32);
        loop {
            line.clear();
            let read = reader
                .read_until(b'\n', &mut line)
                .map_err(|err| fail(format!("failed to read the file: {err}")))?;
            if read == 0 {
                break;
            }
            number += 1;
            let start = offset;
            offset += read as u64;
            let at = |path: &str| format!("line {number}: {path}");
            let Ok(text) = std::str::from_utf8(&line) else {
                problems.push((at("$"), "invalid UTF-8".to_owned()));
                continue;
            };
            if text.trim().is_empty() {
                continue;
            }
            let Ok(len) = u32::try_from(read) else {
                problems.push((at("$"), "the line is longer than 4 GiB".to_owned()));
                continue;
            };
            match read_task(text.trim_end_matches(['\n', '\r']), "$", &context) {
                Ok(task) => {
                    note(&task, &mut key_vars, &mut read_files);
                    entries.push(TaskEntry::of(&task));
                    spans.push(Span {
                        offset: start,
                        len,
                        line: number,
                    });
                }
                Err(found) => {
                    problems.extend(
                        found
                            .into_iter()
                            .map(|(path, message)| (at(&path), message)),
                    );
                }
            }
            if problems.len() >= MAX_PROBLEMS {
                problems.truncate(MAX_PROBLEMS);
                problems.push((
                    format!("line {number}"),
                    format!("stopped after {MAX_PROBLEMS} problems"),
                ));
                break;
            }
        }
        if entries.is_empty() && problems.is_empty() {
            problems.push(("$".to_owned(), "the file holds no task".to_owned()));
        }
        let mut seen = std::collections::HashSet::with_capacity(entries.len());
        for (entry, span) in entries.iter().zip(&spans) {
            if !seen.insert(entry.id.as_str()) {
                problems.push((
                    format!("line {}: $.id", span.line),
                    format!("duplicate id {:?}", entry.id.as_str()),
                ));
            }
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        drop(reader);
        Ok(Indexed {
            file: TasksFile {
                path: path.to_path_buf(),
                file: Arc::new(file),
                context,
                spans,
            },
            entries,
            key_vars,
            read_files,
        })
    }

    /// The file as the user named it.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Task `i` (file order), read again from its line.
    pub fn task(&self, i: usize) -> Result<SuiteTask, String> {
        let span = self
            .spans
            .get(i)
            .ok_or_else(|| format!("no task {i} in `{}`", self.path.display()))?;
        let changed = |why: String| {
            format!(
                "line {} of `{}` changed since eval checked it: {why}",
                span.line,
                self.path.display()
            )
        };
        let mut bytes = vec![0; span.len as usize];
        self.file
            .read_exact_at(&mut bytes, span.offset)
            .map_err(|err| changed(err.to_string()))?;
        let text = String::from_utf8(bytes).map_err(|_| changed("invalid UTF-8".to_owned()))?;
        let text = text.trim_end_matches(['\n', '\r']);
        read_task(text, "$", &self.context).map_err(|problems| {
            let listed: Vec<String> = problems
                .into_iter()
                .map(|(path, message)| format!("{path}: {message}"))
                .collect();
            changed(listed.join("; "))
        })
    }
}

/// Notes what a task needs beyond itself: its key variable, its recording.
pub fn note(task: &SuiteTask, key_vars: &mut Vec<String>, read_files: &mut Vec<PathBuf>) {
    match &task.model {
        TaskModel::Chat {
            api_key_env: Some(var),
            ..
        } if !key_vars.contains(var) => key_vars.push(var.clone()),
        TaskModel::Replay { path, .. } => read_files.push(path.clone()),
        _ => {}
    }
}
