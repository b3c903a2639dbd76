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
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::aside_runs::AsideRuns;
use super::event::{Event, EventKind, RunStarted};
use super::line_span::LineSpan;
use super::reader::{LineItem, ReadOptions, ReadStats, TraceError, TraceReader};
use super::run_occurrences::RunOccurrences;
use super::wire::Wire;
use crate::run::RunOutcome;

/// One run's events, in file order, with the line each came from (parsed [`Event`]s unless a
/// reader asked for lines kept in another form).
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedRun<T = Event> {
    /// The run id.
    pub run_id: String,
    /// The events and their 1-based line numbers.
    pub events: Vec<(u64, T)>,
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

/// Lines an open run has room for when it begins.
const RUN_LINES_AT_FIRST: usize = 8;

/// A run as [`RunStream`] yields it.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamedRun<T = Event> {
    /// The run's events.
    pub run: RecordedRun<T>,
    /// Its place in the order of first appearance, from 0.
    pub index: u64,
    /// 1 for the first run with this id, 2 for the next run that reuses it, ...
    pub occurrence: u32,
    /// Where each event's line is, in event order; empty unless the input is a regular file.
    pub spans: Vec<LineSpan>,
}

struct OpenRun<T> {
    index: u64,
    occurrence: u32,
    held_bytes: u64,
    /// The lines read so far, parsed, with their line numbers, until the run is put aside.
    events: Vec<(u64, T)>,
    /// Where each of those lines is: kept apart from the events so that a run that ends hands
    /// both over as they are, without moving each event again.
    spans: Vec<LineSpan>,
}

impl<T> OpenRun<T> {
    /// Keeps one more line, parsed.
    fn keep(&mut self, span: LineSpan, event: T, len: u64, held_bytes: &mut u64) {
        self.events.push((span.line, event));
        self.spans.push(span);
        self.held_bytes += len;
        *held_bytes += len;
    }
}

/// Groups the events of a trace into runs as they are read; an iterator of runs, each yielded when
/// it ends (or, for runs that never end, at the end of the input).
pub struct RunStream<R, T = Event> {
    reader: TraceReader<R>,
    /// A second handle on the file for reading put-aside lines again; `None` for pipes.
    source: Option<File>,
    open: HashMap<String, OpenRun<T>>,
    /// Runs put aside to keep memory bounded: only where their lines are, mostly on disk.
    aside: AsideRuns,
    /// Open runs by first appearance, the oldest put aside first.
    by_age: BTreeMap<u64, String>,
    ready: VecDeque<StreamedRun<T>>,
    /// Runs seen per run id (by a 64-bit hash of the id: about 8 bytes per run, not the id).
    occurrences: RunOccurrences,
    /// False when the reader does not need [`StreamedRun::occurrence`]: nothing is kept per run.
    count_occurrences: bool,
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
        RunStream::open_items(path, options)
    }
}

impl<T: LineItem> RunStream<File, T> {
    /// Streams the runs of a trace file, opened read-only, keeping each line as a `T`.
    pub fn open_items(path: &Path, options: ReadOptions) -> Result<Self, TraceError> {
        RunStream::open_with(path, |file| TraceReader::new(file, path.display(), options))
    }

    /// As [`RunStream::open_items`], reading a regular file through read-only maps of a window
    /// at a time instead of copying it (`show`: the kernel's copy was a large part of its time).
    /// A file that shrinks while it is read stops the process, as for `report`.
    pub fn open_mapped(path: &Path, options: ReadOptions) -> Result<Self, TraceError> {
        RunStream::open_with(path, |file| {
            TraceReader::mapped(file, path.display(), options)
        })
    }

    fn open_with(
        path: &Path,
        reader: impl FnOnce(File) -> TraceReader<File>,
    ) -> Result<Self, TraceError> {
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
        let mut stream = RunStream::items(reader(file));
        stream.source = source;
        Ok(stream)
    }
}

impl<R: Read> RunStream<R> {
    /// Streams the runs of any reader; every open run stays in memory (no file to read again).
    pub fn new(reader: TraceReader<R>) -> Self {
        RunStream::items(reader)
    }
}

