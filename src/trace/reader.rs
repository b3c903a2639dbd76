//! The streaming trace reader: constant memory whatever the file size, tolerant where real files
//! are imperfect (blank lines, `\r\n`, unknown fields and event types, a cut-off last line) and
//! strict where it matters (a malformed line in the middle is an error unless `lenient`).

use std::collections::BTreeMap;
use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};

use thiserror::Error;

use super::event::{Event, EventKind};
use super::mapped_file::MappedFile;
use super::wire::Wire;

/// Lines longer than this are errors, so a corrupt file cannot exhaust memory.
pub const DEFAULT_MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// How strict the reader is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadOptions {
    /// Skip and count malformed lines instead of failing.
    pub lenient: bool,
    /// The longest line accepted, in bytes.
    pub max_line_bytes: usize,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            lenient: false,
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
        }
    }
}

/// A trace that could not be read.
#[derive(Debug, Error)]
pub enum TraceError {
    /// The file could not be opened or read.
    #[error("failed to read `{path}`: {source}")]
    Io {
        /// The file as the user named it.
        path: String,
        /// The system's error.
        source: io::Error,
    },
    /// A line is malformed.
    #[error("{path}:{line}: {message}")]
    Line {
        /// The file as the user named it.
        path: String,
        /// The 1-based line number.
        line: u64,
        /// What is wrong.
        message: String,
    },
}

/// What the reader noticed besides the events.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// Lines read, blank ones included.
    pub lines: u64,
    /// Events returned.
    pub events: u64,
    /// Malformed lines skipped in lenient mode: (line, what was wrong); the first 100 are kept.
    pub skipped: Vec<(u64, String)>,
    /// How many lines were skipped in all.
    pub skipped_count: u64,
    /// Events of types this version does not know, by type.
    pub unknown_event_types: BTreeMap<String, u64>,
    /// The line number of a cut-off last line (a crash mid-write), if any.
    pub truncated_tail: Option<u64>,
    /// Lines cut short by a failed write (a full disk) and followed directly by a
    /// `run_started` line: skipped, their runs left incomplete.
    pub cut_off: Vec<u64>,
}

impl ReadStats {
    /// Human-readable warnings, one per line, naming the file.
    pub fn warnings(&self, path: &str) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(line) = self.truncated_tail {
            out.push(format!(
                "{path}:{line}: the last line is cut off (the writer stopped mid-line); its run is incomplete"
            ));
        }
        for line in &self.cut_off {
            out.push(format!(
                "{path}:{line}: a write cut short (the next line starts a run) skipped; its run is incomplete"
            ));
        }
        for (line, message) in &self.skipped {
            out.push(format!("{path}:{line}: skipped: {message}"));
        }
        if self.skipped_count > self.skipped.len() as u64 {
            out.push(format!(
                "{path}: {} more malformed lines skipped",
                self.skipped_count - self.skipped.len() as u64
            ));
        }
        for (event_type, count) in &self.unknown_event_types {
            out.push(format!(
                "{path}: {count} event(s) of unknown type {event_type:?} kept but not interpreted"
            ));
        }
        out
    }
}

const KEPT_SKIPS: usize = 100;

/// Reads events one line at a time.
pub struct TraceReader<R> {
    input: Input<R>,
    path: String,
    options: ReadOptions,
    stats: ReadStats,
    line: Vec<u8>,
    /// A line read ahead (to see what follows a cut-off one), to be read next.
    held: Option<(RawLine, Vec<u8>)>,
    failed: bool,
    /// Bytes consumed from the input so far.
    position: u64,
    /// Where the line last read starts, and its length without the `\n`.
    line_span: (u64, u64),
}

/// One raw line: whether it ended with `\n`, whether it was too long.
#[derive(Clone, Copy)]
struct RawLine {
    terminated: bool,
    too_long: bool,
    /// Where the line starts and its length without the `\n`.
    span: (u64, u64),
}

