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

/// Lines checked together, on one thread per core.
const BATCH_LINES: usize = 4096;

/// A line read for checking: its place, and its text if it is UTF-8.
struct Line {
    span: Span,
    text: Option<String>,
}

/// What a line holds.
enum Checked {
    Blank,
    Task(Box<SuiteTask>),
    Problems(Vec<Problem>),
}

/// Checks a batch of lines, in order, split among the cores.
fn check_batch(batch: &[Line], context: &Context) -> Vec<Checked> {
    let check = |line: &Line| -> Checked {
        let Some(text) = &line.text else {
            return Checked::Problems(vec![("$".to_owned(), "invalid UTF-8".to_owned())]);
        };
        if text.trim().is_empty() {
            return Checked::Blank;
        }
        if line.span.len == u32::MAX {
            return Checked::Problems(vec![(
                "$".to_owned(),
                "the line is 4 GiB long or longer".to_owned(),
            )]);
        }
        match read_task(text.trim_end_matches(['\n', '\r']), "$", context) {
            Ok(task) => Checked::Task(Box::new(task)),
            Err(found) => Checked::Problems(found),
        }
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = cores.min(batch.len() / 256).max(1);
    if threads == 1 {
        return batch.iter().map(check).collect();
    }
    let per_thread = batch.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let parts: Vec<_> = batch
            .chunks(per_thread)
            .map(|part| scope.spawn(move || part.iter().map(check).collect::<Vec<_>>()))
            .collect();
        parts
            .into_iter()
            .flat_map(|part| part.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    })
}

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
        let (mut offset, mut number) = (0u64, 0u32);
        let mut batch: Vec<Line> = Vec::with_capacity(BATCH_LINES);
        let mut at_end = false;
        while !at_end && problems.len() < MAX_PROBLEMS {
            batch.clear();
            while batch.len() < BATCH_LINES {
                let mut bytes = Vec::new();
                let read = reader
                    .read_until(b'\n', &mut bytes)
                    .map_err(|err| fail(format!("failed to read the file: {err}")))?;
                if read == 0 {
                    at_end = true;
                    break;
                }
                number += 1;
                let line = Line {
                    span: Span {
                        offset,
                        len: u32::try_from(read).unwrap_or(u32::MAX),
                        line: number,
                    },
                    text: String::from_utf8(bytes).ok(),
                };
                offset += read as u64;
                batch.push(line);
            }
            for (line, checked) in batch.iter().zip(check_batch(&batch, &context)) {
                let at = |path: &str| format!("line {}: {path}", line.span.line);
                match checked {
                    Checked::Blank => {}
                    Checked::Task(task) => {
                        note(&task, &mut key_vars, &mut read_files);
                        entries.push(TaskEntry::of(&task));
                        spans.push(line.span);
                    }
                    Checked::Problems(found) => problems.extend(
                        found
                            .into_iter()
                            .map(|(path, message)| (at(&path), message)),
                    ),
                }
            }
        }
        if problems.len() >= MAX_PROBLEMS {
            problems.truncate(MAX_PROBLEMS);
            problems.push((
                "$".to_owned(),
                format!("stopped after {MAX_PROBLEMS} problems"),
            ));
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
