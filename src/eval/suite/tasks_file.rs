//! Files of tasks read as the tasks run: a tasks file (`tasks.jsonl`, one task per line, each as
//! a suite's `tasks` array holds it) or a dataset (JSONL or CSV rows that fill a task template,
//! `dataset.rs`). Such a file is read twice, never held: once when the suite loads, to check every
//! record and note where each starts, and again record by record as the runner reaches each task.
//! Memory grows with the tasks in flight and a few words per task, not with the file.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::dataset::Dataset;
use super::read::read_task;
use super::resolve::{Context, Problem};
use super::spec::DatasetFormat;
use super::tasks::TaskEntry;
use crate::eval::suite::{SuiteTask, TaskModel};

/// The most problems a file's check lists: past them, the file is plainly not what it should be.
const MAX_PROBLEMS: usize = 100;

/// Records checked together, on one thread per core.
const BATCH_RECORDS: usize = 4096;

/// What the records of a file are.
#[derive(Clone, Debug)]
enum Kind {
    /// Tasks, one per line.
    Tasks,
    /// Rows of a dataset; a CSV file's header row names its fields.
    Dataset {
        dataset: Arc<Dataset>,
        header: Arc<[String]>,
    },
}

/// Where one task's record is, and which row it is (from 1, blank lines not counted).
#[derive(Clone, Copy, Debug)]
struct Span {
    offset: u64,
    len: u32,
    line: u32,
    row: u64,
}

/// A record read for checking.
struct Record {
    span: Span,
    body: Body,
}

/// A record's content as read.
enum Body {
    /// A line, if it is UTF-8.
    Line(Option<String>),
    /// A CSV record, or what is wrong with it.
    Csv(Result<csv::StringRecord, String>),
}

/// What a record holds.
enum Checked {
    Blank,
    Task(Box<SuiteTask>),
    Problems(Vec<Problem>),
}

impl Kind {
    /// The task of one record.
    fn task(&self, body: &Body, row: u64, context: &Context) -> Checked {
        let result = match (self, body) {
            (_, Body::Line(None)) => Err(vec![("$".to_owned(), "invalid UTF-8".to_owned())]),
            (_, Body::Line(Some(text))) if text.trim().is_empty() => return Checked::Blank,
            (Kind::Tasks, Body::Line(Some(text))) => {
                read_task(text.trim_end_matches(['\n', '\r']), "$", context)
            }
            (Kind::Dataset { dataset, .. }, Body::Line(Some(text))) => {
                dataset.json_task(text.trim_end_matches(['\n', '\r']), row, context)
            }
            (_, Body::Csv(Err(message))) => Err(vec![("$".to_owned(), message.clone())]),
            (Kind::Dataset { dataset, header }, Body::Csv(Ok(record))) => {
                dataset.csv_task(header, record, row, context)
            }
            (Kind::Tasks, Body::Csv(_)) => Err(vec![(
                "$".to_owned(),
                "a tasks file is read by lines".to_owned(),
            )]),
        };
        match result {
            Ok(task) => Checked::Task(Box::new(task)),
            Err(found) => Checked::Problems(found),
        }
    }

    fn is_csv(&self) -> bool {
        matches!(self, Kind::Dataset { dataset, .. } if dataset.format == DatasetFormat::Csv)
    }
}