impl<R: Read, T: LineItem> RunStream<R, T> {
    /// Streams the runs of any reader, keeping each line as a `T`; every open run stays in
    /// memory (no file to read again).
    pub fn items(reader: TraceReader<R>) -> Self {
        RunStream {
            reader,
            source: None,
            open: HashMap::new(),
            aside: AsideRuns::default(),
            by_age: BTreeMap::new(),
            ready: VecDeque::new(),
            occurrences: RunOccurrences::default(),
            count_occurrences: true,
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

    /// Does not count runs per run id: every run's [`StreamedRun::occurrence`] is 1, and nothing
    /// is kept of runs once they are yielded, so memory stays flat however many runs the input
    /// holds. For readers that neither label nor select runs by reused ids.
    pub fn without_occurrences(mut self) -> Self {
        self.count_occurrences = false;
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

    fn add(&mut self, line: u64, event: T) -> Result<(), TraceError> {
        let starts = event.starts_run();
        let ends = event.ends_run();
        let (offset, len) = self.reader.last_line_span();
        let span = LineSpan {
            line,
            offset,
            len: u32::try_from(len).unwrap_or(u32::MAX),
        };
        // Most lines continue a run already open: one look-up of the id.
        if !starts && let Some(run) = self.open.get_mut(event.run_id()) {
            let closing = ends.then(|| event.run_id().to_owned());
            run.keep(span, event, len, &mut self.held_bytes);
            if let Some(id) = closing {
                self.close(&id)?;
            }
            self.keep_within_budget();
            return Ok(());
        }
        if !starts && self.aside.push(event.run_id(), span) {
            if ends {
                let id = event.run_id().to_owned();
                self.close(&id)?;
            }
            return Ok(());
        }
        // A reused run id starts a new run once the old one has ended (closed already, so it is
        // not open any more), and run_started always starts one (events of the id before it were
        // an incomplete run), the rule of `docs/report.md` that `looptrace report` uses.
        if starts && (self.open.contains_key(event.run_id()) || self.aside.contains(event.run_id()))
        {
            let id = event.run_id().to_owned();
            self.close(&id)?;
        }
        if !self.open.contains_key(event.run_id()) {
            let occurrence = if self.count_occurrences {
                self.occurrences.begin(event.run_id())
            } else {
                1
            };
            let run = OpenRun {
                index: self.next_index,
                occurrence,
                held_bytes: 0,
                // Room for a short run's lines from the start: growing from nothing moved each
                // short run's events once more (7% of replay's instructions on small runs).
                events: Vec::with_capacity(RUN_LINES_AT_FIRST),
                spans: Vec::with_capacity(RUN_LINES_AT_FIRST),
            };
            self.by_age
                .insert(self.next_index, event.run_id().to_owned());
            self.next_index += 1;
            self.open.insert(event.run_id().to_owned(), run);
        }
        // The id is copied once per run (to close it), not once per line.
        let closing = ends.then(|| event.run_id().to_owned());
        let Some(run) = self.open.get_mut(event.run_id()) else {
            return Ok(());
        };
        run.keep(span, event, len, &mut self.held_bytes);
        if let Some(id) = closing {
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
            if let Some(run) = self.open.remove(&id) {
                self.held_bytes -= run.held_bytes;
                self.aside
                    .set_aside(id, run.index, run.occurrence, &run.spans);
            }
        }
    }

    fn close(&mut self, id: &str) -> Result<(), TraceError> {
        let (run_id, index, occurrence, events, mut spans) =
            if let Some((run_id, run)) = self.open.remove_entry(id) {
                self.by_age.remove(&run.index);
                self.held_bytes -= run.held_bytes;
                (run_id, run.index, run.occurrence, run.events, run.spans)
            } else if let Some((run_id, run, spans)) = self.aside.take(id) {
                let spans = spans.map_err(|source| TraceError::Io {
                    path: self.reader.path().to_owned(),
                    source,
                })?;
                let mut events = Vec::with_capacity(spans.len());
                for span in &spans {
                    events.push((span.line, self.read_again(*span)?));
                }
                (run_id, run.index, run.occurrence, events, spans)
            } else {
                return Ok(());
            };
        if self.source.is_none() {
            spans.clear();
        }
        self.ready.push_back(StreamedRun {
            run: RecordedRun { run_id, events },
            index,
            occurrence,
            spans,
        });
        Ok(())
    }

    fn read_again(&self, span: LineSpan) -> Result<T, TraceError> {
        let changed = |message: String| TraceError::Line {
            path: self.reader.path().to_owned(),
            line: span.line,
            message,
        };
        let Some(file) = &self.source else {
            return Err(changed("the line was not kept".to_owned()));
        };
        read_item_at(file, span).map_err(changed)
    }
}

/// Reads one event again from its place in a file.
pub fn read_event_at(file: &File, span: LineSpan) -> Result<Event, String> {
    read_item_at(file, span)
}

/// Reads one line again from its place in a file, as a `T`.
fn read_item_at<T: LineItem>(file: &File, span: LineSpan) -> Result<T, String> {
    let mut bytes = vec![0; span.len as usize];
    file.read_exact_at(&mut bytes, span.offset)
        .map_err(|err| format!("failed to read the line again: {err}"))?;
    match T::from_line(&bytes) {
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
    read_stretches(&file, path, run_id, spans, |line| {
        <Event as LineItem>::from_line(line).ok().flatten()
    })
}

/// [`read_run_within`] from `file`, already open (named `path` in messages), of a run whose lines were all found well-formed when it was first read
/// (`eval --traces` checks its corpus through the borrowed view before it runs anything): serde
/// reads each line again, but the view's check is not made twice. A line that changed since is
/// still refused when serde cannot read it or it is another run's.
pub fn read_checked_run_in(
    file: &File,
    path: &Path,
    run_id: &str,
    spans: &[LineSpan],
) -> Result<RecordedRun, String> {
    read_stretches(file, path, run_id, spans, |line| {
        // The line's UTF-8 checked once, with a fast scan, rather than string by string.
        let line = std::str::from_utf8(line.trim_ascii()).ok()?;
        Event::try_from(serde_json::from_str::<Wire>(line).ok()?).ok()
    })
}

/// Reads a run's lines with one read per stretch of the file that holds them close together,
/// each line read by `parse`.
fn read_stretches(
    file: &File,
    path: &Path,
    run_id: &str,
    spans: &[LineSpan],
    parse: impl Fn(&[u8]) -> Option<Event>,
) -> Result<RecordedRun, String> {
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
            match parse(line) {
                Some(event) if event.run_id == run_id => events.push((span.line, event)),
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

impl<R: Read, T: LineItem> Iterator for RunStream<R, T> {
    type Item = Result<StreamedRun<T>, TraceError>;

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
            match self.reader.next_item() {
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
                    let open = self.open.iter().map(|(id, run)| (run.index, id));
                    let mut left: Vec<(u64, String)> = open
                        .chain(self.aside.ids())
                        .map(|(index, id)| (index, id.clone()))
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
