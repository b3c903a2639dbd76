//! An evaluation's rows read back from its run's row log (`rows.jsonl`) by offset, so
//! `results.json` is written without holding the rows in memory.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use serde::{Serialize, Serializer};
use serde_json::value::RawValue;

use super::results::TaskResult;

/// The rows of an evaluation as offsets into its run's row log (`rows.jsonl`), serialized by reading each one
/// back: `results.json` is written without holding the rows in memory.
pub struct RowsOnDisk<'a> {
    /// The row log.
    pub path: &'a Path,
    /// Where each row starts, in the order the rows are written out.
    pub offsets: &'a [u64],
}

impl RowsOnDisk<'_> {
    /// Reads the rows back one at a time, in order, calling `each` with each.
    pub fn for_each(
        &self,
        mut each: impl FnMut(TaskResult) -> Result<(), String>,
    ) -> Result<(), String> {
        self.for_each_line(|offset, line| {
            let row: TaskResult = serde_json::from_slice(line)
                .map_err(|err| self.changed(offset, &err.to_string()))?;
            each(row)
        })
    }

    /// Calls `each` with every row's offset and line (without its newline), in order.
    fn for_each_line(
        &self,
        mut each: impl FnMut(u64, &[u8]) -> Result<(), String>,
    ) -> Result<(), String> {
        let failed = |err: io::Error| format!("failed to read `{}`: {err}", self.path.display());
        // Rows finish nearly in order, so most jumps land in the buffer: a relative seek keeps
        // it, where an absolute one would throw it away and read again.
        let mut reader = BufReader::with_capacity(1 << 16, File::open(self.path).map_err(failed)?);
        let mut line = Vec::new();
        let mut position = 0u64;
        for &offset in self.offsets {
            if offset != position {
                let jump = i64::try_from(offset)
                    .ok()
                    .zip(i64::try_from(position).ok())
                    .map(|(to, from)| to - from);
                match jump {
                    Some(jump) => reader.seek_relative(jump).map_err(failed)?,
                    None => _ = reader.seek(SeekFrom::Start(offset)).map_err(failed)?,
                }
            }
            line.clear();
            let read = reader
                .by_ref()
                .read_until(b'\n', &mut line)
                .map_err(failed)?;
            position = offset + read as u64;
            if line.pop() != Some(b'\n') {
                return Err(self.changed(offset, "the row's line ends early"));
            }
            each(offset, &line)?;
        }
        Ok(())
    }

    fn changed(&self, offset: u64, err: &str) -> String {
        format!(
            "`{}` changed while it was read (byte {offset}): {err}",
            self.path.display()
        )
    }
}

/// The rows as they are in the row log (compact JSON, one per line), each checked to be
/// one JSON value: `results.json` lays rows out the same way, so they are copied, not parsed
/// into rows and printed again.
impl Serialize for RowsOnDisk<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeSeq};
        let mut seq = serializer.serialize_seq(Some(self.offsets.len()))?;
        let mut failed = None;
        let read = self.for_each_line(|offset, line| {
            let row: &RawValue = serde_json::from_slice(line)
                .map_err(|err| self.changed(offset, &err.to_string()))?;
            seq.serialize_element(row).map_err(|err| {
                let text = err.to_string();
                failed = Some(err);
                text
            })
        });
        if let Some(err) = failed {
            return Err(err);
        }
        read.map_err(S::Error::custom)?;
        seq.end()
    }
}

#[cfg(test)]
mod tests {
    use super::RowsOnDisk;

    /// Rows are read back in the order asked, whether the next one is just behind, just ahead,
    /// or farther than the read buffer in either direction.
    #[test]
    fn rows_are_read_back_in_any_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rows.jsonl");
        let lines: Vec<String> = (0..40)
            .map(|i| {
                let width = if i % 7 == 3 { 70_000 } else { 20 + i };
                format!("\"{i:03}{}\"", "x".repeat(width))
            })
            .collect();
        let mut offsets = Vec::new();
        let mut text = String::from("{\"header\":true}\n");
        for line in &lines {
            offsets.push(text.len() as u64);
            text.push_str(line);
            text.push('\n');
        }
        std::fs::write(&path, &text).unwrap();
        let order: Vec<usize> = [39, 0, 2, 1, 3, 38, 10, 9, 24, 17, 5, 31, 31, 4]
            .into_iter()
            .chain(6..9)
            .collect();
        let wanted: Vec<u64> = order.iter().map(|&i| offsets[i]).collect();
        let rows = RowsOnDisk {
            path: &path,
            offsets: &wanted,
        };
        let mut seen = Vec::new();
        rows.for_each_line(|offset, line| {
            seen.push((offset, String::from_utf8(line.to_vec()).unwrap()));
            Ok(())
        })
        .unwrap();
        let expected: Vec<(u64, String)> = order
            .iter()
            .map(|&i| (offsets[i], lines[i].clone()))
            .collect();
        assert_eq!(seen, expected);
    }
}
