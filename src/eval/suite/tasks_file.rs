//! Files of tasks read as the tasks run: a tasks file (`tasks.jsonl`, one task per line, each as
//! a suite's `tasks` array holds it) or a dataset (JSONL or CSV rows that fill a task template,
//! `dataset.rs`). Such a file is read twice, never held: once when the suite loads, to check every
//! record and note where every 64th starts, and again record by record as the runner reaches each
//! task (mostly in order: a cursor carries on from the last one read). Memory grows with the
//! tasks in flight and a few bytes per task beside its id, not with the file.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use super::dataset::Dataset;
use super::id_hashes::IdHashes;
use super::logged_entries::{EntryLog, LoggedEntries};
use super::read::read_task;
use super::resolve::{Context, Problem};
use super::spec::DatasetFormat;
use super::task::{SuiteTask, TaskModel};

/// The most problems a file's check lists: past them, the file is plainly not what it should be.
const MAX_PROBLEMS: usize = 100;

/// Records checked together, on one thread per core.
const BATCH_RECORDS: usize = 4096;

/// Every this many tasks, where the next one's record starts is kept: reading a task skips at
/// most this many records less one from the nearest.
const MARK_STRIDE: usize = 64;

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

/// Where one task's record is, and which row it is (from 1, blank lines not counted). For a CSV
/// record, `offset` and `line` are the CSV reader's position before it read the record, which can
/// sit on line endings the read then skips (the `\n` of a `\r\n`, blank lines): messages take
/// the record's own line from [`first_line`].
#[derive(Clone, Copy, Debug)]
struct Span {
    offset: u64,
    len: u32,
    line: u32,
    row: u64,
}

/// Where reading starts: the byte, and the lines and rows before it.
#[derive(Clone, Copy, Debug)]
struct Mark {
    offset: u64,
    lines: u32,
    rows: u64,
}

impl Mark {
    /// Where the record of `span` starts.
    fn before(span: &Span) -> Mark {
        Mark {
            offset: span.offset,
            lines: span.line.saturating_sub(1),
            rows: span.row.saturating_sub(1),
        }
    }
}

/// A file read from a byte on, without moving the file's shared position.
struct ReadAt<'f> {
    file: &'f File,
    offset: u64,
}

impl Read for ReadAt<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.file.read_at(buf, self.offset)?;
        self.offset += read as u64;
        Ok(read)
    }
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
    /// Where every [`MARK_STRIDE`]th task's record starts.
    marks: Vec<Mark>,
    /// The task after the last one read, and where its record starts.
    cursor: Arc<Mutex<Option<(usize, Mark)>>>,
}

