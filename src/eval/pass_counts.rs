//! Each task's passes over its repeats, counted as the rows were written: what the report shows
//! when the outcome does not hold every row. Packed records, the first 256 KiB in memory and
//! the rest in a scratch file, read back in order: a report of a million tasks holds none of
//! their ids.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::sync::OnceLock;

use crate::eval::PassRate;
use crate::scratch_file::{ReadAhead, unnamed_file};

/// Bytes of records kept in memory before the rest go to a scratch file: a quarter of a
/// mebibyte, about 7,000 tasks.
const SPILL_AT: usize = 1 << 18;
/// The buffer of the scratch file's writer.
const WRITE_BUFFER: usize = 1 << 16;
/// A record's bytes besides its id: the id's length, the model's number, passed and runs.
const FIXED: usize = 1 + 2 + 4 + 4;
/// The most bytes a record takes: ids are at most 200 bytes.
const MOST: usize = FIXED + u8::MAX as usize;

/// The pass counts being written, task by task in suite order.
#[derive(Debug, Default)]
pub struct PassCountsLog {
    /// The record being made, kept to be made again.
    record: Vec<u8>,
    memory: Vec<u8>,
    spilled: Option<(BufWriter<File>, u64)>,
    models: Vec<String>,
    len: usize,
}

impl PassCountsLog {
    /// Adds a task that passed `passed` of its `runs` runs; `id` is a checked task id (at most
    /// 200 bytes).
    pub(crate) fn push(&mut self, id: &str, model: &str, passed: u32, runs: u32) -> io::Result<()> {
        let too_long = || io::Error::new(io::ErrorKind::InvalidInput, "a task id over 255 bytes");
        let len = u8::try_from(id.len()).map_err(|_| too_long())?;
        let model = match self.models.iter().rposition(|m| m == model) {
            Some(i) => i,
            None => {
                self.models.push(model.to_owned());
                self.models.len() - 1
            }
        };
        let model = u16::try_from(model)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "over 65,535 models"))?;
        let record = &mut self.record;
        record.clear();
        record.push(len);
        record.extend_from_slice(id.as_bytes());
        record.extend_from_slice(&model.to_le_bytes());
        record.extend_from_slice(&passed.to_le_bytes());
        record.extend_from_slice(&runs.to_le_bytes());
        match &mut self.spilled {
            Some((out, written)) => {
                out.write_all(record)?;
                *written += record.len() as u64;
            }
            None if self.memory.len() + record.len() > SPILL_AT => {
                let mut out = BufWriter::with_capacity(WRITE_BUFFER, unnamed_file()?);
                out.write_all(record)?;
                self.spilled = Some((out, record.len() as u64));
            }
            None => self.memory.extend_from_slice(record),
        }
        self.len += 1;
        Ok(())
    }

    /// The counts written, ready to read.
    pub(crate) fn finish(self) -> io::Result<PassCounts> {
        let spilled = match self.spilled {
            Some((out, written)) => Some((out.into_inner().map_err(|e| e.into_error())?, written)),
            None => None,
        };
        Ok(PassCounts {
            memory: self.memory,
            spilled,
            models: self.models,
            len: self.len,
            unread: OnceLock::new(),
        })
    }
}

/// The pass counts of the tasks that ran, in suite order.
#[derive(Debug)]
pub struct PassCounts {
    memory: Vec<u8>,
    spilled: Option<(File, u64)>,
    models: Vec<String>,
    len: usize,
    /// Why the scratch file could not be read back, if it could not.
    unread: OnceLock<String>,
}

impl PassCounts {
    /// How many tasks.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no task ran.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Each task's pass rate, in suite order. A task whose record could not be read back ends
    /// the walk, and [`PassCounts::unread`] says why.
    pub fn rates(&self) -> PackedRates<'_> {
        PackedRates {
            counts: self,
            at: 0,
            file_at: 0,
            ahead: ReadAhead::default(),
            left: self.len,
        }
    }

    /// Why the counts could not all be read back, if they could not.
    pub fn unread(&self) -> Option<&str> {
        self.unread.get().map(String::as_str)
    }
}