/// Where lines are read from: a buffer filled by reads, or a regular file's mapped windows.
enum Input<R> {
    Buffered(BufReader<R>),
    Mapped(MappedFile),
}

impl<R: Read> Input<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        match self {
            Input::Buffered(input) => input.fill_buf(),
            Input::Mapped(input) => input.fill_buf(),
        }
    }

    fn consume(&mut self, amount: usize) {
        match self {
            Input::Buffered(input) => input.consume(amount),
            Input::Mapped(input) => input.consume(amount),
        }
    }

    /// What is buffered (or mapped) and not yet consumed, without reading more.
    fn buffer(&self) -> &[u8] {
        match self {
            Input::Buffered(input) => input.buffer(),
            Input::Mapped(input) => input.buffer(),
        }
    }
}

impl TraceReader<File> {
    /// A reader of a file that reads a regular file through read-only maps of a window at a
    /// time (no copy of its bytes), and any other file as [`TraceReader::new`] does.
    pub fn mapped(file: File, path: impl fmt::Display, options: ReadOptions) -> Self {
        match MappedFile::new(file) {
            Ok(mapped) => TraceReader::with_input(Input::Mapped(mapped), path, options),
            Err(file) => TraceReader::new(file, path, options),
        }
    }
}

impl<R: Read> TraceReader<R> {
    /// A reader of `input`; `path` names it in messages (`-` for standard input).
    pub fn new(input: R, path: impl fmt::Display, options: ReadOptions) -> Self {
        let input = Input::Buffered(BufReader::with_capacity(256 * 1024, input));
        TraceReader::with_input(input, path, options)
    }

    fn with_input(input: Input<R>, path: impl fmt::Display, options: ReadOptions) -> Self {
        TraceReader {
            input,
            path: path.to_string(),
            options,
            stats: ReadStats::default(),
            line: Vec::new(),
            held: None,
            failed: false,
            position: 0,
            line_span: (0, 0),
        }
    }

    /// What was noticed so far; complete once the iterator is exhausted.
    pub fn stats(&self) -> &ReadStats {
        &self.stats
    }

    /// Consumes the reader, returning what it noticed.
    pub fn into_stats(self) -> ReadStats {
        self.stats
    }

    /// The name used in messages.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The byte offset of the line of the event returned last, and its length without the `\n`,
    /// so the line can be read again from a seekable file.
    pub fn last_line_span(&self) -> (u64, u64) {
        self.line_span
    }

    /// Reads the next line into `self.line`, never holding more than the limit.
    fn read_line(&mut self) -> io::Result<Option<RawLine>> {
        if let Some((raw, line)) = self.held.take() {
            self.line = line;
            self.line_span = raw.span;
            return Ok(Some(raw));
        }
        self.line.clear();
        let start = self.position;
        let mut too_long = false;
        let mut any = false;
        loop {
            let available = match self.input.fill_buf() {
                Ok(buf) => buf,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(err) => return Err(err),
            };
            if available.is_empty() {
                return Ok(any.then_some(RawLine {
                    terminated: false,
                    too_long,
                    span: self.line_span,
                }));
            }
            any = true;
            let (chunk, found) = match memchr::memchr(b'\n', available) {
                Some(i) => (&available[..i], Some(i)),
                None => (available, None),
            };
            if !too_long {
                if self.line.len() + chunk.len() > self.options.max_line_bytes {
                    too_long = true;
                    self.line = Vec::new();
                    if !self.options.lenient {
                        // An error whatever follows: said now, not after reading to a newline
                        // that may never come (`show /dev/zero`).
                        return Ok(Some(RawLine {
                            terminated: false,
                            too_long,
                            span: self.line_span,
                        }));
                    }
                } else {
                    self.line.extend_from_slice(chunk);
                }
            }
            match found {
                Some(i) => {
                    self.input.consume(i + 1);
                    self.position += i as u64 + 1;
                    self.line_span = (start, self.position - start - 1);
                    return Ok(Some(RawLine {
                        terminated: true,
                        too_long,
                        span: self.line_span,
                    }));
                }
                None => {
                    let n = available.len();
                    self.input.consume(n);
                    self.position += n as u64;
                    self.line_span = (start, self.position - start);
                }
            }
        }
    }