/// Checks a batch of records, in order, split among the cores.
fn check_batch(batch: &[Record], kind: &Kind, context: &Context) -> Vec<Checked> {
    let check = |record: &Record| -> Checked {
        if record.span.len == u32::MAX {
            return Checked::Problems(vec![(
                "$".to_owned(),
                "the record is 4 GiB long or longer".to_owned(),
            )]);
        }
        kind.task(&record.body, record.span.row, context)
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

/// Reads records in batches: lines, or CSV records under their header.
enum Records<'f> {
    Lines {
        reader: BufReader<&'f File>,
        offset: u64,
        line: u32,
    },
    Csv(Box<csv::Reader<BufReader<&'f File>>>),
}

impl Records<'_> {
    /// The next batch (empty at the end of the file); `row` counts the records so far.
    fn batch(&mut self, row: &mut u64) -> Result<Vec<Record>, String> {
        let mut batch = Vec::with_capacity(BATCH_RECORDS);
        while batch.len() < BATCH_RECORDS {
            let record = match self {
                Records::Lines {
                    reader,
                    offset,
                    line,
                } => {
                    let mut bytes = Vec::new();
                    let read = reader
                        .read_until(b'\n', &mut bytes)
                        .map_err(|err| format!("failed to read the file: {err}"))?;
                    if read == 0 {
                        break;
                    }
                    *line += 1;
                    let blank = bytes.iter().all(u8::is_ascii_whitespace);
                    if !blank {
                        *row += 1;
                    }
                    let record = Record {
                        span: Span {
                            offset: *offset,
                            len: u32::try_from(read).unwrap_or(u32::MAX),
                            line: *line,
                            row: *row,
                        },
                        body: Body::Line(String::from_utf8(bytes).ok()),
                    };
                    *offset += read as u64;
                    record
                }
                Records::Csv(reader) => {
                    let start = reader.position().clone();
                    let mut fields = csv::StringRecord::new();
                    let body = match reader.read_record(&mut fields) {
                        Ok(false) => break,
                        Ok(true) => Body::Csv(Ok(fields)),
                        Err(err) if matches!(err.kind(), csv::ErrorKind::Io(_)) => {
                            return Err(format!("failed to read the file: {err}"));
                        }
                        Err(err) => Body::Csv(Err(csv_problem(&err))),
                    };
                    *row += 1;
                    let end = reader.position().byte();
                    Record {
                        span: Span {
                            offset: start.byte(),
                            len: u32::try_from(end - start.byte()).unwrap_or(u32::MAX),
                            line: u32::try_from(start.line()).unwrap_or(u32::MAX),
                            row: *row,
                        },
                        body,
                    }
                }
            };
            batch.push(record);
        }
        Ok(batch)
    }
}

/// A CSV reading error as a row's problem.
fn csv_problem(err: &csv::Error) -> String {
    match err.kind() {
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => format!("the row has {len} fields, the header {expected_len}"),
        csv::ErrorKind::Utf8 { .. } => "invalid UTF-8".to_owned(),
        _ => err.to_string(),
    }
}

/// A checked file of tasks, open for reading its tasks as they run; copies share the open file.
#[derive(Clone, Debug)]
pub struct TasksFile {
    path: PathBuf,
    file: Arc<File>,
    context: Context,
    kind: Kind,
    spans: Vec<Span>,
}

/// What the check of a file of tasks found besides its tasks' places.
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
        Self::index_kind(path, context, None)
    }

    /// Checks every row of the dataset file at `path`: each must make a task.
    pub fn index_dataset(
        path: &Path,
        context: Context,
        dataset: Dataset,
    ) -> Result<Indexed, Vec<Problem>> {
        Self::index_kind(path, context, Some(dataset))
    }

    fn index_kind(
        path: &Path,
        context: Context,
        dataset: Option<Dataset>,
    ) -> Result<Indexed, Vec<Problem>> {
        let fail = |message: String| vec![("$".to_owned(), message)];
        let file =
            File::open(path).map_err(|err| fail(format!("failed to read the file: {err}")))?;
        let meta = file
            .metadata()
            .map_err(|err| fail(format!("failed to read the file: {err}")))?;
        if !meta.is_file() {
            return Err(fail("not a regular file".to_owned()));
        }
        let buffered = BufReader::with_capacity(1 << 16, &file);
        let (kind, mut records) = match dataset {
            None => (Kind::Tasks, lines(buffered)),
            Some(dataset) if dataset.format == DatasetFormat::Csv => {
                let mut reader = csv::ReaderBuilder::new().from_reader(buffered);
                let header = csv_header(&mut reader).map_err(fail)?;
                let kind = Kind::Dataset {
                    dataset: Arc::new(dataset),
                    header: header.into(),
                };
                (kind, Records::Csv(Box::new(reader)))
            }
            Some(dataset) => {
                let kind = Kind::Dataset {
                    dataset: Arc::new(dataset),
                    header: Arc::new([]),
                };
                (kind, lines(buffered))
            }
        };
        let mut problems = Vec::new();
        let mut spans = Vec::new();
        let mut entries = Vec::new();
        let mut key_vars: Vec<String> = Vec::new();
        let mut read_files = Vec::new();
        let mut row = 0;
        while problems.len() < MAX_PROBLEMS {
            let batch = records.batch(&mut row).map_err(fail)?;
            if batch.is_empty() {
                break;
            }
            for (record, checked) in batch.iter().zip(check_batch(&batch, &kind, &context)) {
                let at = |path: &str| format!("line {}: {path}", record.span.line);
                match checked {
                    Checked::Blank => {}
                    Checked::Task(task) => {
                        note(&task, &mut key_vars, &mut read_files);
                        entries.push(TaskEntry::of(&task));
                        spans.push(record.span);
                    }
                    Checked::Problems(found) => problems.extend(
                        found
                            .into_iter()
                            .map(|(path, message)| (at(&path), message)),
                    ),
                }
            }
        }
        drop(records);
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
        Ok(Indexed {
            file: TasksFile {
                path: path.to_path_buf(),
                file: Arc::new(file),
                context,
                kind,
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

    /// Task `i` (file order), read again from its record.
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
        let body = if self.kind.is_csv() {
            let mut reader = csv::ReaderBuilder::new()
                .has_headers(false)
                .from_reader(bytes.as_slice());
            let mut fields = csv::StringRecord::new();
            match reader.read_record(&mut fields) {
                Ok(true) => Body::Csv(Ok(fields)),
                Ok(false) => return Err(changed("no record".to_owned())),
                Err(err) => Body::Csv(Err(csv_problem(&err))),
            }
        } else {
            Body::Line(String::from_utf8(bytes).ok())
        };
        match self.kind.task(&body, span.row, &self.context) {
            Checked::Task(task) => Ok(*task),
            Checked::Blank => Err(changed("the line is blank".to_owned())),
            Checked::Problems(problems) => {
                let listed: Vec<String> = problems
                    .into_iter()
                    .map(|(path, message)| format!("{path}: {message}"))
                    .collect();
                Err(changed(listed.join("; ")))
            }
        }
    }
}

/// Records that are lines.
fn lines(reader: BufReader<&File>) -> Records<'_> {
    Records::Lines {
        reader,
        offset: 0,
        line: 0,
    }
}

/// A CSV file's header row: the field names, each given once.
fn csv_header<R: Read>(reader: &mut csv::Reader<R>) -> Result<Vec<String>, String> {
    let header = reader
        .headers()
        .map_err(|err| format!("line 1: {}", csv_problem(&err)))?;
    let names: Vec<String> = header
        .iter()
        .enumerate()
        // A byte order mark before the first name is not part of it.
        .map(|(i, name)| match i {
            0 => name.trim_start_matches('\u{feff}').to_owned(),
            _ => name.to_owned(),
        })
        .collect();
    if names.is_empty() || names.iter().all(String::is_empty) {
        return Err("line 1: the header row names no field".to_owned());
    }
    for (i, name) in names.iter().enumerate() {
        if names[..i].contains(name) {
            return Err(format!("line 1: the header names the field {name:?} twice"));
        }
    }
    Ok(names)
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
