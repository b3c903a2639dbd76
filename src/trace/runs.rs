//! Grouping a trace's events into runs by `run_id`. One file may hold many runs, interleaved; a
//! run id reused after its run ended (or restarted) starts a new run. A run without an ending event
//! is `incomplete`: the process died.
//!
//! [`RunStream`] groups as it reads and yields each run as soon as it ends (runs still open at the
//! end of the input last, in order of first appearance), so `show`, `replay` and `eval --traces`
//! hold only the runs still open, never the whole file. From a regular file, runs that stay open
//! long (a crashed writer's runs never end) are kept as line positions only and read again when
//! they close, so memory stays bounded by [`OPEN_BYTES_BUDGET`] whatever the file size.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fs::File;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::event::{Event, EventKind, RunStarted};
use super::reader::{ReadOptions, ReadStats, TraceError, TraceReader, parse_line};
use crate::run::RunOutcome;

/// One run's events, in file order, with the line each came from.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedRun {
    /// The run id.
    pub run_id: String,
    /// The events and their 1-based line numbers.
    pub events: Vec<(u64, Event)>,
}

impl RecordedRun {
    /// The run's outcome, from its first ending event.
    pub fn outcome(&self) -> RunOutcome {
        self.events
            .iter()
            .find_map(|(_, e)| e.ending())
            .map_or(RunOutcome::Incomplete, RunOutcome::Ended)
    }

    /// The `run_started` event, if it was recorded.
    pub fn started_event(&self) -> Option<&Event> {
        self.events
            .iter()
            .map(|(_, e)| e)
            .find(|e| e.is_run_started())
    }

    /// The fields of the `run_started` event, if it was recorded.
    pub fn started(&self) -> Option<&RunStarted> {
        self.events.iter().find_map(|(_, e)| match &e.kind {
            EventKind::RunStarted(started) => Some(started),
            _ => None,
        })
    }

    /// The ending event, if any.
    pub fn finished(&self) -> Option<&Event> {
        self.events
            .iter()
            .map(|(_, e)| e)
            .find(|e| e.ending().is_some())
    }
}

/// Bytes of trace lines kept parsed for open runs before the oldest open runs are kept as line
/// positions only (regular files; other inputs keep everything open in memory). Runs written
/// eight at a time hold a few hundred KB; beyond that the open runs are mostly runs that never end,
/// so a small budget keeps the peak the same from a small file to a large one.
pub const OPEN_BYTES_BUDGET: u64 = 4 * 1024 * 1024;

/// Where one event's line is in its file: enough to read it again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineSpan {
    /// The 1-based line number.
    pub line: u64,
    /// The byte offset of the line's start.
    pub offset: u64,
    /// The line's length in bytes, without its `\n`.
    pub len: u32,
}

/// A run as [`RunStream`] yields it.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamedRun {
    /// The run's events.
    pub run: RecordedRun,
    /// Its place in the order of first appearance, from 0.
    pub index: u64,
    /// 1 for the first run with this id, 2 for the next run that reuses it, ...
    pub occurrence: u32,
    /// Where each event's line is, in event order; empty unless the input is a regular file.
    pub spans: Vec<LineSpan>,
}

struct Held {
    span: LineSpan,
    /// `None` once the run was put aside to keep memory bounded.
    event: Option<Box<Event>>,
}

struct OpenRun {
    index: u64,
    occurrence: u32,
    held_bytes: u64,
    events: Vec<Held>,
}

/// Groups the events of a trace into runs as they are read; an iterator of runs, each yielded when
/// it ends (or, for runs that never end, at the end of the input).
pub struct RunStream<R> {
    reader: TraceReader<R>,
    /// A second handle on the file for reading put-aside lines again; `None` for pipes.
    source: Option<File>,
    open: HashMap<String, OpenRun>,
    /// Open runs by first appearance, the oldest put aside first.
    by_age: BTreeMap<u64, String>,
    ready: VecDeque<StreamedRun>,
    /// Runs seen per run id (by a 64-bit hash of the id: a few bytes per run, not the id itself).
    occurrences: HashMap<u64, u32>,
    next_index: u64,
    held_bytes: u64,
    budget: u64,
    done: bool,
    /// Runs still open at the end of the input, closed one at a time as they are asked for, so
    /// the runs put aside are not all read back into memory at once.
    closing: VecDeque<String>,
}

