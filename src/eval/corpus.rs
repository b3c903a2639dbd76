//! `eval --traces PATH...`: every recorded run in those files or folders becomes a replay task
//! whose expectation is the recorded exit reason, so a whole corpus reruns in one go.
//!
//! The corpus is streamed: every line is checked through the borrowed view first
//! ([`super::corpus_line`]), so bad input is refused before anything is written; a task holds
//! only where its run's lines are ([`RunSource::Located`], kept packed by
//! [`super::corpus_runs`]), and the runner parses the run when the task runs. Task ids are written
//! aside as they are made and read back in order, and checked for repeats by their hashes a
//! megabyte at a time (as a dataset's are), so memory stays flat however many runs the corpus
//! holds; only a corpus whose ids repeat holds them, to number the repeats.

use std::borrow::Cow;
use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::corpus_line::{self, CorpusLine, read_by_replay, replay_check};
use super::corpus_runs::PackedRuns;
use super::suite::{
    DEFAULT_MAX_STEPS, EntryLog, Expectations, IdHashes, LoggedEntries, Suite, SuiteErrors,
    SuiteTask, SuiteTasks, TaskEntries, TaskId, TaskMaker, TaskModel,
};
use crate::replay::ReplayModel;
use crate::run::RunOutcome;
use crate::trace::{
    Capture, LineSpan, ReadOptions, RecordedRun, RunStream, read_checked_run_in, read_run_within,
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
        /// The lines its replay reads, in event order: for a run without a finish gate, all but
        /// its observations.
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
            } => read_checked_run_in(file, path, run_id, spans).map(Cow::Owned),
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
            refuse_run_store(path)?;
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

/// Fails when `dir` is an output folder of `eval` (a run store): its row logs are no traces,
/// and its runs may replace each other's rows, so which runs to read is named, not walked.
fn refuse_run_store(dir: &Path) -> Result<(), String> {
    let runs = dir.join(crate::eval::store::RUNS_DIR);
    if !runs.is_dir() {
        return Ok(());
    }
    Err(format!(
        "`{}` is an output folder of eval (a run store), not a folder of traces: give the trace files of the runs to replay (`{}/<eval-id>/traces.jsonl` or `{}/<eval-id>/traces/`)",
        dir.display(),
        runs.display(),
        runs.display()
    ))
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
            refuse_run_store(&entry)?;
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
    // Task ids are written aside as they are made and checked for repeats afterwards by their
    // hashes (`IdHashes`), so that loading holds no id per run; only a corpus whose ids repeat
    // is numbered again, holding them.
    let mut ids = CorpusIds::default();
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
            // Only the lines its replay reads are read again (not a tool's recorded answer).
            let reads = read_by_replay(&run.events);
            let spans: Vec<LineSpan> = match streamed.spans.len() == run.events.len() {
                true => (run.events.iter().zip(&streamed.spans))
                    .filter(|((_, line), _)| reads(line))
                    .map(|(_, span)| *span)
                    .collect(),
                false => streamed.spans.clone(),
            };
            let pushed = ids.push(&format!("{stem}.{}", run.run_id)).and_then(|()| {
                packed.push(
                    file_index,
                    max_steps.unwrap_or(DEFAULT_MAX_STEPS),
                    reason,
                    &run.run_id,
                    &spans,
                )
            });
            if let Err(err) = pushed {
                let message = format!("failed to set the runs aside in a temporary file: {err}");
                problems.push(("--traces".to_owned(), message));
            }
        }
    }
    if ids.log.is_empty() && problems.is_empty() {
        problems.push(("--traces".to_owned(), "no replayable runs found".to_owned()));
    }
    if !problems.is_empty() {
        return Err(fail(problems));
    }
    let aside_failed = |err: std::io::Error| {
        let message = format!("failed to set the runs aside in a temporary file: {err}");
        fail(vec![("--traces".to_owned(), message)])
    };
    packed.finish().map_err(aside_failed)?;
    packed.files = files;
    let read_files = packed.files.clone();
    let tasks = match ids.finish().map_err(aside_failed)? {
        Ids::Logged(entries) => SuiteTasks::made_logged(entries, Arc::new(packed), read_files),
        Ids::Numbered(entries) => SuiteTasks::made(entries, Arc::new(packed), read_files),
    };
    Ok(Corpus {
        suite: Suite {
            name: "traces".to_owned(),
            capture,
            tasks,
            tools: None,
            models: Default::default(),
        },
        skipped,
    })
}

