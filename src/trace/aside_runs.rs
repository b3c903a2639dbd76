//! Runs [`super::RunStream`] sets aside to keep its memory bounded (runs that stay open long: a
//! crashed writer's runs never end, and are read only at the end of the input). Only where
//! their lines are is kept, and that past a small buffer in an unnamed scratch file
//! ([`crate::scratch_file`]), each run's lines chained back from its last; memory holds a few
//! dozen bytes per run set aside (its id, place and last line), whatever its length, so the
//! readers' peak stays flat however many such runs a large file holds.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use super::line_span::LineSpan;
use crate::scratch_file::unnamed_file;

/// Bytes of line positions kept in memory before they go to the scratch file.
const MEMORY_BYTES: usize = 64 * 1024;

/// One line's position and the record of the run's line before it.
const RECORD: usize = 28;

/// A run set aside.
#[derive(Clone, Copy, Debug)]
pub(super) struct AsideRun {
    /// Its place in the order of first appearance.
    pub(super) index: u64,
    /// The how-many-th run with its id.
    pub(super) occurrence: u32,
    /// Its last line's record, plus one (0: none yet).
    last: u64,
}

/// The runs set aside, by run id.
#[derive(Default)]
pub(super) struct AsideRuns {
    runs: HashMap<String, AsideRun>,
    log: SpanLog,
}

impl AsideRuns {
    /// Whether a run with this id is set aside.
    pub(super) fn contains(&self, run_id: &str) -> bool {
        self.runs.contains_key(run_id)
    }

    /// Sets a run aside with the positions of the lines read so far.
    pub(super) fn set_aside(
        &mut self,
        run_id: String,
        index: u64,
        occurrence: u32,
        spans: &[LineSpan],
    ) {
        let mut last = 0;
        for span in spans {
            last = self.log.push(last, *span);
        }
        self.runs.insert(
            run_id,
            AsideRun {
                index,
                occurrence,
                last,
            },
        );
    }

    /// Adds a line to the run of this id if it is set aside; whether it was.
    pub(super) fn push(&mut self, run_id: &str, span: LineSpan) -> bool {
        let Some(run) = self.runs.get_mut(run_id) else {
            return false;
        };
        run.last = self.log.push(run.last, span);
        true
    }

    /// Takes the run of this id out, with its lines' positions in file order.
    pub(super) fn take(
        &mut self,
        run_id: &str,
    ) -> Option<(String, AsideRun, io::Result<Vec<LineSpan>>)> {
        let (run_id, run) = self.runs.remove_entry(run_id)?;
        let mut spans = Vec::new();
        let mut next = run.last;
        let spans = loop {
            if next == 0 {
                spans.reverse();
                break Ok(spans);
            }
            match self.log.read(next - 1) {
                Ok((before, span)) => {
                    spans.push(span);
                    next = before;
                }
                Err(err) => break Err(err),
            }
        };
        Some((run_id, run, spans))
    }

    /// The runs set aside: their places in the order of first appearance and their ids.
    pub(super) fn ids(&self) -> impl Iterator<Item = (u64, &String)> {
        self.runs.iter().map(|(id, run)| (run.index, id))
    }
}

/// Records of line positions: the first ones in an unnamed file once there are more than
/// [`MEMORY_BYTES`], the newest in memory. Where no file can be made, all stay in memory.
#[derive(Default)]
struct SpanLog {
    memory: Vec<u8>,
    file: Option<File>,
    /// Bytes of records in the file.
    written: u64,
    records: u64,
}

impl SpanLog {
    /// Appends a record; gives its number plus one.
    fn push(&mut self, before: u64, span: LineSpan) -> u64 {
        self.memory.extend_from_slice(&before.to_le_bytes());
        self.memory.extend_from_slice(&span.line.to_le_bytes());
        self.memory.extend_from_slice(&span.offset.to_le_bytes());
        self.memory.extend_from_slice(&span.len.to_le_bytes());
        self.records += 1;
        if self.memory.len() >= MEMORY_BYTES {
            self.spill();
        }
        self.records
    }

    fn spill(&mut self) {
        if self.file.is_none() {
            self.file = unnamed_file().ok();
        }
        if let Some(file) = &self.file
            && file.write_all_at(&self.memory, self.written).is_ok()
        {
            self.written += self.memory.len() as u64;
            self.memory.clear();
        }
    }

    /// Record `number`: the record before it in its run (plus one) and the line's position.
    fn read(&self, number: u64) -> io::Result<(u64, LineSpan)> {
        let at = number * RECORD as u64;
        let mut record = [0u8; RECORD];
        if at >= self.written {
            let start = (at - self.written) as usize;
            let bytes = self
                .memory
                .get(start..start + RECORD)
                .ok_or_else(|| io::Error::other("a line position set aside is missing"))?;
            record.copy_from_slice(bytes);
        } else {
            let file = self
                .file
                .as_ref()
                .ok_or_else(|| io::Error::other("a line position set aside is missing"))?;
            file.read_exact_at(&mut record, at)?;
        }
        let word = |from: usize| {
            let mut bytes = [0u8; 8];
            bytes.copy_from_slice(&record[from..from + 8]);
            u64::from_le_bytes(bytes)
        };
        let mut len = [0u8; 4];
        len.copy_from_slice(&record[24..28]);
        let span = LineSpan {
            line: word(8),
            offset: word(16),
            len: u32::from_le_bytes(len),
        };
        Ok((word(0), span))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(line: u64) -> LineSpan {
        LineSpan {
            line,
            offset: line * 1_000 + 7,
            len: u32::try_from(line % 5_000).unwrap(),
        }
    }

    #[test]
    fn runs_come_back_with_their_lines_in_order_from_memory_and_the_file() {
        let mut aside = AsideRuns::default();
        aside.set_aside("a".to_owned(), 0, 1, &[span(1), span(3)]);
        aside.set_aside("b".to_owned(), 1, 2, &[]);
        // Enough lines that most records go to the scratch file.
        for line in 4..20_000 {
            let id = if line % 3 == 0 { "a" } else { "b" };
            assert!(aside.push(id, span(line)));
        }
        assert!(!aside.push("c", span(20_000)));
        assert!(aside.log.written > 0);
        let mut ids: Vec<_> = aside.ids().map(|(index, id)| (index, id.clone())).collect();
        ids.sort();
        assert_eq!(ids, [(0, "a".to_owned()), (1, "b".to_owned())]);
        let (id, run, spans) = aside.take("a").unwrap();
        assert_eq!((id.as_str(), run.index, run.occurrence), ("a", 0, 1));
        let expected: Vec<_> = [1, 3]
            .into_iter()
            .chain((4..20_000).filter(|line| line % 3 == 0))
            .map(span)
            .collect();
        assert_eq!(spans.unwrap(), expected);
        assert!(!aside.contains("a"));
        let (_, run, spans) = aside.take("b").unwrap();
        assert_eq!(run.occurrence, 2);
        assert_eq!(
            spans.unwrap().len(),
            (4..20_000).filter(|l| l % 3 != 0).count()
        );
        assert!(aside.take("b").is_none());
    }
}