impl RunStream<File> {
    /// Streams the runs of a trace file, opened read-only.
    pub fn open(path: &Path, options: ReadOptions) -> Result<Self, TraceError> {
        let io = |source| TraceError::Io {
            path: path.display().to_string(),
            source,
        };
        let file = File::open(path).map_err(io)?;
        let regular = file.metadata().map_err(io)?.is_file();
        let source = if regular {
            Some(file.try_clone().map_err(io)?)
        } else {
            None
        };
        let mut stream = RunStream::new(TraceReader::new(file, path.display(), options));
        stream.source = source;
        Ok(stream)
    }
}

impl<R: Read> RunStream<R> {
    /// Streams the runs of any reader; every open run stays in memory (no file to read again).
    pub fn new(reader: TraceReader<R>) -> Self {
        RunStream {
            reader,
            source: None,
            open: HashMap::new(),
            by_age: BTreeMap::new(),
            ready: VecDeque::new(),
            occurrences: HashMap::new(),
            next_index: 0,
            held_bytes: 0,
            budget: OPEN_BYTES_BUDGET,
            done: false,
            closing: VecDeque::new(),
        }
    }

    /// Sets how many bytes of open runs' lines are kept parsed (for tests of the bound).
    pub fn with_budget(mut self, budget: u64) -> Self {
        self.budget = budget;
        self
    }

    /// Bytes of trace lines held parsed for open runs right now.
    pub fn held_bytes(&self) -> u64 {
        self.held_bytes
    }

    /// What the reader noticed; complete once the stream is exhausted.
    pub fn stats(&self) -> &ReadStats {
        self.reader.stats()
    }

    /// Consumes the stream, returning what the reader noticed.
    pub fn into_stats(self) -> ReadStats {
        self.reader.into_stats()
    }

    /// The name of the input in messages.
    pub fn path(&self) -> &str {
        self.reader.path()
    }

    fn add(&mut self, line: u64, event: Event) -> Result<(), TraceError> {
        let starts = event.is_run_started();
        let ends = event.ending().is_some();
        let (offset, len) = self.reader.last_line_span();
        let span = LineSpan {
            line,
            offset,
            len: u32::try_from(len).unwrap_or(u32::MAX),
        };
        // A reused run id starts a new run once the old one has ended (closed already, so it is
        // not open any more), and run_started always starts one (events of the id before it were
        // an incomplete run), the rule of `docs/report.md` that `looptrace report` uses.
        if starts && self.open.contains_key(&event.run_id) {
            let id = event.run_id.clone();
            self.close(&id)?;
        }
        if !self.open.contains_key(&event.run_id) {
            let mut hasher = DefaultHasher::new();
            event.run_id.hash(&mut hasher);
            let seen = self.occurrences.entry(hasher.finish()).or_default();
            *seen += 1;
            let run = OpenRun {
                index: self.next_index,
                occurrence: *seen,
                held_bytes: 0,
                events: Vec::new(),
            };
            self.by_age.insert(self.next_index, event.run_id.clone());
            self.next_index += 1;
            self.open.insert(event.run_id.clone(), run);
        }
        let id = event.run_id.clone();
        let Some(run) = self.open.get_mut(&id) else {
            return Ok(());
        };
        let put_aside =
            self.source.is_some() && run.events.first().is_some_and(|h| h.event.is_none());
        if put_aside {
            run.events.push(Held { span, event: None });
        } else {
            run.events.push(Held {
                span,
                event: Some(Box::new(event)),
            });
            run.held_bytes += len;
            self.held_bytes += len;
        }
        if ends {
            self.close(&id)?;
        }
        self.keep_within_budget();
        Ok(())
    }