/// Each task's pass rate read from [`PassCounts`], in suite order.
#[derive(Clone)]
pub struct PackedRates<'c> {
    counts: &'c PassCounts,
    /// Where the next record starts in memory.
    at: usize,
    /// Where the next record starts in the scratch file, once memory's are read.
    file_at: u64,
    ahead: ReadAhead,
    left: usize,
}

impl<'c> PackedRates<'c> {
    fn spilled_next(&mut self) -> io::Result<Option<PassRate<'c>>> {
        let counts = self.counts;
        let Some((file, len)) = &counts.spilled else {
            return Ok(None);
        };
        let bytes = self.ahead.at(file, *len, self.file_at, MOST)?;
        let (record, used) = parse(bytes).ok_or_else(|| {
            io::Error::new(io::ErrorKind::UnexpectedEof, "a pass count cut short")
        })?;
        let rate = record.rate(Cow::Owned(record.id.to_owned()), &counts.models);
        self.file_at += used as u64;
        Ok(rate)
    }
}

impl<'c> Iterator for PackedRates<'c> {
    type Item = PassRate<'c>;

    fn next(&mut self) -> Option<PassRate<'c>> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let counts = self.counts;
        if let Some((record, used)) = counts.memory.get(self.at..).and_then(parse) {
            self.at += used;
            return record.rate(Cow::Borrowed(record.id), &counts.models);
        }
        match self.spilled_next() {
            Ok(rate) => rate,
            Err(err) => {
                let _ = counts.unread.set(format!(
                    "failed to read back each task's pass counts: {err}"
                ));
                self.left = 0;
                None
            }
        }
    }
}

/// One task's record, as written.
struct Record<'b> {
    id: &'b str,
    model: u16,
    passed: u32,
    runs: u32,
}

impl Record<'_> {
    /// The record as a pass rate with `id`, naming one of `models`.
    fn rate<'r>(&self, id: Cow<'r, str>, models: &'r [String]) -> Option<PassRate<'r>> {
        Some(PassRate {
            id,
            model: models.get(usize::from(self.model))?,
            passed: self.passed,
            runs: self.runs,
        })
    }
}

/// The record at the start of `bytes` and its length, if it is whole there.
fn parse(bytes: &[u8]) -> Option<(Record<'_>, usize)> {
    let len = usize::from(*bytes.first()?);
    let id = std::str::from_utf8(bytes.get(1..1 + len)?).ok()?;
    let fixed = bytes.get(1 + len..FIXED + len)?;
    let record = Record {
        id,
        model: u16::from_le_bytes([fixed[0], fixed[1]]),
        passed: u32::from_le_bytes([fixed[2], fixed[3], fixed[4], fixed[5]]),
        runs: u32::from_le_bytes([fixed[6], fixed[7], fixed[8], fixed[9]]),
    };
    Some((record, FIXED + len))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(count: usize) -> (PassCounts, Vec<(String, String, u32, u32)>) {
        let mut log = PassCountsLog::default();
        let mut pushed = Vec::new();
        for i in 0..count {
            // Ids of every length up to 200; two models.
            let id = format!("{}-{i}", "t".repeat(i % 190));
            let model = if i % 7 == 0 { "gpt[x]" } else { "actions" };
            let (passed, runs) = (i as u32 % 3, 2 + i as u32 % 2);
            log.push(&id, model, passed, runs).unwrap();
            pushed.push((id, model.to_owned(), passed, runs));
        }
        (log.finish().unwrap(), pushed)
    }

    fn read(counts: &PassCounts) -> Vec<(String, String, u32, u32)> {
        (counts.rates())
            .map(|r| (r.id.into_owned(), r.model.to_owned(), r.passed, r.runs))
            .collect()
    }

    #[test]
    fn rates_come_back_as_pushed_from_memory() {
        let (counts, pushed) = written(500);
        assert!(counts.spilled.is_none());
        assert_eq!(read(&counts), pushed);
        assert_eq!((counts.len(), counts.models.len()), (500, 2));
    }

    #[test]
    fn rates_come_back_as_pushed_past_the_scratch_file_threshold_and_twice() {
        // About 100 bytes a record: 20,000 records are twice the memory's share.
        let (counts, pushed) = written(20_000);
        assert!(counts.spilled.is_some());
        assert_eq!(read(&counts), pushed);
        assert_eq!(read(&counts), pushed);
        assert_eq!(counts.unread(), None);
    }
}
