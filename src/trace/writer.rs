//! The crash-safe trace writer: the file stays open for the run, and every event goes out as one
//! `write` of one whole line on a file opened for appending. Appends from several processes never
//! interleave within a line, and a crash loses nothing already written. A writer may instead
//! hold a run's events and write them in one `write` when the run ends (`eval --trace-flush run`):
//! fewer system calls, and a crash loses the run in progress. A replayed run's events, whose
//! model answers from its recording at once, are held until a tool is about to run or the run
//! ends: only what happened since the last tool started (microseconds of work) can be lost; the
//! runner holds them until the run ends when its tools all run in the process. A writer may also
//! hand a finished run's lines to whoever writes them with its row ([`TraceWriter::keep_run_in`]).

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::event::{Event, EventKind};
use super::tap::RunTap;
use crate::fault;

/// Where a recorder sends its events.
pub trait EventSink {
    /// Records one event.
    fn record(&mut self, event: &Event) -> io::Result<()>;
}

/// Tests and in-memory users collect events in a vector.
impl EventSink for Vec<Event> {
    fn record(&mut self, event: &Event) -> io::Result<()> {
        self.push(event.clone());
        Ok(())
    }
}

impl<S: EventSink + ?Sized> EventSink for &mut S {
    fn record(&mut self, event: &Event) -> io::Result<()> {
        (**self).record(event)
    }
}

/// Appends events to a JSONL file.
#[derive(Debug)]
pub struct TraceWriter {
    /// Shared with the other writers of an evaluation's single trace file.
    file: Arc<File>,
    line: Vec<u8>,
    fsync: bool,
    /// The file ended inside a line (an earlier write cut short): the first event starts with
    /// a `\n`, so it is not glued onto that line.
    repair: bool,
    /// When held events are written.
    hold: Hold,
    /// Events held, not yet written.
    held: u64,
    /// Who else reads the lines, and the file they went to.
    tap: Option<Tap>,
    /// Where a finished run's lines go instead of the file.
    kept: Option<KeptLines>,
}

/// The lines of finished runs, handed over unwritten: whoever takes them writes them before the
/// runs' rows.
pub type KeptLines = Arc<std::sync::Mutex<Vec<u8>>>;

/// When a writer writes the events it is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Hold {
    /// Each event at once.
    No,
    /// Held until `run_finished` (or the writer is dropped).
    UntilRunEnd,
    /// Held until a tool call's `model_action` (the tool runs next) or `run_finished`.
    UntilToolOrRunEnd,
}

/// A writer's tap: the lines of the run so far, until it ends.
struct Tap {
    tap: Arc<dyn RunTap>,
    path: PathBuf,
    lines: Vec<u8>,
}

impl std::fmt::Debug for Tap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tap").field("path", &self.path).finish()
    }
}

impl Tap {
    /// Hands over the lines kept, if any.
    fn deliver(&mut self) {
        if !self.lines.is_empty() {
            self.tap.run_written(&self.path, &self.lines);
            self.lines.clear();
        }
    }
}

impl TraceWriter {
    /// Opens `path` for appending, creating it if needed; never truncates, and never writes
    /// through a symbolic link.
    pub fn append(path: &Path, fsync: bool) -> io::Result<TraceWriter> {
        let file = crate::output::open_append(path)?;
        Ok(TraceWriter::from_file(file, fsync))
    }

    /// Writes to an already opened file, which should be in append mode. If the file can be
    /// read and ends inside a line, the first event begins on a new line.
    pub fn from_file(file: File, fsync: bool) -> TraceWriter {
        let repair = ends_inside_a_line(&file);
        TraceWriter::with_repair(Arc::new(file), fsync, repair)
    }

    /// Writes to a file just created or truncated: it is empty, so its end is not checked.
    pub fn created(file: File, fsync: bool) -> TraceWriter {
        TraceWriter::with_repair(Arc::new(file), fsync, false)
    }

    fn with_repair(file: Arc<File>, fsync: bool, repair: bool) -> TraceWriter {
        TraceWriter {
            file,
            line: Vec::with_capacity(512),
            fsync,
            repair,
            hold: Hold::No,
            held: 0,
            tap: None,
            kept: None,
        }
    }

    /// Hands each run's lines, as written to the file `path`, to `tap` once the run ends (see
    /// [`RunTap`]).
    pub fn with_tap(mut self, tap: Arc<dyn RunTap>, path: &Path) -> TraceWriter {
        self.tap = Some(Tap {
            tap,
            path: path.to_path_buf(),
            lines: Vec::new(),
        });
        self
    }

    /// Writes to a file other writers append to at the same time (an evaluation's single trace
    /// file). Its end is not checked: another writer's line may be landing there at that moment,
    /// and a half-landed line would read as a cut-off one. Whoever opens the file ends a cut-off
    /// line once, before any writer starts ([`finish_cut_line`]).
    pub fn shared(file: Arc<File>, fsync: bool) -> TraceWriter {
        TraceWriter::with_repair(file, fsync, false)
    }

    /// Holds each run's events and writes them in one `write` when its `run_finished` comes (or
    /// the writer is dropped): a crash then loses the run in progress, never part of a line.
    pub fn hold_until_run_end(mut self) -> TraceWriter {
        self.hold = Hold::UntilRunEnd;
        self
    }