    /// Puts the oldest open runs aside (line positions only) while over the budget.
    fn keep_within_budget(&mut self) {
        if self.source.is_none() {
            return;
        }
        while self.held_bytes > self.budget {
            let Some((_, id)) = self.by_age.pop_first() else {
                return;
            };
            if let Some(run) = self.open.get_mut(&id) {
                for held in &mut run.events {
                    held.event = None;
                }
                self.held_bytes -= run.held_bytes;
                run.held_bytes = 0;
            }
        }
    }

    fn close(&mut self, id: &str) -> Result<(), TraceError> {
        let Some((run_id, run)) = self.open.remove_entry(id) else {
            return Ok(());
        };
        self.by_age.remove(&run.index);
        self.held_bytes -= run.held_bytes;
        let mut events = Vec::with_capacity(run.events.len());
        let mut spans = Vec::with_capacity(run.events.len());
        for held in run.events {
            let event = match held.event {
                Some(event) => *event,
                None => self.read_again(held.span)?,
            };
            events.push((held.span.line, event));
            spans.push(held.span);
        }
        if self.source.is_none() {
            spans.clear();
        }
        self.ready.push_back(StreamedRun {
            run: RecordedRun { run_id, events },
            index: run.index,
            occurrence: run.occurrence,
            spans,
        });
        Ok(())
    }

    fn read_again(&self, span: LineSpan) -> Result<Event, TraceError> {
        let changed = |message: String| TraceError::Line {
            path: self.reader.path().to_owned(),
            line: span.line,
            message,
        };
        let Some(file) = &self.source else {
            return Err(changed("the line was not kept".to_owned()));
        };
        read_event_at(file, span).map_err(changed)
    }
}

/// Reads one event again from its place in a file.
pub fn read_event_at(file: &File, span: LineSpan) -> Result<Event, String> {
    let mut bytes = vec![0; span.len as usize];
    file.read_exact_at(&mut bytes, span.offset)
        .map_err(|err| format!("failed to read the line again: {err}"))?;
    match parse_line(&bytes) {
        Ok(Some(event)) => Ok(event),
        _ => Err("the line changed while the file was being read".to_owned()),
    }
}

/// Reads one run again from a file, by the line positions [`RunStream`] gave for it.
pub fn read_run_at(path: &Path, run_id: &str, spans: &[LineSpan]) -> Result<RecordedRun, String> {
    let file =
        File::open(path).map_err(|err| format!("failed to read `{}`: {err}", path.display()))?;
    let mut events = Vec::with_capacity(spans.len());
    for span in spans {
        let event = read_event_at(&file, *span)
            .map_err(|err| format!("{}:{}: {err}", path.display(), span.line))?;
        if event.run_id != run_id {
            return Err(format!(
                "{}:{}: the line changed while the file was being read",
                path.display(),
                span.line
            ));
        }
        events.push((span.line, event));
    }
    Ok(RecordedRun {
        run_id: run_id.to_owned(),
        events,
    })
}

/// Bytes one read of [`read_run_within`] may cover beyond the run's own lines: runs written a
/// few at a time lie close together, so one read takes their neighbours' lines too rather than
/// one read per line.
const GAP_READ_BYTES: u64 = 4 * 1024;

