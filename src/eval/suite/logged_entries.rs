//! The task ids of a tasks file or dataset, written once while the file is checked and read back
//! in order where they are needed (selection, the suite's fingerprint, the run header), so an
//! evaluation holds no id per task. Up to [`SPILL_AT`] bytes of ids stay in memory; past that they
//! go to an unlinked file in the temporary folder (as `sort` spills its runs), the id and a byte
//! of length a task on disk. Reading them again from the tasks file itself would parse every row
//! once more for each reader; this file is read without parsing anything.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::ops::ControlFlow;
use std::os::unix::fs::FileExt;
use std::sync::{Arc, Mutex, PoisonError};

use super::task_entries::{IdRef, ModelRuns, TaskEntries, TaskEntry};
use crate::scratch_file::{ReadAhead, unnamed_file};

/// Bytes of ids held in memory before they go to a file.
const SPILL_AT: usize = 1 << 20;

/// Every this many ids, where the next one starts is kept: reading one id skips at most this many
/// less one.
const STRIDE: usize = 64;

/// Every task's id and model, in file order, read back from where they were written.
#[derive(Clone, Debug)]
pub struct LoggedEntries {
    ids: Ids,
    len: usize,
    /// Where every [`STRIDE`]th id starts.
    starts: Vec<u64>,
    models: ModelRuns,
    /// Where [`LoggedEntries::id`] last read: tasks run nearly in order, so the next id asked
    /// for is mostly the next one written.
    cursor: Arc<Mutex<IdCursor>>,
}

/// The entry after the last one [`LoggedEntries::id`] read and where it starts, and the bytes
/// of a spilled log read ahead from there.
#[derive(Debug, Default)]
struct IdCursor {
    after: Option<(usize, u64)>,
    ahead: ReadAhead,
}

/// The most bytes an entry takes in the log: a length byte and an id of at most 200 bytes.
const MOST_ENTRY_BYTES: usize = 201;

/// Where the ids are: each a byte of length and its bytes (ids are at most 200 ASCII
/// characters).
#[derive(Clone, Debug)]
enum Ids {
    Memory(Arc<[u8]>),
    File { file: Arc<File>, len: u64 },
}

/// Writes [`LoggedEntries`] one by one.
pub struct EntryLog {
    sink: Sink,
    written: u64,
    len: usize,
    starts: Vec<u64>,
    models: ModelRuns,
}

enum Sink {
    Memory(Vec<u8>),
    File(BufWriter<File>),
}

impl Default for EntryLog {
    fn default() -> Self {
        EntryLog {
            sink: Sink::Memory(Vec::new()),
            written: 0,
            len: 0,
            starts: Vec::new(),
            models: ModelRuns::default(),
        }
    }
}

impl EntryLog {
    /// Adds an entry; `id` is a checked task id (at most 200 ASCII characters).
    pub fn push(
        &mut self,
        id: &str,
        model_kind: &'static str,
        model_name: Option<&str>,
    ) -> io::Result<()> {
        if self.len.is_multiple_of(STRIDE) {
            self.starts.push(self.written);
        }
        self.models.push(self.len, model_kind, model_name);
        let len = u8::try_from(id.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a task id over 255 bytes"))?;
        match &mut self.sink {
            Sink::Memory(bytes) => {
                bytes.push(len);
                bytes.extend_from_slice(id.as_bytes());
                if bytes.len() > SPILL_AT
                    && let Ok(file) = unnamed_file()
                {
                    let mut out = BufWriter::with_capacity(1 << 16, file);
                    out.write_all(bytes)?;
                    self.sink = Sink::File(out);
                }
            }
            Sink::File(out) => {
                out.write_all(&[len])?;
                out.write_all(id.as_bytes())?;
            }
        }
        self.written += 1 + id.len() as u64;
        self.len += 1;
        Ok(())
    }

    /// How many entries so far.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The entries written, ready to read.
    pub fn finish(self) -> io::Result<LoggedEntries> {
        let ids = match self.sink {
            Sink::Memory(bytes) => Ids::Memory(bytes.into()),
            Sink::File(out) => {
                let file = out.into_inner().map_err(|err| err.into_error())?;
                Ids::File {
                    file: Arc::new(file),
                    len: self.written,
                }
            }
        };
        Ok(LoggedEntries {
            ids,
            len: self.len,
            starts: self.starts,
            models: self.models,
            cursor: Arc::default(),
        })
    }
}

/// A file read from a byte up to another, without moving the file's shared position.
pub(super) struct ReadAt<'f> {
    file: &'f File,
    offset: u64,
    end: u64,
}

impl<'f> ReadAt<'f> {
    /// `file` from byte `offset` up to byte `end`.
    pub(super) fn new(file: &'f File, offset: u64, end: u64) -> ReadAt<'f> {
        ReadAt { file, offset, end }
    }
}

impl Read for ReadAt<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = usize::try_from(self.end.saturating_sub(self.offset)).unwrap_or(usize::MAX);
        let want = buf.len().min(left);
        if want == 0 {
            return Ok(0);
        }
        let read = self.file.read_at(&mut buf[..want], self.offset)?;
        self.offset += read as u64;
        Ok(read)
    }
}

