//! `eval --traces PATH...`: every recorded run in those files or folders becomes a replay task
//! whose expectation is the recorded exit reason, so a whole corpus reruns in one go.
//!
//! The corpus is streamed: a task holds only where its run's lines are ([`RunSource::Located`]),
//! and the runner reads the run again when the task runs, so memory grows by a few hundred bytes
//! per task, never by the recorded content.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use super::corpus_line::{self, CorpusLine, replay_check};
use super::suite::{
    DEFAULT_MAX_STEPS, Expectations, Suite, SuiteErrors, SuiteTask, SuiteTasks, TaskEntries,
    TaskId, TaskMaker, TaskModel,
};
use crate::replay::ReplayModel;
use crate::run::{ExitReason, RunOutcome};
use crate::trace::{
    Capture, LineSpan, ReadOptions, RecordedRun, RunStream, read_run_in, read_run_within,
};

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
        /// The trace file, when it is already open (runs of one file share one handle).
        file: Option<Arc<File>>,
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
            RunSource::Located {
                run_id,
                spans,
                file: Some(file),
            } => read_run_in(file, path, run_id, spans).map(Cow::Owned),
            RunSource::Located { run_id, spans, .. } => {
                read_run_within(path, run_id, spans).map(Cow::Owned)
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
/// evaluation ends, so its reading gets no larger a share than `show` and `replay`
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
    let mut skipped = Vec::new();
    let mut ids = HashSet::new();
    let mut entries = TaskEntries::default();
    let mut packed = PackedRuns::default();
    for (file_index, file) in files.iter().enumerate() {
        // Checked through the borrowed view (`corpus_line`), not parsed in full: the full reader
        // reads each run when its task runs.
        let opened = RunStream::<File, CorpusLine>::open_mapped(file, ReadOptions::default());
        let mut stream = match opened {
            // Task ids come from run ids, made unique here: the stream need not count them.
            Ok(stream) => stream.with_budget(CORPUS_OPEN_BYTES).without_occurrences(),
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
                || crate::text::escape(&format!("{}#{}", file.display(), run.run_id)).into_owned();
            let RunOutcome::Ended(reason) = corpus_line::outcome(&run.events) else {
                skipped.push(format!(
                    "{}: incomplete recording, nothing to compare with",
                    place()
                ));
                continue;
            };
            // Checked here, with the message a replay gives, but not kept: the run is read
            // again when its task runs.
            let max_steps = match replay_check(&run.run_id, &run.events) {
                Ok(max_steps) => max_steps,
                Err(err) => {
                    problems.push((place(), err.to_string()));
                    continue;
                }
            };
            if !problems.is_empty() {
                // The suite will not run: only the problems are still wanted.
                continue;
            }
            let id = unique_id(&format!("{stem}.{}", run.run_id), &mut ids);
            entries.push(id.as_str(), REPLAY_KIND, None);
            packed.push(
                file_index,
                max_steps.unwrap_or(DEFAULT_MAX_STEPS),
                reason,
                &run.run_id,
                &streamed.spans,
            );
        }
    }
    if entries.is_empty() && problems.is_empty() {
        problems.push(("--traces".to_owned(), "no replayable runs found".to_owned()));
    }
    if !problems.is_empty() {
        return Err(fail(problems));
    }
    drop(ids);
    packed.files = files;
    let read_files = packed.files.clone();
    Ok(Corpus {
        suite: Suite {
            name: "traces".to_owned(),
            capture,
            tasks: SuiteTasks::made(entries, Arc::new(packed), read_files),
            tools: None,
            models: Default::default(),
        },
        skipped,
    })
}

/// The model kind of every corpus task.
const REPLAY_KIND: &str = "replay";

/// What a corpus keeps of each replay task until it runs: its file, budget and recorded exit
/// reason, and its run id and line positions packed in one block of bytes (positions as
/// differences from the line before, a few bytes a line), so a corpus of many small runs costs
/// some tens of bytes a run rather than a task each.
#[derive(Debug, Default)]
struct PackedRuns {
    files: Vec<PathBuf>,
    runs: Vec<PackedRun>,
    bytes: Vec<u8>,
    /// The trace file read last, kept open: tasks mostly come in file order, so a corpus file is
    /// opened once rather than once per run.
    open: Mutex<Option<(u32, Arc<File>)>>,
}

#[derive(Debug)]
struct PackedRun {
    file: u32,
    max_steps: u32,
    exit_reason: ExitReason,
    /// Where its run id and line positions start in `bytes`.
    at: u64,
}