/// Reads one run again from a file, as [`read_run_at`] does and with the same errors, but with
/// one read for each stretch of the file that holds its lines close together (runs written one
/// after another take one read each) and one buffer for the whole run.
pub fn read_run_within(
    path: &Path,
    run_id: &str,
    spans: &[LineSpan],
) -> Result<RecordedRun, String> {
    let file =
        File::open(path).map_err(|err| format!("failed to read `{}`: {err}", path.display()))?;
    let mut events = Vec::with_capacity(spans.len());
    let mut buffer = Vec::new();
    let mut rest = spans;
    while let Some(first) = rest.first() {
        // The stretch: the following spans while each starts within GAP_READ_BYTES of the end of
        // the one before it.
        let mut end = first.offset + u64::from(first.len);
        let mut count = 1;
        for span in &rest[1..] {
            if span.offset < end || span.offset - end > GAP_READ_BYTES {
                break;
            }
            end = span.offset + u64::from(span.len);
            count += 1;
        }
        let (stretch, after) = rest.split_at(count);
        rest = after;
        let len = usize::try_from(end - first.offset).map_err(|_| {
            format!(
                "{}:{}: the run's lines are too far apart",
                path.display(),
                first.line
            )
        })?;
        buffer.clear();
        buffer.resize(len, 0);
        file.read_exact_at(&mut buffer, first.offset)
            .map_err(|err| {
                format!(
                    "{}:{}: failed to read the line again: {err}",
                    path.display(),
                    first.line
                )
            })?;
        for span in stretch {
            let start = (span.offset - first.offset) as usize;
            let line = &buffer[start..start + span.len as usize];
            // Another event, or another run's, than the stream read there.
            match parse_line(line) {
                Ok(Some(event)) if event.run_id == run_id => events.push((span.line, event)),
                _ => {
                    return Err(format!(
                        "{}:{}: the line changed while the file was being read",
                        path.display(),
                        span.line
                    ));
                }
            }
        }
    }
    Ok(RecordedRun {
        run_id: run_id.to_owned(),
        events,
    })
}

impl<R: Read> Iterator for RunStream<R> {
    type Item = Result<StreamedRun, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(run) = self.ready.pop_front() {
                return Some(Ok(run));
            }
            if let Some(id) = self.closing.pop_front() {
                if let Err(err) = self.close(&id) {
                    self.closing.clear();
                    return Some(Err(err));
                }
                continue;
            }
            if self.done {
                return None;
            }
            match self.reader.next() {
                Some(Ok((line, event))) => {
                    if let Err(err) = self.add(line, event) {
                        self.done = true;
                        return Some(Err(err));
                    }
                }
                Some(Err(err)) => {
                    self.done = true;
                    return Some(Err(err));
                }
                None => {
                    // Runs that never ended, in order of first appearance.
                    self.done = true;
                    let mut left: Vec<(u64, String)> = self
                        .open
                        .iter()
                        .map(|(id, run)| (run.index, id.clone()))
                        .collect();
                    left.sort();
                    self.closing = left.into_iter().map(|(_, id)| id).collect();
                }
            }
        }
    }
}

/// A whole trace file, grouped into runs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TraceContents {
    /// Runs in order of first appearance.
    pub runs: Vec<RecordedRun>,
    /// For each run, the how-many-th run with its id it is (from 1).
    pub occurrences: Vec<u32>,
    /// What the reader noticed.
    pub stats: ReadStats,
}

impl TraceContents {
    /// Groups events from any reader.
    pub fn from_reader<R: std::io::Read>(reader: TraceReader<R>) -> Result<Self, TraceError> {
        TraceContents::collect(RunStream::new(reader))
    }

    fn collect<R: Read>(mut stream: RunStream<R>) -> Result<Self, TraceError> {
        let mut runs: Vec<StreamedRun> = Vec::new();
        for run in stream.by_ref() {
            runs.push(run?);
        }
        runs.sort_by_key(|r| r.index);
        Ok(TraceContents {
            occurrences: runs.iter().map(|r| r.occurrence).collect(),
            runs: runs.into_iter().map(|r| r.run).collect(),
            stats: stream.into_stats(),
        })
    }

    /// The first run with this id.
    pub fn run(&self, run_id: &str) -> Option<&RecordedRun> {
        self.occurrence(run_id, 1)
    }

    /// The `occurrence`-th run with this id (from 1).
    pub fn occurrence(&self, run_id: &str, occurrence: u32) -> Option<&RecordedRun> {
        self.runs
            .iter()
            .zip(&self.occurrences)
            .find(|(r, n)| r.run_id == run_id && **n == occurrence)
            .map(|(r, _)| r)
    }
}

/// Reads and groups a whole trace file. The file is opened read-only.
pub fn read_trace(path: &Path, options: ReadOptions) -> Result<TraceContents, TraceError> {
    let file = File::open(path).map_err(|source| TraceError::Io {
        path: path.display().to_string(),
        source,
    })?;
    TraceContents::from_reader(TraceReader::new(file, path.display(), options))
}