impl LoggedEntries {
    /// How many entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Calls `each` with every entry from entry `from` on, in order, until it breaks.
    pub fn scan(
        &self,
        from: usize,
        mut each: impl FnMut(usize, TaskEntry<'_>) -> ControlFlow<()>,
    ) -> io::Result<()> {
        let Some(&start) = self.starts.get(from / STRIDE) else {
            return Ok(());
        };
        let capacity = if from == 0 { 1 << 16 } else { 1 << 12 };
        self.scan_at(from - from % STRIDE, start, from, capacity, &mut each)?;
        Ok(())
    }

    /// Reads entries from entry `first`, which starts at byte `start`, calling `each` from entry
    /// `from` on; returns the entry after the last one read and where it starts.
    fn scan_at(
        &self,
        first: usize,
        start: u64,
        from: usize,
        capacity: usize,
        each: &mut dyn FnMut(usize, TaskEntry<'_>) -> ControlFlow<()>,
    ) -> io::Result<(usize, u64)> {
        match &self.ids {
            Ids::Memory(bytes) => {
                let at = usize::try_from(start).unwrap_or(usize::MAX);
                let rest = bytes.get(at..).unwrap_or_default();
                self.scan_reader(rest, (first, start), from, each)
            }
            Ids::File { file, len } => {
                let reader = ReadAt {
                    file,
                    offset: start,
                    end: *len,
                };
                let reader = BufReader::with_capacity(capacity, reader);
                self.scan_reader(reader, (first, start), from, each)
            }
        }
    }

    fn scan_reader(
        &self,
        mut reader: impl BufRead,
        (first, mut offset): (usize, u64),
        from: usize,
        each: &mut dyn FnMut(usize, TaskEntry<'_>) -> ControlFlow<()>,
    ) -> io::Result<(usize, u64)> {
        let mut models = self.models.cursor();
        let mut id = Vec::new();
        for i in first..self.len {
            let mut len = [0u8; 1];
            reader.read_exact(&mut len)?;
            id.resize(len[0] as usize, 0);
            reader.read_exact(&mut id)?;
            offset += 1 + id.len() as u64;
            if i < from {
                continue;
            }
            let text = std::str::from_utf8(&id)
                .map_err(|err| io::Error::new(io::ErrorKind::InvalidData, err))?;
            let (model_kind, model_name) = models.at(i);
            let entry = TaskEntry {
                id: IdRef::new(text),
                model_kind,
                model_name,
            };
            if each(i, entry).is_break() {
                return Ok((i + 1, offset));
            }
        }
        Ok((self.len, offset))
    }

    /// Entry `i`'s id, if there is one: from where the last one read ended when it is at most
    /// [`STRIDE`] on, else from the nearest mark.
    pub fn id(&self, i: usize) -> io::Result<Option<String>> {
        let mut cursor = self.cursor.lock().unwrap_or_else(PoisonError::into_inner);
        let (first, start) = match cursor.after {
            Some((next, at)) if next <= i && i - next < STRIDE => (next, at),
            _ => match self.starts.get(i / STRIDE) {
                Some(&at) => (i - i % STRIDE, at),
                None => return Ok(None),
            },
        };
        let mut found = None;
        let mut take = |_: usize, entry: TaskEntry<'_>| {
            found = Some(entry.id.as_str().to_owned());
            ControlFlow::Break(())
        };
        let after = match &self.ids {
            Ids::Memory(_) => self.scan_at(first, start, i, 1 << 9, &mut take)?,
            Ids::File { file, len } => {
                // Every entry up to `i` whole, or the log's end.
                let needed = (i - first + 1) * MOST_ENTRY_BYTES;
                let bytes = cursor.ahead.at(file, *len, start, needed)?;
                self.scan_reader(bytes, (first, start), i, &mut take)?
            }
        };
        cursor.after = Some(after);
        Ok(found)
    }

    /// Every entry held in memory, packed.
    pub fn to_packed(&self) -> io::Result<TaskEntries> {
        let mut packed = TaskEntries::default();
        self.scan(0, |_, entry| {
            packed.push(entry.id.as_str(), entry.model_kind, entry.model_name);
            ControlFlow::Continue(())
        })?;
        Ok(packed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn logged(count: usize, spill: bool) -> (LoggedEntries, Vec<String>) {
        let mut log = EntryLog::default();
        let mut ids = Vec::new();
        for i in 0..count {
            // Ids of every length up to 200, past the spill threshold in all.
            let id = format!("{}-{i}", "k".repeat(i % 195));
            let model = if i % 100 < 50 { None } else { Some("gpt") };
            log.push(&id, "chat", model).unwrap();
            ids.push(id);
        }
        let entries = log.finish().unwrap();
        assert_eq!(matches!(entries.ids, Ids::File { .. }), spill);
        (entries, ids)
    }

    #[test]
    fn ids_read_back_as_written_in_memory_and_from_a_file() {
        for (count, spill) in [(300, false), (12_000, true)] {
            let (entries, ids) = logged(count, spill);
            assert_eq!(entries.len(), count);
            let mut read = Vec::new();
            entries
                .scan(0, |i, entry| {
                    assert_eq!(entry.model_name, (i % 100 >= 50).then_some("gpt"));
                    read.push(entry.id.to_string());
                    ControlFlow::Continue(())
                })
                .unwrap();
            assert_eq!(read, ids);
            for i in [0, 1, 2, 63, 64, 65, 127, 66, count / 2, count - 1, 5, 6] {
                assert_eq!(entries.id(i).unwrap().as_deref(), Some(ids[i].as_str()));
            }
            assert_eq!(entries.id(count).unwrap(), None);
            let packed = entries.to_packed().unwrap();
            assert!(
                packed
                    .iter()
                    .map(|e| e.id.to_string())
                    .eq(ids.iter().cloned())
            );
            assert_eq!(packed.get(70).unwrap().model_name, Some("gpt"));
        }
    }
}
