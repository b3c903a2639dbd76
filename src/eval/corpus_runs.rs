//! What `eval --traces` keeps of each recorded run until its task runs: the trace file, step
//! budget and recorded exit reason, the run id and its lines' positions, packed as one record of
//! bytes a run (positions as differences from the line before, a few bytes a line). The first
//! [`MEMORY_BYTES`] of records stay in memory; the rest go to an unnamed scratch file and are read
//! back, one read a task, so the corpus's size shows in memory only as where each record starts
//! (8 bytes a run).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use crate::run::ExitReason;
use crate::scratch_file::unnamed_file;
use crate::trace::LineSpan;

/// Bytes of records kept in memory before the rest are set aside in a scratch file: a corpus of
/// a few thousand runs never touches the disk.
const MEMORY_BYTES: usize = 1024 * 1024;

/// Every run of a corpus, as records.
#[derive(Debug)]
pub(super) struct PackedRuns {
    /// The trace files, by the index a record names.
    pub(super) files: Vec<PathBuf>,
    /// Where each run's record starts; it ends where the next one starts.
    starts: Vec<u64>,
    /// The first records.
    memory: Vec<u8>,
    memory_limit: usize,
    /// The records after those, once memory held its share.
    aside: Option<Aside>,
    /// Bytes of records set aside.
    aside_len: u64,
    /// The trace file read last, kept open: tasks mostly come in file order, so a corpus file is
    /// opened once rather than once per run.
    open: Mutex<Option<(u32, Arc<File>)>>,
}

/// Records in a scratch file: written through a buffer while the corpus is read, then read back.
#[derive(Debug)]
enum Aside {
    Writing(BufWriter<File>),
    Written(File),
}

/// One run as a task needs it.
pub(super) struct PackedRun {
    pub(super) file: u32,
    pub(super) max_steps: u32,
    pub(super) exit_reason: ExitReason,
    pub(super) run_id: String,
    pub(super) spans: Vec<LineSpan>,
}

impl Default for PackedRuns {
    fn default() -> Self {
        PackedRuns::with_memory(MEMORY_BYTES)
    }
}

impl PackedRuns {
    /// Keeps up to `limit` bytes of records in memory.
    fn with_memory(limit: usize) -> Self {
        PackedRuns {
            files: Vec::new(),
            starts: Vec::new(),
            memory: Vec::new(),
            memory_limit: limit,
            aside: None,
            aside_len: 0,
            open: Mutex::new(None),
        }
    }

    /// Adds the next run.
    pub(super) fn push(
        &mut self,
        file: usize,
        max_steps: u32,
        exit_reason: ExitReason,
        run_id: &str,
        spans: &[LineSpan],
    ) -> io::Result<()> {
        let mut record = Vec::with_capacity(16 + run_id.len() + 6 * spans.len());
        let out = &mut record;
        push_varint(out, file as u64);
        push_varint(out, u64::from(max_steps));
        let reason = ExitReason::ALL.iter().position(|r| *r == exit_reason);
        out.push(reason.unwrap_or(0) as u8);
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
        self.starts.push(self.len());
        if self.aside.is_none() && self.memory.len() + record.len() <= self.memory_limit {
            self.memory.extend_from_slice(&record);
            return Ok(());
        }
        if self.aside.is_none() {
            let file = unnamed_file()?;
            self.aside = Some(Aside::Writing(BufWriter::with_capacity(64 * 1024, file)));
        }
        match &mut self.aside {
            Some(Aside::Writing(writer)) => writer.write_all(&record)?,
            _ => return Err(io::Error::other("the corpus was read already")),
        }
        self.aside_len += record.len() as u64;
        Ok(())
    }

    /// Ends the writing: the records set aside can be read back.
    pub(super) fn finish(&mut self) -> io::Result<()> {
        if let Some(Aside::Writing(writer)) = self.aside.take() {
            let file = writer.into_inner().map_err(|err| err.into_error())?;
            self.aside = Some(Aside::Written(file));
        }
        Ok(())
    }

    /// Bytes of records so far.
    fn len(&self) -> u64 {
        self.memory.len() as u64 + self.aside_len
    }

    /// Run `i`.
    pub(super) fn run(&self, i: usize) -> Result<PackedRun, String> {
        let start = *self
            .starts
            .get(i)
            .ok_or_else(|| format!("no recorded run {i} in the corpus"))?;
        let end = self
            .starts
            .get(i + 1)
            .copied()
            .unwrap_or_else(|| self.len());
        let memory = self.memory.len() as u64;
        let read_back;
        let record = if end <= memory {
            &self.memory[start as usize..end as usize]
        } else {
            let Some(Aside::Written(file)) = &self.aside else {
                return Err(format!("recorded run {i} was not set aside"));
            };
            let mut bytes = vec![0; (end - start) as usize];
            file.read_exact_at(&mut bytes, start - memory)
                .map_err(|err| format!("failed to read recorded run {i} back: {err}"))?;
            read_back = bytes;
            &read_back[..]
        };
        decode(record).ok_or_else(|| format!("recorded run {i} does not read back"))
    }

    /// Trace file `index` (at `path`), open; `None` if it cannot be opened, so that the task
    /// opens it itself and fails as it would have (its row says why).
    pub(super) fn open_file(&self, index: u32, path: &Path) -> Option<Arc<File>> {
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

fn decode(bytes: &[u8]) -> Option<PackedRun> {
    let mut at = 0;
    let file = u32::try_from(read_varint(bytes, &mut at)?).ok()?;
    let max_steps = u32::try_from(read_varint(bytes, &mut at)?).ok()?;
    let exit_reason = *ExitReason::ALL.get(usize::from(*bytes.get(at)?))?;
    at += 1;
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
    Some(PackedRun {
        file,
        max_steps,
        exit_reason,
        run_id,
        spans,
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_runs_give_back_each_run_as_pushed_from_memory_and_from_the_scratch_file() {
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
        // All in memory; the first run only; none.
        for limit in [MEMORY_BYTES, 25, 0] {
            let mut packed = PackedRuns::with_memory(limit);
            for (i, (id, spans)) in runs.iter().enumerate() {
                let reason = ExitReason::ALL[i % ExitReason::ALL.len()];
                packed.push(i, 10 + i as u32, reason, id, spans).unwrap();
            }
            packed.finish().unwrap();
            for (i, (id, spans)) in runs.iter().enumerate() {
                let run = packed.run(i).unwrap();
                assert_eq!((run.run_id.as_str(), &run.spans), (*id, spans));
                assert_eq!((run.file, run.max_steps), (i as u32, 10 + i as u32));
                assert_eq!(run.exit_reason, ExitReason::ALL[i % ExitReason::ALL.len()]);
            }
            assert!(packed.run(runs.len()).is_err());
            assert_eq!(packed.aside.is_some(), limit < MEMORY_BYTES, "{limit}");
        }
    }
}
