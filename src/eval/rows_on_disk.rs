//! An evaluation's rows read back from its run's row log (`rows.jsonl`) by row number, so
//! `results.json` is written without holding the rows in memory: about a byte a row (its number
//! in the log, [`RowNumbers`]) and the start of every [`MARK_EVERY`]th row.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use serde::{Serialize, Serializer};
use serde_json::value::RawValue;

use super::results::TaskResult;
use super::row_numbers::RowNumbers;

/// Every how many rows the log's writer notes where a row starts.
pub const MARK_EVERY: u32 = 64;

/// The rows of an evaluation as numbers of lines in its run's row log (`rows.jsonl`),
/// serialized by reading each one back.
pub struct RowsOnDisk<'a> {
    /// The row log.
    pub path: &'a Path,
    /// Where rows 0, [`MARK_EVERY`], 2 × [`MARK_EVERY`]... start in the log.
    pub marks: &'a [u64],
    /// The rows' numbers in the log (from 0), in the order the rows are written out.
    pub rows: &'a RowNumbers,
}

impl RowsOnDisk<'_> {
    /// Reads the rows back one at a time, in order, calling `each` with each.
    pub fn for_each(
        &self,
        mut each: impl FnMut(TaskResult) -> Result<(), String>,
    ) -> Result<(), String> {
        self.for_each_line(|number, line| {
            let row = serde_json::from_slice(line).map_err(|e| self.changed(number, e))?;
            each(row)
        })
    }

    /// Calls `each` with every row's number and line (without its newline), in order. Rows
    /// finish nearly in order, so the reader mostly reads on, skips a few lines, or goes back
    /// to a row it passed lately (it keeps where the last [`MARK_EVERY`] rows start); it goes
    /// to the row's mark when the row is farther behind or past the next mark.
    fn for_each_line(
        &self,
        mut each: impl FnMut(u32, &[u8]) -> Result<(), String>,
    ) -> Result<(), String> {
        let failed =
            |err: std::io::Error| format!("failed to read `{}`: {err}", self.path.display());
        let mut reader = BufReader::with_capacity(1 << 16, File::open(self.path).map_err(failed)?);
        let mut line = Vec::new();
        // The number of the row the reader is at, and where that row starts.
        let (mut at, mut position) = (0u32, 0u64);
        let mut passed = [(u32::MAX, 0u64); MARK_EVERY as usize];
        for row in self.rows.iter() {
            let (mark, slot) = (row - row % MARK_EVERY, (row % MARK_EVERY) as usize);
            let to = if passed[slot].0 == row {
                Some(passed[slot])
            } else if row < at || mark > at {
                let start = self.marks.get((row / MARK_EVERY) as usize);
                Some((
                    mark,
                    *start.ok_or_else(|| self.changed(row, "no such row"))?,
                ))
            } else {
                None
            };
            if let Some((to, start)) = to {
                // Relative: a jump that lands in the buffer keeps it.
                reader
                    .seek_relative(start.wrapping_sub(position) as i64)
                    .map_err(failed)?;
                (at, position) = (to, start);
            }
            while at <= row {
                passed[(at % MARK_EVERY) as usize] = (at, position);
                line.clear();
                let read = reader.read_until(b'\n', &mut line).map_err(failed)?;
                if line.pop() != Some(b'\n') {
                    return Err(self.changed(at, "the row's line ends early"));
                }
                (at, position) = (at + 1, position + read as u64);
            }
            each(row, &line)?;
        }
        Ok(())
    }

    fn changed(&self, row: u32, err: impl std::fmt::Display) -> String {
        format!(
            "`{}` changed while it was read (row {}): {err}",
            self.path.display(),
            u64::from(row) + 1
        )
    }
}

/// The rows as they are in the row log (compact JSON, one per line), each checked to be
/// one JSON value: `results.json` lays rows out the same way, so they are copied, not parsed
/// into rows and printed again.
impl Serialize for RowsOnDisk<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeSeq};
        let mut seq = serializer.serialize_seq(Some(self.rows.len()))?;
        let mut failed = None;
        let read = self.for_each_line(|number, line| {
            let row: &RawValue =
                serde_json::from_slice(line).map_err(|e| self.changed(number, e))?;
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
    use super::{MARK_EVERY, RowsOnDisk};

    /// Rows are read back in the order asked, whether the next one is just behind, just ahead,
    /// within the same mark's rows, or farther than the read buffer in either direction.
    #[test]
    fn rows_are_read_back_in_any_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rows.jsonl");
        let lines: Vec<String> = (0..300)
            .map(|i| {
                let width = if i % 7 == 3 { 70_000 } else { 20 + i };
                format!("\"{i:03}{}\"", "x".repeat(width))
            })
            .collect();
        let mut marks = Vec::new();
        let mut text = String::new();
        for (i, line) in lines.iter().enumerate() {
            if (i as u32).is_multiple_of(MARK_EVERY) {
                marks.push(text.len() as u64);
            }
            text.push_str(line);
            text.push('\n');
        }
        std::fs::write(&path, &text).unwrap();
        let order: Vec<u32> = [39, 0, 2, 1, 3, 38, 10, 9, 24, 17, 5, 31, 31, 4, 299, 64, 63]
            .into_iter()
            .chain(6..9)
            .chain(130..140)
            .chain([200, 128, 129, 0])
            .collect();
        let rows = RowsOnDisk {
            path: &path,
            marks: &marks,
            rows: &order.iter().copied().collect(),
        };
        let mut seen = Vec::new();
        rows.for_each_line(|number, line| {
            seen.push((number, String::from_utf8(line.to_vec()).unwrap()));
            Ok(())
        })
        .unwrap();
        let expected: Vec<(u32, String)> = order
            .iter()
            .map(|&i| (i, lines[i as usize].clone()))
            .collect();
        assert_eq!(seen, expected);
    }
}