    /// Reads the next line ahead and says whether it is a `run_started` event; it stays to be
    /// read next.
    fn next_starts_run(&mut self) -> io::Result<bool> {
        let current = std::mem::take(&mut self.line);
        let next = self.read_line()?;
        let ahead = std::mem::replace(&mut self.line, current);
        Ok(match next {
            Some(raw) => {
                let starts = !raw.too_long && super::view::is_run_started(&ahead);
                self.held = Some((raw, ahead));
                starts
            }
            None => false,
        })
    }

    fn line_error(&mut self, line: u64, message: String) -> Option<TraceError> {
        if self.options.lenient {
            self.stats.skipped_count += 1;
            if self.stats.skipped.len() < KEPT_SKIPS {
                self.stats.skipped.push((line, message));
            }
            None
        } else {
            self.failed = true;
            Some(TraceError::Line {
                path: self.path.clone(),
                line,
                message,
            })
        }
    }
}

impl<R: Read> TraceReader<R> {
    /// Reads the next line as a `T` (an [`Event`], or the line kept as `show -f json` writes it),
    /// by the same rules for blank, malformed, cut-off and too long lines whatever `T` is.
    pub fn next_item<T: LineItem>(&mut self) -> Option<Result<(u64, T), TraceError>> {
        while !self.failed {
            // Most lines lie whole in the input's buffer: read there, not copied. A line that
            // does not read well is read again below, copied, to say what is wrong with it.
            if let Some((Ok(item), len)) = self.read_buffered::<T>() {
                self.input.consume(len + 1);
                self.line_span = (self.position, len as u64);
                self.position += len as u64 + 1;
                self.stats.lines += 1;
                match item {
                    Some(item) => return Some(Ok(self.counted(item))),
                    None => continue,
                }
            }
            let raw = match self.read_line() {
                Ok(Some(raw)) => raw,
                Ok(None) => return None,
                Err(source) => {
                    self.failed = true;
                    return Some(Err(TraceError::Io {
                        path: self.path.clone(),
                        source,
                    }));
                }
            };
            self.stats.lines += 1;
            let line_no = self.stats.lines;
            if raw.too_long {
                let message = format!(
                    "line is longer than the limit of {} bytes",
                    self.options.max_line_bytes
                );
                match self.line_error(line_no, message) {
                    Some(err) => return Some(Err(err)),
                    None => continue,
                }
            }
            let parsed = T::from_line(&self.line);
            match parsed {
                Ok(None) => continue,
                Ok(Some(item)) => return Some(Ok(self.counted(item))),
                Err(_) if !raw.terminated => {
                    // A crash mid-write leaves a cut-off last line: a warning, not an error.
                    self.stats.truncated_tail = Some(line_no);
                    return None;
                }
                Err(message) if super::cut_line::ends_early(&self.line) => {
                    // A write cut short (a full disk) and the next run began on a new line:
                    // a warning. Anything else after it makes the line malformed.
                    match self.next_starts_run() {
                        Ok(true) => self.stats.cut_off.push(line_no),
                        Ok(false) => {
                            if let Some(err) = self.line_error(line_no, message) {
                                return Some(Err(err));
                            }
                        }
                        Err(source) => {
                            self.failed = true;
                            return Some(Err(TraceError::Io {
                                path: self.path.clone(),
                                source,
                            }));
                        }
                    }
                }
                Err(message) => match self.line_error(line_no, message) {
                    Some(err) => return Some(Err(err)),
                    None => continue,
                },
            }
        }
        None
    }
}