impl PackedRuns {
    fn push(
        &mut self,
        file: usize,
        max_steps: u32,
        exit_reason: ExitReason,
        run_id: &str,
        spans: &[LineSpan],
    ) {
        self.runs.push(PackedRun {
            file: u32::try_from(file).unwrap_or(u32::MAX),
            max_steps,
            exit_reason,
            at: self.bytes.len() as u64,
        });
        let out = &mut self.bytes;
        push_varint(out, run_id.len() as u64);
        out.extend_from_slice(run_id.as_bytes());
        push_varint(out, spans.len() as u64);
        let (mut line, mut end) = (0u64, 0u64);
        for span in spans {
            push_varint(out, zigzag(span.line.wrapping_sub(line)));
            push_varint(out, zigzag(span.offset.wrapping_sub(end)));
            push_varint(out, u64::from(span.len));
            line = span.line;
            end = span.offset.wrapping_add(u64::from(span.len));
        }
    }

    /// The run id and line positions of run `i`.
    fn run(&self, i: usize) -> Option<(&PackedRun, String, Vec<LineSpan>)> {
        let run = self.runs.get(i)?;
        let mut at = usize::try_from(run.at).ok()?;
        let bytes = &self.bytes;
        let len = usize::try_from(read_varint(bytes, &mut at)?).ok()?;
        let run_id = std::str::from_utf8(bytes.get(at..at + len)?)
            .ok()?
            .to_owned();
        at += len;
        let count = usize::try_from(read_varint(bytes, &mut at)?).ok()?;
        let mut spans = Vec::with_capacity(count);
        let (mut line, mut end) = (0u64, 0u64);
        for _ in 0..count {
            line = line.wrapping_add(unzigzag(read_varint(bytes, &mut at)?));
            let offset = end.wrapping_add(unzigzag(read_varint(bytes, &mut at)?));
            let len = u32::try_from(read_varint(bytes, &mut at)?).ok()?;
            spans.push(LineSpan { line, offset, len });
            end = offset.wrapping_add(u64::from(len));
        }
        Some((run, run_id, spans))
    }
}

impl PackedRuns {
    /// Trace file `index` (at `path`), open; `None` if it cannot be opened, so that the task
    /// opens it itself and fails as it would have (its row says why).
    fn open_file(&self, index: u32, path: &Path) -> Option<Arc<File>> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((at, file)) = open.as_ref()
            && *at == index
        {
            return Some(Arc::clone(file));
        }
        let file = Arc::new(File::open(path).ok()?);
        *open = Some((index, Arc::clone(&file)));
        Some(file)
    }
}

impl TaskMaker for PackedRuns {
    fn task(&self, i: usize, id: &str) -> Result<SuiteTask, String> {
        let (run, run_id, spans) = self
            .run(i)
            .ok_or_else(|| format!("no recorded run {i} in the corpus"))?;
        let path = self
            .files
            .get(run.file as usize)
            .ok_or_else(|| format!("no trace file for recorded run {i}"))?;
        let file = self.open_file(run.file, path);
        Ok(SuiteTask {
            id: TaskId::parse(id)?,
            // Read again with the run when the task runs.
            prompt: String::new(),
            max_steps: run.max_steps,
            model: TaskModel::Replay {
                path: path.clone(),
                run: RunSource::Located {
                    run_id,
                    spans: spans.into(),
                    file,
                },
            },
            expect: Expectations {
                exit_reason: Some(run.exit_reason),
                ..Expectations::default()
            },
            finish_gate: None,
            limits: crate::agent::Limits::default(),
            model_name: None,
            agent: None,
        })
    }
}

fn zigzag(delta: u64) -> u64 {
    let signed = delta as i64;
    ((signed << 1) ^ (signed >> 63)) as u64
}

fn unzigzag(value: u64) -> u64 {
    ((value >> 1) as i64 ^ -((value & 1) as i64)) as u64
}

fn push_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn read_varint(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *bytes.get(*at)?;
        *at += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_runs_give_back_each_run_id_and_line_positions_as_pushed() {
        let span = |line, offset, len| LineSpan { line, offset, len };
        let runs: Vec<(&str, Vec<LineSpan>)> = vec![
            ("a", vec![span(1, 0, 10), span(2, 11, 300), span(3, 312, 0)]),
            // Interleaved with others, far apart, and a position before the one it follows.
            (
                "bé-2",
                vec![span(7, 5_000_000_000, 4), span(900, 9, u32::MAX)],
            ),
            ("", Vec::new()),
            ("c", vec![span(u64::MAX, u64::MAX - 1, 1)]),
        ];
        let mut packed = PackedRuns::default();
        for (i, (id, spans)) in runs.iter().enumerate() {
            let reason = if i % 2 == 0 {
                ExitReason::Finished
            } else {
                ExitReason::MaxStepsExceeded
            };
            packed.push(i, 10 + i as u32, reason, id, spans);
        }
        for (i, (id, spans)) in runs.iter().enumerate() {
            let (run, run_id, read) = packed.run(i).unwrap();
            assert_eq!((run_id.as_str(), &read), (*id, spans));
            assert_eq!((run.file, run.max_steps), (i as u32, 10 + i as u32));
        }
        assert!(packed.run(runs.len()).is_none());
    }
}