/// The model kind of every corpus task.
const REPLAY_KIND: &str = "replay";

impl TaskMaker for PackedRuns {
    fn task(&self, i: usize, id: &str) -> Result<SuiteTask, String> {
        let run = self.run(i)?;
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
                    run_id: run.run_id,
                    spans: run.spans.into(),
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

/// The task ids of a corpus as they are made, one a run: each run's file stem and run id made a
/// valid id ([`clean_id`]), written aside with its hash.
#[derive(Default)]
struct CorpusIds {
    log: EntryLog,
    hashes: IdHashes,
    /// Whether an id made is not a valid one as it is (it is numbered like a repeat).
    invalid: bool,
}

/// A corpus's task ids, final.
enum Ids {
    /// As made: no two alike (the usual case), read back from where they were written.
    Logged(LoggedEntries),
    /// Numbered in run order where they repeat, held.
    Numbered(TaskEntries),
}

impl CorpusIds {
    /// Adds the id of the next run, made from `raw` (its file stem and run id).
    fn push(&mut self, raw: &str) -> std::io::Result<()> {
        let id = clean_id(raw);
        self.invalid |= TaskId::parse(&id).is_err();
        self.hashes.push_id(&id)?;
        self.log.push(&id, REPLAY_KIND, None)
    }

    /// The ids: as made when none repeats, else numbered as [`unique_id`] numbers them.
    fn finish(self) -> std::io::Result<Ids> {
        let logged = self.log.finish()?;
        if !self.invalid && self.hashes.repeats(&logged)?.is_empty() {
            return Ok(Ids::Logged(logged));
        }
        let mut seen = SeenIds::default();
        let mut entries = TaskEntries::default();
        logged.scan(0, |_, entry| {
            let id = numbered(entry.id.as_str().to_owned(), &mut seen, &entries);
            entries.push(id.as_str(), REPLAY_KIND, None);
            ControlFlow::Continue(())
        })?;
        Ok(Ids::Numbered(entries))
    }
}

/// The task ids made so far, by a 64-bit hash and the entry that holds the id (about 20 bytes
/// a run, where a set of the ids took over 100): an id whose hash another id already has is
/// kept whole, so the answer stays exact.
#[derive(Default)]
struct SeenIds {
    first: HashMap<u64, u32>,
    collided: HashSet<String>,
}

impl SeenIds {
    /// Notes `id`, the next entry's; false if it was seen already (in `entries`).
    fn insert(&mut self, id: &str, entries: &TaskEntries) -> bool {
        let mut hasher = DefaultHasher::new();
        id.hash(&mut hasher);
        let next = u32::try_from(entries.len()).unwrap_or(u32::MAX);
        match self.first.entry(hasher.finish()) {
            Entry::Vacant(vacant) => {
                vacant.insert(next);
                true
            }
            Entry::Occupied(first) => {
                let same = entries
                    .get(*first.get() as usize)
                    .is_some_and(|entry| entry.id.as_str() == id);
                !same && self.collided.insert(id.to_owned())
            }
        }
    }
}

/// The longest task id made from a run id; a task's id names its trace file, and file names are
/// limited (255 bytes on most file systems).
const MAX_ID_CHARS: usize = 100;

/// A valid task id from a file stem and run id: other characters become `_`, repeats get `-2`, ...
/// A long one is cut and ends with a hash of the whole, so it stays unique and a usable file name.
#[cfg(test)]
fn unique_id(raw: &str, seen: &mut SeenIds, entries: &TaskEntries) -> TaskId {
    numbered(clean_id(raw), seen, entries)
}

/// `raw` with other characters made `_`, and cut to [`MAX_ID_CHARS`] with a hash of the whole
/// when longer.
fn clean_id(raw: &str) -> String {
    let mut clean = TaskId::sanitize(raw);
    if clean.len() > MAX_ID_CHARS {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(raw.as_bytes());
        let hash: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
        clean.truncate(MAX_ID_CHARS - hash.len() - 1);
        clean = format!("{clean}-{hash}");
    }
    clean
}

/// `clean`, or the first of `clean-2`, `clean-3`, ... that is a valid id not yet `seen`.
fn numbered(clean: String, seen: &mut SeenIds, entries: &TaskEntries) -> TaskId {
    let mut n = 1;
    loop {
        let candidate = if n == 1 {
            clean.clone()
        } else {
            format!("{clean}-{n}")
        };
        if let Ok(id) = TaskId::parse(&candidate)
            && seen.insert(id.as_str(), entries)
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
    fn repeated_run_ids_get_numbered_task_ids() {
        let mut seen = SeenIds::default();
        let mut entries = TaskEntries::default();
        let mut made = Vec::new();
        for raw in ["a.r1", "a.r2", "a.r1", "a r1", "a.r1", "a.r1-2"] {
            let id = unique_id(raw, &mut seen, &entries);
            entries.push(id.as_str(), REPLAY_KIND, None);
            made.push(id.as_str().to_owned());
        }
        assert_eq!(
            made,
            ["a.r1", "a.r2", "a.r1-2", "a_r1", "a.r1-3", "a.r1-2-2"]
        );
        // An id whose hash another id has is still told apart by its text.
        let mut seen = SeenIds::default();
        let mut entries = TaskEntries::default();
        entries.push("first", REPLAY_KIND, None);
        seen.first.insert(hash_of("second"), 0);
        assert!(seen.insert("second", &entries));
        assert!(!seen.insert("second", &entries));
    }

    /// The ids of runs `raw`, and whether they were read back as made (none repeats).
    fn corpus_ids(raw: &[&str]) -> (Vec<String>, bool) {
        let mut ids = CorpusIds::default();
        for raw in raw {
            ids.push(raw).unwrap();
        }
        let mut made = Vec::new();
        let logged = match ids.finish().unwrap() {
            Ids::Logged(entries) => {
                entries
                    .scan(0, |_, entry| {
                        made.push(entry.id.to_string());
                        ControlFlow::Continue(())
                    })
                    .unwrap();
                true
            }
            Ids::Numbered(entries) => {
                made.extend(entries.iter().map(|entry| entry.id.to_string()));
                false
            }
        };
        (made, logged)
    }

    #[test]
    fn corpus_ids_are_kept_as_made_unless_one_repeats_then_numbered_in_run_order() {
        let distinct: Vec<String> = (0..5000).map(|i| format!("f.run {i}")).collect();
        let distinct: Vec<&str> = distinct.iter().map(String::as_str).collect();
        let (made, logged) = corpus_ids(&distinct);
        assert!(logged);
        assert_eq!(made.len(), 5000);
        assert_eq!(
            (made[0].as_str(), made[4999].as_str()),
            ("f.run_0", "f.run_4999")
        );
        // A repeat, one made like a repeat's number, and ids that are not valid as made: all
        // numbered as one run at a time would number them.
        for raw in [
            &["a.r1", "a.r2", "a.r1", "a r1", "a.r1", "a.r1-2"][..],
            &["", "x", ""],
            &[".", "..", "."],
        ] {
            let mut seen = SeenIds::default();
            let mut entries = TaskEntries::default();
            let expected: Vec<String> = raw
                .iter()
                .map(|raw| {
                    let id = unique_id(raw, &mut seen, &entries);
                    entries.push(id.as_str(), REPLAY_KIND, None);
                    id.as_str().to_owned()
                })
                .collect();
            assert_eq!(corpus_ids(raw), (expected, false), "{raw:?}");
        }
    }

    fn hash_of(id: &str) -> u64 {
        let mut hasher = DefaultHasher::new();
        id.hash(&mut hasher);
        hasher.finish()
    }
}