impl<R: Read> TraceReader<R> {
    /// Reads the next line as a `T` where it lies, when it is whole in the input's buffer (and
    /// no line was read ahead); with its length, to be consumed if it read well.
    fn read_buffered<T: LineItem>(&self) -> Option<(Result<Option<T>, String>, usize)> {
        if self.held.is_some() {
            return None;
        }
        let buffered = self.input.buffer();
        let len = memchr::memchr(b'\n', buffered)?;
        if len > self.options.max_line_bytes {
            return None;
        }
        Some((T::from_line(&buffered[..len]), len))
    }

    /// Counts an event read from the line last read, and returns it with its line number.
    fn counted<T: LineItem>(&mut self, item: T) -> (u64, T) {
        if let Some(event_type) = item.unknown_event_type() {
            *self
                .stats
                .unknown_event_types
                .entry(event_type.to_owned())
                .or_default() += 1;
        }
        self.stats.events += 1;
        (self.stats.lines, item)
    }
}

impl<R: Read> Iterator for TraceReader<R> {
    type Item = Result<(u64, Event), TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_item()
    }
}

/// What a reader keeps of each well-formed line: the parsed [`Event`], or another form that
/// knows the few things grouping lines into runs needs.
pub trait LineItem: Sized {
    /// Reads one line (without its `\n`); `Ok(None)` for a blank one, `Err` with what is wrong
    /// exactly as [`parse_line`] says it.
    fn from_line(bytes: &[u8]) -> Result<Option<Self>, String>;
    /// The run it belongs to.
    fn run_id(&self) -> &str;
    /// Whether it begins a run (`run_started`).
    fn starts_run(&self) -> bool;
    /// Whether it ends its run (`run_finished`, a bare `internal_error`).
    fn ends_run(&self) -> bool;
    /// Its `event_type` when this version does not know it.
    fn unknown_event_type(&self) -> Option<&str>;
}

impl LineItem for Event {
    fn from_line(bytes: &[u8]) -> Result<Option<Self>, String> {
        parse_line(bytes)
    }

    fn run_id(&self) -> &str {
        &self.run_id
    }

    fn starts_run(&self) -> bool {
        self.is_run_started()
    }

    fn ends_run(&self) -> bool {
        self.ending().is_some()
    }

    fn unknown_event_type(&self) -> Option<&str> {
        match &self.kind {
            EventKind::Unknown { event_type, .. } => Some(event_type),
            _ => None,
        }
    }
}

/// Parses one line; `Ok(None)` for a blank one.
///
/// A line is well-formed by the rules `report` follows too (`docs/report.md`, "Malformed
/// means"): after serde reads the event, the line is checked by the report's scanner, the one
/// definition of a well-formed line, wherever serde could have been looser than it
/// ([`super::serde_gaps`]); elsewhere serde's parse is that check, so a line is checked once.
/// Only JSON's whitespace may surround the object.
pub fn parse_line(bytes: &[u8]) -> Result<Option<Event>, String> {
    if bytes
        .iter()
        .all(|byte| matches!(byte, b' ' | b'\t' | b'\r'))
    {
        return Ok(None);
    }
    let text = std::str::from_utf8(bytes).map_err(|err| {
        format!(
            "invalid UTF-8 at byte {} of the line",
            err.valid_up_to() + 1
        )
    })?;
    let trimmed = text.trim_matches([' ', '\t', '\r', '\n']);
    if !trimmed.starts_with('{') {
        return Err("expected a JSON object".to_owned());
    }
    let wire = serde_json::from_str::<Wire>(trimmed).map_err(|err| describe_json_error(&err))?;
    let event = Event::try_from(wire).map_err(str::to_owned)?;
    if super::serde_gaps::may_be_looser(bytes) {
        super::view::check_line(bytes).map_err(|err| err.to_string())?;
    }
    Ok(Some(event))
}

/// serde_json's message without its "at line 1 column N" (the line is ours to name).
pub(crate) fn describe_json_error(err: &serde_json::Error) -> String {
    format!(
        "{} (column {})",
        crate::json_error::describe_plain(err),
        err.column()
    )
}