/// What the check of a file of tasks found besides its tasks' places.
pub struct Indexed {
    /// The file, ready to read tasks from.
    pub file: TasksFile,
    /// Each task's id and model kind, in file order, read back from where the check wrote them.
    pub entries: LoggedEntries,
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
        // Asked before opening: opening a named pipe would wait for a writer forever.
        let meta = std::fs::metadata(path)
            .map_err(|err| fail(format!("failed to read the file: {err}")))?;
        if !meta.is_file() {
            return Err(fail("not a regular file".to_owned()));
        }
        let file =
            File::open(path).map_err(|err| fail(format!("failed to read the file: {err}")))?;
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
        let mut marks = Vec::new();
        let mut entries = EntryLog::default();
        // Ids are checked for repeats by their hashes (4 bytes a task, set aside a megabyte at
        // a time: `id_hashes.rs`); a hash met twice (a repeated id, or now and then two ids
        // alike in 32 bits) is looked at again by its ids.
        let mut hashes = IdHashes::default();
        let mut key_vars: Vec<String> = Vec::new();
        let mut read_files = Vec::new();
        let mut row = 0;
        while problems.len() < MAX_PROBLEMS {
            let batch = records.batch(&mut row).map_err(fail)?;
            if batch.is_empty() {
                break;
            }
            for (record, checked) in batch.iter().zip(check_batch(&batch, &kind, &context)) {
                let at =
                    |path: &str| format!("line {}: {path}", line_of(&file, &kind, &record.span));
                match checked {
                    Checked::Blank => {}
                    Checked::Task(task) => {
                        note(&task, &mut key_vars, &mut read_files);
                        if entries.len().is_multiple_of(MARK_STRIDE) {
                            marks.push(Mark::before(&record.span));
                        }
                        (hashes.push_id(task.id.as_str()))
                            .map_err(|err| fail(aside_failed(&err)))?;
                        let name = task.model_name.as_ref().map(|m| m.given.as_str());
                        entries
                            .push(task.id.as_str(), task.model.kind(), name)
                            .map_err(|err| fail(aside_failed(&err)))?;
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
        let file = TasksFile {
            path: path.to_path_buf(),
            file: Arc::new(file),
            context,
            kind,
            marks,
            cursor: Arc::new(Mutex::new(None)),
        };
        let entries = entries.finish().map_err(|err| fail(aside_failed(&err)))?;
        problems.extend(
            file.repeated_ids(&entries, hashes)
                .map_err(|err| fail(aside_failed(&err)))?,
        );
        if !problems.is_empty() {
            return Err(problems);
        }
        Ok(Indexed {
            file,
            entries,
            key_vars,
            read_files,
        })
    }

    /// A problem for each task whose id an earlier task has (`hashes`: each task's id hashed).
    fn repeated_ids(&self, entries: &LoggedEntries, hashes: IdHashes) -> io::Result<Vec<Problem>> {
        let repeats = hashes.repeats(entries)?;
        if repeats.is_empty() {
            return Ok(Vec::new());
        }
        let lines = self.task_lines(repeats.iter().map(|(i, _)| *i).collect());
        Ok(repeats
            .into_iter()
            .map(|(i, id)| {
                let line = lines.get(&i).copied().unwrap_or(0);
                (format!("line {line}: $.id"), format!("duplicate id {id:?}"))
            })
            .collect())
    }

    /// The lines of the tasks at `wanted` (task positions), found by checking the file again:
    /// only for messages, when a file's lines are not all tasks.
    fn task_lines(&self, wanted: HashSet<usize>) -> HashMap<usize, u32> {
        let mut lines = HashMap::new();
        let Ok(mut records) = open_records(&self.file, &self.kind) else {
            return lines;
        };
        let (mut row, mut task) = (0, 0);
        while lines.len() < wanted.len() {
            let Ok(batch) = records.batch(&mut row) else {
                break;
            };
            if batch.is_empty() {
                break;
            }
            let checked = check_batch(&batch, &self.kind, &self.context);
            for (record, checked) in batch.iter().zip(checked) {
                if let Checked::Task(_) = checked {
                    if wanted.contains(&task) {
                        lines.insert(task, line_of(&self.file, &self.kind, &record.span));
                    }
                    task += 1;
                }
            }
        }
        lines
    }

    /// The file as the user named it.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Task `i` (file order), read again from its record.
    pub fn task(&self, i: usize) -> Result<SuiteTask, String> {
        let (span, body) = self.record(i)?;
        let changed = |why: String| {
            format!(
                "line {} of `{}` changed since eval checked it: {why}",
                line_of(&self.file, &self.kind, &span),
                self.path.display()
            )
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

    /// Task `i`'s record: from the cursor when it is fewer than [`MARK_STRIDE`] records on,
    /// else from the nearest mark.
    fn record(&self, i: usize) -> Result<(Span, Body), String> {
        let changed = |why: &str| {
            format!(
                "`{}` changed since eval checked it: {why}",
                self.path.display()
            )
        };
        let failed = |err: &dyn std::fmt::Display| changed(&err.to_string());
        let mut cursor = self.cursor.lock().unwrap_or_else(PoisonError::into_inner);
        let (mut index, at) = match *cursor {
            Some((index, at)) if index <= i && i - index < MARK_STRIDE => (index, at),
            _ => {
                let k = i / MARK_STRIDE;
                let mark = self
                    .marks
                    .get(k)
                    .ok_or_else(|| format!("no task {i} in `{}`", self.path.display()))?;
                (k * MARK_STRIDE, *mark)
            }
        };
        let source = ReadAt {
            file: &self.file,
            offset: at.offset,
        };
        if self.kind.is_csv() {
            let mut reader = csv::ReaderBuilder::new()
                .has_headers(false)
                .from_reader(source);
            let mut fields = csv::StringRecord::new();
            let mut rows = at.rows;
            loop {
                let start = reader.position().clone();
                let read = reader.read_record(&mut fields);
                match &read {
                    Ok(false) => return Err(changed("it ends early")),
                    Err(err) if matches!(err.kind(), csv::ErrorKind::Io(_)) => {
                        return Err(failed(err));
                    }
                    _ => {}
                }
                rows += 1;
                if index < i {
                    index += 1;
                    continue;
                }
                let body = match read {
                    Ok(_) => Ok(std::mem::take(&mut fields)),
                    Err(err) => Err(csv_problem(&err)),
                };
                let next = reader.position();
                let line = |at_line: u64| at.lines + u32::try_from(at_line).unwrap_or(u32::MAX);
                let span = Span {
                    offset: at.offset + start.byte(),
                    len: u32::try_from(next.byte() - start.byte()).unwrap_or(u32::MAX),
                    line: line(start.line()),
                    row: rows,
                };
                *cursor = Some((
                    i + 1,
                    Mark {
                        offset: at.offset + next.byte(),
                        lines: line(next.line()).saturating_sub(1),
                        rows,
                    },
                ));
                return Ok((span, Body::Csv(body)));
            }
        }
        let mut reader = BufReader::with_capacity(1 << 13, source);
        let (mut offset, mut lines, mut rows) = (at.offset, at.lines, at.rows);
        let mut bytes = Vec::new();
        loop {
            bytes.clear();
            let read = reader
                .read_until(b'\n', &mut bytes)
                .map_err(|err| failed(&err))?;
            if read == 0 {
                return Err(changed("it ends early"));
            }
            let start = offset;
            offset += read as u64;
            lines += 1;
            if bytes.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            rows += 1;
            if index < i {
                index += 1;
                continue;
            }
            *cursor = Some((
                i + 1,
                Mark {
                    offset,
                    lines,
                    rows,
                },
            ));
            let span = Span {
                offset: start,
                len: u32::try_from(read).unwrap_or(u32::MAX),
                line: lines,
                row: rows,
            };
            return Ok((span, Body::Line(String::from_utf8(bytes).ok())));
        }
    }
}

/// The line a record starts on, as messages name it.
fn line_of(file: &File, kind: &Kind, span: &Span) -> u32 {
    if kind.is_csv() {
        first_line(file, span.offset, span.line)
    } else {
        span.line
    }
}

/// The line of the first byte at or after `offset` (on line `line`) that is not a line ending:
/// where a CSV record that the reader started reading at `offset` really begins. Read only for
/// messages, so records are not slowed by it.
fn first_line(file: &File, mut offset: u64, mut line: u32) -> u32 {
    let mut buf = [0u8; 512];
    loop {
        let read = match file.read_at(&mut buf, offset) {
            Ok(0) | Err(_) => return line,
            Ok(read) => read,
        };
        for &byte in &buf[..read] {
            match byte {
                b'\n' => line = line.saturating_add(1),
                b'\r' => {}
                _ => return line,
            }
        }
        offset += read as u64;
    }
}

/// Why the check could not write its tasks' ids aside.
fn aside_failed(err: &io::Error) -> String {
    format!(
        "failed to write the task ids aside in `{}`: {err}",
        std::env::temp_dir().display()
    )
}

/// The records of `file` from its start (past a CSV file's header row). It moves the file's
/// position: only while no task is read from it.
fn open_records<'f>(mut file: &'f File, kind: &Kind) -> Result<Records<'f>, String> {
    file.seek(io::SeekFrom::Start(0))
        .map_err(|err| format!("failed to read the file: {err}"))?;
    let buffered = BufReader::with_capacity(1 << 16, file);
    if !kind.is_csv() {
        return Ok(lines(buffered));
    }
    let mut reader = csv::ReaderBuilder::new().from_reader(buffered);
    csv_header(&mut reader)?;
    Ok(Records::Csv(Box::new(reader)))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::suite::spec::DefaultsSpec;

    fn task_line(id: &str) -> String {
        format!(
            r#"{{"id": "{id}", "prompt": "p", "model": {{"actions": [{{"type": "finish", "answer": "a"}}]}}}}"#
        )
    }

    /// Reads every task in `order` and says each one's id and line.
    fn read_in(file: &TasksFile, order: &[usize]) -> Vec<(usize, String, u32)> {
        order
            .iter()
            .map(|&i| {
                let (span, _) = file.record(i).unwrap();
                let line = line_of(&file.file, &file.kind, &span);
                (i, file.task(i).unwrap().id.to_string(), line)
            })
            .collect()
    }

    #[test]
    fn tasks_read_in_any_order_are_the_ones_checked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tasks.jsonl");
        // Blank lines here and there: they are lines, not tasks.
        let mut text = String::new();
        let mut lines = Vec::new();
        let mut line = 0;
        for i in 0..300 {
            if i % 7 == 0 {
                text.push_str("\n  \n");
                line += 2;
            }
            text.push_str(&task_line(&format!("t{i}")));
            text.push('\n');
            line += 1;
            lines.push(line);
        }
        std::fs::write(&path, text).unwrap();
        let indexed = TasksFile::index(&path, Context::new(dir.path(), DefaultsSpec::default()))
            .unwrap_or_else(|p| panic!("{p:?}"));
        assert_eq!(indexed.entries.len(), 300);
        let file = indexed.file;
        let forward: Vec<usize> = (0..300).collect();
        let mut shuffled = forward.clone();
        let mut rng = crate::stats::split_mix::SplitMix64::new(7);
        for i in (1..shuffled.len()).rev() {
            shuffled.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
        }
        for order in [forward, shuffled, (0..300).rev().collect()] {
            for (i, id, line) in read_in(&file, &order) {
                assert_eq!(id, format!("t{i}"));
                assert_eq!(line, lines[i], "task {i}");
            }
        }
    }

    #[test]
    fn csv_rows_with_line_breaks_are_read_from_any_mark() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rows.csv");
        let mut text = String::from("id,question\r\n");
        for i in 0..200 {
            text.push_str(&format!("q{i},\"two\nlines, {i}\"\r\n"));
        }
        std::fs::write(&path, text).unwrap();
        let spec: super::super::spec::DatasetSpec = serde_json::from_value(serde_json::json!({
            "path": "rows.csv", "id": "{id}", "prompt": "{question}",
            "model": {"actions": [{"type": "finish", "answer": "a"}]}
        }))
        .unwrap();
        let context = Context::new(dir.path(), DefaultsSpec::default());
        let dataset = Dataset::new(spec, &path);
        let indexed =
            TasksFile::index_dataset(&path, context, dataset).unwrap_or_else(|p| panic!("{p:?}"));
        let file = indexed.file;
        let order = [150, 3, 4, 199, 0, 64, 63, 65];
        // The lines the check itself gives, reading the whole file from its start.
        let checked = file.task_lines(order.iter().copied().collect());
        for (i, id, line) in read_in(&file, &order) {
            assert_eq!(id, format!("q{i}"));
            assert_eq!(line, checked[&i], "task {i}");
            // Each row takes two lines after the header's: the `\n` left of a `\r\n` ending
            // is not the row's line.
            assert_eq!(line as usize, 2 + 2 * i, "task {i}");
            let task = file.task(i).unwrap();
            assert_eq!(task.prompt, format!("two\nlines, {i}"));
        }
    }

    #[test]
    fn an_id_given_twice_is_named_at_its_second_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tasks.jsonl");
        let ids = ["a", "b", "c", "b", "d", "a"];
        let text: String = ids.iter().map(|id| task_line(id) + "\n").collect();
        std::fs::write(&path, text).unwrap();
        let Err(problems) =
            TasksFile::index(&path, Context::new(dir.path(), DefaultsSpec::default()))
        else {
            panic!("repeated ids were accepted");
        };
        assert_eq!(
            problems,
            [
                ("line 4: $.id".to_owned(), "duplicate id \"b\"".to_owned()),
                ("line 6: $.id".to_owned(), "duplicate id \"a\"".to_owned()),
            ]
        );
    }
}