    /// Holds events while nothing outside the process runs: they are written in one `write`
    /// when a tool call's `model_action` comes (before the tool runs) or the run ends. For runs
    /// whose model answers at once (a replay): a crash loses only the events made since the last
    /// tool started, and a run with one tool call takes two writes instead of five.
    pub fn hold_until_tool_or_run_end(mut self) -> TraceWriter {
        self.hold = Hold::UntilToolOrRunEnd;
        self
    }

    /// Holds each run's events and, when its `run_finished` comes, appends them to `kept`
    /// instead of writing them (a run cut short still writes what it held when dropped).
    pub fn keep_run_in(mut self, kept: KeptLines) -> TraceWriter {
        self.hold = Hold::UntilRunEnd;
        // The run's lines go into the buffer that `kept` lends when it is empty, as it is
        // between runs: it has grown to a run's size already.
        let mut lent = kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if lent.is_empty() && self.line.is_empty() {
            std::mem::swap(&mut *lent, &mut self.line);
        }
        drop(lent);
        self.kept = Some(kept);
        self
    }

    /// Writes one event as one line; with `fsync`, waits until it is on disk.
    pub fn write_event(&mut self, event: &Event) -> io::Result<()> {
        let ends_run = matches!(event.kind, EventKind::RunFinished(_));
        let holding = self.hold != Hold::No;
        if !holding || self.held == 0 {
            self.line.clear();
            if self.repair {
                self.line.push(b'\n');
            }
        }
        serde_json::to_writer(&mut self.line, event)?;
        self.line.push(b'\n');
        if holding {
            self.held += 1;
            let tool_next = self.hold == Hold::UntilToolOrRunEnd
                && matches!(&event.kind, EventKind::ModelAction(action)
                    if action.action_type.as_deref() == Some("tool_call"));
            if !ends_run && !tool_next {
                return Ok(());
            }
        }
        match &self.kept {
            Some(kept) if ends_run => self.hand_over(Arc::clone(kept)),
            _ => self.write_line()?,
        }
        if ends_run && let Some(tap) = &mut self.tap {
            tap.deliver();
        }
        Ok(())
    }

    /// Appends the run's lines to `kept` (moved there when it is empty, as it is between runs),
    /// for the tap as if written.
    fn hand_over(&mut self, kept: KeptLines) {
        self.held = 0;
        if let Some(tap) = &mut self.tap {
            tap.lines.extend_from_slice(&self.line);
        }
        let mut kept = kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match kept.is_empty() {
            true => std::mem::swap(&mut *kept, &mut self.line),
            false => kept.extend_from_slice(&self.line),
        }
        self.line.clear();
    }

    /// Writes `line` (one event, or the events held) in one call.
    fn write_line(&mut self) -> io::Result<()> {
        let events = self.held.max(1);
        self.held = 0;
        // One write call for the whole line: O_APPEND makes it land at the end as a unit.
        let mut file = &*self.file;
        let written = file.write(&self.line).and_then(|written| {
            if written != self.line.len() {
                // A short write (disk full, a signal): finish the line so no later line is
                // glued to it.
                file.write_all(&self.line[written..])?;
            }
            Ok(())
        });
        // After a failed write the file may end inside a line: the next event repairs it.
        self.repair = written.is_err();
        if let Some(tap) = &mut self.tap {
            match written {
                Ok(()) => tap.lines.extend_from_slice(&self.line),
                Err(_) => tap.tap.write_failed(&tap.path),
            }
        }
        written?;
        if self.fsync {
            self.file.sync_data()?;
        }
        for _ in 0..events {
            fault::event_written();
        }
        Ok(())
    }
}

impl Drop for TraceWriter {
    /// Writes what a run that never finished left held (a run cut short by a panic).
    fn drop(&mut self) {
        if self.held > 0 {
            let _ = self.write_line();
        }
        if let Some(tap) = &mut self.tap {
            tap.deliver();
        }
    }
}

/// Ends the line an earlier write cut short at the end of `file`, if any, so that the next line
/// is not glued onto it.
pub fn finish_cut_line(file: &mut File) -> io::Result<()> {
    if ends_inside_a_line(file) {
        file.write_all(b"\n")?;
    }
    Ok(())
}

/// Whether the file's last byte is there and is not `\n` (false if it cannot be read).
fn ends_inside_a_line(file: &File) -> bool {
    let Ok(metadata) = file.metadata() else {
        return false;
    };
    if metadata.len() == 0 || !metadata.is_file() {
        return false;
    }
    let mut last = [0u8; 1];
    read_last_byte(file, metadata.len() - 1, &mut last).is_ok() && last[0] != b'\n'
}

#[cfg(unix)]
fn read_last_byte(file: &File, at: u64, byte: &mut [u8; 1]) -> io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, byte, at)
}

#[cfg(windows)]
fn read_last_byte(file: &File, at: u64, byte: &mut [u8; 1]) -> io::Result<()> {
    match std::os::windows::fs::FileExt::seek_read(file, byte, at)? {
        1 => Ok(()),
        _ => Err(io::ErrorKind::UnexpectedEof.into()),
    }
}

impl EventSink for TraceWriter {
    fn record(&mut self, event: &Event) -> io::Result<()> {
        self.write_event(event)
    }
}
