//! The crash-safe trace writer: the file stays open for the run, and every event goes out as one
//! `write` of one whole line on a file opened for appending. Appends from several processes never
//! interleave within a line, and a crash loses nothing already written.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

use super::event::TraceEvent;
use crate::fault;

/// Where a recorder sends its events.
pub trait EventSink {
    /// Records one event.
    fn record(&mut self, event: &TraceEvent) -> io::Result<()>;
}

/// Tests and in-memory users collect events in a vector.
impl EventSink for Vec<TraceEvent> {
    fn record(&mut self, event: &TraceEvent) -> io::Result<()> {
        self.push(event.clone());
        Ok(())
    }
}

impl<S: EventSink + ?Sized> EventSink for &mut S {
    fn record(&mut self, event: &TraceEvent) -> io::Result<()> {
        (**self).record(event)
    }
}

/// Appends events to a JSONL file.
#[derive(Debug)]
pub struct TraceWriter {
    file: File,
    line: Vec<u8>,
    fsync: bool,
}

impl TraceWriter {
    /// Opens `path` for appending, creating it if needed; never truncates.
    pub fn append(path: &Path, fsync: bool) -> io::Result<TraceWriter> {
        let file = OpenOptions::new().append(true).create(true).open(path)?;
        Ok(TraceWriter::from_file(file, fsync))
    }

    /// Writes to an already opened file, which should be in append mode.
    pub fn from_file(file: File, fsync: bool) -> TraceWriter {
        TraceWriter {
            file,
            line: Vec::with_capacity(512),
            fsync,
        }
    }

    /// Writes one event as one line; with `fsync`, waits until it is on disk.
    pub fn write_event(&mut self, event: &TraceEvent) -> io::Result<()> {
        self.line.clear();
        serde_json::to_writer(&mut self.line, event)?;
        self.line.push(b'\n');
        // One write call for the whole line: O_APPEND makes it land at the end as a unit.
        let written = self.file.write(&self.line)?;
        if written != self.line.len() {
            // A short write (disk full, a signal): finish the line so no later line is glued
            // to it.
            self.file.write_all(&self.line[written..])?;
        }
        if self.fsync {
            self.file.sync_data()?;
        }
        fault::event_written();
        Ok(())
    }
}

impl EventSink for TraceWriter {
    fn record(&mut self, event: &TraceEvent) -> io::Result<()> {
        self.write_event(event)
    }
}
